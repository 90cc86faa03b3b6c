//! How `baton mcp` declares its tools: annotations, input schemas derived from the structs the
//! arguments parse into, and the parsing that names the bad field.

use std::sync::Arc;

use rmcp::handler::server::common::schema_for_input;
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use rmcp::ErrorData;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

/// A tool's annotations, each hint stated.
pub fn annotations(
    read_only: bool,
    destructive: bool,
    idempotent: bool,
    open_world: bool,
) -> ToolAnnotations {
    ToolAnnotations::new()
        .read_only(read_only)
        .destructive(destructive)
        .idempotent(idempotent)
        .open_world(open_world)
}

/// Annotations of a tool that only reads: same answer for the same state, nothing changed.
pub fn read_only() -> ToolAnnotations {
    annotations(true, false, true, false)
}

/// A tool whose input schema is derived from `T`, the struct its arguments parse into.
pub fn tool<T: JsonSchema + 'static>(
    name: &'static str,
    description: &'static str,
    output: Arc<JsonObject>,
    annotations: ToolAnnotations,
) -> Result<Tool, ErrorData> {
    let input = schema_for_input::<T>().map_err(|e| ErrorData::internal_error(e, None))?;
    Ok(Tool::new(name, description, input)
        .with_raw_output_schema(output)
        .with_annotations(annotations))
}

/// An output schema: an object with these required properties, each of this JSON type.
pub fn output_schema(props: &[(&str, Value)]) -> Arc<JsonObject> {
    let properties: serde_json::Map<String, Value> = props
        .iter()
        .map(|(name, schema)| (name.to_string(), schema.clone()))
        .collect();
    let required: Vec<&str> = props.iter().map(|(name, _)| *name).collect();
    let mut o = JsonObject::new();
    o.insert("type".into(), json!("object"));
    o.insert("properties".into(), Value::Object(properties));
    o.insert("required".into(), json!(required));
    Arc::new(o)
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
