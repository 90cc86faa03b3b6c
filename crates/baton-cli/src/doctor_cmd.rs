//! `baton doctor`: is each configured provider usable now, and can `bash` be sandboxed here?
//!
//! For every provider the config defines or a model class names: the provider resolves, its key
//! is set (`api_key_env` / `api_key_file`), and one cheap real request (the model list) succeeds.
//! Keys are never printed: only where each comes from. Every route of every class is looked up
//! in the model table: what its thinking level becomes, its limits, and whether its
//! `[routes."provider/model"]` options suit the model.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use crate::documents::{
    to_value, DoctorDocument, DoctorEngine, DoctorMcpServer, DoctorProvider, DoctorRoute,
    DoctorSandbox, DoctorShadowed, RouteSends,
};
use anyhow::Result;
use baton_agent::tools::{SandboxMode, SandboxPolicy, SandboxSupport};
use baton_app::exit::Exit;
use baton_app::project::project_context;
use baton_model::probe::list_models;
use baton_model::routes::{
    api_root, check_route, provider_config, route_profile, ProcessEnv, RouteError,
};
use baton_model::ModelError;
use baton_protocol::config::{Config, ProviderConfig, ProviderKind};
use baton_protocol::{ModelClass, Route};
use clap::Args;

/// How long one provider may take to answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Args, Debug)]
pub struct DoctorArgs {
    /// Directory inside the project (default: the current one).
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// Print one JSON document instead of text.
    #[arg(long)]
    json: bool,
}

/// The verdict on one provider.
struct Check {
    name: String,
    kind: Option<ProviderKind>,
    url: String,
    /// Where the key comes from (never the key).
    key: String,
    /// `ok`, `not_configured`, `config_error`, `key_missing`, `http_error`, `unreachable`,
    /// `bad_answer`.
    verdict: &'static str,
    status: Option<u16>,
    message: String,
    /// Something that works but not as a session needs it (a llama.cpp server without tools).
    warning: Option<String>,
}

/// Every provider the config defines, and every provider a class route names.
fn provider_names(config: &Config) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = config.providers.keys().cloned().collect();
    for class in ModelClass::ALL {
        if let Some(list) = config.models.class(class) {
            names.extend(list.routes().iter().map(|r| r.provider.clone()));
        }
    }
    names
}

fn key_source(name: &str, p: &ProviderConfig) -> String {
    match (&p.api_key_file, &p.api_key_env, p.kind) {
        (Some(file), _, _) => format!("key file {file} (providers.{name}.api_key_file)"),
        (None, Some(var), _) => format!("${var} (providers.{name}.api_key_env)"),
        (None, None, ProviderKind::Anthropic) => "$ANTHROPIC_API_KEY".into(),
        (None, None, ProviderKind::OpenAi | ProviderKind::OpenAiResponses) => {
            "no key configured".into()
        }
        (None, None, ProviderKind::Replay) => "no key needed (replay)".into(),
    }
}

async fn check(config: &Config, name: &str) -> Check {
    let Some(p) = provider_config(config, name) else {
        return Check {
            name: name.into(),
            kind: None,
            url: String::new(),
            key: String::new(),
            verdict: "not_configured",
            status: None,
            message: format!("a model class names it but there is no [providers.{name}] table (kind, base_url, api_key_env)"),
            warning: None,
        };
    };
    let mut c = Check {
        name: name.into(),
        kind: Some(p.kind),
        url: api_root(&p),
        key: key_source(name, &p),
        verdict: "ok",
        status: None,
        message: String::new(),
        warning: None,
    };
    let route = Route {
        provider: name.into(),
        model: "doctor".into(),
        thinking: None,
    };
    let resolved = match check_route(config, &route, &ProcessEnv) {
        Ok(r) => r,
        Err(e) => {
            (c.verdict, c.message) = match e {
                RouteError::MissingKey { provider, var, .. } => (
                    "key_missing",
                    format!("set the environment variable {var} (named by providers.{provider}.api_key_env)"),
                ),
                RouteError::KeyFile { path, message, .. } => (
                    "config_error",
                    format!("cannot read the key file {path} (providers.{name}.api_key_file): {message}"),
                ),
                e @ (RouteError::UnknownProvider { .. }
                | RouteError::Cassette { .. }
                | RouteError::BadUrl { .. }
                | RouteError::Options { .. }
                | RouteError::ModelInfo(_)
                | RouteError::UnsetClass { .. }
                | RouteError::NoUsableRoute { .. }) => ("config_error", e.to_string()),
            };
            return c;
        }
    };
    match list_models(name, &p, resolved.api_key.as_deref(), PROBE_TIMEOUT).await {
        Ok(None) => c.message = "replay cassette found; nothing to ask over the network".into(),
        Ok(Some(list)) => {
            c.message = match list.models {
                Some(n) => format!("GET {} listed {n} model(s)", list.url),
                None => format!("GET {} answered", list.url),
            };
            // A local llama.cpp server says whether its chat template takes tools.
            if baton_model::prices::is_loopback(&c.url)
                && baton_model::probe::llama_tool_support(&p, PROBE_TIMEOUT).await == Some(false)
            {
                c.warning = Some(
                    "this llama.cpp server's chat template does not take tools (/props: chat_template_caps.supports_tools = false), so the tools baton offers never reach the model: start llama-server with --jinja and a model whose template supports tool calls".into(),
                );
            }
        }
        Err(ModelError::Http {
            status, message, ..
        }) => {
            c.verdict = "http_error";
            c.status = Some(status);
            c.message = message;
        }
        Err(e @ ModelError::Connect { .. }) => {
            c.verdict = "unreachable";
            c.message = e.to_string();
            if baton_model::prices::is_loopback(&c.url) {
                c.message.push_str(
                    " — is it running? Start the local server first: `ollama serve` (Ollama), or `llama-server -m MODEL.gguf --jinja --port PORT` (llama.cpp: `--jinja` turns tool calling on)",
                );
            }
        }
        Err(
            e @ (ModelError::StreamCut { .. }
            | ModelError::Stream { .. }
            | ModelError::Protocol { .. }
            | ModelError::Config(_)
            | ModelError::Cancelled),
        ) => {
            c.verdict = "bad_answer";
            c.message = e.to_string();
        }
    }
    c
}

fn verdict_text(c: &Check) -> String {
    match (c.verdict, c.status) {
        ("ok", _) => "ok".into(),
        ("key_missing", _) => "key missing".into(),
        ("http_error", Some(s)) => format!("HTTP {s}"),
        ("unreachable", _) => "unreachable".into(),
        ("not_configured", _) => "not configured".into(),
        (other, _) => other.replace('_', " "),
    }
}

/// The sandbox on this machine: (ok, Landlock ABI, default mode, text).
fn sandbox_check(config: &Config) -> (bool, i32, SandboxMode, String) {
    let support = SandboxSupport::detect();
    let abi = support.landlock_abi;
    let mode = SandboxPolicy::choose_mode(None, None, config.sandbox.mode);
    let network = if config.sandbox.network.unwrap_or(false) {
        "on"
    } else {
        "off"
    };
    match (abi, mode) {
        (_, SandboxMode::DangerFullAccess) => (
            true,
            abi,
            mode,
            "sandbox.mode is danger-full-access: bash commands run unconfined, with all your rights".into(),
        ),
        (0, SandboxMode::ReadOnly | SandboxMode::WorkspaceWrite) => (
            false,
            abi,
            mode,
            format!("no Landlock on this system: every bash call in {mode} mode fails closed; set sandbox.mode = \"danger-full-access\" to run commands unconfined"),
        ),
        (_, SandboxMode::ReadOnly | SandboxMode::WorkspaceWrite) => match &support.namespace {
            Err(why) => (
                false,
                abi,
                mode,
                format!("no mount namespace ({why}): every bash call in {mode} mode fails closed; run baton as root, enable unprivileged user namespaces, or set sandbox.mode = \"danger-full-access\" to run commands unconfined"),
            ),
            Ok(ns) => {
                let memory = config
                    .sandbox
                    .max_memory
                    .map_or_else(baton_sandbox::limits::default_max_memory, |m| m.0);
                let memory = memory as f64 / f64::from(1u32 << 30);
                (
                true,
                abi,
                mode,
                format!(
                    "Landlock ABI {abi} and a {} mount namespace: bash commands run confined ({mode} by default, network {network}, no Unix sockets{}, .git control files and .baton/ read-only); at most {} processes and {memory:.1} GiB of memory per command, through {}",
                    match ns {
                        baton_sandbox::Namespace::Mount => "privileged",
                        baton_sandbox::Namespace::User => "user",
                    },
                    if config.sandbox.unix_sockets.is_empty() { "" } else { " but those listed" },
                    config
                        .sandbox
                        .max_processes
                        .unwrap_or(baton_sandbox::limits::DEFAULT_MAX_PROCESSES),
                    baton_sandbox::limits::mechanism()
                ),
            )
            }
        },
    }
}

/// One class route looked up in the model table.
struct RouteCheck {
    class: ModelClass,
    route: Route,
    /// The description lines, or why the route's options do not suit the model.
    result: Result<(Vec<String>, RouteSends), String>,
}

fn route_checks(config: &Config) -> Vec<RouteCheck> {
    let mut out = Vec::new();
    for class in ModelClass::ALL {
        let Some(list) = config.models.class(class) else {
            continue;
        };
        for route in list.routes() {
            // A provider that is not configured is reported among the providers.
            let Some(p) = provider_config(config, &route.provider) else {
                continue;
            };
            let result = route_profile(config, route, &p)
                .map(|profile| {
                    let data = RouteSends {
                        model_info: to_value(&profile.info),
                        thinking_sent: profile.info.thinking_plan(route.thinking).to_string(),
                        options: to_value(&profile.options),
                    };
                    (crate::info_cmd::describe(&profile, route), data)
                })
                .map_err(|e| e.to_string());
            out.push(RouteCheck {
                class,
                route: route.clone(),
                result,
            });
        }
    }
    out
}

/// Each configured MCP server, started (or reached) and asked for its tools, one at a time.
async fn mcp_checks(
    config: &baton_protocol::config::Config,
    cwd: &std::path::Path,
) -> Vec<DoctorMcpServer> {
    let mut out = Vec::new();
    for name in config.mcp_servers.keys() {
        let one = [name.clone()];
        let (ok, tools, message) = match baton_app::mcp_servers::start(config, &one, cwd).await {
            Ok(s) => {
                let tools = s.listed.first().map(|(_, t)| t.clone()).unwrap_or_default();
                let message = s.warnings.join("; ");
                let ok = s.warnings.is_empty();
                s.shutdown().await;
                (ok, tools, message)
            }
            Err(e) => (false, Vec::new(), e),
        };
        out.push(DoctorMcpServer {
            name: name.clone(),
            optional: config.mcp_servers[name].optional,
            ok,
            tools,
            message,
        });
    }
    out
}

/// The providers' lines of `baton doctor`: each with its kind, URL and key, and what its check
/// found.
fn print_providers(checks: &[Check]) {
    for c in checks {
        let kind = c
            .kind
            .map(|k| format!(" ({}", k.as_str()))
            .unwrap_or_default();
        let at = match (&c.kind, c.url.is_empty()) {
            (Some(_), false) => format!(", {})", c.url),
            (Some(_), true) => ")".into(),
            (None, _) => String::new(),
        };
        let key = if c.key.is_empty() {
            String::new()
        } else {
            format!(" · key: {}", c.key)
        };
        outln!(
            "{} {}{kind}{at}{key}: {}",
            if c.verdict == "ok" { "✓" } else { "✗" },
            c.name,
            verdict_text(c)
        );
        if !c.message.is_empty() {
            outln!("    {}", baton_text::sanitize_line(&c.message));
        }
        if let Some(w) = &c.warning {
            outln!("    ⚠ {w}");
        }
    }
}

pub fn run(args: DoctorArgs) -> Result<Exit> {
    let ctx = project_context(args.cwd)?;
    let config = &ctx.config.config;
    let rt = baton_app::runtime::current_thread()?;
    let checks: Vec<Check> = rt.block_on(async {
        let mut out = Vec::new();
        for name in provider_names(config) {
            out.push(check(config, &name).await);
        }
        out
    });
    let mcp = rt.block_on(mcp_checks(config, &ctx.cwd));
    let (sandbox_ok, abi, mode, sandbox_text) = sandbox_check(config);
    // The Temporal engine, when it is the one `baton run` uses here.
    let engine = (config.engine.kind == Some(baton_protocol::config::EngineKind::Temporal))
        .then(|| rt.block_on(crate::temporal_cmd::doctor(&ctx)));
    let plugins = crate::install_cmd::installed();
    let mut routes = route_checks(config);
    // A route is only as usable as its provider: one whose provider failed its check says why.
    for r in &mut routes {
        if let Some(c) = checks
            .iter()
            .find(|c| c.name == r.route.provider && c.verdict != "ok")
        {
            r.result = Err(format!(
                "its provider {} is {}: {}",
                c.name,
                verdict_text(c),
                baton_text::sanitize_line(&c.message)
            ));
        }
    }
    // Nothing can run without a provider and a route to it, unless the project's roles run
    // programs of their own (a `command` or peer backend): that is a failure, not "all ok".
    let own_programs = baton_roles::load_dir(
        &ctx.project_root.join(".baton/roles"),
        baton_protocol::role::RoleSource::Project,
    )
    .roles
    .iter()
    .any(|r| {
        r.meta
            .backend
            .is_some_and(|b| b != baton_protocol::role::BackendKind::Baton)
    });
    let runnable = (!checks.is_empty() && !routes.is_empty()) || own_programs;
    let all_ok = runnable
        && sandbox_ok
        && checks.iter().all(|c| c.verdict == "ok")
        && mcp.iter().all(|m| m.ok || m.optional)
        && routes.iter().all(|r| r.result.is_ok())
        && engine.as_ref().is_none_or(|e| e.ok);
    if args.json {
        let providers: Vec<DoctorProvider> = checks
            .iter()
            .map(|c| DoctorProvider {
                name: c.name.clone(),
                kind: c.kind.map(|k| k.as_str().to_string()),
                url: c.url.clone(),
                key: c.key.clone(),
                verdict: c.verdict.to_string(),
                status: c.status,
                message: c.message.clone(),
                warning: c.warning.clone(),
            })
            .collect();
        let routes = routes
            .iter()
            .map(|r| {
                let (sends, error) = match &r.result {
                    Ok((_, data)) => (Some(data.clone()), None),
                    Err(e) => (None, Some(e.clone())),
                };
                DoctorRoute {
                    class: r.class.to_string(),
                    route: r.route.to_string(),
                    ok: sends.is_some(),
                    sends,
                    error,
                }
            })
            .collect();
        crate::documents::print(&DoctorDocument {
            ok: all_ok,
            config_files: ctx.config.file_names(),
            shadowed: ctx
                .config
                .shadowed
                .iter()
                .map(|s| DoctorShadowed {
                    key: s.key.clone(),
                    under: s.under.display().to_string(),
                    over: s.over.display().to_string(),
                })
                .collect(),
            providers,
            routes,
            mcp_servers: mcp,
            sandbox: DoctorSandbox {
                ok: sandbox_ok,
                landlock_abi: abi,
                mode: mode.to_string(),
                message: sandbox_text,
            },
            engine,
            plugins,
        });
    } else {
        print_text(
            &ctx,
            &Report {
                checks: &checks,
                routes: &routes,
                mcp: &mcp,
                sandbox: (sandbox_ok, &sandbox_text),
                engine: engine.as_ref(),
                runnable,
            },
        );
        for p in &plugins {
            let mark = match (p.installed, p.current) {
                (true, true) => "✓",
                (true, false) => "⚠",
                (false, _) => "·",
            };
            let host = if p.host == "claude" {
                "Claude Code"
            } else {
                "Codex"
            };
            outln!(
                "{mark} {host} plugin baton: {}",
                baton_text::sanitize_line(&p.message)
            );
        }
    }
    Ok(if all_ok { Exit::Ok } else { Exit::Failed })
}

/// What `baton doctor` found, for its text form.
struct Report<'a> {
    checks: &'a [Check],
    routes: &'a [RouteCheck],
    mcp: &'a [DoctorMcpServer],
    sandbox: (bool, &'a str),
    engine: Option<&'a DoctorEngine>,
    runnable: bool,
}

/// `baton doctor`'s lines: the config files, what shadows what, each provider, route, MCP
/// server, the sandbox and the engine.
fn print_text(ctx: &baton_app::project::ProjectContext, r: &Report<'_>) {
    let Report {
        checks,
        routes,
        mcp,
        sandbox: (sandbox_ok, sandbox_text),
        engine,
        runnable,
    } = *r;
    for f in &ctx.config.files {
        outln!("config: {}", f.display());
    }
    for line in baton_app::config::Shadowed::lines(&ctx.config.shadowed) {
        outln!("note: {line}");
    }
    if checks.is_empty() && runnable {
        outln!("providers: none configured (the project's roles run programs of their own)");
    } else if checks.is_empty() {
        outln!("✗ providers: none configured, so nothing can run; `baton init` writes a starter .baton/config.toml");
    } else if routes.is_empty() && !runnable {
        outln!("✗ models: no class names a route to a configured provider, so nothing can run; set models.fast = \"provider/model\" (`baton models` shows each class)");
    }
    print_providers(checks);
    for r in routes {
        match &r.result {
            Ok((lines, _)) => {
                outln!("✓ {} route {}", r.class, r.route);
                for line in lines {
                    outln!("    {line}");
                }
            }
            Err(e) => outln!("✗ {} route {}: {e}", r.class, r.route),
        }
    }
    for m in mcp {
        if m.ok {
            outln!(
                "✓ MCP server {}: {} tool(s): {}",
                m.name,
                m.tools.len(),
                m.tools.join(", ")
            );
        } else {
            let optional = if m.optional { " (optional)" } else { "" };
            outln!("✗ MCP server {}{optional}: {}", m.name, m.message);
        }
    }
    outln!(
        "{} sandbox: {sandbox_text}",
        if sandbox_ok { "✓" } else { "✗" }
    );
    if let Some(e) = &engine {
        if e.ok {
            outln!(
                "✓ engine: Temporal at {} (namespace {}, queue {}), remote {}; node(s) polling: {}",
                e.address,
                e.namespace,
                e.task_queue,
                e.remote.as_deref().unwrap_or(""),
                e.nodes.join(", ")
            );
        } else {
            outln!(
                "✗ engine: Temporal: {}",
                baton_text::sanitize_line(&e.message)
            );
        }
    }
}
