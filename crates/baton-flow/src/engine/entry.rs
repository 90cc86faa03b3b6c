//! The entry points: start, continue, resume, land, abandon, status, and taking over a Flow.

use super::checkout::{listing, main_status};
use super::*;

/// The repository a Flow works on, found from a working directory.
pub(super) struct Repo {
    pub(super) toplevel: PathBuf,
    pub(super) common: PathBuf,
    pub(super) store: FlowStore,
}

pub(super) fn open_repo(env_git: &dyn Fn(&Path) -> Git, cwd: &Path) -> Result<Repo, FlowError> {
    let probe = env_git(cwd);
    let toplevel = match probe.toplevel() {
        Ok(t) => t,
        Err(GitError::NotARepo { .. }) => {
            return Err(FlowError::Refused(format!(
                "{} is not inside a git repository: Flow lands its units on a git branch; run it from a repository",
                cwd.display()
            )))
        }
        Err(e) => return Err(FlowError::Refused(format!("cannot read the repository: {e}"))),
    };
    let toplevel = std::fs::canonicalize(&toplevel).unwrap_or(toplevel);
    // Resolved once for the whole Flow: every later git call in Main reads this repository's
    // git dir (a `.git` replaced or a `commondir` created meanwhile is refused or not read), and
    // what it learned of the repository's config is kept while that config is unchanged.
    baton_git::pin::pin(&toplevel)
        .map_err(|e| FlowError::Refused(format!("cannot read the repository: {e}")))?;
    let common = env_git(&toplevel)
        .git_common_dir()
        .map_err(|e| FlowError::Refused(format!("cannot read the repository: {e}")))?;
    // One store per repository, as there is one lock per repository: the logs live in the main
    // worktree whichever checkout a command runs in (in the git directory of a bare repository).
    let main_worktree = env_git(&toplevel)
        .worktree_list()
        .ok()
        .and_then(|list| list.into_iter().next());
    let store = match main_worktree {
        Some(w) if !w.bare => FlowStore::for_repo(&w.path),
        Some(_) => FlowStore::new(baton_state::StateDir::at(common.join("baton"))),
        None => FlowStore::for_repo(&toplevel),
    };
    Ok(Repo {
        store,
        toplevel,
        common,
    })
}

/// A new Flow id: UTC creation time and 4 random hex digits, e.g. `20261202-134115-9f2c`.
pub fn new_flow_id() -> String {
    let now = time::OffsetDateTime::now_utc();
    let rand = uuid::Uuid::new_v4().simple().to_string();
    format!(
        "{:04}{:02}{:02}-{:02}{:02}{:02}-{}",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second(),
        &rand[..4]
    )
}

/// The worktree id (and branch `baton/<id>`) of a unit.
pub fn unit_worktree_id(flow_id: &str, unit_id: &str) -> String {
    format!("flow-{flow_id}-{unit_id}")
}

/// Starts a Flow in the repository of `env.delegate.cwd` and drives it until it completes, pauses
/// on a block, fails, or is cancelled. Input and every precondition are checked before anything
/// changes; a refusal is an `Err` with [`FlowError::is_refusal`].
pub async fn start(
    env: &FlowEnv,
    units: &[UnitSpec],
    cancel: &CancellationToken,
) -> Result<FlowStatus, FlowError> {
    start_as(env, units, None, cancel).await
}

/// [`start`], each unit implemented by `workflow` (`Some(Build)`: a whole gated BUILD workflow in
/// the unit's worktree) instead of one implementer child.
pub async fn start_as(
    env: &FlowEnv,
    units: &[UnitSpec],
    workflow: Option<UnitWorkflow>,
    cancel: &CancellationToken,
) -> Result<FlowStatus, FlowError> {
    // The same checks as a units file, whatever the caller built.
    let value = serde_json::to_value(units).map_err(|e| InputError {
        field: "units".into(),
        message: e.to_string(),
    })?;
    let units = parse_units(&value)?;

    let git = |d: &Path| env.git(d);
    let repo = open_repo(&git, &env.delegate.cwd)?;
    let main = env.git(&repo.toplevel);
    // The lock first: every check below must still hold when the Flow starts. Nothing is changed
    // before the last refusal.
    let mut lock = acquire_off_runtime(&repo.common).await?;
    refuse_if_active(&repo.store)?;
    // Flow's own state is not yet excluded the first time: leave it out of the check.
    let st = main_status(&main, &[":(exclude,top).baton/state"])
        .map_err(|e| FlowError::Refused(format!("cannot read the repository: {e}")))?;
    let Some(main_branch) = st.branch.clone() else {
        return Err(FlowError::Refused(
            "HEAD is detached: check out the branch the units should land on, then start the Flow"
                .into(),
        ));
    };
    let Some(main_oid) = st.head.clone() else {
        return Err(FlowError::Refused(format!(
            "branch {main_branch} has no commits yet: commit a first version, then start the Flow"
        )));
    };
    if let Ok(Some(op)) = main.operation_in_progress() {
        return Err(FlowError::Refused(format!(
            "a {op} is in progress in {}: finish or abort it first",
            repo.toplevel.display()
        )));
    }
    if !st.clean() {
        return Err(FlowError::Refused(format!(
            "the working tree has uncommitted changes; commit or stash them first:\n{}",
            listing(&st)
        )));
    }

    // Rebasing a unit onto an advanced Main creates commits: find out now, not after the implementers.
    if units.len() > 1 {
        if let Err(e) = main.run(["var", "GIT_COMMITTER_IDENT"]) {
            return Err(FlowError::Refused(format!(
                "git has no committer identity, which rebasing units needs: set user.name and user.email ({})",
                e.stderr().map(str::trim).unwrap_or_default()
            )));
        }
    }

    let implementer = resolve_role(env, "implementer")?;
    let reviewer = if units.iter().any(|u| u.review.is_some()) {
        Some(resolve_role(env, "reviewer")?)
    } else {
        None
    };
    main.add_exclude(STATE_EXCLUDE)
        .map_err(|e| FlowError::Refused(format!("cannot exclude {STATE_EXCLUDE} from git: {e}")))?;

    let id = new_flow_id();
    let flow_dir = repo.store.flow_dir(&id)?;
    let implementer = freeze(&flow_dir, 0, implementer)?;
    let reviewer = reviewer.map(|r| freeze(&flow_dir, 1, r)).transpose()?;
    lock.note(&id);

    let created = FlowEvent::Created {
        id: id.clone(),
        created: now_rfc3339(),
        repo_root: repo.toplevel.clone(),
        main_branch,
        main_oid,
        worktree_root: env.delegate.worktree_root.clone(),
        units,
        implementer: Some(implementer),
        reviewer,
        workflow,
        temporal: None,
    };
    let state = FlowState::created(&created, 1, &now_rfc3339()).ok_or_else(|| {
        FlowError::Refused("internal: the first event is not flow.created".into())
    })?;
    let log = repo.store.create(&id, env.crash.clone())?;
    let run = Run {
        env,
        store: repo.store.clone(),
        log: Mutex::new(log),
        state: Mutex::new(state),
        main,
        cancel,
        _lock: lock,
        main_left_at: Mutex::new(None),
        cleaning: Mutex::new(None),
    };
    run.emit(created)?;
    run.emit(FlowEvent::Driver {
        pid: std::process::id(),
        command: DriverCommand::Start,
    })?;
    run.drive().await?;
    Ok(run.status())
}

/// Repairs the blocked unit of the paused Flow (`id`, or the repository's active one) once: its
/// frozen implementer runs again in the same worktree with the original task, the validation, the
/// block's evidence and `guidance`; `model_class` replaces the unit's class for this repair.
pub async fn continue_flow(
    env: &FlowEnv,
    id: Option<&str>,
    guidance: &str,
    model_class: Option<ModelClass>,
    cancel: &CancellationToken,
) -> Result<FlowStatus, FlowError> {
    if guidance.trim().is_empty() {
        return Err(InputError {
            field: "guidance".into(),
            message: "is empty: say what the implementer should do differently".into(),
        }
        .into());
    }
    let (run, state) = take_over_from_async(env, id, cancel).await?;
    let Some(i) = state.paused_unit() else {
        return Err(FlowError::WrongPhase(format!(
            "Flow {} is {}: `continue` repairs the blocked unit of a paused Flow{}",
            state.id,
            state.phase(false).as_str(),
            hint(&state)
        )));
    };
    let u = &state.units[i];
    run.emit(FlowEvent::Driver {
        pid: std::process::id(),
        command: DriverCommand::Continue,
    })?;
    run.emit(FlowEvent::RepairStarted {
        unit: u.spec.id.clone(),
        attempt: u.attempt + 1,
        guidance: guidance.to_string(),
        model_class: model_class.or(u.model_class),
    })?;
    run.drive().await?;
    Ok(run.status())
}

/// Continues an interrupted Flow from the first unit not yet integrated, re-deriving and
/// re-validating it from git. A tip Main already holds is never merged again.
pub async fn resume(
    env: &FlowEnv,
    id: Option<&str>,
    cancel: &CancellationToken,
) -> Result<FlowStatus, FlowError> {
    let (run, state) = take_over_from_async(env, id, cancel).await?;
    match state.phase(false) {
        Phase::Interrupted => {}
        phase @ (Phase::Running
        | Phase::Paused
        | Phase::Completed
        | Phase::Failed
        | Phase::Abandoned) => {
            return Err(FlowError::WrongPhase(format!(
                "Flow {} is {}: `resume` continues an interrupted Flow{}",
                state.id,
                phase.as_str(),
                hint(&state)
            )))
        }
    }
    run.emit(FlowEvent::Driver {
        pid: std::process::id(),
        command: DriverCommand::Resume,
    })?;
    run.drive().await?;
    Ok(run.status())
}

/// Lands unit `unit` of the failed Flow `id` on its own, without running its implementer again:
/// the unit is rebased onto Main as it is now, validated, reviewed when its unit asks, and merged
/// fast-forward, exactly as the Flow would have (seed 004's integration steps). Main must be clean
/// on its branch, at the commit the Flow left it or at one the user added on top (having resolved
/// the failed unit by hand, say). The Flow stays failed; the unit is integrated, or blocked with
/// the evidence (a landing is not repaired: fix it by hand, or land it again after a fix).
pub async fn land(
    env: &FlowEnv,
    id: &str,
    unit: &str,
    cancel: &CancellationToken,
) -> Result<FlowStatus, FlowError> {
    let (run, state) = take_over_from_async(env, Some(id), cancel).await?;
    let failed_at = match &state.end {
        Some(crate::state::FlowEnd::Failed { unit, .. }) => unit.clone(),
        _ => {
            return Err(FlowError::WrongPhase(format!(
                "Flow {} is {}: `land` integrates a unit that a failed Flow kept{}",
                state.id,
                state.phase(false).as_str(),
                hint(&state)
            )))
        }
    };
    let Some(i) = state.unit_index(unit) else {
        let names: Vec<&str> = state.units.iter().map(|u| u.spec.id.as_str()).collect();
        return Err(InputError {
            field: "unit".into(),
            message: format!(
                "Flow {} has no unit `{unit}`; its units are {}",
                state.id,
                names.join(", ")
            ),
        }
        .into());
    };
    let u = &state.units[i];
    if u.status.is_done() {
        return Err(FlowError::WrongPhase(format!(
            "unit {unit} of Flow {} is already {}",
            state.id,
            u.status.label()
        )));
    }
    if failed_at.as_deref() == Some(unit) {
        return Err(FlowError::WrongPhase(format!(
            "the Flow failed at unit {unit}: it cannot be landed as it is; resolve it by hand in its worktree or branch (`baton flow status {}` shows them), then land the units after it",
            state.id
        )));
    }
    if !u.implementer.as_ref().is_some_and(|r| r.ok) || u.path.is_none() {
        return Err(FlowError::WrongPhase(format!(
            "unit {unit} of Flow {} has no finished implementation to land (its implementer did not finish well): start a new Flow for it",
            state.id
        )));
    }
    // Main: clean, on its branch, at the Flow's commit or one the user added on top of it.
    let main_st = main_status(&run.main, &[])
        .map_err(|e| FlowError::Refused(format!("cannot read Main: {e}")))?;
    let head = main_st.head.clone().unwrap_or_default();
    if main_st.branch.as_deref() != Some(state.main_branch.as_str()) || !main_st.clean() {
        return Err(FlowError::Refused(format!(
            "Main's checkout {} must be clean on {} to land a unit (it is on {}{}):\n{}",
            state.repo_root.display(),
            state.main_branch,
            main_st.branch.as_deref().unwrap_or("a detached HEAD"),
            if main_st.clean() {
                ""
            } else {
                ", with uncommitted changes"
            },
            listing(&main_st)
        )));
    }
    let descends = head == state.main_oid
        || run
            .main
            .is_ancestor(&state.main_oid, &head)
            .map_err(|e| FlowError::Refused(format!("cannot read Main: {e}")))?;
    if !descends {
        return Err(FlowError::Refused(format!(
            "Main ({}) no longer holds the commit the Flow left it at ({}): land needs Main at that commit or at one built on it",
            state.main_branch,
            &state.main_oid[..state.main_oid.len().min(12)]
        )));
    }
    run.emit(FlowEvent::Driver {
        pid: std::process::id(),
        command: DriverCommand::Land,
    })?;
    run.emit(FlowEvent::Landing {
        unit: unit.to_string(),
        main: head,
    })?;
    let mut result = run.integrate(i).await;
    if result.is_ok() {
        result = run.finish_cleanup(true).map(|()| Step::Done);
    } else {
        run.forget_cleanup();
    }
    run.snapshot();
    result?;
    Ok(run.status())
}

/// Gives up a paused or interrupted Flow: nothing more runs, worktrees and branches stay for a
/// person to reslice, integrated units stay integrated.
pub fn abandon(
    env: &FlowEnv,
    id: Option<&str>,
    reason: Option<&str>,
) -> Result<FlowStatus, FlowError> {
    let cancel = CancellationToken::new();
    let (run, state) = take_over(env, id, &cancel, None)?;
    let phase = state.phase(false);
    if phase.is_terminal() {
        return Err(FlowError::WrongPhase(format!(
            "Flow {} is already {}",
            state.id,
            phase.as_str()
        )));
    }
    run.emit(FlowEvent::Abandoned {
        reason: reason.map(str::to_string),
    })?;
    run.snapshot();
    Ok(run.status())
}

/// The Flows of the repository at `cwd` (oldest first), or the one named `id`.
pub fn status(
    cwd: &Path,
    id: Option<&str>,
    git_env: &[(String, String)],
) -> Result<Vec<FlowStatus>, FlowError> {
    let git = |d: &Path| {
        git_env
            .iter()
            .fold(Git::new(d), |g, (k, v)| g.with_env(k, v))
    };
    let repo = open_repo(&git, cwd)?;
    let driving = RepoLock::is_held(&repo.common);
    let status_of = |state: FlowState| {
        let phase = state.phase(driving);
        let main = git(&state.repo_root);
        status_with_main(&main, state, phase)
    };
    match id {
        Some(id) => Ok(vec![status_of(repo.store.load(id)?)]),
        None => Ok(readable_flows(&repo.store)
            .into_iter()
            .map(|(_, state)| status_of(state))
            .collect()),
    }
}

/// `baton repair` of a Flow of the repository at `cwd`: its damage, if any (see
/// [`baton_state::damage`]), and with `apply` the record rebuilt from its intact part under the
/// repository's Flow lock ([`FlowStore::repair`]), returning the files set aside. `None` when
/// the record is intact.
pub fn repair(
    cwd: &Path,
    id: &str,
    apply: bool,
) -> Result<Option<(baton_state::Damage, Vec<PathBuf>)>, FlowError> {
    let git = |d: &Path| Git::new(d);
    let repo = open_repo(&git, cwd)?;
    if !repo.store.events_path(id)?.is_file() {
        return Err(StoreError::NotFound {
            id: id.to_string(),
            dir: repo.store.dir().display().to_string(),
        }
        .into());
    }
    if !apply {
        return match repo.store.load(id) {
            Ok(_) => Ok(None),
            Err(StoreError::Log(baton_state::LogError::Damaged(d))) => Ok(Some((*d, Vec::new()))),
            Err(e) => Err(e.into()),
        };
    }
    let _lock = RepoLock::acquire(&repo.common)?;
    Ok(repo.store.repair(id)?)
}

/// Every Flow of the store whose log can be read, oldest first. An unreadable log is skipped with
/// a warning: it must not stop the commands about the other Flows.
pub(super) fn readable_flows(store: &FlowStore) -> Vec<(String, FlowState)> {
    store
        .list()
        .into_iter()
        .filter_map(|id| match store.load(&id) {
            Ok(state) => Some((id, state)),
            Err(e) => {
                tracing::warn!("skipping Flow {id}: its log cannot be read: {e}");
                None
            }
        })
        .collect()
}

/// Kills the process group of every implementer a dead driver left running in its unit's
/// worktree, so a relaunch never shares the worktree with it. A recorded group is killed only
/// while one of its processes still works inside that worktree (pids are reused).
fn stop_stale_implementers(state: &FlowState) {
    for u in &state.units {
        let (Some(pid), Some(path)) = (u.implementer_pid, u.path.as_ref()) else {
            continue;
        };
        let worktree = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
        if baton_process::group_works_in(pid, &worktree) {
            tracing::info!(
                "stopping the implementer of unit {} (process group {pid}) left by an earlier driver",
                u.id()
            );
            baton_process::kill_group(pid, baton_process::Signal::SIGKILL);
        }
    }
}

fn hint(state: &FlowState) -> String {
    match state.phase(false) {
        Phase::Paused => "; repair it with `baton flow continue --guidance TEXT` or give it up with `baton flow abandon`".into(),
        Phase::Interrupted => "; continue it with `baton flow resume`".into(),
        Phase::Running | Phase::Completed | Phase::Failed | Phase::Abandoned => String::new(),
    }
}

/// A Flow on Temporal is driven by its nodes, never here: its record is what its starter saw.
pub(super) fn refuse_on_temporal(state: &FlowState) -> Result<(), FlowError> {
    match &state.temporal {
        None => Ok(()),
        Some(t) => Err(FlowError::Refused(format!(
            "Flow {} runs on Temporal (its units land on {} at {}): `baton flow status --engine temporal {}` follows it, `baton flow continue --engine temporal` and `baton flow land --engine temporal` go on from it",
            state.id, t.target, t.remote, state.id
        ))),
    }
}

fn refuse_if_active(store: &FlowStore) -> Result<(), FlowError> {
    // A Flow on Temporal works on the remote, not in this checkout: it blocks no local Flow.
    let local = readable_flows(store)
        .into_iter()
        .filter(|(_, s)| s.temporal.is_none());
    for (id, state) in local {
        let phase = state.phase(false);
        if !phase.is_terminal() {
            return Err(FlowError::Refused(format!(
                "Flow {id} is still {} in this repository, and a repository has one active Flow at a time{}",
                phase.as_str(),
                hint(&state)
            )));
        }
    }
    Ok(())
}

fn resolve_role(env: &FlowEnv, name: &str) -> Result<(RoleSpec, BackendKind), FlowError> {
    let role = find_role(&env.delegate.role_dirs, name)
        .map_err(|e| FlowError::Refused(format!("role `{name}`: {e}")))?;
    let backend = backend_of(&env.delegate, &role);
    if backend == BackendKind::Command && role.meta.command.as_ref().is_none_or(|c| c.is_empty()) {
        return Err(FlowError::Refused(format!(
            "role `{name}` uses backend `command` but has no `command: [program, args…]` in its frontmatter"
        )));
    }
    Ok((role, backend))
}

fn freeze(
    flow_dir: &Path,
    index: usize,
    (spec, backend): (RoleSpec, BackendKind),
) -> Result<FrozenRole, FlowError> {
    let file =
        write_frozen_role(&flow_dir.join("roles"), index, &spec).map_err(|e| FlowError::Role {
            path: flow_dir.join("roles"),
            source: e,
        })?;
    Ok(FrozenRole {
        spec,
        backend,
        file,
    })
}

/// Takes the lock (unless the caller holds it already) and opens the log of `id` (or of the repository's only non-terminal Flow).
/// [`take_over`] for async callers: the lock is taken on a blocking thread first.
async fn take_over_from_async<'a>(
    env: &'a FlowEnv,
    id: Option<&str>,
    cancel: &'a CancellationToken,
) -> Result<(Run<'a>, FlowState), FlowError> {
    let git = |d: &Path| env.git(d);
    let repo = open_repo(&git, &env.delegate.cwd)?;
    let lock = acquire_off_runtime(&repo.common).await?;
    take_over(env, id, cancel, Some(lock))
}

/// Takes the repository's Flow lock on a blocking thread: waiting for a brief holder sleeps, and
/// must not stall the runtime (in `baton agent` a current-thread one) that drains children.
async fn acquire_off_runtime(common: &Path) -> Result<RepoLock, FlowError> {
    let common = common.to_path_buf();
    tokio::task::spawn_blocking(move || RepoLock::acquire(&common))
        .await
        .map_err(|e| FlowError::Refused(format!("taking the Flow lock stopped: {e}")))?
        .map_err(FlowError::from)
}

fn take_over<'a>(
    env: &'a FlowEnv,
    id: Option<&str>,
    cancel: &'a CancellationToken,
    lock: Option<RepoLock>,
) -> Result<(Run<'a>, FlowState), FlowError> {
    let git = |d: &Path| env.git(d);
    let repo = open_repo(&git, &env.delegate.cwd)?;
    let mut lock = match lock {
        Some(lock) => lock,
        None => RepoLock::acquire(&repo.common)?,
    };
    let id = match id {
        Some(id) => id.to_string(),
        None => {
            let mut active: Vec<String> = readable_flows(&repo.store)
                .into_iter()
                .filter(|(_, state)| state.temporal.is_none())
                .filter(|(_, state)| !state.phase(false).is_terminal())
                .map(|(id, _)| id)
                .collect();
            let newest = active.pop();
            // A damaged record newer than the Flow that would be taken may be the very one meant:
            // refused, naming it, rather than passed over for an older one or for "none".
            let damaged = repo.store.list().into_iter().rev().find_map(|id| {
                if newest.as_ref().is_some_and(|n| *n >= id) {
                    return None;
                }
                match repo.store.load(&id) {
                    Err(e @ StoreError::Log(baton_state::LogError::Damaged(_))) => Some(e),
                    _ => None,
                }
            });
            if let Some(e) = damaged {
                return Err(e.into());
            }
            match newest {
                Some(id) => id,
                None => {
                    return Err(FlowError::WrongPhase(format!(
                        "no paused or interrupted Flow in {}; `baton flow status` lists the Flows",
                        repo.toplevel.display()
                    )))
                }
            }
        }
    };
    let state = repo.store.load(&id)?;
    refuse_on_temporal(&state)?;
    lock.note(&id);
    stop_stale_implementers(&state);
    let log = repo.store.open(&id, env.crash.clone())?;
    let main = env.git(&state.repo_root);
    let run = Run {
        env,
        store: repo.store,
        log: Mutex::new(log),
        state: Mutex::new(state.clone()),
        main,
        cancel,
        _lock: lock,
        main_left_at: Mutex::new(None),
        cleaning: Mutex::new(None),
    };
    Ok((run, state))
}
