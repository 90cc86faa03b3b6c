#![allow(clippy::unwrap_used, clippy::expect_used)]

use baton_protocol::sandbox::SandboxMode;
use baton_protocol::{
    ErrorCode, ErrorInfo, Item, ItemKind, ItemStatus, Outcome, SandboxInfo, Usage,
};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

fn item(id: &str, status: ItemStatus, kind: ItemKind) -> Item {
    Item {
        id: id.into(),
        status,
        kind,
    }
}

fn tool(id: &str, status: ItemStatus, output: Option<&str>) -> Item {
    item(
        id,
        status,
        ItemKind::ToolCall {
            call_id: format!("c-{id}"),
            tool: "bash".into(),
            arguments: json!({"command": "cargo test\n--quiet"}),
            path: None,
            output: output.map(str::to_string),
            exit_code: output.map(|_| 0),
        },
    )
}

fn err(message: &str) -> ErrorInfo {
    ErrorInfo {
        code: ErrorCode::Overloaded,
        message: message.into(),
    }
}

/// One event of every kind, with the time each arrives at.
pub(crate) fn every_kind() -> Vec<(AgentEvent, u64)> {
    let usage = Usage {
        input_tokens: 1200,
        cached_input_tokens: 200,
        output_tokens: 300,
        cache_write_tokens: 0,
    };
    vec![
        (
            AgentEvent::SessionStarted {
                protocol_version: 1,
                session_id: "s-1".into(),
                role: "implementer".into(),
                model: "mock/a".into(),
                cwd: "/p".into(),
                resumed: true,
                sandbox: Some(SandboxInfo {
                    mode: SandboxMode::WorkspaceWrite,
                    writable: vec!["/p".into()],
                    network: false,
                }),
            },
            0,
        ),
        (AgentEvent::TurnStarted { turn: 1 }, 10),
        (
            AgentEvent::ItemStarted {
                item: item(
                    "r",
                    ItemStatus::InProgress,
                    ItemKind::Reasoning {
                        text: String::new(),
                    },
                ),
            },
            11,
        ),
        (
            AgentEvent::ItemDelta {
                item_id: "r".into(),
                delta: "let me look".into(),
            },
            12,
        ),
        (
            AgentEvent::ItemCompleted {
                item: item(
                    "r",
                    ItemStatus::Completed,
                    ItemKind::Reasoning {
                        text: "let me look".into(),
                    },
                ),
            },
            13,
        ),
        (
            AgentEvent::ItemStarted {
                item: item(
                    "m",
                    ItemStatus::InProgress,
                    ItemKind::AgentMessage {
                        text: String::new(),
                    },
                ),
            },
            14,
        ),
        (
            AgentEvent::ItemDelta {
                item_id: "m".into(),
                delta: "Running ".into(),
            },
            15,
        ),
        (
            AgentEvent::ItemDelta {
                item_id: "m".into(),
                delta: "the tests.".into(),
            },
            16,
        ),
        (
            AgentEvent::ItemCompleted {
                item: item(
                    "m",
                    ItemStatus::Completed,
                    ItemKind::AgentMessage {
                        text: "Running the tests.".into(),
                    },
                ),
            },
            17,
        ),
        (
            AgentEvent::TurnCompleted {
                turn: 1,
                usage,
                cost_usd: Some(0.01),
            },
            18,
        ),
        (
            AgentEvent::ItemStarted {
                item: tool("t", ItemStatus::InProgress, None),
            },
            20,
        ),
        (
            AgentEvent::ItemUpdated {
                item: tool("t", ItemStatus::InProgress, None),
            },
            1020,
        ),
        (
            AgentEvent::ItemCompleted {
                item: tool("t", ItemStatus::Completed, Some("ok: 12 passed")),
            },
            2520,
        ),
        (
            AgentEvent::EvidenceReferenced {
                call_id: "c-t".into(),
                reference: "ctx:t1".into(),
            },
            2520,
        ),
        (
            AgentEvent::ItemCompleted {
                item: tool("d", ItemStatus::Declined, Some("not run: policy")),
            },
            2521,
        ),
        (AgentEvent::TurnStarted { turn: 2 }, 2600),
        (
            AgentEvent::TurnRetrying {
                turn: 2,
                attempt: 2,
                delay_ms: 1500,
                error: err("busy"),
            },
            2601,
        ),
        (
            AgentEvent::TurnRouteChanged {
                turn: 2,
                from: "mock/a".into(),
                to: "mock/b".into(),
                error: err("quota"),
            },
            2602,
        ),
        (
            AgentEvent::TurnFailed {
                turn: 2,
                error: err("still busy"),
            },
            2603,
        ),
        (
            AgentEvent::SessionCompacted {
                seat: Some("coordinator".into()),
                trigger: "auto".into(),
                tokens_before: 9000,
                tokens_after: 1500,
                kept: 4,
            },
            2604,
        ),
        (
            AgentEvent::RoutingRecorded {
                record: json!({"op": "o1", "step": "t2", "type": "assigned", "objective": "fix the test"}),
                responsible: Some("executor".into()),
            },
            2605,
        ),
        (
            AgentEvent::RoutingRecorded {
                record: json!({"op": "o2", "step": "t3", "type": "projection_added", "refs": ["ctx:t1"]}),
                responsible: Some("executor".into()),
            },
            2605,
        ),
        (
            AgentEvent::InputRefused {
                input: "/resume".into(),
                reason: "no assignment was interrupted: nothing to resume".into(),
            },
            2605,
        ),
        (
            AgentEvent::InputCompleted {
                final_message: "stopped".into(),
                reason: Some(EndReason::Cancelled),
            },
            2606,
        ),
        (
            AgentEvent::TurnCompleted {
                turn: 2,
                usage,
                cost_usd: None,
            },
            2607,
        ),
        (
            AgentEvent::SessionCompleted {
                outcome: Outcome::Partial,
                reason: Some(EndReason::Cancelled),
                final_message: "stopped".into(),
                turns: 2,
                usage: Usage::default(),
                cost_usd: Some(0.01),
                error: None,
                routes: Vec::new(),
            },
            2700,
        ),
    ]
}

fn fold(events: &[(AgentEvent, u64)]) -> View {
    let mut v = View::new(Some(10_000));
    for (e, t) in events {
        v.apply(e, *t);
    }
    v
}

/// Each entry in one line: what a person sees of it.
fn summary(v: &View) -> Vec<String> {
    v.entries
        .iter()
        .map(|e| match &e.body {
            Body::User { text } => format!("user {text}"),
            Body::Assistant { text, streaming } => {
                format!("assistant {text:?} streaming={streaming}")
            }
            Body::Reasoning { text, streaming } => {
                format!("reasoning {text:?} streaming={streaming}")
            }
            Body::Tool(c) => format!(
                "tool {} {:?} {} {:?} {:?} {}ms{}{}",
                c.tool,
                c.status,
                c.summary(),
                c.output,
                c.exit_code,
                c.elapsed_ms(9999),
                c.reference
                    .as_deref()
                    .map(|r| format!(" {r}"))
                    .unwrap_or_default(),
                if c.selected { " selected" } else { "" }
            ),
            Body::Notice { level, text } => format!("{level:?} {text}"),
            Body::Routing {
                what,
                detail,
                responsible,
            } => format!("routing {what} {detail} {responsible:?}"),
        })
        .collect()
}

#[test]
fn every_event_kind_folds_into_the_view_asserted_whole() {
    let v = fold(&every_kind());
    assert_eq!(
        summary(&v),
        vec![
            "Info resumed session s-1",
            "reasoning \"let me look\" streaming=false",
            "assistant \"Running the tests.\" streaming=false",
            "tool bash Completed cargo test … Some(\"ok: 12 passed\") Some(0) 2500ms ctx:t1 selected",
            "tool bash Declined cargo test … Some(\"not run: policy\") Some(0) 0ms",
            "Warn turn 2: retrying (attempt 2) in 1.5s: busy",
            "Warn mock/a failed (quota): continuing on mock/b",
            "Error turn 2 failed (overloaded): still busy",
            "Info context compacted (coordinator), auto: 9000 → 1500 tokens",
            "routing assigned fix the test Some(\"executor\")",
            "routing projection_added ctx:t1 Some(\"executor\")",
            "Warn /resume: no assignment was interrupted: nothing to resume",
            "Warn interrupted",
            "Warn session partial: cancelled",
        ]
    );
    assert_eq!(
        v.session,
        SessionInfo {
            id: "s-1".into(),
            role: "implementer".into(),
            model: "mock/b".into(),
            cwd: "/p".into(),
            sandbox: Some("workspace-write".into()),
            resumed: true,
        }
    );
    assert_eq!(
        v.phase,
        Phase::Ended {
            outcome: Outcome::Partial
        }
    );
    assert_eq!(v.turns, 2);
    assert_eq!(
        v.usage,
        Usage {
            input_tokens: 2400,
            cached_input_tokens: 400,
            output_tokens: 600,
            cache_write_tokens: 0
        }
    );
    assert_eq!(v.cost_usd, Some(0.01));
    assert_eq!(v.context_used, 1500);
    assert_eq!(
        v.routing,
        Some(Routing {
            responsible: Some("executor".into())
        })
    );
    assert!(v.queued.is_empty() && v.approval.is_none());
    // One change per event, and one more: the call completed without a start is started first.
    assert_eq!(v.rev, every_kind().len() as u64 + 1);
}

#[test]
fn folding_in_chunks_equals_folding_at_once() {
    let events = every_kind();
    let whole = fold(&events);
    for size in 1..=events.len() {
        let mut v = View::new(Some(10_000));
        for chunk in events.chunks(size) {
            let mut part = v.clone();
            for (e, t) in chunk {
                part.apply(e, *t);
            }
            v = part;
        }
        assert_eq!(v, whole, "chunks of {size}");
    }
}

#[test]
fn input_sent_while_working_is_queued_then_handed_over_at_a_turn_s_end() {
    let mut v = View::new(None);
    v.user("first", 0);
    assert!(matches!(v.phase, Phase::Working { since_ms: 0 }));
    v.user("also do this", 5);
    assert_eq!(v.queued, vec!["also do this".to_string()]);
    assert_eq!(v.entries.len(), 1);
    assert_eq!(v.flush_queue(9), vec!["also do this".to_string()]);
    assert!(v.queued.is_empty());
    assert_eq!(summary(&v), vec!["user first", "user also do this"]);
    v.apply(
        &AgentEvent::InputCompleted {
            final_message: "ok".into(),
            reason: None,
        },
        10,
    );
    assert_eq!(v.phase, Phase::Idle);
    assert!(v.flush_queue(11).is_empty());
}

#[test]
fn an_approval_is_asked_and_cleared_when_its_call_completes() {
    let mut v = View::new(None);
    v.ask(ApprovalRequest {
        item_id: "t".into(),
        tool: "bash".into(),
        arguments: json!({"command": "ls"}),
        path: None,
    });
    assert!(v.approval.is_some());
    v.apply(
        &AgentEvent::ItemCompleted {
            item: tool("t", ItemStatus::Declined, Some("no")),
        },
        1,
    );
    assert!(v.approval.is_none());
}

#[test]
fn a_resumed_conversation_becomes_entries_with_each_call_s_result() {
    use baton_protocol::{AssistantPart, Message};
    let mut v = View::new(None);
    v.history(&[
        Message::user("fix it"),
        Message::Assistant {
            parts: vec![
                AssistantPart::Reasoning {
                    text: "hm".into(),
                    signature: None,
                    provider_id: None,
                },
                AssistantPart::Text {
                    text: "Looking.".into(),
                },
                AssistantPart::ToolCall {
                    id: "c1".into(),
                    name: "read".into(),
                    arguments: r#"{"path":"a.rs"}"#.into(),
                    provider_data: None,
                },
            ],
        },
        Message::Tool {
            call_id: "c1".into(),
            tool: "read".into(),
            output: "boom".into(),
            is_error: true,
        },
    ]);
    assert_eq!(
        summary(&v),
        vec![
            "user fix it",
            "reasoning \"hm\" streaming=false",
            "assistant \"Looking.\" streaming=false",
            "tool read Failed a.rs Some(\"boom\") None 0ms",
        ]
    );
}

/// [22/24] `/model` and `/clear` as the session answers them: the header's route changes, and
/// each is said in a line.
#[test]
fn a_route_switch_and_a_clear_are_said_and_the_route_is_the_new_one() {
    let v = fold(&[
        (
            AgentEvent::SessionRouteSet {
                from: "mock/a".into(),
                to: "mock/c".into(),
            },
            1,
        ),
        (AgentEvent::SessionCleared { messages: 1 }, 2),
    ]);
    assert_eq!(v.session.model, "mock/c");
    assert_eq!(
        summary(&v),
        vec![
            "Info route mock/c from the next turn (was mock/a)",
            "Info conversation cleared: the model sees none of the 1 message above (the transcript keeps them)",
        ]
    );
}

/// [22/24] A diff carries the file's line numbers where they are known: a write's from 1, an
/// edit's from the line its result says it replaced at (none before it ran).
#[test]
fn diff_lines_carry_the_file_s_line_numbers() {
    let call = |tool: &str, args: serde_json::Value, output: Option<&str>| ToolCell {
        item_id: "i".into(),
        call_id: "c".into(),
        reference: None,
        selected: false,
        tool: tool.into(),
        arguments: args,
        path: None,
        status: ItemStatus::Completed,
        started_ms: 0,
        ended_ms: Some(1),
        output: output.map(str::to_string),
        exit_code: None,
    };
    let numbers = |c: &ToolCell| -> Vec<(char, Option<usize>)> {
        c.diff().unwrap().iter().map(|(s, n, _)| (*s, *n)).collect()
    };
    let write = call(
        "write",
        serde_json::json!({"path": "a", "content": "x\ny\n"}),
        None,
    );
    assert_eq!(numbers(&write), [('+', Some(1)), ('+', Some(2))]);
    let args = serde_json::json!({"path": "a", "old_string": "a\nb", "new_string": "c"});
    let done = call(
        "edit",
        args.clone(),
        Some("Edited `a`: replaced 1 occurrence at line 12 (2 lines → 1 line).\n12 c"),
    );
    assert_eq!(
        numbers(&done),
        [('-', Some(12)), ('-', Some(13)), ('+', Some(12))]
    );
    let asked = call("edit", args, None);
    assert_eq!(numbers(&asked), [('-', None), ('-', None), ('+', None)]);
}
