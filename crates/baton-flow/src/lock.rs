//! One advisory lock per repository: `<git common dir>/baton-flow.lock`, held exclusively by the
//! process driving a Flow (start, continue, resume) for as long as it drives it. The lock lives in
//! the git directory shared by all worktrees, so it covers every checkout of the repository, and
//! the operating system releases it when the process dies, however it dies. It is
//! [`FileLock::claim`], the same lock as the working-tree lock of `baton run`.

use std::path::Path;
use std::time::Duration;

use baton_state::FileLock;

/// File name of the lock inside the git common directory.
pub const LOCK_FILE: &str = "baton-flow.lock";

/// How long [`RepoLock::acquire`] keeps trying when the lock is only briefly held (a concurrent
/// `baton flow status` probing it).
const ACQUIRE_PATIENCE: Duration = Duration::from_millis(250);

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "another Flow is running in this repository ({holder}); wait for it, or check it with `baton flow status`"
    )]
    Held { holder: String },
    #[error(transparent)]
    Io(#[from] baton_state::LockError),
}

/// The held lock, a [`FileLock`] on `<git common dir>/baton-flow.lock`; dropping it releases it.
#[derive(Debug)]
pub struct RepoLock {
    lock: FileLock,
}

impl RepoLock {
    /// Takes the lock of the repository whose git common directory is `common_dir`, or says who
    /// holds it. Waits up to a quarter of a second for a brief holder, blocking the thread: from
    /// async code, call it inside `spawn_blocking`.
    pub fn acquire(common_dir: &Path) -> Result<RepoLock, LockError> {
        let path = common_dir.join(LOCK_FILE);
        match FileLock::claim(&path, "a Flow starting", ACQUIRE_PATIENCE)? {
            Ok(lock) => Ok(RepoLock { lock }),
            Err(holder) => Err(LockError::Held { holder }),
        }
    }

    /// Writes which Flow the holder drives into the lock file (informational).
    pub fn note(&mut self, flow_id: &str) {
        self.lock.note_owner(&format!("Flow {flow_id}"));
    }

    pub fn path(&self) -> &Path {
        self.lock.path()
    }

    /// Whether some process holds the lock right now, without taking it for more than an instant.
    pub fn is_held(common_dir: &Path) -> bool {
        FileLock::is_held(&common_dir.join(LOCK_FILE))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn second_holder_is_refused_until_the_first_drops() {
        let dir = tempfile::tempdir().unwrap();
        let mut first = RepoLock::acquire(dir.path()).unwrap();
        first.note("f1");
        assert!(RepoLock::is_held(dir.path()));
        match RepoLock::acquire(dir.path()) {
            Err(LockError::Held { holder }) => assert!(holder.contains("Flow f1"), "{holder}"),
            other => panic!("expected Held, got {other:?}"),
        }
        drop(first);
        assert!(!RepoLock::is_held(dir.path()));
        RepoLock::acquire(dir.path()).unwrap();
    }
}
