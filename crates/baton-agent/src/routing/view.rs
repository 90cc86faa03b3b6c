//! What the participants read of the routing state: the Runtime State block, the contract the
//! Executor gets, the report (with the evidence selected for it) the Coordinator gets, the
//! `inspect` answers, and the table of evidence references (`ctx:<id>`, each with the SHA-256 of
//! its body).

use sha2::{Digest, Sha256};

use super::rules::MAX_PROJECTED;

/// The most evidence, in bytes of bodies, a report carries to the Coordinator with projection off.
pub const MAX_UNFILTERED: usize = 64 * 1024;
use super::state::{
    AssignmentStatus, Control, ExecutionEnd, HandoffState, Profile, ReportOutcome, RoutingState,
};

/// One piece of the Executor's work the Coordinator may be shown: a tool result or a message.
#[derive(Debug, Clone, PartialEq)]
pub struct Evidence {
    /// `ctx:t<n>` for the n-th tool result of the Executor's view, `ctx:m<n>` for the n-th
    /// assistant message with text.
    pub id: String,
    /// What it is: `read src/a.rs`, `bash`, `message`.
    pub label: String,
    /// The assignment it was produced under.
    pub assignment: Option<String>,
    pub body: String,
    /// Hex SHA-256 of `body`.
    pub sha256: String,
    /// A completed read of instructional material (a role or skill file): always projected.
    pub instructional: bool,
}

/// The evidence of a session, in the order it was produced.
#[derive(Debug, Clone, Default)]
pub struct EvidenceTable {
    items: Vec<Evidence>,
    tools: usize,
    messages: usize,
}

/// The lowercase hex SHA-256 of `text`.
pub fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The line the host adds under each tool result the Executor sees, naming its reference (and
/// that of the Executor's message before the call, `said`, when it had text).
pub fn ref_line(id: &str, said: Option<&str>) -> String {
    match said {
        Some(m) => format!("\n[ref {id}; your message before this call: {m}]"),
        None => format!("\n[ref {id}]"),
    }
}

/// A tool result's text without the reference line the host added.
pub fn strip_ref_line(text: &str) -> &str {
    match text.rfind("\n[ref ctx:") {
        Some(i) if text[i..].trim_end().ends_with(']') && !text[i + 1..].contains('\n') => {
            &text[..i]
        }
        _ => text,
    }
}

impl EvidenceTable {
    /// Adds a tool result; returns its reference.
    pub fn add_tool(
        &mut self,
        label: String,
        body: &str,
        assignment: Option<String>,
        instructional: bool,
    ) -> String {
        self.tools += 1;
        let id = format!("ctx:t{}", self.tools);
        self.items.push(Evidence {
            id: id.clone(),
            label,
            assignment,
            body: body.to_string(),
            sha256: sha256_hex(body),
            instructional,
        });
        id
    }

    /// Adds an assistant message's text; returns its reference.
    pub fn add_message(&mut self, body: &str, assignment: Option<String>) -> String {
        self.messages += 1;
        let id = format!("ctx:m{}", self.messages);
        self.items.push(Evidence {
            id: id.clone(),
            label: "message".into(),
            assignment,
            body: body.to_string(),
            sha256: sha256_hex(body),
            instructional: false,
        });
        id
    }

    pub fn get(&self, id: &str) -> Option<&Evidence> {
        self.items.iter().find(|e| e.id == id)
    }

    pub fn known(&self, id: &str) -> bool {
        self.get(id).is_some()
    }

    /// Everything produced under `assignment`, in order.
    pub fn of_assignment<'a>(&'a self, assignment: &'a str) -> impl Iterator<Item = &'a Evidence> {
        self.items
            .iter()
            .filter(move |e| e.assignment.as_deref() == Some(assignment))
    }

    /// The instructional reads made under `assignment`, projected without being asked.
    pub fn instructional(&self, assignment: &str) -> Vec<String> {
        self.items
            .iter()
            .filter(|e| e.instructional && e.assignment.as_deref() == Some(assignment))
            .map(|e| e.id.clone())
            .collect()
    }

    /// The `project inspect` answer for `scope`: `selected` (the current selection),
    /// `assignment` (everything of the current assignment), `active` (the same, unselected
    /// only) or `history` (everything); metadata only, never bodies.
    pub fn inspect(
        &self,
        scope: &str,
        selected: &[String],
        assignment: Option<&str>,
        cursor: usize,
        limit: usize,
    ) -> Result<String, String> {
        let rows: Vec<&Evidence> = match scope {
            "selected" => selected.iter().filter_map(|id| self.get(id)).collect(),
            "assignment" => self
                .items
                .iter()
                .filter(|e| e.assignment.as_deref() == assignment)
                .collect(),
            "active" => self
                .items
                .iter()
                .filter(|e| e.assignment.as_deref() == assignment && !selected.contains(&e.id))
                .collect(),
            "history" => self.items.iter().collect(),
            other => {
                return Err(format!(
                    "`scope` is `{other}`: use selected, assignment, active or history"
                ))
            }
        };
        let total = rows.len();
        let page: Vec<&Evidence> = rows.into_iter().skip(cursor).take(limit).collect();
        let mut out = format!(
            "{total} reference(s), {} of at most {MAX_PROJECTED} selected{}:\n",
            selected.len(),
            if cursor > 0 || page.len() < total {
                format!("; showing {} from {cursor}", page.len())
            } else {
                String::new()
            }
        );
        let next = cursor + page.len();
        for e in page {
            out.push_str(&format!(
                "{} {}{} — {} bytes, sha256 {}{}\n",
                e.id,
                e.label,
                e.assignment
                    .as_deref()
                    .map(|a| format!(" ({a})"))
                    .unwrap_or_default(),
                e.body.len(),
                &e.sha256[..12],
                if selected.contains(&e.id) {
                    ", selected"
                } else {
                    ""
                }
            ));
        }
        if next < total {
            out.push_str(&format!("(more: cursor {next})\n"));
        }
        Ok(out)
    }
}

/// The user's own words of a user message: what follows the host's Runtime State block and the
/// conversation update after it, when the message opens with them (a routed session's user
/// messages do); the whole text otherwise.
pub fn user_words(text: &str) -> &str {
    if !text.starts_with("<runtime-state") {
        return text.trim();
    }
    let mut rest = text;
    for close in ["</runtime-state>", "</conversation-update>"] {
        if let Some(i) = rest.find(close) {
            rest = &rest[i + close.len()..];
        }
    }
    rest.trim()
}

/// The host's Runtime State block, as `profile` reads it: control, who is responsible, the
/// projection mode, the Coordinator's open `act_bounded` scope, the unit, the assignment and any
/// handoff not yet delivered. An observation, not user input.
pub fn runtime_state(state: &RoutingState, profile: Profile, projection: bool) -> String {
    let mut s = String::from("<runtime-state source=\"host\">\n");
    s.push_str(&format!(
        "control: {}; you are the {}; responsible now: {}\n",
        state.control.describe(),
        profile.as_str(),
        state.responsible().map_or("nobody", Profile::as_str)
    ));
    if state.control != Control::Automatic {
        s.push_str("routing does not apply: you work as an ordinary session, with every tool of the role\n");
    }
    s.push_str(if projection {
        "projection: on\n"
    } else {
        "projection: off (evidence goes up unfiltered)\n"
    });
    // The Coordinator's open scope, when there is one.
    if let Some(a) = &state.act_bounded {
        s.push_str(&format!(
            "act_bounded: open — {}; stop when {}\n",
            one_line(&a.scope),
            one_line(&a.stop_condition)
        ));
    }
    match state.open_unit() {
        Some(u) => s.push_str(&format!(
            "unit: {} (open) — {}\n",
            u.id,
            one_line(&u.outcome)
        )),
        None => s.push_str("unit: none open\n"),
    }
    match state.outstanding() {
        Some(a) => {
            let last = a.executions.last().map(|e| match e.ended {
                None => format!("execution {} running", e.id),
                Some(how) => format!("execution {} {}", e.id, end_word(how)),
            });
            s.push_str(&format!(
                "assignment: {} outstanding{}\n",
                a.id,
                last.map(|l| format!(", {l}")).unwrap_or_default()
            ));
        }
        None => s.push_str("assignment: none outstanding\n"),
    }
    match state.pending_handoff() {
        Some(h) => s.push_str(&format!(
            "pending handoff: {} ({:?} of {}, {})\n",
            h.id,
            h.kind,
            h.assignment,
            match h.state {
                HandoffState::Blocked => format!(
                    "blocked: {}",
                    h.reason.as_deref().unwrap_or("no reason given")
                ),
                _ => "pending".into(),
            }
        )),
        None => s.push_str("pending handoff: none\n"),
    }
    s.push_str("</runtime-state>");
    s
}

fn end_word(how: ExecutionEnd) -> &'static str {
    match how {
        ExecutionEnd::Returned => "returned",
        ExecutionEnd::Interrupted => "interrupted",
        ExecutionEnd::Failed => "failed",
        ExecutionEnd::LimitReached => "stopped at the turn limit",
        ExecutionEnd::Lost => "lost",
    }
}

fn one_line(text: &str) -> String {
    text.lines().next().unwrap_or("").trim().to_string()
}

/// What the Executor gets for an execution of assignment `id`: the Runtime State and the
/// contract, or, for `/resume`, the note that it continues where the last execution stopped.
pub fn contract_message(state: &RoutingState, id: &str, resumed: bool, projection: bool) -> String {
    let Some(a) = state.assignment(id) else {
        return runtime_state(state, Profile::Executor, projection);
    };
    let unit = state
        .unit(&a.unit)
        .map(|u| format!("{} — {}", u.id, one_line(&u.outcome)))
        .unwrap_or_default();
    let mut s = runtime_state(state, Profile::Executor, projection);
    if resumed {
        s.push_str(&format!(
            "\n\nThe user resumed assignment {} (unit {unit}). Its last execution stopped before it returned; check the partial effects it left, then continue the contract below.\n",
            a.id
        ));
    } else {
        s.push_str(&format!(
            "\n\nAssignment {} from the Coordinator (unit {unit}):\n",
            a.id
        ));
        // A replacement says what it replaces and why (seed 000:312).
        if let Some(old) = state
            .assignments
            .iter()
            .find(|o| o.superseded.as_ref().is_some_and(|x| x.by == a.id))
        {
            if let Some(sup) = &old.superseded {
                s.push_str(&format!(
                    "It replaces assignment {}, because: {}\n",
                    old.id,
                    sup.reason.trim()
                ));
            }
        }
    }
    s.push_str("\n<contract>\n");
    s.push_str(a.contract.trim());
    s.push_str("\n</contract>\n\nWork only through your tools. Your work on this assignment ends only with `return` (operation `submit`: the report, the outcome completed, partial or blocked, and its limitations); with projection on, select the evidence the Coordinator needs with `project add` first.");
    s
}

/// What the Coordinator gets when an execution of assignment `id` ends: the Runtime State, the
/// latest report, and with projection on the selected evidence bodies (each with its reference
/// and SHA-256); what could not be delivered is listed as a gap.
pub fn report_message(
    state: &RoutingState,
    id: &str,
    evidence: &EvidenceTable,
    projection: bool,
) -> String {
    let mut s = runtime_state(state, Profile::Coordinator, projection);
    let Some(a) = state.assignment(id) else {
        return s;
    };
    let Some(r) = a.reports.last() else {
        s.push_str(&format!("\n\nAssignment {} has no report.", a.id));
        return s;
    };
    let who = if r.by_host {
        "written by the host"
    } else if r.stopped {
        "by the Executor after it was stopped"
    } else {
        "by the Executor"
    };
    s.push_str(&format!(
        "\n\nReport of assignment {}, revision {} ({}), {who}:\n{}\n",
        a.id,
        r.revision,
        outcome_word(r.outcome),
        r.text.trim()
    ));
    if let Some(why) = &r.reason {
        s.push_str(&format!("\nWhy it returns: {}\n", why.trim()));
    }
    for (title, items) in [
        ("Corrected assumptions", &r.corrected_assumptions),
        ("Partial effects (changes that stay)", &r.partial_effects),
    ] {
        if !items.is_empty() {
            s.push_str(&format!("\n{title}:\n"));
            for i in items {
                s.push_str(&format!("- {}\n", i.trim()));
            }
        }
    }
    if a.status == AssignmentStatus::Outstanding {
        s.push_str("\nThe assignment is still outstanding: the user can `/resume` it, or you can `replace` it or `delegate cancel` it; the unit cannot be closed before it returns or is cancelled.\n");
    }
    let mut gaps: Vec<String> = Vec::new();
    let shown: Vec<&Evidence> = if projection {
        for id in &r.evidence {
            if evidence.get(id).is_none() {
                gaps.push(format!("{id} was selected but is not available"));
            }
        }
        r.evidence
            .iter()
            .filter_map(|id| evidence.get(id))
            .collect()
    } else {
        // Projection off: the Coordinator sees the assignment's evidence unfiltered, up to a
        // bound; what does not fit is named, never dropped silently.
        let mut size = 0;
        let mut kept = Vec::new();
        for e in evidence.of_assignment(&a.id) {
            if size + e.body.len() > MAX_UNFILTERED {
                gaps.push(format!(
                    "{} ({}, {} bytes) left out: unfiltered evidence is bounded to {} KiB per report",
                    e.id,
                    e.label,
                    e.body.len(),
                    MAX_UNFILTERED / 1024
                ));
                continue;
            }
            size += e.body.len();
            kept.push(e);
        }
        kept
    };
    if !shown.is_empty() {
        s.push_str(if projection {
            "\nEvidence selected for you:\n"
        } else {
            "\nThe Executor's evidence (projection off: unfiltered):\n"
        });
    }
    for e in &shown {
        s.push_str(&format!(
            "\n<evidence ref=\"{}\" of=\"{}\" sha256=\"{}\">\n{}\n</evidence>\n",
            e.id,
            e.label.replace('"', "'"),
            e.sha256,
            e.body.trim_end()
        ));
    }
    if shown.is_empty() {
        gaps.push(if projection {
            "no evidence was selected: the report's claims come without their tool results".into()
        } else {
            "the Executor produced no evidence under this assignment".into()
        });
    }
    if projection {
        // Instructional reads always go up; one that did not fit the selection is named.
        for e in evidence.of_assignment(&a.id) {
            if e.instructional && !r.evidence.contains(&e.id) {
                gaps.push(format!(
                    "the instructional read {} ({}) was not projected: the selection holds at most {MAX_PROJECTED} references",
                    e.id, e.label
                ));
            }
        }
    }
    for w in &r.withdrawn {
        gaps.push(format!(
            "the Executor withdrew {} from the selection: {}",
            w.refs.join(", "),
            w.reason.trim()
        ));
    }
    gaps.extend(r.limitations.iter().cloned());
    if !gaps.is_empty() {
        s.push_str("\nLimitations and gaps:\n");
        for g in gaps {
            s.push_str(&format!("- {g}\n"));
        }
    }
    s
}

fn outcome_word(o: ReportOutcome) -> &'static str {
    match o {
        ReportOutcome::Completed => "completed",
        ReportOutcome::Partial => "partial",
        ReportOutcome::Blocked => "blocked",
    }
}

/// The `unit inspect` answer: `current` (the open unit and its assignments), `history` (every
/// unit, `cursor` and `limit` paging), or `detail` of `reference` (a unit or an assignment id:
/// contract, reports and executions).
pub fn inspect_units(
    state: &RoutingState,
    view: &str,
    reference: Option<&str>,
    cursor: usize,
    limit: usize,
) -> Result<String, String> {
    match view {
        "current" => Ok(match state.open_unit() {
            Some(u) => unit_line(u),
            None => "no unit is open\n".into(),
        }),
        "history" => Ok(units_page(state, cursor, limit)),
        "detail" => {
            let Some(r) = reference else {
                return Err("`detail` needs `ref`: a unit id (u1) or an assignment id (a1)".into());
            };
            if let Some(u) = state.unit(r) {
                let mut s = unit_line(u);
                if let Some(c) = &u.closed {
                    s.push_str(&format!("assessment: {}\n", c.assessment));
                }
                return Ok(s);
            }
            let Some(a) = state.assignment(r) else {
                return Err(format!("`ref` {r} names no unit or assignment"));
            };
            Ok(assignment_detail(state, a))
        }
        other => Err(format!(
            "`view` is `{other}`: use current, history or detail"
        )),
    }
}

/// One unit in a line: its id, whether it is open, its outcome and its assignments.
fn unit_line(u: &super::state::Unit) -> String {
    let status = match &u.closed {
        None => "open".to_string(),
        Some(c) => format!("closed {:?}", c.disposition).to_lowercase(),
    };
    format!(
        "{} ({status}) — {}; assignments: {}\n",
        u.id,
        one_line(&u.outcome),
        if u.assignments.is_empty() {
            "none".into()
        } else {
            u.assignments.join(", ")
        }
    )
}

/// The `history` view: up to `limit` units from `cursor`, and the cursor of the next page.
fn units_page(state: &RoutingState, cursor: usize, limit: usize) -> String {
    let page: Vec<String> = state
        .units
        .iter()
        .skip(cursor)
        .take(limit)
        .map(unit_line)
        .collect();
    let mut s = page.concat();
    let next = cursor + page.len();
    if next < state.units.len() {
        s.push_str(&format!("(more: cursor {next})\n"));
    }
    if s.is_empty() {
        "no units\n".into()
    } else {
        s
    }
}

/// The `detail` view of an assignment: its contract, what replaced or cancelled it, its
/// executions, reports and handoffs.
fn assignment_detail(state: &RoutingState, a: &super::state::Assignment) -> String {
    let status = match a.status {
        AssignmentStatus::Outstanding => "outstanding",
        AssignmentStatus::Returned => "returned",
        AssignmentStatus::Superseded => "superseded",
        AssignmentStatus::Cancelled => "cancelled",
    };
    let mut s = format!(
        "{} of unit {} — {status}\ncontract:\n{}\n",
        a.id,
        a.unit,
        a.contract.trim()
    );
    if let Some(sup) = &a.superseded {
        s.push_str(&format!("replaced by {}: {}\n", sup.by, sup.reason.trim()));
    }
    if let Some(old) = state
        .assignments
        .iter()
        .find(|o| o.superseded.as_ref().is_some_and(|x| x.by == a.id))
    {
        if let Some(sup) = &old.superseded {
            s.push_str(&format!("replaces {}: {}\n", old.id, sup.reason.trim()));
        }
    }
    if let Some(why) = &a.cancelled {
        s.push_str(&format!("cancelled: {}\n", why.trim()));
    }
    for e in &a.executions {
        s.push_str(&format!(
            "execution {}: {}\n",
            e.id,
            e.ended.map_or("running", end_word)
        ));
    }
    for rep in &a.reports {
        push_report_detail(&mut s, rep);
    }
    for h in state.handoffs.iter().filter(|h| h.assignment == a.id) {
        s.push_str(&handoff_line(h));
    }
    s
}

/// A report in the `detail` view: its revision, outcome, author and text, then each of its
/// fields on a line.
fn push_report_detail(s: &mut String, rep: &super::state::Report) {
    s.push_str(&format!(
        "report revision {} ({}{}): {}\n",
        rep.revision,
        outcome_word(rep.outcome),
        if rep.by_host {
            ", by the host"
        } else if rep.stopped {
            ", by the Executor after a stop"
        } else {
            ""
        },
        rep.text.trim()
    ));
    let mut field = |name: &str, items: &[String]| {
        for i in items {
            s.push_str(&format!("  {name}: {}\n", i.trim()));
        }
    };
    field("why it returned", rep.reason.as_slice());
    field("limitation", &rep.limitations);
    field("corrected assumption", &rep.corrected_assumptions);
    field("partial effect", &rep.partial_effects);
    if !rep.evidence.is_empty() {
        s.push_str(&format!("  evidence: {}\n", rep.evidence.join(", ")));
    }
    for w in &rep.withdrawn {
        s.push_str(&format!(
            "  withdrawn: {} ({})\n",
            w.refs.join(", "),
            w.reason.trim()
        ));
    }
}

/// A handoff in the `detail` view: what it carries and where its transfer is.
fn handoff_line(h: &super::state::Handoff) -> String {
    format!(
        "handoff {}: {}{} — {}{}\n",
        h.id,
        match h.kind {
            super::state::HandoffKind::Contract => "contract",
            super::state::HandoffKind::Report => "report",
        },
        h.revision
            .map(|r| format!(" revision {r}"))
            .unwrap_or_default(),
        match h.state {
            HandoffState::Pending => "pending",
            HandoffState::Configured => "delivered",
            HandoffState::Blocked => "blocked",
            HandoffState::Superseded => "superseded",
        },
        h.reason
            .as_deref()
            .map(|r| format!(": {r}"))
            .unwrap_or_default()
    )
}

/// The control a `/profile` word asks for.
pub fn parse_profile(word: &str) -> Result<Control, String> {
    match word.trim() {
        "coordinator" => Ok(Control::Manual {
            profile: Profile::Coordinator,
        }),
        "executor" => Ok(Control::Manual {
            profile: Profile::Executor,
        }),
        "auto" | "automatic" => Ok(Control::Automatic),
        "off" | "inactive" => Ok(Control::Inactive),
        other => Err(format!(
            "unknown profile `{other}`: use coordinator, executor or auto (or off)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::super::state::ActBounded;

    #[test]
    fn the_runtime_state_names_the_projection_mode_and_an_open_scope() {
        let mut st = RoutingState::default();
        st.control = Control::Automatic;
        let block = runtime_state(&st, Profile::Coordinator, true);
        assert!(block.contains("projection: on\n"), "{block}");
        assert!(!block.contains("act_bounded"), "{block}");
        st.act_bounded = Some(ActBounded {
            scope: "list the folder\nonly it".into(),
            expected_result: "a listing".into(),
            authority: "asked".into(),
            stop_condition: "after one listing".into(),
            inseparable: "x".into(),
            delegation_loss: "y".into(),
        });
        let block = runtime_state(&st, Profile::Coordinator, false);
        assert!(block.contains("projection: off"), "{block}");
        assert!(
            block.contains("act_bounded: open — list the folder; stop when after one listing\n"),
            "{block}"
        );
        st.control = Control::Inactive;
        let block = runtime_state(&st, Profile::Coordinator, true);
        assert!(block.contains("routing does not apply"), "{block}");
    }

    use super::*;

    #[test]
    fn references_and_digests() {
        let mut t = EvidenceTable::default();
        let a = t.add_tool("read a.rs".into(), "fn a() {}", Some("a1".into()), false);
        let m = t.add_message("the cause is X", Some("a1".into()));
        assert_eq!((a.as_str(), m.as_str()), ("ctx:t1", "ctx:m1"));
        assert_eq!(
            sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(t.known("ctx:t1") && !t.known("ctx:t2"));
        let body = format!("output{}", ref_line("ctx:t1", None));
        assert_eq!(
            strip_ref_line(&format!("o{}", ref_line("ctx:t2", Some("ctx:m1")))),
            "o"
        );
        assert_eq!(strip_ref_line(&body), "output");
        assert_eq!(strip_ref_line("no ref here"), "no ref here");
        let listing = t
            .inspect("assignment", &["ctx:m1".into()], Some("a1"), 0, 50)
            .unwrap();
        assert!(listing.contains("ctx:t1 read a.rs (a1)"), "{listing}");
        assert!(listing.contains("selected"));
        assert!(t.inspect("everything", &[], None, 0, 50).is_err());
    }
}
