//! More `baton flow` end to end: what counts as a dirty Main, and what `status` says after Main
//! moved. The real binary, a temp repository and `command`-backend implementer and reviewer
//! scripts (see `baton_testkit::fixture::FlowRoles`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Output;

use baton_testkit::fixture::{assert_exit, FlowRoles, Sandbox};
use pretty_assertions::assert_eq;
use serde_json::Value;

const UNITS_AB: &str = r#"{"units": [
  {"id": "a", "name": "Add a", "task": "Add a.txt", "validation": [{"command": "test", "args": ["-f", "a.txt"]}]},
  {"id": "b", "name": "Add b", "task": "Add b.txt", "validation": [{"command": "test", "args": ["-f", "b.txt"]}]}
]}"#;

/// A repository with one commit; the test roles are installed by each test.
fn repo() -> Sandbox {
    let sb = Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .env("BATON_MAX_SUBAGENTS", "1");
    sb.init_repo("main");
    sb.write("README", "hello\n");
    sb.commit_all("initial");
    sb
}

fn units(sb: &Sandbox, json: &str) -> String {
    let p = sb.path("units.json");
    std::fs::write(&p, json).unwrap();
    p.display().to_string()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn json_lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn untracked_files_under_dot_baton_do_not_make_main_dirty() {
    let sb = repo();
    // As the README has a user do: project roles and config, not committed.
    FlowRoles::install(&sb);
    sb.write(".baton/config.toml", "[executor]\nmax_concurrency = 1\n");
    let porcelain = sb.git(&["status", "--porcelain"]);
    assert_eq!(porcelain, "?? .baton/\n");

    let out = sb.run(&["flow", "start", &units(&sb, UNITS_AB)]);
    assert_exit(&out, 0);
    assert_eq!(sb.subjects("main"), ["unit b", "unit a", "initial"]);
    // The user's files are still there, still untracked.
    assert!(sb.work().join(".baton/config.toml").is_file());
    assert!(sb.work().join(".baton/roles/implementer.md").is_file());
}

#[test]
fn a_changed_tracked_file_under_dot_baton_still_makes_main_dirty() {
    let sb = repo();
    FlowRoles::install(&sb);
    sb.commit_all("roles");
    sb.write(".baton/config.toml", "[executor]\nmax_concurrency = 1\n");
    sb.commit_all("config");
    sb.write(".baton/config.toml", "[executor]\nmax_concurrency = 2\n");

    let out = sb.run(&["flow", "start", &units(&sb, UNITS_AB), "--json"]);
    assert_exit(&out, 2);
    let refused = json_lines(&out);
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0]["type"], "flow.refused");
    let message = refused[0]["message"].as_str().unwrap();
    assert!(
        message.contains("uncommitted changes") && message.contains(".M .baton/config.toml"),
        "{message}\n{}",
        stderr(&out)
    );
    assert_eq!(sb.subjects("main"), ["config", "roles", "initial"]);
}

fn status_json(sb: &Sandbox) -> Value {
    let out = sb.run(&["flow", "status", "--json"]);
    assert_exit(&out, 0);
    json_lines(&out).pop().unwrap()["flow"].clone()
}

#[test]
fn status_after_main_moved_shows_the_real_main_and_the_real_next_step() {
    let sb = repo();
    FlowRoles::install(&sb);
    sb.commit_all("roles");
    let out = sb.run_with(
        &["flow", "start", &units(&sb, UNITS_AB)],
        &[("BATON_FLOW_CRASH_AT", "unit.merged@a")],
    );
    assert_eq!(out.status.code(), None, "killed: {}", stderr(&out));
    let left = sb.git(&["rev-parse", "main"]).trim().to_string();
    assert_eq!(sb.subjects("main"), ["unit a", "roles", "initial"]);

    // Someone commits on Main while the Flow is interrupted.
    sb.write("other.txt", "other\n");
    sb.commit_all("someone else");
    let moved = sb.git(&["rev-parse", "main"]).trim().to_string();

    let flow = status_json(&sb);
    assert_eq!(flow["phase"], "interrupted");
    assert_eq!(flow["main_oid"], left.as_str(), "where the Flow left Main");
    assert_eq!(flow["main_now"]["branch"], "main");
    assert_eq!(flow["main_now"]["head"], moved.as_str());
    let problem = flow["main_now"]["problem"].as_str().unwrap();
    assert!(problem.contains("moved outside the Flow"), "{problem}");
    let out = sb.run(&["flow", "status"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!(
            "left at {}; main is now at {}",
            &left[..12],
            &moved[..12]
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "Next: Main (main) moved outside the Flow: the Flow left it at {}, it is now at {}. Put main back at {}",
            &left[..12],
            &moved[..12],
            &left[..12]
        )),
        "{text}"
    );
    assert!(!text.contains("Next: `baton flow resume`"), "{text}");

    // Resume would stop at once, as status said.
    let out = sb.run(&["flow", "resume"]);
    assert_exit(&out, 1);
    assert!(
        stderr(&out).contains("moved outside the Flow"),
        "{}",
        stderr(&out)
    );

    // Following the advice: Main back where the Flow left it, then resume finishes.
    sb.git(&["reset", "-q", "--hard", &left]);
    let flow = status_json(&sb);
    assert_eq!(flow["main_now"]["head"], left.as_str());
    assert!(flow["main_now"]["problem"].is_null(), "{flow}");
    let text = String::from_utf8_lossy(&sb.run(&["flow", "status"]).stdout).into_owned();
    assert!(text.contains("Next: `baton flow resume`"), "{text}");
    let out = sb.run(&["flow", "resume"]);
    assert_exit(&out, 0);
    assert_eq!(
        sb.subjects("main"),
        ["unit b", "unit a", "roles", "initial"]
    );
}
