//! The config file schema (`~/.config/baton/config.toml`, `.baton/config.toml`).
//!
//! Every table rejects unknown keys so a typo is an error that names the key, not a silent default.
//! `docs/config.md` documents each key; keep the two in step.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::route::{ModelClass, Route, ThinkingLevel};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderConfig>,
    #[serde(default)]
    pub models: ModelsConfig,
    /// Price table keyed by `provider/model`, in USD per million tokens.
    #[serde(default)]
    pub prices: BTreeMap<String, Price>,
    #[serde(default)]
    pub agent: AgentConfig,
    #[serde(default)]
    pub retry: RetryConfig,
    #[serde(default)]
    pub executor: ExecutorConfig,
    #[serde(default)]
    pub sandbox: SandboxConfig,
    #[serde(default)]
    pub flow: FlowConfig,
    #[serde(default)]
    pub workflow: WorkflowConfig,
    #[serde(default)]
    pub routing: RoutingConfig,
    #[serde(default)]
    pub skills: SkillsConfig,
    #[serde(default)]
    pub workers: WorkersConfig,
    /// Where workflows run: the local engine (default) or Temporal.
    #[serde(default)]
    pub engine: EngineConfig,
    /// MCP servers whose tools a session may be given (a role's `mcp`, `agent.mcp_servers`).
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
    /// Facts about models, keyed by a model-name pattern (`*` matches any run of characters),
    /// optionally prefixed with `provider/`; they extend or override the built-in table.
    #[serde(default)]
    pub model_info: BTreeMap<String, ModelInfoConfig>,
    /// Per-route request options, keyed by `provider/model` (no thinking suffix).
    #[serde(default)]
    pub routes: BTreeMap<String, RouteOptions>,
}

/// How a model is asked to reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThinkingStyle {
    /// The model does not reason on request: thinking levels send nothing.
    None,
    /// Anthropic `thinking: {type: "enabled", budget_tokens}`.
    Budget,
    /// Anthropic `thinking: {type: "adaptive"}` with `output_config.effort`.
    Adaptive,
    /// An effort word: `reasoning_effort` (Chat Completions) or `reasoning.effort` (Responses).
    Effort,
}

/// Which field of an assistant message carries reasoning back to a Chat Completions server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningReplay {
    /// The field the server streamed it in (`reasoning_content` or `reasoning`).
    Auto,
    /// Never sent back.
    None,
    ReasoningContent,
    Reasoning,
}

/// Which request field carries the output limit to a Chat Completions server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputTokensField {
    MaxTokens,
    MaxCompletionTokens,
}

/// One `[model_info."pattern"]` table. Every key is optional: an unset key keeps the value of
/// the built-in entry the model matches (or the default of its provider kind).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelInfoConfig {
    #[serde(default)]
    pub thinking: Option<ThinkingStyle>,
    /// Effort words the model accepts, for `thinking = "effort"` or `"adaptive"`.
    #[serde(default)]
    pub efforts: Option<Vec<String>>,
    /// The effort word `:off` becomes (`"none"`, `"minimal"`); unset: the lowest accepted effort
    /// for effort models, no thinking field for the others.
    #[serde(default)]
    pub off_effort: Option<String>,
    /// The most output tokens one turn may ask for.
    #[serde(default)]
    pub max_output_tokens: Option<u32>,
    /// The context window in tokens.
    #[serde(default)]
    pub context_window: Option<u32>,
    #[serde(default)]
    pub reasoning_replay: Option<ReasoningReplay>,
    #[serde(default)]
    pub output_tokens_field: Option<OutputTokensField>,
    /// Whether the model takes `temperature` and `top_p` (reasoning models refuse them).
    #[serde(default)]
    pub sampling: Option<bool>,
}

/// One `[routes."provider/model"]` table: sampling options sent with every request of the route.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteOptions {
    #[serde(default)]
    pub temperature: Option<f64>,
    #[serde(default)]
    pub top_p: Option<f64>,
    /// Sent to Chat Completions servers only (the other APIs have no seed).
    #[serde(default)]
    pub seed: Option<i64>,
    /// Output token limit of the route (at most the model's own limit).
    #[serde(default)]
    pub max_output_tokens: Option<u32>,
}

impl RouteOptions {
    pub fn is_empty(&self) -> bool {
        *self == RouteOptions::default()
    }
}

/// What commands baton runs for a model (`bash`) or a Flow (validation) may see.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    /// Variables those commands get although their names look like credentials (`*_API_KEY`,
    /// `*_TOKEN`, a provider's `api_key_env`), e.g. `["GH_TOKEN"]`.
    #[serde(default)]
    pub env_allow: Vec<String>,
    /// How `bash` commands are confined when the role names no `sandbox`. Default
    /// `workspace-write`.
    #[serde(default)]
    pub mode: Option<crate::sandbox::SandboxMode>,
    /// Folders a sandboxed command may write besides the workspace and its temp dir (a build
    /// cache such as `~/.cargo`); `~/` is the home folder.
    #[serde(default)]
    pub writable_roots: Vec<String>,
    /// Whether sandboxed commands may open network sockets. Default `false`.
    #[serde(default)]
    pub network: Option<bool>,
    /// Files and folders sandboxed commands may not read (they read as empty); `~/` is the
    /// home folder. Default: the credentials of common tools, of the peers baton launches and
    /// of package registries (`~/.ssh`, `~/.aws`, `~/.codex/auth.json`, `~/.npmrc`, `~/.gnupg`,
    /// …; the list is in docs/security.md). Provider `api_key_file`s and baton's own config
    /// folder are always hidden.
    #[serde(default)]
    pub deny_read: Option<Vec<String>>,
    /// Unix-domain sockets sandboxed commands may connect to (`~/` is the home folder). Empty
    /// (the default): no command may create a Unix-domain socket at all (`socketpair` still
    /// works), so none can reach a host service through one (a tmux or screen server, D-Bus,
    /// an ssh-agent, Docker). Listing any path lets commands create them, and so connect to any
    /// socket they can see: list only what the project's commands need.
    #[serde(default)]
    pub unix_sockets: Vec<String>,
    /// How many processes one command may have running at once (it and all it starts).
    /// Default 4096.
    #[serde(default)]
    pub max_processes: Option<u64>,
    /// How much memory one command may use (`512M`, `8G`). Default: half of the machine's.
    #[serde(default)]
    pub max_memory: Option<HumanSize>,
}

/// Flow settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowConfig {
    /// Whether validation commands run in the `[sandbox]` (with the unit's worktree as the
    /// workspace). Default `true`: the unit's implementer may have changed what they run.
    #[serde(default)]
    pub validation_sandbox: Option<bool>,
}

/// Workflow (`baton run`) settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkflowConfig {
    /// The model class each workflow role runs on, by role name (`code-reviewer = "frontier"`).
    /// The gating roles refuse anything below `balanced`.
    #[serde(default)]
    pub tiers: BTreeMap<String, ModelClass>,
    /// Stop at a checkpoint before a dispatch that would take the workflow's spend past this
    /// many US dollars. `baton run --budget-usd` overrides it.
    #[serde(default)]
    pub budget_usd: Option<f64>,
    /// The same for tokens (input plus output). `baton run --budget-tokens` overrides it.
    #[serde(default)]
    pub budget_tokens: Option<u64>,
    /// BUILD in a fresh worktree: the command that installs the tree's dependencies before the
    /// baseline test run (`sh -c`, unconfined, provider keys hidden; needs `baton trust` in the
    /// project's own file). Default: detected from the lockfile (`npm ci`, `cargo fetch`, …) and
    /// run in the sandbox with the network on. `"off"`: none.
    #[serde(default)]
    pub install: Option<String>,
    /// BUILD: the project's test command, run once before the first builder (the clean
    /// baseline: which tests already fail) and again after each verifier's pass (only new
    /// failures block). Default: detected (`cargo test`, `npm test`, `go test ./...`, pytest,
    /// `make test`). `"off"`: no baseline.
    #[serde(default)]
    pub test_command: Option<String>,
}

/// `[mcp_servers.NAME]`: an MCP server, started over stdio (`command`) or reached over streamable
/// HTTP (`url`). Trusted code the user chose: baton does not sandbox it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// The program of a stdio server, looked up on `PATH` unless it holds a `/`.
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables set for a stdio server.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Variables of baton's environment a stdio server gets although they hold credentials
    /// (provider keys and the like are removed otherwise).
    #[serde(default)]
    pub env_vars: Vec<String>,
    /// The working directory of a stdio server (default: the session's).
    #[serde(default)]
    pub cwd: Option<String>,
    /// The endpoint of a streamable HTTP server.
    #[serde(default)]
    pub url: Option<String>,
    /// The variable holding the bearer token sent to an HTTP server.
    #[serde(default)]
    pub bearer_token_env: Option<String>,
    /// A server that fails to start is skipped with a warning instead of failing the session.
    #[serde(default)]
    pub optional: bool,
    /// How long starting the server and listing its tools may take (default 30s).
    #[serde(default)]
    pub startup_timeout: Option<HumanDuration>,
    /// How long one tool call may take (default 10m).
    #[serde(default)]
    pub tool_timeout: Option<HumanDuration>,
}

/// Checks one `[mcp_servers.NAME]`: a usable name and exactly one of `command` and `url`.
fn check_mcp_server(name: &str, m: &McpServerConfig) -> Result<(), String> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(format!(
            "[mcp_servers.\"{name}\"]: a server name uses only letters, digits, `-` and `_` (it becomes part of each tool's name, mcp__NAME__TOOL)"
        ));
    }
    match (&m.command, &m.url) {
        (Some(_), Some(_)) => Err(format!(
            "mcp_servers.{name}: give `command` (a stdio server) or `url` (a streamable HTTP server), not both"
        )),
        (None, None) => Err(format!(
            "mcp_servers.{name}: give `command` (and `args`) to start a stdio server, or `url` to reach an HTTP one"
        )),
        (Some(c), None) if c.trim().is_empty() => Err(format!(
            "mcp_servers.{name}.command is empty: name the server's program, e.g. command = \"npx\""
        )),
        (None, Some(u)) if !(u.starts_with("http://") || u.starts_with("https://")) => Err(format!(
            "mcp_servers.{name}.url = \"{u}\": give an http:// or https:// address"
        )),
        (Some(_), None) if m.bearer_token_env.is_some() => Err(format!(
            "mcp_servers.{name}.bearer_token_env applies to a `url` server only: remove it, or pass the token in `env`"
        )),
        (None, Some(_)) if !m.env.is_empty() || !m.env_vars.is_empty() || !m.args.is_empty() || m.cwd.is_some() => Err(format!(
            "mcp_servers.{name}: `args`, `env`, `env_vars` and `cwd` apply to a `command` server only: remove them"
        )),
        _ => Ok(()),
    }
}

/// Managed workers (`baton worker`): long-lived sessions prompted again and again.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkersConfig {
    /// How many workers may run at once (their own cap: they take none of
    /// `executor.max_concurrency`'s slots). Default [`DEFAULT_MAX_WORKERS`].
    #[serde(default)]
    pub max: Option<u32>,
}

crate::closed_set! {
    /// Which engine runs workflows (`engine.kind`, `--engine`).
    #[derive(Default)]
    pub enum EngineKind ("engine") {
        /// This machine: the JSONL record under `.baton/state/` and this process's executor.
        #[default]
        Local = "local",
        /// A Temporal service: workflows run on `baton worker-node` processes on any machine.
        Temporal = "temporal",
    }
}

/// `[engine]`: where workflows run (docs/temporal.md).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineConfig {
    /// `local` (default) or `temporal`; `baton run --engine` overrides it.
    #[serde(default)]
    pub kind: Option<EngineKind>,
    /// The Temporal frontend, `http://HOST:PORT` (`https://` for TLS). Default
    /// `http://127.0.0.1:7233`.
    #[serde(default)]
    pub address: Option<String>,
    /// Default `default`.
    #[serde(default)]
    pub namespace: Option<String>,
    /// The task queue workflows and dispatches go to, and `baton worker-node` polls. Default
    /// `baton`.
    #[serde(default)]
    pub task_queue: Option<String>,
    /// The shared git repository (a URL or a path every worker node reaches) through which the
    /// work travels between machines.
    #[serde(default)]
    pub remote: Option<String>,
    /// The variable holding a Temporal Cloud API key (sent as a bearer token; implies TLS).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// A dispatch whose node sends no heartbeat for this long is given to another node.
    /// Default `"30s"`.
    #[serde(default)]
    pub heartbeat_timeout: Option<HumanDuration>,
    /// How long a workflow waits at a checkpoint for an answer before it stops. Default `"168h"` (a week).
    #[serde(default)]
    pub checkpoint_timeout: Option<HumanDuration>,
    /// Keep each workflow's state in search attributes (`BatonState`, `BatonGate`,
    /// `BatonSteps`, `BatonKind`), so `temporal workflow list --query` and Temporal's UI can
    /// find, say, every workflow waiting at a checkpoint. The namespace must have them
    /// registered (docs/temporal.md says how); `baton run` refuses to start otherwise. Default
    /// `false`.
    #[serde(default)]
    pub search_attributes: Option<bool>,
}

/// The default of `workers.max`.
pub const DEFAULT_MAX_WORKERS: u32 = 4;

/// Where skills are looked up besides the defaults (`.baton/skills/`, `.claude/skills/`,
/// `.agents/skills/`, `~/.config/baton/skills/`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillsConfig {
    /// More folders of skills, looked up after the defaults; relative to the project root, or
    /// `~/…`.
    #[serde(default)]
    pub paths: Vec<String>,
    /// Default folders not to look in, as written above (`.claude/skills`, `~/.config/baton/skills`).
    #[serde(default)]
    pub ignore: Vec<String>,
}

/// Cognitive routing (`baton agent --routing`, `baton chat`): the two participants' routes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoutingConfig {
    /// The Coordinator's route: a model class (`frontier`) or `provider/model[:thinking]`.
    #[serde(default)]
    pub coordinator: Option<String>,
    /// The Executor's route, the same way.
    #[serde(default)]
    pub executor: Option<String>,
    /// Whether the Coordinator sees the evidence the Executor selects (default true).
    #[serde(default)]
    pub projection: Option<bool>,
}

impl Config {
    /// Checks the values the schema alone cannot: every duration is more than 0, every price is
    /// a finite number of dollars of 0 or more, and the workflow budgets are positive. The error
    /// names the key, the value and the fix. `baton` runs it on each config file and on the
    /// merged config, so a bad value is refused before anything runs.
    pub fn check(&self) -> Result<(), String> {
        if let Some(n) = self.sandbox.max_processes.filter(|n| *n < 8) {
            return Err(format!(
                "sandbox.max_processes = {n} leaves a command no room to run (a shell and what it \
                 starts): set 8 or more, or remove it for the default 4096"
            ));
        }
        if let Some(m) = self.sandbox.max_memory.filter(|m| m.0 < 16 << 20) {
            return Err(format!(
                "sandbox.max_memory = \"{m}\" is too little for a shell to start: set \"16M\" or \
                 more, or remove it for the default (half of the machine's memory)"
            ));
        }
        let mut durations: Vec<(String, Option<HumanDuration>, &str)> = vec![
            ("agent.bash_timeout".into(), self.agent.bash_timeout, "2m"),
            (
                "retry.initial_delay".into(),
                self.retry.initial_delay,
                "500ms",
            ),
            ("retry.max_delay".into(), self.retry.max_delay, "30s"),
            (
                "executor.idle_timeout".into(),
                self.executor.idle_timeout,
                "10m",
            ),
            (
                "executor.max_timeout".into(),
                self.executor.max_timeout,
                "30m",
            ),
            (
                "engine.heartbeat_timeout".into(),
                self.engine.heartbeat_timeout,
                "30s",
            ),
            (
                "engine.checkpoint_timeout".into(),
                self.engine.checkpoint_timeout,
                "168h",
            ),
        ];
        for (name, p) in &self.providers {
            durations.push((
                format!("providers.{name}.stream_idle_timeout"),
                p.stream_idle_timeout,
                "5m",
            ));
        }
        for (name, m) in &self.mcp_servers {
            durations.push((
                format!("mcp_servers.{name}.startup_timeout"),
                m.startup_timeout,
                "30s",
            ));
            durations.push((
                format!("mcp_servers.{name}.tool_timeout"),
                m.tool_timeout,
                "10m",
            ));
            check_mcp_server(name, m)?;
        }
        for name in &self.agent.mcp_servers {
            if !self.mcp_servers.contains_key(name) {
                return Err(format!(
                    "agent.mcp_servers names `{name}`, which has no [mcp_servers.{name}] table: add one (command or url), or remove the name"
                ));
            }
        }
        for (key, value, default) in durations {
            if value.is_some_and(|d| d.0.is_zero()) {
                return Err(format!(
                    "{key} = \"{}\": a duration must be more than 0 (0 would time out at once): give a positive one such as \"{default}\" (the default), or leave the key out",
                    value.map(|d| d.to_string()).unwrap_or_default()
                ));
            }
        }
        for (route, price) in &self.prices {
            let fields = [
                ("input", Some(price.input)),
                ("output", Some(price.output)),
                ("cached_input", price.cached_input),
                ("cache_write", price.cache_write),
            ];
            for (field, value) in fields {
                let Some(v) = value else { continue };
                if !(v.is_finite() && v >= 0.0) {
                    return Err(format!(
                        "prices.\"{route}\".{field} = {v}: a price must be a finite number of US dollars per million tokens, 0 or more: fix it (e.g. {field} = 0.4), or remove the [prices.\"{route}\"] table to leave the route unpriced"
                    ));
                }
            }
        }
        if let Some(b) = self.workflow.budget_usd {
            if !(b.is_finite() && b > 0.0) {
                return Err(format!(
                    "workflow.budget_usd = {b}: give a positive, finite amount of US dollars (e.g. budget_usd = 2.5), or leave the key out for no budget"
                ));
            }
        }
        if self.workflow.budget_tokens == Some(0) {
            return Err("workflow.budget_tokens = 0: give a positive number of tokens (e.g. budget_tokens = 200000), or leave the key out for no budget".into());
        }
        Ok(())
    }

    /// The names of the variables that hold provider keys: every `api_key_env` configured.
    pub fn key_variables(&self) -> Vec<String> {
        self.providers
            .values()
            .filter_map(|p| p.api_key_env.clone())
            .collect()
    }
}

crate::closed_set! {
    /// The wire format a provider speaks (`kind`).
    pub enum ProviderKind ("provider kind") {
        /// OpenAI-compatible Chat Completions (`POST {base_url}/chat/completions`): OpenAI, Ollama, llama.cpp, vLLM, OpenRouter.
        OpenAi = "openai",
        /// OpenAI Responses API (`POST {base_url}/responses`).
        OpenAiResponses = "openai-responses",
        /// Anthropic Messages (`POST {base_url}/v1/messages`).
        Anthropic = "anthropic",
        /// Plays a cassette file; no network.
        Replay = "replay",
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    /// Defaults: openai/openai-responses `https://api.openai.com/v1`, anthropic `https://api.anthropic.com`.
    #[serde(default)]
    pub base_url: Option<String>,
    /// Environment variable holding the API key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// File holding the API key (first line); `~/` is expanded.
    #[serde(default)]
    pub api_key_file: Option<String>,
    /// Whether the server runs on this machine, so that the models the price table does not
    /// know cost nothing unless `[prices]` names them. Default: its `base_url` is loopback.
    #[serde(default)]
    pub local: Option<bool>,
    /// Extra HTTP headers sent with every request.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Cassette file for `kind = "replay"`.
    #[serde(default)]
    pub cassette: Option<String>,
    /// Output token limit per turn (at most the model's own limit). Anthropic requires a limit:
    /// unset, the model's output limit from the model table is sent there; unset elsewhere.
    #[serde(default)]
    pub max_output_tokens: Option<u32>,
    /// Time allowed between two chunks of a stream before it counts as dropped. Default `"5m"`.
    #[serde(default)]
    pub stream_idle_timeout: Option<HumanDuration>,
}

/// A class maps to one route, or to a list tried in order before launch.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum RouteList {
    One(Route),
    Many(Vec<Route>),
}

impl<'de> Deserialize<'de> for RouteList {
    /// A route string or a list of them; a bad one is named with why it is not a route (an
    /// untagged enum would only say that nothing matched).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            One(String),
            Many(Vec<String>),
        }
        let raw = Raw::deserialize(d).map_err(|_| {
            D::Error::custom("expected a route \"provider/model[:thinking]\" or a list of routes")
        })?;
        let parse = |s: &str| {
            s.parse::<Route>().map_err(|e| {
                D::Error::custom(format!(
                    "`{s}` is not a route: {e}; write \"provider/model[:thinking]\" or a list of them"
                ))
            })
        };
        match raw {
            Raw::One(s) => parse(&s).map(RouteList::One),
            Raw::Many(list) => list
                .iter()
                .map(|s| parse(s))
                .collect::<Result<Vec<_>, _>>()
                .map(RouteList::Many),
        }
    }
}

impl RouteList {
    pub fn routes(&self) -> Vec<&Route> {
        match self {
            RouteList::One(r) => vec![r],
            RouteList::Many(v) => v.iter().collect(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelsConfig {
    #[serde(default)]
    pub fast: Option<RouteList>,
    #[serde(default)]
    pub balanced: Option<RouteList>,
    #[serde(default)]
    pub frontier: Option<RouteList>,
    #[serde(default)]
    pub fav: Option<RouteList>,
    /// The class used when neither a flag nor the role picks one. Default `balanced`.
    #[serde(default)]
    pub default_class: Option<ModelClass>,
}

impl ModelsConfig {
    pub fn class(&self, class: ModelClass) -> Option<&RouteList> {
        match class {
            ModelClass::Fast => self.fast.as_ref(),
            ModelClass::Balanced => self.balanced.as_ref(),
            ModelClass::Frontier => self.frontier.as_ref(),
            ModelClass::Fav => self.fav.as_ref(),
        }
    }
}

/// USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    /// Defaults to `input` when absent.
    #[serde(default)]
    pub cached_input: Option<f64>,
    /// Price of tokens written to the prompt cache (reported by Anthropic only). Defaults to
    /// 1.25 × `input`, Anthropic's price for five-minute cache writes.
    #[serde(default)]
    pub cache_write: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// Model turns per session, the last one reserved for the handoff report. Default 50.
    #[serde(default)]
    pub max_turns: Option<u32>,
    /// Default thinking level when the route names none.
    #[serde(default)]
    pub thinking: Option<ThinkingLevel>,
    /// Timeout of one `bash` tool call. Default `"2m"`.
    #[serde(default)]
    pub bash_timeout: Option<HumanDuration>,
    /// Project files added to the system prompt when present. Default `["AGENTS.md", "CLAUDE.md"]`.
    #[serde(default)]
    pub context_files: Option<Vec<String>>,
    /// The model class whose route writes the summary when a session compacts; unset: the
    /// session's own route.
    #[serde(default)]
    pub compaction_class: Option<crate::ModelClass>,
    /// The MCP servers (`[mcp_servers.NAME]`) every main session gets, besides its role's `mcp`.
    #[serde(default)]
    pub mcp_servers: Vec<String>,
    /// When a main session asks its front end before a tool call runs: `never` (default),
    /// `on-write` or `always` (`--approval` overrides it).
    #[serde(default)]
    pub approval: Option<crate::ApprovalPolicy>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetryConfig {
    /// Attempts per model turn, the first included. Default 5.
    #[serde(default)]
    pub max_attempts: Option<u32>,
    /// First backoff delay. Default `"500ms"`.
    #[serde(default)]
    pub initial_delay: Option<HumanDuration>,
    /// Backoff ceiling (also caps `retry-after`). Default `"30s"`.
    #[serde(default)]
    pub max_delay: Option<HumanDuration>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecutorConfig {
    #[serde(default)]
    pub max_concurrency: Option<u32>,
    #[serde(default)]
    pub idle_timeout: Option<HumanDuration>,
    #[serde(default)]
    pub max_timeout: Option<HumanDuration>,
    #[serde(default)]
    pub output_cap_bytes: Option<u64>,
    /// Backend for roles that name none. Default `baton`.
    #[serde(default)]
    pub backend: Option<crate::role::BackendKind>,
    /// Programs of the agent backends, when not on `PATH` under their usual names.
    #[serde(default)]
    pub programs: BTreeMap<String, String>,
    /// Where child worktrees go. Default `$XDG_STATE_HOME/baton/worktrees` (`~/.local/state/baton/worktrees`).
    #[serde(default)]
    pub worktree_root: Option<String>,
}

/// A size in bytes written as a whole number with an optional unit: `K`, `M`, `G`, `T` (powers
/// of 1024; `KiB`, `MiB`, `GiB`, `TiB` too), e.g. `512M` or `8G`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HumanSize(pub u64);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("size `{0}` must be a whole number, optionally followed by K, M, G or T, for example \"512M\" or \"8G\"")]
pub struct SizeParseError(pub String);

impl FromStr for HumanSize {
    type Err = SizeParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let bad = || SizeParseError(s.to_string());
        let n: u64 = num.parse().map_err(|_| bad())?;
        let shift = match unit.trim() {
            "" | "B" => 0,
            "K" | "KiB" | "k" => 10,
            "M" | "MiB" => 20,
            "G" | "GiB" => 30,
            "T" | "TiB" => 40,
            _ => return Err(bad()),
        };
        n.checked_mul(1u64 << shift).map(HumanSize).ok_or_else(bad)
    }
}

impl fmt::Display for HumanSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (unit, shift) in [("T", 40), ("G", 30), ("M", 20), ("K", 10)] {
            if self.0 > 0 && self.0.is_multiple_of(1u64 << shift) {
                return write!(f, "{}{unit}", self.0 >> shift);
            }
        }
        write!(f, "{}", self.0)
    }
}

impl Serialize for HumanSize {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for HumanSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Bytes(u64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Bytes(n) => Ok(HumanSize(n)),
            Raw::Text(s) => s.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// A duration written as `500ms`, `30s`, `10m` or `2h`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HumanDuration(pub Duration);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("duration `{0}` must be a whole number followed by ms, s, m or h, for example \"30s\" or \"10m\"")]
pub struct DurationParseError(pub String);

impl FromStr for HumanDuration {
    type Err = DurationParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let bad = || DurationParseError(s.to_string());
        let n: u64 = num.parse().map_err(|_| bad())?;
        let d = match unit {
            "ms" => Duration::from_millis(n),
            "s" => Duration::from_secs(n),
            "m" => Duration::from_secs(n.checked_mul(60).ok_or_else(bad)?),
            "h" => Duration::from_secs(n.checked_mul(3600).ok_or_else(bad)?),
            _ => return Err(bad()),
        };
        Ok(HumanDuration(d))
    }
}

impl fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0.as_millis();
        if ms > 0 && ms.is_multiple_of(3_600_000) {
            write!(f, "{}h", ms / 3_600_000)
        } else if ms > 0 && ms.is_multiple_of(60_000) {
            write!(f, "{}m", ms / 60_000)
        } else if ms.is_multiple_of(1000) {
            write!(f, "{}s", ms / 1000)
        } else {
            write!(f, "{ms}ms")
        }
    }
}

impl Serialize for HumanDuration {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_units_and_refuse_anything_else() {
        assert_eq!("512M".parse::<HumanSize>().unwrap(), HumanSize(512 << 20));
        assert_eq!("8GiB".parse::<HumanSize>().unwrap(), HumanSize(8 << 30));
        assert_eq!("4096".parse::<HumanSize>().unwrap(), HumanSize(4096));
        assert_eq!(HumanSize(8 << 30).to_string(), "8G");
        let err = "8 gigs".parse::<HumanSize>().unwrap_err().to_string();
        assert!(err.contains("K, M, G or T"), "{err}");
        assert!("99999999999T".parse::<HumanSize>().is_err());
    }

    #[test]
    fn a_bad_route_in_a_class_says_why() {
        let err = serde_json::from_str::<ModelsConfig>(r#"{"fast": "nope"}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("`nope` is not a route"), "{err}");
        let err = serde_json::from_str::<ModelsConfig>(r#"{"fast": ["a/b", "c"]}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("`c` is not a route"), "{err}");
        let err = serde_json::from_str::<ModelsConfig>(r#"{"fast": 3}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("a list of routes"), "{err}");
        let ok: ModelsConfig = serde_json::from_str(r#"{"fast": ["a/b:low", "c/d"]}"#).unwrap();
        assert_eq!(ok.fast.unwrap().routes().len(), 2);
    }

    #[test]
    fn durations_round_trip() {
        for (text, d) in [
            ("500ms", Duration::from_millis(500)),
            ("30s", Duration::from_secs(30)),
            ("10m", Duration::from_secs(600)),
            ("2h", Duration::from_secs(7200)),
        ] {
            let h: HumanDuration = text.parse().unwrap();
            assert_eq!(h.0, d);
            assert_eq!(h.to_string(), text);
        }
        assert!("10".parse::<HumanDuration>().is_err());
        assert!("m".parse::<HumanDuration>().is_err());
        assert!("1.5s".parse::<HumanDuration>().is_err());
        // Too large to hold: refused, not wrapped around.
        assert!("18446744073709551615h".parse::<HumanDuration>().is_err());
    }

    fn config(toml_like: serde_json::Value) -> Config {
        serde_json::from_value(toml_like).unwrap()
    }

    #[test]
    fn zero_durations_are_refused_naming_the_key() {
        for (value, key) in [
            (
                serde_json::json!({"agent": {"bash_timeout": "0s"}}),
                "agent.bash_timeout",
            ),
            (
                serde_json::json!({"retry": {"initial_delay": "0ms"}}),
                "retry.initial_delay",
            ),
            (
                serde_json::json!({"retry": {"max_delay": "0h"}}),
                "retry.max_delay",
            ),
            (
                serde_json::json!({"executor": {"idle_timeout": "0m"}}),
                "executor.idle_timeout",
            ),
            (
                serde_json::json!({"executor": {"max_timeout": "0s"}}),
                "executor.max_timeout",
            ),
            (
                serde_json::json!({"providers": {"p": {"kind": "openai", "stream_idle_timeout": "0s"}}}),
                "providers.p.stream_idle_timeout",
            ),
        ] {
            let err = config(value).check().unwrap_err();
            assert!(err.starts_with(key), "{err}");
            assert!(err.contains("more than 0"), "{err}");
        }
        let ok = config(serde_json::json!({"agent": {"bash_timeout": "1ms"}}));
        assert_eq!(ok.check(), Ok(()));
    }

    #[test]
    fn prices_must_be_finite_and_not_negative_and_budgets_positive() {
        let priced = |field: &str, v: f64| {
            let mut c = Config::default();
            let mut p = Price {
                input: 1.0,
                output: 1.0,
                cached_input: None,
                cache_write: None,
            };
            match field {
                "input" => p.input = v,
                "output" => p.output = v,
                "cached_input" => p.cached_input = Some(v),
                _ => p.cache_write = Some(v),
            }
            c.prices.insert("mock/m".into(), p);
            c.check()
        };
        for field in ["input", "output", "cached_input", "cache_write"] {
            for v in [f64::NAN, f64::INFINITY, -0.5] {
                let err = priced(field, v).unwrap_err();
                assert!(
                    err.starts_with(&format!("prices.\"mock/m\".{field} = ")),
                    "{err}"
                );
            }
            assert_eq!(priced(field, 0.0), Ok(()));
        }
        for b in [f64::NAN, -1.0, 0.0, f64::INFINITY] {
            let mut c = Config::default();
            c.workflow.budget_usd = Some(b);
            let err = c.check().unwrap_err();
            assert!(err.starts_with("workflow.budget_usd"), "{err}");
        }
        let mut c = Config::default();
        c.workflow.budget_tokens = Some(0);
        assert!(c.check().unwrap_err().starts_with("workflow.budget_tokens"));
        c.workflow.budget_tokens = Some(1);
        c.workflow.budget_usd = Some(0.01);
        assert_eq!(c.check(), Ok(()));
    }
}
