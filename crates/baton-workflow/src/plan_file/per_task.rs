//! The opt-in pilot of a fresh builder per task inside a large phase (build-workflow.md,
//! "Per-TASK fresh-implementer dispatch"): a phase marked `fresh_builder_per_task: true` lists
//! three or more separable `tasks`, and each task becomes a phase of its own when the plan is
//! read. A task then gets what a phase gets: its own brief, its own recorded base (the tree after
//! the task before it), its own builder and its own review (and verifier). The phase's checks,
//! exit criteria, inputs, artifacts and checkpoint go with its last task, which is where the
//! whole phase must hold.
//!
//! The explicit trigger is checked: three or more tasks, and no file in two of them (tasks that
//! share a file share in-flight state and belong in one builder). A phase that does not meet it is
//! a problem of the plan, named; the default stays one builder per phase.

use super::{PhaseTask, PlanPhase};
use crate::paths::{clean, overlap};

/// The fewest tasks that unlock a builder per task.
pub const MIN_TASKS: usize = 3;

/// The plan's phases with each per-task phase replaced by one phase per task (ids
/// `<phase>-t<k>`), or the problems that keep a phase from it.
pub fn expand(phases: Vec<PlanPhase>, problems: &mut Vec<String>) -> Vec<PlanPhase> {
    let mut out = Vec::new();
    for (i, p) in phases.into_iter().enumerate() {
        let name = format!("phase {} ({})", i + 1, p.phase_id);
        if !p.fresh_builder_per_task {
            if !p.tasks.is_empty() {
                problems.push(format!(
                    "{name}: tasks are listed without fresh_builder_per_task: true; set it to build each task with a builder of its own, or drop the tasks"
                ));
            }
            out.push(p);
            continue;
        }
        let found = trigger_problems(&name, &p.tasks);
        if !found.is_empty() {
            problems.extend(found);
            out.push(p);
            continue;
        }
        let n = p.tasks.len();
        for (k, t) in p.tasks.iter().enumerate() {
            out.push(task_phase(&p, t, k + 1, n));
        }
    }
    // A task's id may be a phase the plan lists too, before or after it.
    let mut seen = std::collections::BTreeSet::new();
    for p in &out {
        if !seen.insert(p.phase_id.as_str()) && is_task_phase(&p.phase_id) {
            problems.push(format!(
                "phase_id {} is both a phase of the plan and a task of a phase built per task: rename the phase",
                p.phase_id
            ));
        }
    }
    out
}

/// Whether a phase id is one a task of a per-task phase gets (`<phase>-t<k>`).
pub fn is_task_phase(id: &str) -> bool {
    id.rsplit_once("-t")
        .is_some_and(|(_, k)| !k.is_empty() && k.chars().all(|c| c.is_ascii_digit()))
}

/// What keeps `tasks` from the explicit trigger: fewer than three, a task without a title or
/// files, or a file two tasks touch.
fn trigger_problems(name: &str, tasks: &[PhaseTask]) -> Vec<String> {
    let mut found = Vec::new();
    if tasks.len() < MIN_TASKS {
        found.push(format!(
            "{name}: fresh_builder_per_task needs {MIN_TASKS} or more separable tasks, and {} are listed: build the phase with one builder (drop fresh_builder_per_task)",
            tasks.len()
        ));
    }
    for (k, t) in tasks.iter().enumerate() {
        if t.title.trim().is_empty() {
            found.push(format!("{name}: task {} has no title", k + 1));
        }
        if t.files.iter().all(|f| clean(f).is_empty()) {
            found.push(format!(
                "{name}: task {} lists no files: name the files it touches (no other task may touch them)",
                k + 1
            ));
        }
        for (j, other) in tasks.iter().enumerate().skip(k + 1) {
            let shared: Vec<&str> = t
                .files
                .iter()
                .filter(|f| other.files.iter().any(|o| overlap(f, o)))
                .map(|f| clean(f))
                .collect();
            if !shared.is_empty() {
                found.push(format!(
                    "{name}: tasks {} and {} both touch {}: they share in-flight state, so they are not separable; merge them into one task or keep the phase in one builder",
                    k + 1,
                    j + 1,
                    shared.join(", ")
                ));
            }
        }
    }
    found
}

/// Task `k` of `n` of phase `p` as a phase of its own.
fn task_phase(p: &PlanPhase, t: &PhaseTask, k: usize, n: usize) -> PlanPhase {
    let objective = match t.objective.trim() {
        "" => t.title.trim(),
        o => o,
    };
    let last = k == n;
    let mut exit_criteria = t.exit_criteria.clone();
    if exit_criteria.iter().all(|c| c.trim().is_empty()) {
        exit_criteria = vec![format!("{objective}: done")];
    }
    if last {
        exit_criteria.extend(p.exit_criteria.iter().cloned());
    }
    let when_last = |v: &Vec<String>| if last { v.clone() } else { Vec::new() };
    // A decision or a human action comes before the phase's first builder (`run/plan.rs`
    // asks it before the builder); a human verification after its last task.
    let checkpoint = match p.checkpoint_type.as_deref() {
        Some("decision" | "human_action") if k == 1 => p.checkpoint_type.clone(),
        Some("human_verify") if last => p.checkpoint_type.clone(),
        _ => None,
    };
    let seams = match t.test_seams.iter().any(|s| !s.trim().is_empty()) {
        true => t.test_seams.clone(),
        false => p.test_seams.clone(),
    };
    PlanPhase {
        phase_id: format!("{}-t{k}", p.phase_id),
        title: format!("{} — task {k} of {n}: {}", p.title, t.title.trim()),
        objective: format!(
            "{objective} (task {k} of {n} of phase {}, built by a builder of its own: {})",
            p.phase_id,
            p.objective.trim()
        ),
        files: t
            .files
            .iter()
            .filter(|f| !clean(f).is_empty())
            .cloned()
            .collect(),
        checks: when_last(&p.checks),
        exit_criteria,
        test_seams: seams,
        inputs: p.inputs.clone(),
        expected_artifacts: when_last(&p.expected_artifacts),
        checkpoint_type: checkpoint,
        fresh_builder_per_task: false,
        tasks: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(title: &str, files: &[&str]) -> PhaseTask {
        PhaseTask {
            title: title.into(),
            files: files.iter().map(|f| f.to_string()).collect(),
            ..PhaseTask::default()
        }
    }

    fn phase(tasks: Vec<PhaseTask>) -> PlanPhase {
        PlanPhase {
            phase_id: "phase-2".into(),
            title: "Importers".into(),
            objective: "import three formats".into(),
            checks: vec!["cargo test import".into()],
            exit_criteria: vec!["every format imports".into()],
            test_seams: vec!["import::run".into()],
            checkpoint_type: Some("human_verify".into()),
            fresh_builder_per_task: true,
            tasks,
            ..PlanPhase::default()
        }
    }

    #[test]
    fn three_separable_tasks_become_three_phases_the_last_carrying_the_phase_s_gates() {
        let mut problems = Vec::new();
        let out = expand(
            vec![phase(vec![
                task("CSV", &["src/csv.rs"]),
                task("JSON", &["src/json.rs"]),
                task("XML", &["src/xml.rs"]),
            ])],
            &mut problems,
        );
        assert!(problems.is_empty(), "{problems:?}");
        let ids: Vec<&str> = out.iter().map(|p| p.phase_id.as_str()).collect();
        assert_eq!(ids, ["phase-2-t1", "phase-2-t2", "phase-2-t3"]);
        assert_eq!(out[0].files, ["src/csv.rs"]);
        assert!(out[0].checks.is_empty());
        assert_eq!(out[0].checkpoint_type, None);
        assert_eq!(out[0].exit_criteria, ["CSV: done"]);
        assert!(out[1].objective.contains("task 2 of 3 of phase phase-2"));
        assert_eq!(out[2].checks, ["cargo test import"]);
        assert_eq!(out[2].exit_criteria, ["XML: done", "every format imports"]);
        assert_eq!(out[2].checkpoint_type.as_deref(), Some("human_verify"));
        // A decision is asked before the first task's builder.
        let mut p = phase(vec![
            task("a", &["a.rs"]),
            task("b", &["b.rs"]),
            task("c", &["c.rs"]),
        ]);
        p.checkpoint_type = Some("decision".into());
        let out = expand(vec![p], &mut problems);
        assert_eq!(out[0].checkpoint_type.as_deref(), Some("decision"));
        assert_eq!(out[2].checkpoint_type, None);
        assert!(is_task_phase("phase-2-t3") && !is_task_phase("phase-2") && !is_task_phase("x-t"));
    }

    #[test]
    fn a_folder_and_a_file_in_it_are_shared_and_a_later_phase_may_not_take_a_task_s_id() {
        let mut problems = Vec::new();
        expand(
            vec![phase(vec![
                task("a", &["src/import/"]),
                task("b", &["./src/import/csv.rs"]),
                task("c", &["c.rs"]),
            ])],
            &mut problems,
        );
        assert!(
            problems
                .iter()
                .any(|p| p.contains("tasks 1 and 2 both touch src/import")),
            "{problems:?}"
        );
        let mut problems = Vec::new();
        let later = PlanPhase {
            phase_id: "phase-2-t2".into(),
            ..PlanPhase::default()
        };
        expand(
            vec![
                phase(vec![
                    task("a", &["a.rs"]),
                    task("b", &["b.rs"]),
                    task("c", &["c.rs"]),
                ]),
                later,
            ],
            &mut problems,
        );
        assert!(
            problems
                .iter()
                .any(|p| p.contains("phase_id phase-2-t2 is both")),
            "{problems:?}"
        );
    }

    #[test]
    fn the_trigger_is_three_tasks_that_share_no_file() {
        let mut problems = Vec::new();
        expand(
            vec![phase(vec![task("a", &["a.rs"]), task("b", &["b.rs"])])],
            &mut problems,
        );
        assert!(
            problems[0].contains("needs 3 or more separable tasks, and 2"),
            "{problems:?}"
        );
        let mut problems = Vec::new();
        let out = expand(
            vec![phase(vec![
                task("a", &["a.rs", "mod.rs"]),
                task("b", &["b.rs"]),
                task("c", &["c.rs", "mod.rs"]),
            ])],
            &mut problems,
        );
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].contains("tasks 1 and 3 both touch mod.rs"),
            "{problems:?}"
        );
        assert_eq!(out.len(), 1);
        let mut problems = Vec::new();
        let mut p = phase(Vec::new());
        p.fresh_builder_per_task = false;
        p.tasks = vec![task("a", &["a.rs"])];
        expand(vec![p], &mut problems);
        assert!(
            problems[0].contains("without fresh_builder_per_task"),
            "{problems:?}"
        );
    }
}
