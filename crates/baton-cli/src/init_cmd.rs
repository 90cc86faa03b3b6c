//! `baton init`: a commented starter `.baton/config.toml` in the project, and `.baton/.gitignore`
//! keeping baton's own state and the workflows' memory out of git.

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use baton_app::exit::Exit;
use clap::Args;

#[derive(Args, Debug)]
pub struct InitArgs {
    /// Replace an existing `.baton/config.toml`.
    #[arg(long)]
    force: bool,
    /// Directory inside the project (default: the current one); the file goes to the project root.
    #[arg(long)]
    cwd: Option<PathBuf>,
}

/// The starter project config. Every line that is not a comment is a valid key (a test loads it
/// with baton's own loader); the keys that change behaviour are commented out.
pub const STARTER_CONFIG: &str = r#"# baton project config: every key is in docs/config.md.
# Layers: built-in defaults < ~/.config/baton/config.toml < this file < $BATON_CONFIG < BATON_* < flags.
# Check what each model class resolves to with `baton models`, and each provider with `baton doctor`.

# ── Providers: an endpoint and a wire format. Routes name them: "provider/model[:thinking]". ──

# OpenAI (Responses API). The key is read from the environment, never written here.
[providers.openai]
kind = "openai-responses"
base_url = "https://api.openai.com/v1"
api_key_env = "OPENAI_API_KEY"

# Anthropic (Messages API).
[providers.anthropic]
kind = "anthropic"
base_url = "https://api.anthropic.com"
api_key_env = "ANTHROPIC_API_KEY"
# max_output_tokens = 8192

# Ollama on this machine (any OpenAI-compatible server: llama.cpp's llama-server is usually
# http://127.0.0.1:8080/v1, vLLM http://127.0.0.1:8000/v1). No key.
[providers.ollama]
kind = "openai"
base_url = "http://127.0.0.1:11434/v1"
# api_key_env = "OLLAMA_API_KEY"      # for a server behind a key
# api_key_file = "~/.config/ollama/key" # or a file whose first line is the key

# ── Model classes: a route, or a list tried in order before launch (first usable one wins). ──
[models]
fast = ["ollama/qwen2.5-coder:7b", "openai/gpt-5-mini:low"]
balanced = ["openai/gpt-5.2:medium", "anthropic/claude-sonnet-4-6:medium"]
frontier = ["anthropic/claude-opus-4-6:high", "openai/gpt-5.2:high"]
# fav = "ollama/qwen2.5-coder:32b"
default_class = "balanced"

# Prices in USD per million tokens; with one, the summary shows the cost.
# [prices."openai/gpt-5-mini"]
# input = 0.4
# cached_input = 0.1
# output = 1.6

# [agent]
# max_turns = 50          # the last turn is reserved for a handoff report
# bash_timeout = "2m"

# [executor]
# max_concurrency = 5     # child agents at once
# idle_timeout = "10m"
# max_timeout = "30m"

# ── Sandbox of the model's bash commands (Landlock on Linux). ──
# [sandbox]
# mode = "workspace-write"          # read-only | workspace-write | danger-full-access
# writable_roots = ["~/.cargo", "~/.npm"] # more folders commands may write (build caches)
# network = false                   # true lets sandboxed commands use the network
# env_allow = ["GH_TOKEN"]          # credential-like variables commands may see all the same

# [flow]
# validation_sandbox = true         # Flow's validation commands run in the sandbox (false: unconfined)
"#;

pub fn run(args: InitArgs) -> Result<Exit> {
    // The config is not loaded: `--force` must work over a file baton cannot read.
    let cwd = baton_app::project::working_dir(args.cwd)?;
    let dir = baton_state::project_root(&cwd).join(".baton");
    let path = dir.join("config.toml");
    if path.exists() && !args.force {
        bail!(
            "{} already exists: edit it, or pass --force to replace it with the starter config",
            path.display()
        );
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    // Written to a temp file in the same folder and renamed: never half a config.
    let mut tmp = tempfile::Builder::new()
        .prefix(".config.toml.")
        .tempfile_in(&dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    tmp.write_all(STARTER_CONFIG.as_bytes())
        .and_then(|()| tmp.as_file().sync_all())
        .with_context(|| format!("cannot write {}", path.display()))?;
    tmp.persist(&path)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {}", path.display(), e.error))?;
    outln!("wrote {}", path.display());
    write_gitignore(&dir)?;
    trust_what_was_written(&dir);
    if let Ok(loaded) = baton_app::config::load(dir.parent().unwrap_or(&dir)) {
        for line in baton_app::config::Shadowed::lines(&loaded.shadowed) {
            errln!("baton: note: {line}");
        }
    }
    errln!("baton: next: set the keys of the providers you use (OPENAI_API_KEY, ANTHROPIC_API_KEY), then `baton doctor` checks each provider and `baton models` shows what each class resolves to");
    Ok(Exit::Ok)
}

/// The file `baton init` just wrote in front of the user is theirs: the project is trusted with
/// exactly that content (a later change to a provider, sandbox or other widening line needs
/// `baton trust` again). Not when the project already has role files that widen what runs:
/// trusting would take them in too, and nobody has looked at them.
fn trust_what_was_written(baton_dir: &std::path::Path) {
    let root = baton_dir.parent().unwrap_or(baton_dir);
    let (_, roles) = baton_app::trust::widening_now(root);
    if !roles.is_empty() {
        errln!(
            "baton: the project is not trusted: its role files {} widen what runs; read them, then `baton trust` applies them and this config's provider lines",
            roles.join(", ")
        );
        return;
    }
    match baton_app::trust::trust(root) {
        Ok(_) => errln!(
            "baton: trusted {} with the config as written (edit its provider or sandbox lines later and `baton trust` asks again)",
            root.display()
        ),
        Err(e) => errln!(
            "baton: warning: cannot record trust for {} ({e:#}); run `baton trust` to apply the provider lines",
            root.display()
        ),
    }
}

/// What `.baton/.gitignore` says: what baton writes as it runs stays out of git, so a workflow
/// or a session never leaves the tree dirty for the next `baton flow start`.
pub const GITIGNORE: &str =
    "# Written by `baton init`. What baton writes as it runs stays out of git:\n\
# its logs, records and sessions,\n\
state/\n\
# and the workflows' memory (activeContext.md, patterns.md, progress.md). Delete this line to\n\
# share the memory with your team through git.\n\
memory/\n";

/// Writes `.baton/.gitignore` unless the project has one (it is the user's then).
fn write_gitignore(baton_dir: &std::path::Path) -> Result<()> {
    let path = baton_dir.join(".gitignore");
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
    {
        Ok(mut f) => {
            f.write_all(GITIGNORE.as_bytes())
                .with_context(|| format!("cannot write {}", path.display()))?;
            outln!("wrote {}", path.display());
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot write {}", path.display())),
    }
}
