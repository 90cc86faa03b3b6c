//! How `baton mcp` declares its tools: one [`ToolDef`] per tool holds its name, description,
//! input schema (derived from the struct its arguments parse into), output schema (derived from
//! the document it answers with, documents.rs), annotations and handler; and the parsing that
//! names the bad field.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use baton_app::project::{project_context, ProjectContext};
use rmcp::handler::server::common::{schema_for_input, schema_for_output};
use rmcp::model::{CallToolResult, JsonObject, Tool, ToolAnnotations};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::runtime::SharedExecutor;

/// A tool's hints to the client.
#[derive(Clone, Copy, Debug)]
pub struct Hints {
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    pub open_world: bool,
}

/// A tool that only reads: same answer for the same state, nothing changed.
pub const READ_ONLY: Hints = Hints {
    read_only: true,
    destructive: false,
    idempotent: true,
    open_world: false,
};

/// A tool that runs agents: it changes the project and calls models.
pub const RUNS_AGENTS: Hints = Hints {
    read_only: false,
    destructive: true,
    idempotent: false,
    open_world: true,
};

/// What a handler answers with: a result, or the message of a tool error.
pub type Answer = Result<CallToolResult, String>;

/// A handler's future.
pub type CallFuture = Pin<Box<dyn Future<Output = Answer> + Send>>;

/// One call of a tool: the tool's name, the server's working directory and executor, and the
/// request's context (progress token, cancellation, peer).
#[derive(Clone)]
pub struct Call {
    pub tool: &'static str,
    pub cwd: PathBuf,
    pub executor: SharedExecutor,
    pub context: RequestContext<RoleServer>,
}

impl Call {
    /// The project, read again (config and roles) so edits apply without a restart.
    pub fn project(&self) -> Result<ProjectContext, String> {
        project_context(Some(self.cwd.clone())).map_err(|e| format!("{e:#}"))
    }

    /// The arguments as `T`, or a message naming the field that is wrong.
    pub fn parse<T: DeserializeOwned>(&self, args: Option<JsonObject>) -> Result<T, String> {
        parse(self.tool, args)
    }
}

/// Everything about one tool, in one place.
pub struct ToolDef {
    pub name: &'static str,
    pub description: &'static str,
    /// The input schema: [`input::<T>`](input) for the struct `T` the arguments parse into.
    pub input: fn() -> Result<Arc<JsonObject>, String>,
    /// The output schema: [`output::<D>`](output) for the document `D` it answers with.
    pub output: fn() -> Arc<JsonObject>,
    pub hints: Hints,
    pub handler: fn(Call, Option<JsonObject>) -> CallFuture,
}

impl ToolDef {
    /// The tool as `tools/list` shows it.
    pub fn tool(&self) -> Result<Tool, ErrorData> {
        let input = (self.input)().map_err(|e| ErrorData::internal_error(e, None))?;
        let h = self.hints;
        Ok(Tool::new(self.name, self.description, standard(input))
            .with_raw_output_schema(standard((self.output)()))
            .with_annotations(
                ToolAnnotations::new()
                    .read_only(h.read_only)
                    .destructive(h.destructive)
                    .idempotent(h.idempotent)
                    .open_world(h.open_world),
            ))
    }
}

/// The `format`s JSON Schema defines. schemars also writes Rust's own (`uint`, `uint32`,
/// `int64`, `double` …), which clients such as the MCP Inspector warn about; a number's range
/// stays in its `minimum` and `maximum`.
const STANDARD_FORMATS: [&str; 19] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// `schema` with every `format` JSON Schema does not define taken out.
pub fn standard(schema: Arc<JsonObject>) -> Arc<JsonObject> {
    fn walk(v: &mut Value) {
        match v {
            Value::Object(o) => {
                let odd = o
                    .get("format")
                    .and_then(Value::as_str)
                    .is_some_and(|f| !STANDARD_FORMATS.contains(&f));
                if odd {
                    o.remove("format");
                }
                o.values_mut().for_each(walk);
            }
            Value::Array(a) => a.iter_mut().for_each(walk),
            _ => {}
        }
    }
    let mut v = Value::Object(Arc::unwrap_or_clone(schema));
    walk(&mut v);
    match v {
        Value::Object(o) => Arc::new(o),
        _ => unreachable!("an object stays an object"),
    }
}

/// The input schema of a tool whose arguments parse into `T`.
pub fn input<T: JsonSchema + 'static>() -> Result<Arc<JsonObject>, String> {
    schema_for_input::<T>()
}

/// The output schema of a tool answering with `D`. A document that is one of several shapes (an
/// enum) is an object in each: the root says so, as MCP requires.
pub fn output<D: JsonSchema + 'static>() -> Arc<JsonObject> {
    let schema = schema_for_output::<D>();
    if schema.get("type").is_some() {
        return schema;
    }
    let mut o = schema.as_ref().clone();
    o.insert("type".into(), Value::String("object".into()));
    Arc::new(o)
}

/// A handler's future, boxed.
pub fn boxed(f: impl Future<Output = Answer> + Send + 'static) -> CallFuture {
    Box::pin(f)
}

/// The arguments of a call as `T`, or a message naming the field that is wrong.
pub fn parse<T: DeserializeOwned>(tool: &str, args: Option<JsonObject>) -> Result<T, String> {
    let value = Value::Object(args.unwrap_or_default());
    serde_path_to_error::deserialize::<_, T>(value).map_err(|e| {
        let path = e.path().to_string();
        if path == "." {
            format!("{tool}: bad arguments: {}", e.inner())
        } else {
            format!("{tool}: bad argument `{path}`: {}", e.inner())
        }
    })
}
