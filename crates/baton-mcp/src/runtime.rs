//! What a call of `baton mcp` runs with: the executor every call of a server shares, and the
//! progress notifications of a long call.

use std::sync::{Arc, Mutex};

use baton_exec::delegate::DelegateEnv;
use baton_exec::executor::Executor;
use baton_workflow::event::WorkflowEvent;
use baton_workflow::run::{EventObserver, Observer};
use rmcp::model::ProgressNotificationParam;
use rmcp::service::RequestContext;
use rmcp::RoleServer;

/// The executor every delegation, Flow and workflow of one `baton mcp` shares (its concurrency
/// cap holds across calls and sessions), made at the first call that needs one.
#[derive(Clone, Default)]
pub struct SharedExecutor(Arc<Mutex<Option<Arc<Executor>>>>);

impl SharedExecutor {
    pub fn get(&self, env: &DelegateEnv) -> Result<Arc<Executor>, String> {
        let mut slot = self
            .0
            .lock()
            .map_err(|_| "baton mcp: the executor is unusable after a panic".to_string())?;
        if let Some(e) = slot.as_ref() {
            return Ok(e.clone());
        }
        let e = Arc::new(
            baton_app::project::executor_for(env).map_err(|e| format!("baton mcp: {e:#}"))?,
        );
        *slot = Some(e.clone());
        Ok(e)
    }
}

/// Forwards a workflow's observer lines to the client as `notifications/progress` with the
/// call's progress token, `progress` counting the lines (no `total`: a workflow's length is not
/// known ahead). Without a token, nothing is sent.
pub struct ProgressForward {
    sender: Arc<Mutex<Option<tokio::sync::mpsc::UnboundedSender<String>>>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl ProgressForward {
    pub fn new(context: &RequestContext<RoleServer>) -> ProgressForward {
        let Some(token) = context.meta.get_progress_token() else {
            return ProgressForward {
                sender: Arc::new(Mutex::new(None)),
                task: None,
            };
        };
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        let peer = context.peer.clone();
        let task = tokio::spawn(async move {
            let mut progress = 0.0;
            while let Some(line) = rx.recv().await {
                progress += 1.0;
                let param = ProgressNotificationParam::new(token.clone(), progress)
                    .with_message(baton_text::redact::redact(&line).into_owned());
                if peer.notify_progress(param).await.is_err() {
                    break;
                }
            }
        });
        ProgressForward {
            sender: Arc::new(Mutex::new(Some(tx))),
            task: Some(task),
        }
    }

    /// The observer a `RunEnv` takes: each line goes out as one notification.
    pub fn observer(&self) -> Option<Observer> {
        self.task.as_ref()?;
        let sender = self.sender.clone();
        Some(Arc::new(move |line: &str| {
            if let Ok(slot) = sender.lock() {
                if let Some(tx) = slot.as_ref() {
                    let _ = tx.send(baton_text::sanitize_line(line).into_owned());
                }
            }
        }))
    }

    /// The event subscriber a `RunEnv` takes: each event the workflow records goes out as one
    /// notification, the line `baton events` prints for it.
    pub fn workflow_events(&self) -> Option<EventObserver> {
        let say = self.observer()?;
        Some(Arc::new(move |e: &WorkflowEvent| {
            let line = baton_events::Payload::Workflow(e.clone()).summary();
            say(&format!("{} {line}", e.wf));
        }))
    }

    pub fn say(&self, line: &str) {
        if let Some(o) = self.observer() {
            o(line);
        }
    }

    /// Closes the channel and waits until every line has been sent, so that the notifications
    /// reach the client before the result.
    pub async fn finish(mut self) {
        if let Ok(mut slot) = self.sender.lock() {
            slot.take();
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}
