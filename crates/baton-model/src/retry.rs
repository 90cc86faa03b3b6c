//! Running one model turn to completion, with retries.
//!
//! [`run_turn`] opens a stream, folds its events into an [`AssistantTurn`] and starts the whole
//! turn over when an attempt fails in a way that may pass (see [`ModelError::is_retryable`]): HTTP
//! 408/409/429/5xx, connection failures, streams cut mid-turn, transient provider errors. A cut
//! stream restarts from the first event; the caller learns it through
//! [`TurnProgress::Retrying`] and drops what it showed of the failed attempt. No tool has run at
//! that point, because tools run only after a complete turn.
//!
//! Backoff: attempt `n` (from 1) failing waits `min(initial_delay · 2^(n-1), max_delay)` with
//! equal jitter (half fixed, half random), unless the server sent `retry-after`, which is
//! honoured as sent up to `max_delay`.

use std::time::Duration;

use baton_protocol::ErrorCode;
use futures::StreamExt;
use rand::Rng;
use tokio_util::sync::CancellationToken;

use crate::error::ModelError;
use crate::provider::Provider;
use crate::types::{AssistantTurn, ModelRequest, StreamEvent, TurnAccumulator};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts per turn, the first included (0 counts as 1).
    pub max_attempts: u32,
    pub initial_delay: Duration,
    /// Ceiling of one wait, `retry-after` included.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            initial_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// The `[retry]` config table over the defaults.
    pub fn from_config(config: &baton_protocol::config::RetryConfig) -> Self {
        let default = RetryPolicy::default();
        RetryPolicy {
            max_attempts: config.max_attempts.unwrap_or(default.max_attempts),
            initial_delay: config.initial_delay.map_or(default.initial_delay, |d| d.0),
            max_delay: config.max_delay.map_or(default.max_delay, |d| d.0),
        }
    }

    /// The wait after failed attempt `attempt` (1-based), before jitter is applied.
    fn base_delay(&self, attempt: u32) -> Duration {
        let factor = 2u32.saturating_pow(attempt.saturating_sub(1));
        self.initial_delay
            .checked_mul(factor)
            .unwrap_or(self.max_delay)
            .min(self.max_delay)
    }

    /// The wait after failed attempt `attempt` with `error`.
    pub fn delay(&self, attempt: u32, error: &ModelError) -> Duration {
        if let Some(after) = error.retry_after() {
            return after.min(self.max_delay);
        }
        let base = self.base_delay(attempt);
        let half = base / 2;
        let spread = u64::try_from((base - half).as_micros()).unwrap_or(u64::MAX);
        let jitter = if spread == 0 {
            0
        } else {
            rand::thread_rng().gen_range(0..=spread)
        };
        half + Duration::from_micros(jitter)
    }
}

/// What [`run_turn`] reports while it works.
#[derive(Debug)]
pub enum TurnProgress<'a> {
    /// An event of the current attempt, as it arrives.
    Event(&'a StreamEvent),
    /// The current attempt failed and attempt number `attempt` (2 or more) starts after `delay`.
    /// Everything reported for the failed attempt is void.
    Retrying {
        attempt: u32,
        delay: Duration,
        /// The code of `error` (a retried error always has one: cancellation is never retried).
        code: ErrorCode,
        error: &'a ModelError,
    },
}

/// Runs one turn on `provider`, retrying per `policy`, until a complete [`AssistantTurn`], a
/// non-retryable error, the last failed attempt, or `cancel` (→ [`ModelError::Cancelled`]).
pub async fn run_turn(
    provider: &dyn Provider,
    request: &ModelRequest,
    policy: &RetryPolicy,
    cancel: &CancellationToken,
    on_progress: &mut (dyn FnMut(TurnProgress<'_>) + Send),
) -> Result<AssistantTurn, ModelError> {
    let max_attempts = policy.max_attempts.max(1);
    let mut attempt = 1;
    loop {
        if cancel.is_cancelled() {
            return Err(ModelError::Cancelled);
        }
        let error = match attempt_turn(provider, request, cancel, on_progress).await {
            Ok(turn) => return Ok(turn),
            Err(e) => e,
        };
        // Only a cancellation has no code, and it ends the turn at once.
        let Some(code) = error.code() else {
            return Err(error);
        };
        if !error.is_retryable() || attempt >= max_attempts {
            return Err(error);
        }
        let delay = policy.delay(attempt, &error);
        attempt += 1;
        tracing::debug!(provider = provider.name(), attempt, ?delay, %error, "retrying model turn");
        on_progress(TurnProgress::Retrying {
            attempt,
            delay,
            code,
            error: &error,
        });
        tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(ModelError::Cancelled),
            () = tokio::time::sleep(delay) => {}
        }
    }
}

/// One attempt: open the stream and read it to `Stop`.
async fn attempt_turn(
    provider: &dyn Provider,
    request: &ModelRequest,
    cancel: &CancellationToken,
    on_progress: &mut (dyn FnMut(TurnProgress<'_>) + Send),
) -> Result<AssistantTurn, ModelError> {
    let mut stream = tokio::select! {
        biased;
        () = cancel.cancelled() => return Err(ModelError::Cancelled),
        s = provider.stream(request) => s?,
    };
    let mut acc = TurnAccumulator::new();
    loop {
        let next = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(ModelError::Cancelled),
            n = stream.next() => n,
        };
        match next {
            Some(Ok(event)) => {
                on_progress(TurnProgress::Event(&event));
                acc.push(&event);
                if acc.is_complete() {
                    return Ok(acc.finish());
                }
            }
            Some(Err(e)) => return Err(e),
            None => {
                return Err(ModelError::StreamCut {
                    provider: provider.name().to_string(),
                    model: request.model.clone(),
                    message: "the stream ended without a stop event".to_string(),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::Mutex;

    use baton_protocol::{AssistantPart, Message, StopReason, Usage};
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::provider::EventStream;

    /// One scripted attempt: an error before streaming, or a stream of items (which may end in an
    /// error, or hang after them when `hang` is set).
    enum Attempt {
        Fail(ModelError),
        Stream {
            items: Vec<Result<StreamEvent, ModelError>>,
            hang: bool,
        },
    }

    struct Scripted {
        attempts: Mutex<VecDeque<Attempt>>,
        calls: Mutex<u32>,
    }

    impl Scripted {
        fn new(attempts: Vec<Attempt>) -> Self {
            Scripted {
                attempts: Mutex::new(attempts.into()),
                calls: Mutex::new(0),
            }
        }
        fn calls(&self) -> u32 {
            *self.calls.lock().unwrap()
        }
    }

    #[async_trait::async_trait]
    impl Provider for Scripted {
        fn name(&self) -> &str {
            "scripted"
        }
        async fn stream(&self, _request: &ModelRequest) -> Result<EventStream, ModelError> {
            *self.calls.lock().unwrap() += 1;
            let next = self.attempts.lock().unwrap().pop_front();
            match next {
                Some(Attempt::Fail(e)) => Err(e),
                Some(Attempt::Stream { items, hang }) => {
                    let s = futures::stream::iter(items);
                    if hang {
                        Ok(Box::pin(s.chain(futures::stream::pending())))
                    } else {
                        Ok(Box::pin(s))
                    }
                }
                None => Err(ModelError::Config("script exhausted".into())),
            }
        }
    }

    fn request() -> ModelRequest {
        ModelRequest {
            model: "m".into(),
            system: String::new(),
            messages: vec![Message::user("hi")],
            tools: vec![],
            thinking: None,
            max_output_tokens: None,
            tools_disabled: false,
            cache_key: None,
        }
    }

    fn fast() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 5,
            initial_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(50),
        }
    }

    fn http(status: u16, retry_after: Option<Duration>) -> ModelError {
        ModelError::Http {
            provider: "scripted".into(),
            model: "m".into(),
            status,
            message: "nope".into(),
            retry_after,
            kind: crate::error::ErrorKind::Other,
        }
    }

    fn cut() -> ModelError {
        ModelError::StreamCut {
            provider: "scripted".into(),
            model: "m".into(),
            message: "reset".into(),
        }
    }

    fn ok_turn(text: &str) -> Attempt {
        Attempt::Stream {
            items: vec![
                Ok(StreamEvent::TextDelta { text: text.into() }),
                Ok(StreamEvent::Usage {
                    usage: Usage {
                        input_tokens: 4,
                        cached_input_tokens: 1,
                        output_tokens: 2,
                        cache_write_tokens: 0,
                    },
                }),
                Ok(StreamEvent::Stop {
                    reason: StopReason::EndTurn,
                }),
            ],
            hang: false,
        }
    }

    /// What the progress callback saw, in a comparable form.
    #[derive(Debug, PartialEq)]
    enum Seen {
        Event(StreamEvent),
        Retrying { attempt: u32, code: ErrorCode },
    }

    async fn drive(
        provider: &Scripted,
        policy: &RetryPolicy,
        cancel: &CancellationToken,
        cancel_on: Option<fn(&TurnProgress<'_>) -> bool>,
    ) -> (Result<AssistantTurn, ModelError>, Vec<Seen>, Vec<Duration>) {
        let mut seen = Vec::new();
        let mut delays = Vec::new();
        let token = cancel.clone();
        let mut on = |p: TurnProgress<'_>| {
            if cancel_on.is_some_and(|f| f(&p)) {
                token.cancel();
            }
            match p {
                TurnProgress::Event(e) => seen.push(Seen::Event(e.clone())),
                TurnProgress::Retrying {
                    attempt,
                    delay,
                    code,
                    error,
                } => {
                    delays.push(delay);
                    assert_eq!(error.code(), Some(code));
                    seen.push(Seen::Retrying { attempt, code });
                }
            }
        };
        let r = run_turn(provider, &request(), policy, cancel, &mut on).await;
        (r, seen, delays)
    }

    fn expected_turn(text: &str) -> AssistantTurn {
        AssistantTurn {
            parts: vec![AssistantPart::Text { text: text.into() }],
            usage: Usage {
                input_tokens: 4,
                cached_input_tokens: 1,
                output_tokens: 2,
                cache_write_tokens: 0,
            },
            stop_reason: StopReason::EndTurn,
        }
    }

    #[tokio::test]
    async fn rate_limit_with_retry_after_then_success() {
        let p = Scripted::new(vec![
            Attempt::Fail(http(429, Some(Duration::from_millis(3)))),
            Attempt::Fail(http(503, Some(Duration::from_secs(3600)))),
            ok_turn("done"),
        ]);
        let (r, seen, delays) = drive(&p, &fast(), &CancellationToken::new(), None).await;
        assert_eq!(r, Ok(expected_turn("done")));
        assert_eq!(
            delays,
            vec![Duration::from_millis(3), Duration::from_millis(50)],
            "retry-after honoured, capped at max_delay"
        );
        assert_eq!(
            seen[..2],
            [
                Seen::Retrying {
                    attempt: 2,
                    code: ErrorCode::RateLimited
                },
                Seen::Retrying {
                    attempt: 3,
                    code: ErrorCode::ServerError
                },
            ]
        );
        assert_eq!(p.calls(), 3);
    }

    #[tokio::test]
    async fn unauthorized_fails_at_once_with_a_useful_message() {
        let p = Scripted::new(vec![Attempt::Fail(http(401, None)), ok_turn("unused")]);
        let (r, seen, _) = drive(&p, &fast(), &CancellationToken::new(), None).await;
        let err = r.unwrap_err();
        assert_eq!(p.calls(), 1);
        assert_eq!(seen, vec![]);
        assert_eq!(
            err.to_string(),
            "scripted returned HTTP 401 for model `m`: nope (check the API key: set the variable named by `api_key_env` for this provider)"
        );
    }

    #[tokio::test]
    async fn a_cut_stream_restarts_the_whole_turn() {
        let p = Scripted::new(vec![
            Attempt::Stream {
                items: vec![
                    Ok(StreamEvent::TextDelta {
                        text: "half a ".into(),
                    }),
                    Err(cut()),
                ],
                hang: false,
            },
            // Ends without Stop and without an error: also a cut.
            Attempt::Stream {
                items: vec![Ok(StreamEvent::TextDelta {
                    text: "again".into(),
                })],
                hang: false,
            },
            ok_turn("whole"),
        ]);
        let (r, seen, _) = drive(&p, &fast(), &CancellationToken::new(), None).await;
        assert_eq!(r, Ok(expected_turn("whole")));
        assert_eq!(
            seen[..4],
            [
                Seen::Event(StreamEvent::TextDelta {
                    text: "half a ".into()
                }),
                Seen::Retrying {
                    attempt: 2,
                    code: ErrorCode::StreamCut
                },
                Seen::Event(StreamEvent::TextDelta {
                    text: "again".into()
                }),
                Seen::Retrying {
                    attempt: 3,
                    code: ErrorCode::StreamCut
                },
            ]
        );
    }

    #[tokio::test]
    async fn gives_up_after_max_attempts() {
        let p = Scripted::new((0..10).map(|_| Attempt::Fail(http(500, None))).collect());
        let policy = RetryPolicy {
            max_attempts: 3,
            ..fast()
        };
        let (r, seen, delays) = drive(&p, &policy, &CancellationToken::new(), None).await;
        assert_eq!(r, Err(http(500, None)));
        assert_eq!(p.calls(), 3);
        assert_eq!(seen.len(), 2);
        // Equal jitter: between half the base and the base (1ms then 2ms).
        assert!(delays[0] >= Duration::from_micros(500) && delays[0] <= Duration::from_millis(1));
        assert!(delays[1] >= Duration::from_millis(1) && delays[1] <= Duration::from_millis(2));
    }

    #[tokio::test]
    async fn non_retryable_stream_errors_return_at_once() {
        let refused = ModelError::Stream {
            provider: "scripted".into(),
            model: "m".into(),
            retryable: false,
            message: "invalid_request_error: prompt is too long".into(),
            kind: crate::error::ErrorKind::ContextTooLong {
                tokens: None,
                limit: None,
            },
        };
        let p = Scripted::new(vec![
            Attempt::Stream {
                items: vec![Err(refused.clone())],
                hang: false,
            },
            ok_turn("unused"),
        ]);
        let (r, _, _) = drive(&p, &fast(), &CancellationToken::new(), None).await;
        assert_eq!(r, Err(refused));
        assert_eq!(p.calls(), 1);
    }

    #[tokio::test]
    async fn cancellation_while_waiting_to_retry() {
        let p = Scripted::new(vec![Attempt::Fail(http(429, None)), ok_turn("unused")]);
        let policy = RetryPolicy {
            max_attempts: 5,
            initial_delay: Duration::from_secs(3600),
            max_delay: Duration::from_secs(3600),
        };
        let (r, _, _) = drive(
            &p,
            &policy,
            &CancellationToken::new(),
            Some(|p| matches!(p, TurnProgress::Retrying { .. })),
        )
        .await;
        assert_eq!(r, Err(ModelError::Cancelled));
        assert_eq!(p.calls(), 1);
    }

    #[tokio::test]
    async fn cancellation_while_streaming() {
        let p = Scripted::new(vec![Attempt::Stream {
            items: vec![Ok(StreamEvent::TextDelta {
                text: "thinking…".into(),
            })],
            hang: true,
        }]);
        let (r, seen, _) = drive(
            &p,
            &fast(),
            &CancellationToken::new(),
            Some(|p| matches!(p, TurnProgress::Event(_))),
        )
        .await;
        assert_eq!(r, Err(ModelError::Cancelled));
        assert_eq!(seen.len(), 1);

        let cancelled = CancellationToken::new();
        cancelled.cancel();
        let p = Scripted::new(vec![ok_turn("unused")]);
        let (r, _, _) = drive(&p, &fast(), &cancelled, None).await;
        assert_eq!(r, Err(ModelError::Cancelled));
        assert_eq!(p.calls(), 0);
    }

    #[test]
    fn backoff_doubles_up_to_the_ceiling() {
        let policy = RetryPolicy::default();
        let bases: Vec<_> = (1..=8).map(|n| policy.base_delay(n)).collect();
        assert_eq!(
            bases,
            [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000]
                .map(Duration::from_millis)
                .to_vec()
        );
        assert_eq!(policy.base_delay(200), Duration::from_secs(30));
    }
}
