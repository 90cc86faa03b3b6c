//! `delegate_task` as a tool of a main agent session. Children never get it (they run with
//! `BATON_CHILD=1`), so delegation cannot recurse.

use std::sync::Arc;

use baton_protocol::ToolSpec;
use baton_tool::{Tool, ToolContext, ToolOutput};
use serde_json::{json, Value};

use crate::background;
use crate::delegate::{
    parse_request, render_report, resolve_roles, run_delegation, DelegateEnv, Progress, TaskEntry,
};
use crate::executor::Executor;

/// The main-side delegation policy added to a main session's system prompt.
pub const MAIN_POLICY: &str = "# Delegation\n\
You can hand bounded work to child agents with `delegate_task`. Each child runs in its own process with its role's tools and sees only the task text you give it, so write a self-contained task: the goal, the relevant files, the constraints, and what to report back.\n\
- Use one shape per call: single {role, name, task}; parallel {tasks: [...]} for up to 8 independent pieces; chain {chain: [...]} for up to 8 dependent steps, where `{previous}` in a step's task is replaced by the previous step's answer.\n\
- Choose only `model_class`: `fast` normally, `balanced` up front for work that is obviously complex. Set `model` or `thinking` only when the user explicitly asked for a particular model or thinking level.\n\
- Roles: `scout` to explore and report, `implementer` to change code (it works in its own git worktree and commits there), `reviewer` to judge a change without touching it.\n\
- Children cannot delegate further. Check what a child reports against the repository before you rely on it.";

pub struct DelegateTool {
    pub env: Arc<DelegateEnv>,
    pub executor: Arc<Executor>,
    pub progress: Progress,
    /// Used for background runs' `created` field.
    pub now: fn() -> String,
}

/// The schema of one entry, derived from the struct the request is parsed into.
fn entry_schema() -> Value {
    baton_tool::args::schema_for::<TaskEntry>()
}

/// The arguments of `delegate_task` (what [`parse_request`] takes): one entry's fields at the top
/// level, or `tasks` or `chain` of entries, and — offered only when `background` is true — the
/// `background` flag. Built from [`TaskEntry`]'s derived schema; `baton mcp` offers the same.
pub fn parameters_schema(background: bool) -> Value {
    let entry = entry_schema();
    let mut props = entry["properties"].clone();
    if let Some(p) = props.as_object_mut() {
        p.insert("chain".into(), json!({"type": "array", "items": entry.clone(), "minItems": 1, "maxItems": 8, "description": "Chain mode: sequential entries; `{previous}` receives the previous step's answer."}));
        p.insert("tasks".into(), json!({"type": "array", "items": entry, "minItems": 1, "maxItems": 8, "description": "Parallel mode: independent entries started together."}));
        if background {
            p.insert("background".into(), json!({"type": "boolean", "description": "Run detached and return a task id at once."}));
        }
    }
    json!({"type": "object", "properties": props})
}

#[async_trait::async_trait]
impl Tool for DelegateTool {
    fn name(&self) -> &'static str {
        "delegate_task"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "delegate_task".into(),
            description: "Delegate bounded work to child agents. Give exactly one shape: single (role, name, task at the top level), parallel (`tasks`), or chain (`chain`).".into(),
            parameters: parameters_schema(true),
        }
    }

    fn read_only(&self) -> bool {
        false
    }

    async fn run(&self, args: Value, ctx: &ToolContext) -> ToolOutput {
        let req = match parse_request(&args) {
            Ok(r) => r,
            Err(e) => return ToolOutput::error(e),
        };
        let roles = match resolve_roles(&self.env, &req) {
            Ok(r) => r,
            Err(e) => return ToolOutput::error(e),
        };
        if req.background {
            return match background::start(&self.env.baton_exe, &self.env.state, &self.env.cwd, &req, (self.now)()) {
                Ok(id) => ToolOutput::ok(format!(
                    "Started background task {id}. Check it with the `task_status` tool (id {id}); `task_wait` gives its report when it ends, `task_cancel` stops it. (From a shell: `baton task status|wait|cancel {id}`.)"
                )),
                Err(e) => ToolOutput::error(e.to_string()),
            };
        }
        let run_id = background::new_task_id();
        let report = run_delegation(
            &self.env,
            &self.executor,
            &req,
            &roles,
            &run_id,
            &ctx.cancel,
            self.progress.clone(),
        )
        .await;
        let text = render_report(&report);
        if report.ok() {
            ToolOutput::ok(text)
        } else {
            ToolOutput::error(text)
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use serde_json::json;

    #[test]
    fn the_entry_schema_is_the_parsed_struct() {
        let entry = entry_schema();
        assert_eq!(entry["required"], json!(["role", "name", "task"]));
        assert_eq!(entry["additionalProperties"], json!(false));
        let fields: Vec<&String> = entry["properties"].as_object().unwrap().keys().collect();
        assert_eq!(
            fields,
            ["model", "model_class", "name", "role", "task", "thinking"]
        );
        assert_eq!(
            entry["properties"]["model_class"],
            json!({"type": "string", "enum": ["fast", "balanced", "frontier", "fav"]})
        );
        assert_eq!(
            entry["properties"]["thinking"],
            json!({"type": "string", "description": "Only when the user asked for it.",
                "enum": ["off", "minimal", "low", "medium", "high", "xhigh", "max"]})
        );
        // Every value the schema offers parses, and a field it does not offer is refused.
        for t in entry["properties"]["thinking"]["enum"].as_array().unwrap() {
            let req = parse_request(&json!({"role": "r", "name": "n", "task": "t", "thinking": t}));
            assert!(req.is_ok(), "{t}: {req:?}");
        }
        for c in entry["properties"]["model_class"]["enum"]
            .as_array()
            .unwrap()
        {
            let req = parse_request(
                &json!({"tasks": [{"role": "r", "name": "n", "task": "t", "model_class": c}]}),
            );
            assert!(req.is_ok(), "{c}: {req:?}");
        }
        let err = parse_request(
            &json!({"tasks": [{"role": "r", "name": "n", "task": "t", "colour": 1}]}),
        )
        .unwrap_err();
        assert!(err.contains("unknown field `colour`"), "{err}");
    }
}
