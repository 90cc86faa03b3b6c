//! Integrating one unit, in its numbered steps, and its review.

use super::checkout::{listing, main_problem, main_status, untracked_paths, THEN_RESUME};
use super::evidence::{child_evidence, summarize, validation_evidence};
use super::review::{packet_in, reviewer_task, too_large, verdict, write_packet, Ended, Verdict};
use std::ops::ControlFlow;

use super::*;

/// The outcome of one step of integration: go on with a `T`, or stop this unit's integration
/// at a [`Step`] (blocked, halted, failed, or already done).
type Stage<T> = Result<ControlFlow<Step, T>, FlowError>;

/// The value of a [`Stage`] that went on; returns the [`Step`] of one that stopped.
macro_rules! stage {
    ($e:expr) => {
        match $e? {
            ControlFlow::Continue(v) => v,
            ControlFlow::Break(step) => return Ok(step),
        }
    };
}

/// Inside a stage: the value of a sub-stage that went on; passes on the stop of one that stopped.
macro_rules! sub_stage {
    ($e:expr) => {
        match $e? {
            ControlFlow::Continue(v) => v,
            ControlFlow::Break(step) => return Ok(ControlFlow::Break(step)),
        }
    };
}

/// Stops a step with `$step` (a `Result<Step, FlowError>` such as `self.block(…)`).
macro_rules! stop {
    ($step:expr) => {
        return $step.map(ControlFlow::Break)
    };
}

/// Turns a git error inside a unit step into the Flow's terminal infrastructure failure.
macro_rules! git_or_fail {
    ($run:expr, $unit:expr, $what:expr, $e:expr) => {
        match $e {
            Ok(v) => v,
            Err(err) => stop!($run.fail(
                FailureKind::Infrastructure,
                Some($unit),
                format!("{}: {err}", $what),
            )),
        }
    };
}

/// The unit's worktree as step 2 found it.
struct Worktree {
    path: PathBuf,
    branch: String,
    git: Git,
    /// The commit the unit started from, as recorded.
    base0: String,
    /// The branch's commit before any rebase.
    tip0: String,
}

/// What step 2 derived from git: the unit's commits are `base..tip`, on top of Main.
struct Derived {
    wt: Worktree,
    base: String,
    tip: String,
    /// Nothing to merge: the unit's changes are already on Main.
    noop: bool,
}

impl Derived {
    fn outcome(&self) -> UnitOutcome {
        if self.noop {
            UnitOutcome::NoOp
        } else {
            UnitOutcome::Integrated
        }
    }
}

impl Run<'_> {
    /// Integrates unit `i`: the numbered steps below, each of which may stop the unit (blocked,
    /// halted, failed). A unit whose log says it got further resumes where it stopped.
    pub(super) async fn integrate(&self, i: usize) -> Result<Step, FlowError> {
        let state = self.state();
        let u = state.units[i].clone();
        match u.status {
            // Only reachable through a log that paused; the caller checks phases first.
            UnitStatus::Blocked => return Ok(Step::Paused),
            UnitStatus::Merged => return self.clean_up(i, UnitOutcome::Integrated),
            // Cleaned up after a merge, or after a no-op (which never merges).
            UnitStatus::Cleaning => {
                let outcome = if u.noop {
                    UnitOutcome::NoOp
                } else {
                    UnitOutcome::Integrated
                };
                return self.clean_up(i, outcome);
            }
            _ => {}
        }
        stage!(self.check_main(i, &state, &u));
        stage!(self.check_implementer(&u));
        let wt = stage!(self.open_worktree(&u));
        let derived = stage!(self.derive(&state, &u, wt));
        stage!(self.validate(&state, &u, &derived).await);
        stage!(self.review_if_asked(&state, &u, &derived).await);
        stage!(self.fast_forward(&state, &u, &derived));
        // Step 6: clean up.
        self.clean_up(i, derived.outcome())
    }

    /// Step 1: Main must be where the Flow left it. A unit caught between its merge and the record of
    /// it (a crash) is recorded as merged here, never merged twice.
    fn check_main(&self, i: usize, state: &FlowState, u: &UnitState) -> Stage<()> {
        let id = u.id();
        let just_merged = self
            .main_left_at
            .lock()
            .ok()
            .and_then(|mut m| m.take())
            .is_some_and(|oid| oid == state.main_oid);
        // When this process fast-forwarded Main to main_oid a moment ago (see `main_left_at`),
        // reading it again here adds nothing: the check right before the merge reads it anyway.
        if just_merged && u.status != UnitStatus::Merging {
            return Ok(ControlFlow::Continue(()));
        }
        let main_st = git_or_fail!(self, id, "cannot read Main", main_status(&self.main, &[]));
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
                    stop!(self.clean_up(i, UnitOutcome::Integrated));
                }
            }
        }
        if let Some(problem) = main_problem(state, &main_st, THEN_RESUME) {
            stop!(self.halt(problem));
        }
        Ok(ControlFlow::Continue(()))
    }

    /// Step 1b: The implementer's own verdict.
    fn check_implementer(&self, u: &UnitState) -> Stage<()> {
        match &u.implementer {
            Some(s) if s.ok => Ok(ControlFlow::Continue(())),
            Some(s) => stop!(self.block(u, BlockReason::ImplementerFailed, child_evidence(s))),
            None => stop!(self.fail(
                FailureKind::Infrastructure,
                Some(u.id()),
                "the implementer's result is missing from the log".into(),
            )),
        }
    }

    /// Step 2a: The unit's worktree: present, not mid-rebase (our own interrupted rebase is aborted),
    /// clean apart from what validation left, on the unit's branch.
    fn open_worktree(&self, u: &UnitState) -> Stage<Worktree> {
        let id = u.id();
        let (Some(path), Some(branch), Some(base0)) =
            (u.path.clone(), u.branch.clone(), u.base.clone())
        else {
            stop!(self.fail(
                FailureKind::Infrastructure,
                Some(id),
                "the unit has no worktree in the log".into(),
            ));
        };
        if !path.is_dir() {
            stop!(self.fail(
                FailureKind::Infrastructure,
                Some(id),
                format!(
                    "the unit's worktree {} is gone; its branch {branch} (if it still exists) holds its commits",
                    path.display()
                ),
            ));
        }
        let wt = self.env.git(&path);
        if git_or_fail!(
            self,
            id,
            "cannot read the unit worktree",
            wt.rebase_in_progress()
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
                stop!(self.block(
                    u,
                    BlockReason::Diverged,
                    "a rebase is in progress in the worktree".into(),
                ));
            }
        }
        let mut ws = git_or_fail!(
            self,
            id,
            "cannot read the unit worktree",
            wt.checkout_status(&[])
        );
        // What Flow's own validation left behind (build output) is not the implementer's doing.
        ws.changes.retain(|c| {
            c.strip_prefix("?? ")
                .is_none_or(|p| !u.validation_untracked.iter().any(|v| v == p))
        });
        if !ws.clean() {
            stop!(self.block(u, BlockReason::Uncommitted, listing(&ws)));
        }
        if ws.branch.as_deref() != Some(branch.as_str()) {
            stop!(self.block(
                u,
                BlockReason::Diverged,
                format!(
                    "the worktree's HEAD is on {} instead of the unit branch {branch}",
                    ws.branch.as_deref().unwrap_or("a detached HEAD")
                ),
            ));
        }
        Ok(ControlFlow::Continue(Worktree {
            tip0: ws.head.clone().unwrap_or_default(),
            path,
            branch,
            git: wt,
            base0,
        }))
    }

    /// Step 2b: Base and tip from git: the unit's commits on top of the current Main, rebased onto it
    /// in place when earlier units advanced it.
    fn derive(&self, state: &FlowState, u: &UnitState, wt: Worktree) -> Stage<Derived> {
        let id = u.id();
        let expected = state.main_oid.clone();
        let (branch, base0, tip0) = (&wt.branch, &wt.base0, &wt.tip0);
        // Whether the branch already sits on the current Main. Only possible when Main has not
        // moved since the unit's base, or when our own rebase onto it ran before a crash.
        let may_be_on_main =
            expected == *base0 || u.rebase_onto.as_deref() == Some(expected.as_str());
        let on_main = *tip0 != expected
            && may_be_on_main
            && git_or_fail!(
                self,
                id,
                "cannot compare commits",
                wt.git.is_ancestor(&expected, tip0)
            );
        let (base, tip, noop) = if *tip0 == expected {
            if u.rebase_onto.as_deref() != Some(expected.as_str()) {
                stop!(self.block(
                    u,
                    BlockReason::NoCommits,
                    format!(
                        "branch {branch} has no commits on top of {}",
                        short(&expected)
                    ),
                ));
            }
            (expected.clone(), expected.clone(), true)
        } else if on_main {
            (expected.clone(), tip0.clone(), false)
        } else {
            sub_stage!(self.rebase_unit(state, u, &wt))
        };
        let commits = if noop {
            Vec::new()
        } else {
            git_or_fail!(
                self,
                id,
                "cannot list the unit's commits",
                wt.git.commits_between(&base, &tip)
            )
        };
        self.emit(FlowEvent::Derived {
            unit: id.to_string(),
            base: base.clone(),
            tip: tip.clone(),
            commits,
            noop,
        })?;
        Ok(ControlFlow::Continue(Derived {
            wt,
            base,
            tip,
            noop,
        }))
    }

    /// Step 2c: Rebases the unit's commits onto the Main that earlier units advanced: `(base, tip,
    /// noop)` after it, or a failure when they conflict.
    fn rebase_unit(
        &self,
        state: &FlowState,
        u: &UnitState,
        wt: &Worktree,
    ) -> Stage<(String, String, bool)> {
        let id = u.id();
        let expected = &state.main_oid;
        let (branch, base0, tip0) = (&wt.branch, &wt.base0, &wt.tip0);
        let descends = expected != base0
            && git_or_fail!(
                self,
                id,
                "cannot compare commits",
                wt.git.is_ancestor(base0, tip0)
            );
        if !descends {
            stop!(self.block(
                u,
                BlockReason::Diverged,
                format!(
                    "branch {branch} no longer descends from the commit it started at ({})",
                    short(base0)
                ),
            ));
        }
        if tip0 == base0 {
            stop!(self.block(
                u,
                BlockReason::NoCommits,
                format!("branch {branch} has no commits on top of {}", short(base0)),
            ));
        }
        self.emit(FlowEvent::Rebasing {
            unit: id.to_string(),
            onto: expected.clone(),
            upstream: base0.clone(),
        })?;
        match wt.git.rebase_onto(expected, base0) {
            Ok(RebaseOutcome::Rebased { head }) => {
                self.emit(FlowEvent::Rebased {
                    unit: id.to_string(),
                    base: expected.clone(),
                    head: head.clone(),
                })?;
                let noop = head == *expected;
                Ok(ControlFlow::Continue((expected.clone(), head, noop)))
            }
            Ok(RebaseOutcome::Conflict {
                diagnostics,
                conflicted_paths,
            }) => {
                let mut message = format!(
                    "rebasing {branch} onto {} ({}) conflicted and was aborted",
                    state.main_branch,
                    short(expected)
                );
                if !conflicted_paths.is_empty() {
                    message.push_str(&format!(
                        "; conflicting paths: {}",
                        conflicted_paths.join(", ")
                    ));
                }
                message.push_str(&format!(
                    ". The unit overlaps an earlier one: combine or sequence them. Its worktree {} is kept.\n{}",
                    wt.path.display(),
                    bounded(diagnostics.trim(), EVIDENCE_BOUND)
                ));
                stop!(self.fail(FailureKind::RebaseConflict, Some(id), message))
            }
            Err(e) => {
                if wt.git.rebase_in_progress().unwrap_or(false) {
                    let _ = wt.git.run(["rebase", "--abort"]);
                }
                stop!(self.fail(
                    FailureKind::Infrastructure,
                    Some(id),
                    format!("rebasing {branch} onto {} failed: {e}", short(expected)),
                ))
            }
        }
    }

    /// Step 3: Validation: the authority on objective checks.
    async fn validate(&self, state: &FlowState, u: &UnitState, d: &Derived) -> Stage<()> {
        let id = u.id();
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
            &d.wt.path,
            &vars,
            &self.env.command_rules,
            self.env.delegate.limits.max_timeout,
            self.cancel,
        )
        .await
        {
            Validation::Passed(results) => {
                self.emit(FlowEvent::Validated {
                    unit: id.to_string(),
                    results,
                    untracked: untracked_paths(&d.wt.git),
                })?;
                Ok(ControlFlow::Continue(()))
            }
            Validation::Failed(results) => stop!(self.block_with(
                u,
                BlockReason::ValidationFailed,
                validation_evidence(&results),
                untracked_paths(&d.wt.git),
            )),
            Validation::Cancelled => stop!(self.halt("cancelled during validation".into())),
        }
    }

    /// Step 4: Review, only for a stated criterion and only of a real change not yet approved.
    async fn review_if_asked(&self, state: &FlowState, u: &UnitState, d: &Derived) -> Stage<()> {
        match (u.spec.review.as_deref(), d.noop) {
            (Some(criterion), false)
                if u.approved.as_ref() != Some(&(d.base.clone(), d.tip.clone())) =>
            {
                self.review(state, u, criterion, &d.wt.path, &d.base, &d.tip)
                    .await
            }
            _ => Ok(ControlFlow::Continue(())),
        }
    }

    /// Step 5: Fast-forward Main to the exact tip, after reading Main once more (validation and review
    /// took time).
    fn fast_forward(&self, state: &FlowState, u: &UnitState, d: &Derived) -> Stage<()> {
        let id = u.id();
        if self.cancel.is_cancelled() {
            stop!(self.halt("cancelled before merging".into()));
        }
        if d.noop {
            return Ok(ControlFlow::Continue(()));
        }
        let tip = &d.tip;
        let main_st = git_or_fail!(self, id, "cannot read Main", main_status(&self.main, &[]));
        if let Some(problem) = main_problem(state, &main_st, THEN_RESUME) {
            stop!(self.halt(problem));
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
        let Err(e) = merge.merge_ff_only(tip) else {
            self.emit(FlowEvent::Merged {
                unit: id.to_string(),
                tip: tip.clone(),
                warning: None,
                recovered: false,
            })?;
            if let Ok(mut m) = self.main_left_at.lock() {
                *m = Some(tip.clone());
            }
            return Ok(ControlFlow::Continue(()));
        };
        let diagnostic = bounded(&e.to_string(), EVIDENCE_BOUND);
        let after = main_status(&self.main, &[]);
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
                    short(tip)
                )),
                recovered: false,
            })?;
            return Ok(ControlFlow::Continue(()));
        }
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
        stop!(self.fail(
            FailureKind::MergeFailed,
            Some(id),
            format!(
                "`git merge --ff-only {tip}` failed and Main is not at that commit ({now}): {diagnostic}. \
                 The worktree {} and branch {} are kept",
                d.wt.path.display(),
                d.wt.branch
            ),
        ))
    }

    async fn review(
        &self,
        state: &FlowState,
        u: &UnitState,
        criterion: &str,
        path: &Path,
        base: &str,
        tip: &str,
    ) -> Stage<()> {
        let id = u.id();
        let Some(reviewer) = state.reviewer.clone() else {
            return Ok(ControlFlow::Break(self.fail(
                FailureKind::Infrastructure,
                Some(id),
                "the unit asks for review but the Flow froze no reviewer".into(),
            )?));
        };
        let wt = self.env.git(path);
        let patch = match wt.diff(base, tip) {
            Ok(p) => p,
            Err(e) => {
                return Ok(ControlFlow::Break(self.fail(
                    FailureKind::Infrastructure,
                    Some(id),
                    format!("cannot write the review patch: {e}"),
                )?))
            }
        };
        // The packet's limits (seed 004's REVIEW_MAX_PATCH_BYTES, REVIEW_MAX_PATHS): a change
        // too large to review in one packet blocks the unit with the reason.
        if let Some(evidence) = too_large(&patch, base, tip) {
            return Ok(ControlFlow::Break(self.block(
                u,
                BlockReason::ReviewPacketTooLarge,
                evidence,
            )?));
        }
        // The record's copy under Main's flow folder, and the reviewer's in its own worktree
        // (its workspace: a reviewer reads nothing outside it), under the excluded `.baton/state/`.
        let record_path = self
            .store
            .flow_dir(&state.id)?
            .join("patches")
            .join(format!("{id}-{}.patch", u.attempt));
        let patch_path = packet_in(path, id, u.attempt);
        for target in [&record_path, &patch_path] {
            if let Err(e) = write_packet(target, &patch) {
                return Ok(ControlFlow::Break(self.fail(
                    FailureKind::Infrastructure,
                    Some(id),
                    format!("cannot write the review packet {}: {e}", target.display()),
                )?));
            }
        }
        self.emit(FlowEvent::Reviewing {
            unit: id.to_string(),
            base: base.to_string(),
            tip: tip.to_string(),
            // The durable copy; the reviewer reads its own in the worktree.
            patch_path: record_path.clone(),
            model_class: u.model_class,
        })?;
        let task = reviewer_task(&u.spec, criterion, path, base, tip, &patch_path);
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
        // The worktree's copy goes once read (the record keeps its own).
        let _ = std::fs::remove_file(&patch_path);
        let r = match result {
            Ok(r) => r,
            Err(e) if e.code == ExecErrorCode::Aborted => {
                return Ok(ControlFlow::Break(
                    self.halt("cancelled during review".into())?,
                ))
            }
            Err(e) => {
                return Ok(ControlFlow::Break(self.fail(
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
        let ended = match (r.status, r.exit_code) {
            (ChildStatus::Success, _) => Ended::Clean,
            (ChildStatus::Failure, Some(c)) => Ended::Unclean(format!("exit code {c}")),
            (ChildStatus::Failure, None) => Ended::Killed,
        };
        let said = verdict(&ended, &r.output);
        if said == Verdict::NoAnswer {
            return Ok(ControlFlow::Break(self.fail(
                FailureKind::ReviewerFailed,
                Some(id),
                format!(
                    "the reviewer failed; the worktree {} is kept. {}",
                    path.display(),
                    child_evidence(&summarize(&r))
                ),
            )?));
        }
        self.emit(FlowEvent::Reviewed {
            unit: id.to_string(),
            base: base.to_string(),
            tip: tip.to_string(),
            approved: said == Verdict::Approved,
            output: bounded(&r.output, EVIDENCE_BOUND),
        })?;
        match said {
            Verdict::Findings(text) => Ok(ControlFlow::Break(self.block(
                u,
                BlockReason::ReviewFindings,
                bounded(&text, EVIDENCE_BOUND),
            )?)),
            _ => Ok(ControlFlow::Continue(())),
        }
    }

    /// Step 6: non-forced `git worktree remove` and `git branch -d`; a refusal is a warning. They
    /// run on a thread of their own while the next unit lands (they touch only this unit's
    /// worktree and branch), one cleanup at a time; `unit.finished` follows when they end.
    pub(super) fn clean_up(&self, i: usize, outcome: UnitOutcome) -> Result<Step, FlowError> {
        self.finish_cleanup(true)?;
        let u = self.unit(i);
        self.emit(FlowEvent::Cleaning {
            unit: u.id().to_string(),
        })?;
        let main = self.main.clone();
        let (path, branch) = (u.path.clone(), u.branch.clone());
        let work = move || remove_unit_checkout(&main, path.as_deref(), branch.as_deref());
        let unit = u.id().to_string();
        match std::thread::Builder::new()
            .name("flow-cleanup".into())
            .spawn(work.clone())
        {
            Ok(done) => {
                *lock_or(&self.cleaning) = Some(Cleanup {
                    unit,
                    outcome,
                    done,
                });
            }
            Err(_) => {
                let warnings = work();
                self.emit(FlowEvent::Finished {
                    unit,
                    outcome,
                    warnings,
                })?;
            }
        }
        Ok(Step::Done)
    }

    /// Writes `unit.finished` for the cleanup started last, once it has ended; with `wait`, waits
    /// for it to end.
    pub(super) fn finish_cleanup(&self, wait: bool) -> Result<(), FlowError> {
        let c = {
            let mut slot = lock_or(&self.cleaning);
            match slot.as_ref() {
                Some(c) if wait || c.done.is_finished() => slot.take(),
                _ => None,
            }
        };
        let Some(c) = c else { return Ok(()) };
        let warnings = c.done.join().unwrap_or_else(|_| {
            vec![format!(
                "the cleanup of unit {} stopped short: run `baton flow clean` to remove what is left",
                c.unit
            )]
        });
        self.emit(FlowEvent::Finished {
            unit: c.unit,
            outcome: c.outcome,
            warnings,
        })
    }

    /// Waits for a cleanup still running without recording it: the driver stopped short, and
    /// whoever takes over redoes it from the log.
    pub(super) fn forget_cleanup(&self) {
        if let Some(c) = lock_or(&self.cleaning).take() {
            let _ = c.done.join();
        }
    }
}

/// Removes a unit's worktree and branch, never by force: what git refuses is a warning.
fn remove_unit_checkout(main: &Git, path: Option<&Path>, branch: Option<&str>) -> Vec<String> {
    let mut warnings = Vec::new();
    if let Some(path) = path {
        if path.symlink_metadata().is_ok() {
            if let Err(e) = main.worktree_remove(path, false) {
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
            let _ = main.worktree_prune();
        }
    }
    if let Some(branch) = branch {
        match main.branch_delete(branch, false) {
            Ok(()) => {}
            // Already gone (a resumed cleanup).
            Err(e) if e.stderr().is_some_and(|s| s.contains("not found")) => {}
            Err(e) => warnings.push(format!(
                "branch {branch} kept: git refused to delete it ({})",
                first_line(&e.to_string())
            )),
        }
    }
    warnings
}
