//! The data of a scripted answer: what the mock server plays, independent of the wire format.
//!
//! A [`Step`] answers one model request: either a [`Turn`] (what the model "says")
//! or a [`Fault`] (an HTTP error, a cut connection, garbage, an error event).
//! Everything here is serde-serializable; the JSON form is described in the crate docs.

use baton_protocol::Usage;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// Usage reported for a turn that does not set its own.
pub const DEFAULT_USAGE: Usage = Usage {
    input_tokens: 100,
    cached_input_tokens: 0,
    output_tokens: 20,
    cache_write_tokens: 0,
};

/// Text used for the partial turn of a fault whose script does not give one.
pub(crate) const DEFAULT_FAULT_TEXT: &str = "This answer is cut short by the mock server.";

/// One piece of a model turn, in the order the model produces it.
///
/// JSON: `{"text": "…"}`, `{"reasoning": "…"}`,
/// `{"tool_call": {"id": "call_1", "name": "read", "arguments": {"path": "a.txt"}}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Part {
    /// Visible assistant text.
    Text(String),
    /// Reasoning / thinking text (`reasoning_content`, a reasoning summary, a thinking block).
    Reasoning(String),
    /// A function call. An empty `id` is replaced by a generated one in the wire
    /// format's style (`call_mock…`, `toolu_mock…`); any other id is sent verbatim.
    ToolCall {
        #[serde(default)]
        id: String,
        name: String,
        /// The arguments as JSON text (deliberately a string, so a script can send
        /// malformed arguments). In a script file an object is accepted too.
        #[serde(
            default = "empty_arguments",
            serialize_with = "serialize_arguments",
            deserialize_with = "deserialize_arguments"
        )]
        arguments: String,
        /// The namespace the tool belongs to, for clients that group tools in namespaces
        /// (Codex offers an MCP server's tools as the namespace `mcp__<server>`). Only the
        /// Responses format carries it (as the function call's `namespace`); the others
        /// ignore it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
    },
}

fn empty_arguments() -> String {
    "{}".to_string()
}

/// Arguments that are valid JSON (other than a bare string) are written as JSON, so a
/// saved script stays readable; anything else is written as the raw string.
fn serialize_arguments<S: Serializer>(arguments: &str, serializer: S) -> Result<S::Ok, S::Error> {
    match serde_json::from_str::<Value>(arguments) {
        Ok(value) if !value.is_string() => value.serialize(serializer),
        _ => serializer.serialize_str(arguments),
    }
}

/// A string is taken as the raw argument text; any other JSON value is compacted.
fn deserialize_arguments<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    match Value::deserialize(deserializer)? {
        Value::String(raw) => Ok(raw),
        other => Ok(other.to_string()),
    }
}

/// Something that can become tool-call argument text: a `serde_json::Value`
/// (compacted) or a string (sent verbatim, even if it is not valid JSON).
pub trait IntoArguments {
    fn into_arguments(self) -> String;
}

impl IntoArguments for Value {
    fn into_arguments(self) -> String {
        self.to_string()
    }
}

impl IntoArguments for &Value {
    fn into_arguments(self) -> String {
        self.to_string()
    }
}

impl IntoArguments for &str {
    fn into_arguments(self) -> String {
        self.to_string()
    }
}

impl IntoArguments for String {
    fn into_arguments(self) -> String {
        self
    }
}

/// One scripted model answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    pub parts: Vec<Part>,
    /// Reported in the format's usage fields. `input_tokens` includes the cached ones
    /// (Anthropic's `input_tokens` is sent as `input_tokens - cached_input_tokens`).
    pub usage: Usage,
    /// Pause between two SSE events, to simulate a slow stream. 0 = no pause.
    pub delay_ms_per_chunk: u64,
}

impl Default for Turn {
    fn default() -> Self {
        Turn {
            parts: Vec::new(),
            usage: DEFAULT_USAGE,
            delay_ms_per_chunk: 0,
        }
    }
}

impl Turn {
    /// An empty turn with the default usage; add parts with the `with_*` methods.
    pub fn new() -> Self {
        Turn::default()
    }

    /// A turn that only answers `text`.
    pub fn text(text: impl Into<String>) -> Self {
        Turn::new().with_text(text)
    }

    /// A turn that only reasons (rarely useful alone; chain `with_text` / `with_tool_call`).
    pub fn reasoning(text: impl Into<String>) -> Self {
        Turn::new().with_reasoning(text)
    }

    /// A turn that makes one tool call.
    pub fn tool_call(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl IntoArguments,
    ) -> Self {
        Turn::new().with_tool_call(id, name, arguments)
    }

    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.parts.push(Part::Text(text.into()));
        self
    }

    pub fn with_reasoning(mut self, text: impl Into<String>) -> Self {
        self.parts.push(Part::Reasoning(text.into()));
        self
    }

    pub fn with_tool_call(
        self,
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl IntoArguments,
    ) -> Self {
        self.push_tool_call(id.into(), None, name.into(), arguments.into_arguments())
    }

    /// A tool call of `name` in `namespace` (see [`Part::ToolCall`]), e.g. a Codex MCP tool:
    /// `with_namespaced_tool_call("call_1", "mcp__baton", "route", args)`.
    pub fn with_namespaced_tool_call(
        self,
        id: impl Into<String>,
        namespace: impl Into<String>,
        name: impl Into<String>,
        arguments: impl IntoArguments,
    ) -> Self {
        self.push_tool_call(
            id.into(),
            Some(namespace.into()),
            name.into(),
            arguments.into_arguments(),
        )
    }

    fn push_tool_call(
        mut self,
        id: String,
        namespace: Option<String>,
        name: String,
        arguments: String,
    ) -> Self {
        self.parts.push(Part::ToolCall {
            id,
            name,
            arguments,
            namespace,
        });
        self
    }

    /// Sets the reported usage: prompt tokens (cached included), cached tokens, output tokens.
    pub fn usage(
        mut self,
        input_tokens: u64,
        cached_input_tokens: u64,
        output_tokens: u64,
    ) -> Self {
        self.usage = Usage {
            input_tokens,
            cached_input_tokens,
            output_tokens,
            cache_write_tokens: 0,
        };
        self
    }

    /// Pauses `ms` milliseconds between SSE events.
    pub fn delay_ms_per_chunk(mut self, ms: u64) -> Self {
        self.delay_ms_per_chunk = ms;
        self
    }

    /// True when the turn calls at least one tool.
    pub fn has_tool_calls(&self) -> bool {
        self.parts
            .iter()
            .any(|p| matches!(p, Part::ToolCall { .. }))
    }

    /// All text parts joined.
    pub fn joined_text(&self) -> String {
        self.joined(|p| match p {
            Part::Text(t) => Some(t),
            Part::Reasoning(_) | Part::ToolCall { .. } => None,
        })
    }

    /// All reasoning parts joined.
    pub fn joined_reasoning(&self) -> String {
        self.joined(|p| match p {
            Part::Reasoning(t) => Some(t),
            Part::Text(_) | Part::ToolCall { .. } => None,
        })
    }

    fn joined(&self, pick: impl Fn(&Part) -> Option<&String>) -> String {
        self.parts
            .iter()
            .filter_map(pick)
            .map(String::as_str)
            .collect()
    }
}

/// A failure the server plays instead of a clean turn.
///
/// JSON: an object with a `"fault"` tag, e.g. `{"fault": "status", "status": 429, "retry_after_secs": 1}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "fault", rename_all = "snake_case", deny_unknown_fields)]
pub enum Fault {
    /// An HTTP error with the format's error body, plus `retry-after` when set. With `body`,
    /// that body is sent instead, as a real server wrote it (a JSON string is sent as its
    /// text, any other JSON value as JSON).
    Status {
        status: u16,
        #[serde(
            default,
            alias = "retry_after",
            skip_serializing_if = "Option::is_none"
        )]
        retry_after_secs: Option<u64>,
        #[serde(default = "default_status_message")]
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        body: Option<Value>,
    },
    /// Sends the first `after_events` SSE events of `turn`, then aborts the connection.
    #[serde(alias = "drop")]
    DropMidStream {
        #[serde(default = "default_fault_turn")]
        turn: Turn,
        after_events: usize,
    },
    /// Starts `turn`'s stream correctly, then sends `data: {not json` and ends.
    #[serde(alias = "malformed")]
    MalformedSse {
        #[serde(default = "default_fault_turn")]
        turn: Turn,
    },
    /// The format's in-stream error: an Anthropic `event: error` (overloaded_error),
    /// a Responses `response.failed`, a Chat chunk `{"error":{…}}`.
    InStreamError {
        #[serde(default = "default_stream_error_message")]
        message: String,
    },
}

fn default_status_message() -> String {
    "mock server: scripted error".to_string()
}

fn default_stream_error_message() -> String {
    "mock server: scripted in-stream error".to_string()
}

fn default_fault_turn() -> Turn {
    Turn::text(DEFAULT_FAULT_TEXT)
}

impl Fault {
    /// An HTTP error with this status code and a generic message.
    pub fn status(status: u16) -> Self {
        Fault::Status {
            status,
            retry_after_secs: None,
            message: default_status_message(),
            body: None,
        }
    }

    /// Sets `retry-after` on a [`Fault::Status`]; other faults are returned unchanged.
    pub fn retry_after(mut self, secs: u64) -> Self {
        if let Fault::Status {
            retry_after_secs, ..
        } = &mut self
        {
            *retry_after_secs = Some(secs);
        }
        self
    }

    /// Sends `body` instead of the format's error body on a [`Fault::Status`] (a JSON string as
    /// its text, any other value as JSON), to play the error answer of a particular server;
    /// other faults are returned unchanged.
    pub fn body(mut self, value: impl Into<Value>) -> Self {
        if let Fault::Status { body, .. } = &mut self {
            *body = Some(value.into());
        }
        self
    }

    /// Sets the error message of a [`Fault::Status`] or [`Fault::InStreamError`];
    /// other faults are returned unchanged.
    pub fn message(mut self, text: impl Into<String>) -> Self {
        match &mut self {
            Fault::Status { message, .. } | Fault::InStreamError { message } => {
                *message = text.into()
            }
            Fault::DropMidStream { .. } | Fault::MalformedSse { .. } => {}
        }
        self
    }

    /// Sends the first `after_events` SSE events of `turn`, then cuts the connection.
    pub fn drop_after(turn: Turn, after_events: usize) -> Self {
        Fault::DropMidStream { turn, after_events }
    }

    /// Starts `turn`'s stream, then sends a data line that is not JSON.
    pub fn malformed(turn: Turn) -> Self {
        Fault::MalformedSse { turn }
    }

    /// The format's in-stream error event.
    pub fn in_stream_error(message: impl Into<String>) -> Self {
        Fault::InStreamError {
            message: message.into(),
        }
    }
}

/// What the server does for one model request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Turn(Turn),
    Fault(Fault),
}

impl From<Turn> for Step {
    fn from(turn: Turn) -> Self {
        Step::Turn(turn)
    }
}

impl From<Fault> for Step {
    fn from(fault: Fault) -> Self {
        Step::Fault(fault)
    }
}

impl Serialize for Step {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Step::Turn(turn) => turn.serialize(serializer),
            Step::Fault(fault) => fault.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Step {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let is_fault = value.as_object().is_some_and(|o| o.contains_key("fault"));
        if is_fault {
            Fault::deserialize(value)
                .map(Step::Fault)
                .map_err(D::Error::custom)
        } else {
            Turn::deserialize(value)
                .map(Step::Turn)
                .map_err(D::Error::custom)
        }
    }
}

/// How a turn is written out: always the long form.
#[derive(Serialize)]
struct TurnOut<'a> {
    parts: &'a [Part],
    usage: &'a Usage,
    #[serde(skip_serializing_if = "is_zero")]
    delay_ms_per_chunk: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Serialize for Turn {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        TurnOut {
            parts: &self.parts,
            usage: &self.usage,
            delay_ms_per_chunk: self.delay_ms_per_chunk,
        }
        .serialize(serializer)
    }
}

/// How a turn may be written by hand: `parts`, or the short keys
/// `reasoning` / `text` / `tool_call` / `tool_calls` (played in that order).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TurnIn {
    #[serde(default)]
    parts: Option<Vec<Part>>,
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    tool_call: Option<ToolCallIn>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallIn>>,
    #[serde(default)]
    usage: Option<UsageIn>,
    #[serde(default)]
    delay_ms_per_chunk: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolCallIn {
    #[serde(default)]
    id: String,
    name: String,
    #[serde(
        default = "empty_arguments",
        deserialize_with = "deserialize_arguments"
    )]
    arguments: String,
    #[serde(default)]
    namespace: Option<String>,
}

impl From<ToolCallIn> for Part {
    fn from(call: ToolCallIn) -> Self {
        Part::ToolCall {
            id: call.id,
            name: call.name,
            arguments: call.arguments,
            namespace: call.namespace,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UsageIn {
    #[serde(default = "default_input_tokens")]
    input_tokens: u64,
    #[serde(default)]
    cached_input_tokens: u64,
    #[serde(default = "default_output_tokens")]
    output_tokens: u64,
}

fn default_input_tokens() -> u64 {
    DEFAULT_USAGE.input_tokens
}

fn default_output_tokens() -> u64 {
    DEFAULT_USAGE.output_tokens
}

impl<'de> Deserialize<'de> for Turn {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        if let Value::String(text) = value {
            return Ok(Turn::text(text));
        }
        let input = TurnIn::deserialize(value).map_err(D::Error::custom)?;
        let short_form = input.reasoning.is_some()
            || input.text.is_some()
            || input.tool_call.is_some()
            || input.tool_calls.is_some();
        let parts = match (input.parts, short_form) {
            (Some(_), true) => {
                return Err(D::Error::custom(
                    "a turn has either `parts` or the short keys `reasoning`/`text`/`tool_call`/`tool_calls`, not both",
                ))
            }
            (Some(parts), false) => parts,
            (None, _) => {
                let mut parts = Vec::new();
                parts.extend(input.reasoning.map(Part::Reasoning));
                parts.extend(input.text.map(Part::Text));
                parts.extend(input.tool_call.map(Part::from));
                parts.extend(input.tool_calls.into_iter().flatten().map(Part::from));
                parts
            }
        };
        let usage = input.usage.map_or(DEFAULT_USAGE, |u| Usage {
            input_tokens: u.input_tokens,
            cached_input_tokens: u.cached_input_tokens,
            output_tokens: u.output_tokens,
            cache_write_tokens: 0,
        });
        Ok(Turn {
            parts,
            usage,
            delay_ms_per_chunk: input.delay_ms_per_chunk,
        })
    }
}
