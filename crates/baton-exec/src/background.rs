//! Background delegations: a detached supervisor process runs the work and records it in
//! `.baton/state/tasks/<id>.events.jsonl`, so `baton task status|wait|cancel ID` work from any
//! later process, and the work survives the process that started it.
//!
//! Every line is one event of a [`baton_state::JsonlLog`], appended and fsynced before anything
//! acts on it: `task.created` (the request), `task.spawned` (the supervisor as its starter saw
//! it), `task.started` (the supervisor, from itself), `entry` (progress of one entry),
//! `task.failed` (nothing more will run) and `task.completed` (the report). A supervisor that
//! died without `task.completed` shows as `interrupted`. Processes are recorded with their start
//! time, so a pid the system has since given to another process is never taken for the
//! supervisor (nor signalled by `baton task cancel`).

use std::path::Path;

use baton_process::Identity;
use baton_state::{Durability, IdError, JsonlLog, LogError, StateDir};
use serde::{Deserialize, Serialize};

use crate::delegate::{DelegateReport, DelegateRequest, EntryEvent, EntryStatus};

/// The log of one background task.
pub type TaskLog = JsonlLog<TaskEvent>;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum TaskEvent {
    #[serde(rename = "task.created")]
    Created {
        id: String,
        created: String,
        cwd: String,
        request: DelegateRequest,
    },
    /// Written by the starting process once the supervisor was spawned.
    #[serde(rename = "task.spawned")]
    Spawned {
        pid: u32,
        /// The process's start time (`/proc/<pid>/stat`); absent in logs of older versions.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        start_time: Option<u64>,
    },
    #[serde(rename = "task.started")]
    Started {
        pid: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        start_time: Option<u64>,
        /// The process runs the delegation in the foreground of its own work (`baton mcp`'s
        /// `delegate_task`): it is not a supervisor to signal, and a cancel stops nothing of it.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        foreground: bool,
    },
    /// The task could not run (its log or supervisor could not be set up, bad config, missing
    /// role); nothing was launched after this.
    #[serde(rename = "task.failed")]
    Failed { message: String },
    #[serde(rename = "entry")]
    Entry { index: usize, event: EntryEvent },
    #[serde(rename = "task.completed")]
    Completed { report: DelegateReport },
}

#[derive(Debug, thiserror::Error)]
pub enum TaskStoreError {
    #[error("background task `{id}` not found in {dir}: `baton task status` lists the known ids")]
    NotFound { id: String, dir: String },
    #[error("task id is not valid: {0}")]
    BadId(#[from] IdError),
    #[error(transparent)]
    Log(LogError),
    #[error("cannot start the background supervisor {program}: {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: no task.created event")]
    NoCreated { path: String },
}

impl From<LogError> for TaskStoreError {
    fn from(e: LogError) -> Self {
        TaskStoreError::Log(e)
    }
}

/// A recorded process, with its start time when the log has one.
fn recorded(pid: u32, start_time: Option<u64>) -> RecordedProcess {
    RecordedProcess { pid, start_time }
}

/// A process as a task log recorded it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordedProcess {
    pub pid: u32,
    pub start_time: Option<u64>,
}

impl RecordedProcess {
    /// Whether the recorded process still runs: with a start time, only that very process
    /// counts; without one (an older log), any live process with the pid.
    pub fn is_alive(&self) -> bool {
        match self.start_time {
            Some(start_time) => Identity {
                pid: self.pid,
                start_time,
            }
            .is_alive(),
            None => baton_process::alive(self.pid),
        }
    }

    /// Sends `signal` if the recorded process still runs; `false` (nothing sent) when it is gone
    /// or its pid now belongs to another process.
    pub fn signal(&self, signal: baton_process::Signal) -> bool {
        self.identity().is_some_and(|i| i.signal(signal))
    }

    /// Sends `signal` to the process group the recorded process leads, if it still runs and
    /// leads it; `false` (nothing sent) otherwise.
    pub fn signal_group(&self, signal: baton_process::Signal) -> bool {
        self.identity().is_some_and(|i| i.signal_group(signal))
    }

    fn identity(&self) -> Option<Identity> {
        Some(match self.start_time {
            Some(start_time) => Identity {
                pid: self.pid,
                start_time,
            },
            // An older log: the best that can be done is the process that has the pid now.
            None => Identity::of(self.pid).ok()?,
        })
    }
}

/// The identity of a process, for the log; its start time is left out where it cannot be read.
fn identify(pid: u32) -> (u32, Option<u64>) {
    (pid, Identity::of(pid).ok().map(|i| i.start_time))
}

/// The `task.started` event of the calling process.
pub fn started_event() -> TaskEvent {
    let (pid, start_time) = identify(std::process::id());
    TaskEvent::Started {
        pid,
        start_time,
        foreground: false,
    }
}

/// Opens a task's log for appending (a torn last line is cut first).
pub fn open_log(state: &StateDir, id: &str) -> Result<TaskLog, TaskStoreError> {
    let path = state.task_events(id)?;
    match TaskLog::open(&path, Durability::Fsync) {
        Ok((log, _)) => Ok(log),
        Err(LogError::NotFound { .. }) => Err(not_found(state, id)),
        Err(e) => Err(e.into()),
    }
}

fn not_found(state: &StateDir, id: &str) -> TaskStoreError {
    TaskStoreError::NotFound {
        id: id.to_string(),
        dir: state.tasks().display().to_string(),
    }
}

/// What a task's event log says now.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskState {
    pub id: String,
    pub created: String,
    pub cwd: String,
    pub request: DelegateRequest,
    /// The supervisor, from its own `task.started`.
    pub supervisor: Option<RecordedProcess>,
    /// It runs in the foreground of the process that started it (`baton mcp`), not under a
    /// supervisor of its own.
    pub foreground: bool,
    /// The supervisor as the process that started it saw it.
    pub spawned: Option<RecordedProcess>,
    /// Why the supervisor gave up, when it did.
    pub failure: Option<String>,
    /// Last known status per entry (`None` while queued or running).
    pub entries: Vec<(String, String, Option<EntryStatus>)>,
    /// The child process each entry started last, as recorded (`None`: not started).
    pub children: Vec<Option<RecordedProcess>>,
    pub report: Option<DelegateReport>,
}

baton_protocol::closed_set! {
    pub enum Phase ("phase") {
        /// Created; the supervisor has not recorded its start yet.
        Starting = "starting",
        Running = "running",
        /// Finished; every entry done.
        Done = "done",
        /// Finished; some entry failed.
        Failed = "failed",
        /// Finished because it was cancelled (`baton task cancel`): entries stopped, none failed.
        Cancelled = "cancelled",
        /// The supervisor is gone without finishing (killed, machine restarted).
        Interrupted = "interrupted",
    }
}

impl TaskState {
    pub fn phase(&self) -> Phase {
        if self.failure.is_some() {
            return Phase::Failed;
        }
        match (&self.report, self.supervisor) {
            (Some(r), _) if r.ok() => Phase::Done,
            (Some(r), _)
                if r.entries.iter().any(|e| e.status == EntryStatus::Stopped)
                    && !r.entries.iter().any(|e| e.status == EntryStatus::Failed) =>
            {
                Phase::Cancelled
            }
            (Some(_), _) => Phase::Failed,
            (None, Some(p)) if p.is_alive() => Phase::Running,
            (None, Some(_)) => Phase::Interrupted,
            (None, None) => match self.spawned {
                Some(p) if !p.is_alive() => Phase::Interrupted,
                Some(_) | None => Phase::Starting,
            },
        }
    }

    /// The recorded children of unfinished entries that still run (index, process): after an
    /// interrupted supervisor, what `cancel` has left to stop.
    pub fn live_children(&self) -> Vec<(usize, RecordedProcess)> {
        self.entries
            .iter()
            .zip(&self.children)
            .enumerate()
            .filter_map(|(i, ((_, _, status), child))| match (status, child) {
                (None, Some(p)) if p.is_alive() => Some((i, *p)),
                _ => None,
            })
            .collect()
    }

    /// The supervisor process to signal, as recorded.
    pub fn supervisor_process(&self) -> Option<RecordedProcess> {
        self.supervisor.or(self.spawned)
    }
}

/// A task's events as recorded so far. A torn last line (a crash mid-write) is ignored.
pub fn events(state: &StateDir, id: &str) -> Result<Vec<TaskEvent>, TaskStoreError> {
    let path = state.task_events(id)?;
    match TaskLog::read(&path) {
        Ok(events) => Ok(events),
        Err(LogError::NotFound { .. }) => Err(not_found(state, id)),
        Err(e) => Err(e.into()),
    }
}

/// Reads a task's log. A torn last line (a crash mid-write) is ignored.
pub fn load(state: &StateDir, id: &str) -> Result<TaskState, TaskStoreError> {
    let path = state.task_events(id)?;
    let events = events(state, id)?;
    let mut state: Option<TaskState> = None;
    for ev in events {
        match ev {
            TaskEvent::Created {
                id,
                created,
                cwd,
                request,
            } => {
                let entries: Vec<(String, String, Option<EntryStatus>)> = request
                    .entries
                    .iter()
                    .map(|e| (e.name.clone(), e.role.clone(), None))
                    .collect();
                let children = vec![None; entries.len()];
                state = Some(TaskState {
                    children,
                    id,
                    created,
                    cwd,
                    request,
                    supervisor: None,
                    foreground: false,
                    spawned: None,
                    failure: None,
                    entries,
                    report: None,
                });
            }
            TaskEvent::Spawned { pid, start_time } => {
                if let Some(s) = state.as_mut() {
                    s.spawned = Some(recorded(pid, start_time));
                }
            }
            TaskEvent::Started {
                pid,
                start_time,
                foreground,
            } => {
                if let Some(s) = state.as_mut() {
                    s.supervisor = Some(recorded(pid, start_time));
                    s.foreground = foreground;
                }
            }
            TaskEvent::Failed { message } => {
                if let Some(s) = state.as_mut() {
                    s.failure = Some(message);
                }
            }
            TaskEvent::Entry { index, event } => match (state.as_mut(), event) {
                (Some(s), EntryEvent::Finished { status, .. }) => {
                    if let Some(slot) = s.entries.get_mut(index) {
                        slot.2 = Some(status);
                    }
                }
                (
                    Some(s),
                    EntryEvent::Activity {
                        activity: crate::types::Activity::Started { pid, start_time },
                    },
                ) => {
                    if let Some(slot) = s.children.get_mut(index) {
                        *slot = Some(recorded(pid, start_time));
                    }
                }
                (Some(_) | None, _) => {}
            },
            TaskEvent::Completed { report } => {
                if let Some(s) = state.as_mut() {
                    s.report = Some(report);
                }
            }
        }
    }
    state.ok_or_else(|| TaskStoreError::NoCreated {
        path: path.display().to_string(),
    })
}

/// Ids of every task, oldest first: ids from [`new_task_id`] sort by creation time. (Ids of
/// versions before 0.2 were random and sort among themselves in no particular order.)
pub fn list(state: &StateDir) -> Vec<String> {
    StateDir::list_ids(&state.tasks(), ".events.jsonl")
}

/// Whether an entry's event is one a task's log keeps: its state changes (queued, launching, a
/// tool or the child starting, waiting, finished); tokens and thinking would bloat it.
pub fn worth_recording(event: &EntryEvent) -> bool {
    match event {
        EntryEvent::Activity { activity } => matches!(
            activity,
            crate::Activity::ToolStart { .. }
                | crate::Activity::Started { .. }
                | crate::Activity::Waiting { .. }
        ),
        EntryEvent::Queued { .. } | EntryEvent::Launching { .. } | EntryEvent::Finished { .. } => {
            true
        }
    }
}

/// A delegation this process runs in the foreground (`baton mcp`'s `delegate_task` without
/// `background`), recorded as a task the way a background one is — created, started by this
/// process, its entries' changes, its report — so `baton task status` and `baton task logs` show
/// it; if this process dies first, the task reads as `interrupted`.
pub struct Foreground {
    log: std::sync::Arc<std::sync::Mutex<TaskLog>>,
}

impl Foreground {
    /// Records the task `id` as created and started by this process.
    pub fn begin(
        state: &StateDir,
        id: &str,
        cwd: &Path,
        request: &DelegateRequest,
        created: String,
    ) -> Result<Foreground, TaskStoreError> {
        let mut log = create_log(state, id, cwd, request, created)?;
        let (pid, start_time) = identify(std::process::id());
        log.append(&TaskEvent::Started {
            pid,
            start_time,
            foreground: true,
        })?;
        Ok(Foreground {
            log: std::sync::Arc::new(std::sync::Mutex::new(log)),
        })
    }

    /// Appends `event`; a failure to record is left out (the delegation goes on).
    fn append(log: &std::sync::Mutex<TaskLog>, event: &TaskEvent) {
        if let Ok(mut log) = log.lock() {
            let _ = log.append(event);
        }
    }

    /// Records each entry's state change, then hands the event on to `then`.
    pub fn progress(&self, then: crate::delegate::Progress) -> crate::delegate::Progress {
        let log = self.log.clone();
        std::sync::Arc::new(move |index, event: EntryEvent| {
            if worth_recording(&event) {
                Foreground::append(
                    &log,
                    &TaskEvent::Entry {
                        index,
                        event: event.clone(),
                    },
                );
            }
            then(index, event);
        })
    }

    /// Records the report: the task is done, failed or cancelled as it says.
    pub fn finish(&self, report: &DelegateReport) {
        Foreground::append(
            &self.log,
            &TaskEvent::Completed {
                report: report.clone(),
            },
        );
    }
}

/// A new task's log, with its `task.created` record.
fn create_log(
    state: &StateDir,
    id: &str,
    cwd: &Path,
    request: &DelegateRequest,
    created: String,
) -> Result<TaskLog, TaskStoreError> {
    let mut log = TaskLog::create(&state.task_events(id)?, Durability::Fsync)?;
    log.append(&TaskEvent::Created {
        id: id.to_string(),
        created,
        cwd: cwd.display().to_string(),
        request: request.clone(),
    })?;
    Ok(log)
}

/// Records a new background task and starts its detached supervisor (`baton task supervise ID`,
/// in a new session so it outlives the caller and its terminal). Returns the task id.
///
/// Once `task.created` is on disk, any failure to set the task up (its output file, the spawn,
/// the `task.spawned` record) is recorded as `task.failed` before the error is returned, so
/// `status` shows it as failed and `wait` ends instead of waiting on a supervisor that never ran.
pub fn start(
    baton_exe: &Path,
    state: &StateDir,
    cwd: &Path,
    request: &DelegateRequest,
    created: String,
) -> Result<String, TaskStoreError> {
    let id = new_task_id();
    let mut log = create_log(state, &id, cwd, request, created)?;
    match spawn_supervisor(baton_exe, state, &id, cwd) {
        Ok(pid) => {
            let (pid, start_time) = identify(pid);
            if let Err(e) = log.append(&TaskEvent::Spawned { pid, start_time }) {
                let _ = log.append(&TaskEvent::Failed {
                    message: e.to_string(),
                });
                return Err(e.into());
            }
            Ok(id)
        }
        Err(e) => {
            let _ = log.append(&TaskEvent::Failed {
                message: e.to_string(),
            });
            Err(e)
        }
    }
}

fn spawn_supervisor(
    baton_exe: &Path,
    state: &StateDir,
    id: &str,
    cwd: &Path,
) -> Result<u32, TaskStoreError> {
    use std::os::unix::process::CommandExt;
    let log_path = state.task_log(id)?;
    let io = |source: std::io::Error| {
        TaskStoreError::Log(LogError::Io {
            path: log_path.clone(),
            source,
        })
    };
    let output = std::fs::File::create(&log_path).map_err(io)?;
    let mut cmd = std::process::Command::new(baton_exe);
    cmd.args(["task", "supervise", id, "--cwd"])
        .arg(cwd)
        .stdin(std::process::Stdio::null())
        .stdout(output.try_clone().map_err(io)?)
        .stderr(output);
    // SAFETY: setsid is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            nix::unistd::setsid()
                .map(|_| ())
                .map_err(std::io::Error::from)
        });
    }
    let child = cmd.spawn().map_err(|source| TaskStoreError::Spawn {
        program: baton_exe.display().to_string(),
        source,
    })?;
    Ok(child.id())
}

/// A short id that sorts by creation time: `t`, the creation time in milliseconds since the Unix
/// epoch as 11 hex digits, then 5 random hex digits (about a million ids per millisecond before
/// two are likely to meet).
pub fn new_task_id() -> String {
    let u = uuid::Uuid::now_v7().simple().to_string();
    // A v7 uuid begins with 48 bits of milliseconds (12 hex digits; the first is 0 until 2527)
    // and carries random bits from the 14th digit on.
    format!("t{}{}", &u[1..12], &u[u.len() - 5..])
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn task_ids_sort_by_creation_time() {
        let mut ids = Vec::new();
        for _ in 0..3 {
            ids.push(new_task_id());
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(ids, sorted);
        for id in &ids {
            assert_eq!(id.len(), 17, "{id}");
            baton_state::check_id(baton_state::IdKind::Record, id).unwrap();
        }
    }

    fn request() -> DelegateRequest {
        crate::delegate::parse_request(
            &serde_json::json!({"role": "scout", "name": "look", "task": "look"}),
        )
        .unwrap()
    }

    #[test]
    fn a_supervisor_that_cannot_start_leaves_a_failed_task_not_a_starting_one() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::at(dir.path().join("state"));
        let missing = dir.path().join("no-such-baton");
        let err = start(&missing, &state, dir.path(), &request(), "now".into()).unwrap_err();
        assert!(matches!(err, TaskStoreError::Spawn { .. }), "{err}");
        let ids = list(&state);
        assert_eq!(ids.len(), 1);
        let task = load(&state, &ids[0]).unwrap();
        assert_eq!(task.phase(), Phase::Failed);
        let why = task.failure.unwrap();
        assert!(
            why.contains("cannot start the background supervisor"),
            "{why}"
        );
        assert!(why.contains("no-such-baton"), "{why}");
    }

    #[test]
    fn a_reused_pid_is_not_the_recorded_process() {
        let me = Identity::of(std::process::id()).unwrap();
        let same = recorded(me.pid, Some(me.start_time));
        assert!(same.is_alive());
        let other = recorded(me.pid, Some(me.start_time + 1));
        assert!(!other.is_alive());
        assert!(!other.signal(baton_process::Signal::SIGTERM));
    }
}
