//! Flows on Temporal: the payloads, and a worker node's two kinds of Flow step.
//!
//! A Flow is one Temporal workflow (`baton.flow`, id = the Flow's id). Its units are implemented
//! as parallel activities (`baton.unit`) on any node: each checks the Flow's base out in a
//! worktree of the node's clone, runs the unit's implementer there — a whole gated BUILD workflow
//! with `--workflow build`, else the implementer role — commits the change (baton's own `.baton/`
//! left out, with a `baton-flow: FLOW/UNIT` trailer) and pushes it to
//! `refs/baton/<flow>/<unit>-<attempt>`. Then, in declared order, one activity per unit
//! (`baton.integrate`) rebases it onto the target branch as the earlier units left it, runs its
//! validation commands (in the sandbox), has the project's reviewer judge it when the unit asks
//! for `review`, and moves the target with `--force-with-lease` on the head it found: the same
//! gate as the local Flow's, on the shared remote.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use baton_exec::delegate::{DelegateReport, EntryReport, EntryStatus};
use baton_exec::guarded::{bounded, run_validation, CommandRules, Validation, EVIDENCE_BOUND};
use baton_flow::UnitSpec;
use baton_git::Git;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::mapping::{outcome_from_output, StepOutcome};
use crate::node::{FinalFailure, Node, StepError};

/// What starts a Flow on Temporal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowInput {
    pub id: String,
    pub units: Vec<UnitSpec>,
    /// Each unit a whole BUILD workflow (`--workflow build`), else the implementer role.
    pub build: bool,
    pub remote: String,
    /// `refs/heads/<branch>`: where the units land.
    pub target: String,
    /// The target's commit when the Flow started; every unit starts from it.
    pub base: String,
    pub heartbeat_timeout_ms: u64,
    /// Units already implemented, by id: their commits, landed without implementing them again
    /// (`baton flow land --engine temporal`).
    #[serde(default)]
    pub implemented: BTreeMap<String, String>,
    /// Where the target is when the target moved on since `base` (a landing); else `base`.
    #[serde(default)]
    pub onto: Option<String>,
    /// The Flow this one goes on from (`flow land`, `flow continue`): its id is in the units'
    /// trailers, and its starting commit is what trusting nodes trust.
    #[serde(default)]
    pub origin: Option<Origin>,
    /// `engine.search_attributes` when it started: the Flow keeps its state in search
    /// attributes too (absent: it keeps none).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub search_attributes: bool,
}

/// The Flow a landing or a continuation goes on from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Origin {
    pub id: String,
    /// Its starting commit, as its starter pushed it.
    pub base: String,
}

/// One unit for a node to implement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnitInput {
    pub flow: String,
    pub unit: UnitSpec,
    pub build: bool,
    pub remote: String,
    pub target: String,
    pub base: String,
    /// The Flow this one goes on from: its trailer and its trusted starting commit.
    #[serde(default)]
    pub origin: Option<Origin>,
}

/// What a node's implementer came to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Implemented {
    pub unit: String,
    pub ok: bool,
    /// The unit's commit on the remote, when it changed anything.
    pub head: Option<String>,
    /// The brief, or why it failed.
    pub summary: String,
    pub node: String,
    pub attempt: u32,
}

/// One unit to land on the target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntegrateInput {
    pub flow: String,
    pub unit: UnitSpec,
    pub remote: String,
    pub target: String,
    /// Where the target is expected (the base, then each landed unit's head).
    pub expected: String,
    pub base: String,
    pub head: String,
    /// The Flow this one goes on from: its trailer and its trusted starting commit.
    #[serde(default)]
    pub origin: Option<Origin>,
}

/// How a unit's landing went. Each is a result, not an activity failure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Integrated {
    Landed {
        sha: String,
        node: String,
    },
    Conflict {
        paths: Vec<String>,
        node: String,
    },
    Invalid {
        command: String,
        output: String,
        node: String,
    },
    /// The unit asked for review and its reviewer did not approve it (or could not be asked).
    Rejected {
        findings: String,
        node: String,
    },
}

baton_protocol::closed_set! {
    /// Where a unit of a Flow on Temporal stands.
    #[derive(Default)]
    pub enum UnitState ("unit state") {
        #[default]
        Implementing = "implementing",
        Implemented = "implemented",
        /// Its implementer or BUILD failed, or it changed nothing.
        Failed = "failed",
        Integrated = "integrated",
        /// Its rebase onto the target conflicted.
        Conflict = "conflict",
        /// A validation command failed.
        Invalid = "invalid",
        /// Its reviewer did not approve it.
        Rejected = "rejected",
        /// An earlier unit stopped the Flow.
        Skipped = "skipped",
    }
}

baton_protocol::closed_set! {
    /// Where a Flow on Temporal stands.
    #[derive(Default)]
    pub enum FlowRun ("Flow state") {
        #[default]
        Implementing = "implementing",
        Integrating = "integrating",
        Completed = "completed",
        Failed = "failed",
    }
}

/// A unit as `baton flow status --engine temporal` shows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UnitRow {
    pub id: String,
    pub name: String,
    pub state: UnitState,
    #[serde(default)]
    pub node: Option<String>,
    #[serde(default)]
    pub head: Option<String>,
    #[serde(default)]
    pub why: Option<String>,
}

/// A Flow on Temporal: its query and its result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FlowStatus {
    pub id: String,
    pub state: FlowRun,
    pub target: String,
    /// The target's head as the Flow left it.
    pub head: String,
    pub units: Vec<UnitRow>,
    /// Why Temporal ended the Flow without a baton outcome (a failure no attempt got past).
    #[serde(default)]
    pub why: Option<String>,
    /// The Flow keeps its state in search attributes too.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub search_attributes: bool,
}

impl FlowStatus {
    /// The status as the Flow's memo keeps it (at most eight units: all of it).
    pub fn tail(&self) -> FlowStatus {
        self.clone()
    }
}

/// The trailer that marks a unit's commit, so a retried landing knows its own.
pub fn trailer(flow: &str, unit: &str) -> String {
    format!("baton-flow: {flow}/{unit}")
}

impl Node {
    /// Implements one unit: see the module's documentation.
    pub async fn implement(
        &self,
        input: &UnitInput,
        attempt: u32,
        beat: &(dyn Fn(u32) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<Implemented, StepError> {
        let remote = input.remote.clone();
        let repo = self.off_thread(move |n| n.fetched(&remote)).await?;
        let name = format!("{}-{}", input.flow, input.unit.id);
        let trusted = input.origin.as_ref().map_or(&input.base, |o| &o.base);
        let work = self
            .trusted_checkout(&repo, &name, Some(trusted), &input.base)
            .await?;
        let branch = input.target.trim_start_matches("refs/heads/");
        let env = [
            ("BATON_FLOW_ID".to_string(), input.flow.clone()),
            ("BATON_FLOW_UNIT".to_string(), input.unit.id.clone()),
        ];
        let done = |ok: bool, head: Option<String>, summary: String| Implemented {
            unit: input.unit.id.clone(),
            ok,
            head,
            summary,
            node: self.name.clone(),
            attempt,
        };
        let (ok, summary) = if input.build {
            let args = baton_flow::build_args(&baton_flow::build_task(&input.unit, branch));
            let run = self.run_plain(&work, &args, &env, beat, cancel).await?;
            match outcome_from_output(&run.stdout) {
                Ok(StepOutcome::Completed { brief }) => (true, brief),
                Ok(o) => (
                    false,
                    format!("its BUILD ended {}: {}", o.state(), brief_of(&o)),
                ),
                Err(e) => (false, format!("{e}: {}", tail(&run.stderr))),
            }
        } else {
            let task = format!(
                "{}\n\nCommit your finished work; it lands on {branch} once these commands pass, run directly without a shell:\n{}",
                input.unit.task.trim_end(),
                input
                    .unit
                    .validation
                    .iter()
                    .map(|c| format!("- `{}`\n", c.display()))
                    .collect::<String>()
            );
            // A session in the unit's worktree, which is its isolation (`baton task` would give
            // the built-in implementer, `isolation: worktree`, a worktree of its own).
            let args = ["agent", "--role", "implementer", "--", task.as_str()].map(String::from);
            let run = self.run_plain(&work, &args, &env, beat, cancel).await?;
            if run.code == Some(0) {
                (true, tail(&run.stdout))
            } else {
                (
                    false,
                    format!("the implementer failed: {}", tail(&run.stderr)),
                )
            }
        };
        if !ok {
            return Ok(done(false, None, summary));
        }
        let origin = input.origin.as_ref().map_or(&input.flow, |o| &o.id);
        let message = format!("{}\n\n{}", input.unit.name, trailer(origin, &input.unit.id));
        baton_flow::commit_change(&self.identity(&work), &message).map_err(StepError::retry)?;
        let head = Git::new(&work)
            .run(["rev-parse", "HEAD"])
            .map(|s| s.trim().to_string())
            .map_err(|e| StepError::retry(format!("cannot read the unit's head: {e}")))?;
        if head == input.base {
            return Ok(done(
                false,
                None,
                format!("{summary}\n(the unit changed nothing)"),
            ));
        }
        let to = format!("refs/baton/{}/{}-{attempt}", input.flow, input.unit.id);
        Git::new(&work)
            .run(["push", "-q", "-f", "origin", &format!("{head}:{to}")])
            .map_err(|e| StepError::retry(format!("cannot push {head} to {to}: {e}")))?;
        Ok(done(true, Some(head), summary))
    }

    /// Lands one unit on the target: see the module's documentation.
    pub async fn integrate(
        &self,
        input: &IntegrateInput,
        attempt: u32,
        beat: &(dyn Fn(u32) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<Integrated, StepError> {
        let remote = input.remote.clone();
        let repo = self.off_thread(move |n| n.fetched(&remote)).await?;
        let node = self.name.clone();
        // Trailers name the Flow that first ran the unit (a landing's or continuation's origin).
        let origin = input.origin.as_ref().map_or(&input.flow, |o| &o.id);
        let mark = trailer(origin, &input.unit.id);
        let now = self.ls_remote(&repo, &input.target)?;
        if now.as_deref() != Some(input.expected.as_str()) {
            // Landed by an attempt that died before it returned?
            if let Some(sha) = &now {
                let message = Git::new(&repo)
                    .run(["log", "-1", "--format=%B", sha])
                    .unwrap_or_default();
                if message.lines().any(|l| l.trim_end() == mark) {
                    return Ok(Integrated::Landed {
                        sha: sha.clone(),
                        node,
                    });
                }
            }
            // No attempt can land on a target someone else moved.
            return Err(StepError::final_(
                FinalFailure::BranchMoved,
                format!(
                    "{} is at {}, not at {} where the Flow left it: someone else moved it",
                    input.target,
                    now.as_deref().unwrap_or("nothing"),
                    input.expected
                ),
            ));
        }
        let name = format!("{}-integrate", input.flow);
        // Trusted as the Flow's base was: its reviewer is the project's own only while no unit
        // changed the reviewer's role file or the widening settings.
        let trusted = input.origin.as_ref().map_or(&input.base, |o| &o.base);
        let work = self
            .trusted_checkout(&repo, &name, Some(trusted), &input.head)
            .await?;
        let git = self.identity(&work);
        if input.expected != input.base {
            let r = git.run_output(["rebase", "-q", "--onto", &input.expected, &input.base]);
            let ok = r.as_ref().is_ok_and(|o| o.status.success());
            if !ok {
                let paths = git
                    .run(["diff", "--name-only", "--diff-filter=U"])
                    .unwrap_or_default()
                    .lines()
                    .map(str::to_string)
                    .collect();
                let _ = git.run(["rebase", "--abort"]);
                return Ok(Integrated::Conflict { paths, node });
            }
        }
        let rebased = git
            .run(["rev-parse", "HEAD"])
            .map(|s| s.trim().to_string())
            .map_err(|e| StepError::retry(format!("cannot read the rebased head: {e}")))?;
        if rebased == input.expected {
            // Every commit of the unit became empty on the target: its change is there already
            // (landed before). Judged by content, not by a message a model could write.
            return Ok(Integrated::Landed { sha: rebased, node });
        }
        let rules = CommandRules::for_config(&baton_protocol::config::Config::default(), &work);
        match run_validation(
            &input.unit.validation,
            &work,
            &[],
            &rules,
            Duration::from_secs(30 * 60),
            cancel,
        )
        .await
        {
            Validation::Passed(_) => {}
            Validation::Failed(results) => {
                let last = results.last().cloned();
                return Ok(Integrated::Invalid {
                    command: last.as_ref().map(|r| r.command.clone()).unwrap_or_default(),
                    output: last.map(|r| r.output).unwrap_or_default(),
                    node,
                });
            }
            Validation::Cancelled => return Err(StepError::retry("cancelled")),
        }
        let sha = rebased;
        if let Some(criterion) = &input.unit.review {
            let at = Reviewing {
                work: &work,
                sha: &sha,
                attempt,
            };
            if let Some(findings) = self.review(input, criterion, at, beat, cancel).await? {
                return Ok(Integrated::Rejected { findings, node });
            }
        }
        let lease = format!("--force-with-lease={}:{}", input.target, input.expected);
        let pushed = git.run([
            "push",
            "-q",
            &lease,
            "origin",
            &format!("{sha}:{}", input.target),
        ]);
        if let Err(e) = pushed {
            let what = format!("cannot move {} to {sha}: {e}", input.target);
            // Where the target is now says whether a retry can help (as for a workflow's
            // landing): moved meanwhile by someone else, it stays so.
            return match self.ls_remote(&repo, &input.target)? {
                Some(now) if now == sha => Ok(Integrated::Landed { sha, node }),
                Some(now) if now != input.expected => Err(StepError::final_(
                    FinalFailure::BranchMoved,
                    format!("{what} (someone else moved it to {now})"),
                )),
                _ => Err(StepError::retry(what)),
            };
        }
        Ok(Integrated::Landed { sha, node })
    }
}

/// What a review looks at: the integration worktree, checked out at the rebased head.
struct Reviewing<'a> {
    work: &'a Path,
    sha: &'a str,
    attempt: u32,
}

impl Node {
    /// Asks the project's `reviewer` role (as the node's worktree resolves it, trusted with
    /// `--trust`) to judge the unit's change onto the target against its criterion: the local
    /// Flow's packet, task and reading of the answer ([`baton_flow::review`]). `None` when it
    /// approves; else what to show.
    async fn review(
        &self,
        input: &IntegrateInput,
        criterion: &str,
        at: Reviewing<'_>,
        beat: &(dyn Fn(u32) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<Option<String>, StepError> {
        use baton_flow::review::{
            packet_in, reviewer_task, too_large, verdict, write_packet, Ended, Verdict,
        };
        let unit = &input.unit.id;
        let base = input.expected.as_str();
        let patch = Git::new(at.work)
            .diff(base, at.sha)
            .map_err(|e| StepError::retry(format!("cannot write the review patch: {e}")))?;
        if let Some(why) = too_large(&patch, base, at.sha) {
            return Ok(Some(why));
        }
        let packet = packet_in(at.work, unit, at.attempt);
        if let Err(e) = write_packet(&packet, &patch) {
            // Something the unit's tree holds is in the way (a link, a file): its own doing.
            return Ok(Some(format!(
                "cannot write the review packet {}: {e}",
                packet.display()
            )));
        }
        let task = reviewer_task(&input.unit, criterion, at.work, base, at.sha, &packet);
        let env = [
            ("BATON_TASK_NAME", unit.clone()),
            ("BATON_FLOW_ID", input.flow.clone()),
            ("BATON_FLOW_UNIT", unit.clone()),
            ("BATON_FLOW_ATTEMPT", at.attempt.to_string()),
            ("BATON_FLOW_BASE", base.to_string()),
            ("BATON_FLOW_TIP", at.sha.to_string()),
            ("BATON_FLOW_PATCH", packet.display().to_string()),
        ]
        .map(|(k, v)| (k.to_string(), v));
        let run = self
            .run_role(at.work, "reviewer", &task, &env, beat, cancel)
            .await;
        let _ = std::fs::remove_file(&packet);
        let e = match run? {
            Ok(e) => e,
            Err(why) => return Ok(Some(format!("the reviewer could not run: {why}"))),
        };
        let ended = match e.status {
            EntryStatus::Done => Ended::Clean,
            EntryStatus::Failed | EntryStatus::Stopped => Ended::Unclean(e.status.as_str().into()),
            EntryStatus::Skipped => Ended::Killed,
        };
        Ok(match verdict(&ended, &e.output) {
            Verdict::Approved => None,
            Verdict::Findings(text) => Some(bounded(&text, EVIDENCE_BOUND)),
            Verdict::NoAnswer => Some(format!(
                "the reviewer did not answer ({}): {}",
                e.status.as_str(),
                entry_why(&e)
            )),
        })
    }

    /// Runs `role` on `task` in `work` through baton's executor (`baton task --role ROLE
    /// --json`), as the local Flow runs its reviewer: a role on any backend works, under the same
    /// limits. The entry's report; `Err` with why when baton refused the task (a role that
    /// does not resolve, say), which no retry would change.
    async fn run_role(
        &self,
        work: &Path,
        role: &str,
        task: &str,
        env: &[(String, String)],
        beat: &(dyn Fn(u32) + Send + Sync),
        cancel: &CancellationToken,
    ) -> Result<Result<EntryReport, String>, StepError> {
        let args = ["task", "--role", role, "--json", "--", task].map(String::from);
        let run = self.run_plain(work, &args, env, beat, cancel).await?;
        #[derive(Deserialize)]
        struct Line {
            report: DelegateReport,
        }
        let report = run
            .stdout
            .lines()
            .rev()
            .filter(|l| l.contains("\"type\":\"report\""))
            .find_map(|l| serde_json::from_str::<Line>(l).ok());
        match report.and_then(|l| l.report.entries.into_iter().next()) {
            Some(entry) => Ok(Ok(entry)),
            None if run.code == Some(2) => Ok(Err(tail(&run.stderr))),
            None => Err(StepError::retry(format!(
                "`baton task --role {role}` gave no report ({}): {}",
                run.status,
                tail(&run.stderr)
            ))),
        }
    }
}

/// Why an entry did not end well: its error, else what it said.
fn entry_why(e: &EntryReport) -> String {
    match &e.error {
        Some(err) => format!("{}: {}", err.code, tail(&err.message)),
        None => tail(&e.output),
    }
}

fn brief_of(o: &StepOutcome) -> String {
    match o {
        StepOutcome::Completed { brief }
        | StepOutcome::Failed { brief }
        | StepOutcome::Stopped { brief } => tail(brief),
        StepOutcome::Checkpoint { checkpoint } => checkpoint.question.clone(),
        StepOutcome::Running => String::new(),
    }
}

/// The last 2,000 bytes of a text, on a char boundary.
fn tail(text: &str) -> String {
    let t = text.trim_end();
    let mut start = t.len().saturating_sub(2000);
    while !t.is_char_boundary(start) {
        start += 1;
    }
    t[start..].to_string()
}

/// A unit's worktree path under the node's folder, for tests.
pub fn unit_work(node_dir: &Path, flow: &str, unit: &str) -> std::path::PathBuf {
    node_dir.join("work").join(format!("{flow}-{unit}"))
}
