//! The workflow decision engine: given the artifact, the workflow's tasks and what agents
//! returned, it decides the next action, the gate the workflow waits on, the tasks to create and
//! the changes to the artifact. It is a pure function: no I/O, no clock, no model.
//!
//! The rules are cc10x's router rules (`docs/workflows.md` lists them): identity first, then
//! the skill precedence gate, then the workflow's own chain, each agent's output checked before
//! it is believed, and any failure stopping the chain until remediation, research or the user
//! clears it.

use serde::Serialize;
use serde_json::{json, Value};

use crate::artifact::{
    check_workflow_uuid, Artifact, Convergence, HistoryEntry, MemorySync, Task, TaskKind,
    TaskStatus,
};
use crate::outputs::{AgentOutputs, ReadOnlyReport};
use crate::route::WorkflowKind;

/// Remediation cycles allowed before a human checkpoint.
pub const MAX_REMEDIATION_CYCLES: usize = 3;
/// Investigation continuations allowed before asking the user.
pub const MAX_INVESTIGATION_CONTINUATIONS: usize = 2;
/// Research rounds allowed before asking the user.
pub const MAX_RESEARCH_ROUNDS: usize = 2;

/// What the router does next. The wire spellings are the snake_case names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    RunBuilder,
    RunReviewAndHunt,
    RunVerifier,
    RunDocSyncer,
    RunInvestigator,
    RunReviewer,
    RunPlanner,
    RunPlannerWithDesignFile,
    RunPlanReviewPass1,
    RunPlannerReplan,
    RunPlanReviewPass2,
    RunTriageAgent,
    RunArchitectureScanner,
    /// DEBUG: the fix is in; the reviewer looks at it next.
    DebugReview,
    ContinueInvestigation,
    SpawnResearch,
    ReinvokeInvestigator,
    CreateRemfix,
    /// A remediation finished: re-review, re-hunt (full BUILD graph) and re-verify.
    SpawnRecheckTasks,
    /// A remediation finished without proof that the fix was exercised: send it back.
    ReturnRemfixForProof,
    MemoryFinalize,
    CreateBuildWorkflow,
    OfferBuildTransition,
    PresentReport,
    PresentBrief,
    AnswerInline,
    ReportLatencyBreakdown,
    AskUser,
    PauseForScopeDecision,
    PauseForCheckpointDecision,
    PauseForCircuitBreaker,
    StopForBlockedPhase,
    StopForFailure,
    StopInvalidOutput,
    StopAfterMemorySync,
    StopIdentityCollision,
    /// Skill precedence: a project or user standard governs.
    RespectUserStandard,
    /// Skill precedence: the approved plan or design governs.
    FollowApprovedPlan,
    /// Skill precedence: a skill or the model's own judgement governs.
    ApplySkill,
}

/// The user decision a workflow waits on (`pending_gate`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Gate {
    Clarification,
    ScopeDecision,
    CheckpointDecision,
    PhaseBlocked,
    CircuitBreaker,
}

impl Gate {
    pub fn as_str(self) -> &'static str {
        match self {
            Gate::Clarification => "clarification",
            Gate::ScopeDecision => "scope_decision",
            Gate::CheckpointDecision => "checkpoint_decision",
            Gate::PhaseBlocked => "phase_blocked",
            Gate::CircuitBreaker => "circuit_breaker",
        }
    }
}

/// Where an instruction comes from, strongest first (the skill precedence order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InstructionSource {
    /// The request itself.
    UserPrompt,
    /// Project CLAUDE.md, repository or user standards.
    ProjectStandard,
    ApprovedPlan,
    DomainSkill,
    InternalSkill,
    ModelHeuristic,
}

/// One instruction in force for a dispatch.
#[derive(Clone, Debug, PartialEq)]
pub struct Instruction {
    pub source: InstructionSource,
    pub text: String,
}

/// Everything the engine decides from, besides the artifact.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Inputs {
    /// The workflow's tasks (those of other workflows are ignored).
    pub tasks: Vec<Task>,
    pub outputs: AgentOutputs,
    /// Instructions that may conflict; given, the precedence gate decides.
    pub instructions: Vec<Instruction>,
    /// Workflow uuids of earlier sessions.
    pub previous_workflow_ids: Vec<String>,
}

/// A task to create.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FollowUp {
    pub kind: TaskKind,
    pub phase: String,
    pub scope: String,
    pub reason: String,
}

/// A change to the artifact. [`Decision::apply`] applies them in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    PhaseCursor(Option<String>),
    PhaseStatus {
        phase: String,
        status: String,
    },
    Convergence(Convergence),
    ProofStatus(String),
    PendingGate(Option<Gate>),
    BuildScope(String),
    Plan {
        file: String,
        mode: Option<String>,
        rigor: Option<String>,
    },
    DesignFile(String),
    PlanningReview {
        status: String,
        runs: u32,
    },
    ResearchQuality {
        web: Option<String>,
        github: Option<String>,
        overall: Option<String>,
    },
    MemorySync(MemorySync),
    Result {
        agent: String,
        value: Value,
    },
    LoopCounts {
        re_review: u32,
        re_hunt: u32,
        re_verify: u32,
    },
    Status(HistoryEntry),
    Remediation(HistoryEntry),
}

impl Change {
    fn apply(&self, a: &mut Artifact) {
        match self {
            Change::PhaseCursor(c) => a.phase_cursor = c.clone(),
            Change::PhaseStatus { phase, status } => {
                a.phase_status.insert(phase.clone(), json!(status));
            }
            Change::Convergence(c) => a.quality.convergence_state = *c,
            Change::ProofStatus(p) => a.proof_status = Some(p.clone()),
            Change::PendingGate(g) => a.pending_gate = g.map(|g| g.as_str().to_string()),
            Change::BuildScope(s) => a.build_scope = Some(s.clone()),
            Change::Plan { file, mode, rigor } => {
                a.plan_file = Some(file.clone());
                if mode.is_some() {
                    a.plan_mode = mode.clone();
                }
                if rigor.is_some() {
                    a.verification_rigor = rigor.clone();
                }
            }
            Change::DesignFile(f) => a.design_file = Some(f.clone()),
            Change::PlanningReview { status, runs } => {
                a.planning_review_status = Some(status.clone());
                a.planning_review_runs = *runs;
            }
            Change::ResearchQuality {
                web,
                github,
                overall,
            } => {
                let q = &mut a.research_quality;
                q.web = web.clone().or(q.web.take());
                q.github = github.clone().or(q.github.take());
                q.overall = overall.clone().or(q.overall.take());
                a.quality.research_quality = q.overall.clone();
            }
            Change::MemorySync(m) => {
                let s = a.memory_sync.get_or_insert_with(MemorySync::default);
                s.blocking_exit_persisted = m.blocking_exit_persisted.or(s.blocking_exit_persisted);
                s.design_reference_persisted = m
                    .design_reference_persisted
                    .or(s.design_reference_persisted);
                s.plan_recent_change_persisted = m
                    .plan_recent_change_persisted
                    .or(s.plan_recent_change_persisted);
                s.next_step_persisted = m.next_step_persisted.or(s.next_step_persisted);
            }
            Change::Result { agent, value } => {
                a.results.insert(agent.clone(), value.clone());
            }
            Change::LoopCounts {
                re_review,
                re_hunt,
                re_verify,
            } => {
                let l = &mut a.telemetry.loop_counts;
                l.re_review += re_review;
                l.re_hunt += re_hunt;
                l.re_verify += re_verify;
            }
            Change::Status(e) => a.status_history.push(e.clone()),
            Change::Remediation(e) => a.remediation_history.push(e.clone()),
        }
    }
}

/// A change to a task's state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskUpdate {
    pub task: String,
    pub status: TaskStatus,
}

/// What the engine decided.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    pub action: Action,
    pub pending_gate: Option<Gate>,
    pub follow_up_tasks: Vec<FollowUp>,
    pub task_updates: Vec<TaskUpdate>,
    pub changes: Vec<Change>,
    /// Whether the workflow uuid equals one of an earlier session.
    pub collides_with_previous_session: bool,
    /// The instruction source that governs, when the precedence gate ran.
    pub precedence_winner: Option<InstructionSource>,
    /// Why, in one line.
    pub reason: String,
}

impl Decision {
    /// The artifact with this decision's changes applied.
    pub fn apply(&self, artifact: &Artifact) -> Artifact {
        let mut out = artifact.clone();
        for change in &self.changes {
            change.apply(&mut out);
        }
        out
    }
}

/// Decides what the workflow does next.
pub fn decide(artifact: &Artifact, inputs: &Inputs) -> Decision {
    let collides = inputs
        .previous_workflow_ids
        .iter()
        .any(|id| id == &artifact.workflow_uuid);
    let mut d = Draft::new(artifact, inputs);
    d.collides = collides;
    d.run();
    d.finish()
}

/// A decision being built: the outcome so far and the changes collected on the way.
struct Draft<'a> {
    a: &'a Artifact,
    inputs: &'a Inputs,
    /// The workflow's own tasks, as updated so far.
    tasks: Vec<Task>,
    outcome: Option<(Action, String)>,
    gate: Option<Gate>,
    follow_ups: Vec<FollowUp>,
    task_updates: Vec<TaskUpdate>,
    changes: Vec<Change>,
    collides: bool,
    winner: Option<InstructionSource>,
}

impl<'a> Draft<'a> {
    fn new(a: &'a Artifact, inputs: &'a Inputs) -> Self {
        let tasks = inputs
            .tasks
            .iter()
            .filter(|t| t.wf.as_deref().is_none_or(|wf| wf == a.workflow_uuid))
            .cloned()
            .collect();
        Draft {
            a,
            inputs,
            tasks,
            outcome: None,
            gate: None,
            follow_ups: Vec::new(),
            task_updates: Vec::new(),
            changes: Vec::new(),
            collides: false,
            winner: None,
        }
    }

    fn finish(self) -> Decision {
        let (action, reason) = self
            .outcome
            .unwrap_or((Action::StopInvalidOutput, "no rule decided".to_string()));
        Decision {
            action,
            pending_gate: self.gate,
            follow_up_tasks: self.follow_ups,
            task_updates: self.task_updates,
            changes: self.changes,
            collides_with_previous_session: self.collides,
            precedence_winner: self.winner,
            reason,
        }
    }

    fn decide(&mut self, action: Action, reason: impl Into<String>) {
        self.outcome = Some((action, reason.into()));
    }

    /// Stops the chain: convergence needs another iteration, and a gate when the user decides.
    fn stop(&mut self, action: Action, gate: Option<Gate>, reason: impl Into<String>) {
        let reason = reason.into();
        self.changes
            .push(Change::Convergence(Convergence::NeedsIteration));
        if gate.is_some() {
            self.changes.push(Change::PendingGate(gate));
        }
        self.gate = gate;
        self.changes.push(Change::Status(HistoryEntry::new(
            "workflow_stopped",
            self.a.phase_cursor.as_deref(),
            &reason,
        )));
        self.decide(action, reason);
    }

    fn invalid(&mut self, agent: &str, problems: &[String]) {
        self.stop(
            Action::StopInvalidOutput,
            None,
            format!("{agent} output fails its contract: {}", problems.join("; ")),
        );
    }

    fn result(&mut self, agent: &str, value: Value) {
        self.changes.push(Change::Result {
            agent: agent.to_string(),
            value,
        });
    }

    fn run(&mut self) {
        if self.identity_stops() {
            return;
        }
        if !self.inputs.instructions.is_empty() {
            self.precedence();
            return;
        }
        let Some(kind) = self.a.workflow_type else {
            self.stop(
                Action::StopInvalidOutput,
                None,
                "workflow_type is still pending: route first",
            );
            return;
        };
        let outputs = &self.inputs.outputs;
        if outputs.is_empty() && self.completed_remfix().is_none() {
            self.idle(kind);
            return;
        }
        match kind {
            WorkflowKind::Build | WorkflowKind::Debug => self.write_chain(kind),
            WorkflowKind::Plan => self.plan(),
            WorkflowKind::Review => self.review(),
            WorkflowKind::Triage => {
                self.read_only_report(outputs.triage.as_ref(), "triage", Action::PresentBrief)
            }
            WorkflowKind::CodebaseHealth => self.read_only_report(
                outputs.scanner.as_ref(),
                "architecture scanner",
                Action::PresentReport,
            ),
            WorkflowKind::Orient => self.decide(Action::AnswerInline, "ORIENT answers inline"),
        }
    }

    /// The workflow uuid must be well formed, equal its alias and be new.
    fn identity_stops(&mut self) -> bool {
        let a = self.a;
        let problem = if let Err(p) = check_workflow_uuid(&a.workflow_uuid) {
            Some(p)
        } else if a
            .workflow_id
            .as_deref()
            .is_some_and(|id| id != a.workflow_uuid)
        {
            Some("workflow_id differs from workflow_uuid".to_string())
        } else {
            None
        };
        if let Some(problem) = problem {
            self.stop(
                Action::StopInvalidOutput,
                None,
                format!("workflow identity: {problem}"),
            );
            return true;
        }
        if self.collides {
            self.stop(
                Action::StopIdentityCollision,
                None,
                "workflow uuid equals an earlier session's: generate a new one",
            );
            return true;
        }
        false
    }

    /// Skill precedence: the request is what is done; among the standing instructions the
    /// strongest source governs how, and the resolution is recorded.
    fn precedence(&mut self) {
        let standing = self
            .inputs
            .instructions
            .iter()
            .filter(|i| i.source != InstructionSource::UserPrompt)
            .map(|i| i.source)
            .min();
        let winner = standing.unwrap_or(InstructionSource::UserPrompt);
        self.winner = Some(winner);
        let action = match winner {
            InstructionSource::UserPrompt | InstructionSource::ProjectStandard => {
                Action::RespectUserStandard
            }
            InstructionSource::ApprovedPlan => Action::FollowApprovedPlan,
            InstructionSource::DomainSkill
            | InstructionSource::InternalSkill
            | InstructionSource::ModelHeuristic => Action::ApplySkill,
        };
        let reason = format!("skill precedence: {winner:?} governs");
        self.changes.push(Change::Status(HistoryEntry::new(
            "precedence_resolved",
            self.a.phase_cursor.as_deref(),
            &reason,
        )));
        self.decide(action, reason);
    }

    /// No agent reported and no remediation finished.
    fn idle(&mut self, kind: WorkflowKind) {
        if self.a.telemetry.metrics_available() {
            self.decide(
                Action::ReportLatencyBreakdown,
                "nothing new to route; the recorded timings explain where the time went",
            );
            return;
        }
        let blocked = self.a.quality.convergence_state == Convergence::NeedsIteration
            && !self.tasks.iter().any(Task::is_open);
        if blocked && matches!(kind, WorkflowKind::Build | WorkflowKind::Debug) {
            self.changes.push(Change::MemorySync(MemorySync {
                blocking_exit_persisted: Some(true),
                ..MemorySync::default()
            }));
            self.stop(
                Action::StopAfterMemorySync,
                None,
                "blocked with nothing runnable: memory is persisted before the workflow stops",
            );
            return;
        }
        match kind {
            WorkflowKind::Build => self.decide(Action::RunBuilder, "run the phase at the cursor"),
            WorkflowKind::Debug => self.decide(Action::RunInvestigator, "investigate"),
            WorkflowKind::Plan => self.next_plan_node(),
            WorkflowKind::Review => self.decide(Action::RunReviewer, "run the advisory review"),
            WorkflowKind::Triage => self.decide(Action::RunTriageAgent, "triage the report"),
            WorkflowKind::CodebaseHealth => {
                self.decide(Action::RunArchitectureScanner, "scan the architecture")
            }
            WorkflowKind::Orient => self.decide(Action::AnswerInline, "ORIENT answers inline"),
        }
    }

    fn completed_remfix(&self) -> Option<&Task> {
        self.tasks
            .iter()
            .find(|t| t.kind == Some(TaskKind::Remfix) && t.status == Some(TaskStatus::Completed))
    }

    fn full_graph(&self) -> bool {
        self.a.build_scope.as_deref() == Some("standard")
    }

    /// Remediation cycles so far: the artifact's history is authoritative, tasks can only add.
    fn remediation_cycles(&self) -> usize {
        let tasks = self
            .tasks
            .iter()
            .filter(|t| t.kind == Some(TaskKind::Remfix))
            .count();
        self.a.remediation_history.len().max(tasks)
    }

    /// Creates a remediation task unless the circuit breaker asks the user first.
    fn remediate(&mut self, origin: &str, scope: &str, reason: &str) {
        let cycles = self.remediation_cycles();
        if cycles >= MAX_REMEDIATION_CYCLES {
            self.stop(
                Action::PauseForCircuitBreaker,
                Some(Gate::CircuitBreaker),
                format!("{cycles} remediation cycles already: ask the user how to proceed"),
            );
            return;
        }
        let phase = self.a.phase_cursor.clone();
        self.follow_ups.push(FollowUp {
            kind: TaskKind::Remfix,
            phase: phase.clone().unwrap_or_else(|| "N/A".into()),
            scope: scope.to_string(),
            reason: reason.to_string(),
        });
        let mut entry = HistoryEntry::new("remediation_created", phase.as_deref(), reason);
        entry.extra.insert("cycle_number".into(), json!(cycles + 1));
        entry.extra.insert("origin".into(), json!(origin));
        self.changes.push(Change::Remediation(entry));
        self.stop(
            Action::CreateRemfix,
            None,
            format!("remediation for {origin}: {reason}"),
        );
    }

    /// BUILD and DEBUG: remediation loop, merged findings, builder or investigator, reviewer,
    /// verifier, doc-syncer — each may stop the chain; what passes moves it on.
    fn write_chain(&mut self, kind: WorkflowKind) {
        let outputs = &self.inputs.outputs;
        if let Some(remfix) = self.completed_remfix().cloned() {
            self.recheck(kind, &remfix);
            return;
        }
        if let Some(f) = &outputs.findings {
            if kind == WorkflowKind::Build && f.critical_issues > 0 && f.high_issues > 0 {
                if self.remediation_cycles() >= MAX_REMEDIATION_CYCLES {
                    self.remediate("code-reviewer", "N/A", "critical and high findings");
                } else {
                    self.stop(
                        Action::PauseForScopeDecision,
                        Some(Gate::ScopeDecision),
                        "critical and high findings: fix critical only, or all issues",
                    );
                }
                return;
            }
            if f.critical_issues > 0 || f.high_issues > 0 {
                self.remediate("code-reviewer", "ALL_ISSUES", "review findings");
                return;
            }
        }
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
            next = Some((
                Action::DebugReview,
                "the fix is proven: review it".to_string(),
            ));
        }
        if let Some(r) = &outputs.reviewer {
            match r.approves() {
                None => return self.invalid("reviewer", &["no readable verdict".into()]),
                Some(false) => {
                    let reason = r
                        .remediation_reason
                        .clone()
                        .unwrap_or("changes requested".into());
                    return self.remediate("code-reviewer", "ALL_ISSUES", &reason);
                }
                Some(true) => next = Some((Action::RunVerifier, "review approved".to_string())),
            }
        }
        if let Some(v) = &outputs.verifier {
            let problems = v.reconcile_problems();
            if !problems.is_empty() {
                return self.invalid("verifier", &problems);
            }
            self.result("verifier", json!({"passed": v.passed()}));
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
            next = Some(self.phase_exit(kind));
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
            self.result(
                "doc_syncer",
                json!({"status": doc.status, "doc_sync_partial": partial}),
            );
            next = Some(self.memory_finalize("documentation synced"));
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

    /// A builder report: `Some(next step)` when the chain goes on, `None` when it stopped.
    fn builder(&mut self, b: &crate::outputs::BuilderReport) -> Option<(Action, String)> {
        let phase = b.phase_id.clone().or(self.a.phase_cursor.clone());
        match (b.status.as_str(), b.phase_status.as_deref()) {
            ("PASS", _) => {
                let problems = b.pass_problems();
                if !problems.is_empty() {
                    self.invalid("builder", &problems);
                    return None;
                }
                self.result("builder", json!({"status": "PASS", "phase_id": phase}));
                if !b.scope_increases.is_empty() && !self.full_graph() {
                    self.changes.push(Change::BuildScope("standard".into()));
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
                        status: state.into(),
                    });
                }
                if let Some(proof) = &b.proof_status {
                    self.changes.push(Change::ProofStatus(proof.clone()));
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
    fn investigator(&mut self, i: &crate::outputs::InvestigatorReport) -> bool {
        match i.status.as_str() {
            "FIXED" => {
                let problems = i.fixed_problems();
                if !problems.is_empty() {
                    self.invalid("investigator", &problems);
                    return false;
                }
                self.result("investigator", json!({"status": "FIXED"}));
                true
            }
            "BLOCKED" if i.needs_external_research => {
                if let Some(r) = &self.inputs.outputs.research {
                    self.changes.push(Change::ResearchQuality {
                        web: r.web_status.clone(),
                        github: r.github_status.clone(),
                        overall: r.overall_quality.clone(),
                    });
                    self.stop(
                        Action::ReinvokeInvestigator,
                        None,
                        "research round done (partial results count): investigate again with it",
                    );
                } else if self.a.research_rounds.len() >= MAX_RESEARCH_ROUNDS {
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
                    for phase in ["research-web", "research-github"] {
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
                let continuations = self
                    .tasks
                    .iter()
                    .filter(|t| t.phase.as_deref() == Some("debug-investigate"))
                    .count()
                    .saturating_sub(1);
                if continuations >= MAX_INVESTIGATION_CONTINUATIONS {
                    self.stop(
                        Action::AskUser,
                        Some(Gate::Clarification),
                        "investigation continued twice",
                    );
                } else {
                    let reason = i
                        .root_cause
                        .clone()
                        .unwrap_or("Continue investigation".into());
                    self.follow_ups.push(FollowUp {
                        kind: TaskKind::Agent,
                        phase: "debug-investigate".into(),
                        scope: "N/A".into(),
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
    fn phase_exit(&mut self, kind: WorkflowKind) -> (Action, String) {
        self.changes.push(Change::ProofStatus("passed".into()));
        if kind == WorkflowKind::Debug {
            return self.memory_finalize("fix verified");
        }
        let cursor = self.a.phase_cursor.clone();
        if let Some(c) = &cursor {
            self.changes.push(Change::PhaseStatus {
                phase: c.clone(),
                status: "completed".into(),
            });
        }
        let listed: Vec<&str> = self
            .a
            .normalized_phases
            .iter()
            .filter_map(|p| p.get("phase_id").and_then(Value::as_str))
            .collect();
        let position = cursor
            .as_deref()
            .and_then(|c| listed.iter().position(|p| *p == c));
        let next_listed = position
            .and_then(|i| listed.get(i + 1))
            .map(|p| p.to_string());
        let next = next_listed
            .clone()
            .or_else(|| cursor.as_deref().and_then(next_phase_id));
        self.changes.push(Change::PhaseCursor(next.clone()));
        if let Some(n) = next_listed {
            self.changes.push(Change::Convergence(Convergence::Pending));
            return (Action::RunBuilder, format!("phase exit passed: build {n}"));
        }
        if self.full_graph() && self.inputs.outputs.doc_syncer.is_none() {
            return (
                Action::RunDocSyncer,
                "last phase verified: sync the docs".into(),
            );
        }
        self.memory_finalize("last phase verified")
    }

    fn memory_finalize(&mut self, why: &str) -> (Action, String) {
        let proven = self.a.proof_status.as_deref() == Some("passed")
            || self.changes.contains(&Change::ProofStatus("passed".into()));
        if proven {
            self.changes.push(Change::Convergence(Convergence::Stable));
        }
        (Action::MemoryFinalize, format!("{why}: persist memory"))
    }

    /// A remediation finished: circuit breaker, proof of the fix, then the re-check tasks.
    fn recheck(&mut self, kind: WorkflowKind, remfix: &Task) {
        let completed = self
            .tasks
            .iter()
            .filter(|t| t.kind == Some(TaskKind::Remfix) && t.status == Some(TaskStatus::Completed))
            .count()
            .max(self.a.remediation_history.len());
        if completed >= MAX_REMEDIATION_CYCLES {
            self.stop(
                Action::PauseForCircuitBreaker,
                Some(Gate::CircuitBreaker),
                format!("{completed} remediation cycles done: a human decides what next"),
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
                    t.phase.as_deref(),
                    Some("build-verify" | "debug-verify" | "re-verify")
                )
        });
        let mut phases = vec![("re-review", TaskKind::Agent)];
        if hunt {
            phases.push(("re-hunt", TaskKind::Agent));
        }
        if !verifier_pending {
            phases.push(("re-verify", TaskKind::Reverify));
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

    /// PLAN: design hand-off, planner, fresh review — then the next node of the review graph.
    fn plan(&mut self) {
        let outputs = &self.inputs.outputs;
        if let Some(h) = &outputs.design_handoff {
            if let Some(file) = h.design_file.clone().filter(|f| !f.trim().is_empty()) {
                self.changes.push(Change::DesignFile(file));
                self.changes.push(Change::MemorySync(MemorySync {
                    design_reference_persisted: Some(true),
                    plan_recent_change_persisted: Some(true),
                    next_step_persisted: Some(true),
                    ..MemorySync::default()
                }));
            }
        }
        if let Some(p) = &outputs.planner {
            let replanned = self.node_done("re-plan");
            match p.status.as_str() {
                "NEEDS_CLARIFICATION" => {
                    if !replanned {
                        self.prune(&["plan-review-gap-1", "re-plan", "plan-review-gap-2"]);
                    }
                    let reason = p
                        .remediation_reason
                        .clone()
                        .unwrap_or("the planner needs answers".into());
                    return self.stop(Action::AskUser, Some(Gate::Clarification), reason);
                }
                "PLAN_CREATED" | "DECISION_RFC_CREATED" => {
                    let problems = p.plan_problems();
                    if !problems.is_empty() {
                        return self.invalid("planner", &problems);
                    }
                    self.changes.push(Change::Plan {
                        file: p.plan_file.clone().unwrap_or_default(),
                        mode: p.plan_mode.clone(),
                        rigor: p.verification_rigor.clone(),
                    });
                    self.complete_node(if replanned { "re-plan" } else { "plan-create" });
                }
                other => {
                    return self.invalid("planner", &[format!("STATUS {other:?} is not a state")])
                }
            }
        }
        if let Some(r) = &outputs.plan_review {
            let Some(passes) = r.passes() else {
                return self.invalid("plan-gap-reviewer", &[format!("STATUS {:?}", r.status)]);
            };
            // The second pass is the one after a re-plan.
            let pass = if self.node_done("re-plan") { 2 } else { 1 };
            let runs = (self.a.planning_review_runs + 1).max(pass);
            self.complete_node(if pass == 2 {
                "plan-review-gap-2"
            } else {
                "plan-review-gap-1"
            });
            self.result(
                "planning_reviewer",
                json!({"status": r.status, "pass": pass}),
            );
            if passes {
                self.changes.push(Change::PlanningReview {
                    status: "passed".into(),
                    runs,
                });
                self.prune(&["re-plan", "plan-review-gap-2"]);
            } else if pass == 1 {
                self.changes.push(Change::PlanningReview {
                    status: "findings_received".into(),
                    runs,
                });
                self.changes
                    .push(Change::Convergence(Convergence::NeedsIteration));
            } else {
                self.changes.push(Change::PlanningReview {
                    status: "needs_clarification".into(),
                    runs,
                });
                let reason = r
                    .replan_reason
                    .clone()
                    .unwrap_or("the plan still has findings".into());
                return self.stop(Action::AskUser, Some(Gate::Clarification), reason);
            }
        }
        self.next_plan_node();
    }

    fn node(&self, phase: &str) -> Option<&Task> {
        self.tasks
            .iter()
            .find(|t| t.phase.as_deref() == Some(phase))
    }

    fn node_done(&self, phase: &str) -> bool {
        self.node(phase)
            .is_some_and(|t| t.status == Some(TaskStatus::Completed))
    }

    fn set_status(&mut self, phases: &[&str], status: TaskStatus) {
        for t in self.tasks.iter_mut() {
            if t.is_open() && t.phase.as_deref().is_some_and(|p| phases.contains(&p)) {
                t.status = Some(status);
                self.task_updates.push(TaskUpdate {
                    task: t.id.clone(),
                    status,
                });
            }
        }
    }

    fn complete_node(&mut self, phase: &str) {
        self.set_status(&[phase], TaskStatus::Completed);
    }

    /// Marks unused review branches deleted, so nothing stays blocked on them.
    fn prune(&mut self, phases: &[&str]) {
        self.set_status(phases, TaskStatus::Deleted);
    }

    /// The first open PLAN node whose blockers are all done; none left: the plan goes to BUILD.
    fn next_plan_node(&mut self) {
        let done = |id: &str| {
            self.tasks.iter().any(|t| {
                t.id == id && matches!(t.status, Some(TaskStatus::Completed | TaskStatus::Deleted))
            })
        };
        let runnable = self
            .tasks
            .iter()
            .find(|t| t.is_open() && t.blocked_by.iter().all(|b| done(b)))
            .and_then(|t| t.phase.clone());
        let runs = self.a.planning_review_runs;
        let reviewed = self
            .changes
            .iter()
            .any(|c| matches!(c, Change::PlanningReview { .. }));
        match runnable.as_deref() {
            Some("plan-create") if self.a.design_file.is_some() || self.has_design() => self
                .decide(
                    Action::RunPlannerWithDesignFile,
                    "plan from the design file",
                ),
            Some("plan-create") => self.decide(Action::RunPlanner, "create the plan"),
            Some(p @ ("plan-review-gap-1" | "plan-review-gap-2")) => {
                if !reviewed {
                    self.changes.push(Change::PlanningReview {
                        status: "pending_review".into(),
                        runs,
                    });
                }
                let action = if p == "plan-review-gap-1" {
                    Action::RunPlanReviewPass1
                } else {
                    Action::RunPlanReviewPass2
                };
                self.decide(action, "fresh review of the saved plan")
            }
            Some("re-plan") => {
                self.decide(Action::RunPlannerReplan, "revise the plan after findings")
            }
            Some("memory-finalize") => {
                let (action, reason) = self.memory_finalize("plan reviewed");
                self.decide(action, reason)
            }
            Some(other) => self.stop(
                Action::StopInvalidOutput,
                None,
                format!("PLAN graph node {other:?} is not a PLAN phase"),
            ),
            None => self.decide(Action::CreateBuildWorkflow, "the plan is final: build it"),
        }
    }

    fn has_design(&self) -> bool {
        self.changes
            .iter()
            .any(|c| matches!(c, Change::DesignFile(_)))
    }

    /// REVIEW is advisory: changes requested offers a BUILD, it never creates a fix.
    fn review(&mut self) {
        let Some(r) = &self.inputs.outputs.reviewer else {
            return self.invalid("review", &["no reviewer output".into()]);
        };
        match r.approves() {
            None => self.invalid("reviewer", &["no readable verdict".into()]),
            Some(true) => {
                let (action, reason) = self.memory_finalize("review approved");
                self.decide(action, reason)
            }
            Some(false) => {
                let reason = r
                    .remediation_reason
                    .clone()
                    .unwrap_or("changes requested".into());
                self.stop(
                    Action::OfferBuildTransition,
                    None,
                    format!("{reason}: offer a BUILD"),
                );
            }
        }
    }

    fn read_only_report(&mut self, report: Option<&ReadOnlyReport>, agent: &str, done: Action) {
        let Some(r) = report else {
            return self.invalid(agent, &["no report".into()]);
        };
        if r.status.trim().is_empty() || r.path.as_deref().is_none_or(|p| p.trim().is_empty()) {
            return self.invalid(
                agent,
                &["a status and the path written are required".into()],
            );
        }
        self.result(agent, json!({"status": r.status, "path": r.path}));
        if r.blocking {
            return self.stop(
                Action::AskUser,
                Some(Gate::Clarification),
                format!("{agent} is blocked"),
            );
        }
        self.decide(done, format!("{agent} finished: {}", r.status));
    }
}

/// `phase-1` → `phase-2`: the id with its trailing number incremented.
fn next_phase_id(id: &str) -> Option<String> {
    let digits = id.len() - id.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return None;
    }
    let (stem, number) = id.split_at(id.len() - digits);
    let n: u64 = number.parse().ok()?;
    Some(format!("{stem}{}", n + 1))
}
