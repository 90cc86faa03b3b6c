//! `baton agent`: one headless agent session.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use baton_agent::agent::{RunSummary, Session, SessionHandle, Submission};
use baton_agent::session::{SessionHeader, SessionStore};
use baton_agent::tools::{SandboxMode, Tool};
use baton_app::exit::{AfterWorkBegan as _, Exit};
use baton_app::project::{now_rfc3339, project_context, state_dir, ProjectContext};
use baton_app::settings::{
    process_env, Known, SessionConfig, SessionFlags, SessionInputs, SessionParts, DEFAULT_ROLE,
};
use baton_protocol::{AgentEvent, EndReason};
use clap::Args;

use crate::printer::Printer;
use crate::signals::watch_signals;

#[derive(Args, Debug)]
pub struct AgentArgs {
    /// The role whose instructions and tools the agent gets.
    #[arg(long, default_value = DEFAULT_ROLE)]
    role: String,
    /// Run as the role defined in this Markdown file instead of looking one up by name.
    #[arg(long, value_name = "FILE", conflicts_with = "role")]
    role_file: Option<PathBuf>,
    /// Model class: fast, balanced, frontier or fav.
    #[arg(long, conflicts_with = "model")]
    model_class: Option<String>,
    /// An explicit route, `provider/model[:thinking]`.
    #[arg(long)]
    model: Option<String>,
    /// Play a cassette file instead of calling a model (no config or network needed).
    #[arg(long, conflicts_with_all = ["model", "model_class"])]
    replay: Option<PathBuf>,
    /// Write the session's model turns to a cassette FILE (credentials are never written).
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// Model turns, the last reserved for a handoff report (default 50, or agent.max_turns).
    #[arg(long)]
    max_turns: Option<u32>,
    /// Directory to work in (default: the current one).
    #[arg(long)]
    pub(crate) cwd: Option<PathBuf>,
    /// Print the event stream (docs/protocol.md) as JSON lines instead of text.
    #[arg(long)]
    pub(crate) json: bool,
    /// Confine `bash` commands: read-only, workspace-write or danger-full-access (default: the
    /// role's `sandbox`, else `sandbox.mode`, else workspace-write).
    #[arg(long, value_name = "MODE")]
    sandbox: Option<SandboxMode>,
    /// Ask before tool calls: never, on-write (every call that is not read-only) or always
    /// (default: agent.approval, else never). A session without a terminal UI to ask fails
    /// closed at the first call that needs an answer.
    #[arg(long, value_name = "POLICY")]
    pub(crate) approval: Option<baton_protocol::ApprovalPolicy>,
    /// Do not offer the delegation tools (`delegate_task`, `delegate_flow`,
    /// `delegate_flow_continue`) to the model, even when the role lists them.
    #[arg(long)]
    no_delegate: bool,
    /// Continue the session with this id (a unique prefix, its last 8 characters as `baton
    /// sessions` and the picker show them, or `last`). `baton tui --resume` alone lists the
    /// saved sessions to pick from.
    #[arg(long, value_name = "ID", num_args = 0..=1, default_missing_value = "")]
    pub(crate) resume: Option<String>,
    /// With --resume: summarise the session's conversation first, as `/compact` does in `baton
    /// chat` (the transcript keeps everything); the task, when given, runs after it.
    #[arg(long, requires = "resume")]
    compact: bool,
    /// Route the session between a Coordinator and an Executor (their routes are
    /// `routing.coordinator` and `routing.executor`): `auto`, or hold one profile, `coordinator`
    /// or `executor`; `off` stops routing. A resumed routed session keeps its control without it.
    #[arg(long, value_name = "CONTROL")]
    routing: Option<String>,
    /// Offer exactly this skill (a folder holding SKILL.md) instead of the ones found in the skill
    /// folders; repeatable. How a delegating session passes a child its role's skills.
    #[arg(long, value_name = "DIR")]
    skill: Vec<PathBuf>,
    /// The task; `-` reads it from stdin. Optional with --resume.
    pub(crate) task: Option<String>,
    /// Set by `baton chat`: read input lines as the session goes.
    #[arg(skip)]
    chat: Option<ChatInput>,
    /// Set by `baton tui`: the terminal UI is the session's front end.
    #[arg(skip)]
    pub(crate) tui: Option<crate::tui_session::TuiFront>,
    /// Set by `baton worker serve`: the worker's log is the session's front end.
    #[arg(skip)]
    pub(crate) worker: Option<crate::worker_serve::WorkerFront>,
}

/// How `baton chat` feeds the session.
#[derive(Debug, Clone, Copy)]
pub struct ChatInput {
    /// Send each line as soon as it is read, even while a task runs.
    pub no_wait: bool,
}

// `baton chat`: a line-based session.
#[derive(Args, Debug)]
pub struct ChatArgs {
    #[command(flatten)]
    agent: AgentArgs,
    /// Send each input line as soon as it is read, even while a task runs (the default on a
    /// terminal; from a pipe, each line otherwise waits until the session is idle).
    #[arg(long)]
    no_wait: bool,
}

/// `baton chat`: `baton agent` that keeps reading lines from stdin.
pub fn chat(args: ChatArgs) -> Result<Exit> {
    let mut agent = args.agent;
    let no_wait = args.no_wait || std::io::stdin().is_terminal();
    agent.chat = Some(ChatInput { no_wait });
    run(agent)
}

fn read_task(task: Option<String>, resuming: bool) -> Result<String> {
    match task.as_deref() {
        Some("-") => {
            let s = baton_text::input::read_stream_capped(
                std::io::stdin(),
                baton_text::input::INPUT_CAP,
            )
            .context("cannot read the task from stdin")?;
            if s.trim().is_empty() {
                bail!("the task read from stdin is empty: pipe the task text in, or pass it as an argument");
            }
            Ok(s)
        }
        Some(t) if !t.trim().is_empty() => Ok(t.to_string()),
        Some(_) => bail!("the task is empty: pass what the agent should do, e.g. baton agent \"fix the failing test\""),
        None if resuming => Ok("Continue where you left off.".to_string()),
        None => bail!("missing TASK: pass what the agent should do, e.g. baton agent \"fix the failing test\", or - to read it from stdin"),
    }
}

/// The delegation tools of a main session that its role lists (`listed`), and the policy
/// sections for its system prompt. When the role lists none, nothing is set up. When delegation
/// cannot be set up (no state folder for worktrees, a bad `executor` key), the session runs
/// without it and says why.
fn delegation_tools(
    ctx: &ProjectContext,
    json: bool,
    listed: &[String],
    ui: Option<std::sync::mpsc::Sender<baton_tui::Msg>>,
) -> (Vec<Arc<dyn Tool>>, Vec<String>) {
    let lists = |name: &str| listed.iter().any(|t| t == name);
    if !listed.iter().any(|t| baton_roles::is_delegation_tool(t)) {
        return (Vec::new(), Vec::new());
    }
    let setup = || -> Result<(Arc<baton_exec::delegate::DelegateEnv>, Arc<baton_exec::executor::Executor>)> {
        let env = Arc::new(baton_app::project::delegate_env(ctx)?);
        let executor = Arc::new(baton_app::project::executor_for(&env)?);
        Ok((env, executor))
    };
    let (env, executor) = match setup() {
        Ok(x) => x,
        Err(e) => {
            errln!("baton: delegation is off for this session: {e:#}");
            return (Vec::new(), Vec::new());
        }
    };
    let status = Arc::new(crate::task_status_view::Status::new(
        !json && std::io::stderr().is_terminal(),
    ));
    let ui = ui.map(std::sync::Mutex::new);
    let progress: baton_exec::delegate::Progress = Arc::new(move |i, ev| {
        if let Some(tx) = ui.as_ref().and_then(|m| m.lock().ok()) {
            let _ = tx.send(baton_tui::Msg::Delegation(i, ev));
        } else if !json {
            status.event(i, &ev);
        }
    });
    let flow_env = Arc::new(baton_flow::FlowEnv::new((*env).clone(), executor.clone()));
    let state = env.state.clone();
    let all: [Arc<dyn Tool>; 5] = [
        Arc::new(baton_exec::tool::DelegateTool {
            env,
            executor,
            progress,
            now: now_rfc3339,
        }),
        Arc::new(baton_flow::tool::DelegateFlowTool {
            env: flow_env.clone(),
        }),
        Arc::new(baton_flow::tool::DelegateFlowContinueTool {
            env: flow_env.clone(),
        }),
        Arc::new(baton_flow::tool::DelegateFlowResumeTool {
            env: flow_env.clone(),
        }),
        Arc::new(baton_flow::tool::DelegateFlowAbandonTool { env: flow_env }),
    ];
    let mut tools: Vec<Arc<dyn Tool>> = all.into_iter().filter(|t| lists(t.name())).collect();
    // A session that delegates hears back from its background delegations.
    if lists("delegate_task") {
        tools.extend(baton_app::task_tools::tools(state));
    }
    if lists("worker") {
        match baton_process::own_program() {
            Ok(exe) => tools.push(Arc::new(baton_app::worker_tool::WorkerTool {
                cwd: ctx.cwd.clone(),
                exe,
            })),
            Err(e) => errln!("baton: the worker tool is off: cannot find this program: {e}"),
        }
    }
    let mut policies = Vec::new();
    if lists("delegate_task") {
        policies.push(baton_exec::tool::MAIN_POLICY.to_string());
    }
    if lists("delegate_flow") || lists("delegate_flow_continue") {
        policies.push(baton_flow::tool::FLOW_POLICY.to_string());
    }
    (tools, policies)
}

/// What is known of a session while it is set up, for the `--json` stream of one refused before
/// it started.
struct Setup {
    /// Its role and route as far as they are resolved.
    known: Known,
    cwd: String,
    resumed: bool,
    /// The session's own event stream began: from then on it reports its own end.
    streaming: bool,
}

pub fn run(args: AgentArgs) -> Result<Exit> {
    let json = args.json;
    let mut setup = Setup {
        known: Known {
            role: args.role.clone(),
            model: String::new(),
        },
        cwd: match &args.cwd {
            Some(c) => c.display().to_string(),
            None => std::env::current_dir()
                .map(|d| d.display().to_string())
                .unwrap_or_default(),
        },
        resumed: args.resume.is_some(),
        streaming: false,
    };
    match run_session(args, &mut setup) {
        // `session.started` is first and `session.completed` last, always: also when the
        // session is refused before it starts.
        Err(e) if json && !setup.streaming => {
            let message = format!("{e:#}");
            errln!("baton: {message}");
            print_not_started(&setup, message);
            Ok(Exit::Refused)
        }
        other => other,
    }
}

/// The event stream of a session refused before it started: what is known of it, then its end.
fn print_not_started(setup: &Setup, message: String) {
    let events = [
        AgentEvent::SessionStarted {
            protocol_version: baton_protocol::PROTOCOL_VERSION,
            session_id: String::new(),
            role: setup.known.role.clone(),
            model: setup.known.model.clone(),
            cwd: setup.cwd.clone(),
            resumed: setup.resumed,
            sandbox: None,
        },
        AgentEvent::SessionCompleted {
            outcome: EndReason::NotStarted.outcome(),
            reason: Some(EndReason::NotStarted),
            final_message: message.clone(),
            turns: 0,
            usage: Default::default(),
            cost_usd: None,
            error: Some(baton_protocol::ErrorInfo {
                code: baton_protocol::ErrorCode::Config,
                message,
            }),
            routes: Vec::new(),
        },
    ];
    for ev in events {
        match serde_json::to_string(&ev) {
            Ok(line) => outln!("{line}"),
            Err(e) => errln!("baton: cannot write an event: {e}"),
        }
    }
}

fn run_session(args: AgentArgs, setup: &mut Setup) -> Result<Exit> {
    let ctx = project_context(args.cwd.clone())?;
    setup.cwd = ctx.cwd.display().to_string();
    let task = first_task(&args)?;
    let flags = session_flags(&args)?;
    let state = state_dir(&ctx);
    let resumed = match &args.resume {
        Some(wanted) if wanted.is_empty() => anyhow::bail!(
            "--resume needs the session: its id (a unique prefix or its last 8 characters, as `baton sessions` lists them) or `last`; `baton tui --resume` alone lets you pick one"
        ),
        Some(wanted) => {
            let id = baton_agent::session::resolve_id(&state, wanted)?;
            Some(SessionStore::open_seats(&state, &id)?)
        }
        None => None,
    };
    let session_id = match &resumed {
        Some((_, header, _)) => header.session_id.clone(),
        None => uuid::Uuid::now_v7().to_string(),
    };
    let inputs = SessionInputs {
        ctx: &ctx,
        flags: &flags,
        resumed: resumed.as_ref().map(|(_, header, _)| header),
        session_id: &session_id,
        env: &process_env,
    };
    let config = SessionConfig::resolve(&inputs, &mut setup.known)?;

    // The session's temp dir: `TMPDIR` of its commands, writable in the sandbox, removed at the end.
    let tmp_dir = SessionTmp::new();
    // Only a role that lists the delegation tools gets them, and children never do, so
    // delegation cannot recurse. Set up before the transcript is created, so nothing is
    // half-written if it fails.
    let (host_tools, extra_instructions) = if config.delegate {
        // The terminal UI owns the screen: delegations report into its side panel instead.
        delegation_tools(
            &ctx,
            args.json || args.tui.is_some() || args.worker.is_some(),
            &config.role.meta.tools,
            args.tui.as_ref().map(|f| f.tx.clone()),
        )
    } else {
        (Vec::new(), Vec::new())
    };

    let runtime = baton_app::runtime::current_thread()?;
    // The MCP servers the session uses, started before the transcript is created: one that
    // cannot start fails the session with nothing half-written.
    let mcp = runtime
        .block_on(baton_app::mcp_servers::start(
            &ctx.config.config,
            &config.mcp_servers,
            &ctx.cwd,
        ))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    for w in &mcp.warnings {
        errln!("baton: warning: {w}");
    }

    let (store, history) = match resumed {
        Some((store, _, messages)) => (store, messages),
        None => {
            // Excluding the state folder from git is a convenience: a failure is not fatal.
            let _ = state.ensure_excluded();
            let header = SessionHeader {
                session_id: session_id.clone(),
                role: config.role.meta.name.clone(),
                model: config.seat.route.to_string(),
                cwd: ctx.cwd.display().to_string(),
                created: now_rfc3339(),
            };
            (SessionStore::create(&state, &header)?, Vec::new())
        }
    };
    let recorder = config.recorder.clone();
    let spec = config.agent_spec(SessionParts {
        session_id: session_id.clone(),
        root: ctx.project_root.clone(),
        cwd: ctx.cwd.clone(),
        tmp_dir: Some(tmp_dir.0.clone()),
        host_tools,
        extra_instructions,
        mcp_tools: mcp.tools.clone(),
    });
    let session = Session::new(Arc::new(spec), history, args.resume.is_some(), Some(store));
    setup.streaming = true;
    let front = match (args.worker, args.tui) {
        (Some(worker), _) => Front::Worker(worker),
        (None, Some(tui)) => Front::Tui(
            tui,
            crate::tui_session::Start {
                task,
                branch: baton_git::Git::new(&ctx.cwd)
                    .current_branch()
                    .ok()
                    .flatten(),
                project: (state, ctx.project_root.clone()),
            },
        ),
        (None, None) => Front::Stdio(StdioInput {
            task,
            compact: args.compact,
            chat: args.chat,
            json: args.json,
        }),
    };
    let ended = runtime.block_on(serve(front, session));
    runtime.block_on(mcp.shutdown());
    match ended? {
        Ended::Worker(summary) => Ok(exit_code(&summary, false)),
        Ended::Tui(s) => {
            errln!(
                "baton: session {session_id}: {} ({} turns); continue it with `baton tui --resume {session_id}`",
                s.outcome,
                s.turns
            );
            Ok(Exit::Ok)
        }
        Ended::Stdio(summary, interrupted) => {
            if let Some((path, rec)) = &recorder {
                // The model was called: a cassette that cannot be saved is a failure, not a refusal.
                rec.save(path)
                    .map_err(|e| anyhow::anyhow!("--record {}: {e}", path.display()))
                    .after_work_began()?;
                if !args.json {
                    errln!("baton: cassette written to {}", path.display());
                }
            }
            Ok(exit_code(&summary, interrupted))
        }
    }
}

/// The task the session starts with. A chat reads its input as it goes: a task given with it is
/// only its first line; the terminal UI's is optional; a worker takes its prompts from its log.
fn first_task(args: &AgentArgs) -> Result<Option<String>> {
    Ok(match args.chat {
        _ if args.tui.is_some() => args.task.clone().filter(|t| !t.trim().is_empty()),
        _ if args.worker.is_some() => None,
        Some(_) => args.task.clone().filter(|t| !t.trim().is_empty()),
        // `--resume ID --compact` alone compacts and ends.
        None if args.compact && args.task.is_none() => None,
        None => Some(read_task(args.task.clone(), args.resume.is_some())?),
    })
}

/// The arguments that settle the session's config (`baton_app::settings`).
fn session_flags(args: &AgentArgs) -> Result<SessionFlags> {
    Ok(SessionFlags {
        role: args.role.clone(),
        role_file: args.role_file.clone(),
        model: args.model.clone(),
        model_class: args.model_class.clone(),
        replay: args.replay.clone(),
        record: args.record.clone(),
        max_turns: args.max_turns,
        sandbox: args.sandbox,
        approval: args.approval,
        no_delegate: args.no_delegate,
        routing: args
            .routing
            .as_deref()
            .map(crate::session_routing::parse_control)
            .transpose()?,
        skills: args.skill.clone(),
    })
}

/// Who the session talks to.
enum Front {
    /// `baton worker serve`: the worker's log.
    Worker(crate::worker_serve::WorkerFront),
    /// `baton tui`: the terminal UI.
    Tui(crate::tui_session::TuiFront, crate::tui_session::Start),
    /// `baton agent` / `baton chat`: the arguments and stdin in, the events printed.
    Stdio(StdioInput),
}

/// What `baton agent` / `baton chat` submit and how they print.
struct StdioInput {
    task: Option<String>,
    /// `--resume ID --compact`: a compaction first.
    compact: bool,
    chat: Option<ChatInput>,
    json: bool,
}

/// How a front end's session ended.
enum Ended {
    Worker(RunSummary),
    Tui(RunSummary),
    /// With whether a signal interrupted it.
    Stdio(RunSummary, bool),
}

/// Runs `session` with `front` as its front end, until it ends.
async fn serve(front: Front, session: Session) -> Result<Ended> {
    match front {
        Front::Worker(worker) => Ok(Ended::Worker(
            crate::worker_serve::serve(worker, session).await,
        )),
        Front::Tui(tui, start) => Ok(Ended::Tui(
            crate::tui_session::serve(tui, session, start).await?,
        )),
        Front::Stdio(input) => {
            let (summary, interrupted) = serve_stdio(session, input).await;
            Ok(Ended::Stdio(summary, interrupted))
        }
    }
}

/// `baton agent` / `baton chat`: the task (or, chatting, the lines of stdin as they come) in, the
/// events printed; the summary, and whether a signal interrupted the session.
async fn serve_stdio(session: Session, input: StdioInput) -> (RunSummary, bool) {
    let session_id = session.spec().session_id.clone();
    let SessionHandle {
        submissions,
        mut events,
        cancel,
        idle,
        end,
        ..
    } = session.spawn();
    let interrupted = watch_signals(cancel);
    let mut printer = Printer::new(input.json);
    if input.compact {
        let _ = submissions.send(Submission::Compact(None));
    }
    if let Some(task) = input.task {
        let _ = submissions.send(Submission::Input(task));
    }
    let _reader = match input.chat {
        Some(c) => Some(crate::session_routing::read_lines(
            submissions,
            (!c.no_wait).then_some(idle),
        )),
        None => {
            drop(submissions);
            None
        }
    };
    while let Some(ev) = events.recv().await {
        printer.event(ev);
    }
    let summary = end.await;
    printer.finish(&summary, &session_id);
    (summary, interrupted.is_cancelled())
}

fn exit_code(s: &RunSummary, interrupted: bool) -> Exit {
    match s.reason {
        None => Exit::Ok,
        Some(EndReason::ModelError | EndReason::Refused | EndReason::ApprovalUnavailable) => {
            Exit::Failed
        }
        Some(EndReason::NotStarted) => Exit::Refused,
        Some(EndReason::Cancelled) => Exit::Interrupted,
        // A signal that arrived as the session reached a limit still counts as the interruption.
        Some(EndReason::TurnLimit | EndReason::MaxTokens) if interrupted => Exit::Interrupted,
        Some(EndReason::TurnLimit | EndReason::MaxTokens) => Exit::Limit,
    }
}

/// The session's temp dir: named now, created by the first `bash` call that needs it (most
/// sessions never do), removed with everything in it when the session ends.
struct SessionTmp(PathBuf);

impl SessionTmp {
    fn new() -> Self {
        SessionTmp(
            std::env::temp_dir().join(format!("baton-session-{}", uuid::Uuid::new_v4().simple())),
        )
    }
}

impl Drop for SessionTmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
