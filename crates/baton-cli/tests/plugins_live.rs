//! [24/24] The Claude Code plugin (`plugins/claude-code/baton`, listed by the repository's
//! `.claude-plugin/marketplace.json`): validated by Claude Code's own CLI (`claude plugin
//! validate --strict`), added as a marketplace and installed into a fresh Claude Code home,
//! whose `plugin details` lists its commands and MCP server; and every command allows only tools
//! the plugin's MCP server (`baton mcp --tools core`, started from the plugin's own arguments)
//! offers. Outside CI the test is skipped with a note when Claude Code is missing
//! (`npm ci --prefix bench`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Stdio;

use baton_testkit::fixture::{assert_exit, find_program, skip_live, workspace_root, Sandbox};
use common::mcp::Recorder;
use rmcp::ServiceExt as _;
use serde_json::Value;

const PLUGIN: &str = "plugins/claude-code/baton";

/// A host's CLI, from `var` or `bench/node_modules/.bin/NAME`; missing, the test is skipped
/// with a note (a failure with `CI=true`).
fn host_cli(name: &str, var: &str) -> Option<std::path::PathBuf> {
    let found = find_program(var, &format!("bench/node_modules/.bin/{name}"));
    if found.is_none() {
        skip_live(name, var, "run npm ci --prefix bench");
    }
    found
}

/// `baton install HOST --HOST CLI` run twice with `env`: each succeeds and says `says`.
fn install_twice(
    sb: &Sandbox,
    host: &str,
    cli: &std::path::Path,
    env: &dyn Fn(&mut std::process::Command),
    says: &str,
) {
    for _ in 0..2 {
        let mut c = sb.baton(&["install", host, &format!("--{host}")]);
        c.arg(cli);
        env(&mut c);
        let o = c.output().unwrap();
        assert_exit(&o, 0);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains(says), "{out}");
    }
}

/// `baton install HOST --scope project` exits 2 saying `says` (the host takes plugins per user).
fn refuses_project_scope(
    sb: &Sandbox,
    host: &str,
    cli: &std::path::Path,
    env: &dyn Fn(&mut std::process::Command),
    says: &str,
) {
    let mut c = sb.baton(&["install", host, "--scope", "project", &format!("--{host}")]);
    c.arg(cli);
    env(&mut c);
    let o = c.output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(says), "{err}");
}

/// The files under `written` are exactly the repository's `rel` folder's, each as it is.
fn assert_same_files(written: &std::path::Path, rel: &str) {
    let repo = workspace_root().join(rel);
    let files = files_under(&repo);
    assert_eq!(
        files_under(written),
        files,
        "every file of {rel} (install_cmd)"
    );
    for f in &files {
        assert_eq!(
            std::fs::read_to_string(written.join(f)).unwrap(),
            std::fs::read_to_string(repo.join(f)).unwrap(),
            "{f}"
        );
    }
}

fn claude() -> Option<std::path::PathBuf> {
    host_cli("claude", "BATON_TEST_CLAUDE")
}

/// The `allowed-tools` of each command file of the plugin and the `tools` of each agent, by
/// file name.
fn allowed_tools() -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for (folder, key) in [("commands", "allowed-tools:"), ("agents", "tools:")] {
        out.extend(tool_lines(folder, key));
    }
    out.sort();
    out
}

fn tool_lines(folder: &str, key: &str) -> Vec<(String, Vec<String>)> {
    let dir = workspace_root().join(PLUGIN).join(folder);
    let mut out = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .unwrap_or_else(|| panic!("{}: no {key}", path.display()));
        let tools = line.split(',').map(|t| t.trim().to_string()).collect();
        out.push((path.file_name().unwrap().to_string_lossy().into(), tools));
    }
    out.sort();
    out
}

#[test]
fn claude_code_validates_installs_and_lists_the_plugin() {
    let Some(claude) = claude() else { return };
    let root = workspace_root();
    for target in [root.join(PLUGIN), root.clone()] {
        let o = std::process::Command::new(&claude)
            .args(["plugin", "validate", "--strict"])
            .arg(&target)
            .env("DISABLE_AUTOUPDATER", "1")
            .env("DISABLE_TELEMETRY", "1")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_exit(&o, 0);
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("Validation passed"),
            "{}",
            String::from_utf8_lossy(&o.stdout)
        );
    }
    // Added as a marketplace and installed into a fresh home, offline.
    let sb = Sandbox::new();
    let run = |args: &[&str]| {
        let o = sb
            .command(&claude)
            .args(args)
            .env("HOME", sb.home())
            .env("CLAUDE_CONFIG_DIR", sb.home().join(".claude"))
            .env("DISABLE_AUTOUPDATER", "1")
            .env("DISABLE_TELEMETRY", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_exit(&o, 0);
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    run(&["plugin", "marketplace", "add", &root.display().to_string()]);
    run(&["plugin", "install", "baton@baton"]);
    let details = run(&["plugin", "details", "baton"]);
    eprintln!("{details}");
    assert!(
        details.contains("Skills (6)  answer, delegate, flow, run, status, workers"),
        "{details}"
    );
    assert!(details.contains("Hooks (1)  SessionStart"), "{details}");
    assert!(details.contains("MCP servers (1)  baton"), "{details}");
}

/// Every tool a command allows is one the plugin's MCP server offers, as the plugin starts it.
#[tokio::test]
async fn the_commands_allow_only_tools_the_plugin_s_server_offers() {
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(
            workspace_root()
                .join(PLUGIN)
                .join(".claude-plugin/plugin.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let server = &manifest["mcpServers"]["baton"];
    assert_eq!(server["command"], "baton");
    let args: Vec<String> = server["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    let sb = Sandbox::new().baton_exe(env!("CARGO_BIN_EXE_baton"));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let cmd = tokio::process::Command::from(sb.baton(&argv));
    let client = Recorder::default()
        .serve(rmcp::transport::TokioChildProcess::new(cmd).unwrap())
        .await
        .unwrap();
    let offered: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .iter()
        // Claude Code names a plugin's server's tools `mcp__plugin_<plugin>_<server>__<tool>`
        // (its requests show them so: `the_session_start_hook_tells_the_model_what_waits_for_the_user`).
        .map(|t| format!("mcp__plugin_baton_baton__{}", t.name))
        .collect();
    client.cancel().await.unwrap();
    let commands = allowed_tools();
    assert_eq!(commands.len(), 9, "6 commands and 3 agents: {commands:?}");
    for (file, tools) in &commands {
        for t in tools {
            // An MCP tool the server offers, or baton's own CLI and nothing else.
            assert!(
                offered.contains(t) || (t.starts_with("Bash(baton ") && !t.contains(['&', ';', '|'])),
                "{file} allows {t}, which is neither a tool the server offers ({offered:?}) nor a baton command"
            );
        }
    }
}

/// A workflow in the sandbox's project that failed and takes guidance; its id.
fn failed_workflow(sb: &Sandbox) -> String {
    let store =
        baton_workflow::store::WorkflowStore::new(baton_state::StateDir::for_project(&sb.work()));
    let mut wf = store
        .create(baton_workflow::route::WorkflowKind::Build, "add a flag")
        .unwrap();
    wf.append(
        baton_workflow::store::NewEvent::new(baton_workflow::store::EventKind::WorkflowFailed)
            .reason("the builder answered without a contract")
            .delta(serde_json::json!({"run_state": "failed"})),
    )
    .unwrap();
    wf.id().to_string()
}

/// `baton doctor --json`'s entry for `host`'s plugin, with `env` applied to the command.
fn doctor_plugin(sb: &Sandbox, host: &str, env: &dyn Fn(&mut std::process::Command)) -> Value {
    let mut c = sb.baton(&["doctor", "--json"]);
    env(&mut c);
    let o = c.output().unwrap();
    let doc: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)));
    doc["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["host"] == host)
        .cloned()
        .unwrap_or_else(|| panic!("no {host} plugin in {doc}"))
}

/// Claude Code's CLI in the sandbox's project with `args`: a private home and config folder, the
/// mock model at `url`, this baton first on `PATH`, MCP tools offered as tools (not behind
/// `ToolSearch`), and a 120 s bound (a script the mock does not end would otherwise loop).
fn claude_at(
    sb: &Sandbox,
    claude: &std::path::Path,
    url: &str,
    args: &[&str],
) -> std::process::Command {
    let mut c = sb.command("timeout");
    c.arg("120")
        .arg(claude)
        .args(args)
        .current_dir(sb.work())
        .env("PATH", path_with_baton())
        .env("HOME", sb.home())
        .env("CLAUDE_CONFIG_DIR", sb.home().join(".claude"))
        .env("ANTHROPIC_BASE_URL", url)
        .env("ANTHROPIC_API_KEY", "mock")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("ENABLE_TOOL_SEARCH", "false")
        .stdin(Stdio::null());
    c
}

/// The repository's marketplace added and its plugin installed in the sandbox's Claude Code home.
fn install_plugin(sb: &Sandbox, claude: &std::path::Path, url: &str) {
    let root = workspace_root().display().to_string();
    for args in [
        vec!["plugin", "marketplace", "add", root.as_str()],
        vec!["plugin", "install", "baton@baton"],
    ] {
        assert_exit(&claude_at(sb, claude, url, &args).output().unwrap(), 0);
    }
}

/// PATH with the built baton's folder first, so a host starts this baton.
fn path_with_baton() -> String {
    let bin_dir = std::path::Path::new(env!("CARGO_BIN_EXE_baton"))
        .parent()
        .unwrap()
        .to_path_buf();
    format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// The plugin's `SessionStart` hook runs `baton status --needs` in the project Claude Code
/// starts in, and what it prints reaches the model: here, a failed workflow and the command that
/// gives it guidance, in the first request Claude Code sends.
#[test]
fn the_session_start_hook_tells_the_model_what_waits_for_the_user() {
    use baton_testkit::{MockServer, Turn};
    let Some(claude) = claude() else { return };
    let sb = Sandbox::new().baton_exe(env!("CARGO_BIN_EXE_baton"));
    let id = failed_workflow(&sb);
    let server = MockServer::builder()
        .when(|_| true, Turn::text("Noted."))
        .start_blocking();
    let claude_cmd = |args: &[&str]| claude_at(&sb, &claude, &server.url(), args);
    install_plugin(&sb, &claude, &server.url());
    let o = claude_cmd(&["-p", "--model", "claude-sonnet-4-5", "--", "hi"])
        .output()
        .unwrap();
    assert_exit(&o, 0);
    let first = server
        .model_requests()
        .into_iter()
        .map(|r| r.body.to_string())
        .find(|b| b.contains("hi"))
        .unwrap_or_default();
    // Every tool a command or an agent allows is named as Claude Code names the plugin's tools.
    for (file, tools) in allowed_tools() {
        for t in tools.iter().filter(|t| t.starts_with("mcp__")) {
            assert!(
                first.contains(t.as_str()),
                "{file}: Claude Code offers no {t}"
            );
        }
    }
    assert!(
        first.contains(&format!(
            "workflow {id} failed: the builder answered without a contract"
        )) && first.contains(&format!("baton resume {id} --answer")),
        "the hook's lines are not in the first request: {}",
        &first[..first.len().min(4000)]
    );
}

/// Every file under `dir`, as paths from it, sorted.
fn files_under(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

/// `baton install claude` writes the plugin (every file of the repository's, as it is) to the
/// data folder and registers it with Claude Code's CLI; run again, it changes nothing; without
/// Claude Code it says how to get it.
#[test]
fn baton_install_claude_writes_and_registers_the_plugin() {
    let Some(claude) = claude() else { return };
    let sb = Sandbox::new().baton_exe(env!("CARGO_BIN_EXE_baton"));
    let data = sb.home().join("data");
    let env = |c: &mut std::process::Command| {
        c.env("HOME", sb.home())
            .env("XDG_DATA_HOME", &data)
            .env("CLAUDE_CONFIG_DIR", sb.home().join(".claude"))
            .env("DISABLE_AUTOUPDATER", "1")
            .env("DISABLE_TELEMETRY", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
    };
    let install = |claude_cli: &std::path::Path| {
        let mut c = sb.baton(&["install", "claude", "--claude"]);
        c.arg(claude_cli);
        env(&mut c);
        c.output().unwrap()
    };
    install_twice(
        &sb,
        "claude",
        &claude,
        &env,
        "Claude Code plugin baton installed (user scope)",
    );
    // The files written are the repository's plugin, each as it is.
    assert_same_files(&data.join("baton/claude-code").join(PLUGIN), PLUGIN);
    let details = sb
        .command(&claude)
        .args(["plugin", "details", "baton"])
        .env("HOME", sb.home())
        .env("CLAUDE_CONFIG_DIR", sb.home().join(".claude"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&details.stdout);
    assert!(
        text.contains("Skills (6)") && text.contains("Agents (3)") && text.contains("Hooks (1)"),
        "{text}"
    );
    let found = doctor_plugin(&sb, "claude", &|c: &mut std::process::Command| {
        c.env("HOME", sb.home())
            .env("CLAUDE_CONFIG_DIR", sb.home().join(".claude"));
    });
    assert_eq!(found["installed"], true, "{found}");
    assert_eq!(found["current"], true, "{found}");
    // Without Claude Code's CLI: the way to get it, and nothing half-registered.
    let o = install(std::path::Path::new("/nonexistent/claude"));
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("install Claude Code"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

// ---------------------------------------------------------------------------------------------
// Codex

const CODEX_PLUGIN: &str = "plugins/codex/baton";

fn codex() -> Option<std::path::PathBuf> {
    host_cli("codex", "BATON_TEST_CODEX")
}

/// `baton install codex` writes the Codex plugin (every file of the repository's, as it is) and
/// registers it with Codex's own CLI, twice without a second entry; Codex then lists it installed
/// and enabled and its MCP server among its servers, and a `codex exec` in a project where a
/// workflow failed offers the model baton's core tools and the plugin's skills, and runs the
/// session-start hook (once trusted, as Codex asks) whose line reaches the model. `--scope
/// project` is refused for Codex.
#[test]
fn baton_install_codex_installs_a_plugin_codex_loads() {
    use baton_testkit::{MockServer, Turn};
    let Some(codex) = codex() else { return };
    let sb = Sandbox::new().baton_exe(env!("CARGO_BIN_EXE_baton"));
    let id = failed_workflow(&sb);
    common::command_role(&sb, "scout", "echo \"scout found: $(cat)\"");
    // Codex starts a plugin's server with its own short environment (no XDG folders): the trust
    // the sandbox wrote under its XDG_STATE_HOME is written again where HOME alone leads.
    let mut trust = sb.baton(&["trust"]);
    trust
        .env_remove("XDG_STATE_HOME")
        .env_remove("XDG_CONFIG_HOME");
    assert_exit(&trust.output().unwrap(), 0);
    let args =
        serde_json::json!({"role": "scout", "name": "where", "task": "where is the flag parsed?"});
    let server = MockServer::builder()
        .when(
            |r| {
                r.messages()
                    .last()
                    .is_some_and(|m| !m.tool_results.is_empty())
            },
            Turn::text("The scout says main.rs."),
        )
        .when(
            |r| r.body.to_string().contains("$baton:delegate scout"),
            Turn::new().with_namespaced_tool_call(
                "call_skill_1",
                "mcp__baton",
                "delegate_task",
                args.clone(),
            ),
        )
        .when(|_| true, Turn::text("Noted."))
        .start_blocking();
    let data = sb.home().join("data");
    let codex_home = sb.home().join(".codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    std::fs::write(
        codex_home.join("config.toml"),
        format!(
            "approval_policy = \"never\"\ncheck_for_update_on_startup = false\n\
             model_provider = \"mock\"\nmodel = \"mock-model\"\n\
             [analytics]\nenabled = false\n\
             [model_providers.mock]\nname = \"mock\"\nbase_url = \"{}/v1\"\n\
             wire_api = \"responses\"\nenv_key = \"MOCK_API_KEY\"\n",
            server.url()
        ),
    )
    .unwrap();
    let tmp = sb.path("codex-tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let env = |c: &mut std::process::Command| {
        c.current_dir(sb.work())
            .env("PATH", path_with_baton())
            .env("HOME", sb.home())
            .env("CODEX_HOME", &codex_home)
            .env("XDG_DATA_HOME", &data)
            .env("TMPDIR", &tmp)
            .env("MOCK_API_KEY", "mock")
            .stdin(Stdio::null());
    };
    let before = doctor_plugin(&sb, "codex", &env);
    assert_eq!(before["installed"], false, "{before}");
    assert!(
        before["message"]
            .as_str()
            .unwrap()
            .contains("baton install codex"),
        "{before}"
    );
    install_twice(
        &sb,
        "codex",
        &codex,
        &env,
        "Codex plugin baton installed (user scope)",
    );
    assert_same_files(&data.join("baton/codex").join(CODEX_PLUGIN), CODEX_PLUGIN);
    let codex_out = |args: &[&str]| {
        let mut c = sb.command(&codex);
        c.args(args);
        env(&mut c);
        let o = c.output().unwrap();
        assert_exit(&o, 0);
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    let list: Value = serde_json::from_str(&codex_out(&["plugin", "list", "--json"])).unwrap();
    let installed = list["installed"].as_array().unwrap();
    assert_eq!(installed.len(), 1, "one entry after two installs: {list}");
    assert_eq!(installed[0]["pluginId"], "baton@baton", "{list}");
    assert_eq!(installed[0]["enabled"], true, "{list}");
    // `baton doctor` finds Codex's copy and sees it is this baton's; a file that differs (an
    // older baton installed it) is named, with the way to mend it.
    let found = doctor_plugin(&sb, "codex", &env);
    assert_eq!(found["installed"], true, "{found}");
    assert_eq!(found["current"], true, "{found}");
    let copy = std::path::PathBuf::from(found["path"].as_str().unwrap());
    let skill = copy.join("skills/run/SKILL.md");
    let kept = std::fs::read_to_string(&skill).unwrap();
    std::fs::write(&skill, "an older skill\n").unwrap();
    let stale = doctor_plugin(&sb, "codex", &env);
    assert_eq!(stale["current"], false, "{stale}");
    assert_eq!(
        stale["stale"],
        serde_json::json!(["skills/run/SKILL.md"]),
        "{stale}"
    );
    assert!(
        stale["message"]
            .as_str()
            .unwrap()
            .contains("run `baton install codex` again"),
        "{stale}"
    );
    std::fs::write(&skill, kept).unwrap();
    let servers = codex_out(&["mcp", "list"]);
    assert!(
        servers.lines().any(|l| l.starts_with("baton ")
            && l.contains("mcp --tools core")
            && l.contains("enabled")),
        "{servers}"
    );

    let o = {
        let mut c = sb.command(&codex);
        // Codex runs a plugin's hook once the user trusted it (`/hooks` in its terminal UI,
        // recorded by the hook's hash); this run stands for a user who did.
        c.args([
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--ephemeral",
            "--dangerously-bypass-hook-trust",
            "hi",
        ]);
        env(&mut c);
        c.output().unwrap()
    };
    assert_exit(&o, 0);
    let first = &server.model_requests()[0];
    let offered: Vec<String> = first.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["type"] == "namespace" && t["name"] == "mcp__baton")
        .flat_map(|t| t["tools"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect();
    let mut core: Vec<String> = baton_mcp::CORE_TOOLS
        .iter()
        .map(|t| t.to_string())
        .collect();
    core.sort();
    let mut offered_sorted = offered.clone();
    offered_sorted.sort();
    assert_eq!(
        offered_sorted, core,
        "the plugin's server offers the core tools"
    );
    let body = first.body.to_string();
    for skill in [
        "baton:run",
        "baton:status",
        "baton:answer",
        "baton:flow",
        "baton:delegate",
        "baton:workers",
    ] {
        assert!(
            body.contains(skill),
            "skill {skill} is not offered: {}",
            &body[..body.len().min(3000)]
        );
    }
    assert!(
        body.contains(&format!(
            "workflow {id} failed: the builder answered without a contract"
        )),
        "the hook's line is not in the first request: {}",
        &body[..body.len().min(4000)]
    );

    // A skill named by the user: Codex gives the model the skill's instructions, and the call
    // the model makes reaches baton through the plugin's server (approvals bypassed, as a user
    // who approves the call).
    let o = {
        let mut c = sb.command(&codex);
        c.args([
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--ephemeral",
            "--dangerously-bypass-approvals-and-sandbox",
            "$baton:delegate scout where is the flag parsed?",
        ]);
        env(&mut c);
        c.output().unwrap()
    };
    assert_exit(&o, 0);
    let asked = server
        .model_requests()
        .into_iter()
        .find(|r| r.body.to_string().contains("$baton:delegate scout"))
        .unwrap();
    let body = asked.body.to_string();
    assert!(
        body.contains("The baton role comes first"),
        "the skill's instructions are not in the request"
    );
    let (_, report) = common::result_for(&server, "call_skill_1");
    assert!(
        report.contains(r#""status":"done""#)
            && report.contains("scout found: where is the flag parsed?"),
        "{report}"
    );

    refuses_project_scope(
        &sb,
        "codex",
        &codex,
        &env,
        "Codex takes plugins per user only",
    );
}

// ---------------------------------------------------------------------------------------------
// Gemini CLI

const GEMINI_EXTENSION: &str = "plugins/gemini/baton";

fn gemini() -> Option<std::path::PathBuf> {
    host_cli("gemini", "BATON_TEST_GEMINI")
}

/// The Gemini CLI extension passes `gemini extensions validate`; `baton install gemini`, run
/// twice, writes exactly the repository's extension and links it once, trusting only baton's own
/// folder (never the project); `gemini extensions list` shows it linked there with its MCP server
/// and context file; `baton doctor` finds it; the hook's command answers in the JSON Gemini CLI
/// reads from a hook (a failed workflow's line, `{}` when nothing waits). Gemini CLI cannot run a
/// session here (it talks only to Google's API), so the hook and commands are not run by it.
#[test]
fn baton_install_gemini_links_an_extension_gemini_cli_lists() {
    let Some(gemini) = gemini() else { return };
    let sb = Sandbox::new().baton_exe(env!("CARGO_BIN_EXE_baton"));
    let data = sb.home().join("data");
    let env = |c: &mut std::process::Command| {
        c.env("PATH", path_with_baton())
            .env("XDG_DATA_HOME", &data)
            .env("NO_BROWSER", "1")
            .stdin(Stdio::null());
    };
    let gemini_out = |args: &[&str], dir: &std::path::Path| {
        let mut c = sb.command(&gemini);
        c.args(args).current_dir(dir);
        env(&mut c);
        let o = c.output().unwrap();
        assert_exit(&o, 0);
        String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr)
    };
    let repo_ext = workspace_root().join(GEMINI_EXTENSION);
    let validated = gemini_out(
        &["extensions", "validate", &repo_ext.display().to_string()],
        &sb.home(),
    );
    assert!(validated.contains("successfully validated"), "{validated}");

    install_twice(
        &sb,
        "gemini",
        &gemini,
        &env,
        "Gemini CLI plugin baton installed (user scope)",
    );
    let written = data.join("baton/gemini").join(GEMINI_EXTENSION);
    assert_same_files(&written, GEMINI_EXTENSION);
    let listed = gemini_out(&["extensions", "list"], &sb.home());
    assert_eq!(listed.matches("baton (0.1.0)").count(), 1, "{listed}");
    assert!(
        listed.contains(&format!("Source: {} (Type: link)", written.display())),
        "{listed}"
    );
    assert!(listed.contains("GEMINI.md"), "{listed}");
    let servers = listed.split("MCP servers:").nth(1).unwrap_or_default();
    assert!(servers.lines().any(|l| l.trim() == "baton"), "{listed}");
    let trusted =
        std::fs::read_to_string(sb.home().join(".gemini/trustedFolders.json")).unwrap_or_default();
    assert!(
        !trusted.contains(&sb.work().display().to_string()),
        "the project is not trusted behind the user's back: {trusted}"
    );
    let found = doctor_plugin(&sb, "gemini", &env);
    assert_eq!(found["installed"], true, "{found}");
    assert_eq!(found["current"], true, "{found}");

    // The hook's command, as Gemini CLI runs it: JSON only.
    let hook = |sb: &Sandbox| {
        let o = sb.run(&["status", "--needs", "--hook-json"]);
        assert_exit(&o, 0);
        serde_json::from_slice::<Value>(&o.stdout).unwrap()
    };
    assert_eq!(hook(&sb), serde_json::json!({}));
    let id = failed_workflow(&sb);
    let answer = hook(&sb);
    assert_eq!(
        answer["hookSpecificOutput"]["hookEventName"],
        "SessionStart"
    );
    let context = answer["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(
        context.contains(&format!(
            "workflow {id} failed: the builder answered without a contract"
        )),
        "{context}"
    );

    refuses_project_scope(
        &sb,
        "gemini",
        &gemini,
        &env,
        "Gemini CLI takes extensions per user only",
    );
}

/// The plugin's agents hand their work to baton: Claude Code's `Agent` tool with `baton:scout`
/// starts a subagent whose only tools are baton's `delegate_task` and `task_status` and whose
/// instructions say to delegate; its call runs the project's `scout` role as baton's child
/// process, whose report goes back to the subagent and its answer to the main session.
#[test]
fn a_plugin_agent_hands_its_task_to_baton_s_delegation() {
    use baton_testkit::{MockServer, RecordedRequest, Turn};
    const DELEGATE: &str = "mcp__plugin_baton_baton__delegate_task";
    const TASK_STATUS: &str = "mcp__plugin_baton_baton__task_status";
    let Some(claude) = claude() else { return };
    let sb = Sandbox::new().baton_exe(env!("CARGO_BIN_EXE_baton"));
    // The role answers, and tries to write outside the project: baton's sandbox refuses it.
    common::command_role(
        &sb,
        "scout",
        "echo \"scout found: $(cat)\"; touch \"$HOME/escaped\" 2>/dev/null || echo 'outside the project: refused'",
    );
    let answers = |call: &'static str| {
        move |r: &RecordedRequest| {
            r.messages()
                .last()
                .is_some_and(|m| m.tool_results.iter().any(|t| t.call_id == call))
        }
    };
    let args =
        serde_json::json!({"role": "scout", "name": "where", "task": "where is the flag parsed?"});
    let server = MockServer::builder()
        .when(
            answers("toolu_delegate_1"),
            Turn::text("baton's scout says: main.rs."),
        )
        .when(
            answers("toolu_agent_1"),
            Turn::text("The scout found it in main.rs."),
        )
        .when(
            |r| r.offered_tools().contains(&DELEGATE) && !r.offered_tools().contains(&"Agent"),
            Turn::tool_call("toolu_delegate_1", DELEGATE, args.clone()),
        )
        // The main session's first request calls the agent; later ones (the agent's result, and
        // Claude Code's note when the background agent completes) get text.
        .when(
            |r| {
                r.offered_tools().contains(&"Agent")
                    && !r
                        .messages()
                        .iter()
                        .any(|m| m.role == baton_testkit::Role::Assistant)
            },
            Turn::tool_call(
                "toolu_agent_1",
                "Agent",
                serde_json::json!({"subagent_type": "baton:scout", "description": "find the flag",
                    "prompt": "where is the flag parsed?"}),
            ),
        )
        .when(|_| true, Turn::text("ok"))
        .start_blocking();
    let claude_cmd = |args: &[&str]| claude_at(&sb, &claude, &server.url(), args);
    install_plugin(&sb, &claude, &server.url());
    let allowed = format!("Agent,{DELEGATE}");
    let o = claude_cmd(&[
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--model",
        "claude-sonnet-4-5",
        "--allowedTools",
        &allowed,
        "--",
        "Ask baton's scout where the flag is parsed.",
    ])
    .output()
    .unwrap();
    assert_exit(&o, 0);
    let requests = server.model_requests();

    let sub = requests
        .iter()
        .find(|r| r.offered_tools().contains(&DELEGATE) && !r.offered_tools().contains(&"Agent"))
        .unwrap_or_else(|| panic!("no subagent request: {requests:#?}"));
    let mut offered = sub.offered_tools();
    offered.sort();
    assert_eq!(
        offered,
        [DELEGATE, TASK_STATUS],
        "the agent's tools, and no other"
    );
    assert!(
        sub.body
            .to_string()
            .contains("baton's `scout` role does it"),
        "the agent's instructions: {}",
        sub.body
    );
    // baton ran the role as its child, and its report went back to the subagent.
    let (_, report) = common::result_for(&server, "toolu_delegate_1");
    assert!(report.contains(r#""status":"done""#), "{report}");
    assert!(
        report.contains("scout found: where is the flag parsed?"),
        "{report}"
    );
    // The child ran confined by baton's sandbox, not with Claude Code's rights.
    assert!(report.contains("outside the project: refused"), "{report}");
    assert!(!sb.home().join("escaped").exists());
    // baton recorded the delegation as a task: `baton task status` shows the scout's, done.
    let out = sb.run(&["task", "status", "--json"]);
    assert_exit(&out, 0);
    let recorded = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        recorded.contains("\"phase\":\"done\"") && recorded.contains("\"scout\""),
        "{recorded}"
    );
    // Claude Code runs the agent in the background and tells the main session what it answered.
    assert!(
        requests.iter().any(|r| r.offered_tools().contains(&"Agent")
            && r.body.to_string().contains("baton's scout says: main.rs.")),
        "the agent's answer never reached the main session"
    );
}

// ---------------------------------------------------------------------------------------------
// Copilot CLI

fn copilot() -> Option<std::path::PathBuf> {
    host_cli("copilot", "BATON_TEST_COPILOT")
}

/// Copilot CLI takes the Claude Code plugin as it is: `baton install copilot`, run twice, writes
/// it, registers its marketplace once and installs `baton@baton`, which Copilot CLI lists enabled
/// and loaded in place from baton's folder, with its MCP server among the plugin servers; `baton
/// doctor` finds it current. Copilot CLI needs GitHub's service for a session, so no session runs
/// the plugin here.
#[test]
fn baton_install_copilot_installs_the_plugin_copilot_cli_lists() {
    let Some(copilot) = copilot() else { return };
    let sb = Sandbox::new().baton_exe(env!("CARGO_BIN_EXE_baton"));
    let data = sb.home().join("data");
    let env = |c: &mut std::process::Command| {
        c.env("PATH", path_with_baton())
            .env("XDG_DATA_HOME", &data)
            .stdin(Stdio::null());
    };
    let copilot_out = |args: &[&str]| {
        let mut c = sb.command(&copilot);
        c.args(args);
        env(&mut c);
        let o = c.output().unwrap();
        assert_exit(&o, 0);
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    let before = doctor_plugin(&sb, "copilot", &env);
    assert_eq!(before["installed"], false, "{before}");
    install_twice(
        &sb,
        "copilot",
        &copilot,
        &env,
        "Copilot CLI plugin baton installed (user scope)",
    );
    let marketplace = data.join("baton/claude-code");
    let list: Value = serde_json::from_str(&copilot_out(&["plugin", "list", "--json"])).unwrap();
    let ours: Vec<&Value> = list
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["name"] == "baton")
        .collect();
    assert_eq!(ours.len(), 1, "one entry after two installs: {list}");
    assert_eq!(ours[0]["enabled"], true, "{list}");
    assert_eq!(
        ours[0]["installedFrom"],
        marketplace.display().to_string(),
        "{list}"
    );
    let servers = copilot_out(&["mcp", "list"]);
    let plugin_servers = servers.split("Plugin servers:").nth(1).unwrap_or_default();
    assert!(
        plugin_servers
            .lines()
            .any(|l| l.trim().starts_with("baton")),
        "{servers}"
    );
    let found = doctor_plugin(&sb, "copilot", &env);
    assert_eq!(found["installed"], true, "{found}");
    assert_eq!(found["current"], true, "{found}");
    refuses_project_scope(
        &sb,
        "copilot",
        &copilot,
        &env,
        "Copilot CLI takes plugins per user only",
    );
}

/// `/baton:workers` runs `baton worker list` when Claude Code expands it, and what it printed is
/// in the model's request.
#[test]
fn the_workers_command_puts_baton_s_worker_list_in_the_request() {
    use baton_testkit::{MockServer, Turn};
    let Some(claude) = claude() else { return };
    let sb = Sandbox::new().baton_exe(env!("CARGO_BIN_EXE_baton"));
    let server = MockServer::builder()
        .when(|_| true, Turn::text("No workers."))
        .start_blocking();
    install_plugin(&sb, &claude, &server.url());
    let o = claude_at(
        &sb,
        &claude,
        &server.url(),
        &["-p", "--model", "claude-sonnet-4-5", "--", "/baton:workers"],
    )
    .output()
    .unwrap();
    assert_exit(&o, 0);
    let listed = String::from_utf8_lossy(&sb.run(&["worker", "list"]).stdout).to_string();
    let line = listed.lines().next().unwrap_or_default().trim().to_string();
    assert!(!line.is_empty(), "baton worker list printed nothing");
    let asked = server
        .model_requests()
        .into_iter()
        .map(|r| r.body.to_string())
        .find(|b| b.contains("The project's managed workers now"))
        .unwrap_or_else(|| panic!("the command was not expanded"));
    assert!(asked.contains(&line), "`{line}` is not in the request");
}

/// A plugin command reaches baton with the tools it allows and no other permission: `claude -p
/// "/baton:delegate scout …"` (no `--allowedTools`) has the model call baton's `delegate_task`,
/// which runs the project's `scout` role; with a tool name Claude Code does not give the plugin's
/// tool, the call would be refused in a non-interactive session.
#[test]
fn a_plugin_command_reaches_baton_with_the_tools_it_allows() {
    use baton_testkit::{MockServer, Turn};
    const DELEGATE: &str = "mcp__plugin_baton_baton__delegate_task";
    let Some(claude) = claude() else { return };
    let sb = Sandbox::new().baton_exe(env!("CARGO_BIN_EXE_baton"));
    common::command_role(&sb, "scout", "echo \"scout found: $(cat)\"");
    let args =
        serde_json::json!({"role": "scout", "name": "where", "task": "where is the flag parsed?"});
    let server = MockServer::builder()
        .when(
            |r| {
                r.messages()
                    .last()
                    .is_some_and(|m| !m.tool_results.is_empty())
            },
            Turn::text("The scout says main.rs."),
        )
        .when(
            |r| r.offered_tools().contains(&DELEGATE),
            Turn::tool_call("toolu_cmd_1", DELEGATE, args.clone()),
        )
        .when(|_| true, Turn::text("ok"))
        .start_blocking();
    let claude_cmd = |args: &[&str]| claude_at(&sb, &claude, &server.url(), args);
    install_plugin(&sb, &claude, &server.url());
    let o = claude_cmd(&[
        "-p",
        "--model",
        "claude-sonnet-4-5",
        "--",
        "/baton:delegate scout where is the flag parsed?",
    ])
    .output()
    .unwrap();
    assert_exit(&o, 0);
    let requests = server.model_requests();
    assert!(
        requests[0]
            .body
            .to_string()
            .contains("Call `delegate_task` of the `baton` MCP server"),
        "the command's prompt: {}",
        requests[0].body
    );
    let (_, report) = common::result_for(&server, "toolu_cmd_1");
    assert!(report.contains(r#""status":"done""#), "{report}");
    assert!(
        report.contains("scout found: where is the flag parsed?"),
        "{report}"
    );
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("The scout says main.rs."),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}
