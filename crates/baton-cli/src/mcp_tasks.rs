//! The background-task side of `baton mcp`: `delegate_task` with `background: true` and the
//! `task_status`, `task_wait` and `task_cancel` tools. Each does what `baton task --background`,
//! `baton task status`, `wait` and `cancel` do, through the same functions of `task_cmd`, and
//! answers with the document their `--json` prints. See docs/mcp.md.

use std::time::Duration;

use baton_exec::delegate::DelegateRequest;
use rmcp::model::{CallToolResult, JsonObject, Tool};
use rmcp::ErrorData;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::mcp_result::document_result;
use crate::mcp_tool::{annotations, output_schema, parse, tool};
use crate::project::{output_cap, state_dir, ProjectContext};
use crate::task_cmd::{cancel_document, poll_wait, status_document};

/// The tools of this module.
pub const NAMES: [&str; 3] = ["task_status", "task_wait", "task_cancel"];

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
pub fn tools() -> Result<Vec<Tool>, ErrorData> {
    let string = json!({"type": "string"});
    Ok(vec![
        tool::<TaskIdRequest>(
            "task_status",
            "Show a background task started by `delegate_task` with `background: true`: its phase \
             (starting, running, done, failed, interrupted), each entry's name, role and status, \
             and its report once it has ended. Only reads. Same answer as \
             `baton task status ID --json`.",
            output_schema(&[
                ("id", string.clone()),
                ("phase", string.clone()),
                ("entries", json!({"type": "array"})),
            ]),
            annotations(true, false, true, false),
        )?,
        tool::<TaskWaitRequest>(
            "task_wait",
            "Wait for a background task to end and answer with its report (`type` `report`: each \
             entry's status, answer, model, usage, worktree), or `type` `task.failed` with the \
             reason if it failed before running. With `timeout_seconds`, answers `type` \
             `task.running` with its status if it still runs then. Same answer as \
             `baton task wait ID --json`. Changes nothing.",
            output_schema(&[("type", string.clone()), ("id", string.clone())]),
            annotations(true, false, true, false),
        )?,
        tool::<TaskIdRequest>(
            "task_cancel",
            "Stop a background task: its supervisor is signalled, its children's process groups \
             are killed and their worktrees finalized; `task_wait` then answers with the final \
             report. A task that already ended is left as it is. Same answer as \
             `baton task cancel ID --json` (`action`: signalled, stopped or none; `message`).",
            output_schema(&[
                ("id", string.clone()),
                ("phase", string.clone()),
                ("action", string),
                ("message", json!({"type": "string"})),
            ]),
            annotations(false, true, true, false),
        )?,
    ])
}

/// `delegate_task` with `background: true` (its request checked and its roles resolved): starts
/// the supervisor as `baton task --background` does and answers with the document of
/// `baton task --background --json`.
pub fn start(ctx: &ProjectContext, req: &DelegateRequest) -> Result<CallToolResult, String> {
    let id = crate::task_cmd::start_background(ctx, req)
        .map_err(|e| format!("delegate_task: cannot start the background task: {e:#}"))?;
    Ok(document_result(
        &json!({"type": "task.background", "id": id}),
        true,
        output_cap(ctx),
    ))
}

/// Runs one of [`NAMES`]; `cancel` is the request's token (it ends a `task_wait`, never the task).
pub async fn call(
    ctx: &ProjectContext,
    name: &str,
    args: Option<JsonObject>,
    cancel: CancellationToken,
) -> Result<CallToolResult, String> {
    let store = state_dir(ctx);
    let result = |doc: &Value, ok: bool| document_result(doc, ok, output_cap(ctx));
    match name {
        "task_status" => {
            let req: TaskIdRequest = parse(name, args)?;
            let state = baton_exec::background::load(&store, &req.id)
                .map_err(|e| format!("{name}: `id`: {e}"))?;
            Ok(result(&status_document(&state), true))
        }
        "task_cancel" => {
            let req: TaskIdRequest = parse(name, args)?;
            let doc =
                cancel_document(&store, &req.id).map_err(|e| format!("{name}: `id`: {e:#}"))?;
            Ok(result(&doc, true))
        }
        "task_wait" => {
            let req: TaskWaitRequest = parse(name, args)?;
            let deadline = match req.timeout_seconds {
                Some(s) if !(s.is_finite() && s >= 0.0) => {
                    return Err(format!(
                        "{name}: bad argument `timeout_seconds`: {s} is not a number of seconds ≥ 0"
                    ))
                }
                Some(s) => Some(tokio::time::Instant::now() + Duration::from_secs_f64(s)),
                None => None,
            };
            loop {
                let end = poll_wait(&store, &req.id).map_err(|e| format!("{name}: {e:#}"))?;
                if let Some(end) = end {
                    return Ok(result(&end.document(&req.id), end.ok()));
                }
                if deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
                    let state = baton_exec::background::load(&store, &req.id)
                        .map_err(|e| format!("{name}: {e:#}"))?;
                    let doc = json!({"type": "task.running", "id": req.id, "status": status_document(&state)});
                    return Ok(result(&doc, true));
                }
                tokio::select! {
                    _ = cancel.cancelled() => return Err(format!("{name}: cancelled; the task goes on (`task_cancel` stops it)")),
                    _ = tokio::time::sleep(Duration::from_millis(50)) => {}
                }
            }
        }
        other => Err(format!("no tool `{other}`")),
    }
}
