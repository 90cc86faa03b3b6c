//! `baton mcp` driven by real MCP clients, with the built binary as the server:
//!
//! - Codex (`codex exec`, `bench/node_modules/.bin/codex` or `BATON_TEST_CODEX`) with baton in
//!   its `config.toml` as `[mcp_servers.baton]`: the mock model calls `delegate_task` for a
//!   `command` role, whose file appears on disk, and the tool's answer reaches the model.
//! - Claude Code (`claude -p --mcp-config`, `bench/node_modules/.bin/claude` or
//!   `BATON_TEST_CLAUDE`): the mock model calls `mcp__baton__flow_start` with one unit whose
//!   implementer and reviewer are `command` roles; the unit is merged into `main` and the Flow's
//!   report reaches the model.
//! - The MCP Inspector's CLI (`bench/pi-current/node_modules/.bin/mcp-inspector` or
//!   `BATON_TEST_INSPECTOR`, run on the Node 22 installed beside it): `tools/list`, `route`
//!   against `baton route --json`, and a bad argument answered as an `isError` result.
//!
//! The model is baton-testkit's mock server; no real model is called. A missing program prints a
//! note and the test passes, except in CI (`CI=true`), where it fails. Nothing waits on time.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use baton_testkit::fixture::{assert_exit, find_program, skip_live, Sandbox};
use baton_testkit::{MockServer, RecordedRequest, Role as Speaker, Turn};
use common::{command_role, result_for};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

const BATON: &str = env!("CARGO_BIN_EXE_baton");

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The text of a file a client's tool call should have produced; panics showing the client's
/// output when it is missing.
#[track_caller]
fn produced(path: &Path, o: &Output) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}\nstdout:\n{}\nstderr:\n{}",
            path.display(),
            stdout(o),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

/// The sandbox's own environment (HOME, XDG folders, git identity) as `(name, value)` strings,
/// for a client to pass on to the `baton mcp` it starts.
fn server_env(sb: &Sandbox) -> Vec<(String, String)> {
    sb.isolated_env()
        .into_iter()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect()
}

/// Whether the last turn a request sends is a tool result.
fn answers_a_tool(req: &RecordedRequest) -> bool {
    req.messages()
        .last()
        .is_some_and(|m| m.role == Speaker::Tool)
}

// ---------------------------------------------------------------------------------------------
// Codex

/// Codex offers an MCP server's tools to the model as one namespace tool, `mcp__<server>`, whose
/// `tools` are the server's tools under their own names; the model calls one with a function call
/// naming the tool and the namespace.
const CODEX_NAMESPACE: &str = "mcp__baton";

/// The names of the tools in Codex's `mcp__baton` namespace, from a recorded request.
fn codex_baton_tools(req: &RecordedRequest) -> Vec<String> {
    req.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["type"] == "namespace" && t["name"] == CODEX_NAMESPACE)
        .flat_map(|t| t["tools"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect()
}

/// A CODEX_HOME whose `config.toml` names the mock as the model provider and `baton mcp` (the
/// built binary, working in the sandbox's project, with the sandbox's environment) as the MCP
/// server `baton`.
///
/// - The model is `mock-model`, a name Codex's model catalog does not know. For a model it knows
///   (e.g. `gpt-5.5`) Codex offers only a `tool_search` tool and lists the MCP tools behind it,
///   which the mock cannot drive; for an unknown one it offers the `mcp__baton` namespace itself.
/// - `default_tools_approval_mode = "approve"`: with `approval_policy = "never"` alone Codex
///   refuses `delegate_task` (annotated destructive) with "MCP tool call requires approval, but
///   approval policy is never".
fn codex_home(sb: &Sandbox, server: &MockServer) -> PathBuf {
    let home = sb.home().join(".codex");
    std::fs::create_dir_all(&home).unwrap();
    let env: Vec<String> = server_env(sb)
        .into_iter()
        .map(|(k, v)| format!("{k} = {}", json!(v)))
        .collect();
    let config = format!(
        "approval_policy = \"never\"\ncheck_for_update_on_startup = false\n\
         model_provider = \"mock\"\nmodel = \"mock-model\"\n\
         [features]\nplugins = false\n[analytics]\nenabled = false\n\
         [model_providers.mock]\nname = \"mock\"\nbase_url = \"{}/v1\"\n\
         wire_api = \"responses\"\nenv_key = \"MOCK_API_KEY\"\n\
         [mcp_servers.baton]\ncommand = {}\nargs = [\"mcp\", \"--cwd\", {}]\n\
         default_tools_approval_mode = \"approve\"\nenv = {{ {} }}\n",
        server.url(),
        json!(BATON),
        json!(sb.work().display().to_string()),
        env.join(", ")
    );
    std::fs::write(home.join("config.toml"), config).unwrap();
    home
}

#[test]
fn codex_delegates_a_task_to_a_command_role_through_baton_mcp() {
    let Some(codex) = find_program("BATON_TEST_CODEX", "bench/node_modules/.bin/codex") else {
        return skip_live("codex", "BATON_TEST_CODEX", "run npm ci --prefix bench");
    };
    let sb = Sandbox::new().baton_exe(BATON);
    command_role(
        &sb,
        "scribe",
        "printf 'written by the scribe\\n' > note.txt; echo \"scribe got: $(cat)\"",
    );
    let args = json!({"role": "scribe", "name": "note", "task": "write the note"});
    let server = MockServer::builder()
        .when(
            |r| codex_baton_tools(r).iter().any(|t| t == "delegate_task") && !answers_a_tool(r),
            Turn::new().with_namespaced_tool_call(
                "call_delegate_1",
                CODEX_NAMESPACE,
                "delegate_task",
                args.clone(),
            ),
        )
        .when(answers_a_tool, Turn::text("The scribe wrote note.txt."))
        .when(|_| true, Turn::text("no rule for this request"))
        .start_blocking();
    let home = codex_home(&sb, &server);
    let tmp = sb.path("codex-tmp");
    std::fs::create_dir_all(&tmp).unwrap();

    let o = sb
        .command(&codex)
        .args([
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--ephemeral",
            "Ask baton's scribe role to write the note.",
        ])
        .env("CODEX_HOME", &home)
        .env("TMPDIR", &tmp)
        .env("MOCK_API_KEY", "mock")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_exit(&o, 0);

    // The role ran as a child of baton: its effect is on disk.
    assert_eq!(
        produced(&sb.work().join("note.txt"), &o),
        "written by the scribe\n"
    );
    // Codex offered baton's tools in its namespace and ran the call through baton mcp.
    let first = &server.model_requests()[0];
    let offered = codex_baton_tools(first);
    for tool in ["route", "delegate_task", "flow_start", "task_wait"] {
        assert!(offered.iter().any(|t| t == tool), "{tool}: {offered:?}");
    }
    let events: Vec<Value> = stdout(&o)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let call = events
        .iter()
        .find(|e| e["type"] == "item.completed" && e["item"]["type"] == "mcp_tool_call")
        .unwrap_or_else(|| panic!("no MCP tool call in {events:#?}"));
    assert_eq!(call["item"]["server"], "baton", "{call}");
    assert_eq!(call["item"]["tool"], "delegate_task", "{call}");
    assert_eq!(call["item"]["arguments"], args, "{call}");
    assert_eq!(call["item"]["status"], "completed", "{call}");
    let report = &call["item"]["result"]["structured_content"];
    assert_eq!(report["mode"], "single", "{report}");
    assert_eq!(report["entries"][0]["status"], "done", "{report}");
    assert_eq!(report["entries"][0]["role"], "scribe", "{report}");
    // The tool's answer went back to the model: the next request holds the report (Codex gives
    // the model the structured content, the `baton task --json` report, after a `Wall time`
    // line), with the child's output.
    let (_, text) = result_for(&server, "call_delegate_1");
    assert!(text.contains(r#""status":"done""#), "{text}");
    assert!(text.contains("scribe got: write the note"), "{text}");
    let last = events
        .iter()
        .rev()
        .find(|e| e["type"] == "item.completed" && e["item"]["type"] == "agent_message")
        .unwrap_or_else(|| panic!("no answer in {events:#?}"));
    assert_eq!(last["item"]["text"], "The scribe wrote note.txt.");
    server.assert_tool_results_answer_calls();
}

// ---------------------------------------------------------------------------------------------
// Claude Code

/// The tool name Claude Code gives baton's `flow_start`: `mcp__<server>__<tool>`.
const CLAUDE_FLOW_START: &str = "mcp__baton__flow_start";

#[test]
fn claude_code_starts_a_flow_that_merges_a_unit_through_baton_mcp() {
    let Some(claude) = find_program("BATON_TEST_CLAUDE", "bench/node_modules/.bin/claude") else {
        return skip_live("claude", "BATON_TEST_CLAUDE", "run npm ci --prefix bench");
    };
    // A repository on `main` whose implementer commits `<unit>.txt` and whose reviewer says PASS,
    // both `command` roles.
    let (sb, roles) = Sandbox::flow_repo(BATON);
    let units = json!({"units": [{"id": "a", "name": "Add a", "task": "Add a.txt",
        "validation": [{"command": "test", "args": ["-f", "a.txt"]}],
        "review": "a.txt holds the unit's id"}]});
    let server = MockServer::builder()
        .when(
            |r| r.offered_tools().contains(&CLAUDE_FLOW_START) && !answers_a_tool(r),
            Turn::tool_call(
                "toolu_flow_1",
                CLAUDE_FLOW_START,
                json!({ "units": units.clone() }),
            ),
        )
        .when(answers_a_tool, Turn::text("The Flow merged unit a."))
        .when(|_| true, Turn::text("ok"))
        .start_blocking();

    let env: serde_json::Map<String, Value> = server_env(&sb)
        .into_iter()
        .chain([("BATON_MAX_SUBAGENTS".to_string(), "1".to_string())])
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    let mcp_config = sb.path("mcp.json");
    std::fs::write(
        &mcp_config,
        json!({"mcpServers": {"baton": {
            "type": "stdio",
            "command": BATON,
            "args": ["mcp", "--cwd", sb.work().display().to_string()],
            "env": env,
        }}})
        .to_string(),
    )
    .unwrap();
    let config = sb.home().join(".claude");
    std::fs::create_dir_all(&config).unwrap();

    let o = sb
        .command(&claude)
        .args(["-p", "--output-format", "stream-json", "--verbose"])
        .args(["--model", "claude-sonnet-4-5"])
        .arg("--mcp-config")
        .arg(&mcp_config)
        .args(["--strict-mcp-config", "--allowedTools", CLAUDE_FLOW_START])
        .args(["--", "Start a baton Flow with one unit that adds a.txt."])
        .env("CLAUDE_CONFIG_DIR", &config)
        .env("ANTHROPIC_BASE_URL", server.url())
        .env("ANTHROPIC_API_KEY", "mock")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_TELEMETRY", "1")
        // Otherwise Claude Code offers MCP tools only through its `ToolSearch` tool.
        .env("ENABLE_TOOL_SEARCH", "false")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_exit(&o, 0);

    // The Flow ran to its end: the implementer committed, the reviewer passed it, and the commit
    // is on `main`.
    assert_eq!(produced(&sb.work().join("a.txt"), &o), "a\n");
    assert_eq!(sb.subjects("main"), ["unit a", "initial"]);
    assert_eq!(roles.calls(), ["impl a 0", "review a 0"]);
    // Claude Code sent the call to baton and gave the Flow's report back to the model.
    let (answered, text) = result_for(&server, "toolu_flow_1");
    assert!(
        answered.path.starts_with("/v1/messages"),
        "{}",
        answered.path
    );
    assert!(text.contains(r#""type":"flow.report""#), "{text}");
    assert!(text.contains(r#""phase":"completed""#), "{text}");
    assert!(text.contains(r#""status":"integrated""#), "{text}");
    let lines: Vec<Value> = stdout(&o)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let result = lines
        .iter()
        .rev()
        .find(|l| l["type"] == "result")
        .unwrap_or_else(|| panic!("no result in {lines:#?}"));
    assert_eq!(result["result"], "The Flow merged unit a.", "{result}");
    assert_eq!(result["is_error"], false, "{result}");
    server.assert_tool_results_answer_calls();
}

// ---------------------------------------------------------------------------------------------
// MCP Inspector

/// The Inspector CLI with `args` after `--cli`, started by the sandbox's environment with the
/// Node 22 of its folder first on `PATH`.
fn inspector(sb: &Sandbox, program: &Path, args: &[&str]) -> Output {
    let mut path = vec![program.parent().unwrap().to_path_buf()];
    path.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    sb.command(program)
        .arg("--cli")
        .args(args)
        .env("PATH", std::env::join_paths(path).unwrap())
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The names rmcp's own client lists, to compare the Inspector's list with.
fn tool_names_from_rmcp(sb: &Sandbox) -> Vec<String> {
    use rmcp::transport::TokioChildProcess;
    use rmcp::ServiceExt as _;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let cmd = tokio::process::Command::from(sb.baton(&["mcp"]));
        let client = ().serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
        let names = client
            .list_all_tools()
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name.to_string())
            .collect();
        client.cancel().await.unwrap();
        names
    })
}

#[test]
fn the_mcp_inspector_cli_lists_and_calls_baton_tools() {
    let Some(program) = find_program(
        "BATON_TEST_INSPECTOR",
        "bench/pi-current/node_modules/.bin/mcp-inspector",
    ) else {
        return skip_live(
            "MCP Inspector",
            "BATON_TEST_INSPECTOR",
            "run npm ci --prefix bench/pi-current",
        );
    };
    let sb = Sandbox::new().baton_exe(BATON);

    let o = inspector(&sb, &program, &[BATON, "mcp", "--method", "tools/list"]);
    assert_exit(&o, 0);
    let listed: Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<String> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, tool_names_from_rmcp(&sb));
    for tool in [
        "route",
        "models",
        "roles",
        "workflow_status",
        "delegate_task",
        "task_status",
        "task_wait",
        "task_cancel",
        "flow_status",
        "flow_start",
        "run_workflow",
        "workflow_resume",
    ] {
        assert!(names.iter().any(|n| n == tool), "{tool}: {names:?}");
    }
    for t in listed["tools"].as_array().unwrap() {
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
    }

    // `route` answers the document of `baton route --json`, as structured content and as text.
    let request = "fix the failing test";
    let o = inspector(
        &sb,
        &program,
        &[
            BATON,
            "mcp",
            "--method",
            "tools/call",
            "--tool-name",
            "route",
            "--tool-arg",
            &format!("request={request}"),
        ],
    );
    assert_exit(&o, 0);
    let result: Value = serde_json::from_slice(&o.stdout).unwrap();
    let cli = sb.run(&["route", "--json", request]);
    assert_exit(&cli, 0);
    let expected: Value = serde_json::from_slice(&cli.stdout).unwrap();
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["structuredContent"], expected);
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, expected);

    // A bad argument is a tool result with `isError`, naming the field; the Inspector exits
    // non-zero for it.
    let o = inspector(
        &sb,
        &program,
        &[
            BATON,
            "mcp",
            "--method",
            "tools/call",
            "--tool-name",
            "route",
            "--tool-arg",
            "request=42",
        ],
    );
    assert!(!o.status.success(), "{o:?}");
    let result: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(result["isError"], true, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("bad argument `request`"), "{text}");
    assert!(text.contains("expected a string"), "{text}");
}
