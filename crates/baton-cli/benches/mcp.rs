//! `baton mcp` speed and size, side by side with the CLI doing the same work:
//!
//! - the `tools/call` round trip of `route` (a trivial tool) over stdio, against starting
//!   `baton route --json` once per request (what a client without the server would do);
//! - the round trip of `delegate_task` with a `command` child (`true`), against
//!   `baton task --role … --json` once per call;
//! - the server's resident memory (VmRSS) right after `initialize` and after the calls.
//!
//! `cargo bench -p baton-cli --bench mcp` (release build). Prints medians and p99 of each and the
//! ratio CLI / server; the goals of issue 12 are under 5 ms for the trivial call and under 15 MiB
//! idle.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use baton_testkit::fixture::Sandbox;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt as _;
use serde_json::json;

const ROUTE_CALLS: usize = 500;
const CLI_RUNS: usize = 40;
const DELEGATE_CALLS: usize = 40;

fn quantiles(mut v: Vec<Duration>) -> (Duration, Duration) {
    v.sort();
    let p = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    (p(0.5), p(0.99))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn main() {
    let sb = Sandbox::new().baton_exe(env!("CARGO_BIN_EXE_baton"));
    sb.write(
        ".baton/roles/noop.md",
        "---\nname: noop\ndescription: does nothing\ntools: []\nbackend: command\ncommand: [\"true\"]\n---\nNothing.\n",
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (route, delegate, idle, after) = rt.block_on(async {
        let cmd = tokio::process::Command::from(sb.baton(&["mcp"]));
        let child = TokioChildProcess::new(cmd).unwrap();
        let pid = child.id().unwrap();
        let client = ().serve(child).await.unwrap();
        let idle = rss_kib(pid);
        let call = |name: &str, args: serde_json::Value| {
            CallToolRequestParams::new(name.to_string())
                .with_arguments(args.as_object().unwrap().clone())
        };
        let mut route = Vec::with_capacity(ROUTE_CALLS);
        for i in 0..ROUTE_CALLS {
            let params = call(
                "route",
                json!({"request": format!("fix the failing test {i}")}),
            );
            let t = Instant::now();
            let r = client.call_tool(params).await.unwrap();
            route.push(t.elapsed());
            assert_eq!(r.is_error, Some(false));
        }
        let mut delegate = Vec::with_capacity(DELEGATE_CALLS);
        for i in 0..DELEGATE_CALLS {
            let params = call(
                "delegate_task",
                json!({"role": "noop", "name": format!("n{i}"), "task": "nothing"}),
            );
            let t = Instant::now();
            let r = client.call_tool(params).await.unwrap();
            delegate.push(t.elapsed());
            assert_eq!(r.is_error, Some(false), "{r:?}");
        }
        let after = rss_kib(pid);
        client.cancel().await.unwrap();
        (route, delegate, idle, after)
    });
    let mut cli_route = Vec::with_capacity(CLI_RUNS);
    for i in 0..CLI_RUNS {
        let t = Instant::now();
        let out = sb.run(&["route", "--json", &format!("fix the failing test {i}")]);
        cli_route.push(t.elapsed());
        assert!(out.status.success());
    }
    let mut cli_task = Vec::with_capacity(CLI_RUNS);
    for i in 0..CLI_RUNS {
        let t = Instant::now();
        let out = sb.run(&[
            "task",
            "--role",
            "noop",
            "--name",
            &format!("c{i}"),
            "--json",
            "nothing",
        ]);
        cli_task.push(t.elapsed());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let (r50, r99) = quantiles(route);
    let (d50, d99) = quantiles(delegate);
    let (c50, _) = quantiles(cli_route);
    let (t50, _) = quantiles(cli_task);
    println!("baton mcp over stdio ({ROUTE_CALLS} route calls, {DELEGATE_CALLS} delegate_task calls; CLI: {CLI_RUNS} runs each)");
    println!(
        "  route           median {:.3} ms  p99 {:.3} ms   | baton route --json  median {:.2} ms   CLI/server {:.0}x   (goal < 5 ms)",
        ms(r50), ms(r99), ms(c50), ms(c50) / ms(r50)
    );
    println!(
        "  delegate_task   median {:.2} ms  p99 {:.2} ms   | baton task --json   median {:.2} ms   CLI/server {:.1}x",
        ms(d50), ms(d99), ms(t50), ms(t50) / ms(d50)
    );
    println!(
        "  resident memory after initialize {:.1} MiB, after the calls {:.1} MiB   (goal idle < 15 MiB)",
        idle as f64 / 1024.0,
        after as f64 / 1024.0
    );
}
