//! baton's application layer, shared by the `baton` commands and its MCP server: the typed
//! documents they print with `--json` and answer with as `structuredContent` (`documents`), from
//! which the MCP output schemas are derived.

pub mod documents;
