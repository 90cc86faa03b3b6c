//! The supervisor of a managed worker (`baton worker serve NAME`): the same session `baton agent`
//! runs (role, route, sandbox, tools, transcript, `--resume`), with the worker's log as its
//! front end. Prompts are taken from the log in its order, one at a time, each recorded as
//! delivered before the session sees it and answered once its input is done. The supervisor
//! stops when asked (SIGTERM), after the idle timeout, or once the worker's spending reaches its
//! budget; what it was doing is in the log either way.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use baton_agent::agent::{RunSummary, Session, SessionHandle, Submission};
use baton_exec::worker::{self, StopReason, TurnUsage, WorkerEvent};
use baton_exec::worker_door;
use baton_protocol::AgentEvent;
use baton_state::{Durability, StateDir};
use tokio_util::sync::CancellationToken;

use baton_app::project::now_rfc3339;

use crate::signals::watch_signals;

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

/// The prompt the session works on: set by the feeder as it delivers one, cleared once its answer
/// is in the log (the feeder waits for that before it delivers the next).
#[derive(Default)]
struct Current {
    id: Mutex<Option<String>>,
    answered: Condvar,
}

impl Current {
    fn set(&self, id: String) {
        if let Ok(mut c) = self.id.lock() {
            *c = Some(id);
        }
    }

    fn get(&self) -> Option<String> {
        self.id.lock().ok().and_then(|c| c.clone())
    }

    /// Clears the prompt and wakes the feeder.
    fn take(&self) -> Option<String> {
        let id = self.id.lock().ok().and_then(|mut c| c.take());
        self.answered.notify_all();
        id
    }

    /// Waits until no prompt is in flight; false once `done`.
    fn wait_answered(&self, done: &CancellationToken) -> bool {
        let Ok(mut c) = self.id.lock() else {
            return false;
        };
        while c.is_some() {
            if done.is_cancelled() {
                return false;
            }
            c = match self.answered.wait_timeout(c, POLL) {
                Ok((c, _)) => c,
                Err(_) => return false,
            };
        }
        true
    }
}

/// The senders waiting at the worker's door (`baton_exec::worker_door`) for their prompt's end,
/// by prompt id; `None` once the supervisor stops serving (a sender then reads the log).
#[derive(Default)]
struct Door {
    waiting: Mutex<Option<HashMap<String, std::sync::mpsc::Sender<WorkerEvent>>>>,
    /// Senders being served now.
    open: std::sync::atomic::AtomicUsize,
}

/// The most senders the door serves at once.
const DOOR_MOST: usize = 64;

/// How often a sender waiting at the door is checked for having hung up.
const HANG_UP_CHECK: Duration = Duration::from_millis(200);

impl Door {
    /// Opens the door: senders of this user are served on threads of their own until the
    /// supervisor stops. Another supervisor holding the door, or no socket, is said and
    /// prompts go through the log.
    fn open(self: &Arc<Self>, front: &WorkerFront) {
        let listener = match worker_door::listen(&front.state, &front.name) {
            Ok(l) => l,
            Err(e) => {
                errln!(
                    "baton worker {}: no door for quick sends ({e}): prompts go through its log",
                    front.name
                );
                return;
            }
        };
        if let Ok(mut w) = self.waiting.lock() {
            *w = Some(HashMap::new());
        }
        let (door, front) = (self.clone(), front.clone());
        std::thread::spawn(move || loop {
            let conn = match listener.accept() {
                Ok((conn, _)) => conn,
                // Out of file descriptors, say: wait a moment rather than spin.
                Err(_) => {
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                }
            };
            // Past the cap a sender is not served here: it finds its prompt is not in the log,
            // and sends it through the log.
            if door.open.fetch_add(1, Ordering::SeqCst) >= DOOR_MOST {
                door.open.fetch_sub(1, Ordering::SeqCst);
                continue;
            }
            let (door, front) = (door.clone(), front.clone());
            std::thread::spawn(move || {
                door.serve(&front, &conn);
                door.open.fetch_sub(1, Ordering::SeqCst);
            });
        });
    }

    /// One sender: its prompt into the log, `queued` told, then the prompt's end.
    fn serve(&self, front: &WorkerFront, conn: &std::os::unix::net::UnixStream) {
        let Some(ask) = worker_door::accept(conn) else {
            return;
        };
        // The sender's own id: if the door closes before it says `queued`, the sender looks
        // for that prompt in the log before it sends it again.
        let id = ask.id;
        let (tx, rx) = std::sync::mpsc::channel();
        // Waiting before the prompt is in the log, so its end cannot come first.
        match self.waiting.lock().as_deref_mut() {
            Ok(Some(w)) => w.insert(id.clone(), tx),
            _ => return,
        };
        let queued = WorkerEvent::Queued {
            id: id.clone(),
            text: ask.text,
            retry_of: None,
            at: now_rfc3339(),
        };
        // Written, not fsynced: nothing acts on the line before the feeder's `delivered` line,
        // which is fsynced before the session sees the prompt and takes this one to the disk
        // with it. Until then only this sender relies on it, and it runs on this machine: a
        // crash of the machine that loses the line ends the sender too. One fsync fewer before
        // the model is asked.
        if let Err(e) = worker::append_as(&front.state, &front.name, &queued, Durability::Written) {
            errln!("baton worker {}: cannot write its log: {e}", front.name);
            self.end(&id);
            return;
        }
        if worker_door::tell(conn, &worker_door::Queued { queued: id.clone() }).is_err() {
            self.end(&id);
            return;
        }
        // Its end, handed over as it lands. A sender that hangs up meanwhile (a cancelled call)
        // frees this thread and its place at the door: the prompt stays in the log and is
        // answered in its turn.
        loop {
            match rx.recv_timeout(HANG_UP_CHECK) {
                Ok(ev) => {
                    let _ = worker_door::tell(conn, &ev);
                    return;
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) if !worker_door::gone(conn) => {}
                Err(_) => {
                    self.end(&id);
                    return;
                }
            }
        }
    }

    /// Hands a prompt's end (its answer or its loss, as logged) to the sender waiting for it.
    fn done(&self, id: &str, ev: &WorkerEvent) {
        if let Some(tx) = self.end(id) {
            let _ = tx.send(ev.clone());
        }
    }

    fn end(&self, id: &str) -> Option<std::sync::mpsc::Sender<WorkerEvent>> {
        self.waiting.lock().ok()?.as_mut()?.remove(id)
    }

    /// Stops serving: every sender still waiting reads the rest from the log.
    fn close(&self) {
        if let Ok(mut w) = self.waiting.lock() {
            *w = None;
        }
    }
}

/// What the session spent on the prompt it works on, and on all of them.
struct Spending {
    turn: TurnUsage,
    spent: f64,
}

/// Serves the worker until it is stopped; records `worker.started`, each prompt's delivery and
/// answer, and `worker.stopped`.
pub async fn serve(front: WorkerFront, session: Session) -> RunSummary {
    let (pid, start_time) = worker::me();
    log(
        &front,
        &WorkerEvent::Started {
            pid,
            start_time,
            session: session.spec().session_id.clone(),
            resumed: session.resumed(),
            at: now_rfc3339(),
        },
    );
    let SessionHandle {
        submissions: tx,
        mut events,
        cancel,
        idle,
        end,
        ..
    } = session.spawn();
    let _signals = watch_signals(cancel.clone());
    let current: Arc<Current> = Arc::default();
    let door: Arc<Door> = Arc::default();
    door.open(&front);
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
    let (_, _, spent_before) = worker::load(&front.state, &front.name)
        .map(|s| s.totals())
        .unwrap_or_default();
    let mut spending = Spending {
        turn: no_usage(),
        spent: spent_before,
    };
    while let Some(ev) = events.recv().await {
        fold(&front, &ev, &mut spending, &current, &door, &over_budget);
    }
    let summary = end.await;
    done.cancel();
    let _ = feeder.join();
    // A prompt the session was working on when it ended will not be answered.
    if let Some(id) = current.take() {
        let lost = WorkerEvent::Lost {
            id: id.clone(),
            at: now_rfc3339(),
        };
        log(&front, &lost);
        door.done(&id, &lost);
    }
    door.close();
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

fn no_usage() -> TurnUsage {
    TurnUsage {
        input_tokens: 0,
        output_tokens: 0,
        cost_usd: None,
    }
}

/// One event of the session, as the worker's log records it: a turn's usage is added up, an
/// input's end answers the prompt in flight (and may spend the budget).
fn fold(
    front: &WorkerFront,
    ev: &AgentEvent,
    spending: &mut Spending,
    current: &Current,
    door: &Door,
    over_budget: &AtomicBool,
) {
    match ev {
        AgentEvent::TurnCompleted {
            usage, cost_usd, ..
        } => {
            let turn = &mut spending.turn;
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
            let usage = std::mem::replace(&mut spending.turn, no_usage());
            spending.spent += usage.cost_usd.unwrap_or(0.0);
            if let Some(id) = current.get() {
                let answered = WorkerEvent::Answered {
                    id: id.clone(),
                    answer: final_message.clone(),
                    reason: reason.map(|r| r.to_string()),
                    usage,
                    peer_session: None,
                    at: now_rfc3339(),
                };
                log(front, &answered);
                door.done(&id, &answered);
            }
            if front.budget_usd.is_some_and(|b| spending.spent >= b) {
                over_budget.store(true, Ordering::SeqCst);
            }
            // Answered: the feeder may deliver the next prompt.
            current.take();
        }
        _ => {}
    }
}

/// Hands the log's prompts to the session, in order, each once the session is idle; closes its
/// input on the idle timeout or once the budget is spent.
fn feed(
    front: &WorkerFront,
    tx: tokio::sync::mpsc::UnboundedSender<Submission>,
    idle: &std::sync::mpsc::Receiver<()>,
    current: &Current,
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
            if idle.recv_timeout(Duration::from_millis(100)).is_ok() {
                break;
            }
        }
        // And the last prompt's answer is in the log (the session's events are read apart
        // from it): one prompt at a time, never two in one turn.
        if !current.wait_answered(done) {
            return;
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
        current.set(id);
        if tx.send(Submission::Input(text)).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn a_sender_that_stops_waiting_frees_its_place_at_the_door() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::at(dir.path().join("state"));
        std::fs::create_dir_all(state.root().join("workers")).unwrap();
        std::fs::write(worker::log_path(&state, "w1").unwrap(), "").unwrap();
        let front = WorkerFront {
            name: "w1".into(),
            state: state.clone(),
            budget_usd: None,
            idle_timeout: None,
        };
        let door: Arc<Door> = Arc::default();
        door.open(&front);
        let id = "0191f6b2c3d4e5f60718293a4b5c6d7e";
        let cancel = CancellationToken::new();
        let stop = cancel.clone();
        let asked = worker_door::ask_async(&state, "w1", id, "hello", &cancel);
        let (reply, ()) = tokio::join!(asked, async move { stop.cancel() });
        // Queued (in the log), and the sender went away without its answer.
        assert!(
            matches!(reply, Some(worker_door::Reply::Queued { .. })),
            "{reply:?}"
        );
        let log = std::fs::read_to_string(worker::log_path(&state, "w1").unwrap()).unwrap();
        assert!(log.contains(id), "{log}");
        // The door lets go of it: its thread ends and it no longer waits for that answer.
        let freed = || {
            door.open.load(Ordering::SeqCst) == 0
                && door
                    .waiting
                    .lock()
                    .unwrap()
                    .as_ref()
                    .is_some_and(|w| w.is_empty())
        };
        assert!(
            baton_testkit::fixture::wait_until(Duration::from_secs(5), freed),
            "the door still holds a sender that hung up"
        );
    }
}
