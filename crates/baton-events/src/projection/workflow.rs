//! A workflow's document: its dispatches, checkpoint and spending, folded from its typed events
//! ([`WorkflowEvent`]).

use baton_workflow::store::{EventBody, WorkflowEvent};
use serde::Serialize;

use super::words::{State, Step};

/// One dispatch of a workflow: a node of its task graph.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Node {
    pub task_id: String,
    pub agent: String,
    pub phase: String,
    pub state: Step,
    pub verdict: Option<String>,
    /// Why a dispatch that failed did, in words (its answer held no contract that validates).
    pub reason: Option<String>,
    /// The remediation cycle, from the attempt (1 is the first run).
    pub attempt: u32,
}

/// A checkpoint waiting for an answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Checkpoint {
    pub gate: String,
    pub question: String,
    pub options: Vec<String>,
    pub recommended: Option<String>,
}

/// A workflow's view: its dispatches in order, and its checkpoint.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Workflow {
    /// The workflow's type (`BUILD`, `DEBUG` …).
    pub kind: String,
    /// What the user asked for, in their words (the record's `user_request`).
    pub request: Option<String>,
    /// The runner's own state (`running`, `checkpoint`, `completed`, `failed`, `stopped`): a
    /// `failed` workflow takes the user's guidance, a `stopped` one is over.
    pub run_state: Option<String>,
    pub phase: String,
    pub nodes: Vec<Node>,
    pub checkpoint: Option<Checkpoint>,
    /// What it waits for while it needs the user: the checkpoint's gate, `budget` or `stopped`.
    pub waits: Option<String>,
    /// Why it ended or stopped.
    pub note: Option<String>,
    /// What it spent so far and its budget, from the record's changes (`spent`, `run.budget_*`).
    pub spent: Spent,
}

/// What of a value a reader reads: all of it, or only some keys of a map (each with what of it).
enum Keys {
    All,
    Only(&'static [(&'static str, Keys)]),
}

/// What of a workflow record's change (a JSON merge patch) the projection reads:
/// [`Spent::apply`] and [`Workflow::apply`] read nothing else, and the test
/// `a_projected_parse_gives_the_projection_of_the_whole_parse` holds them to it.
const READ: Keys = Keys::Only(&[
    ("spent", Keys::All),
    (
        "run",
        Keys::Only(&[("budget_usd", Keys::All), ("budget_tokens", Keys::All)]),
    ),
    ("user_request", Keys::All),
    ("run_state", Keys::All),
    ("checkpoint", Keys::All),
]);

/// A workflow record's change as the projection reads it: the keys it reads, the rest skipped
/// while parsing (most of a log's bytes are the task graph and the agents' answers, which no
/// view of the projection draws).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProjectedChange(pub serde_json::Value);

impl From<ProjectedChange> for serde_json::Value {
    fn from(c: ProjectedChange) -> serde_json::Value {
        c.0
    }
}

impl<'de> serde::Deserialize<'de> for ProjectedChange {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde::de::DeserializeSeed::deserialize(&READ, d).map(ProjectedChange)
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for &'static Keys {
    type Value = serde_json::Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        match self {
            Keys::All => serde::Deserialize::deserialize(d),
            Keys::Only(keys) => d.deserialize_any(Pick(keys)),
        }
    }
}

/// A map's key, as the entry of the list it is (`None`: a key not kept), read without a copy.
struct Key(&'static [(&'static str, Keys)]);

impl<'de> serde::de::DeserializeSeed<'de> for Key {
    type Value = Option<&'static (&'static str, Keys)>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Key {
    type Value = Option<&'static (&'static str, Keys)>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E>(self, key: &str) -> Result<Self::Value, E> {
        Ok(self.0.iter().find(|(k, _)| *k == key))
    }
}

/// Reads a map keeping `keys` (each read as its [`Keys`] say) and skipping the others; a value
/// that is not a map holds none of them (`null`), as `value["key"]` would find none.
struct Pick(&'static [(&'static str, Keys)]);

impl<'de> serde::de::Visitor<'de> for Pick {
    type Value = serde_json::Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut kept = serde_json::Map::new();
        while let Some(found) = map.next_key_seed(Key(self.0))? {
            match found {
                Some((k, keys)) => {
                    kept.insert((*k).to_string(), map.next_value_seed(keys)?);
                }
                None => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(serde_json::Value::Object(kept))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(serde_json::Value::Null)
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(serde_json::Value::Null)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(serde_json::Value::Null)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(serde_json::Value::Null)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(serde_json::Value::Null)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(serde_json::Value::Null)
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(serde_json::Value::Null)
    }
}

/// A workflow's spending and budget.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Spent {
    pub cost_usd: f64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub budget_usd: Option<f64>,
    pub budget_tokens: Option<u64>,
}

impl Spent {
    /// Folds one change of the workflow record (a JSON merge patch: only what changed) in.
    fn apply(&mut self, delta: &serde_json::Value) {
        let spent = &delta["spent"];
        if let Some(c) = spent["cost_usd"].as_f64() {
            self.cost_usd = c;
        }
        if let Some(n) = spent["input_tokens"].as_u64() {
            self.input_tokens = n;
        }
        if let Some(n) = spent["output_tokens"].as_u64() {
            self.output_tokens = n;
        }
        let run = &delta["run"];
        if let Some(b) = run["budget_usd"].as_f64() {
            self.budget_usd = Some(b);
        }
        if let Some(b) = run["budget_tokens"].as_u64() {
            self.budget_tokens = Some(b);
        }
    }

    pub fn tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    /// The share of the budget spent (the larger of the two budgets' shares), when there is one.
    pub fn share(&self) -> Option<f64> {
        let usd = self
            .budget_usd
            .filter(|b| *b > 0.0)
            .map(|b| self.cost_usd / b);
        let tok = self
            .budget_tokens
            .filter(|b| *b > 0)
            .map(|b| self.tokens() as f64 / b as f64);
        match (usd, tok) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }
}

impl Workflow {
    /// Folds one event in; the state its row takes when the event sets one.
    pub(super) fn apply(&mut self, ev: &WorkflowEvent) -> Option<State> {
        if let Some(d) = &ev.delta {
            self.spent.apply(d);
            if let Some(r) = d["user_request"].as_str() {
                self.request = Some(r.to_string());
            }
            if let Some(r) = d["run_state"].as_str() {
                self.run_state = Some(r.to_string());
            }
        }
        let mut state = None;
        match &ev.body {
            EventBody::WorkflowStarted(s) => {
                self.kind = s.workflow_type.clone().unwrap_or_default();
                state = Some(State::Running);
            }
            EventBody::AgentStarted(a) => {
                let task_id = a.task_id.clone().unwrap_or_default();
                let attempt = a.details.as_ref().and_then(|d| d.attempt).unwrap_or(1);
                self.phase = a.phase.clone().unwrap_or_default();
                match self.nodes.iter_mut().find(|n| n.task_id == task_id) {
                    Some(n) => {
                        n.state = Step::Running;
                        n.attempt = attempt;
                    }
                    None => self.nodes.push(Node {
                        task_id,
                        agent: a.agent.clone().unwrap_or_default(),
                        phase: a.phase.clone().unwrap_or_default(),
                        state: Step::Running,
                        verdict: None,
                        reason: None,
                        attempt,
                    }),
                }
                state = Some(State::Running);
            }
            EventBody::AgentCompleted(a) => {
                let task_id = a.task_id.clone().unwrap_or_default();
                if let Some(n) = self.nodes.iter_mut().find(|n| n.task_id == task_id) {
                    let failed = a.verdict.as_deref().is_some_and(failed_verdict);
                    n.state = if failed { Step::Failed } else { Step::Done };
                    n.verdict.clone_from(&a.verdict);
                }
            }
            // The runner's reading of the answer: the reason an answer without a contract failed.
            EventBody::ContractParsed(c) => {
                let task_id = c.task_id.clone().unwrap_or_default();
                if let Some(n) = self.nodes.iter_mut().find(|n| n.task_id == task_id) {
                    if c.decision.as_deref().is_some_and(failed_verdict) {
                        n.state = Step::Failed;
                        n.verdict.clone_from(&c.decision);
                        n.reason.clone_from(&c.reason);
                    }
                }
            }
            EventBody::CheckpointRequested(c) => {
                let d = c.details.clone().unwrap_or_default();
                // What the event leaves out, the record's checkpoint says (the runner writes both).
                let rec = ev.delta.as_ref().map(|d| &d["checkpoint"]);
                let rec_str = |k: &str| rec.and_then(|r| r[k].as_str()).map(str::to_string);
                let gate = c
                    .gate
                    .clone()
                    .or_else(|| rec_str("gate"))
                    .unwrap_or_default();
                let options = match d.options.is_empty() {
                    false => d.options,
                    true => rec
                        .and_then(|r| r["options"].as_array())
                        .map(|a| {
                            a.iter()
                                .filter_map(|o| o.as_str().map(str::to_string))
                                .collect()
                        })
                        .unwrap_or_default(),
                };
                self.waits = Some(gate.clone());
                self.checkpoint = Some(Checkpoint {
                    gate,
                    question: c
                        .question
                        .clone()
                        .or_else(|| rec_str("question"))
                        .unwrap_or_default(),
                    options,
                    recommended: d.recommended.or_else(|| rec_str("recommended")),
                });
                state = Some(State::NeedsInput);
            }
            EventBody::CheckpointAnswered(_) => {
                self.checkpoint = None;
                self.waits = None;
                state = Some(State::Running);
            }
            EventBody::WorkflowCompleted(n) => {
                self.note = n.reason.clone();
                self.waits = None;
                state = Some(State::Done);
            }
            EventBody::WorkflowFailed(n) => {
                self.note = n.reason.clone();
                self.waits = None;
                state = Some(State::Failed);
            }
            EventBody::BudgetStopped(n) | EventBody::WorkflowStopped(n) => {
                self.note = n.reason.clone();
                let budget = matches!(ev.body, EventBody::BudgetStopped(_));
                self.waits = Some(if budget { "budget" } else { "stopped" }.into());
                state = Some(State::NeedsInput);
            }
            EventBody::Decided(d) => {
                if let Some(p) = &d.phase {
                    self.phase.clone_from(p);
                }
            }
            _ => {}
        }
        state
    }

    /// The detail of the workflow's row after an event that set `state` (or none).
    pub(super) fn row_detail(&self, state: Option<State>) -> String {
        match (&self.checkpoint, &self.note) {
            (Some(c), _) => format!("{}: {}", c.gate, baton_text::sanitize_line(&c.question)),
            (None, Some(n)) if state.is_some_and(|s| s != State::Running) => {
                baton_text::sanitize_line(n).into_owned()
            }
            _ => {
                let cycles = self.nodes.iter().map(|n| n.attempt).max().unwrap_or(1);
                let cycle = if cycles > 1 {
                    format!(" ↻ {}/3", cycles - 1)
                } else {
                    String::new()
                };
                format!("{} · {}{cycle}", self.kind, self.phase)
            }
        }
    }
}

/// Whether an agent's verdict means its dispatch failed: a failing or blocking contract, an
/// error, or an answer with no contract at all (prose never advances a workflow).
pub fn failed_verdict(v: &str) -> bool {
    matches!(
        v.to_ascii_lowercase().as_str(),
        "fail" | "failed" | "blocked" | "changes_requested" | "error" | "no contract"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_workflow::event::{AgentCompleted, AgentStarted, Fields};

    fn event(seq: u64, body: EventBody) -> WorkflowEvent {
        WorkflowEvent {
            seq,
            ts: "2026-12-06T10:00:00Z".into(),
            wf: "wf-1".into(),
            body,
            delta: None,
        }
    }

    /// [22/24] A dispatch whose answer held no contract ran to its end, but it failed: it is
    /// drawn failed, with the runner's reason in words, not as a completed step.
    #[test]
    fn a_dispatch_without_a_contract_is_failed_with_its_reason() {
        let mut wf = Workflow::default();
        let t1 = Some("t1".to_string());
        wf.apply(&event(
            1,
            EventBody::AgentStarted(AgentStarted {
                phase: Some("investigate".into()),
                task_id: t1.clone(),
                agent: Some("bug-investigator".into()),
                reason: None,
                details: None,
            }),
        ));
        wf.apply(&event(
            2,
            EventBody::AgentCompleted(AgentCompleted {
                phase: Some("investigate".into()),
                task_id: t1.clone(),
                agent: Some("bug-investigator".into()),
                verdict: Some("no contract".into()),
                reason: None,
                duration_seconds: Some(1.0),
                details: None,
            }),
        ));
        assert_eq!(wf.nodes[0].state, Step::Failed);
        wf.apply(&event(
            3,
            EventBody::ContractParsed(Fields {
                task_id: t1,
                decision: Some("no contract".into()),
                reason: Some("bug-investigator: no contract, only prose (\"looks fine\")".into()),
                ..Fields::default()
            }),
        ));
        let n = &wf.nodes[0];
        assert_eq!(n.state, Step::Failed);
        assert_eq!(
            n.reason.as_deref(),
            Some("bug-investigator: no contract, only prose (\"looks fine\")")
        );
        assert!(failed_verdict("Blocked") && !failed_verdict("pass"));
    }
}
