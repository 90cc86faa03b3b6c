//! `baton status` and `baton log WF`: what the project's workflows are doing, read from their
//! durable records (`.baton/state/workflows/`). Both only read: they never take a workflow's lock,
//! so they work while `baton run` drives one, and they say so when a live process holds it.
//!
//! Records are read defensively: every artifact key and event field may be missing, and an
//! unknown event kind or an unreadable line is shown as such rather than stopping the listing.
//! `status` checks each record as `baton resume` would ([`WorkflowStore::load`]): a damaged one
//! (a line that does not read, NUL bytes, a snapshot ahead of its log) is listed as `damaged`
//! with the file, the line, what is lost and `baton repair ID`, never with the state its
//! snapshot claims.
//!
//! Exit codes: 0 shown (no workflows included); 1 a record cannot be read at all (`log`);
//! 2 no workflow matches `WF`, or a prefix matches several.

use std::path::{Path, PathBuf};

use anyhow::Result;
use baton_app::exit::Exit;
use baton_app::project::{project_context, state_dir};
use baton_app::workflow::{
    newest_first, one_line, resolve, status_json, str_at, summarize, time_key, Summary,
    REQUEST_WIDTH,
};
use baton_workflow::store::WorkflowStore;
use clap::Args;
use serde_json::Value;

/// Characters of an event's reason shown in a log line.
const REASON_WIDTH: usize = 120;

#[derive(Args, Debug)]
pub struct StatusArgs {
    /// With --engine temporal: the workflow to show (a query of its Temporal workflow).
    id: Option<String>,
    /// Print one JSON document instead of text.
    #[arg(long)]
    json: bool,
    /// `temporal`: show a workflow that runs on Temporal (default: `engine.kind`, else local).
    #[arg(long, value_name = "E")]
    engine: Option<baton_protocol::config::EngineKind>,
    /// Directory inside the project (default: the current one).
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// Print only what waits for you — a checkpoint, a failed workflow that takes guidance, a
    /// blocked Flow, a failed background task — one line each with the command that answers
    /// it; nothing when nothing waits (a session-start hook's output).
    #[arg(long, conflicts_with_all = ["id", "json", "engine"])]
    needs: bool,
    /// With --needs: print the lines as a session-start hook's JSON answer
    /// (`{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": …}}`, `{}`
    /// when nothing waits), for hosts that read only JSON from a hook (Gemini CLI).
    #[arg(long, requires = "needs")]
    hook_json: bool,
}

#[derive(Args, Debug)]
pub struct LogArgs {
    /// The workflow: its id, a unique prefix of it, or `last` for the newest.
    wf: String,
    /// Print the events as JSON lines, as they are recorded.
    #[arg(long)]
    json: bool,
    /// `temporal`: the record of a workflow that runs on Temporal (a query).
    #[arg(long, value_name = "E")]
    engine: Option<baton_protocol::config::EngineKind>,
    /// With --engine temporal: also save the workflow's Temporal history to FILE (JSON), for
    /// `baton worker-node --check-history`.
    #[arg(long, value_name = "FILE")]
    history: Option<PathBuf>,
    /// Directory inside the project (default: the current one).
    #[arg(long)]
    cwd: Option<PathBuf>,
}

/// One raw line of an event log: its 1-based number and the event, or why it cannot be read.
type RawEvent = (usize, Result<Value, String>);

/// The events of a log as JSON values, in order. A last line without its newline (a write cut
/// short, or one under way) is left out; a line that is not a JSON object is reported as such.
fn read_events(path: &Path) -> std::io::Result<Vec<RawEvent>> {
    let bytes = std::fs::read(path)?;
    let complete = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    Ok(bytes[..complete]
        .split(|b| *b == b'\n')
        .enumerate()
        .filter(|(_, l)| !l.iter().all(u8::is_ascii_whitespace))
        .map(|(n, l)| {
            let parsed = match serde_json::from_slice::<Value>(l) {
                Ok(v) if v.is_object() => Ok(v),
                Ok(_) => Err("not a JSON object".to_string()),
                Err(e) => Err(e.to_string()),
            };
            (n + 1, parsed)
        })
        .collect())
}

/// `1200 in / 300 out tokens, $0.0042`; `unpriced` when tokens were spent at no known price.
fn spent_text(spent: Option<&Value>) -> String {
    let Some(s) = spent.filter(|s| s.is_object()) else {
        return "nothing recorded".into();
    };
    let tokens = |k: &str| s.get(k).and_then(Value::as_u64).unwrap_or(0);
    let (input, output) = (tokens("input_tokens"), tokens("output_tokens"));
    let mut text = format!("{input} in / {output} out tokens");
    let unpriced = s.get("unpriced_dispatches").and_then(Value::as_u64);
    match s.get("cost_usd").and_then(Value::as_f64) {
        // The runner writes 0 when no dispatch had a price: that is unknown, not free.
        Some(c) if c == 0.0 && unpriced.is_some_and(|n| n > 0) => {
            text.push_str(", unpriced");
            return text;
        }
        Some(c) => text.push_str(&format!(", ${c:.4}")),
        None if input + output > 0 => text.push_str(", unpriced"),
        None => {}
    }
    match unpriced {
        Some(n) if n > 0 => text.push_str(&format!(" ({n} unpriced dispatch(es) not counted)")),
        _ => {}
    }
    text
}

fn print_summary(s: &Summary) {
    let a = &s.artifact;
    let field = |k: &str, w: usize| str_at(a, k).map_or("-".to_string(), |v| one_line(v, w));
    outln!(
        "{}  {}  {}  phase {}  updated {}",
        s.id,
        field("workflow_type", 20),
        crate::term::marked(&s.state_text(), crate::term::stdout_color()),
        field("phase_cursor", 40),
        str_at(a, "updated_at").map_or("-".to_string(), whole_seconds)
    );
    outln!("  request:   {}", field("user_request", REQUEST_WIDTH));
    outln!("  waits for: {}", s.waiting_for());
    outln!("  spent:     {}", spent_text(a.get("spent")));
}

pub fn status(args: StatusArgs) -> Result<Exit> {
    let ctx = project_context(args.cwd)?;
    if args.needs {
        let mut lines: Vec<String> = needs_you(&ctx)?
            .iter()
            .map(|l| baton_text::sanitize_line(l).into_owned())
            .collect();
        lines.extend(routing_rules(&ctx.config.config.routing));
        if args.hook_json {
            let answer = if lines.is_empty() {
                serde_json::json!({})
            } else {
                serde_json::json!({"hookSpecificOutput": {
                    "hookEventName": "SessionStart",
                    "additionalContext": lines.join("\n"),
                }})
            };
            outln!("{answer}");
        } else {
            for line in lines {
                outln!("{line}");
            }
        }
        return Ok(Exit::Ok);
    }
    // `engine.kind = "temporal"` shows one workflow on Temporal; the listing stays the project's.
    if (args.engine.is_some() || args.id.is_some())
        && crate::temporal_cmd::engine_kind(args.engine, &ctx.config.config)
            == baton_protocol::config::EngineKind::Temporal
    {
        return crate::temporal_cmd::status(&ctx, args.id.as_deref(), args.json);
    }
    if let Some(id) = &args.id {
        anyhow::bail!(
            "`baton status` lists every workflow of the project; for one, `baton log {id}` (or --engine temporal for one on Temporal)"
        );
    }
    if args.json {
        let doc = status_json(&ctx, None).map_err(anyhow::Error::msg)?;
        crate::documents::print(&doc);
        return Ok(Exit::Ok);
    }
    let state = state_dir(&ctx);
    let store = WorkflowStore::new(state.clone());
    let ids = newest_first(&store);
    let rows: Vec<(String, Result<Summary, String>)> = ids
        .iter()
        .map(|id| (id.clone(), summarize(&store, id)))
        .collect();
    if rows.is_empty() {
        outln!(
            "no workflows in {}; `baton run \"request\"` starts one",
            state.workflows().display()
        );
        return Ok(Exit::Ok);
    }
    for (i, (id, r)) in rows.iter().enumerate() {
        if i > 0 {
            outln!();
        }
        match r {
            Ok(s) => print_summary(s),
            Err(e) => outln!("{id}  {}", baton_text::sanitize_line(e)),
        }
    }
    Ok(Exit::Ok)
}

/// The Coordinator/Executor split for a host session (seed 000's session-start adapters), when
/// `[routing]` names the Executor: the session coordinates, and bounded execution goes to
/// baton's children on the Executor's route.
fn routing_rules(routing: &baton_protocol::config::RoutingConfig) -> Option<String> {
    let executor = routing.executor.as_deref()?.trim();
    if executor.is_empty() {
        return None;
    }
    let route = match executor.parse::<baton_protocol::route::ModelClass>().ok() {
        Some(class) => format!("`model_class` \"{}\"", class.as_str()),
        None => format!("`model` \"{executor}\""),
    };
    Some(format!(
        "baton routing is on here ([routing] executor = {executor}): this session is the Coordinator — it plans, decides and judges; hand each bounded execution step (edits, commands, searches) to the Executor with baton's `delegate_task` (role `implementer` for changes, `scout` for reading, {route}, a self-contained task), and accept a step only on the evidence it returns."
    ))
}

/// `baton status --needs`: what waits for the user across the project's logs, one line each
/// with the command that answers it, from the one projection every view reads.
fn needs_you(ctx: &baton_app::project::ProjectContext) -> Result<Vec<String>> {
    use baton_events::projection::{Kind, State};
    let docs = baton_events::projection::now(state_dir(ctx), |_| {}).map_err(anyhow::Error::msg)?;
    let mut out = Vec::new();
    for d in &docs {
        let id = &d.id;
        let line = match (d.kind, d.state, &d.workflow) {
            (Kind::Workflow, State::NeedsInput, Some(w)) => match &w.checkpoint {
                Some(c) => Some(format!(
                    "workflow {id} waits at {}: {} (options: {}) — baton resume {id} --answer \"…\"",
                    c.gate,
                    c.question,
                    c.options.join(", ")
                )),
                None => Some(format!(
                    "workflow {id} waits ({}): {} — baton resume {id}",
                    w.waits.as_deref().unwrap_or("stopped"),
                    w.note.as_deref().unwrap_or("")
                )),
            },
            (Kind::Workflow, _, Some(w)) if w.run_state.as_deref() == Some("failed") => Some(format!(
                "workflow {id} failed: {} — baton resume {id} --answer \"<your guidance>\" runs its failed agents again (or --answer abort)",
                w.note.as_deref().unwrap_or("see baton log")
            )),
            (Kind::Flow, State::NeedsInput, _) => Some(format!(
                "flow {id} is blocked: {} — baton flow continue {id} --guidance \"…\" (or baton flow abandon {id})",
                d.detail
            )),
            (Kind::Task, State::Failed, _) => Some(format!(
                "task {id} failed: {} — baton task logs {id}",
                d.reason.as_deref().unwrap_or(&d.detail)
            )),
            _ => None,
        };
        out.extend(line);
    }
    Ok(out)
}

/// An RFC 3339 time without its fraction of a second (`2026-12-03T13:45:07Z`).
fn whole_seconds(ts: &str) -> String {
    let secs = time_key(ts).0;
    if secs.len() == 19 && ts.ends_with('Z') && (ts.len() == 20 || ts.get(19..20) == Some(".")) {
        format!("{secs}Z")
    } else {
        one_line(ts, 40)
    }
}

/// `HH:MM:SS` of an RFC 3339 time (the whole text when it is not one).
fn clock(ts: &str) -> String {
    match ts.get(11..19) {
        Some(t) if ts.as_bytes().get(10) == Some(&b'T') => t.to_string(),
        _ => one_line(ts, 20),
    }
}

/// An `agent_completed` event's duration, tokens and cost: `62.0s  1200 in / 300 out tokens  $0.0042`.
fn completion_text(ev: &Value) -> Vec<String> {
    let mut parts = Vec::new();
    if let Some(d) = ev.get("duration_seconds").and_then(Value::as_f64) {
        parts.push(format!("{d:.1}s"));
    }
    let details = ev.get("details").unwrap_or(&Value::Null);
    let usage = details.get("usage").unwrap_or(&Value::Null);
    let tokens = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
    let (input, output) = (tokens("input_tokens"), tokens("output_tokens"));
    if usage.is_object() {
        parts.push(format!("{input} in / {output} out tokens"));
    }
    match details.get("cost_usd").and_then(Value::as_f64) {
        Some(c) => parts.push(format!("${c:.4}")),
        None if input + output > 0 => parts.push("unpriced".into()),
        None => {}
    }
    if let Some(code) = details.get("exit_code").and_then(Value::as_i64) {
        if code != 0 {
            parts.push(format!("exit {code}"));
        }
    }
    // The agent's own session: `baton agent --resume ID` or its transcript.
    if let Some(s) = details.get("session").and_then(Value::as_str) {
        parts.push(format!("session {}", one_line(s, 64)));
    }
    parts
}

/// One readable line of the timeline.
fn event_line(ev: &Value) -> String {
    let mut parts = vec![
        clock(str_at(ev, "ts").unwrap_or("?")),
        format!("{:<24}", one_line(str_at(ev, "event").unwrap_or("?"), 40)),
    ];
    for (key, label) in [
        ("phase", "phase"),
        ("task_id", "task"),
        ("agent", "agent"),
        ("decision", "decision"),
    ] {
        if let Some(v) = str_at(ev, key) {
            parts.push(format!("{label}={}", one_line(v, 40)));
        }
    }
    let details = ev.get("details").unwrap_or(&Value::Null);
    if str_at(ev, "agent").is_none() {
        if let Some(role) = str_at(details, "role") {
            parts.push(format!("agent={}", one_line(role, 40)));
        }
    }
    if let Some(route) = str_at(details, "route") {
        parts.push(format!("route={}", one_line(route, 60)));
    }
    if let Some(answer) = details.get("answer").filter(|a| !a.is_null()) {
        let text = answer.as_str().map_or(answer.to_string(), str::to_string);
        parts.push(format!("answer=\"{}\"", one_line(&text, 60)));
    }
    if str_at(ev, "event") == Some("agent_completed") {
        parts.extend(completion_text(ev));
    }
    if let Some(r) = str_at(ev, "reason") {
        parts.push(format!("\"{}\"", one_line(r, REASON_WIDTH)));
    }
    parts.join("  ").trim_end().to_string()
}

pub fn log(args: LogArgs) -> Result<Exit> {
    let ctx = project_context(args.cwd)?;
    if args.engine == Some(baton_protocol::config::EngineKind::Temporal) {
        return crate::temporal_cmd::log(&ctx, &args.wf, args.json, args.history.as_deref());
    }
    if args.history.is_some() {
        anyhow::bail!("--history saves a Temporal history: give --engine temporal");
    }
    let store = WorkflowStore::new(state_dir(&ctx));
    let id = match resolve(&store, &args.wf) {
        Ok(id) => id,
        Err(e) => {
            errln!("baton: {e}");
            return Ok(Exit::Refused);
        }
    };
    let path = store.events_path(&id)?;
    let events = match read_events(&path) {
        Ok(e) => e,
        Err(e) => {
            errln!("baton: workflow {id}: cannot read {}: {e}", path.display());
            return Ok(Exit::Failed);
        }
    };
    if !args.json {
        let start = events
            .iter()
            .find_map(|(_, e)| e.as_ref().ok())
            .and_then(|e| e.get("delta"));
        let kind = start
            .and_then(|d| str_at(d, "workflow_type"))
            .unwrap_or("?");
        let request = start
            .and_then(|d| str_at(d, "user_request"))
            .map_or(String::new(), |r| {
                format!(": {}", one_line(r, REQUEST_WIDTH))
            });
        outln!("workflow {id} ({}){request}", one_line(kind, 20));
    }
    for (n, ev) in &events {
        match (ev, args.json) {
            (Ok(v), true) => outln!("{v}"),
            (Ok(v), false) => outln!("{}", event_line(v)),
            (Err(e), _) => errln!(
                "baton: {} line {n} cannot be read: {}",
                path.display(),
                baton_text::sanitize_line(e)
            ),
        }
    }
    Ok(Exit::Ok)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use baton_app::workflow::id_stamp;
    use serde_json::json;

    #[test]
    fn times_with_and_without_fractions_sort_in_order() {
        assert!(time_key("2026-12-03T13:45:07Z") < time_key("2026-12-03T13:45:07.5Z"));
        assert!(time_key("2026-12-03T13:45:07.5Z") < time_key("2026-12-03T13:45:07.51Z"));
        assert_eq!(
            id_stamp("wf-20261203T134507Z-1a2b3c4d"),
            "2026-12-03T13:45:07"
        );
        assert_eq!(clock("2026-12-03T13:45:07.123Z"), "13:45:07");
        assert_eq!(
            whole_seconds("2026-12-03T13:45:07.123Z"),
            "2026-12-03T13:45:07Z"
        );
        assert_eq!(
            whole_seconds("2026-12-03T13:45:07Z"),
            "2026-12-03T13:45:07Z"
        );
        assert_eq!(whole_seconds("yesterday"), "yesterday");
    }

    #[test]
    fn spending_reads_unpriced_when_tokens_have_no_cost() {
        assert_eq!(
            spent_text(Some(
                &json!({"input_tokens": 10, "output_tokens": 5, "cost_usd": null})
            )),
            "10 in / 5 out tokens, unpriced"
        );
        assert_eq!(
            spent_text(Some(
                &json!({"input_tokens": 10, "cost_usd": 0.5, "unpriced_dispatches": 1})
            )),
            "10 in / 0 out tokens, $0.5000 (1 unpriced dispatch(es) not counted)"
        );
        assert_eq!(
            spent_text(Some(
                &json!({"input_tokens": 10, "output_tokens": 5, "cost_usd": 0.0, "unpriced_dispatches": 2})
            )),
            "10 in / 5 out tokens, unpriced"
        );
        assert_eq!(spent_text(None), "nothing recorded");
    }
}
