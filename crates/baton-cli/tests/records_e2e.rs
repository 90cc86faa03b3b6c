//! Damaged records fail loudly, through the built binary: a workflow log cut mid-file, a
//! workflow snapshot ahead of its log, a missing snapshot (derived again, not "nothing waits"),
//! a NUL-filled routing journal, a truncated Flow log and one corrupt background task log among
//! good ones. Each is refused (or listed as damaged) with the file, the line, what is lost and
//! `baton repair ID`; nothing completed runs again; nothing is cut on the quiet; and
//! `baton repair ID --apply` rebuilds from the intact part, keeping the damaged files beside it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

mod common;

use baton_state::StateDir;
use baton_testkit::fixture::{assert_exit, Sandbox};
use baton_testkit::{MockServer, Turn};
use baton_workflow::route::WorkflowKind;
use baton_workflow::store::{EventKind, NewEvent, WorkflowStore};
use common::workflow::{
    err, out, Wf, BUILDER_PASS, DOCS_SKIPPED, HUNT_CLEAN, REVIEW_APPROVE, REVIEW_CRITICAL_AND_HIGH,
    VERIFY_PASS,
};
use serde_json::{json, Value};

const REQUEST: &str = "add a feature file";
const SCOPE_ANSWER: &str = "all issues";
const ROLES: [&str; 5] = [
    "component-builder",
    "code-reviewer",
    "failure-hunter",
    "integration-verifier",
    "doc-syncer",
];

fn both(o: &Output) -> String {
    format!("{}\n{}", out(o), err(o))
}

/// A BUILD workflow stopped at its scope checkpoint (exit 4) after the builder, the reviewer
/// (a critical and a high finding) and the failure hunter ran once each.
fn at_the_scope_checkpoint() -> Wf {
    let wf = Wf::new();
    let review = format!(
        "if [ \"$(cat \"$dir/component-builder.count\")\" = 1 ]; then\n{REVIEW_CRITICAL_AND_HIGH}else\n{REVIEW_APPROVE}fi\n"
    );
    wf.answer("component-builder", BUILDER_PASS)
        .answer("code-reviewer", &review)
        .answer("failure-hunter", HUNT_CLEAN)
        .answer("integration-verifier", VERIFY_PASS)
        .answer("doc-syncer", DOCS_SKIPPED);
    let o = wf.run(&["run", REQUEST]);
    assert_exit(&o, 4);
    wf
}

fn calls(wf: &Wf) -> Vec<u32> {
    ROLES.iter().map(|r| wf.calls(r)).collect()
}

fn workflows(sb: &Sandbox) -> PathBuf {
    sb.work().join(".baton/state/workflows")
}

/// The byte where the first line holding `needle` starts.
fn line_start(bytes: &[u8], needle: &str) -> usize {
    let text = std::str::from_utf8(bytes).unwrap();
    let at = text
        .find(needle)
        .unwrap_or_else(|| panic!("no {needle} in {text}"));
    text[..at].rfind('\n').map_or(0, |i| i + 1)
}

fn line_number(bytes: &[u8], at: usize) -> usize {
    bytes[..at].iter().filter(|b| **b == b'\n').count() + 1
}

#[test]
fn a_workflow_log_cut_mid_file_is_refused_and_no_completed_task_runs_again() {
    let wf = at_the_scope_checkpoint();
    let id = wf.id();
    let log = workflows(&wf.sb).join(format!("{id}.events.jsonl"));
    let full = std::fs::read(&log).unwrap();
    // Cut in the middle of the line of the first completed agent: it and every later event
    // are lost, and what is left ends in a torn line like a crash would leave.
    let start = line_start(&full, "\"event\":\"agent_completed\"");
    let line = line_number(&full, start);
    let cut = full[..start + 25].to_vec();
    std::fs::write(&log, &cut).unwrap();
    let before = calls(&wf);

    let o = wf.run(&["resume", &id, "--answer", SCOPE_ANSWER]);
    assert_eq!(o.status.code(), Some(1), "{}", both(&o));
    let said = err(&o);
    assert!(
        said.contains(&format!(
            "{id}.events.jsonl: line {line} is where the log ends"
        )),
        "{said}"
    );
    assert!(said.contains(&format!("{id}.json records event")), "{said}");
    assert!(
        said.contains(" are lost") && said.contains(&format!("baton repair {id}")),
        "{said}"
    );
    assert_eq!(calls(&wf), before, "a completed task ran again");
    assert_eq!(std::fs::read(&log).unwrap(), cut, "the log was changed");

    // `status` says so instead of showing the checkpoint; `resume` without an id names it.
    let status = out(&wf.run(&["status"]));
    assert!(status.contains(&format!("{id}  damaged: ")), "{status}");
    let o = wf.run(&["resume", "--answer", SCOPE_ANSWER]);
    assert_exit(&o, 2);
    assert!(err(&o).contains("its record is damaged"), "{}", both(&o));
    assert_eq!(calls(&wf), before);

    // `repair` shows the damage and changes nothing; `--apply` keeps the lines before it.
    let o = wf.run(&["repair", &id]);
    assert_exit(&o, 1);
    assert!(
        out(&o).contains(&format!("workflow {id}: damaged")),
        "{}",
        both(&o)
    );
    assert!(out(&o).contains("lost: "), "{}", both(&o));
    assert_eq!(std::fs::read(&log).unwrap(), cut);
    let o = wf.run(&["repair", &id, "--apply"]);
    assert_exit(&o, 0);
    assert!(out(&o).contains("kept the damaged file as"), "{}", both(&o));
    assert_eq!(std::fs::read(&log).unwrap(), &full[..start]);
    let dir = workflows(&wf.sb);
    assert_eq!(
        std::fs::read(dir.join(format!("{id}.events.jsonl.damaged"))).unwrap(),
        cut
    );
    assert!(dir.join(format!("{id}.json.damaged")).is_file());
    assert_eq!(wf.snapshot()["event_seq"], json!(line - 1));
    let o = wf.run(&["repair", &id]);
    assert_exit(&o, 0);
    assert!(out(&o).contains("intact"), "{}", both(&o));
    assert!(!out(&wf.run(&["status"])).contains("damaged"));
}

/// A project root holding `.baton/`, and its workflow store.
fn project() -> (Sandbox, WorkflowStore) {
    let sb = Sandbox::new().baton_exe(env!("CARGO_BIN_EXE_baton"));
    std::fs::create_dir_all(sb.work().join(".baton")).unwrap();
    let store = WorkflowStore::new(StateDir::for_project(&sb.work()));
    (sb, store)
}

#[test]
fn a_snapshot_ahead_of_its_log_is_damaged_not_completed() {
    let (sb, store) = project();
    let mut wf = store.create(WorkflowKind::Build, "add a flag").unwrap();
    wf.append(NewEvent::new(EventKind::AgentStarted).delta(json!({"phase_cursor": "build"})))
        .unwrap();
    wf.append(
        NewEvent::new(EventKind::WorkflowCompleted)
            .delta(json!({"run_state": "completed", "phase_cursor": "verify"})),
    )
    .unwrap();
    let id = wf.id().to_string();
    drop(wf);
    // The log loses its last line, cleanly at a line's end; the snapshot still says completed.
    let log = store.events_path(&id).unwrap();
    let full = std::fs::read(&log).unwrap();
    let keep = line_start(&full, "\"event\":\"workflow_completed\"");
    std::fs::write(&log, &full[..keep]).unwrap();

    let o = sb.run(&["status"]);
    let text = out(&o);
    assert!(text.contains(&format!("{id}  damaged: ")), "{}", both(&o));
    assert!(
        text.contains("line 3 is where the log ends, after event 2")
            && text.contains("event 3 is lost"),
        "{text}"
    );
    assert!(!text.contains("completed  phase"), "{text}");
    let doc: Value = serde_json::from_str(&out(&sb.run(&["status", "--json"]))).unwrap();
    let row = &doc["workflows"][0];
    assert_eq!(row["id"], id.as_str());
    assert!(row["run_state"].is_null(), "{doc}");
    assert!(
        row["error"].as_str().unwrap().starts_with("damaged: "),
        "{doc}"
    );
    let o = sb.run(&["resume", &id]);
    assert_eq!(o.status.code(), Some(1), "{}", both(&o));
    assert!(err(&o).contains("baton repair"), "{}", both(&o));
}

#[test]
fn resume_without_an_id_finds_the_waiting_workflow_when_its_snapshot_is_missing() {
    let wf = at_the_scope_checkpoint();
    let id = wf.id();
    std::fs::remove_file(workflows(&wf.sb).join(format!("{id}.json"))).unwrap();
    let status = out(&wf.run(&["status"]));
    assert!(status.contains("checkpoint"), "{status}");
    let o = wf.run(&["resume", "--answer", SCOPE_ANSWER]);
    assert_exit(&o, 0);
    assert_eq!(wf.snapshot()["run_state"], "completed");
    assert_eq!(wf.calls("component-builder"), 2, "one remediation cycle");
}

/// A project whose `[routing]` puts the Coordinator and the Executor on the mock server.
fn routed_project(server: &MockServer) -> Sandbox {
    Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .mock_provider(
            server,
            "openai-responses",
            "\n[retry]\ninitial_delay = \"1ms\"\nmax_delay = \"20ms\"\n\n[routing]\ncoordinator = \"mock/coord-model\"\nexecutor = \"mock/exec-model\"\n",
        )
}

fn chat(p: &Sandbox, args: &[&str], input: &str) -> Output {
    use std::io::Write;
    let mut c = p
        .baton(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    c.wait_with_output().unwrap()
}

#[test]
fn a_nul_filled_routing_journal_stops_the_session_instead_of_starting_fresh() {
    let server = MockServer::builder()
        .turn(Turn::text("hello from the executor's route"))
        .turn(Turn::text("still the executor"))
        .start_blocking();
    let p = routed_project(&server);
    let o = chat(
        &p,
        &["chat", "--json", "--routing", "auto"],
        "/profile executor\nhi\n",
    );
    assert_exit(&o, 0);
    let id = out(&o)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "session.started")
        .and_then(|v| v["session_id"].as_str().map(str::to_string))
        .unwrap();
    let journal = p.work().join(format!(".baton/state/sessions/{id}.journal"));
    let len = std::fs::metadata(&journal).unwrap().len() as usize;
    assert!(len > 0);
    // Zeros where the journal was: what a file system leaves of blocks that never reached disk.
    std::fs::write(&journal, vec![0u8; len]).unwrap();

    let o = chat(&p, &["chat", "--json", "--resume", &id], "again\n");
    assert_ne!(o.status.code(), Some(0), "{}", both(&o));
    let said = both(&o);
    assert!(
        said.contains(&format!(
            "{id}.journal: line 1 is an unfinished last line that {len} NUL bytes"
        )),
        "{said}"
    );
    assert!(said.contains(&format!("baton repair {id}")), "{said}");
    assert_eq!(server.model_requests().len(), 1, "the session went on");
    assert_eq!(std::fs::read(&journal).unwrap(), vec![0u8; len]);

    let o = p.run(&["repair", &id]);
    assert_exit(&o, 1);
    assert!(
        out(&o).contains(&format!("session {id}: damaged")),
        "{}",
        both(&o)
    );
    let o = p.run(&["repair", &id, "--apply"]);
    assert_exit(&o, 0);
    assert!(out(&o).contains("nothing is intact"), "{}", both(&o));
    assert!(!journal.exists());
    assert_eq!(
        std::fs::read(journal.with_file_name(format!("{id}.journal.damaged"))).unwrap(),
        vec![0u8; len]
    );
    server.assert_tool_results_answer_calls();
}

fn only_flow_log(sb: &Sandbox) -> (String, PathBuf) {
    let dir = sb.work().join(".baton/state/flows");
    let ids = StateDir::list_ids(&dir, ".events.jsonl");
    assert_eq!(ids.len(), 1, "{ids:?}");
    let id = ids[0].clone();
    let path = dir.join(format!("{id}.events.jsonl"));
    (id, path)
}

#[test]
fn a_truncated_flow_log_never_runs_a_merged_units_implementer_again() {
    let (sb, roles) = Sandbox::flow_repo(env!("CARGO_BIN_EXE_baton"));
    let units = sb.path("units.json");
    std::fs::write(
        &units,
        r#"{"units": [
  {"id": "a", "name": "Add a", "task": "Add a.txt", "validation": [{"command": "test", "args": ["-f", "a.txt"]}]},
  {"id": "b", "name": "Add b", "task": "Add b.txt", "validation": [{"command": "test", "args": ["-f", "b.txt"]}]}
]}"#,
    )
    .unwrap();
    let o = sb.run(&["flow", "start", &units.display().to_string()]);
    assert_exit(&o, 0);
    let subjects = sb.subjects("main");
    assert_eq!(subjects, ["unit b", "unit a", "initial"]);
    let before = roles.calls();
    let (id, log) = only_flow_log(&sb);
    let full = std::fs::read(&log).unwrap();
    // Cut in the middle of the first implementer's end: both units' later history is lost,
    // although both are merged on Main.
    let start = line_start(&full, "\"type\":\"unit.implementer_finished\"");
    let line = line_number(&full, start);
    let cut = full[..start + 20].to_vec();
    std::fs::write(&log, &cut).unwrap();

    for args in [
        vec!["flow", "resume", id.as_str()],
        vec!["flow", "resume"],
        vec!["flow", "status", id.as_str()],
    ] {
        let o = sb.run(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", both(&o));
        let said = err(&o);
        assert!(
            said.contains(&format!(
                "{id}.events.jsonl: line {line} is where the log ends"
            )),
            "{args:?}: {said}"
        );
        assert!(said.contains(&format!("baton repair {id}")), "{said}");
    }
    assert_eq!(roles.calls(), before, "an implementer ran again");
    assert_eq!(sb.subjects("main"), subjects);
    assert_eq!(std::fs::read(&log).unwrap(), cut);

    let o = sb.run(&["repair", &id]);
    assert_exit(&o, 1);
    assert!(
        out(&o).contains(&format!("Flow {id}: damaged")),
        "{}",
        both(&o)
    );
    let o = sb.run(&["repair", &id, "--apply"]);
    assert_exit(&o, 0);
    assert!(out(&o).contains("baton flow abandon"), "{}", both(&o));
    assert_eq!(std::fs::read(&log).unwrap(), &full[..start]);
    assert!(log
        .with_file_name(format!("{id}.events.jsonl.damaged"))
        .is_file());
    assert_exit(&sb.run(&["flow", "status", &id]), 0);
    assert_eq!(roles.calls(), before);
}

fn task_log(dir: &Path, id: &str, extra: &str) {
    let created = json!({"type": "task.created", "id": id, "created": "2026-12-03T00:00:00Z",
        "cwd": "/nowhere",
        "request": {"mode": "single", "entries": [{"role": "r", "name": format!("n-{id}"), "task": "t"}]}});
    let failed = json!({"type": "task.failed", "message": "no such role"});
    std::fs::write(
        dir.join(format!("{id}.events.jsonl")),
        format!("{created}\n{extra}{failed}\n"),
    )
    .unwrap();
}

#[test]
fn one_corrupt_task_log_is_listed_as_damaged_and_the_others_as_usual() {
    let p = Sandbox::new().baton_exe(env!("CARGO_BIN_EXE_baton"));
    std::fs::create_dir_all(p.work().join(".baton")).unwrap();
    let tasks = p.work().join(".baton/state/tasks");
    std::fs::create_dir_all(&tasks).unwrap();
    task_log(&tasks, "tgood1", "");
    task_log(&tasks, "tbad", "\0\0\0\0\0\0\0\0\n");
    task_log(&tasks, "tgood2", "");

    let o = p.run(&["task", "status"]);
    assert_exit(&o, 1);
    let text = out(&o);
    for good in [
        "tgood1  ✗ failed",
        "tgood2  ✗ failed",
        "n-tgood1 (r)",
        "n-tgood2 (r)",
    ] {
        assert!(text.contains(good), "{good}: {}", both(&o));
    }
    assert!(
        text.contains("tbad  damaged: ")
            && text.contains("tbad.events.jsonl: line 2 holds 8 NUL bytes"),
        "{text}"
    );
    assert!(text.contains("baton repair tbad"), "{text}");
    let o = p.run(&["task", "status", "--json"]);
    assert_exit(&o, 1);
    let docs: Vec<Value> = out(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let phases: Vec<(&str, &str)> = docs
        .iter()
        .map(|d| (d["id"].as_str().unwrap(), d["phase"].as_str().unwrap()))
        .collect();
    assert_eq!(
        phases,
        [
            ("tbad", "damaged"),
            ("tgood1", "failed"),
            ("tgood2", "failed")
        ]
    );
    // Asked for by id, the damaged task is an error naming the file.
    let o = p.run(&["task", "status", "tbad"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(
        err(&o).contains("tbad.events.jsonl: line 2"),
        "{}",
        both(&o)
    );

    let o = p.run(&["repair", "tbad", "--apply"]);
    assert_exit(&o, 0);
    assert!(
        out(&o).contains("background task tbad: repaired"),
        "{}",
        both(&o)
    );
    let o = p.run(&["task", "status"]);
    assert_exit(&o, 0);
    assert!(out(&o).contains("tbad  ◐ starting"), "{}", both(&o));
}
