//! The example contract of every built-in workflow role's prompt, through `contract::parse`,
//! `outputs::from_contract` and [`decide`]: the action the engine takes on it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use pretty_assertions::assert_eq;

use super::{decide, Action, Change, Inputs};
use crate::artifact::{Artifact, ProofStatus, Task, TaskKind, TaskStatus};
use crate::contract::Role;
use crate::outputs::from_contract_tests::{checked, example, parsed};
use crate::outputs::{
    findings_from, from_contract, remfix_proof, AgentOutputs, InvestigatorReport, MergedFindings,
    ResearchOutcome,
};
use crate::route::WorkflowKind;

const WF: &str = "wf-20260312T161600Z-0badcafe";

/// A workflow of `kind` at phase-1.
fn artifact(kind: WorkflowKind, scope: Option<&str>) -> Artifact {
    Artifact {
        workflow_uuid: WF.into(),
        workflow_type: Some(kind),
        build_scope: scope.and_then(crate::artifact::BuildScope::parse),
        phase_cursor: Some("phase-1".into()),
        ..Artifact::default()
    }
}

fn task(id: &str, phase: &str, status: TaskStatus, blocked_by: &[&str]) -> Task {
    Task {
        id: id.into(),
        status: Some(status),
        blocked_by: blocked_by.iter().map(|b| b.to_string()).collect(),
        wf: Some(WF.into()),
        kind: Some(TaskKind::Agent),
        phase: Some(phase.into()),
        ..Task::default()
    }
}

fn action(a: &Artifact, outputs: AgentOutputs, tasks: Vec<Task>) -> Action {
    let d = decide(
        a,
        &Inputs {
            tasks,
            outputs,
            ..Inputs::default()
        },
    );
    d.action
}

fn run(a: &Artifact, outputs: AgentOutputs) -> Action {
    action(a, outputs, Vec::new())
}

#[test]
fn a_builder_pass_goes_to_the_verifier_or_the_review_by_scope() {
    let out = from_contract(&checked(Role::ComponentBuilder));
    let b = out.builder.clone().unwrap();
    assert_eq!(
        out,
        AgentOutputs {
            builder: Some(b.clone()),
            ..AgentOutputs::default()
        }
    );
    assert_eq!(b.status, "PASS");
    assert_eq!(b.confidence, Some(85.0));
    assert_eq!(b.phase_status.as_deref(), Some("completed"));
    assert_eq!(b.tdd_red_reason_kind.as_deref(), Some("behavioral"));
    assert_eq!(b.seam_gate_status.as_deref(), Some("not_applicable"));
    assert_eq!(b.scenarios[0].status, "PASS");
    assert_eq!(b.pass_problems(), Vec::<String>::new());
    let trivial = artifact(WorkflowKind::Build, Some("trivial"));
    assert_eq!(run(&trivial, out.clone()), Action::RunVerifier);
    let standard = artifact(WorkflowKind::Build, Some("standard"));
    assert_eq!(run(&standard, out), Action::RunReviewAndHunt);
}

#[test]
fn a_blocked_builder_stops_the_phase() {
    let output = example(Role::ComponentBuilder)
        .replace("STATUS: PASS ", "STATUS: FAIL ")
        .replace("PHASE_STATUS: completed", "PHASE_STATUS: blocked")
        .replace(
            "BLOCKED_ITEMS: []",
            "BLOCKED_ITEMS: [the schema is not agreed]",
        );
    let out = from_contract(&parsed(Role::ComponentBuilder, &output));
    let b = out.builder.as_ref().unwrap();
    assert_eq!(b.blocked_items, ["the schema is not agreed"]);
    let a = artifact(WorkflowKind::Build, Some("trivial"));
    assert_eq!(run(&a, out), Action::StopForBlockedPhase);
}

#[test]
fn a_fixed_bug_goes_to_the_debug_review() {
    let out = from_contract(&checked(Role::BugInvestigator));
    let i = out.investigator.as_ref().unwrap();
    assert_eq!(i.variants_covered, 1);
    assert_eq!(i.fixed_problems(), Vec::<String>::new());
    assert_eq!(
        run(&artifact(WorkflowKind::Debug, None), out),
        Action::DebugReview
    );
}

#[test]
fn a_created_plan_goes_to_its_first_fresh_review() {
    let out = from_contract(&checked(Role::Planner));
    let p = out.planner.as_ref().unwrap();
    assert_eq!(p.differences_from_agreement, Some(Vec::new()));
    assert_eq!(p.plan_problems(), Vec::<String>::new());
    let tasks = vec![
        task("t1", "plan-create", TaskStatus::InProgress, &[]),
        task("t2", "plan-review-gap-1", TaskStatus::Pending, &["t1"]),
    ];
    assert_eq!(
        action(&artifact(WorkflowKind::Plan, None), out, tasks),
        Action::RunPlanReviewPass1
    );
}

#[test]
fn a_plan_review_pass_prunes_the_replan_and_finalizes() {
    let out = from_contract(&checked(Role::PlanGapReviewer));
    assert_eq!(out.plan_review.as_ref().unwrap().passes(), Some(true));
    let tasks = vec![
        task("t1", "plan-create", TaskStatus::Completed, &[]),
        task("t2", "plan-review-gap-1", TaskStatus::Pending, &["t1"]),
        task("t3", "re-plan", TaskStatus::Pending, &["t2"]),
        task("t4", "plan-review-gap-2", TaskStatus::Pending, &["t3"]),
        task("t5", "memory-finalize", TaskStatus::Pending, &["t4"]),
    ];
    assert_eq!(
        action(&artifact(WorkflowKind::Plan, None), out, tasks),
        Action::MemoryFinalize
    );
}

#[test]
fn synced_docs_finalize_the_build() {
    let out = from_contract(&checked(Role::DocSyncer));
    assert_eq!(
        out.doc_syncer.as_ref().unwrap().problems(),
        Vec::<String>::new()
    );
    let a = artifact(WorkflowKind::Build, Some("standard"));
    assert_eq!(run(&a, out), Action::MemoryFinalize);
}

#[test]
fn a_research_round_reinvokes_the_investigator() {
    let out = from_contract(&checked(Role::Researcher));
    let r = out.research.clone().unwrap();
    assert_eq!(
        r,
        ResearchOutcome {
            web_status: Some("COMPLETE".into()),
            github_status: None,
            overall_quality: Some("high".into()),
        }
    );
    let outputs = AgentOutputs {
        investigator: Some(InvestigatorReport {
            status: "BLOCKED".into(),
            needs_external_research: true,
            ..InvestigatorReport::default()
        }),
        ..out
    };
    assert_eq!(
        run(&artifact(WorkflowKind::Debug, None), outputs),
        Action::ReinvokeInvestigator
    );
}

#[test]
fn a_review_approval_verifies_and_changes_requested_remediates() {
    let out = from_contract(&checked(Role::CodeReviewer));
    let r = out.reviewer.as_ref().unwrap();
    assert_eq!(r.verdict.as_deref(), Some("APPROVE"));
    assert_eq!(r.approves(), Some(true));
    let build = artifact(WorkflowKind::Build, Some("standard"));
    assert_eq!(run(&build, out.clone()), Action::RunVerifier);
    assert_eq!(
        run(&artifact(WorkflowKind::Review, None), out),
        Action::MemoryFinalize
    );

    let changes = example(Role::CodeReviewer)
        .replace("\"s\":\"APPROVE\"", "\"s\":\"CHANGES_REQUESTED\"")
        .replace("## Review: Approve", "## Review: Changes Requested")
        .replace(
            "REMEDIATION_NEEDED: false",
            "REMEDIATION_NEEDED: true\nREMEDIATION_REASON: name the buffer size",
        );
    let out = from_contract(&parsed(Role::CodeReviewer, &changes));
    let r = out.reviewer.as_ref().unwrap();
    assert_eq!(r.verdict.as_deref(), Some("CHANGES_REQUESTED"));
    assert_eq!(
        r.remediation_reason.as_deref(),
        Some("name the buffer size")
    );
    assert_eq!(run(&build, out), Action::CreateRemfix);
}

#[test]
fn an_approval_with_a_critical_issue_arrives_as_changes_requested() {
    let output = example(Role::CodeReviewer).replace("\"cr\":0", "\"cr\":1");
    let r = from_contract(&parsed(Role::CodeReviewer, &output))
        .reviewer
        .unwrap();
    assert_eq!(r.verdict.as_deref(), Some("CHANGES_REQUESTED"));
    assert_eq!(r.critical_issues, 1);
}

#[test]
fn a_clean_hunt_beside_an_approval_goes_to_the_verifier() {
    let hunt = checked(Role::FailureHunter);
    let review = checked(Role::CodeReviewer);
    let out = from_contract(&hunt);
    assert_eq!(
        out,
        AgentOutputs {
            findings: Some(MergedFindings::default()),
            ..AgentOutputs::default()
        }
    );
    let outputs = AgentOutputs {
        findings: Some(findings_from(Some(&review), Some(&hunt))),
        ..from_contract(&review)
    };
    let build = artifact(WorkflowKind::Build, Some("standard"));
    assert_eq!(run(&build, outputs), Action::RunVerifier);
}

#[test]
fn a_verifier_pass_exits_the_phase_and_a_critical_issue_remediates() {
    let out = from_contract(&checked(Role::IntegrationVerifier));
    let v = out.verifier.clone().unwrap();
    assert_eq!(v.status.as_deref(), Some("PASS"));
    assert_eq!(v.scenarios_total, Some(2));
    assert_eq!(v.reconcile_problems(), Vec::<String>::new());
    let a = artifact(WorkflowKind::Build, Some("trivial"));
    let d = decide(
        &a,
        &Inputs {
            outputs: out,
            ..Inputs::default()
        },
    );
    assert_eq!(d.action, Action::MemoryFinalize);
    assert!(d
        .changes
        .contains(&Change::ProofStatus(ProofStatus::Passed)));

    let critical = example(Role::IntegrationVerifier).replace("\"cr\":0", "\"cr\":1");
    let out = from_contract(&parsed(Role::IntegrationVerifier, &critical));
    let v = out.verifier.as_ref().unwrap();
    assert_eq!((v.status.as_deref(), v.critical_issues), (Some("FAIL"), 1));
    assert_eq!(run(&a, out), Action::CreateRemfix);
}

#[test]
fn a_proven_remediation_is_rechecked_and_an_unproven_one_returned() {
    let remfix = Task {
        kind: Some(TaskKind::Remfix),
        scope: Some("ALL_ISSUES".into()),
        reason: Some("review findings".into()),
        ..task("r1", "rem-fix", TaskStatus::Completed, &[])
    };
    let a = artifact(WorkflowKind::Debug, None);
    let proven = AgentOutputs {
        remfix: Some(remfix_proof(&checked(Role::BugInvestigator))),
        ..AgentOutputs::default()
    };
    assert!(proven.remfix.as_ref().unwrap().is_proven());
    assert_eq!(
        action(&a, proven, vec![remfix.clone()]),
        Action::SpawnRecheckTasks
    );
    assert_eq!(
        action(&a, AgentOutputs::default(), vec![remfix]),
        Action::ReturnRemfixForProof
    );
}
