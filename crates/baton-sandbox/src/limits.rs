//! How many processes and how much memory one confined command may use
//! (`sandbox.max_processes`, `sandbox.max_memory`).
//!
//! Two mechanisms, the first that this machine allows:
//! - **cgroup v1** (root with the `pids` and `memory` hierarchies writable): each command gets a
//!   cgroup of its own under baton's (`…/baton/PID-SECS-N`), `pids.max` and
//!   `memory.limit_in_bytes` set, which the command joins (its `tasks` file, while it has one
//!   thread) before anything else runs. The limit
//!   counts everything the command starts, and memory beyond it is reclaimed or the command
//!   killed by the kernel. An empty cgroup older than a minute is removed by the next command.
//! - **rlimits** otherwise: `RLIMIT_NPROC` (the user's processes at baton's start plus the limit;
//!   the kernel does not apply it to root) and `RLIMIT_DATA` (each process's data, a process
//!   going over it gets `ENOMEM`).
//!
//! `baton doctor` says which applies ([`mechanism`]).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// How many processes one command may run at once when `sandbox.max_processes` is not set.
pub const DEFAULT_MAX_PROCESSES: u64 = 4096;

/// An empty command cgroup older than this is removed.
const STALE_SECS: u64 = 60;

/// What the confined child applies to itself before anything else.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Applied {
    /// `tasks` files the command joins (its pids and memory cgroups).
    #[serde(default)]
    pub join: Vec<PathBuf>,
    /// `RLIMIT_NPROC` to set (no pids cgroup).
    #[serde(default)]
    pub nproc: Option<u64>,
    /// `RLIMIT_DATA` to set (no memory cgroup).
    #[serde(default)]
    pub data: Option<u64>,
}

/// The machine's memory, from `/proc/meminfo`.
fn mem_total() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// `sandbox.max_memory` when it is not set: half of the machine's memory (4 GiB where it cannot
/// be read).
pub fn default_max_memory() -> u64 {
    static HALF: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *HALF.get_or_init(|| mem_total().map_or(4 << 30, |m| m / 2))
}

/// The folder of `controller`'s v1 hierarchy this process is in, when it is mounted (asked
/// once: a process does not move between cgroups on its own).
fn own_v1(controller: &'static str) -> Option<PathBuf> {
    static FOUND: std::sync::Mutex<Vec<(&'static str, Option<PathBuf>)>> =
        std::sync::Mutex::new(Vec::new());
    let mut found = FOUND
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, dir)) = found.iter().find(|(c, _)| *c == controller) {
        return dir.clone();
    }
    let dir = find_v1(controller);
    found.push((controller, dir.clone()));
    dir
}

fn find_v1(controller: &str) -> Option<PathBuf> {
    let mount = Path::new("/sys/fs/cgroup").join(controller);
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = text.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, names, path) = (parts.next()?, parts.next()?, parts.next()?);
        names.split(',').any(|n| n == controller).then_some(path)
    })?;
    let dir = mount.join(path.trim_start_matches('/'));
    dir.join("cgroup.procs").is_file().then_some(dir)
}

fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Which mechanism applies here, for `baton doctor`.
pub fn mechanism() -> String {
    if is_root() && own_v1("pids").is_some() && own_v1("memory").is_some() {
        "cgroup v1 (pids and memory, one cgroup per command)".into()
    } else if is_root() {
        "rlimits: RLIMIT_DATA for memory; no process limit (root is exempt from RLIMIT_NPROC and \
         no writable cgroup v1 pids hierarchy was found)"
            .into()
    } else {
        "rlimits (RLIMIT_NPROC over the user's processes, RLIMIT_DATA)".into()
    }
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Removes the empty command cgroups under `base` older than [`STALE_SECS`] (a cgroup that
/// still holds a process cannot be removed; one just made is too young to be).
fn sweep(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    let now = now_secs();
    for e in entries.flatten() {
        let name = e.file_name();
        let secs = name
            .to_str()
            .and_then(|n| n.split('-').nth(1))
            .and_then(|s| s.parse::<u64>().ok());
        if secs.is_some_and(|s| s + STALE_SECS < now) {
            let _ = std::fs::remove_dir(e.path());
        }
    }
}

/// A new cgroup for one command under `controller`'s hierarchy, with `file` set to `value`;
/// its `tasks` file. The command joins through `tasks`, not `cgroup.procs`: it writes itself
/// there right after the fork, while it has one thread, so moving the thread moves the process,
/// and the kernel then skips the global lock a whole-process move takes (one RCU grace period:
/// 7.7 ms median against 0.08 ms on this machine's 6.18 kernel, once per command).
fn command_cgroup(controller: &'static str, file: &str, value: u64) -> Option<PathBuf> {
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    static SWEPT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let base = own_v1(controller)?.join("baton");
    std::fs::create_dir_all(&base).ok()?;
    let now = now_secs();
    if SWEPT.swap(now, std::sync::atomic::Ordering::Relaxed) + STALE_SECS < now {
        sweep(&base);
    }
    let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = base.join(format!("{}-{now}-{n}", std::process::id()));
    std::fs::create_dir(&dir).ok()?;
    if std::fs::write(dir.join(file), value.to_string()).is_err() {
        let _ = std::fs::remove_dir(&dir);
        return None;
    }
    Some(dir.join("tasks"))
}

/// The user's processes when first asked (`RLIMIT_NPROC` counts them all).
fn user_processes() -> u64 {
    use std::os::unix::fs::MetadataExt as _;
    static COUNT: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *COUNT.get_or_init(|| {
        // SAFETY: getuid cannot fail.
        let me = unsafe { libc::getuid() };
        std::fs::read_dir("/proc").map_or(0, |entries| {
            entries
                .flatten()
                .filter(|e| {
                    e.file_name()
                        .to_str()
                        .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
                })
                .filter(|e| e.metadata().is_ok_and(|m| m.uid() == me))
                .count() as u64
        })
    })
}

/// What a command limited to `max_processes` and `max_memory` bytes applies (see the module).
pub fn prepare(max_processes: u64, max_memory: u64) -> Applied {
    let mut applied = Applied::default();
    if is_root() {
        // Without one, root has no process limit: RLIMIT_NPROC does not apply to it.
        applied
            .join
            .extend(command_cgroup("pids", "pids.max", max_processes));
        match command_cgroup("memory", "memory.limit_in_bytes", max_memory) {
            Some(procs) => applied.join.push(procs),
            None => applied.data = Some(max_memory),
        }
    } else {
        applied.nproc = Some(user_processes() + max_processes);
        applied.data = Some(max_memory);
    }
    applied
}
