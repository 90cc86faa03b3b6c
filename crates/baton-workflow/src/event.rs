//! The events of a workflow's log: [`WorkflowEvent`] is a header (`seq`, `ts`, `wf`), an
//! [`EventBody`] — a tagged enum with one payload struct per kind, like Flow's `FlowEvent` — and
//! the artifact's change (`delta`, a JSON merge patch).
//!
//! On disk an event is one flat JSON line, as every baton has written it:
//! `{"seq", "ts", "wf", "event": kind, "phase", "task_id", "agent", "decision", "reason",
//! "duration_seconds"?, "details"?, "delta"?}`. [`Wire`] is that line; the typed event reads from
//! it and writes back to it, so old logs load and new lines keep the shape `baton log --json`
//! prints. A field a kind does not use is not kept in its payload (baton never writes one).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The event kinds (the `event` field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    WorkflowStarted,
    AgentStarted,
    AgentCompleted,
    ContractParsed,
    RemediationCreated,
    ScopeDecisionRequested,
    ScopeDecisionResolved,
    MemoryFinalized,
    WorkflowCompleted,
    WorkflowFailed,
    /// A change of the artifact that is none of the above (a phase moved, a gate set).
    ArtifactUpdated,
    /// Tasks were added to the graph.
    TaskCreated,
    /// The engine decided the next action (`decision` is its name).
    Decided,
    /// The workflow stopped at a question (`reason`).
    CheckpointRequested,
    /// The user answered (`details.answer`, their exact words).
    CheckpointAnswered,
    /// The next dispatch would pass the budget.
    BudgetStopped,
    /// Stopped by the user's answer.
    WorkflowStopped,
    /// A BUILD's finishing choice was carried out (`decision`: merge, keep, pr or discard).
    BuildFinished,
}

/// One line of the log as it is on disk. `D` is how the change of the artifact is read: whole
/// (`Value`), or as a reader that needs only part of it reads it (the projection skips the rest
/// while parsing, `baton_events::Payload::parse_projected`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Wire<D = Value> {
    pub seq: u64,
    pub ts: String,
    pub wf: String,
    pub event: EventKind,
    #[serde(default)]
    pub phase: Option<String>,
    #[serde(default)]
    pub task_id: Option<String>,
    #[serde(default)]
    pub agent: Option<String>,
    #[serde(default)]
    pub decision: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_seconds: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<D>,
}

/// One event of a workflow's log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(into = "Wire", try_from = "Wire")]
pub struct WorkflowEvent {
    /// 1 for the first event, one more for each next one.
    pub seq: u64,
    /// RFC 3339 UTC time of the append.
    pub ts: String,
    /// The workflow id.
    pub wf: String,
    pub body: EventBody,
    /// The change to the artifact, as a JSON merge patch.
    pub delta: Option<Value>,
}

impl WorkflowEvent {
    pub fn kind(&self) -> EventKind {
        self.body.kind()
    }

    /// The task the event is about (agent starts and completions).
    pub fn task_id(&self) -> Option<&str> {
        match &self.body {
            EventBody::AgentStarted(a) => a.task_id.as_deref(),
            EventBody::AgentCompleted(a) => a.task_id.as_deref(),
            EventBody::ContractParsed(f)
            | EventBody::RemediationCreated(f)
            | EventBody::ScopeDecisionRequested(f)
            | EventBody::ScopeDecisionResolved(f) => f.task_id.as_deref(),
            _ => None,
        }
    }
}

/// What happened, by kind.
#[derive(Debug, Clone, PartialEq)]
pub enum EventBody {
    /// The record begins; its delta is the whole initial artifact.
    WorkflowStarted(Started),
    TaskCreated(TaskCreated),
    Decided(Decided),
    AgentStarted(AgentStarted),
    AgentCompleted(AgentCompleted),
    CheckpointRequested(CheckpointRequested),
    CheckpointAnswered(CheckpointAnswered),
    ArtifactUpdated(Note),
    MemoryFinalized(Note),
    WorkflowCompleted(Note),
    WorkflowFailed(Note),
    BudgetStopped(Note),
    WorkflowStopped(Note),
    BuildFinished(Finished),
    /// The kinds of cc10x's event vocabulary that baton's runner does not write: kept as read.
    ContractParsed(Fields),
    RemediationCreated(Fields),
    ScopeDecisionRequested(Fields),
    ScopeDecisionResolved(Fields),
}

/// `build_finished`: the finishing choice (`decision`) and what it did (`reason`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Finished {
    pub choice: Option<String>,
    pub reason: Option<String>,
}

/// `workflow_started`: the workflow type (`decision`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Started {
    pub workflow_type: Option<String>,
}

/// A change with a sentence saying what and why (`phase` where one applies).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Note {
    pub phase: Option<String>,
    pub reason: Option<String>,
}

impl Note {
    /// A note saying why.
    pub fn because(reason: impl Into<String>) -> Note {
        Note {
            phase: None,
            reason: Some(reason.into()),
        }
    }
}

/// `task_created`: how many tasks and why, and their ids.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TaskCreated {
    pub reason: Option<String>,
    pub details: Option<TaskCreatedDetails>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TaskCreatedDetails {
    #[serde(default)]
    pub tasks: Vec<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `decided`: the engine's action (`decision`) at the phase cursor, its reason, and the tasks
/// and findings of the decision.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Decided {
    pub phase: Option<String>,
    pub action: Option<String>,
    pub reason: Option<String>,
    pub details: Option<DecidedDetails>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DecidedDetails {
    #[serde(default)]
    pub created: Vec<String>,
    #[serde(default)]
    pub findings: Vec<LoggedFinding>,
    #[serde(default)]
    pub dropped_findings: Vec<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One finding of a decision's batch, as the log keeps it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct LoggedFinding {
    /// `critical`, `major`, `minor` …
    pub severity: String,
    /// `file:line`, when the finding names one.
    #[serde(default)]
    pub location: Option<String>,
    pub text: String,
    /// The roles that raised it.
    #[serde(default)]
    pub raised_by: Vec<String>,
    /// Raised by both the reviewer and the hunter at one place.
    #[serde(default)]
    pub cross_confirmed: bool,
}

/// `agent_started`: the task's phase, id and role, and how it was launched.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AgentStarted {
    pub phase: Option<String>,
    pub task_id: Option<String>,
    pub agent: Option<String>,
    pub reason: Option<String>,
    pub details: Option<AgentStartedDetails>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AgentStartedDetails {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bias_phrases_removed: Option<Vec<String>>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `agent_completed`: the verdict (`decision`), how long it took, what it spent.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AgentCompleted {
    pub phase: Option<String>,
    pub task_id: Option<String>,
    pub agent: Option<String>,
    pub verdict: Option<String>,
    pub reason: Option<String>,
    pub duration_seconds: Option<f64>,
    pub details: Option<AgentCompletedDetails>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AgentCompletedDetails {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub exit_code: Option<Option<i32>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<EventUsage>,
    /// `Some(None)`: written as `null` (the route has no price); `None`: not written.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub cost_usd: Option<Option<f64>>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub changed: Option<Option<bool>>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub error: Option<Option<String>>,
    /// The agent's own session id (its transcript), when its stream named it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// A writer's dispatch: snapshots of the tree before it ran and after (commits no branch
    /// points at); what it changed is the diff between them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree_before: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree_after: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A field that may be written as `null`: `Some(None)` then, `None` when it is absent.
fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct EventUsage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
}

/// `checkpoint_requested`: the gate (`phase`), the question (`reason`) and its options.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CheckpointRequested {
    pub gate: Option<String>,
    pub question: Option<String>,
    pub details: Option<CheckpointDetails>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CheckpointDetails {
    #[serde(default)]
    pub options: Vec<String>,
    #[serde(default)]
    pub recommended: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `checkpoint_answered`: the gate (`phase`), the user's exact words and what they chose.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CheckpointAnswered {
    pub gate: Option<String>,
    /// The choice as carried out (`Scope("CRITICAL_ONLY")`, …), where it is recorded.
    pub choice: Option<String>,
    pub details: Option<AnswerDetails>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AnswerDetails {
    #[serde(default)]
    pub answer: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Every field of a line, for the kinds kept as read.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Fields {
    pub phase: Option<String>,
    pub task_id: Option<String>,
    pub agent: Option<String>,
    pub decision: Option<String>,
    pub reason: Option<String>,
    pub duration_seconds: Option<f64>,
    pub details: Option<Value>,
}

impl EventBody {
    /// An event of `kind` with nothing but its kind.
    pub fn empty(kind: EventKind) -> EventBody {
        use EventBody as B;
        use EventKind as K;
        let note = Note::default;
        match kind {
            K::WorkflowStarted => B::WorkflowStarted(Started::default()),
            K::TaskCreated => B::TaskCreated(TaskCreated::default()),
            K::Decided => B::Decided(Decided::default()),
            K::AgentStarted => B::AgentStarted(AgentStarted::default()),
            K::AgentCompleted => B::AgentCompleted(AgentCompleted::default()),
            K::CheckpointRequested => B::CheckpointRequested(CheckpointRequested::default()),
            K::CheckpointAnswered => B::CheckpointAnswered(CheckpointAnswered::default()),
            K::ArtifactUpdated => B::ArtifactUpdated(note()),
            K::MemoryFinalized => B::MemoryFinalized(note()),
            K::WorkflowCompleted => B::WorkflowCompleted(note()),
            K::WorkflowFailed => B::WorkflowFailed(note()),
            K::BudgetStopped => B::BudgetStopped(note()),
            K::WorkflowStopped => B::WorkflowStopped(note()),
            K::BuildFinished => B::BuildFinished(Finished::default()),
            K::ContractParsed => B::ContractParsed(Fields::default()),
            K::RemediationCreated => B::RemediationCreated(Fields::default()),
            K::ScopeDecisionRequested => B::ScopeDecisionRequested(Fields::default()),
            K::ScopeDecisionResolved => B::ScopeDecisionResolved(Fields::default()),
        }
    }

    pub fn kind(&self) -> EventKind {
        use EventBody as B;
        match self {
            B::WorkflowStarted(_) => EventKind::WorkflowStarted,
            B::TaskCreated(_) => EventKind::TaskCreated,
            B::Decided(_) => EventKind::Decided,
            B::AgentStarted(_) => EventKind::AgentStarted,
            B::AgentCompleted(_) => EventKind::AgentCompleted,
            B::CheckpointRequested(_) => EventKind::CheckpointRequested,
            B::CheckpointAnswered(_) => EventKind::CheckpointAnswered,
            B::ArtifactUpdated(_) => EventKind::ArtifactUpdated,
            B::MemoryFinalized(_) => EventKind::MemoryFinalized,
            B::WorkflowCompleted(_) => EventKind::WorkflowCompleted,
            B::WorkflowFailed(_) => EventKind::WorkflowFailed,
            B::BudgetStopped(_) => EventKind::BudgetStopped,
            B::WorkflowStopped(_) => EventKind::WorkflowStopped,
            B::BuildFinished(_) => EventKind::BuildFinished,
            B::ContractParsed(_) => EventKind::ContractParsed,
            B::RemediationCreated(_) => EventKind::RemediationCreated,
            B::ScopeDecisionRequested(_) => EventKind::ScopeDecisionRequested,
            B::ScopeDecisionResolved(_) => EventKind::ScopeDecisionResolved,
        }
    }

    /// The body of a flat line's fields; `details` that do not decode for the kind are an error
    /// naming the field.
    pub fn from_fields(kind: EventKind, f: Fields) -> Result<EventBody, String> {
        use EventBody as B;
        fn details<T: serde::de::DeserializeOwned>(d: Option<Value>) -> Result<Option<T>, String> {
            d.filter(|d| !d.is_null())
                .map(|d| {
                    serde_path_to_error::deserialize(d)
                        .map_err(|e| format!("details.{}: {}", e.path(), e.inner()))
                })
                .transpose()
        }
        let note = |f: Fields| Note {
            phase: f.phase,
            reason: f.reason,
        };
        Ok(match kind {
            EventKind::WorkflowStarted => B::WorkflowStarted(Started {
                workflow_type: f.decision,
            }),
            EventKind::TaskCreated => B::TaskCreated(TaskCreated {
                reason: f.reason,
                details: details(f.details)?,
            }),
            EventKind::Decided => B::Decided(Decided {
                phase: f.phase,
                action: f.decision,
                reason: f.reason,
                details: details(f.details)?,
            }),
            EventKind::AgentStarted => B::AgentStarted(AgentStarted {
                phase: f.phase,
                task_id: f.task_id,
                agent: f.agent,
                reason: f.reason,
                details: details(f.details)?,
            }),
            EventKind::AgentCompleted => B::AgentCompleted(AgentCompleted {
                phase: f.phase,
                task_id: f.task_id,
                agent: f.agent,
                verdict: f.decision,
                reason: f.reason,
                duration_seconds: f.duration_seconds,
                details: details(f.details)?,
            }),
            EventKind::CheckpointRequested => B::CheckpointRequested(CheckpointRequested {
                gate: f.phase,
                question: f.reason,
                details: details(f.details)?,
            }),
            EventKind::CheckpointAnswered => B::CheckpointAnswered(CheckpointAnswered {
                gate: f.phase,
                choice: f.decision,
                details: details(f.details)?,
            }),
            EventKind::ArtifactUpdated => B::ArtifactUpdated(note(f)),
            EventKind::MemoryFinalized => B::MemoryFinalized(note(f)),
            EventKind::WorkflowCompleted => B::WorkflowCompleted(note(f)),
            EventKind::WorkflowFailed => B::WorkflowFailed(note(f)),
            EventKind::BudgetStopped => B::BudgetStopped(note(f)),
            EventKind::WorkflowStopped => B::WorkflowStopped(note(f)),
            EventKind::BuildFinished => B::BuildFinished(Finished {
                choice: f.decision,
                reason: f.reason,
            }),
            EventKind::ContractParsed => B::ContractParsed(f),
            EventKind::RemediationCreated => B::RemediationCreated(f),
            EventKind::ScopeDecisionRequested => B::ScopeDecisionRequested(f),
            EventKind::ScopeDecisionResolved => B::ScopeDecisionResolved(f),
        })
    }

    /// The flat line's fields of this body.
    pub fn fields(&self) -> Fields {
        use EventBody as B;
        fn json<T: Serialize>(d: &Option<T>) -> Option<Value> {
            d.as_ref().and_then(|d| serde_json::to_value(d).ok())
        }
        let note = |n: &Note| Fields {
            phase: n.phase.clone(),
            reason: n.reason.clone(),
            ..Fields::default()
        };
        match self {
            B::WorkflowStarted(s) => Fields {
                decision: s.workflow_type.clone(),
                ..Fields::default()
            },
            B::TaskCreated(t) => Fields {
                reason: t.reason.clone(),
                details: json(&t.details),
                ..Fields::default()
            },
            B::Decided(d) => Fields {
                phase: d.phase.clone(),
                decision: d.action.clone(),
                reason: d.reason.clone(),
                details: json(&d.details),
                ..Fields::default()
            },
            B::AgentStarted(a) => Fields {
                phase: a.phase.clone(),
                task_id: a.task_id.clone(),
                agent: a.agent.clone(),
                reason: a.reason.clone(),
                details: json(&a.details),
                ..Fields::default()
            },
            B::AgentCompleted(a) => Fields {
                phase: a.phase.clone(),
                task_id: a.task_id.clone(),
                agent: a.agent.clone(),
                decision: a.verdict.clone(),
                reason: a.reason.clone(),
                duration_seconds: a.duration_seconds,
                details: json(&a.details),
            },
            B::CheckpointRequested(c) => Fields {
                phase: c.gate.clone(),
                reason: c.question.clone(),
                details: json(&c.details),
                ..Fields::default()
            },
            B::CheckpointAnswered(c) => Fields {
                phase: c.gate.clone(),
                decision: c.choice.clone(),
                details: json(&c.details),
                ..Fields::default()
            },
            B::ArtifactUpdated(n)
            | B::MemoryFinalized(n)
            | B::WorkflowCompleted(n)
            | B::WorkflowFailed(n)
            | B::BudgetStopped(n)
            | B::WorkflowStopped(n) => note(n),
            B::BuildFinished(b) => Fields {
                decision: b.choice.clone(),
                reason: b.reason.clone(),
                ..Fields::default()
            },
            B::ContractParsed(f)
            | B::RemediationCreated(f)
            | B::ScopeDecisionRequested(f)
            | B::ScopeDecisionResolved(f) => f.clone(),
        }
    }
}

impl<D: Into<Value>> TryFrom<Wire<D>> for WorkflowEvent {
    type Error = String;

    fn try_from(w: Wire<D>) -> Result<WorkflowEvent, String> {
        let fields = Fields {
            phase: w.phase,
            task_id: w.task_id,
            agent: w.agent,
            decision: w.decision,
            reason: w.reason,
            duration_seconds: w.duration_seconds,
            details: w.details,
        };
        Ok(WorkflowEvent {
            seq: w.seq,
            ts: w.ts,
            wf: w.wf,
            body: EventBody::from_fields(w.event, fields)?,
            delta: w.delta.map(Into::into),
        })
    }
}

impl From<WorkflowEvent> for Wire {
    fn from(e: WorkflowEvent) -> Wire {
        let f = e.body.fields();
        Wire {
            seq: e.seq,
            ts: e.ts,
            wf: e.wf,
            event: e.body.kind(),
            phase: f.phase,
            task_id: f.task_id,
            agent: f.agent,
            decision: f.decision,
            reason: f.reason,
            duration_seconds: f.duration_seconds,
            details: f.details,
            delta: e.delta,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    /// Every line of a log written before events were typed reads as its kind's payload and
    /// writes back as the same JSON.
    #[test]
    fn the_previous_binarys_lines_read_typed_and_write_back_the_same() {
        let log = include_str!("../tests/fixtures/build-scope-checkpoint.events.jsonl");
        let mut kinds = Vec::new();
        for line in log.lines() {
            let ev: WorkflowEvent = serde_json::from_str(line).unwrap();
            kinds.push(ev.kind());
            let again: Value = serde_json::to_value(&ev).unwrap();
            let was: Value = serde_json::from_str(line).unwrap();
            assert_eq!(again, was, "{line}");
            match &ev.body {
                EventBody::AgentCompleted(a) => {
                    let d = a.details.as_ref().unwrap();
                    assert_eq!(d.backend.as_deref(), Some("command"));
                    assert!(d.usage.is_some());
                }
                EventBody::CheckpointAnswered(c) => {
                    assert_eq!(c.gate.as_deref(), Some("scope_decision"));
                    assert_eq!(c.details.as_ref().unwrap().answer, "Critical Only");
                }
                EventBody::Decided(d) => assert!(d.action.is_some()),
                _ => {}
            }
        }
        assert_eq!(kinds[0], EventKind::WorkflowStarted);
        assert_eq!(kinds.last(), Some(&EventKind::WorkflowCompleted));
        assert!(kinds.contains(&EventKind::CheckpointRequested));
    }

    #[test]
    fn details_that_do_not_fit_their_kind_are_an_error_naming_the_field() {
        let line = r#"{"seq":2,"ts":"t","wf":"w","event":"agent_completed","phase":null,"task_id":null,"agent":null,"decision":null,"reason":null,"details":{"usage":{"input_tokens":"many"}}}"#;
        let e = serde_json::from_str::<WorkflowEvent>(line).unwrap_err();
        assert!(e.to_string().contains("details.usage.input_tokens"), "{e}");
    }
}
