//! What the server is asked: the wire format a request speaks, found from its route, and
//! the request as the server recorded it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The three wire formats the mock server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireFormat {
    /// OpenAI Chat Completions (`/v1/chat/completions`).
    Chat,
    /// OpenAI Responses (`/v1/responses`).
    Responses,
    /// Anthropic Messages (`/v1/messages`).
    Anthropic,
}

/// One request as the server received it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedRequest {
    pub method: String,
    /// Path with the query string, e.g. `/v1/messages?beta=true`.
    pub path: String,
    /// Header names in lower case, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON; `null` when empty, a JSON string holding the raw
    /// text when it is not JSON.
    pub body: Value,
}

impl RecordedRequest {
    /// The first value of a header (name compared case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The path without the query string.
    pub fn path_only(&self) -> &str {
        self.path.split('?').next().unwrap_or_default()
    }

    /// Which model API this request called, if any.
    pub fn wire_format(&self) -> Option<WireFormat> {
        match Route::classify(&self.method, self.path_only()) {
            Route::Model(format) => Some(format),
            Route::ModelList | Route::Props | Route::Unknown => None,
        }
    }

    /// The conversation items a model request sends (`messages`, or the Responses API's
    /// `input`), without Anthropic's `cache_control` breakpoints: markers that move to the newest
    /// item, while what a provider caches is the content.
    pub fn items(&self) -> Vec<Value> {
        let key = match self.wire_format() {
            Some(WireFormat::Responses) => "input",
            _ => "messages",
        };
        let mut items = self.body[key].clone();
        strip_cache_control(&mut items);
        items.as_array().cloned().unwrap_or_default()
    }

    /// What the provider reads of a model request, as JSON texts in order: the tool list, the
    /// system prompt (Anthropic's `system`, the Responses API's `instructions`; Chat Completions
    /// sends it as its first item), then each conversation item; without `cache_control`.
    pub fn prompt_parts(&self) -> Vec<String> {
        let mut head = Value::Array(
            std::iter::once(self.body["tools"].clone())
                .chain(
                    ["system", "instructions"]
                        .iter()
                        .map(|k| self.body[*k].clone())
                        .filter(|v| !v.is_null()),
                )
                .collect(),
        );
        strip_cache_control(&mut head);
        let head = head.as_array().cloned().unwrap_or_default();
        head.iter()
            .chain(self.items().iter())
            .map(Value::to_string)
            .collect()
    }
}

fn strip_cache_control(v: &mut Value) {
    match v {
        Value::Object(o) => {
            o.remove("cache_control");
            o.values_mut().for_each(strip_cache_control);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_cache_control),
        _ => {}
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    Model(WireFormat),
    ModelList,
    /// llama.cpp's `GET /props`.
    Props,
    Unknown,
}

impl Route {
    /// Any path ending in a known API suffix matches, so clients may use base URLs
    /// with or without `/v1`.
    pub(crate) fn classify(method: &str, path: &str) -> Route {
        let path = path.trim_end_matches('/');
        if method.eq_ignore_ascii_case("POST") {
            if path.ends_with("/chat/completions") {
                return Route::Model(WireFormat::Chat);
            }
            if path.ends_with("/responses") {
                return Route::Model(WireFormat::Responses);
            }
            if path.ends_with("/messages") {
                return Route::Model(WireFormat::Anthropic);
            }
        }
        if method.eq_ignore_ascii_case("GET") && path.ends_with("/models") {
            return Route::ModelList;
        }
        if method.eq_ignore_ascii_case("GET") && path.ends_with("/props") {
            return Route::Props;
        }
        Route::Unknown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_are_classified_by_suffix() {
        assert_eq!(
            Route::classify("POST", "/v1/chat/completions"),
            Route::Model(WireFormat::Chat)
        );
        assert_eq!(
            Route::classify("POST", "/chat/completions/"),
            Route::Model(WireFormat::Chat)
        );
        assert_eq!(
            Route::classify("POST", "/v1/responses"),
            Route::Model(WireFormat::Responses)
        );
        assert_eq!(
            Route::classify("POST", "/v1/messages"),
            Route::Model(WireFormat::Anthropic)
        );
        assert_eq!(Route::classify("GET", "/v1/models"), Route::ModelList);
        assert_eq!(Route::classify("GET", "/v1/messages"), Route::Unknown);
        assert_eq!(
            Route::classify("POST", "/v1/messages/count_tokens"),
            Route::Unknown
        );
    }
}
