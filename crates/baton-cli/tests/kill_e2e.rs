//! Nothing baton starts outlives it: children, grandchildren and descendants that left their
//! process group (`setsid`, double fork) die with a finished command, and within a second of
//! baton, a foreground `baton task` or a background supervisor being killed with SIGKILL.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Child;
use std::time::Duration;

use baton_testkit::fixture::{assert_exit, wait_until, Sandbox};
use baton_testkit::{MockServer, Turn};
use serde_json::{json, Value};

/// Starts a grandchild in the group, one that double-forked out of its parent, and one that
/// left the group and the session with `setsid`; writes their pids to `pids/`, then waits.
const RUNAWAY: &str = r#"mkdir -p pids
sleep 300 & echo $! > pids/grandchild
( sleep 301 & echo $! > pids/doublefork )
setsid -f sh -c 'echo $$ > pids/escaped.tmp; mv pids/escaped.tmp pids/escaped; exec sleep 302'
echo $$ > pids/child
wait"#;

const PIDS: [&str; 4] = ["child", "grandchild", "doublefork", "escaped"];

fn project(config: &str) -> Sandbox {
    Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .baton_config(config)
        .env("MOCK_API_KEY", "k")
}

fn runaway_role(p: &Sandbox) {
    p.write(
        ".baton/roles/runaway.md",
        &format!(
            "---\nname: runaway\ndescription: leaves processes behind\ntools: []\nbackend: command\ncommand: [sh, -c, {}]\n---\nRun.\n",
            serde_json::to_string(RUNAWAY).unwrap()
        ),
    );
}

/// Waits for every pid file of `names` under `dir` and returns the pids.
fn pids(dir: &Path, names: &[&str]) -> Vec<(String, u32)> {
    assert!(
        wait_until(Duration::from_secs(30), || names.iter().all(|n| {
            std::fs::read_to_string(dir.join(n)).is_ok_and(|s| s.ends_with('\n'))
        })),
        "the command did not start all its processes"
    );
    names
        .iter()
        .map(|n| {
            let text = std::fs::read_to_string(dir.join(n)).unwrap();
            (n.to_string(), text.trim().parse().unwrap())
        })
        .collect()
}

fn assert_all_dead_within_a_second(pids: &[(String, u32)], what: &str) {
    for (name, pid) in pids {
        assert!(
            wait_until(Duration::from_secs(1), || !baton_process::alive(*pid)),
            "{name} (pid {pid}) outlived {what} by more than 1 s"
        );
    }
}

fn sigkill(child: &mut Child) {
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn a_sigkilled_foreground_task_leaves_nothing_running() {
    let p = project("");
    runaway_role(&p);
    let mut baton = p.spawn(&["task", "--role", "runaway", "--name", "r", "go"]);
    let pids = pids(&p.work().join("pids"), &PIDS);
    for (name, pid) in &pids {
        assert!(baton_process::alive(*pid), "{name} is not running yet");
    }
    sigkill(&mut baton);
    assert_all_dead_within_a_second(&pids, "a SIGKILLed `baton task`");

    // The killed run could not remove its frozen-roles folder; the next run does.
    let roles = p.work().join(".baton/state/roles");
    let left = || std::fs::read_dir(&roles).map_or(0, |d| d.count());
    assert_eq!(left(), 1);
    p.write(
        ".baton/roles/quick.md",
        "---\nname: quick\ndescription: q\ntools: []\nbackend: command\ncommand: [echo, ok]\n---\nRun.\n",
    );
    let out = p.run(&["task", "--role", "quick", "--name", "q", "go"]);
    assert_exit(&out, 0);
    assert_eq!(left(), 0, "the killed run's frozen roles are still there");
}

#[test]
fn a_sigkilled_background_supervisor_leaves_nothing_running_and_status_says_so() {
    let p = project("");
    runaway_role(&p);
    let out = p.run(&[
        "task",
        "--background",
        "--role",
        "runaway",
        "--name",
        "r",
        "go",
    ]);
    assert_exit(&out, 0);
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let pids = pids(&p.work().join("pids"), &PIDS);
    let status: Value =
        serde_json::from_slice(&p.run(&["task", "status", &id, "--json"]).stdout).unwrap();
    let supervisor = u32::try_from(status["pid"].as_u64().unwrap()).unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(supervisor).unwrap()),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    assert_all_dead_within_a_second(&pids, "its SIGKILLed supervisor");

    // The guard itself exits right after its sweep: within the same second.
    let mut text = String::new();
    let settled = wait_until(Duration::from_secs(1), || {
        let out = p.run(&["task", "status", &id]);
        text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.contains("nothing of it runs")
    });
    assert!(settled, "{text}");
    assert!(text.contains("interrupted"), "{text}");
    assert!(text.contains("r (runaway): interrupted"), "{text}");
    assert!(text.contains("nothing of it runs"), "{text}");
    assert!(!text.contains("unknown"), "{text}");
    let out = p.run(&["task", "cancel", &id]);
    assert_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("interrupted") && text.contains("nothing runs"),
        "{text}"
    );
}

/// The mock answers with one `bash` call running `command`, then a final text.
fn agent_project(command: &str) -> (MockServer, Sandbox) {
    let server = MockServer::builder()
        .turn(Turn::tool_call(
            "call_b",
            "bash",
            json!({ "command": command }),
        ))
        .turn(Turn::text("Done."))
        .start_blocking();
    let p = Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .mock_provider(&server, "openai", "");
    (server, p)
}

#[test]
fn what_a_bash_command_leaves_running_is_killed_when_it_finishes() {
    // With `baton-guard` beside `baton`, and with a lone `baton` that guards as `baton __guard`.
    let lone = tempfile::tempdir().unwrap();
    let lone_baton = lone.path().join("baton");
    if std::fs::hard_link(env!("CARGO_BIN_EXE_baton"), &lone_baton).is_err() {
        std::fs::copy(env!("CARGO_BIN_EXE_baton"), &lone_baton).unwrap();
    }
    assert!(Path::new(env!("CARGO_BIN_EXE_baton"))
        .with_file_name("baton-guard")
        .is_file());
    for exe in [Path::new(env!("CARGO_BIN_EXE_baton")), lone_baton.as_path()] {
        leftovers_are_killed(exe);
    }
}

fn leftovers_are_killed(exe: &Path) {
    let (server, p) = agent_project(
        "mkdir -p pids; setsid -f sh -c 'echo $$ > pids/e.tmp; mv pids/e.tmp pids/escaped; exec sleep 300'; \
         ( sleep 301 & echo $! > pids/doublefork ); while [ ! -f pids/escaped ]; do sleep 0.01; done; echo started",
    );
    let p = p.baton_exe(exe);
    let out = p.run(&["agent", "--json", "--model", "mock/m", "start a server"]);
    assert_exit(&out, 0);
    let pids = pids(&p.work().join("pids"), &["escaped", "doublefork"]);
    assert_all_dead_within_a_second(&pids, "the bash call that started it");
    let requests = server.model_requests();
    let result = &requests.last().unwrap().tool_results()[0].text;
    assert!(result.contains("started"), "{result}");
    assert!(
        result.contains(baton_process::guard::LEFTOVER_NOTE),
        "{result}"
    );
    server.assert_tool_results_answer_calls();
}

#[test]
fn a_sigkilled_agent_takes_its_running_command_with_it() {
    let (_server, p) = agent_project(RUNAWAY);
    let mut baton = p.spawn(&["agent", "--json", "--model", "mock/m", "run"]);
    let pids = pids(&p.work().join("pids"), &PIDS);
    sigkill(&mut baton);
    assert_all_dead_within_a_second(&pids, "a SIGKILLed `baton agent`");
}
