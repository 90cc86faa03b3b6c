//! Input files a person or a config names — units files, task entry files, role files, cassettes,
//! config files, context files — read through one bounded helper, so that a path to
//! `/dev/zero`, a FIFO or a file of gigabytes is refused with an error instead of filling memory.
//!
//! [`read_input`] refuses anything that is not a regular file (a device, FIFO, socket or folder:
//! opened without blocking, and checked on the open file) and anything over [`INPUT_CAP`]: it
//! reads at most one byte more than the cap, so a file that grows while it is read is refused
//! too. The errors say what is wrong and the fix, not the path: callers name the file.

use std::io::{self, Read};
use std::path::Path;

/// The most bytes an input file may hold: 16 MiB.
pub const INPUT_CAP: u64 = 16 * 1024 * 1024;

/// The cap in words, for messages.
fn cap_text(cap: u64) -> String {
    if cap >= 1024 * 1024 && cap % (1024 * 1024) == 0 {
        format!("{} MiB", cap / (1024 * 1024))
    } else {
        format!("{cap} bytes")
    }
}

fn too_large(cap: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "larger than {}, the most baton reads from an input file: give a smaller file",
            cap_text(cap)
        ),
    )
}

fn not_regular(kind: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("not a regular file ({kind}): give the path of a file"),
    )
}

fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        return "a folder";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    "not a plain file"
}

/// Reads the regular file at `path` as UTF-8 text, refusing anything that is not a regular file
/// or holds more than [`INPUT_CAP`] bytes.
pub fn read_input(path: &Path) -> io::Result<String> {
    read_capped(path, INPUT_CAP)
}

/// [`read_input`] with another cap.
pub fn read_capped(path: &Path, cap: u64) -> io::Result<String> {
    // Checked before opening, so that opening a FIFO cannot wait for a writer.
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(not_regular(kind_of(&meta)));
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        // Never wait on open, should the path have become a FIFO meanwhile.
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path)?;
    // The open file decides: the path may have been swapped since it was checked.
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_regular(kind_of(&meta)));
    }
    if meta.len() > cap {
        return Err(too_large(cap));
    }
    read_stream_capped(file, cap)
}

/// Reads `reader` to its end as UTF-8 text, refusing more than `cap` bytes (it reads at most one
/// byte more): for stdin, which may be anything.
pub fn read_stream_capped(reader: impl Read, cap: u64) -> io::Result<String> {
    let mut bytes = Vec::new();
    reader.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(too_large(cap));
    }
    String::from_utf8(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "not UTF-8 text: give a text file",
        )
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn a_regular_file_within_the_cap_is_read_and_one_byte_more_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("f.txt");
        std::fs::write(&p, "x".repeat(10)).unwrap();
        assert_eq!(read_capped(&p, 10).unwrap(), "x".repeat(10));
        let e = read_capped(&p, 9).unwrap_err();
        assert!(e.to_string().contains("larger than 9 bytes"), "{e}");
        let e = read_stream_capped(std::io::repeat(b'a'), 1024 * 1024).unwrap_err();
        assert!(e.to_string().contains("larger than 1 MiB"), "{e}");
        std::fs::write(&p, [0xff, 0xfe]).unwrap();
        assert!(read_input(&p).unwrap_err().to_string().contains("UTF-8"));
    }

    #[test]
    fn devices_folders_and_fifos_are_refused_without_reading_or_waiting() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let e = read_input(Path::new("/dev/zero")).unwrap_err();
        assert!(
            e.to_string().contains("not a regular file (a device)"),
            "{e}"
        );
        let e = read_input(dir).unwrap_err();
        assert!(e.to_string().contains("a folder"), "{e}");
        // A symlink to a device is the device.
        #[cfg(unix)]
        {
            let link = dir.join("link");
            std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
            assert!(read_input(&link).is_err());
            let fifo = dir.join("fifo");
            let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
            // SAFETY: a valid NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            let e = read_input(&fifo).unwrap_err();
            assert!(e.to_string().contains("a FIFO"), "{e}");
        }
        assert_eq!(
            read_input(&dir.join("missing")).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
    }
}
