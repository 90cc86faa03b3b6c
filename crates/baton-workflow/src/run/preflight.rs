//! cc10x's git pre-flight (build-workflow 0a) and what the finishing step checks with it: the
//! workspace looked at with read-only git commands, once, before the first builder.

use std::path::Path;

use crate::artifact::Artifact;
use crate::state::{WorkflowState, WorktreeOffer};

/// Takes the worktree answer into the record and, when it stands, the git pre-flight of the
/// workspace it gives; the error when the worktree could not be made.
pub(super) fn settle_workspace(
    isolated: Result<(Option<baton_exec::worktree::ChildWorktree>, WorktreeOffer), String>,
    root: &Path,
    a: &mut Artifact,
    v: &mut WorkflowState,
) -> Option<String> {
    match isolated {
        Ok((wt, offer)) => {
            v.host.worktree = wt;
            v.host.worktree_offer = Some(offer);
            a.results.git_preflight = Some(git_preflight(workspace(v, root)));
            None
        }
        Err(e) => {
            v.host.worktree_offer = Some(WorktreeOffer::Failed);
            Some(e)
        }
    }
}

/// The folder a BUILD's agents work in: its worktree, or the project root.
fn workspace<'a>(v: &'a WorkflowState, root: &'a Path) -> &'a Path {
    v.host
        .worktree
        .as_ref()
        .map_or(root, |wt| wt.path.as_path())
}

/// cc10x's git pre-flight (build-workflow 0a): read-only, once, in the workspace the builders
/// will work in, before the first of them. A failed git command degrades it, never the run.
fn git_preflight(dir: &Path) -> crate::results::GitPreflight {
    use crate::results::{GitPreflight, Isolation};
    let ask = |args: &[&str]| git(dir, args);
    let look = || -> Result<GitPreflight, String> {
        let dir = ask(&["rev-parse", "--path-format=absolute", "--git-dir"])?;
        let common = ask(&["rev-parse", "--path-format=absolute", "--git-common-dir"])?;
        let isolated = if dir != common {
            Isolation::Worktree
        } else if !ask(&["rev-parse", "--show-superproject-working-tree"])?.is_empty() {
            Isolation::Submodule
        } else {
            Isolation::InPlace
        };
        let detached_head = baton_git::Git::new(dir)
            .current_branch()
            .map_err(|e| e.to_string())?
            .is_none();
        Ok(GitPreflight {
            isolated,
            detached_head,
            degraded: None,
        })
    };
    look().unwrap_or_else(|why| GitPreflight {
        isolated: Isolation::InPlace,
        detached_head: false,
        degraded: Some(why),
    })
}

/// A merge needs a branch to land on: the project's checkout on a detached HEAD is refused
/// (cc10x's reduced finishing menu), with what to do instead.
pub(super) fn merge_target(root: &Path, branch: &str) -> Result<(), String> {
    match baton_git::Git::new(root).current_branch() {
        Ok(Some(_)) => Ok(()),
        Ok(None) => Err(format!(
            "the project's checkout ({}) is on a detached HEAD: there is no branch to merge {branch} into. Check out a branch there and answer merge again, or answer pr or keep",
            root.display()
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// Runs baton's hardened git (`baton_git`) in `dir`; the error is git's own message.
pub(super) fn git(dir: &std::path::Path, args: &[&str]) -> Result<String, String> {
    let out = baton_git::Git::new(dir)
        .run_output(args)
        .map_err(|e| format!("cannot run git: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(format!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}
