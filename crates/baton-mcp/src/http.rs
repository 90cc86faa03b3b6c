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
//! (the scheme in any case) or gets 401, and any `Host` is accepted. The `Host` and `Origin`
//! checks are `baton_app::local_http`'s, the same `baton serve` applies (rmcp's own are turned
//! off, so that one rule holds for both servers). See docs/mcp.md.

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

/// Answers 403 to a request whose `Host` or `Origin` the shared rule refuses.
async fn check_host_origin(
    State(local): State<SocketAddr>,
    request: Request,
    next: Next,
) -> Response {
    let headers = request.headers();
    let header_of = |name| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(why) =
        baton_app::local_http::refusal(local, header_of(header::HOST), header_of(header::ORIGIN))
    {
        return (StatusCode::FORBIDDEN, format!("baton mcp: {why}\n")).into_response();
    }
    next.run(request).await
}

/// Answers 401 to a request without `Authorization: Bearer TOKEN`.
async fn require_token(State(token): State<String>, request: Request, next: Next) -> Response {
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if !baton_app::local_http::bearer_ok(given, &token) {
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
    // The Host and Origin checks are the shared ones below; rmcp's are off.
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .disable_allowed_origins();
    let service = StreamableHttpService::new(
        move || Ok(make()),
        LocalSessionManager::default().into(),
        config,
    );
    let mut router = axum::Router::new().nest_service(PATH, service);
    if let Some(token) = token {
        router = router.layer(axum::middleware::from_fn_with_state(token, require_token));
    }
    // Outermost: a rebound name or another site's page is refused before anything else.
    let router = router.layer(axum::middleware::from_fn_with_state(
        local,
        check_host_origin,
    ));
    errln!("baton mcp: listening on http://{local}{PATH}");
    axum::serve(listener, router)
        .await
        .context("the MCP HTTP server failed")
}
