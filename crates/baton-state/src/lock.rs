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

    /// Replaces the note in the lock file (informational; errors are ignored).
    pub fn note(&mut self, text: &str) {
        let _ = self.file.set_len(0);
        let _ = self.file.seek(SeekFrom::Start(0));
        let _ = self.file.write_all(text.as_bytes());
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The note of whoever holds the lock at `path`, fit for one line of a terminal (at most 200
    /// characters); empty when there is none.
    pub fn holder(path: &Path) -> String {
        let mut text = String::new();
        if let Ok(mut f) = File::open(path) {
            let _ = f.read_to_string(&mut text);
        }
        baton_text::sanitize_line(text.trim())
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
}
