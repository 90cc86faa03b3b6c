//! Putting a work tree's files back to a checkpoint: what `/undo` in the terminal UI does.
//!
//! A session's checkpoints are pairs of [`crate::snapshot::commit`]s: the tree right before a
//! prompt's first tool call that may write, and the tree once that prompt was answered. Between
//! them lies the agent's own change; between one prompt's end and the next prompt's start, and
//! since the last prompt's end, lie the user's. [`undo`] puts back, to how they were before the
//! first checkpoint given, only the files the agent changed and nobody changed by hand since
//! (those are kept and listed), and never writes through a link or outside the work tree.

use std::collections::BTreeSet;
use std::path::{Component, Path};

/// One prompt's change: the trees before its first writing call and after its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub before: String,
    pub after: String,
}

/// What [`undo`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Undone {
    /// Files written back to their content before the first checkpoint.
    pub restored: Vec<String>,
    /// Files the agent had created, removed again.
    pub removed: Vec<String>,
    /// Files changed by hand since the agent changed them (or between its prompts), left as they
    /// are.
    pub kept: Vec<String>,
    /// Files that could not be put back, with why (a link on the way, a submodule, an I/O error).
    pub failed: Vec<(String, String)>,
}

impl Undone {
    /// Nothing was put back and nothing was kept: the prompts changed no file.
    pub fn is_empty(&self) -> bool {
        self.restored.is_empty()
            && self.removed.is_empty()
            && self.kept.is_empty()
            && self.failed.is_empty()
    }
}

/// Puts the files of `root` that `spans` (consecutive prompts, oldest first) changed back to how
/// they were before the first one, leaving alone every file changed by hand in between or since
/// (see the module). An error when git cannot read the checkpoints or the tree now; nothing is
/// written then.
pub fn undo(root: &Path, spans: &[Span]) -> Result<Undone, String> {
    let (Some(first), Some(last)) = (spans.first(), spans.last()) else {
        return Ok(Undone::default());
    };
    // Commit ids only reach git: a record that says anything else is refused, never passed on.
    if let Some(bad) = spans
        .iter()
        .flat_map(|s| [&s.before, &s.after])
        .find(|s| !crate::is_commit_id(s))
    {
        return Err(format!(
            "the checkpoint names {bad:?}, which is not a commit id"
        ));
    }
    let now = crate::snapshot::commit(root)
        .ok_or("the project's tree cannot be read now (git failed)")?;
    // git names every path from the work tree's top, whatever folder of it `root` is.
    let top = crate::Git::new(root)
        .toplevel()
        .map_err(|e| format!("the project's work tree cannot be found: {e}"))?;
    let top = std::fs::canonicalize(&top).unwrap_or(top);
    let root = top.as_path();
    let git = crate::Git::new(root);
    let changed = |a: &str, b: &str| -> Result<BTreeSet<String>, String> {
        let out = git
            .run_output([
                "diff",
                "--no-renames",
                "--no-ext-diff",
                "--name-only",
                "-z",
                a,
                b,
            ])
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!(
                "git cannot compare the checkpoints ({}): {}",
                short(a),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(out
            .stdout
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect())
    };
    let mut agents = BTreeSet::new();
    let mut by_hand = changed(&last.after, &now)?;
    for (i, span) in spans.iter().enumerate() {
        agents.extend(changed(&span.before, &span.after)?);
        if let Some(next) = spans.get(i + 1) {
            by_hand.extend(changed(&span.after, &next.before)?);
        }
    }
    let mut done = Undone::default();
    for path in agents {
        if by_hand.contains(&path) {
            done.kept.push(path);
            continue;
        }
        match put_back(&git, root, &first.before, &path) {
            Ok(true) => done.restored.push(path),
            Ok(false) => done.removed.push(path),
            Err(why) => done.failed.push((path, why)),
        }
    }
    Ok(done)
}

fn short(oid: &str) -> &str {
    &oid[..oid.len().min(12)]
}

/// Writes `path` back as it is in the tree of `commit`, or removes it when that tree has none:
/// `Ok(true)` when written, `Ok(false)` when removed.
fn put_back(git: &crate::Git, root: &Path, commit: &str, path: &str) -> Result<bool, String> {
    let rel = Path::new(path);
    if rel.is_absolute() || rel.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err("not a plain path inside the project".into());
    }
    // No link on the way: a folder replaced by a link would send the write elsewhere.
    let mut dir = root.to_path_buf();
    if let Some(parent) = rel.parent() {
        for part in parent.components() {
            dir.push(part);
            match dir.symlink_metadata() {
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(format!("{} is a link now", dir.display()));
                }
                Ok(m) if !m.is_dir() => {
                    return Err(format!("{} is not a folder now", dir.display()))
                }
                _ => {}
            }
        }
    }
    let target = root.join(rel);
    let listed = git
        .run_output(["ls-tree", "-z", commit, "--", path])
        .map_err(|e| e.to_string())?;
    let entry = String::from_utf8_lossy(&listed.stdout).into_owned();
    let entry = entry.trim_end_matches('\0');
    if entry.is_empty() {
        return match target.symlink_metadata() {
            Ok(m) if m.is_dir() => Err("a folder is there now".into()),
            Ok(_) => {
                std::fs::remove_file(&target).map_err(|e| e.to_string())?;
                remove_new_folders(git, root, commit, rel);
                Ok(false)
            }
            Err(_) => Ok(false),
        };
    }
    // `MODE TYPE OID\tPATH`
    let mut head = entry.split('\t').next().unwrap_or_default().split(' ');
    let (mode, kind, oid) = (
        head.next().unwrap_or_default(),
        head.next().unwrap_or_default(),
        head.next().unwrap_or_default(),
    );
    if kind != "blob" {
        return Err(format!("a {kind} in the checkpoint, not a file"));
    }
    let blob = git
        .run_output(["cat-file", "blob", oid])
        .map_err(|e| e.to_string())?;
    if !blob.status.success() {
        return Err(format!(
            "the checkpoint's content is gone from the repository ({})",
            String::from_utf8_lossy(&blob.stderr).trim()
        ));
    }
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
    }
    if let Ok(m) = target.symlink_metadata() {
        if m.is_dir() {
            return Err("a folder is there now".into());
        }
    }
    // Written beside it, then renamed over it: never half a file, never through a link.
    let name = rel
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = target.with_file_name(format!(".{name}.baton-undo"));
    let _ = std::fs::remove_file(&temp);
    if mode == "120000" {
        let to = String::from_utf8_lossy(&blob.stdout).into_owned();
        std::os::unix::fs::symlink(to, &temp).map_err(|e| e.to_string())?;
    } else {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::write(&temp, &blob.stdout).map_err(|e| e.to_string())?;
        let bits = if mode == "100755" { 0o755 } else { 0o644 };
        std::fs::set_permissions(&temp, std::fs::Permissions::from_mode(bits))
            .map_err(|e| e.to_string())?;
    }
    std::fs::rename(&temp, &target).map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        e.to_string()
    })?;
    Ok(true)
}

/// Removes the folders above `rel` that are empty now and that the tree of `commit` does not
/// have: the agent made them for the file just removed.
fn remove_new_folders(git: &crate::Git, root: &Path, commit: &str, rel: &Path) {
    for dir in rel.ancestors().skip(1) {
        if dir.as_os_str().is_empty() {
            break;
        }
        let name = dir.to_string_lossy();
        let listed = git.run_output(["ls-tree", "-d", commit, "--", name.as_ref()]);
        if listed.is_ok_and(|o| !o.stdout.is_empty())
            || std::fs::remove_dir(root.join(dir)).is_err()
        {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::snapshot::commit;

    fn repo() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let g = crate::Git::new(d.path())
            .with_env("GIT_AUTHOR_NAME", "t")
            .with_env("GIT_AUTHOR_EMAIL", "t@t")
            .with_env("GIT_COMMITTER_NAME", "t")
            .with_env("GIT_COMMITTER_EMAIL", "t@t");
        g.init("main").unwrap();
        std::fs::write(d.path().join("kept.txt"), "mine\n").unwrap();
        std::fs::write(d.path().join("a.txt"), "a0\n").unwrap();
        g.run(["add", "-A"]).unwrap();
        g.run(["commit", "-q", "-m", "i"]).unwrap();
        d
    }

    fn read(root: &Path, p: &str) -> Option<String> {
        std::fs::read_to_string(root.join(p)).ok()
    }

    /// Two prompts of the agent and the user's hand between and after them: the agent's own
    /// changes go back, every file the user touched stays as the user left it.
    #[test]
    fn only_the_agent_s_files_go_back_and_the_user_s_stay() {
        let d = repo();
        let root = d.path();
        // A scratch file of the user's, there before the session: never touched.
        std::fs::write(root.join("scratch.txt"), "notes\n").unwrap();
        // Prompt 1: the agent edits a.txt, creates new.txt and b.txt.
        let b1 = commit(root).unwrap();
        std::fs::write(root.join("a.txt"), "a1\n").unwrap();
        std::fs::create_dir(root.join("src")).unwrap();
        std::fs::write(root.join("src/new.txt"), "new\n").unwrap();
        std::fs::write(root.join("b.txt"), "agent\n").unwrap();
        let e1 = commit(root).unwrap();
        // Between the prompts the user edits b.txt by hand.
        std::fs::write(root.join("b.txt"), "agent, then me\n").unwrap();
        // Prompt 2: the agent edits a.txt again and c.txt.
        let b2 = commit(root).unwrap();
        std::fs::write(root.join("a.txt"), "a2\n").unwrap();
        std::fs::write(root.join("c.txt"), "c\n").unwrap();
        let e2 = commit(root).unwrap();
        // Since, the user edits c.txt.
        std::fs::write(root.join("c.txt"), "c, mine now\n").unwrap();

        let spans = [
            Span {
                before: b1,
                after: e1,
            },
            Span {
                before: b2,
                after: e2,
            },
        ];
        let done = undo(root, &spans).unwrap();
        assert_eq!(done.restored, ["a.txt"]);
        assert_eq!(done.removed, ["src/new.txt"]);
        assert_eq!(done.kept, ["b.txt", "c.txt"]);
        assert!(done.failed.is_empty(), "{:?}", done.failed);
        assert_eq!(read(root, "a.txt").as_deref(), Some("a0\n"));
        assert_eq!(read(root, "src/new.txt"), None);
        assert!(
            !root.join("src").exists(),
            "the folder the agent made goes too"
        );
        assert_eq!(read(root, "b.txt").as_deref(), Some("agent, then me\n"));
        assert_eq!(read(root, "c.txt").as_deref(), Some("c, mine now\n"));
        assert_eq!(read(root, "scratch.txt").as_deref(), Some("notes\n"));
        assert_eq!(read(root, "kept.txt").as_deref(), Some("mine\n"));
        // Nothing of the restore is left beside the files.
        let names: Vec<String> = std::fs::read_dir(root)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(!names.iter().any(|n| n.contains("baton-undo")), "{names:?}");
    }

    /// A deleted file comes back with its mode; a folder the agent replaced with a link is not
    /// written through.
    #[test]
    fn a_deleted_file_comes_back_and_no_write_goes_through_a_link() {
        let d = repo();
        let root = d.path();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::create_dir(root.join("bin")).unwrap();
        std::fs::write(root.join("bin/run"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(root.join("bin/run"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        std::fs::create_dir(root.join("lib")).unwrap();
        std::fs::write(root.join("lib/x.txt"), "x\n").unwrap();
        let before = commit(root).unwrap();
        std::fs::remove_file(root.join("bin/run")).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::remove_dir_all(root.join("lib")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("lib")).unwrap();
        let after = commit(root).unwrap();
        let done = undo(root, &[Span { before, after }]).unwrap();
        assert!(done.restored.contains(&"bin/run".to_string()), "{done:?}");
        let mode = std::fs::metadata(root.join("bin/run"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
        assert!(
            done.failed
                .iter()
                .any(|(p, why)| p == "lib/x.txt" && why.contains("link")),
            "{done:?}"
        );
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    }

    /// A session in a folder of the repository: git names paths from the top, and the file is
    /// put back where it is, not under the folder again.
    #[test]
    fn a_session_in_a_subfolder_puts_back_the_right_file() {
        let d = repo();
        let top = d.path();
        std::fs::create_dir(top.join("app")).unwrap();
        std::fs::write(top.join("app/x.txt"), "x0\n").unwrap();
        let sub = top.join("app");
        let before = commit(&sub).unwrap();
        std::fs::write(sub.join("x.txt"), "x1\n").unwrap();
        std::fs::write(sub.join("new.txt"), "n\n").unwrap();
        let after = commit(&sub).unwrap();
        let done = undo(&sub, &[Span { before, after }]).unwrap();
        assert_eq!(done.restored, ["app/x.txt"]);
        assert_eq!(done.removed, ["app/new.txt"]);
        assert_eq!(read(top, "app/x.txt").as_deref(), Some("x0\n"));
        assert!(
            !sub.join("app").exists(),
            "nothing is written under the folder again"
        );
        assert!(!top.join("app/new.txt").exists());
    }

    #[test]
    fn a_checkpoint_that_is_no_commit_id_is_refused() {
        let d = repo();
        let span = Span {
            before: "--output=x".into(),
            after: "HEAD".into(),
        };
        let err = undo(d.path(), &[span]).unwrap_err();
        assert!(err.contains("not a commit id"), "{err}");
        assert!(!d.path().join("x").exists());
    }

    #[test]
    fn no_checkpoint_changes_nothing() {
        let d = repo();
        assert!(undo(d.path(), &[]).unwrap().is_empty());
    }
}
