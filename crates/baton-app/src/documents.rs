//! The JSON documents baton prints with `--json` and answers over MCP as `structuredContent`:
//! one typed struct each, shared by the commands and the MCP tools, so the two cannot drift, and
//! each MCP tool's output schema is derived from the struct it answers with (`baton-mcp`'s `tool`).
//!
//! A value of another crate's type (a Flow's status, a delegation's report, a checkpoint, a
//! model's info) is kept as that type and serialized as it serializes itself; its schema is a
//! shape struct here naming its top-level fields (`*Shape`), or any JSON value where the shape is
//! that crate's own.
//!
//! Printed (by `baton-cli`) and answered through [`to_value`], so the keys come out in the order
//! they always did.

use baton_exec::background::TaskState;
use baton_exec::delegate::DelegateReport;
use baton_flow::FlowStatus;
use baton_workflow::route::Decision;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// `doc` as a JSON value (keys sorted, as the documents were always printed).
pub fn to_value<T: Serialize>(doc: &T) -> Value {
    serde_json::to_value(doc).unwrap_or_else(|e| {
        serde_json::Value::String(format!("baton: cannot encode the document: {e}"))
    })
}

// ---------------------------------------------------------------- baton route

/// `baton route --json` and the MCP `route` tool: the workflow a request would run as.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RouteDocument {
    /// BUILD, DEBUG, PLAN, REVIEW, ORIENT, TRIAGE or CODEBASE-HEALTH.
    pub workflow: String,
    /// The words of the request that decided, each with its category.
    pub signals: Vec<RouteSignal>,
    /// The rule that decided.
    pub rule: String,
    /// Whether signals of several workflows were found.
    pub conflict: bool,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RouteSignal {
    pub text: String,
    pub category: String,
}

impl RouteDocument {
    /// The document of a routing decision.
    pub fn of(d: &Decision) -> RouteDocument {
        RouteDocument {
            workflow: d.workflow.as_str().to_string(),
            signals: d
                .signals
                .iter()
                .map(|s| RouteSignal {
                    text: s.text.to_string(),
                    category: s.category.as_str().to_string(),
                })
                .collect(),
            rule: d.rule.to_string(),
            conflict: d.conflict(),
        }
    }
}

// ---------------------------------------------------------------- baton models

/// `baton models --json` and the MCP `models` tool.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ModelsDocument {
    /// The config files read, lowest precedence first.
    pub config_files: Vec<String>,
    pub default_class: String,
    pub classes: Vec<ModelClassDocument>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ModelClassDocument {
    pub class: String,
    /// Whether the config sets this class (else its built-in default applies).
    pub set: bool,
    pub routes: Vec<RouteCheck>,
    /// The first usable route: the one the class resolves to now.
    pub resolves: Option<String>,
}

/// One route of a class: usable (with what it sends) or not (with why).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RouteCheck {
    pub route: String,
    pub usable: bool,
    /// The model's entry of the model table (usable routes).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Value>")]
    pub model_info: Option<Value>,
    /// What the route's thinking level becomes on the wire (usable routes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking_sent: Option<String>,
    /// The route's sampling options (usable routes).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Value>")]
    pub options: Option<Value>,
    /// Why it cannot be used (unusable routes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Its price, when it has one (null: unpriced, costs are not counted).
    pub price: Option<PriceDocument>,
}

/// A route's price in USD per million tokens, and where it comes from.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PriceDocument {
    pub input: f64,
    pub output: f64,
    pub cached_input: f64,
    /// Null: 1.25 × input (the provider reports no cache writes, or none was given).
    pub cache_write: Option<f64>,
    /// `config` (`[prices."provider/model"]`), `built-in` (the table) or `provider`
    /// (`[prices."provider/*"]`, zero for a local server).
    pub source: String,
    /// For the built-in table: what it was read from, and when.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_from: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_on: Option<String>,
}

impl PriceDocument {
    /// The price of `route` under `prices`, when it has one.
    pub fn of(
        prices: &std::collections::BTreeMap<String, baton_protocol::config::Price>,
        route: &baton_protocol::Route,
    ) -> Option<PriceDocument> {
        use baton_model::prices::{price_of, PriceSource, READ_ON, SOURCE};
        let (p, source) = price_of(prices, route)?;
        let builtin = source == PriceSource::BuiltIn;
        Some(PriceDocument {
            input: p.input,
            output: p.output,
            cached_input: p.cached_input.unwrap_or(p.input),
            cache_write: p.cache_write,
            source: source.as_str().to_string(),
            read_from: builtin.then(|| SOURCE.to_string()),
            read_on: builtin.then(|| READ_ON.to_string()),
        })
    }

    /// One line: `$3 in / $15 out per Mtok, cached $0.3, cache write $3.75 (built-in, read 2026-12-05)`.
    pub fn line(&self) -> String {
        let write = self
            .cache_write
            .map(|w| format!(", cache write ${w}"))
            .unwrap_or_default();
        let whence = match (&self.read_on, self.source.as_str()) {
            (Some(on), _) => format!("built-in, read {on}"),
            (None, "provider") if self.input == 0.0 && self.output == 0.0 => {
                "a local server: free unless [prices] says otherwise".to_string()
            }
            (None, s) => s.to_string(),
        };
        format!(
            "price ${} in / ${} out per Mtok, cached ${}{write} ({whence})",
            self.input, self.output, self.cached_input
        )
    }
}

// ---------------------------------------------------------------- baton roles

/// `baton roles --json` and the MCP `roles` tool.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RolesDocument {
    pub roles: Vec<RoleDocument>,
    /// The role files that cannot be used, `file: problem`.
    pub invalid: Vec<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RoleDocument {
    pub name: String,
    pub description: String,
    pub model_class: Option<String>,
    pub tools: Vec<String>,
    pub backend: String,
    /// `worktree` or `none`.
    pub isolation: String,
    pub sandbox: String,
    pub source: RoleSourceDocument,
    /// The skills the role names.
    pub skills: Vec<String>,
    /// How the skills reach a child of this backend, when not as named (peer CLIs that find
    /// their own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skills_note: Option<String>,
}

/// Where a role came from.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(tag = "kind")]
pub enum RoleSourceDocument {
    #[serde(rename = "built-in")]
    Builtin,
    #[serde(rename = "user")]
    User { path: String },
    #[serde(rename = "project")]
    Project { path: String },
}

// ---------------------------------------------------------------- baton skills

/// `baton skills --json`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SkillsDocument {
    /// The skills in force, by name.
    pub skills: Vec<SkillDocument>,
    /// Skills of a name an earlier folder already has: not used.
    pub shadowed: Vec<SkillDocument>,
    /// The `SKILL.md` files that cannot be used, `file: problem`.
    pub invalid: Vec<String>,
    /// The folders looked in, in order.
    pub folders: Vec<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SkillDocument {
    pub name: String,
    pub description: String,
    /// `project` (.baton/skills), `claude` (.claude/skills), `agents` (.agents/skills), `user`
    /// or `config` (`skills.paths`).
    pub source: String,
    /// The skill's `SKILL.md`.
    pub path: String,
    /// The roles that name it.
    pub roles: Vec<String>,
}

/// `baton roles check --json`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RolesCheckDocument {
    pub valid: bool,
    /// How many roles are usable.
    pub roles: usize,
    pub invalid: Vec<String>,
}

// ---------------------------------------------------------------- baton status

/// One workflow as `baton status --json` lists it (and the MCP `workflow_status` tool answers
/// for one id). The fields read from the workflow's artifact are null when it has none.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct WorkflowSummary {
    pub id: String,
    /// BUILD, DEBUG, …
    #[serde(rename = "type")]
    pub workflow_type: Option<Value>,
    pub run_state: String,
    pub state: String,
    /// Whether a process drives it now.
    pub running: bool,
    pub holder: Option<String>,
    pub pid: Option<u64>,
    pub phase_cursor: Option<Value>,
    pub pending_gate: Option<Value>,
    pub checkpoint: Option<Value>,
    pub waiting_for: String,
    pub spent: Option<Value>,
    pub created_at: Option<Value>,
    pub updated_at: Option<Value>,
    pub request: Option<Value>,
}

/// An entry of `baton status --json`: a workflow, or one whose record cannot be read.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum WorkflowEntry {
    Summary(Box<WorkflowSummary>),
    Unreadable { id: String, error: String },
}

/// `baton status --json`: the project's workflows, newest first.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StatusDocument {
    pub workflows: Vec<WorkflowEntry>,
}

/// The MCP `workflow_status` tool: without `id` every workflow, with `id` that one.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum WorkflowStatusAnswer {
    All(StatusDocument),
    One(Box<WorkflowSummary>),
}

/// The MCP resource `baton://workflows/{id}`: the summary and the brief.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct WorkflowResource {
    pub workflow: WorkflowSummary,
    pub brief: String,
}

// ---------------------------------------------------------------- baton run / resume

/// The shape of a checkpoint (baton-workflow's `Checkpoint`).
#[derive(JsonSchema)]
#[allow(dead_code)] // a schema only
pub struct CheckpointShape {
    /// The gate (`scope_decision`, `circuit_breaker`, `budget`, `failure` …).
    gate: String,
    question: String,
    /// The answers the runner understands; an empty list takes free text.
    options: Vec<String>,
    recommended: Option<String>,
    brief: String,
}

/// `baton run --json` / `baton resume --json`, and the MCP `run_workflow` and
/// `workflow_resume` tools: how the workflow returned.
///
/// A run's outcome is `baton_workflow::run::Outcome` itself (its serde form is this document);
/// the schema below describes it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum WorkflowOutcome {
    Returned(#[schemars(with = "OutcomeShape")] baton_workflow::run::Outcome),
    /// ORIENT answers inline.
    Answer(OrientAnswer),
}

/// ORIENT's inline answer: `{"type": "workflow.answer", "workflow": "ORIENT", "answer"}`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(tag = "type", rename = "workflow.answer")]
pub struct OrientAnswer {
    pub workflow: String,
    pub answer: String,
}

/// The schema of `baton_workflow::run::Outcome`'s serde form.
#[derive(JsonSchema)]
#[serde(tag = "type")]
#[allow(dead_code)] // Only its schema is used.
enum OutcomeShape {
    #[serde(rename = "workflow.completed")]
    Completed { id: String, brief: String },
    #[serde(rename = "workflow.checkpoint")]
    Checkpoint {
        id: String,
        checkpoint: CheckpointShape,
    },
    #[serde(rename = "workflow.failed")]
    Failed { id: String, brief: String },
    #[serde(rename = "workflow.stopped")]
    Stopped { id: String, brief: String },
    #[serde(rename = "workflow.interrupted")]
    Interrupted { id: String },
}

/// A command that could not do its work, with `--json`: `{"type", "message"}`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(tag = "type")]
pub enum ErrorDocument {
    /// `baton run` / `resume` refused or failed.
    #[serde(rename = "workflow.error")]
    Workflow { message: String },
    /// A Flow command refused (bad input, a precondition, another Flow active, wrong phase).
    #[serde(rename = "flow.refused")]
    FlowRefused { message: String },
    /// A Flow command failed (state, git).
    #[serde(rename = "flow.error")]
    Flow { message: String },
}

// ---------------------------------------------------------------- baton flow

/// A Flow's status (baton-flow's `FlowStatus`): its phase, its units and their evidence.
#[derive(JsonSchema)]
#[allow(dead_code)] // a schema only
pub struct FlowStatusShape {
    /// `running`, `paused`, `completed`, `failed`, `interrupted`, `abandoned`.
    phase: String,
    id: String,
    units: Vec<Value>,
}

/// A Flow document: the report a driving command ends with (and `flow_start`, `flow_continue`,
/// `flow_resume`, `flow_abandon` answer), a line of `baton flow status --json`, or the plan of
/// `baton flow clean --json`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(tag = "type")]
pub enum FlowDocument {
    #[serde(rename = "flow.report")]
    Report {
        #[schemars(with = "FlowStatusShape")]
        flow: FlowStatus,
    },
    #[serde(rename = "flow.status")]
    Status {
        #[schemars(with = "FlowStatusShape")]
        flow: FlowStatus,
    },
    #[serde(rename = "flow.clean_plan")]
    CleanPlan {
        #[schemars(with = "Value")]
        plan: Value,
    },
}

impl FlowDocument {
    /// The last line `baton flow start --json` (and the other driving commands) print, which
    /// `flow_start` of `baton mcp` answers.
    pub fn report(s: &FlowStatus) -> FlowDocument {
        FlowDocument::Report { flow: s.clone() }
    }

    /// The lines `baton flow status --json` prints (and `flow_status` of `baton mcp` answers as
    /// a list): one `{"type": "flow.status", "flow": …}` per Flow, oldest first.
    pub fn status_lines(flows: &[FlowStatus]) -> Vec<FlowDocument> {
        flows
            .iter()
            .map(|f| FlowDocument::Status { flow: f.clone() })
            .collect()
    }
}

/// The MCP `flow_status` tool: `baton flow status --json`'s lines as a list, oldest first.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FlowStatusList {
    pub flows: Vec<FlowDocument>,
}

// ---------------------------------------------------------------- baton task

/// A delegation's report (baton-exec's `DelegateReport`).
#[derive(JsonSchema)]
#[allow(dead_code)] // a schema only
pub struct DelegateReportShape {
    /// `single`, `parallel` or `chain`.
    mode: String,
    /// Each entry's name, role, status, bounded output, model, usage, turns, worktree.
    entries: Vec<Value>,
}

/// The MCP `delegate_task` tool: the report of `baton task --json` in the foreground, the
/// document of `baton task --background --json` with `background`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum DelegateAnswer {
    Report(#[schemars(with = "DelegateReportShape")] DelegateReport),
    Background(TaskDocument),
}

/// The `{"type": …}` documents of `baton task`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(tag = "type")]
pub enum TaskDocument {
    /// `baton task --background --json`: the task started.
    #[serde(rename = "task.background")]
    Background { id: String },
    /// `baton task --json` in the foreground: one entry's event as it happens.
    #[serde(rename = "entry")]
    Entry {
        index: usize,
        #[schemars(with = "Value")]
        event: Value,
    },
    /// `baton task --json`'s last line: the report.
    #[serde(rename = "report")]
    Report {
        #[schemars(with = "DelegateReportShape")]
        report: DelegateReport,
    },
}

/// `baton task status --json` (one line per task) and the MCP `task_status` tool.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TaskStatusDocument {
    pub id: String,
    /// `starting`, `running`, `done`, `failed`, `interrupted`.
    pub phase: String,
    pub created: String,
    pub cwd: String,
    /// `single`, `parallel` or `chain`.
    #[schemars(with = "String")]
    pub mode: Value,
    /// The supervisor's pid.
    pub pid: Option<u32>,
    /// Why the supervisor gave up, when it did.
    pub failure: Option<String>,
    pub entries: Vec<TaskEntryStatus>,
    /// The report, once the task ended.
    #[schemars(with = "Option<DelegateReportShape>")]
    pub report: Option<DelegateReport>,
}

impl TaskStatusDocument {
    /// The document of one background task.
    pub fn of(state: &TaskState) -> TaskStatusDocument {
        TaskStatusDocument {
            id: state.id.clone(),
            phase: state.phase().as_str().to_string(),
            created: state.created.clone(),
            cwd: state.cwd.clone(),
            mode: to_value(&state.request.mode),
            pid: state.supervisor_process().map(|p| p.pid),
            failure: state.failure.clone(),
            entries: state
                .entries
                .iter()
                .map(|(n, r, s)| TaskEntryStatus {
                    name: n.clone(),
                    role: r.clone(),
                    status: s.as_ref().map(to_value),
                })
                .collect(),
            report: state.report.clone(),
        }
    }
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TaskEntryStatus {
    pub name: String,
    pub role: String,
    /// `None` while queued or running.
    #[schemars(with = "Option<String>")]
    pub status: Option<Value>,
}

/// A task of `baton task status --json` whose log cannot be read (`damaged` or `unreadable`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TaskUnreadable {
    pub id: String,
    pub phase: String,
    pub error: String,
}

/// `baton task wait --json` and the MCP `task_wait` tool (which answers `task.running` at its
/// timeout).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(tag = "type")]
pub enum TaskWaitDocument {
    #[serde(rename = "report")]
    Report {
        id: String,
        #[schemars(with = "DelegateReportShape")]
        report: DelegateReport,
    },
    /// The task failed before running any entry.
    #[serde(rename = "task.failed")]
    Failed { id: String, message: String },
    #[serde(rename = "task.running")]
    Running {
        id: String,
        status: Box<TaskStatusDocument>,
    },
}

/// `baton task cancel --json` and the MCP `task_cancel` tool.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TaskCancelDocument {
    pub id: String,
    pub phase: String,
    /// `signalled`, `stopped` or `none`.
    pub action: String,
    pub stopped_children: usize,
    pub message: String,
}

// ---------------------------------------------------------------- commands without an MCP tool

/// `baton doctor --json`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DoctorDocument {
    pub ok: bool,
    /// The config files read, in the order they apply.
    pub config_files: Vec<String>,
    /// Settings a later config file sets again to another value (`key`, and the files `under`,
    /// whose value does not apply, and `over`, whose value does).
    pub shadowed: Vec<DoctorShadowed>,
    pub providers: Vec<DoctorProvider>,
    pub routes: Vec<DoctorRoute>,
    /// Each configured MCP server, started and asked for its tools.
    pub mcp_servers: Vec<DoctorMcpServer>,
    pub sandbox: DoctorSandbox,
    /// The Temporal engine, when `engine.kind = "temporal"` applies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine: Option<DoctorEngine>,
    /// baton's plugin in each host it installs into (`baton install`), as the host's own files
    /// record it; informational: it never makes `ok` false.
    pub plugins: Vec<DoctorPlugin>,
}

/// baton's plugin in one host, as the host's own files record it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DoctorPlugin {
    /// `claude` (Claude Code), `codex`, `gemini` (Gemini CLI) or `copilot` (Copilot CLI).
    pub host: String,
    /// The host lists `baton@baton` as installed (and, for Codex, enabled).
    pub installed: bool,
    /// Where the host keeps its copy of the plugin.
    pub path: Option<String>,
    /// The host's copy is the plugin this baton carries: no file differs or is missing.
    pub current: bool,
    /// The plugin's files (from the plugin's folder) that differ from this baton's or are missing.
    pub stale: Vec<String>,
    /// What it means and what to do (install, install again, or why the host's files could not
    /// be read).
    pub message: String,
}

/// A setting one config file sets and a later one sets again, differently.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DoctorShadowed {
    pub key: String,
    pub under: String,
    pub over: String,
}

/// `baton doctor`'s check of the Temporal engine: the service reached, the remote read, the
/// worker nodes that poll the task queue.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DoctorEngine {
    pub ok: bool,
    pub address: String,
    pub namespace: String,
    pub task_queue: String,
    pub remote: Option<String>,
    /// The names of the worker nodes that polled the task queue lately.
    pub nodes: Vec<String>,
    /// What is wrong and how to fix it; empty when `ok`.
    pub message: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DoctorMcpServer {
    pub name: String,
    pub optional: bool,
    /// It started (or answered) and listed its tools.
    pub ok: bool,
    /// The names of its tools, as the server gives them (offered as `mcp__NAME__TOOL`).
    pub tools: Vec<String>,
    /// Why it is not ok, with its stderr tail.
    pub message: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DoctorProvider {
    pub name: String,
    pub kind: Option<String>,
    pub url: String,
    /// Where the key comes from (never the key).
    pub key: String,
    /// `ok`, `not_configured`, `config_error`, `key_missing`, `http_error`, `unreachable`,
    /// `bad_answer`.
    pub verdict: String,
    pub status: Option<u16>,
    pub message: String,
    /// It answers, but not as a session needs (a llama.cpp server whose template takes no tools).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// A class route: what it sends (ok) or why it cannot be used.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DoctorRoute {
    pub class: String,
    pub route: String,
    pub ok: bool,
    #[serde(flatten)]
    pub sends: Option<RouteSends>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What a usable route sends.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RouteSends {
    #[schemars(with = "Value")]
    pub model_info: Value,
    pub thinking_sent: String,
    #[schemars(with = "Value")]
    pub options: Value,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DoctorSandbox {
    pub ok: bool,
    pub landlock_abi: i32,
    pub mode: String,
    pub message: String,
}

/// `baton repair ID --json`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RepairDocument {
    pub id: String,
    /// `workflow`, `flow`, `session` or `task`.
    pub kind: String,
    pub damaged: bool,
    pub applied: bool,
    pub damage: Vec<DamageDocument>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DamageDocument {
    pub path: String,
    pub line: usize,
    pub problem: String,
    pub lost: String,
    pub intact: usize,
    pub message: String,
    /// What `--apply` set aside.
    pub set_aside: Vec<String>,
}

/// `baton sessions --json`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SessionsDocument {
    pub sessions: Vec<SessionDocument>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SessionDocument {
    pub id: String,
    pub created: String,
    pub role: String,
    pub route: String,
    pub cwd: String,
    /// The session's outcome, or `unfinished`.
    pub outcome: String,
    pub reason: Option<String>,
    /// What its runs cost in dollars, added up over the runs that recorded a cost; `null` when
    /// none did (an unpriced route, or a transcript from before baton recorded it).
    pub cost_usd: Option<f64>,
    /// The task's first line.
    pub task: String,
}

/// `baton trust --json`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TrustDocument {
    pub project: String,
    pub hash: String,
    /// The settings that now apply.
    pub settings: Vec<String>,
    /// The roles that now apply.
    pub roles: Vec<String>,
}
