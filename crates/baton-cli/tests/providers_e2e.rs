//! End-to-end tests of the model table and route options: what the built `baton` sends to the
//! mock server for a model, what `baton models` and `baton doctor` say about each route, and
//! the config errors for options a model does not take.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use baton_testkit::fixture::{assert_exit, Sandbox};
use baton_testkit::{MockServer, Turn};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

fn project(server: &MockServer, kind: &str, extra: &str) -> Sandbox {
    Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .mock_provider(server, kind, extra)
}

fn first_body(server: &MockServer) -> Value {
    server.model_requests()[0].body.clone()
}

/// Runs one session on `route` of a `kind` mock provider that answers with text, and returns
/// the body of the one request baton sent.
fn request_for(kind: &str, route: &str) -> Value {
    let server = MockServer::builder()
        .turn(Turn::text("Planned."))
        .start_blocking();
    let out = project(&server, kind, "").run(&["agent", "--json", "--model", route, "plan"]);
    assert_exit(&out, 0);
    first_body(&server)
}

/// Route options reach a Chat Completions server, the limit as `max_tokens` (a local server,
/// not OpenAI's own API), and `:off` on a model the table does not know sends no effort.
#[test]
fn route_options_reach_a_chat_server() {
    let server = MockServer::builder()
        .turn(Turn::text("Hello."))
        .start_blocking();
    let p = project(
        &server,
        "openai",
        "[routes.\"mock/qwen3:8b\"]\ntemperature = 0.0\ntop_p = 0.5\nseed = 42\nmax_output_tokens = 1000\n",
    );
    let out = p.run(&["agent", "--json", "--model", "mock/qwen3:8b:off", "hi"]);
    assert_exit(&out, 0);
    let body = first_body(&server);
    assert_eq!(
        (
            &body["temperature"],
            &body["top_p"],
            &body["seed"],
            &body["max_tokens"]
        ),
        (&json!(0.0), &json!(0.5), &json!(42), &json!(1000)),
        "{body}"
    );
    assert_eq!(body.get("max_completion_tokens"), None, "{body}");
    assert_eq!(body.get("reasoning_effort"), None, "{body}");
    // The model is not in the table: the session says what its level became and how to fix it.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("model `qwen3:8b` is not in the model table, so :off becomes (not sent)")
            && err.contains("[model_info.\"qwen3:8b\"]"),
        "{err}"
    );
}

/// Opus 4.7 refuses thinking budgets: the request carries adaptive thinking with the effort
/// the level maps to, and the model's own output limit instead of 8192.
#[test]
fn a_current_claude_model_gets_adaptive_thinking() {
    let body = request_for("anthropic", "mock/claude-opus-4-7:xhigh");
    assert_eq!(body["thinking"], json!({"type": "adaptive"}), "{body}");
    assert_eq!(body["output_config"], json!({"effort": "xhigh"}), "{body}");
    assert_eq!(body["max_tokens"], json!(128000), "{body}");

    // Opus 4.1 takes budgets, within its 32000-token limit.
    let body = request_for("anthropic", "mock/claude-opus-4-1:xhigh");
    assert_eq!(
        (&body["max_tokens"], &body["thinking"]),
        (
            &json!(32000),
            &json!({"type": "enabled", "budget_tokens": 24000})
        ),
        "{body}"
    );
}

/// The Responses API gets the effort gpt-5.1 takes for `:off` (`none`), `include` and the
/// session id as `prompt_cache_key`.
#[test]
fn responses_requests_carry_the_cache_key_and_the_mapped_effort() {
    let server = MockServer::builder()
        .turn(Turn::text("Done."))
        .start_blocking();
    let p = project(&server, "openai-responses", "");
    let out = p.run(&["agent", "--json", "--model", "mock/gpt-5.1:off", "hi"]);
    assert_exit(&out, 0);
    let body = first_body(&server);
    assert_eq!(body["reasoning"], json!({"effort": "none"}), "{body}");
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let session = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "session.started")
        .and_then(|e| e["session_id"].as_str().map(str::to_string))
        .expect("session.started with a session id");
    assert_eq!(body["prompt_cache_key"], json!(session));
}

/// Options a model refuses are config errors naming the key and the fix, before any request.
#[test]
fn options_a_model_refuses_are_config_errors() {
    let server = MockServer::builder().start_blocking();
    let p = project(
        &server,
        "openai",
        "[routes.\"mock/o3\"]\ntemperature = 0.5\n[routes.\"mock/claude-x\"]\nseed = 1\n",
    );
    let out = p.run(&["agent", "--model", "mock/o3", "hi"]);
    assert_exit(&out, 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("routes.\"mock/o3\".temperature") && err.contains("remove the key"),
        "{err}"
    );
    assert_eq!(server.requests().len(), 0);

    let anthropic = MockServer::builder().start_blocking();
    let p = project(
        &anthropic,
        "anthropic",
        "[routes.\"mock/claude-opus-4-7\"]\nseed = 1\n",
    );
    let out = p.run(&["agent", "--model", "mock/claude-opus-4-7", "hi"]);
    assert_exit(&out, 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("routes.\"mock/claude-opus-4-7\".seed") && err.contains("no seed"),
        "{err}"
    );

    let p = project(
        &anthropic,
        "anthropic",
        "[model_info.\"claude-*\"]\nefforts = [\"huge\"]\n",
    );
    let out = p.run(&["agent", "--model", "mock/claude-opus-4-7", "hi"]);
    assert_exit(&out, 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("model_info.\"claude-*\"") && err.contains("huge"),
        "{err}"
    );
}

/// `baton models` says what each route's level becomes, its limits and where the facts come
/// from; a config entry overrides the built-in one; an unknown model gets a hint.
#[test]
fn models_shows_what_each_route_resolved_to() {
    let server = MockServer::builder().start_blocking();
    let p = project(
        &server,
        "anthropic",
        "[models]\nfrontier = [\"mock/claude-opus-4-1:xhigh\", \"mock/claude-opus-4-8:high\"]\nfast = \"mock/house-model\"\n\n[model_info.\"claude-opus-4-8\"]\nmax_output_tokens = 200000\n",
    );
    let out = p.run(&["models"]);
    assert_exit(&out, 0);
    let text = String::from_utf8_lossy(&out.stdout);
    for want in [
        "thinking budget: :xhigh → budget 32000",
        "output ≤ 32000 tokens, context 200000 [built-in \"claude-opus-4-1*\"]",
        "thinking adaptive: :high → adaptive high",
        "output ≤ 200000 tokens",
        "[config \"claude-opus-4-8\" over built-in \"claude-opus-*\"]",
        "hint: `house-model` is not in the model table",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }
    let out = p.run(&["models", "--json"]);
    assert_exit(&out, 0);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let frontier = doc["classes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["class"] == "frontier")
        .unwrap();
    let first = &frontier["routes"][0];
    assert_eq!(first["model_info"]["thinking"], "budget");
    assert_eq!(first["model_info"]["max_output_tokens"], 32000);
    assert_eq!(first["thinking_sent"], "budget 32000");

    // `baton doctor` looks every class route up in the table too.
    let out = p.run(&["doctor", "--json"]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let routes = doc["routes"].as_array().unwrap();
    assert_eq!(routes.len(), 3, "{doc}");
    assert!(routes.iter().all(|r| r["ok"] == true), "{doc}");
    assert_eq!(routes[0]["model_info"]["thinking"], "budget", "{doc}");
}

/// A llama.cpp-like server on loopback answering `/v1/models` and `/props` (its chat template's
/// capabilities), `n` requests, then it stops.
fn llama_like(supports_tools: bool, n: usize) -> (String, std::thread::JoinHandle<()>) {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        for stream in listener.incoming().take(n) {
            let mut stream = stream.unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            // The rest of the request head.
            let mut h = String::new();
            while reader.read_line(&mut h).unwrap() > 2 {
                h.clear();
            }
            let body = if line.starts_with("GET /props") {
                json!({"chat_template_caps": {"supports_tools": supports_tools}}).to_string()
            } else {
                json!({"object": "list", "data": [{"id": "gemma"}]}).to_string()
            };
            write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            )
            .unwrap();
        }
    });
    (url, handle)
}

#[test]
fn doctor_warns_when_a_local_llama_server_takes_no_tools() {
    for supports in [false, true] {
        let (url, server) = llama_like(supports, 2);
        let p = Sandbox::new()
            .baton_exe(env!("CARGO_BIN_EXE_baton"))
            .baton_config(&format!(
                "[providers.llama]\nkind = \"openai\"\nbase_url = \"{url}\"\n[models]\nbalanced = \"llama/gemma\"\n"
            ));
        let out = p.run(&["doctor", "--json"]);
        server.join().unwrap();
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        let llama = doc["providers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "llama")
            .unwrap()
            .clone();
        assert_eq!(llama["verdict"], "ok", "{llama}");
        if supports {
            assert_eq!(llama.get("warning"), None, "{llama}");
        } else {
            let w = llama["warning"].as_str().unwrap();
            assert!(
                w.contains("--jinja") && w.contains("supports_tools = false"),
                "{w}"
            );
        }
    }
}

/// [22/24] A small model on a local server, which the table does not know: the session reads
/// the server's context from `/props`, asks for at most a quarter of it (a local model without a
/// limit once wrote for five minutes with nothing on screen), and says before the first request
/// that the server's chat template takes no tools. A route's own `max_output_tokens` wins.
#[test]
fn a_local_model_the_table_does_not_know_gets_a_limit_from_the_server_s_context() {
    for (route_limit, tools) in [(None, false), (Some(300), true)] {
        let server = MockServer::builder()
            .props(
                json!({"default_generation_settings": {"n_ctx": 16384},
                       "chat_template_caps": {"supports_tools": tools}})
                .to_string(),
            )
            .turn(Turn::text("hello"))
            .start_blocking();
        let extra = route_limit.map_or(String::new(), |n| {
            format!("[routes.\"local/tiny\"]\nmax_output_tokens = {n}\n")
        });
        let out = local_session(&server, &extra);
        assert_exit(&out, 0);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            err.contains("says its chat template takes no tools") && err.contains("--jinja"),
            !tools,
            "{err}"
        );
        let asked: Vec<String> = server.requests().iter().map(|r| r.path.clone()).collect();
        assert_eq!(asked, ["/props", "/v1/chat/completions"]);
        assert_eq!(
            first_body(&server)["max_tokens"],
            json!(route_limit.unwrap_or(4096)),
            "{}",
            first_body(&server)
        );
    }
    // A server that has no /props (Ollama): the default limit all the same.
    let server = MockServer::builder()
        .turn(Turn::text("hello"))
        .start_blocking();
    let out = local_session(&server, "");
    assert_exit(&out, 0);
    assert_eq!(first_body(&server)["max_tokens"], json!(8192));
}

/// A start refused by a setting sends nothing, not even the `/props` question: the server is
/// asked only once every setting that can refuse the start is checked.
#[test]
fn a_refused_start_asks_a_local_server_nothing() {
    let server = MockServer::builder()
        .props(json!({"default_generation_settings": {"n_ctx": 16384}}).to_string())
        .turn(Turn::text("hello"))
        .start_blocking();
    let out = local_session(&server, "[agent]\ncompaction_class = \"fav\"\n");
    assert_exit(&out, 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("agent.compaction_class = \"fav\""), "{err}");
    let asked: Vec<String> = server.requests().iter().map(|r| r.path.clone()).collect();
    assert!(asked.is_empty(), "{asked:?}");
}

/// A session's model requests share one connection: the answer's connection is back in the
/// client's pool before the next request, also after a tool call that ran on the session's own
/// thread (a small `read`). The `/props` question has a connection of its own.
#[test]
fn the_turns_of_a_session_share_one_connection() {
    let server = MockServer::builder()
        .turn(Turn::tool_call("c1", "read", json!({"path": "note.txt"})))
        .turn(Turn::tool_call("c2", "read", json!({"path": "note.txt"})))
        .turn(Turn::text("done"))
        .start_blocking();
    let p = local_project(&server, "");
    std::fs::write(p.path("note.txt"), "a small file\n").unwrap();
    let out = p.run(&["agent", "--model", "local/tiny", "read note.txt twice"]);
    assert_exit(&out, 0);
    let asked: Vec<String> = server.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(asked.len(), 4, "{asked:?}");
    assert_eq!(server.connections(), 2, "{asked:?}");
}

/// A project whose config has `server` as a loopback provider `local`, and `extra`.
fn local_project(server: &MockServer, extra: &str) -> Sandbox {
    Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .baton_config(&format!(
            "[providers.local]\nkind = \"openai\"\nbase_url = \"{}/v1\"\n{extra}",
            server.url()
        ))
}

/// `baton agent --model local/tiny` against `server` as a loopback provider `local`, with
/// `extra` config.
fn local_session(server: &MockServer, extra: &str) -> std::process::Output {
    local_project(server, extra).run(&["agent", "--model", "local/tiny", "say hello"])
}
