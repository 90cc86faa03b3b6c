//! `baton flow` end to end: the real binary, a temp repository, `command`-backend implementer and
//! reviewer scripts, and an isolated HOME / XDG_CONFIG_HOME / XDG_STATE_HOME for every child.
//! Processes are killed with the `BATON_FLOW_CRASH_AT` test hook (SIGKILL right after an event is
//! durable); nothing waits on time except for files the children create.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use baton_testkit::fixture::{assert_exit, wait_until, FlowRoles, Sandbox, COMMIT_OWN_FILE};
use pretty_assertions::assert_eq;
use serde_json::Value;

/// A repository with the test's implementer and reviewer scripts; one subagent at a time.
struct Fx {
    sb: Sandbox,
    roles: FlowRoles,
}

impl Fx {
    fn new() -> Fx {
        let sb = Sandbox::new()
            .baton_exe(env!("CARGO_BIN_EXE_baton"))
            .env("BATON_MAX_SUBAGENTS", "1");
        sb.init_repo("main");
        sb.write("README", "hello\n");
        let roles = FlowRoles::install(&sb);
        sb.commit_all("initial");
        Fx { sb, roles }
    }

    fn units(&self, json: &str) -> String {
        let p = self.sb.path("units.json");
        std::fs::write(&p, json).unwrap();
        p.display().to_string()
    }

    fn subjects(&self) -> Vec<String> {
        self.sb.subjects("main")
    }
}

fn units_ab(review_b: bool) -> String {
    let review = if review_b {
        r#", "review": "b.txt says b""#
    } else {
        ""
    };
    format!(
        r#"{{"units": [
  {{"id": "a", "name": "Add a", "task": "Add a.txt", "validation": [{{"command": "test", "args": ["-f", "a.txt"]}}]}},
  {{"id": "b", "name": "Add b", "task": "Add b.txt", "validation": [{{"command": "test", "args": ["-f", "b.txt"]}}]{review}}}
]}}"#
    )
}

fn json_lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn report(out: &Output) -> Value {
    json_lines(out)
        .into_iter()
        .rev()
        .find(|v| v["type"] == "flow.report")
        .unwrap_or_else(|| {
            panic!(
                "no report: {}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        })
}

fn phase(fx: &Fx) -> String {
    let out = fx.sb.run(&["flow", "status", "--json"]);
    assert!(out.status.success());
    let all = json_lines(&out);
    all.last().unwrap()["flow"]["phase"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn start_integrates_and_status_reads_it_from_another_process() {
    let fx = Fx::new();
    let units = fx.units(&units_ab(true));
    let out = fx.sb.run(&["flow", "start", &units, "--json"]);
    assert_exit(&out, 0);
    let r = report(&out);
    assert_eq!(r["flow"]["phase"], "completed");
    let events: Vec<String> = json_lines(&out)
        .iter()
        .filter_map(|v| v["type"].as_str().map(str::to_string))
        .collect();
    assert_eq!(events.first().map(String::as_str), Some("flow.created"));
    assert!(events.contains(&"unit.reviewed".to_string()));
    assert_eq!(fx.subjects(), ["unit b", "unit a", "initial"]);
    assert_eq!(fx.sb.worktrees().len(), 0);
    // The worktrees lived under XDG_STATE_HOME, outside the repository.
    let wt = r["flow"]["units"][0]["path"].as_str().unwrap();
    assert!(
        Path::new(wt).starts_with(fx.sb.state_home().join("baton/worktrees")),
        "{wt}"
    );

    assert_eq!(phase(&fx), "completed");
    let text = fx.sb.run(&["flow", "status"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("completed") && text.contains("integrated"),
        "{text}"
    );
    // State is excluded from git, so Main stays clean.
    assert_eq!(fx.sb.git(&["status", "--porcelain"]), "");
}

#[test]
fn unreadable_state_is_a_runtime_failure_and_an_unknown_flow_is_refused() {
    let fx = Fx::new();
    // A log whose first line is not an event: the state is damaged, the request was fine.
    fx.sb.write(
        ".baton/state/flows/f-damaged.events.jsonl",
        "not an event\n{\"also\": \"bad\"}\n",
    );
    for cmd in [
        vec!["flow", "abandon", "f-damaged"],
        vec!["flow", "status", "f-damaged"],
    ] {
        let out = fx.sb.run(&cmd);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{cmd:?}: {err}");
        assert!(err.contains("line 1 cannot be read"), "{cmd:?}: {err}");
        let mut json = cmd.clone();
        json.push("--json");
        let lines = json_lines(&fx.sb.run(&json));
        assert_eq!(lines.last().unwrap()["type"], "flow.error", "{lines:?}");
    }
    for cmd in [
        vec!["flow", "abandon", "f-none"],
        vec!["flow", "status", "f-none"],
        vec!["flow", "status", "../x"],
    ] {
        let out = fx.sb.run(&cmd);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{cmd:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn bad_input_is_refused_with_the_field_and_changes_nothing() {
    let fx = Fx::new();
    let units = fx.units(r#"{"units": [{"id": "a", "name": "A", "task": "x", "validation": []}]}"#);
    let out = fx.sb.run(&["flow", "start", &units]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("units[0].validation"), "{err}");
    assert!(!fx.sb.work().join(".baton/state/flows").exists());
    assert_eq!(fx.roles.calls(), Vec::<String>::new());
}

#[test]
fn a_block_pauses_then_continue_repairs_and_a_second_flow_is_refused_meanwhile() {
    let fx = Fx::new();
    std::fs::write(
        fx.roles.dir().join("impl-b-0.sh"),
        "echo 'no idea' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::write(fx.roles.dir().join("impl-b-1.sh"), COMMIT_OWN_FILE).unwrap();
    let units = fx.units(&units_ab(false));
    let out = fx.sb.run(&["flow", "start", &units]);
    assert_exit(&out, 4);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("paused") && text.contains("no idea"),
        "{text}"
    );
    assert_eq!(phase(&fx), "paused");

    let other =
        fx.units(r#"[{"id": "z", "name": "Z", "task": "x", "validation": [{"command": "true"}]}]"#);
    let refused = fx.sb.run(&["flow", "start", &other]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("paused"));

    let out = fx.sb.run(&[
        "flow",
        "continue",
        "--guidance",
        "Create b.txt and commit it.",
    ]);
    assert_exit(&out, 0);
    assert_eq!(fx.subjects(), ["unit b", "unit a", "initial"]);
    assert_eq!(phase(&fx), "completed");
}

#[test]
fn a_running_flow_holds_the_lock() {
    let fx = Fx::new();
    // a's implementer waits for the test to let it go once it has tried a second Flow.
    let held = fx.roles.hold_implementer("a");
    let units = fx.units(&units_ab(false));
    let first = fx.sb.spawn(&["flow", "start", &units]);
    assert!(
        held.wait_started(),
        "the first Flow never started its implementer"
    );
    assert_eq!(phase(&fx), "running");
    let other =
        fx.units(r#"[{"id": "z", "name": "Z", "task": "x", "validation": [{"command": "true"}]}]"#);
    let refused = fx.sb.run(&["flow", "start", &other]);
    assert_eq!(refused.status.code(), Some(2));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("another Flow is running"), "{err}");
    held.release();
    let out = first.wait_with_output().unwrap();
    assert_exit(&out, 0);
    assert_eq!(fx.subjects(), ["unit b", "unit a", "initial"]);
}

#[test]
fn a_reported_ff_failure_with_main_clean_at_the_tip_completes_with_a_warning() {
    let fx = Fx::new();
    // A `git` on PATH that performs `merge --ff-only` and then reports a failure anyway.
    let path = fx.sb.git_on_ff_only(
        "\"$REAL_GIT\" \"$@\"; echo 'error: simulated post-merge trouble' >&2; exit 1",
    );
    let units = fx.units(&units_ab(false));
    let out = fx
        .sb
        .run_with(&["flow", "start", &units, "--json"], &[("PATH", &path)]);
    assert_exit(&out, 0);
    let r = report(&out);
    let warnings = r["flow"]["end"]["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0]
        .as_str()
        .unwrap()
        .contains("simulated post-merge trouble"));
    assert_eq!(fx.subjects(), ["unit b", "unit a", "initial"]);
    assert_eq!(fx.sb.worktrees().len(), 0);
}

/// Kill the real process right after an event, check status says interrupted, resume, and
/// check every unit landed once.
#[test]
fn a_killed_process_is_interrupted_and_resume_finishes_without_merging_twice() {
    for step in [
        "unit.implementer_finished@a",
        "flow.implementers_settled",
        "unit.rebasing@b",
        "unit.reviewed@b",
        "unit.merging@b",
        "unit.merged@a",
        "unit.cleaning@b",
    ] {
        let fx = Fx::new();
        let units = fx.units(&units_ab(true));
        let out = fx
            .sb
            .run_with(&["flow", "start", &units], &[("BATON_FLOW_CRASH_AT", step)]);
        assert_eq!(
            out.status.code(),
            None,
            "{step}: the process should have been killed"
        );
        assert_eq!(phase(&fx), "interrupted", "{step}");
        let status = fx.sb.run(&["flow", "status"]);
        let text = String::from_utf8_lossy(&status.stdout);
        assert!(text.contains("baton flow resume"), "{step}: {text}");

        let out = fx.sb.run(&["flow", "resume", "--json"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{step}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(fx.subjects(), ["unit b", "unit a", "initial"], "{step}");
        assert_eq!(fx.sb.worktrees().len(), 0, "{step}");
        let calls = fx.roles.calls();
        for c in ["impl a 0", "impl b 0", "review b 0"] {
            assert_eq!(
                calls.iter().filter(|l| *l == c).count(),
                1,
                "{step}: {calls:?}"
            );
        }
        let id = report(&out)["flow"]["id"].as_str().unwrap().to_string();
        let log = std::fs::read_to_string(
            fx.sb
                .work()
                .join(format!(".baton/state/flows/{id}.events.jsonl")),
        )
        .unwrap();
        for u in ["a", "b"] {
            let merged = log
                .lines()
                .filter(|l| {
                    l.contains("\"type\":\"unit.merged\"")
                        && l.contains(&format!("\"unit\":\"{u}\""))
                })
                .count();
            assert_eq!(merged, 1, "{step}: unit {u}");
        }
    }
}

#[test]
fn a_killed_drivers_implementer_dies_with_it_and_resume_relaunches() {
    let fx = Fx::new();
    let d = fx.roles.dir();
    // The first launch of a's implementer records its pid and waits (for a file nobody writes);
    // a relaunch does the work.
    std::fs::write(
        d.join("impl-a.sh"),
        format!(
            "if [ ! -f '{d}/first' ]; then\n  touch '{d}/first'\n  echo $$ > '{d}/first.pid'\n  while [ ! -f '{d}/never' ]; do sleep 0.05; done\nfi\n{COMMIT_OWN_FILE}",
            d = d.display()
        ),
    )
    .unwrap();
    let units = fx.units(&units_ab(false));
    let mut driver = fx
        .sb
        .baton(&["flow", "start", &units])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid_file = d.join("first.pid");
    assert!(
        wait_until(Duration::from_secs(60), || {
            std::fs::read_to_string(&pid_file).is_ok_and(|s| s.ends_with('\n'))
        }),
        "timed out waiting for the implementer's pid"
    );
    let old: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let flows = fx.sb.work().join(".baton/state/flows");
    assert!(
        wait_until(Duration::from_secs(60), || {
            std::fs::read_dir(&flows).is_ok_and(|entries| {
                entries.flatten().any(|e| {
                    std::fs::read_to_string(e.path())
                        .is_ok_and(|t| t.contains("\"type\":\"unit.implementer_spawned\""))
                })
            })
        }),
        "timed out waiting for unit.implementer_spawned in the log"
    );
    // SIGKILL: the driver cannot clean up, its implementer's guard does.
    driver.kill().unwrap();
    driver.wait().unwrap();
    assert!(
        wait_until(Duration::from_secs(1), || !baton_process::alive(old)),
        "the implementer outlived its SIGKILLed driver by more than 1 s"
    );
    assert_eq!(phase(&fx), "interrupted");

    let out = fx.sb.run(&["flow", "resume", "--json"]);
    assert_exit(&out, 0);
    assert_eq!(report(&out)["flow"]["phase"], "completed");
    assert_eq!(fx.subjects(), ["unit b", "unit a", "initial"]);
    assert_eq!(fx.sb.worktrees().len(), 0);
}

#[test]
fn validation_commands_do_not_get_provider_keys() {
    let fx = Fx::new();
    // The check passes only if neither variable reaches it.
    let units = fx.units(
        r#"{"units": [{"id": "a", "name": "Add a", "task": "Add a.txt", "validation": [
            {"command": "test", "args": ["-f", "a.txt"]},
            {"command": "sh", "args": ["-c", "test -z \"${DEPLOY_TOKEN:-}${SOME_API_KEY:-}\" && test -n \"$PATH\""]}
        ]}]}"#,
    );
    let out = fx.sb.run_with(
        &["flow", "start", &units, "--json"],
        &[("DEPLOY_TOKEN", "secret"), ("SOME_API_KEY", "secret")],
    );
    assert_exit(&out, 0);
    assert_eq!(report(&out)["flow"]["phase"], "completed");
}
