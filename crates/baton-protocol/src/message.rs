//! The conversation as providers and transcripts see it.

use serde::{Deserialize, Serialize};

/// Token usage of one model turn (or a sum of turns).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens, including cached ones.
    pub input_tokens: u64,
    /// The part of `input_tokens` served from the provider's prompt cache.
    pub cached_input_tokens: u64,
    /// Completion tokens, reasoning included.
    pub output_tokens: u64,
    /// The part of `input_tokens` written to the prompt cache (Anthropic reports it; it is
    /// priced above plain input).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
    }
}

/// Why a model turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its answer.
    EndTurn,
    /// The model asked for tool calls.
    ToolUse,
    /// The output token limit cut the turn.
    MaxTokens,
    /// The provider refused or filtered the content.
    Refusal,
    /// The provider said nothing we recognise.
    Other,
}

/// One piece of an assistant turn, in the order the model produced it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AssistantPart {
    Text {
        text: String,
    },
    Reasoning {
        text: String,
        /// Anthropic thinking signature, or an OpenAI Responses encrypted reasoning blob; replayed verbatim.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
        /// Provider item id (OpenAI Responses `rs_…`), replayed verbatim.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_id: Option<String>,
    },
    ToolCall {
        /// The provider's call id; tool results refer to it.
        id: String,
        name: String,
        /// The arguments as the model wrote them: a JSON text, possibly invalid.
        arguments: String,
        /// Opaque data the provider attached to the call and wants back with it (Gemini's
        /// `extra_content` with its thought signature), replayed verbatim.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_data: Option<serde_json::Value>,
    },
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    User {
        text: String,
    },
    Assistant {
        parts: Vec<AssistantPart>,
    },
    Tool {
        call_id: String,
        tool: String,
        output: String,
        #[serde(default)]
        is_error: bool,
    },
}

impl Message {
    pub fn user(text: impl Into<String>) -> Self {
        Message::User { text: text.into() }
    }
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
}
