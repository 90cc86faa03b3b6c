#![allow(clippy::unwrap_used, clippy::expect_used, clippy::type_complexity)]
//! The project reducer over logs the real binary wrote: a Flow whose second unit the reviewer
//! blocked, a background task, and a BUILD workflow stopped at its scope checkpoint.

use baton_events::{Event, Payload};
use baton_protocol::{Position, ProjectEvent, Source, SourceKind};
use pretty_assertions::assert_eq;

use super::*;

fn events(kind: SourceKind, id: &str, log: &str) -> Vec<Event> {
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

pub(crate) fn fixture_events() -> Vec<Event> {
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

fn fold(events: &[Event]) -> Project {
    let mut p = Project::default();
    for (k, e) in events.iter().enumerate() {
        p.apply(e, k as u64 * 10);
    }
    p
}

#[test]
fn the_logs_of_a_flow_a_task_and_a_workflow_fold_into_rows_and_views() {
    let p = fold(&fixture_events());
    let rows: Vec<(Kind, State, &str, &str, &str)> = p
        .grouped()
        .iter()
        .map(|r| {
            (
                r.kind,
                r.state,
                r.name.as_str(),
                r.role.as_str(),
                r.detail.as_str(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            (
                Kind::Flow,
                State::NeedsInput,
                "flow 20261205-085300-0830",
                "flow",
                "b blocked (review findings): continue --guidance, or abandon · 1/2 merged"
            ),
            (Kind::Task, State::Done, "hb", "helper", "done"),
            (
                Kind::Workflow,
                State::Done,
                "workflow wf-20261204T212108Z-27931c09",
                "build",
                "BUILD workflow wf-20261204T212108Z-27931c09 completed: documentation synced: persist memory"
            ),
        ]
    );
    use Step::*;
    let flow = &p.flows["20261205-085300-0830"];
    let steps: Vec<(&str, [Step; 5])> = flow
        .units
        .iter()
        .map(|u| (u.id.as_str(), u.steps))
        .collect();
    assert_eq!(
        steps,
        vec![
            ("a", [Done, Skipped, Done, Done, Done]),
            ("b", [Done, Done, Done, Failed, Pending])
        ]
    );
    assert_eq!(
        flow.units[1].review.as_deref(),
        Some("FAIL: b.txt is wrong")
    );
    assert!(flow.units[1]
        .note
        .as_deref()
        .unwrap()
        .starts_with("review findings: the reviewer"));
    assert_eq!(flow.units[0].tip.as_deref(), Some("0784c898"));
    let wf = &p.workflows["wf-20261204T212108Z-27931c09"];
    assert_eq!(wf.kind, "BUILD");
    let nodes: Vec<(&str, &str, Step, u32)> = wf
        .nodes
        .iter()
        .map(|n| (n.task_id.as_str(), n.agent.as_str(), n.state, n.attempt))
        .collect();
    assert_eq!(
        nodes,
        vec![
            ("t1", "component-builder", Done, 1),
            ("t2", "code-reviewer", Failed, 1),
            ("t3", "failure-hunter", Done, 1),
            ("t7", "component-builder", Done, 2),
            ("t8", "code-reviewer", Done, 1),
            ("t9", "failure-hunter", Done, 1),
            ("t4", "integration-verifier", Done, 1),
            ("t5", "doc-syncer", Done, 1),
        ]
    );
    assert!(wf.checkpoint.is_none());
}

#[test]
fn a_workflow_at_its_checkpoint_needs_the_user_with_the_gate_s_options() {
    let wf_events: Vec<Event> = fixture_events()
        .into_iter()
        .filter(|e| e.source.kind == SourceKind::Workflow)
        .take(12)
        .collect();
    let p = fold(&wf_events);
    let row = &p.rows[0];
    assert_eq!(row.state, State::NeedsInput);
    assert!(
        row.detail
            .starts_with("scope_decision: critical and high findings"),
        "{}",
        row.detail
    );
    let cp = p.workflows["wf-20261204T212108Z-27931c09"]
        .checkpoint
        .clone()
        .unwrap();
    assert_eq!(cp.options, vec!["critical only", "all issues", "abort"]);
    assert_eq!(cp.recommended.as_deref(), Some("all issues"));
}

#[test]
fn a_workflow_s_spending_and_budget_come_from_its_record_s_changes() {
    // The fixture's start, and a change that sets a budget and spends against it (as the
    // runner's `artifact_updated` patches do).
    let mut events: Vec<Event> = fixture_events()
        .into_iter()
        .filter(|e| e.source.kind == SourceKind::Workflow)
        .take(2)
        .collect();
    let line = r#"{"seq":3,"ts":"2026-12-04T21:21:09Z","wf":"wf-20261204T212108Z-27931c09","event":"artifact_updated","phase":null,"task_id":null,"agent":null,"decision":null,"reason":"spent","delta":{"run":{"budget_usd":0.015},"spent":{"cost_usd":0.0111,"input_tokens":1200,"output_tokens":300}}}"#;
    events.extend(self::events(
        SourceKind::Workflow,
        "wf-20261204T212108Z-27931c09",
        line,
    ));
    let p = fold(&events);
    let s = p.workflows["wf-20261204T212108Z-27931c09"].spent;
    assert_eq!(
        (s.cost_usd, s.tokens(), s.budget_usd, s.budget_tokens),
        (0.0111, 1500, Some(0.015), None)
    );
    assert!((s.share().unwrap() - 0.74).abs() < 1e-9);
    assert_eq!(p.rows[0].cost_usd, Some(0.0111));
    assert_eq!(p.rows[0].tokens, 1500);
}

#[test]
fn folding_the_feed_in_chunks_equals_folding_it_at_once() {
    let all = fixture_events();
    let whole = fold(&all);
    for size in [1, 3, 7, 50] {
        let mut p = Project::default();
        let mut k = 0u64;
        for chunk in all.chunks(size) {
            let mut part = p.clone();
            for e in chunk {
                part.apply(e, k * 10);
                k += 1;
            }
            p = part;
        }
        assert_eq!(p, whole, "chunks of {size}");
    }
}

#[test]
fn a_session_s_delegations_are_rows_per_call_and_entry() {
    use baton_exec::types::Activity;
    let mut p = Project::default();
    p.delegation(
        0,
        &EntryEvent::Queued {
            name: "scan".into(),
            role: "scout".into(),
        },
        0,
    );
    p.delegation(
        1,
        &EntryEvent::Queued {
            name: "fix".into(),
            role: "implementer".into(),
        },
        0,
    );
    p.delegation(
        0,
        &EntryEvent::Launching {
            model: "mock/fast".into(),
            thinking: None,
            cwd: "/p".into(),
            note: None,
        },
        5,
    );
    p.delegation(
        0,
        &EntryEvent::Activity {
            activity: Activity::ToolStart {
                call_id: "c".into(),
                tool: "grep".into(),
                path: Some("src".into()),
            },
        },
        6,
    );
    p.delegation(
        0,
        &EntryEvent::Activity {
            activity: Activity::MessageEnd { turn: 2 },
        },
        7,
    );
    p.delegation(
        1,
        &EntryEvent::Finished {
            status: EntryStatus::Failed,
            session: Some("0190-child".into()),
        },
        9,
    );
    assert_eq!(p.rows[1].session.as_deref(), Some("0190-child"));
    // A second call starts again at entry 0: new rows.
    p.delegation(
        0,
        &EntryEvent::Queued {
            name: "again".into(),
            role: "scout".into(),
        },
        10,
    );
    let rows: Vec<(String, Option<usize>, State, Option<String>, u32)> = p
        .rows
        .iter()
        .map(|r| {
            (
                format!("{}:{}", r.id, r.name),
                r.index,
                r.state,
                r.tool.clone(),
                r.turns,
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            (
                "1:scan".into(),
                Some(0),
                State::Running,
                Some("grep".into()),
                2
            ),
            ("1:fix".into(), Some(1), State::Failed, None, 0),
            ("2:again".into(), Some(0), State::Running, None, 0),
        ]
    );
}

/// A managed worker's log, typed as `baton worker` writes it.
pub(crate) fn worker_events(name: &str) -> Vec<Event> {
    use baton_exec::worker::{TurnUsage, WorkerEvent, WorkerSpec};
    let at = || "2026-12-05T11:00:00Z".to_string();
    let evs = vec![
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
    let mut offset = 0;
    evs.into_iter()
        .map(|ev| {
            let source = Source::new(SourceKind::Worker, name);
            let line = serde_json::to_string(&ev).unwrap();
            let e = ProjectEvent {
                pos: Position {
                    source: source.clone(),
                    offset,
                },
                source,
                ts: None,
                event: Payload::parse(SourceKind::Worker, line.as_bytes()).unwrap(),
            };
            offset += line.len() as u64 + 1;
            e
        })
        .collect()
}

#[test]
fn a_worker_is_one_row_with_its_turns_spending_and_last_answer() {
    let mut p = Project::default();
    for (k, e) in worker_events("w1").iter().enumerate() {
        p.apply(e, k as u64 * 10);
    }
    let row = p.rows.iter().find(|r| r.kind == Kind::Worker).unwrap();
    assert_eq!(row.name, "worker w1");
    assert_eq!(row.role, "helper");
    assert_eq!(row.state, State::Running);
    assert_eq!((row.turns, row.tokens), (1, 1500));
    assert_eq!(row.cost_usd, Some(0.0081));
    assert_eq!(row.session.as_deref(), Some("01s"));
    assert_eq!(
        row.detail,
        "idle · answered: Three notes, all on the parser."
    );
    let mut stopped = worker_events("w1");
    let source = Source::new(SourceKind::Worker, "w1");
    stopped.push(ProjectEvent {
        pos: Position {
            source: source.clone(),
            offset: 9999,
        },
        source,
        ts: None,
        event: Payload::parse(
            SourceKind::Worker,
            br#"{"type":"worker.stopped","reason":"idle","at":"2026-12-05T11:10:00Z"}"#,
        )
        .unwrap(),
    });
    let mut p = Project::default();
    for e in &stopped {
        p.apply(e, 0);
    }
    let row = p.rows.iter().find(|r| r.kind == Kind::Worker).unwrap();
    assert_eq!(row.state, State::Done);
    assert_eq!(row.detail, "stopped (idle)");
}
