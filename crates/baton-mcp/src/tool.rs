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
        self.listed(false)
    }

    /// The tool as `tools/list` shows it; `compact` for a server started with a smaller set
    /// (`--tools core`, …), whose host pays per token for the list: the description's first
    /// sentence, the input schema with a description only on its own properties (not on what
    /// they hold) and without schemars' `title`, `$schema` and null defaults, and no output
    /// schema (the answer still carries its document as structured content).
    pub fn listed(&self, compact: bool) -> Result<Tool, ErrorData> {
        let input = (self.input)().map_err(|e| ErrorData::internal_error(e, None))?;
        let h = self.hints;
        let tool = if compact {
            let said = BRIEF.iter().find(|(n, _)| *n == self.name).map_or_else(
                || first_sentence(self.description),
                |(_, b)| (*b).to_string(),
            );
            Tool::new(self.name, said, brief(standard(input)))
        } else {
            Tool::new(self.name, self.description, standard(input))
                .with_raw_output_schema(standard((self.output)()))
        };
        Ok(tool.with_annotations(
            ToolAnnotations::new()
                .read_only(h.read_only)
                .destructive(h.destructive)
                .idempotent(h.idempotent)
                .open_world(h.open_world),
        ))
    }
}

/// What a compact list says of the tools a host offers every day (`--tools core`); another tool
/// says the first sentence of its description.
const BRIEF: [(&str, &str); 8] = [
    ("run_workflow", "Run a baton workflow (routed BUILD, DEBUG, PLAN, REVIEW or ORIENT) and return its outcome."),
    ("workflow_status", "List this project's baton workflows, or show one by id."),
    ("workflow_resume", "Continue a baton workflow: answer its checkpoint, or go on after a failure with guidance."),
    ("delegate_task", "Delegate bounded work to child agents of baton roles: one task, parallel `tasks` or a `chain`."),
    ("task_status", "Show a background task started by delegate_task."),
    ("flow_start", "Start a baton Flow: units built in parallel worktrees, landed in order."),
    ("flow_status", "List this repository's baton Flows, or show one by id."),
    ("flow_continue", "Repair the blocked unit of a paused Flow once, with guidance."),
];

/// A property's description as a compact list gives it: its first clause.
fn first_clause(text: &str) -> String {
    let sentence = first_sentence(text);
    let end = [" (", "; ", ": "]
        .iter()
        .filter_map(|m| sentence.find(m))
        .min()
        .unwrap_or(sentence.len());
    sentence[..end].trim_end_matches('.').to_string()
}

/// `text` up to the end of its first sentence, on one line.
fn first_sentence(text: &str) -> String {
    let end = text
        .char_indices()
        .find(|&(i, c)| {
            let abbreviation = ["e.g", "i.e", "etc"].iter().any(|a| text[..i].ends_with(a));
            matches!(c, '.' | '!' | '?')
                && !abbreviation
                && text[i + 1..].chars().next().is_none_or(char::is_whitespace)
        })
        .map_or(text.len(), |(i, _)| i + 1);
    text[..end].split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `schema` as a compact list shows it (see [`ToolDef::listed`]).
fn brief(schema: Arc<JsonObject>) -> Arc<JsonObject> {
    fn walk(v: &mut Value, depth: usize) {
        match v {
            Value::Object(o) => {
                o.remove("title");
                o.remove("$schema");
                if o.get("default").is_some_and(Value::is_null) {
                    o.remove("default");
                }
                match o
                    .get("description")
                    .and_then(Value::as_str)
                    .map(first_clause)
                {
                    // A property of the tool's own arguments keeps its first sentence; what
                    // it holds (array items, their properties) says nothing more.
                    Some(d) if depth <= 2 => {
                        o.insert("description".into(), Value::String(d));
                    }
                    Some(_) => {
                        o.remove("description");
                    }
                    None => {}
                }
                o.values_mut().for_each(|x| walk(x, depth + 1));
            }
            Value::Array(a) => a.iter_mut().for_each(|x| walk(x, depth)),
            _ => {}
        }
    }
    let mut v = Value::Object(Arc::unwrap_or_clone(schema));
    walk(&mut v, 0);
    match v {
        Value::Object(o) => Arc::new(o),
        _ => unreachable!("an object stays an object"),
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
