//! The `delegate_task` request: its three shapes and the checks every entry passes before
//! anything launches.

use baton_protocol::{ModelClass, Route, ThinkingLevel};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::launch::RouteChoice;

/// Most entries in one parallel or chain call.
pub const MAX_ENTRIES: usize = 8;
/// Longest entry name, in characters (exclusive).
pub const MAX_NAME_CHARS: usize = 30;

/// One delegation as the caller wrote it. Its JSON Schema is the entry schema `delegate_task`
/// offers (the doc comments of the fields are their descriptions).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskEntry {
    /// Role name (see the roles available: implementer, reviewer, scout, or project roles).
    pub role: String,
    /// Short label for this delegation, under 30 characters.
    pub name: String,
    /// The complete, self-contained task for the child.
    pub task: String,
    /// Explicit route provider/model[:thinking]; only when the user asked for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, alias = "modelClass", skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "baton_tool::args::model_class_schema")]
    pub model_class: Option<ModelClass>,
    /// Only when the user asked for it.
    #[serde(
        default,
        deserialize_with = "thinking_level",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(schema_with = "thinking_schema")]
    pub thinking: Option<ThinkingLevel>,
}

impl TaskEntry {
    /// The entry's choice of model, for [`super::child_route`].
    pub fn route_choice(&self) -> RouteChoice {
        RouteChoice {
            model: self.model.clone(),
            model_class: self.model_class,
            thinking: self.thinking,
        }
    }
}

/// The thinking levels, and `max` for `xhigh` ([`parse_thinking`]).
fn thinking_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut names: Vec<&str> = ThinkingLevel::ALL.iter().map(|l| l.as_str()).collect();
    names.push("max");
    schemars::json_schema!({"type": "string", "enum": names})
}

fn thinking_level<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ThinkingLevel>, D::Error> {
    let Some(text) = Option::<String>::deserialize(d)? else {
        return Ok(None);
    };
    parse_thinking(&text)
        .map(Some)
        .map_err(serde::de::Error::custom)
}

baton_protocol::closed_set! {
    pub enum Mode ("mode") {
        Single = "single",
        Parallel = "parallel",
        Chain = "chain",
    }
}

/// A validated request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DelegateRequest {
    pub mode: Mode,
    pub entries: Vec<TaskEntry>,
    /// Run detached; the caller gets an id at once.
    #[serde(default)]
    pub background: bool,
}

/// Parses and validates the `delegate_task` arguments: exactly one of single fields, `tasks` or
/// `chain`. Errors name the field and the fix.
pub fn parse_request(v: &Value) -> Result<DelegateRequest, String> {
    let obj = v.as_object().ok_or(
        "delegate_task takes a JSON object: {role, name, task}, {tasks: [...]} or {chain: [...]}",
    )?;
    let background = match obj.get("background") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err("`background` must be true or false".into()),
    };
    // The fields of one entry, which make the single shape when given at the top.
    const SINGLE: [&str; 7] = [
        "role",
        "name",
        "task",
        "model",
        "model_class",
        "modelClass",
        "thinking",
    ];
    let has_single = SINGLE.iter().any(|k| obj.contains_key(*k));
    let shapes = [
        has_single,
        obj.contains_key("tasks"),
        obj.contains_key("chain"),
    ];
    if shapes.iter().filter(|s| **s).count() != 1 {
        return Err("use exactly one shape: single fields {role, name, task}, or {tasks: [...]} for parallel, or {chain: [...]} for a chain".into());
    }
    for k in obj.keys() {
        let known =
            SINGLE.contains(&k.as_str()) || ["tasks", "chain", "background"].contains(&k.as_str());
        if !known {
            return Err(format!(
                "unknown field `{k}`; fields are role, name, task, model, model_class, thinking (per entry), tasks or chain, background"
            ));
        }
    }
    let (mode, entries) = if has_single {
        let mut single = obj.clone();
        single.remove("background");
        (Mode::Single, vec![parse_entry(&Value::Object(single), "")?])
    } else {
        let (mode, key) = if obj.contains_key("tasks") {
            (Mode::Parallel, "tasks")
        } else {
            (Mode::Chain, "chain")
        };
        let list = obj
            .get(key)
            .and_then(Value::as_array)
            .ok_or_else(|| format!("`{key}` must be an array of 1 to {MAX_ENTRIES} entries"))?;
        if list.is_empty() || list.len() > MAX_ENTRIES {
            return Err(format!(
                "`{key}` has {} entries; it takes 1 to {MAX_ENTRIES}",
                list.len()
            ));
        }
        let entries = list
            .iter()
            .enumerate()
            .map(|(i, e)| parse_entry(e, &format!("{key}[{i}].")))
            .collect::<Result<Vec<_>, _>>()?;
        (mode, entries)
    };
    Ok(DelegateRequest {
        mode,
        entries,
        background,
    })
}

fn parse_entry(v: &Value, at: &str) -> Result<TaskEntry, String> {
    if let Some(obj) = v.as_object() {
        for nested in ["tasks", "chain", "background"] {
            if obj.contains_key(nested) {
                return Err(format!("`{at}{nested}` cannot be nested inside an entry"));
            }
        }
    }
    let e: TaskEntry = baton_tool::args::from_value(v).map_err(|err| {
        let field = format!("{at}{}", err.path);
        let field = field.trim_end_matches('.');
        format!(
            "`{}`: {} (an entry is {{role, name, task, model?, model_class?, thinking?}})",
            if field.is_empty() {
                "delegate_task"
            } else {
                field
            },
            err.message
        )
    })?;
    if e.role.trim().is_empty() {
        return Err(format!(
            "`{at}role` is empty: name a role (see `baton roles`)"
        ));
    }
    if e.task.trim().is_empty() {
        return Err(format!("`{at}task` is empty: say what the child should do"));
    }
    let n = e.name.chars().count();
    if n == 0 || n >= MAX_NAME_CHARS {
        return Err(format!(
            "`{at}name` must be 1 to {} characters (it has {n})",
            MAX_NAME_CHARS - 1
        ));
    }
    if baton_text::has_controls(&e.name) {
        return Err(format!("`{at}name` must not contain control characters"));
    }
    if let Some(m) = &e.model {
        m.parse::<Route>()
            .map_err(|err| format!("`{at}model`: {err}"))?;
    }
    Ok(e)
}

/// A name for an entry the caller did not name: the role and the first words of the task, as a
/// slug (`scout-find-where-sessions-are`): lowercase ASCII letters, digits and `-`, shorter than
/// [`MAX_NAME_CHARS`], cut at a word boundary.
pub fn derive_name(role: &str, task: &str) -> String {
    let words = |text: &str| -> Vec<String> {
        text.split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_ascii_lowercase)
            .collect()
    };
    let mut name = words(role).join("-");
    if name.is_empty() {
        name = "task".into();
    }
    name.truncate(MAX_NAME_CHARS / 2);
    let name = name.trim_end_matches('-').to_string();
    let mut out = name.clone();
    for w in words(task) {
        if out.len() + 1 + w.len() >= MAX_NAME_CHARS {
            break;
        }
        out.push('-');
        out.push_str(&w);
    }
    if out == name {
        out.push_str("-task");
    }
    out
}

fn parse_thinking(t: &str) -> Result<ThinkingLevel, String> {
    if t == "max" {
        return Ok(ThinkingLevel::Xhigh);
    }
    t.parse::<ThinkingLevel>().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn model_class_takes_flow_s_spelling_too() {
        let r = parse_request(
            &json!({"role": "scout", "name": "a", "task": "t", "modelClass": "fast"}),
        )
        .unwrap();
        assert_eq!(r.entries[0].model_class, Some(ModelClass::Fast));
        let r = parse_request(&json!({"tasks": [{"role": "scout", "name": "a", "task": "t", "modelClass": "balanced"}]}))
            .unwrap();
        assert_eq!(r.entries[0].model_class, Some(ModelClass::Balanced));
    }

    #[test]
    fn exactly_one_shape_is_accepted() {
        let single =
            parse_request(&json!({"role": "scout", "name": "look", "task": "map it"})).unwrap();
        assert_eq!(single.mode, Mode::Single);
        let par = parse_request(&json!({"tasks": [{"role": "scout", "name": "a", "task": "x"}, {"role": "scout", "name": "b", "task": "y"}], "background": true})).unwrap();
        assert_eq!(
            (par.mode, par.entries.len(), par.background),
            (Mode::Parallel, 2, true)
        );
        let chain = parse_request(
            &json!({"chain": [{"role": "scout", "name": "a", "task": "x {previous}"}]}),
        )
        .unwrap();
        assert_eq!(chain.mode, Mode::Chain);
        for (bad, expect) in [
            (
                json!({"role": "s", "name": "n", "task": "t", "tasks": []}),
                "exactly one shape",
            ),
            (json!({"tasks": []}), "1 to 8"),
            (
                json!({"tasks": (0..9).map(|i| json!({"role": "s", "name": format!("n{i}"), "task": "t"})).collect::<Vec<_>>()}),
                "9 entries",
            ),
            (json!({"role": "s", "task": "t"}), "name"),
            (
                json!({"role": "s", "name": "x".repeat(30), "task": "t"}),
                "1 to 29",
            ),
            (
                json!({"role": "s", "name": "a\u{7}b", "task": "t"}),
                "control",
            ),
            (
                json!({"role": "s", "name": "n", "task": " "}),
                "`task` is empty",
            ),
            (
                json!({"role": "s", "name": "n", "task": "t", "model_class": "huge"}),
                "model_class",
            ),
            (
                json!({"role": "s", "name": "n", "task": "t", "thinking": "lots"}),
                "thinking",
            ),
            (
                json!({"chain": [{"role": "s", "name": "n", "task": "t", "tasks": []}]}),
                "nested",
            ),
            (
                json!({"role": "s", "name": "n", "task": "t", "colour": 1}),
                "unknown field",
            ),
            (
                json!({"tasks": [{"role": "s", "name": "n", "task": "t", "extra": 1}]}),
                "tasks[0]",
            ),
        ] {
            let e = parse_request(&bad).unwrap_err();
            assert!(e.contains(expect), "{bad}: {e}");
        }
    }

    #[test]
    fn derived_names_are_slugs_of_the_role_and_the_first_words() {
        assert_eq!(
            derive_name(
                "scout",
                "Find where sessions are created and how they expire"
            ),
            "scout-find-where-sessions-are"
        );
        assert_eq!(
            derive_name("implementer", "Fix issue #42!"),
            "implementer-fix-issue-42"
        );
        assert_eq!(derive_name("scout", "¿¡ !!"), "scout-task");
        let long = derive_name("reviewer", "Supercalifragilisticexpialidocious word");
        assert_eq!(long, "reviewer-task");
        for n in [long, derive_name("a", &"x".repeat(100))] {
            assert!(n.len() < MAX_NAME_CHARS, "{n}");
        }
    }
}
