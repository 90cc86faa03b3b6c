//! The agent event stream: one JSON object per line, tagged by `type`.
//!
//! The schema is documented in `docs/protocol.md`; [`PROTOCOL_VERSION`] changes whenever a field is
//! removed or its meaning changes (adding optional fields does not bump it).

use serde::{Deserialize, Serialize};

use crate::message::Usage;

/// Version of the event stream, carried in `session.started`.
pub const PROTOCOL_VERSION: u32 = 1;

/// One event of `baton agent --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum AgentEvent {
    #[serde(rename = "session.started")]
    SessionStarted {
        protocol_version: u32,
        session_id: String,
        role: String,
        /// The resolved route, `provider/model[:thinking]`.
        model: String,
        cwd: String,
        /// True when this session continues an earlier transcript (`--resume`).
        #[serde(default)]
        resumed: bool,
    },
    #[serde(rename = "turn.started")]
    TurnStarted { turn: u32 },
    /// A model request failed in a way that is retried; the turn starts over.
    #[serde(rename = "turn.retrying")]
    TurnRetrying {
        turn: u32,
        attempt: u32,
        delay_ms: u64,
        error: ErrorInfo,
    },
    #[serde(rename = "item.started")]
    ItemStarted { item: Item },
    /// Streamed text for an `agent_message` or `reasoning` item that has started.
    #[serde(rename = "item.delta")]
    ItemDelta { item_id: String, delta: String },
    #[serde(rename = "item.completed")]
    ItemCompleted { item: Item },
    /// A running item again, unchanged: sent periodically while tool calls run, as a heartbeat.
    #[serde(rename = "item.updated")]
    ItemUpdated { item: Item },
    #[serde(rename = "turn.completed")]
    TurnCompleted {
        turn: u32,
        usage: Usage,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
    },
    #[serde(rename = "turn.failed")]
    TurnFailed { turn: u32, error: ErrorInfo },
    #[serde(rename = "session.completed")]
    SessionCompleted {
        outcome: Outcome,
        /// Why the session ended early: `turn_limit`, `cancelled`, `model_error`; absent when it simply finished.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        final_message: String,
        turns: u32,
        usage: Usage,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
    },
}

/// A stable error code and a human message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorInfo {
    pub code: String,
    pub message: String,
}

/// How a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The model stopped calling tools and answered.
    Completed,
    /// Stopped early (turn limit, cancellation); the final message says what was done.
    Partial,
    /// The model could not be used (error after retries).
    Failed,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::Partial => "partial",
            Outcome::Failed => "failed",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemStatus {
    InProgress,
    Completed,
    Failed,
    /// Refused by the host (tool policy, path confinement) and never executed.
    Declined,
}

/// One unit of work inside a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    pub id: String,
    pub status: ItemStatus,
    #[serde(flatten)]
    pub kind: ItemKind,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ItemKind {
    AgentMessage {
        text: String,
    },
    Reasoning {
        text: String,
    },
    ToolCall {
        /// The provider's call id.
        call_id: String,
        tool: String,
        arguments: serde_json::Value,
        /// The file or directory the call works on, when it has one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn events_serialize_with_dotted_type_tags() {
        let ev = AgentEvent::ItemCompleted {
            item: Item {
                id: "item_3".into(),
                status: ItemStatus::Declined,
                kind: ItemKind::ToolCall {
                    call_id: "call_1".into(),
                    tool: "bash".into(),
                    arguments: serde_json::json!({"command": "ls"}),
                    path: None,
                    output: Some("tool not allowed".into()),
                    exit_code: None,
                },
            },
        };
        let text = serde_json::to_string(&ev).unwrap();
        assert_eq!(
            text,
            r#"{"type":"item.completed","item":{"id":"item_3","status":"declined","type":"tool_call","call_id":"call_1","tool":"bash","arguments":{"command":"ls"},"output":"tool not allowed"}}"#
        );
        let back: AgentEvent = serde_json::from_str(&text).unwrap();
        assert_eq!(back, ev);
    }
}
