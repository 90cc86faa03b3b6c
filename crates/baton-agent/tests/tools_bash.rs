#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `bash`: exit codes, output bounds, timeouts and cancellation killing whole process groups.

// Inside `tools` so that `cargo nextest run -p baton-agent tools` selects these tests.
mod tools {
    use std::fs;
    use std::path::Path;
    use std::time::{Duration, Instant};

    use baton_agent::tools::{BashTool, Tool, ToolContext, ToolOutput};
    use serde_json::{json, Value};

    fn workspace() -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path()).with_bash_timeout(Duration::from_secs(30));
        (dir, ctx)
    }

    async fn bash(args: Value, ctx: &ToolContext) -> ToolOutput {
        BashTool.run(args, ctx).await
    }

    /// Whether `pid` is gone: no such process, or only a zombie waiting for its reaper.
    fn is_dead(pid: i32) -> bool {
        match fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => {
                // The state follows the parenthesised command name.
                let state = stat
                    .rsplit_once(')')
                    .map(|(_, rest)| rest.trim_start().chars().next());
                matches!(state, Some(Some('Z' | 'X')))
            }
        }
    }

    /// Polls until `pid` is dead, up to a deadline.
    fn wait_dead(pid: i32, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        loop {
            if is_dead(pid) {
                return true;
            }
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Polls for a pid written to `file` by the command.
    async fn wait_pid_file(file: &Path, within: Duration) -> i32 {
        let deadline = Instant::now() + within;
        loop {
            if let Ok(text) = fs::read_to_string(file) {
                if let Ok(pid) = text.trim().parse() {
                    return pid;
                }
            }
            assert!(
                Instant::now() < deadline,
                "the command never wrote {}",
                file.display()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[tokio::test]
    async fn success_and_exit_codes() {
        let (_d, ctx) = workspace();
        let out = bash(json!({"command": "echo hello; echo oops >&2"}), &ctx).await;
        assert!(!out.is_error, "{}", out.output);
        assert_eq!(out.exit_code, Some(0));
        assert_eq!(out.output, "hello\noops\n");
        assert_eq!(out.path, None);

        let out = bash(json!({"command": "echo partial; exit 3"}), &ctx).await;
        assert!(out.is_error);
        assert_eq!(out.exit_code, Some(3));
        assert_eq!(out.output, "partial\n[exit code 3]");

        let out = bash(json!({"command": "true"}), &ctx).await;
        assert_eq!(out.output, "(no output)");

        let out = bash(json!({"command": "kill -KILL $$"}), &ctx).await;
        assert!(out.is_error);
        assert_eq!(out.exit_code, Some(137));
        assert!(out.output.contains("SIGKILL"), "{}", out.output);
    }

    #[tokio::test]
    async fn runs_in_cwd_with_stdin_closed() {
        let (_d, ctx) = workspace();
        fs::create_dir(ctx.root.join("sub")).unwrap();
        let ctx = ctx.with_cwd("sub");
        let out = bash(json!({"command": "pwd; cat; echo done"}), &ctx).await;
        assert!(!out.is_error, "{}", out.output);
        let expected = format!("{}\ndone\n", ctx.root.join("sub").display());
        assert_eq!(out.output, expected);
    }

    #[tokio::test]
    async fn stdout_and_stderr_are_interleaved_in_order() {
        let (_d, ctx) = workspace();
        let out = bash(
            json!({"command": "echo 1; echo 2 >&2; echo 3; echo 4 >&2"}),
            &ctx,
        )
        .await;
        assert_eq!(out.output, "1\n2\n3\n4\n");
    }

    #[tokio::test]
    async fn long_output_keeps_head_and_tail() {
        let (_d, ctx) = workspace();
        let out = bash(json!({"command": "seq 1 100000"}), &ctx).await;
        assert!(!out.is_error);
        assert!(out.output.starts_with("1\n2\n3\n"), "{}", &out.output[..50]);
        assert!(out.output.ends_with("99999\n100000\n"));
        assert!(out.output.contains(" bytes omitted …]"));
        assert!(out.output.len() < 32 * 1024, "{}", out.output.len());
    }

    #[tokio::test]
    async fn timeout_kills_the_whole_process_group() {
        let (dir, ctx) = workspace();
        let started = Instant::now();
        let out = bash(
            json!({"command": "echo before; sleep 30 & echo $! > pid; wait", "timeout": 1}),
            &ctx,
        )
        .await;
        let elapsed = started.elapsed();
        assert!(out.is_error);
        assert_eq!(out.exit_code, None);
        assert!(out.output.starts_with("before\n"), "{}", out.output);
        assert!(out.output.contains("timed out after 1s"), "{}", out.output);
        // Time is the subject: the 1 s timeout ended the command, not its own 30 s sleep.
        assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
        let pid = wait_pid_file(&dir.path().join("pid"), Duration::from_secs(1)).await;
        assert!(
            wait_dead(pid, Duration::from_secs(5)),
            "background sleep {pid} survived the timeout"
        );
    }

    #[tokio::test]
    async fn timeout_escalates_to_sigkill() {
        let (dir, ctx) = workspace();
        let started = Instant::now();
        let out = bash(
        json!({"command": "trap '' TERM; sh -c 'trap \"\" TERM; echo $$ > pid; sleep 30' & wait", "timeout": 0.5}),
        &ctx,
    )
    .await;
        assert!(out.is_error);
        assert!(
            out.output.contains("timed out after 0.5s"),
            "{}",
            out.output
        );
        // Time is the subject: the 0.5 s timeout ended the command, not its own long sleep.
        assert!(started.elapsed() < Duration::from_secs(10));
        let pid = wait_pid_file(&dir.path().join("pid"), Duration::from_secs(1)).await;
        assert!(
            wait_dead(pid, Duration::from_secs(5)),
            "TERM-ignoring child {pid} survived"
        );
    }

    #[tokio::test]
    async fn background_processes_do_not_outlive_the_command() {
        let (dir, ctx) = workspace();
        let out = bash(
            json!({"command": "sleep 30 & echo $! > pid; echo started"}),
            &ctx,
        )
        .await;
        assert!(!out.is_error, "{}", out.output);
        assert_eq!(out.exit_code, Some(0));
        assert!(out.output.starts_with("started\n"), "{}", out.output);
        let pid = wait_pid_file(&dir.path().join("pid"), Duration::from_secs(1)).await;
        assert!(
            wait_dead(pid, Duration::from_secs(5)),
            "background sleep {pid} survived"
        );
    }

    #[tokio::test]
    async fn an_escaped_process_holding_the_pipe_does_not_hang_the_tool() {
        let (dir, ctx) = workspace();
        if std::process::Command::new("setsid")
            .arg("--version")
            .output()
            .is_err()
        {
            return; // util-linux `setsid` is not installed here
        }
        let started = Instant::now();
        let out = bash(json!({
        // Wait until the child has left the group (it writes its pid only after `setsid`), so
        // the final group kill cannot catch it.
        "command": "setsid sh -c 'echo $$ > pid; exec sleep 30' & while [ ! -s pid ]; do sleep 0.01; done; echo main done"
    }), &ctx).await;
        // Time is the subject: the call ended with its command, not with the escaped 30 s sleep.
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(out.exit_code, Some(0), "{}", out.output);
        assert!(out.output.contains("main done"), "{}", out.output);
        // Clean up the escaped process ourselves.
        let pid = wait_pid_file(&dir.path().join("pid"), Duration::from_secs(2)).await;
        if let Ok(escaped) = baton_process::Identity::of(pid as u32) {
            escaped.signal(baton_process::Signal::SIGKILL);
        }
        assert!(wait_dead(pid, Duration::from_secs(5)));
    }

    #[tokio::test]
    async fn cancellation_kills_the_group_promptly() {
        let (dir, ctx) = workspace();
        let cancel = ctx.cancel.clone();
        let task_ctx = ctx.clone();
        let task = tokio::spawn(async move {
            bash(
                json!({"command": "sleep 30 & p=$!; echo waiting; echo $p > pid; wait"}),
                &task_ctx,
            )
            .await
        });
        let pid = wait_pid_file(&dir.path().join("pid"), Duration::from_secs(5)).await;
        let cancelled_at = Instant::now();
        cancel.cancel();
        let out = tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .unwrap()
            .unwrap();
        // Time is the subject: the cancel ended the command at once, not at the end of its sleep.
        assert!(
            cancelled_at.elapsed() < Duration::from_secs(3),
            "{:?}",
            cancelled_at.elapsed()
        );
        assert!(out.is_error);
        assert_eq!(out.exit_code, None);
        assert!(out.output.contains("cancelled"), "{}", out.output);
        assert!(out.output.contains("waiting"), "{}", out.output);
        assert!(
            wait_dead(pid, Duration::from_secs(5)),
            "background sleep {pid} survived cancellation"
        );
    }

    #[tokio::test]
    async fn requested_timeout_is_capped() {
        let (_d, ctx) = workspace();
        let ctx = ctx.with_bash_timeout(Duration::from_millis(100));
        let out = bash(json!({"command": "sleep 5", "timeout": 100}), &ctx).await;
        assert!(out.is_error);
        assert!(out.output.contains("timed out after 1s"), "{}", out.output);
        assert!(out.output.contains("capped"), "{}", out.output);
    }

    #[tokio::test]
    async fn empty_command_is_an_error() {
        let (_d, ctx) = workspace();
        let out = bash(json!({"command": "   "}), &ctx).await;
        assert!(out.is_error);
        assert!(out.output.contains("`command` is empty"));
    }

    #[tokio::test]
    async fn the_default_sandbox_writes_only_the_workspace_and_temp_dir() {
        let (dir, ctx) = workspace();
        let tmp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let policy = ctx.sandbox.clone();
        let ctx = ctx.with_sandbox(policy, Some(tmp.path().to_path_buf()));
        let cmd = format!(
            "echo in > inside.txt && echo t > \"$TMPDIR/t.txt\" && echo out > {}/escape.txt",
            outside.path().display()
        );
        let out = bash(json!({"command": cmd}), &ctx).await;
        assert!(out.is_error, "{out:?}");
        assert!(super::refused_write(&out.output), "{}", out.output);
        assert!(dir.path().join("inside.txt").is_file());
        assert!(tmp.path().join("t.txt").is_file());
        assert!(!outside.path().join("escape.txt").exists());
    }

    #[tokio::test]
    async fn read_only_writes_nothing_in_the_workspace_and_full_access_writes_anywhere() {
        use baton_agent::tools::{SandboxMode, SandboxPolicy};
        let (dir, ctx) = workspace();
        let outside = tempfile::tempdir().unwrap();
        let ro = SandboxPolicy {
            mode: SandboxMode::ReadOnly,
            ..SandboxPolicy::default()
        };
        let ctx_ro = ctx.clone().with_sandbox(ro, None);
        let out = bash(json!({"command": "echo x > made.txt"}), &ctx_ro).await;
        assert!(out.is_error, "{out:?}");
        assert!(!dir.path().join("made.txt").exists());
        let full = SandboxPolicy {
            mode: SandboxMode::DangerFullAccess,
            ..SandboxPolicy::default()
        };
        let ctx_full = ctx.with_sandbox(full, None);
        let cmd = format!("echo x > {}/made.txt", outside.path().display());
        let out = bash(json!({"command": cmd}), &ctx_full).await;
        assert!(!out.is_error, "{out:?}");
        assert!(outside.path().join("made.txt").is_file());
    }

    #[tokio::test]
    async fn the_network_is_off_by_default() {
        let (_dir, ctx) = workspace();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let cmd = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
        let out = bash(json!({"command": cmd}), &ctx).await;
        assert!(out.is_error, "{out:?}");
        assert!(!out.output.contains("connected"), "{}", out.output);
        let on = baton_agent::tools::SandboxPolicy {
            network: true,
            ..ctx.sandbox.clone()
        };
        let ctx = ctx.with_sandbox(on, None);
        let out = bash(json!({"command": cmd}), &ctx).await;
        assert!(!out.is_error, "{out:?}");
        assert!(out.output.contains("connected"), "{}", out.output);
    }
}

/// What a refused write says: Landlock's `EACCES` or the read-only mount's `EROFS`.
fn refused_write(text: &str) -> bool {
    text.contains("Permission denied") || text.contains("Read-only file system")
}
