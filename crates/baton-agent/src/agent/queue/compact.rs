//! Context compaction: before a request would not fit its route's context window (less a
//! reserve for the answer), the model summarises the work so far, and the seat's view becomes
//! that summary followed by its most recent messages, verbatim. The transcript keeps every
//! message; a `compacted` line says what the view is from then on, so `--resume` continues from
//! the compacted view. `/compact` does the same on demand.

use baton_model::retry::run_turn;
use baton_model::ModelRequest;
use baton_protocol::{AgentEvent, EndReason, ErrorCode, ErrorInfo, Message};

use super::{routed, Drive, Running, Seat};
use crate::routing::state::Profile;

/// Bytes per token, for the part of a view no provider has counted yet.
const BYTES_PER_TOKEN: u64 = 4;
/// The reserve for the answer when the route sets no output limit.
const DEFAULT_RESERVE: u32 = 8192;
/// Longest tool output given to the summary request (its head and tail are kept).
const SUMMARY_TOOL_OUTPUT: usize = 4096;
/// How the summary message begins.
const SUMMARY_OPEN: &str = "<context-summary source=\"host\">";
/// Longest latest user message carried verbatim after the summary.
const MAX_LATEST: usize = 8192;

const SUMMARY_PROMPT: &str = "<host>The conversation above is about to be compacted to stay within the model's context window: write the summary that will replace it. Do not call tools. Write these sections, as headings, keeping every fact needed to go on without the conversation:
## Goal — what the user asked for, in their words where they matter.
## Decisions — what was decided and why, including approaches ruled out.
## Files — each file read, created or changed, with what matters about it.
## State — what is done, what is verified (and how), what is not.
## Open threads — what remains, questions not answered, the next step.
## Last results — the last tool results that matter, quoted briefly (commands with their outcome).</host>";

baton_protocol::closed_set! {
    /// What triggered a compaction.
    pub(crate) enum Trigger ("trigger") {
        Auto = "auto",
        Manual = "manual",
    }
}

fn message_bytes(m: &Message) -> u64 {
    serde_json::to_string(m).map_or(0, |s| s.len() as u64)
}

/// The estimated input tokens of `seat`'s next request: the provider's count of the last
/// request plus an estimate of what came after it, and never less than the whole view's bytes
/// over [`BYTES_PER_TOKEN`] (a server that reports no usage still gets compacted).
/// [`estimate`] of `seat` were its view `messages` (the bytes only: no usage has counted them).
fn estimate_of(seat: &Seat, messages: &[Message]) -> u64 {
    let all: u64 = messages.iter().map(message_bytes).sum::<u64>()
        + seat.system.len() as u64
        + serde_json::to_string(&seat.specs).map_or(0, |s| s.len() as u64);
    all / BYTES_PER_TOKEN
}

pub(crate) fn estimate(seat: &Seat) -> u64 {
    let by_bytes = estimate_of(seat, &seat.messages);
    let by_usage = match seat.fit.counted {
        Some(n) if n <= seat.messages.len() => {
            seat.fit.last_input
                + seat.messages[n..].iter().map(message_bytes).sum::<u64>() / BYTES_PER_TOKEN
        }
        _ => 0,
    };
    by_bytes.max(by_usage)
}

/// What the last request of a seat cost in input tokens, and how many of its messages it sent.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Fit {
    pub(crate) last_input: u64,
    pub(crate) counted: Option<usize>,
}

impl Running<'_> {
    /// Compacts `seat`'s view when its next request would not fit its route's context window
    /// less the reserve for the answer. A route with no known window never compacts. The
    /// Executor's view in a routed session is not compacted: its evidence references count its
    /// messages.
    pub(crate) async fn fit(&mut self, seat: &mut Seat, turn: u32) -> Result<(), Drive> {
        let route = &seat.chain[seat.active];
        let Some(window) = route.context_window else {
            return Ok(());
        };
        if seat.profile == Some(Profile::Executor) {
            return Ok(());
        }
        let reserve = route
            .max_output_tokens
            .unwrap_or(DEFAULT_RESERVE)
            .min(window / 4);
        if estimate(seat) + u64::from(reserve) <= u64::from(window) {
            return Ok(());
        }
        self.compact(seat, turn, Trigger::Auto, None).await
    }

    /// Summarises `seat`'s view with its route's model and replaces the view by the summary and
    /// its most recent messages. A failed summary ends the session with the reason; nothing of
    /// the transcript is lost.
    pub(crate) async fn compact(
        &mut self,
        seat: &mut Seat,
        turn: u32,
        trigger: Trigger,
        focus: Option<&str>,
    ) -> Result<(), Drive> {
        let before = estimate(seat);
        let window = seat.chain[seat.active].context_window.unwrap_or(0);
        let own = seat.chain[seat.active].route.to_string();
        // The summary is written by `agent.compaction_class`'s route when set.
        let route = self
            .spec
            .compaction
            .clone()
            .unwrap_or_else(|| seat.chain[seat.active].clone());
        // The most recent messages that fit a quarter of the window stay verbatim, from an
        // assistant message on (so no tool result loses its call).
        let budget = u64::from(window.max(8192)) * BYTES_PER_TOKEN / 4;
        let start = kept_from(&seat.messages, budget);
        // Only an earlier summary before the kept messages: summarising it again gains nothing,
        // so the request goes as it is (a provider that refuses it says so).
        let only_summary = start == 1
            && matches!(&seat.messages[0], Message::User { text } if text.starts_with(SUMMARY_OPEN));
        if only_summary && trigger == Trigger::Auto {
            return Ok(());
        }
        if start == 0 {
            // Nothing before the kept messages: there is nothing to summarise.
            return match trigger {
                Trigger::Manual => Ok(()),
                Trigger::Auto => Err(compaction_failed(
                    &own,
                    window,
                    "the most recent turn alone does not fit the window",
                )),
            };
        }
        let mut prompt = SUMMARY_PROMPT.to_string();
        if let Some(f) = focus.filter(|f| !f.trim().is_empty()) {
            prompt.push_str(&format!(
                "\n<host>Focus the summary on: {}</host>",
                f.trim()
            ));
        }
        let mut messages: Vec<Message> = seat.messages.iter().map(shorten).collect();
        messages.push(Message::user(prompt));
        let ordinary = routed::ordinary(self);
        let (system, tools) = match (&seat.ordinary, ordinary) {
            (Some((system, tools)), true) => (system.clone(), tools.clone()),
            _ => (seat.system.clone(), seat.specs.clone()),
        };
        let request = ModelRequest {
            model: route.route.model.clone(),
            system,
            messages,
            tools,
            thinking: route.route.thinking,
            max_output_tokens: route.max_output_tokens,
            tools_disabled: true,
            cache_key: Some(match seat.tag() {
                Some(t) => format!("{}-{t}", self.spec.session_id),
                None => self.spec.session_id.clone(),
            }),
        };
        let mut ignore = |_: baton_model::retry::TurnProgress<'_>| {};
        let answer = run_turn(
            route.provider.as_ref(),
            &request,
            &self.spec.retry,
            self.cancel,
            &mut ignore,
        )
        .await;
        let summary = match answer {
            Ok(a) => {
                self.usage.add(&a.usage);
                if let Some(r) = seat.used.last_mut() {
                    r.usage.add(&a.usage);
                }
                a.text()
            }
            Err(e) => return Err(compaction_failed(&own, window, &e.to_string())),
        };
        if summary.trim().is_empty() {
            return Err(compaction_failed(
                &own,
                window,
                "the model wrote an empty summary",
            ));
        }
        let text = summary_message(&seat.messages, start, &summary);
        // The kept messages fit their budget: long tool outputs among them are shortened.
        let mut tail: Vec<Message> = seat.messages[start..].to_vec();
        if tail.iter().map(message_bytes).sum::<u64>() > budget {
            let room = (budget as usize / tail.len().max(1)).max(1024);
            tail = tail.iter().map(|m| shorten_to(m, room)).collect();
        }
        let kept = tail.len();
        // A summary that does not make the context smaller is not used: nothing is recorded and
        // the view stays as it was (a manual `/compact` is told why; an automatic one cannot go on).
        let candidate: Vec<Message> = std::iter::once(Message::user(text.clone()))
            .chain(tail.iter().cloned())
            .collect();
        // Counted the same way on both sides (by bytes): the server's count covers only the old.
        let (was, after) = (
            estimate_of(seat, &seat.messages),
            estimate_of(seat, &candidate),
        );
        if after >= was {
            let why = format!(
                "the summary would not make the context smaller (about {was} → {after} tokens), so the context is kept as it was"
            );
            return match trigger {
                Trigger::Manual => {
                    (self.emit)(AgentEvent::InputRefused {
                        input: "/compact".into(),
                        reason: why,
                    });
                    Ok(())
                }
                Trigger::Auto => Err(compaction_failed(&own, window, &why)),
            };
        }
        if let Some(store) = self.store.as_mut() {
            if let Err(e) = store.compacted(seat.tag(), &text, &tail) {
                return Err(compaction_failed(
                    &own,
                    window,
                    &format!("the transcript could not record it: {e}"),
                ));
            }
        }
        seat.messages = std::iter::once(Message::user(text)).chain(tail).collect();
        seat.fit = Fit::default();
        routed::compacted(self, seat, start);
        (self.emit)(AgentEvent::SessionCompacted {
            seat: seat.tag().map(str::to_string),
            trigger: trigger.as_str().to_string(),
            tokens_before: before,
            tokens_after: estimate(seat),
            kept,
        });
        tracing::info!(turn, before, kept, "compacted the context");
        Ok(())
    }
}

/// Where the messages kept verbatim start: the most recent ones that fit `budget` bytes, from
/// an assistant message on (so no tool result loses its call); else from the last assistant
/// message; else none (`messages.len()`).
fn kept_from(messages: &[Message], budget: u64) -> usize {
    let mut size = 0;
    let mut cut = None;
    for (i, m) in messages.iter().enumerate().rev() {
        size += message_bytes(m);
        if size > budget {
            break;
        }
        if matches!(m, Message::Assistant { .. }) {
            cut = Some(i);
        }
    }
    cut.or_else(|| {
        messages
            .iter()
            .rposition(|m| matches!(m, Message::Assistant { .. }))
    })
    .unwrap_or(messages.len())
}

/// The message that stands for the compacted part: the model's summary, and the user's latest
/// words verbatim when they fall before the kept messages (from `start`).
fn summary_message(messages: &[Message], start: usize, summary: &str) -> String {
    let latest = messages[..start].iter().rev().find_map(|m| match m {
        Message::User { text } if !text.starts_with("<host>") => Some(text.clone()),
        _ => None,
    });
    let latest_after = messages[start..]
        .iter()
        .any(|m| matches!(m, Message::User { .. }));
    let mut text = format!(
        "{SUMMARY_OPEN}\nThe conversation before this point was compacted to fit the model's context window; the transcript keeps it. The summary, written by the model:\n\n{}\n</context-summary>",
        summary.trim()
    );
    if let (Some(l), false) = (latest, latest_after) {
        let l = baton_text::truncate(&l, MAX_LATEST, baton_text::Keep::Head);
        text.push_str(&format!("\n\nThe user's latest message, verbatim:\n{l}"));
    }
    text
}

/// A message as the summary request sees it: long tool outputs keep their head and tail.
fn shorten(m: &Message) -> Message {
    shorten_to(m, SUMMARY_TOOL_OUTPUT)
}

/// `m` with a tool output longer than `room` bytes cut to its head and tail.
fn shorten_to(m: &Message, room: usize) -> Message {
    match m {
        Message::Tool {
            call_id,
            tool,
            output,
            is_error,
        } if output.len() > room => Message::Tool {
            call_id: call_id.clone(),
            tool: tool.clone(),
            output: baton_text::truncate(output, room, baton_text::Keep::Ends { head_percent: 60 })
                .into_owned(),
            is_error: *is_error,
        },
        m => m.clone(),
    }
}

fn compaction_failed(route: &str, window: u32, why: &str) -> Drive {
    let message = format!(
        "the context window of {route} ({window} tokens) is full and compacting it failed: {why}. The transcript keeps the whole session; resume it on a route with a larger window (`--model`), or set a larger `context_window` in [model_info] if the model has one"
    );
    Drive::Ended {
        reason: Some(EndReason::ModelError),
        text: message.clone(),
        error: Some(ErrorInfo {
            code: ErrorCode::ContextTooLong,
            message,
        }),
    }
}
