//! Prices out of the box through the built `baton`: a known model is priced by the built-in table
//! (its source and date shown by `baton models`), a local server's other models are free, a
//! remote one's are unpriced until `[prices]` names them, and `[prices]` wins over the table.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use baton_testkit::fixture::{assert_exit, json_lines, Sandbox};
use baton_testkit::{MockServer, Turn};
use serde_json::Value;

fn project(server: &MockServer, extra: &str) -> Sandbox {
    Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .mock_provider(server, "anthropic", extra)
}

/// The `cost_usd` of the session `baton agent --json --model ROUTE` ran.
fn session_cost(p: &Sandbox, route: &str) -> Value {
    let out = p.run(&["agent", "--json", "--model", route, "say hi"]);
    assert_exit(&out, 0);
    let events = json_lines(&out);
    let done = events
        .iter()
        .find(|e| e["type"] == "session.completed")
        .unwrap();
    done["cost_usd"].clone()
}

#[test]
fn a_known_model_is_priced_by_the_table_and_the_config_wins() {
    // Every turn reports 100 input and 20 output tokens.
    let server = MockServer::builder()
        .turn(Turn::text("hi"))
        .turn(Turn::text("hi"))
        .start_blocking();
    let p = project(&server, "");
    // claude-sonnet-4-5: $3 in, $15 out per million tokens.
    let cost = session_cost(&p, "mock/claude-sonnet-4-5").as_f64().unwrap();
    assert!(
        (cost - (100.0 * 3.0 + 20.0 * 15.0) / 1e6).abs() < 1e-12,
        "{cost}"
    );
    let p = project(
        &server,
        "[prices.\"mock/claude-sonnet-4-5\"]\ninput = 1.0\noutput = 2.0\n",
    );
    let cost = session_cost(&p, "mock/claude-sonnet-4-5").as_f64().unwrap();
    assert!(
        (cost - (100.0 * 1.0 + 20.0 * 2.0) / 1e6).abs() < 1e-12,
        "{cost}"
    );
}

#[test]
fn a_local_server_s_other_models_are_free_and_a_remote_one_s_unpriced() {
    let server = MockServer::builder()
        .turn(Turn::text("hi"))
        .start_blocking();
    // The mock server is on loopback: a local server.
    let p = project(&server, "");
    assert_eq!(session_cost(&p, "mock/my-local-model"), Value::from(0.0));

    // The same provider by a name that is not loopback (never reached here) stays unpriced.
    let remote = Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .baton_config(
            "[providers.far]\nkind = \"openai\"\nbase_url = \"https://models.example.invalid/v1\"\napi_key_env = \"FAR_KEY\"\n[models]\nbalanced = [\"far/my-model\", \"far/gpt-5\"]\n",
        )
        .env("FAR_KEY", "k-123456789");
    let out = remote.run(&["models", "--json"]);
    assert_exit(&out, 0);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let balanced = doc["classes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["class"] == "balanced")
        .unwrap();
    assert_eq!(balanced["routes"][0]["price"], Value::Null, "{balanced}");
    let gpt5 = &balanced["routes"][1]["price"];
    assert_eq!(gpt5["input"], 1.25);
    assert_eq!(gpt5["output"], 10.0);
    assert_eq!(gpt5["source"], "built-in");
    assert_eq!(gpt5["read_on"], "2026-12-05");
    assert!(gpt5["read_from"].as_str().unwrap().contains("pi-ai"));

    let out = remote.run(&["models"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "unpriced: costs and --budget-usd do not count it; give it [prices.\"far/my-model\"]"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "price $1.25 in / $10 out per Mtok, cached $0.125 (built-in, read 2026-12-05)"
        ),
        "{text}"
    );
}
