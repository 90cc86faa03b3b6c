//! `bash`: run a shell command in the working directory.
//!
//! The command runs as `bash -c` (or `sh -c` where bash is missing) in a process group of its
//! own, with stdin closed and stdout and stderr sharing one pipe, so the model sees them
//! interleaved as a terminal would show them. When the command ends, times out or is
//! cancelled, the whole process group is killed: nothing the command started in the
//! background outlives the call. Reading the pipe afterwards is bounded in time, so a process
//! that left the group and still holds the pipe cannot hang the tool.
//!
//! The command runs confined by the context's sandbox (`baton-sandbox`): by default it may
//! write only under the workspace root, the session's temp dir and `/dev/null`, and it has no
//! network. When the kernel cannot confine it, nothing runs and the error names the config key.

use std::os::fd::{AsFd as _, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use baton_process::guard::served;
use baton_process::{GroupGuard, Signal};
use baton_text::ByteSink;
use tokio::io::AsyncReadExt;
use tokio::time::Instant;

use baton_tool::args::{parse_tool_args, schema_for, Seconds};
use schemars::JsonSchema;
use serde::Deserialize;

use super::paths::Workspace;
use super::{Tool, ToolContext, ToolOutput};

const USAGE: &str = r#"{"command": "cargo test -p mycrate", "timeout": 300}"#;
/// Bytes kept from the start of the output.
pub(crate) const HEAD_BYTES: usize = 10 * 1024;
/// Bytes kept from the end of the output.
pub(crate) const TAIL_BYTES: usize = 20 * 1024;
/// A call may ask for at most this many times the context's default timeout.
const MAX_TIMEOUT_FACTOR: u32 = 10;
/// Between SIGTERM and SIGKILL on timeout.
const TERM_GRACE: Duration = Duration::from_millis(1000);
/// How long output is still read after the command ended on its own.
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(2);
/// How long output is still read after the command was killed.
const DRAIN_AFTER_KILL: Duration = Duration::from_millis(500);
/// How long to wait for the shell to be reaped after SIGKILL.
const REAP_WAIT: Duration = Duration::from_secs(5);

/// What `bash` takes; its JSON Schema is the tool's `parameters`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct BashArgs {
    /// The shell command line to run.
    command: String,
    /// Timeout in seconds for this call; defaults to the host's setting.
    timeout: Option<Seconds>,
}

/// The `bash` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct BashTool;

#[async_trait::async_trait]
impl Tool for BashTool {
    fn name(&self) -> &'static str {
        "bash"
    }

    fn spec(&self) -> baton_protocol::ToolSpec {
        baton_protocol::ToolSpec {
            name: "bash".to_owned(),
            description: format!(
                "Run a shell command with `bash -c` in the working directory. stdin is closed (nothing can \
                 prompt for input); stdout and stderr are returned together, keeping the first {} KiB and \
                 the last {} KiB when longer. A non-zero exit code is reported as an error along with the \
                 output. The command is killed, with everything it started, when it times out (`timeout` \
                 seconds; default set by the host, at most {MAX_TIMEOUT_FACTOR}x that) and when it finishes: \
                 background processes do not survive the call. The host may sandbox the command: writes \
                 outside the workspace and its temp dir ($TMPDIR) and network access can be refused \
                 (Permission denied, or Read-only file system for the repository's control files and .baton/). Use it for builds, tests, git and other programs; prefer `read`, `grep`, `find` and `ls` for looking at files.",
                HEAD_BYTES / 1024,
                TAIL_BYTES / 1024
            ),
            parameters: schema_for::<BashArgs>(),
        }
    }

    fn read_only(&self) -> bool {
        false
    }

    async fn run(&self, args: serde_json::Value, ctx: &ToolContext) -> ToolOutput {
        let (command, timeout) = match parse_tool_args::<BashArgs>("bash", USAGE, args) {
            Ok(a) => (a.command, a.timeout.map(|s| s.0)),
            Err(msg) => return ToolOutput::error(msg),
        };
        if command.trim().is_empty() {
            return ToolOutput::error("`command` is empty; give a shell command line to run");
        }
        let max = ctx.bash_timeout.saturating_mul(MAX_TIMEOUT_FACTOR);
        let (timeout, capped) = match timeout {
            None => (ctx.bash_timeout, false),
            Some(secs) => {
                let asked = Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX);
                if asked > max && max > Duration::ZERO {
                    (max, true)
                } else {
                    (asked, false)
                }
            }
        };
        let ws = match Workspace::new(ctx) {
            Ok(ws) => ws,
            Err(e) => return ToolOutput::error(e.0),
        };
        if !ws.cwd.is_dir() {
            return ToolOutput::error(format!(
                "the working directory {} does not exist",
                ws.cwd.display()
            ));
        }
        match run_command(&command, &ws.cwd, timeout, ctx).await {
            Ok(mut out) => {
                if capped && out.is_error && out.exit_code.is_none() {
                    out.output.push_str(&format!(
                        "\n[the requested timeout was capped at {}]",
                        fmt_duration(timeout)
                    ));
                }
                out
            }
            Err(e) => ToolOutput::error(format!("could not start the command: {e}")),
        }
    }
}

/// The shell to run commands with: bash when it can be found, otherwise `sh`.
fn shell() -> &'static Path {
    static SHELL: OnceLock<PathBuf> = OnceLock::new();
    SHELL.get_or_init(|| {
        let fixed = ["/bin/bash", "/usr/bin/bash"]
            .into_iter()
            .map(PathBuf::from)
            .find(|p| p.is_file());
        fixed
            .or_else(|| {
                std::env::var_os("PATH").and_then(|paths| {
                    std::env::split_paths(&paths)
                        .map(|d| d.join("bash"))
                        .find(|p| p.is_file())
                })
            })
            .unwrap_or_else(|| PathBuf::from("/bin/sh"))
    })
}

enum End {
    Exited(ExitStatus),
    TimedOut,
    Cancelled,
    WaitFailed(std::io::Error),
}

async fn run_command(
    command: &str,
    cwd: &Path,
    timeout: Duration,
    ctx: &ToolContext,
) -> std::io::Result<ToolOutput> {
    if ctx.cancel.is_cancelled() {
        return Ok(ToolOutput::error(
            "[cancelled before the command started; nothing was run]",
        ));
    }
    let Started {
        mut child,
        rx,
        mut guard,
        watch,
    } = match start(command, cwd, ctx)? {
        Ok(started) => started,
        Err(refused) => return Ok(refused),
    };

    let started = Instant::now();
    let deadline = started + timeout;
    let mut out = Output {
        rx,
        sink: ByteSink::new(HEAD_BYTES, TAIL_BYTES),
        buf: vec![0u8; 16 * 1024],
        eof: false,
    };

    let end = wait_end(&mut child, &mut out, deadline, ctx).await;
    let mut notes = stop(&end, &mut child, &mut guard, &mut out).await;
    // Final sweep, then let the guard's drop send one more SIGKILL (harmless if empty).
    guard.signal(Signal::SIGKILL);
    drop(guard);
    if let Some(undone) = watch.map(|w| w.restore()).filter(|u| !u.is_empty()) {
        notes.push(format!(
            "[the command changed files that are read-only to it; baton undid it: {}]",
            undone.join("; ")
        ));
    }
    Ok(command_output(end, &out.sink, notes, timeout, started))
}

/// A command started: its shell, the read end of its output pipe, the guard over its process
/// group, and the watch over the protected files it may not change.
struct Started {
    child: Shell,
    rx: tokio::net::unix::pipe::Receiver,
    guard: GroupGuard,
    watch: Option<baton_tool::Watch>,
}

/// The command's output as it is read: the pipe, what is kept of it, the read buffer, and
/// whether the pipe reached EOF.
struct Output {
    rx: tokio::net::unix::pipe::Receiver,
    sink: ByteSink,
    buf: Vec<u8>,
    eof: bool,
}

/// The started shell: baton's own child (no guard), or a guard the guard server forked for it,
/// whose end comes as a status message on its channel (the guard is not baton's child).
enum Shell {
    Child(tokio::process::Child),
    Served {
        channel: tokio::net::UnixStream,
        got: Vec<u8>,
        status: Option<ExitStatus>,
    },
}

impl Shell {
    /// Waits for the shell to end; cancel-safe, and again after it ended (the same status).
    async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        let (channel, got, status) = match self {
            Shell::Child(child) => return child.wait().await,
            Shell::Served {
                channel,
                got,
                status,
            } => (channel, got, status),
        };
        if let Some(s) = status {
            return Ok(*s);
        }
        let mut buf = [0u8; 16];
        while got.len() < served::STATUS_LEN {
            let n = channel.read(&mut buf).await?;
            if n == 0 {
                // The guard is gone without a word: it was killed, and the command with it.
                let killed = ExitStatus::from_raw(Signal::SIGKILL as i32);
                *status = Some(killed);
                return Ok(killed);
            }
            got.extend_from_slice(&buf[..n]);
        }
        let s = served::read_status(&got[..served::STATUS_LEN])
            .ok_or_else(|| std::io::Error::other("the command's guard sent a damaged status"))?;
        *status = Some(s);
        Ok(s)
    }
}

/// Spawns `command` in `cwd` under the guard and the context's sandbox, its output into one
/// pipe; the started command, or the error result when the temp dir or sandbox refuses it.
fn start(
    command: &str,
    cwd: &Path,
    ctx: &ToolContext,
) -> std::io::Result<Result<Started, ToolOutput>> {
    // One pipe for both streams. tokio creates it close-on-exec, so no other child spawned
    // concurrently inherits the write end (which would keep the pipe from ever reaching EOF).
    let (tx, rx) = tokio::net::unix::pipe::pipe()?;
    let out_fd: OwnedFd = tx.into_blocking_fd()?;
    let err_fd = out_fd.try_clone()?;

    // Under a guard (when the binary has one): what the command leaves running is killed when
    // it ends, even if it left the process group, and everything dies with baton. The guard
    // server forks the command's guard (see `baton_process::guard::served`).
    let guarded = baton_process::guard::program().is_some();
    let mut cmd = std::process::Command::new(shell());
    cmd.args(["-c", command])
        .current_dir(cwd)
        .env("PWD", cwd)
        .env("PAGER", "cat")
        .env("GIT_PAGER", "cat")
        .env("GIT_TERMINAL_PROMPT", "0");
    // Provider keys and tokens stay out of what the model runs (and out of what it reads back).
    for name in ctx.env_filter.hidden_now() {
        cmd.env_remove(name);
    }
    if let Some(tmp) = &ctx.tmp_dir {
        // Created on first use, private to the user.
        use std::os::unix::fs::DirBuilderExt;
        match std::fs::DirBuilder::new().mode(0o700).create(tmp) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tmp.is_dir() => {}
            Err(e) => {
                return Ok(Err(ToolOutput::error(format!(
                    "cannot create the session's temp dir {}: {e}",
                    tmp.display()
                ))))
            }
        }
        cmd.env("TMPDIR", tmp);
    }
    // Confined before exec, so the shell and all it starts inherit the rules. A sandbox the
    // kernel cannot provide refuses to run the command at all.
    // Under a guard, the guard confines the command and stays outside the sandbox itself, so
    // the command cannot stop it.
    // The protected control files as they are before the command: put back afterwards should
    // anything have changed them (defence in depth behind the read-only binds).
    let mut watch = None;
    if let Err(e) = ctx
        .sandbox
        .prepare(&ctx.root, ctx.tmp_dir.as_deref())
        .and_then(|c| {
            watch = c.spec().map(|s| baton_tool::Watch::of(&s.writable));
            c.apply(&mut cmd, guarded)
        })
    {
        return Ok(Err(ToolOutput::error(e.to_string())));
    }
    let (shell, guard) = if guarded {
        let null = std::fs::File::open("/dev/null")?;
        let Some((started, link)) =
            served::spawn(&cmd, [null.as_fd(), out_fd.as_fd(), err_fd.as_fd()])?
        else {
            return Err(std::io::Error::other(
                "the process guard was turned off meanwhile",
            ));
        };
        // Our copies of the write end go now, so EOF can arrive.
        drop((out_fd, err_fd));
        started.channel.set_nonblocking(true)?;
        let shell = Shell::Served {
            channel: tokio::net::UnixStream::from_std(started.channel)?,
            got: Vec::new(),
            status: None,
        };
        (shell, GroupGuard::with_link(Some(started.pid), link))
    } else {
        let mut cmd = tokio::process::Command::from(cmd);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::from(out_fd))
            .stderr(Stdio::from(err_fd))
            .process_group(0);
        let spawned = cmd.spawn();
        // The command object holds our copies of the write end; drop them so EOF can arrive.
        drop(cmd);
        let child = spawned?;
        // Kills the group if this future is dropped half-way (the agent loop aborting the call).
        let guard = GroupGuard::new(child.id());
        (Shell::Child(child), guard)
    };
    Ok(Ok(Started {
        child: shell,
        rx,
        guard,
        watch,
    }))
}

/// Reads the command's output until it exits, times out at `deadline` or is cancelled; how it
/// ended.
async fn wait_end(
    child: &mut Shell,
    out: &mut Output,
    deadline: Instant,
    ctx: &ToolContext,
) -> End {
    loop {
        tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => break End::Cancelled,
            _ = tokio::time::sleep_until(deadline) => break End::TimedOut,
            status = child.wait() => break match status {
                Ok(s) => End::Exited(s),
                Err(e) => End::WaitFailed(e),
            },
            read = out.rx.read(&mut out.buf), if !out.eof => match read {
                Ok(0) | Err(_) => out.eof = true,
                Ok(n) => out.sink.push(&out.buf[..n]),
            },
        }
    }
}

/// Kills what is left of the command's group as its `end` asks and reads the rest of its
/// output, for a bounded time; the notes on what was killed or left unread.
async fn stop(
    end: &End,
    child: &mut Shell,
    guard: &mut GroupGuard,
    out: &mut Output,
) -> Vec<String> {
    let mut notes: Vec<String> = Vec::new();
    let drain_for = match end {
        End::Exited(_) => {
            // The shell is gone; whatever it left running in its group goes too.
            // A guard has killed what was left (and said so in the output) before it answered.
            if !guard.is_guarded() && guard.alive() {
                guard.signal(Signal::SIGKILL);
                notes.push(
                    "[processes the command left running in the background were killed when it finished]"
                        .to_owned(),
                );
            }
            DRAIN_AFTER_EXIT
        }
        End::TimedOut => {
            guard.signal(Signal::SIGTERM);
            let _ = tokio::time::timeout(TERM_GRACE, drain_while(child, out)).await;
            guard.signal(Signal::SIGKILL);
            let _ = tokio::time::timeout(REAP_WAIT, child.wait()).await;
            DRAIN_AFTER_KILL
        }
        End::Cancelled | End::WaitFailed(_) => {
            guard.signal(Signal::SIGKILL);
            let _ = tokio::time::timeout(REAP_WAIT, child.wait()).await;
            DRAIN_AFTER_KILL
        }
    };
    // Read what is left in the pipe, but not forever: a process that escaped the group
    // (setsid, double fork) may hold the write end open indefinitely.
    if !out.eof {
        let drained = tokio::time::timeout(drain_for, async {
            loop {
                match out.rx.read(&mut out.buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => out.sink.push(&out.buf[..n]),
                }
            }
        })
        .await;
        if drained.is_err() {
            notes.push(
                "[stopped reading output: a process that left the command's process group still holds it open]"
                    .to_owned(),
            );
        }
    }
    notes
}

/// The tool's result: the kept output (`sink`), then a note on how the command ended (it ran
/// `timeout` at most, from `started`) and the other `notes`.
fn command_output(
    end: End,
    sink: &ByteSink,
    mut notes: Vec<String>,
    timeout: Duration,
    started: Instant,
) -> ToolOutput {
    let mut text = sink.render();
    if text.is_empty() {
        text.push_str("(no output)");
    }
    let mut out = ToolOutput::default();
    match end {
        End::Exited(status) => {
            if let Some(code) = status.code() {
                out.exit_code = Some(code);
                if code != 0 {
                    out.is_error = true;
                    notes.insert(0, format!("[exit code {code}]"));
                }
            } else if let Some(sig) = status.signal() {
                out.exit_code = Some(128 + sig);
                out.is_error = true;
                let name = Signal::try_from(sig)
                    .map(|s| s.as_str())
                    .unwrap_or("unknown signal");
                notes.insert(
                    0,
                    format!(
                        "[terminated by signal {sig} ({name}); exit code {}]",
                        128 + sig
                    ),
                );
            }
        }
        End::TimedOut => {
            out.is_error = true;
            notes.insert(
                0,
                format!(
                    "[timed out after {}; the command and everything it started were killed. Output so far is \
                     shown above. Pass a larger `timeout` if it needs longer]",
                    fmt_duration(timeout)
                ),
            );
        }
        End::Cancelled => {
            out.is_error = true;
            notes.insert(
                0,
                format!(
                    "[cancelled after {}; the command and everything it started were killed]",
                    fmt_duration(started.elapsed())
                ),
            );
        }
        End::WaitFailed(e) => {
            out.is_error = true;
            notes.insert(
                0,
                format!("[could not wait for the command: {e}; it was killed]"),
            );
        }
    }
    if !notes.is_empty() {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&notes.join("\n"));
    }
    out.output = text;
    out
}

/// Keeps reading output until the shell exits.
async fn drain_while(child: &mut Shell, out: &mut Output) {
    loop {
        tokio::select! {
            _ = child.wait() => return,
            read = out.rx.read(&mut out.buf), if !out.eof => match read {
                Ok(0) | Err(_) => out.eof = true,
                Ok(n) => out.sink.push(&out.buf[..n]),
            },
        }
    }
}

fn fmt_duration(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{secs:.1}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(fmt_duration(Duration::from_secs(5)), "5s");
        assert_eq!(fmt_duration(Duration::from_millis(1500)), "1.5s");
    }

    #[test]
    fn finds_a_shell() {
        assert!(shell().is_file() || shell() == Path::new("/bin/sh"));
    }
}
