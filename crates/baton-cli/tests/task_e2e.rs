//! End-to-end tests of `baton task` and of `delegate_task` in a main session: the built binary,
//! real child processes, real git.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use baton_testkit::fixture::{assert_exit, task_report as report, wait_until, Sandbox};
use baton_testkit::{MockServer, Turn};
use serde_json::{json, Value};

/// A sandbox running the built `baton` with `BATON_CONFIG` pointing at `config`.
fn project(config: &str) -> Sandbox {
    Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .baton_config(config)
        .env("MOCK_API_KEY", "k")
}

fn role(p: &Sandbox, name: &str, extra: &str, command: &str) {
    p.write(
        format!(".baton/roles/{name}.md"),
        &format!(
            "---\nname: {name}\ndescription: test role\ntools: []\nbackend: command\ncommand: [sh, -c, {}]\n{extra}---\nDo it.\n",
            serde_json::to_string(command).unwrap()
        ),
    );
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

#[test]
fn parallel_entries_report_in_input_order() {
    let p = project("");
    role(
        &p,
        "echoer",
        "",
        "read t; echo \"$BATON_TASK_NAME says $t\"",
    );
    let tasks = p.work().join("tasks.json");
    std::fs::write(
        &tasks,
        json!([
            {"role": "echoer", "name": "first", "task": "one"},
            {"role": "echoer", "name": "second", "task": "two"},
            {"role": "echoer", "name": "third", "task": "three"}
        ])
        .to_string(),
    )
    .unwrap();
    let out = p.run(&["task", "--json", "--parallel", tasks.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    let r = report(&out);
    let names: Vec<&str> = r["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["first", "second", "third"]);
    let outputs: Vec<String> = r["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["output"].as_str().unwrap().trim().to_string())
        .collect();
    assert_eq!(
        outputs,
        ["first says one", "second says two", "third says three"]
    );
    // Text mode renders role attribution.
    let out = p.run(&["task", "--parallel", tasks.to_str().unwrap()]);
    let text = stdout(&out);
    assert!(text.contains("[2/3] second (echoer): done"), "{text}");
}

#[test]
fn a_chain_passes_previous_and_stops_at_the_first_failure() {
    let p = project("");
    role(&p, "echoer", "", "cat");
    role(&p, "failer", "", "echo broken >&2; exit 4");
    let chain = p.work().join("chain.toml");
    std::fs::write(
        &chain,
        "[[chain]]\nrole = \"echoer\"\nname = \"a\"\ntask = \"alpha\"\n\n[[chain]]\nrole = \"echoer\"\nname = \"b\"\ntask = \"got {previous}!\"\n",
    )
    .unwrap();
    let out = p.run(&["task", "--json", "--chain", chain.to_str().unwrap()]);
    assert_exit(&out, 0);
    let r = report(&out);
    assert_eq!(
        r["entries"][1]["output"].as_str().unwrap().trim(),
        "got alpha!"
    );

    std::fs::write(
        &chain,
        json!({"chain": [
            {"role": "echoer", "name": "a", "task": "alpha"},
            {"role": "failer", "name": "b", "task": "x"},
            {"role": "echoer", "name": "c", "task": "{previous}"}
        ]})
        .to_string(),
    )
    .unwrap();
    let chain_json = p.work().join("chain.json");
    std::fs::rename(&chain, &chain_json).unwrap();
    let out = p.run(&["task", "--json", "--chain", chain_json.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let r = report(&out);
    let statuses: Vec<&str> = r["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["done", "failed", "skipped"]);
    assert!(r["entries"][1]["error"]["message"]
        .as_str()
        .unwrap()
        .contains("broken"));
}

#[test]
fn bad_requests_are_refused_before_anything_runs() {
    let p = project("");
    role(&p, "echoer", "", "touch ran; cat");
    for (args, expect) in [
        (vec!["task", "--name", "n", "hi"], "--role"),
        (
            vec!["task", "--role", "ghost", "--name", "n", "hi"],
            "ghost",
        ),
        (
            vec![
                "task",
                "--role",
                "echoer",
                "--name",
                "this name is far too long for a label",
                "hi",
            ],
            "name",
        ),
        (
            vec![
                "task",
                "--role",
                "echoer",
                "--name",
                "n",
                "--model-class",
                "huge",
                "hi",
            ],
            "model_class",
        ),
    ] {
        let out = p.run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(expect), "{args:?}: {err}");
    }
    assert!(!p.work().join("ran").exists());
}

fn git_repo(p: &Sandbox) {
    p.init_repo("main");
    p.write("README", "hi\n");
    p.git(&["add", "README"]);
    p.git(&["commit", "-q", "-m", "init"]);
}

#[test]
fn worktree_entries_are_isolated_and_finalized() {
    let p = project("");
    role(
        &p,
        "committer",
        "isolation: worktree\n",
        "pwd > where; git add where; git commit -q -m work; echo committed",
    );
    role(
        &p,
        "dirty",
        "isolation: worktree\n",
        "echo wip > wip.txt; echo left changes",
    );
    role(&p, "idle", "isolation: worktree\n", "echo nothing");
    // Committed roles keep `git status` clean in the main tree; untracked files would block nothing here.
    git_repo(&p);
    let tasks = p.work().join("../tasks.json");
    std::fs::write(
        &tasks,
        json!([
            {"role": "committer", "name": "commit", "task": "t"},
            {"role": "dirty", "name": "dirty", "task": "t"},
            {"role": "idle", "name": "idle", "task": "t"}
        ])
        .to_string(),
    )
    .unwrap();
    let out = p.run(&["task", "--json", "--parallel", tasks.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    let r = report(&out);
    let e = r["entries"].as_array().unwrap();
    // Each ran in its own worktree, outside the repository.
    let root = p.state_home().join("baton/worktrees");
    for w in e {
        let path = PathBuf::from(w["worktree"]["path"].as_str().unwrap());
        assert!(path.starts_with(&root), "{path:?}");
        assert!(!path.starts_with(p.work()));
    }
    // Commits: the branch survives with the commit, the directory is gone.
    let commit = &e[0]["worktree"];
    assert_eq!(commit["kept_branch"], true);
    assert_eq!(commit["kept_path"], false);
    assert_eq!(commit["commits"].as_array().unwrap().len(), 1);
    assert!(!Path::new(commit["path"].as_str().unwrap()).exists());
    let log = p.git(&["log", "--format=%s", commit["branch"].as_str().unwrap()]);
    assert!(log.starts_with("work"));
    // Uncommitted changes: kept in place with a recovery path.
    let dirty = &e[1]["worktree"];
    assert_eq!(dirty["kept_path"], true);
    assert!(Path::new(dirty["path"].as_str().unwrap())
        .join("wip.txt")
        .exists());
    assert!(dirty["recovery"]
        .as_str()
        .unwrap()
        .contains(dirty["path"].as_str().unwrap()));
    // Clean with no commits: removed, branch deleted.
    let idle = &e[2]["worktree"];
    assert_eq!(
        (idle["kept_path"].clone(), idle["kept_branch"].clone()),
        (json!(false), json!(false))
    );
    assert!(!Path::new(idle["path"].as_str().unwrap()).exists());
    // The main tree was never touched.
    assert!(!p.work().join("where").exists() && !p.work().join("wip.txt").exists());

    // Outside git the entry runs in the working directory and says so.
    let q = project("");
    role(&q, "idle", "isolation: worktree\n", "echo here");
    let out = q.run(&["task", "--json", "--role", "idle", "--name", "n", "t"]);
    assert_eq!(out.status.code(), Some(0));
    let r = report(&out);
    assert!(
        r["entries"][0]["notes"][0]
            .as_str()
            .unwrap()
            .contains("not a git repository"),
        "{r}"
    );
}

#[test]
fn background_tasks_outlive_the_cli_and_can_be_cancelled() {
    let p = project("");
    // The child waits until the test releases it, so the starting CLI is surely gone by then.
    role(
        &p,
        "gated",
        "",
        "while [ ! -f release ]; do sleep 0.02; done; echo released",
    );
    let out = p.run(&[
        "task",
        "--background",
        "--role",
        "gated",
        "--name",
        "bg",
        "t",
    ]);
    assert_exit(&out, 0);
    let id = stdout(&out).trim().to_string();
    assert!(id.starts_with('t'), "{id}");
    // The CLI has exited (output() waited for it); the task is still running.
    let status = p.run(&["task", "status", &id, "--json"]);
    let s: Value = serde_json::from_str(stdout(&status).trim()).unwrap();
    assert!(
        ["running", "starting"].contains(&s["phase"].as_str().unwrap()),
        "{s}"
    );
    std::fs::write(p.work().join("release"), "").unwrap();
    let waited = p.run(&["task", "wait", &id, "--json"]);
    assert_exit(&waited, 0);
    let r = report(&waited);
    assert_eq!(
        r["entries"][0]["output"].as_str().unwrap().trim(),
        "released"
    );
    let s: Value =
        serde_json::from_str(stdout(&p.run(&["task", "status", &id, "--json"])).trim()).unwrap();
    assert_eq!(s["phase"], "done");

    // Cancel: the child is killed, the task ends stopped.
    std::fs::remove_file(p.work().join("release")).unwrap();
    let out = p.run(&[
        "task",
        "--background",
        "--role",
        "gated",
        "--name",
        "bg2",
        "t",
    ]);
    let id = stdout(&out).trim().to_string();
    assert!(wait_until(Duration::from_secs(10), || {
        let s: Value =
            serde_json::from_str(stdout(&p.run(&["task", "status", &id, "--json"])).trim())
                .unwrap();
        s["phase"] == "running"
    }));
    let c = p.run(&["task", "cancel", &id]);
    assert_exit(&c, 0);
    let waited = p.run(&["task", "wait", &id, "--json"]);
    assert_exit(&waited, 1);
    assert_eq!(report(&waited)["entries"][0]["status"], "stopped");
    // A cancelled task says so ([14/18]: it said `failed`).
    let s: Value =
        serde_json::from_str(stdout(&p.run(&["task", "status", &id, "--json"])).trim()).unwrap();
    assert_eq!(s["phase"], "cancelled", "{s}");
    // [22/24] Drawn as cancelled, not failed: its symbol, and its entry's word.
    let text = stdout(&p.run(&["task", "status", &id]));
    assert!(text.contains(&format!("{id}  ⊘ cancelled")), "{text}");
    assert!(text.contains("bg2 (gated): ■ stopped"), "{text}");
    let bad = p.run(&["task", "status", "tnope"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn a_main_session_delegates_and_children_cannot() {
    let server = MockServer::builder()
        .turn(Turn::tool_call(
            "c1",
            "delegate_task",
            json!({"tasks": [
                {"role": "echoer", "name": "shell-child", "task": "ping"},
                {"role": "delegator", "name": "model-child", "task": "look around", "model_class": "fast"}
            ]}),
        ))
        // The model child (a real `baton agent` process) answers from the same server.
        .when(
            |r| r.body.to_string().contains("look around"),
            Turn::text("scout report: nothing here"),
        )
        .turn(Turn::text("Both children answered."))
        .start_blocking();
    let p = project(&format!(
        "[providers.mock]\nkind = \"openai\"\nbase_url = \"{}/v1\"\napi_key_env = \"MOCK_API_KEY\"\n[models]\nfast = \"mock/small\"\n",
        server.url()
    ));
    role(&p, "echoer", "", "read t; echo \"echo: $t\"");
    // A child never gets the delegation tools, even when its role lists them.
    p.write(
        ".baton/roles/delegator.md",
        "---\nname: delegator\ndescription: lists delegation\ntools: [read, delegate_task, delegate_flow]\n---\nLook around.\n",
    );
    let out = p.run(&["agent", "--json", "--model", "mock/main", "delegate it"]);
    assert_exit(&out, 0);
    let reqs = server.model_requests();
    // main turn 1, the model child, main turn 2
    assert_eq!(
        reqs.len(),
        3,
        "{:#?}",
        reqs.iter().map(|r| r.body.to_string()).collect::<Vec<_>>()
    );
    assert!(
        reqs[0].offered_tools().contains(&"delegate_task"),
        "main session lacks delegate_task"
    );
    let child = reqs
        .iter()
        .find(|r| r.body.to_string().contains("look around"))
        .unwrap();
    assert_eq!(child.model(), Some("small"));
    assert!(
        !child.body.to_string().contains("delegate_task"),
        "a child was offered delegate_task"
    );
    let last: String = reqs
        .last()
        .unwrap()
        .tool_results()
        .into_iter()
        .map(|r| r.text)
        .collect();
    assert!(last.contains("echo: ping"), "{last}");
    assert!(last.contains("scout report: nothing here"), "{last}");
    assert!(last.contains("[1/2] shell-child (echoer): done"), "{last}");
    server.assert_tool_results_answer_calls();
}

#[test]
fn a_baton_child_in_a_worktree_leaves_it_clean_and_the_main_tree_untouched() {
    let server = MockServer::builder()
        .when(|_| true, Turn::text("nothing to change"))
        .start_blocking();
    let p = project(&format!(
        "[providers.mock]\nkind = \"openai\"\nbase_url = \"{}/v1\"\n[models]\nbalanced = \"mock/m\"\n",
        server.url()
    ));
    git_repo(&p);
    let out = p.run(&[
        "task",
        "--json",
        "--role",
        "implementer",
        "--name",
        "noop",
        "look only",
    ]);
    assert_exit(&out, 0);
    let r = report(&out);
    let w = &r["entries"][0]["worktree"];
    // The child's transcript and the frozen role file are runtime state, not work: the worktree
    // counts as clean and is removed with its branch.
    assert_eq!(
        (w["kept_path"].clone(), w["kept_branch"].clone()),
        (json!(false), json!(false)),
        "{r}"
    );
    assert_eq!(p.git(&["status", "--porcelain"]), "");
    server.assert_tool_results_answer_calls();
}

#[test]
fn a_queued_entry_resolves_its_route_against_the_config_of_its_turn() {
    let server = MockServer::builder()
        .when(|_| true, Turn::text("scouted"))
        .start_blocking();
    let config = |model: &str| {
        format!(
            "[providers.mock]\nkind = \"openai\"\nbase_url = \"{}/v1\"\n[models]\nfast = \"mock/{model}\"\n",
            server.url()
        )
    };
    let p = project(&config("before"));
    role(
        &p,
        "gate",
        "",
        "touch started; while [ ! -f release ]; do sleep 0.01; done; echo opened",
    );
    let tasks = p.work().join("tasks.json");
    std::fs::write(
        &tasks,
        json!([
            {"role": "gate", "name": "gate", "task": "t"},
            {"role": "scout", "name": "scout", "task": "look", "model_class": "fast"}
        ])
        .to_string(),
    )
    .unwrap();
    let child = p
        .baton(&["task", "--json", "--parallel", tasks.to_str().unwrap()])
        .env("BATON_MAX_SUBAGENTS", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // The scout is queued behind the gate; change the config while it waits.
    assert!(wait_until(Duration::from_secs(20), || p
        .work()
        .join("started")
        .exists()));
    std::fs::write(p.config_file(), config("after")).unwrap();
    std::fs::write(p.work().join("release"), "").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let reqs = server.model_requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].model(), Some("after"));
    server.assert_tool_results_answer_calls();
}

#[test]
fn the_output_budget_is_shared_in_input_order_and_chains_get_whole_answers() {
    let p = project("");
    // 40 KiB each; the call's budget is 50 KiB.
    role(
        &p,
        "big_slow",
        "",
        "while [ ! -f fast-done ]; do sleep 0.01; done; head -c 40960 /dev/zero | tr '\\0' a",
    );
    role(
        &p,
        "big_fast",
        "",
        "head -c 40960 /dev/zero | tr '\\0' b; touch fast-done",
    );
    role(&p, "counter", "", "wc -c | tr -d ' ' | tee count.txt");
    let tasks = p.work().join("tasks.json");
    std::fs::write(
        &tasks,
        json!([
            {"role": "big_slow", "name": "first", "task": "t"},
            {"role": "big_fast", "name": "second", "task": "t"}
        ])
        .to_string(),
    )
    .unwrap();
    let out = p.run(&["task", "--json", "--parallel", tasks.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let r = report(&out);
    // The first entry finished last but is reported whole; the second is cut.
    assert_eq!(r["entries"][0]["output"].as_str().unwrap().len(), 40960);
    let second = r["entries"][1]["output"].as_str().unwrap();
    assert!(
        second.starts_with('b') && second.ends_with("[… 30720 bytes omitted …]"),
        "{}",
        &second[second.len() - 60..]
    );

    let chain = p.work().join("chain.json");
    std::fs::write(
        &chain,
        json!({"chain": [
            {"role": "big_fast", "name": "make", "task": "t"},
            {"role": "big_fast", "name": "again", "task": "t"},
            {"role": "counter", "name": "count", "task": "{previous}"}
        ]})
        .to_string(),
    )
    .unwrap();
    let out = p.run(&["task", "--json", "--chain", chain.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let r = report(&out);
    // The third step received the second step's whole 40 KiB answer, though the report cut it
    // (and had no room left for the third step's own answer).
    assert_eq!(
        std::fs::read_to_string(p.work().join("count.txt"))
            .unwrap()
            .trim(),
        "40960"
    );
    assert!(r["entries"][1]["output"]
        .as_str()
        .unwrap()
        .contains(" bytes omitted …]"));
    assert!(r["entries"][2]["output"]
        .as_str()
        .unwrap()
        .starts_with("[… "));
}

/// `baton task cancel` signals the supervisor only if the recorded process is still the one that
/// runs: a pid that now belongs to another process (its start time differs) is left alone.
#[test]
fn cancel_never_signals_a_process_that_reused_the_supervisors_pid() {
    let p = project("");
    let mut other = std::process::Command::new("sleep")
        .arg("300")
        .spawn()
        .unwrap();
    let pid = other.id();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let start_time: u64 = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .nth(19)
        .unwrap()
        .parse()
        .unwrap();
    let tasks = p.work().join(".baton/state/tasks");
    std::fs::create_dir_all(&tasks).unwrap();
    let created = json!({"type": "task.created", "id": "tgone", "created": "now",
        "cwd": p.work().display().to_string(),
        "request": {"mode": "single", "entries": [{"role": "r", "name": "n", "task": "t"}]}});
    // The supervisor that had `pid` started one tick earlier than the process that has it now.
    let started = json!({"type": "task.started", "pid": pid, "start_time": start_time - 1});
    // Its entry's child, recorded the same way: also another process now.
    let child = json!({"type": "entry", "index": 0, "event": {"type": "activity",
        "activity": {"type": "started", "pid": pid, "start_time": start_time - 1}}});
    std::fs::write(
        tasks.join("tgone.events.jsonl"),
        format!("{created}\n{started}\n{child}\n"),
    )
    .unwrap();

    let status: Value =
        serde_json::from_str(stdout(&p.run(&["task", "status", "tgone", "--json"])).trim())
            .unwrap();
    assert_eq!(status["phase"], "interrupted", "{status}");
    let c = p.run(&["task", "cancel", "tgone"]);
    assert_exit(&c, 0);
    assert!(stdout(&c).contains("nothing runs"), "{}", stdout(&c));
    assert!(
        other.try_wait().unwrap().is_none(),
        "the unrelated process was signalled"
    );

    // The same log naming the process as it really is: cancel signals it.
    let started = json!({"type": "task.started", "pid": pid, "start_time": start_time});
    std::fs::write(
        tasks.join("tgone.events.jsonl"),
        format!("{created}\n{started}\n"),
    )
    .unwrap();
    let c = p.run(&["task", "cancel", "tgone"]);
    assert!(stdout(&c).contains("cancelling tgone"), "{}", stdout(&c));
    let end = other.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(end.signal(), Some(15));
}

#[test]
fn a_supervisor_whose_config_cannot_be_read_records_the_failure() {
    let p = project("");
    role(&p, "echoer", "", "echo hi");
    // A task recorded as the starting CLI records it, its supervisor not yet run.
    let id = "t019a3f2c4b1e07d2";
    let request =
        baton_exec::delegate::parse_request(&json!({"role": "echoer", "name": "n", "task": "t"}))
            .unwrap();
    let state = baton_state::StateDir::for_project(&p.work().canonicalize().unwrap());
    let mut log = baton_exec::background::TaskLog::create(
        &state.task_events(id).unwrap(),
        baton_state::Durability::Fsync,
    )
    .unwrap();
    log.append(&baton_exec::background::TaskEvent::Created {
        id: id.into(),
        created: "2026-12-03T00:00:00Z".into(),
        cwd: p.work().display().to_string(),
        request,
    })
    .unwrap();
    drop(log);
    // The project's config breaks before the supervisor reads it.
    p.write(".baton/config.toml", "this is = = not toml\n");
    let work = p.work().display().to_string();
    let sup = p.run(&["task", "supervise", id, "--cwd", &work]);
    assert_ne!(sup.status.code(), Some(0));
    // Fixed, so that the CLI itself can read the project again: the task stays failed.
    p.write(".baton/config.toml", "");
    let status = p.run(&["task", "status", id, "--json"]);
    let s: Value = serde_json::from_str(stdout(&status).trim()).unwrap();
    assert_eq!(s["phase"], "failed", "{s}");
    let waited = p.run(&["task", "wait", id, "--json"]);
    assert_exit(&waited, 1);
    let line: Value = serde_json::from_str(stdout(&waited).trim()).unwrap();
    assert_eq!(line["type"], "task.failed", "{line}");
    assert!(
        line["message"].as_str().unwrap().contains("config.toml"),
        "{line}"
    );
}

#[test]
fn a_zero_child_timeout_is_refused_naming_the_key() {
    for key in ["idle_timeout", "max_timeout"] {
        let p = project(&format!("[executor]\n{key} = \"0s\"\n"));
        role(&p, "echoer", "", "echo hi");
        let out = p.run(&["task", "--role", "echoer", "--name", "n", "t"]);
        assert_exit(&out, 2);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("executor.{key}")), "{err}");
    }
}

/// A provider key a child prints (a peer agent echoing a 401 body) shows as `[REDACTED]` in the
/// `baton task` report, in text and JSON, and nowhere in a background task's files.
#[test]
fn a_key_a_child_prints_is_redacted_from_reports_and_task_logs() {
    const KEY: &str = "sk-task-0123456789abcdef";
    let p = project("").env("MOCK_API_KEY", KEY);
    role(
        &p,
        "leaky",
        "",
        &format!("echo 'HTTP 401: invalid key {KEY}'; echo 'stderr {KEY}' >&2; exit 1"),
    );
    for json in [false, true] {
        let mut args = vec!["task", "--role", "leaky", "--name", "leak", "x"];
        if json {
            args.push("--json");
        }
        let out = p.run(&args);
        assert_exit(&out, 1);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!stdout(&out).contains(KEY) && !err.contains(KEY), "{json}");
        assert!(
            stdout(&out).contains("invalid key [REDACTED]"),
            "{json}: {}",
            stdout(&out)
        );
    }
    let out = p.run(&[
        "task",
        "--background",
        "--role",
        "leaky",
        "--name",
        "leak",
        "x",
    ]);
    assert_exit(&out, 0);
    let id = stdout(&out).trim().to_string();
    let waited = p.run(&["task", "wait", &id, "--json"]);
    assert_exit(&waited, 1);
    assert!(
        stdout(&waited).contains("invalid key [REDACTED]"),
        "{}\n{}",
        stdout(&waited),
        String::from_utf8_lossy(&waited.stderr)
    );
    let tasks = p.work().join(".baton/state/tasks");
    let mut files = 0;
    for entry in std::fs::read_dir(&tasks).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains(KEY), "{}: {text}", path.display());
        files += 1;
    }
    assert_eq!(files, 2, "the events and the supervisor's log");
}

/// seed 004 compatibility: a pi role's `extensions` read and are named in a warning; a
/// whole-run limit not longer than the idle one is refused before anything runs.
#[test]
fn pi_extensions_are_named_and_a_max_timeout_under_the_idle_one_is_refused() {
    let p = project("");
    role(&p, "echoer", "extensions: [web-search]\n", "echo done");
    let out = p.run(&["task", "--role", "echoer", "--name", "a", "go"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("role echoer lists pi extensions (web-search): baton loads none of them"),
        "{err}"
    );
    let p = project("[executor]\nidle_timeout = \"40m\"\n");
    role(&p, "echoer", "", "echo done");
    let out = p.run(&["task", "--role", "echoer", "--name", "a", "go"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "executor.max_timeout (1800s) must be longer than executor.idle_timeout (2400s)"
        ),
        "{err}"
    );
}

/// A main session that delegates hears back from a background delegation: `task_wait` gives it
/// the report, as `baton task wait` would (seed 004: delegations report to Main).
#[test]
fn a_main_session_waits_for_its_background_delegation_and_reads_the_report() {
    let p = project("");
    role(&p, "echoer", "", "echo \"echoed by $BATON_TASK_NAME\"");
    let out = p.run(&[
        "task",
        "--background",
        "--role",
        "echoer",
        "--name",
        "bg",
        "t",
    ]);
    assert_exit(&out, 0);
    let id = stdout(&out).trim().to_string();
    let server = baton_testkit::MockServer::builder()
        .turn(baton_testkit::Turn::tool_call(
            "call_w",
            "task_wait",
            json!({"id": id}),
        ))
        .turn(baton_testkit::Turn::tool_call(
            "call_s",
            "task_status",
            json!({"id": "t-nonexistent"}),
        ))
        .turn(baton_testkit::Turn::text("The delegation reported back."))
        .start_blocking();
    std::fs::write(
        p.config_file(),
        format!(
            "[providers.mock]\nkind = \"openai\"\nbase_url = \"{}/v1\"\napi_key_env = \"MOCK_API_KEY\"\n",
            server.url()
        ),
    )
    .unwrap();
    let out = p.run(&[
        "agent",
        "--json",
        "--role",
        "implementer",
        "--model",
        "mock/m",
        "check on it",
    ]);
    assert_exit(&out, 0);
    let requests = server.model_requests();
    let offered = requests[0].offered_tools();
    for t in ["delegate_task", "task_status", "task_wait", "task_cancel"] {
        assert!(offered.contains(&t), "{t} not offered: {offered:?}");
    }
    let waited = &requests[1].tool_results()[0].text;
    assert!(waited.contains("echoed by bg"), "{waited}");
    let status = requests[2].tool_results().last().cloned().unwrap();
    assert!(status.text.contains("task_status: `id`"), "{}", status.text);
}

/// Everything Main is shown counts against the output cap (seed 004): a child's long error text
/// is cut with the marker like its answer would be.
#[test]
fn a_child_s_error_text_is_bounded_by_the_output_cap() {
    let p = project("[executor]\noutput_cap_bytes = 300\n");
    role(
        &p,
        "noisy",
        "",
        "yes 'a line of noise on stderr' | head -c 6000 >&2; exit 3",
    );
    let out = p.run(&["task", "--json", "--role", "noisy", "--name", "n", "go"]);
    let doc = baton_testkit::fixture::task_report(&out);
    let e = &doc["entries"][0];
    assert_eq!(e["status"], "failed", "{doc}");
    let message = e["error"]["message"].as_str().unwrap();
    assert!(message.contains("bytes omitted"), "{message}");
    assert!(message.len() < 400, "{} bytes: {message}", message.len());
}

/// One cap for the project, not one per process (seed 004: up to N children per Main): with a
/// cap of 1, a second background delegation waits — and says so — until the first one's child
/// ends, then runs.
#[test]
fn the_concurrency_cap_holds_across_background_tasks_of_one_project() {
    let p = project("");
    role(
        &p,
        "gated",
        "",
        "touch \"started-$BATON_TASK_NAME\"; while [ ! -f release ]; do sleep 0.02; done; echo ok",
    );
    let one = [("BATON_MAX_SUBAGENTS", "1")];
    let start = |name: &str| {
        let out = p.run_with(
            &[
                "task",
                "--background",
                "--role",
                "gated",
                "--name",
                name,
                "t",
            ],
            &one,
        );
        assert_exit(&out, 0);
        stdout(&out).trim().to_string()
    };
    let a = start("a");
    assert!(wait_until(Duration::from_secs(20), || p
        .work()
        .join("started-a")
        .exists()));
    let b = start("b");
    let events = p
        .work()
        .join(format!(".baton/state/tasks/{b}.events.jsonl"));
    assert!(wait_until(Duration::from_secs(20), || {
        std::fs::read_to_string(&events).is_ok_and(|t| t.contains("\"waiting\""))
    }));
    assert!(
        !p.work().join("started-b").exists(),
        "b started while a held the only slot"
    );
    std::fs::write(p.work().join("release"), "").unwrap();
    for id in [&a, &b] {
        let out = p.run(&["task", "wait", id]);
        assert_exit(&out, 0);
    }
    assert!(p.work().join("started-b").exists());
    let logs = p.run(&["task", "logs", &b]);
    assert!(
        stdout(&logs).contains("waiting: all 1 project slots are taken"),
        "{}",
        stdout(&logs)
    );
    // The child's answer is in the log once the task is done ([14/18]: it never was).
    let followed = p.run(&["task", "logs", &b, "--follow"]);
    assert_exit(&followed, 0);
    assert!(
        stdout(&followed).contains("[b] answer:\n  ok"),
        "{}",
        stdout(&followed)
    );
}
