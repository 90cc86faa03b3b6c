//! `delegate_task`: one shape per call — single, parallel (1–8, started together, reported in
//! input order) or chain (1–8, sequential, fail-fast, `{previous}` substitution).
//!
//! Every entry is validated (shape, name, role) before anything launches. Each entry then waits for
//! an executor permit; only then is its route resolved, its worktree created and its launch
//! prepared, so a queued entry sees current config. Worktrees are finalized on every exit path.

mod launch;
mod report;
mod request;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use baton_protocol::config::Config;
use baton_protocol::role::{BackendKind, Isolation, RoleSpec};
use baton_protocol::Usage;
use baton_roles::{find_role, RoleDirs};
use baton_state::StateDir;
use tokio_util::sync::CancellationToken;

use baton_model::routes::Env;

pub use launch::{
    backend_of, child_route, plan_launch, skill_dirs, skills, write_frozen_role, ChildRoute,
    LaunchPlan, RouteChoice,
};
pub use report::{
    render_report, render_usage, DelegateReport, EntryEvent, EntryReport, EntryStatus,
    ExecErrorInfo, Progress, WorktreeReport,
};
pub use request::{
    derive_name, parse_request, DelegateRequest, Mode, TaskEntry, MAX_ENTRIES, MAX_NAME_CHARS,
};

use crate::executor::{Executor, OutputBudget};
use crate::types::{Activity, ChildResult, ChildStatus, ExecErrorCode, Limits};
use crate::types::{ExecError, Launch};
use crate::worktree::{
    create_child_worktree, finalize_child_worktree, worktree_id, ChildWorktree, Finalized,
    Isolated, WorktreeError,
};
use report::skipped;

/// Where and with what a delegation runs.
#[derive(Clone)]
pub struct DelegateEnv {
    pub config: Config,
    pub role_dirs: RoleDirs,
    pub cwd: PathBuf,
    /// `.baton/state` of the project; frozen role files go under `roles/` there.
    pub state: StateDir,
    pub worktree_root: PathBuf,
    /// The baton binary children run as (the `baton` backend).
    pub baton_exe: PathBuf,
    pub limits: Limits,
    pub output_cap: usize,
    pub env: Arc<dyn Env + Send + Sync>,
    /// Reads the config again; called when an entry gets its permit, so a queued entry resolves
    /// its route against the config of that moment. `None` keeps `config`.
    pub reload: Option<ConfigReload>,
}

/// Loads the current config, or `None` when it cannot be read (the loaded one then stays).
pub type ConfigReload = Arc<dyn Fn() -> Option<Config> + Send + Sync>;

impl DelegateEnv {
    /// This environment with the config as it is now.
    pub fn refreshed(&self) -> DelegateEnv {
        let mut env = self.clone();
        if let Some(config) = self.reload.as_ref().and_then(|r| r()) {
            env.config = config;
        }
        env
    }
}

/// Checks every entry's role before anything launches.
pub fn resolve_roles(env: &DelegateEnv, req: &DelegateRequest) -> Result<Vec<RoleSpec>, String> {
    req.entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let at = match req.mode {
                Mode::Single => String::new(),
                Mode::Parallel => format!("tasks[{i}]."),
                Mode::Chain => format!("chain[{i}]."),
            };
            let role = find_role(&env.role_dirs, &e.role).map_err(|err| format!("`{at}role`: {err}"))?;
            if backend_of(env, &role) == BackendKind::Command && role.meta.command.as_ref().is_none_or(|c| c.is_empty()) {
                return Err(format!(
                    "`{at}role`: role `{}` uses backend `command` but has no `command: [program, args…]` in its frontmatter",
                    role.meta.name
                ));
            }
            Ok(role)
        })
        .collect()
}

/// Runs a validated request in the foreground and reports every entry.
pub async fn run_delegation(
    env: &DelegateEnv,
    executor: &Executor,
    req: &DelegateRequest,
    roles: &[RoleSpec],
    run_id: &str,
    cancel: &CancellationToken,
    progress: Progress,
) -> DelegateReport {
    // Frozen role files and children's transcripts live under .baton/state: keep them out of git,
    // here and in every worktree of the repository.
    // Best effort: a project outside git, or an unwritable exclude file, only means git shows
    // the folder.
    let _ = env.state.ensure_excluded();
    // Folders of frozen roles that killed runs left behind go now; this run's is marked as its
    // own, so that a later run can tell the difference.
    env.state.sweep_frozen_roles();
    let _ = env.state.claim_frozen_roles(run_id);
    let call = Call {
        env,
        executor,
        run_id,
        cancel,
    };
    for (i, e) in req.entries.iter().enumerate() {
        progress(
            i,
            EntryEvent::Queued {
                name: e.name.clone(),
                role: e.role.clone(),
            },
        );
    }
    let entries = match req.mode {
        Mode::Single | Mode::Parallel => {
            let runs = req
                .entries
                .iter()
                .zip(roles)
                .enumerate()
                .map(|(i, (e, role))| {
                    let progress = progress.clone();
                    async move { run_entry(call, i, e, role, e.task.clone(), progress).await }
                });
            futures::future::join_all(runs).await
        }
        Mode::Chain => {
            let mut out: Vec<EntryReport> = Vec::new();
            let mut previous = String::new();
            let mut failed = false;
            for (i, (e, role)) in req.entries.iter().zip(roles).enumerate() {
                if failed || cancel.is_cancelled() {
                    progress(
                        i,
                        EntryEvent::Finished {
                            status: EntryStatus::Skipped,
                            session: None,
                        },
                    );
                    out.push(skipped(i, e));
                    continue;
                }
                let task = e.task.replace("{previous}", &previous);
                let r = run_entry(call, i, e, role, task, progress.clone()).await;
                if r.status == EntryStatus::Done {
                    previous = r.output.clone();
                } else {
                    failed = true;
                }
                out.push(r);
            }
            out
        }
    };
    // The frozen role files served this call only.
    if let Ok(dir) = env.state.frozen_roles(run_id) {
        let _ = std::fs::remove_dir_all(dir);
    }
    // One budget for everything this call returns, spent in input order, so which entry gets
    // cut does not depend on which finished first. A chain step's `{previous}` got the step's
    // whole answer (each child alone is bounded by the same cap).
    let budget = OutputBudget::new(env.output_cap);
    // Everything Main is shown counts (seed 004): an entry's error, notes and recovery text are
    // taken first — short, and what Main needs to act — then its answer. The marker each child's
    // own bound put in the answer is replaced: the one left counts every byte cut, by either bound.
    let entries = entries
        .into_iter()
        .map(|mut e| {
            if let Some(err) = &mut e.error {
                err.message = budget.take(&err.message);
            }
            for n in &mut e.notes {
                *n = budget.take(n);
            }
            if let Some(r) = e.worktree.as_mut().and_then(|w| w.recovery.as_mut()) {
                *r = budget.take(r);
            }
            (e.output, e.omitted) = budget.retake(&e.output, e.omitted);
            e
        })
        .collect();
    DelegateReport {
        mode: req.mode,
        entries,
    }
}

/// What every entry of one delegation shares.
#[derive(Clone, Copy)]
struct Call<'a> {
    env: &'a DelegateEnv,
    executor: &'a Executor,
    run_id: &'a str,
    cancel: &'a CancellationToken,
}

async fn run_entry(
    call: Call<'_>,
    index: usize,
    e: &TaskEntry,
    role: &RoleSpec,
    task: String,
    progress: Progress,
) -> EntryReport {
    let Call {
        env,
        executor,
        cancel,
        ..
    } = call;
    // Each child alone is bounded by the call's cap; the shared budget is applied to the report.
    let budget = &OutputBudget::new(env.output_cap);
    let started = Instant::now();
    let slots = PrepareSlots::default();
    let mut notes = Vec::new();
    let entry = Entry {
        call,
        index,
        e,
        role,
        backend: backend_of(env, role),
    };
    let prepare = {
        let slots = slots.clone();
        let progress = progress.clone();
        let task = task.clone();
        move || prepare_launch(entry, slots, progress, task)
    };
    let mut on_activity = {
        let progress = progress.clone();
        move |a: Activity| progress(index, EntryEvent::Activity { activity: a })
    };
    let result = executor
        .run(prepare, env.limits, budget, cancel, &mut on_activity)
        .await;

    // Finalize the worktree whatever happened.
    let mut worktree = None;
    let taken = slots.isolated.lock().ok().and_then(|mut s| s.take());
    match taken {
        Some(Isolated::Worktree(wt)) => worktree = Some(finalize_worktree(wt).await),
        Some(Isolated::Fallback { reason, .. }) => notes.push(format!(
            "ran in the working directory, not a worktree: {reason}"
        )),
        None => {}
    }
    if let Ok(route) = slots.route_notes.lock() {
        notes.extend(route.iter().cloned());
    }
    let model = slots.model_label.lock().ok().and_then(|m| m.clone());
    let duration_ms = started.elapsed().as_millis() as u64;
    let omitted = match &result {
        Ok(r) => r.omitted,
        Err(err) => err.partial.as_ref().map_or(0, |p| p.omitted),
    };
    let cost_usd = match &result {
        Ok(r) => r.cost_usd,
        Err(err) => err.partial.as_ref().and_then(|p| p.cost_usd),
    };
    let session = match &result {
        Ok(r) => r.session_id.clone(),
        Err(err) => err.partial.as_ref().and_then(|p| p.session_id.clone()),
    };
    let Ended {
        status,
        output,
        error,
        usage,
        turns,
    } = ended(result);
    progress(
        index,
        EntryEvent::Finished {
            status,
            session: session.clone(),
        },
    );
    EntryReport {
        index,
        name: e.name.clone(),
        role: role.meta.name.clone(),
        status,
        output,
        omitted,
        error,
        model,
        usage,
        cost_usd,
        turns,
        duration_ms,
        worktree,
        notes,
        session_id: session,
    }
}

/// One entry of a delegation: the call it belongs to, its place in it, its task, its role and
/// the backend that runs it.
#[derive(Clone, Copy)]
struct Entry<'a> {
    call: Call<'a>,
    index: usize,
    e: &'a TaskEntry,
    role: &'a RoleSpec,
    backend: BackendKind,
}

/// What an entry's preparation (run inside the executor's call) leaves for its report: what it
/// isolated, the model it launched, and what the route choice wants the caller to know
/// (skipped routes, a peer's own default).
#[derive(Clone, Default)]
struct PrepareSlots {
    isolated: Arc<Mutex<Option<Isolated>>>,
    model_label: Arc<Mutex<Option<String>>>,
    route_notes: Arc<Mutex<Vec<String>>>,
}

/// The entry's launch, prepared once it has its permit: its route, its directory, its frozen
/// role file, announced through `progress`; what the report needs later goes into `slots`.
async fn prepare_launch(
    entry: Entry<'_>,
    slots: PrepareSlots,
    progress: Progress,
    task: String,
) -> Result<Launch, ExecError> {
    let Entry {
        call,
        index,
        e,
        role,
        backend,
    } = entry;
    let run_id = call.run_id;
    // The permit is granted: read the config of this moment.
    let current = call.env.refreshed();
    let env = &current;
    let route = child_route(env, backend, &e.route_choice(), role)?;
    if let Ok(mut slot) = slots.route_notes.lock() {
        *slot = route.notes.clone();
    }
    let mut cwd = env.cwd.clone();
    let mut note = None;
    if role.meta.isolation == Some(Isolation::Worktree) {
        (cwd, note) = isolate(env, entry, &slots.isolated).await?;
    }
    let role_file = match backend {
        BackendKind::Baton => {
            let dir = env
                .state
                .frozen_roles(run_id)
                .map_err(|e| ExecError::new(ExecErrorCode::Prepare, format!("run id: {e}")))?;
            Some(write_frozen_role(&dir, index, role)?)
        }
        BackendKind::Pi | BackendKind::Codex | BackendKind::Claude | BackendKind::Command => None,
    };
    let launch = plan_launch(
        env,
        LaunchPlan {
            role,
            backend,
            route,
            task,
            cwd: cwd.clone(),
            role_file,
            extra_env: vec![
                ("BATON_TASK_NAME".into(), e.name.clone()),
                ("BATON_TASK_INDEX".into(), index.to_string()),
                ("BATON_RUN_ID".into(), run_id.to_string()),
            ],
        },
    )?;
    if let Ok(mut slot) = slots.model_label.lock() {
        *slot = Some(launch.model_label.clone());
    }
    progress(
        index,
        EntryEvent::Launching {
            model: launch.model_label.clone(),
            thinking: launch.thinking_label.clone(),
            cwd: cwd.display().to_string(),
            note: note.clone(),
        },
    );
    Ok(launch)
}

/// A worktree of its own for the entry's child, recorded in `isolated`: the directory the child
/// runs in, and a note when there was nothing to isolate and it runs in the working directory.
async fn isolate(
    env: &DelegateEnv,
    entry: Entry<'_>,
    isolated: &Mutex<Option<Isolated>>,
) -> Result<(PathBuf, Option<String>), ExecError> {
    let id = worktree_id(entry.call.run_id, entry.index, &entry.e.name);
    // git runs off the runtime: on a current-thread runtime it would stall the other
    // children's output and heartbeats for as long as the checkout takes.
    let (repo, root) = (env.cwd.clone(), env.worktree_root.clone());
    let created = tokio::task::spawn_blocking(move || create_child_worktree(&repo, &root, &id))
        .await
        .map_err(|err| {
            ExecError::new(
                ExecErrorCode::Prepare,
                format!("the worktree setup stopped: {err}"),
            )
        })?;
    match created {
        Ok(Isolated::Worktree(wt)) => {
            let cwd = wt.cwd.clone();
            if let Ok(mut slot) = isolated.lock() {
                *slot = Some(Isolated::Worktree(wt));
            }
            Ok((cwd, None))
        }
        Ok(Isolated::Fallback { cwd: c, reason }) => {
            let note = Some(format!(
                "ran in the working directory, not a worktree: {reason}"
            ));
            let cwd = c.clone();
            if let Ok(mut slot) = isolated.lock() {
                *slot = Some(Isolated::Fallback { cwd: c, reason });
            }
            Ok((cwd, note))
        }
        Err(err) => Err(ExecError::new(
            ExecErrorCode::Prepare,
            format!("cannot create the worktree: {err}"),
        )),
    }
}

/// Finalizes the entry's worktree once its child is done: the report of what was removed and
/// what was kept (and how to recover it).
async fn finalize_worktree(wt: ChildWorktree) -> WorktreeReport {
    let mut report = WorktreeReport {
        path: wt.path.display().to_string(),
        branch: wt.branch.clone(),
        kept_path: true,
        kept_branch: true,
        commits: Vec::new(),
        recovery: None,
    };
    let finalized = {
        let wt = wt.clone();
        tokio::task::spawn_blocking(move || finalize_child_worktree(&wt)).await
    };
    match finalized.unwrap_or_else(|err| {
        Err(WorktreeError::Io {
            path: wt.path.clone(),
            source: std::io::Error::other(err),
        })
    }) {
        Ok(Finalized::Removed) => {
            report.kept_path = false;
            report.kept_branch = false;
        }
        Ok(Finalized::KeptCommits {
            branch,
            commits,
            path,
            path_removed,
            warning,
        }) => {
            report.kept_path = !path_removed;
            let mut text = format!(
                "{} commit(s) kept on branch {branch}: inspect with `git log {branch}`, integrate with `git merge {branch}`",
                commits.len()
            );
            if let Some(w) = warning {
                text.push_str(&format!(
                    "; the worktree at {} was kept: {w}",
                    path.display()
                ));
            }
            report.recovery = Some(text);
            report.commits = commits;
        }
        Ok(Finalized::KeptChanges {
            path,
            branch,
            commits,
            recovery,
            ..
        }) => {
            report.path = path.display().to_string();
            report.branch = branch;
            report.commits = commits;
            report.recovery = Some(recovery);
        }
        Err(err) => {
            report.recovery = Some(format!(
                "the worktree could not be finalized ({err}); it is still at {}",
                wt.path.display()
            ));
        }
    }
    report
}

/// How an entry ended, as its report states it.
struct Ended {
    status: EntryStatus,
    output: String,
    error: Option<ExecErrorInfo>,
    usage: Usage,
    turns: u32,
}

/// How the entry ended, from its child's `result`: a failure names its exit code and the tail
/// of its stderr, an error its code (the partial result's answer kept).
fn ended(result: Result<ChildResult, ExecError>) -> Ended {
    let (status, output, error, usage, turns) = match result {
        Ok(ChildResult {
            status,
            output,
            stderr,
            exit_code,
            usage,
            turns,
            error_message,
            ..
        }) => match status {
            ChildStatus::Success => (EntryStatus::Done, output, None, usage, turns),
            ChildStatus::Failure => {
                let code = exit_code.map_or("none".to_string(), |c| c.to_string());
                let mut detail = match &error_message {
                    Some(m) if !m.trim().is_empty() => format!("{}; exit code {code}", m.trim()),
                    Some(_) | None => format!("exit code {code}"),
                };
                if !stderr.trim().is_empty() {
                    let stderr =
                        baton_text::truncate(stderr.trim_end(), 800, baton_text::Keep::Tail);
                    detail.push_str(&format!("; stderr: {stderr}"));
                }
                (
                    EntryStatus::Failed,
                    output,
                    Some(ExecErrorInfo {
                        code: "failure".into(),
                        message: detail,
                    }),
                    usage,
                    turns,
                )
            }
        },
        Err(err) => {
            let status = if err.code == ExecErrorCode::Aborted {
                EntryStatus::Stopped
            } else {
                EntryStatus::Failed
            };
            let (output, usage, turns) = match &err.partial {
                Some(p) => (p.output.clone(), p.usage, p.turns),
                None => (String::new(), Usage::default(), 0),
            };
            (
                status,
                output,
                Some(ExecErrorInfo {
                    code: err.code.as_str().to_string(),
                    message: err.message.clone(),
                }),
                usage,
                turns,
            )
        }
    };
    Ended {
        status,
        output,
        error,
        usage,
        turns,
    }
}
