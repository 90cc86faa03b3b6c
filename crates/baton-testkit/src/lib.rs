//! Test support for baton: a mock model server on 127.0.0.1 that speaks three real
//! wire formats, scripted turn by turn, with fault injection; and what end-to-end tests share:
//!
//! - [`fixture`]: a [`fixture::Sandbox`] (its own HOME, XDG folders, git identity and project
//!   folder) that runs the built `baton` (the caller passes `env!("CARGO_BIN_EXE_baton")`),
//!   git repository helpers, and [`fixture::wait_until`] for state another process produces
//!   (a wait on a condition, never a delay).
//! - Typed views of a [`RecordedRequest`] in any of the three formats (`model()`,
//!   `offered_tools()`, `messages()`, `tool_calls()`, `tool_results()`, `last_user_text()`), and
//!   the invariant every e2e test with a mock server checks at its end,
//!   [`MockServer::assert_tool_results_answer_calls`]: each tool result answers a tool call of
//!   the assistant turn right before it.
//!
//! | route (POST)                                   | format                            |
//! | ---------------------------------------------- | --------------------------------- |
//! | `/v1/chat/completions`, `/chat/completions`    | OpenAI Chat Completions           |
//! | `/v1/responses`, `/responses`                  | OpenAI Responses (Codex CLI)      |
//! | `/v1/messages` (query strings allowed)         | Anthropic Messages                |
//!
//! Any path ending in one of those suffixes is accepted, so base URLs with or without
//! `/v1` both work. `GET …/models` answers a one-model OpenAI list; anything else
//! gets a 404 with a JSON error body. With [`MockServerBuilder::require_key`], any request
//! without that key gets a 401 whose body echoes the key it was sent. Requests with `"stream": true` get SSE framed
//! exactly as the real API frames it; others get the non-streaming JSON answer.
//!
//! # Writing a test
//!
//! ```no_run
//! use baton_testkit::{Fault, MockServer, Turn};
//! use serde_json::json;
//!
//! # async fn demo() {
//! let server = MockServer::builder()
//!     .fault(Fault::status(429).retry_after(1))
//!     .turn(Turn::tool_call("call_1", "read", json!({"path": "a.txt"})))
//!     .turn(Turn::reasoning("the file says hi").with_text("done").usage(1200, 1000, 35))
//!     .when(|req| req.body["model"] == "judge", Turn::text("PASS"))
//!     .start()
//!     .await;
//! let base = format!("{}/v1", server.url());
//! // … run the client against `base` …
//! assert_eq!(server.remaining(), 0);
//! let first = &server.requests()[0];
//! assert_eq!(first.body["stream"], true);
//! # }
//! ```
//!
//! Each model request takes the next queued [`Step`], unless a rule added with
//! [`MockServerBuilder::when`] (any number of uses) or [`MockServerBuilder::when_once`]
//! matches first. When nothing is left the server answers HTTP 500 with an error body
//! saying the script ran out. Every request, model or not, is recorded
//! ([`MockServer::requests`]). The server stops when the [`MockServer`] is dropped.
//! Synchronous tests (for instance of a CLI binary) use
//! [`MockServerBuilder::start_blocking`], which runs the server on its own runtime.
//!
//! # What a turn looks like on the wire
//!
//! * Ids are deterministic: the n-th model request gets `chatcmpl-mock<n>`,
//!   `resp_mock<n>`, `msg_mock<n>`, items `msg_mock<n>_<part>` / `rs_mock<n>_<part>` /
//!   `fc_mock<n>_<part>`. Tool-call ids from the script are sent verbatim in every
//!   format; an empty id becomes `call_mock<n>_<part>` (OpenAI) or
//!   `toolu_mock<n>_<part>` (Anthropic). Timestamps are always [`CREATED`].
//! * Text and reasoning arrive in deltas of at most [`TEXT_PIECE_BYTES`] bytes, tool
//!   arguments in deltas of at most [`ARGUMENTS_PIECE_BYTES`] bytes.
//! * Usage: [`Turn::usage`] is `(input incl. cached, cached, output)`; it defaults to
//!   [`DEFAULT_USAGE`] (100, 0, 20). Anthropic's `input_tokens` is sent without the
//!   cached part (as that API counts it), with the cached part in
//!   `cache_read_input_tokens`. Reasoning tokens are reported as one per four bytes
//!   of reasoning text, capped at the output tokens.
//! * Chat reasoning goes out as `delta.reasoning_content`; Responses reasoning as a
//!   reasoning item with a summary (`encrypted_content` set in the done item);
//!   Anthropic reasoning as a `thinking` block closed by a `signature_delta`.
//!
//! The same bytes are available without a server, for parser tests:
//! [`render_chat_sse`], [`render_responses_sse`], [`render_anthropic_sse`],
//! [`render_sse_events`] (one string per event), [`render_json_response`],
//! [`render_malformed_sse`], [`render_in_stream_error_sse`], [`render_error_body`].
//! They render as the server does for its first model request.
//!
//! # Faults
//!
//! * [`Fault::Status`]: the HTTP status with the format's error body
//!   (`{"error":{"message","type","param","code"}}` for OpenAI,
//!   `{"type":"error","error":{"type","message"}}` for Anthropic) and `retry-after`;
//!   with [`Fault::body`], the body given instead, to play one server's error answer
//!   (llama-server's `exceed_context_size_error`, OpenAI's `insufficient_quota`, …).
//! * [`Fault::DropMidStream`]: the first `after_events` SSE events of the turn, then
//!   the connection is cut (the client sees a body error or an early EOF).
//! * [`Fault::MalformedSse`]: the turn's first event, then `data: {not json`, then a
//!   clean end of the body.
//! * [`Fault::InStreamError`]: HTTP 200, then Chat: the role chunk and a chunk
//!   `{"error":{…}}` with no `[DONE]`; Responses: `response.created`,
//!   `response.in_progress`, `response.failed` (error code `server_error`);
//!   Anthropic: `message_start`, then `event: error` with an `overloaded_error`.
//!
//! # Script files
//!
//! A script file (used by the `baton-mock` binary and [`Script::load`]) is a JSON list
//! of steps, or an object `{"steps": [...]}` (`"turns"` works too). A step is
//!
//! * a string: a turn that answers that text;
//! * a turn object, either with `"parts"` (a list of `{"text": …}`,
//!   `{"reasoning": …}`, `{"tool_call": {"id", "name", "arguments"}}`, played in
//!   order) or with the short keys `"reasoning"`, `"text"`, `"tool_call"`,
//!   `"tool_calls"` (played in that order), plus optional `"usage"`
//!   (`input_tokens`, `cached_input_tokens`, `output_tokens`, each defaulted) and
//!   `"delay_ms_per_chunk"`. Tool arguments may be a JSON object or a string of raw
//!   JSON text (which may be deliberately broken); `id` may be omitted; an optional
//!   `namespace` is sent with the call in the Responses format only (Codex offers an MCP
//!   server's tools as one namespace tool, `mcp__<server>`, and needs it on the call);
//! * a fault object tagged by `"fault"`: `"status"` (`status`, `retry_after_secs` or
//!   `retry_after`, `message`, or `body`: the whole body, a JSON value or a string), `"drop_mid_stream"` or `"drop"` (`after_events`,
//!   optional `turn`), `"malformed_sse"` or `"malformed"` (optional `turn`),
//!   `"in_stream_error"` (`message`).
//!
//! ```json
//! [
//!   {"fault": "status", "status": 429, "retry_after_secs": 1, "message": "Rate limit reached"},
//!   {"reasoning": "I should read the file first.",
//!    "tool_call": {"id": "call_1", "name": "read", "arguments": {"path": "a.txt"}},
//!    "usage": {"input_tokens": 1200, "cached_input_tokens": 1024, "output_tokens": 40}},
//!   {"parts": [
//!      {"tool_call": {"name": "write", "arguments": {"path": "b.txt", "content": "hi"}}},
//!      {"tool_call": {"name": "bash", "arguments": "{\"command\": \"ls\"}"}}
//!    ]},
//!   {"fault": "drop", "after_events": 3, "turn": {"text": "never finished"}},
//!   {"fault": "in_stream_error", "message": "Overloaded"},
//!   {"text": "All done.", "delay_ms_per_chunk": 5},
//!   "A bare string is a text turn."
//! ]
//! ```
//!
//! Serializing a [`Script`] or [`Step`] always writes the long form (`parts`, full
//! `usage`), which reads back to the same value.
//!
//! ## Rules
//!
//! A script object may also hold `"rules"`: steps chosen by what the request looks
//! like instead of by position. For every model request the rules are tried in
//! order and the first whose `"when"` holds answers with its `"step"` (any step form
//! above); a request that no rule matches takes the next queued step. Rules keep no
//! state, so one server can answer run after run of an agent, or of several agents
//! that name their tools differently. Either key of the object may be left out.
//!
//! ```json rules
//! {
//!   "rules": [
//!     {"when": {"tool_offered": "exec_command", "last_is_tool_result": false},
//!      "step": {"tool_call": {"name": "exec_command", "arguments": {"cmd": "cat hello.txt"}}}},
//!     {"when": {"tool_offered": "read", "last_is_tool_result": false},
//!      "step": {"tool_call": {"name": "read", "arguments": {"path": "hello.txt"}}}},
//!     {"when": {"last_is_tool_result": true}, "step": "The file says hello."}
//!   ],
//!   "steps": [{"fault": "status", "status": 400, "message": "no rule for this request"}]
//! }
//! ```
//!
//! The conditions of `"when"` (all optional; every one given must hold, so `{}` or
//! a missing `"when"` matches every model request) are read from the request body
//! in the layout of the API it was sent to ([`When`], [`offered_tools`],
//! [`last_is_tool_result`]):
//!
//! | condition | Chat Completions | Responses | Anthropic Messages |
//! | --- | --- | --- | --- |
//! | `"tool_offered": NAME` | `tools[].function.name` | `tools[].name` | `tools[].name` |
//! | `"last_is_tool_result": BOOL` | the last of `messages` has role `tool` | the last of `input` has a type ending in `_call_output` (`function_call_output`, `custom_tool_call_output`) | the last of `messages` has a `tool_result` content block |
//! | `"format": F` | `"chat"` | `"responses"` | `"anthropic"` |
//! | `"model": M` | the body's `model` equals `M` | same | same |
//!
//! In code, the same is [`MockServerBuilder::rule`] with a [`ScriptRule`], or
//! [`MockServerBuilder::when`] with any predicate.

pub mod attacks;
mod contracts;
pub use contracts::{assert_full_build, FULL_BUILD};
mod conversation;
pub mod fixture;
mod json;
pub mod pty;
mod render;
mod request;
mod rules;
mod script;
mod server;
mod turn;
pub mod vt;

pub use conversation::{assert_tool_results_answer_calls, Message, Role, ToolCall, ToolResult};
pub use render::{
    render_anthropic_sse, render_chat_sse, render_error_body, render_in_stream_error_sse,
    render_json_response, render_malformed_sse, render_responses_sse, render_sse_events,
    ARGUMENTS_PIECE_BYTES, CREATED, MALFORMED_DATA, TEXT_PIECE_BYTES,
};
pub use request::{RecordedRequest, WireFormat};
pub use rules::{last_is_tool_result, offered_tools, ScriptRule, When};
pub use script::{Script, ScriptError};
pub use server::{MockServer, MockServerBuilder, Predicate, RequestHook};
pub use turn::{Fault, IntoArguments, Part, Step, Turn, DEFAULT_USAGE};

pub use baton_protocol::Usage;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    /// The fenced block of the crate docs that opens with `fence`.
    fn doc_block(fence: &str) -> String {
        include_str!("lib.rs")
            .split(&format!("//! {fence}\n"))
            .nth(1)
            .unwrap()
            .split("//! ```\n")
            .next()
            .unwrap()
            .lines()
            .map(|l| {
                l.strip_prefix("//! ")
                    .or_else(|| l.strip_prefix("//!"))
                    .unwrap()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The examples in the crate docs must stay valid scripts.
    #[test]
    fn documented_script_parses() {
        let script = Script::from_json(&doc_block("```json")).unwrap();
        assert_eq!(script.steps.len(), 7);
        assert_eq!(
            script.steps[0],
            Step::Fault(
                Fault::status(429)
                    .retry_after(1)
                    .message("Rate limit reached")
            )
        );
        assert_eq!(
            script.steps[6],
            Step::Turn(Turn::text("A bare string is a text turn."))
        );

        let script = Script::from_json(&doc_block("```json rules")).unwrap();
        assert_eq!(script.rules.len(), 3);
        assert_eq!(script.steps.len(), 1);
        assert_eq!(
            script.rules[1].when,
            When::any().tool_offered("read").last_is_tool_result(false)
        );
    }
}
