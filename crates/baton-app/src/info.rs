//! The documents of `baton models --json`, `baton roles --json` and `baton skills --json` (and the
//! MCP `models` and `roles` tools): the model classes with their routes, the effective roles, and
//! the skills.

use baton_model::routes::{check_route, default_class, ProcessEnv};
use baton_protocol::role::{BackendKind, Isolation, RoleSource};
use baton_protocol::ModelClass;
use baton_roles::load_roles;

use crate::documents::{
    to_value, ModelClassDocument, ModelsDocument, PriceDocument, RoleDocument, RoleSourceDocument,
    RolesDocument, RouteCheck, SkillDocument, SkillsDocument,
};
use crate::project::{role_dirs, ProjectContext};

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
                                price: PriceDocument::of(&config.prices, r),
                            },
                            Err(e) => RouteCheck {
                                route: r.to_string(),
                                usable: false,
                                model_info: None,
                                thinking_sent: None,
                                options: None,
                                error: Some(e.to_string()),
                                price: PriceDocument::of(&config.prices, r),
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
        config_files: ctx.config.file_names(),
        default_class: default_class(config).to_string(),
        classes,
    }
}

fn source_json(s: &RoleSource) -> RoleSourceDocument {
    match s {
        RoleSource::Builtin => RoleSourceDocument::Builtin,
        RoleSource::User(p) => RoleSourceDocument::User { path: p.clone() },
        RoleSource::Project(p) => RoleSourceDocument::Project { path: p.clone() },
    }
}

/// What a role runs as once the config's defaults apply: its backend, isolation and sandbox mode.
pub fn effective(
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
                skills: r.meta.skills.clone(),
                skills_note: skills_note(backend, &r.meta.skills).map(str::to_string),
            }
        })
        .collect();
    let invalid: Vec<String> = set.bad.iter().map(|b| b.one_line()).collect();
    RolesDocument { roles, invalid }
}

/// How a role's named skills reach a child of `backend`, when not as named: `baton` children and
/// pi get exactly them; the other peers find their own.
pub fn skills_note(backend: BackendKind, skills: &[String]) -> Option<&'static str> {
    if skills.is_empty() {
        return None;
    }
    match backend {
        BackendKind::Baton | BackendKind::Pi => None,
        BackendKind::Claude => {
            Some("not passed: Claude Code has no way to be given skills; it loads those of its own .claude/skills folders")
        }
        BackendKind::Codex => {
            Some("not passed: Codex has no way to be given skills; it loads those of its own .agents/skills folders")
        }
        BackendKind::Command => Some("not passed: a command child has no skills"),
    }
}

/// The names roles select that no skill folder has, one line each: `role R (source): …`.
pub fn unknown_skills(ctx: &ProjectContext, set: &baton_roles::RoleSet) -> Vec<String> {
    let skills = crate::project::skills(ctx);
    let mut out = Vec::new();
    for r in &set.roles {
        let (_, missing) = skills.select(&r.meta.skills);
        for name in missing {
            out.push(format!(
                "role {} ({}): skill `{name}` is in none of the skill folders: add .baton/skills/{name}/SKILL.md, or remove it from `skills` (see `baton skills`)",
                r.meta.name,
                match &r.source {
                    RoleSource::Builtin => "built-in".to_string(),
                    RoleSource::User(p) | RoleSource::Project(p) => p.clone(),
                }
            ));
        }
    }
    out
}

/// The MCP servers roles select that the config does not define, one line each.
pub fn unknown_mcp_servers(ctx: &ProjectContext, set: &baton_roles::RoleSet) -> Vec<String> {
    let servers = &ctx.config.config.mcp_servers;
    let mut out = Vec::new();
    for r in &set.roles {
        for name in r.meta.mcp.iter().filter(|n| !servers.contains_key(*n)) {
            out.push(format!(
                "role {}: MCP server `{name}` is not configured: add [mcp_servers.{name}] (docs/config.md), or remove it from `mcp`",
                r.meta.name
            ));
        }
    }
    out
}

/// `baton skills --json`: every skill found, the roles naming each, the shadowed and bad ones.
pub fn skills_json(ctx: &ProjectContext) -> SkillsDocument {
    let set = crate::project::skills(ctx);
    let roles = load_roles(&role_dirs(&ctx.project_root));
    let doc = |k: &baton_roles::skills::Skill| SkillDocument {
        name: k.name.clone(),
        description: k.description.clone(),
        source: k.origin.as_str().to_string(),
        path: k.file().display().to_string(),
        roles: roles
            .roles
            .iter()
            .filter(|r| r.meta.skills.contains(&k.name))
            .map(|r| r.meta.name.clone())
            .collect(),
    };
    SkillsDocument {
        skills: set.skills.values().map(doc).collect(),
        shadowed: set.shadowed.iter().map(doc).collect(),
        invalid: set.bad.iter().map(|b| b.to_string()).collect(),
        folders: crate::project::skill_dirs(ctx)
            .iter()
            .map(|d| d.path.display().to_string())
            .collect(),
    }
}
