//! `baton run` with peer agent CLIs as workflow roles: a project role of a workflow role's name
//! replaces the built-in one on any backend. Here the builder is the real Codex CLI and the
//! reviewer the real Claude Code, each pointed at the mock model server, which answers by the
//! phase the scaffold names (`- Task Phase: …`); every other role is a `command` script from
//! `common::workflow`. Codex creates `feature.txt` through its own shell tool, so the file really
//! appears. The programs are found as in the live interop tests (`BATON_TEST_CODEX`,
//! `BATON_TEST_CLAUDE`, else `bench/node_modules/.bin/…`: `npm ci --prefix bench`); a missing one
//! prints a note and the test passes, except in CI, where it fails. Nothing waits on time.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Output;

mod common;

use baton_testkit::fixture::{assert_exit, find_program, skip_live};
use baton_testkit::Role as Speaker;
use baton_testkit::{MockServer, MockServerBuilder, RecordedRequest, Turn};
use common::workflow::{self, out, said, Wf};
use serde_json::{json, Value};

/// The text of the first user message that names a phase: the scaffold the child was given
/// (Claude Code may put reminders of its own in front of it).
fn scaffold(req: &RecordedRequest) -> String {
    req.messages()
        .into_iter()
        .filter(|m| m.role == Speaker::User)
        .map(|m| m.text)
        .find(|t| t.contains("- Task Phase: "))
        .unwrap_or_default()
}

/// The phase the scaffold of a model request names.
fn phase_of(req: &RecordedRequest) -> String {
    scaffold(req)
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("- Task Phase: "))
        .unwrap_or("")
        .trim()
        .to_string()
}

/// Whether a request is the reviewer's: the review, or the re-review after a remediation.
fn is_review(req: &RecordedRequest) -> bool {
    matches!(phase_of(req).as_str(), "build-review" | "re-review")
}

fn last_is_tool_result(req: &RecordedRequest) -> bool {
    req.messages()
        .last()
        .is_some_and(|m| m.role == Speaker::Tool)
}

/// The project config: every model class on `route`, the `mock` provider at `server` (for the
/// route to name a known provider) and the peer `programs`.
fn project_config(wf: &Wf, server: &MockServer, route: &str, programs: &[(&str, &Path)]) {
    let programs: Vec<String> = programs
        .iter()
        .map(|(b, p)| format!("{b} = \"{}\"", p.display()))
        .collect();
    wf.sb.write(
        ".baton/config.toml",
        &format!(
            "[providers.mock]\nkind = \"openai-responses\"\nbase_url = \"{}/v1\"\n\
             [models]\nfast = \"{route}\"\nbalanced = \"{route}\"\nfrontier = \"{route}\"\n\
             [executor]\nprograms = {{ {} }}\n",
            server.url(),
            programs.join(", ")
        ),
    );
}

/// Replaces the workflow role `name` with a project role on `backend`.
fn peer_role(wf: &Wf, name: &str, backend: &str, tools: &str) {
    wf.sb.write(
        format!(".baton/roles/{name}.md"),
        &format!(
            "---\nname: {name}\ndescription: a peer agent\ntools: {tools}\nbackend: {backend}\n---\n\
             You are the {name} of a test workflow. Follow the task.\n"
        ),
    );
}

/// The `agent_completed` events of `phase`.
fn completed(wf: &Wf, phase: &str) -> Vec<Value> {
    wf.events()
        .into_iter()
        .filter(|e| e["event"] == "agent_completed" && e["phase"] == phase)
        .collect()
}

/// A codex home whose provider `mock` speaks the Responses API to `server`.
fn codex_home(wf: &Wf, server: &MockServer) -> PathBuf {
    let home = wf.sb.home().join(".codex");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("config.toml"),
        format!(
            "approval_policy = \"never\"\ncheck_for_update_on_startup = false\n\
             [features]\nplugins = false\n[analytics]\nenabled = false\n\
             [model_providers.mock]\nname = \"mock\"\nbase_url = \"{}/v1\"\n\
             wire_api = \"responses\"\nenv_key = \"MOCK_API_KEY\"\n",
            server.url()
        ),
    )
    .unwrap();
    home
}

fn run_codex(wf: &Wf, home: &Path, args: &[&str]) -> Output {
    let tmp = wf.sb.path("codex-tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    wf.sb.run_with(
        args,
        &[
            ("CODEX_HOME", home.to_str().unwrap()),
            ("TMPDIR", tmp.to_str().unwrap()),
            ("MOCK_API_KEY", "mock"),
        ],
    )
}

#[test]
fn a_codex_builder_writes_the_feature_through_its_shell_and_its_contract_drives_the_workflow() {
    let Some(codex) = find_program("BATON_TEST_CODEX", "bench/node_modules/.bin/codex") else {
        return skip_live("codex", "BATON_TEST_CODEX", "run npm ci --prefix bench");
    };
    let server = MockServer::builder()
        .when(
            |r| phase_of(r) == "build-implement" && !last_is_tool_result(r),
            Turn::tool_call(
                "call_feature_1",
                "exec_command",
                json!({"cmd": "printf 'feature\\n' > feature.txt"}),
            )
            .usage(1000, 0, 100),
        )
        .when(
            |r| phase_of(r) == "build-implement",
            Turn::text(said(workflow::BUILDER_PASS)).usage(1200, 0, 200),
        )
        .start_blocking();
    let wf = Wf::new();
    wf.answer("integration-verifier", workflow::VERIFY_PASS);
    peer_role(
        &wf,
        "component-builder",
        "codex",
        "[read, write, edit, bash]",
    );
    project_config(&wf, &server, "mock/gpt-5.5", &[("codex", &codex)]);
    let home = codex_home(&wf, &server);

    let o = run_codex(&wf, &home, &["run", "add a feature file", "--trivial"]);
    assert_exit(&o, 0);
    assert!(out(&o).contains("proof: passed"), "{}", out(&o));
    assert_eq!(
        std::fs::read_to_string(wf.sb.work().join("feature.txt")).unwrap(),
        "feature\n"
    );
    assert_eq!(wf.dispatched(), ["build-implement", "build-verify"]);
    assert_eq!(wf.calls("component-builder"), 0, "the script builder ran");
    let built = completed(&wf, "build-implement");
    assert_eq!(built.len(), 1, "{built:?}");
    let details = &built[0]["details"];
    assert_eq!(details["backend"], "codex", "{details}");
    assert_eq!(details["route"], "mock/gpt-5.5", "{details}");
    assert_eq!(built[0]["decision"], "pass", "{}", built[0]);
    assert_eq!(details["usage"]["output_tokens"], 300, "{details}");

    // Codex got the scaffold (after the role's instructions) and asked for the route's model;
    // its shell really ran: the second request carries the tool's result for the call.
    let requests: Vec<RecordedRequest> = server
        .model_requests()
        .into_iter()
        .filter(|r| phase_of(r) == "build-implement")
        .collect();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    let first = requests[0].body.to_string();
    assert!(first.contains("## Task Context"), "{first}");
    assert!(first.contains("You are the component-builder"), "{first}");
    assert_eq!(requests[0].body["model"], "gpt-5.5");
    let results = requests[1].tool_results();
    assert_eq!(results.len(), 1, "{:#?}", requests[1]);
    assert_eq!(results[0].call_id, "call_feature_1");
    server.assert_tool_results_answer_calls();
}

/// A mock for Claude Code: `reviews` answer the reviewer's requests, in order (the last
/// repeats); every other request (Claude's own side calls) gets a plain `ok`.
fn claude_mock(reviews: &[&'static str]) -> MockServer {
    let mut b: MockServerBuilder = MockServer::builder();
    let (&last, first) = reviews.split_last().unwrap();
    for &text in first {
        b = b.when_once(is_review, Turn::text(said(text)).usage(800, 0, 150));
    }
    b.when(is_review, Turn::text(said(last)).usage(800, 0, 150))
        .when(|_| true, Turn::text("ok"))
        .start_blocking()
}

/// A full BUILD whose reviewer is Claude Code on `server` and whose other roles are scripts.
fn claude_build(server: &MockServer, claude: &Path) -> (Wf, Output) {
    let wf = Wf::new();
    wf.happy();
    peer_role(&wf, "code-reviewer", "claude", "[read, grep, find]");
    project_config(&wf, server, "mock/claude-sonnet-4-5", &[("claude", claude)]);
    let config = wf.sb.home().join(".claude");
    std::fs::create_dir_all(&config).unwrap();
    let url = server.url();
    let o = wf.sb.run_with(
        &["run", "add a feature file"],
        &[
            ("CLAUDE_CONFIG_DIR", config.to_str().unwrap()),
            ("ANTHROPIC_BASE_URL", &url),
            ("ANTHROPIC_API_KEY", "mock"),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
            ("DISABLE_AUTOUPDATER", "1"),
            ("DISABLE_TELEMETRY", "1"),
        ],
    );
    (wf, o)
}

fn find_claude() -> Option<PathBuf> {
    let found = find_program("BATON_TEST_CLAUDE", "bench/node_modules/.bin/claude");
    if found.is_none() {
        skip_live("claude", "BATON_TEST_CLAUDE", "run npm ci --prefix bench");
    }
    found
}

/// The review requests Claude Code sent, each with the scaffold, to the Messages endpoint.
fn review_requests(server: &MockServer) -> Vec<RecordedRequest> {
    let reviews: Vec<RecordedRequest> = server
        .model_requests()
        .into_iter()
        .filter(is_review)
        .collect();
    for r in &reviews {
        assert!(r.path.starts_with("/v1/messages"), "{}", r.path);
        assert_eq!(r.model(), Some("claude-sonnet-4-5"));
        assert!(scaffold(r).contains("## Task Context"), "{r:#?}");
    }
    reviews
}

#[test]
fn a_claude_reviewer_approves_and_the_build_completes() {
    let Some(claude) = find_claude() else { return };
    let server = claude_mock(&[workflow::REVIEW_APPROVE]);
    let (wf, o) = claude_build(&server, &claude);
    assert_exit(&o, 0);
    assert!(out(&o).contains("proof: passed"), "{}", out(&o));
    assert_eq!(wf.snapshot()["run_state"], "completed");
    assert_eq!(wf.calls("code-reviewer"), 0, "the script reviewer ran");
    assert_eq!(wf.calls("component-builder"), 1);
    assert_eq!(wf.calls("integration-verifier"), 1);
    let reviewed = completed(&wf, "build-review");
    assert_eq!(reviewed.len(), 1, "{reviewed:?}");
    assert_eq!(
        reviewed[0]["details"]["backend"], "claude",
        "{}",
        reviewed[0]
    );
    assert_eq!(reviewed[0]["decision"], "pass", "{}", reviewed[0]);
    assert_eq!(review_requests(&server).len(), 1);
}

#[test]
fn a_claude_reviewer_asking_for_changes_gets_a_remediation_then_approves() {
    let Some(claude) = find_claude() else { return };
    let server = claude_mock(&[workflow::REVIEW_CRITICAL, workflow::REVIEW_APPROVE]);
    let (wf, o) = claude_build(&server, &claude);
    assert_exit(&o, 0);
    assert!(out(&o).contains("proof: passed"), "{}", out(&o));
    // The builder ran for the phase and once more to fix what the reviewer found.
    assert_eq!(wf.calls("component-builder"), 2);
    assert!(wf
        .prompt("component-builder", 2)
        .contains("the feature is never wired in"));
    let snap = wf.snapshot();
    assert!(
        snap["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["kind"] == "remfix"),
        "{snap}"
    );
    let reviewed: Vec<Value> = wf
        .events()
        .into_iter()
        .filter(|e| e["event"] == "agent_completed" && e["agent"] == "code-reviewer")
        .collect();
    assert_eq!(reviewed.len(), 2, "{reviewed:#?}");
    assert!(reviewed.iter().all(|e| e["details"]["backend"] == "claude"));
    assert_eq!(reviewed[0]["decision"], "fail", "{}", reviewed[0]);
    assert_eq!(reviewed[1]["decision"], "pass", "{}", reviewed[1]);
    assert_eq!(review_requests(&server).len(), 2);
}
