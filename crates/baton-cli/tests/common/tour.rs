//! One project holding workflows, Flows, background tasks and sessions in every state, each made
//! by the built `baton` against scripted roles and the mock model: the dashboard's fixture.

use std::path::PathBuf;
use std::process::{Child, Stdio};

use baton_testkit::fixture::{assert_exit, wait_until, FlowRoles, Sandbox};
use baton_testkit::{MockServer, Turn};
use serde_json::json;

use super::workflow::*;

const WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// The project and the ids of what it holds, by state.
pub struct Tour {
    pub wf: Wf,
    pub mock: MockServer,
    pub workflow_done: String,
    pub workflow_checkpoint: String,
    pub workflow_failed: String,
    pub workflow_running: String,
    pub flow_done: String,
    pub flow_blocked: String,
    pub task_done: String,
    pub task_failed: String,
    pub task_running: String,
    pub task_cancelled: String,
    pub task_priced: String,
    pub session_plain: String,
    pub session_routed: String,
    /// A managed worker, idle after one answered prompt.
    pub worker: String,
    /// Created to let the running workflow and task end (`release`).
    go: PathBuf,
    running: Option<Child>,
}

impl Tour {
    /// Lets the running workflow and task end, and waits for the workflow's process.
    pub fn release(&mut self) {
        let _ = self.wf.sb.run(&["worker", "stop", &self.worker]);
        let _ = std::fs::write(&self.go, "");
        if let Some(mut c) = self.running.take() {
            let _ = c.wait();
        }
    }
}

impl Drop for Tour {
    fn drop(&mut self) {
        self.release();
    }
}

fn ids(sb: &Sandbox, dir: &str, suffix: &str) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(sb.work().join(".baton/state").join(dir))
        .map(|d| {
            d.filter_map(|e| {
                e.unwrap()
                    .file_name()
                    .into_string()
                    .unwrap()
                    .strip_suffix(suffix)
                    .map(str::to_string)
            })
            .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// The one id in `after` that is not in `before`.
fn new_id(before: &[String], after: Vec<String>) -> String {
    let mut new: Vec<String> = after.into_iter().filter(|i| !before.contains(i)).collect();
    assert_eq!(new.len(), 1, "{new:?}");
    new.pop().unwrap()
}

fn task(sb: &Sandbox, role: &str, name: &str, extra: &[&str]) -> String {
    let mut args = vec!["task", "--background", "--role", role, "--name", name];
    args.extend_from_slice(extra);
    args.push("do it");
    let out = sb.run(&args);
    assert_exit(&out, 0);
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn task_state(sb: &Sandbox, id: &str) -> String {
    let out = sb.run(&["task", "status", id, "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    v["phase"].as_str().unwrap_or("").to_string()
}

fn wait_task(sb: &Sandbox, id: &str, state: &str) {
    assert!(
        wait_until(WAIT, || task_state(sb, id) == state),
        "task {id} is {}, not {state}",
        task_state(sb, id)
    );
}

fn session_of(out: &std::process::Output) -> String {
    let first: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
    first["session_id"].as_str().unwrap().to_string()
}

/// Builds the project (about ten runs of the binary).
pub fn project() -> Tour {
    // The model's script, in the order the runs below ask it: a session that writes a file, a
    // priced background task, then a routed session (Coordinator and Executor).
    let mut steps: Vec<baton_testkit::Step> = vec![
        Turn::tool_call(
            "w1",
            "write",
            json!({"path": "notes.txt", "content": "first line\nsecond line\n"}),
        )
        .into(),
        Turn::text(
            "Wrote **notes.txt**:\n\n- first line\n- second line\n\n`cat notes.txt` shows it.",
        )
        .into(),
        Turn::text("Priced answer.").into(),
    ];
    steps.extend(super::investigate_and_fix().into_iter().map(Into::into));
    steps.push(Turn::text("the aide's answer\nand more").into());
    let mock = MockServer::builder().steps(steps).start_blocking();
    let sb = Sandbox::new().mock_provider(
        &mock,
        "openai",
        "\n[routing]\ncoordinator = \"mock/coord-model\"\nexecutor = \"mock/exec-model\"\n\n[prices.\"mock/priced-m\"]\ninput = 3.0\noutput = 15.0\n",
    );
    let wf = Wf::with(sb);
    let sb = &wf.sb;
    let flow_roles = FlowRoles::install(sb);
    super::command_role(sb, "helper", "cat >/dev/null; echo helped");
    super::command_role(sb, "failing", "cat >/dev/null; echo broken >&2; exit 3");
    let go = sb.path("go");
    super::command_role(
        sb,
        "gated",
        &format!(
            "cat >/dev/null; while [ ! -f '{}' ]; do sleep 0.02; done; echo released",
            go.display()
        ),
    );
    sb.write(
        ".baton/roles/priced.md",
        "---\nname: priced\ndescription: a model role\ntools: []\n---\nAnswer.\n",
    );
    sb.write(
        ".baton/roles/writer.md",
        "---\nname: writer\ndescription: a model role that writes\ntools: [read, write]\n---\nDo it.\n",
    );
    sb.commit_all("roles");

    // Flows: one landed, one blocked by its reviewer.
    let units = |ids: [&str; 2]| {
        let path = sb.path(format!("units-{}.json", ids[0]));
        let unit = |u: &str| {
            json!({"id": u, "name": format!("Add {u}"), "task": format!("Add {u}.txt"),
                   "validation": [{"command": "test", "args": ["-f", format!("{u}.txt")]}],
                   "review": format!("check {u}")})
        };
        std::fs::write(
            &path,
            json!({"units": [unit(ids[0]), unit(ids[1])]}).to_string(),
        )
        .unwrap();
        path.display().to_string()
    };
    assert_exit(&sb.run(&["flow", "start", &units(["c", "d"])]), 0);
    let flow_done = ids(sb, "flows", ".events.jsonl").pop().unwrap();
    flow_roles.reviewer("b", None, "printf 'FAIL: b.txt is wrong'");
    let before = ids(sb, "flows", ".events.jsonl");
    assert_exit(&sb.run(&["flow", "start", &units(["a", "b"])]), 4);
    let flow_blocked = new_id(&before, ids(sb, "flows", ".events.jsonl"));

    // Workflows: completed (with a budget), stopped at its checkpoint, failed.
    wf.happy()
        .answer_nth("code-reviewer", 2, REVIEW_CRITICAL_AND_HIGH);
    assert_exit(
        &wf.run(&["run", "add a feature file", "--budget-usd", "2"]),
        0,
    );
    let workflow_done = ids(sb, "workflows", ".events.jsonl").pop().unwrap();
    let before = ids(sb, "workflows", ".events.jsonl");
    assert_exit(&wf.run(&["run", "add a second feature"]), 4);
    let workflow_checkpoint = new_id(&before, ids(sb, "workflows", ".events.jsonl"));
    let before = ids(sb, "workflows", ".events.jsonl");
    // The builder answers in prose: no contract, so the workflow fails ([22/24]: drawn as
    // failed, with the reason, never as a completed step).
    wf.answer_nth("component-builder", 3, "echo 'Done, all looks fine.'\n");
    let failed = wf.run(&["run", "add a third feature"]);
    let workflow_failed = new_id(&before, ids(sb, "workflows", ".events.jsonl"));
    assert_ne!(failed.status.code(), Some(0), "{}", err(&failed));

    // Background tasks: done, failed, cancelled, priced (a model's), running.
    let task_done = task(sb, "helper", "helped", &[]);
    wait_task(sb, &task_done, "done");
    let task_failed = task(sb, "failing", "broken", &[]);
    wait_task(sb, &task_failed, "failed");
    let task_cancelled = task(sb, "gated", "stopped", &[]);
    wait_task(sb, &task_cancelled, "running");
    assert_exit(&sb.run(&["task", "cancel", &task_cancelled]), 0);
    wait_task(sb, &task_cancelled, "cancelled");

    // Sessions: one that writes a file, a priced task's, a routed one.
    let out = sb.run(&[
        "agent",
        "--json",
        "--role",
        "writer",
        "--model",
        "mock/m",
        "write notes",
    ]);
    assert_exit(&out, 0);
    let session_plain = session_of(&out);
    let task_priced = task(sb, "priced", "priced", &["--model", "mock/priced-m"]);
    wait_task(sb, &task_priced, "done");
    let out = sb.run(&[
        "agent",
        "--json",
        "--role",
        "writer",
        "--routing",
        "auto",
        "make hello.txt",
    ]);
    assert_exit(&out, 0);
    let session_routed = session_of(&out);

    // A managed worker with one answered (priced) prompt.
    assert_exit(
        &sb.run(&[
            "worker",
            "start",
            "aide",
            "--role",
            "priced",
            "--model",
            "mock/priced-m",
        ]),
        0,
    );
    assert_exit(
        &sb.run(&["worker", "send", "aide", "summarise the notes"]),
        0,
    );

    // Running: a task and a workflow whose builder waits for `go`.
    let task_running = task(sb, "gated", "waiting", &[]);
    wait_task(sb, &task_running, "running");
    wf.answer_nth(
        "component-builder",
        4,
        &format!(
            "while [ ! -f '{}' ]; do sleep 0.02; done\n{BUILDER_PASS}",
            go.display()
        ),
    );
    let before = ids(sb, "workflows", ".events.jsonl");
    let running = wf
        .sb
        .baton(&["run", "add a fourth feature"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(wait_until(WAIT, || wf.calls("component-builder") >= 4));
    let workflow_running = new_id(&before, ids(sb, "workflows", ".events.jsonl"));
    Tour {
        wf,
        mock,
        workflow_done,
        workflow_checkpoint,
        workflow_failed,
        workflow_running,
        flow_done,
        flow_blocked,
        task_done,
        task_failed,
        task_running,
        task_cancelled,
        task_priced,
        session_plain,
        session_routed,
        worker: "aide".into(),
        go,
        running: Some(running),
    }
}
