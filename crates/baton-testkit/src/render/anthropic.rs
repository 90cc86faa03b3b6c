//! Anthropic Messages: `message_start`, content blocks (text, thinking, tool_use),
//! `message_delta` and `message_stop`, or one `message` body.

use crate::json::{obj, J};
use crate::turn::{Part, Turn};

use super::{call_id, event_frame, pieces, typed, Ctx, ARGUMENTS_PIECE_BYTES, TEXT_PIECE_BYTES};

/// Tool arguments as a JSON value, for formats that carry an object (`{}` if invalid).
fn arguments_value(arguments: &str) -> J {
    match serde_json::from_str::<serde_json::Value>(arguments) {
        Ok(value) => J::Raw(value),
        Err(_) => obj! {},
    }
}

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

pub(super) fn anthropic_events(turn: &Turn, ctx: &Ctx<'_>) -> Vec<String> {
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
                ..
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

pub(super) fn anthropic_body(turn: &Turn, ctx: &Ctx<'_>) -> J {
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
                ..
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

/// `message_start`, then `event: error` with an `overloaded_error`.
pub(super) fn anthropic_in_stream_error(message: &str, ctx: &Ctx<'_>) -> Vec<String> {
    let mut out = Vec::new();
    anthropic_start(&mut out, &Turn::new(), ctx);
    anthropic_event(
        &mut out,
        "error",
        obj! { "error": obj! { "type": "overloaded_error", "message": message } },
    );
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::render::public_ctx;
    use crate::render::tests::data_lines;
    use serde_json::{json, Value};

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
}
