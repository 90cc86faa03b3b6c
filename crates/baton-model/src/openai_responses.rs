//! OpenAI Responses API (`POST {base_url}/responses`, streamed, `store: false`).
//!
//! Request mapping:
//! - `instructions` is the system prompt (omitted when empty);
//! - user text → `message` items with `input_text`; assistant text → `message` items with
//!   `output_text` (consecutive text parts join); tool calls → `function_call` items; tool results →
//!   `function_call_output` items (the format has no error flag, so the output goes as is);
//! - reasoning parts are sent back as `reasoning {encrypted_content, summary: []}` items, only
//!   when they carry both a Responses item id and an encrypted blob. The item id itself is not
//!   sent: with `store: false` the server keeps nothing to look it up by, and compatible servers
//!   refuse it. Reasoning of other APIs (Anthropic thinking, Chat Completions reasoning) is
//!   dropped;
//! - tools → `{type: "function", name, description, parameters, strict: false}` (the Responses API
//!   makes function tools strict by default, which rejects ordinary JSON Schemas);
//! - thinking level → `reasoning: {effort}` with the word the model table maps the level to for
//!   this model ([`crate::catalog`]; `:off` becomes `minimal` on gpt-5 and `none` on gpt-5.1 and
//!   later), no `reasoning` field when no level is set or the model does not reason;
//! - `include: ["reasoning.encrypted_content"]` on every request to a model that reasons (known
//!   to the table, or any model when a level is set), so every reasoning item comes back with
//!   the blob needed to replay it. No reasoning summary is requested (some organisations may not
//!   receive summaries);
//! - `prompt_cache_key`: the request's cache key (the session id), so the turns of one session
//!   share a prompt cache;
//! - `max_output_tokens`: the request's limit, else the route's, at most the model's, when set;
//! - `temperature` / `top_p` from `[routes."provider/model"]` when set.
//!
//! Stream mapping: `response.output_item.added` opens function calls (tool-call index = order of
//! function-call items) and tracks reasoning and message items; `response.output_text.delta` →
//! text; `response.reasoning_summary_text.delta` and `response.reasoning_text.delta` → reasoning;
//! `response.function_call_arguments.delta` → argument fragments; `response.output_item.done`
//! closes calls (taking `item.arguments` when no fragment arrived) and turns a reasoning item into
//! a `ReasoningSignature {provider_id: id, signature: encrypted_content}`;
//! `response.completed` / `response.incomplete` → usage and `Stop`; `response.failed` and `error`
//! → `ModelError::Stream`. Other event types are ignored.

use baton_protocol::config::ThinkingStyle;
use baton_protocol::{AssistantPart, Message, StopReason};
use serde_json::{json, Value};

use crate::catalog::{Profile, ThinkingPlan};
use crate::error::ModelError;
use crate::http::{classify_error_object, Connection, Ctx, Endpoint};
use crate::openai_chat::openai_usage;
use crate::provider::{EventStream, Provider};
use crate::sse::{EventParser, SseEvent};
use crate::types::{ModelRequest, StreamEvent};

/// A Responses API endpoint.
#[derive(Debug)]
pub struct OpenAiResponses {
    endpoint: Endpoint,
    profile: Profile,
}

impl OpenAiResponses {
    /// `connection.base_url` is the API root, such as `https://api.openai.com/v1`; requests go to
    /// `{base_url}/responses`.
    pub fn new(connection: Connection, profile: Profile) -> Self {
        OpenAiResponses {
            endpoint: Endpoint::new(connection, "/responses"),
            profile,
        }
    }
}

#[async_trait::async_trait]
impl Provider for OpenAiResponses {
    fn name(&self) -> &str {
        &self.endpoint.name
    }

    async fn stream(&self, request: &ModelRequest) -> Result<EventStream, ModelError> {
        let defaults = self.endpoint.bearer();
        let body = request_body(request, &self.profile);
        (self.endpoint)
            .stream(&request.model, &defaults, &body, ResponsesParser::new)
            .await
    }
}

fn assistant_items(parts: &[AssistantPart], input: &mut Vec<Value>) {
    let mut text = String::new();
    let flush = |text: &mut String, input: &mut Vec<Value>| {
        if !text.is_empty() {
            input.push(json!({
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": std::mem::take(text)}],
            }));
        }
    };
    for p in parts {
        match p {
            AssistantPart::Text { text: t } => text.push_str(t),
            // Responses item ids (`rs_…`) have no colon; baton's markers for other APIs'
            // reasoning do (`anthropic:redacted_thinking`, `chat:reasoning`).
            AssistantPart::Reasoning {
                signature: Some(blob),
                provider_id: Some(id),
                ..
            } if !id.contains(':') => {
                flush(&mut text, input);
                input.push(json!({
                    "type": "reasoning",
                    "encrypted_content": blob,
                    "summary": [],
                }));
            }
            AssistantPart::Reasoning { .. } => {}
            AssistantPart::ToolCall {
                id,
                name,
                arguments,
                ..
            } => {
                flush(&mut text, input);
                input.push(json!({
                    "type": "function_call",
                    "call_id": id,
                    "name": name,
                    "arguments": arguments,
                }));
            }
        }
    }
    flush(&mut text, input);
}

/// The JSON body for one streamed turn.
pub fn request_body(request: &ModelRequest, profile: &Profile) -> Value {
    let mut input = Vec::new();
    for m in &request.messages {
        match m {
            Message::User { text } => input.push(json!({
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": text}],
            })),
            Message::Assistant { parts } => assistant_items(parts, &mut input),
            Message::Tool {
                call_id, output, ..
            } => input.push(json!({
                "type": "function_call_output",
                "call_id": call_id,
                "output": output,
            })),
        }
    }
    let mut body = json!({
        "model": request.model,
        "input": input,
        "stream": true,
        "store": false,
    });
    if !request.system.is_empty() {
        body["instructions"] = json!(request.system);
    }
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                    "strict": false,
                })
            })
            .collect();
        if request.tools_disabled {
            body["tool_choice"] = json!("none");
        }
    }
    let info = &profile.info;
    if let ThinkingPlan::Effort(effort) = info.thinking_plan(request.thinking) {
        body["reasoning"] = json!({ "effort": effort });
    }
    let reasons = info.thinking != ThinkingStyle::None;
    if reasons && (info.known || request.thinking.is_some()) {
        body["include"] = json!(["reasoning.encrypted_content"]);
    }
    if let Some(key) = &request.cache_key {
        body["prompt_cache_key"] = json!(key);
    }
    if let Some(max) = profile.output_limit(request.max_output_tokens) {
        body["max_output_tokens"] = json!(max);
    }
    crate::catalog::put_sampling(&profile.options, &mut body);
    body
}

impl ResponsesParser {
    pub(crate) fn new(ctx: Ctx) -> Self {
        ResponsesParser {
            ctx,
            items: Vec::new(),
            tools: 0,
        }
    }
}

enum ItemKind {
    Call { index: usize, streamed: bool },
    Reasoning { streamed: bool },
    Message { streamed: bool },
    Other,
}

struct Item {
    output_index: Option<u64>,
    id: Option<String>,
    kind: ItemKind,
}

pub(crate) struct ResponsesParser {
    ctx: Ctx,
    items: Vec<Item>,
    tools: usize,
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// Texts of the given content type inside an item's `content` or `summary` list.
fn texts(item: &Value, list: &str, kind: &[&str]) -> String {
    item.get(list)
        .and_then(Value::as_array)
        .map(|parts| {
            parts
                .iter()
                .filter(|p| str_of(p, "type").is_some_and(|t| kind.contains(&t)))
                .filter_map(|p| str_of(p, "text").or_else(|| str_of(p, "refusal")))
                .collect::<Vec<_>>()
                .join("\n\n")
        })
        .unwrap_or_default()
}

impl ResponsesParser {
    /// The tracked item an event refers to, by `output_index`, else by `item_id`.
    fn find(&mut self, msg: &Value) -> Option<&mut Item> {
        let output_index = msg.get("output_index").and_then(Value::as_u64);
        let item_id =
            str_of(msg, "item_id").or_else(|| msg.get("item").and_then(|i| str_of(i, "id")));
        let pos = self
            .items
            .iter()
            .position(|it| output_index.is_some() && it.output_index == output_index)
            .or_else(|| {
                self.items
                    .iter()
                    .position(|it| item_id.is_some() && it.id.as_deref() == item_id)
            })?;
        self.items.get_mut(pos)
    }

    fn start_call(&mut self, item: &Value, out: &mut Vec<StreamEvent>) -> usize {
        let index = self.tools;
        self.tools += 1;
        let id = str_of(item, "call_id")
            .or_else(|| str_of(item, "id"))
            .map_or_else(|| format!("call_{index}"), str::to_string);
        out.push(StreamEvent::ToolCallStart {
            index,
            id,
            name: str_of(item, "name").unwrap_or_default().to_string(),
        });
        index
    }

    fn item_added(&mut self, msg: &Value, out: &mut Vec<StreamEvent>) {
        let empty = json!({});
        let item = msg.get("item").unwrap_or(&empty);
        let kind = match str_of(item, "type").unwrap_or_default() {
            "function_call" => ItemKind::Call {
                index: self.start_call(item, out),
                streamed: false,
            },
            "reasoning" => ItemKind::Reasoning { streamed: false },
            "message" => ItemKind::Message { streamed: false },
            _ => ItemKind::Other,
        };
        self.items.push(Item {
            output_index: msg.get("output_index").and_then(Value::as_u64),
            id: str_of(item, "id").map(str::to_string),
            kind,
        });
    }

    fn item_done(&mut self, msg: &Value, out: &mut Vec<StreamEvent>) {
        let empty = json!({});
        let item = msg.get("item").unwrap_or(&empty);
        let kind = str_of(item, "type").unwrap_or_default();
        if self.find(msg).is_none() {
            // A server that skipped `output_item.added`: track the item now.
            self.item_added(msg, out);
        }
        let tracked = self.find(msg).map(|it| &mut it.kind);
        match (kind, tracked) {
            ("function_call", Some(ItemKind::Call { index, streamed })) => {
                let index = *index;
                if !*streamed {
                    let args = str_of(item, "arguments").unwrap_or_default();
                    if !args.is_empty() {
                        out.push(StreamEvent::ToolCallDelta {
                            index,
                            arguments: args.to_string(),
                        });
                    }
                }
                out.push(StreamEvent::ToolCallEnd { index });
            }
            ("reasoning", Some(ItemKind::Reasoning { streamed })) => {
                if !*streamed {
                    let mut text = texts(item, "summary", &["summary_text"]);
                    if text.is_empty() {
                        text = texts(item, "content", &["reasoning_text"]);
                    }
                    if !text.is_empty() {
                        out.push(StreamEvent::ReasoningDelta { text });
                    }
                }
                out.push(StreamEvent::ReasoningSignature {
                    signature: str_of(item, "encrypted_content").map(str::to_string),
                    provider_id: str_of(item, "id").map(str::to_string),
                });
            }
            ("message", Some(ItemKind::Message { streamed })) => {
                if !*streamed {
                    let text = texts(item, "content", &["output_text", "refusal"]);
                    if !text.is_empty() {
                        out.push(StreamEvent::TextDelta { text });
                    }
                }
            }
            (_, _) => {}
        }
    }

    fn text_delta(&mut self, msg: &Value, reasoning: bool, out: &mut Vec<StreamEvent>) {
        let delta = str_of(msg, "delta").unwrap_or_default();
        if delta.is_empty() {
            return;
        }
        match self.find(msg).map(|it| &mut it.kind) {
            Some(ItemKind::Reasoning { streamed } | ItemKind::Message { streamed }) => {
                *streamed = true;
            }
            Some(ItemKind::Call { .. } | ItemKind::Other) | None => {}
        }
        let text = delta.to_string();
        out.push(if reasoning {
            StreamEvent::ReasoningDelta { text }
        } else {
            StreamEvent::TextDelta { text }
        });
    }

    fn finish(&mut self, msg: &Value, out: &mut Vec<StreamEvent>) {
        let empty = json!({});
        let response = msg.get("response").unwrap_or(&empty);
        if let Some(u) = response.get("usage").filter(|u| u.is_object()) {
            out.push(StreamEvent::Usage {
                usage: openai_usage(u, "input_tokens", "output_tokens"),
            });
        }
        let incomplete = str_of(response, "status") == Some("incomplete")
            || str_of(msg, "type") == Some("response.incomplete");
        let reason = if incomplete {
            match response
                .get("incomplete_details")
                .and_then(|d| str_of(d, "reason"))
            {
                Some("content_filter") => StopReason::Refusal,
                Some("max_output_tokens") | None => StopReason::MaxTokens,
                Some(_) => StopReason::Other,
            }
        } else if self.tools > 0 {
            StopReason::ToolUse
        } else {
            StopReason::EndTurn
        };
        out.push(StreamEvent::Stop { reason });
    }
}

impl EventParser for ResponsesParser {
    fn on_event(&mut self, event: SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), ModelError> {
        let data = event.data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        let msg = self.ctx.json(data)?;
        let kind = str_of(&msg, "type").unwrap_or(event.event.as_str());
        match kind {
            "response.output_item.added" => self.item_added(&msg, out),
            "response.output_item.done" => self.item_done(&msg, out),
            "response.output_text.delta" | "response.refusal.delta" => {
                self.text_delta(&msg, false, out);
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                self.text_delta(&msg, true, out);
            }
            "response.reasoning_summary_part.added" => {
                let later_part = msg.get("summary_index").and_then(Value::as_u64) > Some(0);
                let streamed = matches!(
                    self.find(&msg).map(|it| &it.kind),
                    Some(ItemKind::Reasoning { streamed: true })
                );
                if later_part && streamed {
                    out.push(StreamEvent::ReasoningDelta {
                        text: "\n\n".to_string(),
                    });
                }
            }
            "response.function_call_arguments.delta" => {
                let delta = str_of(&msg, "delta").unwrap_or_default().to_string();
                if let Some(ItemKind::Call { index, streamed }) =
                    self.find(&msg).map(|it| &mut it.kind)
                {
                    if !delta.is_empty() {
                        *streamed = true;
                        out.push(StreamEvent::ToolCallDelta {
                            index: *index,
                            arguments: delta,
                        });
                    }
                }
            }
            "response.completed" | "response.incomplete" => self.finish(&msg, out),
            "response.failed" => {
                let empty = json!({});
                let error = msg
                    .get("response")
                    .and_then(|r| r.get("error"))
                    .filter(|e| e.is_object())
                    .unwrap_or(&empty);
                let mut event = classify_error_object(error);
                if error.get("message").is_none() {
                    event.message = "the response failed without an error message".to_string();
                }
                return Err(self.ctx.stream_error(event));
            }
            "error" => {
                return Err(self.ctx.stream_error(classify_error_object(&msg)));
            }
            _ => {}
        }
        Ok(())
    }

    fn on_eof(&mut self, _out: &mut Vec<StreamEvent>) -> Result<(), ModelError> {
        Err(self
            .ctx
            .cut("the connection closed before response.completed"))
    }
}

#[cfg(test)]
mod tests {
    use baton_protocol::config::ProviderKind;
    use baton_protocol::{ThinkingLevel, ToolSpec, Usage};
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::sse::testing::{assert_decodes, decode, run, EventStreamBody};
    use crate::types::AssistantTurn;

    fn make(body: EventStreamBody) -> EventStream {
        decode(ResponsesParser::new, Ctx::new("openai", "gpt-5"), body)
    }

    /// A reasoning item with two summary parts, a message, two function calls whose argument
    /// deltas interleave (the second one sends none: its arguments come with output_item.done).
    const TOOL_TURN: &str = concat!(
        "event: response.created\n",
        "data: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\"}}\n\n",
        "event: response.output_item.added\n",
        "data: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"id\":\"rs_1\",\"type\":\"reasoning\",\"summary\":[]}}\n\n",
        "event: response.reasoning_summary_part.added\n",
        "data: {\"type\":\"response.reasoning_summary_part.added\",\"item_id\":\"rs_1\",\"output_index\":0,\"summary_index\":0,\"part\":{\"type\":\"summary_text\",\"text\":\"\"}}\n\n",
        "event: response.reasoning_summary_text.delta\n",
        "data: {\"type\":\"response.reasoning_summary_text.delta\",\"item_id\":\"rs_1\",\"output_index\":0,\"summary_index\":0,\"delta\":\"**Plan** – read\"}\n\n",
        "event: response.reasoning_summary_part.added\n",
        "data: {\"type\":\"response.reasoning_summary_part.added\",\"item_id\":\"rs_1\",\"output_index\":0,\"summary_index\":1,\"part\":{\"type\":\"summary_text\",\"text\":\"\"}}\n\n",
        "event: response.reasoning_summary_text.delta\n",
        "data: {\"type\":\"response.reasoning_summary_text.delta\",\"item_id\":\"rs_1\",\"output_index\":0,\"summary_index\":1,\"delta\":\"then run\"}\n\n",
        "event: response.output_item.done\n",
        "data: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"id\":\"rs_1\",\"type\":\"reasoning\",\"encrypted_content\":\"gAAAA-enc\",\"summary\":[{\"type\":\"summary_text\",\"text\":\"**Plan** – read\"},{\"type\":\"summary_text\",\"text\":\"then run\"}]}}\n\n",
        "event: response.output_item.added\n",
        "data: {\"type\":\"response.output_item.added\",\"output_index\":1,\"item\":{\"id\":\"msg_1\",\"type\":\"message\",\"status\":\"in_progress\",\"role\":\"assistant\",\"content\":[]}}\n\n",
        "event: response.output_text.delta\n",
        "data: {\"type\":\"response.output_text.delta\",\"item_id\":\"msg_1\",\"output_index\":1,\"content_index\":0,\"delta\":\"Let me look ∑ \"}\n\n",
        "event: response.output_text.delta\n",
        "data: {\"type\":\"response.output_text.delta\",\"item_id\":\"msg_1\",\"output_index\":1,\"content_index\":0,\"delta\":\"first.\"}\n\n",
        "event: response.output_item.done\n",
        "data: {\"type\":\"response.output_item.done\",\"output_index\":1,\"item\":{\"id\":\"msg_1\",\"type\":\"message\",\"content\":[{\"type\":\"output_text\",\"text\":\"Let me look ∑ first.\"}]}}\n\n",
        "event: response.output_item.added\n",
        "data: {\"type\":\"response.output_item.added\",\"output_index\":2,\"item\":{\"id\":\"fc_1\",\"type\":\"function_call\",\"call_id\":\"call_X\",\"name\":\"read\",\"arguments\":\"\"}}\n\n",
        "event: response.output_item.added\n",
        "data: {\"type\":\"response.output_item.added\",\"output_index\":3,\"item\":{\"id\":\"fc_2\",\"type\":\"function_call\",\"call_id\":\"call_Y\",\"name\":\"grep\",\"arguments\":\"\"}}\n\n",
        "event: response.function_call_arguments.delta\n",
        "data: {\"type\":\"response.function_call_arguments.delta\",\"item_id\":\"fc_1\",\"output_index\":2,\"delta\":\"{\\\"path\\\":\"}\n\n",
        "event: response.function_call_arguments.delta\n",
        "data: {\"type\":\"response.function_call_arguments.delta\",\"item_id\":\"fc_1\",\"output_index\":2,\"delta\":\"\\\"README.md\\\"}\"}\n\n",
        "event: response.function_call_arguments.done\n",
        "data: {\"type\":\"response.function_call_arguments.done\",\"item_id\":\"fc_1\",\"output_index\":2,\"arguments\":\"{\\\"path\\\":\\\"README.md\\\"}\"}\n\n",
        "event: response.output_item.done\n",
        "data: {\"type\":\"response.output_item.done\",\"output_index\":2,\"item\":{\"id\":\"fc_1\",\"type\":\"function_call\",\"call_id\":\"call_X\",\"name\":\"read\",\"arguments\":\"{\\\"path\\\":\\\"README.md\\\"}\"}}\n\n",
        "event: response.output_item.done\n",
        "data: {\"type\":\"response.output_item.done\",\"output_index\":3,\"item\":{\"id\":\"fc_2\",\"type\":\"function_call\",\"call_id\":\"call_Y\",\"name\":\"grep\",\"arguments\":\"{\\\"pattern\\\":\\\"TODO\\\"}\"}}\n\n",
        "event: response.completed\n",
        "data: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"status\":\"completed\",\"usage\":{\"input_tokens\":3000,\"input_tokens_details\":{\"cached_tokens\":2048},\"output_tokens\":410,\"output_tokens_details\":{\"reasoning_tokens\":300},\"total_tokens\":3410}}}\n\n",
    );

    #[test]
    fn tool_turn_is_identical_under_every_chunking() {
        assert_decodes(
            TOOL_TURN,
            &make,
            AssistantTurn {
                parts: vec![
                    AssistantPart::Reasoning {
                        text: "**Plan** – read\n\nthen run".into(),
                        signature: Some("gAAAA-enc".into()),
                        provider_id: Some("rs_1".into()),
                    },
                    AssistantPart::Text {
                        text: "Let me look ∑ first.".into(),
                    },
                    AssistantPart::ToolCall {
                        id: "call_X".into(),
                        name: "read".into(),
                        arguments: r#"{"path":"README.md"}"#.into(),
                        provider_data: None,
                    },
                    AssistantPart::ToolCall {
                        id: "call_Y".into(),
                        name: "grep".into(),
                        arguments: r#"{"pattern":"TODO"}"#.into(),
                        provider_data: None,
                    },
                ],
                usage: Usage {
                    input_tokens: 3000,
                    cached_input_tokens: 2048,
                    output_tokens: 410,
                    cache_write_tokens: 0,
                },
                stop_reason: StopReason::ToolUse,
            },
        );
    }

    #[test]
    fn incomplete_text_turn_and_unsummarised_reasoning() {
        let body = concat!(
            "data: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"id\":\"rs_9\",\"type\":\"reasoning\"}}\n\n",
            "data: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"id\":\"rs_9\",\"type\":\"reasoning\",\"summary\":[]}}\n\n",
            "data: {\"type\":\"response.output_item.added\",\"output_index\":1,\"item\":{\"id\":\"m\",\"type\":\"message\"}}\n\n",
            "data: {\"type\":\"response.output_text.delta\",\"output_index\":1,\"item_id\":\"m\",\"delta\":\"Über\"}\n\n",
            "data: {\"type\":\"response.incomplete\",\"response\":{\"status\":\"incomplete\",\"incomplete_details\":{\"reason\":\"max_output_tokens\"},\"usage\":{\"input_tokens\":9,\"output_tokens\":16}}}\n\n",
        );
        assert_decodes(
            body,
            &make,
            AssistantTurn {
                parts: vec![
                    AssistantPart::Reasoning {
                        text: String::new(),
                        signature: None,
                        provider_id: Some("rs_9".into()),
                    },
                    AssistantPart::Text {
                        text: "Über".into(),
                    },
                ],
                usage: Usage {
                    input_tokens: 9,
                    cached_input_tokens: 0,
                    output_tokens: 16,
                    cache_write_tokens: 0,
                },
                stop_reason: StopReason::MaxTokens,
            },
        );
    }

    #[test]
    fn failures_and_cuts() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let one = |s: &str| run(&rt, vec![s.as_bytes().to_vec()], &make).1;
        let err = one("event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"The model failed\"}}}\n\n");
        assert_eq!(
            err,
            Err(ModelError::Stream {
                provider: "openai".into(),
                model: "gpt-5".into(),
                retryable: true,
                message: "server_error: The model failed".into(),
                kind: crate::error::ErrorKind::Other,
            })
        );
        let err = one("event: error\ndata: {\"type\":\"error\",\"code\":\"invalid_prompt\",\"message\":\"nope\",\"param\":null}\n\n");
        assert!(
            matches!(&err, Err(ModelError::Stream { retryable: false, message, .. }) if message == "invalid_prompt: nope"),
            "{err:?}"
        );
        let cut = one(&TOOL_TURN[..TOOL_TURN.find("event: response.completed").unwrap()]);
        assert!(matches!(cut, Err(ModelError::StreamCut { .. })), "{cut:?}");
    }

    #[test]
    fn request_body_maps_items() {
        let request = ModelRequest {
            model: "gpt-5".into(),
            system: "Be exact.".into(),
            messages: vec![
                Message::user("go"),
                Message::Assistant {
                    parts: vec![
                        AssistantPart::Reasoning {
                            text: "summary".into(),
                            signature: Some("enc".into()),
                            provider_id: Some("rs_1".into()),
                        },
                        AssistantPart::Reasoning {
                            text: "claude".into(),
                            signature: Some("sig".into()),
                            provider_id: None,
                        },
                        AssistantPart::Reasoning {
                            text: "router".into(),
                            signature: Some("[]".into()),
                            provider_id: Some("chat:reasoning".into()),
                        },
                        AssistantPart::Text { text: "a".into() },
                        AssistantPart::Text { text: "b".into() },
                        AssistantPart::ToolCall {
                            id: "call_1".into(),
                            name: "ls".into(),
                            arguments: "{}".into(),
                            provider_data: None,
                        },
                    ],
                },
                Message::Tool {
                    call_id: "call_1".into(),
                    tool: "ls".into(),
                    output: "x".into(),
                    is_error: true,
                },
            ],
            tools: vec![ToolSpec {
                name: "ls".into(),
                description: "List".into(),
                parameters: json!({"type": "object"}),
            }],
            thinking: Some(ThinkingLevel::Xhigh),
            max_output_tokens: Some(2000),
            tools_disabled: false,
            cache_key: Some("0193-session".into()),
        };
        // gpt-5 takes minimal..high: xhigh becomes high. The reasoning item goes back without
        // its id (`store: false`), and `include` asks for the blob on every turn.
        let gpt5 = Profile::builtin(ProviderKind::OpenAiResponses, "gpt-5");
        assert_eq!(
            request_body(&request, &gpt5),
            json!({
                "model": "gpt-5",
                "instructions": "Be exact.",
                "input": [
                    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
                    {"type": "reasoning", "encrypted_content": "enc", "summary": []},
                    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ab"}]},
                    {"type": "function_call", "call_id": "call_1", "name": "ls", "arguments": "{}"},
                    {"type": "function_call_output", "call_id": "call_1", "output": "x"},
                ],
                "tools": [{"type": "function", "name": "ls", "description": "List",
                           "parameters": {"type": "object"}, "strict": false}],
                "stream": true,
                "store": false,
                "reasoning": {"effort": "high"},
                "include": ["reasoning.encrypted_content"],
                "prompt_cache_key": "0193-session",
                "max_output_tokens": 2000,
            })
        );
        // No level set: no `reasoning` field, but `include` still goes to a reasoning model, so
        // the items it reasons with come back replayable. `:off` on gpt-5 is `minimal`.
        let unset = ModelRequest {
            thinking: None,
            messages: vec![Message::user("go")],
            tools: vec![],
            cache_key: None,
            max_output_tokens: None,
            ..request
        };
        assert_eq!(
            request_body(&unset, &gpt5),
            json!({
                "model": "gpt-5",
                "instructions": "Be exact.",
                "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}],
                "stream": true,
                "store": false,
                "include": ["reasoning.encrypted_content"],
            })
        );
        let off = ModelRequest {
            thinking: Some(ThinkingLevel::Off),
            ..unset
        };
        assert_eq!(
            request_body(&off, &gpt5)["reasoning"],
            json!({"effort": "minimal"})
        );
        let gpt51 = Profile::builtin(ProviderKind::OpenAiResponses, "gpt-5.1");
        assert_eq!(
            request_body(&off, &gpt51)["reasoning"],
            json!({"effort": "none"})
        );
        // A model that does not reason gets neither field (OpenAI refuses `include` there).
        let gpt41 = Profile::builtin(ProviderKind::OpenAiResponses, "gpt-4.1");
        let body = request_body(&off, &gpt41);
        assert_eq!((body.get("reasoning"), body.get("include")), (None, None));
    }
}
