//! A small JSON Schema validator for the output schemas `baton mcp` declares (the subset
//! schemars writes: `type`, `properties`, `required`, `additionalProperties`, `items`, `$ref` to
//! `$defs`, `oneOf`, `anyOf`, `allOf`, `enum`, `const`, `minimum`), so that every tool result the
//! tests get is checked against its tool's declared schema without a heavy validator crate.

use serde_json::Value;

/// The places where `value` breaks `schema` (empty when it validates).
pub fn errors(schema: &Value, value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    check(schema, schema, value, "", &mut out);
    out
}

fn type_ok(t: &str, v: &Value) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        _ => false,
    }
}

fn check(root: &Value, schema: &Value, v: &Value, path: &str, out: &mut Vec<String>) {
    let s = match schema {
        Value::Bool(true) => return,
        Value::Bool(false) => return out.push(format!("{path}: no value is allowed")),
        Value::Object(s) => s,
        other => return out.push(format!("{path}: schema is not an object: {other}")),
    };
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let target = r
            .strip_prefix('#')
            .and_then(|p| root.pointer(p))
            .unwrap_or_else(|| panic!("unresolvable $ref {r}"));
        check(root, target, v, path, out);
    }
    match s.get("type") {
        Some(Value::String(t)) if !type_ok(t, v) => out.push(format!("{path}: not a {t}: {v}")),
        Some(Value::Array(ts)) if !ts.iter().any(|t| t.as_str().is_some_and(|t| type_ok(t, v))) => {
            out.push(format!("{path}: none of the types {ts:?}: {v}"))
        }
        _ => {}
    }
    if let Some(c) = s.get("const") {
        if c != v {
            out.push(format!("{path}: not {c}: {v}"));
        }
    }
    if let Some(Value::Array(e)) = s.get("enum") {
        if !e.contains(v) {
            out.push(format!("{path}: not one of {e:?}: {v}"));
        }
    }
    if let (Some(min), Some(n)) = (s.get("minimum").and_then(Value::as_f64), v.as_f64()) {
        if n < min {
            out.push(format!("{path}: {n} < {min}"));
        }
    }
    if let Value::Object(o) = v {
        let props = s.get("properties").and_then(Value::as_object);
        for req in s
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let key = req.as_str().unwrap_or_default();
            if !o.contains_key(key) {
                out.push(format!("{path}: missing `{key}`"));
            }
        }
        for (k, child) in o {
            let p = format!("{path}/{k}");
            match props.and_then(|p| p.get(k)) {
                Some(cs) => check(root, cs, child, &p, out),
                None => {
                    if let Some(extra) = s.get("additionalProperties") {
                        check(root, extra, child, &p, out);
                    }
                }
            }
        }
    }
    if let (Value::Array(items), Some(is)) = (v, s.get("items")) {
        for (i, item) in items.iter().enumerate() {
            check(root, is, item, &format!("{path}/{i}"), out);
        }
    }
    if let Some(Value::Array(all)) = s.get("allOf") {
        for a in all {
            check(root, a, v, path, out);
        }
    }
    let passing = |list: &Vec<Value>| {
        list.iter()
            .filter(|a| {
                let mut e = Vec::new();
                check(root, a, v, path, &mut e);
                e.is_empty()
            })
            .count()
    };
    if let Some(Value::Array(any)) = s.get("anyOf") {
        if passing(any) == 0 {
            out.push(format!("{path}: matches none of anyOf: {v}"));
        }
    }
    if let Some(Value::Array(one)) = s.get("oneOf") {
        let n = passing(one);
        if n != 1 {
            out.push(format!("{path}: matches {n} of oneOf (1 wanted): {v}"));
        }
    }
}

#[test]
fn the_validator_rejects_what_it_should() {
    use serde_json::json;
    let schema = json!({
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"$ref": "#/$defs/B"}},
        "required": ["a"],
        "$defs": {"B": {"oneOf": [
            {"type": "object", "properties": {"type": {"const": "x"}}, "required": ["type"]},
            {"type": "object", "properties": {"type": {"const": "y"}, "n": {"type": "integer", "minimum": 0}}, "required": ["type", "n"]}
        ]}}
    });
    assert!(errors(&schema, &json!({"a": "s", "b": {"type": "y", "n": 1}})).is_empty());
    assert!(!errors(&schema, &json!({"b": {"type": "x"}})).is_empty());
    assert!(!errors(&schema, &json!({"a": 1})).is_empty());
    assert!(!errors(&schema, &json!({"a": "s", "b": {"type": "y"}})).is_empty());
    assert!(!errors(&schema, &json!({"a": "s", "b": {"type": "y", "n": -1}})).is_empty());
}
