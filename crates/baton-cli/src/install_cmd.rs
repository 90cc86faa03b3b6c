//! `baton install claude|codex|gemini`: the host's plugin (`plugins/claude-code/baton`,
//! `plugins/codex/baton` or `plugins/gemini/baton`, built into the binary) written to baton's data folder as a local
//! marketplace, then added and installed with the host's own CLI. Running it again writes the
//! files again and the host keeps its one entry.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use baton_app::documents::DoctorPlugin;
use baton_app::exit::Exit;
use clap::{Args, ValueEnum};

/// Where a host takes the plugin from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Host {
    Claude,
    Codex,
    Gemini,
    Copilot,
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
    /// The host to install the plugin into: `claude` (Claude Code, through its `claude` CLI),
    /// `codex` (Codex, through its `codex` CLI), `gemini` (Gemini CLI, through `gemini`) or
    /// `copilot` (Copilot CLI, through `copilot`).
    #[arg(value_enum)]
    host: Host,
    /// Where the host declares it: `user` (you, in every project), `project` (this project's
    /// shared settings) or `local` (this project, you alone). Codex, Gemini CLI and Copilot CLI
    /// take plugins per user only.
    #[arg(long, value_enum, default_value = "user")]
    scope: Scope,
    /// Claude Code's CLI (default: `claude` on PATH).
    #[arg(long, env = "BATON_CLAUDE", value_name = "PATH")]
    claude: Option<PathBuf>,
    /// Codex's CLI (default: `codex` on PATH).
    #[arg(long, env = "BATON_CODEX", value_name = "PATH")]
    codex: Option<PathBuf>,
    /// Gemini CLI (default: `gemini` on PATH).
    #[arg(long, env = "BATON_GEMINI", value_name = "PATH")]
    gemini: Option<PathBuf>,
    /// Copilot CLI (default: `copilot` on PATH).
    #[arg(long, env = "BATON_COPILOT", value_name = "PATH")]
    copilot: Option<PathBuf>,
    /// The project, for --scope project or local (default: the current directory).
    #[arg(long)]
    cwd: Option<PathBuf>,
}

/// A plugin file as the repository holds it: its path from the marketplace's root, and its text.
macro_rules! files {
    ($($path:literal),* $(,)?) => {
        &[$(($path, include_str!(concat!("../../../", $path)))),*]
    };
}

/// The Claude Code plugin's files.
const CLAUDE_FILES: &[(&str, &str)] = files![
    ".claude-plugin/marketplace.json",
    "plugins/claude-code/baton/.claude-plugin/plugin.json",
    "plugins/claude-code/baton/hooks/hooks.json",
    "plugins/claude-code/baton/commands/run.md",
    "plugins/claude-code/baton/commands/status.md",
    "plugins/claude-code/baton/commands/answer.md",
    "plugins/claude-code/baton/commands/flow.md",
    "plugins/claude-code/baton/commands/delegate.md",
    "plugins/claude-code/baton/commands/workers.md",
    "plugins/claude-code/baton/agents/implementer.md",
    "plugins/claude-code/baton/agents/scout.md",
    "plugins/claude-code/baton/agents/reviewer.md",
];

/// The Codex plugin's files.
const CODEX_FILES: &[(&str, &str)] = files![
    ".agents/plugins/marketplace.json",
    "plugins/codex/baton/.codex-plugin/plugin.json",
    "plugins/codex/baton/.mcp.json",
    "plugins/codex/baton/hooks/hooks.json",
    "plugins/codex/baton/skills/run/SKILL.md",
    "plugins/codex/baton/skills/status/SKILL.md",
    "plugins/codex/baton/skills/answer/SKILL.md",
    "plugins/codex/baton/skills/flow/SKILL.md",
    "plugins/codex/baton/skills/delegate/SKILL.md",
    "plugins/codex/baton/skills/workers/SKILL.md",
];

/// The Gemini CLI extension's files.
const GEMINI_FILES: &[(&str, &str)] = files![
    "plugins/gemini/baton/gemini-extension.json",
    "plugins/gemini/baton/GEMINI.md",
    "plugins/gemini/baton/hooks/hooks.json",
    "plugins/gemini/baton/commands/baton/run.toml",
    "plugins/gemini/baton/commands/baton/status.toml",
    "plugins/gemini/baton/commands/baton/answer.toml",
    "plugins/gemini/baton/commands/baton/flow.toml",
    "plugins/gemini/baton/commands/baton/delegate.toml",
    "plugins/gemini/baton/commands/baton/workers.toml",
];

/// The Gemini CLI extension's folder under the written marketplace.
const GEMINI_EXTENSION: &str = "plugins/gemini/baton";

/// What installing into one host takes.
struct Plan {
    name: &'static str,
    files: &'static [(&'static str, &'static str)],
    /// The folder under baton's data folder the marketplace is written to.
    folder: &'static str,
    cli: PathBuf,
    /// How to get the host's CLI.
    get: &'static str,
    /// The host's CLI steps, given the marketplace folder, the scope's word and whether the host
    /// knows the marketplace already (`already`).
    steps: fn(&str, &str, bool) -> Vec<Vec<String>>,
    /// What the plugin brings, for the closing line.
    brings: &'static str,
    /// How to load it.
    then: &'static str,
    /// A folder under the written files to run the host's CLI in (else the project).
    run_in: Option<&'static str>,
    /// Whether the host knows the written marketplace already.
    already: fn(&Path) -> Result<bool>,
}

/// A command line's words, owned.
fn words(v: &[&str]) -> Vec<String> {
    v.iter().map(|w| w.to_string()).collect()
}

fn plan(args: &InstallArgs) -> Result<Plan> {
    Ok(match args.host {
        Host::Claude => Plan {
            name: "Claude Code",
            files: CLAUDE_FILES,
            folder: "claude-code",
            cli: args.claude.clone().unwrap_or_else(|| PathBuf::from("claude")),
            get: "install Claude Code (`npm install -g @anthropic-ai/claude-code`) or give its CLI with --claude PATH",
            steps: |dir, scope, _| vec![
                words(&["plugin", "marketplace", "add", dir, "--scope", scope]),
                words(&["plugin", "install", "baton@baton", "--scope", scope]),
            ],
            brings: "/baton:run, /baton:status, /baton:answer, /baton:flow, /baton:delegate, /baton:workers, the agents baton:implementer, baton:scout and baton:reviewer, the session-start hook `baton status --needs` and the MCP server `baton mcp --tools core`",
            then: "start a new Claude Code session (or /reload-plugins) to load it",
            run_in: None,
            already: |_| Ok(false),
        },
        Host::Codex => {
            if args.scope != Scope::User {
                bail!("--scope: Codex takes plugins per user only (its config.toml): leave --scope out, or give --scope user");
            }
            Plan {
                name: "Codex",
                files: CODEX_FILES,
                folder: "codex",
                cli: args.codex.clone().unwrap_or_else(|| PathBuf::from("codex")),
                get: "install Codex (`npm install -g @openai/codex`) or give its CLI with --codex PATH",
                steps: |dir, _, _| vec![
                    words(&["plugin", "marketplace", "add", dir]),
                    words(&["plugin", "add", "baton@baton"]),
                ],
                brings: "the skills $baton:run, $baton:status, $baton:answer, $baton:flow, $baton:delegate, $baton:workers, the session-start hook `baton status --needs` and the MCP server `baton mcp --tools core`",
                then: "start a new Codex session to load it; Codex runs the plugin's hook once you trust it (it asks; `/hooks` reviews it)",
                run_in: None,
                already: |_| Ok(false),
            }
        }
        Host::Gemini => {
            if args.scope != Scope::User {
                bail!("--scope: Gemini CLI takes extensions per user only (~/.gemini): leave --scope out, or give --scope user");
            }
            Plan {
                name: "Gemini CLI",
                files: GEMINI_FILES,
                folder: "gemini",
                cli: args.gemini.clone().unwrap_or_else(|| PathBuf::from("gemini")),
                get: "install Gemini CLI (`npm install -g @google/gemini-cli`) or give its CLI with --gemini PATH",
                steps: |dir, _, linked| {
                    if linked {
                        return Vec::new();
                    }
                    vec![words(&[
                        "extensions",
                        "link",
                        &format!("{dir}/{GEMINI_EXTENSION}"),
                        "--consent",
                    ])]
                },
                brings: "/baton:run, /baton:status, /baton:answer, /baton:flow, /baton:delegate, /baton:workers, its context file, the session-start hook `baton status --needs --hook-json` and the MCP server `baton mcp --tools core`",
                then: "start a new Gemini CLI session to load it",
                // `--consent` trusts the folder the CLI runs in: baton's own, not the project.
                run_in: Some(GEMINI_EXTENSION),
                already: gemini_linked,
            }
        }
        Host::Copilot => {
            if args.scope != Scope::User {
                bail!("--scope: Copilot CLI takes plugins per user only (~/.copilot): leave --scope out, or give --scope user");
            }
            Plan {
                name: "Copilot CLI",
                // Copilot CLI reads Claude Code's plugin and marketplace as they are.
                files: CLAUDE_FILES,
                folder: "claude-code",
                cli: args.copilot.clone().unwrap_or_else(|| PathBuf::from("copilot")),
                get: "install Copilot CLI (`npm install -g @github/copilot`) or give its CLI with --copilot PATH",
                steps: |dir, _, known| {
                    let mut steps = Vec::new();
                    if !known {
                        steps.push(words(&["plugin", "marketplace", "add", dir]));
                    }
                    steps.push(words(&["plugin", "install", "baton@baton"]));
                    steps
                },
                brings: "Claude Code's plugin as Copilot CLI loads it (its commands, agents, session-start hook and MCP server)",
                then: "start a new Copilot CLI session to load it (it loads the plugin in place)",
                run_in: None,
                already: copilot_registered,
            }
        }
    })
}

/// `$XDG_DATA_HOME/baton/FOLDER`, else `~/.local/share/baton/FOLDER`.
fn marketplace_dir(folder: &str) -> Result<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let base = var("XDG_DATA_HOME")
        .or_else(|| var("HOME").map(|h| h.join(".local/share")))
        .context("no data folder for the plugin: set HOME or XDG_DATA_HOME")?;
    Ok(base.join("baton").join(folder))
}

/// Writes the plugin's files under `dir`, each whole (replacing what an earlier install wrote).
fn write_files(dir: &Path, files: &[(&str, &str)]) -> Result<()> {
    for (rel, text) in files {
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
    let plan = plan(&args)?;
    let cwd = baton_app::project::working_dir(args.cwd)?;
    let dir = marketplace_dir(plan.folder)?;
    write_files(&dir, plan.files)?;
    // The word the command line takes is the word Claude Code's `--scope` takes.
    let scope = args
        .scope
        .to_possible_value()
        .map(|v| v.get_name().to_string())
        .unwrap_or_else(|| "user".into());
    let dir_text = dir.display().to_string();
    let steps = (plan.steps)(&dir_text, &scope, (plan.already)(&dir)?);
    let run_in = plan.run_in.map_or(cwd, |sub| dir.join(sub));
    for step in steps {
        let out = std::process::Command::new(&plan.cli)
            .args(&step)
            .current_dir(&run_in)
            .stdin(std::process::Stdio::null())
            .output();
        let out = match out {
            Ok(o) => o,
            Err(e) => bail!(
                "cannot run {} ({e}): {}; the plugin's files are in {dir_text}",
                plan.cli.display(),
                plan.get
            ),
        };
        if !out.status.success() {
            bail!(
                "`{} {}` failed: {}{}",
                plan.cli.display(),
                step.join(" "),
                String::from_utf8_lossy(&out.stderr).trim(),
                String::from_utf8_lossy(&out.stdout).trim()
            );
        }
    }
    outln!(
        "{} plugin baton installed ({scope} scope) from {dir_text}: {}; {}",
        plan.name,
        plan.brings,
        plan.then
    );
    Ok(Exit::Ok)
}

/// Gemini CLI's record of its extension `baton`: where it came from and how (`link` or a copy).
fn gemini_record() -> Result<Option<(PathBuf, String)>> {
    let record = host_record(
        host_dir("GEMINI_CLI_HOME", ""),
        ".gemini/extensions/baton/.gemini-extension-install.json",
        json,
    )
    .map_err(anyhow::Error::msg)?;
    Ok(record.map(|(_, v)| {
        let source = v["source"].as_str().unwrap_or_default();
        (
            PathBuf::from(source),
            v["type"].as_str().unwrap_or_default().to_string(),
        )
    }))
}

/// Whether Gemini CLI links its extension `baton` to the folder written under `dir` already;
/// another extension of that name is an error naming it.
fn gemini_linked(dir: &Path) -> Result<bool> {
    let ours = dir.join(GEMINI_EXTENSION);
    match gemini_record()? {
        None => Ok(false),
        Some((source, kind)) if kind == "link" && source == ours => Ok(true),
        Some((source, kind)) => bail!(
            "Gemini CLI already has an extension named baton ({kind} of {}): remove it with `gemini extensions uninstall baton`, then run `baton install gemini` again",
            source.display()
        ),
    }
}

/// Copilot CLI's `settings.json` (under `COPILOT_HOME`, else `~/.copilot`), when there is one.
fn copilot_settings() -> Result<Option<serde_json::Value>> {
    let record = host_record(host_dir("COPILOT_HOME", ".copilot"), "settings.json", json)
        .map_err(anyhow::Error::msg)?;
    Ok(record.map(|(_, v)| v))
}

/// The folder Copilot CLI knows the marketplace `baton` at, when it knows one.
fn copilot_marketplace(settings: &serde_json::Value) -> Option<PathBuf> {
    settings["extraKnownMarketplaces"]["baton"]["source"]["path"]
        .as_str()
        .map(PathBuf::from)
}

/// Whether Copilot CLI knows the marketplace `baton` at `dir` already; at another folder it is
/// an error naming it (Copilot CLI refuses a second marketplace of that name).
fn copilot_registered(dir: &Path) -> Result<bool> {
    match copilot_settings()?.as_ref().and_then(copilot_marketplace) {
        None => Ok(false),
        Some(known) if known == dir => Ok(true),
        Some(known) => bail!(
            "Copilot CLI already knows a marketplace named baton at {}: remove it with `copilot plugin marketplace remove baton`, then run `baton install copilot` again",
            known.display()
        ),
    }
}

/// Copilot CLI: `enabledPlugins` and the marketplace in its `settings.json`; it loads the plugin
/// in place from the marketplace's folder, which is compared.
fn copilot_installed() -> DoctorPlugin {
    let host = "copilot";
    let settings = match copilot_settings() {
        Err(e) => return not_installed(host, format!("{e:#}")),
        Ok(s) => s.unwrap_or_default(),
    };
    let enabled = settings["enabledPlugins"]["baton@baton"].as_bool();
    match (enabled, copilot_marketplace(&settings)) {
        (Some(true), Some(dir)) => compared(
            host,
            dir.join("plugins/claude-code/baton"),
            CLAUDE_FILES,
            "plugins/claude-code/baton/",
        ),
        (Some(false), _) => not_installed(
            host,
            "installed but disabled: `copilot plugin enable baton@baton` enables it".into(),
        ),
        _ => not_installed(host, not_yet(host)),
    }
}

/// baton's plugin in each host, as the host's own files record it (`baton doctor`).
pub fn installed() -> Vec<DoctorPlugin> {
    vec![
        claude_installed(),
        codex_installed(),
        gemini_installed(),
        copilot_installed(),
    ]
}

/// Gemini CLI: `~/.gemini/extensions/baton/.gemini-extension-install.json` (its home from
/// `GEMINI_CLI_HOME`, else `HOME`); a linked extension is read where it links to, a copied one
/// in place.
fn gemini_installed() -> DoctorPlugin {
    let host = "gemini";
    match gemini_record() {
        Err(e) => not_installed(host, format!("{e:#}")),
        Ok(None) => not_installed(host, not_yet(host)),
        Ok(Some((source, kind))) => {
            let path = if kind == "link" {
                source
            } else {
                host_dir("GEMINI_CLI_HOME", "")
                    .unwrap_or_default()
                    .join(".gemini/extensions/baton")
            };
            compared(host, path, GEMINI_FILES, "plugins/gemini/baton/")
        }
    }
}

/// A folder from `var`, else `~/.REL`.
fn host_dir(var: &str, rel: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(rel)))
}

/// The plugin as installed at `path` against the `files` this baton carries under `prefix`.
fn compared(host: &str, path: PathBuf, files: &[(&str, &str)], prefix: &str) -> DoctorPlugin {
    let stale: Vec<String> = files
        .iter()
        .filter_map(|(rel, text)| Some((rel.strip_prefix(prefix)?, text)))
        .filter(|(rel, text)| {
            std::fs::read_to_string(path.join(rel)).ok().as_deref() != Some(**text)
        })
        .map(|(rel, _)| rel.to_string())
        .collect();
    let message = if stale.is_empty() {
        "installed, and the same as this baton's".to_string()
    } else {
        format!(
            "installed, but {} of its files differ from this baton's (an older baton installed it): run `baton install {host}` again",
            stale.len()
        )
    };
    DoctorPlugin {
        host: host.into(),
        installed: true,
        path: Some(path.display().to_string()),
        current: stale.is_empty(),
        stale,
        message,
    }
}

/// Why a host has no baton plugin yet, and the command that installs it.
fn not_yet(host: &str) -> String {
    format!("not installed: `baton install {host}` installs it")
}

/// A host's record `rel` under its folder `dir`, read and parsed by `parse`: `Ok(None)` when
/// there is none (no folder, no file); an error names the file and what is wrong with it.
fn host_record<T>(
    dir: Option<PathBuf>,
    rel: &str,
    parse: impl Fn(&str) -> std::result::Result<T, String>,
) -> std::result::Result<Option<(PathBuf, T)>, String> {
    let Some(dir) = dir else { return Ok(None) };
    let file = dir.join(rel);
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", file.display())),
    };
    match parse(&text) {
        Ok(v) => Ok(Some((file, v))),
        Err(e) => Err(format!("{}: {e}", file.display())),
    }
}

/// `text` as JSON.
fn json(text: &str) -> std::result::Result<serde_json::Value, String> {
    serde_json::from_str(text).map_err(|e| format!("does not read as JSON ({e})"))
}

fn not_installed(host: &str, why: String) -> DoctorPlugin {
    DoctorPlugin {
        host: host.into(),
        installed: false,
        path: None,
        current: false,
        stale: Vec::new(),
        message: why,
    }
}

/// Claude Code: `plugins/installed_plugins.json` under `CLAUDE_CONFIG_DIR` (else `~/.claude`).
fn claude_installed() -> DoctorPlugin {
    let host = "claude";
    let value = match host_record(
        host_dir("CLAUDE_CONFIG_DIR", ".claude"),
        "plugins/installed_plugins.json",
        json,
    ) {
        Err(e) => return not_installed(host, e),
        Ok(None) => return not_installed(host, not_yet(host)),
        Ok(Some((_, v))) => v,
    };
    let entry = value["plugins"]["baton@baton"]
        .as_array()
        .and_then(|a| a.iter().find_map(|e| e["installPath"].as_str()));
    match entry {
        Some(path) => compared(
            host,
            PathBuf::from(path),
            CLAUDE_FILES,
            "plugins/claude-code/baton/",
        ),
        None => not_installed(host, not_yet(host)),
    }
}

/// Codex: `[plugins."baton@baton"]` in `config.toml` under `CODEX_HOME` (else `~/.codex`), its
/// copy in `plugins/cache/baton/baton/VERSION`.
fn codex_installed() -> DoctorPlugin {
    let host = "codex";
    let Some(dir) = host_dir("CODEX_HOME", ".codex") else {
        return not_installed(host, not_yet(host));
    };
    let (file, value) = match host_record(Some(dir.clone()), "config.toml", |t| {
        toml::from_str::<toml::Value>(t).map_err(|e| format!("does not read as TOML ({e})"))
    }) {
        Err(e) => return not_installed(host, e),
        Ok(None) => return not_installed(host, not_yet(host)),
        Ok(Some(r)) => r,
    };
    let enabled = value
        .get("plugins")
        .and_then(|p| p.get("baton@baton"))
        .and_then(|p| p.get("enabled"))
        .and_then(toml::Value::as_bool);
    match enabled {
        None => not_installed(host, not_yet(host)),
        Some(false) => not_installed(
            host,
            format!(
                "installed but disabled in {}: enable it in Codex (`/plugins`)",
                file.display()
            ),
        ),
        Some(true) => {
            let cache = dir.join("plugins/cache/baton/baton");
            // The version folder Codex copied last.
            let newest = std::fs::read_dir(&cache).ok().and_then(|entries| {
                entries
                    .filter_map(Result::ok)
                    .filter(|e| e.path().join(".codex-plugin/plugin.json").is_file())
                    .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok())
                    .map(|e| e.path())
            });
            match newest {
                Some(path) => compared(host, path, CODEX_FILES, "plugins/codex/baton/"),
                None => not_installed(
                    host,
                    format!("enabled in {}, but Codex has no copy of it under {}: run `baton install codex` again", file.display(), cache.display()),
                ),
            }
        }
    }
}
