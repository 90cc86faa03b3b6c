#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};

use baton_exec::worktree::{
    create_child_worktree, finalize_child_worktree, repo_folder_name, worktree_id, ChildWorktree,
    Finalized, Isolated, WorktreeError,
};
use baton_git::Git;
use pretty_assertions::assert_eq;
use tempfile::TempDir;

/// A temp directory holding `repo/` (a repository on `main` with one commit) and `root/`,
/// a worktree root outside it.
struct Fixture {
    tmp: TempDir,
}

impl Fixture {
    fn new() -> Self {
        let f = Fixture {
            tmp: TempDir::new().unwrap(),
        };
        let g = f.git(&f.repo());
        g.init("main").unwrap();
        write(&f.repo(), "README", "hello\n");
        write(&f.repo(), ".gitignore", "target/\n");
        write(&f.repo(), "src/lib.rs", "// lib\n");
        g.commit_all("initial").unwrap().unwrap();
        f
    }

    fn repo(&self) -> PathBuf {
        self.tmp.path().join("repo")
    }

    fn root(&self) -> PathBuf {
        self.tmp.path().join("root")
    }

    /// A handle with a fixed identity, independent of the host's git settings.
    fn git(&self, dir: &Path) -> Git {
        Git::new(dir)
            .with_env("GIT_CONFIG_GLOBAL", "/dev/null")
            .with_env("GIT_CONFIG_NOSYSTEM", "1")
            .with_env("GIT_AUTHOR_NAME", "Test")
            .with_env("GIT_AUTHOR_EMAIL", "test@example.invalid")
            .with_env("GIT_COMMITTER_NAME", "Test")
            .with_env("GIT_COMMITTER_EMAIL", "test@example.invalid")
    }

    fn create(&self, id: &str) -> ChildWorktree {
        match create_child_worktree(&self.repo(), &self.root(), id).unwrap() {
            Isolated::Worktree(wt) => wt,
            other => panic!("expected a worktree, got {other:?}"),
        }
    }

    fn head(&self) -> String {
        self.git(&self.repo()).head_oid().unwrap().unwrap()
    }

    fn branch_exists(&self, branch: &str) -> bool {
        self.git(&self.repo()).branch_exists(branch).unwrap()
    }
}

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn canonical(p: &Path) -> PathBuf {
    fs::canonicalize(p).unwrap()
}

#[test]
fn worktree_is_created_at_a_deterministic_path_outside_the_repository() {
    let f = Fixture::new();
    let wt = f.create("run1-0-impl");
    let common = canonical(&f.repo().join(".git"));
    let folder = repo_folder_name(&common);
    assert!(folder.starts_with("repo-"), "{folder}");
    assert_eq!(folder.len(), "repo-".len() + 12);
    assert_eq!(
        wt,
        ChildWorktree {
            id: "run1-0-impl".into(),
            repo_root: canonical(&f.repo()),
            path: canonical(&f.root()).join(&folder).join("run1-0-impl"),
            cwd: canonical(&f.root()).join(&folder).join("run1-0-impl"),
            branch: "baton/run1-0-impl".into(),
            base_oid: f.head(),
        }
    );
    assert!(!wt.path.starts_with(canonical(&f.repo())));
    assert!(wt.path.join("src/lib.rs").is_file());
    let w = f.git(&wt.path);
    assert_eq!(
        w.current_branch().unwrap(),
        Some("baton/run1-0-impl".into())
    );
    assert_eq!(w.head_oid().unwrap(), Some(f.head()));
}

#[test]
fn the_repository_folder_is_the_same_from_any_path_to_the_repository() {
    let f = Fixture::new();
    let a = f.create("a");
    // Through a symlink to the repository and from a subdirectory: same folder.
    let link = f.tmp.path().join("link");
    std::os::unix::fs::symlink(f.repo(), &link).unwrap();
    let b = match create_child_worktree(&link.join("src"), &f.root(), "b").unwrap() {
        Isolated::Worktree(wt) => wt,
        other => panic!("{other:?}"),
    };
    assert_eq!(a.path.parent(), b.path.parent());
    // From inside a linked worktree of the same repository: same folder again.
    let c = match create_child_worktree(&a.path, &f.root(), "c").unwrap() {
        Isolated::Worktree(wt) => wt,
        other => panic!("{other:?}"),
    };
    assert_eq!(a.path.parent(), c.path.parent());
    assert_eq!(c.repo_root, a.path);
}

#[test]
fn the_child_runs_in_the_same_subdirectory() {
    let f = Fixture::new();
    let wt = match create_child_worktree(&f.repo().join("src"), &f.root(), "sub").unwrap() {
        Isolated::Worktree(wt) => wt,
        other => panic!("{other:?}"),
    };
    assert_eq!(wt.cwd, wt.path.join("src"));
    assert_eq!(Isolated::Worktree(wt.clone()).cwd(), wt.path.join("src"));

    // An untracked directory has no counterpart in the checkout; it is created, empty.
    fs::create_dir_all(f.repo().join("scratch/deep")).unwrap();
    let wt = match create_child_worktree(&f.repo().join("scratch/deep"), &f.root(), "untracked-dir")
        .unwrap()
    {
        Isolated::Worktree(wt) => wt,
        other => panic!("{other:?}"),
    };
    assert_eq!(wt.cwd, wt.path.join("scratch/deep"));
    assert!(wt.cwd.is_dir());
    // An empty directory does not make the worktree dirty.
    assert_eq!(finalize_child_worktree(&wt).unwrap(), Finalized::Removed);
}

#[test]
fn siblings_get_distinct_worktrees_and_branches() {
    let f = Fixture::new();
    let ids: Vec<String> = (0..3)
        .map(|i| worktree_id("run7", i, "same name"))
        .collect();
    assert_eq!(
        ids,
        ["run7-0-same-name", "run7-1-same-name", "run7-2-same-name"]
    );
    let wts: Vec<ChildWorktree> = ids.iter().map(|id| f.create(id)).collect();
    for (i, a) in wts.iter().enumerate() {
        for b in &wts[i + 1..] {
            assert_ne!(a.path, b.path);
            assert_ne!(a.branch, b.branch);
        }
    }
    // An edit in one sibling is invisible to the others.
    write(&wts[0].path, "README", "sibling 0 was here\n");
    assert_eq!(
        fs::read_to_string(wts[1].path.join("README")).unwrap(),
        "hello\n"
    );
    assert_eq!(
        fs::read_to_string(f.repo().join("README")).unwrap(),
        "hello\n"
    );
}

#[test]
fn an_existing_path_or_branch_is_refused() {
    let f = Fixture::new();
    let wt = f.create("dup");
    let err = create_child_worktree(&f.repo(), &f.root(), "dup").unwrap_err();
    assert!(
        matches!(&err, WorktreeError::PathExists { path } if *path == wt.path),
        "{err}"
    );
    assert!(err.to_string().contains("already exists"), "{err}");

    // The directory is gone but the branch with its commit survived (KeptCommits).
    let w = f.git(&wt.path);
    write(&wt.path, "new.txt", "n\n");
    w.commit_all("work").unwrap().unwrap();
    assert!(matches!(
        finalize_child_worktree(&wt).unwrap(),
        Finalized::KeptCommits {
            path_removed: true,
            ..
        }
    ));
    let err = create_child_worktree(&f.repo(), &f.root(), "dup").unwrap_err();
    assert!(
        matches!(&err, WorktreeError::BranchExists { branch } if branch == "baton/dup"),
        "{err}"
    );
    assert!(err.to_string().contains("git branch -D baton/dup"), "{err}");

    // A stray file at the path is refused too, and left alone.
    // (The repository's folder was tidied away with the last worktree in it.)
    assert!(!wt.path.parent().unwrap().exists());
    let stray = wt.path.parent().unwrap().join("stray");
    fs::create_dir_all(stray.parent().unwrap()).unwrap();
    fs::write(&stray, "mine").unwrap();
    assert!(matches!(
        create_child_worktree(&f.repo(), &f.root(), "stray"),
        Err(WorktreeError::PathExists { .. })
    ));
    assert_eq!(fs::read_to_string(&stray).unwrap(), "mine");
}

#[test]
fn invalid_ids_are_refused_before_touching_git() {
    let f = Fixture::new();
    for id in ["", "../escape", "a/b", "-x", "x.lock"] {
        assert!(
            matches!(
                create_child_worktree(&f.repo(), &f.root(), id),
                Err(WorktreeError::InvalidId { .. })
            ),
            "{id:?}"
        );
    }
    assert!(!f.root().exists());
}

#[test]
fn a_root_inside_the_repository_is_refused() {
    let f = Fixture::new();
    let inside = f.repo().join(".worktrees");
    let err = create_child_worktree(&f.repo(), &inside, "x").unwrap_err();
    assert!(
        matches!(err, WorktreeError::InsideRepository { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("executor.worktree_root"), "{err}");
    assert!(!inside.exists(), "nothing is created on refusal");
    assert!(!f.branch_exists("baton/x"));
}

#[test]
fn outside_a_repository_the_entry_runs_in_place() {
    let tmp = TempDir::new().unwrap();
    let plain = tmp.path().join("plain");
    fs::create_dir(&plain).unwrap();
    let isolated = create_child_worktree(&plain, &tmp.path().join("root"), "x").unwrap();
    assert_eq!(
        isolated,
        Isolated::Fallback {
            cwd: plain.clone(),
            reason: "not a git repository".into()
        }
    );
    assert_eq!(isolated.cwd(), plain);
    assert!(isolated.to_string().contains("not a git repository"));
    assert!(!tmp.path().join("root").exists());
}

#[test]
fn with_an_unborn_head_the_entry_runs_in_place() {
    let tmp = TempDir::new().unwrap();
    let repo = tmp.path().join("fresh");
    Git::new(&repo).init("main").unwrap();
    let isolated = create_child_worktree(&repo, &tmp.path().join("root"), "x").unwrap();
    assert_eq!(
        isolated,
        Isolated::Fallback {
            cwd: repo,
            reason: "HEAD is unborn".into()
        }
    );
}

#[test]
fn finalize_clean_without_commits_removes_worktree_and_branch() {
    let f = Fixture::new();
    let wt = f.create("nothing");
    // Build output that .gitignore covers does not count as a change.
    write(&wt.path, "target/debug/out", "bin");
    assert_eq!(finalize_child_worktree(&wt).unwrap(), Finalized::Removed);
    assert!(!wt.path.exists());
    assert!(!f.branch_exists("baton/nothing"));
    assert_eq!(f.git(&f.repo()).worktree_list().unwrap().len(), 1);
    // The repository's folder under the root is tidied away once empty.
    assert!(!wt.path.parent().unwrap().exists());
}

#[test]
fn finalize_with_commits_keeps_the_branch_and_removes_the_directory() {
    let f = Fixture::new();
    let wt = f.create("commits");
    let w = f.git(&wt.path);
    write(&wt.path, "a.txt", "a\n");
    let c1 = w.commit_all("a").unwrap().unwrap();
    write(&wt.path, "b.txt", "b\n");
    let c2 = w.commit_all("b").unwrap().unwrap();

    let finalized = finalize_child_worktree(&wt).unwrap();
    assert_eq!(
        finalized,
        Finalized::KeptCommits {
            branch: "baton/commits".into(),
            commits: vec![c1, c2.clone()],
            path: wt.path.clone(),
            path_removed: true,
            warning: None,
        }
    );
    assert!(!wt.path.exists());
    assert_eq!(
        f.git(&f.repo()).branch_oid("baton/commits").unwrap(),
        Some(c2)
    );
    let text = finalized.to_string();
    assert!(
        text.contains("2 commits kept on branch baton/commits"),
        "{text}"
    );
}

#[test]
fn finalize_with_uncommitted_tracked_changes_keeps_the_worktree() {
    let f = Fixture::new();
    let wt = f.create("dirty");
    write(&wt.path, "README", "edited\n");
    let finalized = finalize_child_worktree(&wt).unwrap();
    let Finalized::KeptChanges {
        path,
        branch,
        commits,
        reason,
        recovery,
    } = &finalized
    else {
        panic!("{finalized:?}");
    };
    assert_eq!(path, &wt.path);
    assert_eq!(branch, "baton/dirty");
    assert!(commits.is_empty());
    assert_eq!(reason, "uncommitted changes");
    assert!(
        recovery.contains(&format!("cd {} && git status", wt.path.display())),
        "{recovery}"
    );
    assert!(recovery.contains("branch -D baton/dirty"), "{recovery}");
    assert_eq!(
        fs::read_to_string(wt.path.join("README")).unwrap(),
        "edited\n"
    );
    assert!(f.branch_exists("baton/dirty"));
}

#[test]
fn finalize_with_only_an_untracked_file_keeps_the_worktree() {
    let f = Fixture::new();
    let wt = f.create("untracked");
    write(&wt.path, "notes/new.md", "draft\n");
    assert!(matches!(
        finalize_child_worktree(&wt).unwrap(),
        Finalized::KeptChanges { .. }
    ));
    assert!(wt.path.join("notes/new.md").is_file());
}

#[test]
fn finalize_with_commits_and_uncommitted_changes_reports_both() {
    let f = Fixture::new();
    let wt = f.create("both");
    let w = f.git(&wt.path);
    write(&wt.path, "done.txt", "done\n");
    let c = w.commit_all("done").unwrap().unwrap();
    write(&wt.path, "wip.txt", "wip\n");
    let finalized = finalize_child_worktree(&wt).unwrap();
    match &finalized {
        Finalized::KeptChanges {
            commits, reason, ..
        } => {
            assert_eq!(commits, &vec![c]);
            assert_eq!(reason, "uncommitted changes");
        }
        other => panic!("{other:?}"),
    }
    assert!(wt.path.join("wip.txt").is_file());
    let text = finalized.to_string();
    assert!(text.contains("1 commit ("), "{text}");
}

#[test]
fn finalize_with_head_detached_keeps_the_worktree() {
    let f = Fixture::new();
    let wt = f.create("detached");
    let w = f.git(&wt.path);
    w.run(["checkout", "-q", "--detach"]).unwrap();
    write(&wt.path, "x", "x\n");
    let c = w.commit_all("on a detached head").unwrap().unwrap();
    match finalize_child_worktree(&wt).unwrap() {
        Finalized::KeptChanges {
            commits, reason, ..
        } => {
            assert_eq!(commits, vec![c]);
            assert_eq!(reason, "HEAD is detached");
        }
        other => panic!("{other:?}"),
    }
    assert!(wt.path.exists());
}

#[test]
fn finalize_after_the_directory_was_deleted_judges_by_the_branch() {
    let f = Fixture::new();
    let empty = f.create("gone-empty");
    fs::remove_dir_all(&empty.path).unwrap();
    assert_eq!(finalize_child_worktree(&empty).unwrap(), Finalized::Removed);
    assert!(!f.branch_exists("baton/gone-empty"));

    let full = f.create("gone-full");
    write(&full.path, "f", "f\n");
    let c = f.git(&full.path).commit_all("f").unwrap().unwrap();
    fs::remove_dir_all(&full.path).unwrap();
    match finalize_child_worktree(&full).unwrap() {
        Finalized::KeptCommits {
            commits,
            path_removed,
            warning,
            ..
        } => {
            assert_eq!(commits, vec![c]);
            assert!(path_removed);
            assert!(warning.is_some());
        }
        other => panic!("{other:?}"),
    }
    assert!(f.branch_exists("baton/gone-full"));
    assert_eq!(f.git(&f.repo()).worktree_list().unwrap().len(), 1);
}

#[test]
fn creation_runs_no_checkout_hook() {
    let f = Fixture::new();
    let marker = f.tmp.path().join("hook-ran");
    let hook = f.repo().join(".git/hooks/post-checkout");
    fs::write(&hook, format!("#!/bin/sh\ntouch '{}'\n", marker.display())).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&hook, fs::Permissions::from_mode(0o755)).unwrap();
    }
    let wt = f.create("hooked");
    assert!(!marker.exists());
    assert_eq!(finalize_child_worktree(&wt).unwrap(), Finalized::Removed);
}

#[test]
fn results_round_trip_through_json() {
    let f = Fixture::new();
    let wt = f.create("json");
    let isolated = Isolated::Worktree(wt.clone());
    let text = serde_json::to_string(&isolated).unwrap();
    assert!(text.contains("\"kind\":\"worktree\""), "{text}");
    assert_eq!(serde_json::from_str::<Isolated>(&text).unwrap(), isolated);
    let finalized = finalize_child_worktree(&wt).unwrap();
    let text = serde_json::to_string(&finalized).unwrap();
    assert_eq!(text, "{\"kind\":\"removed\"}");
}
