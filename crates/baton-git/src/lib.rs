//! A small typed wrapper over the `git` command-line tool.
//!
//! baton drives git through its CLI rather than a library so that rebase, worktree and merge behave
//! exactly as they do for a person at a terminal. Every call runs `git --no-pager -C DIR …` with a
//! predictable environment:
//!
//! - `LC_ALL=C`, so messages are in English and can be recognised (for example "not a git repository");
//! - `GIT_TERMINAL_PROMPT=0`, `GIT_EDITOR=true`, `GIT_SEQUENCE_EDITOR=true`, a null stdin, and no pager,
//!   so no call can stop and wait for a person;
//! - `GIT_OPTIONAL_LOCKS=0`, so read-only calls such as `status` never take the index lock from under
//!   an agent that is committing in the same worktree;
//! - the repository-selecting variables (`GIT_DIR`, `GIT_WORK_TREE`, `GIT_INDEX_FILE`, …) removed, so a
//!   baton started from inside a git hook still talks to the repository at `DIR`.
//!
//! Nothing a repository's own files configure runs: baton's git is **hardened** ([`HARDENED`]):
//! hooks off (`core.hooksPath=/dev/null`), fsmonitor off, no pager, no editor, no signing, no
//! external diff or textconv (`--no-ext-diff --no-textconv` where baton diffs), system config not
//! read (`GIT_CONFIG_NOSYSTEM`), and every clean/smudge/process filter that the repository's own
//! config files declare switched off ([`repo_filter_overrides`]). A model can run git itself inside
//! its sandbox, where those files are read-only to it (`baton-sandbox`'s protected paths); this
//! second layer makes sure that even a planted setting never runs with baton's own rights. The
//! user's own config (`~/.gitconfig`) is still read: it carries the user's identity.
//!
//! Where a setting would change the *meaning* of an operation baton relies on (colour, diff
//! prefixes, untracked-file display, rebase autostash, …) the relevant command pins it with an
//! explicit flag or a `-c` override instead.
//!
//! Extra environment variables and `-c` settings can be attached to one [`Git`] value with
//! [`Git::with_env`] and [`Git::with_config`] — tests use this to give commits an identity without
//! touching the test process's own environment.

mod drivers;
mod error;
mod history;
pub mod pin;
pub mod rewind;
pub mod snapshot;
mod status;
mod worktree;

use std::ffi::{OsStr, OsString};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Whether `s` is written as a commit id (7 to 64 hex digits): what a record names is given to
/// git only when it is, never as something git could read as an option or a revision range.
pub fn is_commit_id(s: &str) -> bool {
    (7..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

pub use drivers::repo_filter_overrides;
pub use error::{GitError, Result};
pub use history::{CommitSummary, RebaseOutcome};
pub use status::{CheckoutStatus, Operation};
pub use worktree::{
    add_exclude_in, common_dir_of, git_dir_of, linked_worktree_of, WorktreeInfo, WORKTREE_LOCK_FILE,
};

/// The all-zero object id git prints for an unborn `HEAD` in `worktree list`.
const ZERO_OID_CHARS: char = '0';

/// Variables that make git look somewhere other than `-C DIR`; removed from every call.
/// (This is the list `git rev-parse --local-env-vars` prints, minus the config parameters,
/// which callers may set on purpose with [`Git::with_env`].)
const REPO_SELECTING_VARS: &[&str] = &[
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_DIR",
    "GIT_GRAFT_FILE",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_INTERNAL_SUPER_PREFIX",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_OBJECT_DIRECTORY",
    "GIT_PREFIX",
    "GIT_REPLACE_REF_BASE",
    "GIT_SHALLOW_FILE",
    "GIT_WORK_TREE",
];

/// The `-c` settings every call runs with: nothing configured in a repository runs a program.
pub const HARDENED: &[&str] = &[
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.pager=cat",
    "core.editor=true",
    "sequence.editor=true",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "tag.forceSignAnnotated=false",
    "rebase.gpgSign=false",
    "merge.verifySignatures=false",
    "diff.external=",
    // Never into a submodule or an embedded repository: its config is not the repository's.
    "submodule.recurse=false",
    "diff.ignoreSubmodules=dirty",
    "status.submoduleSummary=false",
];

/// A handle on a directory inside (or meant to become) a git repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Git {
    dir: PathBuf,
    env: Vec<(OsString, OsString)>,
    config: Vec<String>,
}

impl Git {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Git {
            dir: dir.into(),
            env: Vec::new(),
            config: Vec::new(),
        }
    }

    /// Sets an environment variable on every git call made through this value
    /// (for example `GIT_AUTHOR_NAME`).
    #[must_use]
    pub fn with_env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Passes `-c key=value` to every git call made through this value (for example `user.name`).
    #[must_use]
    pub fn with_config(mut self, key: &str, value: &str) -> Self {
        self.config.push(format!("{key}={value}"));
        self
    }

    /// The same settings, pointed at another directory.
    #[must_use]
    pub fn at(&self, dir: impl Into<PathBuf>) -> Self {
        Git {
            dir: dir.into(),
            env: self.env.clone(),
            config: self.config.clone(),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `git init -b BRANCH` in this directory (created if missing).
    pub fn init(&self, initial_branch: &str) -> Result<()> {
        check_name("branch name", initial_branch)?;
        fs::create_dir_all(&self.dir).map_err(|source| GitError::Io {
            path: self.dir.clone(),
            source,
        })?;
        self.run(["init", "-q", "-b", initial_branch]).map(drop)
    }

    /// This handle, with the filter and merge drivers of every embedded repository (a gitlink of
    /// the index with a `.git` of its own) switched off as well (see [`repo_filter_overrides`]).
    fn with_embedded_drivers_off(&self) -> Result<Git> {
        // `:/`: the whole work tree, paths printed relative to this directory.
        let listing = self.run_bytes(["ls-files", "--stage", "-z", "--", ":/"])?;
        let mut out = self.clone();
        for entry in listing.split(|b| *b == 0) {
            // `MODE OID STAGE\tPATH`
            let Some(path) = entry.strip_prefix(b"160000 ") else {
                continue;
            };
            let Some(tab) = path.iter().position(|b| *b == b'\t') else {
                continue;
            };
            let sub = self.dir.join(bytes_to_path(&path[tab + 1..]));
            if sub.join(".git").symlink_metadata().is_ok() {
                out.config.extend(repo_filter_overrides(&sub)?);
            }
        }
        Ok(out)
    }

    /// `git --no-pager -C DIR` with baton's environment, before any `-c` setting or argument.
    fn base_command(&self) -> Command {
        let mut cmd = Command::new("git");
        cmd.arg("--no-pager").arg("-C").arg(&self.dir);
        for var in REPO_SELECTING_VARS {
            cmd.env_remove(var);
        }
        cmd.env("LC_ALL", "C")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env_remove("GIT_EXTERNAL_DIFF")
            .env_remove("LANGUAGE")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_PAGER", "cat")
            .env("PAGER", "cat")
            .env("GIT_EDITOR", "true")
            .env("GIT_SEQUENCE_EDITOR", "true")
            .env("GIT_OPTIONAL_LOCKS", "0")
            .env("GIT_ADVICE", "0");
        cmd
    }

    /// [`Git::base_command`] in the pinned repository `pin` when there is one (see [`pin`]); the
    /// caller gets `pin` from `pin::pinned_for`, which refuses a `.git` replaced since
    /// ([`GitError::Replaced`]).
    pub(crate) fn command_in(&self, pin: Option<&pin::Pinned>) -> Command {
        let mut cmd = self.base_command();
        if let Some(pin) = pin {
            cmd.env("GIT_DIR", &pin.git_dir)
                .env("GIT_COMMON_DIR", &pin.common_dir)
                .env("GIT_WORK_TREE", &pin.top);
        }
        cmd
    }

    fn command<I, S>(&self, args: I) -> Result<(Command, Vec<String>)>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args: Vec<S> = args.into_iter().collect();
        let initializing = args.first().is_some_and(|a| a.as_ref() == "init");
        let pin = if initializing {
            None
        } else {
            pin::pinned_for(&self.dir)?
        };
        let mut cmd = self.command_in(pin.as_ref());
        let words: Vec<&OsStr> = args.iter().map(AsRef::as_ref).collect();
        let drivers = if drivers::runs_no_driver(&words) {
            Vec::new()
        } else {
            drivers::driver_overrides(&drivers::drivers(
                self.command_in(pin.as_ref()),
                pin.as_ref(),
            ))
        };
        for setting in HARDENED.iter().map(|s| (*s).to_string()).chain(drivers) {
            cmd.arg("-c").arg(setting);
        }
        for setting in &self.config {
            cmd.arg("-c").arg(setting);
        }
        let mut shown = Vec::new();
        for arg in &args {
            let arg = arg.as_ref();
            shown.push(arg.to_string_lossy().into_owned());
            cmd.arg(arg);
        }
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        Ok((cmd, shown))
    }

    /// Runs git and returns its raw output whatever its exit status; only a failure to start is an error.
    pub fn run_output<I, S>(&self, args: I) -> Result<Output>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.output(args).map(|(out, _)| out)
    }

    /// [`Git::run_output`] for at most `limit`: `None` when git was still running then. It runs
    /// in a process group of its own, which is killed whole at the limit (git and the transport
    /// helpers it started), so nothing outlives the call — a remote that does not answer.
    pub fn run_output_within<I, S>(
        &self,
        args: I,
        limit: std::time::Duration,
    ) -> Result<Option<Output>>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        use std::io::Read as _;
        use std::os::unix::process::CommandExt as _;
        let (mut cmd, shown) = self.command(args)?;
        cmd.process_group(0);
        let spawn_error = |source| GitError::Spawn {
            args: shown.clone(),
            source,
        };
        let mut child = cmd.spawn().map_err(spawn_error)?;
        // Both pipes drained meanwhile, so a long answer cannot stall git on a full pipe.
        let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
            std::thread::spawn(move || {
                let mut bytes = Vec::new();
                if let Some(mut p) = pipe {
                    let _ = p.read_to_end(&mut bytes);
                }
                bytes
            })
        };
        let out = drain(child.stdout.take().map(|p| Box::new(p) as _));
        let err = drain(child.stderr.take().map(|p| Box::new(p) as _));
        let deadline = std::time::Instant::now() + limit;
        let status = loop {
            match child.try_wait().map_err(spawn_error)? {
                Some(status) => break Some(status),
                None if std::time::Instant::now() >= deadline => {
                    if let Ok(group) = i32::try_from(child.id()) {
                        // SAFETY: kill(2) on the group this call made; no memory is shared.
                        unsafe { libc::kill(-group, libc::SIGKILL) };
                    }
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
                None => std::thread::sleep(std::time::Duration::from_millis(10)),
            }
        };
        let (stdout, stderr) = (
            out.join().unwrap_or_default(),
            err.join().unwrap_or_default(),
        );
        Ok(status.map(|status| Output {
            status,
            stdout,
            stderr,
        }))
    }

    /// Runs git to its end: its output and the arguments as shown in errors.
    fn output<I, S>(&self, args: I) -> Result<(Output, Vec<String>)>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let (mut cmd, shown) = self.command(args)?;
        match cmd.output() {
            Ok(out) => Ok((out, shown)),
            Err(source) => Err(GitError::Spawn {
                args: shown,
                source,
            }),
        }
    }

    /// Runs git and returns its stdout; a non-zero exit is [`GitError::Failed`]
    /// (or [`GitError::NotARepo`] when git says the directory is not a repository).
    pub fn run<I, S>(&self, args: I) -> Result<String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.run_bytes(args)
            .map(|out| String::from_utf8_lossy(&out).into_owned())
    }

    /// Like [`Git::run`], with stdout as exact bytes.
    pub fn run_bytes<I, S>(&self, args: I) -> Result<Vec<u8>>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let (out, shown) = self.output(args)?;
        if out.status.success() {
            Ok(out.stdout)
        } else {
            Err(self.failure(shown, &out))
        }
    }

    /// Runs git, expecting exit 0 (`true`) or 1 (`false`); anything else is an error.
    fn run_predicate<I, S>(&self, args: I) -> Result<bool>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let (out, shown) = self.output(args)?;
        match out.status.code() {
            Some(0) => Ok(true),
            Some(1) => Ok(false),
            _ => Err(self.failure(shown, &out)),
        }
    }

    fn failure(&self, args: Vec<String>, out: &Output) -> GitError {
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        if out.status.code() == Some(128) && stderr.contains("not a git repository") {
            return GitError::NotARepo {
                dir: self.dir.clone(),
                stderr,
            };
        }
        GitError::Failed {
            args,
            code: out.status.code(),
            stderr,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        }
    }

    /// Whether the directory is inside a git work tree (a bare repository or a `.git` directory is not).
    pub fn is_repo(&self) -> bool {
        matches!(
            self.run(["rev-parse", "--is-inside-work-tree"]),
            Ok(out) if out.trim() == "true"
        )
    }

    /// The top directory of the work tree containing `dir` (a linked worktree's own top, not the main one's).
    pub fn toplevel(&self) -> Result<PathBuf> {
        let out = self.run_bytes(["rev-parse", "--show-toplevel"])?;
        let path = bytes_to_path(trim_newline(&out));
        if path.as_os_str().is_empty() {
            return Err(GitError::Parse {
                args: vec!["rev-parse".into(), "--show-toplevel".into()],
                what: "no work tree".into(),
                output: String::new(),
            });
        }
        Ok(path)
    }

    /// The git directory shared by all worktrees of the repository, absolute.
    pub fn git_common_dir(&self) -> Result<PathBuf> {
        if let Some(p) = self.pin_of_own_repo()? {
            return Ok(p.common_dir);
        }
        self.rev_parse_path("--git-common-dir")
    }

    /// This worktree's own git directory (for a linked worktree, `COMMON/worktrees/NAME`), absolute.
    pub fn git_dir(&self) -> Result<PathBuf> {
        if let Some(p) = self.pin_of_own_repo()? {
            return Ok(p.git_dir);
        }
        self.rev_parse_path("--git-dir")
    }

    /// The pin of the work tree this value runs git in (checked, see [`pin`]), when git would be
    /// told exactly its dirs: every git call there passes the pinned `GIT_DIR` and
    /// `GIT_COMMON_DIR`, so asking git for them again answers what the pin holds. `None` when
    /// this value sets git's own variables itself.
    fn pin_of_own_repo(&self) -> Result<Option<pin::Pinned>> {
        if self
            .env
            .iter()
            .any(|(k, _)| k.to_string_lossy().starts_with("GIT_"))
        {
            return Ok(None);
        }
        pin::pinned_for(&self.dir)
    }

    /// [`Self::git_dir`] and [`Self::git_common_dir`] from one git process (a path holding a
    /// line break is asked for alone).
    pub fn git_dirs(&self) -> Result<(PathBuf, PathBuf)> {
        if let Some(p) = self.pin_of_own_repo()? {
            return Ok((p.git_dir, p.common_dir));
        }
        let out = self.run_bytes(["rev-parse", "--git-dir", "--git-common-dir"])?;
        let lines: Vec<&[u8]> = trim_newline(&out).split(|b| *b == b'\n').collect();
        match lines.as_slice() {
            [dir, common] => Ok((self.absolute(dir), self.absolute(common))),
            _ => Ok((self.git_dir()?, self.git_common_dir()?)),
        }
    }

    fn rev_parse_path(&self, flag: &str) -> Result<PathBuf> {
        let out = self.run_bytes(["rev-parse", flag])?;
        Ok(self.absolute(trim_newline(&out)))
    }

    /// A path git printed, made absolute and canonical.
    fn absolute(&self, printed: &[u8]) -> PathBuf {
        let path = bytes_to_path(printed);
        // Older gits print these relative to the directory they ran in.
        let path = if path.is_absolute() {
            path
        } else {
            self.dir.join(path)
        };
        fs::canonicalize(&path).unwrap_or(path)
    }

    /// The commit `HEAD` points at; `None` while `HEAD` is unborn (a new repository without commits).
    pub fn head_oid(&self) -> Result<Option<String>> {
        let args = ["rev-parse", "--verify", "-q", "HEAD^{commit}"];
        let out = self.run_output(args)?;
        match out.status.code() {
            Some(0) => Ok(Some(
                String::from_utf8_lossy(&out.stdout).trim().to_string(),
            )),
            Some(1) if out.stdout.is_empty() => Ok(None),
            _ => Err(self.failure(args.iter().map(|s| s.to_string()).collect(), &out)),
        }
    }

    /// The branch `HEAD` is attached to (short name, even when unborn); `None` when detached.
    pub fn current_branch(&self) -> Result<Option<String>> {
        let args = ["symbolic-ref", "-q", "HEAD"];
        let out = self.run_output(args)?;
        match out.status.code() {
            Some(0) => {
                let full = String::from_utf8_lossy(&out.stdout).trim().to_string();
                Ok(Some(
                    full.strip_prefix("refs/heads/")
                        .map(str::to_string)
                        .unwrap_or(full),
                ))
            }
            Some(1) => Ok(None),
            _ => Err(self.failure(args.iter().map(|s| s.to_string()).collect(), &out)),
        }
    }

    /// The full object id `rev` names (`git rev-parse --verify REV`).
    pub fn rev_parse(&self, rev: &str) -> Result<String> {
        check_rev(rev)?;
        Ok(self.run(["rev-parse", "--verify", rev])?.trim().to_string())
    }

    /// The full object id of the commit `rev` names, peeling tags.
    pub fn rev_parse_commit(&self, rev: &str) -> Result<String> {
        check_rev(rev)?;
        let spec = format!("{rev}^{{commit}}");
        Ok(self
            .run(["rev-parse", "--verify", &spec])?
            .trim()
            .to_string())
    }

    /// The tip of local branch `name`, or `None` when there is no such branch.
    pub fn branch_oid(&self, name: &str) -> Result<Option<String>> {
        check_name("branch name", name)?;
        let full = format!("refs/heads/{name}");
        let args = ["rev-parse", "--verify", "-q", full.as_str()];
        let out = self.run_output(args)?;
        match out.status.code() {
            Some(0) => Ok(Some(
                String::from_utf8_lossy(&out.stdout).trim().to_string(),
            )),
            Some(1) => Ok(None),
            _ => Err(self.failure(args.iter().map(|s| s.to_string()).collect(), &out)),
        }
    }
}

/// Refuses a revision git could mistake for an option, or that is empty.
fn check_rev(rev: &str) -> Result<()> {
    if rev.is_empty() {
        return Err(GitError::InvalidArgument {
            what: "revision",
            value: rev.to_string(),
            reason: "it is empty",
        });
    }
    if rev.starts_with('-') {
        return Err(GitError::InvalidArgument {
            what: "revision",
            value: rev.to_string(),
            reason: "it starts with `-`, which git would read as an option",
        });
    }
    Ok(())
}

fn check_name(what: &'static str, name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(GitError::InvalidArgument {
            what,
            value: name.to_string(),
            reason: "it is empty",
        });
    }
    if name.starts_with('-') {
        return Err(GitError::InvalidArgument {
            what,
            value: name.to_string(),
            reason: "it starts with `-`, which git would read as an option",
        });
    }
    Ok(())
}

fn trim_newline(bytes: &[u8]) -> &[u8] {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    bytes.strip_suffix(b"\r").unwrap_or(bytes)
}

#[cfg(unix)]
fn bytes_to_path(bytes: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(OsStr::from_bytes(bytes))
}

#[cfg(not(unix))]
fn bytes_to_path(bytes: &[u8]) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_hex_of_a_commit_id_s_length_is_a_commit_id() {
        assert!(is_commit_id("1a2b3c4"));
        assert!(is_commit_id(&"f".repeat(40)));
        for bad in ["1a2b3c", "--output=x", "HEAD", "a..b", "1a2b3c4^{tree}", ""] {
            assert!(!is_commit_id(bad), "{bad}");
        }
        assert!(!is_commit_id(&"f".repeat(65)));
    }

    #[test]
    fn options_are_refused_as_revisions() {
        let git = Git::new("/nonexistent");
        assert!(matches!(
            git.rev_parse("--all"),
            Err(GitError::InvalidArgument {
                what: "revision",
                ..
            })
        ));
        assert!(matches!(
            git.branch_delete("-f", false),
            Err(GitError::InvalidArgument { .. })
        ));
    }
}
