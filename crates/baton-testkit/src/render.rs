//! Turning a [`Turn`] into the bytes each real API sends.
//!
//! Everything here is pure and deterministic: ids are derived from a sequence number
//! (the server uses the model request count, the public `render_*` functions use 1)
//! and every timestamp is [`CREATED`].

use serde::{Deserialize, Serialize};

use crate::json::{obj, J};
use crate::script::{Part, Turn};

/// The fixed `created` / `created_at` timestamp in every payload.
pub const CREATED: u64 = 1_700_000_000;

/// Largest text or reasoning delta, in bytes (split on character boundaries).
pub const TEXT_PIECE_BYTES: usize = 12;

/// Largest tool-argument delta, in bytes, so clients have to reassemble arguments.
pub const ARGUMENTS_PIECE_BYTES: usize = 8;

/// The data line a malformed stream sends after a valid start.
pub const MALFORMED_DATA: &str = "data: {not json\n\n";

/// The three wire formats the mock server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireFormat {
    /// OpenAI Chat Completions (`/v1/chat/completions`).
    Chat,
    /// OpenAI Responses (`/v1/responses`).
    Responses,
    /// Anthropic Messages (`/v1/messages`).
    Anthropic,
}

/// What varies between two renderings of the same turn.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ctx<'a> {
    pub(crate) seq: u64,
    pub(crate) model: &'a str,
}

/// Splits `s` into pieces of at most `max` bytes without cutting a character.
/// A character longer than `max` gets a piece of its own. `""` gives no pieces.
pub(crate) fn pieces(s: &str, max: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    for (at, ch) in s.char_indices() {
        if at > start && at + ch.len_utf8() - start > max {
            out.push(&s[start..at]);
            start = at;
        }
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}

/// A tool call's id: the scripted one, or `<prefix><seq>_<part index>`.
fn call_id(scripted: &str, prefix: &str, ctx: &Ctx<'_>, index: usize) -> String {
    if scripted.is_empty() {
        format!("{prefix}{}_{index}", ctx.seq)
    } else {
        scripted.to_string()
    }
}

/// Reasoning tokens reported in usage details: about one token per four bytes of
/// reasoning text, capped at the turn's output tokens.
fn reasoning_tokens(turn: &Turn) -> u64 {
    let bytes = turn.joined_reasoning().len() as u64;
    bytes.div_ceil(4).min(turn.usage.output_tokens)
}

/// Tool arguments as a JSON value, for formats that carry an object (`{}` if invalid).
fn arguments_value(arguments: &str) -> J {
    match serde_json::from_str::<serde_json::Value>(arguments) {
        Ok(value) => J::Raw(value),
        Err(_) => obj! {},
    }
}

fn data_frame(payload: &J) -> String {
    format!("data: {}\n\n", payload.text())
}

fn event_frame(name: &str, payload: &J) -> String {
    format!("event: {name}\ndata: {}\n\n", payload.text())
}

/// `{"type": kind, <extra fields>}`, with `type` first as the APIs send it.
fn typed(kind: &str, rest: J, head: Vec<(&'static str, J)>) -> J {
    let mut fields = vec![("type", J::from(kind))];
    fields.extend(head);
    if let J::Obj(more) = rest {
        fields.extend(more);
    }
    J::Obj(fields)
}

// ---------------------------------------------------------------------------
// OpenAI Chat Completions
// ---------------------------------------------------------------------------

fn chat_id(ctx: &Ctx<'_>) -> String {
    format!("chatcmpl-mock{}", ctx.seq)
}

fn chat_usage(turn: &Turn) -> J {
    let u = &turn.usage;
    obj! {
        "prompt_tokens": u.input_tokens,
        "completion_tokens": u.output_tokens,
        "total_tokens": u.input_tokens + u.output_tokens,
        "prompt_tokens_details": obj! { "cached_tokens": u.cached_input_tokens },
        "completion_tokens_details": obj! { "reasoning_tokens": reasoning_tokens(turn) },
    }
}

fn chat_finish_reason(turn: &Turn) -> &'static str {
    if turn.has_tool_calls() {
        "tool_calls"
    } else {
        "stop"
    }
}

struct ChatChunks<'a> {
    id: String,
    ctx: Ctx<'a>,
    include_usage: bool,
}

impl ChatChunks<'_> {
    fn chunk(&self, choices: Vec<J>) -> J {
        let mut chunk = obj! {
            "id": &self.id,
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": self.ctx.model,
            "system_fingerprint": "fp_mock",
            "choices": choices,
        };
        if self.include_usage {
            // With include_usage the API sends `"usage": null` on every ordinary chunk.
            chunk.push("usage", J::Null);
        }
        chunk
    }

    fn delta(&self, delta: J, finish_reason: Option<&str>) -> String {
        data_frame(&self.chunk(vec![obj! {
            "index": 0u64,
            "delta": delta,
            "logprobs": J::Null,
            "finish_reason": finish_reason,
        }]))
    }

    fn role(&self) -> String {
        self.delta(
            obj! { "role": "assistant", "content": "", "refusal": J::Null },
            None,
        )
    }
}

pub(crate) fn chat_events(turn: &Turn, ctx: &Ctx<'_>, include_usage: bool) -> Vec<String> {
    let chunks = ChatChunks {
        id: chat_id(ctx),
        ctx: *ctx,
        include_usage,
    };
    let mut out = vec![chunks.role()];
    let mut tool_index = 0usize;
    for (i, part) in turn.parts.iter().enumerate() {
        match part {
            Part::Text(text) => {
                for piece in pieces(text, TEXT_PIECE_BYTES) {
                    out.push(chunks.delta(obj! { "content": piece }, None));
                }
            }
            Part::Reasoning(text) => {
                for piece in pieces(text, TEXT_PIECE_BYTES) {
                    out.push(chunks.delta(obj! { "reasoning_content": piece }, None));
                }
            }
            Part::ToolCall {
                id,
                name,
                arguments,
            } => {
                let head = obj! {
                    "index": tool_index,
                    "id": call_id(id, "call_mock", ctx, i),
                    "type": "function",
                    "function": obj! { "name": name, "arguments": "" },
                };
                out.push(chunks.delta(obj! { "tool_calls": vec![head] }, None));
                for piece in pieces(arguments, ARGUMENTS_PIECE_BYTES) {
                    let fragment =
                        obj! { "index": tool_index, "function": obj! { "arguments": piece } };
                    out.push(chunks.delta(obj! { "tool_calls": vec![fragment] }, None));
                }
                tool_index += 1;
            }
        }
    }
    out.push(chunks.delta(obj! {}, Some(chat_finish_reason(turn))));
    if include_usage {
        let mut last = chunks.chunk(Vec::new());
        last.set("usage", chat_usage(turn));
        out.push(data_frame(&last));
    }
    out.push("data: [DONE]\n\n".to_string());
    out
}

fn chat_body(turn: &Turn, ctx: &Ctx<'_>) -> J {
    let text = turn.joined_text();
    let reasoning = turn.joined_reasoning();
    let calls: Vec<J> = turn
        .parts
        .iter()
        .enumerate()
        .filter_map(|(i, part)| match part {
            Part::ToolCall {
                id,
                name,
                arguments,
            } => Some(obj! {
                "id": call_id(id, "call_mock", ctx, i),
                "type": "function",
                "function": obj! { "name": name, "arguments": arguments },
            }),
            Part::Text(_) | Part::Reasoning(_) => None,
        })
        .collect();
    let mut message = obj! {
        "role": "assistant",
        "content": (!text.is_empty()).then_some(text),
        "refusal": J::Null,
    };
    if !reasoning.is_empty() {
        message.push("reasoning_content", reasoning);
    }
    if !calls.is_empty() {
        message.push("tool_calls", calls);
    }
    obj! {
        "id": chat_id(ctx),
        "object": "chat.completion",
        "created": CREATED,
        "model": ctx.model,
        "system_fingerprint": "fp_mock",
        "choices": vec![obj! {
            "index": 0u64,
            "message": message,
            "logprobs": J::Null,
            "finish_reason": chat_finish_reason(turn),
        }],
        "usage": chat_usage(turn),
    }
}

fn chat_error_chunk(message: &str) -> String {
    data_frame(&obj! {
        "error": obj! {
            "message": message,
            "type": "server_error",
            "param": J::Null,
            "code": J::Null,
        }
    })
}

// ---------------------------------------------------------------------------
// OpenAI Responses
// ---------------------------------------------------------------------------

fn response_object(ctx: &Ctx<'_>, status: &str, output: Vec<J>, usage: J, error: J) -> J {
    obj! {
        "id": format!("resp_mock{}", ctx.seq),
        "object": "response",
        "created_at": CREATED,
        "status": status,
        "error": error,
        "incomplete_details": J::Null,
        "model": ctx.model,
        "output": output,
        "usage": usage,
    }
}

fn responses_usage(turn: &Turn) -> J {
    let u = &turn.usage;
    obj! {
        "input_tokens": u.input_tokens,
        "input_tokens_details": obj! { "cached_tokens": u.cached_input_tokens },
        "output_tokens": u.output_tokens,
        "output_tokens_details": obj! { "reasoning_tokens": reasoning_tokens(turn) },
        "total_tokens": u.input_tokens + u.output_tokens,
    }
}

fn output_text_part(text: &str) -> J {
    obj! { "type": "output_text", "annotations": J::Arr(Vec::new()), "logprobs": J::Arr(Vec::new()), "text": text }
}

fn summary_part(text: &str) -> J {
    obj! { "type": "summary_text", "text": text }
}

/// Ids of the output item made from part `index`.
fn item_id(kind: &str, ctx: &Ctx<'_>, index: usize) -> String {
    format!("{kind}_mock{}_{index}", ctx.seq)
}

/// The finished output item for one part, as in `response.output_item.done` and
/// in the completed response's `output`.
fn responses_done_item(part: &Part, ctx: &Ctx<'_>, index: usize) -> J {
    match part {
        Part::Text(text) => obj! {
            "id": item_id("msg", ctx, index),
            "type": "message",
            "status": "completed",
            "content": vec![output_text_part(text)],
            "role": "assistant",
        },
        Part::Reasoning(text) => obj! {
            "id": item_id("rs", ctx, index),
            "type": "reasoning",
            "summary": vec![summary_part(text)],
            "encrypted_content": format!("enc_mock{}_{index}", ctx.seq),
        },
        Part::ToolCall {
            id,
            name,
            arguments,
        } => obj! {
            "id": item_id("fc", ctx, index),
            "type": "function_call",
            "status": "completed",
            "arguments": arguments,
            "call_id": call_id(id, "call_mock", ctx, index),
            "name": name,
        },
    }
}

/// Collects Responses events, numbering them as they are added.
struct ResponsesEvents {
    out: Vec<String>,
}

impl ResponsesEvents {
    fn push(&mut self, kind: &str, rest: J) {
        let payload = typed(
            kind,
            rest,
            vec![("sequence_number", J::from(self.out.len()))],
        );
        self.out.push(event_frame(kind, &payload));
    }

    /// `response.created` and `response.in_progress`.
    fn start(&mut self, ctx: &Ctx<'_>) {
        let pending = response_object(ctx, "in_progress", Vec::new(), J::Null, J::Null);
        self.push("response.created", obj! { "response": &pending });
        self.push("response.in_progress", obj! { "response": pending });
    }
}

pub(crate) fn responses_events(turn: &Turn, ctx: &Ctx<'_>) -> Vec<String> {
    let mut ev = ResponsesEvents { out: Vec::new() };
    ev.start(ctx);
    let mut output = Vec::new();
    for (i, part) in turn.parts.iter().enumerate() {
        let done = responses_done_item(part, ctx, i);
        match part {
            Part::Text(text) => {
                let id = item_id("msg", ctx, i);
                let at = |rest: J| typed_fields(rest, &id, i, Some(0));
                ev.push(
                    "response.output_item.added",
                    obj! {
                        "output_index": i,
                        "item": obj! {
                            "id": &id,
                            "type": "message",
                            "status": "in_progress",
                            "content": J::Arr(Vec::new()),
                            "role": "assistant",
                        },
                    },
                );
                ev.push(
                    "response.content_part.added",
                    at(obj! { "part": output_text_part("") }),
                );
                for piece in pieces(text, TEXT_PIECE_BYTES) {
                    ev.push(
                        "response.output_text.delta",
                        at(obj! { "delta": piece, "logprobs": J::Arr(Vec::new()) }),
                    );
                }
                ev.push(
                    "response.output_text.done",
                    at(obj! { "text": text, "logprobs": J::Arr(Vec::new()) }),
                );
                ev.push(
                    "response.content_part.done",
                    at(obj! { "part": output_text_part(text) }),
                );
            }
            Part::Reasoning(text) => {
                let id = item_id("rs", ctx, i);
                let at = |rest: J| {
                    let mut fields = typed_fields(obj! {}, &id, i, None);
                    fields.push("summary_index", 0u64);
                    if let J::Obj(more) = rest {
                        for (k, v) in more {
                            fields.push(k, v);
                        }
                    }
                    fields
                };
                ev.push(
                    "response.output_item.added",
                    obj! {
                        "output_index": i,
                        "item": obj! { "id": &id, "type": "reasoning", "summary": J::Arr(Vec::new()) },
                    },
                );
                ev.push(
                    "response.reasoning_summary_part.added",
                    at(obj! { "part": summary_part("") }),
                );
                for piece in pieces(text, TEXT_PIECE_BYTES) {
                    ev.push(
                        "response.reasoning_summary_text.delta",
                        at(obj! { "delta": piece }),
                    );
                }
                ev.push(
                    "response.reasoning_summary_text.done",
                    at(obj! { "text": text }),
                );
                ev.push(
                    "response.reasoning_summary_part.done",
                    at(obj! { "part": summary_part(text) }),
                );
            }
            Part::ToolCall {
                id,
                name,
                arguments,
            } => {
                let fc = item_id("fc", ctx, i);
                ev.push(
                    "response.output_item.added",
                    obj! {
                        "output_index": i,
                        "item": obj! {
                            "id": &fc,
                            "type": "function_call",
                            "status": "in_progress",
                            "arguments": "",
                            "call_id": call_id(id, "call_mock", ctx, i),
                            "name": name,
                        },
                    },
                );
                for piece in pieces(arguments, ARGUMENTS_PIECE_BYTES) {
                    ev.push(
                        "response.function_call_arguments.delta",
                        typed_fields(obj! { "delta": piece }, &fc, i, None),
                    );
                }
                ev.push(
                    "response.function_call_arguments.done",
                    typed_fields(obj! { "arguments": arguments }, &fc, i, None),
                );
            }
        }
        ev.push(
            "response.output_item.done",
            obj! { "output_index": i, "item": &done },
        );
        output.push(done);
    }
    let completed = response_object(ctx, "completed", output, responses_usage(turn), J::Null);
    ev.push("response.completed", obj! { "response": completed });
    ev.out
}

/// `{item_id, output_index, [content_index], ...rest}`.
fn typed_fields(rest: J, item_id: &str, output_index: usize, content_index: Option<usize>) -> J {
    let mut fields = obj! { "item_id": item_id, "output_index": output_index };
    if let Some(content_index) = content_index {
        fields.push("content_index", content_index);
    }
    if let J::Obj(more) = rest {
        for (k, v) in more {
            fields.push(k, v);
        }
    }
    fields
}

fn responses_body(turn: &Turn, ctx: &Ctx<'_>) -> J {
    let output = turn
        .parts
        .iter()
        .enumerate()
        .map(|(i, part)| responses_done_item(part, ctx, i))
        .collect();
    response_object(ctx, "completed", output, responses_usage(turn), J::Null)
}

// ---------------------------------------------------------------------------
// Anthropic Messages
// ---------------------------------------------------------------------------

fn anthropic_stop_reason(turn: &Turn) -> &'static str {
    if turn.has_tool_calls() {
        "tool_use"
    } else {
        "end_turn"
    }
}

fn thinking_signature(ctx: &Ctx<'_>, index: usize) -> String {
    format!("mock-signature-{}-{index}", ctx.seq)
}

fn anthropic_usage(turn: &Turn, output_tokens: u64) -> J {
    let u = &turn.usage;
    obj! {
        "input_tokens": u.input_tokens.saturating_sub(u.cached_input_tokens),
        "cache_creation_input_tokens": 0u64,
        "cache_read_input_tokens": u.cached_input_tokens,
        "output_tokens": output_tokens,
    }
}

fn anthropic_event(out: &mut Vec<String>, kind: &str, rest: J) {
    out.push(event_frame(kind, &typed(kind, rest, Vec::new())));
}

fn anthropic_start(out: &mut Vec<String>, turn: &Turn, ctx: &Ctx<'_>) {
    let message = obj! {
        "id": format!("msg_mock{}", ctx.seq),
        "type": "message",
        "role": "assistant",
        "model": ctx.model,
        "content": J::Arr(Vec::new()),
        "stop_reason": J::Null,
        "stop_sequence": J::Null,
        "usage": anthropic_usage(turn, 1),
    };
    anthropic_event(out, "message_start", obj! { "message": message });
}

pub(crate) fn anthropic_events(turn: &Turn, ctx: &Ctx<'_>) -> Vec<String> {
    let mut out = Vec::new();
    anthropic_start(&mut out, turn, ctx);
    anthropic_event(&mut out, "ping", obj! {});
    for (i, part) in turn.parts.iter().enumerate() {
        let delta = |out: &mut Vec<String>, delta: J| {
            anthropic_event(
                out,
                "content_block_delta",
                obj! { "index": i, "delta": delta },
            );
        };
        match part {
            Part::Text(text) => {
                anthropic_event(
                    &mut out,
                    "content_block_start",
                    obj! { "index": i, "content_block": obj! { "type": "text", "text": "" } },
                );
                for piece in pieces(text, TEXT_PIECE_BYTES) {
                    delta(&mut out, obj! { "type": "text_delta", "text": piece });
                }
            }
            Part::Reasoning(text) => {
                anthropic_event(
                    &mut out,
                    "content_block_start",
                    obj! {
                        "index": i,
                        "content_block": obj! { "type": "thinking", "thinking": "", "signature": "" },
                    },
                );
                for piece in pieces(text, TEXT_PIECE_BYTES) {
                    delta(
                        &mut out,
                        obj! { "type": "thinking_delta", "thinking": piece },
                    );
                }
                delta(
                    &mut out,
                    obj! { "type": "signature_delta", "signature": thinking_signature(ctx, i) },
                );
            }
            Part::ToolCall {
                id,
                name,
                arguments,
            } => {
                anthropic_event(
                    &mut out,
                    "content_block_start",
                    obj! {
                        "index": i,
                        "content_block": obj! {
                            "type": "tool_use",
                            "id": call_id(id, "toolu_mock", ctx, i),
                            "name": name,
                            "input": obj! {},
                        },
                    },
                );
                // The API opens every tool input with an empty fragment.
                delta(
                    &mut out,
                    obj! { "type": "input_json_delta", "partial_json": "" },
                );
                for piece in pieces(arguments, ARGUMENTS_PIECE_BYTES) {
                    delta(
                        &mut out,
                        obj! { "type": "input_json_delta", "partial_json": piece },
                    );
                }
            }
        }
        anthropic_event(&mut out, "content_block_stop", obj! { "index": i });
    }
    anthropic_event(
        &mut out,
        "message_delta",
        obj! {
            "delta": obj! { "stop_reason": anthropic_stop_reason(turn), "stop_sequence": J::Null },
            "usage": obj! { "output_tokens": turn.usage.output_tokens },
        },
    );
    anthropic_event(&mut out, "message_stop", obj! {});
    out
}

fn anthropic_body(turn: &Turn, ctx: &Ctx<'_>) -> J {
    let content: Vec<J> = turn
        .parts
        .iter()
        .enumerate()
        .map(|(i, part)| match part {
            Part::Text(text) => obj! { "type": "text", "text": text },
            Part::Reasoning(text) => obj! {
                "type": "thinking",
                "thinking": text,
                "signature": thinking_signature(ctx, i),
            },
            Part::ToolCall {
                id,
                name,
                arguments,
            } => obj! {
                "type": "tool_use",
                "id": call_id(id, "toolu_mock", ctx, i),
                "name": name,
                "input": arguments_value(arguments),
            },
        })
        .collect();
    obj! {
        "id": format!("msg_mock{}", ctx.seq),
        "type": "message",
        "role": "assistant",
        "model": ctx.model,
        "content": content,
        "stop_reason": anthropic_stop_reason(turn),
        "stop_sequence": J::Null,
        "usage": anthropic_usage(turn, turn.usage.output_tokens),
    }
}

// ---------------------------------------------------------------------------
// Format-neutral entry points used by the server
// ---------------------------------------------------------------------------

pub(crate) fn turn_events(
    format: WireFormat,
    turn: &Turn,
    ctx: &Ctx<'_>,
    include_usage: bool,
) -> Vec<String> {
    match format {
        WireFormat::Chat => chat_events(turn, ctx, include_usage),
        WireFormat::Responses => responses_events(turn, ctx),
        WireFormat::Anthropic => anthropic_events(turn, ctx),
    }
}

/// The non-streaming JSON answer.
pub(crate) fn turn_body(format: WireFormat, turn: &Turn, ctx: &Ctx<'_>) -> String {
    match format {
        WireFormat::Chat => chat_body(turn, ctx),
        WireFormat::Responses => responses_body(turn, ctx),
        WireFormat::Anthropic => anthropic_body(turn, ctx),
    }
    .text()
}

/// A valid start of `turn`'s stream (its first event), then a data line that is not JSON.
pub(crate) fn malformed_events(format: WireFormat, turn: &Turn, ctx: &Ctx<'_>) -> Vec<String> {
    let mut out: Vec<String> = turn_events(format, turn, ctx, false)
        .into_iter()
        .take(1)
        .collect();
    let garbage = match format {
        WireFormat::Chat => MALFORMED_DATA.to_string(),
        WireFormat::Responses => format!("event: response.output_text.delta\n{MALFORMED_DATA}"),
        WireFormat::Anthropic => format!("event: content_block_delta\n{MALFORMED_DATA}"),
    };
    out.push(garbage);
    out
}

/// The format's way of failing after a 200 response has started.
pub(crate) fn in_stream_error_events(
    format: WireFormat,
    message: &str,
    ctx: &Ctx<'_>,
) -> Vec<String> {
    match format {
        WireFormat::Chat => {
            let chunks = ChatChunks {
                id: chat_id(ctx),
                ctx: *ctx,
                include_usage: false,
            };
            vec![chunks.role(), chat_error_chunk(message)]
        }
        WireFormat::Responses => {
            let mut ev = ResponsesEvents { out: Vec::new() };
            ev.start(ctx);
            let error = obj! { "code": "server_error", "message": message };
            let failed = response_object(ctx, "failed", Vec::new(), J::Null, error);
            ev.push("response.failed", obj! { "response": failed });
            ev.out
        }
        WireFormat::Anthropic => {
            let mut out = Vec::new();
            anthropic_start(&mut out, &Turn::new(), ctx);
            anthropic_event(
                &mut out,
                "error",
                obj! { "error": obj! { "type": "overloaded_error", "message": message } },
            );
            out
        }
    }
}

/// `(type, code)` of an OpenAI error body for an HTTP status.
fn openai_error_kind(status: u16) -> (&'static str, Option<&'static str>) {
    match status {
        401 => ("invalid_request_error", Some("invalid_api_key")),
        403 => (
            "invalid_request_error",
            Some("unsupported_country_region_territory"),
        ),
        404 => ("invalid_request_error", Some("model_not_found")),
        429 => ("requests", Some("rate_limit_exceeded")),
        400..=499 => ("invalid_request_error", None),
        _ => ("server_error", None),
    }
}

/// Anthropic's error `type` for an HTTP status.
fn anthropic_error_type(status: u16) -> &'static str {
    match status {
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        503 | 529 => "overloaded_error",
        400..=499 => "invalid_request_error",
        _ => "api_error",
    }
}

/// The JSON error body of an HTTP error in `format`.
pub(crate) fn error_body(format: WireFormat, status: u16, message: &str) -> String {
    match format {
        WireFormat::Chat | WireFormat::Responses => {
            let (kind, code) = openai_error_kind(status);
            obj! {
                "error": obj! { "message": message, "type": kind, "param": J::Null, "code": code },
            }
        }
        WireFormat::Anthropic => obj! {
            "type": "error",
            "error": obj! { "type": anthropic_error_type(status), "message": message },
        },
    }
    .text()
}

// ---------------------------------------------------------------------------
// Public render functions ("recorded streams" for parser tests)
// ---------------------------------------------------------------------------

fn public_ctx(model: &str) -> Ctx<'_> {
    Ctx { seq: 1, model }
}

fn concat(events: Vec<String>) -> Vec<u8> {
    events.concat().into_bytes()
}

/// The SSE body of a Chat Completions stream for `turn`, as the server sends it for
/// its first model request.
pub fn render_chat_sse(turn: &Turn, model: &str, include_usage: bool) -> Vec<u8> {
    concat(chat_events(turn, &public_ctx(model), include_usage))
}

/// The SSE body of a Responses stream for `turn`.
pub fn render_responses_sse(turn: &Turn, model: &str) -> Vec<u8> {
    concat(responses_events(turn, &public_ctx(model)))
}

/// The SSE body of an Anthropic Messages stream for `turn`.
pub fn render_anthropic_sse(turn: &Turn, model: &str) -> Vec<u8> {
    concat(anthropic_events(turn, &public_ctx(model)))
}

/// The same stream as the `render_*_sse` functions, one string per SSE event
/// (each ends with the blank line). `include_usage` only matters for [`WireFormat::Chat`].
/// A prefix of this list is what [`crate::Fault::DropMidStream`] sends.
pub fn render_sse_events(
    format: WireFormat,
    turn: &Turn,
    model: &str,
    include_usage: bool,
) -> Vec<String> {
    turn_events(format, turn, &public_ctx(model), include_usage)
}

/// The non-streaming JSON answer for `turn` (`"stream": false` requests).
pub fn render_json_response(format: WireFormat, turn: &Turn, model: &str) -> Vec<u8> {
    turn_body(format, turn, &public_ctx(model)).into_bytes()
}

/// The stream sent for [`crate::Fault::MalformedSse`].
pub fn render_malformed_sse(format: WireFormat, turn: &Turn, model: &str) -> Vec<u8> {
    concat(malformed_events(format, turn, &public_ctx(model)))
}

/// The stream sent for [`crate::Fault::InStreamError`].
pub fn render_in_stream_error_sse(format: WireFormat, message: &str, model: &str) -> Vec<u8> {
    concat(in_stream_error_events(format, message, &public_ctx(model)))
}

/// The JSON body of an HTTP error (what [`crate::Fault::Status`] sends).
pub fn render_error_body(format: WireFormat, status: u16, message: &str) -> Vec<u8> {
    error_body(format, status, message).into_bytes()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use serde_json::{json, Value};

    fn data_lines(events: &[String]) -> Vec<Value> {
        events
            .iter()
            .filter_map(|e| e.lines().find_map(|l| l.strip_prefix("data: ")))
            .filter(|d| *d != "[DONE]")
            .map(|d| serde_json::from_str(d).unwrap())
            .collect()
    }

    #[test]
    fn pieces_respect_char_boundaries() {
        assert_eq!(pieces("", 4), Vec::<&str>::new());
        assert_eq!(pieces("abcdefghij", 4), vec!["abcd", "efgh", "ij"]);
        assert_eq!(pieces("ééééé", 3), vec!["é", "é", "é", "é", "é"]);
        assert_eq!(pieces("a€b", 1), vec!["a", "€", "b"]);
    }

    #[test]
    fn chat_text_turn_is_exact() {
        let turn = Turn::text("Hi there").usage(10, 4, 2);
        let body = String::from_utf8(render_chat_sse(&turn, "m", true)).unwrap();
        let expected = concat!(
            r#"data: {"id":"chatcmpl-mock1","object":"chat.completion.chunk","created":1700000000,"model":"m","system_fingerprint":"fp_mock","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}"#,
            "\n\n",
            r#"data: {"id":"chatcmpl-mock1","object":"chat.completion.chunk","created":1700000000,"model":"m","system_fingerprint":"fp_mock","choices":[{"index":0,"delta":{"content":"Hi there"},"logprobs":null,"finish_reason":null}],"usage":null}"#,
            "\n\n",
            r#"data: {"id":"chatcmpl-mock1","object":"chat.completion.chunk","created":1700000000,"model":"m","system_fingerprint":"fp_mock","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}"#,
            "\n\n",
            r#"data: {"id":"chatcmpl-mock1","object":"chat.completion.chunk","created":1700000000,"model":"m","system_fingerprint":"fp_mock","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":0}}}"#,
            "\n\n",
            "data: [DONE]\n\n",
        );
        assert_eq!(body, expected);
    }

    #[test]
    fn chat_tool_arguments_reassemble() {
        let args = json!({"path": "src/main.rs", "limit": 40});
        let turn = Turn::reasoning("let me look").with_tool_call("call_1", "read", args.clone());
        let events = chat_events(&turn, &public_ctx("m"), false);
        let chunks = data_lines(&events);
        let mut reasoning = String::new();
        let mut arguments = String::new();
        let mut fragments = 0;
        for chunk in &chunks {
            assert!(chunk.get("usage").is_none());
            let delta = &chunk["choices"][0]["delta"];
            if let Some(r) = delta["reasoning_content"].as_str() {
                reasoning.push_str(r);
            }
            if let Some(call) = delta["tool_calls"].get(0) {
                assert_eq!(call["index"], 0);
                if call.get("id").is_some() {
                    assert_eq!(call["id"], "call_1");
                    assert_eq!(call["function"]["name"], "read");
                } else {
                    fragments += 1;
                }
                arguments.push_str(call["function"]["arguments"].as_str().unwrap());
            }
        }
        assert_eq!(reasoning, "let me look");
        assert!(fragments > 2, "arguments should arrive in several pieces");
        assert_eq!(serde_json::from_str::<Value>(&arguments).unwrap(), args);
        assert_eq!(
            chunks.last().unwrap()["choices"][0]["finish_reason"],
            "tool_calls"
        );
        assert_eq!(events.last().unwrap(), "data: [DONE]\n\n");
    }

    #[test]
    fn responses_sequence_and_completed_output() {
        let turn = Turn::reasoning("plan")
            .with_text("ok")
            .with_tool_call("", "ls", json!({}))
            .usage(50, 10, 30);
        let events = responses_events(
            &turn,
            &Ctx {
                seq: 7,
                model: "gpt",
            },
        );
        let payloads = data_lines(&events);
        for (n, (event, payload)) in events.iter().zip(&payloads).enumerate() {
            let name = event
                .lines()
                .next()
                .unwrap()
                .strip_prefix("event: ")
                .unwrap();
            assert_eq!(payload["type"], name);
            assert_eq!(payload["sequence_number"], n);
        }
        let types: Vec<&str> = payloads
            .iter()
            .map(|p| p["type"].as_str().unwrap())
            .collect();
        assert_eq!(
            types,
            vec![
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.reasoning_summary_part.added",
                "response.reasoning_summary_text.delta",
                "response.reasoning_summary_text.done",
                "response.reasoning_summary_part.done",
                "response.output_item.done",
                "response.output_item.added",
                "response.content_part.added",
                "response.output_text.delta",
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.output_item.added",
                "response.function_call_arguments.delta",
                "response.function_call_arguments.done",
                "response.output_item.done",
                "response.completed",
            ]
        );
        let completed = &payloads.last().unwrap()["response"];
        assert_eq!(
            completed["output"][2],
            json!({"id": "fc_mock7_2", "type": "function_call", "status": "completed", "arguments": "{}", "call_id": "call_mock7_2", "name": "ls"})
        );
        assert_eq!(
            completed["usage"],
            json!({"input_tokens": 50, "input_tokens_details": {"cached_tokens": 10}, "output_tokens": 30, "output_tokens_details": {"reasoning_tokens": 1}, "total_tokens": 80})
        );
        assert_eq!(completed["id"], "resp_mock7");
    }

    #[test]
    fn anthropic_blocks_and_usage() {
        let turn = Turn::reasoning("hmm")
            .with_tool_call(
                "toolu_1",
                "bash",
                json!({"command": "cargo test --workspace"}),
            )
            .usage(100, 60, 9);
        let events = anthropic_events(&turn, &public_ctx("claude"));
        let payloads = data_lines(&events);
        assert_eq!(
            payloads[0]["message"]["usage"],
            json!({"input_tokens": 40, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 60, "output_tokens": 1})
        );
        assert_eq!(payloads[1], json!({"type": "ping"}));
        assert_eq!(
            payloads[2]["content_block"],
            json!({"type": "thinking", "thinking": "", "signature": ""})
        );
        let partial: String = payloads
            .iter()
            .filter(|p| p["delta"]["type"] == "input_json_delta")
            .map(|p| p["delta"]["partial_json"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            serde_json::from_str::<Value>(&partial).unwrap(),
            json!({"command": "cargo test --workspace"})
        );
        let n = payloads.len();
        assert_eq!(
            payloads[n - 2],
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 9}})
        );
        assert_eq!(payloads[n - 1], json!({"type": "message_stop"}));
        assert!(events[n - 1].starts_with("event: message_stop\ndata: "));
    }

    #[test]
    fn error_bodies() {
        let body: Value =
            serde_json::from_slice(&render_error_body(WireFormat::Anthropic, 429, "slow")).unwrap();
        assert_eq!(
            body,
            json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}})
        );
        let body: Value =
            serde_json::from_slice(&render_error_body(WireFormat::Chat, 429, "slow")).unwrap();
        assert_eq!(
            body,
            json!({"error": {"message": "slow", "type": "requests", "param": null, "code": "rate_limit_exceeded"}})
        );
    }

    #[test]
    fn json_bodies() {
        let turn = Turn::text("a").with_tool_call("c", "f", "{\"x\":1}");
        let chat: Value =
            serde_json::from_slice(&render_json_response(WireFormat::Chat, &turn, "m")).unwrap();
        assert_eq!(chat["choices"][0]["message"]["content"], "a");
        assert_eq!(
            chat["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
            "{\"x\":1}"
        );
        let anthropic: Value =
            serde_json::from_slice(&render_json_response(WireFormat::Anthropic, &turn, "m"))
                .unwrap();
        assert_eq!(anthropic["content"][1]["input"], json!({"x": 1}));
        let responses: Value =
            serde_json::from_slice(&render_json_response(WireFormat::Responses, &turn, "m"))
                .unwrap();
        assert_eq!(responses["output"][1]["call_id"], "c");
    }
}
