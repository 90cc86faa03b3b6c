//! Flows on Temporal (feature `temporal`): the workflow `baton.flow`, its activities
//! `baton.unit` and `baton.integrate`, and the client calls of `baton flow start/status --engine
//! temporal`. See [`crate::flow`].

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use temporalio_client::{
    Client, WorkflowDescribeOptions, WorkflowExecutionStatus, WorkflowGetResultOptions,
    WorkflowQueryOptions, WorkflowStartOptions,
};
use temporalio_macros::{activities, workflow, workflow_methods};
use temporalio_sdk::activities::{ActivityContext, ActivityError};
use temporalio_sdk::{WorkflowContext, WorkflowContextView, WorkflowResult};
use tokio_util::sync::CancellationToken;

use crate::flow::{
    FlowInput, FlowRun, FlowStatus, Implemented, IntegrateInput, Integrated, UnitInput, UnitRow,
    UnitState,
};
use crate::mapping::Engine;
use crate::node::Node;
use crate::sdk::{activity_options, publish};

/// A Flow on Temporal.
#[workflow]
pub struct FlowWorkflow {
    input: FlowInput,
    status: FlowStatus,
}

#[workflow_methods]
impl FlowWorkflow {
    #[init]
    fn new(_ctx: &WorkflowContextView, input: FlowInput) -> Self {
        let status = FlowStatus {
            id: input.id.clone(),
            state: FlowRun::Implementing,
            target: input.target.clone(),
            head: input.base.clone(),
            units: input
                .units
                .iter()
                .map(|u| UnitRow {
                    id: u.id.clone(),
                    name: u.name.clone(),
                    state: UnitState::Implementing,
                    ..UnitRow::default()
                })
                .collect(),
            why: None,
            search_attributes: input.search_attributes,
        };
        FlowWorkflow { input, status }
    }

    #[run(name = "baton.flow")]
    pub async fn run(ctx: &mut WorkflowContext<Self>) -> WorkflowResult<FlowStatus> {
        let input = ctx.state(|s| s.input.clone());
        let options = activity_options(Duration::from_secs(12 * 3600), input.heartbeat_timeout_ms);
        publish!(ctx, ctx.state(|s| s.status.clone()));
        // Every unit at once, on whichever nodes take them; a landing's units come implemented.
        let work = input
            .units
            .iter()
            .filter(|u| !input.implemented.contains_key(&u.id))
            .map(|u| {
                ctx.execute_activity(
                    FlowActivities::unit,
                    UnitInput {
                        flow: input.id.clone(),
                        unit: u.clone(),
                        build: input.build,
                        remote: input.remote.clone(),
                        target: input.target.clone(),
                        base: input.base.clone(),
                        origin: input.origin.clone(),
                    },
                    options.clone(),
                )
            });
        let mut results = temporalio_sdk::workflows::join_all(work).await.into_iter();
        let mut implemented: Vec<Option<Implemented>> = Vec::new();
        for (i, unit) in input.units.iter().enumerate() {
            let r = match input.implemented.get(&unit.id) {
                Some(head) => Implemented {
                    unit: unit.id.clone(),
                    ok: true,
                    head: Some(head.clone()),
                    summary: String::new(),
                    node: String::new(),
                    attempt: 0,
                },
                None => match results.next() {
                    Some(r) => r?,
                    None => unreachable!("one result per unit implemented here"),
                },
            };
            ctx.state_mut(|s| {
                let row = &mut s.status.units[i];
                row.node = match r.attempt {
                    0 => None,
                    1 => Some(r.node.clone()),
                    n => Some(format!("{}#{n}", r.node)),
                };
                row.head = r.head.clone();
                if r.ok {
                    row.state = UnitState::Implemented;
                } else {
                    row.state = UnitState::Failed;
                    row.why = Some(r.summary.clone());
                }
            });
            implemented.push(Some(r));
        }
        ctx.state_mut(|s| s.status.state = FlowRun::Integrating);
        publish!(ctx, ctx.state(|s| s.status.clone()));
        // In declared order, each onto the target as the earlier ones left it.
        let mut expected = input.onto.clone().unwrap_or_else(|| input.base.clone());
        for (i, unit) in input.units.iter().enumerate() {
            let Some(Implemented {
                ok: true,
                head: Some(head),
                ..
            }) = implemented[i].take()
            else {
                return Ok(ended(ctx, ctx.state_mut(|s| stop_at(s, i))));
            };
            let landed = ctx
                .execute_activity(
                    FlowActivities::integrate,
                    IntegrateInput {
                        flow: input.id.clone(),
                        unit: unit.clone(),
                        remote: input.remote.clone(),
                        target: input.target.clone(),
                        expected: expected.clone(),
                        base: input.base.clone(),
                        head,
                        origin: input.origin.clone(),
                    },
                    options.clone(),
                )
                .await?;
            match landed {
                Integrated::Landed { sha, .. } => {
                    expected = sha.clone();
                    ctx.state_mut(|s| {
                        s.status.units[i].state = UnitState::Integrated;
                        s.status.units[i].head = Some(sha.clone());
                        s.status.head = sha;
                    });
                    publish!(ctx, ctx.state(|s| s.status.clone()));
                }
                Integrated::Conflict { paths, .. } => {
                    return Ok(ended(ctx, ctx.state_mut(|s| {
                        s.status.units[i].state = UnitState::Conflict;
                        s.status.units[i].why = Some(format!(
                            "rebasing onto {} conflicted in {}; its commit stays at refs/baton/{}/{}-*",
                            s.status.target,
                            paths.join(", "),
                            s.status.id,
                            s.status.units[i].id
                        ));
                        stop_at(s, i)
                    })));
                }
                Integrated::Invalid {
                    command, output, ..
                } => {
                    return Ok(ended(
                        ctx,
                        ctx.state_mut(|s| {
                            s.status.units[i].state = UnitState::Invalid;
                            s.status.units[i].why = Some(format!("`{command}` failed:\n{output}"));
                            stop_at(s, i)
                        }),
                    ));
                }
                Integrated::Rejected { findings, .. } => {
                    return Ok(ended(
                        ctx,
                        ctx.state_mut(|s| {
                            s.status.units[i].state = UnitState::Rejected;
                            s.status.units[i].why = Some(format!(
                                "{findings}\nIts commit stays at refs/baton/{}/{}-*",
                                s.status.id, s.status.units[i].id
                            ));
                            stop_at(s, i)
                        }),
                    ));
                }
            }
        }
        Ok(ended(
            ctx,
            ctx.state_mut(|s| {
                s.status.state = FlowRun::Completed;
                s.status.clone()
            }),
        ))
    }

    #[query]
    pub fn status(&self, _ctx: &WorkflowContextView) -> FlowStatus {
        self.status.clone()
    }

    /// What started it (`baton flow land` reads a unit's spec here).
    #[query]
    pub fn input(&self, _ctx: &WorkflowContextView) -> FlowInput {
        self.input.clone()
    }
}

/// The Flow's last status, kept in its memo too.
fn ended(ctx: &WorkflowContext<FlowWorkflow>, status: FlowStatus) -> FlowStatus {
    publish!(ctx, status);
    status
}

/// The Flow ends at unit `i`: the units after it are skipped.
fn stop_at(s: &mut FlowWorkflow, i: usize) -> FlowStatus {
    s.status.state = FlowRun::Failed;
    for row in s.status.units.iter_mut().skip(i + 1) {
        if row.state != UnitState::Failed {
            row.state = UnitState::Skipped;
        }
    }
    s.status.clone()
}

/// The Flow activities a worker node runs.
pub struct FlowActivities {
    pub node: Node,
}

#[activities]
impl FlowActivities {
    /// Implements one unit.
    #[activity(name = "baton.unit")]
    pub async fn unit(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: UnitInput,
    ) -> Result<Implemented, ActivityError> {
        let attempt = ctx.info().attempt;
        beating(&ctx, |beat, cancel| async move {
            self.node.implement(&input, attempt, &*beat, &cancel).await
        })
        .await
    }

    /// Lands one unit on the target (its review included).
    #[activity(name = "baton.integrate")]
    pub async fn integrate(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: IntegrateInput,
    ) -> Result<Integrated, ActivityError> {
        let attempt = ctx.info().attempt;
        beating(&ctx, |beat, cancel| async move {
            self.node.integrate(&input, attempt, &*beat, &cancel).await
        })
        .await
    }
}

/// What a Flow activity's work calls with the pid of the child it runs.
type Beat = Arc<dyn Fn(u32) + Send + Sync>;

/// Runs a Flow activity's work, heartbeating every second with the pid of the child it runs
/// (none while it runs git or a validation command, which still beat), and cancelling the
/// work (its child killed) when the activity is cancelled.
async fn beating<T, F>(
    ctx: &ActivityContext,
    work: impl FnOnce(Beat, CancellationToken) -> F,
) -> Result<T, ActivityError>
where
    F: std::future::Future<Output = Result<T, crate::node::StepError>>,
{
    let pid = Arc::new(AtomicU32::new(0));
    let seen = pid.clone();
    let beat: Beat = Arc::new(move |p: u32| seen.store(p, Ordering::Relaxed));
    let cancel = CancellationToken::new();
    let run = work(beat, cancel.clone());
    let beats = async {
        let mut every = tokio::time::interval(Duration::from_secs(1));
        loop {
            every.tick().await;
            let p = pid.load(Ordering::Relaxed);
            let _ = ctx.record_heartbeat((p != 0).then_some(p)).await;
        }
    };
    tokio::select! {
        r = run => r.map_err(crate::sdk::activity_error),
        _ = beats => unreachable!("the heartbeat loop never ends"),
        _ = ctx.cancelled() => {
            cancel.cancel();
            Err(ActivityError::cancelled())
        }
    }
}

/// Starts a Flow on the engine's task queue.
pub async fn start(client: &Client, engine: &Engine, input: FlowInput) -> Result<(), String> {
    let options = WorkflowStartOptions::new(engine.task_queue.clone(), input.id.clone());
    let options = if input.search_attributes {
        options
            .search_attributes(crate::sdk::started_attributes(
                "FLOW",
                FlowRun::Implementing.as_str(),
            ))
            .build()
    } else {
        options.build()
    };
    let id = input.id.clone();
    client
        .start_workflow(FlowWorkflow::run, input, options)
        .await
        .map(|_| ())
        .map_err(|e| format!("cannot start Flow {id} on Temporal: {e}"))
}

/// The Flow's status, read without a worker as a workflow's is ([`crate::sdk::status`]): a
/// completed Flow's result, or the status a running or failed one keeps in its memo. A Flow
/// Temporal ended without a baton outcome is `failed`, with the reason in `why`.
pub async fn status(client: &Client, id: &str) -> Result<FlowStatus, String> {
    let h = client.get_workflow_handle::<FlowWorkflow>(id);
    let d = h
        .describe(WorkflowDescribeOptions::default())
        .await
        .map_err(|e| format!("cannot describe Flow {id}: {e}"))?;
    let kept: Option<FlowStatus> = d
        .memo()
        .get(crate::sdk::STATUS_MEMO)
        .map_err(|e| format!("Flow {id}: its memo does not decode as a Flow's status: {e}"))?;
    match (d.status(), kept) {
        (WorkflowExecutionStatus::Completed, _) => h
            .get_result(WorkflowGetResultOptions::default())
            .await
            .map_err(|e| format!("cannot read the result of Flow {id}: {e}")),
        (WorkflowExecutionStatus::Running, Some(s)) => Ok(s),
        (WorkflowExecutionStatus::Running, None) if d.history_length() < 4 => Ok(FlowStatus {
            id: id.to_string(),
            state: FlowRun::Implementing,
            target: String::new(),
            head: String::new(),
            units: Vec::new(),
            why: None,
            search_attributes: false,
        }),
        // A Flow of an older baton keeps no memo: ask it (a node must be up).
        (WorkflowExecutionStatus::Running, None) => h
            .query(FlowWorkflow::status, (), WorkflowQueryOptions::default())
            .await
            .map_err(|e| format!("cannot query Flow {id}: {e}")),
        (ended, kept) => {
            let mut s = kept.unwrap_or(FlowStatus {
                id: id.to_string(),
                state: FlowRun::Failed,
                target: String::new(),
                head: String::new(),
                units: Vec::new(),
                why: None,
                search_attributes: false,
            });
            if s.state != FlowRun::Failed || s.why.is_none() {
                let why = match h.get_result(WorkflowGetResultOptions::default()).await {
                    Err(e) => e.to_string(),
                    Ok(_) => format!("{ended:?}"),
                };
                s.state = FlowRun::Failed;
                s.why = Some(format!("ended on Temporal ({ended:?}): {why}"));
            }
            Ok(s)
        }
    }
}

/// What started a Flow (a query).
pub async fn input(client: &Client, id: &str) -> Result<FlowInput, String> {
    client
        .get_workflow_handle::<FlowWorkflow>(id)
        .query(FlowWorkflow::input, (), WorkflowQueryOptions::default())
        .await
        .map_err(|e| format!("cannot query Flow {id}: {e}"))
}
