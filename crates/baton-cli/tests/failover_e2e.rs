//! End-to-end tests of failover at run time: a session whose route runs out of quota or stays
//! overloaded continues on the next route of its model class (`turn.route_changed`), the built
//! `baton` binary against two mock servers, one per provider.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Output;

use baton_protocol::{AgentEvent, EndReason, ErrorCode, Outcome, RouteUsage, Usage};
use baton_testkit::fixture::{assert_exit, Sandbox};
use baton_testkit::{Fault, MockServer, Turn};
use pretty_assertions::assert_eq;
use serde_json::json;

/// OpenAI's answer for an account without quota: a 429 that waiting does not cure.
fn insufficient_quota() -> Fault {
    Fault::status(429).body(json!({"error": {
        "message": "You exceeded your current quota, please check your plan and billing details.",
        "type": "insufficient_quota",
        "param": null,
        "code": "insufficient_quota",
    }}))
}

/// A tool call that appends one line to `log.txt`: it must run once, whatever fails after it.
fn append_line() -> Turn {
    Turn::tool_call(
        "call_log",
        "bash",
        json!({"command": "echo ran >> log.txt"}),
    )
}

/// A project whose class `fast` is `a/model-a` then `b/model-b`: provider `a` speaks `kind_a` to
/// `a`, provider `b` speaks `kind_b` to `b`, both priced differently.
fn two_routes(a: &MockServer, kind_a: &str, b: &MockServer, kind_b: &str, extra: &str) -> Sandbox {
    let base = |server: &MockServer, kind: &str| match kind {
        "anthropic" => server.url(),
        _ => format!("{}/v1", server.url()),
    };
    Sandbox::new()
        .baton_exe(env!("CARGO_BIN_EXE_baton"))
        .baton_config(&format!(
            r#"
[providers.a]
kind = "{kind_a}"
base_url = "{base_a}"
api_key_env = "MOCK_API_KEY"

[providers.b]
kind = "{kind_b}"
base_url = "{base_b}"
api_key_env = "MOCK_API_KEY"

[models]
fast = ["a/model-a", "b/model-b"]

[prices."a/model-a"]
input = 1.0
output = 2.0

[prices."b/model-b"]
input = 10.0
output = 20.0

[retry]
initial_delay = "1ms"
max_delay = "20ms"
{extra}
"#,
            base_a = base(a, kind_a),
            base_b = base(b, kind_b),
        ))
        .env("MOCK_API_KEY", "test-key")
}

fn events(out: &Output) -> Vec<AgentEvent> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad event line {l}: {e}")))
        .collect()
}

/// `(turn, from, to, code)` of every `turn.route_changed`.
fn route_changes(evs: &[AgentEvent]) -> Vec<(u32, String, String, ErrorCode)> {
    evs.iter()
        .filter_map(|e| match e {
            AgentEvent::TurnRouteChanged {
                turn,
                from,
                to,
                error,
            } => Some((*turn, from.clone(), to.clone(), error.code)),
            _ => None,
        })
        .collect()
}

fn retries(evs: &[AgentEvent]) -> Vec<(u32, ErrorCode)> {
    evs.iter()
        .filter_map(|e| match e {
            AgentEvent::TurnRetrying { turn, error, .. } => Some((*turn, error.code)),
            _ => None,
        })
        .collect()
}

/// The cost of each completed turn, in order.
fn turn_costs(evs: &[AgentEvent]) -> Vec<Option<f64>> {
    evs.iter()
        .filter_map(|e| match e {
            AgentEvent::TurnCompleted { cost_usd, .. } => Some(*cost_usd),
            _ => None,
        })
        .collect()
}

fn usage(input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        cached_input_tokens: 0,
        output_tokens: output,
        cache_write_tokens: 0,
    }
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-9)
}

#[test]
fn out_of_quota_fails_over_for_the_rest_of_the_session_without_running_a_tool_twice() {
    // Route a runs turn 1 (a tool call), then its account runs out of quota on turn 2.
    let a = MockServer::builder()
        .turn(append_line().usage(1000, 0, 100))
        .fault(insufficient_quota())
        .start_blocking();
    // Route b, another provider in another wire format, carries on from turn 2.
    let b = MockServer::builder()
        .turn(Turn::text("The line is written.").usage(2000, 0, 50))
        .turn(Turn::text("Still here.").usage(100, 0, 10))
        .start_blocking();
    let p = two_routes(&a, "openai", &b, "anthropic", "");
    let out = p.run(&["agent", "--json", "--model-class", "fast", "log a line"]);
    assert_exit(&out, 0);
    let evs = events(&out);

    assert_eq!(
        route_changes(&evs),
        vec![(
            2,
            "a/model-a".to_string(),
            "b/model-b".to_string(),
            ErrorCode::QuotaExceeded
        )]
    );
    // Quota is not retried on the route that is out of it.
    assert_eq!(retries(&evs), vec![]);
    let Some(AgentEvent::TurnRouteChanged { error, .. }) = evs
        .iter()
        .find(|e| matches!(e, AgentEvent::TurnRouteChanged { .. }))
    else {
        unreachable!()
    };
    assert!(
        error.message.contains("You exceeded your current quota")
            && error.message.contains("out of credit or quota"),
        "{}",
        error.message
    );

    // The tool ran once: before the failover, in turn 1, and never again.
    assert_eq!(
        std::fs::read_to_string(p.work().join("log.txt")).unwrap(),
        "ran\n"
    );
    assert_eq!(a.model_requests().len(), 2);
    let b_requests = b.model_requests();
    assert_eq!(b_requests.len(), 1);
    assert_eq!(b_requests[0].model(), Some("model-b"));
    // Route b got the whole conversation, the tool call and its result included.
    let results = b_requests[0].tool_results();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].call_id, "call_log");

    // Each turn is priced at the route that ran it: 1000 in / 100 out at a's price, then
    // 2000 in / 50 out at b's.
    let cost_a = 1000.0 * 1.0 / 1e6 + 100.0 * 2.0 / 1e6;
    let cost_b = 2000.0 * 10.0 / 1e6 + 50.0 * 20.0 / 1e6;
    let costs = turn_costs(&evs);
    assert_eq!(costs.len(), 2);
    assert!(
        close(costs[0], cost_a) && close(costs[1], cost_b),
        "{costs:?}"
    );
    match evs.last() {
        Some(AgentEvent::SessionCompleted {
            outcome,
            reason,
            final_message,
            turns,
            usage: total,
            cost_usd,
            routes,
            ..
        }) => {
            assert_eq!(
                (*outcome, *reason, final_message.as_str(), *turns),
                (Outcome::Completed, None, "The line is written.", 2)
            );
            assert_eq!(*total, usage(3000, 150));
            assert!(close(*cost_usd, cost_a + cost_b), "{cost_usd:?}");
            let shape: Vec<(String, u32, Usage)> = routes
                .iter()
                .map(|r: &RouteUsage| (r.model.clone(), r.turns, r.usage))
                .collect();
            assert_eq!(
                shape,
                vec![
                    ("a/model-a".to_string(), 1, usage(1000, 100)),
                    ("b/model-b".to_string(), 1, usage(2000, 50)),
                ]
            );
            assert!(close(routes[0].cost_usd, cost_a) && close(routes[1].cost_usd, cost_b));
        }
        other => panic!("last event is not session.completed: {other:?}"),
    }
    a.assert_tool_results_answer_calls();
    b.assert_tool_results_answer_calls();

    // The transcript remembers the route: --resume continues on b, and a hears nothing more.
    let out = p.run(&["agent", "--json", "--resume", "last", "and now?"]);
    assert_exit(&out, 0);
    let evs = events(&out);
    match evs.first() {
        Some(AgentEvent::SessionStarted { model, resumed, .. }) => {
            assert_eq!((model.as_str(), *resumed), ("b/model-b", true));
        }
        other => panic!("first event is not session.started: {other:?}"),
    }
    assert_eq!(a.model_requests().len(), 2);
    assert_eq!(b.model_requests().len(), 2);
    assert_eq!(
        std::fs::read_to_string(p.work().join("log.txt")).unwrap(),
        "ran\n"
    );
}

/// Anthropic's shapes on route a: a 429 rate_limit_error with retry-after, one turn that runs a
/// tool, then 529 overloaded_error twice; route b answers.
fn rate_limit_then_overload() -> (MockServer, MockServer) {
    let a = MockServer::builder()
        .fault(Fault::status(429).retry_after(0).message("slow down"))
        .turn(append_line())
        .fault(Fault::status(529).message("Overloaded"))
        .fault(Fault::status(529).message("Overloaded"))
        .start_blocking();
    let b = MockServer::builder()
        .turn(Turn::text("Done elsewhere."))
        .start_blocking();
    (a, b)
}

#[test]
fn a_rate_limit_is_retried_on_the_same_route_and_an_overload_fails_over_once_retries_run_out() {
    let (a, b) = rate_limit_then_overload();
    let p = two_routes(&a, "anthropic", &b, "openai", "max_attempts = 2");
    // Text mode: what a person sees of it on stderr.
    let out = p.run(&["agent", "--model-class", "fast", "log a line"]);
    assert_exit(&out, 0);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("rate limited") && err.contains("retrying (attempt 2)"),
        "{err}"
    );
    assert!(
        err.contains("baton: route a/model-a failed over to b/model-b for the rest of the session: a returned HTTP 529 for model `model-a`: Overloaded"),
        "{err}"
    );
    assert!(
        err.contains("routes a/model-a (1 turn, $") && err.contains(" → b/model-b (1 turn, $"),
        "{err}"
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Done elsewhere.\n");
    // The 429 was retried on a (turn 1 then ran there); the overload took both attempts on a,
    // then one on b.
    assert_eq!(a.model_requests().len(), 4);
    assert_eq!(b.model_requests().len(), 1);
    assert_eq!(
        std::fs::read_to_string(p.work().join("log.txt")).unwrap(),
        "ran\n"
    );
    a.assert_tool_results_answer_calls();
    b.assert_tool_results_answer_calls();

    // The same in JSON: a retry of each, and one route change, in turn 2.
    let (a, b) = rate_limit_then_overload();
    let p = two_routes(&a, "anthropic", &b, "openai", "max_attempts = 2");
    let out = p.run(&["agent", "--json", "--model-class", "fast", "log a line"]);
    assert_exit(&out, 0);
    let evs = events(&out);
    assert_eq!(
        retries(&evs),
        vec![(1, ErrorCode::RateLimited), (2, ErrorCode::Overloaded)]
    );
    assert_eq!(
        route_changes(&evs),
        vec![(
            2,
            "a/model-a".to_string(),
            "b/model-b".to_string(),
            ErrorCode::Overloaded
        )]
    );
}

#[test]
fn an_explicit_route_does_not_fail_over() {
    let a = MockServer::builder()
        .fault(insufficient_quota())
        .start_blocking();
    let b = MockServer::builder()
        .turn(Turn::text("never asked"))
        .start_blocking();
    let p = two_routes(&a, "openai", &b, "openai", "");
    let out = p.run(&["agent", "--json", "--model", "a/model-a", "hi"]);
    assert_exit(&out, 1);
    let evs = events(&out);
    assert_eq!(route_changes(&evs), vec![]);
    match evs.last() {
        Some(AgentEvent::SessionCompleted {
            outcome,
            reason,
            error: Some(error),
            routes,
            ..
        }) => {
            assert_eq!(
                (*outcome, *reason, error.code),
                (
                    Outcome::Failed,
                    Some(EndReason::ModelError),
                    ErrorCode::QuotaExceeded
                )
            );
            assert!(
                error.message.ends_with("so the session fails over to it"),
                "{}",
                error.message
            );
            assert_eq!(routes, &Vec::<RouteUsage>::new());
        }
        other => panic!("last event is not session.completed: {other:?}"),
    }
    assert_eq!(a.model_requests().len(), 1, "quota is not retried");
    assert_eq!(b.model_requests().len(), 0);
}
