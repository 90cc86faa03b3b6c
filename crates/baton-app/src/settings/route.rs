//! A session's routes: the one it runs on (`choose`), those it may fail over to (the later usable
//! routes of the class its route was chosen from), the route that writes its compaction
//! summaries, and the two participants' routes of a routed session (`routing_spec`).

use std::path::Path;
use std::sync::Arc;

use anyhow::{anyhow, bail, Result};
use baton_agent::agent::Fallback;
use baton_agent::routing::state::Control;
use baton_agent::routing::RoutingSpec;
use baton_model::replay::Replay;
use baton_model::routes::{
    build_provider, check_route, default_class, resolve_class, ProcessEnv, ResolvedRoute,
};
use baton_model::Provider;
use baton_protocol::config::Config;
use baton_protocol::{ModelClass, Route, ThinkingLevel};
use baton_state::StateDir;

use super::Env;

/// What picks a session's route, strongest first.
pub(super) struct RouteAsk<'a> {
    pub(super) replay: Option<&'a Path>,
    /// `--model`.
    pub(super) model: Option<&'a str>,
    /// `--model-class`.
    pub(super) model_class: Option<&'a str>,
    /// The route of the session resumed.
    pub(super) resumed: Option<&'a str>,
    /// The Coordinator's `[routing]` value, in a routed session.
    pub(super) coordinator: Option<&'a str>,
    /// The role's model class, when it has a route.
    pub(super) role_class: Option<ModelClass>,
}

/// Chooses the route: --replay > --model > --model-class > BATON_MODEL > BATON_MODEL_CLASS >
/// the resumed session's route > the role's class > models.default_class.
pub(super) fn choose(
    config: &Config,
    ask: &RouteAsk<'_>,
    env: Env<'_>,
) -> Result<(ResolvedRoute, Arc<dyn Provider>)> {
    if let Some(path) = ask.replay {
        return replayed(path);
    }
    let explicit_route = ask
        .model
        .map(|m| ("--model", m.to_string()))
        .or_else(|| env("BATON_MODEL").map(|m| ("BATON_MODEL", m)));
    let explicit_class = ask
        .model_class
        .map(|c| ("--model-class", c.to_string()))
        .or_else(|| env("BATON_MODEL_CLASS").map(|c| ("BATON_MODEL_CLASS", c)));
    let resolved = if let Some((from, text)) = explicit_route.filter(|_| ask.model_class.is_none())
    {
        let route: Route = text.parse().map_err(|e| anyhow!("{from}: {e}"))?;
        check_route(config, &route, &ProcessEnv).map_err(|e| anyhow!("{from}: {e}"))?
    } else if let Some((from, text)) = explicit_class {
        let class: ModelClass = text.parse().map_err(|e| anyhow!("{from}: {e}"))?;
        resolve_class(config, class, &ProcessEnv)?
    } else if let Some(text) = ask.coordinator {
        // A routed session's own route is the Coordinator's.
        match text.parse::<ModelClass>() {
            Ok(class) => resolve_class(config, class, &ProcessEnv)?,
            Err(_) => {
                let route: Route = text
                    .parse()
                    .map_err(|e| anyhow!("routing.coordinator: {e}"))?;
                check_route(config, &route, &ProcessEnv)?
            }
        }
    } else if let Some(m) = ask.resumed {
        let route: Route = m
            .parse()
            .map_err(|e| anyhow!("resumed session model: {e}"))?;
        check_route(config, &route, &ProcessEnv)?
    } else {
        let class = ask.role_class.unwrap_or_else(|| default_class(config));
        resolve_class(config, class, &ProcessEnv)?
    };
    let provider = build_provider(&resolved, &ProcessEnv)?;
    Ok((resolved, provider))
}

/// A local server asked about a model the table does not know (its context, whether its chat
/// template takes tools), once every setting that can refuse the start is checked, so that a
/// refused start sends nothing. The server prepares its answer while the session sets up; the
/// answer is read before the loop's spec is made ([`LocalLearning::learn`]).
pub(super) struct LocalLearning {
    ask: baton_model::probe::LocalAsk,
    resolved: ResolvedRoute,
}

pub(super) fn ask_local(config: &Config, resolved: &ResolvedRoute) -> Option<LocalLearning> {
    Some(LocalLearning {
        ask: baton_model::probe::ask_local_server(config, resolved)?,
        resolved: resolved.clone(),
    })
}

impl LocalLearning {
    /// Reads the server's answer: the route's profile takes the server's context and output
    /// limit, and its provider is built again with it (`None`: nothing changes). A template
    /// without tools is a warning.
    pub(super) fn learn(self) -> Option<(ResolvedRoute, Arc<dyn Provider>)> {
        let mut resolved = self.resolved;
        let props = self.ask.learn(&mut resolved)?;
        if props.supports_tools == Some(false) {
            errln!(
                "baton: warning: the server of {} says its chat template takes no tools (/props: chat_template_caps.supports_tools = false), so the model cannot read files or run commands: start llama-server with --jinja and a model whose template supports tool calls (README, local quick start)",
                resolved.route
            );
        }
        props.n_ctx?;
        // The route's provider was built once already from the same settings; only its limits
        // change.
        match build_provider(&resolved, &ProcessEnv) {
            Ok(provider) => Some((resolved, provider)),
            Err(e) => {
                errln!(
                    "baton: warning: {}: the server's context is not used: {e}",
                    resolved.route
                );
                None
            }
        }
    }
}

/// The route of `--replay FILE`: the cassette played, no config or network needed.
fn replayed(path: &Path) -> Result<(ResolvedRoute, Arc<dyn Provider>)> {
    let provider = Replay::from_file("replay".into(), path)
        .map_err(|e| anyhow!("--replay {}: {e}", path.display()))?;
    let route = Route {
        provider: "replay".into(),
        model: path
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_else(|| "cassette".into()),
        thinking: None,
    };
    let resolved = ResolvedRoute {
        route: route.clone(),
        class: None,
        provider: baton_protocol::config::ProviderConfig {
            kind: baton_protocol::config::ProviderKind::Replay,
            base_url: None,
            api_key_env: None,
            api_key_file: None,
            local: None,
            headers: Default::default(),
            cassette: Some(path.display().to_string()),
            max_output_tokens: None,
            stream_idle_timeout: None,
        },
        api_key: None,
        skipped: Vec::new(),
        profile: baton_model::catalog::Profile::builtin(
            baton_protocol::config::ProviderKind::Replay,
            &route.model,
        ),
    };
    Ok((resolved, Arc::new(provider)))
}

/// The route of `agent.compaction_class`, when set: the one that writes the summaries of a
/// compaction. A class with no usable route is an error naming the key.
pub(super) fn compaction_route(config: &Config) -> Result<Option<Fallback>> {
    let Some(class) = config.agent.compaction_class else {
        return Ok(None);
    };
    let resolved = baton_model::routes::resolve_class(config, class, &ProcessEnv)
        .map_err(|e| anyhow!("agent.compaction_class = \"{class}\": {e}"))?;
    let provider = build_provider(&resolved, &ProcessEnv)
        .map_err(|e| anyhow!("agent.compaction_class = \"{class}\": {e}"))?;
    Ok(Some(fallback(&resolved, resolved.route.clone(), provider)))
}

/// The session's view of a resolved route on `route` (its own, with a thinking level added):
/// the provider, the output limit (the route's option, else the provider's) and the context
/// window of the model table.
pub(super) fn fallback(
    resolved: &ResolvedRoute,
    route: baton_protocol::Route,
    provider: Arc<dyn Provider>,
) -> Fallback {
    Fallback {
        route,
        provider,
        max_output_tokens: resolved
            .profile
            .options
            .max_output_tokens
            .or(resolved.provider.max_output_tokens),
        context_window: resolved.profile.info.context_window,
    }
}

/// The routes of the class `resolved` was chosen from that come after it and can be used now,
/// each with its provider: where the session fails over to when its route runs out of quota or
/// stays overloaded. None for a route given explicitly, by flag, variable or a resumed session.
pub(super) fn class_fallbacks(
    config: &Config,
    resolved: &ResolvedRoute,
    thinking: Option<ThinkingLevel>,
) -> Vec<Fallback> {
    let Some(list) = resolved.class.and_then(|c| config.models.class(c)) else {
        return Vec::new();
    };
    let routes = list.routes();
    let after = routes
        .iter()
        .position(|r| **r == resolved.route)
        .map_or(routes.len(), |i| i + 1);
    let mut fallbacks = Vec::new();
    for route in routes.into_iter().skip(after) {
        if *route == resolved.route {
            continue;
        }
        let built = check_route(config, route, &ProcessEnv)
            .map_err(|e| e.to_string())
            .and_then(|checked| {
                let provider = build_provider(&checked, &ProcessEnv).map_err(|e| e.to_string())?;
                Ok((checked, provider))
            });
        match built {
            Ok((checked, provider)) => {
                let mut route = route.clone();
                if route.thinking.is_none() {
                    route.thinking = thinking;
                }
                fallbacks.push(fallback(&checked, route, provider));
            }
            Err(e) => errln!("baton: route {route} cannot be failed over to: {e}"),
        }
    }
    fallbacks
}

/// The routes of one participant from its `[routing]` value: a model class (its first usable
/// route, then the class's later ones to fail over to) or one explicit route.
fn seat_chain(
    config: &Config,
    key: &str,
    text: &str,
    thinking: Option<ThinkingLevel>,
) -> Result<Vec<Fallback>> {
    chain_of(
        config,
        (
            &format!("routing.{key} = \"{text}\""),
            &format!("routing.{key}"),
        ),
        text,
        thinking,
    )
}

/// `/model NAME`: the routes a session switches to, as a routed seat's value is read.
pub(super) fn switch_chain(
    config: &Config,
    text: &str,
    thinking: Option<ThinkingLevel>,
) -> Result<Vec<Fallback>> {
    let said = format!("/model {text}");
    chain_of(config, (&said, &said), text, thinking)
}

/// A model class's usable routes from its first (or one explicit route), each with its
/// provider; errors begin with `said` (the first for the name, the second for the provider).
fn chain_of(
    config: &Config,
    said: (&str, &str),
    text: &str,
    thinking: Option<ThinkingLevel>,
) -> Result<Vec<Fallback>> {
    let (name, key) = said;
    let resolved = match text.parse::<ModelClass>() {
        Ok(class) => {
            resolve_class(config, class, &ProcessEnv).map_err(|e| anyhow!("{name}: {e}"))?
        }
        Err(_) => {
            let route: Route = text.parse().map_err(|e| {
                anyhow!("{name}: {e}: give a model class (fast, balanced, frontier, fav) or provider/model[:thinking]")
            })?;
            check_route(config, &route, &ProcessEnv).map_err(|e| anyhow!("{name}: {e}"))?
        }
    };
    let provider = build_provider(&resolved, &ProcessEnv).map_err(|e| anyhow!("{key}: {e}"))?;
    let mut route = resolved.route.clone();
    if route.thinking.is_none() {
        route.thinking = thinking;
    }
    let first = fallback(&resolved, route, provider);
    Ok(std::iter::once(first)
        .chain(class_fallbacks(config, &resolved, thinking))
        .collect())
}

/// The routing of session `session_id`, when `--routing` was given or the session has a routing
/// journal (a resumed routed session stays routed, keeping its control unless `--routing` says
/// otherwise). Both routes must be configured; `wrap` is applied to each route (the recorder of
/// `--record`).
pub(super) fn routing_spec(
    config: &Config,
    state: &StateDir,
    session_id: &str,
    requested: Option<Control>,
    wrap: &dyn Fn(Fallback) -> Fallback,
) -> Result<Option<RoutingSpec>> {
    let journal = baton_agent::routing::journal::path(state, session_id);
    if requested.is_none() && !journal.exists() {
        return Ok(None);
    }
    let r = &config.routing;
    let (Some(coordinator), Some(executor)) = (r.coordinator.as_deref(), r.executor.as_deref())
    else {
        bail!("routing needs both participants' routes: set `coordinator` and `executor` under [routing] in the config (a model class such as \"frontier\" and \"fast\", or provider/model[:thinking])");
    };
    let thinking = config.agent.thinking;
    let chain = |key, text| -> Result<Vec<Fallback>> {
        Ok(seat_chain(config, key, text, thinking)?
            .into_iter()
            .map(wrap)
            .collect())
    };
    Ok(Some(RoutingSpec {
        coordinator: chain("coordinator", coordinator)?,
        executor: chain("executor", executor)?,
        journal,
        projection: r.projection.unwrap_or(true),
        start: requested,
    }))
}
