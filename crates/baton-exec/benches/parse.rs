//! Parsing throughput: a large event stream read through the executor's own path (bounded line
//! splitting in 64 KiB chunks + the format's parser, [`StreamReader`]) against
//! `serde_json::from_str::<serde_json::Value>` on the same lines in a loop. Goal: within 2× of
//! serde_json.
//!
//! Streams: a generated 50 MB `baton agent --json` stream (turns of reasoning and answer deltas,
//! tool calls with outputs, usage), plus the recorded pi (0.73 full form, 1.x delta-only) and codex
//! streams of `tests/fixtures` repeated to the same size.
//!
//! Run with `cargo bench -p baton-exec --bench parse` (`-- --mb N` for another size).

use std::hint::black_box;
use std::time::{Duration, Instant};

use baton_exec::executor::StreamReader;
use baton_exec::StreamFormat;

const CHUNK: usize = 64 * 1024;

/// A small deterministic generator, so every run parses the same bytes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const WORDS: &[&str] = &[
    "the", "parser", "reads", "each", "line", "once", "and", "keeps", "only", "what", "it",
    "needs", "function", "returns", "an", "error", "when", "file", "is", "missing", "so", "I",
    "will", "check", "tests", "cargo", "build", "fails", "because", "of", "a", "typo", "in",
    "main.rs",
];

fn words(rng: &mut Rng, n: usize) -> String {
    let mut s = String::new();
    for i in 0..n {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
    }
    s
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// A realistic `baton agent --json` stream of about `target` bytes.
fn baton_stream(target: usize) -> String {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut out = String::with_capacity(target + 64 * 1024);
    let mut item = 0u64;
    let mut turn = 0u32;
    out.push_str(r#"{"type":"session.started","protocol_version":1,"session_id":"0193c0de-0000-7000-8000-000000000000","role":"implementer","model":"local/qwen2.5-coder:7b","cwd":"/src/app","resumed":false}"#);
    out.push('\n');
    while out.len() < target {
        turn += 1;
        out.push_str(&format!("{{\"type\":\"turn.started\",\"turn\":{turn}}}\n"));
        // Reasoning, streamed in small deltas.
        let id = format!("item_{item}");
        item += 1;
        out.push_str(&format!(
            "{{\"type\":\"item.started\",\"item\":{{\"id\":\"{id}\",\"status\":\"in_progress\",\"type\":\"reasoning\",\"text\":\"\"}}}}\n"
        ));
        let mut full = String::new();
        for _ in 0..(20 + rng.below(40)) {
            let n = 1 + rng.below(4) as usize;
            let d = format!("{} ", words(&mut rng, n));
            full.push_str(&d);
            out.push_str(&format!(
                "{{\"type\":\"item.delta\",\"item_id\":\"{id}\",\"delta\":{}}}\n",
                json_str(&d)
            ));
        }
        out.push_str(&format!(
            "{{\"type\":\"item.completed\",\"item\":{{\"id\":\"{id}\",\"status\":\"completed\",\"type\":\"reasoning\",\"text\":{}}}}}\n",
            json_str(&full)
        ));
        out.push_str(&format!(
            "{{\"type\":\"turn.completed\",\"turn\":{turn},\"usage\":{{\"input_tokens\":{},\"cached_input_tokens\":{},\"output_tokens\":{}}}}}\n",
            8000 + rng.below(4000),
            6000,
            40 + rng.below(200)
        ));
        // One or two tool calls with outputs.
        for _ in 0..(1 + rng.below(2)) {
            let id = format!("item_{item}");
            item += 1;
            let call = format!("call_{}", rng.next() % 1_000_000);
            let (tool, args, path) = match rng.below(3) {
                0 => (
                    "read",
                    r#"{"path":"src/main.rs"}"#.to_string(),
                    ",\"path\":\"src/main.rs\"",
                ),
                1 => (
                    "bash",
                    r#"{"command":"cargo test --quiet 2>&1 | tail -n 40"}"#.to_string(),
                    "",
                ),
                _ => (
                    "edit",
                    format!(
                        "{{\"path\":\"src/lib.rs\",\"old\":{},\"new\":{}}}",
                        json_str(&words(&mut rng, 12)),
                        json_str(&words(&mut rng, 14))
                    ),
                    ",\"path\":\"src/lib.rs\"",
                ),
            };
            out.push_str(&format!(
                "{{\"type\":\"item.started\",\"item\":{{\"id\":\"{id}\",\"status\":\"in_progress\",\"type\":\"tool_call\",\"call_id\":\"{call}\",\"tool\":\"{tool}\",\"arguments\":{args}{path}}}}}\n"
            ));
            let mut output = String::new();
            for n in 1..(10 + rng.below(40)) {
                output.push_str(&format!("{n:>6}\t{}\n", words(&mut rng, 6)));
                if output.len() > 2000 {
                    break;
                }
            }
            out.push_str(&format!(
                "{{\"type\":\"item.completed\",\"item\":{{\"id\":\"{id}\",\"status\":\"completed\",\"type\":\"tool_call\",\"call_id\":\"{call}\",\"tool\":\"{tool}\",\"arguments\":{args}{path},\"output\":{}}}}}\n",
                json_str(&output)
            ));
        }
        // An answer every few turns.
        if turn.is_multiple_of(4) {
            let id = format!("item_{item}");
            item += 1;
            out.push_str(&format!(
                "{{\"type\":\"item.started\",\"item\":{{\"id\":\"{id}\",\"status\":\"in_progress\",\"type\":\"agent_message\",\"text\":\"\"}}}}\n"
            ));
            let mut full = String::new();
            for _ in 0..(30 + rng.below(60)) {
                let n = 1 + rng.below(3) as usize;
                let d = format!("{} ", words(&mut rng, n));
                full.push_str(&d);
                out.push_str(&format!(
                    "{{\"type\":\"item.delta\",\"item_id\":\"{id}\",\"delta\":{}}}\n",
                    json_str(&d)
                ));
            }
            out.push_str(&format!(
                "{{\"type\":\"item.completed\",\"item\":{{\"id\":\"{id}\",\"status\":\"completed\",\"type\":\"agent_message\",\"text\":{}}}}}\n",
                json_str(&full)
            ));
        }
    }
    out.push_str(r#"{"type":"session.completed","outcome":"completed","final_message":"done","turns":1,"usage":{"input_tokens":1,"cached_input_tokens":0,"output_tokens":1}}"#);
    out.push('\n');
    out
}

fn repeated_fixture(name: &str, target: usize) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let one = std::fs::read_to_string(&path).unwrap_or_default();
    if one.is_empty() {
        return one;
    }
    let mut out = String::with_capacity(target + one.len());
    while out.len() < target {
        out.push_str(&one);
    }
    out
}

fn best_of<F: FnMut() -> usize>(runs: usize, mut f: F) -> Duration {
    let mut best = Duration::MAX;
    for _ in 0..runs {
        let t = Instant::now();
        black_box(f());
        best = best.min(t.elapsed());
    }
    best
}

fn mb_per_s(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / 1e6 / d.as_secs_f64()
}

fn measure(label: &str, format: StreamFormat, stream: &str) {
    let bytes = stream.as_bytes();
    let lines: Vec<&str> = stream.lines().collect();
    let ours = best_of(5, || {
        let mut reader = StreamReader::new(format);
        let mut activity = Vec::new();
        let mut events = 0;
        for chunk in bytes.chunks(CHUNK) {
            reader.feed(chunk, &mut activity);
            events += activity.len();
            activity.clear();
        }
        reader.eof();
        let (end, skipped) = reader.finish();
        assert_eq!(skipped.malformed + skipped.oversized + skipped.partial, 0);
        events + end.final_text.len()
    });
    let serde = best_of(5, || {
        let mut n = 0;
        for line in &lines {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
                n += v.as_object().map_or(0, |o| o.len());
            }
        }
        n
    });
    let (a, b) = (mb_per_s(bytes.len(), ours), mb_per_s(bytes.len(), serde));
    println!(
        "{label:<26} {:>5.1} MB {:>7} lines | executor path {a:>7.1} MB/s | serde_json::Value {b:>7.1} MB/s | executor/serde {:>4.2}x {}",
        bytes.len() as f64 / 1e6,
        lines.len(),
        a / b,
        if a * 2.0 >= b { "(goal: >= 0.5x, met)" } else { "(goal: >= 0.5x, MISSED)" }
    );
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut mb = 50usize;
    while let Some(a) = args.next() {
        if a == "--mb" {
            mb = args.next().and_then(|v| v.parse().ok()).unwrap_or(mb);
        }
    }
    let target = mb * 1_000_000;
    println!("parse throughput, best of 5 runs (executor path: 64 KiB chunks -> bounded lines -> parser)");
    measure(
        "baton (generated)",
        StreamFormat::Baton,
        &baton_stream(target),
    );
    for (label, format, file) in [
        (
            "pi 0.73 full form (rec.)",
            StreamFormat::Pi,
            "pi-0.73-ok.jsonl",
        ),
        (
            "pi 1.x delta-only (rec.)",
            StreamFormat::Pi,
            "pi-1.x-ok.jsonl",
        ),
        ("codex (recorded)", StreamFormat::Codex, "codex-ok.jsonl"),
        ("claude (fixture)", StreamFormat::Claude, "claude-ok.jsonl"),
    ] {
        let stream = repeated_fixture(file, target);
        if !stream.is_empty() {
            measure(label, format, &stream);
        }
    }
}
