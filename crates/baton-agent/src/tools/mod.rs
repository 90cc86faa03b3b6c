//! The agent's built-in tools: `read`, `write`, `edit`, `bash`, `grep`, `find` and `ls`.
//!
//! Every tool takes a JSON object of arguments and a [`ToolContext`], and answers with a
//! [`ToolOutput`]: bounded text for the model plus a few structured fields for events.
//! Tools never panic on bad input; malformed arguments come back as `is_error: true` with a
//! message that names the field and shows the expected shape.
//!
//! All paths are confined to the workspace root ([`ToolContext::root`]): relative paths are
//! resolved against [`ToolContext::cwd`], `..` components and symlinks are followed the way the
//! operating system would follow them, and anything that ends up outside the root is refused.

mod bash;
mod edit;
mod find;
pub(crate) mod fsutil;
mod grep;
mod ls;
mod paths;
mod read;
mod text;
mod walk;
mod write;

use std::sync::Arc;

pub use bash::BashTool;
pub use edit::EditTool;
pub use find::FindTool;
pub use grep::GrepTool;
pub use ls::LsTool;
pub use paths::{resolve_in_root, PathError};
pub use read::ReadTool;
pub use write::WriteTool;

// The tool contract lives in `baton-tool` so that crates above the agent loop (the executor, Flow)
// can offer tools without depending on the loop; it is re-exported here for the built-in tools.
pub use baton_tool::{
    EnvFilter, SandboxMode, SandboxPolicy, SandboxSupport, Tool, ToolContext, ToolOutput,
    DEFAULT_BASH_TIMEOUT,
};

/// The built-in tools, in the order they are offered to the model:
/// `read`, `write`, `edit`, `bash`, `grep`, `find`, `ls`.
pub fn builtin_tools() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(ReadTool),
        Arc::new(WriteTool),
        Arc::new(EditTool),
        Arc::new(BashTool),
        Arc::new(GrepTool),
        Arc::new(FindTool),
        Arc::new(LsTool),
    ]
}

/// The `path` argument of a call, if it has one, so that events can name the path before the
/// tool has run. Accepts the arguments either as an object or as the JSON text of one.
pub fn tool_path_hint(args: &serde_json::Value) -> Option<String> {
    match args {
        serde_json::Value::Object(map) => {
            map.get("path").and_then(|p| p.as_str()).map(str::to_owned)
        }
        serde_json::Value::String(text) => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(value @ serde_json::Value::Object(_)) => tool_path_hint(&value),
            _ => None,
        },
        _ => None,
    }
}

/// Runs blocking filesystem work off the async executor, turning a panic or cancellation of
/// the worker into an error result instead of propagating it.
pub(crate) async fn blocking<F>(tool: &'static str, work: F) -> ToolOutput
where
    F: FnOnce() -> ToolOutput + Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(out) => out,
        Err(err) => ToolOutput::error(format!("`{tool}` failed internally: {err}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn builtin_order_and_specs() {
        let tools = builtin_tools();
        let names: Vec<_> = tools.iter().map(|t| t.name()).collect();
        assert_eq!(
            names,
            ["read", "write", "edit", "bash", "grep", "find", "ls"]
        );
        for tool in &tools {
            let spec = tool.spec();
            assert_eq!(spec.name, tool.name());
            assert!(!spec.description.is_empty());
            assert_eq!(spec.parameters["type"], "object");
            assert!(spec.parameters["properties"].is_object());
        }
        let ro: Vec<_> = tools
            .iter()
            .filter(|t| t.read_only())
            .map(|t| t.name())
            .collect();
        assert_eq!(ro, ["read", "grep", "find", "ls"]);
    }

    #[test]
    fn path_hint() {
        assert_eq!(
            tool_path_hint(&json!({"path": "a/b.rs"})).as_deref(),
            Some("a/b.rs")
        );
        assert_eq!(tool_path_hint(&json!({"command": "ls"})), None);
        assert_eq!(tool_path_hint(&json!({"path": 3})), None);
        assert_eq!(
            tool_path_hint(&json!("{\"path\":\"x\"}")).as_deref(),
            Some("x")
        );
        assert_eq!(tool_path_hint(&json!(null)), None);
    }
}
