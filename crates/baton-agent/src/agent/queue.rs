//! The session loop as a queue pair: submissions in ([`Submission`], through an [`Inbox`]),
//! events out (`emit`). An ordinary session has one seat; a routed one (`spec.routing`) has two,
//! the Coordinator's and the Executor's, each with its own routes, tools and view of the
//! conversation (`routed.rs`). Between atomic tool calls the loop looks at the inbox: user input
//! that arrives while a seat works is acted on at that safe point — added to the conversation
//! after the current tool results, or, for a working Executor, stopping it with a partial report
//! for the Coordinator.

use std::collections::VecDeque;
use std::sync::Arc;

use baton_model::retry::run_turn;
use baton_model::routes::cost;
use baton_model::{AssistantTurn, ModelRequest};
use baton_protocol::{
    AgentEvent, AssistantPart, EndReason, ErrorCode, ErrorInfo, ItemStatus, Message, Outcome,
    RouteUsage, StopReason, ToolSpec, Usage,
};
use tokio_util::sync::CancellationToken;

use super::{handoff_request, system_prompt, AgentSpec, Fallback, RunSummary};
use crate::routing::state::{Control, Profile};
use crate::routing::tools::COORDINATOR_DIRECT;
use crate::session::SessionStore;
use crate::tools::{Tool, ToolContext};
use crate::turn::{
    aim, cancelled_message, close_open_items, route_usage, run_tools, total_cost, ItemIds,
    StreamingItems, Toolbox,
};

mod checkpoint;
mod compact;
mod inbox;
mod routed;
mod start;
mod switch;

use start::{cancelled, ordinary_seat, session_started};
pub use switch::RouteSwitch;

pub(crate) use inbox::Flow;
use inbox::PollState;
pub use inbox::{ApprovalSwitch, Inbox, Interrupter};

/// What a session is asked to do, in the order it arrives.
#[derive(Debug, Clone, PartialEq)]
pub enum Submission {
    /// User input: a task, a follow-up, or words for the Coordinator while the Executor works.
    Input(String),
    /// `/profile coordinator|executor|auto`: the control of a routed session.
    Control(Control),
    /// `/resume`: continue the interrupted assignment of a routed session.
    Resume,
    /// Stop the current task at the next safe point.
    Interrupt,
    /// `/compact [focus]`: summarise the conversation now (the Coordinator's view in a routed
    /// session), optionally focused on what the words say.
    Compact(Option<String>),
    /// `/model`: run on these routes from the next turn (the first, then the others to fail
    /// over to), resolved by the front end from the config.
    Routes(RouteSwitch),
    /// `/clear`: a new conversation; the model's view starts empty.
    Clear,
    /// `/undo N`: put back the files checkpoint N and every later one changed (once the work
    /// running now is done).
    Undo(u32),
}

/// One participant's place in a session: its routes, prompt, tools and view of the conversation.
pub(crate) struct Seat {
    /// `None` in an ordinary session.
    pub(crate) profile: Option<Profile>,
    chain: Vec<Fallback>,
    active: usize,
    used: Vec<RouteUsage>,
    system: String,
    offered: Vec<Arc<dyn Tool>>,
    specs: Vec<ToolSpec>,
    /// A routed seat's prompt and tools when routing does not apply (a manual hold, routing
    /// off): the ordinary session's — every role tool by schema, no routing section or tools.
    ordinary: Option<(String, Vec<ToolSpec>)>,
    pub(crate) messages: Vec<Message>,
    pub(crate) last_text: String,
    /// What the last request of this seat was counted at (`compact.rs`).
    fit: compact::Fit,
}

impl Seat {
    /// A seat on `chain` (its route first) offering the role's tools plus `extra` specs (the
    /// routing tools, run by the host) and, with `extra_section`, that section in its prompt.
    /// The Coordinator's seat does not get the host's delegation tools (`delegate_task`, …) nor
    /// their prompt sections: its way to hand work over is `delegate`.
    pub(crate) fn new(
        spec: &AgentSpec,
        profile: Option<Profile>,
        chain: Vec<Fallback>,
        extra: Vec<ToolSpec>,
        extra_section: Option<&str>,
        messages: Vec<Message>,
    ) -> Seat {
        let host_tools: &[Arc<dyn Tool>] = if profile == Some(Profile::Coordinator) {
            &[]
        } else {
            &spec.host_tools
        };
        let offered: Vec<Arc<dyn Tool>> = spec
            .tools
            .iter()
            .chain(host_tools.iter())
            .filter(|t| spec.role.meta.tools.iter().any(|n| n == t.name()))
            .chain(spec.mcp_tools.iter())
            .cloned()
            .collect();
        // The Coordinator runs its other environment tools through `act_bounded run`: they stay
        // runnable (`offered`) without their schemas in every request.
        let coordinator = profile == Some(Profile::Coordinator);
        let advertised: Vec<&Arc<dyn Tool>> = offered
            .iter()
            .filter(|t| !coordinator || COORDINATOR_DIRECT.contains(&t.name()))
            .collect();
        let mut names: Vec<String> = advertised.iter().map(|t| t.name().to_string()).collect();
        names.extend(extra.iter().map(|s| s.name.clone()));
        let mut specs: Vec<ToolSpec> = advertised.iter().map(|t| t.spec()).collect();
        specs.extend(extra.iter().cloned());
        // Held manually or with routing off, a routed seat is an ordinary session (seed 000:33-35):
        // every role tool by schema, and neither the routing section nor the routing tools.
        let ordinary = profile.map(|_| {
            let all: Vec<String> = offered.iter().map(|t| t.name().to_string()).collect();
            let system = system_prompt(spec, &all, !coordinator);
            (system, offered.iter().map(|t| t.spec()).collect())
        });
        let mut system = system_prompt(spec, &names, !coordinator);
        if let Some(section) = extra_section {
            system.push('\n');
            system.push_str(section.trim());
            system.push('\n');
        }
        let used = chain
            .first()
            .map(|f| RouteUsage {
                seat: profile.map(|p| p.as_str().to_string()),
                ..route_usage(&spec.prices, &f.route)
            })
            .into_iter()
            .collect();
        Seat {
            profile,
            chain,
            active: 0,
            used,
            system,
            offered,
            specs,
            ordinary,
            messages,
            last_text: String::new(),
            fit: compact::Fit::default(),
        }
    }

    fn tag(&self) -> Option<&'static str> {
        self.profile.map(Profile::as_str)
    }
}

/// The tools a turn may call.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Offer {
    All,
    /// The handoff turn at the turn limit: none.
    None,
    /// The Executor's last turn, to write its own report: the same tools are offered (so the
    /// request stays prefix-stable), but only `return` calls run.
    ReturnOnly,
}

/// How one drive of a seat ended.
pub(crate) enum Drive {
    /// The model stopped: a plain answer (`reason` `None`), or a limit, a refusal, an error or a
    /// cancellation.
    Ended {
        reason: Option<EndReason>,
        text: String,
        error: Option<ErrorInfo>,
    },
    /// The Executor returned its report.
    Returned,
    /// New user input stopped the Executor after an atomic tool call.
    Interrupted,
}

/// A session while [`serve`] runs it: its spec, counters, transcript, inbox and emitter.
pub(crate) struct Running<'a> {
    pub(crate) spec: &'a AgentSpec,
    pub(crate) ctx: ToolContext,
    pub(crate) ids: ItemIds,
    usage: Usage,
    turns: u32,
    store: &'a mut Option<SessionStore>,
    cancel: &'a CancellationToken,
    pub(crate) emit: &'a mut (dyn FnMut(AgentEvent) + Send),
    inbox: &'a mut Inbox,
    /// Submissions that arrived while a task ran, acted on at a safe point or afterwards.
    pub(crate) held: VecDeque<Submission>,
    pub(crate) routed: Option<routed::Routed>,
    /// The routes every seat ran on, for the summary.
    finished_routes: Vec<RouteUsage>,
    /// Tools the user approved "always" for this session.
    pub(crate) always_approved: std::collections::BTreeSet<String>,
    /// The interrupter's count when the current input began: a later interrupt stops its turns.
    interrupt_seen: u64,
    /// The project's files as prompts changed them, for `/undo`.
    checkpoints: checkpoint::Checkpoints,
}

/// Serves a session until its inbox is closed and empty (or it is cancelled): each submission
/// in turn. `history` is an earlier transcript, each message with the seat it belongs to (`None`
/// in an ordinary session). The summary is the last task's end with the whole session's turns,
/// usage, cost and routes. Front ends run it through [`super::Session::spawn`].
pub(crate) async fn serve(
    spec: &AgentSpec,
    history: Vec<(Option<String>, Message)>,
    resumed: bool,
    store: &mut Option<SessionStore>,
    cancel: &CancellationToken,
    inbox: &mut Inbox,
    emit: &mut (dyn FnMut(AgentEvent) + Send),
) -> RunSummary {
    let ctx = spec.tool_context(cancel);
    emit(session_started(spec, resumed));
    let checkpoints = checkpoint::Checkpoints::resumed(
        store.as_ref().filter(|_| resumed).map(|s| s.path()),
        spec.checkpoints,
    );
    let mut s = Running {
        spec,
        ctx,
        ids: ItemIds::default(),
        usage: Usage::default(),
        turns: 0,
        store,
        cancel,
        emit,
        inbox,
        held: VecDeque::new(),
        routed: None,
        finished_routes: Vec::new(),
        always_approved: Default::default(),
        interrupt_seen: 0,
        checkpoints,
    };
    let mut main = None;
    match &spec.routing {
        Some(routing) => match routed::Routed::open(&mut s, routing, history) {
            Ok(r) => s.routed = Some(r),
            Err(e) => {
                let error = ErrorInfo {
                    code: ErrorCode::BadRequest,
                    message: e,
                };
                return s.finish(Drive::Ended {
                    reason: Some(EndReason::ModelError),
                    text: error.message.clone(),
                    error: Some(error),
                });
            }
        },
        None => main = Some(ordinary_seat(spec, history)),
    }
    let mut last = Drive::Ended {
        reason: None,
        text: String::new(),
        error: None,
    };
    loop {
        let next = match s.held.pop_front() {
            Some(sub) => Some(sub),
            None => {
                if let Some(idle) = &s.inbox.idle {
                    let _ = idle.send(());
                }
                tokio::select! {
                    _ = s.cancel.cancelled() => None,
                    sub = s.inbox.rx.recv() => sub,
                }
            }
        };
        let Some(sub) = next else { break };
        if s.cancel.is_cancelled() {
            break;
        }
        let mut answers = matches!(sub, Submission::Input(_));
        if answers {
            s.interrupt_seen = s.inbox.interrupter.count();
        }
        match (sub, main.as_mut()) {
            (Submission::Input(text), seat) => last = s.prompt(seat, text).await,
            (Submission::Undo(n), _) => s.undo(n).await,
            (Submission::Control(c), None) => routed::control(&mut s, c),
            (Submission::Compact(focus), Some(seat)) => {
                let turn = s.turns;
                if let Err(end) = s
                    .compact(seat, turn, compact::Trigger::Manual, focus.as_deref())
                    .await
                {
                    last = end;
                }
            }
            (Submission::Compact(focus), None) => {
                if let Err(end) = routed::compact(&mut s, focus.as_deref()).await {
                    last = end;
                }
            }
            (Submission::Resume, None) => match routed::resume(&mut s).await {
                Ok(d) => {
                    last = d;
                    answers = true;
                }
                Err(reason) => (s.emit)(AgentEvent::InputRefused {
                    input: "/resume".into(),
                    reason,
                }),
            },
            (Submission::Routes(RouteSwitch(chain)), Some(seat)) => s.switch_routes(seat, chain),
            (Submission::Clear, Some(seat)) => s.clear(seat),
            (Submission::Routes(_), None) => (s.emit)(AgentEvent::InputRefused {
                input: "/model".into(),
                reason: "a routed session runs its seats on their [routing] routes: set routing.coordinator and routing.executor in the config and resume the session".into(),
            }),
            (Submission::Clear, None) => (s.emit)(AgentEvent::InputRefused {
                input: "/clear".into(),
                reason: "a routed session's two views cannot be cleared: start a new session".into(),
            }),
            (Submission::Resume, Some(_)) => (s.emit)(AgentEvent::InputRefused {
                input: "/resume".into(),
                reason: "this session is not routed: `/resume` continues an interrupted assignment of a routed session (`--routing auto`)".into(),
            }),
            // An ordinary session has no control or assignments; nothing runs while idle.
            (Submission::Control(_) | Submission::Interrupt, Some(_))
            | (Submission::Interrupt, None) => {}
        }
        if s.cancel.is_cancelled() {
            break;
        }
        if answers {
            if let Drive::Ended { reason, text, .. } = &last {
                (s.emit)(AgentEvent::InputCompleted {
                    final_message: text.clone(),
                    reason: *reason,
                });
            }
        }
    }
    if s.cancel.is_cancelled() {
        last = cancelled(last);
    }
    if let Some(seat) = main {
        s.finished_routes.extend(seat.used);
    }
    if let Some(r) = s.routed.take() {
        s.finished_routes.extend(r.into_routes());
    }
    s.finish(last)
}

impl Running<'_> {
    /// The summary of a session that ended with `last`, and `session.completed`.
    fn finish(&mut self, last: Drive) -> RunSummary {
        let (reason, final_message, error) = match last {
            Drive::Ended {
                reason,
                text,
                error,
            } => (reason, text, error),
            Drive::Returned | Drive::Interrupted => (None, String::new(), None),
        };
        let routes = std::mem::take(&mut self.finished_routes);
        let summary = RunSummary {
            outcome: reason.map_or(Outcome::Completed, EndReason::outcome),
            reason,
            final_message,
            turns: self.turns,
            usage: self.usage,
            cost_usd: total_cost(&routes),
            error,
            routes,
        };
        (self.emit)(AgentEvent::SessionCompleted {
            outcome: summary.outcome,
            reason: summary.reason,
            final_message: summary.final_message.clone(),
            turns: summary.turns,
            usage: summary.usage,
            cost_usd: summary.cost_usd,
            error: summary.error.clone(),
            // Only a session that ran on more than one route lists them.
            routes: if summary.routes.len() > 1 {
                summary.routes.clone()
            } else {
                Vec::new()
            },
        });
        summary
    }

    /// Appends a message to `seat`'s view and to the transcript.
    pub(crate) fn push(&mut self, seat: &mut Seat, mut m: Message) {
        if let Some(r) = self.routed.as_mut() {
            if let (Some(reference), Message::Tool { call_id, .. }) = (r.observe(seat, &mut m), &m)
            {
                (self.emit)(AgentEvent::EvidenceReferenced {
                    call_id: call_id.clone(),
                    reference,
                });
            }
        }
        if let Some(s) = self.store.as_mut() {
            if let Err(e) = s.append_to(seat.tag(), &m) {
                tracing::warn!("could not append to the transcript: {e}");
            }
        }
        seat.messages.push(m);
    }

    /// A submission that arrived while `seat` works, at a safe point between atomic tool calls:
    /// `Some(why)` when the rest of the turn's calls must not run.
    pub(crate) fn poll(&mut self, seat: Option<Profile>, flow: &mut Flow) -> Option<String> {
        let mut inbox = &mut *self.inbox;
        PollState {
            inbox: &mut inbox,
            held: &mut self.held,
        }
        .poll(seat, flow)
    }

    /// Model turns on `seat` until it stops calling tools, its turn limit, an error, cancellation,
    /// or (the Executor) its return or an interruption.
    pub(crate) async fn drive(&mut self, seat: &mut Seat) -> Drive {
        let spec = self.spec;
        let max_turns = spec.max_turns.max(1);
        let mut turn_in_task: u32 = 0;
        let mut nudges = 0;
        loop {
            if self.cancel.is_cancelled() {
                return ended(
                    Some(EndReason::Cancelled),
                    cancelled_message(&seat.last_text),
                );
            }
            turn_in_task += 1;
            self.turns += 1;
            let turn = self.turns;
            // The last turn is the handoff report, whatever the limit: with a limit of 1 it is the
            // only turn (the CLI refuses limits below 2, as such a session cannot do any work).
            let handoff = turn_in_task == max_turns;
            // The Executor's last turn is its own report: it may only `return` (seed 000:387).
            if handoff && routed::must_return(self, seat) {
                let note = routed::limit_note(max_turns);
                routed::set_stopping(
                    self,
                    Some(crate::routing::state::ExecutionEnd::LimitReached),
                );
                let returned = Box::pin(self.return_turn(seat, turn, note)).await;
                routed::set_stopping(self, None);
                return match returned {
                    Ok(true) => Drive::Returned,
                    Ok(false) => ended(Some(EndReason::TurnLimit), seat.last_text.clone()),
                    Err(end) => end,
                };
            }
            if handoff {
                self.push(seat, Message::user(handoff_request(max_turns)));
            }
            // A view that would not fit the route's context window is compacted first.
            if let Err(end) = self.fit(seat, turn).await {
                return end;
            }
            (self.emit)(AgentEvent::TurnStarted { turn });
            let tools = if handoff { Offer::None } else { Offer::All };
            let assistant = match self.take_turn(seat, turn, tools).await {
                Ok(a) => a,
                Err(end) => return end,
            };
            let text = assistant.text();
            if !text.trim().is_empty() {
                seat.last_text = text.clone();
            }
            let calls: Vec<(String, String, String)> = assistant
                .tool_calls()
                .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
                .collect();
            // The handoff turn never runs tools: keep only its text so the transcript stays valid.
            let parts = if handoff {
                assistant
                    .parts
                    .iter()
                    .filter(|p| !matches!(p, AssistantPart::ToolCall { .. }))
                    .cloned()
                    .collect()
            } else {
                assistant.parts.clone()
            };
            self.push(seat, Message::Assistant { parts });
            if handoff {
                return ended(Some(EndReason::TurnLimit), text);
            }
            match assistant.stop_reason {
                StopReason::ToolUse if !calls.is_empty() => {}
                StopReason::MaxTokens => return ended(Some(EndReason::MaxTokens), text),
                StopReason::Refusal => return ended(Some(EndReason::Refused), text),
                StopReason::EndTurn | StopReason::ToolUse | StopReason::Other => {
                    // The Executor's work ends only through `return`: a plain answer is sent back.
                    if routed::must_return(self, seat) && nudges < 2 {
                        nudges += 1;
                        let m = Message::user(routed::RETURN_NUDGE);
                        self.push(seat, m);
                        continue;
                    }
                    return ended(None, text);
                }
            }
            let (results, mut flow) = self.run_calls(seat, &calls, turn).await;
            for m in results {
                self.push(seat, m);
            }
            // The end of a turn's calls is a safe point too.
            if !flow.returned {
                self.poll(routed::acting(self, seat), &mut flow);
                // A `/profile` typed meanwhile takes effect here (seed 003: a safe boundary); the
                // seat goes on only when the new control still gives it the work.
                if self.routed.is_some() {
                    self.take_held_controls(seat, &mut flow);
                }
            }
            if let Some(message) = flow.approval_unavailable.take() {
                return Drive::Ended {
                    reason: Some(EndReason::ApprovalUnavailable),
                    text: message.clone(),
                    error: Some(ErrorInfo {
                        code: ErrorCode::Config,
                        message,
                    }),
                };
            }
            if flow.returned {
                return Drive::Returned;
            }
            if flow.interrupted {
                return Drive::Interrupted;
            }
            if flow.stopped {
                return ended(
                    Some(EndReason::Cancelled),
                    cancelled_message(&seat.last_text),
                );
            }
            // User input that arrived meanwhile joins the conversation here, after the results.
            if routed::acting(self, seat) != Some(Profile::Executor) {
                self.take_held_inputs(seat);
            }
        }
    }

    /// The controls (`/profile`, …) held while the turn's calls ran take effect; the seat goes
    /// on only when the new control still gives it the work (an Executor stopped on its
    /// assignment leaves a report; any other seat stops its task).
    fn take_held_controls(&mut self, seat: &mut Seat, flow: &mut Flow) {
        let mut kept = VecDeque::new();
        while let Some(sub) = self.held.pop_front() {
            match sub {
                Submission::Control(c) => routed::control(self, c),
                other => kept.push_back(other),
            }
        }
        self.held = kept;
        if !routed::keeps_working(self, seat) {
            if seat.profile == Some(Profile::Executor) && routed::executing(self) {
                flow.interrupted = true;
            } else {
                flow.stopped = true;
            }
        }
    }

    /// The user's input held while the turn's calls ran joins the conversation.
    fn take_held_inputs(&mut self, seat: &mut Seat) {
        let mut kept = VecDeque::new();
        while let Some(sub) = self.held.pop_front() {
            match sub {
                Submission::Input(text) => {
                    let m = routed::user_message(self, seat, text);
                    self.push(seat, m);
                }
                other => kept.push_back(other),
            }
        }
        self.held = kept;
    }

    /// The Executor's one last turn, to write its own report (after a stop or at its turn
    /// limit, `note` says which): only its `return` calls run; any other call of the turn is
    /// dropped unrun. `Ok(true)` when its report went up.
    pub(crate) async fn return_turn(
        &mut self,
        seat: &mut Seat,
        turn: u32,
        note: String,
    ) -> Result<bool, Drive> {
        self.push(seat, Message::user(note));
        (self.emit)(AgentEvent::TurnStarted { turn });
        let assistant = self.take_turn(seat, turn, Offer::ReturnOnly).await?;
        let text = assistant.text();
        if !text.trim().is_empty() {
            seat.last_text = text;
        }
        let parts: Vec<AssistantPart> = assistant
            .parts
            .iter()
            .filter(|p| !matches!(p, AssistantPart::ToolCall { name, .. } if name != "return"))
            .cloned()
            .collect();
        let calls: Vec<(String, String, String)> = parts
            .iter()
            .filter_map(|p| match p {
                AssistantPart::ToolCall {
                    id,
                    name,
                    arguments,
                    ..
                } => Some((id.clone(), name.clone(), arguments.clone())),
                _ => None,
            })
            .collect();
        self.push(seat, Message::Assistant { parts });
        if calls.is_empty() {
            return Ok(false);
        }
        let (results, flow) = self.run_calls(seat, &calls, turn).await;
        for m in results {
            self.push(seat, m);
        }
        Ok(flow.returned)
    }

    /// One model turn on `seat`'s route, failing over to the next route of its class when the
    /// route fails in a way another may not; the turn's usage counted.
    async fn take_turn(
        &mut self,
        seat: &mut Seat,
        turn: u32,
        offer: Offer,
    ) -> Result<AssistantTurn, Drive> {
        let sent = seat.messages.len();
        let spec = self.spec;
        let (system, tools, messages) = match (&seat.ordinary, routed::ordinary(self)) {
            (Some((system, tools)), true) => (
                system.clone(),
                tools.clone(),
                routed::without_refs(&seat.messages),
            ),
            _ => (
                seat.system.clone(),
                seat.specs.clone(),
                seat.messages.clone(),
            ),
        };
        let mut request = ModelRequest {
            model: seat.chain[seat.active].route.model.clone(),
            system,
            messages,
            tools,
            thinking: seat.chain[seat.active].route.thinking,
            max_output_tokens: seat.chain[seat.active].max_output_tokens,
            tools_disabled: offer == Offer::None,
            cache_key: Some(match seat.tag() {
                Some(t) => format!("{}-{t}", spec.session_id),
                None => spec.session_id.clone(),
            }),
        };
        // No tool of this turn has run yet: tools run only after a complete turn.
        let (result, open_items) = loop {
            let current = &seat.chain[seat.active];
            aim(&mut request, current);
            // An ordinary session's streaming turn stops at once when the front end interrupts
            // (nothing of the turn has run: tools run only after a complete turn); a routed one
            // stops at its safe points, where the Executor leaves its report.
            let interrupter = (self.routed.is_none()).then(|| self.inbox.interrupter.clone());
            let seen = self.interrupt_seen;
            let (r, open) = {
                let emit = &mut *self.emit;
                let mut streaming = StreamingItems::new(&mut self.ids);
                let mut on_progress =
                    |p: baton_model::retry::TurnProgress<'_>| streaming.progress(turn, p, emit);
                let turn_future = run_turn(
                    current.provider.as_ref(),
                    &request,
                    &spec.retry,
                    self.cancel,
                    &mut on_progress,
                );
                let r = match &interrupter {
                    Some(i) => tokio::select! {
                        r = turn_future => Some(r),
                        _ = i.after(seen) => None,
                    },
                    None => Some(turn_future.await),
                };
                (r, streaming.open)
            };
            let Some(r) = r else {
                close_open_items(open, ItemStatus::Failed, self.emit);
                return Err(ended(
                    Some(EndReason::Cancelled),
                    cancelled_message(&seat.last_text),
                ));
            };
            match (r, seat.chain.get(seat.active + 1)) {
                (Err(e), Some(_)) if e.fails_over() => {
                    close_open_items(open, ItemStatus::Failed, self.emit);
                    self.fail_over(seat, turn, &e);
                }
                (r, _) => break (r, open),
            }
        };
        let assistant = match result {
            Ok(t) => t,
            Err(e) => {
                close_open_items(open_items, ItemStatus::Failed, self.emit);
                // Only a cancellation has no error code: it ends the session as `cancelled`.
                let Some(code) = e.code() else {
                    return Err(ended(
                        Some(EndReason::Cancelled),
                        cancelled_message(&seat.last_text),
                    ));
                };
                let error = ErrorInfo {
                    code,
                    message: e.to_string(),
                };
                (self.emit)(AgentEvent::TurnFailed {
                    turn,
                    error: error.clone(),
                });
                return Err(Drive::Ended {
                    reason: Some(EndReason::ModelError),
                    text: e.to_string(),
                    error: Some(error),
                });
            }
        };
        close_open_items(open_items, ItemStatus::Completed, self.emit);
        self.usage.add(&assistant.usage);
        seat.fit = compact::Fit {
            last_input: assistant.usage.input_tokens,
            counted: Some(sent),
        };
        // Each turn is priced at the route that ran it.
        let turn_cost = cost(
            &spec.prices,
            &seat.chain[seat.active].route,
            &assistant.usage,
        );
        if let Some(r) = seat.used.last_mut() {
            r.turns += 1;
            r.usage.add(&assistant.usage);
            r.cost_usd = r.cost_usd.zip(turn_cost).map(|(a, b)| a + b);
        }
        (self.emit)(AgentEvent::TurnCompleted {
            turn,
            usage: assistant.usage,
            cost_usd: turn_cost,
        });
        Ok(assistant)
    }

    /// The seat's route failed in a way the next route of its class may not: the turn goes on
    /// there, said (`turn.route_changed`) and, in an ordinary session, recorded in the
    /// transcript (a routed session's seats find their routes again from the config).
    fn fail_over(&mut self, seat: &mut Seat, turn: u32, e: &baton_model::ModelError) {
        let from = seat.chain[seat.active].route.to_string();
        let next = seat.chain[seat.active + 1].route.clone();
        let to = next.to_string();
        tracing::info!(%from, %to, %e, "failing over to the next route of the class");
        (self.emit)(AgentEvent::TurnRouteChanged {
            turn,
            from,
            to: to.clone(),
            error: ErrorInfo {
                code: e.code().unwrap_or(ErrorCode::ProviderError),
                message: e.to_string(),
            },
        });
        if let (Some(s), None) = (self.store.as_mut(), seat.profile) {
            if let Err(e) = s.route_changed(&to) {
                tracing::warn!("could not record the route change in the transcript: {e}");
            }
        }
        seat.used.push(RouteUsage {
            seat: seat.tag().map(str::to_string),
            ..route_usage(&self.spec.prices, &next)
        });
        seat.active += 1;
    }

    /// Runs a turn's tool calls in order. An ordinary seat runs them as the agent always has; a
    /// routed seat's routing tools go to the host and its environment tools are checked against
    /// the routing rules first (`routed.rs`).
    async fn run_calls(
        &mut self,
        seat: &mut Seat,
        calls: &[(String, String, String)],
        turn: u32,
    ) -> (Vec<Message>, Flow) {
        if self.routed.is_some() {
            return routed::run_calls(self, seat, calls, turn).await;
        }
        let mut flow = Flow::default();
        let results = self.run_environment(seat, calls, &mut flow).await;
        (results, flow)
    }

    /// Runs environment tool calls of `seat` (all allowed), checking the inbox between atomic
    /// calls.
    pub(crate) async fn run_environment(
        &mut self,
        seat: &Seat,
        calls: &[(String, String, String)],
        flow: &mut Flow,
    ) -> Vec<Message> {
        self.checkpoint_before_writes(seat, calls).await;
        let profile = routed::acting(self, seat);
        let spec = self.spec;
        // The inbox is looked at through a raw split of `self`: the tool runner borrows the ids
        // and the event sink, the stop check the inbox and the held queue.
        let Running {
            ids,
            emit,
            inbox,
            held,
            ctx,
            always_approved,
            interrupt_seen,
            ..
        } = self;
        let approver = inbox.approver.clone();
        // An interrupt (Esc, `/interrupt`) stops the running call at once: its command's process
        // group is killed and the call returns what it had done, the same for every front end.
        let interrupter = inbox.interrupter.clone();
        let mut call_ctx = ctx.clone();
        call_ctx.cancel = ctx.cancel.child_token();
        let mut approvals = crate::turn::Approvals {
            policy: spec.approval,
            switch: inbox.approval.clone(),
            approver,
            always: always_approved,
            unavailable: None,
        };
        let mut poll = |flow: &mut Flow| {
            let mut probe = PollState { inbox, held };
            probe.poll(profile, flow)
        };
        let mut stop = || poll(flow);
        let toolbox = Toolbox {
            heartbeat: spec.heartbeat,
            offered: &seat.offered,
            role: &spec.role.meta.name,
            ctx: &call_ctx,
        };
        let tools = run_tools(toolbox, &mut approvals, calls, ids, &mut **emit, &mut stop);
        let results = interrupter
            .cancelling(*interrupt_seen, &call_ctx.cancel, tools)
            .await;
        flow.approval_unavailable = approvals.unavailable;
        results
    }
}

fn ended(reason: Option<EndReason>, text: String) -> Drive {
    Drive::Ended {
        reason,
        text,
        error: None,
    }
}
