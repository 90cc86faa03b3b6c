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
    let bytes = vt_bytes_after_exit(&sb);
    let _ = bytes;
}

fn vt_bytes_after_exit(_sb: &Sandbox) -> Vec<u8> {
    Vec::new()
}
