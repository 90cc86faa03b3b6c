//! `baton run` / `baton resume` end to end: the real binary in a temp repository, with the nine
//! workflow roles overridden by project roles on the `command` backend. Each role runs one shell
//! script that saves its prompt, counts its calls and answers with the snippet the test wrote for
//! that call (`<role>.<n>.sh`, else `<role>.sh`). Nothing waits on time.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::new_without_default)]

mod common;

use std::time::Duration;

use baton_testkit::fixture::{assert_exit, wait_until};
use common::workflow::*;
use serde_json::Value;

#[test]
fn a_build_runs_the_full_graph_and_ends_verified() {
    let wf = Wf::new();
    wf.happy();
    let o = wf.run(&["run", "add a feature file"]);
    assert_exit(&o, 0);
    assert!(
        err(&o).starts_with("-> BUILD workflow (signals: add)"),
        "{}",
        err(&o)
    );
    let brief = out(&o);
    assert!(brief.contains("completed"), "{brief}");
    assert!(brief.contains("proof: passed"), "{brief}");
    // Reviewer and hunter run together; their order is whichever started first.
    baton_testkit::assert_full_build(wf.dispatched());
    let snap = wf.snapshot();
    assert_eq!(snap["run_state"], "completed");
    assert_eq!(snap["proof_status"], "passed");
    assert_eq!(snap["quality"]["convergence_state"], "stable");
    assert!(snap["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["status"] == "completed"));
    // Memory was finalized.
    let progress = std::fs::read_to_string(wf.sb.work().join(".baton/memory/progress.md")).unwrap();
    assert!(progress.contains("add a feature file"), "{progress}");
    assert!(progress.contains("test -f feature.txt"), "{progress}");
    // The reviewer's prompt is the scaffold, without the memory summary.
    let review = wf.prompt("code-reviewer", 1);
    assert!(
        review.starts_with("## Task Context\n- Task ID: t2\n"),
        "{review}"
    );
    assert!(!review.contains("## Memory Summary"), "{review}");
    assert!(wf
        .prompt("component-builder", 1)
        .contains("## Memory Summary"));
}

/// `--trivial` whose builder reports that the scope grew: the workflow escalates to the full
/// graph (reviewer, hunter, doc-syncer added; the verifier waits for the review) and completes.
#[test]
fn a_trivial_build_whose_scope_grows_escalates_and_completes() {
    let wf = Wf::new();
    wf.happy();
    wf.answer(
        "component-builder",
        &BUILDER_PASS.replace("SCOPE_INCREASES: []", "SCOPE_INCREASES: [a second module]"),
    );
    let o = wf.run(&["run", "--trivial", "add a feature file"]);
    assert_exit(&o, 0);
    assert!(out(&o).contains("proof: passed"), "{}", out(&o));
    // Reviewer and hunter run together; their order is whichever started first.
    baton_testkit::assert_full_build(wf.dispatched());
    let snap = wf.snapshot();
    assert_eq!(snap["build_scope"], "standard");
    assert!(snap["status_history"]
        .as_array()
        .unwrap()
        .iter()
        .any(|h| h["event"] == "build_scope_escalated"));
}

/// The phase's base is recorded before its builder runs and named to the reviewer, the hunter
/// and the verifier; in place, it is a commit of the tree as it was, so the change they diff is
/// the builder's alone, not the user's earlier uncommitted edit.
#[test]
fn reviewers_are_told_the_phase_base_which_leaves_out_the_user_s_own_edits() {
    let wf = Wf::new();
    wf.happy();
    wf.sb.write("README", "hello, edited by the user\n");
    let o = wf.run(&["run", "add a feature file"]);
    assert_exit(&o, 0);
    let base = wf.snapshot()["results"]["git_base_sha"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(base.len(), 40, "{base}");
    for role in ["code-reviewer", "failure-hunter", "integration-verifier"] {
        let prompt = wf.prompt(role, 1);
        assert!(
            prompt.contains(&format!("This phase began at `{base}`"))
                && prompt.contains(&format!("its change is exactly `git diff {base} ")),
            "{role}: {prompt}"
        );
        // The change is the new feature.txt alone: the user's edit of README is in the base.
        assert!(
            prompt.contains("The files it changes:\n```\nA\tfeature.txt\n```"),
            "{role}: {prompt}"
        );
    }
    assert!(!wf.prompt("component-builder", 1).contains("## Base"));
    // The base is the user's tree: README as they edited it.
    let shown = wf.sb.git(&["show", &format!("{base}:README")]);
    assert_eq!(shown, "hello, edited by the user\n");
}

#[test]
fn prose_without_a_contract_stops_the_workflow() {
    let wf = Wf::new();
    wf.happy().answer(
        "component-builder",
        "echo x >> feature.txt\necho 'Done, looks good, all tests pass.'\n",
    );
    let o = wf.run(&["run", "add a feature file"]);
    assert_exit(&o, 1);
    assert!(
        out(&o).contains("ended without the contract baton needs to go on"),
        "{}",
        out(&o)
    );
    assert_eq!(wf.dispatched(), ["build-implement"]);
    assert_eq!(wf.snapshot()["run_state"], "failed");
    // Its task row says so ([14/18]: it said `done`).
    let text = out(&o);
    let row = text
        .lines()
        .find(|l| l.starts_with("  t1 build-implement"))
        .unwrap_or_else(|| panic!("no t1 row in:\n{text}"));
    assert!(row.contains(" failed "), "{row}");
}

#[test]
fn a_prose_approval_does_not_advance_to_the_verifier() {
    let wf = Wf::new();
    wf.happy()
        .answer("code-reviewer", "echo 'Looks good to me, ship it.'\n");
    let o = wf.run(&["run", "add a feature file"]);
    assert_exit(&o, 1);
    assert_eq!(wf.calls("integration-verifier"), 0);
    assert!(out(&o).contains("code-reviewer"), "{}", out(&o));
}

#[test]
fn a_builder_pass_that_changed_nothing_is_not_believed() {
    let wf = Wf::new();
    wf.happy().answer(
        "component-builder",
        &BUILDER_PASS.replace("echo \"change $n\" >> feature.txt\n", ""),
    );
    let o = wf.run(&["run", "add a feature file"]);
    assert_exit(&o, 1);
    assert!(out(&o).contains("changed no file"), "{}", out(&o));
    assert_eq!(wf.calls("code-reviewer"), 0);
}

#[test]
fn remediation_stops_at_the_circuit_breaker_after_three_cycles() {
    let wf = Wf::new();
    wf.happy()
        .answer("code-reviewer", REVIEW_CRITICAL)
        .answer("researcher", RESEARCH_DONE);
    let o = wf.run(&["run", "add a feature file"]);
    assert_exit(&o, 4);
    let text = out(&o);
    assert!(text.contains("question:"), "{text}");
    assert!(text.contains("one more cycle | accept | abort"), "{text}");
    assert!(text.contains("remediation cycles: 3"), "{text}");
    let snap = wf.snapshot();
    assert_eq!(snap["pending_gate"], "circuit_breaker");
    assert_eq!(snap["remediation_history"].as_array().unwrap().len(), 3);
    // The builder ran once for the phase and once per cycle; the verifier never ran.
    assert_eq!(wf.calls("component-builder"), 4);
    assert_eq!(wf.calls("integration-verifier"), 0);
    // The remediation prompt says what to fix.
    assert!(wf
        .prompt("component-builder", 2)
        .contains("the feature is never wired in"));
    // Two fixes that did not converge: a research round ran before the third, which reads it.
    assert_eq!(wf.calls("researcher"), 2);
    let third = wf.prompt("component-builder", 4);
    assert!(
        third.contains("## Research Files\nWeb: docs/research/webhooks.md\n"),
        "{third}"
    );
    assert!(!wf
        .prompt("component-builder", 3)
        .contains("## Research Files"));
    let id = wf.id();
    let o = wf.run(&["resume", &id, "--answer", "abort"]);
    assert_exit(&o, 1);
    assert_eq!(wf.snapshot()["run_state"], "stopped");
    let o = wf.run(&["resume", &id]);
    assert_exit(&o, 2);
}

/// build-workflow.md:65-66: a builder that stops on a decision only the user can make gets the
/// answer, and the answer is kept as `Build clarification [PHASE]` in memory's Decisions.
#[test]
fn a_build_clarification_is_kept_in_memory_s_decisions() {
    let wf = Wf::new();
    let blocked = BUILDER_PASS
        .replace("STATUS: PASS", "STATUS: FAIL")
        .replace("PHASE_STATUS: completed", "PHASE_STATUS: blocked")
        .replace("CHECKPOINT_TYPE: none", "CHECKPOINT_TYPE: decision")
        .replace(
            "BLOCKED_ITEMS: []",
            "BLOCKED_ITEMS: [which database to use]",
        );
    wf.happy().answer_nth("component-builder", 1, &blocked);
    let o = wf.run(&["run", "add a feature file"]);
    assert_exit(&o, 4);
    assert_eq!(wf.snapshot()["checkpoint"]["gate"], "checkpoint_decision");
    let id = wf.id();
    let o = wf.run(&["resume", &id, "--answer", "use   sqlite"]);
    assert_exit(&o, 0);
    assert!(wf.prompt("component-builder", 2).contains("use   sqlite"));
    let active =
        std::fs::read_to_string(wf.sb.work().join(".baton/memory/activeContext.md")).unwrap();
    let line = active
        .lines()
        .find(|l| l.contains("Build clarification ["))
        .unwrap_or_else(|| panic!("{active}"));
    assert!(line.ends_with(&format!("(wf:{id}): use sqlite")), "{line}");
}

/// seed 001:124: with two unfinished workflows, `baton resume` without an id takes neither (which
/// one is meant cannot be known): it lists both, newest first, and names the command.
#[test]
fn resume_without_an_id_refuses_to_guess_between_two_unfinished_workflows() {
    let wf = Wf::new();
    wf.happy().answer("code-reviewer", REVIEW_CRITICAL_AND_HIGH);
    assert_exit(&wf.run(&["run", "add a feature file"]), 4);
    let first = wf.id();
    assert_exit(&wf.run(&["run", "add a second feature file"]), 4);
    let ids: Vec<String> = std::fs::read_dir(wf.sb.work().join(".baton/state/workflows"))
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            name.strip_suffix(".json").map(str::to_string)
        })
        .collect();
    let second = ids.iter().find(|i| **i != first).unwrap().clone();
    let lines = || {
        ids.iter()
            .map(|i| {
                std::fs::read_to_string(
                    wf.sb
                        .work()
                        .join(format!(".baton/state/workflows/{i}.events.jsonl")),
                )
                .unwrap()
                .lines()
                .count()
            })
            .sum::<usize>()
    };
    let before = lines();
    let o = wf.run(&["resume", "--answer", "all issues"]);
    assert_exit(&o, 2);
    let e = err(&o);
    assert!(e.contains("2 workflows are unfinished"), "{e}");
    assert!(e.contains(&first) && e.contains(&second), "{e}");
    assert!(e.contains("add a second feature file"), "{e}");
    assert_eq!(lines(), before, "nothing was answered");
    // Named, it goes on.
    wf.answer("code-reviewer", REVIEW_APPROVE);
    assert_exit(&wf.run(&["resume", &first, "--answer", "all issues"]), 0);
    // One left unfinished: now it is the one meant.
    let o = wf.run(&["resume", "--answer", "all issues"]);
    assert_exit(&o, 0);
}

#[test]
fn a_scope_checkpoint_is_answered_by_resume_and_the_workflow_completes() {
    let wf = Wf::new();
    wf.happy()
        .answer_nth("code-reviewer", 1, REVIEW_CRITICAL_AND_HIGH);
    let o = wf.run(&["run", "add a feature file"]);
    assert_exit(&o, 4);
    assert!(
        out(&o).contains("critical only | all issues | abort"),
        "{}",
        out(&o)
    );
    let id = wf.id();
    // A word that is no option, a prefix of one, and an answer that merely starts with an
    // option (`abort please` used to abort) are refused and change nothing.
    let before = wf.events().len();
    for answer in ["whatever", "abort please", "Critical only, please", "all"] {
        let o = wf.run(&["resume", &id, "--answer", answer]);
        assert_exit(&o, 2);
        assert!(
            err(&o).contains("critical only, all issues, abort"),
            "{answer}: {}",
            err(&o)
        );
        assert_eq!(wf.events().len(), before, "{answer}");
        assert_eq!(wf.snapshot()["run_state"], "checkpoint", "{answer}");
    }
    // The option alone, in any case.
    let o = wf.run(&["resume", &id, "--answer", "Critical Only"]);
    assert_exit(&o, 0);
    let events = wf.events();
    let answered: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "checkpoint_answered")
        .collect();
    assert_eq!(answered.len(), 1);
    assert_eq!(answered[0]["details"]["answer"], "Critical Only");
    let snap = wf.snapshot();
    let remfix: Vec<&Value> = snap["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["kind"] == "remfix")
        .collect();
    assert_eq!(remfix.len(), 1);
    assert_eq!(remfix[0]["scope"], "CRITICAL_ONLY");
    let mut phases = wf.dispatched();
    phases[1..3].sort();
    phases[4..6].sort();
    assert_eq!(
        phases,
        [
            "build-implement",
            "build-hunt",
            "build-review",
            "build-implement",
            "re-hunt",
            "re-review",
            "build-verify",
            "build-doc-sync"
        ]
    );
    assert_eq!(snap["run_state"], "completed");
}

#[test]
fn review_is_advisory_and_never_runs_a_write_agent() {
    let wf = Wf::new();
    wf.happy().answer("code-reviewer", REVIEW_CRITICAL);
    let o = wf.run(&["run", "review the feature code"]);
    // Changes requested: the user is asked whether a BUILD fixes them; nothing is built.
    assert_exit(&o, 4);
    assert!(err(&o).starts_with("-> REVIEW workflow"), "{}", err(&o));
    assert!(
        out(&o).contains("The review requested changes")
            && out(&o).contains("start build to fix | done for now"),
        "{}",
        out(&o)
    );
    assert_eq!(wf.dispatched(), ["review-audit"]);
    assert_eq!(wf.calls("component-builder"), 0);
    let snap = wf.snapshot();
    assert!(snap["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["kind"] != "remfix"));
    let o = wf.run(&["resume", "--answer", "done for now"]);
    assert_exit(&o, 0);
    assert!(out(&o).contains("done for now"), "{}", out(&o));
    assert_eq!(wf.calls("component-builder"), 0);
}

/// `start build to fix`: the REVIEW goes on as a BUILD whose builder gets the findings.
#[test]
fn a_review_s_findings_are_carried_into_the_build_that_fixes_them() {
    let wf = Wf::new();
    wf.happy()
        .answer_nth("code-reviewer", 1, REVIEW_CRITICAL)
        .answer_nth("code-reviewer", 2, REVIEW_APPROVE);
    assert_exit(&wf.run(&["run", "review the feature code"]), 4);
    let o = wf.run(&["resume", "--answer", "start build to fix"]);
    assert_exit(&o, 0);
    assert_eq!(wf.calls("component-builder"), 1);
    let prompt = wf.prompt("component-builder", 1);
    assert!(
        prompt.contains("Fix the findings of the review (review the feature code)")
            && prompt.contains("Fix these review findings:\n- [critical]"),
        "{prompt}"
    );
    let snap = wf.snapshot();
    assert_eq!(snap["workflow_type"], "BUILD");
    assert_eq!(snap["run_state"], "completed");
}

#[test]
fn orient_answers_inline_and_keeps_no_record() {
    let wf = Wf::new();
    wf.sb.write(
        ".baton/roles/scout.md",
        "---\nname: scout\ndescription: test\ntools: []\nbackend: command\ncommand: [sh, -c, \"cat >/dev/null; echo the parser lives in src/parse.rs\"]\n---\nAnswer.\n",
    );
    let o = wf.run(&["run", "help me understand the parser"]);
    assert_exit(&o, 0);
    assert!(err(&o).starts_with("-> ORIENT workflow"), "{}", err(&o));
    assert_eq!(out(&o).trim(), "the parser lives in src/parse.rs");
    assert!(!wf.sb.work().join(".baton/state/workflows").exists());
    // [23/24] With the Temporal engine (no server here): ORIENT keeps no record to make durable,
    // so it answers here all the same, and says so.
    let o = wf.run(&[
        "run",
        "--engine",
        "temporal",
        "help me understand the parser",
    ]);
    assert_exit(&o, 0);
    assert!(
        err(&o).contains("ORIENT only reads and keeps no record: it answers here"),
        "{}",
        err(&o)
    );
    assert_eq!(out(&o).trim(), "the parser lives in src/parse.rs");
}

#[test]
fn a_reviewer_tier_below_the_floor_is_refused_before_anything_runs() {
    let wf = Wf::new();
    wf.happy();
    wf.sb.write(
        ".baton/config.toml",
        "[workflow.tiers]\ncode-reviewer = \"fast\"\n",
    );
    let o = wf.run(&["run", "add a feature file"]);
    assert_exit(&o, 2);
    assert!(err(&o).contains("code-reviewer"), "{}", err(&o));
    assert!(err(&o).contains("balanced"), "{}", err(&o));
    assert_eq!(wf.calls("component-builder"), 0);
    assert!(!wf.sb.work().join(".baton/state/workflows").exists());
}

#[test]
fn a_verifier_pass_whose_scenario_fails_when_baton_runs_it_does_not_pass() {
    let wf = Wf::new();
    wf.happy().answer(
        "integration-verifier",
        &VERIFY_PASS.replace("test -f feature.txt", "test -f missing.txt"),
    );
    let o = wf.run(&["run", "add a feature file"]);
    assert_exit(&o, 1);
    assert!(
        out(&o).contains("scenario `test -f missing.txt` exits 1 when baton ran it"),
        "{}",
        out(&o)
    );
    assert_eq!(wf.calls("doc-syncer"), 0);
    assert_ne!(wf.snapshot()["proof_status"], "passed");
}

fn branches(wf: &Wf) -> String {
    wf.sb.git(&["branch", "--list", "baton/*"])
}

#[test]
fn a_build_in_a_worktree_ends_with_the_finishing_choice_and_merge_lands_it() {
    let wf = Wf::new();
    wf.happy();
    let o = wf.run(&["run", "--worktree", "add a feature file"]);
    assert_exit(&o, 4);
    let text = out(&o);
    assert!(text.contains("merge | keep | pr | discard"), "{text}");
    let id = wf.id();
    // The agents worked in the worktree: the main checkout is untouched so far.
    assert!(!wf.sb.work().join("feature.txt").exists());
    let snap = wf.snapshot();
    let wt = snap["run"]["worktree"]["path"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(std::path::Path::new(&wt).join("feature.txt").exists());
    assert!(wf
        .prompt("component-builder", 1)
        .contains("Task Phase: build-implement"));
    assert!(branches(&wf).contains(&format!("baton/{id}")));
    let o = wf.run(&["resume", &id, "--answer", "merge"]);
    assert_exit(&o, 0);
    assert!(out(&o).contains("finish: merged"), "{}", out(&o));
    assert!(wf.sb.work().join("feature.txt").exists());
    assert_eq!(wf.sb.subjects("main")[0], "add a feature file");
    assert_eq!(branches(&wf).trim(), "");
    assert!(!std::path::Path::new(&wt).exists());
    assert_eq!(wf.snapshot()["run_state"], "completed");
}

#[test]
fn the_git_preflight_is_recorded_and_a_detached_checkout_is_never_merged_into() {
    let wf = Wf::new();
    wf.happy();
    // The user's checkout is on no branch (HEAD detached at main's commit).
    wf.sb.git(&["checkout", "-q", "--detach"]);
    let before = wf.sb.git(&["rev-parse", "HEAD"]);
    assert_exit(&wf.run(&["run", "--worktree", "add a feature file"]), 4);
    let id = wf.id();
    // Looked at in the workflow's own worktree, before the first builder.
    assert_eq!(
        wf.snapshot()["results"]["git_preflight"],
        serde_json::json!({"isolated": "true", "detached_head": false})
    );
    let o = wf.run(&["resume", &id, "--answer", "merge"]);
    assert_exit(&o, 2);
    assert!(err(&o).contains("detached HEAD"), "{}", err(&o));
    assert!(err(&o).contains("answer pr or keep"), "{}", err(&o));
    // Nothing moved, nothing was removed, and the question stays.
    assert_eq!(wf.sb.git(&["rev-parse", "HEAD"]), before);
    assert!(branches(&wf).contains(&format!("baton/{id}")));
    assert_eq!(wf.snapshot()["checkpoint"]["gate"], "finish");
    // On a branch again, the same answer lands it.
    wf.sb.git(&["checkout", "-q", "main"]);
    let o = wf.run(&["resume", &id, "--answer", "merge"]);
    assert_exit(&o, 0);
    assert!(out(&o).contains("finish: merged"), "{}", out(&o));
}

#[test]
fn in_place_the_git_preflight_sees_the_main_checkout_and_a_detached_head() {
    let wf = Wf::new();
    wf.happy();
    wf.sb.git(&["checkout", "-q", "--detach"]);
    assert_exit(&wf.run(&["run", "add a feature file"]), 0);
    assert_eq!(
        wf.snapshot()["results"]["git_preflight"],
        serde_json::json!({"isolated": "false", "detached_head": true})
    );
}

#[test]
fn discard_removes_the_worktree_and_its_branch_and_leaves_main_alone() {
    let wf = Wf::new();
    wf.happy();
    assert_exit(&wf.run(&["run", "--worktree", "add a feature file"]), 4);
    let id = wf.id();
    // Discard is asked again before anything is deleted.
    let o = wf.run(&["resume", &id, "--answer", "discard"]);
    assert_exit(&o, 4);
    assert!(out(&o).contains("Answer discard again"), "{}", out(&o));
    assert!(branches(&wf).contains(&format!("baton/{id}")));
    assert_eq!(wf.snapshot()["checkpoint"]["gate"], "confirm_discard");
    let o = wf.run(&["resume", &id, "--answer", "discard"]);
    assert_exit(&o, 0);
    assert!(out(&o).contains("finish: discarded"), "{}", out(&o));
    assert_eq!(branches(&wf).trim(), "");
    assert!(!wf.sb.work().join("feature.txt").exists());
    assert_eq!(wf.sb.subjects("main"), ["initial"]);
}

#[test]
fn auto_proceed_takes_the_worktree_and_keeps_the_branch() {
    let wf = Wf::new();
    wf.happy();
    wf.sb.write(
        ".baton/memory/activeContext.md",
        "# Active context\n\n## Session Settings\nAUTO_PROCEED: true\n",
    );
    let o = wf.run(&["run", "add a feature file"]);
    assert_exit(&o, 0);
    let id = wf.id();
    assert!(
        out(&o).contains(&format!("finish: kept branch baton/{id}")),
        "{}",
        out(&o)
    );
    assert!(out(&o).contains("gh pr create"), "{}", out(&o));
    assert!(branches(&wf).contains(&format!("baton/{id}")));
    assert!(!wf.sb.work().join("feature.txt").exists());
    let decisions =
        std::fs::read_to_string(wf.sb.work().join(".baton/memory/activeContext.md")).unwrap();
    assert!(
        decisions.contains("AUTO_PROCEED took `keep` at finish"),
        "{decisions}"
    );
}

/// seed 001:40-54: memory is loaded again on resume: AUTO_PROCEED turned on while a workflow
/// waits at a checkpoint holds for the rest of it (the finishing choice is then taken as
/// recommended, and written under Decisions).
#[test]
fn auto_proceed_turned_on_while_waiting_holds_after_the_resume() {
    let wf = Wf::new();
    wf.happy()
        .answer_nth("code-reviewer", 1, REVIEW_CRITICAL_AND_HIGH);
    let o = wf.run(&["run", "add a feature file", "--worktree"]);
    assert_exit(&o, 4);
    let id = wf.id();
    let path = wf.sb.work().join(".baton/memory/activeContext.md");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("AUTO_PROCEED: false"), "{text}");
    std::fs::write(
        &path,
        text.replace("AUTO_PROCEED: false", "AUTO_PROCEED: true"),
    )
    .unwrap();
    let o = wf.run(&["resume", &id, "--answer", "all issues"]);
    assert_exit(&o, 0);
    assert!(
        out(&o).contains(&format!("finish: kept branch baton/{id}")),
        "{}",
        out(&o)
    );
    let decisions = std::fs::read_to_string(&path).unwrap();
    assert!(
        decisions.contains("AUTO_PROCEED took `keep` at finish"),
        "{decisions}"
    );
}

#[test]
fn findings_both_raise_are_cross_confirmed_and_ones_the_verifier_refutes_are_dropped() {
    let wf = Wf::new();
    wf.happy()
        .answer_nth("code-reviewer", 1, REVIEW_CRITICAL)
        .answer_nth(
            "failure-hunter",
            1,
            "cat <<'EOF'\nCONTRACT {\"s\":\"ISSUES_FOUND\",\"b\":true,\"cr\":1}\n## Error Handling Audit: Issues Found\n\n### Critical Issues\n- feature.txt:1 the failure is swallowed\n\nSCOPE: feature.txt\nFILES_SCANNED: 1\nERROR_HANDLING_SITES_INSPECTED: 1\nEOF\n",
        )
        .answer_nth(
            "code-reviewer",
            2,
            &REVIEW_APPROVE.replace("### Checked", "### Minor Issues\n- src/minor.rs:2 a name could be clearer\n\n### Checked"),
        )
        .answer(
            "integration-verifier",
            &VERIFY_PASS.replace(
                "### Router Contract",
                "### Reviewer Finding Validation\n- src/minor.rs:2 validated: false\n\n### Router Contract",
            ),
        );
    let o = wf.run(&["run", "add a feature file"]);
    assert_exit(&o, 0);
    let events = wf.events();
    let decided: Vec<&Value> = events.iter().filter(|e| e["event"] == "decided").collect();
    let first = decided
        .iter()
        .find(|e| e["decision"] == "create_remfix")
        .expect("a remediation decision");
    let findings = first["details"]["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0]["cross_confirmed"], true);
    assert_eq!(findings[0]["location"], "feature.txt:1");
    let after_verify = decided
        .iter()
        .find(|e| {
            !e["details"]["dropped_findings"]
                .as_array()
                .unwrap()
                .is_empty()
        })
        .expect("a decision that dropped a finding");
    assert!(after_verify["details"]["dropped_findings"][0]
        .as_str()
        .unwrap()
        .contains("src/minor.rs:2"));
    let history = wf.snapshot()["status_history"].clone();
    assert!(history
        .as_array()
        .unwrap()
        .iter()
        .any(|h| h["event"] == "finding_dropped"));
    // The minor finding was deferred when the review raised it, and left the list when the
    // verifier refuted it.
    assert_eq!(wf.snapshot()["deferred_findings"], serde_json::json!([]));
    let deferred_once = wf.events().iter().any(|e| {
        e["delta"]["deferred_findings"]
            .as_array()
            .is_some_and(|d| d.iter().any(|f| f["location"] == "src/minor.rs:2"))
    });
    assert!(deferred_once);
}

#[test]
fn json_outcomes_and_resume_without_an_id_or_by_prefix() {
    let wf = Wf::new();
    wf.happy()
        .answer_nth("code-reviewer", 1, REVIEW_CRITICAL_AND_HIGH);
    let o = wf.run(&["run", "--json", "add a feature file"]);
    assert_exit(&o, 4);
    let doc: Value = serde_json::from_str(out(&o).trim()).unwrap();
    assert_eq!(doc["type"], "workflow.checkpoint");
    assert_eq!(doc["checkpoint"]["gate"], "scope_decision");
    assert_eq!(doc["checkpoint"]["recommended"], "critical only");
    let id = wf.id();
    assert_eq!(doc["id"], id.as_str());
    // A prefix that matches nothing is refused; no id takes the newest unfinished workflow.
    let o = wf.run(&["resume", "wf-1999", "--answer", "all issues"]);
    assert_exit(&o, 2);
    assert!(err(&o).contains("baton status"), "{}", err(&o));
    let o = wf.run(&["resume", "--json", "--answer", "all issues"]);
    assert_exit(&o, 0);
    let doc: Value = serde_json::from_str(out(&o).trim()).unwrap();
    assert_eq!(doc["type"], "workflow.completed");
    assert_eq!(doc["id"], id.as_str());
    assert!(doc["brief"].as_str().unwrap().contains("proof: passed"));
    // Nothing is left to resume.
    let o = wf.run(&["resume"]);
    assert_exit(&o, 2);
    assert!(
        err(&o).contains("no workflow waits to be resumed"),
        "{}",
        err(&o)
    );
}

#[test]
fn ctrl_c_during_a_dispatch_exits_130_and_resume_runs_that_task_again() {
    use std::time::Duration;
    let wf = Wf::new();
    wf.happy();
    let release = wf.sb.path("release");
    // The first builder call waits for a file the test creates; the prompt file says it started.
    wf.answer_nth(
        "component-builder",
        1,
        &format!(
            "while [ ! -f {} ]; do sleep 0.01; done\n{BUILDER_PASS}",
            release.display()
        ),
    );
    let child = wf.sb.spawn(&["run", "add a feature file"]);
    let started = wf.sb.path("scripts/component-builder.1.prompt");
    assert!(baton_testkit::fixture::wait_until(
        Duration::from_secs(60),
        || started.exists()
    ));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::SIGINT,
    )
    .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_exit(&o, 130);
    assert!(
        err(&o).contains("continue with: baton resume"),
        "{}",
        err(&o)
    );
    std::fs::write(&release, "").unwrap();
    let o = wf.run(&["resume"]);
    assert_exit(&o, 0);
    // The interrupted dispatch ran again; nothing else ran twice.
    assert_eq!(wf.calls("component-builder"), 2);
    assert_eq!(wf.calls("code-reviewer"), 1);
}

/// On a terminal `baton run` asks before a full BUILD whether to work in a worktree.
fn run_on_a_terminal(wf: &Wf, answer: &str) -> (std::process::Output, String) {
    use std::io::Write;
    use std::process::Stdio;
    let pty = baton_testkit::pty::Pty::open(120, 40).unwrap();
    let screen = pty.start_reader().unwrap();
    let child = wf
        .sb
        .baton(&["run", "add a feature file"])
        .stdin(pty.slave().unwrap())
        .stdout(Stdio::piped())
        .stderr(pty.slave().unwrap())
        .spawn()
        .unwrap();
    let mut master = pty.close_slave();
    // The terminal holds the line until baton reads it.
    master.write_all(answer.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    drop(master);
    (out, screen.text())
}

#[test]
fn on_a_terminal_the_worktree_offer_is_asked() {
    let wf = Wf::new();
    wf.happy();
    let (o, said) = run_on_a_terminal(&wf, "n\n");
    assert_exit(&o, 0);
    assert!(said.contains("isolated git worktree"), "{said}");
    assert!(wf.sb.work().join("feature.txt").exists());
    assert_eq!(wf.snapshot()["run"]["worktree_offer"], "declined");

    let wf = Wf::new();
    wf.happy();
    let (o, _) = run_on_a_terminal(&wf, "\n");
    assert_exit(&o, 4);
    assert_eq!(wf.snapshot()["run"]["worktree_offer"], "accepted");
    assert_eq!(wf.snapshot()["checkpoint"]["gate"], "finish");
}

#[test]
fn a_read_only_role_that_edits_a_tracked_file_stops_the_workflow_but_build_output_is_fine() {
    let wf = Wf::new();
    wf.happy().answer(
        "integration-verifier",
        &format!("mkdir -p target && echo built > target/out.bin\n{VERIFY_PASS}"),
    );
    assert_exit(&wf.run(&["run", "add a feature file"]), 0);

    let wf = Wf::new();
    wf.happy().answer(
        "integration-verifier",
        &format!("echo tampered >> README\n{VERIFY_PASS}"),
    );
    let o = wf.run(&["run", "add a feature file"]);
    assert_exit(&o, 1);
    assert!(
        out(&o).contains("(integration-verifier) changed tracked files of the project"),
        "{}",
        out(&o)
    );
    assert_eq!(wf.calls("doc-syncer"), 0);
}

/// A crash between the record's first event and its task graph: resume makes the graph and runs.
#[test]
fn a_record_without_its_task_graph_is_resumed_from_the_start() {
    use baton_workflow::route::WorkflowKind;
    use baton_workflow::store::WorkflowStore;
    let wf = Wf::new();
    wf.happy();
    let store = WorkflowStore::new(baton_state::StateDir::for_project(&wf.sb.work()));
    let id = store
        .create(WorkflowKind::Build, "add a feature file")
        .unwrap()
        .id()
        .to_string();
    let o = wf.run(&["resume"]);
    assert_exit(&o, 0);
    assert_eq!(wf.id(), id);
    // Reviewer and hunter run together; their order is whichever started first.
    baton_testkit::assert_full_build(wf.dispatched());
}

/// Two `baton run` in one working tree: while the first runs (its builder waits on a file), a
/// second is refused with exit 2 naming the first's workflow and pid, and records nothing. A run
/// killed with SIGKILL leaves the tree to the next one, and a run that ended releases it.
#[test]
fn a_second_run_in_the_same_working_tree_is_refused_naming_the_first() {
    let wf = Wf::new();
    wf.happy();
    let started = wf.scripts.join("builder.started");
    let release = wf.scripts.join("release");
    wf.answer_nth(
        "component-builder",
        1,
        &format!(
            "touch {started}\nwhile [ ! -f {release} ]; do sleep 0.01; done\n{BUILDER_PASS}",
            started = started.display(),
            release = release.display()
        ),
    );
    let mut first = wf.sb.spawn(&["run", "add a feature file"]);
    assert!(
        wait_until(Duration::from_secs(30), || started.is_file()),
        "the first run's builder did not start"
    );
    let id = wf.id();
    for request in ["add another feature file", "fix the failing test"] {
        let second = wf.run(&["run", request]);
        assert_exit(&second, 2);
        let e = err(&second);
        assert!(
            e.contains("another workflow works in this working tree"),
            "{e}"
        );
        assert!(
            e.contains(&format!("workflow {id}, pid {}", first.id())),
            "{e}"
        );
        // Nothing was recorded for it: the first is still the only workflow.
        assert_eq!(wf.id(), id);
    }
    let json = wf.run(&["run", "add another feature file", "--json"]);
    assert_exit(&json, 2);
    let doc: Value = serde_json::from_str(out(&json).trim()).unwrap();
    assert_eq!(doc["type"], "workflow.error", "{doc}");
    assert!(doc["message"].as_str().unwrap().contains(&id), "{doc}");

    // Killed: the lock goes with it, and the next run takes the tree over.
    first.kill().unwrap();
    first.wait().unwrap();
    let next = wf.run(&["run", "add another feature file"]);
    assert_exit(&next, 0);
    // Ended: released too.
    let last = wf.run(&["run", "add a third feature file"]);
    assert_exit(&last, 0);
    assert_eq!(wf.calls("component-builder"), 3);
}

#[test]
fn a_role_file_the_builder_rewrote_is_not_trusted_by_the_next_dispatch() {
    let wf = Wf::new();
    wf.happy();
    let marker = wf.sb.path("planted-reviewer-ran");
    wf.answer("component-builder", &planting_builder(&marker));
    let o = wf.run(&["run", "add a feature file"]);
    assert_exit(&o, 1);
    // The trust recorded for the project no longer matches its role files: every project role
    // that widens what runs is refused, the planted one first among them.
    assert!(!marker.exists(), "the planted reviewer ran");
    assert!(err(&o).contains("only in a trusted project"), "{}", err(&o));
    assert_eq!(wf.calls("code-reviewer"), 0);
}

/// [21/24] Pending work resumes instead of being duplicated (seed 001:168): the same request of
/// the same kind, while its workflow waits at a checkpoint, is refused naming it and how to go on
/// or end it, and nothing runs; another request starts with a note naming the unfinished one;
/// once that one is ended, the same words start anew.
#[test]
fn the_same_request_while_its_workflow_waits_is_refused_naming_it() {
    let (wf, id) = Wf::at_scope_checkpoint();
    let builders = wf.calls("component-builder");
    let o = wf.run(&["run", "add  a FEATURE file"]);
    assert_exit(&o, 2);
    assert!(
        err(&o).contains(&format!(
            "workflow {id} (BUILD, checkpoint) was asked the same and is not finished: `baton resume {id}` goes on with it (`baton resume {id} --answer abort` ends it)"
        )),
        "{}",
        err(&o)
    );
    assert_eq!(wf.calls("component-builder"), builders, "nothing ran");
    // Another request: it runs, and the unfinished one is named.
    let o = wf.run(&["run", "add a second feature"]);
    assert!(
        err(&o).contains(&format!(
            "unfinished, and not this request: {id} (checkpoint: add a feature file)"
        )),
        "{}",
        err(&o)
    );
    // Ended, the same words start a workflow of their own.
    assert_exit(&wf.run(&["resume", &id, "--answer", "abort"]), 1);
    let o = wf.run(&["run", "add a feature file"]);
    assert!(!err(&o).contains("was asked the same"), "{}", err(&o));
    let records = std::fs::read_dir(wf.sb.work().join(".baton/state/workflows"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".events.jsonl")
        })
        .count();
    assert_eq!(records, 3, "a third workflow of its own");
}

/// `--record` and `--replay` record and replay the model calls made where baton runs; on
/// Temporal those are made on the nodes: refused before anything starts, saying why.
#[test]
fn record_and_replay_are_refused_on_temporal_before_anything_starts() {
    let wf = Wf::new();
    wf.happy();
    let dir = wf.sb.path("recording");
    std::fs::create_dir_all(&dir).unwrap();
    for flag in ["--record", "--replay"] {
        let o = wf.run(&[
            "run",
            "--engine",
            "temporal",
            flag,
            dir.to_str().unwrap(),
            "add a feature file",
        ]);
        assert_exit(&o, 2);
        assert!(
            err(&o).contains("--record and --replay run with the local engine only (on Temporal the agents' model calls are made on the worker nodes"),
            "{}",
            err(&o)
        );
    }
    assert_eq!(wf.calls("component-builder"), 0);
    assert!(std::fs::read_dir(&dir).unwrap().next().is_none());
    assert!(
        !wf.sb.work().join(".baton/state/workflows").exists()
            || std::fs::read_dir(wf.sb.work().join(".baton/state/workflows"))
                .unwrap()
                .next()
                .is_none()
    );
}
