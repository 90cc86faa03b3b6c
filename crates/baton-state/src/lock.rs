//! Advisory file locks.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fs4::fs_std::FileExt;

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// An exclusive advisory lock on a file, held until dropped. The operating system releases it
/// when the holder dies, however it dies, so a stale lock never outlives its process.
///
/// The holder writes a short note into the file (`pid N`, or what [`FileLock::note`] says), so
/// whoever finds the lock taken can say who holds it.
#[derive(Debug)]
pub struct FileLock {
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
        .map_err(|source| LockError::Io {
            path: path.to_path_buf(),
            source,
        })
}

impl FileLock {
    /// Takes the lock if nobody holds it; `Ok(None)` when someone does.
    pub fn try_acquire(path: &Path) -> Result<Option<FileLock>, LockError> {
        let file = open(path)?;
        match FileExt::try_lock_exclusive(&file) {
            Ok(true) => {
                let mut lock = FileLock {
                    file,
                    path: path.to_path_buf(),
                };
                lock.note(&format!("pid {}", std::process::id()));
                Ok(Some(lock))
            }
            Ok(false) => Ok(None),
            Err(source) => Err(LockError::Io {
                path: path.to_path_buf(),
                source,
            }),
        }
    }

    /// Like [`FileLock::try_acquire`], but keeps trying for up to `patience` when the lock is taken
    /// (for locks that others hold only for an instant). Blocks the calling thread: from async
    /// code, call it inside `spawn_blocking`.
    pub fn acquire_within(path: &Path, patience: Duration) -> Result<Option<FileLock>, LockError> {
        let started = Instant::now();
        loop {
            if let Some(lock) = FileLock::try_acquire(path)? {
                return Ok(Some(lock));
            }
            if started.elapsed() >= patience {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Takes the lock for a long task of this process, waiting up to `patience` for a brief
    /// holder (a probe), and notes `what` the task is with [`FileLock::note_owner`]; or answers
    /// `Err(holder)`, the note of whoever holds it (`"held by another process"` when it has
    /// none). The lock is the operating system's, so a holder killed with SIGKILL releases it
    /// and the next caller takes it over. Blocks the calling thread while it waits.
    pub fn claim(
        path: &Path,
        what: &str,
        patience: Duration,
    ) -> Result<Result<FileLock, String>, LockError> {
        if let Some(dir) = path.parent() {
            crate::create_own_dir(dir).map_err(|source| LockError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        Ok(match FileLock::acquire_within(path, patience)? {
            Some(mut lock) => {
                lock.note_owner(what);
                Ok(lock)
            }
            None => Err(match FileLock::holder(path) {
                h if h.is_empty() => "held by another process".to_string(),
                h => h,
            }),
        })
    }

    /// Notes who holds the lock: `WHAT, pid N` on the first line (what [`FileLock::holder`]
    /// shows), and this process's identity (pid and start time, [`baton_process::Identity`]) on
    /// the second, which [`FileLock::owner`] reads.
    pub fn note_owner(&mut self, what: &str) {
        let pid = std::process::id();
        let start = baton_process::Identity::of(pid).map_or(0, |i| i.start_time);
        self.note(&format!("{what}, pid {pid}\nowner {pid} {start}\n"));
    }

    /// The identity the holder of the lock at `path` noted with [`FileLock::note_owner`], if
    /// any (the note may be stale when nobody holds the lock: ask [`FileLock::is_held`]).
    pub fn owner(path: &Path) -> Option<baton_process::Identity> {
        let mut text = String::new();
        File::open(path)
            .ok()?
            .take(4096)
            .read_to_string(&mut text)
            .ok()?;
        let line = text.lines().find_map(|l| l.strip_prefix("owner "))?;
        let mut parts = line.split_whitespace();
        Some(baton_process::Identity {
            pid: parts.next()?.parse().ok()?,
            start_time: parts.next()?.parse().ok()?,
        })
    }

    /// Replaces the note in the lock file (informational; errors are ignored).
    pub fn note(&mut self, text: &str) {
        let _ = self.file.set_len(0);
        let _ = self.file.seek(SeekFrom::Start(0));
        let _ = self.file.write_all(text.as_bytes());
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The note of whoever holds the lock at `path` (its first line), fit for one line of a
    /// terminal (at most 200 characters); empty when there is none.
    pub fn holder(path: &Path) -> String {
        let mut text = String::new();
        if let Ok(f) = File::open(path) {
            let _ = f.take(4096).read_to_string(&mut text);
        }
        let first = text.trim().lines().next().unwrap_or("");
        baton_text::sanitize_line(first.trim())
            .chars()
            .take(200)
            .collect()
    }

    /// Whether some process holds the lock at `path` right now (probed with a shared lock taken
    /// for an instant).
    pub fn is_held(path: &Path) -> bool {
        let Ok(file) = OpenOptions::new().read(true).open(path) else {
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

impl Drop for FileLock {
    fn drop(&mut self) {
        let _ = FileExt::unlock(&self.file);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn one_holder_at_a_time_and_the_note_says_who() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("x.lock");
        assert!(!FileLock::is_held(&path));
        let mut first = FileLock::try_acquire(&path).unwrap().unwrap();
        assert!(FileLock::is_held(&path));
        assert_eq!(
            FileLock::holder(&path),
            format!("pid {}", std::process::id())
        );
        first.note("Flow f1\x1b[2J");
        assert_eq!(FileLock::holder(&path), "Flow f1\u{FFFD}[2J");
        assert!(FileLock::try_acquire(&path).unwrap().is_none());
        assert!(FileLock::acquire_within(&path, Duration::from_millis(30))
            .unwrap()
            .is_none());
        drop(first);
        assert!(!FileLock::is_held(&path));
        assert!(FileLock::try_acquire(&path).unwrap().is_some());
    }

    #[test]
    fn a_claim_names_its_task_and_owner_and_a_second_claim_names_the_first() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("sub").join("tree.lock");
        let first = FileLock::claim(&path, "workflow wf-1", Duration::ZERO)
            .unwrap()
            .unwrap();
        let me = std::process::id();
        assert_eq!(FileLock::holder(&path), format!("workflow wf-1, pid {me}"));
        assert_eq!(
            FileLock::owner(&path),
            Some(baton_process::Identity::of(me).unwrap())
        );
        let busy = FileLock::claim(&path, "workflow wf-2", Duration::from_millis(20))
            .unwrap()
            .unwrap_err();
        assert_eq!(busy, format!("workflow wf-1, pid {me}"));
        drop(first);
        let mut again = FileLock::claim(&path, "workflow wf-2", Duration::ZERO)
            .unwrap()
            .unwrap();
        assert_eq!(FileLock::holder(&path), format!("workflow wf-2, pid {me}"));
        again.note("");
        assert_eq!(FileLock::owner(&path), None);
    }
}
