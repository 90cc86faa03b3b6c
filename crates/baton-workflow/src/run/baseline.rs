//! The clean baseline of a BUILD, carried out: before the first builder the dependency install
//! (a fresh worktree only) and one run of the test suite, recorded under `results.deps` and
//! `results.baseline`; after each verifier's pass the suite again, where only failures the
//! baseline did not have block.

use std::path::Path;

use super::*;
use crate::baseline::{self as base, Baseline, Deps};
use crate::state::HostCheck;

/// How long the dependency install may take.
pub const INSTALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(900);
/// How long one run of the test suite may take.
pub const SUITE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(900);

/// The recorded baseline, if any.
pub(super) fn recorded(a: &Artifact) -> Option<Baseline> {
    a.results.baseline.clone()
}

/// The dependency install of a fresh tree at `work` and whether it runs in the sandbox: the
/// project's own `workflow.install` (trusted, its own rights) unconfined, a detected one
/// (`npm ci`, `cargo fetch`, …, which runs what the tree's manifests say, and a model may have
/// written them) confined, also when `workflow.install` is set but empty.
fn install_command(configured: Option<&str>, work: &Path) -> Option<(String, bool)> {
    match configured.filter(|c| !c.trim().is_empty()) {
        Some(own) => Some((own.to_string(), false)),
        None => base::detect_install(work).map(|c| (c.to_string(), true)),
    }
}

impl Runner<'_> {
    /// The test command: `workflow.test_command`, else detected; `None` when off or none.
    pub(super) fn test_command(&self, work: &Path) -> Result<String, String> {
        match self.env.delegate.config.workflow.test_command.as_deref() {
            Some("off") => Err("workflow.test_command is \"off\"".into()),
            Some(c) if !c.trim().is_empty() => Ok(c.to_string()),
            _ => base::detect_test_command(work).map(str::to_string).ok_or_else(|| {
                "no test command: none is configured (workflow.test_command) and the tree has no Cargo.toml, package.json test script, go.mod, pytest config or Makefile test target".into()
            }),
        }
    }

    /// Runs `command` in `work` through the launcher (the verifier role's sandbox unless
    /// `confined` is false); `None` when cancelled or there is no verifier role.
    pub(super) async fn host_run(
        &self,
        command: &str,
        work: &Path,
        timeout: std::time::Duration,
        network: bool,
        confined: bool,
    ) -> Option<HostCheck> {
        let spec = baton_roles::find_role(
            &self.env.delegate.role_dirs,
            Role::IntegrationVerifier.name(),
        )
        .ok()?;
        let check = agent::Recheck {
            command,
            cwd: work,
            spec: &spec,
            timeout,
            cancel: self.cancel,
            network,
            confined,
        };
        self.launcher.recheck(self.env, check).await
    }

    /// cc10x 0b and 0c: in a fresh worktree the dependency install, then one run of the suite
    /// on the untouched tree; both recorded in `r` (the caller commits it).
    pub(super) async fn record_baseline(&self, r: &mut Record, work: &Path) {
        let fresh = r.state.host.worktree.is_some();
        let configured = self.env.delegate.config.workflow.install.clone();
        let deps = match (fresh, configured.as_deref()) {
            (false, _) => Deps {
                status: "skipped".into(),
                command: None,
                reason: Some("in place: the tree's dependencies are the user's".into()),
            },
            (true, Some("off")) => Deps {
                status: "off".into(),
                command: None,
                reason: Some("workflow.install is \"off\"".into()),
            },
            (true, configured) => match install_command(configured, work) {
                None => Deps {
                    status: "no_manifest".into(),
                    command: None,
                    reason: None,
                },
                Some((c, confined)) => {
                    self.say(&format!("installing dependencies: {c}"));
                    let done = self
                        .host_run(&c, work, INSTALL_TIMEOUT, true, confined)
                        .await;
                    match done {
                        Some(h) if h.ok => Deps {
                            status: "installed".into(),
                            command: Some(c),
                            reason: None,
                        },
                        Some(h) => Deps {
                            status: "install_failed".into(),
                            command: Some(c),
                            reason: Some(match (h.exit_code, h.error) {
                                (_, Some(e)) => e,
                                (Some(code), None) => format!("exits {code}"),
                                (None, None) => "did not finish".into(),
                            }),
                        },
                        None => Deps {
                            status: "install_failed".into(),
                            command: Some(c),
                            reason: Some("cancelled".into()),
                        },
                    }
                }
            },
        };
        let baseline = match self.test_command(work) {
            Err(why) => Baseline::unavailable(None, &why),
            Ok(c) => {
                self.say(&format!("baseline: running the test suite once ({c})"));
                match self.host_run(&c, work, SUITE_TIMEOUT, false, true).await {
                    Some(h) if h.exit_code.is_none() => Baseline::unavailable(
                        Some(&c),
                        &format!("the suite did not finish ({})", h.error.unwrap_or_default()),
                    ),
                    Some(h) => Baseline::from_run(&c, h.exit_code, &h.output),
                    None => Baseline::unavailable(Some(&c), "the suite could not run"),
                }
            }
        };
        self.say(&match baseline.is_recorded() {
            true if baseline.failures.is_empty() => "baseline: no test fails before the build".into(),
            true => format!(
                "baseline: {} test{} already fail{} before the build ({}): they are not blamed on it",
                baseline.failures.len(),
                if baseline.failures.len() == 1 { "" } else { "s" },
                if baseline.failures.len() == 1 { "s" } else { "" },
                baseline.failures.join(", ")
            ),
            false => format!(
                "baseline unavailable: {}; every test failure is suspect",
                baseline.reason.as_deref().unwrap_or("")
            ),
        });
        let results = &mut r.artifact.results;
        results.deps = Some(deps);
        results.baseline = Some(baseline);
    }

    /// After a verifier's pass: a scenario command that failed when re-run counts as passing
    /// when every test it shows failing already failed in the baseline.
    pub(super) fn against_baseline(&self, a: &Artifact, c: &mut HostCheck) {
        let Some(b) = recorded(a).filter(Baseline::is_recorded) else {
            return;
        };
        let run = base::read_run(&c.output);
        if c.ok || run.failed.is_empty() {
            return;
        }
        c.new_failures = base::new_failures(&b, &run);
        c.preexisting = run
            .failed
            .iter()
            .filter(|f| b.failures.contains(f))
            .cloned()
            .collect();
        if c.new_failures.is_empty() {
            c.ok = true;
        }
    }

    /// After a verifier's pass: the suite once more; new failures make it fail, pre-existing
    /// ones are listed. `None` without a recorded baseline.
    pub(super) async fn suite_check(&self, a: &Artifact, work: &Path) -> Option<HostCheck> {
        let b = recorded(a).filter(Baseline::is_recorded)?;
        let command = b.command.clone()?;
        let mut c = self
            .host_run(&command, work, SUITE_TIMEOUT, false, true)
            .await?;
        let run = base::read_run(&c.output);
        if !c.ok && run.failed.is_empty() {
            c.error =
                Some("the suite fails and no failing test can be read from its output".into());
            return Some(c);
        }
        self.against_baseline(a, &mut c);
        Some(c)
    }
}

/// The verifier's `## Baseline` section.
pub(super) fn prompt_section(a: &Artifact) -> Option<String> {
    let b = recorded(a)?;
    Some(if b.is_recorded() && b.failures.is_empty() {
        format!(
            "## Baseline\nBefore this build `{}` passed: any failing test is a new failure of this change.\n",
            b.command.unwrap_or_default()
        )
    } else if b.is_recorded() {
        format!(
            "## Baseline\nBefore this build `{}` already had these tests failing: {}. Only new failures block the phase; report these as pre-existing, not as failures of this change.\n",
            b.command.unwrap_or_default(),
            b.failures.join(", ")
        )
    } else {
        format!(
            "## Baseline\nNo clean baseline could be recorded ({}): every failing test is suspect — say so, and whether it is plausibly caused by this change.\n",
            b.reason.unwrap_or_default()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_detected_install_is_confined_even_when_workflow_install_is_empty() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("package.json"), "{}").unwrap();
        for empty in [None, Some(""), Some("  ")] {
            assert_eq!(
                install_command(empty, d.path()),
                Some(("npm install".to_string(), true)),
                "{empty:?}"
            );
        }
        assert_eq!(
            install_command(Some("sh setup.sh"), d.path()),
            Some(("sh setup.sh".to_string(), false))
        );
        assert_eq!(
            install_command(Some(""), tempfile::tempdir().unwrap().path()),
            None
        );
    }
}
