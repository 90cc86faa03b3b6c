//! Deciding: the batch's contracts read into the engine's inputs, the engine's decision
//! applied, and the next batch set up.

use super::*;
use crate::artifact::Phase;
use crate::artifact::{BuildScope, HistoryEntry, ResearchRound};
use crate::engine::Decision;
use crate::event::{Decided, DecidedDetails, EventBody, LoggedFinding};
use crate::state::{Record, RunState, WorkflowState};

impl Runner<'_> {
    /// The engine inputs from the batch's outputs, or why they cannot be believed.
    pub(super) fn outputs_of(
        &self,
        a: &Artifact,
        v: &WorkflowState,
    ) -> Result<AgentOutputs, RunError> {
        let kind = self.kind();
        let mut out = AgentOutputs::default();
        let mut reviewer = None;
        let mut hunter = None;
        let mut web = None;
        let mut github = None;
        for id in &v.host.batch {
            let (Some(task), Some(o)) = (v.task(id), v.host.outputs.get(id)) else {
                continue;
            };
            let (role, checked) = self.believe(a, id, task, o)?;
            if matches!(kind, WorkflowKind::Triage | WorkflowKind::CodebaseHealth) {
                let report = self
                    .write_report(id, &o.text)
                    .map_err(|e| RunError::ReportWrite(e.to_string()))?;
                let r = ReadOnlyReport {
                    status: checked.outcome.verdict().name().to_uppercase(),
                    path: Some(report),
                    blocking: false,
                };
                if kind == WorkflowKind::Triage {
                    out.triage = Some(r);
                } else {
                    out.scanner = Some(r);
                }
                continue;
            }
            if task.kind == Some(TaskKind::Remfix) {
                // A proof baton ran and saw fail (or that is only the whole suite) proves nothing.
                let rerun_failed = o.proof_check.as_ref().is_some_and(|c| !c.ok);
                out.remfix = Some(match rerun_failed {
                    true => outputs::RemfixReport::default(),
                    false => outputs::remfix_proof(&checked),
                });
                continue;
            }
            match role {
                Role::CodeReviewer => {
                    merge(&mut out, outputs::from_contract(&checked));
                    reviewer = Some(checked);
                }
                Role::FailureHunter => hunter = Some(checked),
                Role::Researcher if task.node() == Some(Phase::ResearchGithub) => {
                    github = Some(checked)
                }
                Role::Researcher => web = Some(checked),
                _ => merge(&mut out, outputs::from_contract(&checked)),
            }
        }
        if reviewer.is_some() || hunter.is_some() {
            out.findings = Some(outputs::findings_from(reviewer.as_ref(), hunter.as_ref()));
        }
        if web.is_some() || github.is_some() {
            out.research = Some(outputs::research_from(web.as_ref(), github.as_ref()));
            // The round answers the investigator that asked for it.
            if out.investigator.is_none() {
                let last = v
                    .tasks
                    .iter()
                    .rev()
                    .filter(|t| t.node() == Some(Phase::DebugInvestigate))
                    .find_map(|t| v.host.outputs.get(&t.id));
                if let Some(o) = last {
                    if let Ok(c) = contract::parse(Role::BugInvestigator, &o.text) {
                        merge(&mut out, outputs::from_contract(&c));
                    }
                }
            }
        }
        Ok(out)
    }

    /// An agent's answer believed: no error, a role, a contract that reads, a pass its own
    /// checks and the host's support (a read-only role changed nothing, a writing one changed
    /// something, every host check passed, a verifier ruled on every dispute); else why not.
    fn believe(
        &self,
        a: &Artifact,
        id: &str,
        task: &Task,
        o: &crate::state::TaskOutput,
    ) -> Result<(Role, contract::Checked), RunError> {
        if let Some(e) = &o.error {
            return Err(RunError::Agent {
                task: id.to_string(),
                role: o.role.clone(),
                message: e.clone(),
            });
        }
        let role = Role::from_name(&o.role)
            .or_else(|| self.role_of(task))
            .ok_or_else(|| RunError::NoContractRole {
                task: id.to_string(),
                role: o.role.clone(),
            })?;
        let (task_id, role_name) = (id.to_string(), role.name().to_string());
        let checked = contract::parse(role, &o.text).map_err(|e| RunError::MalformedContract {
            task: task_id.clone(),
            role: role_name.clone(),
            message: e.problem(),
        })?;
        match &checked.outcome {
            ContractOutcome::PassRefused { unmet } => {
                return Err(RunError::RefusedPass {
                    task: task_id,
                    role: role_name,
                    unmet: unmet.clone(),
                })
            }
            ContractOutcome::NeedsVerification { reason } => {
                return Err(RunError::UnprovenPass {
                    task: task_id,
                    role: role_name,
                    reason: reason.clone(),
                })
            }
            _ => {}
        }
        // A saved plan or design must be a file of the project where the agent says
        // (remediation-and-research.md:91-93; plan-workflow.md:3, verified before it is used).
        let saved = match (&checked.contract, checked.advances()) {
            (contract::Contract::Planner(p), true) => Some(("PLAN_FILE", p.plan_file.clone())),
            (contract::Contract::Brainstorm(b), true)
                if b.status == contract::BrainstormStatus::DesignSaved =>
            {
                Some(("DESIGN_FILE", b.design_file.clone()))
            }
            _ => None,
        };
        if let Some((key, file)) = saved {
            let file = file.unwrap_or_default();
            if let Err(why) = project_file(&self.root, file.trim()) {
                return Err(RunError::RefusedPass {
                    task: task_id,
                    role: role_name,
                    unmet: vec![format!(
                        "{key} {:?} {why}: save the file in the project, or give the path it was saved to",
                        file.trim()
                    )],
                });
            }
        }
        if role.is_read_only() && o.changed == Some(true) {
            return Err(RunError::ReadOnlyEdited {
                task: task_id,
                role: role_name,
            });
        }
        if checked.advances() && !role.is_read_only() && o.changed == Some(false) {
            let writes_code = matches!(role, Role::ComponentBuilder | Role::BugInvestigator);
            if writes_code {
                return Err(RunError::NothingChanged {
                    task: task_id,
                    role: role_name,
                });
            }
        }
        if let Some(c) = o.host_checks.iter().find(|c| !c.ok) {
            return Err(RunError::HostCheckFailed {
                task: task_id,
                role: role_name,
                command: c.command.clone(),
                how: how_it_failed(c),
            });
        }
        if role == Role::IntegrationVerifier {
            // The disputes waiting for this verifier: each ruled on, none rejected by a pass.
            let disputes = super::dispute::recorded(a);
            if let Some(d) = disputes.iter().find(|d| d.status == "pending") {
                return Err(RunError::Dispute {
                    task: task_id,
                    message: format!(
                        "did not rule on the disputed finding {:?}: it must write DISPUTE_UPHELD or DISPUTE_REJECTED for it",
                        d.finding
                    ),
                });
            }
            let rejected = disputes
                .iter()
                .find(|d| d.status == "rejected" && d.ruled_by.as_deref() == Some(id));
            if let (Some(d), true) = (rejected, checked.advances()) {
                return Err(RunError::Dispute {
                    task: task_id,
                    message: format!(
                        "rejected the dispute of {:?} (the finding stands) yet passed: a standing finding is a FAIL until it is fixed",
                        d.finding
                    ),
                });
            }
        }
        Ok((role, checked))
    }

    /// TRIAGE and CODEBASE-HEALTH: the agent's report, saved under `.baton/reports/`.
    pub(super) fn write_report(&self, task: &str, text: &str) -> std::io::Result<String> {
        let dir = self.root.join(".baton").join("reports");
        baton_state::create_own_dir(&dir)?;
        let rel = format!(".baton/reports/{}-{task}.md", self.id);
        std::fs::write(self.root.join(&rel), text)?;
        Ok(rel)
    }

    /// Stops the workflow on a failure; `baton resume --answer` retries.
    pub(super) fn fail(&self, failure: RunError) -> Result<(), RunError> {
        let reason = failure.to_string();
        let mut r = self.record();
        r.state.state = RunState::Failed;
        r.state.host.failure = Some(reason.clone());
        r.state.checkpoint = None;
        self.say(&format!("stopped: {reason}"));
        self.commit(EventBody::WorkflowFailed(Note::because(reason)), r)
    }

    /// Asks the engine what the batch's outputs mean, and sets up what comes next.
    pub(super) async fn decide_and_act(&self, r: Record) -> Result<(), RunError> {
        let v = &r.state;
        let artifact = &r.artifact;
        let outputs = match self.outputs_of(artifact, v) {
            Ok(o) => o,
            Err(RunError::UnprovenPass { task, role, reason })
                if !v.host.asked_for_evidence.contains(&task) =>
            {
                return self.ask_for_evidence(r.clone(), &task, &role, &reason);
            }
            Err(problem) => return self.fail(problem),
        };
        let research = outputs.research.clone();
        let d = decide(artifact, &engine_inputs(v, outputs));
        let mut new = d.apply(artifact);
        // A plan phase that asks a person: the decision waits, uncommitted, until answered.
        if let Some((gate, phase, reason)) = plan::phase_checkpoint(&d, artifact, &new, v) {
            return self.stop_at_phase(gate, &reason, Some(phase)).await;
        }
        if let Some(outcome) = &research {
            // cc10x persists every finished round: the engine caps rounds by this list.
            let round = research_round(v, outcome);
            new.research_backend_history
                .push(crate::artifact::BackendRun {
                    round: new.research_rounds.len() + 1,
                    web: round.web.clone(),
                    github: round.github.clone(),
                    at: round.at.clone(),
                });
            new.research_rounds.push(round);
            new.research_files = new.research_files().into_iter().map(String::from).collect();
        }
        let mut nv = v.clone();
        for u in &d.task_updates {
            if let Some(t) = nv.task_mut(&u.task) {
                t.status = Some(u.status);
            }
        }
        plan::plan_saved(&self.root, &d, &mut new, &mut nv);
        let created = match self.follow_ups(&d, artifact, v, &mut new, &mut nv) {
            Ok(c) => c,
            Err(e) => return self.fail(e),
        };
        let (normalized, status) = (new.normalized_phases.clone(), new.phase_status.clone());
        new.traceability.sync_phases(&normalized, &status);
        let action = d.action;
        consume_fixes(action, v, &mut nv);
        // A fix sent back for its proof twice that still proves nothing stops: a person looks.
        if action == Action::ReturnRemfixForProof && nv.host.proof_returns > MAX_PROOF_RETURNS {
            return self.fail(RunError::EngineStop(format!(
                "the fix was sent back {MAX_PROOF_RETURNS} times for the proof that it was exercised and still gives none ({})",
                nv.host.guidance.as_deref().unwrap_or("no covering test, command and output")
            )));
        }
        nv.host.next = Some(action);
        nv.host.next_reason = Some(d.reason.clone());
        let (findings, dropped) = roll_up_findings(&d, v, artifact, &mut new);
        let ev = EventBody::Decided(Decided {
            phase: artifact.phase_cursor.clone(),
            action: Some(action_name(action)),
            reason: Some(d.reason.clone()),
            details: Some(DecidedDetails {
                created,
                findings,
                dropped_findings: dropped,
                ..DecidedDetails::default()
            }),
        });
        self.say(&format!("-> {}: {}", action_name(action), d.reason));
        if graph::phases_for(action).is_some() {
            // A decision RFC or a critical-path plan: a Doubt Pass is offered before its fresh
            // review (plan-workflow.md:27), once.
            let doubt = (self.kind() == WorkflowKind::Plan
                && action == Action::RunPlanReviewPass1
                && new.results.doubt_pass.is_none())
            .then(|| plan::doubt_offer(&new))
            .flatten();
            self.dispatch_next(&d, ev, new, nv, v)?;
            return match doubt {
                Some(reason) => self.stop_at(Gate::DoubtPass, &reason).await,
                None => Ok(()),
            };
        }
        match action {
            // cc10x: a REVIEW that requests changes asks whether a BUILD fixes them.
            Action::OfferBuildTransition if !v.host.done_for_now => {
                self.commit(ev, Record::new(new, nv))?;
                self.stop_at(Gate::BuildTransition, &d.reason).await
            }
            Action::MemoryFinalize
            | Action::CreateBuildWorkflow
            | Action::OfferBuildTransition
            | Action::PresentBrief
            | Action::PresentReport
            | Action::AnswerInline => {
                self.commit(ev, Record::new(new, nv))?;
                self.finish(action, &d.reason).await
            }
            _ => {
                // A stop: a gate makes it a checkpoint, none a failure. The batch stays, so an
                // answer can retry it.
                self.commit(ev, Record::new(new, nv))?;
                match d.pending_gate {
                    Some(g) => self.stop_at(g, &d.reason).await,
                    None => self.fail(RunError::EngineStop(d.reason.clone())),
                }
            }
        }
    }

    /// cc10x's fallback for a pass too thin to believe (a rubber-stamp approval, a clean audit
    /// with no stated scope): the host cannot read the change itself, so the agent is asked once
    /// more, told why, for the evidence (the files and lines it read); a second thin pass stops.
    fn ask_for_evidence(
        &self,
        mut r: Record,
        task: &str,
        role: &str,
        reason: &str,
    ) -> Result<(), RunError> {
        let v = &mut r.state;
        v.host.asked_for_evidence.push(task.to_string());
        if let Some(t) = v.task_mut(task) {
            t.status = Some(TaskStatus::Pending);
        }
        v.host.outputs.remove(task);
        v.host.guidance = Some(format!(
            "Your last answer was not believed: {reason}. Review again and cite the file:line of \
             every place you read (at least three), with what you checked there; report findings \
             where you have them."
        ));
        self.say(&format!(
            "{task} ({role}): {reason}: asked once more for its evidence"
        ));
        self.commit(
            EventBody::ArtifactUpdated(Note::because(format!(
                "{task} ({role}) passed too thinly ({reason}): dispatched again for its evidence"
            ))),
            r,
        )
    }

    /// The engine's follow-up tasks added to `nv` (a re-verify waits for the re-checks created
    /// with it; a grown scope gives the trivial graph the full chain's tasks); their ids.
    fn follow_ups(
        &self,
        d: &Decision,
        artifact: &Artifact,
        v: &WorkflowState,
        new: &mut Artifact,
        nv: &mut WorkflowState,
    ) -> Result<Vec<String>, RunError> {
        let mut created: Vec<String> = Vec::new();
        let escalated = d
            .changes
            .iter()
            .any(|c| matches!(c, Change::BuildScope(BuildScope::Standard)));
        if escalated && artifact.build_scope == Some(BuildScope::Trivial) {
            created.extend(graph::escalate(
                &mut nv.tasks,
                &self.id,
                !nv.host.doc_sync_skipped,
            ));
        }
        let origin = d
            .changes
            .iter()
            .find_map(|c| match c {
                Change::Remediation(e) => e.origin.as_deref(),
                _ => None,
            })
            .unwrap_or("router")
            .to_string();
        let found = what_was_found(v);
        for f in &d.follow_up_tasks {
            let reason = match (f.kind, &found) {
                (TaskKind::Remfix, Some(found)) => format!("{}: {found}", f.reason),
                _ => f.reason.clone(),
            };
            let (phase, blocked_by) = match f.kind {
                TaskKind::Remfix => (
                    if self.kind() == WorkflowKind::Debug {
                        Phase::DebugInvestigate.as_str()
                    } else {
                        Phase::BuildImplement.as_str()
                    }
                    .to_string(),
                    Vec::new(),
                ),
                TaskKind::Reverify => (f.phase.clone(), created.clone()),
                _ => (f.phase.clone(), Vec::new()),
            };
            let fix = f.kind == TaskKind::Remfix;
            let new_task = graph::NewTask {
                kind: f.kind,
                phase: &phase,
                origin: if fix { &origin } else { "router" },
                scope: &f.scope,
                reason: if reason.trim().is_empty() {
                    "N/A"
                } else {
                    &reason
                },
                blocked_by,
            };
            let mut t = graph::task(&nv.tasks, &self.id, new_task);
            if let Some(plan) = &new.plan_file {
                t.plan = Some(plan.clone());
            }
            if let Err(errors) = t.validate() {
                return Err(RunError::InvalidTask {
                    task: t.id.clone(),
                    errors: errors.iter().map(ToString::to_string).collect(),
                });
            }
            if fix {
                new.traceability.remediation.push(traced_fix(&t, new));
            }
            created.push(t.id.clone());
            nv.tasks.push(t);
        }
        Ok(created)
    }

    /// An action that runs agents: its batch (the runnable tasks of its phases, a planned
    /// BUILD's next phase, or a new node), recorded with the decision `ev`.
    fn dispatch_next(
        &self,
        d: &Decision,
        ev: EventBody,
        new: Artifact,
        mut nv: WorkflowState,
        v: &WorkflowState,
    ) -> Result<(), RunError> {
        let action = d.action;
        let mut batch = graph::runnable_for(&nv.tasks, action);
        fan_out::one_lane(&mut batch, &nv.tasks, &v.tasks);
        // A planned BUILD's next phase: its builder, reviewer, hunter and verifier.
        let next_phase = (action == Action::RunBuilder && self.kind() == WorkflowKind::Build)
            .then(|| plan::current(&new))
            .flatten()
            .filter(|_| new.plan_file.is_some() && new.results.plan.is_some())
            .map(|(_, p)| plan::builder_reason(p));
        if let (true, Some(reason), Some(key)) =
            (batch.is_empty(), next_phase, new.plan_file.clone())
        {
            batch.push(graph::phase_chain(&mut nv.tasks, &self.id, &key, &reason));
        }
        if let (true, Some(phase)) = (batch.is_empty(), new_node_phase(action)) {
            let t = graph::task(
                &nv.tasks,
                &self.id,
                graph::NewTask {
                    kind: TaskKind::Agent,
                    phase,
                    origin: "router",
                    scope: "N/A",
                    reason: &d.reason,
                    blocked_by: Vec::new(),
                },
            );
            batch.push(t.id.clone());
            nv.tasks.push(t);
        }
        if batch.is_empty() {
            self.commit(ev, Record::new(new, nv))?;
            return self.fail(RunError::NothingRunnable {
                action: action_name(action),
            });
        }
        nv.host.batch = batch;
        if !matches!(action, Action::ReturnRemfixForProof) && !nv.host.carry_guidance {
            nv.host.guidance = None;
            nv.host.failure = None;
        }
        nv.host.carry_guidance = false;
        let fixes: Vec<Task> = nv
            .tasks
            .iter()
            .filter(|t| t.kind == Some(TaskKind::Remfix))
            .filter(|t| !v.tasks.iter().any(|o| o.id == t.id))
            .cloned()
            .collect();
        self.commit(ev, Record::new(new, nv))?;
        for t in &fixes {
            self.remediation_created(t)?;
        }
        Ok(())
    }
}

impl Runner<'_> {
    /// cc10x's `remediation_created` event for a remediation task just recorded.
    pub(super) fn remediation_created(&self, t: &Task) -> Result<(), RunError> {
        let r = self.record();
        let cycle = r.artifact.remediation_history.len();
        let ev = EventBody::RemediationCreated(crate::event::Fields {
            phase: r.artifact.phase_cursor.clone(),
            task_id: Some(t.id.clone()),
            agent: t.origin.clone(),
            decision: t.scope.clone(),
            reason: t.reason.clone(),
            details: Some(serde_json::json!({"cycle": cycle})),
            ..crate::event::Fields::default()
        });
        self.commit(ev, r)
    }
}

/// Times a fix is sent back for its proof before the workflow stops.
const MAX_PROOF_RETURNS: u32 = 2;

/// How a host check failed, in words.
fn how_it_failed(c: &crate::state::HostCheck) -> String {
    match (c.exit_code, &c.error) {
        (Some(code), _) if !c.new_failures.is_empty() => format!(
            "exits {code} with tests failing that passed before the build: {}",
            c.new_failures.join(", ")
        ),
        (Some(code), Some(e)) => format!("exits {code} ({e})"),
        (Some(code), None) => format!("exits {code}"),
        (None, Some(e)) => format!("did not finish ({e})"),
        (None, None) => "did not finish".to_string(),
    }
}

/// The engine's inputs: the workflow's tasks (fixes already consumed by their re-checks left
/// out), the batch's outputs and the cycles the user allowed past the circuit breaker.
fn engine_inputs(v: &WorkflowState, outputs: AgentOutputs) -> Inputs {
    Inputs {
        tasks: v
            .tasks
            .iter()
            .filter(|t| !v.host.consumed_remfix.contains(&t.id))
            .cloned()
            .collect(),
        outputs,
        breaker_allowance: v.host.breaker_allowance as usize,
        doc_sync_skipped: v.host.doc_sync_skipped,
        batch: v.host.batch.clone(),
        edited: v
            .host
            .outputs
            .iter()
            .filter(|(_, o)| !o.edited.is_empty())
            .map(|(id, o)| (id.clone(), o.edited.clone()))
            .collect(),
        ..Inputs::default()
    }
}

/// The fixes an action consumes: re-checks spawned for them, or sent back for proof.
fn consume_fixes(action: Action, v: &WorkflowState, nv: &mut WorkflowState) {
    let done =
        |t: &Task| t.kind == Some(TaskKind::Remfix) && t.status == Some(TaskStatus::Completed);
    match action {
        Action::SpawnRecheckTasks => {
            nv.host.proof_returns = 0;
            for t in &v.tasks {
                if done(t) && !nv.host.consumed_remfix.contains(&t.id) {
                    nv.host.consumed_remfix.push(t.id.clone());
                }
            }
        }
        Action::ReturnRemfixForProof => {
            nv.host.proof_returns += 1;
            for t in nv.tasks.iter_mut() {
                if done(t) && !v.host.consumed_remfix.contains(&t.id) {
                    t.status = Some(TaskStatus::Pending);
                }
            }
            let failed = v
                .tasks
                .iter()
                .filter(|t| done(t) && !v.host.consumed_remfix.contains(&t.id))
                .filter_map(|t| v.host.outputs.get(&t.id)?.proof_check.clone())
                .find(|c| !c.ok);
            nv.host.guidance = Some(match failed {
                Some(c) if c.exit_code.is_none() && c.error.is_some() => format!(
                    "your proof `{}` is not accepted ({}); report the covering test's command and output in SCENARIOS",
                    c.command,
                    c.error.clone().unwrap_or_default()
                ),
                Some(c) => format!(
                    "baton ran your proof `{}` and it {}: fix what it shows, then run the test that covers the fix and report its command and output in SCENARIOS",
                    c.command,
                    how_it_failed(&c)
                ),
                None => "your fix named no covering test, command and output: run the test that covers it and report them in SCENARIOS".into(),
            });
        }
        _ => {}
    }
}

/// The batch's findings, and the ones the verifier refuted (each with why): findings that do not
/// block roll up into `deferred_findings` with their phase (cc10x: no finding silently
/// discarded) — the minor ones of every review and hunt, and the HIGH ones a CRITICAL_ONLY
/// re-review defers; a refuted one is not deferred and is noted in the status history.
fn roll_up_findings(
    d: &Decision,
    v: &WorkflowState,
    artifact: &Artifact,
    new: &mut Artifact,
) -> (Vec<LoggedFinding>, Vec<String>) {
    let (findings, dropped_with_text) = ledger_and_dropped(v);
    new.deferred_findings.retain(|e| {
        !dropped_with_text
            .iter()
            .any(|(_, text)| &e.finding.text == text)
    });
    let dropped: Vec<String> = dropped_with_text.into_iter().map(|(why, _)| why).collect();
    let deferring = d
        .changes
        .iter()
        .any(|c| matches!(c, Change::Status(e) if e.event == "findings_deferred"));
    let ran = |role: Role| {
        v.host.batch.iter().any(|id| {
            v.host
                .outputs
                .get(id)
                .is_some_and(|o| o.role == role.name())
        })
    };
    let reviewed = ran(Role::CodeReviewer) || ran(Role::FailureHunter);
    let verified = ran(Role::IntegrationVerifier);
    if reviewed && !verified {
        // One merged summary in the results before the verifier (seed 001:560).
        new.results.findings_summary = Some(findings.clone());
    }
    for f in &findings {
        let minor = matches!(f.severity.as_str(), "low" | "medium");
        let high = f.severity == "high";
        // Minor findings block nothing: kept with their phase whoever raised them, the
        // reviewers' or the verifier's own (a trivial BUILD has only the verifier).
        if ((reviewed != verified) && minor) || (deferring && (minor || high)) {
            defer(new, f, artifact.phase_cursor.as_deref());
        }
    }
    for why in &dropped {
        let mut entry = HistoryEntry::new("finding_dropped", None, why);
        entry.ts = Some(baton_state::now_rfc3339());
        new.status_history.push(entry);
    }
    (findings, dropped)
}

/// Adds a finding to `deferred_findings` with its phase, once.
fn defer(a: &mut Artifact, f: &LoggedFinding, phase: Option<&str>) {
    let entry = crate::artifact::DeferredFinding {
        finding: f.clone(),
        phase: phase.map(str::to_string),
        disposition: None,
    };
    if !a.deferred_findings.iter().any(|e| e.same(&entry)) {
        a.deferred_findings.push(entry);
    }
}

/// A remediation task as `traceability.remediation` keeps it.
pub(super) fn traced_fix(t: &Task, a: &Artifact) -> crate::artifact::TracedFix {
    crate::artifact::TracedFix {
        phase: a.phase_cursor.clone(),
        task: t.id.clone(),
        scope: t.scope.clone().unwrap_or_default(),
        origin: t.origin.clone().unwrap_or_default(),
        reason: t.reason.clone().unwrap_or_default(),
    }
}

/// The batch's findings for the log: the reviewer's and the hunter's merged (one raised by both
/// at one `file:line` is cross-confirmed); after a verifier, the latest review findings checked
/// against its `### Reviewer Finding Validation` — the ones it could not confirm are dropped and
/// returned as the second list (degraded critical ones are kept).
pub(super) fn findings_ledger(v: &WorkflowState) -> (Vec<LoggedFinding>, Vec<String>) {
    let (kept, dropped) = ledger_and_dropped(v);
    (kept, dropped.into_iter().map(|(why, _)| why).collect())
}

/// [`findings_ledger`], each dropped finding with its text.
fn ledger_and_dropped(v: &WorkflowState) -> (Vec<LoggedFinding>, Vec<(String, String)>) {
    use contract::merge::{apply_validation, findings_in, merge_findings, validations_in};
    let text_of = |role: Role, ids: &mut dyn Iterator<Item = &String>| {
        ids.filter_map(|id| v.host.outputs.get(id))
            .filter(|o| o.role == role.name())
            .map(|o| o.text.clone())
            .last()
    };
    let batch = &v.host.batch;
    let verifier = text_of(Role::IntegrationVerifier, &mut batch.iter());
    // The review findings: this batch's, or for a verifier the latest ones before it.
    let ids: Vec<String> = match verifier {
        Some(_) => v.tasks.iter().map(|t| t.id.clone()).collect(),
        None => batch.clone(),
    };
    let reviewer = text_of(Role::CodeReviewer, &mut ids.iter()).unwrap_or_default();
    let hunter = text_of(Role::FailureHunter, &mut ids.iter()).unwrap_or_default();
    let merged = merge_findings(&findings_in(&reviewer), &findings_in(&hunter));
    let (kept, dropped) = match &verifier {
        Some(text) => apply_validation(merged, &validations_in(text)),
        None => (merged, Vec::new()),
    };
    let mut findings: Vec<LoggedFinding> = kept
        .iter()
        .map(|m| LoggedFinding {
            severity: m.finding.severity.name().to_string(),
            location: m.finding.location.as_ref().map(ToString::to_string),
            text: m.finding.text.clone(),
            raised_by: m.raised_by.iter().map(|r| r.name().to_string()).collect(),
            cross_confirmed: m.cross_confirmed,
        })
        .collect();
    // The verifier's own findings (a trivial BUILD's only ones) join the ledger too.
    for f in verifier.as_deref().map(findings_in).unwrap_or_default() {
        if !findings.iter().any(|l| l.text == f.text) {
            findings.push(LoggedFinding {
                severity: f.severity.name().to_string(),
                location: f.location.as_ref().map(ToString::to_string),
                text: f.text.clone(),
                raised_by: vec![Role::IntegrationVerifier.name().to_string()],
                cross_confirmed: false,
            });
        }
    }
    let dropped = dropped
        .into_iter()
        .map(|d| (d.reason, d.finding.finding.text))
        .collect();
    (findings, dropped)
}

/// What the batch's agents asked to fix, in one line: the first `REMEDIATION_REASON` they gave,
/// else their most severe finding.
fn what_was_found(v: &WorkflowState) -> Option<String> {
    let outputs: Vec<&crate::state::TaskOutput> = v
        .host
        .batch
        .iter()
        .filter_map(|id| v.host.outputs.get(id))
        .collect();
    let reason = outputs.iter().find_map(|o| {
        o.text.lines().find_map(|l| {
            let l = l.trim().trim_start_matches("- ").trim_start_matches("**");
            let r = l
                .strip_prefix("REMEDIATION_REASON:")?
                .trim()
                .trim_matches('*')
                .trim();
            (!r.is_empty() && r != "null" && r != "N/A" && r != "None").then(|| r.to_string())
        })
    });
    reason
        .or_else(|| {
            outputs
                .iter()
                .flat_map(|o| contract::merge::findings_in(&o.text))
                .max_by_key(|f| f.severity)
                .map(|f| f.text)
        })
        .map(|r| r.chars().take(300).collect())
}

/// A new task for an action whose step may repeat (the next phase's builder, another
/// investigation) when the graph holds no open one.
/// `file` as a file inside the project `root` (a relative path, or an absolute one under it;
/// links followed): why not, when it is not.
fn project_file(root: &std::path::Path, file: &str) -> Result<(), String> {
    if file.is_empty() {
        return Err("is empty".into());
    }
    let path = root.join(file);
    let (Ok(real), Ok(top)) = (std::fs::canonicalize(&path), std::fs::canonicalize(root)) else {
        return Err(format!("is not a file in the project ({})", path.display()));
    };
    if !real.starts_with(&top) {
        return Err(format!("is outside the project ({})", real.display()));
    }
    if !real.is_file() {
        return Err(format!("is not a file in the project ({})", path.display()));
    }
    Ok(())
}

fn new_node_phase(action: Action) -> Option<&'static str> {
    match action {
        Action::RunBuilder => Some(Phase::BuildImplement.as_str()),
        Action::RunInvestigator | Action::ContinueInvestigation | Action::ReinvokeInvestigator => {
            Some(Phase::DebugInvestigate.as_str())
        }
        _ => None,
    }
}

/// One finished research round, as the artifact's `research_rounds` keeps it: why, how each
/// backend did and where its file is.
fn research_round(v: &WorkflowState, r: &outputs::ResearchOutcome) -> ResearchRound {
    let mut round = ResearchRound {
        reason: None,
        web: r.web_status.clone(),
        github: r.github_status.clone(),
        quality: r.overall_quality.clone(),
        web_file: None,
        github_file: None,
        at: baton_state::now_rfc3339(),
    };
    for id in &v.host.batch {
        let (Some(t), Some(o)) = (v.task(id), v.host.outputs.get(id)) else {
            continue;
        };
        if o.role != Role::Researcher.name() {
            continue;
        }
        if round.reason.is_none() {
            round.reason = t.reason.clone();
        }
        let file = contract::parse(Role::Researcher, &o.text)
            .ok()
            .and_then(|c| match c.contract {
                contract::Contract::Research(r) => r.file_path,
                _ => None,
            })
            .filter(|f| !f.trim().is_empty());
        if t.node() == Some(Phase::ResearchGithub) {
            round.github_file = file;
        } else {
            round.web_file = file;
        }
    }
    round
}

fn merge(into: &mut AgentOutputs, from: AgentOutputs) {
    macro_rules! take {
        ($($f:ident),*) => { $( if from.$f.is_some() { into.$f = from.$f; } )* };
    }
    take!(
        builder,
        verifier,
        reviewer,
        investigator,
        planner,
        plan_review,
        doc_syncer,
        remfix,
        findings,
        research,
        design_handoff,
        triage,
        scanner
    );
}
