//! The contract between baton's agent loop and the tools it offers a model.
//!
//! - [`Tool`]: a name, a [`baton_protocol::ToolSpec`] (description and JSON Schema), whether it
//!   only reads, and `run`, which takes the call's JSON arguments and a [`ToolContext`] and
//!   answers with a [`ToolOutput`]. The built-in file and shell tools, `delegate_task` and the
//!   Flow tools all implement it.
//! - [`args`]: arguments parsed into a typed struct ([`parse_args`]) whose JSON Schema is derived
//!   from the same struct ([`schema_for`]), so what a tool announces and what it accepts cannot
//!   drift apart; errors name the field at fault.

pub mod args;
pub mod env;

use std::path::PathBuf;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

pub use args::{parse_args, schema_for, ArgError};
pub use baton_sandbox::protect;
pub use baton_sandbox::watch::Watch;
pub use baton_sandbox::{Policy as SandboxPolicy, SandboxMode, Support as SandboxSupport};
pub use env::EnvFilter;

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
    /// What `bash` commands do not get of baton's environment (provider keys and tokens).
    pub env_filter: EnvFilter,
    /// How `bash` commands are confined (see `baton-sandbox`); `workspace-write` with the
    /// network off by default. The workspace of the sandbox is `root`.
    pub sandbox: SandboxPolicy,
    /// The temp dir of the session: `bash` commands get it as `TMPDIR`, and a sandboxed command
    /// may write in it. `None`: `TMPDIR` is left alone and no temp dir is writable.
    pub tmp_dir: Option<PathBuf>,
    /// Folders outside `root` that `read` may also read (the session's skills): never written.
    pub read_roots: Vec<PathBuf>,
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
            env_filter: EnvFilter::default(),
            sandbox: SandboxPolicy::default(),
            tmp_dir: None,
            read_roots: Vec::new(),
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

    /// The same context with another environment filter for `bash`.
    pub fn with_env_filter(mut self, filter: EnvFilter) -> Self {
        self.env_filter = filter;
        self
    }

    /// The same context with another sandbox for `bash` and the session's temp dir.
    pub fn with_sandbox(mut self, sandbox: SandboxPolicy, tmp_dir: Option<PathBuf>) -> Self {
        self.sandbox = sandbox;
        self.tmp_dir = tmp_dir;
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
