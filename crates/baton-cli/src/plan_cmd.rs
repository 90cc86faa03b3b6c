//! `baton plan check FILE` and `baton plan approve FILE`: a plan file's format and trust checks
//! (the gate `baton run --plan` applies) and its approval, the hash a planned BUILD must match.

use std::path::PathBuf;

use anyhow::Result;
use baton_app::exit::Exit;
use baton_state::StateDir;
use baton_workflow::plan_file::{ApprovalState, Approvals, PlanFile};
use clap::{Args, Subcommand};

#[derive(Args, Debug)]
pub struct PlanArgs {
    #[command(subcommand)]
    action: PlanAction,
}

#[derive(Subcommand, Debug)]
#[command(defer = true)]
enum PlanAction {
    /// Check a plan file as `baton run --plan` would: its `## Phases` block, each phase's
    /// fields, plan_mode, verification_rigor, open decisions and required sections; and say
    /// whether it is approved as it is now.
    Check(PlanFileArgs),
    /// Check a plan file and record it as approved at its current content (its SHA-256):
    /// `baton run --plan` refuses the plan once it is edited, until it is approved again.
    Approve(PlanFileArgs),
}

#[derive(Args, Debug)]
struct PlanFileArgs {
    /// The plan file (Markdown).
    file: PathBuf,
    /// Directory inside the project (default: the current one).
    #[arg(long)]
    cwd: Option<PathBuf>,
}

pub fn run(args: PlanArgs) -> Result<Exit> {
    let (a, approve) = match args.action {
        PlanAction::Check(a) => (a, false),
        PlanAction::Approve(a) => (a, true),
    };
    let cwd = baton_app::project::working_dir(a.cwd)?;
    let root = baton_state::project_root(&cwd);
    let path = if a.file.is_absolute() {
        a.file.clone()
    } else {
        cwd.join(&a.file)
    };
    let plan = match PlanFile::read(&path) {
        Ok(p) => p,
        Err(e) => {
            errln!("baton: {}", baton_text::sanitize_terminal(&e.to_string()));
            return Ok(Exit::Refused);
        }
    };
    let approvals = Approvals::new(&StateDir::for_project(&root), &root);
    let key = approvals.key(&path);
    let per_task = plan
        .phases
        .iter()
        .any(|p| baton_workflow::plan_file::is_task_phase(&p.phase_id));
    outln!(
        "plan {key}: {}, {} rigor, {} phase{}{}",
        plan.plan_mode,
        plan.verification_rigor,
        plan.phases.len(),
        if plan.phases.len() == 1 { "" } else { "s" },
        if per_task {
            " (each task of a phase built per task is one)"
        } else {
            ""
        }
    );
    for p in &plan.phases {
        outln!(
            "  {} {} — exit: {}",
            p.phase_id,
            p.title,
            p.exit_criteria.join("; ")
        );
    }
    outln!("sha256: {}", plan.sha256);
    if approve {
        let a = approvals
            .approve(&path, &plan.sha256, "baton plan approve")
            .map_err(anyhow::Error::msg)?;
        outln!(
            "approved at {}: build it with `baton run --plan {key}`",
            a.approved_at
        );
        return Ok(Exit::Ok);
    }
    match approvals.check(&path, &plan.sha256).map_err(anyhow::Error::msg)? {
        ApprovalState::New => outln!(
            "not approved yet: `baton plan approve {key}` approves it (so does `baton run --plan {key}`)"
        ),
        ApprovalState::Approved(a) => outln!("approved at {} by {}", a.approved_at, a.by),
        ApprovalState::Changed(a) => {
            outln!(
                "changed since it was approved at {} by {}: `baton run --plan` refuses it until `baton plan approve {key}`",
                a.approved_at,
                a.by
            );
        }
    }
    Ok(Exit::Ok)
}
