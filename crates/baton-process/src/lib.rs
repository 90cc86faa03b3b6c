//! Child processes as baton handles them: each command in a process group of its own, killed as a
//! group, and recognised later by its identity rather than by a pid that the system may have
//! handed to somebody else since.
//!
//! - [`GroupGuard`] owns a process group: dropping it SIGKILLs the whole group, so a future that is
//!   dropped half-way, a panic or an early return never leaves the group running.
//! - [`Identity`] is a pid together with the process's start time (field 22 of
//!   `/proc/<pid>/stat`). A record that keeps an identity can later ask [`Identity::is_alive`]
//!   and never mistakes a new process with a reused pid for the one it started.
//! - [`stat`] and [`processes`] read `/proc` for the few facts baton needs (state, parent, group,
//!   start time); [`cwd`] reads a process's working directory.
//!
//! Process inspection reads Linux's `/proc`; on other systems those calls return
//! [`ProcessError::Unsupported`] (and [`alive`] is false) instead of guessing.

#[cfg(target_os = "linux")]
pub mod guard;
#[cfg(not(target_os = "linux"))]
#[path = "guard_other.rs"]
pub mod guard;

use std::path::{Path, PathBuf};

use nix::sys::signal::killpg;
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

pub use nix::sys::signal::Signal;

/// This program's own file (`/proc/self/exe`), resolved once and pinned for the life of the
/// process: the guard of every command, delegated agents, workers and tasks all run it, and a
/// session would otherwise ask the kernel for it again each time.
pub fn own_program() -> std::io::Result<PathBuf> {
    static OWN: std::sync::OnceLock<Result<PathBuf, (std::io::ErrorKind, String)>> =
        std::sync::OnceLock::new();
    OWN.get_or_init(|| std::env::current_exe().map_err(|e| (e.kind(), e.to_string())))
        .clone()
        .map_err(|(kind, text)| std::io::Error::new(kind, text))
}

/// Lowers the calling thread's scheduling priority by 10 nice steps: for work nobody is waiting on
/// (the dashboard's read of the history as it starts), so that what a person waits for (the
/// page's first paint, a key's echo) gets the cores first. Linux keeps a nice value per thread,
/// so the other threads of the process keep theirs. Best effort: a refusal leaves the thread
/// as it was; elsewhere it does nothing.
pub fn lower_this_thread() {
    #[cfg(target_os = "linux")]
    // SAFETY: nice takes a plain integer; on Linux it changes the calling thread only.
    unsafe {
        libc::nice(10);
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("process {pid} does not exist")]
    NoSuchProcess { pid: u32 },
    #[error("cannot read /proc/{pid}/stat: {source}")]
    Read {
        pid: u32,
        #[source]
        source: std::io::Error,
    },
    #[error("/proc/{pid}/stat has an unexpected format")]
    Format { pid: u32 },
    #[error("process inspection needs Linux's /proc; this system has none")]
    Unsupported,
}

/// What `/proc/<pid>/stat` says about a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub pid: u32,
    /// The one-letter state (`R`, `S`, `D`, `Z` for a zombie, …).
    pub state: char,
    pub ppid: u32,
    /// The process group.
    pub pgrp: u32,
    /// When the process started, in clock ticks since boot: with the pid, it names one process.
    pub start_time: u64,
}

impl Stat {
    /// Whether the process has exited and only waits to be reaped.
    pub fn is_zombie(&self) -> bool {
        self.state == 'Z' || self.state == 'X'
    }
}

/// Reads `/proc/<pid>/stat`.
pub fn stat(pid: u32) -> Result<Stat, ProcessError> {
    if !cfg!(target_os = "linux") {
        return Err(ProcessError::Unsupported);
    }
    let text = match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ProcessError::NoSuchProcess { pid })
        }
        Err(source) => return Err(ProcessError::Read { pid, source }),
    };
    parse_stat(pid, &text).ok_or(ProcessError::Format { pid })
}

/// `pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
/// cutime cstime priority nice threads itrealvalue starttime …`; `comm` may hold spaces and
/// parentheses, so the fields are counted from the last `)`.
fn parse_stat(pid: u32, text: &str) -> Option<Stat> {
    let (_, rest) = text.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(Stat {
        pid,
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        // starttime is field 22 of the whole line, the 20th after `comm`.
        start_time: fields.get(19)?.parse().ok()?,
    })
}

/// Every process the system lists now (those that vanish while being read are skipped).
pub fn processes() -> Result<Vec<Stat>, ProcessError> {
    if !cfg!(target_os = "linux") {
        return Err(ProcessError::Unsupported);
    }
    let entries =
        std::fs::read_dir("/proc").map_err(|source| ProcessError::Read { pid: 0, source })?;
    Ok(entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| stat(pid).ok())
        .collect())
}

/// A process's working directory.
pub fn cwd(pid: u32) -> Result<PathBuf, ProcessError> {
    if !cfg!(target_os = "linux") {
        return Err(ProcessError::Unsupported);
    }
    std::fs::read_link(format!("/proc/{pid}/cwd")).map_err(|source| match source.kind() {
        std::io::ErrorKind::NotFound => ProcessError::NoSuchProcess { pid },
        _ => ProcessError::Read { pid, source },
    })
}

/// Whether a live (not zombie) member of process group `pgid` has its working directory inside
/// `dir`: how a new driver recognises the children an earlier, killed one left running in a
/// worktree. `false` where processes cannot be inspected.
pub fn group_works_in(pgid: u32, dir: &Path) -> bool {
    processes().is_ok_and(|all| {
        all.iter()
            .filter(|p| p.pgrp == pgid && !p.is_zombie())
            .any(|p| cwd(p.pid).is_ok_and(|c| c.starts_with(dir)))
    })
}

/// Whether `pid` is a live process (not a zombie). Says nothing about *which* process it is: for
/// a process recorded earlier, keep its [`Identity`] and ask [`Identity::is_alive`].
pub fn alive(pid: u32) -> bool {
    stat(pid).is_ok_and(|s| !s.is_zombie())
}

/// One process, told apart from any later process that gets the same pid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Identity {
    pub pid: u32,
    /// Clock ticks since boot at which the process started.
    pub start_time: u64,
}

impl Identity {
    /// The identity of the process that has `pid` now.
    pub fn of(pid: u32) -> Result<Identity, ProcessError> {
        let s = stat(pid)?;
        Ok(Identity {
            pid,
            start_time: s.start_time,
        })
    }

    /// Whether this very process still runs: the pid exists, started at the same tick, and is
    /// not a zombie.
    pub fn is_alive(&self) -> bool {
        stat(self.pid).is_ok_and(|s| s.start_time == self.start_time && !s.is_zombie())
    }

    /// Sends `signal` to this process if it is still the one recorded; `false` when it is gone
    /// or its pid now belongs to another process (nothing is sent then).
    pub fn signal(&self, signal: Signal) -> bool {
        if !self.is_alive() {
            return false;
        }
        let Ok(pid) = i32::try_from(self.pid) else {
            return false;
        };
        nix::sys::signal::kill(Pid::from_raw(pid), signal).is_ok()
    }

    /// Sends `signal` to the process group this process leads, if this process is still the one
    /// recorded and still leads its group; `false` otherwise (nothing is sent then).
    pub fn signal_group(&self, signal: Signal) -> bool {
        match stat(self.pid) {
            Ok(s) if s.start_time == self.start_time && s.pgrp == self.pid => {
                kill_group(self.pid, signal)
            }
            Ok(_) | Err(_) => false,
        }
    }
}

/// Sends `signal` to process group `pgid`; `false` when nobody was left to receive it.
pub fn kill_group(pgid: u32, signal: Signal) -> bool {
    match i32::try_from(pgid) {
        Ok(pgid) if pgid > 1 => killpg(Pid::from_raw(pgid), signal).is_ok(),
        // 0 and 1 would mean our own group or init's: never signal those.
        Ok(_) | Err(_) => false,
    }
}

/// Whether any process is left in group `pgid` (zombies included: they still hold the group).
pub fn group_exists(pgid: u32) -> bool {
    match i32::try_from(pgid) {
        Ok(pgid) if pgid > 1 => killpg(Pid::from_raw(pgid), None).is_ok(),
        Ok(_) | Err(_) => false,
    }
}

/// Owns the process group of a child started with `process_group(0)` (so its pgid is its pid).
/// Dropped while armed, it SIGKILLs the group.
///
/// A child started through [`guard::guarded`] is a guard process that leads the group; the
/// guard's [`guard::Link`] is kept here, and SIGKILL then means "close the link": the guard kills
/// the program's group and every descendant that escaped it, then exits (a SIGKILL to the
/// guard itself would stop it from doing so).
#[derive(Debug)]
pub struct GroupGuard {
    pgid: Option<u32>,
    link: guard::Link,
    /// A guard process leads the group: it is never sent SIGKILL (that would stop it from
    /// killing what it guards), only told through the link.
    guarded: bool,
}

impl GroupGuard {
    /// A guard for the group led by `pid`; `None` (a child that has already been reaped) guards
    /// nothing.
    pub fn new(pid: Option<u32>) -> Self {
        GroupGuard::with_link(pid, guard::Link::default())
    }

    /// A guard for the group led by `pid`, a guard process on the other end of `link`.
    pub fn with_link(pid: Option<u32>, mut link: guard::Link) -> Self {
        link.started();
        GroupGuard {
            pgid: pid.filter(|p| *p > 1),
            guarded: link.is_guarded(),
            link,
        }
    }

    /// The guarded group, while armed.
    pub fn pgid(&self) -> Option<u32> {
        self.pgid
    }

    /// Sends `signal` to the group (ESRCH, nobody left, is ignored: it is the normal case late in
    /// a run).
    pub fn signal(&mut self, signal: Signal) {
        if signal == Signal::SIGKILL && self.guarded {
            self.link.kill();
        } else if let Some(pgid) = self.pgid {
            kill_group(pgid, signal);
        }
    }

    /// Whether a guard process leads the group (it kills what the program leaves itself).
    pub fn is_guarded(&self) -> bool {
        self.guarded
    }

    /// Whether some process is still in the group.
    pub fn alive(&self) -> bool {
        self.pgid.is_some_and(group_exists)
    }

    /// SIGKILLs what is left of the group and disarms the guard.
    pub fn sweep(&mut self) {
        self.link.kill();
        if let Some(pgid) = self.pgid.take() {
            kill_group(pgid, Signal::SIGKILL);
        }
    }

    /// Stops guarding without signalling (the group is someone else's to end now). A guard
    /// process on the link still ends everything when this process exits.
    pub fn disarm(&mut self) {
        self.pgid = None;
        std::mem::forget(std::mem::take(&mut self.link));
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        // A guard process finishes the job itself once its link closes; killing it now would
        // stop it half-way.
        self.link.kill();
        if !self.guarded {
            self.signal(Signal::SIGKILL);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use pretty_assertions::assert_eq;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};

    /// The calling thread's nice value, field 19 of `/proc/thread-self/stat`.
    fn own_nice() -> i64 {
        let text = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        let (_, rest) = text.rsplit_once(')').unwrap();
        rest.split_whitespace().nth(16).unwrap().parse().unwrap()
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_lowered_thread_runs_10_nice_steps_lower_and_the_others_keep_theirs() {
        let before = own_nice();
        let lowered = std::thread::spawn(|| {
            lower_this_thread();
            own_nice()
        })
        .join()
        .unwrap();
        assert_eq!(lowered, (before + 10).min(19));
        assert_eq!(own_nice(), before, "the calling thread keeps its priority");
        let sibling = std::thread::spawn(own_nice).join().unwrap();
        assert_eq!(
            sibling, before,
            "a thread started later keeps the process's priority"
        );
    }

    #[test]
    fn stat_parses_names_with_spaces_and_parentheses() {
        let line =
            "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 99 0 0 0 1 2 0 0 20 0 1 0 123456 1000 10";
        assert_eq!(
            parse_stat(4242, line),
            Some(Stat {
                pid: 4242,
                state: 'S',
                ppid: 1,
                pgrp: 4242,
                start_time: 123456
            })
        );
        assert_eq!(parse_stat(1, "1 (x) S 0"), None);
    }

    #[test]
    fn own_process_has_an_identity_that_is_alive() {
        let me = Identity::of(std::process::id()).unwrap();
        assert!(me.is_alive());
        let reused = Identity {
            start_time: me.start_time + 1,
            ..me
        };
        assert!(
            !reused.is_alive(),
            "a different start time is another process"
        );
        assert!(!reused.signal(Signal::SIGTERM));
        assert!(matches!(
            Identity::of(u32::MAX - 1),
            Err(ProcessError::NoSuchProcess { .. })
        ));
    }

    #[test]
    fn guard_kills_the_whole_group_on_drop() {
        // A shell that starts a grandchild in the same group, then waits.
        let mut child = Command::new("sh")
            .args(["-c", "sleep 30 & echo $!; wait"])
            .stdout(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = child.id();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let grandchild: u32 = line.trim().parse().unwrap();
        let grandchild_id = Identity::of(grandchild).unwrap();
        assert_eq!(stat(grandchild).unwrap().pgrp, pid);
        let guard = GroupGuard::new(Some(pid));
        assert!(guard.alive());
        drop(guard);
        child.wait().unwrap();
        // The grandchild's parent is gone; whoever reaps it, it must not be running.
        let mut gone = false;
        for _ in 0..2000 {
            if !grandchild_id.is_alive() {
                gone = true;
                break;
            }
            std::thread::yield_now();
        }
        assert!(gone, "the grandchild survived the group kill");
    }

    #[test]
    fn disarmed_guard_leaves_the_group_alone() {
        let mut child = Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let mut guard = GroupGuard::new(Some(child.id()));
        guard.disarm();
        drop(guard);
        let id = Identity::of(child.id()).unwrap();
        assert!(id.is_alive());
        assert!(id.signal_group(Signal::SIGKILL));
        child.wait().unwrap();
        assert!(!id.is_alive());
        assert!(!alive(child.id()) || Identity::of(child.id()).unwrap() != id);
    }

    #[test]
    fn never_signals_init_or_own_group() {
        assert!(!kill_group(0, Signal::SIGCONT));
        assert!(!kill_group(1, Signal::SIGCONT));
        assert!(GroupGuard::new(Some(1)).pgid().is_none());
    }

    #[test]
    fn processes_lists_this_one_and_cwd_reads_it() {
        let me = std::process::id();
        assert!(processes().unwrap().iter().any(|s| s.pid == me));
        assert_eq!(
            cwd(me).unwrap(),
            std::env::current_dir().unwrap().canonicalize().unwrap()
        );
    }
}
