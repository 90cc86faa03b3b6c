//! Which of baton's environment variables the commands it runs for a model or a Flow get.

use std::collections::BTreeSet;
use std::ffi::OsString;

/// Variables every command gets (when baton has them): what shells, compilers and package
/// managers need to work, nothing that names a credential.
const ORDINARY: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "COLORTERM",
    "TERMINFO",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TMPDIR",
    "TEMP",
    "TMP",
    "PWD",
    "HOSTNAME",
    "EDITOR",
    "VISUAL",
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR",
    "CI",
    "JAVA_HOME",
    "GOPATH",
    "GOROOT",
    "GOCACHE",
    "GOMODCACHE",
    "GOFLAGS",
    "NODE_PATH",
    "NVM_DIR",
    "PYTHONPATH",
    "PYTHONHOME",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "PYENV_ROOT",
    "CC",
    "CXX",
    "CFLAGS",
    "CXXFLAGS",
    "CPPFLAGS",
    "LDFLAGS",
    "LD_LIBRARY_PATH",
    "PKG_CONFIG_PATH",
    "MAKEFLAGS",
    "RUSTFLAGS",
    "RUSTDOCFLAGS",
    "RUST_BACKTRACE",
    "RUST_LOG",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "MANPATH",
];

/// Prefixes of ordinary variable families (locale, XDG folders, toolchains, git identity, baton).
const ORDINARY_PREFIXES: &[&str] = &["LC_", "XDG_", "CARGO_", "RUSTUP_", "GIT_", "BATON_"];

/// Whether a name looks like it holds a credential (matched on its upper-case form).
fn looks_secret(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    n.ends_with("_KEY")
        || n.ends_with("_KEYS")
        || n.ends_with("_AUTH")
        || n.contains("_AUTH_")
        || [
            "TOKEN",
            "SECRET",
            "PASSWORD",
            "PASSWD",
            "CREDENTIAL",
            "COOKIE",
        ]
        .iter()
        .any(|w| n.contains(w))
}

/// The environment of `bash` commands and validation commands is an **allow-list**: the
/// ordinary variables above, plus the names `sandbox.env_allow` lists. A variable whose name
/// looks like a credential (`*_KEY`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*`, …) or that a
/// configured provider names as its `api_key_env` never passes unless `sandbox.env_allow` names
/// it exactly. Child agents are not filtered here: they get the keys their own routes need.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvFilter {
    hidden: BTreeSet<String>,
    allowed: BTreeSet<String>,
}

impl EnvFilter {
    /// A filter that also hides the variables `hidden` names and lets through those `allowed`
    /// names (an allowed name wins).
    pub fn new(
        hidden: impl IntoIterator<Item = String>,
        allowed: impl IntoIterator<Item = String>,
    ) -> Self {
        EnvFilter {
            hidden: hidden.into_iter().collect(),
            allowed: allowed.into_iter().collect(),
        }
    }

    /// The filter a project's config asks for: its providers' `api_key_env` hidden,
    /// `sandbox.env_allow` let through.
    pub fn for_config(config: &baton_protocol::config::Config) -> Self {
        EnvFilter::new(config.key_variables(), config.sandbox.env_allow.clone())
    }

    /// Whether the variable `name` holds (or may hold) a credential: a provider's key variable or
    /// a name that looks like one. What the redactor hides.
    pub fn is_secret(&self, name: &str) -> bool {
        self.hidden.contains(name) || looks_secret(name)
    }

    /// Whether a command does not get the variable `name`.
    pub fn hides(&self, name: &str) -> bool {
        if self.allowed.contains(name) {
            return false;
        }
        if self.is_secret(name) {
            return true;
        }
        !(ORDINARY.contains(&name) || ORDINARY_PREFIXES.iter().any(|p| name.starts_with(p)))
    }

    /// The names of this process's environment a command must not get; pass each to
    /// `Command::env_remove`.
    pub fn hidden_now(&self) -> Vec<OsString> {
        std::env::vars_os()
            .map(|(name, _)| name)
            .filter(|name| name.to_str().is_none_or(|n| self.hides(n)))
            .collect()
    }

    /// The names of this process's environment that hold credentials ([`EnvFilter::is_secret`]).
    pub fn secret_now(&self) -> Vec<OsString> {
        std::env::vars_os()
            .map(|(name, _)| name)
            .filter(|name| name.to_str().is_some_and(|n| self.is_secret(n)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_ordinary_variables_pass_and_credentials_never_unless_allowed() {
        let f = EnvFilter::new(["MOCK_KEY".to_string()], ["GH_TOKEN".to_string()]);
        for hidden in [
            "OPENAI_API_KEY",
            "HF_TOKEN",
            "MOCK_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "DB_PASSWORD",
            "GIT_ASKPASS_TOKEN",
            "CARGO_REGISTRY_TOKEN",
            "NPM_CONFIG__AUTH",
            "SSH_AUTH_SOCK",
            "SOME_RANDOM_VAR",
        ] {
            assert!(f.hides(hidden), "{hidden}");
        }
        for passes in [
            "GH_TOKEN",
            "PATH",
            "HOME",
            "LC_ALL",
            "CARGO_HOME",
            "GIT_AUTHOR_NAME",
        ] {
            assert!(!f.hides(passes), "{passes}");
        }
        assert!(f.is_secret("AWS_SECRET_ACCESS_KEY"));
        assert!(!f.is_secret("SOME_RANDOM_VAR"));
        assert!(EnvFilter::default().hides("ANTHROPIC_API_KEY"));
    }
}
