//! A worker node on Temporal (feature `temporal`): the workflows and activities it registers, its
//! poll loop, and replaying saved histories against them.

use temporalio_sdk::runtime::worker_tuner::{FixedSizeSlotSupplier, TunerHolder};
use temporalio_sdk::workflow_replayer::{WorkflowReplayer, WorkflowReplayerOptions};
use temporalio_sdk::{Runtime, Worker, WorkerOptions};
use tokio_util::sync::CancellationToken;

use crate::flow_sdk::{FlowActivities, FlowWorkflow};
use crate::mapping::Engine;
use crate::node::Node;
use crate::sdk::{connect, BatonWorkflow, NodeActivities};

/// Replays saved histories against this binary's workflow code: `Err` names the first that does
/// not replay (a change of the workflow's decisions without a patch marker).
pub async fn check_histories(files: &[std::path::PathBuf]) -> Result<usize, String> {
    let replayer = WorkflowReplayer::new(
        WorkflowReplayerOptions::new()
            .register_workflow::<BatonWorkflow>()
            .map_err(|e| e.to_string())?
            .register_workflow::<FlowWorkflow>()
            .map_err(|e| e.to_string())?
            .build(),
    )
    .map_err(|e| e.to_string())?;
    for f in files {
        let bytes = std::fs::read(f).map_err(|e| format!("cannot read {}: {e}", f.display()))?;
        let history = if crate::proto_json::looks_like(&bytes) {
            crate::proto_json::history(&bytes)
                .map(temporalio_client::WorkflowHistory::from)
                .map_err(|e| {
                    format!(
                        "{}: not a workflow history as Temporal's CLI writes it: {e}",
                        f.display()
                    )
                })?
        } else {
            temporalio_client::WorkflowHistory::from_json(&bytes)
                .map_err(|e| format!("{}: not a workflow history: {e}", f.display()))?
        };
        replayer
            .replay_workflow(history)
            .await
            .map_err(|e| format!("{} does not replay: {e}", f.display()))?;
    }
    Ok(files.len())
}

/// Runs a worker node until `stop`: polls the task queue for workflow tasks and at most `slots`
/// steps at once.
pub async fn run_node(
    engine: &Engine,
    node: Node,
    slots: usize,
    stop: CancellationToken,
) -> Result<(), String> {
    let client = connect(engine, &node.name).await?;
    let runtime = Runtime::from_current_tokio(Default::default()).map_err(|e| e.to_string())?;
    let tuner = TunerHolder::builder()
        .workflow_task_slot_supplier(FixedSizeSlotSupplier::new(100))
        .activity_task_slot_supplier(FixedSizeSlotSupplier::new(slots))
        .local_activity_task_slot_supplier(FixedSizeSlotSupplier::new(slots))
        .nexus_task_slot_supplier(FixedSizeSlotSupplier::new(1))
        .build();
    let options = WorkerOptions::new(engine.task_queue.clone())
        .client_identity_override(node.name.clone())
        .tuner(tuner)
        .register_activities(FlowActivities { node: node.clone() })
        .register_activities(NodeActivities { node })
        .register_workflow::<BatonWorkflow>()
        .map_err(|e| e.to_string())?
        .register_workflow::<FlowWorkflow>()
        .map_err(|e| e.to_string())?
        .build();
    let mut worker = Worker::new(&runtime, client, options).map_err(|e| e.to_string())?;
    let shutdown = worker.shutdown_handle();
    tokio::spawn(async move {
        stop.cancelled().await;
        shutdown();
    });
    worker.run().await.map_err(|e| e.to_string())
}
