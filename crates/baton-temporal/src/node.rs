//! A worker node's side of one step, without Temporal: the cached clone of the shared remote, the
//! workflow's worktree at the step's head, the record put in place, `baton run/resume --steps 1`
//! under the process guard (heartbeating while it runs), the commit, and the push of the new head
//! with `--force-with-lease` to the head the step started from.
//!
//! Everything a node keeps is under its folder (`--dir`, default
//! `$XDG_STATE_HOME/baton/nodes/<task queue>`): `repo/` (one clone of the remote, fetched before
//! every step) and `work/<workflow>/` (a linked worktree of it per workflow, reset to the step's
//! head each time). A node's clone is a cache: deleting it loses nothing.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use baton_git::Git;
use baton_process::GroupGuard;
use nix::sys::signal::Signal;
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use crate::mapping::{events_in, outcome_from_output, Progress, StepInput, StepResult};

/// Who and where a worker node is.
#[derive(Debug, Clone)]
pub struct Node {
    /// Shown in the history and `baton status` (default: host name and pid).
    pub name: String,
    pub dir: PathBuf,
    /// The `baton` binary the steps run.
    pub baton_exe: PathBuf,
    /// Apply the settings and role files the remote's commits carry (`baton trust` in each
    /// workflow's worktree); without it they are ignored as in any untrusted project.
    pub trust: bool,
    /// Added to the environment of the steps' children (tests point them at a mock model).
    pub env: Vec<(String, String)>,
}

/// What a child run on a node printed.
#[derive(Debug)]
pub(crate) struct Ran {
    /// The exit code; `None` when a signal ended it.
    pub code: Option<i32>,
    pub status: String,
    pub stdout: String,
    pub stderr: String,
}

baton_protocol::closed_set! {
    /// Why a step can never succeed, however often it is tried: Temporal does not retry it (an
    /// application failure of this type, non-retryable), and the workflow fails at once with it.
    pub enum FinalFailure ("final failure") {
        /// The commit a step starts from is not on the remote: the workflow's work is lost.
        MissingCommit = "baton.MissingCommit",
        /// Someone else moved the workflow's branch (or a Flow's target): the lease is lost.
        BranchMoved = "baton.BranchMoved",
        /// baton refused the step (exit 2: its input or the project's config is wrong), or
        /// would not trust the node's checkout.
        Refused = "baton.Refused",
    }
}

/// A step that could not be carried out. Retried by Temporal (another node may take it) unless
/// it is `final_`: then no attempt can do better.
#[derive(Debug)]
pub struct StepError {
    pub message: String,
    pub final_: Option<FinalFailure>,
}

impl StepError {
    /// A failure a later attempt (on this node or another) may not meet.
    pub fn retry(message: impl Into<String>) -> StepError {
        StepError {
            message: message.into(),
            final_: None,
        }
    }

    /// A failure no attempt can get past.
    pub fn final_(kind: FinalFailure, message: impl Into<String>) -> StepError {
        StepError {
            message: message.into(),
            final_: Some(kind),
        }
    }
}

impl std::fmt::Display for StepError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for StepError {}

fn fail(what: &str, e: impl std::fmt::Display) -> StepError {
    StepError::retry(format!("{what}: {e}"))
}

impl Node {
    pub(crate) fn identity(&self, dir: &Path) -> Git {
        // A node commits as baton unless the machine's git has an identity of its own.
        let g = Git::new(dir);
        if g.run(["var", "GIT_COMMITTER_IDENT"]).is_ok() {
            return g;
        }
        g.with_env("GIT_AUTHOR_NAME", "baton worker node")
            .with_env("GIT_AUTHOR_EMAIL", "baton@localhost")
            .with_env("GIT_COMMITTER_NAME", "baton worker node")
            .with_env("GIT_COMMITTER_EMAIL", "baton@localhost")
    }

    /// The node's clone of `remote`, fetched: `repo/` under the node's folder.
    pub(crate) fn fetched(&self, remote: &str) -> Result<PathBuf, StepError> {
        let repo = self.dir.join("repo");
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| fail("cannot create the node's folder", e))?;
        // One clone and one fetch at a time: a node's slots (or two nodes given one `--dir`)
        // would otherwise clone into the same folder, or fight over its ref locks.
        let lock = std::fs::File::create(self.dir.join("repo.lock"))
            .map_err(|e| fail("cannot open the node's clone lock", e))?;
        lock.lock()
            .map_err(|e| fail("cannot lock the node's clone", e))?;
        if !repo.join(".git").exists() {
            let out = Git::new(&self.dir)
                .run_output(["clone", "-q", "--no-checkout", remote, "repo"])
                .map_err(|e| fail("cannot run git", e))?;
            if !out.status.success() {
                return Err(StepError::retry(format!(
                    "cannot clone {remote}: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                )));
            }
            // The record of a workflow is baton's, never the project's content.
            let exclude = repo.join(".git/info/exclude");
            let mut text = std::fs::read_to_string(&exclude).unwrap_or_default();
            if !text.contains("/.baton/state/") {
                text.push_str("\n/.baton/state/\n");
                std::fs::create_dir_all(repo.join(".git/info"))
                    .and_then(|()| std::fs::write(&exclude, text))
                    .map_err(|e| fail("cannot write the clone's exclude file", e))?;
            }
        }
        let g = Git::new(&repo);
        g.run(["remote", "set-url", "origin", remote])
            .map_err(|e| fail("cannot point the node's clone at the remote", e))?;
        g.run([
            "fetch",
            "-q",
            "--prune",
            "origin",
            "+refs/heads/*:refs/remotes/origin/*",
            "+refs/baton/*:refs/baton/*",
        ])
        .map_err(|e| fail(&format!("cannot fetch from {remote}"), e))?;
        Ok(repo)
    }

    /// The workflow's worktree, checked out (detached) at `head` with nothing else in it but
    /// baton's excluded state.
    pub(crate) fn checkout(&self, repo: &Path, id: &str, head: &str) -> Result<PathBuf, StepError> {
        let work = self.dir.join("work").join(id);
        let g = Git::new(repo);
        if !work.join(".git").exists() {
            std::fs::create_dir_all(self.dir.join("work"))
                .map_err(|e| fail("cannot create the node's work folder", e))?;
            let _ = g.run(["worktree", "prune"]);
            g.run([
                OsString::from("worktree"),
                "add".into(),
                "-q".into(),
                "--detach".into(),
                work.clone().into(),
                head.into(),
            ])
            .map_err(|e| fail(&format!("cannot check out {head}"), e))?;
        } else {
            let w = Git::new(&work);
            w.run(["checkout", "-q", "--detach", "-f", head])
                .map_err(|e| fail(&format!("cannot check out {head}"), e))?;
            w.run(["reset", "-q", "--hard", head])
                .map_err(|e| fail("cannot reset the worktree", e))?;
            w.run(["clean", "-q", "-fd"])
                .map_err(|e| fail("cannot clean the worktree", e))?;
        }
        Ok(work)
    }

    /// Runs one step: see the module's documentation. `previous` is the last heartbeat of the
    /// attempt before this one; `beat` sends this attempt's.
    pub async fn step(
        &self,
        input: &StepInput,
        attempt: u32,
        previous: Option<Progress>,
        beat: &(dyn Fn(Progress) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<StepResult, StepError> {
        // Alive from the start: the activity heartbeats this every second, through the fetch too.
        beat(Progress {
            node: self.name.clone(),
            attempt,
            events: events_in(&input.log),
            pid: None,
        });
        let (remote, given) = (input.remote.clone(), input.clone());
        let (repo, pushed, record) = self
            .off_thread(move |n| {
                let repo = n.fetched(&remote)?;
                // Only a retry can find a result of its own step (a first attempt of a run that
                // goes on from a failed one must not take the failed run's: it has guidance).
                let pushed = match attempt {
                    1 => None,
                    _ => n.pushed_result(&repo, &given)?,
                };
                // The record so far: in the input (a workflow of an older baton), or in the
                // result the step before pushed.
                let record = match &given.record_at {
                    Some(at) if given.log.is_empty() => n.saved_at(&repo, at)?.result.log,
                    _ => given.log.clone(),
                };
                Ok((repo, pushed, record))
            })
            .await?;
        // An attempt that died after its push: its result stands, the agents do not run again.
        // Looked for before anything is launched, on the remote (a heartbeat may never have
        // carried it: the SDK sends them at most every few seconds).
        if let Some(mut r) = pushed {
            // Returned by this attempt on this node; made by the one it takes over from (its
            // last heartbeat when one arrived, else what its result says of it).
            let made = Progress {
                node: r.node.clone(),
                attempt: r.attempt,
                events: events_in(&r.log),
                pid: None,
            };
            r.took_over = Some(previous.unwrap_or(made));
            r.node = self.name.clone();
            r.attempt = attempt;
            return Ok(by_reference(r, input));
        }
        let known = Git::new(&repo)
            .run_output(["cat-file", "-e", &format!("{}^{{commit}}", input.head)])
            .map_err(|e| fail("cannot run git", e))?;
        if !known.status.success() {
            return Err(StepError::final_(
                FinalFailure::MissingCommit,
                format!(
                    "commit {} is not on {}: the workflow's work is missing from the remote",
                    input.head, input.remote
                ),
            ));
        }
        let work = self
            .trusted_checkout(&repo, &input.id, input.base.as_deref(), &input.head)
            .await?;
        if let Some(pin) = input.start.as_ref().and_then(|s| s.plan.as_ref()) {
            if record.is_empty() {
                check_plan(&work, pin)?;
            }
        }
        let state = work.join(".baton/state/workflows");
        std::fs::create_dir_all(&state).map_err(|e| fail("cannot create the state folder", e))?;
        let log_path = state.join(format!("{}.events.jsonl", input.id));
        for suffix in [".events.jsonl", ".json", ".lock"] {
            let _ = std::fs::remove_file(state.join(format!("{}{suffix}", input.id)));
        }
        if !record.is_empty() {
            std::fs::write(&log_path, &record).map_err(|e| fail("cannot write the record", e))?;
        }
        let args = step_args(input);
        let base = Progress {
            node: self.name.clone(),
            attempt,
            events: events_in(&record),
            pid: None,
        };
        let stdout = self
            .run_child(&work, &args, &log_path, &base, beat, cancel)
            .await?;
        let outcome = outcome_from_output(&stdout).map_err(StepError::retry)?;
        let log =
            std::fs::read_to_string(&log_path).map_err(|e| fail("cannot read the record", e))?;
        let (at, given) = (work.clone(), input.clone());
        let head = self.off_thread(move |n| n.commit(&at, &given)).await?;
        let result = StepResult {
            events: events_in(&log),
            log,
            record_at: None,
            head: head.clone(),
            outcome,
            node: self.name.clone(),
            attempt,
            took_over: previous,
        };
        // The result goes to the remote with the head, in one push: an attempt that takes over
        // after it finds it there and returns it. Each attempt pushes a head ref of its own; the
        // workflow's branch moves once, when it completes (`land`).
        beat(Progress {
            events: events_in(&result.log),
            ..base
        });
        let (at, given, pushed) = (work.clone(), input.clone(), result.clone());
        self.off_thread(move |n| n.push_result(&at, &given, &pushed))
            .await?;
        if std::env::var_os(FAULT_EXIT_AFTER_PUSH).is_some() {
            // Fault injection for tests: die as a node killed right after its push would.
            std::process::exit(137);
        }
        Ok(by_reference(result, input))
    }

    /// Pushes the step's whole result (with the head it started from) as a blob to the step's
    /// result ref ([`result_ref`]) and, in the same atomic push, its head to its attempt's ref
    /// when it made one: the next attempt finds the result before it launches anything, and
    /// the next step reads the record from it.
    fn push_result(
        &self,
        work: &Path,
        input: &StepInput,
        result: &StepResult,
    ) -> Result<(), StepError> {
        let saved = Pushed {
            from: input.head.clone(),
            result: result.clone(),
        };
        let text =
            serde_json::to_string(&saved).map_err(|e| fail("cannot encode the result", e))?;
        // Written in the node's own folder, never in the worktree, where the step's agents
        // could have planted a link in its place.
        let results = self.dir.join("results");
        std::fs::create_dir_all(&results).map_err(|e| fail("cannot write the result", e))?;
        let file = results.join(format!(
            "{}-{}-{}.json",
            input.id, input.step, result.attempt
        ));
        let _ = std::fs::remove_file(&file);
        std::fs::write(&file, text).map_err(|e| fail("cannot write the result", e))?;
        let head = &result.head;
        let g = Git::new(work);
        // A blob the ref points at: a reader (the next step's node, `baton log`) fetches the
        // result alone, not the project's files or history.
        let path = file.to_string_lossy().into_owned();
        let saved_blob = g
            .run(["hash-object", "-w", "--", &path])
            .map(|s| s.trim().to_string())
            .map_err(|e| fail("cannot record the result", e));
        let _ = std::fs::remove_file(&file);
        let saved_blob = saved_blob?;
        let to = step_ref(&input.id, input.step, result.attempt);
        let done = result_ref(&input.id, input.step);
        let mut push = vec!["push", "-q", "-f", "--atomic", "origin"];
        // A step that changed nothing has no head of its own to push.
        let head_ref = format!("{head}:{to}");
        if *head != input.head {
            push.push(&head_ref);
        }
        let done_ref = format!("{saved_blob}:{done}");
        push.push(&done_ref);
        g.run(push).map(|_| ()).map_err(|e| {
            fail(
                &format!("cannot push the result of step {} to {done}", input.step),
                e,
            )
        })
    }

    /// The result an earlier attempt of this step pushed ([`Self::push_result`]), when it is
    /// there and was made from this step's starting head.
    fn pushed_result(
        &self,
        repo: &Path,
        input: &StepInput,
    ) -> Result<Option<StepResult>, StepError> {
        let done = result_ref(&input.id, input.step);
        // `fetched` brought every `refs/baton/*` of the remote: a result pushed there is here.
        let g = Git::new(repo);
        let here = g
            .run_output(["rev-parse", "--verify", "-q", &done])
            .is_ok_and(|o| o.status.success());
        if !here {
            return Ok(None);
        }
        let saved = self.saved_at(repo, &done)?;
        let known = g
            .run_output([
                "cat-file",
                "-e",
                &format!("{}^{{commit}}", saved.result.head),
            ])
            .is_ok_and(|o| o.status.success());
        if saved.from != input.head || !known {
            return Ok(None);
        }
        Ok(Some(saved.result))
    }

    /// The result a step pushed to `at` on the remote, in the node's clone since `fetched`.
    fn saved_at(&self, repo: &Path, at: &str) -> Result<Pushed, StepError> {
        read_result(&Git::new(repo), None, at)
    }

    /// The finishing push: `branch` on the remote moved to `head`, leased on `expected` (where the
    /// workflow started). A branch already at `head` is a landing done before (a retried
    /// activity); one anywhere else is moved by someone else, and nothing is pushed.
    pub fn land(
        &self,
        remote: &str,
        branch: &str,
        expected: &str,
        head: &str,
    ) -> Result<(), StepError> {
        let repo = self.fetched(remote)?;
        if let Some(secs) = std::env::var(FAULT_SLOW_LAND)
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
        {
            // Fault injection for tests: a landing whose git takes this long.
            std::thread::sleep(std::time::Duration::from_secs(secs));
        }
        if self.ls_remote(&repo, branch)?.as_deref() == Some(head) {
            return Ok(());
        }
        let lease = format!("--force-with-lease={branch}:{expected}");
        let Err(e) =
            Git::new(&repo).run(["push", "-q", &lease, "origin", &format!("{head}:{branch}")])
        else {
            return Ok(());
        };
        let what = format!("cannot move {branch} to {head} (expected it at {expected})");
        // Where the branch is now says whether a retry can help: somewhere else than where the
        // workflow started (and than its result) is someone else's push, and stays so.
        match self.ls_remote(&repo, branch)? {
            Some(now) if now == head => Ok(()),
            Some(now) if now != expected => Err(StepError::final_(
                FinalFailure::BranchMoved,
                format!(
                    "{what}: someone else moved {branch} to {now}; the workflow's result stays at {head} (land it by hand, or start again from the new {branch})"
                ),
            )),
            _ => Err(fail(&what, e)),
        }
    }

    pub(crate) fn ls_remote(&self, repo: &Path, branch: &str) -> Result<Option<String>, StepError> {
        let out = Git::new(repo)
            .run(["ls-remote", "origin", branch])
            .map_err(|e| fail("cannot read the remote", e))?;
        Ok(out.split_whitespace().next().map(str::to_string))
    }

    /// Checks `head` out in the worktree `name`. A trusting node (`--trust`) first checks out
    /// `trusted` — the commit the workflow or Flow started from, as its starter pushed it — and
    /// runs `baton trust` on that, then checks `head` out over it. What a step or a unit's agent
    /// changed since in the widening settings or role files then fails baton's own hash check
    /// and is ignored, as it is in a local worktree: no model gets its own writes trusted by the
    /// next step. Without `trusted` nothing is trusted.
    pub(crate) async fn trusted_checkout(
        &self,
        repo: &Path,
        name: &str,
        trusted: Option<&str>,
        head: &str,
    ) -> Result<PathBuf, StepError> {
        let checkout = |at: &str| {
            let (repo, name, at) = (repo.to_path_buf(), name.to_string(), at.to_string());
            self.off_thread(move |n| n.checkout(&repo, &name, &at))
        };
        let Some(trusted) = trusted.filter(|_| self.trust) else {
            return checkout(head).await;
        };
        let work = checkout(trusted).await?;
        self.trust_dir(&work).await?;
        if head != trusted {
            checkout(head).await?;
        }
        Ok(work)
    }

    /// Runs `f` (git, files) on a thread of its own: the async threads stay free for the
    /// activity's heartbeats while a fetch, a checkout or a push takes its time.
    pub(crate) async fn off_thread<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Node) -> Result<T, StepError> + Send + 'static,
    ) -> Result<T, StepError> {
        let node = self.clone();
        tokio::task::spawn_blocking(move || f(&node))
            .await
            .map_err(|e| fail("the step's git work ended", e))?
    }

    async fn trust_dir(&self, work: &Path) -> Result<(), StepError> {
        let out = tokio::process::Command::new(&self.baton_exe)
            .arg("trust")
            .current_dir(work)
            .envs(self.env.iter().cloned())
            .stdin(Stdio::null())
            .output()
            .await
            .map_err(|e| fail("cannot run baton trust", e))?;
        if !out.status.success() {
            return Err(StepError::final_(
                FinalFailure::Refused,
                format!(
                    "baton trust failed in {}: {}",
                    work.display(),
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
            ));
        }
        Ok(())
    }

    /// Runs the step's `baton`, heartbeating every second with the record's length.
    async fn run_child(
        &self,
        work: &Path,
        args: &[String],
        log_path: &Path,
        base: &Progress,
        beat: &(dyn Fn(Progress) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<String, StepError> {
        let tick = |pid: u32| {
            let events = std::fs::read_to_string(log_path)
                .map(|l| events_in(&l))
                .unwrap_or(base.events);
            beat(Progress {
                events,
                pid: Some(pid),
                ..base.clone()
            });
        };
        let run = self.run_plain(work, args, &[], &tick, cancel).await?;
        if run.stdout.trim().is_empty() {
            let message = format!(
                "the step's baton ended ({}) without an outcome: {}",
                run.status,
                run.stderr.trim()
            );
            // Exit 2 is baton refusing what it was given: the same step refuses it again.
            return Err(match run.code {
                Some(2) => StepError::final_(FinalFailure::Refused, message),
                _ => StepError::retry(message),
            });
        }
        Ok(run.stdout)
    }

    /// Runs `baton ARGS` in `work` under the process guard, in its own group: nothing of it
    /// outlives this node (the guard kills everything below it when the node dies, even by
    /// SIGKILL). Calls `tick` with the child's pid every second while it runs.
    pub(crate) async fn run_plain(
        &self,
        work: &Path,
        args: &[String],
        env: &[(String, String)],
        tick: &(dyn Fn(u32) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<Ran, StepError> {
        let args: Vec<OsString> = args.iter().map(Into::into).collect();
        let (cmd, link) = baton_process::guard::guarded(self.baton_exe.as_os_str(), &args, None)
            .map_err(|e| fail("cannot start the step", e))?;
        let mut cmd = tokio::process::Command::from(cmd);
        cmd.current_dir(work)
            .envs(self.env.iter().cloned())
            .envs(env.iter().cloned())
            .env_remove("BATON_CHILD")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let mut child = cmd.spawn().map_err(|e| fail("cannot start the step", e))?;
        let pid = child.id().unwrap_or_default();
        let mut guard = GroupGuard::with_link(Some(pid), link);
        let mut out = child.stdout.take();
        let mut err = child.stderr.take();
        let read_out = async {
            let mut s = String::new();
            if let Some(o) = out.as_mut() {
                let _ = o.read_to_string(&mut s).await;
            }
            s
        };
        let read_err = async {
            let mut s = String::new();
            if let Some(e) = err.as_mut() {
                let _ = e.read_to_string(&mut s).await;
            }
            s
        };
        let beats = async {
            let mut every = tokio::time::interval(Duration::from_secs(1));
            loop {
                every.tick().await;
                tick(pid);
            }
        };
        let run = async { tokio::join!(child.wait(), read_out, read_err) };
        let (status, stdout, stderr) = tokio::select! {
            r = run => r,
            _ = beats => unreachable!("the heartbeat loop never ends"),
            _ = cancel.cancelled() => {
                guard.signal(Signal::SIGKILL);
                return Err(StepError::retry("cancelled"));
            }
        };
        guard.signal(Signal::SIGKILL);
        let status = status.map_err(|e| fail("cannot wait for the step", e))?;
        Ok(Ran {
            code: status.code(),
            status: status.to_string(),
            stdout,
            stderr,
        })
    }

    /// Commits what the step changed (baton's state left out; memory and reports are the
    /// workflow's and travel with it) and returns the new head.
    fn commit(&self, work: &Path, input: &StepInput) -> Result<String, StepError> {
        let g = self.identity(work);
        // `.baton/state/` is excluded in the node's clone, so the record is never staged.
        g.run(["add", "-A", "--", "."])
            .map_err(|e| fail("cannot stage the step's change", e))?;
        let staged = g
            .run_output(["diff", "--cached", "--quiet"])
            .map_err(|e| fail("cannot run git", e))?;
        if !staged.status.success() {
            let message = format!("baton {} step {}", input.id, input.step);
            g.run(["commit", "-q", "--no-verify", "-m", &message])
                .map_err(|e| fail("cannot commit the step's change", e))?;
        }
        g.run(["rev-parse", "HEAD"])
            .map(|s| s.trim().to_string())
            .map_err(|e| fail("cannot read the new head", e))
    }
}

/// The plan a planned BUILD's first step builds is, in the node's checkout, the very content
/// its starter approved: a path inside the project (no link on the way, nothing outside it)
/// holding a plan of that SHA-256. Anything else refuses the workflow, naming the plan.
fn check_plan(work: &Path, pin: &crate::mapping::PlanPin) -> Result<(), StepError> {
    let refuse =
        |why: String| StepError::final_(FinalFailure::Refused, format!("plan {}: {why}", pin.path));
    let rel = Path::new(&pin.path);
    if !rel
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)))
    {
        return Err(refuse(
            "not a path inside the project: give a plan file under the project's root".into(),
        ));
    }
    let mut at = work.to_path_buf();
    for part in rel.components() {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(refuse(format!(
                    "{} is a link in the starting commit: a plan is read from a file of the project itself",
                    at.strip_prefix(work).unwrap_or(&at).display()
                )))
            }
            Ok(_) => {}
            Err(e) => {
                return Err(refuse(format!(
                    "not in the starting commit ({e}): commit the plan, then start again"
                )))
            }
        }
    }
    let plan = baton_workflow::plan_file::PlanFile::read(&at).map_err(|e| refuse(e.to_string()))?;
    if plan.sha256 != pin.sha256 {
        return Err(refuse(format!(
            "the starting commit holds another content (sha256 {}) than the one approved ({})",
            plan.sha256, pin.sha256
        )));
    }
    Ok(())
}

/// Set in a worker node's environment (seconds), makes each landing take that much longer: how
/// the tests show a landing slower than the heartbeat timeout stays alive.
pub const FAULT_SLOW_LAND: &str = "BATON_FAULT_NODE_SLOW_LAND";

/// Set in a worker node's environment, makes it exit right after a step's push (before the
/// activity completes): how the tests kill a node at that moment.
pub const FAULT_EXIT_AFTER_PUSH: &str = "BATON_FAULT_NODE_EXIT_AFTER_PUSH";

/// What [`Node::push_result`] records: the result, and the head the step started from.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct Pushed {
    pub from: String,
    pub result: StepResult,
}

/// The result a step pushed to the ref `at`, read in the repository `g` is in: a node's clone
/// (which fetched it already), or, fetched from `remote` first, a bare scratch repository for
/// `baton log` (the ref points at a blob: nothing else comes with it). A ref that holds
/// something else is an error that names it.
pub fn read_result(g: &Git, remote: Option<&str>, at: &str) -> Result<Pushed, StepError> {
    if let Some(remote) = remote {
        g.run(["fetch", "-q", remote, &format!("+{at}:{at}")])
            .map_err(|e| fail(&format!("cannot fetch {at} from {remote}"), e))?;
    }
    let text = g
        .run(["cat-file", "blob", at])
        .map_err(|e| fail(&format!("cannot read {at}"), e))?;
    serde_json::from_str(text.trim_end()).map_err(|e| {
        StepError::final_(
            FinalFailure::Refused,
            format!(
                "{at} does not hold a step's result ({e}): the workflow's record there is damaged"
            ),
        )
    })
}

/// A step's result as the workflow keeps it: the record left at the step's result ref.
fn by_reference(mut r: StepResult, input: &StepInput) -> StepResult {
    r.events = events_in(&r.log);
    r.log = String::new();
    r.record_at = Some(result_ref(&input.id, input.step));
    r
}

/// The ref a step's whole result is pushed to, whichever attempt made it:
/// `refs/baton/<workflow>/result-<n>`.
pub fn result_ref(id: &str, step: u32) -> String {
    format!("refs/baton/{id}/result-{step}")
}

/// The ref one attempt of one step pushes its head to: `refs/baton/<workflow>/step-<n>-<attempt>`.
pub fn step_ref(id: &str, step: u32, attempt: u32) -> String {
    format!("refs/baton/{id}/step-{step}-{attempt}")
}

/// `baton run --id … --steps 1 …` for the first step, `baton resume ID --steps 1 …` after.
pub fn step_args(input: &StepInput) -> Vec<String> {
    let mut a: Vec<String> = Vec::new();
    match (
        &input.start,
        input.log.is_empty() && input.record_at.is_none(),
    ) {
        (Some(s), true) => {
            a.extend(
                [
                    "run",
                    "--engine",
                    "local",
                    "--json",
                    "--steps",
                    "1",
                    "--no-worktree",
                    "--id",
                ]
                .map(String::from),
            );
            a.push(input.id.clone());
            a.extend(["--workflow".to_string(), s.kind.clone()]);
            if s.trivial {
                a.push("--trivial".into());
            }
            if let Some(b) = s.budget_usd {
                a.extend(["--budget-usd".to_string(), b.to_string()]);
            }
            if let Some(b) = s.budget_tokens {
                a.extend(["--budget-tokens".to_string(), b.to_string()]);
            }
            if let Some(p) = &s.plan {
                a.extend(["--plan".to_string(), p.path.clone()]);
            }
            a.push("--".into());
            a.push(s.request.clone());
        }
        _ => {
            a.extend(["resume", "--engine", "local", "--json", "--steps", "1"].map(String::from));
            if let Some(answer) = &input.answer {
                a.extend(["--answer".to_string(), answer.clone()]);
            }
            a.push(input.id.clone());
        }
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mapping::Start;

    fn input(log: &str, answer: Option<&str>) -> StepInput {
        StepInput {
            id: "wf-1".into(),
            step: 1,
            remote: "/r".into(),
            branch: "refs/heads/baton/wf-1".into(),
            head: "abc".into(),
            base: Some("abc".into()),
            log: log.into(),
            record_at: None,
            answer: answer.map(String::from),
            start: Some(Start {
                request: "--add a flag".into(),
                kind: "BUILD".into(),
                trivial: true,
                budget_usd: Some(2.5),
                budget_tokens: None,
                plan: None,
            }),
        }
    }

    #[test]
    fn the_first_step_runs_and_the_others_resume() {
        let first = step_args(&input("", None));
        assert_eq!(
            first[..9],
            [
                "run",
                "--engine",
                "local",
                "--json",
                "--steps",
                "1",
                "--no-worktree",
                "--id",
                "wf-1"
            ]
        );
        assert!(first.contains(&"--trivial".to_string()));
        // The request cannot be taken for a flag.
        assert_eq!(first[first.len() - 2..], ["--", "--add a flag"]);
        let later = step_args(&input("{}\n", Some("all")));
        assert_eq!(
            later,
            ["resume", "--engine", "local", "--json", "--steps", "1", "--answer", "all", "wf-1"]
        );
    }

    /// A fresh node's slots fetch at the same moment: one clones, the other waits for it and
    /// fetches into the same clone (neither is told `repo` already exists).
    #[test]
    fn slots_of_a_fresh_node_fetching_at_once_share_one_clone() {
        let tmp = tempfile::tempdir().unwrap();
        let remote = tmp.path().join("remote.git");
        let git = |args: &[&str]| {
            let ok = std::process::Command::new("git")
                .args(args)
                .env("GIT_AUTHOR_NAME", "t")
                .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
                .env("GIT_COMMITTER_NAME", "t")
                .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
                .status()
                .unwrap();
            assert!(ok.success(), "{args:?}");
        };
        git(&["init", "-q", "--bare", remote.to_str().unwrap()]);
        let seed = tmp.path().join("seed");
        git(&["init", "-q", seed.to_str().unwrap()]);
        git(&[
            "-C",
            seed.to_str().unwrap(),
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "one",
        ]);
        git(&[
            "-C",
            seed.to_str().unwrap(),
            "push",
            "-q",
            remote.to_str().unwrap(),
            "HEAD:refs/heads/main",
        ]);
        for round in 0..3 {
            let node = Node {
                name: "n".into(),
                dir: tmp.path().join(format!("node-{round}")),
                baton_exe: "baton".into(),
                trust: false,
                env: Vec::new(),
            };
            let start = std::sync::Barrier::new(2);
            let results: Vec<Result<PathBuf, StepError>> = std::thread::scope(|s| {
                let all: Vec<_> = (0..2)
                    .map(|_| {
                        s.spawn(|| {
                            start.wait();
                            node.fetched(remote.to_str().unwrap())
                        })
                    })
                    .collect();
                all.into_iter().map(|h| h.join().unwrap()).collect()
            });
            for r in results {
                let repo = r.unwrap_or_else(|e| panic!("round {round}: {e}"));
                assert!(repo.join(".git").exists());
            }
        }
    }

    #[test]
    fn a_plan_is_built_only_from_a_file_of_the_checkout_at_the_approved_content() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir_all(work.join("docs/plans")).unwrap();
        let text = "# P\n\nplan_mode: execution_plan\nverification_rigor: standard\n\n## Acceptance Criteria\n- done\n\n## Phases\n```yaml\n- phase_id: phase-1\n  title: One\n  objective: do it\n  files: [a]\n  checks: [true]\n  exit_criteria: [done]\n  test_seams: [a]\n```\n\n## Open Decisions\nNone\n\n## Differences from agreement\nNone\n";
        std::fs::write(work.join("docs/plans/p.md"), text).unwrap();
        let sha = baton_workflow::plan_file::PlanFile::read(&work.join("docs/plans/p.md"))
            .unwrap()
            .sha256;
        let pin = |path: &str, sha256: &str| crate::mapping::PlanPin {
            path: path.into(),
            sha256: sha256.into(),
        };
        assert!(check_plan(&work, &pin("docs/plans/p.md", &sha)).is_ok());
        let refused = |p: crate::mapping::PlanPin| {
            let e = check_plan(&work, &p).unwrap_err();
            assert_eq!(e.final_, Some(FinalFailure::Refused), "{e}");
            e.message
        };
        assert!(refused(pin("docs/plans/p.md", "0000")).contains("another content"));
        assert!(refused(pin("docs/plans/q.md", &sha)).contains("not in the starting commit"));
        assert!(refused(pin("../work/docs/plans/p.md", &sha)).contains("not a path inside"));
        assert!(refused(pin("/etc/passwd", &sha)).contains("not a path inside"));
        // A committed link to a plan elsewhere is not read through.
        std::fs::write(dir.path().join("outside.md"), text).unwrap();
        std::os::unix::fs::symlink(dir.path().join("outside.md"), work.join("docs/l.md")).unwrap();
        assert!(refused(pin("docs/l.md", &sha)).contains("is a link"));
        std::os::unix::fs::symlink(work.join("docs/plans"), work.join("linked")).unwrap();
        assert!(refused(pin("linked/p.md", &sha)).contains("is a link"));
    }
}
