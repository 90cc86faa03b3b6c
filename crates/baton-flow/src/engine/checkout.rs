//! Main's checkout as the Flow expects to find it.

use super::*;

/// Main's checkout as Flow judges it, limited to `pathspec` when it is not empty. Untracked
/// files under a `.baton/` folder do not count: they are the user's own roles and config (which
/// the README has them create), not changes to the branch. Changed tracked files there do.
pub(super) fn main_status(main: &Git, pathspec: &[&str]) -> Result<CheckoutStatus, GitError> {
    Ok(main
        .checkout_status(pathspec)?
        .without_untracked_in(".baton"))
}

/// The changed paths of a checkout, at most 50 of them, for a message.
pub(super) fn listing(st: &CheckoutStatus) -> String {
    let shown: Vec<&str> = st.changes.iter().take(50).map(String::as_str).collect();
    let mut s = shown.join("\n");
    if st.changes.len() > 50 {
        s.push_str(&format!("\n… and {} more", st.changes.len() - 50));
    }
    bounded(&s, EVIDENCE_BOUND)
}

/// Why Main's checkout is not where the Flow left it (on its branch, at `main_oid`, clean), as
/// the message that halts the driver; `None` when it is. `then` is the step that follows the fix
/// (e.g. "run `baton flow resume`").
pub(super) fn main_problem(state: &FlowState, st: &CheckoutStatus, then: &str) -> Option<String> {
    if st.branch.as_deref() != Some(state.main_branch.as_str()) {
        return Some(format!(
            "Main's checkout {} is on {} instead of {}: check out {} again, then {then}",
            state.repo_root.display(),
            st.branch.as_deref().unwrap_or("a detached HEAD"),
            state.main_branch,
            state.main_branch
        ));
    }
    let head = st.head.as_deref().unwrap_or_default();
    if head != state.main_oid {
        return Some(format!(
            "Main ({}) moved outside the Flow: the Flow left it at {}, it is now at {}. \
             Put {} back at {} (or integrate the remaining units by hand and abandon the Flow), then {then}",
            state.main_branch,
            short(&state.main_oid),
            short(head),
            state.main_branch,
            short(&state.main_oid)
        ));
    }
    if !st.clean() {
        return Some(format!(
            "Main's checkout {} has uncommitted changes; commit or stash them, then {then}:\n{}",
            state.repo_root.display(),
            listing(st)
        ));
    }
    None
}

/// What the driver does after the fix of a Main problem it halted on.
pub(super) const THEN_RESUME: &str = "run `baton flow resume`";

/// Main's checkout as read from `st` now, and, for a Flow that would go on from it (interrupted or
/// paused), why it cannot yet and what to do, exactly as the driver would find it.
pub(super) fn main_now(state: &FlowState, phase: Phase, st: CheckoutStatus) -> MainNow {
    let then = match phase {
        Phase::Interrupted => Some(THEN_RESUME),
        Phase::Paused => {
            Some("run `baton flow continue --guidance TEXT` (or `baton flow abandon`)")
        }
        Phase::Running | Phase::Completed | Phase::Failed | Phase::Abandoned => None,
    };
    // A unit caught between its merge and the record of it: the driver records it as merged.
    let merged_unrecorded = st.branch.as_deref() == Some(state.main_branch.as_str())
        && state.units.iter().any(|u| {
            u.status == UnitStatus::Merging && u.merging_tip.is_some() && u.merging_tip == st.head
        });
    let problem = match then {
        Some(then) if !merged_unrecorded => main_problem(state, &st, then),
        Some(_) | None => None,
    };
    MainNow {
        branch: st.branch,
        head: st.head,
        problem,
    }
}

/// The untracked paths of a worktree, as `git status` names them (best effort: none on error).
pub(super) fn untracked_paths(wt: &Git) -> Vec<String> {
    match wt.checkout_status(&[]) {
        Ok(st) => st.untracked().map(str::to_string).collect(),
        Err(e) => {
            tracing::warn!("cannot list the untracked files after validation: {e}");
            Vec::new()
        }
    }
}
