//! Typed tool arguments: one struct per tool gives both the parser and the JSON Schema.
//!
//! ```ignore
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! #[serde(deny_unknown_fields)]
//! struct ReadArgs {
//!     /// File to read, relative to the working directory.
//!     path: String,
//!     offset: Option<u64>,
//! }
//! let schema = schema_for::<ReadArgs>();          // offered to the model
//! let args: ReadArgs = parse_args(value)?;         // what the model sent
//! ```

use std::fmt;

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Arguments that do not fit the tool's struct: where, and what was wrong there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ArgError {
    /// The path of the field at fault (`tasks[2].role`), empty for the arguments as a whole.
    pub path: String,
    /// What was wrong, as serde phrases it (`missing field `role``, `invalid type: …`).
    pub message: String,
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "`{}`: {}", self.path, self.message)
        }
    }
}

/// What a model sent, as the JSON object a tool's struct is parsed from: an object as is, the
/// JSON text of an object (some providers hand arguments over still encoded), `null` as `{}`.
pub fn arguments_object(value: Value) -> Result<serde_json::Map<String, Value>, ArgError> {
    let describe = |v: &Value| match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string that is not the JSON text of an object",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    match value {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(serde_json::Map::new()),
        Value::String(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(map)) => Ok(map),
            Ok(_) | Err(_) => Err(ArgError {
                path: String::new(),
                message: format!(
                    "expected a JSON object, got {}",
                    describe(&Value::String(text))
                ),
            }),
        },
        other => Err(ArgError {
            path: String::new(),
            message: format!("expected a JSON object, got {}", describe(&other)),
        }),
    }
}

/// Parses `value` (see [`arguments_object`]) into `T`, naming the field at fault on failure.
pub fn parse_args<T: DeserializeOwned>(value: Value) -> Result<T, ArgError> {
    let object = Value::Object(arguments_object(value)?);
    from_value(&object)
}

/// Parses any JSON value into `T` with the path of the field at fault on failure (for requests
/// that are not tool calls: a units file, a tasks file).
pub fn from_value<T: DeserializeOwned>(value: &Value) -> Result<T, ArgError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        ArgError {
            path: if path == "." { String::new() } else { path },
            message: e.into_inner().to_string(),
        }
    })
}

/// The JSON Schema of `T` as tools offer it to a model: one self-contained object schema with
/// every subschema inlined (no `$ref`, `$defs` or `$schema`, which some providers refuse) and no
/// `title`. Doc comments on fields become their `description`s.
pub fn schema_for<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let mut value = generator.into_root_schema_for::<T>().to_value();
    strip_titles(&mut value);
    value
}

fn strip_titles(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("title");
            map.remove("$schema");
            map.values_mut().for_each(strip_titles);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_titles),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use pretty_assertions::assert_eq;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, PartialEq, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Entry {
        /// Who runs it.
        role: String,
        mode: Option<Mode>,
    }

    #[derive(Debug, PartialEq, Deserialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    enum Mode {
        Fast,
        Slow,
    }

    #[derive(Debug, PartialEq, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Request {
        tasks: Vec<Entry>,
    }

    #[test]
    fn errors_name_the_field_path() {
        let err =
            parse_args::<Request>(json!({"tasks": [{"role": "a"}, {"mode": "fast"}]})).unwrap_err();
        assert_eq!(err.path, "tasks[1]");
        assert!(err.message.contains("missing field `role`"), "{err}");
        let err = parse_args::<Request>(json!({"tasks": [{"role": 3}]})).unwrap_err();
        assert_eq!(err.path, "tasks[0].role");
        let err = parse_args::<Request>(json!({"tasks": [], "extra": 1})).unwrap_err();
        assert!(err.message.contains("unknown field `extra`"), "{err}");
        assert_eq!(err.path, "extra");
        assert_eq!(err.to_string(), format!("`extra`: {}", err.message));
    }

    #[test]
    fn encoded_and_null_arguments_are_objects() {
        assert_eq!(
            parse_args::<Request>(json!("{\"tasks\": []}")).unwrap(),
            Request { tasks: vec![] }
        );
        assert!(parse_args::<Request>(Value::Null)
            .unwrap_err()
            .message
            .contains("missing field `tasks`"));
        assert_eq!(
            parse_args::<Request>(json!([1])).unwrap_err().message,
            "expected a JSON object, got an array"
        );
    }

    #[test]
    fn schema_is_inline_and_follows_the_struct() {
        let schema = schema_for::<Request>();
        let text = schema.to_string();
        assert!(!text.contains("$ref") && !text.contains("$defs"), "{text}");
        assert!(
            !text.contains("\"title\"") && !text.contains("$schema"),
            "{text}"
        );
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["required"], json!(["tasks"]));
        assert_eq!(schema["additionalProperties"], json!(false));
        let entry = &schema["properties"]["tasks"]["items"];
        assert_eq!(entry["required"], json!(["role"]));
        assert_eq!(entry["properties"]["role"]["description"], "Who runs it.");
        let text = entry["properties"]["mode"].to_string();
        assert!(
            text.contains("\"fast\"") && text.contains("\"slow\""),
            "{text}"
        );
    }
}
