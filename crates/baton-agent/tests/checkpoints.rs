//! Checkpoints and `/undo` through the real loop in-process: each prompt that writes leaves a
//! checkpoint the loop takes itself, and an undo puts the agent's files back, keeps what the
//! user changed by hand, and tells the model with the next input.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use baton_agent::agent::Submission;
use baton_agent::harness::Harness;
use baton_protocol::AgentEvent;
use baton_testkit::{MockServer, Turn};
use serde_json::json;

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
        .status
        .success();
    assert!(ok, "git {args:?}");
}

fn read(dir: &Path, p: &str) -> Option<String> {
    std::fs::read_to_string(dir.join(p)).ok()
}

#[tokio::test]
async fn an_undo_puts_the_agent_s_files_back_keeps_the_user_s_and_tells_the_model() {
    let server = MockServer::builder()
        // Prompt 1: edit a.txt.
        .turn(Turn::tool_call(
            "c1",
            "write",
            json!({"path": "a.txt", "content": "a1\n"}),
        ))
        .turn(Turn::text("a.txt says a1"))
        // Prompt 2: a new file and b.txt.
        .turn(Turn::tool_call(
            "c2",
            "write",
            json!({"path": "src/new.txt", "content": "new\n"}),
        ))
        .turn(Turn::tool_call(
            "c3",
            "write",
            json!({"path": "b.txt", "content": "agent\n"}),
        ))
        .turn(Turn::text("written"))
        // Prompt 3: only reads, so no checkpoint.
        .turn(Turn::tool_call("c4", "read", json!({"path": "a.txt"})))
        .turn(Turn::text("read it"))
        // Prompt 4, after the undo.
        .turn(Turn::text("understood"))
        .start()
        .await;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    git(root, &["init", "-q", "-b", "main"]);
    std::fs::write(root.join("a.txt"), "a0\n").unwrap();
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "i"]);

    let (mut live, inbox) =
        Harness::openai(&server.url(), "mock-model", root).start_open("make a.txt say a1");
    let saved = |n: u32| {
        move |e: &AgentEvent| match e {
            AgentEvent::CheckpointSaved {
                checkpoint,
                input,
                files,
            } if *checkpoint == n => Some((input.clone(), *files)),
            _ => None,
        }
    };
    let first = live.next(saved(1)).await.unwrap();
    assert_eq!(first, ("make a.txt say a1".to_string(), 1));
    assert_eq!(read(root, "a.txt").as_deref(), Some("a1\n"));

    inbox
        .send(Submission::Input("add new.txt\nand b.txt".into()))
        .unwrap();
    let second = live.next(saved(2)).await.unwrap();
    assert_eq!(second, ("add new.txt".to_string(), 2));
    inbox.send(Submission::Input("read a.txt".into())).unwrap();
    let read_only = live
        .next(|e| match e {
            AgentEvent::CheckpointSaved { checkpoint, .. } => Some(Some(*checkpoint)),
            AgentEvent::InputCompleted { .. } => Some(None),
            _ => None,
        })
        .await
        .unwrap();
    assert_eq!(
        read_only, None,
        "a prompt that only read leaves no checkpoint"
    );

    // The user changes b.txt by hand, then undoes both prompts.
    std::fs::write(root.join("b.txt"), "mine now\n").unwrap();
    inbox.send(Submission::Undo(7)).unwrap();
    let refused = live
        .next(|e| match e {
            AgentEvent::InputRefused { input, reason } => Some((input.clone(), reason.clone())),
            _ => None,
        })
        .await
        .unwrap();
    assert_eq!(refused.0, "/undo 7");
    assert!(refused.1.contains("1, 2"), "{}", refused.1);
    assert_eq!(
        read(root, "a.txt").as_deref(),
        Some("a1\n"),
        "a refused undo writes nothing"
    );

    inbox.send(Submission::Undo(1)).unwrap();
    let undone = live
        .next(|e| match e {
            AgentEvent::SessionUndone {
                checkpoint,
                restored,
                removed,
                kept,
                failed,
            } => Some((
                *checkpoint,
                restored.clone(),
                removed.clone(),
                kept.clone(),
                failed.clone(),
            )),
            _ => None,
        })
        .await
        .unwrap();
    assert_eq!(
        undone,
        (
            1,
            vec!["a.txt".to_string()],
            vec!["src/new.txt".to_string()],
            vec!["b.txt".to_string()],
            Vec::new()
        )
    );
    assert_eq!(read(root, "a.txt").as_deref(), Some("a0\n"));
    assert_eq!(read(root, "src/new.txt"), None);
    assert_eq!(read(root, "b.txt").as_deref(), Some("mine now\n"));

    inbox.send(Submission::Input("what now?".into())).unwrap();
    live.next(|e| matches!(e, AgentEvent::InputCompleted { .. }).then_some(()))
        .await
        .unwrap();
    drop(inbox);
    let _ = live.finish().await;
    let last = server
        .model_requests()
        .last()
        .unwrap()
        .last_user_text()
        .unwrap();
    assert!(last.starts_with("[baton] The user undid"), "{last}");
    assert!(
        last.contains("b.txt") && last.ends_with("what now?"),
        "{last}"
    );
}
