//! `delegate_flow` and `delegate_flow_continue` as tools of a main agent session, with the same
//! contract as `baton flow start` and `baton flow continue`. Children never get them (a child
//! runs with `BATON_CHILD=1` and is offered no delegation tools).

use std::sync::Arc;

use baton_protocol::{ModelClass, ToolSpec};
use baton_tool::args::{parse_tool_args, schema_for};
use baton_tool::{Tool, ToolContext, ToolOutput};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::engine::{abandon, continue_flow, resume, start, FlowEnv, FlowError, FlowStatus};
use crate::render::report;
use crate::state::Phase;
use crate::units::{parse_units, UnitSpec};

/// The main-side policy for Flow, added to a main session's system prompt next to delegation's.
pub const FLOW_POLICY: &str = "# Flow\n\
`delegate_flow` lands 1 to 8 independent changes at once. Each unit gets its own git worktree and implementer, all running in parallel; then, in the order you list them, Flow rebases each unit onto the branch as earlier units advanced it, runs the unit's validation commands, has a reviewer judge the unit's `review` criterion if it has one, and fast-forward merges it.\n\
- Use Flow only for changes that commute. Units that touch the same files, APIs, schemas, lockfiles or generated output must be combined into one unit or sequenced (for example with a `delegate_task` chain) instead.\n\
- A unit is {id, name, task, validation: [{command, args}], model_class?, review?}. Write each task so it stands alone. Validation commands run directly, without a shell, and are the authority on objective checks; add `review` only for a judgment they cannot make. Choose `model_class` as for delegate_task: `fast` normally, `balanced` for obviously complex work.\n\
- The repository must be on a branch with a clean, committed working tree.\n\
- A unit that blocks (implementer failure, no commits, uncommitted changes, failing validation, review findings) pauses the Flow. Call `delegate_flow_continue` once with concrete guidance drawn from the evidence; a second block ends the Flow. A Flow that ends early keeps its unfinished worktrees for you to reslice; integrated units stay integrated.\n\
- Only one Flow is active at a time. An interrupted one (its run was stopped) goes on with `delegate_flow_resume`; a paused or interrupted one you will not finish is given up with `delegate_flow_abandon` (merged units stay merged, the rest stay in their worktrees).";

/// `delegate_flow`.
pub struct DelegateFlowTool {
    pub env: Arc<FlowEnv>,
}

const CONTINUE_USAGE: &str =
    r#"{"guidance": "make the test use a temp dir", "model_class": "balanced"}"#;

/// What `delegate_flow_continue` takes; its JSON Schema is the tool's `parameters`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ContinueArgs {
    /// What the implementer should do differently, based on the evidence.
    guidance: String,
    /// Replaces the unit's class for this repair (implementer and reviewer); omit to keep it.
    #[serde(default, alias = "modelClass")]
    #[schemars(schema_with = "baton_tool::args::model_class_schema")]
    model_class: Option<ModelClass>,
}

/// `delegate_flow_continue`.
pub struct DelegateFlowContinueTool {
    pub env: Arc<FlowEnv>,
}

/// The schema of one unit, derived from the struct units are parsed into.
fn unit_schema() -> Value {
    baton_tool::args::schema_for::<UnitSpec>()
}

fn render(result: Result<FlowStatus, FlowError>) -> ToolOutput {
    match result {
        Ok(status) => {
            let text = report(&status);
            match status.phase {
                Phase::Completed | Phase::Abandoned => ToolOutput::ok(text),
                Phase::Paused => ToolOutput::error(format!(
                    "{text}\n\nCall delegate_flow_continue({{guidance, model_class?}}) to repair the blocked unit once, or delegate_flow_abandon({{reason?}}) to give the Flow up."
                )),
                Phase::Interrupted => ToolOutput::error(format!(
                    "{text}\n\nCall delegate_flow_resume({{}}) to continue it, or delegate_flow_abandon({{reason?}}) to give it up."
                )),
                Phase::Running | Phase::Failed => ToolOutput::error(text),
            }
        }
        Err(e) => ToolOutput::error(format!(
            "{e}\n(in this session: delegate_flow_resume continues an interrupted Flow, delegate_flow_abandon gives one up)"
        )),
    }
}

/// `delegate_flow_resume`: `baton flow resume` for the session's interrupted Flow.
pub struct DelegateFlowResumeTool {
    pub env: Arc<FlowEnv>,
}

/// `delegate_flow_abandon`: `baton flow abandon` for the session's paused or interrupted Flow.
pub struct DelegateFlowAbandonTool {
    pub env: Arc<FlowEnv>,
}

/// What `delegate_flow_abandon` takes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AbandonArgs {
    /// Why the Flow is given up (kept in its record).
    #[serde(default)]
    reason: Option<String>,
}

#[async_trait::async_trait]
impl Tool for DelegateFlowResumeTool {
    fn name(&self) -> &'static str {
        "delegate_flow_resume"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "delegate_flow_resume".into(),
            description: "Continue the interrupted Flow (its run was stopped or killed) from the first unit not yet merged; a unit already merged is never merged again.".into(),
            parameters: json!({"type": "object", "properties": {}}),
        }
    }

    fn read_only(&self) -> bool {
        false
    }

    async fn run(&self, _args: Value, ctx: &ToolContext) -> ToolOutput {
        render(resume(&self.env, None, &ctx.cancel).await)
    }
}

#[async_trait::async_trait]
impl Tool for DelegateFlowAbandonTool {
    fn name(&self) -> &'static str {
        "delegate_flow_abandon"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "delegate_flow_abandon".into(),
            description: "Give up the paused or interrupted Flow: nothing more runs, merged units stay merged, the other units' worktrees and branches are kept.".into(),
            parameters: schema_for::<AbandonArgs>(),
        }
    }

    fn read_only(&self) -> bool {
        false
    }

    async fn run(&self, args: Value, _ctx: &ToolContext) -> ToolOutput {
        let args = match parse_tool_args::<AbandonArgs>(
            "delegate_flow_abandon",
            r#"{"reason": "the units overlap"}"#,
            args,
        ) {
            Ok(a) => a,
            Err(msg) => return ToolOutput::error(msg),
        };
        render(abandon(&self.env, None, args.reason.as_deref()))
    }
}

#[async_trait::async_trait]
impl Tool for DelegateFlowTool {
    fn name(&self) -> &'static str {
        "delegate_flow"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "delegate_flow".into(),
            description: "Implement 1-8 independent, commuting changes in parallel git worktrees, then validate, optionally review, and fast-forward merge each into the current branch in the listed order.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "units": {"type": "array", "minItems": 1, "maxItems": 8, "items": unit_schema()}
                },
                "required": ["units"]
            }),
        }
    }

    fn read_only(&self) -> bool {
        false
    }

    async fn run(&self, args: Value, ctx: &ToolContext) -> ToolOutput {
        let units = match args.as_object() {
            Some(obj) if obj.contains_key("units") => parse_units(&args),
            Some(_) | None => {
                return ToolOutput::error("delegate_flow takes {\"units\": [{id, name, task, validation: [{command, args}], model_class?, review?}]}")
            }
        };
        let units = match units {
            Ok(u) => u,
            Err(e) => return ToolOutput::error(e.to_string()),
        };
        render(start(&self.env, &units, &ctx.cancel).await)
    }
}

#[async_trait::async_trait]
impl Tool for DelegateFlowContinueTool {
    fn name(&self) -> &'static str {
        "delegate_flow_continue"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "delegate_flow_continue".into(),
            description: "Repair the blocked unit of the paused Flow once: its implementer runs again in the same worktree with the original task, the validation, the block's evidence and your guidance.".into(),
            parameters: schema_for::<ContinueArgs>(),
        }
    }

    fn read_only(&self) -> bool {
        false
    }

    async fn run(&self, args: Value, ctx: &ToolContext) -> ToolOutput {
        let args =
            match parse_tool_args::<ContinueArgs>("delegate_flow_continue", CONTINUE_USAGE, args) {
                Ok(a) => a,
                Err(msg) => return ToolOutput::error(msg),
            };
        let (guidance, class) = (args.guidance.as_str(), args.model_class);
        render(continue_flow(&self.env, None, guidance, class, &ctx.cancel).await)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use serde_json::json;

    #[test]
    fn the_unit_schema_is_the_parsed_struct() {
        let unit = unit_schema();
        assert_eq!(
            unit["required"],
            json!(["id", "name", "task", "validation"])
        );
        assert_eq!(unit["additionalProperties"], json!(false));
        assert_eq!(unit["properties"]["validation"]["minItems"], json!(1));
        let command = &unit["properties"]["validation"]["items"];
        assert_eq!(command["required"], json!(["command"]));
        assert_eq!(command["additionalProperties"], json!(false));
        assert!(unit["properties"]["id"]["description"]
            .as_str()
            .unwrap()
            .contains(&format!("at most {} characters", crate::units::MAX_ID_LEN)));
        // A unit using every field the schema offers, each class it lists, parses; a field it
        // does not offer is refused.
        for class in unit["properties"]["model_class"]["enum"]
            .as_array()
            .unwrap()
        {
            let full = json!([{"id": "a", "name": "A", "task": "t", "model_class": class,
                "validation": [{"command": "true", "args": ["x"]}], "review": "r"}]);
            let fields: Vec<&String> = full[0].as_object().unwrap().keys().collect();
            let offered: Vec<&String> = unit["properties"].as_object().unwrap().keys().collect();
            assert_eq!(fields, offered);
            assert!(parse_units(&full).is_ok(), "{class}");
        }
        let extra = json!([{"id": "a", "name": "A", "task": "t",
            "validation": [{"command": "true"}], "colour": 1}]);
        assert_eq!(parse_units(&extra).unwrap_err().field, "units[0].colour");
    }

    #[test]
    fn continue_arguments_are_typed_and_named_in_errors() {
        let ok: ContinueArgs = parse_tool_args(
            "delegate_flow_continue",
            CONTINUE_USAGE,
            json!({"guidance": "g", "modelClass": "fast"}),
        )
        .unwrap();
        assert_eq!(ok.model_class, Some(ModelClass::Fast));
        for (bad, want) in [
            (json!({}), "`guidance` is required"),
            (
                json!({"guidance": "g", "model_class": "huge"}),
                "`model_class` must be one of",
            ),
            (
                json!({"guidance": "g", "units": []}),
                "unknown field `units`",
            ),
        ] {
            let err =
                parse_tool_args::<ContinueArgs>("delegate_flow_continue", CONTINUE_USAGE, bad)
                    .unwrap_err();
            assert!(err.contains(want), "{err}");
        }
    }
}
