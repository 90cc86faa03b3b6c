//! A session on a task of its own ([`Session::spawn`]): the loop of `queue.rs` behind a handle —
//! submissions in, typed events out, its cancel token and interrupter, and an end that gives the
//! summary once the transcript has recorded it. Every front end runs its session through it:
//! `baton agent` / `baton chat` (stdio), the terminal UI, a managed worker and the test harness.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use baton_protocol::{AgentEvent, Message};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::queue::{serve, Inbox};
use super::{AgentSpec, ApprovalSwitch, Approver, Interrupter, RunSummary, Submission};
use crate::session::SessionStore;

/// A session about to start: what it runs with, the conversation it continues and its
/// transcript (none in the test harness).
pub struct Session {
    spec: Arc<AgentSpec>,
    history: Vec<(Option<String>, Message)>,
    resumed: bool,
    store: Option<SessionStore>,
    approver: Option<Arc<dyn Approver>>,
}

/// A running session, as its front end holds it. Its fields are public so a front end can hand
/// each to whoever uses it (the submission sender to an input thread, the events to a printer).
pub struct SessionHandle {
    /// Its input, in order. The session ends once every sender is dropped and nothing is left
    /// to do, or once it is cancelled.
    pub submissions: mpsc::UnboundedSender<Submission>,
    /// Its events, in the order it emits them, from `session.started` to `session.completed`;
    /// closed when the session has ended.
    pub events: mpsc::UnboundedReceiver<AgentEvent>,
    /// Cancels the session (SIGINT; quitting the terminal UI while work runs).
    pub cancel: CancellationToken,
    /// Stops the streaming model turn at once (the terminal UI's Esc).
    pub interrupter: Interrupter,
    /// Changes the approval policy from the next tool call (the terminal UI's Shift+Tab).
    pub approval: ApprovalSwitch,
    /// `()` each time the session waits for its next submission (a front end that feeds it one
    /// input at a time sends the next then); unread, it is dropped.
    pub idle: std::sync::mpsc::Receiver<()>,
    /// The end of the session: awaits its summary.
    pub end: SessionEnd,
}

/// The end of a spawned session: resolves to its [`RunSummary`] once the session has ended and
/// its transcript recorded that end (a transcript that cannot record it is named on stderr).
/// A panic in the session is the awaiting task's panic.
pub struct SessionEnd(tokio::task::JoinHandle<RunSummary>);

impl Future for SessionEnd {
    type Output = RunSummary;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<RunSummary> {
        Pin::new(&mut self.0).poll(cx).map(|joined| match joined {
            Ok(summary) => summary,
            Err(e) => match e.try_into_panic() {
                Ok(panic) => std::panic::resume_unwind(panic),
                // Only a runtime shutting down cancels the task, and then nothing awaits it.
                Err(e) => std::panic::resume_unwind(Box::new(format!(
                    "the session task ended without a summary: {e}"
                ))),
            },
        })
    }
}

impl Session {
    /// A session with `spec`, continuing `history` (an earlier transcript, each message with the
    /// seat it belongs to, `None` in an ordinary session; `resumed` says it is one), recording to
    /// `store`.
    pub fn new(
        spec: Arc<AgentSpec>,
        history: Vec<(Option<String>, Message)>,
        resumed: bool,
        store: Option<SessionStore>,
    ) -> Session {
        Session {
            spec,
            history,
            resumed,
            store,
            approver: None,
        }
    }

    /// Approvals (`agent.approval`) are asked of `approver`; without one, a call that needs an
    /// answer fails closed.
    pub fn approver(mut self, approver: Arc<dyn Approver>) -> Session {
        self.approver = Some(approver);
        self
    }

    pub fn spec(&self) -> &Arc<AgentSpec> {
        &self.spec
    }

    /// The conversation the session continues.
    pub fn history(&self) -> &[(Option<String>, Message)] {
        &self.history
    }

    pub fn resumed(&self) -> bool {
        self.resumed
    }

    /// The checkpoints a resumed transcript holds that `/undo` can still go back to, oldest
    /// first (none for a new session).
    pub fn checkpoints(&self) -> Vec<crate::session::Checkpoint> {
        match (&self.store, self.resumed) {
            (Some(store), true) => crate::session::checkpoints_of(store.path()).0,
            _ => Vec::new(),
        }
    }

    /// Starts the session on a tokio task of its own (it emits `session.started` once the
    /// runtime runs it) and returns its handle. When it ends, its end is recorded in the
    /// transcript before [`SessionHandle::end`] resolves.
    pub fn spawn(self) -> SessionHandle {
        let Session {
            spec,
            history,
            resumed,
            mut store,
            approver,
        } = self;
        let (submissions, mut inbox, idle) = Inbox::with_idle_signal();
        if let Some(a) = approver {
            inbox.set_approver(a);
        }
        let interrupter = inbox.interrupter();
        let approval = inbox.approval_switch();
        let cancel = CancellationToken::new();
        let token = cancel.clone();
        let (tx, events) = mpsc::unbounded_channel();
        let task = tokio::spawn(async move {
            let mut emit = move |e: AgentEvent| {
                let _ = tx.send(e);
            };
            let summary = serve(
                &spec, history, resumed, &mut store, &token, &mut inbox, &mut emit,
            )
            .await;
            if let Some(store) = store.as_mut() {
                if let Err(e) = store.end(summary.outcome, summary.reason, summary.cost_usd) {
                    baton_text::errln!(
                        "baton: cannot record the end of the session in its transcript: {e}"
                    );
                }
            }
            summary
        });
        SessionHandle {
            submissions,
            events,
            cancel,
            interrupter,
            approval,
            idle,
            end: SessionEnd(task),
        }
    }
}
