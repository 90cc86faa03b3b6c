//! Cognitive routing end to end: the built `baton` with `--routing`, a Coordinator and an
//! Executor on two models of the mock server (one script: only one of them works at a time), in
//! each wire format. Asserted on what the models were sent and on disk.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Output;

use baton_testkit::fixture::Sandbox;
use baton_testkit::{MockServer, RecordedRequest, Turn, WireFormat};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

const KINDS: [&str; 3] = ["openai", "openai-responses", "anthropic"];
const COORD: &str = "coord-model";
const EXEC: &str = "exec-model";

/// A project whose `[routing]` puts the Coordinator on `mock/coord-model` and the Executor on
/// `mock/exec-model`.
fn project(server: &MockServer, kind: &str) -> Sandbox {
    Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .mock_provider(
            server,
            kind,
            &format!(
                "\n[retry]\ninitial_delay = \"1ms\"\nmax_delay = \"20ms\"\n\n[routing]\ncoordinator = \"mock/{COORD}\"\nexecutor = \"mock/{EXEC}\"\n"
            ),
        )
}

fn run(p: &Sandbox, args: &[&str]) -> Output {
    let out = p.run(args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    out
}

fn model(req: &RecordedRequest) -> String {
    req.body["model"].as_str().unwrap_or("").to_string()
}

/// The conversation items a request sends, in its format, without Anthropic's `cache_control`
/// breakpoints (markers that move to the newest item; the cached content is the rest).
fn items(req: &RecordedRequest) -> Vec<Value> {
    let key = match req.wire_format() {
        Some(WireFormat::Responses) => "input",
        _ => "messages",
    };
    let mut v = req.body[key].clone();
    strip_cache_control(&mut v);
    v.as_array().cloned().unwrap_or_default()
}

fn strip_cache_control(v: &mut Value) {
    match v {
        Value::Object(o) => {
            o.remove("cache_control");
            o.values_mut().for_each(strip_cache_control);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_cache_control),
        _ => {}
    }
}

/// Each request of `reqs` sends the previous one's items, unchanged, then new ones.
fn assert_prefix_stable(reqs: &[&RecordedRequest], kind: &str) {
    for w in reqs.windows(2) {
        let (a, b) = (items(w[0]), items(w[1]));
        assert!(b.len() > a.len(), "{kind}: the conversation did not grow");
        assert_eq!(
            &b[..a.len()],
            &a[..],
            "{kind}: a later request changed earlier items"
        );
        assert_eq!(
            w[0].body["tools"], w[1].body["tools"],
            "{kind}: the tools changed"
        );
    }
}

/// The script of one assignment: the Coordinator assigns, the Executor writes, reads back,
/// selects the read and submits; the Coordinator closes the unit and answers.
fn investigate_and_fix() -> Vec<Turn> {
    vec![
        Turn::tool_call(
            "c1",
            "delegate",
            json!({"operation": "assign", "contract": "Create hello.txt holding `hi`, read it back, and return the read as evidence."}),
        ),
        Turn::tool_call(
            "e1",
            "write",
            json!({"path": "hello.txt", "content": "hi\n"}),
        ),
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

#[test]
fn an_assignment_runs_on_the_executor_and_only_the_selected_evidence_reaches_the_coordinator() {
    for kind in KINDS {
        let server = MockServer::builder()
            .steps(investigate_and_fix().into_iter().map(Into::into))
            .start_blocking();
        let p = project(&server, kind);
        let out = run(
            &p,
            &["agent", "--json", "--routing", "auto", "make hello.txt"],
        );
        assert_eq!(
            std::fs::read_to_string(p.work().join("hello.txt")).unwrap(),
            "hi\n",
            "{kind}"
        );
        let reqs = server.model_requests();
        let models: Vec<String> = reqs.iter().map(model).collect();
        assert_eq!(
            models,
            [COORD, EXEC, EXEC, EXEC, EXEC, COORD, COORD],
            "{kind}"
        );
        server.assert_tool_results_answer_calls();
        // The Coordinator's second request: its first plus the delegate call and its result,
        // which holds the report and the selected read (with its digest), not the write.
        let coord: Vec<&RecordedRequest> = reqs.iter().filter(|r| model(r) == COORD).collect();
        assert_prefix_stable(&coord, kind);
        let sent = serde_json::to_string(&items(coord[1])).unwrap();
        assert!(sent.contains("hello.txt now holds hi"), "{kind}: {sent}");
        assert!(sent.contains("ctx:t2"), "{kind}: {sent}");
        assert!(sent.contains("sha256"), "{kind}: {sent}");
        assert!(
            !sent.contains("ctx:t1"),
            "{kind}: the write was not selected: {sent}"
        );
        assert!(!sent.contains("\\\"content\\\": \\\"hi"), "{kind}: {sent}");
        // The Coordinator was offered its routing tools, the Executor `return` and `project`.
        let coord_tools = coord[0].offered_tools();
        assert!(
            coord_tools.contains(&"delegate") && coord_tools.contains(&"unit"),
            "{kind}: {coord_tools:?}"
        );
        let exec_tools = reqs[1].offered_tools();
        assert!(
            exec_tools.contains(&"return") && !exec_tools.contains(&"delegate"),
            "{kind}: {exec_tools:?}"
        );
        // The Executor's requests are prefix-stable too, and its tool results name their refs.
        let exec: Vec<&RecordedRequest> = reqs.iter().filter(|r| model(r) == EXEC).collect();
        assert_prefix_stable(&exec, kind);
        let exec_sent = serde_json::to_string(&items(exec[2])).unwrap();
        assert!(exec_sent.contains("[ref ctx:t2]"), "{kind}: {exec_sent}");
        // The journal records the unit, the assignment, the execution, the report and the close.
        let journal = std::fs::read_dir(p.state_home().join("baton/sessions"))
            .ok()
            .into_iter()
            .flatten()
            .chain(
                std::fs::read_dir(p.work().join(".baton/state/sessions"))
                    .ok()
                    .into_iter()
                    .flatten(),
            )
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "journal"))
            .unwrap_or_else(|| panic!("{kind}: no journal"));
        let types: Vec<String> = std::fs::read_to_string(&journal)
            .unwrap()
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        for t in [
            "control_set",
            "unit_opened",
            "assigned",
            "execution_started",
            "projection_added",
            "report_saved",
            "execution_ended",
            "unit_closed",
        ] {
            assert!(
                types.iter().any(|x| x == t),
                "{kind}: {t} missing from {types:?}"
            );
        }
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("\"routing.recorded\""), "{kind}");
        assert!(stdout.contains("Done: hello.txt holds hi."), "{kind}");
    }
}
