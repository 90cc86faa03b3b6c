//! A routed seat's tool calls: routing tools run by the host, environment tools (the
//! Coordinator's through `act_bounded run`) after the routing rules allow them.

use super::*;

/// Runs a routed seat's tool calls in order: routing tools by the host, environment tools after
/// the routing rules allow them, the inbox looked at between atomic calls.
pub(crate) async fn run_calls(
    s: &mut Running<'_>,
    seat: &mut Seat,
    calls: &[(String, String, String)],
    turn: u32,
) -> (Vec<Message>, Flow) {
    let mut flow = Flow::default();
    let mut results = Vec::new();
    // The Coordinator's `act_bounded run` calls are its environment calls: checked and run as
    // the tool they name, their results answering the `act_bounded` call.
    let acted: Vec<String> = calls
        .iter()
        .filter(|c| act_run(seat, c).is_some())
        .map(|c| c.0.clone())
        .collect();
    let calls: Vec<(String, String, String)> = calls
        .iter()
        .map(|c| act_run(seat, c).unwrap_or_else(|| c.clone()))
        .collect();
    let calls = &calls[..];
    // seed 000: never combine new task work with a report that assumes its unseen outcome — a
    // `return` in a turn that also runs environment calls is refused (the work runs; the report
    // comes in a turn of its own, after its results are read).
    let new_work: Vec<&str> = calls
        .iter()
        .filter(|c| rtools::owner(&c.1).is_none())
        .map(|c| c.1.as_str())
        .collect();
    let mut i = 0;
    while i < calls.len() {
        // Before every call, the first included: input that arrived while the model generated
        // this turn stops a working Executor before any of the turn runs (seed 000: a prepared
        // request honours a stop immediately).
        let stop = if flow.returned {
            Some("the assignment returned; the rest of the turn was not run".to_string())
        } else {
            s.poll(acting(s, seat), &mut flow)
        };
        if let Some(why) = stop {
            for call in &calls[i..] {
                results.push(refused(s, call, &format!("not run: {why}")));
            }
            break;
        }
        let (call_id, name, raw) = &calls[i];
        if name == "return" && !new_work.is_empty() {
            let why = format!(
                "return refused: this turn also runs new work ({}) whose results your report has not seen; read them, then return in a turn of its own",
                new_work.join(", ")
            );
            results.push(refused(s, &calls[i], &why));
            i += 1;
            continue;
        }
        if rtools::owner(name).is_some() {
            let args: Value = serde_json::from_str(if raw.trim().is_empty() { "{}" } else { raw })
                .unwrap_or(Value::Null);
            let item_id = start_item(s, call_id, name, &args, &None);
            let out = routing_call(
                s,
                seat,
                name,
                &args,
                &format!("{turn}:{call_id}"),
                &mut flow,
            )
            .await;
            results.push(finish_item(s, &item_id, &calls[i], &args, out));
            i += 1;
            continue;
        }
        // A run of environment calls: each checked, the allowed ones run together.
        let mut j = i;
        let mut allowed = Vec::new();
        while j < calls.len() && rtools::owner(&calls[j].1).is_none() {
            let who = seat.profile.unwrap_or(Profile::Coordinator);
            let args: Value = serde_json::from_str(&calls[j].2).unwrap_or(Value::Null);
            let op = Op::Environment {
                tool: calls[j].1.clone(),
                instructional: calls[j].1 == "read"
                    && tool_path_hint(&args).is_some_and(|p| is_instructional(&p)),
            };
            let verdict = state(s)
                .map(|st| rules::decide(st, who, &op, &|_| false))
                .unwrap_or(Ok(Vec::new()));
            match verdict {
                Ok(_) => allowed.push(calls[j].clone()),
                Err(refusal) => {
                    if !allowed.is_empty() {
                        let ran = s.run_environment(seat, &allowed, &mut flow).await;
                        results.extend(ran);
                        allowed.clear();
                        if flow.interrupted || flow.stopped || flow.approval_unavailable.is_some() {
                            // Stopped at a safe point: this call and the rest do not run.
                            for call in &calls[j..] {
                                results.push(refused(
                                    s,
                                    call,
                                    "not run: the work was stopped before this call",
                                ));
                            }
                            j = calls.len();
                            break;
                        }
                    }
                    results.push(refused(s, &calls[j], &refusal.to_string()));
                }
            }
            j += 1;
        }
        if !allowed.is_empty() {
            let ran = s.run_environment(seat, &allowed, &mut flow).await;
            results.extend(ran);
        }
        if flow.interrupted || flow.stopped || flow.approval_unavailable.is_some() {
            // The runner already answered the calls it did not start.
            break;
        }
        i = j;
    }
    for m in &mut results {
        if let Message::Tool { call_id, tool, .. } = m {
            if acted.contains(call_id) {
                *tool = "act_bounded".into();
            }
        }
    }
    (results, flow)
}

/// A Coordinator's `act_bounded run` call as the environment call it asks for.
fn act_run(seat: &Seat, call: &(String, String, String)) -> Option<(String, String, String)> {
    let (call_id, name, raw) = call;
    if name != "act_bounded" || seat.profile != Some(Profile::Coordinator) {
        return None;
    }
    let args: Value = serde_json::from_str(raw).ok()?;
    match rtools::parse(name, &args) {
        Ok(Call::ActRun { tool, arguments }) => {
            Some((call_id.clone(), tool, arguments.to_string()))
        }
        _ => None,
    }
}

/// A new item for call `call_id`, announced in progress; its id.
fn start_item(
    s: &mut Running<'_>,
    call_id: &str,
    name: &str,
    args: &Value,
    path: &Option<String>,
) -> String {
    let item_id = s.ids.next();
    (s.emit)(AgentEvent::ItemStarted {
        item: tool_item(
            &item_id,
            call_id,
            name,
            args,
            path,
            ItemStatus::InProgress,
            None,
        ),
    });
    item_id
}

/// A call answered without running: its item and its error result.
fn refused(s: &mut Running<'_>, call: &(String, String, String), message: &str) -> Message {
    let (call_id, name, raw) = call;
    let args: Value = serde_json::from_str(raw).unwrap_or(Value::String(raw.clone()));
    let out = error_output(message.to_string());
    let path = tool_path_hint(&args);
    let item_id = start_item(s, call_id, name, &args, &path);
    (s.emit)(AgentEvent::ItemCompleted {
        item: tool_item(
            &item_id,
            call_id,
            name,
            &args,
            &path,
            ItemStatus::Declined,
            Some(&out),
        ),
    });
    Message::Tool {
        call_id: call_id.clone(),
        tool: name.clone(),
        output: out.output,
        is_error: true,
    }
}

/// The item and result of a routing call the host ran.
fn finish_item(
    s: &mut Running<'_>,
    item_id: &str,
    call: &(String, String, String),
    args: &Value,
    out: ToolOutput,
) -> Message {
    let (call_id, name, _) = call;
    let status = if out.is_error {
        ItemStatus::Failed
    } else {
        ItemStatus::Completed
    };
    (s.emit)(AgentEvent::ItemCompleted {
        item: tool_item(item_id, call_id, name, args, &None, status, Some(&out)),
    });
    Message::Tool {
        call_id: call_id.clone(),
        tool: name.clone(),
        output: out.output,
        is_error: out.is_error,
    }
}

fn ok(text: String) -> ToolOutput {
    ToolOutput {
        output: text,
        is_error: false,
        exit_code: None,
        path: None,
    }
}

/// One routing tool call of `seat`: parsed, checked by the rules, recorded, then carried out.
async fn routing_call(
    s: &mut Running<'_>,
    seat: &Seat,
    name: &str,
    args: &Value,
    op: &str,
    flow: &mut Flow,
) -> ToolOutput {
    let who = seat.profile.unwrap_or(Profile::Coordinator);
    if name == "project" && s.routed.as_ref().is_some_and(|r| !r.projection) {
        return error_output(
            "projection is off in this session: there is nothing to select; state your evidence in the report itself".into(),
        );
    }
    let call = match rtools::parse(name, args) {
        Ok(c) => c,
        Err(e) => return error_output(e),
    };
    let Some(st) = state(s) else {
        return error_output("this session is not routed".into());
    };
    match call {
        Call::InspectUnits {
            view: v,
            reference,
            cursor,
            limit,
        } => {
            if let Err(r) = rules::caller(st, who, Some(Profile::Coordinator), "unit inspect") {
                return error_output(r.to_string());
            }
            match view::inspect_units(st, &v, reference.as_deref(), cursor, limit) {
                Ok(t) => ok(t),
                Err(e) => error_output(format!("`unit`: {e}")),
            }
        }
        Call::InspectProjection {
            scope,
            cursor,
            limit,
        } => {
            if let Err(r) = rules::caller(st, who, Some(Profile::Executor), "project inspect") {
                return error_output(r.to_string());
            }
            let Some(r) = s.routed.as_ref() else {
                return error_output("this session is not routed".into());
            };
            let assignment = st.outstanding().map(|a| a.id.clone());
            match r
                .evidence
                .inspect(&scope, &st.projection, assignment.as_deref(), cursor, limit)
            {
                Ok(t) => ok(t),
                Err(e) => error_output(format!("`project`: {e}")),
            }
        }
        // The Coordinator's runs are run as environment calls (`run_calls`): this is another
        // participant's.
        Call::ActRun { .. } => {
            match rules::caller(st, who, Some(Profile::Coordinator), "act_bounded run") {
                Err(r) => error_output(r.to_string()),
                Ok(()) => error_output("`act_bounded run` is the Coordinator's".into()),
            }
        }
        Call::Op(operation) => {
            let events = match operation_events(s, st, who, &operation) {
                Ok(e) => e,
                Err(e) => return error_output(e),
            };
            if let Err(e) = commit(s, op, &format!("turn-{op}"), events) {
                return error_output(e);
            }
            recorded_answer(s, operation, op, flow).await
        }
    }
}

/// The events `who`'s `operation` records, as the rules decide them; an error is the refusal.
fn operation_events(
    s: &Running<'_>,
    st: &crate::routing::state::RoutingState,
    who: Profile,
    operation: &Op,
) -> Result<Vec<Event>, String> {
    let known = |id: &str| s.routed.as_ref().is_some_and(|r| r.evidence.known(id));
    let events = match rules::decide(st, who, operation, &known) {
        Ok(e) => e,
        Err(r) => return Err(r.to_string()),
    };
    // Instructional reads go up with every report without being asked for.
    let mut events = events;
    if let (Op::Submit { .. }, Some(r), Some(a)) = (operation, s.routed.as_ref(), st.outstanding())
    {
        let auto = r.auto_projection(&a.id);
        if !auto.is_empty() {
            let mut probe = st.clone();
            let add = Event::ProjectionAdded { refs: auto };
            let _ = probe.apply(&crate::routing::state::Record {
                op: String::new(),
                step: String::new(),
                event: add.clone(),
            });
            events = match rules::decide(&probe, who, operation, &known) {
                Ok(e) => std::iter::once(add).chain(e).collect(),
                Err(r) => return Err(r.to_string()),
            };
        }
    }
    // A report written in the Executor's last turn after a stop keeps the assignment
    // outstanding and says how the execution ended.
    if let (Op::Submit { .. }, Some(how)) = (operation, s.routed.as_ref().and_then(|r| r.stopping))
    {
        events = rules::stopped_submit(events, how);
    }
    Ok(events)
}

/// The result of `operation` once recorded (operation id `op`): an assignment carried out to its
/// report, the routing state after a cancel or close, a report's receipt.
async fn recorded_answer(
    s: &mut Running<'_>,
    operation: Op,
    op: &str,
    flow: &mut Flow,
) -> ToolOutput {
    let Some(st) = state(s) else {
        return error_output("this session is not routed".into());
    };
    match operation {
        Op::Assign { .. } | Op::Replace { .. } => {
            let Some(id) = st.outstanding().map(|a| a.id.clone()) else {
                return error_output("the assignment was not recorded".into());
            };
            if let Err(e) = execute(s, &id, false, op).await {
                return error_output(format!(
                    "assignment {id} is saved, but its execution did not run to a report: {e}. A restart recovers it; then `/resume` runs it again or `replace` corrects it."
                ));
            }
            ok(report_for(s, &id))
        }
        Op::Assess => {
            let id = st
                .open_unit()
                .and_then(|u| u.assignments.last().cloned())
                .unwrap_or_default();
            ok(report_for(s, &id))
        }
        Op::Cancel { .. } => ok(format!(
            "{}\n\nThe assignment is cancelled. Assign the unit's missing work again, or close the unit `cancelled` or `deferred` with why.",
            view::runtime_state(
                st,
                Profile::Coordinator,
                s.routed.as_ref().is_some_and(|r| r.projection)
            )
        )),
        Op::Close { .. } => ok(format!(
            "{}\n\nThe unit is closed. Answer the user, or assign the next outcome.",
            view::runtime_state(
                st,
                Profile::Coordinator,
                s.routed.as_ref().is_some_and(|r| r.projection)
            )
        )),
        Op::OpenActBounded(_) => ok("act_bounded scope open: `act_bounded run` your environment tools (`tool`, `arguments`) within it, and `act_bounded close` it with its `result` at its stop condition. New user input or your next delegation also ends it.".into()),
        Op::CloseActBounded { .. } => ok("act_bounded scope closed.".into()),
        Op::Submit { .. } | Op::Retry => report_receipt(st, flow),
        Op::ProjectAdd { .. } | Op::ProjectRemove { .. } => ok(format!(
            "selected for the Coordinator: {}",
            if st.projection.is_empty() {
                "nothing".to_string()
            } else {
                st.projection.join(", ")
            }
        )),
        Op::Environment { .. } => ok(String::new()),
    }
}

/// The answer to a saved report: its receipt (the Executor's work has ended, so `flow` is marked
/// returned), or an error if its transfer is blocked.
fn report_receipt(st: &crate::routing::state::RoutingState, flow: &mut Flow) -> ToolOutput {
    let blocked = st
        .outstanding()
        .and_then(|a| st.last_handoff(&a.id, crate::routing::state::HandoffKind::Report));
    match blocked {
        Some(h) if h.state == crate::routing::state::HandoffState::Blocked => {
            error_output(format!(
                "your report was saved but its transfer is blocked: {}",
                h.reason.as_deref().unwrap_or("no reason recorded")
            ))
        }
        _ => {
            flow.returned = true;
            // The receipt: which revision reached the Coordinator, by which handoff.
            let receipt = st
                .assignments
                .iter()
                .rev()
                .find_map(|a| {
                    let h = st.last_handoff(&a.id, crate::routing::state::HandoffKind::Report)?;
                    Some(format!(
                        "Report revision {} of assignment {} saved and delivered to the Coordinator (handoff {}).",
                        h.revision.unwrap_or(0),
                        a.id,
                        h.id
                    ))
                })
                .unwrap_or_else(|| "Report saved and delivered to the Coordinator.".into());
            ok(format!("{receipt} Your work on this assignment has ended."))
        }
    }
}
