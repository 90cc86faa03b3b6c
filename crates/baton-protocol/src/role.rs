//! Role specifications. Parsing Markdown files into them lives in `baton-agent::roles`.

use serde::{Deserialize, Serialize};

use crate::route::ModelClass;

/// Where a role definition came from; later sources override earlier ones by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "path", rename_all = "snake_case")]
pub enum RoleSource {
    /// Shipped inside the baton binary.
    Builtin,
    /// `~/.config/baton/roles/NAME.md`.
    User(String),
    /// `.baton/roles/NAME.md`.
    Project(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Isolation {
    /// Run in a separate git worktree (used by delegation).
    Worktree,
}

/// The YAML frontmatter of a role file, exactly as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleFrontmatter {
    pub name: String,
    pub description: String,
    /// Tools the model is offered. Required; `[]` offers none.
    pub tools: Vec<String>,
    #[serde(default)]
    pub skills: Vec<String>,
    #[serde(default)]
    pub mcp: Vec<String>,
    /// pi's `extensions` array, accepted so a pi role file reads: baton loads no pi extension
    /// (each is named in a warning when the role is used; MCP servers go under `mcp`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    #[serde(default)]
    pub isolation: Option<Isolation>,
    #[serde(default)]
    pub model_class: Option<ModelClass>,
    /// Which agent runs the role when delegated; the config's `executor.backend` when absent.
    #[serde(default)]
    pub backend: Option<BackendKind>,
    /// For `backend: command`: the program and its arguments.
    #[serde(default)]
    pub command: Option<Vec<String>>,
    /// How the role's `bash` commands are confined; the config's `sandbox.mode` when absent.
    #[serde(default)]
    pub sandbox: Option<crate::sandbox::SandboxMode>,
}

crate::closed_set! {
    /// The agent program a delegated task runs in.
    pub enum BackendKind ("backend") {
        /// `baton agent --json`, the native child.
        Baton = "baton",
        /// `pi --mode json -p --no-session`.
        Pi = "pi",
        /// `codex exec --json`.
        Codex = "codex",
        /// `claude -p --output-format stream-json`.
        Claude = "claude",
        /// Any executable: the task on stdin, context in `BATON_*` variables, stdout as the result.
        Command = "command",
    }
}

/// A validated role: frontmatter, instructions and origin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoleSpec {
    #[serde(flatten)]
    pub meta: RoleFrontmatter,
    /// The Markdown body: the role's instructions, used as its system prompt.
    pub body: String,
    pub source: RoleSource,
}

impl RoleSpec {
    pub fn name(&self) -> &str {
        &self.meta.name
    }
}
