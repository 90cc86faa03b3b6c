//! Small filesystem helpers shared by the tools.

use std::fs;
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// How much of a file's start is inspected to decide whether it is binary.
pub(crate) const SNIFF_BYTES: usize = 8 * 1024;

/// Whether `sample` (the start of a file) looks binary: it holds a NUL byte, or it is not
/// UTF-8 (a multi-byte character cut off by the end of the sample does not count).
pub(crate) fn looks_binary(sample: &[u8], is_whole_file: bool) -> bool {
    if sample.contains(&0) {
        return true;
    }
    match std::str::from_utf8(sample) {
        Ok(_) => false,
        // `error_len() == None` means the input ended in the middle of a character.
        Err(e) => is_whole_file || e.error_len().is_some(),
    }
}

/// A human size: `512 bytes`, `3.4 KiB`, `12.0 MiB`.
pub(crate) fn human_size(bytes: u64) -> String {
    const KIB: f64 = 1024.0;
    let b = bytes as f64;
    if bytes < 1024 {
        format!("{bytes} bytes")
    } else if b < KIB * KIB {
        format!("{:.1} KiB", b / KIB)
    } else if b < KIB * KIB * KIB {
        format!("{:.1} MiB", b / (KIB * KIB))
    } else {
        format!("{:.1} GiB", b / (KIB * KIB * KIB))
    }
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Replaces (or creates) `path` with `bytes` so that readers see either the old or the new
/// content, never a mix: the bytes go to a temporary file in the same directory, which is
/// flushed to disk and then renamed over `path`. An existing file keeps its permissions.
pub(crate) fn atomic_write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "the path has no parent directory",
        )
    })?;
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path has no file name"))?;
    let existing_perms = fs::metadata(path).ok().map(|m| m.permissions());

    let mut attempt = 0;
    let (tmp_path, mut file) = loop {
        let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let tmp_name = format!(
            ".{}.baton-tmp.{}.{n}",
            name.to_string_lossy(),
            std::process::id()
        );
        let tmp_path = dir.join(tmp_name);
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp_path)
        {
            Ok(f) => break (tmp_path, f),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 16 => attempt += 1,
            Err(e) => return Err(e),
        }
    };

    let result = (|| {
        file.write_all(bytes)?;
        if let Some(perms) = existing_perms {
            file.set_permissions(perms)?;
        }
        file.sync_all()?;
        drop(file);
        fs::rename(&tmp_path, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp_path);
        return result;
    }
    // Make the rename itself durable; failing to do so is not worth failing the write for.
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn binary_sniffing() {
        assert!(!looks_binary(b"hello\n", true));
        assert!(looks_binary(b"he\0llo", true));
        assert!(looks_binary(b"\xff\xfe", true));
        // A character cut by the end of the sample is fine unless that is the whole file.
        let s = "aé".as_bytes();
        assert!(!looks_binary(&s[..2], false));
        assert!(looks_binary(&s[..2], true));
    }

    #[test]
    fn sizes() {
        assert_eq!(human_size(10), "10 bytes");
        assert_eq!(human_size(2048), "2.0 KiB");
        assert_eq!(human_size(3 * 1024 * 1024), "3.0 MiB");
    }

    #[test]
    fn atomic_write_replaces_and_keeps_mode() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("f.sh");
        atomic_write(&p, b"one").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"one");
        fs::set_permissions(&p, fs::Permissions::from_mode(0o751)).unwrap();
        atomic_write(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o751
        );
        let leftovers: Vec<_> = fs::read_dir(tmp.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1);
    }
}
