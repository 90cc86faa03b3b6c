//! Cognitive routing: what the Coordinator's route is sent, against one unsplit session on that
//! route doing the same work.
//!
//! Five scripted scenarios run the built `baton` against the mock model server in a copy of
//! `benches/routing/project` (a small Python shop with two failing tests). Each runs twice:
//!
//! - **routed**: `baton agent --routing auto` (or `baton chat --routing auto` where the user
//!   interrupts), the Coordinator on `mock/coord-model`, the Executor on `mock/exec-model`. The
//!   Executor makes the environment calls, selects evidence and returns; the Coordinator assigns,
//!   replaces and closes;
//! - **unsplit**: `baton agent --model mock/coord-model` (or `baton chat`) making the same
//!   environment calls, in the same order, on the same files, so every tool result is the same.
//!
//! The input tokens of a request are counted with the `o200k_base` encoding over what the request
//! sends: the tool list, the system prompt and the conversation items (Anthropic's
//! `cache_control` markers left out). A session's input is the sum over its requests: every
//! request resends its conversation. Both runs must end with the same files and the same final
//! answer; the bench stops otherwise.
//!
//! The prefix share is, over each participant's requests after its first, the bytes a request
//! has in common with the start of the previous one, divided by its bytes: 100% when every
//! request is the previous one plus new items (a provider's prompt cache then hits on all of it).
//!
//! `cargo bench -p baton-cli --bench routing` prints a table per wire format; issue 11's goal is a
//! Coordinator input at most 35% of the unsplit session's. With `ROUTING_BENCH_DEBUG=1` it also
//! prints, on stderr, each request's tokens by part (tools, system prompt, then each item).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod scenarios;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use baton_testkit::fixture::{wait_until, Sandbox};
use baton_testkit::{MockServer, RecordedRequest, Turn};
use scenarios::{scenarios, Act, Scenario};
use serde_json::{json, Value};

const COORD: &str = "coord-model";
const EXEC: &str = "exec-model";
const KINDS: [&str; 3] = ["openai", "openai-responses", "anthropic"];

/// The scripted turns of one run, the user's lines, and what the run is expected to select.
struct Script {
    turns: Vec<Turn>,
    /// The evidence references each `return` is expected to carry (routed only).
    evidence: Vec<Vec<String>>,
    /// How many model requests come before the user's interrupting line is typed (chat only).
    held_at: Option<usize>,
}

/// The script of the routed run: the Coordinator's calls, and the Executor's environment calls,
/// selections and returns. Tool results of the Executor are numbered `ctx:t1`, `ctx:t2`, … in
/// the order they come, across the whole session; a tag names the result of a `Work` act.
fn routed_script(s: &Scenario, held: &Value) -> Script {
    let mut turns = Vec::new();
    let mut evidence = Vec::new();
    let mut tags: BTreeMap<&str, String> = BTreeMap::new();
    let mut results = 0;
    let mut selected: Vec<String> = Vec::new();
    let mut held_at = None;
    let mut unit_open = false;
    for (i, act) in s.acts.iter().enumerate() {
        let id = format!("k{i}");
        match act {
            Act::Assign(contract) => {
                // The first assignment of a unit states the unit's outcome.
                let args = if unit_open {
                    json!({"operation": "assign", "contract": contract})
                } else {
                    let outcome = contract.split(". ").next().unwrap_or(contract);
                    json!({"operation": "assign", "contract": contract, "unit_outcome": outcome})
                };
                unit_open = true;
                turns.push(Turn::tool_call(id, "delegate", args));
            }
            Act::Replace(contract, reason) => turns.push(Turn::tool_call(
                id,
                "delegate",
                json!({"operation": "replace", "contract": contract, "reason": reason}),
            )),
            Act::Work(tag, tool, args) => {
                results += 1;
                tags.insert(tag, format!("ctx:t{results}"));
                turns.push(Turn::tool_call(id, *tool, args.clone()));
            }
            Act::Held(tag) => {
                results += 1;
                tags.insert(tag, format!("ctx:t{results}"));
                held_at = Some(turns.len() + 1);
                turns.push(Turn::tool_call(id, "bash", held.clone()));
            }
            Act::Select(refs) => {
                results += 1;
                let refs: Vec<String> = refs.iter().map(|t| tags[t].clone()).collect();
                selected.extend(refs.iter().cloned());
                turns.push(Turn::tool_call(
                    id,
                    "project",
                    json!({"operation": "add", "refs": refs}),
                ));
            }
            Act::Return(report, outcome, limitations) => {
                results += 1;
                evidence.push(std::mem::take(&mut selected));
                turns.push(Turn::tool_call(
                    id,
                    "return",
                    if *outcome == "completed" {
                        json!({"operation": "submit", "report": report, "outcome": outcome, "limitations": limitations})
                    } else {
                        let reason = limitations.first().copied().unwrap_or("stopped before the contract was done");
                        json!({"operation": "submit", "report": report, "outcome": outcome, "limitations": limitations, "reason": reason})
                    },
                ));
            }
            Act::Stray(text) => turns.push(Turn::text(*text)),
            Act::Close(assessment) => {
                unit_open = false;
                turns.push(Turn::tool_call(
                    id,
                    "unit",
                    json!({"operation": "close", "outcome": "accepted", "assessment": assessment}),
                ))
            }
            Act::Answer(text) => turns.push(Turn::text(*text)),
            // Stopped by the user's words, the Executor writes its own report in a last turn.
            Act::Typed(_) => {
                results += 1;
                evidence.push(std::mem::take(&mut selected));
                turns.push(Turn::tool_call(
                    id,
                    "return",
                    json!({"operation": "submit", "report": "Stopped while the whole suite ran; I changed nothing.",
                           "outcome": "partial", "reason": "stopped by new user input"}),
                ));
            }
        }
    }
    Script {
        turns,
        evidence,
        held_at,
    }
}

/// The script of the unsplit run: the same environment calls, then the same answer.
fn unsplit_script(s: &Scenario, held: &Value) -> Script {
    let mut turns = Vec::new();
    let mut held_at = None;
    for (i, act) in s.acts.iter().enumerate() {
        let id = format!("k{i}");
        match act {
            Act::Work(_, tool, args) => turns.push(Turn::tool_call(id, *tool, args.clone())),
            Act::Held(_) => {
                held_at = Some(turns.len() + 1);
                turns.push(Turn::tool_call(id, "bash", held.clone()));
            }
            Act::Answer(text) => turns.push(Turn::text(*text)),
            _ => {}
        }
    }
    Script {
        turns,
        evidence: Vec::new(),
        held_at,
    }
}

/// A bash call that runs the whole suite once the bench lets it (the `go` file), having said it
/// started: the user types while it runs.
fn held_bash(work: &Path) -> Value {
    json!({"command": format!(
        "touch '{}'; i=0; while [ ! -f '{}' ]; do i=$((i+1)); [ $i -gt 6000 ] && exit 7; sleep 0.01; done; python3 -m unittest 2>&1",
        work.join(".started").display(), work.join(".go").display()
    )})
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name == "__pycache__" {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            copy_dir(&path, &to.join(&name));
        } else {
            std::fs::copy(&path, to.join(&name)).unwrap();
        }
    }
}

/// The project's files after a run (without baton's state, Python's caches and the bench's
/// marker files), for comparing the two runs' outcomes.
fn outcome_files(dir: &Path, rel: &str, out: &mut BTreeMap<String, Vec<u8>>) {
    for entry in std::fs::read_dir(dir.join(rel)).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().to_string();
        if [".baton", "__pycache__", ".started", ".go"].contains(&name.as_str()) {
            continue;
        }
        let rel = if rel.is_empty() {
            name
        } else {
            format!("{rel}/{name}")
        };
        if entry.path().is_dir() {
            outcome_files(dir, &rel, out);
        } else {
            out.insert(rel, std::fs::read(entry.path()).unwrap());
        }
    }
}

struct Run {
    requests: Vec<RecordedRequest>,
    files: BTreeMap<String, Vec<u8>>,
    answer: String,
    journal: Vec<Value>,
}

fn run(s: &Scenario, kind: &str, routed: bool) -> Run {
    let server = MockServer::builder().start_blocking();
    let sb = Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .mock_provider(
            &server,
            kind,
            &format!("\n[routing]\ncoordinator = \"mock/{COORD}\"\nexecutor = \"mock/{EXEC}\"\n"),
        );
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/routing/project"),
        &sb.work(),
    );
    let held = held_bash(&sb.work());
    let script = if routed {
        routed_script(s, &held)
    } else {
        unsplit_script(s, &held)
    };
    for t in script.turns {
        server.push(t);
    }
    let mut args: Vec<&str> = Vec::new();
    let chat = s.typed().is_some();
    args.push(if chat { "chat" } else { "agent" });
    args.push("--json");
    if routed {
        args.extend(["--routing", "auto"]);
    } else {
        args.extend(["--model", "mock/coord-model"]);
    }
    if chat {
        args.push("--no-wait");
    } else {
        args.push(s.task);
    }
    let mut child = sb
        .baton(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    if let Some(typed) = s.typed() {
        writeln!(stdin, "{}", s.task).unwrap();
        let at = script.held_at.expect("a chat scenario holds a call");
        assert!(
            wait_until(Duration::from_secs(60), || sb
                .work()
                .join(".started")
                .exists()),
            "{}: the held call never started",
            s.name
        );
        assert_eq!(server.model_requests().len(), at, "{}", s.name);
        writeln!(stdin, "{typed}").unwrap();
        stdin.flush().unwrap();
        std::fs::write(sb.work().join(".go"), "").unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{} ({kind}, routed {routed}): {}",
        s.name,
        String::from_utf8_lossy(&out.stderr)
    );
    server.assert_tool_results_answer_calls();
    let answer = String::from_utf8_lossy(&out.stdout)
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "session.completed")
        .find_map(|v| v["final_message"].as_str().map(str::to_string))
        .unwrap_or_default();
    let mut files = BTreeMap::new();
    outcome_files(&sb.work(), "", &mut files);
    let journal = journal(&sb.work());
    let run = Run {
        requests: server.model_requests(),
        files,
        answer,
        journal,
    };
    if routed {
        check_evidence(s, kind, &run, &script.evidence);
    }
    run
}

fn journal(work: &Path) -> Vec<Value> {
    let Ok(dir) = std::fs::read_dir(work.join(".baton/state/sessions")) else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "journal"))
        .flat_map(|p| {
            std::fs::read_to_string(p)
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect::<Vec<Value>>()
        })
        .collect()
}

/// The Executor's reports carried the evidence the script selected (so the script's references
/// pointed where it meant), and the Executor's returns were its own.
fn check_evidence(s: &Scenario, kind: &str, run: &Run, expected: &[Vec<String>]) {
    let got: Vec<Vec<String>> = run
        .journal
        .iter()
        .filter(|r| r["type"] == "report_saved" && r["report"]["by_host"] != true)
        .map(|r| {
            r["report"]["evidence"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_string())
                .collect()
        })
        .collect();
    assert_eq!(got, expected, "{} ({kind}): the selected evidence", s.name);
}

struct Sent {
    requests: usize,
    tokens: usize,
    /// Bytes in common with the previous request's start, and bytes, over requests 2..n.
    reused: usize,
    later: usize,
    stable: bool,
}

fn sent(reqs: &[&RecordedRequest], bpe: &tiktoken_rs::CoreBPE) -> Sent {
    let mut s = Sent {
        requests: reqs.len(),
        tokens: 0,
        reused: 0,
        later: 0,
        stable: true,
    };
    let mut previous: Option<String> = None;
    for r in reqs {
        let parts = r.prompt_parts();
        let text = parts.concat();
        s.tokens += bpe.encode_ordinary(&text).len();
        if std::env::var_os("ROUTING_BENCH_DEBUG").is_some() {
            let sizes: Vec<usize> = parts.iter().map(|p| bpe.encode_ordinary(p).len()).collect();
            eprintln!("{} {sizes:?}", model(r));
        }
        if let Some(p) = &previous {
            let common = p
                .bytes()
                .zip(text.bytes())
                .take_while(|(a, b)| a == b)
                .count();
            s.reused += common;
            s.later += text.len();
            s.stable &= common == p.len();
        }
        previous = Some(text);
    }
    s
}

fn model(r: &RecordedRequest) -> &str {
    r.body["model"].as_str().unwrap_or("")
}

fn pct(a: usize, b: usize) -> String {
    if b == 0 {
        "-".into()
    } else {
        format!("{:.1}%", a as f64 * 100.0 / b as f64)
    }
}

fn main() {
    let bpe = tiktoken_rs::o200k_base().unwrap();
    let mut worst: f64 = 0.0;
    for kind in KINDS {
        println!("\n## {kind}\n");
        println!(
            "| scenario | coordinator requests | coordinator input tokens | unsplit requests | unsplit input tokens | coordinator / unsplit | executor input tokens | coordinator prefix reuse | executor prefix reuse | same outcome |"
        );
        println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |");
        let (mut ct, mut ut) = (0, 0);
        for s in scenarios() {
            let routed = run(&s, kind, true);
            let unsplit = run(&s, kind, false);
            // The `same outcome` column: asserted here.
            assert!(
                routed.files == unsplit.files && routed.answer == unsplit.answer,
                "{} ({kind}): the two runs ended differently (answers {:?} / {:?})",
                s.name,
                routed.answer,
                unsplit.answer
            );
            let coord: Vec<&RecordedRequest> = routed
                .requests
                .iter()
                .filter(|r| model(r) == COORD)
                .collect();
            let exec: Vec<&RecordedRequest> = routed
                .requests
                .iter()
                .filter(|r| model(r) == EXEC)
                .collect();
            let all: Vec<&RecordedRequest> = unsplit.requests.iter().collect();
            let (c, e, u) = (sent(&coord, &bpe), sent(&exec, &bpe), sent(&all, &bpe));
            assert!(
                c.stable && e.stable,
                "{} ({kind}): a participant's requests were not prefix-stable",
                s.name
            );
            worst = worst.max(c.tokens as f64 / u.tokens as f64);
            ct += c.tokens;
            ut += u.tokens;
            println!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | yes |",
                s.name,
                c.requests,
                c.tokens,
                u.requests,
                u.tokens,
                pct(c.tokens, u.tokens),
                e.tokens,
                pct(c.reused, c.later),
                pct(e.reused, e.later),
            );
        }
        println!("| all | | {ct} | | {ut} | {} | | | | |", pct(ct, ut));
    }
    println!(
        "\nworst scenario: the Coordinator was sent {:.1}% of the unsplit session's input tokens (goal ≤ 35%)",
        worst * 100.0
    );
}
