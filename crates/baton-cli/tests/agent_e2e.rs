//! End-to-end tests: the built `baton` binary against the mock model server, in each wire format.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::{Output, Stdio};
use std::time::Duration;

use baton_protocol::{AgentEvent, EndReason, ErrorCode, ItemKind, ItemStatus, Outcome};
use baton_testkit::fixture::{assert_exit, wait_until, Sandbox};
use baton_testkit::{Fault, MockServer, RecordedRequest, Turn};
use pretty_assertions::assert_eq;
use serde_json::json;

const KINDS: [&str; 3] = ["openai", "openai-responses", "anthropic"];

/// A sandbox running the built `baton` with a config pointing provider `mock` at `server`.
fn project(server: &MockServer, kind: &str, extra_config: &str) -> Sandbox {
    Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .mock_provider(
            server,
            kind,
            &format!("\n[retry]\ninitial_delay = \"1ms\"\nmax_delay = \"20ms\"\n{extra_config}"),
        )
}

/// Alive and not a zombie (the check baton itself uses for supervisors).
fn alive(pid: i32) -> bool {
    u32::try_from(pid).is_ok_and(baton_process::alive)
}

fn events(out: &Output) -> Vec<AgentEvent> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad event line {l}: {e}")))
        .collect()
}

fn completed(events: &[AgentEvent]) -> (Outcome, Option<EndReason>, String) {
    match events.last() {
        Some(AgentEvent::SessionCompleted {
            outcome,
            reason,
            final_message,
            ..
        }) => (*outcome, *reason, final_message.clone()),
        other => panic!("last event is not session.completed: {other:?}"),
    }
}

/// Completed tool items as (tool, status, output).
fn tool_results(events: &[AgentEvent]) -> Vec<(String, ItemStatus, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ItemCompleted { item } => match &item.kind {
                ItemKind::ToolCall { tool, output, .. } => Some((
                    tool.clone(),
                    item.status,
                    output.clone().unwrap_or_default(),
                )),
                ItemKind::AgentMessage { .. } | ItemKind::Reasoning { .. } => None,
            },
            _ => None,
        })
        .collect()
}

/// The text of the tool results sent back to the model in a request, in any wire format.
fn tool_results_in_request(req: &RecordedRequest) -> Vec<String> {
    req.tool_results().into_iter().map(|r| r.text).collect()
}

fn all_text(req: &RecordedRequest) -> String {
    req.body.to_string()
}

#[test]
fn multi_turn_task_reads_edits_and_runs_commands_in_every_format() {
    for kind in KINDS {
        let server = MockServer::builder()
            .turn(Turn::tool_call(
                "call_r",
                "read",
                json!({"path": "notes.txt"}),
            ))
            .turn(
                Turn::reasoning("replace the word")
                    .with_tool_call(
                        "call_e",
                        "edit",
                        json!({"path": "notes.txt", "old_string": "world", "new_string": "baton"}),
                    )
                    .usage(500, 400, 30),
            )
            .turn(Turn::tool_call(
                "call_b",
                "bash",
                json!({"command": "cat notes.txt && echo ran > proof.txt"}),
            ))
            .turn(Turn::text("Replaced world with baton."))
            .start_blocking();
        let p = project(&server, kind, "");
        std::fs::write(p.work().join("notes.txt"), "hello world\n").unwrap();
        let out = p.run(&[
            "agent",
            "--json",
            "--model",
            "mock/test-model",
            "replace world",
        ]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{kind}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let evs = events(&out);
        assert_eq!(
            completed(&evs),
            (
                Outcome::Completed,
                None,
                "Replaced world with baton.".to_string()
            ),
            "{kind}"
        );
        assert_eq!(
            std::fs::read_to_string(p.work().join("notes.txt")).unwrap(),
            "hello baton\n"
        );
        assert_eq!(
            std::fs::read_to_string(p.work().join("proof.txt")).unwrap(),
            "ran\n"
        );
        let tools: Vec<(String, ItemStatus)> = tool_results(&evs)
            .into_iter()
            .map(|(t, s, _)| (t, s))
            .collect();
        assert_eq!(
            tools,
            vec![
                ("read".to_string(), ItemStatus::Completed),
                ("edit".to_string(), ItemStatus::Completed),
                ("bash".to_string(), ItemStatus::Completed),
            ],
            "{kind}"
        );
        let reqs = server.model_requests();
        assert_eq!(reqs.len(), 4, "{kind}");
        // The file content really went back to the model, and the command's output too.
        assert!(
            tool_results_in_request(&reqs[1])[0].contains("hello world"),
            "{kind}"
        );
        assert!(
            tool_results_in_request(&reqs[3])
                .last()
                .unwrap()
                .contains("hello baton"),
            "{kind}"
        );
        // Credentials travel in the provider's header.
        let auth = match kind {
            "anthropic" => reqs[0].header("x-api-key").map(str::to_string),
            _ => reqs[0].header("authorization").map(str::to_string),
        };
        assert!(auth.unwrap_or_default().contains("test-key"), "{kind}");
        // Usage is summed over the turns.
        match evs.last().unwrap() {
            AgentEvent::SessionCompleted { usage, turns, .. } => {
                assert_eq!(*turns, 4);
                assert_eq!(usage.input_tokens, 100 * 3 + 500, "{kind}");
                assert_eq!(usage.cached_input_tokens, 400, "{kind}");
            }
            other => panic!("{other:?}"),
        }
        // The transcript was saved.
        let sessions = p.work().join(".baton/state/sessions");
        assert_eq!(std::fs::read_dir(sessions).unwrap().count(), 1);
        server.assert_tool_results_answer_calls();
    }
}

#[test]
fn text_mode_streams_the_answer_and_one_line_per_tool() {
    let server = MockServer::builder()
        .turn(Turn::tool_call("c1", "ls", json!({})))
        .turn(Turn::text("All listed."))
        .start_blocking();
    let p = project(&server, "openai", "");
    let out = p.run(&["agent", "--model", "mock/m", "list files"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "All listed.\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("• ls"), "{err}");
    assert!(err.contains("completed after 2 turn(s)"), "{err}");
    server.assert_tool_results_answer_calls();
}

/// [14/18] the first hour: `printf 'a\nb\nc\n' | baton chat` writes each answer as it completes,
/// not only the last; `--json` has an `input.completed` per line.
#[test]
fn chat_off_a_terminal_writes_every_answer() {
    use std::io::Write;
    let server = MockServer::builder()
        .turn(Turn::text("Answer a."))
        .turn(Turn::text("Answer b."))
        .turn(Turn::text("Answer c."))
        .start_blocking();
    let p = project(&server, "openai", "");
    let mut c = p
        .baton(&["chat", "--model", "mock/m"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(b"a\nb\nc\n").unwrap();
    let out = c.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "Answer a.\nAnswer b.\nAnswer c.\n"
    );
    let server = MockServer::builder()
        .turn(Turn::text("One."))
        .turn(Turn::text("Two."))
        .start_blocking();
    let p = project(&server, "openai", "");
    let mut c = p
        .baton(&["chat", "--json", "--model", "mock/m"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(b"one\ntwo\n").unwrap();
    let out = c.wait_with_output().unwrap();
    let answers: Vec<String> = events(&out)
        .into_iter()
        .filter_map(|e| match e {
            AgentEvent::InputCompleted { final_message, .. } => Some(final_message),
            _ => None,
        })
        .collect();
    assert_eq!(answers, ["One.", "Two."]);
}

/// [22/24] A checkpoint outlives its process: `baton agent` in a repository writes a file and
/// prints its checkpoint; `baton chat --resume last` with `/undo 1` puts the file back, and the
/// model's next message says so.
#[test]
fn a_checkpoint_is_undone_after_a_resume() {
    use std::io::Write;
    let server = MockServer::builder()
        .turn(Turn::tool_call(
            "w1",
            "write",
            json!({"path": "a.txt", "content": "changed\n"}),
        ))
        .turn(Turn::text("Changed a.txt."))
        .turn(Turn::text("Noted."))
        .start_blocking();
    let p = project(&server, "openai", "");
    p.init_repo("main");
    p.write("a.txt", "original\n");
    p.commit_all("first");
    let out = p.run(&["agent", "--model", "mock/m", "change a.txt"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("baton: checkpoint 1: 1 file(s) changed"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(p.work().join("a.txt")).unwrap(),
        "changed\n"
    );
    let mut c = p
        .baton(&["chat", "--model", "mock/m", "--resume", "last"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin
        .take()
        .unwrap()
        .write_all(b"/undo 1\nwhat changed?\n")
        .unwrap();
    let out = c.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("baton: undone to before checkpoint 1: 1 put back"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(p.work().join("a.txt")).unwrap(),
        "original\n"
    );
    let last = server
        .model_requests()
        .last()
        .unwrap()
        .last_user_text()
        .unwrap();
    assert!(
        last.contains("Put back: a.txt") && last.ends_with("what changed?"),
        "{last}"
    );
}

#[test]
fn a_tool_outside_the_role_is_declined_and_never_run() {
    for kind in KINDS {
        // Neither a command nor a delegation (which would start an implementer that commits).
        let server = MockServer::builder()
            .turn(
                Turn::tool_call("c1", "bash", json!({"command": "echo pwned > pwned.txt"}))
                    .with_tool_call(
                        "c2",
                        "delegate_task",
                        json!({"role": "implementer", "name": "sneak", "task": "write pwned.txt and commit it"}),
                    ),
            )
            .turn(Turn::text("I could not run bash."))
            .start_blocking();
        let p = project(&server, kind, "");
        let out = p.run(&[
            "agent", "--json", "--role", "reviewer", "--model", "mock/m", "review",
        ]);
        assert_exit(&out, 0);
        assert!(!p.work().join("pwned.txt").exists(), "{kind}: bash ran");
        let results = tool_results(&events(&out));
        assert_eq!(results.len(), 2);
        for result in &results {
            assert_eq!(result.1, ItemStatus::Declined, "{kind}: {result:?}");
            assert!(
                result.2.contains("not available to role `reviewer`"),
                "{kind}: {result:?}"
            );
        }
        // The reviewer is offered its read-only tools only, and no child asked the model
        // anything or left a transcript.
        let requests = server.model_requests();
        assert_eq!(requests.len(), 2, "{kind}");
        assert_eq!(
            requests[0].offered_tools(),
            ["read", "grep", "find", "ls"],
            "{kind}"
        );
        let sessions = std::fs::read_dir(p.work().join(".baton/state/sessions")).unwrap();
        assert_eq!(sessions.count(), 1, "{kind}");
        let back = tool_results_in_request(&requests[1]);
        assert!(
            back.iter().all(|b| b.contains("not available")),
            "{kind}: {back:?}"
        );
        server.assert_tool_results_answer_calls();
    }
}

#[test]
fn a_path_escape_is_refused() {
    for kind in KINDS {
        let server = MockServer::builder()
            .turn(
                Turn::tool_call(
                    "c1",
                    "write",
                    json!({"path": "../escaped.txt", "content": "x"}),
                )
                .with_tool_call(
                    "c2",
                    "edit",
                    json!({"path": "/etc/hostname", "old_string": "a", "new_string": "b"}),
                ),
            )
            .turn(Turn::text("Refused."))
            .start_blocking();
        let p = project(&server, kind, "");
        let out = p.run(&["agent", "--json", "--model", "mock/m", "escape"]);
        assert_eq!(out.status.code(), Some(0));
        assert!(!p.work().parent().unwrap().join("escaped.txt").exists());
        let results = tool_results(&events(&out));
        assert_eq!(results.len(), 2);
        for (tool, status, output) in &results {
            assert_eq!(*status, ItemStatus::Failed, "{tool}");
            assert!(
                output.contains("outside the workspace root"),
                "{tool}: {output}"
            );
        }
        server.assert_tool_results_answer_calls();
    }
}

#[test]
fn a_429_and_a_dropped_stream_are_retried() {
    for kind in KINDS {
        let server = MockServer::builder()
            .fault(Fault::status(429).retry_after(0).message("slow down"))
            .fault(Fault::drop_after(
                Turn::text("this answer is cut off mid way"),
                3,
            ))
            .turn(Turn::text("Recovered."))
            .start_blocking();
        let p = project(&server, kind, "");
        let out = p.run(&["agent", "--json", "--model", "mock/m", "hi"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{kind}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let evs = events(&out);
        assert_eq!(completed(&evs).2, "Recovered.");
        let retries: Vec<ErrorCode> = evs
            .iter()
            .filter_map(|e| match e {
                AgentEvent::TurnRetrying { error, .. } => Some(error.code),
                _ => None,
            })
            .collect();
        assert_eq!(
            retries,
            vec![ErrorCode::RateLimited, ErrorCode::StreamCut],
            "{kind}"
        );
        assert_eq!(server.model_requests().len(), 3);
        server.assert_tool_results_answer_calls();
    }
}

#[test]
fn a_401_fails_at_once_with_its_message() {
    for kind in KINDS {
        let server = MockServer::builder()
            .fault(Fault::status(401).message("invalid x-api-key"))
            .turn(Turn::text("never reached"))
            .start_blocking();
        let p = project(&server, kind, "");
        let out = p.run(&["agent", "--model", "mock/test-model", "hi"]);
        assert_eq!(out.status.code(), Some(1), "{kind}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("HTTP 401"), "{kind}: {err}");
        assert!(err.contains("invalid x-api-key"), "{kind}: {err}");
        assert!(
            err.contains("test-model") && err.contains("mock"),
            "{kind}: {err}"
        );
        assert!(err.contains("api_key_env"), "{kind}: {err}");
        assert_eq!(server.model_requests().len(), 1, "{kind}: retried a 401");
        server.assert_tool_results_answer_calls();
    }
}

#[test]
fn the_turn_limit_reserves_a_handoff_turn() {
    for kind in KINDS {
        let server = MockServer::builder()
            .turn(Turn::tool_call("c1", "ls", json!({})))
            .turn(Turn::tool_call("c2", "bash", json!({"command": "echo should-not-run > ran.txt"})).with_text(
                "Status: partial\nOutcome: listed files\nEvidence: ls\nBlocker: none\nRisk: low\nSuggested next action: continue",
            ))
            .start_blocking();
        let p = project(&server, kind, "");
        let out = p.run(&[
            "agent",
            "--json",
            "--max-turns",
            "2",
            "--model",
            "mock/m",
            "work",
        ]);
        assert_exit(&out, 3);
        let evs = events(&out);
        let (outcome, reason, message) = completed(&evs);
        assert_eq!(
            (outcome, reason),
            (Outcome::Partial, Some(EndReason::TurnLimit))
        );
        assert!(message.starts_with("Status: partial"), "{message}");
        assert!(
            !p.work().join("ran.txt").exists(),
            "a tool ran in the handoff turn"
        );
        let last = all_text(&server.model_requests()[1]);
        // The handoff turn keeps the tools declared but lets the model call none.
        assert!(last.contains("\"tool_choice\""), "{kind}: {last}");
        assert!(!all_text(&server.model_requests()[0]).contains("\"tool_choice\""));
        for section in [
            "Status",
            "Outcome",
            "Evidence",
            "Blocker",
            "Risk",
            "Suggested next action",
        ] {
            assert!(last.contains(section), "handoff request lacks {section}");
        }
        server.assert_tool_results_answer_calls();
    }
}

#[test]
fn resume_continues_the_saved_transcript() {
    for kind in KINDS {
        let server = MockServer::builder()
            .turn(Turn::tool_call("c1", "read", json!({"path": "a.txt"})))
            .turn(Turn::text("The file says apple."))
            .turn(Turn::text("You asked about a.txt."))
            .start_blocking();
        let p = project(&server, kind, "");
        std::fs::write(p.work().join("a.txt"), "apple\n").unwrap();
        let first = p.run(&["agent", "--json", "--model", "mock/m", "what is in a.txt?"]);
        assert_eq!(first.status.code(), Some(0));
        let id = match &events(&first)[0] {
            AgentEvent::SessionStarted { session_id, .. } => session_id.clone(),
            other => panic!("{other:?}"),
        };
        let second = p.run(&["agent", "--json", "--resume", &id, "what did I ask before?"]);
        assert_exit(&second, 0);
        let evs = events(&second);
        match &evs[0] {
            AgentEvent::SessionStarted {
                session_id,
                resumed,
                model,
                ..
            } => {
                assert_eq!(
                    (session_id.as_str(), *resumed, model.as_str()),
                    (id.as_str(), true, "mock/m")
                );
            }
            other => panic!("{other:?}"),
        }
        let third = all_text(&server.model_requests()[2]);
        for earlier in [
            "what is in a.txt?",
            "apple",
            "The file says apple.",
            "what did I ask before?",
        ] {
            assert!(third.contains(earlier), "resumed request lacks {earlier}");
        }
        let bad = p.run(&["agent", "--resume", "no-such-session", "x"]);
        assert_eq!(bad.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&bad.stderr).contains("not found"));
        server.assert_tool_results_answer_calls();
    }
}

#[test]
fn sigterm_stops_the_running_tool_and_ends_partial() {
    for (kind, signal) in [
        ("openai", nix::sys::signal::Signal::SIGTERM),
        ("openai-responses", nix::sys::signal::Signal::SIGINT),
        ("anthropic", nix::sys::signal::Signal::SIGTERM),
    ] {
        let server = MockServer::builder()
            .turn(Turn::tool_call(
                "c1",
                "bash",
                json!({"command": "echo $$ > shell.pid; sleep 600 & echo $! > sleep.pid; wait"}),
            ))
            .turn(Turn::text("unreachable"))
            .start_blocking();
        let p = project(&server, kind, "");
        let mut child = p
            .baton(&["agent", "--json", "--model", "mock/m", "sleep"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut seen = Vec::new();
        // Wait until the bash tool has started, then until the shell wrote its pids.
        for line in lines.by_ref() {
            let line = line.unwrap();
            let started = line.contains("\"item.started\"") && line.contains("\"bash\"");
            seen.push(line);
            if started {
                break;
            }
        }
        let pid_file = p.work().join("sleep.pid");
        assert!(wait_until(Duration::from_secs(10), || {
            std::fs::read_to_string(&pid_file)
                .map(|s| !s.trim().is_empty())
                .unwrap_or(false)
        }));
        let sleep_pid: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(alive(sleep_pid));
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal).unwrap();
        for line in lines {
            seen.push(line.unwrap());
        }
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(130), "{signal}");
        let evs: Vec<AgentEvent> = seen
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let (outcome, reason, _) = completed(&evs);
        assert_eq!(
            (outcome, reason),
            (Outcome::Partial, Some(EndReason::Cancelled))
        );
        let results = tool_results(&evs);
        assert_eq!(results[0].1, ItemStatus::Failed);
        assert!(results[0].2.contains("cancel"), "{:?}", results[0]);
        assert!(
            wait_until(Duration::from_secs(5), || !alive(sleep_pid)),
            "sleep survived"
        );
        assert_eq!(
            server.model_requests().len(),
            1,
            "a model request followed the cancel"
        );
        // The transcript records the cancelled call, so resume is valid.
        let dir = p.work().join(".baton/state/sessions");
        let file = std::fs::read_dir(&dir)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        assert!(std::fs::read_to_string(file)
            .unwrap()
            .contains("\"role\":\"tool\""));
        server.assert_tool_results_answer_calls();
    }
}

#[test]
fn bad_input_is_refused_with_a_clear_error() {
    let server = MockServer::builder().start_blocking();
    let p = project(&server, "openai", "");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["agent", "--model", "mock/m"], "missing TASK"),
        (vec!["agent", "--model", "nowhere", "x"], "provider/model"),
        (
            vec!["agent", "--model", "ghost/m", "x"],
            "[providers.ghost]",
        ),
        (vec!["agent", "--model-class", "fast", "x"], "models.fast"),
        (
            vec!["agent", "--model-class", "huge", "x"],
            "fast, balanced, frontier, fav",
        ),
        (
            vec!["agent", "--role", "nobody", "--model", "mock/m", "x"],
            "nobody.md",
        ),
        (
            vec!["agent", "--cwd", "/no/such/dir", "--model", "mock/m", "x"],
            "--cwd",
        ),
        (
            vec!["agent", "--max-turns", "0", "--model", "mock/m", "x"],
            "--max-turns",
        ),
    ];
    for (args, expect) in cases {
        let out = p.run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(expect), "{args:?}: {err}");
    }
    assert_eq!(server.requests().len(), 0);
    server.assert_tool_results_answer_calls();
    // Nothing half-written: no session files from refused runs.
    assert!(!p.work().join(".baton").exists());
    // A bad turn limit names where it came from: the variable, not a flag that was not given.
    for bad in ["zero", "-3", "0"] {
        let out = p.run_with(
            &["agent", "--model", "mock/m", "x"],
            &[("BATON_MAX_TURNS", bad)],
        );
        assert_exit(&out, 2);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("BATON_MAX_TURNS") && !err.contains("--max-turns"),
            "{bad}: {err}"
        );
    }
    // A config typo names the key.
    std::fs::write(p.config_file(), "[agent]\nmax_turn = 3\n").unwrap();
    let out = p.run(&["agent", "--model", "mock/m", "x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("max_turn"));
}

#[test]
fn record_then_replay_reproduces_the_session_without_a_server() {
    let server = MockServer::builder()
        .turn(Turn::tool_call(
            "c1",
            "write",
            json!({"path": "out.txt", "content": "made\n"}),
        ))
        .turn(Turn::text("Wrote out.txt."))
        .start_blocking();
    let p = project(&server, "openai", "");
    let cassette = p.home().join("session.cassette.json");
    let out = p.run(&[
        "agent",
        "--json",
        "--model",
        "mock/m",
        "--record",
        cassette.to_str().unwrap(),
        "write",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = std::fs::read_to_string(&cassette).unwrap();
    assert!(!text.contains("test-key"), "the cassette holds the key");
    std::fs::remove_file(p.work().join("out.txt")).unwrap();
    server.assert_tool_results_answer_calls();
    drop(server);
    let out = p.run(&[
        "agent",
        "--json",
        "--replay",
        cassette.to_str().unwrap(),
        "write",
    ]);
    assert_exit(&out, 0);
    assert_eq!(completed(&events(&out)).2, "Wrote out.txt.");
    assert_eq!(
        std::fs::read_to_string(p.work().join("out.txt")).unwrap(),
        "made\n"
    );
}

/// A cassette that cannot be saved after the model was called is a failure of work that ran
/// (exit 1), not a refusal of bad input (exit 2, "nothing was run").
#[test]
fn a_cassette_save_failing_after_the_model_ran_exits_1() {
    let server = MockServer::builder()
        .turn(Turn::text("Done."))
        .start_blocking();
    let p = project(&server, "openai", "");
    // The path is a folder holding a file: the folder check passes, the rename at save fails.
    let cassette = p.home().join("taken");
    std::fs::create_dir_all(cassette.join("inside")).unwrap();
    let out = p.run(&[
        "agent",
        "--model",
        "mock/m",
        "--record",
        cassette.to_str().unwrap(),
        "say done",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("--record"), "{stderr}");
    assert_eq!(server.model_requests().len(), 1, "the model was called");
    server.assert_tool_results_answer_calls();
}

#[test]
fn roles_and_models_commands_report_sources_and_resolution() {
    let server = MockServer::builder().start_blocking();
    let p = project(
        &server,
        "openai",
        "[models]\nfast = [\"ghost/x\", \"mock/small\"]\n",
    );
    let roles_dir = p.work().join(".baton/roles");
    std::fs::create_dir_all(&roles_dir).unwrap();
    std::fs::write(
        roles_dir.join("scout.md"),
        "---\nname: scout\ndescription: project scout\ntools: [read]\n---\nLook around.\n",
    )
    .unwrap();
    let out = p.run(&["roles"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("implementer") && text.contains("built-in"),
        "{text}"
    );
    assert!(
        text.contains("project ") && text.contains("scout.md"),
        "{text}"
    );
    // The columns stay aligned with names longer than the default column
    // ("integration-verifier"): every role line's class starts in the same column.
    assert!(text.contains("integration-verifier"), "{text}");
    let class_at: std::collections::BTreeSet<usize> = text
        .lines()
        .filter(|l| !l.starts_with(' ') && l.contains("tools=["))
        .map(|l| {
            let name = l.split_whitespace().next().unwrap();
            name.len() + l[name.len()..].len() - l[name.len()..].trim_start().len()
        })
        .collect();
    assert_eq!(class_at.len(), 1, "misaligned columns:\n{text}");
    let out = p.run(&["roles", "check"]);
    assert_eq!(out.status.code(), Some(0));
    std::fs::write(
        roles_dir.join("bad.md"),
        "---\nname: bad\ndescription: d\n---\nx\n",
    )
    .unwrap();
    let out = p.run(&["roles", "check"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.md") && err.contains("tools"), "{err}");

    let out = p.run(&["models"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("✗ ghost/x"), "{text}");
    assert!(
        text.contains(
            "✓ mock/small is chosen now (configured, key set; `baton doctor` asks its server)"
        ),
        "{text}"
    );
    assert!(text.contains("models.balanced"), "{text}");
    server.assert_tool_results_answer_calls();
}

#[test]
fn cost_comes_from_the_price_table() {
    let server = MockServer::builder()
        .turn(Turn::tool_call("c1", "ls", json!({})).usage(1_000_000, 400_000, 10_000))
        .turn(Turn::text("done").usage(500_000, 0, 0))
        .start_blocking();
    let p = project(
        &server,
        "openai",
        "[prices.\"mock/priced\"]\ninput = 2.0\ncached_input = 0.5\noutput = 10.0\n",
    );
    let out = p.run(&["agent", "--json", "--model", "mock/priced", "x"]);
    assert_eq!(out.status.code(), Some(0));
    let evs = events(&out);
    let turn_costs: Vec<f64> = evs
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TurnCompleted { cost_usd, .. } => *cost_usd,
            _ => None,
        })
        .collect();
    // turn 1: 600k fresh * 2 + 400k cached * 0.5 + 10k out * 10 = 1.2 + 0.2 + 0.1
    assert_eq!(turn_costs.len(), 2);
    assert!((turn_costs[0] - 1.5).abs() < 1e-9, "{turn_costs:?}");
    assert!((turn_costs[1] - 1.0).abs() < 1e-9, "{turn_costs:?}");
    match evs.last().unwrap() {
        AgentEvent::SessionCompleted { cost_usd, .. } => {
            assert!((cost_usd.unwrap() - 2.5).abs() < 1e-9)
        }
        other => panic!("{other:?}"),
    }
    server.assert_tool_results_answer_calls();
    // A local server's unknown model is free.
    let server = MockServer::builder().turn(Turn::text("x")).start_blocking();
    let p = project(&server, "openai", "");
    let out = p.run(&["agent", "--json", "--model", "mock/free", "x"]);
    match events(&out).last().unwrap() {
        AgentEvent::SessionCompleted { cost_usd, .. } => assert_eq!(*cost_usd, Some(0.0)),
        other => panic!("{other:?}"),
    }
    // A server that is not local (`local = false`) leaves an unknown model unpriced: no cost.
    let server = MockServer::builder().turn(Turn::text("x")).start_blocking();
    let p = Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .mock_provider(&server, "openai", "local = false\n");
    let out = p.run(&["agent", "--json", "--model", "mock/free", "x"]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("cost_usd"));
    server.assert_tool_results_answer_calls();
}

#[test]
fn a_session_runs_without_delegation_when_it_cannot_be_set_up() {
    let server = MockServer::builder()
        .turn(Turn::text("fine"))
        .start_blocking();
    let p = project(&server, "openai", "");
    // No usable HOME or XDG_STATE_HOME: there is nowhere to put worktrees.
    let out = p
        .baton(&["agent", "--json", "--model", "mock/m", "x"])
        .env("HOME", "relative-home")
        .env_remove("XDG_STATE_HOME")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_exit(&out, 0);
    assert!(String::from_utf8_lossy(&out.stderr).contains("delegation is off"));
    assert!(!server.model_requests()[0]
        .body
        .to_string()
        .contains("delegate_task"));
    server.assert_tool_results_answer_calls();
}

#[test]
fn running_tools_send_heartbeats() {
    let server = MockServer::builder()
        .turn(Turn::tool_call(
            "c1",
            "bash",
            json!({"command": "while [ ! -f go ]; do sleep 0.01; done; echo went"}),
        ))
        .turn(Turn::text("done"))
        .start_blocking();
    let p = project(&server, "openai", "");
    let mut child = p
        .baton(&["agent", "--json", "--model", "mock/m", "wait"])
        .env("BATON_HEARTBEAT", "20ms")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut seen = Vec::new();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    for line in lines {
        let line = line.unwrap();
        // The tool only finishes once a heartbeat for it has been seen.
        if line.contains("\"item.updated\"") && !p.work().join("go").exists() {
            std::fs::write(p.work().join("go"), "").unwrap();
        }
        seen.push(serde_json::from_str::<AgentEvent>(&line).unwrap());
    }
    assert_eq!(child.wait().unwrap().code(), Some(0));
    let beat = seen
        .iter()
        .find_map(|e| match e {
            AgentEvent::ItemUpdated { item } => Some(item.clone()),
            _ => None,
        })
        .expect("no heartbeat");
    assert_eq!(beat.status, ItemStatus::InProgress);
    assert!(matches!(&beat.kind, ItemKind::ToolCall { tool, .. } if tool == "bash"));
    assert_eq!(completed(&seen).2, "done");
    server.assert_tool_results_answer_calls();
}

/// `bash` runs without the provider's key or anything named like a credential, unless the
/// config allows the name; neither the model nor the transcript ever sees the key.
#[test]
fn bash_commands_do_not_get_provider_keys() {
    for kind in KINDS {
        let server = MockServer::builder()
            .turn(Turn::tool_call(
                "call_env",
                "bash",
                json!({"command": "env | sort; echo \"gh=${GH_TOKEN:-unset}\""}),
            ))
            .turn(Turn::text("Listed."))
            .start_blocking();
        let p = project(&server, kind, "[sandbox]\nenv_allow = [\"GH_TOKEN\"]\n")
            .env("OTHER_API_KEY", "other-secret")
            .env("HF_TOKEN", "hf-secret")
            .env("GH_TOKEN", "gh-allowed");
        let out = p.run(&[
            "agent",
            "--json",
            "--model",
            "mock/test-model",
            "list the env",
        ]);
        assert_exit(&out, 0);
        let requests = server.model_requests();
        let results = requests.last().unwrap().tool_results();
        assert_eq!(results.len(), 1, "{kind}");
        let text = &results[0].text;
        assert!(text.contains("PATH="), "{kind}: {text}");
        assert!(text.contains("gh=gh-allowed"), "{kind}: {text}");
        for secret in [
            "test-key",
            "other-secret",
            "hf-secret",
            "MOCK_API_KEY",
            "HF_TOKEN=",
        ] {
            assert!(!text.contains(secret), "{kind}: {secret} in {text}");
        }
        server.assert_tool_results_answer_calls();
    }
}

/// The role's tool list is the only authority over the delegation tools too: a main session is
/// offered them only when its role lists them (the built-in implementer does; reviewer and scout
/// do not), and `--no-delegate` removes them. A reviewer's call to one is declined: see
/// `a_tool_outside_the_role_is_declined_and_never_run`.
#[test]
fn delegation_tools_are_offered_only_to_roles_that_list_them() {
    let server = MockServer::builder()
        .turn(Turn::text("ok"))
        .looping(true)
        .start_blocking();
    let p = project(&server, "openai", "");
    for (args, offered) in [
        (&["--role", "reviewer"][..], false),
        (&["--role", "scout"][..], false),
        (&["--role", "implementer"][..], true),
        (&["--role", "implementer", "--no-delegate"][..], false),
    ] {
        let mut argv = vec!["agent", "--json", "--model", "mock/m"];
        argv.extend_from_slice(args);
        argv.push("x");
        assert_exit(&p.run(&argv), 0);
        let request = server.model_requests().pop().unwrap();
        let tools = request.offered_tools();
        for name in ["delegate_task", "delegate_flow", "delegate_flow_continue"] {
            assert_eq!(tools.contains(&name), offered, "{args:?}: {tools:?}");
        }
        assert_eq!(
            all_text(&request).contains("# Delegation"),
            offered,
            "{args:?}"
        );
    }
    server.assert_tool_results_answer_calls();
}

/// Control sequences a model puts in a tool call's arguments or path reach neither the terminal
/// (text mode's stderr shows U+FFFD in their place) nor the file system (`write` refuses to create
/// the name, naming the field).
#[test]
fn a_models_control_sequences_reach_neither_the_terminal_nor_file_names() {
    let evil = "\u{1b}]0;TITLE\u{7}\u{1b}[2J";
    let server = MockServer::builder()
        .turn(
            Turn::tool_call(
                "c1",
                "bash",
                json!({"command": format!("echo '{evil}' > /dev/null")}),
            )
            .with_tool_call(
                "c2",
                "write",
                json!({"path": format!("x{evil}.txt"), "content": "x"}),
            ),
        )
        .turn(Turn::text("done"))
        .start_blocking();
    let p = project(&server, "openai", "");
    let out = p.run(&["agent", "--model", "mock/m", "x"]);
    assert_exit(&out, 0);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains(['\u{1b}', '\u{7}']), "{err:?}");
    assert!(
        err.contains("• bash echo '\u{fffd}]0;TITLE\u{fffd}\u{fffd}[2J' > /dev/null → exit 0"),
        "{err:?}"
    );
    assert!(
        err.contains("• write x\u{fffd}]0;TITLE\u{fffd}\u{fffd}[2J.txt → error: field `path`"),
        "{err:?}"
    );
    for entry in std::fs::read_dir(p.work()).unwrap() {
        let name = entry.unwrap().file_name();
        assert!(
            !baton_text::has_controls(&name.to_string_lossy()),
            "{name:?}"
        );
    }
    let back = tool_results_in_request(&server.model_requests()[1]);
    assert!(back[1].contains("control character U+001B"), "{back:?}");
    server.assert_tool_results_answer_calls();
}

/// A key a provider would accept, for the redaction tests (long enough to be redacted).
const KEY: &str = "sk-mock-0123456789abcdef";

/// Every file under `dir`, as text.
fn files_text(dir: &std::path::Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        text.push_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap());
    }
    text
}

/// A 401 whose body echoes the key (as some providers do) shows `[REDACTED]` instead: on stderr
/// in text mode, in `turn.failed` and `final_message` with `--json`, and the transcript keeps a
/// key the task quoted only as `[REDACTED]`.
#[test]
fn a_401_echoing_the_key_shows_it_redacted() {
    for kind in KINDS {
        let server = MockServer::builder()
            .fault(Fault::status(401).message(format!("invalid api key {KEY}")))
            .looping(true)
            .start_blocking();
        let p = project(&server, kind, "").env("MOCK_API_KEY", KEY);
        let task = format!("the key is {KEY}");
        let out = p.run(&["agent", "--model", "mock/m", &task]);
        assert_exit(&out, 1);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("HTTP 401") && err.contains("invalid api key [REDACTED]"),
            "{kind}: {err}"
        );
        assert!(!err.contains(KEY), "{kind}: {err}");

        let out = p.run(&["agent", "--json", "--model", "mock/m", &task]);
        assert_exit(&out, 1);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(!stdout.contains(KEY), "{kind}: {stdout}");
        assert!(!String::from_utf8_lossy(&out.stderr).contains(KEY));
        let evs = events(&out);
        let failed = evs
            .iter()
            .find_map(|e| match e {
                AgentEvent::TurnFailed { error, .. } => Some(error.message.clone()),
                _ => None,
            })
            .expect("no turn.failed");
        assert!(
            failed.contains("invalid api key [REDACTED]"),
            "{kind}: {failed}"
        );
        let (_, _, final_message) = completed(&evs);
        assert!(
            final_message.contains("[REDACTED]"),
            "{kind}: {final_message}"
        );

        let transcripts = files_text(&p.work().join(".baton/state/sessions"));
        assert!(transcripts.contains("the key is [REDACTED]"), "{kind}");
        assert!(!transcripts.contains(KEY), "{kind}: {transcripts}");
        // Baton redacts what it writes, not what it sends: the provider got its key, and the
        // task as the user wrote it.
        let first = &server.model_requests()[0];
        assert!(first.headers.iter().any(|(_, v)| v.contains(KEY)), "{kind}");
        assert!(all_text(first).contains(&task), "{kind}");
    }
}

/// Keys from `api_key_file`s and from `*_TOKEN` / `*_API_KEY` variables are redacted from the
/// streamed answer and tool-call arguments (split between deltas), tool lines and results, the
/// `--json` events, the transcript and a `--record` cassette; values shorter than 8 characters
/// are left alone.
#[test]
fn keys_are_redacted_from_answers_events_transcripts_and_cassettes() {
    const FILE_KEY: &str = "file-key-9876543210";
    const TOKEN: &str = "hf-token-abcdefghij";
    let answer = format!("key {KEY}, file {FILE_KEY}, token {TOKEN}, short abc1234.");
    let server = MockServer::builder()
        .turn(Turn::tool_call(
            "c1",
            "bash",
            json!({"command": format!("echo {TOKEN}")}),
        ))
        .turn(Turn::text(answer))
        .looping(true)
        .start_blocking();
    let key_file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(key_file.path(), format!("{FILE_KEY}\n")).unwrap();
    let p = project(
        &server,
        "openai",
        &format!(
            "[providers.filed]\nkind = \"openai\"\nbase_url = \"{}/v1\"\napi_key_file = \"{}\"\n",
            server.url(),
            key_file.path().display()
        ),
    )
    .env("MOCK_API_KEY", KEY)
    .env("HF_TOKEN", TOKEN)
    .env("SHORT_TOKEN", "abc1234");
    let shown = "key [REDACTED], file [REDACTED], token [REDACTED], short abc1234.";

    let out = p.run(&["agent", "--model", "mock/m", "x"]);
    assert_exit(&out, 0);
    assert_eq!(String::from_utf8_lossy(&out.stdout), format!("{shown}\n"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("• bash echo [REDACTED] → exit 0"), "{err}");

    let cassette = p.work().join("c.json");
    let out = p.run(&[
        "agent",
        "--json",
        "--model",
        "mock/m",
        "--record",
        cassette.to_str().unwrap(),
        "x",
    ]);
    assert_exit(&out, 0);
    let evs = events(&out);
    assert_eq!(completed(&evs).2, shown);
    assert!(
        std::fs::read_to_string(&cassette)
            .unwrap()
            .contains("short abc1234."),
        "short values are kept"
    );
    // The deltas still add up to the (redacted) answer.
    let streamed: String = evs
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ItemDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(streamed, shown);
    let bash = tool_results(&evs);
    assert_eq!(bash[0].2.trim(), "[REDACTED]");
    let written = [
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
        std::fs::read_to_string(&cassette).unwrap(),
        files_text(&p.work().join(".baton/state/sessions")),
    ];
    for text in written {
        for secret in [KEY, FILE_KEY, TOKEN] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
    }
    server.assert_tool_results_answer_calls();
}
