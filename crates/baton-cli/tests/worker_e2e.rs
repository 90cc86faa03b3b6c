//! Managed workers end to end: the built `baton worker` against the mock model — a worker started
//! once, prompted again and again (each request carrying the earlier turns), listed, stopped,
//! started again on its own session, retired with its worktree finalized; killed mid-prompt and
//! reconciled; concurrent sends queued in order; bad input refused before anything is written.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use baton_testkit::fixture::{assert_exit, wait_until, Sandbox};
use baton_testkit::{MockServer, Turn};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(30);

fn project(server: &MockServer) -> Sandbox {
    let sb = Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .mock_provider(server, "openai", "");
    sb.init_repo("main");
    sb.write("README", "hello\n");
    sb.write(
        ".baton/roles/helper.md",
        "---\nname: helper\ndescription: a worker\ntools: [bash]\n---\nHelp.\n",
    );
    sb.commit_all("initial");
    sb
}

fn out(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn list(sb: &Sandbox) -> Vec<Value> {
    let o = sb.run(&["worker", "list", "--json"]);
    assert_exit(&o, 0);
    serde_json::from_str(&out(&o)).unwrap()
}

fn row(sb: &Sandbox, name: &str) -> Value {
    list(sb)
        .into_iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no worker {name}"))
}

/// The text of every request body the model got, one string per request.
fn bodies(server: &MockServer) -> Vec<String> {
    server
        .model_requests()
        .iter()
        .map(|r| r.body.to_string())
        .collect()
}

fn send(sb: &Sandbox, name: &str, prompt: &str) -> String {
    let o = sb.run(&["worker", "send", name, prompt]);
    assert_exit(&o, 0);
    out(&o).trim().to_string()
}

#[test]
fn a_worker_keeps_its_session_across_prompts_a_stop_and_a_start_then_retires() {
    let server = MockServer::builder()
        .turn(Turn::text("first answer"))
        .turn(Turn::text("second answer"))
        .turn(Turn::text("third answer"))
        .turn(Turn::text("fourth answer"))
        .start_blocking();
    let sb = project(&server);
    let o = sb.run(&[
        "worker", "start", "w1", "--role", "helper", "--model", "mock/m",
    ]);
    assert_exit(&o, 0);
    assert!(out(&o).contains("worker w1 started"), "{}", out(&o));
    assert_eq!(row(&sb, "w1")["state"], "idle");
    assert_eq!(send(&sb, "w1", "prompt one"), "first answer");
    assert_eq!(send(&sb, "w1", "prompt two"), "second answer");
    // --json: the answer with its usage.
    let o = sb.run(&["worker", "send", "w1", "prompt three", "--json"]);
    assert_exit(&o, 0);
    let doc: Value = serde_json::from_str(out(&o).trim()).unwrap();
    assert_eq!(doc["answer"], "third answer");
    assert!(doc["input_tokens"].as_u64().unwrap() > 0, "{doc}");
    // The third request carries the first two turns.
    let b = bodies(&server);
    assert_eq!(b.len(), 3);
    for said in [
        "prompt one",
        "first answer",
        "prompt two",
        "second answer",
        "prompt three",
    ] {
        assert!(b[2].contains(said), "{said} not in {}", b[2]);
    }
    let r = row(&sb, "w1");
    assert_eq!(r["turns"], 3);
    assert_eq!(r["role"], "helper");
    assert_eq!(r["route"], "mock/m");
    let session = r["session"].as_str().unwrap().to_string();
    let o = sb.run(&["worker", "logs", "w1"]);
    assert_exit(&o, 0);
    assert_eq!(out(&o).matches(" answered ").count(), 3, "{}", out(&o));

    // Stopped, the session kept; started again, it resumes it.
    let o = sb.run(&["worker", "stop", "w1"]);
    assert_exit(&o, 0);
    assert_eq!(row(&sb, "w1")["state"], "stopped");
    let o = sb.run(&["worker", "send", "w1", "too early"]);
    assert_exit(&o, 2);
    assert!(err(&o).contains("baton worker start w1"), "{}", err(&o));
    assert_exit(&sb.run(&["worker", "start", "w1"]), 0);
    assert_eq!(row(&sb, "w1")["session"], session.as_str());
    assert_eq!(send(&sb, "w1", "prompt four"), "fourth answer");
    let b = bodies(&server);
    assert!(
        b[3].contains("prompt one") && b[3].contains("third answer"),
        "{}",
        b[3]
    );

    // Retired: it takes no prompts, and `send` names it.
    let o = sb.run(&["worker", "retire", "w1"]);
    assert_exit(&o, 0);
    assert_eq!(row(&sb, "w1")["state"], "retired");
    let o = sb.run(&["worker", "send", "w1", "hello"]);
    assert_exit(&o, 2);
    assert!(err(&o).contains("worker w1 is retired"), "{}", err(&o));
}

#[test]
fn retiring_keeps_a_worktree_that_holds_a_commit_and_removes_one_that_does_not() {
    let server = MockServer::builder().start_blocking();
    let sb = project(&server);
    for name in ["keeps", "empty"] {
        let o = sb.run(&[
            "worker",
            "start",
            name,
            "--role",
            "helper",
            "--model",
            "mock/m",
            "--worktree",
        ]);
        assert_exit(&o, 0);
    }
    let path = |name: &str| std::path::PathBuf::from(row(&sb, name)["worktree"].as_str().unwrap());
    let kept = path("keeps");
    assert!(kept.join("README").is_file());
    // The worker's work: a commit on its branch.
    std::fs::write(kept.join("work.txt"), "done\n").unwrap();
    let git = |args: &[&str]| {
        let o = std::process::Command::new("git")
            .args(["-c", "user.name=W", "-c", "user.email=w@x"])
            .args(args)
            .current_dir(&kept)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    git(&["add", "work.txt"]);
    git(&["commit", "-qm", "the worker's work"]);
    let o = sb.run(&["worker", "retire", "keeps"]);
    assert_exit(&o, 0);
    assert!(out(&o).contains("baton/worker-keeps"), "{}", out(&o));
    assert!(sb.branches().contains(&"baton/worker-keeps".to_string()));
    let empty = path("empty");
    let o = sb.run(&["worker", "retire", "empty"]);
    assert_exit(&o, 0);
    assert!(!empty.exists());
    assert!(!sb.branches().contains(&"baton/worker-empty".to_string()));
}

/// The pids of processes whose command line holds `marker`.
fn holding(marker: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) {
            if String::from_utf8_lossy(&cmd).contains(marker) && pid != std::process::id() {
                out.push(pid);
            }
        }
    }
    out
}

#[test]
fn a_killed_supervisor_shows_lost_at_once_and_its_prompt_is_sent_again_only_on_retry() {
    for whole_tree in [false, true] {
        let server = MockServer::builder().start_blocking();
        let sb = project(&server);
        let marker = format!("held-{}", if whole_tree { "tree" } else { "supervisor" });
        let started = sb.work().join("started");
        server.push(Turn::tool_call(
            "b1",
            "bash",
            json!({"command": format!(
                "touch '{}'; i=0; while [ $i -lt 3000 ]; do i=$((i+1)); sleep 0.01; done; echo {marker}",
                started.display()
            )}),
        ));
        assert_exit(
            &sb.run(&[
                "worker", "start", "k", "--role", "helper", "--model", "mock/m",
            ]),
            0,
        );
        let o = sb.run(&["worker", "send", "k", "a long job", "--no-wait"]);
        assert_exit(&o, 0);
        let prompt = out(&o).trim().to_string();
        assert!(
            wait_until(WAIT, || started.exists()),
            "the tool did not start"
        );
        assert_eq!(row(&sb, "k")["state"], "working");
        let events =
            std::fs::read_to_string(sb.work().join(".baton/state/workers/k.events.jsonl")).unwrap();
        let pid = events
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .rfind(|e| e["type"] == "worker.started")
            .unwrap()["pid"]
            .as_u64()
            .unwrap() as i32;
        let killed = Instant::now();
        let target = if whole_tree { -pid } else { pid };
        // SAFETY: kill(2) with a pid (or a group) the test started; no memory is touched.
        assert_eq!(unsafe { libc::kill(target, libc::SIGKILL) }, 0);
        // `list` reconciles with what runs: lost within a second.
        assert!(
            wait_until(Duration::from_secs(1), || row(&sb, "k")["state"] == "lost"),
            "not lost after {:?}",
            killed.elapsed()
        );
        let r = row(&sb, "k");
        assert_eq!(r["in_flight"], prompt.as_str());
        let session = r["session"].as_str().unwrap().to_string();
        // Nothing it ran survives it.
        assert!(
            wait_until(Duration::from_secs(5), || holding(&marker).is_empty()),
            "left running: {:?}",
            holding(&marker)
        );
        // Started again: its session resumes, and the prompt in flight is not sent by itself.
        let asked = server.model_requests().len();
        let o = sb.run(&["worker", "start", "k"]);
        assert_exit(&o, 0);
        assert!(err(&o).contains("--retry"), "{}", err(&o));
        server.push(Turn::text("resumed and idle"));
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(
            server.model_requests().len(),
            asked,
            "the lost prompt was sent again"
        );
        assert_eq!(row(&sb, "k")["state"], "idle");
        assert_eq!(
            row(&sb, "k")["session"],
            session.as_str(),
            "its session resumed"
        );
        // The next prompt goes on without the lost one: its turn left the conversation.
        assert_eq!(send(&sb, "k", "next"), "resumed and idle");
        let b = bodies(&server);
        let last = b.last().unwrap();
        assert!(
            last.contains("next") && !last.contains("a long job"),
            "the lost prompt was replayed: {last}"
        );
        // --retry sends it again, as a new prompt, once.
        server.push(Turn::text("retried"));
        let o = sb.run(&["worker", "send", "k", "--retry"]);
        assert_exit(&o, 0);
        assert_eq!(out(&o).trim(), "retried");
        let b = bodies(&server);
        assert_eq!(
            b.last().unwrap().matches("a long job").count(),
            1,
            "{}",
            b.last().unwrap()
        );
        let o = sb.run(&["worker", "send", "k", "--retry"]);
        assert_exit(&o, 2);
        assert_exit(&sb.run(&["worker", "stop", "k"]), 0);
    }
}

/// A send waits at the worker's door (its supervisor hands the answer back); when the supervisor
/// is killed mid-prompt the door closes, and the send reads the rest from the log: it ends at
/// once saying so, and its prompt is in the log exactly once.
#[test]
fn a_send_at_the_door_of_a_killed_supervisor_ends_with_what_the_log_says() {
    let server = MockServer::builder().start_blocking();
    let sb = project(&server);
    let started = sb.work().join("started");
    server.push(Turn::tool_call(
        "b1",
        "bash",
        json!({"command": format!("touch '{}'; sleep 30", started.display())}),
    ));
    assert_exit(
        &sb.run(&[
            "worker", "start", "d", "--role", "helper", "--model", "mock/m",
        ]),
        0,
    );
    // Its supervisor listens at its door (an abstract socket, named after its log).
    let state = baton_state::StateDir::for_project(&sb.work());
    let door = format!("@{}", baton_exec::worker_door::name(&state, "d").unwrap());
    let open = || {
        std::fs::read_to_string("/proc/net/unix")
            .unwrap()
            .lines()
            .any(|l| l.split_whitespace().last() == Some(door.as_str()))
    };
    assert!(open(), "no door is open");
    let waiting = sb
        .baton(&["worker", "send", "d", "a long job"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    assert!(
        wait_until(WAIT, || started.exists()),
        "the tool did not start"
    );
    let log = sb.work().join(".baton/state/workers/d.events.jsonl");
    let events = || -> Vec<Value> {
        std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    };
    let pid = events()
        .iter()
        .rfind(|e| e["type"] == "worker.started")
        .unwrap()["pid"]
        .as_u64()
        .unwrap() as i32;
    // SAFETY: kill(2) with a pid the test started; no memory is touched.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    let o = waiting.wait_with_output().unwrap();
    assert_exit(&o, 1);
    // The kernel closes a killed process's sockets as it reaps it: gone within moments.
    assert!(
        wait_until(Duration::from_secs(10), || !open()),
        "the door outlived its supervisor"
    );
    assert!(err(&o).contains("is lost and prompt"), "{}", err(&o));
    let queued: Vec<Value> = events()
        .into_iter()
        .filter(|e| e["type"] == "prompt.queued")
        .collect();
    assert_eq!(queued.len(), 1, "{queued:?}");
    assert_eq!(queued[0]["text"], "a long job");
    // Started again, its next prompt goes through the door as before.
    assert_exit(&sb.run(&["worker", "start", "d"]), 0);
    server.push(Turn::text("back"));
    assert_eq!(send(&sb, "d", "next"), "back");
    assert_exit(&sb.run(&["worker", "stop", "d"]), 0);
}

#[test]
fn two_sends_at_once_are_answered_in_order_never_interleaved() {
    let server = MockServer::builder()
        .turn(Turn::text("answer A"))
        .turn(Turn::text("answer B"))
        .start_blocking();
    let sb = project(&server);
    assert_exit(
        &sb.run(&[
            "worker", "start", "q", "--role", "helper", "--model", "mock/m",
        ]),
        0,
    );
    let spawn = |p: &str| {
        sb.baton(&["worker", "send", "q", p])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let a = spawn("prompt A");
    let b = spawn("prompt B");
    let a = a.wait_with_output().unwrap();
    let b = b.wait_with_output().unwrap();
    assert_exit(&a, 0);
    assert_exit(&b, 0);
    let answers = [out(&a).trim().to_string(), out(&b).trim().to_string()];
    let mut sorted = answers.clone();
    sorted.sort();
    assert_eq!(sorted, ["answer A", "answer B"]);
    // One request per prompt, in the log's order; the second holds the first whole.
    let reqs = bodies(&server);
    assert_eq!(reqs.len(), 2);
    let first = if reqs[0].contains("prompt A") {
        "A"
    } else {
        "B"
    };
    let second = if first == "A" { "B" } else { "A" };
    assert!(
        !reqs[0].contains(&format!("prompt {second}")),
        "{}",
        reqs[0]
    );
    assert!(reqs[1].contains(&format!("prompt {first}")) && reqs[1].contains("answer A"));
    assert!(reqs[1].contains(&format!("prompt {second}")));
    let o = sb.run(&["worker", "logs", "q"]);
    let log = out(&o);
    let order: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("delivered") || l.contains("answered"))
        .collect();
    assert_eq!(order.len(), 4);
    assert!(
        order[0].contains("delivered") && order[1].contains("answered"),
        "{log}"
    );
    assert!(
        order[2].contains("delivered") && order[3].contains("answered"),
        "{log}"
    );
    assert_exit(&sb.run(&["worker", "stop", "q"]), 0);
}

#[test]
fn bad_input_is_refused_before_anything_is_written() {
    let server = MockServer::builder().start_blocking();
    let sb = project(&server);
    let workers = sb.work().join(".baton/state/workers");
    let o = sb.run(&["worker", "send", "nobody", "hi"]);
    assert_exit(&o, 2);
    assert!(err(&o).contains("worker `nobody` not found"), "{}", err(&o));
    let o = sb.run(&["worker", "start", "x", "--role", "no-such-role"]);
    assert_exit(&o, 2);
    assert!(err(&o).contains("--role no-such-role"), "{}", err(&o));
    let o = sb.run(&[
        "worker",
        "start",
        "x",
        "--role",
        "helper",
        "--model",
        "nowhere/m",
    ]);
    assert_exit(&o, 2);
    assert!(err(&o).contains("--model"), "{}", err(&o));
    let o = sb.run(&["worker", "start", "x"]);
    assert_exit(&o, 2);
    assert!(err(&o).contains("--role ROLE"), "{}", err(&o));
    let o = sb.run(&["worker", "start", "../x", "--role", "helper"]);
    assert_exit(&o, 2);
    assert!(!workers.join("x.events.jsonl").exists());
    assert!(std::fs::read_dir(&workers).map_or(true, |d| d.count() == 0));
    // workers.max: the cap refuses the next start.
    sb.write(".baton/config.toml", "[workers]\nmax = 1\n");
    sb.trust();
    assert_exit(
        &sb.run(&[
            "worker", "start", "one", "--role", "helper", "--model", "mock/m",
        ]),
        0,
    );
    let o = sb.run(&[
        "worker", "start", "two", "--role", "helper", "--model", "mock/m",
    ]);
    assert_exit(&o, 2);
    assert!(err(&o).contains("workers.max is 1"), "{}", err(&o));
    assert_exit(&sb.run(&["worker", "stop", "one"]), 0);
}

#[test]
fn a_worker_stops_at_its_budget_and_after_its_idle_timeout_with_its_state_kept() {
    let server = MockServer::builder()
        .turn(Turn::text("a priced answer"))
        .start_blocking();
    let sb = Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .mock_provider(
            &server,
            "openai",
            "[prices.\"mock/priced-m\"]\ninput = 3.0\noutput = 15.0\n",
        );
    sb.write(
        ".baton/roles/helper.md",
        "---\nname: helper\ndescription: a worker\ntools: []\n---\nHelp.\n",
    );
    // 100 tokens in and 20 out cost $0.0006: past a budget of $0.0005 after the first prompt.
    assert_exit(
        &sb.run(&[
            "worker",
            "start",
            "spender",
            "--role",
            "helper",
            "--model",
            "mock/priced-m",
            "--budget-usd",
            "0.0005",
        ]),
        0,
    );
    assert_eq!(send(&sb, "spender", "spend"), "a priced answer");
    assert!(wait_until(WAIT, || row(&sb, "spender")["state"] == "stopped"));
    let r = row(&sb, "spender");
    assert!(
        (r["cost_usd"].as_f64().unwrap() - 0.0006).abs() < 1e-9,
        "{r}"
    );
    assert!(r["session"].is_string());
    let o = sb.run(&["worker", "logs", "spender"]);
    assert!(out(&o).contains("stopped (budget spent)"), "{}", out(&o));
    // An idle timeout stops (not retires) a worker.
    assert_exit(
        &sb.run(&[
            "worker",
            "start",
            "sleepy",
            "--role",
            "helper",
            "--model",
            "mock/m",
            "--idle-timeout",
            "1s",
        ]),
        0,
    );
    assert!(wait_until(WAIT, || row(&sb, "sleepy")["state"] == "stopped"));
    let o = sb.run(&["worker", "logs", "sleepy"]);
    assert!(out(&o).contains("stopped (idle timeout)"), "{}", out(&o));
    let o = sb.run(&["worker", "start", "sleepy"]);
    assert_exit(&o, 0);
    assert_exit(&sb.run(&["worker", "stop", "sleepy"]), 0);
    // A budget that is no amount is refused before anything is written.
    let o = sb.run(&[
        "worker",
        "start",
        "bad",
        "--role",
        "helper",
        "--model",
        "mock/m",
        "--budget-usd=0",
    ]);
    assert_exit(&o, 2);
    assert!(err(&o).contains("--budget-usd"), "{}", err(&o));
}

#[test]
fn a_main_session_whose_role_lists_worker_starts_and_prompts_one_and_children_never_get_it() {
    let server = MockServer::builder()
        .turn(Turn::tool_call(
            "c1",
            "worker",
            json!({"op": "start", "name": "aide", "role": "helper", "model": "mock/m"}),
        ))
        .turn(Turn::tool_call(
            "c2",
            "worker",
            json!({"op": "send", "name": "aide", "prompt": "count the notes"}),
        ))
        .turn(Turn::text("there are three notes"))
        .turn(Turn::text("The aide says there are three notes."))
        .start_blocking();
    let sb = project(&server);
    sb.write(
        ".baton/roles/boss.md",
        "---\nname: boss\ndescription: a main session with a worker\ntools: [worker]\n---\nLead.\n",
    );
    let o = sb.run(&["agent", "--role", "boss", "--model", "mock/m", "get help"]);
    assert_exit(&o, 0);
    assert!(
        out(&o).contains("The aide says there are three notes."),
        "{}",
        out(&o)
    );
    let reqs = server.model_requests();
    assert_eq!(reqs.len(), 4);
    // The worker's own request held only its prompt; the main session got its answer back.
    assert!(reqs[2].body.to_string().contains("count the notes"));
    assert!(!reqs[2].body.to_string().contains("get help"));
    let results = reqs[3].tool_results();
    assert!(
        results
            .iter()
            .any(|r| r.text.contains("there are three notes")),
        "{results:?}"
    );
    let r = row(&sb, "aide");
    assert_eq!(
        (r["state"].as_str().unwrap(), r["turns"].as_u64().unwrap()),
        ("idle", 1)
    );
    assert_exit(&sb.run(&["worker", "retire", "aide"]), 0);
    // A child (BATON_CHILD=1) is never offered it, whatever its role lists.
    server.push(Turn::text("no tools here"));
    let o = sb
        .baton(&["agent", "--role", "boss", "--model", "mock/m", "a child"])
        .env("BATON_CHILD", "1")
        .output()
        .unwrap();
    assert_exit(&o, 0);
    let last = server.model_requests().pop().unwrap();
    let offered: Vec<&str> =
        baton_testkit::offered_tools(last.wire_format().unwrap(), &last.body).collect();
    assert!(!offered.contains(&"worker"), "{offered:?}");
}

/// A peer worker's project: its role on `backend` with `program`, the mock as provider `mock`.
fn peer_project(
    server: &MockServer,
    backend: &str,
    program: &std::path::Path,
    kind: &str,
) -> Sandbox {
    let sb = Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .mock_provider(
            server,
            kind,
            &format!(
                "[executor]\nprograms = {{ {backend} = \"{}\" }}\n",
                program.display()
            ),
        );
    sb.init_repo("main");
    sb.write("README", "hello\n");
    sb.write(
        ".baton/roles/peer.md",
        &format!("---\nname: peer\ndescription: a peer worker\ntools: [read]\nbackend: {backend}\n---\nAnswer briefly.\n"),
    );
    sb.commit_all("initial");
    sb
}

/// Two prompts to a peer worker: the second request the model gets carries the first turn (the
/// CLI's own session, resumed); then stop, start again, and a third that still carries both.
fn peer_worker_keeps_its_conversation(
    sb: &Sandbox,
    server: &MockServer,
    env: &[(&str, &str)],
    asked: impl Fn() -> Vec<String>,
) {
    let o = sb.run_with(
        &[
            "worker",
            "start",
            "p",
            "--role",
            "peer",
            "--model",
            "mock/mock-model",
        ],
        env,
    );
    assert_exit(&o, 0);
    let send = |prompt: &str| {
        let o = sb.run_with(&["worker", "send", "p", prompt, "--json"], env);
        assert_exit(&o, 0);
        serde_json::from_str::<Value>(out(&o).trim()).unwrap()
    };
    let first = send("the first question");
    assert_eq!(first["answer"], "first peer answer", "{first}");
    assert!(first["output_tokens"].as_u64().unwrap() > 0, "{first}");
    let second = send("the second question");
    assert_eq!(second["answer"], "second peer answer", "{second}");
    let bodies = asked();
    let last = bodies.last().unwrap();
    assert!(
        last.contains("the first question") && last.contains("first peer answer"),
        "{last}"
    );
    assert_exit(&sb.run_with(&["worker", "stop", "p"], env), 0);
    assert_exit(&sb.run_with(&["worker", "start", "p"], env), 0);
    let third = send("the third question");
    assert_eq!(third["answer"], "third peer answer", "{third}");
    let bodies = asked();
    let last = bodies.last().unwrap();
    assert!(
        last.contains("the first question") && last.contains("second peer answer"),
        "{last}"
    );
    assert_eq!(row(sb, "p")["turns"], 3);
    assert_exit(&sb.run_with(&["worker", "retire", "p"], env), 0);
    let _ = server;
}

#[test]
fn a_pi_worker_resumes_pi_s_own_session_between_prompts() {
    let Some(pi) =
        baton_testkit::fixture::find_program("BATON_TEST_PI", "bench/node_modules/.bin/pi")
    else {
        baton_testkit::fixture::skip_live("pi", "BATON_TEST_PI", "run npm ci --prefix bench");
        return;
    };
    let server = MockServer::builder()
        .turn(Turn::text("first peer answer"))
        .turn(Turn::text("second peer answer"))
        .turn(Turn::text("third peer answer"))
        .start_blocking();
    let sb = peer_project(&server, "pi", &pi, "openai");
    let agent = sb.path("pi-agent");
    std::fs::create_dir_all(&agent).unwrap();
    let models = json!({"providers": {"mock": {
        "baseUrl": format!("{}/v1", server.url()),
        "api": "openai-completions",
        "apiKey": "mock",
        "models": [{"id": "mock-model"}],
    }}});
    std::fs::write(agent.join("models.json"), models.to_string()).unwrap();
    let agent = agent.display().to_string();
    let env = [
        ("PI_CODING_AGENT_DIR", agent.as_str()),
        ("PI_OFFLINE", "1"),
        ("PI_SKIP_VERSION_CHECK", "1"),
        ("PI_TELEMETRY", "0"),
    ];
    peer_worker_keeps_its_conversation(&sb, &server, &env, || bodies(&server));
}

#[test]
fn a_claude_worker_resumes_claude_code_s_own_session_between_prompts() {
    let Some(claude) =
        baton_testkit::fixture::find_program("BATON_TEST_CLAUDE", "bench/node_modules/.bin/claude")
    else {
        baton_testkit::fixture::skip_live(
            "claude",
            "BATON_TEST_CLAUDE",
            "run npm ci --prefix bench",
        );
        return;
    };
    // Claude Code's own side requests (titles and the like) get a plain `ok`.
    let is_ours = |r: &baton_testkit::RecordedRequest| {
        r.body.to_string().contains("peer question")
            || r.body.to_string().contains("the first question")
    };
    let server = MockServer::builder()
        .when_once(is_ours, Turn::text("first peer answer"))
        .when_once(is_ours, Turn::text("second peer answer"))
        .when_once(is_ours, Turn::text("third peer answer"))
        .when(|_| true, Turn::text("ok"))
        .start_blocking();
    let sb = peer_project(&server, "claude", &claude, "anthropic");
    let config = sb.home().join(".claude");
    std::fs::create_dir_all(&config).unwrap();
    let url = server.url();
    let config = config.display().to_string();
    let env = [
        ("CLAUDE_CONFIG_DIR", config.as_str()),
        ("ANTHROPIC_BASE_URL", url.as_str()),
        ("ANTHROPIC_API_KEY", "mock"),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
        ("DISABLE_AUTOUPDATER", "1"),
        ("DISABLE_TELEMETRY", "1"),
    ];
    peer_worker_keeps_its_conversation(&sb, &server, &env, || {
        server
            .model_requests()
            .iter()
            .filter(|r| is_ours(r))
            .map(|r| r.body.to_string())
            .collect()
    });
}
