//! Approvals: before a tool call runs, the agent loop may ask its front end (`agent.approval`).
//! The policy, what the loop asks and what the front end answers. Approval is independent of the
//! sandbox: a "yes" never widens what a command may do.

use serde::{Deserialize, Serialize};

crate::closed_set! {
    /// When the loop asks before a tool call runs (`agent.approval`, `--approval`).
    #[derive(Default)]
    pub enum ApprovalPolicy ("approval policy") {
        /// Never ask (the default): the sandbox alone bounds what runs.
        #[default]
        Never = "never",
        /// Ask before every call of a tool that changes something (`write`, `edit`, `bash`, the
        /// delegation tools, MCP server tools): every tool that is not read-only.
        OnWrite = "on-write",
        /// Ask before every tool call.
        Always = "always",
    }
}

impl ApprovalPolicy {
    /// Whether a call of a tool that is (or is not) read-only needs an answer first.
    pub fn asks(self, read_only: bool) -> bool {
        match self {
            ApprovalPolicy::Never => false,
            ApprovalPolicy::OnWrite => !read_only,
            ApprovalPolicy::Always => true,
        }
    }
}

/// One tool call waiting for the user's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    /// The call's item id (`item.started` named it).
    pub item_id: String,
    pub tool: String,
    pub arguments: serde_json::Value,
    /// The file or directory the call works on, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// The user's answer to an [`ApprovalRequest`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum ApprovalAnswer {
    /// Run this call.
    Yes,
    /// Run this call and every later call of the same tool in this session without asking.
    Always,
    /// Do not run it; `feedback` (possibly empty) goes to the model as the call's result.
    No { feedback: String },
}
