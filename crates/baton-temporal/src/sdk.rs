//! The Temporal driver (feature `temporal`): the workflow, the activities, the worker node and the
//! client calls.
//!
//! The workflow code is deterministic: it decides only from activity results and updates, keeps
//! its state in ordered types, and waits with the SDK's own timer and condition.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

pub use temporalio_client::{Client, WorkflowHistory};
use temporalio_client::{
    ClientOptions, Connection, ConnectionOptions, TlsOptions, Url, WorkflowDescribeOptions,
    WorkflowExecuteUpdateOptions, WorkflowExecutionStatus, WorkflowFetchHistoryOptions,
    WorkflowGetResultOptions, WorkflowQueryOptions, WorkflowStartOptions,
};
use temporalio_common::search_attributes::{
    SearchAttributeKey, SearchAttributeUpdate, SearchAttributes,
};
use temporalio_macros::{activities, workflow, workflow_methods};
use temporalio_sdk::activities::{ActivityContext, ActivityError};
use temporalio_sdk::{
    ActivityOptions, SyncWorkflowContext, WorkflowContext, WorkflowContextView, WorkflowResult,
};
use tokio_util::sync::CancellationToken;

use crate::mapping::WfState;
use crate::mapping::{
    after, check_answer, events_in, Engine, Next, Progress, Start, Status, StepInput, StepOutcome,
    StepResult, WorkflowInput,
};
use crate::node::{FinalFailure, Node, StepError};

/// The Temporal workflow type of a baton workflow.
pub const WORKFLOW_TYPE: &str = "baton.workflow";

/// The memo key under which a workflow keeps its status ([`Status::tail`]) for readers that
/// have no worker to query: `baton status`, the `baton run` follower, Temporal's own UI.
pub const STATUS_MEMO: &str = "baton.status";

/// The patch that brought the status memo and baton's own failures failing the Temporal
/// workflow: histories recorded before it replay without either.
pub(crate) const LIVE_STATUS: &str = "baton.live-status";

/// The patch that brought the search attributes (`engine.search_attributes`).
pub(crate) const SEARCH_ATTRIBUTES_PATCH: &str = "baton.search-attributes";

/// Keeps `$status` in the workflow's memo (see [`STATUS_MEMO`]) through `$ctx`, a workflow's
/// context or an update's; nothing in a workflow recorded before [`LIVE_STATUS`]. A memo that
/// cannot be encoded changes nothing the workflow decides: the node says so on its stderr.
/// A workflow started with `engine.search_attributes` keeps its state in search attributes
/// too ([`Indexed`]).
macro_rules! publish {
    ($ctx:expr, $status:expr) => {
        if $ctx.patched($crate::sdk::LIVE_STATUS) {
            let status = &$status;
            let value = temporalio_sdk::MemoValue::new(status.tail());
            if let Err(e) = $ctx.upsert_memo([($crate::sdk::STATUS_MEMO, Some(value))]) {
                baton_text::errln!(
                    "baton worker-node: cannot keep the workflow's status in its memo: {e}"
                );
            }
            let updates = $crate::sdk::Indexed::search_updates(status);
            // A patch of their own: a workflow whose earlier tasks ran on a node that kept none
            // replays without them.
            if !updates.is_empty() && $ctx.patched($crate::sdk::SEARCH_ATTRIBUTES_PATCH) {
                $ctx.upsert_search_attributes(updates);
            }
        }
    };
}
pub(crate) use publish;

/// What a status keeps in the workflow's search attributes ([`crate::mapping::SEARCH_ATTRIBUTES`]);
/// nothing unless the workflow was started with them.
pub(crate) trait Indexed {
    fn search_updates(&self) -> Vec<SearchAttributeUpdate>;
}

const BATON_STATE: SearchAttributeKey<String> = SearchAttributeKey::keyword("BatonState");
const BATON_GATE: SearchAttributeKey<String> = SearchAttributeKey::keyword("BatonGate");
const BATON_STEPS: SearchAttributeKey<i64> = SearchAttributeKey::int("BatonSteps");
const BATON_KIND: SearchAttributeKey<String> = SearchAttributeKey::keyword("BatonKind");

impl Indexed for Status {
    fn search_updates(&self) -> Vec<SearchAttributeUpdate> {
        if !self.search_attributes {
            return Vec::new();
        }
        vec![
            BATON_STATE.value_set(self.state.as_str().to_string()),
            // `none` rather than unset: the server refuses the SDK's unset value.
            BATON_GATE.value_set(
                self.checkpoint
                    .as_ref()
                    .map_or("none", |c| c.gate.as_str())
                    .to_string(),
            ),
            BATON_STEPS.value_set(i64::from(self.steps)),
        ]
    }
}

/// A Flow's: its state (`implementing`, `integrating`, `completed`, `failed`), `BatonGate`
/// `none` (a Flow waits at no gate), and in `BatonSteps` the units landed.
impl Indexed for crate::flow::FlowStatus {
    fn search_updates(&self) -> Vec<SearchAttributeUpdate> {
        if !self.search_attributes {
            return Vec::new();
        }
        let landed = self
            .units
            .iter()
            .filter(|u| u.state == crate::flow::UnitState::Integrated)
            .count();
        vec![
            BATON_STATE.value_set(self.state.as_str().to_string()),
            BATON_GATE.value_set("none".to_string()),
            BATON_STEPS.value_set(landed as i64),
        ]
    }
}

/// The search attributes a workflow or Flow starts with: its kind and first state, no steps.
pub(crate) fn started_attributes(kind: &str, state: &str) -> SearchAttributes {
    SearchAttributes::new([
        BATON_KIND.value_set(kind.to_string()),
        BATON_STATE.value_set(state.to_string()),
        BATON_GATE.value_set("none".to_string()),
        BATON_STEPS.value_set(0),
    ])
}

/// A baton workflow on Temporal: its input, and what the steps so far left.
#[workflow]
pub struct BatonWorkflow {
    input: WorkflowInput,
    status: Status,
    /// The record, when it travels in the history (a workflow of an older baton); else empty,
    /// and the record is at `status.record_at` on the remote.
    log: String,
    answer: Option<String>,
}

#[workflow_methods]
impl BatonWorkflow {
    #[init]
    fn new(_ctx: &WorkflowContextView, input: WorkflowInput) -> Self {
        // A run that goes on from a failed one starts from its record, head and step count,
        // with the guidance as the answer its first step takes.
        let (log, record_at, head, steps, answer) = match &input.resumed {
            Some(r) => (
                r.log.clone(),
                r.record_at.clone(),
                r.head.clone(),
                r.steps,
                Some(r.answer.clone()),
            ),
            None => (String::new(), None, input.base.clone(), 0, None),
        };
        let status = Status {
            id: input.id.clone(),
            request: input.request.clone(),
            state: WfState::Starting,
            head,
            branch: input.branch.clone(),
            steps,
            events: events_in(&log),
            record_at,
            remote: input.remote.clone(),
            search_attributes: input.search_attributes,
            ..Status::default()
        };
        BatonWorkflow {
            input,
            status,
            log,
            answer,
        }
    }

    #[run(name = "baton.workflow")]
    pub async fn run(ctx: &mut WorkflowContext<Self>) -> WorkflowResult<Status> {
        let input = ctx.state(|s| s.input.clone());
        let options = activity_options(Duration::from_secs(6 * 3600), input.heartbeat_timeout_ms);
        let mut step = ctx.state(|s| s.status.steps);
        publish!(ctx, ctx.state(|s| s.status.clone()));
        loop {
            step += 1;
            let (log, record_at, head, answer) = ctx.state_mut(|s| {
                (
                    s.log.clone(),
                    s.status.record_at.clone(),
                    s.status.head.clone(),
                    s.answer.take(),
                )
            });
            let start = (log.is_empty() && record_at.is_none()).then(|| Start {
                request: input.request.clone(),
                kind: input.kind.clone(),
                trivial: input.trivial,
                budget_usd: input.budget_usd,
                budget_tokens: input.budget_tokens,
                plan: input.plan.clone(),
            });
            ctx.state_mut(|s| {
                s.status.state = WfState::Running;
                s.status.checkpoint = None;
            });
            // What Temporal's UI shows for the activity: which step, of what, and why it runs.
            let mut step_options = options.clone();
            step_options.summary = Some(format!(
                "step {step} of {}{}",
                input.kind,
                if answer.is_some() {
                    ", with your answer"
                } else {
                    ""
                }
            ));
            let r: Result<StepResult, _> = ctx
                .execute_activity(
                    NodeActivities::step,
                    StepInput {
                        id: input.id.clone(),
                        step,
                        remote: input.remote.clone(),
                        branch: input.branch.clone(),
                        head,
                        base: Some(input.base.clone()),
                        log,
                        record_at,
                        answer,
                        start,
                    },
                    step_options,
                )
                .await;
            let r = match r {
                Ok(r) => r,
                Err(e) => return Err(failed(ctx, &format!("step {step}"), e)),
            };
            let next = after(&r.outcome);
            ctx.state_mut(|s| {
                s.status.steps = step;
                s.status.head = r.head.clone();
                s.status.events = r.event_count();
                s.status.record_at = r.record_at.clone();
                s.status.nodes.push(match r.attempt {
                    1 => r.node.clone(),
                    n => format!("{}#{n}", r.node),
                });
                if let Some(p) = &r.took_over {
                    s.status.takeovers.push(p.clone());
                }
                s.log = r.log.clone();
                s.status.state = r.outcome.state();
                match &r.outcome {
                    StepOutcome::Checkpoint { checkpoint } => {
                        s.status.checkpoint = Some(checkpoint.clone());
                        s.status.brief = Some(checkpoint.brief.clone());
                    }
                    StepOutcome::Completed { brief }
                    | StepOutcome::Failed { brief }
                    | StepOutcome::Stopped { brief } => s.status.brief = Some(brief.clone()),
                    StepOutcome::Running => {}
                }
            });
            publish!(ctx, ctx.state(|s| s.status.clone()));
            match next {
                Next::Step => continue,
                Next::WaitForAnswer => {
                    let timeout = Duration::from_millis(input.checkpoint_timeout_ms);
                    let answered = temporalio_sdk::workflows::select! {
                        r = ctx.wait_condition(|s| s.answer.is_some()) => { r?; true }
                        _ = ctx.timer(timeout) => false,
                    };
                    if !answered {
                        ctx.state_mut(|s| {
                            s.status.state = WfState::Stopped;
                            s.status.brief = Some(format!(
                                "stopped: no answer at the checkpoint within {}s",
                                timeout.as_secs()
                            ));
                        });
                        publish!(ctx, ctx.state(|s| s.status.clone()));
                        return Ok(ctx.state(|s| s.status.clone()));
                    }
                }
                Next::End => {
                    if matches!(r.outcome, StepOutcome::Completed { .. }) && r.head != input.base {
                        // Completed once its branch holds the result: a client that follows the
                        // status reads the branch after it moved.
                        ctx.state_mut(|s| s.status.state = WfState::Running);
                        publish!(ctx, ctx.state(|s| s.status.clone()));
                        let mut land_options = options.clone();
                        land_options.summary = Some(format!("land {}", input.branch));
                        let landed = ctx
                            .execute_activity(
                                NodeActivities::land,
                                Land {
                                    remote: input.remote.clone(),
                                    branch: input.branch.clone(),
                                    expected: input.base.clone(),
                                    head: r.head.clone(),
                                },
                                land_options,
                            )
                            .await;
                        if let Err(e) = landed {
                            return Err(failed(ctx, "landing", e));
                        }
                        ctx.state_mut(|s| s.status.state = WfState::Completed);
                        publish!(ctx, ctx.state(|s| s.status.clone()));
                    }
                    let status = ctx.state(|s| s.status.clone());
                    // baton's own failure is the Temporal workflow's: Temporal's UI and
                    // `temporal workflow list` show it failed, with baton's reason.
                    if status.state == WfState::Failed && ctx.patched(LIVE_STATUS) {
                        let why = status.brief.clone().unwrap_or_else(|| "failed".into());
                        return Err(temporalio_sdk::WorkflowTermination::failed_application(
                            temporalio_sdk::ApplicationFailure::builder(why)
                                .type_name("baton.WorkflowFailed".to_string())
                                .non_retryable(true)
                                .build(),
                        ));
                    }
                    return Ok(status);
                }
            }
        }
    }

    #[query]
    pub fn status(&self, _ctx: &WorkflowContextView) -> Status {
        self.status.clone()
    }

    #[query]
    pub fn log(&self, _ctx: &WorkflowContextView) -> String {
        self.log.clone()
    }

    /// What started this run (`baton resume` of a failed workflow starts the next from it).
    #[query]
    pub fn input(&self, _ctx: &WorkflowContextView) -> WorkflowInput {
        self.input.clone()
    }

    // The SDK hands the validator a reference to the update's input type, `String`.
    #[allow(clippy::ptr_arg)]
    #[update_validator(answer)]
    fn validate_answer(
        &self,
        _ctx: &WorkflowContextView,
        text: &String,
    ) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        if self.answer.is_some() {
            return Err("an answer is already on its way".into());
        }
        check_answer(self.status.checkpoint.as_ref(), text).map_err(Into::into)
    }

    #[update]
    pub fn answer(&mut self, ctx: &mut SyncWorkflowContext<Self>, text: String) -> Status {
        self.answer = Some(text);
        self.status.state = WfState::Answered;
        self.status.checkpoint = None;
        // The memo says so before the update returns: a follower reading it next sees the
        // workflow going again, not still at the checkpoint.
        publish!(ctx, self.status);
        self.status.clone()
    }
}

/// How every baton activity is scheduled: `run_for` at most, a heartbeat at least every
/// `heartbeat_ms`, and retries for infrastructure only (backing off to 30 s, 20 attempts).
pub(crate) fn activity_options(run_for: Duration, heartbeat_ms: u64) -> ActivityOptions {
    ActivityOptions::with_start_to_close_timeout(run_for)
        .heartbeat_timeout(Duration::from_millis(heartbeat_ms))
        .retry_policy(
            temporalio_common::RetryPolicy::builder()
                .initial_interval(Duration::from_millis(500))
                .maximum_interval(Duration::from_secs(30))
                .maximum_attempts(20)
                .build(),
        )
        .build()
}

/// An activity that failed for good (a failure no attempt gets past, or the retries spent): the
/// status says so with its reason, and the workflow fails with it.
fn failed(
    ctx: &WorkflowContext<BatonWorkflow>,
    what: &str,
    e: temporalio_sdk::ActivityExecutionError,
) -> temporalio_sdk::WorkflowTermination {
    let why = chain(&e);
    ctx.state_mut(|s| {
        s.status.state = WfState::Failed;
        s.status.checkpoint = None;
        s.status.brief = Some(format!("{what} failed: {why}"));
    });
    publish!(ctx, ctx.state(|s| s.status.clone()));
    e.into()
}

/// A node's failure as Temporal sees it: an application failure named by its kind, which
/// Temporal does not retry when no attempt can get past it (see [`FinalFailure`]).
pub(crate) fn activity_error(e: StepError) -> ActivityError {
    let kind = e.final_;
    let failure = temporalio_common::error::ApplicationFailure::builder(e.message)
        .type_name(
            kind.map_or("baton.StepFailed", FinalFailure::as_str)
                .to_string(),
        )
        .non_retryable(kind.is_some())
        .build();
    ActivityError::from(failure)
}

/// The finishing push: the workflow's branch to its final head, leased on the base it started at.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Land {
    pub remote: String,
    pub branch: String,
    pub expected: String,
    pub head: String,
}

/// The activities a worker node runs.
pub struct NodeActivities {
    pub node: Node,
}

#[activities]
impl NodeActivities {
    /// One step; see [`crate::node`].
    #[activity(name = "baton.step")]
    pub async fn step(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: StepInput,
    ) -> Result<StepResult, ActivityError> {
        let attempt = ctx.info().attempt;
        let previous: Option<Progress> = ctx.heartbeat_details().deserialize().ok().flatten();
        let (tx, mut rx) = tokio::sync::watch::channel(None::<Progress>);
        let beat = move |p: Progress| {
            let _ = tx.send(Some(p));
        };
        let cancel = CancellationToken::new();
        let work = self.node.step(&input, attempt, previous, &beat, &cancel);
        // The latest progress, sent when it changes and again every second (the SDK throttles
        // what reaches the server), so a step stays alive through a long fetch or push too.
        let beats = async {
            let mut every = tokio::time::interval(Duration::from_secs(1));
            let mut open = true;
            loop {
                tokio::select! {
                    changed = rx.changed(), if open => open = changed.is_ok(),
                    _ = every.tick() => {}
                }
                let p = rx.borrow_and_update().clone();
                if let Some(p) = p {
                    let _ = ctx.record_heartbeat(p).await;
                }
            }
        };
        tokio::select! {
            r = work => r.map_err(activity_error),
            _ = beats => unreachable!("the heartbeat loop never ends"),
            _ = ctx.cancelled() => {
                cancel.cancel();
                Err(ActivityError::cancelled())
            }
        }
    }

    /// The finishing push. Alive while git runs (a long workflow's fetch is large): it
    /// heartbeats every second, as a step does, so it is never taken for a dead node.
    #[activity(name = "baton.land")]
    pub async fn land(self: Arc<Self>, ctx: ActivityContext, l: Land) -> Result<(), ActivityError> {
        let work = self
            .node
            .off_thread(move |n| n.land(&l.remote, &l.branch, &l.expected, &l.head));
        let beats = async {
            let mut every = tokio::time::interval(Duration::from_secs(1));
            loop {
                every.tick().await;
                let _ = ctx.record_heartbeat(()).await;
            }
        };
        tokio::select! {
            r = work => r.map_err(activity_error),
            _ = beats => unreachable!("the heartbeat loop never ends"),
            _ = ctx.cancelled() => Err(ActivityError::cancelled()),
        }
    }
}

/// A connection to the engine's Temporal service.
pub async fn connect(engine: &Engine, identity: &str) -> Result<Client, String> {
    let url = Url::from_str(&engine.address)
        .map_err(|e| format!("`engine.address` = `{}`: {e}", engine.address))?;
    let tls = engine.address.starts_with("https://") || engine.api_key.is_some();
    let options = ConnectionOptions::new(url)
        .identity(identity.to_string())
        .maybe_api_key(engine.api_key.clone())
        .maybe_tls_options(tls.then(TlsOptions::default))
        .build();
    let connection = Connection::connect(options).await.map_err(|e| {
        format!(
            "cannot reach Temporal at {}: {e} (start one with `temporal server start-dev`, or set `engine.address`)",
            engine.address
        )
    })?;
    Client::new(
        connection,
        ClientOptions::new(engine.namespace.clone()).build(),
    )
    .map_err(|e| format!("cannot use namespace {}: {e}", engine.namespace))
}

/// The identities of the worker nodes that lately polled the engine's task queue for steps
/// (the server remembers a poller for a few minutes after its last poll).
pub async fn pollers(client: &Client, engine: &Engine) -> Result<Vec<String>, String> {
    use temporalio_common::protos::temporal::api::enums::v1::TaskQueueType;
    use temporalio_common::protos::temporal::api::taskqueue::v1::TaskQueue;
    use temporalio_common::protos::temporal::api::workflowservice::v1::DescribeTaskQueueRequest;
    let request = DescribeTaskQueueRequest {
        namespace: engine.namespace.clone(),
        task_queue: Some(TaskQueue {
            name: engine.task_queue.clone(),
            ..Default::default()
        }),
        task_queue_type: TaskQueueType::Activity as i32,
        ..Default::default()
    };
    let response = client
        .connection()
        .workflow_service()
        .describe_task_queue(temporalio_client::tonic::Request::new(request))
        .await
        .map_err(|e| {
            format!(
                "cannot describe task queue {}: {}",
                engine.task_queue,
                e.message()
            )
        })?;
    Ok(response
        .into_inner()
        .pollers
        .into_iter()
        .map(|p| p.identity)
        .collect())
}

/// With `engine.search_attributes`, every one of [`crate::mapping::SEARCH_ATTRIBUTES`] is
/// registered in the namespace, each with its type: a workflow that upserted an unknown one
/// would have its workflow task fail again and again, so nothing starts until they are.
pub async fn search_attributes_registered(client: &Client, engine: &Engine) -> Result<(), String> {
    use temporalio_common::protos::temporal::api::enums::v1::IndexedValueType;
    use temporalio_common::protos::temporal::api::operatorservice::v1::ListSearchAttributesRequest;
    let request = ListSearchAttributesRequest {
        namespace: engine.namespace.clone(),
    };
    let known = client
        .connection()
        .operator_service()
        .list_search_attributes(temporalio_client::tonic::Request::new(request))
        .await
        .map_err(|e| {
            format!(
                "`engine.search_attributes` is on, and the search attributes of namespace {} cannot be listed: {}",
                engine.namespace,
                e.message()
            )
        })?
        .into_inner()
        .custom_attributes;
    let missing: Vec<String> = crate::mapping::SEARCH_ATTRIBUTES
        .iter()
        .filter(|(name, kind)| {
            known
                .get(*name)
                .and_then(|t| IndexedValueType::try_from(*t).ok())
                .map(|t| {
                    t.as_str_name()
                        .trim_start_matches("INDEXED_VALUE_TYPE_")
                        .to_ascii_lowercase()
                })
                != Some(kind.to_ascii_lowercase())
        })
        .map(|(name, kind)| format!("--name {name} --type {kind}"))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(format!(
        "`engine.search_attributes` is on, and namespace {ns} lacks (or types otherwise) {n} of baton's search attributes: register them once, e.g. `temporal operator search-attribute create --namespace {ns} {all}` (a dev server: `temporal server start-dev --search-attribute BatonState=Keyword …`), or set search_attributes = false",
        ns = engine.namespace,
        n = missing.len(),
        all = missing.join(" "),
    ))
}

/// Starts `input` as a Temporal workflow on the engine's task queue.
pub async fn start(client: &Client, engine: &Engine, input: WorkflowInput) -> Result<(), String> {
    let id = input.id.clone();
    let options = WorkflowStartOptions::new(engine.task_queue.clone(), id.clone());
    let options = if input.search_attributes {
        options
            .search_attributes(started_attributes(&input.kind, WfState::Starting.as_str()))
            .build()
    } else {
        options.build()
    };
    client
        .start_workflow(BatonWorkflow::run, input, options)
        .await
        .map(|_| ())
        .map_err(|e| format!("cannot start workflow {id} on Temporal: {e}"))
}

/// The workflow's status, read without a worker: a closed workflow's result, or the status a
/// running (or failed) one keeps in its memo ([`STATUS_MEMO`]; only the last node is listed
/// there). A workflow started before the memo existed is queried (a node must be up for that).
/// One that Temporal ended without a baton outcome (a step that can never succeed, cancelled,
/// terminated, timed out) is `failed`, with the reason.
pub async fn status(client: &Client, id: &str) -> Result<Status, String> {
    let h = client.get_workflow_handle::<BatonWorkflow>(id);
    let d = h
        .describe(WorkflowDescribeOptions::default())
        .await
        .map_err(|e| format!("cannot describe workflow {id}: {e}"))?;
    let kept: Option<Status> = d.memo().get(STATUS_MEMO).map_err(|e| {
        format!("workflow {id}: its memo `{STATUS_MEMO}` does not decode as a status: {e}")
    })?;
    match (d.status(), kept) {
        (WorkflowExecutionStatus::Completed, _) => h
            .get_result(WorkflowGetResultOptions::default())
            .await
            .map_err(|e| format!("cannot read the result of workflow {id}: {}", chain(&e))),
        (WorkflowExecutionStatus::Running, Some(s)) => Ok(s),
        // No workflow task has completed yet (no node took it): it has not started.
        (WorkflowExecutionStatus::Running, None) if d.history_length() < 4 => Ok(Status {
            id: id.to_string(),
            state: WfState::Starting,
            ..Status::default()
        }),
        // A workflow of an older baton keeps no memo: ask it (a node must be up).
        (WorkflowExecutionStatus::Running, None) => h
            .query(BatonWorkflow::status, (), WorkflowQueryOptions::default())
            .await
            .map_err(|e| format!("cannot query workflow {id}: {e}")),
        (ended, kept) => {
            let mut s = kept.unwrap_or_else(|| Status {
                id: id.to_string(),
                ..Status::default()
            });
            if s.state != WfState::Failed {
                let why = match h.get_result(WorkflowGetResultOptions::default()).await {
                    Err(e) => chain(&e),
                    Ok(_) => format!("{ended:?}"),
                };
                s.state = WfState::Failed;
                s.checkpoint = None;
                s.brief = Some(format!("ended on Temporal ({ended:?}): {why}"));
            }
            Ok(s)
        }
    }
}

/// An error and its causes, one after another.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let m = c.to_string();
        if !text.contains(&m) {
            text.push_str(": ");
            text.push_str(&m);
        }
        cause = c.source();
    }
    text
}

/// What started the workflow's latest run (a query).
pub async fn input(client: &Client, id: &str) -> Result<WorkflowInput, String> {
    client
        .get_workflow_handle::<BatonWorkflow>(id)
        .query(BatonWorkflow::input, (), WorkflowQueryOptions::default())
        .await
        .map_err(|e| format!("cannot query workflow {id}: {e}"))
}

/// The workflow's record (a query).
pub async fn log(client: &Client, id: &str) -> Result<String, String> {
    client
        .get_workflow_handle::<BatonWorkflow>(id)
        .query(BatonWorkflow::log, (), WorkflowQueryOptions::default())
        .await
        .map_err(|e| format!("cannot query workflow {id}: {e}"))
}

/// Answers the checkpoint the workflow waits at (an update; its validator refuses an answer the
/// gate does not take, and nothing is recorded then).
pub async fn answer(client: &Client, id: &str, text: &str) -> Result<Status, String> {
    client
        .get_workflow_handle::<BatonWorkflow>(id)
        .execute_update(
            BatonWorkflow::answer,
            text.to_string(),
            WorkflowExecuteUpdateOptions::default(),
        )
        .await
        .map_err(|e| format!("{e}"))
}

/// The workflow's history as it grows, to follow it without polling: a stream of its events
/// that, past the ones it has, waits for the next (a long poll the server answers as the event
/// lands — a step's result, a checkpoint, the status memo changing) and ends once the workflow
/// has closed.
pub fn watch(client: &Client, id: &str) -> WorkflowHistory {
    client
        .get_workflow_handle::<BatonWorkflow>(id)
        .fetch_history(
            WorkflowFetchHistoryOptions::builder()
                .skip_archival(true)
                .wait_new_event(true)
                .build(),
        )
}

/// Waits until a [`watch`] gains an event, then takes every event already there (one wake per
/// burst, not per event); false when the watch failed (the server went away) or ended (the
/// workflow closed): make it again, or read the status.
pub async fn next_events(watch: &mut WorkflowHistory) -> bool {
    use futures::{FutureExt as _, StreamExt as _};
    match watch.next().await {
        Some(Ok(_)) => {
            while let Some(Some(Ok(_))) = watch.next().now_or_never() {}
            true
        }
        Some(Err(_)) | None => false,
    }
}

/// The workflow's history as JSON (for `baton worker-node --check-history`).
pub async fn history_json(client: &Client, id: &str) -> Result<Vec<u8>, String> {
    client
        .get_workflow_handle::<BatonWorkflow>(id)
        .fetch_history(WorkflowFetchHistoryOptions::default())
        .to_json()
        .await
        .map_err(|e| format!("cannot fetch the history of {id}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use temporalio_sdk::workflow_replayer::{WorkflowReplayer, WorkflowReplayerOptions};

    /// A history of a real run (a BUILD with one remediation cycle, eight steps), saved by
    /// `temporal_e2e.rs` with `BATON_SAVE_HISTORY`.
    fn fixture() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/build-remediation.history.json")
    }

    /// The workflow with one decision changed and no patch marker: a step that leaves the
    /// workflow running ends it instead of leading to the next step.
    #[workflow]
    pub struct Changed {
        input: WorkflowInput,
    }

    #[workflow_methods]
    impl Changed {
        #[init]
        fn new(_ctx: &WorkflowContextView, input: WorkflowInput) -> Self {
            Changed { input }
        }

        #[run(name = "baton.workflow")]
        pub async fn run(ctx: &mut WorkflowContext<Self>) -> WorkflowResult<Status> {
            let input = ctx.state(|s| s.input.clone());
            let options =
                activity_options(Duration::from_secs(6 * 3600), input.heartbeat_timeout_ms);
            let _: StepResult = ctx
                .execute_activity(
                    NodeActivities::step,
                    StepInput {
                        id: input.id.clone(),
                        step: 1,
                        remote: input.remote.clone(),
                        branch: input.branch.clone(),
                        head: input.base.clone(),
                        base: Some(input.base.clone()),
                        log: String::new(),
                        record_at: None,
                        answer: None,
                        start: None,
                    },
                    options,
                )
                .await?;
            Ok(Status::default())
        }
    }

    #[tokio::test]
    async fn a_saved_history_replays_and_a_changed_decision_does_not() {
        // A history from before the status memo, and one from after it (`baton.live-status`:
        // memo upserts, the record by reference).
        let live = fixture().with_file_name("build-remediation-live-status.history.json");
        assert_eq!(
            crate::worker::check_histories(&[fixture(), live]).await,
            Ok(2)
        );
        let changed = WorkflowReplayer::new(
            WorkflowReplayerOptions::new()
                .register_workflow::<Changed>()
                .unwrap()
                .build(),
        )
        .unwrap();
        let bytes = std::fs::read(fixture()).unwrap();
        let history = temporalio_client::WorkflowHistory::from_json(&bytes).unwrap();
        let err = changed
            .replay_workflow(history)
            .await
            .expect_err("a changed decision must not replay");
        assert!(
            err.to_string().to_lowercase().contains("nondetermin"),
            "{err}"
        );
    }
}
