//! `delegate_task`: one shape per call — single, parallel (1–8, started together, reported in
//! input order) or chain (1–8, sequential, fail-fast, `{previous}` substitution).
//!
//! Every entry is validated (shape, name, role) before anything launches. Each entry then waits for
//! an executor permit; only then is its route resolved, its worktree created and its launch
//! prepared, so a queued entry sees current config. Worktrees are finalized on every exit path.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use baton_model::routes::{check_route, default_class, resolve_class, Env};
use baton_protocol::config::Config;
use baton_protocol::role::{BackendKind, Isolation, RoleSpec};
use baton_protocol::{ModelClass, Route, ThinkingLevel, Usage};
use baton_roles::{find_role, RoleDirs};
use baton_state::StateDir;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::backend::{launch_for, TaskSpec};
use crate::executor::{Executor, OutputBudget};
use crate::types::{Activity, ChildResult, ChildStatus, ExecError, ExecErrorCode, Limits};
use crate::worktree::{
    create_child_worktree, finalize_child_worktree, worktree_id, Finalized, Isolated,
};

/// Most entries in one parallel or chain call.
pub const MAX_ENTRIES: usize = 8;
/// Longest entry name, in characters (exclusive).
pub const MAX_NAME_CHARS: usize = 30;

/// One delegation as the caller wrote it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskEntry {
    pub role: String,
    pub name: String,
    pub task: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_class: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Single,
    Parallel,
    Chain,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Single => "single",
            Mode::Parallel => "parallel",
            Mode::Chain => "chain",
        }
    }
}

/// A validated request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DelegateRequest {
    pub mode: Mode,
    pub entries: Vec<TaskEntry>,
    /// Run detached; the caller gets an id at once.
    #[serde(default)]
    pub background: bool,
}

/// Parses and validates the `delegate_task` arguments: exactly one of single fields, `tasks` or
/// `chain`. Errors name the field and the fix.
pub fn parse_request(v: &Value) -> Result<DelegateRequest, String> {
    let obj = v.as_object().ok_or(
        "delegate_task takes a JSON object: {role, name, task}, {tasks: [...]} or {chain: [...]}",
    )?;
    let background = match obj.get("background") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err("`background` must be true or false".into()),
    };
    let has_single = ["role", "name", "task", "model", "model_class", "thinking"]
        .iter()
        .any(|k| obj.contains_key(*k));
    let shapes = [
        has_single,
        obj.contains_key("tasks"),
        obj.contains_key("chain"),
    ];
    if shapes.iter().filter(|s| **s).count() != 1 {
        return Err("use exactly one shape: single fields {role, name, task}, or {tasks: [...]} for parallel, or {chain: [...]} for a chain".into());
    }
    for k in obj.keys() {
        let allowed = [
            "role",
            "name",
            "task",
            "model",
            "model_class",
            "thinking",
            "tasks",
            "chain",
            "background",
        ];
        if !allowed.contains(&k.as_str()) {
            return Err(format!(
                "unknown field `{k}`; fields are role, name, task, model, model_class, thinking (per entry), tasks or chain, background"
            ));
        }
    }
    let (mode, entries) = if has_single {
        let mut single = obj.clone();
        single.remove("background");
        (Mode::Single, vec![parse_entry(&Value::Object(single), "")?])
    } else {
        let (mode, key) = if obj.contains_key("tasks") {
            (Mode::Parallel, "tasks")
        } else {
            (Mode::Chain, "chain")
        };
        let list = obj
            .get(key)
            .and_then(Value::as_array)
            .ok_or_else(|| format!("`{key}` must be an array of 1 to {MAX_ENTRIES} entries"))?;
        if list.is_empty() || list.len() > MAX_ENTRIES {
            return Err(format!(
                "`{key}` has {} entries; it takes 1 to {MAX_ENTRIES}",
                list.len()
            ));
        }
        let entries = list
            .iter()
            .enumerate()
            .map(|(i, e)| parse_entry(e, &format!("{key}[{i}].")))
            .collect::<Result<Vec<_>, _>>()?;
        (mode, entries)
    };
    Ok(DelegateRequest {
        mode,
        entries,
        background,
    })
}

fn parse_entry(v: &Value, at: &str) -> Result<TaskEntry, String> {
    if let Some(obj) = v.as_object() {
        for nested in ["tasks", "chain", "background"] {
            if obj.contains_key(nested) {
                return Err(format!("`{at}{nested}` cannot be nested inside an entry"));
            }
        }
    }
    let e: TaskEntry = serde_json::from_value(v.clone()).map_err(|e| {
        format!(
            "{}: {e} (an entry is {{role, name, task, model?, model_class?, thinking?}})",
            if at.is_empty() {
                "delegate_task"
            } else {
                at.trim_end_matches('.')
            }
        )
    })?;
    if e.role.trim().is_empty() {
        return Err(format!(
            "`{at}role` is empty: name a role (see `baton roles`)"
        ));
    }
    if e.task.trim().is_empty() {
        return Err(format!("`{at}task` is empty: say what the child should do"));
    }
    let n = e.name.chars().count();
    if n == 0 || n >= MAX_NAME_CHARS {
        return Err(format!(
            "`{at}name` must be 1 to {} characters (it has {n})",
            MAX_NAME_CHARS - 1
        ));
    }
    if baton_text::has_controls(&e.name) {
        return Err(format!("`{at}name` must not contain control characters"));
    }
    if let Some(c) = &e.model_class {
        c.parse::<ModelClass>()
            .map_err(|err| format!("`{at}model_class`: {err}"))?;
    }
    if let Some(m) = &e.model {
        m.parse::<Route>()
            .map_err(|err| format!("`{at}model`: {err}"))?;
    }
    if let Some(t) = &e.thinking {
        parse_thinking(t).map_err(|err| format!("`{at}thinking`: {err}"))?;
    }
    Ok(e)
}

fn parse_thinking(t: &str) -> Result<ThinkingLevel, String> {
    if t == "max" {
        return Ok(ThinkingLevel::Xhigh);
    }
    t.parse::<ThinkingLevel>().map_err(|e| e.to_string())
}

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

/// What happens to one entry, for live status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EntryEvent {
    Queued {
        name: String,
        role: String,
    },
    Launching {
        model: String,
        thinking: Option<String>,
        cwd: String,
        note: Option<String>,
    },
    Activity {
        activity: Activity,
    },
    Finished {
        status: EntryStatus,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryStatus {
    Done,
    Failed,
    Stopped,
    /// A chain step after a failure; never launched.
    Skipped,
}

impl EntryStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            EntryStatus::Done => "done",
            EntryStatus::Failed => "failed",
            EntryStatus::Stopped => "stopped",
            EntryStatus::Skipped => "skipped",
        }
    }
}

/// How an entry's worktree ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorktreeReport {
    pub path: String,
    pub branch: String,
    pub kept_path: bool,
    pub kept_branch: bool,
    pub commits: Vec<String>,
    /// How to recover retained work, when any was retained.
    pub recovery: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EntryReport {
    pub index: usize,
    pub name: String,
    pub role: String,
    pub status: EntryStatus,
    pub output: String,
    pub error: Option<ExecErrorInfo>,
    pub model: Option<String>,
    pub usage: Usage,
    pub turns: u32,
    pub duration_ms: u64,
    pub worktree: Option<WorktreeReport>,
    /// Things the caller should know (ran in the working directory instead of a worktree, …).
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecErrorInfo {
    pub code: String,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DelegateReport {
    pub mode: Mode,
    pub entries: Vec<EntryReport>,
}

impl DelegateReport {
    pub fn ok(&self) -> bool {
        self.entries.iter().all(|e| e.status == EntryStatus::Done)
    }
}

/// Progress callback: entry index and what happened.
pub type Progress = Arc<dyn Fn(usize, EntryEvent) + Send + Sync>;

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

pub fn backend_of(env: &DelegateEnv, role: &RoleSpec) -> BackendKind {
    role.meta
        .backend
        .or(env.config.executor.backend)
        .unwrap_or(BackendKind::Baton)
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
                    async move {
                        run_entry(
                            env,
                            executor,
                            i,
                            e,
                            role,
                            e.task.clone(),
                            run_id,
                            cancel,
                            progress,
                        )
                        .await
                    }
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
                        },
                    );
                    out.push(skipped(i, e));
                    continue;
                }
                let task = e.task.replace("{previous}", &previous);
                let r = run_entry(
                    env,
                    executor,
                    i,
                    e,
                    role,
                    task,
                    run_id,
                    cancel,
                    progress.clone(),
                )
                .await;
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
    let entries = entries
        .into_iter()
        .map(|mut e| {
            e.output = budget.take(&e.output);
            e
        })
        .collect();
    DelegateReport {
        mode: req.mode,
        entries,
    }
}

fn skipped(i: usize, e: &TaskEntry) -> EntryReport {
    EntryReport {
        index: i,
        name: e.name.clone(),
        role: e.role.clone(),
        status: EntryStatus::Skipped,
        output: String::new(),
        error: None,
        model: None,
        usage: Usage::default(),
        turns: 0,
        duration_ms: 0,
        worktree: None,
        notes: vec!["not run: an earlier chain step did not succeed".into()],
    }
}

/// The model a child runs: for the `baton` backend a checked route; for peer agents the model
/// name passed through; nothing for `command` children or peers left on their own default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChildRoute {
    pub model: Option<String>,
    pub thinking: Option<ThinkingLevel>,
}

/// The launch description of one child: its model and thinking level, and the backend's program
/// (this binary for `baton`, `executor.programs.<backend>` for the others).
#[allow(clippy::too_many_arguments)]
pub fn task_spec(
    env: &DelegateEnv,
    backend: BackendKind,
    role: &RoleSpec,
    task: String,
    cwd: PathBuf,
    route: ChildRoute,
    role_file: Option<PathBuf>,
    extra_env: Vec<(String, String)>,
) -> TaskSpec {
    TaskSpec {
        backend,
        role: role.clone(),
        task,
        cwd,
        route: route.model,
        thinking: route.thinking.map(|t| t.to_string()),
        program: match backend {
            BackendKind::Baton => Some(env.baton_exe.clone()),
            BackendKind::Pi | BackendKind::Codex | BackendKind::Claude | BackendKind::Command => {
                env.config
                    .executor
                    .programs
                    .get(backend.as_str())
                    .map(PathBuf::from)
            }
        },
        role_file,
        max_turns: None,
        extra_env,
    }
}

/// The model of a child by backend. `baton` children get a route checked against baton's own
/// providers and keys ([`entry_route`]). Peer agents (pi, codex, claude) use their own logins, so
/// their `model` is passed through unchecked (a bare model name is fine), and a class maps to its
/// first configured route without a credential check; with neither, the peer's default applies.
pub fn child_route(
    env: &DelegateEnv,
    backend: BackendKind,
    e: &TaskEntry,
    role: &RoleSpec,
) -> Result<ChildRoute, ExecError> {
    let prepare = |m: String| ExecError::new(ExecErrorCode::Prepare, m);
    let thinking = e
        .thinking
        .as_deref()
        .map(parse_thinking)
        .transpose()
        .map_err(|err| prepare(format!("thinking: {err}")))?;
    match backend {
        BackendKind::Command => Ok(ChildRoute::default()),
        BackendKind::Baton => {
            let r = entry_route(env, e, role)?;
            let thinking = r.thinking;
            let mut model = r;
            model.thinking = None;
            Ok(ChildRoute {
                model: Some(model.to_string()),
                thinking,
            })
        }
        BackendKind::Pi | BackendKind::Codex | BackendKind::Claude => {
            let from_route = |r: &Route| {
                let mut m = r.clone();
                let t = m.thinking.take();
                (m.to_string(), t)
            };
            let (model, route_thinking) = if let Some(m) = &e.model {
                match m.parse::<Route>() {
                    Ok(r) => {
                        let (m, t) = from_route(&r);
                        (Some(m), t)
                    }
                    Err(_) => (Some(m.trim().to_string()), None),
                }
            } else {
                let class = match &e.model_class {
                    Some(c) => Some(
                        c.parse::<ModelClass>()
                            .map_err(|err| prepare(format!("model_class: {err}")))?,
                    ),
                    None => role.meta.model_class,
                };
                match class
                    .and_then(|c| env.config.models.class(c))
                    .and_then(|l| l.routes().first().copied().cloned())
                {
                    Some(r) => {
                        let (m, t) = from_route(&r);
                        (Some(m), t)
                    }
                    None => (None, None),
                }
            };
            Ok(ChildRoute {
                model,
                thinking: thinking.or(route_thinking),
            })
        }
    }
}

/// Resolves the route of an entry: `model` > `model_class` > the role's class > the default class.
pub fn entry_route(env: &DelegateEnv, e: &TaskEntry, role: &RoleSpec) -> Result<Route, ExecError> {
    let prepare = |m: String| ExecError::new(ExecErrorCode::Prepare, m);
    let mut route = if let Some(m) = &e.model {
        let r: Route = m.parse().map_err(|err| prepare(format!("model: {err}")))?;
        check_route(&env.config, &r, env.env.as_ref()).map_err(|err| prepare(err.to_string()))?;
        r
    } else {
        let class = match &e.model_class {
            Some(c) => c
                .parse()
                .map_err(|err| prepare(format!("model_class: {err}")))?,
            None => role
                .meta
                .model_class
                .unwrap_or_else(|| default_class(&env.config)),
        };
        resolve_class(&env.config, class, env.env.as_ref())
            .map_err(|err| prepare(err.to_string()))?
            .route
    };
    if let Some(t) = &e.thinking {
        route.thinking = Some(parse_thinking(t).map_err(prepare)?);
    }
    Ok(route)
}

/// Writes `role` as `<dir>/<index>-<name>.md`, the file a `baton` child loads with `--role-file`
/// (for a delegate call `dir` is [`StateDir::frozen_roles`] of the run).
pub fn write_frozen_role(dir: &Path, index: usize, role: &RoleSpec) -> Result<PathBuf, ExecError> {
    std::fs::create_dir_all(dir).map_err(|e| {
        ExecError::new(
            ExecErrorCode::Prepare,
            format!("cannot create {}: {e}", dir.display()),
        )
    })?;
    let path = dir.join(format!("{index}-{}.md", role.meta.name));
    let yaml = serde_norway::to_string(&role.meta).map_err(|e| {
        ExecError::new(
            ExecErrorCode::Prepare,
            format!("cannot write role `{}`: {e}", role.meta.name),
        )
    })?;
    std::fs::write(&path, format!("---\n{yaml}---\n{}\n", role.body)).map_err(|e| {
        ExecError::new(
            ExecErrorCode::Prepare,
            format!("cannot write {}: {e}", path.display()),
        )
    })?;
    Ok(path)
}

#[allow(clippy::too_many_arguments)]
async fn run_entry(
    env: &DelegateEnv,
    executor: &Executor,
    index: usize,
    e: &TaskEntry,
    role: &RoleSpec,
    task: String,
    run_id: &str,
    cancel: &CancellationToken,
    progress: Progress,
) -> EntryReport {
    // Each child alone is bounded by the call's cap; the shared budget is applied to the report.
    let budget = &OutputBudget::new(env.output_cap);
    let started = Instant::now();
    let isolated: Arc<Mutex<Option<Isolated>>> = Arc::new(Mutex::new(None));
    let model_label: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
    let mut notes = Vec::new();
    let backend = backend_of(env, role);
    let prepare = {
        let isolated = isolated.clone();
        let model_label = model_label.clone();
        let progress = progress.clone();
        let task = task.clone();
        move || async move {
            // The permit is granted: read the config of this moment.
            let current = env.refreshed();
            let env = &current;
            let route = child_route(env, backend, e, role)?;
            let mut cwd = env.cwd.clone();
            let mut note = None;
            if role.meta.isolation == Some(Isolation::Worktree) {
                let id = worktree_id(run_id, index, &e.name);
                match create_child_worktree(&env.cwd, &env.worktree_root, &id) {
                    Ok(Isolated::Worktree(wt)) => {
                        cwd = wt.cwd.clone();
                        if let Ok(mut slot) = isolated.lock() {
                            *slot = Some(Isolated::Worktree(wt));
                        }
                    }
                    Ok(Isolated::Fallback { cwd: c, reason }) => {
                        note = Some(format!(
                            "ran in the working directory, not a worktree: {reason}"
                        ));
                        cwd = c.clone();
                        if let Ok(mut slot) = isolated.lock() {
                            *slot = Some(Isolated::Fallback { cwd: c, reason });
                        }
                    }
                    Err(err) => {
                        return Err(ExecError::new(
                            ExecErrorCode::Prepare,
                            format!("cannot create the worktree: {err}"),
                        ))
                    }
                }
            }
            let role_file = match backend {
                BackendKind::Baton => {
                    let dir = env.state.frozen_roles(run_id).map_err(|e| {
                        ExecError::new(ExecErrorCode::Prepare, format!("run id: {e}"))
                    })?;
                    Some(write_frozen_role(&dir, index, role)?)
                }
                BackendKind::Pi
                | BackendKind::Codex
                | BackendKind::Claude
                | BackendKind::Command => None,
            };
            let spec = task_spec(
                env,
                backend,
                role,
                task,
                cwd.clone(),
                route,
                role_file,
                vec![
                    ("BATON_TASK_NAME".into(), e.name.clone()),
                    ("BATON_TASK_INDEX".into(), index.to_string()),
                    ("BATON_RUN_ID".into(), run_id.to_string()),
                ],
            );
            let launch = launch_for(&spec)?;
            if let Ok(mut slot) = model_label.lock() {
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
    let taken = isolated.lock().ok().and_then(|mut s| s.take());
    match taken {
        Some(Isolated::Worktree(wt)) => {
            let mut report = WorktreeReport {
                path: wt.path.display().to_string(),
                branch: wt.branch.clone(),
                kept_path: true,
                kept_branch: true,
                commits: Vec::new(),
                recovery: None,
            };
            match finalize_child_worktree(&wt) {
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
            worktree = Some(report);
        }
        Some(Isolated::Fallback { reason, .. }) => notes.push(format!(
            "ran in the working directory, not a worktree: {reason}"
        )),
        None => {}
    }
    let model = model_label.lock().ok().and_then(|m| m.clone());
    let duration_ms = started.elapsed().as_millis() as u64;
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
                    detail.push_str(&format!("; stderr: {}", tail(&stderr, 800)));
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
    progress(index, EntryEvent::Finished { status });
    EntryReport {
        index,
        name: e.name.clone(),
        role: role.meta.name.clone(),
        status,
        output,
        error,
        model,
        usage,
        turns,
        duration_ms,
        worktree,
        notes,
    }
}

fn tail(s: &str, max: usize) -> String {
    let t = s.trim_end();
    if t.len() <= max {
        return t.to_string();
    }
    let mut start = t.len() - max;
    while !t.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &t[start..])
}

/// The minimal text the calling model sees: a line per entry with role attribution, its bounded
/// output, and recovery paths only for retained work.
pub fn render_report(report: &DelegateReport) -> String {
    let total = report.entries.len();
    let mut s = String::new();
    for e in &report.entries {
        let head = match report.mode {
            Mode::Single => format!("{} ({})", e.name, e.role),
            Mode::Parallel | Mode::Chain => {
                format!("[{}/{total}] {} ({})", e.index + 1, e.name, e.role)
            }
        };
        let err = e
            .error
            .as_ref()
            .map(|x| format!(" — {}: {}", x.code, x.message))
            .unwrap_or_default();
        s.push_str(&format!("{head}: {}{err}\n", e.status.as_str()));
        if !e.output.trim().is_empty() {
            s.push_str(e.output.trim_end());
            s.push('\n');
        }
        for n in &e.notes {
            s.push_str(&format!("note: {n}\n"));
        }
        if let Some(w) = &e.worktree {
            if let Some(r) = &w.recovery {
                s.push_str(&format!("retained work: {r}\n"));
            }
        }
        s.push('\n');
    }
    s.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn exactly_one_shape_is_accepted() {
        let single =
            parse_request(&json!({"role": "scout", "name": "look", "task": "map it"})).unwrap();
        assert_eq!(single.mode, Mode::Single);
        let par = parse_request(&json!({"tasks": [{"role": "scout", "name": "a", "task": "x"}, {"role": "scout", "name": "b", "task": "y"}], "background": true})).unwrap();
        assert_eq!(
            (par.mode, par.entries.len(), par.background),
            (Mode::Parallel, 2, true)
        );
        let chain = parse_request(
            &json!({"chain": [{"role": "scout", "name": "a", "task": "x {previous}"}]}),
        )
        .unwrap();
        assert_eq!(chain.mode, Mode::Chain);
        for (bad, expect) in [
            (
                json!({"role": "s", "name": "n", "task": "t", "tasks": []}),
                "exactly one shape",
            ),
            (json!({"tasks": []}), "1 to 8"),
            (
                json!({"tasks": (0..9).map(|i| json!({"role": "s", "name": format!("n{i}"), "task": "t"})).collect::<Vec<_>>()}),
                "9 entries",
            ),
            (json!({"role": "s", "task": "t"}), "name"),
            (
                json!({"role": "s", "name": "x".repeat(30), "task": "t"}),
                "1 to 29",
            ),
            (
                json!({"role": "s", "name": "a\u{7}b", "task": "t"}),
                "control",
            ),
            (
                json!({"role": "s", "name": "n", "task": " "}),
                "`task` is empty",
            ),
            (
                json!({"role": "s", "name": "n", "task": "t", "model_class": "huge"}),
                "model_class",
            ),
            (
                json!({"role": "s", "name": "n", "task": "t", "thinking": "lots"}),
                "thinking",
            ),
            (
                json!({"chain": [{"role": "s", "name": "n", "task": "t", "tasks": []}]}),
                "nested",
            ),
            (
                json!({"role": "s", "name": "n", "task": "t", "colour": 1}),
                "unknown field",
            ),
            (
                json!({"tasks": [{"role": "s", "name": "n", "task": "t", "extra": 1}]}),
                "tasks[0]",
            ),
        ] {
            let e = parse_request(&bad).unwrap_err();
            assert!(e.contains(expect), "{bad}: {e}");
        }
    }
}

#[cfg(test)]
mod route_tests {
    use super::*;
    use baton_protocol::config::RouteList;
    use baton_roles::builtin_roles;

    fn env(config: Config) -> DelegateEnv {
        DelegateEnv {
            config,
            role_dirs: RoleDirs {
                user: None,
                project: None,
            },
            cwd: PathBuf::from("/tmp"),
            state: StateDir::at("/tmp/.baton/state"),
            worktree_root: PathBuf::from("/tmp/wt"),
            baton_exe: PathBuf::from("/bin/true"),
            limits: Limits::default(),
            output_cap: 1024,
            env: Arc::new(std::collections::BTreeMap::<String, String>::new()),
            reload: None,
        }
    }

    fn entry(model: Option<&str>, class: Option<&str>) -> TaskEntry {
        TaskEntry {
            role: "scout".into(),
            name: "n".into(),
            task: "t".into(),
            model: model.map(str::to_string),
            model_class: class.map(str::to_string),
            thinking: None,
        }
    }

    #[test]
    fn peers_take_models_unchecked_and_baton_children_need_usable_routes() {
        let scout = builtin_roles()
            .unwrap()
            .into_iter()
            .find(|r| r.meta.name == "scout")
            .unwrap();
        let mut config = Config::default();
        config.models.fast = Some(RouteList::One(
            "anthropic/claude-haiku:low".parse().unwrap(),
        ));
        let env = env(config);
        // A bare model name passes through to a peer; no baton key is needed.
        let r = child_route(
            &env,
            BackendKind::Codex,
            &entry(Some("gpt-5.5"), None),
            &scout,
        )
        .unwrap();
        assert_eq!(
            r,
            ChildRoute {
                model: Some("gpt-5.5".into()),
                thinking: None
            }
        );
        // A class maps to its first route without a credential check.
        let r = child_route(&env, BackendKind::Pi, &entry(None, Some("fast")), &scout).unwrap();
        assert_eq!(
            r,
            ChildRoute {
                model: Some("anthropic/claude-haiku".into()),
                thinking: Some(ThinkingLevel::Low)
            }
        );
        // Nothing chosen and the role's class unset in config: the peer's default model.
        let r = child_route(
            &env,
            BackendKind::Claude,
            &entry(None, Some("balanced")),
            &scout,
        )
        .unwrap();
        assert_eq!(r, ChildRoute::default());
        // A baton child checks the route against baton's providers and keys.
        let e =
            child_route(&env, BackendKind::Baton, &entry(None, Some("fast")), &scout).unwrap_err();
        assert!(e.message.contains("ANTHROPIC_API_KEY"), "{}", e.message);
    }
}
