//! Flow against real git in temp repositories, with `command`-backend implementer and reviewer
//! scripts. No test waits on time: children synchronise through files, and crashes are simulated
//! at exact events with the crash hook.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use baton_flow::event::{BlockReason, FailureKind, UnitOutcome};
use baton_flow::lock::RepoLock;
use baton_flow::state::FlowEnd;
use baton_flow::{
    abandon, continue_flow, land, resume, start, status, CrashHook, CrashMode, FlowError,
    FlowEvent, FlowStatus, FlowStore, Notice, Phase, UnitSpec, UnitStatus, ValidationCommand,
};
use baton_protocol::ModelClass;
use baton_testkit::fixture::rewrite_readme;
use common::{reviewed, unit, Fx};
use pretty_assertions::assert_eq;
use tokio_util::sync::CancellationToken;

async fn run(fx: &Fx, units: &[UnitSpec]) -> FlowStatus {
    start(&fx.env(4), units, &CancellationToken::new())
        .await
        .unwrap()
}

fn kinds(fx: &Fx, id: &str) -> Vec<String> {
    FlowStore::for_repo(&fx.repo())
        .read_records(id)
        .unwrap()
        .into_iter()
        .map(|r| match r.event.unit() {
            Some(u) => format!("{}@{u}", r.event.kind()),
            None => r.event.kind().to_string(),
        })
        .collect()
}

fn count(list: &[String], item: &str) -> usize {
    list.iter().filter(|l| l.as_str() == item).count()
}

fn with_validation(mut u: UnitSpec, command: &str, args: &[&str]) -> UnitSpec {
    u.validation = vec![ValidationCommand {
        command: command.into(),
        args: args.iter().map(|s| s.to_string()).collect(),
    }];
    u
}

fn block_of(s: &FlowStatus, unit: &str) -> (BlockReason, u32, String) {
    let u = &s.state.units[s.state.unit_index(unit).unwrap()];
    let b = u.block.clone().unwrap();
    (b.reason, b.attempt, b.evidence)
}

fn failure(s: &FlowStatus) -> (FailureKind, Option<String>, String) {
    match &s.state.end {
        Some(FlowEnd::Failed {
            kind,
            unit,
            message,
        }) => (*kind, unit.clone(), message.clone()),
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn happy_path_integrates_in_declared_order_and_rebases_onto_advanced_main() {
    let fx = Fx::new();
    fx.roles.reviewer("b", None, "printf ' PASS\\n'\n");
    let s = run(
        &fx,
        &[
            unit("a"),
            reviewed("b", "b.txt holds the unit id"),
            unit("c"),
        ],
    )
    .await;
    assert_eq!(
        s.phase,
        Phase::Completed,
        "{}",
        baton_flow::render::report(&s)
    );
    assert_eq!(fx.subjects(), ["unit c", "unit b", "unit a", "initial"]);
    assert_eq!(fx.main().run(["rev-list", "--merges", "main"]).unwrap(), "");
    assert!(fx.clean());
    assert_eq!(fx.worktrees(), Vec::<PathBuf>::new());
    assert_eq!(fx.branches(), ["main"]);
    for f in ["a.txt", "b.txt", "c.txt"] {
        assert!(fx.repo().join(f).is_file(), "{f}");
    }
    let statuses: Vec<UnitStatus> = s.state.units.iter().map(|u| u.status).collect();
    assert_eq!(statuses, [UnitStatus::Integrated; 3]);
    let mut calls = fx.roles.calls();
    calls.sort();
    assert_eq!(calls, ["impl a 0", "impl b 0", "impl c 0", "review b 0"]);

    let k = kinds(&fx, &s.state.id);
    // Only the units after the first needed a rebase.
    assert_eq!(count(&k, "unit.rebasing@a"), 0);
    assert_eq!(count(&k, "unit.rebasing@b"), 1);
    assert_eq!(count(&k, "unit.rebasing@c"), 1);
    // Every worktree existed before the first implementer started.
    let last_created = k
        .iter()
        .rposition(|e| e.starts_with("unit.worktree_created"))
        .unwrap();
    let first_impl = k
        .iter()
        .position(|e| e.starts_with("unit.implementer_started"))
        .unwrap();
    assert!(last_created < first_impl, "{k:?}");
    // Integration in declared order.
    let merged: Vec<&String> = k.iter().filter(|e| e.starts_with("unit.merged")).collect();
    assert_eq!(merged, ["unit.merged@a", "unit.merged@b", "unit.merged@c"]);

    // The reviewer got the exact packet and the criterion.
    let b = &s.state.units[1];
    let packet = fx.roles.task_text("review", "b", 0);
    assert!(packet.contains("b.txt holds the unit id"), "{packet}");
    assert!(packet.contains(b.base.as_deref().unwrap()), "{packet}");
    assert!(packet.contains(b.tip.as_deref().unwrap()), "{packet}");
    // The record keeps the patch; the reviewer was given its own copy in the unit's worktree.
    let patch = b.patch_path.clone().unwrap();
    let given = b
        .path
        .clone()
        .unwrap()
        .join(".baton/state/review/b-0.patch");
    assert!(packet.contains(&given.display().to_string()), "{packet}");
    let expected = fx
        .main()
        .diff(b.base.as_deref().unwrap(), b.tip.as_deref().unwrap())
        .unwrap();
    assert_eq!(std::fs::read(&patch).unwrap(), expected);

    // Status from a fresh reader, and the snapshot.
    let listed = status(&fx.repo(), None, &[]).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].phase, Phase::Completed);
    assert_eq!(listed[0].state, s.state);
    let snap: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            FlowStore::for_repo(&fx.repo())
                .snapshot_path(&s.state.id)
                .unwrap(),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(snap["id"], s.state.id.as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn implementers_really_run_at_the_same_time() {
    // Each implementer waits until the other has started: only parallel execution can finish.
    let fx = Fx::new();
    let d = fx.roles.dir();
    for (me, other) in [("a", "b"), ("b", "a")] {
        fx.roles.implementer(
            me,
            None,
            &format!(
                "touch '{d}/{me}.started'\ni=0\nwhile [ ! -f '{d}/{other}.started' ]; do i=$((i+1)); [ $i -gt 3000 ] && exit 7; sleep 0.01; done\n{}",
                common::COMMIT_OWN_FILE,
                d = d.display()
            ),
        );
    }
    let s = run(&fx, &[unit("a"), unit("b")]).await;
    assert_eq!(
        s.phase,
        Phase::Completed,
        "{}",
        baton_flow::render::report(&s)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebase_conflict_ends_the_flow_and_keeps_the_worktrees() {
    let fx = Fx::new();
    for u in ["a", "b"] {
        fx.roles.implementer(u, None, &rewrite_readme(u));
    }
    let s = run(&fx, &[unit("a"), unit("b"), unit("c")]).await;
    assert_eq!(s.phase, Phase::Failed);
    let (kind, at, message) = failure(&s);
    assert_eq!(
        (kind, at.as_deref()),
        (FailureKind::RebaseConflict, Some("b"))
    );
    assert!(message.contains("README"), "{message}");
    assert_eq!(fx.subjects(), ["unit a", "initial"]);
    // b and c keep their worktrees; b is not left mid-rebase and keeps its commit.
    let b = &s.state.units[1];
    let wt = fx.git(b.path.as_ref().unwrap());
    assert!(!wt.rebase_in_progress().unwrap());
    assert!(wt.is_clean().unwrap());
    assert_eq!(fx.worktrees().len(), 2);
    assert_eq!(s.state.units[2].status, UnitStatus::Implemented);
    // Integrated units are never rolled back; a new Flow may start.
    assert!(fx.repo().join("a.txt").is_file());
    let again = run(&fx, &[unit("d")]).await;
    assert_eq!(again.phase, Phase::Completed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_later_unit_of_a_failed_flow_lands_without_running_again() {
    let fx = Fx::new();
    for u in ["a", "b"] {
        fx.roles.implementer(u, None, &rewrite_readme(u));
    }
    let check = |u: UnitSpec| with_validation(u, "test", &["-f", "c.txt"]);
    let s = run(&fx, &[unit("a"), unit("b"), check(unit("c")), unit("d")]).await;
    assert_eq!(s.phase, Phase::Failed);
    let id = s.state.id.clone();
    let implementer_runs = fx.roles.calls().len();
    let cancel = CancellationToken::new();
    // Refused: the unit the Flow failed at, one already integrated, one that is not there.
    let e = land(&fx.env(4), &id, "b", &cancel).await.unwrap_err();
    assert!(e.to_string().contains("failed at unit b"), "{e}");
    let e = land(&fx.env(4), &id, "a", &cancel).await.unwrap_err();
    assert!(e.to_string().contains("already integrated"), "{e}");
    let e = land(&fx.env(4), &id, "zz", &cancel).await.unwrap_err();
    assert!(e.to_string().contains("its units are a, b, c, d"), "{e}");

    // The user resolves b by hand on Main, then lands c: rebased onto that, validated, merged.
    std::fs::write(fx.repo().join("README"), "a and b were here\n").unwrap();
    std::fs::write(fx.repo().join("b.txt"), "").unwrap();
    let main = fx.git(&fx.repo());
    main.run(["add", "-A"]).unwrap();
    main.run([
        "-c",
        "user.name=U",
        "-c",
        "user.email=u@x",
        "commit",
        "-qm",
        "b by hand",
    ])
    .unwrap();
    let s = land(&fx.env(4), &id, "c", &cancel).await.unwrap();
    assert_eq!(s.phase, Phase::Failed, "the Flow stays failed");
    let c = &s.state.units[s.state.unit_index("c").unwrap()];
    assert_eq!(
        c.status,
        UnitStatus::Integrated,
        "{}",
        baton_flow::render::report(&s)
    );
    assert_eq!(c.validation.len(), 1, "landed units are validated");
    assert_eq!(fx.subjects(), ["unit c", "b by hand", "unit a", "initial"]);
    assert!(fx.repo().join("c.txt").is_file());
    // Nothing was implemented again; its worktree is gone, d's is kept.
    assert_eq!(fx.roles.calls().len(), implementer_runs);
    assert!(c.path.as_ref().is_none_or(|p| !p.exists()));
    assert!(kinds(&fx, &id).contains(&"unit.landing@c".to_string()));

    // Main moved off the Flow's line: refused, naming why.
    main.run(["reset", "-q", "--hard", "HEAD~3"]).unwrap();
    let e = land(&fx.env(4), &id, "d", &cancel).await.unwrap_err();
    assert!(e.to_string().contains("no longer holds the commit"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebase_that_drops_every_commit_is_a_validated_no_op() {
    let fx = Fx::new();
    let same = "echo same > shared.txt\ngit add shared.txt\ngit -c user.name=I -c user.email=i@x commit -qm \"unit $BATON_FLOW_UNIT\"\n";
    fx.roles.implementer("a", None, same);
    fx.roles.implementer("b", None, same);
    let check = |u: UnitSpec| with_validation(u, "test", &["-f", "shared.txt"]);
    let s = run(
        &fx,
        &[check(unit("a")), check(reviewed("b", "never asked"))],
    )
    .await;
    assert_eq!(
        s.phase,
        Phase::Completed,
        "{}",
        baton_flow::render::report(&s)
    );
    let b = &s.state.units[1];
    assert_eq!(b.status, UnitStatus::NoOp);
    assert_eq!(b.outcome, Some(UnitOutcome::NoOp));
    assert_eq!(b.base, b.tip);
    assert_eq!(b.validation.len(), 1, "a no-op is still validated");
    assert!(
        !fx.roles.calls().iter().any(|c| c.starts_with("review")),
        "{:?}",
        fx.roles.calls()
    );
    assert_eq!(fx.subjects(), ["unit a", "initial"]);
    assert_eq!(fx.worktrees(), Vec::<PathBuf>::new());
    assert_eq!(fx.branches(), ["main"]);
    let k = kinds(&fx, &s.state.id);
    assert_eq!(count(&k, "unit.merging@b"), 0);
}

/// Runs a, b, c where b behaves as given; returns the paused status.
async fn blocked_b(fx: &Fx, b: UnitSpec) -> FlowStatus {
    let s = run(fx, &[unit("a"), b, unit("c")]).await;
    assert_eq!(s.phase, Phase::Paused, "{}", baton_flow::render::report(&s));
    // The Flow paused at b: a is in, c is untouched, both b and c keep their worktrees.
    assert_eq!(fx.subjects(), ["unit a", "initial"]);
    assert_eq!(s.state.units[0].status, UnitStatus::Integrated);
    assert_eq!(s.state.units[1].status, UnitStatus::Blocked);
    assert_eq!(s.state.units[2].status, UnitStatus::Implemented);
    assert_eq!(fx.worktrees().len(), 2);
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_kind_of_block_pauses_at_the_first_blocked_unit() {
    // The implementer fails.
    let fx = Fx::new();
    fx.roles
        .implementer("b", None, "echo 'cannot parse config' >&2\nexit 3\n");
    let s = blocked_b(&fx, unit("b")).await;
    let (reason, attempt, evidence) = block_of(&s, "b");
    assert_eq!((reason, attempt), (BlockReason::ImplementerFailed, 0));
    assert!(
        evidence.contains("cannot parse config") && evidence.contains('3'),
        "{evidence}"
    );

    // No commits.
    let fx = Fx::new();
    fx.roles.implementer("b", None, "echo 'nothing to do'\n");
    let s = blocked_b(&fx, unit("b")).await;
    assert_eq!(block_of(&s, "b").0, BlockReason::NoCommits);

    // Uncommitted changes (even with the file the validation wants).
    let fx = Fx::new();
    fx.roles.implementer("b", None, "echo b > b.txt\n");
    let s = blocked_b(&fx, unit("b")).await;
    let (reason, _, evidence) = block_of(&s, "b");
    assert_eq!(reason, BlockReason::Uncommitted);
    assert!(evidence.contains("b.txt"), "{evidence}");

    // Validation fails; its output is the evidence.
    let fx = Fx::new();
    fx.roles.implementer("b", None, "echo x > wrong.txt\ngit add -A\ngit -c user.name=I -c user.email=i@x commit -qm 'wrong b'\n");
    let s = blocked_b(
        &fx,
        with_validation(
            unit("b"),
            "sh",
            &["-c", "echo checking b.txt; test -f b.txt"],
        ),
    )
    .await;
    let (reason, _, evidence) = block_of(&s, "b");
    assert_eq!(reason, BlockReason::ValidationFailed);
    assert!(
        evidence.contains("checking b.txt") && evidence.contains("exit code 1"),
        "{evidence}"
    );

    // Review: `PASS.` and findings are not approval.
    for answer in [
        "printf 'PASS.'",
        "printf 'b.txt lacks a trailing newline\\n'",
        "printf 'b.txt is wrong\\n'\nexit 1",
        "printf 'PASS'\nexit 2",
    ] {
        let fx = Fx::new();
        fx.roles.reviewer("b", None, answer);
        let s = blocked_b(&fx, reviewed("b", "b.txt ends with a newline")).await;
        let (reason, _, evidence) = block_of(&s, "b");
        assert_eq!(reason, BlockReason::ReviewFindings);
        assert!(evidence.contains("only `PASS` approves"), "{evidence}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_repair_with_guidance_unblocks_and_the_flow_finishes() {
    let fx = Fx::new();
    fx.roles.implementer("b", Some(0), "echo x > wrong.txt\ngit add -A\ngit -c user.name=I -c user.email=i@x commit -qm 'wrong b'\n");
    fx.roles.implementer("b", Some(1), common::COMMIT_OWN_FILE);
    let b = reviewed("b", "b.txt holds b");
    let s = blocked_b(&fx, b).await;
    assert_eq!(block_of(&s, "b").0, BlockReason::ValidationFailed);

    let env = fx.env(4);
    let refused = continue_flow(&env, None, "  ", None, &CancellationToken::new()).await;
    assert!(matches!(refused, Err(FlowError::Input(ref e)) if e.field == "guidance"));

    let s = continue_flow(
        &env,
        None,
        "Create b.txt, as the validation says.",
        Some(ModelClass::Fast),
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(
        s.phase,
        Phase::Completed,
        "{}",
        baton_flow::render::report(&s)
    );
    assert_eq!(
        fx.subjects(),
        ["unit c", "unit b", "wrong b", "unit a", "initial"]
    );
    assert_eq!(fx.worktrees(), Vec::<PathBuf>::new());
    // The repair got the original task, the validation, the evidence and the guidance.
    let task = fx.roles.task_text("impl", "b", 1);
    for needle in [
        "Add b.txt",
        "test -f b.txt",
        "validation failed",
        "Create b.txt, as the validation says.",
    ] {
        assert!(task.contains(needle), "missing {needle:?} in:\n{task}");
    }
    // The repaired unit was reviewed afresh, with the repair's class; c's implementer never reran.
    let calls = fx.roles.calls();
    assert_eq!(count(&calls, "impl b 1"), 1);
    assert_eq!(count(&calls, "review b 1"), 1);
    assert_eq!(count(&calls, "impl c 0"), 1);
    let records = FlowStore::for_repo(&fx.repo())
        .read_records(&s.state.id)
        .unwrap();
    let classes: Vec<Option<ModelClass>> = records
        .iter()
        .filter_map(|r| match &r.event {
            FlowEvent::RepairStarted { model_class, .. }
            | FlowEvent::Reviewing { model_class, .. } => Some(*model_class),
            _ => None,
        })
        .collect();
    assert_eq!(classes, [Some(ModelClass::Fast), Some(ModelClass::Fast)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_block_is_terminal_and_keeps_the_worktrees() {
    let fx = Fx::new();
    fx.roles.implementer("b", None, "echo still nothing\n");
    let s = blocked_b(&fx, unit("b")).await;
    assert_eq!(block_of(&s, "b").0, BlockReason::NoCommits);
    let env = fx.env(4);
    let s = continue_flow(
        &env,
        None,
        "Commit b.txt this time.",
        None,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(s.phase, Phase::Failed);
    let (kind, at, message) = failure(&s);
    assert_eq!(
        (kind, at.as_deref()),
        (FailureKind::BlockedAgain, Some("b"))
    );
    assert!(message.contains("kept"), "{message}");
    assert_eq!(fx.worktrees().len(), 2);
    assert_eq!(fx.subjects(), ["unit a", "initial"]);
    let again = continue_flow(
        &env,
        Some(&s.state.id),
        "more",
        None,
        &CancellationToken::new(),
    )
    .await;
    assert!(matches!(again, Err(FlowError::WrongPhase(_))), "{again:?}");
}

/// A `git` first on PATH that refuses `merge --ff-only` without touching anything.
fn refusing_git(fx: &Fx) -> (String, String) {
    let path = fx.git_on_ff_only(
        "echo 'fatal: Not possible to fast-forward, aborting (simulated).' >&2; exit 128",
    );
    ("PATH".to_string(), path)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_fast_forward_with_main_not_at_the_tip_is_terminal() {
    let fx = Fx::new();
    let mut env = fx.env(4);
    env.git_env.push(refusing_git(&fx));
    let s = start(
        &env,
        &[reviewed("a", "fine"), unit("b")],
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(s.phase, Phase::Failed, "{}", baton_flow::render::report(&s));
    let (kind, at, message) = failure(&s);
    assert_eq!((kind, at.as_deref()), (FailureKind::MergeFailed, Some("a")));
    assert!(message.contains("simulated"), "{message}");
    assert_eq!(fx.subjects(), ["initial"]);
    assert_eq!(fx.worktrees().len(), 2, "a's worktree is kept (and b's)");
    assert!(fx.branches().iter().any(|b| b.ends_with("-a")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn main_changed_during_review_halts_before_the_merge() {
    let fx = Fx::new();
    // The reviewer (wrongly) edits Main's checkout after the unit's step-1 check.
    fx.roles.reviewer(
        "a",
        None,
        &format!(
            "echo local edit > '{}/README'\nprintf PASS\n",
            fx.repo().display()
        ),
    );
    let s = run(&fx, &[reviewed("a", "fine"), unit("b")]).await;
    assert_eq!(
        s.phase,
        Phase::Interrupted,
        "{}",
        baton_flow::render::report(&s)
    );
    let halted = s.state.halted.clone().unwrap();
    assert!(
        halted.contains("uncommitted changes") && halted.contains("README"),
        "{halted}"
    );
    let k = kinds(&fx, &s.state.id);
    assert_eq!(count(&k, "unit.merging@a"), 0, "{k:?}");
    assert_eq!(fx.subjects(), ["initial"]);

    // Once the checkout is clean again, resume merges the approved tip without asking again.
    fx.main().run(["checkout", "--", "README"]).unwrap();
    let s = resume(&fx.env(4), None, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        s.phase,
        Phase::Completed,
        "{}",
        baton_flow::render::report(&s)
    );
    assert_eq!(fx.subjects(), ["unit b", "unit a", "initial"]);
    assert_eq!(count(&fx.roles.calls(), "review a 0"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cleanup_refusal_is_a_completion_warning() {
    let fx = Fx::new();
    // The validation leaves an untracked file behind, so a non-forced remove refuses.
    let a = with_validation(
        unit("a"),
        "sh",
        &["-c", "echo built > build.log; test -f a.txt"],
    );
    let s = run(&fx, &[a, unit("b")]).await;
    assert_eq!(
        s.phase,
        Phase::Completed,
        "{}",
        baton_flow::render::report(&s)
    );
    let a = &s.state.units[0];
    let path = a.path.clone().unwrap();
    let branch = a.branch.clone().unwrap();
    let warnings = match &s.state.end {
        Some(FlowEnd::Completed { warnings }) => warnings.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0].contains(&path.display().to_string()),
        "{warnings:?}"
    );
    assert!(warnings[1].contains(&branch), "{warnings:?}");
    assert!(path.join("build.log").is_file());
    assert_eq!(fx.subjects(), ["unit b", "unit a", "initial"]);
    assert_eq!(fx.worktrees(), vec![path]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_and_failed_preconditions_change_nothing() {
    let fx = Fx::new();
    let env = fx.env(2);
    let cancel = CancellationToken::new();
    let flows = fx.repo().join(".baton/state/flows");

    let none = start(&env, &[], &cancel).await.unwrap_err();
    assert!(none.is_refusal());
    assert!(
        matches!(none, FlowError::Input(ref e) if e.field == "units"),
        "{none}"
    );
    let mut no_validation = unit("a");
    no_validation.validation.clear();
    let e = start(&env, &[no_validation], &cancel).await.unwrap_err();
    assert!(
        matches!(e, FlowError::Input(ref e) if e.field == "units[0].validation"),
        "{e}"
    );
    let e = start(&env, &[unit("a"), unit("a")], &cancel)
        .await
        .unwrap_err();
    assert!(
        matches!(e, FlowError::Input(ref e) if e.field == "units[1].id"),
        "{e}"
    );
    let e = start(&env, &[reviewed("a", " ")], &cancel)
        .await
        .unwrap_err();
    assert!(
        matches!(e, FlowError::Input(ref e) if e.field == "units[0].review"),
        "{e}"
    );

    // A dirty tree.
    fx.write("scratch.txt", "x");
    let e = start(&env, &[unit("a")], &cancel).await.unwrap_err();
    assert!(
        e.is_refusal() && e.to_string().contains("uncommitted"),
        "{e}"
    );
    std::fs::remove_file(fx.repo().join("scratch.txt")).unwrap();

    // A detached HEAD.
    fx.main().run(["checkout", "-q", "--detach"]).unwrap();
    let e = start(&env, &[unit("a")], &cancel).await.unwrap_err();
    assert!(e.to_string().contains("detached"), "{e}");
    fx.main().run(["checkout", "-q", "main"]).unwrap();

    // Not a repository; a repository without commits.
    let mut outside = fx.env(1);
    outside.delegate.cwd = fx.roles.dir().to_path_buf();
    let e = start(&outside, &[unit("a")], &cancel).await.unwrap_err();
    assert!(e.to_string().contains("not inside a git repository"), "{e}");
    let empty = fx.path("empty");
    fx.git(&empty).init("trunk").unwrap();
    let mut unborn = fx.env(1);
    unborn.delegate.cwd = empty;
    let e = start(&unborn, &[unit("a")], &cancel).await.unwrap_err();
    assert!(e.to_string().contains("no commits"), "{e}");

    // A refusal after the repository was found (the lock is held) leaves git's excludes alone.
    let held = RepoLock::acquire(&fx.main().git_common_dir().unwrap()).unwrap();
    let e = start(&env, &[unit("a")], &cancel).await.unwrap_err();
    assert!(e.is_refusal(), "{e}");
    drop(held);
    let exclude = fx.main().git_common_dir().unwrap().join("info/exclude");
    let excluded = std::fs::read_to_string(&exclude).unwrap_or_default();
    assert!(!excluded.contains(".baton/state"), "{excluded}");

    assert!(!flows.exists());
    assert_eq!(fx.worktrees(), Vec::<PathBuf>::new());
    assert_eq!(fx.roles.calls(), Vec::<String>::new());

    // State left by other baton commands does not count as uncommitted work.
    std::fs::create_dir_all(fx.repo().join(".baton/state/other")).unwrap();
    std::fs::write(fx.repo().join(".baton/state/other/x"), "x").unwrap();
    let s = run(&fx, &[unit("a")]).await;
    assert_eq!(
        s.phase,
        Phase::Completed,
        "{}",
        baton_flow::render::report(&s)
    );
}

fn obstacle_for_b(fx: &Fx) -> baton_flow::Observer {
    let folder = fx.wt_root().join(baton_exec::worktree::repo_folder_name(
        &fx.main().git_common_dir().unwrap(),
    ));
    Arc::new(move |n: Notice<'_>| {
        if let Notice::Event(r) = n {
            if let FlowEvent::WorktreeCreating { unit, worktree_id } = &r.event {
                if unit == "b" {
                    let b = folder.join(worktree_id);
                    std::fs::create_dir_all(&b).unwrap();
                    std::fs::write(b.join("obstacle"), "x").unwrap();
                }
            }
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_setup_failure_killed_before_its_removal_is_finished_by_resume() {
    let fx = Fx::new();
    let mut env = fx.env(2);
    env.observer = Some(obstacle_for_b(&fx));
    env.crash = CrashHook::parse("flow.setup_aborting", CrashMode::Error);
    let e = start(
        &env,
        &[unit("a"), unit("b"), unit("c")],
        &CancellationToken::new(),
    )
    .await
    .unwrap_err();
    assert!(matches!(e, FlowError::SimulatedCrash(_)), "{e}");
    assert_eq!(fx.worktrees().len(), 1, "a's worktree is still there");
    let s = resume(&fx.env(2), None, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(s.phase, Phase::Failed);
    let (kind, at, message) = failure(&s);
    assert_eq!((kind, at.as_deref()), (FailureKind::Setup, Some("b")));
    assert!(message.contains("removed the 1 worktree"), "{message}");
    assert_eq!(fx.roles.calls(), Vec::<String>::new());
    assert_eq!(fx.worktrees(), Vec::<PathBuf>::new());
    assert_eq!(fx.branches(), ["main"]);
    let k = kinds(&fx, &s.state.id);
    assert_eq!(count(&k, "unit.implementer_started@a"), 0, "{k:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_setup_failure_launches_nothing_and_removes_what_it_created() {
    let fx = Fx::new();
    let mut env = fx.env(2);
    // Right after b's worktree is announced, put something where it will go.
    env.observer = Some(obstacle_for_b(&fx));
    let s = start(
        &env,
        &[unit("a"), unit("b"), unit("c")],
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(s.phase, Phase::Failed);
    let (kind, at, message) = failure(&s);
    assert_eq!((kind, at.as_deref()), (FailureKind::Setup, Some("b")));
    assert!(message.contains("No implementer was launched"), "{message}");
    assert_eq!(fx.roles.calls(), Vec::<String>::new());
    assert_eq!(fx.worktrees(), Vec::<PathBuf>::new());
    assert_eq!(fx.branches(), ["main"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_flow_is_refused_by_the_lock_and_by_an_active_flow() {
    let fx = Fx::new();
    let common = fx.main().git_common_dir().unwrap();
    let held = RepoLock::acquire(&common).unwrap();
    let e = start(&fx.env(2), &[unit("a")], &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(e.is_refusal());
    assert!(e.to_string().contains("another Flow is running"), "{e}");
    drop(held);

    // A paused Flow is still the repository's active Flow.
    fx.roles.implementer("b", None, "exit 1\n");
    let paused = blocked_b(&fx, unit("b")).await;
    let e = start(&fx.env(2), &[unit("d")], &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        e.to_string().contains("paused") && e.to_string().contains(&paused.state.id),
        "{e}"
    );
    let resumed = resume(&fx.env(2), None, &CancellationToken::new()).await;
    assert!(
        matches!(resumed, Err(FlowError::WrongPhase(_))),
        "{resumed:?}"
    );

    // Abandoning it frees the repository; its worktrees stay.
    let gone = abandon(&fx.env(2), None, Some("resliced by hand")).unwrap();
    assert_eq!(gone.phase, Phase::Abandoned);
    assert_eq!(fx.worktrees().len(), 2);
    let s = run(&fx, &[unit("d")]).await;
    assert_eq!(s.phase, Phase::Completed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn main_moved_outside_the_flow_halts_until_it_is_restored() {
    let fx = Fx::new();
    let mut env = fx.env(2);
    env.crash = CrashHook::parse("flow.implementers_settled", CrashMode::Error);
    let start_oid = fx.head();
    let e = start(&env, &[unit("a"), unit("b")], &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(e, FlowError::SimulatedCrash(_)), "{e}");
    fx.write("README", "someone else\n");
    fx.main().commit_all("outside").unwrap();
    let s = resume(&fx.env(2), None, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(s.phase, Phase::Interrupted);
    assert!(s
        .state
        .halted
        .as_deref()
        .unwrap()
        .contains("moved outside the Flow"));
    fx.main()
        .run(["reset", "-q", "--hard", &start_oid])
        .unwrap();
    let s = resume(&fx.env(2), None, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(s.phase, Phase::Completed);
    assert_eq!(fx.subjects(), ["unit b", "unit a", "initial"]);
}

/// The process stops right after each kind of event; a resume must finish the Flow with every
/// unit merged exactly once and every child run exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flow_killed_at_each_step_resumes_without_merging_twice() {
    let steps = [
        "flow.created",
        "flow.driver",
        "unit.worktree_creating@a",
        "unit.worktree_created@a",
        "unit.worktree_creating@b",
        "unit.implementer_started@a",
        "unit.implementer_started@b",
        "unit.implementer_finished@a",
        "unit.implementer_finished@b",
        "flow.implementers_settled",
        "unit.derived@a",
        "unit.validating@a",
        "unit.validated@a",
        "unit.merging@a",
        "unit.merged@a",
        "unit.cleaning@a",
        "unit.finished@a",
        "unit.rebasing@b",
        "unit.rebased@b",
        "unit.derived@b",
        "unit.validated@b",
        "unit.reviewing@b",
        "unit.reviewed@b",
        "unit.merging@b",
        "unit.merged@b",
        "unit.cleaning@b",
        "unit.finished@b",
        "unit.rebasing@c",
        "unit.derived@c",
        "unit.validated@c",
        "unit.cleaning@c",
        "unit.finished@c",
    ];
    for step in steps {
        let fx = Fx::new();
        // c makes a's change again: its rebase drops the commit, a no-op.
        fx.roles.implementer(
            "c",
            None,
            "if [ ! -f a.txt ]; then echo a > a.txt; git add a.txt; git -c user.name=I -c user.email=i@x commit -qm 'unit c'; fi\n",
        );
        let c = with_validation(unit("c"), "test", &["-f", "a.txt"]);
        let go = fx.roles.dir().join("go");
        if step == "unit.implementer_started@b" {
            // a's implementer is running when the process dies; keep it away from git until then,
            // so the kill cannot leave a half-made commit behind.
            fx.roles.implementer(
                "a",
                None,
                &format!(
                    "i=0\nwhile [ ! -f '{}' ]; do i=$((i+1)); [ $i -gt 3000 ] && exit 7; sleep 0.01; done\n{}",
                    go.display(),
                    common::COMMIT_OWN_FILE
                ),
            );
        } else {
            std::fs::write(&go, "").unwrap();
        }
        let mut env = fx.env(1);
        env.crash = CrashHook::parse(step, CrashMode::Error);
        let e = start(
            &env,
            &[unit("a"), reviewed("b", "ok"), c],
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
        assert!(matches!(e, FlowError::SimulatedCrash(_)), "{step}: {e}");
        let seen = status(&fx.repo(), None, &[]).unwrap();
        assert_eq!(seen[0].phase, Phase::Interrupted, "{step}");
        let state = &seen[0].state;

        std::fs::write(&go, "").unwrap();
        // Things the dead process may have done after its last event.
        match step {
            "unit.worktree_creating@b" => {
                // `git worktree add` ran; its event never got written.
                let id = baton_flow::engine::unit_worktree_id(&state.id, "b");
                baton_exec::worktree::create_child_worktree(&fx.repo(), &fx.wt_root(), &id)
                    .unwrap();
            }
            "unit.merging@a" | "unit.merging@b" => {
                // git merged; the process died before recording it.
                let u = &state.units[if step.ends_with('a') { 0 } else { 1 }];
                fx.main()
                    .merge_ff_only(u.merging_tip.as_deref().unwrap())
                    .unwrap();
            }
            "unit.rebasing@b" => {
                let b = &state.units[1];
                let wt = fx.git(b.path.as_ref().unwrap());
                wt.rebase_onto(&state.main_oid, b.base.as_deref().unwrap())
                    .unwrap();
            }
            "unit.cleaning@a" => {
                let a = &state.units[0];
                fx.main()
                    .worktree_remove(a.path.as_ref().unwrap(), false)
                    .unwrap();
            }
            _ => {}
        }

        let s = resume(&fx.env(1), None, &CancellationToken::new())
            .await
            .unwrap();
        assert_eq!(
            s.phase,
            Phase::Completed,
            "{step}: {}",
            baton_flow::render::report(&s)
        );
        assert_eq!(fx.subjects(), ["unit b", "unit a", "initial"], "{step}");
        assert_eq!(fx.worktrees(), Vec::<PathBuf>::new(), "{step}");
        assert_eq!(fx.branches(), ["main"], "{step}");
        assert!(fx.clean(), "{step}");
        let calls = fx.roles.calls();
        let k = kinds(&fx, &s.state.id);
        for c in ["impl a 0", "impl b 0", "impl c 0", "review b 0"] {
            // Killed while a's implementer ran (b's start was being recorded): a runs again.
            let rerun = step == "unit.implementer_started@b" && c == "impl a 0";
            let n = count(&calls, c);
            assert!(n == 1 || (rerun && n == 2), "{step}: {calls:?}");
        }
        // A finished implementer is never launched again.
        for u in ["a", "b", "c"] {
            let finished = k
                .iter()
                .position(|e| *e == format!("unit.implementer_finished@{u}"));
            let last_start = k
                .iter()
                .rposition(|e| *e == format!("unit.implementer_started@{u}"));
            assert!(last_start < finished, "{step}: {k:?}");
        }
        assert_eq!(count(&k, "unit.merged@a"), 1, "{step}: {k:?}");
        assert_eq!(count(&k, "unit.merged@b"), 1, "{step}: {k:?}");
        assert_eq!(count(&k, "unit.merging@c"), 0, "{step}: {k:?}");
        assert_eq!(s.state.units[2].status, UnitStatus::NoOp, "{step}");
        assert_eq!(s.state.units[2].outcome, Some(UnitOutcome::NoOp), "{step}");
        assert_eq!(count(&k, "flow.completed"), 1, "{step}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tools_speak_the_same_contract() {
    use baton_flow::tool::{DelegateFlowContinueTool, DelegateFlowTool};
    use baton_tool::{Tool, ToolContext};

    let fx = Fx::new();
    fx.roles.implementer("b", Some(0), "echo nothing\n");
    fx.roles.implementer("b", Some(1), common::COMMIT_OWN_FILE);
    let env = Arc::new(fx.env(2));
    let flow = DelegateFlowTool { env: env.clone() };
    let cont = DelegateFlowContinueTool { env };
    let ctx = ToolContext::new(fx.repo());

    let out = flow.run(serde_json::json!({"units": []}), &ctx).await;
    assert!(
        out.is_error && out.output.contains("`units`"),
        "{}",
        out.output
    );

    let units = serde_json::json!({"units": [
        {"id": "a", "name": "A", "task": "Add a.txt", "validation": [{"command": "test", "args": ["-f", "a.txt"]}]},
        {"id": "b", "name": "B", "task": "Add b.txt", "modelClass": "fast", "validation": [{"command": "test", "args": ["-f", "b.txt"]}]}
    ]});
    let out = flow.run(units, &ctx).await;
    assert!(out.is_error, "{}", out.output);
    assert!(
        out.output.contains("paused") && out.output.contains("delegate_flow_continue"),
        "{}",
        out.output
    );

    let out = cont
        .run(
            serde_json::json!({"guidance": "commit b.txt", "colour": 1}),
            &ctx,
        )
        .await;
    assert!(out.is_error && out.output.contains("colour"));
    let out = cont
        .run(serde_json::json!({"guidance": "commit b.txt"}), &ctx)
        .await;
    assert!(!out.is_error, "{}", out.output);
    assert!(out.output.contains("completed"), "{}", out.output);
    assert_eq!(fx.subjects(), ["unit b", "unit a", "initial"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merge_found_done_is_recorded_even_when_main_is_dirty() {
    let fx = Fx::new();
    let mut env = fx.env(2);
    env.crash = CrashHook::parse("unit.merging@a", CrashMode::Error);
    let e = start(&env, &[unit("a"), unit("b")], &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(e, FlowError::SimulatedCrash(_)), "{e}");
    let state = &status(&fx.repo(), None, &[]).unwrap()[0].state;
    // git merged before the process died; then someone left a file in Main's checkout.
    fx.main()
        .merge_ff_only(state.units[0].merging_tip.as_deref().unwrap())
        .unwrap();
    fx.write("scratch.txt", "mine\n");
    let s = resume(&fx.env(2), None, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(s.state.units[0].status, UnitStatus::Integrated);
    assert_eq!(s.phase, Phase::Interrupted);
    let halted = s.state.halted.clone().unwrap();
    assert!(halted.contains("scratch.txt"), "{halted}");
    assert!(!halted.contains("moved outside"), "{halted}");
    std::fs::remove_file(fx.repo().join("scratch.txt")).unwrap();
    let s = resume(&fx.env(2), None, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        s.phase,
        Phase::Completed,
        "{}",
        baton_flow::render::report(&s)
    );
    assert_eq!(fx.subjects(), ["unit b", "unit a", "initial"]);
    assert_eq!(count(&kinds(&fx, &s.state.id), "unit.merged@a"), 1);
}

/// A unit's cleanup runs beside the next unit's landing; what git refused there is still a
/// warning of that unit, and the record tells the cleanup ended before the Flow pauses or ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cleanup_beside_the_next_unit_is_told_before_the_flow_stops() {
    let fx = Fx::new();
    // a's validation leaves a file git's non-forced removal refuses to delete.
    let a = with_validation(unit("a"), "sh", &["-c", "echo built > build.log"]);
    let b = with_validation(unit("b"), "false", &[]);
    let s = run(&fx, &[a, unit("c"), b]).await;
    assert_eq!(s.phase, Phase::Paused, "{}", baton_flow::render::report(&s));
    let k = kinds(&fx, &s.state.id);
    let at = |e: &str| {
        k.iter()
            .position(|x| x == e)
            .unwrap_or_else(|| panic!("{e}: {k:?}"))
    };
    for u in ["a", "c"] {
        assert_eq!(count(&k, &format!("unit.cleaning@{u}")), 1, "{k:?}");
        assert_eq!(count(&k, &format!("unit.finished@{u}")), 1, "{k:?}");
        assert!(at(&format!("unit.cleaning@{u}")) < at(&format!("unit.finished@{u}")));
        assert!(
            at(&format!("unit.finished@{u}")) < at("unit.blocked@b"),
            "{k:?}"
        );
    }
    // One cleanup at a time: a's ended before c's began.
    assert!(at("unit.finished@a") < at("unit.cleaning@c"), "{k:?}");
    let a = &s.state.units[0];
    assert_eq!(a.status, UnitStatus::Integrated);
    assert!(
        a.warnings.iter().any(|w| w.contains("worktree kept at")),
        "{:?}",
        a.warnings
    );
    assert!(a.path.as_ref().unwrap().join("build.log").is_file());
    assert_eq!(s.state.units[1].status, UnitStatus::Integrated);
    assert!(s.state.units[1].warnings.is_empty());
    assert_eq!(fx.subjects(), ["unit c", "unit a", "initial"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_validation_leaves_untracked_does_not_block_the_repair() {
    let fx = Fx::new();
    fx.roles
        .reviewer("b", Some(0), "printf 'b.txt must say fixed\\n'\n");
    fx.roles.reviewer("b", Some(1), "printf PASS\n");
    fx.roles.implementer(
        "b",
        Some(1),
        "echo fixed > b.txt\ngit -c user.name=I -c user.email=i@x commit -qam 'fix b'\n",
    );
    let b = with_validation(
        reviewed("b", "b.txt says fixed"),
        "sh",
        &["-c", "echo built > build.log; test -f b.txt"],
    );
    let s = blocked_b(&fx, b).await;
    assert_eq!(block_of(&s, "b").0, BlockReason::ReviewFindings);
    assert_eq!(s.state.units[1].validation_untracked, ["build.log"]);

    let s = continue_flow(
        &fx.env(4),
        None,
        "Write fixed into b.txt.",
        None,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(
        s.phase,
        Phase::Completed,
        "{}",
        baton_flow::render::report(&s)
    );
    assert_eq!(
        fx.subjects(),
        ["unit c", "fix b", "unit b", "unit a", "initial"]
    );
    let task = fx.roles.task_text("impl", "b", 1);
    assert!(task.contains("`build.log`"), "{task}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_that_fails_without_an_answer_ends_the_flow() {
    let fx = Fx::new();
    fx.roles
        .reviewer("b", None, "echo 'no route to the model' >&2\nexit 3\n");
    let s = run(&fx, &[unit("a"), reviewed("b", "fine"), unit("c")]).await;
    assert_eq!(s.phase, Phase::Failed, "{}", baton_flow::render::report(&s));
    let (kind, at, message) = failure(&s);
    assert_eq!(
        (kind, at.as_deref()),
        (FailureKind::ReviewerFailed, Some("b"))
    );
    assert!(message.contains("no route to the model"), "{message}");
    assert_eq!(fx.subjects(), ["unit a", "initial"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_unreadable_log_does_not_stop_the_other_flows() {
    let fx = Fx::new();
    fx.roles.implementer("b", None, "exit 1\n");
    let paused = blocked_b(&fx, unit("b")).await;
    let flows = FlowStore::for_repo(&fx.repo()).dir().to_path_buf();
    std::fs::write(
        flows.join("20000101-000000-dead.events.jsonl"),
        "not json\n",
    )
    .unwrap();
    let listed = status(&fx.repo(), None, &[]).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].state.id, paused.state.id);
    assert!(status(&fx.repo(), Some("20000101-000000-dead"), &[]).is_err());
    // The paused Flow is still found, refused as active, and repaired.
    let e = start(&fx.env(2), &[unit("d")], &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(e.to_string().contains(&paused.state.id), "{e}");
    fx.roles.implementer("b", None, common::COMMIT_OWN_FILE);
    let s = continue_flow(
        &fx.env(2),
        None,
        "Commit b.txt.",
        None,
        &CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(
        s.phase,
        Phase::Completed,
        "{}",
        baton_flow::render::report(&s)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_checkout_of_a_repository_sees_the_same_flows() {
    let fx = Fx::new();
    let side = fx.path("side");
    fx.main()
        .run([
            "worktree",
            "add",
            "-q",
            "-b",
            "side",
            side.to_str().unwrap(),
        ])
        .unwrap();
    fx.roles.implementer("a", None, "exit 1\n");
    let mut env = fx.env(2);
    env.delegate.cwd = side.clone();
    let s = start(&env, &[unit("a")], &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(s.phase, Phase::Paused, "{}", baton_flow::render::report(&s));
    // From the main checkout: listed, and it is the repository's active Flow.
    let listed = status(&fx.repo(), None, &[]).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].state.id, s.state.id);
    let e = start(&fx.env(2), &[unit("b")], &CancellationToken::new())
        .await
        .unwrap_err();
    assert!(e.to_string().contains(&s.state.id), "{e}");
    let gone = abandon(&fx.env(2), None, None).unwrap();
    assert_eq!(gone.state.id, s.state.id);
    assert!(!side.join(".baton/state").exists());
}
