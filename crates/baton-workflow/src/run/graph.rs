//! The task graphs of each workflow type, and which tasks carry out an engine action.

use crate::artifact::{Phase, Task, TaskKind, TaskStatus};
use crate::engine::Action;
use crate::route::WorkflowKind;

/// One task to add: its phase, kind, blockers (by index into the same list or by id) and reason.
struct Node {
    phase: Phase,
    kind: TaskKind,
    blocked_by: &'static [usize],
}

const fn n(phase: Phase, kind: TaskKind, blocked_by: &'static [usize]) -> Node {
    Node {
        phase,
        kind,
        blocked_by,
    }
}

/// The graph a workflow starts with. BUILD `trivial`: builder → verifier → memory; BUILD
/// `standard`: builder → reviewer ‖ hunter → verifier → doc-sync → memory; DEBUG: investigator
/// → reviewer → verifier → memory; REVIEW: audit → memory; PLAN: brainstorming → planner →
/// gap review 1 → re-plan → gap review 2 → memory (the engine prunes the re-plan branch when
/// pass 1 passes).
fn template(kind: WorkflowKind, trivial: bool) -> Vec<Node> {
    use TaskKind::{Agent, Memory};
    match kind {
        WorkflowKind::Build if trivial => vec![
            n(Phase::BuildImplement, Agent, &[]),
            n(Phase::BuildVerify, Agent, &[0]),
            n(Phase::MemoryFinalize, Memory, &[1]),
        ],
        WorkflowKind::Build => vec![
            n(Phase::BuildImplement, Agent, &[]),
            n(Phase::BuildReview, Agent, &[0]),
            n(Phase::BuildHunt, Agent, &[0]),
            n(Phase::BuildVerify, Agent, &[1, 2]),
            n(Phase::BuildDocSync, Agent, &[3]),
            n(Phase::MemoryFinalize, Memory, &[4]),
        ],
        WorkflowKind::Debug => vec![
            n(Phase::DebugInvestigate, Agent, &[]),
            n(Phase::DebugReview, Agent, &[0]),
            n(Phase::DebugVerify, Agent, &[1]),
            n(Phase::MemoryFinalize, Memory, &[2]),
        ],
        WorkflowKind::Review => vec![
            n(Phase::ReviewAudit, Agent, &[]),
            n(Phase::MemoryFinalize, Memory, &[0]),
        ],
        WorkflowKind::Plan => vec![
            n(Phase::Brainstorm, Agent, &[]),
            n(Phase::PlanCreate, Agent, &[0]),
            n(Phase::PlanReviewGap1, Agent, &[1]),
            n(Phase::RePlan, Agent, &[2]),
            n(Phase::PlanReviewGap2, Agent, &[3]),
            n(Phase::MemoryFinalize, Memory, &[4]),
        ],
        // Read-only reports: one agent, then memory.
        WorkflowKind::Triage | WorkflowKind::CodebaseHealth => vec![
            n(Phase::ReviewAudit, Agent, &[]),
            n(Phase::MemoryFinalize, Memory, &[0]),
        ],
        WorkflowKind::Orient => Vec::new(),
    }
}

/// The next free task id (`t1`, `t2` …).
pub fn next_id(tasks: &[Task]) -> String {
    let max = tasks
        .iter()
        .filter_map(|t| t.id.strip_prefix('t').and_then(|n| n.parse::<u32>().ok()))
        .max()
        .unwrap_or(0);
    format!("t{}", max + 1)
}

/// What a new task is and why it was made: each metadata line a field, so none can be forgotten.
pub struct NewTask<'a> {
    pub kind: TaskKind,
    pub phase: &'a str,
    pub origin: &'a str,
    pub scope: &'a str,
    pub reason: &'a str,
    pub blocked_by: Vec<String>,
}

/// A task with all seven metadata lines.
pub fn task(tasks: &[Task], wf: &str, new: NewTask<'_>) -> Task {
    let NewTask {
        kind,
        phase,
        origin,
        scope,
        reason,
        blocked_by,
    } = new;
    Task {
        id: next_id(tasks),
        status: Some(TaskStatus::Pending),
        blocked_by,
        wf: Some(wf.to_string()),
        kind: Some(kind),
        origin: Some(origin.to_string()),
        phase: Some(phase.to_string()),
        plan: Some("N/A".to_string()),
        scope: Some(scope.to_string()),
        reason: Some(reason.to_string()),
    }
}

/// Adds a router-made agent task of `phase` (naming `plan` when given); returns its id.
fn push_agent(
    tasks: &mut Vec<Task>,
    wf: &str,
    phase: Phase,
    reason: &str,
    blocked_by: Vec<String>,
    plan: Option<&str>,
) -> String {
    let mut t = task(
        tasks,
        wf,
        NewTask {
            kind: TaskKind::Agent,
            phase: phase.as_str(),
            origin: "router",
            scope: "N/A",
            reason,
            blocked_by,
        },
    );
    if let Some(p) = plan {
        t.plan = Some(p.to_string());
    }
    let id = t.id.clone();
    tasks.push(t);
    id
}

/// Escalates a trivial BUILD's graph to the full one (cc10x: the scope grew): a reviewer and a
/// hunter after the builder, a doc-syncer after the verifier; the open verifier then also waits
/// for the review and the hunt, and the open memory task for the doc-sync. Nothing is added to a
/// graph that has a reviewer already. Returns the new tasks' ids.
pub fn escalate(tasks: &mut Vec<Task>, wf: &str, doc_sync: bool) -> Vec<String> {
    let last = |tasks: &[Task], p: Phase| tasks.iter().rev().position(|t| t.node() == Some(p));
    let has_review = last(tasks, Phase::BuildReview).is_some();
    let Some(builder) = tasks
        .iter()
        .rev()
        .find(|t| t.node() == Some(Phase::BuildImplement))
        .map(|t| t.id.clone())
    else {
        return Vec::new();
    };
    if has_review {
        return Vec::new();
    }
    let why = "scope grew beyond trivial: the full review chain runs";
    let mut created = Vec::new();
    let mut add = |tasks: &mut Vec<Task>, phase: Phase, blocked_by: Vec<String>| {
        let id = push_agent(tasks, wf, phase, why, blocked_by, None);
        created.push(id.clone());
        id
    };
    let review = add(tasks, Phase::BuildReview, vec![builder.clone()]);
    let hunt = add(tasks, Phase::BuildHunt, vec![builder]);
    let verify = tasks
        .iter_mut()
        .rev()
        .find(|t| t.node() == Some(Phase::BuildVerify) && t.is_open());
    if let Some(v) = verify {
        v.blocked_by.extend([review, hunt]);
        let verify_id = v.id.clone();
        let tail = match doc_sync {
            true => add(tasks, Phase::BuildDocSync, vec![verify_id]),
            false => verify_id,
        };
        for m in tasks
            .iter_mut()
            .filter(|t| t.node() == Some(Phase::MemoryFinalize) && t.is_open())
        {
            m.blocked_by = vec![tail.clone()];
        }
    }
    created
}

/// The tasks of one more phase of a planned BUILD: its builder, then reviewer ‖ hunter, then
/// its verifier; the open doc-sync task (the chain's tail) waits for this verifier now. Every
/// task names the plan file. Returns the builder's id.
pub fn phase_chain(tasks: &mut Vec<Task>, wf: &str, plan: &str, builder_reason: &str) -> String {
    let add = |tasks: &mut Vec<Task>, phase: Phase, reason: &str, blocked_by: Vec<String>| {
        push_agent(tasks, wf, phase, reason, blocked_by, Some(plan))
    };
    let builder = add(tasks, Phase::BuildImplement, builder_reason, Vec::new());
    let review = add(
        tasks,
        Phase::BuildReview,
        "Review the current phase",
        vec![builder.clone()],
    );
    let hunt = add(
        tasks,
        Phase::BuildHunt,
        "Audit the current phase's blast radius",
        vec![builder.clone()],
    );
    let verify = add(
        tasks,
        Phase::BuildVerify,
        "Phase exit verification",
        vec![review, hunt],
    );
    // The chain's tail waits for this verifier now: the open doc-sync task, or the memory task
    // where docs are skipped (`DIFF_DRIVEN_DOCS: skip`).
    let tail = match tasks
        .iter()
        .any(|t| t.node() == Some(Phase::BuildDocSync) && t.is_open())
    {
        true => Phase::BuildDocSync,
        false => Phase::MemoryFinalize,
    };
    for t in tasks
        .iter_mut()
        .filter(|t| t.node() == Some(tail) && t.is_open())
    {
        t.blocked_by = vec![verify.clone()];
    }
    builder
}

/// `DIFF_DRIVEN_DOCS: skip` (cc10x build-workflow, opt-out check): the doc-sync task is not
/// made, and what waited for it (the memory task) waits for what it waited for (the verifier).
pub fn skip_doc_sync(tasks: &mut Vec<Task>) {
    let docs: Vec<(String, Vec<String>)> = tasks
        .iter()
        .filter(|t| t.node() == Some(Phase::BuildDocSync))
        .map(|t| (t.id.clone(), t.blocked_by.clone()))
        .collect();
    tasks.retain(|t| t.node() != Some(Phase::BuildDocSync));
    for t in tasks.iter_mut() {
        for (id, before) in &docs {
            if let Some(i) = t.blocked_by.iter().position(|b| b == id) {
                t.blocked_by.splice(i..=i, before.iter().cloned());
            }
        }
    }
}

/// A planned BUILD's first graph: the full graph, every task naming the plan file, the builder
/// told its phase.
pub fn planned(tasks: &mut [Task], plan: &str, builder_reason: &str) {
    for t in tasks.iter_mut() {
        t.plan = Some(plan.to_string());
        if t.node() == Some(Phase::BuildImplement) {
            t.reason = Some(builder_reason.to_string());
        }
    }
}

/// The tasks a workflow starts with, every one checked.
pub fn initial(kind: WorkflowKind, trivial: bool, wf: &str) -> Vec<Task> {
    let mut tasks: Vec<Task> = Vec::new();
    for node in template(kind, trivial) {
        let blocked_by = node
            .blocked_by
            .iter()
            .map(|i| format!("t{}", i + 1))
            .collect();
        let t = task(
            &tasks,
            wf,
            NewTask {
                kind: node.kind,
                phase: node.phase.as_str(),
                origin: "router",
                scope: "N/A",
                reason: "N/A",
                blocked_by,
            },
        );
        tasks.push(t);
    }
    tasks
}

/// DEBUG's research before the first investigator: the web and GitHub researchers, which the
/// investigator waits for (`asked`: the words by which the request asked for it).
pub fn research_first(tasks: &mut Vec<Task>, wf: &str, asked: &str) {
    let reason = format!("The request asks for research (\"{asked}\") before the investigation");
    research_before(tasks, wf, &reason, Phase::DebugInvestigate);
}

/// The web and GitHub researchers, for `reason`, which the open tasks of phase `waits` wait for;
/// their ids.
pub fn research_before(tasks: &mut Vec<Task>, wf: &str, reason: &str, waits: Phase) -> Vec<String> {
    let mut ids = Vec::new();
    for phase in [Phase::ResearchWeb, Phase::ResearchGithub] {
        let t = task(
            tasks,
            wf,
            NewTask {
                kind: TaskKind::Research,
                phase: phase.as_str(),
                origin: "router",
                scope: "N/A",
                reason,
                blocked_by: Vec::new(),
            },
        );
        ids.push(t.id.clone());
        tasks.push(t);
    }
    for t in tasks.iter_mut() {
        if t.node() == Some(waits) && t.is_open() {
            t.blocked_by.extend(ids.iter().cloned());
        }
    }
    ids
}

/// Whether a task is finished for the purpose of unblocking others.
pub fn is_done(tasks: &[Task], id: &str) -> bool {
    tasks.iter().any(|t| {
        t.id == id && matches!(t.status, Some(TaskStatus::Completed | TaskStatus::Deleted))
    })
}

/// Whether every blocker of `t` is done.
pub fn unblocked(tasks: &[Task], t: &Task) -> bool {
    t.blocked_by.iter().all(|b| is_done(tasks, b))
}

/// The phases whose tasks carry out `action`; `None` for an action that dispatches no agent.
pub fn phases_for(action: Action) -> Option<&'static [Phase]> {
    Some(match action {
        Action::RunBuilder => &[Phase::BuildImplement],
        Action::RunReviewAndHunt | Action::SpawnRecheckTasks => &[
            Phase::BuildReview,
            Phase::BuildHunt,
            Phase::ReReview,
            Phase::ReHunt,
        ],
        Action::RunVerifier => &[Phase::BuildVerify, Phase::DebugVerify, Phase::ReVerify],
        Action::RunDocSyncer => &[Phase::BuildDocSync],
        Action::RunInvestigator | Action::ContinueInvestigation | Action::ReinvokeInvestigator => {
            &[Phase::DebugInvestigate]
        }
        Action::DebugReview => &[Phase::DebugReview],
        Action::RunReviewer | Action::RunTriageAgent | Action::RunArchitectureScanner => {
            &[Phase::ReviewAudit]
        }
        Action::RunBrainstorming => &[Phase::Brainstorm],
        Action::RunPlanner | Action::RunPlannerWithDesignFile => &[Phase::PlanCreate],
        Action::RunPlanReviewPass1 => &[Phase::PlanReviewGap1],
        Action::RunPlannerReplan => &[Phase::RePlan],
        Action::RunPlanReviewPass2 => &[Phase::PlanReviewGap2],
        Action::SpawnResearch => &[Phase::ResearchWeb, Phase::ResearchGithub],
        Action::CreateRemfix | Action::ReturnRemfixForProof => &[],
        _ => return None,
    })
}

/// The open, unblocked tasks that carry out `action`: remediation tasks for the remediation
/// actions, else the tasks of its phases.
pub fn runnable_for(tasks: &[Task], action: Action) -> Vec<String> {
    let Some(phases) = phases_for(action) else {
        return Vec::new();
    };
    let remfix = matches!(action, Action::CreateRemfix | Action::ReturnRemfixForProof);
    tasks
        .iter()
        .filter(|t| {
            t.status == Some(TaskStatus::Pending) || t.status == Some(TaskStatus::InProgress)
        })
        .filter(|t| unblocked(tasks, t))
        .filter(|t| {
            if remfix {
                t.kind == Some(TaskKind::Remfix)
            } else {
                t.kind != Some(TaskKind::Remfix) && t.node().is_some_and(|p| phases.contains(&p))
            }
        })
        .map(|t| t.id.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const WF: &str = "wf-20261203T150000Z-0a1b2c3d";

    #[test]
    fn every_initial_task_carries_valid_metadata() {
        for kind in WorkflowKind::ALL {
            for trivial in [true, false] {
                for t in initial(kind, trivial, WF) {
                    assert_eq!(t.validate(), Ok(()), "{kind:?} {t:?}");
                }
            }
        }
    }

    #[test]
    fn review_and_hunt_wait_for_the_builder() {
        let mut tasks = initial(WorkflowKind::Build, false, WF);
        assert_eq!(runnable_for(&tasks, Action::RunBuilder), ["t1"]);
        assert!(runnable_for(&tasks, Action::RunReviewAndHunt).is_empty());
        tasks[0].status = Some(TaskStatus::Completed);
        assert_eq!(runnable_for(&tasks, Action::RunReviewAndHunt), ["t2", "t3"]);
        assert!(runnable_for(&tasks, Action::RunVerifier).is_empty());
    }
}
