//! The BUILD and DEBUG chain: remediation re-checks, merged findings, builder or investigator,
//! reviewer, verifier (the phase exit) and doc-syncer.

use super::{
    Action, Change, Draft, FollowUp, Gate, MAX_INVESTIGATION_CONTINUATIONS, MAX_RESEARCH_ROUNDS,
};
use crate::artifact::PhaseStatus;
use crate::artifact::{
    BuildScope, Convergence, HistoryEntry, Phase, ProofStatus, Task, TaskKind, TaskStatus,
};
use crate::outputs::{BuilderReport, InvestigatorReport};
use crate::results::AgentResult;
use crate::route::WorkflowKind;

impl Draft<'_> {
    /// Whether the review being decided re-checks a fix made with scope `CRITICAL_ONLY`: the
    /// latest re-review, unless a phase's builder came after it.
    fn rechecking_critical_only(&self) -> bool {
        self.tasks
            .iter()
            .rev()
            .find(|t| {
                t.node() == Some(Phase::ReReview)
                    || (t.node() == Some(Phase::BuildImplement)
                        && t.kind != Some(TaskKind::Remfix)
                        && t.status == Some(TaskStatus::Completed))
            })
            .is_some_and(|t| {
                t.node() == Some(Phase::ReReview)
                    && t.status == Some(TaskStatus::Completed)
                    && t.scope.as_deref() == Some("CRITICAL_ONLY")
            })
    }

    /// Where the final whole-branch review stands (`results.final_branch_review`): the runner
    /// records `running` with its task when the user chose it; a task made after that one (the
    /// fix, its re-checks) means its findings are being fixed.
    fn final_review(&self) -> FinalReview {
        let Some(f) = &self.a.results.final_branch_review else {
            return FinalReview::NotOffered;
        };
        if f.status != "running" {
            return FinalReview::Done;
        }
        let task = f.task.as_deref();
        let at = task.and_then(|t| self.tasks.iter().position(|x| x.id == t));
        // Every task made after it (the fix, its re-checks) is its remediation.
        match at {
            Some(i) if i + 1 < self.tasks.len() => FinalReview::Fixing,
            _ => FinalReview::Reviewing,
        }
    }

    /// Whether the user chose to proceed past the hunter's HIGH findings in this phase.
    fn hunter_findings_accepted(&self) -> bool {
        self.a
            .results
            .hunter_findings
            .as_ref()
            .is_some_and(|d| d.at(self.a.phase_cursor.as_deref()))
    }

    /// Whether the user answered `fix` at this phase's revert gate (the fix runs; a later
    /// revert recommendation in the phase is asked again only in a new phase).
    fn revert_declined(&self) -> bool {
        self.a
            .results
            .revert_decision
            .as_ref()
            .is_some_and(|d| d.at(self.a.phase_cursor.as_deref()))
    }

    /// After the last phase (and the final review): the docs, then memory.
    fn chain_tail(&mut self, why: &str) -> (Action, String) {
        if self.full_graph()
            && !self.inputs.doc_sync_skipped
            && self.inputs.outputs.doc_syncer.is_none()
        {
            return (Action::RunDocSyncer, format!("{why}: sync the docs"));
        }
        self.memory_finalize(why)
    }

    /// cc10x's carve-out (remediation-and-research.md:203-212): a review finding that directly
    /// contradicts an explicit mandate of the plan is not settled by precedence: the user is
    /// asked which governs, the two texts side by side. Once answered, `finding` remediates as
    /// any finding does; `plan` dismisses it, and when it was the only blocking finding the
    /// verifier runs. True when the chain stops or moves on here.
    fn which_governs(&mut self) -> bool {
        let outputs = &self.inputs.outputs;
        // Asked of a review that requests changes: an approval with a conflict fixes nothing.
        let Some(r) = outputs
            .reviewer
            .as_ref()
            .filter(|r| r.approves() == Some(false))
        else {
            return false;
        };
        let Some(c) = r
            .plan_conflict
            .clone()
            .filter(|_| self.a.plan_file.is_some())
        else {
            return false;
        };
        // Once per mandate and phase: a re-review may word the finding differently.
        let answered = self
            .a
            .results
            .plan_adjudications
            .iter()
            .find(|p| p.mandate == c.mandate && p.phase == self.a.phase_cursor);
        match answered.map(|p| p.governs.as_str()) {
            None => {
                self.stop(
                    Action::AskUser,
                    Some(Gate::WhichGoverns),
                    format!(
                        "A review finding contradicts the plan. The finding: \"{}\". The plan mandates: \"{}\"",
                        c.finding, c.mandate
                    ),
                );
                true
            }
            Some("plan") => {
                // The dismissed finding is the review's one blocking finding only when the
                // review has exactly one and no other role raised it; otherwise the others are
                // fixed (the fix is told to keep the mandate).
                let reviewer_critical = r.critical_issues;
                let only = outputs.findings.as_ref().is_none_or(|f| {
                    f.critical_issues + f.high_issues <= 1
                        && f.hunter_only_high == 0
                        && f.critical_issues <= reviewer_critical
                });
                if only {
                    self.decide(
                        Action::RunVerifier,
                        "the plan governs over the review's only blocking finding: verify",
                    );
                }
                only
            }
            Some(_) => false,
        }
    }

    /// BUILD and DEBUG: remediation loop, merged findings, builder or investigator, reviewer,
    /// verifier, doc-syncer — each may stop the chain; what passes moves it on.
    pub(super) fn write_chain(&mut self, kind: WorkflowKind) {
        let outputs = &self.inputs.outputs;
        if let Some(remfix) = self.completed_remfix().cloned() {
            self.recheck(kind, &remfix);
            return;
        }
        if self.which_governs() {
            return;
        }
        let Some(deferred) = self.findings_gate(kind) else {
            return;
        };
        let mut next = None;
        if let Some(b) = &outputs.builder {
            match self.builder(b) {
                Some(n) => next = Some(n),
                None => return,
            }
        }
        if let Some(i) = &outputs.investigator {
            if !self.investigator(i) {
                return;
            }
            match self.fan_in() {
                Some(n) => next = Some(n),
                None => return,
            }
        }
        if let Some(r) = &outputs.reviewer {
            match r.approves() {
                None => return self.invalid("reviewer", &["no readable verdict".into()]),
                Some(false) if deferred => {
                    next = Some((
                        Action::RunVerifier,
                        "critical findings fixed; the HIGH ones are deferred".to_string(),
                    ))
                }
                Some(false) => {
                    let reason = r
                        .remediation_reason
                        .clone()
                        .unwrap_or("changes requested".into());
                    return self.remediate("code-reviewer", "ALL_ISSUES", &reason);
                }
                Some(true) if self.final_review() == FinalReview::Reviewing => {
                    self.changes.push(Change::FinalReview("clean"));
                    next = Some(self.chain_tail("the final whole-branch review is clean"));
                }
                Some(true) => next = Some((Action::RunVerifier, "review approved".to_string())),
            }
        }
        if let Some(v) = &outputs.verifier {
            let problems = v.reconcile_problems();
            if !problems.is_empty() {
                return self.invalid("verifier", &problems);
            }
            self.result("verifier", AgentResult::verified(v.passed()));
            if !v.passed() && v.revert && !self.revert_declined() {
                return self.stop(
                    Action::PauseForRevertDecision,
                    Some(Gate::RevertDecision),
                    "the verifier failed and recommends reverting this phase's change",
                );
            }
            if !v.passed() {
                if outputs.builder.as_ref().is_some_and(|b| b.status == "PASS") {
                    self.changes.push(Change::Status(HistoryEntry::new(
                        "verdict_contradiction",
                        self.a.phase_cursor.as_deref(),
                        "builder passed, verifier failed: the stricter verdict stands",
                    )));
                }
                return self.remediate("integration-verifier", "ALL_ISSUES", "verification failed");
            }
            let (action, reason) = self.phase_exit(kind);
            if action == Action::OfferFinalReview {
                return self.stop(action, Some(Gate::FinalReview), reason);
            }
            next = Some((action, reason));
        }
        if let Some(doc) = &outputs.doc_syncer {
            let problems = doc.problems();
            if !problems.is_empty() {
                return self.invalid("doc-syncer", &problems);
            }
            if doc.status == "FAIL" {
                return self.stop(Action::StopForFailure, None, "doc-syncer failed");
            }
            let partial = doc.status == "PARTIAL";
            self.result("doc_syncer", AgentResult::docs_synced(&doc.status, partial));
            next = Some(self.memory_finalize("documentation synced"));
        }
        if let (None, Some(r)) = (&next, &outputs.research) {
            // Research after a remediation that did not converge: the next fix reads it.
            if self.fix_after_research(&r.clone()) {
                return;
            }
        }
        if let (None, WorkflowKind::Debug, None, Some(r)) =
            (&next, kind, &outputs.investigator, &outputs.research)
        {
            // The research the request asked for came first: the investigator reads it now.
            let r = r.clone();
            self.research_in(&r);
            next = Some((
                Action::RunInvestigator,
                "research done: investigate with it".to_string(),
            ));
        }
        match next {
            Some((action, reason)) => self.decide(action, reason),
            None => self.stop(
                Action::StopInvalidOutput,
                None,
                "no output this chain reads",
            ),
        }
    }

    /// The review's and the hunt's findings weighed (cc10x remediation rows): a fix or a
    /// question when they call for one (`None`: the chain stops here), else whether HIGH
    /// findings after a CRITICAL_ONLY fix are deferred.
    fn findings_gate(&mut self, kind: WorkflowKind) -> Option<bool> {
        let outputs = &self.inputs.outputs;
        // A re-review after a CRITICAL_ONLY fix: only critical findings are fixed again; HIGH ones
        // are deferred unless they turn critical (cc10x remediation: re-review scope).
        let critical_only = self.rechecking_critical_only();
        let deferred = outputs
            .findings
            .as_ref()
            .is_some_and(|f| critical_only && f.critical_issues == 0 && f.high_issues > 0);
        if deferred {
            self.changes.push(Change::Status(HistoryEntry::new(
                "findings_deferred",
                self.a.phase_cursor.as_deref(),
                "HIGH findings after a CRITICAL_ONLY fix are deferred, not fixed",
            )));
        }
        if let Some(f) = outputs.findings.as_ref().filter(|_| critical_only) {
            if f.critical_issues > 0 {
                self.remediate("code-reviewer", "CRITICAL_ONLY", "critical findings remain");
                return None;
            }
        }
        if let Some(f) = outputs.findings.as_ref().filter(|_| !critical_only) {
            if kind == WorkflowKind::Build && f.critical_issues > 0 && f.high_issues > 0 {
                if self.remediation_cycles() >= self.breaker_limit() {
                    self.remediate("code-reviewer", "N/A", "critical and high findings");
                } else {
                    self.stop(
                        Action::PauseForScopeDecision,
                        Some(Gate::ScopeDecision),
                        "critical and high findings: fix critical only, or all issues",
                    );
                }
                return None;
            }
            // cc10x remediation row 2: the reviewer approves and only the hunter reports HIGH
            // issues (no critical one): the user decides, once per phase.
            let reviewer_approves =
                outputs.reviewer.as_ref().and_then(|r| r.approves()) == Some(true);
            let hunter_only = kind == WorkflowKind::Build
                && f.critical_issues == 0
                && f.high_issues > 0
                && f.hunter_only_high == f.high_issues
                && reviewer_approves;
            if hunter_only && !self.hunter_findings_accepted() {
                self.stop(
                    Action::PauseForHunterFindings,
                    Some(Gate::HunterFindings),
                    format!(
                        "the reviewer approves, but the failure-hunter reports {} HIGH issue{}",
                        f.high_issues,
                        if f.high_issues == 1 { "" } else { "s" }
                    ),
                );
                return None;
            }
            if (f.critical_issues > 0 || f.high_issues > 0) && !hunter_only {
                self.remediate("code-reviewer", "ALL_ISSUES", "review findings");
                return None;
            }
        }
        Some(deferred)
    }

    /// The seam gate against the plan (workflow-artifact-and-hook-policy.md:278): on a full
    /// BUILD's planned phase that names its `test_seams`, the builder's `SEAM_GATE_STATUS` is
    /// `confirmed` with `TEST_SEAMS` naming each of them, or `disagreed` (a better seam in
    /// `TEST_SEAMS`, the rationale in `DECISIONS`, which the contract checks). A phase whose plan
    /// names none (a legacy plan, or no plan) takes any status the contract takes.
    fn seam_problems(&self, b: &BuilderReport, phase: Option<&str>) -> Vec<String> {
        if !self.full_graph() || self.a.plan_file.is_none() {
            return Vec::new();
        }
        let planned: Vec<&str> = self
            .a
            .normalized_phases
            .iter()
            .find(|p| Some(p.phase_id.as_str()) == phase)
            .and_then(|p| p.test_seams.as_ref())
            .map(|s| {
                s.iter()
                    .map(|x| x.trim())
                    .filter(|x| !x.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        if planned.is_empty() {
            return Vec::new();
        }
        let listed = planned.join(", ");
        match b.seam_gate_status.as_deref() {
            Some("disagreed") => Vec::new(),
            Some("confirmed") => {
                let missing: Vec<&str> = planned
                    .iter()
                    .copied()
                    .filter(|s| !b.test_seams.iter().any(|t| t.trim() == *s))
                    .collect();
                match missing.is_empty() {
                    true => Vec::new(),
                    false => vec![format!(
                        "SEAM_GATE_STATUS confirmed, but TEST_SEAMS does not name the plan's {} for this phase",
                        missing.join(", ")
                    )],
                }
            }
            other => vec![format!(
                "the plan names this phase's test seams ({listed}): SEAM_GATE_STATUS must be confirmed (TEST_SEAMS naming them) or disagreed (a better seam in TEST_SEAMS, the rationale in DECISIONS), not {}",
                other.unwrap_or("unset")
            )],
        }
    }

    /// A builder report: `Some(next step)` when the chain goes on, `None` when it stopped.
    pub(super) fn builder(&mut self, b: &BuilderReport) -> Option<(Action, String)> {
        let phase = b.phase_id.clone().or(self.a.phase_cursor.clone());
        match (b.status.as_str(), b.phase_status.as_deref()) {
            ("PASS", _) => {
                let mut problems = b.pass_problems();
                problems.extend(self.seam_problems(b, phase.as_deref()));
                if !problems.is_empty() {
                    self.invalid("builder", &problems);
                    return None;
                }
                self.result("builder", AgentResult::built(phase.clone()));
                if !b.scope_increases.is_empty() && !self.full_graph() {
                    self.changes.push(Change::BuildScope(BuildScope::Standard));
                    self.changes.push(Change::Status(HistoryEntry::new(
                        "build_scope_escalated",
                        phase.as_deref(),
                        "scope grew: the full review chain runs",
                    )));
                    return Some((Action::RunReviewAndHunt, "scope grew beyond trivial".into()));
                }
                if self.full_graph() {
                    Some((
                        Action::RunReviewAndHunt,
                        "built: review and hunt next".into(),
                    ))
                } else {
                    Some((Action::RunVerifier, "built: verify next".into()))
                }
            }
            ("FAIL", Some(state @ ("blocked" | "partial"))) => {
                if let Some(p) = &phase {
                    self.changes.push(Change::PhaseStatus {
                        phase: p.clone(),
                        status: match state {
                            "blocked" => PhaseStatus::Blocked,
                            _ => PhaseStatus::Partial,
                        },
                    });
                }
                if let Some(proof) = b.proof_status.as_deref().and_then(ProofStatus::parse) {
                    self.changes.push(Change::ProofStatus(proof));
                }
                // Blocked items on the trivial graph: the work was not trivial; whatever
                // the user decides, the full review chain runs after it (build-workflow.md:95).
                if !b.blocked_items.is_empty() && !self.full_graph() {
                    self.changes.push(Change::BuildScope(BuildScope::Standard));
                    self.changes.push(Change::Status(HistoryEntry::new(
                        "build_scope_escalated",
                        phase.as_deref(),
                        "blocked items: the full review chain runs",
                    )));
                }
                let items = b.blocked_items.join("; ");
                if b.checkpoint_type.as_deref() == Some("decision") {
                    self.stop(
                        Action::PauseForCheckpointDecision,
                        Some(Gate::CheckpointDecision),
                        format!("phase {state}, the user decides: {items}"),
                    );
                } else {
                    self.stop(
                        Action::StopForBlockedPhase,
                        Some(Gate::PhaseBlocked),
                        format!("phase {state}: {items}"),
                    );
                }
                None
            }
            ("FAIL", _) => {
                let reason = b
                    .remediation_reason
                    .clone()
                    .unwrap_or("builder failed".into());
                self.remediate("component-builder", "ALL_ISSUES", &reason);
                None
            }
            (other, _) => {
                self.invalid(
                    "builder",
                    &[format!("STATUS {other:?} is not PASS or FAIL")],
                );
                None
            }
        }
    }

    /// An investigator report: true when the fix is proven and the chain goes on.
    pub(super) fn investigator(&mut self, i: &InvestigatorReport) -> bool {
        match i.status.as_str() {
            "FIXED" => {
                let problems = i.fixed_problems();
                if !problems.is_empty() {
                    self.invalid("investigator", &problems);
                    return false;
                }
                self.result("investigator", AgentResult::status("FIXED"));
                true
            }
            // A research round just ended, asked for by the investigator or by the user at its
            // blocked question: it investigates again with it.
            "BLOCKED" if self.inputs.outputs.research.is_some() => {
                if let Some(r) = &self.inputs.outputs.research {
                    self.changes.push(Change::ResearchQuality {
                        web: r.web_status.clone(),
                        github: r.github_status.clone(),
                        overall: r.overall_quality.clone(),
                    });
                }
                let reason =
                    "research round done (partial results count): investigate again with it";
                self.reinvoke_lane(reason);
                self.stop(Action::ReinvokeInvestigator, None, reason);
                false
            }
            "BLOCKED" if i.needs_external_research => {
                if self.a.research_rounds.len() >= MAX_RESEARCH_ROUNDS {
                    self.stop(
                        Action::AskUser,
                        Some(Gate::Clarification),
                        "research rounds used up",
                    );
                } else {
                    let reason = i
                        .research_reason
                        .clone()
                        .unwrap_or("external research".into());
                    for phase in [Phase::ResearchWeb.as_str(), Phase::ResearchGithub.as_str()] {
                        self.follow_ups.push(FollowUp {
                            kind: TaskKind::Research,
                            phase: phase.into(),
                            scope: "N/A".into(),
                            reason: reason.clone(),
                        });
                    }
                    self.stop(Action::SpawnResearch, None, reason);
                }
                false
            }
            "BLOCKED" => {
                self.stop(
                    Action::AskUser,
                    Some(Gate::Clarification),
                    "investigator blocked: research, manual fix or abort",
                );
                false
            }
            "INVESTIGATING" => {
                // One investigator of a fan-out goes on in its own files, counted on its own.
                let lane = self.reporting_lane();
                let continuations = self
                    .tasks
                    .iter()
                    .filter(|t| t.node() == Some(Phase::DebugInvestigate))
                    .filter(|t| lane.is_none() || t.scope == lane)
                    .count()
                    .saturating_sub(1);
                if continuations >= MAX_INVESTIGATION_CONTINUATIONS {
                    self.stop(
                        Action::AskUser,
                        Some(Gate::Clarification),
                        "investigation continued twice",
                    );
                } else {
                    let mut reason = i
                        .root_cause
                        .clone()
                        .unwrap_or("Continue investigation".into());
                    if let Some(files) = &lane {
                        reason.push_str(&format!(
                            " (continue WITHIN your scoped files only: {files})"
                        ));
                    }
                    self.follow_ups.push(FollowUp {
                        kind: TaskKind::Agent,
                        phase: Phase::DebugInvestigate.as_str().into(),
                        scope: lane.unwrap_or("N/A".into()),
                        reason: reason.clone(),
                    });
                    self.decide(Action::ContinueInvestigation, reason);
                }
                false
            }
            other => {
                self.invalid(
                    "investigator",
                    &[format!("STATUS {other:?} is not a state")],
                );
                false
            }
        }
    }

    /// The verifier passed: the phase exits, the cursor moves, and the chain's tail follows.
    pub(super) fn phase_exit(&mut self, kind: WorkflowKind) -> (Action, String) {
        self.changes.push(Change::ProofStatus(ProofStatus::Passed));
        if kind == WorkflowKind::Debug {
            return self.memory_finalize("fix verified");
        }
        let cursor = self.a.phase_cursor.clone();
        if let Some(c) = &cursor {
            self.changes.push(Change::PhaseStatus {
                phase: c.clone(),
                status: PhaseStatus::Completed,
            });
        }
        let listed: Vec<&str> = self
            .a
            .normalized_phases
            .iter()
            .map(|p| p.phase_id.as_str())
            .collect();
        let position = cursor
            .as_deref()
            .and_then(|c| listed.iter().position(|p| *p == c));
        let next_listed = position
            .and_then(|i| listed.get(i + 1))
            .map(|p| p.to_string());
        // Past the last listed phase the cursor is empty; with no phases listed (an artifact
        // from elsewhere) it moves to the next number.
        let next = match listed.is_empty() {
            true => cursor.as_deref().and_then(next_phase_id),
            false => next_listed.clone(),
        };
        if cursor.is_some() || next.is_some() {
            self.changes.push(Change::PhaseCursor(next.clone()));
        }
        if let Some(n) = next_listed {
            self.changes.push(Change::Convergence(Convergence::Pending));
            return (Action::RunBuilder, format!("phase exit passed: build {n}"));
        }
        match self.final_review() {
            FinalReview::NotOffered if listed.len() > 1 && self.full_graph() => {
                return (
                    Action::OfferFinalReview,
                    format!(
                        "all {} phases verified: a final review of the whole branch looks for what crosses phases",
                        listed.len()
                    ),
                )
            }
            FinalReview::Fixing => {
                self.changes.push(Change::FinalReview("fixed"));
                return self.chain_tail("the final review's findings are fixed and verified");
            }
            _ => {}
        }
        self.chain_tail("last phase verified")
    }

    /// A remediation finished: circuit breaker, proof of the fix, then the re-check tasks.
    pub(super) fn recheck(&mut self, kind: WorkflowKind, remfix: &Task) {
        let completed = self
            .tasks
            .iter()
            .filter(|t| t.kind == Some(TaskKind::Remfix) && t.status == Some(TaskStatus::Completed))
            .count()
            .max(self.a.remediation_history.len());
        if completed >= self.breaker_limit() {
            self.stop(
                Action::PauseForCircuitBreaker,
                Some(Gate::CircuitBreaker),
                format!(
                    "{completed} remediation cycles done{}: a human decides what next",
                    self.allowed_more()
                ),
            );
            return;
        }
        if !self
            .inputs
            .outputs
            .remfix
            .as_ref()
            .is_some_and(|r| r.is_proven())
        {
            self.stop(
                Action::ReturnRemfixForProof,
                None,
                "the remediation names no covering tests, command and output: no re-review on an unproven fix",
            );
            return;
        }
        let scope = remfix.scope.clone().unwrap_or("N/A".into());
        let reason = remfix.reason.clone().unwrap_or("N/A".into());
        let hunt = kind == WorkflowKind::Build && self.full_graph();
        let verifier_pending = self.tasks.iter().any(|t| {
            t.is_open()
                && matches!(
                    t.node(),
                    Some(Phase::BuildVerify | Phase::DebugVerify | Phase::ReVerify)
                )
        });
        let mut phases = vec![(Phase::ReReview.as_str(), TaskKind::Agent)];
        if hunt {
            phases.push((Phase::ReHunt.as_str(), TaskKind::Agent));
        }
        if !verifier_pending {
            phases.push((Phase::ReVerify.as_str(), TaskKind::Reverify));
        }
        for (phase, kind) in phases {
            self.follow_ups.push(FollowUp {
                kind,
                phase: phase.into(),
                scope: scope.clone(),
                reason: reason.clone(),
            });
        }
        self.changes.push(Change::LoopCounts {
            re_review: 1,
            re_hunt: u32::from(hunt),
            re_verify: 1,
        });
        self.changes.push(Change::Convergence(Convergence::Pending));
        self.decide(Action::SpawnRecheckTasks, "remediation proven: re-check it");
    }
}

/// Where the final whole-branch review of a planned BUILD stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FinalReview {
    NotOffered,
    /// Chosen: its reviewer's verdict is being decided.
    Reviewing,
    /// Its findings are being fixed and re-checked.
    Fixing,
    /// Clean, fixed or skipped.
    Done,
}

/// `phase-1` → `phase-2`: the id with its trailing number incremented.
pub(super) fn next_phase_id(id: &str) -> Option<String> {
    let digits = id.len() - id.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return None;
    }
    let (stem, number) = id.split_at(id.len() - digits);
    let n: u64 = number.parse().ok()?;
    Some(format!("{stem}{}", n + 1))
}
