//! `baton flow`: start a Flow from a units file, show Flows, repair a blocked unit, resume an
//! interrupted Flow, abandon one, or clean up what an ended one kept. See docs/flow.md.
//!
//! Exit codes: 0 completed (or a status shown), 1 failed, stopped or abandoned, or a runtime
//! failure (unreadable state, git), 2 refused (bad
//! input, a failed precondition, another Flow active, wrong phase), 4 paused on a blocked unit,
//! 130 interrupted by SIGINT/SIGTERM.
//!
//! Test hook: `BATON_FLOW_CRASH_AT=<event type>[@<unit id>]` makes the process kill itself (SIGKILL)
//! right after that event is durable in the log, as if it were killed at that instant (see
//! `baton_flow::CrashHook`).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use baton_app::exit::Exit;
use baton_app::flow::flow_env_with;
use baton_app::project::{project_context, role_dirs, warn_skipped_roles};
use baton_flow::render::{describe, report};
use baton_flow::{FlowEnv, FlowError, FlowStatus, Notice, Observer, Phase};
use baton_protocol::ModelClass;
use clap::{Args, Subcommand};
use tokio_util::sync::CancellationToken;

use crate::documents::{ErrorDocument, FlowDocument};

#[derive(Args, Debug)]
pub struct FlowArgs {
    #[command(subcommand)]
    action: FlowAction,
}

#[derive(Args, Debug, Clone)]
struct Common {
    /// Print events and the final state as JSON lines on stdout.
    #[arg(long)]
    json: bool,
    /// Directory inside the repository (default: the current one).
    #[arg(long)]
    cwd: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
#[command(defer = true)]
enum FlowAction {
    /// Start a Flow from a units file (JSON, or TOML with a `.toml` name) and drive it.
    Start {
        /// The units file: `{"units": [{id, name, task, model_class?, validation: [{command, args}], review?}]}`.
        units: PathBuf,
        /// Implement each unit as a whole gated workflow instead of one implementer: `build`
        /// (builder → reviewer ‖ hunter → verifier, with remediation), then land them in declared
        /// order as always.
        #[arg(long, value_name = "W")]
        workflow: Option<baton_flow::UnitWorkflow>,
        /// `temporal`: implement the units on worker nodes and land them on `engine.remote`
        /// (docs/temporal.md). Default: `engine.kind`, else local.
        #[arg(long, value_name = "E")]
        engine: Option<baton_protocol::config::EngineKind>,
        #[command(flatten)]
        common: Common,
    },
    /// Show one Flow, or list the Flows of this repository.
    Status {
        /// The Flow's id (a unique prefix is enough); without it, every Flow of the project.
        id: Option<String>,
        /// `temporal`: a Flow that runs on Temporal (its whole id).
        #[arg(long, value_name = "E")]
        engine: Option<baton_protocol::config::EngineKind>,
        #[command(flatten)]
        common: Common,
    },
    /// Repair the blocked unit of the paused Flow once, with guidance.
    Continue {
        /// What the implementer should do differently (it also gets the task, the validation and the evidence).
        #[arg(long)]
        guidance: String,
        /// Model class for this repair (implementer and reviewer); default: the unit's.
        #[arg(long)]
        model_class: Option<String>,
        /// The Flow (default: the repository's active one).
        id: Option<String>,
        /// `temporal`: a Flow on Temporal that failed at a unit: that unit is implemented again
        /// with the guidance, then it and the units after it land (docs/temporal.md).
        #[arg(long, value_name = "E")]
        engine: Option<baton_protocol::config::EngineKind>,
        #[command(flatten)]
        common: Common,
    },
    /// Continue an interrupted Flow from the first unit not yet integrated.
    Resume {
        /// The interrupted Flow's id; without it, the project's active Flow.
        id: Option<String>,
        #[command(flatten)]
        common: Common,
    },
    /// Land one unit a failed Flow kept, without running its implementer again: rebased onto Main
    /// as it is now, validated, reviewed when its unit asks, merged fast-forward.
    Land {
        /// The failed Flow's id (a unique prefix is enough).
        id: String,
        /// The unit to land (`baton flow status ID` lists them).
        unit: String,
        /// `temporal`: a unit of a Flow that ran on Temporal, landed by a worker node on
        /// `engine.remote` (docs/temporal.md).
        #[arg(long, value_name = "E")]
        engine: Option<baton_protocol::config::EngineKind>,
        #[command(flatten)]
        common: Common,
    },
    /// Give up a paused or interrupted Flow; its worktrees and branches are kept.
    Abandon {
        /// The Flow's id; without it, the project's active Flow.
        id: Option<String>,
        /// Why, for the record.
        #[arg(long)]
        reason: Option<String>,
        #[command(flatten)]
        common: Common,
    },
    /// Remove the worktrees and branches an abandoned or failed Flow kept (every such Flow, or ID).
    /// Lists them first and asks; never removes unmerged commits or uncommitted changes without --force.
    Clean {
        /// The Flow (any ended one; default: every abandoned or failed Flow of the repository).
        id: Option<String>,
        /// Remove without asking (required when stdin is not a terminal).
        #[arg(long)]
        yes: bool,
        /// Also remove branches holding commits Main does not have, and worktrees with uncommitted changes.
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        common: Common,
    },
}

pub fn run(args: FlowArgs) -> Result<Exit> {
    match args.action {
        FlowAction::Start {
            units,
            workflow,
            engine,
            common,
        } => {
            let units = match baton_flow::read_units_file(&units) {
                Ok(u) => u,
                Err(e) => return Ok(failed(&common, &FlowError::Input(e))),
            };
            let ctx = project_context(common.cwd.clone())?;
            if crate::temporal_cmd::engine_kind(engine, &ctx.config.config)
                == baton_protocol::config::EngineKind::Temporal
            {
                return crate::temporal_cmd::flow_start(
                    &ctx,
                    units,
                    workflow.is_some(),
                    common.json,
                );
            }
            // A tree that holds exactly what a workflow in place left uncommitted is told apart.
            let state = baton_app::project::state_dir(&ctx);
            if let Some((id, files)) =
                baton_app::workflow::left_uncommitted(&state, &ctx.project_root)
            {
                return Ok(failed(
                    &common,
                    &FlowError::Refused(format!(
                        "the working tree holds the change workflow {id} left uncommitted ({}): review it (`baton log {id}`, or its Changes in `baton serve`), then commit it or stash it, and start the Flow again",
                        files.join(", ")
                    )),
                ));
            }
            warn_skipped_roles(&role_dirs(&ctx.project_root), &["implementer", "reviewer"]);
            drive(&common, |env, cancel| {
                Box::pin(async move { baton_flow::start_as(env, &units, workflow, cancel).await })
            })
        }
        FlowAction::Continue {
            guidance,
            model_class,
            id,
            engine,
            common,
        } => {
            if engine == Some(baton_protocol::config::EngineKind::Temporal) {
                let ctx = project_context(common.cwd.clone())?;
                let Some(id) = id else {
                    anyhow::bail!("--engine temporal: give the Flow's id");
                };
                if model_class.is_some() {
                    anyhow::bail!("--model-class: not on Temporal; set the unit's `model_class` in the units file");
                }
                return crate::temporal_cmd::flow_continue(&ctx, &id, &guidance, common.json);
            }
            let class = match model_class.as_deref().map(str::parse::<ModelClass>) {
                None => None,
                Some(Ok(c)) => Some(c),
                Some(Err(_)) => {
                    errln!("baton: --model-class: use fast, balanced, frontier or fav");
                    return Ok(Exit::Refused);
                }
            };
            drive(&common, |env, cancel| {
                Box::pin(async move {
                    baton_flow::continue_flow(env, id.as_deref(), &guidance, class, cancel).await
                })
            })
        }
        FlowAction::Resume { id, common } => drive(&common, |env, cancel| {
            Box::pin(async move { baton_flow::resume(env, id.as_deref(), cancel).await })
        }),
        FlowAction::Land {
            id,
            unit,
            engine,
            common,
        } => {
            if engine == Some(baton_protocol::config::EngineKind::Temporal) {
                let ctx = project_context(common.cwd.clone())?;
                return crate::temporal_cmd::flow_land(&ctx, &id, &unit, common.json);
            }
            let env = flow_env(&common)?;
            let rt = crate::signals::runtime()?;
            let cancel = CancellationToken::new();
            let result = rt.block_on(async {
                let _signalled = crate::signals::watch_signals(cancel.clone());
                baton_flow::land(&env, &id, &unit, &cancel).await
            });
            match result {
                // The Flow stays failed: the exit says whether the unit landed.
                Ok(s) => {
                    print_final(&common, &s);
                    let landed = s
                        .state
                        .unit_index(&unit)
                        .is_some_and(|i| s.state.units[i].status.is_done());
                    Ok(if landed { Exit::Ok } else { Exit::Failed })
                }
                Err(e) => Ok(failed(&common, &e)),
            }
        }
        FlowAction::Abandon { id, reason, common } => {
            let env = flow_env(&common)?;
            match baton_flow::abandon(&env, id.as_deref(), reason.as_deref()) {
                Ok(s) => {
                    print_final(&common, &s);
                    Ok(Exit::Ok)
                }
                Err(e) => Ok(failed(&common, &e)),
            }
        }
        FlowAction::Status { id, engine, common } => {
            if engine == Some(baton_protocol::config::EngineKind::Temporal) {
                let ctx = project_context(common.cwd.clone())?;
                let Some(id) = id else {
                    anyhow::bail!("--engine temporal: give the Flow's id");
                };
                return crate::temporal_cmd::flow_status(&ctx, &id, common.json);
            }
            status(&common, id.as_deref())
        }
        FlowAction::Clean {
            id,
            yes,
            force,
            common,
        } => clean(&common, id.as_deref(), yes, force),
    }
}

fn flow_env(common: &Common) -> Result<FlowEnv> {
    let ctx = project_context(common.cwd.clone())?;
    let delegate = baton_app::project::delegate_env(&ctx)?;
    let executor = baton_app::project::executor_for(&delegate)?;
    let json_mode = common.json;
    let tty = std::io::stderr().is_terminal();
    let observer: Observer = Arc::new(move |n: Notice<'_>| match n {
        Notice::Event(r) => {
            if json_mode {
                if let Ok(line) = serde_json::to_string(r) {
                    outln!("{line}");
                }
            } else if let Some(line) = describe(r) {
                errln!("baton flow: {line}");
            }
        }
        Notice::Activity {
            unit,
            role,
            activity,
        } => {
            // Tool starts only, and only for a person watching.
            if let (false, true, baton_exec::Activity::ToolStart { tool, path, .. }) =
                (json_mode, tty, activity)
            {
                errln!(
                    "baton flow: {unit}: {role} runs {tool}{}",
                    path.as_deref().map(|p| format!(" {p}")).unwrap_or_default()
                );
            }
        }
    });
    Ok(flow_env_with(delegate, Arc::new(executor), Some(observer)))
}

type FlowFuture<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<FlowStatus, FlowError>> + 'a>>;

/// Runs one driving command with signal handling, prints the outcome, maps it to an exit code.
fn drive<F>(common: &Common, f: F) -> Result<Exit>
where
    F: for<'a> FnOnce(&'a FlowEnv, &'a CancellationToken) -> FlowFuture<'a>,
{
    let env = flow_env(common)?;
    let rt = crate::signals::runtime()?;
    let cancel = CancellationToken::new();
    let (result, signalled) = rt.block_on(async {
        let signalled = crate::signals::watch_signals(cancel.clone());
        let result = f(&env, &cancel).await;
        (result, signalled.is_cancelled())
    });
    match result {
        Ok(s) => {
            print_final(common, &s);
            Ok(match s.phase {
                Phase::Completed => Exit::Ok,
                Phase::Paused => Exit::Waiting,
                Phase::Interrupted if signalled => Exit::Interrupted,
                Phase::Interrupted | Phase::Running | Phase::Failed | Phase::Abandoned => {
                    Exit::Failed
                }
            })
        }
        Err(e) => Ok(failed(common, &e)),
    }
}

/// Reports a Flow command that did not get to do its work: a refusal (bad input, a failed
/// precondition, a held lock, a wrong phase, an unknown Flow) is `flow.refused` and exit 2; any
/// other failure (the state cannot be read or written, git failed) is `flow.error` and exit 1.
fn failed(common: &Common, e: &FlowError) -> Exit {
    let refused = e.is_refusal();
    let code = if refused { Exit::Refused } else { Exit::Failed };
    if common.json {
        let message = e.to_string();
        crate::documents::print(&if refused {
            ErrorDocument::FlowRefused { message }
        } else {
            ErrorDocument::Flow { message }
        });
    }
    errln!("baton: {e}");
    code
}

fn print_final(common: &Common, s: &FlowStatus) {
    if common.json {
        crate::documents::print(&FlowDocument::report(s));
    } else {
        outln!("{}", report(s));
    }
}

fn status(common: &Common, id: Option<&str>) -> Result<Exit> {
    let ctx = project_context(common.cwd.clone())?;
    let flows = match baton_flow::status(&ctx.cwd, id, &[]) {
        Ok(f) => f,
        Err(e) => return Ok(failed(common, &e)),
    };
    if common.json {
        for line in FlowDocument::status_lines(&flows) {
            crate::documents::print(&line);
        }
        return Ok(Exit::Ok);
    }
    let Some(last) = flows.last() else {
        outln!("no Flows in this repository; start one with `baton flow start UNITS_FILE`");
        return Ok(Exit::Ok);
    };
    if id.is_none() && flows.len() > 1 {
        for f in &flows {
            let done = f.state.units.iter().filter(|u| u.status.is_done()).count();
            outln!(
                "{}  {:<11}  {done}/{} unit(s) done  created {}",
                f.state.id,
                f.phase.as_str(),
                f.state.units.len(),
                f.state.created
            );
        }
        outln!();
    }
    // The Flow that matters most: the active one, else the latest.
    let shown = flows
        .iter()
        .rev()
        .find(|f| !f.phase.is_terminal())
        .unwrap_or(last);
    outln!("{}", report(shown));
    Ok(Exit::Ok)
}

/// `baton flow clean`: list, confirm (or `--yes`), remove, report. Exit 0 when done (items kept
/// for safety included), 1 when git refused a removal or the confirmation was declined, 2 when
/// refused (bad or unknown id, a Flow not ended, no terminal to ask and no `--yes`).
fn clean(common: &Common, id: Option<&str>, yes: bool, force: bool) -> Result<Exit> {
    let ctx = project_context(common.cwd.clone())?;
    let plans = match baton_flow::clean_plan(&ctx.cwd, id, force, &[]) {
        Ok(p) => p,
        Err(e) => return Ok(failed(common, &e)),
    };
    let removals: usize = plans.iter().map(|p| p.removals().count()).sum();
    for plan in &plans {
        if common.json {
            crate::documents::print(&FlowDocument::CleanPlan {
                plan: crate::documents::to_value(&plan),
            });
        } else {
            outln!("{}", plan_text(plan));
        }
    }
    if removals == 0 {
        if !common.json {
            outln!(
                "{}",
                if plans.iter().all(|p| p.items.is_empty()) {
                    "nothing to clean"
                } else if force {
                    "nothing to remove"
                } else {
                    "nothing to remove without --force: what is listed above holds work of its own (commits Main lacks, or uncommitted changes); `baton flow clean --yes --force` removes it too"
                }
            );
        }
        return Ok(Exit::Ok);
    }
    if !yes {
        if !std::io::stdin().is_terminal() {
            return Ok(failed(
                common,
                &FlowError::Refused(
                    "stdin is not a terminal, so there is no one to confirm the removal: pass --yes to remove what is listed above; nothing was removed".into(),
                ),
            ));
        }
        errln!("Remove what is listed above? [y/N] ");
        let mut answer = String::new();
        std::io::stdin()
            .read_line(&mut answer)
            .context("cannot read the answer from stdin")?;
        if !matches!(answer.trim(), "y" | "Y" | "yes" | "Yes" | "YES") {
            errln!("baton: nothing was removed");
            return Ok(Exit::Failed);
        }
    }
    let json_mode = common.json;
    let observer: Observer = Arc::new(move |n: Notice<'_>| match n {
        Notice::Event(r) => {
            if json_mode {
                if let Ok(line) = serde_json::to_string(r) {
                    outln!("{line}");
                }
            }
        }
        Notice::Activity { .. } => {}
    });
    let mut code = Exit::Ok;
    for plan in plans.iter().filter(|p| p.removals().next().is_some()) {
        let confirmed: Vec<String> = plan.removals().map(|i| i.unit.clone()).collect();
        match baton_flow::clean(&ctx.cwd, &plan.id, &confirmed, force, &[], Some(&observer)) {
            Ok((s, items)) => {
                // Every item here was confirmed for removal: one kept is one git refused (or
                // one that stopped being safe to remove since the listing).
                if items.iter().any(|i| i.kept.is_some()) {
                    code = Exit::Failed;
                }
                if json_mode {
                    crate::documents::print(&FlowDocument::report(&s));
                } else {
                    for i in &items {
                        match &i.kept {
                            None => outln!("Flow {}: removed {}", s.state.id, item_text(i)),
                            Some(why) => outln!("Flow {}: kept {}: {why}", s.state.id, i.unit),
                        }
                    }
                }
            }
            Err(e) => code = code.max(failed(common, &e)),
        }
    }
    Ok(code)
}

/// `unit a: worktree PATH, branch NAME`.
fn item_text(i: &baton_flow::CleanItem) -> String {
    let mut parts = Vec::new();
    if let Some(w) = &i.worktree {
        parts.push(format!("worktree {}", w.display()));
    }
    if let Some(b) = &i.branch {
        parts.push(format!("branch {b}"));
    }
    format!("unit {}: {}", i.unit, parts.join(", "))
}

fn plan_text(plan: &baton_flow::CleanPlan) -> String {
    let mut out = format!(
        "Flow {} ({}; {} is at {}):",
        plan.id,
        plan.phase.as_str(),
        plan.main_branch,
        plan.main_head.get(..12).unwrap_or(&plan.main_head)
    );
    if plan.items.is_empty() {
        out.push_str("\n  nothing left to remove");
    }
    for i in &plan.items {
        match &i.kept {
            None => out.push_str(&format!("\n  remove {}", item_text(i))),
            Some(why) => out.push_str(&format!("\n  keep   {} — {why}", item_text(i))),
        }
    }
    out
}
