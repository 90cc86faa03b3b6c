//! End-to-end tests of `baton serve`: the built binary serving on 127.0.0.1, asked over real
//! HTTP — who may ask (token, `Host`, `Origin`, CSRF), the live event stream and its resume, and
//! an action carried out as the CLI carries it out.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Child, Stdio};
use std::time::Duration;

use baton_testkit::fixture::{assert_exit, wait_until, Sandbox};
use futures::StreamExt as _;

const WAIT: Duration = Duration::from_secs(30);

/// `baton serve ARGS` running in `sb`; its base URL; killed when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

thread_local! {
    /// The user's token the server last started on this thread printed: what [`client`] sends.
    static TOKEN: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// `baton serve ARGS`; its base URL. The user's own token (printed in the page's address when
/// no `--token` is given) is what [`client`] then sends.
fn serve(sb: &Sandbox, args: &[&str]) -> Server {
    let (child, url) = common::serve_baton(sb, args);
    let (url, token) = url.split_once("/?token=").unwrap_or((&url, ""));
    let token = (token != "…" && !token.is_empty()).then(|| token.to_string());
    TOKEN.with(|t| *t.borrow_mut() = token);
    Server {
        child,
        url: url.trim_end_matches('/').to_string(),
    }
}

fn project() -> Sandbox {
    let sb = Sandbox::new().baton_exe(env!("CARGO_BIN_EXE_baton"));
    common::command_role(&sb, "helper", "cat >/dev/null; echo helped");
    common::command_role(
        &sb,
        "gated",
        "cat >/dev/null; while [ ! -f release ]; do sleep 0.02; done; echo released",
    );
    sb
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn client() -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    if let Some(t) = TOKEN.with(|t| t.borrow().clone()) {
        headers.insert(
            reqwest::header::AUTHORIZATION,
            format!("Bearer {t}").parse().unwrap(),
        );
    }
    reqwest::Client::builder()
        .timeout(WAIT)
        .default_headers(headers)
        .build()
        .unwrap()
}

/// One event of the stream: its data, and the message's id when it is the message's last event
/// (a message is a batch of events; its id is the cursor after the last).
#[derive(Debug, Clone, PartialEq)]
struct Sse {
    id: Option<String>,
    data: serde_json::Value,
}

/// Reads the stream at `path` (resuming after `last`), handing each message (`event:` name,
/// `id:`, `data:`) to `take` until it says that is enough.
async fn read_stream(
    base: &str,
    path: &str,
    last: Option<&str>,
    mut take: impl FnMut(Option<String>, Option<String>, String) -> bool,
) {
    let mut req = client().get(format!("{base}{path}"));
    if let Some(id) = last {
        req = req.header("Last-Event-ID", id);
    }
    let res = req.send().await.unwrap();
    assert_eq!(res.status(), 200);
    let mut stream = res.bytes_stream();
    let mut buf = String::new();
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let chunk = tokio::time::timeout_at(deadline, stream.next())
            .await
            .unwrap_or_else(|_| panic!("no more messages from {path}"))
            .unwrap()
            .unwrap();
        buf.push_str(&String::from_utf8_lossy(&chunk));
        for (kind, id, data) in blocks(&mut buf) {
            if take(kind, id, data) {
                return;
            }
        }
    }
}

/// Reads events from `/api/events` (resuming after `last`) until `enough` says so.
async fn read_events(base: &str, last: Option<&str>, enough: impl Fn(&[Sse]) -> bool) -> Vec<Sse> {
    let mut out: Vec<Sse> = Vec::new();
    if enough(&out) {
        return out;
    }
    read_stream(base, "/api/events", last, |kind, id, data| {
        // A note or an error of the server is not a feed event.
        if let Some(k) = kind {
            eprintln!("server said ({k}): {data}");
            return false;
        }
        let batch: Vec<serde_json::Value> = serde_json::from_str(&data).unwrap();
        assert!(!batch.is_empty(), "an empty message");
        let n = batch.len();
        out.extend(batch.into_iter().enumerate().map(|(k, data)| Sse {
            id: if k + 1 == n { id.clone() } else { None },
            data,
        }));
        enough(&out)
    })
    .await;
    out
}

fn names(events: &[Sse]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            let ev = &e.data["event"];
            ev["type"]
                .as_str()
                .or(ev["event"].as_str())
                .unwrap_or("?")
                .to_string()
        })
        .collect()
}

#[test]
fn off_loopback_it_needs_a_token_and_every_request_without_it_gets_401() {
    let sb = project();
    let out = sb.run(&["serve", "--addr", "0.0.0.0:0"]);
    assert_exit(&out, 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("a token is required") && err.contains("--token"),
        "{err}"
    );

    let server = serve(&sb, &["--addr", "0.0.0.0:0", "--token", "s3cret-token"]);
    let port = server.url.rsplit(':').next().unwrap().to_string();
    let base = format!("http://127.0.0.1:{port}");
    rt().block_on(async {
        let c = client();
        let res = c.get(format!("{base}/")).send().await.unwrap();
        assert_eq!(res.status(), 401);
        let res = c.get(format!("{base}/api/events")).send().await.unwrap();
        assert_eq!(res.status(), 401);
        let res = c
            .get(format!("{base}/"))
            .bearer_auth("wrong-token!")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 401);
        let res = c
            .get(format!("{base}/"))
            .bearer_auth("s3cret-token")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        // The page opened with ?token= sets the cookie its own requests then carry.
        let res = c
            .get(format!("{base}/?token=s3cret-token"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        let cookie = res.headers()["set-cookie"].to_str().unwrap().to_string();
        assert!(
            cookie.starts_with("baton_token=s3cret-token") && cookie.contains("HttpOnly"),
            "{cookie}"
        );
        let res = c
            .get(format!("{base}/assets/app.js"))
            .header("Cookie", "baton_token=s3cret-token")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        // The page's files go gzipped to a client that takes it.
        let res = c
            .get(format!("{base}/assets/model.js"))
            .header("Cookie", "baton_token=s3cret-token")
            .header("Accept-Encoding", "gzip, br")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        assert_eq!(res.headers()["content-encoding"], "gzip");
    });
}

/// Loopback is reachable by every user of the machine: without `--token` the server uses the
/// user's own, made 0600 in their state folder and printed in the page's address; a request
/// without it gets 401.
#[test]
fn on_loopback_every_request_needs_the_user_s_token_from_a_private_file() {
    use std::os::unix::fs::PermissionsExt as _;
    let sb = project();
    let server = serve(&sb, &["--addr", "127.0.0.1:0"]);
    let file = sb.state_home().join("baton/serve.token");
    let token = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(TOKEN.with(|t| t.borrow().clone()), Some(token.clone()));
    let base = server.url.clone();
    rt().block_on(async {
        let bare = reqwest::Client::builder().timeout(WAIT).build().unwrap();
        for path in ["/", "/api/events", "/assets/app.js"] {
            let res = bare.get(format!("{base}{path}")).send().await.unwrap();
            assert_eq!(res.status(), 401, "{path}");
        }
        let res = bare
            .get(format!("{base}/?token={token}"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
    });
    drop(server);
    // The same token the next time.
    let again = serve(&sb, &["--addr", "127.0.0.1:0"]);
    assert_eq!(TOKEN.with(|t| t.borrow().clone()), Some(token));
    drop(again);
}

#[test]
fn a_foreign_origin_or_host_gets_403_and_an_action_needs_the_page_s_csrf_token() {
    let sb = project();
    let server = serve(&sb, &["--addr", "127.0.0.1:0"]);
    let base = server.url.clone();
    rt().block_on(async {
        let c = client();
        let csrf = csrf(&base).await;
        assert_eq!(csrf.len(), 32, "{csrf}");
        // A DNS-rebound name, and a page of another origin.
        let res = c
            .get(format!("{base}/"))
            .header("Host", "evil.example")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 403);
        let res = c
            .get(format!("{base}/api/events"))
            .header("Origin", "http://evil.example")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 403);
        // An action without the token, with a wrong one, then with the page's.
        let cancel = format!("{base}/api/tasks/t0000000000000000/cancel");
        let res = c.post(&cancel).send().await.unwrap();
        assert_eq!(res.status(), 403);
        let res = c
            .post(&cancel)
            .header("X-Baton-CSRF", "0".repeat(32))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 403);
        let res = c
            .post(&cancel)
            .header("X-Baton-CSRF", &csrf)
            .header("Origin", &base)
            .send()
            .await
            .unwrap();
        // Past the checks: the action started (`baton task cancel` then finds no such task).
        assert_eq!(res.status(), 202, "{}", res.text().await.unwrap());
    });
}

#[test]
fn the_live_stream_follows_the_cli_and_a_reconnect_resumes_with_no_gap_and_no_duplicate() {
    let sb = project();
    // A task that ran before the page opened.
    let out = sb.run(&[
        "task",
        "--background",
        "--role",
        "helper",
        "--name",
        "first",
        "t",
    ]);
    assert_exit(&out, 0);
    let first = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(wait_until(WAIT, || {
        let out = sb.run(&["task", "status", &first, "--json"]);
        String::from_utf8_lossy(&out.stdout).contains("\"done\"")
    }));
    let server = serve(&sb, &["--addr", "127.0.0.1:0"]);
    let base = server.url.clone();
    rt().block_on(async {
        // The whole past, in order, up to its completion.
        let past = read_events(&base, None, |ev| {
            names(ev).iter().any(|n| n == "task.completed")
        })
        .await;
        let n = names(&past);
        assert_eq!(n.first().map(String::as_str), Some("task.created"), "{n:?}");
        // The message's id is the cursor after its last event: one log here, so that event's
        // position.
        let end = past.last().unwrap();
        assert_eq!(end.id.as_deref(), end.data["pos"].as_str(), "{end:?}");
        // A reconnect after the second event (its cursor: its position) gets the third on,
        // exactly.
        let resumed = read_events(&base, past[1].data["pos"].as_str(), |ev| {
            ev.len() >= past.len() - 2
        })
        .await;
        assert_eq!(resumed[..past.len() - 2], past[2..], "no gap, no duplicate");
        // Live: a task started from the CLI while the page is open appears in it.
        let last = past.last().unwrap().id.clone().unwrap();
        let mut cmd = sb.baton(&[
            "task",
            "--background",
            "--role",
            "helper",
            "--name",
            "second",
            "t",
        ]);
        let started = tokio::task::spawn_blocking(move || {
            let out = cmd.stdin(Stdio::null()).output().unwrap();
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        });
        let live = read_events(&base, Some(&last), |ev| {
            names(ev).iter().any(|n| n == "task.created")
        })
        .await;
        let second = started.await.unwrap();
        assert_eq!(live[0].data["source"]["id"], second.as_str(), "{live:#?}");
        assert_eq!(live[0].data["source"]["kind"], "task");
    });
}

#[test]
fn cancel_in_the_page_stops_the_task_as_the_cli_does() {
    let sb = project();
    let out = sb.run(&[
        "task",
        "--background",
        "--role",
        "gated",
        "--name",
        "held",
        "t",
    ]);
    assert_exit(&out, 0);
    let task = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let server = serve(&sb, &["--addr", "127.0.0.1:0"]);
    let base = server.url.clone();
    rt().block_on(async {
        let c = client();
        let csrf = csrf(&base).await;
        // Wait until the task runs (its child started).
        read_events(&base, None, |ev| {
            names(ev).iter().any(|n| n == "task.started")
        })
        .await;
        let res = c
            .post(format!("{base}/api/tasks/{task}/cancel"))
            .header("X-Baton-CSRF", &csrf)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 202, "{}", res.text().await.unwrap());
    });
    // The cancel is asked for; the task's supervisor stops its child and records it.
    let doc = || -> serde_json::Value {
        serde_json::from_slice(&sb.run(&["task", "status", &task, "--json"]).stdout).unwrap()
    };
    let pid = doc()["pid"].as_u64().unwrap() as u32;
    assert!(
        wait_until(WAIT, || doc()["phase"] == "cancelled"),
        "{}",
        doc()
    );
    // No process of it is left (its supervisor's process group went with it).
    assert!(wait_until(WAIT, || !baton_process::alive(pid)));
    assert!(!sb.work().join("release").exists());
}

mod common;

/// The page's CSRF token.
/// The JSON a GET of `url` answers.
async fn get_json<T: serde::de::DeserializeOwned>(url: &str) -> T {
    client()
        .get(url)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

async fn csrf(base: &str) -> String {
    let page = client().get(format!("{base}/")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    html.split("name=\"baton-csrf\" content=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap()
        .to_string()
}

#[test]
fn a_checkpoint_answered_in_the_page_resumes_the_workflow_to_its_end_with_the_user_s_words() {
    use common::workflow::*;
    let (wf, id) = Wf::at_scope_checkpoint();
    let server = serve(&wf.sb, &["--addr", "127.0.0.1:0"]);
    let base = server.url.clone();
    rt().block_on(async {
        let token = csrf(&base).await;
        let c = client();
        let url = format!("{base}/api/workflows/{id}/answer");
        // An empty answer is refused; the gate's option is taken.
        let res = c
            .post(&url)
            .header("X-Baton-CSRF", &token)
            .body("  ")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 400);
        let res = c
            .post(&url)
            .header("X-Baton-CSRF", &token)
            .body("Critical only")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 202, "{}", res.text().await.unwrap());
        // The page sees it through to the end.
        let seen = read_events(&base, None, |ev| {
            names(ev).iter().any(|n| n == "workflow_completed")
        })
        .await;
        assert!(names(&seen).iter().any(|n| n == "checkpoint_answered"));
    });
    let answered: Vec<serde_json::Value> = wf
        .events()
        .into_iter()
        .filter(|e| e["event"] == "checkpoint_answered")
        .collect();
    assert_eq!(answered.len(), 1);
    assert_eq!(answered[0]["details"]["answer"], "Critical only");
    wf.wait_completed();
    // Where it stands is the projection's document; a dispatch's contract is read by the
    // runner's own parser (the verifier's scenario rows typed).
    rt().block_on(async {
        let docs: Vec<serde_json::Value> = get_json(&format!("{base}/api/projection")).await;
        let doc = docs
            .iter()
            .find(|d| d["kind"] == "workflow" && d["id"] == id.as_str())
            .unwrap_or_else(|| panic!("no document of {id}: {docs:#?}"));
        assert_eq!(doc["state"], "done", "{doc:#}");
        assert_eq!(doc["workflow"]["kind"], "BUILD", "{doc:#}");
        assert!(doc["workflow"]["checkpoint"].is_null(), "{doc:#}");
        let verifier = doc["workflow"]["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["agent"] == "integration-verifier")
            .unwrap()["task_id"]
            .as_str()
            .unwrap()
            .to_string();
        let d: serde_json::Value =
            get_json(&format!("{base}/api/workflows/{id}/dispatches/{verifier}")).await;
        assert_eq!(d["contract"]["verdict"], "pass", "{d:#}");
        let rows = d["contract"]["scenarios"].as_array().unwrap();
        assert!(
            !rows.is_empty() && rows.iter().all(|r| r["status"] == "PASS"),
            "{d:#}"
        );
        let res = client()
            .get(format!("{base}/api/workflows/{id}/dispatches/t99"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 404);
    });
    // The same answer given with the CLI writes the same record: event by event, what happened
    // (times, ids and the artifact's copies of them aside). The agents of a parallel batch start
    // in the batch's order but finish in whichever order they finish: within a batch's run of
    // agent events the comparison takes them as a set.
    let (cli, cli_id) = Wf::at_scope_checkpoint();
    assert_exit(
        &cli.run(&["resume", &cli_id, "--answer", "Critical only"]),
        0,
    );
    cli.wait_completed();
    let what = |w: &Wf, id: &str| -> Vec<serde_json::Value> {
        let work = w.sb.work().display().to_string();
        w.events()
            .into_iter()
            .map(|e| {
                let reason = e["reason"]
                    .as_str()
                    .map(|r| r.replace(id, "ID").replace(&work, "W"));
                serde_json::json!([
                    e["event"],
                    e["phase"],
                    e["task_id"],
                    e["agent"],
                    e["decision"],
                    reason,
                    e["details"]["answer"],
                    e["details"]["options"]
                ])
            })
            .collect()
    };
    let batched = |events: Vec<serde_json::Value>| -> Vec<serde_json::Value> {
        let agent = |e: &serde_json::Value| {
            ["agent_started", "agent_completed", "contract_parsed"]
                .contains(&e[0].as_str().unwrap_or(""))
        };
        let mut out: Vec<serde_json::Value> = Vec::new();
        let mut run: Vec<serde_json::Value> = Vec::new();
        for e in events {
            if agent(&e) {
                run.push(e);
                continue;
            }
            run.sort_by_key(|e| e.to_string());
            out.append(&mut run);
            out.push(e);
        }
        run.sort_by_key(|e| e.to_string());
        out.append(&mut run);
        out
    };
    assert_eq!(batched(what(&wf, &id)), batched(what(&cli, &cli_id)));
}

#[test]
fn a_flow_abandoned_in_the_page_is_abandoned_on_disk() {
    let (sb, id) = common::blocked_flow();
    let server = serve(&sb, &["--addr", "127.0.0.1:0"]);
    let base = server.url.clone();
    rt().block_on(async {
        let token = csrf(&base).await;
        let c = client();
        let res = c
            .post(format!("{base}/api/flows/{id}/dance"))
            .header("X-Baton-CSRF", &token)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 404);
        // An id that reads as an option is refused before any command runs.
        let res = c
            .post(format!("{base}/api/flows/--force/clean"))
            .header("X-Baton-CSRF", &token)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 400);
        let res = c
            .post(format!("{base}/api/flows/{id}/abandon"))
            .header("X-Baton-CSRF", &token)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 202, "{}", res.text().await.unwrap());
        read_events(&base, None, |ev| {
            names(ev).iter().any(|n| n == "flow.abandoned")
        })
        .await;
    });
    let log = std::fs::read_to_string(
        sb.work()
            .join(format!(".baton/state/flows/{id}.events.jsonl")),
    )
    .unwrap();
    assert!(log.contains("\"flow.abandoned\""), "{log}");
    let actions: Vec<String> = std::fs::read_dir(sb.work().join(".baton/state/actions"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !actions.iter().any(|a| a.contains("clean")),
        "nothing was cleaned: {actions:?}"
    );
}

#[test]
fn a_task_s_log_and_a_session_s_transcript_are_read_through_the_api() {
    use baton_testkit::{MockServer, Turn};
    let mock = MockServer::builder()
        .turn(Turn::text("Hello from the model."))
        .start_blocking();
    let sb = Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .mock_provider(&mock, "openai", "");
    common::command_role(&sb, "helper", "cat >/dev/null; echo helped");
    let out = sb.run(&["agent", "--json", "--model", "mock/m", "say hello"]);
    assert_exit(&out, 0);
    let started: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
    let session = started["session_id"].as_str().unwrap().to_string();
    let out = sb.run(&[
        "task",
        "--background",
        "--role",
        "helper",
        "--name",
        "first",
        "t",
    ]);
    assert_exit(&out, 0);
    let task = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(wait_until(WAIT, || {
        String::from_utf8_lossy(&sb.run(&["task", "status", &task, "--json"]).stdout)
            .contains("\"done\"")
    }));
    let server = serve(&sb, &["--addr", "127.0.0.1:0"]);
    let base = server.url.clone();
    rt().block_on(async {
        let c = client();
        let log: Vec<String> = c
            .get(format!("{base}/api/tasks/{task}/log"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert!(log.iter().any(|l| l.contains("helped")), "{log:?}");
        let transcript: Vec<serde_json::Value> = c
            .get(format!("{base}/api/sessions/{session}/transcript"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let said = |kind: &str, text: &str| {
            transcript
                .iter()
                .any(|e| e["kind"] == kind && e["text"] == text)
        };
        assert!(said("user", "say hello"), "{transcript:?}");
        assert!(said("assistant", "Hello from the model."), "{transcript:?}");
        let res = c
            .get(format!("{base}/api/sessions/0190-none/transcript"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 404);
        let res = c
            .get(format!("{base}/api/tasks/..%2Fx/log"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 400);
    });
}

/// The messages complete in `buf` (`event:` name, `id:`, `data:`; those with data), taken out
/// of it.
fn blocks(buf: &mut String) -> Vec<(Option<String>, Option<String>, String)> {
    let mut out = Vec::new();
    while let Some(end) = buf.find("\n\n") {
        let block: String = buf.drain(..end + 2).collect();
        let (mut kind, mut id, mut data) = (None, None, String::new());
        for line in block.lines() {
            if let Some(v) = line.strip_prefix("event:") {
                kind = Some(v.trim().to_string());
            } else if let Some(v) = line.strip_prefix("id:") {
                id = Some(v.trim().to_string());
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.trim_start());
            }
        }
        if !data.is_empty() {
            out.push((kind, id, data));
        }
    }
    out
}

/// The stream's messages as they come (`event:` name, `id:`, `data:`), from `path`, until
/// `enough` says so.
async fn read_messages(
    base: &str,
    path: &str,
    enough: impl Fn(&[(Option<String>, Option<String>, String)]) -> bool,
) -> Vec<(Option<String>, Option<String>, String)> {
    let mut out = Vec::new();
    read_stream(base, path, None, |kind, id, data| {
        out.push((kind, id, data));
        enough(&out)
    })
    .await;
    out
}

/// [22/24] The page holds only what it shows: its first message says where each log stands
/// (not every event of the past), the Events list and the Cost view are asked for, a page at a
/// time, and a workflow's view reads that one log.
#[test]
fn the_page_s_history_is_an_overview_then_pages_asked_for() {
    let sb = project();
    let started = |name: &str| {
        let out = sb.run(&[
            "task",
            "--background",
            "--role",
            "helper",
            "--name",
            name,
            "t",
        ]);
        assert_exit(&out, 0);
        let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert!(wait_until(WAIT, || {
            let out = sb.run(&["task", "status", &id, "--json"]);
            String::from_utf8_lossy(&out.stdout).contains("\"done\"")
        }));
        id
    };
    let first = started("first");
    let log = sb
        .work()
        .join(format!(".baton/state/tasks/{first}.events.jsonl"));
    let lines = std::fs::read_to_string(&log).unwrap().lines().count();
    let server = serve(&sb, &["--addr", "127.0.0.1:0"]);
    let base = server.url.clone();
    rt().block_on(async {
        let said = read_messages(&base, "/api/events?overview=1", |m| !m.is_empty()).await;
        let (kind, id, data) = &said[0];
        assert_eq!(kind.as_deref(), Some("overview"), "{said:#?}");
        let o: serde_json::Value = serde_json::from_str(data).unwrap();
        assert_eq!(o["events"], lines, "{o:#}");
        let summary = &o["logs"][0];
        assert_eq!(
            (summary["kind"].as_str(), summary["id"].as_str()),
            (Some("task"), Some(first.as_str()))
        );
        assert_eq!(summary["events"], lines);
        assert_eq!(summary["last"], "task.completed");
        assert_eq!(o["docs"][0]["state"], "done", "{o:#}");
        // Its id is the cursor after everything it covers: a reconnect from it gets what came
        // after, event by event (here: a second task, and nothing of the first).
        let cursor = id.clone().unwrap();
        let live = tokio::spawn({
            let base = base.clone();
            async move {
                read_events(&base, Some(&cursor), |ev| {
                    names(ev).iter().any(|n| n == "task.completed")
                })
                .await
            }
        });
        let second = tokio::task::spawn_blocking({
            let mut cmd = sb.baton(&[
                "task",
                "--background",
                "--role",
                "helper",
                "--name",
                "second",
                "t",
            ]);
            move || {
                let out = cmd.stdin(Stdio::null()).output().unwrap();
                String::from_utf8_lossy(&out.stdout).trim().to_string()
            }
        })
        .await
        .unwrap();
        let live = live.await.unwrap();
        assert!(
            live.iter()
                .all(|e| e.data["source"]["id"] == second.as_str()),
            "{live:#?}"
        );
        assert_eq!(names(&live)[0], "task.created");
        let total = lines + live.len();

        // The Events list, newest first, a page at a time; filtered by kind.
        let page: serde_json::Value =
            get_json(&format!("{base}/api/timeline?limit=2&upto={total}")).await;
        assert_eq!(page["matched"], total, "{page:#}");
        let places: Vec<u64> = page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["i"].as_u64().unwrap())
            .collect();
        assert_eq!(places, [total as u64 - 1, total as u64 - 2]);
        assert_eq!(page["items"][0]["name"], "task.completed");
        assert_eq!(page["items"][0]["id"], second.as_str());
        let none: serde_json::Value = get_json(&format!("{base}/api/timeline?kind=worker")).await;
        assert_eq!(none["matched"], 0);
        let bad = client()
            .get(format!("{base}/api/timeline?kind=planet"))
            .send()
            .await
            .unwrap();
        assert_eq!(bad.status(), 400);
        assert!(bad.text().await.unwrap().contains("kind `planet`"));

        // The Cost view: the two tasks' children, by role.
        let cost: serde_json::Value = get_json(&format!("{base}/api/cost?by=role")).await;
        assert_eq!(cost["dispatches"], 2, "{cost:#}");
        assert_eq!(cost["sums"][0]["key"], "helper");
        let bad = client()
            .get(format!("{base}/api/cost?by=hour"))
            .send()
            .await
            .unwrap();
        assert_eq!(bad.status(), 400);
        assert!(bad
            .text()
            .await
            .unwrap()
            .contains("model, role, day or workflow"));

        // A workflow's events: none by that id is a 404, a bad id a 400.
        let missing = client()
            .get(format!(
                "{base}/api/workflows/wf-20261207T000000Z-00000000/events"
            ))
            .send()
            .await
            .unwrap();
        assert_eq!(missing.status(), 404);
        let bad = client()
            .get(format!("{base}/api/workflows/a..b/events"))
            .send()
            .await
            .unwrap();
        assert_eq!(bad.status(), 400);
    });
}
