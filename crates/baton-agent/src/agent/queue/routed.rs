//! The routed side of the session loop: the two seats, the journal, the evidence table, and
//! what the host does with each routing tool call. The rules themselves are `routing::rules`;
//! this module records what they allow (journal first, then effects) and runs the Executor when
//! the Coordinator assigns work.
//!
//! The Coordinator's `delegate assign` is a call that lasts the whole execution: the host runs
//! the Executor on its own route and view, and the call's result is the Executor's report with
//! the evidence it selected. So the Coordinator's requests only ever grow by new items at their
//! end (its provider's prompt cache keeps hitting), and it never sees the Executor's turns.

use baton_protocol::{AgentEvent, AssistantPart, EndReason, ItemStatus, Message};
use serde_json::Value;

use super::{Drive, Flow, Running, Seat};
use crate::routing::journal::Journal;
use crate::routing::rules::{self, Op};
use crate::routing::state::{Control, Event, ExecutionEnd, Profile};
use crate::routing::tools::{self as rtools, Call};
use crate::routing::view::{self, EvidenceTable};
use crate::routing::RoutingSpec;
use crate::tools::{tool_path_hint, ToolOutput};
use crate::turn::{error_output, tool_item};

/// What the Executor is told when it ends a turn with a plain answer.
mod calls;
mod conversation;
pub(crate) use calls::run_calls;

/// What the Executor is told in its last turn after new user input stopped it.
const STOP_NOTE: &str = "<host>New user input stopped your work on this assignment; it goes to the Coordinator. Do not start anything new. Write your own report now with `return` (operation `submit`): outcome partial or blocked, what is done and established, the partial effects your work left, and the reason (stopped by new user input). Only `return` runs in this turn.</host>";

/// What the Executor is told in its last turn at the session's turn limit.
pub(crate) fn limit_note(max_turns: u32) -> String {
    format!("<host>You have reached the turn limit ({max_turns} turns) of this execution. Do not start anything new. Write your own report now with `return` (operation `submit`): outcome partial or blocked, what is done and established, the partial effects your work left, and the reason (the turn limit). Only `return` runs in this turn.</host>")
}

/// Marks (or clears) the Executor's last turn after a stop: a report submitted in it keeps the
/// assignment outstanding and ends the execution `how`.
pub(crate) fn set_stopping(s: &mut Running<'_>, how: Option<ExecutionEnd>) {
    if let Some(r) = s.routed.as_mut() {
        r.stopping = how;
    }
}

pub(crate) const RETURN_NUDGE: &str = "<host>Your work on this assignment ends only through the `return` tool (operation `submit`, with your report, its outcome and limitations); a plain answer reaches nobody. Continue, or submit your report now.</host>";

/// The Coordinator's and the Executor's sections of the system prompt.
const COORDINATOR_SECTION: &str = "# Cognitive routing: you are the Coordinator

This session has two participants. You understand the user's goal, decide the approach, hand work to the Executor (a cheaper model with the environment tools) and assess what it returns. Only one of you works at a time.

- Hand work over with `delegate` (`assign`): write a contract that carries your conclusions — the question or result and why it matters, what is established, the approach, constraints and freedoms, and the evidence you need to judge the result. The call returns the Executor's report and the evidence it selected.
- Judge the report against the evidence, then assign the next step, correct the direction (`replace` only an outstanding assignment nobody is executing), or `unit` `close` the outcome (accepted, cancelled or deferred) with your assessment, and answer the user.
- You do not read, search, run or edit yourself; `read` is for role and skill files. Only when judgment and action cannot be separated, `act_bounded` `open` a scope with its stop condition, then `run` your role's environment tools (read, bash, edit…) in it; it ends at your next delegation.
- The <runtime-state> blocks come from the host: they describe the routing state, they are not the user's words.";

const EXECUTOR_SECTION: &str = "# Cognitive routing: you are the Executor

A Coordinator assigns you work through contracts. Follow the contract's direction; choose the mechanics yourself; challenge a premise the evidence contradicts. Verify before you claim a result.

- Each tool result carries a reference line `[ref ctx:…]`. Before you return, select with `project` (`add`) the tool results and messages the Coordinator needs to judge your result: the actual diff, the decisive test output, a contrary finding. Select the smallest sufficient set; do not paste outputs into the report instead.
- End your work only with `return` (`submit`): the result, evidence and limits, corrected assumptions, partial effects, and why you return (outcome completed, partial or blocked). You never answer the user directly.
- If the transfer of your report is blocked, correct the selection and use `return` with operation `retry`.";

/// The routed state of a session.
pub(crate) struct Routed {
    journal: Journal,
    /// This process's part of every operation id it records (`p<records at open>`): turn numbers,
    /// call ids and item ids start again in each process, and a journal skips an operation it
    /// already holds, so ids from a restarted process must not repeat an earlier one's.
    run: String,
    coordinator: Option<Seat>,
    executor: Option<Seat>,
    evidence: EvidenceTable,
    projection: bool,
    /// The assignment whose execution a restart found running and recorded `lost`: its host
    /// report goes to the Coordinator with the next user input (or `/resume` replaces it).
    recovered: Option<String>,
    /// How far each seat has been told of the other's view: `[the Coordinator through the
    /// Executor's messages, the Executor through the Coordinator's]` (`conversation.rs`).
    seen: [usize; 2],
    /// The reference of the Executor's latest message with text, until a tool result names it.
    said: Option<String>,
    /// Set while the Executor writes its own report after a stop: how its execution ends.
    stopping: Option<ExecutionEnd>,
}

impl Routed {
    /// Opens the journal (a restart ends the execution the killed process left running, with a
    /// host report), applies the control asked for at start, and rebuilds both seats and the
    /// evidence table from the transcript.
    pub(crate) fn open(
        s: &mut Running<'_>,
        spec: &RoutingSpec,
        history: Vec<(Option<String>, Message)>,
    ) -> Result<Routed, String> {
        let journal = Journal::open(&spec.journal)
            .map_err(|e| format!("routing journal {}: {e}", spec.journal.display()))?;
        let mut seats: [Vec<Message>; 2] = [Vec::new(), Vec::new()];
        for (tag, m) in history {
            match tag.as_deref() {
                Some("executor") => seats[1].push(m),
                // An ordinary transcript continued as a routed one: the Coordinator's view.
                _ => seats[0].push(m),
            }
        }
        let [coordinator, executor] = seats;
        let seen = [
            conversation::seen_through(&coordinator),
            conversation::seen_through(&executor),
        ];
        let run = format!("p{}", journal.len());
        let fresh = journal.is_empty();
        let mut r = Routed {
            journal,
            run,
            coordinator: None,
            executor: None,
            evidence: EvidenceTable::default(),
            projection: spec.projection,
            recovered: None,
            seen,
            said: None,
            stopping: None,
        };
        r.rebuild_evidence(&executor);
        // The Executor's last words in its last execution: nothing before the last contract
        // or resume note counts.
        let last_words = executor
            .iter()
            .rev()
            .take_while(
                |m| !matches!(m, Message::User { text } if assignment_named(text).is_some()),
            )
            .find_map(|m| match m {
                Message::Assistant { parts } => {
                    let t: String = parts
                        .iter()
                        .filter_map(|p| match p {
                            AssistantPart::Text { text } => Some(text.as_str()),
                            _ => None,
                        })
                        .collect();
                    (!t.trim().is_empty()).then_some(t)
                }
                _ => None,
            })
            .unwrap_or_default();
        let before = r.journal.state().clone();
        match r.journal.recover(&last_words) {
            Ok(true) => r.recovered = r.journal.state().outstanding().map(|a| a.id.clone()),
            Ok(false) => {}
            Err(e) => return Err(format!("routing journal: recovery failed: {e}")),
        }
        let control = match (spec.start, before.control) {
            (Some(c), _) => Some(c),
            // A new journal starts automatic; a restarted one keeps its control (even `inactive`).
            (None, Control::Inactive) if fresh => Some(Control::Automatic),
            (None, _) => None,
        };
        if let Some(c) = control.filter(|c| *c != r.journal.state().control) {
            let op = format!("{}/start", r.run);
            r.journal
                .commit(&op, "start", vec![Event::ControlSet { control: c }])
                .map_err(|e| format!("routing journal: {e}"))?;
        }
        // Tell the observer what the journal holds now (after a restart: the recovery).
        for record in
            Journal::read(r.journal.path()).map_err(|e| format!("routing journal: {e}"))?
        {
            if !before_has(&before, &record) {
                emit_record(s, &r, &record);
            }
        }
        r.coordinator = Some(Seat::new(
            s.spec,
            Some(Profile::Coordinator),
            spec.coordinator.clone(),
            rtools::specs(Profile::Coordinator),
            Some(COORDINATOR_SECTION),
            coordinator,
        ));
        // With projection off there is nothing to select: the Executor is not offered `project`.
        let mut executor_tools = rtools::specs(Profile::Executor);
        if !spec.projection {
            executor_tools.retain(|t| t.name != "project");
        }
        r.executor = Some(Seat::new(
            s.spec,
            Some(Profile::Executor),
            spec.executor.clone(),
            executor_tools,
            Some(EXECUTOR_SECTION),
            executor,
        ));
        Ok(r)
    }

    /// The instructional reads made under assignment `id` and not yet selected, which go up with
    /// its report without being asked for — as many as the selection's bound leaves room for.
    fn auto_projection(&self, id: &str) -> Vec<String> {
        let st = self.journal.state();
        let room = crate::routing::rules::MAX_PROJECTED.saturating_sub(st.projection.len());
        self.evidence
            .instructional(id)
            .into_iter()
            .filter(|e| !st.projection.contains(e))
            .take(room)
            .collect()
    }

    /// The routes both seats ran on, for the session's summary.
    pub(crate) fn into_routes(self) -> Vec<baton_protocol::RouteUsage> {
        self.coordinator
            .into_iter()
            .chain(self.executor)
            .flat_map(|seat| seat.used)
            .collect()
    }

    /// The evidence of the Executor's view as it was produced (a restart rebuilds it in order).
    fn rebuild_evidence(&mut self, executor: &[Message]) {
        let mut assignment = None;
        for (i, m) in executor.iter().enumerate() {
            match m {
                Message::User { text } => {
                    if let Some(a) = assignment_named(text) {
                        assignment = Some(a);
                    }
                }
                m => {
                    // A recorded tool result carries the reference line `observe` added.
                    self.add_evidence(&executor[..i], m, view::strip_ref_line, assignment.clone());
                }
            }
        }
    }

    /// Adds the evidence an Executor message carries: a tool result's output (as `body` reads
    /// it), with the arguments of its call among `earlier`, or an assistant message's text.
    /// Returns its evidence id.
    fn add_evidence(
        &mut self,
        earlier: &[Message],
        m: &Message,
        body: fn(&str) -> &str,
        assignment: Option<String>,
    ) -> Option<String> {
        match m {
            Message::Tool {
                call_id,
                tool,
                output,
                is_error,
            } => {
                let args = call_args(earlier, call_id);
                let id = self.add_tool_evidence(tool, &args, body(output), *is_error, assignment);
                Some(id)
            }
            Message::Assistant { parts } => {
                let text = assistant_text(parts);
                (!text.trim().is_empty()).then(|| self.evidence.add_message(&text, assignment))
            }
            Message::User { .. } => None,
        }
    }

    fn add_tool_evidence(
        &mut self,
        tool: &str,
        args: &Value,
        body: &str,
        is_error: bool,
        assignment: Option<String>,
    ) -> String {
        let path = tool_path_hint(args);
        // The label says which call produced the output: its path, command or operation.
        let label = conversation::call_hint(tool, args);
        let instructional =
            tool == "read" && !is_error && path.as_deref().is_some_and(is_instructional);
        self.evidence
            .add_tool(label, body, assignment, instructional)
    }

    /// Book-keeping of a message about to join `seat`'s view: the Executor's tool results get
    /// a reference (and a line naming it), its messages with text a reference too.
    /// The reference a tool result got, when it got one.
    pub(crate) fn observe(&mut self, seat: &Seat, m: &mut Message) -> Option<String> {
        if seat.profile != Some(Profile::Executor) {
            return None;
        }
        // Under a hold the Executor works as an ordinary session: its work belongs to no
        // assignment and its results carry no reference line.
        let automatic = self.journal.state().control == Control::Automatic;
        let assignment = self
            .journal
            .state()
            .outstanding()
            .map(|a| a.id.clone())
            .filter(|_| automatic);
        let id = self.add_evidence(&seat.messages, m, |output| output, assignment);
        match (id, m) {
            (Some(id), Message::Tool { output, .. }) => {
                // The reference line also names the Executor's own words before the call, so
                // it can select them too.
                let said = self.said.take();
                if self.projection && automatic {
                    output.push_str(&view::ref_line(&id, said.as_deref()));
                    return Some(id);
                }
                None
            }
            (id, Message::Assistant { .. }) => {
                self.said = id;
                None
            }
            _ => None,
        }
    }
}

fn before_has(
    before: &crate::routing::state::RoutingState,
    r: &crate::routing::state::Record,
) -> bool {
    let mut probe = before.clone();
    matches!(probe.apply(r), Ok(false))
}

/// Whether a path is instructional material: a role or skill file — a file under a
/// `.baton/roles/`, `.baton/skills/`, `.claude/skills/` or `.agents/skills/` folder, or a file
/// named `SKILL.md`. A path with a `..` component never is (it could lead
/// anywhere), nor is an empty one.
fn is_instructional(path: &str) -> bool {
    use std::path::Component;
    let parts: Vec<Component> = std::path::Path::new(path).components().collect();
    if parts.iter().any(|c| matches!(c, Component::ParentDir)) {
        return false;
    }
    let names: Vec<&str> = parts
        .iter()
        .filter_map(|c| match c {
            Component::Normal(n) => n.to_str(),
            _ => None,
        })
        .collect();
    let Some((file, dirs)) = names.split_last() else {
        return false;
    };
    *file == "SKILL.md"
        || dirs.windows(2).any(|w| {
            matches!(
                (w[0], w[1]),
                (".baton", "roles" | "skills") | (".claude" | ".agents", "skills")
            )
        })
}

fn assistant_text(parts: &[AssistantPart]) -> String {
    parts
        .iter()
        .filter_map(|p| match p {
            AssistantPart::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The arguments of the call `call_id` in the last assistant message of `messages` that made it.
fn call_args(messages: &[Message], call_id: &str) -> Value {
    messages
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::Assistant { parts } => parts.iter().find_map(|p| match p {
                AssistantPart::ToolCall { id, arguments, .. } if id == call_id => {
                    Some(serde_json::from_str(arguments).unwrap_or(Value::Null))
                }
                _ => None,
            }),
            _ => None,
        })
        .unwrap_or(Value::Null)
}

/// The assignment a contract message names (`Assignment a3 from …` or `resumed assignment a3`).
fn assignment_named(text: &str) -> Option<String> {
    let i = text
        .find("\n\nAssignment ")
        .map(|i| i + 13)
        .or_else(|| text.find("resumed assignment ").map(|i| i + 19))?;
    let id: String = text[i..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect();
    (!id.is_empty()).then_some(id)
}

fn emit_record(s: &mut Running<'_>, r: &Routed, record: &crate::routing::state::Record) {
    (s.emit)(AgentEvent::RoutingRecorded {
        record: serde_json::to_value(record).unwrap_or(Value::Null),
        responsible: r
            .journal
            .state()
            .responsible()
            .map(|p| p.as_str().to_string()),
    });
}

/// Commits `events` of operation `op` and tells the observer; an error is the message a tool
/// result or the user gets (nothing was recorded, so nothing happened).
fn commit(s: &mut Running<'_>, op: &str, step: &str, events: Vec<Event>) -> Result<(), String> {
    let Some(r) = s.routed.as_mut() else {
        return Err("this session is not routed".into());
    };
    let op = &format!("{}/{op}", r.run);
    let before = r.journal.state().clone();
    r.journal.commit(op, step, events.clone()).map_err(|e| {
        format!("the host could not record this in the routing journal ({e}); nothing changed")
    })?;
    let records: Vec<crate::routing::state::Record> = events
        .into_iter()
        .map(|event| crate::routing::state::Record {
            op: op.to_string(),
            step: step.to_string(),
            event,
        })
        .filter(|rec| !before_has(&before, rec))
        .collect();
    if let Some(r) = s.routed.take() {
        for rec in &records {
            emit_record(s, &r, rec);
        }
        s.routed = Some(r);
    }
    Ok(())
}

fn state<'s>(s: &'s Running<'_>) -> Option<&'s crate::routing::state::RoutingState> {
    s.routed.as_ref().map(|r| r.journal.state())
}

/// Whether a routed session runs as an ordinary one: under a manual hold (on the held seat) or
/// with routing turned off (on the Coordinator's seat).
pub(crate) fn ordinary(s: &Running<'_>) -> bool {
    state(s).is_some_and(|st| st.control != Control::Automatic)
}

/// The participant `seat` acts as under the routing rules: its profile under automatic control,
/// none otherwise (an ordinary session: new input joins it, it is not stopped for it).
pub(crate) fn acting(s: &Running<'_>, seat: &Seat) -> Option<Profile> {
    seat.profile.filter(|_| !ordinary(s))
}

/// Whether an execution of an assignment runs now.
pub(crate) fn executing(s: &Running<'_>) -> bool {
    state(s).is_some_and(|st| st.running().is_some())
}

/// Whether `seat`, working now, still has the work under the current control: the Coordinator
/// under automatic or inactive control, the Executor on a running assignment under automatic
/// control, the held profile's seat (with no assignment running) under a manual hold.
pub(crate) fn keeps_working(s: &Running<'_>, seat: &Seat) -> bool {
    let Some(st) = state(s) else {
        return true;
    };
    match (st.control, seat.profile) {
        (Control::Automatic, Some(Profile::Executor)) => st.running().is_some(),
        (Control::Automatic | Control::Inactive, p) => p != Some(Profile::Executor),
        (Control::Manual { profile }, p) => p == Some(profile) && st.running().is_none(),
    }
}

/// Whether `seat` is the Executor under automatic control, whose work ends only through
/// `return`.
pub(crate) fn must_return(s: &Running<'_>, seat: &Seat) -> bool {
    seat.profile == Some(Profile::Executor)
        && state(s).is_some_and(|st| st.control == Control::Automatic)
}

/// User input as it joins `seat`'s view, under every control after the host's Runtime State
/// block and what the other seat did meanwhile (`conversation.rs`); for the Coordinator under
/// automatic control after a restart, the report the host saved for the lost execution too. New
/// input ends an open `act_bounded` scope.
pub(crate) fn user_message(s: &mut Running<'_>, seat: &Seat, text: String) -> Message {
    end_scope(s, "new user input");
    let Some(profile) = seat.profile else {
        return Message::user(text);
    };
    let automatic = state(s).is_some_and(|st| st.control == Control::Automatic);
    let recovered = if automatic && profile == Profile::Coordinator {
        s.routed
            .as_mut()
            .and_then(|r| r.recovered.take())
            .map(|id| {
                format!(
                    "After a restart the host recorded the execution of assignment {id} as lost:\n\n{}\n\n",
                    report_for(s, &id)
                )
            })
            .unwrap_or_default()
    } else {
        String::new()
    };
    let Some(r) = s.routed.as_mut() else {
        return Message::user(text);
    };
    let (mine, other_profile, other) = match profile {
        Profile::Coordinator => (0, Profile::Executor, r.executor.as_ref()),
        Profile::Executor => (1, Profile::Coordinator, r.coordinator.as_ref()),
    };
    let update = other.and_then(|o| {
        let u = conversation::update(other_profile, &o.messages, r.seen[mine]);
        r.seen[mine] = o.messages.len();
        u
    });
    let block = view::runtime_state(r.journal.state(), profile, r.projection);
    let update = update.map(|u| format!("{u}\n\n")).unwrap_or_default();
    Message::user(format!("{block}\n\n{update}{recovered}{text}"))
}

/// `/compact` in a routed session: the Coordinator's view is summarised (the Executor's view
/// keeps its evidence references, which count its messages).
pub(crate) async fn compact(s: &mut Running<'_>, focus: Option<&str>) -> Result<(), Drive> {
    let Some(mut seat) = take_seat(s, Profile::Coordinator) else {
        return Ok(());
    };
    let turn = s.turns;
    let r = Box::pin(s.compact(&mut seat, turn, super::compact::Trigger::Manual, focus)).await;
    put_seat(s, seat);
    r
}

/// After `seat`'s view was compacted (its messages before `cut` replaced by one summary), the
/// other seat's place in it moves with it: what it had not been told of is in the summary.
pub(crate) fn compacted(s: &mut Running<'_>, seat: &Seat, cut: usize) {
    let Some(r) = s.routed.as_mut() else {
        return;
    };
    let other = match seat.profile {
        Some(Profile::Coordinator) => 1,
        Some(Profile::Executor) => 0,
        None => return,
    };
    r.seen[other] = r.seen[other].saturating_sub(cut) + 1;
}

/// Strips the reference lines from the tool results of `messages`: a seat working as an ordinary
/// session is not shown them (seed 000:33-35).
pub(crate) fn without_refs(messages: &[Message]) -> Vec<Message> {
    messages
        .iter()
        .map(|m| match m {
            Message::Tool {
                call_id,
                tool,
                output,
                is_error,
            } => Message::Tool {
                call_id: call_id.clone(),
                tool: tool.clone(),
                output: view::strip_ref_line(output).to_string(),
                is_error: *is_error,
            },
            m => m.clone(),
        })
        .collect()
}

/// A user task: to the Coordinator under automatic control, to the held profile's seat under
/// manual control (an ordinary session on that route), to the Coordinator's seat when inactive.
pub(crate) async fn task(s: &mut Running<'_>, text: String) -> Drive {
    let profile = match state(s).map(|st| st.control) {
        Some(Control::Manual { profile }) => profile,
        _ => Profile::Coordinator,
    };
    let Some(mut seat) = take_seat(s, profile) else {
        return Drive::Ended {
            reason: Some(EndReason::ModelError),
            text: "the routed session lost its seat".into(),
            error: None,
        };
    };
    let m = user_message(s, &seat, text);
    s.push(&mut seat, m);
    let d = Box::pin(s.drive(&mut seat)).await;
    put_seat(s, seat);
    if matches!(
        d,
        Drive::Ended {
            reason: Some(EndReason::Cancelled),
            ..
        }
    ) {
        end_scope(s, "an interruption");
    }
    d
}

fn take_seat(s: &mut Running<'_>, p: Profile) -> Option<Seat> {
    let r = s.routed.as_mut()?;
    match p {
        Profile::Coordinator => r.coordinator.take(),
        Profile::Executor => r.executor.take(),
    }
}

fn put_seat(s: &mut Running<'_>, seat: Seat) {
    if let Some(r) = s.routed.as_mut() {
        match seat.profile {
            Some(Profile::Executor) => r.executor = Some(seat),
            _ => r.coordinator = Some(seat),
        }
    }
}

/// Ends the Coordinator's open `act_bounded` scope, if any, for `why`.
pub(crate) fn end_scope(s: &mut Running<'_>, why: &str) {
    if let Some(end) = state(s).and_then(|st| rules::end_act_bounded(st, why)) {
        let op = format!("{}:scope-end", s.turns);
        if let Err(e) = commit(s, &op, "scope", vec![end]) {
            tracing::warn!("{e}");
        }
    }
}

/// `/profile`: records the new control (a manual hold lasts until the user changes it). A
/// change ends the Coordinator's open `act_bounded` scope: what it applied to changed.
pub(crate) fn control(s: &mut Running<'_>, c: Control) {
    if state(s).is_some_and(|st| st.control != c) {
        end_scope(s, "the control changed");
    }
    let n = state(s).map_or(0, |st| st.units.len() + st.assignments.len());
    let op = format!("control-{}-{n}-{}", s.ids.next(), c.describe());
    if let Err(e) = commit(s, &op, "control", vec![Event::ControlSet { control: c }]) {
        tracing::warn!("{e}");
    }
}

/// `/resume`: a new execution of the interrupted assignment, whose report then goes to the
/// Coordinator, who goes on. `Err` says why nothing is resumable.
pub(crate) async fn resume(s: &mut Running<'_>) -> Result<Drive, String> {
    let nothing = "no assignment was interrupted: nothing to resume (`/resume` continues an assignment stopped by `/interrupt` or a crash)";
    let id = state(s)
        .and_then(|st| st.resumable())
        .map(|a| a.id.clone())
        .ok_or(nothing)?;
    if let Some(control) = state(s)
        .map(|st| st.control)
        .filter(|c| *c != Control::Automatic)
    {
        return Err(format!(
            "assignment {id} waits, but the control is {}: `/profile auto` first, then `/resume`",
            control.describe()
        ));
    }
    if let Some(r) = s.routed.as_mut() {
        r.recovered = None;
    }
    let op = format!("resume-{}-{}", id, s.ids.next());
    // Whatever scope the Coordinator had open ends here: the user interrupted and resumed.
    end_scope(s, "the user resumed an assignment");
    let outcome = execute(s, &id, true, &op).await;
    let mut seat = take_seat(s, Profile::Coordinator)
        .ok_or("the routed session lost the Coordinator's seat")?;
    let report = match outcome {
        Ok(()) => report_for(s, &id),
        Err(e) => format!("The resumed execution did not run to a report: {e}."),
    };
    s.push(
        &mut seat,
        Message::user(format!("The user resumed assignment {id}.\n\n{report}")),
    );
    let d = Box::pin(s.drive(&mut seat)).await;
    put_seat(s, seat);
    Ok(d)
}

fn report_for(s: &Running<'_>, id: &str) -> String {
    match s.routed.as_ref() {
        Some(r) => view::report_message(r.journal.state(), id, &r.evidence, r.projection),
        None => String::new(),
    }
}

/// Runs the Executor on assignment `id` (a new execution): the contract (or the resume note)
/// joins its view, it works until it returns, is interrupted or stops; a stop without a report
/// gets an honest partial report from the host.
async fn execute(s: &mut Running<'_>, id: &str, resumed: bool, op: &str) -> Result<(), String> {
    let Some(events) = state(s).and_then(rules::start_execution) else {
        return Err(format!("assignment {id} has an execution running already"));
    };
    commit(s, &format!("{op}:start"), "execution", events)?;
    let Some(mut seat) = take_seat(s, Profile::Executor) else {
        return Err("the routed session lost the Executor's seat".into());
    };
    let contract = s
        .routed
        .as_ref()
        .map(|r| view::contract_message(r.journal.state(), id, resumed, r.projection))
        .unwrap_or_default();
    s.push(&mut seat, Message::user(contract));
    // The host's report quotes this execution's last words, never an earlier one's.
    seat.last_text.clear();
    let mut d = Box::pin(s.drive(&mut seat)).await;
    // Stopped by new input (not by `/interrupt`, which stops at once), the Executor writes its
    // own report in one last turn where only `return` runs (seed 000:387).
    let stop = s
        .held
        .iter()
        .any(|h| matches!(h, super::Submission::Interrupt));
    let automatic = state(s).is_some_and(|st| st.control == Control::Automatic);
    if matches!(d, Drive::Interrupted) && !stop && automatic && !s.cancel.is_cancelled() {
        s.turns += 1;
        let turn = s.turns;
        set_stopping(s, Some(ExecutionEnd::Interrupted));
        let returned = Box::pin(s.return_turn(&mut seat, turn, STOP_NOTE.to_string())).await;
        set_stopping(s, None);
        if let Ok(true) = returned {
            d = Drive::Returned;
        }
    }
    let last = seat.last_text.clone();
    put_seat(s, seat);
    let (how, text, gaps) = match d {
        Drive::Returned => return Ok(()),
        Drive::Ended {
            reason: Some(EndReason::TurnLimit),
            text,
            ..
        } => (
            ExecutionEnd::LimitReached,
            if text.trim().is_empty() { last } else { text },
            vec!["the Executor reached the turn limit before it returned".to_string()],
        ),
        Drive::Interrupted => (
            ExecutionEnd::Interrupted,
            last,
            vec![if automatic {
                "stopped by new user input before the Executor returned".to_string()
            } else {
                "stopped by a change of control before the Executor returned".to_string()
            }],
        ),
        Drive::Ended { reason, text, .. } => (
            ExecutionEnd::Failed,
            if text.trim().is_empty() { last } else { text },
            vec![format!(
                "the execution ended without a report: {}",
                reason.map_or("the Executor answered without returning".into(), |r| {
                    format!("{r:?}").to_lowercase()
                })
            )],
        ),
    };
    let mut events = Vec::new();
    if let Some(r) = s.routed.as_ref() {
        let auto = r.auto_projection(id);
        if !auto.is_empty() {
            events.push(Event::ProjectionAdded { refs: auto });
        }
    }
    let mut probe = state(s).cloned().unwrap_or_default();
    for e in &events {
        let _ = probe.apply(&crate::routing::state::Record {
            op: String::new(),
            step: String::new(),
            event: e.clone(),
        });
    }
    if let Some(more) = rules::host_return(&probe, how, &text, gaps) {
        events.extend(more);
    }
    commit(s, &format!("{op}:end"), "execution", events)
}

#[cfg(test)]
mod instructional_tests {
    use super::is_instructional;

    #[test]
    fn only_role_and_skill_files_are_instructional() {
        for yes in [
            ".baton/roles/scout.md",
            ".baton/skills/style/notes.md",
            "docs/SKILL.md",
            "/home/u/p/.baton/skills/x/y.md",
            "./.baton/skills/x/SKILL.md",
            ".claude/skills/pdf/forms.md",
            ".agents/skills/pdf/scripts/fill.py",
        ] {
            assert!(is_instructional(yes), "{yes}");
        }
        for no in [
            ".baton/roles/../../greet.py",
            ".baton/skills/../secret.txt",
            "./.baton/roles/../x",
            "xSKILL.md",
            ".baton/roles",
            "src/main.rs",
            ".claude/settings.json",
            ".agents/notes.md",
            "",
        ] {
            assert!(!is_instructional(no), "{no}");
        }
    }
}
