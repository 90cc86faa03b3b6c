//! `baton worker`: managed workers — named, long-lived sessions that are prompted again and
//! again, survive restarts and are reconciled after a crash (`baton_exec::worker` has the log;
//! `worker_serve` is the supervisor's session). See docs/workers.md.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use baton_app::exit::Exit;
use baton_app::project::{now_rfc3339, project_context, role_dirs, state_dir, ProjectContext};
use baton_exec::worker::{self, Phase, StopReason, WorkerEvent, WorkerSpec, WorkerState};
use baton_model::routes::{check_route, resolve_class, ProcessEnv};
use baton_protocol::{ModelClass, Route};
use baton_state::StateDir;
use clap::{Args, Subcommand};
use serde::Serialize;

#[derive(Args, Debug)]
pub struct WorkerArgs {
    #[command(subcommand)]
    action: WorkerAction,
    /// Directory inside the project (default: the current one).
    #[arg(long, global = true)]
    cwd: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
enum WorkerAction {
    /// Start a worker (a new one with --role), or start again a stopped or lost one: it resumes
    /// its session (--fresh starts a new one).
    Start {
        name: String,
        /// The role of a new worker.
        #[arg(long)]
        role: Option<String>,
        /// Its route, `provider/model[:thinking]`.
        #[arg(long, conflicts_with = "model_class")]
        model: Option<String>,
        /// Its model class (fast, balanced, frontier, …).
        #[arg(long)]
        model_class: Option<String>,
        /// Work in a worktree of its own (on branch `baton/worker-NAME`).
        #[arg(long)]
        worktree: bool,
        /// Stop the worker (state kept) once it has spent this many US dollars.
        #[arg(long, value_name = "USD")]
        budget_usd: Option<f64>,
        /// Stop (not retire) the worker after this long without a prompt: `30s`, `10m`, `2h`.
        #[arg(long, value_name = "DURATION")]
        idle_timeout: Option<baton_protocol::config::HumanDuration>,
        /// Start a stopped or lost worker on a new session instead of resuming its own.
        #[arg(long)]
        fresh: bool,
    },
    /// Send a prompt (`-`: read it from stdin); by default wait for its answer and print it.
    Send {
        name: String,
        /// The prompt; `-` reads it from stdin. Not with --retry.
        prompt: Option<String>,
        /// Print the prompt's id and return at once.
        #[arg(long, conflicts_with = "wait")]
        no_wait: bool,
        /// Wait for the answer (the default).
        #[arg(long)]
        wait: bool,
        /// Send again the prompt that was in flight when the worker was lost.
        #[arg(long, conflicts_with = "prompt")]
        retry: bool,
        /// Print one JSON document: the answer and its usage.
        #[arg(long)]
        json: bool,
    },
    /// List the workers: state (reconciled with what really runs), turns, tokens, cost.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Print a worker's log; --follow keeps printing what is appended.
    Logs {
        name: String,
        #[arg(long)]
        follow: bool,
    },
    /// Stop a worker's supervisor; its session and log are kept (`start` resumes it).
    Stop { name: String },
    /// Stop a worker for good and finalize its worktree (kept when it holds work).
    Retire { name: String },
    /// The supervisor itself (started by `start`).
    #[command(hide = true)]
    Serve {
        name: String,
        #[arg(long)]
        project: PathBuf,
        #[arg(long)]
        fresh: bool,
    },
}

const START_WAIT: Duration = Duration::from_secs(60);
const STOP_WAIT: Duration = Duration::from_secs(10);

pub fn run(args: WorkerArgs) -> Result<Exit> {
    if let WorkerAction::Serve {
        name,
        project,
        fresh,
    } = args.action
    {
        return serve(&name, project, fresh);
    }
    let ctx = project_context(args.cwd.clone())?;
    let state = state_dir(&ctx);
    match args.action {
        WorkerAction::Start {
            name,
            role,
            model,
            model_class,
            worktree,
            budget_usd,
            idle_timeout,
            fresh,
        } => {
            let new = NewWorker {
                role,
                model,
                model_class,
                worktree,
                budget_usd,
                idle_timeout: idle_timeout.map(|d| d.0),
            };
            start(&ctx, &state, &name, new, fresh)
        }
        WorkerAction::Send {
            name,
            prompt,
            no_wait,
            wait: _,
            retry,
            json,
        } => send(&state, &name, prompt, !no_wait, retry, json),
        WorkerAction::List { json } => list(&state, json),
        WorkerAction::Logs { name, follow } => logs(&state, &name, follow),
        WorkerAction::Stop { name } => stop(&state, &name).map(|_| Exit::Ok),
        WorkerAction::Retire { name } => retire(&state, &name),
        WorkerAction::Serve { .. } => unreachable!("handled above"),
    }
}

/// A worker's state, or a refusal naming it.
fn load(state: &StateDir, name: &str) -> Result<WorkerState> {
    worker::load(state, name).map_err(|e| anyhow::anyhow!("{e}"))
}

struct NewWorker {
    role: Option<String>,
    model: Option<String>,
    model_class: Option<String>,
    worktree: bool,
    budget_usd: Option<f64>,
    idle_timeout: Option<Duration>,
}

impl NewWorker {
    fn given(&self) -> bool {
        self.role.is_some()
            || self.model.is_some()
            || self.model_class.is_some()
            || self.worktree
            || self.budget_usd.is_some()
            || self.idle_timeout.is_some()
    }
}

/// Checks a new worker's launch policy before anything is written: the role exists and runs on
/// baton's own sessions, the route or class resolves, the budget is a positive amount.
fn check_new(ctx: &ProjectContext, name: &str, new: &NewWorker) -> Result<String> {
    let Some(role) = new.role.clone() else {
        bail!("worker {name} does not exist: start it with --role ROLE (and --model or --model-class to choose its route)");
    };
    let spec = baton_roles::find_role(&role_dirs(&ctx.project_root), &role)
        .map_err(|e| anyhow::anyhow!("--role {role}: {e}"))?;
    if let Some(backend) = spec.meta.backend {
        if backend != baton_protocol::role::BackendKind::Baton {
            bail!(
                "--role {role}: it runs on the `{backend}` backend; a worker runs baton's own session: choose a role without `backend`, or `backend: baton`"
            );
        }
    }
    let config = &ctx.config.config;
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
    if let Some(b) = new.budget_usd {
        if !(b.is_finite() && b > 0.0) {
            bail!("--budget-usd {b}: give a positive amount of US dollars");
        }
    }
    if new.idle_timeout.is_some_and(|d| d.is_zero()) {
        bail!("--idle-timeout: give a duration more than 0, e.g. 10m");
    }
    Ok(role)
}

fn start(
    ctx: &ProjectContext,
    state: &StateDir,
    name: &str,
    new: NewWorker,
    fresh: bool,
) -> Result<Exit> {
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
            idle_timeout_secs: new.idle_timeout.map(|d| d.as_secs().max(1)),
            created: now_rfc3339(),
        };
        let mut log = worker::WorkerLog::create(&path, baton_state::Durability::Fsync)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        log.append(&WorkerEvent::Created { spec })
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    } else if let Ok(w) = load(state, name) {
        // A prompt a dead supervisor was working on is given up, never re-sent by itself.
        if w.phase() == Phase::Lost {
            if let Some(p) = w.in_flight() {
                append(
                    state,
                    name,
                    &WorkerEvent::Lost {
                        id: p.id.clone(),
                        at: now_rfc3339(),
                    },
                )?;
                errln!(
                    "baton: worker {name}: the prompt it was working on when it was lost ({}) is not sent again; `baton worker send {name} --retry` sends it",
                    p.id
                );
            }
        }
    }
    let exe = std::env::current_exe().context("cannot find the baton program")?;
    worker::spawn(&exe, state, &ctx.project_root, name, fresh, now_rfc3339())
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    // Started once its supervisor says so (its session set up), or failed if it died first.
    let since = Instant::now();
    loop {
        let w = load(state, name)?;
        match w.phase() {
            Phase::Idle | Phase::Working => {
                outln!(
                    "worker {name} started (role {}, session {})",
                    w.spec.role,
                    w.session.clone().unwrap_or_default()
                );
                return Ok(Exit::Ok);
            }
            Phase::Starting if since.elapsed() < START_WAIT => {}
            Phase::Stopped | Phase::Lost | Phase::Starting | Phase::Retired => {
                let out = worker::output_path(state, name)
                    .ok()
                    .and_then(|p| std::fs::read_to_string(p).ok())
                    .unwrap_or_default();
                let tail: Vec<&str> = out.lines().rev().take(5).collect();
                errln!(
                    "baton: worker {name} did not start ({}): {}",
                    w.phase().as_str(),
                    tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
                );
                return Ok(Exit::Failed);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn append(state: &StateDir, name: &str, ev: &WorkerEvent) -> Result<()> {
    worker::append(state, name, ev).map_err(|e| anyhow::anyhow!("{e}"))
}

#[derive(Serialize)]
struct Answer<'a> {
    worker: &'a str,
    prompt: &'a str,
    answer: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    input_tokens: u64,
    output_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    cost_usd: Option<f64>,
}

fn send(
    state: &StateDir,
    name: &str,
    prompt: Option<String>,
    wait: bool,
    retry: bool,
    json: bool,
) -> Result<Exit> {
    let w = load(state, name)?;
    match w.phase() {
        Phase::Retired => bail!("worker {name} is retired: it takes no prompts"),
        Phase::Stopped | Phase::Lost => bail!(
            "worker {name} is {}: start it again with `baton worker start {name}`",
            w.phase().as_str()
        ),
        _ => {}
    }
    let (text, retry_of) = if retry {
        let retried: Vec<&str> = w
            .prompts
            .iter()
            .filter_map(|p| p.retry_of.as_deref())
            .collect();
        let Some(p) = w
            .prompts
            .iter()
            .rev()
            .find(|p| p.lost && !retried.contains(&p.id.as_str()))
        else {
            bail!("worker {name} has no lost prompt to send again");
        };
        (p.text.clone(), Some(p.id.clone()))
    } else {
        let text = match prompt.as_deref() {
            None => bail!("give the prompt (or `-` to read it from stdin)"),
            Some("-") => {
                let mut s = String::new();
                std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
                    .context("cannot read the prompt from stdin")?;
                s
            }
            Some(t) => t.to_string(),
        };
        if text.trim().is_empty() {
            bail!("the prompt is empty");
        }
        (text, None)
    };
    let id = uuid::Uuid::now_v7().simple().to_string();
    append(
        state,
        name,
        &WorkerEvent::Queued {
            id: id.clone(),
            text,
            retry_of,
            at: now_rfc3339(),
        },
    )?;
    if !wait {
        outln!("{id}");
        return Ok(Exit::Ok);
    }
    loop {
        let w = load(state, name)?;
        let Some(p) = w.prompts.iter().find(|p| p.id == id) else {
            bail!("worker {name}: prompt {id} is not in its log");
        };
        if let (Some(answer), Some(usage)) = (&p.answer, &p.usage) {
            if json {
                let doc = Answer {
                    worker: name,
                    prompt: &id,
                    answer,
                    reason: p.reason.as_deref(),
                    input_tokens: usage.input_tokens,
                    output_tokens: usage.output_tokens,
                    cost_usd: usage.cost_usd,
                };
                outln!("{}", serde_json::to_string(&doc)?);
            } else {
                outln!("{answer}");
            }
            return Ok(if p.reason.is_some() {
                Exit::Failed
            } else {
                Exit::Ok
            });
        }
        if p.lost {
            errln!("baton: worker {name} stopped before answering prompt {id}; `baton worker send {name} --retry` sends it again");
            return Ok(Exit::Failed);
        }
        match w.phase() {
            Phase::Stopped | Phase::Lost | Phase::Retired => {
                errln!(
                    "baton: worker {name} is {} and prompt {id} waits in its log; `baton worker start {name}` delivers it",
                    w.phase().as_str()
                );
                return Ok(Exit::Failed);
            }
            _ => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

#[derive(Serialize)]
struct Row {
    name: String,
    role: String,
    route: String,
    state: &'static str,
    turns: u32,
    tokens: u64,
    cost_usd: f64,
    last_activity: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    worktree: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    session: Option<String>,
    /// The prompt a lost worker was working on.
    #[serde(skip_serializing_if = "Option::is_none")]
    in_flight: Option<String>,
    queued: usize,
}

fn list(state: &StateDir, json: bool) -> Result<Exit> {
    let mut rows = Vec::new();
    for name in worker::list(state) {
        let w = match worker::load(state, &name) {
            Ok(w) => w,
            Err(e) => {
                errln!("baton: worker {name}: {e}");
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
            state: phase.as_str(),
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
    if json {
        outln!("{}", serde_json::to_string(&rows)?);
        return Ok(Exit::Ok);
    }
    if rows.is_empty() {
        outln!("no workers: `baton worker start NAME --role ROLE` starts one");
    }
    for r in &rows {
        let lost = match (&r.in_flight, r.state) {
            (Some(id), "lost") => format!(" · in flight when lost: {id}"),
            _ => String::new(),
        };
        outln!(
            "{}  {}  {}  {}  {} turns · {} tokens · ${:.4} · last {}{}{}",
            r.name,
            r.state,
            r.role,
            r.route,
            r.turns,
            r.tokens,
            r.cost_usd,
            r.last_activity,
            r.worktree
                .as_ref()
                .map(|w| format!(" · worktree {w}"))
                .unwrap_or_default(),
            lost
        );
    }
    Ok(Exit::Ok)
}

/// One line of a worker's log for a person.
fn describe(ev: &WorkerEvent) -> String {
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

fn logs(state: &StateDir, name: &str, follow: bool) -> Result<Exit> {
    let mut shown = 0;
    loop {
        let evs = worker::events(state, name).map_err(|e| anyhow::anyhow!("{e}"))?;
        for ev in &evs[shown.min(evs.len())..] {
            outln!("{}", describe(ev));
        }
        shown = evs.len();
        if !follow {
            return Ok(Exit::Ok);
        }
        let w = load(state, name)?;
        if w.phase() == Phase::Retired {
            return Ok(Exit::Ok);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Stops the supervisor: SIGTERM, then SIGKILL to its group if it does not end; records
/// `worker.stopped` when it could not.
fn stop(state: &StateDir, name: &str) -> Result<bool> {
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
        outln!("worker {name} is {}", phase.as_str());
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
        if let Some(p) = w.in_flight() {
            append(
                state,
                name,
                &WorkerEvent::Lost {
                    id: p.id.clone(),
                    at: now_rfc3339(),
                },
            )?;
        }
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
    outln!("worker {name} stopped; `baton worker start {name}` resumes its session");
    Ok(true)
}

fn retire(state: &StateDir, name: &str) -> Result<Exit> {
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
    match kept {
        Some(k) => outln!("worker {name} retired; its worktree: {k}"),
        None => outln!("worker {name} retired"),
    }
    Ok(Exit::Ok)
}

/// The supervisor: the worker's session with its log as the front end.
fn serve(name: &str, project: PathBuf, fresh: bool) -> Result<Exit> {
    let state = StateDir::for_project(&project);
    let w = load(&state, name)?;
    #[derive(clap::Parser)]
    struct Agent {
        #[command(flatten)]
        args: crate::agent_cmd::AgentArgs,
    }
    let mut argv: Vec<String> = vec![
        "worker".into(),
        "--role".into(),
        w.spec.role.clone(),
        "--cwd".into(),
        w.spec.cwd.display().to_string(),
    ];
    if let Some(m) = &w.spec.model {
        argv.extend(["--model".into(), m.clone()]);
    }
    if let Some(c) = &w.spec.model_class {
        argv.extend(["--model-class".into(), c.clone()]);
    }
    if let (Some(session), false) = (&w.session, fresh) {
        argv.extend(["--resume".into(), session.clone()]);
    }
    let mut agent = <Agent as clap::Parser>::try_parse_from(argv)
        .map_err(|e| anyhow::anyhow!("worker {name}: its launch policy: {e}"))?
        .args;
    agent.worker = Some(crate::worker_serve::WorkerFront {
        name: name.to_string(),
        state: state.clone(),
        budget_usd: w.spec.budget_usd,
        idle_timeout: w.spec.idle_timeout_secs.map(Duration::from_secs),
    });
    let r = crate::agent_cmd::run(agent);
    if let Err(e) = &r {
        // It ended before serving: the log says why.
        let _ = worker::append(
            &state,
            name,
            &WorkerEvent::Stopped {
                reason: StopReason::Failed,
                message: Some(format!("{e:#}")),
                at: now_rfc3339(),
            },
        );
    }
    r
}
