//! OpenAI-compatible Chat Completions (`POST {base_url}/chat/completions`, streamed): OpenAI,
//! Ollama, llama.cpp, vLLM, OpenRouter and the many servers that copy the format.
//!
//! Request mapping:
//! - the system prompt is the first `system` message (omitted when empty);
//! - assistant text parts join into `content`, tool calls go to `tool_calls` (with the
//!   `extra_content` the server attached to the call, such as Gemini's thought signature);
//! - reasoning goes back the way the server sent it, on assistant messages after the last user
//!   message (the tool loop the server is in): its `reasoning_details` list (OpenRouter) when it
//!   sent one, else the text under the field it used (`reasoning_content` for DeepSeek and vLLM,
//!   `reasoning` for Ollama and others). `reasoning_replay` in the model table can force a field
//!   or turn replay off. Reasoning of other APIs (signed Anthropic thinking, Responses items) is
//!   not sent;
//! - tool results are `tool` messages (the format has no error flag, so the output goes as is);
//! - `tools` is omitted when no tool is offered (some servers reject an empty list);
//! - thinking level → `reasoning_effort`, the word the model table maps the level to for this
//!   model ([`crate::catalog`]); omitted for models that do not reason on request and when no
//!   level is set;
//! - the output limit (the request's, else the route's, at most the model's) →
//!   `max_completion_tokens` for OpenAI's own API, `max_tokens` for every other server (Ollama
//!   reads only that one), omitted when unset;
//! - `temperature`, `top_p`, `seed` from `[routes."provider/model"]` when set.
//!
//! Stream mapping: `delta.content` → text, `delta.reasoning_content` or `delta.reasoning` →
//! reasoning, `delta.reasoning_details` → kept (merged by index) to be sent back; reasoning ends
//! with a `ReasoningSignature` whose provider id names the field (`chat:reasoning_content`) and
//! whose signature is the `reasoning_details` list as JSON, when there was one.
//! `delta.tool_calls[]` fragments → tool-call events keyed by their `index` (falling back to the
//! call id, for servers that omit the index; a fragment whose id differs from the call at its
//! index starts a new call, as Ollama sends every call at index 0), a call's `extra_content` →
//! `ToolCallData`, `finish_reason` → stop reason, a `usage` object (often in a final chunk with
//! no choices) → usage. `Stop` is sent at `data: [DONE]`, or at the end of the body when a
//! `finish_reason` arrived but `[DONE]` did not.

use baton_protocol::config::{OutputTokensField, ReasoningReplay};
use baton_protocol::{AssistantPart, Message, StopReason, Usage};
use serde_json::{json, Value};

use crate::catalog::{Profile, ThinkingPlan};
use crate::error::ModelError;
use crate::http::{classify_error_object, Connection, Ctx, Endpoint};
use crate::provider::{EventStream, Provider};
use crate::sse::{EventParser, SseEvent};
use crate::types::{ModelRequest, StreamEvent};

/// A Chat Completions endpoint.
#[derive(Debug)]
pub struct OpenAiChat {
    endpoint: Endpoint,
    profile: Profile,
}

/// Provider-id prefix of reasoning streamed by a Chat Completions server; the rest names the
/// field it came in (`chat:reasoning_content`, `chat:reasoning`).
pub const CHAT_REASONING: &str = "chat:";

impl OpenAiChat {
    /// `connection.base_url` is the API root, such as `https://api.openai.com/v1`; requests go to
    /// `{base_url}/chat/completions`. Without an API key no `authorization` header is sent.
    pub fn new(connection: Connection, profile: Profile) -> Self {
        OpenAiChat {
            endpoint: Endpoint::new(connection, "/chat/completions"),
            profile,
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
        let body = request_body(request, &self.profile);
        (self.endpoint)
            .stream(&request.model, &defaults, &body, ChatParser::new)
            .await
    }
}

/// The JSON body for one streamed turn.
pub fn request_body(request: &ModelRequest, profile: &Profile) -> Value {
    let mut messages = Vec::new();
    if !request.system.is_empty() {
        messages.push(json!({"role": "system", "content": request.system}));
    }
    let last_user = request
        .messages
        .iter()
        .rposition(|m| matches!(m, Message::User { .. }));
    for (i, m) in request.messages.iter().enumerate() {
        match m {
            Message::User { text } => messages.push(json!({"role": "user", "content": text})),
            Message::Assistant { parts } => {
                let mut msg = assistant_message(parts);
                if last_user.is_none_or(|u| i > u) {
                    replay_reasoning(parts, profile.info.reasoning_replay, &mut msg);
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
    if let ThinkingPlan::Effort(effort) = profile.info.thinking_plan(request.thinking) {
        body["reasoning_effort"] = json!(effort);
    }
    if let Some(max) = profile.output_limit(request.max_output_tokens) {
        let field = match profile.info.output_tokens_field {
            Some(OutputTokensField::MaxCompletionTokens) => "max_completion_tokens",
            Some(OutputTokensField::MaxTokens) | None => "max_tokens",
        };
        body[field] = json!(max);
    }
    let o = &profile.options;
    crate::catalog::put_sampling(o, &mut body);
    if let Some(seed) = o.seed {
        body["seed"] = json!(seed);
    }
    body
}

/// An assistant message without its reasoning.
fn assistant_message(parts: &[AssistantPart]) -> Value {
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
                provider_data,
            } => {
                let mut call = json!({
                    "id": id,
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                });
                if let Some(data) = provider_data {
                    call["extra_content"] = data.clone();
                }
                calls.push(call);
            }
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
    msg
}

/// Adds the reasoning of `parts` to an assistant message, in the field the server expects.
fn replay_reasoning(parts: &[AssistantPart], replay: ReasoningReplay, msg: &mut Value) {
    let forced = match replay {
        ReasoningReplay::None => return,
        ReasoningReplay::Auto => None,
        ReasoningReplay::ReasoningContent => Some("reasoning_content"),
        ReasoningReplay::Reasoning => Some("reasoning"),
    };
    let mut texts: Vec<(String, String)> = Vec::new();
    let mut details: Vec<Value> = Vec::new();
    for p in parts {
        let AssistantPart::Reasoning {
            text,
            signature,
            provider_id,
        } = p
        else {
            continue;
        };
        let streamed_field = provider_id
            .as_deref()
            .and_then(|id| id.strip_prefix(CHAT_REASONING));
        // Reasoning saved before its field was recorded (no id, no signature) goes back only
        // when the model table names the field.
        let field = match (streamed_field, forced) {
            (Some(_), Some(f)) => f,
            (Some(f), None) => f,
            (None, Some(f)) if provider_id.is_none() && signature.is_none() => f,
            (None, _) => continue,
        };
        if let Some(list) = signature
            .as_deref()
            .filter(|_| streamed_field.is_some())
            .and_then(|s| serde_json::from_str::<Vec<Value>>(s).ok())
        {
            details.extend(list);
        } else if !text.is_empty() {
            match texts.iter_mut().find(|(f, _)| f == field) {
                Some((_, t)) => t.push_str(text),
                None => texts.push((field.to_string(), text.clone())),
            }
        }
    }
    if !details.is_empty() {
        msg["reasoning_details"] = Value::Array(details);
    } else {
        for (field, text) in texts {
            msg[field.as_str()] = json!(text);
        }
    }
}

impl ChatParser {
    pub(crate) fn new(ctx: Ctx) -> Self {
        ChatParser {
            ctx,
            calls: Vec::new(),
            finish: None,
            reasoning: None,
        }
    }
}

/// An OpenAI usage object: the `input` tokens (the cached ones under
/// `{input}_details.cached_tokens`) and the `output` tokens. Chat Completions names them
/// `prompt_tokens` and `completion_tokens`, the Responses API `input_tokens` and `output_tokens`.
pub(crate) fn openai_usage(usage: &Value, input: &str, output: &str) -> Usage {
    let n = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    let details = usage.get(format!("{input}_details"));
    Usage {
        input_tokens: n(usage.get(input)),
        cached_input_tokens: n(details.and_then(|d| d.get("cached_tokens"))),
        output_tokens: n(usage.get(output)),
        cache_write_tokens: 0,
    }
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

pub(crate) struct ChatParser {
    ctx: Ctx,
    /// Tool calls in order of first appearance; the position is the event index.
    calls: Vec<ChatCall>,
    finish: Option<StopReason>,
    /// Reasoning being streamed: the field it comes in and its `reasoning_details` so far.
    reasoning: Option<(&'static str, Vec<Value>)>,
}

/// Folds one streamed `reasoning_details` entry into the list: an entry with the same `index`
/// and `type` as an earlier one continues it (text fragments append, other fields are taken
/// as they come); any other entry is new.
fn merge_detail(list: &mut Vec<Value>, entry: &Value) {
    let same = |e: &&mut Value| {
        entry.get("index").is_some()
            && e.get("index") == entry.get("index")
            && e.get("type") == entry.get("type")
    };
    let Some(existing) = list.iter_mut().find(same) else {
        list.push(entry.clone());
        return;
    };
    let Some(fields) = entry.as_object() else {
        return;
    };
    for (k, v) in fields {
        match (k.as_str(), existing.get_mut(k), v) {
            ("text" | "summary" | "data", Some(Value::String(old)), Value::String(more)) => {
                old.push_str(more)
            }
            (_, _, Value::Null) => {}
            _ => existing[k.as_str()] = v.clone(),
        }
    }
}

impl ChatParser {
    /// Ends the reasoning being streamed: its field, and its details list when there was one.
    fn close_reasoning(&mut self, out: &mut Vec<StreamEvent>) {
        if let Some((field, details)) = self.reasoning.take() {
            out.push(StreamEvent::ReasoningSignature {
                signature: (!details.is_empty()).then(|| Value::Array(details).to_string()),
                provider_id: Some(format!("{CHAT_REASONING}{field}")),
            });
        }
    }

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
        if let Some(data) = tc.get("extra_content").filter(|v| !v.is_null()) {
            out.push(StreamEvent::ToolCallData {
                index,
                data: data.clone(),
            });
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
        self.close_reasoning(out);
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
                    .map(|t| ("reasoning_content", t))
                    .or_else(|| text_field(delta, "reasoning").map(|t| ("reasoning", t)));
                let details = delta
                    .get("reasoning_details")
                    .and_then(Value::as_array)
                    .filter(|d| !d.is_empty());
                if reasoning.is_some() || details.is_some() {
                    let field = reasoning.map_or("reasoning", |(f, _)| f);
                    let (_, list) = self.reasoning.get_or_insert((field, Vec::new()));
                    for d in details.into_iter().flatten() {
                        merge_detail(list, d);
                    }
                }
                if let Some((_, text)) = reasoning {
                    out.push(StreamEvent::ReasoningDelta {
                        text: text.to_string(),
                    });
                }
                let answers = text_field(delta, "content").is_some()
                    || text_field(delta, "refusal").is_some()
                    || delta
                        .get("tool_calls")
                        .and_then(Value::as_array)
                        .is_some_and(|c| !c.is_empty());
                if answers {
                    self.close_reasoning(out);
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
            out.push(StreamEvent::Usage {
                usage: openai_usage(usage, "prompt_tokens", "completion_tokens"),
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
    use baton_protocol::config::ProviderKind;
    use baton_protocol::{ThinkingLevel, ToolSpec};
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::sse::testing::{assert_decodes, decode, run, same_for_every_split, EventStreamBody};
    use crate::types::AssistantTurn;

    fn make(body: EventStreamBody) -> EventStream {
        decode(ChatParser::new, Ctx::new("local", "qwen"), body)
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
                        provider_id: Some("chat:reasoning_content".into())
                    },
                    AssistantPart::Text {
                        text: "Checking 🦀 files.".into()
                    },
                    AssistantPart::ToolCall {
                        id: "call_a".into(),
                        name: "read".into(),
                        arguments: r#"{"path":"src/é.rs"}"#.into(),
                        provider_data: None
                    },
                    AssistantPart::ToolCall {
                        id: "call_b".into(),
                        name: "bash".into(),
                        arguments: r#"{"command":"ls -la"}"#.into(),
                        provider_data: None
                    },
                ],
                usage: Usage {
                    input_tokens: 1200,
                    cached_input_tokens: 1024,
                    output_tokens: 85,
                    cache_write_tokens: 0
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
                        output_tokens: 85,
                        cache_write_tokens: 0
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
        assert_decodes(
            body,
            &make,
            AssistantTurn {
                parts: vec![
                    AssistantPart::Reasoning {
                        text: "hmm".into(),
                        signature: None,
                        provider_id: Some("chat:reasoning".into()),
                    },
                    AssistantPart::Text {
                        text: "Hello, wörld".into(),
                    },
                ],
                usage: Usage {
                    input_tokens: 10,
                    cached_input_tokens: 0,
                    output_tokens: 3,
                    cache_write_tokens: 0,
                },
                stop_reason: StopReason::MaxTokens,
            },
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
            model: "o4-mini".into(),
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
                            provider_data: None,
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
            max_output_tokens: Some(400_000),
            tools_disabled: false,
            cache_key: Some("session-1".into()),
        };
        // OpenAI's own API: o-series take low/medium/high, so xhigh becomes high; the limit is
        // `max_completion_tokens`, at most the model's 100000.
        let mut o4 = Profile::builtin(ProviderKind::OpenAi, "o4-mini");
        o4.info.output_tokens_field = Some(OutputTokensField::MaxCompletionTokens);
        assert_eq!(
            request_body(&request, &o4),
            json!({
                "model": "o4-mini",
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
                "max_completion_tokens": 100_000,
            })
        );
        let plain = ModelRequest {
            model: "gpt-4.1".into(),
            system: String::new(),
            tools: vec![],
            thinking: Some(ThinkingLevel::Off),
            max_output_tokens: None,
            tools_disabled: false,
            messages: vec![Message::user("hi")],
            ..request
        };
        assert_eq!(
            request_body(&plain, &Profile::builtin(ProviderKind::OpenAi, "gpt-4.1")),
            json!({
                "model": "gpt-4.1",
                "messages": [{"role": "user", "content": "hi"}],
                "stream": true,
                "stream_options": {"include_usage": true},
            })
        );
        // A local server with route options: `max_tokens` (all Ollama reads), sampling, seed.
        let mut local = Profile::builtin(ProviderKind::OpenAi, "qwen3:8b");
        local.info.output_tokens_field = Some(OutputTokensField::MaxTokens);
        local.options.temperature = Some(0.0);
        local.options.top_p = Some(0.9);
        local.options.seed = Some(42);
        local.options.max_output_tokens = Some(2048);
        let seeded = ModelRequest {
            model: "qwen3:8b".into(),
            ..plain
        };
        assert_eq!(
            request_body(&seeded, &local),
            json!({
                "model": "qwen3:8b",
                "messages": [{"role": "user", "content": "hi"}],
                "stream": true,
                "stream_options": {"include_usage": true},
                "max_tokens": 2048,
                "temperature": 0.0,
                "top_p": 0.9,
                "seed": 42,
            })
        );
    }
}
