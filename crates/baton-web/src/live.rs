//! The project event feed as server-sent events.
//!
//! Each connection has a reader of its own, on a thread, following the project's logs from the
//! cursor the client gives (`Last-Event-ID`, else `?since=`, else the start). Every event is sent
//! with `id:` the feed's cursor after it, so a client that reconnects with that id gets exactly
//! the events after it: no gap, no duplicate. The reader hands events over through a bounded
//! channel and waits while it is full: a slow client is served from the files at its own pace,
//! never dropped and never buffered without bound.

use std::convert::Infallible;
use std::path::PathBuf;

use axum::response::sse::Event as SseEvent;
use baton_events::{Cursor, Feed, Filter};
use baton_state::StateDir;
use futures::Stream;

/// How many events may wait for a slow client before its reader waits too.
const BACKLOG: usize = 256;
/// How often the logs are read again when they cannot be watched.
const POLL: std::time::Duration = std::time::Duration::from_millis(250);

/// The feed after `since`, as SSE events (`id` = the cursor after each one, `data` = the event as
/// `baton events --json` prints it). A log that stops being readable (damage) is an `error`
/// event naming it; the others go on.
pub fn events(
    state: StateDir,
    root: PathBuf,
    since: Cursor,
) -> impl Stream<Item = Result<SseEvent, Infallible>> {
    let (tx, rx) = tokio::sync::mpsc::channel::<SseEvent>(BACKLOG);
    std::thread::spawn(move || {
        let mut feed = Feed::new(state, Filter::default(), since.clone());
        let mut cursor = since;
        let errors = tx.clone();
        let gone = std::cell::Cell::new(false);
        let mut emit = |e: &baton_events::Event| -> std::io::Result<()> {
            cursor.advance(&e.pos);
            let data = serde_json::to_string(e).map_err(std::io::Error::other)?;
            let event = SseEvent::default().id(cursor.to_string()).data(data);
            // Waits while the client is behind; fails once it went away.
            tx.blocking_send(event).map_err(|_| {
                gone.set(true);
                std::io::Error::other("the client went away")
            })
        };
        let report = |e: &baton_events::FeedError| {
            let text = baton_text::sanitize_line(&e.to_string()).into_owned();
            let _ = errors.blocking_send(SseEvent::default().event("error").data(text));
        };
        let followed =
            baton_events::follow::stream(&mut feed, &root, true, &mut emit, &mut &report);
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
                for e in &events {
                    if emit(e).is_err() {
                        return;
                    }
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
