//! `baton mcp`: baton as an MCP server over stdio, or streamable HTTP with `--http` (`http`)
//! (the official Rust SDK, `rmcp`), in the client's working directory with the project's config
//! and roles.
//!
//! Five tools only read: `route`, `models`, `roles`, `workflow_status` and `flow_status`. Each
//! answers with the same JSON document as the matching `--json` command (`baton route`,
//! `baton models`, `baton roles`, `baton status`, `baton flow status`), built by the same
//! function, as `structuredContent` and as text. `delegate_task` runs a single, parallel or chain
//! delegation in the foreground through the same code as `baton task` and the agent's
//! `delegate_task` tool, and answers with its report; with `background` it starts a background
//! task, which `task_status`, `task_wait` and `task_cancel` follow (`tasks`).
//! `run_workflow` and `workflow_resume` run a workflow as `baton run` and `baton resume` do (on
//! Temporal when the project's `engine.kind` says so: `on_temporal`), and
//! the Flow tools (`flow`) drive a Flow as `baton flow` does, sending their steps as progress
//! notifications; every result is bounded by the project's output cap (`result`).
//! Input schemas are derived from the structs that parse the arguments; bad arguments are tool
//! errors (`isError: true`) naming the field, never protocol errors. Every result goes through
//! the redactor of known provider keys. See docs/mcp.md.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context as _, Result};
use baton_app::documents::{
    DelegateAnswer, ModelsDocument, RolesDocument, RouteDocument, WorkflowOutcome,
    WorkflowStatusAnswer,
};
use baton_app::exit::{AfterWorkBegan as _, Exit};
use baton_app::project::{delegate_env, output_cap, project_context, state_dir};
use baton_exec::delegate::{parse_request, render_report, resolve_roles, run_delegation, Progress};
use baton_exec::types::DEFAULT_OUTPUT_CAP;
use baton_workflow::route::{route, route_as, WorkflowKind};
use baton_workflow::run::{self, Outcome, RunEnv, StartOptions};
use baton_workflow::store::WorkflowStore;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig, SubscribeRequestParams, Tool, UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt as _};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::result::{document_result, text_result};
use crate::runtime::{ProgressForward, SharedExecutor};
use crate::tool::{boxed, input, output, Answer, Call, ToolDef, READ_ONLY, RUNS_AGENTS};

/// How `baton mcp` serves (its flags).
#[derive(Debug, Default)]
pub struct Options {
    /// Directory inside the project whose config, roles and workflows the tools use (default:
    /// the directory the client starts baton in).
    pub cwd: Option<PathBuf>,
    /// Serve streamable HTTP on this address instead of stdio. Any address but loopback needs
    /// `token`.
    pub http: Option<std::net::SocketAddr>,
    /// With `http`: the bearer token every request must carry (`Authorization: Bearer TOKEN`).
    pub token: Option<String>,
    /// The tools offered (`tools/list`) and taken (`tools/call`); `None` is every tool.
    pub tools: Option<Vec<&'static str>>,
}

/// The tools a host needs every day, offered by `--tools core`: run a workflow, see and answer
/// it, delegate, follow a background task, and run, see and continue a Flow.
pub const CORE_TOOLS: [&str; 8] = [
    "run_workflow",
    "workflow_status",
    "workflow_resume",
    "delegate_task",
    "task_status",
    "flow_start",
    "flow_status",
    "flow_continue",
];

/// The tools `spec` names (`--tools`): `all`, `core`, or tool names and `core`, separated by
/// commas. A name that is no tool is an error listing the tools.
pub fn tool_set(spec: &str) -> Result<Option<Vec<&'static str>>, String> {
    let mut chosen: Vec<&'static str> = Vec::new();
    for word in spec.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        match word {
            "all" => return Ok(None),
            "core" => chosen.extend(CORE_TOOLS),
            name => match all().find(|t| t.name == name) {
                Some(t) => chosen.push(t.name),
                None => {
                    let names: Vec<&str> = all().map(|t| t.name).collect();
                    return Err(format!(
                        "--tools: no tool `{name}`: give `all`, `core` or tool names separated by commas, from {}",
                        names.join(", ")
                    ));
                }
            },
        }
    }
    if chosen.is_empty() {
        return Err(
            "--tools is empty: give `all`, `core` or tool names separated by commas".into(),
        );
    }
    // In the order `tools/list` has them, each once.
    Ok(Some(
        all()
            .map(|t| t.name)
            .filter(|n| chosen.contains(n))
            .collect(),
    ))
}

/// What `initialize` tells the client's model about this server.
pub const INSTRUCTIONS: &str = "baton is an orchestration runtime for coding agents. This server \
lets you inspect it in the current project: `route` shows which baton workflow (BUILD, DEBUG, \
PLAN, REVIEW, ORIENT, TRIAGE, CODEBASE-HEALTH) a request would run as and why; `models` lists the \
model classes (fast, balanced, frontier, fav) with their routes and which one resolves now; \
`roles` lists the agent roles baton can delegate to (backend, tools, sandbox); `workflow_status` \
shows the project's workflows or one of them (state, phase, what it waits for, what it spent); \
`flow_status` shows the repository's Flows. These five only read. `delegate_task` hands self-contained tasks to child agents of baton roles \
(one, up to 8 in parallel, or a chain of up to 8; each child its own process, model, tools and \
sandbox; `implementer` works in its own git worktree) and answers with their report when they \
end, or with `background: true` at once with a task id that `task_status`, `task_wait` and \
`task_cancel` take. `run_workflow` runs a whole baton workflow on a request (it changes the \
project) and answers with its brief or the checkpoint it waits on; `workflow_resume` answers a \
checkpoint or continues an interrupted workflow; `flow_start` runs a baton Flow (a list of units, \
each built in its own worktree, validated, reviewed and merged in order); `flow_continue` repairs \
the blocked unit of a paused Flow with guidance, `flow_resume` continues an interrupted Flow, \
`flow_land` lands one unit a failed Flow kept, and `flow_abandon` gives one up. The project's workflows, Flows and background task logs are also \
resources (`baton://workflows/{id}`, `baton://flows/{id}`, `baton://tasks/{id}/log`) to read or \
subscribe to.";

/// `route` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RouteRequest {
    /// The request in the user's words, as it would be given to a workflow.
    request: String,
    /// Take this workflow instead of routing: BUILD, DEBUG, PLAN, REVIEW, ORIENT, TRIAGE or
    /// CODEBASE-HEALTH (any case).
    #[serde(default)]
    workflow: Option<String>,
}

/// `models` and `roles` take no arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArguments {}

/// `workflow_status` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkflowStatusRequest {
    /// One workflow: its id, a unique prefix of one, or `last` for the newest. Without it, every
    /// workflow of the project, newest first.
    #[serde(default)]
    id: Option<String>,
}

/// `run_workflow` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunWorkflowRequest {
    /// What to do, in the user's words: routed to BUILD, DEBUG, PLAN, REVIEW or ORIENT.
    request: String,
    /// Run this workflow instead of routing: BUILD, DEBUG, PLAN, REVIEW, ORIENT, TRIAGE or
    /// CODEBASE-HEALTH (any case).
    #[serde(default)]
    workflow: Option<String>,
    /// BUILD: the reduced graph (builder, verifier, memory) for a one-file change.
    #[serde(default)]
    trivial: bool,
    /// BUILD the phases of this plan file (a path in the project) one at a time, as `baton run
    /// --plan` does; refused with every problem named when the plan fails its checks.
    #[serde(default)]
    plan: Option<String>,
    /// Stop at a checkpoint before a dispatch that would take the spend past this many US
    /// dollars.
    #[serde(default)]
    budget_usd: Option<f64>,
    /// The same for tokens (input plus output).
    #[serde(default)]
    budget_tokens: Option<u64>,
    /// DEBUG: groups of failures, each `DOMAIN=FILE[,FILE...]`, one scoped investigator each
    /// (`baton run --debug-group`); two to eight, local engine only.
    #[serde(default)]
    debug_groups: Vec<String>,
}

/// `workflow_resume` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkflowResumeRequest {
    /// The workflow: its id or a unique prefix of one (default: the only one not finished;
    /// with several, name it).
    #[serde(default)]
    id: Option<String>,
    /// The answer to the checkpoint the workflow waits on (one of its options, or guidance after
    /// a failure), kept word for word.
    #[serde(default)]
    answer: Option<String>,
    /// A new spending limit in US dollars.
    #[serde(default)]
    budget_usd: Option<f64>,
    /// A new spending limit in tokens.
    #[serde(default)]
    budget_tokens: Option<u64>,
}

/// The server: the working directory whose project each call reads (config and roles are read
/// again on every call, so edits apply without a restart), and the executor every delegation of
/// this server shares (its concurrency cap holds across calls), made at the first one.
#[derive(Clone)]
struct BatonServer {
    cwd: PathBuf,
    /// The tools this server offers (`--tools`); `None` is every tool.
    offered: Option<Arc<[&'static str]>>,
    executor: SharedExecutor,
    /// This session's resource subscriptions (`resources`).
    resources: crate::resources::Subscriptions,
}

/// The tools of this module; [`all`] adds the Flow and background-task tools.
pub const TOOLS: [ToolDef; 7] = [
    ToolDef {
        name: "route",
        description: "Show which baton workflow a request would run as (BUILD, DEBUG, PLAN, \
             REVIEW, ORIENT; TRIAGE and CODEBASE-HEALTH only when named in `workflow`), the \
             signals found in the request and the rule that decided. Reads nothing, runs \
             nothing, calls no model. Same answer as `baton route --json`.",
        input: input::<RouteRequest>,
        output: output::<RouteDocument>,
        hints: READ_ONLY,
        handler: |call, args| boxed(async move { route_tool(&call, args) }),
    },
    ToolDef {
        name: "models",
        description: "List baton's model classes for this project: for each class its routes \
             (provider/model[:thinking]), whether each is usable now and why not, and the one \
             that resolves now; also the config files read and the default class. Same answer \
             as `baton models --json`.",
        input: input::<NoArguments>,
        output: output::<ModelsDocument>,
        hints: READ_ONLY,
        handler: |call, args| {
            boxed(async move {
                let _: NoArguments = call.parse(args)?;
                let ctx = call.project()?;
                let doc = baton_app::info::models_json(&ctx);
                Ok(document_result(&doc, true, output_cap(&ctx)))
            })
        },
    },
    ToolDef {
        name: "roles",
        description: "List the agent roles baton can delegate to in this project (built-in, user \
             and project role files, later overriding earlier): name, description, model class, \
             tools, backend, isolation, sandbox and source; and the role files that are invalid. \
             Same answer as `baton roles --json`.",
        input: input::<NoArguments>,
        output: output::<RolesDocument>,
        hints: READ_ONLY,
        handler: |call, args| {
            boxed(async move {
                let _: NoArguments = call.parse(args)?;
                let ctx = call.project()?;
                let doc = baton_app::info::roles_json(&ctx);
                Ok(document_result(&doc, true, output_cap(&ctx)))
            })
        },
    },
    ToolDef {
        name: "workflow_status",
        description: "Show this project's baton workflows, newest first (id, type, state, phase, \
             what each waits for, what it spent, the request), or with `id` one of them. Read \
             from the durable records; never takes a workflow's lock. Without `id`, same answer \
             as `baton status --json`.",
        input: input::<WorkflowStatusRequest>,
        output: output::<WorkflowStatusAnswer>,
        hints: READ_ONLY,
        handler: |call, args| {
            boxed(async move {
                let req: WorkflowStatusRequest = call.parse(args)?;
                let ctx = call.project()?;
                let doc = baton_app::workflow::status_json(&ctx, req.id.as_deref())
                    .map_err(|e| format!("{}: `id`: {e}", call.tool))?;
                Ok(document_result(&doc, true, output_cap(&ctx)))
            })
        },
    },
    ToolDef {
        name: "delegate_task",
        description: "Delegate bounded work to child agents of baton roles (`roles` lists them: \
             e.g. `scout` explores and reports, `implementer` changes code in its own git \
             worktree and commits there, `reviewer` judges a change without touching it). Give \
             exactly one shape: single (`role`, `name`, `task` at the top level); parallel \
             (`tasks`: up to 8 independent entries started together); or chain (`chain`: up to \
             8 steps, `{previous}` in a step's task replaced by the previous step's answer). A \
             child sees only its `task`: give the goal, the relevant files, the constraints and \
             what to report. Waits for the children to end and answers with the report (each \
             entry's status, answer, model, usage, worktree). Set `model_class` only to change \
             the role's default; `model` and `thinking` only when the user asked for them. With \
             `background: true` it answers at once with a task id \
             (`{\"type\": \"task.background\", \"id\": …}`) for `task_status`, `task_wait` \
             and `task_cancel`.",
        input: delegate_input,
        output: output::<DelegateAnswer>,
        hints: RUNS_AGENTS,
        handler: |call, args| boxed(async move { delegate(&call, args).await }),
    },
    ToolDef {
        name: "run_workflow",
        description: "Run a baton workflow in this project, as `baton run` does: the request is \
             routed (BUILD, DEBUG, PLAN, REVIEW, ORIENT; `workflow` picks one instead), then the \
             workflow's agents run phase by phase until it completes with a verified brief, \
             stops, fails, or waits at a checkpoint (a question with options). BUILD works in \
             the project's own working tree and changes its files (no isolated worktree is made \
             over MCP; the choice may become an argument later). Answers when the workflow \
             returns, which can take many minutes: the text is the brief, or the checkpoint's \
             question and options, or the failure; the structured answer is that of \
             `baton run --json` (`type` workflow.completed, workflow.checkpoint, \
             workflow.failed, workflow.stopped or workflow.interrupted, `id`, and `brief` or \
             `checkpoint`; ORIENT answers inline as workflow.answer). Continue a checkpoint, a \
             failure or an interruption with `workflow_resume`. Sends each step as a progress \
             notification when the call carries a progress token; cancelling the call stops \
             the workflow resumably.",
        input: input::<RunWorkflowRequest>,
        output: output::<WorkflowOutcome>,
        hints: RUNS_AGENTS,
        handler: |call, args| boxed(async move { run_workflow(&call, args).await }),
    },
    ToolDef {
        name: "workflow_resume",
        description: "Continue a baton workflow, as `baton resume` does: after an interruption, \
             or with `answer`, the answer to the checkpoint it waits on (one of the options it \
             gave) or guidance for a retry after a failure (`abort` ends it). `id` is a workflow \
             id or a unique prefix (default: the only one not finished). Answers like \
             `run_workflow`. An answer the checkpoint does not take is a tool error naming the \
             options.",
        input: input::<WorkflowResumeRequest>,
        output: output::<WorkflowOutcome>,
        hints: RUNS_AGENTS,
        handler: |call, args| boxed(async move { workflow_resume(&call, args).await }),
    },
];

/// Every tool this server offers, each declared once.
pub fn all() -> impl Iterator<Item = &'static ToolDef> {
    TOOLS
        .iter()
        .chain(crate::flow::TOOLS.iter())
        .chain(crate::tasks::TOOLS.iter())
        .chain(crate::workers::TOOLS.iter())
}

/// Every tool as `tools/list` shows it.
pub fn tools() -> Result<Vec<Tool>, ErrorData> {
    all().map(ToolDef::tool).collect()
}

impl BatonServer {
    /// The tools this server offers, in `tools/list`'s order.
    fn offered(&self) -> impl Iterator<Item = &'static ToolDef> + '_ {
        all().filter(|t| self.offered.as_ref().is_none_or(|o| o.contains(&t.name)))
    }
}

/// `delegate_task`'s input schema is the agent tool's (built from
/// `baton_exec::delegate::TaskEntry`, the struct each entry parses into) with `background`.
fn delegate_input() -> Result<Arc<JsonObject>, String> {
    match baton_exec::tool::parameters_schema(true) {
        Value::Object(o) => Ok(Arc::new(o)),
        _ => Err("delegate_task: schema is not an object".to_string()),
    }
}

fn failure(message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(baton_text::redact::redact(
        message,
    ))])
}

/// `route`: reads no config.
fn route_tool(call: &Call, args: Option<JsonObject>) -> Answer {
    let name = call.tool;
    let req: RouteRequest = call.parse(args)?;
    if req.request.trim().is_empty() {
        return Err(format!(
            "{name}: `request` is empty: pass the request to route, e.g. \"fix the failing test\""
        ));
    }
    let decision = match req.workflow.as_deref() {
        Some(w) => {
            let kind: WorkflowKind = w
                .parse()
                .map_err(|e| format!("{name}: bad argument `workflow`: {e}"))?;
            route_as(&req.request, kind)
        }
        None => route(&req.request),
    };
    // The decision holds no more than the request's signals: the default cap.
    let doc = RouteDocument::of(&decision);
    Ok(document_result(&doc, true, DEFAULT_OUTPUT_CAP))
}

/// `delegate_task` in the foreground (single, parallel or chain), through the same checks and
/// the same `run_delegation` as `baton task` and the agent's tool; the request's token cancels it.
async fn delegate(call: &Call, args: Option<JsonObject>) -> Answer {
    let name = call.tool;
    let value = Value::Object(args.unwrap_or_default());
    // Every check the agent tool makes, naming the field.
    let req = parse_request(&value).map_err(|e| format!("{name}: {e}"))?;
    let ctx = call.project()?;
    let env = delegate_env(&ctx).map_err(|e| format!("{name}: {e:#}"))?;
    let roles = resolve_roles(&env, &req).map_err(|e| format!("{name}: {e}"))?;
    if req.background {
        return crate::tasks::start(&ctx, &req);
    }
    let executor = call.executor.get(&env)?;
    let run_id = baton_exec::background::new_task_id();
    // Each entry's start, tool calls, turns and end, as `baton task logs` words them.
    let forward = ProgressForward::new(&call.context);
    let progress: Progress = match forward.observer() {
        Some(say) => {
            let names: Vec<String> = req.entries.iter().map(|e| e.name.clone()).collect();
            Arc::new(move |i, ev| {
                let n = names.get(i).cloned().unwrap_or_else(|| format!("#{i}"));
                if let Some(line) = baton_app::task_log::describe_entry(&n, &ev) {
                    say(&line);
                }
            })
        }
        None => Arc::new(|_, _| {}),
    };
    // Recorded as a task, as a background one is: `baton task status` shows it (an error to
    // record it stops nothing: the delegation is what was asked).
    let recorded = baton_exec::background::Foreground::begin(
        &state_dir(&ctx),
        &run_id,
        &ctx.cwd,
        &req,
        baton_app::project::now_rfc3339(),
    )
    .ok();
    let progress = match &recorded {
        Some(r) => r.progress(progress),
        None => progress,
    };
    let report = run_delegation(
        &env,
        &executor,
        &req,
        &roles,
        &run_id,
        &call.context.ct,
        progress,
    )
    .await;
    if let Some(r) = &recorded {
        r.finish(&report);
    }
    forward.finish().await;
    // The text is what the agent tool answers; the structured report that of `baton task --json`.
    // Not bounded by the output cap: each entry's output is bounded already.
    let text = baton_text::redact::redact(&render_report(&report)).into_owned();
    let content = vec![ContentBlock::text(text)];
    let ok = report.ok();
    let mut result = if ok {
        CallToolResult::success(content)
    } else {
        CallToolResult::error(content)
    };
    let doc = baton_app::documents::to_value(&DelegateAnswer::Report(report));
    let doc = baton_text::redact::redact(&doc.to_string()).into_owned();
    result.structured_content = serde_json::from_str(&doc).ok();
    Ok(result)
}

/// A budget argument: a positive amount, or the message naming it.
fn check_budget(tool: &str, usd: Option<f64>, tokens: Option<u64>) -> Result<(), String> {
    if let Some(b) = usd {
        if !(b.is_finite() && b > 0.0) {
            return Err(format!(
                "{tool}: bad argument `budget_usd`: {b}: give a positive amount of US dollars, e.g. 2.5"
            ));
        }
    }
    if tokens == Some(0) {
        return Err(format!(
            "{tool}: bad argument `budget_tokens`: give a positive number of tokens, e.g. 200000"
        ));
    }
    Ok(())
}

/// The result of a workflow that returned: the text a person reads (what `baton run` prints,
/// with the next step as a tool call) and the document of `baton run --json`. A failed workflow
/// is a tool error, with the same document.
fn outcome_result(outcome: &Outcome, cap: usize) -> CallToolResult {
    let doc = baton_app::workflow::outcome_document(outcome);
    let text = match outcome {
        Outcome::Completed { brief, .. } | Outcome::Stopped { brief, .. } => {
            brief.trim_end().to_string()
        }
        Outcome::Checkpoint { id, checkpoint } => {
            let mut t = format!(
                "{}\nquestion: {}",
                checkpoint.brief.trim_end(),
                checkpoint.question
            );
            if !checkpoint.options.is_empty() {
                t.push_str(&format!("\noptions: {}", checkpoint.options.join(" | ")));
            }
            t.push_str(&format!(
                "\nanswer with: workflow_resume {{\"id\": \"{id}\", \"answer\": \"…\"}}"
            ));
            t
        }
        Outcome::Failed { id, brief } => format!(
            "{}\nretry with guidance: workflow_resume {{\"id\": \"{id}\", \"answer\": \"…\"}} (or the answer \"abort\")",
            brief.trim_end()
        ),
        Outcome::Interrupted { id } => {
            format!("interrupted; continue with: workflow_resume {{\"id\": \"{id}\"}}")
        }
    };
    let ok = !matches!(outcome, Outcome::Failed { .. });
    text_result(&text, &doc, ok, cap)
}

/// The environment of a workflow run by a call: the same as `baton run`'s, with this server's
/// executor, and each event the workflow records sent as the call's progress.
fn run_env(call: &Call, progress: &ProgressForward) -> Result<RunEnv, String> {
    let ctx = call.project()?;
    let delegate = delegate_env(&ctx).map_err(|e| format!("{}: {e:#}", call.tool))?;
    let executor = call.executor.get(&delegate)?;
    let mut env = baton_app::workflow::workflow_env(delegate, executor, None);
    env.events = progress.workflow_events();
    Ok(env)
}

/// `run_workflow`: routing (with the model tiebreak of a conflict, as `baton run`), then
/// `run::start` in place, or ORIENT's inline answer.
async fn run_workflow(call: &Call, args: Option<JsonObject>) -> Answer {
    let name = call.tool;
    let req: RunWorkflowRequest = call.parse(args)?;
    if req.request.trim().is_empty() {
        return Err(format!(
            "{name}: `request` is empty: say what to do, e.g. \"add a --verbose flag\""
        ));
    }
    check_budget(name, req.budget_usd, req.budget_tokens)?;
    let kind = match req.workflow.as_deref() {
        Some(w) => Some(
            w.parse::<WorkflowKind>()
                .map_err(|e| format!("{name}: bad argument `workflow`: {e}"))?,
        ),
        None => None,
    };
    if req.plan.is_some() && kind.is_some_and(|k| k != WorkflowKind::Build) {
        return Err(format!(
            "{name}: `plan` runs a BUILD: drop `workflow`, or give \"BUILD\""
        ));
    }
    let kind = kind.or(req.plan.as_ref().map(|_| WorkflowKind::Build));
    let lanes = req
        .debug_groups
        .iter()
        .map(|g| g.parse::<run::fan_out::Lane>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{name}: bad argument `debug_groups`: {e}"))?;
    let ctx = call.project()?;
    let temporal =
        ctx.config.config.engine.kind == Some(baton_protocol::config::EngineKind::Temporal);
    if temporal && !lanes.is_empty() {
        return Err(format!(
            "{name}: `debug_groups` runs with the local engine only, and this project's engine.kind is temporal: drop them"
        ));
    }
    let progress = ProgressForward::new(&call.context);
    let env = run_env(call, &progress)?;
    let cap = env.delegate.output_cap;
    let decision = match kind {
        Some(k) => route_as(&req.request, k),
        None => {
            let (d, note) =
                run::tiebreak(&env.delegate.config, &req.request, route(&req.request)).await;
            if let Some(note) = note {
                progress.say(&note);
            }
            d
        }
    };
    progress.say(&decision.headline());
    if !temporal && decision.workflow != WorkflowKind::Orient {
        // Pending work resumes instead of being duplicated, as `baton run` says.
        let store = WorkflowStore::new(env.delegate.state.clone());
        match baton_app::workflow::pending(&store, &req.request, decision.workflow.as_str()) {
            Err(e) => {
                drop(env);
                progress.finish().await;
                return Err(format!("{name}: {e}"));
            }
            Ok(Some(note)) => progress.say(&note),
            Ok(None) => {}
        }
    }
    let cancel = &call.context.ct;
    let result = if temporal && decision.workflow != WorkflowKind::Orient {
        // engine.kind says Temporal: the workflow runs there, as `baton run` would run it.
        let start = crate::on_temporal::Start {
            request: &req.request,
            kind: decision.workflow,
            trivial: req.trivial,
            budget_usd: req.budget_usd,
            budget_tokens: req.budget_tokens,
            plan: req.plan.as_deref(),
            root: &ctx.project_root,
        };
        crate::on_temporal::run(&start, &progress, cancel)
            .await
            .map(|o| outcome_result(&o, cap))
    } else if decision.workflow == WorkflowKind::Orient {
        run::orient(&env, &req.request, cancel)
            .await
            .map(|text| {
                let doc = baton_app::workflow::answer_document(&text);
                text_result(text.trim_end(), &doc, true, cap)
            })
            .map_err(|e| e.to_string())
    } else {
        let opts = StartOptions {
            request: req.request.clone(),
            kind: decision.workflow,
            trivial: req.trivial,
            budget_usd: req.budget_usd,
            budget_tokens: req.budget_tokens,
            isolate: Some(false),
            plan: req.plan.as_ref().map(std::path::PathBuf::from),
            assess_scope: !req.trivial,
            id: None,
            referenced_plan: true,
            fan_out: lanes,
        };
        run::start(&env, &opts, cancel)
            .await
            .map(|o| outcome_result(&o, cap))
            .map_err(|e| e.to_string())
    };
    drop(env);
    progress.finish().await;
    result.map_err(|e| format!("{name}: {e}"))
}

/// `workflow_resume`: the workflow `baton resume` would pick, continued with `run::resume`.
async fn workflow_resume(call: &Call, args: Option<JsonObject>) -> Answer {
    let name = call.tool;
    let req: WorkflowResumeRequest = call.parse(args)?;
    check_budget(name, req.budget_usd, req.budget_tokens)?;
    let progress = ProgressForward::new(&call.context);
    let env = run_env(call, &progress)?;
    let cap = env.delegate.output_cap;
    let store = WorkflowStore::new(env.delegate.state.clone());
    let id = baton_app::workflow::pick(&store, req.id.as_deref())
        .map_err(|e| format!("{name}: `id`: {e}"))?;
    let result = run::resume(
        &env,
        &id,
        req.answer.as_deref(),
        req.budget_usd,
        req.budget_tokens,
        &call.context.ct,
    )
    .await;
    drop(env);
    progress.finish().await;
    result
        .map(|o| outcome_result(&o, cap))
        .map_err(|e| format!("{name}: {e}"))
}

impl ServerHandler for BatonServer {
    fn get_info(&self) -> ServerConfig {
        let caps = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources();
        ServerConfig::new(caps.enable_resources_subscribe().build())
            .with_server_info(Implementation::new("baton", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // A smaller set is chosen for a host that pays per token: list it compact.
        let compact = self.offered.is_some();
        let tools = self
            .offered()
            .map(|t| t.listed(compact))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let result = match self.offered().find(|t| t.name == request.name.as_ref()) {
            Some(t) => {
                let call = Call {
                    tool: t.name,
                    cwd: self.cwd.clone(),
                    executor: self.executor.clone(),
                    context,
                };
                (t.handler)(call, request.arguments).await
            }
            None => {
                let names: Vec<&str> = self.offered().map(|t| t.name).collect();
                let hidden = all().any(|t| t.name == request.name.as_ref());
                Err(format!(
                    "no tool `{}`{}: the tools are {}",
                    request.name,
                    if hidden {
                        " on this server (started with a smaller --tools set; `--tools all` offers it)"
                    } else {
                        ""
                    },
                    names.join(", ")
                ))
            }
        };
        let result = result.unwrap_or_else(|message| failure(&message));
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        crate::resources::list(&self.cwd).map(ListResourcesResult::with_all_items)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let templates = crate::resources::templates();
        Ok(ListResourceTemplatesResult::with_all_items(templates))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        crate::resources::read(&self.cwd, &request.uri).map(Into::into)
    }

    #[allow(deprecated)] // the way of every protocol version that has `initialize`
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.resources
            .subscribe(&self.cwd, &request.uri, context.peer)
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.resources.unsubscribe(&request.uri)
    }
}

/// `baton mcp`: serves until the client closes stdin (with `--http`, until stopped).
pub fn run(args: Options) -> Result<Exit> {
    if let Some(addr) = args.http {
        if let Some(why) = crate::http::refusal(&addr, args.token.as_deref()) {
            errln!("{why}");
            return Ok(Exit::Refused);
        }
    }
    // Reading the project's config now reports a bad one before serving, and installs the
    // redactor of its known provider keys for every result.
    let cwd = project_context(args.cwd)?.cwd;
    let runtime = baton_app::runtime::build(1)?;
    let server = BatonServer {
        cwd,
        offered: args.tools.map(Into::into),
        executor: SharedExecutor::default(),
        resources: Default::default(),
    };
    if let Some(addr) = args.http {
        // One server per MCP session, all sharing the executor, each with its own subscriptions.
        runtime.block_on(crate::http::serve(addr, args.token, move || BatonServer {
            resources: Default::default(),
            ..server.clone()
        }))?;
        return Ok(Exit::Ok);
    }
    runtime.block_on(async move {
        let service = server
            .serve(rmcp::transport::stdio())
            .await
            .context("MCP initialization failed")?;
        // Serving began: tools may have run.
        service
            .waiting()
            .await
            .context("the MCP service failed")
            .after_work_began()?;
        Ok::<(), anyhow::Error>(())
    })?;
    Ok(Exit::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_tool_is_declared_once_with_object_schemas() {
        let names: Vec<&str> = all().map(|t| t.name).collect();
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(
            unique.len(),
            names.len(),
            "a tool is declared twice: {names:?}"
        );
        assert_eq!(names.len(), 21, "{names:?}");
        for t in all() {
            let tool = t.tool().unwrap_or_else(|e| panic!("{}: {e:?}", t.name));
            let output = tool.output_schema.unwrap_or_else(|| panic!("{}", t.name));
            assert_eq!(
                output.get("type"),
                Some(&Value::from("object")),
                "{}",
                t.name
            );
            assert_eq!(
                tool.input_schema.get("type"),
                Some(&Value::from("object")),
                "{}",
                t.name
            );
        }
    }
}
