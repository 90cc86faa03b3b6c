//! `edit`: replace exact text in a file.

use std::fs;

use baton_tool::args::{parse_tool_args, schema_for, Flag};
use schemars::JsonSchema;
use serde::Deserialize;

use super::fsutil::{atomic_write, looks_binary};
use super::paths::Workspace;
use super::text::{clip_line, count_lines, plural};
use super::{blocking, Tool, ToolContext, ToolOutput};

const USAGE: &str = r#"{"path": "src/lib.rs", "old_string": "fn old() {", "new_string": "fn new() {", "replace_all": false}"#;
/// Lines of the edited region shown back to the model.
const SNIPPET_LINES: usize = 16;
/// Characters per snippet line.
const SNIPPET_LINE_CHARS: usize = 240;

/// What `edit` takes; its JSON Schema is the tool's `parameters`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EditArgs {
    /// File to edit, relative to the working directory (or absolute inside the workspace).
    path: String,
    /// The exact text to replace.
    old_string: String,
    /// The text to put in its place (may be empty to delete).
    new_string: String,
    /// Replace every occurrence instead of requiring exactly one. Default false.
    replace_all: Option<Flag>,
}

/// The `edit` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct EditTool;

#[async_trait::async_trait]
impl Tool for EditTool {
    fn name(&self) -> &'static str {
        "edit"
    }

    fn spec(&self) -> baton_protocol::ToolSpec {
        baton_protocol::ToolSpec {
            name: "edit".to_owned(),
            description: "Replace exact text in an existing file. `old_string` must match the file \
                 character for character (whitespace and indentation included) and, unless `replace_all` \
                 is true, exactly once: include enough surrounding lines to make it unique. Do not include \
                 the line-number prefixes that `read` shows. The file is rewritten atomically. Use `write` \
                 to create files."
                .to_owned(),
            parameters: schema_for::<EditArgs>(),
        }
    }

    fn read_only(&self) -> bool {
        false
    }

    async fn run(&self, args: serde_json::Value, ctx: &ToolContext) -> ToolOutput {
        let req = match parse_tool_args::<EditArgs>("edit", USAGE, args) {
            Ok(a) => Request {
                path: a.path,
                old: a.old_string,
                new: a.new_string,
                all: a.replace_all.unwrap_or_default().0,
            },
            Err(msg) => return ToolOutput::error(msg),
        };
        let ctx = ctx.clone();
        let shown = req.path.clone();
        blocking("edit", move || edit_file(&ctx, &req))
            .await
            .with_path(Some(shown))
    }
}

struct Request {
    path: String,
    old: String,
    new: String,
    all: bool,
}

fn edit_file(ctx: &ToolContext, req: &Request) -> ToolOutput {
    let raw = req.path.as_str();
    if req.old.is_empty() {
        return ToolOutput::error(
            "`old_string` is empty; to create or overwrite a file use `write`, to insert text include \
             the neighbouring lines in `old_string`",
        );
    }
    if req.old == req.new {
        return ToolOutput::error(
            "`old_string` and `new_string` are identical; there is nothing to change",
        );
    }
    let (root, abs) =
        match Workspace::new(ctx).and_then(|ws| ws.resolve(raw).map(|abs| (ws.root, abs))) {
            Ok(p) => p,
            Err(e) => return ToolOutput::error(e.0),
        };
    match fs::metadata(&abs) {
        Ok(m) if m.is_dir() => {
            return ToolOutput::error(format!("`{raw}` is a directory, not a file"))
        }
        Ok(m) if !m.is_file() => {
            return ToolOutput::error(format!("`{raw}` is not a regular file"))
        }
        Ok(m) if m.permissions().readonly() => {
            return ToolOutput::error(format!("`{raw}` is read-only; refusing to edit it"))
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return ToolOutput::error(format!(
                "`{raw}` does not exist; use `write` to create a new file"
            ))
        }
        Err(e) => return ToolOutput::error(format!("cannot edit `{raw}`: {e}")),
    }
    let bytes = match super::fsutil::open_read(&root, &abs).and_then(|mut f| {
        let mut b = Vec::new();
        std::io::Read::read_to_end(&mut f, &mut b).map(|_| b)
    }) {
        Ok(b) => b,
        Err(e) => return ToolOutput::error(format!("cannot read `{raw}`: {e}")),
    };
    if looks_binary(
        &bytes[..bytes.len().min(super::fsutil::SNIFF_BYTES)],
        bytes.len() <= super::fsutil::SNIFF_BYTES,
    ) {
        return ToolOutput::error(format!(
            "`{raw}` is a binary file; `edit` only changes text files"
        ));
    }
    let Ok(content) = String::from_utf8(bytes) else {
        return ToolOutput::error(format!(
            "`{raw}` is not valid UTF-8; `edit` only changes UTF-8 text files"
        ));
    };

    let (old, new, crlf) = match choose_variant(&content, &req.old, &req.new) {
        Some(v) => v,
        None => return ToolOutput::error(not_found_message(raw, &content, &req.old)),
    };
    let starts: Vec<usize> = content
        .match_indices(old.as_str())
        .map(|(i, _)| i)
        .collect();
    if starts.len() > 1 && !req.all {
        return ToolOutput::error(format!(
            "`old_string` occurs {} times in `{raw}` (at lines {}); include more surrounding lines to make \
             it unique, or set `replace_all: true` to replace every occurrence",
            starts.len(),
            first_lines(&content, &starts)
        ));
    }
    let updated = if req.all {
        content.replace(old.as_str(), &new)
    } else {
        content.replacen(old.as_str(), &new, 1)
    };
    if let Err(e) = atomic_write(&root, &abs, updated.as_bytes()) {
        return ToolOutput::error(format!("cannot write `{raw}`: {e}"));
    }

    let first_line = line_of(&content, starts[0]);
    let mut summary = if starts.len() == 1 {
        format!(
            "Edited `{raw}`: replaced 1 occurrence at line {first_line} ({} → {}).",
            plural(count_lines(&old), "line", "lines"),
            plural(count_lines(&new), "line", "lines")
        )
    } else {
        format!(
            "Edited `{raw}`: replaced {} occurrences (at lines {}).",
            starts.len(),
            first_lines(&content, &starts)
        )
    };
    if crlf {
        summary.push_str(" (The file uses CRLF line endings; they were kept.)");
    }
    // The first replacement sits at the same byte offset in the new text.
    summary.push('\n');
    summary.push_str(snippet(&updated, starts[0], new.len()).trim_end());
    ToolOutput::ok(summary)
}

/// The strings to search and substitute: as given, or with `\n` turned into `\r\n` when the
/// file uses CRLF endings and only that form matches. `None` when neither occurs.
fn choose_variant(content: &str, old: &str, new: &str) -> Option<(String, String, bool)> {
    if content.contains(old) {
        return Some((old.to_owned(), new.to_owned(), false));
    }
    if content.contains("\r\n") && old.contains('\n') && !old.contains("\r\n") {
        let old_crlf = old.replace('\n', "\r\n");
        if content.contains(&old_crlf) {
            let new_crlf = new.replace("\r\n", "\n").replace('\n', "\r\n");
            return Some((old_crlf, new_crlf, true));
        }
    }
    None
}

/// The lines of the first ten occurrences starting at `starts`, comma-separated (`, …` when
/// there are more).
fn first_lines(content: &str, starts: &[usize]) -> String {
    let lines: Vec<String> = starts
        .iter()
        .take(10)
        .map(|&i| line_of(content, i).to_string())
        .collect();
    let more = if starts.len() > 10 { ", …" } else { "" };
    format!("{}{more}", lines.join(", "))
}

/// The 1-based line holding byte `offset`.
fn line_of(content: &str, offset: usize) -> usize {
    content.as_bytes()[..offset]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Numbered lines around the region `[start, start + len)` of `content`.
fn snippet(content: &str, start: usize, len: usize) -> String {
    let lines: Vec<&str> = content.lines().collect();
    if lines.is_empty() {
        return "[the file is now empty]".to_owned();
    }
    let first = line_of(content, start);
    let last = line_of(content, (start + len.saturating_sub(1)).min(content.len()));
    let from = first.saturating_sub(2).max(1);
    let to = (last + 2).min(lines.len());
    let mut out = String::new();
    for (shown, n) in (from..=to).enumerate() {
        if shown == SNIPPET_LINES {
            out.push_str(&format!("[… {} more lines]\n", to - n + 1));
            break;
        }
        let text = lines.get(n - 1).copied().unwrap_or_default();
        out.push_str(&format!(
            "{n:>6}\t{}\n",
            clip_line(text.trim_end_matches('\r'), SNIPPET_LINE_CHARS)
        ));
    }
    out
}

/// Explains that `old` was not found, pointing at a near match when there is one.
fn not_found_message(raw: &str, content: &str, old: &str) -> String {
    let mut msg = format!("`old_string` was not found in `{raw}`.");
    if let Some(offset) = whitespace_insensitive_find(content, old) {
        let line = line_of(content, offset);
        let span = count_lines(old).max(1);
        let excerpt: Vec<String> = content
            .lines()
            .enumerate()
            .skip(line - 1)
            .take(span.min(SNIPPET_LINES))
            .map(|(i, l)| {
                format!(
                    "{:>6}\t{}",
                    i + 1,
                    clip_line(l.trim_end_matches('\r'), SNIPPET_LINE_CHARS)
                )
            })
            .collect();
        msg.push_str(&format!(
            " Text that matches it apart from whitespace (indentation, line breaks or trailing spaces) starts at \
             line {line}:\n{}\nCopy the exact text, whitespace included, into `old_string`.",
            excerpt.join("\n")
        ));
        return msg;
    }
    let first = old.lines().map(str::trim).find(|l| !l.is_empty());
    if let Some(first) = first {
        let hits: Vec<usize> = content
            .lines()
            .enumerate()
            .filter(|(_, l)| l.contains(first))
            .map(|(i, _)| i + 1)
            .take(5)
            .collect();
        if !hits.is_empty() && count_lines(old) > 1 {
            let list: Vec<String> = hits.iter().map(usize::to_string).collect();
            msg.push_str(&format!(
                " Its first line occurs at line(s) {}, but the lines after it differ; `read` that part of the \
                 file and copy the current text.",
                list.join(", ")
            ));
            return msg;
        }
    }
    if old.lines().any(starts_with_line_number) {
        msg.push_str(
            " It looks like it includes the line-number prefixes shown by `read`; leave those out.",
        );
        return msg;
    }
    msg.push_str(" `read` the file to see its current content and copy the text exactly.");
    msg
}

/// Whether `line` starts like a `read` listing line: spaces, digits, a tab.
fn starts_with_line_number(line: &str) -> bool {
    let rest = line.trim_start_matches(' ');
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    digits > 0 && rest[digits..].starts_with('\t')
}

/// Finds `needle` in `haystack` ignoring all whitespace; returns the byte offset in
/// `haystack` where the match starts.
fn whitespace_insensitive_find(haystack: &str, needle: &str) -> Option<usize> {
    let squeezed_needle: String = needle.chars().filter(|c| !c.is_whitespace()).collect();
    if squeezed_needle.is_empty() {
        return None;
    }
    let mut squeezed = String::with_capacity(haystack.len());
    let mut offsets = Vec::with_capacity(haystack.len());
    for (i, c) in haystack.char_indices() {
        if !c.is_whitespace() {
            squeezed.push(c);
            offsets.extend(std::iter::repeat_n(i, c.len_utf8()));
        }
    }
    squeezed
        .find(&squeezed_needle)
        .and_then(|at| offsets.get(at).copied())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_insensitive() {
        let hay = "fn a() {\n    let x = 1;\n}\n";
        assert_eq!(whitespace_insensitive_find(hay, "let x=1;"), Some(13));
        assert_eq!(whitespace_insensitive_find(hay, "let y"), None);
        let msg = not_found_message("f", hay, "  let  x = 1;\n}");
        assert!(msg.contains("starts at line 2"), "{msg}");
        assert!(msg.contains("     2\t    let x = 1;"), "{msg}");
    }

    #[test]
    fn first_line_hint_and_number_prefix_hint() {
        let hay = "a\nb\nc\n";
        let msg = not_found_message("f", hay, "b\nzzz\n");
        assert!(msg.contains("first line occurs at line(s) 2"), "{msg}");
        let msg = not_found_message("f", hay, "     7\tqqq");
        assert!(msg.contains("line-number prefixes"), "{msg}");
    }

    #[test]
    fn crlf_variant() {
        let (old, new, crlf) = choose_variant("a\r\nb\r\n", "a\nb", "x\ny").unwrap();
        assert!(crlf);
        assert_eq!(old, "a\r\nb");
        assert_eq!(new, "x\r\ny");
        assert!(choose_variant("a\r\nb\r\n", "q", "x").is_none());
    }

    #[test]
    fn snippet_shows_context() {
        let text = "1\n2\n3\n4\n5\n6\n7\n";
        let s = snippet(text, 6, 1); // line 4
        assert_eq!(s, "     2\t2\n     3\t3\n     4\t4\n     5\t5\n     6\t6\n");
    }
}
