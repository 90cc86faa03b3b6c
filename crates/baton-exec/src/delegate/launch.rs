//! Planning one child launch: its route (model and thinking level), the backend's program and
//! the launch description. Delegation and Flow both launch children through here.

use std::path::{Path, PathBuf};

use baton_model::routes::{check_route, default_class, resolve_class};
use baton_protocol::role::{BackendKind, RoleSpec};
use baton_protocol::{ModelClass, Route, ThinkingLevel};

use super::DelegateEnv;
use crate::backend::{launch_for, TaskSpec};
use crate::types::Launch;
use crate::types::{ExecError, ExecErrorCode};

pub fn backend_of(env: &DelegateEnv, role: &RoleSpec) -> BackendKind {
    role.meta
        .backend
        .or(env.config.executor.backend)
        .unwrap_or(BackendKind::Baton)
}

/// The model a child runs: for the `baton` backend a checked route; for peer agents the model
/// name passed through; nothing for `command` children or peers left on their own default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChildRoute {
    pub model: Option<String>,
    pub thinking: Option<ThinkingLevel>,
    /// What the caller should know about the choice (a route a peer cannot serve was skipped,
    /// or no route was left and the peer's own default model runs).
    pub notes: Vec<String>,
}

/// Whether a peer agent can run `route`: Claude Code runs Claude models (an Anthropic provider,
/// or a model named `claude…` behind another provider name), Codex does not, pi runs any. The
/// provider's kind is baton's config (or a built-in provider's).
fn peer_serves(env: &DelegateEnv, backend: BackendKind, route: &Route) -> Result<(), String> {
    use baton_protocol::config::ProviderKind;
    let kind = baton_model::routes::provider_config(&env.config, &route.provider).map(|p| p.kind);
    let claude = kind == Some(ProviderKind::Anthropic) || route.model.starts_with("claude");
    let ok = match backend {
        BackendKind::Codex => !claude,
        BackendKind::Claude => claude,
        _ => true,
    };
    match ok {
        true => Ok(()),
        false => Err(format!(
            "{} cannot run {route} (its provider is {})",
            backend.as_str(),
            kind.map_or("unknown".to_string(), |k| k.as_str().to_string())
        )),
    }
}

/// What the caller chose for one child's model; the role and the config decide what is left
/// open. Parsed once, where the request is read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RouteChoice {
    /// A route (`provider/model[:thinking]`) or, for a peer agent, its own model name.
    pub model: Option<String>,
    pub model_class: Option<ModelClass>,
    pub thinking: Option<ThinkingLevel>,
}

/// Everything one child launch needs besides the executor: what [`plan_launch`] turns into a
/// [`Launch`].
#[derive(Debug, Clone)]
pub struct LaunchPlan<'a> {
    pub role: &'a RoleSpec,
    pub backend: BackendKind,
    /// From [`child_route`], resolved before anything is set up for the child.
    pub route: ChildRoute,
    pub task: String,
    pub cwd: PathBuf,
    /// The frozen role file a `baton` child loads ([`write_frozen_role`]).
    pub role_file: Option<PathBuf>,
    pub extra_env: Vec<(String, String)>,
}

/// The launch of one child: its model and thinking level, the backend's program (this binary for
/// `baton`, `executor.programs.<backend>` for the others) and the command line the backend builds.
pub fn plan_launch(env: &DelegateEnv, plan: LaunchPlan<'_>) -> Result<Launch, ExecError> {
    let LaunchPlan {
        role,
        backend,
        route,
        task,
        cwd,
        role_file,
        extra_env,
    } = plan;
    let program = match backend {
        BackendKind::Baton => Some(env.baton_exe.clone()),
        BackendKind::Pi | BackendKind::Codex | BackendKind::Claude | BackendKind::Command => env
            .config
            .executor
            .programs
            .get(backend.as_str())
            .map(PathBuf::from),
    };
    let mut launch = launch_for(&TaskSpec {
        backend,
        role: role.clone(),
        task,
        cwd,
        route: route.model,
        thinking: route.thinking.map(|t| t.to_string()),
        program,
        role_file,
        max_turns: None,
        extra_env,
        skills: match backend {
            BackendKind::Baton | BackendKind::Pi => role_skills(env, role),
            BackendKind::Codex | BackendKind::Claude | BackendKind::Command => Vec::new(),
        },
    })?;
    if backend == BackendKind::Command {
        // A command child is as much the model's doing as a `bash` call (a role file names it):
        // the same sandbox and environment allow-list apply.
        let mode = baton_tool::SandboxPolicy::choose_mode(
            None,
            role.meta.sandbox,
            env.config.sandbox.mode,
        );
        launch.confine = Some(crate::types::Confine {
            policy: baton_tool::SandboxPolicy::from_config(&env.config, mode, &env.cwd),
            env: baton_tool::EnvFilter::for_config(&env.config),
        });
    }
    Ok(launch)
}

/// The folders the skills of the project at `project_root` are looked up in, in order: the
/// project's, the user's (`$XDG_CONFIG_HOME/baton/skills`, else `~/.config/baton/skills`), then
/// `skills.paths`, less `skills.ignore`.
pub fn skill_dirs(
    project_root: &Path,
    config: &baton_protocol::config::Config,
) -> Vec<baton_roles::skills::SkillDir> {
    let home = std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    baton_roles::skills::skill_dirs(
        project_root,
        baton_tool::protect::user_config_dir(home.as_deref()).as_deref(),
        &config.skills.paths,
        &config.skills.ignore,
        home.as_deref(),
    )
}

/// Main's skills: those of the project's and the user's skill folders and `skills.paths`.
pub fn skills(env: &DelegateEnv) -> baton_roles::skills::SkillSet {
    let root = env.state.project_root().unwrap_or(&env.cwd);
    baton_roles::skills::discover(&skill_dirs(root, &env.config))
}

/// The folders of the skills `role` names, found in Main's skill folders (seed 004: role skill
/// names resolve through Main's registry); a name that is in none is named in a warning (on the
/// stderr of the process that launches the child) and skipped.
fn role_skills(env: &DelegateEnv, role: &RoleSpec) -> Vec<PathBuf> {
    if role.meta.skills.is_empty() {
        return Vec::new();
    }
    let (found, missing) = skills(env).select(&role.meta.skills);
    for name in missing {
        baton_text::errln!(
            "baton: warning: role {} names skill `{name}`, which is in none of the skill folders (see `baton skills`): skipped",
            role.meta.name
        );
    }
    found.into_iter().map(|k| k.dir).collect()
}

/// The model of a child by backend. `baton` children get a route checked against baton's own
/// providers and keys ([`entry_route`]). Peer agents (pi, codex, claude) use their own logins, so
/// an explicit `model` is passed through (a bare model name is fine). A class — the entry's, the
/// role's, else `models.default_class` — maps to its routes in order, primary then fallbacks
/// (seed 004): the first one the peer can serve ([`peer_serves`]) is taken, each skipped one
/// named in a note; when none is left the peer's own default model runs, and a note says so.
pub fn child_route(
    env: &DelegateEnv,
    backend: BackendKind,
    e: &RouteChoice,
    role: &RoleSpec,
) -> Result<ChildRoute, ExecError> {
    let thinking = e.thinking;
    match backend {
        BackendKind::Command => Ok(ChildRoute::default()),
        BackendKind::Baton => {
            let r = entry_route(env, e, role)?;
            let thinking = r.thinking;
            let mut model = r;
            model.thinking = None;
            Ok(ChildRoute {
                model: Some(model.to_string()),
                thinking,
                notes: Vec::new(),
            })
        }
        BackendKind::Pi | BackendKind::Codex | BackendKind::Claude => {
            let mut notes = Vec::new();
            let from_route = |r: &Route| {
                let mut m = r.clone();
                let t = m.thinking.take();
                (m.to_string(), t)
            };
            let (model, route_thinking) = if let Some(m) = &e.model {
                match m.parse::<Route>() {
                    Ok(r) => {
                        let (m, t) = from_route(&r);
                        (Some(m), t)
                    }
                    Err(_) => (Some(m.trim().to_string()), None),
                }
            } else {
                let class = e
                    .model_class
                    .or(baton_roles::role_class(role, &env.config))
                    .unwrap_or_else(|| default_class(&env.config));
                let routes: Vec<Route> = env
                    .config
                    .models
                    .class(class)
                    .map(|l| l.routes().into_iter().cloned().collect())
                    .unwrap_or_default();
                let mut chosen = None;
                for r in &routes {
                    let serves = peer_serves(env, backend, r).and_then(|()| {
                        baton_model::routes::honours_thinking(&env.config, r, thinking)
                    });
                    match serves {
                        Ok(()) => {
                            chosen = Some(r.clone());
                            break;
                        }
                        Err(why) => notes.push(format!("skipped route {r}: {why}")),
                    }
                }
                match chosen {
                    Some(r) => {
                        let (m, t) = from_route(&r);
                        (Some(m), t)
                    }
                    None => {
                        notes.push(format!(
                            "no route of class {class} that {} can run is configured: its own default model runs",
                            backend.as_str()
                        ));
                        (None, None)
                    }
                }
            };
            Ok(ChildRoute {
                model,
                thinking: thinking.or(route_thinking),
                notes,
            })
        }
    }
}

/// Resolves the route of an entry: `model` > `model_class` > the role's class > the default class.
pub fn entry_route(
    env: &DelegateEnv,
    e: &RouteChoice,
    role: &RoleSpec,
) -> Result<Route, ExecError> {
    let prepare = |m: String| ExecError::new(ExecErrorCode::Prepare, m);
    let mut route = if let Some(m) = &e.model {
        let r: Route = m.parse().map_err(|err| prepare(format!("model: {err}")))?;
        check_route(&env.config, &r, env.env.as_ref()).map_err(|err| prepare(err.to_string()))?;
        r
    } else {
        let class = e
            .model_class
            .or(baton_roles::role_class(role, &env.config))
            .unwrap_or_else(|| default_class(&env.config));
        match e.thinking {
            // A level asked for skips the routes that cannot honour it, primary to fallback
            // (seed 004): each skipped one is named when none is left.
            Some(level) => {
                let routes: Vec<Route> = env
                    .config
                    .models
                    .class(class)
                    .map(|l| l.routes().into_iter().cloned().collect())
                    .unwrap_or_default();
                let mut skipped = Vec::new();
                let mut chosen = None;
                for r in routes {
                    match baton_model::routes::honours_thinking(&env.config, &r, Some(level))
                        .and_then(|()| {
                            check_route(&env.config, &r, env.env.as_ref())
                                .map(|_| ())
                                .map_err(|e| e.to_string())
                        }) {
                        Ok(()) => {
                            chosen = Some(r);
                            break;
                        }
                        Err(why) => skipped.push(format!("  - {r}: {why}")),
                    }
                }
                chosen.ok_or_else(|| {
                    prepare(format!(
                        "no route of class {class} can run at thinking level {level}:\n{}",
                        skipped.join("\n")
                    ))
                })?
            }
            None => {
                resolve_class(&env.config, class, env.env.as_ref())
                    .map_err(|err| prepare(err.to_string()))?
                    .route
            }
        }
    };
    if let Some(t) = e.thinking {
        route.thinking = Some(t);
    }
    Ok(route)
}

/// Writes `role` as `<dir>/<index>-<name>.md`, the file a `baton` child loads with `--role-file`
/// (for a delegate call `dir` is [`StateDir::frozen_roles`] of the run).
pub fn write_frozen_role(dir: &Path, index: usize, role: &RoleSpec) -> Result<PathBuf, ExecError> {
    baton_state::create_own_dir(dir).map_err(|e| {
        ExecError::new(
            ExecErrorCode::Prepare,
            format!("cannot create {}: {e}", dir.display()),
        )
    })?;
    let path = dir.join(format!("{index}-{}.md", role.meta.name));
    let yaml = serde_norway::to_string(&role.meta).map_err(|e| {
        ExecError::new(
            ExecErrorCode::Prepare,
            format!("cannot write role `{}`: {e}", role.meta.name),
        )
    })?;
    std::fs::write(&path, format!("---\n{yaml}---\n{}\n", role.body)).map_err(|e| {
        ExecError::new(
            ExecErrorCode::Prepare,
            format!("cannot write {}: {e}", path.display()),
        )
    })?;
    Ok(path)
}

#[cfg(test)]
mod route_tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::types::Limits;
    use baton_protocol::config::{Config, RouteList};
    use baton_roles::builtin_roles;
    use baton_roles::RoleDirs;
    use baton_state::StateDir;
    use std::sync::Arc;

    fn env(config: Config) -> DelegateEnv {
        DelegateEnv {
            config,
            role_dirs: RoleDirs {
                user: None,
                project: None,
                project_trusted: baton_roles::Trust::Yes,
            },
            cwd: PathBuf::from("/tmp"),
            state: StateDir::at("/tmp/.baton/state"),
            worktree_root: PathBuf::from("/tmp/wt"),
            baton_exe: PathBuf::from("/bin/true"),
            limits: Limits::default(),
            output_cap: 1024,
            env: Arc::new(std::collections::BTreeMap::<String, String>::new()),
            reload: None,
        }
    }

    fn scout() -> RoleSpec {
        builtin_roles()
            .unwrap()
            .into_iter()
            .find(|r| r.meta.name == "scout")
            .unwrap()
    }

    fn entry(model: Option<&str>, class: Option<&str>) -> RouteChoice {
        RouteChoice {
            model: model.map(str::to_string),
            model_class: class.map(|c| c.parse().unwrap()),
            thinking: None,
        }
    }

    /// seed 004 (lines 38, 412): a requested thinking level skips the routes whose model takes
    /// none, for `baton` children and peers alike.
    #[test]
    fn a_thinking_level_skips_the_routes_that_cannot_honour_it() {
        let scout = scout();
        let mut config = Config::default();
        config.models.fast = Some(RouteList::Many(vec![
            "openai/gpt-4o".parse().unwrap(),
            "openai/o3".parse().unwrap(),
        ]));
        let env = env(config);
        let mut choice = entry(None, Some("fast"));
        choice.thinking = Some(ThinkingLevel::High);
        let r = child_route(&env, BackendKind::Codex, &choice, &scout).unwrap();
        assert_eq!(r.model.as_deref(), Some("openai/o3"));
        assert_eq!(r.thinking, Some(ThinkingLevel::High));
        assert_eq!(r.notes.len(), 1, "{:?}", r.notes);
        assert!(
            r.notes[0].starts_with("skipped route openai/gpt-4o: "),
            "{:?}",
            r.notes
        );
        assert!(
            r.notes[0].contains("takes no thinking level"),
            "{:?}",
            r.notes
        );
        // With no level asked, the primary is taken.
        let r = child_route(&env, BackendKind::Codex, &entry(None, Some("fast")), &scout).unwrap();
        assert_eq!(r.model.as_deref(), Some("openai/gpt-4o"));
    }

    #[test]
    fn a_peer_skips_the_routes_it_cannot_serve_in_order() {
        let scout = scout();
        let mut config = Config::default();
        config.models.fast = Some(RouteList::Many(vec![
            "anthropic/claude-haiku".parse().unwrap(),
            "openai/gpt-5-mini:low".parse().unwrap(),
        ]));
        let env = env(config);
        // Codex serves OpenAI's APIs only: the Anthropic primary is skipped, named.
        let r = child_route(&env, BackendKind::Codex, &entry(None, Some("fast")), &scout).unwrap();
        assert_eq!(r.model.as_deref(), Some("openai/gpt-5-mini"));
        assert_eq!(r.thinking, Some(ThinkingLevel::Low));
        assert_eq!(
            r.notes,
            ["skipped route anthropic/claude-haiku: codex cannot run anthropic/claude-haiku (its provider is anthropic)"]
        );
        // Claude Code takes the primary; pi takes whatever comes first.
        let r = child_route(
            &env,
            BackendKind::Claude,
            &entry(None, Some("fast")),
            &scout,
        )
        .unwrap();
        assert_eq!(r.model.as_deref(), Some("anthropic/claude-haiku"));
        assert!(r.notes.is_empty());
    }

    #[test]
    fn peers_take_models_unchecked_and_baton_children_need_usable_routes() {
        let scout = scout();
        let mut config = Config::default();
        config.models.fast = Some(RouteList::One(
            "anthropic/claude-haiku:low".parse().unwrap(),
        ));
        let env = env(config);
        // A bare model name passes through to a peer; no baton key is needed.
        let r = child_route(
            &env,
            BackendKind::Codex,
            &entry(Some("gpt-5.5"), None),
            &scout,
        )
        .unwrap();
        assert_eq!(
            r,
            ChildRoute {
                model: Some("gpt-5.5".into()),
                thinking: None,
                notes: vec![],
            }
        );
        // A class maps to its first route the peer can serve, without a credential check.
        let r = child_route(&env, BackendKind::Pi, &entry(None, Some("fast")), &scout).unwrap();
        assert_eq!(
            r,
            ChildRoute {
                model: Some("anthropic/claude-haiku".into()),
                thinking: Some(ThinkingLevel::Low),
                notes: vec![],
            }
        );
        // Nothing chosen and the role's class unset in config: the peer's default model, said.
        let r = child_route(
            &env,
            BackendKind::Claude,
            &entry(None, Some("balanced")),
            &scout,
        )
        .unwrap();
        assert_eq!((r.model, r.thinking), (None, None));
        assert_eq!(
            r.notes,
            ["no route of class balanced that claude can run is configured: its own default model runs"]
        );
        // A baton child checks the route against baton's providers and keys.
        let e =
            child_route(&env, BackendKind::Baton, &entry(None, Some("fast")), &scout).unwrap_err();
        assert!(e.message.contains("ANTHROPIC_API_KEY"), "{}", e.message);
    }
}
