//! Worktrees, branches, and the files of the git directory baton reads without starting git.

use std::ffi::OsStr;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::{bytes_to_path, check_name, check_rev, Git, GitError, Result, ZERO_OID_CHARS};

/// One entry of `git worktree list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorktreeInfo {
    pub path: PathBuf,
    /// `None` for a bare entry or an unborn `HEAD`.
    pub head: Option<String>,
    /// Short branch name (`main`, not `refs/heads/main`); `None` when detached or bare.
    pub branch: Option<String>,
    pub bare: bool,
    pub detached: bool,
    /// `Some(reason)` (possibly empty) when locked.
    pub locked: Option<String>,
    /// `Some(reason)` when git considers the entry prunable (its directory is gone).
    pub prunable: Option<String>,
}

/// git's worktree administration (`.git/worktrees/`) is not safe against concurrent changes: a
/// `worktree add` that scans the folder while another one is writing its entry fails with
/// "failed to read .git/worktrees/…/commondir". baton changes it one call at a time: threads of
/// one process queue on this mutex, processes on an advisory lock of
/// `<git common dir>/baton-worktrees.lock` ([`WORKTREE_LOCK_FILE`]). The calls are short, so
/// parallel entries hardly wait.
static WORKTREE_ADMIN: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The lock file, in the git directory shared by all worktrees of a repository.
pub const WORKTREE_LOCK_FILE: &str = "baton-worktrees.lock";

/// Held while git's worktree administration is changed; released when dropped.
struct AdminLock {
    _thread: std::sync::MutexGuard<'static, ()>,
    /// Closing the file releases the process lock. `None` when the lock file cannot be opened:
    /// the call then goes ahead with the in-process lock only.
    _process: Option<fs::File>,
}

impl Git {
    fn worktree_admin(&self) -> AdminLock {
        let thread = WORKTREE_ADMIN
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let common = common_dir_of(&self.dir).or_else(|| self.git_common_dir().ok());
        let process = common.and_then(|c| {
            let file = fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(c.join(WORKTREE_LOCK_FILE))
                .ok()?;
            file.lock().ok()?;
            Some(file)
        });
        AdminLock {
            _thread: thread,
            _process: process,
        }
    }
}

impl Git {
    /// `git worktree add -b NEW_BRANCH PATH START`. Hooks are switched off for this call, so a
    /// repository's `post-checkout` hook cannot slow down or alter an isolated checkout.
    /// Fails if the branch already exists or the path exists and is not empty.
    pub fn worktree_add(&self, path: &Path, new_branch: &str, start: &str) -> Result<()> {
        check_name("branch name", new_branch)?;
        check_rev(start)?;
        let args: [&OsStr; 9] = [
            OsStr::new("-c"),
            OsStr::new("core.hooksPath=/dev/null"),
            OsStr::new("worktree"),
            OsStr::new("add"),
            OsStr::new("--quiet"),
            OsStr::new("-b"),
            OsStr::new(new_branch),
            path.as_os_str(),
            OsStr::new(start),
        ];
        let _admin = self.worktree_admin();
        self.run(args).map(drop)
    }

    /// `git worktree remove [--force] PATH`. Without `force`, git refuses a worktree with modified
    /// or untracked files (ignored files are removed with it).
    pub fn worktree_remove(&self, path: &Path, force: bool) -> Result<()> {
        let mut args: Vec<&OsStr> = vec![OsStr::new("worktree"), OsStr::new("remove")];
        if force {
            args.push(OsStr::new("--force"));
        }
        args.push(OsStr::new("--"));
        args.push(path.as_os_str());
        let _admin = self.worktree_admin();
        self.run(args).map(drop)
    }

    /// Every worktree of the repository, the main one first.
    pub fn worktree_list(&self) -> Result<Vec<WorktreeInfo>> {
        let out = self.run_output(["worktree", "list", "--porcelain", "-z"])?;
        if out.status.success() {
            return Ok(parse_worktree_list(&out.stdout, b'\0'));
        }
        if out.status.code() == Some(129) {
            // git before 2.36 has no `-z`; its newline form is fine for ordinary paths.
            let bytes = self.run_bytes(["worktree", "list", "--porcelain"])?;
            return Ok(parse_worktree_list(&bytes, b'\n'));
        }
        Err(self.failure(
            ["worktree", "list", "--porcelain", "-z"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            &out,
        ))
    }

    /// `git worktree prune`: forget worktrees whose directories are gone.
    pub fn worktree_prune(&self) -> Result<()> {
        let _admin = self.worktree_admin();
        self.run(["worktree", "prune"]).map(drop)
    }

    /// `git branch -d NAME` (or `-D` with `force`). Without `force`, git refuses a branch whose
    /// commits are not in `HEAD` (or its upstream), and any branch checked out in a worktree.
    pub fn branch_delete(&self, name: &str, force: bool) -> Result<()> {
        check_name("branch name", name)?;
        let flag = if force { "-D" } else { "-d" };
        self.run(["branch", "--quiet", flag, name]).map(drop)
    }

    /// Whether local branch `name` exists.
    pub fn branch_exists(&self, name: &str) -> Result<bool> {
        check_name("branch name", name)?;
        let full = format!("refs/heads/{name}");
        self.run_predicate(["show-ref", "--verify", "--quiet", full.as_str()])
    }

    /// Adds `pattern` as a line of the repository's `info/exclude` (shared by all its worktrees),
    /// unless that exact line is already there.
    pub fn add_exclude(&self, pattern: &str) -> Result<()> {
        add_exclude_in(&self.git_common_dir()?, pattern)
    }
}

/// The git directory of the checkout whose work tree root is `root`, found by reading files only
/// (no git process, for paths that must stay fast): `root/.git` when it is a folder, else the
/// folder the `.git` file's `gitdir:` line names (a linked worktree's own git directory). `None`
/// when `root` holds no `.git`.
pub fn git_dir_of(root: &Path) -> Option<PathBuf> {
    let dot_git = root.join(".git");
    if dot_git.is_dir() {
        return Some(dot_git);
    }
    let text = fs::read_to_string(&dot_git).ok()?;
    let gitdir = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?.trim();
    Some(root.join(gitdir))
}

/// The git directory shared by all worktrees of the repository whose work tree root is `root`,
/// by reading files only: [`git_dir_of`], followed through its `commondir` file for a linked
/// worktree. `None` when `root` holds no `.git`.
pub fn common_dir_of(root: &Path) -> Option<PathBuf> {
    let gitdir = git_dir_of(root)?;
    match fs::read_to_string(gitdir.join("commondir")) {
        Ok(common) => Some(gitdir.join(common.trim())),
        Err(_) => Some(gitdir),
    }
}

/// A linked worktree at `root` as both sides say it is: `root/.git` is a `gitdir:` file naming
/// an admin dir `COMMON/worktrees/NAME` whose own `gitdir` file names `root/.git` back, and whose
/// `commondir` names `COMMON`. Returns the admin dir and the common dir, canonical. `None` when
/// either side disagrees: a folder whose `.git` file merely names another repository's git dir
/// is not that repository's worktree, and gets none of its rights (writing its git dir, its
/// trust). Read without running git.
pub fn linked_worktree_of(root: &Path) -> Option<(PathBuf, PathBuf)> {
    let dot_git = root.join(".git");
    if !dot_git.symlink_metadata().ok()?.is_file() {
        return None;
    }
    let admin = fs::canonicalize(git_dir_of(root)?).ok()?;
    let common =
        fs::canonicalize(admin.join(fs::read_to_string(admin.join("commondir")).ok()?.trim()))
            .ok()?;
    if admin.parent()? != common.join("worktrees") {
        return None;
    }
    let back = fs::read_to_string(admin.join("gitdir")).ok()?;
    let back = Path::new(back.trim());
    let back = if back.is_absolute() {
        back.to_path_buf()
    } else {
        admin.join(back)
    };
    (fs::canonicalize(back).ok()? == fs::canonicalize(&dot_git).ok()?).then_some((admin, common))
}

/// Adds `pattern` as a line of `info/exclude` in the git common directory `common_dir`, unless
/// that exact line is already there.
pub fn add_exclude_in(common_dir: &Path, pattern: &str) -> Result<()> {
    if pattern.is_empty() || pattern.contains(['\n', '\r']) {
        return Err(GitError::InvalidArgument {
            what: "exclude pattern",
            value: pattern.to_string(),
            reason: "it must be one non-empty line",
        });
    }
    let info = common_dir.join("info");
    let file = info.join("exclude");
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| GitError::Io { path, source }
    };
    fs::create_dir_all(&info).map_err(io(&info))?;
    // A link planted at `info/` or `info/exclude` would make baton append to whatever it points
    // at: refuse it, naming it.
    for p in [&info, &file] {
        if p.symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink())
        {
            return Err(io(p)(std::io::Error::other(
                "a symbolic link; baton does not write through links in the git dir: remove it",
            )));
        }
    }
    let existing = match fs::read(&file) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(io(&file)(e)),
    };
    let present = existing
        .split(|b| *b == b'\n')
        .any(|line| line.strip_suffix(b"\r").unwrap_or(line) == pattern.as_bytes());
    if present {
        return Ok(());
    }
    let mut line = Vec::with_capacity(pattern.len() + 2);
    if !existing.is_empty() && !existing.ends_with(b"\n") {
        line.push(b'\n');
    }
    line.extend_from_slice(pattern.as_bytes());
    line.push(b'\n');
    let mut f = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&file)
        .map_err(io(&file))?;
    f.write_all(&line).map_err(io(&file))
}

fn parse_worktree_list(bytes: &[u8], sep: u8) -> Vec<WorktreeInfo> {
    let mut list = Vec::new();
    let mut current: Option<WorktreeInfo> = None;
    for field in bytes.split(|b| *b == sep) {
        if field.is_empty() {
            // An empty field ends a record.
            list.extend(current.take());
            continue;
        }
        let (key, value) = match field.iter().position(|b| *b == b' ') {
            Some(i) => (&field[..i], Some(&field[i + 1..])),
            None => (field, None),
        };
        let text = || value.map(|v| String::from_utf8_lossy(v).into_owned());
        match key {
            b"worktree" => {
                list.extend(current.take());
                current = Some(WorktreeInfo {
                    path: bytes_to_path(value.unwrap_or_default()),
                    head: None,
                    branch: None,
                    bare: false,
                    detached: false,
                    locked: None,
                    prunable: None,
                });
            }
            _ => {
                let Some(entry) = current.as_mut() else {
                    continue;
                };
                match key {
                    b"HEAD" => {
                        entry.head = text().filter(|oid| !oid.chars().all(|c| c == ZERO_OID_CHARS));
                    }
                    b"branch" => {
                        entry.branch = text().map(|b| {
                            b.strip_prefix("refs/heads/")
                                .map(str::to_string)
                                .unwrap_or(b)
                        });
                    }
                    b"bare" => entry.bare = true,
                    b"detached" => entry.detached = true,
                    b"locked" => entry.locked = Some(text().unwrap_or_default()),
                    b"prunable" => entry.prunable = Some(text().unwrap_or_default()),
                    _ => {}
                }
            }
        }
    }
    list.extend(current);
    list
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn parses_worktree_list_z_form() {
        let raw = b"worktree /r\0HEAD 1111111111111111111111111111111111111111\0branch refs/heads/main\0\0\
worktree /w\0HEAD 2222222222222222222222222222222222222222\0detached\0locked\0\0\
worktree /gone\0HEAD 0000000000000000000000000000000000000000\0branch refs/heads/x\0prunable gitdir file points to non-existent location\0\0";
        let list = parse_worktree_list(raw, b'\0');
        assert_eq!(
            list,
            vec![
                WorktreeInfo {
                    path: PathBuf::from("/r"),
                    head: Some("1".repeat(40)),
                    branch: Some("main".into()),
                    bare: false,
                    detached: false,
                    locked: None,
                    prunable: None,
                },
                WorktreeInfo {
                    path: PathBuf::from("/w"),
                    head: Some("2".repeat(40)),
                    branch: None,
                    bare: false,
                    detached: true,
                    locked: Some(String::new()),
                    prunable: None,
                },
                WorktreeInfo {
                    path: PathBuf::from("/gone"),
                    head: None,
                    branch: Some("x".into()),
                    bare: false,
                    detached: false,
                    locked: None,
                    prunable: Some("gitdir file points to non-existent location".into()),
                },
            ]
        );
    }

    #[test]
    fn parses_worktree_list_newline_form() {
        let raw = b"worktree /r\nbare\n\nworktree /w\nHEAD 3333333333333333333333333333333333333333\nbranch refs/heads/b\n\n";
        let list = parse_worktree_list(raw, b'\n');
        assert_eq!(list.len(), 2);
        assert!(list[0].bare);
        assert_eq!(list[1].branch.as_deref(), Some("b"));
    }
}
