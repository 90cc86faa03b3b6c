//! `baton run --plan FILE` and `baton plan check|approve` end to end: the real binary, real git,
//! scripted roles (see `common::workflow`). A three-phase plan builds one phase at a time, each
//! reviewer told its own phase's base; a plan with an open decision, or edited after its
//! approval, is refused before anything is dispatched.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::new_without_default)]

mod common;

use baton_testkit::fixture::assert_exit;
use common::workflow::*;

/// A builder that changes a tracked file too, so that each phase's base is its own commit.
const BUILDER_TRACKED: &str = concat!(
    r#"echo "change $n" >> feature.txt
echo "phase change $n" >> README
cat <<'EOF'
"#,
    baton_testkit::contract!(BUILDER_PASS),
    "EOF\n"
);

/// The sha a prompt's `## Base` section names.
fn base_of(prompt: &str) -> String {
    let at = prompt.find("This phase began at `").expect("a base") + "This phase began at `".len();
    prompt[at..].split('`').next().unwrap().to_string()
}

#[test]
fn a_three_phase_plan_builds_phase_by_phase_with_each_phase_s_base_and_a_final_review() {
    let wf = Wf::new();
    wf.happy()
        .answer("component-builder", BUILDER_TRACKED)
        .answer_nth("code-reviewer", 2, REVIEW_CRITICAL);
    wf.sb.write("docs/plans/parts.md", &plan_text(3, "None"));
    wf.sb.commit_all("the plan");
    let check = wf.run(&["plan", "check", "docs/plans/parts.md"]);
    assert_exit(&check, 0);
    assert!(out(&check).starts_with("plan docs/plans/parts.md: execution_plan, standard rigor, 3 phases\n  phase-1 Part 1 — exit: feature.txt has part 1\n"), "{}", out(&check));
    assert!(out(&check).contains("not approved yet"), "{}", out(&check));

    let o = wf.run(&["run", "--plan", "docs/plans/parts.md", "--no-worktree"]);
    assert_exit(&o, 4);
    assert!(err(&o).contains("checkpoint final_review"), "{}", err(&o));
    // One builder per phase, and one fix in phase 2.
    assert_eq!(wf.calls("component-builder"), 4);
    for (n, phase) in [(1, 1), (2, 2), (3, 2), (4, 3)] {
        assert!(
            wf.prompt("component-builder", n)
                .contains(&format!("Phase {phase} of 3: `phase-{phase}`")),
            "builder call {n}"
        );
    }
    // Each reviewer is told its phase's base: a real commit, a new one each phase; the
    // re-review of phase 2 keeps phase 2's.
    assert_eq!(wf.calls("code-reviewer"), 4);
    let bases: Vec<String> = (1..=4)
        .map(|n| base_of(&wf.prompt("code-reviewer", n)))
        .collect();
    assert_ne!(bases[0], bases[1]);
    assert_eq!(bases[1], bases[2]);
    assert_ne!(bases[2], bases[3]);
    for b in &bases {
        let t = wf.sb.git(&["cat-file", "-t", b]);
        assert_eq!(t.trim(), "commit", "{b}");
    }
    // Phase 3's base holds phase 2's change: its review does not see it again.
    let shown = wf.sb.git(&["show", &format!("{}:README", bases[3])]);
    assert!(shown.contains("phase change 3"), "{shown}");
    let events = wf.events();
    let cursor_moves: Vec<String> = events
        .iter()
        .filter_map(|e| e["delta"].get("phase_cursor"))
        .map(|c| c.as_str().unwrap_or("null").to_string())
        .collect();
    // The record starts with no cursor (its first event has none); it moves only when a
    // phase verified.
    assert_eq!(cursor_moves, ["phase-1", "phase-2", "phase-3", "null"]);

    for (i, e) in events.iter().enumerate().skip(2) {
        if e["delta"].get("phase_cursor").is_some() {
            let last_agent = events[..i]
                .iter()
                .rev()
                .find(|e| e["event"] == "agent_completed")
                .unwrap();
            assert_eq!(last_agent["phase"], "build-verify", "{e}");
        }
    }
    // The final review reads the whole branch: from the first phase's base.
    let o = wf.run(&["resume", "--answer", "run"]);
    assert_exit(&o, 0);
    assert!(out(&o).contains("proof: passed"), "{}", out(&o));
    assert_eq!(wf.calls("code-reviewer"), 5);
    let last = wf.prompt("code-reviewer", 5);
    assert!(last.contains("Final whole-branch review"), "{last}");
    assert_eq!(base_of(&last), bases[0]);
    let snap = wf.snapshot();
    assert_eq!(snap["results"]["final_branch_review"]["status"], "clean");
    assert_eq!(snap["plan_file"], "docs/plans/parts.md");
}

#[test]
fn a_plan_with_an_open_decision_or_edited_after_approval_is_refused_before_any_dispatch() {
    let wf = Wf::new();
    wf.happy();
    wf.sb.write("plan.md", &plan_text(2, "- CSV or JSON?"));
    let o = wf.run(&["run", "--plan", "plan.md", "--no-worktree"]);
    assert_exit(&o, 2);
    assert!(
        err(&o).contains("plan")
            && err(&o).contains("open decision \"CSV or JSON?\" is not made: decide it"),
        "{}",
        err(&o)
    );
    let check = wf.run(&["plan", "check", "plan.md"]);
    assert_exit(&check, 2);
    assert!(err(&check).contains("open decision"), "{}", err(&check));
    // Without acceptance criteria as well: every problem on a line of its own.
    wf.sb.write(
        "bare.md",
        &plan_text(2, "- CSV or JSON?")
            .replace("## Acceptance Criteria\n- every part is built\n\n", ""),
    );
    let check = wf.run(&["plan", "check", "bare.md"]);
    assert_exit(&check, 2);
    let text = err(&check);
    assert!(!text.contains('\u{FFFD}'), "{text}");
    assert!(
        text.lines().any(|l| l
            .trim_start()
            .starts_with("- `## Acceptance Criteria` is missing"))
            && text
                .lines()
                .any(|l| l.trim_start().starts_with("- open decision")),
        "{text}"
    );

    wf.sb.write("plan.md", &plan_text(2, "- [x] CSV"));
    let o = wf.run(&["plan", "approve", "plan.md"]);
    assert_exit(&o, 0);
    assert!(
        out(&o).contains("build it with `baton run --plan plan.md`"),
        "{}",
        out(&o)
    );
    wf.sb.write("plan.md", &plan_text(2, "- [x] JSON"));
    let o = wf.run(&["run", "--plan", "plan.md", "--no-worktree"]);
    assert_exit(&o, 2);
    assert!(
        err(&o).contains("plan plan.md changed since it was approved")
            && err(&o).contains("baton plan approve plan.md"),
        "{}",
        err(&o)
    );
    let check = wf.run(&["plan", "check", "plan.md"]);
    assert_exit(&check, 0);
    assert!(
        out(&check).contains("changed since it was approved"),
        "{}",
        out(&check)
    );
    // Nothing was dispatched and no workflow was recorded.
    assert_eq!(wf.calls("component-builder"), 0);
    assert!(
        !wf.sb.work().join(".baton/state/workflows").exists()
            || std::fs::read_dir(wf.sb.work().join(".baton/state/workflows"))
                .unwrap()
                .next()
                .is_none()
    );
}

/// The project's test suite is `sh tests.sh` with this script, committed with the config.
fn with_suite(wf: &Wf, script: &str) {
    wf.sb.write("tests.sh", script);
    wf.sb.write(
        ".baton/config.toml",
        "[workflow]\ntest_command = \"sh tests.sh\"\n",
    );
    wf.sb.commit_all("a suite");
}

/// A suite with one test failing before the build: the BUILD (whose verifier even re-runs the
/// whole suite as its scenario) completes, the failure listed as pre-existing.
#[test]
fn a_test_failing_before_the_build_is_listed_as_pre_existing_and_the_build_completes() {
    let wf = Wf::new();
    wf.happy();
    let verify = VERIFY_PASS.replace("test -f feature.txt", "sh tests.sh");
    wf.answer("integration-verifier", &verify);
    with_suite(&wf, "echo 'running 2 tests'\necho 'test math::add ... ok'\necho 'test math::div ... FAILED'\nexit 101\n");
    let o = wf.run(&["run", "add a feature file", "--no-worktree"]);
    assert_exit(&o, 0);
    assert!(
        out(&o).contains(
            "pre-existing failures (failing before the build, not blamed on it): math::div"
        ),
        "{}",
        out(&o)
    );
    assert!(
        err(&o).contains("baseline: 1 test already fails before the build (math::div)"),
        "{}",
        err(&o)
    );
    let snap = wf.snapshot();
    assert_eq!(
        snap["results"]["baseline"]["failures"],
        serde_json::json!(["math::div"])
    );
    // The verifier's checks (the builder's scenario was checked too, before them).
    let checks = snap["run"]["outputs"]
        .as_object()
        .unwrap()
        .values()
        .filter(|o| o["role"] == "integration-verifier")
        .find_map(|o| {
            o.get("host_checks")
                .filter(|c| !c.as_array().unwrap().is_empty())
        })
        .unwrap()
        .clone();
    assert_eq!(checks[0]["command"], "sh tests.sh");
    assert_eq!(checks[0]["exit_code"], 101);
    assert_eq!(checks[0]["ok"], true);
    assert_eq!(checks[0]["preexisting"], serde_json::json!(["math::div"]));
    assert!(wf
        .prompt("integration-verifier", 1)
        .contains("already had these tests failing: math::div"));
}

/// The same suite after a builder broke a test that passed: the host's re-run names it.
#[test]
fn a_test_the_build_broke_stops_the_workflow_naming_it() {
    let wf = Wf::new();
    wf.happy();
    wf.answer(
        "component-builder",
        &BUILDER_PASS.replace(
            "echo \"change $n\" >> feature.txt",
            "echo \"change $n\" >> feature.txt\nsed -i 's/math::add ... ok/math::add ... FAILED/' tests.sh",
        ),
    );
    with_suite(
        &wf,
        "echo 'test math::add ... ok'\necho 'test math::div ... FAILED'\nexit 101\n",
    );
    let o = wf.run(&["run", "add a feature file", "--no-worktree"]);
    assert_exit(&o, 1);
    assert!(
        err(&o).contains(
            "`sh tests.sh` exits 101 with tests failing that passed before the build: math::add"
        ),
        "{}",
        err(&o)
    );
}

/// A suite that reads the project's own tree: `local.flag` there breaks a test.
const SUITE_READING_THE_TREE: &str = "echo 'test math::div ... FAILED'\nif [ -f local.flag ]; then echo 'test local::flag ... FAILED'; else echo 'test local::flag ... ok'; fi\nexit 101\n";

fn worktree_build_with_a_suite(wf: &Wf) -> String {
    wf.happy();
    with_suite(wf, SUITE_READING_THE_TREE);
    let o = wf.run(&["run", "--worktree", "add a feature file"]);
    assert_exit(&o, 4);
    assert!(
        out(&o).contains("merge | keep | pr | discard"),
        "{}",
        out(&o)
    );
    wf.id()
}

/// cc10x's merge-then-cleanup order: the suite runs on the merged tree before the worktree and
/// the branch go; green (only the baseline's failure), both are removed.
#[test]
fn merge_runs_the_suite_on_the_merged_tree_before_removing_anything() {
    let wf = Wf::new();
    let id = worktree_build_with_a_suite(&wf);
    let o = wf.run(&["resume", &id, "--answer", "merge"]);
    assert_exit(&o, 0);
    assert!(
        out(&o).contains("`sh tests.sh` on the merged tree fails only where it failed before (math::div); the worktree and the branch are removed"),
        "{}",
        out(&o)
    );
    assert!(wf.sb.work().join("feature.txt").exists());
    assert_eq!(wf.sb.git(&["branch", "--list", "baton/*"]).trim(), "");
    // cc10x: the choice persisted in the artifact, then `build_finished`, then memory.
    assert_eq!(wf.snapshot()["results"]["finishing"]["choice"], "merge");
    let kinds: Vec<String> = wf
        .events()
        .iter()
        .map(|e| e["event"].as_str().unwrap_or("").to_string())
        .collect();
    let finished = kinds
        .iter()
        .position(|k| k == "build_finished")
        .expect("build_finished");
    let memory = kinds.iter().position(|k| k == "memory_finalized").unwrap();
    assert!(finished < memory, "{kinds:?}");
    let ev = &wf.events()[finished];
    assert_eq!(ev["decision"], "merge", "{ev}");
}

/// A new failure on the merged tree: the merge stays, the worktree and the branch are kept.
#[test]
fn a_merge_that_breaks_the_merged_tree_keeps_the_worktree_and_the_branch() {
    let wf = Wf::new();
    let id = worktree_build_with_a_suite(&wf);
    wf.sb.write("local.flag", "the user's own local state\n");
    let o = wf.run(&["resume", &id, "--answer", "merge"]);
    assert_exit(&o, 0);
    assert!(
        out(&o).contains(
            "but on the merged tree `sh tests.sh` has new failures: local::flag: the worktree"
        ),
        "{}",
        out(&o)
    );
    assert!(wf.sb.git(&["branch", "--list", "baton/*"]).contains(&id));
    let wt = wf.snapshot()["run"]["worktree"]["path"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(std::path::Path::new(&wt).exists());
}

/// A bare repository beside the project, added as its `origin`; its path.
fn origin(wf: &Wf) -> String {
    let remote = wf.sb.path("remote.git");
    let init = std::process::Command::new("git")
        .args(["init", "-q", "--bare"])
        .arg(&remote)
        .status()
        .unwrap();
    assert!(init.success());
    let url = remote.to_str().unwrap().to_string();
    wf.sb.git(&["remote", "add", "origin", &url]);
    url
}

/// `merge` pulls the base first when it follows a remote branch (cc10x: check out the base, pull,
/// merge): a teammate's commit pushed meanwhile is pulled, and the workflow's branch, now behind
/// it, is not merged over it; the question stays.
#[test]
fn merge_pulls_the_base_branch_first() {
    let wf = Wf::new();
    let id = worktree_build_with_a_suite(&wf);
    let url = origin(&wf);
    let url = url.as_str();
    wf.sb.git(&["push", "-q", "-u", "origin", "main"]);
    let teammate = wf.sb.path("teammate");
    wf.sb
        .git(&["clone", "-q", "-b", "main", url, teammate.to_str().unwrap()]);
    std::fs::write(teammate.join("theirs.txt"), "a teammate's file\n").unwrap();
    wf.sb.git_in(&teammate, &["add", "theirs.txt"]);
    wf.sb
        .git_in(&teammate, &["commit", "-q", "-m", "a teammate's change"]);
    wf.sb.git_in(&teammate, &["push", "-q", "origin", "main"]);
    let o = wf.run(&["resume", &id, "--answer", "merge"]);
    assert_exit(&o, 2);
    assert!(err(&o).contains("moved on"), "{}", err(&o));
    assert_eq!(wf.sb.subjects("main")[0], "a teammate's change");
    assert!(wf.sb.work().join("theirs.txt").exists());
    assert!(wf.sb.git(&["branch", "--list", "baton/*"]).contains(&id));
    assert_eq!(wf.snapshot()["checkpoint"]["gate"], "finish");
}

/// `pr` pushes the branch (never forced) and keeps the worktree.
#[test]
fn pr_pushes_the_branch_and_keeps_the_worktree() {
    let wf = Wf::new();
    origin(&wf);
    let id = worktree_build_with_a_suite(&wf);
    let o = wf.run(&["resume", &id, "--answer", "pr"]);
    assert_exit(&o, 0);
    assert!(
        out(&o).contains(&format!("pushed branch baton/{id} to origin")),
        "{}",
        out(&o)
    );
    let pushed = wf.sb.git(&["ls-remote", "origin"]);
    assert!(
        pushed.contains(&format!("refs/heads/baton/{id}")),
        "{pushed}"
    );
    let wt = wf.snapshot()["run"]["worktree"]["path"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(std::path::Path::new(&wt).exists());
}

/// A fresh worktree gets its dependencies installed (here the project's own, trusted
/// `workflow.install`) before the baseline run; in place nothing is installed.
#[test]
fn a_fresh_worktree_is_installed_before_the_baseline() {
    let wf = Wf::new();
    wf.happy();
    wf.sb.write("tests.sh", "echo 'test a ... ok'\n");
    wf.sb.write(
        ".baton/config.toml",
        "[workflow]\ntest_command = \"sh tests.sh\"\ninstall = \"echo deps > installed.txt\"\n",
    );
    wf.sb.commit_all("a suite and an install step");
    let o = wf.run(&["run", "--worktree", "add a feature file"]);
    assert_exit(&o, 4);
    assert!(
        err(&o).contains("installing dependencies: echo deps > installed.txt"),
        "{}",
        err(&o)
    );
    let snap = wf.snapshot();
    assert_eq!(snap["results"]["deps"]["status"], "installed");
    assert_eq!(snap["results"]["baseline"]["status"], "recorded");
    let wt = snap["run"]["worktree"]["path"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(std::path::Path::new(&wt).join("installed.txt").is_file());
    // In place: the tree's dependencies are the user's.
    let wf = Wf::new();
    wf.happy();
    wf.sb.write(
        ".baton/config.toml",
        "[workflow]\ninstall = \"echo deps > installed.txt\"\n",
    );
    wf.sb.commit_all("an install step");
    assert_exit(&wf.run(&["run", "--no-worktree", "add a feature file"]), 0);
    assert_eq!(wf.snapshot()["results"]["deps"]["status"], "skipped");
    assert!(!wf.sb.work().join("installed.txt").exists());
}

/// The files a reviewer's prompt says its change touches (`STATUS\tPATH` lines), if it says.
fn files_listed(prompt: &str) -> Option<Vec<String>> {
    let mark = "The files it changes:\n```\n";
    let at = prompt.find(mark)? + mark.len();
    let list = prompt[at..].split("\n```").next()?;
    Some(list.lines().map(str::to_string).collect())
}

/// Each phase's reviewer reads that phase's change only: phases that add new files get bases of
/// their own (the tree after the previous phase, new files included), in place and in a
/// worktree, and a file the user had before the build is never presented as the change.
#[test]
fn each_phase_s_review_reads_only_the_files_that_phase_added() {
    for isolation in ["--no-worktree", "--worktree"] {
        let wf = Wf::new();
        let builder = BUILDER_PASS.replace(
            "echo \"change $n\" >> feature.txt",
            "echo \"part $n\" > part$n.txt",
        );
        wf.happy().answer("component-builder", &builder);
        wf.sb.write("docs/plans/parts.md", &plan_text(3, "None"));
        // What the plan's checks look for, there from the start.
        wf.sb.write("feature.txt", "the feature\n");
        wf.sb.commit_all("the plan");
        wf.sb
            .write("scratch.txt", "the user's own notes, never committed\n");
        let o = wf.run(&["run", "--plan", "docs/plans/parts.md", isolation]);
        assert_exit(&o, 4);
        assert!(err(&o).contains("checkpoint final_review"), "{}", err(&o));
        assert_eq!(wf.calls("code-reviewer"), 3, "{isolation}");
        let mut bases = Vec::new();
        for n in 1..=3 {
            let prompt = wf.prompt("code-reviewer", n);
            let files = files_listed(&prompt)
                .unwrap_or_else(|| panic!("{isolation}: reviewer {n} got no file list:\n{prompt}"));
            assert_eq!(files, [format!("A\tpart{n}.txt")], "{isolation}: phase {n}");
            bases.push(base_of(&prompt));
        }
        assert_ne!(bases[0], bases[1], "{isolation}");
        assert_ne!(bases[1], bases[2], "{isolation}");
        // The scratch file is where it was, unchanged and uncommitted.
        assert_eq!(
            std::fs::read_to_string(wf.sb.work().join("scratch.txt")).unwrap(),
            "the user's own notes, never committed\n"
        );
        let status = wf.sb.git(&["status", "--porcelain", "--", "scratch.txt"]);
        assert_eq!(status.trim(), "?? scratch.txt", "{isolation}");
    }
}

/// cc10x's opt-in pilot of a fresh builder per task: a phase of three separable tasks gets a
/// builder, a base and a review per task, each review reading that task's files only; the phase's
/// own checks go with its last task. A phase that does not meet the trigger is refused by name.
#[test]
fn a_phase_marked_fresh_builder_per_task_builds_and_reviews_each_task_on_its_own() {
    let wf = Wf::new();
    let builder = BUILDER_PASS.replace(
        "echo \"change $n\" >> feature.txt",
        "echo \"part $n\" > part$n.txt",
    );
    wf.happy().answer("component-builder", &builder);
    let tasks = |files: [&str; 3]| {
        files
            .iter()
            .enumerate()
            .map(|(k, f)| format!("    - title: part {}\n      files: [{f}]\n", k + 1))
            .collect::<String>()
    };
    let plan = |tasks: String| {
        plan_text(1, "None").replace(
            "  test_seams: [feature.txt]\n",
            &format!(
                "  test_seams: [feature.txt]\n  fresh_builder_per_task: true\n  tasks:\n{tasks}"
            ),
        )
    };
    // Two tasks touching one file are not separable: refused before anything runs.
    wf.sb.write(
        "docs/plans/shared.md",
        &plan(tasks(["part1.txt", "part2.txt", "part1.txt"])),
    );
    wf.sb.write(
        "docs/plans/parts.md",
        &plan(tasks(["part1.txt", "part2.txt", "part3.txt"])),
    );
    wf.sb.write("feature.txt", "the feature\n");
    wf.sb.commit_all("the plans");
    let o = wf.run(&["run", "--plan", "docs/plans/shared.md", "--no-worktree"]);
    assert_exit(&o, 2);
    assert!(
        err(&o).contains("tasks 1 and 3 both touch part1.txt"),
        "{}",
        err(&o)
    );
    assert_eq!(wf.calls("component-builder"), 0);

    let o = wf.run(&["plan", "check", "docs/plans/parts.md"]);
    assert!(
        out(&o).contains("3 phases (each task of a phase built per task is one)\n  phase-1-t1 "),
        "{}",
        out(&o)
    );
    let o = wf.run(&["run", "--plan", "docs/plans/parts.md", "--no-worktree"]);
    assert_exit(&o, 4);
    assert!(err(&o).contains("checkpoint final_review"), "{}", err(&o));
    assert_eq!(wf.calls("component-builder"), 3);
    assert_eq!(wf.calls("code-reviewer"), 3);
    for n in 1..=3u32 {
        let brief = wf.prompt("component-builder", n);
        assert!(
            brief.contains(&format!("task {n} of 3 of phase phase-1")),
            "builder {n}:\n{brief}"
        );
        let prompt = wf.prompt("code-reviewer", n);
        let files = files_listed(&prompt)
            .unwrap_or_else(|| panic!("reviewer {n} got no file list:\n{prompt}"));
        assert_eq!(files, [format!("A\tpart{n}.txt")], "task {n}");
    }
    let phases: Vec<String> = wf.snapshot()["normalized_phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["phase_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(phases, ["phase-1-t1", "phase-1-t2", "phase-1-t3"]);
}

/// A planned phase's work is compared with its scope (seed 001:572-576): a file the builder
/// changed outside the phase's files is named to the reviewer, and a builder that says the phase
/// is done without the plan's expected artifact is not believed.
#[test]
fn a_phase_s_work_is_compared_with_its_planned_files_and_expected_artifacts() {
    let wf = Wf::new();
    let stray = BUILDER_PASS.replace(
        "echo \"change $n\" >> feature.txt",
        "echo \"change $n\" >> feature.txt\necho stray > stray.txt",
    );
    wf.happy().answer("component-builder", &stray);
    wf.sb.write("docs/plans/one.md", &plan_text(1, "None"));
    wf.sb.write("feature.txt", "the feature\n");
    wf.sb.commit_all("the plans");
    let o = wf.run(&["run", "--plan", "docs/plans/one.md", "--no-worktree"]);
    assert_exit(&o, 0);
    let review = wf.prompt("code-reviewer", 1);
    let note = "Outside the phase's planned files (say whether each belongs to the phase's objective, or is a finding):\n```\nstray.txt\n```";
    assert!(review.contains(note), "{review}");

    let wf = Wf::new();
    wf.happy();
    // The phase names docs/ as its files; of its expected artifacts only docs/export.md is a file
    // of the phase.
    let plan = plan_text(1, "None")
        .replace("files: [feature.txt]", "files: [feature.txt, docs/]")
        .replace(
            "  test_seams: [feature.txt]\n",
            "  test_seams: [feature.txt]\n  expected_artifacts: [docs/export.md, dist/app.js, N/A, a summary for the user]\n",
        );
    wf.sb.write("docs/plans/artifact.md", &plan);
    wf.sb.write("feature.txt", "the feature\n");
    wf.sb.commit_all("the plan");
    let o = wf.run(&["run", "--plan", "docs/plans/artifact.md", "--no-worktree"]);
    let said = format!("{}{}", out(&o), err(&o));
    assert!(
        said.contains("test -e docs/export.md (an expected artifact of phase phase-1)"),
        "{said}"
    );
    // Prose, and a file outside the phase's own files (a build output), are the verifier's.
    for not_checked in ["test -e a summary", "test -e dist/app.js", "test -e N/A"] {
        assert!(!said.contains(not_checked), "{said}");
    }
    assert_eq!(wf.calls("code-reviewer"), 0);
}
