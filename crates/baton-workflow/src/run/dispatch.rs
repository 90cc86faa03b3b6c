//! Dispatching a batch: the budget check, one agent per task, the recorded result.

use super::prompt::phase_base;
use super::*;
use crate::artifact::Phase;
use crate::event::{
    AgentCompleted, AgentCompletedDetails, AgentStarted, AgentStartedDetails, EventBody, EventUsage,
};
use crate::results::AgentResult;
use crate::state::{Gate, Record, RunState, TaskOutput, WorkflowState};

/// Scenario commands of one verifier PASS that are run again.
pub const MAX_RECHECKS: usize = 8;
/// How long one re-run scenario command may take.
pub const RECHECK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

impl Runner<'_> {
    /// Before a dispatch: stops at a checkpoint when the next dispatches would pass the budget.
    /// A dispatch is estimated at the most one has cost so far.
    pub(super) fn within_budget(&self, mut r: Record, n: usize) -> Result<bool, RunError> {
        let v = &r.state;
        let s = &v.spent;
        let over_tokens = v
            .host
            .budget_tokens
            .filter(|b| s.tokens() + s.max_dispatch_tokens * n as u64 > *b || s.tokens() >= *b);
        let over_usd = v.host.budget_usd.filter(|b| {
            s.cost_usd + s.max_dispatch_usd * n as f64 > *b || (s.cost_usd >= *b && *b > 0.0)
        });
        let reason = match (over_tokens, over_usd) {
            (Some(b), _) => format!(
                "the next dispatch would pass the token budget: {} of {b} tokens spent, {} left, a dispatch has taken up to {}",
                s.tokens(),
                b.saturating_sub(s.tokens()),
                s.max_dispatch_tokens
            ),
            (None, Some(b)) => format!(
                "the next dispatch would pass the budget: ${:.4} of ${b:.4} spent, ${:.4} left, a dispatch has cost up to ${:.4}",
                s.cost_usd,
                (b - s.cost_usd).max(0.0),
                s.max_dispatch_usd
            ),
            (None, None) => return Ok(true),
        };
        r.state.state = RunState::Checkpoint;
        let brief = gate::brief_of(&r, &format!("budget stop: {reason}"));
        r.state.checkpoint = Some(gate::checkpoint(Gate::Budget, &reason, brief));
        self.say(&format!("budget stop: {reason}"));
        self.commit(EventBody::BudgetStopped(Note::because(reason)), r)?;
        Ok(false)
    }

    /// Dispatches the open tasks of the batch: all at once when they are all read-only, else
    /// one at a time (two write agents never run together).
    pub(super) async fn dispatch_batch(
        &self,
        v: &WorkflowState,
        open: Vec<String>,
    ) -> Result<(), RunError> {
        let read_only = open.iter().all(|id| {
            v.task(id)
                .and_then(|t| self.role_of(t))
                .is_some_and(Role::is_read_only)
        });
        if read_only && open.len() > 1 {
            // The tree as the batch starts, read once (only tracked files count for read-only
            // roles): each dispatch then records its start before its first wait, so the batch's
            // events keep the batch's order.
            let before = tree_digest(&self.work_dir(v), false).await;
            let runs = open
                .iter()
                .map(|id| self.dispatch_one(id, Some(before.clone())));
            for r in futures::future::join_all(runs).await {
                r?;
            }
        } else if let Some(first) = open.first() {
            self.dispatch_one(first, None).await?;
        }
        Ok(())
    }

    /// The role that runs a task; a remediation in DEBUG goes to the investigator.
    pub(super) fn role_of(&self, t: &Task) -> Option<Role> {
        let kind = t.kind?;
        let phase = t.phase.as_deref().unwrap_or("");
        let origin = t.origin.as_deref().unwrap_or("router");
        role_for_task(kind, phase, origin).or(match kind {
            TaskKind::Remfix if self.kind() == WorkflowKind::Debug => Some(Role::BugInvestigator),
            TaskKind::Remfix => Some(Role::ComponentBuilder),
            _ => None,
        })
    }

    /// Runs one task to its end; `before` is the tree's digest as its batch started, when the
    /// batch read it.
    pub(super) async fn dispatch_one(
        &self,
        id: &str,
        before: Option<Option<String>>,
    ) -> Result<(), RunError> {
        let r = self.record();
        let v = &r.state;
        let Some(task) = v.task(id).cloned() else {
            return Err(RunError::UnknownTask { id: id.to_string() });
        };
        let Some(role) = self.role_of(&task) else {
            return Err(RunError::NoRoleForTask {
                id: id.to_string(),
                phase: task.phase.clone(),
            });
        };
        let mut spec = match baton_roles::find_role(&self.env.delegate.role_dirs, role.name()) {
            Ok(s) => s,
            Err(e) => {
                return self.fail(RunError::Role {
                    role: role.name().to_string(),
                    message: e.to_string(),
                })
            }
        };
        self.add_hinted_skills(&mut spec);
        // Research needs a backend: only a user or project `researcher` role provides one.
        if role == Role::Researcher && spec.source == baton_protocol::role::RoleSource::Builtin {
            return self.record_unavailable_research(r, &task);
        }
        let class =
            tier_for(&spec, &tier_config(self.env)).map_err(|e| RunError::Tier(e.to_string()))?;
        let phase = task.phase.clone().unwrap_or_default();
        let attempt = v.host.dispatch_counts.get(&phase).copied().unwrap_or(0) + 1;
        let Some(r) = self.enter_phase(r, &task).await? else {
            return Ok(());
        };
        // Skill precedence (cc10x skill_precedence_gate): when standing instructions of more
        // than one source are in force, the engine says which governs; the resolution is
        // recorded once per set of sources and every dispatch is told.
        let precedence = self.instruction_sources(&r, &spec);
        let r = self.resolve_precedence(r, &precedence)?;
        let section = (precedence.len() >= 2).then(|| precedence_section(&precedence));
        // A role that reads the change gets it exactly: the phase's base against the tree now.
        let change = match (agent::reads_change(role), phase_base(&r.artifact)) {
            (true, Some(base)) if base != agent::UNAVAILABLE_BASE => {
                let work = self.work_dir(&r.state);
                let now = tree_base(&work).await;
                let files = match now.as_str() {
                    agent::UNAVAILABLE_BASE => None,
                    now => changed_files(&work, &base, now).await,
                };
                Some((now, files))
            }
            _ => None,
        };
        let prompt = self.prompt(&r, &task, role, section.as_deref(), change.as_ref());
        let (prompt, bias) = if agent::bias_scanned(role) {
            agent::scan_bias(&prompt)
        } else {
            (prompt, Vec::new())
        };
        let work = self.work_dir(&r.state);
        let one = OneDispatch {
            id,
            task: &task,
            role,
            spec: &spec,
            class,
            phase,
            attempt,
            work,
        };
        // Write roles must change the tree to pass; read-only ones must leave its tracked files alone.
        let untracked = !role.is_read_only();
        let before = match before {
            Some(b) => b,
            None => tree_digest(&one.work, untracked).await,
        };
        // A writer's dispatch is read between two snapshots of the tree: what it changed, on
        // request (`baton_app::changes::dispatch_change`, the dashboard's dispatch view).
        let snap_before = match untracked {
            true => Some(tree_base(&one.work).await),
            false => None,
        };
        let lane_base = snap_before
            .clone()
            .filter(|b| b != agent::UNAVAILABLE_BASE && fan_out::lane_files(&task).is_some());
        self.record_start(&one, bias, lane_base).await?;
        let Some(d) = self.launch(&one, prompt).await else {
            // Interrupted: the task stays in progress and runs again on resume.
            return Ok(());
        };
        let changed = match (&before, tree_digest(&one.work, untracked).await) {
            (Some(b), Some(after)) => Some(*b != after),
            _ => None,
        };
        let trees = match snap_before {
            Some(b) if b != agent::UNAVAILABLE_BASE => {
                let after = tree_base(&one.work).await;
                (after != agent::UNAVAILABLE_BASE).then_some((b, after))
            }
            _ => None,
        };
        let (mut d, mut changed) = (d, changed);
        if let Some(edited) = self.lane_edits(id, &task, trees.as_ref(), &one.work).await {
            // Run again after a crash, a lane whose fix was made before it changed the tree.
            if !edited.is_empty() {
                changed = Some(true);
            }
            d.output.edited = edited;
        }
        self.record_completion(&one, d, changed, trees).await
    }

    /// A scoped investigator of a fan-out: the files it edited since it first started (a run
    /// again after a crash includes what it did before), for the fan-in check; read from this
    /// run's own start when the first snapshot is gone. `None` for any other task.
    async fn lane_edits(
        &self,
        id: &str,
        task: &Task,
        trees: Option<&(String, String)>,
        work: &Path,
    ) -> Option<Vec<String>> {
        fan_out::lane_files(task)?;
        let (b, after) = trees?;
        let first = self.record().state.host.lane_bases.get(id).cloned();
        let listed = match first {
            Some(f) => match changed_files(work, &f, after).await {
                Some(l) => Some(l),
                None => changed_files(work, b, after).await,
            },
            None => changed_files(work, b, after).await,
        };
        Some(
            listed
                .unwrap_or_default()
                .lines()
                .filter_map(|l| l.split_once('\t').map(|(_, path)| path.to_string()))
                .collect(),
        )
    }

    /// Before a planned phase's builder first runs: its plan is still the one the workflow
    /// trusted (cc10x plan_trust_gate, again before each phase), and a BUILD's clean baseline is
    /// recorded once (cc10x build 0b, 0c). `None`: the workflow stopped (the plan changed
    /// under it) or was cancelled.
    async fn enter_phase(&self, r: Record, task: &Task) -> Result<Option<Record>, RunError> {
        let new_phase = task.node() == Some(Phase::BuildImplement)
            && task.kind != Some(TaskKind::Remfix)
            && r.artifact.phase_cursor != r.artifact.results.git_base_phase;
        if !new_phase {
            return Ok(Some(r));
        }
        let mut checked = r.clone();
        let state = &self.env.delegate.state;
        if let Err(e) = plan::recheck(&mut checked.artifact, state, &self.root, &self.id) {
            return self.fail(e).map(|()| None);
        }
        let mut why = Vec::new();
        if checked.artifact.results.plan != r.artifact.results.plan {
            let w = "the plan was edited and approved again: its phases are taken anew";
            self.say(w);
            why.push(w.to_string());
        }
        if self.kind() == WorkflowKind::Build && checked.artifact.results.baseline.is_none() {
            let work = self.work_dir(&checked.state);
            self.record_baseline(&mut checked, &work).await;
            if self.cancel.is_cancelled() {
                return Ok(None);
            }
            why.push(baseline_reason(&checked.artifact));
        }
        if why.is_empty() {
            return Ok(Some(r));
        }
        self.commit(
            EventBody::ArtifactUpdated(Note::because(why.join("; "))),
            checked,
        )?;
        Ok(Some(self.record()))
    }

    /// The engine's word on which of `precedence` governs, recorded once per set of sources.
    fn resolve_precedence(
        &self,
        r: Record,
        precedence: &[crate::engine::Instruction],
    ) -> Result<Record, RunError> {
        if precedence.len() < 2 {
            return Ok(r);
        }
        let key = precedence
            .iter()
            .map(|i| i.text.as_str())
            .collect::<Vec<_>>()
            .join("; ");
        if r.artifact.results.precedence.as_deref() == Some(key.as_str()) {
            return Ok(r);
        }
        let d = crate::engine::decide(
            &r.artifact,
            &crate::engine::Inputs {
                instructions: precedence.to_vec(),
                ..crate::engine::Inputs::default()
            },
        );
        let mut resolved = r.clone();
        resolved.artifact = d.apply(&r.artifact);
        resolved.artifact.results.precedence = Some(key);
        self.commit(
            EventBody::ArtifactUpdated(Note::because(d.reason.clone())),
            resolved,
        )?;
        Ok(self.record())
    }

    /// The task in progress, the phase's base (recorded once before its builder first runs,
    /// cc10x 11a: what the review, the hunt and the verification diff against) and the attempt:
    /// one `agent_started` event.
    async fn record_start(
        &self,
        one: &OneDispatch<'_>,
        bias: Vec<String>,
        lane_base: Option<String>,
    ) -> Result<(), RunError> {
        let mut r = self.record();
        if let Some(b) = lane_base {
            r.state
                .host
                .lane_bases
                .entry(one.id.to_string())
                .or_insert(b);
        }
        if let Some(t) = r.state.task_mut(one.id) {
            t.status = Some(TaskStatus::InProgress);
        }
        let phase_id = r.artifact.phase_cursor.clone();
        let recorded = r.artifact.results.git_base_phase.as_deref();
        if one.task.node() == Some(Phase::BuildImplement)
            && one.task.kind != Some(TaskKind::Remfix)
            && phase_id.is_some()
            && recorded != phase_id.as_deref()
        {
            record_phase_base(&mut r.artifact, tree_base(&one.work).await);
        }
        r.state
            .host
            .dispatch_counts
            .insert(one.phase.clone(), one.attempt);
        let backend = baton_exec::delegate::backend_of(&self.env.delegate, one.spec);
        let ev = EventBody::AgentStarted(AgentStarted {
            phase: Some(one.phase.clone()),
            task_id: Some(one.id.to_string()),
            agent: Some(one.role.name().to_string()),
            reason: None,
            details: Some(AgentStartedDetails {
                role: Some(one.spec.name().to_string()),
                class: Some(one.class.to_string()),
                attempt: Some(one.attempt),
                backend: Some(backend.as_str().to_string()),
                bias_phrases_removed: Some(bias),
                ..AgentStartedDetails::default()
            }),
        });
        self.commit(ev, r)?;
        self.say(&format!(
            "{} {}: {} on {} (attempt {})",
            one.id,
            one.phase,
            one.spec.name(),
            one.class,
            one.attempt
        ));
        Ok(())
    }

    /// The agent's run: what it returned (a launch that failed is an output with its error);
    /// `None` when it was interrupted.
    async fn launch(&self, one: &OneDispatch<'_>, prompt: String) -> Option<agent::Dispatched> {
        let roles_dir = self
            .env
            .delegate
            .state
            .workflows()
            .join(&self.id)
            .join("roles");
        let launch = agent::Launch {
            wf: &self.id,
            spec: one.spec,
            class: one.class,
            task: one.task,
            attempt: one.attempt,
            prompt,
            cwd: &one.work,
            roles_dir: &roles_dir,
            cancel: self.cancel,
        };
        match self.launcher.launch(self.env, launch).await {
            Ok(d) => Some(d),
            Err(e) if e.code == ExecErrorCode::Aborted || self.cancel.is_cancelled() => None,
            Err(e) => Some(agent::Dispatched {
                output: TaskOutput {
                    role: one.spec.name().to_string(),
                    error: Some(e.message.clone()),
                    ..TaskOutput::default()
                },
                usage: Default::default(),
                cost_usd: None,
                route: String::new(),
                backend: "",
                duration_seconds: 0.0,
                exit_code: None,
                session_id: None,
            }),
        }
    }

    /// What the agent returned, checked by the host where it can (a verifier's scenarios, a
    /// fix's disputes), what it spent, and its verdict: one `agent_completed` event, then its
    /// result persisted.
    async fn record_completion(
        &self,
        one: &OneDispatch<'_>,
        d: agent::Dispatched,
        changed: Option<bool>,
        trees: Option<(String, String)>,
    ) -> Result<(), RunError> {
        let (id, role) = (one.id, one.role);
        let mut r = self.record();
        if let Some(t) = r.state.task_mut(id) {
            t.status = Some(TaskStatus::Completed);
        }
        let mut out = d.output.clone();
        out.changed = changed;
        self.host_checks(one, &mut r, &mut out).await;
        out.role = role.name().to_string();
        r.artifact
            .telemetry
            .record_dispatch(role.name(), d.duration_seconds);
        if role == Role::IntegrationVerifier {
            r.artifact
                .telemetry
                .record_verifier_workload(&d.output.text);
        }
        if role == Role::Researcher && r.artifact.capabilities.is_none() {
            // What research could use, recorded with the first round.
            r.artifact.capabilities = Some(crate::artifact::Capabilities::of(one.spec));
        }
        let v = &mut r.state;
        v.host.outputs.insert(id.to_string(), out);
        v.host.finished(id);
        let tokens = spend(&mut v.spent, &d);
        let verdict = match &d.output.error {
            Some(_) => "error".to_string(),
            None => contract::parse(role, &d.output.text)
                .map(|c| c.outcome.verdict().name().to_string())
                .unwrap_or_else(|_| "no contract".into()),
        };
        let ev = EventBody::AgentCompleted(AgentCompleted {
            phase: Some(one.phase.clone()),
            task_id: Some(id.to_string()),
            agent: Some(role.name().to_string()),
            verdict: Some(verdict.clone()),
            reason: None,
            duration_seconds: Some(d.duration_seconds),
            details: Some(AgentCompletedDetails {
                role: Some(one.spec.name().to_string()),
                route: Some(d.route.clone()),
                backend: Some(d.backend.to_string()),
                exit_code: Some(d.exit_code),
                usage: Some(EventUsage {
                    input_tokens: d.usage.input_tokens,
                    output_tokens: d.usage.output_tokens,
                }),
                cost_usd: Some(d.cost_usd),
                changed: Some(changed),
                error: Some(d.output.error.clone()),
                session: d.session_id.clone(),
                tree_before: trees.as_ref().map(|t| t.0.clone()),
                tree_after: trees.map(|t| t.1),
                ..AgentCompletedDetails::default()
            }),
        });
        self.commit(ev, r)?;
        self.say(&format!(
            "{id} {}: {} → {verdict} ({:.1}s, {tokens} tokens)",
            one.phase,
            one.spec.name(),
            d.duration_seconds
        ));
        if d.output.error.is_none() {
            self.persist_result(id, role, &one.phase)?;
        }
        if role == Role::BugInvestigator {
            self.count_attempt(id, &verdict)?;
        }
        Ok(())
    }

    /// cc10x's DEBUG attempt count: each investigator run is a `[DEBUG-N]:` line under
    /// `activeContext.md ## Recent Changes`, after the workflow's `[DEBUG-RESET]` marker, which
    /// the next investigator reads in its memory summary.
    fn count_attempt(&self, id: &str, verdict: &str) -> Result<(), RunError> {
        let r = self.record();
        // A fan-out's investigators each count their own attempts (by their scope).
        let lane = r
            .state
            .task(id)
            .filter(|t| fan_out::lane_files(t).is_some())
            .and_then(|t| t.scope.clone());
        let n = r
            .state
            .tasks
            .iter()
            .filter(|t| t.node() == Some(Phase::DebugInvestigate))
            .filter(|t| lane.is_none() || t.scope == lane)
            .filter(|t| r.state.host.outputs.contains_key(&t.id))
            .count();
        MemoryDir::new(&self.root)
            .append(
                MemoryFile::ActiveContext,
                "Recent Changes",
                &[format!(
                    "[DEBUG-{n}]: investigation of wf:{} → {verdict}",
                    self.id
                )],
            )
            .map_err(|e| RunError::Memory(e.to_string()))
    }

    /// cc10x's `contract_parsed` / `result_persisted`: the agent's contract read, its result
    /// under `results.<role>`, its task under `task_ids`, a verifier's evidence under
    /// `evidence` and its outcome in `traceability.verification` — one event.
    fn persist_result(&self, id: &str, role: Role, phase: &str) -> Result<(), RunError> {
        let mut r = self.record();
        let Some(o) = r.state.host.outputs.get(id).cloned() else {
            return Ok(());
        };
        let cursor = r.artifact.phase_cursor.clone();
        let (decision, reason, source) = match contract::parse(role, &o.text) {
            Ok(c) => {
                let verdict = c.outcome.verdict().name().to_string();
                if let Some(v) = outputs::from_contract(&c).verifier {
                    r.artifact.evidence.insert(
                        role.name().into(),
                        crate::artifact::Evidence {
                            task: id.to_string(),
                            scenarios: v.evidence.scenarios.clone(),
                        }
                        .to_json(),
                    );
                    r.artifact
                        .traceability
                        .verification
                        .push(crate::artifact::TracedCheck {
                            phase: cursor.clone(),
                            task: id.to_string(),
                            passed: v.passed(),
                            scenarios: v.scenario_rows.len() as u32,
                        });
                }
                (
                    verdict,
                    None,
                    Some(format!("{:?}", c.source).to_lowercase()),
                )
            }
            Err(e) => ("no contract".to_string(), Some(e.to_string()), None),
        };
        r.artifact.results.agents.insert(
            role.name().into(),
            Some(AgentResult {
                task: Some(id.to_string()),
                phase: cursor,
                node: Some(phase.to_string()),
                verdict: Some(decision.clone()),
                ..AgentResult::default()
            }),
        );
        r.artifact.task_ids.insert(phase.to_string(), id.into());
        let ev = EventBody::ContractParsed(crate::event::Fields {
            phase: Some(phase.to_string()),
            task_id: Some(id.to_string()),
            agent: Some(role.name().to_string()),
            decision: Some(decision),
            reason,
            details: source.map(|s| serde_json::json!({"source": s})),
            ..crate::event::Fields::default()
        });
        self.commit(ev, r)
    }

    /// No research backend: the round's result is `UNAVAILABLE`, recorded without a dispatch.
    pub(super) fn record_unavailable_research(
        &self,
        mut r: Record,
        task: &Task,
    ) -> Result<(), RunError> {
        // What research could use, recorded with the first round: nothing, here.
        r.artifact
            .capabilities
            .get_or_insert_with(crate::artifact::Capabilities::none);
        let v = &mut r.state;
        let text = format!(
            "research unavailable: no research backend is configured\n\n### Router Contract (MACHINE-READABLE)\n```yaml\nSTATUS: UNAVAILABLE\nFILE_PATH: null\nBACKEND_MODE: none\nSOURCES_ATTEMPTED: []\nSOURCES_USED: []\nQUALITY_LEVEL: none\n{}: 0\nWHAT_CHANGED_RECOMMENDATION: null\nMEMORY_NOTES: null\n```\n",
            if task.node() == Some(Phase::ResearchGithub) {
                "IMPLEMENTATIONS_FOUND"
            } else {
                "KEY_FINDINGS_COUNT"
            }
        );
        if let Some(t) = v.task_mut(&task.id) {
            t.status = Some(TaskStatus::Completed);
        }
        v.host.finished(&task.id);
        v.host.outputs.insert(
            task.id.clone(),
            TaskOutput {
                role: Role::Researcher.name().into(),
                text,
                ..TaskOutput::default()
            },
        );
        let ev = EventBody::AgentCompleted(AgentCompleted {
            phase: Some(task.phase.clone().unwrap_or_default()),
            task_id: Some(task.id.clone()),
            agent: Some(Role::Researcher.name().into()),
            verdict: Some("unavailable".into()),
            reason: Some("no research backend configured: UNAVAILABLE".into()),
            ..AgentCompleted::default()
        });
        self.commit(ev, r)
    }

    /// The project's skill hints (`patterns.md ## Project SKILL_HINTS`), without the template's
    /// comment lines.
    pub(super) fn skill_hints(&self) -> Option<String> {
        MemoryDir::new(&self.root)
            .sections(MemoryFile::Patterns)
            .ok()
            .and_then(|s| s.into_iter().find(|s| s.name == "Project SKILL_HINTS"))
            .map(|s| {
                s.body
                    .lines()
                    .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with("<!--"))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .filter(|h| !h.is_empty())
    }

    /// The standing instructions in force for a dispatch of `spec`, strongest first: the
    /// project's standards (`patterns.md ## User Standards`, or a CLAUDE.md / AGENTS.md), the
    /// approved plan, the skills the agent is given. The request itself always leads and is not
    /// listed.
    fn instruction_sources(
        &self,
        r: &Record,
        spec: &baton_protocol::role::RoleSpec,
    ) -> Vec<crate::engine::Instruction> {
        use crate::engine::{Instruction, InstructionSource};
        let mut out = Vec::new();
        let standards = MemoryDir::new(&self.root)
            .sections(MemoryFile::Patterns)
            .ok()
            .and_then(|s| s.into_iter().find(|s| s.name == "User Standards"))
            .is_some_and(|s| {
                s.body
                    .lines()
                    .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with("<!--"))
            });
        let files: Vec<&str> = ["CLAUDE.md", "AGENTS.md"]
            .into_iter()
            .filter(|f| self.root.join(f).is_file())
            .collect();
        if standards || !files.is_empty() {
            let mut what: Vec<String> = files.iter().map(|f| f.to_string()).collect();
            if standards {
                what.insert(0, "patterns.md User Standards".into());
            }
            out.push(Instruction {
                source: InstructionSource::ProjectStandard,
                text: format!("project standards ({})", what.join(", ")),
            });
        }
        if r.artifact.results.plan.is_some() {
            out.push(Instruction {
                source: InstructionSource::ApprovedPlan,
                text: format!(
                    "the approved plan ({})",
                    r.artifact.plan_file.as_deref().unwrap_or("recorded")
                ),
            });
        }
        if !spec.meta.skills.is_empty() {
            out.push(Instruction {
                source: InstructionSource::DomainSkill,
                text: format!("skills ({})", spec.meta.skills.join(", ")),
            });
        }
        out
    }

    /// Adds to `spec`'s skills those the skill hints name that exist (cc10x: a hinted skill is
    /// loaded for the dispatched agent; one that does not exist stays a hint in the prompt).
    fn add_hinted_skills(&self, spec: &mut baton_protocol::role::RoleSpec) {
        let Some(hints) = self.skill_hints() else {
            return;
        };
        let known = baton_exec::delegate::skills(&self.env.delegate);
        for name in hinted_names(&hints) {
            if known.get(name).is_some() && !spec.meta.skills.iter().any(|s| s == name) {
                spec.meta.skills.push(name.to_string());
            }
        }
    }
}

/// The event reason of a recorded baseline.
fn baseline_reason(a: &Artifact) -> String {
    match baseline::recorded(a) {
        Some(b) if b.is_recorded() => format!(
            "baseline recorded: {} failing before the build{}",
            b.failures.len(),
            if b.failures.is_empty() {
                String::new()
            } else {
                format!(" ({})", b.failures.join(", "))
            }
        ),
        Some(b) => format!("baseline unavailable: {}", b.reason.unwrap_or_default()),
        None => "baseline not recorded".into(),
    }
}

/// The prompt's section on what governs where standing instructions disagree.
fn precedence_section(sources: &[crate::engine::Instruction]) -> String {
    let listed: Vec<&str> = sources.iter().map(|i| i.text.as_str()).collect();
    format!(
        "## Instruction Precedence\nWhere instructions disagree, the stronger governs: the user request, then {}, then your role's instructions, then your own judgement. Now {} govern how; the request says what is done. Precedence never dismisses a reviewer's finding because the plan or a skill asked for what it found.\n\n",
        listed.join(", then "),
        listed[0]
    )
}

/// The skill names hint lines give: `- name: what it is for` (or `* name …`, the name possibly in
/// backticks), each the first word of a list item.
fn hinted_names(hints: &str) -> Vec<&str> {
    hints
        .lines()
        .filter_map(|l| {
            l.trim_start()
                .strip_prefix("- ")
                .or_else(|| l.trim_start().strip_prefix("* "))
        })
        .filter_map(|item| {
            let word = item.split([':', ' ', '\t']).next()?.trim_matches('`');
            (!word.is_empty()).then_some(word)
        })
        .collect()
}
/// Records `base` as the phase's base (and the workflow's, the first time).
fn record_phase_base(a: &mut Artifact, base: String) {
    let results = &mut a.results;
    if results.workflow_base_sha.is_none() {
        results.workflow_base_sha = Some(base.clone());
    }
    results.git_base_sha = Some(base);
    results.git_base_phase = a.phase_cursor.clone();
}

/// One task's dispatch, as its steps share it.
pub(super) struct OneDispatch<'a> {
    pub(super) id: &'a str,
    pub(super) task: &'a Task,
    pub(super) role: Role,
    pub(super) spec: &'a RoleSpec,
    class: baton_protocol::ModelClass,
    phase: String,
    attempt: u32,
    /// Where the agent works.
    pub(super) work: PathBuf,
}

/// Adds a dispatch's usage and cost to `s`; its tokens.
fn spend(s: &mut crate::state::Spent, d: &agent::Dispatched) -> u64 {
    s.dispatches += 1;
    s.input_tokens += d.usage.input_tokens;
    s.output_tokens += d.usage.output_tokens;
    let tokens = d.usage.input_tokens + d.usage.output_tokens;
    s.max_dispatch_tokens = s.max_dispatch_tokens.max(tokens);
    match d.cost_usd {
        Some(c) => {
            s.cost_usd += c;
            s.max_dispatch_usd = s.max_dispatch_usd.max(c);
        }
        None if tokens > 0 => s.unpriced_dispatches += 1,
        None => {}
    }
    tokens
}

/// A command's words, runs of blanks as one: how a phase's check and a scenario are matched.
pub(super) fn words(command: &str) -> String {
    command.split_whitespace().collect::<Vec<_>>().join(" ")
}
