//! The agent event stream: one JSON object per line, tagged by `type`.
//!
//! The schema is documented in `docs/protocol.md`; [`PROTOCOL_VERSION`] changes whenever a field is
//! removed or its meaning changes (adding optional fields does not bump it).

use serde::{Deserialize, Serialize};

use crate::message::Usage;

/// Version of the event stream, carried in `session.started`.
pub const PROTOCOL_VERSION: u32 = 1;

/// The sandbox of a session's `bash` commands, as `session.started` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxInfo {
    pub mode: crate::sandbox::SandboxMode,
    /// What a command may write (empty in `danger-full-access`: everything the user may).
    pub writable: Vec<String>,
    /// Whether commands may use the network.
    pub network: bool,
}

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
        /// How the session's `bash` commands are confined.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sandbox: Option<SandboxInfo>,
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
    /// The session's route failed in a way another route may not (out of quota or usage,
    /// overloaded, rate limited after its retries): from this turn on, the session runs on the
    /// next route of its model class, and this turn starts over there. No tool call runs twice:
    /// tools run only after a complete turn.
    #[serde(rename = "turn.route_changed")]
    TurnRouteChanged {
        turn: u32,
        /// The route that failed, `provider/model[:thinking]`.
        from: String,
        /// The route the session continues on.
        to: String,
        /// Why `from` failed.
        error: ErrorInfo,
    },
    /// The user switched the session's route (`/model`): from the next turn on it runs on `to`.
    #[serde(rename = "session.route_set")]
    SessionRouteSet {
        /// The route it ran on, `provider/model[:thinking]`.
        from: String,
        /// The route it runs on from now.
        to: String,
    },
    /// The user cleared the conversation (`/clear`): the model's next request holds none of
    /// the `messages` before (the transcript keeps them).
    #[serde(rename = "session.cleared")]
    SessionCleared { messages: usize },
    /// A prompt changed files (in a git repository): the tree before its first tool call that
    /// may write and after its answer are saved, and `/undo N` puts its files (and those of every
    /// later checkpoint) back. `checkpoint` counts the session's checkpoints from 1.
    #[serde(rename = "checkpoint.saved")]
    CheckpointSaved {
        checkpoint: u32,
        /// The prompt's first line.
        input: String,
        /// How many files the prompt changed.
        files: usize,
    },
    /// `/undo N`: the files checkpoint `checkpoint` and every later one changed are back as they
    /// were before it, except those changed by hand since (`kept`), which stay as they are.
    #[serde(rename = "session.undone")]
    SessionUndone {
        checkpoint: u32,
        restored: Vec<String>,
        /// Files the prompts had created, removed again.
        removed: Vec<String>,
        kept: Vec<String>,
        /// Files that could not be put back: `path: why`.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        failed: Vec<String>,
    },
    /// The session finished the work of one input (the task of `baton agent`, a line of `baton
    /// chat`, a `/resume`) and waits for the next: `final_message` is its answer, `reason` why it
    /// stopped early (as in `session.completed`).
    #[serde(rename = "input.completed")]
    InputCompleted {
        final_message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<EndReason>,
    },
    /// An input the session could not act on (a `/resume` with no interrupted assignment, or
    /// while the control is not automatic): nothing ran, and `reason` says why and what to do.
    #[serde(rename = "input.refused")]
    InputRefused { input: String, reason: String },
    /// The session's view was compacted: everything before the `kept` most recent messages was
    /// replaced by a summary the model wrote. The transcript keeps everything.
    #[serde(rename = "session.compacted")]
    SessionCompacted {
        /// In a routed session, the participant whose view was compacted.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seat: Option<String>,
        /// `auto` (the next request would not fit the context window) or `manual`.
        trigger: String,
        /// The estimated input tokens of the view before and after.
        tokens_before: u64,
        tokens_after: u64,
        /// How many recent messages were kept verbatim.
        kept: usize,
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
    /// A routed session's host recorded a change of its routing state (a journal record:
    /// `op`, `step`, `type` and the event's fields), with the participant responsible after it.
    #[serde(rename = "routing.recorded")]
    RoutingRecorded {
        record: serde_json::Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        responsible: Option<String>,
    },
    /// A routed session's Executor tool result joined its view with an evidence reference
    /// (`ctx:t3`): the name by which the Executor selects it for the Coordinator (`project`) and a
    /// report cites it.
    #[serde(rename = "evidence.referenced")]
    EvidenceReferenced {
        /// The tool call whose result it is (the `call_id` of its `tool_call` item).
        call_id: String,
        reference: String,
    },
    #[serde(rename = "session.completed")]
    SessionCompleted {
        outcome: Outcome,
        /// Why the session ended without a plain answer (see [`EndReason`]); absent when the model
        /// simply finished.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<EndReason>,
        final_message: String,
        turns: u32,
        usage: Usage,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
        /// Why a failed session failed: the model error, or what stopped it before it started.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<ErrorInfo>,
        /// Every route the session ran on, in order, when a failover changed it
        /// (`turn.route_changed`); absent when it ran on one route, `session.started`'s `model`.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        routes: Vec<RouteUsage>,
    },
}

/// What one route of a session did: its completed turns, their usage, and their cost at that
/// route's price.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RouteUsage {
    /// The route, `provider/model[:thinking]`.
    pub model: String,
    /// Model turns completed on it.
    pub turns: u32,
    pub usage: Usage,
    /// Present when the config has a price for the route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// In a routed session, the participant that ran on it (`coordinator` or `executor`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seat: Option<String>,
}

/// A stable error code and a human message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorInfo {
    pub code: ErrorCode,
    pub message: String,
}

/// A value of a closed set that is not one of its members.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {set} `{value}`: expected one of {expected}")]
pub struct UnknownValue {
    /// What the set is (`end reason`, `error code`, `outcome`).
    pub set: &'static str,
    pub value: String,
    /// The members, comma-separated.
    pub expected: String,
}

crate::closed_set! {
    /// The code of an [`ErrorInfo`] in `turn.failed` and `turn.retrying`.
    pub enum ErrorCode ("error code") {
        /// The account sent too much too fast (HTTP 429 without a quota error); retried after a
        /// wait, then failed over when the class has another route.
        RateLimited = "rate_limited",
        /// The account is out of credit or quota, or its plan's usage limit is reached (OpenAI
        /// `insufficient_quota`, ChatGPT `usage_limit_reached`, HTTP 402); not retried, failed
        /// over when the class has another route.
        QuotaExceeded = "quota_exceeded",
        /// The server is overloaded for everyone (Anthropic `overloaded_error`, HTTP 529);
        /// retried, then failed over when the class has another route.
        Overloaded = "overloaded",
        /// The conversation does not fit the model's context window; not retried.
        ContextTooLong = "context_too_long",
        /// The provider has no model of the route's name (or Ollama has not pulled it); not
        /// retried.
        ModelNotFound = "model_not_found",
        /// HTTP 401: the API key is missing or wrong.
        Unauthorized = "unauthorized",
        /// HTTP 403.
        Forbidden = "forbidden",
        /// HTTP 404 that names no missing model: usually a wrong `base_url`.
        NotFound = "not_found",
        /// HTTP 400.
        BadRequest = "bad_request",
        /// HTTP 5xx.
        ServerError = "server_error",
        /// Any other HTTP error status.
        HttpError = "http_error",
        /// The provider could not be reached.
        Connection = "connection",
        /// The stream ended or broke before the turn was complete.
        StreamCut = "stream_cut",
        /// The provider sent an error event inside the stream.
        ProviderError = "provider_error",
        /// The stream could not be parsed.
        Protocol = "protocol",
        /// Bad input or config: a provider that cannot be used (missing key, missing cassette),
        /// or, in `session.completed` with reason `not_started`, a flag, variable, config value,
        /// role or task refused before the session started.
        Config = "config",
    }
}

crate::closed_set! {
    /// How a session ended.
    pub enum Outcome ("outcome") {
        /// The model stopped calling tools and answered.
        Completed = "completed",
        /// Stopped early (a limit, cancellation); the final message says what was done.
        Partial = "partial",
        /// The model could not be used, or refused.
        Failed = "failed",
    }
}

crate::closed_set! {
    /// Why a session ended without a plain answer: the `reason` of `session.completed`.
    pub enum EndReason ("end reason") {
        /// The turn limit was reached; the final message is the handoff report.
        TurnLimit = "turn_limit",
        /// The answer was cut by the output token limit.
        MaxTokens = "max_tokens",
        /// Cancelled by a signal or by the caller.
        Cancelled = "cancelled",
        /// The model could not be used (an error after retries).
        ModelError = "model_error",
        /// The provider refused the content.
        Refused = "refused",
        /// Refused before the session started (bad input or config); nothing was sent to a
        /// model and no transcript was written.
        NotStarted = "not_started",
        /// A tool call needed the user's approval (`agent.approval`) and no one could answer: a
        /// headless session fails closed at the first such call, which did not run.
        ApprovalUnavailable = "approval_unavailable",
    }
}

impl EndReason {
    /// The outcome a session that ends for this reason has.
    pub fn outcome(self) -> Outcome {
        match self {
            EndReason::TurnLimit | EndReason::MaxTokens | EndReason::Cancelled => Outcome::Partial,
            EndReason::ModelError
            | EndReason::Refused
            | EndReason::NotStarted
            | EndReason::ApprovalUnavailable => Outcome::Failed,
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
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use pretty_assertions::assert_eq;
    use std::fmt;
    use std::str::FromStr;

    /// The serde form, `as_str` and `FromStr` of every member agree, and nothing else parses.
    fn round_trips<T>(all: &[T])
    where
        T: Copy
            + PartialEq
            + fmt::Debug
            + Serialize
            + for<'de> Deserialize<'de>
            + FromStr
            + fmt::Display,
        <T as FromStr>::Err: fmt::Debug,
    {
        for &v in all {
            let wire = serde_json::to_value(v).unwrap();
            assert_eq!(wire, serde_json::Value::String(v.to_string()));
            assert_eq!(serde_json::from_value::<T>(wire).unwrap(), v);
            assert_eq!(v.to_string().parse::<T>().unwrap(), v);
        }
        assert!("token_limit".parse::<T>().is_err());
        assert!(serde_json::from_str::<T>("\"token_limit\"").is_err());
    }

    #[test]
    fn closed_sets_have_one_wire_form() {
        round_trips(ErrorCode::ALL);
        round_trips(Outcome::ALL);
        round_trips(EndReason::ALL);
        assert_eq!(ErrorCode::ALL.len(), 16);
        let e = "stream_broken".parse::<ErrorCode>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown error code `stream_broken`: expected one of rate_limited, quota_exceeded, \
             overloaded, context_too_long, model_not_found, unauthorized, forbidden, not_found, \
             bad_request, server_error, http_error, connection, stream_cut, provider_error, \
             protocol, config"
        );
    }

    /// docs/protocol.md lists exactly the codes and reasons the code has.
    #[test]
    fn the_protocol_doc_lists_every_value() {
        let doc = include_str!("../../../docs/protocol.md");
        let listed = |marker: &str| -> Vec<String> {
            let start = doc.find(marker).unwrap() + marker.len();
            let rest = &doc[start..];
            let para = &rest[..rest.find("\n\n").unwrap_or(rest.len())];
            para.split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect()
        };
        let codes: Vec<String> = ErrorCode::ALL.iter().map(|c| c.to_string()).collect();
        assert_eq!(listed("Codes:"), codes);
        // The table of endings: one row per (outcome, reason) pair, `—` for no reason.
        let rows: Vec<(String, String)> = doc
            .lines()
            .filter_map(|l| l.strip_prefix("| `"))
            .filter_map(|l| {
                let cells: Vec<&str> = l.split('|').map(str::trim).collect();
                let outcome = cells.first()?.strip_suffix('`')?;
                let reason = cells.get(1)?.trim_matches('`');
                Outcome::ALL
                    .iter()
                    .any(|o| o.as_str() == outcome)
                    .then(|| (outcome.to_string(), reason.to_string()))
            })
            .collect();
        let mut expected = vec![("completed".to_string(), "—".to_string())];
        expected.extend(
            EndReason::ALL
                .iter()
                .map(|r| (r.outcome().to_string(), r.to_string())),
        );
        assert_eq!(rows, expected);
    }

    #[test]
    fn every_end_reason_names_a_non_completed_outcome() {
        for r in EndReason::ALL {
            assert_ne!(r.outcome(), Outcome::Completed, "{r}");
        }
    }

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
