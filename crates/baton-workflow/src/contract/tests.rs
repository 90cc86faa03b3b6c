#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{json, Map, Value};

use super::merge::{
    apply_validation, findings_in, merge_findings, stricter, validations_in, Finding, Location,
    Severity, Validation,
};
use super::*;

fn yaml(fields: &Value) -> String {
    serde_norway::to_string(fields).unwrap()
}

/// An output that ends with a router contract holding `fields`.
fn router(fields: &Value) -> String {
    format!(
        "Implemented the change; details in the report.\n\n### Router Contract (MACHINE-READABLE)\n```yaml\n{}```\n",
        yaml(fields)
    )
}

fn map(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("not a mapping"),
    }
}

fn scenario(name: &str) -> Value {
    json!({"name": name, "given": "g", "when": "w", "then": "t", "command": "cargo test x",
           "expected": "ok", "actual": "ok", "exit_code": 0, "status": "PASS"})
}

fn builder() -> Value {
    json!({
        "STATUS": "PASS", "CONFIDENCE": 85, "PHASE_ID": "phase-1", "PHASE_STATUS": "completed",
        "PHASE_EXIT_READY": true, "CHECKPOINT_TYPE": "none", "PROOF_STATUS": "passed",
        "BUILD_PREFLIGHT_EMITTED": true, "INPUTS": [], "EXPECTED_ARTIFACTS": ["src/a.rs"],
        "TDD_RED_EXIT": 1, "TDD_RED_REASON_KIND": "behavioral",
        "TDD_RED_REASON": "expected 3, got 2", "TDD_GREEN_EXIT": 0, "TEST_SEAMS": ["Parser::parse"],
        "SEAM_GATE_STATUS": "proposed", "SCENARIOS": [scenario("parses empty input")],
        "ASSUMPTIONS": [], "DECISIONS": [], "BLOCKED_ITEMS": [], "SKIPPED_ITEMS": [],
        "SCOPE_INCREASES": [], "BLOCKING": false, "NEXT_ACTION": "review",
        "REMEDIATION_NEEDED": false, "REQUIRES_REMEDIATION": false, "REMEDIATION_REASON": null,
        "MEMORY_NOTES": {"learnings": []}
    })
}

fn investigator() -> Value {
    json!({
        "STATUS": "FIXED", "VERIFICATION_RIGOR": "standard", "CONFIDENCE": 90,
        "ROOT_CAUSE": "off-by-one in the pager", "TDD_RED_EXIT": 1, "TDD_GREEN_EXIT": 0,
        "VARIANTS_COVERED": 1, "VARIANTS_NOT_APPLICABLE": null,
        "FEEDBACK_LOOP": {"rung": "failing_test", "command": "cargo test pager", "deterministic": true},
        "NO_LOOP_BLOCKED": {"tried": [], "ask": null}, "BOUNDARY_MATRIX": {"applicable": false},
        "REGRESSION_SEAM": {"status": "seam_exists"}, "DEFENSE_IN_DEPTH": {"applicable": false},
        "DEBUG_CLOSEOUT": {"instrumentation_removed": true, "repro_no_longer_fires": true},
        "BLAST_RADIUS_SCAN": {"same_file": "one sibling loop, fixed", "result": "fixed_all"},
        "SCENARIOS": [scenario("Regression: last page is shown"), scenario("Variant: single page")],
        "ASSUMPTIONS": [], "DECISIONS": [], "BLOCKING": false, "NEXT_ACTION": "review",
        "REMEDIATION_NEEDED": false, "REQUIRES_REMEDIATION": false, "REMEDIATION_REASON": null,
        "NEEDS_EXTERNAL_RESEARCH": false, "RESEARCH_REASON": null, "MEMORY_NOTES": {}
    })
}

fn planner() -> Value {
    json!({
        "STATUS": "PLAN_CREATED", "PLAN_MODE": "execution_plan", "VERIFICATION_RIGOR": "standard",
        "CONFIDENCE": 70, "PLAN_FILE": "docs/plans/p.md", "PHASES": ["phase-1"],
        "RISKS_IDENTIFIED": [], "SCENARIOS": [scenario("sign in")], "ASSUMPTIONS": [],
        "DECISIONS": [], "OPEN_DECISIONS": [], "DIFFERENCES_FROM_AGREEMENT": [],
        "RECOMMENDED_DEFAULTS": [], "ALTERNATIVES": [], "DRAWBACKS": [], "PROVABLE_PROPERTIES": [],
        "BLOCKING": false, "NEXT_ACTION": "review", "REMEDIATION_NEEDED": false,
        "REQUIRES_REMEDIATION": false, "REMEDIATION_REASON": null, "GATE_PASSED": true,
        "USER_INPUT_NEEDED": [], "MEMORY_NOTES": {}
    })
}

fn doc_syncer() -> Value {
    json!({
        "STATUS": "COMPLETE", "IMPACT_LEVEL": "low", "DOC_LAYERS_EVALUATED": ["technical"],
        "DOC_FILES_UPDATED": ["docs/x.md"], "DOC_FILES_SKIPPED": [], "SKIP_REASON": "",
        "AUDIT_DOCS_CREATED": [], "AUDIT_DOCS_UPDATED": [], "MEMORY_NOTES": {}
    })
}

fn researcher() -> Value {
    json!({
        "STATUS": "COMPLETE", "FILE_PATH": ".cc10x/research/r.md", "BACKEND_MODE": "web",
        "SOURCES_ATTEMPTED": ["a"], "SOURCES_USED": ["a"], "QUALITY_LEVEL": "high",
        "KEY_FINDINGS_COUNT": 3, "WHAT_CHANGED_RECOMMENDATION": "use the v2 callback",
        "MEMORY_NOTES": {}
    })
}

fn with(mut v: Value, key: &str, value: Value) -> Value {
    v[key] = value;
    v
}

fn without(mut v: Value, key: &str) -> Value {
    v.as_object_mut().unwrap().remove(key);
    v
}

fn unmet(c: &Checked) -> Vec<String> {
    match &c.outcome {
        Outcome::PassRefused { unmet } => unmet.clone(),
        other => panic!("expected a refused pass, got {other:?}"),
    }
}

// --- write roles -----------------------------------------------------------------------------

#[test]
fn each_write_role_accepts_a_complete_contract() {
    for (role, fields) in [
        (Role::ComponentBuilder, builder()),
        (Role::BugInvestigator, investigator()),
        (Role::Planner, planner()),
        (Role::DocSyncer, doc_syncer()),
        (Role::Researcher, researcher()),
    ] {
        let c = parse(role, &router(&fields)).unwrap_or_else(|e| panic!("{role}: {e}"));
        assert_eq!(c.source, Source::RouterContract);
        assert_eq!(c.outcome, Outcome::Pass, "{role}");
        assert!(c.advances());
    }
}

#[test]
fn the_typed_builder_contract_holds_the_fields() {
    let c = parse(Role::ComponentBuilder, &router(&builder())).unwrap();
    let Contract::Builder(b) = c.contract else {
        panic!("not a builder contract")
    };
    assert_eq!(b.status, BuilderStatus::Pass);
    assert_eq!(b.phase_status, Some(PhaseStatus::Completed));
    assert_eq!(b.seam_gate_status, Some(SeamGateStatus::Proposed));
    assert_eq!(b.scenarios[0].exit_code, Some(0));
}

#[test]
fn missing_required_fields_are_named_in_registry_order() {
    let fields = without(without(builder(), "TDD_GREEN_EXIT"), "CONFIDENCE");
    let err = parse(Role::ComponentBuilder, &router(&fields)).unwrap_err();
    assert_eq!(
        err,
        ContractError::MissingFields {
            role: Role::ComponentBuilder,
            fields: vec!["CONFIDENCE".into(), "TDD_GREEN_EXIT".into()],
        }
    );
    let msg = err.to_string();
    assert!(
        msg.contains("lacks required fields CONFIDENCE, TDD_GREEN_EXIT"),
        "{msg}"
    );
    assert!(msg.contains("Fix: add CONFIDENCE, TDD_GREEN_EXIT"), "{msg}");
}

#[test]
fn a_researcher_needs_one_of_its_two_count_fields() {
    let err = parse(
        Role::Researcher,
        &router(&without(researcher(), "KEY_FINDINGS_COUNT")),
    )
    .unwrap_err();
    assert!(err
        .to_string()
        .contains("KEY_FINDINGS_COUNT or IMPLEMENTATIONS_FOUND"));
    let github = with(
        without(researcher(), "KEY_FINDINGS_COUNT"),
        "IMPLEMENTATIONS_FOUND",
        json!(2),
    );
    assert!(parse(Role::Researcher, &router(&github)).is_ok());
}

#[test]
fn a_value_outside_its_allowed_set_names_the_field() {
    let err = parse(
        Role::ComponentBuilder,
        &router(&with(builder(), "STATUS", json!("DONE"))),
    )
    .unwrap_err();
    let ContractError::InvalidField { field, reason, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(field, "STATUS");
    assert!(
        reason.contains("PASS") && reason.contains("FAIL"),
        "{reason}"
    );
    let err = parse(
        Role::ComponentBuilder,
        &router(&with(
            builder(),
            "SCENARIOS",
            json!([{"name": "x", "exit_code": "zero"}]),
        )),
    )
    .unwrap_err();
    assert!(
        matches!(&err, ContractError::InvalidField { field, .. } if field == "SCENARIOS[0].exit_code"),
        "{err:?}"
    );
}

#[test]
fn null_lists_mean_empty() {
    let c = parse(
        Role::ComponentBuilder,
        &router(&with(builder(), "ASSUMPTIONS", Value::Null)),
    )
    .unwrap();
    assert!(c.advances());
}

#[test]
fn a_builder_pass_without_its_proof_is_refused() {
    let fields = with(
        with(
            with(builder(), "TDD_RED_REASON_KIND", json!("error")),
            "BLOCKED_ITEMS",
            json!(["x"]),
        ),
        "SCENARIOS",
        json!([with(scenario("s"), "actual", json!(""))]),
    );
    let c = parse(Role::ComponentBuilder, &router(&fields)).unwrap();
    let u = unmet(&c);
    assert_eq!(u.len(), 3, "{u:?}");
    assert!(u[0].starts_with("TDD_RED_REASON_KIND must be behavioral"));
    assert!(!c.advances());
    let fail = parse(
        Role::ComponentBuilder,
        &router(&with(builder(), "STATUS", json!("FAIL"))),
    )
    .unwrap();
    assert_eq!(
        fail.outcome,
        Outcome::NotPassed {
            status: "FAIL".into()
        }
    );
}

#[test]
fn the_seam_gate_needs_seams_unless_not_applicable() {
    let no_seams = with(builder(), "TEST_SEAMS", json!([]));
    let c = parse(Role::ComponentBuilder, &router(&no_seams)).unwrap();
    assert_eq!(
        unmet(&c),
        ["SEAM_GATE_STATUS proposed needs a non-empty TEST_SEAMS"]
    );
    let trivial = with(no_seams, "SEAM_GATE_STATUS", json!("not_applicable"));
    assert!(parse(Role::ComponentBuilder, &router(&trivial))
        .unwrap()
        .advances());
}

#[test]
fn an_investigator_fix_needs_regression_variant_loop_and_closeout() {
    let c = parse(
        Role::BugInvestigator,
        &router(&with(
            investigator(),
            "SCENARIOS",
            json!([scenario("Variant: x")]),
        )),
    )
    .unwrap();
    assert!(unmet(&c)[0].contains("Regression:"));
    // No applicable variants: accepted without a Variant: scenario.
    let no_variants = with(
        with(
            with(investigator(), "VARIANTS_COVERED", json!(0)),
            "VARIANTS_NOT_APPLICABLE",
            json!("single code path"),
        ),
        "SCENARIOS",
        json!([scenario("Regression: last page")]),
    );
    assert!(parse(Role::BugInvestigator, &router(&no_variants))
        .unwrap()
        .advances());
    let open = with(
        investigator(),
        "DEBUG_CLOSEOUT",
        json!({"instrumentation_removed": false, "repro_no_longer_fires": true}),
    );
    assert_eq!(
        unmet(&parse(Role::BugInvestigator, &router(&open)).unwrap()),
        ["DEBUG_CLOSEOUT.instrumentation_removed must be true"]
    );
}

#[test]
fn an_investigator_without_a_loop_must_be_blocked() {
    let no_loop = with(
        with(investigator(), "STATUS", json!("INVESTIGATING")),
        "FEEDBACK_LOOP",
        json!({"rung": "none", "command": null}),
    );
    let err = parse(Role::BugInvestigator, &router(&no_loop)).unwrap_err();
    assert!(matches!(err, ContractError::Inconsistent { .. }), "{err:?}");
    let blocked = with(
        with(no_loop, "STATUS", json!("BLOCKED")),
        "NO_LOOP_BLOCKED",
        json!({"tried": ["a repro script"], "ask": "a HAR capture"}),
    );
    let c = parse(Role::BugInvestigator, &router(&blocked)).unwrap();
    assert_eq!(
        c.outcome,
        Outcome::NotPassed {
            status: "BLOCKED".into()
        }
    );
}

#[test]
fn planner_gates() {
    let rfc = with(
        with(planner(), "STATUS", json!("DECISION_RFC_CREATED")),
        "PLAN_MODE",
        json!("decision_rfc"),
    );
    let c = parse(
        Role::Planner,
        &router(&with(rfc.clone(), "ALTERNATIVES", json!(["only one"]))),
    )
    .unwrap();
    assert_eq!(
        unmet(&c),
        [
            "a decision RFC needs at least 2 ALTERNATIVES",
            "a decision RFC needs DRAWBACKS"
        ]
    );
    let good = with(
        with(rfc, "ALTERNATIVES", json!(["a", "b"])),
        "DRAWBACKS",
        json!(["cost"]),
    );
    assert!(parse(Role::Planner, &router(&good)).unwrap().advances());
    let low = with(
        with(planner(), "CONFIDENCE", json!(40)),
        "OPEN_DECISIONS",
        json!(["which db?"]),
    );
    assert_eq!(
        unmet(&parse(Role::Planner, &router(&low)).unwrap()).len(),
        2
    );
    let clarify = with(planner(), "STATUS", json!("NEEDS_CLARIFICATION"));
    assert!(!parse(Role::Planner, &router(&clarify)).unwrap().advances());
}

#[test]
fn doc_syncer_statuses() {
    let skipped = with(
        with(doc_syncer(), "STATUS", json!("SKIPPED")),
        "DOC_LAYERS_EVALUATED",
        json!([]),
    );
    assert_eq!(
        unmet(&parse(Role::DocSyncer, &router(&skipped)).unwrap()),
        ["SKIPPED needs a SKIP_REASON"]
    );
    let skipped = with(skipped, "SKIP_REASON", json!("tests only"));
    assert!(parse(Role::DocSyncer, &router(&skipped))
        .unwrap()
        .advances());
    let partial = parse(
        Role::DocSyncer,
        &router(&with(doc_syncer(), "STATUS", json!("PARTIAL"))),
    )
    .unwrap();
    assert!(matches!(partial.outcome, Outcome::SoftPass { .. }) && partial.advances());
    let fail = parse(
        Role::DocSyncer,
        &router(&with(doc_syncer(), "STATUS", json!("FAIL"))),
    )
    .unwrap();
    assert!(!fail.advances());
}

#[test]
fn a_research_backend_that_degraded_does_not_advance() {
    let c = parse(
        Role::Researcher,
        &router(&with(researcher(), "STATUS", json!("DEGRADED"))),
    )
    .unwrap();
    assert_eq!(
        c.outcome,
        Outcome::NotPassed {
            status: "DEGRADED".into()
        }
    );
}

#[test]
fn malformed_or_missing_router_contracts() {
    let role = Role::ComponentBuilder;
    let no_fence = "done\n### Router Contract (MACHINE-READABLE)\nSTATUS: PASS\n";
    assert!(matches!(
        parse(role, no_fence),
        Err(ContractError::MissingRouterContract { .. })
    ));
    let unclosed = "### Router Contract\n```yaml\nSTATUS: PASS\n";
    assert!(
        matches!(parse(role, unclosed), Err(ContractError::MalformedYaml { reason, .. }) if reason.contains("line 2"))
    );
    let bad_yaml = "### Router Contract\n```yaml\nSTATUS: [PASS\n```\n";
    assert!(matches!(
        parse(role, bad_yaml),
        Err(ContractError::MalformedYaml { .. })
    ));
    let list = "### Router Contract\n```yaml\n- STATUS\n```\n";
    assert!(
        matches!(parse(role, list), Err(ContractError::MalformedYaml { reason, .. }) if reason.contains("list"))
    );
    let envelope_only = "CONTRACT {\"s\":\"PASS\"}\nall done";
    assert!(matches!(
        parse(role, envelope_only),
        Err(ContractError::MissingRouterContract { .. })
    ));
    assert!(matches!(
        parse(role, "  \n"),
        Err(ContractError::Empty { .. })
    ));
}

#[test]
fn the_last_router_contract_counts_and_the_envelope_must_agree() {
    let earlier = router(&with(builder(), "STATUS", json!("FAIL")));
    let output = format!("{earlier}\nRetried.\n{}", router(&builder()));
    assert!(parse(Role::ComponentBuilder, &output).unwrap().advances());
    let agreeing = format!("CONTRACT {{\"s\":\"PASS\"}}\n{}", router(&builder()));
    assert!(parse(Role::ComponentBuilder, &agreeing).unwrap().advances());
    let contradicting = format!("CONTRACT {{\"s\":\"FAIL\"}}\n{}", router(&builder()));
    assert!(matches!(
        parse(Role::ComponentBuilder, &contradicting),
        Err(ContractError::Inconsistent { .. })
    ));
}

#[test]
fn prose_alone_never_advances() {
    for role in Role::ALL {
        for prose in [
            "looks good",
            "All tests pass. Ship it!",
            "## Summary\nEverything works.",
        ] {
            let err = parse(role, prose).unwrap_err();
            assert!(
                matches!(err, ContractError::ProseOnly { .. }),
                "{role}: {err:?}"
            );
            assert!(err.to_string().contains("prose never advances a workflow"));
        }
    }
}

#[test]
fn validate_fields_takes_a_parsed_map() {
    let c = validate_fields(Role::DocSyncer, &map(doc_syncer())).unwrap();
    assert!(c.advances());
    assert!(validate_fields(Role::CodeReviewer, &map(doc_syncer())).is_err());
}

#[test]
fn role_names_and_aliases() {
    for role in Role::ALL {
        assert_eq!(Role::from_name(role.name()), Some(role));
    }
    assert_eq!(
        Role::from_name("silent-failure-hunter"),
        Some(Role::FailureHunter)
    );
    assert_eq!(Role::from_name("github_researcher"), Some(Role::Researcher));
    assert_eq!(Role::from_name("architect"), None);
}

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
