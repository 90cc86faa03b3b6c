//! Following a workflow on Temporal (`baton run`, `resume`, `status`, `log` with
//! `--engine temporal`): its status read without a worker, the record read from the remote,
//! what is printed.

use std::time::Duration;

use baton_temporal::mapping::{Status, WfState};
use baton_temporal::sdk;
use baton_workflow::run::Outcome;
use tokio_util::sync::CancellationToken;

use super::*;

/// How long a follower keeps trying to reach Temporal before it gives up.
const LOST_FOR: Duration = Duration::from_secs(60);

/// A pause between two polls; `Some` when the user stopped following meanwhile.
pub(super) async fn pause(
    id: &str,
    what: &str,
    look: &str,
    signalled: &CancellationToken,
) -> Option<Exit> {
    tokio::select! {
        _ = tokio::time::sleep(Duration::from_millis(200)) => None,
        _ = signalled.cancelled() => {
            errln!("baton: stopped following; {what} {id} goes on on Temporal: `{look} {id}`");
            Some(Exit::Interrupted)
        }
    }
}

/// The record a workflow keeps at `at` on `remote`, read through a scratch bare repository
/// (the result's commit holds no files and has no parent: nothing else is fetched). Needs no
/// worker node.
pub(super) fn record_at(root: &std::path::Path, remote: &str, at: &str) -> Result<String> {
    // A remote given as a path is the project's: relative to its root, as `git push` there
    // reads it.
    let local = root.join(remote);
    let remote = if std::path::Path::new(remote).is_relative() && local.exists() {
        local.to_string_lossy().into_owned()
    } else {
        remote.to_string()
    };
    let scratch = tempfile::tempdir()?;
    let g = baton_git::Git::new(scratch.path());
    g.run(["init", "-q", "--bare"])
        .map_err(|e| anyhow::anyhow!("cannot make a scratch repository: {e}"))?;
    baton_temporal::node::read_result(&g, Some(&remote), at)
        .map(|p| p.result.log)
        .map_err(|e| anyhow::anyhow!("the workflow's record: {e}"))
}

pub(super) fn print_status(s: &Status) {
    outln!(
        "{}  {}  {} step(s), {} event(s)",
        s.id,
        s.state,
        s.steps,
        s.events
    );
    outln!("branch {} at {}", s.branch, s.head);
    if s.nodes_from > 0 {
        // A running workflow's memo names only the node of its last step.
        for (step, node) in s.numbered_nodes() {
            outln!("step {step} ran on: {node}");
        }
    } else if !s.nodes.is_empty() {
        outln!("steps ran on: {}", s.nodes.join(", "));
    }
    if let Some(cp) = &s.checkpoint {
        outln!("question: {}", cp.question);
    }
    if let Some(b) = &s.brief {
        outln!("{}", b.trim_end());
    }
}

/// Waits for the workflow's history to gain an event (`sdk::watch`, a long poll), then takes
/// every event already there: the status is read again once per wake, not once per event. A
/// watch that failed (the server restarting) or ended is made again after a pause. `Some` when
/// the user stopped following meanwhile.
async fn wake(
    watch: &mut sdk::WorkflowHistory,
    client: &sdk::Client,
    id: &str,
    signalled: &CancellationToken,
) -> Option<Exit> {
    let look = "baton status --engine temporal";
    let woke = tokio::select! {
        woke = sdk::next_events(watch) => woke,
        _ = signalled.cancelled() => return pause(id, "workflow", look, signalled).await,
    };
    if woke {
        return None;
    }
    let stopped = pause(id, "workflow", look, signalled).await;
    *watch = sdk::watch(client, id);
    stopped
}

/// Follows the workflow until it completes, stops or waits at a checkpoint: its status read
/// again each time its history gains events (a long poll, not a timer); Ctrl-C stops following,
/// not the workflow.
pub(super) async fn wait(client: &sdk::Client, id: &str, json: bool) -> Result<Exit> {
    let cancel = CancellationToken::new();
    let signalled = crate::signals::watch_signals(cancel.clone());
    let mut shown = 0usize;
    let mut lost: Option<std::time::Instant> = None;
    let mut watch = sdk::watch(client, id);
    let status = loop {
        let s = match sdk::status(client, id).await {
            Ok(s) => s,
            // The server restarting (or a moment without the network) ends nothing: the
            // workflow is kept by Temporal. Try again for a minute, saying so once.
            Err(e) if lost.is_none_or(|t| t.elapsed() < LOST_FOR) => {
                if lost.is_none() {
                    errln!(
                        "baton: lost Temporal while following {id} ({e}); trying again for {}s",
                        LOST_FOR.as_secs()
                    );
                }
                lost.get_or_insert_with(std::time::Instant::now);
                if let Some(exit) =
                    pause(id, "workflow", "baton status --engine temporal", &signalled).await
                {
                    return Ok(exit);
                }
                continue;
            }
            Err(e) => return Err(anyhow::Error::msg(e)),
        };
        lost = None;
        if !json {
            for (step, node) in s.numbered_nodes() {
                if step > shown {
                    errln!("baton run: step {step} ran on {node}");
                }
            }
        }
        shown = shown.max(s.nodes_from + s.nodes.len());
        if !s.state.going() {
            break s;
        }
        // The status itself says when Temporal ended the workflow (failed, with its reason),
        // so the outcome is reported as any other.
        if let Some(exit) = wake(&mut watch, client, id, &signalled).await {
            return Ok(exit);
        }
    };
    let id = id.to_string();
    let brief = status.brief.clone().unwrap_or_default();
    let outcome = match status.state {
        WfState::Completed => Outcome::Completed { id, brief },
        WfState::Checkpoint => match status.checkpoint.clone() {
            Some(checkpoint) => Outcome::Checkpoint { id, checkpoint },
            None => Outcome::Failed { id, brief },
        },
        WfState::Failed => Outcome::Failed { id, brief },
        _ => Outcome::Stopped { id, brief },
    };
    Ok(crate::run_report::report_outcome(
        json,
        Ok(outcome),
        false,
        true,
    ))
}
