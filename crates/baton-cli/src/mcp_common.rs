//! What the modules of `baton mcp` share: argument parsing that names the bad field, and output
//! schemas.

use std::sync::Arc;

use rmcp::model::JsonObject;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

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
