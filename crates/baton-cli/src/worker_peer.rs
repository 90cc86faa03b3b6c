//! The supervisor of a managed worker whose role runs on a peer CLI (`pi`, `claude`): each prompt
//! is one launch of that CLI, as `delegate_task` launches a child (its role, route, tools and
//! program), resuming the CLI's own session so the worker keeps its conversation — pi's
//! `--session-dir` with `--continue`, Claude Code's `--resume ID` — one prompt at a time, in the
//! log's order, each recorded as delivered before the launch and answered once it ends.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use baton_app::exit::Exit;
use baton_app::project::{now_rfc3339, ProjectContext};
use baton_exec::delegate::{child_route, plan_launch, LaunchPlan, RouteChoice};
use baton_exec::executor::OutputBudget;
use baton_exec::types::ChildStatus;
use baton_exec::worker::{self, StopReason, TurnUsage, WorkerEvent, WorkerState};
use baton_protocol::role::{BackendKind, RoleSpec};
use baton_state::StateDir;
use tokio_util::sync::CancellationToken;

const POLL: Duration = Duration::from_millis(100);

fn log(state: &StateDir, name: &str, ev: &WorkerEvent) {
    if let Err(e) = worker::append(state, name, ev) {
        errln!("baton worker {name}: cannot write its log: {e}");
    }
}

/// One watch for the supervisor's life (closing an inotify instance is slow), set up before the
/// log is first read so that a line landing in between still wakes the wait, and the follower
/// that reads only what the log gained.
fn follow(state: &StateDir, name: &str) -> Result<(Arc<worker::LogWatch>, worker::Follower)> {
    Ok((
        Arc::new(worker::LogWatch::new(&worker::log_path(state, name)?)),
        worker::Follower::new(state, name)?,
    ))
}

/// Serves worker `name` on `backend` until it is stopped.
pub fn serve(
    ctx: &ProjectContext,
    state: &StateDir,
    w: &WorkerState,
    role: RoleSpec,
    backend: BackendKind,
    fresh: bool,
) -> Result<Exit> {
    let env = Arc::new(baton_app::project::delegate_env(ctx)?);
    let executor = baton_app::project::executor_for(&env)?;
    let runtime = crate::signals::runtime()?;
    runtime.block_on(run(state, w, role, backend, fresh, env, executor))
}

async fn run(
    state: &StateDir,
    w: &WorkerState,
    role: RoleSpec,
    backend: BackendKind,
    fresh: bool,
    env: Arc<baton_exec::delegate::DelegateEnv>,
    executor: baton_exec::executor::Executor,
) -> Result<Exit> {
    let name = w.spec.name.clone();
    let cancel = CancellationToken::new();
    let _signals = crate::signals::watch_signals(cancel.clone());
    // The CLI's session: pi keeps it in a folder of the worker's; Claude Code names it.
    let dir = state
        .workers()
        .join(format!("{name}.sessions"))
        .join(match (&w.session, fresh) {
            (Some(s), false) if s.starts_with("pi:") => s.trim_start_matches("pi:").to_string(),
            _ => uuid::Uuid::now_v7().simple().to_string(),
        });
    std::fs::create_dir_all(&dir)?;
    let session = match backend {
        BackendKind::Pi => format!(
            "pi:{}",
            dir.file_name().unwrap_or_default().to_string_lossy()
        ),
        _ => match (&w.peer_session, fresh) {
            (Some(id), false) => format!("claude:{id}"),
            _ => "claude:new".to_string(),
        },
    };
    let mut resume: Option<String> = match backend {
        BackendKind::Pi if !fresh && w.totals().0 > 0 => Some("continue".into()),
        BackendKind::Claude if !fresh => w.peer_session.clone(),
        _ => None,
    };
    let (pid, start_time) = worker::me();
    log(
        state,
        &name,
        &WorkerEvent::Started {
            pid,
            start_time,
            session,
            resumed: resume.is_some(),
            at: now_rfc3339(),
        },
    );
    let (_, _, mut spent) = w.totals();
    let (watch, mut follower) = follow(state, &name)?;
    let idle = w.spec.idle_timeout_secs.map(Duration::from_secs);
    let mut since = Instant::now();
    let peer = Peer {
        state,
        w,
        name,
        role,
        backend,
        dir,
        env,
        executor,
        cancel,
    };
    let reason = loop {
        if peer.cancel.is_cancelled() {
            break StopReason::Asked;
        }
        if w.spec.budget_usd.is_some_and(|b| spent >= b) {
            break StopReason::Budget;
        }
        let Ok(now) = follower.refresh() else {
            break StopReason::Asked;
        };
        let Some(p) = now.pending().next().map(|p| (p.id.clone(), p.text.clone())) else {
            if idle.is_some_and(|t| since.elapsed() >= t) {
                break StopReason::Idle;
            }
            let w = watch.clone();
            let wake = tokio::task::spawn_blocking(move || w.wait(POLL));
            tokio::select! {
                _ = peer.cancel.cancelled() => {}
                _ = wake => {}
            }
            continue;
        };
        let (id, text) = p;
        if let Some(stop) = peer.answer(id, text, &mut resume, &mut spent).await {
            break stop;
        }
        since = Instant::now();
    };
    log(
        state,
        &peer.name,
        &WorkerEvent::Stopped {
            reason,
            message: None,
            at: now_rfc3339(),
        },
    );
    Ok(Exit::Ok)
}

/// A worker served on a peer CLI: its log, its role and backend, the folder of the CLI's
/// session, and what launches the CLI.
struct Peer<'a> {
    state: &'a StateDir,
    w: &'a WorkerState,
    name: String,
    role: RoleSpec,
    backend: BackendKind,
    dir: std::path::PathBuf,
    env: Arc<baton_exec::delegate::DelegateEnv>,
    executor: baton_exec::executor::Executor,
    cancel: CancellationToken,
}

impl Peer<'_> {
    /// Answers prompt `id` with one launch of the CLI, recorded as delivered before and answered
    /// after; `resume` (the session to continue) and `spent` carry over to the next prompt.
    /// `Some` when a stop cut the launch short: the prompt is recorded as lost.
    async fn answer(
        &self,
        id: String,
        text: String,
        resume: &mut Option<String>,
        spent: &mut f64,
    ) -> Option<StopReason> {
        let (state, name, backend) = (self.state, &self.name, self.backend);
        log(
            state,
            name,
            &WorkerEvent::Delivered {
                id: id.clone(),
                at: now_rfc3339(),
            },
        );
        let mut label = String::new();
        let result = self.launch(text, resume.as_deref(), &mut label).await;
        match result {
            Ok(r) if self.cancel.is_cancelled() && r.status != ChildStatus::Success => {
                log(
                    state,
                    name,
                    &WorkerEvent::Lost {
                        id,
                        at: now_rfc3339(),
                    },
                );
                return Some(StopReason::Asked);
            }
            Ok(r) => {
                let cost = r.cost_usd.or_else(|| {
                    baton_model::routes::cost_of_label(&self.env.config.prices, &label, &r.usage)
                });
                *spent += cost.unwrap_or(0.0);
                if r.session_id.is_some() {
                    resume.clone_from(&r.session_id);
                } else if backend == BackendKind::Pi && r.status == ChildStatus::Success {
                    *resume = Some("continue".into());
                }
                let failed = r.status != ChildStatus::Success;
                log(
                    state,
                    name,
                    &WorkerEvent::Answered {
                        id,
                        answer: r.output.clone(),
                        reason: failed.then(|| {
                            r.error_message
                                .clone()
                                .unwrap_or_else(|| format!("the {} child failed", backend.as_str()))
                        }),
                        usage: TurnUsage {
                            input_tokens: r.usage.input_tokens,
                            output_tokens: r.usage.output_tokens,
                            cost_usd: cost,
                        },
                        peer_session: r.session_id.clone(),
                        at: now_rfc3339(),
                    },
                );
            }
            Err(e) => {
                log(
                    state,
                    name,
                    &WorkerEvent::Answered {
                        id,
                        answer: String::new(),
                        reason: Some(e),
                        usage: TurnUsage {
                            input_tokens: 0,
                            output_tokens: 0,
                            cost_usd: None,
                        },
                        peer_session: None,
                        at: now_rfc3339(),
                    },
                );
            }
        }
        None
    }

    /// Launches the CLI once with `text` as its task, continuing the session `resume` names, and
    /// runs it to its end; its result, or why it could not run. `label` gets the launch's model.
    async fn launch(
        &self,
        text: String,
        resume: Option<&str>,
        label: &mut String,
    ) -> Result<baton_exec::types::ChildResult, String> {
        let (env, role, backend) = (&self.env, &self.role, self.backend);
        let choice = RouteChoice {
            model: self.w.spec.model.clone(),
            model_class: self
                .w
                .spec
                .model_class
                .as_deref()
                .and_then(|c| c.parse().ok()),
            thinking: None,
        };
        let prepared = child_route(env, backend, &choice, role).and_then(|route| {
            plan_launch(
                env,
                LaunchPlan {
                    role,
                    backend,
                    route,
                    task: text,
                    cwd: self.w.spec.cwd.clone(),
                    role_file: None,
                    extra_env: vec![("BATON_WORKER".into(), self.name.clone())],
                },
            )
        });
        match prepared {
            Err(e) => Err(e.to_string()),
            Ok(mut launch) => {
                match worker::continue_peer_session(&mut launch, backend, &self.dir, resume) {
                    Err(e) => Err(e),
                    Ok(()) => {
                        label.clone_from(&launch.model_label);
                        let budget = OutputBudget::new(env.output_cap);
                        self.executor
                            .run(
                                move || async move { Ok(launch) },
                                env.limits,
                                &budget,
                                &self.cancel,
                                &mut |_| {},
                            )
                            .await
                            .map_err(|e| e.to_string())
                    }
                }
            }
        }
    }
}
