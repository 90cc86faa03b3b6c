//! Types shared by the executor, backends and delegation.

use std::path::PathBuf;
use std::time::Duration;

use baton_protocol::Usage;
use serde::{Deserialize, Serialize};

/// Default bound on one call's assistant-visible output, across all its children.
pub const DEFAULT_OUTPUT_CAP: usize = 50 * 1024;
/// Longest stdout line of a child that is parsed; longer lines are skipped (tool starts salvaged).
pub const MAX_EVENT_LINE: usize = 1024 * 1024;
/// A text field longer than this drops the activity event that carries it.
pub const MAX_ACTIVITY_TEXT: usize = 4 * 1024;

/// How a child's stdout is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamFormat {
    /// `baton agent --json` (docs/protocol.md).
    Baton,
    /// `pi --mode json`, full or delta-only `message_update` forms.
    Pi,
    /// `codex exec --json`.
    Codex,
    /// `claude -p --output-format stream-json`.
    Claude,
    /// Plain stdout: the whole output is the result (the `command` backend).
    Plain,
}

/// One fully prepared child process.
#[derive(Debug, Clone, PartialEq)]
pub struct Launch {
    pub program: PathBuf,
    pub args: Vec<String>,
    /// Added to the inherited environment.
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    /// Written to the child's stdin, which is then closed; `None` gives the child a null stdin.
    pub stdin: Option<String>,
    pub format: StreamFormat,
    /// Shown in status and errors: the model route, or the command for `command` children.
    pub model_label: String,
    pub thinking_label: Option<String>,
    /// The sandbox and environment a `command` child runs under: its role's sandbox and the
    /// environment allow-list, as a model's `bash` command gets. `None` for baton's own agent
    /// (which confines the commands it runs itself) and for the peer CLIs (which apply their own
    /// sandboxes).
    pub confine: Option<Confine>,
}

/// How a child is confined ([`Launch::confine`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Confine {
    pub policy: baton_tool::SandboxPolicy,
    pub env: baton_tool::EnvFilter,
}

/// Time limits of one child. Queued time never counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Kill the child when it prints no event for this long.
    pub idle_timeout: Duration,
    /// Kill the child when it runs this long in all.
    pub max_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            idle_timeout: Duration::from_secs(600),
            max_timeout: Duration::from_secs(1800),
        }
    }
}

/// What a child is doing, delivered to the caller in the child's order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Activity {
    /// The child process started (after the permit and preparation): its pid (the guard's, when
    /// it runs under one: the process to signal) and start time, so a later reader can tell it
    /// from a process that reused the pid.
    Started {
        pid: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        start_time: Option<u64>,
    },
    /// The child waits to start: every slot of the project-wide ceiling is taken by another baton
    /// process of the project (`reason` says how many).
    Waiting { reason: String },
    /// The model is thinking or streaming text.
    Thinking,
    ToolStart {
        call_id: String,
        tool: String,
        /// Omitted when absent or when it holds control characters.
        path: Option<String>,
    },
    ToolEnd {
        call_id: String,
        tool: String,
        is_error: bool,
    },
    /// An assistant message (or turn) ended.
    MessageEnd { turn: u32 },
    /// Cumulative token counts so far.
    Tokens { usage: Usage },
}

/// How a child that ran to the end did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChildStatus {
    Success,
    /// The child ran but its model or command failed.
    Failure,
}

/// A child that ran to its end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChildResult {
    pub status: ChildStatus,
    pub exit_code: Option<i32>,
    /// The assistant-visible output: the final message (bounded by the call's budget).
    pub output: String,
    /// Bytes of the final message cut before `output`, as the marker at its end states (0 when
    /// it is whole).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub omitted: usize,
    /// The child's stderr, bounded.
    pub stderr: String,
    /// The child's reported stop reason or outcome, when it gave one.
    pub stop_reason: Option<String>,
    pub usage: Usage,
    pub turns: u32,
    pub tools_started: u32,
    pub duration_ms: u64,
    /// The error the child reported (a model failure and the like), when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// What the child said its run cost in USD (Claude Code's `total_cost_usd`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// The child's own session id, when its stream named it (see `ParsedEnd::session_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Stdout lines that were not parsed.
    #[serde(default)]
    pub skipped: SkippedLines,
}

/// Counts of stdout lines the executor could not use; none of them is fatal.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedLines {
    /// Lines that were not an event of the child's format.
    pub malformed: u32,
    /// Lines longer than [`MAX_EVENT_LINE`] (a tool start among them is still reported).
    pub oversized: u32,
    /// An unterminated last line at end of stream.
    pub partial: u32,
}

baton_protocol::closed_set! {
    /// Stable codes of executor errors.
    pub enum ExecErrorCode ("exec error code") {
        Aborted = "aborted",
        Timeout = "timeout",
        TurnLimit = "turn_limit",
        TokenLimit = "token_limit",
        Spawn = "spawn",
        Protocol = "protocol",
        Prepare = "prepare",
        Callback = "callback",
    }
}

/// The executor could not bring the child to a normal end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{}: {message}", code.as_str())]
pub struct ExecError {
    pub code: ExecErrorCode,
    pub message: String,
    /// What the child produced before it was stopped, when it started at all.
    pub partial: Option<Box<ChildResult>>,
}

impl ExecError {
    pub fn new(code: ExecErrorCode, message: impl Into<String>) -> Self {
        ExecError {
            code,
            message: message.into(),
            partial: None,
        }
    }
}

#[allow(clippy::trivially_copy_pass_by_ref)]
pub(crate) fn is_zero(n: &usize) -> bool {
    *n == 0
}
