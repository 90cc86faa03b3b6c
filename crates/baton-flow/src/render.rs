//! Text for people: one line per event while a Flow runs, and a report of a Flow's state with
//! the next step to take.

use crate::engine::FlowStatus;
use crate::event::{CleanItem, FailureKind, FlowEvent, Record};
use crate::state::{FlowEnd, FlowState, Phase, UnitState, UnitStatus};
use crate::validate::bounded;

fn short(oid: &str) -> &str {
    oid.get(..12).unwrap_or(oid)
}

fn clean(text: &str) -> String {
    bounded(text, 4096)
}

/// One line describing an event, or `None` for bookkeeping events not worth showing.
pub fn describe(r: &Record) -> Option<String> {
    let line = match &r.event {
        FlowEvent::Created {
            id,
            main_branch,
            main_oid,
            units,
            workflow,
            ..
        } => format!(
            "flow {id}: {} unit(s){} onto {main_branch} at {}",
            units.len(),
            workflow.map_or(String::new(), |w| format!(
                ", each a {} workflow",
                w.as_str()
            )),
            short(main_oid)
        ),
        FlowEvent::Driver { .. }
        | FlowEvent::WorktreeCreating { .. }
        | FlowEvent::ImplementerSpawned { .. } => return None,
        FlowEvent::WorktreeCreated { unit, path, .. } => {
            format!("{unit}: worktree {}", path.display())
        }
        FlowEvent::ImplementerStarted { unit, attempt, .. } => {
            if *attempt == 0 {
                format!("{unit}: implementer started")
            } else {
                format!("{unit}: repair implementer started")
            }
        }
        FlowEvent::ImplementerFinished { unit, result, .. } => format!(
            "{unit}: implementer {} in {:.1}s",
            if result.ok { "finished" } else { "failed" },
            result.duration_ms as f64 / 1000.0
        ),
        FlowEvent::ImplementersSettled => {
            "all implementers settled; integrating in declared order".into()
        }
        FlowEvent::Rebasing { unit, onto, .. } => format!("{unit}: rebasing onto {}", short(onto)),
        FlowEvent::Rebased { unit, head, .. } => format!("{unit}: rebased, tip {}", short(head)),
        FlowEvent::Derived {
            unit,
            base,
            noop: true,
            ..
        } => format!(
            "{unit}: the rebase dropped every commit (no-op at {})",
            short(base)
        ),
        FlowEvent::Derived {
            unit,
            base,
            tip,
            commits,
            ..
        } => format!(
            "{unit}: {} commit(s) {}..{}",
            commits.len(),
            short(base),
            short(tip)
        ),
        FlowEvent::Validating { unit, .. } => format!("{unit}: validating"),
        FlowEvent::Validated { unit, results, .. } => {
            format!("{unit}: validation passed ({} command(s))", results.len())
        }
        FlowEvent::Reviewing { unit, .. } => format!("{unit}: reviewing"),
        FlowEvent::Reviewed { unit, approved, .. } => {
            if *approved {
                format!("{unit}: reviewer answered PASS")
            } else {
                format!("{unit}: reviewer reported findings")
            }
        }
        FlowEvent::Blocked { unit, reason, .. } => format!("{unit}: blocked ({})", reason.label()),
        FlowEvent::RepairStarted { unit, .. } => format!("{unit}: repair started"),
        FlowEvent::Merging { unit, tip } => format!("{unit}: fast-forwarding to {}", short(tip)),
        FlowEvent::Merged {
            unit,
            tip,
            warning,
            recovered,
        } => {
            let mut s = format!("{unit}: merged {}", short(tip));
            if *recovered {
                s.push_str(" (found already merged)");
            }
            if let Some(w) = warning {
                s.push_str(&format!(" — warning: {}", clean(w)));
            }
            s
        }
        FlowEvent::Cleaning { .. } => return None,
        FlowEvent::Finished {
            unit,
            outcome,
            warnings,
        } => {
            let mut s = format!(
                "{unit}: {}",
                match outcome {
                    crate::event::UnitOutcome::Integrated => "integrated",
                    crate::event::UnitOutcome::NoOp => "no-op, cleaned up",
                }
            );
            for w in warnings {
                s.push_str(&format!(" — warning: {}", clean(w)));
            }
            s
        }
        FlowEvent::SetupAborting { unit, message } => format!(
            "{unit}: cannot create its worktree ({}); removing the worktrees already created",
            clean(message)
        ),
        FlowEvent::Landing { unit, main } => {
            format!("{unit}: landing onto Main at {}", short(main))
        }
        FlowEvent::Halted { reason } => format!("stopped: {}", clean(reason)),
        FlowEvent::Completed { .. } => "completed".into(),
        FlowEvent::Failed { kind, unit, .. } => match unit {
            Some(u) => format!("failed at {u}: {}", kind.label()),
            None => format!("failed: {}", kind.label()),
        },
        FlowEvent::Abandoned { .. } => "abandoned".into(),
        FlowEvent::FlowCleaning { items, .. } => {
            let n = items.iter().filter(|i| i.kept.is_none()).count();
            format!("clean: removing the worktree and branch of {n} unit(s)")
        }
        FlowEvent::FlowCleaned { items } => clean_summary(items),
    };
    Some(line)
}

/// `clean: removed …; kept …` for a `flow.cleaned` record.
fn clean_summary(items: &[CleanItem]) -> String {
    let removed: Vec<&str> = items
        .iter()
        .filter(|i| i.kept.is_none())
        .map(|i| i.unit.as_str())
        .collect();
    let mut s = if removed.is_empty() {
        "clean: removed nothing".to_string()
    } else {
        format!(
            "clean: removed the worktree and branch of {}",
            removed.join(", ")
        )
    };
    for i in items {
        if let Some(why) = &i.kept {
            s.push_str(&format!("; kept {}: {}", i.unit, clean(why)));
        }
    }
    s
}

fn unit_line(n: usize, u: &UnitState) -> String {
    let mut s = format!(
        "  {n}. {} ({}): {}",
        u.spec.id,
        clean(&u.spec.name),
        u.status.label()
    );
    if let (UnitStatus::Blocked, Some(b)) = (u.status, &u.block) {
        s.push_str(&format!(" — {}", b.reason.label()));
        if b.attempt >= 1 {
            s.push_str(" after its repair");
        }
    }
    match (&u.base, &u.tip) {
        (Some(b), Some(t)) if b != t => {
            s.push_str(&format!("  {}..{}", short(b), short(t)));
            if !u.commits.is_empty() {
                s.push_str(&format!(" ({} commit(s))", u.commits.len()));
            }
        }
        (Some(b), Some(_)) => s.push_str(&format!("  at {}", short(b))),
        _ => {}
    }
    s
}

/// The state of a Flow, with the evidence of a block or failure and the next step.
pub fn report(status: &FlowStatus) -> String {
    let st = &status.state;
    // Where the log left Main, then where git shows it now (the two differ when Main moved).
    let now = main_now(status);
    let mut out = format!(
        "Flow {}: {} — {} unit(s) onto {} (started at {}, left at {}{now})\n",
        st.id,
        status.phase.as_str(),
        st.units.len(),
        st.main_branch,
        short(&st.start_oid),
        short(&st.main_oid)
    );
    // A Flow on Temporal: this record is what this checkout last saw of it.
    if let Some(t) = &st.temporal {
        out.push_str(&format!(
            "  on Temporal, landing on {} at {}; as this checkout last saw it ({}): `baton flow status --engine temporal {}` asks Temporal\n",
            t.target, t.remote, st.updated, st.id
        ));
    }
    // A failed setup removed its worktrees (its message names any it could not remove).
    let setup_failed = matches!(
        &st.end,
        Some(FlowEnd::Failed {
            kind: FailureKind::Setup,
            ..
        })
    );
    for (i, u) in st.units.iter().enumerate() {
        push_unit(&mut out, i + 1, u, setup_failed);
    }
    push_end(&mut out, status, setup_failed);
    if let Some(c) = &st.clean {
        let text = if c.done {
            clean_summary(&c.items)
        } else {
            "clean: cut short; `baton flow clean` finishes it".to_string()
        };
        out.push_str(&format!(
            "Cleaned at {}{}: {}\n",
            c.at,
            if c.force { " (--force)" } else { "" },
            text.trim_start_matches("clean: ")
        ));
    }
    out.trim_end().to_string()
}

/// Where git shows Main's checkout now, as the end of the report's first line (empty when it
/// could not be read).
fn main_now(status: &FlowStatus) -> String {
    match &status.main_now {
        None => String::new(),
        Some(m) => {
            let head = m.head.as_deref().map_or("no commit", short);
            match m.branch.as_deref() {
                Some(b) if b == status.state.main_branch => format!("; {b} is now at {head}"),
                Some(b) => format!("; the checkout is now on {b} at {head}"),
                None => format!("; the checkout is now at a detached HEAD, {head}"),
            }
        }
    }
}

/// Unit `n` in the report: its line, its worktree (when kept), the evidence of its block or
/// failure, and its warnings.
fn push_unit(out: &mut String, n: usize, u: &UnitState, setup_failed: bool) {
    out.push_str(&unit_line(n, u));
    out.push('\n');
    let keeps_worktree =
        !setup_failed && !u.status.is_done() && !matches!(u.status, UnitStatus::Pending);
    if u.cleaned {
        out.push_str("     worktree and branch removed by `baton flow clean`\n");
    } else if keeps_worktree {
        if let (Some(p), Some(b)) = (&u.path, &u.branch) {
            out.push_str(&format!("     worktree {} (branch {b})\n", p.display()));
        }
    }
    if let (UnitStatus::Blocked | UnitStatus::Failed, Some(b)) = (u.status, &u.block) {
        out.push_str("     evidence:\n");
        for line in clean(&b.evidence).lines() {
            out.push_str(&format!("       {line}\n"));
        }
    }
    for w in &u.warnings {
        out.push_str(&format!("     warning: {}\n", clean(w)));
    }
}

/// How the Flow ended, or (while it has not) what drives it or the next step to take.
fn push_end(out: &mut String, status: &FlowStatus, setup_failed: bool) {
    let st = &status.state;
    let main_problem = status.main_now.as_ref().and_then(|m| m.problem.as_deref());
    match (&st.end, status.phase) {
        (
            Some(FlowEnd::Failed {
                kind,
                unit,
                message,
            }),
            _,
        ) => {
            out.push_str(&format!(
                "Failed{}: {}.\n{}\n",
                unit.as_ref()
                    .map(|u| format!(" at {u}"))
                    .unwrap_or_default(),
                kind.label(),
                clean(message)
            ));
            if !setup_failed {
                push_after_failure(out, st, unit.as_deref());
            }
        }
        (Some(FlowEnd::Abandoned { reason }), _) => {
            out.push_str(&format!(
                "Abandoned{}. The worktrees listed above are kept: `baton flow clean --yes` removes the ones holding no work of their own; add `--force` for those with commits Main lacks or uncommitted changes.\n",
                reason
                    .as_ref()
                    .map(|r| format!(": {}", clean(r)))
                    .unwrap_or_default()
            ));
        }
        (Some(FlowEnd::Completed { .. }), _) => {}
        (None, Phase::Paused) => match main_problem {
            // `continue` would repair the unit, then stop at Main: say so first.
            Some(p) => out.push_str(&format!("Next: {}\n", clean(p))),
            None => out.push_str(
                "Next: repair the blocked unit once with `baton flow continue --guidance \"…\" [--model-class CLASS]` \
                 (the tool `delegate_flow_continue`), or give the Flow up with `baton flow abandon`.\n",
            ),
        },
        (None, Phase::Interrupted) => {
            if let Some(r) = &st.halted {
                out.push_str(&format!("Stopped: {}\n", clean(r)));
            } else {
                out.push_str("The process driving it is gone.\n");
            }
            match main_problem {
                // `resume` would stop at once: what to do first, from Main as it is now.
                Some(p) => out.push_str(&format!("Next: {}\n", clean(p))),
                None => out.push_str(
                    "Next: `baton flow resume` continues from the first unit not yet integrated (or `baton flow abandon`).\n",
                ),
            }
        }
        (None, Phase::Running) => {
            if let Some(pid) = st.driver_pid {
                out.push_str(&format!("Driven by process {pid}.\n"));
            }
        }
        (None, Phase::Completed | Phase::Failed | Phase::Abandoned) => {}
    }
}

/// After a failure (not of the setup): the later units that can land on their own, and what
/// becomes of the kept worktrees.
fn push_after_failure(out: &mut String, st: &FlowState, failed: Option<&str>) {
    // The later units whose implementation is done can land on their own.
    let landable: Vec<&str> = st
        .units
        .iter()
        .filter(|u| {
            !u.status.is_done()
                && failed != Some(u.spec.id.as_str())
                && u.implementer.as_ref().is_some_and(|r| r.ok)
                && u.path.is_some()
        })
        .map(|u| u.spec.id.as_str())
        .collect();
    if !landable.is_empty() {
        out.push_str(&format!(
            "Implemented and not yet landed: {}. Land one without running it again: `baton flow land {} UNIT` (rebased onto Main as it is, validated, reviewed when asked, merged fast-forward; resolve the failed unit by hand on Main first if a later unit needs it).\n",
            landable.join(", "),
            st.id
        ));
    }
    out.push_str(
        "Units already integrated stay integrated. The worktrees listed above are kept: \
         inspect them, reslice the work, and start a new Flow. To remove them: \
         `baton flow clean --yes` removes the ones holding no work of their own; a unit \
         with commits Main lacks or uncommitted changes is kept until `--force` is added.\n",
    );
}
