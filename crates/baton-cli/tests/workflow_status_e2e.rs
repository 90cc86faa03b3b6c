//! `baton status` and `baton log WF`: workflow records written with the store, as a runner
//! writes them, read back by the built binary — states, gates, a held lock, the timeline with
//! tokens and cost, id prefixes and `last`, unknown ids, and the JSON forms.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Output;

use baton_state::StateDir;
use baton_testkit::fixture::{assert_exit, json_lines, Sandbox};
use baton_workflow::route::WorkflowKind;
use baton_workflow::store::{EventKind, Fields, NewEvent, OpenWorkflow, WorkflowStore};
use serde_json::{json, Value};

/// A sandbox whose working directory is a project root (it holds `.baton/`), and its store.
fn project() -> (Sandbox, WorkflowStore) {
    let sb = Sandbox::new().baton_exe(env!("CARGO_BIN_EXE_baton"));
    std::fs::create_dir_all(sb.work().join(".baton")).unwrap();
    let store = WorkflowStore::new(StateDir::for_project(&sb.work()));
    (sb, store)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

fn update(wf: &mut OpenWorkflow, kind: EventKind, delta: Value) {
    wf.append(NewEvent::new(kind).delta(delta)).unwrap();
}

/// A BUILD workflow that completed, having spent tokens.
fn completed(store: &WorkflowStore) -> String {
    let mut wf = store
        .create(
            WorkflowKind::Build,
            "add a dark-mode toggle to the settings page",
        )
        .unwrap();
    update(
        &mut wf,
        EventKind::WorkflowCompleted,
        json!({"run_state": "completed", "phase_cursor": "verify",
               "spent": {"input_tokens": 1500, "output_tokens": 400, "cost_usd": 0.0123, "unpriced_dispatches": 0}}),
    );
    wf.id().to_string()
}

/// A DEBUG workflow stopped at a checkpoint.
fn at_checkpoint(store: &WorkflowStore) -> String {
    let mut wf = store
        .create(
            WorkflowKind::Debug,
            "fix the crash on start-up and the flaky upload test",
        )
        .unwrap();
    wf.append(
        NewEvent::new(EventKind::CheckpointRequested)
            .reason("Fix both bugs in one workflow?")
            .delta(json!({"run_state": "checkpoint", "phase_cursor": "plan", "pending_gate": "scope_decision",
                          "checkpoint": {"gate": "scope_decision", "question": "Fix both bugs in one workflow?",
                                         "options": ["both", "first only"], "recommended": "both"}})),
    )
    .unwrap();
    wf.id().to_string()
}

fn line_with<'a>(text: &'a str, needle: &str) -> (usize, &'a str) {
    text.lines()
        .enumerate()
        .find(|(_, l)| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{text}"))
}

#[test]
fn status_lists_every_workflow_newest_first_with_its_state_and_gate() {
    let (sb, store) = project();
    let done = completed(&store);
    let waiting = at_checkpoint(&store);
    let out = sb.run(&["status"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    let (new_at, new_line) = line_with(&text, &waiting);
    let (old_at, old_line) = line_with(&text, &done);
    assert!(new_at < old_at, "newest first:\n{text}");
    assert!(
        new_line.contains("DEBUG  ? checkpoint  phase plan"),
        "{new_line}"
    );
    assert!(
        old_line.contains("BUILD  ✓ completed  phase verify"),
        "{old_line}"
    );
    assert!(
        text.contains("waits for: an answer at gate scope_decision: \"Fix both bugs in one workflow?\" (options: both, first only; recommended: both) — `baton resume --answer`"),
        "{text}"
    );
    assert!(text.contains("waits for: nothing (completed)"), "{text}");
    // [22/24] A failed workflow waits for the user's guidance, and says how to give it.
    let mut wf = store.create(WorkflowKind::Build, "add a flag").unwrap();
    update(
        &mut wf,
        EventKind::WorkflowFailed,
        json!({"run_state": "failed", "phase_cursor": "build"}),
    );
    let id = wf.id().to_string();
    drop(wf);
    let out = sb.run(&["status"]);
    let text = stdout(&out);
    let (_, failed) = line_with(&text, &id);
    assert!(failed.contains("BUILD  ✗ failed  phase build"), "{failed}");
    assert!(
        text.contains(&format!(
            "waits for: your guidance: `baton resume {id} --answer \"…\"` runs the failed agents again with it"
        )),
        "{text}"
    );
    assert!(
        text.contains("spent:     1500 in / 400 out tokens, $0.0123"),
        "{text}"
    );
    // The request is one line, cut at 60 characters.
    assert!(
        text.contains("request:   fix the crash on start-up and the flaky upload test\n"),
        "{text}"
    );
    assert_eq!(stderr(&out), "");
}

#[test]
fn status_says_running_while_a_process_holds_the_lock_and_interrupted_after() {
    let (sb, store) = project();
    let mut wf = store.create(WorkflowKind::Build, "add a flag").unwrap();
    update(
        &mut wf,
        EventKind::AgentStarted,
        json!({"run_state": "running", "phase_cursor": "build"}),
    );
    let out = sb.run(&["status"]);
    assert_exit(&out, 0);
    let pid = std::process::id();
    assert!(
        stdout(&out).contains(&format!("BUILD  ◐ running (pid {pid})  phase build")),
        "{}",
        stdout(&out)
    );
    let doc: Value = serde_json::from_str(&stdout(&sb.run(&["status", "--json"]))).unwrap();
    assert_eq!(doc["workflows"][0]["running"], true);
    assert_eq!(doc["workflows"][0]["pid"], pid);
    // The lock is still ours: status only read.
    assert!(store.open(wf.id()).is_err());
    drop(wf);
    let text = stdout(&sb.run(&["status"]));
    assert!(text.contains("BUILD  ■ interrupted  phase build"), "{text}");
}

#[test]
fn status_with_no_workflows_says_so_and_lists_an_unreadable_record_with_its_error() {
    let (sb, store) = project();
    let out = sb.run(&["status"]);
    assert_exit(&out, 0);
    assert!(
        stdout(&out).starts_with("no workflows in "),
        "{}",
        stdout(&out)
    );
    let doc: Value = serde_json::from_str(&stdout(&sb.run(&["status", "--json"]))).unwrap();
    assert_eq!(doc, json!({"workflows": []}));

    let id = completed(&store);
    let bad = "wf-20200101T000000Z-deadbeef";
    std::fs::write(store.events_path(bad).unwrap(), "this is not json\n").unwrap();
    let out = sb.run(&["status"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(text.contains(&format!("{bad}  damaged: ")), "{text}");
    assert!(text.contains("line 1 cannot be read"), "{text}");
    assert!(text.contains(&id), "{text}");
    let doc: Value = serde_json::from_str(&stdout(&sb.run(&["status", "--json"]))).unwrap();
    let rows = doc["workflows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["id"], id.as_str());
    assert_eq!(rows[0]["run_state"], "completed");
    assert_eq!(rows[1]["id"], bad);
    assert!(rows[1]["error"].is_string(), "{doc}");
}

/// A workflow with two agent runs, one priced and one not, an engine decision and a checkpoint.
fn with_agents(store: &WorkflowStore) -> String {
    let mut wf = store.create(WorkflowKind::Build, "add a flag").unwrap();
    wf.append(
        NewEvent::from_fields(
            EventKind::AgentStarted,
            Fields {
                phase: Some("build".into()),
                task_id: Some("t1".into()),
                details: Some(
                    json!({"role": "builder", "route": "fast", "backend": "baton", "attempt": 1}),
                ),
                ..Fields::default()
            },
        )
        .unwrap(),
    )
    .unwrap();
    wf.append(NewEvent::from_fields(
        EventKind::AgentCompleted,
        Fields {
            phase: Some("build".into()),
            task_id: Some("t1".into()),
            agent: Some("builder".into()),
            decision: Some("pass".into()),
            duration_seconds: Some(62.5),
            details: Some(json!({"role": "builder", "route": "fast", "exit_code": 0,
                                 "usage": {"input_tokens": 1200, "output_tokens": 300}, "cost_usd": 0.0042})),
            ..Fields::default()
        },
    )
    .unwrap())
    .unwrap();
    wf.append(
        NewEvent::from_fields(
            EventKind::AgentCompleted,
            Fields {
                phase: Some("review".into()),
                task_id: Some("t2".into()),
                agent: Some("reviewer".into()),
                decision: Some("fail".into()),
                duration_seconds: Some(3.0),
                details: Some(
                    json!({"role": "reviewer", "usage": {"input_tokens": 500, "output_tokens": 100},
                                 "cost_usd": null}),
                ),
                ..Fields::default()
            },
        )
        .unwrap(),
    )
    .unwrap();
    wf.append(NewEvent::new(EventKind::Decided).decision("create_remediation"))
        .unwrap();
    wf.append(NewEvent::new(EventKind::CheckpointRequested).reason("Go on after two failures?"))
        .unwrap();
    wf.id().to_string()
}

#[test]
fn log_shows_the_events_in_order_with_tokens_cost_and_unpriced() {
    let (sb, store) = project();
    let id = with_agents(&store);
    let out = sb.run(&["log", &id]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 7, "{text}");
    assert_eq!(lines[0], format!("workflow {id} (BUILD): add a flag"));
    let events: Vec<&str> = lines[1..]
        .iter()
        .map(|l| l.split_whitespace().nth(1).unwrap())
        .collect();
    assert_eq!(
        events,
        [
            "workflow_started",
            "agent_started",
            "agent_completed",
            "agent_completed",
            "decided",
            "checkpoint_requested"
        ]
    );
    for l in &lines[1..] {
        let clock = l.split_whitespace().next().unwrap();
        assert!(
            clock.len() == 8 && clock.as_bytes()[2] == b':' && clock.as_bytes()[5] == b':',
            "{l}"
        );
    }
    assert!(
        lines[2].ends_with("phase=build  task=t1  agent=builder  route=fast"),
        "{}",
        lines[2]
    );
    assert!(
        lines[3].ends_with("phase=build  task=t1  agent=builder  decision=pass  route=fast  62.5s  1200 in / 300 out tokens  $0.0042"),
        "{}",
        lines[3]
    );
    assert!(
        lines[4].ends_with("decision=fail  3.0s  500 in / 100 out tokens  unpriced"),
        "{}",
        lines[4]
    );
    assert!(
        lines[5].ends_with("decision=create_remediation"),
        "{}",
        lines[5]
    );
    assert!(
        lines[6].ends_with("\"Go on after two failures?\""),
        "{}",
        lines[6]
    );
    assert_eq!(stderr(&out), "");
}

#[test]
fn log_takes_a_unique_prefix_or_last_and_refuses_an_unknown_or_ambiguous_id() {
    let (sb, store) = project();
    let older = completed(&store);
    let newer = at_checkpoint(&store);
    let header = |o: &Output| stdout(o).lines().next().unwrap_or("").to_string();

    let out = sb.run(&["log", "last"]);
    assert_exit(&out, 0);
    assert!(
        header(&out).starts_with(&format!("workflow {newer} (DEBUG)")),
        "{}",
        stdout(&out)
    );

    let prefix = &older[..older.len() - 2];
    let out = sb.run(&["log", prefix]);
    assert_exit(&out, 0);
    assert!(
        header(&out).starts_with(&format!("workflow {older} (BUILD)")),
        "{}",
        stdout(&out)
    );

    let out = sb.run(&["log", "wf-19990101T000000Z-00000000"]);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("`baton status`"), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");

    let out = sb.run(&["log", "wf-"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("matches 2 workflows"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn json_forms_parse_one_document_and_one_event_per_line() {
    let (sb, store) = project();
    let id = with_agents(&store);
    let _other = completed(&store);
    let out = sb.run(&["status", "--json"]);
    assert_exit(&out, 0);
    let doc: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let rows = doc["workflows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    let row = rows.iter().find(|r| r["id"] == id.as_str()).unwrap();
    assert_eq!(row["type"], "BUILD");
    assert_eq!(row["running"], false);
    assert_eq!(row["request"], "add a flag");

    let out = sb.run(&["log", &id, "--json"]);
    assert_exit(&out, 0);
    let events = json_lines(&out);
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5, 6]);
    assert_eq!(events[2]["details"]["usage"]["input_tokens"], 1200);
    assert_eq!(events[5]["event"], "checkpoint_requested");
}

/// [24/24] `baton status --needs`: what waits for you, one line each with the command that
/// answers it, nothing else (the Claude Code plugin's session-start hook prints it); nothing at
/// all when nothing waits.
#[test]
fn status_needs_lists_only_what_waits_for_the_user_with_the_command() {
    let sb = Sandbox::new().baton_exe(env!("CARGO_BIN_EXE_baton"));
    let out = sb.run(&["status", "--needs"]);
    assert_exit(&out, 0);
    assert_eq!(stdout(&out), "", "nothing waits in a new project");
    let store = WorkflowStore::new(StateDir::for_project(&sb.work()));
    let done = completed(&store);
    let waiting = at_checkpoint(&store);
    let mut wf = store.create(WorkflowKind::Build, "add a flag").unwrap();
    update(
        &mut wf,
        EventKind::WorkflowFailed,
        json!({"run_state": "failed", "phase_cursor": "build"}),
    );
    let failed = wf.id().to_string();
    drop(wf);
    let out = sb.run(&["status", "--needs"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(!text.contains(&done), "{text}");
    assert!(
        text.contains(&format!(
            "workflow {waiting} waits at scope_decision: Fix both bugs in one workflow? (options: both, first only) — baton resume {waiting} --answer"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("workflow {failed} failed: "))
            && text.contains(&format!(
                "baton resume {failed} --answer \"<your guidance>\""
            )),
        "{text}"
    );
}

/// [24/24] Where `[routing]` names the Executor, the session-start hook's output also gives the
/// host session seed 000's split: it coordinates, and bounded execution goes through baton's
/// `delegate_task` on the Executor's route (a class as `model_class`, a route as `model`); with
/// `--hook-json` the same line is the hook's `additionalContext`. Without `[routing]`, nothing.
#[test]
fn status_needs_gives_the_coordinator_executor_split_where_routing_is_configured() {
    let sb = Sandbox::new().baton_exe(env!("CARGO_BIN_EXE_baton"));
    let user = sb.config_home().join("baton/config.toml");
    std::fs::create_dir_all(user.parent().unwrap()).unwrap();
    for (executor, route) in [
        ("fast", "`model_class` \"fast\""),
        ("local/qwen3-8b", "`model` \"local/qwen3-8b\""),
    ] {
        std::fs::write(
            &user,
            format!("[routing]\ncoordinator = \"frontier\"\nexecutor = \"{executor}\"\n"),
        )
        .unwrap();
        let out = sb.run(&["status", "--needs"]);
        assert_exit(&out, 0);
        let text = stdout(&out);
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(
            text.starts_with(&format!(
                "baton routing is on here ([routing] executor = {executor}): this session is the Coordinator"
            )) && text.contains(&format!("`delegate_task` (role `implementer` for changes, `scout` for reading, {route}")),
            "{text}"
        );
        let out = sb.run(&["status", "--needs", "--hook-json"]);
        assert_exit(&out, 0);
        let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            answer["hookSpecificOutput"]["additionalContext"],
            text.trim_end(),
            "{answer}"
        );
    }
    std::fs::write(&user, "").unwrap();
    assert_eq!(stdout(&sb.run(&["status", "--needs"])), "");
}
