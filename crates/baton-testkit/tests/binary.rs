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
