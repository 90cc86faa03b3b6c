//! What the host checks itself in an agent's answer, by running it again: a verifier's passing
//! scenarios and the phase's own checks, a builder's passing scenarios, a fix's proof and its
//! disputes.

use super::dispatch::{words, OneDispatch, MAX_RECHECKS, RECHECK_TIMEOUT};
use super::*;
use crate::state::{HostCheck, Record, TaskOutput};

impl Runner<'_> {
    /// What the host checks itself in an agent's answer: a verifier's scenario commands (run
    /// again) and its rulings on the disputes that waited for it; a builder's passing scenarios
    /// (did the tests it cites really pass); a fix's disputes (each proving command run by the
    /// host).
    pub(super) async fn host_checks(
        &self,
        one: &OneDispatch<'_>,
        r: &mut Record,
        out: &mut TaskOutput,
    ) {
        if out.error.is_some() {
            return;
        }
        if one.role == Role::IntegrationVerifier {
            let artifact = r.artifact.clone();
            out.host_checks = self
                .recheck_scenarios(&artifact, one.spec, &out.text, &one.work)
                .await;
            let mut disputes = dispute::recorded(&r.artifact);
            if disputes.iter().any(|d| d.status == "pending") {
                dispute::rule(&mut disputes, &dispute::rulings(&out.text), one.id);
                dispute::record(&mut r.artifact, &disputes);
            }
        }
        if one.role == Role::ComponentBuilder && one.task.kind != Some(TaskKind::Remfix) {
            out.host_checks = self
                .recheck_builder(&r.artifact, one.spec, &out.text, &one.work)
                .await;
        }
        if one.task.kind == Some(TaskKind::Remfix) {
            out.proof_check = self.check_proof(one, &out.text).await;
            let mut found = dispute::parse(one.id, &out.text);
            for d in found
                .iter_mut()
                .filter(|d| d.status == "pending")
                .take(MAX_RECHECKS)
            {
                let command = d.command.clone().unwrap_or_default();
                let ran = self
                    .host_run(&command, &one.work, RECHECK_TIMEOUT, false, true)
                    .await;
                d.host_exit_code = ran.and_then(|c| c.exit_code);
            }
            if !found.is_empty() {
                let mut all = dispute::recorded(&r.artifact);
                all.extend(found);
                dispute::record(&mut r.artifact, &all);
            }
        }
    }

    /// `command` run again by the host, in `work`, under the verifier role's sandbox (`spec`),
    /// judged against the baseline of `artifact` when given; `None` when cancelled or it could
    /// not run.
    async fn rerun(
        &self,
        artifact: Option<&Artifact>,
        spec: &baton_protocol::role::RoleSpec,
        work: &Path,
        command: &str,
    ) -> Option<HostCheck> {
        let check = agent::Recheck {
            command,
            cwd: work,
            spec,
            timeout: RECHECK_TIMEOUT,
            cancel: self.cancel,
            network: false,
            confined: true,
        };
        let mut c = self.launcher.recheck(self.env, check).await?;
        if let Some(a) = artifact {
            self.against_baseline(a, &mut c);
        }
        Some(c)
    }

    /// cc10x's proof gate for a fix, checked where the host can: the command the fix names as
    /// its proof runs again (as a verifier's scenario does). A proof that is only the project's
    /// whole suite names no covering test, and counts as failed without a run.
    async fn check_proof(&self, one: &OneDispatch<'_>, text: &str) -> Option<HostCheck> {
        let proof = outputs::remfix_proof(&contract::parse(one.role, text).ok()?);
        let command = proof.test_command.filter(|c| !c.trim().is_empty())?;
        if self
            .test_command(&one.work)
            .is_ok_and(|suite| words(&suite) == words(&command))
        {
            return Some(HostCheck {
                command,
                ok: false,
                error: Some(
                    "it is the whole suite: name the tests that cover the fix and run those".into(),
                ),
                ..HostCheck::default()
            });
        }
        self.rerun(None, one.spec, &one.work, &command).await
    }

    /// A verifier's PASS is checked where the host can: each passing scenario's command runs
    /// again (`sh -c`, in the project, under the verifier role's sandbox, provider keys hidden,
    /// at most [`MAX_RECHECKS`] commands of [`RECHECK_TIMEOUT`] each). Nothing runs for a FAIL.
    pub(super) async fn recheck_scenarios(
        &self,
        artifact: &Artifact,
        spec: &baton_protocol::role::RoleSpec,
        text: &str,
        work: &Path,
    ) -> Vec<HostCheck> {
        let Ok(checked) = contract::parse(Role::IntegrationVerifier, text) else {
            return Vec::new();
        };
        if !checked.advances() {
            return Vec::new();
        }
        let Some(report) = outputs::from_contract(&checked).verifier else {
            return Vec::new();
        };
        let mut checks = Vec::new();
        for row in report
            .scenario_rows
            .iter()
            .filter(|r| r.status == "PASS" && !r.command.trim().is_empty())
            .take(MAX_RECHECKS)
        {
            let Some(c) = self.rerun(Some(artifact), spec, work, &row.command).await else {
                return checks;
            };
            checks.push(c);
        }
        // The phase's own checks (a planned BUILD's `checks`): one the verifier did not run, the
        // host runs, so a phase never exits on a PASS that left its required checks out.
        let ran: Vec<String> = report
            .scenario_rows
            .iter()
            .map(|r| words(&r.command))
            .collect();
        let required: Vec<String> = plan::current(artifact)
            .and_then(|(_, p)| p.checks.clone())
            .unwrap_or_default()
            .into_iter()
            .filter(|c| !c.trim().is_empty() && !ran.contains(&words(c)))
            .collect();
        for command in required.iter().take(MAX_RECHECKS) {
            let Some(mut c) = self.rerun(Some(artifact), spec, work, command).await else {
                return checks;
            };
            c.command = format!("{command} (a check of the phase that the verifier did not run)");
            checks.push(c);
        }
        // The whole suite again: only failures the baseline did not have block.
        if checks.iter().all(|c| c.ok) {
            if let Some(c) = self.suite_check(artifact, work).await {
                checks.push(c);
            }
        }
        checks
    }

    /// A builder's PASS is checked as a verifier's is (seed 001:572-576, "did the tests it cites
    /// really run"): each scenario it reports passing with exit 0 runs again under its role's
    /// sandbox, at most [`MAX_RECHECKS`]. A failure is a failed host check: the builder's pass is
    /// not believed. A fix's scenarios are its proof, checked as such. A planned phase's expected
    /// artifacts are checked with them (`scope::missing_artifacts`).
    async fn recheck_builder(
        &self,
        a: &crate::artifact::Artifact,
        spec: &baton_protocol::role::RoleSpec,
        text: &str,
        work: &Path,
    ) -> Vec<HostCheck> {
        let Ok(checked) = contract::parse(Role::ComponentBuilder, text) else {
            return Vec::new();
        };
        let Some(report) = outputs::from_contract(&checked)
            .builder
            .filter(|_| checked.advances())
        else {
            return Vec::new();
        };
        // Did it cover its scope: the phase's expected artifacts are there.
        let mut checks = super::scope::missing_artifacts(a, work);
        let passing = report
            .scenarios
            .iter()
            .filter(|s| {
                s.status == "PASS" && s.exit_code == Some(0) && !s.command.trim().is_empty()
            })
            .take(MAX_RECHECKS);
        for s in passing {
            let Some(mut c) = self.rerun(None, spec, work, &s.command).await else {
                return checks;
            };
            c.command = format!("{} (a scenario the builder reported passing)", s.command);
            checks.push(c);
        }
        checks
    }
}
