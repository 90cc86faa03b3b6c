//! The state of a checkout: changed paths, branch and `HEAD`, and operations left in progress.

use std::fmt;

use crate::worktree::git_dir_of;
use crate::{Git, Result};

impl Git {
    /// `git status --porcelain=v1` listing staged, unstaged and untracked (not ignored) paths;
    /// empty when the work tree is clean.
    pub fn status_porcelain(&self) -> Result<String> {
        self.run([
            "status",
            "--porcelain=v1",
            "--untracked-files=all",
            "--ignore-submodules=dirty",
        ])
    }

    /// No staged, unstaged or untracked changes; ignored files do not count.
    pub fn is_clean(&self) -> Result<bool> {
        let out = self.run([
            "status",
            "--porcelain=v1",
            "--untracked-files=normal",
            "--ignore-submodules=dirty",
        ])?;
        Ok(out.trim().is_empty())
    }

    /// Branch, `HEAD` and changed or untracked paths (not ignored ones) of this checkout, from one
    /// `git status --porcelain=v2 --branch` call, limited to `pathspec` when it is not empty (for
    /// example `:(exclude,top).baton/state`).
    pub fn checkout_status(&self, pathspec: &[&str]) -> Result<CheckoutStatus> {
        let mut args = vec![
            "status",
            "--porcelain=v2",
            "--branch",
            "--untracked-files=normal",
            "--ignore-submodules=dirty",
        ];
        if !pathspec.is_empty() {
            args.push("--");
            args.extend_from_slice(pathspec);
        }
        Ok(CheckoutStatus::parse(&self.run(args)?))
    }

    /// The operation a person or a tool left unfinished in this checkout (a stopped rebase, a
    /// merge waiting for its commit, …), read from the git directory.
    pub fn operation_in_progress(&self) -> Result<Option<Operation>> {
        let dir = self.git_dir_fast()?;
        Ok(Operation::ALL
            .into_iter()
            .find(|op| op.markers().iter().any(|m| dir.join(m).exists())))
    }

    /// Whether this checkout is in the middle of a rebase (`git rebase` or `git am`).
    pub fn rebase_in_progress(&self) -> Result<bool> {
        Ok(matches!(
            self.operation_in_progress()?,
            Some(Operation::Rebase | Operation::RebaseOrAm)
        ))
    }

    /// The git directory of this checkout: read from its `.git` when the directory is a work
    /// tree root (no git process), else asked of git.
    fn git_dir_fast(&self) -> Result<std::path::PathBuf> {
        match git_dir_of(self.dir()) {
            Some(dir) if dir.is_dir() => Ok(dir),
            Some(_) | None => self.git_dir(),
        }
    }
}

/// Branch, `HEAD` and uncommitted changes of a checkout ([`Git::checkout_status`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckoutStatus {
    /// `None` when `HEAD` is detached.
    pub branch: Option<String>,
    /// `None` when the branch has no commit yet.
    pub head: Option<String>,
    /// One `XY path` line per changed path and `?? path` per untracked one; empty when clean.
    pub changes: Vec<String>,
}

impl CheckoutStatus {
    /// Reads `git status --porcelain=v2 --branch` output.
    pub fn parse(out: &str) -> CheckoutStatus {
        let mut st = CheckoutStatus {
            branch: None,
            head: None,
            changes: Vec::new(),
        };
        for line in out.lines() {
            if let Some(oid) = line.strip_prefix("# branch.oid ") {
                st.head = (oid != "(initial)").then(|| oid.to_string());
            } else if let Some(b) = line.strip_prefix("# branch.head ") {
                st.branch = (b != "(detached)").then(|| b.to_string());
            } else if !line.starts_with('#') && !line.is_empty() {
                st.changes.push(short_status(line));
            }
        }
        st
    }

    /// No changed and no untracked paths.
    pub fn clean(&self) -> bool {
        self.changes.is_empty()
    }

    /// The untracked paths.
    pub fn untracked(&self) -> impl Iterator<Item = &str> {
        self.changes.iter().filter_map(|c| c.strip_prefix("?? "))
    }

    /// This status without the untracked paths inside a folder named `dir`, at any depth (a
    /// file of that name still counts). Changes to tracked files there still count.
    pub fn without_untracked_in(mut self, dir: &str) -> CheckoutStatus {
        self.changes.retain(|c| {
            !c.strip_prefix("?? ")
                .is_some_and(|path| path.split('/').rev().skip(1).any(|part| part == dir))
        });
        self
    }
}

/// A porcelain v2 entry reduced to `XY path` (the object ids and modes are noise for people).
fn short_status(line: &str) -> String {
    let fields: Vec<&str> = line.splitn(11, ' ').collect();
    match fields.first().copied() {
        Some("1") if fields.len() >= 9 => format!("{} {}", fields[1], fields[8..].join(" ")),
        Some("2") if fields.len() >= 10 => format!("{} {}", fields[1], fields[9..].join(" ")),
        Some("u") if fields.len() >= 11 => format!("{} {}", fields[1], fields[10]),
        Some("?") => format!("?? {}", &line[2..]),
        _ => line.to_string(),
    }
}

/// An operation left in progress in a checkout ([`Git::operation_in_progress`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// `rebase-merge/`: an interactive or merge-backed rebase.
    Rebase,
    /// `rebase-apply/`: an apply-backed rebase or `git am`.
    RebaseOrAm,
    Merge,
    CherryPick,
    Revert,
}

impl Operation {
    const ALL: [Operation; 5] = [
        Operation::Rebase,
        Operation::RebaseOrAm,
        Operation::Merge,
        Operation::CherryPick,
        Operation::Revert,
    ];

    /// The entries of the git directory whose presence means the operation is under way.
    fn markers(self) -> &'static [&'static str] {
        match self {
            Operation::Rebase => &["rebase-merge"],
            Operation::RebaseOrAm => &["rebase-apply"],
            Operation::Merge => &["MERGE_HEAD"],
            Operation::CherryPick => &["CHERRY_PICK_HEAD"],
            Operation::Revert => &["REVERT_HEAD"],
        }
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Operation::Rebase => "rebase",
            Operation::RebaseOrAm => "rebase or am",
            Operation::Merge => "merge",
            Operation::CherryPick => "cherry-pick",
            Operation::Revert => "revert",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn porcelain_v2_is_read_into_branch_head_and_short_entries() {
        let out = "# branch.oid 1234\n# branch.head main\n1 .M N... 100644 100644 100644 aaa bbb src/a b.rs\n2 R. N... 100644 100644 100644 aaa bbb R100 new.rs\told.rs\nu UU N... 100644 100644 100644 100644 a b c both.rs\n? new file.txt\n";
        let st = CheckoutStatus::parse(out);
        assert_eq!(st.branch.as_deref(), Some("main"));
        assert_eq!(st.head.as_deref(), Some("1234"));
        assert_eq!(
            st.changes,
            vec![
                ".M src/a b.rs".to_string(),
                "R. new.rs\told.rs".to_string(),
                "UU both.rs".to_string(),
                "?? new file.txt".to_string(),
            ]
        );
        assert_eq!(st.untracked().collect::<Vec<_>>(), vec!["new file.txt"]);
        let st = CheckoutStatus::parse(
            "# branch.oid 1\n# branch.head main\n\
             1 .M N... 100644 100644 100644 aaa bbb .baton/config.toml\n\
             ? .baton/roles/\n? .baton\n? sub/.baton/config.toml\n? x/.batonx/y\n",
        )
        .without_untracked_in(".baton");
        assert_eq!(
            st.changes,
            [".M .baton/config.toml", "?? .baton", "?? x/.batonx/y"]
        );
        let unborn = CheckoutStatus::parse("# branch.oid (initial)\n# branch.head (detached)\n");
        assert_eq!((unborn.branch, unborn.head), (None, None));
        assert!(unborn.changes.is_empty());
    }
}
