//! `baton models` and `baton roles`.

use std::path::PathBuf;

use crate::documents::RolesCheckDocument;
use anyhow::Result;
use baton_app::exit::Exit;
use baton_app::info::{effective, models_json, roles_json};
use baton_app::project::{project_context, role_dirs};
use baton_model::catalog::Profile;
use baton_model::routes::{check_route, default_class, ProcessEnv};
use baton_protocol::config::ThinkingStyle;
use baton_protocol::role::RoleSource;
use baton_protocol::ModelClass;
use baton_protocol::Route;
use baton_roles::{load_roles, RoleDirs};

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
    for line in baton_app::config::Shadowed::lines(&ctx.config.shadowed) {
        outln!("note: {line}");
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
                                let key = if resolved.api_key.is_some() {
                                    "key set"
                                } else {
                                    "no key configured or needed"
                                };
                                outln!("          ✓ {r} is chosen now (configured, {key}; `baton doctor` asks its server)");
                            }
                            for line in describe(&resolved.profile, r) {
                                outln!("            {line}");
                            }
                            outln!("            {}", price_line(config, r));
                        }
                        Err(e) => outln!("          ✗ {r}: {e}"),
                    }
                }
            }
        }
    }
    Ok(Exit::Ok)
}

/// A route's price and where it comes from, or how to give it one.
pub fn price_line(config: &baton_protocol::config::Config, r: &Route) -> String {
    match baton_app::documents::PriceDocument::of(&config.prices, r) {
        Some(p) => p.line(),
        None => format!(
            "unpriced: costs and --budget-usd do not count it; give it [prices.\"{}/{}\"] (docs/config.md)",
            r.provider, r.model
        ),
    }
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

/// Lists the effective roles and the role files that cannot be used (exit 0), or with `check`
/// reports every bad role file and exits 2 if there is one. `--json`: one document.
pub fn roles(cwd: Option<PathBuf>, check: bool, json_mode: bool) -> Result<Exit> {
    let ctx = project_context(cwd)?;
    let dirs: RoleDirs = role_dirs(&ctx.project_root);
    let set = load_roles(&dirs);
    let mut invalid: Vec<String> = set.bad.iter().map(|b| b.one_line()).collect();
    if check {
        // A role that names a skill no folder has is invalid too.
        invalid.extend(baton_app::info::unknown_skills(&ctx, &set));
        invalid.extend(baton_app::info::unknown_mcp_servers(&ctx, &set));
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
    // The name column is as wide as the longest name, so long names keep the columns aligned.
    let w = set
        .roles
        .iter()
        .map(|r| r.meta.name.chars().count())
        .max()
        .unwrap_or(0)
        .max(14);
    for r in &set.roles {
        let (backend, isolation, sandbox) = effective(r, config);
        let class = r
            .meta
            .model_class
            .map(|c| c.to_string())
            .unwrap_or_else(|| "-".into());
        outln!(
            "{:<w$} {:<9} tools=[{}] backend={} isolation={} sandbox={}  {}",
            r.meta.name,
            class,
            r.meta.tools.join(","),
            backend.as_str(),
            isolation,
            sandbox,
            source_text(&r.source)
        );
        outln!("{:w$} {}", "", r.meta.description);
        if !r.meta.skills.is_empty() {
            let note = baton_app::info::skills_note(backend, &r.meta.skills)
                .map(|n| format!(" ({n})"))
                .unwrap_or_default();
            outln!("{:w$} skills=[{}]{note}", "", r.meta.skills.join(","));
        }
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

/// `baton skills`: every skill found (name, where, the roles naming it, when it applies), the
/// shadowed ones and the files that cannot be used.
pub fn skills(cwd: Option<PathBuf>, json_mode: bool) -> Result<Exit> {
    let ctx = project_context(cwd)?;
    let doc = baton_app::info::skills_json(&ctx);
    if json_mode {
        crate::documents::print(&doc);
        return Ok(Exit::Ok);
    }
    if doc.skills.is_empty() {
        outln!(
            "no skills: a skill is a folder holding SKILL.md (frontmatter `name`, `description`) in one of: {}",
            doc.folders.join(", ")
        );
    }
    let w = doc
        .skills
        .iter()
        .map(|k| k.name.chars().count())
        .max()
        .unwrap_or(0)
        .max(12);
    for k in &doc.skills {
        let roles = if k.roles.is_empty() {
            "-".to_string()
        } else {
            k.roles.join(",")
        };
        outln!("{:<w$} {:<8} roles={roles}  {}", k.name, k.source, k.path);
        outln!("{:w$} {}", "", k.description);
    }
    if !doc.shadowed.is_empty() {
        outln!();
        outln!("shadowed (a folder looked in earlier has a skill of the same name):");
        for k in &doc.shadowed {
            outln!("  {} {}", k.name, k.path);
        }
    }
    if !doc.invalid.is_empty() {
        outln!();
        outln!("invalid skills (skipped):");
        for bad in &doc.invalid {
            outln!("  {bad}");
        }
    }
    Ok(Exit::Ok)
}
