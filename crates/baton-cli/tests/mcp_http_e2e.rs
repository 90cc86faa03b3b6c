//! `baton mcp --http` through rmcp's own streamable-HTTP client, against the built binary in a
//! sandbox of its own: initialize, the tool list and a call over HTTP; the bearer-token rule off
//! loopback (the scheme in any case); the `Origin` and `Host` checks against DNS rebinding; and background delegations followed with `task_status`, `task_wait` and
//! `task_cancel`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Child;
use std::time::Duration;

use baton_testkit::fixture::{wait_until, Sandbox};
use common::command_role;
use pretty_assertions::assert_eq;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock};
use rmcp::service::RunningService;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt as _};
use serde_json::{json, Value};

fn sandbox() -> Sandbox {
    Sandbox::new().baton_exe(env!("CARGO_BIN_EXE_baton"))
}

/// `baton mcp --http …` running in the sandbox, killed when dropped.
struct Server {
    child: Child,
    url: String,
    /// The user's token the server uses when started without `--token` on loopback.
    token: Option<String>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `baton mcp ARGS` and reads the URL it prints on stderr (the rest of stderr is drained
/// in a thread so the server never blocks on it).
fn start(sb: &Sandbox, args: &[&str]) -> Server {
    let (child, url) = common::mcp_http(sb, args);
    let token = std::fs::read_to_string(sb.state_home().join("baton/mcp.token")).ok();
    Server { child, url, token }
}

async fn connect(url: &str, token: Option<&str>) -> RunningService<RoleClient, ()> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    if let Some(token) = token {
        config = config.auth_header(token);
    }
    let transport = StreamableHttpClientTransport::from_config(config);
    ().serve(transport).await.unwrap()
}

async fn call(client: &RunningService<RoleClient, ()>, name: &str, args: Value) -> CallToolResult {
    let params = CallToolRequestParams::new(name.to_string())
        .with_arguments(args.as_object().unwrap().clone());
    let result = client.call_tool(params).await.unwrap();
    common::mcp::check_output(client, name, &result).await;
    result
}

/// A successful result's structured content, which its only text block repeats.
fn document(result: &CallToolResult) -> Value {
    assert_eq!(result.is_error, Some(false), "{result:?}");
    let doc = result.structured_content.clone().unwrap();
    let [ContentBlock::Text(t)] = result.content.as_slice() else {
        panic!("expected one text block: {result:?}");
    };
    assert_eq!(serde_json::from_str::<Value>(&t.text).unwrap(), doc);
    doc
}

#[tokio::test]
async fn initialize_list_and_call_over_http() {
    let sb = sandbox();
    let server = start(&sb, &["--http", "127.0.0.1:0"]);
    assert!(
        server.url.starts_with("http://127.0.0.1:"),
        "{}",
        server.url
    );
    assert!(
        !server.url.starts_with("http://127.0.0.1:0/"),
        "{}",
        server.url
    );
    assert!(server.url.ends_with("/mcp"), "{}", server.url);
    let client = connect(&server.url, server.token.as_deref()).await;
    let info = client.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "baton");
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for name in [
        "route",
        "delegate_task",
        "task_status",
        "task_wait",
        "task_cancel",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    let doc = document(&call(&client, "route", json!({"request": "fix the failing test"})).await);
    assert_eq!(doc["workflow"], "DEBUG");
    // The same document as the command's.
    let out = sb.run(&["route", "fix the failing test", "--json"]);
    assert_eq!(doc, serde_json::from_slice::<Value>(&out.stdout).unwrap());
    // A body that is not JSON, and JSON that is not a request, are client errors; the server
    // and the client's session go on.
    let http = reqwest::Client::new();
    for body in ["{not json", "[1, 2]"] {
        let status = http
            .post(&server.url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap()
            .status();
        assert!(status.is_client_error(), "{body}: {status}");
    }
    let doc = document(&call(&client, "route", json!({"request": "review my change"})).await);
    assert_eq!(doc["workflow"], "REVIEW");
    client.cancel().await.unwrap();
}

#[test]
fn a_non_loopback_address_without_a_token_is_refused() {
    let sb = sandbox();
    let out = sb
        .baton(&["mcp", "--http", "0.0.0.0:0"])
        .env_remove("BATON_MCP_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--token"), "{stderr}");
    assert!(stderr.contains("BATON_MCP_TOKEN"), "{stderr}");
}

#[tokio::test]
async fn off_loopback_every_request_needs_the_bearer_token() {
    let sb = sandbox();
    let server = start(&sb, &["--http", "0.0.0.0:0", "--token", "T0k3n"]);
    let port = server
        .url
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches("/mcp");
    let url = format!("http://127.0.0.1:{port}/mcp");
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}});
    let http = reqwest::Client::new();
    let post = |auth: Option<&str>| {
        let mut req = http
            .post(&url)
            .header("accept", "application/json, text/event-stream")
            .json(&init);
        if let Some(auth) = auth {
            req = req.header("authorization", auth);
        }
        req.send()
    };
    assert_eq!(post(None).await.unwrap().status(), 401);
    assert_eq!(post(Some("Bearer wrong")).await.unwrap().status(), 401);
    assert_eq!(post(Some("Bearer T0k3n")).await.unwrap().status(), 200);
    // The scheme is case-insensitive; the token is not.
    for auth in ["bearer T0k3n", "BEARER T0k3n"] {
        assert_eq!(post(Some(auth)).await.unwrap().status(), 200, "{auth}");
    }
    assert_eq!(post(Some("bearer t0k3n")).await.unwrap().status(), 401);
    // The token does not stand in for the Origin check: a foreign page is refused with it.
    let foreign = http
        .post(&url)
        .header("accept", "application/json, text/event-stream")
        .header("authorization", "Bearer T0k3n")
        .header("origin", "http://evil.example")
        .json(&init)
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status(), 403);

    // rmcp's client with the token works end to end.
    let client = connect(&url, Some("T0k3n")).await;
    let doc = document(&call(&client, "route", json!({"request": "fix the failing test"})).await);
    assert_eq!(doc["workflow"], "DEBUG");
    client.cancel().await.unwrap();
}

/// Against DNS rebinding from a browser: a request with an `Origin` other than the server's own
/// loopback origin gets 403, as does one whose `Host` is not a loopback name or the bound
/// address; a request without `Origin` (clients that are not browsers) is served.
#[tokio::test]
async fn a_foreign_origin_or_host_is_refused_on_loopback() {
    let sb = sandbox();
    let server = start(&sb, &["--http", "127.0.0.1:0"]);
    let port = server
        .url
        .trim_end_matches("/mcp")
        .rsplit(':')
        .next()
        .unwrap()
        .to_string();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}});
    let http = reqwest::Client::new();
    let post = |headers: &[(&str, String)]| {
        let mut req = http
            .post(&server.url)
            .header("accept", "application/json, text/event-stream")
            .json(&init)
            .bearer_auth(server.token.as_deref().unwrap());
        for (name, value) in headers {
            req = req.header(*name, value);
        }
        req.send()
    };
    // No Origin: served.
    assert_eq!(post(&[]).await.unwrap().status(), 200);
    // The server's own origins: served.
    for own in [
        format!("http://127.0.0.1:{port}"),
        format!("http://localhost:{port}"),
        format!("http://[::1]:{port}"),
    ] {
        let status = post(&[("origin", own.clone())]).await.unwrap().status();
        assert_eq!(status, 200, "{own}");
    }
    // Any other origin, another port of the same host included, and a sandboxed page's `null`.
    for foreign in [
        "http://evil.example".to_string(),
        format!("http://evil.example:{port}"),
        format!("https://127.0.0.1:{port}"),
        "http://127.0.0.1:1".to_string(),
        "http://localhost".to_string(),
        "null".to_string(),
        "not an origin".to_string(),
    ] {
        let response = post(&[("origin", foreign.clone())]).await.unwrap();
        assert_eq!(response.status(), 403, "{foreign}");
    }
    // A `Host` that is not a loopback name or the bound address (a rebinding page's own name).
    for host in [format!("evil.example:{port}"), "attacker.test".to_string()] {
        let response = post(&[("host", host.clone())]).await.unwrap();
        assert_eq!(response.status(), 403, "{host}");
    }
    assert_eq!(
        post(&[("host", format!("localhost:{port}"))])
            .await
            .unwrap()
            .status(),
        200
    );
    // Every request is checked, not only the first of a session: a GET of the event stream and
    // a DELETE with a foreign origin are refused too.
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let response = http
            .request(method.clone(), &server.url)
            .header("accept", "text/event-stream")
            .header("origin", "http://evil.example")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 403, "{method}");
    }
    // rmcp's client sends no Origin and works.
    let client = connect(&server.url, server.token.as_deref()).await;
    let doc = document(&call(&client, "route", json!({"request": "fix the failing test"})).await);
    assert_eq!(doc["workflow"], "DEBUG");
    client.cancel().await.unwrap();
}

// Multi-threaded: `wait_until` blocks its thread while the client's service runs on another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_tasks_are_started_followed_and_cancelled() {
    let sb = sandbox();
    command_role(
        &sb,
        "waiter",
        "while [ ! -f release ]; do sleep 0.01; done; echo released > effect.txt; echo ok",
    );
    command_role(&sb, "sleeper", "echo $$ > child.pid; exec sleep 60");
    let server = start(&sb, &["--http", "127.0.0.1:0"]);
    let client = connect(&server.url, server.token.as_deref()).await;

    let started = document(
        &call(
            &client,
            "delegate_task",
            json!({"role": "waiter", "name": "wait", "task": "t", "background": true}),
        )
        .await,
    );
    assert_eq!(started["type"], "task.background");
    let id = started["id"].as_str().unwrap().to_string();

    // Running until the file exists; the same document as `baton task status ID --json`.
    let status = document(&call(&client, "task_status", json!({"id": id})).await);
    assert_eq!(status["id"], id.as_str());
    assert!(
        ["starting", "running"].contains(&status["phase"].as_str().unwrap()),
        "{status}"
    );
    let running = || {
        let out = sb.run(&["task", "status", &id, "--json"]);
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["phase"] == "running"
    };
    assert!(wait_until(Duration::from_secs(20), running));
    let status = document(&call(&client, "task_status", json!({"id": id})).await);
    assert_eq!(status["phase"], "running", "{status}");
    let cli: Value =
        serde_json::from_slice(&sb.run(&["task", "status", &id, "--json"]).stdout).unwrap();
    assert_eq!(status, cli);
    // A short timeout answers with the status while it runs.
    let early = document(
        &call(
            &client,
            "task_wait",
            json!({"id": id, "timeout_seconds": 0.05}),
        )
        .await,
    );
    assert_eq!(early["type"], "task.running", "{early}");
    assert!(!sb.work().join("effect.txt").exists());

    std::fs::write(sb.work().join("release"), "").unwrap();
    let waited = document(&call(&client, "task_wait", json!({"id": id})).await);
    assert_eq!(waited["type"], "report", "{waited}");
    assert_eq!(waited["id"], id.as_str());
    assert_eq!(waited["report"]["entries"][0]["status"], "done", "{waited}");
    assert_eq!(
        std::fs::read_to_string(sb.work().join("effect.txt")).unwrap(),
        "released\n"
    );
    let cli: Value =
        serde_json::from_slice(&sb.run(&["task", "wait", &id, "--json"]).stdout).unwrap();
    assert_eq!(waited, cli);
    let done = document(&call(&client, "task_status", json!({"id": id})).await);
    assert_eq!(done["phase"], "done");

    // Another one, cancelled: its child is gone and its report says it was stopped.
    let started = document(
        &call(
            &client,
            "delegate_task",
            json!({"role": "sleeper", "name": "sleep", "task": "t", "background": true}),
        )
        .await,
    );
    let id = started["id"].as_str().unwrap().to_string();
    let pid_file = sb.work().join("child.pid");
    let pid = || {
        std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|t| t.trim().parse::<i32>().ok())
    };
    assert!(wait_until(Duration::from_secs(20), || pid().is_some()));
    let pid = pid().unwrap();
    let alive = move || std::path::Path::new(&format!("/proc/{pid}")).exists();
    assert!(alive());
    let cancelled = document(&call(&client, "task_cancel", json!({"id": id})).await);
    assert_eq!(cancelled["action"], "signalled", "{cancelled}");
    assert_eq!(cancelled["id"], id.as_str());
    let waited = call(&client, "task_wait", json!({"id": id})).await;
    assert_eq!(waited.is_error, Some(true), "{waited:?}");
    let report = waited.structured_content.clone().unwrap();
    assert_eq!(
        report["report"]["entries"][0]["status"], "stopped",
        "{report}"
    );
    assert!(
        wait_until(Duration::from_secs(20), || !alive()),
        "the child {pid} outlived the cancelled task"
    );
    // Cancelling an ended task does nothing.
    let again = document(&call(&client, "task_cancel", json!({"id": id})).await);
    assert_eq!(again["action"], "none", "{again}");
    let cli: Value =
        serde_json::from_slice(&sb.run(&["task", "cancel", &id, "--json"]).stdout).unwrap();
    assert_eq!(again, cli);

    // Bad arguments are tool errors naming the field.
    for (tool, args, field) in [
        ("task_status", json!({}), "id"),
        (
            "task_wait",
            json!({"id": id, "timeout_seconds": -1}),
            "timeout_seconds",
        ),
        ("task_cancel", json!({"id": "tnope"}), "tnope"),
    ] {
        let result = call(&client, tool, args.clone()).await;
        assert_eq!(result.is_error, Some(true), "{tool} {args}");
        let [ContentBlock::Text(t)] = result.content.as_slice() else {
            panic!("{result:?}");
        };
        assert!(t.text.contains(field), "{tool} {args}: {}", t.text);
    }
    client.cancel().await.unwrap();
}
