//! Running the implementers, each a bounded child in its unit's worktree.

use super::evidence::{ensure_role_file, implementer_task, summarize, summarize_error};
use super::*;

impl Run<'_> {
    pub(super) async fn run_implementer(&self, i: usize) -> Result<(), FlowError> {
        let state = self.state();
        let u = state.units[i].clone();
        let interrupted_before = u.implementer_launches > 0;
        self.emit(FlowEvent::ImplementerStarted {
            unit: u.id().to_string(),
            attempt: u.attempt,
            model_class: u.model_class,
        })?;
        let Some(path) = u.path.clone() else {
            let result = ChildSummary {
                ok: false,
                exit_code: None,
                error: Some("infrastructure: the unit has no worktree".into()),
                output: String::new(),
                stderr: String::new(),
                duration_ms: 0,
            };
            return self.emit(FlowEvent::ImplementerFinished {
                unit: u.id().to_string(),
                attempt: u.attempt,
                result,
            });
        };
        if state.workflow == Some(UnitWorkflow::Build) && u.attempt == 0 {
            return self.run_build_unit(i, &path).await;
        }
        let task = implementer_task(&state, &u, &path, interrupted_before);
        let env = vec![
            ("BATON_TASK_NAME".to_string(), u.id().to_string()),
            ("BATON_FLOW_ID".to_string(), state.id.clone()),
            ("BATON_FLOW_UNIT".to_string(), u.id().to_string()),
            ("BATON_FLOW_ATTEMPT".to_string(), u.attempt.to_string()),
        ];
        let Some(implementer) = &state.implementer else {
            return Err(FlowError::Refused(format!(
                "Flow {} has no frozen implementer: it runs on Temporal",
                state.id
            )));
        };
        let result = self
            .run_child(implementer, &u, task, &path, env, Some(u.attempt))
            .await;
        let summary = match result {
            Ok(r) => summarize(&r),
            Err(e) if e.code == ExecErrorCode::Aborted => return Ok(()),
            Err(e) => summarize_error(&e),
        };
        self.emit(FlowEvent::ImplementerFinished {
            unit: u.id().to_string(),
            attempt: u.attempt,
            result: summary,
        })
    }

    pub(super) async fn run_child(
        &self,
        role: &FrozenRole,
        u: &UnitState,
        task: String,
        cwd: &Path,
        extra_env: Vec<(String, String)>,
        implementer_attempt: Option<u32>,
    ) -> Result<ChildResult, ExecError> {
        let unit = u.id();
        let class = u.model_class;
        let d = &self.env.delegate;
        let budget = OutputBudget::new(d.output_cap);
        let backend = role.backend;
        let prepare = move || async move {
            let choice = RouteChoice {
                model_class: class,
                ..RouteChoice::default()
            };
            let route = child_route(d, backend, &choice, &role.spec)?;
            let role_file = match backend {
                BackendKind::Baton => Some(
                    ensure_role_file(role)
                        .map_err(|m| ExecError::new(ExecErrorCode::Prepare, m))?,
                ),
                BackendKind::Pi
                | BackendKind::Codex
                | BackendKind::Claude
                | BackendKind::Command => None,
            };
            plan_launch(
                d,
                LaunchPlan {
                    role: &role.spec,
                    backend,
                    route,
                    task,
                    cwd: cwd.to_path_buf(),
                    role_file,
                    extra_env,
                },
            )
        };
        let observer = self.env.observer.clone();
        let role_name = role.spec.meta.name.clone();
        let mut on_activity = move |a: Activity| {
            if let (Activity::Started { pid, .. }, Some(attempt)) = (&a, implementer_attempt) {
                // Recorded so a driver that takes over after this one died can stop it.
                if let Err(e) = self.emit(FlowEvent::ImplementerSpawned {
                    unit: unit.to_string(),
                    attempt,
                    pid: *pid,
                }) {
                    tracing::warn!("cannot record the implementer's pid: {e}");
                }
            }
            if let Some(o) = &observer {
                o(Notice::Activity {
                    unit,
                    role: &role_name,
                    activity: &a,
                });
            }
        };
        self.env
            .executor
            .run(prepare, d.limits, &budget, self.cancel, &mut on_activity)
            .await
    }
}
