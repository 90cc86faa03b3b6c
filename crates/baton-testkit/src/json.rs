//! A tiny JSON tree that keeps object keys in the order they were written.
//!
//! `serde_json::Value` sorts keys (unless a crate somewhere in the build turns on
//! `preserve_order`), so payloads built with it would read `{"choices":…,"id":…}`.
//! The real APIs put `id`/`type` first, and recorded streams are easier to read that
//! way, so the renderers build their payloads with [`J`] and the [`obj!`] macro.

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

/// An ordered JSON value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum J {
    Null,
    Bool(bool),
    Num(u64),
    Str(String),
    Arr(Vec<J>),
    Obj(Vec<(&'static str, J)>),
    /// An arbitrary `serde_json::Value` (tool arguments parsed from the script).
    Raw(serde_json::Value),
}

impl J {
    /// Compact JSON text.
    pub(crate) fn text(&self) -> String {
        // Serializing this tree cannot fail: every key is a string and every
        // number is an integer.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Appends a field to an object; other values are left alone.
    pub(crate) fn push(&mut self, key: &'static str, value: impl Into<J>) {
        if let J::Obj(fields) = self {
            fields.push((key, value.into()));
        }
    }

    /// Replaces the value of an existing field (or appends it).
    pub(crate) fn set(&mut self, key: &'static str, value: impl Into<J>) {
        if let J::Obj(fields) = self {
            let value = value.into();
            match fields.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = value,
                None => fields.push((key, value)),
            }
        }
    }
}

impl Serialize for J {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            J::Null => serializer.serialize_unit(),
            J::Bool(b) => serializer.serialize_bool(*b),
            J::Num(n) => serializer.serialize_u64(*n),
            J::Str(s) => serializer.serialize_str(s),
            J::Arr(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            J::Obj(fields) => {
                let mut map = serializer.serialize_map(Some(fields.len()))?;
                for (key, value) in fields {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
            J::Raw(value) => value.serialize(serializer),
        }
    }
}

impl From<&str> for J {
    fn from(s: &str) -> Self {
        J::Str(s.to_string())
    }
}

impl From<String> for J {
    fn from(s: String) -> Self {
        J::Str(s)
    }
}

impl From<&String> for J {
    fn from(s: &String) -> Self {
        J::Str(s.clone())
    }
}

impl From<u64> for J {
    fn from(n: u64) -> Self {
        J::Num(n)
    }
}

impl From<usize> for J {
    fn from(n: usize) -> Self {
        J::Num(n as u64)
    }
}

impl From<bool> for J {
    fn from(b: bool) -> Self {
        J::Bool(b)
    }
}

impl From<Vec<J>> for J {
    fn from(items: Vec<J>) -> Self {
        J::Arr(items)
    }
}

impl From<&J> for J {
    fn from(j: &J) -> Self {
        j.clone()
    }
}

impl<T: Into<J>> From<Option<T>> for J {
    fn from(value: Option<T>) -> Self {
        match value {
            Some(v) => v.into(),
            None => J::Null,
        }
    }
}

/// Builds an ordered JSON object: `obj! { "type": "ping", "index": 0usize }`.
macro_rules! obj {
    () => { $crate::json::J::Obj(Vec::new()) };
    ($($key:literal : $value:expr),+ $(,)?) => {
        $crate::json::J::Obj(vec![$(($key, $crate::json::J::from($value))),+])
    };
}
pub(crate) use obj;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_their_order() {
        let mut j = obj! { "z": 1u64, "a": "x", "m": J::Arr(vec![J::Null, true.into()]) };
        j.push("b", Some("y"));
        j.set("a", None::<String>);
        assert_eq!(j.text(), r#"{"z":1,"a":null,"m":[null,true],"b":"y"}"#);
        assert_eq!(obj! {}.text(), "{}");
    }
}
