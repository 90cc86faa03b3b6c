//! A script file: rules and steps, read from JSON.
//!
//! The steps themselves ([`Step`] and what it holds) are defined with the turns, the
//! rules ([`ScriptRule`]) with the conditions they test. The JSON form is described in
//! the crate docs.

use std::path::Path;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::rules::ScriptRule;
use crate::turn::Step;

/// A list of steps and rules, as stored in a script file.
///
/// The file holds either a bare array of steps or `{"rules": [...], "steps": [...]}`
/// (`"turns"` is accepted as another name for `"steps"`; either key may be left out).
/// Rules are checked first, in order, for every model request; the steps answer the
/// requests no rule matches, one each.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Script {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<ScriptRule>,
    pub steps: Vec<Step>,
}

/// Why a script could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    #[error("cannot read script {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid script {origin}: {source}")]
    Parse {
        origin: String,
        #[source]
        source: serde_json::Error,
    },
}

impl Script {
    /// Parses a script from JSON text.
    pub fn from_json(text: &str) -> Result<Script, ScriptError> {
        serde_json::from_str(text).map_err(|source| ScriptError::Parse {
            origin: "text".to_string(),
            source,
        })
    }

    /// Reads and parses a script file.
    pub fn load(path: impl AsRef<Path>) -> Result<Script, ScriptError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Read {
            path: path.display().to_string(),
            source,
        })?;
        serde_json::from_str(&text).map_err(|source| ScriptError::Parse {
            origin: path.display().to_string(),
            source,
        })
    }
}

impl<'de> Deserialize<'de> for Script {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Wrapped {
            #[serde(default)]
            rules: Vec<Value>,
            #[serde(default, alias = "turns")]
            steps: Vec<Value>,
        }
        let (rules, items) =
            match Value::deserialize(deserializer)? {
                Value::Array(items) => (Vec::new(), items),
                wrapped @ Value::Object(_) => {
                    let wrapped = Wrapped::deserialize(wrapped).map_err(D::Error::custom)?;
                    (wrapped.rules, wrapped.steps)
                }
                _ => return Err(D::Error::custom(
                    "a script is a list of steps or an object {\"rules\": [...], \"steps\": [...]}",
                )),
            };
        let rules = rules
            .into_iter()
            .enumerate()
            .map(|(i, item)| {
                ScriptRule::deserialize(item)
                    .map_err(|e| D::Error::custom(format!("rule {}: {e}", i + 1)))
            })
            .collect::<Result<Vec<_>, _>>()?;
        // Steps are parsed one by one so an error can say which step is wrong.
        let steps = items
            .into_iter()
            .enumerate()
            .map(|(i, item)| {
                Step::deserialize(item)
                    .map_err(|e| D::Error::custom(format!("step {}: {e}", i + 1)))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Script { rules, steps })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::rules::When;
    use crate::turn::{Fault, Turn, DEFAULT_FAULT_TEXT};
    use serde_json::json;

    #[test]
    fn short_forms_parse() {
        let script = Script::from_json(
            r#"[
                "hello",
                {"text": "done", "usage": {"input_tokens": 7}},
                {"reasoning": "think", "tool_call": {"id": "call_1", "name": "read", "arguments": {"path": "a.txt"}}},
                {"tool_calls": [{"name": "ls"}, {"id": "c2", "name": "bash", "arguments": "{\"cmd\":"}]},
                {"fault": "status", "status": 429, "retry_after": 2},
                {"fault": "drop", "after_events": 3},
                {"fault": "malformed_sse", "turn": {"text": "x"}},
                {"fault": "in_stream_error", "message": "overloaded"}
            ]"#,
        )
        .unwrap();
        assert_eq!(
            script.steps,
            vec![
                Step::Turn(Turn::text("hello")),
                Step::Turn(Turn::text("done").usage(7, 0, 20)),
                Step::Turn(Turn::reasoning("think").with_tool_call(
                    "call_1",
                    "read",
                    json!({"path": "a.txt"})
                )),
                Step::Turn(Turn::new().with_tool_call("", "ls", "{}").with_tool_call(
                    "c2",
                    "bash",
                    "{\"cmd\":"
                )),
                Step::Fault(Fault::status(429).retry_after(2)),
                Step::Fault(Fault::drop_after(Turn::text(DEFAULT_FAULT_TEXT), 3)),
                Step::Fault(Fault::malformed(Turn::text("x"))),
                Step::Fault(Fault::in_stream_error("overloaded")),
            ]
        );
    }

    #[test]
    fn round_trips_through_json() {
        let script = Script {
            steps: vec![
                Turn::new()
                    .with_reasoning("r")
                    .with_text("t")
                    .with_tool_call("call_9", "write", json!({"path": "b", "content": "x"}))
                    .with_tool_call("call_10", "bad", "{\"unterminated")
                    .with_tool_call("call_11", "str", "\"just a string\"")
                    .usage(1, 2, 3)
                    .delay_ms_per_chunk(5)
                    .into(),
                Fault::status(503).message("busy").into(),
                Fault::drop_after(Turn::text("a"), 2).into(),
            ],
            ..Script::default()
        };
        let text = serde_json::to_string(&script.steps).unwrap();
        let back = Script::from_json(&text).unwrap();
        assert_eq!(back, script);
        let wrapped = serde_json::to_string(&script).unwrap();
        assert!(!wrapped.contains("rules"), "{wrapped}");
        assert_eq!(Script::from_json(&wrapped).unwrap(), script);

        let with_rules = Script {
            rules: vec![
                ScriptRule::new(
                    When::any().tool_offered("read").last_is_tool_result(false),
                    Turn::tool_call("c1", "read", json!({"path": "a"})),
                ),
                ScriptRule::new(When::any(), Fault::status(500)),
            ],
            ..script
        };
        let wrapped = serde_json::to_string(&with_rules).unwrap();
        assert_eq!(Script::from_json(&wrapped).unwrap(), with_rules);
    }

    #[test]
    fn rules_parse_without_steps() {
        let script = Script::from_json(
            r#"{"rules": [
                {"when": {"tool_offered": "read", "last_is_tool_result": false},
                 "step": {"tool_call": {"name": "read", "arguments": {"path": "hello.txt"}}}},
                {"when": {"last_is_tool_result": true}, "step": {"text": "done"}}
            ]}"#,
        )
        .unwrap();
        assert!(script.steps.is_empty());
        assert_eq!(script.rules.len(), 2);
        assert_eq!(
            script.rules[1],
            ScriptRule::new(When::any().last_is_tool_result(true), Turn::text("done"))
        );
        let err = Script::from_json(r#"{"rules": [{"step": "ok"}, {"when": {}, "stpe": "x"}]}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("rule 2") && err.contains("stpe"), "{err}");
    }

    #[test]
    fn errors_name_the_problem() {
        let err = Script::from_json(r#"["ok", {"txt": "typo"}]"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("step 2") && err.contains("txt"), "{err}");
        let err = Script::from_json(r#"[{"fault": "status"}]"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("status"), "{err}");
        let err = Script::from_json(r#"[{"parts": [], "text": "x"}]"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not both"), "{err}");
        assert!(Script::from_json("3").is_err());
    }
}
