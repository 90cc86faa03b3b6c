//! PLAN (design hand-off, planner, the bounded fresh-review graph), REVIEW (advisory) and the
//! read-only workflows' reports.

use super::{Action, Change, Draft, Gate, TaskUpdate};
use crate::artifact::{
    Convergence, MemorySync, Phase, PlanMode, PlanningReviewStatus, Task, TaskStatus,
    VerificationRigor,
};
use crate::outputs::ReadOnlyReport;
use crate::results::AgentResult;

impl Draft<'_> {
    /// PLAN: design hand-off, planner, fresh review — then the next node of the review graph.
    pub(super) fn plan(&mut self) {
        let outputs = &self.inputs.outputs;
        if let Some(h) = &outputs.design_handoff {
            // baton's brainstormer asks what only the user can answer: the node stays open and
            // runs again with the answer (cc10x's brainstorming asks in the main context).
            if h.status.as_deref() == Some("NEEDS_CLARIFICATION") {
                let reason = format!(
                    "brainstorming needs your answers before the plan: {}",
                    h.questions.join(" · ")
                );
                return self.stop(Action::AskUser, Some(Gate::Clarification), reason);
            }
            self.complete_node(Phase::Brainstorm);
            // The Doubt Pass the user asked for: its file holds objections, not a design.
            let doubting = self
                .a
                .results
                .doubt_pass
                .as_ref()
                .is_some_and(|d| d.choice == "run" && d.file.is_none());
            if doubting {
                if let Some(file) = h.design_file.clone().filter(|f| !f.trim().is_empty()) {
                    self.changes.push(Change::DoubtFile(file));
                }
                return self.next_plan_node();
            }
            if let Some(file) = h.design_file.clone().filter(|f| !f.trim().is_empty()) {
                self.changes.push(Change::DesignFile(file));
                self.changes.push(Change::MemorySync(MemorySync {
                    design_reference_persisted: Some(true),
                    plan_recent_change_persisted: Some(true),
                    next_step_persisted: Some(true),
                    ..MemorySync::default()
                }));
            }
            // Outside technology the plan depends on: research is offered once, before the
            // planner (plan-workflow.md:14-16).
            if !h.research_topics.is_empty() && self.a.results.research_offer.is_none() {
                let topics = h.research_topics.clone();
                let reason = format!(
                    "brainstorming says the plan depends on outside technology: {}",
                    topics.join(" · ")
                );
                self.changes.push(Change::ResearchOffered(topics));
                return self.stop(Action::AskUser, Some(Gate::ResearchOffer), reason);
            }
        }
        if let Some(r) = &outputs.research {
            // The research the user asked for before planning is in: the planner gets its files.
            self.research_in(r);
        }
        if let Some(p) = &outputs.planner {
            let replanned = self.node_done(Phase::RePlan);
            match p.status.as_str() {
                "NEEDS_CLARIFICATION" => {
                    if !replanned {
                        self.prune(&[Phase::PlanReviewGap1, Phase::RePlan, Phase::PlanReviewGap2]);
                    }
                    let reason = p
                        .remediation_reason
                        .clone()
                        .unwrap_or("the planner needs answers".into());
                    return self.stop(Action::AskUser, Some(Gate::Clarification), reason);
                }
                "PLAN_CREATED" | "DECISION_RFC_CREATED" => {
                    let problems = p.plan_problems();
                    if !problems.is_empty() {
                        return self.invalid("planner", &problems);
                    }
                    self.changes.push(Change::Plan {
                        file: p.plan_file.clone().unwrap_or_default(),
                        mode: p.plan_mode.as_deref().and_then(PlanMode::parse),
                        rigor: p
                            .verification_rigor
                            .as_deref()
                            .and_then(VerificationRigor::parse),
                    });
                    self.complete_node(if replanned {
                        Phase::RePlan
                    } else {
                        Phase::PlanCreate
                    });
                }
                other => {
                    return self.invalid("planner", &[format!("STATUS {other:?} is not a state")])
                }
            }
        }
        if let Some(r) = &outputs.plan_review {
            let Some(passes) = r.passes() else {
                return self.invalid("plan-gap-reviewer", &[format!("STATUS {:?}", r.status)]);
            };
            // The second pass is the one after a re-plan.
            let pass = if self.node_done(Phase::RePlan) { 2 } else { 1 };
            let runs = (self.a.planning_review_runs + 1).max(pass);
            self.complete_node(if pass == 2 {
                Phase::PlanReviewGap2
            } else {
                Phase::PlanReviewGap1
            });
            self.result(
                "planning_reviewer",
                AgentResult {
                    pass: Some(pass),
                    ..AgentResult::status(&r.status)
                },
            );
            if passes {
                self.changes.push(Change::PlanningReview {
                    status: PlanningReviewStatus::Passed,
                    runs,
                });
                self.prune(&[Phase::RePlan, Phase::PlanReviewGap2]);
            } else if pass == 1 {
                self.changes.push(Change::PlanningReview {
                    status: PlanningReviewStatus::FindingsReceived,
                    runs,
                });
                self.changes
                    .push(Change::Convergence(Convergence::NeedsIteration));
            } else {
                self.changes.push(Change::PlanningReview {
                    status: PlanningReviewStatus::NeedsClarification,
                    runs,
                });
                let reason = r
                    .replan_reason
                    .clone()
                    .unwrap_or("the plan still has findings".into());
                return self.stop(Action::AskUser, Some(Gate::Clarification), reason);
            }
        }
        self.next_plan_node();
    }

    pub(super) fn node(&self, phase: Phase) -> Option<&Task> {
        self.tasks.iter().find(|t| t.node() == Some(phase))
    }

    pub(super) fn node_done(&self, phase: Phase) -> bool {
        self.node(phase)
            .is_some_and(|t| t.status == Some(TaskStatus::Completed))
    }

    pub(super) fn set_status(&mut self, phases: &[Phase], status: TaskStatus) {
        for t in self.tasks.iter_mut() {
            if t.is_open() && t.node().is_some_and(|p| phases.contains(&p)) {
                t.status = Some(status);
                self.task_updates.push(TaskUpdate {
                    task: t.id.clone(),
                    status,
                });
            }
        }
    }

    /// Research asked for before the work is in: its quality recorded, its nodes done.
    pub(super) fn research_in(&mut self, r: &crate::outputs::ResearchOutcome) {
        self.changes.push(Change::ResearchQuality {
            web: r.web_status.clone(),
            github: r.github_status.clone(),
            overall: r.overall_quality.clone(),
        });
        self.complete_node(Phase::ResearchWeb);
        self.complete_node(Phase::ResearchGithub);
    }

    pub(super) fn complete_node(&mut self, phase: Phase) {
        self.set_status(&[phase], TaskStatus::Completed);
    }

    /// Marks unused review branches deleted, so nothing stays blocked on them.
    pub(super) fn prune(&mut self, phases: &[Phase]) {
        self.set_status(phases, TaskStatus::Deleted);
    }

    /// The first open PLAN node whose blockers are all done; none left: the plan goes to BUILD.
    pub(super) fn next_plan_node(&mut self) {
        let done = |id: &str| {
            self.tasks.iter().any(|t| {
                t.id == id && matches!(t.status, Some(TaskStatus::Completed | TaskStatus::Deleted))
            })
        };
        let runnable = self
            .tasks
            .iter()
            .find(|t| t.is_open() && t.blocked_by.iter().all(|b| done(b)))
            .and_then(|t| t.phase.clone());
        let runs = self.a.planning_review_runs;
        let reviewed = self
            .changes
            .iter()
            .any(|c| matches!(c, Change::PlanningReview { .. }));
        match runnable.as_deref().map(|p| (Phase::parse(p), p)) {
            Some((Some(Phase::Brainstorm), _)) => self.decide(
                Action::RunBrainstorming,
                "explore the request before planning",
            ),
            Some((Some(Phase::PlanCreate), _))
                if self.a.design_file.is_some() || self.has_design() =>
            {
                self.decide(
                    Action::RunPlannerWithDesignFile,
                    "plan from the design file",
                )
            }
            Some((Some(Phase::PlanCreate), _)) => {
                self.decide(Action::RunPlanner, "create the plan")
            }
            Some((Some(p @ (Phase::PlanReviewGap1 | Phase::PlanReviewGap2)), _)) => {
                if !reviewed {
                    self.changes.push(Change::PlanningReview {
                        status: PlanningReviewStatus::PendingReview,
                        runs,
                    });
                }
                let action = if p == Phase::PlanReviewGap1 {
                    Action::RunPlanReviewPass1
                } else {
                    Action::RunPlanReviewPass2
                };
                self.decide(action, "fresh review of the saved plan")
            }
            Some((Some(Phase::RePlan), _)) => {
                self.decide(Action::RunPlannerReplan, "revise the plan after findings")
            }
            Some((Some(Phase::MemoryFinalize), _)) => {
                let (action, reason) = self.memory_finalize("plan reviewed");
                self.decide(action, reason)
            }
            Some((_, other)) => self.stop(
                Action::StopInvalidOutput,
                None,
                format!("PLAN graph node {other:?} is not a PLAN phase"),
            ),
            None => self.decide(Action::CreateBuildWorkflow, "the plan is final: build it"),
        }
    }

    pub(super) fn has_design(&self) -> bool {
        self.changes
            .iter()
            .any(|c| matches!(c, Change::DesignFile(_)))
    }

    /// REVIEW is advisory: changes requested offers a BUILD, it never creates a fix.
    pub(super) fn review(&mut self) {
        let Some(r) = &self.inputs.outputs.reviewer else {
            return self.invalid("review", &["no reviewer output".into()]);
        };
        match r.approves() {
            None => self.invalid("reviewer", &["no readable verdict".into()]),
            Some(true) => {
                let (action, reason) = self.memory_finalize("review approved");
                self.decide(action, reason)
            }
            Some(false) => {
                let reason = r
                    .remediation_reason
                    .clone()
                    .unwrap_or("changes requested".into());
                self.stop(
                    Action::OfferBuildTransition,
                    None,
                    format!("{reason}: offer a BUILD"),
                );
            }
        }
    }

    pub(super) fn read_only_report(
        &mut self,
        report: Option<&ReadOnlyReport>,
        agent: &str,
        done: Action,
    ) {
        let Some(r) = report else {
            return self.invalid(agent, &["no report".into()]);
        };
        if r.status.trim().is_empty() || r.path.as_deref().is_none_or(|p| p.trim().is_empty()) {
            return self.invalid(
                agent,
                &["a status and the path written are required".into()],
            );
        }
        self.result(
            agent,
            AgentResult {
                path: r.path.clone(),
                ..AgentResult::status(&r.status)
            },
        );
        if r.blocking {
            return self.stop(
                Action::AskUser,
                Some(Gate::Clarification),
                format!("{agent} is blocked"),
            );
        }
        self.decide(done, format!("{agent} finished: {}", r.status));
    }
}
