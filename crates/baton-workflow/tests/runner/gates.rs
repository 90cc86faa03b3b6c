//! cc10x remediation rows the user decides: the reviewer approves while only the failure-hunter
//! reports HIGH issues (row 2), and a failed verification that recommends reverting (2d).

use baton_workflow::run::state::{Gate, RunState, WorkflowState};
use baton_workflow::run::Outcome;

use crate::harness::*;

const HUNT_HIGH: &str = r#"CONTRACT {"s":"ISSUES_FOUND","b":false,"cr":0}
## Error Handling Audit: Issues Found

### High Issues
- [85] feature.txt:3 a write error is ignored

REMEDIATION_NEEDED: true
REMEDIATION_REASON: handle the write error
REMEDIATION_SCOPE_REQUESTED: ALL_ISSUES
"#;

const VERIFY_FAIL_REVERT: &str = r#"CONTRACT {"s":"FAIL","b":true,"cr":1}
## Verification: FAIL

### Critical Issues
- [95] feature.txt:1 the change breaks every caller

### Router Contract
```yaml
SCENARIOS_TOTAL: 1
SCENARIOS_PASSED: 0
SCENARIOS_FAILED: 1
SCENARIO_ROWS:
  - name: feature file exists
    command: test -f feature.txt
    expected: exit 0
    actual: exit 1
    exit_code: 1
    status: FAIL
EVIDENCE:
  scenarios:
    - "feature file exists | test -f feature.txt -> exit 1"
REMEDIATION_NEEDED: true
REVERT_RECOMMENDED: true
```
"#;

#[test]
fn hunter_only_high_findings_ask_and_remediate_when_told() {
    let h = Harness::new();
    h.happy().answer_nth("failure-hunter", 1, HUNT_HIGH);
    let o = h.build("add a feature file").unwrap();
    let Outcome::Checkpoint { id, checkpoint } = &o else {
        panic!("{o:?}")
    };
    assert_eq!(checkpoint.gate, Gate::HunterFindings);
    assert_eq!(checkpoint.options, ["remediate", "proceed"]);
    assert!(checkpoint
        .question
        .starts_with("the reviewer approves, but the failure-hunter reports 1 HIGH issue."));
    // Nothing was fixed without asking.
    assert_eq!(h.calls_of("component-builder").len(), 1);
    let o = h.answer_checkpoint(id, "remediate").unwrap();
    assert!(matches!(o, Outcome::Completed { .. }), "{o:?}");
    let builders = h.calls_of("component-builder");
    assert_eq!(builders.len(), 2);
    assert!(builders[1]
        .prompt
        .contains("the failure-hunter's HIGH findings"));
    let a = h.artifact(id);
    assert_eq!(a["remediation_history"][0]["origin"], "failure-hunter");
}

#[test]
fn hunter_only_high_findings_can_be_deferred_and_the_build_goes_on() {
    let h = Harness::new();
    h.happy().answer("failure-hunter", HUNT_HIGH);
    let id = id_of(&h.build("add a feature file").unwrap());
    let o = h.answer_checkpoint(&id, "proceed").unwrap();
    // Verified, the deferred finding is triaged before memory (cc10x finishing 1a).
    let Outcome::Checkpoint { checkpoint, .. } = &o else {
        panic!("{o:?}")
    };
    assert_eq!(checkpoint.gate, Gate::DeferredTriage);
    assert_eq!(checkpoint.options, ["fix now", "follow up", "accept"]);
    assert_eq!(checkpoint.recommended.as_deref(), Some("follow up"));
    // It does not say the workflow completed: it waits for this answer.
    assert!(
        checkpoint
            .question
            .starts_with("The work is verified (the workflow ends once this is answered)")
            && !checkpoint.question.contains("completed"),
        "{}",
        checkpoint.question
    );
    assert!(
        checkpoint
            .question
            .contains("1 deferred finding stays open: [high] feature.txt:3 a write error is ignored (phase-1)"),
        "{}",
        checkpoint.question
    );
    let o = h.answer_checkpoint(&id, "follow up").unwrap();
    let Outcome::Completed { brief, .. } = &o else {
        panic!("{o:?}")
    };
    assert!(
        brief.contains(
            "deferred findings: 1 (triaged: follow up)\n  - [high] feature.txt:3 a write error is ignored"
        ),
        "{brief}"
    );
    assert_eq!(h.calls_of("component-builder").len(), 1, "no fix");
    assert_eq!(h.calls_of("integration-verifier").len(), 1);
    let a = h.artifact(&id);
    assert_eq!(a["deferred_findings"][0]["phase"], "phase-1");
    assert_eq!(a["deferred_findings"][0]["disposition"], "follow_up");
    assert_eq!(a["results"]["deferred_triage"]["choice"], "follow_up");
    // Memory keeps it open, as a follow-up.
    let patterns =
        std::fs::read_to_string(h.env.delegate.cwd.join(".baton/memory/patterns.md")).unwrap();
    assert!(
        patterns.contains("a write error is ignored (phase-1, ")
            && patterns.contains("): a follow-up"),
        "{patterns}"
    );
}

/// Accepted at the triage, a deferred finding is recorded in memory's Decisions and no longer
/// kept open; the triage is asked once, and no code changes for it.
#[test]
fn deferred_findings_accepted_at_the_triage_go_to_decisions_not_the_open_list() {
    let h = Harness::new();
    h.happy().answer("failure-hunter", HUNT_HIGH);
    let id = id_of(&h.build("add a feature file").unwrap());
    let o = h.answer_checkpoint(&id, "proceed").unwrap();
    assert!(
        matches!(&o, Outcome::Checkpoint { checkpoint, .. } if checkpoint.gate == Gate::DeferredTriage),
        "{o:?}"
    );
    // An answer that is no option is refused naming them.
    let e = h.answer_checkpoint(&id, "later").unwrap_err();
    assert!(e.to_string().contains("fix now, follow up, accept"), "{e}");
    let o = h.answer_checkpoint(&id, "Accept").unwrap();
    assert!(matches!(o, Outcome::Completed { .. }), "{o:?}");
    assert_eq!(h.calls_of("component-builder").len(), 1, "no fix");
    let a = h.artifact(&id);
    assert_eq!(a["deferred_findings"][0]["disposition"], "accepted");
    let cwd = &h.env.delegate.cwd;
    let active = std::fs::read_to_string(cwd.join(".baton/memory/activeContext.md")).unwrap();
    assert!(
        active.contains(&format!(
            "Accepted deferred finding (wf:{id}): [high] feature.txt:3 a write error is ignored"
        )),
        "{active}"
    );
    let patterns = std::fs::read_to_string(cwd.join(".baton/memory/patterns.md")).unwrap();
    assert!(!patterns.contains("a write error is ignored"), "{patterns}");
}

#[test]
fn a_verifier_recommending_a_revert_asks_and_revert_stops_with_the_command() {
    let h = Harness::new();
    h.happy().answer("integration-verifier", VERIFY_FAIL_REVERT);
    let o = h.build("add a feature file").unwrap();
    let Outcome::Checkpoint { id, checkpoint } = &o else {
        panic!("{o:?}")
    };
    assert_eq!(checkpoint.gate, Gate::RevertDecision);
    assert_eq!(checkpoint.options, ["revert", "fix"]);
    assert_eq!(checkpoint.recommended, None, "AUTO_PROCEED never reverts");
    let o = h.answer_checkpoint(id, "revert").unwrap();
    let Outcome::Stopped { brief, .. } = &o else {
        panic!("{o:?}")
    };
    assert!(
        brief.contains("reverted at the revert_decision checkpoint"),
        "{brief}"
    );
    let s = WorkflowState::read(&h.artifact(id)).unwrap();
    assert_eq!(s.state, RunState::Stopped);
    let memory =
        std::fs::read_to_string(h.env.delegate.cwd.join(".baton/memory/activeContext.md")).unwrap();
    assert!(memory.contains("Revert chosen for"), "{memory}");
}

#[test]
fn fix_at_the_revert_gate_creates_the_remediation() {
    let h = Harness::new();
    h.happy()
        .answer_nth("integration-verifier", 1, VERIFY_FAIL_REVERT);
    let id = id_of(&h.build("add a feature file").unwrap());
    let o = h.answer_checkpoint(&id, "fix").unwrap();
    assert!(matches!(o, Outcome::Completed { .. }), "{o:?}");
    assert_eq!(h.calls_of("component-builder").len(), 2);
    assert_eq!(
        h.artifact(&id)["remediation_history"][0]["origin"],
        "integration-verifier"
    );
}

/// The fix agent disputes the finding with a proving command: the host runs it, the verifier is
/// told and rules; a verifier that does not rule stops the workflow.
fn disputing(h: &Harness) {
    let fix = BUILDER_PASS.replace(
        "Added the feature.",
        "Checked the finding first.\nFINDING_DISPUTED: the feature is never wired in\nVERIFY_COMMAND: grep -n wire feature.txt\nVERIFY_OUTPUT: 1: wire()\nADJUDICATOR: integration-verifier",
    );
    h.happy()
        .answer_nth("code-reviewer", 1, REVIEW_CRITICAL)
        .answer_nth("component-builder", 2, &fix);
}

#[test]
fn a_disputed_finding_is_checked_by_the_host_and_ruled_by_the_verifier() {
    let h = Harness::new();
    disputing(&h);
    let upheld = VERIFY_PASS.to_string() + "\nDISPUTE_UPHELD: the feature is never wired in\n";
    h.answer("integration-verifier", &upheld);
    let o = h.build("add a feature file").unwrap();
    let Outcome::Completed { id, .. } = &o else {
        panic!("{o:?}")
    };
    assert!(h
        .host_commands()
        .contains(&"grep -n wire feature.txt".to_string()));
    let verify = &h.calls_of("integration-verifier")[0].prompt;
    assert!(
        verify.contains("## Disputed Findings")
            && verify.contains("- the feature is never wired in\n  - command: `grep -n wire feature.txt`\n  - the fix agent's output: 1: wire()\n  - baton's own run: exit 0"),
        "{verify}"
    );
    let d = &h.artifact(id)["results"]["disputes"][0];
    assert_eq!(d["status"], "upheld");
    assert_eq!(d["host_exit_code"], 0);
}

#[test]
fn a_verifier_that_does_not_rule_on_a_dispute_stops_the_workflow() {
    let h = Harness::new();
    disputing(&h);
    let o = h.build("add a feature file").unwrap();
    let Outcome::Failed { brief, .. } = &o else {
        panic!("{o:?}")
    };
    assert!(
        brief.contains("(integration-verifier) did not rule on the disputed finding \"the feature is never wired in\""),
        "{brief}"
    );
}

#[test]
fn a_dispute_without_a_command_is_void_and_the_finding_stands() {
    let h = Harness::new();
    let fix = BUILDER_PASS.replace(
        "Added the feature.",
        "FINDING_DISPUTED: the feature is never wired in (it looks fine to me)",
    );
    h.happy()
        .answer_nth("code-reviewer", 1, REVIEW_CRITICAL)
        .answer_nth("component-builder", 2, &fix);
    let o = h.build("add a feature file").unwrap();
    let Outcome::Completed { id, .. } = &o else {
        panic!("{o:?}")
    };
    assert_eq!(h.artifact(id)["results"]["disputes"][0]["status"], "void");
    assert!(!h.calls_of("integration-verifier")[0]
        .prompt
        .contains("## Disputed Findings"));
}

/// A minor finding does not block the phase, and does not evaporate either.
/// build-workflow.md:182-188: a trivial BUILD has no reviewer; its verifier's own minor finding
/// blocks nothing and is kept with its phase too.
#[test]
fn a_trivial_build_keeps_its_verifier_s_minor_findings() {
    let h = Harness::new();
    let verify = VERIFY_PASS.replace(
        "### Router Contract",
        "### Minor Issues\n- src/names.rs:9 the test name says too little\n\n### Router Contract",
    );
    h.happy().answer("integration-verifier", &verify);
    let o = h.run(start("add a feature file", true)).unwrap();
    let Outcome::Completed { id, brief } = &o else {
        panic!("{o:?}")
    };
    assert!(
        brief.contains("src/names.rs:9 the test name says too little"),
        "{brief}"
    );
    assert_eq!(h.calls_of("component-builder").len(), 1, "nothing to fix");
    let a = h.artifact(id);
    assert_eq!(a["deferred_findings"].as_array().unwrap().len(), 1, "{a}");
    assert_eq!(a["deferred_findings"][0]["phase"], "phase-1");
}

#[test]
fn minor_findings_roll_up_into_the_deferred_list() {
    let h = Harness::new();
    let review = REVIEW_APPROVE.replace(
        "### Checked",
        "### Minor Issues\n- src/names.rs:4 a name could be clearer\n\n### Checked",
    );
    h.happy().answer("code-reviewer", &review);
    let o = h.build("add a feature file").unwrap();
    let Outcome::Checkpoint { id, checkpoint } = &o else {
        panic!("{o:?}")
    };
    assert_eq!(checkpoint.gate, Gate::DeferredTriage);
    let o = h.answer_checkpoint(id, "follow up").unwrap();
    let Outcome::Completed { id, brief } = &o else {
        panic!("{o:?}")
    };
    let listed = |severity: &str| {
        format!("deferred findings: 1 (triaged: follow up)\n  - [{severity}] src/names.rs:4 a name could be clearer")
    };
    assert!(
        brief.contains(&listed("medium")) || brief.contains(&listed("low")),
        "{brief}"
    );
    assert_eq!(h.calls_of("component-builder").len(), 1, "nothing to fix");
    assert_eq!(h.artifact(id)["deferred_findings"][0]["phase"], "phase-1");
    // One merged summary of the review's findings in the results (seed 001:560).
    let summary = &h.artifact(id)["results"]["findings_summary"];
    assert_eq!(summary.as_array().map(Vec::len), Some(1), "{summary}");
    assert_eq!(
        summary[0]["text"], "src/names.rs:4 a name could be clearer",
        "{summary}"
    );
    assert_eq!(summary[0]["location"], "src/names.rs:4", "{summary}");
    let memory =
        std::fs::read_to_string(h.env.delegate.cwd.join(".baton/memory/patterns.md")).unwrap();
    assert!(memory.contains("[Deferred]: ["), "{memory}");
}
