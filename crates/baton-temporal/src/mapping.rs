//! What crosses Temporal's boundary, and the workflow's decisions over it. No I/O.

use std::time::Duration;

use baton_protocol::config::EngineConfig;
use baton_workflow::run::state::Checkpoint;
use baton_workflow::run::Outcome;
use serde::{Deserialize, Serialize};

impl StepResult {
    /// Events in the record after the step, wherever the record is.
    pub fn event_count(&self) -> usize {
        if self.record_at.is_some() {
            self.events
        } else {
            events_in(&self.log)
        }
    }
}

/// `[engine]` resolved: every default applied, the API key read from its variable.
#[derive(Debug, Clone, PartialEq)]
pub struct Engine {
    pub address: String,
    pub namespace: String,
    pub task_queue: String,
    pub remote: Option<String>,
    pub api_key: Option<String>,
    pub heartbeat_timeout: Duration,
    pub checkpoint_timeout: Duration,
    /// `engine.search_attributes`: workflows keep their state in [`SEARCH_ATTRIBUTES`].
    pub search_attributes: bool,
}

/// The search attributes a workflow keeps when `engine.search_attributes` is on, with the type
/// each is registered under: its state, the gate it waits at (`none` when it waits at none), the
/// steps it ran, and its kind (set when it starts).
pub const SEARCH_ATTRIBUTES: [(&str, &str); 4] = [
    ("BatonState", "Keyword"),
    ("BatonGate", "Keyword"),
    ("BatonSteps", "Int"),
    ("BatonKind", "Keyword"),
];

impl Engine {
    /// The settings of `[engine]`; `task_queue` overrides the config's (a worker node's flag).
    pub fn from_config(c: &EngineConfig, task_queue: Option<&str>) -> Result<Engine, String> {
        let address = c
            .address
            .clone()
            .unwrap_or_else(|| "http://127.0.0.1:7233".into());
        if !(address.starts_with("http://") || address.starts_with("https://")) {
            return Err(format!(
                "`engine.address` = `{address}`: give the Temporal frontend as http://HOST:PORT (or https:// for TLS), e.g. \"http://127.0.0.1:7233\""
            ));
        }
        let api_key = match &c.api_key_env {
            Some(var) => match std::env::var(var) {
                Ok(v) if !v.trim().is_empty() => Some(v.trim().to_string()),
                _ => {
                    return Err(format!(
                        "`engine.api_key_env` names {var}, which is not set: export it with the namespace's API key, or remove the key"
                    ))
                }
            },
            None => None,
        };
        Ok(Engine {
            address,
            namespace: c.namespace.clone().unwrap_or_else(|| "default".into()),
            task_queue: task_queue
                .map(str::to_string)
                .or_else(|| c.task_queue.clone())
                .unwrap_or_else(|| "baton".into()),
            remote: c.remote.clone(),
            api_key,
            heartbeat_timeout: c.heartbeat_timeout.map_or(Duration::from_secs(30), |d| d.0),
            checkpoint_timeout: c
                .checkpoint_timeout
                .map_or(Duration::from_secs(7 * 24 * 3600), |d| d.0),
            search_attributes: c.search_attributes.unwrap_or(false),
        })
    }

    /// The shared remote, which starting a workflow and every worker node need.
    pub fn remote(&self) -> Result<&str, String> {
        self.remote.as_deref().ok_or_else(|| {
            "`engine.remote` is not set: give the shared git repository every worker node reaches (a URL, or a path on a shared disk), e.g. remote = \"git@git.example.com:team/repo.git\"".to_string()
        })
    }
}

/// What starts a baton workflow on Temporal. Its Temporal workflow id is `id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkflowInput {
    pub id: String,
    pub request: String,
    /// The workflow kind as `baton run --workflow` takes it (`BUILD`, `DEBUG`, …).
    pub kind: String,
    #[serde(default)]
    pub trivial: bool,
    #[serde(default)]
    pub budget_usd: Option<f64>,
    #[serde(default)]
    pub budget_tokens: Option<u64>,
    pub remote: String,
    /// The commit the workflow starts from, already on the remote as [`Self::branch`].
    pub base: String,
    /// `refs/heads/baton/<id>`: the workflow's branch on the remote, moved by every step.
    pub branch: String,
    pub heartbeat_timeout_ms: u64,
    pub checkpoint_timeout_ms: u64,
    /// Set when this run goes on from an earlier run of the same id that failed: `baton resume
    /// --engine temporal ID --answer TEXT`.
    #[serde(default)]
    pub resumed: Option<Resumed>,
    /// `engine.search_attributes` when it started: the workflow keeps its state in
    /// [`SEARCH_ATTRIBUTES`] (absent: a workflow that keeps none).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub search_attributes: bool,
    /// The plan a planned BUILD builds (`baton run --plan FILE`), as the starter trusted it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanPin>,
}

/// A plan file committed at the workflow's starting commit: its path from the project's root
/// and the SHA-256 of the content the starter approved. The first step's node builds it only
/// when its checkout holds exactly that content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanPin {
    pub path: String,
    pub sha256: String,
}

/// Where a failed run left its workflow, and the guidance its stopped agents run again with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resumed {
    /// The record the failed run ended with (empty when it is at `record_at`).
    pub log: String,
    /// The ref on the remote that holds the record the failed run ended with.
    #[serde(default)]
    pub record_at: Option<String>,
    /// The branch's head it ended at.
    pub head: String,
    /// The steps it ran: this run's are numbered on from there.
    pub steps: u32,
    pub answer: String,
}

/// One step for a worker node: continue the record `log` from commit `head`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepInput {
    pub id: String,
    /// 1 for the first step.
    pub step: u32,
    pub remote: String,
    pub branch: String,
    pub head: String,
    /// The commit the workflow started from, as its starter pushed it: a trusting node trusts
    /// the project's widening settings and role files as they are there, never as a step left
    /// them. Absent (a step of an older baton): the node trusts nothing.
    #[serde(default)]
    pub base: Option<String>,
    /// The workflow's event log so far (JSON lines); empty before the first step, and when the
    /// record is at `record_at`.
    pub log: String,
    /// The ref on the remote whose result holds the record so far (the step before's
    /// `node::result_ref`): the record travels by reference, not in the history.
    #[serde(default)]
    pub record_at: Option<String>,
    /// The answer to the checkpoint the last step stopped at.
    #[serde(default)]
    pub answer: Option<String>,
    /// What the first step starts.
    #[serde(default)]
    pub start: Option<Start>,
}

/// What the first step's `baton run` is given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Start {
    pub request: String,
    pub kind: String,
    pub trivial: bool,
    pub budget_usd: Option<f64>,
    pub budget_tokens: Option<u64>,
    /// `--plan`: the plan the first step builds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanPin>,
}

/// Where a step left the workflow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum StepOutcome {
    /// More steps to go.
    Running,
    /// Waits for an answer (an update, `baton resume --answer`).
    Checkpoint {
        checkpoint: Checkpoint,
    },
    Completed {
        brief: String,
    },
    Failed {
        brief: String,
    },
    Stopped {
        brief: String,
    },
}

impl StepOutcome {
    pub fn state(&self) -> WfState {
        match self {
            StepOutcome::Running => WfState::Running,
            StepOutcome::Checkpoint { .. } => WfState::Checkpoint,
            StepOutcome::Completed { .. } => WfState::Completed,
            StepOutcome::Failed { .. } => WfState::Failed,
            StepOutcome::Stopped { .. } => WfState::Stopped,
        }
    }
}

/// What a step returns: the record and head after it, where it left the workflow, and who ran
/// it. A contract failure or a failed workflow is an outcome here, never an activity failure:
/// activity retries are for infrastructure (a node that died, a push that failed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepResult {
    /// The record after the step; empty when it is at `record_at`.
    pub log: String,
    /// The ref on the remote that holds the whole result, the record with it.
    #[serde(default)]
    pub record_at: Option<String>,
    /// Events in the record after the step.
    #[serde(default)]
    pub events: usize,
    pub head: String,
    pub outcome: StepOutcome,
    pub node: String,
    /// Temporal's attempt number of the activity that returned it (1 first).
    pub attempt: u32,
    /// The last heartbeat of the attempt before this one, when this one took over.
    #[serde(default)]
    pub took_over: Option<Progress>,
}

/// A step's heartbeat details: how far it got (an attempt that takes over is given the last
/// one; a finished result is found on the remote, see `node::result_ref`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    pub node: String,
    pub attempt: u32,
    /// Events in the record so far.
    pub events: usize,
    /// The child's process id while it runs.
    #[serde(default)]
    pub pid: Option<u32>,
}

baton_protocol::closed_set! {
    /// Where a workflow on Temporal stands (its status query).
    #[derive(Default)]
    pub enum WfState ("workflow state") {
        /// Started; its first step has not returned.
        #[default]
        Starting = "starting",
        Running = "running",
        /// An answer arrived; the next step takes it.
        Answered = "answered",
        Checkpoint = "checkpoint",
        Completed = "completed",
        Failed = "failed",
        Stopped = "stopped",
    }
}

impl WfState {
    /// Still going: a client following it keeps following.
    pub fn going(self) -> bool {
        matches!(
            self,
            WfState::Starting | WfState::Running | WfState::Answered
        )
    }
}

/// The workflow as `baton status --engine temporal` shows it (a query) and its result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Status {
    pub id: String,
    pub request: String,
    pub state: WfState,
    pub steps: u32,
    pub head: String,
    pub branch: String,
    /// The node that ran each step, in order, with its attempt (`node#2` for a second attempt).
    pub nodes: Vec<String>,
    #[serde(default)]
    pub checkpoint: Option<Checkpoint>,
    #[serde(default)]
    pub brief: Option<String>,
    /// Events in the record.
    pub events: usize,
    /// Heartbeats of attempts another node took over from.
    #[serde(default)]
    pub takeovers: Vec<Progress>,
    /// The ref on the remote that holds the record (`baton log` reads it there).
    #[serde(default)]
    pub record_at: Option<String>,
    /// The remote the workflow's work and record travel through (its `engine.remote` when it
    /// started).
    #[serde(default)]
    pub remote: String,
    /// How many steps ran before `nodes[0]`: 0 in the whole status (a query, the result); the
    /// workflow's memo lists only the last node ([`Status::tail`]).
    #[serde(default)]
    pub nodes_from: usize,
    /// The workflow keeps its state in [`SEARCH_ATTRIBUTES`] too.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub search_attributes: bool,
}

impl Status {
    /// The status as the workflow's memo keeps it (read without a worker; see `sdk::status`):
    /// what it is now, with the last node only and no takeovers, so that it stays the same
    /// small size at every step however long the workflow runs.
    pub fn tail(&self) -> Status {
        let from = self.nodes_from + self.nodes.len().saturating_sub(1);
        Status {
            nodes: self.nodes.last().cloned().into_iter().collect(),
            nodes_from: from,
            takeovers: Vec::new(),
            ..self.clone()
        }
    }

    /// Each node with the 1-based number of the step it ran.
    pub fn numbered_nodes(&self) -> impl Iterator<Item = (usize, &str)> {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (self.nodes_from + i + 1, n.as_str()))
    }
}

/// What the workflow does after a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    Step,
    WaitForAnswer,
    End,
}

pub fn after(outcome: &StepOutcome) -> Next {
    match outcome {
        StepOutcome::Running => Next::Step,
        StepOutcome::Checkpoint { .. } => Next::WaitForAnswer,
        StepOutcome::Completed { .. }
        | StepOutcome::Failed { .. }
        | StepOutcome::Stopped { .. } => Next::End,
    }
}

/// Whether the checkpoint the workflow waits at takes `answer` (the update's validator): the
/// runner's own reading of an answer, so Temporal rejects what `baton resume` would refuse.
pub fn check_answer(waiting: Option<&Checkpoint>, answer: &str) -> Result<(), String> {
    let Some(cp) = waiting else {
        return Err("the workflow does not wait at a checkpoint: nothing to answer".into());
    };
    baton_workflow::run::gate::read_answer(cp, answer).map(|_| ())
}

/// Events in a record (its lines).
pub fn events_in(log: &str) -> usize {
    log.lines().filter(|l| !l.trim().is_empty()).count()
}

/// The step's outcome from what `baton run/resume --json` printed (its last JSON line).
/// The last line that is a JSON object with a `type` decides: a workflow outcome (the runner's
/// own type, read back as it wrote it) or its error document.
pub fn outcome_from_output(stdout: &str) -> Result<StepOutcome, String> {
    #[derive(Deserialize)]
    struct Refused {
        #[serde(default)]
        message: String,
    }
    let (kind, line) = stdout
        .lines()
        .rev()
        .map(str::trim)
        .find_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).ok()?;
            Some((v.get("type")?.as_str()?.to_string(), v))
        })
        .ok_or_else(|| "the step printed no outcome".to_string())?;
    if kind == "workflow.error" {
        let r: Refused = serde_json::from_value(line).map_err(|e| e.to_string())?;
        return Err(format!("the step's runner refused: {}", r.message));
    }
    let outcome: Outcome = serde_json::from_value(line)
        .map_err(|e| format!("an outcome the engine does not read ({kind}): {e}"))?;
    Ok(StepOutcome::from(outcome))
}

/// The most bytes of a brief (or a checkpoint's question) a step's outcome carries into the
/// history, the memo and the workflow's result: a brief lists every task, so a long planned
/// BUILD's would make each memo update larger than the last. The start (what happened) and the
/// end (proof, spend) are kept; the whole brief stays in the record (`baton log`).
pub const BRIEF_MOST: usize = 2000;

/// `text` within [`BRIEF_MOST`] bytes, its start and end kept; a cut one ends by saying where
/// the whole text is (workflow `id`'s record).
fn bounded(text: String, id: &str) -> String {
    if text.len() <= BRIEF_MOST {
        return text;
    }
    let pointer = format!("\n(the whole text: `baton log --engine temporal {id}`)");
    let room = BRIEF_MOST.saturating_sub(pointer.len());
    let cut = baton_text::truncate(&text, room, baton_text::Keep::Ends { head_percent: 40 });
    format!("{cut}{pointer}")
}

impl From<Outcome> for StepOutcome {
    fn from(o: Outcome) -> StepOutcome {
        match o {
            Outcome::Interrupted { .. } => StepOutcome::Running,
            Outcome::Completed { brief, id } => StepOutcome::Completed {
                brief: bounded(brief, &id),
            },
            Outcome::Failed { brief, id } => StepOutcome::Failed {
                brief: bounded(brief, &id),
            },
            Outcome::Stopped { brief, id } => StepOutcome::Stopped {
                brief: bounded(brief, &id),
            },
            Outcome::Checkpoint { mut checkpoint, id } => {
                checkpoint.brief = bounded(checkpoint.brief, &id);
                checkpoint.question = bounded(checkpoint.question, &id);
                StepOutcome::Checkpoint { checkpoint }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_workflow::run::state::Gate;

    #[test]
    fn a_long_brief_keeps_its_start_and_its_end_within_the_bound() {
        let tasks: String = (1..=300)
            .map(|i| format!("  t{i} build-implement done component-builder pass\n"))
            .collect();
        let brief = format!(
            "BUILD workflow w completed\ntasks:\n{tasks}proof: passed\nspent: 900 dispatches\n"
        );
        let line = serde_json::json!({"type": "workflow.completed", "id": "w", "brief": brief});
        let StepOutcome::Completed { brief: kept } =
            outcome_from_output(&line.to_string()).unwrap()
        else {
            panic!("not completed")
        };
        assert!(kept.len() <= BRIEF_MOST, "{}", kept.len());
        assert!(
            kept.starts_with("BUILD workflow w completed\ntasks:\n"),
            "{kept}"
        );
        assert!(
            kept.ends_with(
                "proof: passed\nspent: 900 dispatches\n\n(the whole text: `baton log --engine temporal w`)"
            ),
            "{kept}"
        );
        // A checkpoint's question and brief are bounded alike.
        let line = serde_json::json!({"type": "workflow.checkpoint", "id": "w", "checkpoint": {
            "gate": "final_review", "question": brief, "options": ["run"], "brief": brief}});
        let StepOutcome::Checkpoint { checkpoint } =
            outcome_from_output(&line.to_string()).unwrap()
        else {
            panic!("not a checkpoint")
        };
        assert!(checkpoint.question.len() <= BRIEF_MOST);
        assert!(checkpoint.brief.len() <= BRIEF_MOST);
        assert!(checkpoint.question.ends_with("temporal w`)"));
        assert!(kept.contains("bytes omitted"), "{kept}");
        // A short one is carried whole.
        let line = r#"{"type":"workflow.failed","id":"w","brief":"b"}"#;
        assert_eq!(
            outcome_from_output(line).unwrap(),
            StepOutcome::Failed { brief: "b".into() }
        );
    }

    #[test]
    fn outcomes_map_to_what_the_workflow_does_next() {
        let out = |s: &str| outcome_from_output(s).unwrap();
        assert_eq!(
            after(&out(r#"{"type":"workflow.interrupted","id":"w"}"#)),
            Next::Step
        );
        assert_eq!(
            after(&out(
                "noise\n{\"type\":\"workflow.completed\",\"id\":\"w\",\"brief\":\"b\"}\n"
            )),
            Next::End
        );
        assert_eq!(
            after(&out(r#"{"type":"workflow.failed","id":"w","brief":"b"}"#)),
            Next::End
        );
        let cp =
            baton_workflow::run::gate::checkpoint(Gate::ScopeDecision, "2 issues", "brief".into());
        let line = serde_json::json!({"type": "workflow.checkpoint", "id": "w", "checkpoint": cp})
            .to_string();
        assert_eq!(after(&out(&line)), Next::WaitForAnswer);
        assert!(outcome_from_output("no json").is_err());
        assert!(
            outcome_from_output(r#"{"type":"workflow.error","message":"bad"}"#)
                .unwrap_err()
                .contains("bad")
        );
    }

    #[test]
    fn the_validator_takes_what_the_gate_takes() {
        let cp =
            baton_workflow::run::gate::checkpoint(Gate::ScopeDecision, "2 issues", String::new());
        assert!(check_answer(None, "anything").is_err());
        assert!(check_answer(Some(&cp), "").is_err());
        for option in &cp.options {
            assert_eq!(check_answer(Some(&cp), option), Ok(()), "{option}");
        }
    }

    #[test]
    fn engine_settings_name_the_key_at_fault() {
        let mut c = EngineConfig::default();
        let e = Engine::from_config(&c, None).unwrap();
        assert_eq!(e.address, "http://127.0.0.1:7233");
        assert_eq!(e.task_queue, "baton");
        assert!(e.remote().unwrap_err().contains("engine.remote"));
        c.address = Some("127.0.0.1:7233".into());
        assert!(Engine::from_config(&c, None)
            .unwrap_err()
            .contains("engine.address"));
        c.address = None;
        c.api_key_env = Some("BATON_TEST_SURELY_UNSET_KEY".into());
        assert!(Engine::from_config(&c, None)
            .unwrap_err()
            .contains("BATON_TEST_SURELY_UNSET_KEY"));
        c.api_key_env = None;
        assert_eq!(
            Engine::from_config(&c, Some("q2")).unwrap().task_queue,
            "q2"
        );
    }

    #[test]
    fn a_status_tail_keeps_the_last_node_numbered_as_its_step() {
        let beat = Progress {
            node: "a".into(),
            attempt: 1,
            events: 4,
            pid: None,
        };
        let s = Status {
            steps: 3,
            nodes: vec!["a".into(), "b".into(), "b#2".into()],
            takeovers: vec![beat],
            ..Status::default()
        };
        let t = s.tail();
        assert_eq!(t.numbered_nodes().collect::<Vec<_>>(), vec![(3, "b#2")]);
        assert!(t.takeovers.is_empty());
        assert_eq!(t.tail(), t, "a tail of a tail is itself");
        assert_eq!(
            s.numbered_nodes().map(|(n, _)| n).collect::<Vec<_>>(),
            vec![1, 2, 3]
        );
        assert_eq!(Status::default().tail().nodes_from, 0);
    }
}
