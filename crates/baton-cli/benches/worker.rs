//! What a managed worker saves: the time from asking to the model being asked (prompt to first
//! byte on the wire) of `baton worker send` and of `worker_send` over one long-lived `baton mcp`
//! (how a coordinator in Claude Code or Codex prompts a worker: no process starts per prompt)
//! against a fresh `baton agent --resume` of a session holding the same conversation — all
//! against the mock model, side by side.
//!
//! `cargo bench -p baton-cli --bench worker` (release build). Prints the median and p95 of each,
//! and their ratio; also the whole round trip (the answer printed). Three scenarios: short
//! answers, long ones, and a role with one MCP server (what a resume starts again every time).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use baton_testkit::fixture::Sandbox;
use baton_testkit::{MockServer, Turn};

const RUNS: usize = 30;

fn quantiles(mut v: Vec<Duration>) -> (f64, f64) {
    v.sort();
    let p = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1000.0;
    (p(0.5), p(0.95))
}

/// Sends `RUNS` prompts to worker `name` with `worker_send` over one `baton mcp` started in
/// `sb`; for each, the time until the model was asked and until the tool answered.
fn measure_mcp(
    sb: &Sandbox,
    arrivals: &Arc<Mutex<Vec<Instant>>>,
    name: &str,
) -> (Vec<Duration>, Vec<Duration>) {
    use rmcp::model::CallToolRequestParams;
    use rmcp::ServiceExt as _;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let cmd = tokio::process::Command::from(sb.baton(&["mcp"]));
        let child = rmcp::transport::TokioChildProcess::new(cmd).unwrap();
        let client = ().serve(child).await.unwrap();
        let mut first = Vec::new();
        let mut whole = Vec::new();
        for i in 0..RUNS {
            let args = serde_json::json!({"name": name, "prompt": format!("mcp prompt {i}")});
            let params = CallToolRequestParams::new("worker_send".to_string())
                .with_arguments(args.as_object().unwrap().clone());
            let before = arrivals.lock().unwrap().len();
            let t0 = Instant::now();
            let r = client.call_tool(params).await.unwrap();
            let t1 = Instant::now();
            assert_eq!(r.is_error, Some(false), "{r:?}");
            let got = arrivals.lock().unwrap();
            assert!(got.len() > before, "the model was not asked");
            first.push(got[before] - t0);
            whole.push(t1 - t0);
        }
        client.cancel().await.unwrap();
        (first, whole)
    })
}

/// Runs `cmd` once per prompt; for each, the time until the model was asked and until the
/// command ended.
fn measure(
    arrivals: &Arc<Mutex<Vec<Instant>>>,
    mut cmd: impl FnMut(usize) -> std::process::Command,
) -> (Vec<Duration>, Vec<Duration>) {
    let mut first = Vec::new();
    let mut whole = Vec::new();
    for i in 0..RUNS {
        let before = arrivals.lock().unwrap().len();
        let t0 = Instant::now();
        let out = cmd(i).output().unwrap();
        let t1 = Instant::now();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got = arrivals.lock().unwrap();
        assert!(got.len() > before, "the model was not asked");
        first.push(got[before] - t0);
        whole.push(t1 - t0);
    }
    (first, whole)
}

/// One scenario: the model answers every prompt with `answer`; the worker and the resumed
/// session hold the same conversation, and with `mcp` their role lists one MCP server (`baton
/// mcp` itself over stdio), which a resume starts again at every prompt. Prints its figures.
fn scenario(title: &str, answer: &str, mcp: bool) {
    let arrivals: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let seen = arrivals.clone();
    // Keeping no request: the mock's time per request stays the same from the first
    // measurement to the last (it kept every 400 KiB request of the 8 KiB scenario before).
    let server = MockServer::builder()
        .keep_requests(false)
        // Model requests only: a session also asks the mock's `GET /props` (a local server's
        // context size), and a resume asks it at every start, before the model.
        .on_request(move |r| {
            if r.method == "POST" {
                seen.lock().unwrap().push(Instant::now());
            }
        })
        .start_blocking();
    for _ in 0..(3 * RUNS + 2) {
        server.push(Turn::text(answer));
    }
    let baton = env!("CARGO_BIN_EXE_baton");
    let (servers, listed) = if mcp {
        (
            format!("[mcp_servers.baton]\ncommand = \"{baton}\"\nargs = [\"mcp\"]\n"),
            "mcp: [baton]\n",
        )
    } else {
        (String::new(), "")
    };
    let sb = Sandbox::new()
        .baton_exe(baton)
        .mock_provider(&server, "openai", &servers);
    sb.write(
        ".baton/roles/helper.md",
        &format!("---\nname: helper\ndescription: a worker\ntools: []\n{listed}---\nHelp.\n"),
    );
    let out = sb.run(&[
        "worker", "start", "b", "--role", "helper", "--model", "mock/m",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (w_first, w_whole) = measure(&arrivals, |i| {
        sb.baton(&["worker", "send", "b", &format!("prompt {i}")])
    });
    let (m_first, m_whole) = measure_mcp(&sb, &arrivals, "b");
    let _ = sb.run(&["worker", "stop", "b"]);
    let stages = stages(&sb.work().join(".baton/state/workers/b.events.jsonl"));
    // The same conversation, resumed by a fresh process for each prompt.
    let out = sb.run(&[
        "agent", "--json", "--role", "helper", "--model", "mock/m", "start",
    ]);
    let first: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
    let session = first["session_id"].as_str().unwrap().to_string();
    let (r_first, r_whole) = measure(&arrivals, |i| {
        sb.baton(&[
            "agent",
            "--role",
            "helper",
            "--model",
            "mock/m",
            "--resume",
            &session,
            &format!("prompt {i}"),
        ])
    });
    let (mf50, mf95) = quantiles(m_first);
    let (mw50, mw95) = quantiles(m_whole);
    let (wf50, wf95) = quantiles(w_first);
    let (rf50, rf95) = quantiles(r_first);
    let (ww50, ww95) = quantiles(w_whole);
    let (rw50, rw95) = quantiles(r_whole);
    println!("{title}");
    println!("  prompt to first byte on the wire, {RUNS} prompts each (ms):");
    println!("    baton worker send           median {wf50:7.2}   p95 {wf95:7.2}");
    println!("    worker_send over baton mcp  median {mf50:7.2}   p95 {mf95:7.2}");
    println!("    baton agent --resume        median {rf50:7.2}   p95 {rf95:7.2}");
    println!(
        "    resume / worker             {:.2}× at the median (over mcp {:.2}×)",
        rf50 / wf50,
        rf50 / mf50
    );
    println!("  prompt to answer printed (ms):");
    println!("    baton worker send           median {ww50:7.2}   p95 {ww95:7.2}");
    println!("    worker_send over baton mcp  median {mw50:7.2}   p95 {mw95:7.2}");
    println!("    baton agent --resume        median {rw50:7.2}   p95 {rw95:7.2}");
    println!(
        "    resume / worker             {:.2}× at the median (over mcp {:.2}×)",
        rw50 / ww50,
        rw50 / mw50
    );
    println!(
        "  inside the worker (ms): queued → delivered median {:.2} p95 {:.2}, delivered → answered median {:.2} p95 {:.2}",
        stages.0 .0, stages.0 .1, stages.1 .0, stages.1 .1
    );
}

/// The median and p95 of queued → delivered and of delivered → answered, from the worker's log.
fn stages(log: &std::path::Path) -> ((f64, f64), (f64, f64)) {
    let text = std::fs::read_to_string(log).unwrap();
    // Milliseconds into the day of an RFC 3339 UTC time (`…THH:MM:SS.fffZ`): the bench runs in
    // seconds, so the day never matters.
    let ms = |at: &str| {
        let clock = at.split('T').nth(1).unwrap_or("").trim_end_matches('Z');
        let mut parts = clock.split(':');
        let h: f64 = parts
            .next()
            .and_then(|x| x.parse().ok())
            .unwrap_or(f64::NAN);
        let m: f64 = parts
            .next()
            .and_then(|x| x.parse().ok())
            .unwrap_or(f64::NAN);
        let s: f64 = parts
            .next()
            .and_then(|x| x.parse().ok())
            .unwrap_or(f64::NAN);
        ((h * 60.0 + m) * 60.0 + s) * 1000.0
    };
    let mut at: std::collections::HashMap<(String, String), f64> = Default::default();
    for l in text.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        if let (Some(id), Some(t)) = (v["id"].as_str(), v["at"].as_str()) {
            at.insert(
                (v["type"].as_str().unwrap().to_string(), id.to_string()),
                ms(t),
            );
        }
    }
    let mut a = Vec::new();
    let mut b = Vec::new();
    for ((kind, id), t) in &at {
        if kind == "prompt.queued" {
            if let Some(d) = at.get(&("prompt.delivered".to_string(), id.clone())) {
                a.push(d - t);
                if let Some(x) = at.get(&("prompt.answered".to_string(), id.clone())) {
                    b.push(x - d);
                }
            }
        }
    }
    let q = |mut v: Vec<f64>| {
        v.sort_by(|x, y| x.partial_cmp(y).unwrap());
        let at = |p: f64| {
            v.get(((v.len().max(1) - 1) as f64 * p).round() as usize)
                .copied()
                .unwrap_or(f64::NAN)
        };
        (at(0.5), at(0.95))
    };
    (q(a), q(b))
}

fn main() {
    scenario("short answers (a conversation of a few KiB)", "ok", false);
    let long = "A line of a long answer, as a model writes when it reads code and explains it.\n"
        .repeat(100);
    scenario(
        "answers of 8 KiB (the conversation grows to about 250 KiB)",
        &long,
        false,
    );
    scenario(
        "short answers, the role lists one MCP server (`baton mcp` over stdio)",
        "ok",
        true,
    );
}
