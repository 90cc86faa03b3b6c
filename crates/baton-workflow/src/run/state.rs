//! What the runner keeps in the artifact besides cc10x's own fields, and the merge patch that
//! records a change of the artifact as one event.
//!
//! Top-level keys (read by `baton status` and `baton log`): `run_state`, `checkpoint`, `spent`
//! and `tasks`. The runner's own bookkeeping sits under `run`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::artifact::Task;

/// Where a workflow stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    #[default]
    Running,
    /// Waiting for `baton resume --answer`.
    Checkpoint,
    Completed,
    /// Stopped by a failure (a malformed contract, a refused pass, a failed agent); `baton resume
    /// --answer` retries with the answer as guidance.
    Failed,
    /// Stopped by the user's answer; final.
    Stopped,
}

impl RunState {
    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Running => "running",
            RunState::Checkpoint => "checkpoint",
            RunState::Completed => "completed",
            RunState::Failed => "failed",
            RunState::Stopped => "stopped",
        }
    }
}

/// A question the workflow waits on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The gate (`scope_decision`, `circuit_breaker`, `budget`, `failure` …).
    pub gate: String,
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
    /// The verifier's passing scenario commands, run again by baton after it answered.
    pub host_checks: Vec<HostCheck>,
}

/// One scenario command of a verifier's PASS, run again by the host.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HostCheck {
    pub command: String,
    pub ok: bool,
    pub exit_code: Option<i32>,
    pub error: Option<String>,
}

/// The runner's bookkeeping, under `run` in the artifact.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Host {
    /// The engine's action being carried out (its snake_case name).
    pub next: Option<String>,
    pub next_reason: Option<String>,
    /// The tasks dispatched for `next`: once all are completed their outputs are decided.
    pub batch: Vec<String>,
    pub outputs: BTreeMap<String, TaskOutput>,
    /// Dispatches per phase: the attempt number of record and replay keys.
    pub dispatch_counts: BTreeMap<String, u32>,
    /// Remediation tasks whose re-checks were spawned: no longer shown to the engine.
    pub consumed_remfix: Vec<String>,
    /// Extra remediation cycles the user granted at the circuit breaker.
    pub breaker_allowance: u32,
    /// The user's last answer, handed to the next dispatch.
    pub guidance: Option<String>,
    pub answers: Vec<Value>,
    pub failure: Option<String>,
    pub brief: Option<String>,
    /// `git status --porcelain` + `git diff` digest when the workflow started.
    pub baseline: Option<String>,
    pub auto_proceed: bool,
    /// BUILD isolation: the worktree the agents work in (on branch `baton/<id>`), when taken.
    pub worktree: Option<baton_exec::worktree::ChildWorktree>,
    /// What became of the worktree offer: `accepted`, `declined` or `skipped: <why>`.
    pub worktree_offer: Option<String>,
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

/// The runner's typed view of the artifact keys it owns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct View {
    pub state: RunState,
    pub checkpoint: Option<Checkpoint>,
    pub spent: Spent,
    pub tasks: Vec<Task>,
    pub host: Host,
}

impl View {
    pub fn read(artifact: &Value) -> View {
        let get = |k: &str| artifact.get(k).cloned().unwrap_or(Value::Null);
        View {
            state: serde_json::from_value(get("run_state")).unwrap_or_default(),
            checkpoint: serde_json::from_value(get("checkpoint")).ok().flatten(),
            spent: serde_json::from_value(get("spent")).unwrap_or_default(),
            tasks: serde_json::from_value(get("tasks")).unwrap_or_default(),
            host: serde_json::from_value(get("run")).unwrap_or_default(),
        }
    }

    /// Writes the view back into `artifact`.
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

    pub fn task(&self, id: &str) -> Option<&Task> {
        self.tasks.iter().find(|t| t.id == id)
    }

    pub fn task_mut(&mut self, id: &str) -> Option<&mut Task> {
        self.tasks.iter_mut().find(|t| t.id == id)
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::merge_patch;
    use serde_json::json;

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
        let mut v = View::read(&artifact);
        assert_eq!(v.state, RunState::Running);
        v.state = RunState::Checkpoint;
        v.spent.input_tokens = 7;
        v.host.batch = vec!["t1".into()];
        v.write(&mut artifact);
        let back = View::read(&artifact);
        assert_eq!(back, v);
        assert_eq!(artifact["run_state"], "checkpoint");
    }
}
