//! Prompting a worker: `send` (the CLI's, blocking) and `send_and_wait` (on a runtime), through
//! the worker's door when it has one, else through its log; and the followers a long-lived
//! process keeps of the logs it sent to.

use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use baton_exec::worker::{self, Phase, WorkerEvent, WorkerState};
use baton_exec::worker_door::Reply;
use baton_state::StateDir;
use schemars::JsonSchema;
use serde::Serialize;

use super::append;
use crate::project::now_rfc3339;

/// The answer of one prompt.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Answer {
    pub worker: String,
    pub prompt: String,
    pub answer: String,
    /// Why the turn stopped early (a turn limit, a model error).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// What became of a prompt `send` recorded.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Sent {
    /// Answered (with `wait`).
    Answered(Answer),
    /// Recorded; the worker takes it in its turn (without `wait`).
    Queued { worker: String, prompt: String },
    /// The worker stopped before answering it: `send --retry` sends it again.
    Lost { worker: String, prompt: String },
    /// The worker stopped (or was lost) with the prompt waiting in its log: `start` delivers it.
    Waiting {
        worker: String,
        prompt: String,
        state: String,
    },
}

/// What to send.
#[derive(Debug, Clone)]
pub enum Prompt {
    Text(String),
    /// The prompt that was in flight when the worker was lost, again.
    Retry,
}

/// Where a prompt handed to a running worker's door (`baton_exec::worker_door`) stands.
enum AtDoor {
    /// Its end, as the door handed it back.
    Ended(Sent),
    /// It is in the log under this id: its end is read from there.
    InLog(String),
    /// It was not handed in: it goes through the log.
    NotIn,
}

/// A prompt the door can take: a waited-for text that is not empty (a retry, or a prompt not
/// waited for, goes through the log).
fn for_the_door(prompt: &Prompt, wait: bool) -> Option<&str> {
    match prompt {
        Prompt::Text(text) if wait && !text.trim().is_empty() => Some(text),
        _ => None,
    }
}

/// What the door's `reply` means for a prompt of worker `name`.
fn at_door(state: &StateDir, name: &str, reply: Option<Reply>) -> Result<AtDoor> {
    Ok(match reply {
        Some(Reply::Done { id, event }) => match ended(name, &id, &event) {
            Some(sent) => AtDoor::Ended(sent),
            None => AtDoor::InLog(id),
        },
        // The door closed before the prompt's end: the log says the rest.
        Some(Reply::Queued { id }) => AtDoor::InLog(id),
        // It closed before saying `queued`: the log says whether it got there. The prompt is in
        // the log once the door said so, so it is never sent twice.
        Some(Reply::Unsure { id }) => {
            let mut follower = Kept::take(state, name)?;
            let w = follower.refresh()?;
            if w.prompts.iter().any(|p| p.id == id) {
                AtDoor::InLog(id)
            } else {
                AtDoor::NotIn
            }
        }
        None => AtDoor::NotIn,
    })
}

/// A new prompt id (a UUID, simple form, as the door checks).
fn new_prompt_id() -> String {
    uuid::Uuid::now_v7().simple().to_string()
}

/// Records a prompt for worker `name` (before anything delivers it) and, with `wait`, waits
/// for its answer.
pub fn send(state: &StateDir, name: &str, prompt: Prompt, wait: bool) -> Result<Sent> {
    // A running worker's door: its supervisor puts the prompt in the log and hands the answer
    // back as it lands, with no reading of the log here.
    if let Some(text) = for_the_door(&prompt, wait) {
        let id = new_prompt_id();
        let reply = baton_exec::worker_door::ask(state, name, &id, text);
        match at_door(state, name, reply)? {
            AtDoor::Ended(sent) => return Ok(sent),
            AtDoor::InLog(id) => {
                let mut follower = Kept::take(state, name)?;
                return wait_for(state, name, &mut follower, &id);
            }
            AtDoor::NotIn => {}
        }
    }
    // One reading of the log: the state it gives is checked now, and the wait below reads only
    // what is appended after it. A process that sent to this worker before (`baton mcp`) reads
    // only what the log gained since.
    let mut follower = Kept::take(state, name)?;
    let (phase, lost) = {
        let w = follower.refresh()?;
        let retried: Vec<&str> = w
            .prompts
            .iter()
            .filter_map(|p| p.retry_of.as_deref())
            .collect();
        let lost = w
            .prompts
            .iter()
            .rev()
            .find(|p| p.lost && !retried.contains(&p.id.as_str()))
            .map(|p| (p.text.clone(), Some(p.id.clone())));
        (w.phase(), lost)
    };
    match phase {
        Phase::Retired => bail!("worker {name} is retired: it takes no prompts"),
        Phase::Stopped | Phase::Lost => bail!(
            "worker {name} is {}: start it again with `baton worker start {name}`",
            phase.as_str()
        ),
        _ => {}
    }
    let (text, retry_of) = match prompt {
        Prompt::Retry => match lost {
            Some(lost) => lost,
            None => bail!("worker {name} has no lost prompt to send again"),
        },
        Prompt::Text(text) => {
            if text.trim().is_empty() {
                bail!("the prompt is empty");
            }
            (text, None)
        }
    };
    let id = new_prompt_id();
    append(
        state,
        name,
        &WorkerEvent::Queued {
            id: id.clone(),
            text,
            retry_of,
            at: now_rfc3339(),
        },
    )?;
    if !wait {
        return Ok(Sent::Queued {
            worker: name.to_string(),
            prompt: id,
        });
    }
    wait_for(state, name, &mut follower, &id)
}

/// What a prompt's end, as its log line, says to its sender.
fn ended(name: &str, id: &str, event: &WorkerEvent) -> Option<Sent> {
    match event {
        WorkerEvent::Answered {
            answer,
            reason,
            usage,
            ..
        } => Some(Sent::Answered(Answer {
            worker: name.to_string(),
            prompt: id.to_string(),
            answer: answer.clone(),
            reason: reason.clone(),
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cost_usd: usage.cost_usd,
        })),
        WorkerEvent::Lost { .. } => Some(Sent::Lost {
            worker: name.to_string(),
            prompt: id.to_string(),
        }),
        _ => None,
    }
}

/// Waits for prompt `id`'s end in worker `name`'s log.
fn wait_for(state: &StateDir, name: &str, follower: &mut Kept, id: &str) -> Result<Sent> {
    // The log is looked at again when it grew (a `stat`), every millisecond at first, then less
    // often: a quick answer is printed at once, a long one costs next to nothing to wait for.
    // (Not inotify here: closing an inotify instance costs the kernel tens of milliseconds, more
    // than the answer of a quick prompt takes.)
    let path = worker::log_path(state, name)?;
    let started = Instant::now();
    let mut seen = None;
    let mut checked = Instant::now();
    loop {
        let len = std::fs::metadata(&path).map(|m| m.len()).ok();
        // Read on growth (only what was appended), and once a second anyway (a supervisor that
        // died writes nothing).
        if len != seen || checked.elapsed() >= Duration::from_secs(1) {
            seen = len;
            checked = Instant::now();
            let w = follower.refresh()?;
            if let Some(done) = outcome_of(w, name, id)? {
                return Ok(done);
            }
        }
        std::thread::sleep(if started.elapsed() < Duration::from_millis(500) {
            Duration::from_millis(1)
        } else {
            Duration::from_millis(25)
        });
    }
}

/// The followers of the workers' logs this process sent prompts to, each folded up to where its
/// last send left it (a long-lived process such as `baton mcp` sends many).
static FOLLOWERS: std::sync::Mutex<Vec<(std::path::PathBuf, worker::Follower)>> =
    std::sync::Mutex::new(Vec::new());

/// How many followers a process keeps (the least recently used go first).
const KEPT_FOLLOWERS: usize = 32;

/// A follower taken from [`FOLLOWERS`] (or new), put back when dropped.
struct Kept {
    path: std::path::PathBuf,
    follower: Option<worker::Follower>,
}

impl Kept {
    fn take(state: &StateDir, name: &str) -> Result<Kept> {
        let path = worker::log_path(state, name)?;
        let mut kept = FOLLOWERS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let follower = match kept.iter().position(|(p, _)| *p == path) {
            Some(i) => kept.remove(i).1,
            None => worker::Follower::new(state, name)?,
        };
        Ok(Kept {
            path,
            follower: Some(follower),
        })
    }

    fn refresh(&mut self) -> Result<&WorkerState> {
        let follower = self
            .follower
            .as_mut()
            .ok_or_else(|| anyhow::anyhow!("the worker log's follower is gone"))?;
        follower.refresh().map_err(|e| anyhow::anyhow!("{e}"))
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        let Some(follower) = self.follower.take() else {
            return;
        };
        let mut kept = FOLLOWERS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if kept.len() >= KEPT_FOLLOWERS {
            kept.remove(0);
        }
        kept.push((std::mem::take(&mut self.path), follower));
    }
}

/// What a sender on a runtime got from [`send_and_wait`].
#[derive(Debug)]
pub enum Waited {
    /// The prompt's end (or what `send` says instead: a stopped worker, say).
    Ended(Sent),
    /// The wait was cancelled: prompt `prompt` stays in the worker's log and is answered in its
    /// turn.
    Cancelled { prompt: String },
}

/// [`send`] with `wait`, for a long-lived process on a tokio runtime (`baton mcp`, the `worker`
/// tool): through the worker's door when it has one, else through its log ([`answer_of`]); the
/// wait ends when `cancel` fires.
pub async fn send_and_wait(
    state: &StateDir,
    name: &str,
    prompt: Prompt,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<Waited> {
    let id = match for_the_door(&prompt, true) {
        Some(text) => {
            let id = new_prompt_id();
            let reply = baton_exec::worker_door::ask_async(state, name, &id, text, cancel).await;
            match at_door(state, name, reply)? {
                AtDoor::Ended(sent) => return Ok(Waited::Ended(sent)),
                AtDoor::InLog(id) => Some(id),
                AtDoor::NotIn => None,
            }
        }
        None => None,
    };
    let id = match id {
        Some(id) => id,
        None => match send(state, name, prompt, false)? {
            Sent::Queued { prompt, .. } => prompt,
            other => return Ok(Waited::Ended(other)),
        },
    };
    Ok(
        match answer_of(state, name, &id, cancel.cancelled()).await? {
            Some(done) => Waited::Ended(done),
            None => Waited::Cancelled { prompt: id },
        },
    )
}

/// Waits for what worker `name`'s prompt `id` comes to, in a long-lived process (`baton mcp`,
/// the `worker` tool): the log is looked at every millisecond for the first half second, then
/// every 20 ms, each look reading only what was appended. `None` when `cancelled` resolves first
/// (the prompt stays in the worker's log and is answered in its turn).
pub async fn answer_of(
    state: &StateDir,
    name: &str,
    id: &str,
    cancelled: impl std::future::Future<Output = ()>,
) -> Result<Option<Sent>> {
    tokio::pin!(cancelled);
    let started = Instant::now();
    let mut follower = Kept::take(state, name)?;
    loop {
        if let Some(done) = outcome_of(follower.refresh()?, name, id)? {
            return Ok(Some(done));
        }
        let pause = if started.elapsed() < Duration::from_millis(500) {
            Duration::from_millis(1)
        } else {
            Duration::from_millis(20)
        };
        tokio::select! {
            () = &mut cancelled => return Ok(None),
            () = tokio::time::sleep(pause) => {}
        }
    }
}

/// [`outcome`] of a worker's state as read.
fn outcome_of(w: &WorkerState, name: &str, id: &str) -> Result<Option<Sent>> {
    let Some(p) = w.prompts.iter().find(|p| p.id == id) else {
        bail!("worker {name}: prompt {id} is not in its log");
    };
    if let (Some(answer), Some(usage)) = (&p.answer, &p.usage) {
        return Ok(Some(Sent::Answered(Answer {
            worker: name.to_string(),
            prompt: id.to_string(),
            answer: answer.clone(),
            reason: p.reason.clone(),
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cost_usd: usage.cost_usd,
        })));
    }
    if p.lost {
        return Ok(Some(Sent::Lost {
            worker: name.to_string(),
            prompt: id.to_string(),
        }));
    }
    Ok(match w.phase() {
        Phase::Stopped | Phase::Lost | Phase::Retired => Some(Sent::Waiting {
            worker: name.to_string(),
            prompt: id.to_string(),
            state: w.phase().as_str().to_string(),
        }),
        _ => None,
    })
}
