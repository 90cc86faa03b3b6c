//! The confinement on Linux, applied in the child between `fork` and `exec`:
//!
//! 1. a **mount namespace** of its own (through a user namespace when baton lacks
//!    `CAP_SYS_ADMIN`), in which the whole file system is read-only except the writable roots,
//!    the protected paths inside them are bound read-only again, and the hidden paths are covered
//!    (an empty read-only tmpfs over a folder, `/dev/null` over a file);
//! 2. **Landlock** write rules (and TCP rules, and signal scoping) as the second, independent
//!    layer;
//! 3. a **seccomp** filter (devices, mounts, host-wide settings, and the network when it is off);
//! 4. **no capabilities**: the bounding, ambient, effective, permitted and inheritable sets are
//!    cleared, so even a command run as root cannot read another process's memory or environment,
//!    create device nodes or change host settings.
//!
//! Everything the hook needs is allocated before the fork: the hook makes system calls only.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use landlock::{
    Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope, ABI,
};

use super::{Namespace, SandboxError, Spec};

#[derive(Debug)]
pub(super) struct Prepared {
    ruleset: RulesetCreated,
    filter: Vec<libc::sock_filter>,
    mounts: Mounts,
    limits: Limits,
}

/// The process and memory limits, as C strings and numbers made before the fork.
#[derive(Debug)]
struct Limits {
    /// `tasks` files to join (the child has one thread when it writes itself there).
    join: Vec<CString>,
    nproc: Option<u64>,
    data: Option<u64>,
}

/// Joins the command's cgroups and sets its rlimits: before anything else, while `/sys` is still
/// writable and before the capabilities go.
fn apply_limits(l: &Limits) -> std::io::Result<()> {
    for tasks in &l.join {
        write_file(tasks.as_bytes_with_nul(), b"0")?;
    }
    for (resource, value) in [(libc::RLIMIT_NPROC, l.nproc), (libc::RLIMIT_DATA, l.data)] {
        if let Some(v) = value {
            let lim = libc::rlimit {
                rlim_cur: v,
                rlim_max: v,
            };
            // SAFETY: setrlimit reads the struct.
            check(unsafe { libc::setrlimit(resource, &lim) })?;
        }
    }
    Ok(())
}

/// The mount namespace plan, as C strings made before the fork.
#[derive(Debug)]
struct Mounts {
    namespace: Namespace,
    /// `uid_map` and `gid_map` lines for a user namespace.
    uid_map: CString,
    gid_map: CString,
    writable: Vec<CString>,
    /// Writable roots that lie under a protected path: bound writable again after it.
    writable_again: Vec<CString>,
    /// Folders bound onto themselves (a root's `.git`): a mount point cannot be renamed,
    /// removed or replaced.
    pinned: Vec<CString>,
    protected: Vec<CString>,
    /// Protected paths inside a folder of `writable_again`: read-only again after it.
    protected_again: Vec<CString>,
    hidden_dirs: Vec<CString>,
    hidden_files: Vec<CString>,
}

fn c_path(p: &Path) -> Result<CString, SandboxError> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| SandboxError::Root {
        path: p.to_path_buf(),
        message: "the path holds a NUL byte".into(),
    })
}

fn c_paths<'a>(paths: impl IntoIterator<Item = &'a PathBuf>) -> Result<Vec<CString>, SandboxError> {
    paths.into_iter().map(|p| c_path(p)).collect()
}

fn abi_of(v: i32) -> ABI {
    match v {
        1 => ABI::V1,
        2 => ABI::V2,
        3 => ABI::V3,
        4 => ABI::V4,
        5 => ABI::V5,
        // What baton asks for is all in ABI 6; later ABIs add logging only.
        _ => ABI::V6,
    }
}

pub(super) fn prepare(spec: &Spec) -> Result<Prepared, SandboxError> {
    let abi = abi_of(spec.landlock_abi);
    let rules = |e: landlock::RulesetError| SandboxError::Rules(e.to_string());
    let write = AccessFs::from_write(abi);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(write)
        .map_err(rules)?;
    if !spec.network && spec.landlock_abi >= 4 {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(abi))
            .map_err(rules)?;
    }
    if spec.landlock_abi >= 6 {
        ruleset = ruleset.scope(Scope::Signal).map_err(rules)?;
        if !spec.network {
            ruleset = ruleset.scope(Scope::AbstractUnixSocket).map_err(rules)?;
        }
    }
    let mut created = ruleset.create().map_err(rules)?;
    for path in &spec.writable {
        let fd = PathFd::new(path).map_err(|e| SandboxError::Root {
            path: path.clone(),
            message: e.to_string(),
        })?;
        let access = if path.is_dir() {
            write
        } else {
            write & AccessFs::from_file(abi)
        };
        created = created
            .add_rule(PathBeneath::new(fd, access))
            .map_err(rules)?;
    }
    // SAFETY: getuid and getgid cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let under_protected = |w: &PathBuf| spec.protected.iter().any(|p| w != p && w.starts_with(p));
    let again: Vec<&PathBuf> = spec
        .writable
        .iter()
        .filter(|w| under_protected(w))
        .collect();
    let under_again = |p: &PathBuf| again.iter().any(|w| p != *w && p.starts_with(w));
    let (hidden_dirs, hidden_files): (Vec<&PathBuf>, Vec<&PathBuf>) =
        spec.hidden.iter().partition(|p| p.is_dir());
    let mounts = Mounts {
        namespace: spec.namespace,
        uid_map: CString::new(format!("{uid} {uid} 1\n")).unwrap_or_default(),
        gid_map: CString::new(format!("{gid} {gid} 1\n")).unwrap_or_default(),
        writable: c_paths(spec.writable.iter().filter(|w| w.is_dir() || w.is_file()))?,
        writable_again: c_paths(again.iter().copied())?,
        pinned: c_paths(&spec.pinned)?,
        protected: c_paths(&spec.protected)?,
        protected_again: c_paths(spec.protected.iter().filter(|p| under_again(p)))?,
        hidden_dirs: c_paths(hidden_dirs)?,
        hidden_files: c_paths(hidden_files)?,
    };
    Ok(Prepared {
        ruleset: created,
        filter: super::seccomp::filter(spec.network, spec.unix_sockets),
        mounts,
        limits: Limits {
            join: c_paths(&spec.limits.join)?,
            nproc: spec.limits.nproc,
            data: spec.limits.data,
        },
    })
}

/// Makes `cmd`'s child confine itself. `cwd` is the folder it must work in: the child changes
/// to it again once its mounts are in place (the old working directory points at the mount
/// that was there before).
pub(super) fn install(prepared: Prepared, cmd: &mut std::process::Command, cwd: CString) {
    let mut ruleset = Some(prepared.ruleset);
    let filter = prepared.filter;
    let mounts = prepared.mounts;
    let limits = prepared.limits;
    let hook = move || -> std::io::Result<()> {
        // Runs in the child after fork: only system calls on memory prepared before it.
        let Some(ruleset) = ruleset.take() else {
            return Err(std::io::Error::from_raw_os_error(libc::EPERM));
        };
        apply_limits(&limits)?;
        enter_namespace(&mounts)?;
        check(unsafe { libc::chdir(cwd.as_ptr()) })?;
        match ruleset.restrict_self() {
            Ok(status) if status.ruleset == RulesetStatus::FullyEnforced => {}
            Ok(_) | Err(_) => return Err(std::io::Error::from_raw_os_error(libc::EPERM)),
        }
        super::seccomp::apply(&filter)?;
        drop_capabilities()
    };
    // SAFETY: the hook makes only async-signal-safe system calls (unshare, open, write, mount,
    // mount_setattr, chdir, landlock_restrict_self, prctl, capset) on memory prepared before
    // the fork.
    unsafe {
        cmd.pre_exec(hook);
    }
}

fn check(rc: libc::c_int) -> std::io::Result<()> {
    if rc < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;

/// Sets (`ro` true) or clears the read-only flag of the mount at `path` and every mount below it.
fn set_read_only(path: &CString, ro: bool) -> std::io::Result<()> {
    let attr = MountAttr {
        attr_set: if ro { MOUNT_ATTR_RDONLY } else { 0 },
        attr_clr: if ro { 0 } else { MOUNT_ATTR_RDONLY },
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: mount_setattr reads `size_of::<MountAttr>()` bytes of `attr` and the C string.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            libc::AT_RECURSIVE as libc::c_uint,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if rc < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Binds `path` onto itself (with what is mounted below it), so its flags can differ from those
/// of the mount it is on.
fn bind_self(path: &CString) -> std::io::Result<()> {
    // SAFETY: mount with C strings and a null data pointer.
    check(unsafe {
        libc::mount(
            path.as_ptr(),
            path.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND | libc::MS_REC,
            std::ptr::null(),
        )
    })
}

fn write_file(path: &[u8], data: &[u8]) -> std::io::Result<()> {
    // SAFETY: open, write and close on a NUL-terminated path and a byte buffer.
    unsafe {
        let fd = libc::open(path.as_ptr().cast(), libc::O_WRONLY | libc::O_CLOEXEC);
        check(fd)?;
        let n = libc::write(fd, data.as_ptr().cast(), data.len());
        libc::close(fd);
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

fn enter_namespace(m: &Mounts) -> std::io::Result<()> {
    let root = c"/";
    // SAFETY: unshare and mount with constant or prepared C strings.
    unsafe {
        match m.namespace {
            Namespace::Mount => check(libc::unshare(libc::CLONE_NEWNS))?,
            Namespace::User => {
                check(libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS))?;
                write_file(b"/proc/self/setgroups\0", b"deny")?;
                write_file(b"/proc/self/uid_map\0", m.uid_map.as_bytes())?;
                write_file(b"/proc/self/gid_map\0", m.gid_map.as_bytes())?;
            }
        }
        // Nothing done here may reach the host's mounts.
        check(libc::mount(
            std::ptr::null(),
            root.as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ))?;
    }
    set_read_only(&CString::from(root), true)?;
    // A path can vanish between the plan and this child (another child's worktree finalized
    // meanwhile): what is gone needs no mount.
    let gone_ok = |r: std::io::Result<()>| match r {
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(()),
        other => other,
    };
    for w in &m.writable {
        gone_ok(bind_self(w).and_then(|()| set_read_only(w, false)))?;
    }
    for g in &m.pinned {
        gone_ok(bind_self(g))?;
    }
    for p in &m.protected {
        gone_ok(bind_self(p).and_then(|()| set_read_only(p, true)))?;
    }
    for w in &m.writable_again {
        gone_ok(bind_self(w).and_then(|()| set_read_only(w, false)))?;
    }
    for p in &m.protected_again {
        gone_ok(bind_self(p).and_then(|()| set_read_only(p, true)))?;
    }
    let tmpfs = c"tmpfs";
    let empty = c"size=4k,mode=0500";
    for d in &m.hidden_dirs {
        // SAFETY: mount with C strings.
        gone_ok(check(unsafe {
            libc::mount(
                tmpfs.as_ptr(),
                d.as_ptr(),
                tmpfs.as_ptr(),
                libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                empty.as_ptr().cast(),
            )
        }))?;
    }
    let null = c"/dev/null";
    for f in &m.hidden_files {
        // SAFETY: mount with C strings.
        gone_ok(
            check(unsafe {
                libc::mount(
                    null.as_ptr(),
                    f.as_ptr(),
                    std::ptr::null(),
                    libc::MS_BIND,
                    std::ptr::null(),
                )
            })
            .and_then(|()| set_read_only(f, true)),
        )?;
    }
    Ok(())
}

/// `_LINUX_CAPABILITY_VERSION_3`.
const CAP_V3: u32 = 0x2008_0522;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Clears every capability set of this process (the bounding set needs `CAP_SETPCAP`, which a
/// process without capabilities does not need to drop anything from).
fn drop_capabilities() -> std::io::Result<()> {
    // SAFETY: prctl with integers; capset reads the header and two data structs.
    unsafe {
        for cap in 0..64 {
            // EINVAL past the last capability the kernel knows; EPERM without CAP_SETPCAP.
            libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0);
        }
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        );
        let mut header = CapHeader {
            version: CAP_V3,
            pid: 0,
        };
        let data = [CapData {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        let rc = libc::syscall(
            libc::SYS_capset,
            &mut header as *mut CapHeader,
            data.as_ptr(),
        );
        if rc < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Whether this process may create a mount namespace directly (it has `CAP_SYS_ADMIN`).
pub(super) fn has_sys_admin() -> bool {
    const CAP_SYS_ADMIN: u32 = 21;
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return false;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .is_some_and(|caps| caps & (1 << CAP_SYS_ADMIN) != 0)
}

/// Whether unprivileged user namespaces look available (the knobs some distributions add).
pub(super) fn user_namespaces() -> Result<(), String> {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
    };
    if read("/proc/sys/user/max_user_namespaces").as_deref() == Some("0") {
        return Err("user.max_user_namespaces is 0".into());
    }
    if read("/proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0") {
        return Err("kernel.unprivileged_userns_clone is 0".into());
    }
    if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").as_deref() == Some("1") {
        return Err("kernel.apparmor_restrict_unprivileged_userns is 1".into());
    }
    Ok(())
}
