//! Read-only roles' contracts: the line-1 envelope, the heading fallback, the structured
//! `KEY: value` fields, findings, and the verifier's scenario accounting.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::error::ContractError;
use super::merge::{self, Finding, FindingValidation, Severity};
use super::scenario::{ScenarioAccounting, ACCOUNTING_FIELDS};
use super::text::{self, BlockError};
use super::write::excerpt;
use super::{Checked, Contract, Outcome, Role, Source};

/// A verdict set: its words through `closed_set!`, read from an envelope's status word.
macro_rules! verdict_enum {
    ($name:ident { $($variant:ident = $word:literal),+ $(,)? }) => {
        baton_protocol::closed_set! {
            /// A status as the envelope writes it.
            pub enum $name (stringify!($name)) { $($variant = $word),+ }
        }
        impl $name {
            fn from_word(w: &str) -> Option<Self> {
                $name::parse(&text::status_word(w))
            }
        }
    };
}

verdict_enum!(ReviewStatus { Approve = "APPROVE", ChangesRequested = "CHANGES_REQUESTED" });
verdict_enum!(HuntStatus { Clean = "CLEAN", IssuesFound = "ISSUES_FOUND" });
verdict_enum!(VerifyStatus { Pass = "PASS", Fail = "FAIL" });
verdict_enum!(PlanGapStatus { Pass = "PASS", Findings = "FINDINGS" });

/// How much remediation a read-only role asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum RemediationScope {
    #[serde(rename = "N/A")]
    NotApplicable,
    #[serde(rename = "CRITICAL_ONLY")]
    CriticalOnly,
    #[serde(rename = "ALL_ISSUES")]
    AllIssues,
}

/// The structured intent fields a read-only role may state, as `KEY: value` lines or in a
/// fenced router contract.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub struct ReadOnlyFields {
    pub remediation_needed: Option<bool>,
    pub remediation_reason: Option<String>,
    pub remediation_scope_requested: Option<RemediationScope>,
    pub revert_recommended: Option<bool>,
    /// A finding that directly contradicts an explicit plan mandate, and the mandate's words
    /// (remediation-and-research.md:203-212): the user decides which governs.
    pub plan_conflict_finding: Option<String>,
    pub plan_conflict_mandate: Option<String>,
}

/// Fields every read-only contract shares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOnlyCommon {
    /// `b` of the envelope.
    pub blocking: Option<bool>,
    /// The larger of the envelope's `cr` and the items under `### Critical Issues`.
    pub critical_count: u64,
    /// The findings listed under the severity sections.
    pub findings: Vec<Finding>,
    pub fields: ReadOnlyFields,
    /// The text under `### Memory Notes`.
    pub memory_notes: Option<String>,
}

/// code-reviewer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewContract {
    /// The status after overrides; `claimed` is what the agent wrote.
    pub status: ReviewStatus,
    pub claimed: ReviewStatus,
    pub common: ReadOnlyCommon,
    /// Distinct `file:line` citations anywhere in the output.
    pub citations: usize,
}

/// failure-hunter (silent-failure-hunter).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HuntContract {
    pub status: HuntStatus,
    pub claimed: HuntStatus,
    pub common: ReadOnlyCommon,
    /// `FILES_SCANNED`.
    pub files_scanned: Option<u64>,
    /// `ERROR_HANDLING_SITES_INSPECTED` (or `SITES_INSPECTED`).
    pub sites_inspected: Option<u64>,
}

/// integration-verifier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyContract {
    pub status: VerifyStatus,
    pub claimed: VerifyStatus,
    pub common: ReadOnlyCommon,
    pub accounting: ScenarioAccounting,
    /// The `### Reviewer Finding Validation` entries.
    pub validations: Vec<FindingValidation>,
}

/// plan-gap-reviewer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanGapContract {
    pub status: PlanGapStatus,
    pub blocking: Option<bool>,
    /// The larger of the envelope's `bf` and `BLOCKING_FINDINGS_COUNT`.
    pub blocking_findings: u64,
    pub replan_needed: Option<bool>,
    pub replan_reason: Option<String>,
    pub finding_buckets: Option<Map<String, Value>>,
}

fn heading_title(role: Role) -> &'static str {
    match role {
        Role::CodeReviewer => "Review",
        Role::FailureHunter => "Error Handling Audit",
        Role::IntegrationVerifier => "Verification",
        _ => "Planning Review",
    }
}

fn allowed(role: Role) -> &'static [&'static str] {
    match role {
        Role::CodeReviewer => &["APPROVE", "CHANGES_REQUESTED"],
        Role::FailureHunter => &["CLEAN", "ISSUES_FOUND"],
        Role::IntegrationVerifier => &["PASS", "FAIL"],
        _ => &["PASS", "FINDINGS"],
    }
}

/// The stricter of two statuses of one role: the one that is not a pass.
fn stricter_status(role: Role, a: &str, b: &str) -> String {
    let pass = allowed(role)[0];
    if text::status_word(a) == pass {
        text::status_word(b)
    } else {
        text::status_word(a)
    }
}

struct Head {
    status: String,
    source: Source,
    envelope: Option<text::Envelope>,
    notes: Vec<String>,
}

/// Reads the status: the line-1 envelope, else the heading within the first lines.
fn read_status(role: Role, output: &str) -> Result<Head, ContractError> {
    let ok = |s: &str| allowed(role).contains(&text::status_word(s).as_str());
    let first = text::first_line(output);
    let mut notes = Vec::new();
    let mut envelope_problem = None;
    let mut envelope = None;
    if let Some((_, line)) = first.filter(|(_, l)| text::is_envelope_line(l)) {
        match text::parse_envelope(line) {
            Ok(env) if ok(&env.status) => envelope = Some(env),
            Ok(env) => {
                envelope_problem = Some(format!(
                    "\"s\" is {}, not one of {}",
                    env.status,
                    allowed(role).join(", ")
                ))
            }
            Err(reason) => envelope_problem = Some(reason),
        }
    }
    let heading = text::status_heading(output, heading_title(role));
    if let Some(env) = envelope {
        let mut status = text::status_word(&env.status);
        if let Some((n, h)) = heading.filter(|(_, h)| ok(h) && text::status_word(h) != status) {
            let stricter = stricter_status(role, &status, &h);
            notes.push(format!(
                "the envelope says {status} but the heading on line {n} says {h}; the stricter, {stricter}, counts"
            ));
            status = stricter;
        }
        return Ok(Head {
            status,
            source: Source::Envelope,
            envelope: Some(env),
            notes,
        });
    }
    let first_no = first.map_or(0, |(n, _)| n);
    let later = text::later_envelope(output, first_no);
    match heading {
        Some((n, h)) if ok(&h) => {
            if let Some(problem) = envelope_problem {
                notes.push(format!(
                    "malformed envelope on line 1 ({problem}); the heading on line {n} stood in"
                ));
            }
            if let Some(line) = later {
                notes.push(format!(
                    "ignored an envelope on line {line}: only line 1 counts"
                ));
            }
            Ok(Head {
                status: text::status_word(&h),
                source: Source::Heading,
                envelope: None,
                notes,
            })
        }
        Some((n, h)) => Err(ContractError::InvalidField {
            role,
            field: format!("heading on line {n}"),
            reason: format!("\"{h}\" is not one of {}", allowed(role).join(", ")),
        }),
        None => Err(match (envelope_problem, later) {
            (Some(reason), _) => ContractError::MalformedEnvelope { role, reason },
            (None, Some(line)) => ContractError::EnvelopeNotOnFirstLine { role, line },
            (None, None) => ContractError::ProseOnly {
                role,
                excerpt: excerpt(output),
            },
        }),
    }
}

/// `KEY: value` lines, overridden by a fenced router contract when there is one.
fn structured_fields(role: Role, output: &str) -> Result<Map<String, Value>, ContractError> {
    let mut fields = text::key_lines(output);
    match text::router_contract_block(output) {
        Ok(yaml) => {
            let block = text::yaml_mapping(&yaml)
                .map_err(|reason| ContractError::MalformedYaml { role, reason })?;
            fields.extend(block);
        }
        Err(BlockError::NoHeading) => {}
        Err(BlockError::NoFence { heading_line }) => {
            return Err(ContractError::MissingRouterContract {
                role,
                reason: format!(
                    "the heading on line {heading_line} has no fenced ```yaml block after it"
                ),
            })
        }
        Err(BlockError::Unclosed { line }) => {
            return Err(ContractError::MalformedYaml {
                role,
                reason: format!("the fence opened on line {line} is never closed"),
            })
        }
    }
    Ok(fields)
}

fn typed<T: serde::de::DeserializeOwned>(
    role: Role,
    map: &Map<String, Value>,
) -> Result<T, ContractError> {
    serde_path_to_error::deserialize(Value::Object(map.clone())).map_err(|e| {
        ContractError::InvalidField {
            role,
            field: e.path().to_string(),
            reason: e.inner().to_string(),
        }
    })
}

fn count_field(
    role: Role,
    fields: &Map<String, Value>,
    key: &str,
) -> Result<Option<u64>, ContractError> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| ContractError::InvalidField {
                role,
                field: key.into(),
                reason: format!("expected a whole number, found a {} ({v})", text::kind(v)),
            }),
    }
}

fn bool_field(
    role: Role,
    fields: &Map<String, Value>,
    key: &str,
) -> Result<Option<bool>, ContractError> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(v) => Err(ContractError::InvalidField {
            role,
            field: key.into(),
            reason: format!("expected true or false, found {v}"),
        }),
    }
}

pub(crate) fn parse(role: Role, output: &str) -> Result<Checked, ContractError> {
    let Head {
        status,
        source,
        envelope,
        mut notes,
    } = read_status(role, output)?;
    let fields = structured_fields(role, output)?;
    let findings = merge::findings_in(output);
    let listed_critical = findings
        .iter()
        .filter(|f| f.severity == Severity::Critical)
        .count() as u64;
    let common = ReadOnlyCommon {
        blocking: envelope.as_ref().and_then(|e| e.blocking),
        critical_count: envelope
            .as_ref()
            .and_then(|e| e.critical)
            .unwrap_or(0)
            .max(listed_critical),
        findings,
        fields: typed(role, &fields)?,
        memory_notes: memory_notes(output),
    };
    let (contract, outcome) = match role {
        Role::CodeReviewer => review(&status, common, output, &mut notes),
        Role::FailureHunter => hunt(role, &status, common, &fields, &mut notes)?,
        Role::IntegrationVerifier => verify(role, &status, common, &fields, output, &mut notes)?,
        _ => {
            let c = plan_gap(role, &status, envelope.as_ref(), &fields, &mut notes)?;
            let outcome = plan_gap_outcome(&c);
            (Contract::PlanGap(c), outcome)
        }
    };
    Ok(Checked {
        role,
        source,
        contract,
        outcome,
        notes,
    })
}

/// Whether the common fields block a pass: a critical issue, or `"b": true`.
fn blocked(common: &ReadOnlyCommon) -> bool {
    common.critical_count > 0 || common.blocking == Some(true)
}

/// What blocks a pass, as a note says it.
fn why_blocked(common: &ReadOnlyCommon) -> String {
    if common.critical_count > 0 {
        format!(
            "{} critical issue{}",
            common.critical_count,
            if common.critical_count == 1 { "" } else { "s" }
        )
    } else {
        "\"b\": true".to_string()
    }
}

/// code-reviewer's contract and outcome: a blocked APPROVE counts as CHANGES_REQUESTED, and an
/// APPROVE with no findings and few citations needs verification.
fn review(
    status: &str,
    common: ReadOnlyCommon,
    output: &str,
    notes: &mut Vec<String>,
) -> (Contract, Outcome) {
    let claimed = ReviewStatus::from_word(status).unwrap_or(ReviewStatus::ChangesRequested);
    let mut effective = claimed;
    if claimed == ReviewStatus::Approve && blocked(&common) {
        notes.push(format!(
            "APPROVE with {} counts as CHANGES_REQUESTED",
            why_blocked(&common)
        ));
        effective = ReviewStatus::ChangesRequested;
    }
    let mut cited: Vec<_> = text::locations(output);
    cited.sort();
    cited.dedup();
    let outcome = match effective {
        ReviewStatus::ChangesRequested => Outcome::NotPassed {
            status: effective.as_str().into(),
        },
        ReviewStatus::Approve if common.findings.is_empty() && cited.len() < 3 => {
            Outcome::NeedsVerification {
                reason: format!(
                    "APPROVE with no findings and {} file:line citation{} (fewer than 3) is a rubber stamp",
                    cited.len(),
                    if cited.len() == 1 { "" } else { "s" }
                ),
            }
        }
        ReviewStatus::Approve => Outcome::Pass,
    };
    let c = ReviewContract {
        status: effective,
        claimed,
        common,
        citations: cited.len(),
    };
    (Contract::Review(c), outcome)
}

/// failure-hunter's contract and outcome: a blocked CLEAN counts as ISSUES_FOUND, and a CLEAN
/// without a stated scan scope needs verification.
fn hunt(
    role: Role,
    status: &str,
    common: ReadOnlyCommon,
    fields: &Map<String, Value>,
    notes: &mut Vec<String>,
) -> Result<(Contract, Outcome), ContractError> {
    let claimed = HuntStatus::from_word(status).unwrap_or(HuntStatus::IssuesFound);
    let mut effective = claimed;
    if claimed == HuntStatus::Clean && blocked(&common) {
        notes.push(format!(
            "CLEAN with {} counts as ISSUES_FOUND",
            why_blocked(&common)
        ));
        effective = HuntStatus::IssuesFound;
    }
    let files_scanned = count_field(role, fields, "FILES_SCANNED")?;
    let sites_inspected = match count_field(role, fields, "ERROR_HANDLING_SITES_INSPECTED")? {
        Some(n) => Some(n),
        None => count_field(role, fields, "SITES_INSPECTED")?,
    };
    let outcome = match effective {
        HuntStatus::IssuesFound => Outcome::NotPassed {
            status: effective.as_str().into(),
        },
        HuntStatus::Clean
            if files_scanned.unwrap_or(0) == 0 || sites_inspected.unwrap_or(0) == 0 =>
        {
            Outcome::NeedsVerification {
                reason: "CLEAN needs a stated scan scope: FILES_SCANNED and ERROR_HANDLING_SITES_INSPECTED above 0".into(),
            }
        }
        HuntStatus::Clean => Outcome::Pass,
    };
    let c = HuntContract {
        status: effective,
        claimed,
        common,
        files_scanned,
        sites_inspected,
    };
    Ok((Contract::Hunt(c), outcome))
}

/// integration-verifier's contract and outcome: its scenario accounting must be whole and
/// consistent, and a blocked PASS, or one with failed scenarios, counts as FAIL.
fn verify(
    role: Role,
    status: &str,
    common: ReadOnlyCommon,
    fields: &Map<String, Value>,
    output: &str,
    notes: &mut Vec<String>,
) -> Result<(Contract, Outcome), ContractError> {
    let missing: Vec<String> = ACCOUNTING_FIELDS
        .iter()
        .filter(|f| !fields.contains_key(**f))
        .map(|f| format!("{f} is missing"))
        .collect();
    if !missing.is_empty() {
        return Err(ContractError::ScenarioAccounting {
            role,
            problems: missing,
        });
    }
    let accounting: ScenarioAccounting = typed(role, fields)?;
    let problems = accounting.problems();
    if !problems.is_empty() {
        return Err(ContractError::ScenarioAccounting { role, problems });
    }
    let claimed = VerifyStatus::from_word(status).unwrap_or(VerifyStatus::Fail);
    let mut effective = claimed;
    if claimed == VerifyStatus::Pass && blocked(&common) {
        notes.push(format!("PASS with {} counts as FAIL", why_blocked(&common)));
        effective = VerifyStatus::Fail;
    }
    if effective == VerifyStatus::Pass && accounting.scenarios_failed > 0 {
        notes.push(format!(
            "PASS with {} failed scenario(s) counts as FAIL",
            accounting.scenarios_failed
        ));
        effective = VerifyStatus::Fail;
    }
    let outcome = match effective {
        VerifyStatus::Pass => Outcome::Pass,
        VerifyStatus::Fail => Outcome::NotPassed {
            status: "FAIL".into(),
        },
    };
    let validations = merge::validations_in(output);
    let c = VerifyContract {
        status: effective,
        claimed,
        common,
        accounting,
        validations,
    };
    Ok((Contract::Verify(c), outcome))
}

/// plan-gap-reviewer's outcome: FINDINGS does not pass, and a PASS needs no blocking findings
/// and `REPLAN_NEEDED: false`.
fn plan_gap_outcome(c: &PlanGapContract) -> Outcome {
    if c.status == PlanGapStatus::Findings {
        Outcome::NotPassed {
            status: "FINDINGS".into(),
        }
    } else {
        let mut unmet = Vec::new();
        if c.blocking_findings != 0 {
            unmet.push(format!(
                "PASS needs BLOCKING_FINDINGS_COUNT 0, not {}",
                c.blocking_findings
            ));
        }
        if c.replan_needed != Some(false) {
            unmet.push("PASS needs REPLAN_NEEDED: false".into());
        }
        if unmet.is_empty() {
            Outcome::Pass
        } else {
            Outcome::PassRefused { unmet }
        }
    }
}

fn plan_gap(
    role: Role,
    status: &str,
    envelope: Option<&text::Envelope>,
    fields: &Map<String, Value>,
    notes: &mut Vec<String>,
) -> Result<PlanGapContract, ContractError> {
    let mut status = PlanGapStatus::from_word(status).unwrap_or(PlanGapStatus::Findings);
    if let Some(Value::String(stated)) = fields.get("PLANNING_REVIEW_STATUS") {
        match PlanGapStatus::from_word(stated) {
            Some(s) if s != status => {
                notes.push(format!(
                    "PLANNING_REVIEW_STATUS {} disagrees with {}; FINDINGS counts",
                    s.as_str(),
                    status.as_str()
                ));
                status = PlanGapStatus::Findings;
            }
            Some(_) => {}
            None => {
                return Err(ContractError::InvalidField {
                    role,
                    field: "PLANNING_REVIEW_STATUS".into(),
                    reason: format!("\"{stated}\" is not PASS or FINDINGS"),
                })
            }
        }
    }
    let stated = count_field(role, fields, "BLOCKING_FINDINGS_COUNT")?;
    let from_envelope = envelope.and_then(|e| e.blocking_findings);
    if let (Some(a), Some(b)) = (stated, from_envelope) {
        if a != b {
            notes.push(format!("the envelope counts {b} blocking findings, BLOCKING_FINDINGS_COUNT {a}; the larger counts"));
        }
    }
    let blocking = envelope.and_then(|e| e.blocking);
    let blocking_findings = stated.unwrap_or(0).max(from_envelope.unwrap_or(0));
    let replan_reason = match fields.get("REPLAN_REASON") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(v) => Some(v.to_string()),
    };
    let finding_buckets = match fields.get("FINDING_BUCKETS") {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(m.clone()),
        Some(v) => {
            return Err(ContractError::InvalidField {
                role,
                field: "FINDING_BUCKETS".into(),
                reason: format!(
                    "expected a mapping of bucket: count, found a {}",
                    text::kind(v)
                ),
            })
        }
    };
    if status == PlanGapStatus::Pass && blocking == Some(true) {
        notes.push("PASS with \"b\": true counts as FINDINGS".into());
        status = PlanGapStatus::Findings;
    }
    if status == PlanGapStatus::Findings {
        if finding_buckets.is_none() {
            return Err(ContractError::MissingFields {
                role,
                fields: vec!["FINDING_BUCKETS".into()],
            });
        }
        let reason_given = replan_reason.as_deref().is_some_and(|r| {
            let r = r.trim();
            !r.is_empty() && !r.eq_ignore_ascii_case("none") && !r.eq_ignore_ascii_case("n/a")
        });
        if blocking_findings > 0 && !reason_given {
            return Err(ContractError::MissingFields {
                role,
                fields: vec!["REPLAN_REASON".into()],
            });
        }
    }
    Ok(PlanGapContract {
        status,
        blocking,
        blocking_findings,
        replan_needed: bool_field(role, fields, "REPLAN_NEEDED")?,
        replan_reason,
        finding_buckets,
    })
}

/// The text under `### Memory Notes`, up to the next heading or the first machine line.
fn memory_notes(output: &str) -> Option<String> {
    let lines = text::section(output, "Memory Notes")?;
    let notes: Vec<&str> = lines.into_iter().take_while(|l| !ends_notes(l)).collect();
    Some(notes.join("\n").trim().to_string()).filter(|s| !s.is_empty())
}

/// Whether `line` ends a `### Memory Notes` section that no heading closes: the machine lines an
/// agent writes after its notes (`CONTRACT {…}`, `STATUS: …`, a `KEY: value` in capitals, a
/// code fence) are its contract, never notes to keep.
fn ends_notes(line: &str) -> bool {
    let t = line.trim_start();
    if t.starts_with("```") || t.starts_with("CONTRACT ") || t.starts_with("CONTRACT{") {
        return true;
    }
    t.split_once(':').is_some_and(|(key, _)| {
        key.len() > 1
            && key.starts_with(|c: char| c.is_ascii_uppercase())
            && key
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
    })
}
