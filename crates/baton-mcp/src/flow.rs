//! The Flow tools of `baton mcp`: `flow_status`, `flow_start`, `flow_continue`, `flow_resume`,
//! `flow_land` and `flow_abandon`. Each does what the `baton flow` command of its name does, through the same
//! functions of `baton_flow` and the environment `baton flow` builds (`baton_app::flow`), and answers with the
//! documents their `--json` prints. The three that drive a Flow send each event `baton flow`
//! describes as a progress notification and stop resumably when the call is cancelled. See
//! docs/mcp.md.

use std::sync::Arc;

use baton_app::documents::{FlowDocument, FlowStatusList};
use baton_app::project::{delegate_env, output_cap};
use baton_flow::{FlowError, FlowStatus, Phase};
use baton_protocol::ModelClass;
use rmcp::model::{CallToolResult, JsonObject};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::result::{document_result, text_result};
use crate::runtime::ProgressForward;
use crate::tool::{boxed, input, output, Answer, Call, Hints, ToolDef, READ_ONLY, RUNS_AGENTS};

/// `flow_status` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowStatusRequest {
    /// One Flow: its id or a unique prefix of one. Without it, every Flow of the repository,
    /// oldest first.
    #[serde(default)]
    id: Option<String>,
}

/// `flow_start` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowStartRequest {
    /// The units document, as in a units file of `baton flow start`: `{"units": [{"id", "name",
    /// "task", "validation": [{"command", "args"}], "review"?}, ...]}`.
    units: JsonObject,
}

/// `flow_continue` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowContinueRequest {
    /// What the implementer should do differently this time (it also gets the unit's task, its
    /// validation and the evidence of the block).
    guidance: String,
    /// The model class for this repair, implementer and reviewer: fast, balanced, frontier or
    /// fav (default: the unit's).
    #[serde(default)]
    model_class: Option<String>,
    /// The Flow: its id or a unique prefix of one (default: the repository's active Flow).
    #[serde(default)]
    id: Option<String>,
}

/// `flow_resume` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowResumeRequest {
    /// The Flow: its id or a unique prefix of one (default: the repository's active Flow).
    #[serde(default)]
    id: Option<String>,
}

/// `flow_land` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowLandRequest {
    /// The failed Flow: its id or a unique prefix of one.
    id: String,
    /// The unit to land (its `id` in the units document).
    unit: String,
}

/// `flow_abandon` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowAbandonRequest {
    /// The Flow: its id or a unique prefix of one (default: the repository's active Flow).
    #[serde(default)]
    id: Option<String>,
    /// Why it is given up, kept in the Flow's record.
    #[serde(default)]
    reason: Option<String>,
}

/// The Flow tools.
pub const TOOLS: [ToolDef; 6] = [
    ToolDef {
        name: "flow_status",
        description: "Show this repository's baton Flows (a Flow runs a list of units, each built \
             by an implementer and judged by a reviewer, and merges them), oldest first, or with \
             `id` one of them: phase, each unit's status, attempts and verdicts, what was spent. \
             Read from the durable records. The answer is `{\"flows\": [...]}`, each element \
             a line of `baton flow status --json`.",
        input: input::<FlowStatusRequest>,
        output: output::<FlowStatusList>,
        hints: READ_ONLY,
        handler: |call, args| boxed(async move { flow_status(&call, args) }),
    },
    ToolDef {
        name: "flow_start",
        description: "Start a baton Flow in this repository, as `baton flow start` does with a \
             units file: each unit is built by an implementer in its own git worktree, checked \
             by its validation commands, judged by a reviewer, and merged into the current branch \
             in order. Answers when the Flow ends or pauses on a blocked unit, which can take \
             many minutes: the text is the Flow's report (each unit's status, the evidence of a \
             block and the next step), the structured answer the document \
             `baton flow start --json` ends with (`{\"type\": \"flow.report\", \"flow\": …}`). \
             A paused Flow goes on with `flow_continue` or `flow_abandon`, an interrupted one \
             with `flow_resume`. Sends each event as a progress notification when the call \
             carries a progress token; cancelling the call interrupts the Flow.",
        input: input::<FlowStartRequest>,
        output: output::<FlowDocument>,
        hints: RUNS_AGENTS,
        handler: |call, args| boxed(async move { flow_start(&call, args).await }),
    },
    ToolDef {
        name: "flow_continue",
        description:
            "Repair the blocked unit of a paused baton Flow once, as `baton flow continue` \
             does: its implementer runs again in the unit's worktree with the task, the \
             validation, the evidence of the block and your `guidance`, then the Flow goes on \
             (validation, review, merge, the next units). Give guidance that says what to do \
             differently. Answers like `flow_start`.",
        input: input::<FlowContinueRequest>,
        output: output::<FlowDocument>,
        hints: RUNS_AGENTS,
        handler: |call, args| boxed(async move { flow_continue(&call, args).await }),
    },
    ToolDef {
        name: "flow_resume",
        description: "Continue an interrupted baton Flow (its driver was stopped or killed, or a \
             `flow_start` call was cancelled) from the first unit not yet merged, as \
             `baton flow resume` does; a unit already merged is never merged again. Answers \
             like `flow_start`.",
        input: input::<FlowResumeRequest>,
        output: output::<FlowDocument>,
        hints: RUNS_AGENTS,
        handler: |call, args| boxed(async move { flow_resume(&call, args).await }),
    },
    ToolDef {
        name: "flow_land",
        description: "Land one unit that a failed baton Flow kept, as `baton flow land` does, \
             without running its implementer again: the unit is rebased onto the branch as it is \
             now, validated, reviewed when its unit asks for review, and merged fast-forward. \
             Main must be clean, at the commit the Flow left it or at one built on it (resolve \
             the failed unit there first if a later unit needs it). The Flow stays failed; the \
             call is an error when the unit did not land (the report has the evidence). A failed \
             Flow's report names the units that can be landed.",
        input: input::<FlowLandRequest>,
        output: output::<FlowDocument>,
        hints: RUNS_AGENTS,
        handler: |call, args| boxed(async move { flow_land(&call, args).await }),
    },
    ToolDef {
        name: "flow_abandon",
        description: "Give up a paused or interrupted baton Flow, as `baton flow abandon` does: \
             nothing more runs, merged units stay merged, the other units' worktrees and branches \
             are kept for a person to look at (`baton flow clean --yes` removes them, with `--force` for those holding work of their own). Runs no agent. \
             Answers with the Flow's final report.",
        input: input::<FlowAbandonRequest>,
        output: output::<FlowDocument>,
        hints: Hints {
            read_only: false,
            destructive: true,
            idempotent: true,
            open_world: false,
        },
        handler: |call, args| boxed(async move { flow_abandon(&call, args) }),
    },
];

/// The result of a tool that drove or ended a Flow: the report a person reads, with the next step
/// as a tool call, and the document of `baton flow … --json`. A failed Flow is a tool error.
fn report_result(status: &FlowStatus, cap: usize, ok: bool) -> CallToolResult {
    let mut text = baton_flow::render::report(status);
    let id = &status.state.id;
    match status.phase {
        Phase::Paused => text.push_str(&format!(
            "\nover MCP: flow_continue {{\"id\": \"{id}\", \"guidance\": \"…\"}} repairs the blocked unit; flow_abandon {{\"id\": \"{id}\"}} gives the Flow up"
        )),
        Phase::Interrupted => text.push_str(&format!(
            "\nover MCP: flow_resume {{\"id\": \"{id}\"}} continues; flow_abandon {{\"id\": \"{id}\"}} gives the Flow up"
        )),
        _ => {}
    }
    text_result(
        text.trim_end(),
        &baton_app::documents::FlowDocument::report(status),
        ok,
        cap,
    )
}

fn flow_status(call: &Call, args: Option<JsonObject>) -> Answer {
    let req: FlowStatusRequest = call.parse(args)?;
    let ctx = call.project()?;
    let flows = baton_flow::status(&ctx.cwd, req.id.as_deref(), &[])
        .map_err(|e| format!("{}: {e}", call.tool))?;
    let doc = FlowStatusList {
        flows: baton_app::documents::FlowDocument::status_lines(&flows),
    };
    Ok(document_result(&doc, true, output_cap(&ctx)))
}

fn flow_abandon(call: &Call, args: Option<JsonObject>) -> Answer {
    let name = call.tool;
    let req: FlowAbandonRequest = call.parse(args)?;
    let ctx = call.project()?;
    let delegate = delegate_env(&ctx).map_err(|e| format!("{name}: {e:#}"))?;
    let executor = call.executor.get(&delegate)?;
    let env = baton_app::flow::flow_env_with(delegate, executor, None);
    let status = baton_flow::abandon(&env, req.id.as_deref(), req.reason.as_deref())
        .map_err(|e| flow_error(name, &e))?;
    let ok = !matches!(status.phase, Phase::Failed);
    Ok(report_result(&status, output_cap(&ctx), ok))
}

async fn flow_start(call: &Call, args: Option<JsonObject>) -> Answer {
    let req: FlowStartRequest = call.parse(args)?;
    let units = baton_flow::parse_units(&Value::Object(req.units))
        .map_err(|e| format!("{}: bad argument `units`: {e}", call.tool))?;
    drive(call, Drive::Start(units)).await
}

async fn flow_continue(call: &Call, args: Option<JsonObject>) -> Answer {
    let name = call.tool;
    let req: FlowContinueRequest = call.parse(args)?;
    if req.guidance.trim().is_empty() {
        return Err(format!(
            "{name}: `guidance` is empty: say what the implementer should do differently"
        ));
    }
    let class = match req.model_class.as_deref() {
        None => None,
        Some(c) => Some(c.parse::<ModelClass>().map_err(|_| {
            format!(
                "{name}: bad argument `model_class`: `{c}`: use fast, balanced, frontier or fav"
            )
        })?),
    };
    drive(call, Drive::Continue(req, class)).await
}

async fn flow_resume(call: &Call, args: Option<JsonObject>) -> Answer {
    let req: FlowResumeRequest = call.parse(args)?;
    drive(call, Drive::Resume(req)).await
}

async fn flow_land(call: &Call, args: Option<JsonObject>) -> Answer {
    let req: FlowLandRequest = call.parse(args)?;
    drive(call, Drive::Land(req)).await
}

/// What a driving tool does, its arguments checked before anything runs.
enum Drive {
    Start(Vec<baton_flow::UnitSpec>),
    Continue(FlowContinueRequest, Option<ModelClass>),
    Resume(FlowResumeRequest),
    Land(FlowLandRequest),
}

/// Drives a Flow with the server's executor, each event `baton flow` describes sent as progress.
async fn drive(call: &Call, drive: Drive) -> Answer {
    let name = call.tool;
    let ctx = call.project()?;
    let cap = output_cap(&ctx);
    let progress = ProgressForward::new(&call.context);
    let delegate = delegate_env(&ctx).map_err(|e| format!("{name}: {e:#}"))?;
    let executor = call.executor.get(&delegate)?;
    let observer = progress.observer().map(|say| {
        let o: baton_flow::Observer = Arc::new(move |n: baton_flow::Notice<'_>| {
            if let baton_flow::Notice::Event(r) = n {
                if let Some(line) = baton_flow::render::describe(r) {
                    say(&line);
                }
            }
        });
        o
    });
    let env = baton_app::flow::flow_env_with(delegate, executor, observer);
    let cancel = &call.context.ct;
    // A landing leaves the Flow failed: the call succeeds when the unit landed.
    let landing = match &drive {
        Drive::Land(req) => Some(req.unit.clone()),
        _ => None,
    };
    let result = match drive {
        Drive::Start(units) => baton_flow::start(&env, &units, cancel).await,
        Drive::Continue(req, class) => {
            baton_flow::continue_flow(&env, req.id.as_deref(), &req.guidance, class, cancel).await
        }
        Drive::Resume(req) => baton_flow::resume(&env, req.id.as_deref(), cancel).await,
        Drive::Land(req) => baton_flow::land(&env, &req.id, &req.unit, cancel).await,
    };
    drop(env);
    progress.finish().await;
    let status = result.map_err(|e| flow_error(name, &e))?;
    let ok = match landing {
        Some(unit) => status
            .state
            .unit_index(&unit)
            .is_some_and(|i| status.state.units[i].status.is_done()),
        None => !matches!(status.phase, Phase::Failed),
    };
    Ok(report_result(&status, cap, ok))
}

/// A refusal or failure of a Flow command as a tool error's message (an unacceptable input
/// names its field).
fn flow_error(tool: &str, e: &FlowError) -> String {
    format!("{tool}: {e}")
}
