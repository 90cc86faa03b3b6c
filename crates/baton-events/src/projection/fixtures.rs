//! Logs the real binary wrote, as the feed's typed events, for the projection's tests and the
//! views that draw it (the terminal UI's snapshots, the page model's node tests): a Flow whose
//! second unit the reviewer blocked, a background task, a BUILD workflow with a checkpoint and a
//! remediation, and a managed worker with one answered prompt. Built for tests only (`cfg(test)`
//! or the `fixtures` feature).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use baton_protocol::{Position, ProjectEvent, Source, SourceKind};

use crate::{Event, Payload};

/// The lines of `log` as events of the log `kind`/`id` (position = the line's byte offset).
pub fn events(kind: SourceKind, id: &str, log: &str) -> Vec<Event> {
    let mut offset = 0;
    log.lines()
        .map(|line| {
            let source = Source::new(kind, id);
            let e = ProjectEvent {
                pos: Position {
                    source: source.clone(),
                    offset,
                },
                source,
                ts: None,
                event: Payload::parse(kind, line.as_bytes()).unwrap(),
            };
            offset += line.len() as u64 + 1;
            e
        })
        .collect()
}

/// The Flow, the task and the workflow, in that order.
pub fn fixture_events() -> Vec<Event> {
    let mut all = events(
        SourceKind::Flow,
        "20261205-085300-0830",
        include_str!("fixtures/flow.events.jsonl"),
    );
    all.extend(events(
        SourceKind::Task,
        "t1a245681cbdac0a8",
        include_str!("fixtures/task.events.jsonl"),
    ));
    all.extend(events(
        SourceKind::Workflow,
        "wf-20261204T212108Z-27931c09",
        include_str!("fixtures/workflow.events.jsonl"),
    ));
    all
}

/// A managed worker's log, typed as `baton worker` writes it.
pub fn worker_events(name: &str) -> Vec<Event> {
    use baton_exec::worker::{TurnUsage, WorkerEvent, WorkerSpec};
    let at = || "2026-12-05T11:00:00Z".to_string();
    let evs = [
        WorkerEvent::Created {
            spec: WorkerSpec {
                name: name.into(),
                role: "helper".into(),
                model: Some("mock/m".into()),
                model_class: None,
                cwd: "/tmp/w".into(),
                worktree: None,
                budget_usd: None,
                idle_timeout_secs: None,
                created: at(),
            },
        },
        WorkerEvent::Spawned {
            pid: 1,
            start_time: None,
            at: at(),
        },
        WorkerEvent::Started {
            pid: 1,
            start_time: None,
            session: "01s".into(),
            resumed: false,
            at: at(),
        },
        WorkerEvent::Queued {
            id: "p1".into(),
            text: "summarise the notes".into(),
            retry_of: None,
            at: at(),
        },
        WorkerEvent::Delivered {
            id: "p1".into(),
            at: at(),
        },
        WorkerEvent::Answered {
            id: "p1".into(),
            answer: "Three notes, all on the parser.\nMore below.".into(),
            reason: None,
            peer_session: None,
            usage: TurnUsage {
                input_tokens: 1200,
                output_tokens: 300,
                cost_usd: Some(0.0081),
            },
            at: at(),
        },
    ];
    let lines: Vec<String> = evs
        .iter()
        .map(|ev| serde_json::to_string(ev).unwrap())
        .collect();
    events(SourceKind::Worker, name, &lines.join("\n"))
}
