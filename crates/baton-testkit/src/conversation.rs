//! What a model request says, read the same way in the three wire formats: the model, the
//! offered tools, and the conversation as turns with their tool calls and tool results.
//!
//! | what | Chat Completions | Responses | Anthropic Messages |
//! | --- | --- | --- | --- |
//! | an assistant turn | a message with role `assistant` | consecutive `message` (role `assistant`), `reasoning` and `…_call` items | a message with role `assistant` |
//! | a tool call (id, name) | `tool_calls[]`: `id`, `function.name` | a `…_call` item: `call_id`, `name` | a `tool_use` block: `id`, `name` |
//! | a tool result (call id, text) | a message with role `tool`: `tool_call_id`, `content` | a `…_call_output` item: `call_id`, `output` | a `tool_result` block: `tool_use_id`, `content` |
//! | user text | a message with role `user` | a `message` item with role `user` (or `input` as a string) | `text` blocks (or a string) of a message with role `user` |
//!
//! Consecutive tool results form one [`Message`] of [`Role::Tool`]; an Anthropic user message that
//! holds tool results and text becomes a tool turn followed by a user turn.

use serde_json::Value;

use crate::request::{RecordedRequest, WireFormat};
use crate::rules::offered_tools;

/// Who a [`Message`] of the conversation is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// System or developer instructions sent as a message.
    System,
    User,
    Assistant,
    /// Tool results sent back to the model.
    Tool,
}

/// A tool call of an assistant turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
}

/// A tool result sent back to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResult {
    /// The id of the call it answers.
    pub call_id: String,
    /// The result's text (text parts joined).
    pub text: String,
}

/// One turn of the conversation a request sends (a message, or several items that form one turn).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub role: Role,
    /// Its text (text parts joined); empty for a tool turn.
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub tool_results: Vec<ToolResult>,
}

impl Message {
    fn new(role: Role) -> Message {
        Message {
            role,
            text: String::new(),
            tool_calls: Vec::new(),
            tool_results: Vec::new(),
        }
    }
}

impl RecordedRequest {
    /// The `model` the body names.
    pub fn model(&self) -> Option<&str> {
        self.body.get("model").and_then(Value::as_str)
    }

    /// The names of the tools the request offers (empty for a request to no model API).
    pub fn offered_tools(&self) -> Vec<&str> {
        match self.wire_format() {
            Some(format) => offered_tools(format, &self.body).collect(),
            None => Vec::new(),
        }
    }

    /// The conversation the request sends, as turns (empty for a request to no model API).
    /// System instructions outside the conversation (Anthropic's `system`, Responses'
    /// `instructions`) are not turns.
    pub fn messages(&self) -> Vec<Message> {
        let mut turns = Vec::new();
        match self.wire_format() {
            Some(WireFormat::Chat) => chat_turns(&self.body, &mut turns),
            Some(WireFormat::Responses) => responses_turns(&self.body, &mut turns),
            Some(WireFormat::Anthropic) => anthropic_turns(&self.body, &mut turns),
            None => {}
        }
        turns
    }

    /// The tool calls of every assistant turn, in order.
    pub fn tool_calls(&self) -> Vec<ToolCall> {
        self.messages()
            .into_iter()
            .flat_map(|t| t.tool_calls)
            .collect()
    }

    /// Every tool result the request sends back, in order.
    pub fn tool_results(&self) -> Vec<ToolResult> {
        self.messages()
            .into_iter()
            .flat_map(|t| t.tool_results)
            .collect()
    }

    /// The text of the tool result answering call `call_id`; a test's failure when there is none.
    pub fn result_of(&self, call_id: &str) -> String {
        self.tool_results()
            .into_iter()
            .find(|r| r.call_id == call_id)
            .map(|r| r.text)
            .unwrap_or_else(|| panic!("no result for {call_id}"))
    }

    /// The text of the last user turn.
    pub fn last_user_text(&self) -> Option<String> {
        self.messages()
            .into_iter()
            .rev()
            .find(|t| t.role == Role::User)
            .map(|t| t.text)
    }

    /// Checks that every tool result answers, by call id, a tool call of the assistant turn
    /// right before it. The error names the first result that does not.
    pub fn check_tool_results(&self) -> Result<(), String> {
        let turns = self.messages();
        for (i, turn) in turns.iter().enumerate() {
            if turn.tool_results.is_empty() {
                continue;
            }
            let before = i.checked_sub(1).map(|j| &turns[j]);
            let calls: Vec<&str> = match before {
                Some(t) if t.role == Role::Assistant => {
                    t.tool_calls.iter().map(|c| c.id.as_str()).collect()
                }
                _ => Vec::new(),
            };
            if let Some(result) = turn
                .tool_results
                .iter()
                .find(|r| !calls.contains(&r.call_id.as_str()))
            {
                let before = match before {
                    Some(t) if t.role == Role::Assistant => {
                        format!("the assistant turn before it calls {calls:?}")
                    }
                    Some(t) => format!("the turn before it is a {:?} turn", t.role),
                    None => "nothing comes before it".to_string(),
                };
                return Err(format!(
                    "{} {}: turn {i} holds a tool result for call `{}`, but {before}",
                    self.method, self.path, result.call_id
                ));
            }
        }
        Ok(())
    }
}

/// Panics unless every tool result in every request answers a tool call of the assistant turn
/// right before it ([`RecordedRequest::check_tool_results`]); requests to no model API pass.
pub fn assert_tool_results_answer_calls(requests: &[RecordedRequest]) {
    for (n, request) in requests.iter().enumerate() {
        if let Err(e) = request.check_tool_results() {
            panic!("request #{n}: {e}\nbody: {}", request.body);
        }
    }
}

/// Adds `turn`, merging it into the last turn when both are tool turns, or (with `merge_assistant`)
/// both assistant turns.
fn push(turns: &mut Vec<Message>, turn: Message, merge_assistant: bool) {
    if let Some(last) = turns.last_mut() {
        let same = last.role == turn.role
            && (turn.role == Role::Tool || (merge_assistant && turn.role == Role::Assistant));
        if same {
            last.text.push_str(&turn.text);
            last.tool_calls.extend(turn.tool_calls);
            last.tool_results.extend(turn.tool_results);
            return;
        }
    }
    turns.push(turn);
}

fn role_of(role: Option<&str>) -> Role {
    match role {
        Some("assistant") => Role::Assistant,
        Some("tool") => Role::Tool,
        Some("system" | "developer") => Role::System,
        _ => Role::User,
    }
}

fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// A string, or the `text` of a list of parts, joined.
fn text_of(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

fn items<'a>(body: &'a Value, key: &str) -> &'a [Value] {
    body.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn chat_turns(body: &Value, turns: &mut Vec<Message>) {
    for m in items(body, "messages") {
        let mut turn = Message::new(role_of(m.get("role").and_then(Value::as_str)));
        if turn.role == Role::Tool {
            turn.tool_results.push(ToolResult {
                call_id: str_at(m, "tool_call_id").to_string(),
                text: text_of(m.get("content")),
            });
        } else {
            turn.text = text_of(m.get("content"));
        }
        for call in items(m, "tool_calls") {
            turn.tool_calls.push(ToolCall {
                id: str_at(call, "id").to_string(),
                name: call
                    .pointer("/function/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            });
        }
        push(turns, turn, false);
    }
}

fn responses_turns(body: &Value, turns: &mut Vec<Message>) {
    if let Some(text) = body.get("input").and_then(Value::as_str) {
        let mut turn = Message::new(Role::User);
        turn.text = text.to_string();
        turns.push(turn);
        return;
    }
    for item in items(body, "input") {
        let kind = item
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("message");
        let turn = if kind.ends_with("_call_output") {
            let mut turn = Message::new(Role::Tool);
            turn.tool_results.push(ToolResult {
                call_id: str_at(item, "call_id").to_string(),
                text: text_of(item.get("output")),
            });
            turn
        } else if kind.ends_with("_call") {
            let mut turn = Message::new(Role::Assistant);
            turn.tool_calls.push(ToolCall {
                id: str_at(item, "call_id").to_string(),
                name: str_at(item, "name").to_string(),
            });
            turn
        } else if kind == "reasoning" {
            Message::new(Role::Assistant)
        } else {
            let mut turn = Message::new(role_of(item.get("role").and_then(Value::as_str)));
            turn.text = text_of(item.get("content"));
            turn
        };
        push(turns, turn, true);
    }
}

fn anthropic_turns(body: &Value, turns: &mut Vec<Message>) {
    for m in items(body, "messages") {
        let role = role_of(m.get("role").and_then(Value::as_str));
        let mut turn = Message::new(role);
        let mut results = Message::new(Role::Tool);
        match m.get("content") {
            Some(Value::String(s)) => turn.text = s.clone(),
            Some(Value::Array(blocks)) => {
                for b in blocks {
                    match str_at(b, "type") {
                        "text" => turn.text.push_str(str_at(b, "text")),
                        "tool_use" => turn.tool_calls.push(ToolCall {
                            id: str_at(b, "id").to_string(),
                            name: str_at(b, "name").to_string(),
                        }),
                        "tool_result" => results.tool_results.push(ToolResult {
                            call_id: str_at(b, "tool_use_id").to_string(),
                            text: text_of(b.get("content")),
                        }),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        let had_results = !results.tool_results.is_empty();
        if had_results {
            push(turns, results, false);
        }
        if !had_results || !turn.text.is_empty() || !turn.tool_calls.is_empty() {
            push(turns, turn, false);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use serde_json::json;

    fn request(format: WireFormat, body: Value) -> RecordedRequest {
        let path = match format {
            WireFormat::Chat => "/v1/chat/completions",
            WireFormat::Responses => "/v1/responses",
            WireFormat::Anthropic => "/v1/messages",
        };
        RecordedRequest {
            method: "POST".into(),
            path: path.into(),
            headers: Vec::new(),
            body,
        }
    }

    /// A valid two-step exchange (two calls answered, then one more) and the same with one
    /// result answering a call id of an earlier turn, for each format.
    fn exchanges() -> Vec<(WireFormat, Value, Value)> {
        let chat = |late: &str| {
            json!({"model": "m", "tools": [{"type": "function", "function": {"name": "read"}}],
                "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}},
                    {"id": "c2", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "one"},
                {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "two"}]},
                {"role": "assistant", "content": "more", "tool_calls": [
                    {"id": "c3", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": late, "content": "three"},
                {"role": "user", "content": "and now?"}
            ]})
        };
        let responses = |late: &str| {
            json!({"model": "m", "tools": [{"type": "function", "name": "read"}], "input": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
                {"type": "reasoning", "id": "rs_1", "summary": []},
                {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{}"},
                {"type": "function_call", "call_id": "c2", "name": "ls", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "one"},
                {"type": "function_call_output", "call_id": "c2", "output": "two"},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "more"}]},
                {"type": "custom_tool_call", "call_id": "c3", "name": "bash", "input": ""},
                {"type": "custom_tool_call_output", "call_id": late, "output": "three"},
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "and now?"}]}
            ]})
        };
        let anthropic = |late: &str| {
            json!({"model": "m", "system": "be brief", "tools": [{"name": "read"}], "messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "hm", "signature": "s"},
                    {"type": "tool_use", "id": "c1", "name": "read", "input": {}},
                    {"type": "tool_use", "id": "c2", "name": "ls", "input": {}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "c1", "content": "one"},
                    {"type": "tool_result", "tool_use_id": "c2", "content": [{"type": "text", "text": "two"}]}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "more"},
                    {"type": "tool_use", "id": "c3", "name": "bash", "input": {}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": late, "content": "three"},
                    {"type": "text", "text": "and now?"}]}
            ]})
        };
        vec![
            (WireFormat::Chat, chat("c3"), chat("c1")),
            (WireFormat::Responses, responses("c3"), responses("c2")),
            (WireFormat::Anthropic, anthropic("c3"), anthropic("c1")),
        ]
    }

    #[test]
    fn accessors_read_every_format_alike() {
        for (format, body, _) in exchanges() {
            let r = request(format, body);
            assert_eq!(r.model(), Some("m"), "{format:?}");
            assert_eq!(r.offered_tools(), ["read"], "{format:?}");
            let calls: Vec<(String, String)> =
                r.tool_calls().into_iter().map(|c| (c.id, c.name)).collect();
            assert_eq!(
                calls,
                [("c1", "read"), ("c2", "ls"), ("c3", "bash")]
                    .map(|(a, b)| (a.to_string(), b.to_string())),
                "{format:?}"
            );
            let results: Vec<(String, String)> = r
                .tool_results()
                .into_iter()
                .map(|t| (t.call_id, t.text))
                .collect();
            assert_eq!(
                results,
                [("c1", "one"), ("c2", "two"), ("c3", "three")]
                    .map(|(a, b)| (a.to_string(), b.to_string())),
                "{format:?}"
            );
            assert_eq!(
                r.last_user_text().as_deref(),
                Some("and now?"),
                "{format:?}"
            );
            let roles: Vec<Role> = r
                .messages()
                .iter()
                .map(|t| t.role)
                .filter(|role| *role != Role::System)
                .collect();
            assert_eq!(
                roles,
                [
                    Role::User,
                    Role::Assistant,
                    Role::Tool,
                    Role::Assistant,
                    Role::Tool,
                    Role::User
                ],
                "{format:?}"
            );
        }
    }

    #[test]
    fn a_valid_exchange_passes_the_check() {
        let requests: Vec<RecordedRequest> = exchanges()
            .into_iter()
            .map(|(format, body, _)| request(format, body))
            .collect();
        assert_tool_results_answer_calls(&requests);
        // Requests to no model API have no conversation.
        let list = RecordedRequest {
            method: "GET".into(),
            path: "/v1/models".into(),
            headers: Vec::new(),
            body: Value::Null,
        };
        assert_eq!(list.check_tool_results(), Ok(()));
    }

    #[test]
    fn a_result_for_a_call_of_an_earlier_turn_fails_the_check() {
        for (format, _, bad) in exchanges() {
            let err = request(format, bad).check_tool_results().unwrap_err();
            assert!(err.contains("for call `c"), "{format:?}: {err}");
            assert!(err.contains("[\"c3\"]"), "{format:?}: {err}");
        }
    }

    #[test]
    fn a_result_without_any_call_fails_the_check() {
        let cases = [
            (
                WireFormat::Chat,
                json!({"messages": [
                    {"role": "user", "content": "go"},
                    {"role": "tool", "tool_call_id": "c1", "content": "x"}]}),
            ),
            (
                WireFormat::Responses,
                json!({"input": [
                    {"type": "message", "role": "user", "content": "go"},
                    {"type": "function_call_output", "call_id": "c1", "output": "x"}]}),
            ),
            (
                WireFormat::Anthropic,
                json!({"messages": [
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "x"}]}]}),
            ),
            (
                WireFormat::Anthropic,
                json!({"messages": [
                    {"role": "user", "content": "go"},
                    {"role": "assistant", "content": [{"type": "text", "text": "no calls"}]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "x"}]}]}),
            ),
        ];
        for (format, body) in cases {
            let r = request(format, body);
            let err = r.check_tool_results().unwrap_err();
            assert!(err.contains("call `c1`"), "{format:?}: {err}");
            let panicked = std::panic::catch_unwind(|| assert_tool_results_answer_calls(&[r]));
            assert!(panicked.is_err(), "{format:?}");
        }
    }
}
