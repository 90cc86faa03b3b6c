//! The project event feed (`baton events`): one envelope over every durable log a project keeps
//! under `.baton/state/`. See `docs/protocol.md`, "The project event feed".
//!
//! - [`SourceKind`] and [`Source`]: which log (session transcript, routing journal, background
//!   task, Flow, workflow) and which record of that kind (its id).
//! - [`Position`]: where one event is: its log and the byte offset at which its line starts. Its
//!   string form is `kind/id:offset` (`workflow/wf-20261204T211000Z-1a2b3c4d:1234`).
//! - [`Cursor`]: how far a reader got, at most one position per log: `--since` takes one,
//!   written as positions joined by commas. A log the cursor names is read after the line at its
//!   position; a log it does not name is read from its start.
//! - [`ProjectEvent`]: the envelope, generic over the payload (the typed payload of each kind
//!   lives with the crate that writes the log; `baton-events` has the enum of all of them).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The kinds of durable logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    /// An agent transcript, `sessions/<id>.jsonl`.
    Session,
    /// A routed session's journal, `sessions/<id>.journal`.
    Routing,
    /// A background delegation, `tasks/<id>.events.jsonl`.
    Task,
    /// A Flow, `flows/<id>.events.jsonl`.
    Flow,
    /// A workflow, `workflows/<id>.events.jsonl`.
    Workflow,
    /// A managed worker, `workers/<name>.events.jsonl`.
    Worker,
}

impl SourceKind {
    pub const ALL: [SourceKind; 6] = [
        SourceKind::Session,
        SourceKind::Routing,
        SourceKind::Task,
        SourceKind::Flow,
        SourceKind::Workflow,
        SourceKind::Worker,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::Session => "session",
            SourceKind::Routing => "routing",
            SourceKind::Task => "task",
            SourceKind::Flow => "flow",
            SourceKind::Workflow => "workflow",
            SourceKind::Worker => "worker",
        }
    }
}

impl fmt::Display for SourceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SourceKind {
    type Err = PositionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SourceKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| PositionError::Kind(s.to_string()))
    }
}

/// One durable log: its kind and the id of its record.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Source {
    pub kind: SourceKind,
    pub id: String,
}

impl Source {
    pub fn new(kind: SourceKind, id: impl Into<String>) -> Source {
        Source {
            kind,
            id: id.into(),
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.kind, self.id)
    }
}

/// A position that does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PositionError {
    #[error(
        "`{0}` is not a position: write `kind/id:offset` (e.g. `workflow/wf-20261204T211000Z-1a2b3c4d:1234`), as the `pos` of an event shows it"
    )]
    Shape(String),
    #[error("`{0}` is not a kind of log: session, routing, task, flow or workflow")]
    Kind(String),
    #[error("the cursor names {0} twice: give one position per log")]
    Twice(String),
}

/// Where one event is: its log and the byte offset of the start of its line. Stable: logs are
/// only appended to, so a position names the same event for as long as the log exists.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Position {
    pub source: Source,
    pub offset: u64,
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.source, self.offset)
    }
}

/// Whether `id` can be the id part of a position (the logs' own ids are stricter still).
fn id_ok(id: &str) -> bool {
    !id.is_empty() && !id.contains(['/', ':', ',']) && !id.chars().any(char::is_whitespace)
}

impl FromStr for Position {
    type Err = PositionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let shape = || PositionError::Shape(s.to_string());
        let (source, offset) = s.trim().rsplit_once(':').ok_or_else(shape)?;
        let (kind, id) = source.split_once('/').ok_or_else(shape)?;
        let offset: u64 = offset.parse().map_err(|_| shape())?;
        if !id_ok(id) {
            return Err(shape());
        }
        Ok(Position {
            source: Source::new(kind.parse()?, id),
            offset,
        })
    }
}

impl Serialize for Position {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Position {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// How far a reader got: the position of the last event it took from each log. Written as the
/// positions joined by commas (`flow/f1:880,workflow/wf-…:1234`); the empty cursor is the
/// empty string and means "from the start of every log".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cursor {
    positions: BTreeMap<Source, u64>,
}

impl Cursor {
    /// The offset of the last event taken from `source`, if any.
    pub fn get(&self, source: &Source) -> Option<u64> {
        self.positions.get(source).copied()
    }

    /// Records that the event at `pos` was taken (it replaces the log's earlier position).
    pub fn advance(&mut self, pos: &Position) {
        self.positions.insert(pos.source.clone(), pos.offset);
    }

    pub fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }

    pub fn positions(&self) -> impl Iterator<Item = Position> + '_ {
        self.positions.iter().map(|(source, &offset)| Position {
            source: source.clone(),
            offset,
        })
    }
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.positions().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

impl FromStr for Cursor {
    type Err = PositionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut cursor = Cursor::default();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let pos: Position = part.parse()?;
            if cursor.get(&pos.source).is_some() {
                return Err(PositionError::Twice(pos.source.to_string()));
            }
            cursor.advance(&pos);
        }
        Ok(cursor)
    }
}

/// One event of the project feed: where it is, which log it belongs to, when it happened (the
/// time its log line records; `None` for lines that record none) and the event itself, typed by
/// the log's kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProjectEvent<E> {
    pub pos: Position,
    pub source: Source,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ts: Option<String>,
    pub event: E,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn positions_read_back_from_their_string_form() {
        let p: Position = "workflow/wf-20261204T211000Z-1a2b3c4d:1234"
            .parse()
            .unwrap();
        assert_eq!(p.source.kind, SourceKind::Workflow);
        assert_eq!(p.source.id, "wf-20261204T211000Z-1a2b3c4d");
        assert_eq!(p.offset, 1234);
        assert_eq!(p.to_string(), "workflow/wf-20261204T211000Z-1a2b3c4d:1234");
        assert_eq!(
            serde_json::to_string(&p).unwrap(),
            "\"workflow/wf-20261204T211000Z-1a2b3c4d:1234\""
        );
        for bad in [
            "",
            "workflow",
            "workflow/x",
            "x/y:1",
            "flow/:1",
            "flow/a:-1",
            "flow/a b:1",
        ] {
            assert!(bad.parse::<Position>().is_err(), "{bad:?}");
        }
        assert!("nope/a:1"
            .parse::<Position>()
            .unwrap_err()
            .to_string()
            .contains("not a kind of log"));
    }

    #[test]
    fn a_cursor_keeps_one_position_per_log() {
        let mut c: Cursor = "flow/f1:10, task/t1:0,".parse().unwrap();
        assert_eq!(c.get(&Source::new(SourceKind::Flow, "f1")), Some(10));
        c.advance(&"flow/f1:42".parse().unwrap());
        c.advance(&"session/s1:7".parse().unwrap());
        assert_eq!(c.to_string(), "session/s1:7,task/t1:0,flow/f1:42");
        assert_eq!(c.to_string().parse::<Cursor>().unwrap(), c);
        assert!("".parse::<Cursor>().unwrap().is_empty());
        assert!("flow/f1:1,flow/f1:2"
            .parse::<Cursor>()
            .unwrap_err()
            .to_string()
            .contains("twice"));
    }

    #[test]
    fn the_envelope_is_flat_json() {
        let ev = ProjectEvent {
            pos: "task/t1:0".parse().unwrap(),
            source: Source::new(SourceKind::Task, "t1"),
            ts: None,
            event: serde_json::json!({"type": "task.started", "pid": 1}),
        };
        let text = serde_json::to_string(&ev).unwrap();
        assert_eq!(
            text,
            r#"{"pos":"task/t1:0","source":{"kind":"task","id":"t1"},"event":{"pid":1,"type":"task.started"}}"#
        );
        let back: ProjectEvent<serde_json::Value> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, ev);
    }
}
