//! Who answers approvals (`agent.approval`): the loop asks its front end before a tool call runs.

/// A front end that answers approvals: the terminal UI asks its user. A session whose policy asks
/// and whose inbox has none fails closed at the first call that needs an answer.
#[async_trait::async_trait]
pub trait Approver: Send + Sync {
    async fn ask(&self, request: baton_protocol::ApprovalRequest)
        -> baton_protocol::ApprovalAnswer;
}
