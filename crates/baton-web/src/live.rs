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
//! Each event goes out as the page gets it ([`crate::lean`]).

use std::convert::Infallible;
use std::path::PathBuf;

use axum::response::sse::Event as SseEvent;
use baton_events::projection::{Doc, Projection};
use baton_events::{Cursor, Feed, Filter};
use baton_state::StateDir;
use futures::Stream;

use crate::history::History;
use crate::lean::{lean, price_typed, Prices};

/// How many messages may wait for a slow client before its reader waits too.
const BACKLOG: usize = 16;
/// The data one message carries before the next begins (at least four times the cursor's
/// length, so that the ids stay a small part of the stream however many logs there are).
const BATCH_BYTES: usize = 256 * 1024;
/// How soon a browser reconnects after losing the stream.
const RETRY: std::time::Duration = std::time::Duration::from_millis(300);
/// How often the logs are read again when they cannot be watched.
const POLL: std::time::Duration = std::time::Duration::from_millis(250);

/// The feed after `since`, as SSE messages (`data` = a JSON array of events, `id` = the cursor
/// after its last one). A log that stops being readable (damage) is an `error` event naming
/// it; the others go on.
///
/// With `overview` (the page's first connection, given the server's history), what the logs
/// hold at the start is not sent event by event: one `overview` message says where each log
/// stands ([`crate::history::Overview`]), its `id` the cursor after everything it covers, and the
/// events appended after it follow as usual. The history is read once per server, not once per
/// page.
pub fn events(
    state: StateDir,
    root: PathBuf,
    since: Cursor,
    prices: Prices,
    overview: Option<std::sync::Arc<std::sync::Mutex<History>>>,
) -> impl Stream<Item = Result<SseEvent, Infallible>> {
    let (tx, rx) = tokio::sync::mpsc::channel::<SseEvent>(BACKLOG);
    // A browser that loses the stream (the server restarted, say) asks again after this long,
    // with the last id it got.
    let _ = tx.try_send(SseEvent::default().retry(RETRY));
    std::thread::spawn(move || {
        // The projection is folded from the start of every log, whatever the client resumes
        // from: the events up to `since` are folded, not sent.
        let state_dir = state.clone();
        let mut feed = Feed::new(state, Filter::default(), Cursor::default());
        let mut batcher = Batcher {
            since: since.clone(),
            cursor: since,
            projection: Projection::default(),
            prices,
        };
        let errors = tx.clone();
        if let Some(history) = overview {
            let Some((message, projection, cursor)) = first_message(&history) else {
                return;
            };
            // The stream goes on after what the message covers, from the projection it was
            // drawn from.
            feed = Feed::new(state_dir.clone(), Filter::default(), cursor.clone());
            batcher.projection = projection;
            batcher.since = cursor.clone();
            batcher.cursor = cursor;
            if tx.blocking_send(message).is_err() {
                return;
            }
        }
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

/// The `overview` message of everything the history holds (read up to now first), the
/// projection it was drawn from and the cursor after it; `None` when it cannot be written.
fn first_message(history: &std::sync::Mutex<History>) -> Option<(SseEvent, Projection, Cursor)> {
    let mut h = match history.lock() {
        Ok(h) => h,
        Err(poisoned) => poisoned.into_inner(),
    };
    h.catch_up();
    let (overview, projection, cursor) = h.overview();
    let text = serde_json::to_string(&overview).ok()?;
    let message = SseEvent::default()
        .event("overview")
        .id(cursor.to_string())
        .data(text);
    Some((message, projection.clone(), cursor.clone()))
}

/// About how long the cursor is written out (without writing it).
fn cursor_len(cursor: &Cursor) -> usize {
    cursor.positions().map(|p| p.source.id.len() + 24).sum()
}
