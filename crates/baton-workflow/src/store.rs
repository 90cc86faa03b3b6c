//! The durable record of a workflow: an append-only event log and the artifact, a snapshot
//! rebuilt from it.
//!
//! Files, under the project's state folder (`.baton/state/workflows/`):
//! - `<id>.events.jsonl`: one [`WorkflowEvent`] per line, fsynced before `append` returns. Each
//!   event may carry a `delta`, a JSON merge patch (RFC 7386) of the artifact; the first event,
//!   `workflow_started`, carries the whole initial artifact.
//! - `<id>.json`: the artifact, written atomically (temp file + rename) after every event. It is
//!   derived: opening a workflow folds the events again and rewrites it, so a crash between the
//!   log line and the snapshot loses nothing.
//! - `<id>.lock`: held by the one process driving the workflow; a second one is refused, naming
//!   the holder.
//!
//! Ids are `wf-<UTC timestamp>-<8 hex>` (`wf-20261203T134500Z-1a2b3c4d`), made before anything
//! is written, so a crash can never leave a record without a name.

use std::path::PathBuf;

use baton_state::damage::Line;
use baton_state::{
    now_rfc3339, read_snapshot, write_snapshot, Damage, Durability, FileLock, JsonlLog, LockError,
    LogError, StateDir,
};
use serde_json::{json, Map, Value};

use crate::route::WorkflowKind;
use crate::state::Record;

pub use crate::event::{EventBody, EventKind, Fields, WorkflowEvent};

/// What a caller gives [`OpenWorkflow::append`] or [`OpenWorkflow::commit`]: the typed event
/// and the artifact's change; the store adds `seq`, `ts` and `wf`.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    pub body: EventBody,
    pub delta: Option<Value>,
}

impl NewEvent {
    /// An event of `kind` with nothing but its kind.
    pub fn new(event: EventKind) -> NewEvent {
        NewEvent {
            body: EventBody::empty(event),
            delta: None,
        }
    }

    /// An event from the flat fields of its line (a record written by hand); refused, naming
    /// the field, when they do not fit its kind.
    pub fn from_fields(kind: EventKind, fields: Fields) -> Result<NewEvent, StoreError> {
        let body = EventBody::from_fields(kind, fields)
            .map_err(|message| StoreError::BadEvent { kind, message })?;
        Ok(NewEvent { body, delta: None })
    }

    pub fn delta(mut self, delta: Value) -> NewEvent {
        self.delta = Some(delta);
        self
    }

    pub fn phase(self, phase: impl Into<String>) -> NewEvent {
        let phase = phase.into();
        self.edit(|f| f.phase = Some(phase))
    }

    pub fn reason(self, reason: impl Into<String>) -> NewEvent {
        let reason = reason.into();
        self.edit(|f| f.reason = Some(reason))
    }

    pub fn decision(self, decision: impl Into<String>) -> NewEvent {
        let decision = decision.into();
        self.edit(|f| f.decision = Some(decision))
    }

    /// The event with one of its plain text fields set (a field its kind does not keep is
    /// dropped, as on disk).
    fn edit(mut self, change: impl FnOnce(&mut Fields)) -> NewEvent {
        let mut fields = self.body.fields();
        change(&mut fields);
        if let Ok(body) = EventBody::from_fields(self.body.kind(), fields) {
            self.body = body;
        }
        self
    }
}

impl From<EventBody> for NewEvent {
    fn from(body: EventBody) -> NewEvent {
        NewEvent { body, delta: None }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("workflow id: {0}")]
    Id(#[from] baton_state::IdError),
    #[error(transparent)]
    Log(#[from] LogError),
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(
        "workflow {id} is being run by another baton ({holder}); wait for it to finish or stop it"
    )]
    Busy { id: String, holder: String },
    #[error(
        "another workflow works in this working tree ({holder}): wait for it to end (`baton status` shows it), or run a BUILD in a worktree of its own with --worktree"
    )]
    TreeBusy { holder: String },
    #[error("no workflow {id} in {dir}: `baton status` lists the workflows of this project")]
    NotFound { id: String, dir: PathBuf },
    #[error("workflow {id} already has a record here: give another id")]
    Exists { id: String },
    #[error("the event log of workflow {id} does not start with workflow_started: {path}")]
    NoStart { id: String, path: PathBuf },
    /// An event whose fields do not fit its kind (refused before it is written).
    #[error("a {kind:?} event does not fit its kind: {message}")]
    BadEvent { kind: EventKind, message: String },
    /// A key of the runner's state that does not decode (an unknown task status, a wrong type):
    /// the record is refused, never read as a default.
    #[error(
        "{}: line {line}: field `{field}` does not read: {message}; baton cannot go on from a state it does not know (written by another baton version, or edited): nothing was changed — resume it with the baton that wrote it, or correct that field",
        path.display()
    )]
    Undecodable {
        path: PathBuf,
        line: usize,
        field: String,
        message: String,
    },
}

/// A new workflow id: `wf-<UTC timestamp>-<8 hex>`.
/// A new workflow id, as [`WorkflowStore::create`] makes one.
pub fn fresh_id() -> String {
    new_id(time::OffsetDateTime::now_utc(), rand::random())
}

pub fn new_id(now: time::OffsetDateTime, random: u32) -> String {
    let t = now.to_offset(time::UtcOffset::UTC);
    format!(
        "wf-{:04}{:02}{:02}T{:02}{:02}{:02}Z-{random:08x}",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

pub use crate::state::merge_patch;

/// Applies one event to the artifact: its delta, and `updated_at` / `event_seq` (the last event
/// the artifact includes, which lets a resume fold only the events after the snapshot).
fn apply(artifact: &mut Value, ev: &WorkflowEvent) {
    if let Some(delta) = &ev.delta {
        merge_patch(artifact, delta);
    }
    if let Value::Object(a) = artifact {
        a.insert("updated_at".into(), Value::String(ev.ts.clone()));
        a.insert("event_seq".into(), json!(ev.seq));
    }
}

/// The artifact the events add up to.
pub fn fold(events: &[WorkflowEvent]) -> Value {
    let mut artifact = Value::Object(Map::new());
    for ev in events {
        apply(&mut artifact, ev);
    }
    artifact
}

/// A workflow's record as read and checked: the artifact the events add up to (the snapshot
/// brought up to date with the events after it, or the fold of every event when the snapshot
/// is missing, unreadable or another workflow's), the last event's number and kind.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    pub artifact: Value,
    /// The artifact decoded (it is checked to decode before it is handed out).
    pub record: crate::state::Record,
    pub seq: u64,
    pub last_event: Option<EventKind>,
    /// Whether the snapshot on disk already holds every event (nothing to rewrite).
    pub snapshot_current: bool,
}

/// The artifact a log adds up to, before it is checked to decode.
struct Folded {
    artifact: Value,
    seq: u64,
    last_event: Option<EventKind>,
    snapshot_current: bool,
}

/// Reads the log bytes `bytes` of workflow `id` against its snapshot (read from
/// `snapshot_path` before the log). Every line is scanned for NUL and control bytes; unless
/// `full`, only the events after the snapshot's `event_seq` are parsed and applied to it (the
/// events it already holds are not read again). Anything irregular there, and a snapshot that
/// is missing, unreadable or another workflow's, falls back to parsing every line, where a line
/// that does not read, events out of sequence, or a snapshot of this workflow recording more
/// events than the log holds (the log lost its end: folding what is left would run completed
/// work again) are damage (see [`baton_state::damage`]).
fn load_bytes(
    path: &std::path::Path,
    snapshot_path: &std::path::Path,
    snapshot_bytes: Option<&[u8]>,
    id: &str,
    bytes: &[u8],
    full: bool,
) -> Result<Loaded, StoreError> {
    let snapshot: Option<Value> = snapshot_bytes.and_then(|b| serde_json::from_slice(b).ok());
    let lines = baton_state::damage::lines(path, bytes).map_err(LogError::Damaged)?;
    let parse = |line: &Line<'_>| -> Result<WorkflowEvent, StoreError> {
        serde_json::from_slice(line.bytes)
            .map_err(|e| StoreError::Log(LogError::Damaged(lines.unreadable(line, e))))
    };
    let no_start = || StoreError::NoStart {
        id: id.to_string(),
        path: path.to_path_buf(),
    };
    let first = lines.lines.first().ok_or_else(no_start)?;
    if parse(first)?.kind() != EventKind::WorkflowStarted {
        return Err(no_start());
    }
    let snapshot = snapshot.filter(|s| s.get("workflow_uuid").and_then(Value::as_str) == Some(id));
    let at = snapshot
        .as_ref()
        .and_then(|s| s.get("event_seq").and_then(Value::as_u64))
        .filter(|at| *at >= 1);
    if let (false, Some(s), Some(at)) = (full, &snapshot, at) {
        if let Some((folded, tail)) = fold_tail(&lines, &parse, s, at)? {
            let applied: Vec<(usize, &WorkflowEvent)> =
                tail.iter().rev().map(|(n, e)| (*n, e)).collect();
            let snap = snapshot_bytes.map(|b| (snapshot_path, b));
            return checked(folded, path, &applied, snap);
        }
    }
    let events = lines
        .lines
        .iter()
        .map(&parse)
        .collect::<Result<Vec<_>, _>>()?;
    lines
        .check_sequence(events.iter().map(|e| e.seq))
        .map_err(LogError::Damaged)?;
    let last = events.last().map_or(0, |e| e.seq);
    if let Some(at) = at.filter(|at| *at > last) {
        return Err(LogError::Damaged(lines.behind_snapshot(snapshot_path, at, last)).into());
    }
    let numbered: Vec<(usize, &WorkflowEvent)> =
        lines.lines.iter().map(|l| l.number).zip(&events).collect();
    let (artifact, applied, snap) = match (snapshot, at) {
        (Some(mut artifact), Some(at)) => {
            for ev in &events[at as usize..] {
                apply(&mut artifact, ev);
            }
            let snap = snapshot_bytes.map(|b| (snapshot_path, b));
            (artifact, &numbered[at as usize..], snap)
        }
        _ => (fold(&events), &numbered[..], None),
    };
    let folded = Folded {
        artifact,
        seq: last,
        last_event: events.last().map(WorkflowEvent::kind),
        snapshot_current: false,
    };
    checked(folded, path, applied, snap)
}

/// `loaded` when the runner's state in its artifact decodes; else the error naming where the
/// field that does not was written: the last of the `applied` events (line number, event) whose
/// delta holds it, else the snapshot the events were applied to (its path and bytes).
fn checked(
    folded: Folded,
    path: &std::path::Path,
    applied: &[(usize, &WorkflowEvent)],
    snapshot: Option<(&std::path::Path, &[u8])>,
) -> Result<Loaded, StoreError> {
    let e = match crate::state::Record::read(&folded.artifact) {
        Ok(record) => {
            return Ok(Loaded {
                artifact: folded.artifact,
                record,
                seq: folded.seq,
                last_event: folded.last_event,
                snapshot_current: folded.snapshot_current,
            })
        }
        Err(e) => e,
    };
    let in_event = applied.iter().rev().find(|(_, ev)| {
        ev.delta
            .as_ref()
            .is_some_and(|d| crate::state::holds(d, &e.segments))
    });
    let (path, line, field) = match (in_event, snapshot) {
        (Some((n, _)), _) => (path.to_path_buf(), *n, format!("delta.{}", e.field)),
        (None, Some((snap, bytes))) => (
            snap.to_path_buf(),
            crate::state::error_line(bytes).unwrap_or(1),
            e.field.clone(),
        ),
        // Not in any delta: the first event's (the whole initial artifact).
        (None, None) => (
            path.to_path_buf(),
            applied.first().map_or(1, |(n, _)| *n),
            e.field.clone(),
        ),
    };
    Err(StoreError::Undecodable {
        path,
        line,
        field,
        message: e.message,
    })
}

/// The snapshot (at event `at`) brought up to date with the events after it, parsing the log
/// backwards from its end to event `at`; `None` when the tail is not the unbroken run of events
/// `at`+1 … that it must be, and the whole log must be read (which names the damage, if any).
///
/// Also returns the events applied, newest first, with their line numbers.
#[allow(clippy::type_complexity)]
fn fold_tail(
    lines: &baton_state::damage::Lines<'_>,
    parse: &dyn Fn(&Line<'_>) -> Result<WorkflowEvent, StoreError>,
    snapshot: &Value,
    at: u64,
) -> Result<Option<(Folded, Vec<(usize, WorkflowEvent)>)>, StoreError> {
    let mut tail: Vec<(usize, WorkflowEvent)> = Vec::new();
    for line in lines.lines.iter().rev() {
        let ev = parse(line)?;
        let expected = tail.last().map(|(_, e)| e.seq - 1);
        if expected.is_some_and(|want| ev.seq != want) || ev.seq < at {
            return Ok(None);
        }
        if ev.seq == at {
            let last_event = tail.first().map_or(ev.kind(), |(_, e)| e.kind());
            let mut artifact = snapshot.clone();
            let mut last = at;
            for (_, ev) in tail.iter().rev() {
                apply(&mut artifact, ev);
                last = ev.seq;
            }
            let folded = Folded {
                artifact,
                seq: last,
                last_event: Some(last_event),
                snapshot_current: tail.is_empty(),
            };
            return Ok(Some((folded, tail)));
        }
        tail.push((line.number, ev));
    }
    Ok(None)
}

/// The workflows of one project.
#[derive(Debug, Clone)]
pub struct WorkflowStore {
    state: StateDir,
}

/// A workflow opened for writing: its lock is held until this is dropped.
#[derive(Debug)]
pub struct OpenWorkflow {
    id: String,
    log: JsonlLog<WorkflowEvent>,
    snapshot: PathBuf,
    /// The artifact as the snapshot holds it (the disk edge: deltas are computed against it).
    artifact: Value,
    /// The same, decoded: what the runner reads and changes.
    record: Record,
    seq: u64,
    _lock: FileLock,
}

impl WorkflowStore {
    pub fn new(state: StateDir) -> WorkflowStore {
        WorkflowStore { state }
    }

    fn path(&self, id: &str, suffix: &str) -> Result<PathBuf, StoreError> {
        baton_state::check_id(baton_state::IdKind::Record, id)?;
        Ok(self.state.workflows().join(format!("{id}{suffix}")))
    }

    pub fn events_path(&self, id: &str) -> Result<PathBuf, StoreError> {
        self.path(id, ".events.jsonl")
    }

    pub fn snapshot_path(&self, id: &str) -> Result<PathBuf, StoreError> {
        self.path(id, ".json")
    }

    pub fn lock_path(&self, id: &str) -> Result<PathBuf, StoreError> {
        self.path(id, ".lock")
    }

    /// The note of the process driving the workflow (`pid N`) when one holds its lock right now,
    /// `None` when none does. Takes no lock (the probe is a shared lock held for an instant).
    pub fn holder(&self, id: &str) -> Result<Option<String>, StoreError> {
        let path = self.lock_path(id)?;
        Ok(FileLock::is_held(&path).then(|| FileLock::holder(&path)))
    }

    fn lock(&self, id: &str) -> Result<FileLock, StoreError> {
        let path = self.lock_path(id)?;
        if let Some(dir) = path.parent() {
            baton_state::create_own_dir(dir).map_err(|source| LogError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        match FileLock::try_acquire(&path)? {
            Some(lock) => Ok(lock),
            None => Err(StoreError::Busy {
                id: id.to_string(),
                holder: FileLock::holder(&path),
            }),
        }
    }

    /// Takes the lock of the project's working tree (`.baton/state/tree.lock`) for `what`
    /// (`workflow ID`), held by a workflow that works in the tree rather than in a worktree of
    /// its own; a second one is refused naming the first (its workflow and pid). The operating
    /// system releases it when the holder ends or is killed.
    pub fn claim_tree(&self, what: &str) -> Result<FileLock, StoreError> {
        // A moment's patience covers a probe, never a running workflow.
        let patience = std::time::Duration::from_millis(100);
        FileLock::claim(&self.state.tree_lock(), what, patience)?
            .map_err(|holder| StoreError::TreeBusy { holder })
    }

    /// Starts a workflow: a fresh id, the lock, the log and its `workflow_started` event with
    /// the initial artifact, and the snapshot.
    pub fn create(&self, kind: WorkflowKind, request: &str) -> Result<OpenWorkflow, StoreError> {
        let id = new_id(time::OffsetDateTime::now_utc(), rand::random());
        self.create_as(&id, kind, request)
    }

    /// [`Self::create`] under the id `id`, which must be valid and not yet taken.
    pub fn create_as(
        &self,
        id: &str,
        kind: WorkflowKind,
        request: &str,
    ) -> Result<OpenWorkflow, StoreError> {
        let id = id.to_string();
        if self.events_path(&id)?.exists() {
            return Err(StoreError::Exists { id });
        }
        let lock = self.lock(&id)?;
        let log = JsonlLog::create(&self.events_path(&id)?, Durability::Fsync)?;
        let ts = now_rfc3339();
        let mut wf = OpenWorkflow {
            snapshot: self.snapshot_path(&id)?,
            id: id.clone(),
            log,
            artifact: Value::Object(Map::new()),
            record: Record::default(),
            seq: 0,
            _lock: lock,
        };
        let initial = Record::initial(&id, kind, request, &ts);
        wf.commit(
            NewEvent::new(EventKind::WorkflowStarted).decision(kind.as_str()),
            &initial,
        )?;
        Ok(wf)
    }

    /// Opens a workflow to go on with it: takes its lock, reads and checks its record (a torn
    /// last line is cut off; damage is an error and nothing is changed), folds it into the
    /// artifact and rewrites the snapshot from it.
    pub fn open(&self, id: &str) -> Result<OpenWorkflow, StoreError> {
        let events_path = self.events_path(id)?;
        if !events_path.is_file() {
            return Err(StoreError::NotFound {
                id: id.to_string(),
                dir: self.state.workflows(),
            });
        }
        let lock = self.lock(id)?;
        // Checked before the torn last line is cut: on damage nothing is changed.
        let (loaded, bytes) = self.read(id, false)?;
        let log = JsonlLog::open_read(&events_path, Durability::Fsync, &bytes)?;
        let snapshot = self.snapshot_path(id)?;
        // Rewritten only when it lags the log (or was lost, unreadable or another's).
        if !loaded.snapshot_current {
            write_snapshot(&snapshot, &loaded.artifact)?;
        }
        Ok(OpenWorkflow {
            id: id.to_string(),
            seq: loaded.seq,
            log,
            snapshot,
            artifact: loaded.artifact,
            record: loaded.record,
            _lock: lock,
        })
    }

    /// A workflow's record read and checked like [`WorkflowStore::open`] does, without its lock
    /// and without writing anything (for `baton status` and `baton resume`'s choice): the
    /// snapshot and the events after it; a damaged line before the snapshot's event is found
    /// by [`WorkflowStore::check`] or when the snapshot is lost.
    pub fn load(&self, id: &str) -> Result<Loaded, StoreError> {
        Ok(self.read(id, false)?.0)
    }

    /// [`WorkflowStore::load`] reading every line of the log (for `baton repair`).
    pub fn check(&self, id: &str) -> Result<Loaded, StoreError> {
        Ok(self.read(id, true)?.0)
    }

    fn read(&self, id: &str, full: bool) -> Result<(Loaded, Vec<u8>), StoreError> {
        let path = self.events_path(id)?;
        let snapshot_path = self.snapshot_path(id)?;
        // The snapshot first: it is written after its events, so one read before the log never
        // records more than the log holds, even while a driver appends. An unreadable snapshot
        // is derived data: rebuilt from every event.
        let snapshot = std::fs::read(&snapshot_path).ok();
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(StoreError::NotFound {
                    id: id.to_string(),
                    dir: self.state.workflows(),
                })
            }
            Err(source) => return Err(LogError::Io { path, source }.into()),
        };
        let loaded = load_bytes(&path, &snapshot_path, snapshot.as_deref(), id, &bytes, full)?;
        Ok((loaded, bytes))
    }

    /// Rebuilds a damaged workflow record from its intact part: the log cut to the lines before
    /// the damage, the snapshot derived from them again; both damaged files are kept beside
    /// them as `*.damaged`. Refused while a process drives the workflow. Returns the damage
    /// repaired and the files set aside; `None` when the record is intact (nothing is changed).
    pub fn repair(&self, id: &str) -> Result<Option<(Damage, Vec<PathBuf>)>, StoreError> {
        let damage = match self.check(id) {
            Ok(_) => return Ok(None),
            Err(StoreError::Log(LogError::Damaged(d))) => *d,
            Err(e) => return Err(e),
        };
        let lock = self.lock(id)?;
        let events_path = self.events_path(id)?;
        let snapshot = self.snapshot_path(id)?;
        let io = |path: &std::path::Path| {
            let path = path.to_path_buf();
            move |source| StoreError::Log(LogError::Io { path, source })
        };
        let mut aside = Vec::new();
        let len = std::fs::metadata(&events_path)
            .map_err(io(&events_path))?
            .len();
        if damage.intact == 0 {
            // Nothing to rebuild from: the whole record is set aside.
            aside.extend(baton_state::damage::set_aside(&events_path).map_err(io(&events_path))?);
        } else if damage.intact_len < len {
            aside.push(
                baton_state::damage::keep_intact(&events_path, damage.intact_len)
                    .map_err(io(&events_path))?,
            );
        }
        aside.extend(baton_state::damage::set_aside(&snapshot).map_err(io(&snapshot))?);
        drop(lock);
        if damage.intact > 0 {
            // What is left is read like any record: the snapshot is derived from it again.
            drop(self.open(id)?);
        }
        Ok(Some((damage, aside)))
    }

    /// The events of a workflow, without its lock (for `baton status` and `baton log`).
    pub fn events(&self, id: &str) -> Result<Vec<WorkflowEvent>, StoreError> {
        let path = self.events_path(id)?;
        if !path.is_file() {
            return Err(StoreError::NotFound {
                id: id.to_string(),
                dir: self.state.workflows(),
            });
        }
        Ok(JsonlLog::read_sequenced(&path, |e: &WorkflowEvent| e.seq)?)
    }

    /// The last snapshot written, without the lock (it may lag the log by one event after a
    /// crash; [`WorkflowStore::open`] repairs that).
    pub fn snapshot(&self, id: &str) -> Result<Option<Value>, StoreError> {
        Ok(read_snapshot(&self.snapshot_path(id)?)?)
    }

    /// The ids of the project's workflows, oldest first.
    pub fn list(&self) -> Vec<String> {
        StateDir::list_ids(&self.state.workflows(), ".events.jsonl")
    }
}

impl OpenWorkflow {
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The artifact as of the last event.
    pub fn artifact(&self) -> &Value {
        &self.artifact
    }

    /// The number of events so far.
    pub fn len(&self) -> u64 {
        self.seq
    }

    pub fn is_empty(&self) -> bool {
        self.seq == 0
    }

    /// The record as of the last event, decoded.
    pub fn record(&self) -> &Record {
        &self.record
    }

    /// Records `event` with the change from the current record to `new` as its delta (the one
    /// place a typed record becomes a merge patch). The current record is then the artifact
    /// decoded, as a resume would read it: what is not recorded (a check's output) and what
    /// a patch cannot say (a null inside a result) are not carried on in memory.
    pub fn commit(&mut self, event: NewEvent, new: &Record) -> Result<WorkflowEvent, StoreError> {
        let delta = crate::state::diff(&self.artifact, &new.to_value());
        self.append(NewEvent { delta, ..event })
    }

    /// Appends an event with its delta as given (a record's first event, and tests that write
    /// a record by hand). The artifact it makes must decode: else nothing is written. Events
    /// first: the log line is on disk before the snapshot is rewritten, and a crash between the
    /// two is repaired by the next [`WorkflowStore::open`].
    pub fn append(&mut self, event: NewEvent) -> Result<WorkflowEvent, StoreError> {
        let kind = event.body.kind();
        let record = WorkflowEvent {
            seq: self.seq + 1,
            ts: now_rfc3339(),
            wf: self.id.clone(),
            body: event.body,
            delta: event.delta,
        };
        let mut next = self.artifact.clone();
        apply(&mut next, &record);
        let decoded = Record::read(&next).map_err(|e| StoreError::BadEvent {
            kind,
            message: format!("its delta leaves a record that does not read: {e}"),
        })?;
        self.log.append(&record)?;
        self.seq = record.seq;
        self.artifact = next;
        self.record = decoded;
        write_snapshot(&self.snapshot, &self.artifact)?;
        Ok(record)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use pretty_assertions::assert_eq;

    use super::*;

    fn store() -> (tempfile::TempDir, WorkflowStore) {
        let dir = tempfile::tempdir().unwrap();
        let store = WorkflowStore::new(StateDir::at(dir.path()));
        (dir, store)
    }

    #[test]
    fn ids_are_a_utc_stamp_and_eight_hex_digits() {
        let t = time::macros::datetime!(2026-12-03 13:45:07 +01:00);
        assert_eq!(new_id(t, 0x1a2b3c4d), "wf-20261203T124507Z-1a2b3c4d");
        assert_eq!(new_id(t, 7), "wf-20261203T124507Z-00000007");
    }

    #[test]
    fn merge_patches_follow_rfc_7386() {
        let mut a = json!({"a": {"b": 1, "c": 2}, "d": [1], "e": "x"});
        merge_patch(
            &mut a,
            &json!({"a": {"b": null, "f": 3}, "d": [2, 3], "g": {"h": 1}}),
        );
        assert_eq!(
            a,
            json!({"a": {"c": 2, "f": 3}, "d": [2, 3], "e": "x", "g": {"h": 1}})
        );
    }

    #[test]
    fn events_come_first_and_the_artifact_is_their_fold() {
        let (_dir, store) = store();
        let mut wf = store.create(WorkflowKind::Build, "add a flag").unwrap();
        let id = wf.id().to_string();
        assert!(id.starts_with("wf-"), "{id}");
        assert_eq!(wf.artifact()["workflow_type"], "BUILD");
        assert_eq!(wf.artifact()["user_request"], "add a flag");
        let ev = wf
            .append(
                NewEvent::new(EventKind::ArtifactUpdated)
                    .phase("phase-1")
                    .delta(json!({"phase_cursor": "phase-1", "quality": {"convergence_state": "needs_iteration"}})),
            )
            .unwrap();
        assert_eq!((ev.seq, ev.wf.as_str()), (2, id.as_str()));
        let live = wf.artifact().clone();
        assert_eq!(live["phase_cursor"], "phase-1");
        assert_eq!(live["quality"]["evidence_complete"], false);
        // A second driver is refused while the first holds the workflow.
        assert!(matches!(store.open(&id), Err(StoreError::Busy { .. })));
        let pid = format!("pid {}", std::process::id());
        assert_eq!(store.holder(&id).unwrap().as_deref(), Some(pid.as_str()));
        drop(wf);
        assert_eq!(store.holder(&id).unwrap(), None);
        assert_eq!(store.snapshot(&id).unwrap().unwrap(), live);
        assert_eq!(fold(&store.events(&id).unwrap()), live);
        // A snapshot that holds every event is left as it is (not written again).
        let inode =
            |p: PathBuf| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
        let before = inode(store.snapshot_path(&id).unwrap());
        drop(store.open(&id).unwrap());
        assert_eq!(inode(store.snapshot_path(&id).unwrap()), before);
        // The snapshot is derived: lost or stale, opening rebuilds it from the events.
        std::fs::remove_file(store.snapshot_path(&id).unwrap()).unwrap();
        let wf = store.open(&id).unwrap();
        assert_eq!(wf.artifact(), &live);
        assert_eq!(wf.len(), 2);
        drop(wf);
        assert_eq!(store.snapshot(&id).unwrap().unwrap(), live);
        assert_eq!(store.list(), vec![id]);
    }

    #[test]
    fn a_torn_last_line_is_cut_and_the_next_event_follows_the_last_whole_one() {
        let (_dir, store) = store();
        let wf = store.create(WorkflowKind::Debug, "fix the crash").unwrap();
        let id = wf.id().to_string();
        drop(wf);
        let path = store.events_path(&id).unwrap();
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        std::io::Write::write_all(&mut f, b"{\"seq\":2,\"ts\":\"x\",\"wf\":\"").unwrap();
        let mut wf = store.open(&id).unwrap();
        let ev = wf
            .append(NewEvent::new(EventKind::AgentStarted).reason("builder"))
            .unwrap();
        assert_eq!(ev.seq, 2);
        assert_eq!(store.events(&id).unwrap().len(), 2);
    }

    /// A crash between the log line and the snapshot leaves the snapshot one event behind;
    /// a snapshot that does not fit the log at all is ignored. Either way opening gives the
    /// fold of every event.
    #[test]
    fn a_stale_or_foreign_snapshot_is_brought_up_to_date_from_the_events() {
        let (_dir, store) = store();
        let mut wf = store.create(WorkflowKind::Build, "x").unwrap();
        let id = wf.id().to_string();
        wf.append(NewEvent::new(EventKind::AgentStarted).delta(json!({"phase_cursor": "p1"})))
            .unwrap();
        let behind = std::fs::read(store.snapshot_path(&id).unwrap()).unwrap();
        wf.append(
            NewEvent::new(EventKind::AgentCompleted)
                .delta(json!({"results": {"builder": {"status": "PASS"}}})),
        )
        .unwrap();
        drop(wf);
        let all = fold(&store.events(&id).unwrap());
        assert_eq!(all["results"]["builder"]["status"], "PASS");
        assert_eq!(all["event_seq"], 3);
        std::fs::write(store.snapshot_path(&id).unwrap(), &behind).unwrap();
        let wf = store.open(&id).unwrap();
        assert_eq!((wf.artifact(), wf.len()), (&all, 3));
        drop(wf);
        let mut foreign: Value = serde_json::from_slice(&behind).unwrap();
        foreign["workflow_uuid"] = json!("wf-20260101T000000Z-00000000");
        foreign["event_seq"] = json!(99);
        foreign["phase_cursor"] = json!("edited");
        write_snapshot(&store.snapshot_path(&id).unwrap(), &foreign).unwrap();
        let wf = store.open(&id).unwrap();
        assert_eq!(wf.artifact(), &all);
    }

    /// A snapshot of this workflow ahead of its log means the log lost its end: refused, naming
    /// both files and the events lost, with nothing changed; `repair` rebuilds from the log.
    #[test]
    fn a_snapshot_ahead_of_the_log_is_damage_and_repair_rebuilds_from_the_log() {
        let (_dir, store) = store();
        let mut wf = store.create(WorkflowKind::Build, "x").unwrap();
        let id = wf.id().to_string();
        wf.append(NewEvent::new(EventKind::AgentStarted).delta(json!({"phase_cursor": "p1"})))
            .unwrap();
        let path = store.events_path(&id).unwrap();
        let two = std::fs::read(&path).unwrap();
        wf.append(
            NewEvent::new(EventKind::WorkflowCompleted).delta(json!({"run_state": "completed"})),
        )
        .unwrap();
        drop(wf);
        std::fs::write(&path, &two).unwrap();
        let snapshot = std::fs::read(store.snapshot_path(&id).unwrap()).unwrap();
        for err in [store.open(&id).unwrap_err(), store.load(&id).unwrap_err()] {
            let text = err.to_string();
            assert!(
                text.contains(&format!(
                    "{id}.events.jsonl: line 3 is where the log ends, after event 2"
                )),
                "{text}"
            );
            assert!(
                text.contains("event 3 is lost") && text.contains(&format!("baton repair {id}")),
                "{text}"
            );
        }
        assert_eq!(
            std::fs::read(store.snapshot_path(&id).unwrap()).unwrap(),
            snapshot
        );
        let (damage, aside) = store.repair(&id).unwrap().unwrap();
        assert_eq!(damage.line, 3);
        assert_eq!(
            aside,
            vec![store
                .snapshot_path(&id)
                .unwrap()
                .with_file_name(format!("{id}.json.damaged"))]
        );
        let loaded = store.load(&id).unwrap();
        assert_eq!(
            (loaded.seq, loaded.record.state.state),
            (2, crate::state::RunState::Running)
        );
        assert_eq!(store.repair(&id).unwrap(), None);
    }

    /// A log cut in the middle of a line with events lost after it: the snapshot tells; a bad
    /// line in the middle is damage too; repair keeps the lines before it.
    #[test]
    fn a_log_cut_mid_line_or_broken_in_the_middle_is_damage() {
        let (_dir, store) = store();
        let mut wf = store.create(WorkflowKind::Build, "x").unwrap();
        let id = wf.id().to_string();
        for n in 0..3 {
            wf.append(NewEvent::new(EventKind::Decided).decision(format!("d{n}")))
                .unwrap();
        }
        drop(wf);
        let path = store.events_path(&id).unwrap();
        let full = std::fs::read(&path).unwrap();
        let cut = full.len() - 30;
        std::fs::write(&path, &full[..cut]).unwrap();
        let err = store.open(&id).unwrap_err().to_string();
        assert!(
            err.contains("line 4 is where the log ends, after event 3")
                && err.contains("event 4 is lost"),
            "{err}"
        );
        assert_eq!(
            std::fs::read(&path).unwrap(),
            &full[..cut],
            "nothing was cut"
        );
        let mut lines: Vec<&[u8]> = full.split(|b| *b == b'\n').collect();
        lines[2] = b"{\"seq\": 3, oops";
        std::fs::write(&path, lines.join(&b'\n')).unwrap();
        // Resuming reads only the events after the snapshot's; reading every line finds it,
        // and so does resuming once the snapshot is lost.
        assert_eq!(store.load(&id).unwrap().seq, 4);
        let err = store.check(&id).unwrap_err().to_string();
        assert!(
            err.contains("line 3 cannot be read") && err.contains("lines 3–4"),
            "{err}"
        );
        let snapshot = std::fs::read(store.snapshot_path(&id).unwrap()).unwrap();
        std::fs::remove_file(store.snapshot_path(&id).unwrap()).unwrap();
        let err = store.load(&id).unwrap_err().to_string();
        assert!(err.contains("line 3 cannot be read"), "{err}");
        std::fs::write(store.snapshot_path(&id).unwrap(), snapshot).unwrap();
        let (damage, aside) = store.repair(&id).unwrap().unwrap();
        assert_eq!((damage.line, damage.intact, aside.len()), (3, 2, 2));
        assert_eq!(store.load(&id).unwrap().seq, 2);
        assert_eq!(store.events(&id).unwrap().len(), 2);
    }

    /// An event whose delta would leave a record the runner cannot read is refused before it
    /// is written: the log, the snapshot and the record in memory are as they were.
    #[test]
    fn a_delta_that_leaves_an_unreadable_record_writes_nothing() {
        let (_dir, store) = store();
        let mut wf = store.create(WorkflowKind::Build, "x").unwrap();
        let id = wf.id().to_string();
        let log = std::fs::read(store.events_path(&id).unwrap()).unwrap();
        let snapshot = std::fs::read(store.snapshot_path(&id).unwrap()).unwrap();
        let before = wf.record().clone();
        let err = wf
            .append(NewEvent::new(EventKind::ArtifactUpdated).delta(json!({"run_state": "dozing"})))
            .unwrap_err()
            .to_string();
        assert!(err.contains("`run_state`"), "{err}");
        assert_eq!(std::fs::read(store.events_path(&id).unwrap()).unwrap(), log);
        assert_eq!(
            std::fs::read(store.snapshot_path(&id).unwrap()).unwrap(),
            snapshot
        );
        assert_eq!((wf.record(), wf.len()), (&before, 1));
        // A typed change goes in as the patch from the record it started from.
        let mut next = wf.record().clone();
        next.artifact.phase_cursor = Some("phase-1".into());
        let ev = wf
            .commit(NewEvent::new(EventKind::ArtifactUpdated), &next)
            .unwrap();
        assert_eq!(ev.delta, Some(json!({"phase_cursor": "phase-1"})));
        assert_eq!(
            wf.record().artifact.phase_cursor.as_deref(),
            Some("phase-1")
        );
        assert_eq!(wf.record().artifact.event_seq, Some(2));
    }

    #[test]
    fn unknown_and_bad_ids_are_refused_with_the_fix() {
        let (_dir, store) = store();
        let e = store.open("wf-20260101T000000Z-00000000").unwrap_err();
        assert!(e.to_string().contains("baton status"), "{e}");
        assert!(matches!(store.open("../etc"), Err(StoreError::Id(_))));
    }
}
