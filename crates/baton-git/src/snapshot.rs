//! A snapshot of a working tree as a commit no branch points at: what the runner reads a phase's
//! change between, and what `/diff` in the terminal UI compares a session's start with.

use std::path::{Path, PathBuf};

/// A snapshot of the working tree as it is now, as a commit no branch points at: tracked files
/// with their uncommitted changes and the untracked ones too (never ignored files, never baton's
/// own `.baton` folder), built in a temporary index so the user's index and tree are left alone.
/// Untracked files are in every snapshot, so one taken before and one after a change differ in
/// exactly that change (a scratch file the user had before is in both). `None` outside git.
pub fn commit(root: &Path) -> Option<String> {
    let index = tempfile::Builder::new()
        .prefix("baton-snapshot-")
        .tempfile()
        .ok()?;
    let git = crate::Git::new(root)
        .with_env("GIT_INDEX_FILE", index.path())
        .with_env("GIT_AUTHOR_NAME", "baton")
        .with_env("GIT_AUTHOR_EMAIL", "baton@localhost")
        .with_env("GIT_COMMITTER_NAME", "baton")
        .with_env("GIT_COMMITTER_EMAIL", "baton@localhost");
    let run = |g: &crate::Git, args: &[&str]| {
        g.run_output(args)
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let head = run(
        &crate::Git::new(root),
        &["rev-parse", "--verify", "-q", "HEAD"],
    )
    .filter(|h| !h.is_empty());
    // The user's index, copied: its file stats spare hashing every unchanged file again.
    let own = run(
        &crate::Git::new(root),
        &["rev-parse", "--git-path", "index"],
    )?;
    let own = match Path::new(&own).is_absolute() {
        true => PathBuf::from(own),
        false => root.join(own),
    };
    if copy_index(&own, index.path()).is_err() {
        match &head {
            Some(h) => run(&git, &["read-tree", h.as_str()])?,
            None => run(&git, &["read-tree", "--empty"])?,
        };
    }
    // Untracked files past [`SNAPSHOT_FILE_LIMIT`] stay out of every snapshot (a dataset, a
    // build output that is not ignored): hashing them into the object store at each phase and
    // each review would grow the repository; left out of both sides, they are never the change.
    let mut add: Vec<String> = ["add", "-A", "--", ".", ":(exclude).baton"]
        .map(String::from)
        .to_vec();
    add.extend(
        large_untracked(root)
            .into_iter()
            .map(|p| format!(":(exclude,literal){p}")),
    );
    let add: Vec<&str> = add.iter().map(String::as_str).collect();
    run(&git, &add)?;
    let tree = run(&git, &["write-tree"])?;
    let mut args = vec![
        "commit-tree",
        tree.as_str(),
        "-m",
        "baton: a snapshot of the working tree",
    ];
    if let Some(h) = &head {
        args.extend(["-p", h.as_str()]);
    }
    run(&git, &args).filter(|c| !c.is_empty())
}

/// Copies the user's index, keeping its modification time: git trusts a file's cached stat only
/// when the file is older than the index (an entry as new as the index is "racily clean" and
/// hashed again), so a copy stamped now would make a same-size edit made in the index's second
/// look unchanged, and the snapshot would miss it.
fn copy_index(from: &Path, to: &Path) -> std::io::Result<()> {
    let modified = std::fs::metadata(from)?.modified()?;
    std::fs::copy(from, to)?;
    std::fs::OpenOptions::new()
        .write(true)
        .open(to)?
        .set_modified(modified)
}

/// Untracked files larger than this are left out of the snapshots.
const SNAPSHOT_FILE_LIMIT: u64 = 16 << 20;

/// The untracked, not ignored files under `root` larger than [`SNAPSHOT_FILE_LIMIT`], as paths
/// from `root`.
fn large_untracked(root: &Path) -> Vec<String> {
    let Ok(out) = crate::Git::new(root).run_output([
        "ls-files",
        "--others",
        "--exclude-standard",
        "-z",
        "--",
        ".",
        ":(exclude).baton",
    ]) else {
        return Vec::new();
    };
    out.stdout
        .split(|b| *b == 0)
        .filter_map(|p| std::str::from_utf8(p).ok())
        .filter(|p| !p.is_empty())
        .filter(|p| {
            std::fs::symlink_metadata(root.join(p))
                .is_ok_and(|m| m.is_file() && m.len() > SNAPSHOT_FILE_LIMIT)
        })
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn git(dir: &Path, args: &[&str]) -> String {
        let out = crate::Git::new(dir)
            .with_env("GIT_AUTHOR_NAME", "t")
            .with_env("GIT_AUTHOR_EMAIL", "t@localhost")
            .with_env("GIT_COMMITTER_NAME", "t")
            .with_env("GIT_COMMITTER_EMAIL", "t@localhost")
            .run_output(args)
            .unwrap();
        assert!(out.status.success(), "git {args:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A same-size edit made in the second the index was written (git's "racily clean" entry)
    /// is in the snapshot: the user's index is copied with its own time, so git hashes the file
    /// again instead of trusting its stat (a copy stamped now made the edit look unchanged).
    #[test]
    fn a_same_size_edit_in_the_index_s_second_is_in_the_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q", "-b", "main"]);
        // ctime cannot be set back: the edit is told apart by content alone, as when it falls in
        // the same second.
        git(root, &["config", "core.trustctime", "false"]);
        let then = std::time::SystemTime::now() - std::time::Duration::from_secs(100);
        let set_time = |p: &Path| {
            std::fs::OpenOptions::new()
                .write(true)
                .open(p)
                .unwrap()
                .set_modified(then)
                .unwrap();
        };
        let file = root.join("a.txt");
        std::fs::write(&file, "one\n").unwrap();
        set_time(&file);
        git(root, &["add", "a.txt"]);
        git(root, &["commit", "-q", "-m", "a"]);
        // The edit keeps the size and, as far as git's stat sees, the time; the index was
        // written in that same second.
        std::fs::write(&file, "two\n").unwrap();
        set_time(&file);
        set_time(&root.join(".git/index"));
        let sha = commit(root).unwrap();
        assert_eq!(git(root, &["show", &format!("{sha}:a.txt")]), "two\n");
    }

    /// A snapshot holds tracked changes and new files, never `.baton` or an untracked file past
    /// the size limit, and leaves the user's index alone.
    #[test]
    fn a_snapshot_holds_new_files_but_not_baton_s_folder_or_a_huge_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q", "-b", "main"]);
        std::fs::write(root.join("a.txt"), "one\n").unwrap();
        git(root, &["add", "a.txt"]);
        git(root, &["commit", "-q", "-m", "a"]);
        std::fs::write(root.join("a.txt"), "two\n").unwrap();
        std::fs::write(root.join("new.txt"), "new\n").unwrap();
        std::fs::create_dir(root.join(".baton")).unwrap();
        std::fs::write(root.join(".baton/state.json"), "{}").unwrap();
        // Sparse: a large file that takes no disk.
        std::fs::File::create(root.join("data.bin"))
            .unwrap()
            .set_len(SNAPSHOT_FILE_LIMIT + 1)
            .unwrap();
        let sha = commit(root).unwrap();
        let files = git(root, &["ls-tree", "-r", "--name-only", &sha]);
        assert_eq!(files.lines().collect::<Vec<_>>(), ["a.txt", "new.txt"]);
        assert_eq!(git(root, &["show", &format!("{sha}:a.txt")]), "two\n");
        // The user's index still has a.txt as committed and nothing else.
        assert_eq!(git(root, &["diff", "--cached", "--name-only"]), "");
        assert!(git(root, &["status", "--porcelain"]).contains("?? new.txt"));
    }
}
