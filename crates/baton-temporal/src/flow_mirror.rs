//! A Flow on Temporal, recorded where its starter is in the local Flow engine's own log
//! (`.baton/state/flows/<id>.events.jsonl`): the same events, in the same state model, so
//! `baton events`, `baton flow status`, the terminal UI and the dashboard show it as they show a
//! local Flow. The record is what the starter saw, written as it follows the Flow (and whenever
//! `baton flow status --engine temporal` reads it); its `flow.created` says the Flow runs on
//! Temporal, and the local engine never drives it.
//!
//! A unit's path through a Flow on Temporal is one line — implementing, implemented, then landed
//! or stopped — so whatever the starter missed between two looks is written in order when it
//! sees where the unit is now.

use std::path::Path;

use baton_flow::event::{
    BlockReason, ChildSummary, FailureKind, FlowEvent, OnTemporal, UnitOutcome,
};
use baton_flow::state::UnitStatus;
use baton_flow::store::{FlowStore, StoreError};

use crate::flow::{FlowInput, FlowRun, FlowStatus, UnitRow, UnitState};

/// Starts the record of the Flow `input` starts, in the project at `root`. A record already
/// there is left as it is.
pub fn created(root: &Path, input: &FlowInput) -> Result<(), String> {
    let store = FlowStore::for_repo(root);
    let path = store.events_path(&input.id).map_err(|e| e.to_string())?;
    if path.exists() {
        return Ok(());
    }
    std::fs::create_dir_all(store.dir())
        .map_err(|e| format!("cannot make {}: {e}", store.dir().display()))?;
    let branch = input.target.trim_start_matches("refs/heads/").to_string();
    let event = FlowEvent::Created {
        id: input.id.clone(),
        created: baton_flow::store::now_rfc3339(),
        repo_root: root.to_path_buf(),
        main_branch: branch,
        main_oid: input.onto.clone().unwrap_or_else(|| input.base.clone()),
        worktree_root: root.to_path_buf(),
        units: input.units.clone(),
        implementer: None,
        reviewer: None,
        workflow: input
            .build
            .then_some(baton_flow::event::UnitWorkflow::Build),
        temporal: Some(OnTemporal {
            remote: input.remote.clone(),
            target: input.target.clone(),
        }),
    };
    let mut log = store.create(&input.id, None).map_err(|e| e.to_string())?;
    log.write(&event).map_err(|e| e.to_string())?;
    Ok(())
}

/// Brings the record of the Flow `status` is of up to it: the events that lead from where the
/// record is to where the Flow is. The number written; 0 when there is no record to follow
/// (the Flow was started elsewhere).
pub fn follow(root: &Path, status: &FlowStatus) -> Result<usize, String> {
    let store = FlowStore::for_repo(root);
    let state = match store.load(&status.id) {
        Ok(s) => s,
        Err(StoreError::NotFound { .. }) => return Ok(0),
        Err(e) => return Err(e.to_string()),
    };
    if state.temporal.is_none() || state.end.is_some() {
        return Ok(0);
    }
    // Every implementer's events first, then the landings in declared order, as the local
    // engine integrates only once every implementer has settled.
    let (mut events, mut landings) = (Vec::new(), Vec::new());
    for row in &status.units {
        if let Some(u) = state.units.iter().find(|u| u.spec.id == row.id) {
            let (implementation, landing) = unit_events(row, u.status);
            events.extend(implementation);
            landings.extend(landing);
        }
    }
    let integrating = matches!(status.state, FlowRun::Integrating | FlowRun::Completed);
    if !state.settled && (integrating || !landings.is_empty()) {
        events.push(FlowEvent::ImplementersSettled);
    }
    events.extend(landings);
    match status.state {
        FlowRun::Completed => events.push(FlowEvent::Completed {
            warnings: Vec::new(),
        }),
        FlowRun::Failed => events.push(failed(status)),
        FlowRun::Implementing | FlowRun::Integrating => {}
    }
    if events.is_empty() {
        return Ok(0);
    }
    let mut log = store.open(&status.id, None).map_err(|e| e.to_string())?;
    for e in &events {
        log.write(e).map_err(|e| e.to_string())?;
    }
    Ok(events.len())
}

/// How far along its one line a unit of the record is: 0 not started, 1 implementing,
/// 2 implemented, 3 landed or stopped.
fn stage_of(status: UnitStatus) -> u8 {
    match status {
        UnitStatus::Pending | UnitStatus::Creating | UnitStatus::Ready => 0,
        UnitStatus::Implementing => 1,
        UnitStatus::Implemented
        | UnitStatus::Rebasing
        | UnitStatus::Validating
        | UnitStatus::Reviewing
        | UnitStatus::Merging => 2,
        UnitStatus::Merged
        | UnitStatus::Cleaning
        | UnitStatus::Integrated
        | UnitStatus::NoOp
        | UnitStatus::Blocked
        | UnitStatus::Failed => 3,
    }
}

/// A child summary of what a node said of the unit's implementer.
fn summary(ok: bool, said: &str) -> ChildSummary {
    ChildSummary {
        ok,
        exit_code: None,
        error: None,
        output: said.to_string(),
        stderr: String::new(),
        duration_ms: 0,
    }
}

/// The events that take a unit of the record from `now` to where `row` says it is: those of its
/// implementer, and those of its landing.
fn unit_events(row: &UnitRow, now: UnitStatus) -> (Vec<FlowEvent>, Vec<FlowEvent>) {
    let unit = row.id.clone();
    let why = row.why.clone().unwrap_or_default();
    let (target, finished): (u8, Option<FlowEvent>) = match row.state {
        UnitState::Implementing => (1, None),
        UnitState::Implemented | UnitState::Conflict | UnitState::Skipped => (2, None),
        UnitState::Failed => (
            3,
            Some(FlowEvent::Blocked {
                unit: unit.clone(),
                attempt: 0,
                reason: BlockReason::ImplementerFailed,
                evidence: why.clone(),
                untracked: Vec::new(),
            }),
        ),
        UnitState::Invalid | UnitState::Rejected => (
            3,
            Some(FlowEvent::Blocked {
                unit: unit.clone(),
                attempt: 0,
                reason: match row.state {
                    UnitState::Invalid => BlockReason::ValidationFailed,
                    _ => BlockReason::ReviewFindings,
                },
                evidence: why.clone(),
                untracked: Vec::new(),
            }),
        ),
        UnitState::Integrated => (
            3,
            Some(FlowEvent::Merged {
                unit: unit.clone(),
                tip: row.head.clone().unwrap_or_default(),
                warning: None,
                recovered: false,
            }),
        ),
    };
    // A unit skipped before its implementer ran stays where it is.
    let target = match row.state {
        UnitState::Skipped if stage_of(now) == 0 => 0,
        _ => target,
    };
    let at = stage_of(now);
    let mut out = Vec::new();
    if at < 1 && target >= 1 {
        out.push(FlowEvent::ImplementerStarted {
            unit: unit.clone(),
            attempt: 0,
            model_class: None,
        });
    }
    if at < 2 && target >= 2 {
        let ok = row.state != UnitState::Failed;
        let said = if ok { "" } else { why.as_str() };
        out.push(FlowEvent::ImplementerFinished {
            unit: unit.clone(),
            attempt: 0,
            result: summary(ok, said),
        });
    }
    let mut landing = Vec::new();
    if at < 3 && target >= 3 {
        landing.extend(finished);
        if row.state == UnitState::Integrated {
            landing.push(FlowEvent::Finished {
                unit,
                outcome: UnitOutcome::Integrated,
                warnings: Vec::new(),
            });
        }
    }
    // An implementer that failed blocks its unit before any landing.
    if row.state == UnitState::Failed {
        out.append(&mut landing);
    }
    (out, landing)
}

/// `flow.failed` of a Flow Temporal ended without every unit landed: the unit that stopped it
/// and why.
fn failed(status: &FlowStatus) -> FlowEvent {
    let stopped = status.units.iter().find(|u| {
        matches!(
            u.state,
            UnitState::Failed | UnitState::Conflict | UnitState::Invalid | UnitState::Rejected
        )
    });
    let kind = match stopped.map(|u| u.state) {
        Some(UnitState::Conflict) => FailureKind::RebaseConflict,
        Some(_) => FailureKind::UnitBlocked,
        None => FailureKind::Infrastructure,
    };
    let message = stopped
        .and_then(|u| u.why.clone())
        .or_else(|| status.why.clone())
        .unwrap_or_else(|| "the Flow failed on Temporal".into());
    FlowEvent::Failed {
        kind,
        unit: stopped.map(|u| u.id.clone()),
        message,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use baton_flow::state::Phase;

    fn spec(id: &str) -> baton_flow::UnitSpec {
        serde_json::from_value(
            serde_json::json!({"id": id, "name": id, "task": "do it", "validation": []}),
        )
        .unwrap()
    }

    fn input(root: &Path) -> FlowInput {
        FlowInput {
            id: "flow-t1".into(),
            units: vec![spec("a"), spec("b")],
            build: false,
            remote: root.join("remote.git").display().to_string(),
            target: "refs/heads/main".into(),
            base: "b0".into(),
            heartbeat_timeout_ms: 1000,
            implemented: Default::default(),
            onto: None,
            origin: None,
            search_attributes: false,
        }
    }

    fn row(id: &str, state: UnitState, head: Option<&str>, why: Option<&str>) -> UnitRow {
        UnitRow {
            id: id.into(),
            name: id.into(),
            state,
            node: Some("node-a".into()),
            head: head.map(str::to_string),
            why: why.map(str::to_string),
        }
    }

    fn status(state: FlowRun, units: Vec<UnitRow>) -> FlowStatus {
        FlowStatus {
            id: "flow-t1".into(),
            state,
            target: "refs/heads/main".into(),
            head: "h2".into(),
            units,
            why: None,
            search_attributes: false,
        }
    }

    fn types(root: &Path) -> Vec<String> {
        let store = FlowStore::for_repo(root);
        store
            .read_records("flow-t1")
            .unwrap()
            .iter()
            .map(|r| {
                let v = serde_json::to_value(&r.event).unwrap();
                let unit = v["unit"]
                    .as_str()
                    .map(|u| format!(" {u}"))
                    .unwrap_or_default();
                format!("{}{unit}", v["type"].as_str().unwrap())
            })
            .collect()
    }

    /// Looks that miss steps still write every step, in order; a look that sees nothing new
    /// writes nothing; the end is written once and the record is never driven locally.
    #[test]
    fn a_flow_followed_now_and_then_is_recorded_step_by_step() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        created(root, &input(root)).unwrap();
        created(root, &input(root)).unwrap();
        let look = status(
            FlowRun::Implementing,
            vec![
                row("a", UnitState::Implementing, None, None),
                row("b", UnitState::Implementing, None, None),
            ],
        );
        assert_eq!(follow(root, &look).unwrap(), 2);
        assert_eq!(follow(root, &look).unwrap(), 0);
        // Next look: `a` landed, `b` implemented and waiting for its turn.
        let look = status(
            FlowRun::Integrating,
            vec![
                row("a", UnitState::Integrated, Some("h1"), None),
                row("b", UnitState::Implemented, Some("c2"), None),
            ],
        );
        follow(root, &look).unwrap();
        let look = status(
            FlowRun::Completed,
            vec![
                row("a", UnitState::Integrated, Some("h1"), None),
                row("b", UnitState::Integrated, Some("h2"), None),
            ],
        );
        follow(root, &look).unwrap();
        assert_eq!(follow(root, &look).unwrap(), 0, "the end is written once");
        assert_eq!(
            types(root),
            [
                "flow.created",
                "unit.implementer_started a",
                "unit.implementer_started b",
                "unit.implementer_finished a",
                "unit.implementer_finished b",
                "flow.implementers_settled",
                "unit.merged a",
                "unit.finished a",
                "unit.merged b",
                "unit.finished b",
                "flow.completed",
            ]
        );
        let state = FlowStore::for_repo(root).load("flow-t1").unwrap();
        assert_eq!(state.phase(false), Phase::Completed);
        assert_eq!(state.main_oid, "h2");
        assert!(state
            .units
            .iter()
            .all(|u| u.status == UnitStatus::Integrated));
    }

    /// A unit whose validation failed stops the Flow on Temporal: blocked, then the Flow failed
    /// naming it; a running Flow on Temporal reads as running, not interrupted.
    #[test]
    fn a_unit_that_fails_its_validation_ends_the_record_failed_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        created(root, &input(root)).unwrap();
        let running = FlowStore::for_repo(root).load("flow-t1").unwrap();
        assert_eq!(running.phase(false), Phase::Running);
        let look = status(
            FlowRun::Failed,
            vec![
                row(
                    "a",
                    UnitState::Invalid,
                    Some("c1"),
                    Some("`make test` exit 2"),
                ),
                row("b", UnitState::Skipped, None, None),
            ],
        );
        follow(root, &look).unwrap();
        assert_eq!(
            types(root),
            [
                "flow.created",
                "unit.implementer_started a",
                "unit.implementer_finished a",
                "flow.implementers_settled",
                "unit.blocked a",
                "flow.failed a",
            ]
        );
        let state = FlowStore::for_repo(root).load("flow-t1").unwrap();
        assert_eq!(state.phase(false), Phase::Failed);
        let records = FlowStore::for_repo(root).read_records("flow-t1").unwrap();
        let last = serde_json::to_value(&records.last().unwrap().event).unwrap();
        assert_eq!(last["kind"], "unit_blocked");
        assert_eq!(last["unit"], "a");
        assert_eq!(last["message"], "`make test` exit 2");
    }

    #[test]
    fn a_flow_with_no_record_here_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let look = status(FlowRun::Implementing, Vec::new());
        assert_eq!(follow(dir.path(), &look).unwrap(), 0);
        assert!(!FlowStore::for_repo(dir.path())
            .events_path("flow-t1")
            .unwrap()
            .exists());
    }
}
