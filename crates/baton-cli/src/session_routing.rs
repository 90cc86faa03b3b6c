//! Cognitive routing from the command line: the `[routing]` routes of the two participants, the
//! `--routing` control of `baton agent` and `baton chat`, and the line reader of `baton chat`,
//! which turns what the user types into submissions (`/profile …`, `/resume`, `/interrupt`,
//! `/quit`, or input). See docs/routing.md.

use std::io::BufRead;

use anyhow::{bail, Result};
use baton_agent::agent::{Fallback, Submission};
use baton_agent::routing::state::Control;
use baton_agent::routing::view::parse_profile;
use baton_agent::routing::RoutingSpec;
use baton_model::routes::{build_provider, check_route, resolve_class, ProcessEnv};
use baton_protocol::config::Config;
use baton_protocol::{ModelClass, Route, ThinkingLevel};
use baton_state::StateDir;
use tokio::sync::mpsc::UnboundedSender;

/// A `--routing` value: `auto`, `coordinator` or `executor` (a manual hold), or `off`.
pub fn parse_control(text: &str) -> Result<Control> {
    parse_profile(text).map_err(|e| anyhow::anyhow!("--routing: {e}"))
}

/// The routes of one participant from its `[routing]` value: a model class (its first usable
/// route, then the class's later ones to fail over to) or one explicit route.
fn seat_chain(
    config: &Config,
    key: &str,
    text: &str,
    thinking: Option<ThinkingLevel>,
) -> Result<Vec<Fallback>> {
    let resolved = match text.parse::<ModelClass>() {
        Ok(class) => resolve_class(config, class, &ProcessEnv)
            .map_err(|e| anyhow::anyhow!("routing.{key} = \"{text}\": {e}"))?,
        Err(_) => {
            let route: Route = text.parse().map_err(|e| {
                anyhow::anyhow!("routing.{key} = \"{text}\": {e}: give a model class (fast, balanced, frontier, fav) or provider/model[:thinking]")
            })?;
            check_route(config, &route, &ProcessEnv)
                .map_err(|e| anyhow::anyhow!("routing.{key} = \"{text}\": {e}"))?
        }
    };
    let provider = build_provider(&resolved, &ProcessEnv)
        .map_err(|e| anyhow::anyhow!("routing.{key}: {e}"))?;
    let mut route = resolved.route.clone();
    if route.thinking.is_none() {
        route.thinking = thinking;
    }
    let first = crate::model_fallbacks::fallback(&resolved, route, provider);
    Ok(std::iter::once(first)
        .chain(crate::model_fallbacks::class_fallbacks(
            config, &resolved, thinking,
        ))
        .collect())
}

/// The routing of session `session_id`, when `--routing` was given or the session has a routing
/// journal (a resumed routed session stays routed, keeping its control unless `--routing` says
/// otherwise). Both routes must be configured.
pub fn routing_spec(
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

/// What a line typed to `baton chat` asks for; `None` ends the input (`/quit`, `/exit`).
pub fn parse_line(line: &str) -> Result<Option<Submission>, String> {
    let t = line.trim();
    let Some(command) = t.strip_prefix('/') else {
        return Ok(Some(Submission::Input(line.trim_end().to_string())));
    };
    if let Some(rest) = command.strip_prefix("compact") {
        if rest.is_empty() || rest.starts_with(char::is_whitespace) {
            let focus = rest.trim();
            return Ok(Some(Submission::Compact(
                (!focus.is_empty()).then(|| focus.to_string()),
            )));
        }
    }
    let mut words = command.split_whitespace();
    match (words.next(), words.next(), words.next()) {
        (Some("profile"), Some(p), None) => parse_profile(p)
            .map(|c| Some(Submission::Control(c)))
            .map_err(|e| format!("/profile: {e}")),
        (Some("profile"), _, _) => Err("/profile takes one word: coordinator, executor or auto".into()),
        (Some("resume"), None, None) => Ok(Some(Submission::Resume)),
        (Some("interrupt"), None, None) => Ok(Some(Submission::Interrupt)),
        (Some("quit" | "exit"), None, None) => Ok(None),
        _ => Err(format!(
            "unknown command `{t}`: the commands are /profile coordinator|executor|auto, /resume, /interrupt, /compact [focus] and /quit"
        )),
    }
}

/// Reads lines from stdin on a thread of its own and sends them to the session. With
/// `wait_idle`, each line waits until the session is idle (a script's lines run one after the
/// other); otherwise a line is sent as soon as it is read, so input typed while the Executor
/// works interrupts it. The session ends when stdin does, or at `/quit`.
pub fn read_lines(
    tx: UnboundedSender<Submission>,
    idle: Option<std::sync::mpsc::Receiver<()>>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        for line in stdin.lock().lines() {
            let Ok(line) = line else { break };
            if line.trim().is_empty() {
                continue;
            }
            match parse_line(&line) {
                Ok(Some(sub)) => {
                    if let Some(idle) = &idle {
                        // The session says when it waits for the next submission.
                        if idle.recv().is_err() {
                            break;
                        }
                    }
                    if tx.send(sub).is_err() {
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => errln!("baton: {e}"),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_agent::routing::state::Profile;

    #[test]
    fn chat_lines_become_submissions() {
        assert_eq!(
            parse_line("fix the test").unwrap(),
            Some(Submission::Input("fix the test".into()))
        );
        assert_eq!(
            parse_line("/profile executor").unwrap(),
            Some(Submission::Control(Control::Manual {
                profile: Profile::Executor
            }))
        );
        assert_eq!(
            parse_line(" /profile auto").unwrap(),
            Some(Submission::Control(Control::Automatic))
        );
        assert_eq!(parse_line("/resume").unwrap(), Some(Submission::Resume));
        assert_eq!(parse_line("/quit").unwrap(), None);
        assert!(parse_line("/profile boss")
            .unwrap_err()
            .contains("coordinator"));
        assert!(parse_line("/dance").unwrap_err().contains("/resume"));
    }
}
