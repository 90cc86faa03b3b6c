//! `grep`: search file contents with a regular expression.

use std::fs;
use std::io;
use std::path::Path;

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};

use baton_tool::args::{parse_tool_args, schema_for, Count, Flag};
use schemars::JsonSchema;
use serde::Deserialize;

use super::paths::Workspace;
use super::text::{clip_line, plural};
use super::walk::{walker, PathGlob};
use super::{blocking, Tool, ToolContext, ToolOutput};

const USAGE: &str = r#"{"pattern": "fn \\w+_test", "path": "src", "glob": "*.rs", "ignore_case": false, "literal": false, "context": 0, "limit": 100}"#;
/// Matching lines reported when the call gives no `limit`.
const DEFAULT_LIMIT: u64 = 100;
/// The largest `limit` honoured.
const MAX_LIMIT: u64 = 2000;
/// The largest `context` honoured.
const MAX_CONTEXT: u64 = 20;
/// Characters of one reported line.
const MAX_LINE_CHARS: usize = 300;
/// Bytes of output before the search stops.
const MAX_OUTPUT_BYTES: usize = 50 * 1024;

/// What `grep` takes; its JSON Schema is the tool's `parameters`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GrepArgs {
    /// Regular expression to search for (or plain text with `literal: true`).
    pattern: String,
    /// Directory or file to search. Default: the working directory.
    path: Option<String>,
    /// Only search files matching this glob, e.g. `*.rs` (file name) or `src/**/*.ts` (path relative to `path`).
    glob: Option<String>,
    /// Match case-insensitively. Default false.
    ignore_case: Option<Flag>,
    /// Treat `pattern` as plain text, not a regex. Default false.
    literal: Option<Flag>,
    /// Lines of context to show before and after each match. Default 0.
    #[schemars(extend("maximum" = MAX_CONTEXT))]
    context: Option<Count<0>>,
    #[schemars(
        description = format!("Maximum matching lines to report. Default {DEFAULT_LIMIT}."),
        extend("maximum" = MAX_LIMIT)
    )]
    limit: Option<Count<1>>,
}

/// The `grep` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct GrepTool;

#[async_trait::async_trait]
impl Tool for GrepTool {
    fn name(&self) -> &'static str {
        "grep"
    }

    fn spec(&self) -> baton_protocol::ToolSpec {
        baton_protocol::ToolSpec {
            name: "grep".to_owned(),
            description: format!(
                "Search file contents for a regular expression (Rust regex syntax, like ripgrep) under a \
                 directory or in one file. Honours .gitignore; skips hidden files (unless `glob` names \
                 them), binary files and .git. Prints `path:line:text` for each matching line (context \
                 lines as `path-line-text`), paths relative to the working directory, at most `limit` \
                 matches (default {DEFAULT_LIMIT})."
            ),
            parameters: schema_for::<GrepArgs>(),
        }
    }

    fn read_only(&self) -> bool {
        true
    }

    async fn run(&self, args: serde_json::Value, ctx: &ToolContext) -> ToolOutput {
        let req = match parse_tool_args::<GrepArgs>("grep", USAGE, args) {
            Ok(a) => Request {
                pattern: a.pattern,
                path: a.path,
                glob: a.glob,
                ignore_case: a.ignore_case.unwrap_or_default().0,
                literal: a.literal.unwrap_or_default().0,
                context: a.context.map_or(0, |c| c.0).min(MAX_CONTEXT) as usize,
                limit: a.limit.map_or(DEFAULT_LIMIT, |c| c.0).min(MAX_LIMIT) as usize,
            },
            Err(msg) => return ToolOutput::error(msg),
        };
        let ctx = ctx.clone();
        let shown = req.path.clone();
        blocking("grep", move || search(&ctx, &req))
            .await
            .with_path(shown)
    }
}

struct Request {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    ignore_case: bool,
    literal: bool,
    context: usize,
    limit: usize,
}

/// Collects the lines of one search into the shared output.
struct Collector<'a> {
    out: &'a mut String,
    shown_path: String,
    matches: &'a mut usize,
    limit: usize,
    full: &'a mut bool,
}

impl Collector<'_> {
    fn push(&mut self, sep: char, line_number: Option<u64>, bytes: &[u8]) -> bool {
        let mut body = bytes;
        while let Some((&last, rest)) = body.split_last() {
            if last == b'\n' || last == b'\r' {
                body = rest;
            } else {
                break;
            }
        }
        let text = String::from_utf8_lossy(body);
        let line = format!(
            "{}{sep}{}{sep}{}\n",
            self.shown_path,
            line_number.unwrap_or(0),
            clip_line(&text, MAX_LINE_CHARS)
        );
        if self.out.len() + line.len() > MAX_OUTPUT_BYTES {
            *self.full = true;
            return false;
        }
        self.out.push_str(&line);
        true
    }
}

impl Sink for Collector<'_> {
    type Error = io::Error;

    fn matched(&mut self, _searcher: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        if !self.push(':', mat.line_number(), mat.bytes()) {
            return Ok(false);
        }
        *self.matches += 1;
        Ok(*self.matches < self.limit)
    }

    fn context(&mut self, _searcher: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, io::Error> {
        Ok(self.push('-', ctx.line_number(), ctx.bytes()))
    }

    fn context_break(&mut self, _searcher: &Searcher) -> Result<bool, io::Error> {
        self.out.push_str("--\n");
        Ok(true)
    }
}

fn search(ctx: &ToolContext, req: &Request) -> ToolOutput {
    let ws = match Workspace::new(ctx) {
        Ok(ws) => ws,
        Err(e) => return ToolOutput::error(e.0),
    };
    let raw = req.path.as_deref().unwrap_or(".");
    let base = match ws.resolve(raw) {
        Ok(p) => p,
        Err(e) => return ToolOutput::error(e.0),
    };
    let meta = match fs::metadata(&base) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return ToolOutput::error(format!("`{raw}` does not exist"))
        }
        Err(e) => return ToolOutput::error(format!("cannot search `{raw}`: {e}")),
    };
    if req.pattern.is_empty() {
        return ToolOutput::error(
            "`pattern` is empty; give a regular expression or text to search for",
        );
    }
    let matcher = match RegexMatcherBuilder::new()
        .case_insensitive(req.ignore_case)
        .fixed_strings(req.literal)
        .line_terminator(Some(b'\n'))
        .build(&req.pattern)
    {
        Ok(m) => m,
        Err(e) => {
            return ToolOutput::error(format!(
                "invalid regular expression `{}`: {e}\n(set `literal: true` to search for the text as it is; \
                 patterns cannot span lines)",
                req.pattern
            ))
        }
    };
    let glob = match req.glob.as_deref().map(PathGlob::new).transpose() {
        Ok(g) => g,
        Err(e) => return ToolOutput::error(e),
    };
    let mut searcher = SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(0))
        .line_number(true)
        .before_context(req.context)
        .after_context(req.context)
        .build();

    let mut out = String::new();
    let mut matches = 0usize;
    let mut full = false;
    let mut walk_errors = 0usize;
    let mut files_searched = 0usize;

    let mut search_one =
        |path: &Path, out: &mut String, matches: &mut usize, full: &mut bool| -> bool {
            files_searched += 1;
            let before = out.len();
            if req.context > 0 && !out.is_empty() {
                out.push_str("--\n");
            }
            let mark = out.len();
            let sink = Collector {
                out,
                shown_path: ws.display(path),
                matches,
                limit: req.limit,
                full,
            };
            let result = searcher.search_path(&matcher, path, sink);
            if result.is_err() || out.len() == mark {
                // Nothing found (or the file could not be read): drop the separator again.
                out.truncate(before);
            }
            *matches < req.limit && !*full
        };

    if meta.is_file() {
        search_one(&base, &mut out, &mut matches, &mut full);
    } else {
        let hidden = glob.as_ref().is_some_and(PathGlob::wants_hidden);
        for entry in walker(&base, hidden).build() {
            let entry = match entry {
                Ok(e) => e,
                Err(_) => {
                    walk_errors += 1;
                    continue;
                }
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let path = entry.path();
            if let Some(glob) = &glob {
                let rel = path.strip_prefix(&base).unwrap_or(path);
                if !glob.is_match(rel) {
                    continue;
                }
            }
            if !search_one(path, &mut out, &mut matches, &mut full) {
                break;
            }
        }
    }

    let mut notes = Vec::new();
    if matches >= req.limit {
        notes.push(format!(
            "[stopped after {} (the limit); narrow the search with `path` or `glob`, or raise `limit`]",
            plural(req.limit, "match", "matches")
        ));
    } else if full {
        notes.push(format!(
            "[output capped at {} KiB after {}; narrow the search]",
            MAX_OUTPUT_BYTES / 1024,
            plural(matches, "match", "matches")
        ));
    }
    if walk_errors > 0 {
        notes.push(format!(
            "[{} could not be read]",
            plural(walk_errors, "entry", "entries")
        ));
    }
    if matches == 0 && out.is_empty() {
        let mut msg = format!("No matches for `{}` in `{raw}`", req.pattern);
        if let Some(g) = &req.glob {
            msg.push_str(&format!(" (files matching `{g}`)"));
        }
        if files_searched == 0 {
            msg.push_str("; no files were searched (all ignored, hidden or filtered out)");
        }
        msg.push('.');
        for n in notes {
            msg.push('\n');
            msg.push_str(&n);
        }
        return ToolOutput::ok(msg);
    }
    if !notes.is_empty() {
        out.push('\n');
        out.push_str(&notes.join("\n"));
    }
    ToolOutput::ok(out)
}
