//! The guard server: one guard process per baton process that starts each command's guard by
//! forking itself, instead of baton executing a new guard for every command.
//!
//! A guard started with `exec` pays for loading its binary and the runtime's start-up on every
//! command (about a millisecond, more than the shell it starts); a fork of a small,
//! single-threaded process that is already running pays for neither. The guard it forks is the
//! same guard ([`super::run`]): a child subreaper that starts the program in a process group of
//! its own, forwards signals to it, and kills it and all it left when the program ends or when
//! baton's end of the link closes.
//!
//! How one command starts ([`spawn`]):
//! 1. baton makes a socket pair for the command (its *channel*) and sends the server one byte
//!    with four descriptors: the command's stdin, stdout and stderr, and the guard's end of the
//!    channel (over the server's own socket, whose EOF tells the server that baton is gone);
//! 2. the server forks; the new guard makes its own process group, puts the three descriptors
//!    in place, reads the command (program, arguments, environment, working directory) from the
//!    channel, takes that environment and folder as its own, says `P` and its pid, and runs the
//!    program as an executed guard would;
//! 3. when the program ends, the guard kills what it left and sends `S` and the program's wait
//!    status, then exits (the server reaps it). EOF on the channel (baton shut it down to kill
//!    the command, or died) makes the guard kill everything at once.
//!
//! The server is a child subreaper too: what a guard that was itself killed leaves behind is
//! re-parented to the server, which kills it. When baton goes, the server exits; each guard
//! sees its own channel close and ends its command.

use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use nix::sys::signal::{SigSet, SigmaskHow, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use super::{Hook, Link};

/// The argument (after [`super::GUARD_ARG`] for the `baton` binary) that makes a guard the
/// server: `baton-guard --serve FD`.
pub const SERVE_ARG: &str = "--serve";

/// The message a guard sends once it runs: `P` and its pid.
const STARTED: u8 = b'P';
/// The message a guard sends when the program ended: `S` and its wait status.
const STATUS: u8 = b'S';

/// How long baton waits for a forked guard to say it runs before it gives up on the server.
const START_WAIT: Duration = Duration::from_secs(10);

/// The guard server of this process, started with the first command.
struct Server {
    socket: UnixStream,
    child: Child,
}

static SERVER: Mutex<Option<Server>> = Mutex::new(None);

/// A command the guard server started: the guard's pid (it leads a process group of its own,
/// like an executed guard) and baton's end of its channel, on which the program's status comes
/// ([`read_status`]).
#[derive(Debug)]
pub struct Served {
    pub pid: u32,
    pub channel: UnixStream,
}

/// Starts `cmd` (program, arguments, the environment changes and working directory set on it;
/// not `env_clear`) under a guard forked by this process's guard server, with `stdio` as its
/// standard descriptors; the started command and the [`Link`] whose closing kills it. `None`
/// when this process has no guard program ([`super::set_program`]): the caller starts the
/// command another way.
pub fn spawn(cmd: &Command, stdio: [BorrowedFd<'_>; 3]) -> std::io::Result<Option<(Served, Link)>> {
    let Some(guard) = super::program() else {
        return Ok(None);
    };
    let path = cmd
        .get_envs()
        .find(|(k, _)| *k == OsStr::new("PATH"))
        .map(|(_, v)| v.unwrap_or_default());
    // A missing program is reported here, as spawning it would.
    let program = super::resolve(cmd.get_program(), path)?;
    let frame = frame(cmd, &program)?;
    let (mut mine, theirs) = UnixStream::pair()?;
    send(&guard, [stdio[0], stdio[1], stdio[2], theirs.as_fd()])?;
    drop(theirs);
    mine.write_all(&frame)?;
    mine.set_read_timeout(Some(START_WAIT))?;
    let mut message = [0u8; 5];
    if let Err(e) = mine.read_exact(&mut message) {
        // A server that does not answer (stopped, stuck) is not asked again: the next command
        // starts a new one.
        forget_server();
        return Err(std::io::Error::new(
            e.kind(),
            format!("the guard server did not start the command: {e}"),
        ));
    }
    if message[0] != STARTED {
        return Err(std::io::Error::other(
            "the guard server answered with something else than a started guard",
        ));
    }
    mine.set_read_timeout(None)?;
    let pid = u32::from_le_bytes([message[1], message[2], message[3], message[4]]);
    let link = Link::over_socket(OwnedFd::from(mine.try_clone()?));
    Ok(Some((Served { pid, channel: mine }, link)))
}

/// The program's status from a guard's `S` message (five bytes); `None` for anything else.
pub fn read_status(message: &[u8]) -> Option<ExitStatus> {
    use std::os::unix::process::ExitStatusExt as _;
    match message {
        [STATUS, a, b, c, d] => Some(ExitStatus::from_raw(i32::from_le_bytes([*a, *b, *c, *d]))),
        _ => None,
    }
}

/// The length of a guard's status message.
pub const STATUS_LEN: usize = 5;

/// Sends the four descriptors of a command to the server, starting it first if this process
/// has none or the one it had is gone.
fn send(guard: &Path, fds: [BorrowedFd<'_>; 4]) -> std::io::Result<()> {
    let mut server = SERVER
        .lock()
        .map_err(|_| std::io::Error::other("the guard server's lock is poisoned"))?;
    for attempt in 0..2 {
        if server.is_none() {
            *server = Some(start(guard)?);
        }
        let Some(s) = server.as_mut() else {
            continue;
        };
        match send_fds(s.socket.as_fd(), &fds) {
            Ok(()) => return Ok(()),
            Err(e) if attempt == 1 => return Err(e),
            Err(_) => {
                // The server died (someone killed it): reap it and start another.
                let _ = s.child.kill();
                let _ = s.child.wait();
                *server = None;
            }
        }
    }
    Err(std::io::Error::other("the guard server cannot be started"))
}

/// Kills this process's guard server and forgets it (its guards go on: each watches its own
/// channel).
fn forget_server() {
    let mut server = SERVER
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(mut s) = server.take() {
        let _ = s.child.kill();
        let _ = s.child.wait();
    }
}

/// Starts the guard server `guard` (`baton-guard`, or `baton` in its guard mode) with its end of
/// a new socket pair.
fn start(guard: &Path) -> std::io::Result<Server> {
    let (mine, theirs) = UnixStream::pair()?;
    let fd = theirs.as_raw_fd();
    let mut cmd = Command::new(guard);
    if guard.file_name() != Some(OsStr::new(super::GUARD_BINARY)) {
        cmd.arg(super::GUARD_ARG);
    }
    // No environment: each guard takes its command's from baton's request (provider keys
    // already removed), and what a process started with stays readable in its
    // `/proc/PID/environ` for as long as it lives.
    cmd.arg(SERVE_ARG)
        .arg(fd.to_string())
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    // SAFETY: fcntl on a descriptor that stays open until the child has executed. The socket
    // stays close-on-exec in this process, so no other child inherits it.
    unsafe {
        cmd.pre_exec(move || {
            if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn()?;
    drop(theirs);
    Ok(Server {
        socket: mine,
        child,
    })
}

/// Sends one byte with `fds` attached over `socket`.
fn send_fds(socket: BorrowedFd<'_>, fds: &[BorrowedFd<'_>; 4]) -> std::io::Result<()> {
    let raw: Vec<RawFd> = fds.iter().map(AsRawFd::as_raw_fd).collect();
    let iov = [std::io::IoSlice::new(&[0u8])];
    let cmsg = [nix::sys::socket::ControlMessage::ScmRights(&raw)];
    nix::sys::socket::sendmsg::<()>(
        socket.as_raw_fd(),
        &iov,
        &cmsg,
        nix::sys::socket::MsgFlags::MSG_NOSIGNAL,
        None,
    )?;
    Ok(())
}

/// Receives one byte with four descriptors (close-on-exec); `None` at EOF. A message without
/// them (nobody sends one) is skipped.
fn recv_fds(socket: BorrowedFd<'_>) -> std::io::Result<Option<Vec<OwnedFd>>> {
    use nix::sys::socket::{recvmsg, ControlMessageOwned, MsgFlags};
    loop {
        let mut byte = [0u8; 1];
        let mut iov = [std::io::IoSliceMut::new(&mut byte)];
        let mut space = nix::cmsg_space!([RawFd; 4]);
        let msg = match recvmsg::<()>(
            socket.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        ) {
            Ok(m) => m,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        };
        if msg.bytes == 0 {
            return Ok(None);
        }
        let mut fds = Vec::new();
        for c in msg.cmsgs()? {
            if let ControlMessageOwned::ScmRights(received) = c {
                // SAFETY: the kernel installed these descriptors in this process for us.
                fds.extend(
                    received
                        .into_iter()
                        .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }),
                );
            }
        }
        if fds.len() == 4 {
            return Ok(Some(fds));
        }
    }
}

/// The command as the guard reads it: the resolved program, the working directory, the
/// arguments and the whole environment, each a length-prefixed byte string, after the frame's
/// own length.
fn frame(cmd: &Command, program: &Path) -> std::io::Result<Vec<u8>> {
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    for (key, value) in cmd.get_envs() {
        env.retain(|(k, _)| k != key);
        if let Some(v) = value {
            env.push((key.to_os_string(), v.to_os_string()));
        }
    }
    let cwd = match cmd.get_current_dir() {
        Some(d) => d.to_path_buf(),
        None => std::env::current_dir()?,
    };
    let mut out = vec![0u8; 4];
    let mut put = |bytes: &[u8]| {
        out.extend_from_slice(&u32::try_from(bytes.len()).unwrap_or(u32::MAX).to_le_bytes());
        out.extend_from_slice(bytes);
    };
    put(program.as_os_str().as_bytes());
    put(cwd.as_os_str().as_bytes());
    let args: Vec<&OsStr> = cmd.get_args().collect();
    put(&u32::try_from(args.len()).unwrap_or(0).to_le_bytes());
    for a in args {
        put(a.as_bytes());
    }
    put(&u32::try_from(env.len()).unwrap_or(0).to_le_bytes());
    for (k, v) in env {
        let mut pair = k.into_vec();
        pair.push(b'=');
        pair.extend_from_slice(v.as_bytes());
        put(&pair);
    }
    let len = u32::try_from(out.len() - 4)
        .map_err(|_| std::io::Error::other("the command is too large to hand to its guard"))?;
    out[..4].copy_from_slice(&len.to_le_bytes());
    Ok(out)
}

/// A command read back from its frame.
#[derive(Debug, PartialEq)]
struct Request {
    program: PathBuf,
    cwd: PathBuf,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
}

/// Reads one frame (see [`frame`]) from `from`.
fn read_request(from: &mut impl Read) -> std::io::Result<Request> {
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, "a damaged command frame");
    let mut len = [0u8; 4];
    from.read_exact(&mut len)?;
    let mut body = vec![0u8; u32::from_le_bytes(len) as usize];
    from.read_exact(&mut body)?;
    let mut at = 0usize;
    let mut take = || -> std::io::Result<Vec<u8>> {
        let head = body.get(at..at + 4).ok_or_else(bad)?;
        let n = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let bytes = body.get(at + 4..at + 4 + n).ok_or_else(bad)?.to_vec();
        at += 4 + n;
        Ok(bytes)
    };
    let count = |b: Vec<u8>| -> std::io::Result<usize> {
        let b: [u8; 4] = b.try_into().map_err(|_| bad())?;
        Ok(u32::from_le_bytes(b) as usize)
    };
    let program = PathBuf::from(OsString::from_vec(take()?));
    let cwd = PathBuf::from(OsString::from_vec(take()?));
    let args = (0..count(take()?)?)
        .map(|_| take().map(OsString::from_vec))
        .collect::<std::io::Result<Vec<_>>>()?;
    let env = (0..count(take()?)?)
        .map(|_| {
            let pair = take()?;
            let eq = pair.iter().position(|b| *b == b'=').ok_or_else(bad)?;
            Ok((
                OsString::from_vec(pair[..eq].to_vec()),
                OsString::from_vec(pair[eq + 1..].to_vec()),
            ))
        })
        .collect::<std::io::Result<Vec<_>>>()?;
    Ok(Request {
        program,
        cwd,
        args,
        env,
    })
}

/// The server: forks a guard for each command baton sends, reaps them, and exits when baton's
/// end of `socket` closes. Returns the exit code.
pub(crate) fn serve(socket: OwnedFd, hook: Hook) -> i32 {
    // SAFETY: fcntl and prctl on our own descriptor and process.
    unsafe {
        libc::fcntl(socket.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC);
        // Like baton itself: no other process reads the memory of the server or of a guard it
        // forks (a guard holds its command's environment); a program a guard executes is
        // dumpable again.
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0 {
            return 1;
        }
    }
    let mut chld = SigSet::empty();
    chld.add(Signal::SIGCHLD);
    if nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&chld), None).is_err() {
        return 1;
    }
    let flags =
        nix::sys::signalfd::SfdFlags::SFD_CLOEXEC | nix::sys::signalfd::SfdFlags::SFD_NONBLOCK;
    let Ok(sigfd) = nix::sys::signalfd::SignalFd::with_flags(&chld, flags) else {
        return 1;
    };
    let mut guards: Vec<i32> = Vec::new();
    loop {
        let ready = match super::wait_readable(socket.as_raw_fd(), sigfd.as_raw_fd()) {
            Ok(Some(r)) => r,
            Ok(None) => continue,
            Err(_) => break,
        };
        if ready[1] {
            while let Ok(Some(_)) = sigfd.read_signal() {}
            reap(&mut guards);
        }
        if !ready[0] {
            continue;
        }
        let received = match recv_fds(socket.as_fd()) {
            Ok(Some(r)) => r,
            Ok(None) | Err(_) => break,
        };
        // SAFETY: this process is single-threaded; the child only runs the guard and exits.
        match unsafe { nix::unistd::fork() } {
            Ok(nix::unistd::ForkResult::Child) => {
                drop(socket);
                drop(sigfd);
                let code = guard_child(received, hook);
                // SAFETY: leaves without running the server's exit handlers in the fork.
                unsafe { libc::_exit(code) }
            }
            Ok(nix::unistd::ForkResult::Parent { child }) => guards.push(child.as_raw()),
            Err(_) => {}
        }
    }
    kill_all_strays(&mut guards);
    0
}

/// Reaps every ended child. A guard that died of a signal did not finish its sweep: what it
/// left was re-parented here and is killed, generation after generation (a stray killed here
/// hands its own children to the server when it dies, and is reaped here in turn).
fn reap(guards: &mut Vec<i32>) {
    let mut stray = false;
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) | Err(_) => break,
            Ok(status) => {
                let Some(pid) = status.pid() else { break };
                match guards.iter().position(|g| *g == pid.as_raw()) {
                    Some(i) => {
                        guards.swap_remove(i);
                        stray |= matches!(status, WaitStatus::Signaled(..));
                    }
                    None => stray = true,
                }
            }
        }
    }
    if stray {
        kill_strays(guards);
    }
}

/// Kills every child of the server that is not one of its guards (a killed guard's orphans),
/// with its process group; how many it signalled.
fn kill_strays(guards: &[i32]) -> usize {
    let me = std::process::id();
    let mut killed = 0;
    for p in crate::processes().unwrap_or_default() {
        let Ok(pid) = i32::try_from(p.pid) else {
            continue;
        };
        if p.ppid != me || p.is_zombie() || guards.contains(&pid) {
            continue;
        }
        if p.pgrp == p.pid {
            let _ = nix::sys::signal::killpg(Pid::from_raw(pid), Signal::SIGKILL);
        }
        let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
        killed += 1;
    }
    killed
}

/// Before the server exits: kills its strays until none is left (or two seconds passed). Its
/// guards end their commands themselves when their channels close.
fn kill_all_strays(guards: &mut Vec<i32>) {
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while kill_strays(guards) > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
        reap(guards);
    }
}

/// One forked guard: `fds` are the command's stdin, stdout, stderr and the guard's end of its
/// channel. Returns the exit code of the fork.
fn guard_child(fds: Vec<OwnedFd>, hook: Hook) -> i32 {
    // Blocked from here, so a signal sent once baton knows the pid is forwarded, not fatal.
    let signals = super::watched_signals();
    if nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&signals), None).is_err() {
        return 1;
    }
    let _ = nix::unistd::setpgid(Pid::from_raw(0), Pid::from_raw(0));
    let mut fds = fds.into_iter();
    let (Some(stdin), Some(stdout), Some(stderr), Some(channel)) =
        (fds.next(), fds.next(), fds.next(), fds.next())
    else {
        return 1;
    };
    for (fd, target) in [(&stdin, 0), (&stdout, 1), (&stderr, 2)] {
        // SAFETY: dup2 onto this process's own standard descriptors.
        if unsafe { libc::dup2(fd.as_raw_fd(), target) } < 0 {
            return 1;
        }
    }
    drop((stdin, stdout, stderr));
    let mut channel = UnixStream::from(channel);
    let Ok(request) = read_request(&mut channel) else {
        return 1;
    };
    become_(&request);
    let mut started = [STARTED; 5];
    started[1..].copy_from_slice(&std::process::id().to_le_bytes());
    if channel.write_all(&started).is_err() {
        return 1;
    }
    let program = request.program.as_os_str();
    let raw = match std::env::set_current_dir(&request.cwd)
        .and_then(|()| super::run(channel.as_fd(), program, &request.args, hook, &mut || {}))
    {
        Ok(status) => raw_status(status),
        Err(e) => {
            eprintln!("baton: cannot start `{}`: {e}", program.to_string_lossy());
            127 << 8
        }
    };
    let mut status = [STATUS; 5];
    status[1..].copy_from_slice(&raw.to_le_bytes());
    let _ = channel.write_all(&status);
    0
}

/// Takes the command's environment as this process's own, as an executed guard has it.
fn become_(request: &Request) {
    let old: Vec<OsString> = std::env::vars_os().map(|(k, _)| k).collect();
    // The fork is single-threaded: nothing reads the environment while it changes.
    for k in old {
        std::env::remove_var(k);
    }
    for (k, v) in &request.env {
        if !k.is_empty() {
            std::env::set_var(k, v);
        }
    }
}

/// The wait status baton should see for the program's `status` (`None`: killed because baton
/// shut the channel), as `waitpid` encodes it.
fn raw_status(status: Option<WaitStatus>) -> i32 {
    match status {
        Some(WaitStatus::Exited(_, code)) => (code & 0xff) << 8,
        Some(WaitStatus::Signaled(_, sig, core)) => sig as i32 | if core { 0x80 } else { 0 },
        Some(_) | None => super::KILLED << 8,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_frame_reads_back_as_the_command_it_was_made_from() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo 'a=b' \u{e9}"])
            .current_dir("/tmp")
            .env("BATON_FRAME_TEST", "x=y")
            .env_remove("HOME");
        let bytes = frame(&cmd, Path::new("/bin/sh")).unwrap();
        let request = read_request(&mut bytes.as_slice()).unwrap();
        assert_eq!(request.program, PathBuf::from("/bin/sh"));
        assert_eq!(request.cwd, PathBuf::from("/tmp"));
        assert_eq!(
            request.args,
            vec![OsString::from("-c"), "echo 'a=b' \u{e9}".into()]
        );
        assert!(request
            .env
            .contains(&("BATON_FRAME_TEST".into(), "x=y".into())));
        assert!(!request.env.iter().any(|(k, _)| k == "HOME"));
        // A frame cut short is an error, not a command.
        let cut = &bytes[..bytes.len() - 3];
        assert!(read_request(&mut &cut[..]).is_err());
    }

    #[test]
    fn statuses_read_back_as_exit_codes_and_signals() {
        let encode = |raw: i32| {
            let mut m = [STATUS; 5];
            m[1..].copy_from_slice(&raw.to_le_bytes());
            read_status(&m).unwrap()
        };
        let pid = Pid::from_raw(1);
        assert_eq!(
            encode(raw_status(Some(WaitStatus::Exited(pid, 3)))).code(),
            Some(3)
        );
        use std::os::unix::process::ExitStatusExt as _;
        assert_eq!(
            encode(raw_status(Some(WaitStatus::Signaled(
                pid,
                Signal::SIGTERM,
                false
            ))))
            .signal(),
            Some(15)
        );
        assert_eq!(encode(raw_status(None)).code(), Some(137));
        assert_eq!(read_status(b"P\0\0\0\0"), None);
    }
}
