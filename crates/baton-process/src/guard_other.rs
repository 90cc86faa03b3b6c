//! The process guard needs Linux (a child subreaper, signalfd, `/proc`). Elsewhere commands run
//! without one: in a process group of their own, killed as a group, but a descendant that leaves
//! the group, or any child when baton is killed with SIGKILL, is not caught.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::process::Command;

/// The first argument that makes the `baton` binary a guard.
pub const GUARD_ARG: &str = "__guard";

/// The note a guard writes when it killed processes a program left running (never, here).
pub const LEFTOVER_NOTE: &str =
    "[processes the command left running in the background were killed when it finished]";

/// Has no effect: there is no guard on this system.
pub fn set_program(_program: Option<PathBuf>) {}

/// The file name of the dedicated guard binary.
pub const GUARD_BINARY: &str = "baton-guard";

/// `baton` itself (there is no guard on this system).
pub fn program_for(baton: &std::path::Path) -> PathBuf {
    baton.to_path_buf()
}

/// Always `None` on this system.
pub fn program() -> Option<PathBuf> {
    None
}

/// A link to no guard.
#[derive(Debug, Default)]
pub struct Link;

impl Link {
    pub fn is_guarded(&self) -> bool {
        false
    }

    pub fn started(&mut self) {}

    pub fn kill(&mut self) {}
}

/// A plain command for `program` (no guard on this system).
pub fn guarded(
    program: &OsStr,
    args: &[OsString],
    _path: Option<&OsStr>,
) -> std::io::Result<(Command, Link)> {
    let mut cmd = Command::new(program);
    cmd.args(args);
    Ok((cmd, Link))
}

/// Refuses: the guard needs Linux.
/// Prepares the guard's program (see the Linux guard); unused here.
pub type Hook = fn(&mut std::process::Command) -> std::io::Result<bool>;

pub fn main(_args: &[OsString], _hook: Hook) -> i32 {
    eprintln!("baton __guard: the process guard needs Linux");
    2
}

/// The guard server needs Linux: commands start another way here.
pub mod served {
    use std::os::fd::BorrowedFd;
    use std::os::unix::net::UnixStream;
    use std::process::{Command, ExitStatus};

    /// A command the guard server started (never, here).
    #[derive(Debug)]
    pub struct Served {
        pub pid: u32,
        pub channel: UnixStream,
    }

    /// Always `None`: there is no guard server on this system.
    pub fn spawn(
        _cmd: &Command,
        _stdio: [BorrowedFd<'_>; 3],
    ) -> std::io::Result<Option<(Served, super::Link)>> {
        Ok(None)
    }

    /// Never a status: no guard sends one here.
    pub fn read_status(_message: &[u8]) -> Option<ExitStatus> {
        None
    }

    /// The length of a guard's status message.
    pub const STATUS_LEN: usize = 5;
}
