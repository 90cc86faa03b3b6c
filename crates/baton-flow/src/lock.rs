//! One advisory lock per repository: `<git common dir>/baton-flow.lock`, held exclusively by the
//! process driving a Flow (start, continue, resume) for as long as it drives it. The lock lives in
//! the git directory shared by all worktrees, so it covers every checkout of the repository, and
//! the operating system releases it when the process dies, however it dies.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fs4::fs_std::FileExt;

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
    #[error("{path}: {message}")]
    Io { path: String, message: String },
}

/// The held lock; dropping it releases it.
#[derive(Debug)]
pub struct RepoLock {
    file: File,
    path: PathBuf,
}

fn open(path: &Path) -> Result<File, LockError> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| LockError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        })
}

impl RepoLock {
    /// Takes the lock of the repository whose git common directory is `common_dir`, or says who
    /// holds it.
    pub fn acquire(common_dir: &Path) -> Result<RepoLock, LockError> {
        let path = common_dir.join(LOCK_FILE);
        let mut file = open(&path)?;
        let started = Instant::now();
        loop {
            match FileExt::try_lock_exclusive(&file) {
                Ok(true) => break,
                Ok(false) if started.elapsed() < ACQUIRE_PATIENCE => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                Ok(false) => {
                    let mut holder = String::new();
                    let _ = file.read_to_string(&mut holder);
                    let holder = holder.trim();
                    return Err(LockError::Held {
                        holder: if holder.is_empty() {
                            "held by another process".to_string()
                        } else {
                            holder
                                .chars()
                                .filter(|c| !c.is_control())
                                .take(200)
                                .collect()
                        },
                    });
                }
                Err(e) => {
                    return Err(LockError::Io {
                        path: path.display().to_string(),
                        message: e.to_string(),
                    })
                }
            }
        }
        // Say who holds it, for the error message of the next one to try.
        let _ = file.set_len(0);
        let _ = file.seek(SeekFrom::Start(0));
        let _ = write!(file, "pid {}", std::process::id());
        Ok(RepoLock { file, path })
    }

    /// Writes which Flow the holder drives into the lock file (informational).
    pub fn note(&mut self, flow_id: &str) {
        let _ = self.file.set_len(0);
        let _ = self.file.seek(SeekFrom::Start(0));
        let _ = write!(self.file, "Flow {flow_id}, pid {}", std::process::id());
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether some process holds the lock right now, without taking it for more than an instant.
    pub fn is_held(common_dir: &Path) -> bool {
        let path = common_dir.join(LOCK_FILE);
        let Ok(file) = OpenOptions::new().read(true).open(&path) else {
            return false;
        };
        match FileExt::try_lock_shared(&file) {
            Ok(true) => {
                let _ = FileExt::unlock(&file);
                false
            }
            Ok(false) => true,
            Err(_) => false,
        }
    }
}

impl Drop for RepoLock {
    fn drop(&mut self) {
        let _ = FileExt::unlock(&self.file);
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
