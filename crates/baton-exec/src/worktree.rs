//! Per-task git worktrees, kept outside the repository.
//!
//! A delegated entry whose role asks for `isolation: worktree` (and every Flow unit) works in its own
//! checkout on its own branch, so parallel entries and chain steps never see each other's edits.
//! The checkouts live under a *worktree root* outside the project
//! (`$XDG_STATE_HOME/baton/worktrees/<repo>-<hash>/<id>` by default), because test runners, linters
//! and workspace tools that walk a project's tree would otherwise find a nested copy of it.
//!
//! - [`WorktreeRoot`] / [`default_worktree_root`] decide where the root is.
//! - [`create_child_worktree`] makes `…/<repo>-<hash>/<id>` on a new branch `baton/<id>` at the current
//!   `HEAD`, or reports [`Isolated::Fallback`] when there is nothing to isolate (not a git repository,
//!   or `HEAD` unborn) so the entry runs in the working directory and says so.
//! - [`finalize_child_worktree`] is called on every exit path and decides what survives: commits stay
//!   on their branch, uncommitted work stays in place with a recovery hint, and a worktree that
//!   produced nothing is removed together with its branch.

use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::path::{Component, Path, PathBuf};

use baton_git::{Git, GitError};
use serde::{Deserialize, Serialize};

/// Prefix of every branch baton creates for a worktree.
pub const BRANCH_PREFIX: &str = "baton/";
/// Longest accepted worktree id.
pub const MAX_ID_LEN: usize = baton_state::IdKind::Worktree.max_len();
/// Longest name part produced by [`slug`].
const MAX_SLUG_LEN: usize = 24;
/// Longest repository-name part of a repository's folder under the root.
const MAX_REPO_NAME_LEN: usize = 40;

#[derive(Debug, thiserror::Error)]
pub enum WorktreeError {
    #[error("invalid worktree id `{id}`: {reason}")]
    InvalidId { id: String, reason: &'static str },
    #[error("executor.worktree_root = {value:?} {reason}")]
    RootConfig { value: String, reason: &'static str },
    #[error(
        "no place for worktrees: neither XDG_STATE_HOME nor HOME is an absolute path; \
         set executor.worktree_root in the config to an absolute directory"
    )]
    NoRoot,
    #[error(
        "worktree root {} is inside the repository {}; a nested checkout would be picked up by tools \
         that walk the project. Set executor.worktree_root to a directory outside it",
        root.display(),
        repo.display()
    )]
    InsideRepository { root: PathBuf, repo: PathBuf },
    #[error(
        "worktree path {} already exists; finalize or remove the earlier worktree \
         (`git worktree remove PATH`) or choose another id",
        path.display()
    )]
    PathExists { path: PathBuf },
    #[error(
        "branch {branch} already exists; an earlier run kept it. Inspect it with `git log {branch}`, \
         delete it with `git branch -D {branch}`, or choose another id"
    )]
    BranchExists { branch: String },
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The directory under which every repository gets its own folder of worktrees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorktreeRoot(PathBuf);

impl WorktreeRoot {
    /// Resolves the root from the config value `executor.worktree_root` and an environment lookup:
    /// the config value (absolute, or `~`/`~/…` relative to `HOME`) wins; otherwise
    /// `$XDG_STATE_HOME/baton/worktrees` when that variable is an absolute path; otherwise
    /// `$HOME/.local/state/baton/worktrees`.
    pub fn resolve(
        config_value: Option<&str>,
        env: impl Fn(&str) -> Option<OsString>,
    ) -> Result<Self, WorktreeError> {
        let absolute_var = |name: &str| env(name).map(PathBuf::from).filter(|p| p.is_absolute());
        if let Some(value) = config_value {
            let bad = |reason| WorktreeError::RootConfig {
                value: value.to_string(),
                reason,
            };
            if value.is_empty() {
                return Err(bad(
                    "is empty; give an absolute path or one starting with ~/",
                ));
            }
            let path = if value == "~" || value.starts_with("~/") {
                let home = absolute_var("HOME")
                    .ok_or_else(|| bad("starts with ~ but HOME is not set to an absolute path"))?;
                match value.strip_prefix("~/") {
                    Some(rest) => home.join(rest),
                    None => home,
                }
            } else {
                PathBuf::from(value)
            };
            if !path.is_absolute() {
                return Err(bad("must be an absolute path or start with ~/"));
            }
            return Ok(WorktreeRoot(path));
        }
        if let Some(state) = absolute_var("XDG_STATE_HOME") {
            return Ok(WorktreeRoot(state.join("baton").join("worktrees")));
        }
        if let Some(home) = absolute_var("HOME") {
            return Ok(WorktreeRoot(
                home.join(".local")
                    .join("state")
                    .join("baton")
                    .join("worktrees"),
            ));
        }
        Err(WorktreeError::NoRoot)
    }

    /// [`WorktreeRoot::resolve`] with this process's environment.
    pub fn from_env(config_value: Option<&str>) -> Result<Self, WorktreeError> {
        Self::resolve(config_value, |name| std::env::var_os(name))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn into_path_buf(self) -> PathBuf {
        self.0
    }
}

/// The worktree root for config value `executor.worktree_root`, reading `XDG_STATE_HOME` and `HOME`
/// from this process's environment (see [`WorktreeRoot::resolve`] for the order).
pub fn default_worktree_root(config_value: Option<&str>) -> Result<PathBuf, WorktreeError> {
    WorktreeRoot::from_env(config_value).map(WorktreeRoot::into_path_buf)
}

/// Where a delegated entry runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Isolated {
    /// In its own worktree.
    Worktree(ChildWorktree),
    /// In the caller's working directory, because there was nothing to isolate.
    Fallback {
        cwd: PathBuf,
        /// `"not a git repository"` or `"HEAD is unborn"`.
        reason: String,
    },
}

impl Isolated {
    /// The directory the entry should run in.
    pub fn cwd(&self) -> &Path {
        match self {
            Isolated::Worktree(wt) => &wt.cwd,
            Isolated::Fallback { cwd, .. } => cwd,
        }
    }

    pub fn worktree(&self) -> Option<&ChildWorktree> {
        match self {
            Isolated::Worktree(wt) => Some(wt),
            Isolated::Fallback { .. } => None,
        }
    }
}

impl fmt::Display for Isolated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Isolated::Worktree(wt) => write!(
                f,
                "isolated in worktree {} on branch {}",
                wt.path.display(),
                wt.branch
            ),
            Isolated::Fallback { cwd, reason } => write!(
                f,
                "no worktree isolation ({reason}); ran in {}",
                cwd.display()
            ),
        }
    }
}

/// A worktree made for one entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChildWorktree {
    /// The id it was created under; also the last component of `path` and of `branch`.
    pub id: String,
    /// Top of the work tree it was created from.
    pub repo_root: PathBuf,
    /// Top of the new worktree.
    pub path: PathBuf,
    /// Where the entry runs: the same subdirectory of `path` as the caller's cwd was of `repo_root`.
    pub cwd: PathBuf,
    /// `baton/<id>`.
    pub branch: String,
    /// The commit the branch started at (the caller's `HEAD`).
    pub base_oid: String,
}

/// What [`finalize_child_worktree`] left behind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Finalized {
    /// Nothing was produced: the worktree and its branch are gone.
    Removed,
    /// The worktree was clean and had commits: the branch keeps them.
    KeptCommits {
        branch: String,
        /// Full ids, oldest first.
        commits: Vec<String>,
        path: PathBuf,
        /// `false` when git refused to remove the (clean) directory; `warning` says why.
        path_removed: bool,
        warning: Option<String>,
    },
    /// The worktree was left in place: uncommitted changes, or `HEAD` no longer on its branch.
    KeptChanges {
        path: PathBuf,
        branch: String,
        /// Commits made on top of the base, oldest first (possibly none).
        commits: Vec<String>,
        /// Why it was kept, e.g. "uncommitted changes".
        reason: String,
        /// How a person inspects and recovers it.
        recovery: String,
    },
}

impl fmt::Display for Finalized {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Finalized::Removed => write!(f, "worktree removed: no commits and no changes"),
            Finalized::KeptCommits {
                branch,
                commits,
                path,
                path_removed,
                warning,
            } => {
                write!(
                    f,
                    "{} kept on branch {branch} ({})",
                    plural(commits.len(), "commit"),
                    short_list(commits)
                )?;
                if *path_removed {
                    write!(f, "; worktree removed")?;
                } else {
                    write!(f, "; worktree kept at {}", path.display())?;
                }
                if let Some(w) = warning {
                    write!(f, " ({w})")?;
                }
                Ok(())
            }
            Finalized::KeptChanges {
                path,
                branch,
                commits,
                reason,
                recovery,
            } => {
                write!(
                    f,
                    "worktree kept at {} on branch {branch}: {reason}",
                    path.display()
                )?;
                if !commits.is_empty() {
                    write!(
                        f,
                        "; {} ({})",
                        plural(commits.len(), "commit"),
                        short_list(commits)
                    )?;
                }
                write!(f, ". {recovery}")
            }
        }
    }
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

fn short_list(oids: &[String]) -> String {
    oids.iter()
        .map(|o| o.get(..12).unwrap_or(o))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Checks that `id` can be both a directory name and the last part of a branch name:
/// ASCII letters, digits, `-`, `_` and `.`, starting with a letter or digit, no `..`,
/// not ending in `.` or `.lock`, at most [`MAX_ID_LEN`] characters.
pub fn validate_id(id: &str) -> Result<(), WorktreeError> {
    baton_state::check_id(baton_state::IdKind::Worktree, id).map_err(|e| WorktreeError::InvalidId {
        id: id.to_string(),
        reason: match e {
            baton_state::IdError::Empty { .. } => "it is empty",
            baton_state::IdError::TooLong { .. } => "it is longer than 100 characters",
            baton_state::IdError::BadChar { .. } => {
                "only ASCII letters, digits, '-', '_' and '.' are allowed"
            }
            baton_state::IdError::BadStart { .. } => "it must start with a letter or digit",
            baton_state::IdError::BadRefName { .. } => {
                "it must not contain '..' or end with '.' or '.lock'"
            }
        },
    })
}

/// A short lowercase name fragment: letters and digits, other runs turned into one `-`,
/// at most 24 characters; `task` when nothing is left.
pub fn slug(name: &str) -> String {
    slug_within(name, Some(MAX_SLUG_LEN), "task")
}

/// Lower-case ASCII letters and digits of `text`, other runs of characters as one `-`, no `-` at
/// either end, at most `max` bytes; `empty` when nothing is left.
fn slug_within(text: &str, max: Option<usize>, empty: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if max.is_some_and(|m| out.len() >= m) {
            break;
        }
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    let trimmed = out.trim_end_matches('-');
    if trimmed.is_empty() {
        empty.to_string()
    } else {
        trimmed.to_string()
    }
}

/// The id of entry `index` (0-based) named `name` in run `run_id`: `<run>-<index>-<slug>`.
/// Distinct indices give distinct ids, so siblings and chain steps never share a worktree.
pub fn worktree_id(run_id: &str, index: usize, name: &str) -> String {
    let run = slug_keep_len(run_id);
    format!("{run}-{index}-{}", slug(name))
}

/// Like [`slug`] without the length cap (run ids such as UUIDs must stay whole to stay unique).
fn slug_keep_len(text: &str) -> String {
    slug_within(text, None, "run")
}

/// 64-bit FNV-1a: a fixed, documented hash, so a repository keeps its folder across baton versions.
fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

#[cfg(unix)]
fn path_bytes(path: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    path.as_os_str().as_bytes().to_vec()
}

#[cfg(not(unix))]
fn path_bytes(path: &Path) -> Vec<u8> {
    path.to_string_lossy().into_owned().into_bytes()
}

/// The folder name a repository gets under the root: `<name>-<12 hex digits>`, where the digits
/// hash its canonical shared git directory (so every worktree of one repository, and every path
/// that reaches it through a symlink, lands in the same folder) and `<name>` is the main checkout's
/// directory name, reduced to safe characters.
pub fn repo_folder_name(git_common_dir: &Path) -> String {
    let canonical =
        fs::canonicalize(git_common_dir).unwrap_or_else(|_| git_common_dir.to_path_buf());
    let name_source = match canonical.file_name() {
        Some(n) if n == ".git" => canonical.parent().and_then(Path::file_name),
        other => other,
    };
    let raw = name_source
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let raw = raw.strip_suffix(".git").unwrap_or(&raw);
    let mut name: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .take(MAX_REPO_NAME_LEN)
        .collect();
    name = name.trim_matches(|c| c == '.' || c == '-').to_string();
    if name.is_empty() {
        name = "repo".to_string();
    }
    let hash = fnv1a64(&path_bytes(&canonical));
    format!("{name}-{:012x}", hash >> 16)
}

/// The canonical form of `path` even when its last components do not exist yet:
/// the longest existing ancestor is canonicalized and the rest appended.
fn canonical_prefix(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest: Vec<OsString> = Vec::new();
    loop {
        if let Ok(c) = fs::canonicalize(&existing) {
            let mut out = c;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (
            existing.file_name().map(|n| n.to_os_string()),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> WorktreeError {
    let path = path.to_path_buf();
    move |source| WorktreeError::Io { path, source }
}

/// Creates the worktree for entry `id`: `<root>/<repo-folder>/<id>` (see [`repo_folder_name`]) on a
/// new branch `baton/<id>` at the caller's `HEAD`.
///
/// - Not in a git work tree → [`Isolated::Fallback`] with reason "not a git repository".
/// - `HEAD` unborn → [`Isolated::Fallback`] with reason "HEAD is unborn".
/// - The path or the branch already exists → an error; nothing is reused or overwritten.
/// - The root inside the repository → an error.
///
/// Uncommitted changes of the caller are not carried over: the worktree starts at `HEAD`.
/// Used for delegated entries and Flow units alike.
pub fn create_child_worktree(cwd: &Path, root: &Path, id: &str) -> Result<Isolated, WorktreeError> {
    validate_id(id)?;
    let git = Git::new(cwd);
    let toplevel = match git.toplevel() {
        Ok(top) => top,
        Err(GitError::NotARepo { .. }) => {
            return Ok(Isolated::Fallback {
                cwd: cwd.to_path_buf(),
                reason: "not a git repository".to_string(),
            })
        }
        Err(e) => return Err(e.into()),
    };
    let Some(base_oid) = git.head_oid()? else {
        return Ok(Isolated::Fallback {
            cwd: cwd.to_path_buf(),
            reason: "HEAD is unborn".to_string(),
        });
    };
    let toplevel = fs::canonicalize(&toplevel).map_err(io_err(&toplevel))?;
    let common = git.git_common_dir()?;

    let root = canonical_prefix(root);
    if root.starts_with(&toplevel) {
        return Err(WorktreeError::InsideRepository {
            root,
            repo: toplevel,
        });
    }
    // A linked worktree's main checkout counts as the repository too.
    if let (Some(".git"), Some(main)) =
        (common.file_name().and_then(|n| n.to_str()), common.parent())
    {
        if root.starts_with(main) {
            return Err(WorktreeError::InsideRepository {
                root,
                repo: main.to_path_buf(),
            });
        }
    }

    let group = root.join(repo_folder_name(&common));
    let path = group.join(id);
    let branch = format!("{BRANCH_PREFIX}{id}");
    if path.symlink_metadata().is_ok() {
        return Err(WorktreeError::PathExists { path });
    }
    if git.branch_exists(&branch)? {
        return Err(WorktreeError::BranchExists { branch });
    }

    let cwd_canonical = fs::canonicalize(cwd).map_err(io_err(cwd))?;
    let relative = cwd_canonical
        .strip_prefix(&toplevel)
        .map(Path::to_path_buf)
        .unwrap_or_default();

    fs::create_dir_all(&group).map_err(io_err(&group))?;
    if let Err(e) = git.worktree_add(&path, &branch, &base_oid) {
        remove_if_empty(&group);
        return Err(e.into());
    }

    let child_cwd = path.join(&relative);
    // The caller may sit in a directory git does not track (untracked or ignored); give the child
    // the same place, empty.
    if !child_cwd.is_dir()
        && relative
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
    {
        fs::create_dir_all(&child_cwd).map_err(io_err(&child_cwd))?;
    }
    Ok(Isolated::Worktree(ChildWorktree {
        id: id.to_string(),
        repo_root: toplevel,
        path,
        cwd: child_cwd,
        branch,
        base_oid,
    }))
}

fn remove_if_empty(dir: &Path) {
    // Fails harmlessly when other worktrees of the repository are still there.
    let _ = fs::remove_dir(dir);
}

/// Quotes `text` for a POSIX shell when it holds anything beyond plain path characters.
fn shell_quote(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%,=".contains(c));
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

fn recovery_text(wt: &ChildWorktree) -> String {
    let path = shell_quote(&wt.path.to_string_lossy());
    let repo = shell_quote(&wt.repo_root.to_string_lossy());
    let branch = shell_quote(&wt.branch);
    format!(
        "Inspect it with `cd {path} && git status && git log {base}..HEAD`; commit what should be kept. \
         To discard it: `git -C {repo} worktree remove --force {path} && git -C {repo} branch -D {branch}`.",
        base = wt.base_oid.get(..12).unwrap_or(&wt.base_oid),
    )
}

/// Decides what survives of `wt` once its entry has ended, however it ended:
///
/// - uncommitted changes (tracked or untracked, not ignored), or `HEAD` no longer on `baton/<id>`
///   → the worktree stays where it is: [`Finalized::KeptChanges`], with any commits and a recovery hint;
/// - clean with commits → the branch keeps them and the directory goes (non-forced
///   `git worktree remove`): [`Finalized::KeptCommits`];
/// - clean without commits → directory and branch are both removed: [`Finalized::Removed`].
///
/// A worktree directory that already disappeared is pruned and judged by its branch alone.
pub fn finalize_child_worktree(wt: &ChildWorktree) -> Result<Finalized, WorktreeError> {
    let repo = Git::new(&wt.repo_root);
    let group = wt.path.parent().map(Path::to_path_buf);

    if wt.path.symlink_metadata().is_err() {
        repo.worktree_prune()?;
        let Some(tip) = repo.branch_oid(&wt.branch)? else {
            return Ok(Finalized::Removed);
        };
        let commits = repo.commits_between(&wt.base_oid, &tip)?;
        if commits.is_empty() {
            repo.branch_delete(&wt.branch, true)?;
            return Ok(Finalized::Removed);
        }
        return Ok(Finalized::KeptCommits {
            branch: wt.branch.clone(),
            commits,
            path: wt.path.clone(),
            path_removed: true,
            warning: Some("the worktree directory had already been deleted".to_string()),
        });
    }

    let work = Git::new(&wt.path);
    let commits = work.commits_between(&wt.base_oid, "HEAD")?;
    let on_branch = work.current_branch()?;
    let clean = work.is_clean()?;

    let kept = |reason: String| Finalized::KeptChanges {
        path: wt.path.clone(),
        branch: wt.branch.clone(),
        commits: commits.clone(),
        reason,
        recovery: recovery_text(wt),
    };
    if !clean {
        return Ok(kept("uncommitted changes".to_string()));
    }
    if on_branch.as_deref() != Some(wt.branch.as_str()) {
        let reason = match on_branch {
            Some(other) => format!("HEAD moved to branch {other}"),
            None => "HEAD is detached".to_string(),
        };
        return Ok(kept(reason));
    }

    if commits.is_empty() {
        if let Err(e) = repo.worktree_remove(&wt.path, false) {
            return Ok(kept(format!("git refused to remove it: {e}")));
        }
        // Nothing on the branch is new: every commit it points at is in the base's history.
        repo.branch_delete(&wt.branch, true)?;
        if let Some(group) = group {
            remove_if_empty(&group);
        }
        return Ok(Finalized::Removed);
    }

    let (path_removed, warning) = match repo.worktree_remove(&wt.path, false) {
        Ok(()) => {
            if let Some(group) = group {
                remove_if_empty(&group);
            }
            (true, None)
        }
        Err(e) => (
            false,
            Some(format!("git refused to remove the worktree: {e}")),
        ),
    };
    Ok(Finalized::KeptCommits {
        branch: wt.branch.clone(),
        commits,
        path: wt.path.clone(),
        path_removed,
        warning,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn root_prefers_config_then_xdg_then_home() {
        let vars = [("HOME", "/home/u"), ("XDG_STATE_HOME", "/state")];
        let root = |cfg| WorktreeRoot::resolve(cfg, env(&vars)).map(WorktreeRoot::into_path_buf);
        assert_eq!(root(Some("/abs/wt")).unwrap(), PathBuf::from("/abs/wt"));
        assert_eq!(root(Some("~/wt")).unwrap(), PathBuf::from("/home/u/wt"));
        assert_eq!(root(Some("~")).unwrap(), PathBuf::from("/home/u"));
        assert_eq!(root(None).unwrap(), PathBuf::from("/state/baton/worktrees"));

        let home_only = [("HOME", "/home/u"), ("XDG_STATE_HOME", "relative/ignored")];
        assert_eq!(
            WorktreeRoot::resolve(None, env(&home_only)).unwrap().path(),
            Path::new("/home/u/.local/state/baton/worktrees")
        );
        assert!(matches!(
            WorktreeRoot::resolve(None, env(&[])),
            Err(WorktreeError::NoRoot)
        ));
    }

    #[test]
    fn root_config_errors_name_the_key() {
        let vars = [("XDG_STATE_HOME", "/state")];
        for bad in ["", "relative/dir", "~other/x", "~/x"] {
            let err = WorktreeRoot::resolve(Some(bad), env(&vars)).unwrap_err();
            assert!(
                err.to_string().starts_with("executor.worktree_root"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn ids_are_checked() {
        for good in ["a", "run1-0-fix-tests", "A_b.c-9"] {
            assert!(validate_id(good).is_ok(), "{good}");
        }
        let long = "x".repeat(101);
        for bad in [
            "",
            "-a",
            ".a",
            "a/b",
            "a..b",
            "a.",
            "a.lock",
            "a b",
            "é",
            long.as_str(),
        ] {
            assert!(validate_id(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn slugs_and_ids() {
        assert_eq!(slug("Fix the  flaky Tests!"), "fix-the-flaky-tests");
        assert_eq!(slug("***"), "task");
        assert_eq!(
            slug("a very long name that goes on and on"),
            "a-very-long-name-that-go"
        );
        assert_eq!(
            worktree_id("0190F2A4-7B3C", 2, "Review: API"),
            "0190f2a4-7b3c-2-review-api"
        );
        assert!(validate_id(&worktree_id("--", 0, "")).is_ok());
    }

    #[test]
    fn fnv_matches_reference_values() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn repo_folder_names_are_stable_and_safe() {
        assert_eq!(
            repo_folder_name(Path::new("/nonexistent/My Project/.git")),
            format!(
                "My-Project-{:012x}",
                fnv1a64(b"/nonexistent/My Project/.git") >> 16
            )
        );
        assert!(repo_folder_name(Path::new("/nonexistent/srv/tool.git")).starts_with("tool-"));
        assert!(repo_folder_name(Path::new("/")).starts_with("repo-"));
    }

    #[test]
    fn quoting_for_recovery_commands() {
        assert_eq!(shell_quote("/a/b-c_d.e"), "/a/b-c_d.e");
        assert_eq!(shell_quote("/a b/it's"), r"'/a b/it'\''s'");
    }
}
