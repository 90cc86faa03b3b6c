#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};

use baton_git::{CommitSummary, Git, GitError, RebaseOutcome, WorktreeInfo};
use pretty_assertions::assert_eq;
use tempfile::TempDir;

/// A git handle with a fixed identity and none of the host's global settings.
fn git(dir: &Path) -> Git {
    Git::new(dir)
        .with_env("GIT_CONFIG_GLOBAL", "/dev/null")
        .with_env("GIT_CONFIG_NOSYSTEM", "1")
        .with_env("GIT_AUTHOR_NAME", "Test Author")
        .with_env("GIT_AUTHOR_EMAIL", "author@example.invalid")
        .with_env("GIT_COMMITTER_NAME", "Test Committer")
        .with_env("GIT_COMMITTER_EMAIL", "committer@example.invalid")
        .with_config("commit.gpgSign", "false")
}

/// A new repository on `main`, with one commit unless `unborn`.
fn repo(unborn: bool) -> (TempDir, Git) {
    let tmp = TempDir::new().unwrap();
    let dir = tmp.path().join("repo");
    let g = git(&dir);
    g.init("main").unwrap();
    if !unborn {
        write(&dir, "README", "hello\n");
        g.commit_all("initial").unwrap().unwrap();
    }
    (tmp, g)
}

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).unwrap();
    }
    fs::write(path, text).unwrap();
}

fn canonical(p: &Path) -> PathBuf {
    fs::canonicalize(p).unwrap()
}

#[test]
fn identifies_repositories_and_their_directories() {
    let (tmp, g) = repo(false);
    assert!(g.is_repo());
    assert_eq!(canonical(&g.toplevel().unwrap()), canonical(g.dir()));
    assert_eq!(
        g.git_common_dir().unwrap(),
        canonical(&g.dir().join(".git"))
    );
    assert_eq!(g.git_dir().unwrap(), canonical(&g.dir().join(".git")));

    write(g.dir(), "sub/deeper/file", "x");
    let inner = git(&g.dir().join("sub/deeper"));
    assert_eq!(canonical(&inner.toplevel().unwrap()), canonical(g.dir()));

    let plain = tmp.path().join("plain");
    fs::create_dir(&plain).unwrap();
    let not = git(&plain);
    assert!(!not.is_repo());
    assert!(matches!(not.toplevel(), Err(GitError::NotARepo { .. })));
    let msg = not.head_oid().unwrap_err().to_string();
    assert!(msg.contains("not inside a git repository"), "{msg}");
}

#[test]
fn head_and_branch_in_unborn_attached_and_detached_states() {
    let (_tmp, g) = repo(true);
    assert_eq!(g.head_oid().unwrap(), None);
    assert_eq!(g.current_branch().unwrap(), Some("main".to_string()));

    write(g.dir(), "a", "a");
    let first = g.commit_all("first").unwrap().unwrap();
    assert_eq!(first.len(), 40);
    assert_eq!(g.head_oid().unwrap(), Some(first.clone()));
    assert_eq!(g.rev_parse("HEAD").unwrap(), first);
    assert_eq!(g.rev_parse_commit("main").unwrap(), first);
    assert_eq!(g.branch_oid("main").unwrap(), Some(first.clone()));
    assert_eq!(g.branch_oid("nope").unwrap(), None);

    g.run(["checkout", "-q", "--detach"]).unwrap();
    assert_eq!(g.current_branch().unwrap(), None);
    assert_eq!(g.head_oid().unwrap(), Some(first));
}

#[test]
fn cleanliness_counts_staged_unstaged_and_untracked_but_not_ignored() {
    let (_tmp, g) = repo(false);
    assert!(g.is_clean().unwrap());
    assert_eq!(g.status_porcelain().unwrap(), "");

    write(g.dir(), ".gitignore", "target/\n");
    g.commit_all("ignore target").unwrap().unwrap();
    write(g.dir(), "target/out.o", "binary");
    assert!(g.is_clean().unwrap(), "ignored files do not count");

    write(g.dir(), "new/untracked.txt", "u");
    assert!(!g.is_clean().unwrap());
    assert_eq!(g.status_porcelain().unwrap(), "?? new/untracked.txt\n");
    fs::remove_dir_all(g.dir().join("new")).unwrap();

    write(g.dir(), "README", "changed\n");
    assert!(!g.is_clean().unwrap());
    g.run(["add", "README"]).unwrap();
    assert!(!g.is_clean().unwrap());
    assert_eq!(g.status_porcelain().unwrap(), "M  README\n");
}

#[test]
fn commit_all_commits_only_when_something_changed() {
    let (_tmp, g) = repo(false);
    assert_eq!(g.commit_all("nothing").unwrap(), None);
    write(g.dir(), "b", "b");
    let oid = g.commit_all("add b").unwrap().unwrap();
    assert_eq!(g.head_oid().unwrap(), Some(oid));
    assert_eq!(g.run(["log", "-1", "--format=%s"]).unwrap(), "add b\n");
    assert!(g.is_clean().unwrap());
}

#[test]
fn commit_all_skips_hooks() {
    let (_tmp, g) = repo(false);
    let hook = g.dir().join(".git/hooks/pre-commit");
    fs::write(&hook, "#!/bin/sh\nexit 1\n").unwrap();
    make_executable(&hook);
    write(g.dir(), "c", "c");
    assert!(g.commit_all("despite the hook").unwrap().is_some());
}

#[cfg(unix)]
fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn history_queries() {
    let (_tmp, g) = repo(false);
    let base = g.head_oid().unwrap().unwrap();
    write(g.dir(), "one", "1");
    let c1 = g.commit_all("one").unwrap().unwrap();
    write(g.dir(), "two", "2");
    let c2 = g.commit_all("two").unwrap().unwrap();

    assert_eq!(
        g.commits_between(&base, &c2).unwrap(),
        vec![c1.clone(), c2.clone()]
    );
    assert_eq!(g.commits_between(&c2, &base).unwrap(), Vec::<String>::new());
    assert_eq!(
        g.commit_summaries(&base, "HEAD").unwrap(),
        vec![
            CommitSummary {
                oid: c1.clone(),
                subject: "one".into()
            },
            CommitSummary {
                oid: c2.clone(),
                subject: "two".into()
            },
        ]
    );
    assert!(g.is_ancestor(&base, &c2).unwrap());
    assert!(g.is_ancestor(&c2, &c2).unwrap());
    assert!(!g.is_ancestor(&c2, &base).unwrap());
    assert_eq!(g.merge_base(&c1, &c2).unwrap(), Some(c1.clone()));
    assert_eq!(
        g.changed_paths(&base, &c2).unwrap(),
        vec!["one".to_string(), "two".to_string()]
    );

    // An unrelated root commit shares no history.
    g.run(["checkout", "-q", "--orphan", "other"]).unwrap();
    g.run(["rm", "-rq", "--cached", "."]).unwrap();
    for f in ["README", "one", "two"] {
        fs::remove_file(g.dir().join(f)).unwrap();
    }
    write(g.dir(), "lonely", "l");
    let orphan = g.commit_all("orphan").unwrap().unwrap();
    assert_eq!(g.merge_base(&orphan, &c2).unwrap(), None);

    assert!(matches!(
        g.is_ancestor("no-such-rev", &c2),
        Err(GitError::Failed { .. })
    ));
}

#[test]
fn worktrees_are_added_listed_and_removed() {
    let (tmp, g) = repo(false);
    let head = g.head_oid().unwrap().unwrap();
    let wt = tmp.path().join("wts/one");
    g.worktree_add(&wt, "feature/one", &head).unwrap();
    assert!(g.branch_exists("feature/one").unwrap());
    let w = git(&wt);
    assert_eq!(w.current_branch().unwrap(), Some("feature/one".to_string()));
    assert_eq!(w.git_common_dir().unwrap(), g.git_common_dir().unwrap());
    assert_ne!(w.git_dir().unwrap(), g.git_dir().unwrap());
    // Both from one process, as each alone says.
    assert_eq!(
        w.git_dirs().unwrap(),
        (w.git_dir().unwrap(), w.git_common_dir().unwrap())
    );
    assert_eq!(
        g.git_dirs().unwrap(),
        (g.git_dir().unwrap(), g.git_common_dir().unwrap())
    );

    let list = g.worktree_list().unwrap();
    assert_eq!(
        list,
        vec![
            WorktreeInfo {
                path: canonical(g.dir()),
                head: Some(head.clone()),
                branch: Some("main".into()),
                bare: false,
                detached: false,
                locked: None,
                prunable: None,
            },
            WorktreeInfo {
                path: canonical(&wt),
                head: Some(head.clone()),
                branch: Some("feature/one".into()),
                bare: false,
                detached: false,
                locked: None,
                prunable: None,
            },
        ]
    );

    // The branch and the path are both refused a second time.
    let again = g.worktree_add(&tmp.path().join("wts/two"), "feature/one", &head);
    let msg = again.unwrap_err().to_string();
    assert!(msg.contains("already exists"), "{msg}");
    let again = g.worktree_add(&wt, "feature/other", &head);
    assert!(again.is_err());

    // A checked-out branch cannot be deleted; a dirty worktree is not removed without force.
    assert!(g.branch_delete("feature/one", false).is_err());
    write(&wt, "scratch", "s");
    let refused = g.worktree_remove(&wt, false).unwrap_err();
    assert!(refused.to_string().contains("untracked"), "{refused}");
    g.worktree_remove(&wt, true).unwrap();
    assert!(!wt.exists());
    g.branch_delete("feature/one", false).unwrap();
    assert!(!g.branch_exists("feature/one").unwrap());
    assert_eq!(g.worktree_list().unwrap().len(), 1);
}

#[test]
fn worktree_add_runs_no_checkout_hook() {
    let (tmp, g) = repo(false);
    let marker = tmp.path().join("hook-ran");
    let hook = g.dir().join(".git/hooks/post-checkout");
    fs::write(
        &hook,
        format!("#!/bin/sh\ntouch '{}'\nexit 1\n", marker.display()),
    )
    .unwrap();
    make_executable(&hook);
    let wt = tmp.path().join("wt");
    g.worktree_add(&wt, "b", "HEAD").unwrap();
    assert!(!marker.exists());
}

#[test]
fn pruning_forgets_deleted_worktree_directories() {
    let (tmp, g) = repo(false);
    let wt = tmp.path().join("gone");
    g.worktree_add(&wt, "gone", "HEAD").unwrap();
    fs::remove_dir_all(&wt).unwrap();
    let list = g.worktree_list().unwrap();
    assert!(list[1].prunable.is_some());
    g.worktree_prune().unwrap();
    assert_eq!(g.worktree_list().unwrap().len(), 1);
    // The branch survives pruning.
    assert!(g.branch_exists("gone").unwrap());
    g.branch_delete("gone", true).unwrap();
}

#[test]
fn unmerged_branch_needs_force_to_delete() {
    let (tmp, g) = repo(false);
    let wt = tmp.path().join("wt");
    g.worktree_add(&wt, "work", "HEAD").unwrap();
    let w = git(&wt);
    write(&wt, "w", "w");
    w.commit_all("work").unwrap().unwrap();
    g.worktree_remove(&wt, false).unwrap();
    let err = g.branch_delete("work", false).unwrap_err();
    assert!(err.to_string().contains("not fully merged"), "{err}");
    g.branch_delete("work", true).unwrap();
}

/// main with one commit, a worktree on `unit` forked from it, and main advanced by one commit.
fn diverged(unit_file: &str, unit_text: &str) -> (TempDir, Git, Git, String) {
    let (tmp, g) = repo(false);
    let wt = tmp.path().join("unit");
    g.worktree_add(&wt, "unit", "HEAD").unwrap();
    let w = git(&wt);
    write(&wt, unit_file, unit_text);
    w.commit_all("unit change").unwrap().unwrap();
    write(g.dir(), "README", "main moved on\n");
    let main_tip = g.commit_all("main change").unwrap().unwrap();
    (tmp, g, w, main_tip)
}

#[test]
fn rebase_replays_onto_an_advanced_main_then_fast_forwards() {
    let (_tmp, g, w, main_tip) = diverged("feature.txt", "f\n");
    let outcome = w.rebase(&main_tip).unwrap();
    let RebaseOutcome::Rebased { head } = outcome else {
        panic!("expected a clean rebase, got {outcome:?}");
    };
    assert_eq!(w.head_oid().unwrap(), Some(head.clone()));
    assert_eq!(w.commits_between(&main_tip, &head).unwrap().len(), 1);
    assert!(w.is_ancestor(&main_tip, &head).unwrap());

    // Rebasing again is a no-op that still reports the head.
    assert_eq!(
        w.rebase(&main_tip).unwrap(),
        RebaseOutcome::Rebased { head: head.clone() }
    );

    g.merge_ff_only(&head).unwrap();
    assert_eq!(g.head_oid().unwrap(), Some(head));
    assert!(g.dir().join("feature.txt").exists());
}

#[test]
fn rebase_conflict_is_aborted_with_diagnostics() {
    let (_tmp, _g, w, main_tip) = diverged("README", "unit says otherwise\n");
    let before = w.head_oid().unwrap().unwrap();
    let outcome = w.rebase(&main_tip).unwrap();
    let RebaseOutcome::Conflict {
        diagnostics,
        conflicted_paths,
    } = outcome
    else {
        panic!("expected a conflict, got {outcome:?}");
    };
    assert!(diagnostics.contains("CONFLICT"), "{diagnostics}");
    assert_eq!(conflicted_paths, vec!["README".to_string()]);
    assert!(!w.rebase_in_progress().unwrap());
    assert_eq!(w.head_oid().unwrap(), Some(before));
    assert_eq!(w.current_branch().unwrap(), Some("unit".to_string()));
    assert!(w.is_clean().unwrap());
}

#[test]
fn rebase_drops_a_commit_already_in_main() {
    let (tmp, g) = repo(false);
    let wt = tmp.path().join("unit");
    g.worktree_add(&wt, "unit", "HEAD").unwrap();
    let w = git(&wt);
    write(&wt, "same", "same\n");
    w.commit_all("same change").unwrap().unwrap();
    write(g.dir(), "same", "same\n");
    let main_tip = g.commit_all("same change, landed first").unwrap().unwrap();
    assert_eq!(
        w.rebase(&main_tip).unwrap(),
        RebaseOutcome::Rebased {
            head: main_tip.clone()
        }
    );
}

#[test]
fn rebase_onto_moves_only_commits_after_upstream() {
    let (_tmp, _g, w, main_tip) = diverged("x", "x\n");
    let upstream = w.rev_parse("HEAD~1").unwrap();
    let outcome = w.rebase_onto(&main_tip, &upstream).unwrap();
    let RebaseOutcome::Rebased { head } = outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(w.commits_between(&main_tip, &head).unwrap().len(), 1);
}

#[test]
fn rebase_refused_for_a_dirty_tree_is_an_error_not_a_conflict() {
    let (_tmp, _g, w, main_tip) = diverged("x", "x\n");
    write(w.dir(), "x", "dirty\n");
    let err = w.rebase(&main_tip).unwrap_err();
    assert!(matches!(err, GitError::Failed { .. }), "{err:?}");
}

#[test]
fn fast_forward_only_refuses_divergence() {
    let (_tmp, g, w, _main_tip) = diverged("x", "x\n");
    let unit_tip = w.head_oid().unwrap().unwrap();
    let err = g.merge_ff_only(&unit_tip).unwrap_err();
    match &err {
        GitError::Failed { args, code, .. } => {
            assert_eq!(args[0], "merge");
            assert_eq!(*code, Some(128));
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("git merge --ff-only"), "{err}");
}

#[test]
fn diff_is_an_exact_applicable_patch_including_binary_and_non_utf8() {
    let (tmp, g) = repo(false);
    let base = g.head_oid().unwrap().unwrap();
    fs::write(g.dir().join("blob.bin"), [0u8, 1, 2, 255, 0, 7]).unwrap();
    fs::write(g.dir().join("latin1.txt"), b"caf\xe9\n").unwrap();
    write(g.dir(), "README", "hello\nworld\n");
    let tip = g.commit_all("mixed").unwrap().unwrap();

    // User settings that would change a porcelain diff must not change this one.
    let styled = g
        .clone()
        .with_config("diff.noprefix", "true")
        .with_config("color.ui", "always")
        .with_config("diff.mnemonicPrefix", "true");
    let patch = styled.diff(&base, &tip).unwrap();
    let text = String::from_utf8_lossy(&patch);
    assert!(text.contains("diff --git a/README b/README"), "{text}");
    assert!(text.contains("GIT binary patch"), "{text}");
    assert!(!text.contains('\u{1b}'));
    assert!(patch.windows(4).any(|w| w == b"caf\xe9"));
    let index_line = text.lines().find(|l| l.starts_with("index ")).unwrap();
    assert!(
        index_line.len() >= "index ".len() + 40 + 2 + 40,
        "{index_line}"
    );

    // Applying the patch to base reproduces tip's tree.
    let check = tmp.path().join("check");
    g.worktree_add(&check, "check", &base).unwrap();
    let patch_file = tmp.path().join("p.patch");
    fs::write(&patch_file, &patch).unwrap();
    let c = git(&check);
    c.run(["apply", "--index", patch_file.to_str().unwrap()])
        .unwrap();
    let applied = c.run(["write-tree"]).unwrap();
    let expected = g.run(["rev-parse", &format!("{tip}^{{tree}}")]).unwrap();
    assert_eq!(applied, expected);
}

#[test]
fn add_exclude_is_idempotent_and_shared_by_worktrees() {
    let (tmp, g) = repo(false);
    let exclude = g.git_common_dir().unwrap().join("info/exclude");
    fs::write(&exclude, "# comment without newline").unwrap();
    g.add_exclude(".baton/state/").unwrap();
    g.add_exclude(".baton/state/").unwrap();

    let wt = tmp.path().join("wt");
    g.worktree_add(&wt, "wt", "HEAD").unwrap();
    git(&wt).add_exclude(".baton/state/").unwrap();
    git(&wt).add_exclude("*.tmp").unwrap();
    assert_eq!(
        fs::read_to_string(&exclude).unwrap(),
        "# comment without newline\n.baton/state/\n*.tmp\n"
    );

    write(g.dir(), ".baton/state/x.json", "{}");
    assert!(g.is_clean().unwrap());
    assert!(matches!(
        g.add_exclude("two\nlines"),
        Err(GitError::InvalidArgument { .. })
    ));
}

#[test]
fn add_exclude_creates_a_missing_info_directory() {
    let (_tmp, g) = repo(false);
    let info = g.git_common_dir().unwrap().join("info");
    fs::remove_dir_all(&info).unwrap();
    g.add_exclude("out/").unwrap();
    assert_eq!(fs::read_to_string(info.join("exclude")).unwrap(), "out/\n");
}

#[test]
fn errors_name_the_command_and_bound_stderr() {
    let (_tmp, g) = repo(false);
    let err = g.rev_parse("no-such-branch").unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.starts_with("`git rev-parse --verify no-such-branch` exited with code 128"),
        "{msg}"
    );
    assert!(err.stderr().is_some());

    let long = "x".repeat(10_000);
    let err = g.rev_parse(&long).unwrap_err();
    assert!(err.to_string().len() < 10_000 + 3_000);

    let missing = Git::new("/definitely/not/here");
    assert!(!missing.is_repo());
    assert!(missing.head_oid().is_err());
}

/// Parallel delegation adds worktrees from several threads at once; git's own worktree
/// administration would let one `worktree add` trip over another's half-written entry.
#[test]
fn worktrees_added_from_many_threads_at_once_all_succeed() {
    let (dir, g) = repo(false);
    let head = g.head_oid().unwrap().unwrap();
    for round in 0..4 {
        let results: Vec<Result<(), GitError>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8)
                .map(|i| {
                    let g = g.clone();
                    let head = head.clone();
                    let path = dir
                        .path()
                        .join(format!("../wt-{round}-{i}-{}", std::process::id()));
                    s.spawn(move || {
                        let r = g.worktree_add(&path, &format!("b-{round}-{i}"), &head);
                        let _ = g.worktree_remove(&path, true);
                        r
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for r in results {
            r.unwrap();
        }
    }
}

/// The same from several processes at once (two delegations or a delegation and a Flow in one
/// repository): each child process is this test binary, told by `BATON_GIT_WT_CHILD` to add one
/// worktree and exit.
#[test]
fn worktrees_added_from_many_processes_at_once_all_succeed() {
    const TEST: &str = "worktrees_added_from_many_processes_at_once_all_succeed";
    if let Ok(spec) = std::env::var("BATON_GIT_WT_CHILD") {
        let mut parts = spec.split('\n');
        let (repo, path, branch, head) = (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
        );
        git(Path::new(repo))
            .worktree_add(Path::new(path), branch, head)
            .unwrap();
        return;
    }
    let (_dir, g) = repo(false);
    let head = g.head_oid().unwrap().unwrap();
    let spots = tempfile::tempdir().unwrap();
    for round in 0..3 {
        let children: Vec<_> = (0..6)
            .map(|i| {
                let path = spots.path().join(format!("wt-{round}-{i}"));
                let spec = format!(
                    "{}\n{}\nb-{round}-{i}\n{head}",
                    g.dir().display(),
                    path.display()
                );
                std::process::Command::new(std::env::current_exe().unwrap())
                    .args(["--exact", TEST, "--test-threads", "1"])
                    .env("BATON_GIT_WT_CHILD", spec)
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "a child's worktree add failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    assert_eq!(g.worktree_list().unwrap().len(), 1 + 3 * 6);
}

/// Every kind of program a repository's own files can make git run, planted in a repository:
/// none of them runs from any of baton's git operations.
#[test]
fn nothing_a_repository_configures_runs_from_baton_s_git() {
    let (tmp, g) = repo(false);
    let dir = g.dir().to_path_buf();
    let marks = tmp.path().join("marks");
    fs::create_dir(&marks).unwrap();
    let m = marks.display();
    let hooks = dir.join(".git/hooks");
    for hook in [
        "pre-commit",
        "prepare-commit-msg",
        "commit-msg",
        "post-commit",
        "reference-transaction",
        "post-index-change",
        "post-merge",
        "post-checkout",
        "post-rewrite",
        "pre-rebase",
        "pre-auto-gc",
    ] {
        let path = hooks.join(hook);
        fs::write(&path, format!("#!/bin/sh\ntouch {m}/hook-{hook}\n")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    }
    let script = |name: &str| format!("sh -c 'touch {m}/{name}; cat'");
    for (key, value) in [
        ("core.fsmonitor", format!("touch {m}/fsmonitor; false")),
        ("filter.evil.clean", script("clean")),
        ("filter.evil.smudge", script("smudge")),
        ("filter.evil.process", format!("touch {m}/process")),
        ("diff.external", format!("touch {m}/external-diff")),
        ("diff.evil.textconv", script("textconv")),
        ("core.pager", format!("touch {m}/pager")),
        ("core.editor", format!("touch {m}/editor")),
        ("commit.gpgSign", "true".to_string()),
        ("gpg.program", format!("touch {m}/gpg")),
    ] {
        g.run(["config", key, &value]).unwrap();
    }
    fs::write(
        dir.join(".git/info/attributes"),
        "* filter=evil diff=evil\n",
    )
    .unwrap();
    // Make a second branch with a commit, then exercise what baton does.
    g.run(["branch", "side"]).unwrap();
    let side = g.at(tmp.path().join("wt"));
    g.worktree_add(&tmp.path().join("wt"), "unit", "main")
        .unwrap();
    write(side.dir(), "b.txt", "b\n");
    side.commit_all("unit b").unwrap().unwrap();
    write(&dir, "a.txt", "a\n");
    g.status_porcelain().unwrap();
    g.checkout_status(&[]).unwrap();
    g.commit_all("main a").unwrap().unwrap();
    let base = g.head_oid().unwrap().unwrap();
    assert!(matches!(
        side.rebase("main").unwrap(),
        RebaseOutcome::Rebased { .. }
    ));
    g.diff(&base, "unit").unwrap();
    g.changed_paths(&base, "unit").unwrap();
    g.merge_ff_only(&side.head_oid().unwrap().unwrap()).unwrap();
    g.worktree_remove(&tmp.path().join("wt"), true).unwrap();
    g.branch_delete("unit", true).unwrap();
    g.add_exclude("target/").unwrap();
    let ran: Vec<String> = fs::read_dir(&marks)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(ran.is_empty(), "planted programs ran: {ran:?}");
}

/// What git would read besides `.git/config` — a `commondir` the model created, a
/// `config.worktree` under `extensions.worktreeConfig`, an include, a section name in another
/// case, a merge driver, an embedded repository added as a gitlink — runs nothing from baton's
/// git either: baton learns what to switch off from git's own reading of the config.
#[test]
fn drivers_git_reads_from_anywhere_in_the_repository_never_run_from_baton_s_git() {
    let (tmp, g) = repo(false);
    let dir = g.dir().to_path_buf();
    let marks = tmp.path().join("marks");
    fs::create_dir(&marks).unwrap();
    let m = marks.display();
    // `;` starts a comment in a config file: the program is a script.
    let evil = tmp.path().join("evil.sh");
    fs::write(&evil, format!("#!/bin/sh\ntouch {m}/$1\ncat\n")).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&evil, fs::Permissions::from_mode(0o755)).unwrap();
    }
    let e = evil.display();
    let filter = |name: &str| format!("\tclean = {e} {name}-clean\n\tsmudge = {e} {name}-smudge\n");
    // 1. A commondir sending git to a folder with a config of the model's.
    let x = dir.join(".git/x");
    fs::create_dir(&x).unwrap();
    for link in ["objects", "refs", "HEAD"] {
        std::os::unix::fs::symlink(dir.join(".git").join(link), x.join(link)).unwrap();
    }
    let mut config = fs::read_to_string(dir.join(".git/config")).unwrap();
    config.push_str(&format!("[Filter \"c\"]\n{}", filter("commondir")));
    config.push_str(&format!("[merge \"m\"]\n\tdriver = {e} merge-driver\n"));
    config.push_str("[extensions]\n\tworktreeConfig = true\n[include]\n\tpath = inc\n");
    fs::write(x.join("config"), config).unwrap();
    fs::write(
        x.join("inc"),
        format!("[filter \"i\"]\n{}", filter("include")),
    )
    .unwrap();
    fs::write(dir.join(".git/commondir"), "x\n").unwrap();
    // 2. A config.worktree, read under extensions.worktreeConfig.
    fs::write(
        dir.join(".git/config.worktree"),
        format!("[FILTER \"w\"]\n{}", filter("worktree")),
    )
    .unwrap();
    write(
        &dir,
        ".gitattributes",
        "c.txt filter=c\ni.txt filter=i\nw.txt filter=w\nm.txt merge=m\n",
    );
    // 3. An embedded repository with a filter of its own, added as a gitlink.
    let sub = dir.join("sub");
    git(&sub).init("main").unwrap();
    fs::write(
        sub.join(".git/config"),
        format!(
            "{}[filter \"s\"]\n{}",
            fs::read_to_string(sub.join(".git/config")).unwrap(),
            filter("embedded")
        ),
    )
    .unwrap();
    write(&sub, ".gitattributes", "* filter=s\n");
    write(&sub, "f.txt", "f\n");
    git(&sub).commit_all("sub").unwrap().unwrap();
    write(&sub, "f.txt", "changed\n");
    // A driver git really reads is one baton learns (and switches off).
    let learned = baton_git::repo_filter_overrides(&dir).unwrap().join(" ");
    for name in [
        "filter.c.clean=",
        "filter.i.smudge=",
        "filter.w.clean=",
        "merge.m.driver=false",
    ] {
        assert!(learned.contains(name), "{name} in {learned}");
    }
    for f in ["c.txt", "i.txt", "w.txt", "m.txt"] {
        write(&dir, f, "one\n");
    }
    g.status_porcelain().unwrap();
    g.checkout_status(&[]).unwrap();
    g.is_clean().unwrap();
    g.commit_all("files").unwrap().unwrap();
    let base = g.head_oid().unwrap().unwrap();
    // A merge through the driver: both sides change m.txt.
    g.worktree_add(&tmp.path().join("wt"), "unit", "main")
        .unwrap();
    let side = g.at(tmp.path().join("wt"));
    write(side.dir(), "m.txt", "unit\n");
    side.commit_all("unit m").unwrap().unwrap();
    write(&dir, "m.txt", "main\n");
    write(&dir, "c.txt", "two\n");
    g.status_porcelain().unwrap();
    g.commit_all("main m").unwrap().unwrap();
    let _ = side.rebase("main");
    g.diff(&base, "main").unwrap();
    let ran: Vec<String> = fs::read_dir(&marks)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(ran.is_empty(), "planted programs ran: {ran:?}");
}

/// A git that does not answer within the limit is killed with everything it started (its
/// process group), and the call says so instead of waiting.
#[test]
fn a_git_past_its_limit_is_killed_with_what_it_started() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("shell.pid");
    let g = Git::new(dir.path()).with_config(
        "alias.hang",
        &format!("!echo $$ > {}; sleep 30", pid_file.display()),
    );
    let quick = g
        .run_output_within(["--version"], std::time::Duration::from_secs(30))
        .unwrap()
        .expect("git --version answers");
    assert!(quick.status.success());
    let hung = g
        .run_output_within(["hang"], std::time::Duration::from_millis(500))
        .unwrap();
    assert!(hung.is_none(), "{hung:?}");
    // The alias's shell (a grandchild of the call) is gone too: dead, or a zombie not yet reaped.
    let pid = fs::read_to_string(&pid_file).unwrap().trim().to_string();
    let stat = Path::new("/proc").join(&pid).join("stat");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while fs::read_to_string(&stat).is_ok_and(|s| !s.contains(") Z ")) {
        assert!(
            std::time::Instant::now() < deadline,
            "shell {pid} still runs"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// In a pinned work tree baton keeps what it learned of the repository's drivers while the
/// config holds the same bytes: a driver planted in the config afterwards, or in a file the config
/// includes, still never runs.
#[test]
fn a_driver_planted_after_baton_learned_the_config_never_runs_either() {
    let (tmp, g) = repo(false);
    let dir = g.dir().to_path_buf();
    let marks = tmp.path().join("marks");
    fs::create_dir(&marks).unwrap();
    // `;` starts a comment in a config file: the program is a script.
    let evil = tmp.path().join("evil.sh");
    fs::write(
        &evil,
        format!("#!/bin/sh\ntouch {}/$1\ncat\n", marks.display()),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&evil, fs::Permissions::from_mode(0o755)).unwrap();
    }
    let e = evil.display();
    fs::write(dir.join(".git/info/attributes"), "* filter=evil\n").unwrap();
    baton_git::pin::pin(&dir).unwrap().unwrap();
    let config = dir.join(".git/config");
    // Learned (and kept): nothing to switch off.
    write(&dir, "a.txt", "one\n");
    g.status_porcelain().unwrap();
    g.commit_all("a").unwrap().unwrap();
    // 1. A filter written into the config itself.
    let mut text = fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "[filter \"evil\"]\n\tclean = {e} clean\n\tsmudge = {e} smudge\n"
    ));
    fs::write(&config, text).unwrap();
    write(&dir, "a.txt", "two, longer\n");
    g.status_porcelain().unwrap();
    g.commit_all("a again").unwrap().unwrap();
    // 2. A config that includes another file, which gains a filter later.
    let text = fs::read_to_string(&config).unwrap().replace("evil", "gone");
    fs::write(&config, format!("{text}[include]\n\tpath = inc\n")).unwrap();
    fs::write(dir.join(".git/inc"), "").unwrap();
    g.status_porcelain().unwrap();
    fs::write(
        dir.join(".git/inc"),
        format!("[filter \"evil\"]\n\tclean = {e} included\n"),
    )
    .unwrap();
    write(&dir, "a.txt", "three, longer still\n");
    g.status_porcelain().unwrap();
    g.commit_all("a once more").unwrap().unwrap();
    let ran: Vec<String> = fs::read_dir(&marks)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(ran.is_empty(), "planted programs ran: {ran:?}");
}
