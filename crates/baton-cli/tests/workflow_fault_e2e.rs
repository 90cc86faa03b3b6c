//! `baton run` killed at every step of a workflow, then `baton resume` until it ends.
//!
//! The test hook `BATON_WORKFLOW_CRASH_AT=N` SIGKILLs `baton run` (or `baton resume`) right
//! after its N-th appended event. For each kill point a fresh repository runs the workflow,
//! dies there, and is resumed (answering the checkpoint when it waits on one) until it exits 0.
//! After every recovery: the workflow completed with proof passed, the snapshot is the fold of
//! the events, no completed task was dispatched again, and the builder ran no more often than
//! in the run that never crashed. A last test kills `baton run` from outside while a role's
//! child runs: the child's process group dies with it and the task runs again on resume.
//!
//! The roles are shell scripts on the `command` backend answering with the contract snippets of
//! `common/workflow.rs`; this file's own harness runs them from a memory file system:
//! each counts its calls; the reviewer's answer depends on how often the builder ran, not on
//! its own call count, so a reviewer killed mid-call cannot change the course of the workflow.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

mod common;

use baton_testkit::fixture::{assert_exit, wait_until};
use baton_workflow::store::{fold, WorkflowEvent};
use common::workflow::{
    Wf, BUILDER_PASS, DOCS_SKIPPED, HUNT_CLEAN, REVIEW_APPROVE, REVIEW_CRITICAL,
    REVIEW_CRITICAL_AND_HIGH, VERIFY_PASS,
};

const ROLES: [&str; 5] = [
    "component-builder",
    "code-reviewer",
    "failure-hunter",
    "integration-verifier",
    "doc-syncer",
];

const REQUEST: &str = "add a feature file";
const SCOPE_ANSWER: &str = "all issues";

/// The two workflows killed at every step.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Flow {
    /// BUILD with one remediation cycle: the first review finds a critical issue only.
    Remediation,
    /// BUILD whose first review finds a critical and a high issue: a scope checkpoint,
    /// answered with "all issues".
    Scope,
}

/// The shared harness on a memory file system, with this test's answers.
struct Fx {
    wf: Wf,
}

impl std::ops::Deref for Fx {
    type Target = Wf;
    fn deref(&self) -> &Wf {
        &self.wf
    }
}

impl Fx {
    fn new(flow: Flow) -> Fx {
        // A SIGKILL loses nothing the page cache holds: the many short workflows run on a
        // memory file system where there is one, which spares the fsyncs' time.
        let wf = Wf::new_in(Path::new("/dev/shm"));
        let first_review = match flow {
            Flow::Remediation => REVIEW_CRITICAL,
            Flow::Scope => REVIEW_CRITICAL_AND_HIGH,
        };
        // Changes are requested while the builder has run once, approved after.
        let review = format!(
            "if [ \"$(cat \"$dir/component-builder.count\")\" = 1 ]; then\n{first_review}else\n{REVIEW_APPROVE}fi\n"
        );
        wf.answer("component-builder", BUILDER_PASS)
            .answer("code-reviewer", &review)
            .answer("failure-hunter", HUNT_CLEAN)
            .answer("integration-verifier", VERIFY_PASS)
            .answer("doc-syncer", DOCS_SKIPPED);
        Fx { wf }
    }

    fn all_calls(&self) -> Vec<u32> {
        ROLES.iter().map(|r| self.calls(r)).collect()
    }

    fn run(&self, args: &[&str], crash_at: Option<u64>) -> Output {
        match crash_at {
            Some(n) => self
                .wf
                .sb
                .run_with(args, &[("BATON_WORKFLOW_CRASH_AT", &n.to_string())]),
            None => self.sb.run(args),
        }
    }

    fn events(&self) -> Vec<WorkflowEvent> {
        self.wf
            .events()
            .into_iter()
            .map(|e| serde_json::from_value(e).unwrap())
            .collect()
    }

    /// The workflow ended well, and its record is consistent: the snapshot is exactly the fold
    /// of the events, and no completed task was started again unless an answer reopened it.
    fn assert_done(&self, what: &str) {
        let events = self.events();
        let snap = self.snapshot();
        assert_eq!(
            snap,
            fold(&events),
            "{what}: the snapshot is not the events' fold"
        );
        assert_eq!(snap["run_state"], "completed", "{what}");
        assert_eq!(snap["proof_status"], "passed", "{what}");
        // Memory was finalized once: one completed item for the workflow.
        let progress =
            std::fs::read_to_string(self.sb.work().join(".baton/memory/progress.md")).unwrap();
        let items = progress
            .lines()
            .filter(|l| l.contains(&format!("[x] BUILD {}", self.id())))
            .count();
        assert_eq!(
            items, 1,
            "{what}: memory finalized {items} times\n{progress}"
        );
        let mut completed = HashSet::new();
        for ev in &events {
            let name = serde_json::to_value(ev.kind()).unwrap();
            let task = ev.task_id().unwrap_or_default().to_string();
            match name.as_str().unwrap() {
                "checkpoint_answered" => completed.clear(),
                "agent_started" => assert!(
                    !completed.contains(&task),
                    "{what}: task {task} started again after it completed (event {})",
                    ev.seq
                ),
                "agent_completed" => {
                    completed.insert(task);
                }
                _ => {}
            }
        }
    }
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Resumes, answering the scope checkpoint when the workflow waits on it, until it exits 0.
fn resume_to_the_end(wf: &Fx, what: &str) {
    for _ in 0..6 {
        // Killed after its last event, the workflow has nothing left to resume.
        if wf.snapshot()["run_state"] == "completed" {
            return;
        }
        let o = wf.run(&["resume"], None);
        match o.status.code() {
            Some(0) => return,
            Some(4) => {
                assert_eq!(wf.snapshot()["pending_gate"], "scope_decision", "{what}");
                let o = wf.run(&["resume", "--answer", SCOPE_ANSWER], None);
                if o.status.code() == Some(0) {
                    return;
                }
                assert_exit(&o, 0);
            }
            _ => panic!("{what}: resume failed\n{}", text(&o)),
        }
    }
    panic!("{what}: the workflow did not end after six resumes");
}

/// A clean run: the events `baton run` appends after `workflow_started` (the events the crash
/// hook counts), the events of the whole workflow (its log's lines), and the calls of each role.
fn clean(flow: Flow) -> (u64, u64, Vec<u32>) {
    let wf = Fx::new(flow);
    let o = wf.run(&["run", REQUEST], None);
    let first = wf.events().len() as u64 - 1;
    if flow == Flow::Scope {
        assert_exit(&o, 4);
        assert!(
            text(&o).contains("critical only | all issues | abort"),
            "{}",
            text(&o)
        );
        assert_exit(&wf.run(&["resume", "--answer", SCOPE_ANSWER], None), 0);
    } else {
        assert_exit(&o, 0);
    }
    wf.assert_done("clean run");
    assert_eq!(wf.calls("component-builder"), 2, "one remediation cycle");
    (first, wf.events().len() as u64, wf.all_calls())
}

/// Kills the workflow after the `n`-th event the crash hook counts, over the processes that
/// carry it out without a crash (`baton run`, then `baton resume --answer`), then resumes it to
/// its end. Past the last event nothing is killed.
fn crash_and_recover(flow: Flow, n: u64, first: u64, total: u64, clean_calls: &[u32]) {
    let what = format!("{flow:?} killed after event {n}");
    let wf = Fx::new(flow);
    let check = |o: &Output, lines: u64, normal: i32| {
        if n <= total {
            assert_eq!(
                o.status.signal(),
                Some(libc::SIGKILL),
                "{what}: expected SIGKILL\n{}",
                text(o)
            );
            assert_eq!(wf.events().len() as u64, lines, "{what}");
        } else {
            assert_exit(o, normal);
        }
    };
    if n <= first || flow == Flow::Remediation {
        let o = wf.run(&["run", REQUEST], Some(n));
        // `workflow_started` is written before the hook counts.
        check(&o, n + 1, if flow == Flow::Scope { 4 } else { 0 });
    } else {
        // The kill point lies in the answer's process.
        assert_exit(&wf.run(&["run", REQUEST], None), 4);
        let before = wf.events().len() as u64;
        let o = wf.run(&["resume", "--answer", SCOPE_ANSWER], Some(n - first));
        check(&o, before + n - first, 0);
    }
    if n <= total {
        resume_to_the_end(&wf, &what);
    }
    wf.assert_done(&what);
    let answered = wf
        .events()
        .iter()
        .filter(|e| serde_json::to_value(e.kind()).unwrap() == "checkpoint_answered")
        .count();
    assert_eq!(answered, usize::from(flow == Flow::Scope), "{what}");
    let builder = wf.calls("component-builder");
    assert!(
        (clean_calls[0]..=clean_calls[0] + 1).contains(&builder),
        "{what}: the builder ran {builder} times, {} without a crash",
        clean_calls[0]
    );
    for (role, (calls, clean)) in ROLES.iter().zip(wf.all_calls().iter().zip(clean_calls)) {
        assert!(
            calls >= clean && *calls <= clean + 1,
            "{what}: {role} ran {calls} times, {clean} without a crash"
        );
    }
}

/// Every kill point when there are few, else 25 or more spread over the run.
fn kill_points(total: u64) -> Vec<u64> {
    if total <= 40 {
        return (1..=total).collect();
    }
    let mut points: Vec<u64> = (0..40).map(|i| 1 + i * (total - 1) / 39).collect();
    points.dedup();
    points
}

fn every_kill_point(flow: Flow) {
    let (first, lines, clean_calls) = clean(flow);
    // The hook counts every event but `workflow_started`; one more point is past the end.
    let total = lines - 1;
    eprintln!(
        "{flow:?}: {lines} events, {} kill points",
        kill_points(total + 1).len()
    );
    for n in kill_points(total + 1) {
        crash_and_recover(flow, n, first, total, &clean_calls);
    }
}

#[test]
fn a_build_with_a_remediation_cycle_recovers_from_a_kill_at_every_step() {
    every_kill_point(Flow::Remediation);
}

#[test]
fn a_build_with_a_scope_checkpoint_recovers_from_a_kill_at_every_step() {
    every_kill_point(Flow::Scope);
}

#[test]
fn a_kill_during_a_dispatch_takes_the_child_with_it_and_resume_runs_the_task_again() {
    let wf = Fx::new(Flow::Remediation);
    // Approve from the start: the builder runs for the phase only (twice with the retry).
    wf.answer("code-reviewer", REVIEW_APPROVE);
    let pid_file = wf.scripts.join("builder.pid");
    let release = wf.scripts.join("release");
    wf.answer_nth(
        "component-builder",
        1,
        &format!(
            "echo $$ > {pid}.tmp; mv {pid}.tmp {pid}\nwhile [ ! -f {release} ]; do sleep 0.01; done\n{BUILDER_PASS}",
            pid = pid_file.display(),
            release = release.display()
        ),
    );
    let mut baton = wf.sb.spawn(&["run", REQUEST]);
    assert!(
        wait_until(Duration::from_secs(30), || pid_file.is_file()),
        "the builder did not start"
    );
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // pid (comm) state ppid pgrp …
    let pgid: i32 = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .nth(2)
        .unwrap()
        .parse()
        .unwrap();
    assert!(baton_process::alive(u32::try_from(pid).unwrap()));
    baton.kill().unwrap();
    baton.wait().unwrap();
    let group_gone = || {
        nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), None)
            == Err(nix::errno::Errno::ESRCH)
    };
    assert!(
        wait_until(Duration::from_secs(2), || {
            !baton_process::alive(u32::try_from(pid).unwrap()) && group_gone()
        }),
        "the builder (pid {pid}, group {pgid}) outlived the SIGKILLed baton run"
    );
    let started = wf.events();
    assert_eq!(
        serde_json::to_value(started.last().unwrap().kind()).unwrap(),
        "agent_started"
    );
    std::fs::write(&release, "").unwrap();
    resume_to_the_end(&wf, "killed during the builder");
    wf.assert_done("killed during the builder");
    assert_eq!(wf.calls("component-builder"), 2, "the builder ran again");
    let t1 = started.last().unwrap().task_id().unwrap().to_string();
    let runs = wf
        .events()
        .iter()
        .filter(|e| {
            e.task_id() == Some(t1.as_str())
                && serde_json::to_value(e.kind()).unwrap() == "agent_started"
        })
        .count();
    assert_eq!(runs, 2, "task {t1} was dispatched twice");
    assert_eq!(wf.calls("integration-verifier"), 1);
}
