//! A session run in-process through `baton_agent::harness` against the mock model server: the
//! routing rules a model can break, and an ordinary session's typed events, in milliseconds.
//! `baton-cli/tests/routing_e2e.rs` proves the same loop through the built binary.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use baton_agent::harness::Harness;
use baton_protocol::{AgentEvent, Item, ItemKind, Outcome};
use baton_testkit::{MockServer, RecordedRequest, Turn};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

const COORD: &str = "coord-model";
const EXEC: &str = "exec-model";

/// Runs `task` as a routed session (Coordinator on COORD, Executor on EXEC) in `dir`; it must
/// complete.
async fn routed(server: &MockServer, dir: &Path, task: &str) {
    let ran = Harness::openai(&server.url(), COORD, dir)
        .routed(COORD, EXEC, dir.join("session.journal"))
        .run(task)
        .await;
    assert_eq!(ran.summary.outcome, Outcome::Completed, "{:?}", ran.summary);
}

/// The journal's records.
fn journal(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("session.journal"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn last_user_text(req: &RecordedRequest) -> String {
    req.last_user_text().unwrap_or_default()
}

/// An ordinary session: a test awaits the typed events of a write as they come, then the end.
#[tokio::test]
async fn an_ordinary_session_emits_typed_events_a_test_can_await() {
    let server = MockServer::builder()
        .turn(Turn::tool_call(
            "w1",
            "write",
            json!({"path": "note.txt", "content": "hello\n"}),
        ))
        .turn(Turn::text("Wrote note.txt."))
        .start()
        .await;
    let dir = tempfile::tempdir().unwrap();
    let mut live = Harness::openai(&server.url(), "mock-model", dir.path()).start("write a note");
    let (tool, path) = live
        .next(|e| match e {
            AgentEvent::ItemStarted {
                item:
                    Item {
                        kind: ItemKind::ToolCall { tool, path, .. },
                        ..
                    },
            } => Some((tool.clone(), path.clone())),
            _ => None,
        })
        .await
        .expect("an item.started event for the tool call");
    assert_eq!(
        (tool.as_str(), path.as_deref()),
        ("write", Some("note.txt"))
    );
    let summary = live.finish().await;
    assert_eq!(summary.outcome, Outcome::Completed);
    assert_eq!(summary.final_message, "Wrote note.txt.");
    assert_eq!(summary.turns, 2);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("note.txt")).unwrap(),
        "hello\n"
    );
    server.assert_tool_results_answer_calls();
}

#[tokio::test]
async fn calls_outside_the_rules_are_refused_with_the_rule_and_nothing_runs() {
    let server = MockServer::builder()
        // The Coordinator tries to run a command itself, then delegates.
        .turn(Turn::tool_call("c1", "bash", json!({"command": "touch coordinator-ran"})))
        .turn(Turn::tool_call(
            "c2",
            "delegate",
            json!({"operation": "assign", "unit_outcome": "The user's request is done.", "contract": "Say what is in the folder."}),
        ))
        // The Executor tries the Coordinator's tool, then ends with a plain answer, is sent
        // back, and returns.
        .turn(Turn::tool_call(
            "e1",
            "delegate",
            json!({"operation": "assign", "contract": "recurse"}),
        ))
        .turn(Turn::text("The folder is empty."))
        .turn(Turn::tool_call(
            "e2",
            "return",
            json!({"operation": "submit", "report": "The folder is empty.", "outcome": "completed", "limitations": ["I listed nothing"]}),
        ))
        // The Coordinator tries to close while nothing is outstanding but without an assessment,
        // then answers.
        .turn(Turn::tool_call(
            "c3",
            "unit",
            json!({"operation": "close", "outcome": "accepted", "assessment": " "}),
        ))
        .turn(Turn::text("It is empty."))
        .start().await;
    let dir = tempfile::tempdir().unwrap();
    routed(&server, dir.path(), "what is here?").await;
    assert!(!dir.path().join("coordinator-ran").exists());
    let reqs = server.model_requests();
    let refused = reqs[1].result_of("c1");
    assert!(refused.contains("coordinator-environment"), "{refused}");
    let refused = reqs[3].result_of("e1");
    assert!(refused.contains("`participant`"), "{refused}");
    // The plain answer went back to the Executor with the rule.
    assert_eq!(reqs[4].model(), Some(EXEC));
    assert!(last_user_text(&reqs[4]).contains("only through the `return` tool"));
    let refused = reqs[6].result_of("c3");
    assert!(refused.contains("`assessment` is empty"), "{refused}");
    // The report's limitation reached the Coordinator.
    assert!(reqs[5].result_of("c2").contains("I listed nothing"));
    server.assert_tool_results_answer_calls();
}

/// Each rule a scripted model can break in one session, in-process: the call is
/// answered with its rule and nothing is recorded for it.
#[tokio::test]
async fn every_rule_a_model_can_break_is_refused_by_name() {
    let refs: Vec<String> = (1..=65).map(|i| format!("ctx:t{i}")).collect();
    let limitations: Vec<String> = (1..=33).map(|i| format!("limit {i}")).collect();
    let server = MockServer::builder()
        .turn(Turn::tool_call("c1", "unit", json!({"operation": "assess"})))
        .turn(Turn::tool_call(
            "c2",
            "unit",
            json!({"operation": "close", "outcome": "accepted", "assessment": "early"}),
        ))
        .turn(Turn::tool_call(
            "c3",
            "delegate",
            json!({"operation": "replace", "contract": "x", "reason": "y"}),
        ))
        .turn(Turn::tool_call(
            "c4",
            "act_bounded",
            json!({"operation": "close", "result": "nothing"}),
        ))
        .turn(Turn::tool_call(
            "c5",
            "return",
            json!({"operation": "submit", "report": "mine", "outcome": "completed"}),
        ))
        .turn(Turn::tool_call(
            "c6",
            "delegate",
            json!({"operation": "assign", "unit_outcome": "The user's request is done.", "contract": "Check the folder."}),
        ))
        .turn(Turn::tool_call(
            "e1",
            "project",
            json!({"operation": "add", "refs": ["ctx:t99"]}),
        ))
        .turn(Turn::tool_call(
            "e2",
            "project",
            json!({"operation": "add", "refs": refs}),
        ))
        .turn(Turn::tool_call("e3", "return", json!({"operation": "retry"})))
        .turn(Turn::tool_call(
            "e4",
            "return",
            json!({"operation": "submit", "report": "r", "outcome": "completed", "limitations": limitations}),
        ))
        .turn(Turn::tool_call(
            "e5",
            "unit",
            json!({"operation": "close", "outcome": "accepted", "assessment": "mine"}),
        ))
        // Three plain answers: sent back twice, then the execution fails.
        .turn(Turn::text("plain one"))
        .turn(Turn::text("plain two"))
        .turn(Turn::text("plain three"))
        // a1 is outstanding (its execution failed): no second assignment, no close.
        .turn(Turn::tool_call(
            "c7",
            "delegate",
            json!({"operation": "assign", "contract": "another"}),
        ))
        .turn(Turn::tool_call(
            "c8",
            "unit",
            json!({"operation": "close", "outcome": "cancelled", "assessment": "give up"}),
        ))
        .turn(Turn::tool_call(
            "c9",
            "delegate",
            json!({"operation": "replace", "contract": "Check the folder again.", "reason": "the first attempt failed"}),
        ))
        .turn(Turn::tool_call(
            "e6",
            "return",
            json!({"operation": "submit", "report": "The folder is fine.", "outcome": "completed"}),
        ))
        .turn(Turn::tool_call(
            "c10",
            "unit",
            json!({"operation": "close", "outcome": "accepted", "assessment": "checked"}),
        ))
        .turn(Turn::text("Done."))
        .start().await;
    let dir = tempfile::tempdir().unwrap();
    routed(&server, dir.path(), "check the folder").await;
    let reqs = server.model_requests();
    let last = |m: &str| reqs.iter().rev().find(|r| r.model() == Some(m)).unwrap();
    let (coord, exec) = (last(COORD), last(EXEC));
    for (req, id, rule) in [
        (coord, "c1", "assess-report"),
        (coord, "c2", "close-open-unit"),
        (coord, "c3", "replace-outstanding"),
        (coord, "c4", "act-bounded-open"),
        (coord, "c5", "participant"),
        (exec, "e1", "project-ref"),
        (exec, "e2", "project-bound"),
        (exec, "e3", "retry-blocked"),
        (exec, "e4", "limitations"),
        (exec, "e5", "participant"),
        (coord, "c7", "one-assignment"),
        (coord, "c8", "close-outstanding"),
    ] {
        let answer = req.result_of(id);
        assert!(answer.contains(&format!("`{rule}`")), "{id}: {answer}");
    }
    assert!(coord.result_of("c9").contains("The folder is fine."));
    // The replacement's contract tells the Executor what it replaces and why (seed 000:312).
    assert!(
        exec.body
            .to_string()
            .contains("It replaces assignment a1, because: the first attempt failed"),
        "the replace reason did not reach the Executor"
    );
    assert!(!coord.result_of("c10").contains("rule"));
    let types: Vec<String> = journal(dir.path())
        .iter()
        .map(|r| r["type"].as_str().unwrap().to_string())
        .collect();
    let count = |t: &str| types.iter().filter(|x| *x == t).count();
    assert_eq!(
        (count("unit_opened"), count("assigned"), count("replaced")),
        (1, 1, 1),
        "{types:?}"
    );
    assert_eq!(
        (count("projection_added"), count("unit_closed")),
        (0, 1),
        "{types:?}"
    );
    let ends: Vec<String> = journal(dir.path())
        .iter()
        .filter(|r| r["type"] == "execution_ended")
        .map(|r| r["how"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ends, ["failed", "returned"]);
    server.assert_tool_results_answer_calls();
}

/// Input that arrives while the Executor's model is still generating a turn stops the Executor
/// before any call of that turn runs (seed 000: a prepared request honours a stop at once). The
/// mock (on a runtime of its own) holds the Executor's answer until the test has submitted the
/// input.
#[test]
fn input_during_generation_stops_the_executor_before_the_turn_s_first_call() {
    let (arrived_tx, arrived_rx) = std::sync::mpsc::channel::<()>();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let arrived_tx = std::sync::Mutex::new(arrived_tx);
    let release_rx = std::sync::Mutex::new(release_rx);
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran.txt");
    let held = std::sync::atomic::AtomicBool::new(false);
    let server = MockServer::builder()
        .turn(Turn::tool_call(
            "c1",
            "delegate",
            json!({"operation": "assign", "unit_outcome": "The user's request is done.", "contract": "Write ran.txt."}),
        ))
        .turn(Turn::tool_call(
            "e1",
            "bash",
            json!({"command": format!("touch '{}'", marker.display())}),
        ))
        // Its last turn, where only `return` runs: a plain answer, so the host writes the report.
        .turn(Turn::text("Nothing ran."))
        .turn(Turn::text("Stopped, as asked."))
        .on_request(move |r| {
            // Only the Executor's first request is held.
            if r.model() == Some(EXEC) && !held.swap(true, std::sync::atomic::Ordering::SeqCst) {
                let _ = arrived_tx.lock().unwrap().send(());
                let _ = release_rx.lock().unwrap().recv();
            }
        })
        .start_blocking();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (live, inbox) = Harness::openai(&server.url(), COORD, dir.path())
            .routed(COORD, EXEC, dir.path().join("session.journal"))
            .start_open("write ran.txt");
        // The Executor's request is in flight: the user speaks, then its turn comes back.
        tokio::task::spawn_blocking(move || arrived_rx.recv().unwrap())
            .await
            .unwrap();
        inbox
            .send(baton_agent::agent::Submission::Input("wait, do not".into()))
            .unwrap();
        release_tx.send(()).unwrap();
        drop(inbox);
        let _ = live.finish().await;
    });
    assert!(!marker.exists(), "the turn's first call ran after the stop");
    let ends: Vec<String> = journal(dir.path())
        .iter()
        .filter(|r| r["type"] == "execution_ended")
        .map(|r| r["how"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ends, ["interrupted"]);
}

/// seed 000:312, 421, 427: an assignment whose execution failed is withdrawn with `delegate
/// cancel` and a reason, and its unit then closes `cancelled`; the detail view says why.
#[tokio::test]
async fn a_failed_assignment_is_cancelled_and_its_unit_closed_honestly() {
    let server = MockServer::builder()
        .turn(Turn::tool_call(
            "c1",
            "delegate",
            json!({"operation": "assign", "unit_outcome": "The folder is checked.", "contract": "Check the folder."}),
        ))
        .turn(Turn::text("plain one"))
        .turn(Turn::text("plain two"))
        .turn(Turn::text("plain three"))
        .turn(Turn::tool_call(
            "c2",
            "delegate",
            json!({"operation": "cancel", "reason": "the user no longer needs it"}),
        ))
        .turn(Turn::tool_call(
            "c3",
            "unit",
            json!({"operation": "close", "outcome": "cancelled", "assessment": "not needed"}),
        ))
        .turn(Turn::tool_call(
            "c4",
            "unit",
            json!({"operation": "inspect", "view": "detail", "ref": "a1"}),
        ))
        .turn(Turn::text("Dropped."))
        .start()
        .await;
    let dir = tempfile::tempdir().unwrap();
    routed(&server, dir.path(), "check the folder").await;
    let reqs = server.model_requests();
    let coord = reqs
        .iter()
        .rev()
        .find(|r| r.model() == Some(COORD))
        .unwrap();
    assert!(
        coord.result_of("c1").contains("delegate cancel"),
        "{}",
        coord.result_of("c1")
    );
    assert!(coord
        .result_of("c2")
        .contains("The assignment is cancelled"));
    assert!(
        !coord.result_of("c3").contains("rule"),
        "{}",
        coord.result_of("c3")
    );
    let detail = coord.result_of("c4");
    for want in [
        "a1 of unit u1 — cancelled",
        "cancelled: the user no longer needs it",
        "execution e1: failed",
    ] {
        assert!(detail.contains(want), "{want} missing: {detail}");
    }
    let types: Vec<Value> = journal(dir.path())
        .into_iter()
        .map(|r| r["type"].clone())
        .collect();
    assert!(types.contains(&json!("assignment_cancelled")), "{types:?}");
}

/// seed 000:387: at its turn limit the Executor writes its own report in a last turn where only
/// `return` runs; the execution ends `limit_reached` (not `failed`) and the assignment stays
/// outstanding for `/resume`. An Executor that does not return then gets the host's report.
#[tokio::test]
async fn at_its_turn_limit_the_executor_writes_its_own_report() {
    for returns in [true, false] {
        let last = if returns {
            Turn::tool_call(
                "e3",
                "return",
                json!({"operation": "submit", "report": "Listed the folder twice; not done.", "outcome": "partial",
                       "reason": "the turn limit", "partial_effects": ["none"]}),
            )
        } else {
            Turn::text("I ran out of turns.")
        };
        let server = MockServer::builder()
            .turn(Turn::tool_call(
                "c1",
                "delegate",
                json!({"operation": "assign", "unit_outcome": "The folder is listed.", "contract": "List the folder."}),
            ))
            .turn(Turn::tool_call("e1", "bash", json!({"command": "ls"})))
            .turn(Turn::tool_call("e2", "bash", json!({"command": "ls -a"})))
            .turn(last)
            .turn(Turn::text("Partly done."))
            .start()
            .await;
        let dir = tempfile::tempdir().unwrap();
        let mut h = Harness::openai(&server.url(), COORD, dir.path()).routed(
            COORD,
            EXEC,
            dir.path().join("session.journal"),
        );
        h.spec_mut().max_turns = 3;
        let ran = h.run("list the folder").await;
        assert_eq!(ran.summary.outcome, Outcome::Completed, "{:?}", ran.summary);
        let reqs = server.model_requests();
        let limit = &reqs[3];
        assert_eq!(limit.model(), Some(EXEC));
        assert_eq!(limit.offered_tools(), reqs[2].offered_tools());
        assert!(last_user_text(limit).contains("turn limit (3 turns)"));
        let report = reqs[4].result_of("c1");
        if returns {
            assert!(
                report.contains("by the Executor after it was stopped"),
                "{report}"
            );
            assert!(
                report.contains("Why it returns: the turn limit"),
                "{report}"
            );
        } else {
            assert!(report.contains("written by the host"), "{report}");
            assert!(report.contains("turn limit"), "{report}");
        }
        assert!(report.contains("still outstanding"), "{report}");
        let ends: Vec<String> = journal(dir.path())
            .iter()
            .filter(|r| r["type"] == "execution_ended")
            .map(|r| r["how"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(ends, ["limit_reached"], "returns: {returns}");
    }
}

/// [14/18] compaction in a routed session: the Coordinator's view is compacted when a report
/// fills its window, and the host state (the journal) is untouched: the unit still closes.
#[tokio::test]
async fn a_routed_coordinator_compacts_its_view_and_keeps_the_journal() {
    let server = MockServer::builder()
        .turn(Turn::tool_call(
            "c1",
            "delegate",
            json!({"operation": "assign", "unit_outcome": "The xs are printed.", "contract": "Print 30000 x and select the output."}),
        ))
        .turn(Turn::tool_call(
            "e1",
            "bash",
            json!({"command": "head -c 30000 /dev/zero | tr '\\0' x; echo; echo printed"}),
        ))
        .turn(Turn::tool_call(
            "e2",
            "project",
            json!({"operation": "add", "refs": ["ctx:t1"]}),
        ))
        .turn(Turn::tool_call(
            "e3",
            "return",
            json!({"operation": "submit", "report": "Printed them; the output is selected.", "outcome": "completed"}),
        ))
        // The Coordinator's view no longer fits: the summary first.
        .turn(Turn::text("## Goal\nPrint xs.\n## State\nAssignment a1 returned: printed."))
        .turn(Turn::tool_call(
            "c2",
            "unit",
            json!({"operation": "close", "outcome": "accepted", "assessment": "the selected output shows them"}),
        ))
        .turn(Turn::text("Printed."))
        .start()
        .await;
    let dir = tempfile::tempdir().unwrap();
    let mut h = Harness::openai(&server.url(), COORD, dir.path()).routed(
        COORD,
        EXEC,
        dir.path().join("session.journal"),
    );
    if let Some(r) = h.spec_mut().routing.as_mut() {
        r.coordinator[0].context_window = Some(8000);
    }
    let ran = h.run("print the xs").await;
    assert_eq!(ran.summary.outcome, Outcome::Completed, "{:?}", ran.summary);
    let reqs = server.model_requests();
    let models: Vec<&str> = reqs.iter().map(|r| r.model().unwrap_or_default()).collect();
    assert_eq!(models, [COORD, EXEC, EXEC, EXEC, COORD, COORD, COORD]);
    assert!(last_user_text(&reqs[4]).contains("about to be compacted"));
    let after = reqs[5].messages();
    assert!(
        after.iter().any(|m| m.text.starts_with("<context-summary")),
        "{after:?}"
    );
    assert!(
        !reqs[6].result_of("c2").contains("rule"),
        "{}",
        reqs[6].result_of("c2")
    );
    let types: Vec<Value> = journal(dir.path())
        .into_iter()
        .map(|r| r["type"].clone())
        .collect();
    assert!(types.contains(&json!("unit_closed")), "{types:?}");
}
