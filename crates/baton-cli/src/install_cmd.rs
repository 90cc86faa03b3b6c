//! `baton install claude`: the Claude Code plugin (`plugins/claude-code/baton`, built into the
//! binary) written to baton's data folder as a local marketplace, then added and installed with
//! Claude Code's own CLI. Running it again writes the files again (the plugin loads in place) and
//! Claude Code keeps its one entry.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use baton_app::exit::Exit;
use clap::{Args, ValueEnum};

/// Where a host takes the plugin from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Host {
    Claude,
}

/// Where the host declares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Scope {
    User,
    Project,
    Local,
}

#[derive(Args, Debug)]
pub struct InstallArgs {
    /// The host to install the plugin into: `claude` (Claude Code, through its `claude` CLI).
    #[arg(value_enum)]
    host: Host,
    /// Where the host declares it: `user` (you, in every project), `project` (this project's
    /// shared settings) or `local` (this project, you alone).
    #[arg(long, value_enum, default_value = "user")]
    scope: Scope,
    /// The host's CLI (default: `claude` on PATH).
    #[arg(long, env = "BATON_CLAUDE", value_name = "PATH")]
    claude: Option<PathBuf>,
    /// The project, for --scope project or local (default: the current directory).
    #[arg(long)]
    cwd: Option<PathBuf>,
}

/// The plugin's files, as the repository holds them (path from the marketplace's root, text).
const FILES: &[(&str, &str)] = &[
    (
        ".claude-plugin/marketplace.json",
        include_str!("../../../.claude-plugin/marketplace.json"),
    ),
    (
        "plugins/claude-code/baton/.claude-plugin/plugin.json",
        include_str!("../../../plugins/claude-code/baton/.claude-plugin/plugin.json"),
    ),
    (
        "plugins/claude-code/baton/hooks/hooks.json",
        include_str!("../../../plugins/claude-code/baton/hooks/hooks.json"),
    ),
    (
        "plugins/claude-code/baton/commands/run.md",
        include_str!("../../../plugins/claude-code/baton/commands/run.md"),
    ),
    (
        "plugins/claude-code/baton/commands/status.md",
        include_str!("../../../plugins/claude-code/baton/commands/status.md"),
    ),
    (
        "plugins/claude-code/baton/commands/answer.md",
        include_str!("../../../plugins/claude-code/baton/commands/answer.md"),
    ),
    (
        "plugins/claude-code/baton/commands/flow.md",
        include_str!("../../../plugins/claude-code/baton/commands/flow.md"),
    ),
    (
        "plugins/claude-code/baton/commands/delegate.md",
        include_str!("../../../plugins/claude-code/baton/commands/delegate.md"),
    ),
];

/// `$XDG_DATA_HOME/baton/claude-code`, else `~/.local/share/baton/claude-code`.
fn marketplace_dir() -> Result<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let base = var("XDG_DATA_HOME")
        .or_else(|| var("HOME").map(|h| h.join(".local/share")))
        .context("no data folder for the plugin: set HOME or XDG_DATA_HOME")?;
    Ok(base.join("baton").join("claude-code"))
}

/// Writes the plugin's files under `dir`, each whole (replacing what an earlier install wrote).
fn write_files(dir: &Path) -> Result<()> {
    for (rel, text) in FILES {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot make {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

pub fn run(args: InstallArgs) -> Result<Exit> {
    let Host::Claude = args.host;
    let cwd = baton_app::project::working_dir(args.cwd)?;
    let claude = args.claude.unwrap_or_else(|| PathBuf::from("claude"));
    let dir = marketplace_dir()?;
    write_files(&dir)?;
    // The word the command line takes is the word Claude Code's `--scope` takes.
    let scope = args
        .scope
        .to_possible_value()
        .map(|v| v.get_name().to_string())
        .unwrap_or_else(|| "user".into());
    let scope = scope.as_str();
    let dir_text = dir.display().to_string();
    for step in [
        vec![
            "plugin",
            "marketplace",
            "add",
            dir_text.as_str(),
            "--scope",
            scope,
        ],
        vec!["plugin", "install", "baton@baton", "--scope", scope],
    ] {
        let out = std::process::Command::new(&claude)
            .args(&step)
            .current_dir(&cwd)
            .stdin(std::process::Stdio::null())
            .output();
        let out = match out {
            Ok(o) => o,
            Err(e) => bail!(
                "cannot run {} ({e}): install Claude Code (`npm install -g @anthropic-ai/claude-code`) or give its CLI with --claude PATH; the plugin's files are in {dir_text}",
                claude.display()
            ),
        };
        if !out.status.success() {
            bail!(
                "`{} {}` failed: {}{}",
                claude.display(),
                step.join(" "),
                String::from_utf8_lossy(&out.stderr).trim(),
                String::from_utf8_lossy(&out.stdout).trim()
            );
        }
    }
    outln!(
        "Claude Code plugin baton installed ({scope} scope) from {dir_text}: /baton:run, /baton:status, /baton:answer, /baton:flow, /baton:delegate, the session-start hook `baton status --needs` and the MCP server `baton mcp --tools core`; start a new Claude Code session (or /reload-plugins) to load it"
    );
    Ok(Exit::Ok)
}
