//! MCP servers as a session's tools, through the built `baton`: `baton mcp` itself configured as a
//! stdio server of a session (the model calls `mcp__baton__route`), a server that cannot start
//! (fails the session before its first turn with its stderr, or is skipped when optional), a
//! child that gets only its role's servers, a server killed with baton, and a real third-party
//! server from npm over stdio and streamable HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use baton_testkit::fixture::{assert_exit, find_program, in_ci, json_lines, skip_live, Sandbox};
use baton_testkit::{MockServer, Turn};
use serde_json::json;

const BATON: &str = env!("CARGO_BIN_EXE_baton");

/// How many MCP tools (`mcp__…`) a request offered.
fn mcp_tools(req: &baton_testkit::RecordedRequest) -> usize {
    req.offered_tools()
        .iter()
        .filter(|t| t.starts_with("mcp__"))
        .count()
}

fn project(server: &MockServer, extra: &str) -> Sandbox {
    Sandbox::new().baton_exe(BATON).mock_provider(
        server,
        "openai",
        &format!(
            "[models]\ndefault_class = \"balanced\"\nbalanced = \"mock/m\"\n[mcp_servers.baton]\ncommand = \"{BATON}\"\nargs = [\"mcp\"]\n{extra}"
        ),
    )
}

#[test]
fn a_session_calls_a_tool_of_a_configured_server() {
    let server = MockServer::builder()
        .turn(Turn::tool_call(
            "c1",
            "mcp__baton__route",
            json!({"request": "fix the failing login test"}),
        ))
        .turn(Turn::text("It routes to DEBUG."))
        .start_blocking();
    let p = project(&server, "[agent]\nmcp_servers = [\"baton\"]\n");
    let out = p.run(&["agent", "--json", "where does this go?"]);
    assert_exit(&out, 0);
    let reqs = server.model_requests();
    // The server's tools are offered with their schemas, named mcp__SERVER__TOOL.
    let tools = reqs[0].offered_tools();
    for t in [
        "mcp__baton__route",
        "mcp__baton__models",
        "mcp__baton__delegate_task",
    ] {
        assert!(tools.contains(&t), "{tools:?}");
    }
    let body = reqs[0].body.to_string();
    assert!(body.contains("[MCP server baton]"), "{body}");
    // The call reached baton's MCP server, which routed the request.
    let result = reqs[1].result_of("c1");
    assert!(result.contains("DEBUG"), "{result}");
    let events = json_lines(&out);
    let done = events
        .iter()
        .find(|e| e["type"] == "item.completed" && e["item"]["tool"] == "mcp__baton__route")
        .unwrap();
    assert_eq!(done["item"]["status"], "completed", "{done}");
}

#[test]
fn a_server_that_cannot_start_fails_the_session_before_its_first_turn() {
    let server = MockServer::builder()
        .turn(Turn::text("never asked"))
        .start_blocking();
    let p = project(
        &server,
        "[mcp_servers.broken]\ncommand = \"sh\"\nargs = [\"-c\", \"echo missing config file >&2; exit 3\"]\n[agent]\nmcp_servers = [\"broken\"]\n",
    );
    let out = p.run(&["agent", "--json", "hello"]);
    assert_ne!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("MCP server `broken`") && stderr.contains("missing config file"),
        "{stderr}"
    );
    assert!(server.model_requests().is_empty());
    // No transcript was written.
    let sessions = p.work().join(".baton/state/sessions");
    let n = std::fs::read_dir(&sessions).map_or(0, |d| d.count());
    assert_eq!(n, 0);

    // Optional: a warning, and the session runs without it.
    let p = project(
        &server,
        "[mcp_servers.broken]\ncommand = \"sh\"\nargs = [\"-c\", \"exit 3\"]\noptional = true\n[agent]\nmcp_servers = [\"broken\"]\n",
    );
    let out = p.run(&["agent", "--json", "hello"]);
    assert_exit(&out, 0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning: optional MCP server `broken` skipped"),
        "{stderr}"
    );
}

#[test]
fn a_bad_server_table_is_refused_naming_the_key() {
    let server = MockServer::builder().start_blocking();
    let p = project(
        &server,
        "[mcp_servers.both]\ncommand = \"x\"\nurl = \"http://127.0.0.1:1/mcp\"\n",
    );
    let out = p.run(&["agent", "hello"]);
    assert_exit(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("mcp_servers.both") && stderr.contains("not both"),
        "{stderr}"
    );
    let p = project(&server, "[agent]\nmcp_servers = [\"ghost\"]\n");
    let out = p.run(&["agent", "hello"]);
    assert_exit(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("[mcp_servers.ghost]"), "{stderr}");
}

#[test]
fn a_child_gets_only_its_role_s_servers() {
    let server = MockServer::builder()
        .turn(Turn::text("plain"))
        .turn(Turn::text("with baton"))
        .start_blocking();
    let p = project(&server, "[agent]\nmcp_servers = [\"baton\"]\n");
    p.write(
        ".baton/roles/router.md",
        "---\nname: router\ndescription: routes\ntools: [read]\nmcp: [baton]\n---\nRoute requests.\n",
    );
    // A child of the default role: agent.mcp_servers is for main sessions only.
    let out = p.run_with(&["agent", "--json", "x"], &[("BATON_CHILD", "1")]);
    assert_exit(&out, 0);
    // A child whose role names the server gets it.
    let out = p.run_with(
        &["agent", "--json", "--role", "router", "y"],
        &[("BATON_CHILD", "1")],
    );
    assert_exit(&out, 0);
    let reqs = server.model_requests();
    assert_eq!(mcp_tools(&reqs[0]), 0, "{:?}", reqs[0].offered_tools());
    assert_eq!(mcp_tools(&reqs[1]), 21, "{:?}", reqs[1].offered_tools());
}

/// The pids of the processes whose command line contains `needle`.
fn pids_with(needle: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            if String::from_utf8_lossy(&cmd).contains(needle) {
                out.push(pid);
            }
        }
    }
    out
}

#[test]
fn a_stdio_server_dies_with_a_killed_session() {
    // The server is a shell that leaves a marked process behind it (one that a closed stdin does
    // not end), then serves as baton's MCP server: only the process guard can clean that up.
    let server = MockServer::builder()
        .turn(Turn::text("first"))
        .start_blocking();
    let marker = format!("mcp-orphan-probe-{}", std::process::id());
    let p = project(
        &server,
        &format!(
            "[mcp_servers.probe]\ncommand = \"sh\"\nargs = [\"-c\", \"sh -c 'sleep 1000; :' {marker} & exec {BATON} mcp\", \"{marker}\"]\n[agent]\nmcp_servers = [\"probe\"]\n"
        ),
    );
    // `baton chat` keeps the session (and its server) alive while its stdin stays open.
    let mut child = p
        .baton(&["chat", "--json"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let up = baton_testkit::fixture::wait_until(Duration::from_secs(20), || {
        pids_with(&format!("sleep 1000; :\0{marker}")).len() == 1
    });
    assert!(up, "the server never started");
    child.kill().unwrap();
    child.wait().unwrap();
    let gone = baton_testkit::fixture::wait_until(Duration::from_secs(20), || {
        pids_with(&marker).is_empty()
    });
    assert!(gone, "the server outlived baton: {:?}", pids_with(&marker));
}

/// `@modelcontextprotocol/server-everything` from npm (bench/pi-current), with the Node it needs.
fn everything() -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    let node = find_program(
        "BATON_TEST_NODE22",
        "bench/pi-current/node_modules/.bin/node",
    )?;
    let root = baton_testkit::fixture::workspace_root();
    let script = root.join(
        "bench/pi-current/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    );
    script.is_file().then_some((node, script))
}

#[test]
fn a_third_party_server_from_npm_over_stdio() {
    let Some((node, script)) = everything() else {
        return skip_live(
            "server-everything",
            "BATON_TEST_NODE22",
            "run npm ci --prefix bench/pi-current",
        );
    };
    let server = MockServer::builder()
        .turn(Turn::tool_call(
            "c1",
            "mcp__everything__echo",
            json!({"message": "hello from baton"}),
        ))
        .turn(Turn::tool_call(
            "c2",
            "mcp__everything__get-sum",
            json!({"a": 2, "b": 40}),
        ))
        .turn(Turn::tool_call("c3", "mcp__everything__get-env", json!({})))
        .turn(Turn::text("done"))
        .start_blocking();
    let p = project(
        &server,
        &format!(
            "[mcp_servers.everything]\ncommand = \"{}\"\nargs = [\"{}\", \"stdio\"]\nstartup_timeout = \"60s\"\nenv = {{ EVERYTHING_MODE = \"probe\" }}\n[agent]\nmcp_servers = [\"everything\"]\n",
            node.display(),
            script.display()
        ),
    );
    let out = p.run(&["agent", "--json", "use the tools"]);
    assert_exit(&out, 0);
    let reqs = server.model_requests();
    let echo = reqs[1].result_of("c1");
    assert!(echo.contains("hello from baton"), "{echo}");
    let sum = reqs[2].result_of("c2");
    assert!(sum.contains("42"), "{sum}");
    // The server got its `env`, and not the provider's key.
    let env = reqs[3].result_of("c3");
    assert!(env.contains("EVERYTHING_MODE"), "{env}");
    assert!(!env.contains("MOCK_API_KEY"), "{env}");
}

#[test]
fn a_third_party_server_from_npm_over_streamable_http() {
    let Some((node, script)) = everything() else {
        return skip_live(
            "server-everything",
            "BATON_TEST_NODE22",
            "run npm ci --prefix bench/pi-current",
        );
    };
    // A free port: bind, read it, let go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut http = std::process::Command::new(&node)
        .arg(&script)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let up = baton_testkit::fixture::wait_until(Duration::from_secs(30), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    assert!(up || !in_ci(), "server-everything did not listen on {port}");
    let server = MockServer::builder()
        .turn(Turn::tool_call(
            "c1",
            "mcp__web__echo",
            json!({"message": "over http"}),
        ))
        .turn(Turn::text("done"))
        .start_blocking();
    let p = project(
        &server,
        &format!(
            "[mcp_servers.web]\nurl = \"http://127.0.0.1:{port}/mcp\"\n[agent]\nmcp_servers = [\"web\"]\n"
        ),
    );
    let out = p.run(&["agent", "--json", "echo over http"]);
    let _ = http.kill();
    let _ = http.wait();
    assert_exit(&out, 0);
    let echo = server.model_requests()[1].result_of("c1");
    assert!(echo.contains("over http"), "{echo}");
}

#[test]
fn doctor_starts_each_server_and_lists_its_tools() {
    let server = MockServer::builder().start_blocking();
    let p = project(
        &server,
        "[mcp_servers.broken]\ncommand = \"sh\"\nargs = [\"-c\", \"echo no such database >&2; exit 1\"]\n",
    );
    let out = p.run(&["doctor", "--json"]);
    // A server that is not optional and cannot start fails the check.
    assert_exit(&out, 1);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let servers = doc["mcp_servers"].as_array().unwrap();
    let baton = servers.iter().find(|s| s["name"] == "baton").unwrap();
    assert_eq!(baton["ok"], true, "{baton}");
    assert!(
        baton["tools"].as_array().unwrap().contains(&json!("route")),
        "{baton}"
    );
    let broken = servers.iter().find(|s| s["name"] == "broken").unwrap();
    assert_eq!(broken["ok"], false);
    assert!(
        broken["message"]
            .as_str()
            .unwrap()
            .contains("no such database"),
        "{broken}"
    );
    assert_eq!(doc["ok"], false);
    let out = p.run(&["doctor"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("✓ MCP server baton: 21 tool(s): "), "{text}");
    assert!(text.contains("✗ MCP server broken: "), "{text}");
}

#[test]
fn roles_check_refuses_a_role_naming_an_unconfigured_server() {
    let server = MockServer::builder().start_blocking();
    let p = project(&server, "");
    p.write(
        ".baton/roles/lost.md",
        "---\nname: lost\ndescription: x\ntools: [read]\nmcp: [baton, nowhere]\n---\nBody.\n",
    );
    let out = p.run(&["roles", "check"]);
    assert_exit(&out, 2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("role lost: MCP server `nowhere` is not configured")
            && !stderr.contains("`baton`"),
        "{stderr}"
    );
}

#[test]
fn a_routed_coordinator_reaches_a_server_s_tools_only_through_act_bounded() {
    let route = json!({"request": "fix the failing login test"});
    let server = MockServer::builder()
        // Called directly: refused, as every environment tool of the Coordinator is.
        .turn(Turn::tool_call("c1", "mcp__baton__route", route.clone()))
        .turn(Turn::tool_call(
            "c2",
            "act_bounded",
            json!({"operation": "open", "scope": "ask baton how it routes", "expected_result": "the workflow",
                   "authority": "the user asked", "stop_condition": "after one call",
                   "inseparable": "the answer is the judgment", "delegation_loss": "a contract would hold the answer"}),
        ))
        .turn(Turn::tool_call(
            "c3",
            "act_bounded",
            json!({"operation": "run", "tool": "mcp__baton__route", "arguments": route}),
        ))
        .turn(Turn::text("It goes to DEBUG."))
        .start_blocking();
    let p = project(
        &server,
        "[agent]\nmcp_servers = [\"baton\"]\n[routing]\ncoordinator = \"mock/coord\"\nexecutor = \"mock/exec\"\n",
    );
    let out = p.run(&[
        "agent",
        "--json",
        "--routing",
        "auto",
        "where does this go?",
    ]);
    assert_exit(&out, 0);
    let reqs = server.model_requests();
    // Not advertised to the Coordinator: it runs them through `act_bounded run`.
    assert_eq!(mcp_tools(&reqs[0]), 0, "{:?}", reqs[0].offered_tools());
    let refused = reqs[1].result_of("c1");
    assert!(refused.contains("coordinator-environment"), "{refused}");
    let ran = reqs[3].result_of("c3");
    assert!(ran.contains("DEBUG"), "{ran}");
}
