//! Tests of the write roles' router contracts and of what every role shares.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{json, Map, Value};

use super::*;

pub(super) fn yaml(fields: &Value) -> String {
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

pub(super) fn scenario(name: &str) -> Value {
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

pub(super) fn with(mut v: Value, key: &str, value: Value) -> Value {
    v[key] = value;
    v
}

pub(super) fn without(mut v: Value, key: &str) -> Value {
    v.as_object_mut().unwrap().remove(key);
    v
}

pub(super) fn unmet(c: &Checked) -> Vec<String> {
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
fn each_role_s_required_fields_are_its_typed_contract_s_fields() {
    let count = |r| write::required_fields(r).len();
    assert_eq!(count(Role::ComponentBuilder), 28);
    assert_eq!(count(Role::BugInvestigator), 26);
    assert_eq!(count(Role::Planner), 24);
    assert_eq!(count(Role::Researcher), 8);
    assert_eq!(count(Role::DocSyncer), 9);
    let builder = write::required_fields(Role::ComponentBuilder);
    assert_eq!(builder[..3], ["STATUS", "CONFIDENCE", "PHASE_ID"]);
    assert_eq!(builder.last(), Some(&"MEMORY_NOTES"));
    assert!(!write::required_fields(Role::Researcher).contains(&"KEY_FINDINGS_COUNT"));
    assert!(write::required_fields(Role::CodeReviewer).is_empty());
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
