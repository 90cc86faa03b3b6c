//! The routing rules and the journal's fold, without a model: every refusal of the issue, the
//! preconditions of replace and close, and a journal replayed twice.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::journal::Journal;
use super::rules::{
    decide, host_return, start_execution, Op, Refusal, ReportDetails, MAX_LIMITATIONS,
};
use super::state::*;

use Profile::{Coordinator, Executor};

fn known(r: &str) -> bool {
    r.starts_with("ctx:") && r != "ctx:gone"
}

/// A state built by committing operations the way a session does.
struct World {
    state: RoutingState,
    records: Vec<Record>,
    ops: u32,
}

impl World {
    fn automatic() -> World {
        let mut w = World {
            state: RoutingState::default(),
            records: Vec::new(),
            ops: 0,
        };
        w.commit(vec![Event::ControlSet {
            control: Control::Automatic,
        }]);
        w
    }

    fn commit(&mut self, events: Vec<Event>) {
        self.ops += 1;
        for event in events {
            let r = Record {
                op: format!("op{}", self.ops),
                step: format!("s{}", self.ops),
                event,
            };
            assert!(self.state.apply(&r).unwrap());
            self.records.push(r);
        }
    }

    fn try_op(&mut self, who: Profile, op: Op) -> Result<(), Refusal> {
        let events = decide(&self.state, who, &op, &known)?;
        self.commit(events);
        Ok(())
    }

    fn op(&mut self, who: Profile, op: Op) {
        self.try_op(who, op).unwrap()
    }

    fn refused(&mut self, who: Profile, op: Op) -> Refusal {
        let before = self.state.clone();
        let r = self.try_op(who, op).unwrap_err();
        assert_eq!(self.state, before, "a refusal changes nothing");
        r
    }

    /// Assigns `contract`; when no unit is open, its first line is the new unit's outcome.
    fn assign(&mut self, contract: &str) {
        let unit_outcome = self
            .state
            .open_unit()
            .is_none()
            .then(|| contract.lines().next().unwrap_or("").to_string());
        self.op(
            Coordinator,
            Op::Assign {
                contract: contract.into(),
                unit_outcome,
            },
        );
    }

    fn start(&mut self) {
        let events = start_execution(&self.state).unwrap();
        self.commit(events);
    }

    fn submit(&mut self, text: &str) {
        self.op(
            Executor,
            Op::Submit {
                report: text.into(),
                outcome: ReportOutcome::Completed,
                limitations: vec![],
                details: Default::default(),
            },
        );
    }
}

#[test]
fn an_assignment_hands_responsibility_to_the_executor_and_a_report_hands_it_back() {
    let mut w = World::automatic();
    assert_eq!(w.state.responsible(), Some(Coordinator));
    w.assign("Find why the login test fails\nRun it and read the handler.");
    assert_eq!(w.state.units[0].outcome, "Find why the login test fails");
    assert_eq!(w.state.responsible(), Some(Executor));
    w.start();
    w.op(
        Executor,
        Op::ProjectAdd {
            refs: vec!["ctx:t3".into()],
        },
    );
    w.submit("The handler drops the session cookie.");
    assert_eq!(w.state.responsible(), Some(Coordinator));
    let a = &w.state.assignments[0];
    assert_eq!(a.status, AssignmentStatus::Returned);
    assert_eq!(a.reports[0].evidence, ["ctx:t3"]);
    assert_eq!(a.executions[0].ended, Some(ExecutionEnd::Returned));
    // The selection belongs to the assignment that returned.
    assert!(w.state.projection.is_empty());
}

#[test]
fn each_participant_is_refused_the_others_tools_and_calls_out_of_turn() {
    let mut w = World::automatic();
    let r = w.refused(
        Executor,
        Op::Assign {
            contract: "x".into(),
            unit_outcome: Some("x".into()),
        },
    );
    assert_eq!(r.rule, "participant");
    let r = w.refused(
        Coordinator,
        Op::Submit {
            report: "x".into(),
            outcome: ReportOutcome::Completed,
            limitations: vec![],
            details: Default::default(),
        },
    );
    assert_eq!(r.rule, "participant");
    // The Coordinator has no environment tools without an act_bounded scope.
    let r = w.refused(
        Coordinator,
        Op::Environment {
            tool: "bash".into(),
            instructional: false,
        },
    );
    assert_eq!(r.rule, "coordinator-environment");
    assert!(r.message.contains("act_bounded"), "{}", r.message);
    // Except a read of a role or skill file (instructional material).
    w.op(
        Coordinator,
        Op::Environment {
            tool: "read".into(),
            instructional: true,
        },
    );
    // While the Executor works, the Coordinator cannot act at all.
    w.assign("do it");
    w.start();
    let r = w.refused(
        Coordinator,
        Op::Environment {
            tool: "read".into(),
            instructional: false,
        },
    );
    assert_eq!(r.rule, "responsibility");
    let r = w.refused(Coordinator, Op::Assess);
    assert_eq!(r.rule, "responsibility");
    assert!(decide(
        &w.state,
        Executor,
        &Op::Environment {
            tool: "bash".into(),
            instructional: false,
        },
        &known
    )
    .unwrap()
    .is_empty());
}

/// An `act_bounded` scope over `what`, its other fields filled in.
fn scope(what: &str) -> ActBounded {
    ActBounded {
        scope: what.into(),
        expected_result: "the config key's meaning".into(),
        authority: "the user asked to decide it".into(),
        stop_condition: "after reading config.rs".into(),
        inseparable: "the reading is the judgment".into(),
        delegation_loss: "a contract would contain the answer".into(),
    }
}

#[test]
fn act_bounded_opens_environment_tools_until_the_next_delegation() {
    let mut w = World::automatic();
    let r = w.refused(Coordinator, Op::OpenActBounded(scope(" ")));
    assert_eq!(r.rule, "argument");
    assert!(r.message.contains("`scope`"));
    w.op(Coordinator, Op::OpenActBounded(scope("read config.rs")));
    w.op(
        Coordinator,
        Op::Environment {
            tool: "read".into(),
            instructional: false,
        },
    );
    w.assign("apply the decision");
    assert!(w.state.act_bounded.is_none());
}

#[test]
fn replace_needs_a_quiescent_outstanding_assignment_in_an_open_unit() {
    let mut w = World::automatic();
    let replace = || Op::Replace {
        contract: "a narrower contract".into(),
        reason: "the cause is known now".into(),
    };
    assert_eq!(
        w.refused(Coordinator, replace()).rule,
        "replace-outstanding"
    );
    w.assign("investigate");
    // Delivered, not started: the Executor is responsible until it runs.
    assert_eq!(w.state.responsible(), Some(Executor));
    w.start();
    // Executing: the Coordinator is not even responsible.
    assert_eq!(w.refused(Coordinator, replace()).rule, "responsibility");
    // Interrupted: the host's partial report goes to the Coordinator and the assignment stays
    // outstanding and quiescent, so it can be resumed or replaced.
    let ev = host_return(&w.state, ExecutionEnd::Interrupted, "half way", vec![]).unwrap();
    w.commit(ev);
    assert_eq!(w.state.responsible(), Some(Coordinator));
    assert_eq!(w.state.resumable().unwrap().id, "a1");
    let partial = &w.state.assignment("a1").unwrap().reports[0];
    assert!(partial.by_host && partial.text.contains("half way"));
    w.op(Coordinator, replace());
    let old = w.state.assignment("a1").unwrap();
    assert_eq!(old.status, AssignmentStatus::Superseded);
    assert_eq!(
        old.superseded.as_ref().unwrap().reason,
        "the cause is known now"
    );
    assert_eq!(w.state.outstanding().unwrap().id, "a2");
    assert!(w.state.resumable().is_none());
    assert_eq!(w.state.units.len(), 1);
    // A replacement that has not started is outstanding but the Executor's to run.
    assert_eq!(w.refused(Coordinator, replace()).rule, "responsibility");
}

#[test]
fn a_blocked_report_cannot_be_accepted_but_can_be_closed_honestly() {
    let mut w = World::automatic();
    w.assign("fix it");
    w.start();
    w.op(
        Executor,
        Op::Submit {
            report: "blocked: the API key is missing".into(),
            outcome: ReportOutcome::Blocked,
            limitations: vec![],
            details: ReportDetails {
                reason: Some("no key".into()),
                ..Default::default()
            },
        },
    );
    let close = |d| Op::Close {
        disposition: d,
        assessment: "the report says blocked".into(),
    };
    let r = w.refused(Coordinator, close(Disposition::Accepted));
    assert_eq!(r.rule, "close-blocked");
    assert!(
        r.message.contains("a blocked result cannot be accepted"),
        "{}",
        r.message
    );
    w.op(Coordinator, close(Disposition::Deferred));
    assert_eq!(
        w.state.units[0].closed.as_ref().unwrap().disposition,
        Disposition::Deferred
    );
}

#[test]
fn close_is_refused_while_an_assignment_is_outstanding_and_accept_needs_a_report() {
    let mut w = World::automatic();
    let close = |d| Op::Close {
        disposition: d,
        assessment: "verified by the test output".into(),
    };
    assert_eq!(
        w.refused(Coordinator, close(Disposition::Accepted)).rule,
        "close-open-unit"
    );
    w.assign("fix it");
    w.start();
    let ev = host_return(&w.state, ExecutionEnd::Failed, "", vec![]).unwrap();
    w.commit(ev);
    assert_eq!(
        w.refused(Coordinator, close(Disposition::Cancelled)).rule,
        "close-outstanding"
    );
    w.op(
        Coordinator,
        Op::Replace {
            contract: "fix it, smaller".into(),
            reason: "r".into(),
        },
    );
    w.start();
    w.submit("fixed; test passes");
    let r = w.refused(
        Coordinator,
        Op::Close {
            disposition: Disposition::Accepted,
            assessment: "".into(),
        },
    );
    assert!(r.message.contains("`assessment`"));
    w.op(Coordinator, close(Disposition::Accepted));
    assert_eq!(
        w.state.units[0].closed.as_ref().unwrap().disposition,
        Disposition::Accepted
    );
    // A new assignment opens a new unit.
    w.assign("next outcome");
    assert_eq!(w.state.units.len(), 2);
    assert_eq!(w.state.units[1].assignments, ["a3"]);
}

#[test]
fn a_report_is_bounded_and_a_blocked_transfer_is_retried_without_a_payload() {
    let mut w = World::automatic();
    w.assign("investigate");
    w.start();
    let too_many = vec!["x".to_string(); MAX_LIMITATIONS + 1];
    let r = w.refused(
        Executor,
        Op::Submit {
            report: "r".into(),
            outcome: ReportOutcome::Partial,
            limitations: too_many,
            details: ReportDetails {
                reason: Some("out of time".into()),
                ..Default::default()
            },
        },
    );
    assert_eq!(r.rule, "limitations");
    let r = w.refused(
        Executor,
        Op::ProjectAdd {
            refs: vec!["nope".into()],
        },
    );
    assert_eq!(r.rule, "project-ref");
    let r = w.refused(
        Executor,
        Op::ProjectAdd {
            refs: (0..65).map(|i| format!("ctx:{i}")).collect(),
        },
    );
    assert_eq!(r.rule, "project-bound");
    assert_eq!(w.refused(Executor, Op::Retry).rule, "retry-blocked");
    // Selected evidence that became unavailable blocks the transfer: the report is saved, the
    // Executor stays responsible, and `retry` resends it once the selection is mended.
    w.commit(vec![Event::ProjectionAdded {
        refs: vec!["ctx:gone".into(), "ctx:ok".into()],
    }]);
    w.submit("done");
    let h = w.state.last_handoff("a1", HandoffKind::Report).unwrap();
    assert_eq!(h.state, HandoffState::Blocked);
    assert!(h.reason.as_ref().unwrap().contains("ctx:gone"));
    assert_eq!(w.state.responsible(), Some(Executor));
    // A retry while the selection is still wrong stays blocked, with no new revision.
    w.op(Executor, Op::Retry);
    assert_eq!(
        w.state
            .last_handoff("a1", HandoffKind::Report)
            .unwrap()
            .state,
        HandoffState::Blocked
    );
    w.op(
        Executor,
        Op::ProjectRemove {
            refs: vec!["ctx:gone".into()],
            reason: "the file was deleted".into(),
        },
    );
    w.op(Executor, Op::Retry);
    assert_eq!(w.state.responsible(), Some(Coordinator));
    let a = w.state.assignment("a1").unwrap();
    assert_eq!(
        a.reports.len(),
        1,
        "retry sends the saved report, no new revision"
    );
    assert_eq!(a.status, AssignmentStatus::Returned);
}

#[test]
fn routing_tools_need_automatic_control_and_manual_holds_a_profile() {
    let mut w = World::automatic();
    w.commit(vec![Event::ControlSet {
        control: Control::Manual { profile: Executor },
    }]);
    assert_eq!(w.state.responsible(), Some(Executor));
    let r = w.refused(
        Coordinator,
        Op::Assign {
            contract: "x".into(),
            unit_outcome: Some("x".into()),
        },
    );
    assert_eq!(r.rule, "automatic-only");
    assert!(r.message.contains("manual (executor)"), "{}", r.message);
    // Manual control is an ordinary session: environment tools are not restricted.
    assert!(decide(
        &w.state,
        Coordinator,
        &Op::Environment {
            tool: "bash".into(),
            instructional: false,
        },
        &known
    )
    .is_ok());
}

#[test]
fn a_journal_replayed_twice_gives_the_same_state() {
    let mut w = World::automatic();
    w.assign("investigate");
    w.start();
    w.submit("found it");
    w.op(
        Coordinator,
        Op::Close {
            disposition: Disposition::Accepted,
            assessment: "supported".into(),
        },
    );
    let once = RoutingState::fold(&w.records).unwrap();
    let twice = RoutingState::fold(w.records.iter().chain(&w.records)).unwrap();
    assert_eq!(once, twice);
    assert_eq!(once, w.state);
}

/// A journal at `path` under automatic control (`op1`) holding assignment a1 (`op2`), not started.
fn journal_with_an_assignment(path: &std::path::Path) -> Journal {
    let mut j = Journal::open(path).unwrap();
    j.commit(
        "op1",
        "s1",
        vec![Event::ControlSet {
            control: Control::Automatic,
        }],
    )
    .unwrap();
    let ev = decide(
        j.state(),
        Coordinator,
        &Op::Assign {
            contract: "build the parser".into(),
            unit_outcome: Some("a parser".into()),
        },
        &known,
    )
    .unwrap();
    j.commit("op2", "s2", ev).unwrap();
    j
}

#[test]
fn the_journal_is_durable_and_recovers_a_lost_execution() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.routing.jsonl");
    {
        let mut j = journal_with_an_assignment(&path);
        // The same operation committed again (a retry after a crash) adds nothing.
        let again = Journal::read(&path).unwrap();
        let ev: Vec<Event> = again
            .iter()
            .filter(|r| r.op == "op2")
            .map(|r| r.event.clone())
            .collect();
        j.commit("op2", "s2", ev).unwrap();
        let ev = start_execution(j.state()).unwrap();
        j.commit("op3", "s3", ev).unwrap();
    }
    let lines = std::fs::read_to_string(&path).unwrap().lines().count();
    assert_eq!(lines, 5);
    // The process died mid-execution: reopening recovers it as lost, with a host report.
    let mut j = Journal::open(&path).unwrap();
    assert!(j.state().running().is_some());
    assert!(j.recover("parsed two of three cases").unwrap());
    assert!(!j.recover("again").unwrap());
    let a = j.state().assignment("a1").unwrap();
    assert_eq!(a.executions[0].ended, Some(ExecutionEnd::Lost));
    let report = &a.reports[0];
    assert!(report.by_host);
    assert_eq!(report.outcome, ReportOutcome::Partial);
    assert!(report.text.contains("parsed two of three cases"));
    assert_eq!(j.state().responsible(), Some(Coordinator));
    let reopened = Journal::open(&path).unwrap();
    assert_eq!(reopened.state(), j.state());
}

#[test]
fn act_bounded_closes_at_its_stop_condition_and_at_a_restart() {
    let mut w = World::automatic();
    let r = w.refused(
        Coordinator,
        Op::CloseActBounded {
            result: "done".into(),
        },
    );
    assert_eq!(r.rule, "act-bounded-open");
    let scope = scope("run the formatter");
    w.op(Coordinator, Op::OpenActBounded(scope.clone()));
    let r = w.refused(Coordinator, Op::CloseActBounded { result: " ".into() });
    assert_eq!(r.rule, "argument");
    w.op(
        Coordinator,
        Op::CloseActBounded {
            result: "formatted, diff clean".into(),
        },
    );
    assert!(w.state.act_bounded.is_none());
    let r = w.refused(
        Coordinator,
        Op::Environment {
            tool: "bash".into(),
            instructional: false,
        },
    );
    assert_eq!(r.rule, "coordinator-environment");

    // A scope open when the process dies ends at the restart: its context is lost.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.journal");
    {
        let mut j = Journal::open(&path).unwrap();
        j.commit(
            "op1",
            "s1",
            vec![Event::ControlSet {
                control: Control::Automatic,
            }],
        )
        .unwrap();
        j.commit("op2", "s2", vec![Event::ActBoundedOpened { scope }])
            .unwrap();
    }
    let mut j = Journal::open(&path).unwrap();
    assert!(j.state().act_bounded.is_some());
    assert!(!j.recover("").unwrap(), "no execution was running");
    assert!(j.state().act_bounded.is_none());
    let records = Journal::read(&path).unwrap();
    assert!(matches!(
        &records.last().unwrap().event,
        Event::ActBoundedClosed { reason } if reason == "the session restarted"
    ));
    assert_eq!(Journal::open(&path).unwrap().state(), j.state());
}

#[test]
fn a_contract_delivered_but_never_started_is_recovered_as_lost_and_resumable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.journal");
    // The process dies after the assignment, before the execution's start is recorded.
    drop(journal_with_an_assignment(&path));
    let mut j = Journal::open(&path).unwrap();
    assert_eq!(j.state().responsible(), Some(Executor));
    assert!(j.recover("").unwrap());
    let a = j.state().assignment("a1").unwrap();
    assert_eq!(a.executions.len(), 1);
    assert_eq!(a.executions[0].ended, Some(ExecutionEnd::Lost));
    assert_eq!(j.state().responsible(), Some(Coordinator));
    assert_eq!(j.state().resumable().map(|a| a.id.as_str()), Some("a1"));
    assert!(!j.recover("").unwrap(), "recovered once");
}

#[test]
fn project_remove_needs_references() {
    let mut w = World::automatic();
    w.assign("do it");
    w.start();
    let r = w.refused(
        Executor,
        Op::ProjectRemove {
            refs: vec![],
            reason: "not needed".into(),
        },
    );
    assert_eq!(r.rule, "argument");
}

/// seed 000:39: a unit is the Coordinator's outcome, stated when it opens.
#[test]
fn a_new_unit_needs_the_coordinators_outcome_and_an_open_one_takes_none() {
    let mut w = World::automatic();
    let r = w.refused(
        Coordinator,
        Op::Assign {
            contract: "Run the tests.".into(),
            unit_outcome: None,
        },
    );
    assert_eq!(r.rule, "unit-outcome");
    assert!(r.message.contains("`unit_outcome`"), "{}", r.message);
    w.op(
        Coordinator,
        Op::Assign {
            contract: "Run the tests and report the failures.".into(),
            unit_outcome: Some("  The suite passes again.  ".into()),
        },
    );
    assert_eq!(w.state.units[0].outcome, "The suite passes again.");
    w.start();
    w.submit("two failures");
    let r = w.refused(
        Coordinator,
        Op::Assign {
            contract: "Fix them.".into(),
            unit_outcome: Some("another".into()),
        },
    );
    assert_eq!(r.rule, "unit-outcome");
    w.assign("Fix them.");
    assert_eq!(w.state.units.len(), 1);
}

/// seed 000:312, 421, 427: an interrupted assignment whose work is no longer wanted is cancelled
/// with a reason (never while it runs), and the unit can then be closed honestly.
#[test]
fn an_outstanding_assignment_is_cancelled_with_a_reason_then_the_unit_closes() {
    let mut w = World::automatic();
    w.assign("Migrate the database.");
    w.start();
    let r = w.refused(
        Coordinator,
        Op::Cancel {
            reason: "the user changed course".into(),
        },
    );
    // While the Executor works, the Coordinator is not the one responsible.
    assert_eq!(r.rule, "responsibility");
    let ev = host_return(&w.state, ExecutionEnd::Interrupted, "", vec![]).unwrap();
    w.commit(ev);
    let r = w.refused(
        Coordinator,
        Op::Close {
            disposition: Disposition::Cancelled,
            assessment: "dropped".into(),
        },
    );
    assert!(r.message.contains("delegate cancel"), "{}", r.message);
    let r = w.refused(Coordinator, Op::Cancel { reason: " ".into() });
    assert_eq!(r.rule, "argument");
    w.op(
        Coordinator,
        Op::Cancel {
            reason: "the user wants a report first".into(),
        },
    );
    let a = &w.state.assignments[0];
    assert_eq!(a.status, AssignmentStatus::Cancelled);
    assert_eq!(
        a.cancelled.as_deref(),
        Some("the user wants a report first")
    );
    assert!(w.state.resumable().is_none());
    assert_eq!(w.state.responsible(), Some(Coordinator));
    let r = w.refused(
        Coordinator,
        Op::Cancel {
            reason: "again".into(),
        },
    );
    assert_eq!(r.rule, "cancel-outstanding");
    w.op(
        Coordinator,
        Op::Close {
            disposition: Disposition::Cancelled,
            assessment: "the user changed course".into(),
        },
    );
}

/// seed 000:369: a report states why it returns early, its corrected assumptions, its partial
/// effects, and what was withdrawn from the selection.
#[test]
fn a_report_carries_its_reason_corrections_effects_and_withdrawals() {
    let mut w = World::automatic();
    w.assign("Upgrade the parser.");
    w.start();
    w.op(
        Executor,
        Op::ProjectAdd {
            refs: vec!["ctx:t1".into(), "ctx:t2".into()],
        },
    );
    w.op(
        Executor,
        Op::ProjectRemove {
            refs: vec!["ctx:t1".into()],
            reason: "it was the old build's output".into(),
        },
    );
    let partial = |reason: Option<&str>| Op::Submit {
        report: "half done".into(),
        outcome: ReportOutcome::Partial,
        limitations: vec![],
        details: ReportDetails {
            corrected_assumptions: vec!["the parser is not generated: it is hand-written".into()],
            partial_effects: vec!["src/parse.rs rewritten".into()],
            reason: reason.map(str::to_string),
        },
    };
    let r = w.refused(Executor, partial(None));
    assert_eq!(r.rule, "return-reason");
    w.op(Executor, partial(Some("the grammar needs a decision")));
    let rep = &w.state.assignments[0].reports[0];
    assert_eq!(rep.reason.as_deref(), Some("the grammar needs a decision"));
    assert_eq!(rep.partial_effects, ["src/parse.rs rewritten"]);
    assert_eq!(rep.evidence, ["ctx:t2"]);
    assert_eq!(
        rep.withdrawn,
        [Withdrawal {
            refs: vec!["ctx:t1".into()],
            reason: "it was the old build's output".into()
        }]
    );
    assert!(
        w.state.withdrawn.is_empty(),
        "the withdrawals went up with the report"
    );
    let detail = super::view::inspect_units(&w.state, "detail", Some("a1"), 0, 20).unwrap();
    for want in [
        "a1 of unit u1 — returned",
        "contract:\nUpgrade the parser.",
        "why it returned: the grammar needs a decision",
        "corrected assumption: the parser is not generated",
        "partial effect: src/parse.rs rewritten",
        "evidence: ctx:t2",
        "withdrawn: ctx:t1 (it was the old build's output)",
        "handoff h2: report revision 1 — delivered",
    ] {
        assert!(detail.contains(want), "{want} missing:\n{detail}");
    }
}
