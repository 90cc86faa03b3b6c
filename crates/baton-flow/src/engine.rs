//! The Flow driver: start, continue, resume, abandon and status.
//!
//! One [`Run`] drives a Flow while holding the repository's Flow lock. Every step first appends
//! its event (fsynced), then acts, then records what it learned. Because every decision is taken
//! from git (base, tip, whether Main already holds a tip) and from the log, a run started on a log
//! that ends anywhere — including in the middle of a step — carries on correctly: [`resume`] is
//! the same driver pointed at an interrupted log.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use baton_exec::backend::launch_for;
use baton_exec::delegate::{
    backend_of, child_route, task_spec, write_frozen_role, DelegateEnv, TaskEntry,
};
use baton_exec::executor::{Executor, OutputBudget};
use baton_exec::types::{Activity, ChildResult, ChildStatus, ExecError, ExecErrorCode};
use baton_exec::worktree::{
    create_child_worktree, repo_folder_name, ChildWorktree, Isolated, BRANCH_PREFIX,
};
use baton_git::{Git, GitError, RebaseOutcome};
use baton_protocol::role::{BackendKind, RoleSpec};
use baton_protocol::ModelClass;
use baton_roles::find_role;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::event::{
    BlockReason, ChildSummary, DriverCommand, FailureKind, FlowEvent, FrozenRole, Record,
    UnitOutcome,
};
use crate::lock::{LockError, RepoLock};
use crate::state::{FlowState, Phase, UnitState, UnitStatus};
use crate::store::{now_rfc3339, CrashHook, FlowLog, FlowStore, StoreError};
use crate::units::{parse_units, InputError, UnitSpec};
use crate::validate::{bounded, run_validation, Validation, EVIDENCE_BOUND};

/// The line in `info/exclude` that keeps Flow's own state out of `git status`.
pub const STATE_EXCLUDE: &str = "/.baton/state/";

/// Something a caller may want to show while a Flow runs.
#[derive(Debug, Clone, Copy)]
pub enum Notice<'a> {
    /// An event was just made durable.
    Event(&'a Record),
    /// What a unit's implementer or reviewer is doing.
    Activity {
        unit: &'a str,
        role: &'a str,
        activity: &'a Activity,
    },
}

pub type Observer = Arc<dyn Fn(Notice<'_>) + Send + Sync>;

/// Where and with what Flows run.
#[derive(Clone)]
pub struct FlowEnv {
    /// Config, roles, working directory (Main's checkout), worktree root, limits, output cap.
    pub delegate: DelegateEnv,
    pub executor: Arc<Executor>,
    /// Added to the environment of Flow's own git calls (tests give commits an identity with it).
    pub git_env: Vec<(String, String)>,
    /// Test hook; see [`CrashHook`].
    pub crash: Option<CrashHook>,
    pub observer: Option<Observer>,
}

impl FlowEnv {
    pub fn new(delegate: DelegateEnv, executor: Arc<Executor>) -> Self {
        FlowEnv {
            delegate,
            executor,
            git_env: Vec::new(),
            crash: None,
            observer: None,
        }
    }

    fn git(&self, dir: &Path) -> Git {
        self.git_env
            .iter()
            .fold(Git::new(dir), |g, (k, v)| g.with_env(k, v))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum FlowError {
    /// The units (or the guidance) are not acceptable; nothing was changed.
    #[error("{0}")]
    Input(#[from] InputError),
    /// A precondition does not hold; nothing was changed.
    #[error("{0}")]
    Refused(String),
    #[error(transparent)]
    Lock(#[from] LockError),
    /// The Flow is not in a phase that allows the request.
    #[error("{0}")]
    WrongPhase(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A role could not be frozen into the Flow's folder.
    #[error("{}: cannot freeze a role: {source}", path.display())]
    Role {
        path: PathBuf,
        #[source]
        source: ExecError,
    },
    /// The crash test hook fired right after this event was written.
    #[error("simulated crash right after `{0}` was written (test hook)")]
    SimulatedCrash(String),
}

impl FlowError {
    /// True when nothing was done: bad input, a failed precondition, a held lock, a wrong phase.
    pub fn is_refusal(&self) -> bool {
        match self {
            FlowError::Input(_)
            | FlowError::Refused(_)
            | FlowError::Lock(LockError::Held { .. })
            | FlowError::WrongPhase(_) => true,
            FlowError::Lock(LockError::Io(_))
            | FlowError::Store(_)
            | FlowError::Role { .. }
            | FlowError::SimulatedCrash(_) => false,
        }
    }
}

/// A Flow as a reader sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowStatus {
    pub phase: Phase,
    #[serde(flatten)]
    pub state: FlowState,
}

/// The repository a Flow works on, found from a working directory.
struct Repo {
    toplevel: PathBuf,
    common: PathBuf,
    store: FlowStore,
}

fn open_repo(env_git: &dyn Fn(&Path) -> Git, cwd: &Path) -> Result<Repo, FlowError> {
    let probe = env_git(cwd);
    let toplevel = match probe.toplevel() {
        Ok(t) => t,
        Err(GitError::NotARepo { .. }) => {
            return Err(FlowError::Refused(format!(
                "{} is not inside a git repository: Flow lands its units on a git branch; run it from a repository",
                cwd.display()
            )))
        }
        Err(e) => return Err(FlowError::Refused(format!("cannot read the repository: {e}"))),
    };
    let toplevel = std::fs::canonicalize(&toplevel).unwrap_or(toplevel);
    let common = env_git(&toplevel)
        .git_common_dir()
        .map_err(|e| FlowError::Refused(format!("cannot read the repository: {e}")))?;
    // One store per repository, as there is one lock per repository: the logs live in the main
    // worktree whichever checkout a command runs in (in the git directory of a bare repository).
    let main_worktree = env_git(&toplevel)
        .worktree_list()
        .ok()
        .and_then(|list| list.into_iter().next());
    let store = match main_worktree {
        Some(w) if !w.bare => FlowStore::for_repo(&w.path),
        Some(_) => FlowStore::new(baton_state::StateDir::at(common.join("baton"))),
        None => FlowStore::for_repo(&toplevel),
    };
    Ok(Repo {
        store,
        toplevel,
        common,
    })
}

/// Branch, `HEAD` and uncommitted changes of a checkout, from one `git status` call.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CheckoutStatus {
    /// `None` when detached.
    branch: Option<String>,
    /// `None` when unborn.
    head: Option<String>,
    /// `git status` lines of changed or untracked paths; empty when clean.
    changes: Vec<String>,
}

impl CheckoutStatus {
    fn clean(&self) -> bool {
        self.changes.is_empty()
    }

    fn listing(&self) -> String {
        let shown: Vec<&str> = self.changes.iter().take(50).map(String::as_str).collect();
        let mut s = shown.join("\n");
        if self.changes.len() > 50 {
            s.push_str(&format!("\n… and {} more", self.changes.len() - 50));
        }
        bounded(&s, EVIDENCE_BOUND)
    }
}

fn checkout_status(git: &Git) -> Result<CheckoutStatus, GitError> {
    checkout_status_of(git, &[])
}

/// [`checkout_status`] limited to `pathspec` (for example `:(exclude,top)…`).
fn checkout_status_of(git: &Git, pathspec: &[&str]) -> Result<CheckoutStatus, GitError> {
    let mut args = vec![
        "status",
        "--porcelain=v2",
        "--branch",
        "--untracked-files=normal",
        "--ignore-submodules=none",
    ];
    if !pathspec.is_empty() {
        args.push("--");
        args.extend_from_slice(pathspec);
    }
    let out = git.run(args)?;
    let mut st = CheckoutStatus {
        branch: None,
        head: None,
        changes: Vec::new(),
    };
    for line in out.lines() {
        if let Some(oid) = line.strip_prefix("# branch.oid ") {
            st.head = (oid != "(initial)").then(|| oid.to_string());
        } else if let Some(b) = line.strip_prefix("# branch.head ") {
            st.branch = (b != "(detached)").then(|| b.to_string());
        } else if line.starts_with('#') || line.is_empty() {
            continue;
        } else {
            st.changes.push(short_status(line));
        }
    }
    Ok(st)
}

/// A porcelain v2 entry reduced to `XY path` (the object ids and modes are noise for people).
fn short_status(line: &str) -> String {
    let fields: Vec<&str> = line.splitn(11, ' ').collect();
    match fields.first().copied() {
        Some("1") if fields.len() >= 9 => format!("{} {}", fields[1], fields[8..].join(" ")),
        Some("2") if fields.len() >= 10 => format!("{} {}", fields[1], fields[9..].join(" ")),
        Some("u") if fields.len() >= 11 => format!("{} {}", fields[1], fields[10]),
        Some("?") => format!("?? {}", &line[2..]),
        _ => line.to_string(),
    }
}

/// Why Main's checkout is not where the Flow left it (on its branch, at `main_oid`, clean), as
/// the message that halts the driver; `None` when it is.
fn main_problem(state: &FlowState, st: &CheckoutStatus) -> Option<String> {
    if st.branch.as_deref() != Some(state.main_branch.as_str()) {
        return Some(format!(
            "Main's checkout {} is on {} instead of {}: check out {} again, then run `baton flow resume`",
            state.repo_root.display(),
            st.branch.as_deref().unwrap_or("a detached HEAD"),
            state.main_branch,
            state.main_branch
        ));
    }
    let head = st.head.as_deref().unwrap_or_default();
    if head != state.main_oid {
        return Some(format!(
            "Main ({}) moved outside the Flow: the Flow left it at {}, it is now at {}. \
             Put {} back at {} (or integrate the remaining units by hand and abandon the Flow), then run `baton flow resume`",
            state.main_branch,
            short(&state.main_oid),
            short(head),
            state.main_branch,
            short(&state.main_oid)
        ));
    }
    if !st.clean() {
        return Some(format!(
            "Main's checkout {} has uncommitted changes; commit or stash them, then run `baton flow resume`:\n{}",
            state.repo_root.display(),
            st.listing()
        ));
    }
    None
}

/// The untracked paths of a worktree, as `git status` names them (best effort: none on error).
fn untracked_paths(wt: &Git) -> Vec<String> {
    match checkout_status(wt) {
        Ok(st) => st
            .changes
            .iter()
            .filter_map(|c| c.strip_prefix("?? ").map(str::to_string))
            .collect(),
        Err(e) => {
            tracing::warn!("cannot list the untracked files after validation: {e}");
            Vec::new()
        }
    }
}

fn lock_or<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn short(oid: &str) -> &str {
    oid.get(..12).unwrap_or(oid)
}

/// A new Flow id: UTC creation time and 4 random hex digits, e.g. `20261202-134115-9f2c`.
pub fn new_flow_id() -> String {
    let now = time::OffsetDateTime::now_utc();
    let rand = uuid::Uuid::new_v4().simple().to_string();
    format!(
        "{:04}{:02}{:02}-{:02}{:02}{:02}-{}",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second(),
        &rand[..4]
    )
}

/// The worktree id (and branch `baton/<id>`) of a unit.
pub fn unit_worktree_id(flow_id: &str, unit_id: &str) -> String {
    format!("flow-{flow_id}-{unit_id}")
}

/// What happened to the integration of one unit.
enum Step {
    /// Integrated or no-op; go on with the next unit.
    Done,
    /// Blocked: waiting for `continue`.
    Paused,
    /// The Flow ended (failed).
    Ended,
    /// The driver stopped; `resume` continues.
    Halted,
}

/// A Flow being driven by this process.
struct Run<'a> {
    env: &'a FlowEnv,
    store: FlowStore,
    log: Mutex<FlowLog>,
    state: Mutex<FlowState>,
    main: Git,
    cancel: &'a CancellationToken,
    _lock: RepoLock,
    /// Main's HEAD as this process left it with its own fast-forward a moment ago. The next unit's
    /// step-1 check may rely on it instead of reading Main again: the check right before its merge
    /// still reads Main, so nothing that moves Main in between goes unnoticed.
    main_left_at: Mutex<Option<String>>,
}

/// Turns a git error inside a unit step into the Flow's terminal infrastructure failure.
macro_rules! git_or_fail {
    ($run:expr, $unit:expr, $what:expr, $e:expr) => {
        match $e {
            Ok(v) => v,
            Err(err) => {
                return $run.fail(
                    FailureKind::Infrastructure,
                    Some($unit),
                    format!("{}: {err}", $what),
                )
            }
        }
    };
}

// ------------------------------------------------------------------------------------------------
// Public entry points

/// Starts a Flow in the repository of `env.delegate.cwd` and drives it until it completes, pauses
/// on a block, fails, or is cancelled. Input and every precondition are checked before anything
/// changes; a refusal is an `Err` with [`FlowError::is_refusal`].
pub async fn start(
    env: &FlowEnv,
    units: &[UnitSpec],
    cancel: &CancellationToken,
) -> Result<FlowStatus, FlowError> {
    // The same checks as a units file, whatever the caller built.
    let value = serde_json::to_value(units).map_err(|e| InputError {
        field: "units".into(),
        message: e.to_string(),
    })?;
    let units = parse_units(&value)?;

    let git = |d: &Path| env.git(d);
    let repo = open_repo(&git, &env.delegate.cwd)?;
    let main = env.git(&repo.toplevel);
    // The lock first: every check below must still hold when the Flow starts. Nothing is changed
    // before the last refusal.
    let mut lock = RepoLock::acquire(&repo.common)?;
    refuse_if_active(&repo.store)?;
    // Flow's own state is not yet excluded the first time: leave it out of the check.
    let st = checkout_status_of(&main, &[":(exclude,top).baton/state"])
        .map_err(|e| FlowError::Refused(format!("cannot read the repository: {e}")))?;
    let Some(main_branch) = st.branch.clone() else {
        return Err(FlowError::Refused(
            "HEAD is detached: check out the branch the units should land on, then start the Flow"
                .into(),
        ));
    };
    let Some(main_oid) = st.head.clone() else {
        return Err(FlowError::Refused(format!(
            "branch {main_branch} has no commits yet: commit a first version, then start the Flow"
        )));
    };
    if let Some(op) = operation_in_progress(&main) {
        return Err(FlowError::Refused(format!(
            "a {op} is in progress in {}: finish or abort it first",
            repo.toplevel.display()
        )));
    }
    if !st.clean() {
        return Err(FlowError::Refused(format!(
            "the working tree has uncommitted changes; commit or stash them first:\n{}",
            st.listing()
        )));
    }

    // Rebasing a unit onto an advanced Main creates commits: find out now, not after the implementers.
    if units.len() > 1 {
        if let Err(e) = main.run(["var", "GIT_COMMITTER_IDENT"]) {
            return Err(FlowError::Refused(format!(
                "git has no committer identity, which rebasing units needs: set user.name and user.email ({})",
                e.stderr().map(str::trim).unwrap_or_default()
            )));
        }
    }

    let implementer = resolve_role(env, "implementer")?;
    let reviewer = if units.iter().any(|u| u.review.is_some()) {
        Some(resolve_role(env, "reviewer")?)
    } else {
        None
    };
    main.add_exclude(STATE_EXCLUDE)
        .map_err(|e| FlowError::Refused(format!("cannot exclude {STATE_EXCLUDE} from git: {e}")))?;

    let id = new_flow_id();
    let flow_dir = repo.store.flow_dir(&id)?;
    let implementer = freeze(&flow_dir, 0, implementer)?;
    let reviewer = reviewer.map(|r| freeze(&flow_dir, 1, r)).transpose()?;
    lock.note(&id);

    let created = FlowEvent::Created {
        id: id.clone(),
        created: now_rfc3339(),
        repo_root: repo.toplevel.clone(),
        main_branch,
        main_oid,
        worktree_root: env.delegate.worktree_root.clone(),
        units,
        implementer,
        reviewer,
    };
    let state = FlowState::created(&created, 1, &now_rfc3339()).ok_or_else(|| {
        FlowError::Refused("internal: the first event is not flow.created".into())
    })?;
    let log = repo.store.create(&id, env.crash.clone())?;
    let run = Run {
        env,
        store: repo.store.clone(),
        log: Mutex::new(log),
        state: Mutex::new(state),
        main,
        cancel,
        _lock: lock,
        main_left_at: Mutex::new(None),
    };
    run.emit(created)?;
    run.emit(FlowEvent::Driver {
        pid: std::process::id(),
        command: DriverCommand::Start,
    })?;
    run.drive().await?;
    Ok(run.status())
}

/// Repairs the blocked unit of the paused Flow (`id`, or the repository's active one) once: its
/// frozen implementer runs again in the same worktree with the original task, the validation, the
/// block's evidence and `guidance`; `model_class` replaces the unit's class for this repair.
pub async fn continue_flow(
    env: &FlowEnv,
    id: Option<&str>,
    guidance: &str,
    model_class: Option<ModelClass>,
    cancel: &CancellationToken,
) -> Result<FlowStatus, FlowError> {
    if guidance.trim().is_empty() {
        return Err(InputError {
            field: "guidance".into(),
            message: "is empty: say what the implementer should do differently".into(),
        }
        .into());
    }
    let (run, state) = take_over(env, id, cancel)?;
    let Some(i) = state.paused_unit() else {
        return Err(FlowError::WrongPhase(format!(
            "Flow {} is {}: `continue` repairs the blocked unit of a paused Flow{}",
            state.id,
            state.phase(false).as_str(),
            hint(&state)
        )));
    };
    let u = &state.units[i];
    run.emit(FlowEvent::Driver {
        pid: std::process::id(),
        command: DriverCommand::Continue,
    })?;
    run.emit(FlowEvent::RepairStarted {
        unit: u.spec.id.clone(),
        attempt: u.attempt + 1,
        guidance: guidance.to_string(),
        model_class: model_class.or(u.model_class),
    })?;
    run.drive().await?;
    Ok(run.status())
}

/// Continues an interrupted Flow from the first unit not yet integrated, re-deriving and
/// re-validating it from git. A tip Main already holds is never merged again.
pub async fn resume(
    env: &FlowEnv,
    id: Option<&str>,
    cancel: &CancellationToken,
) -> Result<FlowStatus, FlowError> {
    let (run, state) = take_over(env, id, cancel)?;
    match state.phase(false) {
        Phase::Interrupted => {}
        phase @ (Phase::Running
        | Phase::Paused
        | Phase::Completed
        | Phase::Failed
        | Phase::Abandoned) => {
            return Err(FlowError::WrongPhase(format!(
                "Flow {} is {}: `resume` continues an interrupted Flow{}",
                state.id,
                phase.as_str(),
                hint(&state)
            )))
        }
    }
    run.emit(FlowEvent::Driver {
        pid: std::process::id(),
        command: DriverCommand::Resume,
    })?;
    run.drive().await?;
    Ok(run.status())
}

/// Gives up a paused or interrupted Flow: nothing more runs, worktrees and branches stay for a
/// person to reslice, integrated units stay integrated.
pub fn abandon(
    env: &FlowEnv,
    id: Option<&str>,
    reason: Option<&str>,
) -> Result<FlowStatus, FlowError> {
    let cancel = CancellationToken::new();
    let (run, state) = take_over(env, id, &cancel)?;
    let phase = state.phase(false);
    if phase.is_terminal() {
        return Err(FlowError::WrongPhase(format!(
            "Flow {} is already {}",
            state.id,
            phase.as_str()
        )));
    }
    run.emit(FlowEvent::Abandoned {
        reason: reason.map(str::to_string),
    })?;
    run.snapshot();
    Ok(run.status())
}

/// The Flows of the repository at `cwd` (oldest first), or the one named `id`.
pub fn status(
    cwd: &Path,
    id: Option<&str>,
    git_env: &[(String, String)],
) -> Result<Vec<FlowStatus>, FlowError> {
    let git = |d: &Path| {
        git_env
            .iter()
            .fold(Git::new(d), |g, (k, v)| g.with_env(k, v))
    };
    let repo = open_repo(&git, cwd)?;
    let driving = RepoLock::is_held(&repo.common);
    let status_of = |state: FlowState| FlowStatus {
        phase: state.phase(driving),
        state,
    };
    match id {
        Some(id) => Ok(vec![status_of(repo.store.load(id)?)]),
        None => Ok(readable_flows(&repo.store)
            .into_iter()
            .map(|(_, state)| status_of(state))
            .collect()),
    }
}

/// Every Flow of the store whose log can be read, oldest first. An unreadable log is skipped with
/// a warning: it must not stop the commands about the other Flows.
fn readable_flows(store: &FlowStore) -> Vec<(String, FlowState)> {
    store
        .list()
        .into_iter()
        .filter_map(|id| match store.load(&id) {
            Ok(state) => Some((id, state)),
            Err(e) => {
                tracing::warn!("skipping Flow {id}: its log cannot be read: {e}");
                None
            }
        })
        .collect()
}

/// Kills the process group of every implementer a dead driver left running in its unit's
/// worktree, so a relaunch never shares the worktree with it. A recorded group is killed only
/// while one of its processes still works inside that worktree (pids are reused).
fn stop_stale_implementers(state: &FlowState) {
    for u in &state.units {
        let (Some(pid), Some(path)) = (u.implementer_pid, u.path.as_ref()) else {
            continue;
        };
        let Ok(pgid) = i32::try_from(pid) else {
            continue;
        };
        let worktree = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
        if group_works_in(pgid, &worktree) {
            tracing::info!(
                "stopping the implementer of unit {} (process group {pgid}) left by an earlier driver",
                u.id()
            );
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pgid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// Whether a live process of group `pgid` has its working directory inside `dir` (Linux `/proc`).
fn group_works_in(pgid: i32, dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|entry| {
        let proc_dir = entry.path();
        if entry
            .file_name()
            .to_str()
            .is_none_or(|n| n.parse::<u32>().is_err())
        {
            return false;
        }
        let Ok(stat) = std::fs::read_to_string(proc_dir.join("stat")) else {
            return false;
        };
        // `pid (comm) state ppid pgrp …`; comm may hold spaces and parentheses.
        let mut fields = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace())
            .into_iter()
            .flatten();
        let state = fields.next();
        let group = fields.nth(1).and_then(|g| g.parse::<i32>().ok());
        if group != Some(pgid) || state == Some("Z") {
            return false;
        }
        std::fs::read_link(proc_dir.join("cwd")).is_ok_and(|cwd| cwd.starts_with(dir))
    })
}

fn hint(state: &FlowState) -> String {
    match state.phase(false) {
        Phase::Paused => "; repair it with `baton flow continue --guidance TEXT` or give it up with `baton flow abandon`".into(),
        Phase::Interrupted => "; continue it with `baton flow resume`".into(),
        Phase::Running | Phase::Completed | Phase::Failed | Phase::Abandoned => String::new(),
    }
}

fn operation_in_progress(git: &Git) -> Option<&'static str> {
    let dir = git.git_dir().ok()?;
    [
        ("rebase-merge", "rebase"),
        ("rebase-apply", "rebase or am"),
        ("MERGE_HEAD", "merge"),
        ("CHERRY_PICK_HEAD", "cherry-pick"),
        ("REVERT_HEAD", "revert"),
    ]
    .into_iter()
    .find(|(f, _)| dir.join(f).exists())
    .map(|(_, op)| op)
}

fn refuse_if_active(store: &FlowStore) -> Result<(), FlowError> {
    for (id, state) in readable_flows(store) {
        let phase = state.phase(false);
        if !phase.is_terminal() {
            return Err(FlowError::Refused(format!(
                "Flow {id} is still {} in this repository, and a repository has one active Flow at a time{}",
                phase.as_str(),
                hint(&state)
            )));
        }
    }
    Ok(())
}

fn resolve_role(env: &FlowEnv, name: &str) -> Result<(RoleSpec, BackendKind), FlowError> {
    let role = find_role(&env.delegate.role_dirs, name)
        .map_err(|e| FlowError::Refused(format!("role `{name}`: {e}")))?;
    let backend = backend_of(&env.delegate, &role);
    if backend == BackendKind::Command && role.meta.command.as_ref().is_none_or(|c| c.is_empty()) {
        return Err(FlowError::Refused(format!(
            "role `{name}` uses backend `command` but has no `command: [program, args…]` in its frontmatter"
        )));
    }
    Ok((role, backend))
}

fn freeze(
    flow_dir: &Path,
    index: usize,
    (spec, backend): (RoleSpec, BackendKind),
) -> Result<FrozenRole, FlowError> {
    let file =
        write_frozen_role(&flow_dir.join("roles"), index, &spec).map_err(|e| FlowError::Role {
            path: flow_dir.join("roles"),
            source: e,
        })?;
    Ok(FrozenRole {
        spec,
        backend,
        file,
    })
}

/// Takes the lock and opens the log of `id` (or of the repository's only non-terminal Flow).
fn take_over<'a>(
    env: &'a FlowEnv,
    id: Option<&str>,
    cancel: &'a CancellationToken,
) -> Result<(Run<'a>, FlowState), FlowError> {
    let git = |d: &Path| env.git(d);
    let repo = open_repo(&git, &env.delegate.cwd)?;
    let mut lock = RepoLock::acquire(&repo.common)?;
    let id = match id {
        Some(id) => id.to_string(),
        None => {
            let mut active: Vec<String> = readable_flows(&repo.store)
                .into_iter()
                .filter(|(_, state)| !state.phase(false).is_terminal())
                .map(|(id, _)| id)
                .collect();
            match active.pop() {
                Some(id) => id,
                None => {
                    return Err(FlowError::WrongPhase(format!(
                        "no paused or interrupted Flow in {}; `baton flow status` lists the Flows",
                        repo.toplevel.display()
                    )))
                }
            }
        }
    };
    let state = repo.store.load(&id)?;
    lock.note(&id);
    stop_stale_implementers(&state);
    let log = repo.store.open(&id, env.crash.clone())?;
    let main = env.git(&state.repo_root);
    let run = Run {
        env,
        store: repo.store,
        log: Mutex::new(log),
        state: Mutex::new(state.clone()),
        main,
        cancel,
        _lock: lock,
        main_left_at: Mutex::new(None),
    };
    Ok((run, state))
}

// ------------------------------------------------------------------------------------------------
// The driver

impl Run<'_> {
    /// Writes an event (durably), applies it, tells the observer, and honours the crash hook.
    fn emit(&self, ev: FlowEvent) -> Result<(), FlowError> {
        let written = lock_or(&self.log).write(&ev)?;
        lock_or(&self.state).apply(&ev, written.record.seq, &written.record.at);
        if let Some(obs) = &self.env.observer {
            obs(Notice::Event(&written.record));
        }
        if written.crash {
            return Err(FlowError::SimulatedCrash(ev.kind().to_string()));
        }
        Ok(())
    }

    fn state(&self) -> FlowState {
        lock_or(&self.state).clone()
    }

    fn unit(&self, i: usize) -> UnitState {
        lock_or(&self.state).units[i].clone()
    }

    fn status(&self) -> FlowStatus {
        let state = self.state();
        FlowStatus {
            phase: state.phase(true),
            state,
        }
    }

    fn snapshot(&self) {
        let state = self.state();
        if let Err(e) = self.store.write_snapshot(&state) {
            tracing::warn!("cannot write the Flow snapshot: {e}");
        }
    }

    fn fail(
        &self,
        kind: FailureKind,
        unit: Option<&str>,
        message: String,
    ) -> Result<Step, FlowError> {
        self.emit(FlowEvent::Failed {
            kind,
            unit: unit.map(str::to_string),
            message,
        })?;
        Ok(Step::Ended)
    }

    fn halt(&self, reason: String) -> Result<Step, FlowError> {
        self.emit(FlowEvent::Halted { reason })?;
        Ok(Step::Halted)
    }

    async fn drive(&self) -> Result<(), FlowError> {
        let result = self.drive_inner().await;
        // The snapshot mirrors whatever the log says now, also after a simulated crash.
        self.snapshot();
        result
    }

    async fn drive_inner(&self) -> Result<(), FlowError> {
        let state = self.state();
        if state.end.is_some() {
            return Ok(());
        }
        if state.setup_aborting.is_some() {
            self.finish_setup_abort()?;
            return Ok(());
        }
        // A second block whose terminal event was not written before the process died.
        if let Some(u) = state.units.iter().find(|u| {
            u.status == UnitStatus::Blocked && u.block.as_ref().is_some_and(|b| b.attempt >= 1)
        }) {
            let message = second_block_message(u);
            self.fail(FailureKind::BlockedAgain, Some(u.id()), message)?;
            return Ok(());
        }

        if state
            .units
            .iter()
            .any(|u| matches!(u.status, UnitStatus::Pending | UnitStatus::Creating))
        {
            match self.setup()? {
                Step::Done => {}
                Step::Paused | Step::Ended | Step::Halted => return Ok(()),
            }
        }

        let pending: Vec<usize> = self
            .state()
            .units
            .iter()
            .enumerate()
            .filter(|(_, u)| {
                u.implementer.is_none()
                    && matches!(u.status, UnitStatus::Ready | UnitStatus::Implementing)
            })
            .map(|(i, _)| i)
            .collect();
        if !pending.is_empty() {
            futures::future::try_join_all(pending.iter().map(|i| self.run_implementer(*i))).await?;
        }
        if self.cancel.is_cancelled() {
            self.halt("cancelled while implementers ran".into())?;
            return Ok(());
        }
        if !self.state().settled {
            self.emit(FlowEvent::ImplementersSettled)?;
            self.snapshot();
        }

        let n = self.state().units.len();
        for i in 0..n {
            if self.unit(i).status.is_done() {
                continue;
            }
            if self.cancel.is_cancelled() {
                self.halt("cancelled".into())?;
                return Ok(());
            }
            match self.integrate(i).await? {
                Step::Done => self.snapshot(),
                Step::Paused | Step::Ended | Step::Halted => return Ok(()),
            }
        }
        let warnings = self.state().warnings();
        self.emit(FlowEvent::Completed { warnings })?;
        Ok(())
    }

    /// Creates every missing unit worktree; on failure removes what this Flow created.
    fn setup(&self) -> Result<Step, FlowError> {
        let state = self.state();
        let st = match checkout_status(&self.main) {
            Ok(st) => st,
            Err(e) => return self.fail(FailureKind::Setup, None, format!("cannot read Main: {e}")),
        };
        if st.branch.as_deref() != Some(state.main_branch.as_str())
            || st.head.as_deref() != Some(state.start_oid.as_str())
        {
            return self.halt(format!(
                "Main is not where the Flow started (expected {} at {}, found {} at {}): restore it, then run `baton flow resume`",
                state.main_branch,
                short(&state.start_oid),
                st.branch.as_deref().unwrap_or("a detached HEAD"),
                st.head.as_deref().map(short).unwrap_or("nothing"),
            ));
        }
        let common = match self.main.git_common_dir() {
            Ok(c) => c,
            Err(e) => {
                return self.fail(
                    FailureKind::Setup,
                    None,
                    format!("cannot read the repository: {e}"),
                )
            }
        };
        // Announce every worktree (recovering the remains of an interrupted setup), create them,
        // then record them in declared order.
        let mut to_create: Vec<(String, String)> = Vec::new();
        for u in &state.units {
            if !matches!(u.status, UnitStatus::Pending | UnitStatus::Creating) {
                continue;
            }
            let wt_id = unit_worktree_id(&state.id, u.id());
            match self.prepare_unit_worktree(&state, u, &wt_id, &common)? {
                Prepared::Adopted => {}
                Prepared::Create => to_create.push((u.id().to_string(), wt_id)),
                Prepared::Failed(message) => return self.setup_failed(u.id(), message),
            }
        }
        // One at a time: concurrent `git worktree add`s trip over each other's half-made entries.
        // The first goes through `create_child_worktree`, which checks the repository and the
        // worktree root; the others only need the same `git worktree add` in the same folder.
        let mut created: Vec<Result<ChildWorktree, String>> = Vec::with_capacity(to_create.len());
        let mut group: Option<PathBuf> = None;
        for (_, wt_id) in &to_create {
            let result = match &group {
                None => {
                    match create_child_worktree(&state.repo_root, &state.worktree_root, wt_id) {
                        Ok(Isolated::Worktree(wt)) => {
                            group = wt.path.parent().map(Path::to_path_buf);
                            Ok(wt)
                        }
                        Ok(Isolated::Fallback { reason, .. }) => {
                            Err(format!("no worktree possible: {reason}"))
                        }
                        Err(e) => Err(e.to_string()),
                    }
                }
                Some(group) => self.add_worktree(&state, group, wt_id),
            };
            let stop = result.is_err();
            created.push(result);
            if stop {
                break;
            }
        }
        let mut failed: Option<(String, String)> = None;
        for ((unit, _), result) in to_create.iter().zip(created) {
            match result {
                Ok(wt) => self.emit(FlowEvent::WorktreeCreated {
                    unit: unit.clone(),
                    path: wt.path,
                    branch: wt.branch,
                    base: wt.base_oid,
                })?,
                Err(message) => {
                    failed.get_or_insert((unit.clone(), message));
                }
            }
        }
        if let Some((unit, message)) = failed {
            return self.setup_failed(&unit, message);
        }
        Ok(Step::Done)
    }

    /// `git worktree add -b baton/<id> <group>/<id> <start>`, the layout `create_child_worktree` uses.
    fn add_worktree(
        &self,
        state: &FlowState,
        group: &Path,
        wt_id: &str,
    ) -> Result<ChildWorktree, String> {
        let path = group.join(wt_id);
        let branch = format!("{BRANCH_PREFIX}{wt_id}");
        if path.symlink_metadata().is_ok() {
            return Err(format!(
                "worktree path {} already exists; remove the earlier worktree (`git worktree remove PATH`)",
                path.display()
            ));
        }
        self.main
            .worktree_add(&path, &branch, &state.start_oid)
            .map_err(|e| e.to_string())?;
        Ok(ChildWorktree {
            id: wt_id.to_string(),
            repo_root: state.repo_root.clone(),
            cwd: path.clone(),
            path,
            branch,
            base_oid: state.start_oid.clone(),
        })
    }

    /// Writes `unit.worktree_creating`, first clearing or adopting what an interrupted setup left.
    /// The error stops the run (a log failure or the crash hook).
    fn prepare_unit_worktree(
        &self,
        state: &FlowState,
        u: &UnitState,
        wt_id: &str,
        common: &Path,
    ) -> Result<Prepared, FlowError> {
        let branch = format!("{BRANCH_PREFIX}{wt_id}");
        let path = state
            .worktree_root
            .join(repo_folder_name(common))
            .join(wt_id);
        if u.status == UnitStatus::Creating {
            // The process died around `git worktree add`: adopt a complete worktree, clear a partial one.
            let listed = match self.main.worktree_list() {
                Ok(l) => l,
                Err(e) => return Ok(Prepared::Failed(e.to_string())),
            };
            let canonical = std::fs::canonicalize(&path).unwrap_or(path.clone());
            let adopted = listed.iter().any(|w| {
                (w.path == path || w.path == canonical)
                    && w.branch.as_deref() == Some(branch.as_str())
                    && w.head.as_deref() == Some(state.start_oid.as_str())
            });
            if adopted && self.env.git(&path).is_clean().unwrap_or(false) {
                self.emit(FlowEvent::WorktreeCreated {
                    unit: u.id().to_string(),
                    path,
                    branch,
                    base: state.start_oid.clone(),
                })?;
                return Ok(Prepared::Adopted);
            }
            if path.symlink_metadata().is_ok() {
                return Ok(Prepared::Failed(format!(
                    "{} exists but is not the unit's worktree on {branch}",
                    path.display()
                )));
            }
            let _ = self.main.worktree_prune();
            if self.main.branch_exists(&branch).unwrap_or(false) {
                if let Err(e) = self.main.branch_delete(&branch, false) {
                    return Ok(Prepared::Failed(e.to_string()));
                }
            }
        }
        self.emit(FlowEvent::WorktreeCreating {
            unit: u.id().to_string(),
            worktree_id: wt_id.to_string(),
        })?;
        Ok(Prepared::Create)
    }

    /// Records that the setup is being undone, then undoes it.
    fn setup_failed(&self, unit: &str, message: String) -> Result<Step, FlowError> {
        self.emit(FlowEvent::SetupAborting {
            unit: unit.to_string(),
            message,
        })?;
        self.finish_setup_abort()
    }

    /// Removes (best effort, non-forced) every worktree and branch the setup created, then ends
    /// the Flow. Also what a resume does with a log that ends in `flow.setup_aborting`.
    fn finish_setup_abort(&self) -> Result<Step, FlowError> {
        let state = self.state();
        let Some((unit, message)) = state.setup_aborting.clone() else {
            return self.fail(
                FailureKind::Infrastructure,
                None,
                "internal: no setup to undo".into(),
            );
        };
        let unit = unit.as_str();
        let mut removed = Vec::new();
        let mut kept = Vec::new();
        for u in &state.units {
            let (Some(path), Some(branch)) = (&u.path, &u.branch) else {
                continue;
            };
            // A resumed removal finds some of them gone already.
            let wt = if path.symlink_metadata().is_ok() {
                self.main.worktree_remove(path, false)
            } else {
                let _ = self.main.worktree_prune();
                Ok(())
            };
            let br = match self.main.branch_delete(branch, false) {
                Err(e) if e.stderr().is_some_and(|s| s.contains("not found")) => Ok(()),
                other => other,
            };
            match (wt, br) {
                (Ok(()), Ok(())) => removed.push(path.display().to_string()),
                (wt, br) => {
                    let why: Vec<String> = [wt.err(), br.err()]
                        .into_iter()
                        .flatten()
                        .map(|e| e.to_string())
                        .collect();
                    kept.push(format!("{} ({branch}): {}", path.display(), why.join("; ")))
                }
            }
        }
        if let Some(parent) = state.units.iter().find_map(|u| {
            u.path
                .as_ref()
                .and_then(|p| p.parent().map(Path::to_path_buf))
        }) {
            let _ = std::fs::remove_dir(parent);
        }
        let mut text = format!(
            "cannot create the worktree of unit {unit}: {message}. No implementer was launched"
        );
        if !removed.is_empty() {
            text.push_str(&format!(
                "; removed the {} worktree(s) already created",
                removed.len()
            ));
        }
        if !kept.is_empty() {
            text.push_str(&format!("; could not remove: {}", kept.join(", ")));
        }
        self.fail(FailureKind::Setup, Some(unit), text)
    }

    async fn run_implementer(&self, i: usize) -> Result<(), FlowError> {
        let state = self.state();
        let u = state.units[i].clone();
        let interrupted_before = u.implementer_launches > 0;
        self.emit(FlowEvent::ImplementerStarted {
            unit: u.id().to_string(),
            attempt: u.attempt,
            model_class: u.model_class,
        })?;
        let Some(path) = u.path.clone() else {
            let result = ChildSummary {
                ok: false,
                exit_code: None,
                error: Some("infrastructure: the unit has no worktree".into()),
                output: String::new(),
                stderr: String::new(),
                duration_ms: 0,
            };
            return self.emit(FlowEvent::ImplementerFinished {
                unit: u.id().to_string(),
                attempt: u.attempt,
                result,
            });
        };
        let task = implementer_task(&state, &u, &path, interrupted_before);
        let env = vec![
            ("BATON_TASK_NAME".to_string(), u.id().to_string()),
            ("BATON_FLOW_ID".to_string(), state.id.clone()),
            ("BATON_FLOW_UNIT".to_string(), u.id().to_string()),
            ("BATON_FLOW_ATTEMPT".to_string(), u.attempt.to_string()),
        ];
        let result = self
            .run_child(&state.implementer, &u, task, &path, env, Some(u.attempt))
            .await;
        let summary = match result {
            Ok(r) => summarize(&r),
            Err(e) if e.code == ExecErrorCode::Aborted => return Ok(()),
            Err(e) => summarize_error(&e),
        };
        self.emit(FlowEvent::ImplementerFinished {
            unit: u.id().to_string(),
            attempt: u.attempt,
            result: summary,
        })
    }

    async fn run_child(
        &self,
        role: &FrozenRole,
        u: &UnitState,
        task: String,
        cwd: &Path,
        extra_env: Vec<(String, String)>,
        implementer_attempt: Option<u32>,
    ) -> Result<ChildResult, ExecError> {
        let unit = u.id();
        let class = u.model_class;
        let d = &self.env.delegate;
        let budget = OutputBudget::new(d.output_cap);
        let backend = role.backend;
        let prepare = move || async move {
            let entry = TaskEntry {
                role: role.spec.meta.name.clone(),
                name: unit.to_string(),
                task: String::new(),
                model: None,
                model_class: class.map(|c| c.as_str().to_string()),
                thinking: None,
            };
            let route = child_route(d, backend, &entry, &role.spec)?;
            let role_file = match backend {
                BackendKind::Baton => Some(
                    ensure_role_file(role)
                        .map_err(|m| ExecError::new(ExecErrorCode::Prepare, m))?,
                ),
                BackendKind::Pi
                | BackendKind::Codex
                | BackendKind::Claude
                | BackendKind::Command => None,
            };
            let spec = task_spec(
                d,
                backend,
                &role.spec,
                task,
                cwd.to_path_buf(),
                route,
                role_file,
                extra_env,
            );
            launch_for(&spec)
        };
        let observer = self.env.observer.clone();
        let role_name = role.spec.meta.name.clone();
        let mut on_activity = move |a: Activity| {
            if let (Activity::Started { pid }, Some(attempt)) = (&a, implementer_attempt) {
                // Recorded so a driver that takes over after this one died can stop it.
                if let Err(e) = self.emit(FlowEvent::ImplementerSpawned {
                    unit: unit.to_string(),
                    attempt,
                    pid: *pid,
                }) {
                    tracing::warn!("cannot record the implementer's pid: {e}");
                }
            }
            if let Some(o) = &observer {
                o(Notice::Activity {
                    unit,
                    role: &role_name,
                    activity: &a,
                });
            }
        };
        self.env
            .executor
            .run(prepare, d.limits, &budget, self.cancel, &mut on_activity)
            .await
    }

    /// Steps 1–6 for one unit, in declared order.
    async fn integrate(&self, i: usize) -> Result<Step, FlowError> {
        let state = self.state();
        let u = state.units[i].clone();
        let id = u.id().to_string();
        let id = id.as_str();

        if u.status == UnitStatus::Blocked {
            // Only reachable through a log that paused; the caller checks phases first.
            return Ok(Step::Paused);
        }
        if u.status == UnitStatus::Merged {
            return self.clean_up(i, UnitOutcome::Integrated);
        }
        if u.status == UnitStatus::Cleaning {
            // Cleaned up after a merge, or after a no-op (which never merges).
            let outcome = if u.noop {
                UnitOutcome::NoOp
            } else {
                UnitOutcome::Integrated
            };
            return self.clean_up(i, outcome);
        }

        // 1. Main must be where the Flow left it.
        let just_merged = self
            .main_left_at
            .lock()
            .ok()
            .and_then(|mut m| m.take())
            .is_some_and(|oid| oid == state.main_oid);
        // When this process fast-forwarded Main to main_oid a moment ago (see `main_left_at`),
        // reading it again here adds nothing: the check right before the merge reads it anyway.
        if !(just_merged && u.status != UnitStatus::Merging) {
            let main_st = git_or_fail!(self, id, "cannot read Main", checkout_status(&self.main));
            if u.status == UnitStatus::Merging
                && main_st.branch.as_deref() == Some(state.main_branch.as_str())
            {
                if let Some(tip) = u.merging_tip.as_deref() {
                    if main_st.head.as_deref() == Some(tip) {
                        // The process died after git merged: record it, never merge twice. Changes
                        // someone made to the checkout since then are theirs; the next unit's check
                        // halts on them.
                        self.emit(FlowEvent::Merged {
                            unit: id.to_string(),
                            tip: tip.to_string(),
                            warning: None,
                            recovered: true,
                        })?;
                        return self.clean_up(i, UnitOutcome::Integrated);
                    }
                }
            }
            if let Some(problem) = main_problem(&state, &main_st) {
                return self.halt(problem);
            }
        }
        let expected = state.main_oid.clone();

        // The implementer's own verdict.
        match &u.implementer {
            Some(s) if s.ok => {}
            Some(s) => return self.block(&u, BlockReason::ImplementerFailed, child_evidence(s)),
            None => {
                return self.fail(
                    FailureKind::Infrastructure,
                    Some(id),
                    "the implementer's result is missing from the log".into(),
                )
            }
        }

        // 2. Derive base and tip from git.
        let (Some(path), Some(branch), Some(base0)) =
            (u.path.clone(), u.branch.clone(), u.base.clone())
        else {
            return self.fail(
                FailureKind::Infrastructure,
                Some(id),
                "the unit has no worktree in the log".into(),
            );
        };
        if !path.is_dir() {
            return self.fail(
                FailureKind::Infrastructure,
                Some(id),
                format!(
                    "the unit's worktree {} is gone; its branch {branch} (if it still exists) holds its commits",
                    path.display()
                ),
            );
        }
        let wt = self.env.git(&path);
        if git_or_fail!(
            self,
            id,
            "cannot read the unit worktree",
            rebase_in_progress(&wt, &path)
        ) {
            if u.rebase_onto.is_some() {
                // Our own rebase, cut short by a crash.
                git_or_fail!(
                    self,
                    id,
                    "cannot abort the interrupted rebase",
                    wt.run(["rebase", "--abort"])
                );
            } else {
                return self.block(
                    &u,
                    BlockReason::Diverged,
                    "a rebase is in progress in the worktree".into(),
                );
            }
        }
        let mut ws = git_or_fail!(
            self,
            id,
            "cannot read the unit worktree",
            checkout_status(&wt)
        );
        // What Flow's own validation left behind (build output) is not the implementer's doing.
        ws.changes.retain(|c| {
            c.strip_prefix("?? ")
                .is_none_or(|p| !u.validation_untracked.iter().any(|v| v == p))
        });
        if !ws.clean() {
            return self.block(&u, BlockReason::Uncommitted, ws.listing());
        }
        if ws.branch.as_deref() != Some(branch.as_str()) {
            return self.block(
                &u,
                BlockReason::Diverged,
                format!(
                    "the worktree's HEAD is on {} instead of the unit branch {branch}",
                    ws.branch.as_deref().unwrap_or("a detached HEAD")
                ),
            );
        }
        let tip0 = ws.head.clone().unwrap_or_default();
        // Whether the branch already sits on the current Main. Only possible when Main has not
        // moved since the unit's base, or when our own rebase onto it ran before a crash.
        let may_be_on_main =
            expected == base0 || u.rebase_onto.as_deref() == Some(expected.as_str());
        let on_main = tip0 != expected
            && may_be_on_main
            && git_or_fail!(
                self,
                id,
                "cannot compare commits",
                wt.is_ancestor(&expected, &tip0)
            );
        let (base, tip, noop) = if tip0 == expected {
            if u.rebase_onto.as_deref() == Some(expected.as_str()) {
                (expected.clone(), expected.clone(), true)
            } else {
                return self.block(
                    &u,
                    BlockReason::NoCommits,
                    format!(
                        "branch {branch} has no commits on top of {}",
                        short(&expected)
                    ),
                );
            }
        } else if on_main {
            (expected.clone(), tip0.clone(), false)
        } else {
            let descends = expected != base0
                && git_or_fail!(
                    self,
                    id,
                    "cannot compare commits",
                    wt.is_ancestor(&base0, &tip0)
                );
            if !descends {
                return self.block(
                    &u,
                    BlockReason::Diverged,
                    format!(
                        "branch {branch} no longer descends from the commit it started at ({})",
                        short(&base0)
                    ),
                );
            }
            if tip0 == base0 {
                return self.block(
                    &u,
                    BlockReason::NoCommits,
                    format!("branch {branch} has no commits on top of {}", short(&base0)),
                );
            }
            // Earlier units advanced Main: rebase the unit's commits onto it, in place.
            self.emit(FlowEvent::Rebasing {
                unit: id.to_string(),
                onto: expected.clone(),
                upstream: base0.clone(),
            })?;
            match wt.rebase_onto(&expected, &base0) {
                Ok(RebaseOutcome::Rebased { head }) => {
                    self.emit(FlowEvent::Rebased {
                        unit: id.to_string(),
                        base: expected.clone(),
                        head: head.clone(),
                    })?;
                    let noop = head == expected;
                    (expected.clone(), head, noop)
                }
                Ok(RebaseOutcome::Conflict {
                    diagnostics,
                    conflicted_paths,
                }) => {
                    let mut message = format!(
                        "rebasing {branch} onto {} ({}) conflicted and was aborted",
                        state.main_branch,
                        short(&expected)
                    );
                    if !conflicted_paths.is_empty() {
                        message.push_str(&format!(
                            "; conflicting paths: {}",
                            conflicted_paths.join(", ")
                        ));
                    }
                    message.push_str(&format!(
                        ". The unit overlaps an earlier one: combine or sequence them. Its worktree {} is kept.\n{}",
                        path.display(),
                        bounded(diagnostics.trim(), EVIDENCE_BOUND)
                    ));
                    return self.fail(FailureKind::RebaseConflict, Some(id), message);
                }
                Err(e) => {
                    if wt.rebase_in_progress().unwrap_or(false) {
                        let _ = wt.run(["rebase", "--abort"]);
                    }
                    return self.fail(
                        FailureKind::Infrastructure,
                        Some(id),
                        format!("rebasing {branch} onto {} failed: {e}", short(&expected)),
                    );
                }
            }
        };
        let commits = if noop {
            Vec::new()
        } else {
            git_or_fail!(
                self,
                id,
                "cannot list the unit's commits",
                wt.commits_between(&base, &tip)
            )
        };
        self.emit(FlowEvent::Derived {
            unit: id.to_string(),
            base: base.clone(),
            tip: tip.clone(),
            commits,
            noop,
        })?;

        // 3. Validation: the authority on objective checks.
        self.emit(FlowEvent::Validating {
            unit: id.to_string(),
            attempt: u.attempt,
        })?;
        let vars = vec![
            ("BATON_FLOW_ID".to_string(), state.id.clone()),
            ("BATON_FLOW_UNIT".to_string(), id.to_string()),
        ];
        match run_validation(
            &u.spec.validation,
            &path,
            &vars,
            self.env.delegate.limits.max_timeout,
            self.cancel,
        )
        .await
        {
            Validation::Passed(results) => self.emit(FlowEvent::Validated {
                unit: id.to_string(),
                results,
                untracked: untracked_paths(&wt),
            })?,
            Validation::Failed(results) => {
                let evidence = validation_evidence(&results);
                return self.block_with(
                    &u,
                    BlockReason::ValidationFailed,
                    evidence,
                    untracked_paths(&wt),
                );
            }
            Validation::Cancelled => return self.halt("cancelled during validation".into()),
        }

        // 4. Review, only for a stated criterion and only of a real change.
        if let (Some(criterion), false) = (u.spec.review.as_deref(), noop) {
            let approved_already = u.approved.as_ref() == Some(&(base.clone(), tip.clone()));
            if !approved_already {
                match self
                    .review(&state, &u, criterion, &path, &base, &tip)
                    .await?
                {
                    Review::Pass => {}
                    Review::Step(step) => return Ok(step),
                }
            }
        }

        // 5. Fast-forward Main to the exact tip.
        if self.cancel.is_cancelled() {
            return self.halt("cancelled before merging".into());
        }
        if !noop {
            // Main again, right before touching it: validation and review took time.
            let main_st = git_or_fail!(self, id, "cannot read Main", checkout_status(&self.main));
            if let Some(problem) = main_problem(&state, &main_st) {
                return self.halt(problem);
            }
            self.emit(FlowEvent::Merging {
                unit: id.to_string(),
                tip: tip.clone(),
            })?;
            // No autostash: a change in Main's checkout must make git refuse, not be set aside.
            let merge = self
                .main
                .at(&state.repo_root)
                .with_config("merge.autoStash", "false");
            match merge.merge_ff_only(&tip) {
                Ok(()) => {
                    self.emit(FlowEvent::Merged {
                        unit: id.to_string(),
                        tip: tip.clone(),
                        warning: None,
                        recovered: false,
                    })?;
                    if let Ok(mut m) = self.main_left_at.lock() {
                        *m = Some(tip.clone());
                    }
                }
                Err(e) => {
                    let diagnostic = bounded(&e.to_string(), EVIDENCE_BOUND);
                    let after = checkout_status(&self.main);
                    let at_tip = matches!(&after, Ok(st) if st.clean()
                        && st.head.as_deref() == Some(tip.as_str())
                        && st.branch.as_deref() == Some(state.main_branch.as_str()));
                    if at_tip {
                        self.emit(FlowEvent::Merged {
                            unit: id.to_string(),
                            tip: tip.clone(),
                            warning: Some(format!(
                                "git reported a failure, but {} is clean at exactly {}: {diagnostic}",
                                state.main_branch,
                                short(&tip)
                            )),
                            recovered: false,
                        })?;
                    } else {
                        let now = match &after {
                            Ok(st) => format!(
                                "{} is at {}{}",
                                st.branch.as_deref().unwrap_or("a detached HEAD"),
                                st.head.as_deref().map(short).unwrap_or("nothing"),
                                if st.clean() {
                                    ""
                                } else {
                                    " with uncommitted changes"
                                }
                            ),
                            Err(e) => format!("Main cannot be read: {e}"),
                        };
                        return self.fail(
                            FailureKind::MergeFailed,
                            Some(id),
                            format!(
                                "`git merge --ff-only {tip}` failed and Main is not at that commit ({now}): {diagnostic}. \
                                 The worktree {} and branch {branch} are kept",
                                path.display()
                            ),
                        );
                    }
                }
            }
        }

        // 6. Clean up.
        self.clean_up(
            i,
            if noop {
                UnitOutcome::NoOp
            } else {
                UnitOutcome::Integrated
            },
        )
    }

    async fn review(
        &self,
        state: &FlowState,
        u: &UnitState,
        criterion: &str,
        path: &Path,
        base: &str,
        tip: &str,
    ) -> Result<Review, FlowError> {
        let id = u.id();
        let Some(reviewer) = state.reviewer.clone() else {
            return Ok(Review::Step(self.fail(
                FailureKind::Infrastructure,
                Some(id),
                "the unit asks for review but the Flow froze no reviewer".into(),
            )?));
        };
        let wt = self.env.git(path);
        let patch = match wt.diff(base, tip) {
            Ok(p) => p,
            Err(e) => {
                return Ok(Review::Step(self.fail(
                    FailureKind::Infrastructure,
                    Some(id),
                    format!("cannot write the review patch: {e}"),
                )?))
            }
        };
        let patch_path = self
            .store
            .flow_dir(&state.id)?
            .join("patches")
            .join(format!("{id}-{}.patch", u.attempt));
        let written = patch_path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&patch_path, &patch));
        if let Err(e) = written {
            return Ok(Review::Step(self.fail(
                FailureKind::Infrastructure,
                Some(id),
                format!("cannot write {}: {e}", patch_path.display()),
            )?));
        }
        self.emit(FlowEvent::Reviewing {
            unit: id.to_string(),
            base: base.to_string(),
            tip: tip.to_string(),
            patch_path: patch_path.clone(),
            model_class: u.model_class,
        })?;
        let task = reviewer_task(u, criterion, path, base, tip, &patch_path);
        let env = vec![
            ("BATON_TASK_NAME".to_string(), id.to_string()),
            ("BATON_FLOW_ID".to_string(), state.id.clone()),
            ("BATON_FLOW_UNIT".to_string(), id.to_string()),
            ("BATON_FLOW_ATTEMPT".to_string(), u.attempt.to_string()),
            ("BATON_FLOW_BASE".to_string(), base.to_string()),
            ("BATON_FLOW_TIP".to_string(), tip.to_string()),
            (
                "BATON_FLOW_PATCH".to_string(),
                patch_path.display().to_string(),
            ),
        ];
        let result = self.run_child(&reviewer, u, task, path, env, None).await;
        let r = match result {
            Ok(r) => r,
            Err(e) if e.code == ExecErrorCode::Aborted => {
                return Ok(Review::Step(self.halt("cancelled during review".into())?))
            }
            Err(e) => {
                return Ok(Review::Step(self.fail(
                    FailureKind::ReviewerFailed,
                    Some(id),
                    format!(
                        "the reviewer did not answer ({e}); the worktree {} is kept",
                        path.display()
                    ),
                )?))
            }
        };
        // A reviewer that exited non-zero but said something answered: anything but an exact
        // `PASS` is a finding. Only no answer at all (or a death by signal) is a failure.
        let answered = r.status == ChildStatus::Success
            || (r.exit_code.is_some() && !r.output.trim().is_empty());
        if !answered {
            return Ok(Review::Step(self.fail(
                FailureKind::ReviewerFailed,
                Some(id),
                format!(
                    "the reviewer failed; the worktree {} is kept. {}",
                    path.display(),
                    child_evidence(&summarize(&r))
                ),
            )?));
        }
        let approved = r.status == ChildStatus::Success && r.output.trim() == "PASS";
        let output = bounded(&r.output, EVIDENCE_BOUND);
        self.emit(FlowEvent::Reviewed {
            unit: id.to_string(),
            base: base.to_string(),
            tip: tip.to_string(),
            approved,
            output: output.clone(),
        })?;
        if approved {
            Ok(Review::Pass)
        } else {
            let exit = match (r.status, r.exit_code) {
                (ChildStatus::Success, _) | (ChildStatus::Failure, None) => String::new(),
                (ChildStatus::Failure, Some(c)) => format!(", exit code {c}"),
            };
            let evidence = if output.trim().is_empty() {
                format!("the reviewer answered with nothing (only `PASS` approves{exit})")
            } else {
                format!("the reviewer's findings (only `PASS` approves{exit}):\n{output}")
            };
            Ok(Review::Step(self.block(
                u,
                BlockReason::ReviewFindings,
                evidence,
            )?))
        }
    }

    /// Non-forced `git worktree remove` and `git branch -d`; a refusal is a warning.
    fn clean_up(&self, i: usize, outcome: UnitOutcome) -> Result<Step, FlowError> {
        let u = self.unit(i);
        self.emit(FlowEvent::Cleaning {
            unit: u.id().to_string(),
        })?;
        let mut warnings = Vec::new();
        if let Some(path) = &u.path {
            if path.symlink_metadata().is_ok() {
                if let Err(e) = self.main.worktree_remove(path, false) {
                    warnings.push(format!(
                        "worktree kept at {}: git refused to remove it ({}); inspect it, then `git worktree remove {}`",
                        path.display(),
                        first_line(&e.to_string()),
                        path.display()
                    ));
                }
                if let Some(parent) = path.parent() {
                    let _ = std::fs::remove_dir(parent);
                }
            } else {
                let _ = self.main.worktree_prune();
            }
        }
        if let Some(branch) = &u.branch {
            match self.main.branch_delete(branch, false) {
                Ok(()) => {}
                // Already gone (a resumed cleanup).
                Err(e) if e.stderr().is_some_and(|s| s.contains("not found")) => {}
                Err(e) => warnings.push(format!(
                    "branch {branch} kept: git refused to delete it ({})",
                    first_line(&e.to_string())
                )),
            }
        }
        self.emit(FlowEvent::Finished {
            unit: u.id().to_string(),
            outcome,
            warnings,
        })?;
        Ok(Step::Done)
    }

    fn block(
        &self,
        u: &UnitState,
        reason: BlockReason,
        evidence: String,
    ) -> Result<Step, FlowError> {
        self.block_with(u, reason, evidence, Vec::new())
    }

    fn block_with(
        &self,
        u: &UnitState,
        reason: BlockReason,
        evidence: String,
        untracked: Vec<String>,
    ) -> Result<Step, FlowError> {
        self.emit(FlowEvent::Blocked {
            unit: u.id().to_string(),
            attempt: u.attempt,
            reason,
            evidence: bounded(&evidence, EVIDENCE_BOUND),
            untracked,
        })?;
        if u.attempt >= 1 {
            let now = self.unit(self.state().unit_index(u.id()).unwrap_or(0));
            return self.fail(
                FailureKind::BlockedAgain,
                Some(u.id()),
                second_block_message(&now),
            );
        }
        Ok(Step::Paused)
    }
}

enum Review {
    Pass,
    Step(Step),
}

/// What the setup does about one unit's worktree.
enum Prepared {
    /// A complete worktree from an interrupted setup was taken over.
    Adopted,
    /// Announced; to be created.
    Create,
    /// Cannot be created: the setup fails.
    Failed(String),
}

fn second_block_message(u: &UnitState) -> String {
    let reason = u.block.as_ref().map_or("blocked", |b| b.reason.as_str());
    format!(
        "unit {} blocked again after its repair ({reason}); its worktree {} and branch {} are kept for a person to reslice",
        u.id(),
        u.path.as_ref().map_or("(none)".into(), |p| p.display().to_string()),
        u.branch.as_deref().unwrap_or("(none)")
    )
}

/// Whether a rebase is stopped in the worktree at `path`, read from its `.git` file without
/// starting git (falls back to asking git).
fn rebase_in_progress(wt: &Git, path: &Path) -> Result<bool, GitError> {
    let dot_git = path.join(".git");
    let git_dir = match std::fs::read_to_string(&dot_git) {
        Ok(text) => text
            .strip_prefix("gitdir: ")
            .map(|d| path.join(d.trim_end_matches(['\n', '\r']))),
        Err(_) if dot_git.is_dir() => Some(dot_git),
        Err(_) => None,
    };
    match git_dir {
        Some(d) if d.is_dir() => {
            Ok(d.join("rebase-merge").exists() || d.join("rebase-apply").exists())
        }
        Some(_) | None => wt.rebase_in_progress(),
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}

fn ensure_role_file(role: &FrozenRole) -> Result<PathBuf, String> {
    if role.file.is_file() {
        return Ok(role.file.clone());
    }
    // Rewrite it from the log's copy, through the writer that froze it: the file is
    // `<flow dir>/roles/<index>-<name>.md`.
    let flow_dir = role.file.parent().and_then(Path::parent);
    let index = role
        .file
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.split('-').next())
        .and_then(|n| n.parse::<usize>().ok());
    match (flow_dir, index) {
        (Some(dir), Some(index)) => {
            write_frozen_role(&dir.join("roles"), index, &role.spec).map_err(|e| e.message)
        }
        _ => Err(format!(
            "the frozen role file {} is missing",
            role.file.display()
        )),
    }
}

fn summarize(r: &ChildResult) -> ChildSummary {
    ChildSummary {
        ok: r.status == ChildStatus::Success,
        exit_code: r.exit_code,
        error: None,
        output: bounded(&r.output, EVIDENCE_BOUND),
        stderr: bounded(&r.stderr, EVIDENCE_BOUND / 2),
        duration_ms: r.duration_ms,
    }
}

fn summarize_error(e: &ExecError) -> ChildSummary {
    let (output, stderr, exit_code, duration_ms) = match &e.partial {
        Some(p) => (
            p.output.as_str(),
            p.stderr.as_str(),
            p.exit_code,
            p.duration_ms,
        ),
        None => ("", "", None, 0),
    };
    ChildSummary {
        ok: false,
        exit_code,
        error: Some(format!("{}: {}", e.code.as_str(), e.message)),
        output: bounded(output, EVIDENCE_BOUND),
        stderr: bounded(stderr, EVIDENCE_BOUND / 2),
        duration_ms,
    }
}

fn child_evidence(s: &ChildSummary) -> String {
    let mut text = match (&s.error, s.exit_code) {
        (Some(e), _) => format!("the child did not finish: {e}"),
        (None, Some(c)) => format!("the child exited with code {c}"),
        (None, None) => "the child failed".to_string(),
    };
    if !s.stderr.trim().is_empty() {
        text.push_str(&format!("\nstderr:\n{}", s.stderr.trim_end()));
    }
    if !s.output.trim().is_empty() {
        text.push_str(&format!("\noutput:\n{}", s.output.trim_end()));
    }
    text
}

fn validation_evidence(results: &[crate::event::CheckResult]) -> String {
    let Some(last) = results.last() else {
        return "validation failed".into();
    };
    let status = match (&last.error, last.exit_code) {
        (Some(e), _) => e.clone(),
        (None, Some(c)) => format!("exit code {c}"),
        (None, None) => "failed".into(),
    };
    let mut text = format!("`{}` failed: {status}", last.command);
    if !last.output.trim().is_empty() {
        text.push_str(&format!("\n{}", last.output.trim_end()));
    }
    text
}

fn implementer_task(
    state: &FlowState,
    u: &UnitState,
    path: &Path,
    interrupted_before: bool,
) -> String {
    let branch = u.branch.as_deref().unwrap_or("");
    let mut t = format!(
        "You are implementing one unit of a Flow: independent changes made in parallel, each in its own git worktree, \
         then validated{} and fast-forward merged into {} one at a time.\n\n\
         Unit `{}`: {}\n\n## Task\n\n{}\n\n## Validation\n\n\
         When you are done, Flow runs these commands in this worktree, directly (not through a shell). Every one must exit 0:\n",
        if u.spec.review.is_some() { ", reviewed" } else { "" },
        state.main_branch,
        u.spec.id,
        u.spec.name,
        u.spec.task.trim_end(),
    );
    for c in &u.spec.validation {
        t.push_str(&format!("- `{}`\n", c.display()));
    }
    if let Some(r) = &u.spec.review {
        t.push_str(&format!(
            "\n## Review criterion\n\nA reviewer will judge the committed change against: {}\n",
            r.trim_end()
        ));
    }
    t.push_str(&format!(
        "\n## Rules\n\n\
         - Work only in this worktree ({}) on branch `{branch}`. Do not switch branches, rebase, push, or touch other checkouts.\n\
         - Commit your finished work on this branch and leave nothing uncommitted: uncommitted changes block the unit, and so does a branch without commits.\n\
         - Flow reads your result from git, not from your words. End with a short report of what you changed.\n",
        path.display()
    ));
    if interrupted_before {
        t.push_str(&format!(
            "\nNote: an earlier run of this task was interrupted. The worktree may already hold part of its work \
             (see `git status` and `git log {}..HEAD`); continue from there.\n",
            u.base.as_deref().map(short).unwrap_or("HEAD")
        ));
    }
    if !u.validation_untracked.is_empty() {
        t.push_str(&format!(
            "\nNote: an earlier validation run left these untracked paths in the worktree: {}. \
             Flow ignores exactly these when it checks for uncommitted changes; leave them alone or delete them, \
             and do not commit them unless the task asks for them.\n",
            u.validation_untracked
                .iter()
                .map(|p| format!("`{p}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if u.attempt >= 1 {
        let (reason, evidence) = u.block.as_ref().map_or(("blocked", ""), |b| {
            (b.reason.as_str(), b.evidence.as_str())
        });
        t.push_str(&format!(
            "\n## Repair\n\nThe previous attempt was blocked: {reason}.\n\nEvidence:\n\n{}\n\nGuidance:\n\n{}\n\n\
             This is the unit's only repair: if it blocks again, the Flow stops. The worktree still holds the previous attempt's work.\n",
            evidence.trim_end(),
            u.guidance.as_deref().unwrap_or("").trim_end()
        ));
    }
    t
}

fn reviewer_task(
    u: &UnitState,
    criterion: &str,
    path: &Path,
    base: &str,
    tip: &str,
    patch: &Path,
) -> String {
    let packet = serde_json::json!({
        "base": base,
        "tip": tip,
        "patchPath": patch.display().to_string(),
    });
    let validation: Vec<String> = u
        .spec
        .validation
        .iter()
        .map(|c| format!("`{}`", c.display()))
        .collect();
    format!(
        "Review one Flow unit against one criterion. Its validation ({}) already passed and is the authority on \
         objective checks: judge only the criterion.\n\n\
         Unit `{}`: {}\n\n## Criterion\n\n{}\n\n## Review packet\n\n{packet}\n\n\
         The patch file is the exact change `base..tip` and is authoritative. You are in the unit's worktree ({}), \
         checked out at the tip; read other files only for context the patch refers to. Do not modify anything.\n\n\
         Answer with exactly `PASS` and nothing else when the change meets the criterion. Otherwise list the findings.",
        validation.join(", "),
        u.spec.id,
        u.spec.name,
        criterion.trim_end(),
        path.display()
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn porcelain_v2_entries_are_shortened() {
        assert_eq!(
            short_status("1 .M N... 100644 100644 100644 abc def src/a b.rs"),
            ".M src/a b.rs"
        );
        assert_eq!(short_status("? new file.txt"), "?? new file.txt");
        assert_eq!(
            short_status("2 R. N... 100644 100644 100644 abc def R100 new.rs\told.rs"),
            "R. new.rs\told.rs"
        );
    }

    #[test]
    fn flow_ids_sort_by_time_and_make_valid_worktree_ids() {
        let id = new_flow_id();
        assert_eq!(id.len(), 20, "{id}");
        assert!(FlowStore::new(baton_state::StateDir::at("/x"))
            .events_path(&id)
            .is_ok());
        baton_exec::worktree::validate_id(&unit_worktree_id(&id, &"u".repeat(40))).unwrap();
    }
}
