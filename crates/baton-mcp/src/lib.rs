//! baton's MCP server (`baton mcp`, docs/mcp.md) on the official Rust SDK,
//! `rmcp`: the server and its `TOOLS` table (`server`), the Flow tools (`flow`), the background
//! task tools (`tasks`), the managed-worker tools (`workers`), `run_workflow` on Temporal through `baton run --engine temporal` (`on_temporal`), streamable HTTP (`http`), resources and their subscriptions
//! (`resources`), bounded and redacted results (`result`), the shared executor and progress
//! (`runtime`) and what a tool is (`tool`). Every answer is a document of `baton_app`, built by
//! the same function as the matching `--json` command.

#[macro_use]
extern crate baton_text;

pub mod flow;
pub mod http;
pub mod on_temporal;
pub mod resources;
pub mod result;
pub mod runtime;
pub mod server;
pub mod tasks;
pub mod tool;
pub mod workers;

pub use server::{run, tool_set, Options, CORE_TOOLS};
