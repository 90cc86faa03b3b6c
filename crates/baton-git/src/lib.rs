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
//! System and user configuration are deliberately still read: they carry the user's identity and
//! things such as LFS filters that a checkout must honour. Where a setting would change the *meaning*
//! of an operation baton relies on (colour, diff prefixes, untracked-file display, rebase autostash, …)
//! the relevant command pins it with an explicit flag or a `-c` override instead.
//!
//! Extra environment variables and `-c` settings can be attached to one [`Git`] value with
//! [`Git::with_env`] and [`Git::with_config`] — tests use this to give commits an identity without
//! touching the test process's own environment.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Longest piece of git's stderr or stdout quoted in an error message.
const MESSAGE_BOUND: usize = 2048;
/// Longest rebase diagnostic kept in [`RebaseOutcome::Conflict`].
const DIAGNOSTICS_BOUND: usize = 8 * 1024;
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

/// What went wrong running git.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// The `git` program could not be started at all.
    #[error("could not run `git {}`: {source} (is git installed and on PATH?)", sanitize(&args.join(" ")))]
    Spawn {
        args: Vec<String>,
        #[source]
        source: std::io::Error,
    },
    /// git ran and exited unsuccessfully.
    #[error("{}", describe_failure(args, *code, stderr, stdout))]
    Failed {
        args: Vec<String>,
        /// `None` when git was killed by a signal.
        code: Option<i32>,
        stderr: String,
        stdout: String,
    },
    /// The directory is not inside a git work tree.
    #[error("{} is not inside a git repository: {}", dir.display(), bounded_clean(stderr, MESSAGE_BOUND))]
    NotARepo { dir: PathBuf, stderr: String },
    /// git's output was not what this wrapper expected.
    #[error("unexpected output from `git {}`: {what}: {}", sanitize(&args.join(" ")), bounded_clean(output, MESSAGE_BOUND))]
    Parse {
        args: Vec<String>,
        what: String,
        output: String,
    },
    /// An argument was refused before running git (for example a revision starting with `-`,
    /// which git would read as an option).
    #[error("refused {what} `{}`: {reason}", sanitize(value))]
    InvalidArgument {
        what: &'static str,
        value: String,
        reason: &'static str,
    },
    /// A file under the git directory could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl GitError {
    /// git's stderr, when git ran and failed.
    pub fn stderr(&self) -> Option<&str> {
        match self {
            GitError::Failed { stderr, .. } | GitError::NotARepo { stderr, .. } => Some(stderr),
            GitError::Spawn { .. }
            | GitError::Parse { .. }
            | GitError::InvalidArgument { .. }
            | GitError::Io { .. } => None,
        }
    }
}

pub type Result<T, E = GitError> = std::result::Result<T, E>;

/// One entry of `git worktree list`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorktreeInfo {
    pub path: PathBuf,
    /// `None` for a bare entry or an unborn `HEAD`.
    pub head: Option<String>,
    /// Short branch name (`main`, not `refs/heads/main`); `None` when detached or bare.
    pub branch: Option<String>,
    pub bare: bool,
    pub detached: bool,
    /// `Some(reason)` (possibly empty) when locked.
    pub locked: Option<String>,
    /// `Some(reason)` when git considers the entry prunable (its directory is gone).
    pub prunable: Option<String>,
}

/// A commit's full object id and subject line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitSummary {
    pub oid: String,
    pub subject: String,
}

/// Result of [`Git::rebase`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RebaseOutcome {
    /// The rebase finished (possibly with nothing to do); `head` is the new `HEAD`.
    Rebased { head: String },
    /// The rebase stopped on a conflict and was aborted, leaving the branch where it was.
    Conflict {
        /// git's own output from the failed rebase, bounded.
        diagnostics: String,
        /// Paths git reported as unmerged when it stopped.
        conflicted_paths: Vec<String>,
    },
}

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

    fn command<I, S>(&self, args: I) -> (Command, Vec<String>)
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = Command::new("git");
        cmd.arg("--no-pager").arg("-C").arg(&self.dir);
        for setting in &self.config {
            cmd.arg("-c").arg(setting);
        }
        let mut shown = Vec::new();
        for arg in args {
            let arg = arg.as_ref();
            shown.push(arg.to_string_lossy().into_owned());
            cmd.arg(arg);
        }
        for var in REPO_SELECTING_VARS {
            cmd.env_remove(var);
        }
        cmd.env("LC_ALL", "C")
            .env_remove("LANGUAGE")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_PAGER", "cat")
            .env("PAGER", "cat")
            .env("GIT_EDITOR", "true")
            .env("GIT_SEQUENCE_EDITOR", "true")
            .env("GIT_OPTIONAL_LOCKS", "0")
            .env("GIT_ADVICE", "0");
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        (cmd, shown)
    }

    /// Runs git and returns its raw output whatever its exit status; only a failure to start is an error.
    pub fn run_output<I, S>(&self, args: I) -> Result<Output>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let (mut cmd, shown) = self.command(args);
        cmd.output().map_err(|source| GitError::Spawn {
            args: shown,
            source,
        })
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
        let (mut cmd, shown) = self.command(args);
        let out = cmd.output().map_err(|source| GitError::Spawn {
            args: shown.clone(),
            source,
        })?;
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
        let (mut cmd, shown) = self.command(args);
        let out = cmd.output().map_err(|source| GitError::Spawn {
            args: shown.clone(),
            source,
        })?;
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
        self.rev_parse_path("--git-common-dir")
    }

    /// This worktree's own git directory (for a linked worktree, `COMMON/worktrees/NAME`), absolute.
    pub fn git_dir(&self) -> Result<PathBuf> {
        self.rev_parse_path("--git-dir")
    }

    fn rev_parse_path(&self, flag: &str) -> Result<PathBuf> {
        let out = self.run_bytes(["rev-parse", flag])?;
        let path = bytes_to_path(trim_newline(&out));
        // Older gits print these relative to the directory they ran in.
        let path = if path.is_absolute() {
            path
        } else {
            self.dir.join(path)
        };
        Ok(fs::canonicalize(&path).unwrap_or(path))
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

    /// `git status --porcelain=v1` listing staged, unstaged and untracked (not ignored) paths;
    /// empty when the work tree is clean.
    pub fn status_porcelain(&self) -> Result<String> {
        self.run([
            "status",
            "--porcelain=v1",
            "--untracked-files=all",
            "--ignore-submodules=none",
        ])
    }

    /// No staged, unstaged or untracked changes; ignored files do not count.
    pub fn is_clean(&self) -> Result<bool> {
        let out = self.run([
            "status",
            "--porcelain=v1",
            "--untracked-files=normal",
            "--ignore-submodules=none",
        ])?;
        Ok(out.trim().is_empty())
    }

    /// Full ids of the commits reachable from `tip` but not from `base`, oldest first.
    pub fn commits_between(&self, base: &str, tip: &str) -> Result<Vec<String>> {
        check_rev(base)?;
        check_rev(tip)?;
        let range = format!("{base}..{tip}");
        let out = self.run(["rev-list", "--reverse", &range])?;
        Ok(out.lines().map(str::to_string).collect())
    }

    /// Like [`Git::commits_between`], with each commit's subject line.
    pub fn commit_summaries(&self, base: &str, tip: &str) -> Result<Vec<CommitSummary>> {
        check_rev(base)?;
        check_rev(tip)?;
        let range = format!("{base}..{tip}");
        let args = [
            "log",
            "--reverse",
            "--no-color",
            "--no-decorate",
            "--format=%H%x00%s",
            range.as_str(),
        ];
        let out = self.run(args)?;
        out.lines()
            .map(|line| match line.split_once('\0') {
                Some((oid, subject)) => Ok(CommitSummary {
                    oid: oid.to_string(),
                    subject: subject.to_string(),
                }),
                None => Err(GitError::Parse {
                    args: args.iter().map(|s| s.to_string()).collect(),
                    what: "a line without the oid separator".into(),
                    output: line.to_string(),
                }),
            })
            .collect()
    }

    /// The best common ancestor of `a` and `b`; `None` when they share no history.
    pub fn merge_base(&self, a: &str, b: &str) -> Result<Option<String>> {
        check_rev(a)?;
        check_rev(b)?;
        let args = ["merge-base", a, b];
        let out = self.run_output(args)?;
        match out.status.code() {
            Some(0) => Ok(Some(
                String::from_utf8_lossy(&out.stdout).trim().to_string(),
            )),
            Some(1) if out.stdout.is_empty() && out.stderr.is_empty() => Ok(None),
            _ => Err(self.failure(args.iter().map(|s| s.to_string()).collect(), &out)),
        }
    }

    /// Whether `ancestor` is reachable from `descendant` (a commit counts as its own ancestor).
    pub fn is_ancestor(&self, ancestor: &str, descendant: &str) -> Result<bool> {
        check_rev(ancestor)?;
        check_rev(descendant)?;
        self.run_predicate(["merge-base", "--is-ancestor", ancestor, descendant])
    }

    /// `git worktree add -b NEW_BRANCH PATH START`. Hooks are switched off for this call, so a
    /// repository's `post-checkout` hook cannot slow down or alter an isolated checkout.
    /// Fails if the branch already exists or the path exists and is not empty.
    pub fn worktree_add(&self, path: &Path, new_branch: &str, start: &str) -> Result<()> {
        check_name("branch name", new_branch)?;
        check_rev(start)?;
        let args: [&OsStr; 9] = [
            OsStr::new("-c"),
            OsStr::new("core.hooksPath=/dev/null"),
            OsStr::new("worktree"),
            OsStr::new("add"),
            OsStr::new("--quiet"),
            OsStr::new("-b"),
            OsStr::new(new_branch),
            path.as_os_str(),
            OsStr::new(start),
        ];
        self.run(args).map(drop)
    }

    /// `git worktree remove [--force] PATH`. Without `force`, git refuses a worktree with modified
    /// or untracked files (ignored files are removed with it).
    pub fn worktree_remove(&self, path: &Path, force: bool) -> Result<()> {
        let mut args: Vec<&OsStr> = vec![OsStr::new("worktree"), OsStr::new("remove")];
        if force {
            args.push(OsStr::new("--force"));
        }
        args.push(OsStr::new("--"));
        args.push(path.as_os_str());
        self.run(args).map(drop)
    }

    /// Every worktree of the repository, the main one first.
    pub fn worktree_list(&self) -> Result<Vec<WorktreeInfo>> {
        let out = self.run_output(["worktree", "list", "--porcelain", "-z"])?;
        if out.status.success() {
            return Ok(parse_worktree_list(&out.stdout, b'\0'));
        }
        if out.status.code() == Some(129) {
            // git before 2.36 has no `-z`; its newline form is fine for ordinary paths.
            let bytes = self.run_bytes(["worktree", "list", "--porcelain"])?;
            return Ok(parse_worktree_list(&bytes, b'\n'));
        }
        Err(self.failure(
            ["worktree", "list", "--porcelain", "-z"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            &out,
        ))
    }

    /// `git worktree prune`: forget worktrees whose directories are gone.
    pub fn worktree_prune(&self) -> Result<()> {
        self.run(["worktree", "prune"]).map(drop)
    }

    /// `git branch -d NAME` (or `-D` with `force`). Without `force`, git refuses a branch whose
    /// commits are not in `HEAD` (or its upstream), and any branch checked out in a worktree.
    pub fn branch_delete(&self, name: &str, force: bool) -> Result<()> {
        check_name("branch name", name)?;
        let flag = if force { "-D" } else { "-d" };
        self.run(["branch", "--quiet", flag, name]).map(drop)
    }

    /// Whether local branch `name` exists.
    pub fn branch_exists(&self, name: &str) -> Result<bool> {
        check_name("branch name", name)?;
        let full = format!("refs/heads/{name}");
        self.run_predicate(["show-ref", "--verify", "--quiet", full.as_str()])
    }

    /// Rebases the current branch onto `onto` (`git rebase ONTO`). On a conflict the rebase is
    /// aborted, the branch is left as it was, and git's diagnostics are returned. Commits that
    /// become empty or are already in `onto` are dropped (git's default). Autostash, update-refs
    /// and autosquash settings are pinned off and hooks do not run, so the result depends only on
    /// the commits.
    pub fn rebase(&self, onto: &str) -> Result<RebaseOutcome> {
        check_rev(onto)?;
        self.rebase_with(&[onto])
    }

    /// `git rebase --onto NEW_BASE UPSTREAM`: replays the commits after `upstream` onto `new_base`.
    /// Conflicts are handled as in [`Git::rebase`].
    pub fn rebase_onto(&self, new_base: &str, upstream: &str) -> Result<RebaseOutcome> {
        check_rev(new_base)?;
        check_rev(upstream)?;
        self.rebase_with(&["--onto", new_base, upstream])
    }

    fn rebase_with(&self, tail: &[&str]) -> Result<RebaseOutcome> {
        // Pin the settings that would change what a plain rebase does.
        let mut args = vec![
            "-c",
            "rebase.autoStash=false",
            "-c",
            "rebase.updateRefs=false",
            "-c",
            "rebase.autoSquash=false",
            "-c",
            "core.hooksPath=/dev/null",
            "rebase",
            "--no-autostash",
        ];
        args.extend_from_slice(tail);
        let out = self.run_output(&args)?;
        if out.status.success() {
            let head = self.head_oid()?.ok_or_else(|| GitError::Parse {
                args: args.iter().map(|s| s.to_string()).collect(),
                what: "HEAD is unborn after the rebase".into(),
                output: String::new(),
            })?;
            return Ok(RebaseOutcome::Rebased { head });
        }
        if !self.rebase_in_progress()? {
            // Refused before starting (dirty tree, bad revision, …): an ordinary failure.
            return Err(self.failure(args.iter().map(|s| s.to_string()).collect(), &out));
        }
        let conflicted_paths = self
            .run(["diff", "--name-only", "--diff-filter=U", "-z"])
            .map(|s| {
                s.split('\0')
                    .filter(|p| !p.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let mut diagnostics = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !diagnostics.is_empty() && !stderr.is_empty() && !diagnostics.ends_with('\n') {
            diagnostics.push('\n');
        }
        diagnostics.push_str(&stderr);
        self.run(["rebase", "--abort"])?;
        Ok(RebaseOutcome::Conflict {
            diagnostics: bounded(&diagnostics, DIAGNOSTICS_BOUND),
            conflicted_paths,
        })
    }

    /// Whether this worktree is in the middle of a rebase.
    pub fn rebase_in_progress(&self) -> Result<bool> {
        let git_dir = self.git_dir()?;
        Ok(git_dir.join("rebase-merge").exists() || git_dir.join("rebase-apply").exists())
    }

    /// `git merge --ff-only OID`: moves the current branch forward to `oid`, or fails.
    pub fn merge_ff_only(&self, oid: &str) -> Result<()> {
        check_rev(oid)?;
        self.run(["merge", "--ff-only", "--no-edit", "--quiet", oid])
            .map(drop)
    }

    /// The exact patch from `base` to `tip`, as bytes: full object ids, binary hunks, `a/` and `b/`
    /// prefixes, regardless of the user's diff settings, so `git apply` reproduces `tip`'s tree.
    pub fn diff(&self, base: &str, tip: &str) -> Result<Vec<u8>> {
        check_rev(base)?;
        check_rev(tip)?;
        // diff-tree is plumbing: it ignores diff.noprefix, diff.relative, external drivers and colour.
        self.run_bytes([
            "diff-tree",
            "-r",
            "-p",
            "-M",
            "--binary",
            "--full-index",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--src-prefix=a/",
            "--dst-prefix=b/",
            base,
            tip,
        ])
    }

    /// Paths changed between `base` and `tip`.
    pub fn changed_paths(&self, base: &str, tip: &str) -> Result<Vec<String>> {
        check_rev(base)?;
        check_rev(tip)?;
        let out = self.run([
            "diff-tree",
            "-r",
            "--name-only",
            "-z",
            "--no-renames",
            base,
            tip,
        ])?;
        Ok(out
            .split('\0')
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect())
    }

    /// Stages everything (respecting `.gitignore`) and commits it; `None` when there was nothing to
    /// commit. Hooks are not run: this is baton's own bookkeeping commit, not a person's.
    pub fn commit_all(&self, message: &str) -> Result<Option<String>> {
        self.run(["add", "--all"])?;
        let staged =
            !self.run_predicate(["diff", "--cached", "--quiet", "--ignore-submodules=none"])?;
        if !staged {
            return Ok(None);
        }
        self.run([
            "-c",
            "core.hooksPath=/dev/null",
            "commit",
            "--quiet",
            "--no-verify",
            "-m",
            message,
        ])?;
        self.head_oid()
    }

    /// Adds `pattern` as a line of the repository's `info/exclude` (shared by all its worktrees),
    /// unless that exact line is already there.
    pub fn add_exclude(&self, pattern: &str) -> Result<()> {
        add_exclude_in(&self.git_common_dir()?, pattern)
    }
}

/// The git directory shared by all worktrees of the repository whose work tree root is `root`,
/// found by reading files only (no git process, for paths that must stay fast): `root/.git` when
/// it is a folder, else the folder the `.git` file's `gitdir:` line names, followed through its
/// `commondir` file for a linked worktree. `None` when `root` holds no `.git`.
pub fn common_dir_of(root: &Path) -> Option<PathBuf> {
    let dot_git = root.join(".git");
    if dot_git.is_dir() {
        return Some(dot_git);
    }
    let text = fs::read_to_string(&dot_git).ok()?;
    let gitdir = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?.trim();
    let gitdir = root.join(gitdir);
    match fs::read_to_string(gitdir.join("commondir")) {
        Ok(common) => Some(gitdir.join(common.trim())),
        Err(_) => Some(gitdir),
    }
}

/// Adds `pattern` as a line of `info/exclude` in the git common directory `common_dir`, unless
/// that exact line is already there.
pub fn add_exclude_in(common_dir: &Path, pattern: &str) -> Result<()> {
    if pattern.is_empty() || pattern.contains(['\n', '\r']) {
        return Err(GitError::InvalidArgument {
            what: "exclude pattern",
            value: pattern.to_string(),
            reason: "it must be one non-empty line",
        });
    }
    let info = common_dir.join("info");
    let file = info.join("exclude");
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| GitError::Io { path, source }
    };
    fs::create_dir_all(&info).map_err(io(&info))?;
    let existing = match fs::read(&file) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(io(&file)(e)),
    };
    let present = existing
        .split(|b| *b == b'\n')
        .any(|line| line.strip_suffix(b"\r").unwrap_or(line) == pattern.as_bytes());
    if present {
        return Ok(());
    }
    let mut line = Vec::with_capacity(pattern.len() + 2);
    if !existing.is_empty() && !existing.ends_with(b"\n") {
        line.push(b'\n');
    }
    line.extend_from_slice(pattern.as_bytes());
    line.push(b'\n');
    let mut f = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&file)
        .map_err(io(&file))?;
    f.write_all(&line).map_err(io(&file))
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

fn parse_worktree_list(bytes: &[u8], sep: u8) -> Vec<WorktreeInfo> {
    let mut list = Vec::new();
    let mut current: Option<WorktreeInfo> = None;
    for field in bytes.split(|b| *b == sep) {
        if field.is_empty() {
            // An empty field ends a record.
            list.extend(current.take());
            continue;
        }
        let (key, value) = match field.iter().position(|b| *b == b' ') {
            Some(i) => (&field[..i], Some(&field[i + 1..])),
            None => (field, None),
        };
        let text = || value.map(|v| String::from_utf8_lossy(v).into_owned());
        match key {
            b"worktree" => {
                list.extend(current.take());
                current = Some(WorktreeInfo {
                    path: bytes_to_path(value.unwrap_or_default()),
                    head: None,
                    branch: None,
                    bare: false,
                    detached: false,
                    locked: None,
                    prunable: None,
                });
            }
            _ => {
                let Some(entry) = current.as_mut() else {
                    continue;
                };
                match key {
                    b"HEAD" => {
                        entry.head = text().filter(|oid| !oid.chars().all(|c| c == ZERO_OID_CHARS));
                    }
                    b"branch" => {
                        entry.branch = text().map(|b| {
                            b.strip_prefix("refs/heads/")
                                .map(str::to_string)
                                .unwrap_or(b)
                        });
                    }
                    b"bare" => entry.bare = true,
                    b"detached" => entry.detached = true,
                    b"locked" => entry.locked = Some(text().unwrap_or_default()),
                    b"prunable" => entry.prunable = Some(text().unwrap_or_default()),
                    _ => {}
                }
            }
        }
    }
    list.extend(current);
    list
}

/// Git's text made safe to print (see [`baton_text::sanitize_terminal`]).
fn sanitize(text: &str) -> String {
    baton_text::sanitize_terminal(text).into_owned()
}

/// At most `max` bytes of `text`: three quarters from its start (the command and first
/// complaint), the rest from its end (how it finished).
fn bounded(text: &str, max: usize) -> String {
    baton_text::truncate(text, max, baton_text::Keep::Ends { head_percent: 75 }).into_owned()
}

fn bounded_clean(text: &str, max: usize) -> String {
    sanitize(bounded(text.trim(), max).as_str())
}

fn describe_failure(args: &[String], code: Option<i32>, stderr: &str, stdout: &str) -> String {
    let status = match code {
        Some(code) => format!("exited with code {code}"),
        None => "was killed by a signal".to_string(),
    };
    let mut msg = format!("`git {}` {status}", sanitize(&args.join(" ")));
    let detail = if stderr.trim().is_empty() {
        stdout
    } else {
        stderr
    };
    if !detail.trim().is_empty() {
        msg.push_str(": ");
        msg.push_str(&bounded_clean(detail, MESSAGE_BOUND));
    }
    msg
}

impl fmt::Display for RebaseOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RebaseOutcome::Rebased { head } => write!(f, "rebased; HEAD is now {head}"),
            RebaseOutcome::Conflict {
                diagnostics,
                conflicted_paths,
            } => {
                write!(f, "rebase stopped on a conflict and was aborted")?;
                if !conflicted_paths.is_empty() {
                    write!(
                        f,
                        " (conflicts in {})",
                        sanitize(&conflicted_paths.join(", "))
                    )?;
                }
                if !diagnostics.trim().is_empty() {
                    write!(f, ": {}", sanitize(diagnostics.trim()))?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn parses_worktree_list_z_form() {
        let raw = b"worktree /r\0HEAD 1111111111111111111111111111111111111111\0branch refs/heads/main\0\0\
worktree /w\0HEAD 2222222222222222222222222222222222222222\0detached\0locked\0\0\
worktree /gone\0HEAD 0000000000000000000000000000000000000000\0branch refs/heads/x\0prunable gitdir file points to non-existent location\0\0";
        let list = parse_worktree_list(raw, b'\0');
        assert_eq!(
            list,
            vec![
                WorktreeInfo {
                    path: PathBuf::from("/r"),
                    head: Some("1".repeat(40)),
                    branch: Some("main".into()),
                    bare: false,
                    detached: false,
                    locked: None,
                    prunable: None,
                },
                WorktreeInfo {
                    path: PathBuf::from("/w"),
                    head: Some("2".repeat(40)),
                    branch: None,
                    bare: false,
                    detached: true,
                    locked: Some(String::new()),
                    prunable: None,
                },
                WorktreeInfo {
                    path: PathBuf::from("/gone"),
                    head: None,
                    branch: Some("x".into()),
                    bare: false,
                    detached: false,
                    locked: None,
                    prunable: Some("gitdir file points to non-existent location".into()),
                },
            ]
        );
    }

    #[test]
    fn parses_worktree_list_newline_form() {
        let raw = b"worktree /r\nbare\n\nworktree /w\nHEAD 3333333333333333333333333333333333333333\nbranch refs/heads/b\n\n";
        let list = parse_worktree_list(raw, b'\n');
        assert_eq!(list.len(), 2);
        assert!(list[0].bare);
        assert_eq!(list[1].branch.as_deref(), Some("b"));
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
