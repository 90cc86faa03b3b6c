//! What each participant may do under automatic control: an operation is turned into the events
//! that record it, or refused with the rule it breaks. Nothing here writes or runs anything; the
//! session commits the events to the journal, then acts.

use super::state::{
    ActBounded, AssignmentStatus, Control, Disposition, Event, ExecutionEnd, HandoffKind,
    HandoffState, Profile, Report, ReportOutcome, RoutingState,
};

/// The most limitations a report may carry.
pub const MAX_LIMITATIONS: usize = 32;
/// The most references one `project add` may select, and the most selected at once.
pub const MAX_PROJECTED: usize = 64;

/// The parts of a report beside its result, outcome and limitations (seed 000:369).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReportDetails {
    pub corrected_assumptions: Vec<String>,
    pub partial_effects: Vec<String>,
    /// Why the Executor returns: required for a `partial` or `blocked` outcome.
    pub reason: Option<String>,
}

/// A call of a participant's routing tool (or of an environment tool, to be checked).
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    Assign {
        contract: String,
        /// The outcome of the unit this assignment opens, in the Coordinator's words: required
        /// when no unit is open, refused when one is.
        unit_outcome: Option<String>,
    },
    /// `delegate cancel`: withdraw the outstanding assignment nobody is executing.
    Cancel {
        reason: String,
    },
    Replace {
        contract: String,
        reason: String,
    },
    Close {
        disposition: Disposition,
        assessment: String,
    },
    Assess,
    OpenActBounded(ActBounded),
    /// `act_bounded close`: the scope reached its stop condition.
    CloseActBounded {
        result: String,
    },
    Submit {
        report: String,
        outcome: ReportOutcome,
        limitations: Vec<String>,
        details: ReportDetails,
    },
    Retry,
    ProjectAdd {
        refs: Vec<String>,
    },
    ProjectRemove {
        refs: Vec<String>,
        reason: String,
    },
    /// An environment tool (read, bash, edit…): only a check, it records nothing.
    /// `instructional`: a read of a role or skill file, which the Coordinator may make outside an
    /// `act_bounded` scope.
    Environment {
        tool: String,
        instructional: bool,
    },
}

impl Op {
    /// The participant whose tool this is; `None` for environment tools (either may have them).
    fn owner(&self) -> Option<Profile> {
        match self {
            Op::Assign { .. }
            | Op::Cancel { .. }
            | Op::Replace { .. }
            | Op::Close { .. }
            | Op::Assess
            | Op::OpenActBounded(_)
            | Op::CloseActBounded { .. } => Some(Profile::Coordinator),
            Op::Submit { .. } | Op::Retry | Op::ProjectAdd { .. } | Op::ProjectRemove { .. } => {
                Some(Profile::Executor)
            }
            Op::Environment { .. } => None,
        }
    }

    fn name(&self) -> String {
        match self {
            Op::Assign { .. } => "delegate assign".into(),
            Op::Cancel { .. } => "delegate cancel".into(),
            Op::Replace { .. } => "delegate replace".into(),
            Op::Close { .. } => "unit close".into(),
            Op::Assess => "unit assess".into(),
            Op::OpenActBounded(_) => "act_bounded open".into(),
            Op::CloseActBounded { .. } => "act_bounded close".into(),
            Op::Submit { .. } => "return submit".into(),
            Op::Retry => "return retry".into(),
            Op::ProjectAdd { .. } => "project add".into(),
            Op::ProjectRemove { .. } => "project remove".into(),
            Op::Environment { tool, .. } => format!("`{tool}`"),
        }
    }
}

/// A call the protocol forbids: nothing was recorded or run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("refused by the routing rule `{rule}`: {message}")]
pub struct Refusal {
    /// A short name of the rule, stable for tests and tooling.
    pub rule: &'static str,
    pub message: String,
}

fn refuse(rule: &'static str, message: impl Into<String>) -> Refusal {
    Refusal {
        rule,
        message: message.into(),
    }
}

/// Whether `who` may call a tool of `owner` (`None`: an environment tool) named `name` now: only
/// under automatic control, only its own participant's tools, only while it is responsible.
pub fn caller(
    state: &RoutingState,
    who: Profile,
    owner: Option<Profile>,
    name: &str,
) -> Result<(), Refusal> {
    if state.control != Control::Automatic {
        return Err(refuse(
            "automatic-only",
            format!(
                "{name} works only under automatic control; control is {}",
                state.control.describe()
            ),
        ));
    }
    if let Some(owner) = owner {
        if owner != who {
            return Err(refuse(
                "participant",
                format!(
                    "{name} is a tool of the {}, and this is the {}",
                    owner.as_str(),
                    who.as_str()
                ),
            ));
        }
    }
    let responsible = state.responsible();
    if responsible != Some(who) {
        return Err(refuse(
            "responsibility",
            format!(
                "the {} is responsible now, not the {}: {name} was not run",
                responsible.map_or("host", Profile::as_str),
                who.as_str()
            ),
        ));
    }
    Ok(())
}

/// The events that record `op` by `who`, or the rule it breaks. `known` says whether a `ctx:`
/// reference names evidence the session holds.
pub fn decide(
    state: &RoutingState,
    who: Profile,
    op: &Op,
    known: &dyn Fn(&str) -> bool,
) -> Result<Vec<Event>, Refusal> {
    if let Op::Environment { .. } = op {
        if state.control != Control::Automatic {
            return Ok(Vec::new());
        }
    }
    caller(state, who, op.owner(), &op.name())?;
    match op {
        Op::Environment {
            tool,
            instructional,
        } => environment(state, who, tool, *instructional),
        Op::Assign {
            contract,
            unit_outcome,
        } => assign(state, contract, unit_outcome.as_deref()),
        Op::Replace { contract, reason } => replace(state, contract, reason),
        Op::Cancel { reason } => cancel(state, reason),
        Op::Close {
            disposition,
            assessment,
        } => close_unit(state, *disposition, assessment),
        Op::Assess => assess(state),
        Op::OpenActBounded(scope) => open_scope(state, scope),
        Op::CloseActBounded { result } => close_scope(state, result),
        Op::Submit {
            report,
            outcome,
            limitations,
            details,
        } => submit(
            state,
            Submission {
                report,
                outcome: *outcome,
                limitations,
                details,
            },
            known,
        ),
        Op::Retry => retry(state, known),
        Op::ProjectAdd { refs } => project_add(state, refs, known),
        Op::ProjectRemove { refs, reason } => project_remove(state, refs, reason),
    }
}

/// An environment tool: the Coordinator may use one only in an `act_bounded` scope (or to read
/// role and skill files); it records nothing.
fn environment(
    state: &RoutingState,
    who: Profile,
    tool: &str,
    instructional: bool,
) -> Result<Vec<Event>, Refusal> {
    if who == Profile::Coordinator && state.act_bounded.is_none() && !instructional {
        return Err(refuse(
            "coordinator-environment",
            format!(
                "the Coordinator does not use environment tools such as `{tool}`: delegate the work with `delegate assign`, or, if judgment and action cannot be separated, `act_bounded open` a scope and `act_bounded run` the tool in it (reading role and skill files needs no scope)"
            ),
        ));
    }
    Ok(Vec::new())
}

/// `delegate assign`: a new assignment (in a new unit when none is open) and its handoff.
fn assign(
    state: &RoutingState,
    contract: &str,
    unit_outcome: Option<&str>,
) -> Result<Vec<Event>, Refusal> {
    non_empty("contract", contract)?;
    if let Some(a) = state.outstanding() {
        return Err(refuse(
            "one-assignment",
            format!(
                "assignment {} is outstanding: wait for its report, or `replace` it while it is quiescent",
                a.id
            ),
        ));
    }
    let mut events = Vec::new();
    let unit = assignment_unit(state, unit_outcome, &mut events)?;
    let assignment = state.next_id("a");
    let handoff = state.next_id("h");
    events.push(Event::Assigned {
        assignment,
        unit,
        contract: contract.to_string(),
        handoff: handoff.clone(),
    });
    events.push(Event::HandoffConfigured { handoff });
    close_act_bounded(state, &mut events);
    Ok(events)
}

/// The unit a new assignment works toward: the open one, or one opened for `unit_outcome`
/// (its event pushed onto `events`).
fn assignment_unit(
    state: &RoutingState,
    unit_outcome: Option<&str>,
    events: &mut Vec<Event>,
) -> Result<String, Refusal> {
    match (state.open_unit(), unit_outcome) {
        (Some(u), None) => Ok(u.id.clone()),
        (Some(u), Some(_)) => Err(refuse(
            "unit-outcome",
            format!(
                "unit {} is open for its own outcome: leave `unit_outcome` out to assign more work toward it, or `unit close` it first",
                u.id
            ),
        )),
        (None, None) => Err(refuse(
            "unit-outcome",
            "no unit is open: `unit_outcome` states the outcome this assignment's unit is for, in your words (what must be true when you accept it)",
        )),
        (None, Some(outcome)) => {
            non_empty("unit_outcome", outcome)?;
            let unit = state.next_id("u");
            events.push(Event::UnitOpened {
                unit: unit.clone(),
                outcome: outcome.trim().to_string(),
            });
            Ok(unit)
        }
    }
}

/// `delegate replace`: the quiescent outstanding assignment gives way to a new contract.
fn replace(state: &RoutingState, contract: &str, reason: &str) -> Result<Vec<Event>, Refusal> {
    non_empty("contract", contract)?;
    non_empty("reason", reason)?;
    let Some(old) = state.outstanding() else {
        return Err(refuse(
            "replace-outstanding",
            "no assignment is outstanding: `replace` changes one that has not returned; use `assign` for new work",
        ));
    };
    if old.executions.iter().any(|e| e.ended.is_none()) {
        return Err(refuse(
            "replace-quiescent",
            format!(
                "assignment {} is executing: it can be replaced only while no execution of it runs",
                old.id
            ),
        ));
    }
    if state.unit(&old.unit).is_none_or(|u| u.closed.is_some()) {
        return Err(refuse(
            "replace-unit",
            format!(
                "the unit of assignment {} is closed: its outcome no longer holds",
                old.id
            ),
        ));
    }
    let assignment = state.next_id("a");
    let handoff = state.next_id("h");
    let mut events = vec![
        Event::Replaced {
            old: old.id.clone(),
            assignment,
            contract: contract.to_string(),
            reason: reason.to_string(),
            handoff: handoff.clone(),
        },
        Event::HandoffConfigured { handoff },
    ];
    close_act_bounded(state, &mut events);
    Ok(events)
}

/// `delegate cancel`: the quiescent outstanding assignment is withdrawn.
fn cancel(state: &RoutingState, reason: &str) -> Result<Vec<Event>, Refusal> {
    non_empty("reason", reason)?;
    let Some(a) = state.outstanding() else {
        return Err(refuse(
            "cancel-outstanding",
            "no assignment is outstanding: there is nothing to cancel",
        ));
    };
    if a.executions.iter().any(|e| e.ended.is_none()) {
        return Err(refuse(
            "cancel-quiescent",
            format!(
                "assignment {} is executing: it can be cancelled only while no execution of it runs",
                a.id
            ),
        ));
    }
    Ok(vec![Event::AssignmentCancelled {
        assignment: a.id.clone(),
        reason: reason.trim().to_string(),
    }])
}

/// `unit close`: the open unit ends with `disposition`, once no assignment is outstanding (and,
/// to be accepted, with a returned report that is not blocked).
fn close_unit(
    state: &RoutingState,
    disposition: Disposition,
    assessment: &str,
) -> Result<Vec<Event>, Refusal> {
    non_empty("assessment", assessment)?;
    let Some(unit) = state.open_unit() else {
        return Err(refuse("close-open-unit", "no unit is open"));
    };
    if let Some(a) = state.outstanding() {
        return Err(refuse(
            "close-outstanding",
            format!(
                "assignment {} is outstanding: a unit cannot be closed before its assignment returns — `delegate cancel` it (with why) first if its work is no longer wanted",
                a.id
            ),
        ));
    }
    if disposition == Disposition::Accepted
        && !unit.assignments.iter().any(|a| {
            state
                .assignment(a)
                .is_some_and(|a| a.status == AssignmentStatus::Returned)
        })
    {
        return Err(refuse(
            "close-evidence",
            format!(
                "unit {} has no returned report: `accepted` needs a result to accept (close it `cancelled` or `deferred` otherwise)",
                unit.id
            ),
        ));
    }
    // A blocked result is not accepted (seed 000: an honest disposition): the latest
    // report of the unit says whether its result stands.
    let latest = unit
        .assignments
        .iter()
        .rev()
        .filter_map(|a| state.assignment(a))
        .find(|a| a.status == AssignmentStatus::Returned)
        .and_then(|a| a.reports.last().map(|r| (a.id.clone(), r.outcome)));
    if let (Disposition::Accepted, Some((id, ReportOutcome::Blocked))) = (disposition, latest) {
        return Err(refuse(
            "close-blocked",
            format!(
                "the report of assignment {id} is blocked: a blocked result cannot be accepted — assign the missing work again, or close the unit `cancelled` or `deferred` with why"
            ),
        ));
    }
    Ok(vec![Event::UnitClosed {
        unit: unit.id.clone(),
        disposition,
        assessment: assessment.to_string(),
    }])
}

/// `unit assess`: allowed once the open unit has a returned report; it records nothing.
fn assess(state: &RoutingState) -> Result<Vec<Event>, Refusal> {
    let returned = state.open_unit().is_some_and(|u| {
        u.assignments.iter().any(|a| {
            state
                .assignment(a)
                .is_some_and(|a| a.status == AssignmentStatus::Returned)
        })
    });
    if !returned {
        return Err(refuse(
            "assess-report",
            "the open unit has no returned report to assess",
        ));
    }
    Ok(Vec::new())
}

/// `act_bounded open`: a scope with every field stated, ending the one open before.
fn open_scope(state: &RoutingState, scope: &ActBounded) -> Result<Vec<Event>, Refusal> {
    for (field, value) in [
        ("scope", &scope.scope),
        ("expected_result", &scope.expected_result),
        ("authority", &scope.authority),
        ("stop_condition", &scope.stop_condition),
        ("inseparable", &scope.inseparable),
        ("delegation_loss", &scope.delegation_loss),
    ] {
        non_empty(field, value)?;
    }
    // A new scope replaces an open one: the old one is recorded as ended.
    let mut events: Vec<Event> = end_act_bounded(state, "a new scope").into_iter().collect();
    events.push(Event::ActBoundedOpened {
        scope: scope.clone(),
    });
    Ok(events)
}

/// `act_bounded close`: the open scope reached its stop condition.
fn close_scope(state: &RoutingState, result: &str) -> Result<Vec<Event>, Refusal> {
    non_empty("result", result)?;
    if state.act_bounded.is_none() {
        return Err(refuse(
            "act-bounded-open",
            "no act_bounded scope is open".to_string(),
        ));
    }
    Ok(vec![Event::ActBoundedClosed {
        reason: format!("its stop condition: {}", result.trim()),
    }])
}

/// The arguments of a `return submit`.
struct Submission<'a> {
    report: &'a str,
    outcome: ReportOutcome,
    limitations: &'a [String],
    details: &'a ReportDetails,
}

/// `return submit`: the Executor's report is saved, its execution ends, and the report's
/// transfer is configured (or blocked on unknown evidence).
fn submit(
    state: &RoutingState,
    submission: Submission<'_>,
    known: &dyn Fn(&str) -> bool,
) -> Result<Vec<Event>, Refusal> {
    let Submission {
        report,
        outcome,
        limitations,
        details,
    } = submission;
    non_empty("report", report)?;
    if outcome != ReportOutcome::Completed
        && details
            .reason
            .as_deref()
            .is_none_or(|r| r.trim().is_empty())
    {
        return Err(refuse(
            "return-reason",
            "a `partial` or `blocked` report needs `reason`: why you return before the contract is done (what stopped you, what is needed)",
        ));
    }
    if limitations.len() > MAX_LIMITATIONS {
        return Err(refuse(
            "limitations",
            format!(
                "{} limitations: a report carries at most {MAX_LIMITATIONS}; merge related ones",
                limitations.len()
            ),
        ));
    }
    let (a, execution) = executing(state)?;
    let revision = a.reports.len() as u32 + 1;
    let handoff = state.next_id("h");
    let mut events = vec![
        Event::ReportSaved {
            assignment: a.id.clone(),
            report: Report {
                revision,
                outcome,
                text: report.to_string(),
                limitations: limitations.to_vec(),
                evidence: state.projection.clone(),
                by_host: false,
                stopped: false,
                corrected_assumptions: details.corrected_assumptions.clone(),
                partial_effects: details.partial_effects.clone(),
                reason: details.reason.clone().filter(|r| !r.trim().is_empty()),
                withdrawn: state.withdrawn.clone(),
            },
            handoff: handoff.clone(),
        },
        Event::ExecutionEnded {
            execution,
            how: ExecutionEnd::Returned,
        },
    ];
    events.push(deliver(&state.projection, handoff, known));
    Ok(events)
}

/// `return retry`: the blocked transfer of the saved report is tried again.
fn retry(state: &RoutingState, known: &dyn Fn(&str) -> bool) -> Result<Vec<Event>, Refusal> {
    let blocked = state.outstanding().and_then(|a| {
        state
            .last_handoff(&a.id, HandoffKind::Report)
            .filter(|h| h.state == HandoffState::Blocked)
    });
    let Some(h) = blocked else {
        return Err(refuse(
            "retry-blocked",
            "no report transfer is blocked: `retry` resends a saved report whose transfer failed; use `submit` for a report",
        ));
    };
    Ok(vec![deliver(&state.projection, h.id.clone(), known)])
}

/// `project add`: known references of the running assignment join the selection, within its
/// bound.
fn project_add(
    state: &RoutingState,
    refs: &[String],
    known: &dyn Fn(&str) -> bool,
) -> Result<Vec<Event>, Refusal> {
    if refs.is_empty() || refs.len() > MAX_PROJECTED {
        return Err(refuse(
            "project-bound",
            format!(
                "`refs` holds {}: give 1 to {MAX_PROJECTED} references",
                refs.len()
            ),
        ));
    }
    executing(state)?;
    for r in refs {
        if !known(r) {
            return Err(refuse(
                "project-ref",
                format!(
                    "`{r}` is not a reference of this assignment: `project inspect` lists them"
                ),
            ));
        }
    }
    let new: Vec<String> = refs
        .iter()
        .filter(|r| !state.projection.contains(r))
        .cloned()
        .collect();
    if state.projection.len() + new.len() > MAX_PROJECTED {
        return Err(refuse(
            "project-bound",
            format!(
                "at most {MAX_PROJECTED} references may be selected at once: remove some first"
            ),
        ));
    }
    Ok(vec![Event::ProjectionAdded { refs: new }])
}

/// `project remove`: selected references are withdrawn, with why.
fn project_remove(
    state: &RoutingState,
    refs: &[String],
    reason: &str,
) -> Result<Vec<Event>, Refusal> {
    non_empty("reason", reason)?;
    if refs.is_empty() {
        return Err(refuse(
            "argument",
            "`refs` is empty: name the references to withdraw",
        ));
    }
    if let Some(r) = refs.iter().find(|r| !state.projection.contains(r)) {
        return Err(refuse("project-ref", format!("`{r}` is not selected")));
    }
    Ok(vec![Event::ProjectionRemoved {
        refs: refs.to_vec(),
        reason: reason.to_string(),
    }])
}

/// The outstanding assignment and the execution the Executor is in.
fn executing(state: &RoutingState) -> Result<(&super::state::Assignment, String), Refusal> {
    let Some(a) = state.outstanding() else {
        return Err(refuse("no-assignment", "no assignment is outstanding"));
    };
    match a.executions.iter().rev().find(|e| e.ended.is_none()) {
        Some(e) => Ok((a, e.id.clone())),
        None => Err(refuse(
            "no-execution",
            format!("no execution of assignment {} is running", a.id),
        )),
    }
}

/// The transfer of a saved report: configured, or blocked when a selected reference is unknown.
fn deliver(projection: &[String], handoff: String, known: &dyn Fn(&str) -> bool) -> Event {
    match projection.iter().find(|r| !known(r)) {
        Some(r) => Event::HandoffBlocked {
            handoff,
            reason: format!(
                "the selected evidence `{r}` cannot be delivered: `project remove` it with a reason, then `return retry`"
            ),
        },
        None => Event::HandoffConfigured { handoff },
    }
}

fn close_act_bounded(state: &RoutingState, events: &mut Vec<Event>) {
    events.extend(end_act_bounded(state, "the next delegation"));
}

/// The event that ends an open `act_bounded` scope for `reason` (new user input, a restart, a
/// delegation); none when no scope is open.
pub fn end_act_bounded(state: &RoutingState, reason: &str) -> Option<Event> {
    state.act_bounded.as_ref().map(|_| Event::ActBoundedClosed {
        reason: reason.into(),
    })
}

fn non_empty(field: &'static str, value: &str) -> Result<(), Refusal> {
    if value.trim().is_empty() {
        return Err(refuse(
            "argument",
            format!("`{field}` is empty: it is required"),
        ));
    }
    Ok(())
}

/// The events of a `return submit` made in the Executor's last turn after a stop: the report is
/// the Executor's, marked `stopped` (the assignment stays outstanding), and the execution ends
/// `how` (interrupted, or at its turn limit) instead of `returned`.
pub fn stopped_submit(events: Vec<Event>, how: ExecutionEnd) -> Vec<Event> {
    events
        .into_iter()
        .map(|e| match e {
            Event::ReportSaved {
                assignment,
                mut report,
                handoff,
            } => {
                report.stopped = true;
                Event::ReportSaved {
                    assignment,
                    report,
                    handoff,
                }
            }
            Event::ExecutionEnded {
                execution,
                how: ExecutionEnd::Returned,
            } => Event::ExecutionEnded { execution, how },
            e => e,
        })
        .collect()
}

/// The host gives the Executor its turn on the outstanding assignment: a new execution.
pub fn start_execution(state: &RoutingState) -> Option<Vec<Event>> {
    let a = state.outstanding()?;
    if a.executions.iter().any(|e| e.ended.is_none()) {
        return None;
    }
    Some(vec![Event::ExecutionStarted {
        assignment: a.id.clone(),
        execution: state.next_id("e"),
    }])
}

/// The running execution stops without a report of the Executor's own (new user input, a model
/// failure, a limit): the host saves an honest partial report from what is known — `done`, the
/// Executor's last words, and `gaps`, what was asked but not established — ends the execution
/// `how`, and hands the report to the Coordinator.
pub fn host_return(
    state: &RoutingState,
    how: ExecutionEnd,
    done: &str,
    gaps: Vec<String>,
) -> Option<Vec<Event>> {
    let (a, execution) = executing(state).ok()?;
    let handoff = state.next_id("h");
    let why = match how {
        ExecutionEnd::Interrupted => "The execution was interrupted by new user input",
        ExecutionEnd::Failed => "The execution failed before the Executor returned",
        ExecutionEnd::LimitReached => {
            "The execution reached the session's turn limit before the Executor returned"
        }
        ExecutionEnd::Lost => "The execution was lost when the session's process ended",
        ExecutionEnd::Returned => "The execution ended",
    };
    let text = if done.trim().is_empty() {
        format!("{why}; the Executor reported nothing before it stopped.")
    } else {
        format!(
            "{why}. The Executor's last message before it stopped:\n{}",
            done.trim()
        )
    };
    let mut limitations = gaps;
    limitations.truncate(MAX_LIMITATIONS - 1);
    limitations.push("written by the host: the Executor did not review this report".into());
    Some(vec![
        Event::ReportSaved {
            assignment: a.id.clone(),
            report: Report {
                revision: a.reports.len() as u32 + 1,
                outcome: ReportOutcome::Partial,
                text,
                limitations,
                evidence: state.projection.clone(),
                by_host: true,
                stopped: false,
                corrected_assumptions: Vec::new(),
                partial_effects: Vec::new(),
                reason: Some(why.to_string()),
                withdrawn: state.withdrawn.clone(),
            },
            handoff: handoff.clone(),
        },
        Event::ExecutionEnded { execution, how },
        Event::HandoffConfigured { handoff },
    ])
}
