//! A BUILD in a worktree at its end: its change committed on its branch, then the user's
//! finishing choice (merge, keep, pull request, discard) carried out.

use super::preflight::git;

/// Commits everything the workflow changed in its worktree (nothing to commit is fine).
pub(super) fn commit_worktree(
    wt: &baton_exec::worktree::ChildWorktree,
    request: &str,
) -> Result<(), String> {
    git(&wt.path, &["add", "-A"])?;
    let clean = baton_git::Git::new(&wt.path)
        .run_output(["diff", "--cached", "--quiet", "--no-ext-diff"])
        .map_err(|e| e.to_string())?
        .status
        .success();
    if !clean {
        let subject: String = request
            .lines()
            .next()
            .unwrap_or("baton workflow")
            .chars()
            .take(72)
            .collect();
        git(
            &wt.path,
            &[
                "commit",
                "-q",
                "-m",
                &subject,
                "-m",
                &format!("Made by baton workflow {}.", wt.id),
            ],
        )?;
    }
    Ok(())
}

/// Carries out the finishing choice on the workflow's branch; the text says what was done.
/// `merge` keeps cc10x's merge-then-cleanup order: the fast-forward, then `verify` on the merged
/// tree (the test suite against the baseline), and only when that is green the worktree's
/// removal, then the branch's.
pub(super) async fn apply_finish(
    root: &std::path::Path,
    wt: &baton_exec::worktree::ChildWorktree,
    choice: &str,
    verify: impl std::future::Future<Output = Result<Option<String>, String>>,
) -> Result<String, String> {
    let path = wt.path.display().to_string();
    match choice {
        "merge" => {
            super::preflight::merge_target(root, &wt.branch)?;
            let head = git(root, &["rev-parse", "--abbrev-ref", "HEAD"])?;
            // cc10x: the base is brought up to date first when it follows a remote branch.
            if git(root, &["rev-parse", "--abbrev-ref", "@{upstream}"]).is_ok() {
                git(root, &["pull", "--ff-only", "-q"]).map_err(|e| format!("{e}\nthe base branch {head} could not be brought up to date with its remote: pull it yourself and answer merge again, or answer keep"))?;
            }
            git(root, &["merge", "--ff-only", "-q", &wt.branch]).map_err(|e| {
                format!("{e}\nthe base branch {head} moved on: rebase {} onto it (in {path}) and answer merge again, or answer keep", wt.branch)
            })?;
            let checked = match verify.await {
                Err(broken) => {
                    return Ok(format!(
                        "merged {} into {head} (fast-forward), but on the merged tree {broken}: the worktree {path} and the branch are kept — fix it there, or revert the merge (git reset --keep ORIG_HEAD)",
                        wt.branch
                    ))
                }
                Ok(Some(green)) => format!("; {green}"),
                Ok(None) => String::new(),
            };
            git(root, &["worktree", "remove", &path])?;
            git(root, &["branch", "-d", &wt.branch])?;
            Ok(format!("merged {} into {head} (fast-forward){checked}; the worktree and the branch are removed", wt.branch))
        }
        "pr" => {
            // Pushed as it is, never forced; the worktree stays (the user still needs it).
            let remote = git(root, &["remote"])?;
            let Some(remote) = remote.lines().find(|r| *r == "origin").or(remote.lines().next()) else {
                return Err("the repository has no remote to push to: add one (git remote add origin URL) and answer pr again, or answer keep".into());
            };
            git(&wt.path, &["push", "-u", remote, &wt.branch])?;
            Ok(format!(
                "pushed branch {} to {remote} (worktree {path} kept). Open the pull request: gh pr create --head {} --fill",
                wt.branch, wt.branch
            ))
        }
        "keep" => Ok(format!(
            "kept branch {} (worktree {path}). For a pull request: git push -u origin {} && gh pr create --head {} --fill",
            wt.branch, wt.branch, wt.branch
        )),
        "discard" => {
            git(root, &["worktree", "remove", "--force", &path])?;
            git(root, &["branch", "-D", &wt.branch])?;
            Ok(format!("discarded: worktree {path} and branch {} removed", wt.branch))
        }
        other => Err(format!("{other:?} is not a finishing choice: merge, keep, pr or discard")),
    }
}
