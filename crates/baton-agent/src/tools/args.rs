//! Reading tool arguments with messages a model can act on.

use serde_json::{Map, Value};

/// The arguments of one call, already known to be a JSON object.
pub(crate) struct Args {
    tool: &'static str,
    usage: &'static str,
    map: Map<String, Value>,
}

/// An argument problem, already phrased for the model.
pub(crate) type ArgResult<T> = Result<T, String>;

impl Args {
    /// Accepts an object, or a string holding the JSON text of an object (some providers hand
    /// arguments over still encoded). `null` counts as an empty object.
    pub(crate) fn parse(tool: &'static str, usage: &'static str, value: Value) -> ArgResult<Args> {
        let map = match value {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            Value::String(text) => match serde_json::from_str::<Value>(&text) {
                Ok(Value::Object(map)) => map,
                _ => {
                    return Err(format!(
                        "invalid arguments for `{tool}`: expected a JSON object like {usage}, got a string that is not one"
                    ))
                }
            },
            other => {
                return Err(format!(
                    "invalid arguments for `{tool}`: expected a JSON object like {usage}, got {}",
                    kind(&other)
                ))
            }
        };
        Ok(Args { tool, usage, map })
    }

    fn get(&self, name: &str) -> Option<&Value> {
        match self.map.get(name) {
            None | Some(Value::Null) => None,
            Some(v) => Some(v),
        }
    }

    fn bad(&self, name: &str, want: &str, got: &Value) -> String {
        format!(
            "invalid arguments for `{}`: `{name}` must be {want}, got {} ({}); expected shape: {}",
            self.tool,
            kind(got),
            preview(got),
            self.usage
        )
    }

    fn missing(&self, name: &str, want: &str) -> String {
        let mut msg = format!(
            "invalid arguments for `{}`: `{name}` is required and must be {want}; expected shape: {}",
            self.tool, self.usage
        );
        if !self.map.is_empty() {
            let keys: Vec<&str> = self.map.keys().map(String::as_str).collect();
            msg.push_str(&format!(" (fields given: {})", keys.join(", ")));
        }
        msg
    }

    /// A required string.
    pub(crate) fn string(&self, name: &str) -> ArgResult<String> {
        match self.get(name) {
            None => Err(self.missing(name, "a string")),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(self.bad(name, "a string", other)),
        }
    }

    /// An optional string.
    pub(crate) fn opt_string(&self, name: &str) -> ArgResult<Option<String>> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(self.bad(name, "a string", other)),
        }
    }

    /// An optional boolean; the strings "true" and "false" are accepted too.
    pub(crate) fn opt_bool(&self, name: &str) -> ArgResult<Option<bool>> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => Ok(Some(true)),
            Some(Value::String(s)) if s.eq_ignore_ascii_case("false") => Ok(Some(false)),
            Some(other) => Err(self.bad(name, "a boolean (true or false)", other)),
        }
    }

    /// An optional integer of at least `min`. Integral floats (`10.0`) and numeric strings
    /// (`"10"`) are accepted, since models produce both.
    pub(crate) fn opt_uint(&self, name: &str, min: u64) -> ArgResult<Option<u64>> {
        let Some(value) = self.get(name) else {
            return Ok(None);
        };
        let want = if min == 0 {
            "a non-negative integer".to_owned()
        } else if min == 1 {
            "a positive integer".to_owned()
        } else {
            format!("an integer of at least {min}")
        };
        let n = match value {
            Value::Number(n) => n.as_u64().or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 9.0e15)
                    .map(|f| f as u64)
            }),
            Value::String(s) => s.trim().parse::<u64>().ok(),
            _ => None,
        };
        match n {
            Some(n) if n >= min => Ok(Some(n)),
            _ => Err(self.bad(name, &want, value)),
        }
    }

    /// An optional positive number of seconds (fractions allowed).
    pub(crate) fn opt_seconds(&self, name: &str) -> ArgResult<Option<f64>> {
        let Some(value) = self.get(name) else {
            return Ok(None);
        };
        let n = match value {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.trim().parse::<f64>().ok(),
            _ => None,
        };
        match n {
            Some(n) if n.is_finite() && n > 0.0 => Ok(Some(n)),
            _ => Err(self.bad(name, "a positive number of seconds", value)),
        }
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
    use super::*;
    use serde_json::json;

    const USAGE: &str = r#"{"path": "src/lib.rs"}"#;

    #[test]
    fn parses_objects_and_encoded_objects() {
        let a = Args::parse("read", USAGE, json!({"path": "x"})).unwrap();
        assert_eq!(a.string("path").unwrap(), "x");
        let a = Args::parse("read", USAGE, json!("{\"path\": \"y\"}")).unwrap();
        assert_eq!(a.string("path").unwrap(), "y");
        let err = Args::parse("read", USAGE, json!([1])).err().unwrap();
        assert!(err.contains("expected a JSON object"), "{err}");
    }

    #[test]
    fn missing_and_wrong_types_name_the_field() {
        let a = Args::parse("read", USAGE, json!({"file_path": "x", "limit": "ten"})).unwrap();
        let err = a.string("path").unwrap_err();
        assert!(err.contains("`path` is required"), "{err}");
        assert!(err.contains("file_path"), "{err}");
        let err = a.opt_uint("limit", 1).unwrap_err();
        assert!(err.contains("`limit` must be a positive integer"), "{err}");
        assert!(err.contains(USAGE), "{err}");
    }

    #[test]
    fn lenient_numbers_and_bools() {
        let a = Args::parse(
            "t",
            USAGE,
            json!({"a": 3, "b": 4.0, "c": "5", "d": 0, "e": -1, "f": "true", "g": null, "h": 1.5}),
        )
        .unwrap();
        assert_eq!(a.opt_uint("a", 1).unwrap(), Some(3));
        assert_eq!(a.opt_uint("b", 1).unwrap(), Some(4));
        assert_eq!(a.opt_uint("c", 1).unwrap(), Some(5));
        assert!(a.opt_uint("d", 1).is_err());
        assert_eq!(a.opt_uint("d", 0).unwrap(), Some(0));
        assert!(a.opt_uint("e", 0).is_err());
        assert_eq!(a.opt_bool("f").unwrap(), Some(true));
        assert_eq!(a.opt_bool("g").unwrap(), None);
        assert_eq!(a.opt_uint("g", 1).unwrap(), None);
        assert!(a.opt_uint("h", 1).is_err());
        assert_eq!(a.opt_seconds("h").unwrap(), Some(1.5));
        assert!(a.opt_seconds("d").is_err());
    }
}
