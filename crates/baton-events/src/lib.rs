//! The project event feed: every durable log a project keeps under `.baton/state/` read as one
//! stream of typed [`ProjectEvent`]s (`baton events`).
//!
//! | kind | log | written by | durability |
//! | --- | --- | --- | --- |
//! | `session` | `sessions/<id>.jsonl` | `baton-agent` (`session::Line`) | written, no fsync |
//! | `routing` | `sessions/<id>.journal` | `baton-agent` (`routing::state::Record`) | fsync per commit |
//! | `task` | `tasks/<id>.events.jsonl` | `baton-exec` (`background::TaskEvent`) | fsync per line |
//! | `flow` | `flows/<id>.events.jsonl` | `baton-flow` (`Record`: `seq`, `at`, `FlowEvent`) | fsync per line |
//! | `workflow` | `workflows/<id>.events.jsonl` | `baton-workflow` (`store::WorkflowEvent`) | fsync per line |
//! | `worker` | `workers/<name>.events.jsonl` | `baton-exec` (`worker::WorkerEvent`) | fsync per line |
//!
//! Every one is a `baton_state::JsonlLog`: one JSON value per line, a line committed when its
//! `\n` is written, a torn last line (no newline) not an event yet.
//!
//! - [`Payload`]: the typed event of each kind, the log's own record type.
//! - [`feed`]: reading the logs from a [`Cursor`] on, in order, whole lines only.
//! - [`follow`]: waiting for new lines and new logs: with inotify, and from memory for the lines
//!   this process appends itself.

pub mod feed;
pub mod follow;
pub mod projection;

use baton_protocol::ProjectEvent;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use baton_protocol::{Cursor, Position, Source, SourceKind};
pub use feed::{Feed, FeedError, Filter};
pub use follow::Watcher;

/// One event of the feed.
pub type Event = ProjectEvent<Payload>;

/// The typed event of each kind of log: the record type the log is written with.
///
/// Serialized as the log line itself (untagged): the kind is the envelope's `source.kind`.
/// [`Payload::parse`] reads a line by its kind; the derived `Deserialize` tries the kinds in
/// turn and is there for readers that only have the payload.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Payload {
    Workflow(baton_workflow::store::WorkflowEvent),
    Flow(baton_flow::Record),
    Task(baton_exec::background::TaskEvent),
    Worker(baton_exec::worker::WorkerEvent),
    Routing(baton_agent::routing::state::Record),
    Session(baton_agent::session::Line),
}

impl Payload {
    /// Reads one line of a log of `kind`.
    pub fn parse(kind: SourceKind, line: &[u8]) -> Result<Payload, serde_json::Error> {
        Ok(match kind {
            SourceKind::Session => Payload::Session(serde_json::from_slice(line)?),
            SourceKind::Routing => Payload::Routing(serde_json::from_slice(line)?),
            SourceKind::Task => Payload::Task(serde_json::from_slice(line)?),
            SourceKind::Flow => Payload::Flow(serde_json::from_slice(line)?),
            SourceKind::Workflow => Payload::Workflow(workflow_event(line)?),
            SourceKind::Worker => Payload::Worker(serde_json::from_slice(line)?),
        })
    }

    /// Reads one line of a log of `kind` for the projection alone: as [`Payload::parse`], but a
    /// workflow event's change of the artifact keeps only what the projection reads
    /// ([`projection::ProjectedChange`]); the rest is skipped while parsing, not built and freed.
    pub fn parse_projected(kind: SourceKind, line: &[u8]) -> Result<Payload, serde_json::Error> {
        match kind {
            SourceKind::Workflow => {
                let wire: baton_workflow::event::Wire<projection::ProjectedChange> =
                    serde_json::from_slice(line)?;
                let event = baton_workflow::store::WorkflowEvent::try_from(wire)
                    .map_err(serde::de::Error::custom)?;
                Ok(Payload::Workflow(event))
            }
            _ => Payload::parse(kind, line),
        }
    }

    /// The kind of log the event comes from.
    pub fn kind(&self) -> SourceKind {
        match self {
            Payload::Session(_) => SourceKind::Session,
            Payload::Routing(_) => SourceKind::Routing,
            Payload::Task(_) => SourceKind::Task,
            Payload::Flow(_) => SourceKind::Flow,
            Payload::Workflow(_) => SourceKind::Workflow,
            Payload::Worker(_) => SourceKind::Worker,
        }
    }

    /// The time the line records (RFC 3339), when it records one: every workflow, Flow and
    /// worker event, a transcript's header and a task's `task.created`.
    pub fn ts(&self) -> Option<&str> {
        match self {
            Payload::Workflow(e) => Some(workflow_ts(e)),
            Payload::Flow(r) => Some(&r.at),
            Payload::Task(baton_exec::background::TaskEvent::Created { created, .. }) => {
                Some(created)
            }
            Payload::Session(baton_agent::session::Line::Session(h)) => Some(&h.created),
            Payload::Worker(w) => Some(w.at()),
            Payload::Task(_) | Payload::Session(_) | Payload::Routing(_) => None,
        }
    }

    /// The event's name: the `type` of its line (`event` for a workflow's).
    pub fn name(&self) -> String {
        let v = serde_json::to_value(self).unwrap_or(Value::Null);
        let name = v.get("type").or_else(|| v.get("event"));
        name.and_then(Value::as_str).unwrap_or("?").to_string()
    }

    /// One line for people: the event's name, then its short scalar fields as `key=value`
    /// (long text and nested values left out; `baton events --json` has everything).
    pub fn summary(&self) -> String {
        let v = serde_json::to_value(self).unwrap_or(Value::Null);
        let mut out = self.name();
        let Value::Object(fields) = &v else {
            return out;
        };
        for (k, val) in fields {
            if SKIPPED.contains(&k.as_str()) {
                continue;
            }
            // A transcript message: who spoke.
            if let Some(role) = val.get("role").and_then(Value::as_str) {
                out.push_str(&format!(" {k}.role={role}"));
                continue;
            }
            let text = match val {
                Value::String(s) if s.chars().count() <= 60 && !s.contains('\n') => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                _ => continue,
            };
            out.push_str(&format!(" {k}={text}"));
        }
        out
    }
}

/// Fields a summary leaves out: the name itself and what the envelope already says.
const SKIPPED: [&str; 7] = ["type", "event", "seq", "ts", "at", "wf", "id"];

/// The one place that knows the shape of a workflow log line (another change is turning
/// `WorkflowEvent` into a tagged enum; only these two functions follow it).
fn workflow_event(line: &[u8]) -> Result<baton_workflow::store::WorkflowEvent, serde_json::Error> {
    serde_json::from_slice(line)
}

fn workflow_ts(e: &baton_workflow::store::WorkflowEvent) -> &str {
    &e.ts
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn each_kind_reads_its_own_log_line_and_serializes_it_back() {
        let lines = [
            (
                SourceKind::Workflow,
                r#"{"seq":1,"ts":"2026-12-04T21:00:00Z","wf":"wf-1","event":"agent_started","phase":"build","task_id":null,"agent":"component-builder","decision":null,"reason":null}"#,
                "agent_started agent=component-builder phase=build",
            ),
            (
                SourceKind::Flow,
                r#"{"seq":3,"at":"2026-12-04T21:00:01Z","type":"unit.merging","unit":"a","tip":"abc"}"#,
                "unit.merging tip=abc unit=a",
            ),
            (
                SourceKind::Task,
                r#"{"type":"task.started","pid":42}"#,
                "task.started pid=42",
            ),
            (
                SourceKind::Session,
                r#"{"type":"ended","outcome":"completed","reason":null}"#,
                "ended outcome=completed",
            ),
            (
                SourceKind::Session,
                r#"{"type":"message","message":{"role":"user","text":"hi"}}"#,
                "message message.role=user",
            ),
        ];
        for (kind, line, summary) in lines {
            let p = Payload::parse(kind, line.as_bytes()).unwrap();
            assert_eq!(p.kind(), kind);
            assert_eq!(p.summary(), summary);
            let back: Value = serde_json::to_value(&p).unwrap();
            let orig: Value = serde_json::from_str(line).unwrap();
            for (k, v) in orig.as_object().unwrap() {
                if !v.is_null() {
                    assert_eq!(back.get(k), Some(v), "{kind} {k}");
                }
            }
        }
        let flow = Payload::parse(
            SourceKind::Flow,
            br#"{"seq":1,"at":"2026-12-04T21:00:01Z","type":"flow.halted","reason":"x"}"#,
        )
        .unwrap();
        assert_eq!(flow.ts(), Some("2026-12-04T21:00:01Z"));
        assert!(Payload::parse(SourceKind::Flow, br#"{"type":"task.started","pid":1}"#).is_err());
    }
}
