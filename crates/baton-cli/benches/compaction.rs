//! Context compaction over a long session: the same scripted 200-turn session (each turn a
//! `bash` call whose output is about 3.5 KB of text) run twice by the built `baton` against the
//! mock model server:
//!
//! - **compacted**: the route's `context_window` is 32,000 tokens (`[model_info]`), so the
//!   session compacts whenever the next request would not fit (a mock rule answers each summary
//!   request);
//! - **unlimited**: the same model name with no known window, so nothing is compacted and every
//!   request resends the whole conversation.
//!
//! Input tokens are counted with the `o200k_base` encoding over each request's whole JSON body.
//! The bench fails when a request of the compacted run exceeds the window, or when either run
//! does not finish. `cargo bench -p baton-cli --bench compaction` prints the table and the ratio
//! of the two runs' total input tokens.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use baton_testkit::fixture::{json_lines, Sandbox};
use baton_testkit::{MockServer, RecordedRequest, Turn};
use serde_json::json;

const TURNS: usize = 200;
const WINDOW: usize = 32_000;
const SUMMARY: &str = "## Goal\nRun the 200 checks and report.\n## Decisions\nRun them one by one.\n## Files\nNone changed.\n## State\nThe checks so far printed their lines; all passed.\n## Open threads\nThe remaining checks.\n## Last results\nThe last check printed 80 lines.";

struct Run {
    requests: usize,
    compactions: usize,
    max_tokens: usize,
    total_tokens: usize,
}

fn run(window: Option<usize>, bpe: &tiktoken_rs::CoreBPE) -> Run {
    let mut builder = MockServer::builder().when(
        |r: &RecordedRequest| {
            r.last_user_text()
                .is_some_and(|t| t.contains("about to be compacted"))
        },
        Turn::text(SUMMARY),
    );
    for i in 0..TURNS {
        builder = builder.turn(Turn::tool_call(
            format!("c{i}"),
            "bash",
            json!({"command": format!("yes 'check {i}: the quick brown fox jumps over the lazy dog' | head -n 80")}),
        ));
    }
    let server = builder
        .turn(Turn::text("All 200 checks ran."))
        .start_blocking();
    let model_info = match window {
        Some(w) => format!("\n[model_info.\"bench-model\"]\ncontext_window = {w}\n"),
        None => String::new(),
    };
    let p = Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .mock_provider(&server, "openai", &model_info);
    let out = p.run(&[
        "agent",
        "--json",
        "--max-turns",
        "400",
        "--model",
        "mock/bench-model",
        "Run the 200 checks one by one and report.",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let events = json_lines(&out);
    let last = events.last().unwrap();
    assert_eq!(last["final_message"], "All 200 checks ran.");
    let compactions = events
        .iter()
        .filter(|e| e["type"] == "session.compacted")
        .count();
    let reqs = server.model_requests();
    let tokens: Vec<usize> = reqs
        .iter()
        .map(|r| bpe.encode_ordinary(&r.body.to_string()).len())
        .collect();
    Run {
        requests: reqs.len(),
        compactions,
        max_tokens: tokens.iter().copied().max().unwrap_or(0),
        total_tokens: tokens.iter().sum(),
    }
}

fn main() {
    let bpe = tiktoken_rs::o200k_base().unwrap();
    let compacted = run(Some(WINDOW), &bpe);
    let unlimited = run(None, &bpe);
    println!("## compaction: a {TURNS}-turn session, window {WINDOW} tokens\n");
    println!("| run | requests | compactions | largest request (tokens) | total input tokens |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    for (name, r) in [("compacted", &compacted), ("unlimited", &unlimited)] {
        println!(
            "| {name} | {} | {} | {} | {} |",
            r.requests, r.compactions, r.max_tokens, r.total_tokens
        );
    }
    println!(
        "\ncompacted / unlimited total input tokens: {:.1}%",
        100.0 * compacted.total_tokens as f64 / unlimited.total_tokens.max(1) as f64
    );
    assert!(
        compacted.compactions > 0,
        "the compacted run never compacted"
    );
    assert!(
        compacted.max_tokens <= WINDOW,
        "a request of the compacted run ({} tokens) exceeded the window ({WINDOW})",
        compacted.max_tokens
    );
}
