//! A session's role (`--role-file`, else found by name in the role folders, with the tools its
//! delegation tools bring) and the skills it is offered.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};
use baton_agent::agent::SkillRef;
use baton_protocol::role::{RoleSource, RoleSpec};
use baton_roles::{find_role, parse_role};

use crate::project::{role_dirs, warn_skipped_roles, ProjectContext};

/// The role of `--role-file FILE`, else the one named `name` in the project's and user's role
/// folders or the built-in ones; with the tools its delegation tools imply.
pub(super) fn role(ctx: &ProjectContext, file: Option<&Path>, name: &str) -> Result<RoleSpec> {
    let mut role = match file {
        Some(path) => {
            let text = baton_text::input::read_input(path)
                .map_err(|e| anyhow!("--role-file {}: {e}", path.display()))?;
            parse_role(
                &text,
                &path.display().to_string(),
                RoleSource::Project(path.display().to_string()),
            )?
        }
        None => {
            let dirs = role_dirs(&ctx.project_root);
            warn_skipped_roles(&dirs, &[name]);
            find_role(&dirs, name)?
        }
    };
    // A role that delegates also hears back from its background delegations: `delegate_task`
    // brings `task_status`, `task_wait` and `task_cancel` with it.
    // Likewise a role with the Flow tools can resume or give up an interrupted Flow.
    let implied: [(&str, &[&str]); 2] = [
        (
            "delegate_task",
            &["task_status", "task_wait", "task_cancel"],
        ),
        (
            "delegate_flow",
            &["delegate_flow_resume", "delegate_flow_abandon"],
        ),
    ];
    for (listed, brings) in implied {
        if role.meta.tools.iter().any(|t| t == listed) {
            for t in brings {
                if !role.meta.tools.iter().any(|x| x == t) {
                    role.meta.tools.push(t.to_string());
                }
            }
        }
    }
    Ok(role)
}

/// The skills a session is offered: those given with `--skill` (a delegating Main resolved
/// them); else in a main session every skill of the project (bad skill files named in a warning
/// each), in a delegated child exactly those its role names (seed 004: no ambient discovery in
/// children; a name not found is named in a warning and skipped). None without the `read`
/// tool, which is how a skill is opened.
pub(super) fn skills(
    ctx: &ProjectContext,
    role: &RoleSpec,
    is_child: bool,
    given: &[PathBuf],
) -> Vec<SkillRef> {
    let chosen: Vec<baton_roles::skills::Skill> = if !given.is_empty() {
        let (found, bad) = baton_roles::skills::load_given(given);
        for b in bad {
            errln!("baton: warning: skipped skill {b}");
        }
        found
    } else if is_child {
        // A child looks skills up only when its role names some.
        if role.meta.skills.is_empty() {
            return Vec::new();
        }
        let (found, missing) = crate::project::skills(ctx).select(&role.meta.skills);
        for name in missing {
            errln!(
                "baton: warning: role {} names skill `{name}`, which is in none of the skill folders (see `baton skills`): skipped",
                role.meta.name
            );
        }
        found
    } else {
        let set = crate::project::skills(ctx);
        for bad in &set.bad {
            errln!("baton: warning: skipped skill {bad}");
        }
        set.skills.into_values().collect()
    };
    if !chosen.is_empty() && !role.meta.tools.iter().any(|t| t == "read") {
        errln!(
            "baton: warning: role {} has no `read` tool, so its skills ({}) cannot be opened: add `read` to its tools",
            role.meta.name,
            chosen.iter().map(|k| k.name.as_str()).collect::<Vec<_>>().join(", ")
        );
    }
    chosen
        .into_iter()
        .map(|k| SkillRef {
            name: k.name,
            description: k.description,
            dir: k.dir,
        })
        .collect()
}
