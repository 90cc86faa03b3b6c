//! One model turn of a session and the tool calls it makes: the request aimed at a route, the
//! streamed items, the failover bookkeeping of routes and their cost, and the tool runner
//! (read-only calls concurrently, the others in order, with heartbeats).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use baton_model::retry::TurnProgress;
use baton_model::routes::cost;
use baton_model::{ModelRequest, Provider, StreamEvent};
use baton_protocol::config::Price;
use baton_protocol::{
    AgentEvent, ErrorInfo, Item, ItemKind, ItemStatus, Message, Route, RouteUsage, Usage,
};

use crate::tools::{tool_path_hint, Tool, ToolContext, ToolOutput};

/// A route a session may continue on when the one it runs on fails over.
#[derive(Clone)]
pub struct Fallback {
    pub route: Route,
    pub provider: Arc<dyn Provider>,
    /// The output token limit of the route's provider.
    pub max_output_tokens: Option<u32>,
    /// The route's context window in tokens (the model table or `[model_info]`), when known:
    /// the session compacts before a request would not fit.
    pub context_window: Option<u32>,
}

/// Longest tool output copied into an event; the model still sees the whole (bounded) output.
const EVENT_OUTPUT_CAP: usize = 2000;

/// Points a request at `route`: its model, thinking level and output limit.
pub(crate) fn aim(request: &mut ModelRequest, route: &Fallback) {
    request.model = route.route.model.clone();
    request.thinking = route.route.thinking;
    request.max_output_tokens = route.max_output_tokens;
}

/// A route the session starts on, before it has run a turn.
pub(crate) fn route_usage(prices: &BTreeMap<String, Price>, route: &Route) -> RouteUsage {
    RouteUsage {
        model: route.to_string(),
        turns: 0,
        usage: Usage::default(),
        cost_usd: cost(prices, route, &Usage::default()),
        seat: None,
    }
}

/// The cost of a session: the sum of its routes' costs, each turn priced at the route that ran
/// it; `None` when no route has a price, or when one that ran a turn has none (a partial sum
/// would look complete).
pub(crate) fn total_cost(routes: &[RouteUsage]) -> Option<f64> {
    let mut counted = routes
        .iter()
        .filter(|r| r.turns > 0 || r.cost_usd.is_some())
        .peekable();
    counted.peek()?;
    counted.try_fold(0.0, |sum, r| r.cost_usd.map(|c| sum + c))
}

pub(crate) fn cancelled_message(last_text: &str) -> String {
    if last_text.trim().is_empty() {
        "Cancelled before the model answered.".to_string()
    } else {
        format!("Cancelled. Last message before cancellation:\n{last_text}")
    }
}

#[derive(Default)]
pub(crate) struct ItemIds(u64);

impl ItemIds {
    pub(crate) fn next(&mut self) -> String {
        let id = format!("item_{}", self.0);
        self.0 += 1;
        id
    }
}

/// Items opened while a turn streams: agent messages and reasoning, in order.
pub(crate) struct StreamingItems<'a> {
    ids: &'a mut ItemIds,
    pub(crate) open: Vec<(String, ItemKind)>,
    /// Index in `open` of the item that deltas of its kind still extend.
    current: Option<usize>,
}

impl<'a> StreamingItems<'a> {
    pub(crate) fn new(ids: &'a mut ItemIds) -> Self {
        StreamingItems {
            ids,
            open: Vec::new(),
            current: None,
        }
    }

    pub(crate) fn progress(
        &mut self,
        turn: u32,
        p: TurnProgress<'_>,
        emit: &mut (dyn FnMut(AgentEvent) + Send),
    ) {
        match p {
            TurnProgress::Event(StreamEvent::TextDelta { text }) => self.delta(true, text, emit),
            TurnProgress::Event(StreamEvent::ReasoningDelta { text }) => {
                self.delta(false, text, emit)
            }
            // A tool call ends the current text run; text after it is a new item.
            TurnProgress::Event(StreamEvent::ToolCallStart { .. }) => self.current = None,
            TurnProgress::Event(
                StreamEvent::ReasoningSignature { .. }
                | StreamEvent::ToolCallDelta { .. }
                | StreamEvent::ToolCallEnd { .. }
                | StreamEvent::ToolCallData { .. }
                | StreamEvent::Usage { .. }
                | StreamEvent::Stop { .. },
            ) => {}
            TurnProgress::Retrying {
                attempt,
                delay,
                code,
                error,
            } => {
                self.current = None;
                close_open_items(std::mem::take(&mut self.open), ItemStatus::Failed, emit);
                emit(AgentEvent::TurnRetrying {
                    turn,
                    attempt,
                    delay_ms: delay.as_millis() as u64,
                    error: ErrorInfo {
                        code,
                        message: error.to_string(),
                    },
                });
            }
        }
    }

    fn delta(&mut self, is_text: bool, text: &str, emit: &mut (dyn FnMut(AgentEvent) + Send)) {
        let extends = match self.current.and_then(|i| self.open.get(i)) {
            Some((_, ItemKind::AgentMessage { .. })) => is_text,
            Some((_, ItemKind::Reasoning { .. })) => !is_text,
            Some((_, ItemKind::ToolCall { .. })) | None => false,
        };
        if !extends {
            let id = self.ids.next();
            let kind = if is_text {
                ItemKind::AgentMessage {
                    text: String::new(),
                }
            } else {
                ItemKind::Reasoning {
                    text: String::new(),
                }
            };
            emit(AgentEvent::ItemStarted {
                item: Item {
                    id: id.clone(),
                    status: ItemStatus::InProgress,
                    kind: kind.clone(),
                },
            });
            self.open.push((id, kind));
            self.current = Some(self.open.len() - 1);
        }
        if let Some((id, kind)) = self.current.and_then(|i| self.open.get_mut(i)) {
            match kind {
                ItemKind::AgentMessage { text: t } | ItemKind::Reasoning { text: t } => {
                    t.push_str(text)
                }
                ItemKind::ToolCall { .. } => {}
            }
            emit(AgentEvent::ItemDelta {
                item_id: id.clone(),
                delta: text.to_string(),
            });
        }
    }
}

pub(crate) fn close_open_items(
    open: Vec<(String, ItemKind)>,
    status: ItemStatus,
    emit: &mut (dyn FnMut(AgentEvent) + Send),
) {
    for (id, kind) in open {
        emit(AgentEvent::ItemCompleted {
            item: Item { id, status, kind },
        });
    }
}

/// What a seat runs its tools with.
pub(crate) struct Toolbox<'a> {
    /// How often running calls are reported again.
    pub(crate) heartbeat: Duration,
    /// The tools the seat offers; a call of any other is refused.
    pub(crate) offered: &'a [Arc<dyn Tool>],
    /// The role's name, for the refusal.
    pub(crate) role: &'a str,
    pub(crate) ctx: &'a ToolContext,
}

/// The session's approvals as one batch of calls runs: its policy, who answers, the tools
/// approved for the whole session, and (set here) why the session must fail closed.
pub(crate) struct Approvals<'a> {
    /// The session's own policy (`agent.approval`, `--approval`).
    pub(crate) policy: baton_protocol::ApprovalPolicy,
    /// What the front end set while the session runs (Shift+Tab), read at each call.
    pub(crate) switch: crate::approval::ApprovalSwitch,
    pub(crate) approver: Option<Arc<dyn crate::approval::Approver>>,
    pub(crate) always: &'a mut std::collections::BTreeSet<String>,
    pub(crate) unavailable: Option<String>,
}

impl Approvals<'_> {
    /// The policy in force for the next call.
    fn policy(&self) -> baton_protocol::ApprovalPolicy {
        self.switch.get().unwrap_or(self.policy)
    }

    fn needs(&self, tool: &Arc<dyn Tool>) -> bool {
        self.policy().asks(tool.read_only()) && !self.always.contains(tool.name())
    }
}

/// Runs one turn's tool calls: consecutive read-only calls concurrently, others one at a time, in order.
pub(crate) async fn run_tools(
    toolbox: Toolbox<'_>,
    approvals: &mut Approvals<'_>,
    calls: &[(String, String, String)],
    ids: &mut ItemIds,
    emit: &mut (dyn FnMut(AgentEvent) + Send),
    stop: &mut (dyn FnMut() -> Option<String> + Send),
) -> Vec<Message> {
    let Toolbox {
        heartbeat,
        offered,
        role,
        ctx,
    } = toolbox;
    let prepared = prepare(calls, offered, role, ids, emit);

    let mut outputs: Vec<Option<(ToolOutput, ItemStatus)>> =
        prepared.iter().map(|_| None).collect();
    let mut i = 0;
    while i < prepared.len() {
        // Between atomic calls the host may stop the rest (new user input for a working
        // Executor): each call not started gets a result saying why, and nothing of it runs.
        if i > 0 {
            if let Some(why) = stop() {
                let text = format!("not run: {why}");
                decline_all(&prepared[i..], &mut outputs[i..], &text, emit);
                break;
            }
        }
        // A call that needs the user's approval runs alone, once answered.
        if let Ok(tool) = &prepared[i].tool {
            if approvals.needs(tool) {
                let p = &prepared[i];
                if let Some(text) = approval_refusal(p, approvals).await {
                    let out = error_output(text);
                    emit(AgentEvent::ItemCompleted {
                        item: p.item(ItemStatus::Declined, Some(&out)),
                    });
                    outputs[i] = Some((out, ItemStatus::Declined));
                    if approvals.unavailable.is_some() {
                        // Fails closed: nothing after it runs either.
                        decline_all(
                            &prepared[i + 1..],
                            &mut outputs[i + 1..],
                            "not run: the session stopped: an earlier call needed an approval no one could give",
                            emit,
                        );
                        break;
                    }
                    i += 1;
                    continue;
                }
            }
        }
        let batch_end = batch_end(&prepared, i, approvals);
        let results = run_batch(&prepared[i..batch_end], ctx, heartbeat, emit).await;
        for (k, r) in results.into_iter().enumerate() {
            let p = &prepared[i + k];
            emit(AgentEvent::ItemCompleted {
                item: p.item(r.1, Some(&r.0)),
            });
            outputs[i + k] = Some(r);
        }
        i = batch_end;
    }
    prepared
        .into_iter()
        .zip(outputs)
        .map(|(p, o)| {
            let (out, _) =
                o.unwrap_or_else(|| (error_output("not run".into()), ItemStatus::Failed));
            Message::Tool {
                call_id: p.call_id,
                tool: p.name,
                output: out.output,
                is_error: out.is_error,
            }
        })
        .collect()
}

/// A tool call as it will run: its item, arguments and tool, or the refusal it gets instead.
struct Prepared {
    item_id: String,
    call_id: String,
    name: String,
    args: serde_json::Value,
    path: Option<String>,
    tool: Result<Arc<dyn Tool>, ToolOutput>,
}

impl Prepared {
    /// The call's item with `status`, and with its output (and the path the tool reported)
    /// once there is one.
    fn item(&self, status: ItemStatus, out: Option<&ToolOutput>) -> Item {
        let path = out
            .and_then(|o| o.path.clone())
            .or_else(|| self.path.clone());
        tool_item(
            &self.item_id,
            &self.call_id,
            &self.name,
            &self.args,
            &path,
            status,
            out,
        )
    }
}

/// The turn's `calls`, each parsed and matched to a tool of `offered` (or refused), its item
/// announced in progress; the prepared calls, in order.
fn prepare(
    calls: &[(String, String, String)],
    offered: &[Arc<dyn Tool>],
    role: &str,
    ids: &mut ItemIds,
    emit: &mut (dyn FnMut(AgentEvent) + Send),
) -> Vec<Prepared> {
    let offered_names: Vec<&str> = offered.iter().map(|t| t.name()).collect();
    let mut prepared = Vec::new();
    for (call_id, name, raw) in calls {
        let args: Result<serde_json::Value, String> = if raw.trim().is_empty() {
            Ok(serde_json::json!({}))
        } else {
            serde_json::from_str(raw).map_err(|e| e.to_string())
        };
        let item_id = ids.next();
        let (args, tool) = match args {
            Err(e) => (
                serde_json::Value::String(raw.clone()),
                Err(error_output(format!(
                    "the arguments of this `{name}` call are not valid JSON ({e}); call it again with a JSON object"
                ))),
            ),
            Ok(args) => match offered.iter().find(|t| t.name() == name) {
                Some(t) => (args, Ok(t.clone())),
                None => (
                    args,
                    Err(error_output(format!(
                        "tool `{name}` is not available to role `{role}` and was not run; available tools: {}",
                        if offered_names.is_empty() { "none".to_string() } else { offered_names.join(", ") }
                    ))),
                ),
            },
        };
        let p = Prepared {
            item_id,
            call_id: call_id.clone(),
            name: name.clone(),
            path: tool_path_hint(&args),
            args,
            tool,
        };
        emit(AgentEvent::ItemStarted {
            item: p.item(ItemStatus::InProgress, None),
        });
        prepared.push(p);
    }
    prepared
}

/// Declines every call of `calls` with the error `text`, its item completed and its output set.
fn decline_all(
    calls: &[Prepared],
    outputs: &mut [Option<(ToolOutput, ItemStatus)>],
    text: &str,
    emit: &mut (dyn FnMut(AgentEvent) + Send),
) {
    for (p, output) in calls.iter().zip(outputs) {
        let out = error_output(text.to_string());
        emit(AgentEvent::ItemCompleted {
            item: p.item(ItemStatus::Declined, Some(&out)),
        });
        *output = Some((out, ItemStatus::Declined));
    }
}

/// Asks for the approval call `p` needs; `None` when it may run, else why it was not run (with
/// no one to ask, the session is marked to fail closed).
async fn approval_refusal(p: &Prepared, approvals: &mut Approvals<'_>) -> Option<String> {
    match &approvals.approver {
        None => {
            let why = format!(
                "`{}` needs approval (agent.approval = \"{}\") and this session has no one to ask: run it in `baton tui`, or pass --approval never (the sandbox still bounds every command)",
                p.name, approvals.policy()
            );
            approvals.unavailable = Some(why.clone());
            Some(format!("not run: {why}"))
        }
        Some(approver) => {
            let answer = approver
                .ask(baton_protocol::ApprovalRequest {
                    item_id: p.item_id.clone(),
                    tool: p.name.clone(),
                    arguments: p.args.clone(),
                    path: p.path.clone(),
                })
                .await;
            match answer {
                baton_protocol::ApprovalAnswer::Yes => None,
                baton_protocol::ApprovalAnswer::Always => {
                    approvals.always.insert(p.name.clone());
                    None
                }
                baton_protocol::ApprovalAnswer::No { feedback } => {
                    Some(if feedback.trim().is_empty() {
                        "the user declined this call; it was not run".to_string()
                    } else {
                        format!(
                            "the user declined this call; it was not run. The user says: {}",
                            feedback.trim()
                        )
                    })
                }
            }
        }
    }
}

/// The end of the batch that starts at call `i`: the read-only calls that follow it without
/// needing an approval, or `i` alone.
fn batch_end(prepared: &[Prepared], i: usize, approvals: &Approvals<'_>) -> usize {
    let asks_alone = |t: &Arc<dyn Tool>| approvals.needs(t);
    match &prepared[i].tool {
        Ok(t) if t.read_only() && !asks_alone(t) => {
            let mut j = i + 1;
            while j < prepared.len()
                && matches!(&prepared[j].tool, Ok(t) if t.read_only() && !asks_alone(t))
            {
                j += 1;
            }
            j
        }
        Ok(_) | Err(_) => i + 1,
    }
}

/// Runs the calls of `batch` together, a heartbeat every `heartbeat`; each call's output and
/// status, in order.
async fn run_batch(
    batch: &[Prepared],
    ctx: &ToolContext,
    heartbeat: Duration,
    emit: &mut (dyn FnMut(AgentEvent) + Send),
) -> Vec<(ToolOutput, ItemStatus)> {
    let futures = batch.iter().map(|p| async move {
        match &p.tool {
            Ok(tool) => {
                if ctx.cancel.is_cancelled() {
                    (
                        error_output("cancelled before this tool call started".into()),
                        ItemStatus::Failed,
                    )
                } else {
                    let out = tool.run(p.args.clone(), ctx).await;
                    let status = if out.is_error {
                        ItemStatus::Failed
                    } else {
                        ItemStatus::Completed
                    };
                    (out, status)
                }
            }
            Err(refusal) => (refusal.clone(), ItemStatus::Declined),
        }
    });
    // While tools run the model is silent; a heartbeat (`item.updated` for each running call)
    // tells a supervising executor that the session is alive, so its idle timeout measures
    // real silence, not a long build.
    let all = futures::future::join_all(futures);
    tokio::pin!(all);
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + heartbeat, heartbeat);
    loop {
        tokio::select! {
            r = &mut all => break r,
            _ = tick.tick() => {
                for p in batch {
                    emit(AgentEvent::ItemUpdated {
                        item: p.item(ItemStatus::InProgress, None),
                    });
                }
            }
        }
    }
}

pub(crate) fn error_output(message: String) -> ToolOutput {
    ToolOutput {
        output: message,
        is_error: true,
        exit_code: None,
        path: None,
    }
}

pub(crate) fn tool_item(
    id: &str,
    call_id: &str,
    tool: &str,
    args: &serde_json::Value,
    path: &Option<String>,
    status: ItemStatus,
    out: Option<&ToolOutput>,
) -> Item {
    Item {
        id: id.to_string(),
        status,
        kind: ItemKind::ToolCall {
            call_id: call_id.to_string(),
            tool: tool.to_string(),
            arguments: args.clone(),
            path: path.clone(),
            output: out.map(|o| {
                baton_text::truncate(&o.output, EVENT_OUTPUT_CAP, baton_text::Keep::Head)
                    .into_owned()
            }),
            exit_code: out.and_then(|o| o.exit_code),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ran(model: &str, turns: u32, cost_usd: Option<f64>) -> RouteUsage {
        RouteUsage {
            model: model.into(),
            turns,
            usage: Usage::default(),
            cost_usd,
            seat: None,
        }
    }

    #[test]
    fn a_session_costs_the_sum_of_its_routes_only_when_each_that_ran_is_priced() {
        assert_eq!(total_cost(&[ran("a/x", 2, Some(0.5))]), Some(0.5));
        assert_eq!(
            total_cost(&[ran("a/x", 1, Some(0.5)), ran("b/y", 2, Some(0.25))]),
            Some(0.75)
        );
        // A route without a price that ran a turn: the sum would be too low.
        assert_eq!(
            total_cost(&[ran("a/x", 1, Some(0.5)), ran("b/y", 1, None)]),
            None
        );
        // One without a price that ran nothing (it failed at once) does not count.
        assert_eq!(
            total_cost(&[ran("a/x", 0, None), ran("b/y", 1, Some(0.25))]),
            Some(0.25)
        );
        assert_eq!(total_cost(&[ran("a/x", 0, None)]), None);
        assert_eq!(total_cost(&[ran("a/x", 0, Some(0.0))]), Some(0.0));
    }
}
