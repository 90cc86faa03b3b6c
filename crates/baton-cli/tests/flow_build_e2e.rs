//! `baton flow start --workflow build`: a backlog of units, each a whole gated BUILD workflow
//! (builder → reviewer ‖ hunter → verifier, with remediation), run in parallel in their own
//! worktrees and landed in declared order through Flow's rebase / validate / `--ff-only` gate.
//!
//! The real binary in a temp repository whose workflow roles are committed project roles on the
//! `command` backend: one script per role, answering per unit (the BUILD's children see the unit
//! in `BATON_FLOW_UNIT`) and per call, so one unit can need a remediation cycle.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use baton_testkit::fixture::assert_exit;
use common::workflow::*;
use serde_json::Value;

/// The workflows the Flow's units ran, as their records in the project's state.
fn workflow_records(wf: &Wf) -> Vec<(String, Vec<Value>)> {
    let dir = wf.sb.work().join(".baton/state/workflows");
    let mut out = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        if let Some(id) = name.strip_suffix(".events.jsonl") {
            let text = std::fs::read_to_string(dir.join(&name)).unwrap();
            let events = text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            out.push((id.to_string(), events));
        }
    }
    out
}

#[test]
fn three_build_workflows_land_in_declared_order_one_after_a_remediation_cycle() {
    let units = ["alpha", "beta", "gamma"];
    let wf = backlog(&units);
    // beta's first review finds a critical issue: one remediation cycle, then approval.
    std::fs::write(
        wf.scripts.join("beta/code-reviewer.1.sh"),
        REVIEW_CRITICAL.replace("feature.txt", "beta.txt"),
    )
    .unwrap();
    let file = units_file(&wf, &units);
    let o = wf.run(&[
        "flow",
        "start",
        "--workflow",
        "build",
        "--json",
        file.to_str().unwrap(),
    ]);
    assert_exit(&o, 0);
    let doc: Value = serde_json::from_str(out(&o).trim().lines().last().unwrap()).unwrap();
    assert_eq!(doc["flow"]["phase"], "completed", "{doc:#}");

    // Landed in declared order, one commit per unit, each built by its BUILD workflow.
    let subjects = wf.sb.subjects("main");
    assert_eq!(
        &subjects[..3],
        &["add gamma", "add beta", "add alpha"],
        "{subjects:?}"
    );
    for u in units {
        assert!(wf.sb.work().join(format!("{u}.txt")).exists(), "{u}");
    }
    // No unit's memory or state reached main.
    let tracked = wf.sb.git(&["ls-files", ".baton"]);
    assert!(!tracked.contains("memory"), "{tracked}");
    assert!(!tracked.contains("state"), "{tracked}");

    // Three BUILD records, kept in the project's state, each completed through the full graph;
    // beta's went through remediation.
    let records = workflow_records(&wf);
    assert_eq!(
        records.len(),
        3,
        "{:?}",
        records.iter().map(|r| &r.0).collect::<Vec<_>>()
    );
    let mut remediated = 0;
    for (id, events) in &records {
        let phases: Vec<String> = events
            .iter()
            .filter(|e| e["event"] == "agent_started")
            .map(|e| e["phase"].as_str().unwrap().to_string())
            .collect();
        if events.iter().any(|e| e["decision"] == "create_remfix") {
            remediated += 1;
            // The full graph, then the fix and the re-review and re-verification after it.
            assert!(phases.len() > 5, "{id}: {phases:?}");
            assert_eq!(phases.first().map(String::as_str), Some("build-implement"));
            assert!(phases.iter().any(|p| p == "re-review"), "{id}: {phases:?}");
        } else {
            baton_testkit::assert_full_build(phases);
        }
        let log = wf.run(&["log", id]);
        assert_exit(&log, 0);
    }
    // `baton status` in the project lists the three BUILDs, completed.
    let status = wf.run(&["status", "--json"]);
    assert_exit(&status, 0);
    let listed = out(&status);
    for (id, _) in &records {
        assert!(listed.contains(id.as_str()), "{listed}");
    }
    let listed: Value = serde_json::from_str(&listed).unwrap();
    let states: Vec<&Value> = listed["workflows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| &w["run_state"])
        .collect();
    assert_eq!(states, ["completed"; 3], "{listed}");
    assert_eq!(remediated, 1);
    assert_eq!(wf.calls_in("beta", "code-reviewer"), 2);
    assert_eq!(wf.calls_in("alpha", "code-reviewer"), 1);
    // Every unit's worktree is gone after landing.
    assert!(wf.sb.worktrees().is_empty(), "{:?}", wf.sb.worktrees());
}

#[test]
fn two_builds_that_touch_the_same_file_stop_the_flow_at_the_second_with_its_work_kept() {
    let units = ["one", "two"];
    let wf = backlog(&units);
    // Both builders also write the same shared file, differently.
    for u in units {
        let path = wf.scripts.join(format!("{u}/component-builder.sh"));
        let s = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("echo {u} > shared.txt\n{s}")).unwrap();
    }
    // A project whose engine is Temporal, run here with the local one: the units' BUILDs stay
    // local too (there is no Temporal server in this test).
    wf.sb
        .write(".baton/config.toml", "[engine]\nkind = \"temporal\"\n");
    wf.sb.commit_all("engine");
    let file = units_file(&wf, &units);
    let o = wf.run(&[
        "flow",
        "start",
        "--engine",
        "local",
        "--workflow",
        "build",
        "--json",
        file.to_str().unwrap(),
    ]);
    let doc: Value = serde_json::from_str(out(&o).trim().lines().last().unwrap()).unwrap();
    // As for any Flow: the conflicting unit ends it, its worktree and BUILD commit kept for
    // `baton flow land` once the overlap is resolved.
    assert_eq!(doc["flow"]["phase"], "failed", "{doc:#}\n{}", err(&o));
    assert_eq!(doc["flow"]["end"]["kind"], "rebase_conflict", "{doc:#}");
    let message = doc["flow"]["end"]["message"].as_str().unwrap();
    assert!(
        message.contains("conflicting paths: shared.txt"),
        "{message}"
    );
    assert!(message.contains("is kept"), "{message}");
    // The first unit landed; the second waits with its BUILD's commit on its branch.
    assert_eq!(wf.sb.subjects("main")[0], "add one");
    assert_eq!(
        std::fs::read_to_string(wf.sb.work().join("shared.txt")).unwrap(),
        "one\n"
    );
}

/// [22/24] A BUILD in place leaves its change uncommitted and says so; the next `baton flow
/// start`, which needs a clean tree, tells that change apart from others: it names the workflow
/// and its files while the tree holds exactly them, and says nothing of it once they are
/// committed.
#[test]
fn a_build_in_place_leaves_its_change_uncommitted_and_flow_start_names_it() {
    let wf = Wf::new();
    wf.happy();
    let o = wf.run(&["run", "add the feature file"]);
    assert_exit(&o, 0);
    let said = format!("{}{}", out(&o), err(&o));
    assert!(
        said.contains("left uncommitted in the working tree (1 file)"),
        "{said}"
    );
    let id = wf.id();
    let file = units_file(&wf, &["alpha"]);
    let start = || wf.run(&["flow", "start", file.to_str().unwrap()]);
    let o = start();
    assert_exit(&o, 2);
    assert!(
        err(&o).contains(&format!(
            "the working tree holds the change workflow {id} left uncommitted (feature.txt)"
        )),
        "{}",
        err(&o)
    );
    // Something else changed beside it: the plain refusal, listing what is uncommitted.
    wf.sb.write("scratch.txt", "mine\n");
    let o = start();
    assert_exit(&o, 2);
    assert!(!err(&o).contains("left uncommitted"), "{}", err(&o));
    assert!(err(&o).contains("scratch.txt"), "{}", err(&o));
    // Committed: nothing is said of it.
    std::fs::remove_file(wf.sb.work().join("scratch.txt")).unwrap();
    wf.sb.commit_all("the feature");
    let o = start();
    assert!(!err(&o).contains("left uncommitted"), "{}", err(&o));
}
