//! Who may ask the dashboard: the checks every request passes before a route sees it.
//!
//! - **Token**: on an address other than loopback the server does not start without one
//!   (`--token` or `BATON_SERVE_TOKEN`); with one, a request must carry it as `Authorization:
//!   Bearer TOKEN`, or as the `token` query parameter of the page's own first load (a browser
//!   cannot set a header on a navigation) — else 401.
//! - **Host**: on loopback, the `Host` header must name a loopback host or the bound address
//!   (a DNS-rebound name gets 403).
//! - **Origin**: a request that carries `Origin` must name the server's own origin (403 else).
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

/// Compares without telling how much matched.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

impl Guard {
    /// The origins a page served by this server sends.
    pub fn own_origins(&self) -> Vec<String> {
        let port = self.local.port();
        let mut out = vec![
            format!("http://127.0.0.1:{port}"),
            format!("http://localhost:{port}"),
            format!("http://[::1]:{port}"),
        ];
        if !self.local.ip().is_unspecified() {
            let own = format!("http://{}", self.local);
            if !out.contains(&own) {
                out.push(own);
            }
        }
        out
    }

    fn host_ok(&self, host: Option<&str>) -> bool {
        // Off loopback the token protects; clients name the host however they reach it.
        if !self.local.ip().is_loopback() {
            return true;
        }
        let Some(host) = host else { return false };
        let name = match host.rsplit_once(':') {
            Some((n, port)) if port.chars().all(|c| c.is_ascii_digit()) => n,
            _ => host,
        };
        let name = name.trim_start_matches('[').trim_end_matches(']');
        matches!(name, "localhost" | "127.0.0.1" | "::1") || name == self.local.ip().to_string()
    }

    fn token_ok(&self, request: &Request) -> bool {
        let Some(token) = self.token.as_deref().filter(|t| !t.is_empty()) else {
            return true;
        };
        let header_ok = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split_once(' '))
            .is_some_and(|(scheme, given)| {
                scheme.eq_ignore_ascii_case("bearer") && same(given.trim(), token)
            });
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
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok());
    if !guard.host_ok(host) {
        return refuse(
            StatusCode::FORBIDDEN,
            "this server answers to localhost names only (the Host header names another)",
        );
    }
    if let Some(origin) = request
        .headers()
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
    {
        if !guard.own_origins().iter().any(|o| o == origin) {
            return refuse(
                StatusCode::FORBIDDEN,
                "a page of another origin may not use this server",
            );
        }
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

    fn guard(addr: &str, token: Option<&str>) -> Guard {
        Guard {
            token: token.map(str::to_string),
            local: addr.parse().unwrap(),
            csrf: "c".into(),
        }
    }

    #[test]
    fn hosts_origins_and_the_token_rule() {
        let g = guard("127.0.0.1:8080", None);
        assert!(g.host_ok(Some("127.0.0.1:8080")));
        assert!(g.host_ok(Some("localhost:8080")));
        assert!(g.host_ok(Some("[::1]:8080")));
        assert!(!g.host_ok(Some("evil.example:8080")));
        assert!(!g.host_ok(None));
        assert!(g
            .own_origins()
            .contains(&"http://localhost:8080".to_string()));
        assert!(refusal(&"0.0.0.0:80".parse().unwrap(), None)
            .unwrap()
            .contains("--token"));
        assert!(refusal(&"0.0.0.0:80".parse().unwrap(), Some("t")).is_none());
        assert!(refusal(&"127.0.0.1:80".parse().unwrap(), None).is_none());
        let g = guard("0.0.0.0:8080", Some("t"));
        assert!(g.host_ok(Some("anything:1")));
    }
}
