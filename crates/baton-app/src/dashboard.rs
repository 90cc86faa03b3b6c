//! Where the project's dashboard (`baton serve`) listens, while it runs: `baton serve` records its
//! address and its process in `.baton/state/serve.json` once it listens and removes the record
//! when it stops; `baton mcp`'s `baton://dashboard` reads it, so a host session can give the user
//! the dashboard's address.
//!
//! The address handed out carries the user's own token (as `baton serve` prints it) only when
//! the record's process is alive, runs this very `baton` program and listens on loopback: a record
//! written by anything else is not a way to send the token elsewhere.

use std::path::PathBuf;

use baton_process::Identity;
use baton_state::StateDir;
use serde::{Deserialize, Serialize};

/// What `baton serve` records while it listens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    /// The page's address, without a token: `http://127.0.0.1:4680/`.
    pub url: String,
    /// The `baton serve` process.
    pub process: Identity,
    /// The server takes the user's own token (`$XDG_STATE_HOME/baton/serve.token`), not one given
    /// with `--token`.
    pub own_token: bool,
}

/// The record's file.
pub fn path(state: &StateDir) -> PathBuf {
    state.root().join("serve.json")
}

/// Records that this process serves the project's dashboard at `url`.
pub fn record(state: &StateDir, url: &str, own_token: bool) -> anyhow::Result<()> {
    let record = Record {
        url: url.to_string(),
        process: Identity::of(std::process::id())?,
        own_token,
    };
    baton_state::write_snapshot(&path(state), &record)?;
    Ok(())
}

/// Removes this process's record (another server's is left alone).
pub fn forget(state: &StateDir) {
    let file = path(state);
    let mine = std::fs::read(&file)
        .ok()
        .and_then(|b| serde_json::from_slice::<Record>(&b).ok())
        .is_some_and(|r| r.process.pid == std::process::id());
    if mine {
        let _ = std::fs::remove_file(file);
    }
}

/// Where the project's dashboard is now: `Ok(None)` when no `baton serve` runs for it (no record,
/// or its process ended); the address with the user's token when the server takes it; an error
/// when the record does not read (it names the file).
pub fn find(state: &StateDir) -> Result<Option<String>, String> {
    let file = path(state);
    let bytes = match std::fs::read(&file) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", file.display())),
    };
    let record: Record = serde_json::from_slice(&bytes).map_err(|e| {
        format!(
            "{}: not a dashboard record ({e}); remove it, and `baton serve` writes a new one",
            file.display()
        )
    })?;
    if !record.process.is_alive() {
        return Ok(None);
    }
    let ours = baton_process::own_program()
        .ok()
        .and_then(|e| e.canonicalize().ok());
    let theirs = std::fs::read_link(format!("/proc/{}/exe", record.process.pid)).ok();
    let loopback =
        record.url.starts_with("http://127.0.0.1:") || record.url.starts_with("http://[::1]:");
    if ours.is_none() || ours != theirs || !loopback {
        return Err(format!(
            "{}: names process {} at {}, which is not this baton's `baton serve` on loopback; remove the file",
            file.display(),
            record.process.pid,
            record.url
        ));
    }
    if !record.own_token {
        return Ok(Some(record.url));
    }
    let (token, _) = crate::local_http::user_token("serve").map_err(|e| format!("{e:#}"))?;
    Ok(Some(format!("{}?token={token}", record.url)))
}
