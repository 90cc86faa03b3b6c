//! The supervisor of a managed worker (`baton worker serve NAME`): the same session `baton agent`
//! runs (role, route, sandbox, tools, transcript, `--resume`), with the worker's log as its
//! front end. Prompts are taken from the log in its order, one at a time, each recorded as
//! delivered before the session sees it and answered once its input is done. The supervisor
//! stops when asked (SIGTERM), after the idle timeout, or once the worker's spending reaches its
//! budget; what it was doing is in the log either way.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use baton_agent::agent::{self, AgentSpec, Inbox, RunSummary, Submission};
use baton_agent::session::SessionStore;
use baton_exec::worker::{self, StopReason, TurnUsage, WorkerEvent};
use baton_protocol::{AgentEvent, Message};
use baton_state::StateDir;
use tokio_util::sync::CancellationToken;

use baton_app::project::now_rfc3339;

/// How long the supervisor waits for the log to change before it checks again whether to stop.
const POLL: Duration = Duration::from_millis(100);

/// What the session's front end needs to know of its worker.
#[derive(Debug, Clone)]
pub struct WorkerFront {
    pub name: String,
    /// The project's state folder, where the worker's log is.
    pub state: StateDir,
    pub budget_usd: Option<f64>,
    pub idle_timeout: Option<Duration>,
}

/// Why the feeder closed the session's input.
#[derive(Default)]
struct Ending {
    reason: Mutex<Option<StopReason>>,
}

impl Ending {
    fn set(&self, r: StopReason) {
        if let Ok(mut g) = self.reason.lock() {
            g.get_or_insert(r);
        }
    }

    fn get(&self) -> Option<StopReason> {
        self.reason.lock().ok().and_then(|g| *g)
    }
}

fn log(front: &WorkerFront, ev: &WorkerEvent) {
    if let Err(e) = worker::append(&front.state, &front.name, ev) {
        errln!("baton worker {}: cannot write its log: {e}", front.name);
    }
}

/// Serves the worker until it is stopped; records `worker.started`, each prompt's delivery and
/// answer, and `worker.stopped`.
pub async fn serve(
    front: WorkerFront,
    spec: &AgentSpec,
    history: Vec<(Option<String>, Message)>,
    resuming: bool,
    store: &mut Option<SessionStore>,
    cancel: &CancellationToken,
) -> RunSummary {
    let (pid, start_time) = worker::me();
    log(
        &front,
        &WorkerEvent::Started {
            pid,
            start_time,
            session: spec.session_id.clone(),
            resumed: resuming,
            at: now_rfc3339(),
        },
    );
    let (tx, mut inbox, idle) = Inbox::with_idle_signal();
    let current: Arc<Mutex<Option<String>>> = Arc::default();
    let ending = Arc::new(Ending::default());
    let over_budget = Arc::new(AtomicBool::new(false));
    let done = CancellationToken::new();
    let feeder = {
        let (front, current, ending, over_budget, done) = (
            front.clone(),
            current.clone(),
            ending.clone(),
            over_budget.clone(),
            done.clone(),
        );
        std::thread::spawn(move || feed(&front, tx, &idle, &current, &ending, &over_budget, &done))
    };
    let mut turn = TurnUsage {
        input_tokens: 0,
        output_tokens: 0,
        cost_usd: None,
    };
    let (_, _, spent_before) = worker::load(&front.state, &front.name)
        .map(|s| s.totals())
        .unwrap_or_default();
    let mut spent = spent_before;
    let summary = agent::serve(
        spec,
        history,
        resuming,
        store,
        cancel,
        &mut inbox,
        &mut |ev| match ev {
            AgentEvent::TurnCompleted {
                usage, cost_usd, ..
            } => {
                turn.input_tokens += usage.input_tokens;
                turn.output_tokens += usage.output_tokens;
                if let Some(c) = cost_usd {
                    turn.cost_usd = Some(turn.cost_usd.unwrap_or(0.0) + c);
                }
            }
            AgentEvent::InputCompleted {
                final_message,
                reason,
            } => {
                let id = current.lock().ok().and_then(|mut c| c.take());
                let usage = std::mem::replace(
                    &mut turn,
                    TurnUsage {
                        input_tokens: 0,
                        output_tokens: 0,
                        cost_usd: None,
                    },
                );
                spent += usage.cost_usd.unwrap_or(0.0);
                if let Some(id) = id {
                    log(
                        &front,
                        &WorkerEvent::Answered {
                            id,
                            answer: final_message.clone(),
                            reason: reason.map(|r| r.to_string()),
                            usage,
                            peer_session: None,
                            at: now_rfc3339(),
                        },
                    );
                }
                if front.budget_usd.is_some_and(|b| spent >= b) {
                    over_budget.store(true, Ordering::SeqCst);
                }
            }
            _ => {}
        },
    )
    .await;
    done.cancel();
    let _ = feeder.join();
    // A prompt the session was working on when it ended will not be answered.
    if let Some(id) = current.lock().ok().and_then(|mut c| c.take()) {
        log(
            &front,
            &WorkerEvent::Lost {
                id,
                at: now_rfc3339(),
            },
        );
    }
    let (reason, message) = match ending.get() {
        Some(r) => (r, None),
        None if cancel.is_cancelled() => (StopReason::Asked, None),
        None => match summary.reason {
            Some(r) => (StopReason::Failed, Some(format!("the session ended: {r}"))),
            None => (StopReason::Asked, None),
        },
    };
    log(
        &front,
        &WorkerEvent::Stopped {
            reason,
            message,
            at: now_rfc3339(),
        },
    );
    summary
}

/// Hands the log's prompts to the session, in order, each once the session is idle; closes its
/// input on the idle timeout or once the budget is spent.
fn feed(
    front: &WorkerFront,
    tx: tokio::sync::mpsc::UnboundedSender<Submission>,
    idle: &std::sync::mpsc::Receiver<()>,
    current: &Mutex<Option<String>>,
    ending: &Ending,
    over_budget: &AtomicBool,
    done: &CancellationToken,
) {
    let path = match worker::log_path(&front.state, &front.name) {
        Ok(p) => p,
        Err(_) => return,
    };
    // One watch for the supervisor's life (closing an inotify instance is slow).
    let watch = worker::LogWatch::new(&path);
    // Reads only what the log gained (answers make it long).
    let Ok(mut follower) = worker::Follower::new(&front.state, &front.name) else {
        return;
    };
    loop {
        // The session waits for input (or it ended).
        loop {
            if done.is_cancelled() {
                return;
            }
            // Idle, and the last prompt answered: one prompt at a time, never two in one turn.
            if idle.recv_timeout(Duration::from_millis(100)).is_ok()
                && current.lock().map(|c| c.is_none()).unwrap_or(false)
            {
                break;
            }
        }
        if over_budget.load(Ordering::SeqCst) {
            ending.set(StopReason::Budget);
            return;
        }
        let since = Instant::now();
        let mut seen_len = None;
        let next = loop {
            if done.is_cancelled() {
                return;
            }
            let len = std::fs::metadata(&path).map(|m| m.len()).ok();
            // The log is gone (its project removed): there is nothing left to serve.
            if len.is_none() {
                ending.set(StopReason::Asked);
                return;
            }
            if len != seen_len {
                seen_len = len;
                if let Ok(state) = follower.refresh() {
                    if let Some(p) = state.pending().next() {
                        break (p.id.clone(), p.text.clone());
                    }
                }
            }
            if front.idle_timeout.is_some_and(|t| since.elapsed() >= t) {
                ending.set(StopReason::Idle);
                return;
            }
            // Woken by the next line (inotify); the timeout bounds the idle and stop checks.
            watch.wait(POLL);
        };
        let (id, text) = next;
        // Recorded before the session sees it: after a crash it is known to have been in flight.
        log(
            front,
            &WorkerEvent::Delivered {
                id: id.clone(),
                at: now_rfc3339(),
            },
        );
        if let Ok(mut c) = current.lock() {
            *c = Some(id);
        }
        if tx.send(Submission::Input(text)).is_err() {
            return;
        }
    }
}
