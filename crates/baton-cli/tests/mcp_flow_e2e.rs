//! The Flow tools of `baton mcp` through rmcp's own client over stdio, against the built binary
//! in a temp repository whose implementer and reviewer are the Flow harness's `command` scripts:
//! `flow_start` integrating units, a blocked unit repaired with `flow_continue`, a paused Flow
//! given up with `flow_abandon`, and a Flow whose `baton flow start` was killed (the
//! `BATON_FLOW_CRASH_AT` hook) continued with `flow_resume`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use baton_testkit::fixture::{rewrite_readme, FlowRoles, Sandbox, COMMIT_OWN_FILE};
use common::mcp::{call, connect, progress_messages, structured, text, Recorder};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

/// A repository with the harness's roles; one subagent at a time.
fn repo() -> (Sandbox, FlowRoles) {
    let sb = Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .env("BATON_MAX_SUBAGENTS", "1");
    sb.init_repo("main");
    sb.write("README", "hello\n");
    let roles = FlowRoles::install(&sb);
    sb.commit_all("initial");
    (sb, roles)
}

fn units_ab() -> Value {
    json!({"units": [
        {"id": "a", "name": "Add a", "task": "Add a.txt",
         "validation": [{"command": "test", "args": ["-f", "a.txt"]}]},
        {"id": "b", "name": "Add b", "task": "Add b.txt",
         "validation": [{"command": "test", "args": ["-f", "b.txt"]}]},
    ]})
}

/// b's first implementer gives up: the Flow pauses on b after merging a.
fn block_b_once(roles: &FlowRoles) {
    roles.implementer("b", Some(0), "echo 'no idea' >&2\nexit 1\n");
    roles.implementer("b", Some(1), COMMIT_OWN_FILE);
}

#[tokio::test]
async fn the_flow_tools_are_listed_with_true_annotations() {
    let (sb, _roles) = repo();
    let client = connect(&sb, &Recorder::default()).await;
    let tools = client.list_all_tools().await.unwrap();
    let hints = |name: &str| {
        let t = tools.iter().find(|t| t.name == name).unwrap();
        assert_eq!(t.output_schema.as_ref().unwrap()["type"], "object");
        let a = t.annotations.as_ref().unwrap();
        (
            a.read_only_hint,
            a.destructive_hint,
            a.idempotent_hint,
            a.open_world_hint,
        )
    };
    let drives = (Some(false), Some(true), Some(false), Some(true));
    assert_eq!(hints("flow_start"), drives);
    assert_eq!(hints("flow_continue"), drives);
    assert_eq!(hints("flow_resume"), drives);
    assert_eq!(hints("flow_land"), drives);
    // Abandoning runs no agent, and a second one changes nothing more.
    assert_eq!(
        hints("flow_abandon"),
        (Some(false), Some(true), Some(true), Some(false))
    );
    assert_eq!(
        hints("flow_status"),
        (Some(true), Some(false), Some(true), Some(false))
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn flow_start_integrates_a_unit_and_flow_status_shows_it() {
    let (sb, _roles) = repo();
    let recorder = Recorder::default();
    let client = connect(&sb, &recorder).await;

    let units = json!({"units": [{"id": "a", "name": "Add a", "task": "Add a.txt",
        "validation": [{"command": "test", "args": ["-f", "a.txt"]}]}]});
    let bad = call(&client, "flow_start", json!({"units": {"units": []}})).await;
    assert_eq!(bad.is_error, Some(true), "{bad:?}");
    assert!(text(&bad).contains("`units`"), "{}", text(&bad));

    let result = call(&client, "flow_start", json!({ "units": units })).await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    let doc = structured(&result);
    assert_eq!(doc["type"], "flow.report");
    assert_eq!(doc["flow"]["phase"], "completed", "{doc}");
    // The text is the report `baton flow start` prints.
    assert!(text(&result).contains("completed"), "{}", text(&result));
    assert_eq!(sb.subjects("main"), ["unit a", "initial"]);
    assert!(!progress_messages(&recorder, 2).await.is_empty());

    let status = call(&client, "flow_status", json!({})).await;
    let flows = structured(&status)["flows"].as_array().unwrap().clone();
    assert_eq!(flows.len(), 1);
    assert_eq!(flows[0]["type"], "flow.status");
    assert_eq!(flows[0]["flow"]["phase"], "completed");
    // The same lines as `baton flow status --json`.
    let o = sb.run(&["flow", "status", "--json"]);
    let cli: Vec<Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(Value::Array(flows), Value::Array(cli));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_blocked_unit_pauses_the_flow_and_flow_continue_repairs_it() {
    let (sb, roles) = repo();
    block_b_once(&roles);
    let recorder = Recorder::default();
    let client = connect(&sb, &recorder).await;

    let paused = call(&client, "flow_start", json!({"units": units_ab()})).await;
    // A pause is an answer, not an error: the text gives the evidence and the next call.
    assert_eq!(paused.is_error, Some(false), "{paused:?}");
    let doc = structured(&paused);
    assert_eq!(doc["flow"]["phase"], "paused", "{doc}");
    let id = doc["flow"]["id"].as_str().unwrap().to_string();
    let t = text(&paused);
    assert!(t.contains("no idea"), "{t}");
    assert!(
        t.contains(&format!("flow_continue {{\"id\": \"{id}\"")),
        "{t}"
    );
    assert_eq!(sb.subjects("main"), ["unit a", "initial"]);

    // Bad arguments name their field and change nothing.
    let empty = call(&client, "flow_continue", json!({"guidance": "  "})).await;
    assert_eq!(empty.is_error, Some(true));
    assert!(text(&empty).contains("`guidance`"), "{}", text(&empty));
    let class = call(
        &client,
        "flow_continue",
        json!({"guidance": "try again", "model_class": "huge"}),
    )
    .await;
    assert_eq!(class.is_error, Some(true));
    assert!(text(&class).contains("`model_class`"), "{}", text(&class));
    let unknown = call(
        &client,
        "flow_continue",
        json!({"guidance": "x", "id": "f-nope"}),
    )
    .await;
    assert_eq!(unknown.is_error, Some(true));
    assert!(text(&unknown).contains("f-nope"), "{}", text(&unknown));
    // A paused Flow is not interrupted: flow_resume refuses and says why.
    let resume = call(&client, "flow_resume", json!({})).await;
    assert_eq!(resume.is_error, Some(true));
    assert!(text(&resume).contains("paused"), "{}", text(&resume));
    assert_eq!(
        roles
            .calls()
            .iter()
            .filter(|c| c.starts_with("impl b"))
            .count(),
        1
    );

    let done = call(
        &client,
        "flow_continue",
        json!({"id": id, "guidance": "Create b.txt and commit it."}),
    )
    .await;
    assert_eq!(done.is_error, Some(false), "{done:?}");
    assert_eq!(structured(&done)["flow"]["phase"], "completed");
    assert_eq!(sb.subjects("main"), ["unit b", "unit a", "initial"]);
    // The repair got the guidance with the task.
    assert!(roles
        .task_text("impl", "b", 1)
        .contains("Create b.txt and commit it."));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn flow_abandon_gives_up_a_paused_flow_once() {
    let (sb, roles) = repo();
    block_b_once(&roles);
    let client = connect(&sb, &Recorder::default()).await;
    let paused = call(&client, "flow_start", json!({"units": units_ab()})).await;
    assert_eq!(structured(&paused)["flow"]["phase"], "paused");

    let gone = call(
        &client,
        "flow_abandon",
        json!({"reason": "b needs a redesign"}),
    )
    .await;
    assert_eq!(gone.is_error, Some(false), "{gone:?}");
    let doc = structured(&gone);
    assert_eq!(doc["flow"]["phase"], "abandoned", "{doc}");
    assert!(doc.to_string().contains("b needs a redesign"), "{doc}");
    // a stays merged; b's worktree is kept for a person.
    assert_eq!(sb.subjects("main"), ["unit a", "initial"]);
    assert_eq!(sb.worktrees().len(), 1);
    let again = call(&client, "flow_abandon", json!({})).await;
    assert_eq!(again.is_error, Some(true));
    let status = call(&client, "flow_status", json!({})).await;
    assert_eq!(
        structured(&status)["flows"][0]["flow"]["phase"],
        "abandoned"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn flow_resume_finishes_a_flow_whose_driver_was_killed() {
    let (sb, roles) = repo();
    let units = sb.path("units.json");
    std::fs::write(&units, units_ab().to_string()).unwrap();
    let killed = sb.run_with(
        &["flow", "start", units.to_str().unwrap()],
        &[("BATON_FLOW_CRASH_AT", "unit.merged@a")],
    );
    assert_eq!(
        killed.status.code(),
        None,
        "the driver should have been killed"
    );

    let recorder = Recorder::default();
    let client = connect(&sb, &recorder).await;
    let status = call(&client, "flow_status", json!({})).await;
    let flow = &structured(&status)["flows"][0]["flow"];
    assert_eq!(flow["phase"], "interrupted");
    let id = flow["id"].as_str().unwrap().to_string();

    let done = call(&client, "flow_resume", json!({"id": id})).await;
    assert_eq!(done.is_error, Some(false), "{done:?}");
    assert_eq!(structured(&done)["flow"]["phase"], "completed");
    assert_eq!(sb.subjects("main"), ["unit b", "unit a", "initial"]);
    // a was merged before the kill: it is not built or merged again.
    let calls = roles.calls();
    assert_eq!(
        calls.iter().filter(|c| *c == "impl a 0").count(),
        1,
        "{calls:?}"
    );
    assert!(!progress_messages(&recorder, 1).await.is_empty());
    // Nothing is left to resume.
    let again = call(&client, "flow_resume", json!({"id": id})).await;
    assert_eq!(again.is_error, Some(true));
    assert!(text(&again).contains("completed"), "{}", text(&again));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn flow_land_lands_a_later_unit_of_a_failed_flow() {
    let (sb, roles) = repo();
    // a and b both rewrite README: the Flow fails at b's rebase; c is implemented and kept.
    for u in ["a", "b"] {
        roles.implementer(u, None, &rewrite_readme(u));
    }
    roles.implementer("c", None, COMMIT_OWN_FILE);
    let unit = |id: &str| {
        json!({"id": id, "name": id, "task": id,
               "validation": [{"command": "test", "args": ["-f", format!("{id}.txt")]}]})
    };
    let client = connect(&sb, &Recorder::default()).await;
    let failed = call(
        &client,
        "flow_start",
        json!({"units": {"units": [unit("a"), unit("b"), unit("c")]}}),
    )
    .await;
    assert_eq!(failed.is_error, Some(true), "{failed:?}");
    assert!(
        text(&failed).contains("Implemented and not yet landed: c."),
        "{}",
        text(&failed)
    );
    let id = structured(&failed)["flow"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let refused = call(&client, "flow_land", json!({"id": id, "unit": "b"})).await;
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    let landed = call(&client, "flow_land", json!({"id": id, "unit": "c"})).await;
    assert_eq!(landed.is_error, Some(false), "{}", text(&landed));
    assert_eq!(structured(&landed)["flow"]["phase"], "failed");
    assert_eq!(sb.subjects("main"), ["unit c", "unit a", "initial"]);
    client.cancel().await.unwrap();
}
