//! `baton mcp --http ADDR`: the MCP server over streamable HTTP (rmcp's `StreamableHttpService`
//! in an axum router), at `http://ADDR/mcp`.
//!
//! Against DNS rebinding (the MCP spec requires servers to check `Origin`), every request that
//! carries an `Origin` header must name the server's own origin — `http://127.0.0.1:PORT`,
//! `http://localhost:PORT`, `http://[::1]:PORT` or `http://ADDR:PORT` of the address it is bound
//! to — or gets 403; a request without `Origin` (a client that is not a browser) passes. On a
//! loopback address the `Host` header must also name a loopback host or the address itself (403
//! otherwise). Any other address needs a bearer token (`--token` or `BATON_MCP_TOKEN`): without
//! one baton refuses to start; with one, every request must carry `Authorization: Bearer TOKEN`
//! (the scheme in any case) or gets 401, and any `Host` is accepted. rmcp's
//! `StreamableHttpServerConfig` does the `Host` and `Origin` checks. See docs/mcp.md.

use std::net::SocketAddr;

use anyhow::{Context as _, Result};
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::ServerHandler;

/// The path the MCP endpoint is served at.
pub const PATH: &str = "/mcp";

/// Why `addr` cannot be served with this token, if it cannot: a non-loopback address needs one.
pub fn refusal(addr: &SocketAddr, token: Option<&str>) -> Option<String> {
    let has_token = token.is_some_and(|t| !t.is_empty());
    if addr.ip().is_loopback() || has_token {
        return None;
    }
    Some(format!(
        "baton mcp --http {addr}: not a loopback address, so a bearer token is required: pass \
         --token TOKEN (or set BATON_MCP_TOKEN); clients then send `Authorization: Bearer TOKEN`"
    ))
}

/// Whether an `Authorization` header value carries `token` with the bearer scheme, which is
/// case-insensitive (RFC 9110 §11.1): `Bearer`, `bearer` and `BEARER` are the same.
fn bearer_matches(given: &str, token: &str) -> bool {
    let Some((scheme, credentials)) = given.split_once(' ') else {
        return false;
    };
    if !scheme.eq_ignore_ascii_case("bearer") {
        return false;
    }
    let credentials = credentials.trim_matches(' ');
    // The same work whatever the mismatch, so the time taken does not tell how much matched.
    credentials.len() == token.len()
        && credentials
            .bytes()
            .zip(token.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

/// The origins a browser page served by this server itself would send: the loopback names and
/// the bound address, each with the real port. Any other `Origin` is refused.
fn own_origins(local: SocketAddr) -> Vec<String> {
    let port = local.port();
    let mut origins = vec![
        format!("http://127.0.0.1:{port}"),
        format!("http://localhost:{port}"),
        format!("http://[::1]:{port}"),
    ];
    let ip = local.ip();
    if !ip.is_unspecified() {
        let own = SocketAddr::new(ip, port);
        let own = format!("http://{own}");
        if !origins.contains(&own) {
            origins.push(own);
        }
    }
    origins
}

/// Answers 401 to a request without `Authorization: Bearer TOKEN`.
async fn require_token(State(token): State<String>, request: Request, next: Next) -> Response {
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if !given.is_some_and(|g| bearer_matches(g, &token)) {
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "baton mcp: missing or wrong `Authorization: Bearer` token\n",
        )
            .into_response();
    }
    next.run(request).await
}

/// Serves `make()`'s servers (one per MCP session) on `addr` until the process is stopped.
/// Prints `baton mcp: listening on http://HOST:PORT/mcp` (the real port when `addr`'s is 0) to
/// stderr once it accepts connections.
pub async fn serve<S, F>(addr: SocketAddr, token: Option<String>, make: F) -> Result<()>
where
    S: ServerHandler + Send + 'static,
    F: Fn() -> S + Send + Sync + 'static,
{
    let token = token.filter(|t| !t.is_empty());
    // Bound first: the origins the server accepts carry the real port.
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener
        .local_addr()
        .context("cannot read the bound address")?;
    let config = if addr.ip().is_loopback() {
        // rmcp's loopback names, and the address itself (e.g. 127.0.0.2).
        let ip = addr.ip().to_string();
        StreamableHttpServerConfig::default().with_allowed_hosts([
            "localhost",
            "127.0.0.1",
            "::1",
            ip.as_str(),
        ])
    } else {
        // Off loopback the token is the protection; clients name the host however they reach it.
        StreamableHttpServerConfig::default().disable_allowed_hosts()
    }
    .with_allowed_origins(own_origins(local));
    let service = StreamableHttpService::new(
        move || Ok(make()),
        LocalSessionManager::default().into(),
        config,
    );
    let mut router = axum::Router::new().nest_service(PATH, service);
    if let Some(token) = token {
        router = router.layer(axum::middleware::from_fn_with_state(token, require_token));
    }
    errln!("baton mcp: listening on http://{local}{PATH}");
    axum::serve(listener, router)
        .await
        .context("the MCP HTTP server failed")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bearer_scheme_is_matched_in_any_case_and_the_token_exactly() {
        for given in ["Bearer t0k", "bearer t0k", "BEARER t0k", "BeArEr  t0k"] {
            assert!(bearer_matches(given, "t0k"), "{given}");
        }
        for given in [
            "Bearer t0K",
            "Bearer t0kk",
            "Basic t0k",
            "Bearert0k",
            "t0k",
            "Bearer ",
        ] {
            assert!(!bearer_matches(given, "t0k"), "{given}");
        }
    }

    #[test]
    fn own_origins_are_the_loopback_names_and_the_bound_address_with_its_port() {
        let o = own_origins("127.0.0.1:8765".parse().unwrap());
        assert_eq!(
            o,
            [
                "http://127.0.0.1:8765",
                "http://localhost:8765",
                "http://[::1]:8765"
            ]
        );
        let o = own_origins("127.0.0.2:9".parse().unwrap());
        assert_eq!(o.last().unwrap(), "http://127.0.0.2:9");
        let o = own_origins("[::1]:9".parse().unwrap());
        assert_eq!(o.len(), 3);
        let o = own_origins("0.0.0.0:9".parse().unwrap());
        assert_eq!(o.len(), 3);
        let o = own_origins("192.168.1.5:9".parse().unwrap());
        assert_eq!(o.last().unwrap(), "http://192.168.1.5:9");
    }
}
