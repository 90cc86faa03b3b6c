use super::*;

/// A plan with `phases` phases, as baton's planner writes one.
pub(crate) fn plan_text(phases: usize, open: &str) -> String {
    let mut yaml = String::new();
    for i in 1..=phases {
        yaml.push_str(&format!(
            "- phase_id: phase-{i}\n  title: Part {i}\n  objective: build part {i}\n  files: [src/part{i}.rs]\n  checks: [cargo test part{i}]\n  exit_criteria: [part {i} tests pass]\n  test_seams: [part{i}::run]\n"
        ));
    }
    format!(
        "# Export command\n\nplan_mode: execution_plan\nverification_rigor: standard\n\n## Acceptance Criteria\n- export writes a CSV\n\n## Phases\n```yaml\n{yaml}```\n\n## Decisions\n- CSV, because spreadsheets\n\n## Open Decisions\n{open}\n\n## Differences from agreement\nNone\n"
    )
}

fn parse(text: &str) -> Result<PlanFile, PlanError> {
    PlanFile::parse(
        Path::new("docs/plans/x.md"),
        text,
        sha256_hex(text.as_bytes()),
    )
}

#[test]
fn a_complete_plan_reads_with_its_phases_intent_and_hash() {
    let p = parse(&plan_text(3, "None")).unwrap();
    assert_eq!(p.title.as_deref(), Some("Export command"));
    assert_eq!(p.plan_mode, PlanMode::ExecutionPlan);
    assert_eq!(p.verification_rigor, VerificationRigor::Standard);
    let ids: Vec<&str> = p.phases.iter().map(|p| p.phase_id.as_str()).collect();
    assert_eq!(ids, ["phase-1", "phase-2", "phase-3"]);
    assert_eq!(p.phases[1].exit_criteria, ["part 2 tests pass"]);
    assert_eq!(p.decisions, ["CSV, because spreadsheets"]);
    assert_eq!(p.acceptance_criteria, ["export writes a CSV"]);
    assert_eq!(p.sha256.len(), 64);
    let n = p.normalized_phases();
    assert_eq!(
        n[2].test_seams.as_deref(),
        Some(&["part3::run".to_string()][..])
    );
    assert_eq!(p.intent()["goal"], "Export command");
}

#[test]
fn approved_open_decisions_pass_and_open_ones_are_named() {
    let ok = parse(&plan_text(
        1,
        "- [x] use CSV\n- approved: UTF-8 only\n- comma as separator (approved)",
    ))
    .unwrap();
    assert_eq!(
        ok.decisions,
        [
            "CSV, because spreadsheets",
            "use CSV",
            "UTF-8 only",
            "comma as separator"
        ]
    );
    let err = parse(&plan_text(1, "- which separator?\n- [x] use CSV")).unwrap_err();
    assert_eq!(err.problems.len(), 1, "{err}");
    assert!(
        err.problems[0].contains("open decision \"which separator?\" is not made"),
        "{err}"
    );
}

#[test]
fn every_problem_names_its_phase_and_field_with_the_fix() {
    let text = "# P\n\nplan_mode: sketch\n\n## Phases\n```yaml\n- phase_id: phase-1\n  objective: a\n  exit_criteria: []\n  test_seams: [x]\n- phase_id: phase-1\n  objective: ''\n  exit_criteria: [b]\n  test_seams: []\n```\n";
    let err = parse(text).unwrap_err();
    let all = err.to_string();
    for want in [
        "plan_mode \"sketch\" is not direct, execution_plan or decision_rfc",
        "verification_rigor is missing: add a line `verification_rigor: standard`",
        "phase 1 (phase-1): exit_criteria is empty",
        "phase 2 (phase-1): phase_id is used twice",
        "phase 2 (phase-1): objective is empty",
        "phase 2 (phase-1): test_seams is empty",
        "the `## Open Decisions` section is missing",
        "the `## Differences from agreement` section is missing",
    ] {
        assert!(all.contains(want), "missing {want:?} in:\n{all}");
    }
    assert!(
        all.starts_with("plan docs/plans/x.md cannot be built from (8 problems):"),
        "{all}"
    );
}

#[test]
fn an_unknown_phase_field_or_a_missing_block_is_refused() {
    let text = plan_text(1, "None").replace("title: Part 1", "titel: Part 1");
    let err = parse(&text).unwrap_err().to_string();
    assert!(err.contains("unknown field `titel`"), "{err}");
    let text = plan_text(1, "None")
        .replace("```yaml", "")
        .replace("```", "");
    let err = parse(&text).unwrap_err().to_string();
    assert!(
        err.contains("`## Phases` has no fenced ```yaml block"),
        "{err}"
    );
}

#[test]
fn approvals_record_the_hash_and_see_a_change() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let state = baton_state::StateDir::for_project(root);
    let plan = root.join("plan.md");
    std::fs::write(&plan, plan_text(1, "None")).unwrap();
    let a = Approvals::new(&state, root);
    assert_eq!(a.key(&plan), "plan.md");
    let p = PlanFile::read(&plan).unwrap();
    assert_eq!(a.check(&plan, &p.sha256).unwrap(), ApprovalState::New);
    a.approve(&plan, &p.sha256, "test").unwrap();
    assert!(matches!(
        a.check(&plan, &p.sha256).unwrap(),
        ApprovalState::Approved(_)
    ));
    std::fs::write(&plan, plan_text(2, "None")).unwrap();
    let edited = PlanFile::read(&plan).unwrap();
    assert!(
        matches!(a.check(&plan, &edited.sha256).unwrap(), ApprovalState::Changed(x) if x.sha256 == p.sha256)
    );
    std::fs::write(state.root().join("plans.json"), "{oops").unwrap();
    let e = a.check(&plan, &edited.sha256).unwrap_err();
    assert!(
        e.contains("is damaged") && e.contains("approve the plans again"),
        "{e}"
    );
}

#[test]
fn a_plan_beyond_a_direct_change_needs_acceptance_criteria() {
    let whole = plan_text(1, "None");
    let without = whole.replace("## Acceptance Criteria\n- export writes a CSV\n\n", "");
    assert_ne!(whole, without);
    let err = parse(&without).unwrap_err().to_string();
    assert!(
        err.contains(
            "`## Acceptance Criteria` is missing: with plan_mode execution_plan the plan lists"
        ),
        "{err}"
    );
    let empty = whole.replace("- export writes a CSV\n", "None\n");
    let err = parse(&empty).unwrap_err().to_string();
    assert!(err.contains("`## Acceptance Criteria` is empty"), "{err}");
    // A direct change may go without.
    let direct = without.replace("plan_mode: execution_plan", "plan_mode: direct");
    assert!(parse(&direct).is_ok());
}
