//! `baton task logs ID [--follow] [--json]`: a background task's recorded events as lines, and
//! with `--follow` the new ones as they are recorded, until the task ends.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use baton_exec::background::{self, Phase, TaskEvent};
use baton_exec::delegate::{EntryEvent, EntryStatus};
use baton_exec::Activity;

use crate::exit::Exit;
use crate::project::{project_context, state_dir};

/// How often `--follow` looks for new events.
const FOLLOW_POLL: Duration = Duration::from_millis(100);

pub fn logs(cwd: Option<PathBuf>, id: &str, follow: bool, json_mode: bool) -> Result<Exit> {
    let ctx = project_context(cwd)?;
    let store = state_dir(&ctx);
    let mut shown = 0;
    let mut names: Vec<String> = Vec::new();
    loop {
        // The phase is read before the events: once it is final, the events read after it hold
        // every record up to the end (read after the events, the last records could be missed).
        let phase = if follow {
            Some(background::load(&store, id)?.phase())
        } else {
            None
        };
        let events = background::events(&store, id)?;
        for ev in events.iter().skip(shown) {
            if json_mode {
                if let Ok(line) = serde_json::to_string(ev) {
                    outln!("{line}");
                }
            } else if let Some(line) = describe(ev, &mut names) {
                outln!("{}", baton_text::sanitize_line(&line));
            }
        }
        shown = shown.max(events.len());
        let Some(phase) = phase else {
            return Ok(Exit::Ok);
        };
        match phase {
            Phase::Starting | Phase::Running => std::thread::sleep(FOLLOW_POLL),
            Phase::Done => return Ok(Exit::Ok),
            Phase::Failed => return Ok(Exit::Failed),
            Phase::Interrupted => {
                errln!("baton: background task {id} was interrupted: its supervisor ended without finishing");
                return Ok(Exit::Failed);
            }
        }
    }
}

/// The lines `baton task logs ID` prints for these events (terminal-safe).
pub fn lines(events: &[TaskEvent]) -> Vec<String> {
    let mut names = Vec::new();
    events
        .iter()
        .filter_map(|ev| describe(ev, &mut names))
        .map(|line| baton_text::sanitize_line(&line).into_owned())
        .collect()
}

/// One event as a line, or `None` for events too fine-grained to show (thinking, token counts).
/// `names` holds the entries' names, learnt from `task.created`.
fn describe(ev: &TaskEvent, names: &mut Vec<String>) -> Option<String> {
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
            Activity::Thinking | Activity::Tokens { .. } => return None,
        },
        EntryEvent::Finished { status } => format!("[{n}] {}", word(*status)),
    })
}
