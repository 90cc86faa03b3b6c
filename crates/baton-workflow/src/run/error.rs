//! What goes wrong in a run, one variant per kind. A [`RunError`] is either returned by
//! `baton run` / `baton resume` (refused before anything ran: exit 2; else exit 1) or recorded as
//! the reason a workflow stopped on a failure (`run.failure`, the `workflow_failed` event's
//! `reason`), where `baton resume --answer` retries. The messages are the record's and the CLI's
//! exact words.

use std::path::PathBuf;

use crate::state::{RunState, StateError};
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    // --- Errors returned before or instead of a step.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The runner's own state does not decode (the store refuses such a record on load, so this
    /// is a record changed under the runner).
    #[error("the workflow state does not read: {0}")]
    State(#[from] StateError),
    /// A refusal with no kind of its own (a caller's: no workflow to resume, …): exit 2.
    #[error("{0}")]
    Refused(String),
    #[error("ORIENT answers inline and keeps no record: use `orient`")]
    OrientHasNoRecord,
    /// A role's model class below the floor of the gating roles, or a role that is missing.
    #[error("{0}")]
    Tier(String),
    #[error("ORIENT runs the `scout` role: {0}")]
    NoScout(String),
    /// `--plan FILE` that fails the plan trust gate (format, open decisions, missing sections).
    #[error(transparent)]
    Plan(#[from] crate::plan_file::PlanError),
    /// `--plan FILE` whose content changed since it was approved, or whose approvals do not read.
    #[error("{0}")]
    PlanNotTrusted(String),
    #[error("workflow {id} is {}: there is nothing to resume", state.as_str())]
    NothingToResume { id: String, state: RunState },
    #[error("workflow {id} stopped on a failure: give `--answer` with guidance for a retry, or `--answer abort`")]
    AnswerNeeded { id: String },
    #[error("workflow {id} waits on no question: resume it without --answer")]
    NoQuestion { id: String },
    /// An answer the checkpoint does not take.
    #[error("{0}")]
    BadAnswer(String),
    /// The finishing choice could not be carried out (git's message and the fix).
    #[error("{0}")]
    FinishChoice(String),
    #[error("memory: {0}")]
    Memory(String),
    #[error("the workflow artifact does not read: {0}")]
    Artifact(String),
    #[error("task {id} is not in the workflow")]
    UnknownTask { id: String },
    #[error("task {id} (phase {phase:?}) has no role to run it")]
    NoRoleForTask { id: String, phase: Option<String> },
    #[error("cannot create {}: {message}", path.display())]
    Io { path: PathBuf, message: String },
    /// ORIENT's one agent failed.
    #[error("{0}")]
    Orient(String),

    // --- Failures that stop a workflow (recorded; `baton resume --answer` retries).
    /// The dispatch failed before the agent could answer (spawn error, timeout, model failure).
    #[error("{task} ({role}): {message}")]
    Agent {
        task: String,
        role: String,
        message: String,
    },
    #[error("{task}: no contract for role `{role}`")]
    NoContractRole { task: String, role: String },
    /// The agent's answer holds no contract that validates. Said to the user: which agent, what
    /// was wrong, where its answer is, and what they can do (the CLI adds `baton resume`).
    #[error("the {role} agent of task {task} ended without the contract baton needs to go on ({message}); nothing after it ran. Its answer is in `baton log` (the task's dispatch). You can run it again with guidance, give the role a stronger model class (`[workflow.tiers]` `{role} = \"frontier\"`), or override the role with `.baton/roles/{role}.md`")]
    MalformedContract {
        task: String,
        role: String,
        message: String,
    },
    /// A pass its own contract does not support.
    #[error("{task} ({role}) claimed a pass its own contract does not support: {}", unmet.join("; "))]
    RefusedPass {
        task: String,
        role: String,
        unmet: Vec<String>,
    },
    #[error("{task} ({role}) passed without enough evidence to believe it: {reason}")]
    UnprovenPass {
        task: String,
        role: String,
        reason: String,
    },
    #[error("{task} ({role}) changed tracked files of the project; a read-only role may build and run tests but not edit (`git diff` shows the change)")]
    ReadOnlyEdited { task: String, role: String },
    #[error("{task} ({role}) reported a pass but changed no file in the working tree")]
    NothingChanged { task: String, role: String },
    /// A verifier scenario that failed when baton ran it again (`how`: `exits 1`, …).
    #[error("{task} ({role}) reported PASS, but its scenario `{command}` {how} when baton ran it")]
    HostCheckFailed {
        task: String,
        role: String,
        command: String,
        how: String,
    },
    /// A verifier that left a disputed finding unruled, or passed over one it rejected.
    #[error("{task} (integration-verifier) {message}")]
    Dispute { task: String, message: String },
    /// A TRIAGE or CODEBASE-HEALTH report that could not be saved.
    #[error("{0}")]
    ReportWrite(String),
    #[error("task {task} would be invalid: {}", errors.join("; "))]
    InvalidTask { task: String, errors: Vec<String> },
    #[error("the engine asked to {action} but no task of that step is runnable")]
    NothingRunnable { action: String },
    /// The engine stopped without a gate: its reason.
    #[error("{0}")]
    EngineStop(String),
    #[error("role `{role}`: {message}")]
    Role { role: String, message: String },
    #[error("cannot commit the work on {branch}: {message}")]
    Commit { branch: String, message: String },
    #[error("memory could not be written: {0}")]
    MemoryWrite(String),
    #[error(
        "cannot create the workflow's worktree: {0} (resume with --answer to run in place instead)"
    )]
    Worktree(String),
    /// Another workflow holds the working tree.
    #[error("{0}")]
    TreeBusy(String),
}

impl RunError {
    /// Refused before anything ran (bad config, bad answer, no such workflow): `baton` exits 2.
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            RunError::Refused(_)
                | RunError::OrientHasNoRecord
                | RunError::Tier(_)
                | RunError::NoScout(_)
                | RunError::Plan(_)
                | RunError::PlanNotTrusted(_)
                | RunError::NothingToResume { .. }
                | RunError::AnswerNeeded { .. }
                | RunError::NoQuestion { .. }
                | RunError::BadAnswer(_)
                | RunError::FinishChoice(_)
                | RunError::Store(
                    StoreError::NotFound { .. }
                        | StoreError::Busy { .. }
                        | StoreError::TreeBusy { .. }
                )
        )
    }
}
