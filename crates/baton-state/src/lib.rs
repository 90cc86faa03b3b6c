//! baton's runtime state on disk, in one place:
//!
//! - [`StateDir`]: every path under a project's `.baton/state/`, and keeping that folder out of
//!   git ([`StateDir::ensure_excluded`]).
//! - [`ids`]: the one validator for the ids that become file, directory and branch names.
//! - [`JsonlLog`]: a typed append-only log, one JSON value per line, each line written and
//!   fsynced before [`JsonlLog::append`] returns, a torn last line (a crash mid-write) cut on
//!   open, and [`write_snapshot`] for derived state (temp file, fsync, rename).
//! - [`damage`]: what is not a crash's torn last line is [`Damage`], an error naming the file,
//!   the line and what is lost, never repaired on the quiet; and the helpers of `baton repair`.
//! - [`FileLock`]: an advisory lock the operating system releases when its holder dies.

pub mod damage;
pub mod ids;
mod lock;
mod log;

use std::path::{Path, PathBuf};

pub use damage::Damage;
pub use ids::{check_id, IdError, IdKind};
pub use lock::{FileLock, LockError};
pub use log::{
    appended, commit_file, now_rfc3339, parse_records, read_snapshot, stage_file, write_snapshot,
    Appended, Durability, JsonlLog, LogError,
};

/// The file in a frozen-roles folder naming the process that uses it.
const OWNER_FILE: &str = ".owner";

fn parse_owner(text: &str) -> Option<baton_process::Identity> {
    let mut parts = text.split_whitespace();
    Some(baton_process::Identity {
        pid: parts.next()?.parse().ok()?,
        start_time: parts.next()?.parse().ok()?,
    })
}

/// The line `info/exclude` gets so that `.baton/state/` never shows up as untracked files.
pub const STATE_EXCLUDE: &str = "/.baton/state/";

/// The project root for a working directory: the top of the git work tree it is in (the nearest
/// ancestor holding `.git`), else the nearest ancestor holding `.baton/`, else the directory
/// itself. A `.baton/` below the work tree's top is the repository's content, not a project of
/// its own ([`nested_baton_dirs`]): a model that wrote `pkg/.baton/config.toml` does not make
/// `pkg/` a project whose settings apply when the user runs baton there. Its `.baton/state` is
/// the project's [`StateDir`].
pub fn project_root(cwd: &Path) -> PathBuf {
    if let Some(top) = cwd.ancestors().find(|d| d.join(".git").exists()) {
        return top.to_path_buf();
    }
    for dir in cwd.ancestors() {
        if dir.join(".baton").is_dir() {
            return dir.to_path_buf();
        }
    }
    cwd.to_path_buf()
}

/// The `.baton/` folders between `cwd` and its project root `root` (below the root): settings
/// baton does not read, which a command run there names in a warning.
pub fn nested_baton_dirs(cwd: &Path, root: &Path) -> Vec<PathBuf> {
    cwd.ancestors()
        .take_while(|d| *d != root && d.starts_with(root))
        .map(|d| d.join(".baton"))
        .filter(|b| b.is_dir())
        .collect()
}

/// A project's state folder, `<project root>/.baton/state`.
///
/// ```text
/// sessions/<id>.jsonl                 agent transcripts
/// tasks/<id>.events.jsonl, <id>.log   background delegations
/// roles/<run>/                        roles frozen for one delegate call
/// flows/<id>.events.jsonl, <id>.json  Flow log and snapshot; flows/<id>/ its roles and patches
/// workflows/                          workflow records
/// tree.lock                           held by the workflow working in the project's tree
/// ```
/// Creates the folder `dir` (and its parents) for one of baton's own files, refusing to go
/// through a symbolic link anywhere from the project's `.baton/` down to it: a link planted there
/// would send transcripts, records and memory wherever it points. Paths outside a `.baton/`
/// folder (a state folder given explicitly) are only created.
pub fn create_own_dir(dir: &Path) -> std::io::Result<()> {
    refuse_links(dir)?;
    std::fs::create_dir_all(dir)?;
    refuse_links(dir)
}

/// Fails when `path` or one of its parents up to the nearest `.baton` folder is a symbolic link.
pub fn refuse_links(path: &Path) -> std::io::Result<()> {
    if !path.components().any(|c| c.as_os_str() == ".baton") {
        return Ok(());
    }
    for p in path.ancestors() {
        if p.symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink())
        {
            return Err(std::io::Error::other(format!(
                "{} is a symbolic link; baton does not follow links inside its own folder \
                 (.baton/): remove the link (and check where it points)",
                p.display()
            )));
        }
        if p.file_name().is_some_and(|n| n == ".baton") {
            break;
        }
    }
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateDir {
    root: PathBuf,
}

impl StateDir {
    /// The state folder of the project whose root is `project_root`.
    pub fn for_project(project_root: &Path) -> Self {
        StateDir {
            root: project_root.join(".baton").join("state"),
        }
    }

    /// A state folder at an explicit path (tests, or a state folder handed over by a parent).
    pub fn at(root: impl Into<PathBuf>) -> Self {
        StateDir { root: root.into() }
    }

    /// `.baton/state` itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The project root this folder belongs to, when it sits at `<root>/.baton/state`.
    pub fn project_root(&self) -> Option<&Path> {
        let baton = self.root.parent()?;
        (self.root.file_name()? == "state" && baton.file_name()? == ".baton")
            .then(|| baton.parent())
            .flatten()
    }

    pub fn sessions(&self) -> PathBuf {
        self.root.join("sessions")
    }

    /// `sessions/<id>.jsonl`.
    pub fn session(&self, id: &str) -> Result<PathBuf, IdError> {
        check_id(IdKind::Record, id)?;
        Ok(self.sessions().join(format!("{id}.jsonl")))
    }

    pub fn tasks(&self) -> PathBuf {
        self.root.join("tasks")
    }

    /// `workers/`: one log per managed worker (`<name>.events.jsonl`) and its supervisor's
    /// output (`<name>.log`).
    pub fn workers(&self) -> PathBuf {
        self.root.join("workers")
    }

    /// `tasks/<id>.events.jsonl`.
    pub fn task_events(&self, id: &str) -> Result<PathBuf, IdError> {
        check_id(IdKind::Record, id)?;
        Ok(self.tasks().join(format!("{id}.events.jsonl")))
    }

    /// `tasks/<id>.log`, the supervisor's own output.
    pub fn task_log(&self, id: &str) -> Result<PathBuf, IdError> {
        check_id(IdKind::Record, id)?;
        Ok(self.tasks().join(format!("{id}.log")))
    }

    /// `roles/<run>/`, the roles frozen for one delegate call.
    pub fn frozen_roles(&self, run: &str) -> Result<PathBuf, IdError> {
        check_id(IdKind::Record, run)?;
        Ok(self.root.join("roles").join(run))
    }

    /// Creates `roles/<run>/` for the calling process: its `.owner` file names this process
    /// (pid and start time), so that [`StateDir::sweep_frozen_roles`] can tell a folder whose
    /// run was killed from one in use.
    pub fn claim_frozen_roles(&self, run: &str) -> std::io::Result<PathBuf> {
        let dir = self
            .frozen_roles(run)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        create_own_dir(&dir)?;
        let me = baton_process::Identity::of(std::process::id())
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        std::fs::write(
            dir.join(OWNER_FILE),
            format!("{} {}\n", me.pid, me.start_time),
        )?;
        Ok(dir)
    }

    /// Removes every `roles/<run>/` left by a run that was killed before it could remove it: its
    /// owner process is gone, or it has no owner file and is older than ten minutes (written by
    /// an older baton). Returns how many folders it removed.
    pub fn sweep_frozen_roles(&self) -> usize {
        let Ok(entries) = std::fs::read_dir(self.root.join("roles")) else {
            return 0;
        };
        let mut removed = 0;
        for entry in entries.flatten() {
            let dir = entry.path();
            let owner = std::fs::read_to_string(dir.join(OWNER_FILE)).ok();
            let stale = match owner.as_deref().map(parse_owner) {
                Some(Some(owner)) => !owner.is_alive(),
                Some(None) => true,
                None => entry
                    .metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|age| age > std::time::Duration::from_secs(600)),
            };
            if stale && dir.is_dir() && std::fs::remove_dir_all(&dir).is_ok() {
                removed += 1;
            }
        }
        removed
    }

    pub fn flows(&self) -> PathBuf {
        self.root.join("flows")
    }

    /// `flows/<id>.events.jsonl`.
    pub fn flow_events(&self, id: &str) -> Result<PathBuf, IdError> {
        check_id(IdKind::Record, id)?;
        Ok(self.flows().join(format!("{id}.events.jsonl")))
    }

    /// `flows/<id>.json`.
    pub fn flow_snapshot(&self, id: &str) -> Result<PathBuf, IdError> {
        check_id(IdKind::Record, id)?;
        Ok(self.flows().join(format!("{id}.json")))
    }

    /// `flows/<id>/`, for the Flow's frozen roles and review patches.
    pub fn flow_dir(&self, id: &str) -> Result<PathBuf, IdError> {
        check_id(IdKind::Record, id)?;
        Ok(self.flows().join(id))
    }

    pub fn workflows(&self) -> PathBuf {
        self.root.join("workflows")
    }

    /// `tree.lock`: held by the process whose workflow works in this project's own working
    /// tree (not in a worktree of its own), so that a second one is refused.
    pub fn tree_lock(&self) -> PathBuf {
        self.root.join("tree.lock")
    }

    /// The ids of the logs `<id><suffix>` in `dir` (e.g. `.events.jsonl` in [`StateDir::flows`]),
    /// valid ids only, sorted. Ids that start with a UTC timestamp sort oldest first.
    pub fn list_ids(dir: &Path, suffix: &str) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        let mut ids: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name();
                let id = name.to_str()?.strip_suffix(suffix)?.to_string();
                check_id(IdKind::Record, &id).is_ok().then_some(id)
            })
            .collect();
        ids.sort();
        ids
    }

    /// Adds [`STATE_EXCLUDE`] to the `info/exclude` of the repository the project belongs to
    /// (shared by all its worktrees), once, so runtime data never shows up as untracked files in
    /// the main tree or in a child's worktree. Does nothing outside a git repository or for a
    /// state folder not at `<root>/.baton/state`. Reads files only; no git process is started.
    pub fn ensure_excluded(&self) -> Result<(), baton_git::GitError> {
        let Some(common) = self.project_root().and_then(baton_git::common_dir_of) else {
            return Ok(());
        };
        baton_git::add_exclude_in(&common, STATE_EXCLUDE)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn frozen_roles_of_dead_runs_are_swept_and_live_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::at(dir.path());
        let mine = state.claim_frozen_roles("r-mine").unwrap();
        let mut dead = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let identity = baton_process::Identity::of(dead.id()).unwrap();
        dead.kill().unwrap();
        dead.wait().unwrap();
        let killed = state.frozen_roles("r-killed").unwrap();
        std::fs::create_dir_all(&killed).unwrap();
        std::fs::write(
            killed.join(OWNER_FILE),
            format!("{} {}\n", identity.pid, identity.start_time),
        )
        .unwrap();
        let garbled = state.frozen_roles("r-garbled").unwrap();
        std::fs::create_dir_all(&garbled).unwrap();
        std::fs::write(garbled.join(OWNER_FILE), "nonsense").unwrap();
        // No owner and new: maybe a run between creating its folder and claiming it.
        let fresh = state.frozen_roles("r-fresh").unwrap();
        std::fs::create_dir_all(&fresh).unwrap();
        assert_eq!(state.sweep_frozen_roles(), 2);
        assert!(mine.is_dir());
        assert!(fresh.is_dir());
        assert!(!killed.exists());
        assert!(!garbled.exists());
    }
    use pretty_assertions::assert_eq;

    #[test]
    fn paths_are_under_the_state_folder_and_ids_are_checked() {
        let dir = StateDir::for_project(Path::new("/p"));
        assert_eq!(dir.root(), Path::new("/p/.baton/state"));
        assert_eq!(dir.project_root(), Some(Path::new("/p")));
        assert_eq!(
            dir.session("s-1").unwrap(),
            Path::new("/p/.baton/state/sessions/s-1.jsonl")
        );
        assert_eq!(
            dir.task_events("t1").unwrap(),
            Path::new("/p/.baton/state/tasks/t1.events.jsonl")
        );
        assert_eq!(
            dir.flow_snapshot("f").unwrap(),
            Path::new("/p/.baton/state/flows/f.json")
        );
        for bad in ["", "../x", "a/b", "a b", "x.json"] {
            assert!(dir.session(bad).is_err(), "{bad:?}");
            assert!(dir.flow_dir(bad).is_err(), "{bad:?}");
        }
        assert_eq!(StateDir::at("/elsewhere").project_root(), None);
    }

    #[test]
    fn list_ids_skips_other_files_and_sorts() {
        let tmp = tempfile::tempdir().unwrap();
        for name in [
            "b.events.jsonl",
            "a.events.jsonl",
            "a.json",
            "bad id.events.jsonl",
        ] {
            std::fs::write(tmp.path().join(name), "").unwrap();
        }
        assert_eq!(
            StateDir::list_ids(tmp.path(), ".events.jsonl"),
            vec!["a".to_string(), "b".to_string()]
        );
        assert!(StateDir::list_ids(&tmp.path().join("none"), ".x").is_empty());
    }

    #[test]
    fn exclusion_is_written_once_in_the_common_dir_of_a_linked_worktree() {
        let tmp = tempfile::tempdir().unwrap();
        let main = tmp.path().join("main");
        let common = main.join(".git");
        std::fs::create_dir_all(common.join("worktrees").join("wt")).unwrap();
        std::fs::write(common.join("worktrees/wt/commondir"), "../..\n").unwrap();
        let wt = tmp.path().join("wt");
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(
            wt.join(".git"),
            format!("gitdir: {}\n", common.join("worktrees/wt").display()),
        )
        .unwrap();
        for root in [&wt, &main, &wt] {
            StateDir::for_project(root).ensure_excluded().unwrap();
        }
        let exclude = std::fs::read_to_string(common.join("info/exclude")).unwrap();
        assert_eq!(exclude, "/.baton/state/\n");
        // Not a repository: nothing to do, no error, nothing written.
        let plain = tmp.path().join("plain");
        std::fs::create_dir_all(&plain).unwrap();
        StateDir::for_project(&plain).ensure_excluded().unwrap();
        assert!(!plain.join(".git").exists());
    }
}
