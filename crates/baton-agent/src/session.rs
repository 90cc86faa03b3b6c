//! Transcripts on disk: `.baton/state/sessions/<id>.jsonl`.
//!
//! The first line is a header, every later line one message, appended and flushed as the session
//! goes, so a killed process leaves a transcript that `--resume` can continue.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use baton_protocol::{AssistantPart, Message};
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
    #[error("session id `{0}` is not valid: ids use letters, digits and `-` only")]
    BadId(String),
    #[error("{path}: line {line} is not a transcript line: {message}")]
    Corrupt {
        path: String,
        line: usize,
        message: String,
    },
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

/// An open transcript file.
pub struct SessionStore {
    path: PathBuf,
    file: File,
}

/// The state folder's sessions directory under a project root.
pub fn sessions_dir(project_root: &Path) -> PathBuf {
    project_root.join(".baton").join("state").join("sessions")
}

/// The repository's shared git folder for a work tree root: `.git` itself, or for a linked
/// worktree (whose `.git` is a file) the common folder its `commondir` points to.
fn git_common_dir(root: &Path) -> Option<PathBuf> {
    let dot_git = root.join(".git");
    if dot_git.is_dir() {
        return Some(dot_git);
    }
    let text = std::fs::read_to_string(&dot_git).ok()?;
    let gitdir = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?.trim();
    let gitdir = root.join(gitdir);
    match std::fs::read_to_string(gitdir.join("commondir")) {
        Ok(common) => Some(gitdir.join(common.trim())),
        Err(_) => Some(gitdir),
    }
}

/// Adds `/.baton/state/` to the repository's `info/exclude` (shared by all its worktrees), once,
/// so runtime data never shows up as untracked files, in the main tree or in a child's worktree.
/// Failures are ignored: excluding is a convenience.
pub fn ensure_state_excluded(project_root: &Path) {
    let Some(common) = git_common_dir(project_root) else {
        return;
    };
    let exclude = common.join("info").join("exclude");
    let current = std::fs::read_to_string(&exclude).unwrap_or_default();
    if current.lines().any(|l| l.trim() == "/.baton/state/") {
        return;
    }
    let _ = std::fs::create_dir_all(common.join("info"));
    let mut text = current;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str("/.baton/state/\n");
    let _ = std::fs::write(&exclude, text);
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SessionError + '_ {
    move |source| SessionError::Io {
        path: path.display().to_string(),
        source,
    }
}

fn check_id(id: &str) -> Result<(), SessionError> {
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return Err(SessionError::BadId(id.to_string()));
    }
    Ok(())
}

impl SessionStore {
    /// Creates a new transcript with its header.
    pub fn create(dir: &Path, header: &SessionHeader) -> Result<Self, SessionError> {
        check_id(&header.session_id)?;
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let path = dir.join(format!("{}.jsonl", header.session_id));
        let file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(&path)
            .map_err(io(&path))?;
        let mut store = SessionStore { path, file };
        store.write_line(&Line::Session(header.clone()))?;
        Ok(store)
    }

    /// Opens an existing transcript for appending and returns its header and messages. A trailing
    /// partial line (a crash mid-write) is dropped; tool calls left without results get a result
    /// saying they were interrupted, so the conversation is valid for any provider.
    pub fn open(dir: &Path, id: &str) -> Result<(Self, SessionHeader, Vec<Message>), SessionError> {
        check_id(id)?;
        let path = dir.join(format!("{id}.jsonl"));
        if !path.is_file() {
            return Err(SessionError::NotFound {
                id: id.to_string(),
                dir: dir.display().to_string(),
            });
        }
        let bytes = std::fs::read(&path).map_err(io(&path))?;
        // A crash mid-write leaves a torn last line: cut it off so appends start on a fresh line.
        let keep = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        if keep < bytes.len() {
            let f = OpenOptions::new()
                .write(true)
                .open(&path)
                .map_err(io(&path))?;
            f.set_len(keep as u64).map_err(io(&path))?;
        }
        let mut header = None;
        let mut messages = Vec::new();
        for (i, text) in BufReader::new(&bytes[..keep]).lines().enumerate() {
            let text = text.map_err(io(&path))?;
            if text.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Line>(&text) {
                Ok(Line::Session(h)) => header = Some(h),
                Ok(Line::Message { message }) => messages.push(message),
                Err(e) => {
                    return Err(SessionError::Corrupt {
                        path: path.display().to_string(),
                        line: i + 1,
                        message: e.to_string(),
                    })
                }
            }
        }
        let header = header.ok_or_else(|| SessionError::Corrupt {
            path: path.display().to_string(),
            line: 1,
            message: "no session header".into(),
        })?;
        let file = OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(io(&path))?;
        let mut store = SessionStore { path, file };
        for fix in close_dangling_calls(&messages) {
            store.append(&fix)?;
            messages.push(fix);
        }
        Ok((store, header, messages))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn append(&mut self, message: &Message) -> Result<(), SessionError> {
        self.write_line(&Line::Message {
            message: message.clone(),
        })
    }

    fn write_line(&mut self, line: &Line) -> Result<(), SessionError> {
        let mut text = serde_json::to_string(line).map_err(|e| SessionError::Io {
            path: self.path.display().to_string(),
            source: std::io::Error::other(e),
        })?;
        text.push('\n');
        self.file
            .write_all(text.as_bytes())
            .map_err(io(&self.path))?;
        self.file.flush().map_err(io(&self.path))
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
        let mut store = SessionStore::create(tmp.path(), &header).unwrap();
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
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"type\":\"mess").unwrap();
        drop(f);
        let (_, h, msgs) = SessionStore::open(tmp.path(), "s-1").unwrap();
        assert_eq!(h, header);
        assert_eq!(msgs.len(), 3);
        assert!(
            matches!(&msgs[2], Message::Tool { call_id, is_error: true, .. } if call_id == "c1")
        );
        assert!(matches!(
            SessionStore::open(tmp.path(), "nope"),
            Err(SessionError::NotFound { .. })
        ));
        assert!(matches!(
            SessionStore::open(tmp.path(), "../x"),
            Err(SessionError::BadId(_))
        ));
    }
}
