//! The host-owned state of cognitive routing: control, the participant responsible now, units,
//! assignments, executions, handoffs and reports, and the fold of the journal's events into it.
//!
//! Every change is an [`Event`] in a [`Record`] keyed by (operation id, event type, step id); the
//! state is the fold of the records, and a record whose key was already applied changes nothing,
//! so replaying a journal twice gives the same state. Whether an operation is allowed is decided
//! in `rules.rs`, which turns a participant's call into events or a refusal; `apply` only checks
//! that an event fits the state (a journal that does not is corrupt, not a refusal).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

baton_protocol::closed_set! {
    /// The two participants of a routed session.
    #[derive(PartialOrd, Ord)]
    pub enum Profile ("participant") {
        Coordinator = "coordinator",
        Executor = "executor",
    }
}

/// Who decides which participant acts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum Control {
    /// No routing: an ordinary session.
    Inactive,
    /// The user holds one profile: an ordinary unsplit session on its route, no routing rules.
    /// It lasts across turns, restarts and resume until the user changes it.
    Manual { profile: Profile },
    /// The host routes: the Coordinator plans and assesses, the Executor works and returns.
    Automatic,
}

impl Control {
    pub fn describe(self) -> String {
        match self {
            Control::Inactive => "inactive".into(),
            Control::Manual { profile } => format!("manual ({})", profile.as_str()),
            Control::Automatic => "automatic".into(),
        }
    }
}

/// How the Coordinator closed a unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Disposition {
    Accepted,
    Cancelled,
    Deferred,
}

/// What a report says of the assignment's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReportOutcome {
    Completed,
    Partial,
    Blocked,
}

/// An outcome under Coordinator judgment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unit {
    pub id: String,
    /// The outcome the unit is for, in the Coordinator's words.
    pub outcome: String,
    pub assignments: Vec<String>,
    pub closed: Option<Closed>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Closed {
    pub disposition: Disposition,
    pub assessment: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AssignmentStatus {
    /// Saved, not yet returned: the Executor owes a report.
    Outstanding,
    /// The Executor returned a report that reached the Coordinator.
    Returned,
    /// Replaced by a later assignment before it returned.
    Superseded,
    /// Withdrawn by the Coordinator before it returned (`delegate cancel`).
    Cancelled,
}

/// A saved contract for the Executor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Assignment {
    pub id: String,
    pub unit: String,
    pub contract: String,
    pub status: AssignmentStatus,
    pub executions: Vec<Execution>,
    /// Every revision the Executor saved, oldest first.
    pub reports: Vec<Report>,
    /// The reason it was replaced, and by which assignment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded: Option<Superseded>,
    /// Why the Coordinator cancelled it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelled: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Superseded {
    pub by: String,
    pub reason: String,
}

/// One attempt of the Executor at an assignment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Execution {
    pub id: String,
    /// `None` while it runs (or when the process running it was killed: recovery ends it).
    pub ended: Option<ExecutionEnd>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionEnd {
    /// It ended with a saved report.
    Returned,
    /// New user input stopped it; the host saved a partial report.
    Interrupted,
    /// Its model failed without returning.
    Failed,
    /// It reached the session's turn limit without returning.
    LimitReached,
    /// Found running after a restart: the process that ran it is gone.
    Lost,
}

/// A saved report of the Executor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub revision: u32,
    pub outcome: ReportOutcome,
    pub text: String,
    pub limitations: Vec<String>,
    /// The evidence selected for the Coordinator when it was saved (`ctx:` refs).
    pub evidence: Vec<String>,
    /// Written by the host (an interruption, a failure), not submitted by the Executor.
    #[serde(default)]
    pub by_host: bool,
    /// Submitted by the Executor in its last turn after a stop (new user input, its turn
    /// limit): the assignment stays outstanding, as for a host report.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped: bool,
    /// Assumptions of the contract the work showed to be wrong, each with the correction.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub corrected_assumptions: Vec<String>,
    /// What the work changed that stays changed (files written, commands with effects).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partial_effects: Vec<String>,
    /// Why the Executor returns now (required unless the outcome is `completed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Evidence selected and then withdrawn before the report was saved, with the reasons.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub withdrawn: Vec<Withdrawal>,
}

/// Evidence the Executor withdrew from its selection, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Withdrawal {
    pub refs: Vec<String>,
    pub reason: String,
}

/// A transfer between the participants: a contract down or a report up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Handoff {
    pub id: String,
    pub kind: HandoffKind,
    pub assignment: String,
    /// The report revision a report handoff carries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<u32>,
    pub state: HandoffState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HandoffKind {
    Contract,
    Report,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HandoffState {
    /// Saved; the transfer has not happened yet.
    Pending,
    /// Delivered: the receiving participant has it.
    Configured,
    /// The transfer failed; the saved payload stays for a retry.
    Blocked,
    /// A later handoff took its place.
    Superseded,
}

/// A scope in which the Coordinator may use environment tools itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActBounded {
    pub scope: String,
    pub expected_result: String,
    pub authority: String,
    pub stop_condition: String,
    pub inseparable: String,
    pub delegation_loss: String,
}

/// One change of the routing state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    ControlSet {
        control: Control,
    },
    UnitOpened {
        unit: String,
        outcome: String,
    },
    Assigned {
        assignment: String,
        unit: String,
        contract: String,
        handoff: String,
    },
    Replaced {
        old: String,
        assignment: String,
        contract: String,
        reason: String,
        handoff: String,
    },
    HandoffConfigured {
        handoff: String,
    },
    /// `delegate cancel`: the outstanding assignment is withdrawn before it returned.
    AssignmentCancelled {
        assignment: String,
        reason: String,
    },
    HandoffBlocked {
        handoff: String,
        reason: String,
    },
    ExecutionStarted {
        assignment: String,
        execution: String,
    },
    ExecutionEnded {
        execution: String,
        how: ExecutionEnd,
    },
    ReportSaved {
        assignment: String,
        report: Report,
        handoff: String,
    },
    UnitClosed {
        unit: String,
        disposition: Disposition,
        assessment: String,
    },
    ActBoundedOpened {
        scope: ActBounded,
    },
    ActBoundedClosed {
        reason: String,
    },
    ProjectionAdded {
        refs: Vec<String>,
    },
    ProjectionRemoved {
        refs: Vec<String>,
        reason: String,
    },
}

impl Event {
    /// The event's type, as in the journal.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::ControlSet { .. } => "control_set",
            Event::UnitOpened { .. } => "unit_opened",
            Event::Assigned { .. } => "assigned",
            Event::Replaced { .. } => "replaced",
            Event::HandoffConfigured { .. } => "handoff_configured",
            Event::AssignmentCancelled { .. } => "assignment_cancelled",
            Event::HandoffBlocked { .. } => "handoff_blocked",
            Event::ExecutionStarted { .. } => "execution_started",
            Event::ExecutionEnded { .. } => "execution_ended",
            Event::ReportSaved { .. } => "report_saved",
            Event::UnitClosed { .. } => "unit_closed",
            Event::ActBoundedOpened { .. } => "act_bounded_opened",
            Event::ActBoundedClosed { .. } => "act_bounded_closed",
            Event::ProjectionAdded { .. } => "projection_added",
            Event::ProjectionRemoved { .. } => "projection_removed",
        }
    }
}

/// A journal line: an event with the operation that caused it and the step it happened at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The operation (a tool call, a user control, a recovery) the event belongs to.
    pub op: String,
    /// The session step (a turn, a tool call) it happened at.
    pub step: String,
    #[serde(flatten)]
    pub event: Event,
}

/// A record that does not fit the state it is applied to: the journal is corrupt.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("routing journal: {kind} (op {op}, step {step}): {message}")]
pub struct FoldError {
    pub op: String,
    pub step: String,
    pub kind: String,
    pub message: String,
}

/// The routing state: the fold of the journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoutingState {
    pub control: Control,
    pub units: Vec<Unit>,
    pub assignments: Vec<Assignment>,
    pub handoffs: Vec<Handoff>,
    pub act_bounded: Option<ActBounded>,
    /// The evidence the Executor selected for the Coordinator in the current assignment.
    pub projection: Vec<String>,
    /// What it withdrew from that selection, with its reasons.
    #[serde(default)]
    pub withdrawn: Vec<Withdrawal>,
    /// The keys of the records applied: (op, type, step).
    #[serde(skip)]
    applied: BTreeSet<(String, String, String)>,
}

impl Default for RoutingState {
    fn default() -> Self {
        RoutingState {
            control: Control::Inactive,
            units: Vec::new(),
            assignments: Vec::new(),
            handoffs: Vec::new(),
            act_bounded: None,
            projection: Vec::new(),
            withdrawn: Vec::new(),
            applied: BTreeSet::new(),
        }
    }
}

impl RoutingState {
    /// The state a journal's records fold into.
    pub fn fold<'a>(records: impl IntoIterator<Item = &'a Record>) -> Result<Self, FoldError> {
        let mut state = RoutingState::default();
        for r in records {
            state.apply(r)?;
        }
        Ok(state)
    }

    /// Applies one record; `Ok(false)` when its key was applied before (nothing changes).
    pub fn apply(&mut self, r: &Record) -> Result<bool, FoldError> {
        let key = (r.op.clone(), r.event.kind().to_string(), r.step.clone());
        if self.applied.contains(&key) {
            return Ok(false);
        }
        let bad = |message: String| FoldError {
            op: r.op.clone(),
            step: r.step.clone(),
            kind: r.event.kind().to_string(),
            message,
        };
        let applied = match &r.event {
            Event::ControlSet { control } => {
                self.control = *control;
                Ok(())
            }
            Event::UnitOpened { unit, outcome } => self.add_unit(unit, outcome),
            Event::Assigned {
                assignment,
                unit,
                contract,
                handoff,
            } => self.add_assignment(assignment, unit, contract, handoff),
            Event::Replaced {
                old,
                assignment,
                contract,
                reason,
                handoff,
            } => self.replace(old, assignment, contract, reason, handoff),
            Event::HandoffConfigured { handoff } => self.configure_handoff(handoff),
            Event::HandoffBlocked { handoff, reason } => self.block_handoff(handoff, reason),
            Event::ExecutionStarted {
                assignment,
                execution,
            } => self.start_execution(assignment, execution),
            Event::ExecutionEnded { execution, how } => self.end_execution(execution, *how),
            Event::ReportSaved {
                assignment,
                report,
                handoff,
            } => self.save_report(assignment, report, handoff),
            Event::UnitClosed {
                unit,
                disposition,
                assessment,
            } => self.close_unit(unit, *disposition, assessment),
            Event::ActBoundedOpened { scope } => {
                self.act_bounded = Some(scope.clone());
                Ok(())
            }
            Event::ActBoundedClosed { .. } => {
                self.act_bounded = None;
                Ok(())
            }
            Event::ProjectionAdded { refs } => {
                for r in refs {
                    if !self.projection.contains(r) {
                        self.projection.push(r.clone());
                    }
                }
                Ok(())
            }
            Event::ProjectionRemoved { refs, reason } => {
                self.projection.retain(|p| !refs.contains(p));
                self.withdrawn.push(Withdrawal {
                    refs: refs.clone(),
                    reason: reason.clone(),
                });
                Ok(())
            }
            Event::AssignmentCancelled { assignment, reason } => {
                self.cancel_assignment(assignment, reason)
            }
        };
        applied.map_err(bad)?;
        self.applied.insert(key);
        Ok(true)
    }

    /// `unit_opened`: a new unit for `outcome`.
    fn add_unit(&mut self, unit: &str, outcome: &str) -> Result<(), String> {
        if self.unit(unit).is_some() {
            return Err(format!("unit {unit} exists"));
        }
        self.units.push(Unit {
            id: unit.to_string(),
            outcome: outcome.to_string(),
            assignments: Vec::new(),
            closed: None,
        });
        Ok(())
    }

    /// `replaced`: the old assignment is superseded (with its undelivered handoffs),
    /// and the new one joins its unit.
    fn replace(
        &mut self,
        old: &str,
        assignment: &str,
        contract: &str,
        reason: &str,
        handoff: &str,
    ) -> Result<(), String> {
        let unit = {
            let a = self
                .assignment_mut(old)
                .ok_or_else(|| format!("no assignment {old}"))?;
            a.status = AssignmentStatus::Superseded;
            a.superseded = Some(Superseded {
                by: assignment.to_string(),
                reason: reason.to_string(),
            });
            a.unit.clone()
        };
        for h in self.handoffs.iter_mut().filter(|h| h.assignment == old) {
            if matches!(h.state, HandoffState::Pending | HandoffState::Blocked) {
                h.state = HandoffState::Superseded;
            }
        }
        self.add_assignment(assignment, &unit, contract, handoff)
    }

    /// `handoff_configured`: the handoff is delivered; a delivered report returns its assignment
    /// (unless the host wrote it for a stopped execution) and empties the selection.
    fn configure_handoff(&mut self, handoff: &str) -> Result<(), String> {
        let h = self
            .handoff_mut(handoff)
            .ok_or_else(|| format!("no handoff {handoff}"))?;
        h.state = HandoffState::Configured;
        h.reason = None;
        if h.kind == HandoffKind::Report {
            let (a, revision) = (h.assignment.clone(), h.revision);
            if let Some(a) = self.assignment_mut(&a) {
                // A report the host wrote for a stopped execution leaves the assignment
                // outstanding: `/resume` continues it, or the Coordinator replaces it.
                let by_host = a
                    .reports
                    .iter()
                    .find(|r| Some(r.revision) == revision)
                    .is_some_and(|r| r.by_host || r.stopped);
                if !by_host {
                    a.status = AssignmentStatus::Returned;
                }
            }
            self.projection.clear();
            self.withdrawn.clear();
        }
        Ok(())
    }

    /// `handoff_blocked`: the handoff waits, with why.
    fn block_handoff(&mut self, handoff: &str, reason: &str) -> Result<(), String> {
        let h = self
            .handoff_mut(handoff)
            .ok_or_else(|| format!("no handoff {handoff}"))?;
        h.state = HandoffState::Blocked;
        h.reason = Some(reason.to_string());
        Ok(())
    }

    /// `execution_started`: a new execution of the assignment.
    fn start_execution(&mut self, assignment: &str, execution: &str) -> Result<(), String> {
        let a = self
            .assignment_mut(assignment)
            .ok_or_else(|| format!("no assignment {assignment}"))?;
        a.executions.push(Execution {
            id: execution.to_string(),
            ended: None,
        });
        Ok(())
    }

    /// `execution_ended`: the execution records how it ended.
    fn end_execution(&mut self, execution: &str, how: ExecutionEnd) -> Result<(), String> {
        let e = self
            .assignments
            .iter_mut()
            .flat_map(|a| a.executions.iter_mut())
            .find(|e| e.id == execution)
            .ok_or_else(|| format!("no execution {execution}"))?;
        e.ended = Some(how);
        Ok(())
    }

    /// `report_saved`: the report joins its assignment, and its handoff replaces any earlier
    /// revision's not yet delivered.
    fn save_report(
        &mut self,
        assignment: &str,
        report: &Report,
        handoff: &str,
    ) -> Result<(), String> {
        let a = self
            .assignment_mut(assignment)
            .ok_or_else(|| format!("no assignment {assignment}"))?;
        a.reports.push(report.clone());
        // A new revision takes the place of an earlier one not yet delivered.
        for h in self.handoffs.iter_mut().filter(|h| {
            h.assignment == assignment
                && h.kind == HandoffKind::Report
                && matches!(h.state, HandoffState::Pending | HandoffState::Blocked)
        }) {
            h.state = HandoffState::Superseded;
        }
        self.handoffs.push(Handoff {
            id: handoff.to_string(),
            kind: HandoffKind::Report,
            assignment: assignment.to_string(),
            revision: Some(report.revision),
            state: HandoffState::Pending,
            reason: None,
        });
        Ok(())
    }

    /// `unit_closed`: the unit records its disposition and the Coordinator's assessment.
    fn close_unit(
        &mut self,
        unit: &str,
        disposition: Disposition,
        assessment: &str,
    ) -> Result<(), String> {
        let u = self
            .units
            .iter_mut()
            .find(|u| u.id == unit)
            .ok_or_else(|| format!("no unit {unit}"))?;
        u.closed = Some(Closed {
            disposition,
            assessment: assessment.to_string(),
        });
        Ok(())
    }

    /// `assignment_cancelled`: the assignment is withdrawn with its undelivered handoffs, and
    /// the selection is emptied.
    fn cancel_assignment(&mut self, assignment: &str, reason: &str) -> Result<(), String> {
        let a = self
            .assignment_mut(assignment)
            .ok_or_else(|| format!("no assignment {assignment}"))?;
        a.status = AssignmentStatus::Cancelled;
        a.cancelled = Some(reason.to_string());
        for h in self
            .handoffs
            .iter_mut()
            .filter(|h| h.assignment == assignment)
        {
            if matches!(h.state, HandoffState::Pending | HandoffState::Blocked) {
                h.state = HandoffState::Superseded;
            }
        }
        self.projection.clear();
        self.withdrawn.clear();
        Ok(())
    }

    fn add_assignment(
        &mut self,
        id: &str,
        unit: &str,
        contract: &str,
        handoff: &str,
    ) -> Result<(), String> {
        if self.assignment(id).is_some() {
            return Err(format!("assignment {id} exists"));
        }
        let u = self
            .units
            .iter_mut()
            .find(|u| u.id == unit)
            .ok_or_else(|| format!("no unit {unit}"))?;
        u.assignments.push(id.to_string());
        self.assignments.push(Assignment {
            id: id.to_string(),
            unit: unit.to_string(),
            contract: contract.to_string(),
            status: AssignmentStatus::Outstanding,
            executions: Vec::new(),
            reports: Vec::new(),
            superseded: None,
            cancelled: None,
        });
        self.handoffs.push(Handoff {
            id: handoff.to_string(),
            kind: HandoffKind::Contract,
            assignment: id.to_string(),
            revision: None,
            state: HandoffState::Pending,
            reason: None,
        });
        self.projection.clear();
        self.withdrawn.clear();
        Ok(())
    }

    pub fn unit(&self, id: &str) -> Option<&Unit> {
        self.units.iter().find(|u| u.id == id)
    }

    pub fn assignment(&self, id: &str) -> Option<&Assignment> {
        self.assignments.iter().find(|a| a.id == id)
    }

    fn assignment_mut(&mut self, id: &str) -> Option<&mut Assignment> {
        self.assignments.iter_mut().find(|a| a.id == id)
    }

    fn handoff_mut(&mut self, id: &str) -> Option<&mut Handoff> {
        self.handoffs.iter_mut().find(|h| h.id == id)
    }

    /// The unit not yet closed, if any (there is at most one).
    pub fn open_unit(&self) -> Option<&Unit> {
        self.units.iter().find(|u| u.closed.is_none())
    }

    /// The assignment the Executor owes a report for, if any (there is at most one).
    pub fn outstanding(&self) -> Option<&Assignment> {
        self.assignments
            .iter()
            .find(|a| a.status == AssignmentStatus::Outstanding)
    }

    /// The execution running now, if any.
    pub fn running(&self) -> Option<(&Assignment, &Execution)> {
        self.assignments.iter().find_map(|a| {
            a.executions
                .iter()
                .find(|e| e.ended.is_none())
                .map(|e| (a, e))
        })
    }

    /// The latest handoff of an assignment, of `kind`.
    pub fn last_handoff(&self, assignment: &str, kind: HandoffKind) -> Option<&Handoff> {
        self.handoffs
            .iter()
            .rev()
            .find(|h| h.assignment == assignment && h.kind == kind)
    }

    /// A handoff not yet delivered: a pending or blocked one, newest first.
    pub fn pending_handoff(&self) -> Option<&Handoff> {
        self.handoffs
            .iter()
            .rev()
            .find(|h| matches!(h.state, HandoffState::Pending | HandoffState::Blocked))
    }

    /// The participant responsible now. Under automatic control, the Executor while one of its
    /// executions runs, while its report's transfer is blocked (it must mend it and `retry`), and
    /// between a delivered contract and its first execution; the Coordinator otherwise (also
    /// after a stopped execution, whose host report it has). Under manual control, the held
    /// profile.
    pub fn responsible(&self) -> Option<Profile> {
        match self.control {
            Control::Inactive => None,
            Control::Manual { profile } => Some(profile),
            Control::Automatic => {
                if self.running().is_some() {
                    return Some(Profile::Executor);
                }
                let Some(a) = self.outstanding() else {
                    return Some(Profile::Coordinator);
                };
                let report = self.last_handoff(&a.id, HandoffKind::Report);
                if report.is_some_and(|h| h.state == HandoffState::Blocked) {
                    return Some(Profile::Executor);
                }
                let contract_delivered = self
                    .last_handoff(&a.id, HandoffKind::Contract)
                    .is_some_and(|h| h.state == HandoffState::Configured);
                if contract_delivered && a.executions.is_empty() {
                    Some(Profile::Executor)
                } else {
                    Some(Profile::Coordinator)
                }
            }
        }
    }

    /// The outstanding assignment whose last execution was stopped (interrupted, failed or lost)
    /// and none runs: what `/resume` continues.
    pub fn resumable(&self) -> Option<&Assignment> {
        let a = self.outstanding()?;
        let last = a.executions.last()?;
        match last.ended {
            Some(
                ExecutionEnd::Interrupted
                | ExecutionEnd::Failed
                | ExecutionEnd::LimitReached
                | ExecutionEnd::Lost,
            ) => Some(a),
            Some(ExecutionEnd::Returned) | None => None,
        }
    }

    /// The next free id with `prefix` (`u`, `a`, `e`, `h`) among those in the state.
    pub fn next_id(&self, prefix: &str) -> String {
        let count = match prefix {
            "u" => self.units.len(),
            "a" => self.assignments.len(),
            "e" => self.assignments.iter().map(|a| a.executions.len()).sum(),
            _ => self.handoffs.len(),
        };
        format!("{prefix}{}", count + 1)
    }
}
