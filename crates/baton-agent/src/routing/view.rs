//! What the participants read of the routing state: the Runtime State block, the contract the
//! Executor gets, the report (with the evidence selected for it) the Coordinator gets, the
//! `inspect` answers, and the table of evidence references (`ctx:<id>`, each with the SHA-256 of
//! its body).

use sha2::{Digest, Sha256};

use super::rules::MAX_PROJECTED;
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

/// The line the host adds under each tool result the Executor sees, naming its reference.
pub fn ref_line(id: &str) -> String {
    format!("\n[ref {id}]")
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
        let mut out = format!(
            "{} reference(s), {} of at most {MAX_PROJECTED} selected:\n",
            rows.len(),
            selected.len()
        );
        for e in rows {
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
        Ok(out)
    }
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
        "projection: on (the Executor selects the evidence the Coordinator sees)\n"
    } else {
        "projection: off (the Coordinator sees the Executor's evidence unfiltered)\n"
    });
    match &state.act_bounded {
        Some(a) => s.push_str(&format!(
            "act_bounded: open — {}; stop when {}\n",
            one_line(&a.scope),
            one_line(&a.stop_condition)
        )),
        None => s.push_str("act_bounded: none open\n"),
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
    if a.status == AssignmentStatus::Outstanding {
        s.push_str("\nThe assignment is still outstanding: the user can `/resume` it, or you can `replace` it; it cannot be closed before it returns.\n");
    }
    let mut gaps: Vec<String> = Vec::new();
    if projection {
        let mut shown = 0;
        for id in &r.evidence {
            match evidence.get(id) {
                Some(e) => {
                    if shown == 0 {
                        s.push_str("\nEvidence selected for you:\n");
                    }
                    shown += 1;
                    s.push_str(&format!(
                        "\n<evidence ref=\"{}\" of=\"{}\" sha256=\"{}\">\n{}\n</evidence>\n",
                        e.id,
                        e.label,
                        e.sha256,
                        e.body.trim_end()
                    ));
                }
                None => gaps.push(format!("{id} was selected but is not available")),
            }
        }
        if shown == 0 {
            gaps.push(
                "no evidence was selected: the report's claims come without their tool results"
                    .into(),
            );
        }
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
    let unit_line = |u: &super::state::Unit| {
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
    };
    match view {
        "current" => Ok(match state.open_unit() {
            Some(u) => unit_line(u),
            None => "no unit is open\n".into(),
        }),
        "history" => {
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
            Ok(if s.is_empty() { "no units\n".into() } else { s })
        }
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
            let mut s = format!(
                "{} of unit {} — {:?}\ncontract:\n{}\n",
                a.id, a.unit, a.status, a.contract
            )
            .to_lowercase();
            for e in &a.executions {
                s.push_str(&format!(
                    "execution {}: {}\n",
                    e.id,
                    e.ended.map_or("running", end_word)
                ));
            }
            for rep in &a.reports {
                s.push_str(&format!(
                    "report revision {} ({}{}): {}\n",
                    rep.revision,
                    outcome_word(rep.outcome),
                    if rep.by_host { ", by the host" } else { "" },
                    rep.text.trim()
                ));
            }
            Ok(s)
        }
        other => Err(format!(
            "`view` is `{other}`: use current, history or detail"
        )),
    }
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
        let body = format!("output{}", ref_line("ctx:t1"));
        assert_eq!(strip_ref_line(&body), "output");
        assert_eq!(strip_ref_line("no ref here"), "no ref here");
        let listing = t
            .inspect("assignment", &["ctx:m1".into()], Some("a1"))
            .unwrap();
        assert!(listing.contains("ctx:t1 read a.rs (a1)"), "{listing}");
        assert!(listing.contains("selected"));
        assert!(t.inspect("everything", &[], None).is_err());
    }
}
