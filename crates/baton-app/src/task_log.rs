//! A background task's events as lines of text (`baton task logs`, MCP task resources), a session's
//! transcript as lines to read (the front ends' viewers), and one
//! delegation entry's event as a line (also the progress of `delegate_task` over MCP).

use baton_exec::background::TaskEvent;
use baton_exec::delegate::{EntryEvent, EntryStatus};
use baton_exec::Activity;

/// A background task's log as the lines `baton task logs ID` prints (terminal-safe).
pub fn read(state: &baton_state::StateDir, id: &str) -> Result<Vec<String>, String> {
    baton_exec::background::events(state, id)
        .map(|events| lines(&events))
        .map_err(|e| format!("task {id}: {e}"))
}

/// One entry of a session's transcript as the viewers show it (the web page's transcript view
/// takes these as JSON; [`transcript`] makes lines of them).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TranscriptEntry {
    /// In a routed session, the participant the entry belongs to (`coordinator`, `executor`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seat: Option<String>,
    pub kind: EntryKind,
    /// The message's text, the tool's output, or the note.
    pub text: String,
    /// A tool call's tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A tool call's arguments (JSON text), whole.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
    /// A tool result that is an error.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub error: bool,
}

/// What a [`TranscriptEntry`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// The header: session id, role and model.
    Session,
    User,
    Assistant,
    ToolCall,
    ToolResult,
    /// An ended run, a route change, a compaction.
    Note,
}

/// A session's transcript, entry by entry: each message, each tool call with its arguments and
/// each result. Reasoning is left out.
pub fn transcript_entries(
    state: &baton_state::StateDir,
    id: &str,
) -> Result<Vec<TranscriptEntry>, String> {
    use baton_agent::session::Line;
    use baton_protocol::{AssistantPart, Message};
    baton_state::check_id(baton_state::IdKind::Record, id).map_err(|e| e.to_string())?;
    let path = state.sessions().join(format!("{id}.jsonl"));
    if !path.exists() {
        return Err(format!(
            "session {id}: no transcript in {} (a child that ran in a worktree kept it there, and it went with the worktree)",
            state.sessions().display()
        ));
    }
    let text =
        baton_text::input::read_input(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let entry = |seat: &Option<String>, kind, text: String| TranscriptEntry {
        seat: seat.clone(),
        kind,
        text,
        name: None,
        arguments: None,
        error: false,
    };
    let mut out = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line: Line = serde_json::from_str(raw)
            .map_err(|e| format!("{} line {}: {e}", path.display(), n + 1))?;
        match line {
            Line::Session(h) => out.push(entry(
                &None,
                EntryKind::Session,
                format!("session {} · role {} · {}", h.session_id, h.role, h.model),
            )),
            Line::Message { message, seat } => match message {
                Message::User { text } => out.push(entry(&seat, EntryKind::User, text)),
                Message::Assistant { parts } => {
                    for p in parts {
                        match p {
                            AssistantPart::Text { text } => {
                                out.push(entry(&seat, EntryKind::Assistant, text))
                            }
                            AssistantPart::Reasoning { .. } => {}
                            AssistantPart::ToolCall {
                                name, arguments, ..
                            } => out.push(TranscriptEntry {
                                name: Some(name),
                                arguments: Some(arguments),
                                ..entry(&seat, EntryKind::ToolCall, String::new())
                            }),
                        }
                    }
                }
                Message::Tool {
                    output, is_error, ..
                } => out.push(TranscriptEntry {
                    error: is_error,
                    ..entry(&seat, EntryKind::ToolResult, output)
                }),
            },
            Line::Ended { outcome, .. } => {
                out.push(entry(&None, EntryKind::Note, format!("ended {outcome}")))
            }
            Line::Route { model } => {
                out.push(entry(&None, EntryKind::Note, format!("now on {model}")))
            }
            Line::Compacted { seat, .. } => {
                out.push(entry(&seat, EntryKind::Note, "compacted".into()))
            }
            Line::Checkpoint(c) => out.push(entry(
                &None,
                EntryKind::Note,
                format!("checkpoint {}: {} file(s) changed", c.checkpoint, c.files),
            )),
            Line::Undone { checkpoint } => out.push(entry(
                &None,
                EntryKind::Note,
                format!("undone to before checkpoint {checkpoint}"),
            )),
            Line::Withdrawn { seat, count } => out.push(entry(
                &seat,
                EntryKind::Note,
                format!(
                    "the last {count} message(s) withdrawn: a turn its process was lost in, given up"
                ),
            )),
        }
    }
    Ok(out)
}

/// A session's transcript as lines to read: each message, a tool call with its arguments and the
/// start of its result.
pub fn transcript(state: &baton_state::StateDir, id: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for e in transcript_entries(state, id)? {
        let who = e
            .seat
            .as_ref()
            .map(|s| format!("[{s}] "))
            .unwrap_or_default();
        match e.kind {
            EntryKind::Session => out.push(e.text),
            EntryKind::User => {
                out.push(String::new());
                out.extend(e.text.lines().map(|l| format!("{who}› {l}")));
            }
            EntryKind::Assistant => out.extend(e.text.lines().map(|l| format!("{who}{l}"))),
            EntryKind::ToolCall => {
                let args = baton_text::truncate(
                    e.arguments.as_deref().unwrap_or(""),
                    200,
                    baton_text::Keep::Head,
                );
                out.push(format!("{who}⚙ {} {args}", e.name.unwrap_or_default()));
            }
            EntryKind::ToolResult => {
                let mark = if e.error { "✗" } else { "→" };
                for l in e.text.lines().take(6) {
                    out.push(format!("{who}  {mark} {l}"));
                }
            }
            EntryKind::Note => out.push(format!("— {}", e.text)),
        }
    }
    Ok(out)
}

/// The exact review packet (a patch) a Flow's reviewer was given for `unit`: the last one its log
/// names. Only a file under the project's state folder is read.
pub fn review_packet(
    state: &baton_state::StateDir,
    flow: &str,
    unit: &str,
) -> Result<String, String> {
    let records = baton_flow::store::FlowStore::new(state.clone())
        .read_records(flow)
        .map_err(|e| format!("flow {flow}: {e}"))?;
    let path = records
        .iter()
        .rev()
        .find_map(|r| match &r.event {
            baton_flow::FlowEvent::Reviewing {
                unit: u,
                patch_path,
                ..
            } if u == unit => Some(patch_path.clone()),
            _ => None,
        })
        .ok_or_else(|| format!("flow {flow}: unit {unit} was not given to a reviewer"))?;
    let real = |p: &std::path::Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    if !real(&path).starts_with(real(state.root())) {
        return Err(format!(
            "{}: not a file of this project's records",
            path.display()
        ));
    }
    baton_text::input::read_input(&path).map_err(|e| format!("{}: {e}", path.display()))
}

/// A workflow's artifact as it stood after event `seq` (its whole record when `None`), and how
/// many events its log holds: the record at any point of its history.
pub fn workflow_artifact(
    state: &baton_state::StateDir,
    id: &str,
    seq: Option<u64>,
) -> Result<(serde_json::Value, u64), String> {
    let events = baton_workflow::store::WorkflowStore::new(state.clone())
        .events(id)
        .map_err(|e| format!("workflow {id}: {e}"))?;
    let total = events.len() as u64;
    let upto = match seq {
        Some(0) => return Err(format!("workflow {id}: seq starts at 1")),
        Some(n) if n > total => {
            return Err(format!("workflow {id}: it has {total} events, not {n}"))
        }
        Some(n) => n as usize,
        None => events.len(),
    };
    Ok((baton_workflow::store::fold(&events[..upto]), total))
}

/// One dispatch of a workflow as the dashboard shows it: the agent's answer and its contract,
/// read with the workflow runner's own parser (`baton_workflow::contract::parse`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Dispatch {
    pub task: String,
    /// The role the task ran as.
    pub role: String,
    /// The agent's final message (bounded by the output cap).
    pub text: String,
    /// The child failed before it could answer.
    pub error: Option<String>,
    /// The contract, when the answer has one the parser reads.
    pub contract: Option<ContractDoc>,
    /// Why the answer's contract did not read (and its fix), when it did not.
    pub problem: Option<String>,
}

/// A contract as the parser read it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ContractDoc {
    /// `pass`, `soft pass`, `needs verification` or `fail`.
    pub verdict: String,
    /// Whether the workflow may move past the agent.
    pub advances: bool,
    /// Where the status was read: `envelope`, `heading` or `router_contract`.
    pub source: String,
    /// The verifier's scenario rows (empty for other roles).
    pub scenarios: Vec<ScenarioDoc>,
    /// Overrides the parser applied, one sentence each.
    pub notes: Vec<String>,
}

/// One row of a verifier's scenario table.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ScenarioDoc {
    pub name: String,
    /// `PASS` or `FAIL`; none when the row states none.
    pub status: Option<String>,
    pub command: Option<String>,
    pub exit_code: Option<i64>,
}

/// Dispatch `task` of workflow `id`: its answer in the workflow's record now, and its contract.
pub fn dispatch(state: &baton_state::StateDir, id: &str, task: &str) -> Result<Dispatch, String> {
    use baton_workflow::contract::{self, Role};
    let (artifact, _) = workflow_artifact(state, id, None)?;
    let out = artifact["run"]["outputs"]
        .get(task)
        .ok_or_else(|| format!("workflow {id}: no answer of task {task} is recorded"))?;
    let out: baton_workflow::state::TaskOutput = serde_json::from_value(out.clone())
        .map_err(|e| format!("workflow {id}: task {task}'s output: {e}"))?;
    let role = Role::from_name(&out.role);
    let parsed = role.map(|r| contract::parse(r, &out.text));
    let problem = match (&parsed, role) {
        (Some(Err(e)), _) => Some(format!("{}: {}", e.problem(), e.fix())),
        (_, None) => Some(format!("{}: not a role with a contract", out.role)),
        _ => None,
    };
    Ok(Dispatch {
        task: task.to_string(),
        role: out.role,
        text: out.text,
        error: out.error,
        contract: parsed.and_then(Result::ok).map(contract_doc),
        problem,
    })
}

fn contract_doc(c: baton_workflow::contract::Checked) -> ContractDoc {
    use baton_workflow::contract::{scenario::ScenarioStatus, Contract, Source};
    let rows = match &c.contract {
        Contract::Verify(v) => v.accounting.scenario_rows.as_slice(),
        _ => &[],
    };
    ContractDoc {
        verdict: c.outcome.verdict().name().to_string(),
        advances: c.advances(),
        source: match c.source {
            Source::Envelope => "envelope",
            Source::Heading => "heading",
            Source::RouterContract => "router_contract",
        }
        .to_string(),
        scenarios: rows
            .iter()
            .map(|s| ScenarioDoc {
                name: s.name().to_string(),
                status: s.status.map(|st| match st {
                    ScenarioStatus::Pass => "PASS".to_string(),
                    ScenarioStatus::Fail => "FAIL".to_string(),
                }),
                command: s.command.clone(),
                exit_code: s.exit_code,
            })
            .collect(),
        notes: c.notes,
    }
}

/// The lines `baton task logs ID` prints for these events (terminal-safe).
pub fn lines(events: &[TaskEvent]) -> Vec<String> {
    let mut names = Vec::new();
    let mut out = Vec::new();
    for ev in events {
        if let Some(line) = describe(ev, &mut names) {
            out.push(baton_text::sanitize_line(&line).into_owned());
            out.extend(answers(ev));
        }
    }
    out
}

/// After a task's `completed` event, each child's answer: a `[name] answer:` line, then its
/// lines indented (terminal-safe). Nothing for other events.
pub fn answers(ev: &TaskEvent) -> Vec<String> {
    let TaskEvent::Completed { report } = ev else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in report
        .entries
        .iter()
        .filter(|e| !e.output.trim().is_empty())
    {
        out.push(format!("[{}] answer:", baton_text::sanitize_line(&e.name)));
        for l in e.output.trim_end().lines() {
            out.push(format!("  {}", baton_text::sanitize_line(l)));
        }
    }
    out
}

/// One event as a line, or `None` for events too fine-grained to show (thinking, token counts).
/// `names` holds the entries' names, learnt from `task.created`.
pub fn describe(ev: &TaskEvent, names: &mut Vec<String>) -> Option<String> {
    let name = |i: usize| -> String { names.get(i).cloned().unwrap_or_else(|| format!("#{i}")) };
    Some(match ev {
        TaskEvent::Created {
            id,
            created,
            request,
            ..
        } => {
            *names = request.entries.iter().map(|e| e.name.clone()).collect();
            format!(
                "{created} {id} created: {} of {} entr{} ({})",
                request.mode.as_str(),
                request.entries.len(),
                if request.entries.len() == 1 {
                    "y"
                } else {
                    "ies"
                },
                request
                    .entries
                    .iter()
                    .map(|e| format!("{} as {}", e.name, e.role))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
        TaskEvent::Spawned { pid, .. } => format!("supervisor spawned (pid {pid})"),
        TaskEvent::Started {
            pid,
            foreground: true,
            ..
        } => format!("running in the foreground of baton mcp (pid {pid})"),
        TaskEvent::Started { pid, .. } => format!("supervisor running (pid {pid})"),
        TaskEvent::Failed { message } => format!("task failed: {message}"),
        TaskEvent::Entry { index, event } => return describe_entry(&name(*index), event),
        TaskEvent::Completed { report } => {
            let done = report
                .entries
                .iter()
                .filter(|e| e.status == EntryStatus::Done)
                .count();
            format!(
                "completed: {done} of {} entr{} done",
                report.entries.len(),
                if report.entries.len() == 1 {
                    "y"
                } else {
                    "ies"
                }
            )
        }
    })
}

fn word(s: EntryStatus) -> &'static str {
    match s {
        EntryStatus::Done => "done",
        EntryStatus::Failed => "failed",
        EntryStatus::Stopped => "stopped",
        EntryStatus::Skipped => "skipped",
    }
}

/// One event of a delegation's entry `n` as a line (the log of `baton task logs`, the progress
/// of `delegate_task` over MCP), or `None` for events too fine-grained to show.
pub fn describe_entry(n: &str, event: &EntryEvent) -> Option<String> {
    Some(match event {
        EntryEvent::Queued { role, .. } => format!("[{n}] queued ({role})"),
        EntryEvent::Launching {
            model, cwd, note, ..
        } => format!(
            "[{n}] launching {model} in {cwd}{}",
            note.as_ref().map(|t| format!(" — {t}")).unwrap_or_default()
        ),
        EntryEvent::Activity { activity } => match activity {
            Activity::Started { pid, .. } => format!("[{n}] child running (pid {pid})"),
            Activity::ToolStart { tool, path, .. } => format!(
                "[{n}] {tool}{}",
                path.as_ref().map(|p| format!(" {p}")).unwrap_or_default()
            ),
            Activity::ToolEnd { tool, is_error, .. } => {
                if *is_error {
                    format!("[{n}] {tool} failed")
                } else {
                    return None;
                }
            }
            Activity::MessageEnd { turn } => format!("[{n}] turn {turn} ended"),
            Activity::Waiting { reason } => format!("[{n}] waiting: {reason}"),
            Activity::Thinking | Activity::Tokens { .. } => return None,
        },
        EntryEvent::Finished { status, .. } => format!("[{n}] {}", word(*status)),
    })
}
