//! The workflow artifact (the durable state of one workflow, cc10x's
//! `.cc10x/workflows/<uuid>.json`) and the seven metadata fields every workflow task carries.
//!
//! The artifact is typed where the engine reads or writes it and kept as JSON where it only
//! passes through (`results`, `evidence`, `task_ids`, …). Every struct keeps the keys it does not
//! know in an `extra` map, so reading an artifact and writing it back loses nothing.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

pub use crate::contract::{PhaseStatus, PlanMode, ProofStatus, VerificationRigor};
use crate::event::LoggedFinding;
use crate::results::Results;
use crate::route::WorkflowKind;

mod telemetry;
pub use telemetry::{LoopCounts, Telemetry};

closed_set!(
    /// How much of the BUILD graph runs: builder → verifier → memory, or the full chain.
    BuildScope { Trivial = "trivial", Standard = "standard" }
);
closed_set!(
    /// Where the plan's gap review stands.
    PlanningReviewStatus {
        NotStarted = "not_started",
        PendingReview = "pending_review",
        FindingsReceived = "findings_received",
        Passed = "passed",
        NeedsClarification = "needs_clarification",
    }
);

baton_protocol::closed_set! {
    /// The user decision a workflow waits on (`pending_gate`) and the gate a checkpoint stops
    /// at: the engine's gates and the runner's own (`plan_first`, `budget`, `failure`, `finish`,
    /// `confirm_discard`). One closed set; the words are the record's.
    pub enum Gate ("gate") {
        Clarification = "clarification",
        ScopeDecision = "scope_decision",
        CheckpointDecision = "checkpoint_decision",
        PhaseBlocked = "phase_blocked",
        CircuitBreaker = "circuit_breaker",
        /// Every phase of a planned BUILD verified: run a final whole-branch review or skip it.
        FinalReview = "final_review",
        /// A BUILD whose request spans several concerns: plan first, or build directly.
        PlanFirst = "plan_first",
        /// The reviewer approves, the failure-hunter reports HIGH issues.
        HunterFindings = "hunter_findings",
        /// PLAN: the brainstormer names outside technology; research it before planning?
        ResearchOffer = "research_offer",
        /// PLAN: a decision RFC or a critical-path plan; argue against its key decision first?
        DoubtPass = "doubt_pass",
        /// The verifier failed recommending a revert.
        RevertDecision = "revert_decision",
        /// The next dispatch would pass the budget.
        Budget = "budget",
        /// A failure stopped the workflow; the answer is guidance for a retry.
        Failure = "failure",
        /// A review finding contradicts an explicit plan mandate: which governs?
        WhichGoverns = "which_governs",
        /// Deferred findings of a verified BUILD: fix now, follow up or accept (cc10x 1a).
        DeferredTriage = "deferred_triage",
        /// The finishing choice of a BUILD in its own worktree.
        Finish = "finish",
        /// `discard` at the finishing choice, asked again before the work is deleted.
        ConfirmDiscard = "confirm_discard",
        /// A REVIEW that requested changes: start a BUILD that fixes them, or done for now.
        BuildTransition = "build_transition",
        /// cc10x's Intent Readiness Gate: the request names nothing a scenario could verify
        /// ("make it better"); its answer says what to do.
        IntentReadiness = "intent_readiness",
        /// The plan `activeContext.md ## References` names is missing: re-plan first, or build
        /// without a plan.
        MissingPlan = "missing_plan",
        /// A plan phase with `checkpoint_type: decision`: the user decides before it is built.
        PhaseDecision = "phase_decision",
        /// A plan phase with `checkpoint_type: human_action`: the user acts before it is built.
        HumanAction = "human_action",
        /// A plan phase with `checkpoint_type: human_verify`: passed its checks, a person
        /// verifies it before the loop goes on.
        HumanVerify = "human_verify",
    }
}

/// The workflow artifact. Field names are cc10x's.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Artifact {
    /// `wf-<UTC timestamp>-<suffix>`, generated before the first task; the workflow's identity.
    pub workflow_uuid: String,
    /// Compatibility alias; must equal `workflow_uuid`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workflow_id: Option<String>,
    /// What the user asked for, in their words.
    pub user_request: Option<String>,
    /// `None` is cc10x's transitional `pending`, before routing has decided.
    #[serde(with = "workflow_type")]
    pub workflow_type: Option<WorkflowKind>,
    pub plan_file: Option<String>,
    pub design_file: Option<String>,
    /// Decisions the user approved or the saved plan fixed, in force (cc10x's top-level key).
    pub approved_decisions: Vec<String>,
    pub plan_mode: Option<PlanMode>,
    /// Set once BUILD preparation has assessed the scope.
    pub build_scope: Option<BuildScope>,
    pub verification_rigor: Option<VerificationRigor>,
    pub proof_status: Option<ProofStatus>,
    pub intent: Intent,
    /// The only BUILD phase that may run next.
    pub phase_cursor: Option<String>,
    /// Planner-approved executable phases; each has at least a `phase_id`.
    pub normalized_phases: Vec<NormalizedPhase>,
    pub research_quality: ResearchQuality,
    pub research_rounds: Vec<ResearchRound>,
    /// What the research backends could do, recorded before the first round (from the
    /// `researcher` role: its backend, tools and MCP servers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Capabilities>,
    /// Every round's files, each once (memory's References index them at the end).
    pub research_files: Vec<String>,
    /// How each round's backends did, so a later round does not find the same fallback again.
    pub research_backend_history: Vec<BackendRun>,
    pub task_ids: Map<String, Value>,
    /// How each plan phase ended, by phase id; absent while it is open.
    pub phase_status: BTreeMap<String, PhaseStatus>,
    /// What the host and the agents recorded, by key.
    pub results: Results,
    /// Proof of work, by agent.
    pub evidence: Map<String, Value>,
    /// Measurement only: never a reason to advance or block.
    pub telemetry: Telemetry,
    pub quality: Quality,
    pub planning_review_runs: u32,
    pub planning_review_status: Option<PlanningReviewStatus>,
    pub planning_review_findings: Vec<Value>,
    /// What memory finalisation has persisted so far.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_sync: Option<MemorySync>,
    /// The user decision the workflow waits on, if any.
    pub pending_gate: Option<Gate>,
    /// Findings left open on purpose (HIGH ones after a `CRITICAL_ONLY` fix), each as the log's
    /// `LoggedFinding` with its `phase`; listed in the brief.
    pub deferred_findings: Vec<DeferredFinding>,
    /// Requirement → phase → verification → remediation, as the workflow went.
    pub traceability: Traceability,
    /// Append-only summaries of the router's decisions.
    pub status_history: Vec<HistoryEntry>,
    /// One entry per remediation cycle; authoritative for the circuit breaker.
    pub remediation_history: Vec<HistoryEntry>,
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
    /// The last event the artifact includes (the store sets it with `updated_at`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_seq: Option<u64>,
    /// Every other key, kept as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Artifact {
    /// The files of every research round, each once, in the order they were written.
    pub fn research_files(&self) -> Vec<&str> {
        let mut files: Vec<&str> = Vec::new();
        for round in &self.research_rounds {
            for file in [&round.web_file, &round.github_file].into_iter().flatten() {
                if !files.contains(&file.as_str()) {
                    files.push(file);
                }
            }
        }
        files
    }

    /// The approved decisions in force: the top-level ones, then those a record from before
    /// them kept under `intent`.
    pub fn decisions_in_force(&self) -> impl Iterator<Item = &String> {
        self.approved_decisions
            .iter()
            .chain(&self.intent.earlier_approved_decisions)
    }

    /// Reads an artifact from JSON; unknown keys are kept.
    pub fn from_json(value: Value) -> Result<Self, serde_json::Error> {
        serde_json::from_value(value)
    }

    /// The artifact as JSON, every kept key included.
    pub fn to_json(&self) -> Value {
        // A struct of maps, strings and numbers always serialises.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

mod workflow_type {
    use super::*;

    pub fn serialize<S: Serializer>(value: &Option<WorkflowKind>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(value.map_or("pending", WorkflowKind::as_str))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<WorkflowKind>, D::Error> {
        let text = Option::<String>::deserialize(d)?;
        match text.as_deref() {
            None | Some("pending") => Ok(None),
            Some(name) => name.parse().map(Some).map_err(serde::de::Error::custom),
        }
    }
}

/// The durable spec header of the workflow.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Intent {
    pub goal: Option<String>,
    pub non_goals: Vec<String>,
    pub constraints: Vec<String>,
    pub acceptance_criteria: Vec<String>,
    pub open_decisions: Vec<String>,
    /// Where records before the top-level `approved_decisions` kept them: read, and kept as
    /// they were (see [`Artifact::decisions_in_force`]); nothing new is written here.
    #[serde(rename = "approved_decisions", skip_serializing_if = "Vec::is_empty")]
    pub earlier_approved_decisions: Vec<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Where the workflow's convergence stands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Convergence {
    #[default]
    Pending,
    NeedsIteration,
    Stable,
    Converged,
    /// Read-only workflows that have nothing to converge.
    #[serde(rename = "N/A")]
    NotApplicable,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Quality {
    pub confidence: Option<Value>,
    pub evidence_complete: bool,
    pub scenario_coverage: Value,
    pub research_quality: Option<String>,
    pub convergence_state: Convergence,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ResearchQuality {
    pub web: Option<String>,
    pub github: Option<String>,
    /// `high`, `medium`, `low` or `none`.
    pub overall: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Which memory writes have happened for this workflow.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemorySync {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocking_exit_persisted: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub design_reference_persisted: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan_recent_change_persisted: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_step_persisted: Option<bool>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One entry of `status_history` or `remediation_history`. The caller stamps `ts`: the engine
/// reads no clock.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HistoryEntry {
    pub event: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ts: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A remediation cycle's origin: the role whose findings it fixes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// A remediation cycle's number (1 for the first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cycle_number: Option<u32>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl HistoryEntry {
    pub fn new(event: &str, phase: Option<&str>, reason: &str) -> Self {
        HistoryEntry {
            event: event.to_string(),
            phase: phase.map(str::to_string),
            reason: Some(reason.to_string()),
            ..HistoryEntry::default()
        }
    }
}

/// One planner-approved phase of a BUILD (`normalized_phases`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NormalizedPhase {
    pub phase_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A plan's phase (`PlanPhase`): what it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<String>,
    /// The files or surfaces it touches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<String>>,
    /// The commands or checks that prove it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checks: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_criteria: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_seams: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_artifacts: Option<Vec<String>>,
    /// `none`, `decision` or `human-verify`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_type: Option<String>,
    /// Every other key, kept as read.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl NormalizedPhase {
    pub fn new(phase_id: &str, title: Option<&str>) -> NormalizedPhase {
        NormalizedPhase {
            phase_id: phase_id.to_string(),
            title: title.map(str::to_string),
            ..NormalizedPhase::default()
        }
    }
}

/// What a workflow was asked for and how each part was built, checked and fixed: `baton log`,
/// the event feed and the views read the chain from here.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Traceability {
    /// The acceptance criteria (a plan's), else the request.
    pub requirements: Vec<String>,
    pub phases: Vec<TracedPhase>,
    /// One entry per verification.
    pub verification: Vec<TracedCheck>,
    /// One entry per remediation task.
    pub remediation: Vec<TracedFix>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TracedPhase {
    pub phase_id: String,
    pub title: Option<String>,
    /// As `phase_status` says; `None` while open.
    pub status: Option<PhaseStatus>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TracedCheck {
    pub phase: Option<String>,
    pub task: String,
    pub passed: bool,
    pub scenarios: u32,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TracedFix {
    pub phase: Option<String>,
    pub task: String,
    pub scope: String,
    pub origin: String,
    pub reason: String,
}

impl Traceability {
    /// The phases as the artifact lists them, with their status.
    pub fn sync_phases(
        &mut self,
        phases: &[NormalizedPhase],
        status: &BTreeMap<String, PhaseStatus>,
    ) {
        self.phases = phases
            .iter()
            .map(|p| TracedPhase {
                phase_id: p.phase_id.clone(),
                title: p.title.clone(),
                status: status.get(&p.phase_id).copied(),
            })
            .collect();
    }
}

/// One finished research round, as `research_rounds` keeps it: why, how each backend did and
/// where its file is.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ResearchRound {
    pub reason: Option<String>,
    pub web: Option<String>,
    pub github: Option<String>,
    pub quality: Option<String>,
    pub web_file: Option<String>,
    pub github_file: Option<String>,
    pub at: String,
}

/// cc10x's research capability model (remediation-and-research.md:231-238), read from the
/// `researcher` role baton would dispatch: an MCP server named `brightdata` or `octocode` in its
/// `mcp`; web search and fetch when its tools name them or its backend is Claude Code (whose
/// own tools do both). The built-in researcher has none of them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Capabilities {
    /// `"true"`, `"false"` or `"unknown"`, as cc10x writes them.
    pub brightdata_available: String,
    pub octocode_available: String,
    pub websearch_available: String,
    pub webfetch_available: String,
}

impl Capabilities {
    /// What `spec` (the `researcher` role) can use; nothing for the built-in one.
    pub fn of(spec: &baton_protocol::role::RoleSpec) -> Capabilities {
        use baton_protocol::role::{BackendKind, RoleSource};
        let word = |b: bool| if b { "true" } else { "false" }.to_string();
        if spec.source == RoleSource::Builtin {
            return Capabilities::none();
        }
        let m = &spec.meta;
        let tool = |names: &[&str]| {
            m.tools
                .iter()
                .any(|t| names.iter().any(|n| t.eq_ignore_ascii_case(n)))
        };
        let claude = m.backend == Some(BackendKind::Claude);
        Capabilities {
            brightdata_available: word(m.mcp.iter().any(|s| s == "brightdata")),
            octocode_available: word(m.mcp.iter().any(|s| s == "octocode")),
            websearch_available: word(claude || tool(&["WebSearch", "web_search"])),
            webfetch_available: word(claude || tool(&["WebFetch", "web_fetch"])),
        }
    }

    /// No backend at all (the built-in researcher).
    pub fn none() -> Capabilities {
        let no = || "false".to_string();
        Capabilities {
            brightdata_available: no(),
            octocode_available: no(),
            websearch_available: no(),
            webfetch_available: no(),
        }
    }
}

/// One research round's backends, as `research_backend_history` keeps them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BackendRun {
    pub round: usize,
    pub web: Option<String>,
    pub github: Option<String>,
    pub at: String,
}

/// A verifier's proof of work as baton records it under `evidence.<role>` (cc10x's skeleton has
/// a list per agent there, so the map itself stays open).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Evidence {
    pub task: String,
    pub scenarios: Vec<String>,
}

impl Evidence {
    /// As the artifact's `evidence` map holds it.
    pub fn to_json(&self) -> Value {
        // Strings only: always serialises.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// A finding left open on purpose, as `deferred_findings` keeps it: the log's finding and the
/// phase it was deferred at.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeferredFinding {
    #[serde(flatten)]
    pub finding: LoggedFinding,
    #[serde(default)]
    pub phase: Option<String>,
    /// The triage's answer: `fix_now`, `follow_up` or `accepted` (absent until then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disposition: Option<String>,
}

impl DeferredFinding {
    /// The finding as memory keeps it: `[severity] text (phase, workflow)`, then its triage.
    pub fn memory_line(&self, wf: &str) -> String {
        let phase = self.phase.as_deref().unwrap_or("");
        let disposition = match self.disposition.as_deref() {
            Some("fix_now") => ": to fix now",
            Some("follow_up") => ": a follow-up",
            Some("accepted") => ": accepted",
            _ => "",
        };
        format!(
            "[{}] {} ({phase}, {wf}){disposition}",
            self.finding.severity, self.finding.text
        )
    }

    /// The same finding at the same place in the same phase.
    pub fn same(&self, other: &DeferredFinding) -> bool {
        (&self.finding.text, &self.finding.location, &self.phase)
            == (&other.finding.text, &other.finding.location, &other.phase)
    }
}

// ---------------------------------------------------------------------------------------------
// Tasks

/// What a task is for (`kind:`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskKind {
    Workflow,
    Agent,
    Remfix,
    Memory,
    Reverify,
    Research,
}

/// A task's state in the task list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Pending,
    InProgress,
    Completed,
    /// Pruned: an unused branch of a task graph.
    Deleted,
}

closed_set!(
    /// The phases a task may name (`phase:`): the nodes of the workflows' task graphs.
    Phase {
        Build = "build",
        BuildImplement = "build-implement",
        BuildReview = "build-review",
        BuildHunt = "build-hunt",
        BuildVerify = "build-verify",
        BuildDocSync = "build-doc-sync",
        BuildFinish = "build-finish",
        Debug = "debug",
        DebugInvestigate = "debug-investigate",
        DebugReview = "debug-review",
        DebugVerify = "debug-verify",
        Review = "review",
        ReviewAudit = "review-audit",
        Plan = "plan",
        Brainstorm = "brainstorm",
        PlanCreate = "plan-create",
        PlanReviewGap1 = "plan-review-gap-1",
        PlanReviewGap2 = "plan-review-gap-2",
        MemoryFinalize = "memory-finalize",
        ReReview = "re-review",
        ReHunt = "re-hunt",
        ReVerify = "re-verify",
        RePlan = "re-plan",
        ResearchWeb = "research-web",
        ResearchGithub = "research-github",
    }
);

/// The agents a task may name as its origin (`origin:`).
pub const ORIGINS: &[&str] = &[
    "router",
    "component-builder",
    "bug-investigator",
    "code-reviewer",
    "integration-verifier",
    "planner",
];

/// One task of a workflow's graph: its id, state, blockers and metadata lines.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Task {
    pub id: String,
    pub status: Option<TaskStatus>,
    #[serde(rename = "blockedBy")]
    pub blocked_by: Vec<String>,
    /// The seven metadata lines; a field not given is `None`.
    pub wf: Option<String>,
    pub kind: Option<TaskKind>,
    pub origin: Option<String>,
    pub phase: Option<String>,
    pub plan: Option<String>,
    pub scope: Option<String>,
    pub reason: Option<String>,
}

/// A metadata line that is missing or wrong, with what to write instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetadataError {
    pub field: &'static str,
    pub fix: String,
}

impl fmt::Display for MetadataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "task metadata `{}:`: {}", self.field, self.fix)
    }
}

impl Task {
    /// The graph node the task is, when its phase names one.
    pub fn node(&self) -> Option<Phase> {
        self.phase.as_deref().and_then(Phase::parse)
    }

    /// Checks the seven metadata lines: all present (`N/A` where a field does not apply), `wf:`
    /// a workflow uuid, `phase:`, `origin:` and `scope:` from their closed sets, a real origin
    /// on a remediation task and a real reason on remediation and research tasks. Every
    /// problem is reported, each naming its field and the fix.
    pub fn validate(&self) -> Result<(), Vec<MetadataError>> {
        let mut errors = Vec::new();
        let mut missing = |field: &'static str, value: &Option<String>| {
            if value.as_deref().is_none_or(|v| v.trim().is_empty()) {
                errors.push(MetadataError {
                    field,
                    fix: "missing; every task carries all seven lines, write N/A where it does not apply"
                        .to_string(),
                });
                false
            } else {
                true
            }
        };
        let wf_ok = missing("wf", &self.wf);
        let origin_ok = missing("origin", &self.origin);
        let phase_ok = missing("phase", &self.phase);
        missing("plan", &self.plan);
        let scope_ok = missing("scope", &self.scope);
        let reason_ok = missing("reason", &self.reason);
        if self.kind.is_none() {
            errors.push(MetadataError {
                field: "kind",
                fix: "missing; use workflow, agent, remfix, memory, reverify or research"
                    .to_string(),
            });
        }
        if wf_ok {
            let wf = self.wf.as_deref().unwrap_or_default();
            if let Err(problem) = check_workflow_uuid(wf) {
                errors.push(MetadataError {
                    field: "wf",
                    fix: format!("{problem}; use the workflow's uuid, never a task id"),
                });
            }
        }
        if phase_ok {
            let phase = self.phase.as_deref().unwrap_or_default();
            if Phase::parse(phase).is_none() {
                let all: Vec<&str> = Phase::ALL.iter().map(|p| p.as_str()).collect();
                errors.push(MetadataError {
                    field: "phase",
                    fix: format!("{phase:?} is not a phase; use one of {}", all.join(", ")),
                });
            }
        }
        if origin_ok {
            let origin = self.origin.as_deref().unwrap_or_default();
            if origin == "N/A" && self.kind == Some(TaskKind::Remfix) {
                errors.push(MetadataError {
                    field: "origin",
                    fix: "a remediation task names the agent whose findings it fixes".to_string(),
                });
            } else if origin != "N/A" && !ORIGINS.contains(&origin) {
                errors.push(MetadataError {
                    field: "origin",
                    fix: format!(
                        "{origin:?} is not an origin; use one of {}",
                        ORIGINS.join(", ")
                    ),
                });
            }
        }
        if scope_ok {
            let scope = self.scope.as_deref().unwrap_or_default();
            // One investigator of DEBUG's fan-out is scoped to the files it owns
            // (debug-workflow.md: `scope:{files this investigator owns}`).
            let lane =
                self.node() == Some(Phase::DebugInvestigate) && self.kind == Some(TaskKind::Agent);
            if !lane && !["ALL_ISSUES", "CRITICAL_ONLY", "N/A"].contains(&scope) {
                errors.push(MetadataError {
                    field: "scope",
                    fix: format!("{scope:?} is not a scope; use ALL_ISSUES, CRITICAL_ONLY or N/A"),
                });
            }
        }
        if reason_ok
            && self.reason.as_deref() == Some("N/A")
            && matches!(self.kind, Some(TaskKind::Remfix | TaskKind::Research))
        {
            errors.push(MetadataError {
                field: "reason",
                fix: "remediation and research tasks carry a short real reason, not N/A"
                    .to_string(),
            });
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    /// Whether the task still has to run.
    pub fn is_open(&self) -> bool {
        matches!(
            self.status,
            Some(TaskStatus::Pending | TaskStatus::InProgress)
        )
    }
}

/// Checks `wf-<YYYYMMDDTHHMMSSZ>-<suffix>`: cc10x generates eight hex digits as the suffix;
/// any lowercase letters, digits and `-` are accepted.
pub fn check_workflow_uuid(id: &str) -> Result<(), String> {
    let Some(rest) = id.strip_prefix("wf-") else {
        return Err(format!("{id:?} does not start with `wf-`"));
    };
    let (stamp, suffix) = rest.split_once('-').unwrap_or((rest, ""));
    let b = stamp.as_bytes();
    let stamp_ok = b.len() == 16
        && b[..8].iter().all(u8::is_ascii_digit)
        && b[8] == b'T'
        && b[9..15].iter().all(u8::is_ascii_digit)
        && b[15] == b'Z';
    if !stamp_ok {
        return Err(format!(
            "{id:?} has no UTC timestamp like 20260312T161500Z after `wf-`"
        ));
    }
    let suffix_ok = !suffix.is_empty()
        && suffix
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-');
    if !suffix_ok {
        return Err(format!(
            "{id:?} has no lowercase suffix after its timestamp"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// cc10x keeps `approved_decisions` at the top level; a record from before, with them under
    /// `intent`, still has them in force and keeps them where they were when written back.
    #[test]
    fn approved_decisions_are_top_level_and_earlier_records_keep_theirs() {
        let old = json!({"workflow_type": "BUILD", "intent": {"approved_decisions": ["csv"]}});
        let a = Artifact::from_json(old).unwrap();
        assert_eq!(a.decisions_in_force().collect::<Vec<_>>(), ["csv"]);
        let back = a.to_json();
        assert_eq!(back["intent"]["approved_decisions"], json!(["csv"]));
        let mut a = Artifact::from_json(back).unwrap();
        a.approved_decisions.push("phase-1: json".into());
        let new = a.to_json();
        assert_eq!(new["approved_decisions"], json!(["phase-1: json"]));
        assert_eq!(
            Artifact::from_json(new)
                .unwrap()
                .decisions_in_force()
                .collect::<Vec<_>>(),
            ["phase-1: json", "csv"]
        );
    }
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn unknown_keys_survive_a_round_trip() {
        let input = json!({
            "workflow_uuid": "wf-20260312T161500Z-a1b2c3d4",
            "workflow_type": "CODEBASE-HEALTH",
            "state_root": ".cc10x",
            "quality": {"convergence_state": "N/A", "custom": 1},
            "telemetry": {"loop_counts": {"re_verify": 2, "re_other": 3}},
            "status_history": [{"event": "workflow_started", "ts": "t", "phase": "p", "x": true}],
        });
        let artifact = Artifact::from_json(input.clone()).unwrap();
        assert_eq!(artifact.workflow_type, Some(WorkflowKind::CodebaseHealth));
        let out = artifact.to_json();
        assert_eq!(out["state_root"], input["state_root"]);
        assert_eq!(out["quality"]["custom"], 1);
        assert_eq!(out["quality"]["convergence_state"], "N/A");
        assert_eq!(
            out["telemetry"]["loop_counts"],
            json!({"re_review": 0, "re_hunt": 0, "re_verify": 2, "re_other": 3})
        );
        assert_eq!(out["status_history"], input["status_history"]);
        assert_eq!(Artifact::from_json(out).unwrap(), artifact);
    }

    #[test]
    fn pending_workflow_type_reads_as_none() {
        let artifact = Artifact::from_json(json!({"workflow_type": "pending"})).unwrap();
        assert_eq!(artifact.workflow_type, None);
        assert_eq!(artifact.to_json()["workflow_type"], "pending");
        assert!(Artifact::from_json(json!({"workflow_type": "SHIP"})).is_err());
    }

    #[test]
    fn a_complete_task_validates() {
        let task = Task {
            id: "t1".into(),
            wf: Some("wf-20260312T161600Z-0badcafe".into()),
            kind: Some(TaskKind::Remfix),
            origin: Some("code-reviewer".into()),
            phase: Some("build-review".into()),
            plan: Some("N/A".into()),
            scope: Some("ALL_ISSUES".into()),
            reason: Some("Fix critical findings".into()),
            ..Task::default()
        };
        assert_eq!(task.validate(), Ok(()));
    }

    #[test]
    fn validation_names_each_field_and_its_fix() {
        let task = Task {
            wf: Some("task-17".into()),
            kind: Some(TaskKind::Remfix),
            origin: Some("N/A".into()),
            phase: Some("shipping".into()),
            scope: Some("SOME".into()),
            reason: Some("N/A".into()),
            ..Task::default()
        };
        let errors = task.validate().unwrap_err();
        let fields: Vec<&str> = errors.iter().map(|e| e.field).collect();
        assert_eq!(fields, ["plan", "wf", "phase", "origin", "scope", "reason"]);
        assert!(errors[0].to_string().contains("write N/A"), "{}", errors[0]);
        assert!(errors[1].fix.contains("never a task id"));
    }

    #[test]
    fn workflow_uuids() {
        assert_eq!(check_workflow_uuid("wf-20260312T162700Z-a1b2c3d4"), Ok(()));
        assert_eq!(
            check_workflow_uuid("wf-20260312T161500Z-build-happy"),
            Ok(())
        );
        assert!(check_workflow_uuid("20260312T162700Z-a1b2c3d4").is_err());
        assert!(check_workflow_uuid("wf-2026-03-12-a1b2").is_err());
        assert!(check_workflow_uuid("wf-20260312T162700Z").is_err());
        assert!(check_workflow_uuid("wf-20260312T162700Z-A1B2").is_err());
    }
}
