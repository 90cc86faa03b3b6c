//! Workflow store: resume time of a workflow with 100,000 events, side by side with a plain
//! read + parse of the same log, and the latency of one durable append (log line fsynced, then
//! the snapshot written atomically).
//!
//! `cargo bench -p baton-workflow --bench store` (release build). Prints the medians of a few
//! runs and the ratio resume / plain parse; the goal is resume under 200 ms and within 2×.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::time::{Duration, Instant};

use baton_state::StateDir;
use baton_workflow::event::Wire;
use baton_workflow::route::WorkflowKind;
use baton_workflow::store::{EventKind, NewEvent, WorkflowEvent, WorkflowStore};
use serde_json::json;

const EVENTS: u64 = 100_000;
const RUNS: usize = 7;
const APPENDS: usize = 200;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = WorkflowStore::new(StateDir::at(dir.path()));
    let wf = store
        .create(WorkflowKind::Build, "add a --verbose flag")
        .expect("create");
    let id = wf.id().to_string();
    drop(wf);

    // 100,000 events in the shape a long workflow writes: agent starts and completions, each
    // with a small artifact delta. Written in one go (the appends are measured below).
    let path = store.events_path(&id).expect("path");
    let mut file = std::io::BufWriter::new(
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .expect("log"),
    );
    for seq in 2..=EVENTS {
        let agent = ["builder", "reviewer", "hunter", "verifier"][(seq % 4) as usize];
        let ev = Wire {
            seq,
            ts: "2026-12-03T13:45:07.123456789Z".into(),
            wf: id.clone(),
            event: if seq % 2 == 0 {
                EventKind::AgentStarted
            } else {
                EventKind::AgentCompleted
            },
            phase: Some(format!("phase-{}", seq % 7)),
            task_id: Some(format!("t{seq}")),
            agent: Some(agent.into()),
            decision: Some("advance".into()),
            reason: Some("contract validated; scenarios reconciled".into()),
            duration_seconds: Some(12.5),
            details: None,
            delta: Some(json!({
                "phase_cursor": format!("phase-{}", seq % 7),
                "task_ids": {agent: format!("t{seq}")},
                "telemetry": {"loop_counts": {"re_review": seq % 3}},
            })),
        };
        serde_json::to_writer(&mut file, &ev).expect("encode");
        file.write_all(b"\n").expect("write");
    }
    file.flush().expect("flush");
    drop(file);
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);

    let mut plain = Vec::new();
    let mut resume = Vec::new();
    for _ in 0..RUNS {
        let t = Instant::now();
        let text = std::fs::read(&path).expect("read");
        let parsed: Vec<WorkflowEvent> = text
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).expect("parse"))
            .collect();
        plain.push(t.elapsed());
        assert_eq!(parsed.len() as u64, EVENTS);

        let t = Instant::now();
        let wf = store.open(&id).expect("open");
        resume.push(t.elapsed());
        assert_eq!(wf.len(), EVENTS);
    }
    let (plain, resume) = (median(plain), median(resume));

    let mut wf = store.open(&id).expect("open");
    let mut appends = Vec::new();
    for i in 0..APPENDS {
        let t = Instant::now();
        wf.append(
            NewEvent::new(EventKind::ArtifactUpdated)
                .delta(json!({"phase_cursor": format!("p{i}")})),
        )
        .expect("append");
        appends.push(t.elapsed());
    }
    appends.sort();
    let p50 = appends[APPENDS / 2];
    let p99 = appends[APPENDS * 99 / 100];

    println!(
        "workflow store, {EVENTS} events ({:.1} MB), median of {RUNS} runs",
        bytes as f64 / 1e6
    );
    println!("  plain read + parse        {:8.1} ms", ms(plain));
    println!(
        "  resume (read, fold, snapshot) {:8.1} ms   ratio {:.2}x plain",
        ms(resume),
        resume.as_secs_f64() / plain.as_secs_f64()
    );
    println!(
        "  append (fsync + snapshot) p50 {:.2} ms, p99 {:.2} ms over {APPENDS}",
        ms(p50),
        ms(p99)
    );
}
