//! Defence in depth behind the protected paths: the host takes a picture of the control files
//! before a model command runs and compares after it. Should anything have changed them anyway
//! (a kernel or configuration where the read-only binds did not hold), the host puts them back as
//! they were, deletes what was added, and tells the model and the transcript what it undid.
//!
//! Only the small control files are watched, not all of `.baton/` (its `state/` is baton's own
//! writing): the git dir's `config`, `config.worktree`, `hooks/`, `info/`, a linked worktree's
//! `.git` file and admin files, and `.baton/config.toml`, `.baton/roles/`, `.baton/skills/`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Files larger than this are compared by size and time only and cannot be put back.
const MAX_KEPT: u64 = 256 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    len: u64,
    mtime_ns: i128,
    ino: u64,
    mode: u32,
    bytes: Option<Vec<u8>>,
}

fn seen(path: &Path) -> Option<Seen> {
    use std::os::unix::fs::MetadataExt;
    let m = path.symlink_metadata().ok()?;
    let bytes = (m.is_file() && m.len() <= MAX_KEPT)
        .then(|| std::fs::read(path).ok())
        .flatten();
    Some(Seen {
        len: m.len(),
        mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
        ino: m.ino(),
        mode: m.mode(),
        bytes,
    })
}

/// The watched files under `roots`' protected paths (files themselves, and the files directly in
/// the watched folders).
fn watched_files(protected: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in protected {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let dirs: Vec<PathBuf> = match name {
            crate::protect::BATON_DIR => {
                out.push(p.join("config.toml"));
                vec![p.join("roles"), p.join("skills")]
            }
            "hooks" | "info" => vec![p.clone()],
            "modules" | ".claude" | ".codex" | ".pi" | ".agents" => Vec::new(),
            _ => {
                out.push(p.clone());
                Vec::new()
            }
        };
        for d in dirs {
            if let Ok(entries) = std::fs::read_dir(&d) {
                out.extend(entries.flatten().map(|e| e.path()));
            }
            // A file that appears later in the folder is caught by the folder's listing.
            out.push(d);
        }
    }
    out.sort();
    out.dedup();
    out
}

/// A picture of the protected control files, taken before a command.
#[derive(Debug, Default)]
pub struct Watch {
    before: BTreeMap<PathBuf, Option<Seen>>,
    dirs: Vec<PathBuf>,
    /// Watched folders that did not exist: one that appears is removed.
    absent: Vec<PathBuf>,
}

impl Watch {
    /// Takes the picture of the control files among `protected` (see [`crate::Policy::protected`]).
    pub fn of(protected: &[PathBuf]) -> Watch {
        let files = watched_files(protected);
        let dirs = files.iter().filter(|f| f.is_dir()).cloned().collect();
        let absent = files
            .iter()
            .filter(|f| {
                f.symlink_metadata().is_err()
                    && matches!(
                        f.file_name().and_then(|n| n.to_str()),
                        Some("roles" | "skills")
                    )
            })
            .cloned()
            .collect();
        Watch {
            absent,
            before: files
                .into_iter()
                .filter(|f| {
                    !f.is_dir()
                        && !matches!(
                            f.file_name().and_then(|n| n.to_str()),
                            Some("roles" | "skills")
                        )
                })
                .map(|f| {
                    let s = seen(&f);
                    (f, s)
                })
                .collect(),
            dirs,
        }
    }

    /// Compares with now; puts back what changed (and removes what was added) where it can.
    /// Returns one line per path that had changed, saying what was done.
    pub fn restore(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (path, before) in &self.before {
            let now = seen(path);
            let same = match (&now, before) {
                // Content kept: compare what it says (a put-back file has a new inode and time).
                (Some(a), Some(b)) if a.bytes.is_some() && b.bytes.is_some() => {
                    a.bytes == b.bytes && a.mode == b.mode
                }
                (Some(a), Some(b)) => {
                    a.len == b.len && a.mtime_ns == b.mtime_ns && a.ino == b.ino && a.mode == b.mode
                }
                (None, None) => true,
                _ => false,
            };
            if same {
                continue;
            }
            out.push(match before {
                Some(Seen {
                    bytes: Some(bytes),
                    mode,
                    ..
                }) => {
                    use std::os::unix::fs::PermissionsExt;
                    let _ = std::fs::remove_file(path);
                    let ok = std::fs::write(path, bytes).is_ok()
                        && std::fs::set_permissions(
                            path,
                            std::fs::Permissions::from_mode(mode & 0o7777),
                        )
                        .is_ok();
                    format!(
                        "{}: changed; {}",
                        path.display(),
                        if ok {
                            "put back"
                        } else {
                            "could not be put back"
                        }
                    )
                }
                Some(_) => format!("{}: changed (too large to put back)", path.display()),
                None => {
                    let ok = std::fs::remove_file(path).is_ok();
                    format!(
                        "{}: added; {}",
                        path.display(),
                        if ok {
                            "removed"
                        } else {
                            "could not be removed"
                        }
                    )
                }
            });
        }
        for d in &self.absent {
            if d.symlink_metadata().is_ok() {
                let ok = std::fs::remove_dir_all(d)
                    .or_else(|_| std::fs::remove_file(d))
                    .is_ok();
                out.push(format!(
                    "{}: added; {}",
                    d.display(),
                    if ok {
                        "removed"
                    } else {
                        "could not be removed"
                    }
                ));
            }
        }
        for d in &self.dirs {
            let Ok(entries) = std::fs::read_dir(d) else {
                continue;
            };
            for e in entries.flatten() {
                let p = e.path();
                if self.before.contains_key(&p) || self.dirs.contains(&p) {
                    continue;
                }
                let ok = if p.is_dir() && !p.is_symlink() {
                    std::fs::remove_dir_all(&p).is_ok()
                } else {
                    std::fs::remove_file(&p).is_ok()
                };
                out.push(format!(
                    "{}: added; {}",
                    p.display(),
                    if ok {
                        "removed"
                    } else {
                        "could not be removed"
                    }
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_control_files_are_put_back_and_added_ones_removed() {
        let d = tempfile::tempdir().unwrap();
        let git = d.path().join(".git");
        std::fs::create_dir_all(git.join("hooks")).unwrap();
        std::fs::create_dir_all(git.join("info")).unwrap();
        std::fs::write(git.join("config"), "[core]\n").unwrap();
        std::fs::write(git.join("hooks/pre-commit.sample"), "#!/bin/sh\n").unwrap();
        std::fs::create_dir_all(d.path().join(".baton/roles")).unwrap();
        let protected = vec![
            d.path().join(".baton"),
            git.join("config"),
            git.join("hooks"),
            git.join("info"),
        ];
        let w = Watch::of(&protected);
        assert!(w.restore().is_empty(), "nothing changed yet");
        std::fs::write(git.join("config"), "[core]\n\tfsmonitor = evil\n").unwrap();
        std::fs::write(git.join("hooks/post-commit"), "#!/bin/sh\nevil\n").unwrap();
        std::fs::write(git.join("info/attributes"), "* filter=evil\n").unwrap();
        std::fs::write(d.path().join(".baton/config.toml"), "[sandbox]\n").unwrap();
        std::fs::write(d.path().join(".baton/roles/x.md"), "evil").unwrap();
        std::fs::create_dir_all(d.path().join(".baton/skills/s")).unwrap();
        let undone = w.restore();
        assert_eq!(undone.len(), 6, "{undone:?}");
        assert!(!d.path().join(".baton/skills").exists());
        assert_eq!(
            std::fs::read_to_string(git.join("config")).unwrap(),
            "[core]\n"
        );
        assert!(!git.join("hooks/post-commit").exists());
        assert!(!git.join("info/attributes").exists());
        assert!(!d.path().join(".baton/config.toml").exists());
        assert!(!d.path().join(".baton/roles/x.md").exists());
        assert!(git.join("hooks/pre-commit.sample").is_file());
        assert!(w.restore().is_empty());
    }
}
