//! The documents of `baton models --json` and `baton roles --json` (and the MCP `models` and
//! `roles` tools): the model classes with their routes, and the effective roles.

use baton_model::routes::{check_route, default_class, ProcessEnv};
use baton_protocol::role::{BackendKind, Isolation, RoleSource};
use baton_protocol::ModelClass;
use baton_roles::load_roles;

use crate::documents::{
    to_value, ModelClassDocument, ModelsDocument, RoleDocument, RoleSourceDocument, RolesDocument,
    RouteCheck,
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
            }
        })
        .collect();
    let invalid: Vec<String> = set.bad.iter().map(|b| b.one_line()).collect();
    RolesDocument { roles, invalid }
}
