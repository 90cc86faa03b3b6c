//! `run_workflow` and `workflow_resume` of `baton mcp` through rmcp's own client over stdio,
//! against the built binary in the workflow harness's temp repository (the workflow roles are
//! `command` scripts): a BUILD that completes, a checkpoint answered by `workflow_resume`, a bad
//! answer, the progress notifications of a call, `workflow_status` afterwards, and a cancelled call
//! whose workflow stops and resumes. The Flow tools are in mcp_flow_e2e.rs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::new_without_default)]

mod common;

use std::time::Duration;

use common::mcp::{call, call_cancellable, connect, progress_messages, structured, text, Recorder};
use common::workflow::*;
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

#[tokio::test]
async fn run_workflow_completes_a_build_and_reports_progress() {
    let wf = Wf::new();
    wf.happy();
    let recorder = Recorder::default();
    let client = connect(&wf.sb, &recorder).await;

    let tools = client.list_all_tools().await.unwrap();
    for name in ["run_workflow", "workflow_resume"] {
        let t = tools.iter().find(|t| t.name == name).unwrap();
        let a = t.annotations.as_ref().unwrap();
        assert_eq!(
            (a.read_only_hint, a.destructive_hint, a.idempotent_hint),
            (Some(false), Some(true), Some(false)),
            "{name}"
        );
    }

    let result = call(
        &client,
        "run_workflow",
        json!({"request": "add a feature file"}),
    )
    .await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    let doc = structured(&result);
    assert_eq!(doc["type"], "workflow.completed");
    let id = doc["id"].as_str().unwrap().to_string();
    assert_eq!(id, wf.id());
    assert!(
        doc["brief"].as_str().unwrap().contains("proof: passed"),
        "{doc}"
    );
    assert!(text(&result).contains("proof: passed"), "{}", text(&result));
    // Worked in place: the builder's change is in the project's own tree.
    assert!(wf.sb.work().join("feature.txt").is_file());

    // The route's headline, then every event the workflow recorded, as `baton events` prints it,
    // in the order of its log.
    let messages = progress_messages(&recorder, 3).await;
    assert!(messages[0].starts_with("-> BUILD workflow"), "{messages:?}");
    let events: Vec<&str> = messages[1..]
        .iter()
        .map(|m| {
            let rest = m
                .strip_prefix(&format!("{id} "))
                .unwrap_or_else(|| panic!("{m}"));
            rest.split(' ').next().unwrap()
        })
        .collect();
    let o = wf.run(&["events", "--json", "--id", &id]);
    assert!(o.status.success(), "{}", err(&o));
    let logged: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["event"]["event"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(events, logged, "{messages:?}");
    assert_eq!(events[0], "workflow_started");
    assert_eq!(events.last(), Some(&"workflow_completed"));

    let status = call(&client, "workflow_status", json!({"id": id})).await;
    assert_eq!(status.is_error, Some(false), "{status:?}");
    assert_eq!(structured(&status)["run_state"], "completed");

    // flow_status: the lines of `baton flow status --json` (none here), as a list.
    let flows = call(&client, "flow_status", json!({})).await;
    assert_eq!(flows.is_error, Some(false), "{flows:?}");
    assert_eq!(structured(&flows), json!({"flows": []}));
    let o = wf.run(&["flow", "status", "--json"]);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(out(&o), "");
    let bad = call(&client, "flow_status", json!({"id": "nope"})).await;
    assert_eq!(bad.is_error, Some(true), "{bad:?}");
    assert!(text(&bad).contains("nope"), "{}", text(&bad));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_checkpoint_is_answered_with_workflow_resume() {
    let wf = Wf::new();
    wf.happy()
        .answer_nth("code-reviewer", 1, REVIEW_CRITICAL_AND_HIGH);
    let recorder = Recorder::default();
    let client = connect(&wf.sb, &recorder).await;

    let result = call(
        &client,
        "run_workflow",
        json!({"request": "add a feature file", "workflow": "build"}),
    )
    .await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    let doc = structured(&result);
    assert_eq!(doc["type"], "workflow.checkpoint", "{doc}");
    let id = doc["id"].as_str().unwrap().to_string();
    assert_eq!(
        doc["checkpoint"]["options"],
        json!(["critical only", "all issues", "abort"])
    );
    assert!(
        text(&result).contains("options: critical only | all issues | abort"),
        "{}",
        text(&result)
    );
    assert!(
        text(&result).contains("workflow_resume"),
        "{}",
        text(&result)
    );

    // An answer that is no option is a tool error naming the options, and changes nothing.
    let bad = call(
        &client,
        "workflow_resume",
        json!({"id": id, "answer": "whatever"}),
    )
    .await;
    assert_eq!(bad.is_error, Some(true), "{bad:?}");
    assert!(
        text(&bad).contains("critical only, all issues, abort"),
        "{}",
        text(&bad)
    );
    assert_eq!(wf.snapshot()["run_state"], "checkpoint");

    // Bad arguments name the field.
    let bad = call(&client, "workflow_resume", json!({"id": "nope"})).await;
    assert_eq!(bad.is_error, Some(true));
    assert!(text(&bad).contains("`id`"), "{}", text(&bad));
    let bad = call(
        &client,
        "run_workflow",
        json!({"request": "x", "budget_usd": -1}),
    )
    .await;
    assert_eq!(bad.is_error, Some(true));
    assert!(text(&bad).contains("`budget_usd`"), "{}", text(&bad));

    // Without `id`: the newest unfinished workflow, as `baton resume` picks it.
    let result = call(
        &client,
        "workflow_resume",
        json!({"answer": "critical only"}),
    )
    .await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    let doc = structured(&result);
    assert_eq!(doc["type"], "workflow.completed", "{doc}");
    assert_eq!(doc["id"], id.as_str());
    let snap = wf.snapshot();
    assert_eq!(snap["run_state"], "completed");
    let status = call(&client, "workflow_status", json!({"id": "last"})).await;
    assert_eq!(structured(&status)["run_state"], "completed");
    // Nothing is left to resume.
    let none = call(&client, "workflow_resume", json!({})).await;
    assert_eq!(none.is_error, Some(true));
    client.cancel().await.unwrap();
}

// Multi-threaded: the client's service runs while the test polls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_run_workflow_stops_and_resumes() {
    let wf = Wf::new();
    let pid_file = wf.scripts.join("builder.pid");
    wf.happy().answer_nth(
        "component-builder",
        1,
        &format!("echo $$ > {}\nexec sleep 60\n", pid_file.display()),
    );
    let recorder = Recorder::default();
    let client = connect(&wf.sb, &recorder).await;
    let handle = call_cancellable(
        &client,
        "run_workflow",
        json!({"request": "add a feature file"}),
    )
    .await;
    let pid = || {
        std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|t| t.trim().parse::<i32>().ok())
    };
    for _ in 0..400 {
        if pid().is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let pid = pid().expect("the builder started");
    let alive = move || std::path::Path::new(&format!("/proc/{pid}")).exists();
    handle.cancel(Some("test".into())).await.unwrap();
    for _ in 0..400 {
        if !alive() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!alive(), "the builder {pid} outlived the cancelled call");
    // The workflow is resumable: workflow_resume picks it and runs it to the end.
    let mut result = None;
    for _ in 0..100 {
        let r = call(&client, "workflow_resume", json!({})).await;
        // The cancelled call may still hold the workflow's lock for a moment.
        if r.is_error == Some(true) && text(&r).contains("is being run by") {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        }
        result = Some(r);
        break;
    }
    let result = result.unwrap();
    let doc = structured(&result);
    assert_eq!(doc["type"], "workflow.completed", "{result:?}");
    assert_eq!(wf.calls("component-builder"), 2);
    client.cancel().await.unwrap();
}

/// `run_workflow` with `plan`: a planned BUILD stops at the final review; a plan with an open
/// decision is a tool error naming it, before anything runs.
#[tokio::test]
async fn run_workflow_builds_a_plan_and_refuses_an_untrustworthy_one() {
    let wf = Wf::new();
    wf.happy();
    let phase = |i: u32| {
        format!("- phase_id: phase-{i}\n  title: Part {i}\n  objective: build part {i}\n  exit_criteria: [part {i} exists]\n  test_seams: [feature.txt]\n")
    };
    let plan = |open: &str| {
        format!(
            "# Parts\n\nplan_mode: execution_plan\nverification_rigor: standard\n\n## Acceptance Criteria\n- every part is built\n\n## Phases\n```yaml\n{}{}```\n\n## Open Decisions\n{open}\n\n## Differences from agreement\nNone\n",
            phase(1),
            phase(2)
        )
    };
    wf.sb.write("bad.md", &plan("- which format?"));
    wf.sb.write("good.md", &plan("None"));
    let recorder = Recorder::default();
    let client = connect(&wf.sb, &recorder).await;
    let result = call(
        &client,
        "run_workflow",
        json!({"request": "build it", "plan": "bad.md"}),
    )
    .await;
    assert_eq!(result.is_error, Some(true), "{result:?}");
    assert!(
        text(&result).contains("open decision \"which format?\" is not made"),
        "{}",
        text(&result)
    );
    assert_eq!(wf.calls("component-builder"), 0);
    let result = call(
        &client,
        "run_workflow",
        json!({"request": "build it", "plan": "good.md"}),
    )
    .await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    let doc = structured(&result);
    assert_eq!(doc["type"], "workflow.checkpoint");
    assert_eq!(doc["checkpoint"]["gate"], "final_review");
    assert_eq!(wf.calls("component-builder"), 2);
}

#[tokio::test]
async fn run_workflow_fans_a_debug_out_to_the_groups_it_is_given() {
    let wf = Wf::new();
    debug_happy(&wf);
    wf.answer_nth("bug-investigator", 1, &lane_fix(&["parser.txt"]))
        .answer_nth("bug-investigator", 2, &lane_fix(&["cli.txt"]));
    let recorder = Recorder::default();
    let client = connect(&wf.sb, &recorder).await;
    // A group without files is a bad argument, named; nothing is recorded.
    let bad = call(
        &client,
        "run_workflow",
        json!({"request": "fix the tests", "workflow": "debug", "debug_groups": ["parser"]}),
    )
    .await;
    assert_eq!(bad.is_error, Some(true), "{bad:?}");
    assert!(
        text(&bad).contains("bad argument `debug_groups`: \"parser\" names no files"),
        "{}",
        text(&bad)
    );
    assert!(!wf.sb.work().join(".baton/state/workflows").exists());
    let result = call(
        &client,
        "run_workflow",
        json!({
            "request": "fix the failing parser and cli tests",
            "workflow": "debug",
            "debug_groups": ["parser=parser.txt", "cli=cli.txt"],
        }),
    )
    .await;
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert_eq!(structured(&result)["type"], "workflow.completed");
    assert_eq!(wf.calls("bug-investigator"), 2);
    assert!(wf
        .prompt("bug-investigator", 2)
        .contains("WITHIN your scoped files only (cli.txt)"));
    assert_eq!(
        wf.dispatched(),
        [
            "debug-investigate",
            "debug-investigate",
            "debug-review",
            "debug-verify"
        ]
    );
    client.cancel().await.unwrap();
}
