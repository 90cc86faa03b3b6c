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

mod args;
mod bash;
mod edit;
mod find;
mod fsutil;
mod grep;
mod ls;
mod paths;
mod read;
mod text;
mod walk;
mod write;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

pub use bash::BashTool;
pub use edit::EditTool;
pub use find::FindTool;
pub use grep::GrepTool;
pub use ls::LsTool;
pub use paths::{resolve_in_root, PathError};
pub use read::ReadTool;
pub use write::WriteTool;

/// The default per-call timeout of `bash` when a context is built with [`ToolContext::new`].
pub const DEFAULT_BASH_TIMEOUT: Duration = Duration::from_secs(120);

/// Where and how tools run.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The workspace root. Every path a tool touches must lie under it (after symlinks are
    /// resolved). It need not be canonical; tools canonicalize it themselves.
    pub root: PathBuf,
    /// The directory relative paths resolve against, and where `bash` runs. A relative `cwd`
    /// is taken relative to `root`. It must lie inside the root.
    pub cwd: PathBuf,
    /// The default timeout of one `bash` call. A call may ask for another one with its
    /// `timeout` argument, up to ten times this value.
    pub bash_timeout: Duration,
    /// Cancelling this token kills a running `bash` command (its whole process group) and
    /// makes the tool return promptly.
    pub cancel: CancellationToken,
}

impl ToolContext {
    /// A context rooted at `root`, with `cwd` equal to the root, the default bash timeout and
    /// a fresh cancellation token.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        let root = std::fs::canonicalize(&root).unwrap_or(root);
        ToolContext {
            cwd: root.clone(),
            root,
            bash_timeout: DEFAULT_BASH_TIMEOUT,
            cancel: CancellationToken::new(),
        }
    }

    /// The same context with another working directory (absolute, or relative to the root).
    pub fn with_cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        let cwd = cwd.into();
        self.cwd = if cwd.is_absolute() {
            cwd
        } else {
            self.root.join(cwd)
        };
        self
    }

    /// The same context with another default bash timeout.
    pub fn with_bash_timeout(mut self, timeout: Duration) -> Self {
        self.bash_timeout = timeout;
        self
    }

    /// The same context with another cancellation token.
    pub fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }
}

/// What a tool call produced.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolOutput {
    /// The text the model sees. Always bounded in size.
    pub output: String,
    /// Whether the call failed (bad arguments, refused path, non-zero exit, timeout, …).
    pub is_error: bool,
    /// The exit code of a `bash` command, when it exited on its own (128 + N when a signal N
    /// ended it). `None` for other tools, and for commands that were timed out or cancelled.
    pub exit_code: Option<i32>,
    /// The path the call worked on, as the model gave it.
    pub path: Option<String>,
}

impl ToolOutput {
    /// A successful result.
    pub fn ok(output: impl Into<String>) -> Self {
        ToolOutput {
            output: output.into(),
            ..ToolOutput::default()
        }
    }

    /// A failed result.
    pub fn error(output: impl Into<String>) -> Self {
        ToolOutput {
            output: output.into(),
            is_error: true,
            ..ToolOutput::default()
        }
    }

    /// The same result, recording the path it worked on.
    pub fn with_path(mut self, path: Option<impl Into<String>>) -> Self {
        self.path = path.map(Into::into);
        self
    }
}

/// One tool the agent can call.
#[async_trait::async_trait]
pub trait Tool: Send + Sync {
    /// The name the model calls the tool by.
    fn name(&self) -> &'static str;
    /// The description and JSON Schema offered to the model.
    fn spec(&self) -> baton_protocol::ToolSpec;
    /// Whether the tool only looks (never changes files or runs commands); the agent loop may
    /// run calls to such tools concurrently.
    fn read_only(&self) -> bool;
    /// Runs one call. Never panics; every failure is reported as `is_error: true`.
    async fn run(&self, args: serde_json::Value, ctx: &ToolContext) -> ToolOutput;
}

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
