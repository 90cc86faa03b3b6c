//! The project event feed as server-sent events.
//!
//! Each connection has a reader of its own, on a thread, following the project's logs from the
//! cursor the client gives (`Last-Event-ID`, else `?since=`, else the start). Events go out in
//! batches: one message is a JSON array of the events one read of the logs found (split so that
//! a message stays small), and its `id:` is the feed's cursor after its last event. A client that
//! reconnects with that id gets exactly the events after it: no gap, no duplicate. The reader
//! hands messages over through a bounded channel and waits while it is full: a slow client is
//! served from the files at its own pace, never dropped and never buffered without bound.
//!
//! The page needs the feed's shape, not its bulk: a workflow event's `delta` (the artifact's
//! change) keeps only the task graph, the spending and the budget
//! (`/api/workflows/{id}/artifact` has the artifact at any event) and a session's long texts are
//! cut (`/api/sessions/{id}/transcript` has them whole).

use std::convert::Infallible;
use std::path::PathBuf;

use axum::response::sse::Event as SseEvent;
use baton_events::projection::{Doc, Projection};
use baton_events::{Cursor, Feed, Filter, SourceKind};
use baton_state::StateDir;
use futures::Stream;
use serde_json::Value;

/// How many messages may wait for a slow client before its reader waits too.
const BACKLOG: usize = 16;
/// The data one message carries before the next begins (at least four times the cursor's
/// length, so that the ids stay a small part of the stream however many logs there are).
const BATCH_BYTES: usize = 256 * 1024;
/// How much of a session's text the stream carries.
const SESSION_TEXT: usize = 400;
/// How soon a browser reconnects after losing the stream.
const RETRY: std::time::Duration = std::time::Duration::from_millis(300);
/// How often the logs are read again when they cannot be watched.
const POLL: std::time::Duration = std::time::Duration::from_millis(250);

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

/// The feed after `since`, as SSE messages (`data` = a JSON array of events, `id` = the cursor
/// after its last one). A log that stops being readable (damage) is an `error` event naming
/// it; the others go on.
pub fn events(
    state: StateDir,
    root: PathBuf,
    since: Cursor,
    prices: Prices,
) -> impl Stream<Item = Result<SseEvent, Infallible>> {
    let (tx, rx) = tokio::sync::mpsc::channel::<SseEvent>(BACKLOG);
    // A browser that loses the stream (the server restarted, say) asks again after this long,
    // with the last id it got.
    let _ = tx.try_send(SseEvent::default().retry(RETRY));
    std::thread::spawn(move || {
        // The projection is folded from the start of every log, whatever the client resumes
        // from: the events up to `since` are folded, not sent.
        let mut feed = Feed::new(state, Filter::default(), Cursor::default());
        let mut batcher = Batcher {
            since: since.clone(),
            cursor: since,
            projection: Projection::default(),
            prices,
        };
        let errors = tx.clone();
        let gone = std::cell::Cell::new(false);
        let mut emit = |events: Vec<baton_events::Event>| -> std::io::Result<()> {
            for message in batcher.messages(events)? {
                // Waits while the client is behind; fails once it went away.
                tx.blocking_send(message).map_err(|_| {
                    gone.set(true);
                    std::io::Error::other("the client went away")
                })?;
            }
            Ok(())
        };
        let report = |e: &baton_events::FeedError| {
            let text = baton_text::sanitize_line(&e.to_string()).into_owned();
            let _ = errors.blocking_send(SseEvent::default().event("error").data(text));
        };
        let followed =
            baton_events::follow::stream_batches(&mut feed, &root, true, &mut emit, &mut &report);
        if let Err(e) = followed {
            if gone.get() {
                return;
            }
            // Watching the folders failed (inotify's limit of instances, say): the same feed
            // is read again every POLL instead — nothing skipped, nothing twice.
            let note = format!(
                "following the logs with inotify failed ({e}): reading them every {POLL:?} instead"
            );
            let _ = errors.blocking_send(SseEvent::default().event("note").data(note));
            loop {
                let (events, errs) = feed.poll();
                for e in &errs {
                    report(e);
                }
                if !events.is_empty() && emit(events).is_err() {
                    return;
                }
                std::thread::sleep(POLL);
            }
        }
    });
    futures::stream::unfold(
        rx,
        |mut rx| async move { rx.recv().await.map(|e| (Ok(e), rx)) },
    )
}

/// What one connection holds: the cursor it has sent up to, the projection of everything read.
struct Batcher {
    /// Where the client resumed: events at or before it are folded, not sent.
    since: Cursor,
    cursor: Cursor,
    projection: Projection,
    prices: Prices,
}

impl Batcher {
    /// The messages for one read of the logs: for each batch cut at about [`BATCH_BYTES`], a
    /// `projection` message (the documents of the logs the batch touched, after it), then the
    /// batch (`id` = the cursor after its last event). The documents come first: a client that
    /// loses the stream between the two gets the batch again, and the documents with it.
    fn messages(&mut self, events: Vec<baton_events::Event>) -> std::io::Result<Vec<SseEvent>> {
        let mut out = Vec::new();
        let mut data = String::from("[");
        let mut touched = std::collections::BTreeSet::new();
        let n = events.len();
        for (k, mut e) in events.into_iter().enumerate() {
            let priced = price_typed(&mut e, &self.prices);
            self.projection.apply(&e, 0);
            let old = self.since.get(&e.pos.source);
            if old.is_none_or(|o| e.pos.offset > o) {
                self.cursor.advance(&e.pos);
                touched.insert((e.source.kind, e.source.id.clone()));
                let v = lean(e, &priced).map_err(std::io::Error::other)?;
                if data.len() > 1 {
                    data.push(',');
                }
                data.push_str(&v.to_string());
            }
            let limit = BATCH_BYTES.max(4 * cursor_len(&self.cursor));
            if data.len() > 1 && (k + 1 == n || data.len() >= limit) {
                let docs: Vec<Doc> = std::mem::take(&mut touched)
                    .into_iter()
                    .filter_map(|(kind, id)| self.projection.doc(kind, &id))
                    .collect();
                if !docs.is_empty() {
                    let text = serde_json::to_string(&docs).map_err(std::io::Error::other)?;
                    out.push(SseEvent::default().event("projection").data(text));
                }
                data.push(']');
                out.push(
                    SseEvent::default()
                        .id(self.cursor.to_string())
                        .data(std::mem::replace(&mut data, String::from("["))),
                );
            }
        }
        Ok(out)
    }
}

/// About how long the cursor is written out (without writing it).
fn cursor_len(cursor: &Cursor) -> usize {
    cursor.positions().map(|p| p.source.id.len() + 24).sum()
}
