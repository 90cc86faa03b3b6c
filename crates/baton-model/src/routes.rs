//! Model classes → routes → providers.
//!
//! A class (`fast`, `balanced`, `frontier`, `fav`) maps in config to one route or a list of routes.
//! Resolution happens before launch: the first usable route wins, and a route is usable when
//! its provider is configured and its credentials (or cassette) are present. The usable routes
//! after it are where a session fails over to at run time (`baton-agent`'s loop).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use baton_protocol::config::{Config, OutputTokensField, Price, ProviderConfig, ProviderKind};
use baton_protocol::{ModelClass, Route, Usage};

use crate::anthropic::Anthropic;
use crate::catalog::{model_info, Profile, ThinkingPlan};
use crate::error::ModelError;
use crate::http::Connection;
use crate::openai_chat::OpenAiChat;
use crate::openai_responses::OpenAiResponses;
use crate::provider::Provider;
use crate::replay::Replay;

/// Providers every config has unless it defines a table of the same name.
pub fn builtin_providers() -> BTreeMap<String, ProviderConfig> {
    let mk = |kind, base_url: Option<&str>, key: Option<&str>| ProviderConfig {
        kind,
        base_url: base_url.map(str::to_string),
        api_key_env: key.map(str::to_string),
        api_key_file: None,
        local: None,
        headers: BTreeMap::new(),
        cassette: None,
        max_output_tokens: None,
        stream_idle_timeout: None,
    };
    BTreeMap::from([
        (
            "openai".to_string(),
            mk(ProviderKind::OpenAiResponses, None, Some("OPENAI_API_KEY")),
        ),
        (
            "anthropic".to_string(),
            mk(ProviderKind::Anthropic, None, Some("ANTHROPIC_API_KEY")),
        ),
        (
            "openrouter".to_string(),
            mk(
                ProviderKind::OpenAi,
                Some("https://openrouter.ai/api/v1"),
                Some("OPENROUTER_API_KEY"),
            ),
        ),
        (
            "ollama".to_string(),
            mk(
                ProviderKind::OpenAi,
                Some("http://127.0.0.1:11434/v1"),
                None,
            ),
        ),
    ])
}

/// Looks up a provider table: the config's own, else a built-in one.
pub fn provider_config(config: &Config, name: &str) -> Option<ProviderConfig> {
    config
        .providers
        .get(name)
        .cloned()
        .or_else(|| builtin_providers().remove(name))
}

/// The environment a resolution reads (API keys). Tests pass a map instead of the process env.
pub trait Env {
    fn var(&self, key: &str) -> Option<String>;
}

/// The real process environment.
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, key: &str) -> Option<String> {
        std::env::var(key).ok().filter(|v| !v.is_empty())
    }
}

impl Env for BTreeMap<String, String> {
    fn var(&self, key: &str) -> Option<String> {
        self.get(key).cloned()
    }
}

/// Why a route cannot be used now.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    #[error("provider `{provider}` of route `{route}` is not configured: add a [providers.{provider}] table (kind, base_url, api_key_env) to your config")]
    UnknownProvider { route: String, provider: String },
    #[error("route `{route}` needs an API key: set the environment variable {var} (named by providers.{provider}.api_key_env)")]
    MissingKey {
        route: String,
        provider: String,
        var: String,
    },
    #[error("route `{route}`: cannot read the key file {path} (providers.{provider}.api_key_file): {message}")]
    KeyFile {
        route: String,
        provider: String,
        path: String,
        message: String,
    },
    #[error("route `{route}`: providers.{provider}.kind is \"replay\" but providers.{provider}.cassette is {problem}")]
    Cassette {
        route: String,
        provider: String,
        problem: String,
    },
    #[error("providers.{provider}.base_url `{url}` is not a usable URL ({message}): write it like \"http://127.0.0.1:11434/v1\"")]
    BadUrl {
        provider: String,
        url: String,
        message: String,
    },
    #[error("{0}")]
    ModelInfo(String),
    #[error("routes.\"{key}\".{field}: {message}")]
    Options {
        key: String,
        field: &'static str,
        message: String,
    },
    #[error("model class `{class}` has no route: set models.{class} = \"provider/model\" in ~/.config/baton/config.toml or .baton/config.toml")]
    UnsetClass { class: ModelClass },
    #[error("no route of model class `{class}` is usable (models.{class}):\n{}", reasons.join("\n"))]
    NoUsableRoute {
        class: ModelClass,
        reasons: Vec<String>,
    },
}

/// A route checked against config and environment, ready to build a provider from.
#[derive(Debug, Clone)]
pub struct ResolvedRoute {
    pub route: Route,
    /// The class it was chosen for, if any.
    pub class: Option<ModelClass>,
    pub provider: ProviderConfig,
    pub api_key: Option<String>,
    /// Routes of the class tried before this one, with why each was skipped.
    pub skipped: Vec<String>,
    /// The model's facts and the route's options.
    pub profile: Profile,
}

/// Expands a leading `~/` with `$HOME`.
pub fn expand_home(path: &str, env: &dyn Env) -> PathBuf {
    match (path.strip_prefix("~/"), env.var("HOME")) {
        (Some(rest), Some(home)) => Path::new(&home).join(rest),
        _ => PathBuf::from(path),
    }
}

/// The key an `api_key_file` holds: its first line, trimmed (`None` when that is empty). A file
/// that cannot be read is an error with the path it was looked for at (`~/` expanded).
pub fn read_key_file(
    path: &str,
    env: &dyn Env,
) -> Result<Option<String>, (PathBuf, std::io::Error)> {
    let full = expand_home(path, env);
    match baton_text::input::read_input(&full) {
        Ok(text) => Ok(text
            .lines()
            .next()
            .map(|l| l.trim().to_string())
            .filter(|k| !k.is_empty())),
        Err(e) => Err((full, e)),
    }
}

/// Checks one route: its provider exists and its credentials are present.
pub fn check_route(
    config: &Config,
    route: &Route,
    env: &dyn Env,
) -> Result<ResolvedRoute, RouteError> {
    let name = &route.provider;
    let provider = provider_config(config, name).ok_or_else(|| RouteError::UnknownProvider {
        route: route.to_string(),
        provider: name.clone(),
    })?;
    if let Some(url) = &provider.base_url {
        let problem = match reqwest::Url::parse(url) {
            Ok(u) if u.scheme() == "http" || u.scheme() == "https" => None,
            Ok(u) => Some(format!("scheme `{}` is not http or https", u.scheme())),
            Err(e) => Some(e.to_string()),
        };
        if let Some(message) = problem {
            return Err(RouteError::BadUrl {
                provider: name.clone(),
                url: url.clone(),
                message,
            });
        }
    }
    let mut api_key = None;
    if let Some(path) = &provider.api_key_file {
        api_key = read_key_file(path, env).map_err(|(full, e)| RouteError::KeyFile {
            route: route.to_string(),
            provider: name.clone(),
            path: full.display().to_string(),
            message: e.to_string(),
        })?;
    }
    if api_key.is_none() {
        if let Some(var) = &provider.api_key_env {
            api_key = env.var(var);
            if api_key.is_none() {
                return Err(RouteError::MissingKey {
                    route: route.to_string(),
                    provider: name.clone(),
                    var: var.clone(),
                });
            }
        }
    }
    match provider.kind {
        ProviderKind::Replay => match &provider.cassette {
            None => {
                return Err(RouteError::Cassette {
                    route: route.to_string(),
                    provider: name.clone(),
                    problem: "not set".into(),
                })
            }
            Some(p) if !expand_home(p, env).is_file() => {
                return Err(RouteError::Cassette {
                    route: route.to_string(),
                    provider: name.clone(),
                    problem: format!("`{p}`, which does not exist"),
                })
            }
            Some(_) => {}
        },
        ProviderKind::Anthropic if api_key.is_none() => {
            // Without `api_key_env`, the usual variable is still read.
            api_key = env.var("ANTHROPIC_API_KEY");
            if api_key.is_none() {
                return Err(RouteError::MissingKey {
                    route: route.to_string(),
                    provider: name.clone(),
                    var: "ANTHROPIC_API_KEY".into(),
                });
            }
        }
        ProviderKind::Anthropic | ProviderKind::OpenAi | ProviderKind::OpenAiResponses => {}
    }
    let profile = route_profile(config, route, &provider)?;
    Ok(ResolvedRoute {
        route: route.clone(),
        class: None,
        provider,
        api_key,
        skipped: Vec::new(),
        profile,
    })
}

/// The model facts and options of a route, with the options checked against what the model and
/// its API take.
pub fn route_profile(
    config: &Config,
    route: &Route,
    provider: &ProviderConfig,
) -> Result<Profile, RouteError> {
    crate::catalog::check_overrides(&config.model_info).map_err(RouteError::ModelInfo)?;
    let mut info = model_info(
        provider.kind,
        &route.provider,
        &route.model,
        &config.model_info,
    );
    if provider.kind == ProviderKind::OpenAi && info.output_tokens_field.is_none() {
        // OpenAI's own API reads `max_completion_tokens` (its reasoning models refuse
        // `max_tokens`); compatible servers such as Ollama read only `max_tokens`.
        let host = reqwest::Url::parse(&api_root(provider))
            .ok()
            .and_then(|u| u.host_str().map(str::to_string))
            .unwrap_or_default();
        info.output_tokens_field = Some(if host == "api.openai.com" {
            OutputTokensField::MaxCompletionTokens
        } else {
            OutputTokensField::MaxTokens
        });
    }
    let key = format!("{}/{}", route.provider, route.model);
    let mut options = config.routes.get(&key).copied().unwrap_or_default();
    // The route's limit, else the provider's, else (a local model nobody described) a default.
    if options.max_output_tokens.is_none()
        && provider.max_output_tokens.is_none()
        && local_unknown(provider, &info)
    {
        options.max_output_tokens = Some(local_output_limit(info.context_window));
    }
    let refuse = |field: &'static str, message: String| RouteError::Options {
        key: key.clone(),
        field,
        message,
    };
    let sampling = [
        ("temperature", options.temperature),
        ("top_p", options.top_p),
    ];
    for (field, value) in sampling {
        let Some(v) = value else { continue };
        if !v.is_finite() || v < 0.0 {
            return Err(refuse(field, format!("{v} is not a number ≥ 0")));
        }
        if !info.sampling {
            return Err(refuse(
                field,
                format!(
                    "model `{}` does not take sampling options (reasoning models refuse them; {}): remove the key, or set sampling = true in [model_info.\"{}\"] if the model takes it",
                    route.model, info.source, route.model
                ),
            ));
        }
        if provider.kind == ProviderKind::Anthropic
            && info.thinking_plan(route.thinking) != ThinkingPlan::Omit
        {
            return Err(refuse(
                field,
                format!(
                    "Anthropic refuses {field} while thinking is on (route thinking `{}`): remove the key or use the route with `:off`",
                    route.thinking.map_or("default".to_string(), |t| t.to_string())
                ),
            ));
        }
    }
    if options.seed.is_some() && provider.kind != ProviderKind::OpenAi {
        return Err(refuse(
            "seed",
            format!(
                "the {} API has no seed; only Chat Completions servers (kind = \"openai\") take one: remove the key",
                provider.kind.as_str()
            ),
        ));
    }
    if options.max_output_tokens == Some(0) {
        return Err(refuse("max_output_tokens", "must be at least 1".into()));
    }
    Ok(Profile { info, options })
}

/// The most a model the table does not know, on a server on this machine, is asked to write
/// when its route sets no `max_output_tokens`: without a limit a small local model can write for
/// minutes without a word on screen.
pub const LOCAL_OUTPUT_LIMIT: u32 = 8192;

/// Whether `info` is a model the table does not know, served by a Chat Completions server on this
/// machine (Ollama, llama.cpp, vLLM).
pub fn local_unknown(provider: &ProviderConfig, info: &crate::catalog::ModelInfo) -> bool {
    !info.known
        && provider.kind == ProviderKind::OpenAi
        && crate::prices::is_loopback(&api_root(provider))
}

/// The output limit of a local model the table does not know: a quarter of its context when the
/// server says it (`/props`), between 256 and [`LOCAL_OUTPUT_LIMIT`]; else that limit.
pub fn local_output_limit(context: Option<u32>) -> u32 {
    context.map_or(LOCAL_OUTPUT_LIMIT, |c| {
        (c / 4).clamp(256, LOCAL_OUTPUT_LIMIT)
    })
}

/// Resolves a class to its first usable route.
pub fn resolve_class(
    config: &Config,
    class: ModelClass,
    env: &dyn Env,
) -> Result<ResolvedRoute, RouteError> {
    let list = config
        .models
        .class(class)
        .ok_or(RouteError::UnsetClass { class })?;
    let mut reasons = Vec::new();
    for route in list.routes() {
        match check_route(config, route, env) {
            Ok(mut r) => {
                r.class = Some(class);
                r.skipped = reasons;
                return Ok(r);
            }
            Err(e) => reasons.push(format!("  - {route}: {e}")),
        }
    }
    Err(RouteError::NoUsableRoute { class, reasons })
}

/// Whether `route` can honour thinking `level` (the route's own `:level` when `level` is `None`):
/// a model known to take no thinking field at all cannot think at any level but `off`. A route
/// of an unknown provider, or with no level asked, passes (other checks name those).
pub fn honours_thinking(
    config: &Config,
    route: &Route,
    level: Option<baton_protocol::ThinkingLevel>,
) -> Result<(), String> {
    let Some(level) = level.or(route.thinking) else {
        return Ok(());
    };
    if level == baton_protocol::ThinkingLevel::Off {
        return Ok(());
    }
    let Some(p) = provider_config(config, &route.provider) else {
        return Ok(());
    };
    let info = model_info(p.kind, &route.provider, &route.model, &config.model_info);
    match (info.known, info.thinking) {
        (true, baton_protocol::config::ThinkingStyle::None) => Err(format!(
            "{}/{} takes no thinking level ({}), and {level} was asked",
            route.provider, route.model, info.source
        )),
        _ => Ok(()),
    }
}

/// The class used when nothing chooses one.
pub fn default_class(config: &Config) -> ModelClass {
    config.models.default_class.unwrap_or(ModelClass::Balanced)
}

const DEFAULT_IDLE: Duration = Duration::from_secs(300);

/// The API root of a provider without a trailing slash: its `base_url`, else the default of its
/// kind (`https://api.openai.com/v1`, `https://api.anthropic.com`; empty for replay).
pub fn api_root(p: &ProviderConfig) -> String {
    let default = match p.kind {
        ProviderKind::OpenAi | ProviderKind::OpenAiResponses => "https://api.openai.com/v1",
        ProviderKind::Anthropic => "https://api.anthropic.com",
        ProviderKind::Replay => "",
    };
    p.base_url
        .as_deref()
        .unwrap_or(default)
        .trim_end_matches('/')
        .to_string()
}

/// Builds the provider of a resolved route.
pub fn build_provider(
    resolved: &ResolvedRoute,
    env: &dyn Env,
) -> Result<Arc<dyn Provider>, ModelError> {
    let p = &resolved.provider;
    let name = resolved.route.provider.clone();
    let connection = Connection {
        name: name.clone(),
        base_url: api_root(p),
        api_key: resolved.api_key.clone(),
        headers: p
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        stream_idle_timeout: p.stream_idle_timeout.map(|d| d.0).unwrap_or(DEFAULT_IDLE),
    };
    let profile = resolved.profile.clone();
    Ok(match p.kind {
        ProviderKind::OpenAi => Arc::new(OpenAiChat::new(connection, profile)),
        ProviderKind::OpenAiResponses => Arc::new(OpenAiResponses::new(connection, profile)),
        ProviderKind::Anthropic => Arc::new(Anthropic::new(connection, profile)),
        ProviderKind::Replay => {
            let path = p
                .cassette
                .as_deref()
                .map(|c| expand_home(c, env))
                .ok_or_else(|| {
                    ModelError::Config(format!("providers.{name}.cassette is not set"))
                })?;
            Arc::new(Replay::from_file(name, &path)?)
        }
    })
}

/// Gives every local provider of `config` (`local = true`, else a loopback `base_url` or a
/// cassette) the price zero
/// for the models neither `[prices]` nor the built-in table prices, unless `[prices."NAME/*"]`
/// says otherwise.
pub fn price_local_servers(config: &mut baton_protocol::config::Config) {
    use baton_protocol::config::ProviderKind;
    // The config's providers and the built-in ones it does not redefine (ollama).
    let mut providers = builtin_providers();
    providers.extend(config.providers.clone());
    for (name, p) in &providers {
        let local = p.local.unwrap_or(
            p.kind == ProviderKind::Replay
                || p.base_url
                    .as_deref()
                    .is_some_and(crate::prices::is_loopback),
        );
        if local {
            config
                .prices
                .entry(format!("{name}/*"))
                .or_insert_with(crate::prices::free);
        }
    }
}

/// Cost in USD of `usage` under a child's model label: a route `provider/model[:thinking]`, else a
/// bare model name a peer CLI ran (priced by the built-in table only), when it has a price.
pub fn cost_of_label(prices: &BTreeMap<String, Price>, label: &str, usage: &Usage) -> Option<f64> {
    match label.parse::<Route>() {
        Ok(r) => cost(prices, &r, usage),
        Err(_) => Some(charge(&crate::prices::builtin(label)?, usage)),
    }
}

/// Cost in USD of `usage` on `route`, when it has a price ([`crate::prices::price_of`]: the
/// config's `[prices]`, the built-in table, the provider's `provider/*` entry). Cache writes cost
/// `cache_write`, by default 1.25 × `input` (Anthropic's five-minute writes).
pub fn cost(prices: &BTreeMap<String, Price>, route: &Route, usage: &Usage) -> Option<f64> {
    let (price, _) = crate::prices::price_of(prices, route)?;
    Some(charge(&price, usage))
}

/// What `usage` costs at `price`, in USD.
fn charge(price: &Price, usage: &Usage) -> f64 {
    let cached = usage.cached_input_tokens.min(usage.input_tokens);
    let written = usage.cache_write_tokens.min(usage.input_tokens - cached);
    let fresh = usage.input_tokens - cached - written;
    let per = 1_000_000.0;
    fresh as f64 * price.input / per
        + cached as f64 * price.cached_input.unwrap_or(price.input) / per
        + written as f64 * price.cache_write.unwrap_or(price.input * 1.25) / per
        + usage.output_tokens as f64 * price.output / per
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_protocol::config::RouteList;

    fn config(toml_models: Vec<(ModelClass, Vec<&str>)>) -> Config {
        let mut c = Config::default();
        for (class, routes) in toml_models {
            let list = RouteList::Many(routes.iter().map(|r| r.parse().unwrap()).collect());
            match class {
                ModelClass::Fast => c.models.fast = Some(list),
                ModelClass::Balanced => c.models.balanced = Some(list),
                ModelClass::Frontier => c.models.frontier = Some(list),
                ModelClass::Fav => c.models.fav = Some(list),
            }
        }
        c
    }

    #[test]
    fn a_peer_s_bare_model_name_is_priced_by_the_table() {
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            ..Usage::default()
        };
        let prices = BTreeMap::new();
        // claude-sonnet-4-5: $3 in, $15 out.
        let c = cost_of_label(&prices, "claude-sonnet-4-5", &usage).unwrap();
        assert!((c - 4.5).abs() < 1e-9, "{c}");
        assert_eq!(cost_of_label(&prices, "sonnet", &usage), None);
        let c = cost_of_label(&prices, "anthropic/claude-sonnet-4-5:high", &usage).unwrap();
        assert!((c - 4.5).abs() < 1e-9, "{c}");
    }

    #[test]
    fn fallback_skips_routes_without_keys() {
        let c = config(vec![(
            ModelClass::Fast,
            vec!["anthropic/claude-haiku", "ollama/qwen2.5-coder:7b"],
        )]);
        let env = BTreeMap::new();
        let r = resolve_class(&c, ModelClass::Fast, &env).unwrap();
        assert_eq!(r.route.to_string(), "ollama/qwen2.5-coder:7b");
        assert_eq!(r.skipped.len(), 1);
        assert!(
            r.skipped[0].contains("ANTHROPIC_API_KEY"),
            "{:?}",
            r.skipped
        );

        let env = BTreeMap::from([("ANTHROPIC_API_KEY".to_string(), "k".to_string())]);
        let r = resolve_class(&c, ModelClass::Fast, &env).unwrap();
        assert_eq!(r.route.to_string(), "anthropic/claude-haiku");
        assert_eq!(r.api_key.as_deref(), Some("k"));
    }

    #[test]
    fn unusable_classes_name_the_key_to_set() {
        let c = config(vec![(ModelClass::Fast, vec!["nowhere/m"])]);
        let env = BTreeMap::new();
        let e = resolve_class(&c, ModelClass::Balanced, &env).unwrap_err();
        assert!(e.to_string().contains("models.balanced"), "{e}");
        let e = resolve_class(&c, ModelClass::Fast, &env).unwrap_err();
        assert!(e.to_string().contains("[providers.nowhere]"), "{e}");
    }

    #[test]
    fn a_bad_base_url_is_a_config_error_naming_the_key() {
        let mut c = config(vec![(ModelClass::Fast, vec!["local/m"])]);
        let mut p = builtin_providers().remove("ollama").unwrap();
        p.base_url = Some("localhost:11434/v1".into());
        c.providers.insert("local".into(), p);
        let e = resolve_class(&c, ModelClass::Fast, &BTreeMap::new()).unwrap_err();
        assert!(e.to_string().contains("providers.local.base_url"), "{e}");
    }

    #[test]
    fn cost_uses_cached_price() {
        let prices = BTreeMap::from([(
            "p/m".to_string(),
            Price {
                input: 2.0,
                output: 10.0,
                cached_input: Some(0.5),
                cache_write: None,
            },
        )]);
        let route: Route = "p/m:high".parse().unwrap();
        let usage = Usage {
            input_tokens: 1_000_000,
            cached_input_tokens: 500_000,
            output_tokens: 100_000,
            cache_write_tokens: 0,
        };
        let c = cost(&prices, &route, &usage).unwrap();
        assert!((c - (1.0 + 0.25 + 1.0)).abs() < 1e-9, "{c}");
        assert_eq!(cost(&prices, &"p/other".parse().unwrap(), &usage), None);
    }
}
