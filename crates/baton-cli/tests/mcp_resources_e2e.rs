//! The resources of `baton mcp` through rmcp's own client, against the built binary: the
//! capability, the list and the templates, reading a workflow, a Flow and a background task's
//! log, refused URIs, and subscriptions whose updates arrive when the resource changes — by a
//! `baton` command in another process, or by a background task — and stop on unsubscribe (over
//! stdio and over HTTP).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::new_without_default,
    deprecated
)]

mod common;

use std::process::Child;
use std::time::Duration;

use baton_testkit::fixture::{wait_until, FlowRoles, Sandbox};
use common::command_role;
use common::workflow::*;
use pretty_assertions::assert_eq;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ErrorCode, ReadResourceRequestParams, ResourceContents,
    ResourceUpdatedNotificationParam, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt as _};
use serde_json::{json, Value};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

/// How long a notification may take to arrive: far more than the server's polling interval.
const DEADLINE: Duration = Duration::from_secs(30);

/// A client that passes the URI of every `notifications/resources/updated` into a channel.
#[derive(Clone)]
struct Updates {
    tx: UnboundedSender<String>,
}

impl ClientHandler for Updates {
    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.tx.send(params.uri);
    }
}

type Client = RunningService<RoleClient, Updates>;

async fn connect(sb: &Sandbox) -> (Client, UnboundedReceiver<String>) {
    let (tx, rx) = unbounded_channel();
    let cmd = tokio::process::Command::from(sb.baton(&["mcp"]));
    let client = Updates { tx }
        .serve(TokioChildProcess::new(cmd).unwrap())
        .await
        .unwrap();
    (client, rx)
}

/// Waits for the update of `uri`: the URIs of the updates that came before it.
async fn updated(rx: &mut UnboundedReceiver<String>, uri: &str) -> Vec<String> {
    let wait = async {
        let mut others = Vec::new();
        while let Some(got) = rx.recv().await {
            if got == uri {
                return others;
            }
            others.push(got);
        }
        panic!("the client closed before {uri} was updated");
    };
    tokio::time::timeout(DEADLINE, wait)
        .await
        .unwrap_or_else(|_| panic!("no notifications/resources/updated for {uri}"))
}

async fn call(client: &Client, name: &str, args: Value) -> CallToolResult {
    let params = CallToolRequestParams::new(name.to_string())
        .with_arguments(args.as_object().unwrap().clone());
    let result = client.call_tool(params).await.unwrap();
    common::mcp::check_output(client, name, &result).await;
    result
}

/// The one text content of a resource: its MIME type and text.
async fn read(client: &Client, uri: &str) -> (String, String) {
    let result = client
        .read_resource(ReadResourceRequestParams::new(uri))
        .await
        .unwrap();
    match result.contents.as_slice() {
        [ResourceContents::TextResourceContents {
            uri: got,
            mime_type,
            text,
            ..
        }] => {
            assert_eq!(got, uri);
            (mime_type.clone().unwrap(), text.clone())
        }
        other => panic!("expected one text content, got {other:?}"),
    }
}

async fn read_json(client: &Client, uri: &str) -> Value {
    let (mime, text) = read(client, uri).await;
    assert_eq!(mime, "application/json");
    serde_json::from_str(&text).unwrap()
}

/// The JSON-RPC error a request got.
fn rpc_error(result: Result<impl std::fmt::Debug, ServiceError>) -> rmcp::ErrorData {
    match result {
        Err(ServiceError::McpError(e)) => e,
        other => panic!("expected an MCP error, got {other:?}"),
    }
}

fn cli_json(sb: &Sandbox, args: &[&str]) -> Value {
    let out = sb.run(args);
    assert!(out.status.success(), "{}", err(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test]
async fn workflows_and_task_logs_are_listed_read_and_followed() {
    let wf = Wf::new();
    wf.happy()
        .answer_nth("code-reviewer", 1, REVIEW_CRITICAL_AND_HIGH);
    command_role(&wf.sb, "echoer", "echo from-the-child; cat");
    let (client, mut rx) = connect(&wf.sb).await;

    let info = client.peer_info().unwrap();
    let resources = info.capabilities.resources.as_ref().unwrap();
    assert_eq!(resources.subscribe, Some(true));

    let templates = client.list_all_resource_templates().await.unwrap();
    let forms: Vec<&str> = templates.iter().map(|t| t.uri_template.as_str()).collect();
    assert_eq!(
        forms,
        [
            "baton://workflows/{id}",
            "baton://flows/{id}",
            "baton://tasks/{id}/log",
            "baton://workers/{name}/log"
        ]
    );
    // Before any work: only the project's projection, with no document yet.
    let listed = client.list_all_resources().await.unwrap();
    let uris: Vec<&str> = listed.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, ["baton://project", "baton://dashboard"]);
    let (mime, text) = read(&client, "baton://project").await;
    assert_eq!((mime.as_str(), text.trim()), ("application/json", "[]"));

    // A workflow waiting at a checkpoint, and a background task that ran.
    let doc = call(
        &client,
        "run_workflow",
        json!({"request": "add a feature file", "workflow": "build"}),
    )
    .await
    .structured_content
    .unwrap();
    assert_eq!(doc["type"], "workflow.checkpoint", "{doc}");
    let id = doc["id"].as_str().unwrap().to_string();
    let task = call(
        &client,
        "delegate_task",
        json!({"role": "echoer", "name": "echo", "task": "hello", "background": true}),
    )
    .await
    .structured_content
    .unwrap();
    let task = task["id"].as_str().unwrap().to_string();
    let done = || cli_json(&wf.sb, &["task", "status", &task, "--json"])["phase"] == "done";
    assert!(wait_until(DEADLINE, done));

    let listed = client.list_all_resources().await.unwrap();
    let uris: Vec<&str> = listed.iter().map(|r| r.uri.as_str()).collect();
    let wf_uri = format!("baton://workflows/{id}");
    let task_uri = format!("baton://tasks/{task}/log");
    assert_eq!(
        uris,
        [
            "baton://project",
            "baton://dashboard",
            wf_uri.as_str(),
            task_uri.as_str()
        ]
    );
    let listed = &listed[2..];
    assert_eq!(listed[0].name, id);
    assert_eq!(listed[0].mime_type.as_deref(), Some("application/json"));
    assert!(
        listed[0]
            .description
            .as_deref()
            .unwrap()
            .contains("add a feature file"),
        "{:?}",
        listed[0]
    );
    assert_eq!(listed[1].mime_type.as_deref(), Some("text/plain"));
    assert!(listed[1]
        .description
        .as_deref()
        .unwrap()
        .starts_with("done"));

    // The projection: the workflow waits for the user at its checkpoint, the task is done.
    let (_, text) = read(&client, "baton://project").await;
    let docs: Vec<Value> = serde_json::from_str(&text).unwrap();
    let projected = |kind: &str, id: &str| {
        docs.iter()
            .find(|d| d["kind"] == kind && d["id"] == id)
            .unwrap_or_else(|| panic!("no {kind} {id} in {text}"))
            .clone()
    };
    assert_eq!(projected("workflow", &id)["state"], "needs", "{text}");
    assert_eq!(projected("task", &task)["state"], "done", "{text}");

    // The workflow: the summary `workflow_status` answers with, and the checkpoint's brief.
    let record = read_json(&client, &wf_uri).await;
    let status = call(&client, "workflow_status", json!({"id": id}))
        .await
        .structured_content
        .unwrap();
    assert_eq!(record["workflow"], status);
    assert_eq!(record["workflow"]["run_state"], "checkpoint");
    assert_eq!(record["brief"], doc["checkpoint"]["brief"]);

    // The task's log: the lines of `baton task logs`.
    let (mime, log) = read(&client, &task_uri).await;
    assert_eq!(mime, "text/plain");
    let cli = wf.run(&["task", "logs", &task]);
    assert!(cli.status.success(), "{}", err(&cli));
    assert_eq!(log, out(&cli));
    assert!(log.contains("completed: 1 of 1 entry done"), "{log}");

    // Malformed URIs are invalid params naming the URI and the forms; unknown ids not found.
    for bad in [
        "baton://tasks/x",
        "file:///etc/passwd",
        "baton://workflows/a/b",
    ] {
        let e = rpc_error(
            client
                .read_resource(ReadResourceRequestParams::new(bad))
                .await,
        );
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS, "{bad}: {e:?}");
        assert!(e.message.contains(bad), "{}", e.message);
        assert!(
            e.message.contains("baton://tasks/{id}/log"),
            "{}",
            e.message
        );
    }
    for missing in ["baton://workflows/wf-nope", "baton://tasks/tnope/log"] {
        let e = rpc_error(
            client
                .read_resource(ReadResourceRequestParams::new(missing))
                .await,
        );
        assert_eq!(e.code, ErrorCode::RESOURCE_NOT_FOUND, "{missing}: {e:?}");
        assert!(e.message.contains(missing), "{}", e.message);
        let e = rpc_error(client.subscribe(SubscribeRequestParams::new(missing)).await);
        assert_eq!(e.code, ErrorCode::RESOURCE_NOT_FOUND, "{missing}: {e:?}");
    }

    // Subscribed, the workflow's update arrives when `baton resume` in another process answers
    // the checkpoint.
    client
        .subscribe(SubscribeRequestParams::new(wf_uri.clone()))
        .await
        .unwrap();
    let out = wf.run(&["resume", &id, "--answer", "critical only"]);
    assert!(out.status.success(), "{}", err(&out));
    updated(&mut rx, &wf_uri).await;
    let record = read_json(&client, &wf_uri).await;
    assert_eq!(record["workflow"]["run_state"], "completed");
    assert!(
        record["brief"].as_str().unwrap().contains("proof: passed"),
        "{record}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_flow_is_listed_and_read_as_baton_flow_status_shows_it() {
    let sb = Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .env("BATON_MAX_SUBAGENTS", "1");
    sb.init_repo("main");
    sb.write("README", "hello\n");
    let _roles = FlowRoles::install(&sb);
    sb.commit_all("initial");
    let (client, _rx) = connect(&sb).await;
    let units = json!({"units": [{"id": "a", "name": "Add a", "task": "Add a.txt",
        "validation": [{"command": "test", "args": ["-f", "a.txt"]}]}]});
    let result = call(&client, "flow_start", json!({ "units": units })).await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    let id = result.structured_content.unwrap()["flow"]["id"]
        .as_str()
        .unwrap()
        .to_string();

    let listed = client.list_all_resources().await.unwrap();
    let uri = format!("baton://flows/{id}");
    let flow = listed.iter().find(|r| r.uri == uri).unwrap();
    assert_eq!(flow.name, id);
    assert!(
        flow.description
            .as_deref()
            .unwrap()
            .starts_with("completed"),
        "{flow:?}"
    );
    let doc = read_json(&client, &uri).await;
    let out = sb.run(&["flow", "status", &id, "--json"]);
    assert!(out.status.success(), "{}", err(&out));
    let cli: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc, cli);
    assert_eq!(doc["flow"]["phase"], "completed");
    let e = rpc_error(
        client
            .read_resource(ReadResourceRequestParams::new("baton://flows/nope"))
            .await,
    );
    assert_eq!(e.code, ErrorCode::RESOURCE_NOT_FOUND, "{e:?}");
    client.cancel().await.unwrap();
}

/// `baton mcp --http …` running in the sandbox, killed when dropped.
struct Server {
    child: Child,
    url: String,
    /// The user's token the server uses (`baton mcp --http` on loopback).
    token: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_http(sb: &Sandbox) -> Server {
    let (child, url) = common::mcp_http(sb, &["--http", "127.0.0.1:0"]);
    let token = std::fs::read_to_string(sb.state_home().join("baton/mcp.token")).unwrap();
    Server { child, url, token }
}

// Multi-threaded: `wait_until` blocks its thread while the client's service runs on another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_http_task_log_subscriptions_follow_their_tasks_until_unsubscribed() {
    let sb = Sandbox::new().baton_exe(env!("CARGO_BIN_EXE_baton"));
    for n in 1..=3 {
        command_role(
            &sb,
            &format!("waiter{n}"),
            &format!("while [ ! -f release-{n} ]; do sleep 0.01; done; echo released {n}"),
        );
    }
    // A small output cap, so that a whole log is longer than it.
    sb.write(".baton/config.toml", "[executor]\noutput_cap_bytes = 160\n");
    let server = start_http(&sb);
    let (tx, mut rx) = unbounded_channel();
    let config = StreamableHttpClientTransportConfig::with_uri(server.url.as_str())
        .auth_header(server.token.clone());
    let transport = StreamableHttpClientTransport::from_config(config);
    let client = Updates { tx }.serve(transport).await.unwrap();
    let caps = &client.peer_info().unwrap().capabilities;
    assert_eq!(caps.resources.as_ref().unwrap().subscribe, Some(true));

    let phase = |id: &str| cli_json(&sb, &["task", "status", id, "--json"])["phase"].clone();
    // Starts the task of `waiter{n}` in the background and waits until it runs: its log's URI.
    let start = |n: u32| {
        let client = &client;
        let phase = &phase;
        async move {
            let doc = call(
                client,
                "delegate_task",
                json!({"role": format!("waiter{n}"), "name": "wait", "task": "t", "background": true}),
            )
            .await
            .structured_content
            .unwrap();
            let id = doc["id"].as_str().unwrap().to_string();
            assert!(wait_until(DEADLINE, || phase(&id) == "running"));
            (id.clone(), format!("baton://tasks/{id}/log"))
        }
    };
    let release = |n: u32| std::fs::write(sb.work().join(format!("release-{n}")), "").unwrap();

    // Subscribed: the update arrives when the task ends, and the log then says so.
    let (first, first_uri) = start(1).await;
    client
        .subscribe(SubscribeRequestParams::new(first_uri.clone()))
        .await
        .unwrap();
    let (mime, before) = read(&client, &first_uri).await;
    assert_eq!(mime, "text/plain");
    assert!(!before.contains("completed"), "{before}");
    release(1);
    updated(&mut rx, &first_uri).await;
    assert!(wait_until(DEADLINE, || phase(&first) == "done"));
    let (_, after) = read(&client, &first_uri).await;
    assert!(after.contains("completed: 1 of 1 entry done"), "{after}");
    // Cut to the cap: the newest part of what `baton task logs` prints, after the marker that
    // counts the bytes left out.
    assert!(after.len() <= 160, "{after}");
    let full = out(&sb.run(&["task", "logs", &first]));
    let (marker, tail) = after.split_once('\n').unwrap();
    let omitted: usize = marker
        .strip_prefix("[… ")
        .and_then(|m| m.strip_suffix(" bytes omitted …]"))
        .unwrap_or_else(|| panic!("no marker: {after}"))
        .parse()
        .unwrap();
    assert!(full.ends_with(tail), "{full}\n---\n{after}");
    assert_eq!(omitted + tail.len(), full.len());

    // Two more, both subscribed, the first of them unsubscribed again: it ends first and brings
    // no update; the other's update arrives alone. (The unsubscribed task was created first, so
    // its URI sorts first: were it still watched, its update would come no later.)
    let (second, second_uri) = start(2).await;
    let (third, third_uri) = start(3).await;
    for uri in [&second_uri, &third_uri] {
        client
            .subscribe(SubscribeRequestParams::new(uri.clone()))
            .await
            .unwrap();
    }
    client
        .unsubscribe(UnsubscribeRequestParams::new(second_uri.clone()))
        .await
        .unwrap();
    while rx.try_recv().is_ok() {}
    release(2);
    assert!(wait_until(DEADLINE, || phase(&second) == "done"));
    release(3);
    let before = updated(&mut rx, &third_uri).await;
    assert!(
        !before.contains(&second_uri),
        "an update after unsubscribe: {before:?}"
    );
    assert!(wait_until(DEADLINE, || phase(&third) == "done"));
    while let Ok(uri) = rx.try_recv() {
        assert_ne!(uri, second_uri, "an update after unsubscribe");
    }
    client.cancel().await.unwrap();
}

/// [24/24] `baton://dashboard` gives the address the project's running `baton serve` printed
/// (with the user's token), and how to start one when none runs (also after it stopped); a
/// record naming a process that is not this baton's `baton serve` is an error, and no token is
/// handed to it.
#[tokio::test]
async fn the_dashboard_resource_gives_the_running_serve_s_address() {
    let sb = Sandbox::new().baton_exe(env!("CARGO_BIN_EXE_baton"));
    let (client, _rx) = connect(&sb).await;
    let idle = read_json(&client, "baton://dashboard").await;
    assert_eq!(idle["running"], false, "{idle}");
    assert!(
        idle["start"].as_str().unwrap().contains("baton serve"),
        "{idle}"
    );

    let (mut serve, printed) = common::serve_baton(&sb, &["--addr", "127.0.0.1:0"]);
    let record = baton_app::dashboard::path(&baton_state::StateDir::for_project(&sb.work()));
    assert!(wait_until(DEADLINE, || record.exists()));
    let running = read_json(&client, "baton://dashboard").await;
    assert_eq!(running["running"], true, "{running}");
    assert_eq!(running["url"], printed.as_str(), "{running}");

    serve.kill().unwrap();
    serve.wait().unwrap();
    let gone = read_json(&client, "baton://dashboard").await;
    assert_eq!(
        gone["running"], false,
        "a record whose process ended: {gone}"
    );

    // A record that names another program's process (alive) gets no token.
    let mut other = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let forged = baton_app::dashboard::Record {
        url: "http://127.0.0.1:9/".into(),
        process: baton_process::Identity::of(other.id()).unwrap(),
        own_token: true,
    };
    std::fs::write(&record, serde_json::to_vec(&forged).unwrap()).unwrap();
    let refused = client
        .read_resource(ReadResourceRequestParams::new("baton://dashboard"))
        .await;
    let e = rpc_error(refused);
    assert!(
        e.message.contains("not this baton's `baton serve`") && !e.message.contains("token="),
        "{e:?}"
    );
    other.kill().unwrap();
    let _ = other.wait();
}
