//! `baton task`: delegate work to child agents (single, parallel, chain; foreground or background).

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use baton_app::exit::{AfterWorkBegan as _, Exit};
use baton_app::project::{
    delegate_env, executor_for, project_context, state_dir, warn_skipped_roles, ProjectContext,
};
use baton_app::tasks::{cancel_document, poll_wait, start_background, WaitEnd};
use baton_exec::background::{self, Phase, TaskEvent};
use baton_exec::delegate::{
    derive_name, parse_request, render_report, render_usage, resolve_roles, run_delegation,
    DelegateReport, DelegateRequest, EntryEvent, Progress,
};
use clap::{Args, Subcommand};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::documents::{TaskDocument, TaskStatusDocument, TaskUnreadable};
use crate::signals::watch_signals;
use crate::task_status_view::Status;

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct TaskArgs {
    #[command(subcommand)]
    action: Option<TaskAction>,
    /// Role of a single task.
    #[arg(long)]
    role: Option<String>,
    /// Name of a single task (under 30 characters; default: a slug of the role and the task's
    /// first words).
    #[arg(long)]
    name: Option<String>,
    /// Route `provider/model[:thinking]` for a single task (overrides --model-class).
    #[arg(long)]
    model: Option<String>,
    /// Model class for a single task.
    #[arg(long)]
    model_class: Option<String>,
    /// Thinking level for a single task.
    #[arg(long)]
    thinking: Option<String>,
    /// Run the entries of FILE (JSON or TOML) in parallel.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["chain", "role", "name", "model", "model_class", "thinking", "task"])]
    parallel: Option<PathBuf>,
    /// Run the entries of FILE (JSON or TOML) as a chain.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["parallel", "role", "name", "model", "model_class", "thinking", "task"])]
    chain: Option<PathBuf>,
    /// Return an id at once and run the work in a detached supervisor.
    #[arg(long)]
    background: bool,
    /// Print progress events and the final report as JSON lines.
    #[arg(long)]
    json: bool,
    /// Working directory (default: current).
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// The task of a single delegation; `-` reads stdin.
    task: Option<String>,
}

#[derive(Subcommand, Debug)]
#[command(defer = true)]
enum TaskAction {
    /// Show a background task (or all of them).
    Status {
        /// One task's id (a unique prefix is enough); without it, every task of the project.
        id: Option<String>,
        /// One JSON document instead of text.
        #[arg(long)]
        json: bool,
        /// A folder inside the project (default: the current one).
        #[arg(long)]
        cwd: Option<PathBuf>,
    },
    /// Wait for a background task to finish and print its report.
    Wait {
        /// The task's id (a unique prefix is enough; `baton task status` lists them).
        id: String,
        /// The report as one JSON document.
        #[arg(long)]
        json: bool,
        /// A folder inside the project (default: the current one).
        #[arg(long)]
        cwd: Option<PathBuf>,
    },
    /// Print a background task's recorded events, one line each (`--follow`: and the new ones
    /// until it ends, then exit as `wait` does).
    Logs {
        /// The task's id (a unique prefix is enough; `baton task status` lists them).
        id: String,
        /// Keep printing new events as they are recorded until the task ends.
        #[arg(long, short)]
        follow: bool,
        /// The events as recorded, one JSON object per line.
        #[arg(long)]
        json: bool,
        /// A folder inside the project (default: the current one).
        #[arg(long)]
        cwd: Option<PathBuf>,
    },
    /// Stop a background task: its children are killed and its worktrees finalized.
    Cancel {
        /// The task's id (a unique prefix is enough; `baton task status` lists them).
        id: String,
        /// What was done, as one JSON object.
        #[arg(long)]
        json: bool,
        /// A folder inside the project (default: the current one).
        #[arg(long)]
        cwd: Option<PathBuf>,
    },
    /// Run a recorded background task (started by `baton task --background`).
    #[command(hide = true)]
    Supervise {
        id: String,
        #[arg(long)]
        cwd: PathBuf,
    },
}

fn read_entries_file(path: &Path, key: &str) -> Result<Value> {
    let text = baton_text::input::read_input(path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let value: Value = if path.extension().is_some_and(|e| e == "toml") {
        let t: toml::Value =
            toml::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        serde_json::to_value(t)?
    } else {
        serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?
    };
    if value.get("background").is_some() {
        bail!(
            "{}: `background` is not a field of an entries file: pass --background instead",
            path.display()
        );
    }
    Ok(match value {
        Value::Array(list) => json!({ key: list }),
        Value::Object(o) if o.contains_key(key) => Value::Object(o),
        _ => bail!(
            "{}: expected a list of entries, or an object with `{key}` (in TOML: [[{key}]] tables)",
            path.display()
        ),
    })
}

fn request_from_args(args: &TaskArgs) -> Result<DelegateRequest> {
    let mut value = if let Some(p) = &args.parallel {
        read_entries_file(p, "tasks")?
    } else if let Some(p) = &args.chain {
        read_entries_file(p, "chain")?
    } else {
        let task = match args.task.as_deref() {
            Some("-") => baton_text::input::read_stream_capped(
                std::io::stdin(),
                baton_text::input::INPUT_CAP,
            )
            .context("cannot read the task from stdin")?,
            Some(t) => t.to_string(),
            None => bail!("missing TASK: baton task --role ROLE [--name NAME] \"what to do\", or --parallel FILE / --chain FILE"),
        };
        let mut o = serde_json::Map::new();
        let role = args
            .role
            .clone()
            .ok_or_else(|| anyhow::anyhow!("--role is required for a single task"))?;
        let name = args
            .name
            .clone()
            .unwrap_or_else(|| derive_name(&role, &task));
        o.insert("role".into(), json!(role));
        o.insert("name".into(), json!(name));
        o.insert("task".into(), json!(task));
        for (k, v) in [
            ("model", &args.model),
            ("model_class", &args.model_class),
            ("thinking", &args.thinking),
        ] {
            if let Some(v) = v {
                o.insert(k.into(), json!(v));
            }
        }
        Value::Object(o)
    };
    if args.background {
        if let Some(o) = value.as_object_mut() {
            o.insert("background".into(), json!(true));
        }
    }
    parse_request(&value).map_err(|e| anyhow::anyhow!("{e}"))
}

/// On a terminal, replaces control characters (escape sequences included) in text that children
/// wrote, so nothing a child prints can drive the terminal. Off a terminal the text is unchanged.
fn for_terminal(text: &str) -> String {
    if !std::io::stdout().is_terminal() {
        return text.to_string();
    }
    baton_text::sanitize_terminal(text).into_owned()
}

/// The final report in text: each entry's result, then what each used and the total.
fn print_report(report: &DelegateReport, ctx: &ProjectContext) {
    outln!("{}", for_terminal(&render_report(report)));
    if !report.entries.is_empty() {
        outln!();
        outln!(
            "{}",
            for_terminal(&render_usage(report, &ctx.config.config.prices))
        );
    }
}

fn report_exit(report: &DelegateReport, cancelled: bool) -> Exit {
    if cancelled {
        Exit::Interrupted
    } else if report.ok() {
        Exit::Ok
    } else {
        Exit::Failed
    }
}

pub fn run(args: TaskArgs) -> Result<Exit> {
    match args.action {
        Some(TaskAction::Status { id, json, cwd }) => status(cwd, id, json),
        Some(TaskAction::Wait { id, json, cwd }) => wait(cwd, &id, json),
        Some(TaskAction::Cancel { id, json, cwd }) => cancel(cwd, &id, json),
        Some(TaskAction::Logs {
            id,
            follow,
            json,
            cwd,
        }) => crate::task_logs::logs(cwd, &id, follow, json),
        Some(TaskAction::Supervise { id, cwd }) => supervise(&cwd, &id),
        None => start(args),
    }
}

fn start(args: TaskArgs) -> Result<Exit> {
    let ctx = project_context(args.cwd.clone())?;
    let req = request_from_args(&args)?;
    let env = delegate_env(&ctx)?;
    let asked: Vec<&str> = req.entries.iter().map(|e| e.role.as_str()).collect();
    warn_skipped_roles(&env.role_dirs, &asked);
    resolve_roles(&env, &req).map_err(|e| anyhow::anyhow!("{e}"))?;
    let executor = executor_for(&env)?;
    if req.background {
        let id = start_background(&ctx, &req)?;
        if args.json {
            crate::documents::print(&TaskDocument::Background { id });
        } else {
            outln!("{id}");
            errln!("baton: started background task {id}; follow it with `baton task status {id}` or `baton task wait {id}`");
        }
        return Ok(Exit::Ok);
    }
    let roles = resolve_roles(&env, &req).map_err(|e| anyhow::anyhow!("{e}"))?;
    let json_mode = args.json;
    let status = Arc::new(Status::new(!json_mode && std::io::stderr().is_terminal()));
    let progress: Progress = {
        let status = status.clone();
        Arc::new(move |i, ev: EntryEvent| {
            if json_mode {
                crate::documents::print(&TaskDocument::Entry {
                    index: i,
                    event: crate::documents::to_value(&ev),
                });
            } else {
                status.event(i, &ev);
            }
        })
    };
    let run_id = background::new_task_id();
    let rt = crate::signals::runtime()?;
    let (report, cancelled) = rt.block_on(async {
        let cancel = CancellationToken::new();
        let signalled = watch_signals(cancel.clone());
        let report =
            run_delegation(&env, &executor, &req, &roles, &run_id, &cancel, progress).await;
        (report, signalled.is_cancelled())
    });
    if json_mode {
        crate::documents::print(&TaskDocument::Report {
            report: report.clone(),
        });
    } else {
        print_report(&report, &ctx);
    }
    Ok(report_exit(&report, cancelled))
}

/// Runs a recorded background task; any error before the work ends is recorded as
/// `task.failed`, so `wait` and `status` never wait on a supervisor that gave up.
fn supervise(cwd: &Path, id: &str) -> Result<Exit> {
    let mut log = None;
    let result = supervise_inner(cwd, id, &mut log);
    if let (Err(e), Some(log)) = (&result, &log) {
        let _ = append(
            log,
            &TaskEvent::Failed {
                message: format!("{e:#}"),
            },
        );
    }
    result
}

/// Appends one event to a log shared by the supervisor's threads.
fn append(log: &Mutex<background::TaskLog>, event: &TaskEvent) -> Result<()> {
    let mut log = log
        .lock()
        .map_err(|_| anyhow::anyhow!("the task log is poisoned"))?;
    Ok(log.append(event)?)
}

fn supervise_inner(
    cwd: &Path,
    id: &str,
    log_out: &mut Option<Arc<Mutex<background::TaskLog>>>,
) -> Result<Exit> {
    // The log first, found without the config, so that a config that cannot be read (or any
    // later failure) is recorded as the task's failure instead of leaving it `interrupted`.
    let canonical = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let store = baton_state::StateDir::for_project(&baton_state::project_root(&canonical));
    let log = Arc::new(Mutex::new(background::open_log(&store, id)?));
    *log_out = Some(log.clone());
    let ctx = project_context(Some(cwd.to_path_buf()))?;
    let state = background::load(&store, id)?;
    // `baton task cancel` may signal as soon as the task is recorded as started: the handlers
    // must be in place before that, or the signal kills the supervisor without a report.
    let rt = crate::signals::runtime()?;
    let cancel = CancellationToken::new();
    let _signalled = {
        let _entered = rt.enter();
        watch_signals(cancel.clone())
    };
    append(&log, &background::started_event())?;
    let env = delegate_env(&ctx)?;
    let executor = executor_for(&env)?;
    let roles = resolve_roles(&env, &state.request).map_err(|e| anyhow::anyhow!("{e}"))?;
    let progress: Progress = {
        let log = log.clone();
        Arc::new(move |index, event: EntryEvent| {
            if background::worth_recording(&event) {
                let _ = append(&log, &TaskEvent::Entry { index, event });
            }
        })
    };
    let report = rt.block_on(async {
        run_delegation(
            &env,
            &executor,
            &state.request,
            &roles,
            id,
            &cancel,
            progress,
        )
        .await
    });
    // The children ran: a report that cannot be recorded is a failure, not a refusal.
    append(
        &log,
        &TaskEvent::Completed {
            report: report.clone(),
        },
    )
    .after_work_began()?;
    Ok(report_exit(&report, false))
}

fn print_state(state: &background::TaskState, json_mode: bool) {
    let phase = state.phase();
    if json_mode {
        crate::documents::print(&TaskStatusDocument::of(state));
        return;
    }
    let color = crate::term::stdout_color();
    outln!(
        "{}  {}  {} ({} entr{})  created {}",
        state.id,
        crate::term::marked(phase.as_str(), color),
        state.request.mode.as_str(),
        state.entries.len(),
        if state.entries.len() == 1 { "y" } else { "ies" },
        crate::term::short_time(&state.created)
    );
    let live = state.live_children();
    for (i, (name, role, s)) in state.entries.iter().enumerate() {
        let s = match s {
            Some(s) => crate::term::marked(s.as_str(), color),
            None if phase == Phase::Running || phase == Phase::Starting => {
                "running or queued".to_string()
            }
            None => match live.iter().find(|(j, _)| *j == i) {
                Some((_, p)) => format!(
                    "interrupted, but its child (pid {}) still runs: `baton task cancel {}` stops it",
                    p.pid, state.id
                ),
                None => "interrupted: its supervisor ended without finishing it, and nothing of it runs".to_string(),
            },
        };
        outln!("  {name} ({role}): {s}");
    }
    if let Some(why) = &state.failure {
        outln!("  failed before running: {why}");
    }
}

fn status(cwd: Option<PathBuf>, id: Option<String>, json_mode: bool) -> Result<Exit> {
    let ctx = project_context(cwd)?;
    let store = state_dir(&ctx);
    let listing = id.is_none();
    let ids = match id {
        Some(id) => vec![id],
        None => background::list(&store),
    };
    if ids.is_empty() && !json_mode {
        outln!("no background tasks in {}", store.tasks().display());
    }
    let mut damaged = false;
    for id in ids {
        match background::load(&store, &id) {
            Ok(state) => print_state(&state, json_mode),
            // One damaged or unreadable log does not hide the others: it is listed with the reason.
            Err(e) if listing => {
                damaged = true;
                let phase = match &e {
                    background::TaskStoreError::Log(l) if l.damage().is_some() => "damaged",
                    _ => "unreadable",
                };
                if json_mode {
                    crate::documents::print(&TaskUnreadable {
                        id: id.clone(),
                        phase: phase.to_string(),
                        error: e.to_string(),
                    });
                } else {
                    outln!(
                        "{id}  {phase}: {}",
                        baton_text::sanitize_line(&e.to_string())
                    );
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(if damaged { Exit::Failed } else { Exit::Ok })
}

fn wait(cwd: Option<PathBuf>, id: &str, json_mode: bool) -> Result<Exit> {
    let ctx = project_context(cwd)?;
    let store = state_dir(&ctx);
    loop {
        let Some(end) = poll_wait(&store, id)? else {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        };
        if json_mode {
            crate::documents::print(&end.document(id));
        }
        return Ok(match &end {
            WaitEnd::FailedBeforeRunning(why) => {
                if !json_mode {
                    errln!("baton: background task {id} failed before running: {why}");
                }
                Exit::Failed
            }
            WaitEnd::Report(report) => {
                if !json_mode {
                    print_report(report, &ctx);
                }
                report_exit(report, false)
            }
        });
    }
}

fn cancel(cwd: Option<PathBuf>, id: &str, json_mode: bool) -> Result<Exit> {
    let ctx = project_context(cwd)?;
    let doc = cancel_document(&state_dir(&ctx), id)?;
    if json_mode {
        crate::documents::print(&doc);
    } else {
        outln!("{}", doc.message);
    }
    Ok(Exit::Ok)
}
