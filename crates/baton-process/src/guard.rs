//! The guard: a small process between baton and each command or child agent it starts, so that
//! nothing baton starts outlives it — not a command that escaped its process group with `setsid`
//! or a double fork, and not even when baton itself is killed with SIGKILL.
//!
//! The guard is the small `baton-guard FD PROGRAM ARGS…` installed beside `baton` (its start
//! costs a fraction of baton's), or where that is missing the `baton` binary itself, run as
//! `baton __guard FD PROGRAM ARGS…` (the binary calls [`main`] before anything else when it sees
//! [`GUARD_ARG`]); [`program_for`] picks. It
//! - makes itself the *child subreaper* of everything below it (`PR_SET_CHILD_SUBREAPER`), so
//!   descendants whose parents exit are re-parented to the guard rather than to init;
//! - starts PROGRAM in a process group of its own and forwards SIGTERM, SIGINT and SIGHUP to it;
//! - watches FD, the read end of a pipe whose only write end baton holds: when it reaches EOF
//!   (baton closed it to kill the command, or baton died, however), the guard kills the
//!   program's group and every descendant, and exits;
//! - when the program exits on its own, kills what it left behind the same way and exits with
//!   the program's status (a signal death is passed on as the same signal).
//!
//! The parent side is [`guarded`]: it wraps a program in the guard and returns the [`Link`] whose
//! closing stops it. A process that never called [`set_program`] (a library's tests) runs programs
//! directly, in a process group, without a guard.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::RwLock;
use std::time::{Duration, Instant};

use nix::sys::signal::{SigSet, SigmaskHow, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

/// The first argument that makes the `baton` binary a guard.
pub const GUARD_ARG: &str = "__guard";

/// The note a guard writes on the program's stderr when it killed processes the program left
/// running after it exited.
pub const LEFTOVER_NOTE: &str =
    "[processes the command left running in the background were killed when it finished]";

pub mod served;

static PROGRAM: RwLock<Option<PathBuf>> = RwLock::new(None);

/// Makes `program` (the running `baton` binary) the guard of every command started through
/// [`guarded`] from now on; `None` turns guards off (benchmarks compare both). Called by the
/// binary at start-up.
pub fn set_program(program: Option<PathBuf>) {
    if let Ok(mut p) = PROGRAM.write() {
        *p = program;
    }
}

/// The guard program, when one was set.
pub fn program() -> Option<PathBuf> {
    PROGRAM.read().ok().and_then(|p| p.clone())
}

/// The file name of the dedicated guard binary.
pub const GUARD_BINARY: &str = "baton-guard";

/// The guard program for the `baton` binary at `baton`: `baton-guard` beside it when present,
/// else `baton` itself (in its `__guard` mode).
pub fn program_for(baton: &Path) -> PathBuf {
    let dedicated = baton.with_file_name(GUARD_BINARY);
    if dedicated.is_file() {
        dedicated
    } else {
        baton.to_path_buf()
    }
}

/// The parent's end of a guard: closing it (dropping it, or baton dying) makes the guard kill
/// everything below it. A link without a guard does nothing.
#[derive(Debug, Default)]
pub struct Link {
    write: Option<OwnedFd>,
    /// The guard's end, kept open until the guard has started (then closed by [`Link::started`]).
    read: Option<OwnedFd>,
    /// `write` is a socket that baton also reads the program's status from (a guard the guard
    /// server started, [`served`]): killing shuts down its sending side, which the guard sees as
    /// EOF however many copies of the socket baton holds.
    socket: bool,
}

impl Link {
    /// A link over the socket of a guard the guard server started.
    pub(crate) fn over_socket(socket: OwnedFd) -> Link {
        Link {
            write: Some(socket),
            read: None,
            socket: true,
        }
    }

    /// Whether a guard is on the other end.
    pub fn is_guarded(&self) -> bool {
        self.write.is_some()
    }

    /// Closes this process's copy of the guard's end, once the guard runs.
    pub fn started(&mut self) {
        self.read = None;
    }

    /// Tells the guard to kill everything it guards now.
    pub fn kill(&mut self) {
        if let (true, Some(fd)) = (self.socket, &self.write) {
            // SAFETY: shutdown on a socket this link owns.
            unsafe { libc::shutdown(fd.as_raw_fd(), libc::SHUT_WR) };
        }
        self.write = None;
        self.read = None;
    }
}

/// A command that runs `program` with `args` under a guard, and its [`Link`]. Without a guard
/// program ([`set_program`]) it is a plain command for `program`. Either way the caller sets
/// the working directory, environment and stdio, puts it in a process group of its own
/// (`process_group(0)`) and spawns it; the spawned process is the one to signal and wait for.
///
/// `path` is the `PATH` the program is looked up in (the child's, when the caller changes it):
/// a missing or non-executable program is reported here, as spawning it directly would.
pub fn guarded(
    program: &OsStr,
    args: &[OsString],
    path: Option<&OsStr>,
) -> std::io::Result<(Command, Link)> {
    let Some(guard) = self::program() else {
        let mut cmd = Command::new(program);
        cmd.args(args);
        return Ok((cmd, Link::default()));
    };
    let resolved = resolve(program, path)?;
    // The write end is close-on-exec: no child ever gets it, so EOF comes exactly when this
    // process closes it or dies. The read end is made inheritable here, in the parent, rather
    // than in a `pre_exec` hook: a command without hooks is spawned with posix_spawn instead of
    // fork, which matters when many children start at once. A child spawned concurrently may
    // inherit a copy of this read end; a read end held elsewhere changes nothing about EOF.
    let mut ends = [0 as RawFd; 2];
    // SAFETY: pipe2 writes two descriptors into the array it is given; each is owned once.
    let (read, write) = unsafe {
        if libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        (OwnedFd::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1]))
    };
    let fd = read.as_raw_fd();
    // SAFETY: fcntl on a descriptor this function owns.
    if unsafe { libc::fcntl(fd, libc::F_SETFD, 0) } == -1 {
        return Err(std::io::Error::last_os_error());
    }
    let mut cmd = Command::new(&guard);
    if guard.file_name() != Some(OsStr::new(GUARD_BINARY)) {
        cmd.arg(GUARD_ARG);
    }
    cmd.arg(fd.to_string()).arg(resolved).args(args);
    Ok((
        cmd,
        Link {
            write: Some(write),
            read: Some(read),
            socket: false,
        },
    ))
}

/// Finds `program` the way `execvp` would: as given when it holds a `/`, else in `path`.
fn resolve(program: &OsStr, path: Option<&OsStr>) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| -> std::io::Result<()> {
        let meta = std::fs::metadata(p)?;
        if meta.is_file() && meta.permissions().mode() & 0o111 != 0 {
            Ok(())
        } else {
            Err(std::io::Error::from_raw_os_error(libc::EACCES))
        }
    };
    let as_path = Path::new(program);
    if program.as_encoded_bytes().contains(&b'/') {
        executable(as_path)?;
        return Ok(as_path.to_path_buf());
    }
    let path = path
        .map(OsStr::to_os_string)
        .or_else(|| std::env::var_os("PATH"))
        .unwrap_or_default();
    let mut denied = false;
    for dir in std::env::split_paths(&path) {
        let candidate = dir.join(as_path);
        match executable(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => denied = true,
            Err(_) => {}
        }
    }
    // The errors exec itself would give, so messages read the same with or without a guard.
    Err(std::io::Error::from_raw_os_error(if denied {
        libc::EACCES
    } else {
        libc::ENOENT
    }))
}

/// Prepares the guard's program before it starts (baton confines it here: see
/// `baton_sandbox::guard_hook`); an error stops the program from starting. Returns whether it
/// confined the program (an error starting it then says so: it may come from the confinement).
pub type Hook = fn(&mut Command) -> std::io::Result<bool>;

/// The guard itself: `args` are what follows [`GUARD_ARG`] (FD PROGRAM ARGS…, or
/// [`served::SERVE_ARG`] FD for the guard server); `hook` prepares the program's command (the
/// guard stays outside what it applies). Returns the exit code; a program killed by a signal
/// makes the guard die of the same signal.
pub fn main(args: &[OsString], hook: Hook) -> i32 {
    let usage = || {
        eprintln!("baton __guard: usage: baton __guard FD PROGRAM [ARGS…] (internal)");
        2
    };
    let (Some(first), Some(second)) = (args.first(), args.get(1)) else {
        return usage();
    };
    let fd_of = |s: &OsStr| s.to_str().and_then(|s| s.parse::<RawFd>().ok());
    if first == served::SERVE_ARG {
        return match fd_of(second) {
            // SAFETY: baton passed this socket open for the server alone.
            Some(fd) => served::serve(unsafe { OwnedFd::from_raw_fd(fd) }, hook),
            None => usage(),
        };
    }
    let Some(fd) = fd_of(first) else {
        return usage();
    };
    // SAFETY: the parent passed this descriptor open for the guard alone; nobody else owns it.
    let watch = unsafe { OwnedFd::from_raw_fd(fd) };
    match run(watch.as_fd(), second, &args[2..], hook, &mut || {}) {
        Ok(status) => exit_code(status),
        Err(e) => {
            eprintln!("baton: cannot start `{}`: {e}", second.to_string_lossy());
            127
        }
    }
}

/// The exit code a guard ends with for the program's `status` (`None`: the guard was told to
/// kill it); a program killed by a signal makes the guard die of the same signal.
fn exit_code(status: Option<WaitStatus>) -> i32 {
    match status {
        Some(WaitStatus::Exited(_, code)) => code,
        Some(WaitStatus::Signaled(_, sig, _)) => die_of(sig),
        Some(_) | None => KILLED,
    }
}

/// The exit code of a program the guard killed because its link closed.
pub(crate) const KILLED: i32 = 128 + Signal::SIGKILL as i32;

/// Runs `program` under this guard until it ends or `watch` reaches EOF, then kills what it
/// left; its wait status (`None`: killed because `watch` closed). `started` is called once the
/// signals the guard forwards are blocked, just before the program is spawned.
pub(crate) fn run(
    watch: BorrowedFd<'_>,
    program: &OsStr,
    args: &[OsString],
    hook: Hook,
    started: &mut dyn FnMut(),
) -> std::io::Result<Option<WaitStatus>> {
    // SAFETY: plain fcntl and prctl calls on our own descriptor and process.
    unsafe {
        // The program must not inherit the watch pipe: it would keep it open.
        libc::fcntl(watch.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC);
        if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    let signals = watched_signals();
    nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&signals), None)?;
    let sigfd = nix::sys::signalfd::SignalFd::with_flags(
        &signals,
        nix::sys::signalfd::SfdFlags::SFD_CLOEXEC,
    )?;
    let mut cmd = Command::new(program);
    cmd.args(args).process_group(0);
    // The guard blocks the signals it forwards; the program must start with none blocked, or
    // `kill` and `timeout` would do nothing to it and to all it starts.
    // SAFETY: sigemptyset and sigprocmask on a local set: async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            let mut set = std::mem::MaybeUninit::<libc::sigset_t>::zeroed();
            libc::sigemptyset(set.as_mut_ptr());
            if libc::sigprocmask(libc::SIG_SETMASK, set.as_ptr(), std::ptr::null_mut()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let confined = hook(&mut cmd)?;
    started();
    let child = cmd.spawn().map_err(|e| {
        if confined {
            std::io::Error::new(
                e.kind(),
                format!(
                    "{e} (while confining it: mount namespace, Landlock, seccomp or capabilities; \
                     `baton doctor` checks the sandbox)"
                ),
            )
        } else {
            e
        }
    })?;
    let child_pid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    // Keep the program's stderr for the leftover note; give up stdin and stdout so that readers
    // see EOF as soon as the program and its descendants are done.
    // SAFETY: dup and dup2 on this process's own standard descriptors.
    let note_fd = unsafe {
        let fd = libc::fcntl(2, libc::F_DUPFD_CLOEXEC, 3);
        (fd >= 0).then(|| OwnedFd::from_raw_fd(fd))
    };
    if let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        // SAFETY: as above.
        unsafe {
            for target in 0..3 {
                libc::dup2(null.as_raw_fd(), target);
            }
        }
    }

    let status = loop {
        let ready = match wait_readable(watch.as_raw_fd(), sigfd.as_raw_fd()) {
            Ok(Some(r)) => r,
            Ok(None) => continue,
            Err(_) => break None,
        };
        if ready[0] {
            // The parent closed its end or died: kill everything.
            break None;
        }
        if !ready[1] {
            continue;
        }
        let Ok(Some(info)) = sigfd.read_signal() else {
            continue;
        };
        match Signal::try_from(i32::try_from(info.ssi_signo).unwrap_or(0)) {
            Ok(Signal::SIGCHLD) => {
                if let Some(status) = reap(child_pid) {
                    break Some(status);
                }
            }
            Ok(s @ (Signal::SIGTERM | Signal::SIGINT | Signal::SIGHUP)) => {
                let _ = nix::sys::signal::killpg(child_pid, s);
            }
            Ok(_) | Err(_) => {}
        }
    };
    let killed = sweep(child_pid);
    if status.is_some() && killed > 0 {
        if let Some(fd) = note_fd {
            let mut err = std::fs::File::from(fd);
            let _ = writeln!(err, "\n{LEFTOVER_NOTE}");
        }
    }
    Ok(status)
}

/// Waits until `a` or `b` can be read (or reached EOF); which of them. `None` when a signal
/// interrupted the wait (look again).
pub(crate) fn wait_readable(a: RawFd, b: RawFd) -> std::io::Result<Option<[bool; 2]>> {
    let mut fds = [a, b].map(|fd| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    });
    // SAFETY: poll reads and writes the two pollfd structs of the array it is given.
    if unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) } < 0 {
        let e = std::io::Error::last_os_error();
        return match e.kind() {
            std::io::ErrorKind::Interrupted => Ok(None),
            _ => Err(e),
        };
    }
    Ok(Some(fds.map(|f| f.revents != 0)))
}

/// The signals a guard reads from its signalfd: its program's end, and the three it forwards.
pub(crate) fn watched_signals() -> SigSet {
    let mut signals = SigSet::empty();
    for s in [
        Signal::SIGCHLD,
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
    ] {
        signals.add(s);
    }
    signals
}

/// Reaps every child that has ended; the program's status when it was among them.
fn reap(program: Pid) -> Option<WaitStatus> {
    let mut found = None;
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) | Err(_) => return found,
            Ok(s) if s.pid() == Some(program) => found = Some(s),
            Ok(_) => {}
        }
    }
}

/// Kills the program's group and every process re-parented to the guard, generation after
/// generation, until the guard has no child left (or two seconds passed: what is left then
/// has been sent SIGKILL and dies on its own). Returns how many processes it signalled.
///
/// A guard without children has no descendants at all (a descendant whose parent dies is
/// re-parented to the guard), so `/proc` is read only while some child is left.
fn sweep(program: Pid) -> usize {
    let me = std::process::id();
    let deadline = Instant::now() + Duration::from_secs(2);
    // Whatever is still in the program's group (the program itself has been reaped, or is
    // killed here) was left behind.
    let mut killed = usize::from(nix::sys::signal::killpg(program, None).is_ok());
    let _ = nix::sys::signal::killpg(program, Signal::SIGKILL);
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Err(_) => return killed, // ECHILD: nothing below the guard any more
            Ok(WaitStatus::StillAlive) => {}
            Ok(_) => continue,
        }
        for p in crate::processes().unwrap_or_default() {
            if p.ppid != me || p.is_zombie() {
                continue;
            }
            let Ok(pid) = i32::try_from(p.pid) else {
                continue;
            };
            if p.pgrp == p.pid {
                let _ = nix::sys::signal::killpg(Pid::from_raw(pid), Signal::SIGKILL);
            }
            let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
            killed += 1;
        }
        if Instant::now() > deadline {
            return killed;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Dies of `sig` so the parent sees the program's own end; 128 + sig if that fails.
fn die_of(sig: Signal) -> i32 {
    // SAFETY: resetting a disposition and unblocking are plain signal calls on this process.
    unsafe {
        let _ = nix::sys::signal::signal(sig, nix::sys::signal::SigHandler::SigDfl);
    }
    let mut set = SigSet::empty();
    set.add(sig);
    let _ = nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_UNBLOCK, Some(&set), None);
    let _ = nix::sys::signal::raise(sig);
    128 + sig as i32
}
