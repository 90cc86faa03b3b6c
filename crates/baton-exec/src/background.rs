//! Background delegations: a detached supervisor process runs the work and records it in
//! `.baton/state/tasks/<id>.events.jsonl`, so `baton task status|wait|cancel ID` work from any
//! later process, and the work survives the process that started it.
//!
//! Every line is one event, appended and fsynced before anything acts on it:
//! `task.created` (the request), `task.started` (supervisor pid), `entry` (progress of one entry),
//! `task.completed` (the report). A supervisor that died without `task.completed` shows as
//! `interrupted`.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::delegate::{DelegateReport, DelegateRequest, EntryEvent, EntryStatus};

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
    Spawned { pid: u32 },
    #[serde(rename = "task.started")]
    Started { pid: u32 },
    /// The supervisor could not run the work (bad config, missing role); nothing was launched
    /// after this.
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
    #[error("task id `{0}` is not valid: ids use letters, digits and `-` only")]
    BadId(String),
    #[error("{path}: {message}")]
    Io { path: String, message: String },
    #[error("{path}: line {line} is not a task event: {message}")]
    Corrupt {
        path: String,
        line: usize,
        message: String,
    },
}

/// The tasks folder of a project's state folder.
pub fn tasks_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("tasks")
}

pub fn events_path(dir: &Path, id: &str) -> Result<PathBuf, TaskStoreError> {
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return Err(TaskStoreError::BadId(id.to_string()));
    }
    Ok(dir.join(format!("{id}.events.jsonl")))
}

/// Appends one event and fsyncs it.
pub fn append(path: &Path, event: &TaskEvent) -> Result<(), TaskStoreError> {
    let io = |e: std::io::Error| TaskStoreError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    let mut line = serde_json::to_string(event).map_err(|e| TaskStoreError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    line.push('\n');
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(io)?;
    f.write_all(line.as_bytes()).map_err(io)?;
    f.sync_data().map_err(io)
}

/// What a task's event log says now.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskState {
    pub id: String,
    pub created: String,
    pub cwd: String,
    pub request: DelegateRequest,
    pub pid: Option<u32>,
    /// The supervisor's pid as seen by the process that started it.
    pub spawned_pid: Option<u32>,
    /// Why the supervisor gave up, when it did.
    pub failure: Option<String>,
    /// Last known status per entry (`None` while queued or running).
    pub entries: Vec<(String, String, Option<EntryStatus>)>,
    pub report: Option<DelegateReport>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Created; the supervisor has not recorded its start yet.
    Starting,
    Running,
    /// Finished; every entry done.
    Done,
    /// Finished; some entry failed or was stopped.
    Failed,
    /// The supervisor is gone without finishing (killed, machine restarted).
    Interrupted,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Starting => "starting",
            Phase::Running => "running",
            Phase::Done => "done",
            Phase::Failed => "failed",
            Phase::Interrupted => "interrupted",
        }
    }
}

impl TaskState {
    pub fn phase(&self) -> Phase {
        if self.failure.is_some() {
            return Phase::Failed;
        }
        match (&self.report, self.pid) {
            (Some(r), _) if r.ok() => Phase::Done,
            (Some(_), _) => Phase::Failed,
            (None, Some(pid)) if process_alive(pid) => Phase::Running,
            (None, Some(_)) => Phase::Interrupted,
            (None, None) => match self.spawned_pid {
                Some(pid) if !process_alive(pid) => Phase::Interrupted,
                Some(_) | None => Phase::Starting,
            },
        }
    }
}

/// True when `pid` is a live (not zombie) process.
pub fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z'),
        Err(_) => false,
    }
}

/// Reads a task's log. A torn last line (a crash mid-write) is ignored.
pub fn load(dir: &Path, id: &str) -> Result<TaskState, TaskStoreError> {
    let path = events_path(dir, id)?;
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(TaskStoreError::NotFound {
                id: id.to_string(),
                dir: dir.display().to_string(),
            })
        }
        Err(e) => {
            return Err(TaskStoreError::Io {
                path: path.display().to_string(),
                message: e.to_string(),
            })
        }
    };
    let complete = match text.rfind('\n') {
        Some(i) => &text[..i],
        None => "",
    };
    let mut state: Option<TaskState> = None;
    for (n, line) in complete.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let ev: TaskEvent = serde_json::from_str(line).map_err(|e| TaskStoreError::Corrupt {
            path: path.display().to_string(),
            line: n + 1,
            message: e.to_string(),
        })?;
        match ev {
            TaskEvent::Created {
                id,
                created,
                cwd,
                request,
            } => {
                let entries = request
                    .entries
                    .iter()
                    .map(|e| (e.name.clone(), e.role.clone(), None))
                    .collect();
                state = Some(TaskState {
                    id,
                    created,
                    cwd,
                    request,
                    pid: None,
                    spawned_pid: None,
                    failure: None,
                    entries,
                    report: None,
                });
            }
            TaskEvent::Spawned { pid } => {
                if let Some(s) = state.as_mut() {
                    s.spawned_pid = Some(pid);
                }
            }
            TaskEvent::Started { pid } => {
                if let Some(s) = state.as_mut() {
                    s.pid = Some(pid);
                }
            }
            TaskEvent::Failed { message } => {
                if let Some(s) = state.as_mut() {
                    s.failure = Some(message);
                }
            }
            TaskEvent::Entry { index, event } => {
                if let (Some(s), EntryEvent::Finished { status }) = (state.as_mut(), event) {
                    if let Some(slot) = s.entries.get_mut(index) {
                        slot.2 = Some(status);
                    }
                }
            }
            TaskEvent::Completed { report } => {
                if let Some(s) = state.as_mut() {
                    s.report = Some(report);
                }
            }
        }
    }
    state.ok_or_else(|| TaskStoreError::Corrupt {
        path: path.display().to_string(),
        line: 1,
        message: "no task.created event".into(),
    })
}

/// Ids of every task in the folder, oldest first.
pub fn list(dir: &Path) -> Vec<String> {
    let mut out: Vec<(std::time::SystemTime, String)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            let id = name.strip_suffix(".events.jsonl")?.to_string();
            let t = e.metadata().and_then(|m| m.modified()).ok()?;
            Some((t, id))
        })
        .collect();
    out.sort();
    out.into_iter().map(|(_, id)| id).collect()
}

/// Records a new background task and starts its detached supervisor (`baton task supervise ID`,
/// in a new session so it outlives the caller and its terminal). Returns the task id.
pub fn start(
    baton_exe: &Path,
    state_dir: &Path,
    cwd: &Path,
    request: &DelegateRequest,
    created: String,
) -> Result<String, TaskStoreError> {
    use std::os::unix::process::CommandExt;
    let dir = tasks_dir(state_dir);
    let id = new_task_id();
    let path = events_path(&dir, &id)?;
    append(
        &path,
        &TaskEvent::Created {
            id: id.clone(),
            created,
            cwd: cwd.display().to_string(),
            request: request.clone(),
        },
    )?;
    let io = |e: std::io::Error| TaskStoreError::Io {
        path: dir.display().to_string(),
        message: e.to_string(),
    };
    let log = std::fs::File::create(dir.join(format!("{id}.log"))).map_err(io)?;
    let mut cmd = std::process::Command::new(baton_exe);
    cmd.args(["task", "supervise", &id, "--cwd"])
        .arg(cwd)
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone().map_err(io)?)
        .stderr(log);
    // SAFETY: setsid is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            nix::unistd::setsid()
                .map(|_| ())
                .map_err(std::io::Error::from)
        });
    }
    let child = cmd.spawn().map_err(|e| TaskStoreError::Io {
        path: baton_exe.display().to_string(),
        message: format!("cannot start the background supervisor: {e}"),
    })?;
    append(&path, &TaskEvent::Spawned { pid: child.id() })?;
    Ok(id)
}

/// A short, time-ordered id: `t` and 12 hex digits.
pub fn new_task_id() -> String {
    let u = uuid::Uuid::now_v7().simple().to_string();
    format!("t{}", &u[u.len() - 12..])
}
