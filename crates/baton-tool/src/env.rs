//! Which of baton's environment variables the commands it runs for a model or a Flow do not get.

use std::collections::BTreeSet;
use std::ffi::OsString;

/// Hides provider credentials from `bash` commands and validation commands: every variable
/// whose name ends in `_API_KEY` or `_TOKEN`, and every variable named as a configured
/// provider's `api_key_env`, unless the user allows the name (`sandbox.env_allow`). Child
/// agents are not filtered here: they get the keys their own routes need.
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

    /// Whether a command does not get the variable `name`.
    pub fn hides(&self, name: &str) -> bool {
        if self.allowed.contains(name) {
            return false;
        }
        self.hidden.contains(name) || name.ends_with("_API_KEY") || name.ends_with("_TOKEN")
    }

    /// The names of this process's environment a command must not get; pass each to
    /// `Command::env_remove`.
    pub fn hidden_now(&self) -> Vec<OsString> {
        std::env::vars_os()
            .map(|(name, _)| name)
            .filter(|name| name.to_str().is_some_and(|n| self.hides(n)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_tokens_are_hidden_unless_allowed() {
        let f = EnvFilter::new(["MOCK_KEY".to_string()], ["GH_TOKEN".to_string()]);
        assert!(f.hides("OPENAI_API_KEY"));
        assert!(f.hides("HF_TOKEN"));
        assert!(f.hides("MOCK_KEY"));
        assert!(!f.hides("GH_TOKEN"));
        assert!(!f.hides("PATH"));
        assert!(!f.hides("TOKENIZER"));
        assert!(EnvFilter::default().hides("ANTHROPIC_API_KEY"));
        assert!(!EnvFilter::default().hides("MOCK_KEY"));
    }
}
