//! What an agent session runs with, resolved in one place before anything is written: its
//! flags over the environment (`BATON_MODEL`, `BATON_MODEL_CLASS`, `BATON_MAX_TURNS`,
//! `BATON_HEARTBEAT`, `BATON_REPLAY_FILE`, `BATON_RECORD_FILE`, `BATON_CHILD`) over the config
//! files (project over user: `[agent]`, `[sandbox]`, `[models]`, `[routing]`, `[retry]`, the
//! role's file) over the defaults. [`SessionConfig::resolve`] is the one resolve step of a
//! session (its role, route, fallbacks, limits, sandbox, approvals, skills, MCP servers and
//! routing) and [`SessionConfig::agent_spec`] the one place the loop's `AgentSpec` is built from
//! it. A bad value is an error naming where it came from and the fix.

mod role;
mod route;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use baton_agent::agent::{AgentSpec, Fallback, SkillRef};
use baton_agent::routing::state::Control;
use baton_agent::routing::RoutingSpec;
use baton_agent::session::SessionHeader;
use baton_agent::tools::{EnvFilter, Tool};
use baton_model::replay::Recorder;
use baton_model::retry::RetryPolicy;
use baton_model::routes::ResolvedRoute;
use baton_model::Provider;
use baton_protocol::config::{Config, HumanDuration, Price};
use baton_protocol::role::RoleSpec;
use baton_protocol::sandbox::SandboxMode;
use baton_protocol::ApprovalPolicy;
use baton_sandbox::Policy as SandboxPolicy;

use crate::project::ProjectContext;

/// The role a session runs as when none is named (a resumed session keeps its own).
pub const DEFAULT_ROLE: &str = "implementer";

/// The flags of a session's command (`baton agent`, `chat`, `tui`, `worker serve`) that settle
/// its config; `None` or empty when not given.
#[derive(Debug, Clone, Default)]
pub struct SessionFlags {
    /// `--role` ([`DEFAULT_ROLE`] unless named: then a resumed session keeps its own).
    pub role: String,
    pub role_file: Option<PathBuf>,
    /// `--model provider/model[:thinking]`.
    pub model: Option<String>,
    pub model_class: Option<String>,
    pub replay: Option<PathBuf>,
    pub record: Option<PathBuf>,
    pub max_turns: Option<u32>,
    pub sandbox: Option<SandboxMode>,
    pub approval: Option<ApprovalPolicy>,
    pub no_delegate: bool,
    /// `--routing`: the control a routed session starts with.
    pub routing: Option<Control>,
    /// `--skill DIR`, repeated.
    pub skills: Vec<PathBuf>,
}

/// What a session's config is resolved from.
#[derive(Clone, Copy)]
pub struct SessionInputs<'a> {
    pub ctx: &'a ProjectContext,
    pub flags: &'a SessionFlags,
    /// The header of the session resumed (`--resume`), if any.
    pub resumed: Option<&'a SessionHeader>,
    /// The session's id: the resumed one's, or the one it is about to get.
    pub session_id: &'a str,
    /// The environment ([`process_env`] outside tests).
    pub env: Env<'a>,
}

/// What is known of a session while its config is resolved: its role and route so far, for the
/// event stream of a session refused before it started.
#[derive(Debug, Clone, Default)]
pub struct Known {
    pub role: String,
    pub model: String,
}

/// Everything a session runs with, resolved once by [`SessionConfig::resolve`].
pub struct SessionConfig {
    /// A delegated child (`BATON_CHILD`, read here and nowhere else): headless, without the
    /// delegation tools (delegation cannot recurse), `agent.approval` or `agent.mcp_servers`,
    /// with only the skills its role names.
    pub child: bool,
    pub role: RoleSpec,
    /// Its route (with `agent.thinking` when the route names no level), provider (recorded
    /// with `--record`), output limit and context window.
    pub seat: Fallback,
    /// `--record FILE` (or `BATON_RECORD_FILE`): the cassette file and the recorder every
    /// route's turns go to, in the order they ran.
    pub recorder: Option<(PathBuf, Arc<Recorder>)>,
    /// The later usable routes of its class, to fail over to.
    pub fallbacks: Vec<Fallback>,
    /// The route of `agent.compaction_class`.
    pub compaction: Option<Fallback>,
    /// Turns, heartbeat, context files, `bash` timeout, sandbox, approvals.
    pub settings: AgentSettings,
    pub retry: RetryPolicy,
    /// Whether it is offered the delegation tools its role lists: not in a child, not with
    /// `--no-delegate`.
    pub delegate: bool,
    pub skills: Vec<SkillRef>,
    /// The MCP servers it uses as tools: its role's `mcp`, and in a main session
    /// `agent.mcp_servers`.
    pub mcp_servers: Vec<String>,
    /// A routed session's participants and journal.
    pub routing: Option<RoutingSpec>,
    pub prices: BTreeMap<String, Price>,
    /// What its commands do not get of baton's environment.
    pub env_filter: EnvFilter,
    /// A local server asked about its route's model, the answer not read yet: read into `seat`
    /// when the loop's spec is made.
    local: Option<route::LocalLearning>,
}

/// What a session runs with besides its config: its id, folders and what the host set up for it.
pub struct SessionParts {
    pub session_id: String,
    pub root: PathBuf,
    pub cwd: PathBuf,
    /// The session's temp dir (`TMPDIR` of its commands).
    pub tmp_dir: Option<PathBuf>,
    /// The delegation tools the host offers, and their sections of the system prompt.
    pub host_tools: Vec<Arc<dyn Tool>>,
    pub extra_instructions: Vec<String>,
    /// The tools of its MCP servers, started.
    pub mcp_tools: Vec<Arc<dyn Tool>>,
}

impl SessionConfig {
    /// Resolves a session's config; `known` follows what is resolved so far. Warnings (a skipped
    /// route, role file or skill, a route that cannot be failed over to) go to stderr.
    pub fn resolve(inputs: &SessionInputs<'_>, known: &mut Known) -> Result<SessionConfig> {
        let SessionInputs {
            ctx,
            flags,
            resumed,
            session_id,
            env,
        } = *inputs;
        let config = &ctx.config.config;
        let child = env("BATON_CHILD").is_some();
        let (replay, record) = cassettes(flags, env)?;
        let state = crate::project::state_dir(ctx);
        let name = match resumed {
            Some(h) if flags.role == DEFAULT_ROLE => h.role.clone(),
            Some(_) | None => flags.role.clone(),
        };
        known.role = name.clone();
        let role = role::role(ctx, flags.role_file.as_deref(), &name)?;
        known.role = role.meta.name.clone();
        let routed = flags.routing.is_some()
            || resumed.is_some_and(|h| {
                baton_agent::routing::journal::path(&state, &h.session_id).exists()
            });
        let role_class = baton_roles::role_class(&role, config);
        // Said only when it changes what the user would expect: not when a flag or the resumed
        // session picks the model, not in a child (its parent said it), and not when the user
        // set `models.default_class` (the fallback is then their own choice).
        let quiet = flags.model.is_some()
            || flags.model_class.is_some()
            || resumed.is_some()
            || child
            || config.models.default_class.is_some();
        if let (Some(asked), None, false) = (role.meta.model_class, role_class, quiet) {
            errln!(
                "baton: the built-in role {} asks for class {asked}, which has no route: using models.default_class ({})",
                role.meta.name,
                baton_model::routes::default_class(config)
            );
        }
        let ask = route::RouteAsk {
            replay: replay.as_deref(),
            model: flags.model.as_deref(),
            model_class: flags.model_class.as_deref(),
            resumed: resumed.map(|h| h.model.as_str()),
            coordinator: config.routing.coordinator.as_deref().filter(|_| routed),
            role_class,
        };
        let (mut resolved, mut provider) = route::choose(config, &ask, env)?;
        known.model = resolved.route.to_string();
        note_route(&resolved);
        let agent_flags = AgentFlags {
            max_turns: flags.max_turns,
            sandbox: flags.sandbox,
            approval: flags.approval,
            child,
        };
        let settings = AgentSettings::resolve(
            &agent_flags,
            role.meta.sandbox,
            config,
            &ctx.project_root,
            env,
        )?;
        let compaction = route::compaction_route(config)?;
        let mut local = route::ask_local(config, &resolved);
        if record.is_some() {
            // The cassette records the provider the session runs on: learned now.
            if let Some((learned, p)) = local.take().and_then(route::LocalLearning::learn) {
                resolved = learned;
                provider = p;
            }
        }
        let recorder = record.map(|path| (path, Arc::new(Recorder::new(provider.clone()))));
        let provider: Arc<dyn Provider> = match &recorder {
            Some((_, r)) => r.clone(),
            None => provider,
        };
        let mut route = resolved.route.clone();
        if route.thinking.is_none() {
            route.thinking = config.agent.thinking;
        }
        known.model = route.to_string();
        // With --record, every route's turns go to the one cassette, in the order they ran.
        let wrap = |mut f: Fallback| {
            if let Some((_, rec)) = &recorder {
                f.provider = Arc::new(rec.sharing(f.provider));
            }
            f
        };
        let fallbacks = route::class_fallbacks(config, &resolved, config.agent.thinking)
            .into_iter()
            .map(wrap)
            .collect();
        let skills = role::skills(ctx, &role, child, &flags.skills);
        let mcp_servers = crate::mcp_servers::selected(config, &role.meta.mcp, !child);
        // Checked before the transcript is created: a bad [routing] writes nothing.
        let routing = route::routing_spec(config, &state, session_id, flags.routing, &wrap)?;
        Ok(SessionConfig {
            child,
            seat: route::fallback(&resolved, route, provider),
            role,
            recorder,
            fallbacks,
            compaction,
            settings,
            retry: RetryPolicy::from_config(&config.retry),
            delegate: !child && !flags.no_delegate,
            skills,
            mcp_servers,
            routing,
            prices: config.prices.clone(),
            env_filter: EnvFilter::for_config(config),
            local,
        })
    }

    /// The local server's answer about the route's model, read into the seat
    /// ([`route::LocalLearning`]).
    fn learn_local(&mut self) {
        if let Some((resolved, provider)) = self.local.take().and_then(route::LocalLearning::learn)
        {
            let route = self.seat.route.clone();
            self.seat = route::fallback(&resolved, route, provider);
        }
    }

    /// The loop's spec of this session: the one place an `AgentSpec` is made from a resolved
    /// config.
    pub fn agent_spec(mut self, parts: SessionParts) -> AgentSpec {
        self.learn_local();
        let settings = self.settings;
        AgentSpec {
            retry: self.retry,
            max_turns: settings.max_turns,
            compaction: self.compaction,
            cwd: parts.cwd,
            bash_timeout: settings.bash_timeout,
            env_filter: self.env_filter,
            sandbox: settings.sandbox,
            tmp_dir: parts.tmp_dir,
            context_files: settings.context_files,
            skills: self.skills,
            prices: self.prices,
            host_tools: parts.host_tools,
            mcp_tools: parts.mcp_tools,
            extra_instructions: parts.extra_instructions,
            heartbeat: settings.heartbeat,
            fallbacks: self.fallbacks,
            routing: self.routing,
            approval: settings.approval,
            checkpoints: !self.child,
            ..AgentSpec::new(parts.session_id, self.role, self.seat, parts.root)
        }
    }
}

/// `--replay` / `--record`, else (neither given: a workflow's dispatch, `baton run --record /
/// --replay`) `BATON_REPLAY_FILE`, else `BATON_RECORD_FILE`. A cassette to record must go to a
/// folder that exists.
fn cassettes(flags: &SessionFlags, env: Env<'_>) -> Result<(Option<PathBuf>, Option<PathBuf>)> {
    let (mut replay, mut record) = (flags.replay.clone(), flags.record.clone());
    if replay.is_none() && record.is_none() {
        replay = env("BATON_REPLAY_FILE").map(PathBuf::from);
        if replay.is_none() {
            record = env("BATON_RECORD_FILE").map(PathBuf::from);
        }
    }
    if let Some(path) = &record {
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
    Ok((replay, record))
}

/// What the user should know of the route chosen: the routes skipped on the way, and a thinking
/// level given to a model the table does not know.
fn note_route(resolved: &ResolvedRoute) {
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
}

/// The flags of `baton agent` / `baton chat` that settle a setting.
#[derive(Debug, Clone, Default)]
pub struct AgentFlags {
    pub max_turns: Option<u32>,
    pub sandbox: Option<SandboxMode>,
    pub approval: Option<baton_protocol::ApprovalPolicy>,
    /// A delegated child (`BATON_CHILD=1`): headless, its parent's delegation was the approval,
    /// so `agent.approval` does not apply to it (only `--approval`).
    pub child: bool,
}

/// The settings of one session.
#[derive(Debug, Clone)]
pub struct AgentSettings {
    /// Turns at most, the last one reserved for the handoff report (at least 2).
    pub max_turns: u32,
    /// How often a silent turn reports that it is alive.
    pub heartbeat: Duration,
    /// Files read into every prompt, relative to the project root.
    pub context_files: Vec<String>,
    /// The `bash` tool's timeout.
    pub bash_timeout: Duration,
    /// The sandbox of the session's commands.
    pub sandbox: SandboxPolicy,
    /// When the session asks before a tool call: `--approval`, else `agent.approval` (not in a
    /// child), else never.
    pub approval: baton_protocol::ApprovalPolicy,
}

/// `/model NAME`: the routes a session switches to, a model class (its first usable route, then
/// its later ones to fail over to) or one route, with `thinking` where the route sets none.
/// An error names what is wrong and what to give instead.
pub fn switch_routes(
    config: &Config,
    text: &str,
    thinking: Option<baton_protocol::ThinkingLevel>,
) -> Result<Vec<baton_agent::agent::Fallback>> {
    route::switch_chain(config, text, thinking)
}

/// What `/model` can switch to: each class with a usable route (`fast (provider/model)`), then
/// every route the classes name, each once.
pub fn route_choices(config: &Config) -> Vec<String> {
    use baton_protocol::ModelClass;
    let mut out = Vec::new();
    let mut routes: Vec<String> = Vec::new();
    for class in ModelClass::ALL {
        if let Ok(r) =
            baton_model::routes::resolve_class(config, class, &baton_model::routes::ProcessEnv)
        {
            out.push(format!("{class} ({})", r.route));
        }
        for r in config
            .models
            .class(class)
            .map(|l| l.routes())
            .unwrap_or_default()
        {
            let r = r.to_string();
            if !routes.contains(&r) {
                routes.push(r);
            }
        }
    }
    out.extend(routes);
    out
}

/// Reads a variable of the environment; blank is unset.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The process's environment, blank values unset.
pub fn process_env(key: &str) -> Option<String> {
    std::env::var(key).ok().filter(|v| !v.trim().is_empty())
}

impl AgentSettings {
    /// Resolves every setting of a session of a role whose file asks for `role_sandbox`, in a
    /// project at `root`.
    pub fn resolve(
        flags: &AgentFlags,
        role_sandbox: Option<SandboxMode>,
        config: &Config,
        root: &Path,
        env: Env<'_>,
    ) -> Result<AgentSettings> {
        let mode = SandboxPolicy::choose_mode(flags.sandbox, role_sandbox, config.sandbox.mode);
        Ok(AgentSettings {
            max_turns: max_turns(flags, config, env)?,
            heartbeat: heartbeat(env)?,
            context_files: context_files(config)?,
            bash_timeout: config
                .agent
                .bash_timeout
                .map(|d| d.0)
                .unwrap_or(baton_agent::tools::DEFAULT_BASH_TIMEOUT),
            sandbox: SandboxPolicy::from_config(config, mode, root),
            approval: flags
                .approval
                .or(config.agent.approval.filter(|_| !flags.child))
                .unwrap_or_default(),
        })
    }
}

/// `--max-turns`, else `BATON_MAX_TURNS`, else `agent.max_turns`, else the default; the first
/// that is set wins and an error names it.
fn max_turns(flags: &AgentFlags, config: &Config, env: Env<'_>) -> Result<u32> {
    let (n, source) = match (
        flags.max_turns,
        env("BATON_MAX_TURNS"),
        config.agent.max_turns,
    ) {
        (Some(n), _, _) => (n, "--max-turns"),
        (None, Some(v), _) => (
            v.trim().parse::<u32>().map_err(|_| {
                anyhow!("BATON_MAX_TURNS=`{v}` must be a whole number of at least 2")
            })?,
            "BATON_MAX_TURNS",
        ),
        (None, None, Some(n)) => (n, "agent.max_turns"),
        (None, None, None) => (baton_agent::agent::DEFAULT_MAX_TURNS, "the default"),
    };
    // The last turn is reserved for the handoff report: below 2 no turn would be left to work.
    if n < 2 {
        bail!(
            "{source} must be at least 2 (it is {n}): the last turn is reserved for the handoff report, so 2 gives one working turn and the report"
        );
    }
    Ok(n)
}

/// `BATON_HEARTBEAT` (a duration such as `30s`), else the default; at least 10 ms.
fn heartbeat(env: Env<'_>) -> Result<Duration> {
    let Some(v) = env("BATON_HEARTBEAT") else {
        return Ok(baton_agent::agent::DEFAULT_HEARTBEAT);
    };
    let d = v
        .parse::<HumanDuration>()
        .map_err(|e| anyhow!("BATON_HEARTBEAT: {e}"))?
        .0;
    if d.is_zero() {
        bail!("BATON_HEARTBEAT={v}: the heartbeat interval must be more than 0: give one such as 30s, or unset it for the default");
    }
    Ok(d.max(Duration::from_millis(10)))
}

/// `agent.context_files`, else `AGENTS.md` and `CLAUDE.md`; each must be a relative path inside
/// the project.
fn context_files(config: &Config) -> Result<Vec<String>> {
    let files = config
        .agent
        .context_files
        .clone()
        .unwrap_or_else(|| vec!["AGENTS.md".into(), "CLAUDE.md".into()]);
    if let Some(bad) = files
        .iter()
        .find(|n| !baton_agent::agent::context_file_name_ok(n))
    {
        bail!(
            "agent.context_files: `{bad}` is not a path inside the project; context files are read \
             into every prompt, so they must be relative paths under the project root without `..`"
        );
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    fn resolve(flags: AgentFlags, config: &Config, env: Env<'_>) -> Result<AgentSettings> {
        AgentSettings::resolve(&flags, None, config, Path::new("/project"), env)
    }

    #[test]
    fn a_flag_beats_the_environment_which_beats_the_files_which_beat_the_default() {
        let mut config = Config::default();
        let none = env_of(&[]);
        assert_eq!(
            resolve(AgentFlags::default(), &config, &none)
                .unwrap()
                .max_turns,
            baton_agent::agent::DEFAULT_MAX_TURNS
        );
        config.agent.max_turns = Some(7);
        assert_eq!(
            resolve(AgentFlags::default(), &config, &none)
                .unwrap()
                .max_turns,
            7
        );
        let env = env_of(&[("BATON_MAX_TURNS", "9")]);
        assert_eq!(
            resolve(AgentFlags::default(), &config, &env)
                .unwrap()
                .max_turns,
            9
        );
        let flags = AgentFlags {
            max_turns: Some(3),
            ..AgentFlags::default()
        };
        // Approvals: the flag, else the config (not in a child), else never.
        let mut c = config.clone();
        c.agent.approval = Some(baton_protocol::ApprovalPolicy::OnWrite);
        let s = AgentSettings::resolve(&AgentFlags::default(), None, &c, Path::new("/p"), &none)
            .unwrap();
        assert_eq!(s.approval, baton_protocol::ApprovalPolicy::OnWrite);
        let child = AgentFlags {
            child: true,
            ..AgentFlags::default()
        };
        let s = AgentSettings::resolve(&child, None, &c, Path::new("/p"), &none).unwrap();
        assert_eq!(s.approval, baton_protocol::ApprovalPolicy::Never);
        let flag = AgentFlags {
            approval: Some(baton_protocol::ApprovalPolicy::Always),
            child: true,
            ..AgentFlags::default()
        };
        let s = AgentSettings::resolve(&flag, None, &c, Path::new("/p"), &none).unwrap();
        assert_eq!(s.approval, baton_protocol::ApprovalPolicy::Always);
        assert_eq!(resolve(flags, &config, &env).unwrap().max_turns, 3);
        // The sandbox: the flag, else the role, else the config, else workspace-write.
        let s = resolve(AgentFlags::default(), &config, &none).unwrap();
        assert_eq!(s.sandbox.mode, SandboxMode::WorkspaceWrite);
        config.sandbox.mode = Some(SandboxMode::ReadOnly);
        let s = AgentSettings::resolve(
            &AgentFlags::default(),
            Some(SandboxMode::DangerFullAccess),
            &config,
            Path::new("/p"),
            &none,
        )
        .unwrap();
        assert_eq!(s.sandbox.mode, SandboxMode::DangerFullAccess);
        let s = resolve(AgentFlags::default(), &config, &none).unwrap();
        assert_eq!(s.sandbox.mode, SandboxMode::ReadOnly);
    }

    #[test]
    fn a_cassette_flag_beats_the_workflow_s_environment_and_a_recording_needs_its_folder() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("run.cassette").display().to_string();
        let env = env_of_owned(vec![
            ("BATON_REPLAY_FILE", "/r/replay.json".into()),
            ("BATON_RECORD_FILE", file.clone()),
        ]);
        let none = SessionFlags::default();
        assert_eq!(
            cassettes(&none, &env).unwrap(),
            (Some(PathBuf::from("/r/replay.json")), None)
        );
        let record_only = env_of_owned(vec![("BATON_RECORD_FILE", file.clone())]);
        assert_eq!(
            cassettes(&none, &record_only).unwrap(),
            (None, Some(PathBuf::from(&file)))
        );
        // Either flag switches both variables off.
        let flags = SessionFlags {
            record: Some(dir.path().join("mine.cassette")),
            ..SessionFlags::default()
        };
        assert_eq!(
            cassettes(&flags, &env).unwrap(),
            (None, Some(dir.path().join("mine.cassette")))
        );
        let flags = SessionFlags {
            record: Some(dir.path().join("missing/x.cassette")),
            ..SessionFlags::default()
        };
        let e = cassettes(&flags, &env_of(&[])).unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
    }

    fn env_of_owned(pairs: Vec<(&'static str, String)>) -> impl Fn(&str) -> Option<String> {
        move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn a_bad_value_is_an_error_naming_its_source() {
        let mut config = Config::default();
        let e = resolve(
            AgentFlags::default(),
            &config,
            &env_of(&[("BATON_MAX_TURNS", "lots")]),
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("BATON_MAX_TURNS=`lots`"), "{e}");
        config.agent.max_turns = Some(1);
        let e = resolve(AgentFlags::default(), &config, &env_of(&[])).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("agent.max_turns must be at least 2"),
            "{e}"
        );
        let e = resolve(
            AgentFlags::default(),
            &Config::default(),
            &env_of(&[("BATON_HEARTBEAT", "0s")]),
        )
        .unwrap_err();
        assert!(e.to_string().contains("must be more than 0"), "{e}");
        let mut config = Config::default();
        config.agent.context_files = Some(vec!["../secrets".into()]);
        let e = resolve(AgentFlags::default(), &config, &env_of(&[])).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("agent.context_files: `../secrets`"),
            "{e}"
        );
    }
}
