//! The runner's decisions in-process, through a scripted launcher: remediation cycles and the
//! circuit breaker, the scope gate and its answer, the budget stop, and the host's re-check of a
//! verifier's pass. Milliseconds each; `baton-cli`'s workflow e2e tests prove the same through
//! the binary and real child processes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::new_without_default)]

mod baseline;
mod gates;
mod harness;
mod memory;
mod planned;

use baton_workflow::run::state::{Gate, RunState, WorkflowState};
use baton_workflow::run::{Outcome, Resume, RunError};
use harness::*;

#[test]
fn a_build_runs_the_full_graph_and_ends_verified() {
    let h = Harness::new();
    h.happy();
    let o = h.build("add a feature file").unwrap();
    let Outcome::Completed { id, brief } = &o else {
        panic!("{o:?}")
    };
    assert!(brief.contains("proof: passed"), "{brief}");
    // The subscriber got every event of the log, in order, as it was recorded.
    assert_eq!(*h.seen.lock().unwrap(), h.events(id));
    // Reviewer and hunter run together; their order is whichever started first.
    baton_testkit::assert_full_build(h.phases());
    let a = h.artifact(id);
    let s = WorkflowState::read(&a).unwrap();
    assert_eq!(s.state, RunState::Completed);
    assert!(s.tasks.iter().all(|t| !t.is_open()));
    assert_eq!(s.host.outputs["t4"].host_checks.len(), 1);
    assert!(s.host.outputs["t4"].host_checks[0].ok);
    // Adversarial dispatches get no memory summary.
    let review = &h.calls_of("code-reviewer")[0].prompt;
    assert!(!review.contains("## Memory Summary"), "{review}");
}

/// A BUILD whose reviewer finds a critical issue every time, run to the circuit breaker: its id
/// and the breaker's checkpoint.
fn at_the_breaker(h: &Harness) -> (String, baton_workflow::run::state::Checkpoint) {
    h.happy().answer("code-reviewer", REVIEW_CRITICAL);
    let o = h.build("add a feature file").unwrap();
    let Outcome::Checkpoint { id, checkpoint } = o else {
        panic!("{o:?}")
    };
    assert_eq!(checkpoint.gate, Gate::CircuitBreaker);
    (id, checkpoint)
}

#[test]
fn remediation_stops_at_the_circuit_breaker_after_three_cycles() {
    let h = Harness::new();
    let (id, checkpoint) = &at_the_breaker(&h);
    assert_eq!(checkpoint.options, ["one more cycle", "accept", "abort"]);
    assert!(
        checkpoint.brief.contains("remediation cycles: 3"),
        "{}",
        checkpoint.brief
    );
    let a = h.artifact(id);
    assert_eq!(a["pending_gate"], "circuit_breaker");
    assert_eq!(a["remediation_history"].as_array().unwrap().len(), 3);
    // The builder ran once for the phase and once per cycle; the verifier never ran.
    assert_eq!(h.calls_of("component-builder").len(), 4);
    assert!(h.calls_of("integration-verifier").is_empty());
    // The remediation prompt says what to fix.
    assert!(h.calls_of("component-builder")[1]
        .prompt
        .contains("the feature is never wired in"));
    // Abort is final; a second resume is refused (exit 2 in the CLI).
    let o = h.answer_checkpoint(id, "abort").unwrap();
    assert!(matches!(o, Outcome::Stopped { .. }), "{o:?}");
    let e = h.resume(id, Resume::default()).unwrap_err();
    assert!(matches!(
        e,
        RunError::NothingToResume {
            state: RunState::Stopped,
            ..
        }
    ));
    assert!(e.is_refusal());
    assert_eq!(
        e.to_string(),
        format!("workflow {id} is stopped: there is nothing to resume")
    );
}

/// Two remediation cycles on a phase that did not converge start a research round before the
/// third fix (remediation-and-research.md:214-224), once per phase; the third fix reads its
/// files. Without a research backend (the built-in researcher) the round is recorded as
/// unavailable, and the fix is told so.
#[test]
fn two_fixes_that_do_not_converge_get_a_research_round_before_the_third() {
    let h = Harness::new();
    let (id, _) = &at_the_breaker(&h);
    let a = h.artifact(id);
    let rounds = a["research_rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 1, "{a:#}");
    let reason = rounds[0]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with(baton_workflow::engine::STUCK_RESEARCH),
        "{reason}"
    );
    assert_eq!(rounds[0]["web"], "UNAVAILABLE");
    // The research came between the second and the third fix, in the status history.
    let history: Vec<&str> = a["status_history"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["event"].as_str())
        .filter(|e| *e == "research_triggered")
        .collect();
    assert_eq!(history, ["research_triggered"]);
    let fixes = h.calls_of("component-builder");
    assert_eq!(fixes.len(), 4);
    for early in &fixes[1..3] {
        assert!(
            !early.prompt.contains("## Research Files"),
            "{}",
            early.prompt
        );
    }
    assert!(
        fixes[3]
            .prompt
            .contains("## Research Files\nWeb: Unavailable\nGitHub: Unavailable\n"),
        "{}",
        fixes[3].prompt
    );
    // It still gets what the review found: the research round between them is read past.
    assert!(
        fixes[3]
            .prompt
            .contains("the feature is never wired in (code-reviewer)"),
        "{}",
        fixes[3].prompt
    );
    // One more cycle past the breaker: no second round for the same phase.
    let reviews = h.calls_of("code-reviewer").len() as u32;
    h.answer_nth("code-reviewer", reviews + 1, REVIEW_CRITICAL);
    let o = h.answer_checkpoint(id, "one more cycle").unwrap();
    assert!(matches!(o, Outcome::Checkpoint { .. }), "{o:?}");
    assert_eq!(
        h.artifact(id)["research_rounds"].as_array().unwrap().len(),
        1
    );
}

/// A fix a gate's answer asks for waits for the research round too: critical and high findings
/// on every review ask the scope question each time, and the third answer starts the round.
#[test]
fn a_fix_answered_at_the_scope_gate_after_two_stuck_cycles_waits_for_research() {
    let h = Harness::new();
    h.happy().answer("code-reviewer", REVIEW_CRITICAL_AND_HIGH);
    let id = id_of(&h.build("add a feature file").unwrap());
    for _ in 0..2 {
        let o = h.answer_checkpoint(&id, "all issues").unwrap();
        assert!(
            matches!(&o, Outcome::Checkpoint { checkpoint, .. } if checkpoint.gate == Gate::ScopeDecision),
            "{o:?}"
        );
    }
    assert_eq!(h.calls_of("component-builder").len(), 3);
    let o = h.answer_checkpoint(&id, "all issues").unwrap();
    assert!(matches!(o, Outcome::Checkpoint { .. }), "{o:?}");
    let a = h.artifact(&id);
    assert_eq!(a["research_rounds"].as_array().unwrap().len(), 1, "{a:#}");
    let fixes = h.calls_of("component-builder");
    assert_eq!(fixes.len(), 4);
    assert!(
        fixes[3].prompt.contains("## Research Files"),
        "{}",
        fixes[3].prompt
    );
    assert_eq!(
        a["remediation_history"].as_array().unwrap().len(),
        3,
        "{a:#}"
    );
}

#[test]
fn one_more_cycle_at_the_circuit_breaker_grants_one_remediation() {
    let h = Harness::new();
    h.happy().answer("code-reviewer", REVIEW_CRITICAL);
    let id = id_of(&h.build("add a feature file").unwrap());
    assert_eq!(h.calls_of("component-builder").len(), 4);
    // The next review approves: the workflow goes on to the verifier and completes.
    let reviews = h.calls_of("code-reviewer").len() as u32;
    h.answer_nth("code-reviewer", reviews + 1, REVIEW_APPROVE);
    let o = h.answer_checkpoint(&id, "one more cycle").unwrap();
    assert!(matches!(o, Outcome::Completed { .. }), "{o:?}");
    // The breaker stopped after the third fix, before its re-checks: the extra cycle lets them
    // run on the fixed code (no fourth fix is needed when that review approves).
    assert_eq!(h.calls_of("component-builder").len(), 4);
    assert_eq!(h.calls_of("code-reviewer").len() as u32, reviews + 1);
    assert_eq!(h.calls_of("integration-verifier").len(), 1);
    let s = WorkflowState::read(&h.artifact(&id)).unwrap();
    assert_eq!(s.host.breaker_allowance, 1);
}

#[test]
fn a_scope_checkpoint_is_answered_and_the_workflow_completes() {
    let h = Harness::new();
    h.happy()
        .answer_nth("code-reviewer", 1, REVIEW_CRITICAL_AND_HIGH);
    let o = h.build("add a feature file").unwrap();
    let Outcome::Checkpoint { id, checkpoint } = &o else {
        panic!("{o:?}")
    };
    assert_eq!(checkpoint.gate, Gate::ScopeDecision);
    assert_eq!(checkpoint.options, ["critical only", "all issues", "abort"]);
    // cc10x 1a-SCOPE: a pending marker in memory, and no fix before the answer.
    let active =
        std::fs::read_to_string(h.env.delegate.cwd.join(".baton/memory/activeContext.md")).unwrap();
    assert!(
        active.contains(&format!("[SCOPE-DECISION-PENDING: wf:{id} reason:")),
        "{active}"
    );
    assert_eq!(h.calls_of("component-builder").len(), 1);
    // An answer that is no option is refused and changes nothing.
    let before = h.artifact(id);
    let e = h.answer_checkpoint(id, "abort please").unwrap_err();
    assert!(matches!(e, RunError::BadAnswer(_)) && e.is_refusal(), "{e}");
    assert!(
        e.to_string().contains("critical only, all issues, abort"),
        "{e}"
    );
    assert_eq!(h.artifact(id), before);
    let o = h.answer_checkpoint(id, "Critical Only").unwrap();
    assert!(matches!(o, Outcome::Completed { .. }), "{o:?}");
    let s = WorkflowState::read(&h.artifact(id)).unwrap();
    let remfix: Vec<_> = s
        .tasks
        .iter()
        .filter(|t| t.kind == Some(baton_workflow::artifact::TaskKind::Remfix))
        .collect();
    assert_eq!(remfix.len(), 1);
    assert_eq!(remfix[0].scope.as_deref(), Some("CRITICAL_ONLY"));
    // cc10x's scope events frame the question and its answer; the fix is announced.
    let kinds: Vec<String> = h
        .events(id)
        .iter()
        .map(|e| {
            serde_json::to_value(e.kind())
                .unwrap()
                .as_str()
                .unwrap()
                .to_string()
        })
        .filter(|k| k.starts_with("scope_decision") || k == "remediation_created")
        .collect();
    assert_eq!(
        kinds,
        [
            "scope_decision_requested",
            "scope_decision_resolved",
            "remediation_created"
        ]
    );
    let mut phases = h.phases();
    phases[1..3].sort();
    phases[4..6].sort();
    assert_eq!(
        phases,
        [
            "build-implement",
            "build-hunt",
            "build-review",
            "build-implement",
            "re-hunt",
            "re-review",
            "build-verify",
            "build-doc-sync"
        ]
    );
    assert_eq!(s.host.answers.len(), 1);
    assert_eq!(s.host.answers[0].gate, Gate::ScopeDecision);
}

#[test]
fn a_token_budget_stops_before_the_next_dispatch_and_resume_with_more_completes() {
    let h = Harness::new();
    h.happy().spend(2000, 500, None);
    let mut opts = start("add a feature file", true);
    opts.budget_tokens = Some(4000);
    let o = h.run(opts).unwrap();
    let Outcome::Checkpoint { id, checkpoint } = &o else {
        panic!("{o:?}")
    };
    assert_eq!(checkpoint.gate, Gate::Budget);
    assert_eq!(checkpoint.options, ["continue", "abort"]);
    assert!(
        checkpoint
            .question
            .contains("2500 of 4000 tokens spent, 1500 left, a dispatch has taken up to 2500"),
        "{}",
        checkpoint.question
    );
    assert_eq!(h.phases(), ["build-implement"]);
    let s = WorkflowState::read(&h.artifact(id)).unwrap();
    assert_eq!((s.spent.tokens(), s.spent.dispatches), (2500, 1));
    assert_eq!(s.spent.unpriced_dispatches, 1);
    // More budget and `continue`: the verifier runs and the workflow completes.
    let more = Resume {
        answer: Some("continue"),
        budget_tokens: Some(100_000),
        ..Resume::default()
    };
    let o = h.resume(id, more).unwrap();
    assert!(matches!(o, Outcome::Completed { .. }), "{o:?}");
    assert_eq!(h.phases(), ["build-implement", "build-verify"]);
}

#[test]
fn a_usd_budget_stops_on_priced_dispatches() {
    let h = Harness::new();
    h.happy().spend(1000, 200, Some(0.0052));
    let mut opts = start("add a feature file", true);
    opts.budget_usd = Some(0.008);
    let o = h.run(opts).unwrap();
    let Outcome::Checkpoint { checkpoint, .. } = &o else {
        panic!("{o:?}")
    };
    assert_eq!(checkpoint.gate, Gate::Budget);
    assert!(
        checkpoint
            .question
            .contains("$0.0052 of $0.0080 spent, $0.0028 left"),
        "{}",
        checkpoint.question
    );
    assert_eq!(h.phases(), ["build-implement"]);
}

/// seed 001:572-576, "did the tests it cites really run": a builder's PASS whose passing
/// scenario fails when baton runs it is not believed; nothing after the builder runs.
#[test]
fn a_builder_pass_whose_scenario_fails_when_the_host_runs_it_is_not_believed() {
    let h = Harness::new();
    h.happy().failing_check("test -s feature.txt");
    let o = h.build("add a feature file").unwrap();
    let Outcome::Failed { brief, .. } = &o else {
        panic!("{o:?}")
    };
    let why = "t1 (component-builder) reported PASS, but its scenario `test -s feature.txt (a scenario the builder reported passing)` exits 1 when baton ran it";
    assert!(brief.contains(why), "{brief}");
    assert!(h.calls_of("code-reviewer").is_empty());
    assert_eq!(h.host_commands(), ["test -s feature.txt"]);
}

#[test]
fn a_verifier_pass_whose_scenario_fails_when_the_host_runs_it_stops_the_workflow() {
    let h = Harness::new();
    h.happy().failing_check("test -f feature.txt");
    let o = h.run(start("add a feature file", true)).unwrap();
    let Outcome::Failed { id, brief } = &o else {
        panic!("{o:?}")
    };
    let why = "t2 (integration-verifier) reported PASS, but its scenario `test -f feature.txt` exits 1 when baton ran it";
    assert!(brief.contains(why), "{brief}");
    let s = WorkflowState::read(&h.artifact(id)).unwrap();
    assert_eq!(s.state, RunState::Failed);
    assert_eq!(s.host.failure.as_deref(), Some(why));
    // A failed workflow takes guidance for a retry, not a bare resume.
    let e = h.resume(id, Resume::default()).unwrap_err();
    assert!(matches!(e, RunError::AnswerNeeded { .. }), "{e}");
}

#[test]
fn an_agent_without_a_contract_stops_the_workflow_naming_the_task() {
    let h = Harness::new();
    h.happy()
        .answer("component-builder", "I added the feature, all good.");
    let o = h.run(start("add a feature file", true)).unwrap();
    let Outcome::Failed { brief, .. } = &o else {
        panic!("{o:?}")
    };
    // Said to the user: which agent, what was wrong (not the fix meant for the agent), where its
    // answer is, and what they can do.
    for want in [
        "the component-builder agent of task t1 ended without the contract baton needs",
        "component-builder: no contract, only prose",
        "`baton log`",
        "`[workflow.tiers]` `component-builder = \"frontier\"`",
        "`.baton/roles/component-builder.md`",
    ] {
        assert!(brief.contains(want), "{want} missing: {brief}");
    }
    assert!(!brief.contains("Fix: "), "{brief}");
    assert!(h.calls_of("integration-verifier").is_empty());
}

/// A trivial BUILD whose builder reports that the scope grew escalates to the full graph: the
/// reviewer, the hunter and the doc-syncer are added for the built phase, the verifier waits for
/// the review, and the workflow completes (cc10x build-workflow: escalation re-blocks).
#[test]
fn a_trivial_build_whose_scope_grows_escalates_to_the_full_graph() {
    let h = Harness::new();
    h.happy();
    let grown = BUILDER_PASS.replace("SCOPE_INCREASES: []", "SCOPE_INCREASES: [a second module]");
    h.answer("component-builder", &grown);
    let o = h.run(start("add a feature file", true)).unwrap();
    let Outcome::Completed { id, .. } = &o else {
        panic!("{o:?}")
    };
    // Reviewer and hunter run together; their order is whichever started first.
    baton_testkit::assert_full_build(h.phases());
    let a = h.artifact(id);
    assert_eq!(a["build_scope"], "standard");
    let s = WorkflowState::read(&a).unwrap();
    assert!(s.tasks.iter().all(|t| !t.is_open()), "{:?}", s.tasks);
    let verify = s
        .tasks
        .iter()
        .find(|t| t.phase.as_deref() == Some("build-verify"))
        .unwrap();
    assert_eq!(verify.blocked_by.len(), 3, "{verify:?}");
}

/// Blocked items on the trivial graph mean the work was not trivial (build-workflow.md:95): the
/// phase stops for the user, and the graph it goes on with is the full one.
#[test]
fn a_trivial_build_whose_builder_is_blocked_escalates_to_the_full_graph() {
    let h = Harness::new();
    h.happy();
    let blocked = BUILDER_PASS
        .replace("STATUS: PASS", "STATUS: FAIL")
        .replace("PHASE_STATUS: completed", "PHASE_STATUS: blocked")
        .replace("PHASE_EXIT_READY: true", "PHASE_EXIT_READY: false")
        .replace("PROOF_STATUS: passed", "PROOF_STATUS: gaps_found")
        .replace(
            "BLOCKED_ITEMS: []",
            "BLOCKED_ITEMS: [the signing key is not in the repository]",
        )
        .replace("BLOCKING: false", "BLOCKING: true");
    h.answer("component-builder", &blocked);
    let o = h.run(start("add a feature file", true)).unwrap();
    let Outcome::Checkpoint { id, checkpoint, .. } = &o else {
        panic!("{o:?}")
    };
    assert_eq!(checkpoint.gate, Gate::PhaseBlocked);
    let a = h.artifact(id);
    assert_eq!(a["build_scope"], "standard", "{a:#}");
    let s = WorkflowState::read(&a).unwrap();
    let phases: Vec<&str> = s.tasks.iter().filter_map(|t| t.phase.as_deref()).collect();
    assert!(
        phases.contains(&"build-review") && phases.contains(&"build-hunt"),
        "{phases:?}"
    );
    assert!(a["status_history"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e.to_string().contains("build_scope_escalated")));
    // Told how to go on, the builder passes, and the reviewer and the hunter run before the
    // verifier.
    h.answer("component-builder", BUILDER_PASS);
    let id = id.clone();
    let o = h
        .answer_checkpoint(&id, "the key is in SIGNING_KEY now: go on")
        .unwrap();
    assert!(matches!(o, Outcome::Completed { .. }), "{o:?}");
    assert_eq!(h.calls_of("code-reviewer").len(), 1);
    assert_eq!(h.calls_of("failure-hunter").len(), 1);
    assert_eq!(h.calls_of("integration-verifier").len(), 1);
}

/// Telemetry measures (workflow-artifact-and-hook-policy.md:100-126): each role's wall-clock
/// time under cc10x's short names, the verifier's proof runs, the whole workflow's time; it is
/// never decided on.
#[test]
fn telemetry_keeps_each_role_s_time_and_the_verifier_s_proof_runs() {
    let h = Harness::new();
    h.happy();
    let id = id_of(&h.build("add a feature file").unwrap());
    let a = h.artifact(&id);
    let t = &a["telemetry"];
    // Left alone: the engine reads it (cc10x's host task metrics) as a reason to stop routing.
    assert!(t["task_metrics_available"].is_null(), "{t:#}");
    for role in ["builder", "reviewer", "hunter", "verifier"] {
        assert!(
            t["agent_wall_clock_seconds"][role].as_f64().is_some(),
            "{role}: {t:#}"
        );
    }
    assert_eq!(t["verifier"]["phase_exit_proof_runs"], 1, "{t:#}");
    assert!(t["workflow_wall_clock_seconds"].as_u64().is_some(), "{t:#}");
    // No Timing & Workload section: nothing is made up.
    assert!(t["verifier"].get("workload_seconds").is_none(), "{t:#}");
}

/// The verifier's `### Timing & Workload` section is kept in `telemetry.verifier` (seed
/// 001:418-421), added up over its runs, and decides nothing: the workflow ends as it would.
#[test]
fn the_verifier_s_timing_and_workload_is_kept_in_telemetry() {
    let h = Harness::new();
    h.happy();
    let pass = baton_testkit::contract!(VERIFY_PASS);
    let (head, contract) = pass.split_once("### Router Contract").unwrap();
    let text = format!(
        "{head}### Timing & Workload\n- extended_audit_runs: 1\n- tests: 38.5s\n- **build**: 12 seconds\n- reasoning: 4\n- coffee: 3\n\n### Router Contract{contract}"
    );
    h.answer("integration-verifier", &text);
    let outcome = h.build("add a feature file").unwrap();
    assert!(matches!(outcome, Outcome::Completed { .. }), "{outcome:?}");
    let t = &h.artifact(&id_of(&outcome))["telemetry"]["verifier"];
    assert_eq!(t["extended_audit_runs"], 1, "{t:#}");
    assert_eq!(t["workload_seconds"]["tests"], 38.5, "{t:#}");
    assert_eq!(t["workload_seconds"]["build"], 12.0, "{t:#}");
    assert_eq!(t["workload_seconds"]["reasoning"], 4.0, "{t:#}");
    assert!(t["workload_seconds"].get("coffee").is_none(), "{t:#}");
    assert_eq!(t["phase_exit_proof_runs"], 1, "{t:#}");
}

/// Agents read the artifact, never another agent's live output or the router's bookkeeping
/// (seed 001:726): the file their scaffold names is cc10x's artifact without the runner's keys.
#[test]
fn agents_are_given_the_artifact_without_the_runner_s_keys() {
    let h = Harness::new();
    h.happy();
    let id = id_of(&h.build("add a feature file").unwrap());
    let call = &h.calls_of("integration-verifier")[0];
    let path = call
        .prompt
        .lines()
        .find_map(|l| l.strip_prefix("- Workflow Artifact: "))
        .unwrap();
    assert!(
        path.ends_with(&format!("agent-artifacts/{id}.json")),
        "{path}"
    );
    let view: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(view["workflow_type"], "BUILD");
    for key in ["run", "tasks", "run_state", "checkpoint", "spent"] {
        assert!(view.get(key).is_none(), "{key} is in the agents' view");
    }
    // The record itself keeps every answer.
    assert!(h.artifact(&id)["run"]["outputs"].is_object());
}

/// "one more cycle" grants exactly one more remediation: when the review of the third fix still
/// asks for changes, a fourth fix runs and the breaker stops the workflow again.
#[test]
fn one_more_cycle_is_exactly_one_more_fix() {
    let h = Harness::new();
    h.happy().answer("code-reviewer", REVIEW_CRITICAL);
    let id = id_of(&h.build("add a feature file").unwrap());
    assert_eq!(h.calls_of("component-builder").len(), 4);
    let o = h.answer_checkpoint(&id, "one more cycle").unwrap();
    let Outcome::Checkpoint { checkpoint, .. } = &o else {
        panic!("{o:?}")
    };
    assert_eq!(checkpoint.gate, Gate::CircuitBreaker);
    assert_eq!(h.calls_of("component-builder").len(), 5);
    // The stop counts the allowed cycle: four ran, never "3 remediation cycles".
    let all = format!("{} {}", checkpoint.question, checkpoint.brief);
    assert!(
        all.contains("4 remediation cycles") && all.contains("1 more you allowed"),
        "{all}"
    );
    let a = h.artifact(&id);
    assert_eq!(a["remediation_history"].as_array().unwrap().len(), 4);
    assert!(h.calls_of("integration-verifier").is_empty());
}

/// The re-review after a `CRITICAL_ONLY` fix does not reopen HIGH findings: they are deferred
/// (recorded in `status_history`), the verifier runs and the workflow completes with one fix.
#[test]
fn a_critical_only_re_review_does_not_reopen_high_findings() {
    const REVIEW_HIGH_ONLY: &str = r#"CONTRACT {"s":"CHANGES_REQUESTED","b":false,"cr":0}
## Review: Changes Requested

### Critical Issues
- none

### High Issues
- [80] feature.txt:2 errors are swallowed

REMEDIATION_NEEDED: true
REMEDIATION_REASON: errors are swallowed
REMEDIATION_SCOPE_REQUESTED: N/A
"#;
    let h = Harness::new();
    h.happy()
        .answer_nth("code-reviewer", 1, REVIEW_CRITICAL_AND_HIGH)
        .answer_nth("code-reviewer", 2, REVIEW_HIGH_ONLY);
    let o = h.build("add a feature file").unwrap();
    let Outcome::Checkpoint { id, checkpoint } = &o else {
        panic!("{o:?}")
    };
    assert_eq!(checkpoint.recommended.as_deref(), Some("critical only"));
    let o = h.answer_checkpoint(id, "critical only").unwrap();
    // The deferred HIGH finding is triaged before finishing.
    assert!(
        matches!(&o, Outcome::Checkpoint { checkpoint, .. } if checkpoint.gate == Gate::DeferredTriage),
        "{o:?}"
    );
    let o = h.answer_checkpoint(id, "fix now").unwrap();
    let Outcome::Completed { brief, .. } = &o else {
        panic!("{o:?}")
    };
    assert!(
        brief.contains(
            "deferred findings: 1 (triaged: fix now)\n  - [high] feature.txt:2 errors are swallowed"
        ),
        "{brief}"
    );
    // One fix (the builder's first run and the critical-only fix), two reviews, one verifier.
    assert_eq!(h.calls_of("component-builder").len(), 2);
    assert_eq!(h.calls_of("code-reviewer").len(), 2);
    assert_eq!(h.calls_of("integration-verifier").len(), 1);
    let a = h.artifact(id);
    assert_eq!(a["remediation_history"].as_array().unwrap().len(), 1);
    assert!(a["status_history"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["event"] == "findings_deferred"));
    let deferred = a["deferred_findings"].as_array().unwrap();
    assert_eq!(deferred.len(), 1, "{deferred:?}");
    assert!(deferred[0]["text"]
        .as_str()
        .unwrap()
        .ends_with("errors are swallowed"));
    assert_eq!(deferred[0]["severity"], "high");
    assert_eq!(deferred[0]["phase"], "phase-1");
}

/// The verifier gets cc10x's hand-off: a block per agent, the reviewer's with its verdict.
#[test]
fn the_verifier_gets_the_previous_findings_agent_by_agent_with_the_verdict() {
    let h = Harness::new();
    h.happy();
    let o = h.build("add a feature file").unwrap();
    assert!(matches!(o, Outcome::Completed { .. }), "{o:?}");
    let verifier = &h.calls_of("integration-verifier")[0].prompt;
    let at = verifier
        .find("## Previous Agent Findings\n")
        .unwrap_or_else(|| panic!("{verifier}"));
    let section = &verifier[at..];
    assert!(
        section.starts_with(
            "## Previous Agent Findings\n### Code Reviewer\n**Verdict:** Approve\n**Critical Issues:**\nNone\n"
        ),
        "{section}"
    );
    assert!(
        section.contains("### Failure Hunter\n**Critical Issues:**\nNone\n"),
        "{section}"
    );
}

const RUBBER_STAMP: &str =
    "CONTRACT {\"s\":\"APPROVE\",\"b\":false,\"cr\":0}\n## Review: Approve\nLooks good; see src/a.rs:1.\n";

/// cc10x's rubber-stamp fallback: an APPROVE with no findings and too few citations is not a
/// pass; the reviewer is asked once more, told why, for its evidence, and a real review goes on.
/// A second rubber stamp stops the workflow.
#[test]
fn a_rubber_stamp_approval_is_asked_once_more_for_its_evidence() {
    let h = Harness::new();
    h.happy().answer_nth("code-reviewer", 1, RUBBER_STAMP);
    let o = h.build("add a feature file").unwrap();
    assert!(matches!(o, Outcome::Completed { .. }), "{o:?}");
    let reviews = h.calls_of("code-reviewer");
    assert_eq!(reviews.len(), 2);
    assert!(
        reviews[1]
            .prompt
            .contains("Your last answer was not believed")
            && reviews[1].prompt.contains("file:line citation"),
        "{}",
        reviews[1].prompt
    );

    let h = Harness::new();
    h.happy().answer("code-reviewer", RUBBER_STAMP);
    let o = h.build("add a feature file").unwrap();
    assert!(
        format!("{o:?}").contains("passed without enough evidence to believe it"),
        "{o:?}"
    );
    assert_eq!(h.calls_of("code-reviewer").len(), 2);
    assert_eq!(h.calls_of("integration-verifier").len(), 0);
}

/// cc10x's `## Domain Context`: the project's glossary files reach every agent's prompt.
#[test]
fn the_project_s_domain_language_reaches_the_agents() {
    let h = Harness::new();
    h.happy();
    let root = h.env.delegate.cwd.clone();
    std::fs::write(
        root.join("DOMAIN_GLOSSARY.md"),
        "- Tenant: one paying customer\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("docs/domain")).unwrap();
    std::fs::write(
        root.join("docs/domain/billing.md"),
        "Invoices close monthly.\n",
    )
    .unwrap();
    let o = h.build("add a feature file").unwrap();
    assert!(matches!(o, Outcome::Completed { .. }), "{o:?}");
    let prompt = &h.calls_of("component-builder")[0].prompt;
    assert!(
        prompt.contains(
            "## Domain Context\n### DOMAIN_GLOSSARY.md\n- Tenant: one paying customer\n\n### docs/domain/billing.md\nInvoices close monthly."
        ),
        "{prompt}"
    );
}

/// cc10x's proof gate for a fix, checked by the host: the fix's proof command runs again, and
/// one that fails (or that is only the whole suite) sends the fix back for proof, saying why.
#[test]
fn a_fix_whose_proof_fails_when_the_host_runs_it_is_sent_back() {
    let h = Harness::new();
    let unproven = BUILDER_PASS.replace("command: test -s feature.txt", "command: sh prove-fix.sh");
    assert_ne!(unproven, BUILDER_PASS);
    h.happy()
        .answer_nth("code-reviewer", 1, REVIEW_CRITICAL)
        .answer_nth("component-builder", 2, &unproven)
        .failing_check("sh prove-fix.sh");
    let o = h.build("add a feature file").unwrap();
    assert!(matches!(o, Outcome::Completed { .. }), "{o:?}");
    assert!(h.host_commands().iter().any(|c| c == "sh prove-fix.sh"));
    let builders = h.calls_of("component-builder");
    assert_eq!(builders.len(), 3, "the fix was not sent back");
    assert!(
        builders[2]
            .prompt
            .contains("baton ran your proof `sh prove-fix.sh` and it exits 1"),
        "{}",
        builders[2].prompt
    );

    // The whole suite is no covering test.
    let mut h = Harness::new();
    h.env.delegate.config.workflow.test_command = Some("test -s feature.txt".into());
    h.happy().answer_nth("code-reviewer", 1, REVIEW_CRITICAL);
    let o = h.build("add a feature file").unwrap();
    let builders = h.calls_of("component-builder");
    assert!(
        builders[2]
            .prompt
            .contains("is not accepted (it is the whole suite"),
        "{}",
        builders[2].prompt
    );
    // Sent back twice and still only the suite: the workflow stops for a person.
    assert_eq!(builders.len(), 4, "{o:?}");
    assert!(
        format!("{o:?}").contains("the fix was sent back 2 times for the proof"),
        "{o:?}"
    );
}
