//! Who may talk to baton's local HTTP servers (`baton serve`, `baton mcp --http`): the one set of
//! checks both apply to every request, whatever web framework carries them.
//!
//! - **Host** (against DNS rebinding): on a loopback address the `Host` header must name
//!   `localhost`, `127.0.0.1`, `::1` or the bound address. Off loopback a token protects the
//!   server and clients name it however they reach it, so any `Host` passes.
//! - **Origin** (against other sites' pages): a request that carries `Origin` must name the
//!   server's own origin, with its real port. A request without one (not a browser) passes.
//! - **Token**: every request carries one, on loopback too (another user of the machine can
//!   reach a loopback port): `--token`, else the user's own ([`user_token`], a 0600 file in the
//!   user's state folder). Secrets are compared without telling, by the time taken, how much
//!   matched; the bearer scheme is case-insensitive (RFC 9110 §11.1).

use std::net::SocketAddr;
use std::path::PathBuf;

/// The file holding the user's token for the server `name` (`serve`, `mcp`):
/// `$XDG_STATE_HOME/baton/NAME.token`, else `~/.local/state/baton/NAME.token`.
pub fn user_token_file(name: &str) -> Option<PathBuf> {
    let var = |v: &str| {
        std::env::var_os(v)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    let dir = var("XDG_STATE_HOME")
        .map(|s| s.join("baton"))
        .or_else(|| var("HOME").map(|h| h.join(".local/state/baton")))?;
    Some(dir.join(format!("{name}.token")))
}

/// The user's token for the server `name`, made on first use: two random UUIDs as hex in
/// [`user_token_file`], created `0600` (no one else can read it, so no one else can use the
/// server). A file another user owns, or that others may read, is refused with the fix.
pub fn user_token(name: &str) -> anyhow::Result<(String, PathBuf)> {
    let file = user_token_file(name).ok_or_else(|| {
        anyhow::anyhow!("no state folder for the {name} token: set HOME or XDG_STATE_HOME")
    })?;
    let token = token_in(&file)?;
    Ok((token, file))
}

/// The token in `file`, made there first when it does not exist (see [`user_token`]).
fn token_in(file: &std::path::Path) -> anyhow::Result<String> {
    use std::io::Write as _;
    use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _};
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    }
    let made = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(file);
    match made {
        Ok(mut f) => {
            let token = format!(
                "{}{}",
                uuid::Uuid::new_v4().simple(),
                uuid::Uuid::new_v4().simple()
            );
            f.write_all(token.as_bytes())
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", file.display()))?;
            return Ok(token);
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => anyhow::bail!("cannot create {}: {e}", file.display()),
    }
    let meta = file
        .symlink_metadata()
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?;
    // SAFETY: getuid cannot fail.
    let me = unsafe { libc::getuid() };
    if !meta.is_file() || meta.uid() != me || meta.permissions().mode() & 0o077 != 0 {
        anyhow::bail!(
            "{} must be a file of yours that only you may read (mode 0600): remove it and run \
             again to make a new token",
            file.display()
        );
    }
    let token = std::fs::read_to_string(file)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?;
    let token = token.trim().to_string();
    if token.len() < 32 {
        anyhow::bail!(
            "{} holds no token (too short): remove it and run again to make a new one",
            file.display()
        );
    }
    Ok(token)
}

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
    fn the_user_token_is_made_once_private_and_refused_when_others_may_read_it() {
        use std::os::unix::fs::PermissionsExt as _;
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("state/baton/serve.token");
        let first = token_in(&file).unwrap();
        assert_eq!(first.len(), 64);
        assert_eq!(
            std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(token_in(&file).unwrap(), first, "the same token next time");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = token_in(&file).unwrap_err().to_string();
        assert!(err.contains("0600") && err.contains("remove it"), "{err}");
    }

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
