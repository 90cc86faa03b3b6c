//! What a piece of work changed in the project, as `git diff --stat --patch` text: a Flow unit's
//! commits, a session's prompts (its checkpoints), a workflow's change so far. The dashboard's
//! changes views read these; every diff runs with no external diff or textconv driver, between
//! commit ids the records hold (anything else is refused).

use std::path::Path;

use baton_state::StateDir;

/// `git diff --stat --patch A B` in `dir`, both checked to be commit ids.
pub fn diff(dir: &Path, a: &str, b: &str) -> Result<String, String> {
    if !baton_git::is_commit_id(a) || !baton_git::is_commit_id(b) {
        return Err(format!("{a}..{b} is not a pair of commit ids"));
    }
    let out = baton_git::Git::new(dir)
        .run_output([
            "diff",
            "--no-ext-diff",
            "--no-textconv",
            "--no-color",
            "--stat",
            "--patch",
            a,
            b,
        ])
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "git diff {a} {b}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// What a Flow unit changed: `git diff` of its base and its tip as the Flow last derived them
/// (its commits, whether or not a reviewer saw them), read in the Flow's repository. A base or
/// tip that is not a commit id is refused, never given to git.
pub fn unit_change(
    state: &baton_state::StateDir,
    flow: &str,
    unit: &str,
) -> Result<String, String> {
    let f = baton_flow::store::FlowStore::new(state.clone())
        .load(flow)
        .map_err(|e| format!("flow {flow}: {e}"))?;
    let u = f
        .units
        .iter()
        .find(|u| u.id() == unit)
        .ok_or_else(|| format!("flow {flow} has no unit {unit}"))?;
    let (Some(base), Some(tip)) = (u.base.as_deref(), u.tip.as_deref()) else {
        return Err(format!("flow {flow}: unit {unit} has no commits yet"));
    };
    diff(&f.repo_root, base, tip).map_err(|e| format!("flow {flow}: unit {unit}: {e}"))
}

/// What session `id` changed: from the tree before its first checkpoint that still stands to
/// the tree after its last (`/undo`ne checkpoints left out), in the session's folder. A session
/// that changed nothing in a git repository has no checkpoint: the error says so.
pub fn session_change(state: &StateDir, id: &str) -> Result<String, String> {
    let info = baton_agent::session::read_info(state, id).map_err(|e| e.to_string())?;
    let path = state.session(id).map_err(|e| e.to_string())?;
    let (checkpoints, _) = baton_agent::session::checkpoints_of(&path);
    let (Some(first), Some(last)) = (checkpoints.first(), checkpoints.last()) else {
        return Err(format!(
            "session {id} changed no file: none of its prompts left a checkpoint (they are taken in a git repository, for prompts that change files)"
        ));
    };
    diff(Path::new(&info.header.cwd), &first.before, &last.after)
        .map_err(|e| format!("session {id}: {e}"))
}

/// What workflow `id` changed so far: from the tree its first phase started from
/// (`results.workflow_base_sha`) to its working folder now (its worktree, else the project),
/// untracked files included — at its finishing checkpoint, the change a merge would land.
pub fn workflow_change(state: &StateDir, root: &Path, id: &str) -> Result<String, String> {
    let (record, dir) = workflow_record(state, root, id)?;
    let Some(base) = record.artifact.results.workflow_base_sha.clone() else {
        return Err(format!(
            "workflow {id} has changed nothing yet: no phase has started"
        ));
    };
    let now = baton_git::snapshot::commit(&dir)
        .ok_or_else(|| format!("workflow {id}: {} cannot be read now", dir.display()))?;
    diff(&dir, &base, &now).map_err(|e| format!("workflow {id}: {e}"))
}

/// What one dispatch of workflow `id` changed: the diff between the snapshots the runner took
/// before and after task `task`'s agent ran — the run its `agent_started` numbered `attempt`
/// (the page's attempt; the last run without one). Only a writer's dispatch has them.
pub fn dispatch_change(
    state: &StateDir,
    root: &Path,
    id: &str,
    task: &str,
    attempt: Option<usize>,
) -> Result<String, String> {
    use baton_workflow::event::EventBody;
    let store = baton_workflow::store::WorkflowStore::new(state.clone());
    let events = store
        .events(id)
        .map_err(|e| format!("workflow {id}: {e}"))?;
    // Each completion of the task, with the attempt its start was numbered.
    let mut started: Option<usize> = None;
    let mut runs: Vec<(Option<usize>, String, String)> = Vec::new();
    for e in &events {
        match &e.body {
            EventBody::AgentStarted(s) if s.task_id.as_deref() == Some(task) => {
                started = s
                    .details
                    .as_ref()
                    .and_then(|d| d.attempt)
                    .map(|a| a as usize);
            }
            EventBody::AgentCompleted(c) if c.task_id.as_deref() == Some(task) => {
                if let Some(d) = c.details.as_ref() {
                    if let (Some(b), Some(a)) = (d.tree_before.clone(), d.tree_after.clone()) {
                        runs.push((started, b, a));
                    }
                }
            }
            _ => {}
        }
    }
    let run = match attempt {
        Some(n) => runs.iter().rev().find(|r| r.0 == Some(n)),
        None => runs.last(),
    };
    let Some((_, before, after)) = run else {
        return Err(format!(
            "workflow {id}: task {task} has no recorded change{} (only a writer's dispatch has one, once it ended)",
            attempt.map(|n| format!(" for attempt {n}")).unwrap_or_default()
        ));
    };
    let (_, dir) = workflow_record(state, root, id)?;
    diff(&dir, before, after).map_err(|e| format!("workflow {id}, task {task}: {e}"))
}

/// Workflow `id`'s record now, and the folder its agents work in (its worktree, else the
/// project at `root`).
fn workflow_record(
    state: &StateDir,
    root: &Path,
    id: &str,
) -> Result<(baton_workflow::state::Record, std::path::PathBuf), String> {
    let (value, _) = crate::task_log::workflow_artifact(state, id, None)?;
    let record =
        baton_workflow::state::Record::read(&value).map_err(|e| format!("workflow {id}: {e}"))?;
    let dir = record
        .state
        .host
        .worktree
        .as_ref()
        .map_or_else(|| root.to_path_buf(), |w| w.path.clone());
    Ok((record, dir))
}
