//! `baton repair ID`: what is damaged in a record, and with `--apply` the record rebuilt from
//! its intact part.
//!
//! ID is a workflow (`.baton/state/workflows/`), a Flow (`flows/`), a session (its routing
//! journal `sessions/<id>.journal` and its transcript `sessions/<id>.jsonl`) or a background task
//! (`tasks/`). Damage is what no crash leaves (see `baton_state::damage`): a line that does not
//! read, NUL or control bytes, events out of sequence, a snapshot that records more than its log
//! holds. Without `--apply` nothing is changed. With it, each damaged log is cut to the lines
//! before the damage and the snapshot is derived from them again; every file replaced is kept
//! beside it as `<name>.damaged` (`.damaged.2`, … when that exists). With nothing intact the
//! whole record is set aside. Records driven by a live process are refused.
//!
//! Exit codes: 0 intact, or repaired; 1 damaged and not repaired (no `--apply`), or the repair
//! failed; 2 no record has this id.

use std::path::PathBuf;

use crate::documents::{DamageDocument, RepairDocument};
use anyhow::Result;
use baton_app::exit::Exit;
use baton_app::project::{project_context, state_dir};
use baton_state::damage::{keep_intact, set_aside};
use baton_state::{Damage, JsonlLog, LogError, StateDir};
use baton_workflow::store::{StoreError, WorkflowStore};
use clap::Args;

#[derive(Args)]
pub struct RepairArgs {
    /// A workflow, Flow, session or background task id (the whole id).
    pub id: String,
    /// Rebuild the record from its intact part, keeping the damaged files as `*.damaged`.
    #[arg(long)]
    pub apply: bool,
    /// Working directory inside the project (default: the current one).
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// Print one JSON document instead of text.
    #[arg(long)]
    pub json: bool,
}

/// What the records of one id say.
struct Found {
    kind: &'static str,
    /// The damage of each damaged file, and what `--apply` set aside for it.
    damage: Vec<(Damage, Vec<PathBuf>)>,
}

pub fn run(args: RepairArgs) -> Result<Exit> {
    let ctx = project_context(args.cwd.clone())?;
    let state = state_dir(&ctx);
    if let Err(e) = baton_state::check_id(baton_state::IdKind::Record, &args.id) {
        errln!("baton: {e}");
        return Ok(Exit::Refused);
    }
    let found = match find(&state, &ctx.cwd, &args.id, args.apply) {
        Ok(Some(f)) => f,
        Ok(None) => {
            errln!(
                "baton: no workflow, Flow, session or background task `{}` in {}: `baton status`, `baton flow status`, `baton sessions` and `baton task status` list them",
                args.id,
                state.root().display()
            );
            return Ok(Exit::Refused);
        }
        Err(e) => {
            errln!("baton: repair {}: {e}", args.id);
            return Ok(Exit::Failed);
        }
    };
    report(&args, &found);
    Ok(if found.damage.is_empty() || args.apply {
        Exit::Ok
    } else {
        Exit::Failed
    })
}

fn report(args: &RepairArgs, found: &Found) {
    let id = &args.id;
    if args.json {
        let damage: Vec<DamageDocument> = found
            .damage
            .iter()
            .map(|(d, aside)| DamageDocument {
                path: d.path.display().to_string(),
                line: d.line,
                problem: d.problem.clone(),
                lost: d.lost.clone(),
                intact: d.intact,
                message: d.to_string(),
                set_aside: aside.iter().map(|p| p.display().to_string()).collect(),
            })
            .collect();
        crate::documents::print(&RepairDocument {
            id: id.clone(),
            kind: found.kind.to_string(),
            damaged: !damage.is_empty(),
            applied: args.apply && !damage.is_empty(),
            damage,
        });
        return;
    }
    if found.damage.is_empty() {
        outln!("{} {id}: intact, nothing to repair", found.kind);
        return;
    }
    for (d, aside) in &found.damage {
        let keeps = match d.intact {
            0 => "nothing is intact: the whole record is set aside".to_string(),
            1 => "it keeps the 1 intact record before the damage".to_string(),
            n => format!("it keeps the {n} intact records before the damage"),
        };
        if args.apply {
            outln!(
                "{} {id}: repaired {}, line {}: {}; {keeps}",
                found.kind,
                d.path.display(),
                d.line,
                d.problem
            );
            for a in aside {
                outln!("  kept the damaged file as {}", a.display());
            }
        } else {
            outln!("{} {id}: damaged", found.kind);
            outln!("  {}: line {} {}", d.path.display(), d.line, d.problem);
            outln!("  lost: {}", d.lost);
            outln!("  `baton repair {id} --apply` rebuilds the record from its intact part ({keeps}); the damaged files are kept beside it as *.damaged");
        }
    }
    if args.apply && matches!(found.kind, "workflow" | "Flow") {
        let next = if found.kind == "Flow" {
            format!("`baton flow resume {id}` runs that work again, `baton flow abandon {id}` ends the Flow instead")
        } else {
            format!("`baton resume {id}` runs that work again; to stop there instead, leave the workflow as it is")
        };
        outln!("the work the lost events recorded counts as not done: {next}");
    }
}

/// The record named `id`, its damage and, with `apply`, its repair; `None` when there is none.
fn find(
    state: &StateDir,
    cwd: &std::path::Path,
    id: &str,
    apply: bool,
) -> Result<Option<Found>, String> {
    let store = WorkflowStore::new(state.clone());
    if store.events_path(id).map_err(|e| e.to_string())?.is_file() {
        let damage = if apply {
            store.repair(id).map_err(|e| e.to_string())?
        } else {
            match store.check(id) {
                Ok(_) => None,
                Err(StoreError::Log(LogError::Damaged(d))) => Some((*d, Vec::new())),
                Err(e) => return Err(e.to_string()),
            }
        };
        return Ok(Some(Found {
            kind: "workflow",
            damage: damage.into_iter().collect(),
        }));
    }
    match baton_flow::repair(cwd, id, apply) {
        Ok(damage) => {
            return Ok(Some(Found {
                kind: "Flow",
                damage: damage.into_iter().collect(),
            }))
        }
        // Not a Flow of this repository (or no repository): one of the others, or none.
        Err(e) if e.is_refusal() && !matches!(e, baton_flow::FlowError::Lock(_)) => {}
        Err(e) => return Err(e.to_string()),
    }
    let journal = baton_agent::routing::journal::path(state, id);
    let transcript = state.session(id).map_err(|e| e.to_string())?;
    if journal.is_file() || transcript.is_file() {
        let mut damage = Vec::new();
        if journal.is_file() {
            let read = baton_agent::routing::journal::Journal::read(&journal);
            if let Err(baton_agent::routing::journal::JournalError::Log(e)) = read {
                damage.extend(plain_log(e, apply)?);
            }
        }
        if transcript.is_file() {
            if let Err(e) = JsonlLog::<serde_json::Value>::read(&transcript) {
                damage.extend(plain_log(e, apply)?);
            }
        }
        return Ok(Some(Found {
            kind: "session",
            damage,
        }));
    }
    let task = state.task_events(id).map_err(|e| e.to_string())?;
    if task.is_file() {
        let damage = match JsonlLog::<baton_exec::background::TaskEvent>::read(&task) {
            Ok(_) => None,
            Err(e) => plain_log(e, apply)?,
        };
        return Ok(Some(Found {
            kind: "background task",
            damage: damage.into_iter().collect(),
        }));
    }
    Ok(None)
}

/// A log without a snapshot (a routing journal, a transcript, a task log) that failed to read
/// with `e`: its damage and, with `apply`, the log cut to its intact lines (set aside whole when
/// none is). Errors other than damage are errors.
fn plain_log(e: LogError, apply: bool) -> Result<Option<(Damage, Vec<PathBuf>)>, String> {
    let LogError::Damaged(d) = e else {
        return Err(e.to_string());
    };
    if !apply {
        return Ok(Some((*d, Vec::new())));
    }
    let aside = if d.intact == 0 {
        set_aside(&d.path).map_err(|e| format!("{}: {e}", d.path.display()))?
    } else {
        Some(keep_intact(&d.path, d.intact_len).map_err(|e| format!("{}: {e}", d.path.display()))?)
    };
    Ok(Some((*d, aside.into_iter().collect())))
}
