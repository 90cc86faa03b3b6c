//! `baton events` end to end: a follower started before anything ran sees a Flow, a workflow
//! (`baton run`) and a background task run by other processes, live and typed; killed with
//! SIGKILL and restarted with the cursor of what it printed, it gets exactly the rest.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::new_without_default)]

mod common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use baton_events::{Cursor, Event, Payload};
use baton_protocol::{ProjectEvent, SourceKind};
use baton_testkit::fixture::{assert_exit, FlowRoles, Sandbox};
use common::workflow::{err, out, Wf};
use pretty_assertions::assert_eq;
use serde_json::Value;

/// A running `baton events` and the lines it printed so far, each with when it arrived.
struct Follower {
    child: Child,
    lines: Receiver<(String, Instant)>,
    seen: Vec<Event>,
}

impl Follower {
    fn start(sb: &Sandbox, args: &[&str]) -> Follower {
        let stderr = std::fs::File::create(sb.path(format!("events-{}.err", args.len()))).unwrap();
        let mut child = sb
            .baton(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send((line, Instant::now())).is_err() {
                    break;
                }
            }
        });
        Follower {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Reads lines until `done` holds for one (at most a minute); returns when each arrived.
    fn until(&mut self, what: &str, done: impl Fn(&Event) -> bool) -> Vec<Instant> {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut arrived = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let (line, at) = self.lines.recv_timeout(left).unwrap_or_else(|_| {
                panic!(
                    "the follower never showed {what}; it showed {:#?}",
                    self.names()
                )
            });
            let event = typed(&line);
            arrived.push(at);
            let stop = done(&event);
            self.seen.push(event);
            if stop {
                return arrived;
            }
        }
    }

    fn names(&self) -> Vec<String> {
        self.seen
            .iter()
            .map(|e| format!("{} {}", e.pos, e.event.name()))
            .collect()
    }

    fn kill(mut self) -> Vec<Event> {
        self.child.kill().unwrap(); // SIGKILL
        self.child.wait().unwrap();
        // Lines it wrote whole before it died are still in the pipe.
        while let Ok((line, _)) = self.lines.recv_timeout(Duration::from_secs(5)) {
            self.seen.push(typed(&line));
        }
        self.seen
    }
}

/// One `--json` line as the typed envelope: the payload read as its log's own record type.
fn typed(line: &str) -> Event {
    let raw: ProjectEvent<Value> =
        serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
    let bytes = serde_json::to_vec(&raw.event).unwrap();
    let event = Payload::parse(raw.source.kind, &bytes).unwrap_or_else(|e| panic!("{e}: {line}"));
    assert_eq!(raw.pos.source, raw.source, "{line}");
    ProjectEvent {
        pos: raw.pos,
        source: raw.source,
        ts: raw.ts,
        event,
    }
}

fn is(e: &Event, kind: SourceKind, name: &str) -> bool {
    e.source.kind == kind && e.event.name() == name
}

#[test]
fn a_follower_sees_a_flow_a_workflow_and_a_task_live_and_resumes_exactly() {
    let wf = Wf::new();
    wf.happy();
    let sb = &wf.sb;
    FlowRoles::install(sb);
    common::command_role(sb, "echoer", "cat");
    sb.commit_all("roles");
    let units = sb.path("units.json");
    std::fs::write(
        &units,
        r#"{"units": [{"id": "a", "name": "Add a", "task": "Add a.txt", "validation": [{"command": "test", "args": ["-f", "a.txt"]}]}]}"#,
    )
    .unwrap();
    assert!(!sb.work().join(".baton/state/flows").exists());

    // Started before any of the logs exists.
    let mut first = Follower::start(sb, &["events", "--follow", "--json"]);
    let flow = sb.spawn(&["flow", "start", units.to_str().unwrap()]);
    first.until("the Flow's implementer", |e| {
        is(e, SourceKind::Flow, "unit.implementer_started")
    });
    let before_kill = first.kill();
    assert!(before_kill
        .iter()
        .all(|e| e.source.kind == SourceKind::Flow));
    assert!(matches!(
        &before_kill[0].event,
        Payload::Flow(r) if matches!(r.event, baton_flow::FlowEvent::Created { .. })
    ));
    let mut cursor = Cursor::default();
    for e in &before_kill {
        cursor.advance(&e.pos);
    }

    // Restarted from its cursor while the Flow may still be running.
    let mut second = Follower::start(
        sb,
        &[
            "events",
            "--follow",
            "--json",
            "--since",
            &cursor.to_string(),
        ],
    );
    let flow = flow.wait_with_output().unwrap();
    assert_exit(&flow, 0);
    second.until("the Flow's end", |e| {
        is(e, SourceKind::Flow, "flow.completed")
    });

    let run = sb.spawn(&["run", "add a feature file"]);
    second.until("the workflow's start", |e| {
        is(e, SourceKind::Workflow, "workflow_started")
    });
    let run = run.wait_with_output().unwrap();
    assert!(run.status.success(), "{}{}", out(&run), err(&run));
    second.until("the workflow's end", |e| {
        is(e, SourceKind::Workflow, "workflow_completed")
    });

    let task = sb.run(&[
        "task",
        "--background",
        "--role",
        "echoer",
        "--name",
        "bg",
        "hi",
    ]);
    assert_exit(&task, 0);
    let id = out(&task).trim().to_string();
    second.until("the task's report", |e| {
        e.source.id == id
            && matches!(
                &e.event,
                Payload::Task(baton_exec::background::TaskEvent::Completed { .. })
            )
    });
    assert_exit(&sb.run(&["task", "wait", &id]), 0);

    // A new log in a folder that exists now: each line is shown as soon as it is fsynced.
    let hand = sb
        .work()
        .join(".baton/state/workflows/wf-20261204T000000Z-0000000a.events.jsonl");
    let mut file = std::fs::File::create(&hand).unwrap();
    for seq in 1..=5 {
        let line = format!(
            "{{\"seq\":{seq},\"ts\":\"2026-12-04T00:00:0{seq}Z\",\"wf\":\"wf-20261204T000000Z-0000000a\",\"event\":\"decided\",\"decision\":\"d{seq}\"}}\n"
        );
        // A torn line first: not an event until its newline is written.
        let (head, tail) = line.split_at(20);
        file.write_all(head.as_bytes()).unwrap();
        file.sync_data().unwrap();
        file.write_all(tail.as_bytes()).unwrap();
        file.sync_data().unwrap();
        let synced = Instant::now();
        let arrived = second.until("a line written by hand", |e| {
            e.source.id == "wf-20261204T000000Z-0000000a"
        });
        // The delay is shown, not asserted: a timed assertion fails on a loaded machine, and
        // inotify (not a poll interval) is what makes it short.
        let delay = arrived.last().unwrap().duration_since(synced);
        eprintln!("line {seq} arrived {delay:?} after its fsync");
        assert!(matches!(&second.seen.last().unwrap().event, Payload::Workflow(w) if w.seq == seq));
    }
    let after_restart = second.kill();

    // Together the two followers showed every event of the project exactly once.
    let all = sb.run(&["events", "--json"]);
    assert_exit(&all, 0);
    let all: Vec<Event> = out(&all).lines().map(typed).collect();
    let shown: Vec<String> = before_kill
        .iter()
        .chain(&after_restart)
        .map(|e| e.pos.to_string())
        .collect();
    let unique: BTreeSet<&String> = shown.iter().collect();
    assert_eq!(unique.len(), shown.len(), "an event was shown twice");
    let expected: BTreeSet<String> = all.iter().map(|e| e.pos.to_string()).collect();
    assert_eq!(
        unique.into_iter().cloned().collect::<BTreeSet<_>>(),
        expected
    );
    for kind in [SourceKind::Flow, SourceKind::Workflow, SourceKind::Task] {
        assert!(all.iter().any(|e| e.source.kind == kind), "no {kind} event");
    }
    // Each log's events came in the log's order.
    for e in &after_restart {
        let earlier = after_restart
            .iter()
            .take_while(|x| x.pos != e.pos)
            .filter(|x| x.source == e.source);
        assert!(earlier.into_iter().all(|x| x.pos.offset < e.pos.offset));
    }

    // The text form, filtered: one line per event of the kind asked for.
    let text = sb.run(&["events", "--kind", "task"]);
    assert_exit(&text, 0);
    let lines: Vec<&str> = std::str::from_utf8(&text.stdout).unwrap().lines().collect();
    let tasks = all
        .iter()
        .filter(|e| e.source.kind == SourceKind::Task)
        .count();
    assert_eq!(lines.len(), tasks);
    assert!(
        lines[0].contains(&format!("task/{id}:0 task.created")),
        "{}",
        lines[0]
    );
}

#[test]
fn a_bad_since_or_kind_is_refused_naming_it() {
    let sb = Sandbox::new().baton_exe(env!("CARGO_BIN_EXE_baton"));
    let o = sb.run(&["events", "--since", "flow/f1"]);
    assert_exit(&o, 2);
    assert!(
        err(&o).contains("--since: `flow/f1` is not a position"),
        "{}",
        err(&o)
    );
    let o = sb.run(&["events", "--kind", "flows"]);
    assert_exit(&o, 2);
    assert!(
        err(&o).contains("`flows` is not a kind of log"),
        "{}",
        err(&o)
    );
    // A project without logs has no events.
    let o = sb.run(&["events", "--json"]);
    assert_exit(&o, 0);
    assert_eq!(out(&o), "");
}

/// An agent session's transcript is a log of the feed too: its header, messages and end.
#[test]
fn a_follower_sees_an_agent_session_from_its_header_to_its_end() {
    let server = baton_testkit::MockServer::builder()
        .turn(baton_testkit::Turn::text("Done."))
        .start_blocking();
    let sb = Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .mock_provider(&server, "openai", "");
    sb.init_repo("main");
    let mut follower = Follower::start(&sb, &["events", "--follow", "--json", "--kind", "session"]);
    let agent = sb.run(&["agent", "--model", "mock/test-model", "say done"]);
    assert_exit(&agent, 0);
    follower.until("the session's end", |e| is(e, SourceKind::Session, "ended"));
    let seen = follower.kill();
    let names: Vec<String> = seen.iter().map(|e| e.event.summary()).collect();
    assert_eq!(
        names.first().map(|n| n.starts_with("session ")),
        Some(true),
        "{names:?}"
    );
    assert!(
        names.contains(&"message message.role=user".to_string()),
        "{names:?}"
    );
    assert!(
        names.contains(&"message message.role=assistant".to_string()),
        "{names:?}"
    );
    assert!(seen[0].ts.is_some(), "the header records its time");
    assert!(matches!(
        &seen.last().unwrap().event,
        Payload::Session(baton_agent::session::Line::Ended { .. })
    ));
}
