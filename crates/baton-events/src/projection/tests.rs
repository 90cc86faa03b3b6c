#![allow(clippy::unwrap_used, clippy::expect_used, clippy::type_complexity)]
//! The projection over logs the real binary wrote: a Flow whose second unit the reviewer
//! blocked, a background task, and a BUILD workflow stopped at its scope checkpoint.

use baton_protocol::{Position, ProjectEvent, Source, SourceKind};
use pretty_assertions::assert_eq;

use super::fixtures::{events, fixture_events, worker_events};
use super::*;
use crate::{Event, Payload};

fn fold(events: &[Event]) -> Projection {
    let mut p = Projection::default();
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
        let mut p = Projection::default();
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
    let mut p = Projection::default();
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

#[test]
fn a_worker_is_one_row_with_its_turns_spending_and_last_answer() {
    let mut p = Projection::default();
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
    let mut p = Projection::default();
    for e in &stopped {
        p.apply(e, 0);
    }
    let row = p.rows.iter().find(|r| r.kind == Kind::Worker).unwrap();
    assert_eq!(row.state, State::Done);
    assert_eq!(row.detail, "stopped (idle)");
}

#[test]
fn a_task_is_one_document_and_a_transcript_is_a_session_document() {
    let p = fold(&fixture_events());
    let t = p.doc(SourceKind::Task, "t1a245681cbdac0a8").unwrap();
    assert_eq!(t.kind, Kind::Task);
    assert_eq!(t.state, State::Done);
    assert_eq!(t.what.as_deref(), Some("hb: help me"));
    assert_eq!(t.role, "helper");
    let log = concat!(
        r#"{"type":"session","session_id":"s1","role":"main","model":"mock/m","cwd":"/p","created":"2026-12-05T08:53:00Z"}"#,
        "\n",
        r#"{"type":"message","message":{"role":"user","text":"hi"},"seat":"executor"}"#,
        "\n",
        r#"{"type":"route","model":"mock/n"}"#,
        "\n",
        r#"{"type":"ended","outcome":"completed"}"#,
    );
    let p = fold(&events(SourceKind::Session, "s1", log));
    let s = p.doc(SourceKind::Session, "s1").unwrap();
    assert_eq!(
        (s.state, s.role.as_str(), s.model.as_deref(), s.routed),
        (State::Done, "main", Some("mock/n"), true)
    );
}

/// The documents of the fixtures, as `baton serve` sends them, are kept in
/// `fixtures/projection.json`: the page model's node tests read that file, so a change of the
/// documents' shape shows there (write it again with `BATON_WRITE_FIXTURES=1`).
#[test]
fn the_fixtures_documents_are_the_committed_ones() {
    let mut all = fixture_events();
    all.extend(worker_events("w1"));
    let p = fold(&all);
    let text = serde_json::to_string_pretty(&p.docs()).unwrap() + "\n";
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/projection/fixtures/projection.json");
    if std::env::var_os("BATON_WRITE_FIXTURES").is_some() {
        std::fs::write(&path, &text).unwrap();
    }
    let kept = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        kept == text,
        "{} differs from the projection of the fixtures; write it again with BATON_WRITE_FIXTURES=1",
        path.display()
    );
}

/// The documents' TypeScript declarations, derived from these types (`ts-rs`, in tests only), are
/// kept beside the page's modules in `crates/baton-web/src/assets/projection.d.ts` (not served):
/// the dashboard's JS is checked against them by `tsc` (`crates/baton-web/tests/types.rs`), so a
/// change of the documents' shape that the page does not follow fails there. Numbers are
/// `number` (JSON's), never `bigint`.
#[test]
fn the_typescript_declarations_are_the_committed_ones() {
    use ts_rs::TS;
    let cfg = ts_rs::Config::new().with_large_int("number");
    /// A type's doc comment and its declaration, as `ts-rs` exports one (no trailing blanks).
    fn decl<T: TS>(cfg: &ts_rs::Config) -> String {
        let text = format!("{}export {}", T::docs().unwrap_or_default(), T::decl(cfg));
        let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
        format!("\n{}\n", lines.join("\n"))
    }
    let decls = [
        decl::<Doc>(&cfg),
        decl::<Workflow>(&cfg),
        decl::<Node>(&cfg),
        decl::<Checkpoint>(&cfg),
        decl::<Spent>(&cfg),
        decl::<Flow>(&cfg),
        decl::<Unit>(&cfg),
        decl::<Check>(&cfg),
        decl::<Kind>(&cfg),
        decl::<State>(&cfg),
        decl::<Step>(&cfg),
    ];
    let text = String::from(
        "// The projection's documents (`baton_events::projection::Doc`) as `baton serve` sends them,\n\
         // derived from the Rust types by baton-events' test\n\
         // `the_typescript_declarations_are_the_committed_ones`: do not edit, write it again with\n\
         // BATON_WRITE_TYPES=1.\n",
    ) + &decls.concat();
    let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap();
    let path = crates.join("baton-web/src/assets/projection.d.ts");
    if std::env::var_os("BATON_WRITE_TYPES").is_some() {
        std::fs::write(&path, &text).unwrap();
    }
    let kept = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        kept == text,
        "{} differs from the declarations of baton_events::projection's documents; write it again \
         with BATON_WRITE_TYPES=1",
        path.display()
    );
}

/// [22/24] History folded at once ends every row as it is read; its duration comes from the
/// events' own times (it showed `0s`, then nothing).
#[test]
fn a_row_folded_from_history_takes_its_duration_from_its_events_times() {
    let mut evs: Vec<Event> = fixture_events()
        .into_iter()
        .filter(|e| e.source.kind == SourceKind::Workflow)
        .collect();
    let last = evs.len() - 1;
    for (k, e) in evs.iter_mut().enumerate() {
        e.ts = Some(format!(
            "2026-12-06T10:00:{:02}.000Z",
            if k == last { 42 } else { k.min(30) }
        ));
    }
    let p = fold(&evs);
    let row = p
        .rows
        .iter()
        .find(|r| r.kind == Kind::Workflow)
        .expect("the workflow's row");
    assert!(row.ended_ms.is_some(), "{row:?}");
    assert_eq!(row.elapsed_ms(1_000_000), 42_000, "{row:?}");
    // A task's rows are its entries: they take their times the same way.
    let mut evs: Vec<Event> = fixture_events()
        .into_iter()
        .filter(|e| e.source.kind == SourceKind::Task)
        .collect();
    assert!(evs.len() < 60);
    for (k, e) in evs.iter_mut().enumerate() {
        e.ts = Some(format!("2026-12-06T11:00:{k:02}.000Z"));
    }
    let p = fold(&evs);
    let row = p
        .rows
        .iter()
        .find(|r| r.kind == Kind::Task)
        .expect("the task's row");
    // Event k is at second k: the entry's time is whole seconds, from its first event to the
    // one that ended it, not the fold clock's 10 ms steps.
    let span = row.elapsed_ms(1_000_000);
    assert!(span >= 1_000 && span % 1_000 == 0, "{span} {row:?}");
    // Without times, as before: the fold's own clock.
    let p = fold(&fixture_events());
    let row = p.rows.iter().find(|r| r.kind == Kind::Workflow).unwrap();
    let clock = row.ended_ms.unwrap() - row.started_ms.unwrap();
    assert_eq!(row.elapsed_ms(1_000_000), clock);
}

/// A Flow on Temporal's record (its starter's) says so in its row, whatever event came last.
#[test]
fn a_flow_on_temporal_says_so_in_its_row() {
    let created: baton_flow::FlowEvent = serde_json::from_value(serde_json::json!({
        "type": "flow.created", "id": "f-t", "created": "t", "repo_root": "/r",
        "main_branch": "main", "main_oid": "a", "worktree_root": "/r",
        "units": [{"id": "a", "name": "a", "task": "t", "validation": []}],
        "implementer": null, "reviewer": null,
        "temporal": {"remote": "/remote.git", "target": "refs/heads/main"}
    }))
    .unwrap();
    let mut flow = flow::Flow::default();
    let (state, detail) = flow.apply(&created);
    assert_eq!(state, Some(State::Running));
    assert_eq!(
        flow.row_detail(state, detail),
        "1 units onto main · on Temporal, as last seen here"
    );
    let started: baton_flow::FlowEvent = serde_json::from_value(serde_json::json!({
        "type": "unit.implementer_started", "unit": "a", "attempt": 0, "model_class": null
    }))
    .unwrap();
    let (state, detail) = flow.apply(&started);
    let row = flow.row_detail(state, detail);
    assert!(row.ends_with(" · on Temporal, as last seen here"), "{row}");
}

/// A workflow log read with `Payload::parse_projected` folds into the projection the whole
/// parse folds into, each event the same but for its change of the artifact, from which the
/// task graph and the agents' answers are gone.
#[test]
fn a_projected_parse_gives_the_projection_of_the_whole_parse() {
    let id = "wf-20261204T212108Z-27931c09";
    // The fixture, and a change with a budget beside the bulk of a real one.
    let budget = r#"{"seq":30,"ts":"2026-12-04T21:21:09Z","wf":"wf-20261204T212108Z-27931c09","event":"artifact_updated","phase":null,"task_id":null,"agent":null,"decision":null,"reason":"spent","delta":{"run":{"budget_usd":0.015,"budget_tokens":9000,"outputs":{"t1":"a long answer"}},"tasks":[{"id":"t1","status":"done"}],"spent":{"cost_usd":0.0111,"input_tokens":1200,"output_tokens":300}}}"#;
    let log = format!(
        "{}{budget}\n",
        include_str!("fixtures/workflow.events.jsonl")
    );
    let whole = events(SourceKind::Workflow, id, &log);
    let projected: Vec<Event> = whole
        .iter()
        .zip(log.lines())
        .map(|(e, line)| Event {
            event: Payload::parse_projected(SourceKind::Workflow, line.as_bytes()).unwrap(),
            ..e.clone()
        })
        .collect();
    assert_eq!(fold(&projected), fold(&whole));
    let mut bulk = 0;
    for (p, w) in projected.iter().zip(&whole) {
        let (Payload::Workflow(p), Payload::Workflow(w)) = (&p.event, &w.event) else {
            panic!("not a workflow event");
        };
        assert_eq!(
            (&p.seq, &p.ts, &p.wf, &p.body),
            (&w.seq, &w.ts, &w.wf, &w.body)
        );
        let (Some(pd), Some(wd)) = (&p.delta, &w.delta) else {
            assert_eq!(p.delta.is_none(), w.delta.is_none());
            continue;
        };
        bulk += usize::from(wd.get("tasks").is_some());
        assert!(pd.get("tasks").is_none(), "{pd}");
        assert!(pd["run"].get("outputs").is_none(), "{pd}");
        for key in ["spent", "user_request", "run_state", "checkpoint"] {
            assert_eq!(pd.get(key), wd.get(key), "{key}");
        }
    }
    assert!(
        bulk > 10,
        "the fixture's changes carry the task graph: {bulk}"
    );
    let last = fold(&projected).workflows[id].spent;
    assert_eq!(
        (last.budget_usd, last.budget_tokens, last.tokens()),
        (Some(0.015), Some(9000), 1500)
    );
}

/// A change that is not a map holds nothing the projection reads; a key written with escapes
/// is the key it spells.
#[test]
fn a_projected_change_of_any_shape_reads_as_the_projection_would_index_it() {
    let read = |text: &str| serde_json::from_str::<ProjectedChange>(text).unwrap().0;
    assert_eq!(read("null"), serde_json::Value::Null);
    assert_eq!(read("[1, {\"spent\": 2}]"), serde_json::Value::Null);
    assert_eq!(read("\"spent\""), serde_json::Value::Null);
    assert_eq!(
        read(r#"{"sp\u0065nt": {"cost_usd": 1}, "run": 3, "tasks": [{"spent": 1}]}"#),
        serde_json::json!({"spent": {"cost_usd": 1}, "run": null})
    );
    assert!(serde_json::from_str::<ProjectedChange>("{\"spent\": ").is_err());
}
