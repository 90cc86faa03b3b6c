//! `find`: list files whose paths match a glob.

use std::fs;
use std::io;

use baton_tool::args::{parse_tool_args, schema_for, Count};
use schemars::JsonSchema;
use serde::Deserialize;

use super::paths::Workspace;
use super::text::plural;
use super::walk::{walker, PathGlob};
use super::{blocking, Tool, ToolContext, ToolOutput};

const USAGE: &str = r#"{"pattern": "**/*.rs", "path": "crates", "limit": 1000}"#;
/// Paths listed when the call gives no `limit`.
const DEFAULT_LIMIT: u64 = 1000;
/// The largest `limit` honoured.
const MAX_LIMIT: u64 = 5000;

/// What `find` takes; its JSON Schema is the tool's `parameters`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct FindArgs {
    /// Glob to match, e.g. `*.rs` or `src/**/test_*.py`.
    pattern: String,
    /// Directory to search under. Default: the working directory.
    path: Option<String>,
    #[schemars(
        description = format!("Maximum paths to list. Default {DEFAULT_LIMIT}."),
        extend("maximum" = MAX_LIMIT)
    )]
    limit: Option<Count<1>>,
}

/// The `find` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct FindTool;

#[async_trait::async_trait]
impl Tool for FindTool {
    fn name(&self) -> &'static str {
        "find"
    }

    fn spec(&self) -> baton_protocol::ToolSpec {
        baton_protocol::ToolSpec {
            name: "find".to_owned(),
            description: format!(
                "Find files by glob. A pattern without `/` (`*.toml`, `Cargo.*`) matches file names at any \
                 depth; a pattern with `/` (`src/**/*.rs`) matches paths relative to `path`. `*` stays within \
                 one directory, `**` crosses directories, `{{a,b}}` gives alternatives. Honours .gitignore and \
                 skips hidden files unless the pattern names them (`.github/**`). Lists matching files \
                 sorted, relative to the working directory, at most `limit` (default {DEFAULT_LIMIT})."
            ),
            parameters: schema_for::<FindArgs>(),
        }
    }

    fn read_only(&self) -> bool {
        true
    }

    async fn run(&self, args: serde_json::Value, ctx: &ToolContext) -> ToolOutput {
        let (pattern, path, limit) = match parse_tool_args::<FindArgs>("find", USAGE, args) {
            Ok(a) => (
                a.pattern,
                a.path,
                a.limit.map_or(DEFAULT_LIMIT, |c| c.0).min(MAX_LIMIT) as usize,
            ),
            Err(msg) => return ToolOutput::error(msg),
        };
        let ctx = ctx.clone();
        let shown = path.clone();
        blocking("find", move || {
            find_files(&ctx, &pattern, path.as_deref(), limit)
        })
        .await
        .with_path(shown)
    }
}

fn find_files(ctx: &ToolContext, pattern: &str, path: Option<&str>, limit: usize) -> ToolOutput {
    let ws = match Workspace::new(ctx) {
        Ok(ws) => ws,
        Err(e) => return ToolOutput::error(e.0),
    };
    let raw = path.unwrap_or(".");
    let base = match ws.resolve(raw) {
        Ok(p) => p,
        Err(e) => return ToolOutput::error(e.0),
    };
    match fs::metadata(&base) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return ToolOutput::error(format!(
                "`{raw}` is a file, not a directory; give a directory to search"
            ))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return ToolOutput::error(format!("`{raw}` does not exist"))
        }
        Err(e) => return ToolOutput::error(format!("cannot search `{raw}`: {e}")),
    }
    let glob = match PathGlob::new(pattern) {
        Ok(g) => g,
        Err(e) => return ToolOutput::error(e),
    };

    let mut found: Vec<String> = Vec::new();
    let mut walk_errors = 0usize;
    for entry in walker(&base, glob.wants_hidden()).build() {
        let entry = match entry {
            Ok(e) => e,
            Err(_) => {
                walk_errors += 1;
                continue;
            }
        };
        if entry.depth() == 0 || entry.file_type().is_none_or(|t| t.is_dir()) {
            continue;
        }
        let rel = entry.path().strip_prefix(&base).unwrap_or(entry.path());
        if glob.is_match(rel) {
            found.push(ws.display(entry.path()));
        }
    }
    found.sort();

    let total = found.len();
    let mut notes = Vec::new();
    if total > limit {
        found.truncate(limit);
        notes.push(format!("[showing the first {limit} of {total} matches; narrow the pattern or `path`, or raise `limit`]"));
    }
    if walk_errors > 0 {
        notes.push(format!(
            "[{} could not be read]",
            plural(walk_errors, "entry", "entries")
        ));
    }
    if total == 0 {
        let mut msg = format!("No files match `{pattern}` under `{raw}`.");
        for n in notes {
            msg.push('\n');
            msg.push_str(&n);
        }
        return ToolOutput::ok(msg);
    }
    let mut out = found.join("\n");
    out.push('\n');
    if !notes.is_empty() {
        out.push('\n');
        out.push_str(&notes.join("\n"));
    }
    ToolOutput::ok(out)
}
