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

#[test]
fn esc_interrupts_a_streaming_answer_at_once_and_every_frame_is_synchronized() {
    let long: String = (1..=400).map(|n| format!("line {n}\n")).collect();
    let server = MockServer::builder()
        .turn(Turn::text(long).delay_ms_per_chunk(40))
        .turn(Turn::text("Second answer."))
        .start_blocking();
    let sb = project(&server);
    let mut vt = tui(&sb, &[], 100, 30);
    vt.wait_for(WAIT, |s| s.contains("? help")).unwrap();
    vt.send(b"talk a lot\r");
    vt.wait_for(WAIT, |s| s.contains("line 3") && s.contains("working"))
        .unwrap_or_else(|s| panic!("{s}"));
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
