//! OpenAI Chat Completions: a stream of `chat.completion.chunk`s ending in `[DONE]`, or one
//! `chat.completion` body.

use crate::json::{obj, J};
use crate::turn::{Part, Turn};

use super::{
    call_id, data_frame, pieces, reasoning_tokens, Ctx, ARGUMENTS_PIECE_BYTES, CREATED,
    TEXT_PIECE_BYTES,
};

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

pub(super) fn chat_events(turn: &Turn, ctx: &Ctx<'_>, include_usage: bool) -> Vec<String> {
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
                ..
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

pub(super) fn chat_body(turn: &Turn, ctx: &Ctx<'_>) -> J {
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
                ..
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

/// The role chunk, then a chunk `{"error":{…}}`, with no `[DONE]`.
pub(super) fn chat_in_stream_error(message: &str, ctx: &Ctx<'_>) -> Vec<String> {
    let chunks = ChatChunks {
        id: chat_id(ctx),
        ctx: *ctx,
        include_usage: false,
    };
    vec![chunks.role(), chat_error_chunk(message)]
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::render::tests::data_lines;
    use crate::render::{public_ctx, render_chat_sse};
    use serde_json::{json, Value};

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
}
