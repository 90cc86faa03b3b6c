//! Setting up: a worktree and a branch per unit, or an abort that leaves nothing behind.

use super::checkout::main_status;
use super::*;

/// What the setup does about one unit's worktree.
enum Prepared {
    /// A complete worktree from an interrupted setup was taken over.
    Adopted,
    /// Announced; to be created.
    Create,
    /// Cannot be created: the setup fails.
    Failed(String),
}

impl Run<'_> {
    /// Creates every missing unit worktree; on failure removes what this Flow created.
    pub(super) fn setup(&self) -> Result<Step, FlowError> {
        let state = self.state();
        let st = match main_status(&self.main, &[]) {
            Ok(st) => st,
            Err(e) => return self.fail(FailureKind::Setup, None, format!("cannot read Main: {e}")),
        };
        if st.branch.as_deref() != Some(state.main_branch.as_str())
            || st.head.as_deref() != Some(state.start_oid.as_str())
        {
            return self.halt(format!(
                "Main is not where the Flow started (expected {} at {}, found {} at {}): restore it, then run `baton flow resume`",
                state.main_branch,
                short(&state.start_oid),
                st.branch.as_deref().unwrap_or("a detached HEAD"),
                st.head.as_deref().map(short).unwrap_or("nothing"),
            ));
        }
        let common = match self.main.git_common_dir() {
            Ok(c) => c,
            Err(e) => {
                return self.fail(
                    FailureKind::Setup,
                    None,
                    format!("cannot read the repository: {e}"),
                )
            }
        };
        // Announce every worktree (recovering the remains of an interrupted setup), create them,
        // then record them in declared order.
        let mut to_create: Vec<(String, String)> = Vec::new();
        for u in &state.units {
            if !matches!(u.status, UnitStatus::Pending | UnitStatus::Creating) {
                continue;
            }
            let wt_id = unit_worktree_id(&state.id, u.id());
            match self.prepare_unit_worktree(&state, u, &wt_id, &common)? {
                Prepared::Adopted => {}
                Prepared::Create => to_create.push((u.id().to_string(), wt_id)),
                Prepared::Failed(message) => return self.setup_failed(u.id(), message),
            }
        }
        // One at a time: concurrent `git worktree add`s trip over each other's half-made entries.
        // The first goes through `create_child_worktree`, which checks the repository and the
        // worktree root; the others only need the same `git worktree add` in the same folder.
        let mut created: Vec<Result<ChildWorktree, String>> = Vec::with_capacity(to_create.len());
        let mut group: Option<PathBuf> = None;
        for (_, wt_id) in &to_create {
            let result = match &group {
                None => {
                    match create_child_worktree(&state.repo_root, &state.worktree_root, wt_id) {
                        Ok(Isolated::Worktree(wt)) => {
                            group = wt.path.parent().map(Path::to_path_buf);
                            Ok(wt)
                        }
                        Ok(Isolated::Fallback { reason, .. }) => {
                            Err(format!("no worktree possible: {reason}"))
                        }
                        Err(e) => Err(e.to_string()),
                    }
                }
                Some(group) => self.add_worktree(&state, group, wt_id),
            };
            let stop = result.is_err();
            created.push(result);
            if stop {
                break;
            }
        }
        let mut failed: Option<(String, String)> = None;
        for ((unit, _), result) in to_create.iter().zip(created) {
            match result {
                Ok(wt) => self.emit(FlowEvent::WorktreeCreated {
                    unit: unit.clone(),
                    path: wt.path,
                    branch: wt.branch,
                    base: wt.base_oid,
                })?,
                Err(message) => {
                    failed.get_or_insert((unit.clone(), message));
                }
            }
        }
        if let Some((unit, message)) = failed {
            return self.setup_failed(&unit, message);
        }
        Ok(Step::Done)
    }

    /// `git worktree add -b baton/<id> <group>/<id> <start>`, the layout `create_child_worktree` uses.
    pub(super) fn add_worktree(
        &self,
        state: &FlowState,
        group: &Path,
        wt_id: &str,
    ) -> Result<ChildWorktree, String> {
        let path = group.join(wt_id);
        let branch = format!("{BRANCH_PREFIX}{wt_id}");
        if path.symlink_metadata().is_ok() {
            return Err(format!(
                "worktree path {} already exists; remove the earlier worktree (`git worktree remove PATH`)",
                path.display()
            ));
        }
        self.main
            .worktree_add(&path, &branch, &state.start_oid)
            .map_err(|e| e.to_string())?;
        Ok(ChildWorktree {
            id: wt_id.to_string(),
            repo_root: state.repo_root.clone(),
            cwd: path.clone(),
            path,
            branch,
            base_oid: state.start_oid.clone(),
        })
    }

    /// Writes `unit.worktree_creating`, first clearing or adopting what an interrupted setup left.
    /// The error stops the run (a log failure or the crash hook).
    fn prepare_unit_worktree(
        &self,
        state: &FlowState,
        u: &UnitState,
        wt_id: &str,
        common: &Path,
    ) -> Result<Prepared, FlowError> {
        let branch = format!("{BRANCH_PREFIX}{wt_id}");
        let path = state
            .worktree_root
            .join(repo_folder_name(common))
            .join(wt_id);
        if u.status == UnitStatus::Creating {
            // The process died around `git worktree add`: adopt a complete worktree, clear a partial one.
            let listed = match self.main.worktree_list() {
                Ok(l) => l,
                Err(e) => return Ok(Prepared::Failed(e.to_string())),
            };
            let canonical = std::fs::canonicalize(&path).unwrap_or(path.clone());
            let adopted = listed.iter().any(|w| {
                (w.path == path || w.path == canonical)
                    && w.branch.as_deref() == Some(branch.as_str())
                    && w.head.as_deref() == Some(state.start_oid.as_str())
            });
            if adopted && self.env.git(&path).is_clean().unwrap_or(false) {
                self.emit(FlowEvent::WorktreeCreated {
                    unit: u.id().to_string(),
                    path,
                    branch,
                    base: state.start_oid.clone(),
                })?;
                return Ok(Prepared::Adopted);
            }
            if path.symlink_metadata().is_ok() {
                return Ok(Prepared::Failed(format!(
                    "{} exists but is not the unit's worktree on {branch}",
                    path.display()
                )));
            }
            let _ = self.main.worktree_prune();
            if self.main.branch_exists(&branch).unwrap_or(false) {
                if let Err(e) = self.main.branch_delete(&branch, false) {
                    return Ok(Prepared::Failed(e.to_string()));
                }
            }
        }
        self.emit(FlowEvent::WorktreeCreating {
            unit: u.id().to_string(),
            worktree_id: wt_id.to_string(),
        })?;
        Ok(Prepared::Create)
    }

    /// Records that the setup is being undone, then undoes it.
    pub(super) fn setup_failed(&self, unit: &str, message: String) -> Result<Step, FlowError> {
        self.emit(FlowEvent::SetupAborting {
            unit: unit.to_string(),
            message,
        })?;
        self.finish_setup_abort()
    }

    /// Removes (best effort, non-forced) every worktree and branch the setup created, then ends
    /// the Flow. Also what a resume does with a log that ends in `flow.setup_aborting`.
    pub(super) fn finish_setup_abort(&self) -> Result<Step, FlowError> {
        let state = self.state();
        let Some((unit, message)) = state.setup_aborting.clone() else {
            return self.fail(
                FailureKind::Infrastructure,
                None,
                "internal: no setup to undo".into(),
            );
        };
        let unit = unit.as_str();
        let mut removed = Vec::new();
        let mut kept = Vec::new();
        for u in &state.units {
            let (Some(path), Some(branch)) = (&u.path, &u.branch) else {
                continue;
            };
            // A resumed removal finds some of them gone already.
            let wt = if path.symlink_metadata().is_ok() {
                self.main.worktree_remove(path, false)
            } else {
                let _ = self.main.worktree_prune();
                Ok(())
            };
            let br = match self.main.branch_delete(branch, false) {
                Err(e) if e.stderr().is_some_and(|s| s.contains("not found")) => Ok(()),
                other => other,
            };
            match (wt, br) {
                (Ok(()), Ok(())) => removed.push(path.display().to_string()),
                (wt, br) => {
                    let why: Vec<String> = [wt.err(), br.err()]
                        .into_iter()
                        .flatten()
                        .map(|e| e.to_string())
                        .collect();
                    kept.push(format!("{} ({branch}): {}", path.display(), why.join("; ")))
                }
            }
        }
        if let Some(parent) = state.units.iter().find_map(|u| {
            u.path
                .as_ref()
                .and_then(|p| p.parent().map(Path::to_path_buf))
        }) {
            let _ = std::fs::remove_dir(parent);
        }
        let mut text = format!(
            "cannot create the worktree of unit {unit}: {message}. No implementer was launched"
        );
        if !removed.is_empty() {
            text.push_str(&format!(
                "; removed the {} worktree(s) already created",
                removed.len()
            ));
        }
        if !kept.is_empty() {
            text.push_str(&format!("; could not remove: {}", kept.join(", ")));
        }
        self.fail(FailureKind::Setup, Some(unit), text)
    }
}
