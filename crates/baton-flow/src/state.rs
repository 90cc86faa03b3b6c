//! What a Flow's events add up to. The state is always rebuilt by folding the event log; the
//! snapshot file is a copy of it for readers, never an input.

use std::path::PathBuf;

use baton_protocol::ModelClass;
use serde::{Deserialize, Serialize};

use crate::event::{
    BlockReason, CheckResult, ChildSummary, CleanItem, FailureKind, FlowEvent, FrozenRole, Record,
    UnitOutcome, UnitWorkflow,
};
use crate::units::UnitSpec;

/// Where one unit is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnitStatus {
    /// No worktree yet.
    Pending,
    /// Its worktree is being created.
    Creating,
    /// Worktree ready; the implementer has not started (or a repair is about to start).
    Ready,
    Implementing,
    /// The implementer settled (successfully or not); integration has not reached the unit.
    Implemented,
    Rebasing,
    Validating,
    Reviewing,
    Merging,
    Merged,
    Cleaning,
    /// Fast-forwarded into Main and cleaned up.
    Integrated,
    /// Its commits were dropped by the rebase; validated and cleaned up.
    NoOp,
    /// Waiting for `baton flow continue` (or terminal after a repair).
    Blocked,
    /// The Flow ended on this unit; its worktree is kept.
    Failed,
}

impl UnitStatus {
    pub fn label(self) -> &'static str {
        match self {
            UnitStatus::Pending => "pending",
            UnitStatus::Creating => "creating worktree",
            UnitStatus::Ready => "ready",
            UnitStatus::Implementing => "implementing",
            UnitStatus::Implemented => "implemented",
            UnitStatus::Rebasing => "rebasing",
            UnitStatus::Validating => "validating",
            UnitStatus::Reviewing => "reviewing",
            UnitStatus::Merging => "merging",
            UnitStatus::Merged => "merged",
            UnitStatus::Cleaning => "cleaning up",
            UnitStatus::Integrated => "integrated",
            UnitStatus::NoOp => "no-op",
            UnitStatus::Blocked => "blocked",
            UnitStatus::Failed => "failed",
        }
    }

    /// Integrated or no-op: the unit is done and will never be touched again.
    pub fn is_done(self) -> bool {
        match self {
            UnitStatus::Integrated | UnitStatus::NoOp => true,
            UnitStatus::Pending
            | UnitStatus::Creating
            | UnitStatus::Ready
            | UnitStatus::Implementing
            | UnitStatus::Implemented
            | UnitStatus::Rebasing
            | UnitStatus::Validating
            | UnitStatus::Reviewing
            | UnitStatus::Merging
            | UnitStatus::Merged
            | UnitStatus::Cleaning
            | UnitStatus::Blocked
            | UnitStatus::Failed => false,
        }
    }
}

/// A block and its evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Block {
    pub attempt: u32,
    pub reason: BlockReason,
    pub evidence: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnitState {
    pub spec: UnitSpec,
    pub status: UnitStatus,
    pub worktree_id: Option<String>,
    pub path: Option<PathBuf>,
    pub branch: Option<String>,
    /// The commit the unit's work sits on: the Flow's start, or the Main it was rebased onto.
    pub base: Option<String>,
    /// The unit's last derived tip.
    pub tip: Option<String>,
    /// Commits `base..tip`, oldest first.
    pub commits: Vec<String>,
    /// The last derivation found nothing to merge (a rebase dropped every commit).
    #[serde(default)]
    pub noop: bool,
    /// 0 for the first implementation, 1 for the repair.
    pub attempt: u32,
    /// The class the current attempt runs with (the unit's, or the repair's override).
    pub model_class: Option<ModelClass>,
    pub guidance: Option<String>,
    /// The current attempt's implementer, once it settled.
    pub implementer: Option<ChildSummary>,
    /// How many times the current attempt's implementer was launched (more than 1 after a resume).
    pub implementer_launches: u32,
    /// Process (and process group) of the implementer while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub implementer_pid: Option<u32>,
    /// Set when a rebase onto this Main began in the current derivation.
    pub rebase_onto: Option<String>,
    pub validation: Vec<CheckResult>,
    /// Untracked paths Flow's own validation left in the worktree; derivations ignore them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub validation_untracked: Vec<String>,
    /// `(base, tip)` the reviewer approved.
    pub approved: Option<(String, String)>,
    pub review_output: Option<String>,
    pub patch_path: Option<PathBuf>,
    pub block: Option<Block>,
    pub merging_tip: Option<String>,
    pub outcome: Option<UnitOutcome>,
    pub warnings: Vec<String>,
    /// `baton flow clean` removed the worktree and branch the ended Flow had kept.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cleaned: bool,
}

impl UnitState {
    fn new(spec: UnitSpec) -> Self {
        UnitState {
            model_class: spec.model_class,
            spec,
            status: UnitStatus::Pending,
            worktree_id: None,
            path: None,
            branch: None,
            base: None,
            tip: None,
            commits: Vec::new(),
            noop: false,
            attempt: 0,
            guidance: None,
            implementer: None,
            implementer_launches: 0,
            implementer_pid: None,
            rebase_onto: None,
            validation: Vec::new(),
            validation_untracked: Vec::new(),
            approved: None,
            review_output: None,
            patch_path: None,
            block: None,
            merging_tip: None,
            outcome: None,
            warnings: Vec::new(),
            cleaned: false,
        }
    }

    pub fn id(&self) -> &str {
        &self.spec.id
    }

    fn note_untracked(&mut self, paths: &[String]) {
        for p in paths {
            if !self.validation_untracked.contains(p) {
                self.validation_untracked.push(p.clone());
            }
        }
    }
}

/// How a Flow ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "end", rename_all = "snake_case")]
pub enum FlowEnd {
    Completed {
        warnings: Vec<String>,
    },
    Failed {
        kind: FailureKind,
        unit: Option<String>,
        message: String,
    },
    Abandoned {
        reason: Option<String>,
    },
}

/// The last `baton flow clean` of an ended Flow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CleanRecord {
    pub at: String,
    pub force: bool,
    /// The plan (`flow.cleaning`), then what was removed and kept (`flow.cleaned`).
    pub items: Vec<CleanItem>,
    /// `flow.cleaned` was written; `false` when the clean was cut short (the next clean finishes it).
    pub done: bool,
}

baton_protocol::closed_set! {
    /// The phase a reader sees.
    pub enum Phase ("phase") {
        /// A live process is driving it.
        Running = "running",
        /// A unit is blocked; `baton flow continue --guidance …` repairs it once.
        Paused = "paused",
        /// No process is driving it and it has not ended: `baton flow resume` continues it.
        Interrupted = "interrupted",
        Completed = "completed",
        /// Ended without completing; worktrees not integrated are kept.
        Failed = "failed",
        Abandoned = "abandoned",
    }
}

impl Phase {
    /// Completed, failed or abandoned: nothing more will happen.
    pub fn is_terminal(self) -> bool {
        match self {
            Phase::Completed | Phase::Failed | Phase::Abandoned => true,
            Phase::Running | Phase::Paused | Phase::Interrupted => false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowState {
    pub id: String,
    pub created: String,
    pub repo_root: PathBuf,
    pub main_branch: String,
    /// Main when the Flow started.
    pub start_oid: String,
    /// Where the Flow left Main: the start, then each integrated tip.
    pub main_oid: String,
    pub worktree_root: PathBuf,
    /// Absent for a Flow on Temporal.
    pub implementer: Option<FrozenRole>,
    pub reviewer: Option<FrozenRole>,
    /// Each unit a whole workflow (`--workflow build`), else one implementer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<UnitWorkflow>,
    /// The Flow runs on Temporal: its record is what its starter saw; never driven here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temporal: Option<crate::event::OnTemporal>,
    pub units: Vec<UnitState>,
    pub settled: bool,
    pub end: Option<FlowEnd>,
    /// `(unit, message)` of a setup being undone (`flow.setup_aborting` without its `flow.failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup_aborting: Option<(String, String)>,
    /// Why the last driving process stopped early, if it said.
    pub halted: Option<String>,
    /// The last `baton flow clean` of the ended Flow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clean: Option<CleanRecord>,
    pub driver_pid: Option<u32>,
    pub last_seq: u64,
    pub updated: String,
}

impl FlowState {
    /// Folds a log into a state; `None` when it does not start with `flow.created`.
    pub fn from_records(records: &[Record]) -> Option<FlowState> {
        let (first, rest) = records.split_first()?;
        let mut state = FlowState::created(&first.event, first.seq, &first.at)?;
        for r in rest {
            state.apply(&r.event, r.seq, &r.at);
        }
        Some(state)
    }

    /// The state right after a `flow.created` event.
    pub fn created(ev: &FlowEvent, seq: u64, at: &str) -> Option<FlowState> {
        match ev {
            FlowEvent::Created {
                id,
                created,
                repo_root,
                main_branch,
                main_oid,
                worktree_root,
                units,
                implementer,
                reviewer,
                workflow,
                temporal,
            } => Some(FlowState {
                id: id.clone(),
                created: created.clone(),
                repo_root: repo_root.clone(),
                main_branch: main_branch.clone(),
                start_oid: main_oid.clone(),
                main_oid: main_oid.clone(),
                worktree_root: worktree_root.clone(),
                implementer: implementer.clone(),
                reviewer: reviewer.clone(),
                workflow: *workflow,
                temporal: temporal.clone(),
                units: units.iter().cloned().map(UnitState::new).collect(),
                settled: false,
                setup_aborting: None,
                end: None,
                halted: None,
                clean: None,
                driver_pid: None,
                last_seq: seq,
                updated: at.to_string(),
            }),
            _ => None,
        }
    }

    pub fn unit_index(&self, id: &str) -> Option<usize> {
        self.units.iter().position(|u| u.spec.id == id)
    }

    fn unit_mut(&mut self, id: &str) -> Option<&mut UnitState> {
        self.units.iter_mut().find(|u| u.spec.id == id)
    }

    /// Applies one event. Events about unknown units are ignored (they cannot be written).
    pub fn apply(&mut self, ev: &FlowEvent, seq: u64, at: &str) {
        self.last_seq = seq;
        self.updated = at.to_string();
        match ev {
            FlowEvent::Created { .. } => {}
            FlowEvent::Driver { pid, .. } => {
                self.driver_pid = Some(*pid);
                self.halted = None;
            }
            FlowEvent::ImplementersSettled => self.settled = true,
            FlowEvent::Landing { main, .. } => {
                self.main_oid = main.clone();
                self.halted = None;
            }
            FlowEvent::WorktreeCreating { .. }
            | FlowEvent::WorktreeCreated { .. }
            | FlowEvent::ImplementerStarted { .. }
            | FlowEvent::ImplementerSpawned { .. }
            | FlowEvent::ImplementerFinished { .. } => self.apply_implementation(ev),
            FlowEvent::Rebasing { .. }
            | FlowEvent::Rebased { .. }
            | FlowEvent::Derived { .. }
            | FlowEvent::Validating { .. }
            | FlowEvent::Validated { .. }
            | FlowEvent::Reviewing { .. }
            | FlowEvent::Reviewed { .. } => self.apply_checks(ev),
            FlowEvent::Blocked { .. }
            | FlowEvent::RepairStarted { .. }
            | FlowEvent::Merging { .. }
            | FlowEvent::Merged { .. }
            | FlowEvent::Cleaning { .. }
            | FlowEvent::Finished { .. } => self.apply_landing(ev),
            FlowEvent::SetupAborting { .. }
            | FlowEvent::Halted { .. }
            | FlowEvent::Completed { .. }
            | FlowEvent::Failed { .. }
            | FlowEvent::Abandoned { .. }
            | FlowEvent::FlowCleaning { .. }
            | FlowEvent::FlowCleaned { .. } => self.apply_end(ev, at),
        }
    }

    /// An event of a unit's worktree or implementer: the unit's status and run follow it.
    fn apply_implementation(&mut self, ev: &FlowEvent) {
        match ev {
            FlowEvent::WorktreeCreating { unit, worktree_id } => {
                if let Some(u) = self.unit_mut(unit) {
                    u.status = UnitStatus::Creating;
                    u.worktree_id = Some(worktree_id.clone());
                }
            }
            FlowEvent::WorktreeCreated {
                unit,
                path,
                branch,
                base,
            } => {
                if let Some(u) = self.unit_mut(unit) {
                    u.status = UnitStatus::Ready;
                    u.path = Some(path.clone());
                    u.branch = Some(branch.clone());
                    u.base = Some(base.clone());
                }
            }
            FlowEvent::ImplementerStarted {
                unit, model_class, ..
            } => {
                if let Some(u) = self.unit_mut(unit) {
                    u.status = UnitStatus::Implementing;
                    u.implementer = None;
                    u.implementer_pid = None;
                    u.implementer_launches += 1;
                    u.model_class = *model_class;
                }
            }
            FlowEvent::ImplementerSpawned { unit, pid, .. } => {
                if let Some(u) = self.unit_mut(unit) {
                    u.implementer_pid = Some(*pid);
                }
            }
            FlowEvent::ImplementerFinished { unit, result, .. } => {
                if let Some(u) = self.unit_mut(unit) {
                    u.implementer_pid = None;
                    u.status = UnitStatus::Implemented;
                    u.implementer = Some(result.clone());
                }
            }
            _ => {}
        }
    }

    /// An event of a unit's rebase, validation or review: the unit records what it found.
    fn apply_checks(&mut self, ev: &FlowEvent) {
        match ev {
            FlowEvent::Rebasing { unit, onto, .. } => {
                if let Some(u) = self.unit_mut(unit) {
                    u.status = UnitStatus::Rebasing;
                    u.rebase_onto = Some(onto.clone());
                }
            }
            FlowEvent::Rebased { unit, base, head } => {
                if let Some(u) = self.unit_mut(unit) {
                    u.base = Some(base.clone());
                    u.tip = Some(head.clone());
                }
            }
            FlowEvent::Derived {
                unit,
                base,
                tip,
                commits,
                noop,
            } => {
                if let Some(u) = self.unit_mut(unit) {
                    u.base = Some(base.clone());
                    u.tip = Some(tip.clone());
                    u.commits = commits.clone();
                    u.noop = *noop;
                }
            }
            FlowEvent::Validating { unit, .. } => {
                if let Some(u) = self.unit_mut(unit) {
                    u.status = UnitStatus::Validating;
                    u.validation.clear();
                }
            }
            FlowEvent::Validated {
                unit,
                results,
                untracked,
            } => {
                if let Some(u) = self.unit_mut(unit) {
                    u.validation = results.clone();
                    u.note_untracked(untracked);
                }
            }
            FlowEvent::Reviewing {
                unit, patch_path, ..
            } => {
                if let Some(u) = self.unit_mut(unit) {
                    u.status = UnitStatus::Reviewing;
                    u.patch_path = Some(patch_path.clone());
                }
            }
            FlowEvent::Reviewed {
                unit,
                base,
                tip,
                approved,
                output,
            } => {
                if let Some(u) = self.unit_mut(unit) {
                    u.review_output = Some(output.clone());
                    u.approved = approved.then(|| (base.clone(), tip.clone()));
                }
            }
            _ => {}
        }
    }

    /// An event of a unit's block, repair, merge or cleanup: the unit moves on (and Main with a merge).
    fn apply_landing(&mut self, ev: &FlowEvent) {
        match ev {
            FlowEvent::Blocked {
                unit,
                attempt,
                reason,
                evidence,
                untracked,
            } => {
                if let Some(u) = self.unit_mut(unit) {
                    u.note_untracked(untracked);
                    u.status = UnitStatus::Blocked;
                    u.block = Some(Block {
                        attempt: *attempt,
                        reason: *reason,
                        evidence: evidence.clone(),
                    });
                }
            }
            FlowEvent::RepairStarted {
                unit,
                attempt,
                guidance,
                model_class,
            } => {
                if let Some(u) = self.unit_mut(unit) {
                    u.status = UnitStatus::Ready;
                    u.attempt = *attempt;
                    u.guidance = Some(guidance.clone());
                    u.model_class = *model_class;
                    u.implementer = None;
                    u.implementer_launches = 0;
                    u.rebase_onto = None;
                    u.validation.clear();
                    u.approved = None;
                    u.review_output = None;
                }
            }
            FlowEvent::Merging { unit, tip } => {
                if let Some(u) = self.unit_mut(unit) {
                    u.status = UnitStatus::Merging;
                    u.merging_tip = Some(tip.clone());
                }
            }
            FlowEvent::Merged {
                unit, tip, warning, ..
            } => {
                self.main_oid = tip.clone();
                if let Some(u) = self.unit_mut(unit) {
                    u.status = UnitStatus::Merged;
                    if let Some(w) = warning {
                        u.warnings.push(w.clone());
                    }
                }
            }
            FlowEvent::Cleaning { unit } => {
                if let Some(u) = self.unit_mut(unit) {
                    u.status = UnitStatus::Cleaning;
                }
            }
            FlowEvent::Finished {
                unit,
                outcome,
                warnings,
            } => {
                if let Some(u) = self.unit_mut(unit) {
                    u.status = match outcome {
                        UnitOutcome::Integrated => UnitStatus::Integrated,
                        UnitOutcome::NoOp => UnitStatus::NoOp,
                    };
                    u.outcome = Some(*outcome);
                    u.warnings.extend(warnings.iter().cloned());
                }
            }
            _ => {}
        }
    }

    /// An event of the Flow's end or cleanup: the Flow records how it ended, or what was cleaned.
    fn apply_end(&mut self, ev: &FlowEvent, at: &str) {
        match ev {
            FlowEvent::SetupAborting { unit, message } => {
                self.setup_aborting = Some((unit.clone(), message.clone()));
            }
            FlowEvent::Halted { reason } => {
                self.halted = Some(reason.clone());
                self.driver_pid = None;
            }
            FlowEvent::Completed { warnings } => {
                self.end = Some(FlowEnd::Completed {
                    warnings: warnings.clone(),
                });
                self.driver_pid = None;
            }
            FlowEvent::Failed {
                kind,
                unit,
                message,
            } => {
                if let Some(id) = unit {
                    if let Some(u) = self.unit_mut(id) {
                        if !u.status.is_done() {
                            u.status = UnitStatus::Failed;
                        }
                    }
                }
                self.end = Some(FlowEnd::Failed {
                    kind: *kind,
                    unit: unit.clone(),
                    message: message.clone(),
                });
                self.driver_pid = None;
            }
            FlowEvent::Abandoned { reason } => {
                self.end = Some(FlowEnd::Abandoned {
                    reason: reason.clone(),
                });
                self.driver_pid = None;
            }
            FlowEvent::FlowCleaning { force, items } => {
                self.clean = Some(CleanRecord {
                    at: at.to_string(),
                    force: *force,
                    items: items.clone(),
                    done: false,
                });
            }
            FlowEvent::FlowCleaned { items } => {
                for item in items.iter().filter(|i| i.kept.is_none()) {
                    if let Some(u) = self.unit_mut(&item.unit) {
                        u.cleaned = true;
                    }
                }
                let force = self.clean.as_ref().is_some_and(|c| c.force);
                self.clean = Some(CleanRecord {
                    at: at.to_string(),
                    force,
                    items: items.clone(),
                    done: true,
                });
            }
            _ => {}
        }
    }

    /// The unit waiting for its repair, if the Flow is paused.
    pub fn paused_unit(&self) -> Option<usize> {
        if self.end.is_some() {
            return None;
        }
        self.units.iter().position(|u| {
            u.status == UnitStatus::Blocked && u.block.as_ref().is_some_and(|b| b.attempt == 0)
        })
    }

    /// The phase from the log alone; `driving` says whether a live process holds the Flow lock.
    pub fn phase(&self, driving: bool) -> Phase {
        match &self.end {
            Some(FlowEnd::Completed { .. }) => Phase::Completed,
            Some(FlowEnd::Failed { .. }) => Phase::Failed,
            Some(FlowEnd::Abandoned { .. }) => Phase::Abandoned,
            // Temporal runs it until it ends; its nodes do not pause on a unit.
            None if self.temporal.is_some() => Phase::Running,
            None if self.paused_unit().is_some() => Phase::Paused,
            None if driving && self.driver_pid.is_some() => Phase::Running,
            None => Phase::Interrupted,
        }
    }

    /// Every warning of the Flow: merge diagnostics and cleanup refusals, by unit.
    pub fn warnings(&self) -> Vec<String> {
        self.units
            .iter()
            .flat_map(|u| {
                u.warnings
                    .iter()
                    .map(move |w| format!("{}: {w}", u.spec.id))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use pretty_assertions::assert_eq;

    fn item(unit: &str, kept: Option<&str>) -> CleanItem {
        CleanItem {
            unit: unit.into(),
            worktree: Some(PathBuf::from(format!("/w/{unit}"))),
            branch: Some(format!("baton/{unit}")),
            unmerged: usize::from(kept.is_some()),
            uncommitted: Vec::new(),
            kept: kept.map(str::to_string),
        }
    }

    #[test]
    fn a_clean_is_folded_and_marks_only_removed_units() {
        let spec = baton_roles::builtin_roles()
            .unwrap()
            .into_iter()
            .find(|r| r.name() == "implementer")
            .unwrap();
        let unit = |id: &str| {
            serde_json::from_value::<UnitSpec>(serde_json::json!({
                "id": id, "name": id, "task": "x",
                "validation": [{"command": "true", "args": []}]
            }))
            .unwrap()
        };
        let first = Record {
            seq: 1,
            at: "t1".into(),
            event: FlowEvent::Created {
                id: "f".into(),
                created: "t1".into(),
                repo_root: "/r".into(),
                main_branch: "main".into(),
                main_oid: "aaaa".into(),
                worktree_root: "/w".into(),
                units: vec![unit("a"), unit("b")],
                implementer: Some(FrozenRole {
                    spec,
                    backend: baton_protocol::role::BackendKind::Command,
                    file: "/r/i.md".into(),
                }),
                reviewer: None,
                workflow: None,
                temporal: None,
            },
        };
        let mut records = vec![
            first,
            serde_json::from_str(r#"{"seq":2,"at":"t2","type":"flow.abandoned","reason":null}"#)
                .unwrap(),
        ];
        // An old log (no clean events) folds with no clean record.
        let old = FlowState::from_records(&records).unwrap();
        assert_eq!(old.clean, None);
        assert!(!serde_json::to_string(&old).unwrap().contains("clean"));

        let items = vec![item("a", None), item("b", Some("unmerged"))];
        for (seq, event) in [
            FlowEvent::FlowCleaning {
                force: false,
                items: items.clone(),
            },
            FlowEvent::FlowCleaned {
                items: items.clone(),
            },
        ]
        .into_iter()
        .enumerate()
        {
            let line = serde_json::to_string(&Record {
                seq: 3 + seq as u64,
                at: "t3".into(),
                event,
            })
            .unwrap();
            records.push(serde_json::from_str(&line).unwrap());
        }
        let state = FlowState::from_records(&records).unwrap();
        assert_eq!(state.phase(false), Phase::Abandoned);
        assert!(state.units[0].cleaned);
        assert!(!state.units[1].cleaned);
        assert_eq!(
            state.clean,
            Some(CleanRecord {
                at: "t3".into(),
                force: false,
                items,
                done: true,
            })
        );
    }
}
