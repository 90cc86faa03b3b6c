//! The inbox of a session and what the loop does with a submission that arrives while a seat
//! works (`PollState::poll`, at each safe point).

use std::collections::VecDeque;

use tokio::sync::mpsc;

use super::Submission;
pub use crate::approval::ApprovalSwitch;
use crate::routing::state::Profile;

/// The receiving end of a session's submissions; the session ends when every sender is gone and
/// nothing is left to do.
pub struct Inbox {
    pub(super) rx: mpsc::UnboundedReceiver<Submission>,
    /// Told each time the session waits for its next submission (a script feeding a session
    /// line by line sends the next line then).
    pub(super) idle: Option<std::sync::mpsc::Sender<()>>,
    /// Who answers approvals (`agent.approval`): none in a headless session.
    pub(super) approver: Option<std::sync::Arc<dyn crate::approval::Approver>>,
    /// Stops a model turn as it streams (Esc in the terminal UI).
    pub(super) interrupter: Interrupter,
    /// The approval policy the front end set while the session runs, over the spec's.
    pub(super) approval: ApprovalSwitch,
}

/// Stops the model turn that streams now, at once (the terminal UI's Esc), as well as sending
/// [`Submission::Interrupt`] for the safe points. Each turn watches the count it started with,
/// so an interrupt between turns stops nothing but what the submission stops.
#[derive(Clone, Default)]
pub struct Interrupter {
    inner: std::sync::Arc<(std::sync::atomic::AtomicU64, tokio::sync::Notify)>,
}

impl Interrupter {
    pub fn interrupt(&self) {
        self.inner
            .0
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.1.notify_waiters();
    }

    pub(crate) fn count(&self) -> u64 {
        self.inner.0.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Runs `calls` (a turn's tool calls, whose own token is `token`); an interrupt after `seen`
    /// cancels `token`, and the calls then end with what they had done.
    pub(crate) async fn cancelling<T>(
        &self,
        seen: u64,
        token: &tokio_util::sync::CancellationToken,
        calls: impl std::future::Future<Output = T>,
    ) -> T {
        tokio::pin!(calls);
        tokio::select! {
            r = &mut calls => r,
            () = self.after(seen) => {
                token.cancel();
                calls.await
            }
        }
    }

    /// Resolves once an interrupt comes after `seen`.
    pub(crate) async fn after(&self, seen: u64) {
        loop {
            let notified = self.inner.1.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.count() != seen {
                return;
            }
            notified.await;
        }
    }
}

/// What the tool calls of a turn asked of the loop.
#[derive(Default)]
pub(crate) struct Flow {
    /// The Executor's report went up: its drive ends.
    pub(crate) returned: bool,
    /// New user input (or an interrupt) stops the Executor.
    pub(crate) interrupted: bool,
    /// What stopped the Executor was the user's interrupt, not new input.
    pub(crate) by_interrupt: bool,
    /// The user interrupted the task.
    pub(crate) stopped: bool,
    /// A call needed an approval no one could give (`agent.approval` in a headless session):
    /// the session fails closed, with this message.
    pub(crate) approval_unavailable: Option<String>,
}

impl Inbox {
    pub fn channel() -> (mpsc::UnboundedSender<Submission>, Inbox) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            tx,
            Inbox {
                rx,
                idle: None,
                approver: None,
                approval: ApprovalSwitch::default(),
                interrupter: Interrupter::default(),
            },
        )
    }

    /// Approvals (`agent.approval`) are asked of `approver`.
    pub fn set_approver(&mut self, approver: std::sync::Arc<dyn crate::approval::Approver>) {
        self.approver = Some(approver);
    }

    /// The handle that stops a streaming model turn at once.
    /// The handle a front end changes the session's approval policy through.
    pub fn approval_switch(&self) -> ApprovalSwitch {
        self.approval.clone()
    }

    pub fn interrupter(&self) -> Interrupter {
        self.interrupter.clone()
    }

    /// The same, and a receiver that gets `()` whenever the session is idle.
    pub fn with_idle_signal() -> (
        mpsc::UnboundedSender<Submission>,
        Inbox,
        std::sync::mpsc::Receiver<()>,
    ) {
        let (tx, mut inbox) = Inbox::channel();
        let (itx, irx) = std::sync::mpsc::channel();
        inbox.idle = Some(itx);
        (tx, inbox, irx)
    }
}

/// The inbox and held queue, borrowed apart from the rest of the session: user input is held
/// for later, and stops a working Executor; an interrupt stops the Executor or the task.
pub(super) struct PollState<'a, 'b> {
    pub(super) inbox: &'a mut &'b mut Inbox,
    pub(super) held: &'a mut VecDeque<Submission>,
}

impl PollState<'_, '_> {
    pub(super) fn poll(&mut self, seat: Option<Profile>, flow: &mut Flow) -> Option<String> {
        // An interrupt that stopped the Executor stops the whole task: once its report is saved,
        // the Coordinator stops at its next safe point instead of going on (seed 000: stopping
        // is immediate; `/interrupt` is not new input).
        if seat != Some(Profile::Executor) {
            if let Some(i) = self
                .held
                .iter()
                .position(|s| matches!(s, Submission::Interrupt))
            {
                self.held.remove(i);
                flow.stopped = true;
            }
        }
        while let Ok(sub) = self.inbox.rx.try_recv() {
            match sub {
                Submission::Input(text) => {
                    self.held.push_back(Submission::Input(text));
                    if seat == Some(Profile::Executor) {
                        flow.interrupted = true;
                    }
                }
                Submission::Interrupt => {
                    if seat == Some(Profile::Executor) {
                        flow.interrupted = true;
                        flow.by_interrupt = true;
                        // Kept for the Coordinator's next poll: the task stops there too.
                        self.held.push_back(Submission::Interrupt);
                    } else {
                        flow.stopped = true;
                    }
                }
                other => self.held.push_back(other),
            }
        }
        if flow.interrupted && flow.by_interrupt {
            Some(
                "the user interrupted the Executor (a running command was killed); its work goes \
                 to the Coordinator"
                    .into(),
            )
        } else if flow.interrupted {
            Some("new user input stopped the Executor; its work goes to the Coordinator".into())
        } else if flow.stopped {
            Some("the user interrupted the task".into())
        } else {
            None
        }
    }
}
