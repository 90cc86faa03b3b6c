//! The agent loop: model turns until the model stops calling tools, the turn limit, or cancellation.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use baton_model::retry::{run_turn, RetryPolicy, TurnProgress};
use baton_model::routes::cost;
use baton_model::{AssistantTurn, ModelRequest, Provider};
use baton_protocol::config::Price;
use baton_protocol::role::RoleSpec;
use baton_protocol::{
    AgentEvent, AssistantPart, EndReason, ErrorCode, ErrorInfo, ItemStatus, Message, Outcome,
    Route, RouteUsage, SandboxInfo, StopReason, ToolSpec, Usage, PROTOCOL_VERSION,
};
use tokio_util::sync::CancellationToken;

use crate::session::SessionStore;
use crate::tools::{Tool, ToolContext};
use crate::turn::{
    aim, cancelled_message, close_open_items, route_usage, run_tools, total_cost, ItemIds,
    StreamingItems,
};

/// Default turn limit, the last turn reserved for the handoff report.
pub const DEFAULT_MAX_TURNS: u32 = 50;
/// Largest context file added to the system prompt.
const CONTEXT_FILE_CAP: usize = 64 * 1024;

/// The sections every handoff report has, in order.
pub const HANDOFF_SECTIONS: [&str; 6] = [
    "Status",
    "Outcome",
    "Evidence",
    "Blocker",
    "Risk",
    "Suggested next action",
];

/// Everything one agent run needs.
pub struct AgentSpec {
    pub session_id: String,
    pub role: RoleSpec,
    pub route: Route,
    pub provider: Arc<dyn Provider>,
    pub retry: RetryPolicy,
    pub max_turns: u32,
    pub max_output_tokens: Option<u32>,
    /// Workspace root: tools may only touch files under it.
    pub root: PathBuf,
    pub cwd: PathBuf,
    pub bash_timeout: Duration,
    /// What `bash` commands do not get of baton's environment.
    pub env_filter: baton_tool::EnvFilter,
    /// How `bash` commands are confined.
    pub sandbox: baton_tool::SandboxPolicy,
    /// The session's temp dir (`TMPDIR` of `bash` commands, writable in the sandbox).
    pub tmp_dir: Option<PathBuf>,
    /// File names looked up in `root` and added to the system prompt.
    pub context_files: Vec<String>,
    pub prices: BTreeMap<String, Price>,
    /// Every tool the host has; the role's `tools` list picks which are offered.
    pub tools: Vec<Arc<dyn Tool>>,
    /// Tools the host adds in a main session (delegation). The role's `tools` list picks which of
    /// them are offered too: it is the only authority on what a session may call.
    pub host_tools: Vec<Arc<dyn Tool>>,
    /// Sections appended to the system prompt (the main-side delegation policy).
    pub extra_instructions: Vec<String>,
    /// How often running tool calls are reported again (`item.updated`) while they run.
    pub heartbeat: Duration,
    /// Where the session goes, in order, when its route fails in a way another route may not
    /// ([`baton_model::ModelError::fails_over`]): the other usable routes of its model class.
    /// Empty for a route given explicitly.
    pub fallbacks: Vec<Fallback>,
}

/// A route a session may continue on when the one it runs on fails over.
#[derive(Clone)]
pub struct Fallback {
    pub route: Route,
    pub provider: Arc<dyn Provider>,
    /// The output token limit of the route's provider.
    pub max_output_tokens: Option<u32>,
}

/// Default interval of `item.updated` heartbeats for running tool calls.
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(30);

/// What a run ended with.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    pub outcome: Outcome,
    /// Why the run ended without a plain answer; `None` exactly when `outcome` is `Completed`.
    pub reason: Option<EndReason>,
    pub final_message: String,
    pub turns: u32,
    pub usage: Usage,
    pub cost_usd: Option<f64>,
    pub error: Option<ErrorInfo>,
    /// Every route the session ran on, in order, with what each did: one, unless it failed over.
    pub routes: Vec<RouteUsage>,
}

/// Builds the system prompt: role instructions, the environment, and project context files.
pub fn system_prompt(spec: &AgentSpec, offered: &[String]) -> String {
    let mut s = String::new();
    s.push_str(spec.role.body.trim());
    s.push_str("\n\n# Environment\n");
    s.push_str(&format!(
        "- Working directory: {}\n- Workspace root (files outside it cannot be touched): {}\n",
        spec.cwd.display(),
        spec.root.display()
    ));
    if offered.is_empty() {
        s.push_str("- You have no tools in this session: answer from what you are given.\n");
    } else {
        s.push_str(&format!("- Tools available: {}\n", offered.join(", ")));
    }
    s.push_str(&format!(
        "- You have at most {} model turns. If you run out, you will be asked for a handoff report.\n",
        spec.max_turns
    ));
    for section in &spec.extra_instructions {
        s.push('\n');
        s.push_str(section.trim());
        s.push('\n');
    }
    for name in &spec.context_files {
        let path = spec.root.join(name);
        if let Ok(text) = std::fs::read_to_string(&path) {
            let text = truncate(&text, CONTEXT_FILE_CAP);
            s.push_str(&format!(
                "\n# Project context from {name}\n\n{}\n",
                text.trim()
            ));
        }
    }
    s
}

/// At most `cap` bytes of `text`, from its start, with the one omission marker.
fn truncate(text: &str, cap: usize) -> String {
    baton_text::truncate(text, cap, baton_text::Keep::Head).into_owned()
}

fn handoff_request(max_turns: u32) -> String {
    format!(
        "You have reached the turn limit ({max_turns} turns). Do not call any tools. Write a handoff report \
         for whoever continues this work, with exactly these sections as headings: {}. Status is one of \
         done, partial or blocked; Evidence lists what you ran or read that supports the outcome.",
        HANDOFF_SECTIONS.join(", ")
    )
}

/// Runs the loop over `messages` (an earlier transcript, possibly empty) plus a new user `task`.
/// Events go to `emit` in order; messages are appended to `store` as they happen.
pub async fn run(
    spec: &AgentSpec,
    mut messages: Vec<Message>,
    task: String,
    resumed: bool,
    store: &mut Option<SessionStore>,
    cancel: &CancellationToken,
    emit: &mut (dyn FnMut(AgentEvent) + Send),
) -> RunSummary {
    let offered: Vec<Arc<dyn Tool>> = spec
        .tools
        .iter()
        .chain(spec.host_tools.iter())
        .filter(|t| spec.role.meta.tools.iter().any(|n| n == t.name()))
        .cloned()
        .collect();
    let offered_names: Vec<String> = offered.iter().map(|t| t.name().to_string()).collect();
    let tool_specs: Vec<ToolSpec> = offered.iter().map(|t| t.spec()).collect();
    let system = system_prompt(spec, &offered_names);
    let ctx = ToolContext {
        root: spec.root.clone(),
        cwd: spec.cwd.clone(),
        bash_timeout: spec.bash_timeout,
        cancel: cancel.clone(),
        env_filter: spec.env_filter.clone(),
        sandbox: spec.sandbox.clone(),
        tmp_dir: spec.tmp_dir.clone(),
    };

    emit(AgentEvent::SessionStarted {
        protocol_version: PROTOCOL_VERSION,
        session_id: spec.session_id.clone(),
        role: spec.role.meta.name.clone(),
        model: spec.route.to_string(),
        cwd: spec.cwd.display().to_string(),
        resumed,
        sandbox: Some(SandboxInfo {
            mode: spec.sandbox.mode,
            writable: spec
                .sandbox
                .writable(&spec.root, spec.tmp_dir.as_deref())
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
            network: !spec.sandbox.is_confined() || spec.sandbox.network,
        }),
    });

    let mut ids = ItemIds::default();
    let mut usage = Usage::default();
    // The routes the session may run on, its own first; `active` is the one it runs on now and
    // `used` what each route it ran on did.
    let chain: Vec<Fallback> = std::iter::once(Fallback {
        route: spec.route.clone(),
        provider: spec.provider.clone(),
        max_output_tokens: spec.max_output_tokens,
    })
    .chain(spec.fallbacks.iter().cloned())
    .collect();
    let mut active = 0;
    let mut used = vec![route_usage(&spec.prices, &spec.route)];
    let mut last_text = String::new();
    let push = |messages: &mut Vec<Message>, store: &mut Option<SessionStore>, m: Message| {
        if let Some(s) = store.as_mut() {
            if let Err(e) = s.append(&m) {
                tracing::warn!("could not append to the transcript: {e}");
            }
        }
        messages.push(m);
    };
    push(&mut messages, store, Message::user(task));

    let max_turns = spec.max_turns.max(1);
    let mut turn: u32 = 0;
    // The cost and the routes are filled in after the loop, from `used`.
    let finish =
        |reason: Option<EndReason>, final_message: String, turns, usage: Usage, error| RunSummary {
            outcome: reason.map_or(Outcome::Completed, EndReason::outcome),
            reason,
            final_message,
            turns,
            usage,
            cost_usd: None,
            error,
            routes: Vec::new(),
        };
    let mut summary = loop {
        if cancel.is_cancelled() {
            break finish(
                Some(EndReason::Cancelled),
                cancelled_message(&last_text),
                turn,
                usage,
                None,
            );
        }
        turn += 1;
        // The last turn is the handoff report, whatever the limit: with a limit of 1 it is the
        // only turn (the CLI refuses limits below 2, as such a session cannot do any work).
        let handoff = turn == max_turns;
        if handoff {
            push(
                &mut messages,
                store,
                Message::user(handoff_request(max_turns)),
            );
        }
        emit(AgentEvent::TurnStarted { turn });
        let mut request = ModelRequest {
            model: spec.route.model.clone(),
            system: system.clone(),
            messages: messages.clone(),
            tools: tool_specs.clone(),
            thinking: spec.route.thinking,
            max_output_tokens: spec.max_output_tokens,
            tools_disabled: handoff,
            cache_key: Some(spec.session_id.clone()),
        };
        // A failure that another route may not have moves the session to the next route of its
        // class for good, and the turn starts over there. No tool of this turn has run yet:
        // tools run only after a complete turn.
        let (result, open_items) = loop {
            let current = &chain[active];
            aim(&mut request, current);
            let (r, open) = {
                let mut streaming = StreamingItems::new(&mut ids);
                let mut on_progress = |p: TurnProgress<'_>| streaming.progress(turn, p, emit);
                let r = run_turn(
                    current.provider.as_ref(),
                    &request,
                    &spec.retry,
                    cancel,
                    &mut on_progress,
                )
                .await;
                (r, streaming.open)
            };
            match (r, chain.get(active + 1)) {
                (Err(e), Some(next)) if e.fails_over() => {
                    close_open_items(open, ItemStatus::Failed, emit);
                    let to = next.route.to_string();
                    tracing::info!(from = %current.route, %to, %e, "failing over to the next route of the class");
                    emit(AgentEvent::TurnRouteChanged {
                        turn,
                        from: current.route.to_string(),
                        to: to.clone(),
                        error: ErrorInfo {
                            code: e.code().unwrap_or(ErrorCode::ProviderError),
                            message: e.to_string(),
                        },
                    });
                    if let Some(s) = store.as_mut() {
                        if let Err(e) = s.route_changed(&to) {
                            tracing::warn!(
                                "could not record the route change in the transcript: {e}"
                            );
                        }
                    }
                    used.push(route_usage(&spec.prices, &next.route));
                    active += 1;
                }
                (r, _) => break (r, open),
            }
        };
        let assistant: AssistantTurn = match result {
            Ok(t) => t,
            Err(e) => {
                close_open_items(open_items, ItemStatus::Failed, emit);
                // Only a cancellation has no error code: it ends the session as `cancelled`.
                let Some(code) = e.code() else {
                    break finish(
                        Some(EndReason::Cancelled),
                        cancelled_message(&last_text),
                        turn,
                        usage,
                        None,
                    );
                };
                let error = ErrorInfo {
                    code,
                    message: e.to_string(),
                };
                emit(AgentEvent::TurnFailed {
                    turn,
                    error: error.clone(),
                });
                break finish(
                    Some(EndReason::ModelError),
                    e.to_string(),
                    turn,
                    usage,
                    Some(error),
                );
            }
        };
        close_open_items(open_items, ItemStatus::Completed, emit);
        usage.add(&assistant.usage);
        // Each turn is priced at the route that ran it.
        let turn_cost = cost(&spec.prices, &chain[active].route, &assistant.usage);
        if let Some(r) = used.last_mut() {
            r.turns += 1;
            r.usage.add(&assistant.usage);
            r.cost_usd = r.cost_usd.zip(turn_cost).map(|(a, b)| a + b);
        }
        emit(AgentEvent::TurnCompleted {
            turn,
            usage: assistant.usage,
            cost_usd: turn_cost,
        });
        let text = assistant.text();
        if !text.trim().is_empty() {
            last_text = text.clone();
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
        push(&mut messages, store, Message::Assistant { parts });
        if handoff {
            break finish(Some(EndReason::TurnLimit), text, turn, usage, None);
        }
        match assistant.stop_reason {
            StopReason::ToolUse if !calls.is_empty() => {}
            StopReason::MaxTokens => {
                break finish(Some(EndReason::MaxTokens), text, turn, usage, None)
            }
            StopReason::Refusal => break finish(Some(EndReason::Refused), text, turn, usage, None),
            StopReason::EndTurn | StopReason::ToolUse | StopReason::Other => {
                break finish(None, text, turn, usage, None)
            }
        }
        let results = run_tools(
            spec.heartbeat,
            &calls,
            &offered,
            &spec.role.meta.name,
            &ctx,
            &mut ids,
            emit,
        )
        .await;
        for m in results {
            push(&mut messages, store, m);
        }
    };
    summary.cost_usd = total_cost(&used);
    summary.routes = used;
    emit(AgentEvent::SessionCompleted {
        outcome: summary.outcome,
        reason: summary.reason,
        final_message: summary.final_message.clone(),
        turns: summary.turns,
        usage: summary.usage,
        cost_usd: summary.cost_usd,
        error: summary.error.clone(),
        // Only a session that changed routes lists them.
        routes: if summary.routes.len() > 1 {
            summary.routes.clone()
        } else {
            Vec::new()
        },
    });
    summary
}
