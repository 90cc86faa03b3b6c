//! Transcripts on disk: `.baton/state/sessions/<id>.jsonl`.
//!
//! The first line is a header, every later line one message, appended and flushed as the session
//! goes, so a killed process leaves a transcript that `--resume` can continue.

use std::path::Path;

use baton_protocol::{AssistantPart, Message};
use baton_state::{Durability, IdError, JsonlLog, LogError, StateDir};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionHeader {
    pub session_id: String,
    pub role: String,
    pub model: String,
    pub cwd: String,
    pub created: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Line {
    Session(SessionHeader),
    Message { message: Message },
}

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("session `{id}` not found in {dir}: `baton agent --json` prints session ids in its session.started event")]
    NotFound { id: String, dir: String },
    #[error("session id {0}")]
    BadId(#[from] IdError),
    #[error("{path}: no session header on line 1: the file is not a baton transcript")]
    NoHeader { path: String },
    #[error(transparent)]
    Log(#[from] LogError),
}

/// An open transcript: a [`JsonlLog`] whose first line is the header. Lines are written to the
/// operating system as they come ([`Durability::Written`]): a killed process loses nothing that
/// was appended, and a torn last line is cut off when the transcript is opened again.
pub struct SessionStore {
    log: JsonlLog<Line>,
}

impl SessionStore {
    /// Creates a new transcript with its header.
    pub fn create(state: &StateDir, header: &SessionHeader) -> Result<Self, SessionError> {
        let path = state.session(&header.session_id)?;
        let mut log = JsonlLog::create(&path, Durability::Written)?;
        log.append(&Line::Session(header.clone()))?;
        Ok(SessionStore { log })
    }

    /// Opens an existing transcript for appending and returns its header and messages. A trailing
    /// partial line (a crash mid-write) is dropped; tool calls left without results get a result
    /// saying they were interrupted, so the conversation is valid for any provider.
    pub fn open(
        state: &StateDir,
        id: &str,
    ) -> Result<(Self, SessionHeader, Vec<Message>), SessionError> {
        let path = state.session(id)?;
        let (log, lines) = match JsonlLog::<Line>::open(&path, Durability::Written) {
            Ok(opened) => opened,
            Err(LogError::NotFound { .. }) => {
                return Err(SessionError::NotFound {
                    id: id.to_string(),
                    dir: state.sessions().display().to_string(),
                })
            }
            Err(e) => return Err(e.into()),
        };
        let mut header = None;
        let mut messages = Vec::new();
        for line in lines {
            match line {
                Line::Session(h) => header = Some(h),
                Line::Message { message } => messages.push(message),
            }
        }
        let header = header.ok_or_else(|| SessionError::NoHeader {
            path: path.display().to_string(),
        })?;
        let mut store = SessionStore { log };
        for fix in close_dangling_calls(&messages) {
            store.append(&fix)?;
            messages.push(fix);
        }
        Ok((store, header, messages))
    }

    pub fn path(&self) -> &Path {
        self.log.path()
    }

    pub fn append(&mut self, message: &Message) -> Result<(), SessionError> {
        self.log.append(&Line::Message {
            message: message.clone(),
        })?;
        Ok(())
    }
}

/// Tool results for calls of the last assistant message that never got one.
fn close_dangling_calls(messages: &[Message]) -> Vec<Message> {
    let Some(last_assistant) = messages
        .iter()
        .rposition(|m| matches!(m, Message::Assistant { .. }))
    else {
        return Vec::new();
    };
    let Message::Assistant { parts } = &messages[last_assistant] else {
        return Vec::new();
    };
    let answered: Vec<&str> = messages[last_assistant..]
        .iter()
        .filter_map(|m| match m {
            Message::Tool { call_id, .. } => Some(call_id.as_str()),
            Message::User { .. } | Message::Assistant { .. } => None,
        })
        .collect();
    parts
        .iter()
        .filter_map(|p| match p {
            AssistantPart::ToolCall { id, name, .. } if !answered.contains(&id.as_str()) => {
                Some(Message::Tool {
                    call_id: id.clone(),
                    tool: name.clone(),
                    output: "interrupted: the session stopped before this tool call finished; check its effects before repeating it".into(),
                    is_error: true,
                })
            }
            AssistantPart::ToolCall { .. }
            | AssistantPart::Text { .. }
            | AssistantPart::Reasoning { .. } => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reopen_repairs_dangling_calls_and_torn_lines() {
        let tmp = tempfile::tempdir().unwrap();
        let header = SessionHeader {
            session_id: "s-1".into(),
            role: "implementer".into(),
            model: "p/m".into(),
            cwd: "/tmp".into(),
            created: "now".into(),
        };
        let state = StateDir::at(tmp.path());
        let mut store = SessionStore::create(&state, &header).unwrap();
        store.append(&Message::user("hi")).unwrap();
        store
            .append(&Message::Assistant {
                parts: vec![AssistantPart::ToolCall {
                    id: "c1".into(),
                    name: "bash".into(),
                    arguments: "{}".into(),
                }],
            })
            .unwrap();
        let path = store.path().to_path_buf();
        drop(store);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        std::io::Write::write_all(&mut f, b"{\"type\":\"mess").unwrap();
        drop(f);
        let (_, h, msgs) = SessionStore::open(&state, "s-1").unwrap();
        assert_eq!(h, header);
        assert_eq!(msgs.len(), 3);
        assert!(
            matches!(&msgs[2], Message::Tool { call_id, is_error: true, .. } if call_id == "c1")
        );
        assert!(matches!(
            SessionStore::open(&state, "nope"),
            Err(SessionError::NotFound { .. })
        ));
        assert!(matches!(
            SessionStore::open(&state, "../x"),
            Err(SessionError::BadId(_))
        ));
    }
}
