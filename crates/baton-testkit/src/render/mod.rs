//! Turning a [`Turn`] into the bytes each real API sends.
//!
//! Everything here is pure and deterministic: ids are derived from a sequence number
//! (the server uses the model request count, the public `render_*` functions use 1)
//! and every timestamp is [`CREATED`].

use crate::json::{obj, J};
use crate::request::WireFormat;
use crate::turn::Turn;

use self::anthropic::{anthropic_body, anthropic_events, anthropic_in_stream_error};
use self::chat::{chat_body, chat_events, chat_in_stream_error};
use self::responses::{responses_body, responses_events, responses_in_stream_error};

mod anthropic;
mod chat;
mod responses;

/// The fixed `created` / `created_at` timestamp in every payload.
pub const CREATED: u64 = 1_700_000_000;

/// Largest text or reasoning delta, in bytes (split on character boundaries).
pub const TEXT_PIECE_BYTES: usize = 12;

/// Largest tool-argument delta, in bytes, so clients have to reassemble arguments.
pub const ARGUMENTS_PIECE_BYTES: usize = 8;

/// The data line a malformed stream sends after a valid start.
pub const MALFORMED_DATA: &str = "data: {not json\n\n";

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
        WireFormat::Chat => chat_in_stream_error(message, ctx),
        WireFormat::Responses => responses_in_stream_error(message, ctx),
        WireFormat::Anthropic => anthropic_in_stream_error(message, ctx),
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

    pub(super) fn data_lines(events: &[String]) -> Vec<Value> {
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
