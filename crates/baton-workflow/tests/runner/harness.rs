//! An in-process runner: `baton run` / `baton resume`'s loop driven through a scripted
//! [`Launcher`] (no binary, no child process, no model). Each role answers with the text the test
//! set for its n-th call, else for all its calls; every launch is recorded with its prompt.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use baton_exec::delegate::DelegateEnv;
use baton_exec::executor::Executor;
use baton_exec::types::Limits;
use baton_exec::ExecError;
use baton_model::routes::ProcessEnv;
use baton_protocol::config::Config;
use baton_protocol::Usage;
use baton_roles::RoleDirs;
use baton_state::StateDir;
use baton_workflow::event::WorkflowEvent;
use baton_workflow::route::WorkflowKind;
use baton_workflow::run::agent::Dispatched;
use baton_workflow::run::state::{HostCheck, TaskOutput};
use baton_workflow::run::{
    self, Launch, Launcher, Outcome, Recheck, Resume, RunEnv, RunError, StartOptions,
};
use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// One launch the runner made.
#[derive(Debug, Clone)]
pub struct Call {
    pub role: String,
    pub phase: String,
    pub prompt: String,
    /// The skills the dispatched role was given.
    pub skills: Vec<String>,
}

#[derive(Default)]
struct Script {
    /// Role → answer for every call.
    answers: BTreeMap<String, String>,
    /// (role, n) → answer for its n-th call (from 1).
    nth: BTreeMap<(String, u32), String>,
    calls: Vec<Call>,
    /// Commands whose re-run by the host fails (exit 1).
    failing_checks: Vec<String>,
    /// Command → (exit code, output) of a host run.
    outputs: BTreeMap<String, (i32, String)>,
    /// Every command the host ran, in order.
    commands: Vec<String>,
    usage: Usage,
    cost_usd: Option<f64>,
}

/// The scripted launcher.
#[derive(Clone, Default)]
pub struct Scripted(Arc<Mutex<Script>>);

impl Scripted {
    fn script(&self) -> std::sync::MutexGuard<'_, Script> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Launcher for Scripted {
    fn launch<'a>(
        &'a self,
        _env: &'a RunEnv,
        l: Launch<'a>,
    ) -> BoxFuture<'a, Result<Dispatched, ExecError>> {
        let role = l.spec.name().to_string();
        let mut s = self.script();
        let n = s.calls.iter().filter(|c| c.role == role).count() as u32 + 1;
        s.calls.push(Call {
            role: role.clone(),
            phase: l.task.phase.clone().unwrap_or_default(),
            prompt: l.prompt.clone(),
            skills: l.spec.meta.skills.clone(),
        });
        let text = s
            .nth
            .get(&(role.clone(), n))
            .or_else(|| s.answers.get(&role))
            .cloned();
        let (usage, cost_usd) = (s.usage, s.cost_usd);
        drop(s);
        Box::pin(async move {
            let error = text
                .is_none()
                .then(|| format!("the test gave {role} no answer"));
            Ok(Dispatched {
                output: TaskOutput {
                    role,
                    text: text.unwrap_or_default(),
                    error,
                    ..TaskOutput::default()
                },
                usage,
                cost_usd,
                route: "scripted".into(),
                backend: "scripted",
                duration_seconds: 0.0,
                exit_code: Some(0),
                session_id: None,
            })
        })
    }

    fn recheck<'a>(&'a self, _env: &'a RunEnv, c: Recheck<'a>) -> BoxFuture<'a, Option<HostCheck>> {
        let mut s = self.script();
        s.commands.push(c.command.to_string());
        let fails = s.failing_checks.iter().any(|f| f == c.command);
        let output = s.outputs.get(c.command).cloned();
        drop(s);
        Box::pin(async move {
            let (exit, output) = match output {
                Some((exit, text)) => (exit, text),
                None => (i32::from(fails), String::new()),
            };
            Some(HostCheck {
                command: c.command.to_string(),
                ok: exit == 0,
                exit_code: Some(exit),
                output,
                ..HostCheck::default()
            })
        })
    }
}

/// A project folder, its run environment and the scripted agents.
pub struct Harness {
    /// The project folder (removed on drop).
    _dir: tempfile::TempDir,
    pub env: RunEnv,
    pub agents: Scripted,
    /// Every event the runner handed its subscriber, in order.
    pub seen: Arc<Mutex<Vec<WorkflowEvent>>>,
}

impl Harness {
    pub fn new() -> Harness {
        let dir = tempfile::tempdir().expect("a temp dir");
        let root = dir.path().to_path_buf();
        let delegate = DelegateEnv {
            config: Config::default(),
            role_dirs: RoleDirs {
                user: None,
                project: None,
                project_trusted: baton_roles::Trust::Yes,
            },
            cwd: root.clone(),
            state: StateDir::for_project(&root),
            worktree_root: root.join("worktrees"),
            baton_exe: PathBuf::from("/nonexistent/baton"),
            limits: Limits {
                idle_timeout: Duration::from_secs(60),
                max_timeout: Duration::from_secs(120),
            },
            output_cap: 50 * 1024,
            env: Arc::new(ProcessEnv),
            reload: None,
        };
        let mut env = RunEnv {
            delegate,
            executor: Arc::new(Executor::new(2)),
            record: None,
            replay: None,
            max_batches: None,
            crash_after: None,
            observer: None,
            events: None,
        };
        let seen: Arc<Mutex<Vec<WorkflowEvent>>> = Arc::default();
        let sink = seen.clone();
        env.events = Some(Arc::new(move |e: &WorkflowEvent| {
            sink.lock().unwrap().push(e.clone());
        }));
        Harness {
            _dir: dir,
            env,
            agents: Scripted::default(),
            seen,
        }
    }

    /// `role` answers `text` on every call.
    pub fn answer(&self, role: &str, text: &str) -> &Self {
        self.agents
            .script()
            .answers
            .insert(role.to_string(), text.to_string());
        self
    }

    /// `role` answers `text` on its `n`-th call.
    pub fn answer_nth(&self, role: &str, n: u32, text: &str) -> &Self {
        self.agents
            .script()
            .nth
            .insert((role.to_string(), n), text.to_string());
        self
    }

    /// The host's re-run of `command` fails (exit 1).
    pub fn failing_check(&self, command: &str) -> &Self {
        self.agents
            .script()
            .failing_checks
            .push(command.to_string());
        self
    }

    /// The host's run of `command` exits `exit` printing `output`.
    pub fn command_output(&self, command: &str, exit: i32, output: &str) -> &Self {
        self.agents
            .script()
            .outputs
            .insert(command.to_string(), (exit, output.to_string()));
        self
    }

    /// Every command the host ran, in order.
    pub fn host_commands(&self) -> Vec<String> {
        self.agents.script().commands.clone()
    }

    /// What every dispatch reports it spent.
    pub fn spend(&self, input_tokens: u64, output_tokens: u64, cost_usd: Option<f64>) -> &Self {
        let mut s = self.agents.script();
        s.usage.input_tokens = input_tokens;
        s.usage.output_tokens = output_tokens;
        s.cost_usd = cost_usd;
        self
    }

    /// The agents of a BUILD that passes everything.
    pub fn happy(&self) -> &Self {
        self.answer("component-builder", BUILDER_PASS)
            .answer("code-reviewer", REVIEW_APPROVE)
            .answer("failure-hunter", HUNT_CLEAN)
            .answer("integration-verifier", VERIFY_PASS)
            .answer("doc-syncer", DOCS_SKIPPED)
    }

    pub fn calls(&self) -> Vec<Call> {
        self.agents.script().calls.clone()
    }

    pub fn calls_of(&self, role: &str) -> Vec<Call> {
        self.calls()
            .into_iter()
            .filter(|c| c.role == role)
            .collect()
    }

    pub fn phases(&self) -> Vec<String> {
        self.calls().into_iter().map(|c| c.phase).collect()
    }

    fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
            .block_on(f)
    }

    pub fn run(&self, opts: StartOptions) -> Result<Outcome, RunError> {
        let cancel = CancellationToken::new();
        Self::block_on(run::start_with(&self.env, &self.agents, &opts, &cancel))
    }

    pub fn build(&self, request: &str) -> Result<Outcome, RunError> {
        self.run(start(request, false))
    }

    pub fn resume(&self, id: &str, how: Resume<'_>) -> Result<Outcome, RunError> {
        let cancel = CancellationToken::new();
        Self::block_on(run::resume_with(&self.env, &self.agents, id, how, &cancel))
    }

    pub fn answer_checkpoint(&self, id: &str, answer: &str) -> Result<Outcome, RunError> {
        self.resume(
            id,
            Resume {
                answer: Some(answer),
                ..Resume::default()
            },
        )
    }

    /// The workflow's events as the store reads them from its log.
    pub fn events(&self, id: &str) -> Vec<WorkflowEvent> {
        baton_workflow::store::WorkflowStore::new(self.env.delegate.state.clone())
            .events(id)
            .expect("the log reads")
    }

    /// The workflow's artifact as the store reads it.
    pub fn artifact(&self, id: &str) -> Value {
        baton_workflow::store::WorkflowStore::new(self.env.delegate.state.clone())
            .load(id)
            .expect("the record reads")
            .artifact
    }
}

/// A BUILD of `request`, trivial or standard, with no budget and no worktree.
pub fn start(request: &str, trivial: bool) -> StartOptions {
    StartOptions {
        request: request.to_string(),
        kind: WorkflowKind::Build,
        trivial,
        budget_usd: None,
        budget_tokens: None,
        isolate: Some(false),
        plan: None,
        assess_scope: false,
        id: None,
        referenced_plan: false,
        fan_out: Vec::new(),
    }
}

/// The workflow id of any outcome.
pub fn id_of(o: &Outcome) -> String {
    match o {
        Outcome::Completed { id, .. }
        | Outcome::Checkpoint { id, .. }
        | Outcome::Failed { id, .. }
        | Outcome::Stopped { id, .. }
        | Outcome::Interrupted { id } => id.clone(),
    }
}

// The contracts the agents answer with (`baton_testkit::contract!`, shared with `baton-cli`'s
// workflow e2e scripts).

pub const BUILDER_PASS: &str = baton_testkit::contract!(BUILDER_PASS);

pub const REVIEW_APPROVE: &str = baton_testkit::contract!(REVIEW_APPROVE);

pub const REVIEW_CRITICAL: &str = baton_testkit::contract!(REVIEW_CRITICAL);

pub const REVIEW_CRITICAL_AND_HIGH: &str = baton_testkit::contract!(REVIEW_CRITICAL_AND_HIGH);

pub const HUNT_CLEAN: &str = baton_testkit::contract!(HUNT_CLEAN);

pub const VERIFY_PASS: &str = baton_testkit::contract!(VERIFY_PASS);

pub const DOCS_SKIPPED: &str = baton_testkit::contract!(DOCS_SKIPPED);
