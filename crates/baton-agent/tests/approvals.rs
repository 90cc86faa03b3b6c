//! Approvals (`agent.approval`) and the front end's immediate interrupt, in-process through
//! `baton_agent::harness` against the mock model server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use baton_agent::agent::Approver;
use baton_agent::harness::Harness;
use baton_protocol::{
    AgentEvent, ApprovalAnswer, ApprovalPolicy, ApprovalRequest, EndReason, Item, ItemKind,
    ItemStatus, Outcome,
};
use baton_testkit::{MockServer, Turn};
use pretty_assertions::assert_eq;
use serde_json::json;

/// Answers each request with the next scripted answer, and keeps what it was asked.
struct Scripted {
    answers: Mutex<Vec<ApprovalAnswer>>,
    asked: Mutex<Vec<ApprovalRequest>>,
}

impl Scripted {
    fn new(answers: Vec<ApprovalAnswer>) -> Arc<Scripted> {
        Arc::new(Scripted {
            answers: Mutex::new(answers),
            asked: Mutex::new(Vec::new()),
        })
    }
}

#[async_trait::async_trait]
impl Approver for Scripted {
    async fn ask(&self, request: ApprovalRequest) -> ApprovalAnswer {
        self.asked.lock().unwrap().push(request);
        self.answers.lock().unwrap().remove(0)
    }
}

fn statuses(events: &[AgentEvent]) -> Vec<(String, ItemStatus)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ItemCompleted {
                item:
                    Item {
                        status,
                        kind: ItemKind::ToolCall { tool, .. },
                        ..
                    },
            } => Some((tool.clone(), *status)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_declined_write_does_not_run_and_the_model_reads_the_user_s_feedback() {
    let server = MockServer::builder()
        .turn(
            Turn::tool_call("r1", "read", json!({"path": "a.txt"})).with_tool_call(
                "w1",
                "write",
                json!({"path": "note.txt", "content": "hello\n"}),
            ),
        )
        .turn(Turn::tool_call(
            "w2",
            "write",
            json!({"path": "other.txt", "content": "x\n"}),
        ))
        .turn(Turn::tool_call(
            "w3",
            "write",
            json!({"path": "third.txt", "content": "y\n"}),
        ))
        .turn(Turn::text("Done."))
        .start()
        .await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "a\n").unwrap();
    let approver = Scripted::new(vec![
        ApprovalAnswer::No {
            feedback: "call it notes.md instead".into(),
        },
        ApprovalAnswer::Always,
    ]);
    let ran = Harness::openai(&server.url(), "mock-model", dir.path())
        .approvals(ApprovalPolicy::OnWrite, Some(approver.clone()))
        .run("write a note")
        .await;
    assert_eq!(ran.summary.outcome, Outcome::Completed, "{:?}", ran.summary);
    // `read` is read-only: not asked. The first write was declined, the second approved for
    // the session, so the third was not asked.
    let asked: Vec<(String, Option<String>)> = approver
        .asked
        .lock()
        .unwrap()
        .iter()
        .map(|r| (r.tool.clone(), r.path.clone()))
        .collect();
    assert_eq!(
        asked,
        vec![
            ("write".to_string(), Some("note.txt".to_string())),
            ("write".to_string(), Some("other.txt".to_string()))
        ]
    );
    assert!(!dir.path().join("note.txt").exists());
    assert!(dir.path().join("other.txt").exists());
    assert!(dir.path().join("third.txt").exists());
    assert_eq!(
        statuses(&ran.events),
        vec![
            ("read".to_string(), ItemStatus::Completed),
            ("write".to_string(), ItemStatus::Declined),
            ("write".to_string(), ItemStatus::Completed),
            ("write".to_string(), ItemStatus::Completed),
        ]
    );
    let reqs = server.model_requests();
    let result = reqs[1].result_of("w1");
    assert!(
        result.contains("the user declined this call")
            && result.contains("call it notes.md instead"),
        "{result}"
    );
}

#[tokio::test]
async fn a_headless_session_whose_policy_asks_fails_closed_at_the_first_such_call() {
    let server = MockServer::builder()
        .turn(
            Turn::tool_call("r1", "read", json!({"path": "a.txt"}))
                .with_tool_call("b1", "bash", json!({"command": "touch ran"}))
                .with_tool_call(
                    "w1",
                    "write",
                    json!({"path": "note.txt", "content": "hello\n"}),
                ),
        )
        .turn(Turn::text("never asked"))
        .start()
        .await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "a\n").unwrap();
    let ran = Harness::openai(&server.url(), "mock-model", dir.path())
        .approvals(ApprovalPolicy::OnWrite, None)
        .run("do it")
        .await;
    assert_eq!(ran.summary.outcome, Outcome::Failed);
    assert_eq!(ran.summary.reason, Some(EndReason::ApprovalUnavailable));
    let msg = &ran.summary.error.as_ref().unwrap().message;
    assert!(
        msg.contains("`bash` needs approval (agent.approval = \"on-write\")")
            && msg.contains("--approval never"),
        "{msg}"
    );
    assert!(!dir.path().join("ran").exists());
    assert!(!dir.path().join("note.txt").exists());
    assert_eq!(
        statuses(&ran.events),
        vec![
            ("read".to_string(), ItemStatus::Completed),
            ("bash".to_string(), ItemStatus::Declined),
            ("write".to_string(), ItemStatus::Declined),
        ]
    );
    assert_eq!(
        server.model_requests().len(),
        1,
        "no turn after the refusal"
    );
}

/// What the terminal UI does on Esc (the immediate stop and the submission for the safe
/// points); the input then ends as cancelled.
async fn interrupt_and_see_it_cancelled(
    live: &mut baton_agent::harness::Live,
    tx: &tokio::sync::mpsc::UnboundedSender<baton_agent::agent::Submission>,
) {
    live.interrupter.interrupt();
    tx.send(baton_agent::agent::Submission::Interrupt).unwrap();
    let reason = live
        .next(|e| match e {
            AgentEvent::InputCompleted { reason, .. } => Some(*reason),
            _ => None,
        })
        .await
        .unwrap();
    assert_eq!(reason, Some(EndReason::Cancelled));
}

#[tokio::test]
async fn an_interrupt_stops_a_streaming_turn_at_once_and_the_session_takes_new_input() {
    // A slow answer: 400 chunks 50 ms apart would take 20 s.
    let slow = Turn::text("word ".repeat(400)).delay_ms_per_chunk(50);
    let server = MockServer::builder()
        .turn(slow)
        .turn(Turn::text("Second answer."))
        .start()
        .await;
    let dir = tempfile::tempdir().unwrap();
    let (mut live, tx) =
        Harness::openai(&server.url(), "mock-model", dir.path()).start_open("talk a lot");
    // Some text streamed: the turn is under way.
    live.next(|e| matches!(e, AgentEvent::ItemDelta { .. }).then_some(()))
        .await
        .unwrap();
    interrupt_and_see_it_cancelled(&mut live, &tx).await;
    tx.send(baton_agent::agent::Submission::Input("and now?".into()))
        .unwrap();
    let answer = live
        .next(|e| match e {
            AgentEvent::InputCompleted { final_message, .. } => Some(final_message.clone()),
            _ => None,
        })
        .await
        .unwrap();
    assert_eq!(answer, "Second answer.");
    drop(tx);
    let summary = live.finish().await;
    assert_eq!(summary.outcome, Outcome::Completed);
}

/// Esc (or `/interrupt`) while a `bash` call runs kills the command's whole process group at
/// once, whatever it started in the background, and ends the turn: nothing the command would
/// have done after the interrupt happens, and no process of it is alive a second later.
#[tokio::test]
async fn an_interrupt_kills_the_running_command_at_once() {
    let server = MockServer::builder()
        .turn(Turn::tool_call(
            "b1",
            "bash",
            json!({"command": "sleep 60 & echo $! > bg.pid; echo $$ > sh.pid; sleep 60; touch after.txt"}),
        ))
        .turn(Turn::text("unreachable"))
        .start()
        .await;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let (mut live, tx) =
        Harness::openai(&server.url(), "mock-model", dir.path()).start_open("wait a minute");
    let started = root.clone();
    let up = tokio::task::spawn_blocking(move || {
        baton_testkit::fixture::wait_until(std::time::Duration::from_secs(20), || {
            ["bg.pid", "sh.pid"]
                .iter()
                .all(|f| std::fs::read_to_string(started.join(f)).is_ok_and(|t| t.ends_with('\n')))
        })
    })
    .await
    .unwrap();
    assert!(up, "the command started");
    let pids: Vec<String> = ["bg.pid", "sh.pid"]
        .iter()
        .map(|f| {
            std::fs::read_to_string(root.join(f))
                .unwrap()
                .trim()
                .to_string()
        })
        .collect();
    let interrupted = std::time::Instant::now();
    interrupt_and_see_it_cancelled(&mut live, &tx).await;
    let gone = tokio::task::spawn_blocking(move || {
        baton_testkit::fixture::wait_until(std::time::Duration::from_secs(1), || {
            pids.iter().all(|p| {
                std::fs::read_to_string(format!("/proc/{p}/stat")).map_or(true, |s| {
                    s.split(") ").nth(1).is_some_and(|r| r.starts_with('Z'))
                })
            })
        })
    })
    .await
    .unwrap();
    assert!(
        gone,
        "a process of the interrupted command is still alive 1 s later"
    );
    // Time is the subject: the interrupt ended the command at once, not at the end of its sleep.
    assert!(interrupted.elapsed() < std::time::Duration::from_secs(5));
    assert!(!root.join("after.txt").exists());
    assert_eq!(
        server.model_requests().len(),
        1,
        "no turn after the interrupt"
    );
    drop(tx);
    let _ = live.finish().await;
}
