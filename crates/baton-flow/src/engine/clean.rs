//! `baton flow clean`: removing the worktrees and branches an ended Flow kept.
//!
//! Everything is read from git when the command runs, not from the log: which of the unit
//! worktrees and branches still exist, how many of their commits Main's head does not reach, and
//! whether a worktree has uncommitted changes. Without `force`, a unit whose branch holds unmerged
//! commits or whose worktree has uncommitted changes is kept whole (its worktree and its branch).
//! The clean is recorded in the Flow's log (`flow.cleaning` before git is touched, `flow.cleaned`
//! after); as each step is read from git again, a clean cut short is finished by the next one.

use super::entry::{open_repo, readable_flows, refuse_on_temporal};
use super::*;
use crate::event::CleanItem;

/// What a clean of one ended Flow would remove (items without `kept`) and keep.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CleanPlan {
    pub id: String,
    pub phase: Phase,
    pub main_branch: String,
    /// Main's head now, which decides what is merged.
    pub main_head: String,
    pub items: Vec<CleanItem>,
}

impl CleanPlan {
    /// The items to remove.
    pub fn removals(&self) -> impl Iterator<Item = &CleanItem> {
        self.items.iter().filter(|i| i.kept.is_none())
    }
}

/// One planned item and what its removal needs.
struct Planned {
    item: CleanItem,
    /// The worktree directory is gone: only git's record of it is left (`git worktree prune`).
    worktree_gone: bool,
    /// The worktree's only untracked paths are the unit validation's own output, which a
    /// non-forced `git worktree remove` refuses.
    validation_output: bool,
}

fn git_with(git_env: &[(String, String)]) -> impl Fn(&Path) -> Git + '_ {
    move |d: &Path| {
        git_env
            .iter()
            .fold(Git::new(d), |g, (k, v)| g.with_env(k, v))
    }
}

/// The Flows to clean: `id` (any ended Flow; a running, paused or interrupted one is refused), or
/// every abandoned or failed Flow of the repository at `cwd` that still has a worktree or branch.
pub fn clean_plan(
    cwd: &Path,
    id: Option<&str>,
    force: bool,
    git_env: &[(String, String)],
) -> Result<Vec<CleanPlan>, FlowError> {
    let git = git_with(git_env);
    let repo = open_repo(&git, cwd)?;
    let driving = RepoLock::is_held(&repo.common);
    match id {
        Some(id) => {
            let state = repo.store.load(id)?;
            refuse_on_temporal(&state)?;
            refuse_unless_ended(&state, driving)?;
            let planned = plan_flow(&git(&state.repo_root), &state, force)?;
            Ok(vec![planned.0])
        }
        None => {
            let mut plans = Vec::new();
            // A Flow on Temporal left nothing in this checkout to clean.
            let local = readable_flows(&repo.store)
                .into_iter()
                .filter(|(_, s)| s.temporal.is_none());
            for (_, state) in local {
                match state.phase(driving) {
                    Phase::Failed | Phase::Abandoned => {}
                    Phase::Running | Phase::Paused | Phase::Interrupted | Phase::Completed => {
                        continue
                    }
                }
                let (plan, _) = plan_flow(&git(&state.repo_root), &state, force)?;
                if !plan.items.is_empty() {
                    plans.push(plan);
                }
            }
            Ok(plans)
        }
    }
}

/// Removes the units' worktrees and branches of Flow `id` that the confirmed plan listed for
/// removal (`confirmed`: their unit ids), checking each against git again first, and records the
/// clean in the Flow's log. An item that is no longer safe to remove is kept and says why.
/// Returns the Flow's status and the confirmed items as they ended (removed, or kept with why).
pub fn clean(
    cwd: &Path,
    id: &str,
    confirmed: &[String],
    force: bool,
    git_env: &[(String, String)],
    observer: Option<&Observer>,
) -> Result<(FlowStatus, Vec<CleanItem>), FlowError> {
    let git = git_with(git_env);
    let repo = open_repo(&git, cwd)?;
    let mut state = repo.store.load(id)?;
    refuse_on_temporal(&state)?;
    refuse_unless_ended(&state, RepoLock::is_held(&repo.common))?;
    // One clean of a Flow at a time; a running Flow (which holds the repository's lock) is another
    // Flow's and never writes this log.
    let flow_dir = repo.store.flow_dir(id)?;
    baton_state::create_own_dir(&flow_dir).map_err(|source| {
        FlowError::Lock(LockError::Io(baton_state::LockError::Io {
            path: flow_dir.clone(),
            source,
        }))
    })?;
    let _lock = baton_state::FileLock::try_acquire(&flow_dir.join("clean.lock"))
        .map_err(|e| FlowError::Lock(LockError::Io(e)))?
        .ok_or_else(|| {
            FlowError::Refused(format!(
                "another `baton flow clean` of Flow {id} is running; wait for it"
            ))
        })?;
    let main = git(&state.repo_root);
    let (_, planned) = plan_flow(&main, &state, force)?;
    let mut todo: Vec<Planned> = planned
        .into_iter()
        .filter(|p| confirmed.contains(&p.item.unit))
        .collect();
    if todo.is_empty() {
        let phase = state.phase(false);
        return Ok((status_with_main(&main, state, phase), Vec::new()));
    }
    let mut log = repo.store.open(id, None)?;
    let mut emit = |state: &mut FlowState, ev: FlowEvent| -> Result<(), FlowError> {
        let written = log.write(&ev)?;
        state.apply(&ev, written.record.seq, &written.record.at);
        if let Some(obs) = observer {
            obs(Notice::Event(&written.record));
        }
        Ok(())
    };
    emit(
        &mut state,
        FlowEvent::FlowCleaning {
            force,
            items: todo.iter().map(|p| p.item.clone()).collect(),
        },
    )?;
    for p in todo.iter_mut().filter(|p| p.item.kept.is_none()) {
        if let Err(why) = remove(&main, p, force) {
            p.item.kept = Some(why);
        }
    }
    let items: Vec<CleanItem> = todo.into_iter().map(|p| p.item).collect();
    emit(
        &mut state,
        FlowEvent::FlowCleaned {
            items: items.clone(),
        },
    )?;
    if let Err(e) = repo.store.write_snapshot(&state) {
        tracing::warn!("cannot write the Flow snapshot: {e}");
    }
    let phase = state.phase(false);
    Ok((status_with_main(&main, state, phase), items))
}

fn refuse_unless_ended(state: &FlowState, driving: bool) -> Result<(), FlowError> {
    let phase = state.phase(driving);
    match phase {
        Phase::Completed | Phase::Failed | Phase::Abandoned => Ok(()),
        Phase::Running => Err(FlowError::WrongPhase(format!(
            "Flow {} is running: `baton flow clean` removes what an ended Flow kept; let it end, or stop it and give it up with `baton flow abandon {}` first",
            state.id, state.id
        ))),
        Phase::Paused | Phase::Interrupted => Err(FlowError::WrongPhase(format!(
            "Flow {} is {}: `baton flow clean` removes what an ended Flow kept; give it up with `baton flow abandon {}` first (nothing was touched)",
            state.id,
            phase.as_str(),
            state.id
        ))),
    }
}

/// What of each unit is left in git, and whether it may go.
fn plan_flow(
    main: &Git,
    state: &FlowState,
    force: bool,
) -> Result<(CleanPlan, Vec<Planned>), FlowError> {
    let main_head = main.branch_oid(&state.main_branch)?.ok_or_else(|| {
        FlowError::Refused(format!(
            "branch {} (the Flow's Main) no longer exists, so what is merged cannot be told; restore it first",
            state.main_branch
        ))
    })?;
    let listed = main.worktree_list()?;
    let mut planned = Vec::new();
    for u in &state.units {
        let entry = u.path.as_ref().and_then(|path| {
            let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
            listed
                .iter()
                .find(|w| w.path == *path || w.path == canonical)
        });
        let branch = match &u.branch {
            Some(b) if main.branch_exists(b)? => Some(b.clone()),
            Some(_) | None => None,
        };
        if entry.is_none() && branch.is_none() {
            continue;
        }
        let mut tips: Vec<String> = Vec::new();
        if let Some(b) = &branch {
            tips.extend(main.branch_oid(b)?);
        }
        let worktree_gone = entry.is_some_and(|w| w.prunable.is_some() || !w.path.exists());
        let mut uncommitted = Vec::new();
        let mut validation_output = false;
        if let (Some(w), false) = (entry, worktree_gone) {
            tips.extend(w.head.clone());
            let st = main.at(&w.path).checkout_status(&[])?;
            validation_output = !st.clean();
            uncommitted = st
                .changes
                .into_iter()
                .filter(|c| {
                    c.strip_prefix("?? ")
                        .is_none_or(|p| !u.validation_untracked.iter().any(|v| v == p))
                })
                .collect();
            validation_output &= uncommitted.is_empty();
        }
        tips.dedup();
        let mut unmerged: Vec<String> = Vec::new();
        for tip in &tips {
            for c in main.commits_between(&main_head, tip)? {
                if !unmerged.contains(&c) {
                    unmerged.push(c);
                }
            }
        }
        let mut why = Vec::new();
        if !force {
            if !unmerged.is_empty() {
                why.push(format!(
                    "branch {} holds {} commit(s) not merged into {}; `--force` removes it",
                    branch.as_deref().unwrap_or("(gone)"),
                    unmerged.len(),
                    state.main_branch
                ));
            }
            if !uncommitted.is_empty() {
                why.push(format!(
                    "worktree {} has uncommitted changes ({}); `--force` removes it",
                    entry.map_or(String::new(), |w| w.path.display().to_string()),
                    uncommitted.join(", ")
                ));
            }
        }
        planned.push(Planned {
            item: CleanItem {
                unit: u.id().to_string(),
                worktree: entry.map(|w| w.path.clone()),
                branch,
                unmerged: unmerged.len(),
                uncommitted,
                kept: (!why.is_empty()).then(|| why.join("; ")),
            },
            worktree_gone,
            validation_output,
        });
    }
    let plan = CleanPlan {
        id: state.id.clone(),
        phase: state.phase(false),
        main_branch: state.main_branch.clone(),
        main_head,
        items: planned.iter().map(|p| p.item.clone()).collect(),
    };
    Ok((plan, planned))
}

/// Removes one unit's worktree, then its branch; the error says what was kept and why.
fn remove(main: &Git, p: &Planned, force: bool) -> Result<(), String> {
    if let Some(path) = &p.item.worktree {
        if p.worktree_gone {
            main.worktree_prune().map_err(|e| {
                format!("git worktree prune failed: {}", first_line(&e.to_string()))
            })?;
        } else {
            main.worktree_remove(path, force || p.validation_output)
                .map_err(|e| {
                    format!(
                        "git refused to remove the worktree {} ({}); the branch is kept with it",
                        path.display(),
                        first_line(&e.to_string())
                    )
                })?;
            if let Some(parent) = path.parent() {
                let _ = std::fs::remove_dir(parent);
            }
        }
    }
    if let Some(branch) = &p.item.branch {
        // Forced: what is merged was decided against Main's head above, not against whatever
        // branch the main checkout is on (which `git branch -d` would use).
        match main.branch_delete(branch, true) {
            Ok(()) => {}
            Err(e) if e.stderr().is_some_and(|s| s.contains("not found")) => {}
            Err(e) => {
                return Err(format!(
                    "git refused to delete branch {branch} ({})",
                    first_line(&e.to_string())
                ))
            }
        }
    }
    Ok(())
}
