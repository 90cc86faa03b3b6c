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
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v.get("chat_template_caps")?
        .get("supports_tools")?
        .as_bool()
}
