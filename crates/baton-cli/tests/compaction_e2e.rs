//! Context compaction through the built `baton`: a route whose context window (set by
//! `[model_info]`) is small fills up; the session has the model summarise, goes on from the
//! summary and its latest messages, records it in the transcript, and `--resume` continues from
//! the compacted view. In each wire format, against the mock model server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use baton_testkit::fixture::{json_lines, Sandbox};
use baton_testkit::{Fault, MockServer, Turn};
use serde_json::{json, Value};

const KINDS: [&str; 3] = ["openai", "openai-responses", "anthropic"];

/// A project whose `small-model` has a 12,000-token window: with the answer's reserve (a
/// quarter of it) a request of about 36 KB no longer fits.
fn project(server: &MockServer, kind: &str) -> Sandbox {
    Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .mock_provider(
            server,
            kind,
            "\n[retry]\ninitial_delay = \"1ms\"\nmax_delay = \"2ms\"\n\n[model_info.\"small-model\"]\ncontext_window = 12000\n",
        )
}

/// A bash call printing 40,000 `x`: after it the session no longer fits the window.
fn big_output() -> Turn {
    Turn::tool_call(
        "c1",
        "bash",
        json!({"command": "head -c 40000 /dev/zero | tr '\\0' x; echo; echo printed"}),
    )
}

/// The id of the session a `--json` run started.
fn session_of(out: &std::process::Output) -> String {
    json_lines(out)[0]["session_id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// `baton ARGS` in `p`; it must exit 0 (stderr shown otherwise).
fn ok(p: &Sandbox, args: &[&str]) -> std::process::Output {
    let out = p.run(args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "baton {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

const SUMMARY: &str = "## Goal\nPrint the xs.\n## State\nPrinted 20000 x with bash; done.";

#[test]
fn a_full_window_is_compacted_and_the_session_goes_on_from_the_summary() {
    for kind in KINDS {
        let server = MockServer::builder()
            .turn(big_output())
            .turn(Turn::text(SUMMARY))
            .turn(Turn::text("Done: printed them."))
            .turn(Turn::text("Again, from the summary."))
            .start_blocking();
        let p = project(&server, kind);
        let out = ok(
            &p,
            &[
                "agent",
                "--json",
                "--model",
                "mock/small-model",
                "print the xs",
            ],
        );
        let events = json_lines(&out);
        let compacted: Vec<&Value> = events
            .iter()
            .filter(|e| e["type"] == "session.compacted")
            .collect();
        assert_eq!(compacted.len(), 1, "{kind}: {events:?}");
        let c = compacted[0];
        assert_eq!(c["trigger"], "auto");
        assert!(
            c["tokens_before"].as_u64().unwrap() > c["tokens_after"].as_u64().unwrap(),
            "{kind}: {c}"
        );
        let done = events.last().unwrap();
        assert_eq!(done["type"], "session.completed");
        assert_eq!(done["final_message"], "Done: printed them.");
        let reqs = server.model_requests();
        assert_eq!(reqs.len(), 3, "{kind}");
        // The summary request: the whole conversation (the long output cut to its ends) and the
        // host's request for the summary, with tools not to be called.
        let asked = reqs[1].last_user_text().unwrap();
        assert!(asked.contains("about to be compacted"), "{kind}: {asked}");
        assert!(asked.contains("## Open threads"), "{kind}: {asked}");
        assert!(reqs[1].result_of("c1").len() < 6000, "{kind}");
        // The next request: the summary (with the user's words verbatim) first, then the kept
        // call and its shortened result.
        let next = reqs[2].messages();
        let first = &next
            .iter()
            .find(|m| m.text.starts_with("<context-summary source=\"host\">"))
            .expect("the summary message")
            .text;
        assert!(
            first.contains("Printed 20000 x with bash"),
            "{kind}: {first}"
        );
        assert!(
            first.ends_with("The user's latest message, verbatim:\nprint the xs"),
            "{kind}: {first}"
        );
        let kept = reqs[2].result_of("c1");
        assert!(
            kept.contains("printed") && kept.len() < 40000,
            "{kind}: {}",
            kept.len()
        );
        assert!(
            !next.iter().any(|m| m.text == "print the xs"),
            "{kind}: the original message was not replaced"
        );
        // The transcript keeps everything, and --resume continues from the compacted view.
        let id = events[0]["session_id"].as_str().unwrap().to_string();
        let transcript =
            std::fs::read_to_string(p.work().join(format!(".baton/state/sessions/{id}.jsonl")))
                .unwrap();
        assert!(transcript.contains("\"type\":\"compacted\""), "{kind}");
        assert!(
            transcript.contains(&"x".repeat(10000)),
            "{kind}: the transcript lost the output"
        );
        ok(&p, &["agent", "--json", "--resume", &id, "again"]);
        let reqs = server.model_requests();
        let resumed = reqs[3].messages();
        assert!(
            resumed
                .iter()
                .any(|m| m.text.starts_with("<context-summary")),
            "{kind}: {resumed:?}"
        );
        assert!(!resumed.iter().any(|m| m.text == "print the xs"), "{kind}");
        assert_eq!(resumed.last().unwrap().text, "again", "{kind}");
    }
}

/// A session whose summary request fails ends with a clear error naming the window, and its
/// transcript keeps the work.
#[test]
fn a_failed_summary_ends_the_session_with_the_reason() {
    let server = MockServer::builder()
        .turn(big_output())
        .fault(Fault::status(400).message("bad request"))
        .start_blocking();
    let p = project(&server, "openai");
    let out = p.run(&[
        "agent",
        "--json",
        "--model",
        "mock/small-model",
        "print the xs",
    ]);
    assert_ne!(out.status.code(), Some(0));
    let events = json_lines(&out);
    let done = events.last().unwrap();
    assert_eq!(done["type"], "session.completed");
    assert_eq!(done["error"]["code"], "context_too_long", "{done}");
    let message = done["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(
            "context window of mock/small-model (12000 tokens) is full and compacting it failed"
        ),
        "{message}"
    );
    assert!(message.contains("[model_info]"), "{message}");
    let id = events[0]["session_id"].as_str().unwrap();
    let listed = p.run(&["sessions"]);
    assert!(String::from_utf8_lossy(&listed.stdout).contains(&id[..8]));
}

/// `/compact` in `baton chat` summarises on demand, focused by its words.
#[test]
fn slash_compact_summarises_on_demand() {
    // A first message long enough that its summary is smaller; and then, [22/24], a
    // conversation so short that the summary would be longer, which is refused and leaves the
    // context as it was.
    let long_one = "one ".repeat(3000);
    for (first, shrinks) in [(long_one.trim_end(), true), ("one", false)] {
        let (out, reqs) = chat_with_compact(first);
        let events = json_lines(&out);
        let asked = reqs[2].last_user_text().unwrap();
        assert!(
            asked.contains("Focus the summary on: the decisions"),
            "{asked}"
        );
        let after = reqs[3].messages();
        // The new input follows.
        assert_eq!(after.last().unwrap().text, "three");
        if shrinks {
            assert!(
                after.iter().any(|m| m.text.starts_with("<context-summary")),
                "{after:?}"
            );
            assert!(!after.iter().any(|m| m.text == first), "{after:?}");
            assert!(events
                .iter()
                .any(|e| e["type"] == "session.compacted" && e["trigger"] == "manual"));
        } else {
            assert!(
                !after.iter().any(|m| m.text.starts_with("<context-summary")),
                "{after:?}"
            );
            assert!(after.iter().any(|m| m.text == first), "{after:?}");
            assert!(!events.iter().any(|e| e["type"] == "session.compacted"));
            let refused = events
                .iter()
                .find(|e| e["type"] == "input.refused")
                .expect("the refusal is said");
            assert_eq!(refused["input"], "/compact");
            assert!(
                refused["reason"]
                    .as_str()
                    .unwrap()
                    .contains("would not make the context smaller"),
                "{refused}"
            );
        }
    }
}

/// `baton chat --json` with `first`, `two`, `/compact the decisions`, `three`; its output and
/// the model requests it made.
fn chat_with_compact(first: &str) -> (std::process::Output, Vec<baton_testkit::RecordedRequest>) {
    use std::io::Write;
    let server = MockServer::builder()
        .turn(Turn::text("First answer."))
        .turn(Turn::text("Second answer."))
        .turn(Turn::text(SUMMARY))
        .turn(Turn::text("Third, after the summary."))
        .start_blocking();
    let p = Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .mock_provider(&server, "openai", "");
    let mut c = p
        .baton(&["chat", "--json", "--model", "mock/m"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin
        .take()
        .unwrap()
        .write_all(format!("{first}\ntwo\n/compact the decisions\nthree\n").as_bytes())
        .unwrap();
    let out = c.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reqs = server.model_requests();
    assert_eq!(reqs.len(), 4);
    (out, reqs)
}

/// `baton agent --resume ID --compact` compacts a saved session and ends; `--compact` without
/// `--resume` is refused.
#[test]
fn agent_resume_compact_compacts_a_saved_session() {
    let server = MockServer::builder()
        .turn(Turn::text("First answer."))
        .turn(Turn::text(SUMMARY))
        .start_blocking();
    let p = Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .mock_provider(&server, "openai", "");
    // Long enough that its summary is smaller (a summary that is not is refused).
    let long = "one ".repeat(3000);
    let out = ok(
        &p,
        &["agent", "--json", "--model", "mock/m", long.trim_end()],
    );
    let id = session_of(&out);
    let out = ok(
        &p,
        &[
            "agent",
            "--json",
            "--model",
            "mock/m",
            "--resume",
            &id,
            "--compact",
        ],
    );
    assert_eq!(
        server.model_requests().len(),
        2,
        "one summary request, no task"
    );
    assert!(json_lines(&out)
        .iter()
        .any(|e| e["type"] == "session.compacted" && e["kept"] == 1));
    let transcript =
        std::fs::read_to_string(p.work().join(format!(".baton/state/sessions/{id}.jsonl")))
            .unwrap();
    assert!(transcript.contains("\"type\":\"compacted\""));
    let out = p.run(&["agent", "--compact", "x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--resume"));
}

/// `agent.compaction_class` names the class whose route writes the summary; a class with no
/// route is refused before anything is sent, naming the key.
#[test]
fn the_compaction_class_writes_the_summary() {
    let server = MockServer::builder()
        .turn(Turn::text("First answer."))
        .turn(Turn::text(SUMMARY))
        .start_blocking();
    let p = Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .mock_provider(
            &server,
            "openai",
            "\n[models]\nfast = \"mock/summary-model\"\n\n[agent]\ncompaction_class = \"fast\"\n",
        );
    let long = "one ".repeat(3000);
    let out = ok(
        &p,
        &[
            "agent",
            "--json",
            "--model",
            "mock/main-model",
            long.trim_end(),
        ],
    );
    let id = session_of(&out);
    ok(
        &p,
        &[
            "agent",
            "--json",
            "--model",
            "mock/main-model",
            "--resume",
            &id,
            "--compact",
        ],
    );
    let reqs = server.model_requests();
    assert_eq!(reqs[0].model(), Some("main-model"));
    assert_eq!(reqs[1].model(), Some("summary-model"));
    let bad = Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .mock_provider(
            &server,
            "openai",
            "\n[agent]\ncompaction_class = \"frontier\"\n",
        );
    let out = bad.run(&["agent", "--model", "mock/main-model", "one"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("agent.compaction_class = \"frontier\""),
        "{err}"
    );
    assert_eq!(server.model_requests().len(), 2, "nothing was sent");
}
