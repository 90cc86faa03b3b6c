//! One dispatch: the prompt scaffold a role agent gets (and nothing else: never a conversation),
//! the bias scan before adversarial dispatches, and the launch through the executor.
//!
//! The runner reaches outside its process only through a [`Launcher`]: launching a role agent
//! and running a verifier's scenario command again. [`ExecLauncher`] does both for real (the
//! executor's launch planning, the guarded command runner); a test hands the runner its own to
//! script the agents' answers in-process.

use std::path::{Path, PathBuf};
use std::time::Instant;

use baton_exec::delegate::{
    backend_of, child_route, plan_launch, write_frozen_role, ChildRoute, LaunchPlan, RouteChoice,
};
use baton_exec::executor::OutputBudget;
use baton_exec::{ChildStatus, ExecError, ExecErrorCode};
use baton_protocol::role::{BackendKind, RoleSpec};
use baton_protocol::{ModelClass, Usage};

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::RunEnv;
use crate::artifact::{Task, TaskKind};
use crate::contract::Role;
use crate::state::{HostCheck, TaskOutput};

/// Phrases that pre-judge a reviewer's verdict: cc10x's self-check blocklist (seed 001's
/// anti-anchoring guard; `don't treat` stands for "don't treat X as a defect").
pub const BIAS_PHRASES: [&str; 8] = [
    "do not flag",
    "don't treat",
    "don't worry about",
    "at most minor",
    "the plan chose",
    "already verified, just",
    "should be fine",
    "no need to check",
];

/// Roles whose dispatch is adversarial: they get no memory summary and a bias-scanned prompt.
pub fn adversarial(role: Role) -> bool {
    matches!(
        role,
        Role::CodeReviewer | Role::FailureHunter | Role::PlanGapReviewer
    )
}

/// Roles whose prompt is scanned for bias phrases before dispatch: the adversarial ones, the
/// verifier and the investigator (cc10x's dispatch-prompt rules for read-only agents).
pub fn bias_scanned(role: Role) -> bool {
    adversarial(role) || matches!(role, Role::IntegrationVerifier | Role::BugInvestigator)
}

/// Removes every line holding a bias phrase; returns the prompt and the phrases found.
pub fn scan_bias(prompt: &str) -> (String, Vec<String>) {
    let mut found = Vec::new();
    let mut out = String::with_capacity(prompt.len());
    for line in prompt.lines() {
        let lower = line.to_lowercase().replace('\u{2019}', "'");
        let hits: Vec<&str> = BIAS_PHRASES
            .iter()
            .copied()
            .filter(|p| lower.contains(p))
            .collect();
        if hits.is_empty() {
            out.push_str(line);
        } else {
            found.extend(hits.iter().map(|h| h.to_string()));
            out.push_str("(a line that pre-judged your verdict was removed; form your own view from the code)");
        }
        out.push('\n');
    }
    (out, found)
}

/// What the scaffold is built from.
pub struct Scaffold<'a> {
    pub wf: &'a str,
    pub artifact_path: &'a Path,
    pub task: &'a Task,
    pub role: Role,
    pub request: &'a str,
    pub plan_file: Option<&'a str>,
    pub memory_summary: Option<&'a str>,
    pub patterns: Option<&'a str>,
    pub guidance: Option<&'a str>,
    /// For the verifier after a review: the findings the reviewers raised.
    pub previous_findings: Option<&'a str>,
    /// For a re-dispatch after a refused output: what was wrong with the last one.
    pub last_problem: Option<&'a str>,
    /// After a research round: where its web and GitHub files are (`Unavailable` when none).
    pub research_files: Option<&'a str>,
    /// After a research round: how each backend did and the overall quality.
    pub research_quality: Option<&'a str>,
    /// The phase's recorded base (`results.git_base_sha`): what the roles that read the change
    /// diff against; `unavailable` when git could not record one.
    pub base: Option<&'a str>,
    /// The project's domain language (its glossary files), when it has them.
    pub domain: Option<&'a str>,
    /// The design the planner plans from (`design_file`), for the planner only.
    pub design_file: Option<&'a str>,
    /// The Doubt Pass's objections (`results.doubt_pass.file`), for the plan's reviewer and
    /// the planner.
    pub doubts: Option<&'a str>,
    /// A snapshot of the tree at this dispatch: the change is `base`..`head`.
    pub head: Option<&'a str>,
    /// The files the change touches (`git diff --name-status base head`).
    pub changed_files: Option<&'a str>,
    /// Of those, the files outside the planned phase's `files` (one per line), when any.
    pub outside_scope: Option<&'a str>,
    /// A planned BUILD's phase-local hand-off: the current phase (and the intent contract).
    pub phase: Option<&'a str>,
    /// For the verifier: the clean baseline (which tests failed before the build).
    pub baseline: Option<&'a str>,
    /// `patterns.md ## Project SKILL_HINTS`, when it lists any.
    pub skill_hints: Option<&'a str>,
    /// What governs where standing instructions disagree (the skill precedence gate), when more
    /// than one source is in force.
    pub precedence: Option<&'a str>,
}

/// The base recorded when git could not give one.
pub const UNAVAILABLE_BASE: &str = "unavailable";

/// The files the work stands on, as the role needs them: the design (brainstormer, planner),
/// a Doubt Pass's objections (the plan's reviewer, the planner), the research after a round, and
/// for the plan's reviewer all of them as its approved context.
fn context_files(s: &Scaffold<'_>, p: &mut String) {
    match (s.design_file, s.role) {
        (Some(d), Role::Planner) => p.push_str(&format!(
            "## Design File\n{d}: read it first and plan from it (expand it; do not start over).\n\n"
        )),
        (Some(d), Role::Brainstormer) => p.push_str(&format!(
            "## Design File\n{d}: an earlier design of this work; build on it (expand it; do not start over).\n\n"
        )),
        _ => {}
    }
    if let (Some(d), Role::PlanGapReviewer | Role::Planner) = (s.doubts, s.role) {
        p.push_str(&format!(
            "## Doubt Pass\n{d}: objections raised against the plan's key decision before this review. Weigh each: one the plan does not answer is a finding (blocking when building the plan as written would go wrong).\n\n"
        ));
    }
    if s.role == Role::PlanGapReviewer {
        // What the plan was made from, approved: its design and research files.
        let mut files: Vec<String> = s
            .design_file
            .map(|d| format!("Design: {d}"))
            .into_iter()
            .collect();
        for line in s.research_files.unwrap_or_default().lines() {
            files.push(format!("Research {}", line.trim()));
        }
        if !files.is_empty() {
            p.push_str("## Approved Context Files\n");
            p.push_str(&files.join("\n"));
            p.push_str("\n\n");
        }
    } else if let Some(r) = s.research_files {
        p.push_str("## Research Files\n");
        p.push_str(r.trim());
        p.push_str("\n\n");
        if let Some(q) = s.research_quality {
            p.push_str("## Research Quality\n");
            p.push_str(q.trim());
            p.push_str("\n\n");
        }
    }
}

/// The prompt of one dispatch, in seed 001's scaffold order.
pub fn scaffold(s: &Scaffold<'_>) -> String {
    let t = s.task;
    let mut p = String::new();
    p.push_str("## Task Context\n");
    p.push_str(&format!("- Task ID: {}\n", t.id));
    p.push_str(&format!("- Parent Workflow ID: {}\n", s.wf));
    p.push_str(&format!(
        "- Task Phase: {}\n",
        t.phase.as_deref().unwrap_or("N/A")
    ));
    p.push_str(&format!("- Plan File: {}\n", s.plan_file.unwrap_or("None")));
    p.push_str(&format!("- Workflow Scope: wf:{}\n", s.wf));
    p.push_str(&format!(
        "- Workflow Artifact: {}\n\n",
        s.artifact_path.display()
    ));
    // The plan's reviewer judges the plan against what was asked, not against the plan.
    p.push_str(if s.role == Role::PlanGapReviewer {
        "## Original User Request\n"
    } else {
        "## User Request\n"
    });
    p.push_str(s.request.trim());
    p.push_str("\n\n## Requirements\n");
    if t.kind == Some(TaskKind::Remfix) {
        p.push_str(&format!(
            "Remediation (scope {}): {}\nFix what the findings name, prove the fix with a test, and report the covering test, its command and its output in your contract's SCENARIOS.\nBefore changing code, restate each finding in one line and confirm in the code that it holds. A finding you can prove false with a command may be disputed instead of applied: write `FINDING_DISPUTED: <the finding>`, `VERIFY_COMMAND: <the command>` and `VERIFY_OUTPUT: <what it printed>` lines; baton runs the command and the verifier rules. A dispute without a proving command is void and the finding stands.\n\n",
            t.scope.as_deref().unwrap_or("ALL_ISSUES"),
            t.reason.as_deref().unwrap_or("fix the findings")
        ));
    } else {
        match t.reason.as_deref().filter(|r| *r != "N/A") {
            Some(r) => p.push_str(&format!("{r}\n\n")),
            None => p.push_str("See plan/design files, or the request above.\n\n"),
        }
    }
    if let Some(phase) = s.phase {
        p.push_str(phase.trim_end());
        p.push_str("\n\n");
    }
    if !adversarial(s.role) {
        if let Some(m) = s.memory_summary.filter(|m| !m.trim().is_empty()) {
            p.push_str("## Memory Summary\n");
            p.push_str(m.trim());
            p.push_str("\n\n");
        }
    }
    if let Some(pat) = s.patterns.filter(|m| !m.trim().is_empty()) {
        p.push_str("## Project Patterns\n");
        p.push_str(pat.trim());
        p.push_str("\n\n");
    }
    if let Some(d) = s.domain.filter(|d| !d.trim().is_empty()) {
        p.push_str("## Domain Context\n");
        p.push_str(d.trim());
        p.push_str("\n\n");
    }
    p.push_str("## SKILL_HINTS\n");
    p.push_str(
        s.skill_hints
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .unwrap_or("None"),
    );
    p.push_str("\n\n");
    if let Some(pr) = s.precedence {
        p.push_str(pr);
    }
    context_files(s, &mut p);
    match s.base.filter(|_| reads_change(s.role)) {
        Some(UNAVAILABLE_BASE) => p.push_str(
            "## Base\nNo base was recorded for this phase (git could not be read): review the working tree's changes (`git diff HEAD`, and `git status --porcelain` for new files), and say in your report that no base was available.\n\n",
        ),
        Some(sha) => match s.head.filter(|h| *h != UNAVAILABLE_BASE) {
            Some(head) => {
                let mut files = match s.changed_files.map(str::trim) {
                    Some("") => "\nIt changes no file.".to_string(),
                    Some(list) => format!("\nThe files it changes:\n```\n{list}\n```"),
                    None => String::new(),
                };
                if let Some(out) = s.outside_scope.map(str::trim).filter(|o| !o.is_empty()) {
                    files.push_str(&format!(
                        "\nOutside the phase's planned files (say whether each belongs to the phase's objective, or is a finding):\n```\n{out}\n```"
                    ));
                }
                p.push_str(&format!(
                    "## Base\nThis phase began at `{sha}` and the tree as it is now is `{head}` (two snapshots of the whole tree, new files included; ignored files and `.baton` left out): its change is exactly `git diff {sha} {head}`.{files}\nReview that change, not what was in the tree before it (files the user had, or earlier phases' work).\n\n"
                ))
            }
            None => p.push_str(&format!(
                "## Base\nThis phase began at `{sha}`: its change is `git diff {sha}` (tracked files, committed or not) and the new files `git status --porcelain` lists as untracked. Review that change, not what was in the tree before it.\n\n"
            )),
        },
        None => {}
    }
    if let Some(b) = s.baseline {
        p.push_str(b.trim_end());
        p.push_str("\n\n");
    }
    if let Some(f) = s.previous_findings.filter(|f| !f.trim().is_empty()) {
        // A re-plan answers the fresh review's findings (seed 001:349).
        p.push_str(if s.role == Role::Planner {
            "## Planning Review Findings\n"
        } else {
            "## Previous Agent Findings\n"
        });
        p.push_str(f.trim());
        p.push_str("\n\n");
    }
    if let Some(g) = s.guidance.filter(|g| !g.trim().is_empty()) {
        p.push_str("## Pre-Answered Requirements\nThe user answered: ");
        p.push_str(g.trim());
        p.push_str("\n\n");
    }
    if let Some(problem) = s.last_problem {
        p.push_str("## Your Previous Output Was Refused\n");
        p.push_str(problem.trim());
        p.push_str("\n\n");
    }
    p.push_str(&format!(
        "End your answer with the `{}` contract your role instructions describe; only the contract counts.\n",
        s.role.name()
    ));
    p
}

/// What one dispatch came back with.
#[derive(Debug, Clone)]
pub struct Dispatched {
    pub output: TaskOutput,
    pub usage: Usage,
    /// `None`: the route has no price (or the backend reports none).
    pub cost_usd: Option<f64>,
    pub route: String,
    pub backend: &'static str,
    pub duration_seconds: f64,
    pub exit_code: Option<i32>,
    /// The agent's own session id, when its stream named it (`baton agent` children, Claude
    /// Code): `baton sessions` and `--resume` know it.
    pub session_id: Option<String>,
}

/// One role agent to launch.
pub struct Launch<'a> {
    /// The workflow id.
    pub wf: &'a str,
    pub spec: &'a RoleSpec,
    pub class: ModelClass,
    pub task: &'a Task,
    /// The dispatch number of the task's phase (record and replay keys).
    pub attempt: u32,
    pub prompt: String,
    /// Where the agent works: the workflow's worktree, else the project.
    pub cwd: &'a Path,
    /// Where frozen role files go.
    pub roles_dir: &'a Path,
    pub cancel: &'a CancellationToken,
}

/// A verifier's passing scenario command, to run again where the agent worked.
pub struct Recheck<'a> {
    pub command: &'a str,
    pub cwd: &'a Path,
    /// The verifier's role: its sandbox applies.
    pub spec: &'a RoleSpec,
    pub timeout: std::time::Duration,
    pub cancel: &'a CancellationToken,
    /// Whether it may reach the network (a dependency install).
    pub network: bool,
    /// `false`: unconfined (the user's own `workflow.install`).
    pub confined: bool,
}

/// How the runner reaches outside its process.
pub trait Launcher: Send + Sync {
    /// Runs one role agent to its end.
    fn launch<'a>(
        &'a self,
        env: &'a RunEnv,
        launch: Launch<'a>,
    ) -> BoxFuture<'a, Result<Dispatched, ExecError>>;

    /// Runs a scenario command again; `None` when cancelled.
    fn recheck<'a>(
        &'a self,
        env: &'a RunEnv,
        check: Recheck<'a>,
    ) -> BoxFuture<'a, Option<HostCheck>>;
}

/// The real launcher: role agents through the executor, scenario commands through the guarded
/// command runner under the verifier role's sandbox with provider keys hidden.
pub struct ExecLauncher;

impl Launcher for ExecLauncher {
    fn launch<'a>(
        &'a self,
        env: &'a RunEnv,
        l: Launch<'a>,
    ) -> BoxFuture<'a, Result<Dispatched, ExecError>> {
        Box::pin(async move { run(env, l, &|_pid| {}).await })
    }

    fn recheck<'a>(&'a self, env: &'a RunEnv, c: Recheck<'a>) -> BoxFuture<'a, Option<HostCheck>> {
        Box::pin(async move {
            let config = &env.delegate.config;
            let mode =
                baton_sandbox::Policy::choose_mode(None, c.spec.meta.sandbox, config.sandbox.mode);
            let mut policy = baton_sandbox::Policy::from_config(config, mode, c.cwd);
            if c.network {
                // An install: the network, and the package managers' caches under HOME.
                policy.network = true;
                if let Some(home) = std::env::var_os("HOME").map(PathBuf::from) {
                    for d in [".cargo", ".npm", ".cache", ".local/share/pnpm", "go/pkg"] {
                        policy.writable_roots.push(home.join(d));
                    }
                }
            }
            let rules = baton_exec::guarded::CommandRules {
                env_filter: baton_tool::EnvFilter::for_config(config),
                sandbox: c.confined.then_some(policy),
            };
            let command = baton_exec::guarded::ValidationCommand {
                command: "sh".into(),
                args: vec!["-c".into(), c.command.to_string()],
            };
            let result = baton_exec::guarded::run_validation(
                std::slice::from_ref(&command),
                c.cwd,
                &[],
                &rules,
                c.timeout,
                c.cancel,
            )
            .await;
            let r = match result {
                baton_exec::guarded::Validation::Passed(mut r)
                | baton_exec::guarded::Validation::Failed(mut r) => r.pop(),
                baton_exec::guarded::Validation::Cancelled => None,
            }?;
            Some(HostCheck {
                command: c.command.to_string(),
                ok: r.ok,
                exit_code: r.exit_code,
                error: r.error,
                output: r.output,
                ..HostCheck::default()
            })
        })
    }
}

/// Runs one role agent for `task` with `prompt`: the route of `class` (none when replaying),
/// the frozen role file for baton children, the record or replay cassette by phase and attempt.
pub async fn run(
    env: &RunEnv,
    launch: Launch<'_>,
    on_start: &(dyn Fn(u32) + Send + Sync),
) -> Result<Dispatched, ExecError> {
    let Launch {
        wf,
        spec,
        class,
        task,
        attempt,
        prompt,
        cwd,
        roles_dir,
        cancel,
    } = launch;
    let d = &env.delegate;
    let backend = backend_of(d, spec);
    let phase = task.phase.clone().unwrap_or_else(|| "task".into());
    let cassette = |dir: &PathBuf| dir.join(format!("{phase}-{attempt}.json"));
    let mut extra_env = vec![
        ("BATON_WORKFLOW_ID".to_string(), wf.to_string()),
        ("BATON_WORKFLOW_TASK".to_string(), task.id.clone()),
        ("BATON_WORKFLOW_PHASE".to_string(), phase.clone()),
        (
            "BATON_TASK_NAME".to_string(),
            format!("{}-{}", task.id, phase),
        ),
    ];
    let replaying = backend == BackendKind::Baton && env.replay.is_some();
    if backend == BackendKind::Baton {
        if let Some(dir) = &env.replay {
            let file = cassette(dir);
            if !file.is_file() {
                return Err(ExecError::new(
                    ExecErrorCode::Prepare,
                    format!(
                        "--replay {}: the recording holds no {} (dispatch {attempt} of phase {phase}); the workflow asked for a request it does not hold — record it again with --record",
                        dir.display(),
                        file.display()
                    ),
                ));
            }
            extra_env.push(("BATON_REPLAY_FILE".into(), file.display().to_string()));
        } else if let Some(dir) = &env.record {
            extra_env.push((
                "BATON_RECORD_FILE".into(),
                cassette(dir).display().to_string(),
            ));
        }
    }
    let route = if replaying {
        ChildRoute::default()
    } else {
        let choice = RouteChoice {
            model_class: Some(class),
            ..RouteChoice::default()
        };
        child_route(d, backend, &choice, spec)?
    };
    // The model the child runs, to price its tokens when it does not say what it cost.
    let priced_model = route.model.clone();
    let route_label = match (&route.model, backend) {
        (Some(m), _) => match route.thinking {
            Some(t) => format!("{m}:{t}"),
            None => m.clone(),
        },
        (None, BackendKind::Command) => "command".into(),
        (None, _) if replaying => "replay".into(),
        (None, b) => format!("{} default", b.as_str()),
    };
    let role_file = match backend {
        BackendKind::Baton => Some(write_frozen_role(roles_dir, attempt as usize, spec)?),
        _ => None,
    };
    let budget = OutputBudget::new(d.output_cap);
    let started = Instant::now();
    let prepare = move || {
        let launch = plan_launch(
            d,
            LaunchPlan {
                role: spec,
                backend,
                route,
                task: prompt,
                cwd: cwd.to_path_buf(),
                role_file,
                extra_env,
            },
        );
        async move { launch }
    };
    let mut on_activity = |a: baton_exec::Activity| {
        if let baton_exec::Activity::Started { pid, .. } = a {
            on_start(pid);
        }
    };
    let result = env
        .executor
        .run(prepare, d.limits, &budget, cancel, &mut on_activity)
        .await?;
    // What the child said it cost (Claude Code), else its tokens at the route's price.
    let cost_usd = result.cost_usd.or_else(|| {
        baton_model::routes::cost_of_label(
            &d.config.prices,
            priced_model.as_deref()?,
            &result.usage,
        )
    });
    let error = match result.status {
        ChildStatus::Success => None,
        ChildStatus::Failure => Some(result.error_message.clone().unwrap_or_else(|| {
            format!(
                "the agent failed (exit {}): {}",
                result
                    .exit_code
                    .map_or("none".to_string(), |c| c.to_string()),
                result.stderr.trim().chars().take(400).collect::<String>()
            )
        })),
    };
    Ok(Dispatched {
        output: TaskOutput {
            role: spec.name().to_string(),
            text: result.output.clone(),
            error,
            ..TaskOutput::default()
        },
        usage: result.usage,
        cost_usd,
        route: route_label,
        backend: backend.as_str(),
        duration_seconds: started.elapsed().as_secs_f64(),
        exit_code: result.exit_code,
        session_id: result.session_id.clone(),
    })
}

/// The files cc10x takes the project's domain language from, at the project's root.
const DOMAIN_FILES: &[&str] = &[
    "UBIQUITOUS_LANGUAGE.md",
    "DOMAIN_GLOSSARY.md",
    "project-context.md",
];

/// The project's domain context (cc10x's `## Domain Context`): `UBIQUITOUS_LANGUAGE.md`,
/// `DOMAIN_GLOSSARY.md`, `docs/domain/*.md` and `project-context.md` at `root`, each under its
/// name, together at most `cap` characters; `None` when it has none.
pub fn domain_context(root: &std::path::Path, cap: usize) -> Option<String> {
    let mut files: Vec<std::path::PathBuf> = DOMAIN_FILES.iter().map(|f| root.join(f)).collect();
    if let Ok(dir) = std::fs::read_dir(root.join("docs/domain")) {
        let mut more: Vec<_> = dir
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "md"))
            .collect();
        more.sort();
        files.extend(more);
    }
    let mut out = String::new();
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        let name = f.strip_prefix(root).unwrap_or(&f).display().to_string();
        out.push_str(&format!("### {name}\n{}\n\n", text.trim()));
    }
    let out: String = out.chars().take(cap).collect();
    (!out.trim().is_empty()).then_some(out)
}

/// Whether `role` reads the change a phase made (its prompt names the phase's base).
pub fn reads_change(role: Role) -> bool {
    matches!(
        role,
        Role::CodeReviewer | Role::FailureHunter | Role::IntegrationVerifier | Role::DocSyncer
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bias_lines_are_removed_and_named() {
        let (out, found) =
            scan_bias("## Requirements\nThe plan chose X, so do not flag Y.\nCheck the diff.\n");
        assert_eq!(found, ["do not flag", "the plan chose"]);
        assert!(!out.to_lowercase().contains("do not flag"));
        assert!(out.contains("Check the diff."));
        let (clean, none) = scan_bias("Review the change.\n");
        assert!(none.is_empty());
        assert_eq!(clean, "Review the change.\n");
        // All eight of cc10x's blocklist, in any case.
        let (_, all) = scan_bias(
            "Do not flag a\nDon't treat b as a defect\nDon't worry about c\nAt most Minor\nthe plan chose d\nAlready verified, just look\nshould be fine\nNo need to check e\n",
        );
        assert_eq!(all, BIAS_PHRASES);
        for role in [
            Role::CodeReviewer,
            Role::FailureHunter,
            Role::PlanGapReviewer,
            Role::IntegrationVerifier,
            Role::BugInvestigator,
        ] {
            assert!(bias_scanned(role), "{role:?}");
        }
        assert!(!bias_scanned(Role::ComponentBuilder));
    }

    #[test]
    fn adversarial_scaffolds_leave_out_the_memory_summary() {
        let task = crate::run::graph::initial(
            crate::route::WorkflowKind::Build,
            false,
            "wf-20261203T150000Z-0a1b2c3d",
        )[1]
        .clone();
        let s = |role| Scaffold {
            wf: "wf-20261203T150000Z-0a1b2c3d",
            artifact_path: Path::new(".baton/state/workflows/x.json"),
            task: &task,
            role,
            request: "add a flag",
            plan_file: None,
            memory_summary: Some("we decided to cache"),
            patterns: Some("- tests live in tests/"),
            guidance: None,
            doubts: None,
            previous_findings: None,
            research_quality: None,
            last_problem: None,
            research_files: None,
            base: Some("0123abcd"),
            head: None,
            changed_files: None,
            outside_scope: None,
            design_file: None,
            domain: None,
            phase: None,
            baseline: None,
            skill_hints: None,
            precedence: None,
        };
        let review = scaffold(&s(Role::CodeReviewer));
        assert!(review.contains(
            "## Base\nThis phase began at `0123abcd`: its change is `git diff 0123abcd`"
        ));
        assert!(!review.contains("Memory Summary"));
        assert!(review.contains("## Project Patterns"));
        assert!(review.starts_with("## Task Context\n- Task ID: t2\n"));
        let build = scaffold(&s(Role::ComponentBuilder));
        assert!(build.contains("## Memory Summary\nwe decided to cache"));
        assert!(!build.contains("## Base"));
    }
}
