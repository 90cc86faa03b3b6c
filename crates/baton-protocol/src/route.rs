//! Thinking levels, routes and model classes.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How hard the model should think. Providers map it to their own knobs
/// (OpenAI `reasoning_effort`, Anthropic `thinking.budget_tokens`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingLevel {
    Off,
    Minimal,
    Low,
    Medium,
    High,
    Xhigh,
}

impl ThinkingLevel {
    pub const ALL: [ThinkingLevel; 6] = [
        ThinkingLevel::Off,
        ThinkingLevel::Minimal,
        ThinkingLevel::Low,
        ThinkingLevel::Medium,
        ThinkingLevel::High,
        ThinkingLevel::Xhigh,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ThinkingLevel::Off => "off",
            ThinkingLevel::Minimal => "minimal",
            ThinkingLevel::Low => "low",
            ThinkingLevel::Medium => "medium",
            ThinkingLevel::High => "high",
            ThinkingLevel::Xhigh => "xhigh",
        }
    }

    /// The level as an OpenAI-style reasoning effort word: `none` for off, else its own name.
    pub fn effort(self) -> &'static str {
        match self {
            ThinkingLevel::Off => "none",
            level => level.as_str(),
        }
    }
}

impl fmt::Display for ThinkingLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ThinkingLevel {
    type Err = RouteParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ThinkingLevel::ALL
            .into_iter()
            .find(|l| l.as_str() == s)
            .ok_or_else(|| RouteParseError::Thinking(s.to_string()))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteParseError {
    #[error("route `{0}` must look like `provider/model` or `provider/model:thinking`")]
    Shape(String),
    #[error("unknown thinking level `{0}`: use one of off, minimal, low, medium, high, xhigh")]
    Thinking(String),
    #[error("unknown model class `{0}`: use one of fast, balanced, frontier, fav")]
    Class(String),
}

/// `provider/model[:thinking]`. The provider names a `[providers.NAME]` table in config.
///
/// A suffix after the last `:` is a thinking level only when it names one; otherwise it belongs to
/// the model (Ollama tags such as `qwen2.5-coder:7b`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Route {
    pub provider: String,
    pub model: String,
    pub thinking: Option<ThinkingLevel>,
}

impl FromStr for Route {
    type Err = RouteParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let (provider, rest) = s
            .split_once('/')
            .ok_or_else(|| RouteParseError::Shape(s.to_string()))?;
        if provider.is_empty() || rest.is_empty() {
            return Err(RouteParseError::Shape(s.to_string()));
        }
        let (model, thinking) = match rest.rsplit_once(':') {
            Some((m, t)) if !m.is_empty() => match t.parse::<ThinkingLevel>() {
                Ok(level) => (m, Some(level)),
                Err(_) => (rest, None),
            },
            _ => (rest, None),
        };
        Ok(Route {
            provider: provider.to_string(),
            model: model.to_string(),
            thinking,
        })
    }
}

impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.provider, self.model)?;
        if let Some(t) = self.thinking {
            write!(f, ":{t}")?;
        }
        Ok(())
    }
}

impl Serialize for Route {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Route {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// The four model classes roles and delegations choose from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelClass {
    Fast,
    Balanced,
    Frontier,
    Fav,
}

impl ModelClass {
    pub const ALL: [ModelClass; 4] = [
        ModelClass::Fast,
        ModelClass::Balanced,
        ModelClass::Frontier,
        ModelClass::Fav,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ModelClass::Fast => "fast",
            ModelClass::Balanced => "balanced",
            ModelClass::Frontier => "frontier",
            ModelClass::Fav => "fav",
        }
    }
}

impl fmt::Display for ModelClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ModelClass {
    type Err = RouteParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ModelClass::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| RouteParseError::Class(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_parse_thinking_only_when_it_is_a_level() {
        let r: Route = "anthropic/claude-opus-4:high".parse().unwrap();
        assert_eq!(
            r,
            Route {
                provider: "anthropic".into(),
                model: "claude-opus-4".into(),
                thinking: Some(ThinkingLevel::High)
            }
        );
        let r: Route = "local/qwen2.5-coder:7b".parse().unwrap();
        assert_eq!(r.model, "qwen2.5-coder:7b");
        assert_eq!(r.thinking, None);
        let r: Route = "local/qwen2.5-coder:7b:low".parse().unwrap();
        assert_eq!(r.model, "qwen2.5-coder:7b");
        assert_eq!(r.thinking, Some(ThinkingLevel::Low));
        let r: Route = "openrouter/meta-llama/llama-3:medium".parse().unwrap();
        assert_eq!(r.provider, "openrouter");
        assert_eq!(r.model, "meta-llama/llama-3");
        assert_eq!(r.to_string(), "openrouter/meta-llama/llama-3:medium");
        assert!("nomodel".parse::<Route>().is_err());
        assert!("/m".parse::<Route>().is_err());
        assert!("p/".parse::<Route>().is_err());
    }
}
