//! `baton mcp --http ADDR`: the MCP server over streamable HTTP (rmcp's `StreamableHttpService`
//! in an axum router), at `http://ADDR/mcp`.
//!
//! Loopback addresses are served as they are, with rmcp's check that the `Host` header names a
//! loopback host or the address itself (against DNS rebinding). Any other address needs a bearer token (`--token` or
//! `BATON_MCP_TOKEN`): without one baton refuses to start; with one, every request must carry
//! `Authorization: Bearer TOKEN` or gets 401, and any `Host` is accepted. See docs/mcp.md.

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

/// Answers 401 to a request without `Authorization: Bearer TOKEN`.
async fn require_token(State(token): State<String>, request: Request, next: Next) -> Response {
    let expected = format!("Bearer {token}");
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    // The same work whatever the mismatch, so the time taken does not tell how much matched.
    let ok = given.is_some_and(|g| {
        g.len() == expected.len()
            && g.bytes()
                .zip(expected.bytes())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
    });
    if !ok {
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
    };
    let service = StreamableHttpService::new(
        move || Ok(make()),
        LocalSessionManager::default().into(),
        config,
    );
    let mut router = axum::Router::new().nest_service(PATH, service);
    if let Some(token) = token {
        router = router.layer(axum::middleware::from_fn_with_state(token, require_token));
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener
        .local_addr()
        .context("cannot read the bound address")?;
    errln!("baton mcp: listening on http://{local}{PATH}");
    axum::serve(listener, router)
        .await
        .context("the MCP HTTP server failed")
}
