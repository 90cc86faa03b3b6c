//! Small filesystem helpers shared by the tools.

use std::ffi::CString;
use std::fs;
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
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

/// `struct open_how` of `openat2(2)`.
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
const RESOLVE_NO_SYMLINKS: u64 = 0x04;
const RESOLVE_BENEATH: u64 = 0x08;

/// Opens `rel` below the directory `dir` in one step in the kernel: never above `dir`, through
/// no symlink at all. Nothing can be swapped between a check and the open, because the open is
/// the check.
fn open_beneath(dir: BorrowedFd<'_>, rel: &Path, flags: libc::c_int) -> io::Result<OwnedFd> {
    let c = CString::new(rel.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "the path holds a NUL byte"))?;
    let how = OpenHow {
        flags: u64::try_from(flags | libc::O_CLOEXEC).unwrap_or(0),
        mode: 0,
        resolve: RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    // SAFETY: openat2 reads the C string and `size_of::<OpenHow>()` bytes of `how`.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            c.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: openat2 returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(i32::try_from(fd).unwrap_or(-1)) })
}

/// Says what an error of [`open_beneath`] means for a tool path.
fn explain(e: io::Error, path: &Path) -> io::Error {
    match e.raw_os_error() {
        Some(libc::ELOOP) => io::Error::other(format!(
            "{} leads through a symlink; the file tools do not follow links when they write or \
             read, so that nothing can be redirected outside the workspace: give the real path",
            path.display()
        )),
        Some(libc::EXDEV) => io::Error::other(format!(
            "{} leads outside the workspace root",
            path.display()
        )),
        _ => e,
    }
}

fn root_fd(root: &Path) -> io::Result<OwnedFd> {
    let f = fs::File::open(root)?;
    Ok(OwnedFd::from(f))
}

/// Opens the regular file `path` (inside `root`) for reading, following no link and never
/// leaving `root`.
pub(crate) fn open_read(root: &Path, path: &Path) -> io::Result<fs::File> {
    let rel = path.strip_prefix(root).map_err(|_| {
        io::Error::other(format!("{} is outside the workspace root", path.display()))
    })?;
    let dir = root_fd(root)?;
    open_beneath(dir.as_fd(), rel, libc::O_RDONLY | libc::O_NOCTTY)
        .map(fs::File::from)
        .map_err(|e| explain(e, path))
}

/// The folder `path` is in, opened beneath `root` (created, with its missing parents, one
/// component at a time and none through a link), and the file's name in it.
fn parent_beneath<'a>(root: &Path, path: &'a Path) -> io::Result<(OwnedFd, &'a std::ffi::OsStr)> {
    let rel = path.strip_prefix(root).map_err(|_| {
        io::Error::other(format!("{} is outside the workspace root", path.display()))
    })?;
    let name = rel
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path has no file name"))?;
    let mut dir = root_fd(root)?;
    for part in rel.parent().into_iter().flat_map(Path::components) {
        let part = Path::new(part.as_os_str());
        let next = match open_beneath(dir.as_fd(), part, libc::O_PATH | libc::O_DIRECTORY) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let c = CString::new(part.as_os_str().as_bytes()).map_err(io::Error::other)?;
                // SAFETY: mkdirat on a descriptor this function owns and a C string.
                let rc = unsafe { libc::mkdirat(dir.as_raw_fd(), c.as_ptr(), 0o777) };
                if rc != 0 && io::Error::last_os_error().kind() != io::ErrorKind::AlreadyExists {
                    return Err(io::Error::last_os_error());
                }
                open_beneath(dir.as_fd(), part, libc::O_PATH | libc::O_DIRECTORY)
            }
            other => other,
        }
        .map_err(|e| explain(e, path))?;
        dir = next;
    }
    Ok((dir, name))
}

/// The error of a write to the protected path `p`.
fn refused(p: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!(
            "{} is protected: the repository's git settings and hooks, baton's own folder \
             (.baton/) and the peers' settings (.claude/, .mcp.json, .codex/, .pi/, .agents/) are \
             read-only to the model, whether they exist or not; ask the user to change them",
            p.display()
        ),
    )
}

/// Where the descriptor `fd` really is (the kernel's own path of what was opened).
fn real_path_of(fd: BorrowedFd<'_>) -> io::Result<std::path::PathBuf> {
    fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// Replaces (or creates) `path`, inside the workspace `root`, with `bytes` so that readers see
/// either the old or the new content, never a mix: the bytes go to a temporary file in the same
/// directory, which is flushed to disk and then renamed over `path`. An existing file keeps its
/// permissions.
///
/// The folder is opened beneath `root` without following any link (a folder swapped for a
/// symlink meanwhile makes the write fail, it never lands outside), and the file may not be one
/// of the repository's control files or under `.baton/` (`baton_sandbox::protect`): what the
/// model may not change through `bash`, it may not change through `write` or `edit`.
pub(crate) fn atomic_write(root: &Path, path: &Path, bytes: &[u8]) -> io::Result<()> {
    // The path asked for first, before any missing folder of it is made (`.claude/x` must not
    // leave a `.claude/` behind); then the real path of the folder opened.
    let roots = [root.to_path_buf()];
    // Lexically: `x/../.claude/y` is `.claude/y`.
    let mut asked = std::path::PathBuf::new();
    for c in root.join(path).components() {
        match c {
            std::path::Component::ParentDir => {
                asked.pop();
            }
            std::path::Component::CurDir => {}
            other => asked.push(other),
        }
    }
    if let Some(p) = baton_tool::protect::is_protected(&roots, &asked) {
        return Err(refused(&p));
    }
    let (dir, name) = parent_beneath(root, path)?;
    let real_dir = real_path_of(dir.as_fd())?;
    if let Some(p) = baton_tool::protect::is_protected(&roots, &real_dir.join(name)) {
        return Err(refused(&p));
    }
    let name_c = CString::new(name.as_bytes()).map_err(io::Error::other)?;
    // An existing file keeps its permissions (its own, not a link's target's).
    let existing_mode = {
        // SAFETY: fstatat fills the stat struct it is given.
        let mut st = std::mem::MaybeUninit::<libc::stat>::zeroed();
        let rc = unsafe {
            libc::fstatat(
                dir.as_raw_fd(),
                name_c.as_ptr(),
                st.as_mut_ptr(),
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        // SAFETY: fstatat succeeded, so it initialised the struct.
        (rc == 0).then(|| unsafe { st.assume_init() }.st_mode & 0o7777)
    };

    let mut attempt = 0;
    let (tmp_c, mut file) = loop {
        let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let tmp_name = format!(
            ".{}.baton-tmp.{}.{n}",
            name.to_string_lossy(),
            std::process::id()
        );
        let tmp_c = CString::new(tmp_name).map_err(io::Error::other)?;
        // SAFETY: openat on a descriptor this function owns and a C string.
        let fd = unsafe {
            libc::openat(
                dir.as_raw_fd(),
                tmp_c.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                0o666,
            )
        };
        if fd >= 0 {
            // SAFETY: a new descriptor, owned here.
            break (tmp_c, fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) }));
        }
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::AlreadyExists && attempt < 16 {
            attempt += 1;
            continue;
        }
        return Err(e);
    };

    let result = (|| {
        file.write_all(bytes)?;
        if let Some(mode) = existing_mode {
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(fs::Permissions::from_mode(mode))?;
        }
        file.sync_all()?;
        drop(file);
        // SAFETY: renameat within one directory this function holds open.
        let rc = unsafe {
            libc::renameat(
                dir.as_raw_fd(),
                tmp_c.as_ptr(),
                dir.as_raw_fd(),
                name_c.as_ptr(),
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    })();
    if result.is_err() {
        // SAFETY: unlinkat on a descriptor this function holds and a C string.
        unsafe {
            libc::unlinkat(dir.as_raw_fd(), tmp_c.as_ptr(), 0);
        }
        return result;
    }
    // Make the rename itself durable; failing to do so is not worth failing the write for.
    // SAFETY: fsync on a descriptor this function owns.
    unsafe {
        let d = libc::openat(
            dir.as_raw_fd(),
            c".".as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        );
        if d >= 0 {
            libc::fsync(d);
            libc::close(d);
        }
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
        let root = tmp.path().canonicalize().unwrap();
        let p = root.join("f.sh");
        atomic_write(&root, &p, b"one").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"one");
        fs::set_permissions(&p, fs::Permissions::from_mode(0o751)).unwrap();
        atomic_write(&root, &p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o751
        );
        let leftovers: Vec<_> = fs::read_dir(tmp.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1);
    }

    #[test]
    fn writes_never_follow_a_link_and_never_touch_protected_files() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("link")).unwrap();
        let err = atomic_write(&root, &root.join("link/x.txt"), b"x").unwrap_err();
        assert!(err.to_string().contains("symlink"), "{err}");
        assert!(!outside.path().join("x.txt").exists());
        atomic_write(&root, &root.join("new/dir/y.txt"), b"y").unwrap();
        assert_eq!(fs::read(root.join("new/dir/y.txt")).unwrap(), b"y");
        fs::create_dir_all(root.join(".git/hooks")).unwrap();
        let err = atomic_write(&root, &root.join(".git/hooks/pre-commit"), b"x").unwrap_err();
        assert!(err.to_string().contains("protected"), "{err}");
        let err = atomic_write(&root, &root.join(".baton/config.toml"), b"x").unwrap_err();
        assert!(err.to_string().contains("protected"), "{err}");
        assert!(!root.join(".baton/config.toml").exists());
        // A link inside the root that points at a protected file is not followed either.
        fs::write(root.join(".git/config"), "[core]\n").unwrap();
        std::os::unix::fs::symlink(root.join(".git"), root.join("g")).unwrap();
        assert!(atomic_write(&root, &root.join("g/config"), b"x").is_err());
        assert_eq!(fs::read(root.join(".git/config")).unwrap(), b"[core]\n");
    }

    /// A folder swapped with a symlink to the outside in a loop (`renameat2` with
    /// `RENAME_EXCHANGE`) while `write` runs 200 times: no write ever lands outside.
    #[test]
    fn a_racing_symlink_swap_never_redirects_a_write() {
        use std::sync::atomic::AtomicBool;
        use std::sync::Arc;
        let tmp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        fs::create_dir(root.join("d")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("swap")).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let racer = {
            let stop = stop.clone();
            let a = CString::new(root.join("d").as_os_str().as_bytes()).unwrap();
            let b = CString::new(root.join("swap").as_os_str().as_bytes()).unwrap();
            std::thread::spawn(move || {
                let mut swaps = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    // SAFETY: renameat2 with two C strings.
                    unsafe {
                        libc::syscall(
                            libc::SYS_renameat2,
                            libc::AT_FDCWD,
                            a.as_ptr(),
                            libc::AT_FDCWD,
                            b.as_ptr(),
                            2u32, // RENAME_EXCHANGE
                        );
                    }
                    swaps += 1;
                }
                swaps
            })
        };
        for i in 0..200 {
            // Refused or written inside: either is fine while the path moves under it.
            let _ = atomic_write(&root, &root.join(format!("d/f{i}.txt")), b"x");
        }
        stop.store(true, Ordering::Relaxed);
        assert!(racer.join().unwrap() > 0);
        let escaped: Vec<_> = fs::read_dir(outside.path()).unwrap().collect();
        assert!(
            escaped.is_empty(),
            "{} writes landed outside",
            escaped.len()
        );
        // Once the path holds still (the folder back at `d`), a write goes through: the guard
        // refuses a moving path, not every path. (How many writes the race let through depends
        // on the scheduler and is not asserted.)
        if fs::symlink_metadata(root.join("d")).unwrap().is_symlink() {
            fs::rename(root.join("d"), root.join("tmp")).unwrap();
            fs::rename(root.join("swap"), root.join("d")).unwrap();
        }
        atomic_write(&root, &root.join("d/still.txt"), b"x").unwrap();
        assert_eq!(fs::read(root.join("d/still.txt")).unwrap(), b"x");
    }
}
