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

/// The most bytes a piece of filesystem work may read to run on the session's own thread
/// ([`blocking_small`]).
const INLINE_MAX_BYTES: u64 = 1 << 20;

/// Like [`blocking`], but work that reads at most [`INLINE_MAX_BYTES`] runs on the calling
/// thread when the runtime has only that one (a `baton agent` session, a delegated child):
/// handing it to the blocking pool there costs a thread and a hand-over each way, more than a
/// small read itself (a short session 0.93× the wall without it, bench/README.md). `size` is
/// asked only on such a runtime (`None`: unknown). Anything larger, of unknown size, or on a
/// runtime of several threads goes to the pool, where the heartbeat and interrupts keep going
/// while it runs.
pub(crate) async fn blocking_small<F>(
    tool: &'static str,
    size: impl FnOnce() -> Option<u64>,
    work: F,
) -> ToolOutput
where
    F: FnOnce() -> ToolOutput + Send + 'static,
{
    let one_thread = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread);
    if one_thread && size().is_some_and(|s| s <= INLINE_MAX_BYTES) {
        return match std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)) {
            Ok(out) => out,
            Err(_) => ToolOutput::error(format!("`{tool}` failed internally: it panicked")),
        };
    }
    blocking(tool, work).await
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

    /// The thread a piece of work ran on, as a tool result.
    fn on_thread() -> ToolOutput {
        ToolOutput::ok(format!("{:?}", std::thread::current().id()))
    }

    #[test]
    fn small_work_runs_on_the_session_s_own_thread_only_when_it_has_one() {
        let here = format!("{:?}", std::thread::current().id());
        let one = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let small = one.block_on(blocking_small("t", || Some(36), on_thread));
        assert_eq!(small.output, here);
        for size in [None, Some(INLINE_MAX_BYTES + 1)] {
            let pooled = one.block_on(blocking_small("t", || size, on_thread));
            assert_ne!(pooled.output, here, "{size:?}");
        }
        let broke = one.block_on(blocking_small("t", || Some(1), || panic!("boom")));
        assert!(
            broke.is_error && broke.output.contains("panicked"),
            "{}",
            broke.output
        );
        let many = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap();
        let pooled = many.block_on(blocking_small(
            "t",
            || panic!("the size is asked only on a runtime of one thread"),
            on_thread,
        ));
        assert_ne!(pooled.output, here);
    }

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
