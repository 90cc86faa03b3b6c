//! OpenAI-compatible Chat Completions (`POST {base_url}/chat/completions`, streamed): OpenAI,
//! Ollama, llama.cpp, vLLM, OpenRouter and the many servers that copy the format.
//!
//! Request mapping:
//! - the system prompt is the first `system` message (omitted when empty);
//! - assistant text parts join into `content`, tool calls go to `tool_calls`; reasoning parts are
//!   dropped because the format has no field to send them back;
//! - tool results are `tool` messages (the format has no error flag, so the output goes as is);
//! - `tools` is omitted when no tool is offered (some servers reject an empty list);
//! - thinking level → `reasoning_effort`: off or unset → omitted; minimal, low, medium, high → the
//!   same word; xhigh → `"high"` (compatible servers only know low/medium/high, and OpenAI models
//!   that accept `xhigh` are better served by the Responses provider);
//! - `max_output_tokens` → `max_completion_tokens` (OpenAI's current name; reasoning models refuse
//!   the older `max_tokens`), omitted when unset.
//!
//! Stream mapping: `delta.content` → text, `delta.reasoning_content` or `delta.reasoning` →
//! reasoning, `delta.tool_calls[]` fragments → tool-call events keyed by their `index` (falling
//! back to the call id, for servers that omit the index; a fragment whose id differs from the
//! call at its index starts a new call, as Ollama sends every call at index 0), `finish_reason` → stop reason, a `usage`
//! object (often in a final chunk with no choices) → usage. `Stop` is sent at `data: [DONE]`, or
//! at the end of the body when a `finish_reason` arrived but `[DONE]` did not.

use std::time::Duration;

use baton_protocol::{AssistantPart, Message, StopReason, ThinkingLevel, Usage};
use futures::Stream;
use serde_json::{json, Value};

use crate::error::ModelError;
use crate::http::{classify_error_object, Ctx, Endpoint};
use crate::provider::{EventStream, Provider};
use crate::sse::{pump, EventParser, SseEvent};
use crate::types::{ModelRequest, StreamEvent};

/// A Chat Completions endpoint.
#[derive(Debug)]
pub struct OpenAiChat {
    endpoint: Endpoint,
}

impl OpenAiChat {
    /// `base_url` is the API root, such as `https://api.openai.com/v1`; requests go to
    /// `{base_url}/chat/completions`. Without an API key no `authorization` header is sent.
    pub fn new(
        name: String,
        base_url: String,
        api_key: Option<String>,
        headers: Vec<(String, String)>,
        stream_idle_timeout: Duration,
    ) -> Self {
        OpenAiChat {
            endpoint: Endpoint::new(
                name,
                &base_url,
                "/chat/completions",
                api_key,
                headers,
                stream_idle_timeout,
            ),
        }
    }
}

#[async_trait::async_trait]
impl Provider for OpenAiChat {
    fn name(&self) -> &str {
        &self.endpoint.name
    }

    async fn stream(&self, request: &ModelRequest) -> Result<EventStream, ModelError> {
        let defaults = self.endpoint.bearer();
        let (ctx, response) = self
            .endpoint
            .post(&request.model, &defaults, &request_body(request))
            .await?;
        Ok(decode(
            ctx,
            response.bytes_stream(),
            self.endpoint.idle_timeout,
        ))
    }
}

/// The JSON body for one streamed turn.
pub fn request_body(request: &ModelRequest) -> Value {
    let mut messages = Vec::new();
    if !request.system.is_empty() {
        messages.push(json!({"role": "system", "content": request.system}));
    }
    for m in &request.messages {
        match m {
            Message::User { text } => messages.push(json!({"role": "user", "content": text})),
            Message::Assistant { parts } => {
                let mut text = String::new();
                let mut calls = Vec::new();
                for p in parts {
                    match p {
                        AssistantPart::Text { text: t } => text.push_str(t),
                        AssistantPart::Reasoning { .. } => {}
                        AssistantPart::ToolCall {
                            id,
                            name,
                            arguments,
                        } => calls.push(json!({
                            "id": id,
                            "type": "function",
                            "function": {"name": name, "arguments": arguments},
                        })),
                    }
                }
                let mut msg = json!({"role": "assistant"});
                if calls.is_empty() {
                    msg["content"] = json!(text);
                } else {
                    msg["content"] = if text.is_empty() {
                        Value::Null
                    } else {
                        json!(text)
                    };
                    msg["tool_calls"] = json!(calls);
                }
                messages.push(msg);
            }
            Message::Tool {
                call_id, output, ..
            } => messages.push(json!({"role": "tool", "tool_call_id": call_id, "content": output})),
        }
    }
    let mut body = json!({
        "model": request.model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
                })
            })
            .collect();
        if request.tools_disabled {
            body["tool_choice"] = json!("none");
        }
    }
    if let Some(effort) = request.thinking.and_then(reasoning_effort) {
        body["reasoning_effort"] = json!(effort);
    }
    if let Some(max) = request.max_output_tokens {
        body["max_completion_tokens"] = json!(max);
    }
    body
}

/// The `reasoning_effort` sent for a thinking level (`None`: leave the field out).
pub fn reasoning_effort(level: ThinkingLevel) -> Option<&'static str> {
    match level {
        ThinkingLevel::Off => None,
        ThinkingLevel::Minimal => Some("minimal"),
        ThinkingLevel::Low => Some("low"),
        ThinkingLevel::Medium => Some("medium"),
        ThinkingLevel::High | ThinkingLevel::Xhigh => Some("high"),
    }
}

/// Decodes a Chat Completions event stream (the raw response body).
pub(crate) fn decode<S, B, E>(ctx: Ctx, body: S, idle: Duration) -> EventStream
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: AsRef<[u8]>,
    E: std::error::Error + 'static,
{
    let parser = ChatParser {
        ctx: ctx.clone(),
        calls: Vec::new(),
        finish: None,
    };
    pump(body, parser, ctx, idle)
}

/// How a streamed tool call is recognised in later fragments.
#[derive(Debug, Clone, PartialEq, Eq)]
enum CallKey {
    Index(u64),
    Id(String),
    /// Neither index nor id: a fragment with no name continues the latest call.
    Anonymous(usize),
}

struct ChatCall {
    key: CallKey,
    /// The id the server gave the call, if it gave one.
    id: Option<String>,
    open: bool,
}

struct ChatParser {
    ctx: Ctx,
    /// Tool calls in order of first appearance; the position is the event index.
    calls: Vec<ChatCall>,
    finish: Option<StopReason>,
}

impl ChatParser {
    fn tool_call(&mut self, tc: &Value, out: &mut Vec<StreamEvent>) {
        let function = tc.get("function");
        let name = function
            .and_then(|f| f.get("name"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let id = tc
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let key = match (tc.get("index").and_then(Value::as_u64), id) {
            (Some(i), _) => Some(CallKey::Index(i)),
            (None, Some(id)) => Some(CallKey::Id(id.to_string())),
            (None, None) if name.is_some() => None,
            (None, None) => self.calls.last().map(|c| c.key.clone()),
        };
        // The latest call with this key, unless the fragment names another id: Ollama sends
        // `index: 0` for every call of a turn, each with its own id, so a new id at a taken
        // index starts a new call (and later fragments at that index continue the newest).
        let existing = key
            .as_ref()
            .and_then(|k| self.calls.iter().rposition(|c| &c.key == k))
            .filter(|&i| match (id, self.calls[i].id.as_deref()) {
                (Some(new), Some(old)) => new == old,
                (Some(_), None) | (None, _) => true,
            });
        let index = match existing {
            Some(i) => i,
            None => {
                let index = self.calls.len();
                self.calls.push(ChatCall {
                    key: key.unwrap_or(CallKey::Anonymous(index)),
                    id: id.map(str::to_string),
                    open: true,
                });
                out.push(StreamEvent::ToolCallStart {
                    index,
                    id: id.map_or_else(|| format!("call_{index}"), str::to_string),
                    name: name.unwrap_or_default().to_string(),
                });
                index
            }
        };
        let arguments = match function.and_then(|f| f.get("arguments")) {
            Some(Value::String(s)) => s.clone(),
            // A few servers send the arguments as an object rather than JSON text.
            Some(v @ Value::Object(_)) => v.to_string(),
            Some(_) | None => String::new(),
        };
        if !arguments.is_empty() {
            out.push(StreamEvent::ToolCallDelta { index, arguments });
        }
    }

    fn close_calls(&mut self, out: &mut Vec<StreamEvent>) {
        for (index, call) in self.calls.iter_mut().enumerate() {
            if call.open {
                call.open = false;
                out.push(StreamEvent::ToolCallEnd { index });
            }
        }
    }

    fn stop(&mut self, out: &mut Vec<StreamEvent>) {
        self.close_calls(out);
        let reason = self.finish.unwrap_or(if self.calls.is_empty() {
            StopReason::EndTurn
        } else {
            StopReason::ToolUse
        });
        out.push(StreamEvent::Stop { reason });
    }
}

fn finish_reason(s: &str) -> StopReason {
    match s {
        "stop" | "eos" | "end_turn" | "stop_sequence" => StopReason::EndTurn,
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "length" | "max_tokens" => StopReason::MaxTokens,
        "content_filter" | "refusal" => StopReason::Refusal,
        _ => StopReason::Other,
    }
}

fn text_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

impl EventParser for ChatParser {
    fn on_event(&mut self, event: SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), ModelError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            self.stop(out);
            return Ok(());
        }
        let chunk = self.ctx.json(data)?;
        if chunk.get("error").is_some_and(|e| !e.is_null()) {
            return Err(self.ctx.stream_error(classify_error_object(&chunk)));
        }
        let choices = chunk.get("choices").and_then(Value::as_array);
        let choice = choices.and_then(|cs| {
            cs.iter()
                .find(|c| c.get("index").and_then(Value::as_u64) == Some(0))
                .or_else(|| cs.first())
        });
        if let Some(choice) = choice {
            if let Some(delta) = choice.get("delta") {
                let reasoning = text_field(delta, "reasoning_content")
                    .or_else(|| text_field(delta, "reasoning"));
                if let Some(text) = reasoning {
                    out.push(StreamEvent::ReasoningDelta {
                        text: text.to_string(),
                    });
                }
                if let Some(text) = text_field(delta, "content") {
                    out.push(StreamEvent::TextDelta {
                        text: text.to_string(),
                    });
                }
                if let Some(text) = text_field(delta, "refusal") {
                    out.push(StreamEvent::TextDelta {
                        text: text.to_string(),
                    });
                }
                if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
                    for tc in calls {
                        self.tool_call(tc, out);
                    }
                }
            }
            if let Some(reason) = text_field(choice, "finish_reason") {
                self.finish = Some(finish_reason(reason));
                self.close_calls(out);
            }
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            let n = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
            out.push(StreamEvent::Usage {
                usage: Usage {
                    input_tokens: n(usage.get("prompt_tokens")),
                    cached_input_tokens: n(usage
                        .get("prompt_tokens_details")
                        .and_then(|d| d.get("cached_tokens"))),
                    output_tokens: n(usage.get("completion_tokens")),
                },
            });
        }
        Ok(())
    }

    fn on_eof(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), ModelError> {
        if self.finish.is_some() {
            self.stop(out);
            Ok(())
        } else {
            Err(self
                .ctx
                .cut("the connection closed before a finish_reason or [DONE]"))
        }
    }
}

#[cfg(test)]
mod tests {
    use baton_protocol::ToolSpec;
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::sse::testing::{run, same_for_every_split, EventStreamBody};
    use crate::types::AssistantTurn;

    fn make(body: EventStreamBody) -> EventStream {
        decode(Ctx::new("local", "qwen"), body, Duration::from_secs(5))
    }

    /// Reasoning, text with multi-byte characters, two tool calls whose argument fragments
    /// interleave, a keep-alive comment, a data field split over two lines, finish_reason, then
    /// usage in a chunk with no choices, then [DONE].
    const TOOL_TURN: &str = concat!(
        ": OPENROUTER PROCESSING\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"reasoning_content\":\"Need to \"}}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"look — ✓\"}}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Checking 🦀 \"}}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"files.\"}}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"type\":\"function\",\"function\":{\"name\":\"read\",\"arguments\":\"\"}}]}}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"pa\"}}]}}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_b\",\"type\":\"function\",\"function\":{\"name\":\"bash\",\"arguments\":\"{\\\"command\\\":\"}}]}}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"th\\\":\\\"src/é.rs\\\"}\"}}]}}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\n",
        "data: \"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\"\\\"ls -la\\\"}\"}}]}}]}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}],\"usage\":null}\n\n",
        "data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":1200,\"completion_tokens\":85,\"total_tokens\":1285,\"prompt_tokens_details\":{\"cached_tokens\":1024}}}\n\n",
        "data: [DONE]\n\n",
    );

    #[test]
    fn tool_turn_is_identical_under_every_chunking() {
        let (events, turn) = same_for_every_split(TOOL_TURN.as_bytes(), &make);
        assert_eq!(
            turn,
            Ok(AssistantTurn {
                parts: vec![
                    AssistantPart::Reasoning {
                        text: "Need to look — ✓".into(),
                        signature: None,
                        provider_id: None
                    },
                    AssistantPart::Text {
                        text: "Checking 🦀 files.".into()
                    },
                    AssistantPart::ToolCall {
                        id: "call_a".into(),
                        name: "read".into(),
                        arguments: r#"{"path":"src/é.rs"}"#.into()
                    },
                    AssistantPart::ToolCall {
                        id: "call_b".into(),
                        name: "bash".into(),
                        arguments: r#"{"command":"ls -la"}"#.into()
                    },
                ],
                usage: Usage {
                    input_tokens: 1200,
                    cached_input_tokens: 1024,
                    output_tokens: 85
                },
                stop_reason: StopReason::ToolUse,
            })
        );
        let tail: Vec<_> = events.iter().rev().take(4).cloned().collect();
        assert_eq!(
            tail,
            vec![
                StreamEvent::Stop {
                    reason: StopReason::ToolUse
                },
                StreamEvent::Usage {
                    usage: Usage {
                        input_tokens: 1200,
                        cached_input_tokens: 1024,
                        output_tokens: 85
                    }
                },
                StreamEvent::ToolCallEnd { index: 1 },
                StreamEvent::ToolCallEnd { index: 0 },
            ]
        );
    }

    /// CRLF line endings, `delta.reasoning` (the other spelling), no [DONE]: the body just ends
    /// after the finish_reason and usage.
    #[test]
    fn text_turn_without_done_finishes_at_eof() {
        let body = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning\":\"hmm\"}}]}\r\n\r\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hello, \"}}]}\r\n\r\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"wörld\"},\"finish_reason\":\"length\"}]}\r\n\r\n",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":3}}\r\n\r\n",
        );
        let (_, turn) = same_for_every_split(body.as_bytes(), &make);
        assert_eq!(
            turn,
            Ok(AssistantTurn {
                parts: vec![
                    AssistantPart::Reasoning {
                        text: "hmm".into(),
                        signature: None,
                        provider_id: None
                    },
                    AssistantPart::Text {
                        text: "Hello, wörld".into()
                    },
                ],
                usage: Usage {
                    input_tokens: 10,
                    cached_input_tokens: 0,
                    output_tokens: 3
                },
                stop_reason: StopReason::MaxTokens,
            })
        );
    }

    /// Ollama: every call of a turn at `index: 0`, each with its own id, whole arguments in one
    /// fragment (as its OpenAI-compatible endpoint streams parallel calls). Each id is its own
    /// call; before, the second call's arguments were appended to the first and its id lost.
    #[test]
    fn a_new_id_at_a_taken_index_starts_a_new_call() {
        let body = concat!(
            "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"model\":\"qwen3:8b\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\",",
            "\"tool_calls\":[{\"id\":\"call_k2f8\",\"index\":0,\"type\":\"function\",\"function\":{\"name\":\"read\",\"arguments\":\"{\\\"path\\\":\\\"a.rs\\\"}\"}}]},\"finish_reason\":null}]}\n\n",
            "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"model\":\"qwen3:8b\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\",",
            "\"tool_calls\":[{\"id\":\"call_9zq1\",\"index\":0,\"type\":\"function\",\"function\":{\"name\":\"ls\",\"arguments\":\"{\\\"path\\\":\\\".\\\"}\"}}]},\"finish_reason\":null}]}\n\n",
            "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"model\":\"qwen3:8b\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: [DONE]\n\n",
        );
        let (_, turn) = same_for_every_split(body.as_bytes(), &make);
        let turn = turn.unwrap();
        assert_eq!(
            turn.tool_calls().collect::<Vec<_>>(),
            vec![
                ("call_k2f8", "read", r#"{"path":"a.rs"}"#),
                ("call_9zq1", "ls", r#"{"path":"."}"#)
            ]
        );
        assert_eq!(turn.stop_reason, StopReason::ToolUse);
    }

    /// Servers that send whole calls without `index` (one chunk, two calls).
    #[test]
    fn calls_without_index_are_keyed_by_id() {
        let body = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[",
            "{\"id\":\"x1\",\"function\":{\"name\":\"ls\",\"arguments\":\"{}\"}},",
            "{\"id\":\"x2\",\"function\":{\"name\":\"read\",\"arguments\":{\"path\":\"a\"}}}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
            "data: [DONE]\n\n",
        );
        let (_, turn) = same_for_every_split(body.as_bytes(), &make);
        let turn = turn.unwrap();
        assert_eq!(
            turn.tool_calls().collect::<Vec<_>>(),
            vec![("x1", "ls", "{}"), ("x2", "read", r#"{"path":"a"}"#)]
        );
        assert_eq!(turn.stop_reason, StopReason::ToolUse);
    }

    #[test]
    fn errors_cuts_and_bad_json() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let one = |s: &str| run(&rt, vec![s.as_bytes().to_vec()], &make).1;

        let err =
            one("data: {\"error\":{\"message\":\"Provider returned error\",\"code\":502}}\n\n");
        assert_eq!(
            err,
            Err(ModelError::Stream {
                provider: "local".into(),
                model: "qwen".into(),
                retryable: true,
                message: "502: Provider returned error".into(),
                kind: crate::error::ErrorKind::Other,
            })
        );
        let err =
            one("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"partial\"}}]}\n\n");
        assert!(matches!(err, Err(ModelError::StreamCut { .. })), "{err:?}");
        let err = one("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]\n\n");
        assert!(
            matches!(&err, Err(ModelError::Protocol { message, .. }) if message.contains("invalid JSON")),
            "{err:?}"
        );
    }

    #[test]
    fn request_body_maps_the_conversation() {
        let request = ModelRequest {
            model: "gpt-4.1".into(),
            system: "Be brief.".into(),
            messages: vec![
                Message::user("list files"),
                Message::Assistant {
                    parts: vec![
                        AssistantPart::Reasoning {
                            text: "dropped".into(),
                            signature: Some("sig".into()),
                            provider_id: None,
                        },
                        AssistantPart::ToolCall {
                            id: "call_1".into(),
                            name: "ls".into(),
                            arguments: "{}".into(),
                        },
                    ],
                },
                Message::Tool {
                    call_id: "call_1".into(),
                    tool: "ls".into(),
                    output: "a.rs".into(),
                    is_error: false,
                },
                Message::Assistant {
                    parts: vec![AssistantPart::Text {
                        text: "One file.".into(),
                    }],
                },
            ],
            tools: vec![ToolSpec {
                name: "ls".into(),
                description: "List files".into(),
                parameters: json!({"type": "object", "properties": {}}),
            }],
            thinking: Some(ThinkingLevel::Xhigh),
            max_output_tokens: Some(4096),
            tools_disabled: false,
        };
        assert_eq!(
            request_body(&request),
            json!({
                "model": "gpt-4.1",
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "list files"},
                    {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
                    ]},
                    {"role": "tool", "tool_call_id": "call_1", "content": "a.rs"},
                    {"role": "assistant", "content": "One file."},
                ],
                "stream": true,
                "stream_options": {"include_usage": true},
                "tools": [{"type": "function", "function": {
                    "name": "ls", "description": "List files",
                    "parameters": {"type": "object", "properties": {}}
                }}],
                "reasoning_effort": "high",
                "max_completion_tokens": 4096,
            })
        );
        let plain = ModelRequest {
            system: String::new(),
            tools: vec![],
            thinking: Some(ThinkingLevel::Off),
            max_output_tokens: None,
            tools_disabled: false,
            messages: vec![Message::user("hi")],
            ..request
        };
        assert_eq!(
            request_body(&plain),
            json!({
                "model": "gpt-4.1",
                "messages": [{"role": "user", "content": "hi"}],
                "stream": true,
                "stream_options": {"include_usage": true},
            })
        );
    }
}
