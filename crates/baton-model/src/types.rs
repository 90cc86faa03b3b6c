//! Requests to a provider and the events it streams back.

use baton_protocol::{AssistantPart, Message, StopReason, ThinkingLevel, ToolSpec, Usage};
use serde::{Deserialize, Serialize};

/// Everything a provider needs for one model turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    /// The provider's model id (the route without provider and thinking).
    pub model: String,
    pub system: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    pub thinking: Option<ThinkingLevel>,
    pub max_output_tokens: Option<u32>,
    /// The model must not call tools this turn (the handoff turn). The tools stay declared, since
    /// some APIs require them while the history holds tool calls, but tool choice is set to none.
    #[serde(default)]
    pub tools_disabled: bool,
    /// A key the provider may use to route requests of one session to the same prompt cache
    /// (the session id; sent as the Responses API's `prompt_cache_key`).
    #[serde(default)]
    pub cache_key: Option<String>,
}

/// One streamed event of a model turn. Tool-call events are keyed by `index`, the position of
/// the call among this turn's tool calls (providers interleave argument deltas by index).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    TextDelta {
        text: String,
    },
    ReasoningDelta {
        text: String,
    },
    /// Opaque data that must be sent back with the reasoning (Anthropic signature, Responses item).
    ReasoningSignature {
        signature: Option<String>,
        provider_id: Option<String>,
    },
    ToolCallStart {
        index: usize,
        id: String,
        name: String,
    },
    ToolCallDelta {
        index: usize,
        arguments: String,
    },
    ToolCallEnd {
        index: usize,
    },
    /// Opaque data the provider attached to a tool call, to be sent back with it.
    ToolCallData {
        index: usize,
        data: serde_json::Value,
    },
    Usage {
        usage: Usage,
    },
    /// The turn is complete. Always the last event of a successful stream.
    Stop {
        reason: StopReason,
    },
}

/// A finished assistant turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssistantTurn {
    pub parts: Vec<AssistantPart>,
    pub usage: Usage,
    pub stop_reason: StopReason,
}

impl AssistantTurn {
    pub fn text(&self) -> String {
        let mut out = String::new();
        for p in &self.parts {
            if let AssistantPart::Text { text } = p {
                out.push_str(text);
            }
        }
        out
    }

    pub fn tool_calls(&self) -> impl Iterator<Item = (&str, &str, &str)> {
        self.parts.iter().filter_map(|p| match p {
            AssistantPart::ToolCall {
                id,
                name,
                arguments,
                ..
            } => Some((id.as_str(), name.as_str(), arguments.as_str())),
            AssistantPart::Text { .. } | AssistantPart::Reasoning { .. } => None,
        })
    }
}

/// Folds [`StreamEvent`]s into an [`AssistantTurn`], keeping parts in the order they began.
#[derive(Debug, Default)]
pub struct TurnAccumulator {
    parts: Vec<AssistantPart>,
    /// Tool-call index → position in `parts`.
    tool_slots: Vec<(usize, usize)>,
    usage: Usage,
    stop: Option<StopReason>,
}

impl TurnAccumulator {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, event: &StreamEvent) {
        match event {
            StreamEvent::TextDelta { text } => match self.parts.last_mut() {
                Some(AssistantPart::Text { text: t }) => t.push_str(text),
                _ => self.parts.push(AssistantPart::Text { text: text.clone() }),
            },
            // A reasoning part that already carries its signature or provider id is complete:
            // reasoning that follows it (a second Anthropic thinking block) starts a new part.
            StreamEvent::ReasoningDelta { text } => match self.parts.last_mut() {
                Some(AssistantPart::Reasoning {
                    text: t,
                    signature: None,
                    provider_id: None,
                }) => t.push_str(text),
                _ => self.parts.push(AssistantPart::Reasoning {
                    text: text.clone(),
                    signature: None,
                    provider_id: None,
                }),
            },
            StreamEvent::ReasoningSignature {
                signature,
                provider_id,
            } => {
                // The signature belongs to the reasoning just streamed, when the last part is an
                // open reasoning part; otherwise it stands alone (reasoning with no visible text,
                // such as an Anthropic redacted_thinking block or an unsummarised Responses item).
                match self.parts.last_mut() {
                    Some(AssistantPart::Reasoning {
                        signature: s @ None,
                        provider_id: p @ None,
                        ..
                    }) => {
                        if signature.is_some() {
                            s.clone_from(signature);
                        }
                        if provider_id.is_some() {
                            p.clone_from(provider_id);
                        }
                    }
                    _ => self.parts.push(AssistantPart::Reasoning {
                        text: String::new(),
                        signature: signature.clone(),
                        provider_id: provider_id.clone(),
                    }),
                }
            }
            StreamEvent::ToolCallStart { index, id, name } => {
                self.tool_slots.push((*index, self.parts.len()));
                self.parts.push(AssistantPart::ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: String::new(),
                    provider_data: None,
                });
            }
            StreamEvent::ToolCallDelta { index, arguments } => {
                if let Some(&(_, pos)) = self.tool_slots.iter().find(|(i, _)| i == index) {
                    if let Some(AssistantPart::ToolCall { arguments: a, .. }) =
                        self.parts.get_mut(pos)
                    {
                        a.push_str(arguments);
                    }
                }
            }
            StreamEvent::ToolCallData { index, data } => {
                if let Some(&(_, pos)) = self.tool_slots.iter().find(|(i, _)| i == index) {
                    if let Some(AssistantPart::ToolCall { provider_data, .. }) =
                        self.parts.get_mut(pos)
                    {
                        *provider_data = Some(data.clone());
                    }
                }
            }
            StreamEvent::ToolCallEnd { .. } => {}
            StreamEvent::Usage { usage } => self.usage = *usage,
            StreamEvent::Stop { reason } => self.stop = Some(*reason),
        }
    }

    /// True once a `Stop` event arrived.
    pub fn is_complete(&self) -> bool {
        self.stop.is_some()
    }

    /// The assembled turn. A turn that asked for tools reports `ToolUse` whatever the provider said,
    /// so callers can rely on the stop reason alone.
    pub fn finish(self) -> AssistantTurn {
        let has_tools = self
            .parts
            .iter()
            .any(|p| matches!(p, AssistantPart::ToolCall { .. }));
        let stop_reason = match self.stop {
            Some(StopReason::EndTurn) | None if has_tools => StopReason::ToolUse,
            Some(r) => r,
            None => StopReason::Other,
        };
        AssistantTurn {
            parts: self.parts,
            usage: self.usage,
            stop_reason,
        }
    }
}
