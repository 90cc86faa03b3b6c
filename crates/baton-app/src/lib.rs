//! baton's application layer, shared by the `baton` commands and its MCP server (`baton-mcp`):
//! the project a command runs in (`project`, `config`, `trust`); the typed documents they print
//! with `--json` and answer with as `structuredContent` (`documents`), from which the MCP output
//! schemas are derived; the builders of the documents that read the project (`info`, `workflow`,
//! `tasks`, `task_log`, `flow`); the MCP servers a session uses as tools (`mcp_servers`); and how
//! a command ends (`exit`).

#[macro_use]
extern crate baton_text;

pub mod actions;
pub mod changes;
pub mod config;
pub mod dashboard;
pub mod documents;
pub mod exit;
pub mod flow;
pub mod info;
pub mod local_http;
pub mod mcp_servers;
pub mod project;
pub mod runtime;
pub mod settings;
pub mod task_log;
pub mod task_tools;
pub mod tasks;
pub mod trust;
pub mod worker_tool;
pub mod workers;
pub mod workflow;
