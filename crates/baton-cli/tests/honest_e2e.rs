//! End-to-end tests of honest output and forgiving input: bad role files, `--max-turns`, the
//! `--json` stream of a failed start. They drive the built `baton` binary against the mock server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Output;

use baton_testkit::fixture::{assert_exit, Sandbox};
use baton_testkit::{MockServer, Turn};

/// A sandbox running the built `baton` with provider `mock` (Chat Completions) at `server`.
fn project(server: &MockServer, extra_config: &str) -> Sandbox {
    Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .baton_config(&format!(
            "[providers.mock]\nkind = \"openai\"\nbase_url = \"{}/v1\"\napi_key_env = \"MOCK_API_KEY\"\n\n\
             [models]\nbalanced = \"mock/small\"\n\n\
             [retry]\ninitial_delay = \"1ms\"\nmax_delay = \"20ms\"\n{extra_config}",
            server.url()
        ))
        .env("MOCK_API_KEY", "test-key")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Two bad project role files: a frontmatter that YAML cannot read (a list opened on the file's
/// line 4 and never closed: the parser notices at the closing `---`, line 5) and an unknown tool
/// on line 4. Returns their paths as baton shows them.
fn write_bad_roles(sb: &Sandbox) -> (String, String) {
    let broken = sb.write(
        ".baton/roles/broken.md",
        "---\nname: broken\ndescription: d\ntools: [read\n---\nbody\n",
    );
    let flying = sb.write(
        ".baton/roles/flying.md",
        "---\nname: flyer\ndescription: d\ntools: [fly]\n---\nbody\n",
    );
    let shown = |p: std::path::PathBuf| p.canonicalize().unwrap().display().to_string();
    (shown(broken), shown(flying))
}

#[test]
fn a_bad_role_file_fails_only_the_commands_that_ask_for_its_role() {
    let server = MockServer::builder()
        .turn(Turn::text("done"))
        .start_blocking();
    let sb = project(&server, "");
    let (broken, flying) = write_bad_roles(&sb);
    sb.write(
        ".baton/roles/echo.md",
        "---\nname: echo\ndescription: d\ntools: []\nbackend: command\ncommand: [cat]\n---\nEcho.\n",
    );

    // Another role is used: it runs, and each bad file is one warning line naming its file line.
    let out = sb.run(&["agent", "--role", "implementer", "say done"]);
    assert_exit(&out, 0);
    assert_eq!(stdout(&out).trim(), "done");
    let err = stderr(&out);
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("baton: warning: skipped role file"))
        .collect();
    assert_eq!(warnings.len(), 2, "{err}");
    assert!(
        warnings[0].contains(&format!("{broken}:5: frontmatter")),
        "{err}"
    );
    assert!(warnings[0].contains("at line 4 column 8"), "{err}");
    assert!(
        warnings[1].contains(&format!("{flying}:4: field `tools`: unknown tool `fly`")),
        "{err}"
    );

    // The role asked for is bad: refused, naming the file and line.
    let out = sb.run(&["agent", "--role", "flyer", "x"]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("\nbaton: {flying}:4: field `tools`")),
        "{err}"
    );

    // `baton task` likewise.
    let out = sb.run(&["task", "--role", "echo", "--name", "e", "hello"]);
    assert_exit(&out, 0);
    assert!(stdout(&out).contains("hello"), "{}", stdout(&out));
    assert_eq!(
        stderr(&out)
            .lines()
            .filter(|l| l.starts_with("baton: warning: skipped role file"))
            .count(),
        2,
        "{}",
        stderr(&out)
    );
    let out = sb.run(&["task", "--role", "broken", "--name", "b", "hello"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains(&format!("{broken}:5")),
        "{}",
        stderr(&out)
    );

    // `baton roles` lists the good roles and the bad files.
    let out = sb.run(&["roles"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    for good in ["echo", "implementer", "reviewer", "scout"] {
        assert!(text.lines().any(|l| l.starts_with(good)), "{good}: {text}");
    }
    assert!(text.contains(&format!("{broken}:5: frontmatter")), "{text}");
    assert!(
        text.contains(&format!("{flying}:4: field `tools`")),
        "{text}"
    );

    // `baton roles check` reports every bad file, then exits 2.
    let out = sb.run(&["roles", "check"]);
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(err.contains(&format!("{broken}:5: frontmatter")), "{err}");
    assert!(err.contains(&format!("{flying}:4: field `tools`")), "{err}");
    assert_eq!(
        stdout(&out).trim(),
        "14 roles valid, 2 role file(s) invalid"
    );
    server.assert_tool_results_answer_calls();
}

/// A turn limit below 2 leaves no turn to work in (the last is the handoff report): refused
/// before any request, naming where the value came from.
#[test]
fn a_turn_limit_below_two_is_refused_naming_its_source() {
    let server = MockServer::builder()
        .turn(Turn::tool_call("c1", "ls", serde_json::json!({})))
        .turn(Turn::text("done"))
        .start_blocking();
    let sb = project(&server, "");
    let out = sb.run(&["agent", "--max-turns", "1", "list the files"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("--max-turns must be at least 2 (it is 1): the last turn is reserved for the handoff report"),
        "{}",
        stderr(&out)
    );
    let out = sb.run_with(&["agent", "list the files"], &[("BATON_MAX_TURNS", "1")]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("BATON_MAX_TURNS must be at least 2 (it is 1)"),
        "{}",
        stderr(&out)
    );
    let config = std::fs::read_to_string(sb.config_file()).unwrap();
    std::fs::write(
        sb.config_file(),
        format!("{config}\n[agent]\nmax_turns = 1\n"),
    )
    .unwrap();
    let out = sb.run(&["agent", "list the files"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("agent.max_turns must be at least 2 (it is 1)"),
        "{}",
        stderr(&out)
    );
    assert_eq!(server.requests().len(), 0);
    server.assert_tool_results_answer_calls();
}

/// The stdout of a `--json` run as events; every line must be one.
fn events(out: &Output) -> Vec<serde_json::Value> {
    stdout(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad event line {l}: {e}")))
        .collect()
}

#[test]
fn json_mode_reports_a_refused_start_as_a_started_and_completed_session() {
    let server = MockServer::builder().start_blocking();
    let sb = project(&server, "");
    let config = std::fs::read_to_string(sb.config_file()).unwrap();
    let cwd = sb.work().canonicalize().unwrap().display().to_string();

    // A bad config value: the config cannot be read, so only the flags are known.
    std::fs::write(
        sb.config_file(),
        format!("{config}\n[agent]\nmax_turns = \"many\"\n"),
    )
    .unwrap();
    let out = sb.run(&["agent", "--json", "x"]);
    assert_exit(&out, 2);
    let evs = events(&out);
    assert_eq!(evs.len(), 2, "{}", stdout(&out));
    assert_eq!(evs[0]["type"], "session.started");
    assert_eq!(evs[0]["protocol_version"], 1);
    assert_eq!(evs[0]["session_id"], "");
    assert_eq!(evs[0]["role"], "implementer");
    assert_eq!(evs[0]["model"], "");
    assert_eq!(evs[0]["resumed"], false);
    assert_eq!(evs[1]["type"], "session.completed");
    assert_eq!(evs[1]["outcome"], "failed");
    assert_eq!(evs[1]["reason"], "not_started");
    assert_eq!(evs[1]["turns"], 0);
    assert_eq!(evs[1]["error"]["code"], "config");
    let message = evs[1]["error"]["message"].as_str().unwrap();
    assert!(message.contains("max_turns"), "{message}");
    assert_eq!(evs[1]["final_message"], message);
    // The text for people is still on stderr.
    assert!(stderr(&out).contains("max_turns"), "{}", stderr(&out));

    // A bad value found later: what was resolved by then is in session.started.
    std::fs::write(sb.config_file(), &config).unwrap();
    let out = sb.run(&[
        "agent",
        "--json",
        "--max-turns",
        "1",
        "--role",
        "scout",
        "--model",
        "mock/small",
        "x",
    ]);
    assert_exit(&out, 2);
    let evs = events(&out);
    assert_eq!(evs.len(), 2, "{}", stdout(&out));
    assert_eq!(
        (&evs[0]["role"], &evs[0]["model"], &evs[0]["cwd"]),
        (&"scout".into(), &"mock/small".into(), &cwd.as_str().into())
    );
    assert_eq!(evs[1]["reason"], "not_started");
    assert!(
        evs[1]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--max-turns must be at least 2"),
        "{}",
        stdout(&out)
    );
    // Nothing was sent and nothing was written.
    assert_eq!(server.requests().len(), 0);
    assert!(!sb.work().join(".baton").exists());
}
