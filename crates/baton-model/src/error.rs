//! Typed model errors, each with a stable code and a message that says what to do.
//!
//! An error answer of a provider is read twice: [`crate::http`] takes its human message, and
//! [`classify`] reads its HTTP status and body (or an error event inside the stream) into an
//! [`ErrorKind`] — context too long, out of quota, overloaded, rate limited, model not found —
//! because each needs a different fix and only some are worth another attempt.

use std::time::Duration;

use baton_protocol::ErrorCode;
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// The server answered with an error status before streaming.
    #[error("{provider} returned HTTP {status} for model `{model}`: {message}{hint}", hint = http_hint(*status, kind, provider, model))]
    Http {
        provider: String,
        model: String,
        status: u16,
        message: String,
        /// `retry-after`, when the server sent one.
        retry_after: Option<Duration>,
        /// What the status and body say went wrong.
        kind: ErrorKind,
    },
    /// No response: DNS, refused connection, TLS, timeout before the first byte.
    #[error("could not reach {provider} at {url}: {message}")]
    Connect {
        provider: String,
        url: String,
        message: String,
    },
    /// The stream ended or broke before the turn was complete.
    #[error("{provider} stream for model `{model}` was cut mid-turn: {message}")]
    StreamCut {
        provider: String,
        model: String,
        message: String,
    },
    /// The provider sent an error event inside the stream.
    #[error("{provider} reported an error for model `{model}`: {message}{fix}", fix = kind.fix(provider, model))]
    Stream {
        provider: String,
        model: String,
        /// Whether the error type is transient (overloaded, rate limited, server error).
        retryable: bool,
        message: String,
        /// What the event says went wrong.
        kind: ErrorKind,
    },
    /// The stream could not be understood (malformed SSE or JSON).
    #[error("{provider} sent a stream baton could not parse: {message}")]
    Protocol { provider: String, message: String },
    /// The provider is misconfigured (missing key, unknown base URL, missing cassette).
    #[error("{0}")]
    Config(String),
    /// The caller cancelled the turn.
    #[error("cancelled")]
    Cancelled,
}

/// What an error answer of a provider means, as far as what to do about it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ErrorKind {
    /// The conversation does not fit the model's context window. Numbers are given when the
    /// server said them: the size of the request and the size of the window, in tokens.
    ContextTooLong {
        tokens: Option<u64>,
        limit: Option<u64>,
    },
    /// The account is out of credit or quota, or its plan's usage limit is reached: another
    /// attempt soon fails the same way. `resets_in` (seconds) when the server said it.
    QuotaExceeded { resets_in: Option<u64> },
    /// The server is short of capacity for everyone (Anthropic's 529): it passes.
    Overloaded,
    /// The account sent too much too fast: it passes after a wait.
    RateLimited,
    /// The provider has no model of that name (or, for Ollama, it is not pulled).
    ModelNotFound,
    /// Anything else: the HTTP status decides.
    #[default]
    Other,
}

impl ErrorKind {
    /// The stable code of this kind, when it has its own.
    pub fn code(self) -> Option<ErrorCode> {
        match self {
            ErrorKind::ContextTooLong { .. } => Some(ErrorCode::ContextTooLong),
            ErrorKind::QuotaExceeded { .. } => Some(ErrorCode::QuotaExceeded),
            ErrorKind::Overloaded => Some(ErrorCode::Overloaded),
            ErrorKind::RateLimited => Some(ErrorCode::RateLimited),
            ErrorKind::ModelNotFound => Some(ErrorCode::ModelNotFound),
            ErrorKind::Other => None,
        }
    }

    /// Whether another attempt on the same route may succeed, when the kind decides it.
    pub(crate) fn retryable(self) -> Option<bool> {
        match self {
            ErrorKind::Overloaded | ErrorKind::RateLimited => Some(true),
            ErrorKind::ContextTooLong { .. }
            | ErrorKind::QuotaExceeded { .. }
            | ErrorKind::ModelNotFound => Some(false),
            ErrorKind::Other => None,
        }
    }

    /// What to do about it, as the end of a message (` — …`); empty for [`ErrorKind::Other`].
    pub fn fix(self, provider: &str, model: &str) -> String {
        match self {
            ErrorKind::ContextTooLong { tokens, limit } => {
                let sizes = match (tokens, limit) {
                    (Some(t), Some(l)) => format!("the conversation is {t} tokens and the model's context on this server is {l}"),
                    (Some(t), None) => format!("the conversation is {t} tokens, more than the model's context"),
                    (None, Some(l)) => format!("the conversation is longer than the model's context of {l} tokens"),
                    (None, None) => "the conversation is longer than the model's context".to_string(),
                };
                format!(
                    " — {sizes}: start the server with a larger context (`-c` for llama-server, \
                     `num_ctx` for Ollama, `--max-model-len` for vLLM) or use a model with a larger window"
                )
            }
            ErrorKind::QuotaExceeded { resets_in } => {
                let when = resets_in
                    .map(|s| format!(" (the limit resets in {})", human_seconds(s)))
                    .unwrap_or_default();
                format!(
                    " — the account behind `{provider}` is out of credit or quota, or its plan's usage limit is reached{when}: \
                     add credit (or wait for the reset), or list another route after this one in the model class ([models]) so the session fails over to it"
                )
            }
            ErrorKind::Overloaded => format!(
                " — `{provider}` is overloaded (not a limit of your account; retried as [retry] allows): \
                 try again later, or list another route after this one in the model class ([models]) so the session fails over to it"
            ),
            ErrorKind::RateLimited => " — rate limited: baton waits and retries ([retry] max_attempts, max_delay); run fewer sessions at once or ask the provider for a higher limit".to_string(),
            ErrorKind::ModelNotFound => format!(
                " — route `{provider}/{model}`: the provider has no model `{model}`: check the model name in the route, \
                 and for Ollama pull it first (`ollama pull {model}`)"
            ),
            ErrorKind::Other => String::new(),
        }
    }
}

/// `90` → `1 min 30 s`, `7200` → `2 h`.
fn human_seconds(s: u64) -> String {
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 if s.is_multiple_of(60) => format!("{} min", s / 60),
        60..=3599 => format!("{} min {} s", s / 60, s % 60),
        _ if s.is_multiple_of(3600) => format!("{} h", s / 3600),
        _ => format!("{} h {} min", s / 3600, (s % 3600) / 60),
    }
}

/// The hint after an HTTP error's message: the kind's fix, else one for the status.
fn http_hint(status: u16, kind: &ErrorKind, provider: &str, model: &str) -> String {
    let fix = kind.fix(provider, model);
    if !fix.is_empty() {
        return fix;
    }
    match status {
        401 => " (check the API key: set the variable named by `api_key_env` for this provider)",
        403 => " (the key is not allowed to use this model: check the account's access)",
        404 => " (check the model name in the route and the provider's `base_url`)",
        400 => {
            " (the request was refused as invalid: check the model name and the provider `kind`)"
        }
        _ => "",
    }
    .to_string()
}

impl ModelError {
    /// The stable code of the error in events and exit reports; `None` for [`ModelError::Cancelled`],
    /// which is not a failure of the model but the caller stopping the turn (a session reports it
    /// as its end reason `cancelled`).
    pub fn code(&self) -> Option<ErrorCode> {
        if let Some(code) = self.kind().code() {
            return Some(code);
        }
        Some(match self {
            ModelError::Http { status: 429, .. } => ErrorCode::RateLimited,
            ModelError::Http { status: 401, .. } => ErrorCode::Unauthorized,
            ModelError::Http { status: 403, .. } => ErrorCode::Forbidden,
            ModelError::Http { status: 404, .. } => ErrorCode::NotFound,
            ModelError::Http { status: 400, .. } => ErrorCode::BadRequest,
            ModelError::Http { status, .. } if *status >= 500 => ErrorCode::ServerError,
            ModelError::Http { .. } => ErrorCode::HttpError,
            ModelError::Connect { .. } => ErrorCode::Connection,
            ModelError::StreamCut { .. } => ErrorCode::StreamCut,
            ModelError::Stream { .. } => ErrorCode::ProviderError,
            ModelError::Protocol { .. } => ErrorCode::Protocol,
            ModelError::Config(_) => ErrorCode::Config,
            ModelError::Cancelled => return None,
        })
    }

    /// What the provider said went wrong ([`ErrorKind::Other`] for errors that are not its answer).
    pub fn kind(&self) -> ErrorKind {
        match self {
            ModelError::Http { kind, .. } | ModelError::Stream { kind, .. } => *kind,
            ModelError::Connect { .. }
            | ModelError::StreamCut { .. }
            | ModelError::Protocol { .. }
            | ModelError::Config(_)
            | ModelError::Cancelled => ErrorKind::Other,
        }
    }

    /// Whether another attempt of the same turn may succeed.
    pub fn is_retryable(&self) -> bool {
        if let Some(retryable) = self.kind().retryable() {
            return retryable;
        }
        match self {
            ModelError::Http { status, .. } => {
                *status == 429 || *status == 408 || *status == 409 || *status >= 500
            }
            ModelError::Connect { .. } | ModelError::StreamCut { .. } => true,
            ModelError::Stream { retryable, .. } => *retryable,
            ModelError::Protocol { .. } => true,
            ModelError::Config(_) | ModelError::Cancelled => false,
        }
    }

    /// Whether another route may succeed where this one failed: the account is out of quota or
    /// its plan's usage limit is reached, the server is overloaded, or the account is rate
    /// limited (the last two only once retries on the same route are used up).
    pub fn fails_over(&self) -> bool {
        matches!(
            self.kind(),
            ErrorKind::QuotaExceeded { .. } | ErrorKind::Overloaded | ErrorKind::RateLimited
        )
    }

    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ModelError::Http { retry_after, .. } => *retry_after,
            ModelError::Connect { .. }
            | ModelError::StreamCut { .. }
            | ModelError::Stream { .. }
            | ModelError::Protocol { .. }
            | ModelError::Config(_)
            | ModelError::Cancelled => None,
        }
    }
}

/// Error types and codes that mean the account has no credit, quota or plan usage left, across
/// providers: OpenAI (`insufficient_quota`), ChatGPT plans as Codex sees them
/// (`usage_limit_reached`, `usage_not_included`), Anthropic (`billing_error`, and a spend limit
/// reported as `enforced_spend_limit_reached`), OpenAI-compatible gateways (`insufficient_credits`).
const QUOTA_LABELS: &[&str] = &[
    "insufficient_quota",
    "usage_limit_reached",
    "usage_not_included",
    "billing_error",
    "billing_hard_limit_reached",
    "enforced_spend_limit_reached",
    "insufficient_credits",
    "insufficient_balance",
];

/// Error types and codes of a context window that is too small for the request.
const CONTEXT_LABELS: &[&str] = &[
    "context_length_exceeded",
    "context_window_exceeded",
    "exceed_context_size_error",
];

const OVERLOADED_LABELS: &[&str] = &["overloaded_error", "server_is_overloaded", "overloaded"];

const RATE_LIMIT_LABELS: &[&str] = &["rate_limit_error", "rate_limit_exceeded", "slow_down"];

/// Reads what an error answer means from its HTTP status (`None` for an error event inside a
/// stream), its JSON body (the whole body or the error object; `Value::Null` when it is not
/// JSON) and its human message.
///
/// Labels (`type`, `code`, `error.details.error_code`) are trusted first; the message is read
/// for the shapes that carry no label of their own (Anthropic's "prompt is too long: N tokens >
/// M maximum", vLLM's "This model's maximum context length is M tokens…", Ollama's "model \"x\"
/// not found, try pulling it first", Anthropic's "credit balance is too low").
pub fn classify(status: Option<u16>, body: &Value, message: &str) -> ErrorKind {
    let e = match body.get("error") {
        Some(inner) if inner.is_object() => inner,
        _ => body,
    };
    let mut labels: Vec<String> = Vec::new();
    let mut numeric: Option<u16> = None;
    for v in [
        e.get("type"),
        e.get("code"),
        e.pointer("/details/error_code"),
        e.pointer("/error/type"),
        e.pointer("/error/code"),
    ]
    .into_iter()
    .flatten()
    {
        match v {
            Value::String(s) if s != "error" => labels.push(s.to_ascii_lowercase()),
            Value::Number(n) => {
                numeric = numeric.or(n.as_u64().and_then(|n| u16::try_from(n).ok()))
            }
            _ => {}
        }
    }
    // A status inside the body counts when there is no HTTP status (an in-stream error), and
    // says more than a generic one (OpenRouter sends `code: 402` in a body).
    let status = status.or(numeric);
    let has = |list: &[&str]| labels.iter().any(|l| list.contains(&l.as_str()));
    let text = message.to_lowercase();

    let context = has(CONTEXT_LABELS)
        || text.contains("prompt is too long")
        || text.contains("maximum context length")
        || text.contains("context length exceeded")
        || (text.contains("context") && text.contains("exceed"));
    if context {
        return context_sizes(e, message);
    }
    let quota = has(QUOTA_LABELS)
        || status == Some(402)
        || text.contains("credit balance is too low")
        || text.contains("exceeded your current quota")
        || text.contains("insufficient credits");
    if quota {
        let resets_in = e.get("resets_in_seconds").and_then(Value::as_u64);
        return ErrorKind::QuotaExceeded { resets_in };
    }
    let mentions_model = text.contains("model")
        && (text.contains("not found")
            || text.contains("does not exist")
            || text.starts_with("model:")
            || text.contains("not a valid model"));
    let not_found = status == Some(404)
        || labels.iter().any(|l| {
            matches!(
                l.as_str(),
                "not_found_error" | "notfounderror" | "not_found"
            )
        });
    if labels.iter().any(|l| l == "model_not_found")
        || (not_found && mentions_model)
        || text.contains("not a valid model")
    {
        return ErrorKind::ModelNotFound;
    }
    if has(OVERLOADED_LABELS)
        || status == Some(529)
        || (matches!(status, None | Some(503)) && text.contains("overloaded"))
    {
        return ErrorKind::Overloaded;
    }
    if has(RATE_LIMIT_LABELS) || status == Some(429) {
        return ErrorKind::RateLimited;
    }
    ErrorKind::Other
}

/// The sizes a context error gives: llama-server's `n_prompt_tokens` / `n_ctx` fields, else the
/// numbers in the message of Anthropic, OpenAI, vLLM and llama-server.
fn context_sizes(e: &Value, message: &str) -> ErrorKind {
    let field = |k: &str| e.get(k).and_then(Value::as_u64);
    let tokens = field("n_prompt_tokens")
        // vLLM and OpenAI: "you requested M tokens (X in the messages, Y in the completion)":
        // the conversation is X; M counts the output the request allowed too.
        .or_else(|| int_after(message, "tokens (").filter(|_| message.contains("in the messages")))
        .or_else(|| int_after(message, "prompt is too long:"))
        .or_else(|| int_after(message, "resulted in"))
        .or_else(|| int_after(message, "request has"))
        .or_else(|| int_after(message, "you requested"))
        .or_else(|| int_after(message, "request ("))
        .or_else(|| int_after(message, "input ("));
    let limit = field("n_ctx")
        .or_else(|| int_after(message, "tokens >"))
        .or_else(|| int_after(message, "maximum context length is"))
        .or_else(|| int_after(message, "context size ("));
    ErrorKind::ContextTooLong { tokens, limit }
}

/// The whole number right after `marker` in `text` (spaces skipped), compared case-insensitively.
fn int_after(text: &str, marker: &str) -> Option<u64> {
    let lower = text.to_lowercase();
    let at = lower.find(&marker.to_lowercase())? + marker.len();
    let digits: String = lower
        .get(at..)?
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// The error baton reports for an HTTP error answer with this status and body.
    fn http(provider: &str, model: &str, status: u16, body: &str) -> ModelError {
        let code = reqwest::StatusCode::from_u16(status).unwrap();
        let (message, kind) = crate::http::status_message(code, body);
        ModelError::Http {
            provider: provider.into(),
            model: model.into(),
            status,
            message,
            retry_after: None,
            kind,
        }
    }

    const CONTEXT_FIX: &str = "start the server with a larger context (`-c` for llama-server, \
        `num_ctx` for Ollama, `--max-model-len` for vLLM) or use a model with a larger window";

    fn quota_fix(provider: &str, when: &str) -> String {
        format!(
            "the account behind `{provider}` is out of credit or quota, or its plan's usage limit is reached{when}: \
             add credit (or wait for the reset), or list another route after this one in the model class ([models]) so the session fails over to it"
        )
    }

    /// What a case must give: the code, whether the same route is tried again, whether the
    /// session fails over to the class's next route, and the whole message.
    struct Expect {
        code: ErrorCode,
        retry: bool,
        fail_over: bool,
        message: String,
    }

    fn check(err: ModelError, want: Expect) {
        assert_eq!(err.to_string(), want.message);
        assert_eq!(err.code(), Some(want.code), "{err}");
        assert_eq!(err.is_retryable(), want.retry, "{err}");
        assert_eq!(err.fails_over(), want.fail_over, "{err}");
    }

    #[test]
    fn llama_server_context_size() {
        let body = r#"{"error":{"code":400,"message":"request (3999 tokens) exceeds the available context size (2048 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":3999,"n_ctx":2048}}"#;
        check(
            http("local", "qwen3-8b", 400, body),
            Expect {
                code: ErrorCode::ContextTooLong,
                retry: false,
                fail_over: false,
                message: format!(
                    "local returned HTTP 400 for model `qwen3-8b`: request (3999 tokens) exceeds the available context size (2048 tokens), try increasing it \
                     — the conversation is 3999 tokens and the model's context on this server is 2048: {CONTEXT_FIX}"
                ),
            },
        );
    }

    #[test]
    fn vllm_context_length_counts_the_messages() {
        // vLLM's error object is the body itself, with the status as a number in `code`.
        let body = r#"{"object":"error","message":"This model's maximum context length is 16384 tokens. However, you requested 122946 tokens (112946 in the messages, 10000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}"#;
        check(
            http("vllm", "Qwen/Qwen2.5-Coder-32B-Instruct", 400, body),
            Expect {
                code: ErrorCode::ContextTooLong,
                retry: false,
                fail_over: false,
                message: format!(
                    "vllm returned HTTP 400 for model `Qwen/Qwen2.5-Coder-32B-Instruct`: This model's maximum context length is 16384 tokens. \
                     However, you requested 122946 tokens (112946 in the messages, 10000 in the completion). Please reduce the length of the messages or completion. \
                     — the conversation is 112946 tokens and the model's context on this server is 16384: {CONTEXT_FIX}"
                ),
            },
        );
    }

    #[test]
    fn openai_errors() {
        let body = r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130412 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        check(
            http("openai", "gpt-4o", 400, body),
            Expect {
                code: ErrorCode::ContextTooLong,
                retry: false,
                fail_over: false,
                message: format!(
                    "openai returned HTTP 400 for model `gpt-4o`: This model's maximum context length is 128000 tokens. However, your messages resulted in 130412 tokens. \
                     Please reduce the length of the messages. — the conversation is 130412 tokens and the model's context on this server is 128000: {CONTEXT_FIX}"
                ),
            },
        );

        let body = r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
        check(
            http("openai", "gpt-4.1-mini", 429, body),
            Expect {
                code: ErrorCode::QuotaExceeded,
                retry: false,
                fail_over: true,
                message: format!(
                    "openai returned HTTP 429 for model `gpt-4.1-mini`: You exceeded your current quota, please check your plan and billing details. \
                     For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors. — {}",
                    quota_fix("openai", "")
                ),
            },
        );

        let body = r#"{"error":{"message":"Rate limit reached for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, Used 29000, Requested 2000. Please try again in 2s.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}"#;
        check(
            http("openai", "gpt-4o", 429, body),
            Expect {
                code: ErrorCode::RateLimited,
                retry: true,
                fail_over: true,
                message: "openai returned HTTP 429 for model `gpt-4o`: Rate limit reached for gpt-4o in organization org-abc on tokens per min (TPM): \
                          Limit 30000, Used 29000, Requested 2000. Please try again in 2s. — rate limited: baton waits and retries ([retry] max_attempts, max_delay); \
                          run fewer sessions at once or ask the provider for a higher limit"
                    .into(),
            },
        );

        let body = r#"{"error":{"message":"The model `gpt-9` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}"#;
        check(
            http("openai", "gpt-9", 404, body),
            Expect {
                code: ErrorCode::ModelNotFound,
                retry: false,
                fail_over: false,
                message: "openai returned HTTP 404 for model `gpt-9`: The model `gpt-9` does not exist or you do not have access to it. \
                          — route `openai/gpt-9`: the provider has no model `gpt-9`: check the model name in the route, \
                          and for Ollama pull it first (`ollama pull gpt-9`)"
                    .into(),
            },
        );

        let body = r#"{"error":{"message":"Incorrect API key provided: sk-abc. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#;
        check(
            http("openai", "gpt-4o", 401, body),
            Expect {
                code: ErrorCode::Unauthorized,
                retry: false,
                fail_over: false,
                message: "openai returned HTTP 401 for model `gpt-4o`: Incorrect API key provided: sk-abc. You can find your API key at \
                          https://platform.openai.com/account/api-keys. (check the API key: set the variable named by `api_key_env` for this provider)"
                    .into(),
            },
        );
    }

    #[test]
    fn anthropic_errors() {
        let anthropic = |status, kind: &str, message: &str| {
            let body = serde_json::json!({"type":"error","error":{"type":kind,"message":message},"request_id":"req_011"});
            http("anthropic", "claude-sonnet-4-5", status, &body.to_string())
        };
        let head = "anthropic returned HTTP";
        check(
            anthropic(529, "overloaded_error", "Overloaded"),
            Expect {
                code: ErrorCode::Overloaded,
                retry: true,
                fail_over: true,
                message: format!(
                    "{head} 529 for model `claude-sonnet-4-5`: Overloaded — `anthropic` is overloaded (not a limit of your account; retried as [retry] allows): \
                     try again later, or list another route after this one in the model class ([models]) so the session fails over to it"
                ),
            },
        );
        check(
            anthropic(429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
            Expect {
                code: ErrorCode::RateLimited,
                retry: true,
                fail_over: true,
                message: format!(
                    "{head} 429 for model `claude-sonnet-4-5`: Number of request tokens has exceeded your per-minute rate limit \
                     — rate limited: baton waits and retries ([retry] max_attempts, max_delay); run fewer sessions at once or ask the provider for a higher limit"
                ),
            },
        );
        check(
            anthropic(400, "invalid_request_error", "prompt is too long: 219898 tokens > 200000 maximum"),
            Expect {
                code: ErrorCode::ContextTooLong,
                retry: false,
                fail_over: false,
                message: format!(
                    "{head} 400 for model `claude-sonnet-4-5`: prompt is too long: 219898 tokens > 200000 maximum \
                     — the conversation is 219898 tokens and the model's context on this server is 200000: {CONTEXT_FIX}"
                ),
            },
        );
        check(
            anthropic(404, "not_found_error", "model: claude-sonnet-9"),
            Expect {
                code: ErrorCode::ModelNotFound,
                retry: false,
                fail_over: false,
                message: format!(
                    "{head} 404 for model `claude-sonnet-4-5`: model: claude-sonnet-9 — route `anthropic/claude-sonnet-4-5`: \
                     the provider has no model `claude-sonnet-4-5`: check the model name in the route, and for Ollama pull it first (`ollama pull claude-sonnet-4-5`)"
                ),
            },
        );
        let low = "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.";
        check(
            anthropic(400, "invalid_request_error", low),
            Expect {
                code: ErrorCode::QuotaExceeded,
                retry: false,
                fail_over: true,
                message: format!(
                    "{head} 400 for model `claude-sonnet-4-5`: {low} — {}",
                    quota_fix("anthropic", "")
                ),
            },
        );
        let billing = anthropic(402, "billing_error", "Payment required");
        assert_eq!(billing.code(), Some(ErrorCode::QuotaExceeded));
        // A spend limit is a 429 of type rate_limit_error that says so in `details`: waiting
        // minutes does not help, so it is quota, not a rate limit.
        let body = r#"{"type":"error","error":{"type":"rate_limit_error","message":"You have reached your specified API usage limits.","details":{"error_code":"enforced_spend_limit_reached"}}}"#;
        let spend = http("anthropic", "claude-sonnet-4-5", 429, body);
        assert_eq!(spend.code(), Some(ErrorCode::QuotaExceeded));
        assert!(!spend.is_retryable() && spend.fails_over());
        check(
            anthropic(401, "authentication_error", "invalid x-api-key"),
            Expect {
                code: ErrorCode::Unauthorized,
                retry: false,
                fail_over: false,
                message: format!(
                    "{head} 401 for model `claude-sonnet-4-5`: invalid x-api-key (check the API key: set the variable named by `api_key_env` for this provider)"
                ),
            },
        );
    }

    #[test]
    fn ollama_model_not_pulled() {
        let fix = "— route `ollama/qwen3:8b`: the provider has no model `qwen3:8b`: check the model name in the route, \
                   and for Ollama pull it first (`ollama pull qwen3:8b`)";
        // The OpenAI-compatible endpoint, and the native API's bare string.
        for body in [
            r#"{"error":{"message":"model \"qwen3:8b\" not found, try pulling it first","type":"api_error","param":null,"code":null}}"#,
            r#"{"error":"model \"qwen3:8b\" not found, try pulling it first"}"#,
        ] {
            check(
                http("ollama", "qwen3:8b", 404, body),
                Expect {
                    code: ErrorCode::ModelNotFound,
                    retry: false,
                    fail_over: false,
                    message: format!(
                        "ollama returned HTTP 404 for model `qwen3:8b`: model \"qwen3:8b\" not found, try pulling it first {fix}"
                    ),
                },
            );
        }
        // vLLM's answer for a model it does not serve.
        let body = r#"{"object":"error","message":"The model `qwen3:8b` does not exist.","type":"NotFoundError","param":null,"code":404}"#;
        assert_eq!(
            http("ollama", "qwen3:8b", 404, body).code(),
            Some(ErrorCode::ModelNotFound)
        );
    }

    #[test]
    fn openrouter_and_chatgpt_quota() {
        let body = r#"{"error":{"message":"Insufficient credits. Add more using https://openrouter.ai/settings/credits","code":402}}"#;
        check(
            http("openrouter", "anthropic/claude-sonnet-4.5", 402, body),
            Expect {
                code: ErrorCode::QuotaExceeded,
                retry: false,
                fail_over: true,
                message: format!(
                    "openrouter returned HTTP 402 for model `anthropic/claude-sonnet-4.5`: Insufficient credits. Add more using \
                     https://openrouter.ai/settings/credits — {}",
                    quota_fix("openrouter", "")
                ),
            },
        );
        let body = r#"{"error":{"type":"usage_limit_reached","message":"The usage limit has been reached","plan_type":"plus","resets_in_seconds":5400}}"#;
        check(
            http("chatgpt", "gpt-5-codex", 429, body),
            Expect {
                code: ErrorCode::QuotaExceeded,
                retry: false,
                fail_over: true,
                message: format!(
                    "chatgpt returned HTTP 429 for model `gpt-5-codex`: The usage limit has been reached — {}",
                    quota_fix("chatgpt", " (the limit resets in 1 h 30 min)")
                ),
            },
        );
        let body = r#"{"error":{"type":"usage_not_included","message":"Your plan does not include this model"}}"#;
        assert_eq!(
            http("chatgpt", "gpt-5-codex", 429, body).code(),
            Some(ErrorCode::QuotaExceeded)
        );
    }

    #[test]
    fn other_answers_keep_the_status_hint() {
        let body = r#"{"error":{"message":"Invalid 'tools[0].function.name': string does not match pattern.","type":"invalid_request_error","param":"tools[0].function.name","code":"invalid_value"}}"#;
        check(
            http("openai", "gpt-4o", 400, body),
            Expect {
                code: ErrorCode::BadRequest,
                retry: false,
                fail_over: false,
                message: "openai returned HTTP 400 for model `gpt-4o`: Invalid 'tools[0].function.name': string does not match pattern. \
                          (the request was refused as invalid: check the model name and the provider `kind`)"
                    .into(),
            },
        );
        // A wrong base URL: a 404 that names no model.
        check(
            http("local", "qwen", 404, "404 page not found"),
            Expect {
                code: ErrorCode::NotFound,
                retry: false,
                fail_over: false,
                message: "local returned HTTP 404 for model `qwen`: 404 page not found (check the model name in the route and the provider's `base_url`)".into(),
            },
        );
        let busy = http(
            "local",
            "qwen",
            503,
            r#"{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}"#,
        );
        assert_eq!(busy.code(), Some(ErrorCode::ServerError));
        assert!(busy.is_retryable() && !busy.fails_over());
    }

    #[test]
    fn seconds_read_as_people_say_them() {
        assert_eq!(human_seconds(45), "45 s");
        assert_eq!(human_seconds(120), "2 min");
        assert_eq!(human_seconds(150), "2 min 30 s");
        assert_eq!(human_seconds(7200), "2 h");
        assert_eq!(human_seconds(5400), "1 h 30 min");
    }
}
