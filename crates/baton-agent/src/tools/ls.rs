//! `ls`: list one directory.

use std::fs;
use std::io;

use baton_tool::args::{parse_tool_args, schema_for};
use schemars::JsonSchema;
use serde::Deserialize;

use super::paths::Workspace;
use super::{blocking, Tool, ToolContext, ToolOutput};

const USAGE: &str = r#"{"path": "src"}"#;
/// Entries listed at most.
const MAX_ENTRIES: usize = 500;

/// What `ls` takes; its JSON Schema is the tool's `parameters`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct LsArgs {
    /// Directory to list. Default: the working directory.
    path: Option<String>,
}

/// The `ls` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct LsTool;

#[async_trait::async_trait]
impl Tool for LsTool {
    fn name(&self) -> &'static str {
        "ls"
    }

    fn spec(&self) -> baton_protocol::ToolSpec {
        baton_protocol::ToolSpec {
            name: "ls".to_owned(),
            description: format!(
                "List the entries of one directory (not recursive), sorted by name, dotfiles included. \
                 Directories end with `/`; symlinks show as `name -> target`. At most {MAX_ENTRIES} entries. \
                 Use `find` to search recursively."
            ),
            parameters: schema_for::<LsArgs>(),
        }
    }

    fn read_only(&self) -> bool {
        true
    }

    async fn run(&self, args: serde_json::Value, ctx: &ToolContext) -> ToolOutput {
        let path = match parse_tool_args::<LsArgs>("ls", USAGE, args) {
            Ok(a) => a.path,
            Err(msg) => return ToolOutput::error(msg),
        };
        let ctx = ctx.clone();
        let shown = path.clone();
        blocking("ls", move || list(&ctx, path.as_deref()))
            .await
            .with_path(shown)
    }
}

fn list(ctx: &ToolContext, path: Option<&str>) -> ToolOutput {
    let raw = path.unwrap_or(".");
    let dir = match Workspace::new(ctx).and_then(|ws| ws.resolve(raw)) {
        Ok(p) => p,
        Err(e) => return ToolOutput::error(e.0),
    };
    let entries = match fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return ToolOutput::error(format!("`{raw}` does not exist"))
        }
        Err(_) if dir.is_file() => {
            return ToolOutput::error(format!(
                "`{raw}` is a file, not a directory; use `read` to see it"
            ))
        }
        Err(e) => return ToolOutput::error(format!("cannot list `{raw}`: {e}")),
    };
    let mut names: Vec<String> = Vec::new();
    let mut unreadable = 0usize;
    for entry in entries {
        let Ok(entry) = entry else {
            unreadable += 1;
            continue;
        };
        let name = entry.file_name().to_string_lossy().into_owned();
        let shown = match entry.file_type() {
            Ok(t) if t.is_dir() => format!("{name}/"),
            Ok(t) if t.is_symlink() => match fs::read_link(entry.path()) {
                Ok(target) => {
                    let slash = if entry.path().is_dir() { "/" } else { "" };
                    format!("{name} -> {}{slash}", target.display())
                }
                Err(_) => format!("{name} -> ?"),
            },
            _ => name,
        };
        names.push(shown);
    }
    names.sort();
    let total = names.len();
    if total == 0 && unreadable == 0 {
        return ToolOutput::ok(format!("[`{raw}` is empty]"));
    }
    names.truncate(MAX_ENTRIES);
    let mut out = names.join("\n");
    out.push('\n');
    if total > MAX_ENTRIES {
        out.push_str(&format!(
            "\n[{} more entries not shown ({total} in all); use `find` with a pattern to narrow down]",
            total - MAX_ENTRIES
        ));
    }
    if unreadable > 0 {
        out.push_str(&format!("\n[{unreadable} entries could not be read]"));
    }
    ToolOutput::ok(out)
}
