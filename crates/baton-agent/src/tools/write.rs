//! `write`: create or replace a whole file.

use std::fs;

use baton_tool::args::{parse_tool_args, schema_for};
use schemars::JsonSchema;
use serde::Deserialize;

use super::fsutil::{atomic_write, human_size};
use super::paths::Workspace;
use super::text::{count_lines, plural};
use super::{blocking, Tool, ToolContext, ToolOutput};

const USAGE: &str = r#"{"path": "src/new_module.rs", "content": "pub fn f() {}\n"}"#;

/// What `write` takes; its JSON Schema is the tool's `parameters`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WriteArgs {
    /// File to write, relative to the working directory (or absolute inside the workspace).
    path: String,
    /// The complete new content of the file.
    content: String,
}

/// The `write` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteTool;

#[async_trait::async_trait]
impl Tool for WriteTool {
    fn name(&self) -> &'static str {
        "write"
    }

    fn spec(&self) -> baton_protocol::ToolSpec {
        baton_protocol::ToolSpec {
            name: "write".to_owned(),
            description: "Create a file, or replace an existing file's whole content. Missing parent \
                 directories are created. The write is atomic (a temporary file renamed into place). \
                 To change part of an existing file prefer `edit`. The path must stay inside the workspace, and \
                 names it creates may not hold control characters."
                .to_owned(),
            parameters: schema_for::<WriteArgs>(),
        }
    }

    fn read_only(&self) -> bool {
        false
    }

    async fn run(&self, args: serde_json::Value, ctx: &ToolContext) -> ToolOutput {
        let (path, content) = match parse_tool_args::<WriteArgs>("write", USAGE, args) {
            Ok(a) => (a.path, a.content),
            Err(msg) => return ToolOutput::error(msg),
        };
        let ctx = ctx.clone();
        let shown = path.clone();
        blocking("write", move || write_file(&ctx, &path, &content))
            .await
            .with_path(Some(shown))
    }
}

fn write_file(ctx: &ToolContext, raw: &str, content: &str) -> ToolOutput {
    let (root, abs) = match Workspace::new(ctx)
        .and_then(|ws| ws.resolve_creatable(raw).map(|abs| (ws.root, abs)))
    {
        Ok(p) => p,
        Err(e) => return ToolOutput::error(e.0),
    };
    let previous = match fs::metadata(&abs) {
        Ok(m) if m.is_dir() => {
            return ToolOutput::error(format!(
                "`{raw}` is a directory; give the path of a file inside it"
            ))
        }
        Ok(m) if !m.is_file() => {
            return ToolOutput::error(format!(
                "`{raw}` exists and is not a regular file; refusing to replace it"
            ))
        }
        Ok(m) if m.permissions().readonly() => {
            return ToolOutput::error(format!("`{raw}` is read-only; refusing to replace it"))
        }
        Ok(m) => Some(m.len()),
        Err(_) => None,
    };
    if let Err(e) = atomic_write(&root, &abs, content.as_bytes()) {
        return ToolOutput::error(format!("cannot write `{raw}`: {e}"));
    }
    let what = format!(
        "{}, {}",
        plural(content.len(), "byte", "bytes"),
        plural(count_lines(content), "line", "lines")
    );
    match previous {
        None => ToolOutput::ok(format!("Created `{raw}` ({what}).")),
        Some(old) => ToolOutput::ok(format!(
            "Overwrote `{raw}` ({what}; it had {}).",
            human_size(old)
        )),
    }
}
