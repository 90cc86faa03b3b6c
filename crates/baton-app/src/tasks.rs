//! Background delegations (`baton task --background`, the MCP `delegate_task` with
//! `background`): starting one, one look at how it ended, and cancelling it.

use anyhow::{bail, Context, Result};
use baton_exec::background::{self, Phase};
use baton_exec::delegate::{DelegateReport, DelegateRequest};

use crate::documents::{TaskCancelDocument, TaskWaitDocument};
use crate::project::{now_rfc3339, state_dir, ProjectContext};

pub fn start_background(ctx: &ProjectContext, req: &DelegateRequest) -> Result<String> {
    // Best effort: outside git there is nothing to exclude from.
    let _ = state_dir(ctx).ensure_excluded();
    let exe = baton_process::own_program().context("cannot find the baton executable")?;
    Ok(background::start(
        &exe,
        &state_dir(ctx),
        &ctx.cwd,
        req,
        now_rfc3339(),
    )?)
}

/// How a background task ended, as `wait` reports it.
pub enum WaitEnd {
    /// It failed before running any entry: why.
    FailedBeforeRunning(String),
    /// It finished (done, failed or cancelled): its report.
    Report(DelegateReport),
}

impl WaitEnd {
    /// The document of `baton task wait --json` (and the MCP `task_wait` tool).
    pub fn document(&self, id: &str) -> TaskWaitDocument {
        match self {
            WaitEnd::FailedBeforeRunning(why) => TaskWaitDocument::Failed {
                id: id.to_string(),
                message: why.clone(),
            },
            WaitEnd::Report(report) => TaskWaitDocument::Report {
                id: id.to_string(),
                report: report.clone(),
            },
        }
    }

    pub fn ok(&self) -> bool {
        matches!(self, WaitEnd::Report(r) if r.ok())
    }
}

/// One look at a task for `wait`: `None` while it starts or runs, how it ended once it has, an
/// error if its supervisor exited without finishing it.
pub fn poll_wait(store: &baton_state::StateDir, id: &str) -> Result<Option<WaitEnd>> {
    let state = background::load(store, id)?;
    Ok(match state.phase() {
        Phase::Failed if state.report.is_none() => Some(WaitEnd::FailedBeforeRunning(
            state.failure.clone().unwrap_or_default(),
        )),
        Phase::Done | Phase::Failed | Phase::Cancelled => Some(WaitEnd::Report(
            state.report.clone().unwrap_or(DelegateReport {
                mode: state.request.mode,
                entries: Vec::new(),
            }),
        )),
        Phase::Interrupted => {
            bail!("background task {id} was interrupted: its supervisor exited without finishing (see {})", store.task_log(id)?.display())
        }
        Phase::Starting | Phase::Running => None,
    })
}

/// Stops a background task (see `baton task cancel`) and says what was done: the document of
/// `baton task cancel --json` (and the MCP `task_cancel` tool), whose `message` is the text the
/// command prints.
pub fn cancel_document(store: &baton_state::StateDir, id: &str) -> Result<TaskCancelDocument> {
    let state = background::load(store, id)?;
    let phase = state.phase();
    let (action, stopped, message) = match (phase, state.supervisor_process()) {
        // A delegation `baton mcp` runs in the foreground is part of its server: signalling that
        // process would stop the server and every call it serves.
        (Phase::Running | Phase::Starting, Some(process)) if state.foreground => (
            "none",
            0,
            format!(
                "{id} runs in the foreground of the `baton mcp` server (pid {}) that a client called: cancel the call in that client, which stops its children",
                process.pid
            ),
        ),
        (Phase::Running | Phase::Starting, Some(process)) => {
            // The recorded start time makes sure the signal goes to the supervisor, never to a
            // process that got its pid after it exited.
            if process.signal(baton_process::Signal::SIGTERM) {
                (
                    "signalled",
                    0,
                    format!("cancelling {id}; `baton task wait {id}` shows the final report"),
                )
            } else {
                (
                    "none",
                    0,
                    format!(
                        "{id}'s supervisor (pid {}) is gone; nothing to cancel",
                        process.pid
                    ),
                )
            }
        }
        (Phase::Interrupted, _) => {
            // The supervisor died; whatever of its children still runs (they are normally killed
            // by their guards with it) is stopped here, each checked by its recorded identity.
            let live = state.live_children();
            for (_, p) in &live {
                p.signal_group(baton_process::Signal::SIGKILL);
            }
            let message = if live.is_empty() {
                format!(
                    "{id} was interrupted (its supervisor ended without finishing); nothing runs"
                )
            } else {
                format!(
                    "{id} was interrupted (its supervisor ended without finishing); stopped {} child process group{}",
                    live.len(),
                    if live.len() == 1 { "" } else { "s" }
                )
            };
            let action = if live.is_empty() { "none" } else { "stopped" };
            (action, live.len(), message)
        }
        (phase, _) => (
            "none",
            0,
            format!("{id} is {}; nothing to cancel", phase.as_str()),
        ),
    };
    Ok(TaskCancelDocument {
        id: id.to_string(),
        phase: phase.as_str().to_string(),
        action: action.to_string(),
        stopped_children: stopped,
        message,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use baton_exec::background::{self, Foreground, Phase};

    use super::*;

    /// A delegation `baton mcp` runs in the foreground is recorded as a running task of the
    /// server's own process: `baton task cancel` says how to stop it and signals nothing (this
    /// test's process stands for the server: a SIGTERM would end the test run). Its report ends
    /// it as a background task's does.
    #[test]
    fn cancelling_a_foreground_task_never_signals_the_server_that_runs_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = baton_state::StateDir::at(dir.path().join("state"));
        let request = baton_exec::delegate::parse_request(
            &serde_json::json!({"role": "scout", "name": "look", "task": "look"}),
        )
        .unwrap();
        let id = background::new_task_id();
        let recorded = Foreground::begin(&store, &id, dir.path(), &request, "now".into()).unwrap();
        let state = background::load(&store, &id).unwrap();
        assert!(state.foreground);
        assert_eq!(state.phase(), Phase::Running);
        let doc = cancel_document(&store, &id).unwrap();
        assert_eq!(doc.action, "none", "{doc:?}");
        assert!(
            doc.message
                .contains("runs in the foreground of the `baton mcp` server"),
            "{doc:?}"
        );
        recorded.finish(&baton_exec::delegate::DelegateReport {
            mode: baton_exec::delegate::Mode::Single,
            entries: Vec::new(),
        });
        assert_ne!(
            background::load(&store, &id).unwrap().phase(),
            Phase::Running
        );
    }
}
