//! Managed workers (seed 004's managed subagents): a named agent session kept alive in a detached
//! supervisor, prompted again and again, listed, reconciled after a crash and retired.
//!
//! A worker is one log, `.baton/state/workers/<name>.events.jsonl`, every line a [`WorkerEvent`]
//! appended (fsynced) before anything acts on it:
//!
//! - `worker.created` — the launch policy (role, route or class, worktree, budget, idle timeout);
//! - `worker.spawned` — a supervisor as its starter saw it; `worker.started` — the supervisor,
//!   from itself, with the session it serves (new or resumed);
//! - `prompt.queued` — a prompt, recorded before anything delivers it (its id orders nothing:
//!   the log's order is the order of delivery); `prompt.delivered` — handed to the session, once;
//!   `prompt.answered` — the answer of that turn with its usage; `prompt.lost` — delivered to a
//!   supervisor that died before answering: never delivered again unless the user re-sends it
//!   (`baton worker send NAME --retry`, a new prompt with `retry_of`);
//! - `worker.stopped` — the supervisor ended (asked to, idle, over its budget, or failed);
//! - `worker.retired` — stopped for good, its worktree finalized.
//!
//! There is no lock: each line is one `write` to a file opened for appending, so concurrent
//! senders never interleave within a line, and the supervisor delivers prompts in the log's order,
//! one at a time. What runs is decided from the log and the processes it names (pid and start
//! time): a worker whose supervisor is gone without `worker.stopped` is `lost`.

use std::path::{Path, PathBuf};

use baton_state::{Durability, IdKind, JsonlLog, LogError, StateDir};
use serde::{Deserialize, Serialize};

use crate::background::RecordedProcess;
use crate::worktree::ChildWorktree;

pub type WorkerLog = JsonlLog<WorkerEvent>;

/// The launch policy of a worker, as `baton worker start` recorded it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerSpec {
    pub name: String,
    pub role: String,
    /// A route (`--model`), else a class (`--model-class`), else the role's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_class: Option<String>,
    /// The directory the session works in (the worktree's, with `--worktree`).
    pub cwd: PathBuf,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<ChildWorktree>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_usd: Option<f64>,
    /// Seconds without a prompt after which the supervisor stops (not retires) the worker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout_secs: Option<u64>,
    pub created: String,
}

/// Why a supervisor ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// `baton worker stop` (or `retire`).
    Asked,
    /// No prompt for the idle timeout.
    Idle,
    /// Its spending reached `--budget-usd`.
    Budget,
    /// The session could not go on (its model failed, say): `message` says why.
    Failed,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum WorkerEvent {
    #[serde(rename = "worker.created")]
    Created { spec: WorkerSpec },
    #[serde(rename = "worker.spawned")]
    Spawned {
        pid: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        start_time: Option<u64>,
        at: String,
    },
    #[serde(rename = "worker.started")]
    Started {
        pid: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        start_time: Option<u64>,
        session: String,
        resumed: bool,
        at: String,
    },
    #[serde(rename = "prompt.queued")]
    Queued {
        id: String,
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_of: Option<String>,
        at: String,
    },
    #[serde(rename = "prompt.delivered")]
    Delivered { id: String, at: String },
    #[serde(rename = "prompt.answered")]
    Answered {
        id: String,
        answer: String,
        /// Why the turn stopped early (a turn limit, a model error), as the session says.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        usage: TurnUsage,
        /// A peer worker's session after this prompt (Claude Code's session id), which the
        /// next prompt resumes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        peer_session: Option<String>,
        at: String,
    },
    #[serde(rename = "prompt.lost")]
    Lost { id: String, at: String },
    #[serde(rename = "worker.stopped")]
    Stopped {
        reason: StopReason,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        at: String,
    },
    #[serde(rename = "worker.retired")]
    Retired {
        /// What became of its worktree, as a sentence (kept with its branch, removed).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        worktree: Option<String>,
        at: String,
    },
}

impl WorkerEvent {
    /// When it was recorded (RFC 3339).
    pub fn at(&self) -> &str {
        match self {
            WorkerEvent::Created { spec } => &spec.created,
            WorkerEvent::Spawned { at, .. }
            | WorkerEvent::Started { at, .. }
            | WorkerEvent::Queued { at, .. }
            | WorkerEvent::Delivered { at, .. }
            | WorkerEvent::Answered { at, .. }
            | WorkerEvent::Lost { at, .. }
            | WorkerEvent::Stopped { at, .. }
            | WorkerEvent::Retired { at, .. } => at,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error("worker `{name}` not found in {dir}: `baton worker list` shows the workers")]
    NotFound { name: String, dir: String },
    #[error("worker name: {0}")]
    BadName(#[from] baton_state::IdError),
    #[error(transparent)]
    Log(#[from] LogError),
    #[error("{path}: its first line is not worker.created: the record is damaged")]
    NoCreated { path: String },
    #[error("cannot start the worker's supervisor {program}: {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
}

baton_protocol::closed_set! {
    /// Where a worker is, as its log and the processes it names say.
    pub enum Phase ("phase") {
        /// Spawned; its supervisor has not started its session yet.
        Starting = "starting",
        /// Its session waits for a prompt.
        Idle = "idle",
        /// Its session works on a prompt.
        Working = "working",
        Stopped = "stopped",
        /// Its supervisor is gone without saying it stopped (killed, the machine restarted).
        Lost = "lost",
        Retired = "retired",
    }
}

impl Phase {
    /// Whether a supervisor runs (or is about to).
    pub fn running(self) -> bool {
        matches!(self, Phase::Starting | Phase::Idle | Phase::Working)
    }
}

/// A prompt and what became of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prompt {
    pub id: String,
    pub text: String,
    pub retry_of: Option<String>,
    pub queued: String,
    pub delivered: bool,
    pub answer: Option<String>,
    pub reason: Option<String>,
    pub usage: Option<TurnUsage>,
    /// Delivered to a supervisor that died before answering.
    pub lost: bool,
}

/// A worker's log folded.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerState {
    pub spec: WorkerSpec,
    pub prompts: Vec<Prompt>,
    /// The supervisor of the last run (spawned, then started).
    pub supervisor: Option<RecordedProcess>,
    /// The session it serves (the last `worker.started`'s).
    pub session: Option<String>,
    /// Whether the last run ended (`worker.stopped`) and why.
    pub stopped: Option<(StopReason, Option<String>)>,
    pub started: bool,
    pub retired: Option<Option<String>>,
    pub last_activity: String,
    /// The supervisor of the last `worker.started`.
    started_by: Option<(u32, Option<u64>)>,
    /// A peer worker's session as its last answer named it.
    pub peer_session: Option<String>,
}

impl WorkerState {
    pub fn fold(events: &[WorkerEvent]) -> Option<WorkerState> {
        let WorkerEvent::Created { spec } = events.first()? else {
            return None;
        };
        let mut s = WorkerState {
            spec: spec.clone(),
            prompts: Vec::new(),
            supervisor: None,
            session: None,
            stopped: None,
            started: false,
            retired: None,
            last_activity: spec.created.clone(),
            started_by: None,
            peer_session: None,
        };
        for ev in &events[1..] {
            s.apply(ev);
        }
        Some(s)
    }

    fn prompt(&mut self, id: &str) -> Option<&mut Prompt> {
        self.prompts.iter_mut().find(|p| p.id == id)
    }

    fn apply(&mut self, ev: &WorkerEvent) {
        match ev {
            WorkerEvent::Created { .. } => {}
            // The starter records the spawn after starting the supervisor, which may already
            // have started (or even stopped) by then: a spawn of the process that started is old
            // news.
            WorkerEvent::Spawned { pid, .. } if self.started_by.is_some_and(|(p, _)| p == *pid) => {
            }
            WorkerEvent::Spawned {
                pid,
                start_time,
                at,
            } => {
                self.supervisor = Some(RecordedProcess {
                    pid: *pid,
                    start_time: *start_time,
                });
                self.stopped = None;
                self.started = false;
                self.last_activity = at.clone();
            }
            WorkerEvent::Started {
                pid,
                start_time,
                session,
                at,
                ..
            } => {
                self.supervisor = Some(RecordedProcess {
                    pid: *pid,
                    start_time: *start_time,
                });
                self.started_by = Some((*pid, *start_time));
                self.session = Some(session.clone());
                self.stopped = None;
                self.started = true;
                self.last_activity = at.clone();
            }
            WorkerEvent::Queued {
                id,
                text,
                retry_of,
                at,
            } => {
                self.prompts.push(Prompt {
                    id: id.clone(),
                    text: text.clone(),
                    retry_of: retry_of.clone(),
                    queued: at.clone(),
                    delivered: false,
                    answer: None,
                    reason: None,
                    usage: None,
                    lost: false,
                });
                self.last_activity = at.clone();
            }
            WorkerEvent::Delivered { id, at } => {
                if let Some(p) = self.prompt(id) {
                    p.delivered = true;
                }
                self.last_activity = at.clone();
            }
            WorkerEvent::Answered {
                id,
                answer,
                reason,
                usage,
                peer_session,
                at,
            } => {
                if peer_session.is_some() {
                    self.peer_session.clone_from(peer_session);
                }
                if let Some(p) = self.prompt(id) {
                    p.answer = Some(answer.clone());
                    p.reason = reason.clone();
                    p.usage = Some(usage.clone());
                }
                self.last_activity = at.clone();
            }
            WorkerEvent::Lost { id, at } => {
                if let Some(p) = self.prompt(id) {
                    p.lost = true;
                }
                self.last_activity = at.clone();
            }
            WorkerEvent::Stopped {
                reason,
                message,
                at,
            } => {
                self.stopped = Some((*reason, message.clone()));
                self.last_activity = at.clone();
            }
            WorkerEvent::Retired { worktree, at } => {
                self.retired = Some(worktree.clone());
                self.last_activity = at.clone();
            }
        }
    }

    /// Where the worker is, its supervisor's liveness checked now.
    pub fn phase(&self) -> Phase {
        if self.retired.is_some() {
            return Phase::Retired;
        }
        if self.stopped.is_some() {
            return Phase::Stopped;
        }
        let Some(sup) = self.supervisor else {
            return Phase::Stopped;
        };
        if !sup.is_alive() {
            return Phase::Lost;
        }
        if !self.started {
            return Phase::Starting;
        }
        if self.in_flight().is_some() {
            Phase::Working
        } else {
            Phase::Idle
        }
    }

    /// The prompt delivered and not answered (nor given up as lost).
    pub fn in_flight(&self) -> Option<&Prompt> {
        self.prompts
            .iter()
            .find(|p| p.delivered && p.answer.is_none() && !p.lost)
    }

    /// The prompts queued and not yet delivered, in order.
    pub fn pending(&self) -> impl Iterator<Item = &Prompt> {
        self.prompts.iter().filter(|p| !p.delivered && !p.lost)
    }

    /// Turns answered, tokens and cost so far.
    pub fn totals(&self) -> (u32, u64, f64) {
        let mut turns = 0;
        let mut tokens = 0;
        let mut cost = 0.0;
        for u in self.prompts.iter().filter_map(|p| p.usage.as_ref()) {
            turns += 1;
            tokens += u.input_tokens + u.output_tokens;
            cost += u.cost_usd.unwrap_or(0.0);
        }
        (turns, tokens, cost)
    }
}

/// How a worker on a peer CLI keeps its conversation between prompts: its own session, resumed.
///
/// - `pi`: `--session-dir DIR` instead of `--no-session`, and `--continue` once there is a
///   session to continue (`resume` given);
/// - `claude`: `--resume ID` once a prompt has named its session (`resume`);
/// - `codex`, `command` and `baton` launches are not continued this way (a `baton` worker is a
///   session of its own): an error that says so.
pub fn continue_peer_session(
    launch: &mut crate::types::Launch,
    backend: baton_protocol::role::BackendKind,
    dir: &Path,
    resume: Option<&str>,
) -> Result<(), String> {
    use baton_protocol::role::BackendKind as B;
    match backend {
        B::Pi => {
            let at = launch.args.iter().position(|a| a == "--no-session");
            let dir = dir.display().to_string();
            match at {
                Some(i) => {
                    launch
                        .args
                        .splice(i..=i, ["--session-dir".to_string(), dir]);
                }
                None => launch.args.extend(["--session-dir".to_string(), dir]),
            }
            if resume.is_some() {
                launch.args.push("--continue".into());
            }
            Ok(())
        }
        B::Claude => {
            if let Some(id) = resume {
                launch.args.extend(["--resume".to_string(), id.to_string()]);
            }
            Ok(())
        }
        B::Codex | B::Command | B::Baton => Err(format!(
            "a worker on the `{}` backend cannot keep its conversation between prompts: workers run on baton, pi or claude",
            backend.as_str()
        )),
    }
}

/// `workers/<name>.events.jsonl`, the name checked.
pub fn log_path(state: &StateDir, name: &str) -> Result<PathBuf, WorkerError> {
    baton_state::check_id(IdKind::Worktree, name)?;
    Ok(state
        .root()
        .join("workers")
        .join(format!("{name}.events.jsonl")))
}

/// `workers/<name>.log`, the supervisor's own output.
pub fn output_path(state: &StateDir, name: &str) -> Result<PathBuf, WorkerError> {
    baton_state::check_id(IdKind::Worktree, name)?;
    Ok(state.workers().join(format!("{name}.log")))
}

/// The names of the project's workers.
pub fn list(state: &StateDir) -> Vec<String> {
    StateDir::list_ids(&state.workers(), ".events.jsonl")
}

/// A worker's events; not found when it has no log.
pub fn events(state: &StateDir, name: &str) -> Result<Vec<WorkerEvent>, WorkerError> {
    let path = log_path(state, name)?;
    if !path.exists() {
        return Err(WorkerError::NotFound {
            name: name.to_string(),
            dir: state.workers().display().to_string(),
        });
    }
    Ok(WorkerLog::read(&path)?)
}

/// A worker's log folded; a log that does not begin with `worker.created` is damage.
pub fn load(state: &StateDir, name: &str) -> Result<WorkerState, WorkerError> {
    let evs = events(state, name)?;
    WorkerState::fold(&evs).ok_or_else(|| WorkerError::NoCreated {
        path: log_path(state, name)
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
    })
}

/// A worker's state kept current by reading only what its log gained since the last look: a
/// waiter looks at every change, and reading the whole log each time costs as much as the log
/// is long (answers included). Anything irregular (a line that does not read, a log that
/// shrank or went away) reads the whole log again through [`load`], so the errors are its own.
pub struct Follower {
    dir: StateDir,
    name: String,
    path: PathBuf,
    /// The bytes of the log folded so far (whole lines only).
    offset: u64,
    state: Option<WorkerState>,
    /// The log's first line (its `worker.created`) as folded: a log replaced since (a worker
    /// retired and made again under its name) starts with another one and is folded afresh.
    head: Vec<u8>,
}

impl Follower {
    pub fn new(dir: &StateDir, name: &str) -> Result<Follower, WorkerError> {
        Ok(Follower {
            dir: dir.clone(),
            name: name.to_string(),
            path: log_path(dir, name)?,
            offset: 0,
            state: None,
            head: Vec::new(),
        })
    }

    /// The worker's state with what was appended since the last call.
    pub fn refresh(&mut self) -> Result<&WorkerState, WorkerError> {
        if self.read_new().is_none() {
            self.offset = 0;
            self.state = None;
            if self.read_new().is_none() {
                // The whole log does not fold: `load` names why.
                load(&self.dir, &self.name)?;
            }
        }
        self.state.as_ref().ok_or_else(|| WorkerError::NoCreated {
            path: self.path.display().to_string(),
        })
    }

    /// Folds the whole lines appended since `offset`; `None` when they do not read, or when the
    /// log no longer starts with the line folded first (the caller folds it afresh).
    fn read_new(&mut self) -> Option<()> {
        use std::io::{Read as _, Seek as _, SeekFrom};
        use std::os::unix::fs::FileExt as _;
        let mut file = std::fs::File::open(&self.path).ok()?;
        let len = file.metadata().ok()?.len();
        if len < self.offset {
            return None;
        }
        if self.offset > 0 {
            let mut start = vec![0u8; self.head.len()];
            file.read_exact_at(&mut start, 0).ok()?;
            if start != self.head {
                return None;
            }
        }
        file.seek(SeekFrom::Start(self.offset)).ok()?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).ok()?;
        let whole = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        let mut events = Vec::new();
        for line in bytes[..whole].split(|b| *b == b'\n') {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            events.push(serde_json::from_slice::<WorkerEvent>(line).ok()?);
        }
        match &mut self.state {
            Some(s) => events.iter().for_each(|ev| s.apply(ev)),
            None if events.is_empty() => return None,
            None => {
                self.state = Some(WorkerState::fold(&events)?);
                let end = bytes.iter().position(|b| *b == b'\n').map_or(0, |i| i + 1);
                self.head = bytes[..end].to_vec();
            }
        }
        self.offset += whole as u64;
        Some(())
    }
}

/// Appends `ev` to the worker's existing log.
pub fn append(state: &StateDir, name: &str, ev: &WorkerEvent) -> Result<(), WorkerError> {
    append_as(state, name, ev, Durability::Fsync)
}

/// [`append`] pushed only as far as `durability` says. A line written without its fsync reaches
/// every reader on this machine at once, and reaches the disk with the next fsynced line of the
/// log (`fdatasync` flushes every earlier write of the file).
pub fn append_as(
    state: &StateDir,
    name: &str,
    ev: &WorkerEvent,
    durability: Durability,
) -> Result<(), WorkerError> {
    let path = log_path(state, name)?;
    // Opened without reading what it holds (a torn last line is still cut first): the log
    // holds every answer, and a prompt appends to it three times.
    let mut log = WorkerLog::open_append(&path, durability)?;
    log.append(ev)?;
    Ok(())
}

/// Waits for a worker's log to grow: inotify on the file, so a waiter wakes as the line lands
/// instead of at its next poll (a prompt for the supervisor, an answer for `send`). Where the
/// file cannot be watched, [`LogWatch::wait`] just sleeps its timeout, and the caller reads the
/// log again either way.
pub struct LogWatch {
    inotify: Option<nix::sys::inotify::Inotify>,
}

impl LogWatch {
    pub fn new(path: &Path) -> LogWatch {
        use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
        let inotify = Inotify::init(InitFlags::IN_CLOEXEC | InitFlags::IN_NONBLOCK)
            .ok()
            .filter(|i| {
                i.add_watch(
                    path,
                    AddWatchFlags::IN_MODIFY
                        | AddWatchFlags::IN_DELETE_SELF
                        | AddWatchFlags::IN_MOVE_SELF,
                )
                .is_ok()
            });
        LogWatch { inotify }
    }

    /// Returns once the log changed or `timeout` passed (whichever first).
    pub fn wait(&self, timeout: std::time::Duration) {
        use std::os::fd::AsFd as _;
        let Some(inotify) = &self.inotify else {
            std::thread::sleep(timeout);
            return;
        };
        let ms = timeout.as_millis().min(u16::MAX as u128) as u16;
        let mut fds = [nix::poll::PollFd::new(
            inotify.as_fd(),
            nix::poll::PollFlags::POLLIN,
        )];
        if nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(ms)).is_ok_and(|n| n > 0) {
            // Drained: the next wait sleeps until the next change.
            while inotify.read_events().is_ok_and(|e| !e.is_empty()) {}
        }
    }
}

/// The identity of the calling process, for `worker.started`.
pub fn me() -> (u32, Option<u64>) {
    let pid = std::process::id();
    (
        pid,
        baton_process::Identity::of(pid).ok().map(|i| i.start_time),
    )
}

/// Starts the detached supervisor `baton worker serve NAME --project ROOT` in a new session (it
/// outlives the caller and its terminal), its output in `workers/<name>.log`, and records
/// `worker.spawned`.
pub fn spawn(
    baton_exe: &Path,
    state: &StateDir,
    project_root: &Path,
    name: &str,
    fresh: bool,
    at: String,
) -> Result<RecordedProcess, WorkerError> {
    use std::os::unix::process::CommandExt;
    let out_path = output_path(state, name)?;
    let io = |source: std::io::Error| {
        WorkerError::Log(LogError::Io {
            path: out_path.clone(),
            source,
        })
    };
    let output = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&out_path)
        .map_err(io)?;
    let mut cmd = std::process::Command::new(baton_exe);
    cmd.env("BATON_CHILD", "1")
        .args(["worker", "serve", name, "--project"])
        .arg(project_root)
        .current_dir(project_root)
        .stdin(std::process::Stdio::null())
        .stdout(output.try_clone().map_err(io)?)
        .stderr(output);
    if fresh {
        cmd.arg("--fresh");
    }
    // SAFETY: setsid is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            nix::unistd::setsid()
                .map(|_| ())
                .map_err(std::io::Error::from)
        });
    }
    let child = cmd.spawn().map_err(|source| WorkerError::Spawn {
        program: baton_exe.display().to_string(),
        source,
    })?;
    let pid = child.id();
    // The supervisor is reaped by init once this process exits; until then a thread does it.
    std::thread::spawn(move || {
        let mut child = child;
        let _ = child.wait();
    });
    let start_time = baton_process::Identity::of(pid).ok().map(|i| i.start_time);
    append(
        state,
        name,
        &WorkerEvent::Spawned {
            pid,
            start_time,
            at,
        },
    )?;
    Ok(RecordedProcess { pid, start_time })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn spec() -> WorkerSpec {
        WorkerSpec {
            name: "w".into(),
            role: "helper".into(),
            model: None,
            model_class: None,
            cwd: "/tmp".into(),
            worktree: None,
            budget_usd: None,
            idle_timeout_secs: None,
            created: "t0".into(),
        }
    }

    /// Worker `w`'s log, new, holding its `worker.created`.
    fn new_log(st: &StateDir) -> (std::path::PathBuf, WorkerLog) {
        let path = log_path(st, "w").unwrap();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut log = WorkerLog::create(&path, Durability::Fsync).unwrap();
        log.append(&WorkerEvent::Created { spec: spec() }).unwrap();
        (path, log)
    }

    fn queued(id: &str) -> WorkerEvent {
        WorkerEvent::Queued {
            id: id.into(),
            text: format!("do {id}"),
            retry_of: None,
            at: "t".into(),
        }
    }

    #[test]
    fn a_follower_reads_only_what_was_appended_and_a_damaged_line_is_load_s_error() {
        use std::io::Write as _;
        let dir = tempfile::tempdir().unwrap();
        let st = StateDir::at(dir.path());
        let (path, mut log) = new_log(&st);
        let mut f = Follower::new(&st, "w").unwrap();
        assert_eq!(f.refresh().unwrap().pending().count(), 0);
        log.append(&queued("p1")).unwrap();
        log.append(&queued("p2")).unwrap();
        let ids = |s: &WorkerState| s.pending().map(|p| p.id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(f.refresh().unwrap()), ["p1", "p2"]);
        assert_eq!(f.offset, std::fs::metadata(&path).unwrap().len());
        // A line still being written is left for the next look.
        let mut raw = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        let line = serde_json::to_string(&queued("p3")).unwrap();
        raw.write_all(&line.as_bytes()[..10]).unwrap();
        assert_eq!(ids(f.refresh().unwrap()), ["p1", "p2"]);
        raw.write_all(&line.as_bytes()[10..]).unwrap();
        raw.write_all(b"\n").unwrap();
        assert_eq!(ids(f.refresh().unwrap()), ["p1", "p2", "p3"]);
        assert_eq!(ids(f.refresh().unwrap()), ids(&load(&st, "w").unwrap()));
        // A line that does not read: the error is the whole log's, as `load` gives it.
        raw.write_all(b"not json\n").unwrap();
        let e = f.refresh().unwrap_err().to_string();
        assert_eq!(e, load(&st, "w").unwrap_err().to_string());
    }

    #[test]
    fn a_follower_folds_a_log_made_again_under_the_same_name_afresh() {
        let dir = tempfile::tempdir().unwrap();
        let st = StateDir::at(dir.path());
        let (path, mut log) = new_log(&st);
        log.append(&queued("old")).unwrap();
        let mut f = Follower::new(&st, "w").unwrap();
        let ids = |s: &WorkerState| s.pending().map(|p| p.id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(f.refresh().unwrap()), ["old"]);
        // Retired and made again: a new log, longer than what was folded, whose lines past the
        // old offset read as events too.
        drop(log);
        std::fs::remove_file(&path).unwrap();
        let mut log = WorkerLog::create(&path, Durability::Fsync).unwrap();
        let again = WorkerSpec {
            created: "t1".into(),
            ..spec()
        };
        log.append(&WorkerEvent::Created { spec: again }).unwrap();
        for id in ["ne1", "ne2", "ne3"] {
            log.append(&queued(id)).unwrap();
        }
        let s = f.refresh().unwrap();
        assert_eq!(s.spec.created, "t1");
        assert_eq!(ids(s), ["ne1", "ne2", "ne3"]);
    }

    #[test]
    fn prompts_are_pending_in_flight_answered_or_lost() {
        let (pid, start_time) = me();
        let mut evs = vec![
            WorkerEvent::Created { spec: spec() },
            WorkerEvent::Started {
                pid,
                start_time,
                session: "s1".into(),
                resumed: false,
                at: "t".into(),
            },
            queued("p1"),
            queued("p2"),
            WorkerEvent::Delivered {
                id: "p1".into(),
                at: "t".into(),
            },
        ];
        let s = WorkerState::fold(&evs).unwrap();
        assert_eq!(s.phase(), Phase::Working);
        assert_eq!(s.in_flight().unwrap().id, "p1");
        assert_eq!(
            s.pending().map(|p| p.id.as_str()).collect::<Vec<_>>(),
            ["p2"]
        );
        evs.push(WorkerEvent::Answered {
            id: "p1".into(),
            answer: "done".into(),
            reason: None,
            peer_session: None,
            usage: TurnUsage {
                input_tokens: 10,
                output_tokens: 2,
                cost_usd: Some(0.5),
            },
            at: "t".into(),
        });
        let s = WorkerState::fold(&evs).unwrap();
        assert_eq!(s.phase(), Phase::Idle);
        assert_eq!(s.totals(), (1, 12, 0.5));
        evs.push(WorkerEvent::Delivered {
            id: "p2".into(),
            at: "t".into(),
        });
        evs.push(WorkerEvent::Lost {
            id: "p2".into(),
            at: "t".into(),
        });
        let s = WorkerState::fold(&evs).unwrap();
        assert!(s.in_flight().is_none());
        assert!(s.prompts[1].lost);
        // A supervisor that is gone without worker.stopped: lost.
        let gone = vec![
            WorkerEvent::Created { spec: spec() },
            WorkerEvent::Spawned {
                pid: u32::MAX - 7,
                start_time: Some(1),
                at: "t".into(),
            },
        ];
        assert_eq!(WorkerState::fold(&gone).unwrap().phase(), Phase::Lost);
        // The supervisor wrote `worker.started` before its starter recorded the spawn.
        let raced = vec![
            WorkerEvent::Created { spec: spec() },
            WorkerEvent::Started {
                pid,
                start_time,
                session: "s1".into(),
                resumed: false,
                at: "t".into(),
            },
            WorkerEvent::Spawned {
                pid,
                start_time,
                at: "t".into(),
            },
        ];
        assert_eq!(WorkerState::fold(&raced).unwrap().phase(), Phase::Idle);
        assert!(WorkerState::fold(&gone[1..]).is_none());
    }
}
