//! Defence in depth behind the protected paths: the host takes a picture of every file a model
//! command must not change before it runs and compares after it. Should anything have changed
//! anyway (a kernel or configuration where the read-only binds did not hold, or a control file
//! that did not exist, which no bind can cover), the host puts back what changed, removes what
//! the command created, and tells the model and the transcript what it undid.
//!
//! What is watched in each writable root (see [`watched`]): the git dir's control entries
//! whether they exist or not (`config`, `config.worktree`, `commondir`, `hooks/`, `info/`,
//! `modules/`, each linked worktree's `commondir`, `gitdir` and `config.worktree`), `.baton/`'s
//! `config.toml`, `roles/` and `skills/`, and the peer CLIs' settings (`.claude/`, `.mcp.json`,
//! `.codex/`, `.pi/`, `.agents/`), folders recursively (`modules/` only as itself), with at most
//! 8 MiB of content kept.
//!
//! The rule that makes the repair safe: **it never removes or rewrites a file it did not see the
//! command create or change.** A file that was there before the command is only ever put back as
//! it was; only a path that was absent in the picture and present after is removed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Files larger than this are compared by size and time only and cannot be put back.
const MAX_KEPT: u64 = 256 * 1024;
/// At most this many entries are pictured under one watched folder.
const MAX_ENTRIES: usize = 4096;
/// At most this many bytes of content are kept in one picture; past it, files are compared by
/// size and time only (and cannot be put back).
const MAX_KEPT_TOTAL: u64 = 8 * 1024 * 1024;
/// Watched folders pictured as themselves only, not what is in them: `.git/modules/` holds
/// whole git dirs of submodules (read-only to commands); one created where there was none is
/// still removed.
const LEAVES: &[&str] = &["modules"];

#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    len: u64,
    mtime_ns: i128,
    /// Set by the kernel on every change of content or metadata; no command can set it back
    /// (that takes `CAP_SYS_TIME`), so an equal one means an unchanged file.
    ctime_ns: i128,
    ino: u64,
    mode: u32,
    is_dir: bool,
    bytes: Option<Vec<u8>>,
}

/// What `path` is now; its content too when it is a small file and `budget` (the picture
/// before a command; none after it) allows.
fn seen(path: &Path, budget: Option<&mut u64>) -> Option<Seen> {
    use std::os::unix::fs::MetadataExt;
    let m = path.symlink_metadata().ok()?;
    let bytes = match budget {
        Some(budget) if m.is_file() && m.len() <= MAX_KEPT && m.len() <= *budget => {
            let bytes = std::fs::read(path).ok();
            *budget -= bytes.as_ref().map_or(0, |b| b.len() as u64);
            bytes
        }
        _ => None,
    };
    Some(Seen {
        len: m.len(),
        mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
        ctime_ns: i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec()),
        ino: m.ino(),
        mode: m.mode(),
        is_dir: m.is_dir(),
        bytes,
    })
}

/// The git dir entries git reads as control, whether they exist or not.
const GIT_CONTROLS: &[&str] = &[
    "config",
    "config.worktree",
    "commondir",
    "hooks",
    "info",
    "modules",
];
const ADMIN_CONTROLS: &[&str] = &["commondir", "gitdir", "config.worktree"];
const BATON_CONTROLS: &[&str] = &["config.toml", "roles", "skills"];

/// The paths watched in the writable folders `roots`, existing or not.
pub fn watched(roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for root in roots.iter().filter(|r| r.is_dir()) {
        let dot_git = root.join(".git");
        let git_dir = if dot_git.is_dir() && !dot_git.is_symlink() {
            Some(dot_git.clone())
        } else if root.join("HEAD").is_file() && root.join("objects").is_dir() {
            Some(root.clone())
        } else {
            None
        };
        if dot_git.symlink_metadata().is_ok_and(|m| !m.is_dir()) {
            out.push(dot_git);
        }
        if let Some(g) = git_dir {
            out.extend(GIT_CONTROLS.iter().map(|n| g.join(n)));
            if let Ok(entries) = std::fs::read_dir(g.join("worktrees")) {
                for e in entries.flatten() {
                    out.extend(ADMIN_CONTROLS.iter().map(|n| e.path().join(n)));
                }
            }
        }
        let baton = root.join(crate::protect::BATON_DIR);
        out.extend(BATON_CONTROLS.iter().map(|n| baton.join(n)));
        out.extend(crate::protect::PEER_SETTINGS.iter().map(|n| root.join(n)));
    }
    out.sort();
    out.dedup();
    out
}

/// `path` and, for a folder, everything below it (links not followed), at most [`MAX_ENTRIES`];
/// `false` when the folder held more (the picture is incomplete).
fn picture(
    path: &Path,
    out: &mut BTreeMap<PathBuf, Option<Seen>>,
    mut budget: Option<&mut u64>,
) -> bool {
    let s = seen(path, budget.as_deref_mut());
    let is_dir = s.as_ref().is_some_and(|s| s.is_dir);
    out.insert(path.to_path_buf(), s);
    let leaf = path
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| LEAVES.contains(&n));
    if !is_dir || leaf {
        return true;
    }
    let mut stack = vec![path.to_path_buf()];
    let mut n = 0;
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            n += 1;
            if n > MAX_ENTRIES {
                return false;
            }
            let p = e.path();
            let s = seen(&p, budget.as_deref_mut());
            if s.as_ref().is_some_and(|s| s.is_dir) {
                stack.push(p.clone());
            }
            out.insert(p, s);
        }
    }
    true
}

/// A picture of the watched paths, taken before a command.
#[derive(Debug, Default)]
pub struct Watch {
    watched: Vec<PathBuf>,
    before: BTreeMap<PathBuf, Option<Seen>>,
    /// Watched folders too large to picture whole: nothing under them is ever removed.
    incomplete: Vec<PathBuf>,
}

/// Whether `path`, seen `now` (without its content), is as it was `before`.
fn unchanged(path: &Path, now: &Option<Seen>, before: &Option<Seen>) -> bool {
    match (now, before) {
        // A folder's entries are compared one by one; the folder itself by its mode.
        (Some(a), Some(b)) if a.is_dir && b.is_dir => a.mode == b.mode,
        (Some(a), Some(b))
            if (a.len, a.mtime_ns, a.ctime_ns, a.ino, a.mode, a.is_dir)
                == (b.len, b.mtime_ns, b.ctime_ns, b.ino, b.mode, b.is_dir) =>
        {
            true
        }
        // Touched: the same content (a file put back has a new inode and times) is unchanged.
        (Some(a), Some(b)) if !a.is_dir && b.bytes.is_some() => {
            a.mode == b.mode && std::fs::read(path).ok() == b.bytes
        }
        (None, None) => true,
        _ => false,
    }
}

fn outcome(path: &Path, what: &str, ok: bool, done: &str) -> String {
    let done = if ok {
        done.to_string()
    } else {
        format!("could not be {done}")
    };
    format!("{}: {what}; {done}", path.display())
}

impl Watch {
    /// Takes the picture of what is watched in the writable folders `roots` (see [`watched`]).
    pub fn of(roots: &[PathBuf]) -> Watch {
        let watched = watched(roots);
        let mut before = BTreeMap::new();
        let mut incomplete = Vec::new();
        let mut budget = MAX_KEPT_TOTAL;
        for w in &watched {
            if !picture(w, &mut before, Some(&mut budget)) {
                incomplete.push(w.clone());
            }
        }
        Watch {
            watched,
            before,
            incomplete,
        }
    }

    /// Compares with now: puts back what changed, removes what the command created. Returns
    /// one line per path that had changed, saying what was done.
    pub fn restore(&self) -> Vec<String> {
        // Without content: a file whose status is unchanged is unchanged (see `Seen::ctime_ns`).
        let mut now = BTreeMap::new();
        for w in &self.watched {
            picture(w, &mut now, None);
        }
        let mut out = Vec::new();
        // Created: absent from the picture. The outermost created path is removed whole (what
        // lies below it was created with it).
        let mut removed: Vec<PathBuf> = Vec::new();
        for (path, s) in &now {
            let Some(s) = s else { continue };
            if matches!(self.before.get(path), Some(Some(_))) {
                continue;
            }
            if removed
                .iter()
                .chain(&self.incomplete)
                .any(|r| path.starts_with(r))
            {
                continue;
            }
            // A folder that was there keeps what was in it; only the new path goes.
            let ok = if s.is_dir {
                std::fs::remove_dir_all(path).is_ok()
            } else {
                std::fs::remove_file(path).is_ok()
            };
            out.push(outcome(path, "added", ok, "removed"));
            removed.push(path.clone());
        }
        // Changed or removed: put back what was kept, parents first.
        for (path, before) in &self.before {
            let Some(b) = before else { continue };
            let current = now.get(path).cloned().flatten();
            if unchanged(path, &current, before) {
                continue;
            }
            if b.is_dir {
                use std::os::unix::fs::PermissionsExt;
                let ok = std::fs::create_dir_all(path).is_ok()
                    && std::fs::set_permissions(
                        path,
                        std::fs::Permissions::from_mode(b.mode & 0o7777),
                    )
                    .is_ok();
                if current.is_none() || current.is_some_and(|c| !c.is_dir) {
                    out.push(outcome(path, "removed", ok, "put back"));
                }
                continue;
            }
            out.push(match &b.bytes {
                Some(bytes) => {
                    use std::os::unix::fs::PermissionsExt;
                    if path.symlink_metadata().is_ok_and(|m| m.is_dir()) {
                        let _ = std::fs::remove_dir_all(path);
                    } else {
                        let _ = std::fs::remove_file(path);
                    }
                    let ok = std::fs::write(path, bytes).is_ok()
                        && std::fs::set_permissions(
                            path,
                            std::fs::Permissions::from_mode(b.mode & 0o7777),
                        )
                        .is_ok();
                    outcome(path, "changed", ok, "put back")
                }
                None => format!("{}: changed (too large to put back)", path.display()),
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let git = d.path().join(".git");
        std::fs::create_dir_all(git.join("hooks")).unwrap();
        std::fs::create_dir_all(git.join("info")).unwrap();
        std::fs::create_dir_all(git.join("objects")).unwrap();
        std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(git.join("config"), "[core]\n").unwrap();
        std::fs::write(git.join("hooks/pre-commit.sample"), "#!/bin/sh\n").unwrap();
        d
    }

    #[test]
    fn changed_control_files_are_put_back_and_created_ones_removed() {
        let d = repo();
        let git = d.path().join(".git");
        std::fs::create_dir_all(d.path().join(".baton/roles")).unwrap();
        let w = Watch::of(&[d.path().to_path_buf()]);
        assert!(w.restore().is_empty(), "nothing changed yet");
        std::fs::write(git.join("config"), "[core]\n\tfsmonitor = evil\n").unwrap();
        std::fs::write(git.join("hooks/post-commit"), "#!/bin/sh\nevil\n").unwrap();
        std::fs::write(git.join("info/attributes"), "* filter=evil\n").unwrap();
        std::fs::write(git.join("commondir"), "x\n").unwrap();
        std::fs::write(git.join("config.worktree"), "[filter \"p\"]\n").unwrap();
        std::fs::write(d.path().join(".baton/config.toml"), "[sandbox]\n").unwrap();
        std::fs::write(d.path().join(".baton/roles/x.md"), "evil").unwrap();
        std::fs::create_dir_all(d.path().join(".baton/skills/s")).unwrap();
        std::fs::create_dir_all(d.path().join(".claude/skills")).unwrap();
        std::fs::write(d.path().join(".mcp.json"), "{}").unwrap();
        let undone = w.restore();
        assert_eq!(undone.len(), 10, "{undone:#?}");
        assert!(!d.path().join(".baton/skills").exists());
        assert_eq!(
            std::fs::read_to_string(git.join("config")).unwrap(),
            "[core]\n"
        );
        for gone in [
            ".git/hooks/post-commit",
            ".git/info/attributes",
            ".git/commondir",
            ".git/config.worktree",
            ".baton/config.toml",
            ".baton/roles/x.md",
            ".claude",
            ".mcp.json",
        ] {
            assert!(!d.path().join(gone).exists(), "{gone}");
        }
        assert!(git.join("hooks/pre-commit.sample").is_file());
        assert!(d.path().join(".baton/roles").is_dir());
        assert!(w.restore().is_empty());
    }

    /// A rewrite that keeps the size and sets the modification time back is still seen: the
    /// kernel's change time moved, and no command can set that back.
    #[test]
    fn a_same_size_rewrite_with_its_old_time_is_put_back() {
        let d = repo();
        let config = d.path().join(".git/config");
        let w = Watch::of(&[d.path().to_path_buf()]);
        let old = std::fs::metadata(&config).unwrap().modified().unwrap();
        std::fs::write(&config, "[evil]\n").unwrap();
        assert_eq!(
            std::fs::metadata(&config).unwrap().len(),
            "[core]\n".len() as u64
        );
        std::fs::File::options()
            .write(true)
            .open(&config)
            .unwrap()
            .set_modified(old)
            .unwrap();
        let undone = w.restore();
        assert_eq!(undone.len(), 1, "{undone:?}");
        assert_eq!(std::fs::read_to_string(&config).unwrap(), "[core]\n");
    }

    /// The defect of the last round: a committed skill (a folder with files) was deleted as
    /// "added" after every command. Nothing that was there before is ever removed or rewritten.
    #[test]
    fn files_that_were_there_before_are_never_removed() {
        let d = repo();
        let skill = d.path().join(".baton/skills/notes");
        std::fs::create_dir_all(skill.join("refs")).unwrap();
        std::fs::write(skill.join("SKILL.md"), "---\nname: notes\n---\nbody\n").unwrap();
        std::fs::write(skill.join("refs/a.md"), "a\n").unwrap();
        std::fs::create_dir_all(d.path().join(".claude/agents")).unwrap();
        std::fs::write(d.path().join(".claude/agents/r.md"), "r\n").unwrap();
        std::fs::write(d.path().join(".baton/config.toml"), "[agent]\n").unwrap();
        let w = Watch::of(&[d.path().to_path_buf()]);
        assert_eq!(w.restore(), Vec::<String>::new());
        assert!(skill.join("SKILL.md").is_file());
        assert!(skill.join("refs/a.md").is_file());
        assert!(d.path().join(".claude/agents/r.md").is_file());
        // A command that removed and rewrote them: put back, and only what it added goes.
        std::fs::remove_dir_all(&skill).unwrap();
        std::fs::write(d.path().join(".claude/agents/r.md"), "evil\n").unwrap();
        std::fs::write(d.path().join(".claude/agents/new.md"), "new\n").unwrap();
        let undone = w.restore();
        assert!(!undone.is_empty());
        assert_eq!(
            std::fs::read_to_string(skill.join("SKILL.md")).unwrap(),
            "---\nname: notes\n---\nbody\n"
        );
        assert_eq!(
            std::fs::read_to_string(skill.join("refs/a.md")).unwrap(),
            "a\n"
        );
        assert_eq!(
            std::fs::read_to_string(d.path().join(".claude/agents/r.md")).unwrap(),
            "r\n"
        );
        assert!(!d.path().join(".claude/agents/new.md").exists());
        assert_eq!(
            std::fs::read_to_string(d.path().join(".baton/config.toml")).unwrap(),
            "[agent]\n"
        );
        assert!(w.restore().is_empty(), "{:?}", w.restore());
    }
}
