//! What baton knows about models: how each is asked to think, which effort words it takes, its
//! output limit and context window, and which reasoning field a Chat Completions server wants
//! back. One built-in table keyed by provider kind and model-name pattern; `[model_info."..."]`
//! tables in config extend or override it key by key.
//!
//! A model name is matched without a vendor prefix (`openai/gpt-5` on OpenRouter is `gpt-5`),
//! against patterns where `*` matches any run of characters. Config patterns may start with
//! `provider/` to apply to one provider only. Config entries are tried before built-in ones; the
//! first match of each list wins, and a config entry fills only the keys it sets.

use std::collections::BTreeMap;

use baton_protocol::config::{
    ModelInfoConfig, OutputTokensField, ProviderKind, ReasoningReplay, RouteOptions, ThinkingStyle,
};
use baton_protocol::ThinkingLevel;
use serde::Serialize;

/// The resolved facts about one model on one provider.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelInfo {
    /// Where the facts came from: `built-in "claude-opus-4-1*"`, `config "my-model"`, or
    /// `default for kind anthropic` when nothing matched.
    pub source: String,
    /// False when no table entry matched: the defaults are conservative guesses.
    pub known: bool,
    pub thinking: ThinkingStyle,
    /// Effort words the model takes, lowest first (effort and adaptive styles).
    pub efforts: Vec<String>,
    /// The word `:off` becomes, when the model has one.
    pub off_effort: Option<String>,
    pub max_output_tokens: Option<u32>,
    pub context_window: Option<u32>,
    pub reasoning_replay: ReasoningReplay,
    /// The Chat Completions field of the output limit; `None`: chosen by the server's address.
    pub output_tokens_field: Option<OutputTokensField>,
    /// Whether `temperature` / `top_p` may be sent.
    pub sampling: bool,
}

/// What a provider needs to know about the route it serves besides the conversation: the
/// model's facts and the route's `[routes."provider/model"]` options.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    pub info: ModelInfo,
    pub options: RouteOptions,
}

impl Profile {
    /// The profile of `model` with no config: built-in facts, no options.
    pub fn builtin(kind: ProviderKind, model: &str) -> Profile {
        Profile {
            info: model_info(kind, "", model, &BTreeMap::new()),
            options: RouteOptions::default(),
        }
    }

    /// The output limit asked for: the request's, else the route's, at most the model's own
    /// (`None` when neither sets one).
    pub fn output_limit(&self, requested: Option<u32>) -> Option<u32> {
        let asked = requested.or(self.options.max_output_tokens)?;
        Some(self.info.max_output_tokens.map_or(asked, |m| asked.min(m)))
    }
}

/// What a thinking level becomes in a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ThinkingPlan {
    /// No thinking field at all (the model's default).
    Omit,
    /// An effort word (`reasoning_effort`, `reasoning.effort`).
    Effort(String),
    /// Anthropic `budget_tokens` (before clamping to the output limit).
    Budget(u32),
    /// Anthropic adaptive thinking with this `output_config.effort`.
    Adaptive(String),
}

impl std::fmt::Display for ThinkingPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ThinkingPlan::Omit => f.write_str("(not sent)"),
            ThinkingPlan::Effort(e) => write!(f, "effort {e}"),
            ThinkingPlan::Budget(b) => write!(f, "budget {b}"),
            ThinkingPlan::Adaptive(e) => write!(f, "adaptive {e}"),
        }
    }
}

/// The order of effort words, lowest first.
const SCALE: [&str; 7] = ["none", "minimal", "low", "medium", "high", "xhigh", "max"];

fn rank(word: &str) -> usize {
    SCALE.iter().position(|w| *w == word).unwrap_or(3)
}

/// Anthropic thinking budgets per level.
pub fn level_budget(level: ThinkingLevel) -> Option<u32> {
    match level {
        ThinkingLevel::Off => None,
        ThinkingLevel::Minimal => Some(1024),
        ThinkingLevel::Low => Some(2048),
        ThinkingLevel::Medium => Some(8192),
        ThinkingLevel::High => Some(16384),
        ThinkingLevel::Xhigh => Some(32000),
    }
}

impl ModelInfo {
    /// What `level` becomes for this model (`None`: no level set, the model's default).
    pub fn thinking_plan(&self, level: Option<ThinkingLevel>) -> ThinkingPlan {
        let Some(level) = level else {
            return ThinkingPlan::Omit;
        };
        match self.thinking {
            ThinkingStyle::None => ThinkingPlan::Omit,
            ThinkingStyle::Budget => {
                level_budget(level).map_or(ThinkingPlan::Omit, ThinkingPlan::Budget)
            }
            ThinkingStyle::Adaptive => match level {
                ThinkingLevel::Off => ThinkingPlan::Omit,
                _ => self
                    .effort_word(level)
                    .map_or(ThinkingPlan::Omit, ThinkingPlan::Adaptive),
            },
            ThinkingStyle::Effort => match level {
                ThinkingLevel::Off => match &self.off_effort {
                    Some(w) => ThinkingPlan::Effort(w.clone()),
                    None if self.known => self
                        .lowest_effort()
                        .map_or(ThinkingPlan::Omit, ThinkingPlan::Effort),
                    None => ThinkingPlan::Omit,
                },
                _ => self
                    .effort_word(level)
                    .map_or(ThinkingPlan::Omit, ThinkingPlan::Effort),
            },
        }
    }

    fn lowest_effort(&self) -> Option<String> {
        self.efforts
            .iter()
            .filter(|w| w.as_str() != "none")
            .min_by_key(|w| rank(w))
            .cloned()
    }

    /// The accepted word nearest to the level: the same word when accepted; `xhigh` becomes
    /// `max` when only that is above `high`; otherwise the nearest accepted word, lower on a tie.
    fn effort_word(&self, level: ThinkingLevel) -> Option<String> {
        let want = level.effort();
        let accepted: Vec<&String> = self.efforts.iter().filter(|w| *w != "none").collect();
        if accepted.is_empty() {
            return Some(want.to_string());
        }
        if accepted.iter().any(|w| *w == want) {
            return Some(want.to_string());
        }
        if want == "xhigh" && accepted.iter().any(|w| *w == "max") {
            return Some("max".to_string());
        }
        let target = rank(want) as i64;
        accepted
            .iter()
            .filter(|w| w.as_str() != "max")
            .min_by_key(|w| {
                let r = rank(w) as i64;
                ((r - target).abs(), r)
            })
            .or_else(|| accepted.first())
            .map(|w| (*w).clone())
    }

    /// A short line for `baton models`: what each level becomes.
    pub fn levels_summary(&self) -> String {
        use ThinkingLevel::*;
        let plans: Vec<String> = [Off, Minimal, Low, Medium, High, Xhigh]
            .iter()
            .map(|l| {
                let plan = match self.thinking_plan(Some(*l)) {
                    ThinkingPlan::Omit => "-".to_string(),
                    ThinkingPlan::Effort(e) | ThinkingPlan::Adaptive(e) => e,
                    ThinkingPlan::Budget(b) => b.to_string(),
                };
                format!("{l}={plan}")
            })
            .collect();
        plans.join(" ")
    }
}

/// One built-in entry.
struct Entry {
    kinds: &'static [ProviderKind],
    pattern: &'static str,
    thinking: ThinkingStyle,
    efforts: &'static [&'static str],
    off: Option<&'static str>,
    max_output: Option<u32>,
    context: Option<u32>,
    replay: ReasoningReplay,
    sampling: bool,
}

const ANTHROPIC: &[ProviderKind] = &[ProviderKind::Anthropic];
const OPENAI: &[ProviderKind] = &[ProviderKind::OpenAi, ProviderKind::OpenAiResponses];
const CHAT: &[ProviderKind] = &[ProviderKind::OpenAi];

const fn claude(
    pattern: &'static str,
    thinking: ThinkingStyle,
    efforts: &'static [&'static str],
    max_output: u32,
) -> Entry {
    Entry {
        kinds: ANTHROPIC,
        pattern,
        thinking,
        efforts,
        off: None,
        max_output: Some(max_output),
        context: Some(200_000),
        replay: ReasoningReplay::None,
        sampling: true,
    }
}

const fn openai(
    pattern: &'static str,
    efforts: &'static [&'static str],
    off: Option<&'static str>,
    max_output: u32,
    context: u32,
) -> Entry {
    let thinking = if efforts.is_empty() {
        ThinkingStyle::None
    } else {
        ThinkingStyle::Effort
    };
    Entry {
        kinds: OPENAI,
        pattern,
        thinking,
        efforts,
        off,
        max_output: Some(max_output),
        context: Some(context),
        replay: ReasoningReplay::None,
        // Reasoning models refuse temperature and top_p.
        sampling: efforts.is_empty(),
    }
}

const fn chat(
    pattern: &'static str,
    thinking: ThinkingStyle,
    efforts: &'static [&'static str],
    max_output: Option<u32>,
    context: Option<u32>,
    replay: ReasoningReplay,
) -> Entry {
    Entry {
        kinds: CHAT,
        pattern,
        thinking,
        efforts,
        off: None,
        max_output,
        context,
        replay,
        sampling: true,
    }
}

use ThinkingStyle::{Adaptive, Budget, Effort};

/// Effort words of Anthropic's adaptive thinking per generation.
const ADAPTIVE_46: &[&str] = &["low", "medium", "high"];
const ADAPTIVE_46_OPUS: &[&str] = &["low", "medium", "high", "max"];
const ADAPTIVE_47: &[&str] = &["low", "medium", "high", "xhigh", "max"];
const GPT5: &[&str] = &["minimal", "low", "medium", "high"];
const GPT51: &[&str] = &["none", "low", "medium", "high"];
const GPT52: &[&str] = &["none", "low", "medium", "high", "xhigh"];
const LMH: &[&str] = &["low", "medium", "high"];
const LMHX: &[&str] = &["low", "medium", "high", "xhigh"];

/// The built-in table, most specific patterns first within each family.
const BUILT_IN: &[Entry] = &[
    // Anthropic: budgets up to 4.5; adaptive from 4.6 (budgets deprecated there, removed on
    // Opus 4.7 and later). Unknown Claude names are assumed to be newer models.
    claude("claude-3-haiku*", Budget, &[], 4096),
    claude("claude-3-5-haiku*", Budget, &[], 8192),
    claude("claude-3-5-sonnet*", Budget, &[], 8192),
    claude("claude-3-7-sonnet*", Budget, &[], 64_000),
    claude("claude-opus-4", Budget, &[], 32_000),
    claude("claude-opus-4-0*", Budget, &[], 32_000),
    claude("claude-opus-4-2025*", Budget, &[], 32_000),
    claude("claude-opus-4-1*", Budget, &[], 32_000),
    claude("claude-sonnet-4", Budget, &[], 64_000),
    claude("claude-sonnet-4-0*", Budget, &[], 64_000),
    claude("claude-sonnet-4-2025*", Budget, &[], 64_000),
    claude("claude-sonnet-4-5*", Budget, &[], 64_000),
    claude("claude-haiku-4-5*", Budget, &[], 64_000),
    claude("claude-opus-4-5*", Budget, &[], 64_000),
    claude("claude-sonnet-4-6*", Adaptive, ADAPTIVE_46, 64_000),
    claude("claude-opus-4-6*", Adaptive, ADAPTIVE_46_OPUS, 128_000),
    claude("claude-opus-*", Adaptive, ADAPTIVE_47, 128_000),
    claude("claude-sonnet-*", Adaptive, ADAPTIVE_47, 64_000),
    claude("claude-*", Adaptive, ADAPTIVE_46, 32_000),
    // OpenAI.
    openai("gpt-5-pro*", &["high"], None, 128_000, 400_000),
    openai("gpt-5.1-codex-max*", LMHX, None, 128_000, 400_000),
    openai("gpt-5.1-codex*", LMH, None, 128_000, 400_000),
    openai("gpt-5-codex*", LMH, None, 128_000, 400_000),
    openai("gpt-5.1*", GPT51, Some("none"), 128_000, 400_000),
    openai("gpt-5.*", GPT52, Some("none"), 128_000, 400_000),
    openai("gpt-5*", GPT5, Some("minimal"), 128_000, 400_000),
    openai("o1*", LMH, None, 100_000, 200_000),
    openai("o3*", LMH, None, 100_000, 200_000),
    openai("o4*", LMH, None, 100_000, 200_000),
    openai("gpt-4.1*", &[], None, 32_768, 1_047_576),
    openai("gpt-4o*", &[], None, 16_384, 128_000),
    openai("gpt-4*", &[], None, 8_192, 128_000),
    openai("gpt-3.5*", &[], None, 4_096, 16_385),
    // Chat Completions servers and families.
    chat(
        "deepseek-reasoner*",
        ThinkingStyle::None,
        &[],
        Some(64_000),
        Some(128_000),
        ReasoningReplay::ReasoningContent,
    ),
    chat(
        "deepseek-chat*",
        ThinkingStyle::None,
        &[],
        Some(8_192),
        Some(128_000),
        ReasoningReplay::ReasoningContent,
    ),
    chat(
        "deepseek-*",
        ThinkingStyle::None,
        &[],
        None,
        None,
        ReasoningReplay::ReasoningContent,
    ),
    chat(
        "gemini-*",
        Effort,
        LMH,
        Some(65_536),
        Some(1_048_576),
        ReasoningReplay::Auto,
    ),
    chat(
        "gpt-oss*",
        Effort,
        LMH,
        None,
        Some(131_072),
        ReasoningReplay::Auto,
    ),
];

/// Whether `name` matches `pattern` (`*` matches any run of characters, the rest literally).
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let (p, n) = (pattern.as_bytes(), name.as_bytes());
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, ni));
            pi += 1;
        } else if pi < p.len() && p[pi].eq_ignore_ascii_case(&n[ni]) {
            pi += 1;
            ni += 1;
        } else if let Some((sp, sn)) = star {
            pi = sp + 1;
            ni = sn + 1;
            star = Some((sp, sn + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == b'*')
}

/// The model name without a vendor prefix (`openai/gpt-5` → `gpt-5`).
pub(crate) fn bare(model: &str) -> &str {
    model.rsplit('/').next().unwrap_or(model)
}

fn default_for(kind: ProviderKind) -> ModelInfo {
    let (thinking, efforts, max_output) = match kind {
        ProviderKind::Anthropic => (Budget, vec![], Some(8192)),
        ProviderKind::OpenAi | ProviderKind::OpenAiResponses => {
            (Effort, LMH.iter().map(|s| s.to_string()).collect(), None)
        }
        ProviderKind::Replay => (ThinkingStyle::None, vec![], None),
    };
    ModelInfo {
        source: format!("default for kind {}", kind.as_str()),
        known: false,
        thinking,
        efforts,
        off_effort: None,
        max_output_tokens: max_output,
        context_window: None,
        reasoning_replay: ReasoningReplay::Auto,
        output_tokens_field: None,
        sampling: true,
    }
}

fn from_entry(e: &Entry) -> ModelInfo {
    ModelInfo {
        source: format!("built-in \"{}\"", e.pattern),
        known: true,
        thinking: e.thinking,
        efforts: e.efforts.iter().map(|s| s.to_string()).collect(),
        off_effort: e.off.map(str::to_string),
        max_output_tokens: e.max_output,
        context_window: e.context,
        reasoning_replay: e.replay,
        output_tokens_field: None,
        sampling: e.sampling,
    }
}

fn apply(info: &mut ModelInfo, key: &str, c: &ModelInfoConfig) {
    info.source = if info.known {
        format!("config \"{key}\" over {}", info.source)
    } else {
        format!("config \"{key}\"")
    };
    info.known = true;
    if let Some(t) = c.thinking {
        info.thinking = t;
    }
    if let Some(e) = &c.efforts {
        info.efforts.clone_from(e);
    }
    if let Some(o) = &c.off_effort {
        info.off_effort = Some(o.clone());
    }
    if let Some(m) = c.max_output_tokens {
        info.max_output_tokens = Some(m);
    }
    if let Some(w) = c.context_window {
        info.context_window = Some(w);
    }
    if let Some(r) = c.reasoning_replay {
        info.reasoning_replay = r;
    }
    if let Some(f) = c.output_tokens_field {
        info.output_tokens_field = Some(f);
    }
    if let Some(s) = c.sampling {
        info.sampling = s;
    }
}

/// Whether a config key applies to `provider`/`model`: `provider/pattern` keys match that
/// provider and the model name as written; plain patterns match the bare model name.
fn config_key_matches(key: &str, provider: &str, model: &str) -> bool {
    match key.split_once('/') {
        Some((p, pattern)) if p == provider => {
            glob_match(pattern, model) || glob_match(pattern, bare(model))
        }
        Some(_) => glob_match(key, model),
        None => glob_match(key, bare(model)),
    }
}

/// Resolves the facts for `model` served by the provider `provider` of `kind`.
pub fn model_info(
    kind: ProviderKind,
    provider: &str,
    model: &str,
    overrides: &BTreeMap<String, ModelInfoConfig>,
) -> ModelInfo {
    let name = bare(model);
    let mut info = BUILT_IN
        .iter()
        .find(|e| e.kinds.contains(&kind) && glob_match(e.pattern, name))
        .map_or_else(|| default_for(kind), from_entry);
    // The most specific config key wins: one naming the provider, then exact names, then the
    // longest pattern.
    let best = overrides
        .iter()
        .filter(|(k, _)| config_key_matches(k, provider, model))
        .max_by_key(|(k, _)| {
            (
                k.starts_with(&format!("{provider}/")),
                !k.contains('*'),
                k.len(),
            )
        });
    if let Some((key, c)) = best {
        apply(&mut info, key, c);
    }
    info
}

/// Checks `[model_info]` tables: effort words must be known ones.
pub fn check_overrides(overrides: &BTreeMap<String, ModelInfoConfig>) -> Result<(), String> {
    for (key, c) in overrides {
        let words = c.efforts.iter().flatten().chain(c.off_effort.iter());
        for w in words {
            if !SCALE.contains(&w.as_str()) {
                return Err(format!(
                    "model_info.\"{key}\": effort `{w}` is not one of {}",
                    SCALE.join(", ")
                ));
            }
        }
    }
    Ok(())
}

/// Writes a route's sampling options (`temperature`, `top_p`) into a request body: every wire
/// format names them alike.
pub(crate) fn put_sampling(options: &RouteOptions, body: &mut serde_json::Value) {
    if let Some(t) = options.temperature {
        body["temperature"] = serde_json::json!(t);
    }
    if let Some(p) = options.top_p {
        body["top_p"] = serde_json::json!(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ThinkingLevel::*;

    fn info(kind: ProviderKind, model: &str) -> ModelInfo {
        model_info(kind, "p", model, &BTreeMap::new())
    }

    #[test]
    fn globs() {
        assert!(glob_match("claude-opus-4-1*", "claude-opus-4-1-20250805"));
        assert!(glob_match("gpt-5.*", "gpt-5.2"));
        assert!(!glob_match("gpt-5.*", "gpt-5-mini"));
        assert!(glob_match("*", ""));
        assert!(glob_match("a*b*c", "axxbyyc"));
        assert!(!glob_match("a*b*c", "axxbyy"));
        assert!(glob_match("Qwen3*", "qwen3:8b"));
    }

    #[test]
    fn claude_models_get_the_thinking_api_they_take() {
        let opus47 = info(ProviderKind::Anthropic, "claude-opus-4-7");
        assert_eq!(opus47.thinking, Adaptive);
        assert_eq!(
            opus47.thinking_plan(Some(Xhigh)),
            ThinkingPlan::Adaptive("xhigh".into())
        );
        assert_eq!(
            opus47.thinking_plan(Some(Minimal)),
            ThinkingPlan::Adaptive("low".into())
        );
        assert_eq!(opus47.thinking_plan(Some(Off)), ThinkingPlan::Omit);
        let sonnet5 = info(ProviderKind::Anthropic, "claude-sonnet-5");
        assert_eq!(sonnet5.thinking, Adaptive);
        let opus46 = info(ProviderKind::Anthropic, "claude-opus-4-6");
        assert_eq!(
            opus46.thinking_plan(Some(Xhigh)),
            ThinkingPlan::Adaptive("max".into())
        );
        let sonnet46 = info(ProviderKind::Anthropic, "claude-sonnet-4-6");
        assert_eq!(
            sonnet46.thinking_plan(Some(Xhigh)),
            ThinkingPlan::Adaptive("high".into())
        );
        let opus41 = info(ProviderKind::Anthropic, "claude-opus-4-1-20250805");
        assert_eq!(opus41.thinking, Budget);
        assert_eq!(opus41.max_output_tokens, Some(32_000));
        assert_eq!(
            info(ProviderKind::Anthropic, "claude-opus-4-20250514").max_output_tokens,
            Some(32_000)
        );
        assert_eq!(
            info(ProviderKind::Anthropic, "claude-sonnet-4-5").max_output_tokens,
            Some(64_000)
        );
    }

    #[test]
    fn openai_efforts_follow_the_family() {
        let gpt5 = info(ProviderKind::OpenAiResponses, "gpt-5");
        assert_eq!(
            gpt5.thinking_plan(Some(Off)),
            ThinkingPlan::Effort("minimal".into())
        );
        assert_eq!(
            gpt5.thinking_plan(Some(Xhigh)),
            ThinkingPlan::Effort("high".into())
        );
        assert_eq!(gpt5.thinking_plan(None), ThinkingPlan::Omit);
        let gpt51 = info(ProviderKind::OpenAiResponses, "gpt-5.1");
        assert_eq!(
            gpt51.thinking_plan(Some(Off)),
            ThinkingPlan::Effort("none".into())
        );
        assert_eq!(
            gpt51.thinking_plan(Some(Minimal)),
            ThinkingPlan::Effort("low".into())
        );
        assert_eq!(
            gpt51.thinking_plan(Some(Xhigh)),
            ThinkingPlan::Effort("high".into())
        );
        let gpt52 = info(ProviderKind::OpenAiResponses, "gpt-5.2");
        assert_eq!(
            gpt52.thinking_plan(Some(Xhigh)),
            ThinkingPlan::Effort("xhigh".into())
        );
        let o3 = info(ProviderKind::OpenAi, "o3-mini");
        assert_eq!(
            o3.thinking_plan(Some(Minimal)),
            ThinkingPlan::Effort("low".into())
        );
        assert_eq!(
            o3.thinking_plan(Some(Off)),
            ThinkingPlan::Effort("low".into())
        );
        assert_eq!(
            o3.thinking_plan(Some(Xhigh)),
            ThinkingPlan::Effort("high".into())
        );
        assert!(!o3.sampling);
        let gpt41 = info(ProviderKind::OpenAi, "openai/gpt-4.1");
        assert_eq!(gpt41.thinking_plan(Some(High)), ThinkingPlan::Omit);
        assert!(gpt41.sampling);
        // An unknown model keeps the old behaviour: the word as asked, `off` not sent.
        let local = info(ProviderKind::OpenAi, "qwen3:8b");
        assert!(!local.known);
        assert_eq!(local.thinking_plan(Some(Off)), ThinkingPlan::Omit);
        assert_eq!(
            local.thinking_plan(Some(Xhigh)),
            ThinkingPlan::Effort("high".into())
        );
    }

    #[test]
    fn config_entries_override_key_by_key() {
        let overrides = BTreeMap::from([
            (
                "claude-opus-4-8".to_string(),
                ModelInfoConfig {
                    max_output_tokens: Some(200_000),
                    ..Default::default()
                },
            ),
            (
                "local/qwen3*".to_string(),
                ModelInfoConfig {
                    thinking: Some(ThinkingStyle::None),
                    context_window: Some(32_768),
                    ..Default::default()
                },
            ),
        ]);
        let opus = model_info(
            ProviderKind::Anthropic,
            "anthropic",
            "claude-opus-4-8",
            &overrides,
        );
        assert_eq!(opus.thinking, Adaptive);
        assert_eq!(opus.max_output_tokens, Some(200_000));
        assert!(
            opus.source
                .starts_with("config \"claude-opus-4-8\" over built-in"),
            "{}",
            opus.source
        );
        let q = model_info(ProviderKind::OpenAi, "local", "qwen3:8b", &overrides);
        assert_eq!(q.thinking, ThinkingStyle::None);
        assert_eq!(q.context_window, Some(32_768));
        let other = model_info(ProviderKind::OpenAi, "ollama", "qwen3:8b", &overrides);
        assert!(!other.known);
        assert!(check_overrides(&overrides).is_ok());
        let bad = BTreeMap::from([(
            "x".to_string(),
            ModelInfoConfig {
                efforts: Some(vec!["huge".into()]),
                ..Default::default()
            },
        )]);
        assert!(check_overrides(&bad)
            .unwrap_err()
            .contains("model_info.\"x\""));
    }
}
