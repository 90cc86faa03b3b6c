#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

const FIXTURES: [(SourceKind, &str, &str); 3] = [
    (
        SourceKind::Workflow,
        "wf-20261204T212108Z-27931c09",
        include_str!("../../baton-events/src/projection/fixtures/workflow.events.jsonl"),
    ),
    (
        SourceKind::Flow,
        "20261205-085300-0830",
        include_str!("../../baton-events/src/projection/fixtures/flow.events.jsonl"),
    ),
    (
        SourceKind::Task,
        "t1a245681cbdac0a8",
        include_str!("../../baton-events/src/projection/fixtures/task.events.jsonl"),
    ),
];

/// A state folder holding the logs the binary wrote (the projection's fixtures).
fn project() -> (tempfile::TempDir, StateDir) {
    let dir = tempfile::tempdir().unwrap();
    let state = StateDir::at(dir.path().join("state"));
    for (kind, id, text) in FIXTURES {
        let (folder, suffix) = baton_events::feed::location(&state, kind);
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join(format!("{id}{suffix}")), text).unwrap();
    }
    (dir, state)
}

fn lines_of(kind: SourceKind) -> usize {
    FIXTURES
        .iter()
        .filter(|f| f.0 == kind)
        .map(|f| f.2.lines().count())
        .sum()
}

fn history(state: &StateDir) -> History {
    let mut h = History::new(state.clone(), Prices::default());
    h.catch_up();
    h
}

#[test]
fn the_events_list_is_paged_newest_first_and_filtered_here() {
    let (_dir, state) = project();
    let mut h = history(&state);
    let all =
        lines_of(SourceKind::Workflow) + lines_of(SourceKind::Flow) + lines_of(SourceKind::Task);
    assert_eq!(h.len(), all);
    let q = |skip, limit| Query {
        skip,
        limit,
        ..Query::default()
    };
    let first = h.page(&q(0, 10));
    assert_eq!(
        (first.total, first.matched, first.items.len()),
        (all, all, 10)
    );
    let places: Vec<usize> = first.items.iter().map(|i| i.i).collect();
    assert_eq!(places, (all - 10..all).rev().collect::<Vec<_>>());
    // The last page is short, and past the end there is nothing.
    assert_eq!(h.page(&q(all - 3, 10)).items.len(), 3);
    assert!(h.page(&q(all + 5, 10)).items.is_empty());
    // At most MOST_LINES a page.
    assert_eq!(h.page(&q(0, 100_000)).items.len(), all.min(MOST_LINES));

    // A kind, then a text: every line taken is of that kind and holds the text.
    let flows = h.page(&Query {
        kind: Some(SourceKind::Flow),
        limit: 1000,
        ..Query::default()
    });
    assert_eq!(flows.matched, lines_of(SourceKind::Flow));
    assert!(flows.items.iter().all(|i| i.kind == SourceKind::Flow));
    let reviewer = h.page(&Query {
        text: "code-reviewer".into(),
        limit: 1000,
        ..Query::default()
    });
    assert!(reviewer.matched > 0 && reviewer.matched < all);
    assert!(reviewer
        .items
        .iter()
        .all(|i| format!("{} {} {}", i.id, i.name, i.text).contains("code-reviewer")));
    // `upto`: the list the page knows of does not shift when lines are appended after it.
    let known = h.page(&Query {
        limit: 1,
        upto: Some(5),
        ..Query::default()
    });
    assert_eq!((known.matched, known.items[0].i), (5, 4));
}

#[test]
fn a_line_appended_is_read_when_the_page_knows_of_it() {
    let (_dir, state) = project();
    let mut h = history(&state);
    let before = h.len();
    let (folder, suffix) = baton_events::feed::location(&state, SourceKind::Task);
    let log = folder.join(format!("t1a245681cbdac0a8{suffix}"));
    let last = FIXTURES[2].2.lines().last().unwrap().to_string();
    let mut text = std::fs::read_to_string(&log).unwrap();
    text.push_str(&last);
    text.push('\n');
    std::fs::write(&log, text).unwrap();
    // Read a moment ago, and the page knows of nothing more: not read again.
    h.catch_up_for(Some(before));
    assert_eq!(h.len(), before);
    // The page knows of one more line (the live feed told it): read.
    h.catch_up_for(Some(before + 1));
    assert_eq!(h.len(), before + 1);
    let top = h.page(&Query {
        limit: 1,
        ..Query::default()
    });
    assert_eq!(top.items[0].id, "t1a245681cbdac0a8");
}

#[test]
fn what_was_spent_is_summed_by_model_role_day_and_workflow() {
    let (_dir, state) = project();
    let h = history(&state);
    // Every dispatch of the BUILD (8, a remediation's rerun among them) and the task's child.
    let by_workflow = h.cost(By::Workflow);
    assert_eq!(by_workflow.dispatches, 9);
    let wf = by_workflow
        .sums
        .iter()
        .find(|s| s.key == "wf-20261204T212108Z-27931c09")
        .unwrap();
    assert_eq!(wf.count, 8);
    assert!(by_workflow
        .sums
        .iter()
        .any(|s| s.key == "task t1a245681cbdac0a8" && s.count == 1));
    for by in [By::Model, By::Role, By::Day] {
        let c = h.cost(by);
        assert_eq!(c.sums.iter().map(|s| s.count).sum::<u64>(), 9, "{by:?}");
        let total: f64 = c.sums.iter().map(|s| s.usd).sum();
        assert!((total - c.total_usd).abs() < 1e-9);
        // The largest first.
        assert!(c.sums.windows(2).all(|w| w[0].usd >= w[1].usd));
    }
    let days = h.cost(By::Day);
    assert!(days
        .sums
        .iter()
        .all(|s| s.key.len() == 10 && s.key.starts_with("2026-")));
    assert!("hour"
        .parse::<By>()
        .unwrap_err()
        .contains("model, role, day or workflow"));
}

#[test]
fn the_overview_sums_up_each_log_with_its_last_event_named() {
    let (_dir, state) = project();
    let h = history(&state);
    let (o, projection, cursor) = h.overview();
    assert_eq!(o.events, h.len());
    assert_eq!(o.logs.len(), 3);
    assert_eq!(o.docs.len(), 3);
    assert_eq!(projection.docs(), o.docs);
    let wf = o
        .logs
        .iter()
        .find(|x| x.kind == SourceKind::Workflow)
        .unwrap();
    assert_eq!(wf.events as usize, lines_of(SourceKind::Workflow));
    let last: Value = serde_json::from_str(FIXTURES[0].2.lines().last().unwrap()).unwrap();
    assert_eq!(wf.last, last["event"].as_str().unwrap());
    assert!(wf.first.as_deref() <= wf.at.as_deref());
    // The cursor is after every line: a feed from it reads nothing more.
    let (more, _) = Feed::new(state.clone(), Filter::default(), cursor.clone()).poll();
    assert!(more.is_empty());
}

#[test]
fn one_workflows_events_and_a_damaged_line_said() {
    let (_dir, state) = project();
    let (events, problems) = workflow_events(&state, "wf-20261204T212108Z-27931c09");
    assert_eq!(events.len(), lines_of(SourceKind::Workflow));
    assert!(problems.is_empty());
    assert!(events
        .iter()
        .all(|e| e["source"]["id"] == "wf-20261204T212108Z-27931c09"));
    // A damaged line: the events before it, and what was lost.
    let (folder, suffix) = baton_events::feed::location(&state, SourceKind::Workflow);
    let log = folder.join(format!("wf-20261204T212108Z-27931c09{suffix}"));
    let mut text: Vec<String> = FIXTURES[0].2.lines().map(str::to_string).collect();
    text.insert(3, "{not json".into());
    std::fs::write(&log, format!("{}\n", text.join("\n"))).unwrap();
    let (events, problems) = workflow_events(&state, "wf-20261204T212108Z-27931c09");
    assert_eq!(events.len(), 3);
    assert_eq!(problems.len(), 1, "{problems:?}");
}
