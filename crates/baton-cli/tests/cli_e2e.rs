//! End-to-end tests of the commands a user expects around the agent: `--version`, shell
//! completions, `--json` for `models` and `roles`, `init`, `doctor`, `sessions`, `task logs`,
//! `flow clean`. The built binary, in a sandbox of its own.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Output;

use baton_testkit::fixture::{assert_exit, files_under, workspace_root, Sandbox};
use baton_testkit::{MockServer, Turn};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

fn sandbox() -> Sandbox {
    Sandbox::new().baton_exe(env!("CARGO_BIN_EXE_baton"))
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// stdout as one JSON document.
fn document(o: &Output) -> Value {
    serde_json::from_str(stdout(o).trim())
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}):\n{}", stdout(o)))
}

#[test]
fn version_names_the_git_commit_it_was_built_from() {
    let sb = sandbox();
    let out = sb.run(&["--version"]);
    assert_exit(&out, 0);
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(workspace_root())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    assert_eq!(
        stdout(&out).trim(),
        format!("baton {} ({commit})", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn completions_are_written_for_bash_zsh_and_fish() {
    let sb = sandbox();
    for (shell, marker) in [
        ("bash", "complete -F _baton"),
        ("zsh", "#compdef baton"),
        ("fish", "complete -c baton"),
    ] {
        let out = sb.run(&["completions", shell]);
        assert_exit(&out, 0);
        let script = stdout(&out);
        assert!(script.contains(marker), "{shell}: {script}");
        for sub in ["agent", "task", "flow", "models", "roles"] {
            assert!(script.contains(sub), "{shell} script lacks {sub}");
        }
        // Subcommands are built lazily at run time; the script still has every level: a
        // subcommand's own subcommands, their options, and the `help` tree over them.
        for deep in ["abandon", "no-wait", "idle-timeout"] {
            assert!(script.contains(deep), "{shell} script lacks {deep}");
        }
    }
    let bash = stdout(&sb.run(&["completions", "bash"]));
    assert!(
        bash.contains("baton__subcmd__help__subcmd__flow__subcmd__abandon"),
        "the help tree lacks `help flow abandon`"
    );
    let out = sb.run(&["completions", "tcsh"]);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("bash"), "{}", stderr(&out));
}

#[test]
fn models_json_is_one_document_with_each_class_and_why() {
    let sb = sandbox()
        .baton_config(
            "[providers.local]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n\
             [providers.keyed]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"UNSET_KEY_FOR_TEST\"\n\
             [models]\nfast = [\"keyed/m1\", \"local/m2\"]\ndefault_class = \"fast\"\n",
        );
    let out = sb.run(&["models", "--json"]);
    assert_exit(&out, 0);
    let doc = document(&out);
    assert_eq!(doc["default_class"], "fast");
    assert_eq!(
        doc["config_files"],
        json!([sb.config_file().display().to_string()])
    );
    let fast = &doc["classes"][0];
    assert_eq!(fast["class"], "fast");
    assert_eq!(fast["resolves"], "local/m2");
    assert_eq!(fast["routes"][0]["usable"], false);
    assert!(
        fast["routes"][0]["error"]
            .as_str()
            .unwrap()
            .contains("UNSET_KEY_FOR_TEST"),
        "{fast}"
    );
    assert_eq!(
        (&fast["routes"][1]["route"], &fast["routes"][1]["usable"]),
        (&json!("local/m2"), &json!(true))
    );
    // A model the table does not know: the defaults of its kind, marked unknown.
    assert_eq!(fast["routes"][1]["model_info"]["known"], false, "{fast}");
    assert_eq!(fast["routes"][1]["thinking_sent"], "(not sent)", "{fast}");
    let balanced = &doc["classes"][1];
    assert_eq!(
        balanced,
        &json!({"class": "balanced", "set": false, "routes": [], "resolves": null})
    );
}

#[test]
fn roles_json_is_one_document_with_backend_isolation_and_sandbox() {
    let sb = sandbox();
    sb.write(
        ".baton/roles/tester.md",
        "---\nname: tester\ndescription: Writes tests.\ntools: [read, bash]\nmodel_class: fast\nsandbox: read-only\n---\nTest.\n",
    );
    let out = sb.run(&["roles", "--json"]);
    assert_exit(&out, 0);
    let doc = document(&out);
    let roles = doc["roles"].as_array().unwrap();
    let names: Vec<&str> = roles.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "brainstormer",
            "bug-investigator",
            "code-reviewer",
            "component-builder",
            "doc-syncer",
            "failure-hunter",
            "implementer",
            "integration-verifier",
            "plan-gap-reviewer",
            "planner",
            "researcher",
            "reviewer",
            "scout",
            "tester"
        ]
    );
    let tester = roles.iter().find(|r| r["name"] == "tester").unwrap();
    let path = tester["source"]["path"].as_str().unwrap().to_string();
    assert!(path.ends_with(".baton/roles/tester.md"), "{path}");
    assert_eq!(
        tester,
        &json!({
            "name": "tester", "description": "Writes tests.", "model_class": "fast",
            "tools": ["read", "bash"], "backend": "baton", "isolation": "none",
            "sandbox": "read-only", "source": {"kind": "project", "path": path}, "skills": [],
        })
    );
    let out = sb.run(&["roles", "check", "--json"]);
    assert_exit(&out, 0);
    assert_eq!(
        document(&out),
        json!({"valid": true, "roles": 14, "invalid": []})
    );
}

#[test]
fn init_writes_a_starter_config_that_baton_loads_and_nothing_else() {
    let sb = sandbox();
    let out = sb.run(&["init"]);
    assert_exit(&out, 0);
    let path = sb.work().join(".baton/config.toml");
    let ignore = path.with_file_name(".gitignore");
    assert_eq!(
        stdout(&out).trim(),
        format!(
            "wrote {}\nwrote {}",
            path.canonicalize().unwrap().display(),
            ignore.canonicalize().unwrap().display()
        )
    );
    assert_eq!(
        files_under(&sb.work()),
        [".baton/.gitignore", ".baton/config.toml"]
    );
    // [22/24] Git stays clean: what baton writes as it runs (state, the workflows' memory) is
    // ignored; the config is the project's to commit.
    sb.git(&["init", "-q"]);
    std::fs::create_dir_all(sb.work().join(".baton/memory")).unwrap();
    std::fs::write(sb.work().join(".baton/memory/activeContext.md"), "# ctx\n").unwrap();
    std::fs::create_dir_all(sb.work().join(".baton/state/sessions")).unwrap();
    std::fs::write(sb.work().join(".baton/state/sessions/s.jsonl"), "{}\n").unwrap();
    let status = sb.git(&["status", "--porcelain", "--untracked-files=all"]);
    assert_eq!(
        status.lines().collect::<Vec<_>>(),
        ["?? .baton/.gitignore", "?? .baton/config.toml"],
        "{status}"
    );
    let text = std::fs::read_to_string(&path).unwrap();
    for needle in [
        "[providers.openai]",
        "[providers.anthropic]",
        "[providers.ollama]",
        "# [sandbox]",
        "# mode = \"workspace-write\"",
        "# writable_roots",
        "# network = false",
    ] {
        assert!(text.contains(needle), "starter config lacks {needle}");
    }
    // baton's own loader reads it: each class is set and the keyless Ollama route resolves.
    let out = sb.run(&["models", "--json"]);
    assert_exit(&out, 0);
    let doc = document(&out);
    assert_eq!(
        doc["config_files"],
        json!([path.canonicalize().unwrap().display().to_string()])
    );
    let set: Vec<bool> = doc["classes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["set"].as_bool().unwrap())
        .collect();
    assert_eq!(set, [true, true, true, false]);
    assert_eq!(doc["classes"][0]["resolves"], "ollama/qwen2.5-coder:7b");
    // [14/18] the first hour: every hosted route it writes names a model the table knows, and
    // the thinking level it asks for is really sent (no retired names, no ignored `:medium`).
    let out = sb.run_with(
        &["models", "--json"],
        &[("OPENAI_API_KEY", "k"), ("ANTHROPIC_API_KEY", "k")],
    );
    let doc = document(&out);
    let mut checked = 0;
    for class in doc["classes"].as_array().unwrap() {
        for r in class["routes"].as_array().unwrap_or(&Vec::new()) {
            let route = r["route"].as_str().unwrap();
            if route.starts_with("ollama/") {
                continue;
            }
            assert_eq!(r["usable"], true, "{r}");
            assert_eq!(
                r["model_info"]["known"], true,
                "{route} is not in the model table: {r}"
            );
            if route.contains(':') {
                let sent = r["thinking_sent"].as_str().unwrap_or_default();
                assert!(
                    !sent.contains("not sent"),
                    "{route}: its level is never sent: {r}"
                );
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 5);
}

/// [22/24] The README's steps 2 and 3: the file `baton init` wrote in front of the user is
/// theirs, so `baton doctor` reads its provider lines as written (not the built-in defaults),
/// a project value that shadows the user's own config names both files, and nothing runnable
/// is a failed doctor.
#[test]
fn doctor_after_init_reads_the_file_init_wrote_and_names_what_it_shadows() {
    let sb = sandbox();
    // Nothing configured: nothing can run, and doctor says so with a failing exit.
    let out = sb.run(&["doctor"]);
    assert_exit(&out, 1);
    assert!(
        stdout(&out).contains("✗ providers: none configured, so nothing can run"),
        "{}",
        stdout(&out)
    );
    let user = sb.config_home().join("baton/config.toml");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    std::fs::write(&user, "[models]\nfast = \"ollama/mine\"\n").unwrap();
    let out = sb.run(&["init"]);
    assert_exit(&out, 0);
    let project = sb.work().canonicalize().unwrap().join(".baton/config.toml");
    assert!(stderr(&out).contains("trusted"), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "note: {} sets models.fast again: its values apply, not those in {}",
            project.display(),
            user.display()
        )),
        "{}",
        stderr(&out)
    );
    let out = sb.run(&["doctor", "--json"]);
    assert!(
        !stderr(&out).contains("not trusted"),
        "the file init wrote is trusted: {}",
        stderr(&out)
    );
    let doc = document(&out);
    let ollama = doc["providers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "ollama")
        .unwrap()
        .clone();
    assert_eq!(ollama["url"], "http://127.0.0.1:11434/v1", "{ollama}");
    assert_eq!(
        doc["shadowed"],
        json!([{"key": "models.fast", "under": user.display().to_string(), "over": project.display().to_string()}])
    );
    // `baton models` says the same, and a keyless route is not "key set".
    let out = sb.run(&["models"]);
    let text = stdout(&out);
    assert!(
        text.contains("note: ") && text.contains("models.fast again"),
        "{text}"
    );
    assert!(
        text.contains(
            "ollama/qwen2.5-coder:7b is chosen now (configured, no key configured or needed"
        ),
        "{text}"
    );
    // Trust covers the content init wrote and only that: a changed endpoint is untrusted again.
    let edited = std::fs::read_to_string(&project)
        .unwrap()
        .replace("http://127.0.0.1:11434/v1", "http://127.0.0.1:9/v1");
    std::fs::write(&project, edited).unwrap();
    let out = sb.run(&["models"]);
    assert!(
        stderr(&out).contains("is not trusted")
            && stderr(&out).contains("providers.ollama.base_url"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn init_does_not_trust_role_files_nobody_has_read() {
    let sb = sandbox().untrusted();
    sb.write(
        ".baton/roles/runner.md",
        "---\nname: runner\ndescription: Runs.\ntools: []\nbackend: command\ncommand: [sh, run.sh]\n---\nRun.\n",
    );
    let out = sb.run(&["init"]);
    assert_exit(&out, 0);
    assert!(
        stderr(&out).contains("the project is not trusted: its role files runner"),
        "{}",
        stderr(&out)
    );
    let out = sb.run(&["models"]);
    assert!(stderr(&out).contains("is not trusted"), "{}", stderr(&out));
}

#[test]
fn init_refuses_to_replace_a_config_unless_forced() {
    let sb = sandbox();
    sb.git(&["init", "-q"]);
    std::fs::create_dir(sb.work().join("sub")).unwrap();
    let mine = "[models]\nfast = \"ollama/mine\"\n";
    let path = sb.write(".baton/config.toml", mine);
    // From a subfolder of the repository: the project root's file is the one meant.
    let out = sb.run(&["init", "--cwd", "sub"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("already exists") && stderr(&out).contains("--force"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), mine);
    assert!(!sb.work().join("sub/.baton").exists());
    let out = sb.run(&["init", "--cwd", "sub", "--force"]);
    assert_exit(&out, 0);
    assert!(std::fs::read_to_string(&path)
        .unwrap()
        .contains("[providers.ollama]"));
    assert_eq!(
        files_under(&sb.work().join(".baton")),
        [".gitignore", "config.toml"],
        "no temp file is left behind"
    );
}

/// A sandbox whose provider `mock` (Chat Completions) is `server`.
fn with_mock(server: &baton_testkit::MockServer) -> Sandbox {
    sandbox()
        .baton_config(&format!(
            "[providers.mock]\nkind = \"openai\"\nbase_url = \"{}/v1\"\napi_key_env = \"MOCK_API_KEY\"\n\
             [retry]\ninitial_delay = \"1ms\"\nmax_delay = \"5ms\"\n",
            server.url()
        ))
        .env("MOCK_API_KEY", "test-key-for-cli-e2e")
}

/// The session id of a `baton agent --json` run (its first event).
fn session_id(out: &Output) -> String {
    let first: Value = serde_json::from_str(stdout(out).lines().next().unwrap()).unwrap();
    first["session_id"].as_str().unwrap().to_string()
}

#[test]
fn sessions_lists_saved_sessions_and_resume_takes_a_prefix_or_last() {
    use baton_testkit::{Fault, MockServer, Turn};
    let server = MockServer::builder()
        .turn(Turn::text("first answer"))
        .step(Fault::status(401).message("bad key"))
        .turn(Turn::text("second answer, resumed"))
        .turn(Turn::text("third answer, resumed"))
        .start_blocking();
    let sb = with_mock(&server);
    let out = sb.run(&[
        "agent",
        "--json",
        "--model",
        "mock/m",
        "first task\nits details",
    ]);
    assert_exit(&out, 0);
    let first = session_id(&out);
    let out = sb.run(&[
        "agent",
        "--json",
        "--role",
        "scout",
        "--model",
        "mock/m",
        "second task",
    ]);
    assert_exit(&out, 1);
    let second = session_id(&out);
    // A session whose process was killed: its transcript ends with a message. Its id shares the
    // first 8 characters of the first one's; it is the newest.
    let killed = format!("{}-killed", &first[..8]);
    sb.write(
        format!(".baton/state/sessions/{killed}.jsonl"),
        &format!(
            "{}\n{}\n",
            json!({"type": "session", "session_id": killed, "role": "implementer", "model": "mock/m",
                   "cwd": sb.work().display().to_string(), "created": "2999-01-01T00:00:00Z"}),
            json!({"type": "message", "message": {"role": "user", "text": "\u{1b}]0;third task\u{7}"}}),
        ),
    );

    let out = sb.run(&["sessions", "--json"]);
    assert_exit(&out, 0);
    let sessions = document(&out)["sessions"].as_array().unwrap().clone();
    let summary: Vec<(String, &str, &str, &str, Value, &str)> = sessions
        .iter()
        .map(|s| {
            (
                s["id"].as_str().unwrap().to_string(),
                s["role"].as_str().unwrap(),
                s["route"].as_str().unwrap(),
                s["outcome"].as_str().unwrap(),
                s["reason"].clone(),
                s["task"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                first.clone(),
                "implementer",
                "mock/m",
                "completed",
                Value::Null,
                "first task"
            ),
            (
                second.clone(),
                "scout",
                "mock/m",
                "failed",
                json!("model_error"),
                "second task"
            ),
            (
                killed.clone(),
                "implementer",
                "mock/m",
                "unfinished",
                Value::Null,
                "\u{1b}]0;third task\u{7}"
            ),
        ]
    );

    let out = sb.run(&["sessions"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    // A header, and columns aligned under it ([14/18]: no header, nanosecond timestamps).
    assert!(
        lines[0].starts_with("ID") && lines[0].ends_with("OUTCOME               COST     TASK"),
        "{text}"
    );
    let task_at = lines[0].find("TASK").unwrap();
    assert!(
        lines[1].starts_with(&first)
            && lines[1].contains("completed")
            && lines[1].ends_with("first task"),
        "{text}"
    );
    assert_eq!(lines[1].find("first task"), Some(task_at), "{text}");
    // What each ended run cost (a local server's model costs nothing); `-` for one that never ended.
    assert!(
        lines[1].contains("$0.0000") && lines[3].contains(" -  "),
        "{text}"
    );
    assert!(
        lines[2].contains("scout")
            && lines[2].contains("failed (model_error)  $0.0000  second task"),
        "{text}"
    );
    assert!(
        lines[3].contains("unfinished") && lines[3].ends_with("\u{fffd}]0;third task\u{fffd}"),
        "{text}"
    );
    let created = lines[1].split("  ").nth(1).unwrap();
    assert!(
        created.len() == 23 && created.ends_with(" UTC") && !created.contains('.'),
        "the creation time to the second: {created:?}"
    );

    // An ambiguous prefix names the candidates and runs nothing.
    let requests = server.requests().len();
    let out = sb.run(&["agent", "--resume", &first[..8], "go on"]);
    assert_exit(&out, 2);
    for id in [&first, &killed] {
        assert!(stderr(&out).contains(id.as_str()), "{}", stderr(&out));
    }
    assert_eq!(server.requests().len(), requests);

    // A unique prefix resumes that session.
    let out = sb.run(&["agent", "--json", "--resume", &second[..30], "try again"]);
    assert_exit(&out, 0);
    assert_eq!(session_id(&out), second);
    // `last` is the newest session.
    let out = sb.run(&["agent", "--json", "--resume", "last", "go on"]);
    assert_exit(&out, 0);
    assert_eq!(session_id(&out), killed);
    let last_request = server.model_requests().last().unwrap().body.to_string();
    assert!(last_request.contains("third task"), "{last_request}");

    let out = sb.run(&["sessions", "--json"]);
    let outcomes: Vec<Value> = document(&out)["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["outcome"].clone())
        .collect();
    assert_eq!(outcomes, vec![json!("completed"); 3]);
    server.assert_tool_results_answer_calls();
}

#[test]
fn doctor_checks_each_provider_with_a_real_request_and_never_prints_a_key() {
    use baton_testkit::MockServer;
    const GOOD: &str = "good-key-0123456789";
    const WRONG: &str = "wrong-key-9876543210";
    let server = MockServer::builder().require_key(GOOD).start_blocking();
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let url = server.url();
    let config = format!(
        "[providers.good]\nkind = \"openai\"\nbase_url = \"{url}/v1\"\napi_key_env = \"GOOD_KEY\"\n\
         [providers.claude]\nkind = \"anthropic\"\nbase_url = \"{url}\"\napi_key_env = \"GOOD_KEY\"\n\
         [providers.wrong]\nkind = \"openai-responses\"\nbase_url = \"{url}/v1\"\napi_key_env = \"WRONG_KEY\"\n\
         [providers.nokey]\nkind = \"openai\"\nbase_url = \"{url}/v1\"\napi_key_env = \"UNSET_KEY_FOR_DOCTOR\"\n\
         [providers.down]\nkind = \"openai\"\nbase_url = \"http://{closed}/v1\"\n\
         [models]\nfast = \"nokey/gpt-5.5\"\nbalanced = \"down/gpt-5.5\"\n"
    );
    let sb = sandbox()
        .baton_config(&config)
        .env("GOOD_KEY", GOOD)
        .env("WRONG_KEY", WRONG);
    let no_key_printed = |out: &Output| {
        for text in [stdout(out), stderr(out)] {
            assert!(!text.contains(GOOD) && !text.contains(WRONG), "{text}");
        }
    };

    let out = sb.run_with(&["doctor", "--json"], &[("BATON_SANDBOX_ABI", "0")]);
    assert_exit(&out, 1);
    no_key_printed(&out);
    let doc = document(&out);
    assert_eq!(doc["ok"], false);
    let verdicts: Vec<(&str, &str, Value)> = doc["providers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap(),
                p["verdict"].as_str().unwrap(),
                p["status"].clone(),
            )
        })
        .collect();
    assert_eq!(
        verdicts,
        [
            ("claude", "ok", Value::Null),
            ("down", "unreachable", Value::Null),
            ("good", "ok", Value::Null),
            ("nokey", "key_missing", Value::Null),
            ("wrong", "http_error", json!(401)),
        ]
    );
    let wrong = &doc["providers"][4];
    assert_eq!(
        wrong["message"], "Incorrect API key provided: [REDACTED].",
        "the provider's message, with the key it echoes redacted"
    );
    assert_eq!(wrong["key"], "$WRONG_KEY (providers.wrong.api_key_env)");
    assert!(doc["providers"][3]["message"]
        .as_str()
        .unwrap()
        .contains("UNSET_KEY_FOR_DOCTOR"));
    assert_eq!(doc["sandbox"]["ok"], false);
    assert_eq!(doc["sandbox"]["landlock_abi"], 0);
    assert!(doc["sandbox"]["message"]
        .as_str()
        .unwrap()
        .contains("danger-full-access"));
    // One real request per provider that has a key: the model list, authenticated as it is.
    let asked: Vec<(String, String, Option<String>)> = server
        .requests()
        .iter()
        .map(|r| {
            let key = r
                .headers
                .iter()
                .find(|(k, _)| k == "authorization" || k == "x-api-key")
                .map(|(_, v)| v.clone());
            (r.method.clone(), r.path.clone(), key)
        })
        .collect();
    assert_eq!(
        asked,
        [
            ("GET".into(), "/v1/models".into(), Some(GOOD.into())),
            (
                "GET".into(),
                "/v1/models".into(),
                Some(format!("Bearer {GOOD}"))
            ),
            // A local server that answered is asked for its llama.cpp /props, without the key.
            ("GET".into(), "/props".into(), None),
            (
                "GET".into(),
                "/v1/models".into(),
                Some(format!("Bearer {WRONG}"))
            ),
        ]
    );

    let out = sb.run(&["doctor"]);
    assert_exit(&out, 1);
    no_key_printed(&out);
    let text = stdout(&out);
    for line in [
        "✓ good (openai, URL/v1) · key: $GOOD_KEY (providers.good.api_key_env): ok",
        "✗ nokey (openai, URL/v1) · key: $UNSET_KEY_FOR_DOCTOR (providers.nokey.api_key_env): key missing",
        "✗ wrong (openai-responses, URL/v1) · key: $WRONG_KEY (providers.wrong.api_key_env): HTTP 401",
        "    Incorrect API key provided: [REDACTED].",
    ] {
        let line = line.replace("URL", &url);
        assert!(text.lines().any(|l| l == line), "no line {line:?} in:\n{text}");
    }
    assert!(text.contains("✗ down (openai, http://"), "{text}");
    // A route is only as good as its provider ([14/18]: doctor once showed it green), and an
    // unreachable local server gets the way to start one.
    assert!(
        text.contains("✗ fast route nokey/gpt-5.5: its provider nokey is key missing: set the environment variable UNSET_KEY_FOR_DOCTOR"),
        "{text}"
    );
    assert!(
        text.contains("✗ balanced route down/gpt-5.5: its provider down is unreachable"),
        "{text}"
    );
    assert!(
        text.contains("is it running?") && text.contains("--jinja"),
        "{text}"
    );

    // Only the providers that work, and a sandbox mode that needs no Landlock: all ok, exit 0.
    let sb = sandbox()
        .baton_config(&format!(
            "[providers.good]\nkind = \"openai\"\nbase_url = \"{url}/v1\"\napi_key_env = \"GOOD_KEY\"\n\
             [models]\nfast = \"good/gpt-5.5\"\n[sandbox]\nmode = \"danger-full-access\"\n"
        ))
        .env("GOOD_KEY", GOOD);
    let out = sb.run(&["doctor"]);
    assert_exit(&out, 0);
    assert!(
        stdout(&out).contains("GET ") && stdout(&out).contains("listed 1 model(s)"),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("✓ sandbox: sandbox.mode is danger-full-access"));
}

#[test]
fn task_names_itself_and_its_report_shows_tokens_cost_and_duration_per_entry_and_in_total() {
    use baton_testkit::{MockServer, Turn};
    let server = MockServer::builder()
        .when(|_| true, Turn::text("looks fine").usage(1000, 200, 50))
        .start_blocking();
    let sb = sandbox().baton_config(&format!(
        "[providers.mock]\nkind = \"openai\"\nbase_url = \"{}/v1\"\n[models]\nbalanced = \"mock/m\"\n\
         [prices.\"mock/m\"]\ninput = 1.0\ncached_input = 0.5\noutput = 2.0\n",
        server.url()
    ));
    // No --name: the role and the first words of the task.
    let out = sb.run(&[
        "task",
        "--role",
        "reviewer",
        "Check the README: is it right?",
    ]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(
        text.starts_with("reviewer-check-the-readme-is (reviewer): done\nlooks fine\n"),
        "{text}"
    );
    // 800 fresh × $1 + 200 cached × $0.5 + 50 out × $2 per million = $0.0010.
    let usage: Vec<&str> = text.lines().skip_while(|l| *l != "usage:").collect();
    assert_eq!(usage.len(), 3, "{text}");
    assert!(
        usage[1].starts_with(
            "  reviewer-check-the-readme-is (reviewer): 1000 in (200 cached) / 50 out tokens · $0.0010 · "
        ) && usage[1].ends_with('s'),
        "{text}"
    );
    assert!(
        usage[2].starts_with("  total: 1000 in (200 cached) / 50 out tokens · $0.0010 · "),
        "{text}"
    );

    let tasks = sb.write(
        "tasks.json",
        &json!([
            {"role": "reviewer", "name": "one", "task": "look at a"},
            {"role": "reviewer", "name": "two", "task": "look at b"},
        ])
        .to_string(),
    );
    let out = sb.run(&["task", "--parallel", tasks.to_str().unwrap()]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    let usage: Vec<&str> = text.lines().skip_while(|l| *l != "usage:").collect();
    assert_eq!(usage.len(), 4, "{text}");
    assert!(usage[1].starts_with("  one (reviewer): 1000 in"), "{text}");
    assert!(usage[2].starts_with("  two (reviewer): 1000 in"), "{text}");
    assert!(
        usage[3].starts_with("  total: 2000 in (400 cached) / 100 out tokens · $0.0020 · "),
        "{text}"
    );
    server.assert_tool_results_answer_calls();
}

/// `baton task logs ID`: the recorded events of a background task as lines; `--follow` keeps
/// printing the new ones and exits when the task ends, as `wait` would.
#[test]
fn task_logs_prints_the_events_and_follows_until_the_task_ends() {
    use std::process::Stdio;
    use std::time::Duration;
    let sb = sandbox();
    sb.write(
        ".baton/roles/gated.md",
        "---\nname: gated\ndescription: waits\ntools: []\nbackend: command\ncommand: [sh, -c, \"while [ ! -f release ]; do sleep 0.01; done; echo released\"]\n---\nRun.\n",
    );
    let out = sb.run(&[
        "task",
        "--background",
        "--role",
        "gated",
        "--name",
        "g",
        "go",
    ]);
    assert_exit(&out, 0);
    let id = stdout(&out).trim().to_string();
    assert!(baton_testkit::fixture::wait_until(
        Duration::from_secs(30),
        || { stdout(&sb.run(&["task", "logs", &id])).contains("[g] child running") }
    ));
    let follower = sb
        .baton(&["task", "logs", &id, "--follow"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::fs::write(sb.work().join("release"), "").unwrap();
    let followed = follower.wait_with_output().unwrap();
    assert_exit(&followed, 0);
    let text = stdout(&followed);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].contains(&format!("{id} created: single of 1 entry (g as gated)")),
        "{text}"
    );
    for expected in [
        "[g] queued (gated)",
        "[g] child running (pid ",
        "[g] done",
        "completed: 1 of 1 entry done",
    ] {
        assert!(text.contains(expected), "{expected} in {text}");
    }
    // After the end, the same lines without following; --json gives the records themselves.
    let again = sb.run(&["task", "logs", &id]);
    assert_exit(&again, 0);
    assert_eq!(stdout(&again), text);
    let raw = sb.run(&["task", "logs", &id, "--json"]);
    let types: Vec<String> = stdout(&raw)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(types.first().map(String::as_str), Some("task.created"));
    assert_eq!(types.last().map(String::as_str), Some("task.completed"));
    let missing = sb.run(&["task", "logs", "t0000000000000000"]);
    assert_exit(&missing, 2);
    assert!(
        stderr(&missing).contains("not found"),
        "{}",
        stderr(&missing)
    );
}

/// [14/18] the first hour: the README's local quick start, run as written — its TOML block in
/// the user config (only the server's address changed to the mock's), then each command of its
/// `sh` block. The built-in `implementer` asks for `balanced`, which that config does not set:
/// the session runs on `models.default_class` and says so.
#[test]
fn the_readme_local_quick_start_works_as_written() {
    let readme =
        std::fs::read_to_string(baton_testkit::fixture::workspace_root().join("README.md"))
            .unwrap();
    let section = readme
        .split("**Local Ollama or llama.cpp**:")
        .nth(1)
        .expect("the README's local quick start");
    let block = |fence: &str| -> String {
        let start = section.find(fence).expect(fence) + fence.len();
        let end = start + section[start..].find("```").unwrap();
        section[start..end].to_string()
    };
    let toml = block("```toml\n");
    let commands = block("```sh\n");
    let server = MockServer::builder()
        .turn(Turn::text("Fixed the test."))
        .start_blocking();
    let p = Sandbox::new().baton_exe(env!("CARGO_BIN_EXE_baton"));
    let toml = toml.replace("http://127.0.0.1:11434/v1", &format!("{}/v1", server.url()));
    assert!(
        toml.contains(&server.url()),
        "the README's address changed: {toml}"
    );
    let user_config = p.config_home().join("baton/config.toml");
    std::fs::create_dir_all(user_config.parent().unwrap()).unwrap();
    std::fs::write(&user_config, toml).unwrap();
    let mut ran = 0;
    for line in commands.lines() {
        let line = line.split(" #").next().unwrap().trim();
        let Some(rest) = line.strip_prefix("baton ") else {
            continue;
        };
        // The words of the line: plain ones, and one double-quoted string.
        let mut args: Vec<String> = Vec::new();
        let mut rest = rest.trim();
        while !rest.is_empty() {
            if let Some(q) = rest.strip_prefix('"') {
                let end = q.find('"').unwrap();
                args.push(q[..end].to_string());
                rest = q[end + 1..].trim_start();
            } else {
                let end = rest.find(' ').unwrap_or(rest.len());
                args.push(rest[..end].to_string());
                rest = rest[end..].trim_start();
            }
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = p.run(&args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "`baton {line}`:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if args[0] == "agent" {
            let err = String::from_utf8_lossy(&out.stderr);
            // [22/24] The fallback is what the README's config sets (`models.default_class`):
            // nothing to warn about before every session.
            assert!(!err.contains("which has no route"), "{err}");
        }
        ran += 1;
    }
    assert_eq!(ran, 2, "the README's commands: {commands}");
    let reqs = server.model_requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].model(), Some("qwen2.5-coder:7b"));
}

/// [14/18] the first hour: every option and argument of every command says what it is in
/// `--help` (several said nothing). Subcommands are found from each `--help` itself.
#[test]
fn every_option_of_every_command_has_help() {
    let sb = sandbox();
    let mut queue: Vec<Vec<String>> = vec![vec![]];
    let mut empty: Vec<String> = Vec::new();
    let mut seen = 0;
    while let Some(path) = queue.pop() {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let text = stdout(&sb.run(&args));
        seen += 1;
        let mut in_commands = false;
        for line in text.lines() {
            if line.ends_with(':') && !line.starts_with(' ') {
                in_commands = line == "Commands:";
                continue;
            }
            let t = line.trim_start();
            if in_commands {
                let name = t.split_whitespace().next().unwrap_or("");
                if !name.is_empty()
                    && name != "help"
                    && line.starts_with("  ")
                    && !line.starts_with("   ")
                {
                    let mut sub = path.clone();
                    sub.push(name.to_string());
                    queue.push(sub);
                }
                continue;
            }
            let bare = t.starts_with('-') || t.starts_with('<') || t.starts_with('[');
            let described = t.split("  ").skip(1).any(|part| !part.trim().is_empty());
            if bare && !described && !t.starts_with("-h, --help") && !t.starts_with("-V, --version")
            {
                empty.push(format!("baton {}: {t}", path.join(" ")));
            }
        }
    }
    assert!(seen > 25, "only {seen} commands were found");
    assert!(
        empty.is_empty(),
        "options without help:\n{}",
        empty.join("\n")
    );
}
