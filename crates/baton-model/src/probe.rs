//! One cheap, authenticated request to a provider, to check it before a session depends on it
//! (`baton doctor`): the list of its models. `GET {base_url}/models` for the OpenAI kinds,
//! `GET {base_url}/v1/models` for Anthropic. No tokens are spent. For a local llama.cpp server,
//! also whether its chat template takes tools ([`llama_tool_support`]).

use std::time::Duration;

use baton_protocol::config::{ProviderConfig, ProviderKind};

use crate::anthropic::ANTHROPIC_VERSION;
use crate::error::ModelError;
use crate::http::{
    build_client, error_chain, header_map, read_bounded, status_message, with_timeout,
};
use crate::routes::api_root;

/// What a provider answered to the model-list request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelList {
    /// The URL asked.
    pub url: String,
    /// Models listed (`data` of the answer), when the answer has that shape.
    pub models: Option<usize>,
}

/// Asks provider `name` for its models with `api_key`. `Ok(None)` for a replay provider, which
/// has nothing to ask. An HTTP error status is [`ModelError::Http`] with the provider's message,
/// no answer within `timeout` or no connection is [`ModelError::Connect`].
pub async fn list_models(
    name: &str,
    provider: &ProviderConfig,
    api_key: Option<&str>,
    timeout: Duration,
) -> Result<Option<ModelList>, ModelError> {
    let (url, defaults): (String, Vec<(&str, String)>) = match provider.kind {
        ProviderKind::Replay => return Ok(None),
        ProviderKind::OpenAi | ProviderKind::OpenAiResponses => (
            format!("{}/models", api_root(provider)),
            api_key
                .map(|k| ("authorization", format!("Bearer {k}")))
                .into_iter()
                .collect(),
        ),
        ProviderKind::Anthropic => (
            format!("{}/v1/models", api_root(provider)),
            std::iter::once(("anthropic-version", ANTHROPIC_VERSION.to_string()))
                .chain(api_key.map(|k| ("x-api-key", k.to_string())))
                .collect(),
        ),
    };
    let client = build_client().map_err(ModelError::Config)?;
    let extra: Vec<(String, String)> = provider
        .headers
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let headers = header_map(&defaults, &extra)?;
    let connect = |message: String| ModelError::Connect {
        provider: name.to_string(),
        url: url.clone(),
        message,
    };
    let response = match with_timeout(timeout, client.get(&url).headers(headers).send()).await {
        Some(Ok(r)) => r,
        Some(Err(e)) => return Err(connect(error_chain(&e))),
        None => return Err(connect(format!("no answer within {timeout:?}"))),
    };
    let status = response.status();
    let text = read_bounded(response, timeout).await;
    if !status.is_success() {
        let (message, kind) = status_message(status, &text);
        return Err(ModelError::Http {
            provider: name.to_string(),
            model: "(model list)".into(),
            status: status.as_u16(),
            message,
            retry_after: None,
            kind,
        });
    }
    let models = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v.get("data").and_then(|d| d.as_array()).map(Vec::len));
    Ok(Some(ModelList { url, models }))
}

/// Whether a llama.cpp server's chat template takes tools, as its `GET {root}/props` says
/// (`chat_template_caps.supports_tools`; `root` is the API root without its `/v1`). `None` when
/// the server gives no such answer (it is not llama.cpp, or an older one). Without tool support
/// (a template without tools, or a server started without `--jinja`) the tools baton offers never
/// reach the model.
pub async fn llama_tool_support(provider: &ProviderConfig, timeout: Duration) -> Option<bool> {
    if provider.kind != ProviderKind::OpenAi {
        return None;
    }
    let root = api_root(provider);
    let base = root.strip_suffix("/v1").unwrap_or(&root);
    let url = format!("{base}/props");
    let client = build_client().ok()?;
    let response = with_timeout(timeout, client.get(&url).send()).await?.ok()?;
    if !response.status().is_success() {
        return None;
    }
    let text = read_bounded(response, timeout).await;
    parse_props(&text)?.supports_tools
}

/// What a llama.cpp server's `/props` says about the model it serves.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LlamaProps {
    /// The context the server was started with (`default_generation_settings.n_ctx`).
    pub n_ctx: Option<u32>,
    /// `chat_template_caps.supports_tools`.
    pub supports_tools: Option<bool>,
}

/// Reads `/props`; `None` when the text is not JSON or says neither fact.
pub fn parse_props(text: &str) -> Option<LlamaProps> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    let n_ctx = v
        .get("default_generation_settings")
        .and_then(|d| d.get("n_ctx"))
        .or_else(|| v.get("n_ctx"))
        .and_then(serde_json::Value::as_u64)
        .and_then(|n| u32::try_from(n).ok())
        .filter(|n| *n > 0);
    let supports_tools = v
        .get("chat_template_caps")
        .and_then(|c| c.get("supports_tools"))
        .and_then(serde_json::Value::as_bool);
    (n_ctx.is_some() || supports_tools.is_some()).then_some(LlamaProps {
        n_ctx,
        supports_tools,
    })
}

/// `/props` asked of a Chat Completions server on this machine (plain `http` on a loopback
/// address), without its key, its answer not read yet: the server prepares it while the session
/// sets up, and [`PropsAsked::answer`] reads it.
#[derive(Debug)]
pub struct PropsAsked {
    stream: std::net::TcpStream,
}

impl PropsAsked {
    /// Connects and sends the request, waiting at most about `timeout` for each. `None` for any
    /// server other than a loopback `http` one of the Chat Completions kind, or one that does not
    /// take the request.
    pub fn send(provider: &ProviderConfig, timeout: Duration) -> Option<PropsAsked> {
        use std::io::Write as _;
        if provider.kind != ProviderKind::OpenAi {
            return None;
        }
        let root = api_root(provider);
        if !crate::prices::is_loopback(&root) {
            return None;
        }
        let url = reqwest::Url::parse(root.strip_suffix("/v1").unwrap_or(&root)).ok()?;
        if url.scheme() != "http" {
            return None;
        }
        let addr = *url.socket_addrs(|| Some(80)).ok()?.first()?;
        let mut stream = std::net::TcpStream::connect_timeout(&addr, timeout).ok()?;
        stream.set_read_timeout(Some(timeout)).ok()?;
        stream.set_write_timeout(Some(timeout)).ok()?;
        let path = format!("{}/props", url.path().trim_end_matches('/'));
        let host = url.host_str()?;
        // One write: each piece `write!` would send is a TCP segment of its own.
        let request = format!(
            "GET {path} HTTP/1.0\r\nHost: {host}\r\nAccept: application/json\r\nConnection: close\r\n\r\n"
        );
        stream.write_all(request.as_bytes()).ok()?;
        Some(PropsAsked { stream })
    }

    /// Reads the answer, blocking for at most about the timeout per read. `None` when the server
    /// does not answer it (Ollama, vLLM) or says neither fact.
    pub fn answer(self) -> Option<LlamaProps> {
        use std::io::Read as _;
        // The answer carries the chat template: allow it 4 MiB, and read it in large pieces.
        let mut answer = Vec::with_capacity(16 << 10);
        self.stream.take(4 << 20).read_to_end(&mut answer).ok()?;
        let text = String::from_utf8_lossy(&answer);
        let (head, body) = text.split_once("\r\n\r\n")?;
        let ok = head
            .lines()
            .next()
            .is_some_and(|status| status.split_whitespace().nth(1) == Some("200"));
        if !ok
            || head
                .to_ascii_lowercase()
                .contains("transfer-encoding: chunked")
        {
            return None;
        }
        parse_props(body)
    }
}

/// How long a session waits for a local server's `/props`: to connect, to send, for each read.
const LOCAL_PROPS_TIMEOUT: Duration = Duration::from_millis(500);

/// What a local server is asked about a model the table does not know, before a session's first
/// request ([`ask_local_server`]); [`LocalAsk::learn`] reads the answer into the route.
#[derive(Debug)]
pub struct LocalAsk {
    asked: PropsAsked,
    /// Whether the config sets the route's output limit (`[routes."P/M"]` or the provider's).
    output_set: bool,
}

/// Asks a local server about the route's model when the table does not know it. `None` when
/// there is nothing to ask or the server takes no request.
pub fn ask_local_server(
    config: &baton_protocol::config::Config,
    resolved: &crate::routes::ResolvedRoute,
) -> Option<LocalAsk> {
    if !crate::routes::local_unknown(&resolved.provider, &resolved.profile.info) {
        return None;
    }
    let key = format!("{}/{}", resolved.route.provider, resolved.route.model);
    let output_set = config
        .routes
        .get(&key)
        .and_then(|o| o.max_output_tokens)
        .is_some()
        || resolved.provider.max_output_tokens.is_some();
    Some(LocalAsk {
        asked: PropsAsked::send(&resolved.provider, LOCAL_PROPS_TIMEOUT)?,
        output_set,
    })
}

impl LocalAsk {
    /// Reads the server's answer into the route: its context (`/props` `n_ctx`, which also sets
    /// the default output limit when the config sets none) and whether its chat template takes
    /// tools. `None` when the server gave no answer.
    pub fn learn(self, resolved: &mut crate::routes::ResolvedRoute) -> Option<LlamaProps> {
        let props = self.asked.answer()?;
        if let Some(n) = props.n_ctx {
            resolved.profile.info.context_window = Some(n);
            resolved.profile.info.source = format!(
                "{}; context from the server's /props",
                resolved.profile.info.source
            );
            if !self.output_set {
                resolved.profile.options.max_output_tokens =
                    Some(crate::routes::local_output_limit(Some(n)));
            }
        }
        Some(props)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn props_give_the_context_and_whether_tools_reach_the_model() {
        let p = parse_props(
            r#"{"default_generation_settings":{"n_ctx":4096},"chat_template_caps":{"supports_tools":false}}"#,
        );
        assert_eq!(
            p,
            Some(LlamaProps {
                n_ctx: Some(4096),
                supports_tools: Some(false)
            })
        );
        assert_eq!(parse_props(r#"{"error":"not found"}"#), None);
        assert_eq!(parse_props("not json"), None);
    }
}
