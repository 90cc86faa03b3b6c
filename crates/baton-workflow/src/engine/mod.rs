//! The workflow decision engine: given the artifact, the workflow's tasks and what agents
//! returned, it decides the next action, the gate the workflow waits on, the tasks to create and
//! the changes to the artifact. It is a pure function: no I/O, no clock, no model.
//!
//! The rules are cc10x's router rules (`docs/workflows.md` lists them): identity first, then
//! the skill precedence gate, then the workflow's own chain, each agent's output checked before
//! it is believed, and any failure stopping the chain until remediation, research or the user
//! clears it.

use serde::{Deserialize, Serialize};

use crate::artifact::{
    check_workflow_uuid, Artifact, BuildScope, Convergence, HistoryEntry, MemorySync, PhaseStatus,
    PlanMode, PlanningReviewStatus, ProofStatus, Task, TaskKind, TaskStatus, VerificationRigor,
};
use crate::outputs::AgentOutputs;
use crate::results::AgentResult;
use crate::route::WorkflowKind;

mod chain;
#[cfg(test)]
mod contract_tests;
pub mod fan_in;
mod plan;

/// Remediation cycles allowed before a human checkpoint.
pub const MAX_REMEDIATION_CYCLES: usize = 3;
/// Investigation continuations allowed before asking the user.
pub const MAX_INVESTIGATION_CONTINUATIONS: usize = 2;
/// Research rounds allowed before asking the user.
pub const MAX_RESEARCH_ROUNDS: usize = 2;
/// Remediation cycles on one phase that did not converge, after which research runs before the
/// next fix (remediation-and-research.md:214-224: "two or more remediation cycles on the same
/// issue without convergence").
pub const STUCK_CYCLES: usize = 2;
/// How the reason of that research starts (then the phase, a colon and what is being fixed).
pub const STUCK_RESEARCH: &str = "remediation without convergence on";

/// The reason of the research a phase's stuck remediation gets (then `: ` and what is fixed).
pub fn stuck_reason(phase: Option<&str>) -> String {
    format!("{STUCK_RESEARCH} {}", phase.unwrap_or("the work"))
}

/// Remediation cycles created on the phase at the cursor.
fn phase_cycles(a: &Artifact) -> usize {
    a.remediation_history
        .iter()
        .filter(|e| e.event == "remediation_created" && e.phase == a.phase_cursor)
        .count()
}

/// The research task made for the stuck remediation of the phase at the cursor, if any.
fn stuck_research<'t>(a: &Artifact, tasks: &'t [Task]) -> Option<&'t Task> {
    let reason = format!("{}: ", stuck_reason(a.phase_cursor.as_deref()));
    tasks.iter().find(|t| {
        t.kind == Some(TaskKind::Research)
            && t.reason.as_deref().is_some_and(|r| r.starts_with(&reason))
    })
}

/// The phase's remediation went [`STUCK_CYCLES`] cycles without converging, and no research ran
/// for it yet (once per phase, within the workflow's research rounds): the next fix waits for a
/// research round. The engine asks it before each fix it creates, and the runner before a fix a
/// gate's answer creates.
pub fn stuck_without_research(a: &Artifact, tasks: &[Task]) -> bool {
    phase_cycles(a) >= STUCK_CYCLES
        && a.research_rounds.len() < MAX_RESEARCH_ROUNDS
        && stuck_research(a, tasks).is_none()
}

/// What the router does next. The wire spellings are the snake_case names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    RunBuilder,
    RunReviewAndHunt,
    RunVerifier,
    RunDocSyncer,
    RunInvestigator,
    RunReviewer,
    /// PLAN: explore the request with the user before the planner; may save a design.
    RunBrainstorming,
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
    /// Every phase of a planned BUILD verified: a final whole-branch review is offered.
    OfferFinalReview,
    /// The reviewer approves but the failure-hunter reports HIGH issues: remediate or proceed.
    PauseForHunterFindings,
    /// The verifier failed and recommends reverting: revert or fix.
    PauseForRevertDecision,
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

pub use crate::artifact::Gate;

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
    /// Remediation cycles the user allowed past the circuit breaker (`one more cycle`): it trips
    /// again only after as many more.
    pub breaker_allowance: usize,
    /// `DIFF_DRIVEN_DOCS: skip`: the chain goes from the verifier to memory, no doc-syncer.
    pub doc_sync_skipped: bool,
    /// The tasks whose outputs are being decided (the batch that just ran).
    pub batch: Vec<String>,
    /// DEBUG fan-out: the files each scoped investigator edited, by task id.
    pub edited: std::collections::BTreeMap<String, Vec<String>>,
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
        status: PhaseStatus,
    },
    Convergence(Convergence),
    ProofStatus(ProofStatus),
    PendingGate(Option<Gate>),
    BuildScope(BuildScope),
    Plan {
        file: String,
        mode: Option<PlanMode>,
        rigor: Option<VerificationRigor>,
    },
    DesignFile(String),
    /// The research offered before planning: the topics named.
    ResearchOffered(Vec<String>),
    /// The Doubt Pass's objections, saved in this file.
    DoubtFile(String),
    PlanningReview {
        status: PlanningReviewStatus,
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
        value: AgentResult,
    },
    /// Where the final whole-branch review stands (`clean`, `fixed`).
    FinalReview(&'static str),
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
                a.phase_status.insert(phase.clone(), *status);
            }
            Change::Convergence(c) => a.quality.convergence_state = *c,
            Change::ProofStatus(p) => a.proof_status = Some(*p),
            Change::PendingGate(g) => a.pending_gate = *g,
            Change::BuildScope(s) => a.build_scope = Some(*s),
            Change::Plan { file, mode, rigor } => {
                a.plan_file = Some(file.clone());
                if mode.is_some() {
                    a.plan_mode = *mode;
                }
                if rigor.is_some() {
                    a.verification_rigor = *rigor;
                }
            }
            Change::DesignFile(f) => a.design_file = Some(f.clone()),
            Change::DoubtFile(f) => {
                if let Some(d) = a.results.doubt_pass.as_mut() {
                    d.file = Some(f.clone());
                }
            }
            Change::ResearchOffered(topics) => {
                a.results.research_offer = Some(crate::results::ResearchOffer {
                    topics: topics.clone(),
                    choice: None,
                });
            }
            Change::PlanningReview { status, runs } => {
                a.planning_review_status = Some(*status);
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
                a.results.agents.insert(agent.clone(), Some(value.clone()));
            }
            Change::FinalReview(status) => {
                a.results.final_branch_review = Some(crate::results::FinalReview {
                    status: status.to_string(),
                    task: None,
                });
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

    fn result(&mut self, agent: &str, value: AgentResult) {
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
        let research_pending = self.tasks.iter().any(|t| {
            t.is_open()
                && matches!(
                    t.node(),
                    Some(
                        crate::artifact::Phase::ResearchWeb
                            | crate::artifact::Phase::ResearchGithub
                    )
                )
        });
        match kind {
            WorkflowKind::Build => self.decide(Action::RunBuilder, "run the phase at the cursor"),
            WorkflowKind::Debug if research_pending => self.decide(
                Action::SpawnResearch,
                "the request asks for research before the investigation",
            ),
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
        self.a.build_scope == Some(BuildScope::Standard)
    }

    /// Remediation cycles so far: the artifact's history is authoritative, tasks can only add.
    /// The remediation cycles after which the circuit breaker trips: cc10x's three, and each
    /// one more the user allowed.
    fn breaker_limit(&self) -> usize {
        MAX_REMEDIATION_CYCLES + self.inputs.breaker_allowance
    }

    /// ` (N more allowed past the breaker)` when the user allowed any.
    fn allowed_more(&self) -> String {
        match self.inputs.breaker_allowance {
            0 => String::new(),
            n => format!(" ({MAX_REMEDIATION_CYCLES}, and {n} more you allowed)"),
        }
    }

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
        if cycles >= self.breaker_limit() {
            self.stop(
                Action::PauseForCircuitBreaker,
                Some(Gate::CircuitBreaker),
                format!(
                    "{cycles} remediation cycles already{}: ask the user how to proceed",
                    self.allowed_more()
                ),
            );
            return;
        }
        if self.stuck_without_research() {
            let why = format!("{}: {reason}", self.stuck_reason());
            use crate::artifact::Phase;
            for phase in [Phase::ResearchWeb.as_str(), Phase::ResearchGithub.as_str()] {
                self.follow_ups.push(FollowUp {
                    kind: TaskKind::Research,
                    phase: phase.into(),
                    scope: scope.to_string(),
                    reason: why.clone(),
                });
            }
            let mut entry =
                HistoryEntry::new("research_triggered", self.a.phase_cursor.as_deref(), &why);
            entry.origin = Some(origin.to_string());
            self.changes.push(Change::Status(entry));
            self.stop(
                Action::SpawnResearch,
                None,
                format!(
                    "{} remediation cycles on this phase did not converge: research before the next fix ({reason})",
                    phase_cycles(self.a)
                ),
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
        entry.cycle_number = Some(cycles as u32 + 1);
        entry.origin = Some(origin.to_string());
        self.changes.push(Change::Remediation(entry));
        self.stop(
            Action::CreateRemfix,
            None,
            format!("remediation for {origin}: {reason}"),
        );
    }

    fn stuck_reason(&self) -> String {
        stuck_reason(self.a.phase_cursor.as_deref())
    }

    fn stuck_without_research(&self) -> bool {
        stuck_without_research(self.a, &self.tasks)
    }

    /// A research round made for a stuck remediation is in: the fix it was made for is created,
    /// and its builder reads the round's files. `false` when the round was not made for that.
    fn fix_after_research(&mut self, r: &crate::outputs::ResearchOutcome) -> bool {
        let prefix = format!("{}: ", self.stuck_reason());
        let latest = self
            .tasks
            .iter()
            .rev()
            .find(|t| t.kind == Some(TaskKind::Research));
        let Some(task) =
            latest.filter(|t| t.reason.as_deref().is_some_and(|r| r.starts_with(&prefix)))
        else {
            return false;
        };
        let reason = task
            .reason
            .as_deref()
            .and_then(|r| r.strip_prefix(&prefix))
            .unwrap_or("review findings")
            .to_string();
        let scope = task.scope.clone().unwrap_or_else(|| "ALL_ISSUES".into());
        // The origin the research was triggered for (a verifier's failure, or a review).
        let origin = self
            .a
            .status_history
            .iter()
            .rev()
            .find(|e| e.event == "research_triggered")
            .and_then(|e| e.origin.clone())
            .unwrap_or_else(|| "code-reviewer".into());
        self.research_in(r);
        self.remediate(&origin, &scope, &reason);
        true
    }

    fn memory_finalize(&mut self, why: &str) -> (Action, String) {
        let proven = self.a.proof_status == Some(ProofStatus::Passed)
            || self
                .changes
                .contains(&Change::ProofStatus(ProofStatus::Passed));
        if proven {
            self.changes.push(Change::Convergence(Convergence::Stable));
        }
        (Action::MemoryFinalize, format!("{why}: persist memory"))
    }
}

#[cfg(test)]
mod tests {
    use super::chain::next_phase_id;
    use super::*;
    use crate::artifact::NormalizedPhase;
    use crate::outputs::{MergedFindings, RemfixReport};
    use pretty_assertions::assert_eq;

    const WF: &str = "wf-20260312T161600Z-0badcafe";

    fn build(scope: Option<&str>) -> Artifact {
        Artifact {
            workflow_uuid: WF.into(),
            workflow_type: Some(WorkflowKind::Build),
            build_scope: scope.and_then(BuildScope::parse),
            phase_cursor: Some("phase-2".into()),
            ..Artifact::default()
        }
    }

    fn remfix() -> Task {
        Task {
            id: "r1".into(),
            status: Some(TaskStatus::Completed),
            wf: Some(WF.into()),
            kind: Some(TaskKind::Remfix),
            scope: Some("CRITICAL_ONLY".into()),
            reason: Some("fix it".into()),
            ..Task::default()
        }
    }

    fn proof() -> RemfixReport {
        RemfixReport {
            covering_tests: vec!["settings.test.ts".into()],
            test_command: Some("npm test -- settings".into()),
            test_output: Some("1 passed".into()),
        }
    }

    #[test]
    fn a_proven_remediation_spawns_the_rechecks_of_its_graph() {
        let mut inputs = Inputs {
            tasks: vec![remfix()],
            ..Inputs::default()
        };
        inputs.outputs.remfix = Some(proof());
        let full = decide(&build(Some("standard")), &inputs);
        assert_eq!(full.action, Action::SpawnRecheckTasks);
        let phases: Vec<&str> = full
            .follow_up_tasks
            .iter()
            .map(|f| f.phase.as_str())
            .collect();
        assert_eq!(phases, ["re-review", "re-hunt", "re-verify"]);
        assert!(full
            .follow_up_tasks
            .iter()
            .all(|f| f.scope == "CRITICAL_ONLY"));
        let after = full.apply(&build(Some("standard")));
        assert_eq!(after.telemetry.loop_counts.re_hunt, 1);
        let trivial = decide(&build(Some("trivial")), &inputs);
        let phases: Vec<&str> = trivial
            .follow_up_tasks
            .iter()
            .map(|f| f.phase.as_str())
            .collect();
        assert_eq!(phases, ["re-review", "re-verify"]);
    }

    #[test]
    fn tasks_of_another_workflow_are_ignored() {
        let mut other = remfix();
        other.wf = Some("wf-20260101T000000Z-deadbeef".into());
        let d = decide(
            &build(None),
            &Inputs {
                tasks: vec![other],
                ..Inputs::default()
            },
        );
        assert_eq!(d.action, Action::RunBuilder);
    }

    #[test]
    fn the_fourth_remediation_waits_for_a_human() {
        let mut artifact = build(None);
        artifact.remediation_history = vec![HistoryEntry::default(); 3];
        let mut inputs = Inputs::default();
        inputs.outputs.findings = Some(MergedFindings {
            critical_issues: 1,
            ..MergedFindings::default()
        });
        let d = decide(&artifact, &inputs);
        assert_eq!(d.action, Action::PauseForCircuitBreaker);
        assert_eq!(d.pending_gate, Some(Gate::CircuitBreaker));
        artifact.remediation_history.pop();
        let d = decide(&artifact, &inputs);
        assert_eq!(d.action, Action::CreateRemfix);
        let after = d.apply(&artifact);
        assert_eq!(after.remediation_history.len(), 3);
        assert_eq!(after.remediation_history[2].cycle_number, Some(3));
    }

    #[test]
    fn a_colliding_or_malformed_identity_stops() {
        let inputs = Inputs {
            previous_workflow_ids: vec![WF.into()],
            ..Inputs::default()
        };
        let d = decide(&build(None), &inputs);
        assert_eq!(d.action, Action::StopIdentityCollision);
        assert!(d.collides_with_previous_session);
        let mut artifact = build(None);
        artifact.workflow_id = Some("wf-20260312T161600Z-other".into());
        assert_eq!(
            decide(&artifact, &Inputs::default()).action,
            Action::StopInvalidOutput
        );
    }

    #[test]
    fn an_approved_plan_beats_a_skill_when_no_standard_is_given() {
        let inputs = Inputs {
            instructions: vec![
                Instruction {
                    source: InstructionSource::DomainSkill,
                    text: "a".into(),
                },
                Instruction {
                    source: InstructionSource::ApprovedPlan,
                    text: "b".into(),
                },
            ],
            ..Inputs::default()
        };
        let d = decide(&build(None), &inputs);
        assert_eq!(d.action, Action::FollowApprovedPlan);
        assert_eq!(d.precedence_winner, Some(InstructionSource::ApprovedPlan));
    }

    #[test]
    fn a_listed_next_phase_is_built_next() {
        let mut artifact = build(None);
        artifact.normalized_phases = vec![
            NormalizedPhase::new("phase-2", None),
            NormalizedPhase::new("wire-up", None),
        ];
        let mut inputs = Inputs::default();
        inputs.outputs.verifier = Some(crate::outputs::VerifierReport {
            scenarios_total: Some(1),
            scenarios_passed: Some(1),
            scenarios_failed: Some(0),
            scenario_rows: vec![crate::outputs::Scenario {
                name: "n".into(),
                expected: "e".into(),
                actual: "e".into(),
                status: "PASS".into(),
                ..Default::default()
            }],
            evidence: crate::outputs::Evidence {
                scenarios: vec!["row".into()],
            },
            ..Default::default()
        });
        let d = decide(&artifact, &inputs);
        assert_eq!(d.action, Action::RunBuilder);
        assert_eq!(d.apply(&artifact).phase_cursor.as_deref(), Some("wire-up"));
    }

    #[test]
    fn phase_ids_count_up() {
        assert_eq!(next_phase_id("phase-9").as_deref(), Some("phase-10"));
        assert_eq!(next_phase_id("wire-up"), None);
    }
}
