//! The executor: runs one prepared task in one child process under hard limits.
//!
//! - **Concurrency.** At most `max_concurrency` children run at once; further runs wait in FIFO
//!   order (tokio's semaphore is fair). A run gets its permit *before* its launch is prepared, so a
//!   queued run sees the config of the moment it starts, and queued time never counts against its
//!   timeouts.
//! - **Process group.** The child is the leader of a new process group, and every kill goes to the
//!   whole group: SIGTERM first, SIGKILL after [`KILL_GRACE`] (or at once when the leader has
//!   already gone). When the run ends for any reason, what is left of the group gets SIGKILL, and a
//!   guard does the same if the run's future is dropped midway, so children never outlive the run.
//! - **Timeouts.** The idle timeout fires when the child prints nothing on stdout for that long
//!   (for `command` children, stderr counts too); the maximum timeout when it runs that long in
//!   all. Either kills the group and ends in [`ExecErrorCode::Timeout`] with the partial result.
//! - **Cancellation** kills the group and ends in [`ExecErrorCode::Aborted`].
//! - **Draining.** After the leader exits, stdout and stderr are read to EOF, but a descendant
//!   that escaped (say `setsid cmd &`) and keeps a pipe open is cut off after
//!   [`POST_EXIT_IDLE`] without output or [`POST_EXIT_HARD`] in all, so it can never keep the
//!   permit.
//! - **Bounds.** Stdout is split into lines of at most [`crate::types::MAX_EVENT_LINE`] bytes
//!   without ever buffering more ([`LineSplitter`]); stderr keeps its last [`STDERR_TAIL`] bytes; the
//!   assistant-visible output goes through the caller's [`OutputBudget`].
//! - **Activity** is delivered to the caller in the child's order, between reads. A callback that
//!   panics stops the child and ends in [`ExecErrorCode::Callback`] (this relies on unwinding: in a
//!   build with `panic = "abort"` the process aborts instead). After a stop has begun, no further
//!   activity is delivered.

use std::future::Future;
use std::io;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use baton_process::{GroupGuard, Signal};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio::sync::Semaphore;
use tokio::time::{sleep_until, Instant};
use tokio_util::sync::CancellationToken;

use crate::backend::{parser_for, ParsedEnd, StreamParser, Verdict};
pub use crate::limits::OutputBudget;
use crate::limits::{LineSplitter, Piece, STDERR_TAIL};
use crate::types::{
    Activity, ChildResult, ChildStatus, ExecError, ExecErrorCode, Launch, Limits, SkippedLines,
    StreamFormat,
};
use baton_text::ByteSink;

/// After the child exits, a pipe that stays silent this long is cut off.
pub const POST_EXIT_IDLE: Duration = Duration::from_millis(250);
/// After the child exits, pipes are cut off this long after the exit at the latest.
pub const POST_EXIT_HARD: Duration = Duration::from_secs(1);
/// Between SIGTERM and SIGKILL when the executor stops a child.
pub const KILL_GRACE: Duration = Duration::from_secs(1);

const STDOUT_CHUNK: usize = 64 * 1024;
const STDERR_CHUNK: usize = 8 * 1024;

/// Runs children under a concurrency cap. Cheap to share by reference; clones share the cap.
#[derive(Debug, Clone)]
pub struct Executor {
    permits: Arc<Semaphore>,
    max: usize,
    /// The project-wide ceiling, across processes: `slot-<i>.lock` files under this folder, one
    /// held (flock) by each running child of any baton process of the project.
    slots: Option<Arc<std::path::PathBuf>>,
}

/// Why the executor stopped a child before it ended by itself.
#[derive(Debug)]
enum Stop {
    Cancelled,
    Idle(Duration),
    Max(Duration),
    Callback(String),
}

impl Executor {
    /// An executor running at most `max_concurrency` children at once (at least one).
    pub fn new(max_concurrency: usize) -> Self {
        let max = max_concurrency.max(1);
        Executor {
            permits: Arc::new(Semaphore::new(max)),
            max,
            slots: None,
        }
    }

    /// The same cap also held project-wide: a child starts only when one of `max` slot files
    /// under `dir` is free, whichever baton process of the project (a foreground call, each
    /// background supervisor, a Flow, a workflow) runs it (seed 004: one cap per Main).
    pub fn with_project_slots(mut self, dir: std::path::PathBuf) -> Self {
        self.slots = Some(Arc::new(dir));
        self
    }

    /// A free project slot, held until the returned lock drops; waits (polling, cancellable),
    /// saying so once through `on_activity`. `None` without project slots.
    async fn project_slot(
        &self,
        cancel: &CancellationToken,
        on_activity: &mut (dyn FnMut(Activity) + Send),
    ) -> Result<Option<baton_state::FileLock>, ExecError> {
        let Some(dir) = &self.slots else {
            return Ok(None);
        };
        baton_state::create_own_dir(dir).map_err(|e| {
            ExecError::new(
                ExecErrorCode::Prepare,
                format!("cannot create {}: {e}", dir.display()),
            )
        })?;
        let mut said = false;
        loop {
            for i in 0..self.max {
                match baton_state::FileLock::try_acquire(&dir.join(format!("slot-{i}.lock"))) {
                    Ok(Some(lock)) => return Ok(Some(lock)),
                    Ok(None) => {}
                    Err(e) => {
                        return Err(ExecError::new(
                            ExecErrorCode::Prepare,
                            format!("cannot take a project slot in {}: {e}", dir.display()),
                        ))
                    }
                }
            }
            if !said {
                said = true;
                on_activity(Activity::Waiting {
                    reason: format!(
                        "all {} project slots are taken by other baton processes of this project",
                        self.max
                    ),
                });
            }
            tokio::select! {
                biased;
                _ = cancel.cancelled() => {
                    return Err(ExecError::new(ExecErrorCode::Aborted, "cancelled while waiting for a project slot"));
                }
                _ = tokio::time::sleep(Duration::from_millis(50)) => {}
            }
        }
    }

    pub fn max_concurrency(&self) -> usize {
        self.max
    }

    /// Children running now (permits taken).
    pub fn running(&self) -> usize {
        self.max - self.permits.available_permits()
    }

    /// Waits (FIFO) for a permit, then calls `prepare` — so a queued run sees current config and,
    /// for instance, creates its worktree only once it may run — then spawns the child and
    /// supervises it to its end. An error from `prepare` is returned with code `prepare`.
    /// Cancellation while queued or preparing returns `aborted` without starting a child.
    pub async fn run<P, F>(
        &self,
        prepare: P,
        limits: Limits,
        budget: &OutputBudget,
        cancel: &CancellationToken,
        on_activity: &mut (dyn FnMut(Activity) + Send),
    ) -> Result<ChildResult, ExecError>
    where
        P: FnOnce() -> F,
        F: Future<Output = Result<Launch, ExecError>>,
    {
        let _permit = tokio::select! {
            biased;
            _ = cancel.cancelled() => {
                return Err(ExecError::new(ExecErrorCode::Aborted, "cancelled while waiting for a free executor slot"));
            }
            permit = self.permits.acquire() => permit.map_err(|_| {
                ExecError::new(ExecErrorCode::Aborted, "the executor was shut down")
            })?,
        };
        let _slot = self.project_slot(cancel, on_activity).await?;
        let launch = prepare().await.map_err(|e| ExecError {
            code: ExecErrorCode::Prepare,
            ..e
        })?;
        if cancel.is_cancelled() {
            return Err(ExecError::new(
                ExecErrorCode::Aborted,
                "cancelled before the child started",
            ));
        }
        supervise(launch, limits, budget, cancel, on_activity).await
    }
}

async fn read_some<R: AsyncRead + Unpin>(
    pipe: &mut Option<R>,
    buf: &mut [u8],
) -> io::Result<usize> {
    match pipe {
        Some(p) => p.read(buf).await,
        None => std::future::pending().await,
    }
}

/// Calls the callback for each event, stopping at the first panic.
fn deliver(
    on_activity: &mut (dyn FnMut(Activity) + Send),
    pending: &mut Vec<Activity>,
) -> Result<(), String> {
    for activity in pending.drain(..) {
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| on_activity(activity))) {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            return Err(format!("the activity callback failed: {what}"));
        }
    }
    Ok(())
}

fn spawn_error(launch: &Launch, err: &io::Error) -> ExecError {
    let program = launch.program.display();
    let fix = match launch.format {
        StreamFormat::Baton => "set executor.programs.baton to the baton binary".to_string(),
        StreamFormat::Pi => "install pi or set executor.programs.pi to its path".to_string(),
        StreamFormat::Codex => {
            "install codex or set executor.programs.codex to its path".to_string()
        }
        StreamFormat::Claude => {
            "install Claude Code or set executor.programs.claude to its path".to_string()
        }
        StreamFormat::Plain => "fix the role's `command`".to_string(),
    };
    let message = match err.kind() {
        io::ErrorKind::NotFound => format!("cannot start `{program}`: program not found; {fix}"),
        io::ErrorKind::PermissionDenied => {
            format!("cannot start `{program}`: permission denied (is it executable?); {fix}")
        }
        _ => format!("cannot start `{program}`: {err}"),
    };
    ExecError::new(ExecErrorCode::Spawn, message)
}

async fn supervise(
    launch: Launch,
    limits: Limits,
    budget: &OutputBudget,
    cancel: &CancellationToken,
    on_activity: &mut (dyn FnMut(Activity) + Send),
) -> Result<ChildResult, ExecError> {
    let spawned = spawn_child(&launch)?;
    // Removed when the child is done.
    let _child_tmp = spawned.tmp;
    let mut child = spawned.child;
    let started = Instant::now();
    let pid = child.id().unwrap_or(0);
    let guard = GroupGuard::with_link(Some(pid), spawned.link);

    // The task goes in on its own task, so a child that reads slowly cannot block the reading of
    // its output; the pipe is closed when the text is written.
    let writer = match (launch.stdin.clone(), child.stdin.take()) {
        (Some(text), Some(mut stdin)) => Some(tokio::spawn(async move {
            let _ = stdin.write_all(text.as_bytes()).await;
            let _ = stdin.shutdown().await;
        })),
        _ => None,
    };

    let mut watch = Watch {
        stdout: child.stdout.take(),
        stderr: child.stderr.take(),
        out_buf: vec![0u8; STDOUT_CHUNK],
        err_buf: vec![0u8; STDERR_CHUNK],
        reader: StreamReader::new(launch.format),
        // The stderr tail only: the last lines say how a child ended.
        tail: ByteSink::new(0, STDERR_TAIL),
        pending: vec![Activity::Started {
            pid,
            start_time: baton_process::Identity::of(pid).ok().map(|i| i.start_time),
        }],
        limits,
        max_deadline: started + limits.max_timeout,
        idle_deadline: started + limits.idle_timeout,
        stderr_is_activity: launch.format == StreamFormat::Plain,
        exit_code: None,
        exited_at: None,
        last_output: started,
        stop: None,
        kill_at: None,
        guard,
    };

    if let Err(msg) = deliver(on_activity, &mut watch.pending) {
        watch.stop = Some(Stop::Callback(msg));
        watch.guard.signal(Signal::SIGTERM);
        watch.kill_at = Some(Instant::now() + KILL_GRACE);
    }
    watch.run_to_end(&mut child, cancel, on_activity).await;
    watch.guard.sweep();
    if let Some(w) = writer {
        w.abort();
    }
    watch.outcome(&launch, budget, started)
}

/// A child spawned: the process, the link to the guard it runs under, and the temp dir of a
/// confined child.
struct Spawned {
    child: tokio::process::Child,
    link: baton_process::guard::Link,
    tmp: Option<tempfile::TempDir>,
}

/// Spawns the child of `launch` in a process group of its own, under the guard and (a confined
/// child) its role's sandbox; the spawned child, or why it could not start.
fn spawn_child(launch: &Launch) -> Result<Spawned, ExecError> {
    if !launch.cwd.is_dir() {
        return Err(ExecError::new(
            ExecErrorCode::Spawn,
            format!(
                "cannot start `{}`: its working directory {} does not exist",
                launch.program.display(),
                launch.cwd.display()
            ),
        ));
    }
    // The child runs under a guard (a mode of the baton binary) that kills everything it leaves
    // behind, and everything at all when this process dies, even by SIGKILL.
    let args: Vec<std::ffi::OsString> = launch.args.iter().map(Into::into).collect();
    let path = launch
        .env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| std::ffi::OsStr::new(v.as_str()));
    let (guarded, link) = baton_process::guard::guarded(launch.program.as_os_str(), &args, path)
        .map_err(|e| spawn_error(launch, &e))?;
    let mut cmd = Command::from(guarded);
    cmd.envs(launch.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&launch.cwd)
        .stdin(if launch.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // A confined child (a `command` role): its role's sandbox, with a temp dir of its own, and
    // only the allowed environment.
    let tmp = match &launch.confine {
        Some(c) => {
            for name in c.env.hidden_now() {
                cmd.env_remove(name);
            }
            // Private to the user, a random name, removed when the child is done.
            let tmp = tempfile::Builder::new()
                .prefix("baton-child-")
                .tempdir()
                .map_err(|e| spawn_error(launch, &e))?;
            cmd.env("TMPDIR", tmp.path());
            c.policy
                .prepare(&launch.cwd, Some(tmp.path()))
                .and_then(|x| x.apply(cmd.as_std_mut(), link.is_guarded()))
                .map_err(|e| {
                    ExecError::new(
                        ExecErrorCode::Spawn,
                        format!("cannot start `{}`: {e}", launch.program.display()),
                    )
                })?;
            Some(tmp)
        }
        None => None,
    };
    let child = cmd.spawn().map_err(|e| spawn_error(launch, &e))?;
    Ok(Spawned { child, link, tmp })
}

/// One child watched to its end: its pipes and what was read of them, the activity not yet
/// delivered, its deadlines, how it ended or is being stopped, and the guard of its group.
struct Watch {
    stdout: Option<tokio::process::ChildStdout>,
    stderr: Option<tokio::process::ChildStderr>,
    out_buf: Vec<u8>,
    err_buf: Vec<u8>,
    reader: StreamReader,
    tail: ByteSink,
    pending: Vec<Activity>,
    limits: Limits,
    max_deadline: Instant,
    idle_deadline: Instant,
    stderr_is_activity: bool,
    exit_code: Option<i32>,
    exited_at: Option<Instant>,
    last_output: Instant,
    stop: Option<Stop>,
    kill_at: Option<Instant>,
    /// Last, so it is dropped after the pipes.
    guard: GroupGuard,
}

impl Watch {
    /// Reads the child's pipes and delivers its activity until it has exited and its pipes are
    /// done with, stopping it at a cancel, a timeout or a failed callback.
    async fn run_to_end(
        &mut self,
        child: &mut tokio::process::Child,
        cancel: &CancellationToken,
        on_activity: &mut (dyn FnMut(Activity) + Send),
    ) {
        loop {
            if self.exited_at.is_some() && self.stdout.is_none() && self.stderr.is_none() {
                break;
            }
            let deadline = match (self.exited_at, self.kill_at) {
                (Some(t), _) => (self.last_output + POST_EXIT_IDLE).min(t + POST_EXIT_HARD),
                (None, Some(k)) => k,
                (None, None) => self.idle_deadline.min(self.max_deadline),
            };
            let mut begin_stop: Option<Stop> = None;
            tokio::select! {
                biased;
                _ = cancel.cancelled(), if self.stop.is_none() && self.exited_at.is_none() => {
                    begin_stop = Some(Stop::Cancelled);
                }
                _ = sleep_until(deadline) => {
                    let now = Instant::now();
                    if self.exited_at.is_some() {
                        // An escaped descendant holds a pipe: stop listening to it.
                        self.stdout = None;
                        self.stderr = None;
                    } else if self.kill_at.is_some() {
                        self.guard.signal(Signal::SIGKILL);
                        self.kill_at = None;
                    } else if now >= self.max_deadline {
                        begin_stop = Some(Stop::Max(self.limits.max_timeout));
                    } else if now >= self.idle_deadline {
                        begin_stop = Some(Stop::Idle(self.limits.idle_timeout));
                    }
                }
                status = child.wait(), if self.exited_at.is_none() => {
                    let now = Instant::now();
                    self.exit_code = status.ok().and_then(|s| s.code());
                    self.exited_at = Some(now);
                    self.last_output = self.last_output.max(now);
                    if self.stop.is_some() {
                        self.guard.signal(Signal::SIGKILL);
                        self.kill_at = None;
                    }
                }
                n = read_some(&mut self.stderr, &mut self.err_buf) => match n {
                    Ok(n) if n > 0 => {
                        self.tail.push(&self.err_buf[..n]);
                        self.last_output = Instant::now();
                        if self.stderr_is_activity {
                            self.idle_deadline = self.last_output + self.limits.idle_timeout;
                        }
                    }
                    Ok(_) | Err(_) => self.stderr = None,
                },
                n = read_some(&mut self.stdout, &mut self.out_buf) => match n {
                    Ok(n) if n > 0 => {
                        let now = Instant::now();
                        self.last_output = now;
                        self.idle_deadline = now + self.limits.idle_timeout;
                        self.reader.feed(&self.out_buf[..n], &mut self.pending);
                    }
                    Ok(_) | Err(_) => self.stdout = None,
                },
            }
            if self.stdout.is_none() {
                self.reader.eof();
            }
            self.settle(begin_stop, on_activity);
        }
    }

    /// After one step: begins the stop `begin_stop` asks for, or delivers the pending activity
    /// (a callback that fails stops the child).
    fn settle(&mut self, begin_stop: Option<Stop>, on_activity: &mut (dyn FnMut(Activity) + Send)) {
        if let Some(reason) = begin_stop {
            self.stop = Some(reason);
            self.pending.clear();
            self.guard.signal(Signal::SIGTERM);
            self.kill_at = Some(Instant::now() + KILL_GRACE);
        }
        if self.stop.is_some() {
            self.pending.clear();
        } else if !self.pending.is_empty() {
            if let Err(msg) = deliver(on_activity, &mut self.pending) {
                self.stop = Some(Stop::Callback(msg));
                self.pending.clear();
                if self.exited_at.is_some() {
                    self.guard.signal(Signal::SIGKILL);
                } else {
                    self.guard.signal(Signal::SIGTERM);
                    self.kill_at = Some(Instant::now() + KILL_GRACE);
                }
            }
        }
    }

    /// The child's result (its final text charged to `budget`), or the error that ended the run
    /// with that result as its partial one.
    fn outcome(
        &mut self,
        launch: &Launch,
        budget: &OutputBudget,
        started: Instant,
    ) -> Result<ChildResult, ExecError> {
        let exit_code = self.exit_code;
        let (end, skipped) = self.reader.finish();
        let (output, omitted) = if end.final_text.is_empty() && end.final_omitted == 0 {
            (String::new(), 0)
        } else {
            budget.take_counted(&end.final_text, end.final_omitted)
        };
        let mut result = ChildResult {
            status: ChildStatus::Failure,
            exit_code,
            output,
            omitted,
            stderr: self.tail.render(),
            stop_reason: end.stop_reason.clone(),
            usage: end.usage,
            turns: end.turns,
            tools_started: end.tools_started,
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            error_message: end.error_message.clone(),
            cost_usd: end.cost_usd,
            session_id: end.session_id.clone(),
            skipped,
        };
        let failed = |code: ExecErrorCode, message: String, partial: ChildResult| ExecError {
            code,
            message,
            partial: Some(Box::new(partial)),
        };
        if let Some(stop) = self.stop.take() {
            return Err(match stop {
                Stop::Cancelled => failed(
                    ExecErrorCode::Aborted,
                    "cancelled: the child's process group was killed".into(),
                    result,
                ),
                Stop::Idle(d) => failed(
                    ExecErrorCode::Timeout,
                    format!("idle timeout: no output from the child for {}", human(d)),
                    result,
                ),
                Stop::Max(d) => failed(
                    ExecErrorCode::Timeout,
                    format!("maximum timeout: the child ran longer than {}", human(d)),
                    result,
                ),
                Stop::Callback(msg) => failed(ExecErrorCode::Callback, msg, result),
            });
        }
        let exit_ok = exit_code == Some(0);
        let verdict = match end.verdict {
            Verdict::NoFinal | Verdict::Failed
                if launch.format == StreamFormat::Baton && exit_code == Some(3) =>
            {
                Verdict::TurnLimit
            }
            v => v,
        };
        match verdict {
            Verdict::TurnLimit => Err(failed(
                ExecErrorCode::TurnLimit,
                "the child stopped at its turn limit; its output is a handoff report".into(),
                result,
            )),
            Verdict::TokenLimit => Err(failed(
                ExecErrorCode::TokenLimit,
                "the model's output token limit cut the child's answer".into(),
                result,
            )),
            Verdict::NoFinal if exit_ok && launch.format != StreamFormat::Plain => Err(failed(
                ExecErrorCode::Protocol,
                format!(
                    "`{}` exited 0 without a final event in its {} stream",
                    launch.program.display(),
                    format_name(launch.format)
                ),
                result,
            )),
            Verdict::NoFinal | Verdict::Failed => Ok(result),
            Verdict::Completed => {
                if exit_ok {
                    result.status = ChildStatus::Success;
                }
                Ok(result)
            }
        }
    }
}

/// Reads one child's stdout: splits it into bounded lines, hands them to the format's parser and
/// counts what it had to skip. The executor feeds it every chunk it reads; the parse benchmark
/// drives the same code.
pub struct StreamReader {
    splitter: LineSplitter,
    parser: Box<dyn StreamParser>,
    raw: bool,
    skipped: SkippedLines,
}

impl StreamReader {
    pub fn new(format: StreamFormat) -> Self {
        let parser = parser_for(format);
        StreamReader {
            splitter: LineSplitter::default(),
            raw: parser.wants_raw(),
            parser,
            skipped: SkippedLines::default(),
        }
    }

    /// Feeds the next chunk of stdout; activity it completes is appended to `out` in order.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<Activity>) {
        if self.raw {
            self.parser.raw(chunk);
            return;
        }
        let (parser, skipped) = (&mut self.parser, &mut self.skipped);
        self.splitter.push(chunk, &mut |piece| match piece {
            Piece::Line(line) => {
                if parser.line(line, out).is_err() {
                    skipped.malformed += 1;
                }
            }
            Piece::Oversized { prefix, len } => {
                skipped.oversized += 1;
                parser.oversized(prefix, len, out);
            }
        });
    }

    /// The stream ended (or was cut off): an unterminated last line is counted and dropped.
    pub fn eof(&mut self) {
        if self.splitter.finish().is_some() {
            self.skipped.partial += 1;
        }
    }

    /// What the stream said so far, and what was skipped.
    pub fn finish(&mut self) -> (ParsedEnd, SkippedLines) {
        (self.parser.finish(), self.skipped)
    }
}

fn format_name(format: StreamFormat) -> &'static str {
    match format {
        StreamFormat::Baton => "baton",
        StreamFormat::Pi => "pi",
        StreamFormat::Codex => "codex",
        StreamFormat::Claude => "claude",
        StreamFormat::Plain => "plain",
    }
}

fn human(d: Duration) -> String {
    let ms = d.as_millis();
    if !ms.is_multiple_of(1000) {
        format!("{ms} ms")
    } else if !ms.is_multiple_of(60_000) || ms == 0 {
        format!("{} s", ms / 1000)
    } else {
        format!("{} min", ms / 60_000)
    }
}
