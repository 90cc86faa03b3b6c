//! Cassettes: recorded model turns played back without a network.
//!
//! [`Replay`] is a provider that plays a cassette file; [`Recorder`] wraps a live provider and
//! writes one. A replayed session sees exactly the events the live one saw, so agent runs can be
//! repeated in tests and demos.
//!
//! # Cassette format (version 1)
//!
//! A JSON file:
//!
//! ```json
//! {
//!   "version": 1,
//!   "turns": [
//!     {
//!       "request_summary": {"model": "gpt-4.1", "messages": 1, "tools": ["read", "bash"]},
//!       "events": [
//!         {"type": "text_delta", "text": "Let me look."},
//!         {"type": "tool_call_start", "index": 0, "id": "call_1", "name": "read"},
//!         {"type": "tool_call_delta", "index": 0, "arguments": "{\"path\":\"a.rs\"}"},
//!         {"type": "tool_call_end", "index": 0},
//!         {"type": "usage", "usage": {"input_tokens": 120, "cached_input_tokens": 0, "output_tokens": 9}},
//!         {"type": "stop", "reason": "tool_use"}
//!       ]
//!     }
//!   ]
//! }
//! ```
//!
//! - `turns` are played in order, one per call to [`Provider::stream`] (retries included: a
//!   recorded cassette holds only the attempts that completed).
//! - `events` are [`StreamEvent`]s in their serde form. A turn whose events do not end with `stop`
//!   replays as a stream cut after its last event, which is how a test scripts a dropped stream.
//! - `request_summary` is optional and informational: the model, how many messages the request
//!   held and the names of the offered tools. It is not checked on replay.
//!
//! A cassette never holds credentials: only the streamed events and the summary above are stored —
//! no URL, header, API key, system prompt or message text.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use futures::StreamExt;
use serde::{Deserialize, Serialize};

use crate::error::ModelError;
use crate::provider::{EventStream, Provider};
use crate::types::{ModelRequest, StreamEvent};

/// The cassette format version this code reads and writes.
pub const CASSETTE_VERSION: u32 = 1;

/// A recorded conversation: one entry per model turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cassette {
    pub version: u32,
    pub turns: Vec<CassetteTurn>,
}

impl Default for Cassette {
    fn default() -> Self {
        Cassette {
            version: CASSETTE_VERSION,
            turns: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CassetteTurn {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_summary: Option<RequestSummary>,
    pub events: Vec<StreamEvent>,
}

/// What a recorded request looked like, without its content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestSummary {
    pub model: String,
    /// Number of messages in the conversation sent.
    pub messages: usize,
    /// Names of the tools offered.
    pub tools: Vec<String>,
}

impl RequestSummary {
    pub fn of(request: &ModelRequest) -> Self {
        RequestSummary {
            model: request.model.clone(),
            messages: request.messages.len(),
            tools: request.tools.iter().map(|t| t.name.clone()).collect(),
        }
    }
}

impl Cassette {
    /// Reads and checks a cassette file.
    pub fn load(path: &Path) -> Result<Self, ModelError> {
        let text = baton_text::input::read_input(path).map_err(|e| {
            ModelError::Config(format!(
                "could not read cassette {}: {e} (check the provider's `cassette` path, or record one with --record)",
                path.display()
            ))
        })?;
        let cassette: Cassette = serde_json::from_str(&text).map_err(|e| {
            ModelError::Config(format!(
                "cassette {} is not a valid cassette: {e}",
                path.display()
            ))
        })?;
        if cassette.version != CASSETTE_VERSION {
            return Err(ModelError::Config(format!(
                "cassette {} has version {}, but this baton reads version {CASSETTE_VERSION}: re-record it with --record",
                path.display(),
                cassette.version
            )));
        }
        Ok(cassette)
    }

    /// Writes the cassette atomically (a temporary file beside `path`, synced, then renamed),
    /// known secrets redacted ([`baton_text::redact`]).
    pub fn save(&self, path: &Path) -> Result<(), ModelError> {
        let fail = |e: std::io::Error| {
            ModelError::Config(format!("could not write cassette {}: {e}", path.display()))
        };
        // A recorded turn may quote a key (a model that read a key file), split between deltas.
        let redacted = Cassette {
            version: self.version,
            turns: self
                .turns
                .iter()
                .map(|t| CassetteTurn {
                    request_summary: t.request_summary.clone(),
                    events: redact_deltas(&t.events),
                })
                .collect(),
        };
        let text = serde_json::to_string_pretty(&redacted)
            .map_err(|e| ModelError::Config(format!("could not encode the cassette: {e}")))?;
        let mut text = baton_text::redact::redact(&text).into_owned();
        text.push('\n');
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            Some(_) | None => PathBuf::from("."),
        };
        let file_name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "cassette.json".to_string());
        let tmp = dir.join(format!(".{file_name}.tmp.{}", std::process::id()));
        let written = (|| {
            use std::io::Write;
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(text.as_bytes())?;
            f.sync_all()?;
            std::fs::rename(&tmp, path)
        })();
        if let Err(e) = written {
            // Best effort: never leave the temporary file behind.
            let _ = std::fs::remove_file(&tmp);
            return Err(fail(e));
        }
        Ok(())
    }
}

/// A provider that plays a cassette, one turn per `stream` call.
#[derive(Debug)]
pub struct Replay {
    name: String,
    /// Shown in errors: the file the cassette came from.
    source: String,
    turns: Vec<CassetteTurn>,
    next: AtomicUsize,
}

impl Replay {
    /// Loads a cassette file.
    pub fn from_file(name: String, path: &Path) -> Result<Self, ModelError> {
        let cassette = Cassette::load(path)?;
        Ok(Self::new(name, path.display().to_string(), cassette))
    }

    /// Plays an in-memory cassette; `source` names it in errors.
    pub fn new(name: String, source: String, cassette: Cassette) -> Self {
        Replay {
            name,
            source,
            turns: cassette.turns,
            next: AtomicUsize::new(0),
        }
    }

    /// How many turns have been played.
    pub fn played(&self) -> usize {
        self.next.load(Ordering::SeqCst).min(self.turns.len())
    }
}

#[async_trait::async_trait]
impl Provider for Replay {
    fn name(&self) -> &str {
        &self.name
    }

    async fn stream(&self, request: &ModelRequest) -> Result<EventStream, ModelError> {
        let n = self.next.fetch_add(1, Ordering::SeqCst);
        let turn = self.turns.get(n).ok_or_else(|| {
            ModelError::Config(format!(
                "cassette {} has no turn {} (it holds {}): the conversation went further than when it was recorded; re-record it with --record",
                self.source,
                n + 1,
                self.turns.len()
            ))
        })?;
        let mut items: Vec<Result<StreamEvent, ModelError>> =
            turn.events.iter().cloned().map(Ok).collect();
        if !matches!(turn.events.last(), Some(StreamEvent::Stop { .. })) {
            items.push(Err(ModelError::StreamCut {
                provider: self.name.clone(),
                model: request.model.clone(),
                message: format!(
                    "turn {} of cassette {} ends without a stop event",
                    n + 1,
                    self.source
                ),
            }));
        }
        Ok(Box::pin(futures::stream::iter(items)))
    }
}

/// Wraps a provider and records every turn that completes (ends with `Stop`) into a cassette.
/// Failed attempts are not recorded, so the cassette replays the successful path.
pub struct Recorder {
    inner: Arc<dyn Provider>,
    cassette: Arc<Mutex<Cassette>>,
}

fn lock(m: &Mutex<Cassette>) -> MutexGuard<'_, Cassette> {
    // A panic while holding the lock leaves a cassette that is still well-formed.
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

impl Recorder {
    pub fn new(inner: Arc<dyn Provider>) -> Self {
        Recorder {
            inner,
            cassette: Arc::new(Mutex::new(Cassette::default())),
        }
    }

    /// A recorder of `inner` that writes to the same cassette as this one, so the turns of a
    /// session that changed routes are recorded in the order they ran.
    pub fn sharing(&self, inner: Arc<dyn Provider>) -> Self {
        Recorder {
            inner,
            cassette: Arc::clone(&self.cassette),
        }
    }

    /// A copy of what has been recorded so far.
    pub fn cassette(&self) -> Cassette {
        lock(&self.cassette).clone()
    }

    /// Writes the recorded turns to `path` atomically (see [`Cassette::save`]).
    pub fn save(&self, path: &Path) -> Result<(), ModelError> {
        self.cassette().save(path)
    }
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("inner", &self.inner.name())
            .field("turns", &lock(&self.cassette).turns.len())
            .finish()
    }
}

#[async_trait::async_trait]
impl Provider for Recorder {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn stream(&self, request: &ModelRequest) -> Result<EventStream, ModelError> {
        let stream = self.inner.stream(request).await?;
        let sink = Arc::clone(&self.cassette);
        let summary = RequestSummary::of(request);
        let mut events: Vec<StreamEvent> = Vec::new();
        Ok(Box::pin(stream.inspect(move |item| {
            if let Ok(ev) = item {
                events.push(ev.clone());
                if matches!(ev, StreamEvent::Stop { .. }) {
                    lock(&sink).turns.push(CassetteTurn {
                        request_summary: Some(summary.clone()),
                        events: std::mem::take(&mut events),
                    });
                }
            }
        })))
    }
}

/// Which stream a delta adds to: the text, the reasoning, or one tool call's arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DeltaOf {
    Text,
    Reasoning,
    Arguments(usize),
}

fn delta_of(event: &StreamEvent) -> Option<(DeltaOf, &str)> {
    match event {
        StreamEvent::TextDelta { text } => Some((DeltaOf::Text, text)),
        StreamEvent::ReasoningDelta { text } => Some((DeltaOf::Reasoning, text)),
        StreamEvent::ToolCallDelta { index, arguments } => {
            Some((DeltaOf::Arguments(*index), arguments))
        }
        StreamEvent::ReasoningSignature { .. }
        | StreamEvent::ToolCallStart { .. }
        | StreamEvent::ToolCallEnd { .. }
        | StreamEvent::ToolCallData { .. }
        | StreamEvent::Usage { .. }
        | StreamEvent::Stop { .. } => None,
    }
}

/// `events` with every known secret redacted ([`baton_text::redact`]) even when it is split
/// between deltas: a run of deltas to one stream whose joined text holds a secret becomes one
/// delta of the redacted text. Runs without a secret are kept as they were streamed.
fn redact_deltas(events: &[StreamEvent]) -> Vec<StreamEvent> {
    let mut out = Vec::with_capacity(events.len());
    let mut i = 0;
    while i < events.len() {
        let Some((of, _)) = delta_of(&events[i]) else {
            out.push(events[i].clone());
            i += 1;
            continue;
        };
        let mut joined = String::new();
        let mut end = i;
        while let Some((next, text)) = events.get(end).and_then(delta_of) {
            if next != of {
                break;
            }
            joined.push_str(text);
            end += 1;
        }
        match baton_text::redact::redact(&joined) {
            std::borrow::Cow::Borrowed(_) => out.extend_from_slice(&events[i..end]),
            std::borrow::Cow::Owned(text) => out.push(match of {
                DeltaOf::Text => StreamEvent::TextDelta { text },
                DeltaOf::Reasoning => StreamEvent::ReasoningDelta { text },
                DeltaOf::Arguments(index) => StreamEvent::ToolCallDelta {
                    index,
                    arguments: text,
                },
            }),
        }
        i = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use baton_protocol::{AssistantPart, Message, StopReason, ToolSpec, Usage};
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::retry::{run_turn, RetryPolicy};
    use crate::types::AssistantTurn;

    fn request() -> ModelRequest {
        ModelRequest {
            model: "m1".into(),
            system: "secret system prompt".into(),
            messages: vec![Message::user("secret user text")],
            tools: vec![ToolSpec {
                name: "read".into(),
                description: "d".into(),
                parameters: serde_json::json!({}),
            }],
            thinking: None,
            max_output_tokens: None,
            tools_disabled: false,
            cache_key: None,
        }
    }

    fn text_turn(text: &str) -> Vec<StreamEvent> {
        vec![
            StreamEvent::TextDelta { text: text.into() },
            StreamEvent::Usage {
                usage: Usage {
                    input_tokens: 3,
                    cached_input_tokens: 0,
                    output_tokens: 2,
                    cache_write_tokens: 0,
                },
            },
            StreamEvent::Stop {
                reason: StopReason::EndTurn,
            },
        ]
    }

    async fn collect(p: &dyn Provider) -> Vec<Result<StreamEvent, ModelError>> {
        match p.stream(&request()).await {
            Ok(s) => s.collect().await,
            Err(e) => vec![Err(e)],
        }
    }

    #[tokio::test]
    async fn records_completed_turns_and_replays_them() {
        let live = Replay::new(
            "live".into(),
            "script".into(),
            Cassette {
                version: 1,
                turns: vec![
                    CassetteTurn {
                        request_summary: None,
                        events: text_turn("first"),
                    },
                    // A cut attempt: not recorded.
                    CassetteTurn {
                        request_summary: None,
                        events: vec![StreamEvent::TextDelta { text: "par".into() }],
                    },
                    CassetteTurn {
                        request_summary: None,
                        events: text_turn("second"),
                    },
                ],
            },
        );
        let recorder = Recorder::new(Arc::new(live));
        assert_eq!(recorder.name(), "live");
        let first = collect(&recorder).await;
        assert_eq!(
            first,
            text_turn("first").into_iter().map(Ok).collect::<Vec<_>>()
        );
        let cut = collect(&recorder).await;
        assert!(matches!(
            cut.last(),
            Some(Err(ModelError::StreamCut { .. }))
        ));
        collect(&recorder).await;

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.cassette.json");
        recorder.save(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("secret"), "{text}");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary file left"
        );
        let summary = Some(RequestSummary {
            model: "m1".into(),
            messages: 1,
            tools: vec!["read".into()],
        });
        assert_eq!(
            Cassette::load(&path).unwrap(),
            Cassette {
                version: 1,
                turns: vec![
                    CassetteTurn {
                        request_summary: summary.clone(),
                        events: text_turn("first"),
                    },
                    CassetteTurn {
                        request_summary: summary,
                        events: text_turn("second"),
                    },
                ],
            }
        );

        let replay = Replay::from_file("rec".into(), &path).unwrap();
        let policy = RetryPolicy::default();
        let cancel = tokio_util::sync::CancellationToken::new();
        let mut ignore = |_: crate::retry::TurnProgress<'_>| {};
        let mut texts = Vec::new();
        for _ in 0..2 {
            let turn = run_turn(&replay, &request(), &policy, &cancel, &mut ignore)
                .await
                .unwrap();
            texts.push(turn.text());
        }
        assert_eq!(texts, vec!["first", "second"]);
        assert_eq!(replay.played(), 2);
        let err = run_turn(&replay, &request(), &policy, &cancel, &mut ignore)
            .await
            .unwrap_err();
        assert!(
            matches!(&err, ModelError::Config(m) if m.contains("has no turn 3") && m.contains("--record")),
            "{err}"
        );
    }

    /// The recorders of a session's routes share one cassette: its turns in the order they ran.
    #[tokio::test]
    async fn recorders_of_two_routes_write_one_cassette() {
        let one = |text: &str| {
            Arc::new(Replay::new(
                "live".into(),
                "script".into(),
                Cassette {
                    version: 1,
                    turns: vec![CassetteTurn {
                        request_summary: None,
                        events: text_turn(text),
                    }],
                },
            ))
        };
        let first = Recorder::new(one("on a"));
        let second = first.sharing(one("on b"));
        collect(&first).await;
        collect(&second).await;
        let texts: Vec<Vec<StreamEvent>> = first
            .cassette()
            .turns
            .into_iter()
            .map(|t| t.events)
            .collect();
        assert_eq!(texts, vec![text_turn("on a"), text_turn("on b")]);
        assert_eq!(second.cassette(), first.cassette());
    }

    #[test]
    fn documented_example_parses() {
        let text = r#"{
          "version": 1,
          "turns": [{
            "request_summary": {"model": "gpt-4.1", "messages": 1, "tools": ["read", "bash"]},
            "events": [
              {"type": "text_delta", "text": "Let me look."},
              {"type": "tool_call_start", "index": 0, "id": "call_1", "name": "read"},
              {"type": "tool_call_delta", "index": 0, "arguments": "{\"path\":\"a.rs\"}"},
              {"type": "tool_call_end", "index": 0},
              {"type": "usage", "usage": {"input_tokens": 120, "cached_input_tokens": 0, "output_tokens": 9}},
              {"type": "stop", "reason": "tool_use"}
            ]
          }]
        }"#;
        let c: Cassette = serde_json::from_str(text).unwrap();
        let mut acc = crate::types::TurnAccumulator::new();
        for e in &c.turns[0].events {
            acc.push(e);
        }
        assert_eq!(
            acc.finish(),
            AssistantTurn {
                parts: vec![
                    AssistantPart::Text {
                        text: "Let me look.".into()
                    },
                    AssistantPart::ToolCall {
                        id: "call_1".into(),
                        name: "read".into(),
                        arguments: r#"{"path":"a.rs"}"#.into(),
                        provider_data: None
                    }
                ],
                usage: Usage {
                    input_tokens: 120,
                    cached_input_tokens: 0,
                    output_tokens: 9,
                    cache_write_tokens: 0
                },
                stop_reason: StopReason::ToolUse,
            }
        );
    }

    #[test]
    fn bad_cassettes_are_config_errors() {
        let dir = tempfile::tempdir().unwrap();
        let missing = Replay::from_file("r".into(), &dir.path().join("none.json")).unwrap_err();
        assert!(matches!(&missing, ModelError::Config(m) if m.contains("none.json")));
        let path = dir.path().join("v2.json");
        std::fs::write(&path, r#"{"version":2,"turns":[]}"#).unwrap();
        let wrong = Replay::from_file("r".into(), &path).unwrap_err();
        assert!(matches!(&wrong, ModelError::Config(m) if m.contains("version 2")));
    }
}
