//! Fan-out overhead: N scripted `baton agent` tasks (default 64) at concurrency C (default 8)
//! against one `baton-mock`, run three ways in one process:
//!
//! - **bare**: `baton agent --json --no-delegate --model mock/mock-model --cwd WORK TASK`, started
//!   straight from a pool of C threads (`std::process::Command::output`).
//! - **launch**: the same pool, but each process gets exactly what the executor would start:
//!   the [`launch_for`] argv (`--role-file`, task on stdin), `BATON_CHILD=1` and the task env.
//!   The gap bare → launch is the child's own cost of being started that way; launch → executor
//!   is the executor's.
//! - **executor**: [`Executor::new`]`(C)` running all N tasks at once, as delegation does, each
//!   child under its guard (`baton __guard`) as in the binary
//!   (`join_all` of `Executor::run`); each run's prepare step writes the frozen role file and
//!   calls [`launch_for`] (backend `baton`), as `delegate::run_entry` does.
//!
//! Per-task wall: bare/launch from spawn to the child's output collected; executor from the moment
//! the run holds its permit (prepare starts) to `run` returning (prepare, spawn, supervision,
//! parsing, drain). Queued time is excluded in all three. Overhead per task = median executor −
//! median bare, and from total wall (executor − bare) × C / N, which also sees time a freed slot
//! stays empty between runs. Goal (issue 3): under 10 ms, judged on the larger of the two.
//!
//! Every child gets an isolated HOME, XDG dirs and TMPDIR in a temp dir, BATON_CONFIG naming a
//! config with the mock provider, and a temp work dir that is its own project root (it holds
//! `.baton/`), so sessions and role files land in the temp dir, never in the repository. The bench
//! process clears its environment to PATH plus those before it starts anything, so both launchers
//! pass children the same environment.
//!
//! Needs `cargo build --release -p baton-cli -p baton-testkit` first. Run with
//! `cargo bench -p baton-exec --bench fanout` (`-- --help` for options).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use baton_exec::backend::{launch_for, TaskSpec};
use baton_exec::delegate::write_frozen_role;
use baton_exec::executor::{Executor, OutputBudget};
use baton_exec::{Activity, ChildStatus, Launch, Limits, DEFAULT_OUTPUT_CAP};
use baton_protocol::role::{BackendKind, RoleSpec};
use baton_roles::{find_role, RoleDirs};
use nix::sys::resource::{getrusage, UsageWho};
use tokio_util::sync::CancellationToken;

const ROUTE: &str = "mock/mock-model";
const ROLE: &str = "implementer";
const MARK: &str = "FANOUT-OK";
const ANSWER: &str = "Done: the fan-out task is finished (FANOUT-OK).";
const FILE_TEXT: &str = "the fan-out phrase is amber-heron-7\n";
const BUILD_HINT: &str = "cargo build --release -p baton-cli -p baton-testkit";

struct Opts {
    tasks: usize,
    concurrency: usize,
    rounds: usize,
    tool: bool,
    spawned: bool,
    baton: PathBuf,
    mock: PathBuf,
    keep: bool,
}

const USAGE: &str = "\
cargo bench -p baton-exec --bench fanout -- [options]
  --tasks N         tasks per mode and round (default 64)
  --concurrency N   children at once, in the pool and in the executor (default 8)
  --rounds N        measured rounds; each runs every mode once, in rotating order (default 10)
  --tool            each task makes one `read` tool call before its answer (two model turns)
  --spawned         run each executor run as its own tokio task instead of one join_all
                    (delegation's way); shows how much the single polling task costs
  --baton PATH      baton binary (default target/release/baton)
  --mock PATH       baton-mock binary (default target/release/baton-mock)
  --keep            keep the temp dir (configs, role files, session transcripts)";

fn parse_opts() -> Result<Opts, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let mut o = Opts {
        tasks: 64,
        concurrency: 8,
        rounds: 10,
        tool: false,
        spawned: false,
        baton: target.join("release").join("baton"),
        mock: target.join("release").join("baton-mock"),
        keep: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        let number = |name: &str, v: String| {
            v.parse::<usize>().ok().filter(|n| *n >= 1).ok_or(format!(
                "{name} wants a whole number of at least 1, not `{v}`"
            ))
        };
        match a.as_str() {
            // cargo bench passes --bench to harness=false targets.
            "--bench" => {}
            "--tasks" => o.tasks = number("--tasks", value("--tasks")?)?,
            "--concurrency" => o.concurrency = number("--concurrency", value("--concurrency")?)?,
            "--rounds" => o.rounds = number("--rounds", value("--rounds")?)?,
            "--tool" => o.tool = true,
            "--spawned" => o.spawned = true,
            "--baton" => o.baton = value("--baton")?.into(),
            "--mock" => o.mock = value("--mock")?.into(),
            "--keep" => o.keep = true,
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown option `{other}`\n{USAGE}")),
        }
    }
    for (path, what) in [(&o.baton, "baton"), (&o.mock, "baton-mock")] {
        if !path.is_file() {
            return Err(format!(
                "{what} not found at {}; build it with: {BUILD_HINT}",
                path.display()
            ));
        }
    }
    Ok(o)
}

// ------------------------------------------------------------------------------------------------
// The mock server and the isolated environment

struct Mock {
    child: Child,
    url: String,
}

impl Mock {
    fn start(binary: &Path, script: &Path) -> Result<Mock, String> {
        let mut child = Command::new(binary)
            .arg("--script")
            .arg(script)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", binary.display()))?;
        let mut line = String::new();
        if let Some(out) = child.stdout.take() {
            let _ = BufReader::new(out).read_line(&mut line);
        }
        let url = line.trim().to_string();
        let mut mock = Mock { child, url };
        if !mock.url.starts_with("http://") {
            mock.stop();
            return Err(format!("baton-mock did not print its URL (got {line:?})"));
        }
        Ok(mock)
    }

    fn cpu_secs(&self) -> f64 {
        cpu_of(self.child.id())
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Mock {
    fn drop(&mut self) {
        self.stop();
    }
}

/// User + system CPU seconds of this process (all its threads, live or gone) and of the children
/// it has waited for.
fn self_times() -> (f64, f64) {
    let secs = |who| {
        getrusage(who).map_or(0.0, |u| {
            let t = |v: nix::sys::time::TimeVal| v.tv_sec() as f64 + v.tv_usec() as f64 / 1e6;
            t(u.user_time()) + t(u.system_time())
        })
    };
    (secs(UsageWho::RUSAGE_SELF), secs(UsageWho::RUSAGE_CHILDREN))
}

/// CPU seconds of a live process, summed over its threads' schedstat (nanoseconds).
fn cpu_of(pid: u32) -> f64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0.0;
    };
    let ns: u64 = tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    ns as f64 / 1e9
}

fn rules(tool: bool) -> serde_json::Value {
    let rules = if tool {
        serde_json::json!([
            {"when": {"tool_offered": "read", "last_is_tool_result": false},
             "step": {"tool_call": {"name": "read", "arguments": {"path": "notes.txt"}}}},
            {"when": {"last_is_tool_result": true}, "step": {"text": ANSWER}},
        ])
    } else {
        serde_json::json!([{"step": {"text": ANSWER}}])
    };
    // Nothing else is expected: a request no rule matches fails loudly.
    serde_json::json!({"rules": rules, "steps": []})
}

struct Env {
    work: PathBuf,
    state: PathBuf,
}

/// Lays out the temp dir and replaces this process's environment with an isolated one, before
/// any thread exists: every child of either launcher inherits it.
fn isolate(tmp: &Path, mock_url: &str) -> Result<Env, String> {
    let io = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
    let home = tmp.join("home");
    let xdg = tmp.join("xdg");
    let work = tmp.join("work");
    let state = tmp.join("state");
    let temp = tmp.join("tmp");
    for d in [
        &home,
        &xdg.join("config"),
        &xdg.join("data"),
        &xdg.join("state"),
        &xdg.join("cache"),
        &work.join(".baton"),
        &state,
        &temp,
    ] {
        std::fs::create_dir_all(d).map_err(|e| io(d, e))?;
    }
    let notes = work.join("notes.txt");
    std::fs::write(&notes, FILE_TEXT).map_err(|e| io(&notes, e))?;
    let config = tmp.join("baton.toml");
    let text = format!("[providers.mock]\nkind = \"openai\"\nbase_url = \"{mock_url}/v1\"\n");
    std::fs::write(&config, text).map_err(|e| io(&config, e))?;

    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    for (key, _) in std::env::vars_os() {
        std::env::remove_var(key);
    }
    let vars: [(&str, &Path); 7] = [
        ("HOME", &home),
        ("XDG_CONFIG_HOME", &xdg.join("config")),
        ("XDG_DATA_HOME", &xdg.join("data")),
        ("XDG_STATE_HOME", &xdg.join("state")),
        ("XDG_CACHE_HOME", &xdg.join("cache")),
        ("TMPDIR", &temp),
        ("BATON_CONFIG", &config),
    ];
    std::env::set_var("PATH", path);
    for (k, v) in vars {
        std::env::set_var(k, v);
    }
    std::env::set_var("LANG", "C.UTF-8");
    std::env::set_var("NO_COLOR", "1");
    Ok(Env { work, state })
}

// ------------------------------------------------------------------------------------------------
// Runs

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Bare,
    Launch,
    Executor,
}

impl Mode {
    const ALL: [Mode; 3] = [Mode::Bare, Mode::Launch, Mode::Executor];
    fn name(self) -> &'static str {
        match self {
            Mode::Bare => "bare",
            Mode::Launch => "launch",
            Mode::Executor => "executor",
        }
    }
}

/// When a task started and ended, measured from the start of its batch.
type Span = (Duration, Duration);

/// What one child of the pool reports: its span and why it failed (if it did).
type PoolOutcome = (Span, Option<String>);

/// One batch of N tasks in one mode.
struct Batch {
    total: Duration,
    per_task: Vec<Duration>,
    /// (start, end) of each task since the batch began.
    spans: Vec<Span>,
    prepare: Vec<Duration>,
    self_cpu: f64,
    child_cpu: f64,
    mock_cpu: f64,
    failures: Vec<String>,
}

struct Ctx<'a> {
    opts: &'a Opts,
    env: &'a Env,
    role: RoleSpec,
    mock: &'a Mock,
}

fn task_text(i: usize) -> String {
    format!("Fan-out task {i}: check notes.txt and report that you are done.")
}

fn spec(ctx: &Ctx, i: usize, run_id: &str, role_file: PathBuf) -> TaskSpec {
    TaskSpec {
        backend: BackendKind::Baton,
        role: ctx.role.clone(),
        task: task_text(i),
        cwd: ctx.env.work.clone(),
        route: Some(ROUTE.into()),
        thinking: None,
        program: Some(ctx.opts.baton.clone()),
        role_file: Some(role_file),
        max_turns: None,
        extra_env: vec![
            ("BATON_TASK_NAME".into(), format!("task-{i}")),
            ("BATON_TASK_INDEX".into(), i.to_string()),
            ("BATON_RUN_ID".into(), run_id.to_string()),
        ],
        skills: Vec::new(),
    }
}

/// What one child of the pool runs: program, args, added env, stdin.
struct Job {
    program: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
    stdin: Option<String>,
}

fn bare_job(ctx: &Ctx, i: usize) -> Job {
    let work = ctx.env.work.display().to_string();
    Job {
        program: ctx.opts.baton.clone(),
        args: [
            "agent",
            "--json",
            "--no-delegate",
            "--model",
            ROUTE,
            "--cwd",
            &work,
        ]
        .map(String::from)
        .into_iter()
        .chain([task_text(i)])
        .collect(),
        env: Vec::new(),
        stdin: None,
    }
}

fn launch_job(launch: Launch) -> Job {
    Job {
        program: launch.program,
        args: launch.args,
        env: launch.env,
        stdin: launch.stdin,
    }
}

/// The final message of a `baton agent --json` stream.
fn final_message(stdout: &[u8]) -> Option<String> {
    stdout.split(|b| *b == b'\n').rev().find_map(|line| {
        let v: serde_json::Value = serde_json::from_slice(line).ok()?;
        (v["type"] == "session.completed").then(|| v["final_message"].as_str().unwrap_or("").into())
    })
}

/// A worker pool of `concurrency` threads, each starting one child at a time.
fn run_pool(ctx: &Ctx, jobs: Vec<Job>, work: &Path) -> Batch {
    let n = jobs.len();
    let jobs = Arc::new(jobs);
    let next = Arc::new(AtomicUsize::new(0));
    let results: Arc<Mutex<Vec<PoolOutcome>>> = Arc::default();
    let (cpu0, mock0) = (self_times(), ctx.mock.cpu_secs());
    let t0 = Instant::now();
    let workers: Vec<_> = (0..ctx.opts.concurrency.min(n))
        .map(|_| {
            let (jobs, next, results, work) = (
                jobs.clone(),
                next.clone(),
                results.clone(),
                work.to_path_buf(),
            );
            std::thread::spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(i) else { break };
                let started = Instant::now();
                let out = Command::new(&job.program)
                    .args(&job.args)
                    .envs(job.env.iter().map(|(k, v)| (k, v)))
                    .current_dir(&work)
                    .stdin(if job.stdin.is_some() {
                        Stdio::piped()
                    } else {
                        Stdio::null()
                    })
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .and_then(|mut child| {
                        if let (Some(text), Some(mut pipe)) = (&job.stdin, child.stdin.take()) {
                            pipe.write_all(text.as_bytes())?;
                        }
                        child.wait_with_output()
                    });
                let span = (started - t0, started.elapsed() + (started - t0));
                let problem = match out {
                    Err(e) => Some(format!("cannot run {}: {e}", job.program.display())),
                    Ok(o) if !o.status.success() => Some(format!(
                        "{}: {}",
                        o.status,
                        String::from_utf8_lossy(&o.stderr).trim()
                    )),
                    Ok(o) => match final_message(&o.stdout) {
                        Some(m) if m.contains(MARK) => None,
                        other => Some(format!("unexpected final message {other:?}")),
                    },
                };
                results.lock().unwrap().push((span, problem));
            })
        })
        .collect();
    for w in workers {
        let _ = w.join();
    }
    let total = t0.elapsed();
    let (cpu1, mock1) = (self_times(), ctx.mock.cpu_secs());
    let results = std::mem::take(&mut *results.lock().unwrap());
    Batch {
        total,
        per_task: results.iter().map(|r| r.0 .1 - r.0 .0).collect(),
        spans: results.iter().map(|r| r.0).collect(),
        prepare: Vec::new(),
        self_cpu: cpu1.0 - cpu0.0,
        child_cpu: cpu1.1 - cpu0.1,
        mock_cpu: mock1 - mock0,
        failures: results.into_iter().filter_map(|r| r.1).collect(),
    }
}

/// What one executor run reports: its (start, end) since the batch began, how long its prepare
/// step took, and why it failed (if it did).
type RunOutcome = (Span, Duration, Option<String>);

/// One task through `Executor::run`, its prepare step doing what `delegate::run_entry`'s does for
/// the baton backend: write the frozen role file, then `launch_for`. Owns its inputs, so it can
/// run inside `join_all` or as its own tokio task.
/// What every run of a batch shares (cheap clones).
#[derive(Clone)]
struct Shared {
    executor: Executor,
    budget: Arc<OutputBudget>,
    cancel: CancellationToken,
    limits: Limits,
    state: Arc<PathBuf>,
    run_id: Arc<str>,
    t0: Instant,
}

async fn one_run(shared: Shared, template: TaskSpec, i: usize) -> RunOutcome {
    let Shared {
        executor,
        budget,
        cancel,
        limits,
        state,
        run_id,
        t0,
    } = shared;
    // When the run got its permit (prepare starts), and how long prepare took.
    let marks: Mutex<(Option<Instant>, Duration)> = Mutex::new((None, Duration::ZERO));
    let marks_ref = &marks;
    let prepare = move || async move {
        let started = Instant::now();
        let mut spec = template;
        spec.role_file = Some(write_frozen_role(
            &state.join("roles").join(&*run_id),
            i,
            &spec.role,
        )?);
        let launch = launch_for(&spec);
        *marks_ref.lock().unwrap() = (Some(started), started.elapsed());
        launch
    };
    // Activity is delivered and dropped, as a caller that shows no status would.
    let mut on_activity = |_: Activity| {};
    let result = executor
        .run(prepare, limits, &budget, &cancel, &mut on_activity)
        .await;
    let ended = Instant::now();
    let (started, prepare) = *marks.lock().unwrap();
    let started = started.unwrap_or(ended);
    let problem = match result {
        Err(e) => Some(e.to_string()),
        Ok(r) if r.status != ChildStatus::Success => Some(format!(
            "child failed (exit {:?}): {}",
            r.exit_code,
            r.stderr.trim()
        )),
        Ok(r) if !r.output.contains(MARK) => Some(format!("unexpected output {:?}", r.output)),
        Ok(_) => None,
    };
    ((started - t0, ended - t0), prepare, problem)
}

fn run_executor(ctx: &Ctx, rt: &tokio::runtime::Runtime, n: usize, run_id: &str) -> Batch {
    let (cpu0, mock0) = (self_times(), ctx.mock.cpu_secs());
    let t0 = Instant::now();
    let results: Vec<RunOutcome> = rt.block_on(async {
        let executor = Executor::new(ctx.opts.concurrency);
        let budget = Arc::new(OutputBudget::new(DEFAULT_OUTPUT_CAP.max(n * 1024)));
        let cancel = CancellationToken::new();
        let limits = Limits {
            idle_timeout: Duration::from_secs(60),
            max_timeout: Duration::from_secs(300),
        };
        let shared = Shared {
            executor,
            budget,
            cancel,
            limits,
            state: Arc::new(ctx.env.state.clone()),
            run_id: run_id.into(),
            t0,
        };
        let runs = (0..n).map(|i| {
            // The role file is written by the run's prepare step.
            let template = spec(ctx, i, &shared.run_id, PathBuf::new());
            one_run(shared.clone(), template, i)
        });
        if ctx.opts.spawned {
            let handles: Vec<_> = runs.map(tokio::spawn).collect();
            futures::future::join_all(handles)
                .await
                .into_iter()
                .map(|r| {
                    r.unwrap_or_else(|e| {
                        (
                            (Duration::ZERO, Duration::ZERO),
                            Duration::ZERO,
                            Some(e.to_string()),
                        )
                    })
                })
                .collect()
        } else {
            // As `delegate::run_delegation` does: one future polls every run.
            futures::future::join_all(runs).await
        }
    });
    let total = t0.elapsed();
    let (cpu1, mock1) = (self_times(), ctx.mock.cpu_secs());
    Batch {
        total,
        per_task: results.iter().map(|r| r.0 .1 - r.0 .0).collect(),
        spans: results.iter().map(|r| r.0).collect(),
        prepare: results.iter().map(|r| r.1).collect(),
        self_cpu: cpu1.0 - cpu0.0,
        child_cpu: cpu1.1 - cpu0.1,
        mock_cpu: mock1 - mock0,
        failures: results.into_iter().filter_map(|r| r.2).collect(),
    }
}

fn run_batch(
    ctx: &Ctx,
    rt: &tokio::runtime::Runtime,
    mode: Mode,
    n: usize,
    tag: &str,
) -> Result<Batch, String> {
    let run_id = format!("{tag}-{}", mode.name());
    match mode {
        Mode::Bare => Ok(run_pool(
            ctx,
            (0..n).map(|i| bare_job(ctx, i)).collect(),
            &ctx.env.work,
        )),
        Mode::Launch => {
            // Role files and launches are made before the clock starts: only the children run.
            let mut jobs = Vec::with_capacity(n);
            for i in 0..n {
                let file =
                    write_frozen_role(&ctx.env.state.join("roles").join(&run_id), i, &ctx.role)
                        .map_err(|e| e.to_string())?;
                let launch = launch_for(&spec(ctx, i, &run_id, file)).map_err(|e| e.to_string())?;
                jobs.push(launch_job(launch));
            }
            Ok(run_pool(ctx, jobs, &ctx.env.work))
        }
        Mode::Executor => Ok(run_executor(ctx, rt, n, &run_id)),
    }
}

// ------------------------------------------------------------------------------------------------
// Report

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn mean_ms(values: &[Duration]) -> f64 {
    values.iter().map(|d| ms(*d)).sum::<f64>() / values.len().max(1) as f64
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

fn median(values: &mut [Duration]) -> Duration {
    values.sort();
    if values.is_empty() {
        return Duration::ZERO;
    }
    let m = values.len() / 2;
    if values.len() % 2 == 1 {
        values[m]
    } else {
        (values[m - 1] + values[m]) / 2
    }
}

struct Summary {
    tasks: usize,
    total_median: Duration,
    /// Share of the C slots' time (over all batches) that a task held: 1.0 = never idle.
    busy: f64,
    /// How long a freed slot stayed empty: the k-th start (k ≥ C) after the (k−C)-th end.
    refill: Vec<Duration>,
    per_task: Vec<Duration>,
    prepare: Vec<Duration>,
    self_cpu_ms: f64,
    child_cpu_ms: f64,
    mock_cpu_ms: f64,
}

/// For each task that waited for a slot: the time from the end that freed its slot (the
/// (k−C)-th end, in end order) to its own start (the k-th start).
fn refills(batch: &Batch, concurrency: usize) -> Vec<Duration> {
    let mut starts: Vec<Duration> = batch.spans.iter().map(|s| s.0).collect();
    let mut ends: Vec<Duration> = batch.spans.iter().map(|s| s.1).collect();
    starts.sort();
    ends.sort();
    starts
        .iter()
        .skip(concurrency)
        .zip(&ends)
        .map(|(start, end)| start.saturating_sub(*end))
        .collect()
}

fn summarize(batches: &[&Batch], concurrency: usize) -> Summary {
    let tasks: usize = batches.iter().map(|b| b.per_task.len()).sum();
    let per =
        |f: fn(&Batch) -> f64| batches.iter().map(|b| f(b)).sum::<f64>() * 1000.0 / tasks as f64;
    let mut per_task: Vec<Duration> = batches.iter().flat_map(|b| b.per_task.clone()).collect();
    per_task.sort();
    let mut prepare: Vec<Duration> = batches.iter().flat_map(|b| b.prepare.clone()).collect();
    prepare.sort();
    Summary {
        tasks,
        total_median: median(&mut batches.iter().map(|b| b.total).collect::<Vec<_>>()),
        refill: {
            let mut all: Vec<Duration> = batches
                .iter()
                .flat_map(|b| refills(b, concurrency))
                .collect();
            all.sort();
            all
        },
        busy: per_task.iter().map(Duration::as_secs_f64).sum::<f64>()
            / (batches.iter().map(|b| b.total.as_secs_f64()).sum::<f64>() * concurrency as f64),
        per_task,
        prepare,
        self_cpu_ms: per(|b| b.self_cpu),
        child_cpu_ms: per(|b| b.child_cpu),
        mock_cpu_ms: per(|b| b.mock_cpu),
    }
}

fn main() -> ExitCode {
    let opts = match parse_opts() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    match run(&opts) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("fanout: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(opts: &Opts) -> Result<bool, String> {
    // The executor's children run under the guard, as in the `baton` binary.
    baton_process::guard::set_program(Some(baton_process::guard::program_for(&opts.baton)));
    let dir = tempfile::Builder::new()
        .prefix("baton-fanout-")
        .tempdir()
        .map_err(|e| format!("cannot create a temp dir: {e}"))?;
    let tmp = dir.path().to_path_buf();
    let script = tmp.join("rules.json");
    std::fs::write(&script, rules(opts.tool).to_string()).map_err(|e| e.to_string())?;
    let mock = Mock::start(&opts.mock, &script)?;
    let env = isolate(&tmp, &mock.url)?;
    // The children's project root must be the work dir itself, so nothing lands in a repository.
    if baton_state::project_root(&env.work) != env.work {
        return Err(format!(
            "{} is not its own project root",
            env.work.display()
        ));
    }
    let role = find_role(
        &RoleDirs {
            user: None,
            project: None,
            project_trusted: baton_roles::Trust::Yes,
        },
        ROLE,
    )
    .map_err(|e| e.to_string())?;
    let ctx = Ctx {
        opts,
        env: &env,
        role,
        mock: &mock,
    };
    // Like `baton task`: a multi-threaded runtime with two workers.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the tokio runtime: {e}"))?;

    println!(
        "fanout: {} tasks at concurrency {}, {} round(s), {} model turn(s) per task, executor runs {}; mock at {}",
        opts.tasks,
        opts.concurrency,
        opts.rounds,
        if opts.tool { 2 } else { 1 },
        if opts.spawned { "each on its own tokio task" } else { "in one join_all (as delegation)" },
        mock.url
    );
    let mut failures: Vec<String> = Vec::new();
    // Warm-up: one unmeasured batch of C tasks per mode (page cache, the mock's connections).
    for mode in Mode::ALL {
        let b = run_batch(&ctx, &rt, mode, opts.concurrency, "warmup")?;
        failures.extend(
            b.failures
                .into_iter()
                .map(|f| format!("{} (warm-up): {f}", mode.name())),
        );
    }
    let mut batches: Vec<(Mode, Batch)> = Vec::new();
    for round in 0..opts.rounds {
        for k in 0..Mode::ALL.len() {
            let mode = Mode::ALL[(round + k) % Mode::ALL.len()];
            let b = run_batch(&ctx, &rt, mode, opts.tasks, &format!("round{round}"))?;
            eprintln!(
                "round {}: {:<8} {:>7.1} ms total",
                round + 1,
                mode.name(),
                ms(b.total)
            );
            failures.extend(b.failures.iter().map(|f| format!("{}: {f}", mode.name())));
            batches.push((mode, b));
        }
    }
    drop(ctx);
    drop(mock);

    let summaries: Vec<(Mode, Summary)> = Mode::ALL
        .iter()
        .map(|m| {
            let mine: Vec<&Batch> = batches
                .iter()
                .filter(|(mode, _)| mode == m)
                .map(|(_, b)| b)
                .collect();
            (*m, summarize(&mine, opts.concurrency))
        })
        .collect();
    report(opts, &summaries);

    for f in failures.iter().take(10) {
        println!("FAILED {f}");
    }
    if failures.len() > 10 {
        println!("… and {} more failures", failures.len() - 10);
    }
    if opts.keep {
        println!("files kept in {}", dir.keep().display());
    }
    Ok(failures.is_empty())
}

fn report(opts: &Opts, summaries: &[(Mode, Summary)]) {
    let get = |m: Mode| summaries.iter().find(|(k, _)| *k == m).map(|(_, s)| s);
    let (Some(bare), Some(launch), Some(exec)) =
        (get(Mode::Bare), get(Mode::Launch), get(Mode::Executor))
    else {
        return;
    };
    println!();
    println!(
        "{:<9} {:>5} {:>9} {:>9} {:>7} {:>7} {:>7} {:>6} {:>9} {:>9} {:>9}",
        "mode",
        "tasks",
        "total ms",
        "task p50",
        "p10",
        "p90",
        "mean",
        "busy",
        "self cpu",
        "child cpu",
        "mock cpu"
    );
    println!(
        "{:<9} {:>5} {:>9} {:>9} {:>7} {:>7} {:>7} {:>6} {:>9} {:>9} {:>9}",
        "", "", "(median)", "ms", "ms", "ms", "ms", "", "ms/task", "ms/task", "ms/task"
    );
    for (mode, s) in summaries {
        println!(
            "{:<9} {:>5} {:>9.1} {:>9.1} {:>7.1} {:>7.1} {:>7.1} {:>5.0}% {:>9.2} {:>9.2} {:>9.2}",
            mode.name(),
            s.tasks,
            ms(s.total_median),
            ms(quantile(&s.per_task, 0.5)),
            ms(quantile(&s.per_task, 0.1)),
            ms(quantile(&s.per_task, 0.9)),
            mean_ms(&s.per_task),
            s.busy * 100.0,
            s.self_cpu_ms,
            s.child_cpu_ms,
            s.mock_cpu_ms,
        );
    }
    let p50 = |s: &Summary| ms(quantile(&s.per_task, 0.5));
    let overhead = p50(exec) - p50(bare);
    let from_total = (ms(exec.total_median) - ms(bare.total_median)) * opts.concurrency as f64
        / opts.tasks as f64;
    println!();
    println!(
        "executor prepare (write role file + launch_for), per task: p50 {:.2} ms, p90 {:.2} ms",
        ms(quantile(&exec.prepare, 0.5)),
        ms(quantile(&exec.prepare, 0.9))
    );
    println!(
        "overhead per task, executor − bare (medians):    {overhead:+.2} ms   (of which the child's own launch − bare: {:+.2} ms; executor − launch: {:+.2} ms)",
        p50(launch) - p50(bare),
        p50(exec) - p50(launch)
    );
    println!(
        "overhead per task from total wall, (executor − bare) × {} / {}: {from_total:+.2} ms",
        opts.concurrency, opts.tasks
    );
    for (mode, s) in summaries {
        println!(
            "{:<8} a freed slot stays empty: p50 {:.2} ms, p90 {:.2} ms, mean {:.2} ms",
            mode.name(),
            ms(quantile(&s.refill, 0.5)),
            ms(quantile(&s.refill, 0.9)),
            mean_ms(&s.refill)
        );
    }
    println!(
        "executor's own CPU per task (self cpu, executor − bare pool): {:+.2} ms",
        exec.self_cpu_ms - bare.self_cpu_ms
    );
    println!(
        "total wall ratio executor / bare: {:.3}   (launch / bare: {:.3})",
        ms(exec.total_median) / ms(bare.total_median),
        ms(launch.total_median) / ms(bare.total_median)
    );
    // The median window starts once a run holds its permit, so it misses time a freed slot stays
    // empty; the figure from total wall includes it. The goal is judged on the larger.
    let worst = overhead.max(from_total);
    println!(
        "goal: < 10 ms/task overhead: {} (larger of the two estimates: {worst:+.2} ms)",
        if worst < 10.0 { "yes" } else { "no" }
    );
}
