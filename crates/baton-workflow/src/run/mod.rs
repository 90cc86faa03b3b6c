//! `baton run`: a workflow driven to its end by the host.
//!
//! The loop: the engine ([`crate::engine::decide`]) decides the next action from the artifact,
//! the tasks and what the last dispatched agents returned; the runner carries the action out —
//! it dispatches the tasks of that action (read-only ones in parallel, write ones one at a time),
//! parses each agent's contract, finalizes memory inline, or stops at a checkpoint — and records
//! every step as an event before it acts on it. A crash at any point resumes from the log: a task
//! whose completion was recorded is never dispatched again, one that was started but not
//! recorded is dispatched again.

pub mod agent;
mod answers;
mod baseline;
mod decide;
mod dispatch;
mod dispute;
mod error;
pub mod fan_out;
mod finish;
mod finishing;
pub mod gate;
pub mod graph;
mod plan;
mod preflight;
mod prompt;
mod recheck;
mod routing;
mod scope;
mod solution;
mod tree;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use baton_exec::delegate::DelegateEnv;
use baton_exec::executor::Executor;
use baton_exec::ExecErrorCode;
use baton_protocol::role::RoleSpec;
use tokio_util::sync::CancellationToken;

use crate::artifact::{
    Artifact, BuildScope, NormalizedPhase, ProofStatus, Task, TaskKind, TaskStatus,
};
use crate::contract::{self, Outcome as ContractOutcome, Role};
use crate::dispatch::{role_for_task, tier_for, TierConfig};
use crate::engine::{decide, Action, Change, Inputs};
use crate::event::Note;
use crate::event::{TaskCreated, TaskCreatedDetails};
use crate::memory::{Finalization, MemoryDir, MemoryFile};
use crate::outputs::{self, AgentOutputs, ReadOnlyReport};
use crate::route::WorkflowKind;
pub use crate::state;
use crate::state::{Gate, Record, RunState, WorkflowState, WorktreeOffer};
use crate::store::{EventBody, NewEvent, OpenWorkflow, WorkflowStore};
pub use agent::{ExecLauncher, Launch, Launcher, Recheck};
pub use error::RunError;
use gate::Answer;
pub use routing::{tiebreak, TIEBREAK_TIMEOUT};
use tree::{changed_files, tree_base, tree_digest};

/// A line for a person watching (`baton run` prints it on stderr).
pub type Observer = Arc<dyn Fn(&str) + Send + Sync>;

/// A subscriber to the workflow's events: each one as it is recorded (fsynced), typed — the
/// same record `baton events` reads from the log. The MCP server's progress is built from them.
pub type EventObserver = Arc<dyn Fn(&crate::event::WorkflowEvent) + Send + Sync>;

/// Where and with what workflows run.
#[derive(Clone)]
pub struct RunEnv {
    /// Config, roles, project folder, state folder, limits, output cap.
    pub delegate: DelegateEnv,
    pub executor: Arc<Executor>,
    /// `--record DIR`: every baton child's model traffic goes to `DIR/<phase>-<attempt>.json`.
    pub record: Option<PathBuf>,
    /// `--replay DIR`: baton children play `DIR/<phase>-<attempt>.json` instead of a model.
    pub replay: Option<PathBuf>,
    /// Test hook (`BATON_WORKFLOW_CRASH_AT=N`): SIGKILL this process right after its N-th event.
    pub crash_after: Option<u64>,
    pub observer: Option<Observer>,
    /// Gets every event of the workflow as it is recorded.
    pub events: Option<EventObserver>,
    /// Return (as interrupted) after this many dispatch batches: one step of a workflow a
    /// Temporal worker node drives (`baton run --steps N`, hidden).
    pub max_batches: Option<u32>,
}

/// What `baton run` starts.
#[derive(Debug, Clone)]
pub struct StartOptions {
    pub request: String,
    pub kind: WorkflowKind,
    /// BUILD: the reduced builder → verifier → memory graph instead of the full one.
    pub trivial: bool,
    pub budget_usd: Option<f64>,
    pub budget_tokens: Option<u64>,
    /// BUILD: work in an isolated worktree on branch `baton/<id>` (`Some(true)`), in place
    /// (`Some(false)`), or as `AUTO_PROCEED` says (`None`: taken under it, declined otherwise).
    pub isolate: Option<bool>,
    /// BUILD: execute this plan file's phases in order (`baton run --plan`); checked by the plan
    /// trust gate before anything is recorded.
    pub plan: Option<PathBuf>,
    /// BUILD without `trivial` or a plan: assess the scope from the request (cc10x build 4) —
    /// clearly trivial work takes the reduced graph, clearly broad work is asked "plan first or
    /// build directly" before anything is dispatched.
    pub assess_scope: bool,
    /// The record's id instead of a new one (a workflow started on Temporal is recorded under
    /// the id its Temporal workflow has); refused when it is not a valid id or already taken.
    pub id: Option<String>,
    /// BUILD without `plan` or `trivial`: build the plan `activeContext.md ## References` names
    /// (`- Plan: FILE`, written by the PLAN that saved it) — cc10x build preparation 1-2, 5.
    /// A named file that is missing is asked about: re-plan first, or build without it.
    pub referenced_plan: bool,
    /// DEBUG: the failures' groups, each with the files its own scoped investigator owns
    /// (`baton run --debug-group`); groups sharing a file are merged. Empty: one investigator.
    pub fan_out: Vec<fan_out::Lane>,
}

/// Where a workflow stands when `baton run` or `baton resume` returns. The one type for it: its
/// serde form is the document `--json` prints and MCP answers with (`{"type":
/// "workflow.<outcome>", "id", "brief" | "checkpoint"}`), and what a Temporal step reads back.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "type")]
pub enum Outcome {
    #[serde(rename = "workflow.completed")]
    Completed { id: String, brief: String },
    #[serde(rename = "workflow.checkpoint")]
    Checkpoint {
        id: String,
        checkpoint: state::Checkpoint,
    },
    #[serde(rename = "workflow.failed")]
    Failed { id: String, brief: String },
    #[serde(rename = "workflow.stopped")]
    Stopped { id: String, brief: String },
    #[serde(rename = "workflow.interrupted")]
    Interrupted { id: String },
}

/// Where a workflow stands if it is not running: completed, stopped or failed with its brief,
/// or waiting at its checkpoint. `None` while it runs (or was interrupted). `baton run`, `baton
/// resume` and the workflow resource of `baton mcp` read it here.
pub fn outcome(id: &str, r: &Record) -> Option<Outcome> {
    let v = &r.state;
    let id = id.to_string();
    match v.state {
        RunState::Completed => {
            let brief = v.host.brief.clone().unwrap_or_default();
            Some(Outcome::Completed { id, brief })
        }
        RunState::Failed => Some(Outcome::Failed {
            id,
            brief: gate::brief_of(r, "workflow stopped on a failure"),
        }),
        RunState::Stopped => Some(Outcome::Stopped {
            id,
            brief: gate::brief_of(r, "workflow stopped by the user"),
        }),
        RunState::Checkpoint => {
            let checkpoint = v
                .checkpoint
                .clone()
                .unwrap_or_else(|| gate::checkpoint(Gate::Failure, "", String::new()));
            Some(Outcome::Checkpoint { id, checkpoint })
        }
        RunState::Running => None,
    }
}

/// Starts a workflow and drives it until it completes, stops or waits at a checkpoint.
pub async fn start(
    env: &RunEnv,
    opts: &StartOptions,
    cancel: &CancellationToken,
) -> Result<Outcome, RunError> {
    start_with(env, &ExecLauncher, opts, cancel).await
}

pub use plan::trust_named_plan;
use plan::{referenced_plan, trusted_plan, MissingPlan};

/// The status-history entry of a BUILD's scope assessment: how it was judged and on what.
fn scope_assessed(s: &crate::route::scope::Scope) -> crate::artifact::HistoryEntry {
    use crate::route::scope::Scope;
    let (how, signals) = match s {
        Scope::Trivial(x) => ("trivial", x.join(", ")),
        Scope::Broad(x) => ("broad: plan first is offered", x.join(", ")),
        Scope::Standard => ("standard", "no clear signal".into()),
    };
    crate::artifact::HistoryEntry::new("scope_assessed", None, &format!("{how} ({signals})"))
}

/// The `task_created` event of a new workflow: its tasks, and what memory healing did.
fn tasks_created(v: &WorkflowState, report: &crate::memory::EnsureReport) -> EventBody {
    let healed: Vec<String> = report
        .healed
        .iter()
        .map(|(f, h)| format!("{}: {}", f.file_name(), h.join(", ")))
        .collect();
    let healed = match healed.is_empty() {
        true => String::new(),
        false => format!("; memory healed ({})", healed.join("; ")),
    };
    EventBody::TaskCreated(TaskCreated {
        reason: Some(format!("{} tasks{healed}", v.tasks.len())),
        details: Some(TaskCreatedDetails {
            tasks: v.tasks.iter().map(|t| t.id.clone()).collect(),
            ..TaskCreatedDetails::default()
        }),
    })
}

/// [`start`] launching role agents through `launcher`.
pub async fn start_with(
    env: &RunEnv,
    launcher: &dyn Launcher,
    opts: &StartOptions,
    cancel: &CancellationToken,
) -> Result<Outcome, RunError> {
    if opts.kind == WorkflowKind::Orient {
        return Err(RunError::OrientHasNoRecord);
    }
    check_tiers(env)?;
    let root = project_root(env);
    let (lanes, merged) = fan_out::prepare(opts, &root)?;
    let (referenced, missing_referenced) = referenced_plan(opts, &root)?;
    let (plan, missing_given) = trusted_plan(env, opts, referenced.as_deref(), &root)?;
    let missing_plan = missing_given.or(missing_referenced.map(|name| MissingPlan {
        name,
        named_by: "activeContext.md ## References",
    }));
    let store = WorkflowStore::new(env.delegate.state.clone());
    let (first_question, scope) = first_question(opts, plan.is_some(), missing_plan);
    // The working tree is locked before anything is written, unless the BUILD is sure to work in
    // a worktree of its own; released below when a worktree is made after all.
    let trivial = opts.kind == WorkflowKind::Build
        && (opts.trivial || matches!(scope, Some(crate::route::scope::Scope::Trivial(_))));
    let isolated = opts.kind == WorkflowKind::Build && !trivial && opts.isolate == Some(true);
    let mut tree_lock = match isolated {
        true => None,
        false => Some(store.claim_tree("a workflow starting")?),
    };
    let memory = MemoryDir::new(&root);
    let report = memory
        .ensure()
        .map_err(|e| RunError::Memory(e.to_string()))?;
    let settings = memory
        .session_settings()
        .map_err(|e| RunError::Memory(e.to_string()))?;
    let wf = match &opts.id {
        Some(id) => store.create_as(id, opts.kind, &opts.request)?,
        None => store.create(opts.kind, &opts.request)?,
    };
    let id = wf.id().to_string();
    start_marker(&memory, opts.kind, &id)?;
    if let Some(lock) = &mut tree_lock {
        lock.note_owner(&format!("workflow {id}"));
    }
    let runner = Runner::new(env, launcher, wf, cancel)?;
    if let Some(o) = &env.events {
        // The record's first event was written by the store.
        store.events(&id)?.iter().for_each(|e| o(e));
    }
    let mut r = runner.record();
    if opts.kind == WorkflowKind::Build {
        first_phase(&mut r.artifact, trivial);
    }
    if let Some((p, key)) = &plan {
        plan::apply(&mut r.artifact, p, key);
    }
    // cc10x PLAN preparation 1: the design memory names is restored (when it is there).
    if opts.kind == WorkflowKind::Plan {
        r.artifact.design_file = memory
            .reference("Design")
            .map_err(|e| RunError::Memory(e.to_string()))?
            .filter(|d| root.join(d).is_file());
    }
    let a = &mut r.artifact;
    a.traceability.requirements = match a.intent.acceptance_criteria.is_empty() {
        true => vec![opts.request.clone()],
        false => a.intent.acceptance_criteria.clone(),
    };
    let (normalized, status) = (a.normalized_phases.clone(), a.phase_status.clone());
    a.traceability.sync_phases(&normalized, &status);
    let v = &mut r.state;
    v.tasks = graph::initial(opts.kind, trivial, &id);
    if opts.kind == WorkflowKind::Debug {
        fan_out::debug_graph(&mut v.tasks, &id, &lanes, &opts.request);
        merged.iter().for_each(|m| runner.say(m));
    }
    v.host.doc_sync_skipped = settings.skips_doc_sync();
    if v.host.doc_sync_skipped {
        graph::skip_doc_sync(&mut v.tasks);
    }
    if let (Some((_, key)), Some((_, phase))) = (&plan, plan::current(&r.artifact)) {
        graph::planned(&mut v.tasks, key, &plan::builder_reason(phase));
    }
    v.host.auto_proceed = settings.auto_proceed;
    v.host.budget_usd = opts.budget_usd.or(env.delegate.config.workflow.budget_usd);
    v.host.budget_tokens = opts
        .budget_tokens
        .or(env.delegate.config.workflow.budget_tokens);
    if let Some(s) = &scope {
        r.artifact.status_history.push(scope_assessed(s));
    }
    let mut worktree_error = None;
    // Broad work is asked first: the worktree offer waits for `build directly`.
    v.host.isolate_asked = opts.isolate;
    if first_question.is_some() {
        v.host.worktree_offer = Some(WorktreeOffer::Skipped(
            "waiting for the plan-first question".into(),
        ));
    } else if opts.kind == WorkflowKind::Build {
        let isolated = isolate_build(
            env,
            &root,
            &id,
            trivial,
            opts.isolate,
            settings.auto_proceed,
        );
        worktree_error = preflight::settle_workspace(isolated, &root, &mut r.artifact, v);
    }
    let mut tree_busy = None;
    if v.host.worktree.is_some() {
        tree_lock = None;
    } else if tree_lock.is_none() {
        // Asked for a worktree but working in place (inside a linked worktree, a fallback, an
        // error): the tree is locked now, or the workflow stops naming the one that holds it.
        match store.claim_tree(&format!("workflow {id}")) {
            Ok(lock) => tree_lock = Some(lock),
            Err(e) => tree_busy = Some(e.to_string()),
        }
    }
    let work = v
        .host
        .worktree
        .as_ref()
        .map_or(root.clone(), |w| w.path.clone());
    v.host.baseline = tree_digest(&work, true).await;
    let ev = tasks_created(v, &report);
    runner.commit(ev, r)?;
    runner.say_started(&id, scope.as_ref());
    if let (Some((_, key)), None) = (&plan, &opts.plan) {
        runner.say(&format!(
            "building the plan {key}: activeContext.md ## References names it (`--no-plan` builds the request alone)"
        ));
    }
    if let Some(e) = worktree_error {
        runner.fail(RunError::Worktree(e))?;
    } else if let Some(e) = tree_busy {
        runner.fail(RunError::TreeBusy(e))?;
    } else if let Some((gate, reason)) = first_question {
        runner.stop_at(gate, &reason).await?;
    }
    let outcome = runner.drive().await;
    drop(tree_lock);
    outcome
}

/// The question a new workflow asks before anything runs, if any, and a BUILD's scope as its
/// request's words say it: cc10x's Intent Readiness Gate (before PLAN or BUILD, a request of vague
/// words only), a plan memory names that is missing, or broad work (plan first?).
fn first_question(
    opts: &StartOptions,
    planned: bool,
    missing_plan: Option<MissingPlan>,
) -> (Option<(Gate, String)>, Option<crate::route::scope::Scope>) {
    use crate::route::scope::{self, Scope};
    let asks = opts.assess_scope && !planned;
    let unready = (asks && matches!(opts.kind, WorkflowKind::Build | WorkflowKind::Plan))
        .then(|| scope::unspecific(&opts.request))
        .flatten();
    if let Some(words) = unready {
        let why = format!(
            "\"{}\" names nothing a check could verify ({words}): not what should change, where, or how to tell it is done",
            opts.request.trim()
        );
        return (Some((Gate::IntentReadiness, why)), None);
    }
    if let Some(MissingPlan { name, named_by }) = missing_plan {
        let why = format!("The plan {name} that {named_by} names is missing");
        return (Some((Gate::MissingPlan, why)), None);
    }
    let assessed = (asks && opts.kind == WorkflowKind::Build && !opts.trivial)
        .then(|| scope::assess(&opts.request));
    let broad = match &assessed {
        Some(Scope::Broad(signals)) => Some((
            Gate::PlanFirst,
            format!(
                "This BUILD looks like more than one change ({})",
                signals.join(", ")
            ),
        )),
        _ => None,
    };
    (broad, assessed)
}

/// cc10x's marker rules: a BUILD, DEBUG or PLAN writes its start marker under
/// `activeContext.md ## Recent Changes` once its id exists.
fn start_marker(memory: &MemoryDir, kind: WorkflowKind, id: &str) -> Result<(), RunError> {
    let marker = match kind {
        WorkflowKind::Build => "BUILD-START",
        WorkflowKind::Debug => "DEBUG-RESET",
        WorkflowKind::Plan => "PLAN-START",
        _ => return Ok(()),
    };
    memory
        .append(
            MemoryFile::ActiveContext,
            "Recent Changes",
            &[format!("[{marker}: wf:{id}]")],
        )
        .map_err(|e| RunError::Memory(e.to_string()))
}

/// Continues a workflow: after a crash or an interruption, or with the answer to its checkpoint.
pub async fn resume(
    env: &RunEnv,
    id: &str,
    answer: Option<&str>,
    budget_usd: Option<f64>,
    budget_tokens: Option<u64>,
    cancel: &CancellationToken,
) -> Result<Outcome, RunError> {
    let how = Resume {
        answer,
        budget_usd,
        budget_tokens,
    };
    resume_with(env, &ExecLauncher, id, how, cancel).await
}

/// What a resume brings: the answer to the checkpoint, new budget limits.
#[derive(Debug, Clone, Copy, Default)]
pub struct Resume<'a> {
    pub answer: Option<&'a str>,
    pub budget_usd: Option<f64>,
    pub budget_tokens: Option<u64>,
}

/// [`resume`] launching role agents through `launcher`.
pub async fn resume_with(
    env: &RunEnv,
    launcher: &dyn Launcher,
    id: &str,
    how: Resume<'_>,
    cancel: &CancellationToken,
) -> Result<Outcome, RunError> {
    let Resume {
        answer,
        budget_usd,
        budget_tokens,
    } = how;
    check_tiers(env)?;
    let store = WorkflowStore::new(env.delegate.state.clone());
    let wf = store.open(id)?;
    let runner = Runner::new(env, launcher, wf, cancel)?;
    let mut r = runner.record();
    // Memory is loaded again before resuming (seed 001:40-54): a missing file is made from its
    // template, and the session settings are read as they are now (AUTO_PROCEED may have been
    // turned on or off since the workflow started).
    let memory = MemoryDir::new(&project_root(env));
    memory
        .ensure()
        .map_err(|e| RunError::Memory(e.to_string()))?;
    let settings = memory
        .session_settings()
        .map_err(|e| RunError::Memory(e.to_string()))?;
    r.state.host.auto_proceed = settings.auto_proceed;
    // A workflow that works in the project's tree holds the tree's lock while it goes on (taken
    // below, once it is clear that it goes on).
    let claim_tree = |v: &WorkflowState| match v.host.worktree {
        Some(_) => Ok(None),
        None => store.claim_tree(&format!("workflow {id}")).map(Some),
    };
    let tree_lock;
    if budget_usd.is_some() || budget_tokens.is_some() {
        let host = &mut r.state.host;
        host.budget_usd = budget_usd.or(host.budget_usd);
        host.budget_tokens = budget_tokens.or(host.budget_tokens);
    }
    match (r.state.state, answer) {
        (RunState::Completed | RunState::Stopped, _) => {
            return Err(RunError::NothingToResume {
                id: id.to_string(),
                state: r.state.state,
            })
        }
        (RunState::Checkpoint, None) => {
            let cp = r.state.checkpoint.clone();
            return Ok(Outcome::Checkpoint {
                id: id.to_string(),
                checkpoint: cp
                    .unwrap_or_else(|| gate::checkpoint(Gate::Failure, "", String::new())),
            });
        }
        (RunState::Failed, None) => return Err(RunError::AnswerNeeded { id: id.to_string() }),
        (RunState::Running, Some(_)) => return Err(RunError::NoQuestion { id: id.to_string() }),
        (RunState::Running, None) => {
            tree_lock = claim_tree(&r.state)?;
            let mut reason = "resumed".to_string();
            if r.state.tasks.is_empty() {
                // Killed between the record's first event and its task graph: nothing ran, so
                // the graph is made now, in place (the worktree offer is not made again).
                let kind = runner.kind();
                let trivial = r.artifact.build_scope == Some(BuildScope::Trivial);
                if kind == WorkflowKind::Build && r.artifact.phase_cursor.is_none() {
                    first_phase(&mut r.artifact, false);
                }
                r.state.tasks = graph::initial(kind, trivial, id);
                r.state.host.worktree_offer = Some(WorktreeOffer::Skipped(
                    "resumed before the graph was recorded".into(),
                ));
                reason = format!("resumed; {} tasks recorded", r.state.tasks.len());
            }
            // A worker node's step (`--steps`) goes on where the last one stopped: nothing
            // happened in between worth an event, so the record reads as the local engine's.
            let step = env.max_batches.is_some()
                && reason == "resumed"
                && budget_usd.is_none()
                && budget_tokens.is_none();
            if !step {
                runner.commit(EventBody::ArtifactUpdated(Note::because(reason)), r)?;
            }
        }
        (RunState::Checkpoint | RunState::Failed, Some(text)) => {
            let cp = r.state.checkpoint.clone().unwrap_or_else(|| {
                gate::checkpoint(
                    Gate::Failure,
                    r.state.host.failure.as_deref().unwrap_or("stopped"),
                    String::new(),
                )
            });
            let choice = gate::read_answer(&cp, text).map_err(RunError::BadAnswer)?;
            // Merging a worktree's branch changes the project's tree too.
            tree_lock = match choice {
                Answer::Finish("merge") => Some(store.claim_tree(&format!("workflow {id}"))?),
                _ => claim_tree(&r.state)?,
            };
            runner.answer(r, &cp, text, choice).await?;
        }
    }
    let outcome = runner.drive().await;
    drop(tree_lock);
    outcome
}

/// A BUILD's one phase, titled with the request (`trivial` or `standard` scope).
pub(super) fn first_phase(a: &mut Artifact, trivial: bool) {
    a.build_scope = Some(if trivial {
        BuildScope::Trivial
    } else {
        BuildScope::Standard
    });
    a.phase_cursor = Some("phase-1".into());
    a.normalized_phases = vec![NormalizedPhase::new("phase-1", a.user_request.as_deref())];
}

/// The worktree offer of a BUILD: skipped for trivial scope and inside a linked worktree; taken
/// when asked, or under `AUTO_PROCEED` when not asked. Returns the worktree and what the offer
/// came to.
fn isolate_build(
    env: &RunEnv,
    root: &Path,
    id: &str,
    trivial: bool,
    asked: Option<bool>,
    auto: bool,
) -> Result<(Option<baton_exec::worktree::ChildWorktree>, WorktreeOffer), String> {
    use baton_exec::worktree::{create_child_worktree, Isolated};
    if trivial {
        return Ok((None, WorktreeOffer::Skipped("trivial scope".into())));
    }
    let git = |arg: &str| {
        baton_git::Git::new(root)
            .run_output(["rev-parse", "--path-format=absolute", arg])
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    if let (Some(dir), Some(common)) = (git("--git-dir"), git("--git-common-dir")) {
        if dir != common {
            let why = "already in a linked worktree".into();
            return Ok((None, WorktreeOffer::Skipped(why)));
        }
    }
    match asked {
        Some(false) => return Ok((None, WorktreeOffer::Declined)),
        None if !auto => return Ok((None, WorktreeOffer::NotAsked)),
        Some(true) | None => {}
    }
    match create_child_worktree(root, &env.delegate.worktree_root, id) {
        Ok(Isolated::Worktree(wt)) => Ok((Some(wt), WorktreeOffer::Accepted)),
        Ok(Isolated::Fallback { reason, .. }) => Ok((None, WorktreeOffer::Skipped(reason))),
        Err(e) => Err(e.to_string()),
    }
}

/// Refuses a config that puts a gating role below its floor, before anything is written.
fn check_tiers(env: &RunEnv) -> Result<(), RunError> {
    let tiers = tier_config(env);
    for role in Role::ALL {
        if let Ok(spec) = baton_roles::find_role(&env.delegate.role_dirs, role.name()) {
            tier_for(&spec, &tiers).map_err(|e| RunError::Tier(e.to_string()))?;
        }
    }
    Ok(())
}

fn tier_config(env: &RunEnv) -> TierConfig {
    TierConfig {
        classes: env.delegate.config.workflow.tiers.clone(),
    }
}

fn project_root(env: &RunEnv) -> PathBuf {
    env.delegate
        .state
        .project_root()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| env.delegate.cwd.clone())
}

struct Runner<'a> {
    env: &'a RunEnv,
    launcher: &'a dyn Launcher,
    id: String,

    wf: Mutex<OpenWorkflow>,
    cancel: &'a CancellationToken,
    appended: AtomicU64,
    root: PathBuf,
}

impl<'a> Runner<'a> {
    pub(super) fn new(
        env: &'a RunEnv,
        launcher: &'a dyn Launcher,
        wf: OpenWorkflow,
        cancel: &'a CancellationToken,
    ) -> Result<Self, RunError> {
        Ok(Runner {
            id: wf.id().to_string(),
            env,
            launcher,
            wf: Mutex::new(wf),
            cancel,
            appended: AtomicU64::new(0),
            root: project_root(env),
        })
    }

    /// The workflow's type (a BUILD the user chose to plan first becomes a PLAN).
    pub(super) fn kind(&self) -> WorkflowKind {
        self.lock()
            .record()
            .artifact
            .workflow_type
            .unwrap_or(WorkflowKind::Build)
    }

    pub(super) fn say(&self, line: &str) {
        if let Some(o) = &self.env.observer {
            o(line);
        }
    }

    /// What `baton run` says once a workflow's record is started: its id, its scope, where it
    /// works.
    fn say_started(&self, id: &str, scope: Option<&crate::route::scope::Scope>) {
        use crate::route::scope::Scope;
        self.say(&format!("workflow {id} started"));
        match scope {
            Some(Scope::Trivial(s)) => self.say(&format!(
                "scope: trivial ({}): builder, then verifier (a scope increase escalates to the full graph)",
                s.join(", ")
            )),
            Some(Scope::Broad(s)) => self.say(&format!("scope: broad ({})", s.join(", "))),
            _ => {}
        }
        if let Some(wt) = &self.record().state.host.worktree {
            self.say(&format!(
                "working in worktree {} on branch {}",
                wt.path.display(),
                wt.branch
            ));
        }
    }

    /// Where the agents work: the workflow's worktree, else the project.
    pub(super) fn work_dir(&self, v: &WorkflowState) -> PathBuf {
        v.host
            .worktree
            .as_ref()
            .map_or_else(|| self.root.clone(), |w| w.path.clone())
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, OpenWorkflow> {
        match self.wf.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// The workflow's record as it stands.
    pub(super) fn record(&self) -> Record {
        self.lock().record().clone()
    }

    /// Records `ev` with the change from the current record to `new` as its delta.
    pub(super) fn commit(&self, ev: impl Into<NewEvent>, new: Record) -> Result<(), RunError> {
        let recorded = self.lock().commit(ev.into(), &new)?;
        if let Some(o) = &self.env.events {
            o(&recorded);
        }
        let n = self.appended.fetch_add(1, Ordering::SeqCst) + 1;
        if self.env.crash_after == Some(n) {
            // The fault test's kill point: as abrupt as `kill -9`.
            let _ = nix::sys::signal::kill(nix::unistd::Pid::this(), nix::sys::signal::SIGKILL);
        }
        Ok(())
    }

    /// Runs until the workflow completes, stops, fails or waits.
    pub(super) async fn drive(&self) -> Result<Outcome, RunError> {
        let mut batches = 0u32;
        loop {
            if self.cancel.is_cancelled() {
                return Ok(Outcome::Interrupted {
                    id: self.id.clone(),
                });
            }
            let r = self.record();
            if let Some(outcome) = outcome(&self.id, &r) {
                return Ok(outcome);
            }
            let v = &r.state;
            let open: Vec<String> = v
                .host
                .batch
                .iter()
                .filter(|t| v.task(t).is_some_and(Task::is_open))
                .cloned()
                .collect();
            if open.is_empty() {
                self.decide_and_act(r).await?;
            } else if !self.within_budget(r.clone(), open.len())? {
                continue;
            } else {
                if self.env.max_batches.is_some_and(|max| batches >= max) {
                    return Ok(Outcome::Interrupted {
                        id: self.id.clone(),
                    });
                }
                batches += 1;
                self.dispatch_batch(&r.state, open).await?;
            }
        }
    }
}

/// An action's snake_case name, as the engine's serde writes it.
pub fn action_name(action: Action) -> String {
    serde_json::to_value(action)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{action:?}"))
}

/// The role spec of a read-only ORIENT answer.
pub fn orient_role(env: &RunEnv) -> Result<RoleSpec, RunError> {
    baton_roles::find_role(&env.delegate.role_dirs, "scout")
        .map_err(|e| RunError::NoScout(e.to_string()))
}

/// ORIENT: one read-only agent answers; no graph, no record.
pub async fn orient(
    env: &RunEnv,
    request: &str,
    cancel: &CancellationToken,
) -> Result<String, RunError> {
    let spec = orient_role(env)?;
    let class = spec
        .meta
        .model_class
        .unwrap_or(baton_protocol::ModelClass::Balanced);
    let task = Task {
        id: "orient".into(),
        phase: Some("orient".into()),
        ..Task::default()
    };
    let dir = tempfile::Builder::new()
        .prefix("baton-orient-")
        .tempdir()
        .map_err(|e| RunError::Orient(format!("cannot make a temp dir (TMPDIR): {e}")))?;
    let root = project_root(env);
    let launch = agent::Launch {
        wf: "orient",
        spec: &spec,
        class,
        task: &task,
        attempt: 1,
        prompt: format!("## User Request\n{request}\n\nAnswer from the code; change nothing.\n"),
        cwd: &root,
        roles_dir: dir.path(),
        cancel,
    };
    let d = agent::run(env, launch, &|_pid| {})
        .await
        .map_err(|e| RunError::Orient(e.message));
    drop(dir);
    let d = d?;
    match d.output.error {
        Some(e) => Err(RunError::Orient(e)),
        None => Ok(d.output.text),
    }
}
