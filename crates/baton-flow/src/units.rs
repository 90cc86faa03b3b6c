//! The units file: what a Flow is asked to do, checked in full before anything touches git.
//!
//! A units file is JSON or TOML. In JSON it is either a list of units or `{"units": [...]}`; in
//! TOML it is a sequence of `[[units]]` tables. Each unit is
//! `{id, name, task, model_class?, validation: [{command, args}], review?}`.
//! Every problem is reported with the path of the field at fault (`units[2].validation[0].command`)
//! and what to do about it.

use std::collections::BTreeMap;
use std::path::Path;

use baton_protocol::ModelClass;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Most units in one Flow.
pub const MAX_UNITS: usize = 8;
/// Longest unit id, in bytes (ids are ASCII).
pub const MAX_ID_LEN: usize = baton_state::IdKind::Unit.max_len();
/// Longest unit name, in characters.
pub const MAX_NAME_CHARS: usize = 80;
/// Most validation commands of one unit.
pub const MAX_VALIDATION: usize = 16;
/// Longest task or review text, in bytes.
pub const MAX_TEXT_BYTES: usize = 64 * 1024;

pub use baton_exec::guarded::ValidationCommand;

/// One independent piece of work. Its JSON Schema is the unit schema the `delegate_flow` tool
/// offers; [`parse_units`] is the parser that holds a unit to it (and to the limits below).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct UnitSpec {
    #[schemars(description = format!(
        "Unique id: ASCII letters, digits, '-' and '_', at most {MAX_ID_LEN} characters; names the unit's worktree and branch."
    ))]
    pub id: String,
    /// A short human-readable name.
    pub name: String,
    /// The complete, self-contained task for the implementer.
    pub task: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "baton_tool::args::model_class_schema")]
    pub model_class: Option<ModelClass>,
    /// Commands run directly (no shell) in the unit's worktree; all must exit 0.
    #[schemars(length(min = 1))]
    pub validation: Vec<ValidationCommand>,
    /// Optional judgment criterion for a reviewer; only for what validation cannot check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<String>,
}

/// A units file or tool argument that cannot be accepted. `field` is where the problem is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{field}`: {message}")]
pub struct InputError {
    pub field: String,
    pub message: String,
}

fn bad(field: impl Into<String>, message: impl Into<String>) -> InputError {
    InputError {
        field: field.into(),
        message: message.into(),
    }
}

const UNIT_FIELDS: &str = "id, name, task, model_class, validation, review";

/// Reads and checks a units file (`.toml` is TOML, anything else JSON).
pub fn read_units_file(path: &Path) -> Result<Vec<UnitSpec>, InputError> {
    let shown = path.display().to_string();
    let text = baton_text::input::read_input(path)
        .map_err(|e| bad(&shown, format!("cannot read the units file: {e}")))?;
    let value = if path.extension().is_some_and(|e| e == "toml") {
        let t: toml::Value =
            toml::from_str(&text).map_err(|e| bad(&shown, format!("not valid TOML: {e}")))?;
        serde_json::to_value(t).map_err(|e| bad(&shown, e.to_string()))?
    } else {
        serde_json::from_str(&text).map_err(|e| {
            bad(
                &shown,
                format!("not valid JSON: {e} (a `.toml` file is read as TOML)"),
            )
        })?
    };
    parse_units(&value)
}

/// Checks a units value: a list of units, or an object whose only key is `units`.
pub fn parse_units(value: &Value) -> Result<Vec<UnitSpec>, InputError> {
    let list = match value {
        Value::Array(list) => list,
        Value::Object(obj) => {
            if let Some(k) = obj.keys().find(|k| k.as_str() != "units") {
                return Err(bad(
                    k.as_str(),
                    "unknown top-level field; a units file holds only `units`",
                ));
            }
            match obj.get("units") {
                Some(Value::Array(list)) => list,
                Some(_) => return Err(bad("units", "must be a list of units")),
                None => {
                    return Err(bad(
                        "units",
                        "missing: give a list of 1 to 8 units (in TOML, [[units]] tables)",
                    ))
                }
            }
        }
        _ => {
            return Err(bad(
                "units",
                "expected a list of units or an object {\"units\": [...]}",
            ))
        }
    };
    if list.is_empty() || list.len() > MAX_UNITS {
        return Err(bad(
            "units",
            format!(
                "has {} units; a Flow takes 1 to {MAX_UNITS}. Split larger work into several Flows",
                list.len()
            ),
        ));
    }
    let mut units = Vec::with_capacity(list.len());
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for (i, v) in list.iter().enumerate() {
        let at = format!("units[{i}]");
        let unit = parse_unit(v, &at)?;
        if let Some(first) = seen.insert(unit.id.to_ascii_lowercase(), i) {
            return Err(bad(
                format!("{at}.id"),
                format!(
                    "`{}` is also the id of units[{first}]; ids must be unique (ignoring case)",
                    unit.id
                ),
            ));
        }
        units.push(unit);
    }
    Ok(units)
}

fn parse_unit(v: &Value, at: &str) -> Result<UnitSpec, InputError> {
    let obj = v
        .as_object()
        .ok_or_else(|| bad(at, format!("a unit must be an object with {UNIT_FIELDS}")))?;
    for k in obj.keys() {
        if !matches!(
            k.as_str(),
            "id" | "name" | "task" | "model_class" | "modelClass" | "validation" | "review"
        ) {
            return Err(bad(
                format!("{at}.{k}"),
                format!("unknown field; a unit has {UNIT_FIELDS}"),
            ));
        }
    }
    if obj.contains_key("model_class") && obj.contains_key("modelClass") {
        return Err(bad(
            format!("{at}.modelClass"),
            "give the model class once, as `model_class`",
        ));
    }

    let id = required_string(obj, at, "id")?;
    check_id(&id).map_err(|m| bad(format!("{at}.id"), m))?;

    let name = required_string(obj, at, "name")?;
    if name.trim().is_empty() {
        return Err(bad(
            format!("{at}.name"),
            "is empty: give the unit a short name",
        ));
    }
    let n = name.chars().count();
    if n > MAX_NAME_CHARS {
        return Err(bad(
            format!("{at}.name"),
            format!("has {n} characters; at most {MAX_NAME_CHARS}"),
        ));
    }
    if name.chars().any(is_control) {
        return Err(bad(
            format!("{at}.name"),
            "must not contain control characters",
        ));
    }

    let task = required_string(obj, at, "task")?;
    if task.trim().is_empty() {
        return Err(bad(
            format!("{at}.task"),
            "is empty: say what the implementer should do",
        ));
    }
    if task.len() > MAX_TEXT_BYTES {
        return Err(bad(
            format!("{at}.task"),
            format!("is {} bytes; at most {MAX_TEXT_BYTES}", task.len()),
        ));
    }

    let class_key = if obj.contains_key("modelClass") {
        "modelClass"
    } else {
        "model_class"
    };
    let model_class = match obj.get(class_key) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.parse::<ModelClass>().map_err(|_| {
            bad(
                format!("{at}.{class_key}"),
                format!("`{s}` is not a model class; use fast, balanced, frontier or fav"),
            )
        })?),
        Some(_) => {
            return Err(bad(
                format!("{at}.{class_key}"),
                "must be a string: fast, balanced, frontier or fav",
            ))
        }
    };

    let validation = match obj.get("validation") {
        None | Some(Value::Null) => {
            return Err(bad(
                format!("{at}.validation"),
                "missing: give at least one command, e.g. [{\"command\": \"cargo\", \"args\": [\"test\"]}]",
            ))
        }
        Some(Value::Array(list)) => list,
        Some(_) => {
            return Err(bad(
                format!("{at}.validation"),
                "must be a list of {command, args} objects",
            ))
        }
    };
    if validation.is_empty() {
        return Err(bad(
            format!("{at}.validation"),
            "is empty: a unit needs at least one validation command {command, args}",
        ));
    }
    if validation.len() > MAX_VALIDATION {
        return Err(bad(
            format!("{at}.validation"),
            format!(
                "has {} commands; at most {MAX_VALIDATION}",
                validation.len()
            ),
        ));
    }
    let validation = validation
        .iter()
        .enumerate()
        .map(|(j, c)| parse_command(c, &format!("{at}.validation[{j}]")))
        .collect::<Result<Vec<_>, _>>()?;

    let review = match obj.get("review") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.trim().is_empty() => {
            return Err(bad(
                format!("{at}.review"),
                "is empty: state the criterion the reviewer judges, or leave `review` out",
            ))
        }
        Some(Value::String(s)) if s.len() > MAX_TEXT_BYTES => {
            return Err(bad(
                format!("{at}.review"),
                format!("is {} bytes; at most {MAX_TEXT_BYTES}", s.len()),
            ))
        }
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            return Err(bad(
                format!("{at}.review"),
                "must be text: the criterion the reviewer judges",
            ))
        }
    };

    Ok(UnitSpec {
        id,
        name,
        task,
        model_class,
        validation,
        review,
    })
}

fn parse_command(v: &Value, at: &str) -> Result<ValidationCommand, InputError> {
    let obj = v.as_object().ok_or_else(|| {
        bad(
            at,
            "must be an object {command, args}; commands run directly, not through a shell",
        )
    })?;
    for k in obj.keys() {
        if !matches!(k.as_str(), "command" | "args") {
            return Err(bad(
                format!("{at}.{k}"),
                "unknown field; a validation command has command and args",
            ));
        }
    }
    let command = required_string(obj, at, "command")?;
    if command.trim().is_empty() {
        return Err(bad(
            format!("{at}.command"),
            "is empty: name the program to run",
        ));
    }
    if command.contains('\0') {
        return Err(bad(format!("{at}.command"), "must not contain NUL"));
    }
    let args = match obj.get("args") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(list)) => list
            .iter()
            .enumerate()
            .map(|(k, a)| match a {
                Value::String(s) if !s.contains('\0') => Ok(s.clone()),
                Value::String(_) => Err(bad(format!("{at}.args[{k}]"), "must not contain NUL")),
                _ => Err(bad(
                    format!("{at}.args[{k}]"),
                    "must be a string (arguments are passed as written, without a shell)",
                )),
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(_) => return Err(bad(format!("{at}.args"), "must be a list of strings")),
    };
    Ok(ValidationCommand { command, args })
}

fn required_string(obj: &Map<String, Value>, at: &str, key: &str) -> Result<String, InputError> {
    match obj.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        None | Some(Value::Null) => Err(bad(format!("{at}.{key}"), "missing")),
        Some(_) => Err(bad(format!("{at}.{key}"), "must be a string")),
    }
}

use baton_text::is_control;

/// Unit ids become part of a branch and a directory name: the rules of
/// [`baton_state::IdKind::Unit`] (ASCII letters, digits, `-` and `_`, starting with a letter or
/// digit, at most [`MAX_ID_LEN`] bytes).
pub fn check_id(id: &str) -> Result<(), String> {
    baton_state::check_id(baton_state::IdKind::Unit, id).map_err(|e| match e {
        baton_state::IdError::Empty { .. } => {
            "is empty: give the unit a short id such as `parser-fix`".to_string()
        }
        other => other.to_string(),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn unit(id: &str) -> Value {
        json!({"id": id, "name": "A unit", "task": "do it", "validation": [{"command": "true"}]})
    }

    #[test]
    fn accepts_both_shapes_and_the_camel_case_class() {
        let list = parse_units(&json!([unit("a"), unit("b")])).unwrap();
        assert_eq!(list.len(), 2);
        let mut u = unit("a");
        u["modelClass"] = json!("fast");
        u["review"] = json!("public API unchanged");
        u["validation"] = json!([{"command": "cargo", "args": ["test", "-q"]}]);
        let list = parse_units(&json!({"units": [u]})).unwrap();
        assert_eq!(
            list[0],
            UnitSpec {
                id: "a".into(),
                name: "A unit".into(),
                task: "do it".into(),
                model_class: Some(ModelClass::Fast),
                validation: vec![ValidationCommand {
                    command: "cargo".into(),
                    args: vec!["test".into(), "-q".into()]
                }],
                review: Some("public API unchanged".into()),
            }
        );
    }

    #[test]
    fn every_refusal_names_its_field() {
        let nine: Vec<Value> = (0..9).map(|i| unit(&format!("u{i}"))).collect();
        let cases: Vec<(Value, &str)> = vec![
            (json!([]), "units"),
            (Value::Array(nine), "units"),
            (json!({"units": [], "extra": 1}), "extra"),
            (json!([json!(3)]), "units[0]"),
            (json!([unit("a"), unit("A")]), "units[1].id"),
            (json!([unit("")]), "units[0].id"),
            (json!([unit("has space")]), "units[0].id"),
            (json!([unit("-x")]), "units[0].id"),
            (json!([unit(&"x".repeat(41))]), "units[0].id"),
            (
                json!([{"id": "a", "task": "t", "validation": [{"command": "true"}]}]),
                "units[0].name",
            ),
            (
                json!([{"id": "a", "name": "n", "task": "  ", "validation": [{"command": "true"}]}]),
                "units[0].task",
            ),
            (
                json!([{"id": "a", "name": "n", "task": "t"}]),
                "units[0].validation",
            ),
            (
                json!([{"id": "a", "name": "n", "task": "t", "validation": []}]),
                "units[0].validation",
            ),
            (
                json!([{"id": "a", "name": "n", "task": "t", "validation": ["cargo test"]}]),
                "units[0].validation[0]",
            ),
            (
                json!([{"id": "a", "name": "n", "task": "t", "validation": [{"command": ""}]}]),
                "units[0].validation[0].command",
            ),
            (
                json!([{"id": "a", "name": "n", "task": "t", "validation": [{"command": "x", "args": [1]}]}]),
                "units[0].validation[0].args[0]",
            ),
            (
                json!([{"id": "a", "name": "n", "task": "t", "validation": [{"command": "x", "shell": true}]}]),
                "units[0].validation[0].shell",
            ),
            (
                json!([{"id": "a", "name": "n", "task": "t", "validation": [{"command": "x"}], "review": " "}]),
                "units[0].review",
            ),
            (
                json!([{"id": "a", "name": "n", "task": "t", "validation": [{"command": "x"}], "model_class": "huge"}]),
                "units[0].model_class",
            ),
            (
                json!([{"id": "a", "name": "n", "task": "t", "validation": [{"command": "x"}], "colour": "red"}]),
                "units[0].colour",
            ),
        ];
        for (value, field) in cases {
            let e = parse_units(&value).unwrap_err();
            assert_eq!(e.field, field, "{value}: {e}");
        }
    }

    #[test]
    fn toml_tables_parse() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("units.toml");
        std::fs::write(
            &path,
            "[[units]]\nid = \"a\"\nname = \"A\"\ntask = \"do\"\nvalidation = [{ command = \"true\" }]\n",
        )
        .unwrap();
        let units = read_units_file(&path).unwrap();
        assert_eq!(units[0].validation[0].args, Vec::<String>::new());
        std::fs::write(&path, "[[units]]\nid = 3\n").unwrap();
        assert_eq!(read_units_file(&path).unwrap_err().field, "units[0].id");
    }

    #[test]
    fn display_quotes_arguments() {
        let c = ValidationCommand {
            command: "sh".into(),
            args: vec!["-c".into(), "echo 'hi'".into()],
        };
        assert_eq!(c.display(), r"sh -c 'echo '\''hi'\'''");
    }
}
