//! `baton sessions`: the saved agent sessions of the project, oldest first.

use std::path::PathBuf;

use crate::documents::{SessionDocument, SessionsDocument};
use anyhow::Result;
use baton_agent::session::{list, SessionInfo};
use baton_app::exit::Exit;
use baton_app::project::{project_context, state_dir};

/// Characters of the task shown in the text listing.
const TASK_WIDTH: usize = 60;

/// `completed`, `partial (turn_limit)`, `failed (model_error)`, or `unfinished` when the
/// transcript does not record an end after its last message (killed, or still running).
fn outcome_text(info: &SessionInfo) -> String {
    match info.ended {
        None => "unfinished".into(),
        Some((outcome, None)) => outcome.as_str().into(),
        Some((outcome, Some(reason))) => format!("{} ({})", outcome.as_str(), reason.as_str()),
    }
}

fn first_line(text: &str) -> &str {
    text.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
}

pub fn run(cwd: Option<PathBuf>, json_mode: bool) -> Result<Exit> {
    let ctx = project_context(cwd)?;
    let state = state_dir(&ctx);
    let (infos, bad) = list(&state);
    for (id, e) in &bad {
        errln!("baton: session {id} cannot be read: {e}");
    }
    if json_mode {
        let sessions: Vec<SessionDocument> = infos
            .iter()
            .map(|i| SessionDocument {
                id: i.header.session_id.clone(),
                created: i.header.created.clone(),
                role: i.header.role.clone(),
                route: i.header.model.clone(),
                cwd: i.header.cwd.clone(),
                outcome: i
                    .ended
                    .map_or("unfinished", |(o, _)| o.as_str())
                    .to_string(),
                reason: i.ended.and_then(|(_, r)| r).map(|r| r.as_str().to_string()),
                cost_usd: i.cost_usd,
                task: first_line(&i.task).to_string(),
            })
            .collect();
        crate::documents::print(&SessionsDocument { sessions });
        return Ok(Exit::Ok);
    }
    if infos.is_empty() {
        outln!(
            "no saved sessions in {}; `baton agent TASK` starts one",
            state.sessions().display()
        );
        return Ok(Exit::Ok);
    }
    // One row per session under a header, each column as wide as its widest cell.
    let rows: Vec<[String; 7]> = infos
        .iter()
        .map(|i| {
            // The task is the user's or a parent agent's text: one line, terminal-safe.
            let task = baton_text::sanitize_line(first_line(&i.task));
            let mut shown: String = task.chars().take(TASK_WIDTH).collect();
            if task.chars().count() > TASK_WIDTH {
                shown.push('…');
            }
            [
                i.header.session_id.clone(),
                crate::term::short_time(&i.header.created),
                baton_text::sanitize_line(&i.header.role).into_owned(),
                baton_text::sanitize_line(&i.header.model).into_owned(),
                outcome_text(i),
                i.cost_usd
                    .map_or_else(|| "-".to_string(), |c| format!("${c:.4}")),
                shown,
            ]
        })
        .collect();
    let header = ["ID", "CREATED", "ROLE", "ROUTE", "OUTCOME", "COST", "TASK"].map(String::from);
    let mut widths = [0usize; 7];
    for row in std::iter::once(&header).chain(&rows) {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for row in std::iter::once(&header).chain(&rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .enumerate()
            .map(|(k, (c, w))| {
                if k == 6 {
                    c.clone()
                } else {
                    format!("{c:<w$}")
                }
            })
            .collect();
        outln!("{}", cells.join("  ").trim_end());
    }
    errln!(
        "baton: continue one with `baton tui --resume ID` (a unique prefix of the id, its last 8 characters, or `last`), or pick one with `baton tui --resume`"
    );
    Ok(Exit::Ok)
}
