//! `read`: show a text file with line numbers.

use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use baton_tool::args::{parse_tool_args, schema_for, Count};
use schemars::JsonSchema;
use serde::Deserialize;

use super::fsutil::{human_size, looks_binary, SNIFF_BYTES};
use super::paths::Workspace;
use super::text::{clip_line, plural};
use super::{blocking_small, Tool, ToolContext, ToolOutput};

const USAGE: &str = r#"{"path": "src/main.rs", "offset": 1, "limit": 2000}"#;
/// Lines shown when the call gives no `limit`.
pub(crate) const DEFAULT_LIMIT: u64 = 2000;
/// Characters of one line shown before it is cut.
pub(crate) const MAX_LINE_CHARS: usize = 2000;
/// Bytes of output, line numbers included, before the listing stops.
pub(crate) const MAX_OUTPUT_BYTES: usize = 50 * 1024;
/// Beyond this size the lines after the shown window are not counted.
const COUNT_ALL_LINES_UP_TO: u64 = 256 * 1024 * 1024;

/// What `read` takes; its JSON Schema is the tool's `parameters`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    /// File to read, relative to the working directory (or absolute inside the workspace).
    path: String,
    /// First line to show, 1-based. Default 1.
    offset: Option<Count<1>>,
    #[schemars(description = format!("Number of lines to show. Default {DEFAULT_LIMIT}."))]
    limit: Option<Count<1>>,
}

/// The `read` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadTool;

#[async_trait::async_trait]
impl Tool for ReadTool {
    fn name(&self) -> &'static str {
        "read"
    }

    fn spec(&self) -> baton_protocol::ToolSpec {
        baton_protocol::ToolSpec {
            name: "read".to_owned(),
            description: format!(
                "Read a text file from the workspace. Lines are numbered like `cat -n` (number, tab, text). \
                 Shows up to {DEFAULT_LIMIT} lines from `offset` (1-based, default 1); lines longer than \
                 {MAX_LINE_CHARS} characters are cut, and output stops at {} KiB with a note saying which \
                 `offset` continues it. Binary files and directories are refused (use `ls` for directories). \
                 Paths are relative to the working directory and must stay inside the workspace.",
                MAX_OUTPUT_BYTES / 1024
            ),
            parameters: schema_for::<ReadArgs>(),
        }
    }

    fn read_only(&self) -> bool {
        true
    }

    async fn run(&self, args: serde_json::Value, ctx: &ToolContext) -> ToolOutput {
        let (path, offset, limit) = match parse_tool_args::<ReadArgs>("read", USAGE, args) {
            Ok(a) => (
                a.path,
                a.offset.map_or(1, |c| c.0),
                a.limit.map_or(DEFAULT_LIMIT, |c| c.0),
            ),
            Err(msg) => return ToolOutput::error(msg),
        };
        // A regular file's size, to run a small read on the session's own thread: only a hint
        // (the read itself resolves the path beneath its root and refuses what it must).
        let target = ctx.cwd.join(&path);
        let size = move || {
            std::fs::metadata(&target)
                .ok()
                .filter(std::fs::Metadata::is_file)
                .map(|m| m.len())
        };
        let ctx = ctx.clone();
        let shown = path.clone();
        blocking_small("read", size, move || read_file(&ctx, &path, offset, limit))
            .await
            .with_path(Some(shown))
    }
}

fn read_file(ctx: &ToolContext, raw: &str, offset: u64, limit: u64) -> ToolOutput {
    let ws = match Workspace::new(ctx) {
        Ok(ws) => ws,
        Err(e) => return ToolOutput::error(e.0),
    };
    // A file of one of the session's skills, outside the root, is read beneath its skill's folder.
    let (abs, beneath) = match ws.resolve(raw) {
        Ok(p) => (p, ws.root.clone()),
        Err(e) => match read_root_of(ctx, &ws, raw) {
            Some(found) => found,
            None => return ToolOutput::error(e.0),
        },
    };
    let meta = match fs::metadata(&abs) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return ToolOutput::error(format!(
                "file `{raw}` does not exist{}",
                suggest_siblings(&abs)
            ))
        }
        Err(e) => return ToolOutput::error(format!("cannot read `{raw}`: {e}")),
    };
    if meta.is_dir() {
        return ToolOutput::error(format!(
            "`{raw}` is a directory, not a file; use `ls` to list it"
        ));
    }
    if !meta.is_file() {
        return ToolOutput::error(format!(
            "`{raw}` is not a regular file (a device, socket or pipe); `read` only reads regular files"
        ));
    }
    let file = match super::fsutil::open_read(&beneath, &abs) {
        Ok(f) => f,
        Err(e) => return ToolOutput::error(format!("cannot open `{raw}`: {e}")),
    };
    match render(file, meta.len(), raw, offset, limit) {
        Ok(out) => out,
        Err(e) => ToolOutput::error(format!("error while reading `{raw}`: {e}")),
    }
}

/// The real path of `raw` and the read root it lies in, when it is a file under one of
/// `ctx.read_roots` (each resolved to its real path; the file is then opened beneath it, so no
/// link inside leads out).
fn read_root_of(ctx: &ToolContext, ws: &Workspace, raw: &str) -> Option<(PathBuf, PathBuf)> {
    let given = Path::new(raw);
    let joined = if given.is_absolute() {
        given.to_path_buf()
    } else {
        ws.cwd.join(given)
    };
    let real = fs::canonicalize(&joined).ok()?;
    ctx.read_roots
        .iter()
        .filter_map(|r| fs::canonicalize(r).ok())
        .find(|r| real.starts_with(r))
        .map(|r| (real, r))
}

/// Names in the same directory that the model may have meant, as a sentence to append.
fn suggest_siblings(abs: &Path) -> String {
    let (Some(dir), Some(name)) = (abs.parent(), abs.file_name()) else {
        return String::new();
    };
    let want = name.to_string_lossy().to_lowercase();
    let want_stem = want.split('.').next().unwrap_or_default().to_owned();
    let Ok(entries) = fs::read_dir(dir) else {
        return " (nor does its parent directory)".to_owned();
    };
    let mut close: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| {
            let lower = n.to_lowercase();
            lower == want
                || (!want_stem.is_empty() && lower.split('.').next() == Some(want_stem.as_str()))
        })
        .collect();
    close.sort();
    close.truncate(5);
    if close.is_empty() {
        String::new()
    } else {
        format!("; in the same directory there is: {}", close.join(", "))
    }
}

fn render(
    mut file: fs::File,
    size: u64,
    raw: &str,
    offset: u64,
    limit: u64,
) -> std::io::Result<ToolOutput> {
    let mut sample = Vec::with_capacity(SNIFF_BYTES);
    (&mut file)
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut sample)?;
    let whole = sample.len() < SNIFF_BYTES;
    if looks_binary(&sample, whole) {
        return Ok(ToolOutput::error(format!(
            "`{raw}` is a binary file ({}); `read` shows text only (try `bash` with `file` or `xxd | head`)",
            human_size(size)
        )));
    }
    if size == 0 && whole && sample.is_empty() {
        return Ok(ToolOutput::ok(format!("[`{raw}` is empty]")));
    }

    let mut reader = BufReader::new(std::io::Cursor::new(sample).chain(file));
    let last_wanted = offset.saturating_add(limit - 1);
    let mut out = String::new();
    let mut line = Vec::new();
    let mut n: u64 = 0;
    let mut last_shown: u64 = 0;
    let mut capped = false;
    let mut clipped = false;
    let mut lossy = false;

    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        n += 1;
        if n < offset {
            continue;
        }
        if n > last_wanted || capped {
            break;
        }
        let mut body: &[u8] = &line;
        if body.last() == Some(&b'\n') {
            body = &body[..body.len() - 1];
        }
        if body.last() == Some(&b'\r') {
            body = &body[..body.len() - 1];
        }
        let text = match std::str::from_utf8(body) {
            Ok(s) => std::borrow::Cow::Borrowed(s),
            Err(_) => {
                lossy = true;
                String::from_utf8_lossy(body)
            }
        };
        let shown_text = clip_line(&text, MAX_LINE_CHARS);
        clipped |= shown_text.len() != text.len();
        let entry = format!("{n:>6}\t{shown_text}\n");
        if out.len() + entry.len() > MAX_OUTPUT_BYTES && last_shown > 0 {
            capped = true;
            break;
        }
        out.push_str(&entry);
        last_shown = n;
    }

    // `n` is now the number of the last line read (which may be one past the window).
    // Count the rest so the model knows how far the file goes.
    let mut total = Some(n);
    let stopped_early = last_shown > 0 && (capped || n > last_shown);
    if stopped_early {
        if size <= COUNT_ALL_LINES_UP_TO {
            let mut newlines: u64 = 0;
            let mut last_byte = None;
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let got = reader.read(&mut buf)?;
                if got == 0 {
                    break;
                }
                newlines += buf[..got].iter().filter(|&&b| b == b'\n').count() as u64;
                last_byte = Some(buf[got - 1]);
            }
            // Each newline ends one more line; trailing text without one is a line as well.
            let unterminated = last_byte.is_some_and(|b| b != b'\n');
            total = Some(n + newlines + u64::from(unterminated));
        } else {
            total = None;
        }
    }

    if last_shown == 0 {
        return Ok(ToolOutput::error(format!(
            "offset {offset} is past the end of `{raw}`, which has {}",
            plural(n as usize, "line", "lines")
        )));
    }

    let mut notes = Vec::new();
    if stopped_early {
        let of = match total {
            Some(t) => format!(" of {t}"),
            None => String::new(),
        };
        let why = if capped {
            format!("output capped at {} KiB; ", MAX_OUTPUT_BYTES / 1024)
        } else {
            String::new()
        };
        notes.push(format!(
            "[{why}showed lines {offset}-{last_shown}{of}; continue with offset={}]",
            last_shown + 1
        ));
    }
    if clipped {
        notes.push(format!(
            "[lines longer than {MAX_LINE_CHARS} characters were cut; use `bash` (e.g. `cut -c`) to see them whole]"
        ));
    }
    if lossy {
        notes.push("[some bytes are not valid UTF-8 and are shown as \u{FFFD}]".to_owned());
    }
    if !notes.is_empty() {
        out.push('\n');
        out.push_str(&notes.join("\n"));
    }
    Ok(ToolOutput::ok(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_str(content: &[u8], offset: u64, limit: u64) -> ToolOutput {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("f");
        fs::write(&p, content).unwrap();
        render(
            fs::File::open(&p).unwrap(),
            content.len() as u64,
            "f",
            offset,
            limit,
        )
        .unwrap()
    }

    #[test]
    fn numbering_and_window() {
        let out = read_str(b"a\nb\r\nc\n", 1, 2000);
        assert_eq!(out.output, "     1\ta\n     2\tb\n     3\tc\n");
        let out = read_str(b"a\nb\nc\nd", 2, 2);
        assert_eq!(
            out.output,
            "     2\tb\n     3\tc\n\n[showed lines 2-3 of 4; continue with offset=4]"
        );
        for (content, offset, note) in [
            (
                &b"a\nb\nc\nd\ne"[..],
                1,
                "[showed lines 1-2 of 5; continue with offset=3]",
            ),
            (
                b"a\nb\nc\nd\n",
                2,
                "[showed lines 2-3 of 4; continue with offset=4]",
            ),
        ] {
            let out = read_str(content, offset, 2);
            assert!(out.output.ends_with(note), "{}", out.output);
        }
        let out = read_str(b"a\nb\nc", 3, 10);
        assert_eq!(out.output, "     3\tc\n");
        let out = read_str(b"a\nb\n", 3, 10);
        assert!(out.is_error);
        assert!(out.output.contains("past the end"), "{}", out.output);
        assert!(out.output.contains("2 lines"), "{}", out.output);
    }

    #[test]
    fn window_ending_exactly_at_last_line_has_no_note() {
        let out = read_str(b"a\nb\n", 1, 2);
        assert_eq!(out.output, "     1\ta\n     2\tb\n");
    }

    #[test]
    fn long_lines_and_cap() {
        let long = "x".repeat(MAX_LINE_CHARS + 10);
        let out = read_str(long.as_bytes(), 1, 10);
        assert!(out
            .output
            .contains("[… line truncated, 10 more characters]"));
        assert!(out.output.contains("were cut"));

        let body: String = (0..5000)
            .map(|i| format!("line number {i} with some padding text\n"))
            .collect();
        let out = read_str(body.as_bytes(), 1, 5000);
        assert!(out.output.len() <= MAX_OUTPUT_BYTES + 200);
        assert!(
            out.output.contains("output capped at 50 KiB"),
            "{}",
            &out.output[out.output.len() - 200..]
        );
        assert!(out.output.contains("of 5000; continue with offset="));
    }

    #[test]
    fn binary_and_lossy() {
        let out = read_str(b"abc\0def", 1, 10);
        assert!(out.is_error);
        assert!(
            out.output.contains("binary file (7 bytes)"),
            "{}",
            out.output
        );
        let mut late = "ok\n".repeat(4000).into_bytes();
        late.extend_from_slice(b"bad \xff byte\n");
        let out = read_str(&late, 4001, 1);
        assert!(!out.is_error);
        assert!(out.output.contains("bad \u{FFFD} byte"));
        assert!(out.output.contains("not valid UTF-8"));
    }

    #[test]
    fn empty_file() {
        let out = read_str(b"", 1, 10);
        assert!(!out.is_error);
        assert!(out.output.contains("empty"));
    }
}
