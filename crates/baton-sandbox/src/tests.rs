//! These tests run real commands under real Landlock and seccomp rules.

use std::io::Read;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use super::*;

fn run(policy: &Policy, workspace: &Path, tmp: Option<&Path>, script: &str) -> Output {
    let confinement = policy.prepare(workspace, tmp).unwrap();
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(script)
        .current_dir(workspace)
        .stdin(Stdio::null());
    confinement.install(&mut cmd).unwrap();
    cmd.output().unwrap()
}

/// What a command printed, stdout then stderr.
fn both(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr)
}

fn policy(mode: SandboxMode) -> Policy {
    Policy {
        mode,
        ..Policy::default()
    }
}

#[test]
fn workspace_write_writes_inside_and_nowhere_else() {
    let ws = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let script = format!(
        "echo a > inside.txt && echo b > {tmp}/t.txt && echo c > /dev/null && echo d > {out}/x.txt",
        tmp = tmp.path().display(),
        out = outside.path().display()
    );
    let out = run(
        &policy(SandboxMode::WorkspaceWrite),
        ws.path(),
        Some(tmp.path()),
        &script,
    );
    assert!(!out.status.success());
    assert!(
        refused_write(&String::from_utf8_lossy(&out.stderr)),
        "{out:?}"
    );
    assert!(ws.path().join("inside.txt").is_file());
    assert!(tmp.path().join("t.txt").is_file());
    assert!(!outside.path().join("x.txt").exists());
    // Removing and renaming outside are writes too.
    std::fs::write(outside.path().join("keep.txt"), "x").unwrap();
    let script = format!(
        "rm -f {o}/keep.txt; mv {o}/keep.txt inside2.txt; mkdir {o}/d; ln -s /etc {o}/l; true",
        o = outside.path().display()
    );
    run(
        &policy(SandboxMode::WorkspaceWrite),
        ws.path(),
        None,
        &script,
    );
    assert!(outside.path().join("keep.txt").is_file());
    assert!(!outside.path().join("d").exists());
    assert!(!outside.path().join("l").exists());
}

#[test]
fn read_only_writes_only_the_temp_dir_and_dev_null() {
    let ws = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("f.txt"), "before").unwrap();
    let script = format!(
        "cat f.txt > {tmp}/copy.txt && echo x > /dev/null && echo y > f.txt",
        tmp = tmp.path().display()
    );
    let out = run(
        &policy(SandboxMode::ReadOnly),
        ws.path(),
        Some(tmp.path()),
        &script,
    );
    assert!(!out.status.success());
    assert_eq!(
        std::fs::read_to_string(ws.path().join("f.txt")).unwrap(),
        "before"
    );
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("copy.txt")).unwrap(),
        "before"
    );
    let out = run(
        &policy(SandboxMode::ReadOnly),
        ws.path(),
        None,
        "touch new.txt",
    );
    assert!(!out.status.success());
    assert!(!ws.path().join("new.txt").exists());
}

#[test]
fn writable_roots_extend_workspace_write_only() {
    let ws = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let mut p = policy(SandboxMode::WorkspaceWrite);
    p.writable_roots = vec![cache.path().to_path_buf(), ws.path().join("missing")];
    let script = format!("echo c > {}/c.txt", cache.path().display());
    assert!(run(&p, ws.path(), None, &script).status.success());
    p.mode = SandboxMode::ReadOnly;
    let script = format!("echo c > {}/d.txt", cache.path().display());
    assert!(!run(&p, ws.path(), None, &script).status.success());
    assert!(!cache.path().join("d.txt").exists());
}

#[test]
fn network_is_off_unless_asked() {
    let ws = tempfile::tempdir().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let tcp = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let udp = "exec 3<>/dev/udp/127.0.0.1/9 && echo udp-open";
    let off = policy(SandboxMode::WorkspaceWrite);
    let out = run(&off, ws.path(), None, &tcp);
    assert!(!out.status.success(), "{out:?}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("connected"));
    let out = run(&off, ws.path(), None, udp);
    assert!(!out.status.success(), "{out:?}");
    let on = Policy {
        network: true,
        ..off.clone()
    };
    let out = run(&on, ws.path(), None, &tcp);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("connected"));
    let _ = listener.accept().unwrap();
    assert!(run(&on, ws.path(), None, udp).status.success());
    // Unix sockets stay usable: `true` runs and the shell starts fine either way.
    assert!(run(&off, ws.path(), None, "true").status.success());
}

#[test]
fn a_confined_command_cannot_signal_processes_outside() {
    if Support::detect().landlock_abi < 6 {
        eprintln!("note: Landlock ABI < 6 here, signal scoping is not enforced");
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    let mut outsider = Command::new("sleep").arg("30").spawn().unwrap();
    let out = run(
        &policy(SandboxMode::WorkspaceWrite),
        ws.path(),
        None,
        &format!("kill -9 {}", outsider.id()),
    );
    assert!(!out.status.success(), "{out:?}");
    assert!(
        outsider.try_wait().unwrap().is_none(),
        "the outside process was killed"
    );
    outsider.kill().unwrap();
    outsider.wait().unwrap();
    // Inside its own sandbox a command still manages its children.
    let out = run(
        &policy(SandboxMode::WorkspaceWrite),
        ws.path(),
        None,
        "sleep 30 & kill $! && wait $!; echo $?",
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "143");
}

#[test]
fn danger_full_access_confines_nothing() {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let p = policy(SandboxMode::DangerFullAccess);
    assert!(!p.prepare(ws.path(), None).unwrap().is_confined());
    let script = format!("echo d > {}/x.txt", outside.path().display());
    assert!(run(&p, ws.path(), None, &script).status.success());
    assert!(outside.path().join("x.txt").is_file());
    assert!(p.writable(ws.path(), None).is_empty());
}

#[test]
fn without_landlock_a_confined_mode_fails_closed_naming_the_key() {
    let ws = tempfile::tempdir().unwrap();
    for mode in [SandboxMode::ReadOnly, SandboxMode::WorkspaceWrite] {
        let err = policy(mode)
            .spec_with(
                Support {
                    landlock_abi: 0,
                    namespace: Ok(Namespace::Mount),
                },
                ws.path(),
                None,
            )
            .unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, SandboxError::Unavailable { .. }));
        assert!(msg.contains(mode.as_str()), "{msg}");
        assert!(
            msg.contains("sandbox.mode = \"danger-full-access\""),
            "{msg}"
        );
        assert!(msg.contains("nothing was run"), "{msg}");
    }
}

#[test]
fn the_header_lists_what_may_be_written() {
    let ws = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let p = Policy {
        mode: SandboxMode::WorkspaceWrite,
        writable_roots: vec![tmp.path().to_path_buf()],
        network: false,
        hidden: Vec::new(),
        unix_sockets: Vec::new(),
        max_processes: None,
        max_memory: None,
    };
    assert_eq!(
        p.writable(ws.path(), None),
        vec![
            ws.path().to_path_buf(),
            tmp.path().to_path_buf(),
            "/dev/null".into()
        ]
    );
    let ro = Policy {
        mode: SandboxMode::ReadOnly,
        ..p
    };
    assert_eq!(
        ro.writable(ws.path(), Some(tmp.path())),
        vec![tmp.path().to_path_buf(), PathBuf::from("/dev/null")]
    );
}

#[test]
fn reads_stay_open() {
    let ws = tempfile::tempdir().unwrap();
    let out = run(
        &policy(SandboxMode::ReadOnly),
        ws.path(),
        None,
        "head -c 5 /etc/hostname >/dev/null && ls / >/dev/null && echo ok",
    );
    let mut s = String::new();
    out.stdout.as_slice().read_to_string(&mut s).unwrap();
    assert_eq!(s.trim(), "ok", "{out:?}");
}

#[test]
fn without_a_mount_namespace_a_confined_mode_fails_closed_naming_why() {
    let ws = tempfile::tempdir().unwrap();
    let err = policy(SandboxMode::WorkspaceWrite)
        .spec_with(
            Support {
                landlock_abi: 6,
                namespace: Err("user.max_user_namespaces is 0".into()),
            },
            ws.path(),
            None,
        )
        .unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("mount namespace"), "{msg}");
    assert!(msg.contains("user.max_user_namespaces is 0"), "{msg}");
    assert!(msg.contains("danger-full-access"), "{msg}");
}

/// A repository whose control files a confined command may read but not change.
fn repo() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    let ok = Command::new("git")
        .args(["init", "-q"])
        .current_dir(ws.path())
        .status()
        .unwrap()
        .success();
    assert!(ok);
    ws
}

#[test]
fn the_repository_s_control_files_and_baton_dir_are_read_only_inside_the_workspace() {
    let ws = repo();
    let script = "echo x > src.txt; \
        echo '[core]' >> .git/config; \
        echo boom > .git/hooks/pre-commit; \
        echo '* filter=x' > .git/info/attributes; \
        mkdir -p .baton/roles; echo 'mode = 1' > .baton/config.toml; \
        mv .git/config .git/config.old; rm -rf .git/hooks; \
        git -c user.name=t -c user.email=t@t commit -q --allow-empty -m m && echo committed";
    let out = run(
        &policy(SandboxMode::WorkspaceWrite),
        ws.path(),
        None,
        script,
    );
    let text = both(&out);
    assert!(ws.path().join("src.txt").is_file(), "{text}");
    let config = std::fs::read_to_string(ws.path().join(".git/config")).unwrap();
    assert_eq!(config.matches("[core]").count(), 1, "{config}");
    assert!(!ws.path().join(".git/hooks/pre-commit").exists());
    assert!(!ws.path().join(".git/info/attributes").exists());
    assert!(!ws.path().join(".baton/config.toml").exists());
    assert!(ws.path().join(".git/hooks").is_dir());
    assert!(text.contains("Read-only file system"), "{text}");
    // Objects, refs and the index stay writable: the commit went through.
    assert!(text.contains("committed"), "{text}");
}

#[test]
fn hidden_files_read_as_empty_and_capabilities_are_gone() {
    let ws = tempfile::tempdir().unwrap();
    let secret_dir = tempfile::tempdir().unwrap();
    std::fs::write(secret_dir.path().join("key"), "sk-secret").unwrap();
    let key_file = secret_dir.path().join("key2");
    std::fs::write(&key_file, "sk-file").unwrap();
    let sub = secret_dir.path().join("dir");
    std::fs::create_dir(&sub).unwrap();
    std::fs::write(sub.join("id"), "sk-dir").unwrap();
    let p = Policy {
        mode: SandboxMode::WorkspaceWrite,
        hidden: vec![key_file.clone(), sub.clone()],
        ..Policy::default()
    };
    let script = format!(
        "cat {f}; cat {d}/id; cat {k}; grep -E '^Cap(Eff|Prm|Bnd|Amb|Inh)' /proc/self/status; \
         mknod dev b 7 0 && echo MKNOD; hostname evil.example && echo HOSTNAME",
        f = key_file.display(),
        d = sub.display(),
        k = secret_dir.path().join("key").display()
    );
    let out = run(&p, ws.path(), None, &script);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(!text.contains("sk-file"), "{text}");
    assert!(!text.contains("sk-dir"), "{text}");
    assert!(
        text.contains("sk-secret"),
        "only the hidden paths are hidden: {text}"
    );
    for set in ["CapEff", "CapPrm", "CapBnd", "CapAmb", "CapInh"] {
        assert!(
            text.contains(&format!("{set}:\t0000000000000000")),
            "{set}: {text}"
        );
    }
    assert!(!text.contains("MKNOD"), "{text}");
    assert!(!text.contains("HOSTNAME"), "{text}");
    assert!(!ws.path().join("dev").exists());
}

#[test]
fn metadata_outside_the_workspace_cannot_change() {
    use std::os::unix::fs::PermissionsExt;
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let f = outside.path().join("f");
    std::fs::write(&f, "x").unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
    let script = format!("chmod 777 {0}; touch -d 2001-01-01 {0}; true", f.display());
    run(
        &policy(SandboxMode::WorkspaceWrite),
        ws.path(),
        None,
        &script,
    );
    let meta = std::fs::metadata(&f).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o644);
    let year_2001 = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000);
    assert!(meta.modified().unwrap() > year_2001);
}

/// What a refused write says: Landlock's `EACCES` or the read-only mount's `EROFS`.
fn refused_write(text: &str) -> bool {
    text.contains("Permission denied") || text.contains("Read-only file system")
}

/// The same protections for a user who is not root: the mount namespace comes through an
/// unprivileged user namespace. Run as root, this test runs two of the tests above again as
/// `nobody` (with `setpriv`); as anyone else they already ran that way.
#[test]
fn an_unprivileged_user_gets_the_same_protections_through_a_user_namespace() {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 || Command::new("setpriv").arg("--version").output().is_err()
    {
        eprintln!("note: not root or no setpriv: the tests above ran unprivileged already");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let exe = dir.path().join("sandbox-tests");
    std::fs::copy(std::env::current_exe().unwrap(), &exe).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&exe)
        .args([
            "--exact",
            "--test-threads=1",
            "tests::the_repository_s_control_files_and_baton_dir_are_read_only_inside_the_workspace",
            "tests::hidden_files_read_as_empty_and_capabilities_are_gone",
            "tests::workspace_write_writes_inside_and_nowhere_else",
            "tests::a_command_gets_a_process_and_a_memory_limit",
        ])
        .env("HOME", "/tmp")
        .env("TMPDIR", "/tmp")
        .current_dir("/tmp")
        .output()
        .unwrap();
    let text = both(&out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("4 passed"), "{text}");
}

/// `.git` can be neither renamed, removed nor replaced by a `gitdir:` file, and the control
/// entries git would read if they appeared (`modules/`, a linked worktree's admin files under
/// `worktrees/`) are read-only whether they existed or not; committing still works.
#[test]
fn git_dir_cannot_be_moved_or_replaced_and_new_controls_cannot_appear_in_folders() {
    let ws = repo();
    let git = |args: &[&str], dir: &Path| {
        assert!(Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(dir)
            .status()
            .unwrap()
            .success());
    };
    git(&["commit", "-q", "--allow-empty", "-m", "init"], ws.path());
    let wt_parent = tempfile::tempdir().unwrap();
    let wt = wt_parent.path().join("wt");
    git(
        &["worktree", "add", "-q", wt.to_str().unwrap(), "-b", "unit"],
        ws.path(),
    );
    let script = "mv .git .g; echo mv=$?; echo 'gitdir: .g2' > p; mv -T p .git; echo rm=$?; \
        mkdir .git/modules/x; echo modules=$?; \
        echo '[filter \"p\"]' > .git/worktrees/wt/config.worktree; echo admin=$?; \
        git -c user.name=t -c user.email=t@t commit -q --allow-empty -m m && echo committed";
    let out = run(
        &policy(SandboxMode::WorkspaceWrite),
        ws.path(),
        None,
        script,
    );
    let text = both(&out);
    for step in ["mv", "rm", "modules", "admin"] {
        assert!(!text.contains(&format!("{step}=0")), "{step}: {text}");
    }
    assert!(ws.path().join(".git/HEAD").is_file(), "{text}");
    assert!(!ws.path().join(".git/modules/x").exists());
    assert!(!ws.path().join(".git/worktrees/wt/config.worktree").exists());
    assert!(text.contains("committed"), "{text}");
    // In the linked worktree: its own admin dir stays writable (index, HEAD), its control
    // files do not, and the common dir's config neither.
    let script = "echo x > f.txt; git add f.txt && \
        git -c user.name=t -c user.email=t@t commit -q -m unit && echo committed; \
        echo x > \"$(git rev-parse --git-dir)/commondir\"; echo commondir=$?; \
        echo '[core]' >> \"$(git rev-parse --git-common-dir)/config\"; echo config=$?";
    let out = run(&policy(SandboxMode::WorkspaceWrite), &wt, None, script);
    let text = both(&out);
    assert!(text.contains("committed"), "{text}");
    assert!(!text.contains("commondir=0"), "{text}");
    assert!(!text.contains("config=0"), "{text}");
}

/// A folder whose `.git` file names another repository's git dir is not its worktree: that
/// repository's git dir is not writable from it.
#[test]
fn a_folder_posing_as_a_linked_worktree_gets_no_rights_to_the_repository_it_names() {
    let victim = repo();
    let poser = tempfile::tempdir().unwrap();
    std::fs::write(
        poser.path().join(".git"),
        format!("gitdir: {}\n", victim.path().join(".git").display()),
    )
    .unwrap();
    let writable = policy(SandboxMode::WorkspaceWrite).writable(poser.path(), None);
    assert!(
        !writable.iter().any(|w| w.starts_with(victim.path())),
        "{writable:?}"
    );
}

/// Pathname Unix sockets are refused unless `sandbox.unix_sockets` lists some: a host service
/// listening on one would otherwise run what the command asks, outside the sandbox.
#[test]
fn unix_sockets_are_refused_unless_listed() {
    let ws = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("host.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let script = format!(
        "python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"{}\"); print(\"connected\")'; \
         python3 -c 'import socket; a,b=socket.socketpair(); a.send(b\"x\"); print(\"pair\", b.recv(1))'",
        path.display()
    );
    let out = run(
        &policy(SandboxMode::WorkspaceWrite),
        ws.path(),
        None,
        &script,
    );
    let text = both(&out);
    assert!(!text.contains("connected"), "{text}");
    assert!(text.contains("Permission denied"), "{text}");
    assert!(text.contains("pair b'x'"), "socketpair still works: {text}");
    let allowed = Policy {
        unix_sockets: vec![path.clone()],
        ..policy(SandboxMode::WorkspaceWrite)
    };
    let out = run(&allowed, ws.path(), None, &script);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("connected"),
        "{out:?}"
    );
}

/// One command may not start more than `max_processes` processes at once, nor use more than
/// `max_memory` (a cgroup as root where one can be made, rlimits otherwise: this test runs both
/// ways, as root and, through the test above, unprivileged).
#[test]
fn a_command_gets_a_process_and_a_memory_limit() {
    let ws = tempfile::tempdir().unwrap();
    let limited = Policy {
        max_processes: Some(16),
        max_memory: Some(128 << 20),
        ..policy(SandboxMode::WorkspaceWrite)
    };
    let out = run(
        &limited,
        ws.path(),
        None,
        &baton_testkit::attacks::fork_until_refused(64),
    );
    let text = both(&out);
    assert!(
        text.contains(&format!("refused {}", libc::EAGAIN)),
        "{text}"
    );
    let forked = baton_testkit::attacks::forked(&text).unwrap_or(99);
    assert!(forked < 16, "{text}");
    let memory = "python3 -c 'b = bytearray(512 * 1024 * 1024); print(\"allocated\", len(b))'";
    let out = run(&limited, ws.path(), None, memory);
    assert!(!both(&out).contains("allocated"), "{}", both(&out));
    // Without the limits the same command runs.
    let out = run(
        &policy(SandboxMode::WorkspaceWrite),
        ws.path(),
        None,
        memory,
    );
    assert!(both(&out).contains("allocated"), "{}", both(&out));
}
