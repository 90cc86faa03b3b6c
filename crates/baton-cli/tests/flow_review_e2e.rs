//! Flow's built-in reviewer on the `baton` backend, against the mock model: it reads the review
//! packet it is given (in its own unit worktree) and approves, and the unit lands. A change too
//! large for one packet blocks the unit with the reason, before any reviewer runs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use baton_testkit::fixture::{assert_exit, json_lines, Sandbox};
use baton_testkit::{MockServer, Turn};
use serde_json::json;

/// A repository whose implementer is a script committing `b.txt` (and `extra` more lines), and
/// whose reviewer is the built-in one on the mock model.
fn repo(server: &MockServer, body: &str) -> Sandbox {
    let sb = Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .env("BATON_MAX_SUBAGENTS", "1")
        .mock_provider(server, "openai", "[models]\nbalanced = \"mock/m\"\n");
    sb.init_repo("main");
    sb.write("README", "hello\n");
    sb.commit_all("initial");
    let script = sb.path("impl.sh");
    std::fs::write(
        &script,
        format!("{body}\ngit add -A && git commit -q -m 'unit b'\n"),
    )
    .unwrap();
    sb.write(
        ".baton/roles/implementer.md",
        &format!(
            "---\nname: implementer\ndescription: test\ntools: []\nbackend: command\nsandbox: danger-full-access\ncommand: [sh, {}]\n---\nImplement.\n",
            script.display()
        ),
    );
    let units = r#"{"units": [{"id": "b", "name": "Add b", "task": "Add b.txt", "validation": [{"command": "test", "args": ["-f", "b.txt"]}], "review": "b.txt says b"}]}"#;
    std::fs::write(sb.path("units.json"), units).unwrap();
    sb
}

#[test]
fn the_built_in_reviewer_reads_its_packet_in_the_unit_worktree_and_the_unit_lands() {
    let server = MockServer::builder()
        .turn(Turn::tool_call(
            "call_r",
            "read",
            json!({"path": ".baton/state/review/b-0.patch"}),
        ))
        .turn(Turn::text("PASS"))
        .start_blocking();
    let sb = repo(&server, "echo b > b.txt");
    let units = sb.path("units.json").display().to_string();
    let out = sb.run(&["flow", "start", &units, "--json"]);
    assert_exit(&out, 0);
    let report = json_lines(&out)
        .into_iter()
        .rev()
        .find(|v| v["type"] == "flow.report")
        .unwrap();
    assert_eq!(report["flow"]["phase"], "completed", "{report}");
    assert_eq!(sb.subjects("main")[0], "unit b");
    // The reviewer's read found the exact patch.
    let requests = server.model_requests();
    let read = &requests.last().unwrap().tool_results()[0].text;
    assert!(
        read.contains("diff --git a/b.txt b/b.txt") && read.contains("+b"),
        "{read}"
    );
    // The packet it was given is that file, in its worktree; the record keeps a copy.
    let task = requests[0].last_user_text().unwrap_or_default();
    assert!(task.contains("/.baton/state/review/b-0.patch"), "{task}");
    let flows = sb.work().join(".baton/state/flows");
    let record = std::fs::read_dir(&flows)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("patches/b-0.patch"))
        .find(|p| p.is_file())
        .expect("the record's copy");
    assert!(std::fs::read_to_string(record).unwrap().contains("+b"));
}

#[test]
fn a_change_too_large_for_one_packet_blocks_the_unit_with_the_reason() {
    let server = MockServer::builder()
        .turn(Turn::text("PASS"))
        .start_blocking();
    let sb = repo(
        &server,
        "echo b > b.txt\nyes 0123456789abcdef | head -c 600000 > big.txt",
    );
    let units = sb.path("units.json").display().to_string();
    let out = sb.run(&["flow", "start", &units, "--json"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("review_packet_too_large") || text.contains("review packet too large"),
        "{text}"
    );
    assert!(
        text.contains("is too large for one review packet")
            && text.contains("at most 524288 bytes and 200 files"),
        "{text}"
    );
    assert!(server.model_requests().is_empty(), "no reviewer ran");
}

/// An interrupted Flow no longer blocks an agent session: a role with the Flow tools resumes it
/// with `delegate_flow_resume` (or gives it up with `delegate_flow_abandon`).
#[test]
fn an_agent_session_resumes_an_interrupted_flow() {
    let server = MockServer::builder()
        .turn(Turn::tool_call("call_f", "delegate_flow_resume", json!({})))
        .turn(Turn::text("resumed"))
        .start_blocking();
    let sb = Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .env("BATON_MAX_SUBAGENTS", "1")
        .mock_provider(&server, "openai", "");
    sb.init_repo("main");
    sb.write("README", "hello\n");
    let _roles = baton_testkit::fixture::FlowRoles::install(&sb);
    // The session's role lists delegate_flow only: resume and abandon come with it.
    sb.write(
        ".baton/roles/lead.md",
        "---\nname: lead\ndescription: drives Flows\ntools: [read, delegate_flow]\n---\nLead.\n",
    );
    sb.commit_all("initial");
    let units = sb.path("units.json");
    std::fs::write(&units, r#"{"units": [
  {"id": "a", "name": "Add a", "task": "Add a.txt", "validation": [{"command": "test", "args": ["-f", "a.txt"]}]},
  {"id": "b", "name": "Add b", "task": "Add b.txt", "validation": [{"command": "test", "args": ["-f", "b.txt"]}]}
]}"#).unwrap();
    let units = units.display().to_string();
    let out = sb.run_with(
        &["flow", "start", &units],
        &[("BATON_FLOW_CRASH_AT", "unit.merged@a")],
    );
    assert_eq!(out.status.code(), None, "killed");
    let out = sb.run(&[
        "agent",
        "--json",
        "--role",
        "lead",
        "--model",
        "mock/m",
        "finish the flow",
    ]);
    assert_exit(&out, 0);
    let offered = server.model_requests()[0]
        .offered_tools()
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>();
    assert!(
        offered.contains(&"delegate_flow_resume".to_string()),
        "{offered:?}"
    );
    assert!(
        offered.contains(&"delegate_flow_abandon".to_string()),
        "{offered:?}"
    );
    let result = &server.model_requests()[1].tool_results()[0].text;
    assert!(result.contains("completed"), "{result}");
    assert_eq!(sb.subjects("main"), ["unit b", "unit a", "initial"]);
}
