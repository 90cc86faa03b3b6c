//! `baton models` and `baton roles`.

use std::path::PathBuf;

use anyhow::Result;
use baton_model::routes::{check_route, default_class, ProcessEnv};
use baton_protocol::role::{BackendKind, Isolation, RoleSource};
use baton_protocol::ModelClass;
use baton_roles::{load_roles, RoleDirs};

use crate::exit;
use crate::project::{project_context, role_dirs};

pub fn models(cwd: Option<PathBuf>) -> Result<u8> {
    let ctx = project_context(cwd)?;
    let config = &ctx.config.config;
    if ctx.config.files.is_empty() {
        outln!("config: no config file found (looked in ~/.config/baton/config.toml and .baton/config.toml)");
    } else {
        for f in &ctx.config.files {
            outln!("config: {}", f.display());
        }
    }
    outln!("default class: {}", default_class(config));
    for class in ModelClass::ALL {
        match config.models.class(class) {
            None => outln!("{class:<9} (unset: set models.{class} = \"provider/model\")"),
            Some(list) => {
                let mut chosen = false;
                let routes = list.routes();
                outln!(
                    "{class:<9} {}",
                    routes
                        .iter()
                        .map(|r| r.to_string())
                        .collect::<Vec<_>>()
                        .join(" → ")
                );
                for r in routes {
                    match check_route(config, r, &ProcessEnv) {
                        Ok(_) if !chosen => {
                            chosen = true;
                            outln!("          ✓ {r} resolves now");
                        }
                        Ok(_) => outln!("          · {r} usable (fallback)"),
                        Err(e) => outln!("          ✗ {r}: {e}"),
                    }
                }
            }
        }
    }
    Ok(exit::OK)
}

fn source_text(s: &RoleSource) -> String {
    match s {
        RoleSource::Builtin => "built-in".into(),
        RoleSource::User(p) => format!("user {p}"),
        RoleSource::Project(p) => format!("project {p}"),
    }
}

/// Lists the effective roles and the role files that cannot be used (exit 0), or with `check`
/// reports every bad role file and exits 2 if there is one.
pub fn roles(cwd: Option<PathBuf>, check: bool) -> Result<u8> {
    let ctx = project_context(cwd)?;
    let dirs: RoleDirs = role_dirs(&ctx.project_root);
    let set = load_roles(&dirs);
    if check {
        for bad in &set.bad {
            errln!("baton: {}", bad.one_line());
        }
        return Ok(if set.bad.is_empty() {
            outln!("{} roles valid", set.roles.len());
            exit::OK
        } else {
            outln!(
                "{} roles valid, {} role file(s) invalid",
                set.roles.len(),
                set.bad.len()
            );
            exit::USAGE
        });
    }
    let config = &ctx.config.config;
    for r in &set.roles {
        let class = r
            .meta
            .model_class
            .map(|c| c.to_string())
            .unwrap_or_else(|| "-".into());
        let backend = r
            .meta
            .backend
            .or(config.executor.backend)
            .unwrap_or(BackendKind::Baton);
        let isolation = match r.meta.isolation {
            Some(Isolation::Worktree) => "worktree",
            None => "none",
        };
        let sandbox = baton_agent::tools::SandboxPolicy::choose_mode(
            None,
            r.meta.sandbox,
            config.sandbox.mode,
        );
        outln!(
            "{:<14} {:<9} tools=[{}] backend={} isolation={} sandbox={}  {}",
            r.meta.name,
            class,
            r.meta.tools.join(","),
            backend.as_str(),
            isolation,
            sandbox,
            source_text(&r.source)
        );
        outln!("               {}", r.meta.description);
    }
    if !set.bad.is_empty() {
        outln!();
        outln!("invalid role files (skipped; `baton roles check` reports them and exits 2):");
        for bad in &set.bad {
            outln!("  {}", bad.one_line());
        }
    }
    Ok(exit::OK)
}
