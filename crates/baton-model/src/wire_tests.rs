//! Streams in the shapes real servers send (OpenAI, Anthropic, DeepSeek, Gemini's compatible
//! endpoint, OpenRouter, vLLM, llama.cpp, Ollama; `tests/fixtures/wire/`), each decoded under
//! every chunking and followed by the whole next request baton sends after running the turn's
//! tools. The shapes come from the providers' API references and public recordings; the
//! assertions cover what each server needs back (reasoning fields, signatures, call ids).

use baton_protocol::config::{OutputTokensField, ProviderKind};
use baton_protocol::{AssistantPart, Message, StopReason, ThinkingLevel, Usage};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

use crate::anthropic::AnthropicParser;
use crate::catalog::Profile;
use crate::http::Ctx;
use crate::openai_chat::ChatParser;
use crate::openai_responses::ResponsesParser;
use crate::sse::testing::{self, same_for_every_split};
use crate::types::{AssistantTurn, ModelRequest};
use crate::{anthropic, openai_chat, openai_responses};

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/wire/{name}.sse",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Decodes a fixture with the parser of `kind`, the same under every chunking.
fn decode(kind: ProviderKind, name: &str) -> AssistantTurn {
    let make = |body: testing::EventStreamBody| {
        let ctx = Ctx::new("p", "m");
        match kind {
            ProviderKind::OpenAi => testing::decode(ChatParser::new, ctx, body),
            ProviderKind::OpenAiResponses => testing::decode(ResponsesParser::new, ctx, body),
            ProviderKind::Anthropic => testing::decode(AnthropicParser::new, ctx, body),
            ProviderKind::Replay => unreachable!(),
        }
    };
    let (_, turn) = same_for_every_split(fixture(name).as_bytes(), &make);
    turn.unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The request after `turn`: the task, the turn, and a result for each of its tool calls.
fn next_request(
    model: &str,
    turn: &AssistantTurn,
    thinking: Option<ThinkingLevel>,
) -> ModelRequest {
    let mut messages = vec![
        Message::user("task"),
        Message::Assistant {
            parts: turn.parts.clone(),
        },
    ];
    for (id, name, _) in turn.tool_calls() {
        messages.push(Message::Tool {
            call_id: id.to_string(),
            tool: name.to_string(),
            output: format!("output of {name}"),
            is_error: false,
        });
    }
    ModelRequest {
        model: model.to_string(),
        system: String::new(),
        messages,
        tools: vec![],
        thinking,
        max_output_tokens: None,
        tools_disabled: false,
        cache_key: Some("s-1".into()),
    }
}

fn body(kind: ProviderKind, request: &ModelRequest, profile: &Profile) -> Value {
    match kind {
        ProviderKind::OpenAi => openai_chat::request_body(request, profile),
        ProviderKind::OpenAiResponses => openai_responses::request_body(request, profile),
        ProviderKind::Anthropic => anthropic::request_body(request, profile),
        ProviderKind::Replay => unreachable!(),
    }
}

/// A Chat Completions profile for a compatible server (not OpenAI's own API).
fn compatible(model: &str) -> Profile {
    let mut p = Profile::builtin(ProviderKind::OpenAi, model);
    p.info.output_tokens_field = Some(OutputTokensField::MaxTokens);
    p
}

fn usage(input: u64, cached: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        cached_input_tokens: cached,
        output_tokens: output,
        cache_write_tokens: 0,
    }
}

fn chat_body(model: &str, messages: Value) -> Value {
    json!({
        "model": model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    })
}

#[test]
fn openai_chat_tool_call_then_result() {
    let turn = decode(ProviderKind::OpenAi, "openai_chat");
    assert_eq!(turn.usage, usage(210, 0, 17));
    assert_eq!(turn.stop_reason, StopReason::ToolUse);
    let mut profile = Profile::builtin(ProviderKind::OpenAi, "gpt-4.1");
    profile.info.output_tokens_field = Some(OutputTokensField::MaxCompletionTokens);
    profile.options.max_output_tokens = Some(2048);
    profile.options.temperature = Some(0.2);
    // gpt-4.1 does not reason: the level sends nothing.
    let request = next_request("gpt-4.1", &turn, Some(ThinkingLevel::High));
    let mut expected = chat_body(
        "gpt-4.1",
        json!([
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_PbA2Zo1", "type": "function",
                 "function": {"name": "grep", "arguments": "{\"pattern\":\"TODO\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_PbA2Zo1", "content": "output of grep"},
        ]),
    );
    expected["max_completion_tokens"] = json!(2048);
    expected["temperature"] = json!(0.2);
    assert_eq!(body(ProviderKind::OpenAi, &request, &profile), expected);
}

/// DeepSeek thinks by default and answers 400 when the reasoning of a tool-call turn is not
/// sent back as `reasoning_content`.
#[test]
fn deepseek_reasoning_content_goes_back_after_a_tool_call() {
    let turn = decode(ProviderKind::OpenAi, "deepseek");
    assert_eq!(turn.usage, usage(312, 256, 41));
    let request = next_request("deepseek-reasoner", &turn, None);
    let expected = chat_body(
        "deepseek-reasoner",
        json!([
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": null,
             "reasoning_content": "The user wants the files listed; I should call ls.",
             "tool_calls": [
                {"id": "call_00_uCgGkmVRu5UejWyEZV2bEF6x", "type": "function",
                 "function": {"name": "ls", "arguments": "{\"path\": \".\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_00_uCgGkmVRu5UejWyEZV2bEF6x", "content": "output of ls"},
        ]),
    );
    let profile = compatible("deepseek-reasoner");
    assert_eq!(body(ProviderKind::OpenAi, &request, &profile), expected);
    // A later user message starts a new exchange: earlier reasoning is not sent again.
    let mut later = request.clone();
    later.messages.push(Message::user("and now?"));
    let b = body(ProviderKind::OpenAi, &later, &profile);
    assert_eq!(b["messages"][1].get("reasoning_content"), None);
}

/// Gemini 3 answers 400 "Function call is missing a thought_signature" unless each call's
/// `extra_content` comes back on the same call.
#[test]
fn gemini_thought_signatures_stay_on_their_calls() {
    let turn = decode(ProviderKind::OpenAi, "gemini");
    assert_eq!(turn.usage, usage(120, 0, 38));
    let request = next_request("gemini-3-pro-preview", &turn, Some(ThinkingLevel::High));
    let mut expected = chat_body(
        "gemini-3-pro-preview",
        json!([
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": "I'll read both files.", "tool_calls": [
                {"id": "function-call-9421187001352233013", "type": "function",
                 "function": {"name": "read", "arguments": "{\"path\":\"a.rs\"}"},
                 "extra_content": {"google": {"thought_signature": "CiQB0e2Kb8zT1kq0y0Kc9pXv2o6g3bB1m7GmEw=="}}},
                {"id": "function-call-9421187001352233014", "type": "function",
                 "function": {"name": "read", "arguments": "{\"path\":\"b.rs\"}"}},
            ]},
            {"role": "tool", "tool_call_id": "function-call-9421187001352233013", "content": "output of read"},
            {"role": "tool", "tool_call_id": "function-call-9421187001352233014", "content": "output of read"},
        ]),
    );
    expected["reasoning_effort"] = json!("high");
    let profile = compatible("gemini-3-pro-preview");
    assert_eq!(body(ProviderKind::OpenAi, &request, &profile), expected);
}

/// OpenRouter streams `reasoning_details` in pieces (text, then the signature); they merge by
/// index and go back whole.
#[test]
fn openrouter_reasoning_details_round_trip() {
    let turn = decode(ProviderKind::OpenAi, "openrouter");
    assert_eq!(turn.usage, usage(1520, 0, 64));
    let request = next_request(
        "anthropic/claude-sonnet-4.5",
        &turn,
        Some(ThinkingLevel::Medium),
    );
    let mut expected = chat_body(
        "anthropic/claude-sonnet-4.5",
        json!([
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": null,
             "reasoning_details": [{
                "type": "reasoning.text", "text": "Need the test output.",
                "signature": "ErUBCkYIBRgCIkBf2x", "format": "anthropic-claude-v1", "index": 0
             }],
             "tool_calls": [
                {"id": "toolu_01Lx8QH", "type": "function",
                 "function": {"name": "bash", "arguments": "{\"command\": \"cargo test\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "toolu_01Lx8QH", "content": "output of bash"},
        ]),
    );
    expected["reasoning_effort"] = json!("medium");
    let profile = compatible("anthropic/claude-sonnet-4.5");
    assert_eq!(body(ProviderKind::OpenAi, &request, &profile), expected);
}

#[test]
fn vllm_reasoning_content_and_a_call_without_arguments_at_first() {
    let turn = decode(ProviderKind::OpenAi, "vllm");
    assert_eq!(turn.usage, usage(402, 0, 29));
    let request = next_request("Qwen/Qwen3-8B", &turn, None);
    let expected = chat_body(
        "Qwen/Qwen3-8B",
        json!([
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": null,
             "reasoning_content": "List the directory first.",
             "tool_calls": [
                {"id": "chatcmpl-tool-5c1d2e", "type": "function",
                 "function": {"name": "ls", "arguments": "{\"path\": \"src\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "chatcmpl-tool-5c1d2e", "content": "output of ls"},
        ]),
    );
    assert_eq!(
        body(ProviderKind::OpenAi, &request, &compatible("Qwen/Qwen3-8B")),
        expected
    );
}

/// llama-server: reasoning, text and a whole call in one fragment; route options go out as
/// sampling fields and the limit as `max_tokens`.
#[test]
fn llama_cpp_turn_and_route_options() {
    let turn = decode(ProviderKind::OpenAi, "llamacpp");
    assert_eq!(turn.usage, usage(188, 0, 22));
    let mut profile = compatible("gemma3");
    profile.options.temperature = Some(0.0);
    profile.options.seed = Some(7);
    profile.options.max_output_tokens = Some(512);
    let request = next_request("gemma3", &turn, None);
    let mut expected = chat_body(
        "gemma3",
        json!([
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": "Running them.",
             "reasoning_content": "Check the tests",
             "tool_calls": [
                {"id": "Kq8fX2nR0aYbT3vW9sLm1cZ5uD7eH4jP", "type": "function",
                 "function": {"name": "bash", "arguments": "{\"command\":\"make test\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "Kq8fX2nR0aYbT3vW9sLm1cZ5uD7eH4jP", "content": "output of bash"},
        ]),
    );
    expected["max_tokens"] = json!(512);
    expected["temperature"] = json!(0.0);
    expected["seed"] = json!(7);
    assert_eq!(body(ProviderKind::OpenAi, &request, &profile), expected);
}

/// Ollama: both calls at index 0 with their own ids, reasoning under `reasoning`.
#[test]
fn ollama_parallel_calls_and_reasoning() {
    let turn = decode(ProviderKind::OpenAi, "ollama");
    assert_eq!(turn.usage, usage(230, 0, 48));
    let mut profile = compatible("qwen3:8b");
    profile.options.max_output_tokens = Some(4096);
    let request = next_request("qwen3:8b", &turn, None);
    let mut expected = chat_body(
        "qwen3:8b",
        json!([
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": null, "reasoning": "Two files to read.", "tool_calls": [
                {"id": "call_k2f8tmkc", "type": "function",
                 "function": {"name": "read", "arguments": "{\"path\":\"a.rs\"}"}},
                {"id": "call_9zq1b0wx", "type": "function",
                 "function": {"name": "read", "arguments": "{\"path\":\"b.rs\"}"}},
            ]},
            {"role": "tool", "tool_call_id": "call_k2f8tmkc", "content": "output of read"},
            {"role": "tool", "tool_call_id": "call_9zq1b0wx", "content": "output of read"},
        ]),
    );
    expected["max_tokens"] = json!(4096);
    assert_eq!(body(ProviderKind::OpenAi, &request, &profile), expected);
}

fn anthropic_messages() -> Value {
    json!([
        {"role": "user", "content": [{"type": "text", "text": "task"}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "The tests live in tests/; run them.",
             "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxDhCaLx4rUZ5mpIpEQ=="},
            {"type": "text", "text": "Running the tests."},
            {"type": "tool_use", "id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "name": "bash",
             "input": {"command": "cargo test"}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
             "content": "output of bash", "is_error": false, "cache_control": {"type": "ephemeral"}},
        ]},
    ])
}

/// Opus 4.7: adaptive thinking with an effort, the signed thinking block sent back verbatim,
/// cache writes counted apart.
#[test]
fn anthropic_adaptive_thinking_with_tool_use() {
    let turn = decode(ProviderKind::Anthropic, "anthropic_adaptive");
    assert_eq!(
        turn.usage,
        Usage {
            input_tokens: 1825,
            cached_input_tokens: 0,
            output_tokens: 89,
            cache_write_tokens: 1800,
        }
    );
    assert!(matches!(
        &turn.parts[0],
        AssistantPart::Reasoning {
            signature: Some(_),
            ..
        }
    ));
    let request = next_request("claude-opus-4-7", &turn, Some(ThinkingLevel::Xhigh));
    let profile = Profile::builtin(ProviderKind::Anthropic, "claude-opus-4-7");
    assert_eq!(
        body(ProviderKind::Anthropic, &request, &profile),
        json!({
            "model": "claude-opus-4-7",
            "max_tokens": 128000,
            "stream": true,
            "messages": anthropic_messages(),
            "thinking": {"type": "adaptive"},
            "output_config": {"effort": "xhigh"},
        })
    );
}

/// Sonnet 4.5 still takes budgets: the same turn goes back with `budget_tokens` under the
/// model's 64000-token limit.
#[test]
fn anthropic_budget_thinking_with_tool_use() {
    let turn = decode(ProviderKind::Anthropic, "anthropic_adaptive");
    let request = next_request("claude-sonnet-4-5", &turn, Some(ThinkingLevel::High));
    let profile = Profile::builtin(ProviderKind::Anthropic, "claude-sonnet-4-5");
    assert_eq!(
        body(ProviderKind::Anthropic, &request, &profile),
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 64000,
            "stream": true,
            "messages": anthropic_messages(),
            "thinking": {"type": "enabled", "budget_tokens": 16384},
        })
    );
}

/// Responses: the encrypted reasoning item goes back without its id, `include` and the
/// session's `prompt_cache_key` on every turn, xhigh clamped to what gpt-5.1-codex takes.
#[test]
fn responses_reasoning_item_and_function_call() {
    let turn = decode(ProviderKind::OpenAiResponses, "responses");
    assert_eq!(turn.usage, usage(900, 512, 120));
    let request = next_request("gpt-5.1-codex", &turn, Some(ThinkingLevel::Xhigh));
    let profile = Profile::builtin(ProviderKind::OpenAiResponses, "gpt-5.1-codex");
    assert_eq!(
        body(ProviderKind::OpenAiResponses, &request, &profile),
        json!({
            "model": "gpt-5.1-codex",
            "input": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "task"}]},
                {"type": "reasoning", "encrypted_content": "gAAAAABpQ1xZ3k9Lq0vT8sYpW2mN", "summary": []},
                {"type": "function_call", "call_id": "call_Fq1mZ8", "name": "bash",
                 "arguments": "{\"command\":\"ls\"}"},
                {"type": "function_call_output", "call_id": "call_Fq1mZ8", "output": "output of bash"},
            ],
            "stream": true,
            "store": false,
            "reasoning": {"effort": "high"},
            "include": ["reasoning.encrypted_content"],
            "prompt_cache_key": "s-1",
        })
    );
}
