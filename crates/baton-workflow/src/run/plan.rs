//! A planned BUILD (`baton run --plan FILE`): the plan trust gate before anything is recorded,
//! the plan's phases in the artifact, the check before each phase that the plan is still the one
//! approved, and the phase-local brief each dispatch of a phase gets.

use std::path::{Path, PathBuf};

use super::{RunEnv, RunError, StartOptions};
use crate::artifact::{Artifact, BuildScope, HistoryEntry, NormalizedPhase, PhaseStatus};
use crate::engine::{Action, Change, Decision};
use crate::memory::MemoryDir;
use crate::plan_file::{ApprovalState, Approvals, PlanFile};
use crate::route::WorkflowKind;
use crate::state::{Gate, WorkflowState};

/// A plan read and trusted, with its approval key.
pub(super) type TrustedPlan = (crate::plan_file::PlanFile, String);

/// The plan `path` trusted as `baton run --plan` trusts it (checked, and approved now when it
/// never was) for a workflow that runs elsewhere (Temporal's nodes build it from the starting
/// commit): its approval key (the path from `root` when inside it) and the SHA-256 approved.
pub fn trust_named_plan(
    state: &baton_state::StateDir,
    root: &Path,
    path: &Path,
) -> Result<(String, String), RunError> {
    let (plan, key) = trust_as(state, root, path, true)?;
    Ok((key, plan.sha256))
}

/// A plan the BUILD was told to build that is not there: its name, and who named it.
pub(super) struct MissingPlan {
    pub(super) name: String,
    pub(super) named_by: &'static str,
}

/// The plan `--plan` names, trusted (its hash recorded on approval) and read; refused with the
/// fix when it cannot go with the rest of the options. A `--plan` file that is not there is not
/// an error: the workflow asks (re-plan first, or build without it), as for a plan memory names.
pub(super) fn trusted_plan(
    env: &RunEnv,
    opts: &StartOptions,
    referenced: Option<&Path>,
    root: &Path,
) -> Result<(Option<TrustedPlan>, Option<MissingPlan>), RunError> {
    let Some(p) = opts.plan.as_deref().or(referenced) else {
        return Ok((None, None));
    };
    if opts.kind != WorkflowKind::Build {
        return Err(RunError::Refused(format!(
            "--plan runs a BUILD, not {}: drop --workflow, or give --workflow BUILD",
            opts.kind
        )));
    }
    if opts.trivial {
        return Err(RunError::Refused(
            "--plan and --trivial do not go together: planned work always takes the full graph; drop --trivial".into(),
        ));
    }
    let path = match (p.is_absolute(), opts.plan.is_some()) {
        (true, _) => p.to_path_buf(),
        (false, true) => env.delegate.cwd.join(p),
        // Memory names it from the project's root.
        (false, false) => root.join(p),
    };
    if opts.plan.is_some() && !path.exists() {
        let missing = MissingPlan {
            name: p.display().to_string(),
            named_by: "--plan",
        };
        return Ok((None, Some(missing)));
    }
    let trusted = trust_as(&env.delegate.state, root, &path, opts.plan.is_some())?;
    Ok((Some(trusted), None))
}

/// The plan a BUILD takes from `activeContext.md ## References` (see
/// [`StartOptions::referenced_plan`]): the file when it is there, else its name (missing).
pub(super) fn referenced_plan(
    opts: &StartOptions,
    root: &Path,
) -> Result<(Option<PathBuf>, Option<String>), RunError> {
    if !opts.referenced_plan
        || opts.kind != WorkflowKind::Build
        || opts.plan.is_some()
        || opts.trivial
    {
        return Ok((None, None));
    }
    let named = MemoryDir::new(root)
        .reference("Plan")
        .map_err(|e| RunError::Memory(e.to_string()))?;
    Ok(match named {
        Some(n) if root.join(&n).is_file() => (Some(PathBuf::from(n)), None),
        Some(n) => (None, Some(n)),
        None => (None, None),
    })
}

/// cc10x's `plan_trust_gate`: the plan reads and passes every check (explicit mode and rigor,
/// no open decision, the two required sections, each phase's objective, exit criteria and test
/// seams), and it is the content that was approved. A plan never approved is approved now, by
/// the user who named it; one approved and then edited is refused until approved again.
///
/// A plan never approved is approved now only when the user named it (`user_named`): one
/// memory names is built only as it was approved (by the PLAN that wrote it, or `baton plan
/// approve`).
pub fn trust_as(
    state: &baton_state::StateDir,
    root: &Path,
    path: &Path,
    user_named: bool,
) -> Result<(PlanFile, String), RunError> {
    let plan = PlanFile::read(path)?;
    let approvals = Approvals::new(state, root);
    let key = approvals.key(path);
    match approvals
        .check(path, &plan.sha256)
        .map_err(RunError::PlanNotTrusted)?
    {
        ApprovalState::Approved(_) => {}
        ApprovalState::New if !user_named => {
            return Err(RunError::PlanNotTrusted(format!(
                "plan {key}, which activeContext.md ## References names, was never approved: read it, then `baton plan approve {key}` (or `baton run --no-plan` builds the request alone)"
            )))
        }
        ApprovalState::New => {
            approvals
                .approve(path, &plan.sha256, "baton run --plan")
                .map_err(RunError::PlanNotTrusted)?;
        }
        ApprovalState::Changed(a) => return Err(RunError::PlanNotTrusted(changed(&key, &a))),
    }
    Ok((plan, key))
}

fn changed(key: &str, a: &crate::plan_file::Approval) -> String {
    format!(
        "plan {key} changed since it was approved ({}, by {}): read the change, then approve it again with `baton plan approve {key}`",
        a.approved_at, a.by
    )
}

/// The artifact of a planned BUILD: standard scope (planned work never takes the trivial graph),
/// the plan's file, mode, rigor, phases and intent, the cursor on its first phase, and the hash
/// it was trusted at under `results.plan`.
pub fn apply(a: &mut Artifact, plan: &PlanFile, key: &str) {
    a.build_scope = Some(BuildScope::Standard);
    a.plan_file = Some(key.to_string());
    a.plan_mode = Some(plan.plan_mode);
    a.verification_rigor = Some(plan.verification_rigor);
    a.normalized_phases = plan.normalized_phases();
    a.phase_cursor = a.normalized_phases.first().map(|p| p.phase_id.clone());
    a.intent.goal = plan.title.clone().or(a.intent.goal.take());
    a.intent.acceptance_criteria = plan.acceptance_criteria.clone();
    a.intent.open_decisions = Vec::new();
    a.approved_decisions = plan.decisions.clone();
    a.results.plan = Some(crate::results::PlanPin {
        file: key.to_string(),
        sha256: plan.sha256.clone(),
        phases: plan.phases.len(),
    });
}

/// Before a phase's builder: the plan on disk is still the one the workflow trusted. Edited and
/// approved again (`baton plan approve`), its phases are taken anew (those already completed
/// keep their status) and the new hash recorded; edited and not approved, the workflow stops
/// naming the fix. `Ok(false)`: nothing to check (no plan).
pub fn recheck(
    a: &mut Artifact,
    state: &baton_state::StateDir,
    root: &Path,
    wf: &str,
) -> Result<bool, RunError> {
    let Some(recorded) = a.results.plan.as_ref().map(|p| p.sha256.clone()) else {
        return Ok(false);
    };
    let Some(key) = a.plan_file.clone() else {
        return Ok(false);
    };
    let path: PathBuf = root.join(&key);
    let plan = PlanFile::read(&path).map_err(|e| {
        RunError::PlanNotTrusted(format!(
            "{e}\n(the plan changed under workflow {wf}: fix it, approve it with `baton plan approve {key}`, then `baton resume {wf} --answer retry`)"
        ))
    })?;
    if plan.sha256 == recorded {
        return Ok(true);
    }
    let approvals = Approvals::new(state, root);
    match approvals
        .check(&path, &plan.sha256)
        .map_err(RunError::PlanNotTrusted)?
    {
        ApprovalState::Approved(_) => {
            apply_reapproved(a, &plan, &key);
            Ok(true)
        }
        ApprovalState::New | ApprovalState::Changed(_) => Err(RunError::PlanNotTrusted(format!(
            "plan {key} changed since workflow {wf} started from it: read the change, approve it with `baton plan approve {key}`, then `baton resume {wf} --answer retry`"
        ))),
    }
}

fn apply_reapproved(a: &mut Artifact, plan: &PlanFile, key: &str) {
    let cursor = a.phase_cursor.clone();
    let mut status = a.phase_status.clone();
    let before: Vec<NormalizedPhase> = a.normalized_phases.clone();
    apply(a, plan, key);
    // A task of a phase built per task is known by its place (`<phase>-t<k>`): one whose task
    // changed (reordered, inserted) keeps no status of the task that had its place before.
    status.retain(|id, _| {
        // The task itself: its own title (after `task k of n: `, which a count changes) and files.
        let task = |ps: &[NormalizedPhase]| {
            ps.iter().find(|p| &p.phase_id == id).map(|p| {
                let title = p.title.as_deref().unwrap_or("");
                let own = title.rsplit_once(": ").map_or(title, |(_, t)| t);
                (own.to_string(), p.files.clone())
            })
        };
        !crate::plan_file::is_task_phase(id) || task(&before) == task(&a.normalized_phases)
    });
    a.phase_status = status;
    // The cursor stays on the phase it was on when the new plan still has it, else the first
    // phase not completed.
    let completed =
        |p: &NormalizedPhase| a.phase_status.get(&p.phase_id) == Some(&PhaseStatus::Completed);
    a.phase_cursor = cursor
        .filter(|c| a.normalized_phases.iter().any(|p| &p.phase_id == c))
        .or_else(|| {
            a.normalized_phases
                .iter()
                .find(|p| !completed(p))
                .map(|p| p.phase_id.clone())
        });
    a.status_history.push(HistoryEntry::new(
        "plan_reapproved",
        a.phase_cursor.as_deref(),
        &format!(
            "the plan was edited and approved again (sha256 {})",
            plan.sha256
        ),
    ));
}

/// The phase at the cursor, with its number and the count of phases.
pub fn current(a: &Artifact) -> Option<(usize, &NormalizedPhase)> {
    let c = a.phase_cursor.as_deref()?;
    a.normalized_phases
        .iter()
        .enumerate()
        .find(|(_, p)| p.phase_id == c)
        .map(|(i, p)| (i + 1, p))
}

/// The reason line of a phase's builder task.
pub fn builder_reason(p: &NormalizedPhase) -> String {
    match p.title.as_deref().filter(|t| !t.trim().is_empty()) {
        Some(t) => format!("Execute approved phase {}: {t}", p.phase_id),
        None => format!("Execute approved phase {}", p.phase_id),
    }
}

/// The phase-local hand-off (cc10x build preparation 13): only the current phase — its
/// objective, files, checks, exit criteria, test seams and checkpoint type — and, for the roles
/// that build or judge against it, the intent contract (goal, acceptance criteria, approved
/// decisions). `None` outside a planned BUILD.
pub fn brief(a: &Artifact, with_intent: bool) -> Option<String> {
    let (n, p) = current(a)?;
    a.results.plan.as_ref()?;
    let total = a.normalized_phases.len();
    let mut s = format!("## Current Phase\nPhase {n} of {total}: `{}`", p.phase_id);
    if let Some(t) = &p.title {
        s.push_str(&format!(" — {t}"));
    }
    s.push_str("\nWork on this phase only; later phases are built after it is verified.\n");
    if let Some(o) = &p.objective {
        s.push_str(&format!("- Objective: {o}\n"));
    }
    for (label, items) in [
        ("Files", &p.files),
        ("Inputs", &p.inputs),
        ("Expected artifacts", &p.expected_artifacts),
        ("Required checks", &p.checks),
        ("Exit criteria", &p.exit_criteria),
        ("Test seams", &p.test_seams),
    ] {
        let items = items.as_deref().unwrap_or_default();
        if !items.is_empty() {
            s.push_str(&format!("- {label}:\n"));
            for i in items {
                s.push_str(&format!("  - {i}\n"));
            }
        }
    }
    if let Some(c) = p.checkpoint_type.as_deref().filter(|c| *c != "none") {
        s.push_str(&format!("- Checkpoint type: {c}\n"));
    }
    if with_intent {
        s.push_str("\n## Intent Contract\n");
        if let Some(g) = &a.intent.goal {
            s.push_str(&format!("- Goal: {g}\n"));
        }
        if !a.intent.acceptance_criteria.is_empty() {
            s.push_str("- Acceptance criteria:\n");
            for c in &a.intent.acceptance_criteria {
                s.push_str(&format!("  - {c}\n"));
            }
        }
        let decisions: Vec<&String> = a.decisions_in_force().collect();
        if !decisions.is_empty() {
            s.push_str("- Approved decisions (in force):\n");
            for d in decisions {
                s.push_str(&format!("  - {d}\n"));
            }
        }
    }
    Some(s)
}

/// The checkpoint a plan phase's `checkpoint_type` asks for before `d` is carried out, when not
/// answered yet: `human_verify` once the phase passed its verification (the decision completes
/// it), `decision` and `human_action` before its builder first runs. The gate, the phase and
/// the reason.
pub(super) fn phase_checkpoint(
    d: &Decision,
    artifact: &Artifact,
    new: &Artifact,
    v: &WorkflowState,
) -> Option<(Gate, String, String)> {
    artifact.plan_file.as_ref()?;
    let kind_of = |id: &str| {
        artifact
            .normalized_phases
            .iter()
            .find(|p| p.phase_id == id)
            .map(|p| (p.checkpoint_type.clone().unwrap_or_default(), p))
    };
    let asked = |gate: Gate, phase: &str| {
        v.host
            .phase_checkpoints
            .iter()
            .any(|k| *k == format!("{gate}:{phase}"))
    };
    for c in &d.changes {
        if let Change::PhaseStatus {
            phase,
            status: crate::artifact::PhaseStatus::Completed,
        } = c
        {
            if let Some((kind, p)) = kind_of(phase) {
                if kind == "human_verify" && !asked(Gate::HumanVerify, phase) {
                    let what = match p.exit_criteria.as_deref().unwrap_or_default() {
                        [] => String::new(),
                        list => format!(": {}", list.join("; ")),
                    };
                    return Some((
                        Gate::HumanVerify,
                        phase.clone(),
                        format!(
                            "phase {phase} passed its checks and asks a person to verify it{what}"
                        ),
                    ));
                }
            }
        }
    }
    if d.action != Action::RunBuilder {
        return None;
    }
    let (_, p) = current(new)?;
    let (gate, ask) = match p.checkpoint_type.as_deref() {
        Some("decision") => (
            Gate::PhaseDecision,
            "needs your decision before it is built",
        ),
        Some("human_action") => (Gate::HumanAction, "needs you to act before it is built"),
        _ => return None,
    };
    if asked(gate, &p.phase_id) {
        return None;
    }
    let about = match (
        p.objective.as_deref(),
        p.inputs.as_deref().unwrap_or_default(),
    ) {
        (Some(o), []) => format!(" ({o})"),
        (Some(o), inputs) => format!(" ({o}; inputs: {})", inputs.join(", ")),
        (None, _) => String::new(),
    };
    Some((
        gate,
        p.phase_id.clone(),
        format!("phase {}{about} {ask}", p.phase_id),
    ))
}

/// Why a plan gets the Doubt Pass offer: it is a decision RFC or its verification is on the
/// critical path; `None` for any other plan.
pub(super) fn doubt_offer(a: &Artifact) -> Option<String> {
    use crate::artifact::{PlanMode, VerificationRigor};
    let what = match (a.plan_mode, a.verification_rigor) {
        (Some(PlanMode::DecisionRfc), _) => "a decision RFC",
        (_, Some(VerificationRigor::CriticalPath)) => "a critical-path plan",
        _ => return None,
    };
    Some(format!(
        "The planner saved {what} ({})",
        a.plan_file.as_deref().unwrap_or("its plan")
    ))
}

/// A plan the planner saved: the tasks still to run name it (remediation-and-research.md:95-96),
/// and its intent header — the title and the acceptance criteria, when the plan is in baton's
/// format — goes into the artifact's intent (remediation-and-research.md:94).
pub(super) fn plan_saved(root: &Path, d: &Decision, new: &mut Artifact, nv: &mut WorkflowState) {
    let saved = d.changes.iter().find_map(|c| match c {
        Change::Plan { file, .. } => Some(file.clone()),
        _ => None,
    });
    let Some(file) = saved.filter(|f| !f.trim().is_empty()) else {
        return;
    };
    for t in nv.tasks.iter_mut().filter(|t| t.is_open()) {
        t.plan = Some(file.clone());
    }
    if let Ok(p) = PlanFile::read(&root.join(&file)) {
        if let Some(title) = p.title {
            new.intent.goal = Some(title);
        }
        if !p.acceptance_criteria.is_empty() {
            new.intent.acceptance_criteria = p.acceptance_criteria;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A one-phase plan built per task, its tasks titled `titles`, each in a file of its own.
    fn per_task(titles: &[&str]) -> PlanFile {
        let tasks: String = titles
            .iter()
            .map(|t| format!("    - title: {t}\n      files: [src/{t}.rs]\n"))
            .collect();
        let text = format!(
            "# Importers\n\nplan_mode: execution_plan\nverification_rigor: standard\n\n## Acceptance Criteria\n- every format imports\n\n## Phases\n```yaml\n- phase_id: phase-1\n  title: Importers\n  objective: import the formats\n  files: [src/]\n  checks: []\n  exit_criteria: [every format imports]\n  test_seams: [import::run]\n  fresh_builder_per_task: true\n  tasks:\n{tasks}```\n\n## Open Decisions\nNone\n\n## Differences from agreement\nNone\n"
        );
        PlanFile::parse(Path::new("p.md"), &text, "sha".into()).expect("a plan")
    }

    #[test]
    fn a_task_reshaped_before_reapproval_keeps_no_status_of_the_task_that_had_its_place() {
        let mut a = Artifact::default();
        apply(&mut a, &per_task(&["csv", "json", "xml"]), "p.md");
        for id in ["phase-1-t1", "phase-1-t2"] {
            a.phase_status.insert(id.into(), PhaseStatus::Completed);
        }
        a.phase_cursor = Some("phase-1-t3".into());
        // A task inserted in second place: `phase-1-t2` is now yaml, not the json built.
        apply_reapproved(&mut a, &per_task(&["csv", "yaml", "json", "xml"]), "p.md");
        assert_eq!(
            a.phase_status.get("phase-1-t1"),
            Some(&PhaseStatus::Completed)
        );
        assert_eq!(a.phase_status.get("phase-1-t2"), None);
        assert_eq!(a.phase_cursor.as_deref(), Some("phase-1-t3"));
    }
}
