//! `baton run` end to end with the built-in workflow roles on their default `baton` backend: every
//! dispatch is a real `baton agent` child talking to the mock model server. The mock answers by
//! the phase the scaffold names (`- Task Phase: …`), so the reviewer and the hunter can run
//! together; the builder writes `feature.txt` with its `write` tool, then ends with its contract.
//! Each answer reports its own token usage, so the spend is known to the token. Nothing waits on
//! time.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Output;

mod common;

use baton_testkit::fixture::{assert_exit, Sandbox};
use baton_testkit::Role as Speaker;
use baton_testkit::{MockServer, RecordedRequest, Turn};
use common::workflow::{self, said};
use serde_json::{json, Value};

const REVIEW_APPROVE: &str = r#"CONTRACT {"s":"APPROVE","b":false,"cr":0}
## Review: Approve

### Critical Issues
- none

### Checked
- feature.txt:1 the line is there
- src/main.rs:1 unchanged
- src/lib.rs:2 unchanged
"#;

/// The token usage the mock reports, `(input, output)`: the builder's two turns (the write, then
/// the contract) and one turn of each other role.
const BUILDER_WRITE: (u64, u64) = (1000, 100);
const BUILDER_END: (u64, u64) = (1200, 200);
const REVIEWER: (u64, u64) = (800, 150);
const HUNTER: (u64, u64) = (700, 120);
const VERIFIER: (u64, u64) = (900, 180);
const DOC_SYNCER: (u64, u64) = (400, 50);

/// Builder dispatch: 2200 in + 300 out.
const BUILDER_TOKENS: u64 = BUILDER_WRITE.0 + BUILDER_WRITE.1 + BUILDER_END.0 + BUILDER_END.1;

/// `[models]`: one mock model per class (the builder, reviewer and hunter on `balanced`, the
/// verifier on `frontier`, the doc-syncer on `fast`).
const MODELS: &str =
    "[models]\nfast = \"mock/fast-m\"\nbalanced = \"mock/bal-m\"\nfrontier = \"mock/front-m\"\n";

/// USD per million tokens for the three routes.
const PRICES: &str = "[prices.\"mock/bal-m\"]\ninput = 1.0\noutput = 10.0\n[prices.\"mock/front-m\"]\ninput = 2.0\noutput = 20.0\n[prices.\"mock/fast-m\"]\ninput = 0.5\noutput = 1.0\n";

fn turn(text: &str, usage: (u64, u64)) -> Turn {
    Turn::text(text).usage(usage.0, 0, usage.1)
}

/// The text of the first user message: the scaffold the child was given.
fn first_user(req: &RecordedRequest) -> String {
    req.messages()
        .into_iter()
        .find(|m| m.role == Speaker::User)
        .map(|m| m.text)
        .unwrap_or_default()
}

/// The phase the scaffold of a model request names.
fn phase_of(req: &RecordedRequest) -> String {
    first_user(req)
        .lines()
        .find_map(|l| l.strip_prefix("- Task Phase: "))
        .unwrap_or("")
        .to_string()
}

fn last_is_tool_result(req: &RecordedRequest) -> bool {
    req.messages()
        .last()
        .is_some_and(|m| m.role == Speaker::Tool)
}

/// A mock server that answers every workflow role by the phase its scaffold names.
fn mock() -> MockServer {
    let is = |phase: &'static str| move |r: &RecordedRequest| phase_of(r) == phase;
    MockServer::builder()
        .when(
            |r| phase_of(r) == "build-implement" && !last_is_tool_result(r),
            Turn::tool_call(
                "",
                "write",
                json!({"path": "feature.txt", "content": "feature\n"}),
            )
            .usage(BUILDER_WRITE.0, 0, BUILDER_WRITE.1),
        )
        .when(
            is("build-implement"),
            turn(said(workflow::BUILDER_PASS), BUILDER_END),
        )
        .when(is("build-review"), turn(REVIEW_APPROVE, REVIEWER))
        .when(is("build-hunt"), turn(said(workflow::HUNT_CLEAN), HUNTER))
        .when(
            is("build-verify"),
            turn(said(workflow::VERIFY_PASS), VERIFIER),
        )
        .when(
            is("build-doc-sync"),
            turn(said(workflow::DOCS_SKIPPED), DOC_SYNCER),
        )
        .start_blocking()
}

/// A fresh repository with one commit (`README`); the same initial tree every time.
fn repo(sb: Sandbox) -> Sandbox {
    let sb = sb.baton_exe(env!("CARGO_BIN_EXE_baton"));
    sb.init_repo("main");
    sb.write("README", "hello\n");
    sb.commit_all("initial");
    sb
}

/// A repository whose model classes are routed to `server`, with `extra` TOML.
fn project(server: &MockServer, extra: &str) -> Sandbox {
    repo(Sandbox::new().mock_provider(server, "openai", &format!("{MODELS}{extra}")))
}

/// [`project`] whose provider is not a local server (`local = false`): its models are unpriced
/// unless `[prices]` names them, as a remote server's would be.
fn remote_project(server: &MockServer) -> Sandbox {
    repo(Sandbox::new().mock_provider(server, "openai", &format!("local = false\n{MODELS}")))
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn workflows(sb: &Sandbox) -> std::path::PathBuf {
    sb.work().join(".baton/state/workflows")
}

/// The one workflow's id.
fn id(sb: &Sandbox) -> String {
    let mut ids: Vec<String> = std::fs::read_dir(workflows(sb))
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".events.jsonl").map(str::to_string)
        })
        .collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
    ids.pop().unwrap()
}

fn events(sb: &Sandbox) -> Vec<Value> {
    let path = workflows(sb).join(format!("{}.events.jsonl", id(sb)));
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn snapshot(sb: &Sandbox) -> Value {
    let path = workflows(sb).join(format!("{}.json", id(sb)));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The phases dispatched, in order (`agent_started` events).
fn dispatched(sb: &Sandbox) -> Vec<String> {
    events(sb)
        .iter()
        .filter(|e| e["event"] == "agent_started")
        .map(|e| e["phase"].as_str().unwrap().to_string())
        .collect()
}

/// The phases the mock got requests for, each once, in the order first seen.
fn phases_asked(server: &MockServer) -> Vec<String> {
    let mut seen = Vec::new();
    for r in server.model_requests() {
        let p = phase_of(&r);
        if !seen.contains(&p) {
            seen.push(p);
        }
    }
    seen
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// Runs a scripted BUILD (`--trivial`: builder → verifier → memory) against the mock model
/// server with `--record dir`, and returns the phases it dispatched. `dir` then holds one
/// cassette per dispatch, `<phase>-<attempt>.json`, that `baton run --replay dir` plays in a
/// fresh copy of the same repository with no provider configured (what a demo ships).
pub fn record_build(dir: &Path, trivial: bool) -> Vec<String> {
    let server = mock();
    let sb = project(&server, "");
    std::fs::create_dir_all(dir).unwrap();
    let mut args = vec![
        "run",
        "add a feature file",
        "--record",
        dir.to_str().unwrap(),
    ];
    if trivial {
        args.push("--trivial");
    }
    let o = sb.run(&args);
    assert_exit(&o, 0);
    server.assert_tool_results_answer_calls();
    dispatched(&sb)
}

#[test]
fn a_build_runs_through_real_baton_children_and_counts_their_tokens_and_cost() {
    let server = mock();
    let sb = project(&server, PRICES);
    let o = sb.run(&["run", "add a feature file"]);
    assert_exit(&o, 0);
    let brief = out(&o);
    assert!(brief.contains("proof: passed"), "{brief}");
    assert_eq!(
        std::fs::read_to_string(sb.work().join("feature.txt")).unwrap(),
        "feature\n"
    );
    let mut phases = dispatched(&sb);
    phases[1..3].sort();
    assert_eq!(
        phases,
        [
            "build-implement",
            "build-hunt",
            "build-review",
            "build-verify",
            "build-doc-sync"
        ]
    );
    // Each child got the scaffold; the adversarial reviewer got no memory summary.
    let requests = server.model_requests();
    assert_eq!(
        requests.len(),
        6,
        "two builder turns and one per other role"
    );
    for r in &requests {
        assert!(first_user(r).contains("## Task Context\n"), "{r:?}");
    }
    let review = requests
        .iter()
        .find(|r| phase_of(r) == "build-review")
        .unwrap();
    assert!(!first_user(review).contains("## Memory Summary"));
    // Every class went to its own mock model.
    let model_of = |phase: &str| {
        let r = requests.iter().find(|r| phase_of(r) == phase).unwrap();
        r.body["model"].as_str().unwrap().to_string()
    };
    assert_eq!(model_of("build-implement"), "bal-m");
    assert_eq!(model_of("build-review"), "bal-m");
    assert_eq!(model_of("build-verify"), "front-m");
    assert_eq!(model_of("build-doc-sync"), "fast-m");
    server.assert_tool_results_answer_calls();

    // The spend: every token the mock reported, priced per route.
    let spent = &snapshot(&sb)["spent"];
    let input = BUILDER_WRITE.0 + BUILDER_END.0 + REVIEWER.0 + HUNTER.0 + VERIFIER.0 + DOC_SYNCER.0;
    let output =
        BUILDER_WRITE.1 + BUILDER_END.1 + REVIEWER.1 + HUNTER.1 + VERIFIER.1 + DOC_SYNCER.1;
    assert_eq!(spent["input_tokens"], input, "{spent}");
    assert_eq!(spent["output_tokens"], output, "{spent}");
    assert_eq!(spent["dispatches"], 5, "{spent}");
    assert_eq!(spent["unpriced_dispatches"], 0, "{spent}");
    let per_million = |tokens: u64, usd: f64| tokens as f64 * usd / 1e6;
    let balanced = |(i, o): (u64, u64)| per_million(i, 1.0) + per_million(o, 10.0);
    let cost = balanced(BUILDER_WRITE)
        + balanced(BUILDER_END)
        + balanced(REVIEWER)
        + balanced(HUNTER)
        + per_million(VERIFIER.0, 2.0)
        + per_million(VERIFIER.1, 20.0)
        + per_million(DOC_SYNCER.0, 0.5)
        + per_million(DOC_SYNCER.1, 1.0);
    assert!(close(cost, 0.01505), "{cost}");
    let recorded = spent["cost_usd"].as_f64().unwrap();
    assert!(close(recorded, cost), "{recorded} != {cost}");
    assert!(
        brief.contains("$0.0151") || brief.contains("$0.0150"),
        "{brief}"
    );

    // `baton log last` names the route and the tokens of each dispatch.
    let o = sb.run(&["log", "last"]);
    assert_exit(&o, 0);
    let log = out(&o);
    let done: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("agent_completed"))
        .collect();
    assert_eq!(done.len(), 5, "{log}");
    let line = |phase: &str| {
        *done
            .iter()
            .find(|l| l.contains(&format!("phase={phase} ")))
            .unwrap_or_else(|| panic!("no {phase} in {log}"))
    };
    let builder = line("build-implement");
    assert!(builder.contains("route=mock/bal-m"), "{builder}");
    assert!(builder.contains("2200 in / 300 out tokens"), "{builder}");
    assert!(builder.contains("$0.0052"), "{builder}");
    let verifier = line("build-verify");
    assert!(verifier.contains("route=mock/front-m"), "{verifier}");
    assert!(verifier.contains("900 in / 180 out tokens"), "{verifier}");
    assert!(
        line("build-doc-sync").contains("route=mock/fast-m"),
        "{log}"
    );
    assert!(
        line("build-review").contains("800 in / 150 out tokens"),
        "{log}"
    );
    assert!(
        line("build-hunt").contains("700 in / 120 out tokens"),
        "{log}"
    );
    // Each dispatch names the child's own session, whose transcript baton keeps.
    let session = builder
        .split("session ")
        .nth(1)
        .unwrap_or_else(|| panic!("no session in {builder}"))
        .split_whitespace()
        .next()
        .unwrap();
    let o = sb.run(&["sessions", "--json"]);
    assert_exit(&o, 0);
    assert!(out(&o).contains(session), "{session} not in {}", out(&o));
}

#[test]
fn a_token_budget_stops_before_the_verifier_and_resume_with_more_completes() {
    let server = mock();
    let sb = remote_project(&server);
    // After the builder (2500 tokens), one more dispatch estimated alike would pass 4000.
    let o = sb.run(&[
        "run",
        "add a feature file",
        "--trivial",
        "--budget-tokens",
        "4000",
    ]);
    assert_exit(&o, 4);
    let text = out(&o);
    assert!(
        text.contains(&format!(
            "{BUILDER_TOKENS} of 4000 tokens spent, {} left",
            4000 - BUILDER_TOKENS
        )),
        "{text}"
    );
    assert!(text.contains("options: continue | abort"), "{text}");
    let snap = snapshot(&sb);
    assert_eq!(snap["checkpoint"]["gate"], "budget", "{snap}");
    assert_eq!(
        snap["spent"]["input_tokens"],
        BUILDER_WRITE.0 + BUILDER_END.0
    );
    assert_eq!(phases_asked(&server), ["build-implement"]);
    assert_eq!(dispatched(&sb), ["build-implement"]);

    let wf = id(&sb);
    let o = sb.run(&[
        "resume",
        &wf,
        "--answer",
        "continue",
        "--budget-tokens",
        "100000",
    ]);
    assert_exit(&o, 0);
    assert!(out(&o).contains("proof: passed"), "{}", out(&o));
    assert_eq!(phases_asked(&server), ["build-implement", "build-verify"]);
    assert_eq!(dispatched(&sb), ["build-implement", "build-verify"]);
    let spent = &snapshot(&sb)["spent"];
    assert_eq!(
        spent["input_tokens"].as_u64().unwrap() + spent["output_tokens"].as_u64().unwrap(),
        BUILDER_TOKENS + VERIFIER.0 + VERIFIER.1
    );
    assert_eq!(spent["unpriced_dispatches"], 2, "{spent}");
}

#[test]
fn a_usd_budget_stops_without_a_price_table_on_a_model_the_built_in_table_knows() {
    let server = mock();
    // No [prices]: the builder's class runs claude-sonnet-4-5, priced by the built-in table
    // ($3 in, $15 out per million tokens).
    let sb = repo(Sandbox::new().mock_provider(
        &server,
        "openai",
        "[models]\nfast = \"mock/fast-m\"\nbalanced = \"mock/claude-sonnet-4-5\"\nfrontier = \"mock/front-m\"\n",
    ));
    // The builder: 2200 in, 300 out = $0.0111; another such dispatch would pass $0.015.
    let o = sb.run(&[
        "run",
        "add a feature file",
        "--trivial",
        "--budget-usd",
        "0.015",
    ]);
    assert_exit(&o, 4);
    let text = out(&o);
    assert!(
        text.contains("$0.0111 of $0.0150 spent, $0.0039 left"),
        "{text}"
    );
    assert_eq!(snapshot(&sb)["checkpoint"]["gate"], "budget");
}

#[test]
fn a_usd_budget_stops_on_priced_routes() {
    let server = mock();
    let sb = project(&server, PRICES);
    // The builder costs $0.0052 on mock/bal-m; another such dispatch would pass $0.008.
    let o = sb.run(&[
        "run",
        "add a feature file",
        "--trivial",
        "--budget-usd",
        "0.008",
    ]);
    assert_exit(&o, 4);
    let text = out(&o);
    assert!(
        text.contains("$0.0052 of $0.0080 spent, $0.0028 left"),
        "{text}"
    );
    assert_eq!(snapshot(&sb)["checkpoint"]["gate"], "budget");
    assert_eq!(phases_asked(&server), ["build-implement"]);
}

#[test]
fn unpriced_dispatches_are_reported_as_unpriced_not_free() {
    let server = mock();
    let sb = remote_project(&server);
    let o = sb.run(&["run", "add a feature file", "--trivial"]);
    assert_exit(&o, 0);
    let brief = out(&o);
    let spent_line = brief
        .lines()
        .find(|l| l.starts_with("spent:"))
        .unwrap_or_else(|| panic!("{brief}"));
    assert!(spent_line.contains("unpriced"), "{spent_line}");
    assert!(!spent_line.contains("$0.0000"), "{spent_line}");
    assert_eq!(snapshot(&sb)["spent"]["unpriced_dispatches"], 2);
    let o = sb.run(&["status"]);
    assert_exit(&o, 0);
    let status = out(&o);
    let spent = status
        .lines()
        .find(|l| l.trim_start().starts_with("spent:"))
        .unwrap_or_else(|| panic!("{status}"));
    assert!(spent.contains("unpriced"), "{spent}");
    assert!(!spent.contains("$0.0000"), "{spent}");
}

#[test]
fn a_recording_replays_without_a_provider_and_a_missing_cassette_stops_loudly() {
    let rec = tempfile::tempdir().unwrap();
    let dir = rec.path().join("cassettes");
    let recorded = record_build(&dir, true);
    assert_eq!(recorded, ["build-implement", "build-verify"]);
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    assert_eq!(files, ["build-implement-1.json", "build-verify-1.json"]);
    let cassette: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("build-implement-1.json")).unwrap())
            .unwrap();
    assert_eq!(cassette["turns"].as_array().unwrap().len(), 2, "{cassette}");

    // A fresh copy of the repository, no provider, no server: the same workflow.
    let sb = repo(Sandbox::new());
    let o = sb.run(&[
        "run",
        "add a feature file",
        "--trivial",
        "--replay",
        dir.to_str().unwrap(),
    ]);
    assert_exit(&o, 0);
    assert!(out(&o).contains("proof: passed"), "{}", out(&o));
    assert_eq!(dispatched(&sb), recorded);
    assert_eq!(
        std::fs::read_to_string(sb.work().join("feature.txt")).unwrap(),
        "feature\n"
    );
    let spent = &snapshot(&sb)["spent"];
    assert_eq!(
        spent["input_tokens"].as_u64().unwrap() + spent["output_tokens"].as_u64().unwrap(),
        BUILDER_TOKENS + VERIFIER.0 + VERIFIER.1,
        "{spent}"
    );

    // Without the verifier's cassette the replay stops at the verifier and claims nothing.
    std::fs::remove_file(dir.join("build-verify-1.json")).unwrap();
    let sb = repo(Sandbox::new());
    let o = sb.run(&[
        "run",
        "add a feature file",
        "--trivial",
        "--replay",
        dir.to_str().unwrap(),
    ]);
    assert_exit(&o, 1);
    let all = format!("{}{}", out(&o), err(&o));
    assert!(all.contains("build-verify-1.json"), "{all}");
    assert!(all.contains("record it again with --record"), "{all}");
    assert!(!all.contains("proof: passed"), "{all}");
    let snap = snapshot(&sb);
    assert_ne!(snap["run_state"], "completed", "{snap}");
    assert_ne!(snap["proof_status"], "passed", "{snap}");
}
