//! The working tree as the runner sees it: snapshots a phase's change is read between, and the
//! digest that tells whether an agent changed anything. Git and file reads block: the async
//! forms run them off the async threads.

use std::path::Path;

use super::agent;

/// [`tree_base_now`] off the async threads (git blocks).
pub(super) async fn tree_base(root: &Path) -> String {
    let root = root.to_path_buf();
    tokio::task::spawn_blocking(move || tree_base_now(&root))
        .await
        .unwrap_or_else(|_| agent::UNAVAILABLE_BASE.to_string())
}

/// [`tree_digest_now`] off the async threads (git and reading every untracked file block).
pub(super) async fn tree_digest(root: &Path, untracked: bool) -> Option<String> {
    let root = root.to_path_buf();
    tokio::task::spawn_blocking(move || tree_digest_now(&root, untracked))
        .await
        .ok()
        .flatten()
}

/// A snapshot of the working tree as it is now, as a commit no branch points at: tracked files
/// with their uncommitted changes and the untracked ones too (never ignored files, never baton's
/// own `.baton` folder), built in a temporary index so the user's index and tree are left alone.
/// A phase's base is one, taken before its builder first runs; what a reviewer reads is the
/// diff from it to another taken at its dispatch. Untracked files are in both, so a file the
/// user had before (a scratch file) is never the change, and a file an earlier phase added is
/// in the next phase's base. [`agent::UNAVAILABLE_BASE`] outside git.
fn tree_base_now(root: &Path) -> String {
    baton_git::snapshot::commit(root).unwrap_or_else(|| agent::UNAVAILABLE_BASE.to_string())
}

/// What a workflow that worked in `root` leaves there, uncommitted, as it ends: a snapshot now
/// and the files it differs in from `base` (the workflow's base); `None` outside git or when
/// nothing differs.
pub(super) async fn left_in_place(root: &Path, base: &str) -> Option<crate::results::LeftInPlace> {
    let (root, base) = (root.to_path_buf(), base.to_string());
    tokio::task::spawn_blocking(move || {
        let snapshot = baton_git::snapshot::commit(&root)?;
        let files: Vec<String> = changed_between(&root, &base, &snapshot)?
            .lines()
            .filter_map(|l| l.split_once('\t').map(|(_, path)| path.to_string()))
            .collect();
        (!files.is_empty()).then_some(crate::results::LeftInPlace { snapshot, files })
    })
    .await
    .ok()
    .flatten()
}

/// The files `base` and `now` (two [`tree_base_now`] snapshots) differ in, one `STATUS\tPATH`
/// line each; `None` when git cannot say.
fn changed_between(root: &Path, base: &str, now: &str) -> Option<String> {
    baton_git::Git::new(root)
        // Names as they are (a non-ASCII name is not quoted and escaped).
        .run_output([
            "-c",
            "core.quotePath=false",
            "diff",
            "--name-status",
            "--no-renames",
            base,
            now,
        ])
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim_end().to_string())
}

/// [`changed_between`] off the async threads.
pub(super) async fn changed_files(root: &Path, base: &str, now: &str) -> Option<String> {
    let (root, base, now) = (root.to_path_buf(), base.to_string(), now.to_string());
    tokio::task::spawn_blocking(move || changed_between(&root, &base, &now))
        .await
        .ok()
        .flatten()
}

/// A digest of the working tree's state (`git status` and `git diff`), to tell whether a write
/// agent changed anything; `None` outside a git repository.
///
/// With `untracked` false only tracked files count: what a read-only role (a verifier building
/// and running tests) may add — build output, caches — is not a change of the project.
fn tree_digest_now(root: &Path, untracked: bool) -> Option<String> {
    use std::hash::{Hash, Hasher};
    let git = |args: &[&str]| {
        baton_git::Git::new(root)
            .run_output(args)
            .ok()
            .filter(|o| o.status.success())
            .map(|o| o.stdout)
    };
    // baton's own folder (state, memory, reports) is not the agent's work.
    let status = git(&[
        "status",
        "--porcelain=v1",
        if untracked { "-uall" } else { "-uno" },
        "--",
        ".",
        ":(exclude).baton",
    ])?;
    let diff = git(&[
        "diff",
        "HEAD",
        "--no-ext-diff",
        "--no-textconv",
        "--binary",
        "--",
        ".",
        ":(exclude).baton",
    ])
    .unwrap_or_default();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    status.hash(&mut h);
    diff.hash(&mut h);
    // Untracked files' contents count too.
    for line in String::from_utf8_lossy(&status).lines() {
        if let Some(path) = line.strip_prefix("?? ") {
            if let Ok(bytes) = std::fs::read(root.join(path)) {
                bytes.hash(&mut h);
            }
        }
    }
    Some(format!("{:016x}", h.finish()))
}
