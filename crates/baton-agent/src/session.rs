//! Transcripts on disk: `.baton/state/sessions/<id>.jsonl`.
//!
//! The first line is a header, every later line one message, appended and flushed as the session
//! goes, so a killed process leaves a transcript that `--resume` can continue. When a run ends, an
//! `ended` line records its outcome; a transcript whose last line is a message was cut short (the
//! process was killed) or is being written. A `route` line records that the session failed over
//! to another route of its class: from there on the header's `model` is read as that route, so
//! `--resume` continues where the session last ran.

use std::path::Path;

use baton_protocol::{AssistantPart, EndReason, Message, Outcome};
use baton_state::{Durability, IdError, JsonlLog, LogError, StateDir};
use serde::{Deserialize, Serialize};

/// A message of a transcript with the seat whose view it belongs to (`None` in an ordinary
/// session).
pub type SeatMessage = (Option<String>, Message);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionHeader {
    pub session_id: String,
    pub role: String,
    pub model: String,
    pub cwd: String,
    pub created: String,
}

/// One line of a transcript (public for readers of the log, such as `baton events`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Line {
    Session(SessionHeader),
    Message {
        message: Message,
        /// In a routed session, the participant whose view the message belongs to
        /// (`coordinator` or `executor`); absent in an ordinary session.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seat: Option<String>,
    },
    /// How a run of the session ended (a resumed session has one per run).
    Ended {
        outcome: Outcome,
        #[serde(default)]
        reason: Option<EndReason>,
        /// What this run cost in dollars, when its routes have prices (absent in transcripts
        /// written before baton recorded it, and for unpriced routes).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
    },
    /// The session moved to another route (`turn.route_changed`) and runs on it from here on.
    Route {
        model: String,
    },
    /// The view of `seat` (the session's, when `None`) was compacted: from here on it is
    /// `summary` (a user message) followed by `kept`, its most recent messages as the view
    /// keeps them (long tool outputs shortened). The messages before stay in the transcript.
    Compacted {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seat: Option<String>,
        summary: String,
        kept: Vec<Message>,
    },
    /// A prompt changed files: the trees before its first writing call and after its answer
    /// (`/undo`, see `baton_git::rewind`).
    Checkpoint(Checkpoint),
    /// `/undo`: the files of checkpoint `checkpoint` and every later one were put back; those
    /// checkpoints cannot be undone again.
    Undone {
        checkpoint: u32,
    },
    /// The last `count` messages of `seat`'s view (the session's, when `None`) are taken out of
    /// it: a turn that never finished because the process running it was lost, given up rather
    /// than shown to the model again ([`withdraw_unfinished_turn`]). They stay in the transcript.
    Withdrawn {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seat: Option<String>,
        count: usize,
    },
}

/// One prompt's change of the project's files, as a checkpoint to go back to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The session's checkpoints count from 1.
    pub checkpoint: u32,
    /// The prompt's first line.
    pub input: String,
    /// `baton_git::snapshot::commit`s of the tree before the prompt's first writing call and
    /// after its answer.
    pub before: String,
    pub after: String,
    /// How many files it changed.
    pub files: usize,
}

/// The checkpoints of a transcript that can still be undone, oldest first, and the number the
/// next one gets.
pub fn checkpoints_of(path: &Path) -> (Vec<Checkpoint>, u32) {
    // Only the checkpoint lines are decoded: a long transcript is mostly messages, and a resume
    // has decoded them once already. A line's type is its first key.
    let Ok(text) = std::fs::read_to_string(path) else {
        return (Vec::new(), 1);
    };
    let lines = text
        .lines()
        .filter(|l| {
            let head = l.get(..32).unwrap_or(l);
            head.starts_with("{\"type\":\"checkpoint\"") || head.starts_with("{\"type\":\"undone\"")
        })
        .filter_map(|l| serde_json::from_str::<Line>(l).ok());
    let mut live: Vec<Checkpoint> = Vec::new();
    let mut next = 1;
    for line in lines {
        match line {
            Line::Checkpoint(c) => {
                next = next.max(c.checkpoint + 1);
                live.push(c);
            }
            Line::Undone { checkpoint } => live.retain(|c| c.checkpoint < checkpoint),
            _ => {}
        }
    }
    (live, next)
}

/// What `baton sessions` shows of a transcript.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionInfo {
    pub header: SessionHeader,
    /// The text of the first user message: the task.
    pub task: String,
    /// How the last run ended, when the transcript records its end after the last message.
    pub ended: Option<(Outcome, Option<EndReason>)>,
    /// What its runs cost together, from the ends that record a cost; `None` when none does.
    pub cost_usd: Option<f64>,
}

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("session `{id}` not found in {dir}: `baton sessions` lists the saved sessions (a unique prefix of an id, or `last`, is enough)")]
    NotFound { id: String, dir: String },
    #[error("session `{id}` is ambiguous: it begins {} sessions ({}): give more characters of the id", candidates.len(), candidates.join(", "))]
    Ambiguous { id: String, candidates: Vec<String> },
    #[error("session id {0}")]
    BadId(#[from] IdError),
    #[error("{path}: no session header on line 1: the file is not a baton transcript")]
    NoHeader { path: String },
    #[error(transparent)]
    Log(#[from] LogError),
}

impl SessionError {
    fn not_found(state: &StateDir, id: &str) -> Self {
        SessionError::NotFound {
            id: id.to_string(),
            dir: state.sessions().display().to_string(),
        }
    }

    /// A log error of session `id`'s transcript; a missing file is an unknown session.
    fn from_log(state: &StateDir, id: &str, e: LogError) -> Self {
        match e {
            LogError::NotFound { .. } => SessionError::not_found(state, id),
            e => SessionError::Log(e),
        }
    }
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
        let (store, header, tagged) = Self::open_seats(state, id)?;
        let messages = tagged
            .into_iter()
            .filter(|(seat, _)| seat.is_none())
            .map(|(_, m)| m)
            .collect();
        Ok((store, header, messages))
    }

    /// [`SessionStore::open`] for a routed session: every message with the seat whose view it
    /// belongs to (`None` for an ordinary session's), dangling calls closed in each seat's view.
    pub fn open_seats(
        state: &StateDir,
        id: &str,
    ) -> Result<(Self, SessionHeader, Vec<SeatMessage>), SessionError> {
        let path = state.session(id)?;
        let (log, lines) = JsonlLog::<Line>::open(&path, Durability::Written)
            .map_err(|e| SessionError::from_log(state, id, e))?;
        let mut header = None;
        let mut messages = Vec::new();
        let mut route = None;
        for line in lines {
            match line {
                Line::Session(h) => header = Some(h),
                Line::Message { message, seat } => messages.push((seat, message)),
                Line::Route { model } => route = Some(model),
                Line::Compacted {
                    seat,
                    summary,
                    kept,
                } => compact_view(&mut messages, seat, summary, kept),
                Line::Withdrawn { seat, count } => withdraw(&mut messages, &seat, count),
                Line::Ended { .. } | Line::Checkpoint(_) | Line::Undone { .. } => {}
            }
        }
        let mut header = header.ok_or_else(|| SessionError::NoHeader {
            path: path.display().to_string(),
        })?;
        if let Some(model) = route {
            header.model = model;
        }
        let mut store = SessionStore { log };
        let mut seats: Vec<Option<String>> = Vec::new();
        for (seat, _) in &messages {
            if !seats.contains(seat) {
                seats.push(seat.clone());
            }
        }
        for seat in seats {
            let view: Vec<Message> = messages
                .iter()
                .filter(|(s, _)| *s == seat)
                .map(|(_, m)| m.clone())
                .collect();
            for fix in close_dangling_calls(&view) {
                store.append_to(seat.as_deref(), &fix)?;
                messages.push((seat.clone(), fix));
            }
        }
        Ok((store, header, messages))
    }

    pub fn path(&self) -> &Path {
        self.log.path()
    }

    pub fn append(&mut self, message: &Message) -> Result<(), SessionError> {
        self.append_to(None, message)
    }

    /// Appends a message of `seat`'s view (a routed session), or of the session (`None`).
    pub fn append_to(&mut self, seat: Option<&str>, message: &Message) -> Result<(), SessionError> {
        self.log.append(&Line::Message {
            message: message.clone(),
            seat: seat.map(str::to_string),
        })?;
        Ok(())
    }

    /// Records that `seat`'s view is `summary` followed by `kept` from now on.
    pub fn compacted(
        &mut self,
        seat: Option<&str>,
        summary: &str,
        kept: &[Message],
    ) -> Result<(), SessionError> {
        self.log.append(&Line::Compacted {
            seat: seat.map(str::to_string),
            summary: summary.to_string(),
            kept: kept.to_vec(),
        })?;
        Ok(())
    }

    /// Records that the last `count` messages of `seat`'s view (the session's, when `None`)
    /// leave it (`/clear`); the transcript keeps them.
    pub fn withdrawn(&mut self, seat: Option<&str>, count: usize) -> Result<(), SessionError> {
        self.log.append(&Line::Withdrawn {
            seat: seat.map(str::to_string),
            count,
        })?;
        Ok(())
    }

    /// Records a checkpoint of the project's files.
    pub fn checkpoint(&mut self, c: &Checkpoint) -> Result<(), SessionError> {
        self.log.append(&Line::Checkpoint(c.clone()))?;
        Ok(())
    }

    /// Records that checkpoint `checkpoint` and every later one were undone.
    pub fn undone(&mut self, checkpoint: u32) -> Result<(), SessionError> {
        self.log.append(&Line::Undone { checkpoint })?;
        Ok(())
    }

    /// Records that the session runs on route `model` from now on.
    pub fn route_changed(&mut self, model: &str) -> Result<(), SessionError> {
        self.log.append(&Line::Route {
            model: model.to_string(),
        })?;
        Ok(())
    }

    /// Records how this run of the session ended, and what it cost when that is known.
    pub fn end(
        &mut self,
        outcome: Outcome,
        reason: Option<EndReason>,
        cost_usd: Option<f64>,
    ) -> Result<(), SessionError> {
        self.log.append(&Line::Ended {
            outcome,
            reason,
            cost_usd,
        })?;
        Ok(())
    }
}

/// Replays a `compacted` line on the messages read so far: `seat`'s earlier messages give way
/// to the summary and the kept ones; other seats' messages stay.
fn compact_view(
    messages: &mut Vec<SeatMessage>,
    seat: Option<String>,
    summary: String,
    kept: Vec<Message>,
) {
    messages.retain(|(s, _)| *s != seat);
    messages.push((seat.clone(), Message::user(summary)));
    messages.extend(kept.into_iter().map(|m| (seat.clone(), m)));
}

/// Replays a `withdrawn` line: the last `count` messages of `seat`'s view leave it.
fn withdraw(messages: &mut Vec<SeatMessage>, seat: &Option<String>, count: usize) {
    let mut left = count;
    let mut i = messages.len();
    while left > 0 && i > 0 {
        i -= 1;
        if messages[i].0 == *seat {
            messages.remove(i);
            left -= 1;
        }
    }
}

/// Where the turn `view` ends in began, when that turn never finished: its user message (never
/// a compaction's summary, at `floor` and before), with no answer after it that calls no tool.
fn unfinished_turn(view: &[Message], floor: usize) -> Option<usize> {
    let start = view
        .iter()
        .rposition(|m| matches!(m, Message::User { .. }))
        .filter(|i| *i >= floor)?;
    let answered = view[start..].iter().any(|m| match m {
        Message::Assistant { parts } => !parts
            .iter()
            .any(|p| matches!(p, AssistantPart::ToolCall { .. })),
        Message::User { .. } | Message::Tool { .. } => false,
    });
    (!answered).then_some(start)
}

/// Takes the turn session `id` ends in out of the model's view when that turn never finished
/// (its process was lost mid-turn): a prompt lost that way is not replayed to the model behind
/// the user's back when the session goes on. Each seat's view is looked at on its own. Returns
/// how many messages were withdrawn (they stay in the transcript, after a `withdrawn` line).
pub fn withdraw_unfinished_turn(state: &StateDir, id: &str) -> Result<usize, SessionError> {
    let path = state.session(id)?;
    let (mut log, lines) = JsonlLog::<Line>::open(&path, Durability::Written)
        .map_err(|e| SessionError::from_log(state, id, e))?;
    // Each seat's view, with where its compaction summary ends (a turn never reaches before).
    let mut views: Vec<(Option<String>, Vec<Message>, usize)> = Vec::new();
    fn view_of<'a>(
        views: &'a mut Vec<(Option<String>, Vec<Message>, usize)>,
        seat: &Option<String>,
    ) -> &'a mut (Option<String>, Vec<Message>, usize) {
        let i = match views.iter().position(|(s, ..)| s == seat) {
            Some(i) => i,
            None => {
                views.push((seat.clone(), Vec::new(), 0));
                views.len() - 1
            }
        };
        &mut views[i]
    }
    for line in lines {
        match line {
            Line::Message { message, seat } => view_of(&mut views, &seat).1.push(message),
            Line::Compacted {
                seat,
                summary,
                kept,
            } => {
                let v = view_of(&mut views, &seat);
                v.1 = std::iter::once(Message::user(summary))
                    .chain(kept)
                    .collect();
                v.2 = 1;
            }
            Line::Withdrawn { seat, count } => {
                let v = view_of(&mut views, &seat);
                let keep = v.1.len().saturating_sub(count);
                v.1.truncate(keep);
                v.2 = v.2.min(keep);
            }
            Line::Session(_)
            | Line::Route { .. }
            | Line::Ended { .. }
            | Line::Checkpoint(_)
            | Line::Undone { .. } => {}
        }
    }
    let mut withdrawn = 0;
    for (seat, view, floor) in views {
        if let Some(start) = unfinished_turn(&view, floor) {
            let count = view.len() - start;
            log.append(&Line::Withdrawn { seat, count })?;
            withdrawn += count;
        }
    }
    Ok(withdrawn)
}

/// Reads a transcript without opening it for writing.
pub fn read_info(state: &StateDir, id: &str) -> Result<SessionInfo, SessionError> {
    let path = state.session(id)?;
    let lines = JsonlLog::<Line>::read(&path).map_err(|e| SessionError::from_log(state, id, e))?;
    let mut header = None;
    let mut task = None;
    let mut ended = None;
    let mut route = None;
    let mut cost_usd: Option<f64> = None;
    for line in lines {
        match line {
            Line::Session(h) => header = Some(h),
            Line::Route { model } => route = Some(model),
            Line::Message { message, .. } => {
                if let (None, Message::User { text }) = (&task, &message) {
                    task = Some(text.clone());
                }
                ended = None;
            }
            Line::Ended {
                outcome,
                reason,
                cost_usd: cost,
            } => {
                ended = Some((outcome, reason));
                if let Some(c) = cost {
                    cost_usd = Some(cost_usd.unwrap_or(0.0) + c);
                }
            }
            Line::Compacted { .. }
            | Line::Withdrawn { .. }
            | Line::Checkpoint(_)
            | Line::Undone { .. } => {}
        }
    }
    let mut header = header.ok_or_else(|| SessionError::NoHeader {
        path: path.display().to_string(),
    })?;
    if let Some(model) = route {
        header.model = model;
    }
    Ok(SessionInfo {
        header,
        task: task.unwrap_or_default(),
        ended,
        cost_usd,
    })
}

/// Every saved session that can be read, oldest first (by creation time, then id), and the ids of
/// those that cannot, with why.
pub fn list(state: &StateDir) -> (Vec<SessionInfo>, Vec<(String, SessionError)>) {
    let mut infos = Vec::new();
    let mut bad = Vec::new();
    for id in StateDir::list_ids(&state.sessions(), ".jsonl") {
        match read_info(state, &id) {
            Ok(info) => infos.push(info),
            Err(e) => bad.push((id, e)),
        }
    }
    infos.sort_by(|a, b| {
        (&a.header.created, &a.header.session_id).cmp(&(&b.header.created, &b.header.session_id))
    });
    (infos, bad)
}

/// A session id as a person types it: its last 8 characters, the random end of a time-ordered
/// id (two sessions of the same hour share the first ones). [`resolve_id`] takes it.
pub fn short_id(id: &str) -> &str {
    match id.char_indices().rev().nth(7) {
        Some((at, _)) => &id[at..],
        None => id,
    }
}

/// The id of the session `wanted` names: `last` (the newest), a whole id, or a prefix or an end
/// (at least 6 characters: the short id) of exactly one id.
pub fn resolve_id(state: &StateDir, wanted: &str) -> Result<String, SessionError> {
    let not_found = || SessionError::not_found(state, wanted);
    if wanted == "last" {
        let (infos, _) = list(state);
        return infos
            .last()
            .map(|i| i.header.session_id.clone())
            .ok_or_else(not_found);
    }
    let ids = StateDir::list_ids(&state.sessions(), ".jsonl");
    if ids.iter().any(|id| id == wanted) {
        return Ok(wanted.to_string());
    }
    // A prefix, or the id's last characters (its short form, [`short_id`]): time-ordered ids
    // share their first ones.
    let candidates: Vec<String> = ids
        .into_iter()
        .filter(|id| {
            !wanted.is_empty()
                && (id.starts_with(wanted) || (wanted.len() >= 6 && id.ends_with(wanted)))
        })
        .collect();
    match candidates.as_slice() {
        [] => Err(not_found()),
        [one] => Ok(one.clone()),
        [_, _, ..] => Err(SessionError::Ambiguous {
            id: wanted.to_string(),
            candidates,
        }),
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
                    provider_data: None,
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

    fn call(id: &str) -> Message {
        Message::Assistant {
            parts: vec![AssistantPart::ToolCall {
                id: id.into(),
                name: "bash".into(),
                arguments: "{}".into(),
                provider_data: None,
            }],
        }
    }

    fn answer(text: &str) -> Message {
        Message::Assistant {
            parts: vec![AssistantPart::Text { text: text.into() }],
        }
    }

    #[test]
    fn a_turn_that_never_finished_is_withdrawn_from_the_view_and_kept_in_the_transcript() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        let mut store = SessionStore::create(&state, &header("s-1", "now")).unwrap();
        store.append(&Message::user("one")).unwrap();
        store.append(&answer("done")).unwrap();
        store.append(&Message::user("SLOW")).unwrap();
        store.append(&call("c1")).unwrap();
        drop(store);
        assert_eq!(withdraw_unfinished_turn(&state, "s-1").unwrap(), 2);
        let (_, _, msgs) = SessionStore::open(&state, "s-1").unwrap();
        assert_eq!(msgs, vec![Message::user("one"), answer("done")]);
        // Nothing left to withdraw: the view ends in a finished turn.
        assert_eq!(withdraw_unfinished_turn(&state, "s-1").unwrap(), 0);
        let text = std::fs::read_to_string(state.session("s-1").unwrap()).unwrap();
        assert!(
            text.contains("SLOW") && text.contains("\"withdrawn\""),
            "{text}"
        );

        // A finished turn stays, tool calls and all.
        let mut store = SessionStore::create(&state, &header("s-2", "now")).unwrap();
        for m in [Message::user("go"), call("c1")] {
            store.append(&m).unwrap();
        }
        store
            .append(&Message::Tool {
                call_id: "c1".into(),
                tool: "bash".into(),
                output: "ok".into(),
                is_error: false,
            })
            .unwrap();
        store.append(&answer("all done")).unwrap();
        drop(store);
        assert_eq!(withdraw_unfinished_turn(&state, "s-2").unwrap(), 0);
        assert_eq!(SessionStore::open(&state, "s-2").unwrap().2.len(), 4);

        // A compaction's summary is never withdrawn; the turn after it is.
        let mut store = SessionStore::create(&state, &header("s-3", "now")).unwrap();
        store.append(&Message::user("old")).unwrap();
        store.compacted(None, "summary", &[call("c2")]).unwrap();
        drop(store);
        assert_eq!(withdraw_unfinished_turn(&state, "s-3").unwrap(), 0);
        let mut store = SessionStore::open(&state, "s-3").unwrap().0;
        store.append(&Message::user("next")).unwrap();
        drop(store);
        assert_eq!(withdraw_unfinished_turn(&state, "s-3").unwrap(), 1);
        let msgs = SessionStore::open(&state, "s-3").unwrap().2;
        assert_eq!(msgs[0], Message::user("summary"));
        assert!(!msgs.contains(&Message::user("next")));
    }

    fn header(id: &str, created: &str) -> SessionHeader {
        SessionHeader {
            session_id: id.into(),
            role: "implementer".into(),
            model: "p/m".into(),
            cwd: "/tmp".into(),
            created: created.into(),
        }
    }

    #[test]
    fn info_shows_the_task_and_the_end_only_when_nothing_follows_it() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        let mut store =
            SessionStore::create(&state, &header("s-1", "2025-01-01T00:00:00Z")).unwrap();
        store.append(&Message::user("fix it\nplease")).unwrap();
        assert_eq!(read_info(&state, "s-1").unwrap().ended, None);
        store
            .end(Outcome::Partial, Some(EndReason::TurnLimit), Some(0.25))
            .unwrap();
        let info = read_info(&state, "s-1").unwrap();
        assert_eq!(info.task, "fix it\nplease");
        assert_eq!(
            info.ended,
            Some((Outcome::Partial, Some(EndReason::TurnLimit)))
        );
        // Resumed and killed: the end of the earlier run no longer describes the session.
        let (mut store, _, _) = SessionStore::open(&state, "s-1").unwrap();
        store.append(&Message::user("Continue")).unwrap();
        let info = read_info(&state, "s-1").unwrap();
        assert_eq!((info.task.as_str(), info.ended), ("fix it\nplease", None));
        // What the runs cost adds up over the ends that record it.
        assert_eq!(info.cost_usd, Some(0.25));
        store.end(Outcome::Completed, None, Some(0.5)).unwrap();
        store.end(Outcome::Completed, None, None).unwrap();
        assert_eq!(read_info(&state, "s-1").unwrap().cost_usd, Some(0.75));
    }

    /// After a failover the transcript's route is the one the session moved to, for `--resume`
    /// and for `baton sessions`; the header line itself is never rewritten.
    #[test]
    fn a_route_line_names_the_route_the_session_continues_on() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        let mut store =
            SessionStore::create(&state, &header("s-1", "2025-01-01T00:00:00Z")).unwrap();
        store.append(&Message::user("go")).unwrap();
        store.route_changed("q/n:high").unwrap();
        drop(store);
        let (_, h, msgs) = SessionStore::open(&state, "s-1").unwrap();
        assert_eq!(h.model, "q/n:high");
        assert_eq!(msgs, vec![Message::user("go")]);
        assert_eq!(read_info(&state, "s-1").unwrap().header.model, "q/n:high");
        let first = std::fs::read_to_string(state.session("s-1").unwrap()).unwrap();
        assert!(
            first.lines().next().unwrap().contains("\"model\":\"p/m\""),
            "{first}"
        );
    }

    #[test]
    fn ids_resolve_from_last_a_whole_id_or_a_unique_prefix() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        for (id, created) in [
            ("abc-2", "2025-01-02T00:00:00Z"),
            ("abc-1", "2025-01-03T00:00:00Z"),
            ("abd-3", "2025-01-01T00:00:00Z"),
        ] {
            SessionStore::create(&state, &header(id, created)).unwrap();
        }
        assert_eq!(resolve_id(&state, "last").unwrap(), "abc-1");
        assert_eq!(resolve_id(&state, "abd").unwrap(), "abd-3");
        assert_eq!(resolve_id(&state, "abc-2").unwrap(), "abc-2");
        match resolve_id(&state, "abc") {
            Err(SessionError::Ambiguous { candidates, .. }) => {
                assert_eq!(candidates, ["abc-1", "abc-2"])
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            resolve_id(&state, "zz"),
            Err(SessionError::NotFound { .. })
        ));
        let (infos, bad) = list(&state);
        let ids: Vec<&str> = infos.iter().map(|i| i.header.session_id.as_str()).collect();
        assert_eq!((ids, bad.len()), (vec!["abd-3", "abc-2", "abc-1"], 0));
    }

    /// Two time-ordered ids of the same hour share their first characters; their last 8 tell
    /// them apart, and resolve.
    #[test]
    fn a_short_id_is_the_id_s_end_and_resolves() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        let (a, b) = (
            "0193a5f2-7c1e-7abc-8def-0123456789ab",
            "0193a5f2-7c1f-7abc-8def-fedcba987654",
        );
        for id in [a, b] {
            SessionStore::create(&state, &header(id, "2026-12-06T16:00:00Z")).unwrap();
        }
        assert_eq!((short_id(a), short_id(b)), ("456789ab", "ba987654"));
        assert_eq!(short_id("abc"), "abc");
        assert_eq!(resolve_id(&state, "456789ab").unwrap(), a);
        assert_eq!(resolve_id(&state, "ba987654").unwrap(), b);
        assert!(matches!(
            resolve_id(&state, "0193a5f2"),
            Err(SessionError::Ambiguous { .. })
        ));
        // Fewer than 6 characters are a prefix only.
        assert!(matches!(
            resolve_id(&state, "7654"),
            Err(SessionError::NotFound { .. })
        ));
    }
}
