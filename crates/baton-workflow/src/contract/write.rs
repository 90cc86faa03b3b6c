//! Write roles' router contracts: the fenced YAML block under `### Router Contract`, its required
//! fields per role, the typed values, and each role's pass conditions.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use super::error::ContractError;
use super::scenario::Scenario;
use super::text::{self, BlockError};
use super::{Checked, Contract, Outcome, Role, Source};

/// The fields every router contract of a role must carry (present, even if null or empty): the
/// fields of its typed contract, in their order, so the list and the type cannot disagree.
pub(crate) fn required_fields(role: Role) -> Vec<&'static str> {
    let fields = match role {
        Role::ComponentBuilder => field_names::<BuilderContract>(),
        Role::BugInvestigator => field_names::<InvestigatorContract>(),
        Role::Planner => field_names::<PlannerContract>(),
        Role::Researcher => field_names::<ResearchContract>(),
        Role::DocSyncer => field_names::<DocSyncContract>(),
        Role::Brainstormer => field_names::<BrainstormContract>(),
        _ => &[],
    };
    fields
        .iter()
        .copied()
        // KEY_FINDINGS_COUNT (web) or IMPLEMENTATIONS_FOUND (GitHub) is checked on its own.
        .filter(|f| !(role == Role::Researcher && RESEARCH_EITHER.contains(f)))
        .collect()
}

/// A researcher carries one of these, depending on where it searched.
const RESEARCH_EITHER: [&str; 2] = ["KEY_FINDINGS_COUNT", "IMPLEMENTATIONS_FOUND"];

/// The wire names of a struct's fields, as its derived `Deserialize` declares them.
fn field_names<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    /// A deserializer that only records the field list serde hands to `deserialize_struct`.
    struct Names(&'static [&'static str]);
    #[derive(Debug)]
    struct Stop;
    impl std::fmt::Display for Stop {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("field names recorded")
        }
    }
    impl std::error::Error for Stop {}
    impl serde::de::Error for Stop {
        fn custom<M: std::fmt::Display>(_: M) -> Stop {
            Stop
        }
    }
    impl<'de> Deserializer<'de> for &mut Names {
        type Error = Stop;
        fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
            Err(Stop)
        }
        fn deserialize_struct<V: serde::de::Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Stop> {
            self.0 = fields;
            Err(Stop)
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
            option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
            ignored_any
        }
    }
    let mut names = Names(&[]);
    let _ = T::deserialize(&mut names);
    names.0
}

/// The required fields `fields` lacks, in the registry's order.
pub(crate) fn missing_fields(role: Role, fields: &Map<String, Value>) -> Vec<String> {
    let mut missing: Vec<String> = required_fields(role)
        .into_iter()
        .filter(|f| !fields.contains_key(*f))
        .map(|f| f.to_string())
        .collect();
    if role == Role::Researcher && !RESEARCH_EITHER.iter().any(|f| fields.contains_key(*f)) {
        missing.push(RESEARCH_EITHER.join(" or "));
    }
    missing
}

/// A list field that may also be written as null or left out (nothing applies).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct List<T>(pub Vec<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for List<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // A missing field reaches here as a missing option, so it needs no `#[serde(default)]`.
        Option::<Vec<T>>::deserialize(d).map(|list| List(list.unwrap_or_default()))
    }
}

impl<T> std::ops::Deref for List<T> {
    type Target = Vec<T>;
    fn deref(&self) -> &Vec<T> {
        &self.0
    }
}

closed_set!(BuilderStatus { Pass = "PASS", Fail = "FAIL" });
closed_set!(InvestigatorStatus { Fixed = "FIXED", Investigating = "INVESTIGATING", Blocked = "BLOCKED" });
closed_set!(PlannerStatus {
    PlanCreated = "PLAN_CREATED",
    DecisionRfcCreated = "DECISION_RFC_CREATED",
    NeedsClarification = "NEEDS_CLARIFICATION",
});
closed_set!(DocSyncStatus { Complete = "COMPLETE", Skipped = "SKIPPED", Partial = "PARTIAL", Fail = "FAIL" });
closed_set!(ResearchStatus {
    Complete = "COMPLETE",
    Partial = "PARTIAL",
    Degraded = "DEGRADED",
    Unavailable = "UNAVAILABLE",
});
closed_set!(PhaseStatus { Completed = "completed", Partial = "partial", Blocked = "blocked" });
closed_set!(CheckpointType {
    None = "none",
    HumanVerify = "human_verify",
    Decision = "decision",
    HumanAction = "human_action",
});
closed_set!(ProofStatus { Passed = "passed", GapsFound = "gaps_found", HumanNeeded = "human_needed" });
closed_set!(
    /// Why the first (failing) test run failed: a behaviour, or an error before any test ran.
    RedReasonKind { Behavioral = "behavioral", Error = "error" }
);
closed_set!(SeamGateStatus {
    Confirmed = "confirmed",
    Disagreed = "disagreed",
    Proposed = "proposed",
    NotApplicable = "not_applicable",
});
closed_set!(VerificationRigor { Standard = "standard", CriticalPath = "critical_path" });
closed_set!(PlanMode { Direct = "direct", ExecutionPlan = "execution_plan", DecisionRfc = "decision_rfc" });

/// component-builder: one phase built test-first.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub struct BuilderContract {
    pub status: BuilderStatus,
    pub confidence: Option<u32>,
    pub phase_id: Option<String>,
    pub phase_status: Option<PhaseStatus>,
    pub phase_exit_ready: Option<bool>,
    pub checkpoint_type: Option<CheckpointType>,
    pub proof_status: Option<ProofStatus>,
    pub build_preflight_emitted: Option<bool>,
    pub inputs: List<Value>,
    pub expected_artifacts: List<Value>,
    pub tdd_red_exit: Option<i64>,
    pub tdd_red_reason_kind: Option<RedReasonKind>,
    pub tdd_red_reason: Option<String>,
    pub tdd_green_exit: Option<i64>,
    pub test_seams: List<Value>,
    pub seam_gate_status: Option<SeamGateStatus>,
    pub scenarios: List<Scenario>,
    pub assumptions: List<Value>,
    pub decisions: List<Value>,
    pub blocked_items: List<Value>,
    pub skipped_items: List<Value>,
    pub scope_increases: List<Value>,
    pub blocking: Option<bool>,
    pub next_action: Option<Value>,
    pub remediation_needed: Option<bool>,
    pub requires_remediation: Option<bool>,
    pub remediation_reason: Option<String>,
    pub memory_notes: Option<Value>,
}

/// The investigator's reproduction loop.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct FeedbackLoop {
    /// How strong the loop is (`failing_test`, … or `none`).
    pub rung: Option<String>,
    pub command: Option<String>,
    pub deterministic: Option<bool>,
    pub flaky_rate: Option<Value>,
}

/// What the investigator confirms after the fix.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct DebugCloseout {
    pub instrumentation_removed: Option<bool>,
    pub repro_no_longer_fires: Option<bool>,
    pub winning_hypothesis: Option<String>,
    pub architecture_handoff: Option<Value>,
}

/// bug-investigator: a reproduced, fixed and regression-tested bug (or why not).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub struct InvestigatorContract {
    pub status: InvestigatorStatus,
    pub verification_rigor: Option<VerificationRigor>,
    pub confidence: Option<u32>,
    pub root_cause: Option<Value>,
    pub tdd_red_exit: Option<i64>,
    pub tdd_green_exit: Option<i64>,
    pub variants_covered: Option<u64>,
    pub variants_not_applicable: Option<String>,
    pub feedback_loop: Option<FeedbackLoop>,
    pub no_loop_blocked: Option<Value>,
    pub boundary_matrix: Option<Value>,
    pub regression_seam: Option<Value>,
    pub defense_in_depth: Option<Value>,
    pub debug_closeout: Option<DebugCloseout>,
    pub blast_radius_scan: Option<Value>,
    pub scenarios: List<Scenario>,
    pub assumptions: List<Value>,
    pub decisions: List<Value>,
    pub blocking: Option<bool>,
    pub next_action: Option<Value>,
    pub remediation_needed: Option<bool>,
    pub requires_remediation: Option<bool>,
    pub remediation_reason: Option<String>,
    pub needs_external_research: Option<bool>,
    pub research_reason: Option<String>,
    pub memory_notes: Option<Value>,
}

/// planner: a saved plan or decision RFC, or the questions that block one.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub struct PlannerContract {
    pub status: PlannerStatus,
    pub plan_mode: Option<PlanMode>,
    pub verification_rigor: Option<VerificationRigor>,
    pub confidence: Option<u32>,
    pub plan_file: Option<String>,
    pub phases: List<Value>,
    pub risks_identified: List<Value>,
    pub scenarios: List<Scenario>,
    pub assumptions: List<Value>,
    pub decisions: List<Value>,
    pub open_decisions: List<Value>,
    pub differences_from_agreement: Option<Value>,
    pub recommended_defaults: Option<Value>,
    pub alternatives: List<Value>,
    pub drawbacks: List<Value>,
    pub provable_properties: List<Value>,
    pub blocking: Option<bool>,
    pub next_action: Option<Value>,
    pub remediation_needed: Option<bool>,
    pub requires_remediation: Option<bool>,
    pub remediation_reason: Option<String>,
    pub gate_passed: Option<bool>,
    pub user_input_needed: List<Value>,
    pub memory_notes: Option<Value>,
}

/// doc-syncer: which documentation layers the change touched and what was updated.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub struct DocSyncContract {
    pub status: DocSyncStatus,
    pub impact_level: Option<String>,
    pub doc_layers_evaluated: List<Value>,
    pub doc_files_updated: List<Value>,
    pub doc_files_skipped: List<Value>,
    pub skip_reason: Option<String>,
    pub audit_docs_created: List<Value>,
    pub audit_docs_updated: List<Value>,
    pub memory_notes: Option<Value>,
}

/// web-researcher and github-researcher: a research file and how good its sources were.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub struct ResearchContract {
    pub status: ResearchStatus,
    pub file_path: Option<String>,
    pub backend_mode: Option<String>,
    pub sources_attempted: List<Value>,
    pub sources_used: List<Value>,
    pub quality_level: Option<String>,
    pub key_findings_count: Option<u64>,
    pub implementations_found: Option<Value>,
    pub what_changed_recommendation: Option<Value>,
    pub memory_notes: Option<Value>,
}

closed_set!(BrainstormStatus {
    DesignSaved = "DESIGN_SAVED",
    NoDesign = "NO_DESIGN",
    NeedsClarification = "NEEDS_CLARIFICATION",
});

/// brainstormer: the request explored before the planner — a design saved (its file), nothing
/// worth a design, or the questions only the user can answer (cc10x's Brainstorming Handoff).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub struct BrainstormContract {
    pub status: BrainstormStatus,
    pub design_file: Option<String>,
    pub design_summary: Option<String>,
    pub questions: List<Value>,
    /// Outside technology the plan depends on that research would clarify (the research
    /// offer before planning); empty when none.
    pub research_topics: List<Value>,
    pub memory_notes: Option<Value>,
}

/// Reads a write role's output: the router contract block, then its fields.
pub(crate) fn parse(role: Role, output: &str) -> Result<Checked, ContractError> {
    let yaml = text::router_contract_block(output).map_err(|e| no_block(role, output, e))?;
    let fields = text::yaml_mapping(&yaml)
        .map_err(|reason| ContractError::MalformedYaml { role, reason })?;
    let mut notes = Vec::new();
    let mut envelope_status = None;
    if let Some((n, line)) = text::first_line(output).filter(|(_, l)| text::is_envelope_line(l)) {
        match text::parse_envelope(line) {
            Ok(env) => envelope_status = Some(env.status),
            Err(reason) => notes.push(format!(
                "ignored a malformed envelope on line {n} ({reason}); the router contract decides"
            )),
        }
    }
    check_fields(role, &fields, notes, envelope_status)
}

fn no_block(role: Role, output: &str, error: BlockError) -> ContractError {
    match error {
        BlockError::NoHeading => {
            let has_envelope = text::numbered(output).any(|(_, l)| text::is_envelope_line(l));
            if has_envelope {
                ContractError::MissingRouterContract {
                    role,
                    reason: "a CONTRACT envelope alone does not carry a write role's fields".into(),
                }
            } else {
                ContractError::ProseOnly {
                    role,
                    excerpt: excerpt(output),
                }
            }
        }
        BlockError::NoFence { heading_line } => ContractError::MissingRouterContract {
            role,
            reason: format!(
                "the heading on line {heading_line} has no fenced ```yaml block after it"
            ),
        },
        BlockError::Unclosed { line } => ContractError::MalformedYaml {
            role,
            reason: format!("the fence opened on line {line} is never closed"),
        },
    }
}

/// The first words of an output, for error messages.
pub(crate) fn excerpt(output: &str) -> String {
    let flat = output.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(60) {
        Some((i, _)) => format!("{}…", &flat[..i]),
        None => flat,
    }
}

fn typed<T: DeserializeOwned>(role: Role, fields: &Map<String, Value>) -> Result<T, ContractError> {
    serde_path_to_error::deserialize(Value::Object(fields.clone())).map_err(|e| {
        ContractError::InvalidField {
            role,
            field: e.path().to_string(),
            reason: e.inner().to_string(),
        }
    })
}

/// Checks a router contract's fields: presence, types, agreement with the envelope, then the
/// role's pass conditions.
pub(crate) fn check_fields(
    role: Role,
    fields: &Map<String, Value>,
    notes: Vec<String>,
    envelope_status: Option<String>,
) -> Result<Checked, ContractError> {
    let missing = missing_fields(role, fields);
    if !missing.is_empty() {
        return Err(ContractError::MissingFields {
            role,
            fields: missing,
        });
    }
    let checked = check_typed(role, fields, notes)?;
    if let (Some(env), Some(Value::String(status))) = (envelope_status, fields.get("STATUS")) {
        if text::status_word(&env) != text::status_word(status) {
            return Err(ContractError::Inconsistent {
                role,
                reason: format!("the line-1 envelope says {env} but STATUS is {status}"),
            });
        }
    }
    Ok(checked)
}

/// Types the fields and applies the pass conditions, without the presence check. The
/// conformance fixtures hold contract excerpts; their tests come through here.
pub(crate) fn check_typed(
    role: Role,
    fields: &Map<String, Value>,
    mut notes: Vec<String>,
) -> Result<Checked, ContractError> {
    let (contract, outcome) = match role {
        Role::ComponentBuilder => {
            let c: BuilderContract = typed(role, fields)?;
            let outcome = builder_outcome(&c);
            (Contract::Builder(c), outcome)
        }
        Role::BugInvestigator => {
            let c: InvestigatorContract = typed(role, fields)?;
            let outcome = investigator_outcome(role, &c)?;
            (Contract::Investigator(c), outcome)
        }
        Role::Planner => {
            let c: PlannerContract = typed(role, fields)?;
            let outcome = planner_outcome(&c, fields);
            (Contract::Planner(c), outcome)
        }
        Role::DocSyncer => {
            let c: DocSyncContract = typed(role, fields)?;
            let outcome = doc_sync_outcome(&c);
            if matches!(outcome, Outcome::SoftPass { .. }) {
                notes.push("doc sync is partial: record doc_sync_partial for the user".into());
            }
            (Contract::DocSync(c), outcome)
        }
        Role::Brainstormer => {
            let c: BrainstormContract = typed(role, fields)?;
            let outcome = brainstorm_outcome(&c);
            (Contract::Brainstorm(c), outcome)
        }
        Role::Researcher => {
            let c: ResearchContract = typed(role, fields)?;
            let outcome = match c.status {
                ResearchStatus::Complete => Outcome::Pass,
                ResearchStatus::Partial => Outcome::SoftPass {
                    note: "research is partial".into(),
                },
                s => Outcome::NotPassed {
                    status: s.as_str().into(),
                },
            };
            (Contract::Research(c), outcome)
        }
        _ => {
            return Err(ContractError::Inconsistent {
                role,
                reason: "a read-only role has no router contract of its own".into(),
            })
        }
    };
    Ok(Checked {
        role,
        source: Source::RouterContract,
        contract,
        outcome,
        notes,
    })
}

fn nonblank(s: &Option<String>) -> bool {
    s.as_deref().is_some_and(|s| !s.trim().is_empty())
}

/// Not null and not an empty string, list or mapping.
fn substantive(v: &Option<Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::String(s)) => !s.trim().is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
        Some(_) => true,
    }
}

/// `Pass` when nothing is unmet, else the unmet conditions.
fn judged(unmet: Vec<String>) -> Outcome {
    if unmet.is_empty() {
        Outcome::Pass
    } else {
        Outcome::PassRefused { unmet }
    }
}

/// Adds the conditions of `checks` that do not hold to `unmet`, in order.
fn need<'a>(unmet: &mut Vec<String>, checks: impl IntoIterator<Item = (bool, &'a str)>) {
    let failed = checks.into_iter().filter(|(ok, _)| !ok);
    unmet.extend(failed.map(|(_, condition)| condition.to_string()));
}

fn builder_outcome(c: &BuilderContract) -> Outcome {
    if c.status == BuilderStatus::Fail {
        return Outcome::NotPassed {
            status: "FAIL".into(),
        };
    }
    let mut u = Vec::new();
    need(
        &mut u,
        [
            (
                c.tdd_red_exit == Some(1),
                "TDD_RED_EXIT must be 1 (a failing test first)",
            ),
            (
                c.tdd_red_reason_kind == Some(RedReasonKind::Behavioral),
                "TDD_RED_REASON_KIND must be behavioral (a RED from an import, syntax or collection error does not count)",
            ),
            (
                nonblank(&c.tdd_red_reason),
                "TDD_RED_REASON must say why the test failed",
            ),
            (c.tdd_green_exit == Some(0), "TDD_GREEN_EXIT must be 0"),
            (
                c.build_preflight_emitted == Some(true),
                "BUILD_PREFLIGHT_EMITTED must be true",
            ),
            (
                c.phase_status == Some(PhaseStatus::Completed),
                "PHASE_STATUS must be completed",
            ),
            (
                c.phase_exit_ready == Some(true),
                "PHASE_EXIT_READY must be true",
            ),
            (
                c.proof_status == Some(ProofStatus::Passed),
                "PROOF_STATUS must be passed",
            ),
            (c.blocked_items.is_empty(), "BLOCKED_ITEMS must be empty"),
            (c.blocking != Some(true), "BLOCKING must not be true"),
            (
                c.scenarios.iter().any(Scenario::is_proven_pass),
                "SCENARIOS must hold a PASS scenario with name, command, expected, actual and exit_code",
            ),
        ],
    );
    match c.seam_gate_status {
        None => u.push("SEAM_GATE_STATUS must be set".into()),
        Some(SeamGateStatus::NotApplicable) => {}
        Some(s) => {
            if c.test_seams.is_empty() {
                u.push(format!(
                    "SEAM_GATE_STATUS {} needs a non-empty TEST_SEAMS",
                    s.as_str()
                ));
            }
            if s == SeamGateStatus::Disagreed && c.decisions.is_empty() {
                u.push("SEAM_GATE_STATUS disagreed needs the rationale in DECISIONS".into());
            }
        }
    }
    judged(u)
}

fn investigator_outcome(role: Role, c: &InvestigatorContract) -> Result<Outcome, ContractError> {
    let no_loop = c
        .feedback_loop
        .as_ref()
        .and_then(|l| l.rung.as_deref())
        .is_some_and(|r| r.trim().eq_ignore_ascii_case("none"));
    if no_loop && c.status == InvestigatorStatus::Investigating {
        return Err(ContractError::Inconsistent {
            role,
            reason: "FEEDBACK_LOOP.rung is none, so STATUS must be BLOCKED (with NO_LOOP_BLOCKED), not INVESTIGATING".into(),
        });
    }
    if no_loop && c.status == InvestigatorStatus::Blocked && !substantive(&c.no_loop_blocked) {
        return Err(ContractError::Inconsistent {
            role,
            reason: "FEEDBACK_LOOP.rung is none but NO_LOOP_BLOCKED does not say what was tried"
                .into(),
        });
    }
    if c.status != InvestigatorStatus::Fixed {
        return Ok(Outcome::NotPassed {
            status: c.status.as_str().into(),
        });
    }
    let mut u = Vec::new();
    need(
        &mut u,
        [
            (
                c.verification_rigor.is_some(),
                "VERIFICATION_RIGOR must be set",
            ),
            (c.tdd_red_exit == Some(1), "TDD_RED_EXIT must be 1"),
            (c.tdd_green_exit == Some(0), "TDD_GREEN_EXIT must be 0"),
            (
                substantive(&c.blast_radius_scan),
                "BLAST_RADIUS_SCAN must not be empty",
            ),
        ],
    );
    if c.needs_external_research != Some(true) {
        let complete = |prefix: &str| {
            c.scenarios
                .iter()
                .any(|s| s.name().starts_with(prefix) && s.missing_evidence().is_empty())
        };
        need(
            &mut u,
            [
                (!c.scenarios.is_empty(), "SCENARIOS must not be empty"),
                (
                    complete("Regression:"),
                    "a \"Regression:\" scenario with command, expected, actual and exit_code is required",
                ),
            ],
        );
        let not_applicable = nonblank(&c.variants_not_applicable) && c.variants_covered == Some(0);
        if !not_applicable {
            need(
                &mut u,
                [(
                    c.variants_covered.unwrap_or(0) >= 1 && complete("Variant:"),
                    "VARIANTS_COVERED >= 1 with a \"Variant:\" scenario, or VARIANTS_NOT_APPLICABLE with a reason and VARIANTS_COVERED 0",
                )],
            );
        }
    }
    let lp = c.feedback_loop.clone().unwrap_or_default();
    let close = c.debug_closeout.clone().unwrap_or_default();
    need(
        &mut u,
        [
            (
                nonblank(&lp.rung) && !no_loop && nonblank(&lp.command),
                "FEEDBACK_LOOP needs a rung other than none and its command",
            ),
            (
                close.instrumentation_removed == Some(true),
                "DEBUG_CLOSEOUT.instrumentation_removed must be true",
            ),
            (
                close.repro_no_longer_fires == Some(true),
                "DEBUG_CLOSEOUT.repro_no_longer_fires must be true",
            ),
        ],
    );
    Ok(judged(u))
}

/// A design saved must name its file; questions must be asked; nothing else is required.
fn brainstorm_outcome(c: &BrainstormContract) -> Outcome {
    match c.status {
        BrainstormStatus::NeedsClarification if c.questions.is_empty() => Outcome::PassRefused {
            unmet: vec!["QUESTIONS must list what the user should answer".into()],
        },
        BrainstormStatus::NeedsClarification => Outcome::NotPassed {
            status: c.status.as_str().into(),
        },
        BrainstormStatus::DesignSaved if !nonblank(&c.design_file) => Outcome::PassRefused {
            unmet: vec!["DESIGN_FILE must name the saved design".into()],
        },
        BrainstormStatus::DesignSaved | BrainstormStatus::NoDesign => Outcome::Pass,
    }
}

fn planner_outcome(c: &PlannerContract, fields: &Map<String, Value>) -> Outcome {
    if c.status == PlannerStatus::NeedsClarification {
        return Outcome::NotPassed {
            status: c.status.as_str().into(),
        };
    }
    let mut u = Vec::new();
    need(
        &mut u,
        [
            (nonblank(&c.plan_file), "PLAN_FILE must name the saved plan"),
            (c.plan_mode.is_some(), "PLAN_MODE must be set"),
            (
                c.verification_rigor.is_some(),
                "VERIFICATION_RIGOR must be set",
            ),
            (
                c.confidence.is_some_and(|n| n >= 50),
                "CONFIDENCE must be at least 50",
            ),
            (c.gate_passed == Some(true), "GATE_PASSED must be true"),
            (!c.scenarios.is_empty(), "SCENARIOS must not be empty"),
            (
                c.open_decisions.is_empty(),
                "OPEN_DECISIONS must be empty (open decisions make it NEEDS_CLARIFICATION)",
            ),
            (
                fields.contains_key("DIFFERENCES_FROM_AGREEMENT"),
                "DIFFERENCES_FROM_AGREEMENT must be present",
            ),
        ],
    );
    if c.plan_mode == Some(PlanMode::DecisionRfc) {
        need(
            &mut u,
            [
                (
                    c.alternatives.len() >= 2,
                    "a decision RFC needs at least 2 ALTERNATIVES",
                ),
                (!c.drawbacks.is_empty(), "a decision RFC needs DRAWBACKS"),
            ],
        );
    }
    if c.verification_rigor == Some(VerificationRigor::CriticalPath) {
        need(
            &mut u,
            [(
                !c.provable_properties.is_empty(),
                "critical_path rigor needs PROVABLE_PROPERTIES",
            )],
        );
    }
    judged(u)
}

fn doc_sync_outcome(c: &DocSyncContract) -> Outcome {
    let wrote = !c.doc_files_updated.is_empty() || !c.audit_docs_created.is_empty();
    let layers = !c.doc_layers_evaluated.is_empty();
    let mut u = Vec::new();
    match c.status {
        DocSyncStatus::Fail => {
            return Outcome::NotPassed {
                status: "FAIL".into(),
            }
        }
        DocSyncStatus::Skipped => {
            need(
                &mut u,
                [(nonblank(&c.skip_reason), "SKIPPED needs a SKIP_REASON")],
            );
        }
        DocSyncStatus::Complete | DocSyncStatus::Partial => {
            need(
                &mut u,
                [
                    (layers, "DOC_LAYERS_EVALUATED must not be empty"),
                    (
                        wrote,
                        "DOC_FILES_UPDATED or AUDIT_DOCS_CREATED must name at least one file",
                    ),
                ],
            );
        }
    }
    match judged(u) {
        Outcome::Pass if c.status == DocSyncStatus::Partial => Outcome::SoftPass {
            note: "some documentation layers were left for the user".into(),
        },
        other => other,
    }
}
