//! The project a command runs in: its directory, root and config, and what follows from them
//! (role folders, the state folder, the delegation environment). Shared by `agent`, `task`,
//! `flow` and the info commands.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use baton_agent::tools::EnvFilter;
use baton_exec::delegate::DelegateEnv;
use baton_exec::executor::Executor;
use baton_exec::types::{Limits, DEFAULT_OUTPUT_CAP};
use baton_exec::worktree::default_worktree_root;
use baton_model::routes::{read_key_file, ProcessEnv};
use baton_protocol::config::Config;
use baton_roles::{load_role_files, RoleDirs};
use baton_state::project_root;

use baton_text::redact::Redactor;

use crate::config::{self, user_config_dir, LoadedConfig};

/// The bound on what a delegation hands back to its caller, and on each result of `baton mcp`:
/// `executor.output_cap_bytes`, else 50 KiB.
pub fn output_cap(ctx: &ProjectContext) -> usize {
    ctx.config
        .config
        .executor
        .output_cap_bytes
        .map_or(DEFAULT_OUTPUT_CAP, |b| b as usize)
}

/// Where a command runs and what config applies there.
pub struct ProjectContext {
    pub cwd: PathBuf,
    pub project_root: PathBuf,
    pub config: LoadedConfig,
}

/// The working directory a command runs in (`--cwd`, else the current one), made absolute; an
/// error names `--cwd` when it is not an existing directory.
pub fn working_dir(cwd: Option<PathBuf>) -> Result<PathBuf> {
    let cwd = match cwd {
        Some(c) => c,
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let cwd = cwd
        .canonicalize()
        .map_err(|e| anyhow::anyhow!("--cwd {}: {e}: pass an existing directory", cwd.display()))?;
    if !cwd.is_dir() {
        bail!("--cwd {} is not a directory", cwd.display());
    }
    Ok(cwd)
}

pub fn project_context(cwd: Option<PathBuf>) -> Result<ProjectContext> {
    let cwd = working_dir(cwd)?;
    let project_root = project_root(&cwd);
    for nested in baton_state::nested_baton_dirs(&cwd, &project_root) {
        errln!(
            "baton: warning: {} is inside the repository at {}, so it is the repository's content, \
             not a project: its settings, roles and skills are not read (the project is the \
             repository's top)",
            nested.display(),
            project_root.display()
        );
    }
    let mut config = config::load(&project_root)?;
    baton_text::redact::install(Redactor::new(known_secrets(&config.config)));
    if !config.ignored.is_empty() {
        errln!(
            "baton: warning: {} is not trusted, so these settings in it were ignored: {}; read \
             the file, then run `baton trust` to apply them",
            project_root.join(".baton/config.toml").display(),
            config.ignored.join(", ")
        );
        if ask_trust() {
            crate::trust::trust(&project_root)?;
            errln!("baton: trusted {}", project_root.display());
            config = config::load(&project_root)?;
            baton_text::redact::install(Redactor::new(known_secrets(&config.config)));
        }
    }
    Ok(ProjectContext {
        cwd,
        project_root,
        config,
    })
}

/// Every provider key this process knows, for redaction: the values of the variables that may
/// hold one (each configured `api_key_env`, and every variable whose name looks like a
/// credential — `*_KEY`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*`, …, whatever `sandbox.env_allow`
/// lets through to commands) and the keys in configured `api_key_file`s.
fn known_secrets(config: &Config) -> Vec<String> {
    let names = EnvFilter::new(config.key_variables(), Vec::new()).secret_now();
    let mut secrets: Vec<String> = names
        .iter()
        .filter_map(|name| std::env::var_os(name)?.into_string().ok())
        .collect();
    for provider in config.providers.values() {
        if let Some(file) = &provider.api_key_file {
            if let Ok(Some(key)) = read_key_file(file, &ProcessEnv) {
                secrets.push(key);
            }
        }
    }
    secrets
}

/// When stdin is a terminal, asks whether to trust the project's ignored settings now (default
/// no); `false` otherwise.
fn ask_trust() -> bool {
    use std::io::{BufRead, IsTerminal, Write};
    if !std::io::stdin().is_terminal() {
        return false;
    }
    let mut err = std::io::stderr();
    let _ = write!(err, "Trust these settings of this project now? [y/N] ");
    let _ = err.flush();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).is_err() {
        return false;
    }
    matches!(line.trim().to_lowercase().as_str(), "y" | "yes")
}

/// Trusted now, and asked again each time the roles are loaded (see [`baton_roles::Trust`]).
fn trust_of(project_root: &Path) -> baton_roles::Trust {
    if !crate::trust::is_trusted(project_root) {
        return baton_roles::Trust::No;
    }
    let root = project_root.to_path_buf();
    baton_roles::Trust::Recheck(std::sync::Arc::new(move || crate::trust::is_trusted(&root)))
}

pub fn role_dirs(project_root: &Path) -> RoleDirs {
    RoleDirs {
        user: user_config_dir().map(|d| d.join("roles")),
        project: Some(project_root.join(".baton").join("roles")),
        project_trusted: trust_of(project_root),
    }
}

/// The folders the project's skills are looked up in, in order (`skills.paths` adds,
/// `skills.ignore` removes).
pub fn skill_dirs(ctx: &ProjectContext) -> Vec<baton_roles::skills::SkillDir> {
    baton_exec::delegate::skill_dirs(&ctx.project_root, &ctx.config.config)
}

/// Every skill of the project, by name.
pub fn skills(ctx: &ProjectContext) -> baton_roles::skills::SkillSet {
    baton_roles::skills::discover(&skill_dirs(ctx))
}

/// Warns on stderr, one line each, of the bad role files a command skips: those that do not
/// define one of the roles it `asked` for (a bad file of an asked role fails the lookup instead).
pub fn warn_skipped_roles(dirs: &RoleDirs, asked: &[&str]) {
    let set = load_role_files(dirs);
    for bad in set.skipped(asked) {
        errln!("baton: warning: skipped role file {}", bad.one_line());
    }
    // A pi role's extensions: read, not loaded.
    for r in set
        .roles
        .iter()
        .filter(|r| asked.contains(&r.meta.name.as_str()) && !r.meta.extensions.is_empty())
    {
        errln!(
            "baton: warning: role {} lists pi extensions ({}): baton loads none of them, they are skipped; list MCP servers under `mcp:` instead",
            r.meta.name,
            r.meta.extensions.join(", ")
        );
    }
}

pub fn state_dir(ctx: &ProjectContext) -> StateDir {
    StateDir::for_project(&ctx.project_root)
}

/// Builds the delegation environment of a project.
pub fn delegate_env(ctx: &ProjectContext) -> Result<DelegateEnv> {
    let config = ctx.config.config.clone();
    let e = &config.executor;
    // Zero timeouts were refused when the config was loaded (`Config::check`).
    let limits = Limits {
        idle_timeout: e
            .idle_timeout
            .map_or(Limits::default().idle_timeout, |d| d.0),
        max_timeout: e.max_timeout.map_or(Limits::default().max_timeout, |d| d.0),
    };
    // seed 004: a child's whole-run limit is longer than its idle limit (else the idle one
    // could never fire first and a quiet child dies at the whole-run limit instead).
    if limits.max_timeout <= limits.idle_timeout {
        anyhow::bail!(
            "executor.max_timeout ({}s) must be longer than executor.idle_timeout ({}s): raise max_timeout or lower idle_timeout (defaults 30m and 10m)",
            limits.max_timeout.as_secs(),
            limits.idle_timeout.as_secs()
        );
    }
    let output_cap = output_cap(ctx);
    Ok(DelegateEnv {
        worktree_root: default_worktree_root(e.worktree_root.as_deref())?,
        config,
        role_dirs: role_dirs(&ctx.project_root),
        cwd: ctx.cwd.clone(),
        state: state_dir(ctx),
        baton_exe: baton_process::own_program().context("cannot find the baton executable")?,
        limits,
        output_cap,
        env: Arc::new(ProcessEnv),
        reload: Some({
            let root = ctx.project_root.clone();
            Arc::new(move || crate::config::load(&root).ok().map(|c| c.config))
        }),
    })
}

/// `BATON_MAX_SUBAGENTS` > `executor.max_concurrency` > 5.
pub fn executor_for(env: &DelegateEnv) -> Result<Executor> {
    let n = match std::env::var("BATON_MAX_SUBAGENTS") {
        Ok(v) if !v.trim().is_empty() => v
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| {
                anyhow::anyhow!("BATON_MAX_SUBAGENTS=`{v}` must be a whole number of at least 1")
            })?,
        _ => env
            .config
            .executor
            .max_concurrency
            .map_or(5, |n| n as usize),
    };
    if n == 0 {
        bail!("executor.max_concurrency must be at least 1");
    }
    Ok(Executor::new(n).with_project_slots(env.state.root().join("slots")))
}

pub use baton_state::{now_rfc3339, StateDir};
