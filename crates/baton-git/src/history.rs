//! Commits, rebases, merges and diffs.

use std::fmt;

use crate::error::{bounded, sanitize};
use crate::{check_rev, Git, GitError, Result};

/// Longest rebase diagnostic kept in [`RebaseOutcome::Conflict`].
const DIAGNOSTICS_BOUND: usize = 8 * 1024;
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

impl Git {
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
        // `add --all` looks into the work tree of every embedded repository (gitlink) whatever
        // `--ignore-submodules` says: the drivers their own configs declare are switched off too.
        self.with_embedded_drivers_off()?.run(["add", "--all"])?;
        let staged =
            !self.run_predicate(["diff", "--cached", "--quiet", "--ignore-submodules=dirty"])?;
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
