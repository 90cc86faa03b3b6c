//! Ending and answering: checkpoints, the user's answers, memory finalization and the brief.

use super::answers::{phase_gate, proceed, triage_question};
use super::finishing::{apply_finish, commit_worktree};
use super::*;
use crate::artifact::HistoryEntry;
use crate::artifact::Phase;
use crate::event::{
    AnswerDetails, CheckpointAnswered, CheckpointDetails, CheckpointRequested, EventBody,
};
use crate::results::{FinalReview, GateChoice};
use crate::state::{Checkpoint, Gate, GivenAnswer, Record, RunState, WorkflowState};

impl Runner<'_> {
    /// Waits at a checkpoint, or takes its recommended option under `AUTO_PROCEED`.
    pub(super) async fn stop_at(&self, gate_name: Gate, reason: &str) -> Result<(), RunError> {
        self.stop_at_phase(gate_name, reason, None).await
    }

    /// [`Runner::stop_at`] for a checkpoint about plan phase `phase` (kept in `phase_gate`).
    pub(super) async fn stop_at_phase(
        &self,
        gate_name: Gate,
        reason: &str,
        phase: Option<String>,
    ) -> Result<(), RunError> {
        let mut r = self.record();
        r.state.host.phase_gate = phase;
        let brief = gate::brief_of(&r, &format!("checkpoint: {gate_name}"));
        let cp = gate::checkpoint(gate_name, reason, brief);
        let auto = r.state.host.auto_proceed
            && gate::risk(gate_name) == crate::memory::GateRisk::Ordinary
            && cp.recommended.is_some();
        r.state.state = RunState::Checkpoint;
        r.state.checkpoint = Some(cp.clone());
        let ev = EventBody::CheckpointRequested(CheckpointRequested {
            gate: Some(gate_name.as_str().to_string()),
            question: Some(cp.question.clone()),
            details: Some(CheckpointDetails {
                options: cp.options.clone(),
                recommended: cp.recommended.clone(),
                ..CheckpointDetails::default()
            }),
        });
        self.commit(ev, r)?;
        if gate_name == Gate::ScopeDecision {
            // cc10x 1a-SCOPE: the pending scope is marked in memory until the answer resolves it.
            let marker = format!(
                "[SCOPE-DECISION-PENDING: wf:{} reason:{}]",
                self.id,
                reason.trim()
            );
            MemoryDir::new(&self.root)
                .append(MemoryFile::ActiveContext, "Decisions", &[marker])
                .map_err(|e| RunError::Memory(e.to_string()))?;
        }
        if matches!(gate_name, Gate::ScopeDecision | Gate::PlanFirst) {
            let r = self.record();
            let ev = EventBody::ScopeDecisionRequested(crate::event::Fields {
                phase: r.artifact.phase_cursor.clone(),
                reason: Some(reason.to_string()),
                details: Some(serde_json::json!({"options": cp.options})),
                ..crate::event::Fields::default()
            });
            self.commit(ev, r)?;
        }
        if auto {
            let pick = cp.recommended.clone().unwrap_or_default();
            let choice = gate::read_answer(&cp, &pick).map_err(RunError::BadAnswer)?;
            let memory = MemoryDir::new(&self.root);
            let _ = memory.append(
                MemoryFile::ActiveContext,
                "Decisions",
                &[format!(
                    "AUTO_PROCEED took `{pick}` at {gate_name} ({})",
                    self.id
                )],
            );
            self.say(&format!("AUTO_PROCEED: {gate_name} → {pick}"));
            // Boxed: an answer can stop at a checkpoint again.
            return Box::pin(self.answer(self.record(), &cp, &pick, choice)).await;
        }
        self.say(&format!("checkpoint {gate_name}: {}", cp.question));
        Ok(())
    }

    /// Records the user's answer (their exact words) and sets up what it asks for.
    pub(super) async fn answer(
        &self,
        r: Record,
        cp: &Checkpoint,
        text: &str,
        choice: Answer,
    ) -> Result<(), RunError> {
        let Record {
            artifact: mut a,
            state: mut v,
        } = r;
        let answered = |choice: Option<String>| {
            EventBody::CheckpointAnswered(CheckpointAnswered {
                gate: Some(cp.gate.as_str().to_string()),
                choice,
                details: Some(AnswerDetails {
                    answer: text.to_string(),
                    ..AnswerDetails::default()
                }),
            })
        };
        // The answer is kept word for word and the workflow runs again.
        let settle = |v: &mut WorkflowState| {
            v.host.answers.push(GivenAnswer {
                gate: cp.gate,
                answer: text.to_string(),
                at: baton_state::now_rfc3339(),
            });
            v.checkpoint = None;
            v.state = RunState::Running;
        };
        // Discarding deletes the workflow's work: it is asked again before anything is removed.
        if choice == Answer::Finish("discard") && cp.gate == Gate::Finish {
            if let Some(wt) = v.host.worktree.clone() {
                settle(&mut v);
                self.commit(answered(Some(format!("{choice:?}"))), Record::new(a, v))?;
                let what = format!(
                    "Discarding deletes worktree {} and branch {} with all of this workflow's work",
                    wt.path.display(),
                    wt.branch
                );
                return self.stop_at(Gate::ConfirmDiscard, &what).await;
            }
        }
        // The finishing choice acts first: when git refuses, nothing is recorded and the
        // question stays.
        let finished = match (&choice, &v.host.worktree) {
            (Answer::Finish(c), Some(wt)) => {
                let verify = self.post_merge_check(&a);
                Some(
                    apply_finish(&self.root, wt, c, verify)
                        .await
                        .map_err(RunError::FinishChoice)?,
                )
            }
            _ => None,
        };
        settle(&mut v);
        a.pending_gate = None;
        // A question of the request or of a plan phase: its words are taken, and the loop
        // decides again from where it stopped.
        if choice != Answer::Abort && (cp.gate == Gate::IntentReadiness || phase_gate(cp.gate)) {
            match cp.gate {
                Gate::IntentReadiness => self.request_made_specific(&mut a, &mut v, text),
                gate => self.phase_answered(&mut a, &mut v, gate, text),
            }
            return self.commit(answered(Some(format!("{choice:?}"))), Record::new(a, v));
        }
        if choice == Answer::Retry {
            self.keep_clarification(cp.gate, a.phase_cursor.as_deref(), text)?;
        }
        match choice {
            Answer::Abort => {
                v.state = RunState::Stopped;
                v.host.failure = Some(format!("stopped at the {} checkpoint: {text}", cp.gate));
            }
            Answer::Scope(scope) => {
                let reason = format!("review findings, scope {scope}");
                let why = format!("scope decision: {scope}");
                self.add_remfix(&mut a, &mut v, scope, "code-reviewer", &reason, &why);
            }
            Answer::Remediate => self.remediate_at(cp.gate, &mut a, &mut v),
            Answer::Proceed => proceed(&mut a, &v),
            Answer::Revert => self.revert(&mut a, &mut v, text),
            Answer::Accept => {
                v.host.guidance = None;
                self.commit(answered(None), Record::new(a, v))?;
                return self.finish(Action::MemoryFinalize, "accepted at the circuit breaker: the open findings are deferred and the work is unverified").await;
            }
            Answer::PlanGoverns(plan) => self.adjudicated(&mut a, &mut v, plan)?,
            Answer::Triage(disposition) => {
                let why = self.triaged(&mut a, disposition)?;
                self.commit(answered(Some(format!("{choice:?}"))), Record::new(a, v))?;
                return self.finish(Action::MemoryFinalize, why).await;
            }
            Answer::Finish(choice) => {
                let did = finished.unwrap_or_else(|| "no worktree to finish".into());
                v.host.finished = Some(did.clone());
                a.results.finishing = Some(GateChoice::new(a.phase_cursor.clone(), choice));
                self.commit(answered(None), Record::new(a, v))?;
                return self.finished_with(choice, did).await;
            }
            Answer::StartBuild(true) => self.review_to_build(&mut a, &mut v),
            Answer::StartBuild(false) => done_for_now(&mut a, &mut v),
            Answer::PlanFirst(true) => self.plan_first(&mut a, &mut v),
            Answer::PlanFirst(false) => self.build_directly(&mut a, &mut v),
            Answer::FinalReview(run) => self.final_review(&mut a, &mut v, run),
            Answer::Research(first) => self.research_before_plan(&mut a, &mut v, first),
            Answer::Doubt(run) => self.doubt_pass(&mut a, &mut v, run),
            Answer::OneMoreCycle => {
                v.host.breaker_allowance += 1;
                v.host.guidance = Some(text.to_string());
            }
            Answer::Retry => self.retry(&mut v, text),
        }
        let fix = match choice {
            Answer::Scope(_) | Answer::Remediate => v
                .host
                .batch
                .first()
                .and_then(|id| v.task(id))
                .filter(|t| t.kind == Some(TaskKind::Remfix))
                .cloned(),
            _ => None,
        };
        self.commit(answered(Some(format!("{choice:?}"))), Record::new(a, v))?;
        self.scope_resolved(cp.gate, text, &choice)?;
        match fix {
            Some(t) => self.remediation_created(&t),
            None => Ok(()),
        }
    }

    /// `revert` at the revert gate: the workflow stops, saying how to put the phase's base back,
    /// and memory keeps the decision.
    fn revert(&self, a: &mut Artifact, v: &mut WorkflowState, text: &str) {
        v.state = RunState::Stopped;
        let base = a
            .results
            .git_base_sha
            .clone()
            .filter(|b| b != agent::UNAVAILABLE_BASE);
        let how = match base {
            Some(b) => format!(
                "to put the phase's base back: git restore --source {b} --worktree -- . (and `git clean -n` lists the files it added)"
            ),
            None => "no base was recorded: revert the phase's change by hand".into(),
        };
        v.host.failure = Some(format!(
            "reverted at the revert_decision checkpoint (the verifier failed and recommended it): {how}"
        ));
        let memory = MemoryDir::new(&self.root);
        let _ = memory.append(
            MemoryFile::ActiveContext,
            "Decisions",
            &[format!(
                "Revert chosen for {} phase {} after a failed verification ({})",
                self.id,
                a.phase_cursor.as_deref().unwrap_or("?"),
                text.trim()
            )],
        );
    }

    /// The answer at the final-review gate: the whole-branch review task, or skipped.
    fn final_review(&self, a: &mut Artifact, v: &mut WorkflowState, run: bool) {
        let status = if run {
            let mut t = graph::task(&v.tasks, &self.id, graph::NewTask { kind: TaskKind::Agent, phase: Phase::BuildReview.as_str(), origin: "router", scope: "N/A", reason: "Final whole-branch review: read every phase's change together and look for what crosses phases (a seam one phase made and another misuses, contracts that drifted, abstractions duplicated or diverged)", blocked_by: Vec::new() });
            t.plan = a.plan_file.clone().or(t.plan);
            let id = t.id.clone();
            v.tasks.push(t);
            v.host.batch = vec![id.clone()];
            v.host.next = Some(Action::RunReviewAndHunt);
            FinalReview::running(id)
        } else {
            FinalReview::skipped()
        };
        a.results.final_branch_review = Some(status);
    }

    /// `retry`: the stopped tasks run again with the answer as guidance; a planner's question
    /// answered restarts PLAN with its whole review DAG.
    fn retry(&self, v: &mut WorkflowState, text: &str) {
        v.host.guidance = Some(text.to_string());
        // The stopped tasks run again with the answer.
        let batch = v.host.batch.clone();
        for id in &batch {
            if let Some(t) = v.task_mut(id) {
                if t.kind != Some(TaskKind::Memory) {
                    t.status = Some(TaskStatus::Pending);
                }
            }
        }
        if batch.is_empty() {
            v.host.failure = None;
        }
        // A blocked investigator asked "research, manual fix or abort" (remediation-and-research
        // .md:50): "research" starts a round, and the investigator waits for it.
        let investigating = batch
            .iter()
            .any(|id| v.task(id).and_then(Task::node) == Some(Phase::DebugInvestigate));
        if investigating && text.trim().eq_ignore_ascii_case("research") {
            let reason = "The user asked for research before the investigation goes on";
            // The researchers run first; the investigator waits for them.
            v.host.batch = super::graph::research_before(
                &mut v.tasks,
                &self.id,
                reason,
                Phase::DebugInvestigate,
            );
        }
        // A planner's question answered: PLAN restarts with its whole review DAG (the
        // engine pruned the review branch when plan-create asked).
        let replan = batch
            .iter()
            .any(|id| v.task(id).and_then(Task::node) == Some(Phase::PlanCreate));
        if replan && self.kind() == WorkflowKind::Plan {
            for t in v.tasks.iter_mut() {
                let review = [
                    Phase::PlanReviewGap1.as_str(),
                    Phase::RePlan.as_str(),
                    Phase::PlanReviewGap2.as_str(),
                ];
                if t.status == Some(TaskStatus::Deleted)
                    && t.phase.as_deref().is_some_and(|p| review.contains(&p))
                {
                    t.status = Some(TaskStatus::Pending);
                }
            }
        }
    }

    /// After a merge into the project's tree: the test suite on the merged result, against the
    /// baseline. `Ok(Some(what))` green, `Ok(None)` no baseline to check, `Err(what)` new
    /// failures (or a suite that no longer runs).
    async fn post_merge_check(&self, a: &Artifact) -> Result<Option<String>, String> {
        if !baseline::recorded(a).is_some_and(|b| b.is_recorded()) {
            return Ok(None);
        }
        match self.suite_check(a, &self.root).await {
            None => Err("the test suite could not be run".into()),
            Some(c) if c.ok => Ok(Some(match c.preexisting.is_empty() {
                true => format!("`{}` passes on the merged tree", c.command),
                false => format!(
                    "`{}` on the merged tree fails only where it failed before ({})",
                    c.command,
                    c.preexisting.join(", ")
                ),
            })),
            Some(c) => Err(match c.new_failures.is_empty() {
                true => format!(
                    "`{}` fails ({})",
                    c.command,
                    c.error.unwrap_or_else(|| format!("exit {:?}", c.exit_code))
                ),
                false => format!(
                    "`{}` has new failures: {}",
                    c.command,
                    c.new_failures.join(", ")
                ),
            }),
        }
    }

    /// A remediation the user's answer asked for: its task (the batch), its history entry.
    /// cc10x's order after the finishing choice: the decision persisted (by the caller), then
    /// `build_finished`, then Memory Update and the end.
    async fn finished_with(&self, choice: &str, did: String) -> Result<(), RunError> {
        self.commit(
            EventBody::BuildFinished(crate::event::Finished {
                choice: Some(choice.to_string()),
                reason: Some(did),
            }),
            self.record(),
        )?;
        self.finish(Action::MemoryFinalize, "").await
    }

    /// cc10x's `scope_decision_resolved` event, after an answer at a scope question.
    fn scope_resolved(&self, gate: Gate, text: &str, choice: &Answer) -> Result<(), RunError> {
        if !matches!(
            gate,
            Gate::ScopeDecision | Gate::PlanFirst | Gate::MissingPlan
        ) {
            return Ok(());
        }
        if gate == Gate::ScopeDecision {
            let line = format!("[SCOPE-DECISION-RESOLVED: wf:{} {}]", self.id, text.trim());
            MemoryDir::new(&self.root)
                .append(MemoryFile::ActiveContext, "Decisions", &[line])
                .map_err(|e| RunError::Memory(e.to_string()))?;
        }
        let r = self.record();
        let ev = EventBody::ScopeDecisionResolved(crate::event::Fields {
            phase: r.artifact.phase_cursor.clone(),
            decision: Some(text.trim().to_string()),
            reason: Some(format!("{choice:?}")),
            ..crate::event::Fields::default()
        });
        self.commit(ev, r)
    }

    pub(super) fn add_remfix(
        &self,
        a: &mut Artifact,
        v: &mut WorkflowState,
        scope: &str,
        origin: &str,
        reason: &str,
        why: &str,
    ) {
        if self.research_first(a, v, scope, origin, reason) {
            return;
        }
        let mut t = graph::task(
            &v.tasks,
            &self.id,
            graph::NewTask {
                kind: TaskKind::Remfix,
                phase: Phase::BuildImplement.as_str(),
                origin,
                scope,
                reason,
                blocked_by: Vec::new(),
            },
        );
        t.plan = a.plan_file.clone().or(t.plan);
        a.traceability.remediation.push(decide::traced_fix(&t, a));
        let mut entry = HistoryEntry::new("remediation_created", a.phase_cursor.as_deref(), why);
        entry.origin = Some(origin.to_string());
        a.remediation_history.push(entry);
        v.host.batch = vec![t.id.clone()];
        v.host.next = Some(Action::CreateRemfix);
        v.tasks.push(t);
    }

    /// Ends the workflow: memory finalized inline (a failed write stops it), the brief recorded.
    pub(super) async fn finish(&self, action: Action, reason: &str) -> Result<(), RunError> {
        // cc10x: the finishing choice comes before Memory Update, which then records it.
        let mut r = self.record();
        let proven = r.artifact.proof_status == Some(ProofStatus::Passed);
        let headline = match r.state.host.headline.clone() {
            Some(h) => h,
            None => self.headline(&r.artifact, action, reason),
        };
        // Deferred findings are triaged before the finishing choice and memory, never rolled
        // off silently (cc10x finishing 1a): in place or in a worktree.
        if let Some((question, note)) = triage_question(&r, self.kind(), proven) {
            r.state.host.headline = Some(headline);
            self.commit(EventBody::ArtifactUpdated(Note::because(note)), r)?;
            return self.stop_at(Gate::DeferredTriage, &question).await;
        }
        if let (Some(wt), None, WorkflowKind::Build, true) = (
            r.state.host.worktree.clone(),
            &r.state.host.finished,
            self.kind(),
            proven,
        ) {
            // The finishing choice works on a commit: the workflow's changes, on its branch.
            let request = r.artifact.user_request.as_deref().unwrap_or("");
            if let Err(e) = commit_worktree(&wt, request) {
                return self.fail(RunError::Commit {
                    branch: wt.branch.clone(),
                    message: e,
                });
            }
            r.state.host.headline = Some(headline.clone());
            self.commit(
                EventBody::ArtifactUpdated(Note::because(format!(
                    "the work is committed on {}",
                    wt.branch
                ))),
                r,
            )?;
            // The triage's answer stands beside the choice (cc10x 1a).
            let art = self.record().artifact;
            let deferred = match (art.deferred_findings.len(), &art.results.deferred_triage) {
                (0, _) => String::new(),
                (n, Some(t)) => format!(
                    ". {n} deferred finding{} triaged: {}",
                    if n == 1 { "" } else { "s" },
                    t.choice.replace('_', " ")
                ),
                (n, None) => format!(
                    ". {n} deferred finding{} stay{} open (listed in the brief)",
                    if n == 1 { "" } else { "s" },
                    if n == 1 { "s" } else { "" },
                ),
            };
            return self
                .stop_at(
                    Gate::Finish,
                    &format!(
                        "{headline}. The work is committed on branch {} (worktree {}){deferred}",
                        wt.branch,
                        wt.path.display()
                    ),
                )
                .await;
        }
        if !self.record().state.host.memory_done && !self.finalize_memory(action)? {
            return Ok(());
        }
        let left = self.left_uncommitted().await;
        self.complete(headline, left)
    }

    /// What a BUILD or DEBUG in place leaves uncommitted in the project, as it ends.
    async fn left_uncommitted(&self) -> Option<crate::results::LeftInPlace> {
        let r = self.record();
        let kinds = matches!(self.kind(), WorkflowKind::Build | WorkflowKind::Debug);
        let base = r.artifact.results.workflow_base_sha.clone()?;
        // A Temporal node's step (`--steps`): the node commits and pushes what it changed.
        let node = self.env.max_batches.is_some();
        if !kinds
            || node
            || r.state.host.worktree.is_some()
            || base == super::agent::UNAVAILABLE_BASE
        {
            return None;
        }
        super::tree::left_in_place(&self.root, &base).await
    }

    /// Finalizes memory; `false` when that failed and the workflow stopped.
    fn finalize_memory(&self, action: Action) -> Result<bool, RunError> {
        let mut r = self.record();
        let (art, v) = (&r.artifact, &mut r.state);
        let kind = self.kind();
        let proven = art.proof_status == Some(ProofStatus::Passed);
        let needs_proof = matches!(kind, WorkflowKind::Build | WorkflowKind::Debug);
        let accepted = v
            .host
            .answers
            .iter()
            .any(|x| x.gate == Gate::CircuitBreaker)
            && action == Action::MemoryFinalize
            && !proven;
        let mut fin = Finalization::new(self.id.clone(), time::OffsetDateTime::now_utc());
        let verdict = if needs_proof && !proven {
            "NOT verified"
        } else {
            "verified"
        };
        fin.completed_item = Some(format!(
            "{} {}: {} ({verdict})",
            kind.as_str(),
            self.id,
            art.user_request.as_deref().unwrap_or("")
        ));
        for o in v.host.outputs.values() {
            if o.role == Role::IntegrationVerifier.name() {
                if let Ok(c) = contract::parse(Role::IntegrationVerifier, &o.text) {
                    if let Some(r) = outputs::from_contract(&c).verifier {
                        for row in r.scenario_rows {
                            fin.verification.push(format!(
                                "{}: `{}` → exit {} ({})",
                                row.name,
                                row.command,
                                row.exit_code.map_or("?".into(), |c| c.to_string()),
                                row.status
                            ));
                        }
                    }
                }
            }
        }
        if accepted {
            for r in &art.remediation_history {
                fin.deferred.extend(r.reason.clone());
            }
        }
        // What the agents asked memory to keep (their MEMORY_NOTES), in task order.
        for t in &v.tasks {
            let Some(o) = v.host.outputs.get(&t.id) else {
                continue;
            };
            let Some(role) = Role::from_name(&o.role) else {
                continue;
            };
            if let Ok(c) = contract::parse(role, &o.text) {
                let n = outputs::memory_notes(&c);
                fin.learnings.extend(n.learnings);
                fin.gotchas.extend(n.patterns);
                fin.verification.extend(n.verification);
                fin.deferred.extend(n.deferred);
            }
        }
        // Findings left open, and tests that failed before the build, are not forgotten; those
        // accepted at the triage are in Decisions instead.
        let deferred = art
            .deferred_findings
            .iter()
            .filter(|f| f.disposition.as_deref() != Some("accepted"));
        fin.deferred
            .extend(deferred.map(|f| f.memory_line(&self.id)));
        if let Some(b) =
            baseline::recorded(art).filter(|b| b.is_recorded() && !b.failures.is_empty())
        {
            fin.gotchas.push(format!(
                "Tests failing before {} started (pre-existing, not its doing): {}",
                self.id,
                b.failures.join(", ")
            ));
        }
        dedup(&mut fin.learnings);
        dedup(&mut fin.gotchas);
        dedup(&mut fin.deferred);
        self.workflow_memory(&mut fin, art, action, verdict);
        match self.solution_doc(art, v, proven) {
            Ok(Some(doc)) => fin
                .learnings
                .push(format!("Solution doc for {}: {doc}", self.id)),
            Ok(None) => {}
            Err(e) => {
                self.fail(e)?;
                return Ok(false);
            }
        }
        for t in v.tasks.iter_mut() {
            if t.kind == Some(TaskKind::Memory) && t.is_open() {
                t.status = Some(TaskStatus::Completed);
            }
        }
        fin.tasks = Some(
            v.tasks
                .iter()
                .map(|t| {
                    format!(
                        "[{}] {} {}",
                        if t.status == Some(TaskStatus::Completed) {
                            "x"
                        } else {
                            " "
                        },
                        t.id,
                        t.phase.as_deref().unwrap_or("")
                    )
                })
                .collect(),
        );
        let memory = MemoryDir::new(&self.root);
        if let Err(e) = memory.finalize(&fin) {
            self.fail(RunError::MemoryWrite(e.to_string()))?;
            return Ok(false);
        }
        v.host.memory_done = true;
        self.commit(
            EventBody::MemoryFinalized(Note::because(format!(
                "{} updated",
                memory.dir().display()
            ))),
            r,
        )?;
        Ok(true)
    }

    /// What memory keeps of this workflow's kind: a PLAN's plan and design references and next
    /// step, a DEBUG's result beneath its reset marker, a planned BUILD's plan (the reference
    /// reset once the plan is built and verified).
    fn workflow_memory(
        &self,
        fin: &mut Finalization,
        art: &Artifact,
        action: Action,
        verdict: &str,
    ) {
        let kind = self.kind();
        // Indexed at finalization, not before (remediation-and-research.md:256).
        let research = art.research_files();
        if !research.is_empty() {
            let files = format!("{} (wf:{})", research.join(", "), self.id);
            fin.references.push(("Research".into(), files));
        }
        match kind {
            WorkflowKind::Plan => {
                if let Some(plan) = &art.plan_file {
                    fin.references.push(("Plan".into(), plan.clone()));
                    fin.recent_changes
                        .push(format!("Plan saved: {plan} ({})", self.id));
                    if action == Action::MemoryFinalize {
                        fin.next_steps =
                            Some(vec![format!("1. Execute plan: baton run --plan {plan}")]);
                    }
                }
                if let Some(design) = &art.design_file {
                    fin.references.push(("Design".into(), design.clone()));
                }
            }
            WorkflowKind::Debug => {
                // Beneath the `[DEBUG-RESET]` marker the workflow wrote when it started.
                fin.recent_changes.push(format!(
                    "DEBUG {}: {} ({verdict})",
                    self.id,
                    art.user_request.as_deref().unwrap_or("")
                ));
            }
            WorkflowKind::Build => {
                if let Some(plan) = &art.plan_file {
                    fin.recent_changes
                        .push(format!("Built plan {plan} ({}, {verdict})", self.id));
                    // Built and verified whole: the next BUILD is not this plan again.
                    if art.proof_status == Some(ProofStatus::Passed) && art.phase_cursor.is_none() {
                        fin.references.push(("Plan".into(), "N/A".into()));
                    }
                }
            }
            _ => {}
        }
    }

    fn headline(&self, art: &Artifact, action: Action, reason: &str) -> String {
        let kind = self.kind();
        let proven = art.proof_status == Some(ProofStatus::Passed);
        let needs_proof = matches!(kind, WorkflowKind::Build | WorkflowKind::Debug);
        match (kind, action) {
            (WorkflowKind::Plan, _) => format!(
                "PLAN workflow {} completed: the plan is {}. {}",
                self.id,
                art.plan_file.as_deref().unwrap_or("(no file)"),
                self.plan_next_step(art)
            ),
            (WorkflowKind::Review, Action::OfferBuildTransition) => format!(
                "REVIEW workflow {} completed: changes requested ({reason}); done for now: the findings are not fixed (the review's report is in the record)",
                self.id
            ),
            _ if needs_proof && !proven => format!(
                "{} workflow {} finished NOT verified: {reason}",
                kind.as_str(),
                self.id
            ),
            _ => format!("{} workflow {} completed: {reason}", kind.as_str(), self.id),
        }
    }

    /// After a PLAN: a plan file that passes the plan checks is approved at its content (the
    /// gap review passed it) and the exact command to build it is given; one that does not is
    /// named with its problems.
    fn plan_next_step(&self, art: &Artifact) -> String {
        let Some(file) = art.plan_file.as_deref() else {
            return "No plan file was named.".into();
        };
        let path = self.root.join(file);
        match crate::plan_file::PlanFile::read(&path) {
            Ok(p) => {
                let approvals =
                    crate::plan_file::Approvals::new(&self.env.delegate.state, &self.root);
                let by = format!("PLAN workflow {}", self.id);
                match approvals.approve(&path, &p.sha256, &by) {
                    Ok(_) => format!(
                        "It is approved as it is now ({} phases). Build it phase by phase with: baton run --plan {file}",
                        p.phases.len()
                    ),
                    Err(e) => format!("It could not be approved ({e}). Build it with: baton run --plan {file}"),
                }
            }
            Err(e) => format!(
                "It cannot be built phase by phase yet: {}. Fix it (baton plan check {file}), then: baton run --plan {file}",
                e.problems.join("; ")
            ),
        }
    }

    /// Marks the workflow completed with its brief.
    fn complete(
        &self,
        headline: String,
        left: Option<crate::results::LeftInPlace>,
    ) -> Result<(), RunError> {
        let mut r = self.record();
        let headline = match &left {
            Some(l) => format!(
                "{headline}. Its change is left uncommitted in the working tree ({} file{}): review it, then commit it",
                l.files.len(),
                if l.files.len() == 1 { "" } else { "s" }
            ),
            None => headline,
        };
        r.artifact.results.left_in_place = left;
        // Telemetry: the whole workflow's wall clock, from its creation to its end.
        let started = r.artifact.created_at.as_deref().and_then(|t| {
            time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339).ok()
        });
        if let Some(t) = started {
            let secs = (time::OffsetDateTime::now_utc() - t).whole_seconds();
            r.artifact.telemetry.workflow_wall_clock_seconds = u64::try_from(secs).unwrap_or(0);
        }
        r.state.state = RunState::Completed;
        r.state.host.brief = Some(gate::brief_of(&r, &headline));
        self.commit(EventBody::WorkflowCompleted(Note::because(headline)), r)
    }
}

/// Drops repeated entries, keeping the first of each.
fn dedup(items: &mut Vec<String>) {
    let mut seen = std::collections::BTreeSet::new();
    items.retain(|i| seen.insert(i.clone()));
}

/// `done for now` at a REVIEW's build transition: it ends with the findings unfixed.
fn done_for_now(a: &mut Artifact, v: &mut WorkflowState) {
    v.host.done_for_now = true;
    a.status_history.push(HistoryEntry::new(
        "build_transition",
        None,
        "done for now: the findings are not fixed",
    ));
}
