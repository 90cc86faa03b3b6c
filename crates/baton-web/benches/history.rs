//! The dashboard's read of a project's history as `baton serve` starts: every log read into the
//! lines, summaries, projection and spending the page is drawn from (`History::catch_up`), side
//! by side with a plain read + `serde_json::Value` parse of the same lines, at 100,000 events.
//! The logs are copies of a workflow log the binary wrote
//! (`crates/baton-events/src/projection/fixtures/workflow.events.jsonl`, 29 events, 1.7 KB each
//! on average, most of it the artifact's change), as `bench.mjs grow` makes them.
//!
//! `cargo bench -p baton-web --bench history` (release build). Prints the medians of a few runs
//! and the ratio to the plain parse; the figures are read, not asserted.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use baton_state::StateDir;
use baton_web::history::History;

const EVENTS: usize = 100_000;
const RUNS: usize = 5;
const TEMPLATE: &str =
    include_str!("../../baton-events/src/projection/fixtures/workflow.events.jsonl");

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Writes copies of the template, each under an id of its own, until the logs hold `EVENTS`
/// events; their total size in bytes.
fn grow(state: &std::path::Path) -> usize {
    let lines: Vec<&str> = TEMPLATE.lines().collect();
    let id: String = serde_json::from_str::<serde_json::Value>(lines[0]).unwrap()["wf"]
        .as_str()
        .unwrap()
        .to_string();
    let dir = state.join("workflows");
    std::fs::create_dir_all(&dir).unwrap();
    let (mut events, mut bytes) = (0, 0);
    for n in 0.. {
        if events >= EVENTS {
            break;
        }
        let copy = format!("{}{n:08}", &id[..id.len() - 8]);
        let take = lines.len().min(EVENTS - events);
        let mut text = lines[..take].join("\n").replace(&id, &copy);
        text.push('\n');
        bytes += text.len();
        std::fs::write(dir.join(format!("{copy}.events.jsonl")), text).unwrap();
        events += take;
    }
    bytes
}

/// Every line of every log read and parsed into a `Value`: what any reader of the logs pays.
fn plain(state: &std::path::Path) -> usize {
    let mut n = 0;
    for entry in std::fs::read_dir(state.join("workflows")).unwrap() {
        let text = std::fs::read(entry.unwrap().path()).unwrap();
        for line in text.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let v: serde_json::Value = serde_json::from_slice(line).unwrap();
            n += usize::from(v.is_object());
        }
    }
    n
}

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let bytes = grow(dir.path());
    let (mut plain_t, mut read_t) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let t = Instant::now();
        assert_eq!(plain(dir.path()), EVENTS);
        plain_t.push(t.elapsed());
        let t = Instant::now();
        let mut h = History::new(StateDir::at(dir.path()), Default::default());
        h.catch_up();
        read_t.push(t.elapsed());
        assert_eq!(h.len(), EVENTS, "every event read");
    }
    let (p, r) = (median(plain_t), median(read_t));
    println!(
        "dashboard history at {EVENTS} events ({:.1} MB of workflow logs), medians of {RUNS} runs",
        bytes as f64 / 1e6
    );
    println!("  plain read + Value parse   {:>9.1} ms", ms(p));
    println!(
        "  History::catch_up          {:>9.1} ms   {:.2}x the plain parse",
        ms(r),
        ms(r) / ms(p)
    );
}
