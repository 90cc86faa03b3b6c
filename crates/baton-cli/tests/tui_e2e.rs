//! End-to-end tests of `baton tui`: the built binary on a real pseudo-terminal (its
//! controlling terminal), driven by keystrokes, read through a VT parser, against the mock model
//! server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use baton_testkit::fixture::Sandbox;
use baton_testkit::vt::Vt;
use baton_testkit::{MockServer, Turn};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(20);

fn project(server: &MockServer) -> Sandbox {
    Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .mock_provider(
            server,
            "openai",
            "\n[retry]\ninitial_delay = \"1ms\"\nmax_delay = \"20ms\"\n",
        )
}

fn tui(sb: &Sandbox, args: &[&str], cols: u16, rows: u16) -> Vt {
    let mut all = vec!["tui", "--model", "mock/mock-model"];
    all.extend_from_slice(args);
    let mut cmd = sb.baton(&all);
    cmd.env("TERM", "xterm-256color");
    Vt::spawn(cmd, cols, rows).unwrap()
}

#[test]
fn a_session_typed_on_the_keyboard_streams_its_answer_and_quits_cleanly() {
    let server = MockServer::builder()
        .turn(Turn::tool_call("r1", "read", json!({"path": "notes.txt"})))
        .turn(Turn::text("# Done\nThe file says **hello**.\n- one\n- two"))
        .start_blocking();
    let sb = project(&server);
    sb.write("notes.txt", "hello\n");
    let mut vt = tui(&sb, &[], 80, 24);
    vt.wait_for(WAIT, |s| s.contains("? help")).unwrap();
    vt.send(b"what does notes.txt say?");
    vt.send(b"\r");
    let screen = vt
        .wait_for(WAIT, |s| {
            s.contains("The file says hello.") && s.contains("● ready")
        })
        .unwrap_or_else(|s| panic!("{s}"));
    println!("{screen}");
    assert!(screen.contains("› what does notes.txt say?"), "{screen}");
    assert!(screen.contains("✓ read notes.txt"), "{screen}");
    assert!(screen.contains("• one"), "{screen}");
    assert!(screen.contains("mock/mock-model"), "{screen}");
    vt.send(b"\x04");
    let status = vt.wait(WAIT);
    assert!(status.success(), "{status:?}");
}

/// The bytes outside the synchronized-output frames: only terminal modes, never drawing.
fn outside_frames(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = bytes;
    loop {
        match find(rest, b"\x1b[?2026h") {
            Some(k) => {
                out.extend_from_slice(&rest[..k]);
                let after = &rest[k + 8..];
                let end = find(after, b"\x1b[?2026l").expect("a frame that never ends");
                rest = &after[end + 8..];
            }
            None => {
                out.extend_from_slice(rest);
                return out;
            }
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn count(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).filter(|w| *w == needle).count()
}

/// A session whose first answer streams 400 lines slowly, its UI seen working on it; `next` is
/// the model's answer to the prompt after it.
fn talking(next: &str) -> (MockServer, Sandbox, Vt) {
    let long: String = (1..=400).map(|n| format!("line {n}\n")).collect();
    let server = MockServer::builder()
        .turn(Turn::text(long).delay_ms_per_chunk(40))
        .turn(Turn::text(next))
        .start_blocking();
    let sb = project(&server);
    let mut vt = tui(&sb, &[], 100, 30);
    vt.wait_for(WAIT, |s| s.contains("? help")).unwrap();
    vt.send(b"talk a lot\r");
    vt.wait_for(WAIT, |s| s.contains("line 3") && s.contains("working"))
        .unwrap_or_else(|s| panic!("{s}"));
    (server, sb, vt)
}

#[test]
fn esc_interrupts_a_streaming_answer_at_once_and_every_frame_is_synchronized() {
    let (server, _sb, mut vt) = talking("Second answer.");
    let before_esc = vt.bytes().len();
    vt.send(b"\x1b");
    let screen = vt
        .wait_for(WAIT, |s| {
            s.contains("! interrupted") && s.contains("● ready")
        })
        .unwrap_or_else(|s| panic!("{s}"));
    assert!(!screen.contains("line 400"), "{screen}");
    vt.send(b"and now?\r");
    vt.wait_for(WAIT, |s| {
        s.contains("Second answer.") && s.contains("● ready")
    })
    .unwrap_or_else(|s| panic!("{s}"));
    let reqs = server.model_requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[1].last_user_text().as_deref(), Some("and now?"));
    vt.send(b"\x04");
    assert!(vt.wait(WAIT).success());

    let bytes = vt.bytes();
    // Every frame is wrapped in synchronized output; nothing is drawn outside one.
    assert_eq!(count(&bytes, b"\x1b[?2026h"), count(&bytes, b"\x1b[?2026l"));
    assert!(count(&bytes, b"\x1b[?2026h") > 3);
    // While the UI is on the alternate screen (stderr may say something before and after).
    let start = find(&bytes, b"\x1b[?1049h").unwrap() + 8;
    let end = start + find(&bytes[start..], b"\x1b[?1049l").unwrap();
    let outside = String::from_utf8_lossy(&outside_frames(&bytes[start..end])).into_owned();
    let mut modes = outside.clone();
    for allowed in [
        "\x1b[?2004h",
        "\x1b[?2004l",
        "\x1b[?u",
        "\x1b[c",
        "\x1b[<1u",
    ] {
        modes = modes.replace(allowed, "");
    }
    assert_eq!(modes, "", "drawn outside a frame: {outside:?}");
    // No clear of the screen while the answer streamed; no mouse mode without --mouse.
    let streaming = &bytes[before_esc.min(bytes.len())..];
    assert_eq!(count(streaming, b"\x1b[2J"), 0);
    for mouse in [
        &b"\x1b[?1000h"[..],
        b"\x1b[?1002h",
        b"\x1b[?1003h",
        b"\x1b[?1006h",
    ] {
        assert_eq!(count(&bytes, mouse), 0);
    }
}

/// [22/24] Esc stops the turn but keeps what was queued meanwhile queued (it used to be sent at
/// once): the model is not asked again until Enter on the empty composer sends it.
#[test]
fn esc_keeps_a_queued_message_queued_until_enter_sends_it() {
    let (server, _sb, mut vt) = talking("Queued one answered.");
    vt.send(b"the queued one\r");
    vt.wait_for(WAIT, |s| {
        s.contains("queued") && s.contains("the queued one")
    })
    .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"\x1b");
    let screen = vt
        .wait_for(WAIT, |s| {
            s.contains("! interrupted") && s.contains("● ready")
        })
        .unwrap_or_else(|s| panic!("{s}"));
    assert!(screen.contains("the queued one"), "{screen}");
    // Still queued: nothing more was asked of the model.
    assert_eq!(server.model_requests().len(), 1);
    vt.send(b"\r");
    vt.wait_for(WAIT, |s| {
        s.contains("Queued one answered.") && s.contains("● ready")
    })
    .unwrap_or_else(|s| panic!("{s}"));
    let reqs = server.model_requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[1].last_user_text().as_deref(), Some("the queued one"));
    vt.send(b"\x04");
    assert!(vt.wait(WAIT).success());
}

#[test]
fn a_declined_call_tells_the_model_the_user_s_words_and_does_not_run() {
    let server = MockServer::builder()
        .turn(Turn::tool_call(
            "w1",
            "write",
            json!({"path": "note.txt", "content": "hello\n"}),
        ))
        .turn(Turn::text("Understood, notes.md then."))
        .start_blocking();
    let sb = project(&server);
    let mut vt = tui(&sb, &["--approval", "on-write"], 80, 24);
    vt.wait_for(WAIT, |s| s.contains("? help")).unwrap();
    vt.send(b"write a note\r");
    let modal = vt
        .wait_for(WAIT, |s| s.contains("approve this call?"))
        .unwrap_or_else(|s| panic!("{s}"));
    assert!(modal.contains("write note.txt"), "{modal}");
    assert!(modal.contains("+ hello"), "{modal}");
    assert!(modal.contains("3  no, and tell the model"), "{modal}");
    // [22/24] The modal leaves the message that led to the call in sight.
    assert!(modal.contains("write a note"), "{modal}");
    vt.send(b"3");
    vt.wait_for(WAIT, |s| s.contains("Tell the model why"))
        .unwrap();
    vt.send(b"call it notes.md\r");
    let screen = vt
        .wait_for(WAIT, |s| {
            s.contains("Understood, notes.md then.") && s.contains("● ready")
        })
        .unwrap_or_else(|s| panic!("{s}"));
    assert!(screen.contains("⊘ write note.txt"), "{screen}");
    assert!(screen.contains("approval on-write"), "{screen}");
    assert!(!sb.work().join("note.txt").exists());
    let result = server.model_requests()[1].result_of("w1");
    assert!(
        result.contains("the user declined this call") && result.contains("call it notes.md"),
        "{result}"
    );
    vt.send(b"\x04");
    assert!(vt.wait(WAIT).success());
}

#[test]
fn a_headless_session_that_needs_an_approval_fails_closed_with_the_fix() {
    let server = MockServer::builder()
        .turn(Turn::tool_call(
            "b1",
            "bash",
            json!({"command": "touch ran"}),
        ))
        .start_blocking();
    let sb = project(&server);
    let out = sb.run(&["agent", "--model", "mock/m", "--approval", "on-write", "go"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("needs approval") && err.contains("--approval never"),
        "{err}"
    );
    assert!(!sb.work().join("ran").exists());
}

#[test]
fn a_resumed_session_of_ten_thousand_entries_shows_its_end_and_survives_a_resize() {
    use baton_agent::session::{SessionHeader, SessionStore};
    use baton_protocol::{AssistantPart, Message};
    let server = MockServer::builder().start_blocking();
    let sb = project(&server);
    let state = baton_state::StateDir::for_project(&sb.work());
    let header = SessionHeader {
        session_id: "0190a000-0000-7000-8000-000000000001".into(),
        role: "implementer".into(),
        model: "mock/mock-model".into(),
        cwd: sb.work().display().to_string(),
        created: "2026-12-05T08:00:00Z".into(),
    };
    let mut store = SessionStore::create(&state, &header).unwrap();
    for n in 0..5000 {
        store
            .append(&Message::user(format!("question {n}")))
            .unwrap();
        store
            .append(&Message::Assistant {
                parts: vec![AssistantPart::Text {
                    text: format!("answer {n}"),
                }],
            })
            .unwrap();
    }
    drop(store);
    let mut vt = tui(&sb, &["--resume", "last"], 120, 40);
    let screen = vt
        .wait_for(WAIT, |s| s.contains("answer 4999") && s.contains("● ready"))
        .unwrap_or_else(|s| panic!("{s}"));
    assert!(screen.contains("› question 4999"), "{screen}");
    vt.resize(60, 12);
    let screen = vt
        .wait_for(WAIT, |s| {
            let rows: Vec<&str> = s.lines().collect();
            rows.len() == 12 && rows[11].starts_with("● ready") && s.contains("answer 4999")
        })
        .unwrap_or_else(|s| panic!("{s}"));
    // Nothing lost at the end: the last exchange is whole.
    assert!(screen.contains("› question 4999"), "{screen}");
    vt.send(b"\x04");
    assert!(vt.wait(WAIT).success());
}

mod common;

#[test]
fn attached_to_a_workflow_at_its_checkpoint_the_form_answers_it_with_the_user_s_words() {
    use common::workflow::*;
    let (wf, id) = Wf::at_scope_checkpoint();
    let mut cmd = wf.sb.baton(&["tui", "--attach", &id]);
    cmd.env("TERM", "xterm-256color");
    let mut vt = Vt::spawn(cmd, 110, 32).unwrap();
    let screen = vt
        .wait_for(WAIT, |s| {
            s.contains("checkpoint: scope_decision") && s.contains("1  critical only")
        })
        .unwrap_or_else(|s| panic!("{s}"));
    assert!(screen.contains(&format!("workflow {id}")), "{screen}");
    assert!(screen.contains("✗ t2 code-reviewer"), "{screen}");
    vt.send(b"1");
    vt.wait_for(WAIT, |s| {
        s.contains("your answer") && s.contains("› critical only")
    })
    .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"\r");
    vt.wait_for(WAIT, |s| s.contains("y / n"))
        .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"y");
    // `baton resume --answer` runs the workflow on, detached; the view follows it to its end.
    let screen = vt
        .wait_for(Duration::from_secs(60), |s| {
            s.contains("completed") && s.contains("doc-syncer")
        })
        .unwrap_or_else(|s| panic!("{s}"));
    assert!(screen.contains("↻ 1/3"), "the remediation cycle: {screen}");
    let answered: Vec<serde_json::Value> = wf
        .events()
        .into_iter()
        .filter(|e| e["event"] == "checkpoint_answered")
        .collect();
    assert_eq!(answered.len(), 1);
    assert_eq!(answered[0]["details"]["answer"], "critical only");
    wf.wait_completed();
    vt.send(b"\x04");
    assert!(vt.wait(WAIT).success());
}

#[test]
fn attached_to_a_flow_another_process_ran_the_view_shows_its_units_and_abandons_it() {
    let (sb, id) = common::blocked_flow();
    let mut cmd = sb.baton(&["tui", "--attach", &id]);
    cmd.env("TERM", "xterm-256color");
    let mut vt = Vt::spawn(cmd, 100, 24).unwrap();
    let screen = vt
        .wait_for(WAIT, |s| {
            s.contains("unit implement") && s.contains("FAIL: b.txt is wrong")
        })
        .unwrap_or_else(|s| panic!("{s}"));
    assert!(screen.contains("b blocked (review findings)"), "{screen}");
    let rows: Vec<&str> = screen
        .lines()
        .filter(|l| l.starts_with("│▸a    ") || l.starts_with("│ b    "))
        .collect();
    assert_eq!(rows.len(), 2, "{screen}");
    assert!(
        rows[0].contains("✓         –         ✓         ✓         ✓"),
        "{screen}"
    );
    assert!(
        rows[1].contains("✓         ✓         ✓         ✗         ·"),
        "{screen}"
    );
    // Unit b: its validation and review, then the review packet the reviewer was given.
    vt.send(b"j");
    vt.wait_for(WAIT, |s| s.contains("│▸b"))
        .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"\r");
    let text = vt
        .wait_for(WAIT, |s| s.contains("unit b: validation and review"))
        .unwrap_or_else(|s| panic!("{s}"));
    assert!(
        text.contains("✓ test -f b.txt") && text.contains("  FAIL: b.txt is wrong"),
        "{text}"
    );
    vt.send(b"\x1b");
    // (An Esc followed at once by a key would read as Alt+key: wait until it was taken.)
    vt.wait_for(WAIT, |s| !s.contains("unit b: validation and review"))
        .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"p");
    let packet = vt
        .wait_for(WAIT, |s| s.contains("unit b: the review packet"))
        .unwrap_or_else(|s| panic!("{s}"));
    assert!(packet.contains("b.txt"), "{packet}");
    vt.send(b"\x1b");
    vt.wait_for(WAIT, |s| !s.contains("unit b: the review packet"))
        .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"a");
    vt.wait_for(WAIT, |s| s.contains("abandon flow"))
        .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"y");
    vt.wait_for(WAIT, |s| s.contains("abandoned"))
        .unwrap_or_else(|s| panic!("{s}"));
    let log = std::fs::read_to_string(
        sb.work()
            .join(format!(".baton/state/flows/{id}.events.jsonl")),
    )
    .unwrap();
    assert!(log.contains("\"flow.abandoned\""), "{log}");
    vt.send(b"\x04");
    assert!(vt.wait(WAIT).success());
}

#[test]
fn the_side_panel_shows_a_background_task_of_another_process_and_cancels_it() {
    let server = MockServer::builder().start_blocking();
    let sb = project(&server);
    common::command_role(
        &sb,
        "gated",
        "cat >/dev/null; while [ ! -f release ]; do sleep 0.02; done; echo released",
    );
    let mut vt = tui(&sb, &[], 110, 30);
    vt.wait_for(WAIT, |s| s.contains("? help")).unwrap();
    vt.send(b"\x14"); // Ctrl+T
    vt.wait_for(WAIT, |s| s.contains("nothing yet"))
        .unwrap_or_else(|s| panic!("{s}"));
    let out = sb.run(&[
        "task",
        "--background",
        "--role",
        "gated",
        "--name",
        "bg",
        "t",
    ]);
    baton_testkit::fixture::assert_exit(&out, 0);
    let task = String::from_utf8_lossy(&out.stdout).trim().to_string();
    vt.wait_for(WAIT, |s| {
        s.contains("running (1)") && s.contains("bg · gated")
    })
    .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"x");
    vt.wait_for(WAIT, |s| s.contains(&format!("cancel task {task}")))
        .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"y");
    // Cancelled is drawn as cancelled (its own group and symbol), not as a failure.
    let screen = vt
        .wait_for(WAIT, |s| s.contains("cancelled (1)"))
        .unwrap_or_else(|s| panic!("{s}"));
    assert!(screen.contains("bg · gated"), "{screen}");
    assert!(
        screen.contains('⊘') && !screen.contains("failed ("),
        "{screen}"
    );
    let status = sb.run(&["task", "status", &task, "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(doc["phase"], "cancelled", "{doc}");
    vt.send(b"\x1b"); // closes the panel
    vt.wait_for(WAIT, |s| !s.contains("x cancels"))
        .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"\x04");
    assert!(vt.wait(WAIT).success());
}

#[test]
fn a_bang_command_runs_in_the_sandbox_and_its_output_goes_with_the_next_message() {
    let server = MockServer::builder()
        .turn(Turn::text("Seen."))
        .start_blocking();
    let sb = project(&server);
    sb.write("notes.txt", "hello\n");
    let mut vt = tui(&sb, &[], 100, 30);
    vt.wait_for(WAIT, |s| s.contains("? help")).unwrap();
    vt.send(b"!wc -l notes.txt; touch /ran-outside\r");
    let screen = vt
        .wait_for(WAIT, |s| {
            s.contains("1 notes.txt") && s.contains("! wc -l notes.txt")
        })
        .unwrap_or_else(|s| panic!("{s}"));
    // Confined like the model's own commands: nothing outside the project may be written.
    assert!(
        screen.contains("Read-only file system") || screen.contains("Permission denied"),
        "{screen}"
    );
    assert!(
        server.model_requests().is_empty(),
        "a ! command is not a message"
    );
    vt.send(b"what did it say?\r");
    vt.wait_for(WAIT, |s| s.contains("Seen.") && s.contains("● ready"))
        .unwrap_or_else(|s| panic!("{s}"));
    let asked = server.model_requests()[0].last_user_text().unwrap();
    assert!(
        asked.contains("I ran `wc -l notes.txt; touch /ran-outside`"),
        "{asked}"
    );
    assert!(
        asked.contains("1 notes.txt") && asked.ends_with("what did it say?"),
        "{asked}"
    );
    vt.send(b"\x04");
    assert!(vt.wait(WAIT).success());
}

#[test]
fn slash_run_starts_a_workflow_that_the_side_panel_follows_to_its_end() {
    use common::workflow::*;
    let wf = Wf::new();
    wf.happy();
    // The workflow's roles are scripts; the session itself is never asked anything.
    let server = MockServer::builder().start_blocking();
    wf.sb.write(
        ".baton/config.toml",
        &format!(
            "[providers.mock]\nkind = \"openai\"\nbase_url = \"{}/v1\"\napi_key_env = \"MOCK_API_KEY\"\n",
            server.url()
        ),
    );
    let mut cmd = wf.sb.baton(&["tui", "--model", "mock/m"]);
    cmd.env("TERM", "xterm-256color").env("MOCK_API_KEY", "k");
    let mut vt = Vt::spawn(cmd, 120, 30).unwrap();
    vt.wait_for(WAIT, |s| s.contains("? help"))
        .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"/run \"add a feature file\"\r");
    let screen = vt
        .wait_for(Duration::from_secs(60), |s| {
            s.contains("done (1)") && s.contains("✓ workflow wf-")
        })
        .unwrap_or_else(|s| panic!("{s}"));
    assert!(screen.contains("started the workflow"), "{screen}");
    wf.wait_completed();
    vt.send(b"\x04");
    assert!(vt.wait(WAIT).success());
}

/// The journal records of a routed session in `sb` (its one journal).
fn journal_types(sb: &Sandbox) -> Vec<serde_json::Value> {
    let dir = sb.work().join(".baton/state/sessions");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        if e.path().extension().is_some_and(|x| x == "journal") {
            for line in std::fs::read_to_string(e.path())
                .unwrap_or_default()
                .lines()
            {
                if let Ok(v) = serde_json::from_str(line) {
                    out.push(v);
                }
            }
        }
    }
    out
}

#[test]
fn a_routed_session_is_driven_by_keys_through_an_interruption_and_a_resume() {
    let server = MockServer::builder()
        .turn(Turn::tool_call(
            "c1",
            "delegate",
            json!({"operation": "assign", "unit_outcome": "The user's request is done.", "contract": "Run the long check and report."}),
        ))
        .start_blocking();
    let sb = Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .mock_provider(
            &server,
            "openai",
            "\n[retry]\ninitial_delay = \"1ms\"\nmax_delay = \"20ms\"\n\n[routing]\ncoordinator = \"mock/coord-model\"\nexecutor = \"mock/exec-model\"\n",
        );
    let started = sb.work().join("started");
    let go = sb.work().join("go");
    server.push(Turn::tool_call(
        "e1",
        "bash",
        json!({"command": format!(
            "touch '{}'; i=0; while [ ! -f '{}' ]; do i=$((i+1)); [ $i -gt 6000 ] && exit 7; sleep 0.01; done; echo went",
            started.display(), go.display()
        )}),
    ));
    server.push(Turn::tool_call(
        "e2",
        "return",
        json!({"operation": "submit", "report": "The check finished: went.", "outcome": "completed"}),
    ));
    server.push(Turn::text("The check is done."));
    let mut cmd = sb.baton(&["tui", "--routing", "auto"]);
    cmd.env("TERM", "xterm-256color");
    let mut vt = Vt::spawn(cmd, 140, 30).unwrap();
    vt.wait_for(WAIT, |s| s.contains("? help"))
        .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"run the check\r");
    assert!(baton_testkit::fixture::wait_until(WAIT, || started.exists()));
    let screen = vt
        .wait_for(WAIT, |s| s.contains("Executor · responsible"))
        .unwrap_or_else(|s| panic!("{s}"));
    assert!(
        screen.contains("C mock/coord-model · E* mock/exec-model"),
        "{screen}"
    );
    // Esc kills the running call at once (it would run until `go` appears) and stops the
    // Executor, whose report goes up.
    vt.send(b"\x1b");
    assert!(baton_testkit::fixture::wait_until(WAIT, || {
        journal_types(&sb)
            .iter()
            .any(|r| r["type"] == "execution_ended" && r["how"] == "interrupted")
    }));
    std::fs::write(&go, "").unwrap();
    vt.wait_for(WAIT, |s| {
        s.contains("! interrupted") && s.contains("● ready")
    })
    .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"/resume\r");
    let screen = vt
        .wait_for(WAIT, |s| {
            s.contains("The check is done.") && s.contains("● ready")
        })
        .unwrap_or_else(|s| panic!("{s}"));
    // The call was killed, not run to its end: the resumed Executor reads that.
    let killed = server.model_requests()[2].tool_results();
    assert!(
        killed[0].text.contains("[cancelled after") && !killed[0].text.contains("went"),
        "{}",
        killed[0].text
    );
    // The Executor's call is in its lane (the right half), the Coordinator's answer in the left.
    let call = screen.lines().find(|l| l.contains("bash touch")).unwrap();
    assert!(call.find("bash touch").unwrap() > 70, "{screen}");
    // With its evidence reference, by which the Executor would select it.
    assert!(call.contains("ctx:t1"), "{screen}");
    let answer = screen
        .lines()
        .find(|l| l.contains("The check is done."))
        .unwrap();
    assert!(answer.find("The check is done.").unwrap() < 70, "{screen}");
    let models: Vec<String> = server
        .model_requests()
        .iter()
        .map(|r| r.model().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        models,
        ["coord-model", "exec-model", "exec-model", "coord-model"]
    );
    let ends: Vec<String> = journal_types(&sb)
        .iter()
        .filter(|r| r["type"] == "execution_ended")
        .map(|r| r["how"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ends, ["interrupted", "returned"]);
    vt.send(b"\x04");
    assert!(vt.wait(WAIT).success());
}

#[test]
fn inline_mode_writes_finished_entries_to_the_scrollback_and_the_mouse_only_when_asked() {
    let server = MockServer::builder()
        .turn(Turn::text("First answer."))
        .start_blocking();
    let sb = project(&server);
    let mut vt = tui(&sb, &["--inline"], 80, 24);
    vt.wait_for(WAIT, |s| s.contains("? help"))
        .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"hello\r");
    vt.wait_for(WAIT, |s| {
        s.contains("First answer.") && s.contains("● ready")
    })
    .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"\x04");
    assert!(vt.wait(WAIT).success());
    let bytes = vt.bytes();
    // The main screen: no alternate screen; no mouse mode without --mouse.
    assert_eq!(count(&bytes, b"\x1b[?1049h"), 0);
    assert_eq!(count(&bytes, b"\x1b[?1000h"), 0);
    // After the UI is gone the conversation stays on the screen, in the terminal's own text.
    let screen = vt.screen();
    assert!(
        screen.contains("› hello") && screen.contains("First answer."),
        "{screen}"
    );

    let mut vt = tui(&sb, &["--mouse"], 80, 24);
    vt.wait_for(WAIT, |s| s.contains("? help"))
        .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"\x04");
    assert!(vt.wait(WAIT).success());
    assert!(
        count(&vt.bytes(), b"\x1b[?1000h") > 0,
        "--mouse captures the mouse"
    );
}

#[test]
fn ctrl_g_edits_the_input_in_the_editor_and_y_copies_an_entry_with_osc_52() {
    let server = MockServer::builder()
        .turn(Turn::text("Copied text."))
        .start_blocking();
    let sb = project(&server);
    // An "editor" that writes the message into the file it is given.
    let editor = sb.path("editor.sh");
    std::fs::write(
        &editor,
        "#!/bin/sh\nprintf 'written in the editor' > \"$1\"\n",
    )
    .unwrap();
    let mut cmd = sb.baton(&["tui", "--model", "mock/mock-model"]);
    cmd.env("TERM", "xterm-256color")
        .env("EDITOR", format!("sh {}", editor.display()))
        .env_remove("VISUAL");
    let mut vt = Vt::spawn(cmd, 80, 24).unwrap();
    vt.wait_for(WAIT, |s| s.contains("? help"))
        .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"\x07"); // Ctrl+G
    vt.wait_for(WAIT, |s| s.contains("› written in the editor"))
        .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"\r");
    vt.wait_for(WAIT, |s| {
        s.contains("Copied text.") && s.contains("● ready")
    })
    .unwrap_or_else(|s| panic!("{s}"));
    assert_eq!(
        server.model_requests()[0].last_user_text().as_deref(),
        Some("written in the editor")
    );
    // Alt+Up focuses the last entry; y copies it.
    vt.send(b"\x1b[1;3A");
    vt.wait_for(WAIT, |s| s.contains("▌"))
        .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"y");
    vt.wait_for(WAIT, |s| s.contains("copied"))
        .unwrap_or_else(|s| panic!("{s}"));
    // OSC 52 with the answer in base64 ("Copied text." is Q29waWVkIHRleHQu), once. The frame
    // saying "copied" may reach the terminal before the sequence written after it.
    let osc = b"\x1b]52;c;Q29waWVkIHRleHQu\x07";
    assert!(baton_testkit::fixture::wait_until(WAIT, || count(
        &vt.bytes(),
        osc
    ) >= 1));
    assert_eq!(count(&vt.bytes(), osc), 1);
    vt.send(b"\x1b");
    vt.wait_for(WAIT, |s| !s.contains("▌"))
        .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"\x04");
    assert!(vt.wait(WAIT).success());
}

#[test]
fn a_delegation_shows_in_the_panel_and_opens_the_child_s_own_transcript() {
    let server = MockServer::builder()
        .turn(Turn::tool_call(
            "c1",
            "delegate_task",
            json!({"role": "helper", "name": "look", "task": "find the answer in notes.txt"}),
        ))
        // The child (offered only `read`) answers from the same server.
        .when(
            |r| r.offered_tools() == ["read"],
            Turn::text("Found it: 42."),
        )
        .turn(Turn::text("The helper found 42."))
        .start_blocking();
    let sb = Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .mock_provider(
            &server,
            "openai",
            "[models]\ndefault_class = \"balanced\"\nbalanced = \"mock/m\"\n",
        );
    sb.write(
        ".baton/roles/helper.md",
        "---\nname: helper\ndescription: looks things up\ntools: [read]\n---\nLook it up.\n",
    );
    let mut cmd = sb.baton(&["tui"]);
    cmd.env("TERM", "xterm-256color");
    let mut vt = Vt::spawn(cmd, 120, 30).unwrap();
    vt.wait_for(WAIT, |s| s.contains("? help"))
        .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"ask a helper\r");
    vt.wait_for(WAIT, |s| {
        s.contains("The helper found 42.") && s.contains("● ready")
    })
    .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"\x14"); // Ctrl+T
    vt.wait_for(WAIT, |s| {
        s.contains("done (1)") && s.contains("look · helper")
    })
    .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"\r");
    let screen = vt
        .wait_for(WAIT, |s| {
            s.contains("(read-only)") && s.contains("Found it: 42.")
        })
        .unwrap_or_else(|s| panic!("{s}"));
    assert!(
        screen.contains("› find the answer in notes.txt"),
        "{screen}"
    );
    assert!(screen.contains("role helper"), "{screen}");
    vt.send(b"q");
    vt.wait_for(WAIT, |s| !s.contains("(read-only)"))
        .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"\x1b");
    vt.wait_for(WAIT, |s| !s.contains("x cancels"))
        .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"\x04");
    assert!(vt.wait(WAIT).success());
}

#[test]
fn off_a_terminal_or_with_what_it_cannot_do_baton_tui_refuses_with_the_way_on() {
    let server = MockServer::builder().start_blocking();
    let sb = project(&server);
    // A pipe: `baton` alone prints its help; `baton tui` names the commands for a pipe.
    let out = sb.run(&[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Usage: baton"));
    let out = sb.run(&["tui"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("needs a terminal") && err.contains("baton chat"),
        "{err}"
    );
    // On a terminal: --json and a task on stdin are refused, naming what to use.
    for (args, says) in [
        (&["--json"][..], "baton agent --json"),
        (&["-"][..], "pass the first message as an argument"),
        (
            &["--attach", "nope"][..],
            "no workflow, Flow, background task or session",
        ),
    ] {
        let mut vt = tui(&sb, args, 240, 10);
        let status = vt.wait(WAIT);
        assert_eq!(status.code(), Some(2), "{args:?}");
        assert!(vt.screen().contains(says), "{args:?}: {}", vt.screen());
    }
}

#[test]
fn a_managed_worker_shows_in_the_side_panel_and_is_prompted_with_slash_worker() {
    let server = MockServer::builder()
        .turn(Turn::text("the worker's answer\nwith a second line"))
        .start_blocking();
    let sb = project(&server);
    sb.write(
        ".baton/roles/helper.md",
        "---\nname: helper\ndescription: a worker\ntools: []\n---\nHelp.\n",
    );
    let o = sb.run(&[
        "worker", "start", "w1", "--role", "helper", "--model", "mock/m",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut vt = tui(&sb, &[], 120, 30);
    vt.wait_for(WAIT, |s| s.contains("? help"))
        .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"/worker w1 summarise the notes\r");
    let screen = vt
        .wait_for(WAIT, |s| {
            s.contains("worker w1 · helper") && s.contains("answered: the worker's answer")
        })
        .unwrap_or_else(|s| panic!("{s}"));
    assert!(screen.contains("sent to worker w1"), "{screen}");
    let asked = server.model_requests();
    assert_eq!(asked.len(), 1);
    assert!(asked[0].body.to_string().contains("summarise the notes"));
    vt.send(b"\x04");
    assert!(vt.wait(WAIT).success());
    let o = sb.run(&["worker", "stop", "w1"]);
    assert!(o.status.success());
}

/// [22/24] Ctrl+C on an empty composer used to quit at once, and the next keystrokes went to
/// the shell: now it asks, a key in between keeps the session (and reaches it), and a second
/// press quits cleanly.
#[test]
fn ctrl_c_on_an_empty_composer_asks_before_it_quits() {
    let server = MockServer::builder().start_blocking();
    let sb = project(&server);
    let mut vt = tui(&sb, &[], 80, 24);
    vt.wait_for(WAIT, |s| s.contains("? help"))
        .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"\x03");
    vt.wait_for(WAIT, |s| s.contains("press ctrl+c again to quit"))
        .unwrap_or_else(|s| panic!("{s}"));
    // Still there: the next key is typed into its composer, and the question is gone.
    vt.send(b"x");
    vt.wait_for(WAIT, |s| {
        s.contains("› x") && !s.contains("press ctrl+c again")
    })
    .unwrap_or_else(|s| panic!("{s}"));
    // Ctrl+C clears the text, asks, then quits.
    vt.send(b"\x03");
    vt.wait_for(WAIT, |s| !s.contains("› x"))
        .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"\x03");
    vt.wait_for(WAIT, |s| s.contains("press ctrl+c again to quit"))
        .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"\x03");
    assert!(vt.wait(WAIT).success());
    assert!(server.model_requests().is_empty());
}

/// [22/24] `/model` lists what it can switch to and switches the route from the next turn;
/// `/clear` starts a new conversation (the model's next request holds none of the messages
/// before); a resumed session keeps both.
#[test]
fn slash_model_switches_the_route_and_slash_clear_starts_a_new_conversation() {
    let server = MockServer::builder()
        .turn(Turn::text("First answer."))
        .turn(Turn::text("Second answer."))
        .turn(Turn::text("Third answer."))
        .turn(Turn::text("Fourth answer."))
        .start_blocking();
    let sb = project(&server);
    sb.write(
        ".baton/config.toml",
        "[models]\nfast = \"mock/small-model\"\n",
    );
    let mut vt = tui(&sb, &[], 110, 30);
    vt.wait_for(WAIT, |s| s.contains("? help")).unwrap();
    vt.send(b"alpha-one\r");
    vt.wait_for(WAIT, |s| {
        s.contains("First answer.") && s.contains("● ready")
    })
    .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"/model\r");
    vt.wait_for(WAIT, |s| {
        s.contains("/model NAME switches") && s.contains("fast (mock/small-model)")
    })
    .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"/model nowhere/x\r");
    vt.wait_for(WAIT, |s| s.contains("/model nowhere/x:"))
        .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"/model fast\r");
    vt.wait_for(WAIT, |s| {
        s.contains("route mock/small-model from the next turn")
    })
    .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"beta-two\r");
    vt.wait_for(WAIT, |s| {
        s.contains("Second answer.") && s.contains("● ready")
    })
    .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"/clear\r");
    vt.wait_for(WAIT, |s| s.contains("conversation cleared"))
        .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"gamma-three\r");
    let screen = vt
        .wait_for(WAIT, |s| {
            s.contains("Third answer.") && s.contains("● ready")
        })
        .unwrap_or_else(|s| panic!("{s}"));
    assert!(
        screen.contains("mock/small-model"),
        "the header shows the new route: {screen}"
    );
    vt.send(b"\x04");
    assert!(vt.wait(WAIT).success());

    let asked = server.model_requests();
    assert_eq!(asked.len(), 3, "a failed /model and /clear send nothing");
    // The transcript keeps both: resumed, the session runs on the route it switched to and its
    // conversation starts at the clear.
    let sessions: Vec<_> = std::fs::read_dir(sb.work().join(".baton/state/sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let id = sessions[0]
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .to_string();
    let out = sb.run(&["agent", "--resume", &id, "delta-four"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let asked = server.model_requests();
    assert_eq!(asked[3].body["model"], "small-model");
    let resumed = asked[3].prompt_parts().join("\n");
    assert!(
        resumed.contains("gamma-three") && !resumed.contains("alpha-one"),
        "{resumed}"
    );
    let models: Vec<&str> = asked
        .iter()
        .map(|r| r.body["model"].as_str().unwrap())
        .collect();
    assert_eq!(
        models,
        ["mock-model", "small-model", "small-model", "small-model"]
    );
    let said = |i: usize| -> String { asked[i].prompt_parts().join("\n") };
    assert!(
        said(1).contains("alpha-one") && said(1).contains("First answer."),
        "{}",
        said(1)
    );
    assert!(
        !said(2).contains("alpha-one")
            && !said(2).contains("beta-two")
            && !said(2).contains("Second answer.")
            && said(2).contains("gamma-three"),
        "after /clear the request holds only the new message: {}",
        said(2)
    );
}

/// [22/24] A command's last lines show under its call, as a terminal leaves them, with how many
/// came before.
#[test]
fn a_bash_call_shows_the_last_lines_of_its_output_inline() {
    let server = MockServer::builder()
        .turn(Turn::tool_call(
            "b1",
            "bash",
            json!({"command": "for i in 1 2 3 4 5; do echo line-$i; done"}),
        ))
        .turn(Turn::text("Printed five lines."))
        .start_blocking();
    let sb = project(&server);
    let mut vt = tui(&sb, &["--approval", "never"], 90, 24);
    vt.wait_for(WAIT, |s| s.contains("? help")).unwrap();
    vt.send(b"print five lines\r");
    let screen = vt
        .wait_for(WAIT, |s| {
            s.contains("Printed five lines.") && s.contains("● ready")
        })
        .unwrap_or_else(|s| panic!("{s}"));
    assert!(screen.contains("│ … 2 earlier lines (ctrl+o)"), "{screen}");
    for shown in ["│ line-3", "│ line-4", "│ line-5"] {
        assert!(screen.contains(shown), "{shown} in {screen}");
    }
    assert!(!screen.contains("line-2"), "{screen}");
    vt.send(b"\x04");
    assert!(vt.wait(WAIT).success());
}

/// [22/24] `baton tui --resume` alone lists the saved sessions, newest first, with their short
/// ids, what they cost and first prompts; the one picked resumes with its conversation.
#[test]
fn resume_without_an_id_picks_a_session_from_the_list() {
    let server = MockServer::builder()
        .turn(Turn::text("Answer to the older one."))
        .turn(Turn::text("Answer to the newer one."))
        .turn(Turn::text("Picked up again."))
        .start_blocking();
    let sb = project(&server);
    for prompt in ["the older question", "the newer question"] {
        let out = sb.run(&["agent", "--model", "mock/mock-model", prompt]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut vt = tui(&sb, &["--resume"], 110, 20);
    let list = vt
        .wait_for(WAIT, |s| {
            s.contains("Resume a session (2 saved, newest first)")
        })
        .unwrap_or_else(|s| panic!("{s}"));
    let newer = list.find("the newer question").expect("newer listed");
    let older = list.find("the older question").expect("older listed");
    assert!(newer < older, "newest first: {list}");
    // Each row says what the session cost (a local server's models cost nothing).
    let costed = list
        .lines()
        .filter(|l| l.contains("question") && l.contains("completed") && l.contains("$0.0000"))
        .count();
    assert_eq!(costed, 2, "{list}");
    // Down to the older one, and Enter.
    vt.send(b"\x1b[B");
    vt.send(b"\r");
    vt.wait_for(WAIT, |s| {
        s.contains("? help") && s.contains("the older question")
    })
    .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"and again\r");
    vt.wait_for(WAIT, |s| {
        s.contains("Picked up again.") && s.contains("● ready")
    })
    .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"\x04");
    assert!(vt.wait(WAIT).success());
    let asked = server.model_requests()[2].prompt_parts().join("\n");
    assert!(
        asked.contains("the older question") && !asked.contains("the newer question"),
        "{asked}"
    );
    // Without a terminal session to pick, `baton agent --resume` alone says what to give.
    let out = sb.run(&["agent", "--resume"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--resume needs the session"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// [22/24] `/resume` inside the terminal UI: the saved sessions (this one left out), newest
/// first; Enter leaves this session and goes on with the one picked, in the same terminal, and
/// the next prompt carries that session's conversation.
#[test]
fn slash_resume_in_the_ui_picks_another_session_and_goes_on_with_it() {
    let server = MockServer::builder()
        .turn(Turn::text("Answer to the saved one."))
        .turn(Turn::text("Answer in the new one."))
        .turn(Turn::text("Back in the saved one."))
        .start_blocking();
    let sb = project(&server);
    let out = sb.run(&["agent", "--model", "mock/mock-model", "the saved question"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut vt = tui(&sb, &["the new question"], 110, 20);
    vt.wait_for(WAIT, |s| {
        s.contains("Answer in the new one.") && s.contains("● ready")
    })
    .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"/resume\r");
    let list = vt
        .wait_for(WAIT, |s| {
            s.contains("Resume a session (1 saved, newest first)")
        })
        .unwrap_or_else(|s| panic!("{s}"));
    assert!(list.contains("the saved question"), "{list}");
    assert!(
        !list.contains("the new question  "),
        "this session is not listed: {list}"
    );
    vt.send(b"\r");
    vt.wait_for(WAIT, |s| {
        s.contains("the saved question")
            && s.contains("Answer to the saved one.")
            && s.contains("? help")
    })
    .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"and on\r");
    vt.wait_for(WAIT, |s| {
        s.contains("Back in the saved one.") && s.contains("● ready")
    })
    .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"\x04");
    assert!(vt.wait(WAIT).success());
    let asked = server.model_requests()[2].prompt_parts().join("\n");
    assert!(
        asked.contains("the saved question") && !asked.contains("the new question"),
        "{asked}"
    );
}

/// [22/24] `/diff` shows what changed in the project since the session started: the model's
/// write, not the files that were there before (a scratch file of the user's included).
#[test]
fn slash_diff_shows_what_changed_since_the_session_started() {
    let server = MockServer::builder()
        .turn(Turn::tool_call(
            "w1",
            "write",
            json!({"path": "hello.txt", "content": "hello from the model\n"}),
        ))
        .turn(Turn::text("Wrote hello.txt."))
        .start_blocking();
    let sb = project(&server);
    sb.init_repo("main");
    sb.write("README.md", "readme\n");
    sb.commit_all("first");
    sb.write("scratch.txt", "the user's own, untracked\n");
    let mut vt = tui(&sb, &["--approval", "never"], 110, 30);
    vt.wait_for(WAIT, |s| s.contains("? help")).unwrap();
    vt.send(b"/diff\r");
    vt.wait_for(WAIT, |s| s.contains("nothing changed in the project"))
        .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"write hello.txt\r");
    let written = vt
        .wait_for(WAIT, |s| {
            s.contains("Wrote hello.txt.") && s.contains("● ready")
        })
        .unwrap_or_else(|s| panic!("{s}"));
    // The write's diff carries its lines' numbers.
    assert!(written.contains("1 + hello from the model"), "{written}");
    vt.send(b"/diff\r");
    let screen = vt
        .wait_for(WAIT, |s| s.contains("+hello from the model"))
        .unwrap_or_else(|s| panic!("{s}"));
    assert!(screen.contains("hello.txt | 1 +"), "{screen}");
    assert!(!screen.contains("scratch.txt"), "{screen}");
    assert!(
        screen.contains("what changed since the session started"),
        "{screen}"
    );
    // Esc closes the viewer, Esc again the panel; then the composer has the keys.
    vt.send(b"\x1b");
    vt.wait_for(WAIT, |s| {
        !s.contains("what changed since the session started")
    })
    .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"\x1b");
    vt.wait_for(WAIT, |s| !s.contains("x cancels"))
        .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"\x04");
    assert!(vt.wait(WAIT).success());
}

/// [22/24] Undo: a prompt that writes leaves a checkpoint; Esc Esc on an empty composer opens
/// the list, Enter puts the agent's file back, and a file the user changed by hand meanwhile
/// stays as the user left it.
#[test]
fn esc_esc_undoes_a_prompt_s_files_and_keeps_what_the_user_changed() {
    let server = MockServer::builder()
        .turn(Turn::tool_call(
            "w1",
            "write",
            json!({"path": "hello.txt", "content": "hello from the model\n"}),
        ))
        .turn(Turn::tool_call(
            "w2",
            "write",
            json!({"path": "notes.txt", "content": "the model's notes\n"}),
        ))
        .turn(Turn::text("Wrote both."))
        .turn(Turn::tool_call(
            "w3",
            "write",
            json!({"path": "hello.txt", "content": "hello again\n"}),
        ))
        .turn(Turn::text("Wrote it again."))
        .start_blocking();
    let sb = project(&server);
    sb.init_repo("main");
    sb.write("hello.txt", "hello\n");
    sb.commit_all("first");
    let mut vt = tui(&sb, &["--approval", "never"], 110, 30);
    vt.wait_for(WAIT, |s| s.contains("? help")).unwrap();
    // Nothing to undo yet.
    vt.send(b"/undo\r");
    vt.wait_for(WAIT, |s| s.contains("nothing to undo"))
        .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"write both files\r");
    vt.wait_for(WAIT, |s| s.contains("Wrote both.") && s.contains("● ready"))
        .unwrap_or_else(|s| panic!("{s}"));
    sb.write("notes.txt", "the user's own notes\n");
    vt.send(b"\x1b");
    vt.wait_for(WAIT, |s| s.contains("press Esc again to undo"))
        .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"\x1b");
    let list = vt
        .wait_for(WAIT, |s| s.contains("#1 write both files · 2 files"))
        .unwrap_or_else(|s| panic!("{s}"));
    assert!(list.contains("undo · ↑↓ Enter · Esc closes"), "{list}");
    vt.send(b"\r");
    let screen = vt
        .wait_for(WAIT, |s| s.contains("undone to before checkpoint 1"))
        .unwrap_or_else(|s| panic!("{s}"));
    assert!(screen.contains("put back: hello.txt"), "{screen}");
    assert!(
        screen.contains("kept (changed by hand since): notes.txt"),
        "{screen}"
    );
    let read = |p: &str| std::fs::read_to_string(sb.work().join(p)).unwrap();
    assert_eq!(read("hello.txt"), "hello\n");
    assert_eq!(read("notes.txt"), "the user's own notes\n");
    // The transcript keeps the checkpoint and its undo.
    let sessions = sb.work().join(".baton/state/sessions");
    let transcript = std::fs::read_dir(&sessions)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .find(|t| t.contains("\"type\":\"checkpoint\""))
        .unwrap();
    assert!(
        transcript.contains("\"type\":\"undone\",\"checkpoint\":1"),
        "{transcript}"
    );
    // A checkpoint outlives the process: the next one, after a resume, is in the list.
    vt.send(b"write hello again\r");
    vt.wait_for(WAIT, |s| {
        s.contains("Wrote it again.") && s.contains("● ready")
    })
    .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"\x04");
    assert!(vt.wait(WAIT).success());
    let mut vt = tui(&sb, &["--resume", "last"], 110, 30);
    vt.wait_for(WAIT, |s| s.contains("resumed session"))
        .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"/undo\r");
    let list = vt
        .wait_for(WAIT, |s| s.contains("#2 write hello again · 1 file"))
        .unwrap_or_else(|s| panic!("{s}"));
    assert!(!list.contains("#1 write both files"), "{list}");
    vt.send(b"\x1b");
    vt.wait_for(WAIT, |s| !s.contains("undo · ↑↓ Enter"))
        .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"\x04");
    assert!(vt.wait(WAIT).success());
}

/// [22/24] Shift+Tab changes the approval policy of the running session: started with
/// `never`, one press makes it `on-write`, and the next write is asked about.
#[test]
fn shift_tab_changes_the_approval_policy_from_the_next_call() {
    let server = MockServer::builder()
        .turn(Turn::tool_call(
            "w1",
            "write",
            json!({"path": "note.txt", "content": "hello\n"}),
        ))
        .turn(Turn::text("Written."))
        .start_blocking();
    let sb = project(&server);
    let mut vt = tui(&sb, &["--approval", "never"], 100, 24);
    vt.wait_for(WAIT, |s| s.contains("? help")).unwrap();
    vt.send(b"\x1b[Z");
    vt.wait_for(WAIT, |s| {
        // Said in the transcript, and in the status line (the screen's last line).
        s.contains("approval on-write: asks before every call")
            && s.lines()
                .last()
                .is_some_and(|l| l.contains("approval on-write"))
    })
    .unwrap_or_else(|s| panic!("{s}"));
    vt.send(b"write a note\r");
    let modal = vt
        .wait_for(WAIT, |s| s.contains("approve this call?"))
        .unwrap_or_else(|s| panic!("{s}"));
    assert!(modal.contains("write note.txt"), "{modal}");
    vt.send(b"1");
    vt.wait_for(WAIT, |s| s.contains("Written.") && s.contains("● ready"))
        .unwrap_or_else(|s| panic!("{s}"));
    assert_eq!(
        std::fs::read_to_string(sb.work().join("note.txt")).unwrap(),
        "hello\n"
    );
    vt.send(b"\x04");
    assert!(vt.wait(WAIT).success());
}
