//! Confinement of the commands baton runs for a model (`bash`) and, when asked, of Flow's
//! validation commands.
//!
//! A [`Policy`] says what a command may write and whether it may reach the network;
//! [`Policy::prepare`] turns it into a [`Confinement`] for one workspace, and
//! [`Confinement::install`] makes a [`std::process::Command`] apply it in the child, between
//! `fork` and `exec`, so the shell and everything it starts inherit it and cannot lift it.
//!
//! On Linux the confinement is:
//! - **Landlock** (filesystem): reads stay open everywhere; every kind of write (create, write,
//!   truncate, remove, rename, link, device ioctl) is refused outside the writable roots —
//!   the workspace (in `workspace-write`), the session's temp dir, `/dev/null` and
//!   `sandbox.writable_roots`. On kernels with Landlock ABI 6 a confined command can also not
//!   signal processes outside its sandbox (baton, the user's other programs).
//! - **Network off** (unless `sandbox.network = true`): Landlock's TCP bind/connect rules where
//!   the ABI has them (4 and later), and always a seccomp filter that refuses to create
//!   `AF_INET`, `AF_INET6` and `AF_PACKET` sockets (so UDP too) and io_uring instances, with
//!   `EACCES`. Unix sockets stay usable.
//!
//! Nothing is ever run unconfined by accident: when the kernel has no Landlock, [`Policy::prepare`]
//! fails with an error naming the config key to change ([`SandboxError::Unavailable`]).
//! `danger-full-access` is the only way to run without confinement.
//!
//! The environment variable `BATON_SANDBOX_ABI` may lower the Landlock ABI baton believes the
//! kernel has (`0` simulates a kernel without Landlock); it exists for tests and cannot raise it.

use std::path::{Path, PathBuf};

pub use baton_protocol::sandbox::SandboxMode;

/// The environment variable that lowers the Landlock ABI baton uses (tests simulate a kernel
/// without Landlock with `0`).
pub const ABI_OVERRIDE_VAR: &str = "BATON_SANDBOX_ABI";

/// What one confined command may do.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Policy {
    pub mode: SandboxMode,
    /// Folders the command may write besides the workspace and the temp dir. Missing folders
    /// are skipped.
    pub writable_roots: Vec<PathBuf>,
    /// Whether the command may open network sockets.
    pub network: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The kernel cannot confine commands the way the mode asks.
    #[error(
        "the `{mode}` sandbox needs Landlock, which this system does not provide ({why}); nothing \
         was run. To run commands without confinement, set `sandbox.mode = \"danger-full-access\"` \
         in .baton/config.toml or `sandbox: danger-full-access` in the role file"
    )]
    Unavailable { mode: SandboxMode, why: String },
    /// A writable root exists but cannot be opened.
    #[error("sandbox: cannot open the writable folder {path}: {message}")]
    Root { path: PathBuf, message: String },
    /// The Landlock ruleset could not be built.
    #[error("sandbox: cannot build the Landlock rules: {0}")]
    Rules(String),
}

/// What the kernel offers, as baton sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Support {
    /// The Landlock ABI version (0: none), after `BATON_SANDBOX_ABI`.
    pub landlock_abi: i32,
}

impl Support {
    /// Asks the kernel (once per call; the answer is a single syscall).
    pub fn detect() -> Support {
        let kernel = kernel_abi();
        let lowered = std::env::var(ABI_OVERRIDE_VAR)
            .ok()
            .and_then(|v| v.trim().parse::<i32>().ok())
            .map_or(kernel, |v| v.clamp(0, kernel));
        Support {
            landlock_abi: lowered,
        }
    }
}

#[cfg(target_os = "linux")]
fn kernel_abi() -> i32 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: landlock_create_ruleset with a null attribute, size 0 and the VERSION flag only
    // returns the ABI version (or -1 with errno); it touches no memory.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    i32::try_from(v).unwrap_or(0).max(0)
}

#[cfg(not(target_os = "linux"))]
fn kernel_abi() -> i32 {
    0
}

impl Policy {
    /// The policy of the config's `[sandbox]` table with `mode` (chosen by the caller: a flag, the
    /// role's `sandbox`, `sandbox.mode`, in that order). `~/` in `writable_roots` is the home
    /// folder; a relative root is taken relative to `base` (the project root).
    pub fn from_config(
        cfg: &baton_protocol::config::SandboxConfig,
        mode: SandboxMode,
        base: &Path,
    ) -> Policy {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let writable_roots = cfg
            .writable_roots
            .iter()
            .map(|r| match (r.strip_prefix("~/"), &home) {
                (Some(rest), Some(home)) => home.join(rest),
                _ if r == "~" => home.clone().unwrap_or_else(|| PathBuf::from(r)),
                _ => base.join(r),
            })
            .collect();
        Policy {
            mode,
            writable_roots,
            network: cfg.network.unwrap_or(false),
        }
    }

    /// The mode that applies: the first of `flag`, `role` and `config` that is set, else
    /// `workspace-write`.
    pub fn choose_mode(
        flag: Option<SandboxMode>,
        role: Option<SandboxMode>,
        config: Option<SandboxMode>,
    ) -> SandboxMode {
        flag.or(role).or(config).unwrap_or_default()
    }

    /// Whether commands under this policy are confined at all.
    pub fn is_confined(&self) -> bool {
        self.mode != SandboxMode::DangerFullAccess
    }

    /// The folders a command may write under this policy for `workspace`, with `tmp` as its temp
    /// dir: what the session header lists. Empty for `danger-full-access` (everything).
    pub fn writable(&self, workspace: &Path, tmp: Option<&Path>) -> Vec<PathBuf> {
        let mut out = Vec::new();
        match self.mode {
            SandboxMode::DangerFullAccess => return out,
            SandboxMode::WorkspaceWrite => out.push(workspace.to_path_buf()),
            SandboxMode::ReadOnly => {}
        }
        out.extend(tmp.map(Path::to_path_buf));
        if self.mode == SandboxMode::WorkspaceWrite {
            // A linked worktree keeps its index, refs and objects in the repository's common
            // git dir, outside the worktree: committing there is part of working in it.
            if let Some(common) =
                baton_git::common_dir_of(workspace).map(|c| std::fs::canonicalize(&c).unwrap_or(c))
            {
                if !common.starts_with(workspace) {
                    out.push(common);
                }
            }
            out.extend(self.writable_roots.iter().filter(|p| p.exists()).cloned());
        }
        out.push(PathBuf::from("/dev/null"));
        out
    }

    /// Builds the confinement of a command working in `workspace` whose temp dir is `tmp`.
    /// Fails closed when the kernel cannot enforce the mode.
    pub fn prepare(
        &self,
        workspace: &Path,
        tmp: Option<&Path>,
    ) -> Result<Confinement, SandboxError> {
        if !self.is_confined() {
            return Ok(Confinement { inner: None });
        }
        self.prepare_with(Support::detect(), workspace, tmp)
    }

    fn prepare_with(
        &self,
        support: Support,
        workspace: &Path,
        tmp: Option<&Path>,
    ) -> Result<Confinement, SandboxError> {
        if support.landlock_abi < 1 {
            let why = if kernel_abi() < 1 {
                "the kernel has no Landlock, or it is not enabled at boot".to_string()
            } else {
                format!("{ABI_OVERRIDE_VAR} lowers the Landlock ABI to 0")
            };
            return Err(SandboxError::Unavailable {
                mode: self.mode,
                why,
            });
        }
        let writable = self.writable(workspace, tmp);
        imp::prepare(support, &writable, self.network).map(|p| Confinement { inner: Some(p) })
    }
}

/// A policy ready to be applied to a command.
#[derive(Debug)]
pub struct Confinement {
    inner: Option<imp::Prepared>,
}

impl Confinement {
    /// No confinement (`danger-full-access`).
    pub fn none() -> Confinement {
        Confinement { inner: None }
    }

    /// Whether installing this does anything.
    pub fn is_confined(&self) -> bool {
        self.inner.is_some()
    }

    /// Makes `cmd`'s child confine itself between `fork` and `exec`. A child that cannot
    /// confine itself does not run: the spawn fails with `EPERM`.
    pub fn install(self, cmd: &mut std::process::Command) {
        if let Some(prepared) = self.inner {
            imp::install(prepared, cmd);
        }
    }
}

#[cfg(target_os = "linux")]
mod imp {
    use std::os::unix::process::CommandExt;
    use std::path::PathBuf;

    use landlock::{
        Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
        RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope, ABI,
    };

    use super::{SandboxError, Support};

    #[derive(Debug)]
    pub(super) struct Prepared {
        ruleset: RulesetCreated,
        network_filter: Option<Vec<libc::sock_filter>>,
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

    pub(super) fn prepare(
        support: Support,
        writable: &[PathBuf],
        network: bool,
    ) -> Result<Prepared, SandboxError> {
        let abi = abi_of(support.landlock_abi);
        let rules = |e: landlock::RulesetError| SandboxError::Rules(e.to_string());
        let write = AccessFs::from_write(abi);
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(write)
            .map_err(rules)?;
        if !network && support.landlock_abi >= 4 {
            ruleset = ruleset
                .handle_access(AccessNet::from_all(abi))
                .map_err(rules)?;
        }
        if support.landlock_abi >= 6 {
            ruleset = ruleset.scope(Scope::Signal).map_err(rules)?;
            if !network {
                ruleset = ruleset.scope(Scope::AbstractUnixSocket).map_err(rules)?;
            }
        }
        let mut created = ruleset.create().map_err(rules)?;
        for path in writable {
            let fd = match PathFd::new(path) {
                Ok(fd) => fd,
                Err(e) => {
                    return Err(SandboxError::Root {
                        path: path.clone(),
                        message: e.to_string(),
                    })
                }
            };
            let access = if path.is_dir() {
                write
            } else {
                write & AccessFs::from_file(abi)
            };
            created = created
                .add_rule(PathBeneath::new(fd, access))
                .map_err(rules)?;
        }
        Ok(Prepared {
            ruleset: created,
            network_filter: (!network).then(super::seccomp::network_filter),
        })
    }

    pub(super) fn install(prepared: Prepared, cmd: &mut std::process::Command) {
        let mut ruleset = Some(prepared.ruleset);
        let filter = prepared.network_filter;
        let hook = move || -> std::io::Result<()> {
            // Runs in the child after fork: only system calls, no allocation.
            let Some(ruleset) = ruleset.take() else {
                return Err(std::io::Error::from_raw_os_error(libc::EPERM));
            };
            match ruleset.restrict_self() {
                Ok(status) if status.ruleset == RulesetStatus::FullyEnforced => {}
                Ok(_) | Err(_) => return Err(std::io::Error::from_raw_os_error(libc::EPERM)),
            }
            if let Some(filter) = &filter {
                super::seccomp::apply(filter)?;
            }
            Ok(())
        };
        // SAFETY: the hook makes only async-signal-safe system calls (landlock_restrict_self,
        // prctl) on memory prepared before the fork.
        unsafe {
            cmd.pre_exec(hook);
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::path::PathBuf;

    use super::{SandboxError, Support};

    #[derive(Debug)]
    pub(super) enum Prepared {}

    pub(super) fn prepare(_: Support, _: &[PathBuf], _: bool) -> Result<Prepared, SandboxError> {
        Err(SandboxError::Rules("sandboxing needs Linux".into()))
    }

    pub(super) fn install(prepared: Prepared, _: &mut std::process::Command) {
        match prepared {}
    }
}

/// The seccomp filter that keeps a command off the network.
#[cfg(target_os = "linux")]
mod seccomp {
    const BPF_LD_W_ABS: u16 = 0x20;
    const BPF_JEQ_K: u16 = 0x15;
    const BPF_JGE_K: u16 = 0x35;
    const BPF_RET_K: u16 = 0x06;
    const RET_ALLOW: u32 = 0x7fff_0000;
    const RET_ERRNO: u32 = 0x0005_0000;
    /// Offsets in `struct seccomp_data`.
    const OFF_NR: u32 = 0;
    const OFF_ARCH: u32 = 4;
    /// The low 32 bits of the first argument (little-endian targets).
    const OFF_ARG0: u32 = 16;

    #[cfg(target_arch = "x86_64")]
    const AUDIT_ARCH: u32 = 0xC000_003E;
    #[cfg(target_arch = "aarch64")]
    const AUDIT_ARCH: u32 = 0xC000_00B7;
    /// System call numbers at or above this are another ABI's (x32 on x86_64).
    const FOREIGN_NR: u32 = 0x4000_0000;

    enum Op {
        Load(u32),
        /// Skip the next instruction when equal.
        SkipIfEq(u32),
        /// Jump to the final `Deny` when equal, else go on.
        DenyIfEq(u32),
        DenyIfAtLeast(u32),
        /// Go on when equal, else jump to the `Allow` before the final `Deny`.
        AllowIfNot(u32),
        Ret(u32),
    }

    fn stmt(code: u16, k: u32) -> libc::sock_filter {
        libc::sock_filter {
            code,
            jt: 0,
            jf: 0,
            k,
        }
    }

    /// Refuses `socket(AF_INET | AF_INET6 | AF_PACKET, …)` and `io_uring_setup` with `EACCES`,
    /// and every system call of a foreign ABI (which could reach the network another way) with
    /// `EPERM`.
    pub(super) fn network_filter() -> Vec<libc::sock_filter> {
        let num = |v: i64| u32::try_from(v).unwrap_or(u32::MAX);
        let family = |f: i32| u32::try_from(f).unwrap_or(u32::MAX);
        let ops = [
            Op::Load(OFF_ARCH),
            Op::SkipIfEq(AUDIT_ARCH),
            Op::Ret(RET_ERRNO | family(libc::EPERM)),
            Op::Load(OFF_NR),
            Op::DenyIfAtLeast(FOREIGN_NR),
            Op::DenyIfEq(num(libc::SYS_io_uring_setup)),
            Op::AllowIfNot(num(libc::SYS_socket)),
            Op::Load(OFF_ARG0),
            Op::DenyIfEq(family(libc::AF_INET)),
            Op::DenyIfEq(family(libc::AF_INET6)),
            Op::DenyIfEq(family(libc::AF_PACKET)),
            Op::Ret(RET_ALLOW),
            Op::Ret(RET_ERRNO | family(libc::EACCES)),
        ];
        let allow_at = ops.len() - 2;
        let deny_at = ops.len() - 1;
        let rel = |from: usize, to: usize| u8::try_from(to - from - 1).unwrap_or(0);
        let jump = |k: u32, jt: u8, jf: u8, code: u16| libc::sock_filter { code, jt, jf, k };
        ops.iter()
            .enumerate()
            .map(|(i, op)| match *op {
                Op::Load(off) => stmt(BPF_LD_W_ABS, off),
                Op::SkipIfEq(k) => jump(k, 1, 0, BPF_JEQ_K),
                Op::DenyIfEq(k) => jump(k, rel(i, deny_at), 0, BPF_JEQ_K),
                Op::DenyIfAtLeast(k) => jump(k, rel(i, deny_at), 0, BPF_JGE_K),
                Op::AllowIfNot(k) => jump(k, 0, rel(i, allow_at), BPF_JEQ_K),
                Op::Ret(k) => stmt(BPF_RET_K, k),
            })
            .collect()
    }

    /// Installs `filter` on the calling thread (no_new_privs first, as seccomp requires).
    pub(super) fn apply(filter: &[libc::sock_filter]) -> std::io::Result<()> {
        let prog = libc::sock_fprog {
            len: u16::try_from(filter.len()).unwrap_or(0),
            filter: filter.as_ptr().cast_mut(),
        };
        // SAFETY: prctl with PR_SET_NO_NEW_PRIVS takes integers; PR_SET_SECCOMP reads the
        // program through the pointer, which stays valid for the call.
        unsafe {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER,
                &prog as *const libc::sock_fprog,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
