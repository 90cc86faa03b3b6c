//! Reading the project's logs as one stream, from a [`Cursor`] on.
//!
//! Each log is read from where the reader left it, whole lines only: a line is an event once its
//! `\n` is there, so a torn last line (a writer killed mid-line, or one still writing) is left
//! for later and never shown twice or cut. A log the cursor names is read after the line at its
//! position, which must start a line of it; a log it does not name is read from its start.
//!
//! The events of one read are ordered by time, then position: every line takes the time it
//! records, or the time of the line before it in its log when it records none (a routing
//! journal starts at its session's creation time), so each log's own order is kept.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use baton_protocol::{Cursor, Position, ProjectEvent, Source, SourceKind};
use baton_state::{check_id, Appended, IdKind, StateDir};

use crate::{Event, Payload};

/// Which events a reader wants: the kinds and ids of their logs (empty: all).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pub kinds: Vec<SourceKind>,
    pub ids: Vec<String>,
}

impl Filter {
    pub fn wants_kind(&self, kind: SourceKind) -> bool {
        self.kinds.is_empty() || self.kinds.contains(&kind)
    }

    pub fn wants(&self, source: &Source) -> bool {
        self.wants_kind(source.kind) && (self.ids.is_empty() || self.ids.contains(&source.id))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum FeedError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A complete line that is not an event of its log: reading that log stops there.
    #[error(
        "{}: the line at byte {offset} {problem}; the events before it were read, none after it. \
         `baton repair {id}` shows the damage",
        path.display()
    )]
    Damaged {
        path: PathBuf,
        offset: u64,
        problem: String,
        id: String,
    },
    /// The cursor's position does not start a line of its log.
    #[error(
        "--since {pos}: {problem} ({}); give the `pos` of an event as `baton events` printed it",
        path.display()
    )]
    Since {
        pos: String,
        path: PathBuf,
        problem: String,
    },
    /// The log is shorter than what was read of it.
    #[error(
        "{}: the log is now {len} bytes, shorter than the {offset} already read: it was cut \
         (by `baton repair --apply`?); its events are no longer followed",
        path.display()
    )]
    Shrunk {
        path: PathBuf,
        len: u64,
        offset: u64,
    },
}

/// Where the logs of `kind` are, and the end of their file names.
pub fn location(state: &StateDir, kind: SourceKind) -> (PathBuf, &'static str) {
    match kind {
        SourceKind::Session => (state.sessions(), ".jsonl"),
        SourceKind::Routing => (state.sessions(), ".journal"),
        SourceKind::Task => (state.tasks(), ".events.jsonl"),
        SourceKind::Flow => (state.flows(), ".events.jsonl"),
        SourceKind::Workflow => (state.workflows(), ".events.jsonl"),
        SourceKind::Worker => (state.workers(), ".events.jsonl"),
    }
}

/// What the reader knows of one log.
#[derive(Debug)]
struct Log {
    path: PathBuf,
    /// The next byte to read: the end of the last complete line read.
    next: u64,
    /// The cursor's position in this log, whose line is read but not shown.
    skip: Option<u64>,
    /// The time of the last line read, or the log's start.
    key: Option<i128>,
    /// Set after an error: the log is not read any more.
    stopped: bool,
    /// How its lines are read (the feed's [`Parse`]).
    parse: Parse,
}

impl Log {
    /// The complete line of this log at `offset`, which must be the next one: its event with its
    /// ordering key (none for a blank line or the cursor's own line), the log read past it; or
    /// the error that stops the reading of the log there.
    fn take(
        &mut self,
        source: &Source,
        offset: u64,
        line: &[u8],
    ) -> Result<Option<(Option<i128>, Event)>, FeedError> {
        let end = offset + line.len() as u64 + 1;
        if self.skip == Some(offset) {
            self.skip = None;
            self.next = end;
            // The line is not shown again, but its time still orders the lines after it.
            if let Ok(p) = (self.parse)(source.kind, line) {
                self.key = self.key.max(p.ts().and_then(parse_time));
            }
            return Ok(None);
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            self.next = end;
            return Ok(None);
        }
        let damaged = |problem: String| FeedError::Damaged {
            path: self.path.clone(),
            offset,
            problem,
            id: source.id.clone(),
        };
        if line.iter().any(|&b| b < 0x20 && b != b'\t' && b != b'\r') {
            return Err(damaged("holds NUL or control bytes".into()));
        }
        let payload = (self.parse)(source.kind, line)
            .map_err(|e| damaged(format!("is not a {} event: {e}", source.kind)))?;
        let ts = payload.ts().map(str::to_string);
        self.key = self.key.max(ts.as_deref().and_then(parse_time));
        self.next = end;
        Ok(Some((
            self.key,
            ProjectEvent {
                pos: Position {
                    source: source.clone(),
                    offset,
                },
                source: source.clone(),
                ts,
                event: payload,
            },
        )))
    }
}

/// How a line of a log of a kind is read into its event.
type Parse = fn(SourceKind, &[u8]) -> Result<Payload, serde_json::Error>;

/// The reader of a project's logs.
#[derive(Debug)]
pub struct Feed {
    state: StateDir,
    filter: Filter,
    since: Cursor,
    logs: BTreeMap<Source, Log>,
    parse: Parse,
}

/// What one read found: the events in order, and the errors of logs that stop being read.
pub type Batch = (Vec<Event>, Vec<FeedError>);

/// What the read of one log found: its new events with their ordering keys, and the error that
/// stopped it after them.
type LogRead = (Vec<(Option<i128>, Event)>, Option<FeedError>);

impl Feed {
    pub fn new(state: StateDir, filter: Filter, since: Cursor) -> Feed {
        Feed {
            state,
            filter,
            since,
            logs: BTreeMap::new(),
            parse: Payload::parse,
        }
    }

    /// The feed for a reader that only folds events into the projection (the dashboard's
    /// history, `projection::now`, the terminal UI's panel) or only asks which log changed (MCP's
    /// watch): a workflow event's change of the artifact keeps only what the projection reads
    /// ([`Payload::parse_projected`]).
    pub fn projected(mut self) -> Feed {
        self.parse = Payload::parse_projected;
        self
    }

    pub fn state(&self) -> &StateDir {
        &self.state
    }

    /// The folders holding the logs the filter wants.
    pub fn dirs(&self) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = SourceKind::ALL
            .into_iter()
            .filter(|&k| self.filter.wants_kind(k))
            .map(|k| location(&self.state, k).0)
            .collect();
        dirs.dedup();
        dirs
    }

    /// The log a file `name` in folder `dir` is, when it is one the filter wants.
    pub fn source_of(&self, dir: &Path, name: &str) -> Option<Source> {
        SourceKind::ALL.into_iter().find_map(|kind| {
            let (d, suffix) = location(&self.state, kind);
            let id = name.strip_suffix(suffix)?;
            let source = Source::new(kind, id);
            (d == dir && check_id(IdKind::Record, id).is_ok() && self.filter.wants(&source))
                .then_some(source)
        })
    }

    /// Every log the filter wants, new ones included, read up to its last complete line.
    pub fn poll(&mut self) -> Batch {
        let mut sources = Vec::new();
        for kind in SourceKind::ALL {
            if !self.filter.wants_kind(kind) {
                continue;
            }
            let (dir, suffix) = location(&self.state, kind);
            for id in StateDir::list_ids(&dir, suffix) {
                let source = Source::new(kind, id);
                if self.filter.wants(&source) {
                    sources.push(source);
                }
            }
        }
        self.poll_sources(sources)
    }

    /// The logs `sources` (new ones are added), read up to their last complete line.
    pub fn poll_sources(&mut self, sources: impl IntoIterator<Item = Source>) -> Batch {
        let mut keyed = Vec::new();
        let mut errors = Vec::new();
        for source in sources {
            let (events, error) = match self.read(&source) {
                Ok(events) => events,
                Err(e) => (Vec::new(), Some(e)),
            };
            keyed.extend(events);
            if let Some(e) = error {
                if let Some(log) = self.logs.get_mut(&source) {
                    log.stopped = true;
                }
                errors.push(e);
            }
        }
        keyed.sort_by(|(ka, a), (kb, b)| ka.cmp(kb).then_with(|| a.pos.cmp(&b.pos)));
        (keyed.into_iter().map(|(_, e)| e).collect(), errors)
    }

    /// A line this process appended to a log (as `baton_state::appended` hands it over): taken
    /// as it is, without reading the file, when it is the next line of that log; otherwise the
    /// log is read from its file up to its end. A line of a log the filter does not want, or one
    /// already read, gives nothing.
    pub fn take_appended(&mut self, appended: &Appended) -> Batch {
        let dir = appended.path.parent();
        let name = appended.path.file_name().and_then(|n| n.to_str());
        let Some(source) = dir.zip(name).and_then(|(d, n)| self.source_of(d, n)) else {
            return Batch::default();
        };
        let log = self.log(&source);
        let end = appended.offset + appended.line.len() as u64 + 1;
        if log.stopped || end <= log.next {
            return Batch::default();
        }
        if appended.offset != log.next || log.skip.is_some() {
            return self.poll_sources([source]);
        }
        match log.take(&source, appended.offset, appended.line.as_bytes()) {
            Ok(event) => (event.into_iter().map(|(_, e)| e).collect(), Vec::new()),
            Err(e) => {
                log.stopped = true;
                (Vec::new(), vec![e])
            }
        }
    }

    fn log(&mut self, source: &Source) -> &mut Log {
        let state = &self.state;
        let since = &self.since;
        let parse = self.parse;
        self.logs.entry(source.clone()).or_insert_with(|| {
            let (dir, suffix) = location(state, source.kind);
            let skip = since.get(source);
            let key = match source.kind {
                SourceKind::Routing => session_created(&state.sessions(), &source.id),
                _ => None,
            };
            Log {
                path: dir.join(format!("{}{suffix}", source.id)),
                next: skip.unwrap_or(0),
                skip,
                key,
                stopped: false,
                parse,
            }
        })
    }

    /// The new complete lines of one log, each with its ordering key, and the error that stopped
    /// the reading of the log (after the lines before it).
    fn read(&mut self, source: &Source) -> Result<LogRead, FeedError> {
        let log = self.log(source);
        if log.stopped {
            return Ok((Vec::new(), None));
        }
        let path = log.path.clone();
        let io = |e| FeedError::Io {
            path: path.clone(),
            source: e,
        };
        let mut file = match std::fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), None)),
            Err(e) => return Err(io(e)),
        };
        let len = file.metadata().map_err(io)?.len();
        if let Some(skip) = log.skip {
            let since = |problem: String| FeedError::Since {
                pos: Position {
                    source: source.clone(),
                    offset: skip,
                }
                .to_string(),
                path: path.clone(),
                problem,
            };
            if len <= skip {
                return Err(since(format!(
                    "the log ends at byte {len}, before that line"
                )));
            }
            if skip > 0 {
                let mut before = [0u8];
                file.seek(SeekFrom::Start(skip - 1)).map_err(io)?;
                file.read_exact(&mut before).map_err(io)?;
                if before[0] != b'\n' {
                    return Err(since("no line of the log starts there".into()));
                }
            }
        }
        if len < log.next {
            return Err(FeedError::Shrunk {
                path,
                len,
                offset: log.next,
            });
        }
        if len == log.next {
            return Ok((Vec::new(), None));
        }
        file.seek(SeekFrom::Start(log.next)).map_err(io)?;
        let mut bytes = Vec::with_capacity((len - log.next) as usize);
        file.take(len - log.next)
            .read_to_end(&mut bytes)
            .map_err(io)?;
        let base = log.next;
        let mut out = Vec::new();
        for (start, line) in complete_lines(&bytes) {
            match log.take(source, base + start as u64, line) {
                Ok(Some(event)) => out.push(event),
                Ok(None) => {}
                // Read up to the line before: an error on a later line keeps what came before.
                Err(e) => return Ok((out, Some(e))),
            }
        }
        Ok((out, None))
    }
}

/// The complete lines of `bytes` (each ended by `\n`, which is left out) with where they start;
/// what follows the last `\n` is a torn or unfinished line and is not among them.
pub fn complete_lines(bytes: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= complete {
            return None;
        }
        let end = start + bytes[start..complete].iter().position(|&b| b == b'\n')?;
        let line = (start, &bytes[start..end]);
        start = end + 1;
        Some(line)
    })
}

pub(crate) fn parse_time(ts: &str) -> Option<i128> {
    time::OffsetDateTime::parse(ts, &time::format_description::well_known::Rfc3339)
        .ok()
        .map(|t| t.unix_timestamp_nanos())
}

/// The creation time in the header of session `id`'s transcript, which a routing journal
/// starts at.
fn session_created(sessions: &Path, id: &str) -> Option<i128> {
    let mut head = Vec::new();
    std::fs::File::open(sessions.join(format!("{id}.jsonl")))
        .ok()?
        .take(64 * 1024)
        .read_to_end(&mut head)
        .ok()?;
    let (_, line) = complete_lines(&head).next()?;
    let payload = Payload::parse(SourceKind::Session, line).ok()?;
    parse_time(payload.ts()?)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::io::Write;

    use super::*;
    use pretty_assertions::assert_eq;

    fn wf_line(seq: u64, second: u32) -> String {
        format!(
            "{{\"seq\":{seq},\"ts\":\"2026-12-04T21:00:{second:02}Z\",\"wf\":\"wf-1\",\"event\":\"decided\",\"decision\":\"d{seq}\"}}\n"
        )
    }

    fn flow_line(seq: u64, second: u32) -> String {
        format!(
            "{{\"seq\":{seq},\"at\":\"2026-12-04T21:00:{second:02}Z\",\"type\":\"flow.halted\",\"reason\":\"r{seq}\"}}\n"
        )
    }

    fn append(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        f.write_all(text.as_bytes()).unwrap();
    }

    /// A line this process appended is taken from memory when it is the next line of its log;
    /// a line past a gap (another writer's line before it) reads the file; a line already read,
    /// or of a log of another project, gives nothing; a damaged one stops its log.
    #[test]
    fn an_appended_line_is_taken_from_memory_only_when_it_is_the_next_one() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::at(dir.path().join("state"));
        let path = state.flows().join("f1.events.jsonl");
        let one = flow_line(1, 0);
        append(&path, &one);
        let mut feed = feed(&state, "");
        assert_eq!(positions(&feed.poll().0), ["flow/f1:0"]);
        let appended = |offset: usize, line: &str| Appended {
            path: path.clone(),
            offset: offset as u64,
            line: line.trim_end().into(),
        };

        // Not in the file: only memory can have given it.
        let two = flow_line(2, 1);
        let (events, errors) = feed.take_appended(&appended(one.len(), &two));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(positions(&events), [format!("flow/f1:{}", one.len())]);
        assert!(feed.take_appended(&appended(one.len(), &two)).0.is_empty());

        let other = flow_line(3, 2);
        let four = flow_line(4, 3);
        append(&path, &format!("{two}{other}{four}"));
        let at_four = one.len() + two.len() + other.len();
        let (events, _) = feed.take_appended(&appended(at_four, &four));
        let read_from_file = [
            format!("flow/f1:{}", one.len() + two.len()),
            format!("flow/f1:{at_four}"),
        ];
        assert_eq!(positions(&events), read_from_file);

        let elsewhere = Appended {
            path: dir.path().join("other/flows/f1.events.jsonl"),
            ..appended(at_four + four.len(), &flow_line(5, 4))
        };
        assert!(feed.take_appended(&elsewhere).0.is_empty());

        let (events, errors) = feed.take_appended(&appended(at_four + four.len(), "{\"seq\":"));
        assert!(events.is_empty());
        assert!(
            matches!(&errors[..], [FeedError::Damaged { offset, .. }] if *offset == (at_four + four.len()) as u64),
            "{errors:?}"
        );
        let later = appended(at_four + four.len() + 9, &flow_line(6, 5));
        let (events, errors) = feed.take_appended(&later);
        assert!(events.is_empty() && errors.is_empty(), "the log is stopped");
    }

    fn positions(events: &[Event]) -> Vec<String> {
        events.iter().map(|e| e.pos.to_string()).collect()
    }

    fn feed(state: &StateDir, since: &str) -> Feed {
        Feed::new(state.clone(), Filter::default(), since.parse().unwrap())
    }

    #[test]
    fn a_torn_last_line_is_not_an_event_until_its_newline_is_there() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        let log = state.workflows().join("wf-1.events.jsonl");
        let (one, two) = (wf_line(1, 0), wf_line(2, 1));
        append(&log, &one);
        append(&log, &two[..10]);
        let mut feed = feed(&state, "");
        let (events, errors) = feed.poll();
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(positions(&events), vec!["workflow/wf-1:0"]);
        assert!(feed.poll().0.is_empty());
        append(&log, &two[10..two.len() - 1]);
        assert!(feed.poll().0.is_empty(), "still no newline");
        append(&log, "\n");
        let (events, _) = feed.poll();
        assert_eq!(
            positions(&events),
            vec![format!("workflow/wf-1:{}", one.len())]
        );
        assert_eq!(events[0].ts.as_deref(), Some("2026-12-04T21:00:01Z"));
        assert!(matches!(&events[0].event, Payload::Workflow(e) if e.seq == 2));
    }

    /// A reader restarted with the positions of the last event it showed of each log gets
    /// exactly the rest: no event twice, none missing, also for logs it had not seen yet.
    #[test]
    fn a_cursor_resumes_every_log_after_its_position() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        let wf = state.workflows().join("wf-1.events.jsonl");
        let flow = state.flows().join("f1.events.jsonl");
        append(&wf, &(wf_line(1, 0) + &wf_line(2, 2)));
        append(&flow, &(flow_line(1, 1) + &flow_line(2, 3)));
        let mut first = feed(&state, "");
        let (all, _) = first.poll();
        // Ordered by time across the logs.
        let names: Vec<String> = all.iter().map(|e| e.event.summary()).collect();
        assert_eq!(
            names,
            vec![
                "decided decision=d1",
                "flow.halted reason=r1",
                "decided decision=d2",
                "flow.halted reason=r2"
            ]
        );
        // Killed after showing three events: its cursor is the last position of each log.
        let mut cursor = Cursor::default();
        for e in &all[..3] {
            cursor.advance(&e.pos);
        }
        append(&wf, &wf_line(3, 4));
        append(
            &state.tasks().join("t1.events.jsonl"),
            "{\"type\":\"task.started\",\"pid\":7}\n",
        );
        let mut again = feed(&state, &cursor.to_string());
        let (rest, errors) = again.poll();
        assert!(errors.is_empty(), "{errors:?}");
        let wf2 = wf_line(1, 0).len() + wf_line(2, 2).len();
        assert_eq!(
            positions(&rest),
            vec![
                "task/t1:0".to_string(),
                format!("flow/f1:{}", flow_line(1, 1).len()),
                format!("workflow/wf-1:{wf2}"),
            ]
        );
        // The same cursor given again gives the same events: positions are stable.
        assert_eq!(
            positions(&feed(&state, &cursor.to_string()).poll().0),
            positions(&rest)
        );
    }

    #[test]
    fn a_position_that_starts_no_line_is_refused_naming_it() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        append(&state.flows().join("f1.events.jsonl"), &flow_line(1, 0));
        for (since, problem) in [
            ("flow/f1:3", "no line of the log starts there"),
            ("flow/f1:9999", "the log ends at byte"),
        ] {
            let (events, errors) = feed(&state, since).poll();
            assert!(events.is_empty());
            let text = errors[0].to_string();
            assert!(text.contains(problem) && text.contains(since), "{text}");
        }
    }

    #[test]
    fn a_damaged_line_stops_its_log_after_the_events_before_it() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        let flow = state.flows().join("f1.events.jsonl");
        append(&flow, &(flow_line(1, 0) + "\n{\"not\":\"a flow event\"}\n"));
        append(
            &state.tasks().join("t1.events.jsonl"),
            "{\"type\":\"task.started\",\"pid\":7}\n",
        );
        let mut feed = feed(&state, "");
        let (events, errors) = feed.poll();
        assert_eq!(positions(&events), vec!["task/t1:0", "flow/f1:0"]);
        let text = errors[0].to_string();
        let at = flow_line(1, 0).len() + 1;
        assert!(
            text.contains(&format!("line at byte {at} is not a flow event")),
            "{text}"
        );
        assert!(text.contains("baton repair f1"), "{text}");
        append(&flow, &flow_line(3, 5));
        let (events, errors) = feed.poll();
        assert!(
            events.is_empty() && errors.is_empty(),
            "a stopped log is not read again"
        );
    }

    #[test]
    fn the_filter_keeps_the_kinds_and_ids_asked_for() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        append(&state.flows().join("f1.events.jsonl"), &flow_line(1, 0));
        append(&state.flows().join("f2.events.jsonl"), &flow_line(1, 0));
        append(&state.workflows().join("wf-1.events.jsonl"), &wf_line(1, 0));
        let filter = Filter {
            kinds: vec![SourceKind::Flow],
            ids: vec!["f2".into()],
        };
        let mut feed = Feed::new(state.clone(), filter, Cursor::default());
        assert_eq!(positions(&feed.poll().0), vec!["flow/f2:0"]);
        assert_eq!(
            feed.source_of(&state.flows(), "f2.events.jsonl"),
            Some(Source::new(SourceKind::Flow, "f2"))
        );
        assert_eq!(feed.source_of(&state.flows(), "f1.events.jsonl"), None);
        assert_eq!(feed.source_of(&state.flows(), "f2.json"), None);
    }
}
