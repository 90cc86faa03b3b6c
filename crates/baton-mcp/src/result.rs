//! The results of `baton mcp`'s tools: a document as `structuredContent` and as text, known
//! provider keys redacted, bounded by the project's output cap.

use rmcp::model::{CallToolResult, ContentBlock};
use serde::Serialize;
use serde_json::{json, Value};

/// A tool result: `doc` as `structuredContent` and as its JSON text, an error result unless `ok`.
/// Known provider keys are redacted, and the document is bounded by `cap` bytes of JSON (the
/// project's `executor.output_cap_bytes`, as for a delegation's output): see [`bound`].
pub fn document_result(doc: &impl Serialize, ok: bool, cap: usize) -> CallToolResult {
    let structured = bound(redacted(&baton_app::documents::to_value(doc)), cap);
    let text = structured.to_string();
    with_content(text, structured, ok)
}

/// A tool result whose text is written for a person (a brief, a Flow's report) and whose
/// `structuredContent` is `doc`: both redacted, the text cut to `cap` bytes (its head kept, then
/// the `[… N bytes omitted …]` marker) and the document bounded as in [`document_result`].
pub fn text_result(text: &str, doc: &impl Serialize, ok: bool, cap: usize) -> CallToolResult {
    let text = baton_text::redact::redact(text);
    let text = baton_text::truncate(&text, cap, baton_text::Keep::Head).into_owned();
    with_content(
        text,
        bound(redacted(&baton_app::documents::to_value(doc)), cap),
        ok,
    )
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
