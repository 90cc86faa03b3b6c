//! `baton run` end to end for the workflow types other than BUILD and REVIEW: DEBUG (a proven
//! fix, a continued investigation, a research round without a research backend), PLAN (a plan
//! reviewed clean, a re-plan after findings, a clarification answered by resume), TRIAGE and
//! CODEBASE-HEALTH (read-only reports), an aborted checkpoint, and `baton status` / `baton log`
//! after a run. The harness is `common::workflow`: project roles on the `command` backend.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use baton_testkit::fixture::assert_exit;
use common::workflow::*;

/// A plan written to `docs/plan.md`, with every field a created plan needs.
const PLANNER_CREATED: &str = r#"mkdir -p docs && echo "plan $n" >> docs/plan.md
cat <<'EOF'
Wrote the plan.

### Router Contract (MACHINE-READABLE)
```yaml
STATUS: PLAN_CREATED
PLAN_MODE: execution_plan
VERIFICATION_RIGOR: standard
CONFIDENCE: 80
PLAN_FILE: docs/plan.md
PHASES: [phase-1 schema, phase-2 copy]
RISKS_IDENTIFIED: [the copy is slow on large tables]
SCENARIOS:
  - name: the migrated table has every row
    given: a table with rows
    when: the migration runs
    then: the new table has the same rows
ASSUMPTIONS: []
DECISIONS: []
OPEN_DECISIONS: []
DIFFERENCES_FROM_AGREEMENT: []
RECOMMENDED_DEFAULTS: null
ALTERNATIVES: []
DRAWBACKS: []
PROVABLE_PROPERTIES: []
BLOCKING: false
NEXT_ACTION: plan review
REMEDIATION_NEEDED: false
REQUIRES_REMEDIATION: false
REMEDIATION_REASON: null
GATE_PASSED: true
USER_INPUT_NEEDED: []
MEMORY_NOTES: null
```
EOF
"#;

const PLANNER_CLARIFY: &str = r#"cat <<'EOF'
Which database?

### Router Contract (MACHINE-READABLE)
```yaml
STATUS: NEEDS_CLARIFICATION
PLAN_MODE: execution_plan
VERIFICATION_RIGOR: standard
CONFIDENCE: 40
PLAN_FILE: null
PHASES: []
RISKS_IDENTIFIED: []
SCENARIOS: []
ASSUMPTIONS: []
DECISIONS: []
OPEN_DECISIONS: [which database the storage moves to]
DIFFERENCES_FROM_AGREEMENT: []
RECOMMENDED_DEFAULTS: null
ALTERNATIVES: []
DRAWBACKS: []
PROVABLE_PROPERTIES: []
BLOCKING: true
NEXT_ACTION: ask the user
REMEDIATION_NEEDED: false
REQUIRES_REMEDIATION: false
REMEDIATION_REASON: which database should the storage move to?
GATE_PASSED: false
USER_INPUT_NEEDED: [which database the storage moves to]
MEMORY_NOTES: null
```
EOF
"#;

const PLAN_REVIEW_PASS: &str = r#"cat <<'EOF'
CONTRACT {"s":"PASS","b":false,"bf":0}
## Planning Review: Pass

### Router Contract
```yaml
PLANNING_REVIEW_STATUS: PASS
BLOCKING_FINDINGS_COUNT: 0
REPLAN_NEEDED: false
REPLAN_REASON: null
FINDING_BUCKETS:
  coverage: 0
```
EOF
"#;

const PLAN_REVIEW_FINDINGS: &str = r#"cat <<'EOF'
CONTRACT {"s":"FINDINGS","b":true,"bf":1}
## Planning Review: Findings

### Router Contract
```yaml
PLANNING_REVIEW_STATUS: FINDINGS
BLOCKING_FINDINGS_COUNT: 1
REPLAN_NEEDED: true
REPLAN_REASON: the plan has no rollback step
FINDING_BUCKETS:
  missing_surfaces: 1
```
EOF
"#;

/// The investigator's contract with another status and no file changed.
fn investigator_without_fix(status: &str) -> String {
    INVESTIGATOR_FIXED
        .replace("STATUS: FIXED", &format!("STATUS: {status}"))
        .replace("echo \"fix $n\" >> parser.txt\n", "")
}

/// A DEBUG project whose researcher is the built-in one (no research backend: a round is
/// recorded unavailable), its changed roles trusted again.
fn without_research_backend() -> Wf {
    let wf = Wf::new();
    debug_happy(&wf);
    std::fs::remove_file(wf.sb.work().join(".baton/roles/researcher.md")).unwrap();
    wf.sb.trust();
    wf
}

/// An investigator blocked on outside behaviour it asks research for.
fn needs_research() -> String {
    investigator_without_fix("BLOCKED").replace(
        "NEEDS_EXTERNAL_RESEARCH: false\nRESEARCH_REASON: null",
        "NEEDS_EXTERNAL_RESEARCH: true\nRESEARCH_REASON: how the upstream grammar treats empty input",
    )
}

fn no_write_agent_ran(wf: &Wf) {
    for role in [
        "component-builder",
        "bug-investigator",
        "planner",
        "doc-syncer",
    ] {
        assert_eq!(wf.calls(role), 0, "{role} ran");
    }
}

#[test]
fn debug_fixes_reviews_verifies_and_ends_proven() {
    let wf = Wf::new();
    debug_happy(&wf);
    let o = wf.run(&["run", "fix the crash in the parser"]);
    assert_exit(&o, 0);
    assert!(err(&o).starts_with("-> DEBUG workflow"), "{}", err(&o));
    out_has(&o, "proof: passed");
    assert_eq!(
        wf.dispatched(),
        ["debug-investigate", "debug-review", "debug-verify"]
    );
    // Memory keeps DEBUG's reset marker (written when it started), one `[DEBUG-N]:` line per
    // investigation (what the next investigator counts), and the result beneath them.
    let active =
        std::fs::read_to_string(wf.sb.work().join(".baton/memory/activeContext.md")).unwrap();
    let id = wf.id();
    assert!(
        active.contains(&format!(
            "- [DEBUG-RESET: wf:{id}]\n- [DEBUG-1]: investigation of wf:{id} → pass\n- DEBUG {id}: fix the crash in the parser (verified)"
        )),
        "{active}"
    );
    let snap = wf.snapshot();
    assert_eq!(snap["run_state"], "completed");
    assert_eq!(snap["proof_status"], "passed");
    assert!(snap["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["status"] == "completed"));
    let progress = std::fs::read_to_string(wf.sb.work().join(".baton/memory/progress.md")).unwrap();
    assert!(
        progress.contains("fix the crash in the parser"),
        "{progress}"
    );
    assert_eq!(wf.calls("component-builder"), 0);
}

#[test]
fn an_investigation_in_progress_continues_with_a_new_investigation() {
    let wf = Wf::new();
    debug_happy(&wf);
    wf.answer_nth(
        "bug-investigator",
        1,
        &investigator_without_fix("INVESTIGATING"),
    );
    let o = wf.run(&["run", "fix the crash in the parser"]);
    assert_exit(&o, 0);
    assert_eq!(wf.calls("bug-investigator"), 2);
    assert_eq!(
        wf.dispatched(),
        [
            "debug-investigate",
            "debug-investigate",
            "debug-review",
            "debug-verify"
        ]
    );
    let snap = wf.snapshot();
    assert_eq!(snap["run_state"], "completed");
    let investigations = snap["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["phase"] == "debug-investigate")
        .count();
    assert_eq!(investigations, 2);
}

#[test]
fn research_without_a_backend_is_unavailable_and_the_investigator_runs_again() {
    let wf = without_research_backend();
    wf.answer("researcher", "echo researched > researcher.ran\n");
    wf.answer_nth("bug-investigator", 1, &needs_research());
    let o = wf.run(&["run", "fix the crash in the parser"]);
    assert_exit(&o, 0);
    assert_eq!(wf.calls("researcher"), 0);
    assert!(!wf.sb.work().join("researcher.ran").exists());
    assert_eq!(wf.calls("bug-investigator"), 2);
    // The research round was recorded without a dispatch.
    let events = wf.events();
    let unavailable = events
        .iter()
        .filter(|e| e["event"] == "agent_completed" && e["decision"] == "unavailable")
        .count();
    assert_eq!(unavailable, 2, "{events:?}");
    assert_eq!(
        wf.dispatched(),
        [
            "debug-investigate",
            "debug-investigate",
            "debug-review",
            "debug-verify"
        ]
    );
    // The investigator runs again knowing the round found nothing.
    let again = wf.prompt("bug-investigator", 2);
    assert!(
        again.contains("## Research Files\nWeb: Unavailable\nGitHub: Unavailable\n"),
        "{again}"
    );
    let snap = wf.snapshot();
    assert_eq!(snap["run_state"], "completed");
    let rounds = snap["research_rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 1, "{snap}");
    assert_eq!(rounds[0]["web"], "UNAVAILABLE");
    assert_eq!(rounds[0]["github"], "UNAVAILABLE");
}

/// A blocked investigator asks "research, manual fix or abort" (remediation-and-research.md:50):
/// the answer `research` starts a research round, and the investigator runs again with its files.
#[test]
fn a_blocked_investigator_answered_research_gets_a_research_round() {
    let wf = Wf::new();
    debug_happy(&wf);
    wf.answer("researcher", RESEARCH_DONE);
    wf.answer_nth("bug-investigator", 1, &investigator_without_fix("BLOCKED"));
    let o = wf.run(&["run", "fix the crash in the parser"]);
    assert_exit(&o, 4);
    out_has(&o, "research, manual fix or abort");
    assert_eq!(wf.calls("researcher"), 0);
    let o = wf.run(&["resume", "--answer", "research"]);
    assert_exit(&o, 0);
    assert_eq!(wf.calls("researcher"), 2);
    let mut dispatched = wf.dispatched();
    dispatched[1..3].sort();
    assert_eq!(
        dispatched,
        [
            "debug-investigate",
            "research-github",
            "research-web",
            "debug-investigate",
            "debug-review",
            "debug-verify"
        ]
    );
    let again = wf.prompt("bug-investigator", 2);
    assert!(
        again.contains("## Research Files\nWeb: docs/research/webhooks.md"),
        "{again}"
    );
}

#[test]
fn research_rounds_are_capped_and_then_the_user_is_asked() {
    let wf = without_research_backend();
    wf.answer("bug-investigator", &needs_research());
    let o = wf.run(&["run", "fix the crash in the parser"]);
    assert_exit(&o, 4);
    out_has(&o, "research rounds used up");
    // Two rounds, each followed by the investigator again; no researcher ran.
    assert_eq!(wf.calls("bug-investigator"), 3);
    assert_eq!(wf.calls("researcher"), 0);
    let snap = wf.snapshot();
    assert_eq!(snap["research_rounds"].as_array().unwrap().len(), 2);
    assert_eq!(snap["pending_gate"], "clarification");
    assert_eq!(wf.calls("code-reviewer"), 0);
}

#[test]
fn a_plan_reviewed_clean_completes_and_names_the_build_command() {
    let wf = Wf::new();
    wf.answer("planner", PLANNER_CREATED)
        .answer("plan-gap-reviewer", PLAN_REVIEW_PASS);
    let o = wf.run(&["run", "plan the storage migration"]);
    assert_exit(&o, 0);
    assert!(err(&o).starts_with("-> PLAN workflow"), "{}", err(&o));
    let text = out(&o);
    assert!(text.contains("docs/plan.md"), "{text}");
    // The planner's file is no plan baton can build phase by phase: it says why and how.
    assert!(
        text.contains("It cannot be built phase by phase yet: plan_mode is missing")
            && text.contains("the `## Phases` section is missing")
            && text.contains(
                "Fix it (baton plan check docs/plan.md), then: baton run --plan docs/plan.md"
            ),
        "{text}"
    );
    assert_eq!(
        wf.dispatched(),
        ["brainstorm", "plan-create", "plan-review-gap-1"]
    );
    assert!(wf.sb.work().join("docs/plan.md").exists());
    let snap = wf.snapshot();
    assert_eq!(snap["run_state"], "completed");
    assert_eq!(snap["plan_file"], "docs/plan.md");
    assert_eq!(wf.calls("component-builder"), 0);
    // The tasks after the plan name it (remediation-and-research.md:95-96); the one before
    // it, the brainstorming, keeps N/A.
    let plans: Vec<(String, String)> = snap["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["phase"].as_str().unwrap_or_default().to_string(),
                t["plan"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    for (phase, plan) in &plans {
        let want = if phase == "brainstorm" || phase == "plan-create" {
            "N/A"
        } else {
            "docs/plan.md"
        };
        assert_eq!(plan, want, "{phase}: {plans:?}");
    }
}

/// A planner that writes docs/plan.md, a two-phase plan in baton's format.
fn storage_planner() -> String {
    PLANNER_CREATED.replace(
        "mkdir -p docs && echo \"plan $n\" >> docs/plan.md",
        "mkdir -p docs && cat > docs/plan.md <<'PLAN'\n# Storage migration\n\nplan_mode: execution_plan\nverification_rigor: standard\n\n## Acceptance Criteria\n- every part is built\n\n## Phases\n```yaml\n- phase_id: phase-1\n  title: schema\n  objective: add the new table\n  exit_criteria: [the table exists]\n  test_seams: [feature.txt]\n- phase_id: phase-2\n  title: copy\n  objective: copy the rows\n  exit_criteria: [every row is copied]\n  test_seams: [feature.txt]\n```\n\n## Open Decisions\nNone\n\n## Differences from agreement\nNone\nPLAN",
    )
}

/// After a PLAN, a BUILD asked in words builds the plan memory names (cc10x build preparation:
/// `- Plan:` from activeContext's References); once built and verified the reference is reset,
/// so the next BUILD is the request alone. A named plan that is missing is asked about.
#[test]
fn a_build_after_a_plan_builds_the_plan_memory_names() {
    let wf = Wf::new();
    wf.answer("planner", &storage_planner())
        .answer("plan-gap-reviewer", PLAN_REVIEW_PASS)
        .happy();
    assert_exit(&wf.run(&["run", "plan the storage migration"]), 0);
    // The PLAN copied its plan's intent header (remediation-and-research.md:94).
    let intent = &wf.snapshot()["intent"];
    assert_eq!(intent["goal"], "Storage migration", "{intent}");
    assert_eq!(
        intent["acceptance_criteria"],
        serde_json::json!(["every part is built"]),
        "{intent}"
    );
    std::fs::remove_dir_all(wf.sb.work().join(".baton/state/workflows")).unwrap();
    let o = wf.run(&["run", "implement the storage migration", "--no-worktree"]);
    assert_exit(&o, 4);
    err_has(
        &o,
        "building the plan docs/plan.md: activeContext.md ## References names it",
    );
    assert_eq!(wf.calls("component-builder"), 2, "one builder per phase");
    assert_eq!(wf.snapshot()["plan_file"], "docs/plan.md");
    assert_exit(&wf.run(&["resume", "--answer", "skip"]), 0);
    let active =
        std::fs::read_to_string(wf.sb.work().join(".baton/memory/activeContext.md")).unwrap();
    assert!(active.contains("- Plan: N/A"), "{active}");
    // The plan is built: the next BUILD is what it asks for.
    std::fs::remove_dir_all(wf.sb.work().join(".baton/state/workflows")).unwrap();
    let o = wf.run(&["run", "rename the greeting in README"]);
    assert_exit(&o, 0);
    assert!(!err(&o).contains("building the plan"), "{}", err(&o));
    assert_eq!(wf.calls("component-builder"), 3);

    // A reference to a plan that is not there: re-plan first, or build without it.
    let active = active.replace("- Plan: N/A", "- Plan: docs/gone.md");
    std::fs::write(wf.sb.work().join(".baton/memory/activeContext.md"), active).unwrap();
    std::fs::remove_dir_all(wf.sb.work().join(".baton/state/workflows")).unwrap();
    let o = wf.run(&["run", "implement the storage migration", "--no-worktree"]);
    assert_exit(&o, 4);
    assert!(
        out(&o)
            .contains("The plan docs/gone.md that activeContext.md ## References names is missing")
            && out(&o).contains("re-plan first | build without plan"),
        "{}",
        out(&o)
    );
    assert_eq!(
        wf.calls("component-builder"),
        3,
        "nothing built before the answer"
    );
    let o = wf.run(&["resume", "--answer", "build without plan"]);
    assert_exit(&o, 0);
    assert_eq!(wf.calls("component-builder"), 4);
    assert!(wf.snapshot()["plan_file"].is_null(), "{}", wf.snapshot());

    // [21/24] A plan `--plan` names that is not there is asked about the same way (it was an
    // error, exit 2): re-plan first, or build the request without it.
    std::fs::remove_dir_all(wf.sb.work().join(".baton/state/workflows")).unwrap();
    let o = wf.run(&[
        "run",
        "implement the storage migration",
        "--plan",
        "docs/typo.md",
        "--no-worktree",
    ]);
    assert_exit(&o, 4);
    assert!(
        out(&o).contains("The plan docs/typo.md that --plan names is missing")
            && out(&o).contains("re-plan first | build without plan"),
        "{}\n{}",
        out(&o),
        err(&o)
    );
    assert_eq!(
        wf.calls("component-builder"),
        4,
        "nothing built before the answer"
    );
    let o = wf.run(&["resume", "--answer", "build without plan"]);
    assert_exit(&o, 0);
    assert_eq!(wf.calls("component-builder"), 5);
}

/// A planner that writes a plan in baton's format: the PLAN approves it and names the exact
/// command, and that command builds it phase by phase.
#[test]
fn a_clean_plan_is_approved_and_its_command_builds_it_phase_by_phase() {
    let wf = Wf::new();
    let planner = storage_planner();
    wf.answer("planner", &planner)
        .answer("plan-gap-reviewer", PLAN_REVIEW_PASS)
        .happy();
    let o = wf.run(&["run", "plan the storage migration"]);
    assert_exit(&o, 0);
    let text = out(&o);
    assert!(
        text.contains("It is approved as it is now (2 phases). Build it phase by phase with: baton run --plan docs/plan.md"),
        "{text}"
    );
    let approvals: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(wf.sb.work().join(".baton/state/plans.json")).unwrap(),
    )
    .unwrap();
    assert!(approvals["docs/plan.md"]["by"]
        .as_str()
        .unwrap()
        .starts_with("PLAN workflow wf-"));
    // Memory points at the plan and says what comes next.
    let active =
        std::fs::read_to_string(wf.sb.work().join(".baton/memory/activeContext.md")).unwrap();
    assert!(active.contains("- Plan: docs/plan.md"), "{active}");
    assert!(
        active.contains("- Plan saved: docs/plan.md (wf-"),
        "{active}"
    );
    assert!(
        active.contains("## Next Steps\n1. Execute plan: baton run --plan docs/plan.md"),
        "{active}"
    );
    // The command it named: two phases, then the final review (skipped), docs and memory.
    std::fs::remove_dir_all(wf.sb.work().join(".baton/state/workflows")).unwrap();
    let o = wf.run(&["run", "--plan", "docs/plan.md", "--no-worktree"]);
    assert_exit(&o, 4);
    err_has(&o, "-> BUILD workflow");
    assert_eq!(wf.calls("component-builder"), 2);
    let o = wf.run(&["resume", "--answer", "skip"]);
    assert_exit(&o, 0);
    out_has(&o, "Build the plan: Storage migration");
}

/// A request whose words say it is a small single change takes the reduced graph unasked.
#[test]
fn a_plainly_trivial_request_takes_the_reduced_graph() {
    let wf = Wf::new();
    wf.happy();
    let o = wf.run(&["run", "rename the greeting in README"]);
    assert_exit(&o, 0);
    err_has(&o, "scope: trivial (rename, no file named)");
    assert_eq!(wf.dispatched(), ["build-implement", "build-verify"]);
    assert_eq!(wf.snapshot()["build_scope"], "trivial");
}

const BROAD: &str = "refactor the storage layer across src/db.rs, src/cache.rs and src/api.rs";

/// Broad work is asked "plan first or build directly" before anything is dispatched.
#[test]
fn broad_work_is_asked_plan_first_and_building_directly_runs_the_full_graph() {
    let wf = Wf::new();
    wf.happy();
    let o = wf.run(&["run", BROAD]);
    assert_exit(&o, 4);
    out_has(&o, "plan first | build directly");
    err_has(&o, "scope: broad (refactor, across, 3 files named)");
    assert!(wf.dispatched().is_empty());
    let o = wf.run(&["resume", "--answer", "build directly"]);
    assert_exit(&o, 0);
    baton_testkit::assert_full_build(wf.dispatched());
    let kinds: Vec<String> = wf
        .events()
        .iter()
        .map(|e| e["event"].as_str().unwrap().to_string())
        .filter(|k| k.starts_with("scope_decision"))
        .collect();
    assert_eq!(
        kinds,
        ["scope_decision_requested", "scope_decision_resolved"]
    );
}

#[test]
fn plan_first_turns_the_build_into_a_plan() {
    let wf = Wf::new();
    wf.answer("planner", PLANNER_CREATED)
        .answer("plan-gap-reviewer", PLAN_REVIEW_PASS);
    assert_exit(&wf.run(&["run", BROAD]), 4);
    let o = wf.run(&["resume", "--answer", "plan first"]);
    assert_exit(&o, 0);
    assert!(out(&o).starts_with("PLAN workflow"), "{}", out(&o));
    assert_eq!(
        wf.dispatched(),
        ["brainstorm", "plan-create", "plan-review-gap-1"]
    );
    let snap = wf.snapshot();
    assert_eq!(snap["workflow_type"], "PLAN");
    assert_eq!(wf.calls("component-builder"), 0);
}

#[test]
fn plan_findings_lead_to_a_replan_and_a_second_review() {
    let wf = Wf::new();
    wf.answer("planner", PLANNER_CREATED)
        .answer("plan-gap-reviewer", PLAN_REVIEW_PASS)
        .answer_nth("plan-gap-reviewer", 1, PLAN_REVIEW_FINDINGS);
    let o = wf.run(&["run", "plan the storage migration"]);
    assert_exit(&o, 0);
    assert_eq!(
        wf.dispatched(),
        [
            "brainstorm",
            "plan-create",
            "plan-review-gap-1",
            "re-plan",
            "plan-review-gap-2"
        ]
    );
    assert_eq!(wf.calls("planner"), 2);
    // The re-plan is handed what the gap review found.
    let replan = wf.prompt("planner", 2);
    assert!(
        replan.contains("## Planning Review Findings")
            && replan.contains("REPLAN_REASON: the plan has no rollback step"),
        "{replan}"
    );
    assert_eq!(wf.snapshot()["run_state"], "completed");
}

#[test]
fn a_planner_question_is_answered_by_resume() {
    let wf = Wf::new();
    wf.answer("planner", PLANNER_CREATED)
        .answer_nth("planner", 1, PLANNER_CLARIFY)
        .answer("plan-gap-reviewer", PLAN_REVIEW_PASS);
    let o = wf.run(&["run", "plan the storage migration"]);
    assert_exit(&o, 4);
    let snap = wf.snapshot();
    assert_eq!(snap["run_state"], "checkpoint");
    assert_eq!(snap["pending_gate"], "clarification");
    let id = wf.id();
    let o = wf.run(&["resume", &id, "--answer", "use postgres"]);
    assert_exit(&o, 0);
    assert_eq!(wf.calls("planner"), 2);
    // The answer is kept in memory's Decisions (remediation-and-research.md:87).
    let active =
        std::fs::read_to_string(wf.sb.work().join(".baton/memory/activeContext.md")).unwrap();
    assert!(
        active.contains(&format!("Plan clarification (wf:{id}): use postgres")),
        "{active}"
    );
    let prompt = wf.prompt("planner", 2);
    let pre = prompt
        .find("## Pre-Answered Requirements")
        .unwrap_or_else(|| panic!("{prompt}"));
    assert!(prompt[pre..].contains("use postgres"), "{prompt}");
    // The answer restarts PLAN with its review DAG: the new plan is reviewed.
    assert_eq!(
        wf.dispatched(),
        [
            "brainstorm",
            "plan-create",
            "plan-create",
            "plan-review-gap-1"
        ]
    );
    assert_eq!(wf.snapshot()["run_state"], "completed");
}

/// A brainstormer's script: `first` (shell run before it answers), then its router contract
/// with `status`, `file`, `questions` and `topics` (YAML values).
fn brainstorm(first: &str, status: &str, file: &str, questions: &str, topics: &str) -> String {
    format!(
        "{first}\ncat <<'EOF'\n### Router Contract (MACHINE-READABLE)\n```yaml\nSTATUS: {status}\nDESIGN_FILE: {file}\nDESIGN_SUMMARY: null\nQUESTIONS: {questions}\nRESEARCH_TOPICS: {topics}\nMEMORY_NOTES: null\n```\nEOF\n"
    )
}

/// [21/24] PLAN's brainstorming runs before the planner (plan-workflow.md:6-13): its question is
/// a checkpoint, the answer runs it again, and the design it saves reaches the planner and the
/// record.
#[test]
fn brainstorming_asks_then_its_design_reaches_the_planner() {
    let wf = Wf::new();
    let asks = brainstorm(
        "true",
        "NEEDS_CLARIFICATION",
        "null",
        r#"["Which database should the storage move to?"]"#,
        "[]",
    );
    let designs = brainstorm(
        r#"mkdir -p docs/plans && echo "Storage design: postgres" > docs/plans/storage-design.md"#,
        "DESIGN_SAVED",
        "docs/plans/storage-design.md",
        "[]",
        "[]",
    );
    wf.answer_nth("brainstormer", 1, &asks)
        .answer("brainstormer", &designs)
        .answer("planner", PLANNER_CREATED)
        .answer("plan-gap-reviewer", PLAN_REVIEW_PASS);
    let o = wf.run(&["run", "plan the storage migration"]);
    assert_exit(&o, 4);
    assert_eq!(
        wf.calls("planner"),
        0,
        "nothing is planned before the answer"
    );
    let snap = wf.snapshot();
    assert_eq!(snap["pending_gate"], "clarification");
    let question = snap.to_string();
    assert!(
        question.contains("Which database should the storage move to?"),
        "{question}"
    );
    let id = wf.id();
    let o = wf.run(&["resume", &id, "--answer", "postgres"]);
    assert_exit(&o, 0);
    assert_eq!(wf.calls("brainstormer"), 2);
    assert!(wf.prompt("brainstormer", 2).contains("postgres"));
    let planner = wf.prompt("planner", 1);
    assert!(
        planner.contains("## Design File\ndocs/plans/storage-design.md"),
        "{planner}"
    );
    assert_eq!(
        wf.dispatched(),
        [
            "brainstorm",
            "brainstorm",
            "plan-create",
            "plan-review-gap-1"
        ]
    );
    let review = wf.prompt("plan-gap-reviewer", 1);
    assert!(
        review.contains("## Approved Context Files\nDesign: docs/plans/storage-design.md"),
        "{review}"
    );
    let snap = wf.snapshot();
    assert_eq!(snap["design_file"], "docs/plans/storage-design.md");
    assert_eq!(snap["run_state"], "completed");
}

/// [21/24] PLAN offers research before planning when brainstorming names outside technology
/// (plan-workflow.md:14-16): `research` runs the researchers and the planner reads their files;
/// `plan now` goes straight to the planner.
#[test]
fn research_is_offered_before_planning_and_its_files_reach_the_planner() {
    let names = brainstorm(
        "true",
        "NO_DESIGN",
        "null",
        "[]",
        r#"["the payment provider's webhook retries"]"#,
    );
    let wf = Wf::new();
    wf.answer("brainstormer", &names)
        .answer("researcher", RESEARCH_DONE)
        .answer("planner", PLANNER_CREATED)
        .answer("plan-gap-reviewer", PLAN_REVIEW_PASS);
    let o = wf.run(&["run", "plan the payment webhooks"]);
    assert_exit(&o, 4);
    let snap = wf.snapshot();
    assert_eq!(snap["pending_gate"], "research_offer");
    assert_eq!(wf.calls("planner"), 0);
    let id = wf.id();
    let o = wf.run(&["resume", &id, "--answer", "research"]);
    assert_exit(&o, 0);
    assert_eq!(
        wf.calls("researcher"),
        2,
        "the web and the GitHub researcher"
    );
    let planner = wf.prompt("planner", 1);
    assert!(
        planner.contains("## Research Files\nWeb: docs/research/webhooks.md"),
        "{planner}"
    );
    // How good the research was (seed 001:348), and, for the plan's reviewer, the original
    // request and the files the plan was made from (seed 001:350-351).
    assert!(
        planner.contains("## Research Quality\nWeb: COMPLETE · GitHub: COMPLETE · overall: high"),
        "{planner}"
    );
    let review = wf.prompt("plan-gap-reviewer", 1);
    assert!(
        review.contains("## Original User Request\nplan the payment webhooks"),
        "{review}"
    );
    assert!(
        review.contains("## Approved Context Files\nResearch Web: docs/research/webhooks.md"),
        "{review}"
    );
    let snap = wf.snapshot();
    assert_eq!(snap["results"]["research_offer"]["choice"], "research");
    assert_eq!(snap["run_state"], "completed");

    let skip = Wf::new();
    skip.answer("brainstormer", &names)
        .answer("planner", PLANNER_CREATED)
        .answer("plan-gap-reviewer", PLAN_REVIEW_PASS);
    assert_exit(&skip.run(&["run", "plan the payment webhooks"]), 4);
    let id = skip.id();
    let o = skip.run(&["resume", &id, "--answer", "plan now"]);
    assert_exit(&o, 0);
    assert_eq!(skip.calls("researcher"), 0);
    assert_eq!(
        skip.dispatched(),
        ["brainstorm", "plan-create", "plan-review-gap-1"]
    );
}

/// [21/24] A critical-path plan gets the Doubt Pass offer before its fresh review
/// (plan-workflow.md:27): `run doubt pass` runs the brainstormer against the plan's key decision
/// and the reviewer weighs its objections; `no doubt pass` goes on; a standard plan is not asked.
#[test]
fn a_critical_path_plan_is_offered_a_doubt_pass_before_its_review() {
    let critical = PLANNER_CREATED
        .replace(
            "VERIFICATION_RIGOR: standard",
            "VERIFICATION_RIGOR: critical_path",
        )
        .replace(
            "PROVABLE_PROPERTIES: []",
            "PROVABLE_PROPERTIES: [no row is lost]",
        );
    let wf = Wf::new();
    wf.answer("planner", &critical)
        .answer_nth(
            "brainstormer",
            2,
            &brainstorm(
                r#"mkdir -p docs/plans && echo "the copy cannot be undone" > docs/plans/storage-doubts.md"#,
                "DESIGN_SAVED",
                "docs/plans/storage-doubts.md",
                "[]",
                "[]",
            ),
        )
        .answer("plan-gap-reviewer", PLAN_REVIEW_PASS);
    let o = wf.run(&["run", "plan the storage migration"]);
    assert_exit(&o, 4);
    assert_eq!(wf.snapshot()["checkpoint"]["gate"], "doubt_pass");
    assert_eq!(wf.calls("plan-gap-reviewer"), 0);
    let id = wf.id();
    let o = wf.run(&["resume", &id, "--answer", "run doubt pass"]);
    assert_exit(&o, 0);
    let doubt = wf.prompt("brainstormer", 2);
    assert!(doubt.contains("Doubt Pass on docs/plan.md"), "{doubt}");
    let review = wf.prompt("plan-gap-reviewer", 1);
    assert!(
        review.contains("## Doubt Pass\ndocs/plans/storage-doubts.md"),
        "{review}"
    );
    assert_eq!(
        wf.dispatched(),
        [
            "brainstorm",
            "plan-create",
            "brainstorm",
            "plan-review-gap-1"
        ]
    );
    let snap = wf.snapshot();
    assert_eq!(
        snap["results"]["doubt_pass"]["file"],
        "docs/plans/storage-doubts.md"
    );
    assert_eq!(
        snap["design_file"],
        serde_json::Value::Null,
        "doubts are no design"
    );

    let skip = Wf::new();
    skip.answer("planner", &critical)
        .answer("plan-gap-reviewer", PLAN_REVIEW_PASS);
    assert_exit(&skip.run(&["run", "plan the storage migration"]), 4);
    let id = skip.id();
    assert_exit(&skip.run(&["resume", &id, "--answer", "no doubt pass"]), 0);
    assert_eq!(skip.calls("brainstormer"), 1);
    assert!(!skip
        .prompt("plan-gap-reviewer", 1)
        .contains("## Doubt Pass"));
    assert_eq!(skip.snapshot()["results"]["doubt_pass"]["choice"], "skip");
}

/// A planner that says it saved a plan it never wrote is not believed
/// (remediation-and-research.md:91-93): nothing reviews a file that is not there.
#[test]
fn a_plan_file_that_is_not_there_is_refused() {
    let wf = Wf::new();
    wf.answer(
        "planner",
        &PLANNER_CREATED.replace(r#"mkdir -p docs && echo "plan $n" >> docs/plan.md"#, "true"),
    )
    .answer("plan-gap-reviewer", PLAN_REVIEW_PASS);
    let o = wf.run(&["run", "plan the storage migration"]);
    assert_ne!(o.status.code(), Some(0));
    let text = format!("{}{}", out(&o), err(&o));
    assert!(
        text.contains("PLAN_FILE \"docs/plan.md\" is not a file"),
        "{text}"
    );
    assert_eq!(wf.calls("plan-gap-reviewer"), 0);
}

/// debug-workflow.md:3: a DEBUG whose request asks for research runs the researchers before the
/// first investigator, which gets their files and how good they were.
#[test]
fn a_debug_that_asks_for_research_researches_before_investigating() {
    let wf = Wf::new();
    debug_happy(&wf);
    wf.answer("researcher", RESEARCH_DONE);
    let o = wf.run(&[
        "run",
        "fix the crash in the parser; research how upstream treats empty input",
    ]);
    assert_exit(&o, 0);
    let mut dispatched = wf.dispatched();
    dispatched[..2].sort();
    assert_eq!(
        dispatched,
        [
            "research-github",
            "research-web",
            "debug-investigate",
            "debug-review",
            "debug-verify"
        ]
    );
    let prompt = wf.prompt("bug-investigator", 1);
    assert!(
        prompt.contains("## Research Files\nWeb: docs/research/webhooks.md"),
        "{prompt}"
    );
    assert!(prompt.contains("## Research Quality\n"), "{prompt}");
    // Memory's References index the research file once the workflow is finalized.
    let active =
        std::fs::read_to_string(wf.sb.work().join(".baton/memory/activeContext.md")).unwrap();
    let line = format!("- Research: docs/research/webhooks.md (wf:{})", wf.id());
    assert!(active.contains(&line), "{active}");
    // The artifact keeps the round's files, how its backends did, and what the researcher
    // could use (a `command` role names no web tool and no MCP server).
    let snap = wf.snapshot();
    assert_eq!(
        snap["research_files"],
        serde_json::json!(["docs/research/webhooks.md"])
    );
    assert_eq!(snap["research_backend_history"][0]["round"], 1, "{snap:#}");
    assert_eq!(
        snap["capabilities"]["websearch_available"], "false",
        "{snap:#}"
    );
    assert_eq!(snap["capabilities"]["octocode_available"], "false");
    // A DEBUG that does not ask investigates first.
    let plain = Wf::new();
    debug_happy(&plain);
    assert_exit(&plain.run(&["run", "fix the crash in the parser"]), 0);
    assert_eq!(plain.calls("researcher"), 0);
}

/// A design the brainstormer says it saved must be a file of the project: one outside it (or
/// missing) refuses the pass, and nothing plans from it.
#[test]
fn a_design_file_outside_the_project_is_refused() {
    let wf = Wf::new();
    wf.answer(
        "brainstormer",
        &brainstorm("true", "DESIGN_SAVED", "/etc/passwd", "[]", "[]"),
    )
    .answer("planner", PLANNER_CREATED)
    .answer("plan-gap-reviewer", PLAN_REVIEW_PASS);
    let o = wf.run(&["run", "plan the storage migration"]);
    assert_ne!(o.status.code(), Some(0));
    let text = format!("{}{}", out(&o), err(&o));
    assert!(
        text.contains("DESIGN_FILE \"/etc/passwd\" is outside the project"),
        "{text}"
    );
    assert_eq!(wf.calls("planner"), 0);
}

#[test]
fn an_aborted_checkpoint_stops_and_a_finished_workflow_does_not_resume() {
    let wf = Wf::new();
    wf.answer("planner", PLANNER_CLARIFY);
    let o = wf.run(&["run", "plan the storage migration"]);
    assert_exit(&o, 4);
    let id = wf.id();
    let o = wf.run(&["resume", &id, "--answer", "abort"]);
    assert_exit(&o, 1);
    assert_eq!(wf.snapshot()["run_state"], "stopped");
    assert_exit(&wf.run(&["resume", &id]), 2);
    assert_eq!(wf.calls("planner"), 1);

    let done = Wf::new();
    debug_happy(&done);
    assert_exit(&done.run(&["run", "fix the crash in the parser"]), 0);
    let id = done.id();
    let o = done.run(&["resume", &id]);
    assert_exit(&o, 2);
    err_has(&o, "completed");
    let o = done.run(&["resume", &id, "--answer", "abort"]);
    assert_exit(&o, 2);
    assert_eq!(done.snapshot()["run_state"], "completed");
}

fn read_only_report(workflow: &str) {
    let wf = Wf::new();
    wf.answer("code-reviewer", REVIEW_APPROVE);
    let o = wf.run(&["run", "--workflow", workflow, "look at the parser"]);
    assert_exit(&o, 0);
    assert_eq!(wf.dispatched(), ["review-audit"]);
    assert_eq!(wf.calls("code-reviewer"), 1);
    no_write_agent_ran(&wf);
    let id = wf.id();
    let report = wf.sb.work().join(format!(".baton/reports/{id}-t1.md"));
    let text =
        std::fs::read_to_string(&report).unwrap_or_else(|e| panic!("{}: {e}", report.display()));
    assert!(text.contains("## Review: Approve"), "{text}");
    assert_eq!(wf.snapshot()["run_state"], "completed");
}

#[test]
fn triage_writes_a_read_only_report() {
    read_only_report("triage");
}

#[test]
fn codebase_health_writes_a_read_only_report() {
    read_only_report("codebase-health");
}

#[test]
fn status_and_log_show_a_completed_run() {
    let wf = Wf::new();
    debug_happy(&wf);
    assert_exit(&wf.run(&["run", "fix the crash in the parser"]), 0);
    let id = wf.id();
    let o = wf.run(&["status"]);
    assert_exit(&o, 0);
    let text = out(&o);
    let line = text
        .lines()
        .find(|l| l.starts_with(&id))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("DEBUG"), "{line}");
    assert!(line.contains("completed"), "{line}");
    assert!(text.contains("fix the crash in the parser"), "{text}");
    let o = wf.run(&["log", "last"]);
    assert_exit(&o, 0);
    let log = out(&o);
    assert!(log.contains(&id), "{log}");
    for event in [
        "agent_started",
        "agent_completed",
        "decided",
        "workflow_completed",
    ] {
        assert!(log.lines().any(|l| l.contains(event)), "{event}: {log}");
    }
    assert!(log.contains("bug-investigator"), "{log}");
}

/// A routing conflict with a `fast` route configured: the model's strict JSON answer picks the
/// workflow; an answer outside the strict form leaves the priority table's choice.
#[test]
fn a_fast_model_breaks_a_routing_conflict_and_a_bad_answer_leaves_the_rules() {
    use baton_testkit::{MockServer, Turn};
    let request = "plan the storage migration and fix the flaky upload";
    for (answer, chosen, note) in [
        (r#"{"workflow": "PLAN"}"#, "PLAN", "mock/tiny chose PLAN"),
        (
            "PLAN, clearly",
            "DEBUG",
            "gave no usable answer (not one JSON object",
        ),
    ] {
        let server = MockServer::builder()
            .turn(Turn::text(answer))
            .start_blocking();
        let wf = Wf::new();
        wf.answer("planner", PLANNER_CLARIFY)
            .answer("bug-investigator", &investigator_without_fix("BLOCKED"));
        wf.sb.write(
            ".baton/config.toml",
            &format!(
                "[providers.mock]\nkind = \"openai\"\nbase_url = \"{}/v1\"\napi_key_env = \"MOCK_API_KEY\"\n[models]\nfast = \"mock/tiny\"\n",
                server.url()
            ),
        );
        let o = wf.sb.run_with(&["run", request], &[("MOCK_API_KEY", "k")]);
        let e = err(&o);
        assert!(e.contains(note), "{e}");
        assert!(
            e.contains(&format!("-> {chosen} workflow (signals: plan, fix)")),
            "{e}"
        );
        let asked = server.requests();
        assert_eq!(asked.len(), 1);
        let body = asked[0].body.to_string();
        assert!(
            body.contains("- DEBUG: ") && body.contains("- PLAN: "),
            "{body}"
        );
        assert_eq!(wf.snapshot()["workflow_type"], chosen);
    }
}

/// cc10x's Intent Readiness Gate: a request of vague words only is asked for specifics before
/// anything runs, and the answer joins the request the agents get.
#[test]
fn a_vague_request_is_asked_for_specifics_before_anything_runs() {
    let wf = Wf::new();
    wf.happy();
    let o = wf.run(&["run", "make it better", "--no-worktree"]);
    assert_exit(&o, 4);
    assert!(
        out(&o).contains("names nothing a check could verify (better)")
            && out(&o).contains("Say what to change, where, and what will show it is done"),
        "{}",
        out(&o)
    );
    assert!(wf.dispatched().is_empty());
    assert!(wf.snapshot().to_string().contains("\"intent_readiness\""));
    let o = wf.run(&[
        "resume",
        "--answer",
        "print each step with --verbose; README lists the flag",
    ]);
    assert_exit(&o, 0);
    assert!(wf.calls("component-builder") >= 1);
    let prompt = wf.prompt("component-builder", 1);
    assert!(
        prompt.contains("make it better")
            && prompt
                .contains("What the user specified when asked: print each step with --verbose"),
        "{prompt}"
    );
}

/// cc10x PLAN preparation: the design memory names is restored and handed to the planner.
#[test]
fn a_plan_starts_from_the_design_memory_names() {
    let wf = Wf::new();
    wf.answer("planner", &storage_planner())
        .answer("plan-gap-reviewer", PLAN_REVIEW_PASS)
        .happy();
    wf.sb
        .write("docs/design.md", "# Storage\nOne table per tenant.\n");
    wf.sb.write(
        ".baton/memory/activeContext.md",
        "# Active Context\n\n## References\n- Design: docs/design.md\n",
    );
    assert_exit(&wf.run(&["run", "plan the storage migration"]), 0);
    let prompt = wf.prompt("planner", 1);
    assert!(
        prompt.contains("## Design File\ndocs/design.md: read it first and plan from it"),
        "{prompt}"
    );
    assert_eq!(wf.snapshot()["design_file"], "docs/design.md");
}

/// cc10x's knowledge-compounding check: a bug fixed after three investigations leaves a
/// solution doc (Problem / What Didn't Work / Solution / Why / Prevention) that memory names;
/// one fixed at once leaves none.
#[test]
fn a_bug_fixed_after_three_investigations_leaves_a_solution_doc() {
    let wf = Wf::new();
    debug_happy(&wf);
    for n in 1..=2 {
        wf.answer_nth(
            "bug-investigator",
            n,
            &investigator_without_fix("INVESTIGATING"),
        );
    }
    let o = wf.run(&["run", "fix the crash in the parser"]);
    assert_exit(&o, 0);
    assert_eq!(wf.calls("bug-investigator"), 3);
    let id = wf.id();
    let doc = wf.sb.work().join(format!("docs/solutions/debug/{id}.md"));
    let text = std::fs::read_to_string(&doc).expect("the solution doc");
    for part in [
        "## Problem\nfix the crash in the parser",
        "## What Didn't Work\n- Attempt 1: INVESTIGATING",
        "- Attempt 2: INVESTIGATING",
        "## Solution\n",
        "## Why\n",
        "## Prevention\n",
    ] {
        assert!(text.contains(part), "{part}: {text}");
    }
    let active =
        std::fs::read_to_string(wf.sb.work().join(".baton/memory/activeContext.md")).unwrap();
    assert!(
        active.contains(&format!(
            "Solution doc for {id}: docs/solutions/debug/{id}.md"
        )),
        "{active}"
    );

    let wf = Wf::new();
    debug_happy(&wf);
    assert_exit(&wf.run(&["run", "fix the crash in the parser"]), 0);
    assert!(!wf.sb.work().join("docs/solutions").exists());
}

/// A plan memory names is built only as it was approved: one never approved (no PLAN approved
/// it, nobody ran `baton plan approve`) is refused, naming the fix; the user naming it with
/// `--plan` approves it as before.
#[test]
fn a_plan_memory_names_that_was_never_approved_is_not_built() {
    let wf = Wf::new();
    wf.happy();
    wf.sb.write(
        "docs/other.md",
        "# Other\n\nplan_mode: execution_plan\nverification_rigor: standard\n\n## Acceptance Criteria\n- done\n\n## Phases\n```yaml\n- phase_id: phase-1\n  title: one\n  objective: do it\n  exit_criteria: [it is done]\n  test_seams: [feature.txt]\n```\n\n## Open Decisions\nNone\n\n## Differences from agreement\nNone\n",
    );
    wf.sb.write(
        ".baton/memory/activeContext.md",
        "# Active Context\n\n## References\n- Plan: docs/other.md\n",
    );
    let o = wf.run(&["run", "implement the other feature", "--no-worktree"]);
    assert_exit(&o, 2);
    assert!(
        err(&o).contains(
            "plan docs/other.md, which activeContext.md ## References names, was never approved"
        ) && err(&o).contains("baton plan approve docs/other.md"),
        "{}",
        err(&o)
    );
    assert_eq!(wf.calls("component-builder"), 0);
}

/// Two groups whose investigators both edit `shared.txt`, and a third investigator (the
/// reconciler) that edits `third`.
fn sharing_a_file(third: &[&str]) -> Wf {
    let wf = Wf::new();
    debug_happy(&wf);
    wf.answer_nth(
        "bug-investigator",
        1,
        &lane_fix(&["parser.txt", "shared.txt"]),
    )
    .answer_nth("bug-investigator", 2, &lane_fix(&["cli.txt", "shared.txt"]))
    .answer_nth("bug-investigator", 3, &lane_fix(third));
    wf
}

/// Asserts that the run said `text` on stderr.
fn err_has(o: &std::process::Output, text: &str) {
    assert!(err(o).contains(text), "{}", err(o));
}

/// Asserts that the run said `text` on stdout.
fn out_has(o: &std::process::Output, text: &str) {
    assert!(out(o).contains(text), "{}", out(o));
}

/// `baton run --workflow DEBUG` with these `--debug-group`s.
fn debug_groups(wf: &Wf, groups: &[&str], request: &str) -> std::process::Output {
    let mut args = vec!["run", "--workflow", "DEBUG"];
    for g in groups {
        args.extend(["--debug-group", g]);
    }
    args.push(request);
    wf.run(&args)
}

/// Whether the engine decided something for a reason that starts with `reason`.
fn decided(wf: &Wf, reason: &str) -> bool {
    wf.events().iter().any(|e| {
        e["event"] == "decided" && e["reason"].as_str().is_some_and(|r| r.starts_with(reason))
    })
}

/// The lanes' tasks of the one workflow: (scope, reason) of each DEBUG investigator.
fn investigators(wf: &Wf) -> Vec<(String, String)> {
    wf.snapshot()["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["phase"] == "debug-investigate")
        .map(|t| {
            (
                t["scope"].as_str().unwrap().to_string(),
                t["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_debug_fan_out_runs_one_scoped_investigator_per_group_then_reviews_disjoint_fixes_together() {
    let wf = Wf::new();
    debug_happy(&wf);
    wf.answer_nth("bug-investigator", 1, &lane_fix(&["parser.txt"]))
        .answer_nth("bug-investigator", 2, &lane_fix(&["cli.txt"]));
    let o = debug_groups(
        &wf,
        &["parser=parser.txt", "cli=cli.txt,tests/cli.txt"],
        "fix the failing parser and cli tests",
    );
    assert_exit(&o, 0);
    err_has(&o, "fan-out: 2 scoped investigators, one after another: parser (parser.txt); cli (cli.txt, tests/cli.txt)");
    // The brief names what each owned and what it edited.
    out_has(
        &o,
        "bug-investigator pass (owns parser.txt; edited parser.txt)",
    );
    out_has(&o, "(owns cli.txt, tests/cli.txt; edited cli.txt)");
    assert_eq!(
        wf.dispatched(),
        [
            "debug-investigate",
            "debug-investigate",
            "debug-review",
            "debug-verify"
        ]
    );
    // Each investigator is told its own files and nothing else.
    let (p1, p2) = (
        wf.prompt("bug-investigator", 1),
        wf.prompt("bug-investigator", 2),
    );
    assert!(
        p1.contains("Independent root cause for the parser failures"),
        "{p1}"
    );
    assert!(
        p1.contains("WITHIN your scoped files only (parser.txt)"),
        "{p1}"
    );
    assert!(
        p2.contains("WITHIN your scoped files only (cli.txt, tests/cli.txt)"),
        "{p2}"
    );
    assert_eq!(
        investigators(&wf)
            .iter()
            .map(|(s, _)| s.as_str())
            .collect::<Vec<_>>(),
        ["parser.txt", "cli.txt, tests/cli.txt"]
    );
    // The fan-in check saw two disjoint sets of edits, and said so before the review.
    assert!(decided(
        &wf,
        "fan-in: the 2 investigators edited disjoint files"
    ));
    assert_eq!(wf.calls("code-reviewer"), 1);
    assert_eq!(wf.snapshot()["proof_status"], "passed");
}

#[test]
fn a_file_two_investigators_of_a_fan_out_edited_is_reconciled_before_the_review() {
    let wf = sharing_a_file(&["shared.txt"]);
    let o = debug_groups(
        &wf,
        &["parser=parser.txt", "cli=cli.txt"],
        "fix the failing parser and cli tests",
    );
    assert_exit(&o, 0);
    assert_eq!(
        wf.dispatched(),
        [
            "debug-investigate",
            "debug-investigate",
            "debug-investigate",
            "debug-review",
            "debug-verify"
        ]
    );
    // The third investigator owns the shared file only, and is told both edited it.
    let lanes = investigators(&wf);
    assert_eq!(lanes[2].0, "shared.txt", "{lanes:?}");
    let p3 = wf.prompt("bug-investigator", 3);
    assert!(
        p3.contains("Reconcile the fan-out: shared.txt (by t1 and t"),
        "{p3}"
    );
    assert!(p3.contains("edit nothing else"), "{p3}");
    // The review came only after the fan-in check passed over the reconciled edits.
    assert!(decided(
        &wf,
        "fan-in: the 3 investigators edited disjoint files"
    ));
    assert_eq!(wf.snapshot()["run_state"], "completed");
}

#[test]
fn debug_groups_that_share_a_file_are_one_investigator_and_bad_groups_are_refused_before_anything_is_recorded(
) {
    let wf = Wf::new();
    debug_happy(&wf);
    // Not a DEBUG, a group without files, too many groups: refused, no workflow recorded.
    let nine: Vec<String> = (0..9).map(|i| format!("g{i}=f{i}.txt")).collect();
    let mut too_many = vec!["run", "--workflow", "DEBUG"];
    for g in &nine {
        too_many.extend(["--debug-group", g.as_str()]);
    }
    too_many.push("fix the tests");
    for (args, says) in [
        (
            vec![
                "run",
                "--workflow",
                "BUILD",
                "--debug-group",
                "a=a.txt",
                "--debug-group",
                "b=b.txt",
                "add a flag",
            ],
            "--debug-group: only a DEBUG fans out",
        ),
        (
            vec![
                "run",
                "--workflow",
                "DEBUG",
                "--debug-group",
                "parser",
                "fix it",
            ],
            "names no files: give DOMAIN=FILE",
        ),
        (
            vec![
                "run",
                "--workflow",
                "DEBUG",
                "--debug-group",
                "p=../up.txt",
                "fix it",
            ],
            "is not a file of the project",
        ),
        (too_many, "9 groups given, at most 8"),
        (
            vec![
                "run",
                "--engine",
                "temporal",
                "--workflow",
                "DEBUG",
                "--debug-group",
                "a=a.txt",
                "--debug-group",
                "b=b.txt",
                "fix it",
            ],
            "--debug-group runs with the local engine only",
        ),
    ] {
        let o = wf.run(&args);
        assert_exit(&o, 2);
        assert!(err(&o).contains(says), "{args:?}: {}", err(&o));
        assert!(
            !wf.sb.work().join(".baton/state/workflows").exists()
                || std::fs::read_dir(wf.sb.work().join(".baton/state/workflows"))
                    .unwrap()
                    .next()
                    .is_none(),
            "{args:?} recorded a workflow"
        );
    }
    // Two groups sharing a file are not independent: one investigator takes both.
    let o = debug_groups(
        &wf,
        &["parser=parser.txt,util.txt", "lexer=util.txt,lexer.txt"],
        "fix the failing parser tests",
    );
    assert_exit(&o, 0);
    err_has(&o, "the groups parser and lexer both touch util.txt: not independent, one investigator takes both");
    err_has(&o, "one group is left after merging");
    assert_eq!(
        wf.dispatched(),
        ["debug-investigate", "debug-review", "debug-verify"]
    );
    assert_eq!(investigators(&wf)[0].0, "N/A");
}

#[test]
fn a_reconciler_that_edits_another_investigator_s_file_leaves_the_conflict_to_the_user() {
    // The reconciler strays past the shared file into the parser investigator's file.
    let wf = sharing_a_file(&["shared.txt", "parser.txt"]);
    let o = debug_groups(
        &wf,
        &["parser=parser.txt", "cli=cli.txt"],
        "fix the failing parser and cli tests",
    );
    assert_exit(&o, 4);
    assert_eq!(wf.calls("bug-investigator"), 3);
    assert_eq!(wf.calls("code-reviewer"), 0);
    let snap = wf.snapshot();
    assert_eq!(snap["pending_gate"], "clarification");
    let said = format!("{}{}", out(&o), err(&o));
    assert!(
        said.contains(
            "fan-in: still edited by two investigators after reconciling: parser.txt (by t1 and t"
        ),
        "{said}"
    );
}

/// The parser investigator's second run fixes it, then the cli investigator fixes its own: the
/// run completes over three investigations with disjoint edits. The second run's prompt.
fn parser_again_then_cli(wf: &Wf) -> String {
    wf.answer_nth("bug-investigator", 2, &lane_fix(&["parser.txt"]))
        .answer_nth("bug-investigator", 3, &lane_fix(&["cli.txt"]));
    let o = debug_groups(
        wf,
        &["parser=parser.txt", "cli=cli.txt"],
        "fix the failing parser and cli tests",
    );
    assert_exit(&o, 0);
    assert_eq!(wf.calls("bug-investigator"), 3);
    assert!(wf
        .prompt("bug-investigator", 3)
        .contains("WITHIN your scoped files only (cli.txt)"));
    assert!(decided(
        wf,
        "fan-in: the 3 investigators edited disjoint files"
    ));
    wf.prompt("bug-investigator", 2)
}

#[test]
fn each_fan_out_investigator_s_report_is_decided_before_the_next_runs() {
    // The parser investigator goes on with its investigation, in its own files, before the cli
    // investigator runs; its continuation edits the file it edited before without conflict.
    let wf = Wf::new();
    debug_happy(&wf);
    wf.answer_nth(
        "bug-investigator",
        1,
        &lane_fix(&["parser.txt"]).replace("STATUS: FIXED", "STATUS: INVESTIGATING"),
    );
    let goes_on = parser_again_then_cli(&wf);
    assert!(
        goes_on.contains("(continue WITHIN your scoped files only: parser.txt)"),
        "{goes_on}"
    );
    // Each investigator counts its own attempts in memory.
    let active =
        std::fs::read_to_string(wf.sb.work().join(".baton/memory/activeContext.md")).unwrap();
    assert_eq!(active.matches("[DEBUG-1]:").count(), 2, "{active}");
    assert_eq!(active.matches("[DEBUG-2]:").count(), 1, "{active}");

    // A blocked investigator stops the workflow before the next group's runs.
    let wf = Wf::new();
    debug_happy(&wf);
    wf.answer_nth("bug-investigator", 1, &investigator_without_fix("BLOCKED"));
    let o = debug_groups(
        &wf,
        &["parser=parser.txt", "cli=cli.txt"],
        "fix the failing parser and cli tests",
    );
    assert_exit(&o, 4);
    assert_eq!(wf.calls("bug-investigator"), 1);
    assert_eq!(wf.snapshot()["pending_gate"], "clarification");
}

#[test]
fn a_fan_out_investigator_runs_again_in_its_own_files_after_its_research_round() {
    let wf = without_research_backend();
    wf.answer_nth("bug-investigator", 1, &needs_research());
    // The parser investigator ran again, scoped, before the cli one.
    let again = parser_again_then_cli(&wf);
    assert!(
        again.contains("WITHIN your scoped files only: parser.txt"),
        "{again}"
    );
    assert!(
        again.contains("## Research Files\nWeb: Unavailable"),
        "{again}"
    );
}

/// An investigator of a fan-out killed mid-run runs again on resume; the fan-in check still
/// counts what it edited before the kill (its first start's snapshot is kept in the record).
#[test]
fn a_fan_out_investigator_killed_mid_run_keeps_what_it_edited_before_for_the_fan_in() {
    let wf = Wf::new();
    debug_happy(&wf);
    let started = wf.scripts.join("lane1.started");
    wf.answer_nth(
        "bug-investigator",
        1,
        &format!(
            "echo a >> parser.txt\necho a >> shared.txt\ntouch {}\nwhile true; do sleep 0.05; done\n",
            started.display()
        ),
    )
    // After the resume: the parser investigator again, then cli's, then the reconciler.
    .answer_nth("bug-investigator", 2, &lane_fix(&["parser.txt"]))
    .answer_nth("bug-investigator", 3, &lane_fix(&["cli.txt", "shared.txt"]))
    .answer_nth("bug-investigator", 4, &lane_fix(&["shared.txt"]));
    let mut baton = wf.sb.spawn(&[
        "run",
        "--workflow",
        "DEBUG",
        "--debug-group",
        "parser=parser.txt",
        "--debug-group",
        "cli=cli.txt",
        "fix the failing parser and cli tests",
    ]);
    assert!(
        baton_testkit::fixture::wait_until(std::time::Duration::from_secs(30), || started
            .is_file()),
        "the first investigator did not start"
    );
    baton.kill().unwrap();
    baton.wait().unwrap();
    let o = wf.run(&["resume"]);
    assert_exit(&o, 0);
    assert_eq!(wf.calls("bug-investigator"), 4);
    let p4 = wf.prompt("bug-investigator", 4);
    assert!(
        p4.contains("Reconcile the fan-out: shared.txt (by t1 and t"),
        "{p4}"
    );
}
