//! Workflow records as the previous binary wrote them keep reading, and a record whose state
//! does not decode is refused naming the file, the line and the field — never read as a default
//! (which would restart the task graph on resume).
//!
//! `fixtures/build-scope-checkpoint.*` were written by `baton run` / `baton resume` before the
//! workflow state was typed (workflow_e2e's scope-checkpoint test: a BUILD, a scope checkpoint
//! answered, a remediation, re-checks, verification, completion).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use baton_state::StateDir;
use baton_workflow::state::{RunState, WorkflowState};
use baton_workflow::store::{fold, EventKind, StoreError, WorkflowStore};
use serde_json::Value;

const ID: &str = "wf-20261204T212108Z-27931c09";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A store holding the fixture record (its log, and its snapshot when `snapshot`).
fn store_with_fixture(snapshot: bool) -> (tempfile::TempDir, WorkflowStore) {
    let dir = tempfile::tempdir().unwrap();
    let state = StateDir::at(dir.path());
    std::fs::create_dir_all(state.workflows()).unwrap();
    let store = WorkflowStore::new(state);
    std::fs::copy(
        fixture("build-scope-checkpoint.events.jsonl"),
        store.events_path(ID).unwrap(),
    )
    .unwrap();
    if snapshot {
        std::fs::copy(
            fixture("build-scope-checkpoint.json"),
            store.snapshot_path(ID).unwrap(),
        )
        .unwrap();
    }
    (dir, store)
}

#[test]
fn a_record_written_by_the_previous_binary_reads_and_folds_to_its_snapshot() {
    let snapshot: Value =
        serde_json::from_slice(&std::fs::read(fixture("build-scope-checkpoint.json")).unwrap())
            .unwrap();
    for with_snapshot in [true, false] {
        let (_dir, store) = store_with_fixture(with_snapshot);
        let loaded = store.load(ID).unwrap();
        assert_eq!(loaded.seq, 29);
        assert_eq!(loaded.last_event, Some(EventKind::WorkflowCompleted));
        assert_eq!(loaded.artifact, snapshot, "snapshot: {with_snapshot}");
        assert_eq!(store.check(ID).unwrap().artifact, snapshot);
        let events = store.events(ID).unwrap();
        assert_eq!(events.len(), 29);
        assert_eq!(fold(&events), snapshot);
        let state = WorkflowState::read(&loaded.artifact).unwrap();
        assert_eq!(state.state, RunState::Completed);
        assert_eq!(state.tasks.len(), 9);
        assert_eq!(state.host.answers.len(), 1);
        // Opening (as resume does) takes it as it is.
        let wf = store.open(ID).unwrap();
        assert_eq!(wf.artifact(), &snapshot);
    }
}

fn undecodable(e: StoreError) -> (PathBuf, usize, String, String) {
    match e {
        StoreError::Undecodable {
            path,
            line,
            field,
            message,
        } => (path, line, field, message),
        other => panic!("expected an undecodable record, got: {other}"),
    }
}

#[test]
fn an_unknown_task_status_in_the_snapshot_is_an_error_naming_file_line_and_field() {
    let (_dir, store) = store_with_fixture(true);
    let path = store.snapshot_path(ID).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    // t2's status (the second task) is on line 192 of the pretty-printed snapshot.
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    assert_eq!(lines[191].trim(), "\"status\": \"completed\",");
    lines[191] = "      \"status\": \"bogus\",".into();
    std::fs::write(&path, lines.join("\n")).unwrap();
    for e in [store.load(ID).unwrap_err(), store.open(ID).unwrap_err()] {
        let text = e.to_string();
        let (file, line, field, message) = undecodable(e);
        assert_eq!((file, line), (path.clone(), 192));
        assert_eq!(field, "tasks[1].status");
        assert!(message.contains("bogus"), "{message}");
        assert!(
            text.contains(&format!("{ID}.json: line 192: field `tasks[1].status`")),
            "{text}"
        );
    }
    // Nothing was changed.
    assert!(std::fs::read_to_string(&path).unwrap().contains("bogus"));
}

#[test]
fn an_unknown_task_status_in_the_log_is_an_error_naming_file_line_and_field() {
    let (_dir, store) = store_with_fixture(false);
    let path = store.events_path(ID).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    // Line 28 (memory_finalized) is the last event that writes the task list.
    let l = &lines[27];
    assert!(l.contains("\"event\":\"memory_finalized\""), "{l}");
    let at = l.find("\"tasks\":[").unwrap();
    let status = at + l[at..].find("\"status\":\"completed\"").unwrap();
    lines[27] = format!(
        "{}\"status\":\"bogus\"{}",
        &l[..status],
        &l[status + "\"status\":\"completed\"".len()..]
    );
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    for e in [store.load(ID).unwrap_err(), store.open(ID).unwrap_err()] {
        let text = e.to_string();
        let (file, line, field, _) = undecodable(e);
        assert_eq!((file, line), (path.clone(), 28));
        assert_eq!(field, "delta.tasks[0].status");
        assert!(
            text.contains(&format!(
                "{ID}.events.jsonl: line 28: field `delta.tasks[0].status`"
            )),
            "{text}"
        );
    }
    assert!(
        !store.snapshot_path(ID).unwrap().exists(),
        "no snapshot was derived from it"
    );
}
