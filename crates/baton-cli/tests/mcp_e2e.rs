//! `baton mcp` through rmcp's own client over stdio, against the built binary in a sandbox of its
//! own: initialize, the tool list (annotations, schemas from the request structs), each read-only
//! tool, and bad arguments answered as tool errors that name the field.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use baton_testkit::fixture::{assert_exit, wait_until, Sandbox};
use common::command_role;
use common::mcp::{call, call_cancellable, progress_messages, text, Client, Recorder};
use pretty_assertions::assert_eq;
use rmcp::model::CallToolResult;
use serde_json::{json, Value};

fn sandbox() -> Sandbox {
    Sandbox::new().baton_exe(env!("CARGO_BIN_EXE_baton"))
}

/// A client connected to `baton mcp` started in the sandbox's working directory.
async fn connect(sb: &Sandbox) -> Client {
    common::mcp::connect(sb, &Recorder::default()).await
}

/// A successful result: its structured content, which the text repeats.
fn document(result: &CallToolResult) -> Value {
    assert_eq!(result.is_error, Some(false), "{result:?}");
    let doc = result.structured_content.clone().unwrap();
    let from_text: Value = serde_json::from_str(&text(result)).unwrap();
    assert_eq!(from_text, doc);
    doc
}

fn cli_json(sb: &Sandbox, args: &[&str]) -> Value {
    let out = sb.run(args);
    assert_exit(&out, 0);
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test]
async fn initialize_names_the_server_and_lists_the_read_only_tools() {
    let sb = sandbox();
    let client = connect(&sb).await;
    let info = client.peer_info().unwrap();
    let server = info.server_info.as_ref().unwrap();
    assert_eq!(server.name, "baton");
    assert_eq!(server.version, env!("CARGO_PKG_VERSION"));
    assert!(info
        .instructions
        .as_deref()
        .unwrap()
        .contains("workflow_status"));
    assert!(info.capabilities.tools.is_some());

    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "route",
            "models",
            "roles",
            "workflow_status",
            "delegate_task",
            "run_workflow",
            "workflow_resume",
            "flow_status",
            "flow_start",
            "flow_continue",
            "flow_resume",
            "flow_land",
            "flow_abandon",
            "task_status",
            "task_wait",
            "task_cancel",
            "worker_start",
            "worker_send",
            "worker_list",
            "worker_stop",
            "worker_retire"
        ]
    );
    // `baton mcp --help` names every tool the server lists ([14/18]: it named 5 of 15).
    let help = String::from_utf8_lossy(&sb.run(&["mcp", "--help"]).stdout).to_string();
    for name in &names {
        assert!(
            help.contains(name),
            "`baton mcp --help` lacks {name}:\n{help}"
        );
    }
    for t in tools[..4].iter().chain(&tools[7..8]) {
        let a = t.annotations.as_ref().unwrap();
        assert_eq!(
            (a.read_only_hint, a.destructive_hint, a.idempotent_hint),
            (Some(true), Some(false), Some(true)),
            "{}",
            t.name
        );
        assert!(t.description.as_deref().unwrap().len() > 80, "{}", t.name);
        assert_eq!(t.input_schema["type"], "object", "{}", t.name);
        assert_eq!(t.output_schema.as_ref().unwrap()["type"], "object");
    }
    let route = &tools[0].input_schema;
    assert_eq!(route["required"], json!(["request"]));
    let props: Vec<&String> = route["properties"].as_object().unwrap().keys().collect();
    assert_eq!(props, ["request", "workflow"]);
    assert_eq!(
        tools[3].input_schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["id"]
    );
    // delegate_task: the agent tool's schema (from its entry struct) with `background`, and it
    // is not read-only.
    let delegate = &tools[4];
    let agent_schema = baton_exec::tool::parameters_schema(true);
    assert_eq!(
        Value::Object((*delegate.input_schema).clone()),
        agent_schema
    );
    let props: Vec<&String> = delegate.input_schema["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(
        props,
        [
            "background",
            "chain",
            "model",
            "model_class",
            "name",
            "role",
            "task",
            "tasks",
            "thinking"
        ]
    );
    let a = delegate.annotations.as_ref().unwrap();
    assert_eq!(
        (a.read_only_hint, a.destructive_hint, a.idempotent_hint),
        (Some(false), Some(true), Some(false))
    );
    // The workflow runners change the project; flow_status only reads, the Flow drivers (and
    // flow_land) change the project, abandoning is destructive but idempotent; of the background-task tools status
    // and wait only read, cancel is destructive.
    let hints: Vec<_> = tools[5..]
        .iter()
        .map(|t| {
            let a = t.annotations.as_ref().unwrap();
            (a.read_only_hint, a.destructive_hint, a.idempotent_hint)
        })
        .collect();
    assert_eq!(
        hints,
        [
            (Some(false), Some(true), Some(false)),
            (Some(false), Some(true), Some(false)),
            (Some(true), Some(false), Some(true)),
            (Some(false), Some(true), Some(false)),
            (Some(false), Some(true), Some(false)),
            (Some(false), Some(true), Some(false)),
            (Some(false), Some(true), Some(false)),
            (Some(false), Some(true), Some(true)),
            (Some(true), Some(false), Some(true)),
            (Some(true), Some(false), Some(true)),
            (Some(false), Some(true), Some(true)),
            // The worker tools: start and send change things, list only reads, stop is
            // destructive and idempotent, retire destructive.
            (Some(false), Some(false), Some(false)),
            (Some(false), Some(false), Some(false)),
            (Some(true), Some(false), Some(true)),
            (Some(false), Some(true), Some(true)),
            (Some(false), Some(true), Some(false)),
        ]
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn route_answers_what_baton_route_json_prints() {
    let sb = sandbox();
    let client = connect(&sb).await;
    for (request, workflow) in [
        ("add a dark-mode toggle and fix the button alignment", None),
        ("why does the login test fail on CI", None),
        ("look at the cache layer", Some("triage")),
    ] {
        let mut args = json!({ "request": request });
        let mut cli = vec!["route", request, "--json"];
        if let Some(w) = workflow {
            args["workflow"] = json!(w);
            cli.extend(["--workflow", w]);
        }
        let doc = document(&call(&client, "route", args).await);
        assert_eq!(doc, cli_json(&sb, &cli), "{request}");
    }
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn bad_arguments_are_tool_errors_naming_the_field() {
    let sb = sandbox();
    let client = connect(&sb).await;
    for (tool, args, field) in [
        ("route", json!({"request": 42}), "`request`"),
        ("route", json!({}), "`request`"),
        (
            "route",
            json!({"request": "fix it", "workflow": "SHIP"}),
            "`workflow`",
        ),
        ("route", json!({"request": "  "}), "`request`"),
        ("route", json!({"request": "x", "colour": "red"}), "colour"),
        ("workflow_status", json!({"id": ["a"]}), "`id`"),
        ("workflow_status", json!({"id": "nope"}), "`id`"),
        ("models", json!({"verbose": true}), "verbose"),
        ("no_such_tool", json!({}), "no_such_tool"),
    ] {
        let result = call(&client, tool, args.clone()).await;
        assert_eq!(result.is_error, Some(true), "{tool} {args}");
        assert!(
            text(&result).contains(field),
            "{tool} {args}: {}",
            text(&result)
        );
    }
    // The server is still there.
    let doc = document(&call(&client, "route", json!({"request": "fix the test"})).await);
    assert_eq!(doc["workflow"], "DEBUG");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn models_roles_and_workflow_status_answer_the_cli_documents() {
    let sb = sandbox();
    let client = connect(&sb).await;
    let models = document(&call(&client, "models", json!({})).await);
    assert_eq!(models, cli_json(&sb, &["models", "--json"]));
    let roles = document(&call(&client, "roles", json!({})).await);
    assert_eq!(roles, cli_json(&sb, &["roles", "--json"]));
    assert!(!roles["roles"].as_array().unwrap().is_empty());
    let status = document(&call(&client, "workflow_status", json!({})).await);
    assert_eq!(status, json!({"workflows": []}));
    assert_eq!(status, cli_json(&sb, &["status", "--json"]));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn delegate_task_runs_through_the_task_code_path() {
    let sb = sandbox();
    command_role(&sb, "echoer", "echo ran > effect.txt; cat");
    command_role(&sb, "failer", "echo broken >&2; exit 4");
    let client = connect(&sb).await;

    let args = json!({"role": "echoer", "name": "echo", "task": "hello from mcp"});
    let result = call(&client, "delegate_task", args).await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    let report = result.structured_content.clone().unwrap();
    assert_eq!(report["mode"], "single");
    assert_eq!(report["entries"][0]["status"], "done");
    assert_eq!(report["entries"][0]["role"], "echoer");
    assert!(report["entries"][0]["output"]
        .as_str()
        .unwrap()
        .contains("hello from mcp"));
    assert!(
        text(&result).contains("hello from mcp"),
        "{}",
        text(&result)
    );
    assert_eq!(
        std::fs::read_to_string(sb.work().join("effect.txt")).unwrap(),
        "ran\n"
    );

    let result = call(
        &client,
        "delegate_task",
        json!({"role": "failer", "name": "fail", "task": "t"}),
    )
    .await;
    assert_eq!(result.is_error, Some(true), "{result:?}");
    assert_eq!(
        result.structured_content.as_ref().unwrap()["entries"][0]["status"],
        "failed"
    );
    // [24/24] Each foreground delegation is recorded as a task, as a background one is: `baton
    // task status` shows both, done and failed, with their roles.
    let out = sb.run(&["task", "status", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tasks: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let phases: Vec<(String, bool)> = tasks
        .iter()
        .map(|t| {
            (
                t["phase"].as_str().unwrap_or("?").to_string(),
                t.to_string().contains("\"echoer\""),
            )
        })
        .collect();
    assert_eq!(
        phases,
        [("done".to_string(), true), ("failed".to_string(), false)],
        "{tasks:#?}"
    );

    // Parallel and chain: the same shapes as the agent tool.
    let result = call(
        &client,
        "delegate_task",
        json!({"tasks": [
            {"role": "echoer", "name": "a", "task": "alpha"},
            {"role": "echoer", "name": "b", "task": "beta"}
        ]}),
    )
    .await;
    let report = result.structured_content.clone().unwrap();
    assert_eq!(report["mode"], "parallel");
    let outputs: Vec<&str> = report["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["output"].as_str().unwrap().trim())
        .collect();
    assert_eq!(outputs, ["alpha", "beta"]);
    let result = call(
        &client,
        "delegate_task",
        json!({"chain": [
            {"role": "echoer", "name": "a", "task": "alpha"},
            {"role": "echoer", "name": "b", "task": "got {previous}!"}
        ]}),
    )
    .await;
    let report = result.structured_content.clone().unwrap();
    assert_eq!(report["mode"], "chain");
    assert_eq!(
        report["entries"][1]["output"].as_str().unwrap().trim(),
        "got alpha!"
    );

    for (args, field) in [
        (json!({"role": "ghost", "name": "g", "task": "t"}), "`role`"),
        (json!({"role": "echoer", "name": "n"}), "`task`"),
        (
            json!({"role": "echoer", "name": "n", "task": "t", "background": "yes"}),
            "background",
        ),
        (json!({"tasks": []}), "`tasks`"),
        (
            json!({"chain": [{"role": "echoer", "name": "n", "task": "t", "x": 1}]}),
            "`chain[0].x`",
        ),
        (
            json!({"role": "echoer", "name": "n", "task": "t", "thinking": "lots"}),
            "`thinking`",
        ),
    ] {
        let result = call(&client, "delegate_task", args.clone()).await;
        assert_eq!(result.is_error, Some(true), "{args}");
        assert!(text(&result).contains(field), "{args}: {}", text(&result));
    }
    client.cancel().await.unwrap();
}

// Multi-threaded: `wait_until` blocks its thread while the client's service runs on another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_delegate_task_stops_its_child() {
    let sb = sandbox();
    command_role(&sb, "sleeper", "echo $$ > child.pid; exec sleep 60");
    let client = connect(&sb).await;
    let handle = call_cancellable(
        &client,
        "delegate_task",
        json!({"role": "sleeper", "name": "sleep", "task": "t"}),
    )
    .await;
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
    handle.cancel(Some("test".into())).await.unwrap();
    // Every interrupt kills at once: nothing of the call is alive a second later.
    assert!(
        wait_until(Duration::from_secs(1), || !alive()),
        "the child {pid} was alive 1 s after the cancelled call"
    );
    // The server goes on serving.
    let doc = document(&call(&client, "route", json!({"request": "fix the test"})).await);
    assert_eq!(doc["workflow"], "DEBUG");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn delegate_task_sends_each_entry_start_and_end_as_progress() {
    let sb = sandbox();
    command_role(&sb, "echoer", "cat");
    let recorder = Recorder::default();
    let client = common::mcp::connect(&sb, &recorder).await;
    let args = json!({"tasks": [
        {"role": "echoer", "name": "one", "task": "first"},
        {"role": "echoer", "name": "two", "task": "second"},
    ]});
    let result = call(&client, "delegate_task", args).await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    let messages = progress_messages(&recorder, 4).await;
    for line in [
        "[one] queued (echoer)",
        "[two] queued (echoer)",
        "[one] done",
        "[two] done",
    ] {
        assert!(messages.iter().any(|m| m == line), "{line}: {messages:?}");
    }
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn results_are_bounded_by_the_output_cap() {
    let sb = sandbox();
    sb.write(
        ".baton/config.toml",
        "[executor]\noutput_cap_bytes = 2048\n",
    );
    let client = connect(&sb).await;
    let result = call(&client, "roles", json!({})).await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    let doc = result.structured_content.clone().unwrap();
    // The document keeps its shape, loses its last roles and says how many.
    let kept = doc["roles"].as_array().unwrap().len();
    let all = cli_json(&sb, &["roles", "--json"])["roles"]
        .as_array()
        .unwrap()
        .len();
    assert!(kept < all, "{kept} of {all}");
    assert_eq!(
        doc["truncated"],
        json!([{"path": "/roles", "omitted_items": all - kept}])
    );
    assert!(text(&result).len() <= 2048, "{}", text(&result).len());
    assert_eq!(serde_json::from_str::<Value>(&text(&result)).unwrap(), doc);
    client.cancel().await.unwrap();
}

/// Raw JSON-RPC lines that are not valid requests: each gets an error (for a bad tool name or
/// argument, a tool error), none ends the session, and a valid request after them is answered.
#[test]
fn malformed_requests_get_errors_and_the_server_keeps_serving() {
    use std::io::{BufRead, BufReader, Write};
    let sb = sandbox();
    let mut child = sb
        .baton(&["mcp"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut stdin = child.stdin.take().unwrap();
    let lines = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}).to_string(),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        "{not json".to_string(),
        "[1, 2]".to_string(),
        json!({"jsonrpc": "2.0", "id": 2, "method": "no/such/method"}).to_string(),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {}}).to_string(),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "nope", "arguments": {}}}).to_string(),
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "route", "arguments": {"request": 7}}}).to_string(),
        json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "route", "arguments": {"request": "fix the failing test"}}}).to_string(),
    ];
    for l in &lines {
        writeln!(stdin, "{l}").unwrap();
    }
    stdin.flush().unwrap();
    let mut by_id = std::collections::BTreeMap::new();
    let mut without_id = Vec::new();
    while by_id.len() < 6 || without_id.is_empty() {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("no more answers; got {by_id:?} and {without_id:?}"));
        let v: Value = serde_json::from_str(&line).unwrap();
        match v["id"].as_i64() {
            Some(id) => {
                by_id.insert(id, v);
            }
            None => without_id.push(v),
        }
    }
    drop(stdin);
    child.wait().unwrap();
    // JSON that is not a request: an invalid-request error without an id. (A line that is not
    // JSON at all is dropped by the SDK without an answer; the session goes on.)
    assert_eq!(without_id[0]["error"]["code"], -32600, "{without_id:?}");
    // An unknown method and a call without a tool name: JSON-RPC errors.
    assert!(by_id[&2]["error"]["code"].is_i64(), "{:?}", by_id[&2]);
    assert!(by_id[&3]["error"]["code"].is_i64(), "{:?}", by_id[&3]);
    // An unknown tool and a bad argument: tool errors naming them.
    assert_eq!(by_id[&4]["result"]["isError"], true);
    assert!(by_id[&4]["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("no tool `nope`"));
    assert_eq!(by_id[&5]["result"]["isError"], true);
    assert!(
        by_id[&5]["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("request"),
        "{:?}",
        by_id[&5]
    );
    // The session went on.
    assert_eq!(by_id[&6]["result"]["isError"], false);
    assert_eq!(
        by_id[&6]["result"]["structuredContent"]["workflow"],
        "DEBUG"
    );
}

#[tokio::test]
async fn a_worker_is_started_prompted_listed_read_and_retired_over_mcp() {
    use baton_testkit::{MockServer, Turn};
    let server = MockServer::builder()
        .turn(Turn::text("first, from the worker"))
        .turn(Turn::text("second, with the first in mind"))
        .start()
        .await;
    let sb = sandbox().mock_provider(&server, "openai", "");
    sb.write(
        ".baton/roles/helper.md",
        "---\nname: helper\ndescription: a worker\ntools: []\n---\nHelp.\n",
    );
    let client = connect(&sb).await;
    let started = document(
        &call(
            &client,
            "worker_start",
            json!({"name": "m1", "role": "helper", "model": "mock/m"}),
        )
        .await,
    );
    assert_eq!(started["name"], "m1");
    assert_eq!(started["resumed"], false);
    let first = document(
        &call(
            &client,
            "worker_send",
            json!({"name": "m1", "prompt": "one"}),
        )
        .await,
    );
    assert_eq!(first["outcome"], "answered");
    assert_eq!(first["answer"], "first, from the worker");
    let second = document(
        &call(
            &client,
            "worker_send",
            json!({"name": "m1", "prompt": "two"}),
        )
        .await,
    );
    assert_eq!(second["answer"], "second, with the first in mind");
    let asked = server.model_requests();
    assert!(asked[1].body.to_string().contains("first, from the worker"));
    // The same list the CLI prints.
    let listed = document(&call(&client, "worker_list", json!({})).await);
    assert_eq!(listed["workers"][0]["name"], "m1");
    assert_eq!(listed["workers"][0]["turns"], 2);
    assert_eq!(
        listed["workers"],
        cli_json(&sb, &["worker", "list", "--json"])
    );
    // Its log as a resource.
    let log = client
        .read_resource(rmcp::model::ReadResourceRequestParams::new(
            "baton://workers/m1/log",
        ))
        .await
        .unwrap();
    let rmcp::model::ResourceContents::TextResourceContents { text: log, .. } = &log.contents[0]
    else {
        panic!("{log:?}")
    };
    assert_eq!(log.matches(" answered ").count(), 2, "{log}");
    // Bad input is a tool error naming it.
    let unknown = call(
        &client,
        "worker_send",
        json!({"name": "nobody", "prompt": "hi"}),
    )
    .await;
    assert_eq!(unknown.is_error, Some(true));
    assert!(
        text(&unknown).contains("worker `nobody` not found"),
        "{}",
        text(&unknown)
    );
    let stopped = document(&call(&client, "worker_stop", json!({"name": "m1"})).await);
    assert_eq!(stopped["state"], "stopped");
    let retired = document(&call(&client, "worker_retire", json!({"name": "m1"})).await);
    assert_eq!(retired["state"], "retired");
    client.cancel().await.unwrap();
}

// Multi-threaded: `wait_until` blocks its thread while the client's service runs on another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_worker_send_leaves_its_prompt_to_be_answered_in_its_turn() {
    use baton_testkit::{MockServer, Turn};
    let server = MockServer::builder().start().await;
    let sb = sandbox().mock_provider(&server, "openai", "");
    sb.write(
        ".baton/roles/helper.md",
        "---\nname: helper\ndescription: a worker\ntools: [bash]\n---\nHelp.\n",
    );
    // The first prompt's turn runs until the test lets it go.
    server.push(Turn::tool_call(
        "b1",
        "bash",
        json!({"command": "touch started; until [ -e go ]; do sleep 0.05; done"}),
    ));
    server.push(Turn::text("the long one, done"));
    server.push(Turn::text("the next one"));
    let client = connect(&sb).await;
    document(
        &call(
            &client,
            "worker_start",
            json!({"name": "w", "role": "helper", "model": "mock/m"}),
        )
        .await,
    );
    let handle = call_cancellable(
        &client,
        "worker_send",
        json!({"name": "w", "prompt": "a long job"}),
    )
    .await;
    assert!(wait_until(Duration::from_secs(20), || sb
        .work()
        .join("started")
        .exists()));
    handle.cancel(Some("test".into())).await.unwrap();
    // The server goes on serving, and the prompt is the worker's, in flight.
    let listed = document(&call(&client, "worker_list", json!({})).await);
    let in_flight = listed["workers"][0]["in_flight"]
        .as_str()
        .unwrap()
        .to_string();
    std::fs::write(sb.work().join("go"), "").unwrap();
    // Answered in its turn, in the log, though nobody waits for it.
    let log = sb.work().join(".baton/state/workers/w.events.jsonl");
    assert!(wait_until(Duration::from_secs(20), || {
        std::fs::read_to_string(&log).unwrap().lines().any(|l| {
            let e: Value = serde_json::from_str(l).unwrap();
            e["type"] == "prompt.answered" && e["id"] == in_flight.as_str()
        })
    }));
    let next = document(
        &call(
            &client,
            "worker_send",
            json!({"name": "w", "prompt": "and now?"}),
        )
        .await,
    );
    assert_eq!(next["answer"], "the next one");
    document(&call(&client, "worker_stop", json!({"name": "w"})).await);
    client.cancel().await.unwrap();
}

/// Every `format` in a schema, anywhere in it.
fn formats(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(o) => {
            if let Some(f) = o.get("format").and_then(Value::as_str) {
                out.push(f.to_string());
            }
            o.values().for_each(|x| formats(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| formats(x, out)),
        _ => {}
    }
}

/// The size of a tool list as a client's model reads it: the tokens of its JSON (`o200k_base`).
fn tokens_of(tools: &[rmcp::model::Tool]) -> usize {
    let bpe = tiktoken_rs::o200k_base().unwrap();
    bpe.encode_ordinary(&serde_json::to_string(tools).unwrap())
        .len()
}

/// [22/24] `--tools core` offers the everyday tools only (and says so when another is called),
/// a bad set is refused before serving, and every schema uses only JSON Schema's own formats.
#[tokio::test]
async fn tools_core_offers_the_everyday_tools_and_schemas_use_standard_formats() {
    use rmcp::ServiceExt as _;
    let sb = sandbox();
    let client = connect(&sb).await;
    let every = client.list_all_tools().await.unwrap();
    let mut seen = Vec::new();
    for t in &every {
        formats(&Value::Object((*t.input_schema).clone()), &mut seen);
        if let Some(o) = &t.output_schema {
            formats(&Value::Object((**o).clone()), &mut seen);
        }
    }
    assert_eq!(
        seen,
        Vec::<String>::new(),
        "formats JSON Schema does not define"
    );
    client.cancel().await.unwrap();

    let cmd = tokio::process::Command::from(sb.baton(&["mcp", "--tools", "core"]));
    let core = Recorder::default()
        .serve(rmcp::transport::TokioChildProcess::new(cmd).unwrap())
        .await
        .unwrap();
    let tools = core.list_all_tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "delegate_task",
            "flow_continue",
            "flow_start",
            "flow_status",
            "run_workflow",
            "task_status",
            "workflow_resume",
            "workflow_status"
        ]
    );
    let (all_tokens, core_tokens) = (tokens_of(&every), tokens_of(&tools));
    eprintln!(
        "tools/list: {} tools ≈ {all_tokens} tokens; --tools core: {} tools ≈ {core_tokens} tokens",
        every.len(),
        tools.len()
    );
    // [24/24]: the set a plugin offers by default fits a host's budget.
    assert!(
        core_tokens < 1500,
        "--tools core costs {core_tokens} tokens"
    );
    for t in &tools {
        assert!(
            t.output_schema.is_none(),
            "{}: a compact list has no output schema",
            t.name
        );
        assert!(
            !t.description.as_deref().unwrap_or("").contains('\n'),
            "{}",
            t.name
        );
    }
    let refused = call(&core, "worker_list", json!({})).await;
    assert_eq!(refused.is_error, Some(true));
    assert!(
        text(&refused).contains("no tool `worker_list` on this server"),
        "{}",
        text(&refused)
    );
    let status = call(&core, "workflow_status", json!({})).await;
    assert_eq!(status.is_error, Some(false), "{status:?}");
    core.cancel().await.unwrap();

    let out = sb.run(&["mcp", "--tools", "core,nope"]);
    assert_exit(&out, 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--tools: no tool `nope`") && err.contains("worker_send"),
        "{err}"
    );
}
