//! Findings across agents: reading them from a review, merging the reviewer's and the hunter's
//! (agreement at one `file:line` is cross-confirmation), applying the verifier's finding
//! validation, and settling two contradictory verdicts.

use super::text;
pub use super::text::Location;
use super::{Role, Verdict};

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Low,
    Medium,
    High,
    Critical,
}

impl Severity {
    pub fn name(self) -> &'static str {
        match self {
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
            Severity::Critical => "critical",
        }
    }
}

/// One finding of a reviewer or hunter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub severity: Severity,
    /// The first `file:line` the finding cites; a finding without one is never merged.
    pub location: Option<Location>,
    /// A leading `[NN]` confidence, 0–100.
    pub confidence: Option<u8>,
    pub text: String,
}

/// Section titles (their start, any case) and the severity of the items under them.
const SECTIONS: [(&str, Severity); 8] = [
    ("Critical Issues", Severity::Critical),
    ("High Issues", Severity::High),
    ("High Priority Issues", Severity::High),
    ("Important Issues", Severity::High),
    ("Medium Issues", Severity::Medium),
    ("Minor Issues", Severity::Low),
    ("Low Issues", Severity::Low),
    ("Low Priority Issues", Severity::Low),
];

/// The findings listed under `### Critical Issues`, `### High Issues` (or `Important`),
/// `### Medium Issues` and `### Minor Issues` (or `Low`), one per list item. An item reading
/// `None` is no finding.
pub fn findings_in(output: &str) -> Vec<Finding> {
    let mut out = Vec::new();
    for (title, severity) in SECTIONS {
        let Some(lines) = text::section(output, title) else {
            continue;
        };
        for item in text::list_items(&lines) {
            let lower = item.to_ascii_lowercase();
            if lower == "none"
                || lower.starts_with("none ")
                || lower.starts_with("none.")
                || lower.starts_with("none /")
            {
                continue;
            }
            let (confidence, rest) = leading_confidence(&item);
            out.push(Finding {
                severity,
                location: text::locations(rest).into_iter().next(),
                confidence,
                text: rest.to_string(),
            });
        }
    }
    out
}

fn leading_confidence(item: &str) -> (Option<u8>, &str) {
    let parsed = item.strip_prefix('[').and_then(|rest| {
        let (inside, after) = rest.split_once(']')?;
        let n: u8 = inside.trim().trim_end_matches('%').parse().ok()?;
        (n <= 100).then_some((n, after.trim_start()))
    });
    match parsed {
        Some((n, rest)) => (Some(n), rest),
        None => (None, item),
    }
}

/// A finding in the merged set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergedFinding {
    pub finding: Finding,
    /// The roles that raised it, in order.
    pub raised_by: Vec<Role>,
    /// Raised independently by code-reviewer and failure-hunter at the same `file:line`.
    pub cross_confirmed: bool,
    /// The other role's wording of a cross-confirmed finding.
    pub also: Vec<String>,
}

/// Merges the findings of code-reviewer and failure-hunter. A hunter finding at the same
/// `file:line` as a reviewer finding joins it: the merged finding is cross-confirmed, takes the
/// higher severity and, when a confidence is known, the higher one raised a tier (+10, at most
/// 100). Findings without a location are kept as they are and never confirmed.
pub fn merge_findings(reviewer: &[Finding], hunter: &[Finding]) -> Vec<MergedFinding> {
    let mut merged: Vec<MergedFinding> = reviewer
        .iter()
        .map(|f| MergedFinding {
            finding: f.clone(),
            raised_by: vec![Role::CodeReviewer],
            cross_confirmed: false,
            also: Vec::new(),
        })
        .collect();
    for h in hunter {
        let partner = h.location.as_ref().and_then(|loc| {
            merged.iter_mut().find(|m| {
                !m.cross_confirmed
                    && m.raised_by == [Role::CodeReviewer]
                    && m.finding.location.as_ref() == Some(loc)
            })
        });
        match partner {
            Some(m) => {
                m.cross_confirmed = true;
                m.raised_by.push(Role::FailureHunter);
                m.finding.severity = m.finding.severity.max(h.severity);
                m.finding.confidence = match (m.finding.confidence, h.confidence) {
                    (None, None) => None,
                    (a, b) => Some(
                        a.unwrap_or(0)
                            .max(b.unwrap_or(0))
                            .saturating_add(10)
                            .min(100),
                    ),
                };
                m.also.push(h.text.clone());
            }
            None => merged.push(MergedFinding {
                finding: h.clone(),
                raised_by: vec![Role::FailureHunter],
                cross_confirmed: false,
                also: Vec::new(),
            }),
        }
    }
    merged
}

/// What the verifier found when it checked a finding's quote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Validation {
    /// `validated: true`
    Confirmed,
    /// `validated: false`: the quote is not at that `file:line`.
    NotConfirmed,
    /// `validated: degraded`: the verifier could not check (the file could not be read …).
    Degraded,
}

/// One entry of the verifier's `### Reviewer Finding Validation` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindingValidation {
    pub location: Location,
    pub validation: Validation,
}

/// The entries of `### Reviewer Finding Validation`: each line that cites a `file:line` and
/// says `validated: true`, `false` or `degraded`.
pub fn validations_in(output: &str) -> Vec<FindingValidation> {
    let Some(lines) = text::section(output, "Reviewer Finding Validation") else {
        return Vec::new();
    };
    text::list_items(&lines)
        .iter()
        .filter_map(|item| {
            let location = text::locations(item).into_iter().next()?;
            let lower = item.to_ascii_lowercase();
            let (_, after) = lower.split_once("validated")?;
            let word = after
                .trim_start_matches([':', '*', ' ', '='])
                .split(|c: char| !c.is_ascii_alphabetic())
                .next()?;
            let validation = match word {
                "true" | "yes" => Validation::Confirmed,
                "false" | "no" => Validation::NotConfirmed,
                "degraded" => Validation::Degraded,
                _ => return None,
            };
            Some(FindingValidation {
                location,
                validation,
            })
        })
        .collect()
}

/// A finding taken out of the merged set, and why (for the workflow's history).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DroppedFinding {
    pub finding: MergedFinding,
    pub reason: String,
}

/// Applies the verifier's validation to the merged findings: a finding it marked
/// `validated: false` is dropped (a hallucinated finding must not gate a phase); one it could
/// not check (`degraded`) is kept when critical or high — a failed read never removes a serious
/// finding — and dropped otherwise. Findings it did not mention, or confirmed, stay.
pub fn apply_validation(
    merged: Vec<MergedFinding>,
    validations: &[FindingValidation],
) -> (Vec<MergedFinding>, Vec<DroppedFinding>) {
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    for m in merged {
        let verdict = m.finding.location.as_ref().and_then(|loc| {
            validations
                .iter()
                .find(|v| &v.location == loc)
                .map(|v| (loc.clone(), v.validation))
        });
        match verdict {
            Some((loc, Validation::NotConfirmed)) => dropped.push(DroppedFinding {
                reason: format!("finding_dropped: hallucinated — the verifier could not confirm the quote at {loc}"),
                finding: m,
            }),
            Some((loc, Validation::Degraded)) if m.finding.severity < Severity::High => {
                dropped.push(DroppedFinding {
                    reason: format!(
                        "finding_dropped: unconfirmed — the verifier could not check {loc} and the finding is {}",
                        m.finding.severity.name()
                    ),
                    finding: m,
                })
            }
            _ => kept.push(m),
        }
    }
    (kept, dropped)
}

/// Two verdicts on the same evidence, settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settled {
    pub verdict: Verdict,
    /// When one passes and the other does not: the sentence to log.
    pub contradiction: Option<String>,
}

/// The stricter of two verdicts counts; they are never averaged. A pass against a non-pass is a
/// contradiction to log.
pub fn stricter(a: (Role, Verdict), b: (Role, Verdict)) -> Settled {
    let verdict = a.1.max(b.1);
    let contradiction = (a.1.is_pass() != b.1.is_pass()).then(|| {
        format!(
            "{} says {} but {} says {}; the stricter, {}, counts",
            a.0,
            a.1.name(),
            b.0,
            b.1.name(),
            verdict.name()
        )
    });
    Settled {
        verdict,
        contradiction,
    }
}
