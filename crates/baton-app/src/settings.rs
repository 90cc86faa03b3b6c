//! What an agent session runs with, resolved in one place: its flags over the environment
//! (`BATON_MAX_TURNS`, `BATON_HEARTBEAT`) over the config files (`[agent]`, `[sandbox]`, the
//! role's `sandbox`) over the defaults. A bad value is an error naming where it came from and
//! the fix, before anything is written.

use std::path::Path;
use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use baton_protocol::config::{Config, HumanDuration};
use baton_protocol::sandbox::SandboxMode;
use baton_sandbox::Policy as SandboxPolicy;

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
