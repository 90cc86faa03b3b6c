//! The events of a Flow: one JSON object per line of `.baton/state/flows/<id>.events.jsonl`.
//!
//! Every line is `{"seq": N, "at": "<RFC 3339>", "type": "<event>", …fields}`. An event is written
//! and fsynced *before* the step it announces acts (`unit.merging` before `git merge`, `unit.cleaning`
//! before `git worktree remove`, …) and facts learned from a step are recorded right after it
//! (`unit.merged`, `unit.finished`). A reader therefore always knows the last step that may have
//! started, and a resumed Flow re-checks that step against git instead of trusting memory.

use std::path::PathBuf;

use baton_protocol::role::{BackendKind, RoleSpec};
use baton_protocol::ModelClass;
use serde::{Deserialize, Serialize};

use crate::units::UnitSpec;

/// A role resolved and frozen when the Flow started; it serves the whole Flow, repairs included.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrozenRole {
    pub spec: RoleSpec,
    pub backend: BackendKind,
    /// The frozen role as a Markdown file (passed to `baton agent --role-file`).
    pub file: PathBuf,
}

/// Where a Flow on Temporal lands its units.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OnTemporal {
    /// The shared remote (`engine.remote`).
    pub remote: String,
    /// `refs/heads/<branch>` on it.
    pub target: String,
}

/// How one child (implementer or reviewer) ended, bounded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChildSummary {
    /// The child ran to its end and reported success.
    pub ok: bool,
    pub exit_code: Option<i32>,
    /// `code: message` when the executor could not bring the child to a normal end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub output: String,
    pub stderr: String,
    pub duration_ms: u64,
}

pub use baton_exec::guarded::CheckResult;

/// Why a unit is blocked. A block pauses the Flow; a repair may follow (once).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockReason {
    /// The implementer failed, timed out or could not be started.
    ImplementerFailed,
    /// The implementer left no commits on the unit branch.
    NoCommits,
    /// The implementer left uncommitted changes in the worktree.
    Uncommitted,
    /// The worktree's `HEAD` is no longer the unit branch, or the branch no longer descends from its base.
    Diverged,
    /// A validation command failed.
    ValidationFailed,
    /// The reviewer answered with anything but `PASS`.
    ReviewFindings,
    /// The change is too large for one review packet (more than
    /// [`crate::engine::REVIEW_MAX_PATCH_BYTES`] or [`crate::engine::REVIEW_MAX_PATHS`]).
    ReviewPacketTooLarge,
}

impl BlockReason {
    pub fn label(self) -> &'static str {
        match self {
            BlockReason::ImplementerFailed => "implementer failed",
            BlockReason::NoCommits => "no commits",
            BlockReason::Uncommitted => "uncommitted changes",
            BlockReason::Diverged => "branch diverged",
            BlockReason::ValidationFailed => "validation failed",
            BlockReason::ReviewFindings => "review findings",
            BlockReason::ReviewPacketTooLarge => "review packet too large",
        }
    }
}

/// Why a Flow ended without completing. Terminal: worktrees that were not integrated are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// A unit worktree could not be created; nothing was launched and what was created is removed.
    Setup,
    /// Rebasing a unit onto the advanced Main conflicted; the rebase was aborted.
    RebaseConflict,
    /// `git merge --ff-only` failed and Main is not clean at the unit's tip.
    MergeFailed,
    /// The reviewer could not run to an answer.
    ReviewerFailed,
    /// A unit blocked again after its one repair.
    BlockedAgain,
    /// Any other failure of git, the file system or the executor.
    Infrastructure,
    /// A unit of a Flow on Temporal blocked (failed, invalid, rejected): a Flow on Temporal
    /// does not pause; `baton flow continue --engine temporal` goes on as a new Flow.
    UnitBlocked,
}

impl FailureKind {
    pub fn label(self) -> &'static str {
        match self {
            FailureKind::Setup => "setup failed",
            FailureKind::RebaseConflict => "rebase conflict",
            FailureKind::MergeFailed => "fast-forward merge failed",
            FailureKind::ReviewerFailed => "reviewer failed",
            FailureKind::BlockedAgain => "blocked after its repair",
            FailureKind::Infrastructure => "infrastructure failure",
            FailureKind::UnitBlocked => "a unit blocked",
        }
    }
}

/// How a unit left the Flow successfully.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnitOutcome {
    /// Fast-forwarded into Main.
    Integrated,
    /// The rebase dropped every commit (`base == tip`): validated, nothing to merge.
    NoOp,
}

/// One unit's remains as `baton flow clean` found and left them: its worktree and branch while
/// git still has them, what in them is not in Main, and why they are kept (`None`: removed, or
/// to be removed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CleanItem {
    pub unit: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// Commits of the branch (or of the worktree's `HEAD`) that Main's head does not reach.
    #[serde(default)]
    pub unmerged: usize,
    /// The worktree's uncommitted changes (`XY path`), the unit's own validation output left out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uncommitted: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<String>,
}

baton_protocol::closed_set! {
    /// What implements each unit of a Flow when it is not one implementer child (`--workflow`).
    pub enum UnitWorkflow ("unit workflow") {
        /// A BUILD workflow (builder → reviewer ‖ hunter → verifier, with remediation) run by
        /// `baton run --workflow build --no-worktree` in the unit's worktree.
        Build = "build",
    }
}

/// Which command is driving the Flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DriverCommand {
    Start,
    Continue,
    Resume,
    Land,
}

/// One step of a Flow.
// `flow.created` carries the whole request and the frozen roles; it is written once per Flow, so
// boxing it would only complicate every match.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum FlowEvent {
    /// Input and preconditions passed; roles are frozen. Nothing has touched git yet.
    #[serde(rename = "flow.created")]
    Created {
        id: String,
        created: String,
        repo_root: PathBuf,
        main_branch: String,
        main_oid: String,
        worktree_root: PathBuf,
        units: Vec<UnitSpec>,
        /// The frozen implementer; absent in the record of a Flow on Temporal, whose nodes
        /// resolve their roles from the remote's commit.
        implementer: Option<FrozenRole>,
        reviewer: Option<FrozenRole>,
        /// `--workflow build`: each unit is a whole gated BUILD workflow instead of one
        /// implementer (absent in Flows before it existed: one implementer each).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        workflow: Option<UnitWorkflow>,
        /// A Flow that runs on Temporal (`baton flow start --engine temporal`): this log is
        /// what its starter saw of it; the local engine never drives it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        temporal: Option<OnTemporal>,
    },
    /// A process took over driving the Flow (it holds the repository's Flow lock).
    #[serde(rename = "flow.driver")]
    Driver { pid: u32, command: DriverCommand },
    /// About to create the unit's worktree `id` (branch `baton/<id>`).
    #[serde(rename = "unit.worktree_creating")]
    WorktreeCreating { unit: String, worktree_id: String },
    #[serde(rename = "unit.worktree_created")]
    WorktreeCreated {
        unit: String,
        path: PathBuf,
        branch: String,
        base: String,
    },
    /// About to launch the implementer (`attempt` 0 first, 1 for the repair).
    #[serde(rename = "unit.implementer_started")]
    ImplementerStarted {
        unit: String,
        attempt: u32,
        model_class: Option<ModelClass>,
    },
    /// The implementer's process is running: `pid`, which is also its process group.
    #[serde(rename = "unit.implementer_spawned")]
    ImplementerSpawned {
        unit: String,
        attempt: u32,
        pid: u32,
    },
    #[serde(rename = "unit.implementer_finished")]
    ImplementerFinished {
        unit: String,
        attempt: u32,
        result: ChildSummary,
    },
    /// Every implementer has settled; integration in declared order begins.
    #[serde(rename = "flow.implementers_settled")]
    ImplementersSettled,
    /// About to rebase the unit's commits after `upstream` onto `onto` (the advanced Main).
    #[serde(rename = "unit.rebasing")]
    Rebasing {
        unit: String,
        onto: String,
        upstream: String,
    },
    #[serde(rename = "unit.rebased")]
    Rebased {
        unit: String,
        base: String,
        head: String,
    },
    /// Base and tip as git shows them; `noop` when a rebase dropped every commit.
    #[serde(rename = "unit.derived")]
    Derived {
        unit: String,
        base: String,
        tip: String,
        commits: Vec<String>,
        noop: bool,
    },
    #[serde(rename = "unit.validating")]
    Validating { unit: String, attempt: u32 },
    #[serde(rename = "unit.validated")]
    Validated {
        unit: String,
        results: Vec<CheckResult>,
        /// Untracked paths in the worktree right after the validation (its build output, say);
        /// later derivations of the unit ignore exactly these.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        untracked: Vec<String>,
    },
    /// About to launch the reviewer on the exact packet.
    #[serde(rename = "unit.reviewing")]
    Reviewing {
        unit: String,
        base: String,
        tip: String,
        patch_path: PathBuf,
        model_class: Option<ModelClass>,
    },
    #[serde(rename = "unit.reviewed")]
    Reviewed {
        unit: String,
        base: String,
        tip: String,
        approved: bool,
        output: String,
    },
    #[serde(rename = "unit.blocked")]
    Blocked {
        unit: String,
        attempt: u32,
        reason: BlockReason,
        evidence: String,
        /// As in `unit.validated`, when a failed validation blocked the unit.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        untracked: Vec<String>,
    },
    /// `baton flow continue`: the one repair of the blocked unit begins.
    #[serde(rename = "unit.repair_started")]
    RepairStarted {
        unit: String,
        attempt: u32,
        guidance: String,
        model_class: Option<ModelClass>,
    },
    /// About to run `git merge --ff-only <tip>` on Main.
    #[serde(rename = "unit.merging")]
    Merging { unit: String, tip: String },
    #[serde(rename = "unit.merged")]
    Merged {
        unit: String,
        tip: String,
        /// git reported a failure but Main is clean at exactly `tip`.
        warning: Option<String>,
        /// Found already merged by a resumed Flow (the process died after merging).
        #[serde(default)]
        recovered: bool,
    },
    /// About to remove the unit's worktree and branch (non-forced).
    #[serde(rename = "unit.cleaning")]
    Cleaning { unit: String },
    #[serde(rename = "unit.finished")]
    Finished {
        unit: String,
        outcome: UnitOutcome,
        warnings: Vec<String>,
    },
    /// A unit worktree could not be created: the setup is being undone. Written before the
    /// worktrees already created are removed; `flow.failed` follows. A resume of a log that ends
    /// here only finishes the removal.
    #[serde(rename = "flow.setup_aborting")]
    SetupAborting { unit: String, message: String },
    /// `baton flow land`: a unit a failed Flow kept is integrated on its own, onto Main as it is
    /// now (`main`: where the Flow left it, or a commit the user added on top).
    #[serde(rename = "unit.landing")]
    Landing { unit: String, main: String },
    /// The driving process stopped before the end; `baton flow resume` continues.
    #[serde(rename = "flow.halted")]
    Halted { reason: String },
    #[serde(rename = "flow.completed")]
    Completed { warnings: Vec<String> },
    #[serde(rename = "flow.failed")]
    Failed {
        kind: FailureKind,
        unit: Option<String>,
        message: String,
    },
    /// Given up by a person (`baton flow abandon`); worktrees are kept.
    #[serde(rename = "flow.abandoned")]
    Abandoned { reason: Option<String> },
    /// `baton flow clean` of an ended Flow: about to remove the worktrees and branches of the
    /// items without `kept` (`force`: also unmerged branches and uncommitted changes).
    #[serde(rename = "flow.cleaning")]
    FlowCleaning { force: bool, items: Vec<CleanItem> },
    /// What the clean removed (items without `kept`) and what it kept, and why.
    #[serde(rename = "flow.cleaned")]
    FlowCleaned { items: Vec<CleanItem> },
}

impl FlowEvent {
    /// The event's `type` string.
    pub fn kind(&self) -> &'static str {
        match self {
            FlowEvent::Created { .. } => "flow.created",
            FlowEvent::Driver { .. } => "flow.driver",
            FlowEvent::WorktreeCreating { .. } => "unit.worktree_creating",
            FlowEvent::WorktreeCreated { .. } => "unit.worktree_created",
            FlowEvent::ImplementerStarted { .. } => "unit.implementer_started",
            FlowEvent::ImplementerSpawned { .. } => "unit.implementer_spawned",
            FlowEvent::ImplementerFinished { .. } => "unit.implementer_finished",
            FlowEvent::ImplementersSettled => "flow.implementers_settled",
            FlowEvent::Rebasing { .. } => "unit.rebasing",
            FlowEvent::Rebased { .. } => "unit.rebased",
            FlowEvent::Derived { .. } => "unit.derived",
            FlowEvent::Validating { .. } => "unit.validating",
            FlowEvent::Validated { .. } => "unit.validated",
            FlowEvent::Reviewing { .. } => "unit.reviewing",
            FlowEvent::Reviewed { .. } => "unit.reviewed",
            FlowEvent::Blocked { .. } => "unit.blocked",
            FlowEvent::RepairStarted { .. } => "unit.repair_started",
            FlowEvent::Merging { .. } => "unit.merging",
            FlowEvent::Merged { .. } => "unit.merged",
            FlowEvent::Cleaning { .. } => "unit.cleaning",
            FlowEvent::Finished { .. } => "unit.finished",
            FlowEvent::Landing { .. } => "unit.landing",
            FlowEvent::SetupAborting { .. } => "flow.setup_aborting",
            FlowEvent::Halted { .. } => "flow.halted",
            FlowEvent::Completed { .. } => "flow.completed",
            FlowEvent::Failed { .. } => "flow.failed",
            FlowEvent::Abandoned { .. } => "flow.abandoned",
            FlowEvent::FlowCleaning { .. } => "flow.cleaning",
            FlowEvent::FlowCleaned { .. } => "flow.cleaned",
        }
    }

    /// The unit the event is about, if any.
    pub fn unit(&self) -> Option<&str> {
        match self {
            FlowEvent::Landing { unit, .. }
            | FlowEvent::WorktreeCreating { unit, .. }
            | FlowEvent::WorktreeCreated { unit, .. }
            | FlowEvent::ImplementerStarted { unit, .. }
            | FlowEvent::ImplementerSpawned { unit, .. }
            | FlowEvent::ImplementerFinished { unit, .. }
            | FlowEvent::Rebasing { unit, .. }
            | FlowEvent::Rebased { unit, .. }
            | FlowEvent::Derived { unit, .. }
            | FlowEvent::Validating { unit, .. }
            | FlowEvent::Validated { unit, .. }
            | FlowEvent::Reviewing { unit, .. }
            | FlowEvent::Reviewed { unit, .. }
            | FlowEvent::Blocked { unit, .. }
            | FlowEvent::RepairStarted { unit, .. }
            | FlowEvent::Merging { unit, .. }
            | FlowEvent::Merged { unit, .. }
            | FlowEvent::Cleaning { unit }
            | FlowEvent::Finished { unit, .. } => Some(unit),
            FlowEvent::Failed { unit, .. } => unit.as_deref(),
            FlowEvent::SetupAborting { unit, .. } => Some(unit),
            FlowEvent::Created { .. }
            | FlowEvent::Driver { .. }
            | FlowEvent::ImplementersSettled
            | FlowEvent::Halted { .. }
            | FlowEvent::Completed { .. }
            | FlowEvent::Abandoned { .. }
            | FlowEvent::FlowCleaning { .. }
            | FlowEvent::FlowCleaned { .. } => None,
        }
    }
}

/// One line of the event log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub seq: u64,
    pub at: String,
    #[serde(flatten)]
    pub event: FlowEvent,
}

/// Every event type, in the order a Flow normally writes them (for documentation and the crash hook).
pub const EVENT_KINDS: [&str; 28] = [
    "flow.created",
    "flow.driver",
    "unit.worktree_creating",
    "unit.worktree_created",
    "unit.implementer_started",
    "unit.implementer_spawned",
    "unit.implementer_finished",
    "flow.implementers_settled",
    "unit.rebasing",
    "unit.rebased",
    "unit.derived",
    "unit.validating",
    "unit.validated",
    "unit.reviewing",
    "unit.reviewed",
    "unit.blocked",
    "unit.repair_started",
    "unit.merging",
    "unit.merged",
    "unit.cleaning",
    "unit.finished",
    "flow.setup_aborting",
    "flow.halted",
    "flow.completed",
    "flow.failed",
    "flow.abandoned",
    "flow.cleaning",
    "flow.cleaned",
];

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn records_are_flat_json_lines() {
        let r = Record {
            seq: 7,
            at: "2026-01-01T00:00:00Z".into(),
            event: FlowEvent::Merging {
                unit: "a".into(),
                tip: "abc".into(),
            },
        };
        let line = serde_json::to_string(&r).unwrap();
        assert_eq!(
            line,
            r#"{"seq":7,"at":"2026-01-01T00:00:00Z","type":"unit.merging","unit":"a","tip":"abc"}"#
        );
        let back: Record = serde_json::from_str(&line).unwrap();
        assert_eq!(back, r);
        let settled: Record =
            serde_json::from_str(r#"{"seq":1,"at":"x","type":"flow.implementers_settled"}"#)
                .unwrap();
        assert_eq!(settled.event, FlowEvent::ImplementersSettled);
    }

    #[test]
    fn kinds_match_the_serialized_tag() {
        let ev = FlowEvent::Halted { reason: "x".into() };
        let v = serde_json::to_value(&ev).unwrap();
        assert_eq!(v["type"], ev.kind());
        assert!(EVENT_KINDS.contains(&ev.kind()));
    }
}
