//! Workflows on Temporal from the command line: `baton run/resume/status/log --engine temporal`
//! (the client: start, answer, query) and `baton worker-node` (a machine that runs their steps).
//! Built only with the `temporal` feature; without it each says how to get a baton that has it.

use std::path::PathBuf;

use anyhow::Result;
use baton_app::exit::Exit;
use baton_app::project::ProjectContext;
use baton_protocol::config::{Config, EngineKind};
use clap::Args;

// `baton worker-node`: run workflow steps on this machine.
#[derive(Args, Debug)]
pub struct WorkerNodeArgs {
    /// Task queue to poll (default: `engine.task_queue`, else `baton`)
    #[arg(long, value_name = "Q")]
    pub task_queue: Option<String>,
    /// Steps this machine runs at once
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub slots: usize,
    /// The node's clone and worktrees (default: $XDG_STATE_HOME/baton/nodes/QUEUE)
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// The node's name in histories and status (default: host and pid)
    #[arg(long)]
    pub name: Option<String>,
    /// Apply the settings and roles the remote's commits carry (`baton trust` per worktree)
    #[arg(long)]
    pub trust: bool,
    /// Replay saved histories (`baton log --history` or `temporal workflow show -o json`) against
    /// this binary's workflow code, then exit
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub check_history: Vec<PathBuf>,
    /// Directory whose project config (`[engine]`) applies
    #[arg(long)]
    pub cwd: Option<PathBuf>,
}

/// The engine a command runs on: its `--engine`, else `engine.kind`, else local.
pub fn engine_kind(flag: Option<EngineKind>, config: &Config) -> EngineKind {
    flag.or(config.engine.kind).unwrap_or_default()
}

/// What `baton run --engine temporal` starts.
#[cfg_attr(not(feature = "temporal"), allow(dead_code))]
pub struct StartRequest {
    pub request: String,
    pub kind: baton_workflow::route::WorkflowKind,
    pub trivial: bool,
    pub budget_usd: Option<f64>,
    pub budget_tokens: Option<u64>,
    pub json: bool,
    /// `--plan FILE`, as given (from the working directory).
    pub plan: Option<std::path::PathBuf>,
}

#[cfg(not(feature = "temporal"))]
mod imp {
    use super::*;

    fn not_built() -> Result<Exit> {
        errln!("baton: {}", baton_temporal::NOT_BUILT);
        Ok(Exit::Refused)
    }

    pub fn run(_ctx: &ProjectContext, _r: StartRequest) -> Result<Exit> {
        not_built()
    }
    pub fn resume(
        _ctx: &ProjectContext,
        _id: &str,
        _answer: Option<&str>,
        _json: bool,
    ) -> Result<Exit> {
        not_built()
    }
    pub fn status(_ctx: &ProjectContext, _id: Option<&str>, _json: bool) -> Result<Exit> {
        not_built()
    }
    pub fn log(
        _ctx: &ProjectContext,
        _id: &str,
        _json: bool,
        _history: Option<&std::path::Path>,
    ) -> Result<Exit> {
        not_built()
    }
    pub fn worker_node(_args: WorkerNodeArgs) -> Result<Exit> {
        not_built()
    }
    pub fn flow_start(
        _ctx: &ProjectContext,
        _units: Vec<baton_flow::UnitSpec>,
        _build: bool,
        _json: bool,
    ) -> Result<Exit> {
        not_built()
    }
    pub fn flow_status(_ctx: &ProjectContext, _id: &str, _json: bool) -> Result<Exit> {
        not_built()
    }
    pub fn flow_land(_ctx: &ProjectContext, _id: &str, _unit: &str, _json: bool) -> Result<Exit> {
        not_built()
    }
    pub fn flow_continue(
        _ctx: &ProjectContext,
        _id: &str,
        _guidance: &str,
        _json: bool,
    ) -> Result<Exit> {
        not_built()
    }
    pub async fn doctor(ctx: &ProjectContext) -> baton_app::documents::DoctorEngine {
        let e = &ctx.config.config.engine;
        baton_app::documents::DoctorEngine {
            ok: false,
            address: e.address.clone().unwrap_or_default(),
            namespace: e.namespace.clone().unwrap_or_default(),
            task_queue: e.task_queue.clone().unwrap_or_default(),
            remote: e.remote.clone(),
            nodes: Vec::new(),
            message: "engine.kind is \"temporal\" but this baton was built without Temporal: build one with `cargo build --release -p baton-cli --features temporal`, or set engine.kind = \"local\"".into(),
        }
    }
}

#[cfg(feature = "temporal")]
#[path = "temporal_follow.rs"]
mod follow;

#[cfg(feature = "temporal")]
mod imp {
    use baton_temporal::flow::FlowRun;
    use baton_temporal::flow_sdk;
    use baton_temporal::mapping::{Engine, WfState, WorkflowInput};
    use baton_temporal::node::Node;
    use baton_temporal::sdk;
    use tokio_util::sync::CancellationToken;

    use super::*;

    use super::follow::{pause, print_status, record_at, wait};

    fn engine(ctx: &ProjectContext, task_queue: Option<&str>) -> Result<Engine> {
        Engine::from_config(&ctx.config.config.engine, task_queue).map_err(anyhow::Error::msg)
    }

    /// Runs `f` with a client of the project's Temporal service, on this command's runtime.
    fn on_temporal<T, F, Fut>(ctx: &ProjectContext, f: F) -> Result<T>
    where
        F: FnOnce(Engine, sdk::Client) -> Fut,
        Fut: std::future::Future<Output = Result<T>>,
    {
        on_engine(engine(ctx, None)?, f)
    }

    /// Runs `f` with a client of `engine`'s Temporal service, on this command's runtime.
    fn on_engine<T, F, Fut>(engine: Engine, f: F) -> Result<T>
    where
        F: FnOnce(Engine, sdk::Client) -> Fut,
        Fut: std::future::Future<Output = Result<T>>,
    {
        let rt = crate::signals::runtime()?;
        rt.block_on(async move {
            let client = sdk::connect(&engine, "baton client")
                .await
                .map_err(anyhow::Error::msg)?;
            f(engine, client).await
        })
    }

    /// The project's `HEAD`, refused when the tree has uncommitted changes (a workflow or Flow on
    /// Temporal starts from the remote and would not see them).
    fn clean_head(root: &std::path::Path) -> Result<String> {
        let dirty = git(
            root,
            &[
                "status",
                "--porcelain",
                "--",
                ".",
                ":(exclude,top).baton/state",
            ],
        )?;
        if !dirty.is_empty() {
            anyhow::bail!(
                "the working tree has uncommitted changes, which work on Temporal would not see (it starts from the remote): commit or stash them first:\n{dirty}"
            );
        }
        git(root, &["rev-parse", "HEAD"])
            .map_err(|e| anyhow::anyhow!("the project has no commit to start from: {e}"))
    }

    fn git(dir: &std::path::Path, args: &[&str]) -> Result<String> {
        baton_git::Git::new(dir)
            .run(args)
            .map(|s| s.trim().to_string())
            .map_err(|e| anyhow::anyhow!("{e}"))
    }

    /// `--plan FILE` for nodes: trusted here as a local `--plan` is (approved now when it never
    /// was), inside the project and committed at `base`, where the nodes read it; the first
    /// step's node builds it only at the SHA-256 approved here.
    fn plan_pin(
        ctx: &ProjectContext,
        given: &std::path::Path,
        base: &str,
    ) -> Result<baton_temporal::mapping::PlanPin> {
        let path = ctx.cwd.join(given);
        if !path.is_file() {
            let what = if path.is_dir() {
                "a folder, not a plan file"
            } else {
                "no such file"
            };
            anyhow::bail!(
                "--plan {}: {what}: give a plan file committed in the project (a PLAN workflow writes one under docs/plans/)",
                given.display()
            );
        }
        let root = &ctx.project_root;
        let state = baton_state::StateDir::for_project(root);
        let (key, sha256) = baton_workflow::run::trust_named_plan(&state, root, &path)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        if std::path::Path::new(&key).is_absolute() {
            anyhow::bail!(
                "--plan {}: the plan is outside the project, where Temporal's nodes cannot read it: move it into the project (e.g. docs/plans/) and commit it",
                given.display()
            );
        }
        let committed = baton_git::Git::new(root)
            .run_output(["cat-file", "-e", &format!("{base}:{key}")])
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        if !committed.status.success() {
            anyhow::bail!(
                "--plan {key}: the plan is not committed, and Temporal's nodes build from the commit: commit it, then start again"
            );
        }
        Ok(baton_temporal::mapping::PlanPin { path: key, sha256 })
    }

    pub fn run(ctx: &ProjectContext, r: StartRequest) -> Result<Exit> {
        use baton_workflow::route::WorkflowKind;
        if r.kind == WorkflowKind::Orient {
            anyhow::bail!(
                "ORIENT answers inline and keeps no record: run it with the local engine (--engine local)"
            );
        }
        let engine = engine(ctx, None)?;
        let remote = engine.remote().map_err(anyhow::Error::msg)?.to_string();
        let root = &ctx.project_root;
        let base = clean_head(root)?;
        if r.plan.is_some() && r.trivial {
            anyhow::bail!("--plan and --trivial do not go together: planned work always takes the full graph; drop --trivial");
        }
        let plan = match &r.plan {
            Some(p) => Some(plan_pin(ctx, p, &base)?),
            None => None,
        };
        let id = baton_workflow::store::fresh_id();
        let branch = format!("refs/heads/baton/{id}");
        let push = (root.clone(), format!("{base}:{branch}"));
        let input = WorkflowInput {
            id: id.clone(),
            request: r.request,
            kind: r.kind.as_str().to_string(),
            trivial: r.trivial,
            budget_usd: r.budget_usd,
            budget_tokens: r.budget_tokens,
            remote,
            base,
            branch,
            heartbeat_timeout_ms: engine.heartbeat_timeout.as_millis() as u64,
            checkpoint_timeout_ms: engine.checkpoint_timeout.as_millis() as u64,
            resumed: None,
            search_attributes: engine.search_attributes,
            plan,
        };
        on_engine(engine, |engine, client| async move {
            // Checked before anything is pushed: a refused start leaves the remote as it was.
            if engine.search_attributes {
                sdk::search_attributes_registered(&client, &engine)
                    .await
                    .map_err(anyhow::Error::msg)?;
            }
            git(&push.0, &["push", "-q", &input.remote, &push.1]).map_err(|e| {
                anyhow::anyhow!(
                    "cannot push the starting commit to `engine.remote` ({}): {e}",
                    input.remote
                )
            })?;
            let followed = input.id.clone();
            started(
                &client,
                &engine,
                sdk::start(&client, &engine, input),
                (
                    r.json,
                    format!(
                        "baton run: workflow {id} started on Temporal ({}, queue {})",
                        engine.address, engine.task_queue
                    ),
                ),
            )
            .await?;
            wait(&client, &followed, r.json).await
        })
    }

    pub fn resume(
        ctx: &ProjectContext,
        id: &str,
        answer: Option<&str>,
        json: bool,
    ) -> Result<Exit> {
        on_temporal(ctx, |engine, client| async move {
            if let Some(text) = answer {
                // A failed workflow has ended on Temporal: a new run of the same id goes on from
                // its record, its stopped agents running again with the answer as guidance.
                let now = sdk::status(&client, id).await.map_err(anyhow::Error::msg)?;
                if now.state == WfState::Failed {
                    let input = sdk::input(&client, id).await.map_err(anyhow::Error::msg)?;
                    // The record stays where it is on the remote; an older workflow's is queried.
                    let log = match &now.record_at {
                        Some(_) => String::new(),
                        None => sdk::log(&client, id).await.map_err(anyhow::Error::msg)?,
                    };
                    let resumed = baton_temporal::mapping::Resumed {
                        log,
                        record_at: now.record_at.clone(),
                        head: now.head.clone(),
                        steps: now.steps,
                        answer: text.to_string(),
                    };
                    let next = WorkflowInput {
                        resumed: Some(resumed),
                        ..input
                    };
                    let followed = next.id.clone();
                    started(
                        &client,
                        &engine,
                        sdk::start(&client, &engine, next),
                        (
                            json,
                            format!(
                            "baton resume: workflow {id} goes on on Temporal with your guidance"
                        ),
                        ),
                    )
                    .await?;
                    return wait(&client, &followed, json).await;
                }
                if let Err(e) = sdk::answer(&client, id, text).await {
                    errln!("baton: the workflow did not take the answer: {e}");
                    return Ok(Exit::Refused);
                }
            }
            wait(&client, id, json).await
        })
    }

    pub fn status(ctx: &ProjectContext, id: Option<&str>, json: bool) -> Result<Exit> {
        let Some(id) = id else {
            anyhow::bail!(
                "--engine temporal: give the workflow's id (`baton status --engine temporal ID`)"
            );
        };
        let s = on_temporal(ctx, |_, client| async move {
            sdk::status(&client, id).await.map_err(anyhow::Error::msg)
        })?;
        if json {
            crate::documents::print(&s);
        } else {
            print_status(&s);
        }
        Ok(Exit::Ok)
    }

    pub fn log(
        ctx: &ProjectContext,
        id: &str,
        json: bool,
        history: Option<&std::path::Path>,
    ) -> Result<Exit> {
        let root = ctx.project_root.clone();
        let log = on_temporal(ctx, |engine, client| async move {
            if let Some(path) = history {
                let bytes = sdk::history_json(&client, id)
                    .await
                    .map_err(anyhow::Error::msg)?;
                std::fs::write(path, bytes)
                    .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
            }
            let status = sdk::status(&client, id).await.map_err(anyhow::Error::msg)?;
            match &status.record_at {
                // The remote the workflow started with (a workflow of an older baton does not
                // say: today's `engine.remote`).
                Some(at) if !status.remote.is_empty() => record_at(&root, &status.remote, at),
                Some(at) => {
                    let remote = engine.remote().map_err(anyhow::Error::msg)?;
                    record_at(&root, remote, at)
                }
                // A workflow of an older baton carries its record in its history.
                None => sdk::log(&client, id).await.map_err(anyhow::Error::msg),
            }
        })?;
        for line in log.lines() {
            if json {
                outln!("{line}");
            } else if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
                outln!(
                    "{:>3} {:<18} {}",
                    v["seq"],
                    v["event"].as_str().unwrap_or(""),
                    baton_text::sanitize_line(
                        v["reason"].as_str().or(v["phase"].as_str()).unwrap_or("")
                    )
                );
            }
        }
        Ok(Exit::Ok)
    }

    /// `baton flow start --engine temporal`: pushes the current branch to the remote, starts the
    /// Flow there and follows it to its end.
    pub fn flow_start(
        ctx: &ProjectContext,
        units: Vec<baton_flow::UnitSpec>,
        build: bool,
        json: bool,
    ) -> Result<Exit> {
        use baton_temporal::flow::FlowInput;
        let engine = engine(ctx, None)?;
        let remote = engine.remote().map_err(anyhow::Error::msg)?.to_string();
        let root = &ctx.project_root;
        let base = clean_head(root)?;
        let branch = git(root, &["symbolic-ref", "--short", "HEAD"]).map_err(|_| {
            anyhow::anyhow!("HEAD is detached: check out the branch the units should land on")
        })?;
        let target = format!("refs/heads/{branch}");
        let push = (root.clone(), format!("{base}:{target}"));
        let root_owned = root.clone();
        let id = baton_flow::engine::new_flow_id();
        let input = FlowInput {
            id: id.clone(),
            units,
            build,
            remote: remote.clone(),
            target,
            base,
            heartbeat_timeout_ms: engine.heartbeat_timeout.as_millis() as u64,
            implemented: Default::default(),
            onto: None,
            origin: None,
            search_attributes: engine.search_attributes,
        };
        on_engine(engine, |engine, client| async move {
            // Checked before anything is pushed: a refused start leaves the remote as it was.
            if engine.search_attributes {
                sdk::search_attributes_registered(&client, &engine)
                    .await
                    .map_err(anyhow::Error::msg)?;
            }
            git(&push.0, &["push", "-q", &remote, &push.1]).map_err(|e| {
                anyhow::anyhow!("cannot push {branch} to `engine.remote` ({remote}) as it is here: {e} (pull first if the remote is ahead)")
            })?;
            let line = format!(
                "baton flow: Flow {id} started on Temporal; units land on {branch} at {remote}"
            );
            start_and_follow_flow(&client, &engine, (root_owned, input), (json, line)).await
        })
    }

    /// `baton flow continue --engine temporal ID --guidance TEXT`: a Flow on Temporal that
    /// stopped at a unit goes on as a new Flow (`ID-continue`, or `…-continue-N` on a
    /// continuation): that unit implemented again from the branch as it is now, with the
    /// guidance and what stopped it; the units after it that were implemented land from their
    /// commits, the others are implemented too.
    pub fn flow_continue(
        ctx: &ProjectContext,
        id: &str,
        guidance: &str,
        json: bool,
    ) -> Result<Exit> {
        use baton_temporal::flow::{FlowInput, UnitState};
        if guidance.trim().is_empty() {
            anyhow::bail!("--guidance is empty: say what the implementer should do differently");
        }
        let root = ctx.project_root.clone();
        on_temporal(ctx, |engine, client| async move {
            let (input, status) = flow_input_and_status(&client, id).await?;
            if status.state != FlowRun::Failed {
                anyhow::bail!(
                    "Flow {id} is {}: only a Flow that stopped at a unit goes on",
                    status.state
                );
            }
            let Some(stop) = status.units.iter().position(|u| {
                matches!(
                    u.state,
                    UnitState::Failed
                        | UnitState::Conflict
                        | UnitState::Invalid
                        | UnitState::Rejected
                )
            }) else {
                anyhow::bail!("Flow {id} has no unit that stopped it");
            };
            let row = &status.units[stop];
            let mut units = Vec::new();
            let mut implemented = std::collections::BTreeMap::new();
            for (i, spec) in input.units.iter().enumerate().skip(stop) {
                let mut spec = spec.clone();
                if i == stop {
                    spec.task = format!(
                        "{}\n\n## Guidance\n\n{}\n\n## What stopped it before\n\n{}: {}",
                        spec.task.trim_end(),
                        guidance.trim(),
                        row.state,
                        row.why.as_deref().unwrap_or("")
                    );
                } else if let (UnitState::Skipped, Some(head)) =
                    (status.units[i].state, &status.units[i].head)
                {
                    implemented.insert(spec.id.clone(), head.clone());
                }
                units.push(spec);
            }
            let (onto, origin) = going_on(&root, id, &input)?;
            let next_id = match id.rsplit_once("-continue") {
                Some((flow, "")) => format!("{flow}-continue-2"),
                Some((flow, n)) => match n.strip_prefix('-').and_then(|n| n.parse::<u32>().ok()) {
                    Some(n) => format!("{flow}-continue-{}", n + 1),
                    None => format!("{id}-continue"),
                },
                None => format!("{id}-continue"),
            };
            let next = FlowInput {
                id: next_id.clone(),
                units,
                implemented,
                origin: Some(origin),
                // Every unit starts from the branch as it is now (a kept commit's rebase replays
                // only its own change onto it).
                base: onto,
                onto: None,
                ..input
            };
            let line = format!(
                "baton flow: Flow {id} goes on on Temporal as {next_id}, from unit {}",
                row.id
            );
            start_and_follow_flow(&client, &engine, (root.clone(), next), (json, line)).await
        })
    }

    /// What a Flow that goes on from Flow `id` (`flow land`, `flow continue`) starts from: the
    /// target's commit on the remote now, and the origin it keeps (`id`'s, or the one `id` kept).
    fn going_on(
        root: &std::path::Path,
        id: &str,
        input: &baton_temporal::flow::FlowInput,
    ) -> Result<(String, baton_temporal::flow::Origin)> {
        let onto = git(root, &["ls-remote", &input.remote, &input.target])
            .ok()
            .and_then(|l| l.split_whitespace().next().map(str::to_string))
            .ok_or_else(|| anyhow::anyhow!("cannot read {} on {}", input.target, input.remote))?;
        let origin = input
            .origin
            .clone()
            .unwrap_or_else(|| baton_temporal::flow::Origin {
                id: id.to_string(),
                base: input.base.clone(),
            });
        Ok((onto, origin))
    }

    /// Starting work (`start`), then the warning when no node polls, and `line` unless the
    /// output is JSON.
    async fn started(
        client: &sdk::Client,
        engine: &Engine,
        start: impl std::future::Future<Output = Result<(), String>>,
        (json, line): (bool, String),
    ) -> Result<()> {
        start.await.map_err(anyhow::Error::msg)?;
        warn_if_no_node(client, engine).await;
        if !json {
            errln!("{line}");
        }
        Ok(())
    }

    /// Says so when no worker node polls the queue: the work waits, with nothing to say why.
    async fn warn_if_no_node(client: &sdk::Client, engine: &Engine) {
        if let Ok(nodes) = sdk::pollers(client, engine).await {
            if nodes.is_empty() {
                errln!(
                    "baton: no worker node polls task queue {q} yet: the work waits until one does (`baton worker-node --task-queue {q}`)",
                    q = engine.task_queue
                );
            }
        }
    }

    pub use crate::temporal_doctor::doctor;

    /// What Flow `id` on Temporal was started with, and where it stands.
    async fn flow_input_and_status(
        client: &sdk::Client,
        id: &str,
    ) -> Result<(
        baton_temporal::flow::FlowInput,
        baton_temporal::flow::FlowStatus,
    )> {
        let input = flow_sdk::input(client, id)
            .await
            .map_err(anyhow::Error::msg)?;
        let status = flow_sdk::status(client, id)
            .await
            .map_err(anyhow::Error::msg)?;
        Ok((input, status))
    }

    /// Starts the Flow `input` of the project at `root` on Temporal (saying `line` unless
    /// `json`), then follows it to its end ([`follow_flow`]).
    async fn start_and_follow_flow(
        client: &sdk::Client,
        engine: &Engine,
        (root, input): (std::path::PathBuf, baton_temporal::flow::FlowInput),
        said: (bool, String),
    ) -> Result<Exit> {
        let json = said.0;
        let mirror = (root, input.clone());
        started(client, engine, flow_sdk::start(client, engine, input), said).await?;
        follow_flow(client, &mirror, json).await
    }

    /// Follows the Flow `input` started in the project at `root` to its end, printing each
    /// unit's changes (unless `json`), keeping its record there in the local Flow engine's log
    /// ([`baton_temporal::flow_mirror`]), and reports it.
    async fn follow_flow(
        client: &sdk::Client,
        (root, input): &(std::path::PathBuf, baton_temporal::flow::FlowInput),
        json: bool,
    ) -> Result<Exit> {
        let id = input.id.as_str();
        mirrored(baton_temporal::flow_mirror::created(root, input));
        let cancel = CancellationToken::new();
        let signalled = crate::signals::watch_signals(cancel.clone());
        let mut seen: Vec<String> = Vec::new();
        let status = loop {
            let s = baton_temporal::flow_sdk::status(client, id)
                .await
                .map_err(anyhow::Error::msg)?;
            mirrored(baton_temporal::flow_mirror::follow(root, &s).map(|_| ()));
            if !json {
                for (i, u) in s.units.iter().enumerate() {
                    let line = format!("{} {}", u.id, u.state);
                    if seen.get(i) != Some(&line) {
                        errln!(
                            "baton flow: unit {} {}{}",
                            u.id,
                            u.state,
                            u.node
                                .as_deref()
                                .map(|n| format!(" (on {n})"))
                                .unwrap_or_default()
                        );
                    }
                }
                seen = s
                    .units
                    .iter()
                    .map(|u| format!("{} {}", u.id, u.state))
                    .collect();
            }
            if matches!(s.state, FlowRun::Completed | FlowRun::Failed) {
                break s;
            }
            let look = "baton flow status --engine temporal";
            // The status says when Temporal ended the Flow (failed, with `why`).
            if let Some(exit) = pause(id, "Flow", look, &signalled).await {
                return Ok(exit);
            }
        };
        Ok(report_flow(&status, json))
    }

    /// `baton flow land --engine temporal ID UNIT`: lands one unit a failed Flow on Temporal
    /// implemented, without implementing it again: a Flow of that one unit, implemented, onto
    /// the target as it is now (`ID-land-UNIT`).
    pub fn flow_land(ctx: &ProjectContext, id: &str, unit: &str, json: bool) -> Result<Exit> {
        use baton_temporal::flow::{FlowInput, UnitState};
        let root = ctx.project_root.clone();
        on_temporal(ctx, |engine, client| async move {
            let (input, status) = flow_input_and_status(&client, id).await?;
            if !matches!(status.state, FlowRun::Completed | FlowRun::Failed) {
                anyhow::bail!(
                    "Flow {id} is still {}: land a unit once it has ended",
                    status.state
                );
            }
            let names = || {
                status
                    .units
                    .iter()
                    .map(|u| u.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let Some(row) = status.units.iter().find(|u| u.id == unit) else {
                anyhow::bail!("Flow {id} has no unit `{unit}`: its units are {}", names());
            };
            if row.state == UnitState::Integrated {
                anyhow::bail!(
                    "unit `{unit}` of Flow {id} already landed, at {}",
                    row.head.as_deref().unwrap_or("?")
                );
            }
            let (Some(head), Some(spec)) =
                (row.head.clone(), input.units.iter().find(|u| u.id == unit))
            else {
                anyhow::bail!(
                    "unit `{unit}` of Flow {id} has no commit to land ({}): start a new Flow for it",
                    row.why.as_deref().map(baton_text::sanitize_line).unwrap_or_else(|| row.state.to_string().into())
                );
            };
            let (onto, origin) = going_on(&root, id, &input)?;
            let land_id = format!("{id}-land-{unit}");
            let land = FlowInput {
                id: land_id.clone(),
                units: vec![spec.clone()],
                implemented: [(unit.to_string(), head)].into(),
                onto: Some(onto),
                origin: Some(origin),
                ..input
            };
            let line =
                format!("baton flow: landing unit {unit} of Flow {id} on Temporal as {land_id}");
            start_and_follow_flow(&client, &engine, (root.clone(), land), (json, line)).await
        })
    }

    /// A record that cannot be kept here is said, and the Flow goes on without it.
    fn mirrored(kept: Result<(), String>) {
        if let Err(e) = kept {
            errln!("baton flow: cannot keep the Flow's record in this project: {e}");
        }
    }

    pub fn flow_status(ctx: &ProjectContext, id: &str, json: bool) -> Result<Exit> {
        let s = on_temporal(ctx, |_, client| async move {
            baton_temporal::flow_sdk::status(&client, id)
                .await
                .map_err(anyhow::Error::msg)
        })?;
        mirrored(baton_temporal::flow_mirror::follow(&ctx.project_root, &s).map(|_| ()));
        if json {
            crate::documents::print(&s);
        } else {
            print_flow(&s);
        }
        Ok(Exit::Ok)
    }

    fn print_flow(s: &baton_temporal::flow::FlowStatus) {
        outln!("Flow {}  {}  {} at {}", s.id, s.state, s.target, s.head);
        for u in &s.units {
            outln!(
                "  {:<20} {:<12} {}{}",
                u.id,
                u.state,
                u.node.as_deref().unwrap_or(""),
                u.why
                    .as_deref()
                    .map(|w| format!("\n      {}", baton_text::sanitize_line(w)))
                    .unwrap_or_default()
            );
        }
        if let Some(why) = &s.why {
            outln!("{}", baton_text::sanitize_line(why));
        }
    }

    fn report_flow(s: &baton_temporal::flow::FlowStatus, json: bool) -> Exit {
        if json {
            crate::documents::print(s);
        } else {
            print_flow(s);
            if s.state == FlowRun::Completed {
                outln!(
                    "landed: {} is at {}; `git pull --ff-only` brings it here",
                    s.target,
                    s.head
                );
            }
        }
        if s.state == FlowRun::Completed {
            Exit::Ok
        } else {
            Exit::Failed
        }
    }

    pub fn worker_node(args: WorkerNodeArgs) -> Result<Exit> {
        let rt = crate::signals::runtime()?;
        if !args.check_history.is_empty() {
            return rt.block_on(async {
                match baton_temporal::worker::check_histories(&args.check_history).await {
                    Ok(n) => {
                        outln!("{n} history(ies) replay with this binary");
                        Ok(Exit::Ok)
                    }
                    Err(e) => {
                        errln!("baton: {e}");
                        Ok(Exit::Failed)
                    }
                }
            });
        }
        if args.slots == 0 {
            anyhow::bail!("--slots 0: a node runs at least one step at a time");
        }
        let ctx = baton_app::project::project_context(args.cwd.clone())?;
        let engine = engine(&ctx, args.task_queue.as_deref())?;
        let dir = match &args.dir {
            Some(d) => std::path::absolute(d)?,
            None => baton_exec::worktree::default_worktree_root(None)?
                .parent()
                .map(|p| p.join("nodes").join(&engine.task_queue))
                .ok_or_else(|| anyhow::anyhow!("no folder for the node: give --dir"))?,
        };
        let name = args.name.clone().unwrap_or_else(|| {
            let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
            format!("{}-{}", host.trim(), std::process::id())
        });
        let node = Node {
            name: name.clone(),
            dir: dir.clone(),
            baton_exe: baton_process::own_program()?,
            trust: args.trust,
            env: Vec::new(),
        };
        let stop = CancellationToken::new();
        rt.block_on(async {
            let signalled = crate::signals::watch_signals(stop.clone());
            errln!(
                "baton worker-node {name}: polling {} on {} ({} slot(s)), folder {}",
                engine.task_queue,
                engine.address,
                args.slots,
                dir.display()
            );
            let r = baton_temporal::worker::run_node(&engine, node, args.slots, stop).await;
            match r {
                Ok(()) if signalled.is_cancelled() => Ok(Exit::Interrupted),
                Ok(()) => Ok(Exit::Ok),
                Err(e) => {
                    errln!("baton worker-node: {e}");
                    Ok(Exit::Failed)
                }
            }
        })
    }
}

pub use imp::*;
