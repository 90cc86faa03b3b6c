//! `baton run "request"` and `baton resume [WF] [--answer TEXT]`: a workflow driven by the host
//! (baton_workflow::run) from routing to a verified brief, a checkpoint or a stop.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;
use baton_app::exit::Exit;
use baton_app::project::{project_context, ProjectContext};
use baton_app::workflow::{answer_document, pick, workflow_env};
use baton_workflow::route::{route, route_as, WorkflowKind};
use baton_workflow::run::{self, Observer, Outcome, RunEnv, RunError, StartOptions};
use baton_workflow::store::WorkflowStore;
use clap::Args;
use tokio_util::sync::CancellationToken;

#[derive(Args, Debug, Clone)]
struct Common {
    /// Directory inside the project (default: the current one).
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// Print the outcome as one JSON document on stdout.
    #[arg(long)]
    json: bool,
    /// Stop at a checkpoint before a dispatch that would take the spend past this many USD.
    #[arg(long, value_name = "USD")]
    budget_usd: Option<f64>,
    /// The same for tokens (input plus output).
    #[arg(long, value_name = "N")]
    budget_tokens: Option<u64>,
    /// Save every baton child's model traffic under DIR, one cassette per dispatch
    /// (`<phase>-<attempt>.json`).
    #[arg(long, value_name = "DIR", conflicts_with = "replay")]
    record: Option<PathBuf>,
    /// Replay a recording made with --record: no model is called, and a dispatch the recording
    /// does not hold stops the workflow.
    #[arg(long, value_name = "DIR")]
    replay: Option<PathBuf>,
    /// Where the workflow runs: `local` (this machine) or `temporal` (worker nodes polling
    /// `engine.task_queue`; docs/temporal.md). Default: `engine.kind`, else local.
    #[arg(long, value_name = "E")]
    engine: Option<baton_protocol::config::EngineKind>,
    /// Return after this many dispatch batches, as interrupted (a worker node's step).
    #[arg(long, value_name = "N", hide = true)]
    steps: Option<u32>,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// What to do, in words: routed to BUILD, DEBUG, PLAN, REVIEW or ORIENT. With --plan it is
    /// optional (the plan's title stands for it).
    #[arg(required_unless_present = "plan")]
    request: Option<String>,
    /// BUILD the phases of this plan file in order, each built, reviewed and verified before the
    /// next (see `baton plan check`). A plan approved and then edited is refused.
    #[arg(long, value_name = "FILE", conflicts_with = "trivial")]
    plan: Option<PathBuf>,
    /// BUILD: do not build the plan `.baton/memory/activeContext.md ## References` names (the
    /// last PLAN's, until it is built and verified); build the request alone.
    #[arg(long, conflicts_with = "plan")]
    no_plan: bool,
    /// Run this workflow instead of routing (BUILD, DEBUG, PLAN, REVIEW, ORIENT, TRIAGE,
    /// CODEBASE-HEALTH).
    #[arg(long, value_name = "W")]
    workflow: Option<WorkflowKind>,
    /// BUILD: the reduced graph (builder → verifier → memory) for a one-file change.
    #[arg(long)]
    trivial: bool,
    /// BUILD: work in an isolated git worktree on branch `baton/<id>`, then offer merge, keep or
    /// discard after the final verification (default: asked on a terminal, taken under
    /// AUTO_PROCEED, else declined).
    #[arg(long, conflicts_with = "no_worktree")]
    worktree: bool,
    /// BUILD: work in the project's own working tree without asking.
    #[arg(long)]
    no_worktree: bool,
    /// DEBUG: one group of failures with the files its own investigator owns, as
    /// DOMAIN=FILE[,FILE...] (paths from the project's top); repeat it for each group, two to
    /// eight. Groups that share a file are merged (they are not independent); the investigators
    /// run one after another, each told to edit only its files, and a file two of them edited is
    /// reconciled before the review. Needs a git repository and the local engine.
    #[arg(long, value_name = "DOMAIN=FILES")]
    debug_group: Vec<baton_workflow::run::fan_out::Lane>,
    /// Record the workflow under this id (a worker node's first step: the Temporal workflow's).
    #[arg(long, value_name = "ID", hide = true)]
    id: Option<String>,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
pub struct ResumeArgs {
    /// The workflow (an id or a unique prefix; default: the only one not finished).
    id: Option<String>,
    /// The answer to the checkpoint the workflow waits on, kept word for word.
    #[arg(long)]
    answer: Option<String>,
    #[command(flatten)]
    common: Common,
}

/// The project's workflow environment; `ctx` is read once per command (reading it again would
/// repeat its warnings, and its trust question on a terminal).
fn env(ctx: &ProjectContext, common: &Common) -> Result<RunEnv> {
    let delegate = baton_app::project::delegate_env(ctx)?;
    let executor = baton_app::project::executor_for(&delegate)?;
    for (flag, dir) in [("--record", &common.record), ("--replay", &common.replay)] {
        if let Some(d) = dir {
            if !d.is_dir() {
                anyhow::bail!(
                    "{flag} {}: the folder does not exist: create it (--record) or give a recording's folder (--replay)",
                    d.display()
                );
            }
        }
    }
    let abs = |d: &Option<PathBuf>| {
        d.as_ref()
            .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone()))
    };
    let json = common.json;
    let observer: Observer = Arc::new(move |line: &str| {
        if !json {
            errln!("baton run: {}", baton_text::sanitize_line(line));
        }
    });
    let mut env = workflow_env(delegate, Arc::new(executor), Some(observer));
    if common.steps == Some(0) {
        anyhow::bail!("--steps 0: give at least one dispatch batch");
    }
    env.max_batches = common.steps;
    env.record = abs(&common.record);
    env.replay = abs(&common.replay);
    Ok(env)
}

fn check_budget(common: &Common) -> Result<()> {
    if let Some(b) = common.budget_usd {
        if !(b.is_finite() && b > 0.0) {
            anyhow::bail!(
                "--budget-usd {b}: give a positive amount of US dollars, e.g. --budget-usd 2.50"
            );
        }
    }
    if common.budget_tokens == Some(0) {
        anyhow::bail!(
            "--budget-tokens 0: give a positive number of tokens, e.g. --budget-tokens 200000"
        );
    }
    Ok(())
}

pub fn run(args: RunArgs) -> Result<Exit> {
    let request = match (&args.request, &args.plan) {
        (Some(r), _) if !r.trim().is_empty() => r.clone(),
        (_, Some(plan)) => plan_request(plan),
        _ => anyhow::bail!(
            "the request is empty: say what to do, e.g. baton run \"add a --verbose flag\""
        ),
    };
    check_budget(&args.common)?;
    if let (Some(w), Some(_)) = (args.workflow, &args.plan) {
        if w != WorkflowKind::Build {
            anyhow::bail!(
                "--plan runs a BUILD, not {w}: drop --workflow, or give --workflow BUILD"
            );
        }
    }
    let decision = match (args.workflow, &args.plan) {
        (_, Some(_)) => route_as(&request, WorkflowKind::Build),
        (Some(w), None) => route_as(&request, w),
        (None, None) => route(&request),
    };
    let ctx = project_context(args.common.cwd.clone())?;
    {
        let kind = crate::temporal_cmd::engine_kind(args.common.engine, &ctx.config.config);
        // ORIENT only reads and answers inline: it keeps no record to make durable, so it runs
        // here whatever the engine.
        let orient = decision.workflow == WorkflowKind::Orient;
        if kind == baton_protocol::config::EngineKind::Temporal && orient {
            errln!("baton run: ORIENT only reads and keeps no record: it answers here, not on Temporal");
        }
        if kind == baton_protocol::config::EngineKind::Temporal && !orient {
            if !args.debug_group.is_empty() {
                anyhow::bail!(
                    "--debug-group runs with the local engine only: drop it, or give --engine local"
                );
            }
            if args.common.record.is_some() || args.common.replay.is_some() {
                anyhow::bail!(
                    "--record and --replay run with the local engine only (on Temporal the agents' model calls are made on the worker nodes, which keep no recording for this starter): drop them, or give --engine local"
                );
            }
            errln!("{}", baton_text::sanitize_line(&decision.headline()));
            return crate::temporal_cmd::run(
                &ctx,
                crate::temporal_cmd::StartRequest {
                    request,
                    kind: decision.workflow,
                    trivial: args.trivial,
                    budget_usd: args.common.budget_usd,
                    budget_tokens: args.common.budget_tokens,
                    json: args.common.json,
                    plan: args.plan.clone(),
                },
            );
        }
    }
    let env = env(&ctx, &args.common)?;
    let rt = crate::signals::runtime()?;
    let decision = if decision.conflict() && args.workflow.is_none() && args.plan.is_none() {
        let (d, note) = rt.block_on(run::tiebreak(&env.delegate.config, &request, decision));
        if let Some(note) = note {
            errln!("baton run: {}", baton_text::sanitize_line(&note));
        }
        d
    } else {
        decision
    };
    if !args.debug_group.is_empty() && decision.workflow != WorkflowKind::Debug {
        anyhow::bail!(
            "--debug-group: only a DEBUG fans out to scoped investigators, and this request runs {}: drop --debug-group, or give --workflow DEBUG",
            decision.workflow
        );
    }
    errln!("{}", baton_text::sanitize_line(&decision.headline()));
    if decision.workflow != WorkflowKind::Orient {
        let store = baton_workflow::store::WorkflowStore::new(env.delegate.state.clone());
        match baton_app::workflow::pending(&store, &request, decision.workflow.as_str()) {
            Err(e) => anyhow::bail!("{e}"),
            Ok(Some(note)) => errln!("baton run: {}", baton_text::sanitize_line(&note)),
            Ok(None) => {}
        }
    }
    let cancel = CancellationToken::new();
    if decision.workflow == WorkflowKind::Orient {
        let result = rt.block_on(async {
            let signalled = crate::signals::watch_signals(cancel.clone());
            let r = run::orient(&env, &request, &cancel).await;
            (r, signalled.is_cancelled())
        });
        return match result {
            (Ok(text), _) => {
                if args.common.json {
                    crate::documents::print(&answer_document(&text));
                } else {
                    outln!("{}", text.trim_end());
                }
                Ok(Exit::Ok)
            }
            (Err(_), true) => Ok(Exit::Interrupted),
            (Err(e), false) => Ok(failed(&args.common, &e)),
        };
    }
    let isolate = match (args.worktree, args.no_worktree) {
        (true, _) => Some(true),
        (_, true) => Some(false),
        _ if decision.workflow == WorkflowKind::Build
            && !args.trivial
            && !args.common.json
            && (args.plan.is_some()
                || baton_workflow::route::scope::assess(&request)
                    == baton_workflow::route::scope::Scope::Standard) =>
        {
            ask_worktree()
        }
        _ => None,
    };
    let opts = StartOptions {
        request: request.clone(),
        kind: decision.workflow,
        trivial: args.trivial,
        budget_usd: args.common.budget_usd,
        budget_tokens: args.common.budget_tokens,
        isolate,
        plan: args.plan.clone(),
        assess_scope: true,
        id: args.id.clone(),
        referenced_plan: !args.no_plan,
        fan_out: args.debug_group.clone(),
    };
    let (result, signalled) = rt.block_on(async {
        let signalled = crate::signals::watch_signals(cancel.clone());
        let r = run::start(&env, &opts, &cancel).await;
        (r, signalled.is_cancelled())
    });
    Ok(report(&args.common, result, signalled))
}

/// The request a planned BUILD stands for when none is given: the plan's title, else its path.
fn plan_request(plan: &std::path::Path) -> String {
    std::fs::read_to_string(plan)
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.trim().strip_prefix("# ").map(|h| h.trim().to_string()))
        })
        .filter(|t| !t.is_empty())
        .map(|t| format!("Build the plan: {t}"))
        .unwrap_or_else(|| format!("Build the plan {}", plan.display()))
}

/// The worktree offer, on a terminal: `Some(answer)`; `None` elsewhere (the runner then takes it
/// only under AUTO_PROCEED).
fn ask_worktree() -> Option<bool> {
    use std::io::{BufRead, IsTerminal, Write};
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return None;
    }
    let mut err = std::io::stderr();
    let _ = write!(
        err,
        "Run this BUILD in an isolated git worktree (branch baton/<id>; merge, keep or discard at the end)? [Y/n] "
    );
    let _ = err.flush();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).ok()?;
    Some(!matches!(line.trim().to_lowercase().as_str(), "n" | "no"))
}

pub fn resume(args: ResumeArgs) -> Result<Exit> {
    check_budget(&args.common)?;
    let ctx = project_context(args.common.cwd.clone())?;
    {
        let kind = crate::temporal_cmd::engine_kind(args.common.engine, &ctx.config.config);
        if kind == baton_protocol::config::EngineKind::Temporal {
            let Some(id) = args.id.as_deref() else {
                anyhow::bail!("--engine temporal: give the workflow's id (`baton resume --engine temporal ID`)");
            };
            return crate::temporal_cmd::resume(&ctx, id, args.answer.as_deref(), args.common.json);
        }
    }
    let env = env(&ctx, &args.common)?;
    let store = WorkflowStore::new(env.delegate.state.clone());
    let id = match pick(&store, args.id.as_deref()) {
        Ok(id) => id,
        Err(e) => return Ok(failed(&args.common, &RunError::Refused(e))),
    };
    let rt = crate::signals::runtime()?;
    let cancel = CancellationToken::new();
    let (result, signalled) = rt.block_on(async {
        let signalled = crate::signals::watch_signals(cancel.clone());
        let r = run::resume(
            &env,
            &id,
            args.answer.as_deref(),
            args.common.budget_usd,
            args.common.budget_tokens,
            &cancel,
        )
        .await;
        (r, signalled.is_cancelled())
    });
    Ok(report(&args.common, result, signalled))
}

fn failed(common: &Common, e: &RunError) -> Exit {
    crate::run_report::failed_json(common.json, e)
}

fn report(common: &Common, result: Result<Outcome, RunError>, signalled: bool) -> Exit {
    crate::run_report::report_outcome(common.json, result, signalled, false)
}
