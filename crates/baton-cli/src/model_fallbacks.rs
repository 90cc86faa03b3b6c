//! The routes a session may fail over to: the later usable routes of the class its route was
//! chosen from (shared by `baton agent` and the routed participants of `session_routing`).

use baton_agent::agent::Fallback;
use baton_model::routes::{build_provider, check_route, ProcessEnv, ResolvedRoute};
use baton_protocol::config::Config;
use baton_protocol::ThinkingLevel;

/// The route of `agent.compaction_class`, when set: the one that writes the summaries of a
/// compaction. A class with no usable route is an error naming the key.
pub fn compaction_route(config: &Config) -> anyhow::Result<Option<Fallback>> {
    let Some(class) = config.agent.compaction_class else {
        return Ok(None);
    };
    let resolved = baton_model::routes::resolve_class(config, class, &ProcessEnv)
        .map_err(|e| anyhow::anyhow!("agent.compaction_class = \"{class}\": {e}"))?;
    let provider = build_provider(&resolved, &ProcessEnv)
        .map_err(|e| anyhow::anyhow!("agent.compaction_class = \"{class}\": {e}"))?;
    Ok(Some(fallback(&resolved, resolved.route.clone(), provider)))
}

/// The session's view of a resolved route on `route` (its own, with a thinking level added):
/// the provider, the output limit (the route's option, else the provider's) and the context
/// window of the model table.
pub fn fallback(
    resolved: &ResolvedRoute,
    route: baton_protocol::Route,
    provider: std::sync::Arc<dyn baton_model::Provider>,
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
pub fn class_fallbacks(
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
