//! Confinement of the commands baton runs for a model (`bash`), of command-backend children
//! and of Flow's validation commands.
//!
//! A [`Policy`] says what a command may write, what it may not read and whether it may reach the
//! network; [`Policy::prepare`] turns it into a [`Confinement`] for one workspace: a [`Spec`]
//! with every path resolved. [`Confinement::install`] makes a [`std::process::Command`] apply it
//! in the child, between `fork` and `exec`, so the shell and everything it starts inherit it and
//! cannot lift it; [`Confinement::install_in_guard`] hands the spec to baton's process guard,
//! which applies it to the program it starts, so the guard itself stays outside the sandbox
//! (a confined command cannot signal it).
//!
//! On Linux the confinement is (see `linux.rs`):
//! - a **mount namespace** in which the whole file system is read-only but the writable roots
//!   (the workspace in `workspace-write`, the session's temp dir, `sandbox.writable_roots`, a
//!   linked worktree's common git dir); the **protected paths** inside them (the repository's
//!   `config`, `hooks/`, `info/`, …, and `.baton/`: see [`protect`]) are read-only again; the
//!   **hidden paths** (`sandbox.deny_read`, `api_key_file`s, baton's config folder) read as empty;
//! - **Landlock** (filesystem writes; TCP where the ABI has it; signals and abstract unix
//!   sockets scoped on ABI 6);
//! - **seccomp**: no device nodes, mounts, host-wide settings or kernel modules; no `AF_INET`,
//!   `AF_INET6`, `AF_PACKET` sockets and no io_uring unless `sandbox.network = true`;
//! - **no capabilities**, even for root.
//!
//! Nothing is ever run unconfined by accident: when the kernel has no Landlock, or baton can
//! create no mount namespace, [`Policy::prepare`] fails with an error naming the reason and the
//! opt-out ([`SandboxError::Unavailable`]). `danger-full-access` is the only way to run without
//! confinement.
//!
//! The environment variable `BATON_SANDBOX_ABI` may lower the Landlock ABI baton believes the
//! kernel has (`0` simulates a kernel without Landlock); it exists for tests and cannot raise it.

pub mod limits;
pub mod protect;
pub mod watch;

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

pub use baton_protocol::sandbox::SandboxMode;
use serde::{Deserialize, Serialize};

/// The environment variable that lowers the Landlock ABI baton uses (tests simulate a kernel
/// without Landlock with `0`).
pub const ABI_OVERRIDE_VAR: &str = "BATON_SANDBOX_ABI";

/// The environment variable through which baton hands a [`Spec`] to its process guard.
pub const SPEC_VAR: &str = "BATON_SANDBOX_SPEC";

/// What one confined command may do.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Policy {
    pub mode: SandboxMode,
    /// Folders the command may write besides the workspace and the temp dir. Missing folders
    /// are skipped.
    pub writable_roots: Vec<PathBuf>,
    /// Whether the command may open network sockets.
    pub network: bool,
    /// Files and folders the command may not read (they read as empty). Missing ones are
    /// skipped.
    pub hidden: Vec<PathBuf>,
    /// Unix-domain sockets the command may connect to (`sandbox.unix_sockets`); empty: it may
    /// create no Unix-domain socket.
    pub unix_sockets: Vec<PathBuf>,
    /// How many processes the command may run at once (default
    /// [`limits::DEFAULT_MAX_PROCESSES`]).
    pub max_processes: Option<u64>,
    /// How many bytes of memory it may use (default [`limits::default_max_memory`]).
    pub max_memory: Option<u64>,
}

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The kernel cannot confine commands the way the mode asks.
    #[error(
        "the `{mode}` sandbox needs {needs}, which this system does not provide ({why}); nothing \
         was run. To run commands without confinement, set `sandbox.mode = \"danger-full-access\"` \
         in .baton/config.toml or `sandbox: danger-full-access` in the role file"
    )]
    Unavailable {
        mode: SandboxMode,
        needs: &'static str,
        why: String,
    },
    /// A writable root exists but cannot be opened.
    #[error("sandbox: cannot open the writable folder {path}: {message}")]
    Root { path: PathBuf, message: String },
    /// The Landlock ruleset could not be built.
    #[error("sandbox: cannot build the Landlock rules: {0}")]
    Rules(String),
    /// The repository of the workspace could not be pinned (its `.git` changed since it was).
    #[error("sandbox: {0}")]
    Repository(String),
    /// The spec handed to the guard does not decode.
    #[error("sandbox: the confinement handed to the guard is damaged: {0}")]
    Spec(String),
}

/// How a confined command gets its mount namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Namespace {
    /// baton has `CAP_SYS_ADMIN` (it runs as root): a mount namespace directly.
    Mount,
    /// Through an unprivileged user namespace that maps the user to itself.
    User,
}

/// What the kernel offers, as baton sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Support {
    /// The Landlock ABI version (0: none), after `BATON_SANDBOX_ABI`.
    pub landlock_abi: i32,
    /// How a mount namespace is made, or why none can be.
    pub namespace: Result<Namespace, String>,
}

impl Support {
    /// Asks the kernel (a few cheap reads).
    pub fn detect() -> Support {
        let kernel = kernel_abi();
        let lowered = std::env::var(ABI_OVERRIDE_VAR)
            .ok()
            .and_then(|v| v.trim().parse::<i32>().ok())
            .map_or(kernel, |v| v.clamp(0, kernel));
        // What the process may do does not change while it runs: asked once (two file reads).
        static NAMESPACE: std::sync::OnceLock<Result<Namespace, String>> =
            std::sync::OnceLock::new();
        let namespace = NAMESPACE
            .get_or_init(|| {
                if imp::has_sys_admin() {
                    Ok(Namespace::Mount)
                } else {
                    imp::user_namespaces().map(|()| Namespace::User)
                }
            })
            .clone();
        Support {
            landlock_abi: lowered,
            namespace,
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

/// A confinement with every path resolved: what the child (or the guard) applies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spec {
    pub mode: SandboxMode,
    /// Folders (and files) the command may write.
    pub writable: Vec<PathBuf>,
    /// Paths inside `writable` that stay read-only.
    pub protected: Vec<PathBuf>,
    /// Paths that read as empty.
    pub hidden: Vec<PathBuf>,
    pub network: bool,
    pub landlock_abi: i32,
    pub namespace: Namespace,
    /// Folders bound onto themselves so they cannot be renamed, removed or replaced (each
    /// writable root's `.git`).
    #[serde(default)]
    pub pinned: Vec<PathBuf>,
    /// Whether the command may create Unix-domain sockets (`sandbox.unix_sockets` lists some).
    #[serde(default)]
    pub unix_sockets: bool,
    /// Its process and memory limits, as the child applies them (see [`limits`]).
    #[serde(default)]
    pub limits: limits::Applied,
}

impl Policy {
    /// The policy of the config's `[sandbox]` table with `mode` (chosen by the caller: a flag, the
    /// role's `sandbox`, `sandbox.mode`, in that order). `~/` in `writable_roots` and `deny_read`
    /// is the home folder; a relative root is taken relative to `base` (the project root).
    /// Hidden: `deny_read` (default [`protect::DEFAULT_DENY_READ`]), every provider's
    /// `api_key_file` and baton's user config folder.
    pub fn from_config(
        config: &baton_protocol::config::Config,
        mode: SandboxMode,
        base: &Path,
    ) -> Policy {
        let cfg = &config.sandbox;
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        let expand = |r: &str| protect::expand(r, home.as_deref(), base);
        let writable_roots = cfg.writable_roots.iter().map(|r| expand(r)).collect();
        let mut hidden: Vec<PathBuf> = match &cfg.deny_read {
            Some(list) => list.iter().map(|r| expand(r)).collect(),
            None => protect::DEFAULT_DENY_READ
                .iter()
                .map(|r| expand(r))
                .collect(),
        };
        hidden.extend(
            config
                .providers
                .values()
                .filter_map(|p| p.api_key_file.as_deref())
                .map(expand),
        );
        hidden.extend(protect::user_config_dir(home.as_deref()));
        Policy {
            mode,
            writable_roots,
            network: cfg.network.unwrap_or(false),
            hidden,
            unix_sockets: cfg.unix_sockets.iter().map(|r| expand(r)).collect(),
            max_processes: cfg.max_processes,
            max_memory: cfg.max_memory.map(|m| m.0),
        }
    }

    /// This policy, also hiding `paths` (key files, baton's config folder).
    #[must_use]
    pub fn hiding(mut self, paths: impl IntoIterator<Item = PathBuf>) -> Policy {
        self.hidden.extend(paths);
        self
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
            // git dir, outside the worktree: committing there is part of working in it. Only a
            // worktree both sides agree on: a `.git` file that merely names another
            // repository's git dir widens nothing.
            if let Some((admin, common)) = baton_git::linked_worktree_of(workspace) {
                if !common.starts_with(workspace) {
                    out.push(common);
                    // Its own admin dir (index, HEAD), under the common dir's read-only
                    // `worktrees/`.
                    out.push(admin);
                }
            }
            out.extend(self.writable_roots.iter().filter(|p| p.exists()).cloned());
        }
        out.push(PathBuf::from("/dev/null"));
        out
    }

    /// The paths inside the writable folders that stay read-only (see [`protect`]).
    pub fn protected(&self, workspace: &Path, tmp: Option<&Path>) -> Vec<PathBuf> {
        protected_in_all(&self.writable(workspace, tmp))
    }

    /// Builds the confinement of a command working in `workspace` whose temp dir is `tmp`.
    /// Fails closed when the kernel cannot enforce the mode.
    pub fn prepare(
        &self,
        workspace: &Path,
        tmp: Option<&Path>,
    ) -> Result<Confinement, SandboxError> {
        if !self.is_confined() {
            return Ok(Confinement { spec: None });
        }
        self.spec_with(Support::detect(), workspace, tmp)
            .map(|spec| Confinement { spec: Some(spec) })
    }

    fn spec_with(
        &self,
        support: Support,
        workspace: &Path,
        tmp: Option<&Path>,
    ) -> Result<Spec, SandboxError> {
        if support.landlock_abi < 1 {
            let why = if kernel_abi() < 1 {
                "the kernel has no Landlock, or it is not enabled at boot".to_string()
            } else {
                format!("{ABI_OVERRIDE_VAR} lowers the Landlock ABI to 0")
            };
            return Err(SandboxError::Unavailable {
                mode: self.mode,
                needs: "Landlock",
                why,
            });
        }
        let namespace = support.namespace.map_err(|why| SandboxError::Unavailable {
            mode: self.mode,
            needs: "a mount namespace (root, or unprivileged user namespaces)",
            why,
        })?;
        let writable = self.writable(workspace, tmp);
        for w in writable.iter().filter(|w| w.is_dir()) {
            protect::prepare_root(w);
        }
        // baton's own git in the workspace uses the git dir resolved now, and refuses once
        // `.git` is not what it was (see `baton_git::pin`).
        baton_git::pin::pin(workspace).map_err(|e| SandboxError::Repository(e.to_string()))?;
        let protected = protected_in_all(&writable);
        let hidden = self
            .hidden
            .iter()
            .filter(|h| h.symlink_metadata().is_ok())
            .filter_map(|h| std::fs::canonicalize(h).ok())
            .collect();
        let pinned = writable
            .iter()
            .map(|w| w.join(".git"))
            .filter(|g| g.symlink_metadata().is_ok_and(|m| m.is_dir()))
            .collect();
        Ok(Spec {
            mode: self.mode,
            writable,
            protected,
            hidden,
            network: self.network,
            landlock_abi: support.landlock_abi,
            namespace,
            pinned,
            unix_sockets: !self.unix_sockets.is_empty(),
            limits: limits::prepare(
                self.max_processes.unwrap_or(limits::DEFAULT_MAX_PROCESSES),
                self.max_memory.unwrap_or_else(limits::default_max_memory),
            ),
        })
    }
}

/// The protected paths inside each writable folder of `writable`.
fn protected_in_all(writable: &[PathBuf]) -> Vec<PathBuf> {
    writable
        .iter()
        .filter(|w| w.is_dir())
        .flat_map(|w| protect::protected_in(w))
        .collect()
}

/// A policy ready to be applied to a command.
#[derive(Debug)]
pub struct Confinement {
    spec: Option<Spec>,
}

impl Confinement {
    /// No confinement (`danger-full-access`).
    pub fn none() -> Confinement {
        Confinement { spec: None }
    }

    /// Whether installing this does anything.
    pub fn is_confined(&self) -> bool {
        self.spec.is_some()
    }

    /// The resolved confinement, when there is one.
    pub fn spec(&self) -> Option<&Spec> {
        self.spec.as_ref()
    }

    /// Makes `cmd`'s child confine itself between `fork` and `exec`. A child that cannot
    /// confine itself does not run: the spawn fails with the reason.
    pub fn install(self, cmd: &mut std::process::Command) -> Result<(), SandboxError> {
        let Some(spec) = self.spec else {
            return Ok(());
        };
        let prepared = imp::prepare(&spec)?;
        let cwd = cmd
            .get_current_dir()
            .map(Path::to_path_buf)
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_else(|| PathBuf::from("/"));
        let cwd = CString::new(cwd.as_os_str().as_bytes()).map_err(|_| SandboxError::Root {
            path: cwd.clone(),
            message: "the path holds a NUL byte".into(),
        })?;
        imp::install(prepared, cmd, cwd);
        Ok(())
    }

    /// Hands the confinement to the process guard `cmd` runs (see [`guard_hook`]): the guard
    /// applies it to its program, and stays outside the sandbox itself.
    pub fn install_in_guard(self, cmd: &mut std::process::Command) -> Result<(), SandboxError> {
        if let Some(spec) = self.spec {
            let json =
                serde_json::to_string(&spec).map_err(|e| SandboxError::Spec(e.to_string()))?;
            cmd.env(SPEC_VAR, json);
        }
        Ok(())
    }

    /// [`Confinement::install`] for a plain command, [`Confinement::install_in_guard`] for a
    /// command that is a guard.
    pub fn apply(self, cmd: &mut std::process::Command, guarded: bool) -> Result<(), SandboxError> {
        if guarded {
            self.install_in_guard(cmd)
        } else {
            self.install(cmd)
        }
    }
}

/// What the process guard calls on the command of its program: when baton handed it a
/// confinement ([`SPEC_VAR`]), the program is confined and does not see the variable. Returns
/// whether it was.
pub fn guard_hook(cmd: &mut std::process::Command) -> std::io::Result<bool> {
    let Some(text) = std::env::var_os(SPEC_VAR) else {
        return Ok(false);
    };
    cmd.env_remove(SPEC_VAR);
    let spec: Spec = serde_json::from_slice(text.as_bytes())
        .map_err(|e| std::io::Error::other(SandboxError::Spec(e.to_string())))?;
    Confinement { spec: Some(spec) }
        .install(cmd)
        .map_err(std::io::Error::other)?;
    Ok(true)
}

#[cfg(target_os = "linux")]
#[path = "linux.rs"]
mod imp;

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::ffi::CString;

    use super::{SandboxError, Spec};

    #[derive(Debug)]
    pub(super) enum Prepared {}

    pub(super) fn prepare(_: &Spec) -> Result<Prepared, SandboxError> {
        Err(SandboxError::Rules("sandboxing needs Linux".into()))
    }

    pub(super) fn install(prepared: Prepared, _: &mut std::process::Command, _: CString) {
        match prepared {}
    }

    pub(super) fn has_sys_admin() -> bool {
        false
    }

    pub(super) fn user_namespaces() -> Result<(), String> {
        Err("needs Linux".into())
    }
}

#[cfg(target_os = "linux")]
mod seccomp;

#[cfg(test)]
mod tests;
