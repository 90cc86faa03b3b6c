//! `baton flow clean` end to end: the real binary removes what an abandoned Flow kept, keeps an
//! unmerged branch or a worktree with uncommitted changes unless `--force`, never acts without a
//! confirmation, and refuses a Flow that has not ended. Implementers are `command`-backend
//! scripts (see `baton_testkit::fixture::FlowRoles`); every run has stdin closed, so no terminal.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Output;

use baton_testkit::fixture::{
    assert_exit, json_lines, rewrite_readme, FlowRoles, Sandbox, COMMIT_OWN_FILE,
};
use pretty_assertions::assert_eq;
use serde_json::Value;

// Two units; each validation checks its own file.
const UNITS_AB: &str = r#"{"units": [
  {"id": "a", "name": "Add a", "task": "Add a.txt", "validation": [{"command": "test", "args": ["-f", "a.txt"]}]},
  {"id": "b", "name": "Add b", "task": "Add b.txt", "validation": [{"command": "test", "args": ["-f", "b.txt"]}]}
]}"#;

struct Fx {
    sb: Sandbox,
    roles: FlowRoles,
}

impl Fx {
    fn new() -> Fx {
        let (sb, roles) = Sandbox::flow_repo(env!("CARGO_BIN_EXE_baton"));
        Fx { sb, roles }
    }

    fn units(&self) -> String {
        let p = self.sb.path("units.json");
        std::fs::write(&p, UNITS_AB).unwrap();
        p.display().to_string()
    }

    /// Starts a Flow whose unit a blocks (its implementer fails) and abandons it; unit b's
    /// implementer runs `impl_b`. Returns the Flow's id.
    fn abandoned_flow(&self, impl_b: &str) -> String {
        self.roles
            .implementer("a", None, "echo 'cannot' >&2\nexit 1\n");
        self.roles.implementer("b", None, impl_b);
        let out = self.sb.run(&["flow", "start", &self.units()]);
        assert_exit(&out, 4);
        let out = self.sb.run(&["flow", "abandon", "--json"]);
        assert_exit(&out, 0);
        let report = json_lines(&out).pop().unwrap();
        assert_eq!(report["flow"]["phase"], "abandoned");
        report["flow"]["id"].as_str().unwrap().to_string()
    }

    fn unit_paths(&self, id: &str) -> Vec<PathBuf> {
        let flow = status_json(&self.sb, id);
        flow["units"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| PathBuf::from(u["path"].as_str().unwrap()))
            .collect()
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn status_json(sb: &Sandbox, id: &str) -> Value {
    let out = sb.run(&["flow", "status", id, "--json"]);
    assert_exit(&out, 0);
    json_lines(&out).pop().unwrap()["flow"].clone()
}

fn branch(id: &str, unit: &str) -> String {
    format!("baton/flow-{id}-{unit}")
}

#[test]
fn an_abandoned_flows_worktrees_and_branches_are_removed_with_yes() {
    let fx = Fx::new();
    // b's implementer commits nothing: neither branch holds anything Main lacks.
    let id = fx.abandoned_flow("echo nothing to do\n");
    let paths = fx.unit_paths(&id);
    assert_eq!(fx.sb.worktrees().len(), 2);
    assert_eq!(
        fx.sb.branches(),
        [branch(&id, "a"), branch(&id, "b"), "main".to_string()]
    );

    let out = fx.sb.run(&["flow", "clean", "--yes", "--json"]);
    assert_exit(&out, 0);
    let lines = json_lines(&out);
    let types: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "flow.clean_plan",
            "flow.cleaning",
            "flow.cleaned",
            "flow.report"
        ]
    );
    let plan = &lines[0]["plan"];
    assert_eq!(plan["id"], id.as_str());
    for (i, unit) in ["a", "b"].iter().enumerate() {
        let item = &plan["items"][i];
        assert_eq!(item["unit"], *unit);
        assert_eq!(item["worktree"], paths[i].display().to_string());
        assert_eq!(item["branch"], branch(&id, unit));
        assert_eq!(item["unmerged"], 0);
        assert!(item["kept"].is_null(), "{item}");
    }
    assert_eq!(fx.sb.worktrees(), Vec::<PathBuf>::new());
    assert_eq!(fx.sb.branches(), ["main"]);
    assert!(paths.iter().all(|p| !p.exists()));

    // The Flow's record says so, and a second clean finds nothing.
    let flow = status_json(&fx.sb, &id);
    assert_eq!(flow["phase"], "abandoned");
    assert_eq!(flow["units"][0]["cleaned"], true);
    assert_eq!(flow["clean"]["done"], true);
    let status = text(&fx.sb.run(&["flow", "status", &id]));
    assert!(
        status.contains("worktree and branch removed by `baton flow clean`")
            && status.contains("removed the worktree and branch of a, b"),
        "{status}"
    );
    let out = fx.sb.run(&["flow", "clean", "--yes"]);
    assert_exit(&out, 0);
    assert!(text(&out).contains("nothing to clean"), "{}", text(&out));
}

#[test]
fn an_unmerged_branch_and_uncommitted_changes_are_kept_without_force() {
    let fx = Fx::new();
    // b's implementer commits b.txt, which never reached Main.
    let id = fx.abandoned_flow(COMMIT_OWN_FILE);
    let paths = fx.unit_paths(&id);
    // a's worktree gets a file nobody committed.
    std::fs::write(paths[0].join("notes.txt"), "mine\n").unwrap();

    let out = fx.sb.run(&["flow", "clean", &id, "--yes"]);
    assert_exit(&out, 0);
    let said = text(&out);
    assert!(
        said.contains(&format!(
            "branch {} holds 1 commit(s) not merged into main; `--force` removes it",
            branch(&id, "b")
        )),
        "{said}"
    );
    assert!(
        said.contains(&format!(
            "worktree {} has uncommitted changes (?? notes.txt); `--force` removes it",
            paths[0].display()
        )),
        "{said}"
    );
    // The advice names the flags that work ([14/18]: a bare `clean` once removed nothing here).
    assert!(
        said.contains("nothing to remove without --force")
            && said.contains("`baton flow clean --yes --force` removes it too"),
        "{said}"
    );
    let status = text(&fx.sb.run(&["flow", "status", &id]));
    assert!(
        status.contains(
            "`baton flow clean --yes` removes the ones holding no work of their own; add `--force`"
        ),
        "{status}"
    );
    assert_eq!(fx.sb.worktrees().len(), 2);
    assert_eq!(fx.sb.branches().len(), 3);

    let out = fx.sb.run(&["flow", "clean", &id, "--yes", "--force"]);
    assert_exit(&out, 0);
    let said = text(&out);
    assert!(
        said.contains(&format!("removed unit b: worktree {}", paths[1].display())),
        "{said}"
    );
    assert_eq!(fx.sb.worktrees(), Vec::<PathBuf>::new());
    assert_eq!(fx.sb.branches(), ["main"]);
    assert_eq!(fx.sb.subjects("main"), ["initial"]);
    assert_eq!(status_json(&fx.sb, &id)["clean"]["force"], true);
}

#[test]
fn without_a_terminal_and_without_yes_nothing_is_removed() {
    let fx = Fx::new();
    let id = fx.abandoned_flow("echo nothing to do\n");
    let log = fx
        .sb
        .work()
        .join(format!(".baton/state/flows/{id}.events.jsonl"));
    let before = std::fs::read_to_string(&log).unwrap();

    let out = fx.sb.run(&["flow", "clean"]);
    assert_exit(&out, 2);
    let said = text(&out);
    // It listed what it would remove, then refused.
    assert!(
        said.contains("remove unit a: worktree") && said.contains("pass --yes"),
        "{said}"
    );
    let out = fx.sb.run(&["flow", "clean", &id, "--json"]);
    assert_exit(&out, 2);
    assert_eq!(json_lines(&out).last().unwrap()["type"], "flow.refused");
    assert_eq!(fx.sb.worktrees().len(), 2);
    assert_eq!(fx.sb.branches().len(), 3);
    assert_eq!(std::fs::read_to_string(&log).unwrap(), before);
}

#[test]
fn unknown_invalid_paused_and_running_flows_are_refused() {
    let fx = Fx::new();
    for id in ["20990101-000000-abcd", "../x"] {
        let out = fx.sb.run(&["flow", "clean", id, "--yes"]);
        assert_exit(&out, 2);
    }

    // A paused Flow: refused, told to abandon it, and left as it was.
    fx.roles
        .implementer("a", None, "echo 'cannot' >&2\nexit 1\n");
    let out = fx.sb.run(&["flow", "start", &fx.units()]);
    assert_exit(&out, 4);
    let id = status_json_all(&fx.sb).pop().unwrap()["flow"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let out = fx.sb.run(&["flow", "clean", &id, "--yes", "--force"]);
    assert_exit(&out, 2);
    assert!(
        text(&out).contains(&format!("is paused: `baton flow clean` removes what an ended Flow kept; give it up with `baton flow abandon {id}` first")),
        "{}",
        text(&out)
    );
    // Without an id, a paused Flow is not a candidate.
    let out = fx.sb.run(&["flow", "clean", "--yes", "--force"]);
    assert_exit(&out, 0);
    assert!(text(&out).contains("nothing to clean"), "{}", text(&out));
    assert_eq!(fx.sb.worktrees().len(), 2);
    assert_eq!(status_json(&fx.sb, &id)["phase"], "paused");
    let out = fx.sb.run(&["flow", "abandon"]);
    assert_exit(&out, 0);
    let out = fx.sb.run(&["flow", "clean", "--yes", "--force"]);
    assert_exit(&out, 0);
    assert_eq!(fx.sb.worktrees().len(), 0);

    // A running Flow: a's implementer waits for the test to let it go after the refusal.
    let held = fx.roles.hold_implementer("a");
    let driver = fx.sb.spawn(&["flow", "start", &fx.units()]);
    assert!(
        held.wait_started(),
        "the Flow never started its implementer"
    );
    // Two Flows created within one second are not ordered by their ids: find the new one.
    let running = status_json_all(&fx.sb)
        .into_iter()
        .map(|l| l["flow"].clone())
        .find(|f| f["id"] != id.as_str())
        .unwrap();
    assert_eq!(running["phase"], "running");
    let running_id = running["id"].as_str().unwrap().to_string();
    let out = fx
        .sb
        .run(&["flow", "clean", &running_id, "--yes", "--force"]);
    assert_exit(&out, 2);
    assert!(text(&out).contains("is running"), "{}", text(&out));
    held.release();
    let out = driver.wait_with_output().unwrap();
    assert_exit(&out, 0);
    assert_eq!(fx.sb.subjects("main"), ["unit b", "unit a", "initial"]);
}

fn status_json_all(sb: &Sandbox) -> Vec<Value> {
    let out = sb.run(&["flow", "status", "--json"]);
    assert_exit(&out, 0);
    json_lines(&out)
}

/// `baton flow clean ID` with a terminal as stdin, answering `answer` to its question.
fn clean_on_a_terminal(fx: &Fx, id: &str, answer: &str) -> Output {
    fx.sb.run_on_terminal(&["flow", "clean", id], answer)
}

#[test]
fn on_a_terminal_it_asks_and_removes_only_after_a_yes() {
    let fx = Fx::new();
    let id = fx.abandoned_flow("echo nothing to do\n");

    let out = clean_on_a_terminal(&fx, &id, "n\n");
    assert_exit(&out, 1);
    let said = text(&out);
    assert!(
        said.contains("remove unit a: worktree")
            && said.contains("Remove what is listed above? [y/N]")
            && said.contains("nothing was removed"),
        "{said}"
    );
    assert_eq!(fx.sb.worktrees().len(), 2);
    assert_eq!(fx.sb.branches().len(), 3);

    let out = clean_on_a_terminal(&fx, &id, "y\n");
    assert_exit(&out, 0);
    assert_eq!(fx.sb.worktrees().len(), 0);
    assert_eq!(fx.sb.branches(), ["main"]);
}

#[test]
fn a_failed_flow_s_later_unit_lands_through_the_binary() {
    let fx = Fx::new();
    // a and b both rewrite README: b's rebase conflicts after a lands, and the Flow fails at b.
    for u in ["a", "b"] {
        fx.roles.implementer(u, None, &rewrite_readme(u));
    }
    fx.roles.implementer("c", None, COMMIT_OWN_FILE);
    let units = fx.sb.path("units3.json");
    std::fs::write(
        &units,
        r#"{"units": [
  {"id": "a", "name": "A", "task": "a", "validation": [{"command": "test", "args": ["-f", "a.txt"]}]},
  {"id": "b", "name": "B", "task": "b", "validation": [{"command": "test", "args": ["-f", "b.txt"]}]},
  {"id": "c", "name": "C", "task": "c", "validation": [{"command": "test", "args": ["-f", "c.txt"]}]}
]}"#,
    )
    .unwrap();
    let out = fx.sb.run(&["flow", "start", units.to_str().unwrap()]);
    assert_exit(&out, 1);
    let said = text(&out);
    assert!(
        said.contains("Implemented and not yet landed: c."),
        "{said}"
    );
    let id = said
        .split("baton flow land ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("{said}"))
        .to_string();
    // The failed unit cannot be landed as it is: refused, exit 2.
    let out = fx.sb.run(&["flow", "land", &id, "b"]);
    assert_exit(&out, 2);
    assert!(text(&out).contains("failed at unit b"), "{}", text(&out));
    let out = fx.sb.run(&["flow", "land", &id, "c"]);
    assert_exit(&out, 0);
    let flow = status_json(&fx.sb, &id);
    assert_eq!(flow["phase"], "failed");
    let c = flow["units"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["spec"]["id"] == "c")
        .unwrap()
        .clone();
    assert_eq!(c["status"], "integrated", "{c}");
    assert!(fx.sb.work().join("c.txt").is_file());
    assert_eq!(
        fx.roles.calls().iter().filter(|c| *c == "impl c 0").count(),
        1
    );
}
