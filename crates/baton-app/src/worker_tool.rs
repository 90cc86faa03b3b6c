//! `worker` as a tool of a main agent session (a role that lists it; children never get it):
//! `{op: start|send|list|stop|retire, …}`, through the same functions as `baton worker` and the
//! MCP `worker_*` tools, answered with their documents.

use std::path::PathBuf;

use async_trait::async_trait;
use baton_protocol::ToolSpec;
use baton_tool::{Tool, ToolContext, ToolOutput};
use serde_json::{json, Value};

use crate::workers::{self, NewWorker, Prompt, Waited, WorkerList};

/// The tool, for the project of `cwd`; its workers' supervisors are `exe` (this `baton`).
pub struct WorkerTool {
    pub cwd: PathBuf,
    pub exe: PathBuf,
}

fn text(doc: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(doc).unwrap_or_default()
}

fn string(args: &Value, key: &str) -> Option<String> {
    args.get(key)
        .and_then(Value::as_str)
        .map(str::to_string)
        .filter(|s| !s.trim().is_empty())
}

#[async_trait]
impl Tool for WorkerTool {
    fn name(&self) -> &'static str {
        "worker"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "worker".into(),
            description: "Managed workers: named helpers that keep their context between prompts. \
                 op `start` (name, role; model or model_class, worktree, budget_usd, \
                 idle_timeout_secs optional; a stopped worker starts again on its own session), \
                 `send` (name, prompt, or retry: true for a prompt lost in a crash; waits for the \
                 answer unless no_wait), `list`, `stop` (keeps its session), `retire` (for good; \
                 its worktree kept when it holds work)."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "op": {"type": "string", "enum": ["start", "send", "list", "stop", "retire"]},
                    "name": {"type": "string", "description": "The worker's name."},
                    "role": {"type": "string", "description": "start: a new worker's role."},
                    "model": {"type": "string", "description": "start: its route, provider/model."},
                    "model_class": {"type": "string", "description": "start: its model class."},
                    "worktree": {"type": "boolean", "description": "start: work in a worktree of its own."},
                    "budget_usd": {"type": "number", "description": "start: stop it once it spent this much."},
                    "idle_timeout_secs": {"type": "integer", "minimum": 1, "description": "start: stop it after this long without a prompt."},
                    "fresh": {"type": "boolean", "description": "start: a new session instead of its own."},
                    "prompt": {"type": "string", "description": "send: what to ask."},
                    "retry": {"type": "boolean", "description": "send: the prompt lost when it was lost, again."},
                    "no_wait": {"type": "boolean", "description": "send: return the prompt's id at once."}
                },
                "required": ["op"]
            }),
        }
    }

    fn read_only(&self) -> bool {
        false
    }

    async fn run(&self, args: Value, ctx: &ToolContext) -> ToolOutput {
        let op = string(&args, "op").unwrap_or_default();
        let name = string(&args, "name");
        let need_name = || {
            name.clone()
                .ok_or_else(|| format!("worker {op}: `name` is required"))
        };
        let project = match crate::project::project_context(Some(self.cwd.clone())) {
            Ok(p) => p,
            Err(e) => return ToolOutput::error(format!("worker: {e:#}")),
        };
        let state = crate::project::state_dir(&project);
        let flag = |k: &str| args.get(k).and_then(Value::as_bool).unwrap_or(false);
        let result: Result<String, String> = match op.as_str() {
            "list" => {
                let (rows, damaged) = workers::list(&state);
                Ok(text(&WorkerList {
                    workers: rows,
                    damaged,
                }))
            }
            "start" => match need_name() {
                Err(e) => Err(e),
                Ok(n) => {
                    let new = NewWorker {
                        role: string(&args, "role"),
                        model: string(&args, "model"),
                        model_class: string(&args, "model_class"),
                        worktree: flag("worktree"),
                        budget_usd: args.get("budget_usd").and_then(Value::as_f64),
                        idle_timeout_secs: args.get("idle_timeout_secs").and_then(Value::as_u64),
                    };
                    let exe = self.exe.clone();
                    let fresh = flag("fresh");
                    tokio::task::spawn_blocking(move || {
                        workers::start(&project, &state, &exe, &n, new, fresh)
                            .map(|s| text(&s))
                            .map_err(|e| format!("worker start: {e:#}"))
                    })
                    .await
                    .unwrap_or_else(|e| Err(format!("worker start: {e}")))
                }
            },
            "send" => match need_name() {
                Err(e) => Err(e),
                Ok(n) => {
                    let prompt = match (flag("retry"), string(&args, "prompt")) {
                        (true, None) => Ok(Prompt::Retry),
                        (false, Some(p)) => Ok(Prompt::Text(p)),
                        (true, Some(_)) => Err("worker send: `prompt` or `retry`, not both".into()),
                        (false, None) => Err("worker send: `prompt` is required".to_string()),
                    };
                    match prompt {
                        Err(e) => Err(e),
                        Ok(prompt) => send(&state, &n, prompt, !flag("no_wait"), ctx).await,
                    }
                }
            },
            "stop" | "retire" => match need_name() {
                Err(e) => Err(e),
                Ok(n) => {
                    let op = if op == "retire" {
                        workers::retire_document
                    } else {
                        workers::stop_document
                    };
                    tokio::task::spawn_blocking(move || op(&state, &n))
                        .await
                        .map_err(|e| e.to_string())
                        .and_then(|r| r.map(|d| text(&d)).map_err(|e| format!("worker: {e:#}")))
                }
            },
            other => Err(format!(
                "worker: `op` {other:?}: one of start, send, list, stop, retire"
            )),
        };
        match result {
            Ok(t) => ToolOutput::ok(t),
            Err(e) => ToolOutput::error(e),
        }
    }
}

async fn send(
    state: &baton_state::StateDir,
    name: &str,
    prompt: Prompt,
    wait: bool,
    ctx: &ToolContext,
) -> Result<String, String> {
    if !wait {
        let queued =
            workers::send(state, name, prompt, false).map_err(|e| format!("worker send: {e:#}"))?;
        return Ok(text(&queued));
    }
    match workers::send_and_wait(state, name, prompt, &ctx.cancel)
        .await
        .map_err(|e| format!("worker send: {e:#}"))?
    {
        Waited::Ended(done) => Ok(text(&done)),
        Waited::Cancelled { prompt: id } => Err(format!(
            "worker send: cancelled; prompt {id} stays in the worker's log"
        )),
    }
}
