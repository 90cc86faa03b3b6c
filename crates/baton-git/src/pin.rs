//! The repository pinned before a model command runs.
//!
//! A model working in a repository can try to make git read another one later: replace `.git`
//! (`mv .git .g`, a `gitdir:` file in its place), or create a `commondir` that sends git to a
//! config of its own. [`pin`] resolves the work tree's git dir and common dir once, before any
//! model command runs there, and remembers what `.git` was (its type, device and inode, and a
//! pointer file's text). From then on every git call baton makes in that work tree, in this
//! process, passes the pinned `GIT_DIR`, `GIT_COMMON_DIR` and `GIT_WORK_TREE` (a `commondir`
//! created since is not read), and is refused with [`GitError::Replaced`] once `.git` is no
//! longer what was pinned.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::{Git, GitError, Result};

/// One pinned work tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pinned {
    /// The work tree's top folder (canonical).
    pub top: PathBuf,
    pub git_dir: PathBuf,
    pub common_dir: PathBuf,
    dot_git: Identity,
}

/// What `.git` was when pinned.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Identity {
    dev: u64,
    ino: u64,
    is_dir: bool,
    /// A pointer file's text.
    text: Option<Vec<u8>>,
}

fn identity(dot_git: &Path) -> Option<Identity> {
    let m = dot_git.symlink_metadata().ok()?;
    if m.file_type().is_symlink() {
        return None;
    }
    Some(Identity {
        dev: m.dev(),
        ino: m.ino(),
        is_dir: m.is_dir(),
        text: m.is_file().then(|| std::fs::read(dot_git).ok()).flatten(),
    })
}

static PINS: Mutex<Vec<Pinned>> = Mutex::new(Vec::new());

fn pins() -> std::sync::MutexGuard<'static, Vec<Pinned>> {
    PINS.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The nearest folder at or above `dir` that holds a `.git` entry.
fn top_of(dir: &Path) -> Option<PathBuf> {
    let dir = std::fs::canonicalize(dir).ok()?;
    dir.ancestors()
        .find(|d| d.join(".git").symlink_metadata().is_ok())
        .map(Path::to_path_buf)
}

/// Pins the work tree `dir` is in (see the module). Pinning a work tree already pinned checks it
/// instead: `Ok` when `.git` is still what it was, [`GitError::Replaced`] when not. `Ok(None)`
/// when `dir` is in no work tree (a model may still `git init` one: it is its own).
pub fn pin(dir: &Path) -> Result<Option<Pinned>> {
    if let Some(p) = pinned_for(dir)? {
        return Ok(Some(p));
    }
    let Some(top) = top_of(dir) else {
        return Ok(None);
    };
    let dot_git = top.join(".git");
    let Some(before) = identity(&dot_git) else {
        return Ok(None);
    };
    let Some((git_dir, common_dir)) =
        linked_to_a_pinned_repository(&top).or_else(|| Git::new(&top).git_dirs().ok())
    else {
        return Ok(None);
    };
    // Resolved from what `.git` was at the start: a change while resolving is not pinned.
    if identity(&dot_git).as_ref() != Some(&before) {
        return Err(replaced(&top));
    }
    let p = Pinned {
        top,
        git_dir,
        common_dir,
        dot_git: before,
    };
    let mut all = pins();
    all.retain(|x| x.top != p.top);
    all.push(p.clone());
    Ok(Some(p))
}

/// A linked worktree of a repository already pinned (a Flow unit's, a delegated child's), read
/// from its files without a git process: its `.git` pointer and the admin folder's `gitdir` must
/// name each other, and the admin folder must sit in the pinned common dir's `worktrees/`, as
/// git itself would resolve them. Anything else is asked of git.
fn linked_to_a_pinned_repository(top: &Path) -> Option<(PathBuf, PathBuf)> {
    let (admin, common) = crate::worktree::linked_worktree_of(top)?;
    pins()
        .iter()
        .any(|p| p.common_dir == common)
        .then_some((admin, common))
}

fn replaced(top: &Path) -> GitError {
    GitError::Replaced {
        dot_git: top.join(".git"),
    }
}

/// The pin of the work tree `dir` is in, checked: `.git` must still be what it was. A folder
/// inside a pinned work tree that holds a repository of its own (a nested `.git`) is not
/// pinned; a pinned work tree whose `.git` is gone is still pinned (and refused).
pub(crate) fn pinned_for(dir: &Path) -> Result<Option<Pinned>> {
    let mut all = pins();
    if all.is_empty() {
        return Ok(None);
    }
    let Ok(dir) = std::fs::canonicalize(dir) else {
        return Ok(None);
    };
    let Some(p) = all
        .iter()
        .filter(|p| dir.starts_with(&p.top))
        .max_by_key(|p| p.top.as_os_str().len())
    else {
        return Ok(None);
    };
    let nearest = dir
        .ancestors()
        .take_while(|d| d.starts_with(&p.top))
        .find(|d| d.join(".git").symlink_metadata().is_ok());
    if nearest.is_some_and(|n| n != p.top) {
        return Ok(None);
    }
    let now = identity(&p.top.join(".git"));
    if now.as_ref() == Some(&p.dot_git) {
        return Ok(Some(p.clone()));
    }
    // A linked worktree removed and added again at the same path (a Flow unit's, a node's
    // step) is the same repository's: both sides of the new pointer must agree, and name the
    // pinned common dir. A sandboxed command can write neither side.
    match (now, crate::worktree::linked_worktree_of(&p.top)) {
        (Some(now), Some((admin, common))) if common == p.common_dir => {
            let mut renewed = p.clone();
            renewed.git_dir = admin;
            renewed.dot_git = now;
            let top = renewed.top.clone();
            all.retain(|x| x.top != top);
            all.push(renewed.clone());
            Ok(Some(renewed))
        }
        _ => Err(replaced(&p.top)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        Git::new(d.path()).init("main").unwrap();
        d
    }

    #[test]
    fn a_pinned_repository_whose_git_dir_was_replaced_is_refused() {
        let d = repo();
        let top = std::fs::canonicalize(d.path()).unwrap();
        let p = pin(&top).unwrap().unwrap();
        assert_eq!(p.git_dir, top.join(".git"));
        assert!(Git::new(&top).status_porcelain().is_ok());
        std::fs::rename(top.join(".git"), top.join(".g")).unwrap();
        std::fs::write(top.join(".git"), "gitdir: .g\n").unwrap();
        let err = Git::new(&top).status_porcelain().unwrap_err();
        assert!(matches!(err, GitError::Replaced { .. }), "{err}");
        assert!(err.to_string().contains("replaced"), "{err}");
        std::fs::remove_file(top.join(".git")).unwrap();
        std::fs::create_dir(top.join("sub")).unwrap();
        let err = Git::new(top.join("sub")).status_porcelain().unwrap_err();
        assert!(matches!(err, GitError::Replaced { .. }), "{err}");
    }

    #[test]
    fn a_linked_worktree_added_again_at_the_same_path_is_pinned_again() {
        let d = repo();
        let top = std::fs::canonicalize(d.path()).unwrap();
        let g = Git::new(&top)
            .with_env("GIT_AUTHOR_NAME", "t")
            .with_env("GIT_AUTHOR_EMAIL", "t@t")
            .with_env("GIT_COMMITTER_NAME", "t")
            .with_env("GIT_COMMITTER_EMAIL", "t@t");
        g.run(["commit", "-q", "--allow-empty", "-m", "i"]).unwrap();
        let wt = top.join("wt");
        g.worktree_add(&wt, "u1", "main").unwrap();
        pin(&wt).unwrap().unwrap();
        g.worktree_remove(&wt, true).unwrap();
        g.worktree_add(&wt, "u2", "main").unwrap();
        assert_eq!(
            Git::new(&wt).current_branch().unwrap().as_deref(),
            Some("u2")
        );
        // A pointer naming another repository is still refused.
        let other = repo();
        std::fs::write(
            wt.join(".git"),
            format!("gitdir: {}\n", other.path().join(".git").display()),
        )
        .unwrap();
        assert!(matches!(
            Git::new(&wt).status_porcelain(),
            Err(GitError::Replaced { .. })
        ));
    }

    #[test]
    fn a_linked_worktree_of_a_pinned_repository_is_pinned_from_its_files() {
        let d = repo();
        let top = std::fs::canonicalize(d.path()).unwrap();
        let g = Git::new(&top)
            .with_env("GIT_COMMITTER_NAME", "t")
            .with_env("GIT_COMMITTER_EMAIL", "t@t")
            .with_env("GIT_AUTHOR_NAME", "t")
            .with_env("GIT_AUTHOR_EMAIL", "t@t");
        g.run(["commit", "-q", "--allow-empty", "-m", "i"]).unwrap();
        let wt = top.join("wt");
        g.worktree_add(&wt, "u1", "main").unwrap();
        let asked = Git::new(&wt).git_dirs().unwrap();
        pin(&top).unwrap().unwrap();
        // What git answers, read without asking it: a HEAD git cannot read makes git refuse
        // the worktree, so only the files can have answered.
        let admin = top.join(".git/worktrees/wt");
        assert_eq!(asked, (admin.clone(), top.join(".git")));
        std::fs::write(admin.join("HEAD"), "garbage\n").unwrap();
        assert!(
            Git::new(&wt).git_dirs().is_err(),
            "git refuses a worktree whose HEAD it cannot read"
        );
        let p = pin(&wt).unwrap().unwrap();
        assert_eq!((p.git_dir.clone(), p.common_dir.clone()), asked);
        assert_eq!(Git::new(&wt).git_dirs().unwrap(), asked);
        // A worktree of a repository nothing pinned is still asked of git.
        let other = repo();
        let o = std::fs::canonicalize(other.path()).unwrap();
        let og = Git::new(&o)
            .with_env("GIT_COMMITTER_NAME", "t")
            .with_env("GIT_COMMITTER_EMAIL", "t@t")
            .with_env("GIT_AUTHOR_NAME", "t")
            .with_env("GIT_AUTHOR_EMAIL", "t@t");
        og.run(["commit", "-q", "--allow-empty", "-m", "i"])
            .unwrap();
        let owt = o.join("wt");
        og.worktree_add(&owt, "u1", "main").unwrap();
        std::fs::write(o.join(".git/worktrees/wt/HEAD"), "garbage\n").unwrap();
        assert_eq!(pin(&owt).unwrap(), None);
    }

    #[test]
    fn a_commondir_created_after_the_pin_is_not_read() {
        let d = repo();
        let top = std::fs::canonicalize(d.path()).unwrap();
        pin(&top).unwrap();
        // A commondir naming a folder that is no repository would break an unpinned git.
        std::fs::create_dir(top.join(".git/x")).unwrap();
        std::fs::write(top.join(".git/commondir"), "x\n").unwrap();
        let common = Git::new(&top).git_common_dir().unwrap();
        assert_eq!(common, top.join(".git"));
    }
}
