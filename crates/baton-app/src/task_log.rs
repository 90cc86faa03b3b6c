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

/// A session's transcript as lines to read: each message, a tool call with its arguments and the
/// start of its result.
pub fn transcript(state: &baton_state::StateDir, id: &str) -> Result<Vec<String>, String> {
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
    let mut out = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line: Line = serde_json::from_str(raw)
            .map_err(|e| format!("{} line {}: {e}", path.display(), n + 1))?;
        match line {
            Line::Session(h) => out.push(format!(
                "session {} · role {} · {}",
                h.session_id, h.role, h.model
            )),
            Line::Message { message, seat } => {
                let who = seat.map(|s| format!("[{s}] ")).unwrap_or_default();
                match message {
                    Message::User { text } => {
                        out.push(String::new());
                        out.extend(text.lines().map(|l| format!("{who}› {l}")));
                    }
                    Message::Assistant { parts } => {
                        for p in parts {
                            match p {
                                AssistantPart::Text { text } => {
                                    out.extend(text.lines().map(|l| format!("{who}{l}")))
                                }
                                AssistantPart::Reasoning { .. } => {}
                                AssistantPart::ToolCall {
                                    name, arguments, ..
                                } => {
                                    let args = baton_text::truncate(
                                        &arguments,
                                        200,
                                        baton_text::Keep::Head,
                                    );
                                    out.push(format!("{who}⚙ {name} {args}"));
                                }
                            }
                        }
                    }
                    Message::Tool {
                        output, is_error, ..
                    } => {
                        let mark = if is_error { "✗" } else { "→" };
                        for l in output.lines().take(6) {
                            out.push(format!("{who}  {mark} {l}"));
                        }
                    }
                }
            }
            Line::Ended { outcome, .. } => out.push(format!("— ended {outcome}")),
            Line::Route { model } => out.push(format!("— now on {model}")),
            Line::Compacted { .. } => out.push("— compacted".into()),
        }
    }
    Ok(out)
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
