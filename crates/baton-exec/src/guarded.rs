//! The guarded command runner: commands run directly (no shell), in a given folder, through the
//! process guard in their own process group, one after another, stopping at the first that
//! fails, optionally sandboxed and with provider keys hidden. stdout and stderr share one pipe so
//! the evidence keeps their order; it is bounded to its start and its end. Flow runs a unit's
//! validation commands with it (re-exported as `baton_flow::validate`), a workflow the
//! scenario commands of a verifier's pass.

use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use baton_process::{GroupGuard, Signal};
use baton_text::ByteSink;
use baton_tool::{EnvFilter, SandboxPolicy};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::executor::{POST_EXIT_HARD, POST_EXIT_IDLE};

/// One validation command, run directly (never through a shell) in the unit's worktree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct ValidationCommand {
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
}

impl ValidationCommand {
    /// The command as a person would type it, for messages (arguments with spaces are quoted).
    pub fn display(&self) -> String {
        std::iter::once(&self.command)
            .chain(self.args.iter())
            .map(|a| quote(a))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:=@%,".contains(c));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// One validation command's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckResult {
    /// The command as typed (for people; it was run without a shell).
    pub command: String,
    pub ok: bool,
    pub exit_code: Option<i32>,
    /// Why it did not run or did not finish (cannot start, timed out, killed by a signal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// stdout and stderr interleaved, bounded.
    pub output: String,
    pub duration_ms: u64,
}

/// Bytes of a command's output kept as evidence.
pub const EVIDENCE_BOUND: usize = 16 * 1024;

/// At most `max` bytes of `text`, terminal controls replaced: a quarter from its start (the
/// command's first words) and the rest from its end (where it says how it failed).
pub fn bounded(text: &str, max: usize) -> String {
    let clean = baton_text::sanitize_terminal(text);
    baton_text::truncate(&clean, max, baton_text::Keep::Ends { head_percent: 25 }).into_owned()
}

/// What validation commands get of baton's environment, and how they are confined.
#[derive(Debug, Clone, Default)]
pub struct CommandRules {
    /// Provider keys and tokens removed from their environment.
    pub env_filter: EnvFilter,
    /// The sandbox they run in, when `flow.validation_sandbox` asks for one (the unit's
    /// worktree is the workspace); `None` runs them with the user's rights.
    pub sandbox: Option<SandboxPolicy>,
}

impl CommandRules {
    /// The rules a project's config asks for.
    pub fn for_config(config: &baton_protocol::config::Config, base: &Path) -> Self {
        // Validation commands run in the sandbox unless the config turns it off: the unit's
        // implementer may have rewritten the script they run.
        let sandbox = (config.flow.validation_sandbox != Some(false)).then(|| {
            SandboxPolicy::from_config(
                config,
                SandboxPolicy::choose_mode(None, None, config.sandbox.mode),
                base,
            )
        });
        CommandRules {
            env_filter: EnvFilter::for_config(config),
            sandbox,
        }
    }
}

/// The outcome of a unit's validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Validation {
    /// Every command exited 0.
    Passed(Vec<CheckResult>),
    /// The last result is the command that failed.
    Failed(Vec<CheckResult>),
    /// Cancelled before it finished.
    Cancelled,
}

/// Runs `commands` in `cwd` with `env` added, each bounded by `timeout`.
pub async fn run_validation(
    commands: &[ValidationCommand],
    cwd: &Path,
    env: &[(String, String)],
    rules: &CommandRules,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Validation {
    let mut results = Vec::with_capacity(commands.len());
    for c in commands {
        let r = match run_one(c, cwd, env, rules, timeout, cancel).await {
            Some(r) => r,
            None => return Validation::Cancelled,
        };
        let ok = r.ok;
        results.push(r);
        if !ok {
            return Validation::Failed(results);
        }
    }
    Validation::Passed(results)
}

/// The command of `c` under a guard (nothing it starts outlives it, even outside its group), in
/// `cwd` with `env` over the rules' filtered environment and, when the rules have one, in their
/// sandbox; its stdout and stderr into the pipe's two write ends; and the guard's link. Why it
/// cannot be built, as the check's error.
fn command(
    c: &ValidationCommand,
    cwd: &Path,
    env: &[(String, String)],
    rules: &CommandRules,
    (writer, writer2): (std::io::PipeWriter, std::io::PipeWriter),
) -> Result<(tokio::process::Command, baton_process::guard::Link), String> {
    // Under a guard: nothing the command starts outlives it, even outside its group.
    let args: Vec<std::ffi::OsString> = c.args.iter().map(Into::into).collect();
    let (guarded, link) =
        match baton_process::guard::guarded(std::ffi::OsStr::new(&c.command), &args, None) {
            Ok(x) => x,
            Err(e) => return Err(format!("cannot start `{}`: {e}", c.command)),
        };
    let mut cmd = tokio::process::Command::from(guarded);
    cmd.current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(writer))
        .stderr(Stdio::from(writer2))
        .process_group(0);
    for name in rules.env_filter.hidden_now() {
        cmd.env_remove(name);
    }
    if let Some(policy) = &rules.sandbox {
        match policy
            .prepare(cwd, None)
            .and_then(|c| c.apply(cmd.as_std_mut(), link.is_guarded()))
        {
            Ok(()) => {}
            Err(e) => {
                return Err(format!(
                    "cannot start `{}`: {e} (or set flow.validation_sandbox = false)",
                    c.command
                ))
            }
        }
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    Ok((cmd, link))
}

/// `None` when cancelled.
async fn run_one(
    c: &ValidationCommand,
    cwd: &Path,
    env: &[(String, String)],
    rules: &CommandRules,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Option<CheckResult> {
    let started = Instant::now();
    let shown = c.display();
    let fail = |error: String, output: String| CheckResult {
        command: shown.clone(),
        ok: false,
        exit_code: None,
        error: Some(error),
        output,
        duration_ms: started.elapsed().as_millis() as u64,
    };
    let (reader, writer) = match std::io::pipe() {
        Ok(p) => p,
        Err(e) => return Some(fail(format!("cannot create a pipe: {e}"), String::new())),
    };
    let writer2 = match writer.try_clone() {
        Ok(w) => w,
        Err(e) => return Some(fail(format!("cannot create a pipe: {e}"), String::new())),
    };
    let (mut cmd, link) = match command(c, cwd, env, rules, (writer, writer2)) {
        Ok(x) => x,
        Err(e) => return Some(fail(e, String::new())),
    };
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => {
            drop(cmd);
            return Some(fail(
                format!("cannot start `{}`: {e}", c.command),
                String::new(),
            ));
        }
    };
    // The parent's copies of the write ends live in `cmd`; drop them so EOF can arrive.
    drop(cmd);
    // Kills the group (through the guard, when there is one) if this future is dropped.
    let mut guard = GroupGuard::with_link(child.id(), link);
    let mut reader = match tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(reader)) {
        Ok(r) => Some(r),
        Err(e) => {
            guard.signal(Signal::SIGKILL);
            let _ = child.wait().await;
            return Some(fail(
                format!("cannot read the command's output: {e}"),
                String::new(),
            ));
        }
    };
    let mut output = output_keeper();
    let mut buf = vec![0u8; 8192];

    let deadline = tokio::time::Instant::now() + timeout;
    let outcome = loop {
        tokio::select! {
            status = child.wait() => break Ok(status),
            _ = tokio::time::sleep_until(deadline) => break Err(false),
            _ = cancel.cancelled() => break Err(true),
            n = read_some(&mut reader, &mut buf) => match n {
                Some(n) => output.push(&buf[..n]),
                None => reader = None,
            },
        }
    };
    // Whatever happened, nothing of the command's group may outlive it.
    guard.signal(Signal::SIGKILL);
    let _ = child.wait().await;
    if matches!(outcome, Err(true)) {
        return None;
    }
    // A descendant outside the group (`setsid`, a daemon) may still hold the pipe: take what is
    // already there, as the executor does, then let go of it.
    let exited = tokio::time::Instant::now();
    let mut last_output = exited;
    while reader.is_some() {
        let until = (last_output + POST_EXIT_IDLE).min(exited + POST_EXIT_HARD);
        tokio::select! {
                _ = tokio::time::sleep_until(until) => break,
            _ = cancel.cancelled() => return None,
            n = read_some(&mut reader, &mut buf) => match n {
                Some(n) => {
                    output.push(&buf[..n]);
                    last_output = tokio::time::Instant::now();
                }
                None => reader = None,
            },
        }
    }
    drop(reader);
    // Terminal controls replaced; the marker and the line breaks around it fit the extra bytes.
    let output = bounded(&output.render(), EVIDENCE_BOUND + 64);
    let duration_ms = started.elapsed().as_millis() as u64;
    match outcome {
        Ok(Ok(status)) => {
            use std::os::unix::process::ExitStatusExt;
            let error = status.signal().map(|s| format!("killed by signal {s}"));
            Some(CheckResult {
                command: shown,
                ok: status.success(),
                exit_code: status.code(),
                error,
                output,
                duration_ms,
            })
        }
        Ok(Err(e)) => Some(fail(format!("cannot wait for the command: {e}"), output)),
        Err(false) => Some(CheckResult {
            command: shown,
            ok: false,
            exit_code: None,
            error: Some(format!(
                "timed out after {}s and was killed",
                timeout.as_secs()
            )),
            output,
            duration_ms,
        }),
        Err(true) => None,
    }
}

/// One read from the pipe: `Some(n)` bytes, `None` at its end (or on an error); never ready
/// without a pipe.
async fn read_some(
    reader: &mut Option<tokio::net::unix::pipe::Receiver>,
    buf: &mut [u8],
) -> Option<usize> {
    use tokio::io::AsyncReadExt;
    match reader {
        Some(r) => match r.read(buf).await {
            Ok(0) | Err(_) => None,
            Ok(n) => Some(n),
        },
        None => std::future::pending().await,
    }
}

/// A keeper of a command's output: its first quarter and last three quarters of
/// [`EVIDENCE_BOUND`], with one exact omission marker between them.
fn output_keeper() -> ByteSink {
    ByteSink::new(EVIDENCE_BOUND / 4, EVIDENCE_BOUND - EVIDENCE_BOUND / 4)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    /// What a refused write says: Landlock's `EACCES` or the read-only mount's `EROFS`.
    fn refused_write(text: &str) -> bool {
        text.contains("Permission denied") || text.contains("Read-only file system")
    }

    use super::*;
    use pretty_assertions::assert_eq;

    fn cmd(command: &str, args: &[&str]) -> ValidationCommand {
        ValidationCommand {
            command: command.into(),
            args: args.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// Runs `commands` in `dir` with no extra environment and the default rules.
    async fn run_plain(
        commands: &[ValidationCommand],
        dir: &Path,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Validation {
        run_validation(
            commands,
            dir,
            &[],
            &CommandRules::default(),
            timeout,
            cancel,
        )
        .await
    }

    #[tokio::test]
    async fn stops_at_the_first_failure_with_interleaved_output() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        let v = run_validation(
            &[
                cmd("true", &[]),
                cmd(
                    "sh",
                    &["-c", "echo out; echo err >&2; echo $FLOW_X; exit 3"],
                ),
                cmd("true", &[]),
            ],
            dir.path(),
            &[("FLOW_X".into(), "seen".into())],
            &CommandRules::default(),
            Duration::from_secs(30),
            &cancel,
        )
        .await;
        let Validation::Failed(results) = v else {
            panic!("expected a failure, got {v:?}")
        };
        assert_eq!(results.len(), 2);
        assert!(results[0].ok);
        assert_eq!(results[1].exit_code, Some(3));
        assert_eq!(results[1].output, "out\nerr\nseen\n");
    }

    #[tokio::test]
    async fn validation_runs_in_the_sandbox_unless_turned_off() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let escape = outside.path().join("escape.txt");
        let script = format!("echo in > inside.txt && echo out > {}", escape.display());
        let commands = [cmd("sh", &["-c", &script])];
        let cancel = CancellationToken::new();
        let sandboxed = CommandRules {
            sandbox: Some(SandboxPolicy::default()),
            ..CommandRules::default()
        };
        let v = run_validation(
            &commands,
            dir.path(),
            &[],
            &sandboxed,
            Duration::from_secs(30),
            &cancel,
        )
        .await;
        let Validation::Failed(results) = v else {
            panic!("expected a failure, got {v:?}")
        };
        assert!(refused_write(&results[0].output), "{results:?}");
        assert!(dir.path().join("inside.txt").is_file());
        assert!(!escape.exists());
        let v = run_plain(&commands, dir.path(), Duration::from_secs(30), &cancel).await;
        assert!(matches!(v, Validation::Passed(_)), "{v:?}");
        assert!(escape.is_file());
        // Sandboxed by default; `flow.validation_sandbox = false` turns it off.
        let mut config = baton_protocol::config::Config::default();
        assert!(CommandRules::for_config(&config, dir.path())
            .sandbox
            .is_some());
        config.flow.validation_sandbox = Some(false);
        assert!(CommandRules::for_config(&config, dir.path())
            .sandbox
            .is_none());
    }

    #[tokio::test]
    async fn a_missing_program_and_a_timeout_are_failures() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        let v = run_plain(
            &[cmd("definitely-not-a-program-xyz", &[])],
            dir.path(),
            Duration::from_secs(30),
            &cancel,
        )
        .await;
        let Validation::Failed(r) = v else { panic!() };
        assert!(r[0].error.as_deref().unwrap().contains("cannot start"));
        let v = run_plain(
            &[cmd("sh", &["-c", "sleep 5 & sleep 5"])],
            dir.path(),
            Duration::from_millis(200),
            &cancel,
        )
        .await;
        let Validation::Failed(r) = v else { panic!() };
        assert!(r[0].error.as_deref().unwrap().contains("timed out"));
    }

    #[tokio::test]
    async fn a_descendant_holding_the_pipe_does_not_hold_up_the_validation() {
        if std::process::Command::new("sh")
            .args(["-c", "command -v setsid"])
            .output()
            .map(|o| !o.status.success())
            .unwrap_or(true)
        {
            eprintln!("skipped: no setsid");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        let started = Instant::now();
        let v = run_plain(
            &[cmd("sh", &["-c", "setsid sleep 100 & echo ok"])],
            dir.path(),
            Duration::from_secs(60),
            &cancel,
        )
        .await;
        let Validation::Passed(r) = v else {
            panic!("expected a pass, got {v:?}")
        };
        assert_eq!(r[0].output, "ok\n");
        // Time is the subject: the validation ended with its command, not with the escaped
        // 100 s sleep that holds the pipe.
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
    }

    #[tokio::test]
    async fn cancelling_stops_a_running_command() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        let c = cancel.clone();
        let started = dir.path().join("started");
        tokio::spawn(async move {
            // Cancelled once the command runs.
            while !started.exists() {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            c.cancel();
        });
        let v = run_plain(
            &[cmd("sh", &["-c", "touch started; sleep 100"])],
            dir.path(),
            Duration::from_secs(60),
            &cancel,
        )
        .await;
        assert_eq!(v, Validation::Cancelled);
    }

    #[tokio::test]
    async fn long_output_keeps_both_ends_with_the_exact_count_cut() {
        let dir = tempfile::tempdir().unwrap();
        // 30 000 lines of "line N", then the failure at the very end.
        let v = run_validation(
            &[cmd(
                "sh",
                &["-c", "seq -f 'line %g' 1 30000; echo 'FAILED: x'; exit 1"],
            )],
            dir.path(),
            &[],
            &CommandRules::default(),
            Duration::from_secs(30),
            &CancellationToken::new(),
        )
        .await;
        let Validation::Failed(results) = v else {
            panic!("expected a failure, got {v:?}")
        };
        let out = &results[0].output;
        assert!(out.len() <= EVIDENCE_BOUND + 64, "{} bytes", out.len());
        assert!(out.starts_with("line 1\nline 2\n"), "{out}");
        assert!(out.ends_with("line 30000\nFAILED: x\n"), "{out}");
        let total: usize = (1..=30000)
            .map(|n| format!("line {n}\n").len())
            .sum::<usize>()
            + "FAILED: x\n".len();
        let (head, rest) = out.split_once("[… ").unwrap();
        let (count, tail) = rest.split_once(" bytes omitted …]\n").unwrap();
        // Whole lines on both sides of the marker, and the count is what is really missing.
        assert!(head.ends_with('\n') && tail.starts_with("line "), "{out}");
        assert_eq!(
            count.parse::<usize>().unwrap(),
            total - head.len() - tail.len()
        );
    }

    #[test]
    fn bounded_keeps_both_ends() {
        let text = format!("{}{}", "a".repeat(5000), "z".repeat(5000));
        let out = bounded(&text, 1000);
        assert!(out.len() <= 1000, "{} bytes", out.len());
        let kept_a = out.chars().take_while(|c| *c == 'a').count();
        let kept_z = out.chars().rev().take_while(|c| *c == 'z').count();
        assert!(
            kept_a > 200 && kept_z > 3 * kept_a - 10,
            "{kept_a} / {kept_z}"
        );
        let omitted = 10_000 - kept_a - kept_z;
        assert!(
            out.contains(&format!("[… {omitted} bytes omitted …]")),
            "{out}"
        );
        assert_eq!(bounded("a\u{1b}[1m", 100), "a\u{FFFD}[1m");
    }
}
