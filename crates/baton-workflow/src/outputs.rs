//! What agents return, typed, and the pass conditions the router checks before it believes a
//! passing status (cc10x's contract overrides).
//!
//! Fields are optional because agents omit them; the checks below decide what a missing field
//! means. Field names are the contracts' upper-case keys.
//!
//! [`from_contract`], [`findings_from`], [`remfix_proof`] and [`research_from`] build these
//! types from the `contract` module's checked contracts, so a runner hands the engine what
//! `contract::parse` read instead of filling them in by hand.

use serde::Deserialize;
use serde_json::{Map, Value};

mod from_contract;
#[cfg(test)]
pub(crate) mod from_contract_tests;

pub use from_contract::{
    findings_from, from_contract, memory_notes, remfix_proof, research_from, MemoryNotes,
};

/// Everything that came back since the last decision. `None`: that agent did not report.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AgentOutputs {
    pub builder: Option<BuilderReport>,
    pub verifier: Option<VerifierReport>,
    pub reviewer: Option<ReviewerReport>,
    pub investigator: Option<InvestigatorReport>,
    pub planner: Option<PlannerReport>,
    pub plan_review: Option<PlanReviewReport>,
    pub doc_syncer: Option<DocSyncReport>,
    /// A completed remediation's proof that the fix was exercised.
    pub remfix: Option<RemfixReport>,
    /// The router's merge of the reviewer's and the failure hunter's findings.
    pub findings: Option<MergedFindings>,
    /// The summary of a finished research round.
    pub research: Option<ResearchOutcome>,
    /// The exploration step's hand-off to the planner.
    pub design_handoff: Option<DesignHandoff>,
    pub triage: Option<ReadOnlyReport>,
    pub scanner: Option<ReadOnlyReport>,
}

impl AgentOutputs {
    pub fn is_empty(&self) -> bool {
        self == &AgentOutputs::default()
    }
}

/// A scenario row: given / when / then, the command run and what it showed.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Scenario {
    pub name: String,
    pub given: String,
    pub when: String,
    pub then: String,
    pub command: String,
    pub expected: String,
    pub actual: String,
    pub exit_code: Option<i64>,
    pub status: String,
}

impl Scenario {
    /// A passing row with everything that proves it filled in.
    fn is_proven_pass(&self) -> bool {
        self.status == "PASS"
            && !self.name.trim().is_empty()
            && !self.command.trim().is_empty()
            && !self.expected.trim().is_empty()
            && !self.actual.trim().is_empty()
            && self.exit_code.is_some()
    }
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "SCREAMING_SNAKE_CASE")]
pub struct BuilderReport {
    pub status: String,
    pub confidence: Option<f64>,
    pub phase_id: Option<String>,
    pub phase_status: Option<String>,
    pub phase_exit_ready: Option<bool>,
    /// `none`, `human_verify`, `decision` or `human_action`.
    pub checkpoint_type: Option<String>,
    pub proof_status: Option<String>,
    pub build_preflight_emitted: Option<bool>,
    pub tdd_red_exit: Option<i64>,
    pub tdd_red_reason_kind: Option<String>,
    pub tdd_red_reason: Option<String>,
    pub tdd_green_exit: Option<i64>,
    pub test_seams: Vec<String>,
    pub seam_gate_status: Option<String>,
    pub scenarios: Vec<Scenario>,
    pub decisions: Vec<Value>,
    pub blocked_items: Vec<String>,
    pub scope_increases: Vec<Value>,
    pub remediation_reason: Option<String>,
}

impl BuilderReport {
    /// Why a `STATUS=PASS` may not be believed; empty when it may.
    pub fn pass_problems(&self) -> Vec<String> {
        let mut p = Vec::new();
        if self.tdd_red_exit != Some(1) {
            p.push("TDD_RED_EXIT must be 1 (a test failed before the change)".to_string());
        }
        if self.tdd_red_reason_kind.as_deref() != Some("behavioral") || blank(&self.tdd_red_reason)
        {
            p.push("the RED must be behavioral with a non-empty TDD_RED_REASON".to_string());
        }
        if self.tdd_green_exit != Some(0) {
            p.push("TDD_GREEN_EXIT must be 0".to_string());
        }
        if self.build_preflight_emitted != Some(true) {
            p.push("BUILD_PREFLIGHT_EMITTED must be true".to_string());
        }
        if self.phase_status.as_deref() != Some("completed") || self.phase_exit_ready != Some(true)
        {
            p.push("PHASE_STATUS must be completed and PHASE_EXIT_READY true".to_string());
        }
        if self.proof_status.as_deref() != Some("passed") {
            p.push("PROOF_STATUS must be passed".to_string());
        }
        if !self.blocked_items.is_empty() {
            p.push("BLOCKED_ITEMS must be empty".to_string());
        }
        if !self.scenarios.iter().any(Scenario::is_proven_pass) {
            p.push("no passing scenario with name, command, expected, actual and exit code".into());
        }
        if self.confidence.is_some_and(|c| c < 50.0) {
            p.push("CONFIDENCE is below 50".to_string());
        }
        match self.seam_gate_status.as_deref() {
            Some("confirmed" | "proposed") if self.test_seams.is_empty() => {
                p.push("SEAM_GATE_STATUS confirmed/proposed needs TEST_SEAMS".to_string())
            }
            Some("disagreed") if self.test_seams.is_empty() || self.decisions.is_empty() => p
                .push("SEAM_GATE_STATUS disagreed on a pass needs a better seam and a DECISIONS rationale".to_string()),
            Some("confirmed" | "proposed" | "disagreed" | "not_applicable") | None => {}
            Some(other) => p.push(format!("SEAM_GATE_STATUS {other:?} is not a seam gate state")),
        }
        p
    }
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Evidence {
    pub scenarios: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "SCREAMING_SNAKE_CASE")]
pub struct VerifierReport {
    /// `PASS` or `FAIL` when the verifier stated it; else it follows from the counts.
    pub status: Option<String>,
    pub critical_issues: u32,
    pub scenarios_total: Option<u32>,
    pub scenarios_passed: Option<u32>,
    pub scenarios_failed: Option<u32>,
    pub scenario_rows: Vec<Scenario>,
    pub evidence: Evidence,
    /// A failing verifier whose findings or remediation reason say `REVERT`.
    pub revert: bool,
}

impl VerifierReport {
    /// Why the report cannot be trusted: totals that do not reconcile with the rows and the
    /// evidence, or rows without an expected and an actual value.
    pub fn reconcile_problems(&self) -> Vec<String> {
        let mut p = Vec::new();
        let (Some(total), Some(passed), Some(failed)) = (
            self.scenarios_total,
            self.scenarios_passed,
            self.scenarios_failed,
        ) else {
            return vec![
                "SCENARIOS_TOTAL, SCENARIOS_PASSED and SCENARIOS_FAILED are required".into(),
            ];
        };
        if passed + failed != total {
            p.push(format!(
                "passed {passed} + failed {failed} is not the total {total}"
            ));
        }
        let rows = self.scenario_rows.len() as u32;
        if rows != total {
            p.push(format!("{rows} scenario rows for a total of {total}"));
        }
        let rows_passed = self
            .scenario_rows
            .iter()
            .filter(|r| r.status == "PASS")
            .count() as u32;
        if rows_passed != passed {
            p.push(format!(
                "{rows_passed} rows pass but SCENARIOS_PASSED is {passed}"
            ));
        }
        for row in &self.scenario_rows {
            if row.expected.trim().is_empty() || row.actual.trim().is_empty() {
                p.push(format!(
                    "scenario {:?} lacks an expected or an actual value",
                    row.name
                ));
            }
        }
        let evidence = self.evidence.scenarios.len() as u32;
        if evidence != total {
            p.push(format!(
                "{evidence} evidence rows for {total} counted scenarios"
            ));
        }
        if self.scenario_rows.is_empty() {
            p.push("no scenario rows".to_string());
        }
        p
    }

    /// The verdict after the override: a pass with critical issues or a failed row is a fail.
    pub fn passed(&self) -> bool {
        let stated = match self.status.as_deref() {
            Some(s) => s == "PASS",
            None => self.scenarios_failed == Some(0),
        };
        stated && self.critical_issues == 0 && self.scenario_rows.iter().all(|r| r.status == "PASS")
    }
}

/// A read-only review: the line-1 envelope when there is one, else the heading.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ReviewerReport {
    /// The envelope's `s`: `APPROVE` or `CHANGES_REQUESTED`.
    pub verdict: Option<String>,
    /// `## Review: Approve` or `## Review: Changes Requested`.
    pub heading: Option<String>,
    /// The envelope's `cr`.
    pub critical_issues: u32,
    #[serde(rename = "REMEDIATION_NEEDED")]
    pub remediation_needed: bool,
    #[serde(rename = "REMEDIATION_REASON")]
    pub remediation_reason: Option<String>,
    /// A finding that contradicts an explicit plan mandate, beside the mandate.
    #[serde(skip)]
    pub plan_conflict: Option<PlanConflict>,
}

/// A reviewer's finding beside the plan mandate it directly contradicts.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, Deserialize)]
pub struct PlanConflict {
    pub finding: String,
    pub mandate: String,
}

impl ReviewerReport {
    /// `Some(true)` approve, `Some(false)` changes requested, `None` unreadable. An approval
    /// with critical issues, or one that asks for remediation, is changes requested.
    pub fn approves(&self) -> Option<bool> {
        let stated = match (self.verdict.as_deref(), self.heading.as_deref()) {
            (Some("APPROVE"), _) => true,
            (Some("CHANGES_REQUESTED"), _) => false,
            (Some(_), _) => return None,
            (None, Some(h)) if h.trim() == "## Review: Approve" => true,
            (None, Some(h)) if h.trim() == "## Review: Changes Requested" => false,
            (None, _) => return None,
        };
        Some(stated && self.critical_issues == 0 && !self.remediation_needed)
    }
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct FeedbackLoop {
    pub rung: Option<String>,
    pub command: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct DebugCloseout {
    pub instrumentation_removed: bool,
    pub repro_no_longer_fires: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "SCREAMING_SNAKE_CASE")]
pub struct InvestigatorReport {
    /// `FIXED`, `INVESTIGATING` or `BLOCKED`.
    pub status: String,
    pub verification_rigor: Option<String>,
    pub root_cause: Option<String>,
    pub tdd_red_exit: Option<i64>,
    pub tdd_green_exit: Option<i64>,
    pub variants_covered: u32,
    pub variants_not_applicable: Option<String>,
    pub blast_radius_scan: Option<Value>,
    pub scenarios: Vec<Scenario>,
    pub feedback_loop: Option<FeedbackLoop>,
    pub debug_closeout: Option<DebugCloseout>,
    pub needs_external_research: bool,
    pub research_reason: Option<String>,
}

impl InvestigatorReport {
    /// Why a `STATUS=FIXED` may not be believed; empty when it may.
    pub fn fixed_problems(&self) -> Vec<String> {
        let mut p = Vec::new();
        if blank(&self.verification_rigor) {
            p.push("VERIFICATION_RIGOR must be explicit".to_string());
        }
        if self.tdd_red_exit != Some(1) || self.tdd_green_exit != Some(0) {
            p.push("TDD_RED_EXIT must be 1 and TDD_GREEN_EXIT 0".to_string());
        }
        let scan_empty = match &self.blast_radius_scan {
            None | Some(Value::Null) => true,
            Some(Value::Object(m)) => m.is_empty(),
            Some(Value::String(s)) => s.trim().is_empty(),
            Some(_) => false,
        };
        if scan_empty {
            p.push("BLAST_RADIUS_SCAN must not be empty".to_string());
        }
        let proven = |prefix: &str| {
            self.scenarios
                .iter()
                .any(|s| s.name.starts_with(prefix) && s.is_proven_pass())
        };
        if !proven("Regression:") {
            p.push("no proven `Regression:` scenario".to_string());
        }
        if self.variants_covered >= 1 {
            if !proven("Variant:") {
                p.push("VARIANTS_COVERED is set but no proven `Variant:` scenario".to_string());
            }
        } else if blank(&self.variants_not_applicable) {
            p.push("no variant covered and no VARIANTS_NOT_APPLICABLE reason".to_string());
        }
        match &self.feedback_loop {
            Some(l) if l.rung.as_deref().is_some_and(|r| r != "none") && !blank(&l.command) => {}
            _ => p.push("FEEDBACK_LOOP needs a rung other than none and a command".to_string()),
        }
        match &self.debug_closeout {
            Some(c) if c.instrumentation_removed && c.repro_no_longer_fires => {}
            _ => {
                p.push("DEBUG_CLOSEOUT must confirm instrumentation removed and repro gone".into())
            }
        }
        p
    }
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "SCREAMING_SNAKE_CASE")]
pub struct PlannerReport {
    /// `PLAN_CREATED`, `DECISION_RFC_CREATED` or `NEEDS_CLARIFICATION`.
    pub status: String,
    pub plan_mode: Option<String>,
    pub verification_rigor: Option<String>,
    pub plan_file: Option<String>,
    pub confidence: Option<f64>,
    pub gate_passed: Option<bool>,
    pub open_decisions: Option<Vec<Value>>,
    pub differences_from_agreement: Option<Vec<Value>>,
    pub alternatives: Vec<Value>,
    pub drawbacks: Vec<Value>,
    pub provable_properties: Vec<Value>,
    pub scenarios: Vec<Scenario>,
    pub blocking: bool,
    pub remediation_reason: Option<String>,
    pub user_input_needed: Vec<String>,
}

impl PlannerReport {
    /// Why a created plan may not be believed; empty when it may.
    pub fn plan_problems(&self) -> Vec<String> {
        let mut p = Vec::new();
        if blank(&self.plan_file) {
            p.push("PLAN_FILE is empty".to_string());
        }
        if blank(&self.plan_mode) || blank(&self.verification_rigor) {
            p.push("PLAN_MODE and VERIFICATION_RIGOR must be explicit".to_string());
        } else {
            let mode = self.plan_mode.as_deref().unwrap_or_default();
            if crate::contract::PlanMode::parse(mode).is_none() {
                p.push(format!(
                    "PLAN_MODE {mode:?} is not direct, execution_plan or decision_rfc"
                ));
            }
            let rigor = self.verification_rigor.as_deref().unwrap_or_default();
            if crate::contract::VerificationRigor::parse(rigor).is_none() {
                p.push(format!(
                    "VERIFICATION_RIGOR {rigor:?} is not standard or critical_path"
                ));
            }
        }
        if self.confidence.is_some_and(|c| c < 50.0) {
            p.push("CONFIDENCE is below 50".to_string());
        }
        if self.gate_passed != Some(true) {
            p.push("GATE_PASSED must be true".to_string());
        }
        if self.scenarios.is_empty() {
            p.push("SCENARIOS is empty".to_string());
        }
        if self.open_decisions.as_ref().is_none_or(|d| !d.is_empty()) {
            p.push("OPEN_DECISIONS must be given and empty".to_string());
        }
        if self.differences_from_agreement.is_none() {
            p.push("DIFFERENCES_FROM_AGREEMENT must be present, even empty".to_string());
        }
        if self.plan_mode.as_deref() == Some("decision_rfc")
            && (self.alternatives.len() < 2 || self.drawbacks.is_empty())
        {
            p.push("a decision RFC needs at least two ALTERNATIVES and some DRAWBACKS".to_string());
        }
        if self.verification_rigor.as_deref() == Some("critical_path")
            && self.provable_properties.is_empty()
        {
            p.push("critical_path rigor needs PROVABLE_PROPERTIES".to_string());
        }
        p
    }
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "SCREAMING_SNAKE_CASE")]
pub struct PlanReviewReport {
    /// `PASS` or `FINDINGS`.
    pub status: String,
    pub blocking_findings_count: u32,
    pub replan_needed: bool,
    pub replan_reason: Option<String>,
    pub finding_buckets: Map<String, Value>,
}

impl PlanReviewReport {
    /// `Some(true)` pass, `Some(false)` findings, `None` unreadable. A pass that counts blocking
    /// findings or asks for a re-plan is findings: the stricter reading wins.
    pub fn passes(&self) -> Option<bool> {
        match self.status.as_str() {
            "PASS" => Some(self.blocking_findings_count == 0 && !self.replan_needed),
            "FINDINGS" => Some(false),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "SCREAMING_SNAKE_CASE")]
pub struct DocSyncReport {
    /// `COMPLETE`, `SKIPPED`, `PARTIAL` or `FAIL`.
    pub status: String,
    pub impact_level: Option<String>,
    pub doc_layers_evaluated: Vec<String>,
    pub doc_files_updated: Vec<String>,
    pub audit_docs_created: Vec<String>,
    pub skip_reason: Option<String>,
}

impl DocSyncReport {
    /// Why the status may not be believed; empty when it may.
    pub fn problems(&self) -> Vec<String> {
        let wrote = !self.doc_files_updated.is_empty() || !self.audit_docs_created.is_empty();
        let evaluated = !self.doc_layers_evaluated.is_empty();
        match self.status.as_str() {
            "COMPLETE" | "PARTIAL" if !(wrote && evaluated) => vec![format!(
                "{} needs an evaluated layer and an updated or created doc",
                self.status
            )],
            "SKIPPED" if blank(&self.skip_reason) => vec!["SKIPPED needs a SKIP_REASON".into()],
            "COMPLETE" | "PARTIAL" | "SKIPPED" | "FAIL" => Vec::new(),
            other => vec![format!("{other:?} is not a doc-syncer status")],
        }
    }
}

/// Proof a remediation was exercised: the covering tests, the command and its output.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "SCREAMING_SNAKE_CASE")]
pub struct RemfixReport {
    pub covering_tests: Vec<String>,
    pub test_command: Option<String>,
    pub test_output: Option<String>,
}

impl RemfixReport {
    pub fn is_proven(&self) -> bool {
        !self.covering_tests.is_empty() && !blank(&self.test_command) && !blank(&self.test_output)
    }
}

/// Issue counts from the reviewer and the failure hunter of one phase.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct MergedFindings {
    pub critical_issues: u32,
    pub high_issues: u32,
    /// HIGH findings only the failure-hunter raised (cc10x remediation row 2).
    pub hunter_only_high: u32,
}

/// How a research round went, per backend (`COMPLETE`, `PARTIAL`, `DEGRADED`, `UNAVAILABLE`).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ResearchOutcome {
    pub web_status: Option<String>,
    pub github_status: Option<String>,
    /// `high`, `medium`, `low` or `none`.
    pub overall_quality: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "SCREAMING_SNAKE_CASE")]
pub struct DesignHandoff {
    /// baton's brainstormer says `DESIGN_SAVED`, `NO_DESIGN` or `NEEDS_CLARIFICATION`; a
    /// handoff without one (cc10x's own) carries a design or nothing.
    pub status: Option<String>,
    pub design_file: Option<String>,
    pub design_summary: Option<String>,
    /// What only the user can answer (with `NEEDS_CLARIFICATION`).
    pub questions: Vec<String>,
    /// Outside technology research would clarify before planning.
    pub research_topics: Vec<String>,
}

/// The report of a read-only agent that ends its workflow (triage, architecture scan): a
/// status, where the report or brief was written, and whether it needs the user.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "SCREAMING_SNAKE_CASE")]
pub struct ReadOnlyReport {
    pub status: String,
    /// `REPORT_PATH` (scanner) or `BRIEF_PATH` (triage).
    #[serde(alias = "REPORT_PATH", alias = "BRIEF_PATH")]
    pub path: Option<String>,
    pub blocking: bool,
}

fn blank(value: &Option<String>) -> bool {
    value.as_deref().is_none_or(|v| v.trim().is_empty())
}
