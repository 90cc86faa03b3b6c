//! The background-task side of `baton mcp`: `delegate_task` with `background: true` and the
//! `task_status`, `task_wait` and `task_cancel` tools. Each does what `baton task --background`,
//! `baton task status`, `wait` and `cancel` do, through the same functions (`baton_app::tasks`), and
//! answers with the document their `--json` prints. See docs/mcp.md.

use std::time::Duration;

use baton_app::documents::{
    DelegateAnswer, TaskCancelDocument, TaskDocument, TaskStatusDocument, TaskWaitDocument,
};
use baton_app::project::{output_cap, state_dir, ProjectContext};
use baton_app::tasks::{cancel_document, poll_wait};
use baton_exec::delegate::DelegateRequest;
use rmcp::model::JsonObject;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::result::document_result;
use crate::tool::{boxed, input, output, Answer, Call, Hints, ToolDef, READ_ONLY};

/// `task_status` and `task_cancel` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskIdRequest {
    /// The background task's id, as `delegate_task` with `background: true` answered it.
    id: String,
}

/// `task_wait` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskWaitRequest {
    /// The background task's id, as `delegate_task` with `background: true` answered it.
    id: String,
    /// Answer after this many seconds if the task still runs (with its status, `type`
    /// `task.running`); without it, wait until the task ends.
    #[serde(default)]
    timeout_seconds: Option<f64>,
}

/// `task_status`, `task_wait` and `task_cancel`.
pub const TOOLS: [ToolDef; 3] = [
    ToolDef {
        name: "task_status",
        description: "Show a background task started by `delegate_task` with `background: true`: \
             its phase (starting, running, done, failed, interrupted), each entry's name, role \
             and status, and its report once it has ended. Only reads. Same answer as \
             `baton task status ID --json`.",
        input: input::<TaskIdRequest>,
        output: output::<TaskStatusDocument>,
        hints: READ_ONLY,
        handler: |call, args| boxed(async move { task_status(&call, args) }),
    },
    ToolDef {
        name: "task_wait",
        description: "Wait for a background task to end and answer with its report (`type` \
             `report`: each entry's status, answer, model, usage, worktree), or `type` \
             `task.failed` with the reason if it failed before running. With `timeout_seconds`, \
             answers `type` `task.running` with its status if it still runs then. Same answer as \
             `baton task wait ID --json`. Changes nothing.",
        input: input::<TaskWaitRequest>,
        output: output::<TaskWaitDocument>,
        hints: READ_ONLY,
        handler: |call, args| boxed(async move { task_wait(&call, args).await }),
    },
    ToolDef {
        name: "task_cancel",
        description: "Stop a background task: its supervisor is signalled, its children's process \
             groups are killed and their worktrees finalized; `task_wait` then answers with the \
             final report. A task that already ended is left as it is. Same answer as \
             `baton task cancel ID --json` (`action`: signalled, stopped or none; `message`).",
        input: input::<TaskIdRequest>,
        output: output::<TaskCancelDocument>,
        hints: Hints {
            read_only: false,
            destructive: true,
            idempotent: true,
            open_world: false,
        },
        handler: |call, args| boxed(async move { task_cancel(&call, args) }),
    },
];

/// `delegate_task` with `background: true` (its request checked and its roles resolved): starts
/// the supervisor as `baton task --background` does and answers with the document of
/// `baton task --background --json`.
pub fn start(ctx: &ProjectContext, req: &DelegateRequest) -> Answer {
    let id = baton_app::tasks::start_background(ctx, req)
        .map_err(|e| format!("delegate_task: cannot start the background task: {e:#}"))?;
    Ok(document_result(
        &DelegateAnswer::Background(TaskDocument::Background { id }),
        true,
        output_cap(ctx),
    ))
}

fn task_status(call: &Call, args: Option<JsonObject>) -> Answer {
    let req: TaskIdRequest = call.parse(args)?;
    let ctx = call.project()?;
    let state = baton_exec::background::load(&state_dir(&ctx), &req.id)
        .map_err(|e| format!("{}: `id`: {e}", call.tool))?;
    Ok(document_result(
        &TaskStatusDocument::of(&state),
        true,
        output_cap(&ctx),
    ))
}

fn task_cancel(call: &Call, args: Option<JsonObject>) -> Answer {
    let req: TaskIdRequest = call.parse(args)?;
    let ctx = call.project()?;
    let doc = cancel_document(&state_dir(&ctx), &req.id)
        .map_err(|e| format!("{}: `id`: {e:#}", call.tool))?;
    Ok(document_result(&doc, true, output_cap(&ctx)))
}

/// The request's cancellation ends a `task_wait`, never the task.
async fn task_wait(call: &Call, args: Option<JsonObject>) -> Answer {
    let name = call.tool;
    let req: TaskWaitRequest = call.parse(args)?;
    let ctx = call.project()?;
    let store = state_dir(&ctx);
    let cap = output_cap(&ctx);
    let deadline = match req.timeout_seconds {
        Some(s) if !(s.is_finite() && s >= 0.0) => {
            return Err(format!(
                "{name}: bad argument `timeout_seconds`: {s} is not a number of seconds ≥ 0"
            ))
        }
        Some(s) => Some(tokio::time::Instant::now() + Duration::from_secs_f64(s)),
        None => None,
    };
    let cancel = call.context.ct.clone();
    loop {
        let end = poll_wait(&store, &req.id).map_err(|e| format!("{name}: {e:#}"))?;
        if let Some(end) = end {
            return Ok(document_result(&end.document(&req.id), end.ok(), cap));
        }
        if deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
            let state = baton_exec::background::load(&store, &req.id)
                .map_err(|e| format!("{name}: {e:#}"))?;
            let doc = TaskWaitDocument::Running {
                id: req.id.clone(),
                status: Box::new(TaskStatusDocument::of(&state)),
            };
            return Ok(document_result(&doc, true, cap));
        }
        tokio::select! {
            _ = cancel.cancelled() => return Err(format!("{name}: cancelled; the task goes on (`task_cancel` stops it)")),
            _ = tokio::time::sleep(Duration::from_millis(50)) => {}
        }
    }
}
