//! `run_workflow` in a project whose `engine.kind` is `temporal`: the workflow runs on Temporal
//! as `baton run --engine temporal` runs it — that very command of this `baton`, followed until
//! the workflow completes, stops or waits at a checkpoint. This server keeps no Temporal client
//! of its own (the SDK is built into the command line, with its `temporal` feature; a baton built
//! without it says so, as the command does).

use std::path::Path;

use baton_workflow::route::WorkflowKind;
use baton_workflow::run::Outcome;
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, BufReader};
use tokio_util::sync::CancellationToken;

use crate::runtime::ProgressForward;

/// What to start.
pub struct Start<'a> {
    pub request: &'a str,
    pub kind: WorkflowKind,
    pub trivial: bool,
    pub budget_usd: Option<f64>,
    pub budget_tokens: Option<u64>,
    /// A plan file, from the project's root (`baton run --plan`).
    pub plan: Option<&'a str>,
    pub root: &'a Path,
}

/// The command's arguments for `s`.
fn args(s: &Start<'_>) -> Vec<String> {
    let mut a: Vec<String> = ["run", "--engine", "temporal", "--json", "--workflow"]
        .map(String::from)
        .to_vec();
    a.push(s.kind.as_str().to_string());
    if s.trivial {
        a.push("--trivial".into());
    }
    if let Some(usd) = s.budget_usd {
        a.extend(["--budget-usd".into(), usd.to_string()]);
    }
    if let Some(tokens) = s.budget_tokens {
        a.extend(["--budget-tokens".into(), tokens.to_string()]);
    }
    if let Some(plan) = s.plan {
        a.extend(["--plan".into(), plan.to_string()]);
    }
    a.extend(["--cwd".into(), s.root.display().to_string()]);
    a.extend(["--".into(), s.request.to_string()]);
    a
}

/// Runs `baton run --engine temporal` for `s`, its stderr lines as progress, and reads the
/// outcome it prints. Cancelled, it stops following (the workflow goes on on Temporal).
pub async fn run(
    s: &Start<'_>,
    progress: &ProgressForward,
    cancel: &CancellationToken,
) -> Result<Outcome, String> {
    let exe =
        baton_process::own_program().map_err(|e| format!("cannot find the baton program: {e}"))?;
    let mut child = tokio::process::Command::new(exe)
        .args(args(s))
        .current_dir(s.root)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot run baton run --engine temporal: {e}"))?;
    let (Some(mut stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err("baton run --engine temporal: no output to read".into());
    };
    let said = async {
        let mut lines = BufReader::new(stderr).lines();
        let mut last = Vec::new();
        while let Ok(Some(line)) = lines.next_line().await {
            progress.say(&line);
            last.push(line);
            if last.len() > 5 {
                last.remove(0);
            }
        }
        last
    };
    let out = async {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text).await;
        text
    };
    let ended = async { tokio::join!(said, out, child.wait()) };
    let (said, out, status) = tokio::select! {
        r = ended => r,
        _ = cancel.cancelled() => {
            return Err("cancelled: stopped following; a workflow it had started goes on on Temporal (its id is in this call's progress; `baton status --engine temporal ID`)".into());
        }
    };
    let line = out
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    match serde_json::from_str::<Outcome>(line) {
        Ok(o) => Ok(o),
        Err(_) => Err(format!(
            "baton run --engine temporal ended ({}) without an outcome: {}",
            status.map_or_else(|e| e.to_string(), |s| s.to_string()),
            said.join(" / ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_carries_the_kind_the_budget_and_the_request_after_a_separator() {
        let root = Path::new("/p");
        let a = args(&Start {
            request: "--force the change",
            kind: WorkflowKind::Debug,
            trivial: true,
            budget_usd: Some(1.5),
            budget_tokens: None,
            plan: Some("docs/plans/p.md"),
            root,
        });
        assert_eq!(
            a,
            [
                "run",
                "--engine",
                "temporal",
                "--json",
                "--workflow",
                "DEBUG",
                "--trivial",
                "--budget-usd",
                "1.5",
                "--plan",
                "docs/plans/p.md",
                "--cwd",
                "/p",
                "--",
                "--force the change"
            ]
        );
    }
}
