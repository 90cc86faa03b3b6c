//! The managed-worker tools of `baton mcp`: `worker_start`, `worker_send`, `worker_list`,
//! `worker_stop` and `worker_retire`. Each does what `baton worker start|send|list|stop|retire`
//! does, through the same functions (`baton_app::workers`), and answers with the document its
//! `--json` prints. See docs/workers.md.

use baton_app::project::{output_cap, state_dir};
use baton_app::workers::{self, Ended, NewWorker, Prompt, Sent, Started, Waited, WorkerList};
use rmcp::model::JsonObject;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::result::document_result;
use crate::tool::{boxed, input, output, Answer, Call, Hints, ToolDef, READ_ONLY};

/// `worker_start` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartRequest {
    /// The worker's name: letters, digits, `-`, `_`, `.`; it starts with a letter or digit.
    name: String,
    /// A new worker's role (required for a new worker; omit everything below to start a
    /// stopped or lost worker again as it was).
    #[serde(default)]
    role: Option<String>,
    /// Its route, `provider/model[:thinking]`.
    #[serde(default)]
    model: Option<String>,
    /// Its model class (fast, balanced, frontier, …), when no route is given.
    #[serde(default)]
    model_class: Option<String>,
    /// Work in a worktree of its own (branch `baton/worker-NAME`).
    #[serde(default)]
    worktree: bool,
    /// Stop it (state kept) once it has spent this many US dollars.
    #[serde(default)]
    budget_usd: Option<f64>,
    /// Stop it (not retire it) after this many seconds without a prompt.
    #[serde(default)]
    idle_timeout_secs: Option<u64>,
    /// Start a stopped or lost worker on a new session instead of resuming its own.
    #[serde(default)]
    fresh: bool,
}

/// `worker_send` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SendRequest {
    name: String,
    /// The prompt. Not with `retry`.
    #[serde(default)]
    prompt: Option<String>,
    /// Send again the prompt that was in flight when the worker was lost.
    #[serde(default)]
    retry: bool,
    /// Answer at once with the prompt's id (`outcome` `queued`) instead of waiting for the
    /// answer.
    #[serde(default)]
    no_wait: bool,
}

/// `worker_stop` and `worker_retire` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NameRequest {
    name: String,
}

/// `worker_list` takes nothing.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

const CHANGES: Hints = Hints {
    read_only: false,
    destructive: false,
    idempotent: false,
    open_world: true,
};

/// The worker tools.
pub const TOOLS: [ToolDef; 5] = [
    ToolDef {
        name: "worker_start",
        description: "Start a managed worker: a named agent session kept alive in a detached \
             supervisor, prompted again and again with `worker_send` (it keeps its context \
             between prompts). A new worker needs `role` (and `model` or `model_class` to choose \
             its route; `worktree`, `budget_usd`, `idle_timeout_secs` optional); a stopped or \
             lost one is started again as it was, on its own session (`fresh` starts a new one). \
             Checked before anything is written; workers.max caps how many run. Same answer as \
             `baton worker start`.",
        input: input::<StartRequest>,
        output: output::<Started>,
        hints: CHANGES,
        handler: |call, args| boxed(async move { start(&call, args).await }),
    },
    ToolDef {
        name: "worker_send",
        description: "Send a prompt to a running worker and wait for its answer (with its \
             usage): `outcome` `answered`. Prompts are recorded before they are delivered and \
             answered one at a time, in order. `no_wait` answers at once (`queued`); a worker \
             that stops first answers `lost` (`retry` sends the prompt again) or `waiting`. \
             Cancelling the request ends the wait, not the prompt. Same answer as `baton worker \
             send --json`.",
        input: input::<SendRequest>,
        output: output::<Sent>,
        hints: CHANGES,
        handler: |call, args| boxed(async move { send(&call, args).await }),
    },
    ToolDef {
        name: "worker_list",
        description: "List the project's workers: name, role, route, state (idle, working, \
             stopped, lost — reconciled with what really runs — or retired), turns, tokens, \
             cost, last activity, worktree, the prompt in flight. Only reads. Same answer as \
             `baton worker list --json`.",
        input: input::<NoArgs>,
        output: output::<WorkerList>,
        hints: READ_ONLY,
        handler: |call, args| boxed(async move { list(&call, args) }),
    },
    ToolDef {
        name: "worker_stop",
        description: "Stop a worker's supervisor (its session and log are kept; `worker_start` \
             resumes it). Same as `baton worker stop`.",
        input: input::<NameRequest>,
        output: output::<Ended>,
        hints: Hints {
            read_only: false,
            destructive: true,
            idempotent: true,
            open_world: false,
        },
        handler: |call, args| boxed(async move { stop(&call, args).await }),
    },
    ToolDef {
        name: "worker_retire",
        description: "Stop a worker for good and finalize its worktree as `delegate_task` \
             finalizes a child's: kept (with its branch named) when it holds work, removed when \
             not. Same as `baton worker retire`.",
        input: input::<NameRequest>,
        output: output::<Ended>,
        hints: Hints {
            read_only: false,
            destructive: true,
            idempotent: false,
            open_world: false,
        },
        handler: |call, args| boxed(async move { retire(&call, args).await }),
    },
];

fn fail(call: &Call, e: impl std::fmt::Display) -> String {
    format!("{}: {e}", call.tool)
}

async fn start(call: &Call, args: Option<JsonObject>) -> Answer {
    let req: StartRequest = call.parse(args)?;
    let ctx = call.project()?;
    let exe = baton_process::own_program().map_err(|e| fail(call, e))?;
    let cap = output_cap(&ctx);
    let started = tokio::task::spawn_blocking(move || {
        let state = state_dir(&ctx);
        let new = NewWorker {
            role: req.role,
            model: req.model,
            model_class: req.model_class,
            worktree: req.worktree,
            budget_usd: req.budget_usd,
            idle_timeout_secs: req.idle_timeout_secs,
        };
        workers::start(&ctx, &state, &exe, &req.name, new, req.fresh)
    })
    .await
    .map_err(|e| fail(call, e))?
    .map_err(|e| fail(call, format!("{e:#}")))?;
    Ok(document_result(&started, true, cap))
}

async fn send(call: &Call, args: Option<JsonObject>) -> Answer {
    let req: SendRequest = call.parse(args)?;
    let ctx = call.project()?;
    let state = state_dir(&ctx);
    let cap = output_cap(&ctx);
    let prompt = match (req.retry, req.prompt) {
        (true, None) => Prompt::Retry,
        (false, Some(p)) => Prompt::Text(p),
        (true, Some(_)) => return Err(fail(call, "give `prompt` or `retry`, not both")),
        (false, None) => return Err(fail(call, "`prompt` is missing (or give `retry: true`)")),
    };
    if req.no_wait {
        let queued = workers::send(&state, &req.name, prompt, false)
            .map_err(|e| fail(call, format!("{e:#}")))?;
        return Ok(document_result(&queued, true, cap));
    }
    match workers::send_and_wait(&state, &req.name, prompt, &call.context.ct)
        .await
        .map_err(|e| fail(call, format!("{e:#}")))?
    {
        Waited::Ended(done) => {
            let ok = matches!(&done, Sent::Answered(a) if a.reason.is_none());
            Ok(document_result(&done, ok, cap))
        }
        Waited::Cancelled { prompt: id } => Err(fail(
            call,
            format!("cancelled; prompt {id} stays in the worker's log and is answered in its turn"),
        )),
    }
}

fn list(call: &Call, args: Option<JsonObject>) -> Answer {
    let _: NoArgs = call.parse(args.or_else(|| Some(JsonObject::new())))?;
    let ctx = call.project()?;
    let (rows, damaged) = workers::list(&state_dir(&ctx));
    Ok(document_result(
        &WorkerList {
            workers: rows,
            damaged,
        },
        true,
        output_cap(&ctx),
    ))
}

async fn stop(call: &Call, args: Option<JsonObject>) -> Answer {
    ended(call, args, workers::stop_document).await
}

async fn retire(call: &Call, args: Option<JsonObject>) -> Answer {
    ended(call, args, workers::retire_document).await
}

/// `worker_stop` and `worker_retire`: `op` on the worker the arguments name, off the runtime.
async fn ended(
    call: &Call,
    args: Option<JsonObject>,
    op: fn(&baton_app::project::StateDir, &str) -> anyhow::Result<Ended>,
) -> Answer {
    let req: NameRequest = call.parse(args)?;
    let ctx = call.project()?;
    let cap = output_cap(&ctx);
    let state = state_dir(&ctx);
    let doc = tokio::task::spawn_blocking(move || op(&state, &req.name))
        .await
        .map_err(|e| fail(call, e))?
        .map_err(|e| fail(call, format!("{e:#}")))?;
    Ok(document_result(&doc, true, cap))
}
