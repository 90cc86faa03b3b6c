//! OpenAI Responses: numbered `response.*` events ending in `response.completed`, or one
//! `response` object.

use crate::json::{obj, J};
use crate::turn::{Part, Turn};

use super::{
    call_id, event_frame, pieces, reasoning_tokens, typed, Ctx, ARGUMENTS_PIECE_BYTES, CREATED,
    TEXT_PIECE_BYTES,
};

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
        Part::ToolCall { arguments, .. } => function_call_item(part, ctx, index, Some(arguments)),
    }
}

/// The `function_call` item of a tool call part: in progress without its arguments (as
/// `response.output_item.added` has it), or completed with them.
fn function_call_item(part: &Part, ctx: &Ctx<'_>, index: usize, arguments: Option<&str>) -> J {
    let Part::ToolCall {
        id,
        name,
        namespace,
        ..
    } = part
    else {
        return J::Null;
    };
    let mut item = obj! {
        "id": item_id("fc", ctx, index),
        "type": "function_call",
        "status": if arguments.is_some() { "completed" } else { "in_progress" },
        "arguments": arguments.unwrap_or(""),
        "call_id": call_id(id, "call_mock", ctx, index),
        "name": name,
    };
    if let Some(ns) = namespace {
        item.push("namespace", ns);
    }
    item
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

    /// Streams `text` into a content or summary part: the part added empty, the text in pieces,
    /// the text done, the part done. `kinds` names the part's and the text's events, `part`
    /// makes the part around a text, `at` adds the item's fields, and `with_text` what each delta
    /// and the done text carry beside the text.
    fn stream_text(
        &mut self,
        (part_kind, text_kind): (&str, &str),
        text: &str,
        part: fn(&str) -> J,
        at: impl Fn(J) -> J,
        with_text: impl Fn(J) -> J,
    ) {
        self.push(
            &format!("response.{part_kind}.added"),
            at(obj! { "part": part("") }),
        );
        for piece in pieces(text, TEXT_PIECE_BYTES) {
            self.push(
                &format!("response.{text_kind}.delta"),
                at(with_text(obj! { "delta": piece })),
            );
        }
        self.push(
            &format!("response.{text_kind}.done"),
            at(with_text(obj! { "text": text })),
        );
        self.push(
            &format!("response.{part_kind}.done"),
            at(obj! { "part": part(text) }),
        );
    }

    /// `response.created` and `response.in_progress`.
    fn start(&mut self, ctx: &Ctx<'_>) {
        let pending = response_object(ctx, "in_progress", Vec::new(), J::Null, J::Null);
        self.push("response.created", obj! { "response": &pending });
        self.push("response.in_progress", obj! { "response": pending });
    }
}

pub(super) fn responses_events(turn: &Turn, ctx: &Ctx<'_>) -> Vec<String> {
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
                let with_logprobs = |mut fields: J| {
                    fields.push("logprobs", J::Arr(Vec::new()));
                    fields
                };
                ev.stream_text(
                    ("content_part", "output_text"),
                    text,
                    output_text_part,
                    at,
                    with_logprobs,
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
                ev.stream_text(
                    ("reasoning_summary_part", "reasoning_summary_text"),
                    text,
                    summary_part,
                    at,
                    |fields| fields,
                );
            }
            Part::ToolCall { arguments, .. } => {
                let fc = item_id("fc", ctx, i);
                ev.push(
                    "response.output_item.added",
                    obj! { "output_index": i, "item": function_call_item(part, ctx, i, None) },
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

pub(super) fn responses_body(turn: &Turn, ctx: &Ctx<'_>) -> J {
    let output = turn
        .parts
        .iter()
        .enumerate()
        .map(|(i, part)| responses_done_item(part, ctx, i))
        .collect();
    response_object(ctx, "completed", output, responses_usage(turn), J::Null)
}

/// `response.created`, `response.in_progress`, then `response.failed` (code `server_error`).
pub(super) fn responses_in_stream_error(message: &str, ctx: &Ctx<'_>) -> Vec<String> {
    let mut ev = ResponsesEvents { out: Vec::new() };
    ev.start(ctx);
    let error = obj! { "code": "server_error", "message": message };
    let failed = response_object(ctx, "failed", Vec::new(), J::Null, error);
    ev.push("response.failed", obj! { "response": failed });
    ev.out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::render::tests::data_lines;
    use serde_json::json;

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
    fn a_namespaced_call_names_its_namespace_in_both_items() {
        let turn = Turn::new().with_namespaced_tool_call("c1", "mcp__srv", "route", json!({}));
        let payloads = data_lines(&responses_events(
            &turn,
            &Ctx {
                seq: 1,
                model: "gpt",
            },
        ));
        let items: Vec<&serde_json::Value> = payloads
            .iter()
            .filter(|p| {
                p["type"] == "response.output_item.added"
                    || p["type"] == "response.output_item.done"
            })
            .map(|p| &p["item"])
            .collect();
        assert_eq!(items.len(), 2);
        for item in items {
            assert_eq!(
                (&item["name"], &item["namespace"]),
                (&json!("route"), &json!("mcp__srv"))
            );
        }
        // A script file names it as `namespace`.
        let part: Part = serde_json::from_value(
            json!({"tool_call": {"id": "c1", "name": "route", "namespace": "mcp__srv"}}),
        )
        .unwrap();
        assert_eq!(part, turn.parts[0]);
    }
}
