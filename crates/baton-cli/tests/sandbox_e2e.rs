//! The sandbox of `bash` through the built binary: a scripted model's commands cannot write
//! outside the workspace, write nothing in `read-only`, reach no network unless asked, and
//! run not at all where the kernel cannot confine them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{bash_result, one_command, refused_write};

use std::process::Output;

use baton_protocol::sandbox::SandboxMode;
use baton_protocol::{AgentEvent, ItemKind, SandboxInfo};
use baton_testkit::fixture::{assert_exit, Sandbox};
use baton_testkit::{MockServer, Turn};
use serde_json::json;

fn project(server: &MockServer, extra_config: &str) -> Sandbox {
    Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .mock_provider(server, "openai", extra_config)
}

fn events(out: &Output) -> Vec<AgentEvent> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn sandbox_of(events: &[AgentEvent]) -> SandboxInfo {
    match &events[0] {
        AgentEvent::SessionStarted {
            sandbox: Some(s), ..
        } => s.clone(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_scripted_command_cannot_write_outside_the_workspace() {
    let outside = tempfile::tempdir().unwrap();
    let escape = outside.path().join("escape.txt");
    let server = one_command(&format!(
        "echo in > inside.txt && echo t > \"$TMPDIR/t.txt\" && echo out > {}",
        escape.display()
    ));
    let p = project(&server, "");
    let out = p.run(&["agent", "--json", "--model", "mock/m", "write files"]);
    assert_exit(&out, 0);
    let evs = events(&out);
    let info = sandbox_of(&evs);
    assert_eq!(info.mode, SandboxMode::WorkspaceWrite);
    assert!(!info.network);
    let work = std::fs::canonicalize(p.work()).unwrap();
    assert_eq!(info.writable[0], work.display().to_string());
    assert!(
        info.writable.iter().any(|w| w.contains("baton-session-")),
        "{info:?}"
    );
    assert!(p.work().join("inside.txt").is_file());
    assert!(!escape.exists(), "the command wrote outside the workspace");
    let result = bash_result(&server);
    assert!(refused_write(&result), "{result}");
    // The session's temp dir is removed when the session ends.
    let tmp = info
        .writable
        .iter()
        .find(|w| w.contains("baton-session-"))
        .unwrap();
    assert!(!std::path::Path::new(tmp).exists());
    server.assert_tool_results_answer_calls();
}

#[test]
fn a_read_only_role_writes_nothing_in_the_workspace() {
    let server = one_command("echo x > made.txt; rm -f keep.txt; ls");
    let p = project(&server, "");
    std::fs::write(p.work().join("keep.txt"), "keep").unwrap();
    // The built-in scout has bash and the read-only sandbox.
    let out = p.run(&[
        "agent", "--json", "--role", "scout", "--model", "mock/m", "look",
    ]);
    assert_exit(&out, 0);
    assert_eq!(sandbox_of(&events(&out)).mode, SandboxMode::ReadOnly);
    assert!(!p.work().join("made.txt").exists());
    assert!(p.work().join("keep.txt").is_file());
    assert!(bash_result(&server).contains("keep.txt"));
}

#[test]
fn the_network_is_refused_unless_the_config_allows_it() {
    for (config, allowed) in [("", false), ("[sandbox]\nnetwork = true\n", true)] {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = one_command(&format!(
            "exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"
        ));
        let p = project(&server, config);
        let out = p.run(&["agent", "--json", "--model", "mock/m", "connect"]);
        assert_exit(&out, 0);
        assert_eq!(sandbox_of(&events(&out)).network, allowed);
        let result = bash_result(&server);
        assert_eq!(result.contains("connected"), allowed, "{config}: {result}");
    }
}

#[test]
fn without_landlock_commands_fail_closed_and_full_access_is_announced() {
    let server = one_command("echo x > made.txt");
    let p = project(&server, "").env("BATON_SANDBOX_ABI", "0");
    let out = p.run(&["agent", "--json", "--model", "mock/m", "write"]);
    assert_exit(&out, 0);
    let result = bash_result(&server);
    assert!(result.contains("needs Landlock"), "{result}");
    assert!(
        result.contains("sandbox.mode = \"danger-full-access\""),
        "{result}"
    );
    assert!(
        !p.work().join("made.txt").exists(),
        "the command ran unconfined"
    );
    let failed = events(&out).iter().any(|e| match e {
        AgentEvent::ItemCompleted { item } => {
            matches!(item.kind, ItemKind::ToolCall { .. })
                && item.status == baton_protocol::ItemStatus::Failed
        }
        _ => false,
    });
    assert!(failed);

    // The explicit opt-in runs it, and text mode says so in the session header.
    let server = one_command("echo x > made.txt");
    let p = project(&server, "").env("BATON_SANDBOX_ABI", "0");
    let out = p.run(&[
        "agent",
        "--sandbox",
        "danger-full-access",
        "--model",
        "mock/m",
        "write",
    ]);
    assert_exit(&out, 0);
    assert!(p.work().join("made.txt").is_file());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("sandbox danger-full-access: bash commands run unconfined"),
        "{stderr}"
    );
}

#[test]
fn writable_roots_are_listed_and_writable() {
    let cache = tempfile::tempdir().unwrap();
    let server = one_command(&format!("echo c > {}/c.txt", cache.path().display()));
    let p = project(
        &server,
        &format!(
            "[sandbox]\nwritable_roots = [\"{}\"]\n",
            cache.path().display()
        ),
    );
    let out = p.run(&["agent", "--model", "mock/m", "cache"]);
    assert_exit(&out, 0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("sandbox workspace-write: bash may write only"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&cache.path().display().to_string()),
        "{stderr}"
    );
    assert!(stderr.contains("network off"), "{stderr}");
    assert!(cache.path().join("c.txt").is_file());
}

#[test]
fn a_bad_sandbox_mode_names_the_key_and_the_values() {
    let server = one_command("true");
    let p = project(&server, "[sandbox]\nmode = \"full\"\n");
    let out = p.run(&["agent", "--model", "mock/m", "x"]);
    assert_exit(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("mode"), "{stderr}");
    assert!(stderr.contains("workspace-write"), "{stderr}");
    assert!(server.model_requests().is_empty());
    let out = p.run(&["agent", "--sandbox", "open", "--model", "mock/m", "x"]);
    assert_exit(&out, 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("read-only"));
}

/// An implementer delegated into a linked worktree commits through `bash` under the default
/// sandbox: the repository's common git dir (objects, refs, the worktree's index) is writable,
/// the main checkout is not.
#[test]
fn a_sandboxed_child_commits_in_its_worktree_but_cannot_touch_the_main_checkout() {
    let server = MockServer::builder()
        .turn(Turn::tool_call(
            "call_b",
            "bash",
            json!({"command": "echo x > f.txt && git add f.txt && git commit -q -m 'unit f' && echo committed; \
                   echo evil > \"$(git rev-parse --git-common-dir)/../README\" || echo refused"}),
        ))
        .turn(Turn::text("Committed."))
        .start_blocking();
    let p = Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .baton_config(&format!(
            "[providers.mock]\nkind = \"openai\"\nbase_url = \"{}/v1\"\n[models]\nbalanced = \"mock/m\"\n",
            server.url()
        ));
    p.init_repo("main");
    p.write("README", "hi\n");
    p.git(&["add", "README"]);
    p.git(&["commit", "-q", "-m", "init"]);
    let out = p.run(&[
        "task",
        "--json",
        "--role",
        "implementer",
        "--name",
        "unit",
        "commit f",
    ]);
    assert_exit(&out, 0);
    let report = baton_testkit::fixture::task_report(&out);
    let w = &report["entries"][0]["worktree"];
    assert_eq!(w["kept_branch"], true, "{report}");
    assert_eq!(w["commits"].as_array().unwrap().len(), 1, "{report}");
    let result = bash_result(&server);
    assert!(result.contains("committed"), "{result}");
    assert!(result.contains("refused"), "{result}");
    assert_eq!(
        std::fs::read_to_string(p.work().join("README")).unwrap(),
        "hi\n"
    );
    server.assert_tool_results_answer_calls();
}
