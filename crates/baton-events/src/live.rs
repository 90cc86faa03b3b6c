//! The feed in-process: the lines this process appends to the project's logs, handed over as
//! they are written (`baton_state::appended`) and decoded into the same [`Event`]s, with the
//! same positions, that [`crate::Feed`] reads from the files. A view running in the process that
//! writes (an MCP server driving a workflow, a terminal view) reads them here without waiting
//! for the file system; a reader in another process follows the files.

use std::time::Duration;

use baton_protocol::{Position, ProjectEvent, Subscription};
use baton_state::{Appended, StateDir};

use crate::feed::Filter;
use crate::{Event, Feed, Payload};

/// A subscription to the project's logs as this process appends them.
pub struct Live {
    lines: Subscription<Appended>,
    /// Maps a log's path to its source, by the project's layout.
    layout: Feed,
}

impl Live {
    /// Subscribes now: every line appended from now on to a log of `state` that `filter` wants.
    pub fn subscribe(state: StateDir, filter: Filter) -> Live {
        Live {
            lines: baton_state::appended().subscribe(),
            layout: Feed::new(state, filter, Default::default()),
        }
    }

    /// The next event, waiting at most `timeout`; `None` when none came by then.
    pub fn next(&self, timeout: Duration) -> Option<Event> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let line = self.lines.next(left)?;
            if let Some(e) = self.decode(&line) {
                return Some(e);
            }
        }
    }

    /// The events already appended and not yet taken, without waiting.
    pub fn drain(&self) -> Vec<Event> {
        self.lines
            .drain()
            .iter()
            .filter_map(|l| self.decode(l))
            .collect()
    }

    /// The event of one appended line, when it is in a log the filter wants and reads as its
    /// kind's record.
    fn decode(&self, a: &Appended) -> Option<Event> {
        let dir = a.path.parent()?;
        let name = a.path.file_name()?.to_str()?;
        let source = self.layout.source_of(dir, name)?;
        let event = Payload::parse(source.kind, a.line.as_bytes()).ok()?;
        Some(ProjectEvent {
            pos: Position {
                source: source.clone(),
                offset: a.offset,
            },
            source,
            ts: event.ts().map(str::to_string),
            event,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use baton_protocol::{Cursor, SourceKind};
    use baton_state::{Durability, JsonlLog};
    use baton_workflow::route::WorkflowKind;
    use baton_workflow::store::{EventKind, NewEvent, WorkflowStore};
    use pretty_assertions::assert_eq;
    use serde_json::{json, Value};

    use super::*;

    /// What a process appends reaches its live subscribers as the events, at the positions, that
    /// a reader of the files gets; another project's lines are not among them.
    #[test]
    fn live_events_are_the_file_feed_s_events_as_they_are_appended() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::at(dir.path().join("a"));
        let other = StateDir::at(dir.path().join("b"));
        let live = Live::subscribe(state.clone(), Filter::default());
        assert!(live.next(Duration::ZERO).is_none());

        let mut wf = WorkflowStore::new(state.clone())
            .create(WorkflowKind::Build, "add a flag")
            .unwrap();
        wf.append(NewEvent::new(EventKind::ArtifactUpdated).reason("one"))
            .unwrap();
        let flow = state.flows().join("fl-1.events.jsonl");
        let mut log: JsonlLog<Value> = JsonlLog::create(&flow, Durability::Fsync).unwrap();
        log.append_all(&[
            json!({"seq": 1, "at": "2026-12-04T21:00:00Z", "type": "flow.halted", "reason": "a"}),
            json!({"seq": 2, "at": "2026-12-04T21:00:01Z", "type": "flow.halted", "reason": "b"}),
        ])
        .unwrap();
        WorkflowStore::new(other)
            .create(WorkflowKind::Build, "elsewhere")
            .unwrap();

        let got = live.drain();
        let (mut read, errors) = Feed::new(state, Filter::default(), Cursor::default()).poll();
        assert!(errors.is_empty(), "{errors:?}");
        let order = |e: &Event| (e.source.clone(), e.pos.offset);
        read.sort_by_key(order);
        let mut sorted = got.clone();
        sorted.sort_by_key(order);
        assert_eq!(sorted, read);
        let kinds: Vec<SourceKind> = got.iter().map(|e| e.source.kind).collect();
        assert_eq!(
            kinds,
            [
                SourceKind::Workflow,
                SourceKind::Workflow,
                SourceKind::Flow,
                SourceKind::Flow
            ]
        );
    }
}
