//! Tests of the read-only roles' contracts and of the finding merge.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{json, Value};

use super::merge::{
    apply_validation, findings_in, merge_findings, stricter, validations_in, Finding, Location,
    Severity, Validation,
};
use super::tests::{scenario, unmet, with, without, yaml};
use super::*;

// --- read-only roles -------------------------------------------------------------------------

const REVIEW_BODY: &str = "\
### Critical Issues
None

### High Issues
- [80] src/auth.rs:42 — the token is compared with `==` (timing leak)

Checked src/auth.rs:10, src/auth.rs:42 and src/session.rs:7.

### Memory Notes (For Workflow-Final Persistence)
- auth compares tokens in one place
";

#[test]
fn a_reviewer_envelope_on_line_one() {
    let out = format!(
        "CONTRACT {{\"s\":\"APPROVE\",\"b\":false,\"cr\":0}}\n## Review: Approve\n{REVIEW_BODY}"
    );
    let c = parse(Role::CodeReviewer, &out).unwrap();
    assert_eq!(c.source, Source::Envelope);
    assert_eq!(c.outcome, Outcome::Pass);
    let Contract::Review(r) = c.contract else {
        panic!()
    };
    assert_eq!(r.common.findings.len(), 1);
    assert_eq!(r.common.findings[0].severity, Severity::High);
    assert_eq!(r.common.findings[0].confidence, Some(80));
    assert_eq!(r.citations, 3);
    assert_eq!(
        r.common.memory_notes.as_deref(),
        Some("- auth compares tokens in one place")
    );
}

#[test]
fn machine_lines_after_the_memory_notes_are_not_notes() {
    let out = format!(
        "CONTRACT {{\"s\":\"APPROVE\",\"b\":false,\"cr\":0}}\n## Review: Approve\n{REVIEW_BODY}- Patterns: one helper compares tokens\nSTATUS: APPROVE\nCONFIDENCE: 90\nCONTRACT {{\"s\":\"APPROVE\"}}\n"
    );
    let c = parse(Role::CodeReviewer, &out).unwrap();
    let Contract::Review(r) = c.contract else {
        panic!()
    };
    assert_eq!(
        r.common.memory_notes.as_deref(),
        Some("- auth compares tokens in one place\n- Patterns: one helper compares tokens")
    );
}

#[test]
fn the_heading_stands_in_for_a_missing_or_malformed_envelope() {
    let missing = format!("Reviewed the diff.\n## Review: Changes Requested\n\nREMEDIATION_NEEDED: true\nREMEDIATION_SCOPE_REQUESTED: CRITICAL_ONLY\n{REVIEW_BODY}");
    let c = parse(Role::CodeReviewer, &missing).unwrap();
    assert_eq!(c.source, Source::Heading);
    assert_eq!(
        c.outcome,
        Outcome::NotPassed {
            status: "CHANGES_REQUESTED".into()
        }
    );
    let Contract::Review(r) = &c.contract else {
        panic!()
    };
    assert_eq!(r.common.fields.remediation_needed, Some(true));
    assert_eq!(
        r.common.fields.remediation_scope_requested,
        Some(RemediationScope::CriticalOnly)
    );

    let malformed = format!("CONTRACT {{\"s\":\"APPROVE\",\n## Review: Approve\n{REVIEW_BODY}");
    let c = parse(Role::CodeReviewer, &malformed).unwrap();
    assert_eq!(c.source, Source::Heading);
    assert!(
        c.notes[0].starts_with("malformed envelope on line 1"),
        "{:?}",
        c.notes
    );

    for (role, heading) in [
        (Role::FailureHunter, "## Error Handling Audit: ISSUES_FOUND"),
        (Role::IntegrationVerifier, "## Verification: FAIL"),
        (Role::PlanGapReviewer, "## Planning Review: Findings"),
    ] {
        // The heading is read; the verifier and plan-gap reviewer still need their fields.
        match parse(role, &format!("x\n{heading}\n")) {
            Ok(c) => assert_eq!((c.source, c.advances()), (Source::Heading, false), "{role}"),
            Err(e) => assert!(
                !matches!(e, ContractError::ProseOnly { .. }),
                "{role}: {e:?}"
            ),
        }
    }
}

#[test]
fn a_heading_below_line_five_does_not_count() {
    let out = "a\nb\nc\nd\ne\n## Review: Approve\n";
    assert!(matches!(
        parse(Role::CodeReviewer, out),
        Err(ContractError::ProseOnly { .. })
    ));
}

#[test]
fn an_envelope_on_a_later_line_is_not_the_contract() {
    let out = "Here is my review.\nCONTRACT {\"s\":\"APPROVE\",\"b\":false,\"cr\":0}\n";
    assert_eq!(
        parse(Role::CodeReviewer, out).unwrap_err(),
        ContractError::EnvelopeNotOnFirstLine {
            role: Role::CodeReviewer,
            line: 2
        }
    );
    // With a heading in the window the heading decides, and the stray envelope is noted.
    let out = "Here is my review.\n## Review: Changes Requested\nCONTRACT {\"s\":\"APPROVE\"}\n";
    let c = parse(Role::CodeReviewer, out).unwrap();
    assert_eq!(c.source, Source::Heading);
    assert!(
        c.notes.iter().any(|n| n.contains("line 3")),
        "{:?}",
        c.notes
    );
    // Blank lines before the envelope are tolerated.
    let out = format!("\n\nCONTRACT {{\"s\":\"APPROVE\",\"cr\":0}}\n{REVIEW_BODY}");
    assert_eq!(
        parse(Role::CodeReviewer, &out).unwrap().source,
        Source::Envelope
    );
}

#[test]
fn malformed_envelopes_say_what_is_wrong() {
    for (line, reason) in [
        ("CONTRACT", "no JSON object"),
        ("CONTRACT {\"s\":", "does not parse"),
        ("CONTRACT [1]", "not a JSON object"),
        ("CONTRACT {\"b\":false}", "\"s\" (the status) is missing"),
        (
            "CONTRACT {\"s\":\"LGTM\"}",
            "not one of APPROVE, CHANGES_REQUESTED",
        ),
        (
            "CONTRACT {\"s\":\"APPROVE\",\"b\":\"no\"}",
            "\"b\" must be true or false",
        ),
        (
            "CONTRACT {\"s\":\"APPROVE\",\"cr\":-1}",
            "\"cr\" must be a whole number",
        ),
    ] {
        let err = parse(Role::CodeReviewer, &format!("{line}\nlooks good\n")).unwrap_err();
        let ContractError::MalformedEnvelope { reason: got, .. } = &err else {
            panic!("{line}: {err:?}")
        };
        assert!(got.contains(reason), "{line}: {got}");
        assert!(err
            .to_string()
            .contains("Fix: write line 1 as CONTRACT {\"s\":\"APPROVE\""));
    }
}

#[test]
fn envelope_and_heading_that_disagree_take_the_stricter() {
    let out = format!(
        "CONTRACT {{\"s\":\"APPROVE\",\"cr\":0}}\n## Review: Changes Requested\n{REVIEW_BODY}"
    );
    let c = parse(Role::CodeReviewer, &out).unwrap();
    assert_eq!(
        c.outcome,
        Outcome::NotPassed {
            status: "CHANGES_REQUESTED".into()
        }
    );
    assert!(c.notes[0].contains("the stricter, CHANGES_REQUESTED, counts"));
}

#[test]
fn an_approval_with_critical_issues_is_changes_requested() {
    let by_count = format!("CONTRACT {{\"s\":\"APPROVE\",\"b\":false,\"cr\":2}}\n{REVIEW_BODY}");
    let c = parse(Role::CodeReviewer, &by_count).unwrap();
    assert_eq!(
        c.outcome,
        Outcome::NotPassed {
            status: "CHANGES_REQUESTED".into()
        }
    );
    let Contract::Review(r) = &c.contract else {
        panic!()
    };
    assert_eq!(
        (r.claimed, r.status),
        (ReviewStatus::Approve, ReviewStatus::ChangesRequested)
    );
    let listed = "CONTRACT {\"s\":\"APPROVE\",\"cr\":0}\n### Critical Issues\n- src/a.rs:3 — unchecked unwrap\n";
    let c = parse(Role::CodeReviewer, listed).unwrap();
    assert!(
        c.notes[0].contains("1 critical issue counts as CHANGES_REQUESTED"),
        "{:?}",
        c.notes
    );
}

#[test]
fn a_rubber_stamp_approval_needs_verification() {
    let out = "CONTRACT {\"s\":\"APPROVE\",\"b\":false,\"cr\":0}\n## Review: Approve\nLooks good; see src/a.rs:1.\n";
    let c = parse(Role::CodeReviewer, out).unwrap();
    assert!(
        matches!(&c.outcome, Outcome::NeedsVerification { reason } if reason.contains("1 file:line citation"))
    );
    assert!(!c.advances());
}

#[test]
fn a_clean_audit_needs_a_stated_scope() {
    let bare = "CONTRACT {\"s\":\"CLEAN\",\"b\":false,\"cr\":0}\n## Error Handling Audit: CLEAN\n";
    assert!(matches!(
        parse(Role::FailureHunter, bare).unwrap().outcome,
        Outcome::NeedsVerification { .. }
    ));
    let scoped = format!("{bare}FILES_SCANNED: 4\nERROR_HANDLING_SITES_INSPECTED: 11\n");
    let c = parse(Role::FailureHunter, &scoped).unwrap();
    assert_eq!(c.outcome, Outcome::Pass);
    let Contract::Hunt(h) = c.contract else {
        panic!()
    };
    assert_eq!((h.files_scanned, h.sites_inspected), (Some(4), Some(11)));
    let issues = "CONTRACT {\"s\":\"ISSUES_FOUND\",\"b\":true,\"cr\":1}\n### Critical Issues\n- src/io.rs:9 — error swallowed\n";
    assert!(!parse(Role::FailureHunter, issues).unwrap().advances());
}

fn verifier_block(total: u64, passed: u64, failed: u64, rows: Value, evidence: Value) -> String {
    let fields = json!({"SCENARIOS_TOTAL": total, "SCENARIOS_PASSED": passed, "SCENARIOS_FAILED": failed,
                        "SCENARIO_ROWS": rows, "EVIDENCE": {"scenarios": evidence}});
    format!(
        "### Router Contract (MACHINE-READABLE)\n```yaml\n{}```\n",
        yaml(&fields)
    )
}

fn one_scenario_verifier(status: &str) -> String {
    format!(
        "CONTRACT {{\"s\":\"{status}\",\"b\":false,\"cr\":0}}\n## Verification: {status}\n{}",
        verifier_block(
            1,
            1,
            0,
            json!([scenario("parses empty input")]),
            json!(["parses empty input | cargo test x -> exit 0"])
        )
    )
}

#[test]
fn a_verifier_whose_accounting_reconciles_passes() {
    let c = parse(Role::IntegrationVerifier, &one_scenario_verifier("PASS")).unwrap();
    assert_eq!(c.outcome, Outcome::Pass);
    let Contract::Verify(v) = c.contract else {
        panic!()
    };
    assert_eq!(
        v.accounting.scenario_rows[0].command.as_deref(),
        Some("cargo test x")
    );
}

#[test]
fn scenario_accounting_that_does_not_reconcile_rejects_the_contract() {
    let failing = with(scenario("retry"), "status", json!("FAIL"));
    let out = format!(
        "CONTRACT {{\"s\":\"PASS\",\"b\":false,\"cr\":0}}\n{}",
        verifier_block(
            3,
            2,
            0,
            json!([scenario("create"), with(failing, "expected", json!(""))]),
            json!(["create | ok"])
        )
    );
    let err = parse(Role::IntegrationVerifier, &out).unwrap_err();
    let ContractError::ScenarioAccounting { problems, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(
        problems,
        &[
            "SCENARIOS_TOTAL is 3 but SCENARIOS_PASSED + SCENARIOS_FAILED is 2 + 0 = 2",
            "SCENARIOS_TOTAL is 3 but SCENARIO_ROWS has 2 rows",
            "SCENARIOS_PASSED is 2 but 1 row has status PASS",
            "SCENARIOS_FAILED is 0 but 1 row has status FAIL",
            "scenario \"retry\" has no expected",
            "scenario \"retry\" has no EVIDENCE entry",
            "SCENARIOS_TOTAL is 3 but EVIDENCE.scenarios has 1 entry",
        ]
    );
    assert!(err
        .to_string()
        .contains("Fix: make SCENARIOS_TOTAL equal SCENARIOS_PASSED + SCENARIOS_FAILED"));
}

#[test]
fn a_verifier_without_accounting_or_with_a_scenario_missing_its_command_is_rejected() {
    let none = "CONTRACT {\"s\":\"PASS\",\"b\":false,\"cr\":0}\nAll scenarios pass.\n";
    let err = parse(Role::IntegrationVerifier, none).unwrap_err();
    assert!(
        matches!(&err, ContractError::ScenarioAccounting { problems, .. } if problems[0] == "SCENARIOS_TOTAL is missing")
    );
    let no_command = format!(
        "CONTRACT {{\"s\":\"PASS\"}}\n{}",
        verifier_block(
            1,
            1,
            0,
            json!([without(scenario("a"), "command")]),
            json!(["a | ok"])
        )
    );
    let err = parse(Role::IntegrationVerifier, &no_command).unwrap_err();
    assert!(
        err.to_string().contains("scenario \"a\" has no command"),
        "{err}"
    );
}

#[test]
fn a_verifier_pass_with_critical_issues_or_failed_scenarios_is_fail() {
    let out = one_scenario_verifier("PASS").replace("\"cr\":0", "\"cr\":1");
    let c = parse(Role::IntegrationVerifier, &out).unwrap();
    assert_eq!(
        c.outcome,
        Outcome::NotPassed {
            status: "FAIL".into()
        }
    );
    let failed = format!(
        "CONTRACT {{\"s\":\"PASS\"}}\n{}",
        verifier_block(
            1,
            0,
            1,
            json!([with(scenario("a"), "status", json!("FAIL"))]),
            json!(["a | exit 1"])
        )
    );
    let c = parse(Role::IntegrationVerifier, &failed).unwrap();
    assert!(c.notes[0].contains("1 failed scenario"));
    assert!(!c.advances());
}

#[test]
fn plan_gap_reviewer_contracts() {
    let pass = "CONTRACT {\"s\":\"PASS\",\"b\":false,\"bf\":0}\nBLOCKING_FINDINGS_COUNT: 0\nREPLAN_NEEDED: false\n";
    assert_eq!(
        parse(Role::PlanGapReviewer, pass).unwrap().outcome,
        Outcome::Pass
    );
    let unsupported =
        "CONTRACT {\"s\":\"PASS\",\"b\":false,\"bf\":0}\nBLOCKING_FINDINGS_COUNT: 2\n";
    assert_eq!(
        unmet(&parse(Role::PlanGapReviewer, unsupported).unwrap()).len(),
        2
    );
    let findings = "CONTRACT {\"s\":\"FINDINGS\",\"b\":true,\"bf\":1}\n## Planning Review: Findings\nREPLAN_NEEDED: true\n";
    assert_eq!(
        parse(Role::PlanGapReviewer, findings).unwrap_err(),
        ContractError::MissingFields {
            role: Role::PlanGapReviewer,
            fields: vec!["FINDING_BUCKETS".into()]
        }
    );
    let with_buckets = format!("{findings}### Router Contract\n```yaml\nFINDING_BUCKETS: {{missing_surfaces: 1}}\nREPLAN_REASON: None\n```\n");
    assert!(parse(Role::PlanGapReviewer, &with_buckets)
        .unwrap_err()
        .to_string()
        .contains("REPLAN_REASON"));
    let ok = with_buckets.replace(
        "REPLAN_REASON: None",
        "REPLAN_REASON: the plan misses the queue",
    );
    let c = parse(Role::PlanGapReviewer, &ok).unwrap();
    assert_eq!(
        c.outcome,
        Outcome::NotPassed {
            status: "FINDINGS".into()
        }
    );
}

// --- merging ---------------------------------------------------------------------------------

fn finding(
    severity: Severity,
    at: Option<(&str, u32)>,
    confidence: Option<u8>,
    text: &str,
) -> Finding {
    Finding {
        severity,
        location: at.map(|(f, l)| Location {
            file: f.into(),
            line: l,
        }),
        confidence,
        text: text.into(),
    }
}

#[test]
fn findings_are_read_from_their_sections() {
    let out = "### Critical Issues\n- [90] `src/a.rs:12:5` — panics on empty input\n  (reached from main)\n### Minor Issues\n1. naming in ./lib/b.ts:3-5\n### High Issues\nNone\n";
    let f = findings_in(out);
    assert_eq!(
        f,
        vec![
            finding(
                Severity::Critical,
                Some(("src/a.rs", 12)),
                Some(90),
                "`src/a.rs:12:5` — panics on empty input (reached from main)"
            ),
            finding(
                Severity::Low,
                Some(("lib/b.ts", 3)),
                None,
                "naming in ./lib/b.ts:3-5"
            ),
        ]
    );
}

#[test]
fn reviewer_and_hunter_at_one_file_line_are_cross_confirmed() {
    let reviewer = [
        finding(
            Severity::High,
            Some(("src/a.rs", 12)),
            Some(80),
            "unchecked index",
        ),
        finding(Severity::Medium, None, None, "naming"),
    ];
    let hunter = [
        finding(
            Severity::Critical,
            Some(("src/a.rs", 12)),
            Some(70),
            "panic swallowed",
        ),
        finding(
            Severity::High,
            Some(("src/a.rs", 13)),
            None,
            "error ignored",
        ),
    ];
    let merged = merge_findings(&reviewer, &hunter);
    assert_eq!(merged.len(), 3);
    assert!(merged[0].cross_confirmed);
    assert_eq!(
        merged[0].raised_by,
        [Role::CodeReviewer, Role::FailureHunter]
    );
    assert_eq!(merged[0].finding.severity, Severity::Critical);
    assert_eq!(merged[0].finding.confidence, Some(90));
    assert_eq!(merged[0].also, ["panic swallowed"]);
    assert!(!merged[1].cross_confirmed && !merged[2].cross_confirmed);
    assert_eq!(merged[2].raised_by, [Role::FailureHunter]);
}

#[test]
fn unconfirmed_findings_are_dropped_and_degraded_serious_ones_kept() {
    let out = "### Reviewer Finding Validation\n- src/a.rs:12 — validated: false\n- src/b.rs:3 validated: degraded\n- src/c.rs:9 validated: degraded\n- src/d.rs:1 **validated:** true\n";
    let v = validations_in(out);
    assert_eq!(
        v.iter().map(|v| v.validation).collect::<Vec<_>>(),
        [
            Validation::NotConfirmed,
            Validation::Degraded,
            Validation::Degraded,
            Validation::Confirmed
        ]
    );
    let merged = merge_findings(
        &[
            finding(
                Severity::Critical,
                Some(("src/a.rs", 12)),
                None,
                "hallucinated",
            ),
            finding(
                Severity::Critical,
                Some(("src/b.rs", 3)),
                None,
                "serious, unchecked",
            ),
            finding(
                Severity::Low,
                Some(("src/c.rs", 9)),
                None,
                "minor, unchecked",
            ),
            finding(Severity::Low, Some(("src/d.rs", 1)), None, "confirmed"),
            finding(
                Severity::Medium,
                Some(("src/e.rs", 1)),
                None,
                "not mentioned",
            ),
        ],
        &[],
    );
    let (kept, dropped) = apply_validation(merged, &v);
    let texts: Vec<&str> = kept.iter().map(|m| m.finding.text.as_str()).collect();
    assert_eq!(texts, ["serious, unchecked", "confirmed", "not mentioned"]);
    assert_eq!(dropped.len(), 2);
    assert!(dropped[0]
        .reason
        .starts_with("finding_dropped: hallucinated"));
    assert!(dropped[0].reason.contains("src/a.rs:12"));
    assert!(dropped[1].reason.contains("is low"));
}

#[test]
fn the_stricter_verdict_wins_and_a_contradiction_is_logged() {
    let s = stricter(
        (Role::CodeReviewer, Verdict::Pass),
        (Role::IntegrationVerifier, Verdict::Fail),
    );
    assert_eq!(s.verdict, Verdict::Fail);
    assert_eq!(
        s.contradiction.as_deref(),
        Some("code-reviewer says pass but integration-verifier says fail; the stricter, fail, counts")
    );
    let s = stricter(
        (Role::DocSyncer, Verdict::SoftPass),
        (Role::Researcher, Verdict::Pass),
    );
    assert_eq!((s.verdict, s.contradiction), (Verdict::SoftPass, None));
    let c = parse(Role::IntegrationVerifier, &one_scenario_verifier("FAIL")).unwrap();
    assert_eq!(c.outcome.verdict(), Verdict::Fail);
}
