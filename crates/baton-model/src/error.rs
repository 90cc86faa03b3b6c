//! Typed model errors, each with a stable code and a message that says what to do.

use std::time::Duration;

use baton_protocol::ErrorCode;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// The server answered with an error status before streaming.
    #[error("{provider} returned HTTP {status} for model `{model}`: {message}{hint}", hint = status_hint(*status))]
    Http {
        provider: String,
        model: String,
        status: u16,
        message: String,
        /// `retry-after`, when the server sent one.
        retry_after: Option<Duration>,
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
    #[error("{provider} reported an error for model `{model}`: {message}")]
    Stream {
        provider: String,
        model: String,
        /// Whether the error type is transient (overloaded, rate limited, server error).
        retryable: bool,
        message: String,
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

fn status_hint(status: u16) -> &'static str {
    match status {
        401 => " (check the API key: set the variable named by `api_key_env` for this provider)",
        403 => " (the key is not allowed to use this model: check the account's access)",
        404 => " (check the model name in the route and the provider's `base_url`)",
        400 => {
            " (the request was refused as invalid: check the model name and the provider `kind`)"
        }
        429 => " (rate limited)",
        _ => "",
    }
}

impl ModelError {
    /// The stable code of the error in events and exit reports; `None` for [`ModelError::Cancelled`],
    /// which is not a failure of the model but the caller stopping the turn (a session reports it
    /// as its end reason `cancelled`).
    pub fn code(&self) -> Option<ErrorCode> {
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

    /// Whether another attempt of the same turn may succeed.
    pub fn is_retryable(&self) -> bool {
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
