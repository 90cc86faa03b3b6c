//! The cost of confining and guarding one `bash` call, side by side in one run.
//!
//! Four ways of running the same command through [`BashTool`], interleaved round-robin so that
//! the machine's state is the same for each:
//!
//! - **plain**: `danger-full-access`, no guard: the shell started directly in its process group
//!   (what baton did before the sandbox and the guard);
//! - **sandbox**: `workspace-write` with the network off (Landlock rules + seccomp filter built
//!   and applied per call), no guard;
//! - **guard**: `danger-full-access` under the guard (forked by the guard server that the first
//!   call starts: `baton-guard --serve`; one more fork, two messages on a socket);
//! - **both**: `workspace-write` under the guard: what `baton agent` runs by default.
//!
//! It prints the median and p90 wall time of a call per way and the ratio of each median to
//! plain. The command is `true` by default (the fixed cost is all there is to see);
//! `--command 'CMD'` measures another. Needs the release binary for the guard:
//! `cargo build --release -p baton-cli`, then `cargo bench -p baton-agent --bench bash_call`
//! (`-- --calls N`, default 200 per way; `-- --repo` makes the workspace a git repository with a
//! committed `.baton/` holding a skill, roles and config, as a real project is: the watch and the
//! pinned repository then have something to look at).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use baton_agent::tools::{BashTool, SandboxMode, SandboxPolicy, Tool, ToolContext};
use serde_json::json;

struct Way {
    name: &'static str,
    mode: SandboxMode,
    guarded: bool,
    samples: Vec<Duration>,
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() -> ExitCode {
    let mut calls = 200usize;
    let mut command = "true".to_string();
    let mut repo = false;
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut baton = root.join("target/release/baton");
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--calls" => calls = args.next().and_then(|v| v.parse().ok()).unwrap_or(calls),
            "--command" => command = args.next().unwrap_or(command),
            "--baton" => baton = args.next().map(PathBuf::from).unwrap_or(baton),
            "--bench" => {}
            "--repo" => repo = true,
            "--help" | "-h" => {
                println!("bash_call [--calls N] [--command CMD] [--baton PATH] [--repo]");
                return ExitCode::SUCCESS;
            }
            other => {
                eprintln!("unknown argument {other}");
                return ExitCode::from(2);
            }
        }
    }
    if !baton.is_file() {
        eprintln!(
            "{} is missing: build it with `cargo build --release -p baton-cli`",
            baton.display()
        );
        return ExitCode::from(1);
    }
    let work = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    if repo {
        make_project(work.path());
    }
    let mut ways = [
        ("plain", SandboxMode::DangerFullAccess, false),
        ("sandbox", SandboxMode::WorkspaceWrite, false),
        ("guard", SandboxMode::DangerFullAccess, true),
        ("both", SandboxMode::WorkspaceWrite, true),
    ]
    .map(|(name, mode, guarded)| Way {
        name,
        mode,
        guarded,
        samples: Vec::with_capacity(calls),
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let call = json!({ "command": command });
    runtime.block_on(async {
        // One unmeasured call per way first (page cache, first exec of the binary).
        for round in 0..=calls {
            for way in ways.iter_mut() {
                baton_process::guard::set_program(
                    way.guarded
                        .then(|| baton_process::guard::program_for(&baton)),
                );
                let policy = SandboxPolicy {
                    mode: way.mode,
                    ..SandboxPolicy::default()
                };
                let ctx = ToolContext::new(work.path())
                    .with_sandbox(policy, Some(tmp.path().to_path_buf()));
                let started = Instant::now();
                let out = BashTool.run(call.clone(), &ctx).await;
                let took = started.elapsed();
                assert!(!out.is_error, "{}: {}", way.name, out.output);
                if round > 0 {
                    way.samples.push(took);
                }
            }
        }
    });
    let median = |w: &Way| {
        let mut s = w.samples.clone();
        s.sort();
        (percentile(&s, 0.5), percentile(&s, 0.9))
    };
    let plain = median(&ways[0]).0;
    let place = if repo {
        "a git repository"
    } else {
        "a plain folder"
    };
    println!(
        "bash_call: `{command}` in {place}, {calls} calls per way, interleaved; wall time per call"
    );
    println!(
        "{:<8} {:>10} {:>10} {:>12}",
        "way", "median ms", "p90 ms", "median/plain"
    );
    for w in &ways {
        let (p50, p90) = median(w);
        println!(
            "{:<8} {:>10.3} {:>10.3} {:>12.2}",
            w.name,
            ms(p50),
            ms(p90),
            p50.as_secs_f64() / plain.as_secs_f64()
        );
    }
    let both = median(&ways[3]).0;
    println!(
        "default (sandbox + guard) costs {:+.3} ms per call over plain",
        ms(both) - ms(plain)
    );
    ExitCode::SUCCESS
}

/// A small project as a user has it: a git repository with a commit, and a `.baton/` holding a
/// config, two roles and a skill with a reference file.
fn make_project(dir: &std::path::Path) {
    let files = [
        (".baton/config.toml", "[agent]\nmax_turns = 40\n"),
        (
            ".baton/roles/reviewer.md",
            "---\nname: reviewer\n---\nReview.\n",
        ),
        (".baton/roles/scout.md", "---\nname: scout\n---\nLook.\n"),
        (
            ".baton/skills/notes/SKILL.md",
            "---\nname: notes\n---\nTake notes.\n",
        ),
        (".baton/skills/notes/refs/style.md", "Short.\n"),
        ("src/main.rs", "fn main() {}\n"),
        ("README.md", "A project.\n"),
    ];
    for (rel, text) in files {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["add", "-A"],
        &[
            "-c",
            "user.name=b",
            "-c",
            "user.email=b@b",
            "commit",
            "-q",
            "-m",
            "init",
        ],
    ] {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }
}
