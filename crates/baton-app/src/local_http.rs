//! Who may talk to baton's local HTTP servers (`baton serve`, `baton mcp --http`): the one set of
//! checks both apply to every request, whatever web framework carries them.
//!
//! - **Host** (against DNS rebinding): on a loopback address the `Host` header must name
//!   `localhost`, `127.0.0.1`, `::1` or the bound address. Off loopback a token protects the
//!   server and clients name it however they reach it, so any `Host` passes.
//! - **Origin** (against other sites' pages): a request that carries `Origin` must name the
//!   server's own origin, with its real port. A request without one (not a browser) passes.
//! - **Token**: secrets are compared without telling, by the time taken, how much matched; the
//!   bearer scheme is case-insensitive (RFC 9110 §11.1).

use std::net::SocketAddr;

/// The origins a page served by the server bound to `local` sends: the loopback names and the
/// bound address, each with the real port.
pub fn own_origins(local: SocketAddr) -> Vec<String> {
    let port = local.port();
    let mut out = vec![
        format!("http://127.0.0.1:{port}"),
        format!("http://localhost:{port}"),
        format!("http://[::1]:{port}"),
    ];
    if !local.ip().is_unspecified() {
        let own = format!("http://{local}");
        if !out.contains(&own) {
            out.push(own);
        }
    }
    out
}

/// Whether `host` (the `Host` header) may reach the server bound to `local`.
pub fn host_ok(local: SocketAddr, host: Option<&str>) -> bool {
    if !local.ip().is_loopback() {
        return true;
    }
    let Some(host) = host else { return false };
    let name = match host.rsplit_once(':') {
        Some((n, port)) if port.chars().all(|c| c.is_ascii_digit()) => n,
        _ => host,
    };
    let name = name.trim_start_matches('[').trim_end_matches(']');
    matches!(name, "localhost" | "127.0.0.1" | "::1") || name == local.ip().to_string()
}

/// Whether a request with this `Origin` header (none: not a browser) may use the server.
pub fn origin_ok(local: SocketAddr, origin: Option<&str>) -> bool {
    origin.is_none_or(|o| own_origins(local).iter().any(|own| own == o))
}

/// Why a request with these headers may not reach the server at `local`: the `Host` or the
/// `Origin` check, as a sentence; `None` when both pass.
pub fn refusal(
    local: SocketAddr,
    host: Option<&str>,
    origin: Option<&str>,
) -> Option<&'static str> {
    if !host_ok(local, host) {
        return Some("this server answers to localhost names only (the Host header names another)");
    }
    if !origin_ok(local, origin) {
        return Some("a page of another origin may not use this server");
    }
    None
}

/// Compares two secrets without telling how much matched.
pub fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// Whether an `Authorization` header value carries `token` with the bearer scheme.
pub fn bearer_ok(given: Option<&str>, token: &str) -> bool {
    given
        .and_then(|g| g.split_once(' '))
        .is_some_and(|(scheme, credentials)| {
            scheme.eq_ignore_ascii_case("bearer")
                && same_secret(credentials.trim_matches(' '), token)
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn hosts_origins_and_tokens() {
        let at: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        assert!(host_ok(at, Some("127.0.0.1:8080")));
        assert!(host_ok(at, Some("localhost:8080")));
        assert!(host_ok(at, Some("[::1]:8080")));
        assert!(!host_ok(at, Some("evil.example:8080")));
        assert!(!host_ok(at, None));
        assert!(origin_ok(at, None));
        assert!(origin_ok(at, Some("http://localhost:8080")));
        assert!(!origin_ok(at, Some("http://localhost:8081")));
        assert!(!origin_ok(at, Some("https://evil.example")));
        assert!(refusal(at, Some("rebound.example"), None)
            .unwrap()
            .contains("Host"));
        assert!(refusal(at, Some("localhost"), Some("null"))
            .unwrap()
            .contains("origin"));
        let open: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        assert!(host_ok(open, Some("anything:1")));
        assert!(!own_origins(open).iter().any(|o| o.contains("0.0.0.0")));
        let other: SocketAddr = "127.0.0.2:9".parse().unwrap();
        assert!(host_ok(other, Some("127.0.0.2:9")));
        assert!(own_origins(other).contains(&"http://127.0.0.2:9".to_string()));
        assert!(bearer_ok(Some("bearer t0k"), "t0k"));
        assert!(bearer_ok(Some("BEARER  t0k"), "t0k"));
        assert!(!bearer_ok(Some("Basic t0k"), "t0k"));
        assert!(!bearer_ok(Some("Bearer t0"), "t0k"));
        assert!(!bearer_ok(None, "t0k"));
    }

    #[test]
    fn the_bearer_scheme_is_matched_in_any_case_and_the_token_exactly() {
        for given in ["Bearer t0k", "bearer t0k", "BEARER t0k", "BeArEr  t0k"] {
            assert!(bearer_ok(Some(given), "t0k"), "{given}");
        }
        for given in [
            "Bearer t0K",
            "Bearer t0kk",
            "Basic t0k",
            "Bearert0k",
            "t0k",
            "Bearer ",
        ] {
            assert!(!bearer_ok(Some(given), "t0k"), "{given}");
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
