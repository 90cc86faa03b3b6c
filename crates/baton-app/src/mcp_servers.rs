//! MCP servers as tools of a session (seed 004's trusted extension bundles): the servers named by
//! the role's `mcp` (and, in a main session, `agent.mcp_servers`) are started or reached before the
//! first turn, and each of their tools is offered as `mcp__SERVER__TOOL` with the server's schema.
//!
//! A stdio server runs under baton's process guard (nothing it starts outlives the session, even
//! when baton is killed), in the session's working directory, without the provider keys and other
//! credentials of baton's environment unless its `env` or `env_vars` names them. It is not
//! sandboxed: a server is code the user chose to trust, like a program on their `PATH`.
//!
//! A server that cannot be started or does not list its tools fails the session before its first
//! turn, with the tail of what it wrote on stderr; with `optional = true` it is skipped with a
//! warning instead.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use baton_protocol::config::{Config, McpServerConfig};
use baton_protocol::ToolSpec;
use baton_tool::{Tool, ToolContext, ToolOutput};
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock};
use rmcp::service::{Peer, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use tokio::io::AsyncReadExt;

/// How long starting a server and listing its tools may take by default.
const DEFAULT_STARTUP: Duration = Duration::from_secs(30);
/// How long one call may take by default.
const DEFAULT_CALL: Duration = Duration::from_secs(600);
/// The most of a result the model gets (as much as a `bash` call's output).
const MAX_RESULT: usize = 50 * 1024;
/// The stderr a failed server's error quotes, at most.
const STDERR_TAIL: usize = 2048;
/// The longest tool name the providers take.
const MAX_TOOL_NAME: usize = 64;

/// The running servers of a session and their tools. Dropping it stops them.
pub struct McpServers {
    pub tools: Vec<Arc<dyn Tool>>,
    /// What each server offered, for `baton doctor`: (server, tool names).
    pub listed: Vec<(String, Vec<String>)>,
    /// One line per optional server that was skipped.
    pub warnings: Vec<String>,
    running: Vec<Running>,
}

struct Running {
    client: RunningService<RoleClient, ()>,
    /// The guard of a stdio server: dropping it kills the server and all it started.
    _link: baton_process::guard::Link,
}

impl McpServers {
    /// No servers.
    pub fn none() -> McpServers {
        McpServers {
            tools: Vec::new(),
            listed: Vec::new(),
            warnings: Vec::new(),
            running: Vec::new(),
        }
    }

    /// Stops every server (the guards kill what is left when this is dropped).
    pub async fn shutdown(mut self) {
        for r in self.running.drain(..) {
            let _ = r.client.cancel().await;
        }
    }
}

/// The servers a session gets: the role's `mcp`, and in a main session `agent.mcp_servers` too,
/// each once, in that order.
pub fn selected(config: &Config, role_mcp: &[String], main_session: bool) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let extra: &[String] = if main_session {
        &config.agent.mcp_servers
    } else {
        &[]
    };
    for n in role_mcp.iter().chain(extra) {
        if !out.contains(n) {
            out.push(n.clone());
        }
    }
    out
}

/// Starts (or connects to) the servers `names`, in order, and lists their tools. An error names
/// the server and says what went wrong, with its stderr tail.
pub async fn start(config: &Config, names: &[String], cwd: &Path) -> Result<McpServers, String> {
    let mut servers = McpServers::none();
    for name in names {
        let Some(server) = config.mcp_servers.get(name) else {
            return Err(format!(
                "MCP server `{name}` is not configured: add [mcp_servers.{name}] with `command` or `url` (docs/config.md), or remove it from the role's `mcp`"
            ));
        };
        match start_one(config, name, server, cwd).await {
            Ok((running, tools)) => {
                servers.listed.push((
                    name.clone(),
                    tools.iter().map(|t| t.name.to_string()).collect(),
                ));
                let timeout = server.tool_timeout.map_or(DEFAULT_CALL, |d| d.0);
                let peer = running.client.peer().clone();
                for t in tools {
                    servers
                        .tools
                        .push(Arc::new(McpTool::new(name, t, peer.clone(), timeout)));
                }
                servers.running.push(running);
            }
            Err(e) if server.optional => servers
                .warnings
                .push(format!("optional MCP server `{name}` skipped: {e}")),
            Err(e) => {
                servers.shutdown().await;
                return Err(format!("MCP server `{name}`: {e}"));
            }
        }
    }
    Ok(servers)
}

async fn start_one(
    config: &Config,
    name: &str,
    server: &McpServerConfig,
    cwd: &Path,
) -> Result<(Running, Vec<rmcp::model::Tool>), String> {
    let startup = server.startup_timeout.map_or(DEFAULT_STARTUP, |d| d.0);
    let (client, link, stderr) = if let Some(url) = &server.url {
        let mut transport = StreamableHttpClientTransportConfig::with_uri(url.as_str());
        if let Some(var) = &server.bearer_token_env {
            let token = std::env::var(var).ok().filter(|t| !t.is_empty()).ok_or_else(|| {
                format!("its bearer_token_env `{var}` is not set: export it, or remove bearer_token_env")
            })?;
            transport = transport.auth_header(token);
        }
        let client = tokio::time::timeout(
            startup,
            ().serve(StreamableHttpClientTransport::from_config(transport)),
        )
        .await
        .map_err(|_| format!("{url} did not answer `initialize` within {}", secs(startup)))?
        .map_err(|e| format!("cannot connect to {url}: {e}"))?;
        (client, baton_process::guard::Link::default(), None)
    } else {
        let (cmd, link) = stdio_command(config, name, server, cwd)?;
        let (transport, stderr) = TokioChildProcess::builder(cmd)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| {
                format!(
                    "cannot start `{}`: {e}",
                    server.command.as_deref().unwrap_or_default()
                )
            })?;
        let tail = Arc::new(Mutex::new(VecDeque::<u8>::new()));
        let mut reader = None;
        if let Some(mut err) = stderr {
            let tail = tail.clone();
            reader = Some(tokio::spawn(async move {
                let mut buf = [0u8; 1024];
                while let Ok(n) = err.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    let mut t = tail.lock().unwrap_or_else(|p| p.into_inner());
                    t.extend(&buf[..n]);
                    while t.len() > STDERR_TAIL {
                        t.pop_front();
                    }
                }
            }));
        }
        let served = tokio::time::timeout(startup, ().serve(transport)).await;
        let msg = match served {
            Ok(Ok(c)) => Ok(c),
            Err(_) => Err(format!(
                "it did not answer `initialize` within {}",
                secs(startup)
            )),
            Ok(Err(e)) => Err(format!("it did not start as an MCP server: {e}")),
        };
        let client = match msg {
            Ok(c) => c,
            Err(msg) => {
                // A server that exited has closed its stderr: read it to the end (briefly, in
                // case something it started still holds it open).
                if let Some(r) = reader {
                    let _ = tokio::time::timeout(Duration::from_secs(2), r).await;
                }
                return Err(with_stderr(msg, &tail));
            }
        };
        (client, link, Some(tail))
    };
    let tools = match tokio::time::timeout(startup, client.list_all_tools()).await {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => {
            let msg = format!("it did not list its tools: {e}");
            let _ = client.cancel().await;
            return Err(match &stderr {
                Some(t) => with_stderr(msg, t),
                None => msg,
            });
        }
        Err(_) => {
            let _ = client.cancel().await;
            return Err(format!(
                "it did not list its tools within {}",
                secs(startup)
            ));
        }
    };
    Ok((
        Running {
            client,
            _link: link,
        },
        tools,
    ))
}

fn secs(d: Duration) -> String {
    format!("{}s", d.as_secs_f64())
}

/// `msg`, then what the server last wrote on stderr.
fn with_stderr(msg: String, tail: &Mutex<VecDeque<u8>>) -> String {
    let t = tail.lock().unwrap_or_else(|p| p.into_inner());
    let bytes: Vec<u8> = t.iter().copied().collect();
    let text = String::from_utf8_lossy(&bytes);
    let text = baton_text::sanitize_terminal(text.trim());
    if text.is_empty() {
        format!("{msg} (it wrote nothing on stderr)")
    } else {
        format!("{msg}; its stderr ends:\n{text}")
    }
}

/// The command of a stdio server under the process guard, in `cwd` (or its own), in a process
/// group of its own, without the credentials of baton's environment that it is not given.
fn stdio_command(
    config: &Config,
    name: &str,
    server: &McpServerConfig,
    cwd: &Path,
) -> Result<(tokio::process::Command, baton_process::guard::Link), String> {
    let program = server.command.as_deref().unwrap_or_default();
    let args: Vec<std::ffi::OsString> = server.args.iter().map(Into::into).collect();
    let (mut cmd, link) = baton_process::guard::guarded(program.as_ref(), &args, None)
        .map_err(|e| format!("cannot start `{program}`: {e} (mcp_servers.{name}.command)"))?;
    let filter = baton_tool::EnvFilter::for_config(config);
    for var in filter.secret_now() {
        if !server
            .env_vars
            .iter()
            .any(|v| std::ffi::OsStr::new(v) == var.as_os_str())
        {
            cmd.env_remove(&var);
        }
    }
    cmd.envs(&server.env);
    let dir = match &server.cwd {
        Some(d) => cwd.join(d),
        None => cwd.to_path_buf(),
    };
    cmd.current_dir(dir);
    use std::os::unix::process::CommandExt as _;
    cmd.process_group(0);
    let mut cmd = tokio::process::Command::from(cmd);
    cmd.kill_on_drop(true);
    Ok((cmd, link))
}

/// The name a server's tool is offered by: `mcp__SERVER__TOOL`, with characters the providers do
/// not take in a tool name made `_`, at most 64 characters.
pub fn tool_name(server: &str, tool: &str) -> String {
    let raw = format!("mcp__{server}__{tool}");
    let mut name: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    name.truncate(MAX_TOOL_NAME);
    name
}

/// One tool of one server.
struct McpTool {
    /// The offered name (leaked once per tool per session: the tool trait names tools statically).
    name: &'static str,
    /// The server's own name of the tool.
    remote: String,
    spec: ToolSpec,
    read_only: bool,
    peer: Peer<RoleClient>,
    timeout: Duration,
}

impl McpTool {
    fn new(server: &str, t: rmcp::model::Tool, peer: Peer<RoleClient>, timeout: Duration) -> Self {
        let name: &'static str = Box::leak(tool_name(server, &t.name).into_boxed_str());
        let description = t
            .description
            .as_deref()
            .map(|d| baton_text::sanitize_terminal(d).into_owned())
            .unwrap_or_default();
        McpTool {
            name,
            remote: t.name.to_string(),
            spec: ToolSpec {
                name: name.to_string(),
                description: format!("[MCP server {server}] {description}"),
                parameters: serde_json::Value::Object((*t.input_schema).clone()),
            },
            read_only: t
                .annotations
                .as_ref()
                .and_then(|a| a.read_only_hint)
                .unwrap_or(false),
            peer,
            timeout,
        }
    }
}

#[async_trait::async_trait]
impl Tool for McpTool {
    fn name(&self) -> &'static str {
        self.name
    }

    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn read_only(&self) -> bool {
        self.read_only
    }

    async fn run(&self, args: serde_json::Value, ctx: &ToolContext) -> ToolOutput {
        let arguments = match args {
            serde_json::Value::Object(m) => m,
            serde_json::Value::Null => serde_json::Map::new(),
            other => {
                return ToolOutput::error(format!(
                    "`{}` takes an object of arguments, not {other}",
                    self.name
                ))
            }
        };
        let params = CallToolRequestParams::new(self.remote.clone()).with_arguments(arguments);
        let call = self.peer.call_tool(params);
        tokio::select! {
            () = ctx.cancel.cancelled() => ToolOutput::error("cancelled"),
            r = tokio::time::timeout(self.timeout, call) => match r {
                Err(_) => ToolOutput::error(format!(
                    "the MCP server did not answer within {}: the call was abandoned",
                    secs(self.timeout)
                )),
                Ok(Err(e)) => ToolOutput::error(format!("the MCP server failed the call: {e}")),
                Ok(Ok(result)) => render(&result),
            },
        }
    }
}

/// A result as the model gets it: its text blocks, a line for each other block, the structured
/// content when there is no text; at most [`MAX_RESULT`] bytes.
fn render(result: &CallToolResult) -> ToolOutput {
    let mut parts: Vec<String> = Vec::new();
    for block in &result.content {
        parts.push(match block {
            ContentBlock::Text(t) => t.text.clone(),
            ContentBlock::Image(i) => {
                format!("[image {}, {} bytes base64]", i.mime_type, i.data.len())
            }
            ContentBlock::Audio(a) => {
                format!("[audio {}, {} bytes base64]", a.mime_type, a.data.len())
            }
            other => match serde_json::to_value(other) {
                Ok(v) => v
                    .pointer("/resource/text")
                    .and_then(serde_json::Value::as_str)
                    .map(str::to_string)
                    .unwrap_or_else(|| {
                        let uri = v
                            .pointer("/resource/uri")
                            .or_else(|| v.get("uri"))
                            .and_then(serde_json::Value::as_str)
                            .unwrap_or("?");
                        format!("[resource {uri}]")
                    }),
                Err(_) => "[content]".to_string(),
            },
        });
    }
    if parts.is_empty() {
        if let Some(s) = &result.structured_content {
            parts.push(s.to_string());
        }
    }
    let text = parts.join("\n");
    let text = baton_text::truncate(&text, MAX_RESULT, baton_text::Keep::Head).into_owned();
    if result.is_error == Some(true) {
        ToolOutput::error(text)
    } else {
        ToolOutput::ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_prefixed_sanitized_and_bounded() {
        assert_eq!(tool_name("fs", "read_file"), "mcp__fs__read_file");
        assert_eq!(tool_name("x", "a.b/c d"), "mcp__x__a_b_c_d");
        assert_eq!(tool_name("s", &"t".repeat(100)).len(), 64);
    }

    #[test]
    fn main_sessions_add_the_configured_default() {
        let mut c = Config::default();
        c.agent.mcp_servers = vec!["a".into(), "b".into()];
        assert_eq!(
            selected(&c, &["b".into(), "c".into()], true),
            ["b", "c", "a"]
        );
        assert_eq!(selected(&c, &["b".into()], false), ["b"]);
    }
}
