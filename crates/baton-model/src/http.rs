//! HTTP plumbing shared by the network providers: one pooled client, the POST that opens an event
//! stream, and the mapping of failures to [`ModelError`] (status, error body, `retry-after`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use crate::error::{classify, ErrorKind, ModelError};

/// Longest error text kept from a response body, in characters.
const MAX_ERROR_BYTES: usize = 600;
/// Most bytes read from an error response body.
const MAX_ERROR_BODY: usize = 64 * 1024;
/// Time allowed to open a TCP/TLS connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Who is talking to whom, for error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ctx {
    pub provider: String,
    pub model: String,
}

impl Ctx {
    pub fn new(provider: &str, model: &str) -> Self {
        Ctx {
            provider: provider.to_string(),
            model: model.to_string(),
        }
    }

    pub fn cut(&self, message: impl Into<String>) -> ModelError {
        ModelError::StreamCut {
            provider: self.provider.clone(),
            model: self.model.clone(),
            message: message.into(),
        }
    }

    pub fn protocol(&self, message: impl Into<String>) -> ModelError {
        ModelError::Protocol {
            provider: self.provider.clone(),
            message: message.into(),
        }
    }

    /// The error an error event of the stream reports ([`classify_error_object`]).
    pub fn stream_error(&self, event: ErrorEvent) -> ModelError {
        ModelError::Stream {
            provider: self.provider.clone(),
            model: self.model.clone(),
            retryable: event.retryable,
            message: event.message,
            kind: event.kind,
        }
    }

    /// Parses the JSON payload of one SSE `data` field.
    pub fn json(&self, data: &str) -> Result<serde_json::Value, ModelError> {
        serde_json::from_str(data).map_err(|e| {
            self.protocol(format!(
                "invalid JSON in an event ({e}): {}",
                bounded(data, 200)
            ))
        })
    }
}

/// A pooled HTTP client (rustls). Building one only fails when the TLS backend cannot start; the
/// error is kept and reported by the first request instead of panicking in a constructor.
pub(crate) fn build_client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .build()
        .map_err(|e| format!("could not build the HTTP client: {}", error_chain(&e)))
}

/// Joins an error with its sources: reqwest's own message alone rarely says what went wrong.
pub(crate) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

/// At most `max` bytes of `text` (trimmed), from its start, with the one omission marker.
pub(crate) fn bounded(text: &str, max: usize) -> String {
    baton_text::truncate(text.trim(), max, baton_text::Keep::Head).into_owned()
}

/// Default headers first, then the configured ones, which replace defaults of the same name.
pub(crate) fn header_map(
    defaults: &[(&str, String)],
    extra: &[(String, String)],
) -> Result<HeaderMap, ModelError> {
    let mut map = HeaderMap::new();
    let pairs = defaults
        .iter()
        .map(|(k, v)| (*k, v.as_str()))
        .chain(extra.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    for (name, value) in pairs {
        let n = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
            ModelError::Config(format!(
                "header name `{name}` is not a valid HTTP header name: fix the provider's `headers` table"
            ))
        })?;
        let mut v = HeaderValue::from_str(value).map_err(|_| {
            ModelError::Config(format!(
                "the value of header `{name}` contains characters HTTP does not allow (control characters or non-ASCII): fix it in the provider's `headers` table or the API key"
            ))
        })?;
        let lower = name.to_ascii_lowercase();
        if lower == "authorization" || lower.contains("api-key") || lower.contains("token") {
            v.set_sensitive(true);
        }
        map.insert(n, v);
    }
    Ok(map)
}

/// One streaming POST: what a provider needs to open a turn.
/// How a network provider reaches its server: the provider's name (in errors), the API root
/// (such as `https://api.openai.com/v1`), the key, extra headers and how long an open stream may
/// stay silent. It has no `Debug`: the key and the headers may hold credentials.
#[derive(Clone)]
pub struct Connection {
    pub name: String,
    pub base_url: String,
    pub api_key: Option<String>,
    pub headers: Vec<(String, String)>,
    pub stream_idle_timeout: Duration,
}

/// The HTTP side every SSE provider shares: where it posts, with which key and headers. `Debug`
/// never prints the key or the headers (which may hold credentials).
pub(crate) struct Endpoint {
    pub name: String,
    pub url: String,
    pub api_key: Option<String>,
    pub headers: Vec<(String, String)>,
    pub idle_timeout: Duration,
    /// Built at the first request: a session builds providers it may never call (the routes it
    /// could fail over to, the compaction route), and building a client costs a TLS setup.
    client: std::sync::OnceLock<Result<reqwest::Client, String>>,
}

impl Endpoint {
    /// Requests go to `{base_url}{path}`.
    pub fn new(connection: Connection, path: &str) -> Self {
        Endpoint {
            url: format!("{}{path}", connection.base_url.trim_end_matches('/')),
            name: connection.name,
            api_key: connection.api_key,
            headers: connection.headers,
            idle_timeout: connection.stream_idle_timeout,
            client: std::sync::OnceLock::new(),
        }
    }

    /// The OpenAI-style `authorization: Bearer KEY` header, when there is a key.
    pub fn bearer(&self) -> Vec<(&'static str, String)> {
        self.api_key
            .iter()
            .map(|k| ("authorization", format!("Bearer {k}")))
            .collect()
    }

    /// Posts one streaming request; the response is known to be a successful event stream.
    pub async fn post(
        &self,
        model: &str,
        default_headers: &[(&str, String)],
        body: &serde_json::Value,
    ) -> Result<(Ctx, reqwest::Response), ModelError> {
        let ctx = Ctx::new(&self.name, model);
        let response = SsePost {
            client: self.client.get_or_init(build_client),
            ctx: &ctx,
            url: &self.url,
            default_headers,
            extra_headers: &self.headers,
            body,
            idle_timeout: self.idle_timeout,
        }
        .send()
        .await?;
        Ok((ctx, response))
    }
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("name", &self.name)
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

pub(crate) struct SsePost<'a> {
    pub client: &'a Result<reqwest::Client, String>,
    pub ctx: &'a Ctx,
    pub url: &'a str,
    pub default_headers: &'a [(&'a str, String)],
    pub extra_headers: &'a [(String, String)],
    pub body: &'a serde_json::Value,
    /// Also bounds the wait for the response headers.
    pub idle_timeout: Duration,
}

impl SsePost<'_> {
    /// Sends the request and returns the response once it is known to be a successful stream.
    pub async fn send(self) -> Result<reqwest::Response, ModelError> {
        let client = self
            .client
            .as_ref()
            .map_err(|e| ModelError::Config(e.clone()))?;
        let headers = header_map(self.default_headers, self.extra_headers)?;
        let body = serde_json::to_vec(self.body)
            .map_err(|e| ModelError::Config(format!("could not encode the request: {e}")))?;
        // The connection of the last answer goes back to the client's pool on a task of its
        // own; on a one-thread runtime that task runs only when this one yields. Without this,
        // every request after a tool call that ran inline opened a second connection.
        tokio::task::yield_now().await;
        let request = client
            .post(self.url)
            .headers(headers)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .body(body)
            .send();
        let connect = |message: String| ModelError::Connect {
            provider: self.ctx.provider.clone(),
            url: self.url.to_string(),
            message,
        };
        let response = match with_timeout(self.idle_timeout, request).await {
            Some(Ok(r)) => r,
            Some(Err(e)) => return Err(connect(error_chain(&e))),
            None => {
                return Err(connect(format!(
                    "no response within {:?} (stream_idle_timeout)",
                    self.idle_timeout
                )))
            }
        };
        let status = response.status();
        if !status.is_success() {
            let retry_after = retry_after(response.headers(), SystemTime::now());
            let text = read_bounded(response, self.idle_timeout).await;
            let (message, kind) = status_message(status, &text);
            return Err(ModelError::Http {
                provider: self.ctx.provider.clone(),
                model: self.ctx.model.clone(),
                status: status.as_u16(),
                message,
                retry_after,
                kind,
            });
        }
        let is_json = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().starts_with("application/json"));
        if is_json {
            // A JSON body where an event stream was asked for: usually an error object from a proxy.
            let text = read_bounded(response, self.idle_timeout).await;
            return Err(match serde_json::from_str::<serde_json::Value>(&text) {
                Ok(v) if v.get("error").is_some() => {
                    self.ctx.stream_error(classify_error_object(&v))
                }
                Ok(_) | Err(_) => self.ctx.protocol(format!(
                    "expected an event stream (text/event-stream) but got JSON: {}",
                    bounded(&text, 200)
                )),
            });
        }
        Ok(response)
    }
}

/// Awaits `fut`, giving up after `limit` (a zero limit waits forever).
pub(crate) async fn with_timeout<F: std::future::Future>(
    limit: Duration,
    fut: F,
) -> Option<F::Output> {
    if limit.is_zero() {
        Some(fut.await)
    } else {
        tokio::time::timeout(limit, fut).await.ok()
    }
}

/// Reads at most [`MAX_ERROR_BODY`] bytes of a body, as text; read errors just end the text.
pub(crate) async fn read_bounded(response: reqwest::Response, limit: Duration) -> String {
    let mut body = response.bytes_stream();
    let mut buf: Vec<u8> = Vec::new();
    while buf.len() < MAX_ERROR_BODY {
        match with_timeout(limit, body.next()).await {
            Some(Some(Ok(chunk))) => buf.extend_from_slice(&chunk),
            Some(Some(Err(_)) | None) | None => break,
        }
    }
    buf.truncate(MAX_ERROR_BODY);
    String::from_utf8_lossy(&buf).into_owned()
}

/// The message of an error answer — its body's ([`error_message`]), else the status's reason —
/// and what the status and body say went wrong ([`classify`]).
pub(crate) fn status_message(status: reqwest::StatusCode, body: &str) -> (String, ErrorKind) {
    let message = if body.trim().is_empty() {
        status
            .canonical_reason()
            .unwrap_or("no error message")
            .to_string()
    } else {
        error_message(body)
    };
    let json = serde_json::from_str::<serde_json::Value>(body).unwrap_or_default();
    let kind = classify(Some(status.as_u16()), &json, &message);
    (message, kind)
}

/// The human part of an error body: `error.message` (OpenAI, Anthropic), a string `error`, a
/// top-level `message`, or else the text itself; bounded either way.
pub(crate) fn error_message(body: &str) -> String {
    let found = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            let e = v.get("error");
            e.and_then(|e| e.get("message"))
                .and_then(|m| m.as_str())
                .or_else(|| e.and_then(|e| e.as_str()))
                .or_else(|| v.get("message").and_then(|m| m.as_str()))
                .or_else(|| v.get("detail").and_then(|m| m.as_str()))
                .map(str::to_string)
        });
    bounded(found.as_deref().unwrap_or(body), MAX_ERROR_BYTES)
}

/// An error event of a stream, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ErrorEvent {
    pub retryable: bool,
    /// `type/code: message`.
    pub message: String,
    pub kind: ErrorKind,
}

/// Reads an `{"error": {...}}` object (or a bare error object) of a stream.
///
/// The kind comes from [`classify`]; for the rest, transient errors are server errors and
/// timeouts, by type, code or a numeric status code of 408, 429 or 5xx.
pub(crate) fn classify_error_object(v: &serde_json::Value) -> ErrorEvent {
    let e = v.get("error").unwrap_or(v);
    // A bare error event's own `type` is just "error", which says nothing.
    let kind = e
        .get("type")
        .and_then(|t| t.as_str())
        .filter(|t| *t != "error")
        .unwrap_or_default()
        .to_string();
    let code = match e.get("code") {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Number(n)) => n.to_string(),
        Some(_) | None => String::new(),
    };
    let message = e
        .get("message")
        .and_then(|m| m.as_str())
        .map(str::to_string)
        .or_else(|| e.as_str().map(str::to_string))
        .unwrap_or_else(|| e.to_string());
    let transient = |s: &str| {
        matches!(
            s,
            "overloaded_error"
                | "api_error"
                | "rate_limit_error"
                | "rate_limit_exceeded"
                | "server_error"
                | "server_is_overloaded"
                | "slow_down"
                | "timeout"
                | "internal_error"
                | "service_unavailable"
        ) || s
            .parse::<u16>()
            .is_ok_and(|n| n == 408 || n == 429 || n >= 500)
    };
    let class = classify(None, v, &message);
    let retryable = class
        .retryable()
        .unwrap_or_else(|| transient(&kind) || transient(&code));
    let label = [kind.as_str(), code.as_str()]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("/");
    let message = if label.is_empty() {
        bounded(&message, MAX_ERROR_BYTES)
    } else {
        format!("{}: {}", label, bounded(&message, MAX_ERROR_BYTES))
    };
    ErrorEvent {
        retryable,
        message,
        kind: class,
    }
}

/// How long the server asked us to wait: `retry-after-ms` (milliseconds), else `retry-after` as
/// seconds or as an HTTP date. A date in the past means "now".
pub(crate) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let get = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = get("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        if ms.is_finite() && ms >= 0.0 {
            return Some(Duration::from_secs_f64(ms / 1000.0));
        }
    }
    let value = get("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let at = parse_http_date(value)?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Parses an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the form HTTP servers must send.
fn parse_http_date(s: &str) -> Option<SystemTime> {
    let mut words = s.split_whitespace();
    let _weekday = words.next()?;
    let day: u32 = words.next()?.parse().ok()?;
    let month = match words.next()? {
        "Jan" => 1,
        "Feb" => 2,
        "Mar" => 3,
        "Apr" => 4,
        "May" => 5,
        "Jun" => 6,
        "Jul" => 7,
        "Aug" => 8,
        "Sep" => 9,
        "Oct" => 10,
        "Nov" => 11,
        "Dec" => 12,
        _ => return None,
    };
    let year: i64 = words.next()?.parse().ok()?;
    let mut clock = words.next()?.split(':');
    let h: u64 = clock.next()?.parse().ok()?;
    let m: u64 = clock.next()?.parse().ok()?;
    let sec: u64 = clock.next()?.parse().ok()?;
    if words.next()? != "GMT" || !(1..=31).contains(&day) || h > 23 || m > 59 || sec > 60 {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let secs = u64::try_from(days).ok()? * 86_400 + h * 3600 + m * 60 + sec;
    Some(UNIX_EPOCH + Duration::from_secs(secs))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(*k, HeaderValue::from_static(v));
        }
        map
    }

    #[test]
    fn retry_after_reads_seconds_milliseconds_and_dates() {
        let now = UNIX_EPOCH + Duration::from_secs(784_111_770); // Sun, 06 Nov 1994 08:49:30 GMT
        assert_eq!(
            retry_after(&headers(&[("retry-after", "7")]), now),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "1.5")]), now),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            retry_after(
                &headers(&[("retry-after", "7"), ("retry-after-ms", "250")]),
                now
            ),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            retry_after(
                &headers(&[("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT")]),
                now
            ),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            retry_after(
                &headers(&[("retry-after", "Sat, 05 Nov 1994 08:49:37 GMT")]),
                now
            ),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")]), now), None);
        assert_eq!(retry_after(&headers(&[("retry-after", "-3")]), now), None);
        assert_eq!(retry_after(&headers(&[]), now), None);
    }

    #[test]
    fn http_dates_match_known_epochs() {
        assert_eq!(
            parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"),
            Some(UNIX_EPOCH)
        );
        assert_eq!(
            parse_http_date("Tue, 29 Feb 2000 12:00:00 GMT"),
            Some(UNIX_EPOCH + Duration::from_secs(951_825_600))
        );
        assert_eq!(parse_http_date("Tue, 29 Feb 2000 12:00:00 PST"), None);
    }

    #[test]
    fn error_messages_come_from_json_bodies_or_bounded_text() {
        assert_eq!(
            error_message(
                r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#
            ),
            "Incorrect API key provided"
        );
        assert_eq!(
            error_message(
                r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#
            ),
            "invalid x-api-key"
        );
        assert_eq!(
            error_message(r#"{"error":"model not found"}"#),
            "model not found"
        );
        assert_eq!(error_message("  Bad Gateway\n"), "Bad Gateway");
        let long = "x".repeat(5000);
        let cut = error_message(&long);
        assert!(cut.len() <= MAX_ERROR_BYTES, "{}", cut.len());
        let kept = cut.chars().take_while(|c| *c == 'x').count();
        assert!(
            cut.ends_with(&format!("[… {} bytes omitted …]", 5000 - kept)),
            "{cut}"
        );
    }

    #[test]
    fn error_objects_are_classified() {
        let read = |v: serde_json::Value| {
            let e = classify_error_object(&v);
            (e.retryable, e.message, e.kind)
        };
        let v = serde_json::json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}});
        assert_eq!(
            read(v),
            (
                true,
                "overloaded_error: Overloaded".to_string(),
                ErrorKind::Overloaded
            )
        );
        let v = serde_json::json!({"error":{"message":"bad","type":"invalid_request_error","code":null}});
        assert_eq!(
            read(v),
            (
                false,
                "invalid_request_error: bad".to_string(),
                ErrorKind::Other
            )
        );
        let v = serde_json::json!({"error":{"message":"upstream","code":502}});
        assert_eq!(
            read(v),
            (true, "502: upstream".to_string(), ErrorKind::Other)
        );
        // llama-server, when the error comes as a chunk of the stream.
        let v = serde_json::json!({"error":{"code":400,"message":"request (3999 tokens) exceeds the available context size (2048 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":3999,"n_ctx":2048}});
        let (retryable, _, kind) = read(v);
        assert!(!retryable);
        assert_eq!(
            kind,
            ErrorKind::ContextTooLong {
                tokens: Some(3999),
                limit: Some(2048)
            }
        );
        // OpenAI Responses' `response.failed` error object.
        let v = serde_json::json!({"code":"insufficient_quota","message":"You exceeded your current quota, please check your plan and billing details."});
        assert_eq!(
            read(v),
            (
                false,
                "insufficient_quota: You exceeded your current quota, please check your plan and billing details.".to_string(),
                ErrorKind::QuotaExceeded { resets_in: None }
            )
        );
        // OpenRouter mid-stream: a numeric code in the error object.
        let v = serde_json::json!({"error":{"code":402,"message":"Insufficient credits. Add more using https://openrouter.ai/settings/credits"}});
        assert_eq!(read(v).2, ErrorKind::QuotaExceeded { resets_in: None });
        let v = serde_json::json!({"error":{"code":429,"message":"Rate limit exceeded: free-models-per-min."}});
        assert_eq!(
            read(v),
            (
                true,
                "429: Rate limit exceeded: free-models-per-min.".to_string(),
                ErrorKind::RateLimited
            )
        );
    }

    #[test]
    fn configured_headers_replace_defaults_and_bad_ones_are_config_errors() {
        let map = header_map(
            &[("anthropic-version", "2023-06-01".to_string())],
            &[("Anthropic-Version".to_string(), "2024-01-01".to_string())],
        )
        .unwrap();
        assert_eq!(map.get("anthropic-version").unwrap(), "2024-01-01");
        assert_eq!(map.len(), 1);
        let err = header_map(&[], &[("bad name".to_string(), "v".to_string())]).unwrap_err();
        assert!(matches!(err, ModelError::Config(m) if m.contains("bad name")));
    }
}

#[cfg(test)]
mod endpoint_tests {
    use super::*;

    #[test]
    fn debug_output_never_shows_the_key_or_headers() {
        let e = Endpoint::new(
            Connection {
                name: "p".into(),
                base_url: "http://127.0.0.1:1/v1/".into(),
                api_key: Some("sk-secret".into()),
                headers: vec![("x-token".into(), "hidden".into())],
                stream_idle_timeout: Duration::from_secs(1),
            },
            "/responses",
        );
        assert_eq!(e.url, "http://127.0.0.1:1/v1/responses");
        let shown = format!("{e:?}");
        assert!(
            !shown.contains("sk-secret") && !shown.contains("hidden"),
            "{shown}"
        );
    }
}
