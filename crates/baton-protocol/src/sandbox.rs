//! Sandbox modes: what a command baton runs for a model may write and reach.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How far a model-chosen command (`bash`) is confined. Set by a role's `sandbox` field, the
/// config's `sandbox.mode` or `baton agent --sandbox`; see `docs/config.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Reads anywhere; writes nothing but the session's temp dir and `/dev/null`.
    ReadOnly,
    /// Reads anywhere; writes under the workspace root, the session's temp dir, `/dev/null`
    /// and `sandbox.writable_roots`.
    #[default]
    WorkspaceWrite,
    /// No confinement: the command runs with the user's full rights.
    DangerFullAccess,
}

impl SandboxMode {
    /// Every mode, in order of increasing rights.
    pub const ALL: [SandboxMode; 3] = [
        SandboxMode::ReadOnly,
        SandboxMode::WorkspaceWrite,
        SandboxMode::DangerFullAccess,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::DangerFullAccess => "danger-full-access",
        }
    }
}

impl fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SandboxMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SandboxMode::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "`{s}` is not a sandbox mode; use one of {}",
                    SandboxMode::ALL.map(|m| m.as_str()).join(", ")
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_round_trip_through_text_and_serde() {
        for mode in SandboxMode::ALL {
            assert_eq!(mode.as_str().parse::<SandboxMode>(), Ok(mode));
            let json = serde_json::to_string(&mode).unwrap();
            assert_eq!(json, format!("\"{mode}\""));
        }
        assert!("full"
            .parse::<SandboxMode>()
            .unwrap_err()
            .contains("read-only"));
    }
}
