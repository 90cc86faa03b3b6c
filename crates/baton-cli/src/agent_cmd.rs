//! `baton agent`: one headless agent session.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use baton_agent::agent::{self, AgentSpec, Fallback, Inbox, RunSummary, Submission};
use baton_agent::session::{SessionHeader, SessionStore};
use baton_agent::tools::{builtin_tools, SandboxMode, Tool};
use baton_app::exit::{AfterWorkBegan as _, Exit};
use baton_app::project::{
    now_rfc3339, project_context, role_dirs, state_dir, warn_skipped_roles, ProjectContext,
};
use baton_app::settings::{process_env, AgentFlags, AgentSettings};
use baton_model::replay::{Recorder, Replay};
use baton_model::retry::RetryPolicy;
use baton_model::routes::{
    build_provider, check_route, default_class, resolve_class, ProcessEnv, ResolvedRoute,
};
use baton_model::Provider;
use baton_protocol::role::RoleSource;
use baton_protocol::{AgentEvent, EndReason, ModelClass, Route};
use baton_roles::{find_role, parse_role};
use clap::Args;
use tokio_util::sync::CancellationToken;

use crate::printer::Printer;
use crate::signals::watch_signals;

#[derive(Args, Debug)]
pub struct AgentArgs {
    /// The role whose instructions and tools the agent gets.
    #[arg(long, default_value = "implementer")]
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
    cwd: Option<PathBuf>,
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
    /// Continue the session with this id (a unique prefix, or `last`).
    #[arg(long, value_name = "ID")]
    resume: Option<String>,
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

/// `baton chat`: a line-based session.
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

/// The skills a session is offered: those given with `--skill` (a delegating Main resolved
/// them); else in a main session every skill of the project (bad skill files named in a warning
/// each), in a delegated child exactly those its role names (seed 004: no ambient discovery in
/// children; a name not found is named in a warning and skipped). None without the `read`
/// tool, which is how a skill is opened.
fn session_skills(
    ctx: &ProjectContext,
    role: &baton_protocol::role::RoleSpec,
    is_child: bool,
    given: &[PathBuf],
) -> Vec<baton_agent::agent::SkillRef> {
    let chosen: Vec<baton_roles::skills::Skill> = if !given.is_empty() {
        let (found, bad) = baton_roles::skills::load_given(given);
        for b in bad {
            errln!("baton: warning: skipped skill {b}");
        }
        found
    } else if is_child {
        // A child looks skills up only when its role names some.
        if role.meta.skills.is_empty() {
            return Vec::new();
        }
        let (found, missing) = baton_app::project::skills(ctx).select(&role.meta.skills);
        for name in missing {
            errln!(
                "baton: warning: role {} names skill `{name}`, which is in none of the skill folders (see `baton skills`): skipped",
                role.meta.name
            );
        }
        found
    } else {
        let set = baton_app::project::skills(ctx);
        for bad in &set.bad {
            errln!("baton: warning: skipped skill {bad}");
        }
        set.skills.into_values().collect()
    };
    if !chosen.is_empty() && !role.meta.tools.iter().any(|t| t == "read") {
        errln!(
            "baton: warning: role {} has no `read` tool, so its skills ({}) cannot be opened: add `read` to its tools",
            role.meta.name,
            chosen.iter().map(|k| k.name.as_str()).collect::<Vec<_>>().join(", ")
        );
    }
    chosen
        .into_iter()
        .map(|k| baton_agent::agent::SkillRef {
            name: k.name,
            description: k.description,
            dir: k.dir,
        })
        .collect()
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
        match std::env::current_exe() {
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

/// Chooses the route: --replay > --model > --model-class > BATON_MODEL > BATON_MODEL_CLASS >
/// the resumed session's route > the role's class > models.default_class.
fn choose_route(
    args: &AgentArgs,
    ctx: &ProjectContext,
    role_class: Option<ModelClass>,
    resumed_model: Option<&str>,
    coordinator: Option<&str>,
) -> Result<(ResolvedRoute, Arc<dyn Provider>)> {
    let config = &ctx.config.config;
    if let Some(path) = &args.replay {
        let provider = Replay::from_file("replay".into(), path)
            .map_err(|e| anyhow::anyhow!("--replay {}: {e}", path.display()))?;
        let route = Route {
            provider: "replay".into(),
            model: path
                .file_stem()
                .map(|s| s.to_string_lossy().to_string())
                .unwrap_or_else(|| "cassette".into()),
            thinking: None,
        };
        let resolved = ResolvedRoute {
            route: route.clone(),
            class: None,
            provider: baton_protocol::config::ProviderConfig {
                kind: baton_protocol::config::ProviderKind::Replay,
                base_url: None,
                api_key_env: None,
                api_key_file: None,
                local: None,
                headers: Default::default(),
                cassette: Some(path.display().to_string()),
                max_output_tokens: None,
                stream_idle_timeout: None,
            },
            api_key: None,
            skipped: Vec::new(),
            profile: baton_model::catalog::Profile::builtin(
                baton_protocol::config::ProviderKind::Replay,
                &route.model,
            ),
        };
        return Ok((resolved, Arc::new(provider)));
    }
    let explicit_route = args
        .model
        .clone()
        .map(|m| ("--model", m))
        .or_else(|| process_env("BATON_MODEL").map(|m| ("BATON_MODEL", m)));
    let explicit_class = args
        .model_class
        .clone()
        .map(|c| ("--model-class", c))
        .or_else(|| process_env("BATON_MODEL_CLASS").map(|c| ("BATON_MODEL_CLASS", c)));
    let resolved = if let Some((from, text)) = explicit_route.filter(|_| args.model_class.is_none())
    {
        let route: Route = text.parse().map_err(|e| anyhow::anyhow!("{from}: {e}"))?;
        check_route(config, &route, &ProcessEnv).map_err(|e| anyhow::anyhow!("{from}: {e}"))?
    } else if let Some((from, text)) = explicit_class {
        let class: ModelClass = text.parse().map_err(|e| anyhow::anyhow!("{from}: {e}"))?;
        resolve_class(config, class, &ProcessEnv)?
    } else if let Some(text) = coordinator {
        // A routed session's own route is the Coordinator's.
        match text.parse::<ModelClass>() {
            Ok(class) => resolve_class(config, class, &ProcessEnv)?,
            Err(_) => {
                let route: Route = text
                    .parse()
                    .map_err(|e| anyhow::anyhow!("routing.coordinator: {e}"))?;
                check_route(config, &route, &ProcessEnv)?
            }
        }
    } else if let Some(m) = resumed_model {
        let route: Route = m
            .parse()
            .map_err(|e| anyhow::anyhow!("resumed session model: {e}"))?;
        check_route(config, &route, &ProcessEnv)?
    } else {
        let class = role_class.unwrap_or_else(|| default_class(config));
        resolve_class(config, class, &ProcessEnv)?
    };
    let provider = build_provider(&resolved, &ProcessEnv)?;
    Ok((resolved, provider))
}

/// What is known of a session while it is set up, for the `--json` stream of one refused before
/// it started.
struct Setup {
    role: String,
    model: String,
    cwd: String,
    resumed: bool,
    /// The session's own event stream began: from then on it reports its own end.
    streaming: bool,
}

pub fn run(mut args: AgentArgs) -> Result<Exit> {
    // A workflow dispatch (`baton run --record/--replay`) names its cassette in the environment.
    if args.replay.is_none() && args.record.is_none() {
        let file = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        args.replay = file("BATON_REPLAY_FILE");
        if args.replay.is_none() {
            args.record = file("BATON_RECORD_FILE");
        }
    }
    let json = args.json;
    let mut setup = Setup {
        role: args.role.clone(),
        model: String::new(),
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
            role: setup.role.clone(),
            model: setup.model.clone(),
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
    // A chat reads its input as it goes: a task given with it is only its first line.
    let task = match args.chat {
        _ if args.tui.is_some() => args.task.clone().filter(|t| !t.trim().is_empty()),
        _ if args.worker.is_some() => None,
        Some(_) => args.task.clone().filter(|t| !t.trim().is_empty()),
        // `--resume ID --compact` alone compacts and ends.
        None if args.compact && args.task.is_none() => None,
        None => Some(read_task(args.task.clone(), args.resume.is_some())?),
    };
    let compact = args.compact;
    let requested = args
        .routing
        .as_deref()
        .map(crate::session_routing::parse_control)
        .transpose()?;
    if let Some(path) = &args.record {
        let parent = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if !parent.is_dir() {
            bail!(
                "--record {}: the folder {} does not exist: create it or record elsewhere",
                path.display(),
                parent.display()
            );
        }
    }
    let config = &ctx.config.config;
    let state = state_dir(&ctx);

    let resumed = match &args.resume {
        Some(wanted) => {
            let id = baton_agent::session::resolve_id(&state, wanted)?;
            Some(SessionStore::open_seats(&state, &id)?)
        }
        None => None,
    };
    let role_name = match &resumed {
        Some((_, header, _)) if args.role == "implementer" => header.role.clone(),
        Some(_) | None => args.role.clone(),
    };
    setup.role = role_name.clone();
    let mut role = match &args.role_file {
        Some(path) => {
            let text = baton_text::input::read_input(path)
                .map_err(|e| anyhow::anyhow!("--role-file {}: {e}", path.display()))?;
            parse_role(
                &text,
                &path.display().to_string(),
                RoleSource::Project(path.display().to_string()),
            )?
        }
        None => {
            let dirs = role_dirs(&ctx.project_root);
            warn_skipped_roles(&dirs, &[&role_name]);
            find_role(&dirs, &role_name)?
        }
    };
    setup.role = role.meta.name.clone();
    // A role that delegates also hears back from its background delegations: `delegate_task`
    // brings `task_status`, `task_wait` and `task_cancel` with it.
    // Likewise a role with the Flow tools can resume or give up an interrupted Flow.
    let implied: [(&str, &[&str]); 2] = [
        (
            "delegate_task",
            &["task_status", "task_wait", "task_cancel"],
        ),
        (
            "delegate_flow",
            &["delegate_flow_resume", "delegate_flow_abandon"],
        ),
    ];
    for (listed, brings) in implied {
        if role.meta.tools.iter().any(|t| t == listed) {
            for t in brings {
                if !role.meta.tools.iter().any(|x| x == t) {
                    role.meta.tools.push(t.to_string());
                }
            }
        }
    }
    let resumed_model = resumed.as_ref().map(|(_, h, _)| h.model.clone());
    let routed = requested.is_some()
        || resumed.as_ref().is_some_and(|(_, h, _)| {
            baton_agent::routing::journal::path(&state, &h.session_id).exists()
        });
    let coordinator = config.routing.coordinator.as_deref().filter(|_| routed);
    let role_class = baton_roles::role_class(&role, config);
    if let (Some(asked), None) = (role.meta.model_class, role_class) {
        errln!(
            "baton: the built-in role {} asks for class {asked}, which has no route: using models.default_class ({})",
            role.meta.name,
            default_class(config)
        );
    }
    let (resolved, provider) = choose_route(
        &args,
        &ctx,
        role_class,
        resumed_model.as_deref(),
        coordinator,
    )?;
    setup.model = resolved.route.to_string();
    for s in &resolved.skipped {
        errln!("baton: skipped route {}", s.trim());
    }
    let info = &resolved.profile.info;
    if let (false, Some(level)) = (info.known, resolved.route.thinking) {
        if resolved.provider.kind != baton_protocol::config::ProviderKind::Replay {
            errln!(
                "baton: note: model `{}` is not in the model table, so :{level} becomes {}; if the model takes other values, describe it with [model_info.\"{}\"] (docs/providers.md)",
                resolved.route.model,
                info.thinking_plan(Some(level)),
                resolved.route.model
            );
        }
    }
    let recorder = args
        .record
        .as_ref()
        .map(|_| Arc::new(Recorder::new(provider.clone())));
    let provider: Arc<dyn Provider> = match &recorder {
        Some(r) => r.clone(),
        None => provider,
    };

    let settings = AgentSettings::resolve(
        &AgentFlags {
            max_turns: args.max_turns,
            sandbox: args.sandbox,
            approval: args.approval,
            child: std::env::var_os("BATON_CHILD").is_some_and(|v| !v.is_empty()),
        },
        role.meta.sandbox,
        config,
        &ctx.project_root,
        &process_env,
    )?;
    let route = {
        let mut r = resolved.route.clone();
        if r.thinking.is_none() {
            r.thinking = config.agent.thinking;
        }
        r
    };
    setup.model = route.to_string();
    let fallbacks =
        crate::model_fallbacks::class_fallbacks(config, &resolved, config.agent.thinking)
            .into_iter()
            .map(|mut f| {
                // With --record, every route's turns go to the one cassette, in the order they ran.
                if let Some(rec) = &recorder {
                    f.provider = Arc::new(rec.sharing(f.provider));
                }
                f
            })
            .collect();

    // The session's temp dir: `TMPDIR` of its commands, writable in the sandbox, removed at the end.
    let tmp_dir = SessionTmp::new();

    // Only a role that lists the delegation tools gets them, and children (BATON_CHILD=1) never
    // do, so delegation cannot recurse. Set up before the transcript is created, so nothing is
    // half-written if it fails.
    let is_child = std::env::var_os("BATON_CHILD").is_some_and(|v| !v.is_empty());
    let (host_tools, extra_instructions) = if is_child || args.no_delegate {
        (Vec::new(), Vec::new())
    } else {
        // The terminal UI owns the screen: delegations report into its side panel instead.
        delegation_tools(
            &ctx,
            args.json || args.tui.is_some() || args.worker.is_some(),
            &role.meta.tools,
            args.tui.as_ref().map(|f| f.tx.clone()),
        )
    };

    let skills = session_skills(&ctx, &role, is_child, &args.skill);

    let runtime = baton_app::runtime::current_thread()?;
    // The MCP servers the session uses, started before the transcript is created: one that
    // cannot start fails the session with nothing half-written.
    let mcp_names = baton_app::mcp_servers::selected(config, &role.meta.mcp, !is_child);
    let mcp = runtime
        .block_on(baton_app::mcp_servers::start(config, &mcp_names, &ctx.cwd))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    for w in &mcp.warnings {
        errln!("baton: warning: {w}");
    }

    let session_id = match &resumed {
        Some((_, header, _)) => header.session_id.clone(),
        None => uuid::Uuid::now_v7().to_string(),
    };
    // Checked before the transcript is created: a bad [routing] writes nothing.
    let routing = crate::session_routing::routing_spec(
        config,
        &state,
        &session_id,
        requested,
        &|mut f: Fallback| {
            if let Some(rec) = &recorder {
                f.provider = Arc::new(rec.sharing(f.provider));
            }
            f
        },
    )?;
    let (store, messages, session_id) = match resumed {
        Some((store, header, messages)) => (store, messages, header.session_id),
        None => {
            let id = session_id;
            // Excluding the state folder from git is a convenience: a failure is not fatal.
            let _ = state.ensure_excluded();
            let header = SessionHeader {
                session_id: id.clone(),
                role: role.meta.name.clone(),
                model: route.to_string(),
                cwd: ctx.cwd.display().to_string(),
                created: now_rfc3339(),
            };
            (SessionStore::create(&state, &header)?, Vec::new(), id)
        }
    };
    let resuming = args.resume.is_some();

    let retry = RetryPolicy::from_config(&config.retry);
    let spec = AgentSpec {
        session_id: session_id.clone(),
        role,
        route,
        provider,
        retry,
        max_turns: settings.max_turns,
        max_output_tokens: resolved
            .profile
            .options
            .max_output_tokens
            .or(resolved.provider.max_output_tokens),
        context_window: resolved.profile.info.context_window,
        compaction: crate::model_fallbacks::compaction_route(config)?,
        root: ctx.project_root.clone(),
        cwd: ctx.cwd.clone(),
        bash_timeout: settings.bash_timeout,
        context_files: settings.context_files,
        skills,
        prices: config.prices.clone(),
        env_filter: baton_agent::tools::EnvFilter::for_config(config),
        sandbox: settings.sandbox,
        tmp_dir: Some(tmp_dir.0.clone()),
        tools: builtin_tools(),
        host_tools,
        mcp_tools: mcp.tools.clone(),
        extra_instructions,
        heartbeat: settings.heartbeat,
        fallbacks,
        routing,
        approval: settings.approval,
    };
    let json = args.json;
    let chat = args.chat;
    setup.streaming = true;
    if let Some(front) = args.worker {
        let summary = runtime.block_on(async {
            let cancel = CancellationToken::new();
            let _signals = watch_signals(cancel.clone());
            let mut store = Some(store);
            let s =
                crate::worker_serve::serve(front, &spec, messages, resuming, &mut store, &cancel)
                    .await;
            if let Some(store) = store.as_mut() {
                if let Err(e) = store.end(s.outcome, s.reason) {
                    errln!("baton: cannot record the end of the session in its transcript: {e}");
                }
            }
            s
        });
        runtime.block_on(mcp.shutdown());
        return Ok(exit_code(&summary, false));
    }
    if let Some(front) = args.tui {
        let branch = baton_git::Git::new(&ctx.cwd)
            .current_branch()
            .ok()
            .flatten();
        let history = messages;
        let (summary, err) = runtime.block_on(async {
            let cancel = CancellationToken::new();
            let _signals = watch_signals(cancel.clone());
            let mut store = Some(store);
            let project = (state.clone(), ctx.project_root.clone());
            let start = crate::tui_session::Start {
                history,
                resuming,
                task,
                branch,
                project,
            };
            let r = crate::tui_session::serve(front, &spec, start, &mut store, &cancel).await;
            if let Some(store) = store.as_mut() {
                if let Ok(s) = &r {
                    if let Err(e) = store.end(s.outcome, s.reason) {
                        errln!(
                            "baton: cannot record the end of the session in its transcript: {e}"
                        );
                    }
                }
            }
            match r {
                Ok(s) => (Some(s), None),
                Err(e) => (None, Some(e)),
            }
        });
        runtime.block_on(mcp.shutdown());
        if let Some(e) = err {
            return Err(e);
        }
        if let Some(s) = &summary {
            errln!(
                "baton: session {session_id}: {} ({} turns); continue it with `baton tui --resume {session_id}`",
                s.outcome,
                s.turns
            );
        }
        return Ok(Exit::Ok);
    }
    let summary = runtime.block_on(async move {
        let cancel = CancellationToken::new();
        let interrupted = watch_signals(cancel.clone());
        let mut store = Some(store);
        let mut printer = Printer::new(json);
        // The queue pair's input: one task, or (`baton chat`) the lines of stdin as they come.
        let (tx, mut inbox, idle) = Inbox::with_idle_signal();
        if compact {
            let _ = tx.send(Submission::Compact(None));
        }
        if let Some(task) = task {
            let _ = tx.send(Submission::Input(task));
        }
        let _reader = match chat {
            Some(c) => Some(crate::session_routing::read_lines(
                tx,
                (!c.no_wait).then_some(idle),
            )),
            None => {
                drop(tx);
                None
            }
        };
        let summary = agent::serve(
            &spec,
            messages,
            resuming,
            &mut store,
            &cancel,
            &mut inbox,
            &mut |ev| printer.event(ev),
        )
        .await;
        if let Some(store) = store.as_mut() {
            if let Err(e) = store.end(summary.outcome, summary.reason) {
                errln!("baton: cannot record the end of the session in its transcript: {e}");
            }
        }
        printer.finish(&summary, &session_id);
        (summary, interrupted.is_cancelled())
    });
    let (summary, interrupted) = summary;
    runtime.block_on(mcp.shutdown());
    if let (Some(path), Some(rec)) = (&args.record, &recorder) {
        // The model was called: a cassette that cannot be saved is a failure, not a refusal.
        rec.save(path)
            .map_err(|e| anyhow::anyhow!("--record {}: {e}", path.display()))
            .after_work_began()?;
        if !json {
            errln!("baton: cassette written to {}", path.display());
        }
    }
    Ok(exit_code(&summary, interrupted))
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
