//! An event as the page gets it: the feed's shape, not its bulk. A workflow event's `delta` (the
//! artifact's change) keeps only the task graph, the spending and the budget
//! (`/api/workflows/{id}/artifact` has the artifact at any event) and a session's long texts are
//! cut (`/api/sessions/{id}/transcript` has them whole); a finished task's children that did not
//! say what they cost are priced.

use baton_events::SourceKind;
use serde_json::Value;

/// How much of a session's text the stream carries.
const SESSION_TEXT: usize = 400;

/// The price table the stream prices tasks' children with.
pub type Prices = std::sync::Arc<std::collections::BTreeMap<String, baton_protocol::config::Price>>;

/// The event as the page gets it: as `baton events --json` prints it, less the bulk; the entries
/// of a finished task that [`price_typed`] priced say so (`cost_source: "prices"`).
pub fn lean(mut e: baton_events::Event, priced: &[usize]) -> serde_json::Result<Value> {
    // The artifact's change is cut down before anything is copied: it is most of a log's bytes.
    if let baton_events::Payload::Workflow(w) = &mut e.event {
        w.delta = w
            .delta
            .take()
            .map(|d| Value::Object(graph_of(&d)))
            .filter(|d| d.as_object().is_some_and(|m| !m.is_empty()));
    }
    let mut v = serde_json::to_value(&e)?;
    match e.source.kind {
        SourceKind::Task if !priced.is_empty() => {
            if let Some(entries) = v["event"]["report"]["entries"].as_array_mut() {
                for k in priced {
                    if let Some(entry) = entries.get_mut(*k) {
                        entry["cost_source"] = "prices".into();
                    }
                }
            }
        }
        SourceKind::Session => {
            if let Some(ev) = v.get_mut("event") {
                shorten(ev);
            }
        }
        _ => {}
    }
    Ok(v)
}

/// Prices the children of a finished task that did not say what they cost, from their model and
/// tokens (as `baton task` prices them), before the event is folded or sent; the indices of the
/// entries it priced.
pub fn price_typed(e: &mut baton_events::Event, prices: &Prices) -> Vec<usize> {
    match &mut e.event {
        baton_events::Payload::Task(baton_exec::background::TaskEvent::Completed { report }) => {
            report.price_unpriced(prices)
        }
        _ => Vec::new(),
    }
}

/// Of a workflow event's change, what the page's lists and graph need: the tasks (id, status,
/// `blockedBy`, phase, origin), what was spent and the budget.
fn graph_of(delta: &Value) -> serde_json::Map<String, Value> {
    let mut kept = serde_json::Map::new();
    if let Some(tasks) = delta.get("tasks").and_then(Value::as_array) {
        let tasks = tasks
            .iter()
            .map(|t| {
                let mut small = serde_json::Map::new();
                for k in ["id", "status", "blockedBy", "phase", "origin"] {
                    if let Some(v) = t.get(k) {
                        small.insert(k.into(), v.clone());
                    }
                }
                Value::Object(small)
            })
            .collect();
        kept.insert("tasks".into(), Value::Array(tasks));
    }
    if let Some(spent) = delta.get("spent") {
        kept.insert("spent".into(), spent.clone());
    }
    let mut run = serde_json::Map::new();
    for k in ["budget_usd", "budget_tokens"] {
        if let Some(v) = delta.get("run").and_then(|r| r.get(k)) {
            run.insert(k.into(), v.clone());
        }
    }
    if !run.is_empty() {
        kept.insert("run".into(), Value::Object(run));
    }
    kept
}

/// Cuts every string in `v` to [`SESSION_TEXT`] characters.
fn shorten(v: &mut Value) {
    match v {
        Value::String(s) if s.chars().count() > SESSION_TEXT => {
            let cut: String = s.chars().take(SESSION_TEXT).collect();
            *s = format!("{cut}…");
        }
        Value::Array(items) => items.iter_mut().for_each(shorten),
        Value::Object(map) => map.values_mut().for_each(shorten),
        _ => {}
    }
}
