//! `task_status`, `task_wait` and `task_cancel` as tools of a main agent session, beside
//! `delegate_task`: a background delegation reports back to the agent that started it, through
//! the same functions as `baton task status|wait|cancel` and MCP's tools of those names, with the
//! documents their `--json` prints.

use std::time::Duration;

use async_trait::async_trait;
use baton_protocol::ToolSpec;
use baton_state::StateDir;
use baton_tool::{Tool, ToolContext, ToolOutput};
use serde_json::{json, Value};

use crate::documents::{TaskStatusDocument, TaskWaitDocument};
use crate::tasks::{cancel_document, poll_wait};

/// The three tools over the project's state folder.
pub fn tools(state: StateDir) -> Vec<std::sync::Arc<dyn Tool>> {
    vec![
        std::sync::Arc::new(TaskTool {
            state: state.clone(),
            kind: Kind::Status,
        }),
        std::sync::Arc::new(TaskTool {
            state: state.clone(),
            kind: Kind::Wait,
        }),
        std::sync::Arc::new(TaskTool {
            state,
            kind: Kind::Cancel,
        }),
    ]
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Status,
    Wait,
    Cancel,
}

struct TaskTool {
    state: StateDir,
    kind: Kind,
}

fn id_of(args: &Value, tool: &str) -> Result<String, String> {
    match args.get("id") {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.trim().to_string()),
        _ => Err(format!(
            "{tool}: `id` is required: the id `delegate_task` with `background: true` answered"
        )),
    }
}

fn text(doc: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(doc).unwrap_or_default()
}

#[async_trait]
impl Tool for TaskTool {
    fn name(&self) -> &'static str {
        match self.kind {
            Kind::Status => "task_status",
            Kind::Wait => "task_wait",
            Kind::Cancel => "task_cancel",
        }
    }

    fn spec(&self) -> ToolSpec {
        let id = json!({"type": "string", "description": "The background task's id, as delegate_task answered it."});
        let (description, parameters) = match self.kind {
            Kind::Status => (
                "Show a background delegation: its phase (starting, running, done, failed, interrupted), each entry's name, role and status, and its report once it ended.",
                json!({"type": "object", "properties": {"id": id}, "required": ["id"]}),
            ),
            Kind::Wait => (
                "Wait for a background delegation to end and get its report. With timeout_seconds, answers with its status if it still runs then.",
                json!({"type": "object", "properties": {"id": id, "timeout_seconds": {"type": "number", "minimum": 0, "description": "Answer after this many seconds if it still runs."}}, "required": ["id"]}),
            ),
            Kind::Cancel => (
                "Stop a background delegation: its children are killed and their worktrees finalized; task_wait then gives the final report.",
                json!({"type": "object", "properties": {"id": id}, "required": ["id"]}),
            ),
        };
        ToolSpec {
            name: self.name().into(),
            description: description.into(),
            parameters,
        }
    }

    fn read_only(&self) -> bool {
        self.kind != Kind::Cancel
    }

    async fn run(&self, args: Value, ctx: &ToolContext) -> ToolOutput {
        let name = self.name();
        let id = match id_of(&args, name) {
            Ok(id) => id,
            Err(e) => return ToolOutput::error(e),
        };
        match self.kind {
            Kind::Status => match baton_exec::background::load(&self.state, &id) {
                Ok(s) => ToolOutput::ok(text(&TaskStatusDocument::of(&s))),
                Err(e) => ToolOutput::error(format!("{name}: `id`: {e}")),
            },
            Kind::Cancel => match cancel_document(&self.state, &id) {
                Ok(doc) => ToolOutput::ok(text(&doc)),
                Err(e) => ToolOutput::error(format!("{name}: `id`: {e:#}")),
            },
            Kind::Wait => {
                let deadline = match args.get("timeout_seconds").and_then(Value::as_f64) {
                    Some(s) if !(s.is_finite() && s >= 0.0) => {
                        return ToolOutput::error(format!(
                            "{name}: `timeout_seconds` {s} is not a number of seconds ≥ 0"
                        ))
                    }
                    Some(s) => Some(tokio::time::Instant::now() + Duration::from_secs_f64(s)),
                    None => None,
                };
                loop {
                    match poll_wait(&self.state, &id) {
                        Err(e) => return ToolOutput::error(format!("{name}: {e:#}")),
                        Ok(Some(end)) => {
                            let doc = text(&end.document(&id));
                            return match end.ok() {
                                true => ToolOutput::ok(doc),
                                false => ToolOutput::error(doc),
                            };
                        }
                        Ok(None) => {}
                    }
                    if deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
                        return match baton_exec::background::load(&self.state, &id) {
                            Ok(s) => ToolOutput::ok(text(&TaskWaitDocument::Running {
                                id: id.clone(),
                                status: Box::new(TaskStatusDocument::of(&s)),
                            })),
                            Err(e) => ToolOutput::error(format!("{name}: {e:#}")),
                        };
                    }
                    tokio::select! {
                        _ = ctx.cancel.cancelled() => return ToolOutput::error(format!("{name}: interrupted; the task goes on (task_cancel stops it)")),
                        _ = tokio::time::sleep(Duration::from_millis(50)) => {}
                    }
                }
            }
        }
    }
}
