//! `baton route`: the routing decision as text and as one JSON document, `--workflow`, the
//! refusals, and that it needs no config and leaves no file behind. The built binary, in a
//! sandbox of its own.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Output;

use baton_testkit::fixture::{assert_exit, files_under, Sandbox};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

/// A sandbox whose config cannot be read: `baton route` must not need it.
fn sandbox() -> Sandbox {
    Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .baton_config("this is [not toml")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

#[test]
fn route_prints_the_workflow_its_signals_and_the_rule() {
    let sb = sandbox();
    let before = files_under(sb.root());
    let out = sb.run(&[
        "route",
        "add a dark-mode toggle and fix the button alignment",
    ]);
    assert_exit(&out, 0);
    assert_eq!(
        stdout(&out),
        "-> BUILD workflow (signals: add, fix)\nrule: primary deliverable: new functionality\n"
    );
    assert_eq!(stderr(&out), "");

    let out = sb.run(&["route", "Help me understand this code"]);
    assert_exit(&out, 0);
    assert_eq!(
        stdout(&out),
        "-> ORIENT workflow (signals: help me understand)\nrule: ORIENT before BUILD\n"
    );

    let out = sb.run(&["route", "rename the flag"]);
    assert_eq!(
        stdout(&out),
        "-> BUILD workflow (signals: rename)\nrule: primary deliverable: new functionality\n"
    );
    let out = sb.run(&["route", "tidy the imports"]);
    assert_eq!(
        stdout(&out),
        "-> BUILD workflow (signals: none)\nrule: default BUILD\n"
    );

    // Two things asked at once, separated by priority alone: a conflict, named.
    let out = sb.run(&[
        "route",
        "plan the storage migration and fix the flaky upload",
    ]);
    assert_exit(&out, 0);
    assert_eq!(
        stdout(&out),
        "-> DEBUG workflow (signals: plan, fix)\nrule: priority: ERROR over PLAN (conflict: DEBUG, PLAN)\n"
    );
    assert_eq!(files_under(sb.root()), before, "route wrote a file");
    // The config is really unreadable: a command that needs it refuses.
    assert_exit(&sb.run(&["models"]), 2);
}

#[test]
fn route_json_is_one_document() {
    let sb = sandbox();
    let before = files_under(sb.root());
    let out = sb.run(&[
        "route",
        "--json",
        "add a dark-mode toggle and fix the button alignment",
    ]);
    assert_exit(&out, 0);
    let doc: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(
        doc,
        json!({
            "workflow": "BUILD",
            "signals": [
                {"text": "add", "category": "BUILD"},
                {"text": "fix", "category": "ERROR"}
            ],
            "rule": "primary deliverable: new functionality",
            "conflict": false
        })
    );
    assert_eq!(stdout(&out).lines().count(), 1);

    let out = sb.run(&["route", "review the parser and fix what you find", "--json"]);
    let doc: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(doc["workflow"], "DEBUG");
    assert_eq!(doc["rule"], "priority: ERROR over REVIEW");
    assert_eq!(doc["conflict"], true);
    assert_eq!(files_under(sb.root()), before, "route wrote a file");
}

#[test]
fn route_workflow_overrides_the_rules() {
    let sb = sandbox();
    let out = sb.run(&[
        "route",
        "--workflow",
        "codebase-health",
        "fix the crash",
        "--json",
    ]);
    assert_exit(&out, 0);
    let doc: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(
        doc,
        json!({
            "workflow": "CODEBASE-HEALTH",
            "signals": [
                {"text": "fix", "category": "ERROR"},
                {"text": "crash", "category": "ERROR"}
            ],
            "rule": "override --workflow",
            "conflict": false
        })
    );
    let out = sb.run(&["route", "--workflow", "TRIAGE", "fix the crash"]);
    assert_eq!(
        stdout(&out),
        "-> TRIAGE workflow (signals: fix, crash)\nrule: override --workflow\n"
    );
}

#[test]
fn route_refuses_an_empty_request_and_an_unknown_workflow() {
    let sb = sandbox();
    for request in ["", "  \n "] {
        let out = sb.run(&["route", request]);
        assert_exit(&out, 2);
        assert_eq!(stdout(&out), "");
        assert!(
            stderr(&out).contains("the request is empty"),
            "{}",
            stderr(&out)
        );
    }
    let out = sb.run(&["route"]);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("REQUEST"), "{}", stderr(&out));

    let out = sb.run(&["route", "--workflow", "QUICK", "fix it"]);
    assert_exit(&out, 2);
    assert_eq!(stdout(&out), "");
    assert!(
        stderr(&out).contains("unknown workflow \"QUICK\"")
            && stderr(&out).contains("CODEBASE-HEALTH"),
        "{}",
        stderr(&out)
    );
}
