//! Helpers shared by the end-to-end tests.
#![allow(dead_code)]

pub mod mcp;
pub mod schema;
pub mod tour;
pub mod workflow;

/// A project role of backend `command` running `sh -c command` (the task arrives on its stdin).
pub fn command_role(sb: &baton_testkit::fixture::Sandbox, name: &str, command: &str) {
    sb.write(
        format!(".baton/roles/{name}.md"),
        &format!(
            "---\nname: {name}\ndescription: test role\ntools: []\nbackend: command\ncommand: [sh, -c, {}]\n---\nDo it.\n",
            serde_json::to_string(command).unwrap()
        ),
    );
}

/// A Flow of two units, `a` and `b`, started by the CLI in a fresh repository and left blocked
/// by the reviewer's findings on `b` (exit 4); the sandbox and the Flow's id.
pub fn blocked_flow() -> (baton_testkit::fixture::Sandbox, String) {
    let (sb, roles) = baton_testkit::fixture::Sandbox::flow_repo(env!("CARGO_BIN_EXE_baton"));
    roles.reviewer("b", None, "printf 'FAIL: b.txt is wrong'");
    let units = sb.path("units.json");
    std::fs::write(
        &units,
        r#"{"units": [
 {"id": "a", "name": "Add a", "task": "Add a.txt", "validation": [{"command": "test", "args": ["-f", "a.txt"]}], "review": "check a"},
 {"id": "b", "name": "Add b", "task": "Add b.txt", "validation": [{"command": "test", "args": ["-f", "b.txt"]}], "review": "check b"}
]}"#,
    )
    .unwrap();
    baton_testkit::fixture::assert_exit(
        &sb.run(&["flow", "start", &units.display().to_string()]),
        4,
    );
    let id = std::fs::read_dir(sb.work().join(".baton/state/flows"))
        .unwrap()
        .filter_map(|e| {
            e.unwrap()
                .file_name()
                .into_string()
                .unwrap()
                .strip_suffix(".events.jsonl")
                .map(str::to_string)
        })
        .next()
        .unwrap();
    (sb, id)
}

/// A mock model that makes one `bash` call running `command`, then answers "Done.".
pub fn one_command(command: &str) -> baton_testkit::MockServer {
    baton_testkit::MockServer::builder()
        .turn(baton_testkit::Turn::tool_call(
            "call_b",
            "bash",
            serde_json::json!({ "command": command }),
        ))
        .turn(baton_testkit::Turn::text("Done."))
        .start_blocking()
}

/// A committed repository on `main` whose sessions talk to `server`: what an attack runs in.
pub fn attacked_project(server: &baton_testkit::MockServer) -> baton_testkit::fixture::Sandbox {
    let p = baton_testkit::fixture::Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .mock_provider(server, "openai", "");
    p.init_repo("main");
    p.write("README", "hi\n");
    p.commit_all("init");
    p
}

/// One `baton agent --json` session in `p` that must exit 0; its stdout.
pub fn agent_go(p: &baton_testkit::fixture::Sandbox) -> String {
    let out = p.run(&["agent", "--json", "--model", "mock/m", "go"]);
    baton_testkit::fixture::assert_exit(&out, 0);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Starts `baton mcp ARGS` (with `--http`) and reads the URL it prints on stderr once it
/// listens; the rest of stderr is drained in a thread so the server never blocks on it.
pub fn mcp_http(
    sb: &baton_testkit::fixture::Sandbox,
    args: &[&str],
) -> (std::process::Child, String) {
    use std::io::BufRead as _;
    let mut cmd = sb.baton(&[&["mcp"], args].concat());
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    let url = loop {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap() == 0 {
            panic!("baton mcp ended before it listened: {said}");
        }
        if let Some(url) = line.trim().strip_prefix("baton mcp: listening on ") {
            break url.to_string();
        }
        said.push_str(&line);
    };
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    (child, url)
}

/// What the model got back from its one `bash` call.
pub fn bash_result(server: &baton_testkit::MockServer) -> String {
    let requests = server.model_requests();
    let results = requests.last().unwrap().tool_results();
    assert_eq!(results.len(), 1);
    results[0].text.clone()
}

/// What a refused write says: Landlock's `EACCES` or the read-only mount's `EROFS`.
pub fn refused_write(text: &str) -> bool {
    text.contains("Permission denied") || text.contains("Read-only file system")
}

/// The script of one assignment: the Coordinator assigns, the Executor writes, reads back,
/// selects the read and submits; the Coordinator closes the unit and answers.
pub fn investigate_and_fix() -> Vec<baton_testkit::Turn> {
    use baton_testkit::Turn;
    use serde_json::json;
    vec![
        Turn::tool_call(
            "c1",
            "delegate",
            json!({"operation": "assign", "unit_outcome": "The user's request is done.", "contract": "Create hello.txt holding `hi`, read it back, and return the read as evidence."}),
        ),
        Turn::tool_call(
            "e1",
            "write",
            json!({"path": "hello.txt", "content": "hi\n"}),
        )
        .with_text("Writing it first."),
        Turn::tool_call("e2", "read", json!({"path": "hello.txt"})),
        Turn::tool_call(
            "e3",
            "project",
            json!({"operation": "add", "refs": ["ctx:t2"]}),
        ),
        Turn::tool_call(
            "e4",
            "return",
            json!({"operation": "submit", "report": "hello.txt now holds hi; the read shows it.", "outcome": "completed"}),
        ),
        Turn::tool_call(
            "c2",
            "unit",
            json!({"operation": "close", "outcome": "accepted", "assessment": "The selected read shows hi."}),
        ),
        Turn::text("Done: hello.txt holds hi."),
    ]
}

/// `baton serve ARGS` started in `sb`, and the URL it printed once it listens (the real port).
pub fn serve_baton(
    sb: &baton_testkit::fixture::Sandbox,
    args: &[&str],
) -> (std::process::Child, String) {
    use std::io::BufRead as _;
    let mut all = vec!["serve"];
    all.extend_from_slice(args);
    let mut child = sb
        .baton(&all)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let start = line.find("http://").unwrap_or_else(|| panic!("{line}"));
    let url = line[start..].split_whitespace().next().unwrap().to_string();
    (child, url)
}

/// The first model request that carries a tool result for `call_id`, and that result's text.
pub fn result_for(
    server: &baton_testkit::MockServer,
    call_id: &str,
) -> (baton_testkit::RecordedRequest, String) {
    let requests = server.model_requests();
    requests
        .iter()
        .find_map(|r| {
            r.tool_results()
                .into_iter()
                .find(|t| t.call_id == call_id)
                .map(|t| (r.clone(), t.text))
        })
        .unwrap_or_else(|| panic!("no request carried the result of {call_id}: {requests:#?}"))
}
