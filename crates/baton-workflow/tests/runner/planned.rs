//! A planned BUILD (`baton run --plan`): the plan trust gate, one phase at a time with its own
//! builder, review, hunt and verification, the cursor moving only after a phase verifies, and the
//! final whole-branch review.

use std::path::PathBuf;

use baton_workflow::plan_file::{Approvals, PlanFile};
use baton_workflow::run::state::{Gate, WorkflowState};
use baton_workflow::run::{Outcome, RunError, StartOptions};
use serde_json::json;

use crate::harness::*;

/// A plan of `phases` phases with these open decisions.
fn plan_text(phases: usize, open: &str) -> String {
    let mut yaml = String::new();
    for i in 1..=phases {
        yaml.push_str(&format!(
            "- phase_id: phase-{i}\n  title: Part {i}\n  objective: build part {i}\n  files: [src/part{i}.rs]\n  checks: [sh test.sh part{i}]\n  exit_criteria: [part {i} answers]\n  test_seams: [part{i}::run]\n"
        ));
    }
    format!(
        "# Three parts\n\nplan_mode: execution_plan\nverification_rigor: standard\n\n## Acceptance Criteria\n- every part answers\n\n## Phases\n```yaml\n{yaml}```\n\n## Decisions\n- parts live in src/\n\n## Open Decisions\n{open}\n\n## Differences from agreement\nNone\n"
    )
}

fn write_plan(h: &Harness, text: &str) -> PathBuf {
    let path = h.env.delegate.cwd.join("docs/plans/parts.md");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

fn planned(path: PathBuf) -> StartOptions {
    StartOptions {
        plan: Some(path),
        ..start("build the three parts", false)
    }
}

#[test]
fn a_three_phase_plan_builds_each_phase_then_reviews_the_whole_branch() {
    let h = Harness::new();
    h.happy()
        // Phase 2's review finds a critical issue; its re-review approves.
        .answer_nth("code-reviewer", 2, REVIEW_CRITICAL);
    let path = write_plan(&h, &plan_text(3, "None"));
    let o = h.run(planned(path)).unwrap();
    let Outcome::Checkpoint { id, checkpoint } = &o else {
        panic!("{o:?}")
    };
    assert_eq!(checkpoint.gate, Gate::FinalReview);
    assert_eq!(checkpoint.options, ["run", "skip"]);
    assert_eq!(checkpoint.recommended.as_deref(), Some("run"));
    // Phase by phase: one builder each, plus the fix of phase 2.
    let builders = h.calls_of("component-builder");
    assert_eq!(builders.len(), 4);
    for (call, n) in builders.iter().zip([1, 2, 2, 3]) {
        assert!(
            call.prompt.contains(&format!(
                "## Current Phase\nPhase {n} of 3: `phase-{n}` — Part {n}"
            )),
            "{}",
            call.prompt
        );
    }
    assert!(builders[1].prompt.contains("- Objective: build part 2"));
    assert!(builders[1]
        .prompt
        .contains("- Exit criteria:\n  - part 2 answers"));
    assert!(builders[1].prompt.contains("- Test seams:\n  - part2::run"));
    assert!(builders[1]
        .prompt
        .contains("## Intent Contract\n- Goal: Three parts"));
    assert!(builders[1]
        .prompt
        .contains("Execute approved phase phase-2: Part 2"));
    assert!(
        builders[2].prompt.contains("Remediation"),
        "{}",
        builders[2].prompt
    );
    // Each phase is reviewed and verified before the next is built; reviewers see the phase
    // but not the plan's reasons.
    let reviews = h.calls_of("code-reviewer");
    assert_eq!(reviews.len(), 4, "phase 1, phase 2, its re-review, phase 3");
    assert!(reviews[3].prompt.contains("Phase 3 of 3"));
    assert!(!reviews[0].prompt.contains("Intent Contract"));
    let verifiers = h.calls_of("integration-verifier");
    assert_eq!(verifiers.len(), 3);
    assert!(verifiers[2].prompt.contains("Phase 3 of 3"));
    let a = h.artifact(id);
    assert_eq!(a["phase_cursor"], json!(null));
    assert_eq!(
        a["phase_status"],
        json!({"phase-1": "completed", "phase-2": "completed", "phase-3": "completed"})
    );
    assert_eq!(a["plan_file"], "docs/plans/parts.md");
    assert_eq!(
        a["intent"]["acceptance_criteria"],
        json!(["every part answers"])
    );
    assert_eq!(a["remediation_history"].as_array().unwrap().len(), 1);
    let s = WorkflowState::read(&a).unwrap();
    assert!(s
        .tasks
        .iter()
        .all(|t| t.plan.as_deref() == Some("docs/plans/parts.md")));
    // The cursor moved only on a verification: the order of phases in the calls.
    let order: Vec<String> = h.calls().iter().map(|c| c.phase.clone()).collect();
    let verify_at: Vec<usize> = order
        .iter()
        .enumerate()
        .filter(|(_, p)| *p == "build-verify")
        .map(|(i, _)| i)
        .collect();
    let build_at: Vec<usize> = order
        .iter()
        .enumerate()
        .filter(|(_, p)| *p == "build-implement")
        .map(|(i, _)| i)
        .collect();
    assert!(
        build_at[1] > verify_at[0] && build_at[3] > verify_at[1],
        "{order:?}"
    );

    // The final review: one reviewer over the whole branch, then the docs and memory.
    let o = h.answer_checkpoint(id, "run").unwrap();
    let Outcome::Completed { brief, .. } = &o else {
        panic!("{o:?}")
    };
    assert!(brief.contains("proof: passed"), "{brief}");
    let reviews = h.calls_of("code-reviewer");
    assert_eq!(reviews.len(), 5);
    assert!(reviews[4].prompt.contains("Final whole-branch review"));
    assert_eq!(h.calls_of("integration-verifier").len(), 3);
    assert_eq!(h.calls_of("doc-syncer").len(), 1);
    let a = h.artifact(id);
    assert_eq!(a["results"]["final_branch_review"]["status"], "clean");
    // Requirement → phase → verification → remediation, in the artifact and the events.
    let t = &a["traceability"];
    assert_eq!(t["requirements"], json!(["every part answers"]));
    assert_eq!(
        t["phases"],
        json!([
            {"phase_id": "phase-1", "title": "Part 1", "status": "completed"},
            {"phase_id": "phase-2", "title": "Part 2", "status": "completed"},
            {"phase_id": "phase-3", "title": "Part 3", "status": "completed"}
        ])
    );
    let checks: Vec<(&str, bool)> = t["verification"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["phase"].as_str().unwrap(), c["passed"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        checks,
        [("phase-1", true), ("phase-2", true), ("phase-3", true)]
    );
    assert_eq!(t["remediation"][0]["phase"], "phase-2");
    assert_eq!(t["remediation"][0]["origin"], "code-reviewer");
    assert!(a["task_ids"]["build-verify"].as_str().is_some());
    assert_eq!(a["results"]["component-builder"]["verdict"], "pass");
    let events = h.events(id);
    let count = |kind: &str| {
        events
            .iter()
            .filter(|e| serde_json::to_value(e.kind()).unwrap() == kind)
            .count()
    };
    assert_eq!(count("contract_parsed"), h.calls().len());
    assert_eq!(count("remediation_created"), 1);
}

#[test]
fn final_review_findings_get_one_fix_and_a_re_verification() {
    let h = Harness::new();
    h.happy().answer_nth("code-reviewer", 3, REVIEW_CRITICAL);
    let path = write_plan(&h, &plan_text(2, "None"));
    let o = h.run(planned(path)).unwrap();
    let id = id_of(&o);
    let o = h.answer_checkpoint(&id, "run").unwrap();
    assert!(matches!(o, Outcome::Completed { .. }), "{o:?}");
    // Builders: 2 phases + 1 fix; reviewers: 2 phases + final + re-review; verifiers: 2 + 1.
    assert_eq!(h.calls_of("component-builder").len(), 3);
    assert_eq!(h.calls_of("code-reviewer").len(), 4);
    assert_eq!(h.calls_of("integration-verifier").len(), 3);
    let a = h.artifact(&id);
    assert_eq!(a["results"]["final_branch_review"]["status"], "fixed");
}

#[test]
fn skipping_the_final_review_goes_to_the_docs() {
    let h = Harness::new();
    h.happy();
    let path = write_plan(&h, &plan_text(2, "None"));
    let id = id_of(&h.run(planned(path)).unwrap());
    let o = h.answer_checkpoint(&id, "skip").unwrap();
    assert!(matches!(o, Outcome::Completed { .. }), "{o:?}");
    assert_eq!(h.calls_of("code-reviewer").len(), 2);
    assert_eq!(
        h.artifact(&id)["results"]["final_branch_review"]["status"],
        "skipped"
    );
}

#[test]
fn a_plan_with_an_open_decision_is_refused_before_anything_runs() {
    let h = Harness::new();
    h.happy();
    let path = write_plan(&h, &plan_text(2, "- which separator?"));
    let e = h.run(planned(path)).unwrap_err();
    assert!(matches!(e, RunError::Plan(_)), "{e:?}");
    assert!(e.is_refusal());
    let msg = e.to_string();
    assert!(
        msg.contains("open decision \"which separator?\" is not made"),
        "{msg}"
    );
    assert!(h.calls().is_empty());
    let workflows = h.env.delegate.state.workflows();
    assert!(!workflows.exists() || std::fs::read_dir(&workflows).unwrap().next().is_none());
}

#[test]
fn a_plan_edited_after_its_approval_is_refused_until_approved_again() {
    let h = Harness::new();
    h.happy();
    let path = write_plan(&h, &plan_text(2, "None"));
    let approvals = Approvals::new(&h.env.delegate.state, &h.env.delegate.cwd);
    let p = PlanFile::read(&path).unwrap();
    approvals.approve(&path, &p.sha256, "test").unwrap();
    std::fs::write(
        &path,
        plan_text(2, "None").replace("part 2 answers", "it compiles"),
    )
    .unwrap();
    let e = h.run(planned(path.clone())).unwrap_err();
    assert!(matches!(e, RunError::PlanNotTrusted(_)), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains("plan docs/plans/parts.md changed since it was approved")
            && msg.contains("baton plan approve docs/plans/parts.md"),
        "{msg}"
    );
    assert!(h.calls().is_empty());
    let edited = PlanFile::read(&path).unwrap();
    approvals.approve(&path, &edited.sha256, "test").unwrap();
    let o = h.run(planned(path)).unwrap();
    assert!(matches!(o, Outcome::Checkpoint { .. }), "{o:?}");
}

#[test]
fn a_plan_edited_during_the_build_stops_it_before_the_next_phase() {
    let h = Harness::new();
    h.happy()
        .answer_nth("code-reviewer", 1, REVIEW_CRITICAL_AND_HIGH);
    let path = write_plan(&h, &plan_text(2, "None"));
    let o = h.run(planned(path.clone())).unwrap();
    let Outcome::Checkpoint { id, checkpoint } = &o else {
        panic!("{o:?}")
    };
    assert_eq!(checkpoint.gate, Gate::ScopeDecision);
    // While it waits, the plan is edited: phase 2 is not built from it.
    let edited = plan_text(2, "None").replace("build part 2", "build part 2 faster");
    std::fs::write(&path, &edited).unwrap();
    let o = h.answer_checkpoint(id, "critical only").unwrap();
    let Outcome::Failed { brief, .. } = &o else {
        panic!("{o:?}")
    };
    assert!(
        brief.contains("plan docs/plans/parts.md changed since workflow"),
        "{brief}"
    );
    assert_eq!(
        h.calls_of("component-builder").len(),
        2,
        "phase 1 and its fix only"
    );
    // Approved again, the retry builds phase 2 from the new plan.
    let approvals = Approvals::new(&h.env.delegate.state, &h.env.delegate.cwd);
    let p = PlanFile::read(&path).unwrap();
    approvals.approve(&path, &p.sha256, "test").unwrap();
    let o = h.answer_checkpoint(id, "retry").unwrap();
    assert!(matches!(o, Outcome::Checkpoint { .. }), "{o:?}");
    let builders = h.calls_of("component-builder");
    assert!(
        builders[2].prompt.contains("build part 2 faster"),
        "{}",
        builders[2].prompt
    );
    let a = h.artifact(id);
    assert_eq!(a["results"]["plan"]["sha256"], p.sha256.as_str());
    let history = a["status_history"].as_array().unwrap();
    assert!(history.iter().any(|e| e["event"] == "plan_reapproved"));
}

/// A phase's `checkpoint_type` pauses the loop (cc10x's loop discipline): `decision` and
/// `human_action` before the phase is built, with the user's words handed to its builder;
/// `human_verify` after it passed its checks, where `verified` goes on and other words are a
/// fix that runs before the phase is verified and shown again.
#[test]
fn a_phase_s_checkpoint_type_pauses_the_loop_where_a_person_is_needed() {
    let h = Harness::new();
    h.happy();
    let text = plan_text(3, "None")
        .replace(
            "  test_seams: [part1::run]\n",
            "  test_seams: [part1::run]\n  checkpoint_type: decision\n",
        )
        .replace(
            "  test_seams: [part2::run]\n",
            "  test_seams: [part2::run]\n  checkpoint_type: human_verify\n",
        )
        .replace(
            "  test_seams: [part3::run]\n",
            "  test_seams: [part3::run]\n  checkpoint_type: human-action\n",
        );
    let path = write_plan(&h, &text);
    let o = h.run(planned(path)).unwrap();
    let Outcome::Checkpoint { id, checkpoint } = &o else {
        panic!("{o:?}")
    };
    let id = id.clone();
    assert_eq!(checkpoint.gate, Gate::PhaseDecision);
    assert!(
        checkpoint.question.contains("phase-1"),
        "{}",
        checkpoint.question
    );
    assert_eq!(
        h.calls_of("component-builder").len(),
        0,
        "built before the decision"
    );

    let o = h.answer_checkpoint(&id, "store the parts as CSV").unwrap();
    let Outcome::Checkpoint { checkpoint, .. } = &o else {
        panic!("{o:?}")
    };
    assert_eq!(checkpoint.gate, Gate::HumanVerify);
    assert!(
        checkpoint.question.contains("phase-2"),
        "{}",
        checkpoint.question
    );
    let builders = h.calls_of("component-builder");
    assert_eq!(builders.len(), 2);
    assert!(
        builders[0].prompt.contains("store the parts as CSV"),
        "{}",
        builders[0].prompt
    );
    // Later phases see it among the decisions in force.
    assert!(builders[1]
        .prompt
        .contains("phase-1: store the parts as CSV"));
    let a = h.artifact(&id);
    assert!(
        a["approved_decisions"]
            .to_string()
            .contains("phase-1: store the parts as CSV"),
        "{a:#}"
    );
    assert_eq!(
        a["phase_cursor"], "phase-2",
        "phase 2 exits only once verified"
    );

    // What the person found wrong is fixed, then the phase is verified and shown again.
    let o = h
        .answer_checkpoint(&id, "the header row is missing")
        .unwrap();
    let Outcome::Checkpoint { checkpoint, .. } = &o else {
        panic!("{o:?}")
    };
    assert_eq!(checkpoint.gate, Gate::HumanVerify);
    let builders = h.calls_of("component-builder");
    assert_eq!(builders.len(), 3);
    assert!(
        builders[2].prompt.contains("the header row is missing"),
        "{}",
        builders[2].prompt
    );

    let o = h.answer_checkpoint(&id, "verified").unwrap();
    let Outcome::Checkpoint { checkpoint, .. } = &o else {
        panic!("{o:?}")
    };
    assert_eq!(checkpoint.gate, Gate::HumanAction);
    assert!(
        checkpoint.question.contains("phase-3"),
        "{}",
        checkpoint.question
    );
    assert_eq!(h.calls_of("component-builder").len(), 3);

    let o = h.answer_checkpoint(&id, "I created the API key").unwrap();
    let Outcome::Checkpoint { checkpoint, .. } = &o else {
        panic!("{o:?}")
    };
    assert_eq!(checkpoint.gate, Gate::FinalReview);
    let builders = h.calls_of("component-builder");
    assert_eq!(builders.len(), 4);
    assert!(builders[3].prompt.contains("I created the API key"));
}

/// A phase exits on its own checks, not the verifier's word alone: a check of the phase the
/// verifier did not run is run by the host, and when it fails the phase does not exit.
#[test]
fn a_phase_check_the_verifier_left_out_is_run_by_the_host_and_can_fail_the_phase() {
    let h = Harness::new();
    h.happy().failing_check("sh test.sh part1");
    let path = write_plan(&h, &plan_text(2, "None"));
    let o = h.run(planned(path)).unwrap();
    assert!(
        h.host_commands().iter().any(|c| c == "sh test.sh part1"),
        "{:?}",
        h.host_commands()
    );
    let id = id_of(&o);
    let a = h.artifact(&id);
    assert_eq!(a["phase_cursor"], "phase-1", "the phase exited: {o:?}");
    let text = format!("{o:?}");
    assert!(
        text.contains("sh test.sh part1 (a check of the phase that the verifier did not run)"),
        "{text}"
    );
    assert_eq!(
        h.calls_of("component-builder").len(),
        1,
        "phase 2 was built"
    );
}

/// The review of phase 1 with one critical finding that contradicts the plan's mandate.
fn review_against_the_plan() -> String {
    REVIEW_CRITICAL.replace(
        "REMEDIATION_SCOPE_REQUESTED: ALL_ISSUES\n",
        "REMEDIATION_SCOPE_REQUESTED: ALL_ISSUES\nPLAN_CONFLICT_FINDING: the mandated seam part1::run is never called\nPLAN_CONFLICT_MANDATE: \"test_seams: [part1::run]\"\n",
    )
}

/// remediation-and-research.md:203-212: a finding that contradicts an explicit plan mandate is
/// not settled by precedence. The user is asked which governs, the two texts side by side;
/// `plan governs` dismisses it (recorded, in memory's Decisions), and as the only blocking
/// finding the verifier runs next, with no fix.
#[test]
fn a_finding_against_a_plan_mandate_asks_which_governs_and_the_plan_can_govern() {
    let h = Harness::new();
    h.happy()
        .answer_nth("code-reviewer", 1, &review_against_the_plan());
    let path = write_plan(&h, &plan_text(1, "None"));
    let o = h.run(planned(path)).unwrap();
    let Outcome::Checkpoint { id, checkpoint } = &o else {
        panic!("{o:?}")
    };
    assert_eq!(checkpoint.gate, Gate::WhichGoverns);
    assert_eq!(checkpoint.options, ["plan governs", "finding governs"]);
    assert_eq!(
        checkpoint.recommended, None,
        "AUTO_PROCEED does not decide it"
    );
    assert!(
        checkpoint.question.contains(
            "The finding: \"the mandated seam part1::run is never called\". The plan mandates: \"test_seams: [part1::run]\""
        ),
        "{}",
        checkpoint.question
    );
    assert_eq!(
        h.calls_of("component-builder").len(),
        1,
        "nothing fixed yet"
    );
    let o = h.answer_checkpoint(id, "plan governs").unwrap();
    assert!(matches!(o, Outcome::Completed { .. }), "{o:?}");
    assert_eq!(h.calls_of("component-builder").len(), 1, "no fix");
    assert_eq!(h.calls_of("integration-verifier").len(), 1);
    let a = h.artifact(id);
    assert_eq!(a["results"]["plan_adjudications"][0]["governs"], "plan");
    assert_eq!(
        a["results"]["plan_adjudications"][0]["mandate"],
        "test_seams: [part1::run]"
    );
    let active =
        std::fs::read_to_string(h.env.delegate.cwd.join(".baton/memory/activeContext.md")).unwrap();
    assert!(
        active.contains(&format!("Plan governs (wf:{id}): finding dismissed: the mandated seam part1::run is never called")),
        "{active}"
    );
}

/// `finding governs`: the mandate is overridden, and a fix applies the finding, told so. The
/// re-review that words the same conflict differently is not asked about again.
#[test]
fn a_finding_that_governs_over_the_plan_is_fixed() {
    let h = Harness::new();
    let reworded = review_against_the_plan().replace(
        "PLAN_CONFLICT_FINDING: the mandated seam part1::run is never called",
        "PLAN_CONFLICT_FINDING: nothing calls part1::run yet",
    );
    h.happy()
        .answer_nth("code-reviewer", 1, &review_against_the_plan())
        .answer_nth("code-reviewer", 2, &reworded);
    let path = write_plan(&h, &plan_text(1, "None"));
    let id = id_of(&h.run(planned(path)).unwrap());
    let o = h.answer_checkpoint(&id, "Finding Governs").unwrap();
    assert!(matches!(o, Outcome::Completed { .. }), "{o:?}");
    let builders = h.calls_of("component-builder");
    assert_eq!(builders.len(), 3, "two fixes ran, with no second question");
    assert!(
        builders[1].prompt.contains(
            "The user decided the finding governs over the plan's mandate \"test_seams: [part1::run]\""
        ),
        "{}",
        builders[1].prompt
    );
    let a = h.artifact(&id);
    assert_eq!(a["results"]["plan_adjudications"][0]["governs"], "finding");
    assert_eq!(
        a["results"]["plan_adjudications"].as_array().unwrap().len(),
        1
    );
    assert_eq!(a["remediation_history"].as_array().unwrap().len(), 2);
}

/// The seam gate against the plan (workflow-artifact-and-hook-policy.md:278): a planned phase
/// that names its test seams takes a builder's pass only when it confirms them (each named in
/// `TEST_SEAMS`) or disagrees with a better seam and says why.
#[test]
fn a_planned_phase_takes_a_builder_pass_only_with_its_test_seams_confirmed_or_disagreed() {
    let refused = |builder: String, why: &str| {
        let h = Harness::new();
        h.happy().answer("component-builder", &builder);
        let path = write_plan(&h, &plan_text(1, "None"));
        let o = h.run(planned(path)).unwrap();
        let Outcome::Failed { brief, .. } = &o else {
            panic!("{o:?}")
        };
        assert!(brief.contains(why), "{brief}");
        assert!(h.calls_of("code-reviewer").is_empty());
    };
    refused(
        BUILDER_PASS
            .replace("SEAM_GATE_STATUS: confirmed", "SEAM_GATE_STATUS: not_applicable")
            .replace("TEST_SEAMS: [feature.txt, part1::run, part2::run, part3::run]", "TEST_SEAMS: []"),
        "the plan names this phase's test seams (part1::run): SEAM_GATE_STATUS must be confirmed (TEST_SEAMS naming them) or disagreed",
    );
    refused(
        BUILDER_PASS.replace(
            "TEST_SEAMS: [feature.txt, part1::run, part2::run, part3::run]",
            "TEST_SEAMS: [feature.txt]",
        ),
        "SEAM_GATE_STATUS confirmed, but TEST_SEAMS does not name the plan's part1::run for this phase",
    );
    // A better seam, and why: taken.
    let h = Harness::new();
    let disagreed = BUILDER_PASS
        .replace("SEAM_GATE_STATUS: confirmed", "SEAM_GATE_STATUS: disagreed")
        .replace(
            "TEST_SEAMS: [feature.txt, part1::run, part2::run, part3::run]",
            "TEST_SEAMS: [part1::serve]",
        )
        .replace(
            "DECISIONS: []",
            "DECISIONS: [part1::serve is where a request enters; run only wraps it]",
        );
    h.happy().answer("component-builder", &disagreed);
    let path = write_plan(&h, &plan_text(1, "None"));
    let o = h.run(planned(path)).unwrap();
    assert!(
        matches!(o, Outcome::Checkpoint { .. } | Outcome::Completed { .. }),
        "{o:?}"
    );
    assert_eq!(h.calls_of("code-reviewer").len(), 1);
}
