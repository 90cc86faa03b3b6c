//! What the modules of `baton mcp` share: tool definitions, argument parsing that names the bad
//! field, output schemas, results bounded by the output cap, the executor every call of a server
//! shares, and progress notifications.

use std::sync::{Arc, Mutex};

use baton_exec::delegate::DelegateEnv;
use baton_exec::executor::Executor;
use baton_workflow::run::Observer;
use rmcp::handler::server::common::schema_for_input;
use rmcp::model::{
    CallToolResult, ContentBlock, JsonObject, ProgressNotificationParam, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
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

/// The executor every delegation, Flow and workflow of one `baton mcp` shares (its concurrency
/// cap holds across calls and sessions), made at the first call that needs one.
#[derive(Clone, Default)]
pub struct SharedExecutor(Arc<Mutex<Option<Arc<Executor>>>>);

impl SharedExecutor {
    pub fn get(&self, env: &DelegateEnv) -> Result<Arc<Executor>, String> {
        let mut slot = self
            .0
            .lock()
            .map_err(|_| "baton mcp: the executor is unusable after a panic".to_string())?;
        if let Some(e) = slot.as_ref() {
            return Ok(e.clone());
        }
        let e =
            Arc::new(crate::project::executor_for(env).map_err(|e| format!("baton mcp: {e:#}"))?);
        *slot = Some(e.clone());
        Ok(e)
    }
}

/// Forwards a workflow's observer lines to the client as `notifications/progress` with the
/// call's progress token, `progress` counting the lines (no `total`: a workflow's length is not
/// known ahead). Without a token, nothing is sent.
pub struct ProgressForward {
    sender: Arc<Mutex<Option<tokio::sync::mpsc::UnboundedSender<String>>>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl ProgressForward {
    pub fn new(context: &RequestContext<RoleServer>) -> ProgressForward {
        let Some(token) = context.meta.get_progress_token() else {
            return ProgressForward {
                sender: Arc::new(Mutex::new(None)),
                task: None,
            };
        };
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        let peer = context.peer.clone();
        let task = tokio::spawn(async move {
            let mut progress = 0.0;
            while let Some(line) = rx.recv().await {
                progress += 1.0;
                let param = ProgressNotificationParam::new(token.clone(), progress)
                    .with_message(baton_text::redact::redact(&line).into_owned());
                if peer.notify_progress(param).await.is_err() {
                    break;
                }
            }
        });
        ProgressForward {
            sender: Arc::new(Mutex::new(Some(tx))),
            task: Some(task),
        }
    }

    /// The observer a `RunEnv` takes: each line goes out as one notification.
    pub fn observer(&self) -> Option<Observer> {
        self.task.as_ref()?;
        let sender = self.sender.clone();
        Some(Arc::new(move |line: &str| {
            if let Ok(slot) = sender.lock() {
                if let Some(tx) = slot.as_ref() {
                    let _ = tx.send(baton_text::sanitize_line(line).into_owned());
                }
            }
        }))
    }

    pub fn say(&self, line: &str) {
        if let Some(o) = self.observer() {
            o(line);
        }
    }

    /// Closes the channel and waits until every line has been sent, so that the notifications
    /// reach the client before the result.
    pub async fn finish(mut self) {
        if let Ok(mut slot) = self.sender.lock() {
            slot.take();
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
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

/// A tool result: `doc` as `structuredContent` and as its JSON text, an error result unless `ok`.
/// Known provider keys are redacted, and the document is bounded by `cap` bytes of JSON (the
/// project's `executor.output_cap_bytes`, as for a delegation's output): see [`bound`].
pub fn document_result(doc: &Value, ok: bool, cap: usize) -> CallToolResult {
    let structured = bound(redacted(doc), cap);
    let text = structured.to_string();
    with_content(text, structured, ok)
}

/// A tool result whose text is written for a person (a brief, a Flow's report) and whose
/// `structuredContent` is `doc`: both redacted, the text cut to `cap` bytes (its head kept, then
/// the `[… N bytes omitted …]` marker) and the document bounded as in [`document_result`].
pub fn text_result(text: &str, doc: &Value, ok: bool, cap: usize) -> CallToolResult {
    let text = baton_text::redact::redact(text);
    let text = baton_text::truncate(&text, cap, baton_text::Keep::Head).into_owned();
    with_content(text, bound(redacted(doc), cap), ok)
}

/// `doc` with known provider keys replaced.
fn redacted(doc: &Value) -> Value {
    let text = baton_text::redact::redact(&doc.to_string()).into_owned();
    serde_json::from_str(&text).unwrap_or_else(|_| doc.clone())
}

fn with_content(text: String, structured: Value, ok: bool) -> CallToolResult {
    let content = vec![ContentBlock::text(text)];
    let mut result = if ok {
        CallToolResult::success(content)
    } else {
        CallToolResult::error(content)
    };
    result.structured_content = Some(structured);
    result
}

/// `doc` made to fit in `cap` bytes of JSON, cutting the largest parts first: trailing items of
/// an array (the count goes into a top-level `"truncated"` list as `{"path", "omitted_items"}`),
/// or the end of a string (followed by the `[… N bytes omitted …]` marker). The document's shape
/// (its keys and types) is kept, so it still matches the tool's output schema. A document that
/// fits is returned unchanged.
pub fn bound(mut doc: Value, cap: usize) -> Value {
    let mut truncated: Vec<Value> = Vec::new();
    // Each round cuts the largest part by as much as is over; it ends when the document fits or
    // nothing is left to cut.
    loop {
        let size = json_len(&doc) + json_len(&Value::Array(truncated.clone()));
        if size <= cap {
            break;
        }
        let over = size - cap;
        let Some(path) = largest_part(&doc, String::new()).map(|(p, _)| p) else {
            break;
        };
        let Some(part) = doc.pointer_mut(&path) else {
            break;
        };
        match part {
            Value::Array(items) => {
                let mut removed = 0;
                let mut dropped = 0;
                while removed < over + 64 && !items.is_empty() {
                    removed += items.pop().map_or(0, |i| json_len(&i) + 1);
                    dropped += 1;
                }
                let entry = truncated
                    .iter_mut()
                    .find(|t| t["path"] == json!(path.as_str()));
                match entry {
                    Some(t) => {
                        let n = t["omitted_items"].as_u64().unwrap_or(0) + dropped;
                        t["omitted_items"] = json!(n);
                    }
                    None => truncated.push(json!({"path": path, "omitted_items": dropped})),
                }
            }
            Value::String(s) => {
                let keep = s.len().saturating_sub(over + 64);
                let cut = baton_text::truncate(s, keep, baton_text::Keep::Head).into_owned();
                if cut.len() >= s.len() {
                    break;
                }
                *s = cut;
            }
            _ => break,
        }
    }
    if !truncated.is_empty() {
        if let Value::Object(o) = &mut doc {
            o.insert("truncated".into(), Value::Array(truncated));
        }
    }
    doc
}

fn json_len(v: &Value) -> usize {
    serde_json::to_vec(v).map_or(0, |b| b.len())
}

/// The JSON pointer and size of the largest non-empty array or long string in `v`, looking inside
/// objects and into arrays' items (an array counts as a whole; a larger part inside one of its
/// items wins).
fn largest_part(v: &Value, path: String) -> Option<(String, usize)> {
    let mut best: Option<(String, usize)> = None;
    let mut consider = |c: Option<(String, usize)>| {
        if let Some((p, n)) = c {
            if best.as_ref().is_none_or(|(_, b)| n > *b) {
                best = Some((p, n));
            }
        }
    };
    match v {
        Value::Object(o) => {
            for (k, child) in o {
                let key = k.replace('~', "~0").replace('/', "~1");
                consider(largest_part(child, format!("{path}/{key}")));
            }
        }
        Value::Array(items) if !items.is_empty() => {
            consider(Some((path.clone(), json_len(v))));
            for (i, child) in items.iter().enumerate() {
                consider(largest_part(child, format!("{path}/{i}")));
            }
        }
        // The marker alone takes about 30 bytes: shorter strings are not worth cutting.
        Value::String(s) if s.len() > 64 => consider(Some((path, s.len()))),
        _ => {}
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_that_fits_is_unchanged() {
        let doc = json!({"flows": [1, 2, 3], "note": "short"});
        assert_eq!(bound(doc.clone(), 1000), doc);
    }

    #[test]
    fn a_long_list_loses_its_last_items_and_says_how_many() {
        let items: Vec<Value> = (0..500)
            .map(|i| json!({"id": format!("wf-{i:04}"), "state": "completed"}))
            .collect();
        let doc = json!({"workflows": items});
        let out = bound(doc, 4096);
        assert!(json_len(&out) <= 4096, "{}", json_len(&out));
        let kept = out["workflows"].as_array().unwrap().len();
        assert!(kept > 0 && kept < 500);
        assert_eq!(out["workflows"][0]["id"], "wf-0000");
        assert_eq!(
            out["truncated"],
            json!([{"path": "/workflows", "omitted_items": 500 - kept}])
        );
    }

    #[test]
    fn a_long_string_is_cut_with_the_exact_marker() {
        let brief = "x".repeat(10_000);
        let out = bound(json!({"type": "workflow.completed", "brief": brief}), 2000);
        assert!(json_len(&out) <= 2000);
        let s = out["brief"].as_str().unwrap();
        let kept = s.find('\n').unwrap();
        assert!(
            s.ends_with(&baton_text::omitted_marker(10_000 - kept)),
            "{s}"
        );
        assert_eq!(out["type"], "workflow.completed");
        assert!(out.get("truncated").is_none());
    }

    #[test]
    fn the_largest_part_is_cut_first() {
        let doc = json!({"small": "y".repeat(200), "list": vec!["z".repeat(100); 100]});
        let out = bound(doc, 5000);
        assert_eq!(out["small"].as_str().unwrap().len(), 200);
        assert!(json_len(&out) <= 5000);
    }
}
