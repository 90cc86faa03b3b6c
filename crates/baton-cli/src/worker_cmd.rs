//! `baton worker`: managed workers — named, long-lived sessions that are prompted again and
//! again, survive restarts and are reconciled after a crash (`baton_exec::worker` has the log;
//! `worker_serve` is the supervisor's session). See docs/workers.md.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, Result};
use baton_app::exit::Exit;
use baton_app::project::{now_rfc3339, project_context, state_dir};
use baton_app::workers::{self, load, NewWorker, Prompt, Sent};
use baton_exec::worker::{self, Phase, StopReason, WorkerEvent};
use baton_state::StateDir;
use clap::{Args, Subcommand};

#[derive(Args, Debug)]
pub struct WorkerArgs {
    #[command(subcommand)]
    action: WorkerAction,
    /// Directory inside the project (default: the current one).
    #[arg(long, global = true)]
    cwd: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
#[command(defer = true)]
enum WorkerAction {
    /// Start a worker (a new one with --role), or start again a stopped or lost one: it resumes
    /// its session (--fresh starts a new one).
    Start {
        /// The worker's name (letters, digits, `-`, `_`, `.`; it starts with a letter or digit).
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
        /// The worker.
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
        /// Print one JSON document (an array of workers).
        #[arg(long)]
        json: bool,
    },
    /// Print a worker's log; --follow keeps printing what is appended.
    Logs {
        /// The worker.
        name: String,
        /// Keep printing what is appended, until the worker is retired.
        #[arg(long)]
        follow: bool,
    },
    /// Stop a worker's supervisor; its session and log are kept (`start` resumes it).
    Stop {
        /// The worker.
        name: String,
    },
    /// Stop a worker for good and finalize its worktree (kept when it holds work).
    Retire {
        /// The worker.
        name: String,
    },
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
                idle_timeout_secs: idle_timeout.map(|d| d.0.as_secs().max(1)),
            };
            if idle_timeout.is_some_and(|d| d.0.is_zero()) {
                anyhow::bail!("--idle-timeout: give a duration more than 0, e.g. 10m");
            }
            let exe = baton_process::own_program().context("cannot find the baton program")?;
            let s = workers::start(&ctx, &state, &exe, &name, new, fresh)?;
            if let Some(p) = &s.gave_up {
                errln!(
                    "baton: worker {name}: the prompt it was working on when it was lost ({p}) is not sent again; `baton worker send {name} --retry` sends it"
                );
            }
            outln!(
                "worker {name} started (role {}, session {}{})",
                s.role,
                s.session,
                if s.resumed { ", resumed" } else { "" }
            );
            Ok(Exit::Ok)
        }
        WorkerAction::Send {
            name,
            prompt,
            no_wait,
            wait: _,
            retry,
            json,
        } => {
            let prompt = if retry {
                Prompt::Retry
            } else {
                Prompt::Text(match prompt.as_deref() {
                    None => anyhow::bail!("give the prompt (or `-` to read it from stdin)"),
                    Some("-") => {
                        let mut s = String::new();
                        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
                            .context("cannot read the prompt from stdin")?;
                        s
                    }
                    Some(t) => t.to_string(),
                })
            };
            let sent = workers::send(&state, &name, prompt, !no_wait)?;
            if json {
                outln!("{}", serde_json::to_string(&sent)?);
            }
            Ok(match sent {
                Sent::Answered(a) => {
                    if !json {
                        outln!("{}", a.answer);
                    }
                    if a.reason.is_some() {
                        Exit::Failed
                    } else {
                        Exit::Ok
                    }
                }
                Sent::Queued { prompt, .. } => {
                    if !json {
                        outln!("{prompt}");
                    }
                    Exit::Ok
                }
                Sent::Lost { prompt, .. } => {
                    errln!("baton: worker {name} stopped before answering prompt {prompt}; `baton worker send {name} --retry` sends it again");
                    Exit::Failed
                }
                Sent::Waiting { prompt, state, .. } => {
                    errln!("baton: worker {name} is {state} and prompt {prompt} waits in its log; `baton worker start {name}` delivers it");
                    Exit::Failed
                }
            })
        }
        WorkerAction::List { json } => list(&state, json),
        WorkerAction::Logs { name, follow } => logs(&state, &name, follow),
        WorkerAction::Stop { name } => {
            if workers::stop(&state, &name)? {
                outln!("worker {name} stopped; `baton worker start {name}` resumes its session");
            } else {
                outln!("worker {name} is {}", load(&state, &name)?.phase().as_str());
            }
            Ok(Exit::Ok)
        }
        WorkerAction::Retire { name } => {
            match workers::retire(&state, &name)? {
                Some(k) => outln!("worker {name} retired; its worktree: {k}"),
                None => outln!("worker {name} retired"),
            }
            Ok(Exit::Ok)
        }
        WorkerAction::Serve { .. } => unreachable!("handled above"),
    }
}

/// `baton worker list`: each worker's state, role, route, turns, tokens and cost.
fn list(state: &StateDir, json: bool) -> Result<Exit> {
    let (rows, damaged) = workers::list(state);
    for d in &damaged {
        errln!("baton: {d}");
    }
    if json {
        outln!("{}", serde_json::to_string(&rows)?);
        return Ok(Exit::Ok);
    }
    if rows.is_empty() {
        outln!("no workers: `baton worker start NAME --role ROLE` starts one");
    }
    for r in &rows {
        let lost = match (&r.in_flight, r.state.as_str()) {
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

fn logs(state: &StateDir, name: &str, follow: bool) -> Result<Exit> {
    let mut shown = 0;
    loop {
        let evs = worker::events(state, name).map_err(|e| anyhow::anyhow!("{e}"))?;
        for ev in &evs[shown.min(evs.len())..] {
            outln!("{}", workers::describe(ev));
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

/// The supervisor: the worker's session with its log as the front end.
fn serve(name: &str, project: PathBuf, fresh: bool) -> Result<Exit> {
    let state = StateDir::for_project(&project);
    let w = load(&state, name)?;
    // A role on a peer CLI: one launch of it per prompt, resuming its own session.
    let ctx = project_context(Some(w.spec.cwd.clone()))?;
    let role = baton_roles::find_role(
        &baton_app::project::role_dirs(&ctx.project_root),
        &w.spec.role,
    )?;
    let backend = workers::backend_of(&ctx, &role);
    if backend != baton_protocol::role::BackendKind::Baton {
        let r = crate::worker_peer::serve(&ctx, &state, &w, role, backend, fresh);
        return record_failure(&state, name, r);
    }
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
    record_failure(&state, name, crate::agent_cmd::run(agent))
}

/// A supervisor that ended with an error (before or while serving): the log says why.
fn record_failure(state: &StateDir, name: &str, r: Result<Exit>) -> Result<Exit> {
    if let Err(e) = &r {
        let _ = worker::append(
            state,
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
