//! Anthropic Messages (`POST {base_url}/v1/messages`, streamed).
//!
//! Request mapping:
//! - headers `x-api-key` (when a key is set) and `anthropic-version: 2023-06-01`; configured headers
//!   may replace them or add others (for example an `anthropic-beta` flag);
//! - `system` is the system prompt (omitted when empty);
//! - assistant parts become content blocks: `text`, `thinking {thinking, signature}` (only when the
//!   reasoning has a signature — unsigned reasoning cannot be replayed), `redacted_thinking {data}`
//!   and `tool_use {id, name, input}` where `input` is the arguments parsed as a JSON object (`{}`
//!   when they are not valid JSON or not an object). Reasoning carrying another provider's id
//!   (an OpenAI Responses item) is dropped;
//! - tool results become `tool_result {tool_use_id, content, is_error}` blocks of a `user` message;
//!   consecutive messages of the same role merge into one, as the API requires alternation (an
//!   error result with no output gets a short placeholder, since the API refuses it empty);
//! - the last block of the conversation is marked `cache_control: ephemeral`, so each turn of an
//!   agent loop reads the previous prefix (tools, system, history) from the prompt cache;
//! - thinking level → what the model table says the model takes
//!   ([`crate::catalog`]): `thinking: {type: "enabled", budget_tokens}` for models with budgets
//!   (minimal 1024, low 2048, medium 8192, high 16384, xhigh 32000), `thinking: {type:
//!   "adaptive"}` with `output_config: {effort}` for Claude 4.6 and later (Opus 4.7+ refuse
//!   budgets); off or unset → no thinking;
//! - `max_tokens` is the request's limit, else the route's, else the model's own output limit
//!   (8192 for a model the table does not know), never above the model's limit. A budget must
//!   stay below `max_tokens` with room for the answer: the limit is raised (up to the model's
//!   limit) when it is too small, and the budget is lowered when the model's limit is too small;
//! - `temperature` / `top_p` from `[routes."provider/model"]` (refused in config while thinking
//!   is on, which the API does not allow).
//!
//! A redacted thinking block is kept as reasoning with empty text, the block's `data` as its
//! signature and [`REDACTED_THINKING`] as its provider id, so it is sent back unchanged.
//!
//! Usage: `input_tokens` reported = `input_tokens + cache_read_input_tokens +
//! cache_creation_input_tokens` (Anthropic counts them apart), `cached_input_tokens` =
//! `cache_read_input_tokens`, `cache_write_tokens` = `cache_creation_input_tokens` (priced
//! above plain input).

use baton_protocol::{AssistantPart, Message, StopReason, Usage};
use serde_json::{json, Value};

use crate::catalog::{Profile, ThinkingPlan};
use crate::error::ModelError;
use crate::http::{classify_error_object, Connection, Ctx, Endpoint};
use crate::provider::{EventStream, Provider};
use crate::sse::{EventParser, SseEvent};
use crate::types::{ModelRequest, StreamEvent};

/// The API version header value baton speaks.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Provider id marking a reasoning part that holds an Anthropic `redacted_thinking` block.
pub const REDACTED_THINKING: &str = "anthropic:redacted_thinking";

/// An Anthropic Messages endpoint.
#[derive(Debug)]
pub struct Anthropic {
    endpoint: Endpoint,
    profile: Profile,
}

impl Anthropic {
    /// `connection.base_url` is the API root, such as `https://api.anthropic.com`; requests go to
    /// `{base_url}/v1/messages`. `profile` holds the model's facts (thinking API, output limit)
    /// and the route's options.
    pub fn new(connection: Connection, profile: Profile) -> Self {
        Anthropic {
            endpoint: Endpoint::new(connection, "/v1/messages"),
            profile,
        }
    }
}

#[async_trait::async_trait]
impl Provider for Anthropic {
    fn name(&self) -> &str {
        &self.endpoint.name
    }

    async fn stream(&self, request: &ModelRequest) -> Result<EventStream, ModelError> {
        let mut defaults: Vec<(&str, String)> =
            vec![("anthropic-version", ANTHROPIC_VERSION.to_string())];
        if let Some(key) = &self.endpoint.api_key {
            defaults.push(("x-api-key", key.clone()));
        }
        let body = request_body(request, &self.profile);
        (self.endpoint)
            .stream(&request.model, &defaults, &body, AnthropicParser::new)
            .await
    }
}

/// The output limit sent when neither the request, the route nor the model table gives one.
pub const FALLBACK_MAX_TOKENS: u32 = 8192;
/// The smallest budget the API takes.
const MIN_BUDGET: u32 = 1024;

/// `max_tokens` and the thinking budget for a budget model: the budget stays below `max_tokens`
/// and leaves room for the answer (a quarter of the limit, at most 8192 tokens); when the
/// limit asked for is too small it is raised up to `model_limit`, and when even that is too
/// small the budget shrinks. `None` budget: the limit cannot hold the smallest budget.
pub fn budget_and_limit(budget: u32, asked: u32, model_limit: u32) -> (u32, Option<u32>) {
    let reserve = |limit: u32| (limit / 4).clamp(1, 8192);
    let mut max_tokens = asked.min(model_limit);
    if max_tokens < budget.saturating_add(reserve(max_tokens)) {
        max_tokens = model_limit.min(budget.saturating_add(8192)).max(max_tokens);
    }
    let budget = budget.min(max_tokens.saturating_sub(reserve(max_tokens)));
    (max_tokens, (budget >= MIN_BUDGET).then_some(budget))
}

/// Builds the message list, merging neighbours of the same role.
struct Conversation {
    messages: Vec<(&'static str, Vec<Value>)>,
}

impl Conversation {
    fn push(&mut self, role: &'static str, blocks: Vec<Value>) {
        if blocks.is_empty() {
            return;
        }
        match self.messages.last_mut() {
            Some((r, existing)) if *r == role => existing.extend(blocks),
            _ => self.messages.push((role, blocks)),
        }
    }
}

fn assistant_blocks(parts: &[AssistantPart]) -> Vec<Value> {
    let mut blocks = Vec::new();
    for p in parts {
        match p {
            // The API refuses a text block with nothing but whitespace (400 "text content blocks
            // must contain non-whitespace text"). The transcript keeps what the model said; it is
            // left out here, so a saved session that holds one resumes too.
            AssistantPart::Text { text } => {
                if !text.trim().is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
                }
            }
            AssistantPart::Reasoning {
                text,
                signature: Some(signature),
                provider_id,
            } => match provider_id.as_deref() {
                None => blocks
                    .push(json!({"type": "thinking", "thinking": text, "signature": signature})),
                Some(REDACTED_THINKING) => {
                    blocks.push(json!({"type": "redacted_thinking", "data": signature}));
                }
                // Another provider's reasoning: Anthropic cannot verify it.
                Some(_) => {}
            },
            AssistantPart::Reasoning {
                signature: None, ..
            } => {}
            AssistantPart::ToolCall {
                id,
                name,
                arguments,
                ..
            } => {
                let input = match serde_json::from_str::<Value>(arguments) {
                    Ok(v @ Value::Object(_)) => v,
                    Ok(_) | Err(_) => json!({}),
                };
                blocks.push(json!({"type": "tool_use", "id": id, "name": name, "input": input}));
            }
        }
    }
    blocks
}

/// The JSON body for one streamed turn.
pub fn request_body(request: &ModelRequest, profile: &Profile) -> Value {
    let mut conv = Conversation {
        messages: Vec::new(),
    };
    for m in &request.messages {
        match m {
            Message::User { text } => {
                let blocks = if text.trim().is_empty() {
                    vec![]
                } else {
                    vec![json!({"type": "text", "text": text})]
                };
                conv.push("user", blocks);
            }
            Message::Assistant { parts } => conv.push("assistant", assistant_blocks(parts)),
            Message::Tool {
                call_id,
                output,
                is_error,
                ..
            } => {
                // The API refuses an error result with empty content.
                let content = if output.is_empty() && *is_error {
                    "(the tool failed without output)"
                } else {
                    output.as_str()
                };
                conv.push(
                    "user",
                    vec![json!({
                        "type": "tool_result",
                        "tool_use_id": call_id,
                        "content": content,
                        "is_error": is_error,
                    })],
                );
            }
        }
    }
    if let Some(last) = conv
        .messages
        .last_mut()
        .and_then(|(_, blocks)| blocks.last_mut())
    {
        if matches!(
            last.get("type").and_then(Value::as_str),
            Some("text" | "tool_result" | "tool_use")
        ) {
            last["cache_control"] = json!({"type": "ephemeral"});
        }
    }
    let messages: Vec<Value> = conv
        .messages
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    let model_limit = profile
        .info
        .max_output_tokens
        .unwrap_or(FALLBACK_MAX_TOKENS);
    let mut max_tokens = profile
        .output_limit(request.max_output_tokens)
        .unwrap_or(model_limit)
        .max(1);
    let mut thinking = None;
    match profile.info.thinking_plan(request.thinking) {
        ThinkingPlan::Budget(b) => {
            let (limit, budget) = budget_and_limit(b, max_tokens, model_limit);
            max_tokens = limit;
            thinking = budget.map(|b| (json!({"type": "enabled", "budget_tokens": b}), None));
        }
        ThinkingPlan::Adaptive(effort) => {
            thinking = Some((json!({"type": "adaptive"}), Some(effort)));
        }
        ThinkingPlan::Effort(_) | ThinkingPlan::Omit => {}
    }
    let mut body = json!({
        "model": request.model,
        "max_tokens": max_tokens,
        "messages": messages,
        "stream": true,
    });
    if !request.system.is_empty() {
        body["system"] = json!(request.system);
    }
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
        if request.tools_disabled {
            body["tool_choice"] = json!({"type": "none"});
        }
    }
    match thinking {
        Some((t, effort)) => {
            body["thinking"] = t;
            if let Some(effort) = effort {
                body["output_config"] = json!({ "effort": effort });
            }
        }
        None => {
            // The API refuses sampling options while thinking; config checks refuse them too.
            crate::catalog::put_sampling(&profile.options, &mut body);
        }
    }
    body
}

impl AnthropicParser {
    pub(crate) fn new(ctx: Ctx) -> Self {
        AnthropicParser {
            ctx,
            blocks: Vec::new(),
            tools: 0,
            raw: RawUsage::default(),
            stop: None,
        }
    }
}

#[derive(Debug, Default, Clone, Copy)]
struct RawUsage {
    input: u64,
    cache_read: u64,
    cache_creation: u64,
    output: u64,
}

impl RawUsage {
    /// Takes every count present in a `usage` object (message_delta repeats some of them).
    fn update(&mut self, u: &Value) {
        let get = |k: &str| u.get(k).and_then(Value::as_u64);
        if let Some(n) = get("input_tokens") {
            self.input = n;
        }
        if let Some(n) = get("cache_read_input_tokens") {
            self.cache_read = n;
        }
        if let Some(n) = get("cache_creation_input_tokens") {
            self.cache_creation = n;
        }
        if let Some(n) = get("output_tokens") {
            self.output = n;
        }
    }

    fn usage(&self) -> Usage {
        Usage {
            input_tokens: self.input + self.cache_read + self.cache_creation,
            cache_write_tokens: self.cache_creation,
            cached_input_tokens: self.cache_read,
            output_tokens: self.output,
        }
    }
}

enum Block {
    Text,
    Thinking,
    Tool {
        index: usize,
        /// The `input` of `content_block_start`, used when no JSON delta follows.
        initial: String,
        streamed: bool,
    },
    Other,
}

pub(crate) struct AnthropicParser {
    ctx: Ctx,
    /// Content blocks by their stream `index`.
    blocks: Vec<(u64, Block)>,
    tools: usize,
    raw: RawUsage,
    stop: Option<StopReason>,
}

fn stop_reason(s: &str) -> StopReason {
    match s {
        "end_turn" | "stop_sequence" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" | "model_context_window_exceeded" => StopReason::MaxTokens,
        "refusal" => StopReason::Refusal,
        _ => StopReason::Other,
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

impl AnthropicParser {
    fn block_mut(&mut self, index: Option<u64>) -> Option<&mut Block> {
        let index = index?;
        self.blocks
            .iter_mut()
            .find(|(i, _)| *i == index)
            .map(|(_, b)| b)
    }

    fn start_block(&mut self, msg: &Value, out: &mut Vec<StreamEvent>) {
        let index = msg.get("index").and_then(Value::as_u64).unwrap_or(0);
        let empty = json!({});
        let block = msg.get("content_block").unwrap_or(&empty);
        let kind = match str_of(block, "type").unwrap_or_default() {
            "text" => {
                if let Some(text) = str_of(block, "text").filter(|t| !t.is_empty()) {
                    out.push(StreamEvent::TextDelta {
                        text: text.to_string(),
                    });
                }
                Block::Text
            }
            "thinking" => {
                if let Some(text) = str_of(block, "thinking").filter(|t| !t.is_empty()) {
                    out.push(StreamEvent::ReasoningDelta {
                        text: text.to_string(),
                    });
                }
                Block::Thinking
            }
            "redacted_thinking" => {
                out.push(StreamEvent::ReasoningSignature {
                    signature: Some(str_of(block, "data").unwrap_or_default().to_string()),
                    provider_id: Some(REDACTED_THINKING.to_string()),
                });
                Block::Other
            }
            "tool_use" => {
                let tool = self.tools;
                self.tools += 1;
                out.push(StreamEvent::ToolCallStart {
                    index: tool,
                    id: str_of(block, "id").unwrap_or_default().to_string(),
                    name: str_of(block, "name").unwrap_or_default().to_string(),
                });
                let initial = match block.get("input") {
                    Some(v @ Value::Object(_)) => v.to_string(),
                    Some(_) | None => "{}".to_string(),
                };
                Block::Tool {
                    index: tool,
                    initial,
                    streamed: false,
                }
            }
            // Server tools and results, citations and future block kinds carry nothing baton uses.
            _ => Block::Other,
        };
        self.blocks.push((index, kind));
    }

    fn delta(&mut self, msg: &Value, out: &mut Vec<StreamEvent>) {
        let index = msg.get("index").and_then(Value::as_u64);
        let empty = json!({});
        let delta = msg.get("delta").unwrap_or(&empty);
        match str_of(delta, "type").unwrap_or_default() {
            "text_delta" => {
                if let Some(text) = str_of(delta, "text").filter(|t| !t.is_empty()) {
                    out.push(StreamEvent::TextDelta {
                        text: text.to_string(),
                    });
                }
            }
            "thinking_delta" => {
                if let Some(text) = str_of(delta, "thinking").filter(|t| !t.is_empty()) {
                    out.push(StreamEvent::ReasoningDelta {
                        text: text.to_string(),
                    });
                }
            }
            "signature_delta" => {
                if let Some(sig) = str_of(delta, "signature").filter(|t| !t.is_empty()) {
                    out.push(StreamEvent::ReasoningSignature {
                        signature: Some(sig.to_string()),
                        provider_id: None,
                    });
                }
            }
            "input_json_delta" => {
                let json = str_of(delta, "partial_json").unwrap_or_default();
                if let Some(Block::Tool {
                    index, streamed, ..
                }) = self.block_mut(index)
                {
                    if !json.is_empty() {
                        *streamed = true;
                        out.push(StreamEvent::ToolCallDelta {
                            index: *index,
                            arguments: json.to_string(),
                        });
                    }
                }
            }
            _ => {}
        }
    }

    fn stop_block(&mut self, msg: &Value, out: &mut Vec<StreamEvent>) {
        let index = msg.get("index").and_then(Value::as_u64);
        if let Some(Block::Tool {
            index,
            initial,
            streamed,
        }) = self.block_mut(index)
        {
            if !*streamed {
                out.push(StreamEvent::ToolCallDelta {
                    index: *index,
                    arguments: std::mem::take(initial),
                });
            }
            out.push(StreamEvent::ToolCallEnd { index: *index });
        }
    }

    fn finish(&mut self, out: &mut Vec<StreamEvent>) {
        let reason = self.stop.unwrap_or(if self.tools > 0 {
            StopReason::ToolUse
        } else {
            StopReason::EndTurn
        });
        out.push(StreamEvent::Stop { reason });
    }
}

impl EventParser for AnthropicParser {
    fn on_event(&mut self, event: SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), ModelError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(());
        }
        let msg = self.ctx.json(data)?;
        let kind = str_of(&msg, "type").unwrap_or(event.event.as_str());
        match kind {
            "message_start" => {
                if let Some(u) = msg.get("message").and_then(|m| m.get("usage")) {
                    self.raw.update(u);
                    out.push(StreamEvent::Usage {
                        usage: self.raw.usage(),
                    });
                }
            }
            "content_block_start" => self.start_block(&msg, out),
            "content_block_delta" => self.delta(&msg, out),
            "content_block_stop" => self.stop_block(&msg, out),
            "message_delta" => {
                if let Some(reason) = msg.get("delta").and_then(|d| str_of(d, "stop_reason")) {
                    self.stop = Some(stop_reason(reason));
                }
                if let Some(u) = msg.get("usage") {
                    self.raw.update(u);
                    out.push(StreamEvent::Usage {
                        usage: self.raw.usage(),
                    });
                }
            }
            "message_stop" => self.finish(out),
            "error" => {
                return Err(self.ctx.stream_error(classify_error_object(&msg)));
            }
            // `ping` and event types added after this was written.
            _ => {}
        }
        Ok(())
    }

    fn on_eof(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), ModelError> {
        if self.stop.is_some() {
            self.finish(out);
            Ok(())
        } else {
            Err(self.ctx.cut("the connection closed before message_stop"))
        }
    }
}

#[cfg(test)]
mod tests {
    use baton_protocol::config::ProviderKind;
    use baton_protocol::{ThinkingLevel, ToolSpec};
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::sse::testing::{assert_decodes, decode, run, EventStreamBody};
    use crate::types::AssistantTurn;

    fn make(body: EventStreamBody) -> EventStream {
        decode(
            AnthropicParser::new,
            Ctx::new("anthropic", "claude-sonnet-4"),
            body,
        )
    }

    const TOOL_TURN: &str = concat!(
        "event: message_start\n",
        "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-sonnet-4\",\"stop_reason\":null,\"usage\":{\"input_tokens\":12,\"cache_creation_input_tokens\":100,\"cache_read_input_tokens\":2000,\"output_tokens\":1}}}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n",
        "event: ping\n",
        "data: {\"type\": \"ping\"}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"Two reads — \"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"in parallel.\"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"EqQBCgIYAhIM\"}}\n\n",
        "event: content_block_stop\n",
        "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"redacted_thinking\",\"data\":\"opaque==\"}}\n\n",
        "event: content_block_stop\n",
        "data: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        ": a comment between events\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"text_delta\",\"text\":\"Reading both 📄\"}}\n\n",
        "event: content_block_stop\n",
        "data: {\"type\":\"content_block_stop\",\"index\":2}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_A\",\"name\":\"read\",\"input\":{}}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\": \\\"a.\"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"rs\\\"}\"}}\n\n",
        "event: content_block_stop\n",
        "data: {\"type\":\"content_block_stop\",\"index\":3}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":4,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_B\",\"name\":\"list\",\"input\":{}}}\n\n",
        "event: content_block_stop\n",
        "data: {\"type\":\"content_block_stop\",\"index\":4}\n\n",
        "event: message_delta\n",
        "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":230}}\n\n",
        "event: message_stop\n",
        "data: {\"type\":\"message_stop\"}\n\n",
    );

    #[test]
    fn tool_turn_is_identical_under_every_chunking() {
        assert_decodes(
            TOOL_TURN,
            &make,
            AssistantTurn {
                parts: vec![
                    AssistantPart::Reasoning {
                        text: "Two reads — in parallel.".into(),
                        signature: Some("EqQBCgIYAhIM".into()),
                        provider_id: None,
                    },
                    AssistantPart::Reasoning {
                        text: String::new(),
                        signature: Some("opaque==".into()),
                        provider_id: Some(REDACTED_THINKING.into()),
                    },
                    AssistantPart::Text {
                        text: "Reading both 📄".into(),
                    },
                    AssistantPart::ToolCall {
                        id: "toolu_A".into(),
                        name: "read".into(),
                        arguments: r#"{"path": "a.rs"}"#.into(),
                        provider_data: None,
                    },
                    AssistantPart::ToolCall {
                        id: "toolu_B".into(),
                        name: "list".into(),
                        arguments: "{}".into(),
                        provider_data: None,
                    },
                ],
                usage: Usage {
                    input_tokens: 2112,
                    cached_input_tokens: 2000,
                    output_tokens: 230,
                    cache_write_tokens: 100,
                },
                stop_reason: StopReason::ToolUse,
            },
        );
    }

    #[test]
    fn text_turn_with_crlf_endings() {
        let body = TOOL_TURN.replace('\n', "\r\n");
        let text_only = concat!(
            "event: message_start\r\n",
            "data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\r\n\r\n",
            "event: content_block_start\r\n",
            "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\r\n\r\n",
            "event: content_block_delta\r\n",
            "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Done: ñ\"}}\r\n\r\n",
            "event: content_block_stop\r\n",
            "data: {\"type\":\"content_block_stop\",\"index\":0}\r\n\r\n",
            "event: message_delta\r\n",
            "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},\"usage\":{\"output_tokens\":7}}\r\n\r\n",
            "event: message_stop\r\n",
            "data: {\"type\":\"message_stop\"}\r\n\r\n",
        );
        assert_decodes(
            text_only,
            &make,
            AssistantTurn {
                parts: vec![AssistantPart::Text {
                    text: "Done: ñ".into(),
                }],
                usage: Usage {
                    input_tokens: 5,
                    cached_input_tokens: 0,
                    output_tokens: 7,
                    cache_write_tokens: 0,
                },
                stop_reason: StopReason::MaxTokens,
            },
        );
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let lf = run(&rt, vec![TOOL_TURN.as_bytes().to_vec()], &make);
        let crlf = run(&rt, vec![body.into_bytes()], &make);
        assert_eq!(lf, crlf);
    }

    #[test]
    fn error_events_and_cuts() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let one = |s: &str| run(&rt, vec![s.as_bytes().to_vec()], &make).1;
        let err = one(concat!(
            "event: message_start\n",
            "data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5}}}\n\n",
            "event: error\n",
            "data: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
        ));
        assert_eq!(
            err,
            Err(ModelError::Stream {
                provider: "anthropic".into(),
                model: "claude-sonnet-4".into(),
                retryable: true,
                message: "overloaded_error: Overloaded".into(),
                kind: crate::error::ErrorKind::Overloaded,
            })
        );
        let err = one("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long: 219898 tokens > 200000 maximum\"}}\n\n");
        assert!(
            matches!(
                &err,
                Err(ModelError::Stream {
                    retryable: false,
                    kind: crate::error::ErrorKind::ContextTooLong {
                        tokens: Some(219_898),
                        limit: Some(200_000)
                    },
                    ..
                })
            ),
            "{err:?}"
        );
        let cut = one(&TOOL_TURN[..TOOL_TURN.find("event: message_delta").unwrap()]);
        assert!(matches!(cut, Err(ModelError::StreamCut { .. })), "{cut:?}");
    }

    #[test]
    fn request_body_merges_roles_and_maps_thinking() {
        let request = ModelRequest {
            model: "claude-opus-4-1".into(),
            system: "You are careful.".into(),
            messages: vec![
                Message::user("fix it"),
                Message::user("please"),
                Message::Assistant {
                    parts: vec![
                        AssistantPart::Reasoning {
                            text: "think".into(),
                            signature: Some("sig1".into()),
                            provider_id: None,
                        },
                        AssistantPart::Reasoning {
                            text: String::new(),
                            signature: Some("blob".into()),
                            provider_id: Some(REDACTED_THINKING.into()),
                        },
                        AssistantPart::Reasoning {
                            text: "unsigned".into(),
                            signature: None,
                            provider_id: None,
                        },
                        AssistantPart::Reasoning {
                            text: "openai".into(),
                            signature: Some("enc".into()),
                            provider_id: Some("rs_1".into()),
                        },
                        AssistantPart::Text {
                            text: "Looking.".into(),
                        },
                        AssistantPart::ToolCall {
                            id: "t1".into(),
                            name: "read".into(),
                            arguments: r#"{"path":"a"}"#.into(),
                            provider_data: None,
                        },
                        AssistantPart::ToolCall {
                            id: "t2".into(),
                            name: "bash".into(),
                            arguments: "{not json".into(),
                            provider_data: None,
                        },
                    ],
                },
                Message::Tool {
                    call_id: "t1".into(),
                    tool: "read".into(),
                    output: "contents".into(),
                    is_error: false,
                },
                Message::Tool {
                    call_id: "t2".into(),
                    tool: "bash".into(),
                    output: "bad arguments".into(),
                    is_error: true,
                },
            ],
            tools: vec![ToolSpec {
                name: "read".into(),
                description: "Read a file".into(),
                parameters: json!({"type": "object"}),
            }],
            thinking: Some(ThinkingLevel::High),
            max_output_tokens: None,
            tools_disabled: false,
            cache_key: None,
        };
        let opus41 = Profile::builtin(ProviderKind::Anthropic, "claude-opus-4-1");
        assert_eq!(
            request_body(&request, &opus41),
            json!({
                "model": "claude-opus-4-1",
                "max_tokens": 32000,
                "stream": true,
                "system": "You are careful.",
                "messages": [
                    {"role": "user", "content": [
                        {"type": "text", "text": "fix it"},
                        {"type": "text", "text": "please"},
                    ]},
                    {"role": "assistant", "content": [
                        {"type": "thinking", "thinking": "think", "signature": "sig1"},
                        {"type": "redacted_thinking", "data": "blob"},
                        {"type": "text", "text": "Looking."},
                        {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a"}},
                        {"type": "tool_use", "id": "t2", "name": "bash", "input": {}},
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "t1", "content": "contents", "is_error": false},
                        {"type": "tool_result", "tool_use_id": "t2", "content": "bad arguments", "is_error": true,
                         "cache_control": {"type": "ephemeral"}},
                    ]},
                ],
                "tools": [{"name": "read", "description": "Read a file", "input_schema": {"type": "object"}}],
                "thinking": {"type": "enabled", "budget_tokens": 16384},
            })
        );
        let plain = ModelRequest {
            system: String::new(),
            tools: vec![],
            thinking: Some(ThinkingLevel::Off),
            max_output_tokens: Some(1000),
            tools_disabled: false,
            messages: vec![Message::user("hi")],
            ..request
        };
        assert_eq!(
            request_body(&plain, &opus41),
            json!({
                "model": "claude-opus-4-1",
                "max_tokens": 1000,
                "stream": true,
                "messages": [{"role": "user", "content": [
                    {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}
                ]}],
            })
        );
        // A limit above the budget is kept as is.
        let roomy = ModelRequest {
            thinking: Some(ThinkingLevel::Minimal),
            max_output_tokens: Some(4000),
            tools_disabled: false,
            ..plain
        };
        let body = request_body(&roomy, &opus41);
        assert_eq!(body["max_tokens"], json!(4000));
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 1024})
        );
        // xhigh asks for 32000 thinking tokens, the whole output limit of Opus 4.1: the limit
        // stays at the model's 32000 and the budget leaves a quarter of it for the answer.
        let deep = ModelRequest {
            thinking: Some(ThinkingLevel::Xhigh),
            max_output_tokens: None,
            ..roomy
        };
        let body = request_body(&deep, &opus41);
        assert_eq!(body["max_tokens"], json!(32000));
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 24000})
        );
        // A model the table does not know gets 8192 and a budget that fits under it.
        let unknown = Profile::builtin(ProviderKind::Anthropic, "mock-model");
        let body = request_body(&deep, &unknown);
        assert_eq!(body["max_tokens"], json!(8192));
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 6144})
        );
    }

    /// Opus 4.7 and later refuse budgets: adaptive thinking with an effort word, and the
    /// model's own 128000-token output limit.
    #[test]
    fn adaptive_models_get_an_effort_and_their_output_limit() {
        let request = ModelRequest {
            model: "claude-opus-4-7".into(),
            system: String::new(),
            messages: vec![Message::user("plan it")],
            tools: vec![],
            thinking: Some(ThinkingLevel::Xhigh),
            max_output_tokens: None,
            tools_disabled: false,
            cache_key: None,
        };
        let opus47 = Profile::builtin(ProviderKind::Anthropic, "claude-opus-4-7");
        assert_eq!(
            request_body(&request, &opus47),
            json!({
                "model": "claude-opus-4-7",
                "max_tokens": 128000,
                "stream": true,
                "messages": [{"role": "user", "content": [
                    {"type": "text", "text": "plan it", "cache_control": {"type": "ephemeral"}}
                ]}],
                "thinking": {"type": "adaptive"},
                "output_config": {"effort": "xhigh"},
            })
        );
        // Off: no thinking at all, and the route's sampling options go out.
        let mut profile = opus47.clone();
        profile.options.temperature = Some(0.2);
        profile.options.max_output_tokens = Some(2000);
        let off = ModelRequest {
            thinking: Some(ThinkingLevel::Off),
            ..request
        };
        let body = request_body(&off, &profile);
        assert_eq!(body.get("thinking"), None);
        assert_eq!(body["temperature"], json!(0.2));
        assert_eq!(body["max_tokens"], json!(2000));
    }

    /// A whitespace-only text block (models emit "\n\n" before a tool call) is not sent: the
    /// API answers 400 to it, and since the transcript keeps it, every retry and `--resume` would
    /// hit the same 400. An assistant turn left empty merges its neighbours as usual.
    #[test]
    fn whitespace_only_text_blocks_are_not_sent() {
        let request = ModelRequest {
            model: "claude-sonnet-4-5".into(),
            system: String::new(),
            messages: vec![
                Message::user("list"),
                Message::Assistant {
                    parts: vec![
                        AssistantPart::Text {
                            text: "\n\n".into(),
                        },
                        AssistantPart::ToolCall {
                            id: "t1".into(),
                            name: "ls".into(),
                            arguments: "{}".into(),
                            provider_data: None,
                        },
                    ],
                },
                Message::Tool {
                    call_id: "t1".into(),
                    tool: "ls".into(),
                    output: "a.rs".into(),
                    is_error: false,
                },
                Message::Assistant {
                    parts: vec![AssistantPart::Text {
                        text: " \t\n".into(),
                    }],
                },
                Message::user("and now?"),
            ],
            tools: vec![],
            thinking: None,
            max_output_tokens: Some(1000),
            tools_disabled: false,
            cache_key: None,
        };
        assert_eq!(
            request_body(
                &request,
                &Profile::builtin(ProviderKind::Anthropic, "claude-sonnet-4-5")
            )["messages"],
            json!([
                {"role": "user", "content": [{"type": "text", "text": "list"}]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "t1", "name": "ls", "input": {}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "a.rs", "is_error": false},
                    {"type": "text", "text": "and now?", "cache_control": {"type": "ephemeral"}},
                ]},
            ])
        );
    }
}
