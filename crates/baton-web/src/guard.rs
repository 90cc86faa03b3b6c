//! Who may ask the dashboard: the checks every request passes before a route sees it.
//!
//! - **Token**: on an address other than loopback the server does not start without one
//!   (`--token` or `BATON_SERVE_TOKEN`); with one, a request must carry it as `Authorization:
//!   Bearer TOKEN`, or as the `token` query parameter of the page's own first load (a browser
//!   cannot set a header on a navigation) — else 401.
//! - **Host** and **Origin**: `baton_app::local_http`'s checks, the same as `baton mcp --http`'s
//!   (a DNS-rebound name or another site's page gets 403).
//! - **CSRF**: a request that changes something (not GET/HEAD) must carry the page's token in
//!   `X-Baton-CSRF` (403 else); the page gets it in its HTML.

use std::net::SocketAddr;

use axum::extract::{Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// What the checks compare against.
#[derive(Debug, Clone)]
pub struct Guard {
    pub token: Option<String>,
    /// The bound address (its real port).
    pub local: SocketAddr,
    /// The page's CSRF token, made when the server starts.
    pub csrf: String,
}

/// Why `addr` cannot be served with this token: any address but loopback needs one.
pub fn refusal(addr: &SocketAddr, token: Option<&str>) -> Option<String> {
    if addr.ip().is_loopback() || token.is_some_and(|t| !t.is_empty()) {
        return None;
    }
    Some(format!(
        "baton serve --addr {addr}: not a loopback address, so a token is required: pass --token \
         TOKEN (or set BATON_SERVE_TOKEN); browsers then open http://{addr}/?token=TOKEN"
    ))
}

use baton_app::local_http::{bearer_ok, same_secret as same};

impl Guard {
    fn token_ok(&self, request: &Request) -> bool {
        let Some(token) = self.token.as_deref().filter(|t| !t.is_empty()) else {
            return true;
        };
        let header_ok = bearer_ok(
            request
                .headers()
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok()),
            token,
        );
        let query_ok = request.uri().query().is_some_and(|q| {
            q.split('&')
                .filter_map(|kv| kv.split_once('='))
                .any(|(k, v)| k == "token" && same(v, token))
        });
        let cookie_ok = request
            .headers()
            .get(header::COOKIE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|c| {
                c.split(';')
                    .filter_map(|kv| kv.trim().split_once('='))
                    .any(|(k, v)| k == "baton_token" && same(v, token))
            });
        header_ok || query_ok || cookie_ok
    }
}

fn refuse(status: StatusCode, why: &str) -> Response {
    (status, format!("baton serve: {why}\n")).into_response()
}

/// The checks, as an axum middleware.
pub async fn check(State(guard): State<Guard>, request: Request, next: Next) -> Response {
    if !guard.token_ok(&request) {
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "baton serve: missing or wrong token: open the page as /?token=TOKEN, or send `Authorization: Bearer TOKEN`\n",
        )
            .into_response();
    }
    let headers = request.headers();
    let header_of = |name| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(why) = baton_app::local_http::refusal(
        guard.local,
        header_of(header::HOST),
        header_of(header::ORIGIN),
    ) {
        return refuse(StatusCode::FORBIDDEN, why);
    }
    if !matches!(*request.method(), Method::GET | Method::HEAD) {
        let given = request
            .headers()
            .get("x-baton-csrf")
            .and_then(|v| v.to_str().ok());
        if !given.is_some_and(|g| same(g, &guard.csrf)) {
            return refuse(
                StatusCode::FORBIDDEN,
                "an action needs the page's CSRF token (X-Baton-CSRF): reload the page",
            );
        }
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn off_loopback_needs_a_token() {
        assert!(refusal(&"0.0.0.0:80".parse().unwrap(), None)
            .unwrap()
            .contains("--token"));
        assert!(refusal(&"0.0.0.0:80".parse().unwrap(), Some("t")).is_none());
        assert!(refusal(&"127.0.0.1:80".parse().unwrap(), None).is_none());
    }
}
