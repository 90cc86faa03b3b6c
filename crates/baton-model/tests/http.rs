#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The three HTTP providers against baton-testkit's mock server on 127.0.0.1, through
//! `run_turn`: real sockets, real SSE framing, faults.

use std::sync::Arc;
use std::time::Duration;

use baton_model::anthropic::Anthropic;
use baton_model::catalog::Profile;
use baton_model::error::ErrorKind;
use baton_model::openai_chat::OpenAiChat;
use baton_model::openai_responses::OpenAiResponses;
use baton_model::retry::{run_turn, RetryPolicy, TurnProgress};
use baton_model::{AssistantTurn, Connection, ModelError, ModelRequest, Provider};
use baton_protocol::config::ProviderKind;
use baton_protocol::{AssistantPart, Message, StopReason, ThinkingLevel, ToolSpec, Usage};
use baton_testkit::{Fault, MockServer, RecordedRequest, Turn};
use pretty_assertions::assert_eq;
use serde_json::json;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Chat,
    Responses,
    Anthropic,
}

const FORMATS: [Format; 3] = [Format::Chat, Format::Responses, Format::Anthropic];

fn provider(format: Format, server: &MockServer, idle: Duration) -> Arc<dyn Provider> {
    let connection = |base_url: String| Connection {
        name: "mock".into(),
        base_url,
        api_key: Some("test-key".to_string()),
        headers: vec![("x-extra".to_string(), "on".to_string())],
        stream_idle_timeout: idle,
    };
    match format {
        Format::Chat => Arc::new(OpenAiChat::new(
            connection(format!("{}/v1", server.url())),
            Profile::builtin(ProviderKind::OpenAi, "mock-model"),
        )),
        Format::Responses => Arc::new(OpenAiResponses::new(
            connection(format!("{}/v1/", server.url())),
            Profile::builtin(ProviderKind::OpenAiResponses, "mock-model"),
        )),
        Format::Anthropic => Arc::new(Anthropic::new(
            connection(server.url()),
            Profile::builtin(ProviderKind::Anthropic, "mock-model"),
        )),
    }
}

fn request(messages: Vec<Message>) -> ModelRequest {
    ModelRequest {
        model: "mock-model".into(),
        system: "You are a test.".into(),
        messages,
        tools: vec![
            ToolSpec {
                name: "read".into(),
                description: "Read a file".into(),
                parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            },
            ToolSpec {
                name: "bash".into(),
                description: "Run a command".into(),
                parameters: json!({"type": "object", "properties": {"command": {"type": "string"}}}),
            },
        ],
        thinking: Some(ThinkingLevel::Low),
        max_output_tokens: None,
        tools_disabled: false,
        cache_key: None,
    }
}

fn fast() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 4,
        initial_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(10),
    }
}

/// Progress as seen by a caller: events, and retries as `(attempt, delay, error)`.
#[derive(Debug, Default)]
struct Seen {
    events: usize,
    retries: Vec<(u32, Duration, ModelError)>,
}

async fn turn(
    provider: &dyn Provider,
    request: &ModelRequest,
    policy: &RetryPolicy,
) -> (Result<AssistantTurn, ModelError>, Seen) {
    let mut seen = Seen::default();
    let mut on = |p: TurnProgress<'_>| match p {
        TurnProgress::Event(_) => seen.events += 1,
        TurnProgress::Retrying {
            attempt,
            delay,
            error,
            ..
        } => seen.retries.push((attempt, delay, error.clone())),
    };
    let cancel = CancellationToken::new();
    let r = run_turn(provider, request, policy, &cancel, &mut on).await;
    (r, seen)
}

fn reasoning_text(turn: &AssistantTurn) -> String {
    turn.parts
        .iter()
        .filter_map(|p| match p {
            AssistantPart::Reasoning { text, .. } => Some(text.as_str()),
            AssistantPart::Text { .. } | AssistantPart::ToolCall { .. } => None,
        })
        .collect()
}

fn check_headers(format: Format, req: &RecordedRequest) {
    assert_eq!(req.header("x-extra"), Some("on"), "{format:?}");
    assert_eq!(
        req.header("accept"),
        Some("text/event-stream"),
        "{format:?}"
    );
    match format {
        Format::Chat | Format::Responses => {
            assert_eq!(req.header("authorization"), Some("Bearer test-key"));
            assert_eq!(req.header("x-api-key"), None);
        }
        Format::Anthropic => {
            assert_eq!(req.header("x-api-key"), Some("test-key"));
            assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
            assert_eq!(req.header("authorization"), None);
        }
    }
}

#[tokio::test]
async fn tool_call_turn_then_text_turn() {
    for format in FORMATS {
        let server = MockServer::builder()
            .turn(
                Turn::reasoning("Both files are needed.")
                    .with_text("Reading 🦀 two files — in parallel.")
                    .with_tool_call("call_1", "read", json!({"path": "src/é.rs"}))
                    .with_tool_call("call_2", "bash", json!({"command": "ls -la"}))
                    .usage(1200, 1000, 35),
            )
            .turn(Turn::text("All done ✓").usage(1300, 1200, 5))
            .start()
            .await;
        let p = provider(format, &server, Duration::from_secs(10));
        let mut messages = vec![Message::user("look at the files")];
        let (first, seen) = turn(p.as_ref(), &request(messages.clone()), &fast()).await;
        let first = first.unwrap_or_else(|e| panic!("{format:?}: {e}"));
        assert!(seen.retries.is_empty() && seen.events > 4, "{format:?}");
        assert_eq!(
            reasoning_text(&first),
            "Both files are needed.",
            "{format:?}"
        );
        assert_eq!(
            first.text(),
            "Reading 🦀 two files — in parallel.",
            "{format:?}"
        );
        assert_eq!(
            first.tool_calls().collect::<Vec<_>>(),
            vec![
                ("call_1", "read", r#"{"path":"src/é.rs"}"#),
                ("call_2", "bash", r#"{"command":"ls -la"}"#),
            ],
            "{format:?}"
        );
        assert_eq!(first.stop_reason, StopReason::ToolUse, "{format:?}");
        assert_eq!(
            first.usage,
            Usage {
                input_tokens: 1200,
                cached_input_tokens: 1000,
                output_tokens: 35,
                cache_write_tokens: 0
            },
            "{format:?}"
        );
        // Reasoning that can be replayed carries what the provider needs for it.
        let signed = first.parts.iter().any(|p| {
            matches!(
                p,
                AssistantPart::Reasoning {
                    signature: Some(_),
                    ..
                }
            )
        });
        assert_eq!(signed, format != Format::Chat, "{format:?}");

        messages.push(Message::Assistant {
            parts: first.parts.clone(),
        });
        for (id, output) in [("call_1", "fn main() {}"), ("call_2", "a.rs\nb.rs")] {
            messages.push(Message::Tool {
                call_id: id.into(),
                tool: "t".into(),
                output: output.into(),
                is_error: false,
            });
        }
        let (second, _) = turn(p.as_ref(), &request(messages), &fast()).await;
        let second = second.unwrap_or_else(|e| panic!("{format:?}: {e}"));
        assert_eq!(
            second,
            AssistantTurn {
                parts: vec![AssistantPart::Text {
                    text: "All done ✓".into()
                }],
                usage: Usage {
                    input_tokens: 1300,
                    cached_input_tokens: 1200,
                    output_tokens: 5,
                    cache_write_tokens: 0
                },
                stop_reason: StopReason::EndTurn,
            },
            "{format:?}"
        );

        let requests = server.model_requests();
        assert_eq!(requests.len(), 2, "{format:?}");
        for r in &requests {
            check_headers(format, r);
            assert_eq!(r.body["stream"], true);
            assert_eq!(r.model(), Some("mock-model"));
        }
        let results: Vec<(String, String)> = requests[1]
            .tool_results()
            .into_iter()
            .map(|t| (t.call_id, t.text))
            .collect();
        assert_eq!(
            results,
            [
                ("call_1".to_string(), "fn main() {}".to_string()),
                ("call_2".to_string(), "a.rs\nb.rs".to_string())
            ],
            "{format:?}"
        );
        server.assert_tool_results_answer_calls();
        // Signed reasoning goes back verbatim where the format has a place for it.
        let second_body = &requests[1].body;
        match format {
            Format::Chat => {
                assert_eq!(second_body["reasoning_effort"], "low");
                let assistant = &second_body["messages"][2];
                assert_eq!(assistant["role"], "assistant");
                assert_eq!(assistant["content"], "Reading 🦀 two files — in parallel.");
                assert_eq!(assistant["tool_calls"].as_array().unwrap().len(), 2);
            }
            Format::Responses => {
                assert_eq!(second_body["reasoning"], json!({"effort": "low"}));
                assert_eq!(
                    second_body["include"],
                    json!(["reasoning.encrypted_content"])
                );
                let item = &second_body["input"][1];
                assert_eq!(item["type"], "reasoning");
                // No item id under `store: false`: there is nothing stored to look it up by.
                assert_eq!(item.get("id"), None, "{item}");
                assert!(!item["encrypted_content"].as_str().unwrap().is_empty());
            }
            Format::Anthropic => {
                assert_eq!(
                    second_body["thinking"],
                    json!({"type": "enabled", "budget_tokens": 2048})
                );
                // A model the table does not know: 8192, room for the budget and the answer.
                assert_eq!(second_body["max_tokens"], 8192);
                let block = &second_body["messages"][1]["content"][0];
                assert_eq!(block["type"], "thinking");
                assert_eq!(block["thinking"], "Both files are needed.");
                assert!(!block["signature"].as_str().unwrap().is_empty());
            }
        }
        assert_eq!(server.remaining(), 0);
    }
}

#[tokio::test]
async fn rate_limit_with_retry_after_is_retried() {
    for format in FORMATS {
        let server = MockServer::builder()
            .fault(
                Fault::status(429)
                    .retry_after(1)
                    .message("Rate limit reached"),
            )
            .turn(Turn::text("ok"))
            .start()
            .await;
        let p = provider(format, &server, Duration::from_secs(10));
        let (r, seen) = turn(p.as_ref(), &request(vec![Message::user("hi")]), &fast()).await;
        assert_eq!(r.unwrap().text(), "ok", "{format:?}");
        assert_eq!(
            seen.retries,
            vec![(
                2,
                // retry-after: 1 is honoured up to max_delay.
                Duration::from_millis(10),
                ModelError::Http {
                    provider: "mock".into(),
                    model: "mock-model".into(),
                    status: 429,
                    message: "Rate limit reached".into(),
                    retry_after: Some(Duration::from_secs(1)),
                    kind: ErrorKind::RateLimited,
                }
            )],
            "{format:?}"
        );
        assert_eq!(server.model_requests().len(), 2);
    }
}

#[tokio::test]
async fn a_stream_dropped_mid_turn_is_retried_whole() {
    for format in FORMATS {
        let server = MockServer::builder()
            .fault(Fault::drop_after(
                Turn::text("this answer is cut short somewhere in the middle"),
                3,
            ))
            .turn(Turn::text("second try"))
            .start()
            .await;
        let p = provider(format, &server, Duration::from_secs(10));
        let (r, seen) = turn(p.as_ref(), &request(vec![Message::user("hi")]), &fast()).await;
        assert_eq!(r.unwrap().text(), "second try", "{format:?}");
        assert_eq!(seen.retries.len(), 1, "{format:?}");
        let (attempt, _, error) = &seen.retries[0];
        assert_eq!(*attempt, 2);
        assert!(
            matches!(error, ModelError::StreamCut { .. }),
            "{format:?}: {error:?}"
        );
    }
}

#[tokio::test]
async fn unauthorized_fails_at_once() {
    for format in FORMATS {
        let server = MockServer::builder()
            .fault(Fault::status(401).message("Incorrect API key provided"))
            .turn(Turn::text("unused"))
            .start()
            .await;
        let p = provider(format, &server, Duration::from_secs(10));
        let (r, seen) = turn(p.as_ref(), &request(vec![Message::user("hi")]), &fast()).await;
        let err = r.unwrap_err();
        assert_eq!(
            err,
            ModelError::Http {
                provider: "mock".into(),
                model: "mock-model".into(),
                status: 401,
                message: "Incorrect API key provided".into(),
                retry_after: None,
                kind: ErrorKind::Other,
            },
            "{format:?}"
        );
        assert!(err.to_string().contains("api_key_env"), "{err}");
        assert!(seen.retries.is_empty());
        assert_eq!(server.model_requests().len(), 1);
    }
}

/// llama-server's answer to a conversation longer than its context: the code says so, the
/// message gives both sizes and the fix, and the same request is not sent again.
#[tokio::test]
async fn a_context_that_is_too_small_is_reported_as_such_and_not_retried() {
    let server = MockServer::builder()
        .fault(Fault::status(400).body(json!({"error": {
            "code": 400,
            "message": "request (3999 tokens) exceeds the available context size (2048 tokens), try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": 3999,
            "n_ctx": 2048,
        }})))
        .turn(Turn::text("unused"))
        .start()
        .await;
    let p = provider(Format::Chat, &server, Duration::from_secs(10));
    let (r, seen) = turn(p.as_ref(), &request(vec![Message::user("hi")]), &fast()).await;
    let err = r.unwrap_err();
    assert_eq!(err.code(), Some(baton_protocol::ErrorCode::ContextTooLong));
    assert_eq!(
        err.kind(),
        ErrorKind::ContextTooLong {
            tokens: Some(3999),
            limit: Some(2048)
        }
    );
    let text = err.to_string();
    assert!(
        text.contains(
            "the conversation is 3999 tokens and the model's context on this server is 2048"
        ) && text.contains("`-c` for llama-server")
            && !text.contains("check the model name"),
        "{text}"
    );
    assert!(seen.retries.is_empty());
    assert_eq!(server.model_requests().len(), 1);
}

#[tokio::test]
async fn in_stream_errors_and_malformed_data() {
    let once = RetryPolicy {
        max_attempts: 1,
        ..fast()
    };
    for format in FORMATS {
        let server = MockServer::builder()
            .fault(Fault::in_stream_error("Overloaded"))
            .fault(Fault::malformed(Turn::text("x")))
            .start()
            .await;
        let p = provider(format, &server, Duration::from_secs(10));
        let req = request(vec![Message::user("hi")]);
        let (r, _) = turn(p.as_ref(), &req, &once).await;
        match r {
            Err(ModelError::Stream {
                retryable, message, ..
            }) => {
                assert!(retryable, "{format:?}");
                assert!(message.contains("Overloaded"), "{format:?}: {message}");
            }
            other => panic!("{format:?}: {other:?}"),
        }
        let (r, _) = turn(p.as_ref(), &req, &once).await;
        assert!(
            matches!(&r, Err(ModelError::Protocol { message, .. }) if message.contains("invalid JSON")),
            "{format:?}: {r:?}"
        );
    }
}

#[tokio::test]
async fn a_silent_stream_hits_the_idle_timeout() {
    let server = MockServer::builder()
        .turn(Turn::text("slow answer in several pieces").delay_ms_per_chunk(2000))
        .start()
        .await;
    let p = provider(Format::Chat, &server, Duration::from_millis(100));
    let once = RetryPolicy {
        max_attempts: 1,
        ..fast()
    };
    let (r, _) = turn(p.as_ref(), &request(vec![Message::user("hi")]), &once).await;
    assert!(
        matches!(&r, Err(ModelError::StreamCut { message, .. }) if message.contains("stream_idle_timeout")),
        "{r:?}"
    );
}

#[tokio::test]
async fn nothing_listening_is_a_connect_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let p = OpenAiChat::new(
        Connection {
            name: "local".into(),
            base_url: format!("http://127.0.0.1:{port}/v1"),
            api_key: None,
            headers: vec![],
            stream_idle_timeout: Duration::from_secs(5),
        },
        Profile::builtin(ProviderKind::OpenAi, "m"),
    );
    let err = match p.stream(&request(vec![Message::user("hi")])).await {
        Err(e) => e,
        Ok(_) => panic!("connected to a closed port"),
    };
    assert!(
        matches!(&err, ModelError::Connect { provider, url, .. } if provider == "local" && url.ends_with("/v1/chat/completions")),
        "{err:?}"
    );
    assert!(err.is_retryable());
}
