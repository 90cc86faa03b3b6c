#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The real Codex CLI (0.171, from `bench/`: `npm ci --prefix bench`, or the program `CODEX_BIN`
//! names) against the Responses endpoint, with a retried 429 and a dropped stream. Without Codex
//! the test prints a note and passes, except in CI, where it fails.

use baton_testkit::fixture::{find_program, skip_live};
use baton_testkit::{Fault, MockServer, Turn};
use serde_json::{json, Value};

#[tokio::test]
async fn codex_exec_retries_runs_a_tool_and_answers() {
    let Some(codex) = find_program("CODEX_BIN", "bench/node_modules/.bin/codex") else {
        return skip_live("codex", "CODEX_BIN", "run npm ci --prefix bench");
    };
    let server = MockServer::builder()
        .fault(
            Fault::status(429)
                .retry_after(1)
                .message("Rate limit reached"),
        )
        .fault(Fault::drop_after(Turn::text("cut"), 4))
        .turn(
            Turn::reasoning("I should look at the file.").with_tool_call(
                "call_abc",
                "exec_command",
                json!({"cmd": "cat a.txt"}),
            ),
        )
        .turn(Turn::text("The file says hello.").usage(2000, 1500, 30))
        .start()
        .await;

    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("a.txt"), "hello\n").unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "model = \"gpt-5.5\"\nmodel_provider = \"mock\"\ncheck_for_update_on_startup = false\n\
             [analytics]\nenabled = false\n\
             [model_providers.mock]\nname = \"mock\"\nbase_url = \"{}/v1\"\nwire_api = \"responses\"\n",
            server.url()
        ),
    )
    .unwrap();

    let output = tokio::process::Command::new(codex)
        .args([
            "exec",
            "--json",
            "--skip-git-repo-check",
            "what does a.txt say",
        ])
        .current_dir(work.path())
        .env("CODEX_HOME", home.path())
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let events: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let items: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "item.completed")
        .map(|e| &e["item"])
        .collect();
    assert_eq!(items[0]["type"], "reasoning");
    assert_eq!(items[1]["type"], "command_execution");
    assert_eq!(items[1]["aggregated_output"], "hello\n");
    assert_eq!(
        items[2],
        &json!({"id": "item_2", "type": "agent_message", "text": "The file says hello."})
    );

    let requests = server.model_requests();
    assert_eq!(requests.len(), 4);
    let outputs = requests[3].tool_results();
    assert_eq!(outputs.len(), 1);
    assert_eq!(outputs[0].call_id, "call_abc");
    assert_eq!(server.remaining(), 0);
    server.assert_tool_results_answer_calls();
}
