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

use std::borrow::Cow;
use std::fmt;

use baton_protocol::ModelClass;
use schemars::generate::SchemaSettings;
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
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
    strip_null(&mut value);
    // The tool says what it does in its own description; the struct's doc is for Rust readers.
    if let Value::Object(map) = &mut value {
        map.remove("description");
    }
    value
}

/// Optional fields are told apart by being absent from `required`; a `null` alternative on top
/// (schemars' way of describing `Option`) only confuses some providers' schema checkers, and the
/// parsers read `null` as absent anyway.
fn strip_null(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Array(types)) = map.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let only = types.remove(0);
                    map.insert("type".into(), only);
                }
            }
            for key in ["anyOf", "oneOf"] {
                let single = match map.get_mut(key) {
                    Some(Value::Array(alts)) => {
                        alts.retain(|a| a.get("type").and_then(Value::as_str) != Some("null"));
                        (alts.len() == 1).then(|| alts.remove(0))
                    }
                    _ => None,
                };
                if let Some(Value::Object(only)) = single {
                    map.remove(key);
                    for (k, v) in only {
                        map.entry(k).or_insert(v);
                    }
                }
            }
            map.values_mut().for_each(strip_null);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_null),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
    }
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

// ------------------------------------------------------------------------------------------------
// Arguments from a model

/// An integer argument of at least `MIN`. Models write numbers loosely, so `3`, `3.0` and `"3"`
/// are all 3; `1.5`, `-1` and `"three"` are refused. Its schema is `{"type": "integer",
/// "minimum": MIN}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count<const MIN: u64>(pub u64);

impl<'de, const MIN: u64> Deserialize<'de> for Count<MIN> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        let n = match &value {
            Value::Number(n) => n.as_u64().or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 9.0e15)
                    .map(|f| f as u64)
            }),
            Value::String(s) => s.trim().parse::<u64>().ok(),
            _ => None,
        };
        match n {
            Some(n) if n >= MIN => Ok(Count(n)),
            _ => Err(serde::de::Error::custom(format!(
                "expected {}",
                Self::want()
            ))),
        }
    }
}

impl<const MIN: u64> Count<MIN> {
    fn want() -> String {
        match MIN {
            0 => "a non-negative integer".to_string(),
            1 => "a positive integer".to_string(),
            n => format!("an integer of at least {n}"),
        }
    }
}

impl<const MIN: u64> JsonSchema for Count<MIN> {
    fn schema_name() -> Cow<'static, str> {
        format!("Count{MIN}").into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "integer", "minimum": MIN})
    }

    fn inline_schema() -> bool {
        true
    }
}

/// A positive number of seconds, fractions allowed; `"2.5"` is read as 2.5.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Seconds(pub f64);

impl<'de> Deserialize<'de> for Seconds {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        let n = match &value {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.trim().parse::<f64>().ok(),
            _ => None,
        };
        match n {
            Some(n) if n.is_finite() && n > 0.0 => Ok(Seconds(n)),
            _ => Err(serde::de::Error::custom(
                "expected a positive number of seconds",
            )),
        }
    }
}

impl JsonSchema for Seconds {
    fn schema_name() -> Cow<'static, str> {
        "Seconds".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "number", "exclusiveMinimum": 0})
    }

    fn inline_schema() -> bool {
        true
    }
}

/// A boolean; the strings `"true"` and `"false"` (any case) are read as booleans too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Flag(pub bool);

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::Bool(b) => Ok(Flag(b)),
            Value::String(s) if s.eq_ignore_ascii_case("true") => Ok(Flag(true)),
            Value::String(s) if s.eq_ignore_ascii_case("false") => Ok(Flag(false)),
            _ => Err(serde::de::Error::custom(
                "expected a boolean (true or false)",
            )),
        }
    }
}

impl JsonSchema for Flag {
    fn schema_name() -> Cow<'static, str> {
        "Flag".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "boolean"})
    }

    fn inline_schema() -> bool {
        true
    }
}

/// The schema of a model class field (`#[schemars(schema_with = "…")]`): a string, one of
/// [`ModelClass::ALL`], so the offered values are the parsed ones.
pub fn model_class_schema(_: &mut SchemaGenerator) -> Schema {
    let names: Vec<&str> = ModelClass::ALL.iter().map(|c| c.as_str()).collect();
    json_schema!({"type": "string", "enum": names})
}

/// Parses the arguments of a call to tool `tool` into `T`, with a message the model can act on:
/// it names the field at fault, what it must be (read from `T`'s schema), what was sent, and the
/// expected shape `usage`. A required field that is missing is reported before anything else;
/// `null` counts as absent.
pub fn parse_tool_args<T: DeserializeOwned + JsonSchema>(
    tool: &str,
    usage: &str,
    value: Value,
) -> Result<T, String> {
    let map = arguments_object(value).map_err(|e| {
        format!(
            "invalid arguments for `{tool}`: expected a JSON object like {usage}, {}",
            e.message.trim_start_matches("expected a JSON object, ")
        )
    })?;
    let map: serde_json::Map<String, Value> =
        map.into_iter().filter(|(_, v)| !v.is_null()).collect();
    let object = Value::Object(map);
    // The schema is only built to explain a failure: a call that parses never pays for it.
    let error = match from_value::<T>(&object) {
        Ok(args) => return Ok(args),
        Err(e) => e,
    };
    let map = object.as_object().cloned().unwrap_or_default();
    let schema = schema_for::<T>();
    let want = |field: &str| describe_schema(&schema["properties"][field]);
    let required = schema["required"].as_array().cloned().unwrap_or_default();
    if let Some(missing) = required
        .iter()
        .filter_map(Value::as_str)
        .find(|f| !map.contains_key(*f))
    {
        let mut msg = format!(
            "invalid arguments for `{tool}`: `{missing}` is required and must be {}; expected shape: {usage}",
            want(missing)
        );
        if !map.is_empty() {
            let keys: Vec<&str> = map.keys().map(String::as_str).collect();
            msg.push_str(&format!(" (fields given: {})", keys.join(", ")));
        }
        return Err(msg);
    }
    let field = error.path.split(['.', '[']).next().unwrap_or_default();
    let known = schema["properties"].get(field).is_some();
    Err(match map.get(field).filter(|_| known) {
            Some(got) => format!(
                "invalid arguments for `{tool}`: `{field}` must be {}, got {} ({}); expected shape: {usage}",
                want(field),
                kind(got),
                preview(got)
            ),
            None => format!(
                "invalid arguments for `{tool}`: {}; expected shape: {usage}",
                error.message
            ),
    })
}

/// What a value of `schema` is, in words: `a string`, `a positive integer`, ….
fn describe_schema(schema: &Value) -> String {
    if let Some(options) = schema["enum"].as_array() {
        let options: Vec<String> = options.iter().map(|o| o.to_string()).collect();
        return format!("one of {}", options.join(", "));
    }
    let minimum = schema["minimum"].as_u64();
    match schema["type"].as_str() {
        Some("string") => "a string".into(),
        Some("boolean") => "a boolean (true or false)".into(),
        Some("integer") => match minimum {
            Some(0) | None => "a non-negative integer".into(),
            Some(1) => "a positive integer".into(),
            Some(n) => format!("an integer of at least {n}"),
        },
        Some("number") if schema.get("exclusiveMinimum").is_some() => {
            "a positive number of seconds".into()
        }
        Some("number") => "a number".into(),
        Some("array") => "an array".into(),
        Some("object") => "an object".into(),
        _ => "a valid value".into(),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// At most 60 characters of the JSON text of `v`.
fn preview(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() > 60 {
        let cut: String = text.chars().take(60).collect();
        format!("{cut}…")
    } else {
        text
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

    const USAGE: &str = r#"{"path": "src/lib.rs", "limit": 10}"#;

    #[derive(Debug, PartialEq, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct ReadLike {
        path: String,
        limit: Option<Count<1>>,
        context: Option<Count<0>>,
        all: Option<Flag>,
        timeout: Option<Seconds>,
    }

    #[test]
    fn tool_args_accept_objects_and_encoded_objects_and_read_null_as_absent() {
        let a: ReadLike =
            parse_tool_args("read", USAGE, json!({"path": "x", "limit": null})).unwrap();
        assert_eq!((a.path.as_str(), a.limit), ("x", None));
        let a: ReadLike = parse_tool_args("read", USAGE, json!("{\"path\": \"y\"}")).unwrap();
        assert_eq!(a.path, "y");
        let err = parse_tool_args::<ReadLike>("read", USAGE, json!([1])).unwrap_err();
        assert_eq!(
            err,
            format!(
                "invalid arguments for `read`: expected a JSON object like {USAGE}, got an array"
            )
        );
    }

    #[test]
    fn tool_arg_errors_name_the_field_what_it_must_be_and_the_shape() {
        let err =
            parse_tool_args::<ReadLike>("read", USAGE, json!({"file_path": "x", "limit": "ten"}))
                .unwrap_err();
        assert!(
            err.contains("`path` is required and must be a string"),
            "{err}"
        );
        assert!(err.contains("(fields given: file_path, limit)"), "{err}");
        assert!(err.contains(USAGE), "{err}");
        let err = parse_tool_args::<ReadLike>("read", USAGE, json!({"path": "x", "limit": "ten"}))
            .unwrap_err();
        assert!(
            err.contains("`limit` must be a positive integer, got a string (\"ten\")"),
            "{err}"
        );
        let err = parse_tool_args::<ReadLike>("read", USAGE, json!({"path": 7})).unwrap_err();
        assert!(
            err.contains("`path` must be a string, got a number (7)"),
            "{err}"
        );
        let err = parse_tool_args::<ReadLike>("read", USAGE, json!({"path": "x", "colour": 1}))
            .unwrap_err();
        assert!(err.contains("unknown field `colour`"), "{err}");
        assert!(err.contains("expected one of `path`, `limit`"), "{err}");
    }

    #[test]
    fn tool_args_read_numbers_and_booleans_loosely() {
        let a: ReadLike = parse_tool_args(
            "t",
            USAGE,
            json!({"path": "p", "limit": 4.0, "context": "0", "all": "TRUE", "timeout": "1.5"}),
        )
        .unwrap();
        assert_eq!(a.limit, Some(Count(4)));
        assert_eq!(a.context, Some(Count(0)));
        assert_eq!(a.all, Some(Flag(true)));
        assert_eq!(a.timeout, Some(Seconds(1.5)));
        for bad in [
            json!({"path": "p", "limit": 0}),
            json!({"path": "p", "limit": 1.5}),
            json!({"path": "p", "context": -1}),
            json!({"path": "p", "all": "yes"}),
            json!({"path": "p", "timeout": 0}),
        ] {
            assert!(
                parse_tool_args::<ReadLike>("t", USAGE, bad.clone()).is_err(),
                "{bad}"
            );
        }
        let schema = schema_for::<ReadLike>();
        assert_eq!(
            schema["properties"]["limit"],
            json!({"type": "integer", "minimum": 1})
        );
        assert_eq!(schema["properties"]["all"], json!({"type": "boolean"}));
        assert_eq!(
            schema["properties"]["timeout"],
            json!({"type": "number", "exclusiveMinimum": 0})
        );
    }
}
