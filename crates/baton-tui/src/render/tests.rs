//! Snapshots of every view, drawn into ratatui's `TestBackend` and written with their styles:
//! each row's text, then the runs of cells whose style is not the default.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use baton_protocol::{AgentEvent, ApprovalRequest, Item, ItemKind, ItemStatus};
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier};
use ratatui::Terminal;
use serde_json::json;

use super::*;
use crate::keymap::Keymap;
use crate::theme::Theme;
use crate::view::View;

/// The buffer as text with its styles: `NN|text`, then `  ^a-b fg/bg/mods` for each run.
pub(crate) fn styled(buf: &Buffer) -> String {
    let area = buf.area;
    let mut out = String::new();
    for y in 0..area.height {
        let mut text = String::new();
        let mut runs: Vec<(u16, u16, String)> = Vec::new();
        let mut skip = 0;
        for x in 0..area.width {
            let cell = &buf[(x, y)];
            if skip > 0 {
                skip -= 1;
            } else {
                text.push_str(cell.symbol());
                skip = unicode_width::UnicodeWidthStr::width(cell.symbol()).saturating_sub(1);
            }
            let st = style_name(cell.fg, cell.bg, cell.modifier);
            match runs.last_mut() {
                Some((_, end, s)) if *s == st && *end + 1 == x => *end = x,
                _ => runs.push((x, x, st)),
            }
        }
        out.push_str(&format!("{y:02}|{}\n", text.trim_end()));
        for (a, b, s) in runs.into_iter().filter(|r| !r.2.is_empty()) {
            out.push_str(&format!("  ^{a}-{b} {s}\n"));
        }
    }
    out
}

fn style_name(fg: Color, bg: Color, m: Modifier) -> String {
    let mut parts = Vec::new();
    if fg != Color::Reset {
        parts.push(format!("fg={fg}"));
    }
    if bg != Color::Reset {
        parts.push(format!("bg={bg}"));
    }
    if !m.is_empty() {
        parts.push(format!("{m:?}").to_lowercase());
    }
    parts.join(" ")
}

fn item(id: &str, status: ItemStatus, kind: ItemKind) -> Item {
    Item {
        id: id.into(),
        status,
        kind,
    }
}

/// A session showing every kind of entry: the reducer's fixture, a user message, a Markdown
/// answer with code and a table, an edit as a diff, and a call still running.
pub(crate) fn fixture() -> View {
    let mut v = View::new(Some(200_000));
    v.user("Fix the failing parser test and explain what was wrong.", 0);
    for (e, t) in crate::view::tests::every_kind() {
        if !matches!(e, AgentEvent::SessionCompleted { .. }) {
            v.apply(&e, t);
        }
    }
    v.apply(&AgentEvent::TurnStarted { turn: 3 }, 3000);
    v.apply(
        &AgentEvent::ItemCompleted {
            item: item(
                "e",
                ItemStatus::Completed,
                ItemKind::ToolCall {
                    call_id: "c-e".into(),
                    tool: "edit".into(),
                    arguments: json!({"path": "src/parse.rs", "old_string": "let n = s.len();", "new_string": "let n = s.chars().count();\nassert!(n > 0);"}),
                    path: Some("src/parse.rs".into()),
                    output: Some("edited src/parse.rs".into()),
                    exit_code: None,
                },
            ),
        },
        3100,
    );
    let answer = "## What was wrong\nThe parser counted **bytes**, not characters, so `é` broke it.\n\n```rust\nlet n = s.chars().count(); // chars\n```\n\n| file | change |\n|---|---|\n| src/parse.rs | count chars |\n\n1. fixed the count\n2. added an assert\n";
    v.apply(
        &AgentEvent::ItemStarted {
            item: item(
                "a",
                ItemStatus::InProgress,
                ItemKind::AgentMessage {
                    text: String::new(),
                },
            ),
        },
        3200,
    );
    v.apply(
        &AgentEvent::ItemCompleted {
            item: item(
                "a",
                ItemStatus::Completed,
                ItemKind::AgentMessage {
                    text: answer.into(),
                },
            ),
        },
        3300,
    );
    v.apply(
        &AgentEvent::ItemStarted {
            item: item(
                "b",
                ItemStatus::InProgress,
                ItemKind::ToolCall {
                    call_id: "c-b".into(),
                    tool: "bash".into(),
                    arguments: json!({"command": "cargo test -p parser"}),
                    path: None,
                    output: None,
                    exit_code: None,
                },
            ),
        },
        3400,
    );
    v
}

const NOW: u64 = 5_650;

fn ui(theme: Theme) -> Ui {
    let mut ui = Ui::new(theme, Keymap::default());
    ui.branch = Some("main".into());
    ui
}

fn draw_at(view: &View, ui: &mut Ui, w: u16, h: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| draw(f, view, ui, NOW)).unwrap();
    styled(t.backend().buffer())
}

#[test]
fn the_session_view_at_every_size_in_both_themes() {
    let view = fixture();
    for (name, theme) in [("dark", Theme::dark()), ("light", Theme::light())] {
        for w in [40, 80, 120, 200] {
            for h in [10, 24, 50] {
                let mut u = ui(theme);
                insta::assert_snapshot!(
                    format!("session_{name}_{w}x{h}"),
                    draw_at(&view, &mut u, w, h)
                );
            }
        }
    }
}

#[test]
fn overlays_and_states() {
    let view = fixture();
    let approval = ApprovalRequest {
        item_id: "w".into(),
        tool: "write".into(),
        arguments: json!({"path": "notes.md", "content": "# Notes\nfirst line\n"}),
        path: Some("notes.md".into()),
    };
    type Setup = Box<dyn Fn(&mut View, &mut Ui)>;
    let cases: Vec<(&str, u16, u16, Setup)> = vec![
        (
            "help",
            80,
            24,
            Box::new(|_, u| u.overlay = Some(Overlay::Help)),
        ),
        // [22/24] Ctrl+C once on an empty composer; messages an interrupt kept queued.
        (
            "quit_armed",
            80,
            12,
            Box::new(|v, u| {
                v.phase = Phase::Idle;
                u.quit_armed = true;
            }),
        ),
        (
            "queued_kept",
            80,
            12,
            Box::new(|v, u| {
                v.phase = Phase::Idle;
                v.queued = vec!["and add a test".into(), "then run it".into()];
                u.hold_queue = true;
            }),
        ),
        // [22/24] `/model` said what it switched to, `/clear` that the model starts fresh.
        (
            "model_switched_and_cleared",
            90,
            12,
            Box::new(|v, _| {
                v.phase = Phase::Idle;
                v.apply(
                    &AgentEvent::SessionRouteSet {
                        from: "mock/mock-model".into(),
                        to: "mock/small-model".into(),
                    },
                    0,
                );
                v.apply(&AgentEvent::SessionCleared { messages: 6 }, 0);
            }),
        ),
        (
            "help_small",
            40,
            10,
            Box::new(|_, u| u.overlay = Some(Overlay::Help)),
        ),
        ("approval", 80, 24, {
            let a = approval.clone();
            Box::new(move |v, _| v.ask(a.clone()))
        }),
        ("approval_small", 40, 10, {
            let a = approval.clone();
            Box::new(move |v, _| v.ask(a.clone()))
        }),
        ("approval_feedback", 80, 24, {
            let a = approval.clone();
            Box::new(move |v, u| {
                v.ask(a.clone());
                u.overlay = Some(Overlay::Feedback("use notes.txt".into()));
            })
        }),
        ("commands", 80, 24, Box::new(|_, u| u.composer.set("/co"))),
        (
            "history_search",
            80,
            24,
            Box::new(|_, u| {
                u.composer.set("run the tests again");
                u.composer.take();
                u.composer.search = Some("tests".into());
            }),
        ),
        (
            "queued",
            80,
            24,
            Box::new(|v, _| v.queued.push("also update the changelog".into())),
        ),
        (
            "focused_expanded",
            80,
            24,
            Box::new(|v, u| {
                let i = v.entries.iter().position(|e| matches!(&e.body, Body::Tool(c) if c.tool == "bash" && c.output.is_some())).unwrap();
                u.focus = Some(i);
                u.expanded.insert(i);
                let r = v
                    .entries
                    .iter()
                    .position(|e| matches!(e.body, Body::Reasoning { .. }))
                    .unwrap();
                u.expanded.insert(r);
            }),
        ),
        ("scrolled", 80, 24, Box::new(|_, u| u.scroll = 7)),
        (
            "multiline_composer",
            80,
            24,
            Box::new(|_, u| u.composer.set("first line\nsecond line\nthird")),
        ),
        (
            "routed",
            120,
            24,
            Box::new(|_, u| u.seats = Some(("mock/frontier".into(), "mock/fast".into()))),
        ),
        (
            "mention",
            80,
            24,
            Box::new(|_, u| {
                u.files = [
                    "src/main.rs",
                    "src/parser/mod.rs",
                    "docs/parsing.md",
                    "README.md",
                ]
                .iter()
                .map(|s| s.to_string())
                .collect();
                u.composer.set("look at @pars");
            }),
        ),
        (
            "shell",
            80,
            24,
            Box::new(|v, _| {
                v.shell(
                    "cargo fmt --check && echo ok",
                    "Diff in src/lib.rs at line 3:\n-fn  x() {}\n+fn x() {}\n",
                    Some(1),
                    false,
                    5600,
                );
            }),
        ),
    ];
    for (name, w, h, setup) in cases {
        let mut v = view.clone();
        let mut u = ui(Theme::dark());
        setup(&mut v, &mut u);
        insta::assert_snapshot!(name, draw_at(&v, &mut u, w, h));
    }
}

/// The fixture session with the project's work beside it: a blocked Flow, a finished task, a
/// workflow stopped at its checkpoint, and two delegations of the session.
fn with_work() -> View {
    use baton_exec::delegate::EntryEvent;
    let mut v = fixture();
    let events = crate::project::tests::fixture_events();
    // The workflow up to its checkpoint only.
    let mut wf = 0;
    for (k, e) in events.iter().enumerate() {
        if e.source.kind == baton_protocol::SourceKind::Workflow {
            wf += 1;
            if wf > 12 {
                continue;
            }
            if wf == 12 {
                // Before its checkpoint, a dispatch that answered without a contract: drawn
                // failed with the runner's reason ([22/24]).
                failed_dispatch(&mut v, k as u64 * 40);
            }
        }
        v.project.apply(e, k as u64 * 40);
    }
    // A budget, and spending against it.
    workflow_lines(
        &mut v,
        &[
            r#"{"seq":13,"ts":"2026-12-04T21:21:09Z","wf":"wf-20261204T212108Z-27931c09","event":"artifact_updated","phase":null,"task_id":null,"agent":null,"decision":null,"reason":"spent","delta":{"run":{"budget_usd":0.015},"spent":{"cost_usd":0.0111,"input_tokens":1200,"output_tokens":300}}}"#,
        ],
        2900,
    );
    v.project.delegation(
        0,
        &EntryEvent::Queued {
            name: "map auth".into(),
            role: "scout".into(),
        },
        3000,
    );
    v.project.delegation(
        0,
        &EntryEvent::Launching {
            model: "mock/fast".into(),
            thinking: None,
            cwd: "/p".into(),
            note: None,
        },
        3100,
    );
    v.project.delegation(
        0,
        &EntryEvent::Activity {
            activity: baton_exec::types::Activity::ToolStart {
                call_id: "c".into(),
                tool: "grep".into(),
                path: Some("src/auth".into()),
            },
        },
        3200,
    );
    v.project.delegation(
        1,
        &EntryEvent::Queued {
            name: "fix login".into(),
            role: "implementer".into(),
        },
        3000,
    );
    v.project.delegation(
        1,
        &EntryEvent::Finished {
            session: None,
            status: baton_exec::delegate::EntryStatus::Done,
        },
        5000,
    );
    v
}

/// A dispatch of the fixture workflow that answered in prose: `agent_started`,
/// `agent_completed` with no contract, and the runner's reason.
fn failed_dispatch(v: &mut View, at: u64) {
    workflow_lines(
        v,
        &[
            r#"{"seq":90,"ts":"2026-12-04T21:21:10Z","wf":"wf-20261204T212108Z-27931c09","event":"agent_started","phase":"investigate","task_id":"t9","agent":"bug-investigator","decision":null,"reason":null}"#,
            r#"{"seq":91,"ts":"2026-12-04T21:21:11Z","wf":"wf-20261204T212108Z-27931c09","event":"agent_completed","phase":"investigate","task_id":"t9","agent":"bug-investigator","decision":"no contract","reason":null}"#,
            r#"{"seq":92,"ts":"2026-12-04T21:21:11Z","wf":"wf-20261204T212108Z-27931c09","event":"contract_parsed","phase":"investigate","task_id":"t9","agent":"bug-investigator","decision":"no contract","reason":"bug-investigator: no contract, only prose (\"looks fine\")"}"#,
        ],
        at,
    );
}

/// Folds workflow log lines of the fixture workflow into `v`'s project.
fn workflow_lines(v: &mut View, lines: &[&str], at: u64) {
    let source = baton_protocol::Source::new(
        baton_protocol::SourceKind::Workflow,
        "wf-20261204T212108Z-27931c09",
    );
    for line in lines {
        v.project.apply(
            &baton_protocol::ProjectEvent {
                pos: baton_protocol::Position {
                    source: source.clone(),
                    offset: 0,
                },
                source: source.clone(),
                ts: None,
                event: baton_events::Payload::parse(
                    baton_protocol::SourceKind::Workflow,
                    line.as_bytes(),
                )
                .unwrap(),
            },
            at,
        );
    }
}

#[test]
fn the_side_panel_and_the_views_it_opens() {
    use crate::panel::{Detail, Form, Panel};
    use crate::Request;
    let view = with_work();
    let flow = "20261205-085300-0830".to_string();
    let workflow = "wf-20261204T212108Z-27931c09".to_string();
    let cases: Vec<(&str, u16, u16, Panel)> = vec![
        (
            "panel_wide",
            140,
            30,
            Panel {
                open: true,
                ..Panel::default()
            },
        ),
        (
            "panel_narrow",
            80,
            24,
            Panel {
                open: true,
                selected: 1,
                ..Panel::default()
            },
        ),
        (
            "panel_small",
            40,
            10,
            Panel {
                open: true,
                ..Panel::default()
            },
        ),
        (
            "flow_view",
            100,
            24,
            Panel {
                open: true,
                detail: Some(Detail::Flow(flow.clone())),
                ..Panel::default()
            },
        ),
        (
            "flow_guidance",
            100,
            24,
            Panel {
                open: true,
                detail: Some(Detail::Flow(flow.clone())),
                form: Some(Form::Guidance {
                    flow: flow.clone(),
                    text: "create b.txt with the right words".into(),
                }),
                ..Panel::default()
            },
        ),
        (
            "workflow_checkpoint",
            100,
            30,
            Panel {
                open: true,
                detail: Some(Detail::Workflow(workflow.clone())),
                ..Panel::default()
            },
        ),
        (
            "workflow_confirm",
            100,
            30,
            Panel {
                open: true,
                detail: Some(Detail::Workflow(workflow.clone())),
                form: Some(Form::Confirm {
                    question: "answer workflow wf-1 with “critical only”?".into(),
                    request: Request::Answer {
                        workflow: workflow.clone(),
                        text: "critical only".into(),
                    },
                }),
                ..Panel::default()
            },
        ),
        (
            "attached_flow",
            80,
            24,
            Panel {
                open: true,
                pinned: true,
                detail: Some(Detail::Flow(flow.clone())),
                ..Panel::default()
            },
        ),
        (
            "task_log",
            80,
            24,
            Panel {
                open: true,
                viewer: Some((
                    "task t1".into(),
                    vec!["[hb] started (helper)".into(), "[hb] done".into()],
                    0,
                )),
                ..Panel::default()
            },
        ),
    ];
    for (name, w, h, panel) in cases {
        let mut u = ui(Theme::dark());
        let mut v = view.clone();
        if panel.pinned {
            // Attached: no session of its own.
            v = View::new(None);
            v.project = view.project.clone();
            u.attached = true;
        }
        u.panel = panel;
        insta::assert_snapshot!(name, draw_at(&v, &mut u, w, h));
    }
}

/// A routed session: the Coordinator assigns, the Executor works and reports, the Coordinator
/// answers — drawn as two lanes.
#[test]
fn a_routed_session_on_a_wide_screen_is_two_lanes() {
    let mut v = View::new(Some(100_000));
    let msg = |id: &str, text: &str| {
        [
            AgentEvent::ItemStarted {
                item: item(
                    id,
                    ItemStatus::InProgress,
                    ItemKind::AgentMessage {
                        text: String::new(),
                    },
                ),
            },
            AgentEvent::ItemCompleted {
                item: item(
                    id,
                    ItemStatus::Completed,
                    ItemKind::AgentMessage { text: text.into() },
                ),
            },
        ]
    };
    let routing = |kind: &str, detail: &str, who: &str| AgentEvent::RoutingRecorded {
        record: json!({"op": "o", "step": "s", "type": kind, "objective": detail}),
        responsible: Some(who.into()),
    };
    v.user("make the parser count characters", 0);
    for e in msg("c1", "I will hand this to the Executor with a contract.") {
        v.apply(&e, 10);
    }
    v.apply(
        &routing("assigned", "count chars in parse()", "executor"),
        20,
    );
    v.apply(
        &AgentEvent::ItemCompleted {
            item: item(
                "e1",
                ItemStatus::Completed,
                ItemKind::ToolCall {
                    call_id: "x".into(),
                    tool: "edit".into(),
                    arguments: json!({"path": "src/parse.rs", "old_string": "len()", "new_string": "chars().count()"}),
                    path: Some("src/parse.rs".into()),
                    output: None,
                    exit_code: None,
                },
            ),
        },
        30,
    );
    v.apply(
        &AgentEvent::EvidenceReferenced {
            call_id: "x".into(),
            reference: "ctx:t1".into(),
        },
        31,
    );
    v.apply(
        &AgentEvent::RoutingRecorded {
            record: json!({"op": "o", "step": "s", "type": "projection_added", "refs": ["ctx:t1"]}),
            responsible: Some("executor".into()),
        },
        32,
    );
    for e in msg("e2", "Done: parse() counts chars; tests pass.") {
        v.apply(&e, 40);
    }
    v.apply(&routing("report_saved", "completed", "coordinator"), 50);
    for e in msg("c2", "Accepted the report.") {
        v.apply(&e, 60);
    }
    let seats: Vec<Option<&str>> = v.entries.iter().map(|e| e.seat.as_deref()).collect();
    assert_eq!(
        seats,
        vec![
            None,
            None,
            None,
            Some("executor"),
            None, // the projection step: both lanes
            Some("executor"),
            None,
            None
        ]
    );
    let mut u = ui(Theme::dark());
    u.seats = Some(("mock/frontier".into(), "mock/fast".into()));
    insta::assert_snapshot!("routed_lanes", draw_at(&v, &mut u, 140, 20));
}

/// Every view at every size: 40/80/120/200 columns × 10/24/50 rows, in both themes, one
/// snapshot per view and theme holding its twelve sizes.
#[test]
fn every_view_at_every_size_in_both_themes() {
    use crate::panel::{Detail, Panel};
    let work = with_work();
    let approval = ApprovalRequest {
        item_id: "w".into(),
        tool: "edit".into(),
        arguments: json!({"path": "src/parse.rs", "old_string": "len()", "new_string": "chars().count()"}),
        path: Some("src/parse.rs".into()),
    };
    type Setup = Box<dyn Fn(&mut View, &mut Ui)>;
    let views: Vec<(&str, Setup)> = vec![
        (
            "panel",
            Box::new(|_, u| {
                u.panel = Panel {
                    open: true,
                    ..Panel::default()
                }
            }),
        ),
        (
            "flow",
            Box::new(|_, u| {
                u.panel = Panel {
                    open: true,
                    detail: Some(Detail::Flow("20261205-085300-0830".into())),
                    ..Panel::default()
                }
            }),
        ),
        (
            "workflow",
            Box::new(|_, u| {
                u.panel = Panel {
                    open: true,
                    detail: Some(Detail::Workflow("wf-20261204T212108Z-27931c09".into())),
                    ..Panel::default()
                }
            }),
        ),
        ("help", Box::new(|_, u| u.overlay = Some(Overlay::Help))),
        ("approval", {
            let a = approval.clone();
            Box::new(move |v, _| v.ask(a.clone()))
        }),
    ];
    for (name, setup) in &views {
        for (theme_name, theme) in [("dark", Theme::dark()), ("light", Theme::light())] {
            let mut all = String::new();
            for w in [40, 80, 120, 200] {
                for h in [10, 24, 50] {
                    let mut v = work.clone();
                    let mut u = ui(theme);
                    setup(&mut v, &mut u);
                    all.push_str(&format!("── {w}x{h} ──\n"));
                    all.push_str(&draw_at(&v, &mut u, w, h));
                }
            }
            insta::assert_snapshot!(format!("sizes_{name}_{theme_name}"), all);
        }
    }
}

#[test]
fn a_frame_lays_out_only_the_entries_it_shows() {
    let mut view = View::new(None);
    for n in 0..10_000 {
        view.user(&format!("question {n}"), n);
        view.apply(
            &AgentEvent::InputCompleted {
                final_message: String::new(),
                reason: None,
            },
            n,
        );
    }
    let mut u = ui(Theme::dark());
    let screen = draw_at(&view, &mut u, 80, 24);
    assert!(screen.contains("question 9999"));
    // Only the entries on screen (and the one cut at its top) were laid out.
    let laid_out = u.cache.iter().filter(|c| c.is_some()).count();
    assert!(laid_out <= 12, "{laid_out} entries laid out");
}

/// A managed worker in the side panel, beside the project's other work: its name and role, its
/// turns, tokens and cost, and its last answer.
#[test]
fn a_worker_row_in_the_side_panel() {
    let mut v = with_work();
    for (k, e) in crate::project::tests::worker_events("w1")
        .iter()
        .enumerate()
    {
        v.project.apply(e, 1000 + k as u64 * 40);
    }
    let mut u = ui(Theme::dark());
    u.panel = crate::panel::Panel {
        open: true,
        ..crate::panel::Panel::default()
    };
    insta::assert_snapshot!("panel_with_a_worker", draw_at(&v, &mut u, 100, 30));
}

/// `/undo`: the list of checkpoints over the session, newest first, the cursor on the newest;
/// then, once picked, the notice of what was put back and what was kept.
#[test]
fn the_undo_list_and_what_an_undo_did() {
    let mut v = View::new(Some(200_000));
    v.user("make a.txt say a1", 0);
    for (n, input, files) in [
        (1, "make a.txt say a1", 1),
        (2, "add the parser tests and a fixture for the é case", 3),
    ] {
        v.apply(
            &AgentEvent::CheckpointSaved {
                checkpoint: n,
                input: input.into(),
                files,
            },
            100,
        );
    }
    let mut u = ui(Theme::dark());
    u.overlay = Some(crate::overlay::Overlay::Undo(1));
    insta::assert_snapshot!("undo_list", draw_at(&v, &mut u, 80, 16));
    v.apply(
        &AgentEvent::SessionUndone {
            checkpoint: 2,
            restored: vec!["src/parse.rs".into()],
            removed: vec!["tests/fixture.txt".into()],
            kept: vec!["README.md".into()],
            failed: Vec::new(),
        },
        200,
    );
    assert_eq!(v.checkpoints.len(), 1);
    let mut u = ui(Theme::dark());
    insta::assert_snapshot!("undo_done", draw_at(&v, &mut u, 80, 16));
}

/// An edit drawn as a line diff: the lines it repeated to place itself are context (one beside
/// the change), the removed and added lines numbered as the file was and is.
#[test]
fn an_edit_shows_its_change_with_a_line_of_context_and_line_numbers() {
    let mut v = View::new(Some(200_000));
    v.user("Count characters, not bytes.", 0);
    v.apply(&AgentEvent::TurnStarted { turn: 1 }, 10);
    v.apply(
        &AgentEvent::ItemCompleted {
            item: item(
                "e",
                ItemStatus::Completed,
                ItemKind::ToolCall {
                    call_id: "c-e".into(),
                    tool: "edit".into(),
                    arguments: json!({
                        "path": "src/parse.rs",
                        "old_string": "/// How long `s` is.\nfn count(s: &str) -> usize {\n    s.len()\n}",
                        "new_string": "/// How long `s` is.\nfn count(s: &str) -> usize {\n    s.chars().count()\n}"
                    }),
                    path: Some("src/parse.rs".into()),
                    output: Some("replaced 1 occurrence at line 12 of src/parse.rs".into()),
                    exit_code: None,
                },
            ),
        },
        20,
    );
    let mut u = ui(Theme::dark());
    insta::assert_snapshot!("edit_with_context", draw_at(&v, &mut u, 80, 12));
}

/// `/resume`'s list, drawn over the session: the saved sessions, newest first, the cursor on
/// the second.
#[test]
fn slash_resume_lists_the_saved_sessions_over_the_session() {
    let v = fixture();
    let mut u = ui(Theme::dark());
    u.sessions = (0..3)
        .map(|i| crate::picker::Choice {
            id: format!("019af0c2-0000-7000-8000-0000a1b2c3d{i}"),
            short: format!("a1b2c3d{i}"),
            when: format!("2026-12-06 16:{:02}", 50 - i),
            outcome: "completed".into(),
            cost: format!("${:.4}", 0.0042 * f64::from(i + 1)),
            route: "mock/mock-model".into(),
            task: format!("question number {i}: fix the parser"),
        })
        .collect();
    u.overlay = Some(Overlay::Sessions(crate::picker::Cursor { at: 1, top: 0 }));
    insta::assert_snapshot!("resume_list", draw_at(&v, &mut u, 100, 10));
}
