//! `baton models` and `baton roles`.

use std::path::PathBuf;

use crate::documents::{
    to_value, ModelClassDocument, ModelsDocument, RoleDocument, RoleSourceDocument,
    RolesCheckDocument, RolesDocument, RouteCheck,
};
use anyhow::Result;
use baton_model::catalog::Profile;
use baton_model::routes::{check_route, default_class, ProcessEnv};
use baton_protocol::config::ThinkingStyle;
use baton_protocol::role::{BackendKind, Isolation, RoleSource};
use baton_protocol::ModelClass;
use baton_protocol::Route;
use baton_roles::{load_roles, RoleDirs};

use crate::exit::Exit;
use crate::project::{project_context, role_dirs, ProjectContext};

/// `baton models --json`: one document with the config files, the default class and, for each
/// class, its routes (each usable or not, and why) and the one that resolves now.
pub fn models_json(ctx: &ProjectContext) -> ModelsDocument {
    let config = &ctx.config.config;
    let classes: Vec<ModelClassDocument> = ModelClass::ALL
        .iter()
        .map(|&class| {
            let routes: Vec<RouteCheck> = config
                .models
                .class(class)
                .map(|list| {
                    list.routes()
                        .iter()
                        .map(|r| match check_route(config, r, &ProcessEnv) {
                            Ok(resolved) => RouteCheck {
                                route: r.to_string(),
                                usable: true,
                                model_info: Some(to_value(&resolved.profile.info)),
                                thinking_sent: Some(
                                    resolved.profile.info.thinking_plan(r.thinking).to_string(),
                                ),
                                options: Some(to_value(&resolved.profile.options)),
                                error: None,
                            },
                            Err(e) => RouteCheck {
                                route: r.to_string(),
                                usable: false,
                                model_info: None,
                                thinking_sent: None,
                                options: None,
                                error: Some(e.to_string()),
                            },
                        })
                        .collect()
                })
                .unwrap_or_default();
            let resolves = routes.iter().find(|r| r.usable).map(|r| r.route.clone());
            ModelClassDocument {
                class: class.to_string(),
                set: config.models.class(class).is_some(),
                routes,
                resolves,
            }
        })
        .collect();
    ModelsDocument {
        config_files: ctx
            .config
            .files
            .iter()
            .map(|f| f.display().to_string())
            .collect(),
        default_class: default_class(config).to_string(),
        classes,
    }
}

pub fn models(cwd: Option<PathBuf>, json_mode: bool) -> Result<Exit> {
    let ctx = project_context(cwd)?;
    if json_mode {
        crate::documents::print(&models_json(&ctx));
        return Ok(Exit::Ok);
    }
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
                        Ok(resolved) => {
                            if chosen {
                                outln!("          · {r} usable (fallback)");
                            } else {
                                chosen = true;
                                outln!("          ✓ {r} resolves now");
                            }
                            for line in describe(&resolved.profile, r) {
                                outln!("            {line}");
                            }
                        }
                        Err(e) => outln!("          ✗ {r}: {e}"),
                    }
                }
            }
        }
    }
    Ok(Exit::Ok)
}

/// What the model table and the route options make of a route, for `baton models` and
/// `baton doctor`: the thinking level sent, the levels, limits, and where the facts come from.
pub fn describe(profile: &Profile, route: &Route) -> Vec<String> {
    let info = &profile.info;
    let mut lines = Vec::new();
    let style = match info.thinking {
        ThinkingStyle::None => "none",
        ThinkingStyle::Budget => "budget",
        ThinkingStyle::Adaptive => "adaptive",
        ThinkingStyle::Effort => "effort",
    };
    let level = route
        .thinking
        .map_or("(no level)".to_string(), |t| format!(":{t}"));
    lines.push(format!(
        "thinking {style}: {level} → {}; levels {}",
        info.thinking_plan(route.thinking),
        info.levels_summary()
    ));
    let n = |v: Option<u32>| v.map_or("unknown".to_string(), |v| v.to_string());
    lines.push(format!(
        "output ≤ {} tokens, context {} [{}]",
        n(info.max_output_tokens),
        n(info.context_window),
        info.source
    ));
    if !profile.options.is_empty() {
        let o = &profile.options;
        let mut parts = Vec::new();
        if let Some(t) = o.temperature {
            parts.push(format!("temperature {t}"));
        }
        if let Some(t) = o.top_p {
            parts.push(format!("top_p {t}"));
        }
        if let Some(s) = o.seed {
            parts.push(format!("seed {s}"));
        }
        if let Some(m) = o.max_output_tokens {
            parts.push(format!("max_output_tokens {m}"));
        }
        lines.push(format!("options: {}", parts.join(", ")));
    }
    if !info.known {
        lines.push(format!(
            "hint: `{}` is not in the model table; conservative defaults apply. Describe it with [model_info.\"{}\"] (see docs/providers.md)",
            route.model, route.model
        ));
    }
    lines
}

fn source_text(s: &RoleSource) -> String {
    match s {
        RoleSource::Builtin => "built-in".into(),
        RoleSource::User(p) => format!("user {p}"),
        RoleSource::Project(p) => format!("project {p}"),
    }
}

fn source_json(s: &RoleSource) -> RoleSourceDocument {
    match s {
        RoleSource::Builtin => RoleSourceDocument::Builtin,
        RoleSource::User(p) => RoleSourceDocument::User { path: p.clone() },
        RoleSource::Project(p) => RoleSourceDocument::Project { path: p.clone() },
    }
}

/// Lists the effective roles and the role files that cannot be used (exit 0), or with `check`
/// reports every bad role file and exits 2 if there is one. `--json`: one document.
pub fn roles(cwd: Option<PathBuf>, check: bool, json_mode: bool) -> Result<Exit> {
    let ctx = project_context(cwd)?;
    let dirs: RoleDirs = role_dirs(&ctx.project_root);
    let set = load_roles(&dirs);
    let invalid: Vec<String> = set.bad.iter().map(|b| b.one_line()).collect();
    if check {
        for bad in &invalid {
            errln!("baton: {bad}");
        }
        if json_mode {
            crate::documents::print(&RolesCheckDocument {
                valid: invalid.is_empty(),
                roles: set.roles.len(),
                invalid: invalid.clone(),
            });
        } else if invalid.is_empty() {
            outln!("{} roles valid", set.roles.len());
        } else {
            outln!(
                "{} roles valid, {} role file(s) invalid",
                set.roles.len(),
                invalid.len()
            );
        }
        return Ok(if invalid.is_empty() {
            Exit::Ok
        } else {
            Exit::Refused
        });
    }
    if json_mode {
        crate::documents::print(&roles_json(&ctx));
        return Ok(Exit::Ok);
    }
    let config = &ctx.config.config;
    for r in &set.roles {
        let (backend, isolation, sandbox) = effective(r, config);
        let class = r
            .meta
            .model_class
            .map(|c| c.to_string())
            .unwrap_or_else(|| "-".into());
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
    if !invalid.is_empty() {
        outln!();
        outln!("invalid role files (skipped; `baton roles check` reports them and exits 2):");
        for bad in &invalid {
            outln!("  {bad}");
        }
    }
    Ok(Exit::Ok)
}

/// What a role runs as once the config's defaults apply: its backend, isolation and sandbox mode.
fn effective(
    r: &baton_protocol::role::RoleSpec,
    config: &baton_protocol::config::Config,
) -> (BackendKind, &'static str, String) {
    let backend = r
        .meta
        .backend
        .or(config.executor.backend)
        .unwrap_or(BackendKind::Baton);
    let isolation = match r.meta.isolation {
        Some(Isolation::Worktree) => "worktree",
        None => "none",
    };
    let mode =
        baton_agent::tools::SandboxPolicy::choose_mode(None, r.meta.sandbox, config.sandbox.mode);
    // What the child really gets: baton's own agent confines its commands, a `command` child is
    // confined itself; a peer CLI is not confined by baton (it applies its own sandbox).
    let sandbox = match backend {
        BackendKind::Baton | BackendKind::Command => mode.to_string(),
        BackendKind::Pi | BackendKind::Codex | BackendKind::Claude => {
            "unconfined by baton (the peer CLI's own sandbox)".to_string()
        }
    };
    (backend, isolation, sandbox)
}

/// `baton roles --json`: `{"roles": [{name, description, model_class, tools, backend, isolation,
/// sandbox, source}], "invalid": ["file: problem", …]}`.
pub fn roles_json(ctx: &ProjectContext) -> RolesDocument {
    let set = load_roles(&role_dirs(&ctx.project_root));
    let config = &ctx.config.config;
    let roles: Vec<RoleDocument> = set
        .roles
        .iter()
        .map(|r| {
            let (backend, isolation, sandbox) = effective(r, config);
            RoleDocument {
                name: r.meta.name.clone(),
                description: r.meta.description.clone(),
                model_class: r.meta.model_class.map(|c| c.to_string()),
                tools: r.meta.tools.clone(),
                backend: backend.as_str().to_string(),
                isolation: isolation.to_string(),
                sandbox: sandbox.to_string(),
                source: source_json(&r.source),
            }
        })
        .collect();
    let invalid: Vec<String> = set.bad.iter().map(|b| b.one_line()).collect();
    RolesDocument { roles, invalid }
}
