//! From the `contract` module's checked contracts to the engine's inputs.
//!
//! [`contract::parse`](crate::contract::parse) reads one agent's output into a typed contract;
//! the engine reads [`AgentOutputs`]. These functions carry every field the engine reads across,
//! converting types faithfully (enum words to the strings the contract wrote, whole numbers to
//! the engine's widths, list entries to text). Statuses are the ones after the contract's
//! overrides: an `APPROVE` with a critical issue arrives as `CHANGES_REQUESTED`.
//!
//! The engine applies its own pass checks again; they are close to the contract's but not the
//! same (the contract also refuses a builder `PASS` with `BLOCKING: true` or no
//! `SEAM_GATE_STATUS`, and a plan-gap `PASS` that leaves `REPLAN_NEEDED` out). A runner should
//! stop on a pass the contract refused ([`Outcome::PassRefused`](crate::contract::Outcome::PassRefused))
//! before it asks the engine.

use serde_json::Value;

use super::{
    AgentOutputs, BuilderReport, DebugCloseout, DocSyncReport, Evidence, FeedbackLoop,
    InvestigatorReport, MergedFindings, PlanReviewReport, PlannerReport, RemfixReport,
    ResearchOutcome, ReviewerReport, Scenario, VerifierReport,
};
use crate::contract::merge::{merge_findings, Finding, Severity};
use crate::contract::scenario::{Scenario as ContractScenario, ScenarioStatus};
use crate::contract::{
    BuilderContract, Checked, Contract, DocSyncContract, InvestigatorContract, PlanGapContract,
    PlannerContract, ReadOnlyCommon, ResearchContract, ResearchStatus, ReviewContract, Role,
    VerifyContract,
};

/// The engine input of one checked contract: the slot of its role set, everything else None.
///
/// A failure hunter's slot is `findings` (its counts alone, as [`findings_from`] gives them); a
/// researcher's is `research`, counted as the GitHub backend when it reports
/// `IMPLEMENTATIONS_FOUND` without `KEY_FINDINGS_COUNT` and as the web backend otherwise.
pub fn from_contract(checked: &Checked) -> AgentOutputs {
    let mut out = AgentOutputs::default();
    match &checked.contract {
        Contract::Builder(c) => out.builder = Some(builder(c)),
        Contract::Investigator(c) => out.investigator = Some(investigator(c)),
        Contract::Planner(c) => out.planner = Some(planner(c)),
        Contract::DocSync(c) => out.doc_syncer = Some(doc_sync(c)),
        Contract::Research(c) => {
            out.research = Some(if is_github(c) {
                research_from(None, Some(checked))
            } else {
                research_from(Some(checked), None)
            })
        }
        Contract::Review(c) => out.reviewer = Some(reviewer(c)),
        Contract::Hunt(_) => out.findings = Some(findings_from(None, Some(checked))),
        Contract::Verify(c) => out.verifier = Some(verifier(c)),
        Contract::PlanGap(c) => out.plan_review = Some(plan_review(c)),
        Contract::Brainstorm(c) => out.design_handoff = Some(brainstorm(c)),
    }
    out
}

fn brainstorm(c: &crate::contract::BrainstormContract) -> super::DesignHandoff {
    super::DesignHandoff {
        status: Some(c.status.as_str().to_string()),
        design_file: c.design_file.clone().filter(|f| !f.trim().is_empty()),
        design_summary: c.design_summary.clone(),
        questions: strings(&c.questions),
        research_topics: strings(&c.research_topics),
    }
}

/// Issue counts from a reviewer's and a hunter's checked contracts of one phase (either may be absent).
///
/// The listed findings of both are merged ([`merge_findings`]): one both raise at the same
/// `file:line` counts once, at the higher severity. The critical count is never below either
/// contract's own (its envelope `cr` may count criticals it does not list). A contract of
/// another role gives no findings.
pub fn findings_from(reviewer: Option<&Checked>, hunter: Option<&Checked>) -> MergedFindings {
    let listed = |c: Option<&Checked>| -> Vec<Finding> {
        c.and_then(read_only_common)
            .map(|common| common.findings.clone())
            .unwrap_or_default()
    };
    let merged = merge_findings(&listed(reviewer), &listed(hunter));
    let count = |severity: Severity| {
        merged
            .iter()
            .filter(|m| m.finding.severity == severity)
            .count() as u64
    };
    let stated = [reviewer, hunter]
        .into_iter()
        .flatten()
        .filter_map(read_only_common)
        .map(|common| common.critical_count)
        .max()
        .unwrap_or(0);
    let hunter_only_high = merged
        .iter()
        .filter(|m| m.finding.severity == Severity::High)
        .filter(|m| m.raised_by.iter().all(|r| *r == Role::FailureHunter))
        .count() as u64;
    MergedFindings {
        critical_issues: narrow(count(Severity::Critical).max(stated)),
        high_issues: narrow(count(Severity::High)),
        hunter_only_high: narrow(hunter_only_high),
    }
}

/// The proof a remediation (a component-builder or bug-investigator contract run as a REM-FIX) gives that its fix was exercised: covering tests (TEST_SEAMS or the names of passing scenarios), the command and output of its first passing scenario with a command.
///
/// Only a remediation that reports its fix done (builder `PASS`, investigator `FIXED`) proves
/// anything; any other status or role gives an empty, unproven report.
pub fn remfix_proof(checked: &Checked) -> RemfixReport {
    let (seams, scenarios): (&[Value], &[ContractScenario]) = match &checked.contract {
        Contract::Builder(c) if c.status.as_str() == "PASS" => (&c.test_seams, &c.scenarios),
        Contract::Investigator(c) if c.status.as_str() == "FIXED" => (&[], &c.scenarios),
        _ => return RemfixReport::default(),
    };
    let passing = || {
        scenarios
            .iter()
            .filter(|s| s.status == Some(ScenarioStatus::Pass))
    };
    let covering_tests = if seams.is_empty() {
        passing()
            .map(|s| s.name().to_string())
            .filter(|n| !n.is_empty())
            .collect()
    } else {
        strings(seams)
    };
    let run = passing().find(|s| s.command.as_deref().is_some_and(|c| !c.trim().is_empty()));
    RemfixReport {
        covering_tests,
        test_command: run.and_then(|s| s.command.clone()),
        test_output: run.and_then(|s| s.actual.clone()),
    }
}

/// The research outcome of a round from the researchers' checked contracts (web and github; either may be absent).
///
/// Each backend's status is its contract's. The overall quality is the best `QUALITY_LEVEL`
/// among the researchers that returned something (not `UNAVAILABLE`) — one usable file is
/// enough to go on — and `none` when no researcher did; `None` when neither contract is given.
pub fn research_from(web: Option<&Checked>, github: Option<&Checked>) -> ResearchOutcome {
    let (web, github) = (web.and_then(research), github.and_then(research));
    if web.is_none() && github.is_none() {
        return ResearchOutcome::default();
    }
    let overall = [web, github]
        .into_iter()
        .flatten()
        .filter(|r| r.status != ResearchStatus::Unavailable)
        .filter_map(|r| r.quality_level.as_deref())
        .map(|q| q.trim().to_ascii_lowercase())
        .filter_map(|q| quality_rank(&q).map(|rank| (rank, q)))
        .max()
        .map_or_else(|| "none".to_string(), |(_, q)| q);
    ResearchOutcome {
        web_status: web.map(|r| r.status.as_str().to_string()),
        github_status: github.map(|r| r.status.as_str().to_string()),
        overall_quality: Some(overall),
    }
}

fn research(c: &Checked) -> Option<&ResearchContract> {
    match &c.contract {
        Contract::Research(r) => Some(r),
        _ => None,
    }
}

fn quality_rank(q: &str) -> Option<u8> {
    match q {
        "none" => Some(0),
        "low" => Some(1),
        "medium" => Some(2),
        "high" => Some(3),
        _ => None,
    }
}

fn is_github(c: &ResearchContract) -> bool {
    c.key_findings_count.is_none()
        && c.implementations_found
            .as_ref()
            .is_some_and(|v| !v.is_null())
}

fn read_only_common(c: &Checked) -> Option<&ReadOnlyCommon> {
    match &c.contract {
        Contract::Review(r) => Some(&r.common),
        Contract::Hunt(h) => Some(&h.common),
        Contract::Verify(v) => Some(&v.common),
        _ => None,
    }
}

fn builder(c: &BuilderContract) -> BuilderReport {
    BuilderReport {
        status: c.status.as_str().into(),
        confidence: c.confidence.map(f64::from),
        phase_id: c.phase_id.clone(),
        phase_status: c.phase_status.map(|s| s.as_str().into()),
        phase_exit_ready: c.phase_exit_ready,
        checkpoint_type: c.checkpoint_type.map(|s| s.as_str().into()),
        proof_status: c.proof_status.map(|s| s.as_str().into()),
        build_preflight_emitted: c.build_preflight_emitted,
        tdd_red_exit: c.tdd_red_exit,
        tdd_red_reason_kind: c.tdd_red_reason_kind.map(|s| s.as_str().into()),
        tdd_red_reason: c.tdd_red_reason.clone(),
        tdd_green_exit: c.tdd_green_exit,
        test_seams: strings(&c.test_seams),
        seam_gate_status: c.seam_gate_status.map(|s| s.as_str().into()),
        scenarios: scenarios(&c.scenarios),
        decisions: c.decisions.to_vec(),
        blocked_items: strings(&c.blocked_items),
        scope_increases: c.scope_increases.to_vec(),
        remediation_reason: c.remediation_reason.clone(),
    }
}

fn investigator(c: &InvestigatorContract) -> InvestigatorReport {
    InvestigatorReport {
        status: c.status.as_str().into(),
        verification_rigor: c.verification_rigor.map(|r| r.as_str().into()),
        root_cause: c.root_cause.as_ref().and_then(text),
        tdd_red_exit: c.tdd_red_exit,
        tdd_green_exit: c.tdd_green_exit,
        variants_covered: narrow(c.variants_covered.unwrap_or(0)),
        variants_not_applicable: c.variants_not_applicable.clone(),
        blast_radius_scan: c.blast_radius_scan.clone(),
        scenarios: scenarios(&c.scenarios),
        feedback_loop: c.feedback_loop.as_ref().map(|l| FeedbackLoop {
            rung: l.rung.clone(),
            command: l.command.clone(),
        }),
        debug_closeout: c.debug_closeout.as_ref().map(|d| DebugCloseout {
            instrumentation_removed: d.instrumentation_removed == Some(true),
            repro_no_longer_fires: d.repro_no_longer_fires == Some(true),
        }),
        needs_external_research: c.needs_external_research == Some(true),
        research_reason: c.research_reason.clone(),
    }
}

fn planner(c: &PlannerContract) -> PlannerReport {
    // The contract requires the key; null there means "no differences".
    let differences = match &c.differences_from_agreement {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a.clone(),
        Some(other) => vec![other.clone()],
    };
    PlannerReport {
        status: c.status.as_str().into(),
        plan_mode: c.plan_mode.map(|m| m.as_str().into()),
        verification_rigor: c.verification_rigor.map(|r| r.as_str().into()),
        plan_file: c.plan_file.clone(),
        confidence: c.confidence.map(f64::from),
        gate_passed: c.gate_passed,
        open_decisions: Some(c.open_decisions.to_vec()),
        differences_from_agreement: Some(differences),
        alternatives: c.alternatives.to_vec(),
        drawbacks: c.drawbacks.to_vec(),
        provable_properties: c.provable_properties.to_vec(),
        scenarios: scenarios(&c.scenarios),
        blocking: c.blocking == Some(true),
        remediation_reason: c.remediation_reason.clone(),
        user_input_needed: strings(&c.user_input_needed),
    }
}

fn doc_sync(c: &DocSyncContract) -> DocSyncReport {
    DocSyncReport {
        status: c.status.as_str().into(),
        impact_level: c.impact_level.clone(),
        doc_layers_evaluated: strings(&c.doc_layers_evaluated),
        doc_files_updated: strings(&c.doc_files_updated),
        audit_docs_created: strings(&c.audit_docs_created),
        skip_reason: c.skip_reason.clone(),
    }
}

fn reviewer(c: &ReviewContract) -> ReviewerReport {
    ReviewerReport {
        verdict: Some(c.status.as_str().into()),
        heading: None,
        critical_issues: narrow(c.common.critical_count),
        remediation_needed: c.common.fields.remediation_needed == Some(true),
        remediation_reason: c.common.fields.remediation_reason.clone(),
        plan_conflict: plan_conflict(&c.common.fields),
    }
}

/// Both halves of a plan conflict, each non-empty (`null` and `N/A` are none).
fn plan_conflict(f: &crate::contract::ReadOnlyFields) -> Option<crate::outputs::PlanConflict> {
    let said = |s: &Option<String>| {
        s.as_deref()
            .map(|t| t.trim().trim_matches('"').trim())
            .filter(|t| !t.is_empty() && !matches!(*t, "null" | "N/A" | "none"))
            .map(str::to_string)
    };
    Some(crate::outputs::PlanConflict {
        finding: said(&f.plan_conflict_finding)?,
        mandate: said(&f.plan_conflict_mandate)?,
    })
}

fn verifier(c: &VerifyContract) -> VerifierReport {
    let a = &c.accounting;
    VerifierReport {
        status: Some(c.status.as_str().into()),
        critical_issues: narrow(c.common.critical_count),
        scenarios_total: Some(narrow(a.scenarios_total)),
        scenarios_passed: Some(narrow(a.scenarios_passed)),
        scenarios_failed: Some(narrow(a.scenarios_failed)),
        scenario_rows: scenarios(&a.scenario_rows),
        evidence: Evidence {
            scenarios: a.evidence.scenarios.clone(),
        },
        revert: c.common.fields.revert_recommended == Some(true)
            || c.common
                .findings
                .iter()
                .map(|f| f.text.as_str())
                .chain(c.common.fields.remediation_reason.as_deref())
                .any(says_revert),
    }
}

/// Whether a verifier's text recommends reverting: the word `REVERT` in capitals.
fn says_revert(text: &str) -> bool {
    text.split(|c: char| !c.is_ascii_alphabetic())
        .any(|w| w == "REVERT")
}

fn plan_review(c: &PlanGapContract) -> PlanReviewReport {
    PlanReviewReport {
        status: c.status.as_str().into(),
        blocking_findings_count: narrow(c.blocking_findings),
        replan_needed: c.replan_needed == Some(true),
        replan_reason: c.replan_reason.clone(),
        finding_buckets: c.finding_buckets.clone().unwrap_or_default(),
    }
}

fn scenarios(rows: &[ContractScenario]) -> Vec<Scenario> {
    rows.iter()
        .map(|s| {
            let own = |f: &Option<String>| f.clone().unwrap_or_default();
            Scenario {
                name: own(&s.name),
                given: own(&s.given),
                when: own(&s.when),
                then: own(&s.then),
                command: own(&s.command),
                expected: own(&s.expected),
                actual: own(&s.actual),
                exit_code: s.exit_code,
                status: match s.status {
                    Some(ScenarioStatus::Pass) => "PASS".into(),
                    Some(ScenarioStatus::Fail) => "FAIL".into(),
                    None => String::new(),
                },
            }
        })
        .collect()
}

/// A list entry as text: a string as written, a null as nothing, anything else as its JSON.
fn text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

fn strings(values: &[Value]) -> Vec<String> {
    values.iter().filter_map(text).collect()
}

/// A count in the engine's width; counts beyond it saturate rather than wrap.
fn narrow(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// What an agent asked memory to keep: its `MEMORY_NOTES` (a write role's YAML: an object of
/// `learnings`, `patterns`, `verification`, `deferred`, or a string or list, taken as
/// learnings) or `### Memory Notes` (a read-only role's bullets, sorted by a `Learnings:`,
/// `Patterns:`, `Verification:` or `Deferred:` prefix; else learnings).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemoryNotes {
    pub learnings: Vec<String>,
    pub patterns: Vec<String>,
    pub verification: Vec<String>,
    pub deferred: Vec<String>,
}

impl MemoryNotes {
    pub fn is_empty(&self) -> bool {
        self.learnings.is_empty()
            && self.patterns.is_empty()
            && self.verification.is_empty()
            && self.deferred.is_empty()
    }

    fn bucket(&mut self, key: &str) -> Option<&mut Vec<String>> {
        Some(match key.trim().to_lowercase().as_str() {
            "learnings" | "learning" => &mut self.learnings,
            "patterns" | "pattern" | "gotchas" | "gotcha" => &mut self.patterns,
            "verification" => &mut self.verification,
            "deferred" => &mut self.deferred,
            _ => return None,
        })
    }
}

/// The memory notes of one checked contract.
pub fn memory_notes(c: &Checked) -> MemoryNotes {
    let yaml = match &c.contract {
        Contract::Builder(b) => b.memory_notes.as_ref(),
        Contract::Investigator(i) => i.memory_notes.as_ref(),
        Contract::Planner(p) => p.memory_notes.as_ref(),
        Contract::DocSync(d) => d.memory_notes.as_ref(),
        Contract::Research(r) => r.memory_notes.as_ref(),
        Contract::Brainstorm(b) => b.memory_notes.as_ref(),
        _ => None,
    };
    let mut notes = MemoryNotes::default();
    let strings = |v: &Value| -> Vec<String> {
        match v {
            Value::String(s) if !s.trim().is_empty() => vec![s.trim().to_string()],
            Value::Array(items) => items
                .iter()
                .filter_map(|i| match i {
                    Value::String(s) => Some(s.trim().to_string()),
                    Value::Null => None,
                    // `- a: b` in a YAML list reads as a one-key map: it meant the text.
                    Value::Object(m) if m.len() == 1 => m.iter().next().map(|(k, v)| match v {
                        Value::String(s) => format!("{k}: {s}"),
                        other => format!("{k}: {other}"),
                    }),
                    other => Some(other.to_string()),
                })
                .filter(|s| !s.is_empty())
                .collect(),
            _ => Vec::new(),
        }
    };
    match yaml {
        Some(Value::Object(map)) => {
            for (k, v) in map {
                let items = strings(v);
                if let Some(b) = notes.bucket(k) {
                    b.extend(items);
                } else {
                    notes.learnings.extend(items);
                }
            }
        }
        Some(v) => notes.learnings.extend(strings(v)),
        None => {}
    }
    if let Some(text) = read_only_common(c).and_then(|r| r.memory_notes.as_deref()) {
        for line in text.lines() {
            let l = line
                .trim()
                .trim_start_matches(['-', '*'])
                .trim()
                .replace("**", "");
            if l.is_empty() || l.eq_ignore_ascii_case("none") {
                continue;
            }
            match l.split_once(':') {
                Some((k, v)) if notes.bucket(k).is_some() && !v.trim().is_empty() => {
                    if let Some(b) = notes.bucket(k) {
                        b.push(v.trim().to_string());
                    }
                }
                _ => notes.learnings.push(l),
            }
        }
    }
    notes
}
