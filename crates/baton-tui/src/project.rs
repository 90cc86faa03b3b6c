//! The project's work beside the session: the session's own delegations, the project's
//! background tasks, Flows and workflows, folded from the typed project event feed
//! (`baton_events`, the same stream `baton events` prints) and from the session's delegation
//! progress. One row each for the side panel; a Flow's units × steps and a workflow's task graph
//! for their views. Pure, like [`crate::view`]: time is passed in.

use std::collections::BTreeMap;

use baton_events::{Event, Payload};
use baton_exec::background::TaskEvent;
use baton_exec::delegate::{EntryEvent, EntryStatus};
use baton_exec::types::Activity;
use baton_exec::worker::{StopReason, WorkerEvent};
use baton_flow::FlowEvent;
use baton_workflow::store::EventBody;

/// What a row is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// A child of this session's `delegate_task`.
    Delegation,
    /// A child of a background task (`baton task --background`, `delegate_task` background).
    Task,
    Flow,
    Workflow,
    /// A managed worker (`baton worker`).
    Worker,
}

/// The panel's groups, in the order they are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum State {
    /// Waiting for the user: a checkpoint, a halted or failed Flow.
    NeedsInput,
    Running,
    Done,
    Failed,
}

impl State {
    pub fn heading(self) -> &'static str {
        match self {
            State::NeedsInput => "needs you",
            State::Running => "running",
            State::Done => "done",
            State::Failed => "failed",
        }
    }
}

/// One row of the side panel.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub kind: Kind,
    /// The task, Flow or workflow id (a delegation: the call's number in this session).
    pub id: String,
    /// The entry of a task or delegation.
    pub index: Option<usize>,
    pub name: String,
    pub role: String,
    pub state: State,
    /// The tool running now, and what it works on.
    pub tool: Option<String>,
    pub path: Option<String>,
    pub turns: u32,
    pub tokens: u64,
    pub cost_usd: Option<f64>,
    pub started_ms: Option<u64>,
    pub ended_ms: Option<u64>,
    /// A short line on where it is (a Flow's unit step, a workflow's phase or question).
    pub detail: String,
    /// A delegated child's own session, once it finished (its transcript can be read).
    pub session: Option<String>,
}

impl Row {
    fn new(kind: Kind, id: &str, index: Option<usize>, now_ms: u64) -> Row {
        Row {
            kind,
            id: id.to_string(),
            index,
            name: id.to_string(),
            role: String::new(),
            state: State::Running,
            tool: None,
            path: None,
            turns: 0,
            tokens: 0,
            cost_usd: None,
            started_ms: Some(now_ms),
            ended_ms: None,
            detail: String::new(),
            session: None,
        }
    }

    pub fn elapsed_ms(&self, now_ms: u64) -> u64 {
        match self.started_ms {
            Some(s) => self.ended_ms.unwrap_or(now_ms).saturating_sub(s),
            None => 0,
        }
    }
}

/// The steps of a Flow unit, in order.
pub const STEPS: [&str; 5] = ["implement", "rebase", "validate", "review", "merge"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Step {
    #[default]
    Pending,
    Running,
    Done,
    Failed,
    Skipped,
}

/// One unit of a Flow: its steps and where its branch is.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Unit {
    pub id: String,
    pub name: String,
    pub steps: [Step; 5],
    pub base: Option<String>,
    pub tip: Option<String>,
    /// Why it stopped, when it did (a blocked step's reason and evidence).
    pub note: Option<String>,
    /// The reviewer's output, when it reviewed.
    pub review: Option<String>,
    /// The implementer's last answer (its output, and its stderr when it failed).
    pub implementer: Option<String>,
    /// Each validation command of the last run: the command, whether it passed, its output.
    pub validation: Vec<(String, bool, String)>,
    /// The review packet the reviewer was given (a patch file of the Flow's record).
    pub packet: Option<std::path::PathBuf>,
}

/// A Flow's view: units × steps.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Flow {
    pub units: Vec<Unit>,
    pub main_branch: String,
    pub outcome: Option<String>,
}

/// One dispatch of a workflow: a node of its task graph.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub task_id: String,
    pub agent: String,
    pub phase: String,
    pub state: Step,
    pub verdict: Option<String>,
    /// The remediation cycle, from the attempt (1 is the first run).
    pub attempt: u32,
}

/// A checkpoint waiting for an answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    pub gate: String,
    pub question: String,
    pub options: Vec<String>,
    pub recommended: Option<String>,
}

/// A workflow's view: its dispatches in order, and its checkpoint.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Workflow {
    pub kind: String,
    pub phase: String,
    pub nodes: Vec<Node>,
    pub checkpoint: Option<Checkpoint>,
    pub note: Option<String>,
    /// What it spent so far and its budget, from the record's changes (`spent`, `run.budget_*`).
    pub spent: Spent,
}

/// A workflow's spending and budget.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
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

/// Everything the panel and the views show.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Project {
    pub rows: Vec<Row>,
    index: BTreeMap<(Kind, String, Option<usize>), usize>,
    pub flows: BTreeMap<String, Flow>,
    pub workflows: BTreeMap<String, Workflow>,
    /// This session's delegate calls so far.
    calls: usize,
    pub rev: u64,
}

impl Project {
    fn row(&mut self, kind: Kind, id: &str, index: Option<usize>, now_ms: u64) -> &mut Row {
        let key = (kind, id.to_string(), index);
        let i = match self.index.get(&key) {
            Some(i) => *i,
            None => {
                self.rows.push(Row::new(kind, id, index, now_ms));
                self.index.insert(key, self.rows.len() - 1);
                self.rows.len() - 1
            }
        };
        &mut self.rows[i]
    }

    /// The session's own delegation reports its entry `index` (a call starts at entry 0).
    pub fn delegation(&mut self, index: usize, event: &EntryEvent, now_ms: u64) {
        self.rev += 1;
        if index == 0 && matches!(event, EntryEvent::Queued { .. }) {
            self.calls += 1;
        }
        let id = self.calls.max(1).to_string();
        let row = self.row(Kind::Delegation, &id, Some(index), now_ms);
        entry(row, event, now_ms);
    }

    /// One event of the project feed.
    pub fn apply(&mut self, event: &Event, now_ms: u64) {
        self.rev += 1;
        let id = event.source.id.clone();
        match &event.event {
            Payload::Task(t) => self.task(&id, t, now_ms),
            Payload::Flow(r) => self.flow(&id, &r.event, now_ms),
            Payload::Workflow(w) => self.workflow(&id, w, now_ms),
            Payload::Worker(w) => self.worker(&id, w, now_ms),
            Payload::Session(_) | Payload::Routing(_) => {}
        }
    }

    fn task(&mut self, id: &str, ev: &TaskEvent, now_ms: u64) {
        match ev {
            TaskEvent::Created { request, .. } => {
                for (i, e) in request.entries.iter().enumerate() {
                    let row = self.row(Kind::Task, id, Some(i), now_ms);
                    row.name.clone_from(&e.name);
                    row.role.clone_from(&e.role);
                    row.detail = format!("task {id}");
                }
            }
            TaskEvent::Spawned { .. } | TaskEvent::Started { .. } => {}
            TaskEvent::Failed { message } => {
                let row = self.row(Kind::Task, id, Some(0), now_ms);
                row.state = State::Failed;
                row.ended_ms = Some(now_ms);
                row.detail = baton_text::sanitize_line(message).into_owned();
            }
            TaskEvent::Entry { index, event } => {
                let row = self.row(Kind::Task, id, Some(*index), now_ms);
                entry(row, event, now_ms);
            }
            TaskEvent::Completed { report } => {
                for e in &report.entries {
                    let row = self.row(Kind::Task, id, Some(e.index), now_ms);
                    row.state = finished(e.status);
                    row.tokens = e.usage.input_tokens + e.usage.output_tokens;
                    row.cost_usd = e.cost_usd.or(row.cost_usd);
                    if e.session_id.is_some() {
                        row.session.clone_from(&e.session_id);
                    }
                    row.tool = None;
                    row.path = None;
                    row.ended_ms.get_or_insert(now_ms);
                }
            }
        }
    }

    fn worker(&mut self, id: &str, ev: &WorkerEvent, now_ms: u64) {
        let first = |t: &str| {
            let line = t.lines().next().unwrap_or("");
            baton_text::sanitize_line(&baton_text::truncate(line, 60, baton_text::Keep::Head))
                .into_owned()
        };
        let row = self.row(Kind::Worker, id, None, now_ms);
        match ev {
            WorkerEvent::Created { spec } => {
                row.name = format!("worker {id}");
                row.role.clone_from(&spec.role);
                row.detail = "created".into();
            }
            WorkerEvent::Spawned { .. } => {
                row.state = State::Running;
                row.ended_ms = None;
                row.detail = "starting".into();
            }
            WorkerEvent::Started { session, .. } => {
                row.state = State::Running;
                row.ended_ms = None;
                row.session = Some(session.clone());
                row.detail = "idle".into();
            }
            WorkerEvent::Queued { .. } => {}
            WorkerEvent::Delivered { .. } => {
                row.detail = "working".into();
            }
            WorkerEvent::Answered { answer, usage, .. } => {
                row.turns += 1;
                row.tokens += usage.input_tokens + usage.output_tokens;
                if let Some(c) = usage.cost_usd {
                    row.cost_usd = Some(row.cost_usd.unwrap_or(0.0) + c);
                }
                row.detail = format!("idle · answered: {}", first(answer));
            }
            WorkerEvent::Lost { .. } => {
                row.detail = "a prompt was lost (`baton worker send NAME --retry`)".into();
            }
            WorkerEvent::Stopped { reason, .. } => {
                row.state = if *reason == StopReason::Failed {
                    State::Failed
                } else {
                    State::Done
                };
                row.ended_ms = Some(now_ms);
                row.detail = format!("stopped ({reason:?})").to_lowercase();
            }
            WorkerEvent::Retired { .. } => {
                row.state = State::Done;
                row.ended_ms.get_or_insert(now_ms);
                row.detail = "retired".into();
            }
        }
    }

    fn flow(&mut self, id: &str, ev: &FlowEvent, now_ms: u64) {
        let flow = self.flows.entry(id.to_string()).or_default();
        let (state, detail) = flow.apply(ev);
        let detail = flow.row_detail(state, detail);
        let row = self.row(Kind::Flow, id, None, now_ms);
        row.name = format!("flow {id}");
        row.role = "flow".into();
        if let Some(s) = state {
            row.state = s;
            if matches!(s, State::Done | State::Failed) {
                row.ended_ms = Some(now_ms);
            }
        }
        row.detail = detail;
    }

    fn workflow(&mut self, id: &str, ev: &baton_workflow::store::WorkflowEvent, now_ms: u64) {
        let body = &ev.body;
        let wf = self.workflows.entry(id.to_string()).or_default();
        if let Some(d) = &ev.delta {
            wf.spent.apply(d);
        }
        let mut state = None;
        match body {
            EventBody::WorkflowStarted(s) => {
                wf.kind = s.workflow_type.clone().unwrap_or_default();
                state = Some(State::Running);
            }
            EventBody::AgentStarted(a) => {
                let task_id = a.task_id.clone().unwrap_or_default();
                let attempt = a.details.as_ref().and_then(|d| d.attempt).unwrap_or(1);
                wf.phase = a.phase.clone().unwrap_or_default();
                match wf.nodes.iter_mut().find(|n| n.task_id == task_id) {
                    Some(n) => {
                        n.state = Step::Running;
                        n.attempt = attempt;
                    }
                    None => wf.nodes.push(Node {
                        task_id,
                        agent: a.agent.clone().unwrap_or_default(),
                        phase: a.phase.clone().unwrap_or_default(),
                        state: Step::Running,
                        verdict: None,
                        attempt,
                    }),
                }
                state = Some(State::Running);
            }
            EventBody::AgentCompleted(a) => {
                let task_id = a.task_id.clone().unwrap_or_default();
                if let Some(n) = wf.nodes.iter_mut().find(|n| n.task_id == task_id) {
                    let failed = a.verdict.as_deref().is_some_and(|v| {
                        matches!(
                            v.to_ascii_lowercase().as_str(),
                            "fail" | "failed" | "blocked" | "changes_requested" | "error"
                        )
                    });
                    n.state = if failed { Step::Failed } else { Step::Done };
                    n.verdict.clone_from(&a.verdict);
                }
            }
            EventBody::CheckpointRequested(c) => {
                let d = c.details.clone().unwrap_or_default();
                wf.checkpoint = Some(Checkpoint {
                    gate: c.gate.clone().unwrap_or_default(),
                    question: c.question.clone().unwrap_or_default(),
                    options: d.options,
                    recommended: d.recommended,
                });
                state = Some(State::NeedsInput);
            }
            EventBody::CheckpointAnswered(_) => {
                wf.checkpoint = None;
                state = Some(State::Running);
            }
            EventBody::WorkflowCompleted(n) => {
                wf.note = n.reason.clone();
                state = Some(State::Done);
            }
            EventBody::WorkflowFailed(n) => {
                wf.note = n.reason.clone();
                state = Some(State::Failed);
            }
            EventBody::BudgetStopped(n) | EventBody::WorkflowStopped(n) => {
                wf.note = n.reason.clone();
                state = Some(State::NeedsInput);
            }
            EventBody::Decided(d) => {
                if let Some(p) = &d.phase {
                    wf.phase.clone_from(p);
                }
            }
            _ => {}
        }
        let detail = match (&wf.checkpoint, &wf.note) {
            (Some(c), _) => format!("{}: {}", c.gate, baton_text::sanitize_line(&c.question)),
            (None, Some(n)) if state.is_some_and(|s| s != State::Running) => {
                baton_text::sanitize_line(n).into_owned()
            }
            _ => {
                let cycles = wf.nodes.iter().map(|n| n.attempt).max().unwrap_or(1);
                let cycle = if cycles > 1 {
                    format!(" ↻ {}/3", cycles - 1)
                } else {
                    String::new()
                };
                format!("{} · {}{cycle}", wf.kind, wf.phase)
            }
        };
        let kind = wf.kind.clone();
        let spent = wf.spent;
        let row = self.row(Kind::Workflow, id, None, now_ms);
        row.cost_usd = (spent.cost_usd > 0.0).then_some(spent.cost_usd);
        row.tokens = spent.tokens();
        row.name = format!("workflow {id}");
        row.role = kind.to_lowercase();
        row.detail = detail;
        if let Some(s) = state {
            row.state = s;
            row.ended_ms = matches!(s, State::Done | State::Failed).then_some(now_ms);
        }
    }

    /// The rows in the panel's order: by group, then as they came.
    pub fn grouped(&self) -> Vec<&Row> {
        let mut rows: Vec<&Row> = self.rows.iter().collect();
        rows.sort_by_key(|r| r.state);
        rows
    }
}

impl Flow {
    /// Folds one event of the Flow in; the state and the detail its row takes, when the event
    /// sets them.
    fn apply(&mut self, ev: &FlowEvent) -> (Option<State>, Option<String>) {
        let unit_index = ev
            .unit()
            .and_then(|u| self.units.iter().position(|x| x.id == u));
        let mut state = None;
        let mut detail = None;
        match ev {
            FlowEvent::Created {
                units, main_branch, ..
            } => {
                self.main_branch.clone_from(main_branch);
                self.units = units
                    .iter()
                    .map(|u| Unit {
                        id: u.id.clone(),
                        name: u.name.clone(),
                        ..Unit::default()
                    })
                    .collect();
                state = Some(State::Running);
                detail = Some(format!("{} units onto {main_branch}", units.len()));
            }
            FlowEvent::Blocked {
                unit,
                reason,
                evidence,
                ..
            } => {
                state = Some(State::NeedsInput);
                detail = Some(format!(
                    "{unit} blocked ({}): continue --guidance, or abandon",
                    reason.label()
                ));
                if let Some(u) = unit_index.and_then(|i| self.units.get_mut(i)) {
                    u.note = Some(format!(
                        "{}: {}",
                        reason.label(),
                        baton_text::sanitize_line(&evidence.replace('\n', " "))
                    ));
                    if let Some(s) = u.steps.iter_mut().find(|s| **s == Step::Running) {
                        *s = Step::Failed;
                    }
                }
            }
            FlowEvent::Halted { reason } => {
                state = Some(State::NeedsInput);
                detail = Some(format!("halted: {}", baton_text::sanitize_line(reason)));
            }
            FlowEvent::Completed { .. } => {
                state = Some(State::Done);
                self.outcome = Some("completed".into());
                detail = Some("completed".into());
            }
            FlowEvent::Failed { message, unit, .. } => {
                state = Some(State::NeedsInput);
                self.outcome = Some("failed".into());
                detail = Some(format!(
                    "failed{}: {}",
                    unit.as_deref()
                        .map(|u| format!(" at {u}"))
                        .unwrap_or_default(),
                    baton_text::sanitize_line(message)
                ));
            }
            FlowEvent::Abandoned { .. } => {
                state = Some(State::Done);
                self.outcome = Some("abandoned".into());
                detail = Some("abandoned".into());
            }
            _ => self.apply_step(ev, unit_index),
        }
        (state, detail)
    }

    /// Folds in an event of a unit's step (implement, rebase, validate, review, merge): the
    /// step's mark and what the unit shows of it.
    fn apply_step(&mut self, ev: &FlowEvent, unit_index: Option<usize>) {
        match ev {
            FlowEvent::ImplementerStarted { .. } | FlowEvent::ImplementerSpawned { .. } => {
                self.set(unit_index, 0, Step::Running)
            }
            FlowEvent::ImplementerFinished { result, .. } => {
                let step = if result.ok { Step::Done } else { Step::Failed };
                self.set(unit_index, 0, step);
                if let Some(u) = unit_index.and_then(|i| self.units.get_mut(i)) {
                    let mut text = result.output.clone();
                    if !result.ok && !result.stderr.trim().is_empty() {
                        text.push_str("\nstderr:\n");
                        text.push_str(&result.stderr);
                    }
                    u.implementer = Some(text);
                }
            }
            FlowEvent::Rebasing { .. } => self.set(unit_index, 1, Step::Running),
            FlowEvent::Rebased { base, head, .. } => {
                self.set(unit_index, 1, Step::Done);
                if let Some(u) = unit_index.and_then(|i| self.units.get_mut(i)) {
                    u.base = Some(short(base));
                    u.tip = Some(short(head));
                }
            }
            FlowEvent::Derived { base, tip, .. } => {
                if let Some(u) = unit_index.and_then(|i| self.units.get_mut(i)) {
                    // Not rebased: it was made on the Flow's base already.
                    if u.steps[1] == Step::Pending {
                        u.steps[1] = Step::Skipped;
                    }
                    u.base = Some(short(base));
                    u.tip = Some(short(tip));
                }
            }
            FlowEvent::Validating { .. } => self.set(unit_index, 2, Step::Running),
            FlowEvent::Validated { results, .. } => {
                let ok = results.iter().all(|r| r.ok);
                self.set(unit_index, 2, if ok { Step::Done } else { Step::Failed });
                if let Some(u) = unit_index.and_then(|i| self.units.get_mut(i)) {
                    u.validation = results
                        .iter()
                        .map(|r| (r.command.clone(), r.ok, r.output.clone()))
                        .collect();
                }
            }
            FlowEvent::Reviewing { patch_path, .. } => {
                self.set(unit_index, 3, Step::Running);
                if let Some(u) = unit_index.and_then(|i| self.units.get_mut(i)) {
                    u.packet = Some(patch_path.clone());
                }
            }
            FlowEvent::Reviewed {
                approved, output, ..
            } => {
                let step = if *approved { Step::Done } else { Step::Failed };
                self.set(unit_index, 3, step);
                if let Some(u) = unit_index.and_then(|i| self.units.get_mut(i)) {
                    u.review = Some(output.clone());
                }
            }
            FlowEvent::Merging { .. } => self.set(unit_index, 4, Step::Running),
            FlowEvent::Merged { tip, .. } => {
                self.set(unit_index, 4, Step::Done);
                if let Some(u) = unit_index.and_then(|i| self.units.get_mut(i)) {
                    u.tip = Some(short(tip));
                    if u.steps[3] == Step::Pending {
                        u.steps[3] = Step::Skipped;
                    }
                }
            }
            _ => {}
        }
    }

    /// Marks step `step` of the unit at `unit_index` (when there is one) `s`.
    fn set(&mut self, unit_index: Option<usize>, step: usize, s: Step) {
        if let Some(u) = unit_index.and_then(|i| self.units.get_mut(i)) {
            u.steps[step] = s;
        }
    }

    /// The detail of the Flow's row: where the Flow is, from its units, after the event's own
    /// `detail` (which wins unless the Flow just started).
    fn row_detail(&self, state: Option<State>, detail: Option<String>) -> String {
        let running = self.units.iter().find_map(|u| {
            u.steps
                .iter()
                .position(|s| *s == Step::Running)
                .map(|k| format!("{}: {}", u.id, STEPS[k]))
        });
        let merged = self
            .units
            .iter()
            .filter(|u| u.steps[4] == Step::Done)
            .count();
        let total = self.units.len();
        match (detail, running) {
            (Some(d), _) if state != Some(State::Running) => {
                format!("{d} · {merged}/{total} merged")
            }
            (_, Some(r)) => format!("{r} · {merged}/{total} merged"),
            (Some(d), None) => d,
            (None, None) => format!("{merged}/{total} merged"),
        }
    }
}

fn short(oid: &str) -> String {
    oid.chars().take(8).collect()
}

fn finished(s: EntryStatus) -> State {
    match s {
        EntryStatus::Done => State::Done,
        EntryStatus::Failed | EntryStatus::Stopped => State::Failed,
        EntryStatus::Skipped => State::Done,
    }
}

/// A delegation entry's event on its row.
fn entry(row: &mut Row, event: &EntryEvent, now_ms: u64) {
    match event {
        EntryEvent::Queued { name, role } => {
            row.name.clone_from(name);
            row.role.clone_from(role);
            row.detail = "queued".into();
        }
        EntryEvent::Launching { model, .. } => {
            row.started_ms = Some(now_ms);
            row.detail = model.clone();
        }
        EntryEvent::Activity { activity } => match activity {
            Activity::ToolStart { tool, path, .. } => {
                row.tool = Some(tool.clone());
                row.path.clone_from(path);
            }
            Activity::ToolEnd { .. } => {
                row.tool = None;
                row.path = None;
            }
            Activity::MessageEnd { turn } => row.turns = *turn,
            Activity::Tokens { usage } => row.tokens = usage.input_tokens + usage.output_tokens,
            Activity::Waiting { reason } => row.detail = format!("waiting: {reason}"),
            Activity::Started { .. } | Activity::Thinking => {}
        },
        EntryEvent::Finished { status, session } => {
            row.session.clone_from(session);
            row.state = finished(*status);
            row.tool = None;
            row.path = None;
            row.ended_ms = Some(now_ms);
            row.detail = status.as_str().to_string();
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
