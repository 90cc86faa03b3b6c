//! The Flow driver: start, continue, resume, abandon and status.
//!
//! One [`Run`] drives a Flow while holding the repository's Flow lock. Every step first appends
//! its event (fsynced), then acts, then records what it learned. Because every decision is taken
//! from git (base, tip, whether Main already holds a tip) and from the log, a run started on a log
//! that ends anywhere — including in the middle of a step — carries on correctly: [`resume`] is
//! the same driver pointed at an interrupted log.

mod build_unit;
mod checkout;
mod clean;
mod entry;
mod evidence;
mod implement;
mod integrate;
pub mod review;
mod setup;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use baton_exec::delegate::{
    backend_of, child_route, plan_launch, write_frozen_role, DelegateEnv, LaunchPlan, RouteChoice,
};
use baton_exec::executor::{Executor, OutputBudget};
use baton_exec::types::{Activity, ChildResult, ChildStatus, ExecError, ExecErrorCode};
use baton_exec::worktree::{
    create_child_worktree, repo_folder_name, ChildWorktree, Isolated, BRANCH_PREFIX,
};
use baton_git::{CheckoutStatus, Git, GitError, RebaseOutcome};
use baton_protocol::role::{BackendKind, RoleSpec};
use baton_protocol::ModelClass;
use baton_roles::find_role;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::event::{
    BlockReason, ChildSummary, DriverCommand, FailureKind, FlowEvent, FrozenRole, Record,
    UnitOutcome, UnitWorkflow,
};
use crate::lock::{LockError, RepoLock};
use crate::state::{FlowState, Phase, UnitState, UnitStatus};
use crate::store::{now_rfc3339, CrashHook, FlowLog, FlowStore, StoreError};
use crate::units::{parse_units, InputError, UnitSpec};
use crate::validate::{bounded, run_validation, Validation, EVIDENCE_BOUND};

pub use build_unit::{build_args, build_task, commit_change};
pub use clean::{clean, clean_plan, CleanPlan};
pub use entry::{
    abandon, continue_flow, land, new_flow_id, repair, resume, start, start_as, status,
    unit_worktree_id,
};

/// The line in `info/exclude` that keeps Flow's own state out of `git status`.
pub const STATE_EXCLUDE: &str = "/.baton/state/";

pub use review::{REVIEW_MAX_PATCH_BYTES, REVIEW_MAX_PATHS};

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
    /// What validation commands do not get of baton's environment (provider keys), and their
    /// sandbox when `flow.validation_sandbox` asks for one.
    pub command_rules: crate::validate::CommandRules,
    /// Test hook; see [`CrashHook`].
    pub crash: Option<CrashHook>,
    pub observer: Option<Observer>,
}

impl FlowEnv {
    pub fn new(delegate: DelegateEnv, executor: Arc<Executor>) -> Self {
        FlowEnv {
            command_rules: crate::validate::CommandRules::for_config(
                &delegate.config,
                &delegate.cwd,
            ),
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
    /// git failed while the command worked (not a refusal: the request was fine).
    #[error(transparent)]
    Git(#[from] GitError),
    /// The crash test hook fired right after this event was written.
    #[error("simulated crash right after `{0}` was written (test hook)")]
    SimulatedCrash(String),
}

impl FlowError {
    /// True when nothing was done: bad input (including an unknown Flow id), a failed
    /// precondition, a held lock, a wrong phase.
    pub fn is_refusal(&self) -> bool {
        match self {
            FlowError::Input(_)
            | FlowError::Refused(_)
            | FlowError::Lock(LockError::Held { .. })
            | FlowError::WrongPhase(_)
            | FlowError::Store(StoreError::NotFound { .. } | StoreError::BadId(_)) => true,
            FlowError::Lock(LockError::Io(_))
            | FlowError::Store(StoreError::Log(_) | StoreError::NoStart { .. })
            | FlowError::Role { .. }
            | FlowError::Git(_)
            | FlowError::SimulatedCrash(_) => false,
        }
    }
}

/// A Flow as a reader sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowStatus {
    pub phase: Phase,
    /// Main's checkout as git shows it when the status was taken (`None` when it could not be
    /// read); the log's `main_oid` is where the Flow left it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub main_now: Option<MainNow>,
    #[serde(flatten)]
    pub state: FlowState,
}

/// Main's checkout as git shows it now, not as the Flow's log left it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MainNow {
    /// `None` when `HEAD` is detached.
    pub branch: Option<String>,
    /// `None` when the branch has no commit.
    pub head: Option<String>,
    /// For an interrupted or paused Flow: why it cannot go on from Main as it is (Main moved, is
    /// on another branch, has uncommitted changes) and what to do; `None` when it can.
    pub problem: Option<String>,
}

/// [`FlowStatus`] of `state`, with Main read from git in `main` (a failed read is logged and
/// leaves `main_now` out).
fn status_with_main(main: &Git, state: FlowState, phase: Phase) -> FlowStatus {
    let main_now = match checkout::main_status(main, &[]) {
        Ok(st) => Some(checkout::main_now(&state, phase, st)),
        Err(e) => {
            tracing::warn!("cannot read Main's checkout for the status: {e}");
            None
        }
    };
    FlowStatus {
        phase,
        main_now,
        state,
    }
}

fn lock_or<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn short(oid: &str) -> &str {
    oid.get(..12).unwrap_or(oid)
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
    /// The last integrated unit's cleanup, running beside the next unit's landing (see
    /// [`Run::clean_up`]); its `unit.finished` is written once it ends.
    cleaning: Mutex<Option<Cleanup>>,
}

/// A unit's worktree and branch being removed on a thread of their own.
struct Cleanup {
    unit: String,
    outcome: UnitOutcome,
    done: std::thread::JoinHandle<Vec<String>>,
}

// The driver

impl Run<'_> {
    /// Writes an event (durably), applies it, tells the observer, and honours the crash hook.
    fn emit(&self, ev: FlowEvent) -> Result<(), FlowError> {
        // A cleanup that ended is told before anything that follows it, and one still running is
        // waited for before the Flow stops or pauses: the record never stops with it untold.
        if !matches!(ev, FlowEvent::Finished { .. }) {
            let stops = matches!(
                ev,
                FlowEvent::Blocked { .. }
                    | FlowEvent::Halted { .. }
                    | FlowEvent::Completed { .. }
                    | FlowEvent::Failed { .. }
                    | FlowEvent::Abandoned { .. }
            );
            self.finish_cleanup(stops)?;
        }
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
        let phase = state.phase(true);
        status_with_main(&self.main, state, phase)
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
        let mut result = self.drive_inner().await;
        if result.is_ok() {
            result = self.finish_cleanup(true);
        } else {
            // Stopped short (a simulated crash): the cleanup is not told, as a dead process's
            // would not be, but it does not run on beside whoever takes over.
            self.forget_cleanup();
        }
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

fn second_block_message(u: &UnitState) -> String {
    let reason = u.block.as_ref().map_or("blocked", |b| b.reason.label());
    format!(
        "unit {} blocked again after its repair ({reason}); its worktree {} and branch {} are kept for a person to reslice",
        u.id(),
        u.path.as_ref().map_or("(none)".into(), |p| p.display().to_string()),
        u.branch.as_deref().unwrap_or("(none)")
    )
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use pretty_assertions::assert_eq;

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
