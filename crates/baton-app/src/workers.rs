//! Managed workers (`baton worker`, the `worker` tool, the MCP `worker_*` tools): starting,
//! prompting, listing, stopping and retiring a worker, each answered with a document. The log and
//! its fold are `baton_exec::worker`; the supervisor's session is the CLI's (`baton worker
//! serve`), which every front end starts as a detached process of this `baton` program.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use baton_exec::worker::{self, Phase, StopReason, WorkerEvent, WorkerSpec, WorkerState};
use baton_model::routes::{check_route, resolve_class, ProcessEnv};
use baton_protocol::{ModelClass, Route};
use baton_state::StateDir;
use schemars::JsonSchema;
use serde::Serialize;

mod send;

pub use send::{answer_of, send, send_and_wait, Answer, Prompt, Sent, Waited};

use crate::exit::AfterWorkBegan as _;
use crate::project::{now_rfc3339, role_dirs, ProjectContext};

/// How long `start` waits for the supervisor to set its session up.
const START_WAIT: Duration = Duration::from_secs(60);
/// How long `stop` waits after SIGTERM, then after SIGKILL.
const STOP_WAIT: Duration = Duration::from_secs(10);

/// A worker's state, or a refusal naming it.
pub fn load(state: &StateDir, name: &str) -> Result<WorkerState> {
    worker::load(state, name).map_err(|e| anyhow::anyhow!("{e}"))
}

/// The launch policy of a new worker, as given.
#[derive(Debug, Clone, Default)]
pub struct NewWorker {
    /// Its role (required for a new worker).
    pub role: Option<String>,
    /// Its route, `provider/model[:thinking]`.
    pub model: Option<String>,
    /// Its model class, when no route is given.
    pub model_class: Option<String>,
    /// Work in a worktree of its own (branch `baton/worker-NAME`).
    pub worktree: bool,
    /// Stop it (state kept) once it has spent this many US dollars.
    pub budget_usd: Option<f64>,
    /// Stop it (not retire it) after this many seconds without a prompt.
    pub idle_timeout_secs: Option<u64>,
}

impl NewWorker {
    fn given(&self) -> bool {
        self.role.is_some()
            || self.model.is_some()
            || self.model_class.is_some()
            || self.worktree
            || self.budget_usd.is_some()
            || self.idle_timeout_secs.is_some()
    }
}

/// The backend a worker of `role` runs on: the role's, else `executor.backend`, else baton.
pub fn backend_of(
    ctx: &ProjectContext,
    role: &baton_protocol::role::RoleSpec,
) -> baton_protocol::role::BackendKind {
    role.meta
        .backend
        .or(ctx.config.config.executor.backend)
        .unwrap_or(baton_protocol::role::BackendKind::Baton)
}

/// Checks a new worker's launch policy before anything is written: the role exists and runs on
/// baton's own sessions, the route or class resolves, the budget is a positive amount.
pub fn check_new(ctx: &ProjectContext, name: &str, new: &NewWorker) -> Result<String> {
    let Some(role) = new.role.clone() else {
        bail!("worker {name} does not exist: start it with --role ROLE (and --model or --model-class to choose its route)");
    };
    let spec = baton_roles::find_role(&role_dirs(&ctx.project_root), &role)
        .map_err(|e| anyhow::anyhow!("--role {role}: {e}"))?;
    let config = &ctx.config.config;
    let backend = backend_of(ctx, &spec);
    use baton_protocol::role::BackendKind as B;
    match backend {
        B::Baton => {}
        B::Pi | B::Claude => {
            // A peer's route is checked as `delegate_task` checks a child's.
            let env = crate::project::delegate_env(ctx)?;
            let choice = baton_exec::delegate::RouteChoice {
                model: new.model.clone(),
                model_class: match &new.model_class {
                    Some(c) => Some(
                        c.parse::<ModelClass>()
                            .map_err(|e| anyhow::anyhow!("--model-class: {e}"))?,
                    ),
                    None => None,
                },
                thinking: None,
            };
            baton_exec::delegate::child_route(&env, backend, &choice, &spec)
                .map_err(|e| anyhow::anyhow!("--role {role} on `{backend}`: {e}"))?;
            return finish_check(new, role);
        }
        B::Codex | B::Command => bail!(
            "--role {role}: it runs on the `{backend}` backend, which cannot keep a conversation between prompts: a worker runs on baton, pi or claude"
        ),
    }
    if let Some(m) = &new.model {
        let route: Route = m.parse().map_err(|e| anyhow::anyhow!("--model: {e}"))?;
        check_route(config, &route, &ProcessEnv).map_err(|e| anyhow::anyhow!("--model: {e}"))?;
    } else {
        let class = match &new.model_class {
            Some(c) => c
                .parse::<ModelClass>()
                .map_err(|e| anyhow::anyhow!("--model-class: {e}"))?,
            None => spec
                .meta
                .model_class
                .unwrap_or_else(|| baton_model::routes::default_class(config)),
        };
        resolve_class(config, class, &ProcessEnv)
            .map_err(|e| anyhow::anyhow!("the worker's model class {class}: {e}"))?;
    }
    finish_check(new, role)
}

/// The checks every new worker's policy passes, whatever its backend.
fn finish_check(new: &NewWorker, role: String) -> Result<String> {
    if let Some(b) = new.budget_usd {
        if !(b.is_finite() && b > 0.0) {
            bail!("--budget-usd {b}: give a positive amount of US dollars");
        }
    }
    if new.idle_timeout_secs == Some(0) {
        bail!("--idle-timeout: give a duration more than 0, e.g. 10m");
    }
    Ok(role)
}

/// What `start` did.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Started {
    pub name: String,
    pub role: String,
    pub session: String,
    /// It went on with its own session (a worker started again).
    pub resumed: bool,
    /// The prompt a lost worker was working on, given up (`send --retry` sends it again).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gave_up: Option<String>,
}

/// Starts a new worker, or starts again a stopped or lost one (its own session, unless
/// `fresh`), with the detached supervisor of `exe` (this `baton`); waits until its session is
/// set up. Everything is checked before anything is written.
pub fn start(
    ctx: &ProjectContext,
    state: &StateDir,
    exe: &Path,
    name: &str,
    new: NewWorker,
    fresh: bool,
) -> Result<Started> {
    let path = worker::log_path(state, name).map_err(|e| anyhow::anyhow!("{e}"))?;
    let existing = path.exists();
    if existing {
        let w = load(state, name)?;
        if new.given() {
            bail!(
                "worker {name} exists (role {}): `baton worker start {name}` starts it again as it was; retire it to start one with another launch policy",
                w.spec.role
            );
        }
        match w.phase() {
            Phase::Retired => {
                bail!("worker {name} is retired: start a new worker under another name")
            }
            p if p.running() => bail!("worker {name} is already {}", p.as_str()),
            _ => {}
        }
    }
    // The cap, counted before anything is written.
    let max = ctx
        .config
        .config
        .workers
        .max
        .unwrap_or(baton_protocol::config::DEFAULT_MAX_WORKERS);
    let running = worker::list(state)
        .iter()
        .filter(|n| n.as_str() != name)
        .filter_map(|n| worker::load(state, n).ok())
        .filter(|w| w.phase().running())
        .count();
    if running as u32 >= max {
        bail!(
            "{running} workers run and workers.max is {max}: stop one (`baton worker stop NAME`) or raise workers.max"
        );
    }
    if !existing {
        let role = check_new(ctx, name, &new)?;
        let worktree = if new.worktree {
            let root = baton_exec::worktree::default_worktree_root(
                ctx.config.config.executor.worktree_root.as_deref(),
            )
            .map_err(|e| anyhow::anyhow!("{e}"))?;
            match baton_exec::worktree::create_child_worktree(
                &ctx.cwd,
                &root,
                &format!("worker-{name}"),
            )
            .map_err(|e| anyhow::anyhow!("--worktree: {e}"))?
            {
                baton_exec::worktree::Isolated::Worktree(wt) => Some(wt),
                baton_exec::worktree::Isolated::Fallback { reason, .. } => {
                    bail!("--worktree: {reason}")
                }
            }
        } else {
            None
        };
        let spec = WorkerSpec {
            name: name.to_string(),
            role,
            model: new.model,
            model_class: new.model_class,
            cwd: worktree
                .as_ref()
                .map(|w| w.cwd.clone())
                .unwrap_or_else(|| ctx.cwd.clone()),
            worktree,
            budget_usd: new.budget_usd,
            idle_timeout_secs: new.idle_timeout_secs,
            created: now_rfc3339(),
        };
        let mut log = worker::WorkerLog::create(&path, baton_state::Durability::Fsync)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        log.append(&WorkerEvent::Created { spec })
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    let mut gave_up = None;
    if let (true, Ok(w)) = (existing, load(state, name)) {
        // A prompt a dead supervisor was working on is given up, never re-sent by itself.
        if w.phase() == Phase::Lost {
            if let Some(id) = give_up_in_flight(state, name, &w)? {
                gave_up = Some(id);
                // Its turn, begun in the session and never finished, leaves the model's view:
                // the session goes on without it (`send --retry` sends it once, as new).
                if let (false, Some(session)) = (fresh, &w.session) {
                    match baton_agent::session::withdraw_unfinished_turn(state, session) {
                        Ok(_) | Err(baton_agent::session::SessionError::NotFound { .. }) => {}
                        Err(e) => bail!(
                            "worker {name}: cannot take the lost prompt's turn out of session {session}: {e} (`baton worker start {name} --fresh` starts it on a new session)"
                        ),
                    }
                }
            }
        }
    }
    worker::spawn(exe, state, &ctx.project_root, name, fresh, now_rfc3339())
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    // Started once its supervisor says so (its session set up), or failed if it died first.
    let since = Instant::now();
    loop {
        let w = load(state, name)?;
        match w.phase() {
            Phase::Idle | Phase::Working => {
                return Ok(Started {
                    name: name.to_string(),
                    role: w.spec.role.clone(),
                    session: w.session.clone().unwrap_or_default(),
                    resumed: existing && !fresh,
                    gave_up,
                });
            }
            Phase::Starting if since.elapsed() < START_WAIT => {}
            Phase::Stopped | Phase::Lost | Phase::Starting | Phase::Retired => {
                let out = worker::output_path(state, name)
                    .ok()
                    .and_then(|p| std::fs::read_to_string(p).ok())
                    .unwrap_or_default();
                let tail: Vec<&str> = out.lines().rev().take(5).collect();
                return Err(anyhow::anyhow!(
                    "worker {name} did not start ({}): {}",
                    w.phase().as_str(),
                    tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
                ))
                .after_work_began();
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn append(state: &StateDir, name: &str, ev: &WorkerEvent) -> Result<()> {
    worker::append(state, name, ev).map_err(|e| anyhow::anyhow!("{e}"))
}

/// Records the prompt `w` was working on, if any, as lost (its supervisor is gone); its id.
fn give_up_in_flight(state: &StateDir, name: &str, w: &WorkerState) -> Result<Option<String>> {
    let Some(p) = w.in_flight() else {
        return Ok(None);
    };
    append(
        state,
        name,
        &WorkerEvent::Lost {
            id: p.id.clone(),
            at: now_rfc3339(),
        },
    )?;
    Ok(Some(p.id.clone()))
}

/// One worker as `list` shows it, its state reconciled with what runs.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Row {
    pub name: String,
    pub role: String,
    /// Its route or class (`(the role's)` when it takes the role's).
    pub route: String,
    /// `starting`, `idle`, `working`, `stopped`, `lost` or `retired`.
    pub state: String,
    pub turns: u32,
    pub tokens: u64,
    pub cost_usd: f64,
    pub last_activity: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The prompt in flight (a lost worker's: given up when it starts again).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_flight: Option<String>,
    /// Prompts waiting to be delivered.
    pub queued: usize,
}

/// Every worker, and the records that could not be read (each naming its worker and why).
pub fn list(state: &StateDir) -> (Vec<Row>, Vec<String>) {
    let mut rows = Vec::new();
    let mut damaged = Vec::new();
    for name in worker::list(state) {
        let w = match worker::load(state, &name) {
            Ok(w) => w,
            Err(e) => {
                damaged.push(format!("worker {name}: {e}"));
                continue;
            }
        };
        let (turns, tokens, cost) = w.totals();
        let phase = w.phase();
        rows.push(Row {
            name: name.clone(),
            role: w.spec.role.clone(),
            route: w
                .spec
                .model
                .clone()
                .or_else(|| w.spec.model_class.clone())
                .unwrap_or_else(|| "(the role's)".into()),
            state: phase.as_str().to_string(),
            turns,
            tokens,
            cost_usd: cost,
            last_activity: w.last_activity.clone(),
            worktree: w
                .spec
                .worktree
                .as_ref()
                .map(|t| t.path.display().to_string()),
            session: w.session.clone(),
            in_flight: w.in_flight().map(|p| p.id.clone()),
            queued: w.pending().count(),
        });
    }
    (rows, damaged)
}

/// Stops the supervisor: SIGTERM, then SIGKILL to its group if it does not end; records
/// `worker.stopped` when it could not. `false` when it was not running.
pub fn stop(state: &StateDir, name: &str) -> Result<bool> {
    let w = load(state, name)?;
    let phase = w.phase();
    if !phase.running() {
        if phase == Phase::Lost {
            append(
                state,
                name,
                &WorkerEvent::Stopped {
                    reason: StopReason::Asked,
                    message: Some("its supervisor was already gone".into()),
                    at: now_rfc3339(),
                },
            )?;
        }
        return Ok(false);
    }
    let Some(sup) = w.supervisor else {
        return Ok(false);
    };
    sup.signal(baton_process::Signal::SIGTERM);
    let since = Instant::now();
    while sup.is_alive() && since.elapsed() < STOP_WAIT {
        std::thread::sleep(Duration::from_millis(10));
    }
    if sup.is_alive() {
        sup.signal_group(baton_process::Signal::SIGKILL);
        sup.signal(baton_process::Signal::SIGKILL);
        while sup.is_alive() && since.elapsed() < STOP_WAIT * 2 {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let w = load(state, name)?;
    if w.stopped.is_none() {
        give_up_in_flight(state, name, &w)?;
        append(
            state,
            name,
            &WorkerEvent::Stopped {
                reason: StopReason::Asked,
                message: Some("killed: it did not stop when asked".into()),
                at: now_rfc3339(),
            },
        )?;
    }
    Ok(true)
}

/// Stops a worker for good and finalizes its worktree as `delegate_task` finalizes a child's:
/// kept when it holds work (with its branch), removed when it holds none. What became of the
/// worktree, as a sentence.
pub fn retire(state: &StateDir, name: &str) -> Result<Option<String>> {
    let w = load(state, name)?;
    if w.phase() == Phase::Retired {
        bail!("worker {name} is already retired");
    }
    if w.phase().running() || w.phase() == Phase::Lost {
        stop(state, name)?;
    }
    let kept = match &w.spec.worktree {
        None => None,
        Some(wt) => {
            let done = baton_exec::worktree::finalize_child_worktree(wt)
                .map_err(|e| anyhow::anyhow!("worker {name}: its worktree: {e}"))?;
            Some(done.to_string())
        }
    };
    append(
        state,
        name,
        &WorkerEvent::Retired {
            worktree: kept.clone(),
            at: now_rfc3339(),
        },
    )?;
    Ok(kept)
}

/// One line of a worker's log for a person.
pub fn describe(ev: &WorkerEvent) -> String {
    let one = |t: &str| baton_text::truncate(t, 200, baton_text::Keep::Head).replace('\n', " ");
    match ev {
        WorkerEvent::Created { spec } => {
            format!("created: role {} in {}", spec.role, spec.cwd.display())
        }
        WorkerEvent::Spawned { pid, at, .. } => format!("{at} supervisor spawned (pid {pid})"),
        WorkerEvent::Started {
            session,
            resumed,
            at,
            ..
        } => format!(
            "{at} started: session {session}{}",
            if *resumed { " (resumed)" } else { "" }
        ),
        WorkerEvent::Queued {
            id,
            text,
            retry_of,
            at,
        } => format!(
            "{at} prompt {id} queued{}: {}",
            retry_of
                .as_ref()
                .map(|r| format!(" (again, {r})"))
                .unwrap_or_default(),
            one(text)
        ),
        WorkerEvent::Delivered { id, at } => format!("{at} prompt {id} delivered"),
        WorkerEvent::Answered {
            id,
            answer,
            usage,
            at,
            ..
        } => format!(
            "{at} prompt {id} answered ({} in / {} out tokens): {}",
            usage.input_tokens,
            usage.output_tokens,
            one(answer)
        ),
        WorkerEvent::Lost { id, at } => format!("{at} prompt {id} lost (not answered)"),
        WorkerEvent::Stopped {
            reason,
            message,
            at,
        } => format!(
            "{at} stopped ({}){}",
            match reason {
                StopReason::Asked => "asked",
                StopReason::Idle => "idle timeout",
                StopReason::Budget => "budget spent",
                StopReason::Failed => "failed",
            },
            message
                .as_ref()
                .map(|m| format!(": {m}"))
                .unwrap_or_default()
        ),
        WorkerEvent::Retired { worktree, at } => format!(
            "{at} retired{}",
            worktree
                .as_ref()
                .map(|w| format!(": {w}"))
                .unwrap_or_default()
        ),
    }
}

/// A worker's log as the lines `baton worker logs NAME` prints (also its MCP resource).
pub fn log_lines(state: &StateDir, name: &str) -> Result<Vec<String>> {
    let evs = worker::events(state, name).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(evs.iter().map(describe).collect())
}

/// `list`'s answer as one document.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct WorkerList {
    pub workers: Vec<Row>,
    /// Records that could not be read, each naming its worker and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub damaged: Vec<String>,
}

/// `stop` as a document: `stopped`, or the state it was in when there was nothing to stop.
pub fn stop_document(state: &StateDir, name: &str) -> Result<Ended> {
    let was = stop(state, name)?;
    let now = load(state, name)?.phase().as_str().to_string();
    Ok(Ended {
        name: name.to_string(),
        state: if was { "stopped".into() } else { now },
        worktree: None,
    })
}

/// `retire` as a document.
pub fn retire_document(state: &StateDir, name: &str) -> Result<Ended> {
    let worktree = retire(state, name)?;
    Ok(Ended {
        name: name.to_string(),
        state: "retired".into(),
        worktree,
    })
}

/// What `stop` or `retire` did.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Ended {
    pub name: String,
    /// `stopped` (it ran and was stopped), `retired`, or its state when there was nothing to stop.
    pub state: String,
    /// What became of its worktree (`retire`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree: Option<String>,
}
