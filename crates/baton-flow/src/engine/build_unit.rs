//! `baton flow start --workflow build`: each unit is a whole gated BUILD workflow.
//!
//! The unit's implementer is `baton run --engine local --workflow build --no-worktree --json
//! TASK`, run in the unit's worktree under the process guard: builder → reviewer ‖ hunter →
//! verifier, with its remediation cycles, its memory and its record, exactly as on its own. When
//! the BUILD completes, Flow commits what it changed (baton's own `.baton/` left out) on the
//! unit's branch; the landing that follows is Flow's as always (rebase, validation, review,
//! `--ff-only`). A BUILD that stops at a checkpoint or fails is a failed implementer, naming the
//! workflow to answer.
//!
//! The BUILD runs with the config this Flow runs with (written to the Flow's folder and handed over
//! as `BATON_CONFIG`), so a unit's worktree reads no setting the user has not trusted. Its record
//! is copied into the project's `.baton/state/workflows/` when it returns, so `baton status` and
//! `baton log` show it after the worktree is gone.

use std::time::{Duration, Instant};

use baton_exec::guarded::{CommandRules, ValidationCommand};

use super::*;

/// The longest one unit's BUILD may run (its agents have their own idle and run limits).
const BUILD_TIMEOUT: Duration = Duration::from_secs(6 * 3600);

/// What `baton run --json` printed: the workflow's outcome document.
#[derive(Debug, Deserialize)]
struct BuildOutcome {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    brief: Option<String>,
    #[serde(default)]
    checkpoint: Option<serde_json::Value>,
    #[serde(default)]
    message: Option<String>,
}

impl Run<'_> {
    /// Runs unit `i`'s BUILD in its worktree, commits its change, and records the result as the
    /// unit's implementer result.
    pub(super) async fn run_build_unit(&self, i: usize, path: &Path) -> Result<(), FlowError> {
        let state = self.state();
        let u = state.units[i].clone();
        let started = Instant::now();
        let summary = match self.build(&state, &u, path).await {
            Ok(s) => s,
            Err(message) => ChildSummary {
                ok: false,
                exit_code: None,
                error: Some(format!("infrastructure: {message}")),
                output: String::new(),
                stderr: String::new(),
                duration_ms: started.elapsed().as_millis() as u64,
            },
        };
        if self.cancel.is_cancelled() {
            return Ok(());
        }
        self.emit(FlowEvent::ImplementerFinished {
            unit: u.id().to_string(),
            attempt: u.attempt,
            result: summary,
        })
    }

    async fn build(
        &self,
        state: &FlowState,
        u: &UnitState,
        path: &Path,
    ) -> Result<ChildSummary, String> {
        let config = self.build_config(&state.id)?;
        let task = build_task(&u.spec, &state.main_branch);
        let command = ValidationCommand {
            command: self.env.delegate.baton_exe.display().to_string(),
            args: build_args(&task),
        };
        let mut env = vec![
            ("BATON_CONFIG".to_string(), config.display().to_string()),
            ("BATON_FLOW_ID".to_string(), state.id.clone()),
            ("BATON_FLOW_UNIT".to_string(), u.id().to_string()),
        ];
        env.extend(self.env.git_env.iter().cloned());
        let started = Instant::now();
        let result = match run_validation(
            &[command],
            path,
            &env,
            &CommandRules::default(),
            BUILD_TIMEOUT,
            self.cancel,
        )
        .await
        {
            Validation::Passed(mut r) | Validation::Failed(mut r) => r.pop(),
            Validation::Cancelled => None,
        };
        let Some(result) = result else {
            return Err("cancelled".into());
        };
        let duration_ms = started.elapsed().as_millis() as u64;
        // `--json` prints one document as the last line of stdout; stderr is mixed in before it.
        let outcome = result
            .output
            .lines()
            .rev()
            .find_map(|l| serde_json::from_str::<BuildOutcome>(l.trim()).ok());
        let id = outcome.as_ref().and_then(|o| o.id.clone());
        if let Some(id) = &id {
            self.keep_record(path, id);
        }
        let summary = |ok: bool, output: String, error: Option<String>| ChildSummary {
            ok,
            exit_code: result.exit_code,
            error,
            output,
            stderr: bounded(&result.output, EVIDENCE_BOUND),
            duration_ms,
        };
        let Some(o) = outcome else {
            let why = result
                .error
                .clone()
                .unwrap_or_else(|| "the BUILD printed no outcome".into());
            return Ok(summary(false, String::new(), Some(why)));
        };
        let id = id.unwrap_or_default();
        let brief = o.brief.clone().unwrap_or_default();
        Ok(match o.kind.as_str() {
            "workflow.completed" => match self.commit_unit(path, u, &id) {
                Ok(()) => summary(true, format!("BUILD {id} completed\n\n{brief}"), None),
                Err(e) => summary(
                    false,
                    brief,
                    Some(format!("cannot commit the BUILD's change: {e}")),
                ),
            },
            "workflow.checkpoint" => {
                let question = o
                    .checkpoint
                    .as_ref()
                    .and_then(|c| c.get("question"))
                    .and_then(|q| q.as_str())
                    .unwrap_or("a question")
                    .to_string();
                summary(
                    false,
                    brief,
                    Some(format!(
                        "BUILD {id} waits at a checkpoint ({question}); answer it in {} with `baton resume {id} --answer …`, commit, then `baton flow land {} {}`",
                        path.display(),
                        state.id,
                        u.id()
                    )),
                )
            }
            other => summary(
                false,
                brief.clone(),
                Some(format!(
                    "BUILD {} ended {}: {}",
                    if id.is_empty() { "(no id)" } else { &id },
                    other.trim_start_matches("workflow."),
                    o.message.clone().unwrap_or(brief)
                )),
            ),
        })
    }

    /// The config the BUILDs run with: this Flow's own, as it was resolved (trust applied).
    fn build_config(&self, flow: &str) -> Result<PathBuf, String> {
        let dir = self.store.flow_dir(flow).map_err(|e| e.to_string())?;
        let path = dir.join("build-config.toml");
        let text = toml::to_string(&self.env.delegate.config)
            .map_err(|e| format!("cannot write the BUILD's config: {e}"))?;
        let tmp = dir.join(format!("build-config.toml.{}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(&tmp, text))
            .and_then(|()| std::fs::rename(&tmp, &path))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        Ok(path)
    }

    /// Copies the BUILD's record from the unit's worktree into the project's state.
    fn keep_record(&self, path: &Path, id: &str) {
        let from = baton_state::StateDir::for_project(path).workflows();
        let to = self.env.delegate.state.workflows();
        if std::fs::create_dir_all(&to).is_err() {
            return;
        }
        for suffix in [".events.jsonl", ".json"] {
            let name = format!("{id}{suffix}");
            if let Err(e) = std::fs::copy(from.join(&name), to.join(&name)) {
                tracing::warn!("cannot keep the BUILD's record {name}: {e}");
            }
        }
    }

    fn commit_unit(&self, path: &Path, u: &UnitState, id: &str) -> Result<(), String> {
        let message = format!(
            "{}\n\nBuilt by baton BUILD {id} (Flow unit {}).",
            u.spec.name,
            u.id()
        );
        commit_change(&self.env.git(path), &message).map(|_| ())
    }
}

/// The task a unit's BUILD is given: the unit's task, then the commands that validate it on
/// `main_branch` and its review criterion.
pub fn build_task(unit: &UnitSpec, main_branch: &str) -> String {
    let mut task = format!(
        "{}\n\nThis is unit `{}` ({}) of a Flow: it lands on {main_branch} once these commands pass in \
         its worktree, run directly without a shell:\n",
        unit.task.trim_end(),
        unit.id,
        unit.name,
    );
    for c in &unit.validation {
        task.push_str(&format!("- `{}`\n", c.display()));
    }
    if let Some(r) = &unit.review {
        task.push_str(&format!(
            "\nA reviewer will judge the change against: {r}\n"
        ));
    }
    task
}

/// The arguments of `baton` that run a unit's BUILD in its worktree (always on the local engine;
/// the task after `--`, so one that starts with `-` is not read as a flag).
pub fn build_args(task: &str) -> Vec<String> {
    let head = [
        "run",
        "--engine",
        "local",
        "--workflow",
        "build",
        "--no-worktree",
        "--json",
        "--",
    ];
    head.iter()
        .map(|a| a.to_string())
        .chain([task.to_string()])
        .collect()
}

/// Commits everything a unit's workflow changed in its worktree but baton's own folder, then puts
/// that folder back as the branch has it (memory edits of one unit would conflict with every
/// other unit's). Returns whether there was anything to commit.
pub fn commit_change(git: &baton_git::Git, message: &str) -> Result<bool, String> {
    let run = |args: &[&str]| git.run(args).map(|_| ()).map_err(|e| e.to_string());
    run(&["add", "-A", "--", ".", ":(exclude,top).baton"])?;
    let staged = git
        .run_output(["diff", "--cached", "--quiet"])
        .map_err(|e| e.to_string())?;
    let changed = !staged.status.success();
    if changed {
        run(&["commit", "-q", "--no-verify", "-m", message])?;
    }
    // Tracked files of `.baton/` back to the branch's; untracked ones (memory) removed. The
    // state folder is excluded, so `clean` leaves the record alone.
    let _ = git.run(["checkout", "HEAD", "--", ".baton"]);
    let _ = git.run(["clean", "-fdq", "--", ".baton"]);
    Ok(changed)
}
