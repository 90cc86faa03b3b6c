//! The workflow state the runner owns: what it keeps in the artifact besides cc10x's own fields,
//! decoded strictly, and the merge patch that records a change of the artifact as one event.
//!
//! Top-level keys (read by `baton status` and `baton log`): `run_state`, `checkpoint`, `spent`
//! and `tasks`. The runner's own bookkeeping sits under `run`. A key that is absent reads as its
//! default (a record before the key existed); a key that is present but does not decode (an
//! unknown task status, a wrong type) is a [`StateError`] naming the field — never a default, so
//! a record this baton cannot read is refused instead of restarting its graph.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::artifact::{Artifact, HistoryEntry, ProofStatus, Task, VerificationRigor};
use crate::engine::Action;
use crate::route::WorkflowKind;

baton_protocol::closed_set! {
    /// Where a workflow stands.
    #[derive(Default)]
    pub enum RunState ("run state") {
        #[default]
        Running = "running",
        /// Waiting for `baton resume --answer`.
        Checkpoint = "checkpoint",
        Completed = "completed",
        /// Stopped by a failure (a malformed contract, a refused pass, a failed agent); `baton
        /// resume --answer` retries with the answer as guidance.
        Failed = "failed",
        /// Stopped by the user's answer; final.
        Stopped = "stopped",
    }
}

pub use crate::artifact::Gate;

/// A question the workflow waits on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub gate: Gate,
    pub question: String,
    /// The answers the runner understands; an empty list takes free text.
    #[serde(default)]
    pub options: Vec<String>,
    #[serde(default)]
    pub recommended: Option<String>,
    /// What the user needs to decide: what happened, what was spent, what is open.
    #[serde(default)]
    pub brief: String,
}

/// Tokens and money spent by the workflow's dispatches.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Spent {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// The priced part; dispatches without a price add nothing here and count below.
    pub cost_usd: f64,
    pub unpriced_dispatches: u32,
    pub dispatches: u32,
    /// The most one dispatch has cost so far (tokens, dollars): the estimate of the next.
    pub max_dispatch_tokens: u64,
    pub max_dispatch_usd: f64,
}

impl Spent {
    pub fn tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}

/// What one dispatched task returned.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TaskOutput {
    pub role: String,
    /// The agent's final message (bounded by the output cap).
    pub text: String,
    /// Whether the working tree changed while the agent ran (write roles).
    pub changed: Option<bool>,
    /// The child failed before it could answer (spawn error, timeout, model failure).
    pub error: Option<String>,
    /// A scoped investigator of DEBUG's fan-out: the files it edited (the tree between its two
    /// snapshots), which the fan-in conflict-check compares.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub edited: Vec<String>,
    /// The verifier's passing scenario commands, run again by baton after it answered.
    pub host_checks: Vec<HostCheck>,
    /// A remediation's proof (its test command), run again by baton; a failed run or a proof
    /// that is only the whole suite leaves the fix unproven.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proof_check: Option<HostCheck>,
}

/// One scenario command of a verifier's PASS, run again by the host.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HostCheck {
    pub command: String,
    pub ok: bool,
    pub exit_code: Option<i32>,
    pub error: Option<String>,
    /// Failing tests the output shows that the clean baseline did not have.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub new_failures: Vec<String>,
    /// Failing tests the baseline already had: listed, not blamed on this change.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preexisting: Vec<String>,
    /// What the command printed (its tail; read for failing tests, never recorded).
    #[serde(skip)]
    pub output: String,
}

/// The runner's bookkeeping, under `run` in the artifact.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Host {
    /// The engine's action being carried out.
    pub next: Option<Action>,
    pub next_reason: Option<String>,
    /// The tasks dispatched for `next`: once all are completed their outputs are decided.
    pub batch: Vec<String>,
    pub outputs: BTreeMap<String, TaskOutput>,
    /// The tasks whose outputs came in, in the order they came (the brief lists tasks so).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub finished_order: Vec<String>,
    /// Dispatches per phase: the attempt number of record and replay keys.
    pub dispatch_counts: BTreeMap<String, u32>,
    /// DEBUG fan-out: the tree as each scoped investigator first started (a snapshot), kept so
    /// that a run again after a crash is read from there, its edits before the crash included.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub lane_bases: BTreeMap<String, String>,
    /// Remediation tasks whose re-checks were spawned: no longer shown to the engine.
    pub consumed_remfix: Vec<String>,
    /// Extra remediation cycles the user granted at the circuit breaker.
    pub breaker_allowance: u32,
    /// The plan phase the waiting phase checkpoint (`phase_decision`, `human_action`,
    /// `human_verify`) is about.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase_gate: Option<String>,
    /// The guidance goes to the next batch the engine decides (a phase checkpoint's answer for
    /// the phase's builder), not only to a retry of the stopped one.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub carry_guidance: bool,
    /// Tasks whose pass was too thin to believe (a rubber stamp) and were asked once more for
    /// the evidence: a second thin pass stops the workflow.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub asked_for_evidence: Vec<String>,
    /// `done for now` at the REVIEW's build transition: it ends with the findings unfixed.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub done_for_now: bool,
    /// Times the fix in hand was sent back for its proof (reset once a proof is accepted).
    #[serde(skip_serializing_if = "is_zero")]
    pub proof_returns: u32,
    /// The phase checkpoints answered, as `GATE:PHASE`: each asks once.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub phase_checkpoints: Vec<String>,
    /// `DIFF_DRIVEN_DOCS: skip` was in the session settings at the start: no doc-sync task.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub doc_sync_skipped: bool,
    /// The user's last answer, handed to the next dispatch.
    pub guidance: Option<String>,
    pub answers: Vec<GivenAnswer>,
    pub failure: Option<String>,
    pub brief: Option<String>,
    /// `git status --porcelain` + `git diff` digest when the workflow started.
    pub baseline: Option<String>,
    pub auto_proceed: bool,
    /// BUILD isolation: the worktree the agents work in (on branch `baton/<id>`), when taken.
    pub worktree: Option<baton_exec::worktree::ChildWorktree>,
    /// What became of the worktree offer.
    pub worktree_offer: Option<WorktreeOffer>,
    /// The worktree answer `baton run` was given (`--worktree`: `true`), kept for an offer made
    /// later (after `build directly`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolate_asked: Option<bool>,
    /// The finishing choice taken (`merge`, `keep`, `discard`) and what it did.
    pub finished: Option<String>,
    /// Memory was finalized (it is written once, even when the finishing choice comes later).
    pub memory_done: bool,
    /// The completion headline, kept while the finishing choice is asked.
    pub headline: Option<String>,
    /// Budget limits in force (from the command line or the config).
    pub budget_usd: Option<f64>,
    pub budget_tokens: Option<u64>,
}

impl Host {
    /// Records that task `id`'s output came in. The tasks of one parallel batch are kept in the
    /// batch's order, whichever finished first, so the brief lists the same run the same way.
    pub fn finished(&mut self, id: &str) {
        self.finished_order.retain(|x| x != id);
        self.finished_order.push(id.to_string());
        let in_batch = |x: &String| self.batch.iter().position(|b| b == x);
        let tail = self
            .finished_order
            .iter()
            .rev()
            .take_while(|x| in_batch(x).is_some())
            .count();
        let n = self.finished_order.len();
        let batch = &self.batch;
        self.finished_order[n - tail..].sort_by_key(|x| batch.iter().position(|b| b == x));
    }
}

/// An answer the user gave at a checkpoint, in their exact words.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GivenAnswer {
    pub gate: Gate,
    pub answer: String,
    /// RFC 3339 UTC time of the answer.
    pub at: String,
}

/// What became of a BUILD's worktree offer (`run.worktree_offer`), written as the text the
/// record has always held: `accepted`, `declined`, `declined: not asked for …`, `skipped: <why>`
/// or `failed`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorktreeOffer {
    Accepted,
    /// Declined on the command line (`--no-worktree`) or at the prompt.
    Declined,
    /// Not asked for, and `AUTO_PROCEED` is off.
    NotAsked,
    /// Not offered: trivial scope, already in a linked worktree, no git, a resume before the
    /// graph was recorded …
    Skipped(String),
    /// Making the worktree failed (the workflow stopped saying why).
    Failed,
}

const NOT_ASKED: &str = "declined: not asked for (--worktree, or AUTO_PROCEED, takes it)";

impl WorktreeOffer {
    pub fn text(&self) -> String {
        match self {
            WorktreeOffer::Accepted => "accepted".into(),
            WorktreeOffer::Declined => "declined".into(),
            WorktreeOffer::NotAsked => NOT_ASKED.into(),
            WorktreeOffer::Skipped(why) => format!("skipped: {why}"),
            WorktreeOffer::Failed => "failed".into(),
        }
    }
}

impl Serialize for WorktreeOffer {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text())
    }
}

impl<'de> Deserialize<'de> for WorktreeOffer {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Ok(match text.as_str() {
            "accepted" => WorktreeOffer::Accepted,
            "declined" => WorktreeOffer::Declined,
            NOT_ASKED => WorktreeOffer::NotAsked,
            "failed" => WorktreeOffer::Failed,
            other => match other.strip_prefix("skipped: ") {
                Some(why) => WorktreeOffer::Skipped(why.to_string()),
                None => {
                    return Err(serde::de::Error::custom(format!(
                        "unknown worktree offer {other:?}: expected accepted, declined, failed or skipped: <why>"
                    )))
                }
            },
        })
    }
}

/// The runner's typed state: the artifact keys it owns, decoded strictly.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WorkflowState {
    pub state: RunState,
    pub checkpoint: Option<Checkpoint>,
    pub spent: Spent,
    pub tasks: Vec<Task>,
    pub host: Host,
}

/// A key of the workflow record that does not decode: where (`tasks[2].status`) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field `{field}` does not read: {message}")]
pub struct StateError {
    /// The path of the field in the artifact, as `serde_path_to_error` spells it.
    pub field: String,
    pub message: String,
    /// The path as keys and indexes, to find the event or snapshot line that wrote it.
    pub segments: Vec<Segment>,
}

/// One step of a field's path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    Key(String),
    Index(usize),
}

/// The keys the runner owns, as they are decoded: absent (or null) is the default.
#[derive(Deserialize)]
struct Keys {
    #[serde(default)]
    run_state: Option<RunState>,
    #[serde(default)]
    checkpoint: Option<Checkpoint>,
    #[serde(default)]
    spent: Option<Spent>,
    #[serde(default)]
    tasks: Option<Vec<Task>>,
    #[serde(default)]
    run: Option<Host>,
}

/// The line of the JSON text `bytes` (a snapshot) where the record stops decoding (the runner's
/// keys, else cc10x's typed artifact fields).
pub fn error_line(bytes: &[u8]) -> Option<usize> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    if let Err(e) = serde_path_to_error::deserialize::<_, Keys>(&mut de) {
        return Some(e.into_inner().line()).filter(|l| *l > 0);
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    match serde_path_to_error::deserialize::<_, Artifact>(&mut de) {
        Ok(_) => None,
        Err(e) => Some(e.into_inner().line()).filter(|l| *l > 0),
    }
}

/// Decodes a `T` from `value`. Only a value that does not decode is read again, tracking the path,
/// to name the field (the tracking costs about as much as the decode).
fn decode<T: serde::de::DeserializeOwned>(value: &Value) -> Result<T, StateError> {
    T::deserialize(value).or_else(|_| serde_path_to_error::deserialize(value).map_err(state_error))
}

fn state_error(e: serde_path_to_error::Error<serde_json::Error>) -> StateError {
    let segments = e
        .path()
        .iter()
        .filter_map(|s| match s {
            serde_path_to_error::Segment::Map { key } => Some(Segment::Key(key.clone())),
            serde_path_to_error::Segment::Seq { index } => Some(Segment::Index(*index)),
            _ => None,
        })
        .collect();
    StateError {
        field: e.path().to_string(),
        message: e.into_inner().to_string(),
        segments,
    }
}

impl WorkflowState {
    /// Decodes the runner's keys of `artifact`; a key that is there but does not decode is an
    /// error naming it.
    pub fn read(artifact: &Value) -> Result<WorkflowState, StateError> {
        let keys: Keys = decode(artifact)?;
        Ok(WorkflowState {
            state: keys.run_state.unwrap_or_default(),
            checkpoint: keys.checkpoint,
            spent: keys.spent.unwrap_or_default(),
            tasks: keys.tasks.unwrap_or_default(),
            host: keys.run.unwrap_or_default(),
        })
    }

    /// Writes the state back into `artifact`.
    pub fn write(&self, artifact: &mut Value) {
        let Value::Object(a) = artifact else { return };
        let put = |a: &mut Map<String, Value>, k: &str, v: Value| {
            a.insert(k.to_string(), v);
        };
        put(a, "run_state", Value::String(self.state.as_str().into()));
        put(
            a,
            "checkpoint",
            serde_json::to_value(&self.checkpoint).unwrap_or(Value::Null),
        );
        put(
            a,
            "spent",
            serde_json::to_value(&self.spent).unwrap_or(Value::Null),
        );
        put(
            a,
            "tasks",
            serde_json::to_value(&self.tasks).unwrap_or(Value::Null),
        );
        put(
            a,
            "run",
            serde_json::to_value(&self.host).unwrap_or(Value::Null),
        );
    }

    /// [`WorkflowState::read`], and cc10x's artifact fields the engine reads typed
    /// ([`Artifact`]) decode too: what the store checks before it hands a record out.
    pub fn check(artifact: &Value) -> Result<WorkflowState, StateError> {
        Record::read(artifact).map(|r| r.state)
    }

    pub fn task(&self, id: &str) -> Option<&Task> {
        self.tasks.iter().find(|t| t.id == id)
    }

    pub fn task_mut(&mut self, id: &str) -> Option<&mut Task> {
        self.tasks.iter_mut().find(|t| t.id == id)
    }
}

/// The keys of the record the runner owns (the rest is cc10x's artifact).
const RUNNER_KEYS: [&str; 5] = ["run_state", "checkpoint", "spent", "tasks", "run"];

/// The whole workflow record, typed: cc10x's artifact and the runner's state. The runner reads
/// it once per step, changes it through the engine's `Change`s and its own typed transitions,
/// and the store records the difference as a merge patch.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Record {
    pub artifact: Artifact,
    pub state: WorkflowState,
}

impl Record {
    pub fn new(artifact: Artifact, state: WorkflowState) -> Record {
        Record { artifact, state }
    }

    /// The record a new workflow starts with (made at `ts`): cc10x's artifact skeleton, and a
    /// runner state that has done nothing yet.
    pub fn initial(id: &str, kind: WorkflowKind, request: &str, ts: &str) -> Record {
        let started = HistoryEntry {
            event: "workflow_started".into(),
            ts: Some(ts.into()),
            ..HistoryEntry::default()
        };
        let mut artifact = Artifact {
            workflow_uuid: id.into(),
            workflow_id: Some(id.into()),
            user_request: Some(request.into()),
            workflow_type: Some(kind),
            verification_rigor: Some(VerificationRigor::Standard),
            proof_status: Some(ProofStatus::GapsFound),
            status_history: vec![started],
            created_at: Some(ts.into()),
            updated_at: Some(ts.into()),
            ..Artifact::default()
        };
        artifact.quality.scenario_coverage = 0.into();
        // cc10x's keys that baton writes for its readers and never reads itself.
        for (k, v) in [
            ("state_root", Value::from(".baton")),
            ("execution_mode", Value::from("subagent_dispatch")),
            ("memory_notes", Value::Array(Vec::new())),
        ] {
            artifact.extra.insert(k.into(), v);
        }
        Record::new(artifact, WorkflowState::default())
    }

    /// Decodes a record strictly: a field of either part that is there but does not decode is
    /// an error naming it.
    pub fn read(value: &Value) -> Result<Record, StateError> {
        let state = WorkflowState::read(value)?;
        let mut artifact: Artifact = decode(value)?;
        for k in RUNNER_KEYS {
            artifact.extra.remove(k);
        }
        Ok(Record { artifact, state })
    }

    /// The record as the store keeps it.
    pub fn to_value(&self) -> Value {
        let mut v = self.artifact.to_json();
        self.state.write(&mut v);
        v
    }
}

/// Applies a JSON merge patch (RFC 7386): objects merge key by key, `null` removes a key, any
/// other value replaces what was there.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(fields) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(t) = target else {
        return;
    };
    for (k, v) in fields {
        if v.is_null() {
            t.remove(k);
        } else {
            merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

/// Whether `value` holds the field at `path` (every key and index present).
pub fn holds(value: &Value, path: &[Segment]) -> bool {
    let mut at = value;
    for s in path {
        let next = match s {
            Segment::Key(k) => at.get(k),
            Segment::Index(i) => at.get(*i),
        };
        match next {
            Some(v) => at = v,
            None => return false,
        }
    }
    true
}

/// The JSON merge patch (RFC 7386) that turns `old` into `new`. A key whose new value is `null`
/// is removed by the patch, so a field set to null reads back as absent (every reader treats
/// the two alike).
pub fn diff(old: &Value, new: &Value) -> Option<Value> {
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => {
            let mut patch = Map::new();
            for (k, nv) in n {
                match o.get(k) {
                    Some(ov) => {
                        if let Some(p) = diff(ov, nv) {
                            patch.insert(k.clone(), p);
                        }
                    }
                    None if nv.is_null() => {}
                    None => {
                        patch.insert(k.clone(), strip_nulls(nv));
                    }
                }
            }
            for k in o.keys() {
                if !n.contains_key(k) {
                    patch.insert(k.clone(), Value::Null);
                }
            }
            (!patch.is_empty()).then_some(Value::Object(patch))
        }
        (o, n) if o == n => None,
        (_, Value::Object(_)) => Some(strip_nulls(new)),
        (_, n) => Some(n.clone()),
    }
}

/// An object value as a patch adds it: its null members are absent.
fn strip_nulls(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), strip_nulls(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// serde's `skip_serializing_if` for a count of zero.
fn is_zero(n: &u32) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use serde_json::json;

    #[test]
    fn a_parallel_batch_is_listed_in_its_own_order_whichever_finished_first() {
        let mut h = Host {
            batch: vec!["t8".into(), "t9".into()],
            ..Host::default()
        };
        h.finished("t7");
        h.finished("t9");
        h.finished("t8");
        assert_eq!(h.finished_order, ["t7", "t8", "t9"]);
        // A later batch keeps the earlier order and sorts only its own.
        h.batch = vec!["t4".into(), "t5".into()];
        h.finished("t5");
        h.finished("t4");
        assert_eq!(h.finished_order, ["t7", "t8", "t9", "t4", "t5"]);
    }

    #[test]
    fn a_diff_applied_as_a_merge_patch_gives_the_new_value_minus_its_nulls() {
        let old = json!({"a": 1, "b": {"c": [1, 2], "d": "x"}, "gone": true, "n": null});
        let new =
            json!({"a": 1, "b": {"c": [1, 2, 3], "e": {"f": null, "g": 2}}, "n": 5, "z": null});
        let patch = diff(&old, &new).expect("a change");
        let mut applied = old.clone();
        merge_patch(&mut applied, &patch);
        assert_eq!(
            applied,
            json!({"a": 1, "b": {"c": [1, 2, 3], "e": {"g": 2}}, "n": 5})
        );
        assert_eq!(diff(&new, &new), None);
    }

    #[test]
    fn the_view_round_trips_through_the_artifact() {
        let mut artifact = json!({"workflow_uuid": "wf-x"});
        let mut v = WorkflowState::read(&artifact).unwrap();
        assert_eq!(v.state, RunState::Running);
        v.state = RunState::Checkpoint;
        v.spent.input_tokens = 7;
        v.host.batch = vec!["t1".into()];
        v.write(&mut artifact);
        let back = WorkflowState::read(&artifact).unwrap();
        assert_eq!(back, v);
        assert_eq!(artifact["run_state"], "checkpoint");
    }

    /// An unknown value is an error naming its field, never the default: a task list that does
    /// not decode must not read as an empty graph.
    #[test]
    fn a_key_that_does_not_decode_is_an_error_naming_the_field() {
        let artifact = json!({
            "run_state": "running",
            "tasks": [{"id": "t1", "status": "pending"}, {"id": "t2", "status": "bogus"}],
        });
        let e = WorkflowState::read(&artifact).unwrap_err();
        assert_eq!(e.field, "tasks[1].status");
        assert!(e.message.contains("bogus"), "{e}");
        assert_eq!(
            e.segments,
            [
                Segment::Key("tasks".into()),
                Segment::Index(1),
                Segment::Key("status".into())
            ]
        );
        assert!(holds(&artifact, &e.segments));
        let e = WorkflowState::read(&json!({"run_state": "paused"})).unwrap_err();
        assert_eq!(e.field, "run_state");
        let e = WorkflowState::read(&json!({"run": {"next": "fly_away"}})).unwrap_err();
        assert_eq!(e.field, "run.next");
        for offer in [
            WorktreeOffer::Accepted,
            WorktreeOffer::Declined,
            WorktreeOffer::NotAsked,
            WorktreeOffer::Skipped("trivial scope".into()),
            WorktreeOffer::Failed,
        ] {
            let text = serde_json::to_value(&offer).unwrap();
            assert_eq!(text, json!(offer.text()));
            assert_eq!(
                serde_json::from_value::<WorktreeOffer>(text).unwrap(),
                offer
            );
        }
        let e = WorkflowState::read(&json!({"run": {"worktree_offer": "maybe"}})).unwrap_err();
        assert_eq!(e.field, "run.worktree_offer");
        // cc10x's typed fields are checked too.
        let e = WorkflowState::check(&json!({"remediation_history": [{"event": 7}]})).unwrap_err();
        assert_eq!(e.field, "remediation_history[0].event");
        // Absent and null keys are the defaults.
        let v = WorkflowState::read(&json!({"checkpoint": null})).unwrap();
        assert_eq!(v, WorkflowState::default());
    }
}
