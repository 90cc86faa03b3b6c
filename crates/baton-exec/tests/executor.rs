#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The executor against real child processes: small `sh` scripts in the role of `command` children
//! and of agents printing baton-format events.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use baton_exec::executor::{Executor, OutputBudget};
use baton_exec::{
    Activity, ChildStatus, ExecError, ExecErrorCode, Launch, Limits, SkippedLines, StreamFormat,
};
use pretty_assertions::assert_eq;
use tokio_util::sync::CancellationToken;

fn sh(dir: &Path, script: &str, format: StreamFormat) -> Launch {
    Launch {
        program: "/bin/sh".into(),
        args: vec!["-c".into(), script.into()],
        env: vec![],
        cwd: dir.to_path_buf(),
        stdin: None,
        format,
        model_label: "test".into(),
        thinking_label: None,
        confine: None,
    }
}

fn limits(idle_ms: u64, max_ms: u64) -> Limits {
    Limits {
        idle_timeout: Duration::from_millis(idle_ms),
        max_timeout: Duration::from_millis(max_ms),
    }
}

/// Runs one launch on a fresh executor, collecting the activity.
async fn run_one(
    launch: Launch,
    limits: Limits,
    budget: &OutputBudget,
    cancel: &CancellationToken,
) -> (Result<baton_exec::ChildResult, ExecError>, Vec<Activity>) {
    let exec = Executor::new(1);
    let mut seen = Vec::new();
    let r = exec
        .run(
            || async move { Ok(launch) },
            limits,
            budget,
            cancel,
            &mut |a| seen.push(a),
        )
        .await;
    (r, seen)
}

fn pid_of(activity: &[Activity]) -> i32 {
    match activity.first() {
        Some(Activity::Started { pid, .. }) => *pid as i32,
        other => panic!("expected Started first, got {other:?}"),
    }
}

/// Processes (not zombies) whose process group is `pgid`, from /proc.
fn group_members(pgid: i32) -> Vec<i32> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Fields after the command name (which may hold spaces) start after the last ')'.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let (state, pgrp) = (fields[0], fields[2].parse::<i32>().unwrap_or(0));
        if pgrp == pgid && state != "Z" && state != "X" {
            members.push(pid);
        }
    }
    members
}

/// Waits up to two seconds for every process of the group to be gone.
async fn assert_group_gone(pgid: i32) {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let left = group_members(pgid);
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "processes of group {pgid} still alive: {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn wait_for_file(path: &Path) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            if text.ends_with('\n') {
                return text;
            }
        }
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

/// Opens the FIFO for writing (which waits for the child to be reading it) and writes a line.
async fn release(fifo: PathBuf) {
    tokio::task::spawn_blocking(move || std::fs::write(fifo, "go\n").unwrap())
        .await
        .unwrap();
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_most_n_children_run_and_the_rest_start_in_fifo_order() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let log = d.join("log");
    let exec = Executor::new(2);
    assert_eq!(exec.max_concurrency(), 2);
    let prepared: Arc<Mutex<Vec<usize>>> = Arc::default();
    let budget = OutputBudget::default();
    let cancel = CancellationToken::new();

    const N: usize = 5;
    for i in 0..N {
        mkfifo(&d.join(format!("fifo{i}")));
    }
    let runs = (0..N).map(|i| {
        let (exec, prepared, d, log) = (&exec, prepared.clone(), d.clone(), log.clone());
        let (budget, cancel) = (&budget, &cancel);
        async move {
            exec.run(
                move || async move {
                    prepared.lock().unwrap().push(i);
                    let script = format!(
                        "echo start {i} >> {log}; read line < fifo{i}; echo end {i} >> {log}; echo result {i}",
                        log = log.display()
                    );
                    Ok(sh(&d, &script, StreamFormat::Plain))
                },
                limits(30_000, 60_000),
                budget,
                cancel,
                &mut |_| {},
            )
            .await
        }
    });
    // join_all polls the runs in order, so they queue for permits in order 0, 1, 2, 3, 4.
    let all = futures::future::join_all(runs);
    let control = async {
        let wait_lines = |n: usize| {
            let log = log.clone();
            async move {
                let deadline = Instant::now() + Duration::from_secs(10);
                while lines(&log).len() < n {
                    assert!(Instant::now() < deadline, "log: {:?}", lines(&log));
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                lines(&log)
            }
        };
        let first = wait_lines(2).await;
        let firsts: BTreeSet<String> = first.iter().cloned().collect();
        assert_eq!(
            firsts,
            BTreeSet::from(["start 0".to_string(), "start 1".to_string()])
        );
        // The queued runs have not even been prepared, let alone started, within a window:
        // time is the subject here (nothing may happen), so the test waits it out.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(lines(&log).len(), 2);
        assert_eq!(exec.running(), 2);
        let mut p = prepared.lock().unwrap().clone();
        p.sort();
        assert_eq!(p, vec![0, 1]);
        // Each release lets exactly the next queued run start.
        for (i, expect) in [(0, "start 2"), (1, "start 3"), (2, "start 4")] {
            release(d.join(format!("fifo{i}"))).await;
            let now = wait_lines(2 + 2 * (i + 1)).await;
            assert_eq!(
                now.iter().rfind(|l| l.starts_with("start")).unwrap(),
                expect
            );
        }
        release(d.join("fifo3")).await;
        release(d.join("fifo4")).await;
    };
    let (results, ()) = tokio::join!(all, control);
    for (i, r) in results.into_iter().enumerate() {
        let r = r.unwrap();
        assert_eq!(r.status, ChildStatus::Success);
        assert_eq!(r.output, format!("result {i}\n"));
    }
    // Never more than two running at any point of the log.
    let mut running = 0;
    let mut peak = 0;
    for line in lines(&log) {
        if line.starts_with("start") {
            running += 1;
        } else {
            running -= 1;
        }
        peak = peak.max(running);
    }
    assert_eq!(peak, 2);
    assert_eq!(*prepared.lock().unwrap(), vec![0, 1, 2, 3, 4]);
    assert_eq!(exec.running(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_time_does_not_count_against_timeouts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    mkfifo(&d.join("hold"));
    let exec = Executor::new(1);
    let budget = OutputBudget::default();
    let cancel = CancellationToken::new();
    let (mut quiet1, mut quiet2) = (|_| {}, |_| {});
    let first = exec.run(
        || async {
            Ok(sh(
                &d,
                "echo up > up; read x < hold; echo first",
                StreamFormat::Plain,
            ))
        },
        limits(30_000, 60_000),
        &budget,
        &cancel,
        &mut quiet1,
    );
    let second = exec.run(
        || async { Ok(sh(&d, "echo second", StreamFormat::Plain)) },
        // Far shorter than the time it waits in the queue.
        limits(400, 600),
        &budget,
        &cancel,
        &mut quiet2,
    );
    let control = async {
        wait_for_file(&d.join("up")).await;
        // Queued longer than the second run's limits: time is the subject.
        tokio::time::sleep(Duration::from_millis(1200)).await;
        release(d.join("hold")).await;
    };
    let (a, b, ()) = tokio::join!(first, second, control);
    assert_eq!(a.unwrap().output, "first\n");
    let b = b.unwrap();
    assert_eq!(b.status, ChildStatus::Success);
    assert_eq!(b.output, "second\n");
}

#[tokio::test]
async fn idle_timeout_kills_the_group_and_keeps_the_partial_result() {
    let dir = tempfile::tempdir().unwrap();
    let budget = OutputBudget::default();
    let script = "echo partial; sleep 30 & sleep 30";
    let t0 = Instant::now();
    let (r, seen) = run_one(
        sh(dir.path(), script, StreamFormat::Plain),
        limits(300, 20_000),
        &budget,
        &CancellationToken::new(),
    )
    .await;
    let e = r.unwrap_err();
    assert_eq!(e.code, ExecErrorCode::Timeout);
    assert!(e.message.contains("idle timeout"), "{}", e.message);
    assert!(e.message.contains("300 ms"), "{}", e.message);
    let partial = e.partial.unwrap();
    assert_eq!(partial.status, ChildStatus::Failure);
    assert_eq!(partial.output, "partial\n");
    // Time is the subject: the 300 ms idle timeout ended the child, not its own end.
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    assert_group_gone(pid_of(&seen)).await;
}

#[tokio::test]
async fn max_timeout_stops_a_child_that_keeps_talking() {
    let dir = tempfile::tempdir().unwrap();
    let budget = OutputBudget::default();
    let t0 = Instant::now();
    let (r, seen) = run_one(
        sh(
            dir.path(),
            "while true; do echo tick; sleep 0.05; done",
            StreamFormat::Plain,
        ),
        limits(5_000, 600),
        &budget,
        &CancellationToken::new(),
    )
    .await;
    let e = r.unwrap_err();
    assert_eq!(e.code, ExecErrorCode::Timeout);
    assert!(e.message.contains("maximum timeout"), "{}", e.message);
    assert!(e.partial.unwrap().output.starts_with("tick\ntick\n"));
    let took = t0.elapsed();
    // Time is the subject: the 600 ms maximum, not the idle timeout, ended a child that never stops.
    assert!(
        took >= Duration::from_millis(600) && took < Duration::from_secs(4),
        "{took:?}"
    );
    assert_group_gone(pid_of(&seen)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_kills_every_process_of_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let budget = OutputBudget::default();
    let cancel = CancellationToken::new();
    // Children, a subshell's orphan and a grandchild of a grandchild, all in the group.
    let script = "sleep 100 & echo $! >> pids; (sleep 100 & echo $! >> pids); \
                  sh -c 'sleep 100 & echo $! >> pids; wait' & echo $! >> pids; \
                  sleep 0.2; echo ready > ready; wait";
    let launch = sh(&d, script, StreamFormat::Plain);
    let ((result, activity), ()) = tokio::join!(
        run_one(launch, limits(30_000, 60_000), &budget, &cancel),
        async {
            wait_for_file(&d.join("ready")).await;
            cancel.cancel();
        }
    );
    let e = result.unwrap_err();
    assert_eq!(e.code, ExecErrorCode::Aborted);
    assert!(e.partial.is_some());
    let pgid = pid_of(&activity);
    assert_group_gone(pgid).await;
    let pids: Vec<i32> = lines(&d.join("pids"))
        .iter()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 4);
    for pid in pids {
        assert!(!baton_process::alive(pid as u32), "{pid} survived");
    }
}

#[tokio::test]
async fn a_child_that_ignores_sigterm_gets_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let budget = OutputBudget::default();
    let cancel = CancellationToken::new();
    let script = "trap '' TERM; echo ready > ready; while true; do sleep 0.05; done";
    let t0 = Instant::now();
    let ((r, activity), ()) = tokio::join!(
        run_one(
            sh(&d, script, StreamFormat::Plain),
            limits(30_000, 60_000),
            &budget,
            &cancel
        ),
        async {
            wait_for_file(&d.join("ready")).await;
            cancel.cancel();
        }
    );
    assert_eq!(r.unwrap_err().code, ExecErrorCode::Aborted);
    // Time is the subject: the cancel ended the child at once, not at the end of its sleep.
    assert!(t0.elapsed() < Duration::from_secs(4), "{:?}", t0.elapsed());
    assert_group_gone(pid_of(&activity)).await;
}

#[tokio::test]
async fn cancelled_while_queued_never_prepares() {
    let exec = Executor::new(1);
    let budget = OutputBudget::default();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let prepared = std::sync::atomic::AtomicBool::new(false);
    let r = exec
        .run(
            || async {
                prepared.store(true, std::sync::atomic::Ordering::SeqCst);
                Err(ExecError::new(ExecErrorCode::Spawn, "unused"))
            },
            Limits::default(),
            &budget,
            &cancel,
            &mut |_| {},
        )
        .await;
    assert_eq!(r.unwrap_err().code, ExecErrorCode::Aborted);
    assert!(!prepared.load(std::sync::atomic::Ordering::SeqCst));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_escaped_descendant_holding_stdout_is_cut_off_and_frees_the_permit() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let exec = Executor::new(1);
    let budget = OutputBudget::default();
    let cancel = CancellationToken::new();
    // One descendant leaves the group (setsid), one stays in it (subshell orphan); both keep
    // stdout and stderr open. The escaped one stays silent, so the 250 ms idle cut-off applies.
    let script = "setsid sleep 100 & echo $! > escaped; (sleep 100 & echo $! > orphan); echo done";
    let t0 = Instant::now();
    let r = exec
        .run(
            || async { Ok(sh(&d, script, StreamFormat::Plain)) },
            limits(30_000, 60_000),
            &budget,
            &cancel,
            &mut |_| {},
        )
        .await
        .unwrap();
    let took = t0.elapsed();
    assert_eq!(r.status, ChildStatus::Success);
    assert_eq!(r.output, "done\n");
    // Time is the subject: the 250 ms idle cut-off freed the run, not the 100 s sleeps that
    // hold its stdout.
    assert!(took < Duration::from_millis(900), "{took:?}");
    // The permit is free: the next run starts at once.
    let t1 = Instant::now();
    let next = exec
        .run(
            || async { Ok(sh(&d, "echo next", StreamFormat::Plain)) },
            limits(30_000, 60_000),
            &budget,
            &cancel,
            &mut |_| {},
        )
        .await
        .unwrap();
    assert_eq!(next.output, "next\n");
    // Time is the subject: the permit was free at once (one permit; a held one waits 100 s).
    assert!(
        t1.elapsed() < Duration::from_millis(500),
        "{:?}",
        t1.elapsed()
    );
    // The orphan in the group was swept; the escaped one is beyond the group (and ours to end).
    let orphan: i32 = lines(&d.join("orphan"))[0].parse().unwrap();
    let escaped: i32 = lines(&d.join("escaped"))[0].parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(2);
    while baton_process::alive(orphan as u32) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!baton_process::alive(orphan as u32));
    assert!(baton_process::alive(escaped as u32));
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(escaped),
        nix::sys::signal::Signal::SIGKILL,
    );
}

#[tokio::test]
async fn a_chatty_escaped_descendant_is_cut_off_after_one_second() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let budget = OutputBudget::default();
    let script = "setsid sh -c 'echo $$ > escaped; while true; do echo more; sleep 0.05; done' & \
                  while [ ! -s escaped ]; do sleep 0.01; done; echo done";
    let t0 = Instant::now();
    let (r, _) = run_one(
        sh(&d, script, StreamFormat::Plain),
        limits(30_000, 60_000),
        &budget,
        &CancellationToken::new(),
    )
    .await;
    let took = t0.elapsed();
    let r = r.unwrap();
    assert_eq!(r.status, ChildStatus::Success);
    assert!(r.output.contains("done\n"));
    // Time is the subject: a chatty escaped descendant is cut off after one second, not sooner
    // and not when it stops (it never does).
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_millis(1800),
        "{took:?}"
    );
    let escaped: i32 = lines(&d.join("escaped"))[0].parse().unwrap();
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(escaped),
        nix::sys::signal::Signal::SIGKILL,
    );
}

#[tokio::test]
async fn output_is_capped_across_children_with_the_marker() {
    let dir = tempfile::tempdir().unwrap();
    let budget = OutputBudget::new(100);
    let cancel = CancellationToken::new();
    let print80 = "printf '%080d' 0";
    let (a, _) = run_one(
        sh(dir.path(), print80, StreamFormat::Plain),
        limits(5_000, 10_000),
        &budget,
        &cancel,
    )
    .await;
    let (b, _) = run_one(
        sh(dir.path(), print80, StreamFormat::Plain),
        limits(5_000, 10_000),
        &budget,
        &cancel,
    )
    .await;
    let (c, _) = run_one(
        sh(dir.path(), print80, StreamFormat::Plain),
        limits(5_000, 10_000),
        &budget,
        &cancel,
    )
    .await;
    assert_eq!(a.unwrap().output, "0".repeat(80));
    assert_eq!(
        b.unwrap().output,
        format!("{}\n[… 60 bytes omitted …]", "0".repeat(20))
    );
    assert_eq!(c.unwrap().output, "[… 80 bytes omitted …]");

    // The default cap is 50 KiB.
    let budget = OutputBudget::default();
    let (r, _) = run_one(
        sh(
            dir.path(),
            "head -c 61440 /dev/zero | tr '\\0' y",
            StreamFormat::Plain,
        ),
        limits(5_000, 10_000),
        &budget,
        &cancel,
    )
    .await;
    assert_eq!(
        r.unwrap().output,
        format!("{}\n[… 10240 bytes omitted …]", "y".repeat(51_200))
    );
}

/// A script that prints the given lines (written to a file first, so any bytes go through).
fn emitter(dir: &Path, name: &str, body: &[u8], exit: i32) -> Launch {
    let data = dir.join(format!("{name}.out"));
    std::fs::write(&data, body).unwrap();
    sh(
        dir,
        &format!("cat {}; echo oops >&2; exit {exit}", data.display()),
        StreamFormat::Baton,
    )
}

#[tokio::test]
async fn activity_arrives_in_order_and_bad_lines_are_skipped_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let big = "x".repeat(2 * 1024 * 1024);
    let long_id = "i".repeat(4097);
    let mut body = String::new();
    for line in [
        r#"{"type":"session.started","protocol_version":1,"session_id":"s","role":"scout","model":"m/m","cwd":"/","resumed":false}"#.to_string(),
        r#"{"type":"turn.started","turn":1}"#.into(),
        r#"{"type":"item.started","item":{"id":"item_0","status":"in_progress","type":"reasoning","text":""}}"#.into(),
        r#"{"type":"item.delta","item_id":"item_0","delta":"hmm"}"#.into(),
        r#"{"type":"item.delta","item_id":"item_0","delta":"hmm"}"#.into(),
        format!(r#"{{"type":"item.started","item":{{"id":"item_1","status":"in_progress","type":"tool_call","call_id":"call_big","tool":"write","arguments":{{"path":"a","content":"{big}"}}}}}}"#),
        "{\"type\": this is not json".into(),
        r#"{"type":"item.completed","item":{"id":"item_1","status":"completed","type":"tool_call","call_id":"call_big","tool":"write","arguments":{}}}"#.into(),
        r#"{"type":"item.started","item":{"id":"item_2","status":"in_progress","type":"tool_call","call_id":"call_2","tool":"read","arguments":{},"path":"evil\u001b[31m.txt"}}"#.into(),
        format!(r#"{{"type":"item.started","item":{{"id":"item_3","status":"in_progress","type":"tool_call","call_id":"{long_id}","tool":"read","arguments":{{}}}}}}"#),
        r#"{"type":"item.completed","item":{"id":"item_2","status":"failed","type":"tool_call","call_id":"call_2","tool":"read","arguments":{},"output":"no such file"}}"#.into(),
        r#"{"type":"turn.completed","turn":1,"usage":{"input_tokens":10,"cached_input_tokens":4,"output_tokens":3}}"#.into(),
        r#"{"type":"session.completed","outcome":"completed","final_message":"all done","turns":1,"usage":{"input_tokens":10,"cached_input_tokens":4,"output_tokens":3}}"#.into(),
    ] {
        body.push_str(&line);
        body.push('\n');
    }
    body.push_str(r#"{"type":"turn.started","tu"#);
    let budget = OutputBudget::default();
    let (r, seen) = run_one(
        emitter(dir.path(), "stream", body.as_bytes(), 0),
        limits(5_000, 20_000),
        &budget,
        &CancellationToken::new(),
    )
    .await;
    let r = r.unwrap();
    let usage = baton_protocol::Usage {
        input_tokens: 10,
        cached_input_tokens: 4,
        output_tokens: 3,
        cache_write_tokens: 0,
    };
    assert_eq!(
        seen[1..].to_vec(),
        vec![
            Activity::Thinking,
            Activity::ToolStart {
                call_id: "call_big".into(),
                tool: "write".into(),
                path: None
            },
            Activity::ToolEnd {
                call_id: "call_big".into(),
                tool: "write".into(),
                is_error: false
            },
            Activity::ToolStart {
                call_id: "call_2".into(),
                tool: "read".into(),
                path: None
            },
            Activity::ToolEnd {
                call_id: "call_2".into(),
                tool: "read".into(),
                is_error: true
            },
            Activity::MessageEnd { turn: 1 },
            Activity::Tokens { usage },
        ]
    );
    assert_eq!(r.status, ChildStatus::Success);
    assert_eq!(r.output, "all done");
    assert_eq!(r.stderr, "oops\n");
    assert_eq!(r.usage, usage);
    assert_eq!(r.tools_started, 3);
    assert_eq!(
        r.skipped,
        SkippedLines {
            malformed: 1,
            oversized: 1,
            partial: 1
        }
    );
}

const DONE: &str = r#"{"type":"session.completed","outcome":"completed","final_message":"fine","turns":1,"usage":{"input_tokens":1,"cached_input_tokens":0,"output_tokens":1}}"#;

#[tokio::test]
async fn outcomes_are_typed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let budget = OutputBudget::default();
    let cancel = CancellationToken::new();
    let l = limits(5_000, 20_000);

    // The model failed: a failure result, not an executor error.
    let failed = concat!(
        r#"{"type":"turn.failed","turn":1,"error":{"code":"unauthorized","message":"bad key"}}"#,
        "\n",
        r#"{"type":"session.completed","outcome":"failed","reason":"model_error","final_message":"bad key","turns":1,"usage":{"input_tokens":0,"cached_input_tokens":0,"output_tokens":0}}"#,
        "\n"
    );
    let (r, _) = run_one(
        emitter(d, "failed", failed.as_bytes(), 1),
        l,
        &budget,
        &cancel,
    )
    .await;
    let r = r.unwrap();
    assert_eq!(r.status, ChildStatus::Failure);
    assert_eq!(r.exit_code, Some(1));
    assert_eq!(r.output, "bad key");
    assert_eq!(r.stderr, "oops\n");
    assert_eq!(r.stop_reason.as_deref(), Some("model_error"));
    assert_eq!(r.error_message.as_deref(), Some("unauthorized: bad key"));

    // A final success with a non-zero exit is still a failure.
    let (r, _) = run_one(
        emitter(d, "odd", format!("{DONE}\n").as_bytes(), 1),
        l,
        &budget,
        &cancel,
    )
    .await;
    assert_eq!(r.unwrap().status, ChildStatus::Failure);

    // Turn limit: by the session's reason, or by baton's exit code 3 alone.
    let limit = r#"{"type":"session.completed","outcome":"partial","reason":"turn_limit","final_message":"Status: handoff","turns":5,"usage":{"input_tokens":0,"cached_input_tokens":0,"output_tokens":0}}"#;
    let (r, _) = run_one(
        emitter(d, "limit", format!("{limit}\n").as_bytes(), 3),
        l,
        &budget,
        &cancel,
    )
    .await;
    let e = r.unwrap_err();
    assert_eq!(e.code, ExecErrorCode::TurnLimit);
    assert_eq!(e.partial.unwrap().output, "Status: handoff");
    let (r, _) = run_one(emitter(d, "limit3", b"", 3), l, &budget, &cancel).await;
    assert_eq!(r.unwrap_err().code, ExecErrorCode::TurnLimit);

    // Exit 0 without a final event: the stream broke its protocol.
    let (r, _) = run_one(
        emitter(d, "nofinal", b"{\"type\":\"turn.started\",\"turn\":1}\n", 0),
        l,
        &budget,
        &cancel,
    )
    .await;
    let e = r.unwrap_err();
    assert_eq!(e.code, ExecErrorCode::Protocol);
    assert!(e.message.contains("without a final event"), "{}", e.message);
    // …while a crash without one is a failure.
    let (r, _) = run_one(emitter(d, "crash", b"", 101), l, &budget, &cancel).await;
    let r = r.unwrap();
    assert_eq!((r.status, r.exit_code), (ChildStatus::Failure, Some(101)));

    // Token limit from a pi child.
    let pi = concat!(
        r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"half an ans"}],"usage":{"input":1,"output":8192,"cacheRead":0,"cacheWrite":0},"stopReason":"length"}}"#,
        "\n",
        r#"{"type":"agent_end","messages":[]}"#,
        "\n"
    );
    let mut launch = emitter(d, "pi", pi.as_bytes(), 0);
    launch.format = StreamFormat::Pi;
    let (r, _) = run_one(launch, l, &budget, &cancel).await;
    let e = r.unwrap_err();
    assert_eq!(e.code, ExecErrorCode::TokenLimit);
    assert_eq!(e.partial.unwrap().output, "half an ans");

    // Plain children: the exit code decides.
    let (r, _) = run_one(sh(d, "echo ok", StreamFormat::Plain), l, &budget, &cancel).await;
    assert_eq!(r.unwrap().status, ChildStatus::Success);
    let (r, _) = run_one(
        sh(d, "echo no; exit 2", StreamFormat::Plain),
        l,
        &budget,
        &cancel,
    )
    .await;
    let r = r.unwrap();
    assert_eq!(
        (r.status, r.exit_code, r.output.as_str()),
        (ChildStatus::Failure, Some(2), "no\n")
    );
}

#[tokio::test]
async fn spawn_prepare_and_callback_errors() {
    let dir = tempfile::tempdir().unwrap();
    let budget = OutputBudget::default();
    let cancel = CancellationToken::new();
    let l = limits(5_000, 20_000);

    let mut launch = sh(dir.path(), "", StreamFormat::Pi);
    launch.program = "/nonexistent/bin/pi".into();
    let (r, seen) = run_one(launch, l, &budget, &cancel).await;
    let e = r.unwrap_err();
    assert_eq!(e.code, ExecErrorCode::Spawn);
    assert!(e.message.contains("/nonexistent/bin/pi"), "{}", e.message);
    assert!(e.message.contains("executor.programs.pi"), "{}", e.message);
    assert!(seen.is_empty());

    let mut launch = sh(dir.path(), "", StreamFormat::Plain);
    launch.cwd = dir.path().join("missing");
    let (r, _) = run_one(launch, l, &budget, &cancel).await;
    let e = r.unwrap_err();
    assert_eq!(e.code, ExecErrorCode::Spawn);
    assert!(e.message.contains("missing"), "{}", e.message);

    let exec = Executor::new(1);
    let e = exec
        .run(
            || async {
                Err(ExecError::new(
                    ExecErrorCode::Spawn,
                    "role `x` has no command",
                ))
            },
            l,
            &budget,
            &cancel,
            &mut |_| {},
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, ExecErrorCode::Prepare);
    assert_eq!(e.message, "role `x` has no command");

    // A callback that panics stops the child.
    let body = format!(
        "{}\n",
        r#"{"type":"turn.completed","turn":1,"usage":{"input_tokens":1,"cached_input_tokens":0,"output_tokens":1}}"#
    );
    let data = dir.path().join("cb.out");
    std::fs::write(&data, body).unwrap();
    let script = format!("cat {}; sleep 30", data.display());
    let launch = sh(dir.path(), &script, StreamFormat::Baton);
    let mut pid = 0;
    let t0 = Instant::now();
    let e = exec
        .run(
            || async { Ok(launch) },
            l,
            &budget,
            &cancel,
            &mut |a| match a {
                Activity::Started { pid: p, .. } => pid = p as i32,
                Activity::MessageEnd { .. } => panic!("the caller's status view broke"),
                _ => {}
            },
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, ExecErrorCode::Callback);
    assert!(e.message.contains("status view broke"), "{}", e.message);
    // Time is the subject: the broken status view stopped the child at once.
    assert!(t0.elapsed() < Duration::from_secs(4));
    assert_group_gone(pid).await;
}

#[tokio::test]
async fn stdin_carries_the_task_and_stderr_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let budget = OutputBudget::default();
    let mut launch = sh(
        dir.path(),
        "wc -c; head -c 100000 /dev/zero | tr '\\0' e >&2; printf END >&2",
        StreamFormat::Plain,
    );
    launch.stdin = Some("t".repeat(300_000));
    let (r, _) = run_one(
        launch,
        limits(5_000, 20_000),
        &budget,
        &CancellationToken::new(),
    )
    .await;
    let r = r.unwrap();
    assert_eq!(r.output.trim(), "300000");
    assert!(
        r.stderr.starts_with("[… ") && r.stderr.contains(" bytes omitted …]"),
        "{}",
        &r.stderr[..80]
    );
    assert!(r.stderr.ends_with("eeeEND"));
    assert!(r.stderr.len() < 16 * 1024 + 100);
}

#[tokio::test]
async fn dropping_the_run_kills_the_group() {
    use std::sync::atomic::{AtomicI32, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let exec = Executor::new(1);
    let budget = OutputBudget::default();
    let cancel = CancellationToken::new();
    let pid = AtomicI32::new(0);
    let mut note = |a: Activity| {
        if let Activity::Started { pid: p, .. } = a {
            pid.store(p as i32, Ordering::SeqCst);
        }
    };
    let ready = d.join("ready");
    {
        let run = exec.run(
            || async {
                Ok(sh(
                    &d,
                    "sleep 100 & echo ready > ready; wait",
                    StreamFormat::Plain,
                ))
            },
            limits(30_000, 60_000),
            &budget,
            &cancel,
            &mut note,
        );
        tokio::select! {
            _ = run => panic!("the run should still be going"),
            _ = wait_for_file(&ready) => {}
        }
    }
    let pid = pid.load(Ordering::SeqCst);
    assert_ne!(pid, 0);
    assert_group_gone(pid).await;
    assert_eq!(exec.running(), 0);
}
