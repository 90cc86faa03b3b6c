//! `baton demo`: a whole BUILD workflow, offline. A throwaway repository in a temp folder gets a
//! small shell project; the workflow's role agents are real `baton agent` children replaying the
//! recording shipped in this binary (`crates/baton-cli/demo/recording/`), so their tools — file
//! writes, the test runs, `git diff` — run for real while no model is called. The reviewer finds
//! a bug, one remediation cycle fixes it, the verifier's scenarios are run again by baton, and
//! the brief is printed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use baton_app::exit::Exit;
use baton_app::project::project_context;
use baton_workflow::route::route;
use baton_workflow::run::{self, Outcome, RunEnv, StartOptions};
use clap::Args;
use tokio_util::sync::CancellationToken;

/// The request the recording answers.
pub const REQUEST: &str = "add a --shout flag to greet.sh that prints the greeting in capitals";

const PROJECT: [(&str, &str); 3] = [
    ("greet.sh", include_str!("../demo/project/greet.sh")),
    ("test.sh", include_str!("../demo/project/test.sh")),
    ("README.md", include_str!("../demo/project/README.md")),
];

const RECORDING: [(&str, &str); 8] = [
    (
        "build-implement-1.json",
        include_str!("../demo/recording/build-implement-1.json"),
    ),
    (
        "build-review-1.json",
        include_str!("../demo/recording/build-review-1.json"),
    ),
    (
        "build-hunt-1.json",
        include_str!("../demo/recording/build-hunt-1.json"),
    ),
    (
        "build-implement-2.json",
        include_str!("../demo/recording/build-implement-2.json"),
    ),
    (
        "re-review-1.json",
        include_str!("../demo/recording/re-review-1.json"),
    ),
    (
        "re-hunt-1.json",
        include_str!("../demo/recording/re-hunt-1.json"),
    ),
    (
        "build-verify-1.json",
        include_str!("../demo/recording/build-verify-1.json"),
    ),
    (
        "build-doc-sync-1.json",
        include_str!("../demo/recording/build-doc-sync-1.json"),
    ),
];

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Keep the temp folder (the project, its workflow record and memory) and print where it is.
    #[arg(long)]
    keep: bool,
}

/// The demo project's git, hardened like all of baton's.
fn git(dir: &Path, args: &[&str]) -> Result<()> {
    baton_git::Git::new(dir)
        .with_config("user.name", "baton demo")
        .with_config("user.email", "demo@baton.invalid")
        .with_config("commit.gpgsign", "false")
        .run(args)
        .map(drop)
        .context("the demo needs git on PATH")
}

/// Writes the project (committed) and the recording beside it.
fn set_up(root: &Path) -> Result<(PathBuf, PathBuf)> {
    let project = root.join("project");
    let recording = root.join("recording");
    std::fs::create_dir_all(&project)?;
    std::fs::create_dir_all(&recording)?;
    for (name, text) in PROJECT {
        std::fs::write(project.join(name), text)?;
    }
    for (name, text) in RECORDING {
        std::fs::write(recording.join(name), text)?;
    }
    baton_git::Git::new(&project)
        .init("main")
        .context("the demo needs git on PATH")?;
    git(&project, &["add", "-A"])?;
    git(
        &project,
        &[
            "commit",
            "-q",
            "-m",
            "greet: a greeting script and its test",
        ],
    )?;
    Ok((project, recording))
}

pub fn run(args: DemoArgs) -> Result<Exit> {
    let tmp = tempfile::Builder::new()
        .prefix("baton-demo-")
        .tempdir()
        .context("cannot create a temp folder for the demo")?;
    let (project, recording) = set_up(tmp.path())?;
    errln!(
        "baton demo: a throwaway repository in {}",
        project.display()
    );
    errln!("baton demo: request: {REQUEST}");
    errln!("baton demo: the role agents replay a recording shipped in baton; their tools run for real, no model is called");
    errln!("{}", route(REQUEST).headline());
    let ctx = project_context(Some(project.clone()))?;
    let mut delegate = baton_app::project::delegate_env(&ctx)?;
    // The demo's roles are the built-in ones, whatever the user has installed.
    delegate.role_dirs = baton_roles::RoleDirs {
        user: None,
        project: None,
        project_trusted: baton_roles::Trust::Yes,
    };
    let executor = baton_app::project::executor_for(&delegate)?;
    let env = RunEnv {
        delegate,
        executor: Arc::new(executor),
        record: None,
        replay: Some(recording),
        max_batches: None,
        crash_after: None,
        observer: Some(Arc::new(|line: &str| {
            errln!("baton run: {}", baton_text::sanitize_line(line))
        })),
        events: None,
    };
    let opts = StartOptions {
        request: REQUEST.to_string(),
        kind: route(REQUEST).workflow,
        trivial: false,
        budget_usd: None,
        budget_tokens: None,
        isolate: Some(false),
        plan: None,
        assess_scope: false,
        id: None,
        referenced_plan: false,
        fan_out: Vec::new(),
    };
    let rt = crate::signals::runtime()?;
    let cancel = CancellationToken::new();
    let result = rt.block_on(async {
        let _signalled = crate::signals::watch_signals(cancel.clone());
        run::start(&env, &opts, &cancel).await
    });
    let code = match result {
        Ok(Outcome::Completed { brief, .. }) => {
            outln!("{}", brief.trim_end());
            let greet = std::fs::read_to_string(project.join("greet.sh")).unwrap_or_default();
            outln!("\ngreet.sh after the workflow:\n{}", greet.trim_end());
            Exit::Ok
        }
        Ok(other) => {
            errln!("baton demo: the workflow did not complete: {other:?}");
            Exit::Failed
        }
        Err(e) => {
            errln!("baton demo: {e}");
            Exit::Failed
        }
    };
    if args.keep {
        let kept = tmp.keep();
        errln!(
            "baton demo: kept {} (the workflow record is under project/.baton/state/workflows/)",
            kept.display()
        );
    }
    Ok(code)
}
