#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The stream parsers on recorded streams of every format (see `fixtures/README.md`), fed through
//! the executor's own reader in chunks of several sizes.

use baton_exec::backend::{ParsedEnd, Verdict};
use baton_exec::executor::StreamReader;
use baton_exec::{Activity, SkippedLines, StreamFormat};
use baton_protocol::Usage;
use pretty_assertions::assert_eq;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Parses a stream whole and in chunks of 1, 7 and 4096 bytes; all must agree.
fn parse(format: StreamFormat, bytes: &[u8]) -> (Vec<Activity>, ParsedEnd, SkippedLines) {
    let mut results = Vec::new();
    for chunk in [bytes.len().max(1), 1, 7, 4096] {
        let mut reader = StreamReader::new(format);
        let mut out = Vec::new();
        for piece in bytes.chunks(chunk) {
            reader.feed(piece, &mut out);
        }
        reader.eof();
        let (end, skipped) = reader.finish();
        results.push((out, end, skipped));
    }
    let first = results[0].clone();
    for other in &results[1..] {
        assert_eq!(&first, other);
    }
    first
}

fn usage(input: u64, cached: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        cached_input_tokens: cached,
        output_tokens: output,
        cache_write_tokens: 0,
    }
}

fn start(id: &str, tool: &str, path: Option<&str>) -> Activity {
    Activity::ToolStart {
        call_id: id.into(),
        tool: tool.into(),
        path: path.map(String::from),
    }
}

fn end(id: &str, tool: &str, is_error: bool) -> Activity {
    Activity::ToolEnd {
        call_id: id.into(),
        tool: tool.into(),
        is_error,
    }
}

const ANSWER: &str = "The notes say: hello from the fixture. DONE-OK";

#[test]
fn baton_stream() {
    let (activity, parsed, skipped) = parse(StreamFormat::Baton, &fixture("baton-ok.jsonl"));
    assert_eq!(
        activity,
        vec![
            Activity::Thinking,
            Activity::MessageEnd { turn: 1 },
            Activity::Tokens {
                usage: usage(1200, 1000, 40)
            },
            start("call_read_1", "read", Some("notes.txt")),
            end("call_read_1", "read", false),
            Activity::Thinking,
            Activity::MessageEnd { turn: 2 },
            Activity::Tokens {
                usage: usage(2500, 2200, 52)
            },
        ]
    );
    assert_eq!(
        parsed,
        ParsedEnd {
            final_text: ANSWER.into(),
            final_omitted: 0,
            usage: usage(2500, 2200, 52),
            turns: 2,
            tools_started: 1,
            stop_reason: Some("completed".into()),
            error_message: None,
            verdict: Verdict::Completed,
            cost_usd: None,
            // The child's own session, from `session.started`.
            session_id: Some("01a236ff-78f5-77b6-bf95-c699b2501dbd".into()),
        }
    );
    assert_eq!(skipped, SkippedLines::default());

    let (activity, parsed, _) = parse(StreamFormat::Baton, &fixture("baton-fail.jsonl"));
    assert_eq!(activity, vec![]);
    assert_eq!(parsed.verdict, Verdict::Failed);
    assert_eq!(parsed.stop_reason.as_deref(), Some("model_error"));
    assert!(parsed
        .error_message
        .as_deref()
        .unwrap()
        .starts_with("bad_request: mock returned HTTP 400"));
}

fn pi_ok(name: &str) {
    let (activity, parsed, skipped) = parse(StreamFormat::Pi, &fixture(name));
    assert_eq!(
        activity,
        vec![
            Activity::Thinking,
            Activity::MessageEnd { turn: 1 },
            Activity::Tokens {
                usage: usage(1200, 1000, 40)
            },
            start("call_read_1", "read", Some("notes.txt")),
            end("call_read_1", "read", false),
            Activity::Thinking,
            Activity::MessageEnd { turn: 2 },
            Activity::Tokens {
                usage: usage(2500, 2200, 52)
            },
        ],
        "{name}"
    );
    assert_eq!(
        parsed,
        ParsedEnd {
            final_text: ANSWER.into(),
            final_omitted: 0,
            usage: usage(2500, 2200, 52),
            turns: 2,
            tools_started: 1,
            stop_reason: Some("stop".into()),
            error_message: None,
            verdict: Verdict::Completed,
            cost_usd: None,
            session_id: None,
        },
        "{name}"
    );
    assert_eq!(skipped, SkippedLines::default());
}

#[test]
fn pi_full_form_stream() {
    pi_ok("pi-0.73-ok.jsonl");
}

#[test]
fn pi_delta_only_stream() {
    pi_ok("pi-1.x-ok.jsonl");
}

#[test]
fn pi_model_failure() {
    for (name, message) in [
        ("pi-0.73-fail.jsonl", "400 model exploded"),
        (
            "pi-1.x-fail.jsonl",
            r#"400: {"message":"model exploded","type":"invalid_request_error","param":null,"code":null}"#,
        ),
    ] {
        let (activity, parsed, _) = parse(StreamFormat::Pi, &fixture(name));
        assert_eq!(
            activity,
            vec![
                Activity::MessageEnd { turn: 1 },
                Activity::Tokens {
                    usage: usage(0, 0, 0)
                }
            ]
        );
        assert_eq!(parsed.verdict, Verdict::Failed, "{name}");
        assert_eq!(parsed.stop_reason.as_deref(), Some("error"));
        assert_eq!(parsed.error_message.as_deref(), Some(message));
        assert_eq!(parsed.final_text, "");
    }
}

#[test]
fn pi_length_stop_is_a_token_limit_and_a_retried_agent_end_is_not_final() {
    let stream = concat!(
        r#"{"type":"agent_start"}"#,
        "\n",
        r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"cut"}],"usage":{"input":5,"output":9,"cacheRead":0,"cacheWrite":0},"stopReason":"length"}}"#,
        "\n",
        r#"{"type":"agent_end","messages":[],"willRetry":true}"#,
        "\n",
    );
    let (_, parsed, _) = parse(StreamFormat::Pi, stream.as_bytes());
    assert_eq!(parsed.verdict, Verdict::NoFinal);
    let stream = format!(
        "{stream}{}\n",
        r#"{"type":"agent_settled","aborted":false}"#
    );
    let (_, parsed, _) = parse(StreamFormat::Pi, stream.as_bytes());
    assert_eq!(parsed.verdict, Verdict::TokenLimit);
    assert_eq!(parsed.final_text, "cut");
}

#[test]
fn codex_stream() {
    let (activity, parsed, skipped) = parse(StreamFormat::Codex, &fixture("codex-ok.jsonl"));
    assert_eq!(
        activity,
        vec![
            Activity::Thinking,
            start("item_1", "shell", None),
            end("item_1", "shell", false),
            Activity::Thinking,
            Activity::MessageEnd { turn: 1 },
            Activity::Tokens {
                usage: usage(2500, 2200, 52)
            },
        ]
    );
    assert_eq!(
        parsed,
        ParsedEnd {
            final_text: ANSWER.into(),
            final_omitted: 0,
            usage: usage(2500, 2200, 52),
            turns: 1,
            tools_started: 1,
            stop_reason: Some("completed".into()),
            error_message: None,
            verdict: Verdict::Completed,
            cost_usd: None,
            session_id: None,
        }
    );
    assert_eq!(skipped, SkippedLines::default());

    let (_, parsed, _) = parse(StreamFormat::Codex, &fixture("codex-fail.jsonl"));
    assert_eq!(parsed.verdict, Verdict::Failed);
    assert!(parsed.error_message.unwrap().contains("model exploded"));
}

#[test]
fn codex_file_changes_and_failed_commands() {
    let stream = concat!(
        r#"{"type":"turn.started"}"#,
        "\n",
        r#"{"type":"item.started","item":{"id":"item_0","type":"command_execution","command":"bash -lc 'cargo test'","aggregated_output":"","exit_code":null,"status":"in_progress"}}"#,
        "\n",
        r#"{"type":"item.completed","item":{"id":"item_0","type":"command_execution","command":"bash -lc 'cargo test'","aggregated_output":"1 failed","exit_code":101,"status":"failed"}}"#,
        "\n",
        r#"{"type":"item.completed","item":{"id":"item_1","type":"file_change","changes":[{"path":"/w/src/lib.rs","kind":"update"}],"status":"completed"}}"#,
        "\n",
        r#"{"type":"item.started","item":{"id":"item_2","type":"mcp_tool_call","server":"docs","tool":"search","status":"in_progress"}}"#,
        "\n",
        r#"{"type":"item.completed","item":{"id":"item_2","type":"mcp_tool_call","server":"docs","tool":"search","status":"completed"}}"#,
        "\n",
        r#"{"type":"item.completed","item":{"id":"item_3","type":"todo_list","items":[]}}"#,
        "\n",
        r#"{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":0,"output_tokens":2}}"#,
        "\n",
    );
    let (activity, parsed, _) = parse(StreamFormat::Codex, stream.as_bytes());
    assert_eq!(
        activity,
        vec![
            start("item_0", "shell", None),
            end("item_0", "shell", true),
            start("item_1", "apply_patch", Some("/w/src/lib.rs")),
            end("item_1", "apply_patch", false),
            start("item_2", "search", None),
            end("item_2", "search", false),
            Activity::Tokens {
                usage: usage(10, 0, 2)
            },
        ]
    );
    assert_eq!(parsed.tools_started, 3);
    assert_eq!(parsed.verdict, Verdict::Completed);
}

#[test]
fn claude_stream() {
    let (activity, parsed, skipped) = parse(StreamFormat::Claude, &fixture("claude-ok.jsonl"));
    assert_eq!(
        activity,
        vec![
            Activity::Thinking,
            start(
                "toolu_01ReadNotes",
                "Read",
                Some("/tmp/fixture/work/notes.txt")
            ),
            end("toolu_01ReadNotes", "Read", false),
            Activity::MessageEnd { turn: 1 },
            Activity::Tokens {
                usage: usage(1200, 1000, 40)
            },
            // The path holds an escape sequence: left out, the event kept.
            start("toolu_02Grep", "Grep", None),
            end("toolu_02Grep", "Grep", true),
            Activity::MessageEnd { turn: 2 },
            Activity::Tokens {
                usage: usage(2456, 2250, 60)
            },
            Activity::Thinking,
            Activity::MessageEnd { turn: 3 },
            Activity::Tokens {
                usage: usage(3762, 3550, 72)
            },
        ]
    );
    assert_eq!(
        parsed,
        ParsedEnd {
            final_text: ANSWER.into(),
            final_omitted: 0,
            usage: usage(3762, 3550, 72),
            turns: 3,
            tools_started: 2,
            stop_reason: Some("success".into()),
            error_message: None,
            verdict: Verdict::Completed,
            // Claude Code's own price of its run.
            cost_usd: Some(0.0123),
            session_id: Some("5f0c7d7e-3f43-4a8e-9a51-0f8b4c1d2e3f".into()),
        }
    );
    assert_eq!(skipped, SkippedLines::default());
}

#[test]
fn claude_turn_limit_and_failure() {
    let (_, parsed, _) = parse(StreamFormat::Claude, &fixture("claude-max-turns.jsonl"));
    assert_eq!(parsed.verdict, Verdict::TurnLimit);
    assert_eq!(parsed.final_text, "Let me look at the notes.");
    assert_eq!(parsed.stop_reason.as_deref(), Some("error_max_turns"));

    let (_, parsed, _) = parse(StreamFormat::Claude, &fixture("claude-fail.jsonl"));
    assert_eq!(parsed.verdict, Verdict::Failed);
    assert_eq!(
        parsed.error_message.as_deref(),
        Some("Invalid API key · Please run /login")
    );
}

#[test]
fn oversized_tool_starts_are_salvaged_in_every_format() {
    let big = "x".repeat(1_200_000);
    let cases = [
        (
            StreamFormat::Baton,
            format!(
                r#"{{"type":"item.started","item":{{"id":"item_0","status":"in_progress","type":"tool_call","call_id":"call_big","tool":"write","path":"big.txt","arguments":{{"path":"big.txt","content":"{big}"}}}}}}"#
            ),
            start("call_big", "write", Some("big.txt")),
        ),
        (
            StreamFormat::Pi,
            format!(
                r#"{{"type":"tool_execution_start","toolCallId":"call_big","toolName":"write","args":{{"path":"big.txt","content":"{big}"}}}}"#
            ),
            start("call_big", "write", Some("big.txt")),
        ),
        (
            StreamFormat::Codex,
            format!(
                r#"{{"type":"item.started","item":{{"id":"item_7","type":"command_execution","command":"{big}","status":"in_progress"}}}}"#
            ),
            start("item_7", "shell", None),
        ),
        (
            StreamFormat::Claude,
            format!(
                r#"{{"type":"assistant","message":{{"id":"msg_1","content":[{{"type":"text","text":"writing"}},{{"type":"tool_use","id":"toolu_big","name":"Write","input":{{"file_path":"/w/big.txt","content":"{big}"}}}}]}}}}"#
            ),
            start("toolu_big", "Write", None),
        ),
    ];
    for (format, line, expected) in cases {
        let stream = format!("{line}\n");
        let (activity, _, skipped) = parse(format, stream.as_bytes());
        assert_eq!(activity, vec![expected], "{format:?}");
        assert_eq!(
            skipped,
            SkippedLines {
                oversized: 1,
                ..SkippedLines::default()
            }
        );
    }
}

#[test]
fn malformed_partial_and_hostile_lines_are_skipped_and_counted() {
    let long_id = "c".repeat(5000);
    let stream = format!(
        "{}\nnot json at all\n{{\"type\":\"item.started\"}}\n{}\n{}\n{}\n{}\n{}\n{{\"type\":\"turn.st",
        r#"{"type":"session.started","protocol_version":1,"session_id":"s","role":"r","model":"m/m","cwd":"/","resumed":false}"#,
        r#"{"type":"item.started","item":{"id":"item_0","status":"in_progress","type":"tool_call","call_id":"c1","tool":"read","arguments":{},"path":"a\u001b]0;pwned\u0007.txt"}}"#,
        r#"{"type":"item.started","item":{"id":"item_1","status":"in_progress","type":"tool_call","call_id":"c2","tool":"read","arguments":{},"path":"line\u2028break"}}"#,
        format_args!(
            r#"{{"type":"item.started","item":{{"id":"item_2","status":"in_progress","type":"tool_call","call_id":"{long_id}","tool":"read","arguments":{{}}}}}}"#
        ),
        r#"{"type":"item.started","item":{"id":"item_3","status":"in_progress","type":"tool_call","call_id":"c4","tool":"re\u009bad","arguments":{}}}"#,
        r#"{"type":"session.completed","outcome":"completed","final_message":"ok","turns":1,"usage":{"input_tokens":1,"cached_input_tokens":0,"output_tokens":1}}"#,
    );
    let (activity, parsed, skipped) = parse(StreamFormat::Baton, stream.as_bytes());
    assert_eq!(
        activity,
        vec![start("c1", "read", None), start("c2", "read", None)]
    );
    assert_eq!(
        skipped,
        SkippedLines {
            malformed: 2,
            oversized: 0,
            partial: 1
        }
    );
    assert_eq!(parsed.verdict, Verdict::Completed);
    assert_eq!(parsed.final_text, "ok");
}

#[test]
fn thinking_is_reported_on_change_only() {
    let mut stream = String::from(
        r#"{"type":"item.started","item":{"id":"item_0","status":"in_progress","type":"agent_message","text":""}}"#,
    );
    stream.push('\n');
    for _ in 0..500 {
        stream.push_str(r#"{"type":"item.delta","item_id":"item_0","delta":"word "}"#);
        stream.push('\n');
    }
    let (activity, _, _) = parse(StreamFormat::Baton, stream.as_bytes());
    assert_eq!(activity, vec![Activity::Thinking]);
}

#[test]
fn plain_stdout_is_the_result() {
    let (activity, parsed, skipped) = parse(StreamFormat::Plain, b"line one\nno newline at end");
    assert_eq!(activity, vec![]);
    assert_eq!(parsed.final_text, "line one\nno newline at end");
    assert_eq!(parsed.verdict, Verdict::Completed);
    assert_eq!(skipped, SkippedLines::default());
}
