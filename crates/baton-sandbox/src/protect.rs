//! The files a confined command may read but never change, although they lie inside a folder it
//! may write: the repository's control files and the project's `.baton/`.
//!
//! baton itself later trusts what these files say — git runs the hooks, filters and fsmonitor a
//! repository's config names; baton reads its config, roles, skills and state from `.baton/` —
//! so a model that could write them could run code outside its sandbox. Inside each writable root
//! they are bound read-only in the command's mount namespace (see `linux.rs`); the file tools
//! refuse them too ([`is_protected`]).
//!
//! What stays writable in a repository: objects, refs, the index, logs, `HEAD` and the rest of the
//! git dir, so an implementer can still commit in its worktree.

use std::path::{Path, PathBuf};

/// The git dir entries that can make git run a program or read another repository's settings.
const GIT_DIR_CONTROLS: &[&str] = &[
    "config",
    "config.worktree",
    "hooks",
    "info",
    "commondir",
    "modules",
    // The admin dirs of linked worktrees: a model could plant a `config.worktree` or
    // `commondir` in another worktree's. The sandbox's own worktree admin dir is writable again.
    "worktrees",
];

/// The entries of a linked worktree's admin dir (`GIT_COMMON_DIR/worktrees/NAME/`) that say
/// where its repository and settings are.
const WORKTREE_ADMIN_CONTROLS: &[&str] = &["commondir", "gitdir", "config.worktree"];

/// The folder of baton's own files in a project.
pub const BATON_DIR: &str = ".baton";

/// The project settings of the peer CLIs baton may launch later in the same folder (Claude Code's
/// hooks, MCP servers and skills, Codex's and Pi's config, the `.agents/skills/` Codex reads and
/// baton offers as skills): protected when they exist.
pub const PEER_SETTINGS: &[&str] = &[".claude", ".mcp.json", ".codex", ".pi", ".agents"];

/// Whether `dir` looks like a git dir (not a work tree): it holds `HEAD`, `objects` and `refs`.
fn is_git_dir(dir: &Path) -> bool {
    dir.join("HEAD").is_file() && dir.join("objects").is_dir() && dir.join("refs").is_dir()
}

/// The control paths of the git dir `git_dir` that exist now.
fn git_dir_controls(git_dir: &Path, out: &mut Vec<PathBuf>) {
    for name in GIT_DIR_CONTROLS {
        let p = git_dir.join(name);
        if p.symlink_metadata().is_ok() {
            out.push(p);
        }
    }
    if let Ok(entries) = std::fs::read_dir(git_dir.join("worktrees")) {
        for entry in entries.flatten() {
            for name in WORKTREE_ADMIN_CONTROLS {
                let p = entry.path().join(name);
                if p.symlink_metadata().is_ok() {
                    out.push(p);
                }
            }
        }
    }
}

/// Creates the control folders git would read if they appeared (`hooks/`, `info/`) in the git dir
/// of `root`, so they exist to be bound read-only: a folder that does not exist cannot be
/// protected, and a model could create it. Also `.baton/` in `root` when `root` is a project
/// (it has `.git`), for the same reason. Errors are ignored: what cannot be created is not there
/// to be bound, and [`protected_in`] lists what is.
pub fn prepare_root(root: &Path) {
    let dot_git = root.join(".git");
    let git_dir = if dot_git.is_dir() {
        Some(dot_git)
    } else if is_git_dir(root) {
        Some(root.to_path_buf())
    } else {
        None
    };
    if let Some(dir) = git_dir {
        for name in ["hooks", "info", "modules"] {
            let p = dir.join(name);
            if p.symlink_metadata().is_err() {
                let _ = std::fs::create_dir(&p);
            }
        }
    }
    if root.join(".git").symlink_metadata().is_ok() {
        let b = root.join(BATON_DIR);
        if b.symlink_metadata().is_err() {
            let _ = std::fs::create_dir(&b);
        }
    }
}

/// The paths inside the writable folder `root` that a confined command may not change, those that
/// exist now: `.baton/`, the peer CLIs' project settings (`.claude/`, `.mcp.json`, `.codex/`,
/// `.pi/`, `.agents/`), the `.git` entry itself when it is a linked worktree's pointer file, and
/// the control files of the git dir (`config`, `hooks/`, `info/`, `modules/`, a linked worktree's
/// `commondir`, `gitdir` and `config.worktree`) when `root` holds one or is one (the common dir
/// of a linked worktree is a writable root of its own).
pub fn protected_in(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for name in std::iter::once(BATON_DIR).chain(PEER_SETTINGS.iter().copied()) {
        let p = root.join(name);
        if p.symlink_metadata().is_ok() {
            out.push(p);
        }
    }
    let dot_git = root.join(".git");
    match dot_git.symlink_metadata() {
        Ok(m) if m.is_dir() => git_dir_controls(&dot_git, &mut out),
        Ok(_) => out.push(dot_git),
        Err(_) if is_git_dir(root) => git_dir_controls(root, &mut out),
        Err(_) => {}
    }
    out
}

/// Whether `path` (absolute, resolved) is one of `root`'s protected paths or lies under one,
/// **whether or not it exists**: `.baton/`, the peers' settings, the `.git` entry and the git
/// dir's control entries are protected by name, so a file tool cannot create a missing
/// `.mcp.json`, `.claude/` or `.git/commondir` either; and a linked worktree's admin files as
/// [`protected_in`] lists them. The file tools ask this of the path asked for and of the real
/// path of what they opened, so a link cannot lead them around it.
pub fn is_protected(roots: &[PathBuf], path: &Path) -> Option<PathBuf> {
    for root in roots {
        let Ok(rel) = path.strip_prefix(root) else {
            continue;
        };
        let mut names = rel.components().filter_map(|c| match c {
            std::path::Component::Normal(n) => n.to_str(),
            _ => None,
        });
        let Some(first) = names.next() else { continue };
        if first == BATON_DIR || PEER_SETTINGS.contains(&first) {
            return Some(root.join(first));
        }
        if first == ".git" {
            return Some(match names.next() {
                Some(second) if GIT_DIR_CONTROLS.contains(&second) => {
                    root.join(".git").join(second)
                }
                Some(_) if !root.join(".git").is_dir() => root.join(".git"),
                Some(_) => continue,
                None => root.join(".git"),
            });
        }
        if is_git_dir(root) && GIT_DIR_CONTROLS.contains(&first) {
            return Some(root.join(first));
        }
    }
    roots
        .iter()
        .flat_map(|r| protected_in(r))
        .find(|p| path.starts_with(p))
}

/// What `sandbox.deny_read` hides when the config does not say: credentials a command has no
/// business reading. `~/` is the home folder.
pub const DEFAULT_DENY_READ: &[&str] = &[
    "~/.ssh",
    "~/.aws",
    "~/.config/gh",
    "~/.netrc",
    "~/.docker/config.json",
    "~/.git-credentials",
    "~/.config/gcloud",
    "~/.kube",
    // The peers baton launches: their logins.
    "~/.codex/auth.json",
    "~/.claude/.credentials.json",
    "~/.claude.json",
    "~/.pi/agent/auth.json",
    "~/.gemini/oauth_creds.json",
    "~/.config/github-copilot",
    // Package registries' tokens.
    "~/.cargo/credentials.toml",
    "~/.cargo/credentials",
    "~/.npmrc",
    "~/.yarnrc.yml",
    "~/.pypirc",
    "~/.config/pip/pip.conf",
    "~/.gem/credentials",
    "~/.m2/settings.xml",
    "~/.gradle/gradle.properties",
    // Keys and keyrings.
    "~/.gnupg",
    "~/.local/share/keyrings",
    "~/.password-store",
    "~/.config/op",
    "~/.vault-token",
    "~/.azure",
    "~/.terraform.d/credentials.tfrc.json",
];

/// baton's user config folder (`$XDG_CONFIG_HOME/baton`, else `~/.config/baton`): it holds the
/// user's config (with key settings) and trust records, which no command needs to read.
pub fn user_config_dir(home: Option<&Path>) -> Option<PathBuf> {
    if let Some(x) = std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(x).join("baton"));
    }
    home.map(|h| h.join(".config").join("baton"))
}

/// `~/x` as a path under `home`; other paths as given when absolute, under `base` when relative.
pub fn expand(path: &str, home: Option<&Path>, base: &Path) -> PathBuf {
    match (path.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ if path == "~" => home.map_or_else(|| PathBuf::from(path), Path::to_path_buf),
        _ => base.join(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repository_s_control_files_and_baton_dir_are_protected() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        std::fs::create_dir_all(root.join(".git/objects")).unwrap();
        std::fs::create_dir_all(root.join(".git/refs")).unwrap();
        std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(root.join(".git/config"), "").unwrap();
        std::fs::create_dir_all(root.join(".git/worktrees/w1")).unwrap();
        std::fs::write(root.join(".git/worktrees/w1/commondir"), "../..").unwrap();
        std::fs::create_dir(root.join(".claude")).unwrap();
        prepare_root(root);
        let p = protected_in(root);
        for want in [
            ".baton",
            ".claude",
            ".git/config",
            ".git/hooks",
            ".git/info",
            ".git/worktrees/w1/commondir",
        ] {
            assert!(p.contains(&root.join(want)), "{want} in {p:?}");
        }
        assert!(!p
            .iter()
            .any(|x| x.ends_with("objects") || x.ends_with("refs")));
        // The common dir as a root of its own.
        let common = protected_in(&root.join(".git"));
        assert!(common.contains(&root.join(".git/config")), "{common:?}");
        assert_eq!(
            is_protected(&[root.to_path_buf()], &root.join(".git/hooks/pre-commit")),
            Some(root.join(".git/hooks"))
        );
        assert_eq!(
            is_protected(&[root.to_path_buf()], &root.join("src/a.rs")),
            None
        );
    }

    #[test]
    fn control_paths_that_do_not_exist_yet_are_protected_by_name() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        std::fs::create_dir_all(root.join(".git/objects")).unwrap();
        let roots = [root.to_path_buf()];
        for missing in [
            ".mcp.json",
            ".claude/settings.json",
            ".codex/config.toml",
            ".agents/skills/x/SKILL.md",
            ".git/commondir",
            ".git/config.worktree",
            ".git/modules/x/config",
            ".baton/roles/x.md",
        ] {
            assert!(
                is_protected(&roots, &root.join(missing)).is_some(),
                "{missing}"
            );
        }
        for free in [
            "src/a.rs",
            ".git/objects/ab/cdef",
            ".gitignore",
            "x/.mcp.json",
        ] {
            assert_eq!(is_protected(&roots, &root.join(free)), None, "{free}");
        }
    }

    #[test]
    fn a_linked_worktree_s_pointer_file_is_protected() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join(".git"), "gitdir: /x/.git/worktrees/w\n").unwrap();
        assert!(protected_in(d.path()).contains(&d.path().join(".git")));
    }
}
