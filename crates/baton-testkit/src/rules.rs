//! Declarative rules: a step chosen by what the request looks like, not by its position.
//!
//! A [`ScriptRule`] pairs a [`When`] (conditions that must all hold) with the [`Step`]
//! to play. Rules keep no state, so one server can answer any number of agent runs in
//! a row, and agents that name their tools differently can share one script.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::request::{RecordedRequest, WireFormat};
use crate::turn::Step;

/// Conditions on a model request. Every condition that is set must hold; an empty
/// `When` matches every model request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct When {
    /// The request went to this API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<WireFormat>,
    /// The request's `model` field equals this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The request offers a tool of this name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_offered: Option<String>,
    /// Whether the last item of the conversation is a tool result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_is_tool_result: Option<bool>,
}

impl When {
    /// Matches every model request.
    pub fn any() -> Self {
        When::default()
    }

    pub fn format(mut self, format: WireFormat) -> Self {
        self.format = Some(format);
        self
    }

    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    pub fn tool_offered(mut self, name: impl Into<String>) -> Self {
        self.tool_offered = Some(name.into());
        self
    }

    pub fn last_is_tool_result(mut self, yes: bool) -> Self {
        self.last_is_tool_result = Some(yes);
        self
    }

    /// True when `request` is a model request and every set condition holds.
    pub fn matches(&self, request: &RecordedRequest) -> bool {
        let Some(format) = request.wire_format() else {
            return false;
        };
        self.matches_body(format, &request.body)
    }

    /// Like [`matches`](Self::matches), for a body already known to be of `format`.
    pub fn matches_body(&self, format: WireFormat, body: &Value) -> bool {
        if self.format.is_some_and(|wanted| wanted != format) {
            return false;
        }
        if let Some(model) = &self.model {
            if body.get("model").and_then(Value::as_str) != Some(model.as_str()) {
                return false;
            }
        }
        if let Some(name) = &self.tool_offered {
            if !offered_tools(format, body).any(|offered| offered == name) {
                return false;
            }
        }
        if let Some(wanted) = self.last_is_tool_result {
            if last_is_tool_result(format, body) != wanted {
                return false;
            }
        }
        true
    }
}

/// A rule of a script: when the request matches `when`, answer with `step`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptRule {
    #[serde(default)]
    pub when: When,
    pub step: Step,
}

impl ScriptRule {
    pub fn new(when: When, step: impl Into<Step>) -> Self {
        ScriptRule {
            when,
            step: step.into(),
        }
    }
}

/// The names of the tools a request offers: Chat `tools[].function.name`,
/// Responses and Anthropic `tools[].name`.
pub fn offered_tools(format: WireFormat, body: &Value) -> impl Iterator<Item = &str> {
    body.get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(move |tool| {
            let name = match format {
                WireFormat::Chat => tool.pointer("/function/name"),
                WireFormat::Responses | WireFormat::Anthropic => tool.get("name"),
            };
            name.and_then(Value::as_str)
        })
}

/// Whether the conversation a request sends ends with a tool result: Chat's last
/// message has role `tool`; Responses' last input item is a `function_call_output`
/// (or another `…_call_output`, as for custom tools); Anthropic's last message holds
/// a `tool_result` block.
pub fn last_is_tool_result(format: WireFormat, body: &Value) -> bool {
    match format {
        WireFormat::Chat => last_item(body, "messages")
            .and_then(|m| m.get("role"))
            .and_then(Value::as_str)
            .is_some_and(|role| role == "tool"),
        WireFormat::Responses => last_item(body, "input")
            .and_then(|item| item.get("type"))
            .and_then(Value::as_str)
            .is_some_and(|kind| kind.ends_with("_call_output")),
        WireFormat::Anthropic => last_item(body, "messages")
            .and_then(|m| m.get("content"))
            .and_then(Value::as_array)
            .is_some_and(|blocks| {
                blocks
                    .iter()
                    .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
            }),
    }
}

fn last_item<'a>(body: &'a Value, key: &str) -> Option<&'a Value> {
    body.get(key)
        .and_then(Value::as_array)
        .and_then(|a| a.last())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use serde_json::json;

    fn chat(last_role: &str) -> Value {
        json!({
            "model": "mock-model",
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "read hello.txt"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
                ]},
                {"role": last_role, "tool_call_id": "c1", "content": "hello"}
            ],
            "tools": [
                {"type": "function", "function": {"name": "read", "parameters": {}}},
                {"type": "function", "function": {"name": "bash", "parameters": {}}}
            ]
        })
    }

    fn responses(last_type: &str) -> Value {
        json!({
            "model": "gpt-5.5",
            "input": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
                {"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": "{}"},
                {"type": last_type, "call_id": "c1", "output": "hello"}
            ],
            "tools": [
                {"type": "function", "name": "exec_command", "parameters": {}},
                {"type": "custom", "name": "apply_patch"},
                {"type": "web_search"}
            ]
        })
    }

    fn anthropic(last_block: &str) -> Value {
        json!({
            "model": "claude",
            "messages": [
                {"role": "user", "content": "read it"},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "t1", "name": "read", "input": {}}
                ]},
                {"role": "user", "content": [
                    {"type": last_block, "tool_use_id": "t1", "content": "hello"}
                ]}
            ],
            "tools": [{"name": "read", "input_schema": {}}, {"name": "write", "input_schema": {}}]
        })
    }

    #[test]
    fn chat_conditions() {
        let body = chat("tool");
        let names: Vec<_> = offered_tools(WireFormat::Chat, &body).collect();
        assert_eq!(names, ["read", "bash"]);
        assert!(last_is_tool_result(WireFormat::Chat, &body));
        assert!(!last_is_tool_result(WireFormat::Chat, &chat("user")));
        // A Chat body is not read with another format's layout.
        assert_eq!(offered_tools(WireFormat::Anthropic, &body).count(), 0);
        assert!(!last_is_tool_result(
            WireFormat::Chat,
            &json!({"messages": []})
        ));
        assert!(!last_is_tool_result(WireFormat::Chat, &Value::Null));
    }

    #[test]
    fn responses_conditions() {
        let body = responses("function_call_output");
        let names: Vec<_> = offered_tools(WireFormat::Responses, &body).collect();
        assert_eq!(names, ["exec_command", "apply_patch"]);
        assert!(last_is_tool_result(WireFormat::Responses, &body));
        assert!(last_is_tool_result(
            WireFormat::Responses,
            &responses("custom_tool_call_output")
        ));
        assert!(!last_is_tool_result(
            WireFormat::Responses,
            &responses("message")
        ));
        // `input` may be a plain string.
        assert!(!last_is_tool_result(
            WireFormat::Responses,
            &json!({"input": "hello"})
        ));
    }

    #[test]
    fn anthropic_conditions() {
        let body = anthropic("tool_result");
        let names: Vec<_> = offered_tools(WireFormat::Anthropic, &body).collect();
        assert_eq!(names, ["read", "write"]);
        assert!(last_is_tool_result(WireFormat::Anthropic, &body));
        assert!(!last_is_tool_result(
            WireFormat::Anthropic,
            &anthropic("text")
        ));
        // String content is never a tool result.
        assert!(!last_is_tool_result(
            WireFormat::Anthropic,
            &json!({"messages": [{"role": "user", "content": "tool_result"}]})
        ));
    }

    #[test]
    fn when_combines_conditions() {
        let first_turn = When::any().tool_offered("read").last_is_tool_result(false);
        assert!(first_turn.matches_body(WireFormat::Chat, &chat("user")));
        assert!(!first_turn.matches_body(WireFormat::Chat, &chat("tool")));
        assert!(first_turn.matches_body(WireFormat::Anthropic, &anthropic("text")));
        assert!(!first_turn.matches_body(WireFormat::Responses, &responses("message")));

        let codex = When::any().tool_offered("exec_command");
        assert!(codex.matches_body(WireFormat::Responses, &responses("message")));
        assert!(!codex.matches_body(WireFormat::Chat, &chat("user")));

        assert!(When::any().matches_body(WireFormat::Chat, &Value::Null));
        let only_chat = When::any().format(WireFormat::Chat).model("mock-model");
        assert!(only_chat.matches_body(WireFormat::Chat, &chat("user")));
        assert!(!only_chat.matches_body(WireFormat::Anthropic, &chat("user")));
        assert!(!When::any()
            .model("other")
            .matches_body(WireFormat::Chat, &chat("user")));
    }

    #[test]
    fn only_model_requests_match() {
        let request = |method: &str, path: &str| RecordedRequest {
            method: method.to_string(),
            path: path.to_string(),
            headers: Vec::new(),
            body: chat("tool"),
        };
        let when = When::any().last_is_tool_result(true);
        assert!(when.matches(&request("POST", "/v1/chat/completions")));
        assert!(!when.matches(&request("POST", "/v1/responses")));
        assert!(!When::any().matches(&request("GET", "/v1/models")));
    }

    #[test]
    fn rules_parse_and_round_trip() {
        let rule: ScriptRule = serde_json::from_value(json!({
            "when": {"tool_offered": "read", "last_is_tool_result": false, "format": "chat"},
            "step": {"tool_call": {"name": "read", "arguments": {"path": "a"}}}
        }))
        .unwrap();
        assert_eq!(
            rule.when,
            When::any()
                .format(WireFormat::Chat)
                .tool_offered("read")
                .last_is_tool_result(false)
        );
        let back: ScriptRule =
            serde_json::from_value(serde_json::to_value(&rule).unwrap()).unwrap();
        assert_eq!(back, rule);
        let always: ScriptRule = serde_json::from_value(json!({"step": "done"})).unwrap();
        assert_eq!(always.when, When::any());
        let err = serde_json::from_value::<ScriptRule>(json!({
            "when": {"tool": "read"}, "step": "x"
        }))
        .unwrap_err()
        .to_string();
        assert!(err.contains("tool"), "{err}");
    }
}
