//! Cognitive routing end to end: the built `baton` with `--routing`, a Coordinator and an
//! Executor on two models of the mock server (one script: only one of them works at a time), in
//! each wire format. Asserted on what the models were sent and on disk.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Output;

use baton_testkit::fixture::Sandbox;
use baton_testkit::{MockServer, RecordedRequest, Turn};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

const KINDS: [&str; 3] = ["openai", "openai-responses", "anthropic"];
const COORD: &str = "coord-model";
const EXEC: &str = "exec-model";

/// A project whose `[routing]` puts the Coordinator on `mock/coord-model` and the Executor on
/// `mock/exec-model`.
fn project(server: &MockServer, kind: &str) -> Sandbox {
    Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .mock_provider(
            server,
            kind,
            &format!(
                "\n[retry]\ninitial_delay = \"1ms\"\nmax_delay = \"20ms\"\n\n[routing]\ncoordinator = \"mock/{COORD}\"\nexecutor = \"mock/{EXEC}\"\n"
            ),
        )
}

fn run(p: &Sandbox, args: &[&str]) -> Output {
    let out = p.run(args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    out
}

/// `baton` with `args` in `p`, `input` on its stdin (then closed); it must exit 0.
fn chat(p: &Sandbox, args: &[&str], input: &str) -> Output {
    use std::io::Write;
    let mut c = p
        .baton(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = c.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The conversation items a request sends, without Anthropic's moving cache breakpoints.
fn items(req: &RecordedRequest) -> Vec<Value> {
    req.items()
}

/// Each request of `reqs` sends the previous one's items, unchanged, then new ones.
fn assert_prefix_stable(reqs: &[&RecordedRequest], kind: &str) {
    for w in reqs.windows(2) {
        let (a, b) = (items(w[0]), items(w[1]));
        assert!(b.len() > a.len(), "{kind}: the conversation did not grow");
        assert_eq!(
            &b[..a.len()],
            &a[..],
            "{kind}: a later request changed earlier items"
        );
        assert_eq!(
            w[0].body["tools"], w[1].body["tools"],
            "{kind}: the tools changed"
        );
    }
}

#[test]
fn an_assignment_runs_on_the_executor_and_only_the_selected_evidence_reaches_the_coordinator() {
    for kind in KINDS {
        let server = MockServer::builder()
            .steps(common::investigate_and_fix().into_iter().map(Into::into))
            .start_blocking();
        let p = project(&server, kind);
        let out = run(
            &p,
            &["agent", "--json", "--routing", "auto", "make hello.txt"],
        );
        assert_eq!(
            std::fs::read_to_string(p.work().join("hello.txt")).unwrap(),
            "hi\n",
            "{kind}"
        );
        let reqs = server.model_requests();
        let models: Vec<String> = reqs
            .iter()
            .map(|r| r.model().unwrap_or_default().to_string())
            .collect();
        assert_eq!(
            models,
            [COORD, EXEC, EXEC, EXEC, EXEC, COORD, COORD],
            "{kind}"
        );
        server.assert_tool_results_answer_calls();
        // The Coordinator's second request: its first plus the delegate call and its result,
        // which holds the report and the selected read (with its digest), not the write.
        let coord: Vec<&RecordedRequest> =
            reqs.iter().filter(|r| r.model() == Some(COORD)).collect();
        assert_prefix_stable(&coord, kind);
        let sent = serde_json::to_string(&items(coord[1])).unwrap();
        assert!(sent.contains("hello.txt now holds hi"), "{kind}: {sent}");
        assert!(sent.contains("ctx:t2"), "{kind}: {sent}");
        assert!(sent.contains("sha256"), "{kind}: {sent}");
        assert!(
            !sent.contains("ctx:t1"),
            "{kind}: the write was not selected: {sent}"
        );
        assert!(!sent.contains("\\\"content\\\": \\\"hi"), "{kind}: {sent}");
        // The Coordinator was offered its routing tools, the Executor `return` and `project`.
        let coord_tools = coord[0].offered_tools();
        assert!(
            coord_tools.contains(&"delegate") && coord_tools.contains(&"unit"),
            "{kind}: {coord_tools:?}"
        );
        let exec_tools = reqs[1].offered_tools();
        assert!(
            exec_tools.contains(&"return") && !exec_tools.contains(&"delegate"),
            "{kind}: {exec_tools:?}"
        );
        // The Executor's requests are prefix-stable too, and its tool results name their refs.
        let exec: Vec<&RecordedRequest> = reqs.iter().filter(|r| r.model() == Some(EXEC)).collect();
        assert_prefix_stable(&exec, kind);
        let exec_sent = serde_json::to_string(&items(exec[2])).unwrap();
        assert!(exec_sent.contains("[ref ctx:t2]"), "{kind}: {exec_sent}");
        // The Executor's own words before a call are named too, so it can select them.
        assert!(
            exec_sent.contains("[ref ctx:t1; your message before this call: ctx:m1]"),
            "{kind}: {exec_sent}"
        );
        // The journal records the unit, the assignment, the execution, the report and the close.
        let journal = std::fs::read_dir(p.state_home().join("baton/sessions"))
            .ok()
            .into_iter()
            .flatten()
            .chain(
                std::fs::read_dir(p.work().join(".baton/state/sessions"))
                    .ok()
                    .into_iter()
                    .flatten(),
            )
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "journal"))
            .unwrap_or_else(|| panic!("{kind}: no journal"));
        let types: Vec<String> = std::fs::read_to_string(&journal)
            .unwrap()
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        for t in [
            "control_set",
            "unit_opened",
            "assigned",
            "execution_started",
            "projection_added",
            "report_saved",
            "execution_ended",
            "unit_closed",
        ] {
            assert!(
                types.iter().any(|x| x == t),
                "{kind}: {t} missing from {types:?}"
            );
        }
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("\"routing.recorded\""), "{kind}");
        assert!(stdout.contains("Done: hello.txt holds hi."), "{kind}");
    }
}

/// The session id a `--json` run announced.
fn session_id(stdout: &str) -> String {
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "session.started")
        .and_then(|v| v["session_id"].as_str().map(str::to_string))
        .expect("a session.started event")
}

/// The journal records of the only routed session of `p`.
fn journal(p: &Sandbox) -> Vec<Value> {
    let dir = p.work().join(".baton/state/sessions");
    let path = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "journal"))
        .unwrap_or_else(|| panic!("no journal in {}", dir.display()));
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn last_user_text(req: &RecordedRequest) -> String {
    req.last_user_text().unwrap_or_default()
}

/// `baton chat --json --routing CONTROL --no-wait` in `p`, told to "run the check" (a script's
/// first step being [`held_bash`]), once that call has started: the child and its stdin, to type
/// into while the call waits for `go`.
fn held_chat(p: &Sandbox, control: &str) -> (std::process::Child, std::process::ChildStdin) {
    use std::io::Write;
    let mut child = p
        .baton(&["chat", "--json", "--routing", control, "--no-wait"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "run the check").unwrap();
    assert!(baton_testkit::fixture::wait_until(
        std::time::Duration::from_secs(60),
        || p.work().join("started").exists()
    ));
    (child, stdin)
}

/// A bash call that says it started, then waits for the test's `go` file.
fn held_bash(p: &Sandbox) -> Value {
    let started = p.work().join("started");
    let go = p.work().join("go");
    json!({"command": format!(
        "touch '{}'; i=0; while [ ! -f '{}' ]; do i=$((i+1)); [ $i -gt 6000 ] && exit 7; sleep 0.01; done; echo went",
        started.display(), go.display()
    )})
}

#[test]
fn new_input_interrupts_the_executor_with_a_partial_report_and_resume_continues_it() {
    use std::io::Write;
    let server = MockServer::builder()
        .turn(Turn::tool_call(
            "c1",
            "delegate",
            json!({"operation": "assign", "unit_outcome": "The user's request is done.", "contract": "Run the long check and report."}),
        ))
        .start_blocking();
    let p = project(&server, "openai");
    server.push(Turn::tool_call("e1", "bash", held_bash(&p)));
    // Stopped, the Executor writes its own report in a turn where only `return` runs: its bash
    // call there is not run.
    server.push(
        Turn::tool_call(
            "s1",
            "return",
            json!({"operation": "submit", "report": "The check was still running; it printed went.", "outcome": "partial",
                   "reason": "stopped by new user input", "partial_effects": ["none: the check writes nothing"]}),
        )
        .with_tool_call("s2", "bash", json!({"command": "touch sneaked"})),
    );
    // After the interruption: the Coordinator takes the user's words.
    server.push(Turn::text("Noted; the check was stopped."));
    // /resume: a new execution returns; the Coordinator answers.
    server.push(Turn::tool_call(
        "e2",
        "return",
        json!({"operation": "submit", "report": "The check finished: went.", "outcome": "completed"}),
    ));
    server.push(Turn::text("The check is done."));
    let (child, mut stdin) = held_chat(&p, "auto");
    writeln!(stdin, "stop the check, I changed my mind").unwrap();
    stdin.flush().unwrap();
    // The input is acted on after the running call, which the test now lets finish.
    std::fs::write(p.work().join("go"), "").unwrap();
    assert!(baton_testkit::fixture::wait_until(
        std::time::Duration::from_secs(60),
        || server.model_requests().len() >= 4
    ));
    writeln!(stdin, "/resume").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reqs = server.model_requests();
    let models: Vec<String> = reqs
        .iter()
        .map(|r| r.model().unwrap_or_default().to_string())
        .collect();
    assert_eq!(models, [COORD, EXEC, EXEC, COORD, EXEC, COORD]);
    // The stopped Executor was told why; only its `return` ran.
    assert_eq!(reqs[2].offered_tools(), reqs[1].offered_tools());
    assert!(last_user_text(&reqs[2]).contains("New user input stopped your work"));
    assert!(
        !p.work().join("sneaked").exists(),
        "a call beside the return ran"
    );
    // The Coordinator got the Executor's own partial report, then the user's words.
    let partial = reqs[3].result_of("c1");
    assert!(
        partial.contains("by the Executor after it was stopped"),
        "{partial}"
    );
    assert!(
        partial.contains("Why it returns: stopped by new user input"),
        "{partial}"
    );
    assert!(partial.contains("still outstanding"), "{partial}");
    assert!(last_user_text(&reqs[3]).contains("I changed my mind"));
    // The resumed execution was told so, and its report reached the Coordinator.
    assert!(last_user_text(&reqs[4]).contains("resumed assignment a1"));
    assert!(last_user_text(&reqs[5]).contains("The check finished: went."));
    let ends: Vec<String> = journal(&p)
        .iter()
        .filter(|r| r["type"] == "execution_ended")
        .map(|r| r["how"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ends, ["interrupted", "returned"]);
    server.assert_tool_results_answer_calls();
}

#[test]
fn a_killed_session_recovers_its_assignment_and_resume_finishes_it() {
    use std::io::{BufRead, BufReader};
    let server = MockServer::builder()
        .turn(Turn::tool_call(
            "c1",
            "delegate",
            json!({"operation": "assign", "unit_outcome": "The user's request is done.", "contract": "Run the long check."}),
        ))
        .start_blocking();
    let p = project(&server, "anthropic");
    server.push(Turn::tool_call("e1", "bash", held_bash(&p)));
    let mut child = p
        .baton(&["agent", "--json", "--routing", "auto", "run the check"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut first)
        .unwrap();
    let id = session_id(&first);
    assert!(baton_testkit::fixture::wait_until(
        std::time::Duration::from_secs(60),
        || p.work().join("started").exists()
    ));
    child.kill().unwrap();
    child.wait().unwrap();
    std::fs::write(p.work().join("go"), "").unwrap();
    // Restarted: the lost execution is recorded with a host report, which the Coordinator gets
    // with the next input; /resume runs the assignment again.
    server.push(Turn::text("The check was lost in a crash; resuming it."));
    server.push(Turn::tool_call(
        "e2",
        "return",
        json!({"operation": "submit", "report": "Checked again after the crash: fine.", "outcome": "completed"}),
    ));
    server.push(Turn::text("Recovered and done."));
    let out = p
        .baton(&["chat", "--json", "--resume", &id])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin
                .take()
                .unwrap()
                .write_all(b"what happened?\n/resume\n")?;
            c.wait_with_output()
        })
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let records = journal(&p);
    let ends: Vec<String> = records
        .iter()
        .filter(|r| r["type"] == "execution_ended")
        .map(|r| r["how"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ends, ["lost", "returned"]);
    let lost_report = records
        .iter()
        .find(|r| r["type"] == "report_saved")
        .unwrap();
    assert_eq!(lost_report["report"]["by_host"], true);
    let reqs = server.model_requests();
    assert_eq!(reqs[2].model(), Some(COORD));
    let told = last_user_text(&reqs[2]);
    assert!(
        told.contains("recorded the execution of assignment a1 as lost"),
        "{told}"
    );
    assert!(
        told.contains("partial effects in the workspace were not reviewed"),
        "{told}"
    );
    assert!(told.ends_with("what happened?"), "{told}");
    assert_eq!(reqs[3].model(), Some(EXEC));
    assert!(last_user_text(&reqs[3]).contains("resumed assignment a1"));
    assert_eq!(reqs[4].model(), Some(COORD));
    assert!(last_user_text(&reqs[4]).contains("Checked again after the crash"));
    server.assert_tool_results_answer_calls();
}

#[test]
fn a_manual_hold_lasts_across_a_restart() {
    let server = MockServer::builder()
        .turn(Turn::text("hello from the executor's route"))
        .turn(Turn::text("still the executor"))
        .start_blocking();
    let p = project(&server, "openai-responses");
    let chat = |args: &[&str], input: &str| chat(&p, args, input);
    let out = chat(
        &["chat", "--json", "--routing", "auto"],
        "/profile executor\nhi\n",
    );
    let id = session_id(&String::from_utf8_lossy(&out.stdout));
    chat(&["chat", "--json", "--resume", &id], "again\n");
    let reqs = server.model_requests();
    assert_eq!(reqs[0].model(), Some(EXEC));
    assert_eq!(reqs[1].model(), Some(EXEC), "the hold survived the restart");
    // A manual session is ordinary, and the host's Runtime State block says so.
    let again = last_user_text(&reqs[1]);
    assert!(again.ends_with("\n\nagain"), "{again}");
    assert!(
        again.contains("control: manual (executor)") && again.contains("routing does not apply"),
        "{again}"
    );
    let controls: Vec<Value> = journal(&p)
        .into_iter()
        .filter(|r| r["type"] == "control_set")
        .map(|r| r["control"].clone())
        .collect();
    assert_eq!(
        controls,
        [
            json!({"mode": "automatic"}),
            json!({"mode": "manual", "profile": "executor"})
        ]
    );
}

#[test]
fn the_coordinator_acts_only_through_act_bounded_run_inside_an_open_scope() {
    let server = MockServer::builder()
        // A skill file is instructional: read without a scope.
        .turn(Turn::tool_call(
            "c1",
            "read",
            json!({"path": ".baton/skills/style/SKILL.md"}),
        ))
        // Any other read, or a run before a scope is open, is refused; nothing runs.
        .turn(Turn::tool_call("c2", "read", json!({"path": "notes.txt"})))
        .turn(Turn::tool_call(
            "c3",
            "act_bounded",
            json!({"operation": "run", "tool": "bash", "arguments": {"command": "touch early"}}),
        ))
        .turn(Turn::tool_call(
            "c4",
            "act_bounded",
            json!({"operation": "open", "scope": "write acted.txt", "expected_result": "the file exists",
                   "authority": "the user asked", "stop_condition": "after one command",
                   "inseparable": "the check is the judgment", "delegation_loss": "a contract would hold the answer"}),
        ))
        .turn(Turn::tool_call(
            "c5",
            "act_bounded",
            json!({"operation": "run", "tool": "bash", "arguments": {"command": "echo acted > acted.txt; cat notes.txt"}}),
        ))
        // Closed at its stop condition: the next run is refused again.
        .turn(Turn::tool_call(
            "c6",
            "act_bounded",
            json!({"operation": "close", "result": "acted.txt written"}),
        ))
        .turn(Turn::tool_call(
            "c7",
            "act_bounded",
            json!({"operation": "run", "tool": "bash", "arguments": {"command": "touch late"}}),
        ))
        .turn(Turn::text("Done."))
        .start_blocking();
    let p = project(&server, "openai");
    p.write(".baton/skills/style/SKILL.md", "Write short sentences.\n");
    p.write("notes.txt", "the notes\n");
    run(
        &p,
        &["agent", "--json", "--routing", "auto", "act yourself"],
    );
    assert!(!p.work().join("early").exists());
    assert_eq!(
        std::fs::read_to_string(p.work().join("acted.txt")).unwrap(),
        "acted\n"
    );
    let reqs = server.model_requests();
    assert!(reqs.iter().all(|r| r.model() == Some(COORD)));
    assert!(reqs[1].result_of("c1").contains("Write short sentences."));
    let refused = reqs[2].result_of("c2");
    assert!(refused.contains("coordinator-environment"), "{refused}");
    let refused = reqs[3].result_of("c3");
    assert!(refused.contains("coordinator-environment"), "{refused}");
    assert!(reqs[5].result_of("c5").contains("the notes"));
    let refused = reqs[7].result_of("c7");
    assert!(refused.contains("coordinator-environment"), "{refused}");
    assert!(!p.work().join("late").exists());
    let closes: Vec<String> = journal(&p)
        .iter()
        .filter(|r| r["type"] == "act_bounded_closed")
        .map(|r| r["reason"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(closes, ["its stop condition: acted.txt written"]);
    // Offered: `read` and the routing tools; the other environment tools run through
    // `act_bounded run`, and the prompt does not describe the delegation tools it lacks.
    let mut offered = reqs[0].offered_tools();
    offered.sort_unstable();
    assert_eq!(offered, ["act_bounded", "delegate", "read", "unit"]);
    let sent = reqs[0].body.to_string();
    assert!(!sent.contains("delegate_flow"), "{sent}");
    assert_prefix_stable(&reqs.iter().collect::<Vec<_>>(), "openai");
    server.assert_tool_results_answer_calls();
}

#[test]
fn a_manual_hold_on_the_coordinator_is_an_ordinary_session_with_every_tool() {
    let server = MockServer::builder()
        .turn(Turn::tool_call(
            "c1",
            "bash",
            json!({"command": "echo held > held.txt"}),
        ))
        .turn(Turn::text("Wrote held.txt."))
        .start_blocking();
    let p = project(&server, "openai");
    chat(
        &p,
        &["chat", "--json", "--routing", "coordinator"],
        "write held.txt\n",
    );
    assert_eq!(
        std::fs::read_to_string(p.work().join("held.txt")).unwrap(),
        "held\n"
    );
    let reqs = server.model_requests();
    assert_eq!(reqs[0].model(), Some(COORD));
    let offered = reqs[0].offered_tools();
    for t in ["bash", "edit", "write", "read"] {
        assert!(offered.contains(&t), "{t} not offered: {offered:?}");
    }
    assert!(!reqs[1].result_of("c1").contains("coordinator-environment"));
}

#[test]
fn new_user_input_ends_the_coordinators_act_bounded_scope() {
    let server = MockServer::builder()
        .turn(Turn::tool_call(
            "c1",
            "act_bounded",
            json!({"operation": "open", "scope": "look at the folder", "expected_result": "a listing",
                   "authority": "the user asked", "stop_condition": "after one listing",
                   "inseparable": "the listing is the answer", "delegation_loss": "a round trip"}),
        ))
        .turn(Turn::text("Scope open."))
        // The next input ended the scope: this run is refused and nothing runs.
        .turn(Turn::tool_call(
            "c2",
            "act_bounded",
            json!({"operation": "run", "tool": "bash", "arguments": {"command": "touch late"}}),
        ))
        .turn(Turn::text("I will delegate instead."))
        .start_blocking();
    let p = project(&server, "anthropic");
    chat(
        &p,
        &["chat", "--json", "--routing", "auto"],
        "look yourself\nnow touch late\n",
    );
    assert!(!p.work().join("late").exists());
    let reqs = server.model_requests();
    let refused = reqs[3].result_of("c2");
    assert!(refused.contains("coordinator-environment"), "{refused}");
    let closes: Vec<String> = journal(&p)
        .iter()
        .filter(|r| r["type"] == "act_bounded_closed")
        .map(|r| r["reason"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(closes, ["new user input"]);
}

/// Each process numbers its turns, calls and items from the start again; the journal must still
/// take every process's changes of control (none is mistaken for an earlier one's).
#[test]
fn controls_set_in_later_processes_are_all_recorded() {
    let server = MockServer::builder()
        .turn(Turn::text("one, on the executor's route"))
        .turn(Turn::text("two, automatic: the coordinator"))
        .turn(Turn::text("three, on the executor's route again"))
        .turn(Turn::text("four, held on the coordinator by --routing"))
        .turn(Turn::tool_call(
            "c1",
            "bash",
            json!({"command": "echo off > off.txt"}),
        ))
        .turn(Turn::text("five, routing off: an ordinary session"))
        .start_blocking();
    let p = project(&server, "openai");
    let chat = |args: &[&str], input: &str| chat(&p, args, input);
    let out = chat(
        &["chat", "--json", "--routing", "auto"],
        "/profile executor\none\n",
    );
    let id = session_id(&String::from_utf8_lossy(&out.stdout));
    chat(&["chat", "--json", "--resume", &id], "/profile auto\ntwo\n");
    chat(
        &["chat", "--json", "--resume", &id],
        "/profile executor\nthree\n",
    );
    chat(
        &[
            "chat",
            "--json",
            "--resume",
            &id,
            "--routing",
            "coordinator",
        ],
        "four\n",
    );
    chat(
        &["chat", "--json", "--resume", &id, "--routing", "off"],
        "five\n",
    );
    let reqs = server.model_requests();
    let models: Vec<String> = reqs
        .iter()
        .map(|r| r.model().unwrap_or_default().to_string())
        .collect();
    assert_eq!(models, [EXEC, COORD, EXEC, COORD, COORD, COORD]);
    // With routing off the Coordinator's seat is an ordinary session: bash by schema, and it ran.
    assert!(reqs[4].offered_tools().contains(&"bash"));
    assert_eq!(
        std::fs::read_to_string(p.work().join("off.txt")).unwrap(),
        "off\n"
    );
    let controls: Vec<Value> = journal(&p)
        .into_iter()
        .filter(|r| r["type"] == "control_set")
        .map(|r| r["control"].clone())
        .collect();
    assert_eq!(
        controls,
        [
            json!({"mode": "automatic"}),
            json!({"mode": "manual", "profile": "executor"}),
            json!({"mode": "automatic"}),
            json!({"mode": "manual", "profile": "executor"}),
            json!({"mode": "manual", "profile": "coordinator"}),
            json!({"mode": "inactive"}),
        ]
    );
}

/// Under a manual hold the Executor's seat is an ordinary session: input typed while it works
/// joins its conversation after the running call, and nothing is stopped.
#[test]
fn input_joins_a_held_executor_instead_of_stopping_it() {
    use std::io::Write;
    let server = MockServer::builder().start_blocking();
    let p = project(&server, "openai");
    // Two calls in one turn: the input arrives during the first; the second still runs.
    server.push(Turn::tool_call("e1", "bash", held_bash(&p)).with_tool_call(
        "e2",
        "bash",
        json!({"command": "echo second > second.txt"}),
    ));
    server.push(Turn::text("Seen: the check went, and your note."));
    let (child, mut stdin) = held_chat(&p, "executor");
    writeln!(stdin, "also note the time").unwrap();
    stdin.flush().unwrap();
    std::fs::write(p.work().join("go"), "").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reqs = server.model_requests();
    assert_eq!(reqs.len(), 2, "one task, its input joined");
    assert!(reqs.iter().all(|r| r.model() == Some(EXEC)));
    assert!(reqs[1].result_of("e1").contains("went"));
    let second = reqs[1].result_of("e2");
    assert!(!second.contains("not run"), "{second}");
    assert_eq!(
        std::fs::read_to_string(p.work().join("second.txt")).unwrap(),
        "second\n"
    );
    assert!(last_user_text(&reqs[1]).ends_with("\n\nalso note the time"));
    assert!(journal(&p).iter().all(|r| r["type"] != "execution_started"));
}

/// seed 000: a report never rides along with new work whose outcome it has not seen. An Executor
/// turn of `[bash, return]` runs the command and refuses the return; the next turn returns.
#[test]
fn a_return_in_the_same_turn_as_new_work_is_refused_and_the_work_runs() {
    let server = MockServer::builder()
        .steps(
            vec![
                Turn::tool_call(
                    "c1",
                    "delegate",
                    json!({"operation": "assign", "unit_outcome": "The user's request is done.", "contract": "Create done.txt and report."}),
                ),
                Turn::tool_call("e1", "bash", json!({"command": "echo ok > done.txt && echo made"}))
                    .with_tool_call(
                        "e2",
                        "return",
                        json!({"operation": "submit", "report": "done.txt exists.", "outcome": "completed"}),
                    ),
                Turn::tool_call(
                    "e3",
                    "return",
                    json!({"operation": "submit", "report": "done.txt exists: the command printed made.", "outcome": "completed"}),
                ),
                Turn::tool_call(
                    "c2",
                    "unit",
                    json!({"operation": "close", "outcome": "accepted", "assessment": "reported"}),
                ),
                Turn::text("Done."),
            ]
            .into_iter()
            .map(Into::into),
        )
        .start_blocking();
    let p = project(&server, "openai");
    run(&p, &["agent", "--routing", "auto", "make done.txt"]);
    assert!(p.work().join("done.txt").is_file(), "the work ran");
    let requests = server.model_requests();
    let refused = requests
        .iter()
        .flat_map(|r| r.tool_results())
        .find(|t| t.text.contains("return refused"))
        .expect("the combined return was refused");
    assert!(
        refused.text.contains("this turn also runs new work (bash)"),
        "{}",
        refused.text
    );
}

/// `/interrupt` is not new input: it stops the Executor (whose partial report is saved) and then
/// the whole task — the Coordinator is not woken to carry on (seed 000: stopping is immediate).
#[test]
fn interrupt_stops_the_executor_and_the_task_without_waking_the_coordinator() {
    use std::io::Write;
    let server = MockServer::builder()
        .turn(Turn::tool_call(
            "c1",
            "delegate",
            json!({"operation": "assign", "unit_outcome": "The user's request is done.", "contract": "Run the long check and report."}),
        ))
        .start_blocking();
    let p = project(&server, "openai");
    server.push(Turn::tool_call("e1", "bash", held_bash(&p)));
    let (child, mut stdin) = held_chat(&p, "auto");
    writeln!(stdin, "/interrupt").unwrap();
    stdin.flush().unwrap();
    std::fs::write(p.work().join("go"), "").unwrap();
    let ended = || {
        journal(&p)
            .iter()
            .any(|r| r["type"] == "execution_ended" && r["how"] == "interrupted")
    };
    assert!(baton_testkit::fixture::wait_until(
        std::time::Duration::from_secs(60),
        ended
    ));
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    // The task ended interrupted: the session exits 130, as a stopped task does.
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Coordinator, Executor — and no third request: nobody told the Coordinator to go on.
    let models: Vec<String> = server
        .model_requests()
        .iter()
        .map(|r| r.model().unwrap_or_default().to_string())
        .collect();
    assert_eq!(models, [COORD, EXEC]);
}

/// With projection off there is nothing to select: the Executor is not offered `project`, a
/// call to it anyway is refused saying so, and the Coordinator gets the assignment's evidence
/// unfiltered, each piece labelled with the call that produced it (seed 000:36, 372, 378).
#[test]
fn with_projection_off_the_executor_is_not_offered_project() {
    let server = MockServer::builder()
        .steps(
            vec![
                Turn::tool_call(
                    "c1",
                    "delegate",
                    json!({"operation": "assign", "unit_outcome": "The user's request is done.", "contract": "Say hello."}),
                ),
                Turn::tool_call("e0", "bash", json!({"command": "echo unfiltered-hello"})),
                Turn::tool_call(
                    "e1",
                    "project",
                    json!({"operation": "add", "refs": ["ctx:t1"]}),
                ),
                Turn::tool_call(
                    "e2",
                    "return",
                    json!({"operation": "submit", "report": "hello", "outcome": "completed"}),
                ),
                Turn::tool_call(
                    "c2",
                    "unit",
                    json!({"operation": "close", "outcome": "accepted", "assessment": "said"}),
                ),
                Turn::text("Done."),
            ]
            .into_iter()
            .map(Into::into),
        )
        .start_blocking();
    let p = Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .mock_provider(
            &server,
            "openai",
            &format!("\n[routing]\ncoordinator = \"mock/{COORD}\"\nexecutor = \"mock/{EXEC}\"\nprojection = false\n"),
        );
    run(&p, &["agent", "--routing", "auto", "say hello"]);
    let requests = server.model_requests();
    let exec = requests
        .iter()
        .find(|r| r.model() == Some(EXEC))
        .expect("an Executor request");
    let offered = exec.offered_tools();
    assert!(
        offered.contains(&"return") && !offered.contains(&"project"),
        "{offered:?}"
    );
    let refused = requests
        .iter()
        .flat_map(|r| r.tool_results())
        .find(|t| t.text.contains("projection is off in this session"))
        .expect("the project call was refused");
    assert!(
        refused.text.contains("nothing to select"),
        "{}",
        refused.text
    );
    let report = requests
        .iter()
        .rev()
        .find(|r| r.model() == Some(COORD))
        .unwrap()
        .result_of("c1");
    for want in [
        "The Executor's evidence (projection off: unfiltered)",
        "<evidence ref=\"ctx:t1\" of=\"bash `echo unfiltered-hello`\"",
        "unfiltered-hello\n",
        "projection: off",
    ] {
        assert!(report.contains(want), "{want} missing:\n{report}");
    }
}

/// seed 000:33-35, 441: a manual hold is the ordinary session over the shared conversation. The
/// held Executor gets no routing prompt, tools or `[ref]` lines, and is told what the user and
/// the Coordinator said; once the hold is released, the Coordinator is told what was asked and
/// done under it — but not the Executor's assignment work, which reached it as a report.
#[test]
fn a_hold_shares_the_conversation_both_ways() {
    let server = MockServer::builder()
        .turn(Turn::tool_call(
            "c1",
            "delegate",
            json!({"operation": "assign", "unit_outcome": "The user's request is done.", "contract": "Write a.txt holding a."}),
        ))
        .turn(Turn::tool_call(
            "e1",
            "bash",
            json!({"command": "echo a > a.txt"}),
        ))
        .turn(Turn::tool_call(
            "e2",
            "return",
            json!({"operation": "submit", "report": "a.txt holds a.", "outcome": "completed"}),
        ))
        .turn(Turn::text("A is done."))
        .turn(Turn::tool_call(
            "h1",
            "bash",
            json!({"command": "echo b > b.txt"}),
        ))
        .turn(Turn::text("did B"))
        .turn(Turn::text("B was done under your hold."))
        .start_blocking();
    let p = project(&server, "anthropic");
    chat(
        &p,
        &["chat", "--json", "--routing", "auto"],
        "make A\n/profile executor\nnow do B\n/profile auto\nwhat happened?\n",
    );
    assert_eq!(
        std::fs::read_to_string(p.work().join("b.txt")).unwrap(),
        "b\n"
    );
    let reqs = server.model_requests();
    assert_eq!(reqs.len(), 7);
    let held = &reqs[4];
    assert_eq!(held.model(), Some(EXEC));
    let offered = held.offered_tools();
    for t in ["return", "project", "delegate"] {
        assert!(
            !offered.contains(&t),
            "{t} offered under a hold: {offered:?}"
        );
    }
    let body = held.body.to_string();
    assert!(
        !body.contains("Cognitive routing"),
        "the routing prompt stayed"
    );
    assert!(!body.contains("[ref ctx:"), "reference lines stayed");
    let told = last_user_text(held);
    for want in [
        "control: manual (executor)",
        "user (to the coordinator): make A",
        "coordinator ran delegate assign",
        "coordinator: A is done.",
    ] {
        assert!(told.contains(want), "{want} missing:\n{told}");
    }
    assert!(told.ends_with("\n\nnow do B"), "{told}");
    let released = last_user_text(&reqs[6]);
    assert_eq!(reqs[6].model(), Some(COORD));
    for want in [
        "control: automatic",
        "user (to the executor): now do B",
        "executor ran bash `echo b > b.txt`",
        "executor: did B",
    ] {
        assert!(released.contains(want), "{want} missing:\n{released}");
    }
    assert!(
        !released.contains("echo a > a.txt"),
        "assignment work leaked:\n{released}"
    );
    assert!(released.ends_with("\n\nwhat happened?"), "{released}");
}

/// seed 000:473: an `act_bounded` scope ends when its applicability changes — a `/profile`.
#[test]
fn a_control_change_ends_the_coordinators_act_bounded_scope() {
    let server = MockServer::builder()
        .turn(Turn::tool_call(
            "c1",
            "act_bounded",
            json!({"operation": "open", "scope": "look at the folder", "expected_result": "a listing",
                   "authority": "the user asked", "stop_condition": "after one listing",
                   "inseparable": "the listing is the answer", "delegation_loss": "a round trip"}),
        ))
        .turn(Turn::text("Scope open."))
        .turn(Turn::text("Held."))
        .start_blocking();
    let p = project(&server, "openai");
    chat(
        &p,
        &["chat", "--json", "--routing", "auto"],
        "look yourself\n/profile coordinator\nhi\n",
    );
    let closes: Vec<String> = journal(&p)
        .iter()
        .filter(|r| r["type"] == "act_bounded_closed")
        .map(|r| r["reason"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(closes, ["the control changed"]);
    // The scope is gone from the host's block after the change.
    let reqs = server.model_requests();
    let held = last_user_text(&reqs[2]);
    assert!(!held.contains("act_bounded:"), "{held}");
}

/// seed 000:206, seed 003:278: a `/profile` typed while a seat works takes effect at the next
/// safe boundary (the end of the running call's turn), not after the whole task: the held
/// Executor stops there, and the next input goes to the newly held Coordinator.
#[test]
fn a_profile_change_mid_task_takes_effect_at_the_next_safe_boundary() {
    use std::io::Write;
    let server = MockServer::builder().start_blocking();
    let p = project(&server, "openai");
    server.push(Turn::tool_call("e1", "bash", held_bash(&p)));
    server.push(Turn::text("coordinator here"));
    let (child, mut stdin) = held_chat(&p, "executor");
    writeln!(stdin, "/profile coordinator").unwrap();
    writeln!(stdin, "hi").unwrap();
    stdin.flush().unwrap();
    std::fs::write(p.work().join("go"), "").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reqs = server.model_requests();
    let models: Vec<&str> = reqs.iter().map(|r| r.model().unwrap_or_default()).collect();
    assert_eq!(
        models,
        [EXEC, COORD],
        "the Executor went on after the change"
    );
    let told = last_user_text(&reqs[1]);
    assert!(told.contains("control: manual (coordinator)"), "{told}");
    assert!(told.ends_with("\n\nhi"), "{told}");
    let controls: Vec<Value> = journal(&p)
        .into_iter()
        .filter(|r| r["type"] == "control_set")
        .map(|r| r["control"].clone())
        .collect();
    assert_eq!(
        controls,
        [
            json!({"mode": "manual", "profile": "executor"}),
            json!({"mode": "manual", "profile": "coordinator"})
        ]
    );
}

/// [14/18] the first hour: the summary of a routed session says which route was the
/// Coordinator's and which the Executor's (in text and in `session.completed`).
#[test]
fn the_summary_names_each_participants_route() {
    let server = MockServer::builder()
        .steps(common::investigate_and_fix().into_iter().map(Into::into))
        .start_blocking();
    let p = project(&server, "openai");
    let out = run(&p, &["agent", "--routing", "auto", "make hello.txt"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "· coordinator mock/{COORD} (3 turns, $0.0000), executor mock/{EXEC} (4 turns, $0.0000)"
        )),
        "{err}"
    );
    let server = MockServer::builder()
        .steps(common::investigate_and_fix().into_iter().map(Into::into))
        .start_blocking();
    let p = project(&server, "openai");
    let out = run(
        &p,
        &["agent", "--json", "--routing", "auto", "make hello.txt"],
    );
    let done: Value = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "session.completed")
        .unwrap();
    let seats: Vec<(&str, &str)> = done["routes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["seat"].as_str().unwrap(), r["model"].as_str().unwrap()))
        .collect();
    assert_eq!(
        seats,
        [
            ("coordinator", "mock/coord-model"),
            ("executor", "mock/exec-model")
        ]
    );
}

/// `/resume` with nothing to resume says so (it printed nothing), names what it is for, and asks
/// no model; under a manual hold it says to switch back first; an ordinary session says it is
/// not routed.
#[test]
fn resume_with_nothing_to_resume_says_why_and_runs_nothing() {
    let server = MockServer::builder()
        .turn(Turn::text("hello"))
        .turn(Turn::text("hello again"))
        .start_blocking();
    let p = project(&server, "openai-responses");
    let out = chat(&p, &["chat", "--routing", "auto"], "hi\n/resume\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("/resume: no assignment was interrupted: nothing to resume"),
        "{err}"
    );
    assert_eq!(server.model_requests().len(), 1, "/resume asked a model");
    let out = chat(&p, &["chat", "--json", "--routing", "auto"], "/resume\n");
    let refused: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "input.refused")
        .collect();
    assert_eq!(refused.len(), 1, "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(refused[0]["input"], "/resume");
    let model = format!("mock/{EXEC}");
    let out = chat(&p, &["chat", "--model", &model], "hi\n/resume\n");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("this session is not routed"), "{err}");
}
