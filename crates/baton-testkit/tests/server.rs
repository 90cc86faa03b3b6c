#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The mock server, driven over real HTTP on 127.0.0.1.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use baton_testkit::{
    render_anthropic_sse, render_chat_sse, render_in_stream_error_sse, render_malformed_sse,
    render_responses_sse, render_sse_events, Fault, MockServer, Step, Turn, WireFormat,
};
use futures::StreamExt;
use serde_json::{json, Value};

/// `(event name, data)` of every SSE event in `body`.
fn sse(body: &str) -> Vec<(Option<String>, String)> {
    body.split("\n\n")
        .filter(|block| !block.is_empty())
        .map(|block| {
            let mut event = None;
            let mut data = String::new();
            for line in block.lines() {
                if let Some(name) = line.strip_prefix("event: ") {
                    event = Some(name.to_string());
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data.push_str(d);
                } else {
                    panic!("unexpected SSE line {line:?}");
                }
            }
            (event, data)
        })
        .collect()
}

fn json_data(events: &[(Option<String>, String)]) -> Vec<Value> {
    events
        .iter()
        .filter(|(_, d)| d != "[DONE]")
        .map(|(_, d)| serde_json::from_str(d).unwrap())
        .collect()
}

async fn post(server: &MockServer, path: &str, body: Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{}{path}", server.url()))
        .header("authorization", "Bearer test-key")
        .json(&body)
        .send()
        .await
        .unwrap()
}

fn content_type(response: &reqwest::Response) -> String {
    response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn chat_streams_a_tool_call_turn() {
    let turn = Turn::reasoning("need the file").with_tool_call(
        "call_1",
        "read",
        json!({"path": "src/lib.rs", "offset": 10, "limit": 200}),
    );
    let server = MockServer::builder().turn(turn.clone()).start().await;
    let response = post(
        &server,
        "/v1/chat/completions",
        json!({"model": "qwen", "stream": true, "messages": [{"role": "user", "content": "go"}]}),
    )
    .await;
    assert_eq!(response.status(), 200);
    assert_eq!(content_type(&response), "text/event-stream; charset=utf-8");
    let body = response.text().await.unwrap();
    assert_eq!(body.as_bytes(), render_chat_sse(&turn, "qwen", false));

    let events = sse(&body);
    assert!(events.iter().all(|(name, _)| name.is_none()));
    assert_eq!(events.last().unwrap().1, "[DONE]");
    let chunks = json_data(&events);
    assert_eq!(chunks[0]["object"], "chat.completion.chunk");
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let mut arguments = String::new();
    let mut headers = Vec::new();
    for chunk in &chunks {
        assert_eq!(chunk["id"], chunks[0]["id"]);
        assert_eq!(chunk["model"], "qwen");
        if let Some(call) = chunk["choices"][0]["delta"]["tool_calls"].get(0) {
            if call.get("id").is_some() {
                headers.push(call.clone());
            }
            arguments.push_str(call["function"]["arguments"].as_str().unwrap());
        }
    }
    assert_eq!(
        headers,
        vec![
            json!({"index": 0, "id": "call_1", "type": "function", "function": {"name": "read", "arguments": ""}})
        ]
    );
    assert_eq!(
        serde_json::from_str::<Value>(&arguments).unwrap(),
        json!({"path": "src/lib.rs", "offset": 10, "limit": 200})
    );
    assert_eq!(
        chunks.last().unwrap()["choices"][0]["finish_reason"],
        "tool_calls"
    );
}

#[tokio::test]
async fn chat_text_turn_with_include_usage() {
    let turn = Turn::text("All tests pass.").usage(1500, 1024, 12);
    let server = MockServer::builder().turn(turn.clone()).start().await;
    let body = post(
        &server,
        "/chat/completions",
        json!({"model": "m", "stream": true, "stream_options": {"include_usage": true}, "messages": []}),
    )
    .await
    .text()
    .await
    .unwrap();
    assert_eq!(body.as_bytes(), render_chat_sse(&turn, "m", true));
    let chunks = json_data(&sse(&body));
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "All tests pass.");
    let (last, rest) = chunks.split_last().unwrap();
    assert!(rest.iter().all(|c| c["usage"].is_null()));
    assert_eq!(rest.last().unwrap()["choices"][0]["finish_reason"], "stop");
    assert_eq!(last["choices"], json!([]));
    assert_eq!(
        last["usage"],
        json!({
            "prompt_tokens": 1500,
            "completion_tokens": 12,
            "total_tokens": 1512,
            "prompt_tokens_details": {"cached_tokens": 1024},
            "completion_tokens_details": {"reasoning_tokens": 0}
        })
    );
}

#[tokio::test]
async fn responses_streams_tool_call_then_text() {
    let call = Turn::tool_call("call_7", "bash", json!({"command": "cargo test"}));
    let answer = Turn::reasoning("tests passed").with_text("Done: tests pass.");
    let server = MockServer::builder()
        .turn(call.clone())
        .turn(answer.clone())
        .start()
        .await;

    let body = post(
        &server,
        "/v1/responses",
        json!({"model": "gpt-5.5", "stream": true, "input": []}),
    )
    .await
    .text()
    .await
    .unwrap();
    assert_eq!(body.as_bytes(), render_responses_sse(&call, "gpt-5.5"));
    let events = sse(&body);
    let payloads = json_data(&events);
    for (n, ((name, _), payload)) in events.iter().zip(&payloads).enumerate() {
        assert_eq!(Some(payload["type"].as_str().unwrap()), name.as_deref());
        assert_eq!(payload["sequence_number"], n);
    }
    let added = payloads
        .iter()
        .find(|p| p["type"] == "response.output_item.added")
        .unwrap();
    assert_eq!(
        added["item"],
        json!({"id": "fc_mock1_0", "type": "function_call", "status": "in_progress", "arguments": "", "call_id": "call_7", "name": "bash"})
    );
    let deltas: Vec<&str> = payloads
        .iter()
        .filter(|p| p["type"] == "response.function_call_arguments.delta")
        .map(|p| p["delta"].as_str().unwrap())
        .collect();
    assert!(deltas.len() > 1);
    assert_eq!(deltas.concat(), r#"{"command":"cargo test"}"#);
    let completed = payloads.last().unwrap();
    assert_eq!(completed["type"], "response.completed");
    assert_eq!(completed["response"]["status"], "completed");
    assert_eq!(
        completed["response"]["output"][0]["arguments"],
        r#"{"command":"cargo test"}"#
    );
    assert_eq!(completed["response"]["usage"]["total_tokens"], 120);

    // The second request gets the second turn, with ids of its own.
    let body = post(
        &server,
        "/v1/responses",
        json!({"model": "gpt-5.5", "stream": true, "input": [{"type": "function_call_output", "call_id": "call_7", "output": "ok"}]}),
    )
    .await
    .text()
    .await
    .unwrap();
    let payloads = json_data(&sse(&body));
    let text: String = payloads
        .iter()
        .filter(|p| p["type"] == "response.output_text.delta")
        .map(|p| p["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Done: tests pass.");
    let summary: String = payloads
        .iter()
        .filter(|p| p["type"] == "response.reasoning_summary_text.delta")
        .map(|p| p["delta"].as_str().unwrap())
        .collect();
    assert_eq!(summary, "tests passed");
    let completed = &payloads.last().unwrap()["response"];
    assert_eq!(completed["id"], "resp_mock2");
    assert_eq!(completed["output"][0]["type"], "reasoning");
    assert_eq!(
        completed["output"][0]["summary"],
        json!([{"type": "summary_text", "text": "tests passed"}])
    );
    assert_eq!(
        completed["output"][1]["content"],
        json!([{"type": "output_text", "annotations": [], "logprobs": [], "text": "Done: tests pass."}])
    );
    assert_eq!(
        server.requests()[1].body["input"][0]["type"],
        "function_call_output"
    );
    assert_eq!(server.remaining(), 0);
}

#[tokio::test]
async fn anthropic_streams_thinking_text_and_tool_use() {
    let turn = Turn::reasoning("look first")
        .with_text("Reading it.")
        .with_tool_call("toolu_01", "read", json!({"path": "a.txt"}))
        .usage(300, 200, 25);
    let server = MockServer::builder().turn(turn.clone()).start().await;
    let response = post(
        &server,
        "/v1/messages?beta=true",
        json!({"model": "claude-x", "stream": true, "max_tokens": 100, "messages": []}),
    )
    .await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["request-id"], "req_mock1");
    let body = response.text().await.unwrap();
    assert_eq!(body.as_bytes(), render_anthropic_sse(&turn, "claude-x"));
    let events = sse(&body);
    let payloads = json_data(&events);
    for ((name, _), payload) in events.iter().zip(&payloads) {
        assert_eq!(Some(payload["type"].as_str().unwrap()), name.as_deref());
    }
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_deref().unwrap()).collect();
    assert_eq!(
        &names[..3],
        &["message_start", "ping", "content_block_start"]
    );
    assert_eq!(
        &names[names.len() - 3..],
        &["content_block_stop", "message_delta", "message_stop"]
    );
    assert_eq!(
        payloads[0]["message"],
        json!({
            "id": "msg_mock1", "type": "message", "role": "assistant", "model": "claude-x",
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 100, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 200, "output_tokens": 1}
        })
    );
    let starts: Vec<&Value> = payloads
        .iter()
        .filter(|p| p["type"] == "content_block_start")
        .map(|p| &p["content_block"])
        .collect();
    assert_eq!(
        starts,
        vec![
            &json!({"type": "thinking", "thinking": "", "signature": ""}),
            &json!({"type": "text", "text": ""}),
            &json!({"type": "tool_use", "id": "toolu_01", "name": "read", "input": {}}),
        ]
    );
    let delta_of = |kind: &str, field: &str| -> String {
        payloads
            .iter()
            .filter(|p| p["type"] == "content_block_delta" && p["delta"]["type"] == kind)
            .map(|p| p["delta"][field].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(delta_of("thinking_delta", "thinking"), "look first");
    assert_eq!(delta_of("text_delta", "text"), "Reading it.");
    assert_eq!(
        delta_of("signature_delta", "signature"),
        "mock-signature-1-0"
    );
    assert_eq!(
        serde_json::from_str::<Value>(&delta_of("input_json_delta", "partial_json")).unwrap(),
        json!({"path": "a.txt"})
    );
    assert_eq!(
        payloads[payloads.len() - 2],
        json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 25}})
    );
    assert_eq!(server.requests()[0].path, "/v1/messages?beta=true");
}

#[tokio::test]
async fn status_fault_has_retry_after_and_format_error_body() {
    let server = MockServer::builder()
        .fault(
            Fault::status(429)
                .retry_after(1)
                .message("Rate limit reached"),
        )
        .fault(Fault::status(429).retry_after(7))
        .fault(Fault::status(529).message("Overloaded"))
        .start()
        .await;

    let response = post(&server, "/v1/chat/completions", json!({"stream": true})).await;
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "1");
    assert_eq!(content_type(&response), "application/json");
    assert_eq!(
        response.json::<Value>().await.unwrap(),
        json!({"error": {"message": "Rate limit reached", "type": "requests", "param": null, "code": "rate_limit_exceeded"}})
    );

    let response = post(&server, "/v1/messages", json!({"stream": true})).await;
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "7");
    let body = response.json::<Value>().await.unwrap();
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "rate_limit_error");

    let response = post(&server, "/v1/messages", json!({"stream": true})).await;
    assert_eq!(response.status().as_u16(), 529);
    assert!(response.headers().get("retry-after").is_none());
    assert_eq!(
        response.json::<Value>().await.unwrap(),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    );
}

/// A status fault with its own body sends that body as it is, in any format: the error answer
/// of a particular server, byte for byte.
#[tokio::test]
async fn status_fault_with_a_body_of_its_own() {
    let llama = json!({"error": {"code": 400, "message": "request (3999 tokens) exceeds the available context size (2048 tokens)", "type": "exceed_context_size_error", "n_prompt_tokens": 3999, "n_ctx": 2048}});
    let server = MockServer::builder()
        .fault(Fault::status(400).body(llama.clone()))
        .fault(Fault::status(503).retry_after(2).body("upstream busy"))
        .start()
        .await;
    let response = post(&server, "/v1/chat/completions", json!({"stream": true})).await;
    assert_eq!(response.status(), 400);
    assert_eq!(response.json::<Value>().await.unwrap(), llama);
    let response = post(&server, "/v1/messages", json!({"stream": true})).await;
    assert_eq!(response.status(), 503);
    assert_eq!(response.headers()["retry-after"], "2");
    assert_eq!(response.text().await.unwrap(), "upstream busy");
    // Scripts say the same with `body`.
    let step: Step = serde_json::from_value(
        json!({"fault": "status", "status": 429, "body": {"error": {"type": "usage_limit_reached"}}}),
    )
    .unwrap();
    assert_eq!(
        step,
        Step::Fault(Fault::status(429).body(json!({"error": {"type": "usage_limit_reached"}})))
    );
}

/// Reads a streamed body to its end; returns the bytes and whether it ended in an error.
async fn read_until_end(response: reqwest::Response) -> (Vec<u8>, bool) {
    let mut stream = response.bytes_stream();
    let mut bytes = Vec::new();
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(chunk) => bytes.extend_from_slice(&chunk),
            Err(_) => return (bytes, true),
        }
    }
    (bytes, false)
}

#[tokio::test]
async fn drop_mid_stream_cuts_the_body_in_every_format() {
    let turn = Turn::text("a fairly long answer that will never be finished").with_tool_call(
        "call_1",
        "write",
        json!({"path": "x", "content": "y"}),
    );
    for (format, path) in [
        (WireFormat::Chat, "/v1/chat/completions"),
        (WireFormat::Responses, "/v1/responses"),
        (WireFormat::Anthropic, "/v1/messages"),
    ] {
        let server = MockServer::builder()
            .fault(Fault::drop_after(turn.clone(), 3))
            .start()
            .await;
        let response = post(&server, path, json!({"model": "m", "stream": true})).await;
        assert_eq!(response.status(), 200, "{format:?}");
        let (bytes, failed) = read_until_end(response).await;
        assert!(failed, "{format:?}: the body should end with an error");
        let expected = render_sse_events(format, &turn, "m", false)[..3].concat();
        assert_eq!(String::from_utf8(bytes).unwrap(), expected, "{format:?}");
    }
}

#[tokio::test]
async fn drop_after_zero_events_sends_headers_only() {
    let server = MockServer::builder()
        .fault(Fault::drop_after(Turn::text("x"), 0))
        .turn(Turn::text("second try works"))
        .start()
        .await;
    let response = post(&server, "/v1/messages", json!({"stream": true})).await;
    let (bytes, failed) = read_until_end(response).await;
    assert!(failed);
    assert!(bytes.is_empty());
    // The client can go on with a fresh connection.
    let body = post(&server, "/v1/messages", json!({"stream": true}))
        .await
        .text()
        .await
        .unwrap();
    assert!(body.ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));
}

#[tokio::test]
async fn malformed_sse_and_in_stream_errors() {
    for (format, path) in [
        (WireFormat::Chat, "/v1/chat/completions"),
        (WireFormat::Responses, "/v1/responses"),
        (WireFormat::Anthropic, "/v1/messages"),
    ] {
        let turn = Turn::text("partial");
        let server = MockServer::builder()
            .fault(Fault::malformed(turn.clone()))
            .fault(Fault::in_stream_error("Overloaded"))
            .start()
            .await;
        let response = post(&server, path, json!({"model": "m", "stream": true})).await;
        assert_eq!(response.status(), 200);
        let body = response.text().await.unwrap();
        assert_eq!(body.as_bytes(), render_malformed_sse(format, &turn, "m"));
        assert!(body.ends_with("data: {not json\n\n"), "{format:?}: {body}");

        let response = post(&server, path, json!({"model": "m", "stream": true})).await;
        assert_eq!(response.status(), 200);
        let body = response.text().await.unwrap();
        let events = sse(&body);
        let last: Value = serde_json::from_str(&events.last().unwrap().1).unwrap();
        match format {
            WireFormat::Chat => {
                assert_eq!(events.last().unwrap().0, None);
                assert_eq!(
                    last,
                    json!({"error": {"message": "Overloaded", "type": "server_error", "param": null, "code": null}})
                );
                assert!(!body.contains("[DONE]"));
            }
            WireFormat::Responses => {
                assert_eq!(events.last().unwrap().0.as_deref(), Some("response.failed"));
                assert_eq!(last["response"]["status"], "failed");
                assert_eq!(
                    last["response"]["error"],
                    json!({"code": "server_error", "message": "Overloaded"})
                );
            }
            WireFormat::Anthropic => {
                assert_eq!(events.last().unwrap().0.as_deref(), Some("error"));
                assert_eq!(
                    last,
                    json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
                );
            }
        }
        // The public render function gives the same bytes (ids aside: this was request 2).
        let rendered =
            String::from_utf8(render_in_stream_error_sse(format, "Overloaded", "m")).unwrap();
        assert_eq!(sse(&rendered).len(), events.len());
    }
}

#[tokio::test]
async fn queue_order_and_rules() {
    let server = MockServer::builder()
        .turn(Turn::text("first"))
        .turn(Turn::text("second"))
        .when(|req| req.body["model"] == "judge", Turn::text("PASS"))
        .when_once(|req| req.path_only() == "/v1/messages", Fault::status(503))
        .start()
        .await;
    let text = |body: &str| -> String {
        json_data(&sse(body))
            .iter()
            .filter_map(|c| {
                c["choices"][0]["delta"]["content"]
                    .as_str()
                    .map(str::to_string)
            })
            .collect()
    };
    let ask = |model: &'static str| {
        let server = &server;
        async move {
            post(
                server,
                "/v1/chat/completions",
                json!({"model": model, "stream": true}),
            )
            .await
            .text()
            .await
            .unwrap()
        }
    };
    assert_eq!(text(&ask("judge").await), "PASS");
    assert_eq!(text(&ask("worker").await), "first");
    assert_eq!(text(&ask("judge").await), "PASS");
    assert_eq!(server.remaining(), 1);
    assert_eq!(
        server.remaining_steps(),
        vec![Step::Turn(Turn::text("second"))]
    );

    // The once-rule answers the first Anthropic request only; the next takes the queue.
    let response = post(&server, "/v1/messages", json!({"stream": true})).await;
    assert_eq!(response.status(), 503);
    let response = post(&server, "/v1/messages", json!({"stream": true})).await;
    assert_eq!(response.status(), 200);
    let body = response.text().await.unwrap();
    assert!(body.contains(r#""text":"second""#), "{body}");
    assert_eq!(server.remaining(), 0);

    // Steps can be added while the server runs.
    server.push(Turn::text("third"));
    assert_eq!(text(&ask("worker").await), "third");
}

#[tokio::test]
async fn requests_are_recorded_with_bodies_and_headers() {
    let server = MockServer::builder().turn(Turn::text("ok")).start().await;
    let body =
        json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "hello"}]});
    post(&server, "/v1/chat/completions", body.clone())
        .await
        .text()
        .await
        .unwrap();
    let client = reqwest::Client::new();
    let models = client
        .get(format!("{}/v1/models", server.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(models.status(), 200);
    assert_eq!(
        models.json::<Value>().await.unwrap(),
        json!({"object": "list", "data": [{"id": "gpt-5.5", "object": "model", "created": 1700000000, "owned_by": "baton-testkit"}]})
    );
    let missing = client
        .get(format!("{}/v1/nothing", server.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    let missing: Value = missing.json().await.unwrap();
    assert_eq!(missing["error"]["code"], "not_found");
    client
        .post(format!("{}/v1/messages", server.url()))
        .body("not json")
        .send()
        .await
        .unwrap();

    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(requests[0].method, "POST");
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(requests[0].body, body);
    assert_eq!(requests[0].header("Authorization"), Some("Bearer test-key"));
    assert_eq!(requests[0].wire_format(), Some(WireFormat::Chat));
    assert_eq!(requests[1].method, "GET");
    assert_eq!(requests[1].path, "/v1/models");
    assert_eq!(requests[1].body, Value::Null);
    assert_eq!(requests[1].wire_format(), None);
    assert_eq!(requests[3].body, json!("not json"));
    assert_eq!(server.model_requests().len(), 2);
}

#[tokio::test]
async fn exhausted_script_answers_500_and_records() {
    let server = MockServer::builder()
        .turn(Turn::text("only one"))
        .start()
        .await;
    post(&server, "/v1/responses", json!({"stream": true}))
        .await
        .text()
        .await
        .unwrap();
    let response = post(
        &server,
        "/v1/responses",
        json!({"stream": true, "input": "again"}),
    )
    .await;
    assert_eq!(response.status(), 500);
    let body: Value = response.json().await.unwrap();
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("ran out of steps"), "{message}");
    assert!(message.contains("request #2"), "{message}");
    let response = post(&server, "/v1/messages", json!({})).await;
    assert_eq!(response.status(), 500);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "api_error");
    assert_eq!(server.requests().len(), 3);
    assert_eq!(server.requests()[1].body["input"], "again");
}

#[tokio::test]
async fn a_server_told_not_to_keep_requests_still_numbers_and_hooks_them() {
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let hooked = std::sync::Arc::clone(&seen);
    let server = MockServer::builder()
        .turn(Turn::text("only one"))
        .keep_requests(false)
        .on_request(move |_| {
            hooked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        })
        .start()
        .await;
    let first = post(&server, "/v1/responses", json!({"stream": true}))
        .await
        .text()
        .await
        .unwrap();
    assert!(first.contains("only one"), "{first}");
    let response = post(&server, "/v1/responses", json!({"stream": true})).await;
    assert_eq!(response.status(), 500);
    let body: Value = response.json().await.unwrap();
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("request #2"), "{message}");
    assert!(server.requests().is_empty());
    assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 2);
}

#[tokio::test]
async fn looping_replays_the_queue() {
    let server = MockServer::builder()
        .turn(Turn::text("a"))
        .turn(Turn::text("b"))
        .looping(true)
        .start()
        .await;
    let mut answers = Vec::new();
    for _ in 0..5 {
        let body: Value = post(&server, "/v1/messages", json!({}))
            .await
            .json()
            .await
            .unwrap();
        answers.push(body["content"][0]["text"].as_str().unwrap().to_string());
    }
    assert_eq!(answers, vec!["a", "b", "a", "b", "a"]);
}

#[tokio::test]
async fn non_streaming_requests_get_json() {
    let turn = Turn::text("hi").with_tool_call("call_1", "ls", json!({"path": "."}));
    let server = MockServer::builder()
        .turn(turn.clone())
        .turn(turn.clone())
        .turn(turn)
        .start()
        .await;
    let chat: Value = post(&server, "/v1/chat/completions", json!({"model": "m"}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(chat["object"], "chat.completion");
    assert_eq!(chat["choices"][0]["message"]["content"], "hi");
    assert_eq!(chat["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(chat["usage"]["total_tokens"], 120);
    let responses: Value = post(&server, "/v1/responses", json!({"model": "m"}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(responses["object"], "response");
    assert_eq!(responses["output"][1]["name"], "ls");
    let anthropic: Value = post(&server, "/v1/messages", json!({"model": "m"}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(anthropic["stop_reason"], "tool_use");
    assert_eq!(anthropic["content"][1]["input"], json!({"path": "."}));
}

#[tokio::test]
async fn delay_slows_the_stream() {
    let turn = Turn::text("0123456789abcdefghijklmnop").delay_ms_per_chunk(20);
    let events = render_sse_events(WireFormat::Anthropic, &turn, "m", false).len();
    let server = MockServer::builder().turn(turn).start().await;
    let started = Instant::now();
    post(&server, "/v1/messages", json!({"stream": true}))
        .await
        .text()
        .await
        .unwrap();
    let least = Duration::from_millis(20 * (events as u64 - 1));
    // Time is the subject: the mock paces its events, at least this far apart.
    assert!(
        started.elapsed() >= least,
        "{:?} < {least:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn dropping_the_server_stops_it() {
    let server = MockServer::builder().turn(Turn::text("x")).start().await;
    let url = server.url();
    drop(server);
    // Abort is processed by the runtime; wait for the listener to go away.
    let mut refused = false;
    for _ in 0..200 {
        if reqwest::Client::new()
            .get(format!("{url}/v1/models"))
            .send()
            .await
            .is_err()
        {
            refused = true;
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(refused);
}

#[test]
fn start_blocking_serves_synchronous_tests() {
    let server = MockServer::builder()
        .turn(Turn::text("sync"))
        .start_blocking();
    let body = r#"{"model":"m","max_tokens":5,"messages":[]}"#;
    let mut stream = std::net::TcpStream::connect(server.addr()).unwrap();
    write!(
        stream,
        "POST /v1/messages HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains(r#""text":"sync""#), "{response}");
    assert_eq!(server.requests()[0].body["max_tokens"], 5);
}
