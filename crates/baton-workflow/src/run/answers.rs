//! What an answer at a question asked before or between the agents' work sets up: a BUILD
//! turned PLAN or a REVIEW turned BUILD, the worktree offer that waited, a request made specific,
//! a plan phase's checkpoint, PLAN's research offer and Doubt Pass, and the deferred findings'
//! triage before finishing.

use super::*;
use crate::artifact::DeferredFinding;
use crate::artifact::{HistoryEntry, Phase};
use crate::results::GateChoice;
use crate::state::{Gate, Record, WorkflowState, WorktreeOffer};

impl Runner<'_> {
    /// The full graph of `kind` after the tasks the workflow has, its ids and blockers moved
    /// past theirs.
    fn add_graph(&self, v: &mut WorkflowState, kind: WorkflowKind) {
        let offset = v.tasks.len();
        let shift = |id: &str| {
            let n: usize = id.trim_start_matches('t').parse().unwrap_or(0);
            format!("t{}", n + offset)
        };
        for mut t in graph::initial(kind, false, &self.id) {
            t.id = shift(&t.id);
            t.blocked_by = t.blocked_by.iter().map(|b| shift(b)).collect();
            v.tasks.push(t);
        }
    }

    /// `plan` at the plan-first gate: the workflow becomes a PLAN (the BUILD's tasks are pruned,
    /// PLAN's are added).
    pub(super) fn plan_first(&self, a: &mut Artifact, v: &mut WorkflowState) {
        // The workflow becomes a PLAN: the BUILD's tasks are pruned, PLAN's are added.
        for t in v.tasks.iter_mut() {
            t.status = Some(TaskStatus::Deleted);
        }
        self.add_graph(v, WorkflowKind::Plan);
        a.workflow_type = Some(WorkflowKind::Plan);
        a.build_scope = None;
        a.phase_cursor = None;
        a.normalized_phases = Vec::new();
        a.traceability.phases = Vec::new();
        a.status_history.push(HistoryEntry::new(
            "scope_decision",
            None,
            "plan first: the BUILD became a PLAN",
        ));
        v.host.worktree_offer = Some(WorktreeOffer::Skipped("planned first".into()));
    }

    /// `start build to fix` after a REVIEW that requested changes (cc10x: a BUILD with the
    /// reviewer's findings as its input): the workflow goes on as that BUILD — its request
    /// names the findings, its builder is handed them, the REVIEW's memory step gives way to the
    /// BUILD's graph, and the worktree offer is made as for any BUILD.
    pub(super) fn review_to_build(&self, a: &mut Artifact, v: &mut WorkflowState) {
        let findings: Vec<String> = v
            .host
            .batch
            .iter()
            .filter_map(|id| v.host.outputs.get(id))
            .flat_map(|o| crate::contract::merge::findings_in(&o.text))
            .map(|f| format!("- [{}] {}", f.severity.name(), f.text))
            .collect();
        let list = match findings.is_empty() {
            true => "(the review's report lists them)".to_string(),
            false => findings.join("\n"),
        };
        let asked = a.user_request.clone().unwrap_or_default();
        a.user_request = Some(format!(
            "Fix the findings of the review ({}):\n{list}",
            asked.trim()
        ));
        for t in v.tasks.iter_mut().filter(|t| t.is_open()) {
            t.status = Some(TaskStatus::Deleted);
        }
        self.add_graph(v, WorkflowKind::Build);
        if v.host.doc_sync_skipped {
            graph::skip_doc_sync(&mut v.tasks);
        }
        a.workflow_type = Some(WorkflowKind::Build);
        super::first_phase(a, false);
        a.status_history.push(HistoryEntry::new(
            "build_transition",
            None,
            "start build to fix: the REVIEW goes on as a BUILD with its findings",
        ));
        // The review's outputs are its own: the BUILD decides from a batch of its own.
        v.host.batch.clear();
        v.host.guidance = Some(format!("Fix these review findings:\n{list}"));
        v.host.carry_guidance = true;
        self.offer_worktree(a, v);
    }

    /// `build` at the plan-first gate: the worktree offer that waited for this answer.
    pub(super) fn build_directly(&self, a: &mut Artifact, v: &mut WorkflowState) {
        a.status_history
            .push(HistoryEntry::new("scope_decision", None, "build directly"));
        self.offer_worktree(a, v);
    }

    /// The worktree offer that waited for the answer to a question asked first.
    pub(super) fn offer_worktree(&self, a: &mut Artifact, v: &mut WorkflowState) {
        let auto = v.host.auto_proceed;
        let isolated = isolate_build(
            self.env,
            &self.root,
            &self.id,
            false,
            v.host.isolate_asked,
            auto,
        );
        if let Some(e) = preflight::settle_workspace(isolated, &self.root, a, v) {
            v.state = RunState::Failed;
            v.host.failure = Some(RunError::Worktree(e).to_string());
        }
    }

    /// The answer at the intent readiness gate: the request the agents get holds it.
    pub(super) fn request_made_specific(
        &self,
        a: &mut Artifact,
        v: &mut WorkflowState,
        text: &str,
    ) {
        let request = a.user_request.clone().unwrap_or_default();
        a.user_request = Some(format!(
            "{}\n\nWhat the user specified when asked: {}",
            request.trim(),
            text.trim()
        ));
        a.status_history.push(HistoryEntry::new(
            "intent_readiness",
            None,
            "the request was made specific by the user's answer",
        ));
        if self.kind() == WorkflowKind::Build {
            self.offer_worktree(a, v);
        }
    }

    /// A plan phase's checkpoint answered. Before a `decision` or `human_action` phase the words
    /// go to its builder (a decision is also kept among the approved decisions); at a
    /// `human_verify` phase `verified` lets the loop go on, and other words are what a person
    /// found wrong: a fix runs with them, then the phase is reviewed and verified (and asked)
    /// again. The loop then decides again from the outputs it stopped on.
    pub(super) fn phase_answered(
        &self,
        a: &mut Artifact,
        v: &mut WorkflowState,
        gate: Gate,
        text: &str,
    ) {
        let phase = v.host.phase_gate.take().unwrap_or_default();
        let words = text.trim();
        if gate == Gate::HumanVerify && !words.eq_ignore_ascii_case("verified") {
            let reason = format!("a person verifying phase {phase} found: {words}");
            v.host.guidance = Some(words.to_string());
            self.add_remfix(a, v, "ALL_ISSUES", "human-verify", &reason, &reason);
            return;
        }
        v.host.phase_checkpoints.push(format!("{gate}:{phase}"));
        match gate {
            Gate::HumanVerify => {}
            Gate::PhaseDecision => {
                a.approved_decisions.push(format!("{phase}: {words}"));
                v.host.guidance = Some(words.to_string());
                v.host.carry_guidance = true;
            }
            _ => {
                v.host.guidance = Some(words.to_string());
                v.host.carry_guidance = true;
            }
        }
    }

    /// `remediate` (hunter findings) or `fix` (revert gate): the fix is created.
    pub(super) fn remediate_at(&self, gate: Gate, a: &mut Artifact, v: &mut WorkflowState) {
        let (origin, reason) = match gate {
            Gate::HunterFindings => ("failure-hunter", "the failure-hunter's HIGH findings"),
            _ => ("integration-verifier", "verification failed"),
        };
        if gate == Gate::RevertDecision {
            a.results.revert_decision = Some(GateChoice::new(a.phase_cursor.clone(), "fix"));
        }
        let why = format!("{gate} answered: remediate");
        self.add_remfix(a, v, "ALL_ISSUES", origin, reason, &why);
    }

    /// A fix a gate's answer asks for, on a phase whose remediation went two cycles without
    /// converging: the research round comes first, as the engine's own fixes wait for it
    /// (`engine::stuck_without_research`); the engine creates the fix once the round is in.
    /// True when the research was set up instead of the fix.
    pub(super) fn research_first(
        &self,
        a: &mut Artifact,
        v: &mut WorkflowState,
        scope: &str,
        origin: &str,
        reason: &str,
    ) -> bool {
        if !crate::engine::stuck_without_research(a, &v.tasks) {
            return false;
        }
        let why = format!(
            "{}: {reason}",
            crate::engine::stuck_reason(a.phase_cursor.as_deref())
        );
        let mut batch = Vec::new();
        for phase in [Phase::ResearchWeb, Phase::ResearchGithub] {
            let t = graph::task(
                &v.tasks,
                &self.id,
                graph::NewTask {
                    kind: TaskKind::Research,
                    phase: phase.as_str(),
                    origin: "router",
                    scope,
                    reason: &why,
                    blocked_by: Vec::new(),
                },
            );
            batch.push(t.id.clone());
            v.tasks.push(t);
        }
        let mut entry = HistoryEntry::new("research_triggered", a.phase_cursor.as_deref(), &why);
        entry.origin = Some(origin.to_string());
        a.status_history.push(entry);
        v.host.batch = batch;
        v.host.next = Some(Action::SpawnResearch);
        true
    }

    /// The which-governs answer: recorded in `results.plan_adjudications` and memory's
    /// Decisions, and handed to the next dispatch; the batch is then decided again (the engine
    /// reads the answer).
    pub(super) fn adjudicated(
        &self,
        a: &mut Artifact,
        v: &mut WorkflowState,
        plan: bool,
    ) -> Result<(), RunError> {
        let conflict = self
            .outputs_of(a, v)
            .ok()
            .and_then(|o| o.reviewer?.plan_conflict)
            .ok_or_else(|| {
                RunError::EngineStop("the review's plan conflict is no longer readable".into())
            })?;
        let (governs, line, guidance) = if plan {
            (
                "plan",
                format!(
                    "Plan governs (wf:{}): finding dismissed: {}; the plan's mandate stands: {}",
                    self.id, conflict.finding, conflict.mandate
                ),
                format!(
                    "The user decided the plan governs over the finding \"{}\": keep the plan's mandate \"{}\" as it is, and fix only the other findings.",
                    conflict.finding, conflict.mandate
                ),
            )
        } else {
            (
                "finding",
                format!(
                    "Finding governs (wf:{}): the plan's mandate \"{}\" is overridden by: {}",
                    self.id, conflict.mandate, conflict.finding
                ),
                format!(
                    "The user decided the finding governs over the plan's mandate \"{}\": apply the finding \"{}\".",
                    conflict.mandate, conflict.finding
                ),
            )
        };
        a.results
            .plan_adjudications
            .push(crate::results::PlanAdjudication {
                phase: a.phase_cursor.clone(),
                finding: conflict.finding,
                mandate: conflict.mandate,
                governs: governs.into(),
            });
        v.host.guidance = Some(guidance);
        v.host.carry_guidance = true;
        MemoryDir::new(&self.root)
            .append(MemoryFile::ActiveContext, "Decisions", &[line])
            .map_err(|e| RunError::Memory(e.to_string()))
    }

    /// The deferred findings' triage (cc10x finishing 1a): each finding and `results` keep the
    /// disposition; accepted ones are recorded in memory's Decisions. No code is changed for
    /// any answer. Returns why the workflow goes on.
    pub(super) fn triaged(
        &self,
        a: &mut Artifact,
        disposition: &'static str,
    ) -> Result<&'static str, RunError> {
        for f in &mut a.deferred_findings {
            f.disposition = Some(disposition.to_string());
        }
        a.results.deferred_triage = Some(crate::results::GateChoice::new(
            a.phase_cursor.clone(),
            disposition,
        ));
        if disposition != "accepted" {
            return Ok("the deferred findings are triaged");
        }
        let lines: Vec<String> = a
            .deferred_findings
            .iter()
            .map(|f| {
                format!(
                    "Accepted deferred finding (wf:{}): [{}] {}",
                    self.id, f.finding.severity, f.finding.text
                )
            })
            .collect();
        MemoryDir::new(&self.root)
            .append(MemoryFile::ActiveContext, "Decisions", &lines)
            .map_err(|e| RunError::Memory(e.to_string()))?;
        Ok("the deferred findings are accepted")
    }

    /// A clarification answer, persisted in memory's Decisions: a PLAN's
    /// (remediation-and-research.md:87) as `Plan clarification (wf:ID): …`, a BUILD's
    /// (build-workflow.md:65-66) as `Build clarification [PHASE]: …`.
    pub(super) fn keep_clarification(
        &self,
        gate: Gate,
        phase: Option<&str>,
        text: &str,
    ) -> Result<(), RunError> {
        let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let line = match (self.kind(), gate) {
            (WorkflowKind::Plan, Gate::Clarification) => {
                format!("Plan clarification (wf:{}): {words}", self.id)
            }
            (
                WorkflowKind::Build,
                Gate::Clarification | Gate::CheckpointDecision | Gate::PhaseBlocked,
            ) => format!(
                "Build clarification [{}] (wf:{}): {words}",
                phase.unwrap_or("build"),
                self.id
            ),
            _ => return Ok(()),
        };
        MemoryDir::new(&self.root)
            .append(MemoryFile::ActiveContext, "Decisions", &[line])
            .map_err(|e| RunError::Memory(e.to_string()))
    }

    /// PLAN's research offer answered: `research` adds the web and GitHub researchers, which the
    /// planner waits for, and runs them; `plan now` goes on to the planner.
    pub(super) fn research_before_plan(
        &self,
        a: &mut Artifact,
        v: &mut WorkflowState,
        first: bool,
    ) {
        let Some(offer) = a.results.research_offer.as_mut() else {
            return;
        };
        offer.choice = Some(if first { "research" } else { "plan now" }.to_string());
        if !first {
            return;
        }
        let reason = format!("Research before planning: {}", offer.topics.join("; "));
        let ids = graph::research_before(&mut v.tasks, &self.id, &reason, Phase::PlanCreate);
        v.host.batch = ids;
        v.host.next = Some(Action::SpawnResearch);
    }

    /// PLAN's Doubt Pass answered: `run doubt pass` adds a brainstorm task in doubt mode, which
    /// the fresh review waits for; `no doubt pass` goes on to the review already set up.
    pub(super) fn doubt_pass(&self, a: &mut Artifact, v: &mut WorkflowState, run: bool) {
        a.results.doubt_pass = Some(crate::results::DoubtPass {
            choice: if run { "run" } else { "skip" }.into(),
            file: None,
        });
        if !run {
            return;
        }
        let plan = a
            .plan_file
            .clone()
            .unwrap_or_else(|| "the saved plan".into());
        let reason = format!(
            "Doubt Pass on {plan}: do not explore the request again. Argue against the plan's key decision as a skeptic would: what breaks it, what it assumes without proof, which alternative it dismissed too fast, what is irreversible. Save the objections, strongest first, as `docs/plans/<topic>-doubts.md` and give it as DESIGN_FILE (STATUS DESIGN_SAVED); NEEDS_CLARIFICATION only for an objection that needs the user's decision."
        );
        let mut t = graph::task(
            &v.tasks,
            &self.id,
            graph::NewTask {
                kind: TaskKind::Agent,
                phase: Phase::Brainstorm.as_str(),
                origin: "router",
                scope: "N/A",
                reason: &reason,
                blocked_by: Vec::new(),
            },
        );
        t.plan = a.plan_file.clone().or(t.plan);
        let id = t.id.clone();
        v.tasks.push(t);
        for t in v.tasks.iter_mut() {
            if t.node() == Some(Phase::PlanReviewGap1) && t.is_open() {
                t.blocked_by.push(id.clone());
            }
        }
        v.host.batch = vec![id];
        v.host.next = Some(Action::RunBrainstorming);
    }
}

/// Whether `gate` is a plan phase's own checkpoint (its `checkpoint_type`).
pub(super) fn phase_gate(gate: Gate) -> bool {
    matches!(
        gate,
        Gate::PhaseDecision | Gate::HumanAction | Gate::HumanVerify
    )
}

/// `proceed` at the hunter-findings gate: the findings go on the deferred list, with their
/// phase; the batch is decided again and the chain goes on to the verifier.
pub(super) fn proceed(a: &mut Artifact, v: &WorkflowState) {
    a.results.hunter_findings = Some(GateChoice::new(a.phase_cursor.clone(), "proceed"));
    for finding in decide::findings_ledger(v).0 {
        a.deferred_findings.push(DeferredFinding {
            finding,
            phase: a.phase_cursor.clone(),
            disposition: None,
        });
    }
}

/// The triage question of a full BUILD verified with deferred findings not triaged yet (and
/// the note its record gets), `None` otherwise: like the finishing menu, only for the full
/// BUILD (build-workflow.md:222).
pub(super) fn triage_question(
    r: &Record,
    kind: WorkflowKind,
    proven: bool,
) -> Option<(String, String)> {
    let deferred = &r.artifact.deferred_findings;
    let asked = kind == WorkflowKind::Build
        && r.artifact.build_scope == Some(crate::artifact::BuildScope::Standard)
        && proven
        && r.state.host.finished.is_none()
        && !deferred.is_empty()
        && r.artifact.results.deferred_triage.is_none();
    if !asked {
        return None;
    }
    let listed: Vec<String> = deferred
        .iter()
        .map(|f| {
            let phase = f
                .phase
                .as_deref()
                .map(|p| format!(" ({p})"))
                .unwrap_or_default();
            format!("[{}] {}{phase}", f.finding.severity, f.finding.text)
        })
        .collect();
    let n = listed.len();
    let (s, verb) = if n == 1 { ("", "s") } else { ("s", "") };
    Some((
        format!(
            "The work is verified (the workflow ends once this is answered); {n} deferred finding{s} stay{verb} open: {}",
            listed.join("; ")
        ),
        format!("{n} deferred finding{s} to triage before finishing"),
    ))
}
