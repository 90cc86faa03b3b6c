//! `baton mcp`: its flags; the server is `baton-mcp`'s (docs/mcp.md).

use std::path::PathBuf;

use anyhow::Result;
use baton_app::exit::Exit;
use clap::Args;

#[derive(Args, Debug)]
pub struct McpArgs {
    /// Directory inside the project whose config, roles and workflows the tools use (default:
    /// the directory the client starts baton in).
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// Serve streamable HTTP on this address (e.g. 127.0.0.1:8765; port 0 picks a free one)
    /// instead of stdio. Any address but loopback needs --token.
    #[arg(long, value_name = "ADDR")]
    http: Option<std::net::SocketAddr>,
    /// With --http: the bearer token every request must carry (`Authorization: Bearer TOKEN`).
    /// Default: the user's own, in $XDG_STATE_HOME/baton/mcp.token (made 0600 on first use).
    #[arg(long, env = "BATON_MCP_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// The tools offered: `all` (default), `core` (run_workflow, workflow_status,
    /// workflow_resume, delegate_task, task_status, flow_start, flow_status, flow_continue: about
    /// half the tool list's tokens), or tool names and `core` separated by commas.
    #[arg(
        long,
        env = "BATON_MCP_TOOLS",
        default_value = "all",
        value_name = "SET"
    )]
    tools: String,
}

/// `baton mcp`: serves until the client closes stdin (with `--http`, until stopped).
pub fn run(args: McpArgs) -> Result<Exit> {
    // Loopback is reachable by every user of the machine: over HTTP a token is always needed.
    let token = match (&args.http, args.token.filter(|t| !t.is_empty())) {
        // Off loopback the token must be given (the server refuses to start without one).
        (Some(addr), None) if addr.ip().is_loopback() => {
            let (token, file) = baton_app::local_http::user_token("mcp")?;
            errln!(
                "baton mcp: clients send `Authorization: Bearer TOKEN` with the token in {} (only \
                 you can read it)",
                file.display()
            );
            Some(token)
        }
        (_, given) => given,
    };
    let tools = match baton_mcp::tool_set(&args.tools) {
        Ok(t) => t,
        Err(e) => {
            errln!("baton mcp: {e}");
            return Ok(Exit::Refused);
        }
    };
    baton_mcp::run(baton_mcp::Options {
        cwd: args.cwd,
        http: args.http,
        token,
        tools,
    })
}
