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
    #[serde(default)]
    pub isolation: Option<Isolation>,
    #[serde(default)]
    pub model_class: Option<ModelClass>,
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
