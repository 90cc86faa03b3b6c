#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The `baton-mock` binary.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_baton-mock");

/// Kills the child if a test fails half-way.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn serves_a_script_file_logs_and_loops() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    let log = dir.path().join("requests.jsonl");
    std::fs::write(
        &script,
        r#"[
            {"tool_call": {"id": "call_1", "name": "read", "arguments": {"path": "a.txt"}}},
            "finished"
        ]"#,
    )
    .unwrap();
    let mut child = Child(
        Command::new(BIN)
            .arg("--script")
            .arg(&script)
            .arg("--log")
            .arg(&log)
            .arg("--loop")
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line.trim_end().to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");

    let client = reqwest::Client::new();
    let mut stops = Vec::new();
    for n in 0..3 {
        let body: Value = client
            .post(format!("{url}/v1/messages"))
            .json(&json!({"model": "claude", "n": n}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        stops.push(body["stop_reason"].as_str().unwrap().to_string());
    }
    assert_eq!(stops, vec!["tool_use", "end_turn", "tool_use"]);

    let status = Command::new("kill")
        .arg("-TERM")
        .arg(child.0.id().to_string())
        .status()
        .unwrap();
    assert!(status.success());
    let exit = child.0.wait().unwrap();
    assert!(exit.success(), "{exit:?}");

    let logged: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(logged.len(), 3);
    assert_eq!(logged[2]["path"], "/v1/messages");
    assert_eq!(logged[2]["body"], json!({"model": "claude", "n": 2}));
}

#[test]
fn a_bad_script_exits_2_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("bad.json");
    std::fs::write(&script, r#"[{"fault": "status"}]"#).unwrap();
    let output = Command::new(BIN)
        .arg("--script")
        .arg(&script)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("step 1") && stderr.contains("status"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty());
}

#[tokio::test]
async fn rules_answer_each_format_run_after_run() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("rules.json");
    std::fs::write(
        &script,
        r#"{"rules": [
            {"when": {"tool_offered": "exec_command", "last_is_tool_result": false},
             "step": {"tool_call": {"name": "exec_command", "arguments": {"cmd": "cat a"}}}},
            {"when": {"tool_offered": "read", "last_is_tool_result": false},
             "step": {"tool_call": {"name": "read", "arguments": {"path": "a"}}}},
            {"when": {"last_is_tool_result": true}, "step": "done"}
        ]}"#,
    )
    .unwrap();
    let mut child = Child(
        Command::new(BIN)
            .arg("--script")
            .arg(&script)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    BufReader::new(child.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line.trim_end().to_string();
    let client = reqwest::Client::new();
    let post = |path: &str, body: Value| {
        let request = client.post(format!("{url}{path}")).json(&body).send();
        async move {
            let response = request.await.unwrap();
            let status = response.status().as_u16();
            (status, response.json::<Value>().await.unwrap())
        }
    };

    for _ in 0..2 {
        let chat_tools = json!([{"type": "function", "function": {"name": "read"}}]);
        let (_, first) = post(
            "/v1/chat/completions",
            json!({"messages": [{"role": "user", "content": "go"}], "tools": chat_tools}),
        )
        .await;
        assert_eq!(
            first["choices"][0]["message"]["tool_calls"][0]["function"]["name"],
            "read"
        );
        let (_, second) = post(
            "/v1/chat/completions",
            json!({"messages": [{"role": "user", "content": "go"},
                                {"role": "tool", "tool_call_id": "x", "content": "hi"}],
                   "tools": chat_tools}),
        )
        .await;
        assert_eq!(second["choices"][0]["message"]["content"], "done");

        let responses_tools = json!([{"type": "function", "name": "exec_command"}]);
        let (_, first) = post(
            "/v1/responses",
            json!({"input": [{"type": "message", "role": "user", "content": "go"}],
                   "tools": responses_tools}),
        )
        .await;
        let call = first["output"]
            .as_array()
            .unwrap()
            .iter()
            .find(|item| item["type"] == "function_call")
            .unwrap();
        assert_eq!(call["name"], "exec_command");
        let (_, second) = post(
            "/v1/responses",
            json!({"input": [{"type": "function_call_output", "call_id": "x", "output": "hi"}],
                   "tools": responses_tools}),
        )
        .await;
        assert_eq!(second["output"][0]["content"][0]["text"], "done");

        let (_, second) = post(
            "/v1/messages",
            json!({"messages": [{"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "x", "content": "hi"}]}],
                   "tools": [{"name": "read"}]}),
        )
        .await;
        assert_eq!(second["content"][0]["text"], "done");
    }

    // No rule matches and no steps are queued: the script has run out.
    let (status, _) = post(
        "/v1/messages",
        json!({"messages": [{"role": "user", "content": "go"}], "tools": [{"name": "ls"}]}),
    )
    .await;
    assert_eq!(status, 500);
}
