//! Who answers approvals (`agent.approval`): the loop asks its front end before a tool call runs.

/// A front end that answers approvals: the terminal UI asks its user. A session whose policy asks
/// and whose inbox has none fails closed at the first call that needs an answer.
#[async_trait::async_trait]
pub trait Approver: Send + Sync {
    async fn ask(&self, request: baton_protocol::ApprovalRequest)
        -> baton_protocol::ApprovalAnswer;
}

/// The session's approval policy as its front end changes it while the session runs (the
/// terminal UI's Shift+Tab): read at each tool call, so a change applies from the next call.
/// Unset, the session's own policy (`agent.approval`, `--approval`) holds.
#[derive(Clone, Default, Debug)]
pub struct ApprovalSwitch(std::sync::Arc<std::sync::Mutex<Option<baton_protocol::ApprovalPolicy>>>);

impl ApprovalSwitch {
    pub fn set(&self, policy: baton_protocol::ApprovalPolicy) {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(policy);
    }

    /// The policy the front end set, if it set one.
    pub fn get(&self) -> Option<baton_protocol::ApprovalPolicy> {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
