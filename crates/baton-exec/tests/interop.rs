#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Live interop: the real `baton`, `pi` and `codex` programs, launched by [`launch_for`] and run by
//! the executor against baton-testkit's mock server on 127.0.0.1.
//!
//! Programs are found through `BATON_TEST_BATON` / `BATON_TEST_PI` / `BATON_TEST_PI_CURRENT` /
//! `BATON_TEST_CODEX`, else at `target/debug/baton`, `bench/node_modules/.bin/{pi,codex}` (pi 0.73
//! on the machine's Node; `npm install --prefix bench`) and `bench/pi-current/node_modules/.bin/pi`
//! (pi 1.x with Node 22 beside it; `npm install --prefix bench/pi-current`).
//! Claude Code comes from `bench/node_modules/.bin/claude` (or `BATON_TEST_CLAUDE`).
//! A test whose program is missing prints a note and passes — except in CI (`CI` set), where it
//! fails.

use std::path::{Path, PathBuf};
use std::time::Duration;

use baton_exec::backend::{launch_for, TaskSpec};
use baton_exec::executor::{Executor, OutputBudget};
use baton_exec::{Activity, ChildResult, ChildStatus, Limits};
use baton_protocol::role::{BackendKind, RoleFrontmatter, RoleSource, RoleSpec};
use baton_testkit::fixture::{find_program as find, skip_live as skip};
use baton_testkit::{MockServer, ScriptRule, Turn, When};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const ANSWER: &str = "The notes say: hello from the fixture. DONE-OK";

async fn mock() -> MockServer {
    MockServer::builder()
        .rule(ScriptRule::new(
            When::any()
                .tool_offered("exec_command")
                .last_is_tool_result(false),
            Turn::reasoning("I should read the notes first.")
                .with_tool_call(
                    "call_read_1",
                    "exec_command",
                    json!({"cmd": "cat notes.txt"}),
                )
                .usage(1200, 1000, 40),
        ))
        .rule(ScriptRule::new(
            When::any().tool_offered("read").last_is_tool_result(false),
            Turn::reasoning("I should read the notes first.")
                .with_tool_call("call_read_1", "read", json!({"path": "notes.txt"}))
                .usage(1200, 1000, 40),
        ))
        .rule(ScriptRule::new(
            When::any().last_is_tool_result(true),
            Turn::text(ANSWER).usage(1300, 1200, 12),
        ))
        .start()
        .await
}

fn role(tools: &[&str]) -> RoleSpec {
    RoleSpec {
        meta: RoleFrontmatter {
            name: "scout".into(),
            description: "reads things".into(),
            tools: tools.iter().map(|t| t.to_string()).collect(),
            skills: vec![],
            mcp: vec![],
            extensions: vec![],
            isolation: None,
            model_class: None,
            backend: None,
            command: None,
            sandbox: None,
        },
        body: "You are a careful scout. Answer in one line.".into(),
        source: RoleSource::Builtin,
    }
}

fn spec(backend: BackendKind, program: PathBuf, work: &Path, route: &str) -> TaskSpec {
    TaskSpec {
        backend,
        role: role(&["read", "bash"]),
        task: "What do the notes say?".into(),
        cwd: work.to_path_buf(),
        route: Some(route.into()),
        thinking: None,
        program: Some(program),
        role_file: None,
        max_turns: None,
        extra_env: vec![],
        skills: Vec::new(),
    }
}

async fn run(spec: TaskSpec) -> (ChildResult, Vec<Activity>) {
    let launch = launch_for(&spec).unwrap();
    let exec = Executor::new(2);
    let mut seen = Vec::new();
    let limits = Limits {
        idle_timeout: Duration::from_secs(60),
        max_timeout: Duration::from_secs(120),
    };
    let r = exec
        .run(
            || async { Ok(launch) },
            limits,
            &OutputBudget::default(),
            &CancellationToken::new(),
            &mut |a| seen.push(a),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}: {:#?}", e.partial));
    (r, seen)
}

fn tool_starts(seen: &[Activity]) -> Vec<(String, Option<String>)> {
    seen.iter()
        .filter_map(|a| match a {
            Activity::ToolStart { tool, path, .. } => Some((tool.clone(), path.clone())),
            _ => None,
        })
        .collect()
}

fn work_dir() -> tempfile::TempDir {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("notes.txt"), "hello from the fixture\n").unwrap();
    work
}

/// The tool really ran: the second model request carries the file's text.
fn assert_tool_ran(server: &MockServer) {
    let requests = server.model_requests();
    assert_eq!(requests.len(), 2, "model requests: {}", requests.len());
    assert!(requests[1]
        .body
        .to_string()
        .contains("hello from the fixture"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_baton_agent() {
    let Some(baton) = find("BATON_TEST_BATON", "target/debug/baton") else {
        return skip(
            "baton",
            "BATON_TEST_BATON",
            "build it with cargo build -p baton-cli",
        );
    };
    let server = mock().await;
    let home = tempfile::tempdir().unwrap();
    let work = work_dir();
    let config = home.path().join("baton.toml");
    std::fs::write(
        &config,
        format!(
            "[providers.mock]\nkind = \"openai\"\nbase_url = \"{}/v1\"\n",
            server.url()
        ),
    )
    .unwrap();
    let mut s = spec(BackendKind::Baton, baton, work.path(), "mock/mock-model");
    s.max_turns = Some(5);
    s.extra_env = vec![
        ("HOME".into(), home.path().display().to_string()),
        ("BATON_CONFIG".into(), config.display().to_string()),
    ];
    let (r, seen) = run(s).await;
    assert_eq!(r.status, ChildStatus::Success, "{r:#?}");
    assert_eq!(r.output, ANSWER);
    assert_eq!((r.turns, r.tools_started), (2, 1));
    assert_eq!(r.usage.output_tokens, 52);
    assert_eq!(
        tool_starts(&seen),
        vec![("read".into(), Some("notes.txt".into()))]
    );
    assert_tool_ran(&server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_pi() {
    let Some(pi) = find("BATON_TEST_PI", "bench/node_modules/.bin/pi") else {
        return skip("pi", "BATON_TEST_PI", "run npm install --prefix bench");
    };
    pi_reads_and_answers(pi, vec![]).await;
}

/// The current pi (1.x, delta-only `message_update`s) from `bench/pi-current`, on the Node 22 that
/// the npm package `node` puts beside it: the program's directory goes first on the child's `PATH`,
/// so its `#!/usr/bin/env node` finds that Node rather than the machine's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_pi_current() {
    let Some(pi) = find(
        "BATON_TEST_PI_CURRENT",
        "bench/pi-current/node_modules/.bin/pi",
    ) else {
        return skip(
            "pi 1.x",
            "BATON_TEST_PI_CURRENT",
            "run npm install --prefix bench/pi-current",
        );
    };
    let mut path = vec![pi.parent().unwrap().to_path_buf()];
    path.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    let path = std::env::join_paths(path).unwrap().into_string().unwrap();
    let version = std::process::Command::new(&pi)
        .arg("--version")
        .env("PATH", &path)
        .output()
        .unwrap();
    let version = String::from_utf8_lossy(&version.stdout).trim().to_string();
    assert!(
        version.starts_with("1."),
        "{} --version: `{version}`, not 1.x",
        pi.display()
    );
    pi_reads_and_answers(pi, vec![("PATH".into(), path)]).await;
}

/// Pi, pointed at the mock by a `models.json` in its agent dir, reads the notes with its `read`
/// tool and gives the scripted answer.
async fn pi_reads_and_answers(pi: PathBuf, env: Vec<(String, String)>) {
    let server = mock().await;
    let home = tempfile::tempdir().unwrap();
    let work = work_dir();
    let models = json!({"providers": {"mock": {
        "baseUrl": format!("{}/v1", server.url()),
        "api": "openai-completions",
        "apiKey": "mock",
        "models": [{"id": "mock-model"}],
    }}});
    std::fs::write(home.path().join("models.json"), models.to_string()).unwrap();
    let mut s = spec(BackendKind::Pi, pi, work.path(), "mock/mock-model");
    s.extra_env = [
        ("HOME", home.path().display().to_string()),
        ("PI_CODING_AGENT_DIR", home.path().display().to_string()),
        ("PI_OFFLINE", "1".into()),
        ("PI_SKIP_VERSION_CHECK", "1".into()),
        ("PI_TELEMETRY", "0".into()),
    ]
    .map(|(k, v)| (k.to_string(), v))
    .to_vec();
    s.extra_env.extend(env);
    let (r, seen) = run(s).await;
    assert_eq!(r.status, ChildStatus::Success, "{r:#?}");
    assert_eq!(r.output, ANSWER);
    assert_eq!((r.turns, r.tools_started), (2, 1));
    assert_eq!(r.usage.output_tokens, 52);
    assert_eq!(
        tool_starts(&seen),
        vec![("read".into(), Some("notes.txt".into()))]
    );
    assert_tool_ran(&server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_codex() {
    let Some(codex) = find("BATON_TEST_CODEX", "bench/node_modules/.bin/codex") else {
        return skip(
            "codex",
            "BATON_TEST_CODEX",
            "run npm install --prefix bench",
        );
    };
    let server = mock().await;
    let home = tempfile::tempdir().unwrap();
    let work = work_dir();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "approval_policy = \"never\"\nsandbox_mode = \"danger-full-access\"\n\
             check_for_update_on_startup = false\n[features]\nplugins = false\n\
             [analytics]\nenabled = false\n[model_providers.mock]\nname = \"mock\"\n\
             base_url = \"{}/v1\"\nwire_api = \"responses\"\nenv_key = \"MOCK_API_KEY\"\n",
            server.url()
        ),
    )
    .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    // The route picks codex's provider `mock` and the model; the thinking level becomes its effort.
    let mut s = spec(
        BackendKind::Codex,
        codex,
        work.path(),
        "mock/gpt-5.5:medium",
    );
    s.extra_env = [
        ("HOME", home.path().display().to_string()),
        ("CODEX_HOME", home.path().display().to_string()),
        ("TMPDIR", tmp.path().display().to_string()),
        ("MOCK_API_KEY", "mock".into()),
    ]
    .map(|(k, v)| (k.to_string(), v))
    .to_vec();
    let (r, seen) = run(s).await;
    assert_eq!(r.status, ChildStatus::Success, "{r:#?}");
    assert_eq!(r.output, ANSWER);
    assert_eq!(r.tools_started, 1);
    assert_eq!(r.usage.output_tokens, 52);
    assert_eq!(tool_starts(&seen), vec![("shell".into(), None)]);
    assert_tool_ran(&server);
    let first = &server.model_requests()[0].body;
    assert_eq!(first["model"], "gpt-5.5");
    assert_eq!(first["reasoning"]["effort"], "medium");
    // The role's instructions went in ahead of the task.
    assert!(first.to_string().contains("You are a careful scout."));
}

/// Claude Code, pointed at the mock by `ANTHROPIC_BASE_URL`, with its own `HOME` and config dir and
/// its non-essential traffic off: it reads the notes with its `Read` tool (which wants an absolute
/// path) and gives the scripted answer, parsed from the real program's `stream-json` output.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_claude() {
    let Some(claude) = find("BATON_TEST_CLAUDE", "bench/node_modules/.bin/claude") else {
        return skip(
            "claude",
            "BATON_TEST_CLAUDE",
            "run npm install --prefix bench",
        );
    };
    let work = work_dir();
    let notes = work.path().canonicalize().unwrap().join("notes.txt");
    let server = MockServer::builder()
        .rule(ScriptRule::new(
            When::any().tool_offered("Read").last_is_tool_result(false),
            Turn::reasoning("I should read the notes first.")
                .with_tool_call(
                    "toolu_read_1",
                    "Read",
                    json!({"file_path": notes.display().to_string()}),
                )
                .usage(1200, 1000, 40),
        ))
        .rule(ScriptRule::new(
            When::any().last_is_tool_result(true),
            Turn::text(ANSWER).usage(1300, 1200, 12),
        ))
        .start()
        .await;
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join(".claude");
    std::fs::create_dir_all(&config).unwrap();
    let mut s = spec(
        BackendKind::Claude,
        claude,
        work.path(),
        "anthropic/claude-sonnet-4-5",
    );
    s.extra_env = [
        ("HOME", home.path().display().to_string()),
        ("CLAUDE_CONFIG_DIR", config.display().to_string()),
        ("ANTHROPIC_BASE_URL", server.url()),
        ("ANTHROPIC_API_KEY", "mock".into()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
        ("DISABLE_AUTOUPDATER", "1".into()),
        ("DISABLE_TELEMETRY", "1".into()),
    ]
    .map(|(k, v)| (k.to_string(), v))
    .to_vec();
    let (r, seen) = run(s).await;
    assert_eq!(r.status, ChildStatus::Success, "{r:#?}");
    assert_eq!(r.output, ANSWER);
    assert_eq!(r.tools_started, 1);
    assert_eq!(
        tool_starts(&seen),
        vec![("Read".into(), Some(notes.display().to_string()))]
    );
    // The tool really ran: the request after the tool call carries the file's text, and it went
    // to the Messages endpoint the way Claude Code calls it.
    let requests = server.model_requests();
    let answered = requests
        .iter()
        .find(|r| r.body.to_string().contains("hello from the fixture"))
        .unwrap_or_else(|| panic!("no request carried the tool result: {requests:#?}"));
    assert!(
        answered.path.starts_with("/v1/messages"),
        "{}",
        answered.path
    );
    assert_eq!(answered.model(), Some("claude-sonnet-4-5"));
    assert!(answered
        .body
        .to_string()
        .contains("You are a careful scout."));
}
