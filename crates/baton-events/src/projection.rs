//! The one projection of the project's durable logs: what each workflow, Flow, background task,
//! managed worker and session stands at, folded from the typed project event feed (the same
//! [`Event`]s `baton events` prints and [`crate::follow`] hands over) and, in the terminal UI, from
//! the session's own delegation progress. Every view reads it: the terminal UI's side panel (a
//! [`Row`] each; a Flow's units × steps and a workflow's dispatches for their views), the web
//! dashboard (a [`Doc`] per log, sent by `baton serve`) and the MCP workflow resource.
//!
//! Pure: time is passed in, and nothing is read but the events given.

#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;
mod flow;
mod words;
mod workflow;

use std::collections::BTreeMap;

use baton_exec::background::TaskEvent;
use baton_exec::delegate::{EntryEvent, EntryStatus};
use baton_exec::types::Activity;
use baton_exec::worker::{StopReason, WorkerEvent};
use baton_protocol::SourceKind;
use serde::Serialize;

use crate::{Event, Payload};

pub use flow::{Check, Flow, Unit};
pub use words::{Kind, State, Step, STEPS};
pub use workflow::{Checkpoint, Node, ProjectedChange, Spent, Workflow};

/// One row of the side panel.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
    /// When it began and ended by its events' own times (milliseconds since the epoch): a row
    /// folded from history ends as it is read, and these still say how long it took.
    pub began_at_ms: Option<u64>,
    pub ended_at_ms: Option<u64>,
    /// A short line on where it is (a Flow's unit step, a workflow's phase or question).
    pub detail: String,
    /// A delegated child's own session, once it finished (its transcript can be read).
    pub session: Option<String>,
    /// A worker's model (or model class), as its spec names it.
    pub model: Option<String>,
    /// A worker's last answer, its first line.
    pub answer: Option<String>,
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
            began_at_ms: None,
            ended_at_ms: None,
            detail: String::new(),
            session: None,
            model: None,
            answer: None,
        }
    }

    pub fn elapsed_ms(&self, now_ms: u64) -> u64 {
        // Ended, by its events' own times when they are known (history folded at once ends
        // every row as it is read).
        if let (Some(_), Some(b), Some(e)) = (self.ended_ms, self.began_at_ms, self.ended_at_ms) {
            return e.saturating_sub(b);
        }
        match self.started_ms {
            Some(s) => self.ended_ms.unwrap_or(now_ms).saturating_sub(s),
            None => 0,
        }
    }
}

/// What one workflow, Flow, background task, managed worker or session stands at: the document
/// the dashboard and MCP read ([`Projection::doc`]). The fields a kind does not have stay empty;
/// a workflow carries its [`Workflow`], a Flow its [`Flow`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Doc {
    pub kind: Kind,
    pub id: String,
    pub state: State,
    /// A short line on where it is: a workflow's phase or question, a Flow's unit step, a
    /// worker's activity.
    pub detail: String,
    /// A task's children's roles, a worker's or a session's role.
    pub role: String,
    /// A worker's or a session's model.
    pub model: Option<String>,
    /// A worker's answered prompts.
    pub turns: u32,
    pub tokens: u64,
    pub cost_usd: Option<f64>,
    /// The session to read: a task's last child's, a worker's own.
    pub session: Option<String>,
    /// What a task was asked (each child's name and task); a session's first prompt.
    pub what: Option<String>,
    /// Why a task failed: the first failed child and its error.
    pub reason: Option<String>,
    /// A worker's last answer, its first line.
    pub answer: Option<String>,
    /// A routed session (two seats).
    pub routed: bool,
    pub workflow: Option<Workflow>,
    pub flow: Option<Flow>,
}

impl Doc {
    fn new(kind: Kind, id: &str) -> Doc {
        Doc {
            kind,
            id: id.to_string(),
            state: State::Running,
            detail: String::new(),
            role: String::new(),
            model: None,
            turns: 0,
            tokens: 0,
            cost_usd: None,
            session: None,
            what: None,
            reason: None,
            answer: None,
            routed: false,
            workflow: None,
            flow: None,
        }
    }

    /// A document from a row's fields.
    fn of_row(row: &Row) -> Doc {
        Doc {
            state: row.state,
            detail: row.detail.clone(),
            role: row.role.clone(),
            model: row.model.clone(),
            turns: row.turns,
            tokens: row.tokens,
            cost_usd: row.cost_usd,
            session: row.session.clone(),
            answer: row.answer.clone(),
            ..Doc::new(row.kind, &row.id)
        }
    }
}

/// Everything the views show.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Projection {
    pub rows: Vec<Row>,
    index: BTreeMap<(Kind, String, Option<usize>), usize>,
    pub flows: BTreeMap<String, Flow>,
    pub workflows: BTreeMap<String, Workflow>,
    /// Each background task as a whole (its rows are its children).
    pub tasks: BTreeMap<String, Doc>,
    pub sessions: BTreeMap<String, Doc>,
    /// This session's delegate calls so far.
    calls: usize,
    pub rev: u64,
}

/// Every log's document now: the whole feed of the project's state folder `state` folded once,
/// each event passed through `prepare` first (the web server and MCP price a task's unpriced
/// children there); the logs that could not be read, as one error naming each.
pub fn now(
    state: baton_state::StateDir,
    mut prepare: impl FnMut(&mut Event),
) -> Result<Vec<Doc>, String> {
    let mut feed = crate::Feed::new(state, Default::default(), Default::default()).projected();
    let mut p = Projection::default();
    let (events, errors) = feed.poll();
    if !errors.is_empty() {
        let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
        return Err(errors.join("; "));
    }
    for mut e in events {
        prepare(&mut e);
        p.apply(&e, 0);
    }
    Ok(p.docs())
}

impl Projection {
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

    /// The row `kind`/`id` (its first entry's, for a task), when there is one.
    pub fn find(&self, kind: Kind, id: &str) -> Option<&Row> {
        let index = matches!(kind, Kind::Task | Kind::Delegation).then_some(0);
        self.index
            .get(&(kind, id.to_string(), index))
            .map(|i| &self.rows[*i])
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
        let kind = match &event.event {
            Payload::Task(t) => {
                self.task(&id, t, now_ms);
                self.task_doc(&id, t);
                Some(Kind::Task)
            }
            Payload::Flow(r) => {
                self.flow(&id, &r.event, now_ms);
                Some(Kind::Flow)
            }
            Payload::Workflow(w) => {
                self.workflow(&id, w, now_ms);
                Some(Kind::Workflow)
            }
            Payload::Worker(w) => {
                self.worker(&id, w, now_ms);
                Some(Kind::Worker)
            }
            Payload::Session(line) => {
                self.session(&id, line);
                None
            }
            Payload::Routing(_) => None,
        };
        let wall = event
            .ts
            .as_deref()
            .and_then(crate::feed::parse_time)
            .and_then(|n| u64::try_from(n / 1_000_000).ok());
        if let (Some(kind), Some(wall)) = (kind, wall) {
            self.stamp(kind, &id, wall);
        }
    }

    /// The event's own time on the rows of `kind`/`id`: when each began, and when one that has
    /// ended did (its last event's time, until it ends).
    fn stamp(&mut self, kind: Kind, id: &str, wall: u64) {
        // Found through the index, never a scan of every row: this runs for every event of a
        // feed (100,000 of them in the dashboard's benchmark). A log's row has no entry index; a
        // task's rows are its entries 0, 1, 2 …
        let key = |index| (kind, id.to_string(), index);
        let found: Vec<usize> = std::iter::once(None)
            .chain((0..).map(Some))
            .map_while(|index| match index {
                None => Some(self.index.get(&key(None)).copied()),
                Some(_) => self.index.get(&key(index)).copied().map(Some),
            })
            .flatten()
            .collect();
        for i in found {
            let row = &mut self.rows[i];
            row.began_at_ms.get_or_insert(wall);
            if row.ended_ms.is_some() {
                row.ended_at_ms.get_or_insert(wall);
            } else {
                row.ended_at_ms = None;
            }
        }
    }

    /// What the log `kind`/`id` stands at, when the projection has seen it.
    pub fn doc(&self, kind: SourceKind, id: &str) -> Option<Doc> {
        match kind {
            SourceKind::Task => self.tasks.get(id).cloned(),
            SourceKind::Session => self.sessions.get(id).cloned(),
            SourceKind::Routing => None,
            SourceKind::Worker => self.find(Kind::Worker, id).map(Doc::of_row),
            SourceKind::Flow => self.find(Kind::Flow, id).map(|r| Doc {
                flow: self.flows.get(id).cloned(),
                ..Doc::of_row(r)
            }),
            SourceKind::Workflow => self.find(Kind::Workflow, id).map(|r| Doc {
                workflow: self.workflows.get(id).cloned(),
                ..Doc::of_row(r)
            }),
        }
    }

    /// Every document, workflows first, then Flows, tasks, workers and sessions, each by id.
    pub fn docs(&self) -> Vec<Doc> {
        let mut out = Vec::new();
        for id in self.workflows.keys() {
            out.extend(self.doc(SourceKind::Workflow, id));
        }
        for id in self.flows.keys() {
            out.extend(self.doc(SourceKind::Flow, id));
        }
        out.extend(self.tasks.values().cloned());
        let workers = self.rows.iter().filter(|r| r.kind == Kind::Worker);
        out.extend(workers.map(Doc::of_row));
        out.extend(self.sessions.values().cloned());
        out
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

    /// The task as a whole: done when every child is, cancelled when some were stopped and none
    /// failed, else failed.
    fn task_doc(&mut self, id: &str, ev: &TaskEvent) {
        let doc = self
            .tasks
            .entry(id.to_string())
            .or_insert_with(|| Doc::new(Kind::Task, id));
        match ev {
            TaskEvent::Created { request, .. } => {
                let what: Vec<String> = request
                    .entries
                    .iter()
                    .map(|e| {
                        let who = if e.name.is_empty() { &e.role } else { &e.name };
                        format!("{who}: {}", e.task)
                    })
                    .collect();
                let what: String = what.join("; ").chars().take(200).collect();
                doc.what = Some(baton_text::sanitize_line(&what).into_owned());
                let roles: Vec<&str> = request.entries.iter().map(|e| e.role.as_str()).collect();
                doc.role = roles.join(", ");
                doc.detail = format!("task {id}");
            }
            TaskEvent::Failed { message } => {
                let reason = baton_text::sanitize_line(message).into_owned();
                doc.state = State::Failed;
                doc.detail.clone_from(&reason);
                doc.reason = Some(reason);
            }
            TaskEvent::Completed { report } => {
                let all = |s: EntryStatus| report.entries.iter().all(|e| e.status == s);
                let any = |s: EntryStatus| report.entries.iter().any(|e| e.status == s);
                doc.state = if all(EntryStatus::Done) {
                    State::Done
                } else if any(EntryStatus::Stopped) && !any(EntryStatus::Failed) {
                    State::Cancelled
                } else {
                    State::Failed
                };
                doc.detail = doc.state.as_str().to_string();
                if let Some(e) = report
                    .entries
                    .iter()
                    .find(|e| e.status == EntryStatus::Failed)
                {
                    let why = e.error.as_ref().map_or("failed", |x| x.message.as_str());
                    doc.reason =
                        Some(baton_text::sanitize_line(&format!("{}: {why}", e.name)).into_owned());
                }
                doc.tokens = 0;
                let mut cost = None;
                for e in &report.entries {
                    doc.tokens += e.usage.input_tokens + e.usage.output_tokens;
                    if let Some(c) = e.cost_usd {
                        cost = Some(cost.unwrap_or(0.0) + c);
                    }
                    if e.session_id.is_some() {
                        doc.session.clone_from(&e.session_id);
                    }
                }
                doc.cost_usd = cost;
            }
            TaskEvent::Spawned { .. } | TaskEvent::Started { .. } | TaskEvent::Entry { .. } => {}
        }
    }

    fn worker(&mut self, id: &str, ev: &WorkerEvent, now_ms: u64) {
        let first = |t: &str, n: usize| {
            let line = t.lines().next().unwrap_or("");
            baton_text::sanitize_line(&baton_text::truncate(line, n, baton_text::Keep::Head))
                .into_owned()
        };
        let row = self.row(Kind::Worker, id, None, now_ms);
        match ev {
            WorkerEvent::Created { spec } => {
                row.name = format!("worker {id}");
                row.role.clone_from(&spec.role);
                row.model = spec.model.clone().or_else(|| spec.model_class.clone());
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
                row.detail = format!("idle · answered: {}", first(answer, 60));
                row.answer = Some(first(answer, 160));
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

    fn session(&mut self, id: &str, line: &baton_agent::session::Line) {
        use baton_agent::session::Line;
        let doc = self
            .sessions
            .entry(id.to_string())
            .or_insert_with(|| Doc::new(Kind::Session, id));
        match line {
            Line::Session(h) => {
                doc.role.clone_from(&h.role);
                doc.model = Some(h.model.clone());
                doc.state = State::Running;
            }
            Line::Route { model } => doc.model = Some(model.clone()),
            Line::Message { seat, message } => {
                doc.routed |= seat.is_some();
                doc.state = State::Running;
                if let (None, baton_protocol::Message::User { text }) = (&doc.what, message) {
                    // The user's words, not the host's Runtime State block a routed session
                    // opens each with (a message of the host's alone is passed over).
                    let words = baton_agent::routing::view::user_words(text);
                    if !words.is_empty() {
                        doc.what = Some(first_prompt(words));
                    }
                }
            }
            Line::Ended { outcome, .. } => {
                doc.state = State::Done;
                doc.detail = format!("{outcome:?}").to_lowercase();
            }
            Line::Compacted { .. }
            | Line::Withdrawn { .. }
            | Line::Checkpoint(_)
            | Line::Undone { .. } => {}
        }
    }

    fn flow(&mut self, id: &str, ev: &baton_flow::FlowEvent, now_ms: u64) {
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
        let wf = self.workflows.entry(id.to_string()).or_default();
        let state = wf.apply(ev);
        let detail = wf.row_detail(state);
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

/// A session's first prompt as its row shows it: the first line that holds something, at most
/// 200 characters.
fn first_prompt(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    match line.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_string(),
    }
}

/// What a finished child is drawn as: a stopped one (cancelled, or interrupted) is not a failure.
fn finished(s: EntryStatus) -> State {
    match s {
        EntryStatus::Done => State::Done,
        EntryStatus::Failed => State::Failed,
        EntryStatus::Stopped => State::Cancelled,
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
