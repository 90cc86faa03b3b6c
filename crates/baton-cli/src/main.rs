//! The `baton` command.

#[macro_use]
extern crate baton_text;

mod agent_cmd;
mod demo_cmd;
mod doctor_cmd;
mod documents;
mod events_cmd;
mod flow_cmd;
mod info_cmd;
mod init_cmd;
mod install_cmd;
mod mcp_cmd;
mod plan_cmd;
mod printer;
mod repair_cmd;
mod run_cmd;
mod run_report;
mod serve_cmd;
mod session_routing;
mod sessions_cmd;
mod signals;
mod task_cmd;
mod task_logs;
mod task_status_view;
mod temporal_cmd;
#[cfg(feature = "temporal")]
mod temporal_doctor;
mod term;
mod trust_cmd;
mod tui_cmd;
mod tui_session;
mod tui_work;
mod worker_cmd;
mod worker_peer;
mod worker_serve;
mod workflow_cmd;
mod workflow_route_cmd;

use std::path::PathBuf;
use std::process::ExitCode;

use baton_app::exit::Exit;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "baton",
    version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("BATON_GIT_COMMIT"), ")"),
    about = "Orchestration runtime for LLM coding agents"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

/// The terminal UI's arguments this process was started with (`baton tui …`, or `baton` alone),
/// parsed again: `/resume` goes on with another session under the same flags.
pub(crate) fn tui_args_again() -> Option<tui_cmd::TuiArgs> {
    match Cli::try_parse_from(std::env::args_os()).ok()?.command {
        Some(Command::Tui(args)) => Some(args),
        None => Some(tui_cmd::TuiArgs::default_args()),
        Some(_) => None,
    }
}

#[derive(Subcommand)]
#[command(defer = true)]
enum Command {
    /// Run one headless coding agent on a task.
    Agent(agent_cmd::AgentArgs),
    /// The interactive session in a terminal UI (also `baton` alone on a terminal): streaming
    /// transcript, composer, interrupts, approvals, status line.
    Tui(tui_cmd::TuiArgs),
    /// A line-based agent session: each line is input; /profile coordinator|executor|auto,
    /// /resume, /interrupt and /quit steer a routed session. Works in a terminal and in a pipe.
    Chat(agent_cmd::ChatArgs),
    /// Delegate work to child agents: one task, parallel tasks or a chain; foreground or background.
    Task(task_cmd::TaskArgs),
    /// Land 1-8 independent units: parallel worktrees, then rebase, validate, review and fast-forward in order.
    Flow(flow_cmd::FlowArgs),
    /// Run a whole BUILD workflow offline on a throwaway repository (recorded agents, real tools).
    Demo(demo_cmd::DemoArgs),
    /// Run a workflow: route the request, then builder, reviewers, verifier and memory, gated on evidence.
    Run(run_cmd::RunArgs),
    /// Continue a workflow after a crash or an interruption, or answer its checkpoint.
    Resume(run_cmd::ResumeArgs),
    /// Check a plan file (`baton plan check FILE`) or approve it (`baton plan approve FILE`) for
    /// `baton run --plan FILE`.
    Plan(plan_cmd::PlanArgs),
    /// Show which workflow a request would run as, the signals and the rule that decided (nothing else).
    Route(workflow_route_cmd::RouteArgs),
    /// List the project's workflows, newest first: state, phase, what each waits for, what it spent.
    Status(workflow_cmd::StatusArgs),
    /// Show one workflow's events as a timeline (WF: an id, a unique prefix of one, or `last`).
    Log(workflow_cmd::LogArgs),
    /// Print every event of the project's logs (sessions, routing, tasks, Flows, workflows) in
    /// order; --follow keeps printing new ones as they are written.
    Events(events_cmd::EventsArgs),
    /// Show what is damaged in a workflow, Flow, session or task record; --apply rebuilds it from its intact part.
    Repair(repair_cmd::RepairArgs),
    /// Serve baton to an MCP client (Claude Code, Codex, …) over stdio (or streamable HTTP with
    /// --http). Tools: route, models, roles; delegate_task, task_status, task_wait, task_cancel;
    /// run_workflow, workflow_status, workflow_resume; flow_start, flow_status, flow_continue,
    /// flow_resume, flow_land, flow_abandon; worker_start, worker_send, worker_list, worker_stop,
    /// worker_retire. Resources: baton://workflows/{id}, baton://flows/{id},
    /// baton://tasks/{id}/log, baton://workers/{name}/log. See docs/mcp.md.
    Mcp(mcp_cmd::McpArgs),
    /// The project's web dashboard: its workflows, Flows, tasks and sessions, live, on loopback.
    Serve(serve_cmd::ServeArgs),
    /// Managed workers: named, long-lived sessions prompted again and again (start, send, list,
    /// logs, stop, retire); they survive restarts and are reconciled after a crash.
    Worker(worker_cmd::WorkerArgs),
    /// Run workflow steps on this machine for workflows on Temporal (`baton run --engine
    /// temporal`): polls the task queue, works in a clone of `engine.remote`. See docs/temporal.md.
    WorkerNode(temporal_cmd::WorkerNodeArgs),
    /// Write a commented starter `.baton/config.toml` and `.baton/.gitignore` in the project, trusted as written.
    Init(init_cmd::InitArgs),
    /// Check every configured provider (key set, one cheap real request) and the sandbox.
    Doctor(doctor_cmd::DoctorArgs),
    /// Trust the project's own .baton/config.toml and .baton/roles/ as they are now, so the
    /// settings in them that widen what runs unconfined (or where keys go) apply.
    Trust(trust_cmd::TrustArgs),
    /// Show each model class, its routes and which one resolves now.
    Models {
        /// Working directory whose project config applies.
        #[arg(long)]
        cwd: Option<PathBuf>,
        /// Print one JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
    /// List the effective roles and where each came from.
    Roles {
        #[command(subcommand)]
        action: Option<RolesAction>,
        /// Directory inside the project whose roles are listed (default: the current one).
        #[arg(long, global = true)]
        cwd: Option<PathBuf>,
        /// Print one JSON document instead of text.
        #[arg(long, global = true)]
        json: bool,
    },
    /// List the skills sessions are offered (name, where it was found, the roles that name it).
    Skills {
        /// Directory inside the project (default: the current one).
        #[arg(long)]
        cwd: Option<PathBuf>,
        /// Print one JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Install baton's plugin into a host: `baton install claude` (its commands, session-start
    /// hook and MCP server, through Claude Code's own CLI).
    Install(install_cmd::InstallArgs),
    /// List the saved agent sessions (oldest first): id, when, role, route, outcome, task.
    Sessions {
        /// Directory inside the project (default: the current one).
        #[arg(long)]
        cwd: Option<PathBuf>,
        /// Print one JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Print a shell completion script: `baton completions bash > ~/.local/share/bash-completion/completions/baton`.
    Completions {
        /// The shell: bash, zsh or fish.
        shell: CompletionShell,
    },
}

/// The shells `baton completions` writes a script for.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum CompletionShell {
    Bash,
    Zsh,
    Fish,
}

#[derive(Subcommand)]
#[command(defer = true)]
enum RolesAction {
    /// Validate every role file: report each invalid one with its line, exit 2 if there is one.
    Check,
}

fn main() -> ExitCode {
    // `baton __guard FD PROGRAM ARGS…`: stand guard over one command (baton_process::guard).
    // Checked before anything else runs, while this process has one thread.
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if argv
        .get(1)
        .is_some_and(|a| a == baton_process::guard::GUARD_ARG)
    {
        let code = baton_process::guard::main(&argv[2..], baton_sandbox::guard_hook);
        return ExitCode::from(u8::try_from(code).unwrap_or(Exit::Failed as u8));
    }
    // baton holds provider keys in its environment and memory: no other process of the user's,
    // not even one running as root without CAP_SYS_PTRACE, may read /proc/<baton>/environ or
    // its memory, or attach a debugger.
    // SAFETY: prctl with integer arguments on this process.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
    // Every command and child agent this process starts runs under a guard: this binary.
    match baton_process::own_program() {
        Ok(exe) => baton_process::guard::set_program(Some(baton_process::guard::program_for(&exe))),
        Err(e) => {
            errln!(
                "baton: cannot find its own program, needed to guard the processes it starts: {e}"
            );
            return ExitCode::from(Exit::Failed);
        }
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() {
                Exit::Refused
            } else {
                Exit::Ok
            };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("BATON_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(|| RedactedStderr)
        .init();
    let Some(command) = cli.command else {
        // `baton` alone: the terminal UI on a terminal, else the help.
        use std::io::IsTerminal as _;
        if std::io::stdin().is_terminal() && std::io::stdout().is_terminal() {
            return finish(tui_cmd::run(tui_cmd::TuiArgs::default_args()));
        }
        use clap::CommandFactory as _;
        let _ = Cli::command().print_help();
        return ExitCode::from(Exit::Refused);
    };
    finish(dispatch(command))
}

fn finish(result: anyhow::Result<Exit>) -> ExitCode {
    match result {
        Ok(code) => code.into(),
        Err(e) => {
            errln!("baton: {e:#}");
            Exit::of_error(&e).into()
        }
    }
}

fn dispatch(command: Command) -> anyhow::Result<Exit> {
    match command {
        Command::Tui(args) => tui_cmd::run(args),
        Command::Agent(args) => agent_cmd::run(args),
        Command::Chat(args) => agent_cmd::chat(args),
        Command::Task(args) => task_cmd::run(args),
        Command::Flow(args) => flow_cmd::run(args),
        Command::Route(args) => workflow_route_cmd::run(args),
        Command::Plan(args) => plan_cmd::run(args),
        Command::Demo(args) => demo_cmd::run(args),
        Command::Run(args) => run_cmd::run(args),
        Command::Resume(args) => run_cmd::resume(args),
        Command::Status(args) => workflow_cmd::status(args),
        Command::Log(args) => workflow_cmd::log(args),
        Command::Events(args) => events_cmd::run(args),
        Command::Repair(args) => repair_cmd::run(args),
        Command::Init(args) => init_cmd::run(args),
        Command::Mcp(args) => mcp_cmd::run(args),
        Command::Serve(args) => serve_cmd::run(args),
        Command::Worker(args) => worker_cmd::run(args),
        Command::WorkerNode(args) => temporal_cmd::worker_node(args),
        Command::Doctor(args) => doctor_cmd::run(args),
        Command::Trust(args) => trust_cmd::run(args),
        Command::Models { cwd, json } => info_cmd::models(cwd, json),
        Command::Roles { action, cwd, json } => {
            info_cmd::roles(cwd, matches!(action, Some(RolesAction::Check)), json)
        }
        Command::Skills { cwd, json } => info_cmd::skills(cwd, json),
        Command::Install(args) => install_cmd::run(args),
        Command::Sessions { cwd, json } => sessions_cmd::run(cwd, json),
        Command::Completions { shell } => completions(shell),
    }
}

/// Writes the completion script of `shell` on stdout.
fn completions(shell: CompletionShell) -> anyhow::Result<Exit> {
    use clap::CommandFactory as _;
    let shell = match shell {
        CompletionShell::Bash => clap_complete::Shell::Bash,
        CompletionShell::Zsh => clap_complete::Shell::Zsh,
        CompletionShell::Fish => clap_complete::Shell::Fish,
    };
    // Each subcommand's arguments are built only when it runs (`defer`); the script needs them
    // all, and the `help` subcommand's tree copies what its siblings hold when it is made, so
    // each is built before the whole.
    let mut cmd = Cli::command();
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    for name in names {
        // Under its name in the script, so its own subcommands are named under it too.
        let bin_name = format!("baton {name}");
        cmd = cmd.mut_subcommand(name, |sub| {
            let mut sub = sub.bin_name(bin_name);
            sub.build();
            sub
        });
    }
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "baton", &mut script);
    use std::io::Write as _;
    // A reader that went away (`| head`) is not an error worth reporting.
    let _ = std::io::stdout().lock().write_all(&script);
    Ok(Exit::Ok)
}

/// Stderr for log messages (`BATON_LOG`), with known provider keys written as `[REDACTED]`. The
/// log formatter writes each message in one call, so a key is never split between two writes.
struct RedactedStderr;

impl std::io::Write for RedactedStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        std::io::stderr().write_all(baton_text::redact::redact(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory as _;

    /// Each subcommand's own help opens with what `baton --help` lists for it, though its
    /// arguments are built only when it runs (`defer`).
    #[test]
    fn a_subcommand_s_help_is_what_the_command_list_says() {
        let listed: Vec<(String, Option<String>)> = Cli::command()
            .get_subcommands()
            .map(|s| {
                (
                    s.get_name().to_string(),
                    s.get_about().map(|a| a.to_string()),
                )
            })
            .collect();
        let mut built = Cli::command();
        built.build();
        for (name, about) in listed {
            let sub = built
                .find_subcommand(&name)
                .map(|s| s.get_about().map(|a| a.to_string()));
            assert_eq!(sub, Some(about), "baton {name} --help");
        }
    }

    #[test]
    fn the_command_tree_is_consistent() {
        Cli::command().debug_assert();
    }
}
