//! The guard server (`baton_process::guard::served`) with the real `baton-guard` binary: a command
//! it starts gets its environment, folder and descriptors, its status comes back as it ended,
//! closing the link or killing the guard leaves nothing running, and a killed server is replaced.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;
use std::os::fd::AsFd;
use std::os::unix::process::ExitStatusExt as _;
use std::path::Path;
use std::process::{Command, ExitStatus};
use std::time::Duration;

use baton_process::guard::served::{self, Served};
use baton_process::{GroupGuard, Signal};
use baton_testkit::fixture::wait_until;

fn use_the_guard_binary() {
    let guard = Path::new(env!("CARGO_BIN_EXE_baton")).with_file_name("baton-guard");
    assert!(guard.is_file(), "{} is built with baton", guard.display());
    baton_process::guard::set_program(Some(guard));
}

/// Starts `script` with `sh -c` in `dir`, its stdout and stderr into files there.
fn start(dir: &Path, script: &str, env: &[(&str, &str)]) -> (Served, baton_process::guard::Link) {
    use_the_guard_binary();
    let null = std::fs::File::open("/dev/null").unwrap();
    let out = std::fs::File::create(dir.join("out")).unwrap();
    let err = std::fs::File::create(dir.join("err")).unwrap();
    let mut cmd = Command::new("sh");
    cmd.args(["-c", script]).current_dir(dir);
    for (k, v) in env {
        cmd.env(k, v);
    }
    served::spawn(&cmd, [null.as_fd(), out.as_fd(), err.as_fd()])
        .unwrap()
        .expect("a guard program is set")
}

fn status(served: &mut Served) -> ExitStatus {
    let mut message = [0u8; served::STATUS_LEN];
    served.channel.read_exact(&mut message).unwrap();
    served::read_status(&message).unwrap()
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_default()
}

fn pid_in(dir: &Path, name: &str) -> u32 {
    let path = dir.join(name);
    assert!(
        wait_until(Duration::from_secs(10), || read(dir, name).ends_with('\n')),
        "{} was never written",
        path.display()
    );
    read(dir, name).trim().parse().unwrap()
}

fn gone(pid: u32) -> bool {
    // A zombie is gone too: it runs nothing and holds nothing but its entry.
    baton_process::stat(pid).map_or(true, |s| s.is_zombie())
}

fn all_gone(pids: &[u32]) -> bool {
    wait_until(Duration::from_secs(5), || pids.iter().all(|p| gone(*p)))
}

#[test]
fn a_served_command_gets_its_environment_folder_and_output_and_reports_its_exit() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    let (mut served, _link) = start(
        &dir,
        "echo \"$BATON_SERVED_TEST\"; pwd; echo to-stderr >&2; exit 3",
        &[("BATON_SERVED_TEST", "a value with spaces=and equals")],
    );
    let status = status(&mut served);
    assert_eq!(status.code(), Some(3));
    assert_eq!(
        read(&dir, "out"),
        format!("a value with spaces=and equals\n{}\n", dir.display())
    );
    assert_eq!(read(&dir, "err"), "to-stderr\n");
}

#[test]
fn a_command_killed_by_a_signal_is_reported_as_that_signal() {
    let dir = tempfile::tempdir().unwrap();
    let (mut served, _link) = start(dir.path(), "kill -TERM $$", &[]);
    assert_eq!(status(&mut served).signal(), Some(Signal::SIGTERM as i32));
}

#[test]
fn a_missing_program_is_an_error_before_anything_starts() {
    use_the_guard_binary();
    let null = std::fs::File::open("/dev/null").unwrap();
    let cmd = Command::new("baton-no-such-program");
    let err = served::spawn(&cmd, [null.as_fd(), null.as_fd(), null.as_fd()]).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
}

#[test]
fn sigterm_to_the_guard_reaches_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let (mut served, link) = start(
        dir.path(),
        "trap 'echo got-term; exit 5' TERM; echo $$ > ready; while :; do sleep 0.01; done",
        &[],
    );
    pid_in(dir.path(), "ready");
    let mut guard = GroupGuard::with_link(Some(served.pid), link);
    guard.signal(Signal::SIGTERM);
    assert_eq!(status(&mut served).code(), Some(5));
    assert_eq!(read(dir.path(), "out"), "got-term\n");
}

#[test]
fn closing_the_link_kills_the_command_and_all_it_started() {
    let dir = tempfile::tempdir().unwrap();
    let (mut served, link) = start(
        dir.path(),
        "sleep 300 & echo $! > child; setsid sleep 301 & echo $! > escaped; echo $$ > shell; wait",
        &[],
    );
    let pids = [
        pid_in(dir.path(), "child"),
        pid_in(dir.path(), "escaped"),
        pid_in(dir.path(), "shell"),
    ];
    let mut guard = GroupGuard::with_link(Some(served.pid), link);
    guard.signal(Signal::SIGKILL);
    assert_eq!(status(&mut served).code(), Some(137));
    assert!(all_gone(&pids), "left running: {pids:?}");
}

#[test]
fn what_a_killed_guard_leaves_is_killed_by_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let (served, _link) = start(
        dir.path(),
        "setsid sleep 302 & echo $! > escaped; echo $$ > shell; wait",
        &[],
    );
    let pids = [pid_in(dir.path(), "escaped"), pid_in(dir.path(), "shell")];
    // The guard dies without its sweep: what it guarded is re-parented to the server.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(served.pid).unwrap()),
        Signal::SIGKILL,
    )
    .unwrap();
    assert!(all_gone(&pids), "left running: {pids:?}");
}

#[test]
fn neither_the_server_nor_a_guard_holds_baton_s_environment() {
    // Set before the server starts: a provider key in baton's own environment.
    std::env::set_var("BATON_SERVED_SECRET", "sk-not-for-the-model");
    let dir = tempfile::tempdir().unwrap();
    // The command's parent is its guard, whose parent is the server: what each started with is
    // in its /proc/PID/environ.
    let (mut served, _link) = start(
        dir.path(),
        "server=$(cut -d' ' -f4 /proc/$PPID/stat); \
         cat /proc/$PPID/environ /proc/$server/environ 2>&1; \
         echo done",
        &[],
    );
    assert_eq!(status(&mut served).code(), Some(0));
    let out = read(dir.path(), "out");
    assert!(out.ends_with("done\n"), "{out}");
    assert!(!out.contains("sk-not-for-the-model"), "{out}");
}

#[test]
fn a_killed_server_is_replaced_by_the_next_command() {
    let dir = tempfile::tempdir().unwrap();
    let (mut first, _link) = start(dir.path(), "exit 0", &[]);
    assert_eq!(status(&mut first).code(), Some(0));
    let server = server_of(first.pid);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(server).unwrap()),
        Signal::SIGKILL,
    )
    .unwrap();
    assert!(wait_until(Duration::from_secs(5), || gone(server)));
    let (mut second, _link) = start(dir.path(), "echo again", &[]);
    assert_eq!(status(&mut second).code(), Some(0));
    assert_eq!(read(dir.path(), "out"), "again\n");
    assert_ne!(server_of(second.pid), server, "a new server started");
}

/// The server that forked `guard`: its parent while it is there, else this test's one live
/// child (the server; the guard has been reaped).
fn server_of(guard: u32) -> u32 {
    if let Some(s) = baton_process::stat(guard).ok().filter(|s| !s.is_zombie()) {
        return s.ppid;
    }
    let me = std::process::id();
    baton_process::processes()
        .unwrap()
        .into_iter()
        .find(|p| p.ppid == me && !p.is_zombie())
        .map(|p| p.pid)
        .expect("the guard server is a child of this test")
}
