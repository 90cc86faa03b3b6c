//! The tiebreak call of a routing conflict (the prompt and the answer's check are
//! [`crate::route::tiebreak`]).

use baton_model::routes::{build_provider, resolve_class, ProcessEnv};
use baton_model::{ModelRequest, StreamEvent};
use baton_protocol::config::Config;
use futures::StreamExt;

use crate::route::{tiebreak, Decision};

/// How long the tiebreak call may take before the rules' choice stands.
pub const TIEBREAK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Puts a routing conflict to the `fast` model when the config has one: its strict JSON answer
/// picks among the workflows in play. No `fast` route leaves the decision as it is, silently; a
/// failed call or any other answer leaves it too, with a note saying why.
pub async fn tiebreak(config: &Config, request: &str, d: Decision) -> (Decision, Option<String>) {
    if !d.conflict() {
        return (d, None);
    }
    let Ok(resolved) = resolve_class(config, baton_protocol::ModelClass::Fast, &ProcessEnv) else {
        return (d, None);
    };
    let names: Vec<&str> = d.contenders().iter().map(|w| w.as_str()).collect();
    let names = names.join(", ");
    let label = resolved.route.to_string();
    let req = ModelRequest {
        model: resolved.route.model.clone(),
        system: tiebreak::SYSTEM.to_string(),
        messages: vec![baton_protocol::Message::user(tiebreak::prompt(
            request,
            d.contenders(),
        ))],
        tools: Vec::new(),
        thinking: None,
        max_output_tokens: Some(64),
        tools_disabled: false,
        cache_key: None,
    };
    let call = async {
        let provider = build_provider(&resolved, &ProcessEnv).map_err(|e| e.to_string())?;
        let mut stream = provider.stream(&req).await.map_err(|e| e.to_string())?;
        let mut text = String::new();
        while let Some(ev) = stream.next().await {
            match ev.map_err(|e| e.to_string())? {
                StreamEvent::TextDelta { text: t } => text.push_str(&t),
                StreamEvent::Stop { .. } => break,
                _ => {}
            }
        }
        Ok::<String, String>(text)
    };
    let answer = match tokio::time::timeout(TIEBREAK_TIMEOUT, call).await {
        Ok(r) => r,
        Err(_) => Err(format!("no answer in {}s", TIEBREAK_TIMEOUT.as_secs())),
    };
    match answer.and_then(|text| tiebreak::parse(&text, d.contenders())) {
        Ok(w) => {
            let note = format!("routing conflict ({names}): {label} chose {}", w.as_str());
            (d.with_tiebreak(w), Some(note))
        }
        Err(e) => (
            d,
            Some(format!(
                "routing conflict ({names}): the tiebreak by {label} gave no usable answer ({e}); the priority table decides"
            )),
        ),
    }
}
