//! DEBUG's fan-in conflict-check (debug-workflow.md): which tasks are the scoped investigators
//! of a fan-out, and which files two of them edited. The fan-out itself is
//! `run::fan_out`'s.

use std::collections::{BTreeMap, BTreeSet};

use super::{Action, FollowUp, Gate};
use crate::artifact::{Phase, Task, TaskKind};

/// How the reason of a reconciling investigator starts.
pub const RECONCILE: &str = "Reconcile the fan-out:";

/// The files a task owns when it is one investigator of a fan-out (its scope names files, not
/// one of the closed set); `None` for any other task.
pub fn lane_files(t: &Task) -> Option<Vec<String>> {
    let scope = t.scope.as_deref()?;
    let is_lane = t.node() == Some(Phase::DebugInvestigate)
        && t.kind == Some(TaskKind::Agent)
        && !["N/A", "ALL_ISSUES", "CRITICAL_ONLY", ""].contains(&scope.trim());
    is_lane.then(|| {
        scope
            .split(',')
            .map(|f| f.trim().to_string())
            .filter(|f| !f.is_empty())
            .collect()
    })
}

/// Whether the task reconciles files two investigators of a fan-out both edited.
pub fn is_reconcile(t: &Task) -> bool {
    t.reason
        .as_deref()
        .is_some_and(|r| r.starts_with(RECONCILE))
}

/// The files two or more investigators of a fan-out edited, each with the investigators that
/// edited it (named by their first task). One investigator is one scope: a task that goes on
/// with an investigation in the same files is the same investigator. A reconciler's edits take
/// over the files it was given, and count like any investigator's outside them. `edited`: each
/// task's files, as the runner read them between its two snapshots.
pub fn conflicts(
    tasks: &[Task],
    edited: &BTreeMap<String, Vec<String>>,
) -> Vec<(String, Vec<String>)> {
    let lanes: Vec<&Task> = tasks.iter().filter(|t| lane_files(t).is_some()).collect();
    let reconciled: BTreeSet<String> = lanes
        .iter()
        .filter(|t| is_reconcile(t))
        .flat_map(|t| lane_files(t).unwrap_or_default())
        .collect();
    // Each investigator by its scope, named by the first task that had it.
    let mut first: BTreeMap<&str, &str> = BTreeMap::new();
    for t in &lanes {
        first
            .entry(t.scope.as_deref().unwrap_or_default())
            .or_insert(t.id.as_str());
    }
    let mut owners: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for t in &lanes {
        let who = first[t.scope.as_deref().unwrap_or_default()].to_string();
        for f in edited.get(&t.id).into_iter().flatten() {
            let by = owners.entry(f.clone()).or_default();
            if !reconciled.contains(f) && !by.contains(&who) {
                by.push(who.clone());
            }
        }
    }
    owners.into_iter().filter(|(_, ts)| ts.len() >= 2).collect()
}

impl super::Draft<'_> {
    /// The scope of the fan-out investigator whose report is being decided; `None` when it is
    /// not one.
    /// After a research round (the batch was the researchers) it is the investigator that ran
    /// last.
    pub(super) fn reporting_lane(&self) -> Option<String> {
        let in_batch = self
            .inputs
            .batch
            .iter()
            .filter_map(|id| self.tasks.iter().find(|t| &t.id == id))
            .find(|t| t.node() == Some(Phase::DebugInvestigate));
        let last = || {
            self.tasks.iter().rev().find(|t| {
                t.node() == Some(Phase::DebugInvestigate)
                    && t.status == Some(crate::artifact::TaskStatus::Completed)
            })
        };
        in_batch
            .or_else(last)
            .filter(|t| lane_files(t).is_some())
            .and_then(|t| t.scope.clone())
    }

    /// A fan-out investigator that asked for research runs again in its own files: a task of
    /// its scope, which the re-run takes (without one it would be a new, unscoped task).
    pub(super) fn reinvoke_lane(&mut self, reason: &str) {
        if let Some(files) = self.reporting_lane() {
            self.follow_ups.push(FollowUp {
                kind: TaskKind::Agent,
                phase: Phase::DebugInvestigate.as_str().into(),
                scope: files.clone(),
                reason: format!("{reason} (WITHIN your scoped files only: {files})"),
            });
        }
    }

    /// An investigator's fix is proven. Without a fan-out the review follows; with one, the next
    /// investigator runs until none is left, then the fan-in conflict-check: files two of them
    /// edited are reconciled by one investigator that sees both fixes (once; a conflict left
    /// after that is the user's), and only disjoint edits go on to the review. `None`: decided
    /// here.
    pub(super) fn fan_in(&mut self) -> Option<(Action, String)> {
        let lanes = self
            .tasks
            .iter()
            .filter(|t| lane_files(t).is_some())
            .count();
        if lanes == 0 {
            return Some((Action::DebugReview, "the fix is proven: review it".into()));
        }
        let open = self
            .tasks
            .iter()
            .filter(|t| lane_files(t).is_some() && t.is_open())
            .count();
        if open > 0 {
            return Some((
                Action::RunInvestigator,
                format!("fan-out: {open} more scoped investigator(s) to run"),
            ));
        }
        let found = conflicts(&self.tasks, &self.inputs.edited);
        if found.is_empty() {
            return Some((
                Action::DebugReview,
                format!("fan-in: the {lanes} investigators edited disjoint files: review the fixes together"),
            ));
        }
        let named: Vec<String> = found
            .iter()
            .map(|(f, ts)| format!("{f} (by {})", ts.join(" and ")))
            .collect();
        if self.tasks.iter().any(is_reconcile) {
            self.stop(
                Action::AskUser,
                Some(Gate::Clarification),
                format!(
                    "fan-in: still edited by two investigators after reconciling: {}",
                    named.join(", ")
                ),
            );
            return None;
        }
        let files: Vec<String> = found.iter().map(|(f, _)| f.clone()).collect();
        let reason = format!(
            "{RECONCILE} {} edited by two investigators. Both fixes are in the working tree now: read what each investigator reported (the workflow artifact), make the shared files hold both fixes, and edit nothing else.",
            named.join(", ")
        );
        self.follow_ups.push(FollowUp {
            kind: TaskKind::Agent,
            phase: Phase::DebugInvestigate.as_str().into(),
            scope: files.join(", "),
            reason: reason.clone(),
        });
        self.decide(Action::ContinueInvestigation, reason);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lane(id: &str, scope: &str, reason: &str) -> Task {
        Task {
            id: id.into(),
            kind: Some(TaskKind::Agent),
            phase: Some(Phase::DebugInvestigate.as_str().into()),
            scope: Some(scope.into()),
            reason: Some(reason.into()),
            ..Task::default()
        }
    }

    fn edits(list: &[(&str, &[&str])]) -> BTreeMap<String, Vec<String>> {
        list.iter()
            .map(|(id, fs)| (id.to_string(), fs.iter().map(|f| f.to_string()).collect()))
            .collect()
    }

    #[test]
    fn an_investigation_that_goes_on_in_its_own_files_does_not_conflict_with_itself() {
        let tasks = vec![
            lane("t1", "a.rs", "a"),
            lane("t4", "b.rs", "b"),
            // t1's investigation continued, in the same files.
            lane("t7", "a.rs", "went on"),
        ];
        let edited = edits(&[("t1", &["a.rs"]), ("t4", &["b.rs"]), ("t7", &["a.rs"])]);
        assert!(conflicts(&tasks, &edited).is_empty());
        // Its continuation straying into b.rs conflicts, named by the lane's first task.
        let edited = edits(&[("t1", &["a.rs"]), ("t4", &["b.rs"]), ("t7", &["b.rs"])]);
        assert_eq!(
            conflicts(&tasks, &edited),
            vec![("b.rs".to_string(), vec!["t4".to_string(), "t1".to_string()])]
        );
    }
}
