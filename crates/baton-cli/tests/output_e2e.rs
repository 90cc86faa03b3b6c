//! Honest output through the built binary: truncation markers state the bytes really cut, an
//! answer redirected to a file holds only the final answer, and the live status block fits the
//! terminal at any width.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use baton_testkit::fixture::{assert_exit, task_report as report, Sandbox};
use serde_json::{json, Value};

fn project() -> Sandbox {
    Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .baton_config("")
}

fn command_role(p: &Sandbox, name: &str, command: &str) {
    p.write(
        format!(".baton/roles/{name}.md"),
        &format!(
            "---\nname: {name}\ndescription: test role\ntools: []\nbackend: command\ncommand: [sh, -c, {}]\n---\nDo it.\n",
            serde_json::to_string(command).unwrap()
        ),
    );
}

/// The number in the one `[… N bytes omitted …]` marker at the end of `text`.
fn marker(text: &str) -> usize {
    let start = text
        .rfind("[… ")
        .unwrap_or_else(|| panic!("no marker in {text}"));
    text[start + "[… ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn markers_state_the_bytes_really_cut() {
    let p = project();
    command_role(&p, "huge", "head -c 5000000 /dev/zero | tr '\\0' x");
    command_role(
        &p,
        "lines",
        "yes 0123456789012345678901234567890123456789 | head -c 108000",
    );
    let tasks = p.work().join("tasks.json");
    let entries: Vec<Value> = (0..8)
        .map(|i| json!({"role": "huge", "name": format!("h{i}"), "task": "t"}))
        .collect();
    std::fs::write(&tasks, Value::Array(entries).to_string()).unwrap();
    let out = p.run(&["task", "--json", "--parallel", tasks.to_str().unwrap()]);
    assert_exit(&out, 0);
    let r = report(&out);
    let mut cut = 0;
    let mut kept = 0;
    for e in r["entries"].as_array().unwrap() {
        let output = e["output"].as_str().unwrap();
        let n = marker(output);
        assert_eq!(e["omitted"].as_u64().unwrap() as usize, n);
        let shown = output.bytes().filter(|b| *b == b'x').count();
        // What is shown and what the marker says was cut add up to what the child printed.
        assert_eq!(shown + n, 5_000_000, "{}", &output[output.len().min(60)..]);
        cut += n;
        kept += shown;
    }
    assert_eq!(kept, 51_200, "the call's budget");
    assert_eq!(cut, 8 * 5_000_000 - 51_200);

    let out = p.run(&["task", "--json", "--role", "lines", "--name", "l", "t"]);
    assert_exit(&out, 0);
    let output = report(&out)["entries"][0]["output"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(marker(&output), 108_000 - 51_200);
}

/// `baton agent "…" > answer.md`: after a stream dropped mid-answer and a retried turn, and with
/// narration before a tool call, the file holds the final answer and nothing else.
#[test]
fn redirected_stdout_holds_only_the_final_answer() {
    use baton_testkit::{Fault, MockServer, Turn};
    for kind in ["openai", "openai-responses", "anthropic"] {
        let server = MockServer::builder()
            .fault(Fault::drop_after(
                Turn::text("this answer never finished, this is "),
                3,
            ))
            .turn(Turn::text("Let me look first.").with_tool_call(
                "call_l",
                "ls",
                json!({"path": "."}),
            ))
            .turn(Turn::text("The final answer."))
            .start_blocking();
        let p = Sandbox::new()
            .baton_exe(env!("CARGO_BIN_EXE_baton"))
            .mock_provider(&server, kind, "[retry]\ninitial_delay = \"1ms\"\n");
        let out = p.run(&["agent", "--model", "mock/m", "answer"]);
        assert_exit(&out, 0);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "The final answer.\n",
            "{kind}"
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("retrying"), "{kind}: {stderr}");
        server.assert_tool_results_answer_calls();
    }
}

/// `baton task`'s live status block in a real pseudo-terminal 40, 60 and 120 columns wide: rows
/// (here a `command` role whose whole command line is its "model") are cut to the width, so the
/// block redraws exactly over itself and the final screen shows each row once.
#[test]
fn the_status_block_fits_and_redraws_exactly_at_any_width() {
    use baton_testkit::fixture::wait_until;
    use baton_testkit::pty::{Pty, Screen};
    use std::process::Stdio;
    use std::time::Duration;
    for cols in [40u16, 60, 120] {
        let p = project();
        command_role(
            &p,
            "gated",
            "while [ ! -f release ]; do sleep 0.01; done\necho \"finished $BATON_TASK_NAME with a long line of output\"",
        );
        let tasks = p.work().join("tasks.json");
        let entries: Vec<Value> = ["alpha", "bravo", "charlie"]
            .iter()
            .map(|n| json!({"role": "gated", "name": n, "task": "t"}))
            .collect();
        std::fs::write(&tasks, Value::Array(entries).to_string()).unwrap();
        let pty = Pty::open(cols, 50).unwrap();
        let screen = pty.start_reader().unwrap();
        let baton = p
            .baton(&["task", "--parallel", tasks.to_str().unwrap()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(pty.slave().unwrap())
            .spawn()
            .unwrap();
        let _master = pty.close_slave();
        // Rows on screen now that start with `glyph`.
        let rows = |glyph: char| {
            Screen::replay(&screen.bytes(), usize::from(cols))
                .lines()
                .iter()
                .filter(|l| l.starts_with(glyph))
                .count()
        };
        // All three running (and redrawn over each other several times), then released.
        assert!(wait_until(Duration::from_secs(30), || rows('●') == 3));
        std::fs::write(p.work().join("release"), "").unwrap();
        let out = baton.wait_with_output().unwrap();
        assert_exit(&out, 0);
        assert!(wait_until(Duration::from_secs(5), || rows('✓') == 3));
        let shown = Screen::replay(&screen.bytes(), usize::from(cols));
        let lines = shown.lines();
        assert_eq!(shown.wraps, 0, "{cols} cols: a row wrapped: {lines:#?}");
        assert_eq!(lines.len(), 6, "{cols} cols: {lines:#?}");
        for (i, name) in ["alpha", "bravo", "charlie"].iter().enumerate() {
            assert!(
                lines[2 * i].starts_with(&format!("✓ {name} (gated)")),
                "{lines:#?}"
            );
            assert!(
                lines[2 * i + 1].starts_with("    Done · turns"),
                "{lines:#?}"
            );
        }
        for l in &lines {
            assert!(l.chars().count() < usize::from(cols), "{cols}: {l}");
        }
    }
}

/// Text mode on a terminal shows a running tool on a spinner line with its elapsed time, and
/// replaces it with the tool's result line when it ends.
#[test]
fn a_running_tool_shows_on_a_spinner_line_then_its_result() {
    use baton_testkit::fixture::wait_until;
    use baton_testkit::pty::{Pty, Screen};
    use baton_testkit::{MockServer, Turn};
    use std::process::Stdio;
    use std::time::Duration;
    let server = MockServer::builder()
        .turn(Turn::tool_call(
            "call_b",
            "bash",
            json!({"command": "while [ ! -f go ]; do sleep 0.01; done; echo went"}),
        ))
        .turn(Turn::text("Done."))
        .start_blocking();
    let p = Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .mock_provider(&server, "openai", "")
        // A terminal that can redraw a line (TERM unset counts as `dumb`: no spinner).
        .env("TERM", "xterm");
    let cols = 80;
    let pty = Pty::open(cols, 40).unwrap();
    let screen = pty.start_reader().unwrap();
    let baton = p
        .baton(&["agent", "--model", "mock/m", "wait for go"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(pty.slave().unwrap())
        .spawn()
        .unwrap();
    let _master = pty.close_slave();
    let spinner_line = |lines: &[String]| {
        lines
            .iter()
            .find(|l| l.contains("bash while [ ! -f go ]") && !l.starts_with('•'))
            .cloned()
    };
    assert!(
        wait_until(Duration::from_secs(30), || spinner_line(
            &Screen::replay(&screen.bytes(), usize::from(cols)).lines()
        )
        .is_some()),
        "no spinner line: {:?}",
        screen.text()
    );
    let line = spinner_line(&Screen::replay(&screen.bytes(), usize::from(cols)).lines()).unwrap();
    assert!(line.trim_end().ends_with('s'), "elapsed time: {line}");
    std::fs::write(p.work().join("go"), "").unwrap();
    let out = baton.wait_with_output().unwrap();
    assert_exit(&out, 0);
    assert!(wait_until(Duration::from_secs(5), || screen
        .text()
        .contains("completed after")));
    let lines = Screen::replay(&screen.bytes(), usize::from(cols)).lines();
    assert!(spinner_line(&lines).is_none(), "{lines:#?}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("• bash while [ ! -f go ]") && l.ends_with("→ exit 0")),
        "{lines:#?}"
    );
    server.assert_tool_results_answer_calls();
}
