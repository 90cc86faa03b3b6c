//! Text that baton hands to a model, writes into evidence or shows on a terminal.
//!
//! Three concerns live here and nowhere else:
//!
//! - **Bounding.** [`truncate`] cuts a text to a byte budget, keeping its head, its tail or both
//!   ends ([`Keep`]), always on character boundaries, and puts one marker where bytes were left
//!   out: `[… N bytes omitted …]` ([`omitted_marker`]). `N` is exactly the number of bytes of the
//!   input that are not in the result, and the result, marker included, fits the budget.
//!   [`ByteSink`] does the same for a byte stream of unknown length without holding it.
//! - **Terminal safety.** [`sanitize_terminal`] replaces every control character that could drive
//!   a terminal (C0 and C1 controls, DEL, and the Unicode line and paragraph separators) with
//!   U+FFFD, keeping newlines and tabs; [`sanitize_line`] also replaces those, for one-line fields.
//!   Anything a child process, a model or git wrote goes through one of them before it is printed.
//! - **Secrets.** [`redact::Redactor`] replaces every known provider key with `[REDACTED]`; the
//!   process installs one ([`redact::install`]) and every writer passes its text through
//!   [`redact::redact`].
//! - **Input files.** [`input::read_input`] reads a file a person or a config names (units,
//!   task entries, roles, cassettes, config) as text, refusing anything that is not a regular
//!   file or holds more than [`input::INPUT_CAP`] (16 MiB).

/// `println!` with known provider keys written as `[REDACTED]` (see [`redact`]): every line baton
/// prints on stdout goes through it. Brought into a crate with `#[macro_use] extern crate
/// baton_text;`.
#[macro_export]
macro_rules! outln {
    () => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock());
    }};
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let text = format!($($arg)*);
        let text = $crate::redact::redact(&text);
        let _ = writeln!(std::io::stdout().lock(), "{}", $crate::escape_controls(&text));
    }};
}

/// `eprintln!` with known provider keys written as `[REDACTED]`: all of baton's own messages on
/// stderr go through it.
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let text = format!($($arg)*);
        let text = $crate::redact::redact(&text);
        let _ = writeln!(std::io::stderr().lock(), "{}", $crate::escape_controls(&text));
    }};
}

use std::borrow::Cow;
use std::collections::VecDeque;

pub mod input;
pub mod redact;

/// Which part of a text [`truncate`] keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// The start: for answers and documents, where the beginning explains the rest.
    Head,
    /// The end: for logs and stderr, where the last lines say how it ended.
    Tail,
    /// Both ends, `head_percent` of the room for the start and the rest for the end: for command
    /// output, where the start names the command and the end its result. Values above 100 count
    /// as 100.
    Ends { head_percent: u8 },
}

/// The one marker that stands where bytes were left out.
pub fn omitted_marker(omitted: usize) -> String {
    format!("[… {omitted} bytes omitted …]")
}

/// The largest index `<= at` that is a character boundary of `s` (`s.len()` when `at` is past it).
pub fn floor_char_boundary(s: &str, at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    let mut i = at;
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The smallest index `>= at` that is a character boundary of `s` (`s.len()` when `at` is past it).
pub fn ceil_char_boundary(s: &str, at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    let mut i = at;
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// `text` if it fits in `max` bytes; otherwise the part `keep` names, with [`omitted_marker`] on
/// its own line where the rest was.
///
/// The result is at most `max` bytes long, marker and line breaks included, unless `max` is too
/// small to hold even the marker: then the marker alone is returned. The marker's count is the
/// exact number of bytes of `text` missing from the result. Cuts fall on character boundaries.
pub fn truncate(text: &str, max: usize, keep: Keep) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    // The marker can only get shorter than this bound, as fewer bytes than the whole are omitted.
    let marker_bound = omitted_marker(text.len()).len();
    let breaks = match keep {
        Keep::Head | Keep::Tail => 1,
        Keep::Ends { .. } => 2,
    };
    let room = max.saturating_sub(marker_bound + breaks);
    let (head_room, tail_room) = match keep {
        Keep::Head => (room, 0),
        Keep::Tail => (0, room),
        Keep::Ends { head_percent } => {
            let head = room * usize::from(head_percent.min(100)) / 100;
            (head, room - head)
        }
    };
    let head_end = floor_char_boundary(text, head_room);
    let tail_start = ceil_char_boundary(text, text.len() - tail_room).max(head_end);
    let head = &text[..head_end];
    let tail = &text[tail_start..];
    let marker = omitted_marker(text.len() - head.len() - tail.len());
    Cow::Owned(join_around_marker(head, &marker, tail))
}

/// `head`, the marker and `tail`, each on its own line (no line break is added next to an empty
/// part or where one is already there).
fn join_around_marker(head: &str, marker: &str, tail: &str) -> String {
    let mut out = String::with_capacity(head.len() + marker.len() + tail.len() + 2);
    out.push_str(head);
    if !head.is_empty() && !head.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(marker);
    if !tail.is_empty() && !tail.starts_with('\n') {
        out.push('\n');
    }
    out.push_str(tail);
    out
}

/// How far from a cut [`ByteSink::render`] looks for a line break to cut at instead.
const LINE_SNAP: usize = 1024;

/// Keeps the first `head_cap` and the last `tail_cap` bytes of a stream and counts what falls
/// between them, in memory bounded by the two caps whatever the stream's length.
///
/// `ByteSink::new(0, n)` keeps a tail only, `ByteSink::new(n, 0)` a head only.
#[derive(Debug, Clone)]
pub struct ByteSink {
    head_cap: usize,
    tail_cap: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
}

impl ByteSink {
    pub fn new(head_cap: usize, tail_cap: usize) -> Self {
        ByteSink {
            head_cap,
            tail_cap,
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
        }
    }

    /// Adds bytes from the stream.
    pub fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if self.head.len() < self.head_cap {
            let take = (self.head_cap - self.head.len()).min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if self.tail_cap == 0 {
            return;
        }
        if bytes.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.tail_cap..]);
        } else {
            let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_cap);
            self.tail.drain(..overflow);
            self.tail.extend(bytes);
        }
    }

    /// Every byte pushed so far, kept or not.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Whether bytes were dropped between the head and the tail.
    pub fn truncated(&self) -> bool {
        self.total > (self.head.len() + self.tail.len()) as u64
    }

    /// The kept text with [`omitted_marker`] where bytes were dropped. When a line break lies
    /// within 1 KiB of a cut, the cut moves to it so the marker sits on its own line; a cut never
    /// splits a UTF-8 sequence. The count covers every byte of the stream not in the result.
    /// Invalid UTF-8 in the kept bytes is replaced with U+FFFD.
    pub fn render(&self) -> String {
        let (tail_a, tail_b) = self.tail.as_slices();
        let mut tail = Vec::with_capacity(self.tail.len());
        tail.extend_from_slice(tail_a);
        tail.extend_from_slice(tail_b);
        if !self.truncated() {
            let mut all = self.head.clone();
            all.extend_from_slice(&tail);
            return String::from_utf8_lossy(&all).into_owned();
        }
        let head = snap_head(&self.head);
        let tail = snap_tail(&tail);
        let omitted = self.total - (head.len() + tail.len()) as u64;
        let marker = omitted_marker(usize::try_from(omitted).unwrap_or(usize::MAX));
        join_around_marker(
            &String::from_utf8_lossy(head),
            &marker,
            &String::from_utf8_lossy(tail),
        )
    }
}

/// The head up to a line break near its end, else up to its last complete UTF-8 sequence.
fn snap_head(head: &[u8]) -> &[u8] {
    let near = head.len().saturating_sub(LINE_SNAP);
    match head.iter().rposition(|&b| b == b'\n') {
        Some(i) if i >= near => &head[..=i],
        _ => &head[..complete_utf8_prefix(head)],
    }
}

/// The tail from just after a line break near its start, else from its first character start.
fn snap_tail(tail: &[u8]) -> &[u8] {
    match tail.iter().take(LINE_SNAP).position(|&b| b == b'\n') {
        Some(i) => &tail[i + 1..],
        None => {
            let skip = tail
                .iter()
                .take(3)
                .take_while(|b| (**b & 0xC0) == 0x80)
                .count();
            &tail[skip..]
        }
    }
}

/// The length of `bytes` without a UTF-8 sequence cut off at its end.
fn complete_utf8_prefix(bytes: &[u8]) -> usize {
    // A sequence is at most 4 bytes: look for its lead byte among the last 3.
    for back in 1..=3.min(bytes.len()) {
        let b = bytes[bytes.len() - back];
        if b & 0xC0 == 0x80 {
            continue;
        }
        let need = match b {
            0x00..=0x7f => 1,
            0xc0..=0xdf => 2,
            0xe0..=0xef => 3,
            _ => 4,
        };
        return if need > back {
            bytes.len() - back
        } else {
            bytes.len()
        };
    }
    bytes.len()
}

/// Whether `c` could move a terminal's cursor, change its state or break a line: a C0 or C1
/// control (newline and tab included), DEL, or U+2028 / U+2029.
/// A hint for a YAML parse error a person made by hand: most come from a plain value holding
/// `: ` or ` #`, or starting with a character YAML reserves, which quoting fixes. `None` for
/// other errors.
pub fn yaml_quoting_hint(message: &str) -> Option<&'static str> {
    const SHAPES: [&str; 5] = [
        "mapping values are not allowed",
        "did not find expected",
        "found character that cannot start any token",
        "could not find expected ':'",
        "block sequence entries are not allowed",
    ];
    SHAPES.iter().any(|s| message.contains(s)).then_some(
        "a value holding `: ` or ` #`, or starting with `*`, `&`, `!`, `|`, `>`, `%`, `@`, `[` or `{`, must be quoted, e.g. description: \"Reviews code: finds bugs\"",
    )
}

pub fn is_control(c: char) -> bool {
    c.is_control() || c == '\u{2028}' || c == '\u{2029}'
}

/// Whether `text` holds any character [`is_control`] names (newlines and tabs count).
pub fn has_controls(text: &str) -> bool {
    text.chars().any(is_control)
}

/// `text` fit for a terminal: every [`is_control`] character but newline and tab becomes U+FFFD,
/// so no escape sequence survives. Borrowed when there was nothing to replace.
pub fn sanitize_terminal(text: &str) -> Cow<'_, str> {
    replace_controls(text, |c| c == '\n' || c == '\t')
}

/// `text` safe to write to a terminal or a pipe that may end in one: every [`is_control`]
/// character but newline and tab is written as a visible escape (`\u001b`, `\r`, `\u2028`), so
/// no escape sequence (a clipboard write, a cleared screen, a hidden line) reaches the terminal
/// and the reader sees that one was there. The escapes are JSON's: a `--json` line (where
/// serde leaves DEL, C1 controls and U+2028 raw) stays valid JSON with the same value.
/// Borrowed when there was nothing to escape. Every line baton prints through [`outln!`] and
/// [`errln!`] goes through it.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    let bad = |c: char| is_control(c) && c != '\n' && c != '\t';
    if !text.chars().any(bad) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if !bad(c) => out.push(c),
            '\r' => out.push_str("\\r"),
            c => out.push_str(&format!("\\u{:04x}", c as u32)),
        }
    }
    Cow::Owned(out)
}

/// At most `cols` terminal columns of `text` (one line, already sanitised): cut on a character
/// boundary and ended with `…` when it is wider. Wide characters (CJK, most emoji) count two
/// columns, combining marks none.
pub fn fit_columns(text: &str, cols: usize) -> Cow<'_, str> {
    use unicode_width::UnicodeWidthChar;
    let width = |c: char| c.width().unwrap_or(0);
    if text.chars().map(width).sum::<usize>() <= cols {
        return Cow::Borrowed(text);
    }
    if cols == 0 {
        return Cow::Borrowed("");
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = width(c);
        // Leave one column for the ellipsis.
        if used + w > cols - 1 {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    Cow::Owned(out)
}

/// `text` fit for one line of a terminal: every [`is_control`] character, newline and tab
/// included, becomes U+FFFD.
pub fn sanitize_line(text: &str) -> Cow<'_, str> {
    replace_controls(text, |_| false)
}

fn replace_controls(text: &str, allowed: impl Fn(char) -> bool) -> Cow<'_, str> {
    let bad = |c: char| is_control(c) && !allowed(c);
    if !text.chars().any(bad) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(
        text.chars()
            .map(|c| if bad(c) { '\u{FFFD}' } else { c })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn controls_are_escaped_visibly_but_lines_and_tabs_stay() {
        let evil = "a\x1b]52;c;SGVsbG8=\x07b\r\x1b[2J\tc\n\u{2028}d";
        assert_eq!(
            escape_controls(evil),
            "a\\u001b]52;c;SGVsbG8=\\u0007b\\r\\u001b[2J\tc\n\\u2028d"
        );
        // A JSON line keeps its value: serde leaves DEL, C1 and U+2028 raw.
        let value = "x\u{9b}2J\u{7f}\u{2028}y";
        let line = serde_json::to_string(&value).unwrap();
        let escaped = escape_controls(&line);
        assert!(!has_controls(&escaped), "{escaped}");
        assert_eq!(serde_json::from_str::<String>(&escaped).unwrap(), value);
        assert!(matches!(escape_controls("plain\ttext\n"), Cow::Borrowed(_)));
    }

    #[test]
    fn fit_columns_counts_terminal_columns() {
        assert_eq!(fit_columns("abc", 3), "abc");
        assert_eq!(fit_columns("abcdef", 4), "abc…");
        // Two columns each: three fit in 7 with the ellipsis.
        assert_eq!(fit_columns("日本語テキスト", 7), "日本語…");
        assert_eq!(fit_columns("●  x", 1), "…");
        assert_eq!(fit_columns("abc", 0), "");
    }
    use pretty_assertions::assert_eq;

    /// The count a marker in `out` states, and `out` without the marker and the line breaks
    /// `join_around_marker` added.
    fn parts(out: &str) -> (usize, String) {
        let start = out.find("[… ").unwrap();
        let end = out.find(" bytes omitted …]").unwrap();
        let n: usize = out[start + "[… ".len()..end].parse().unwrap();
        let close = end + " bytes omitted …]".len();
        let head = out[..start].strip_suffix('\n').unwrap_or(&out[..start]);
        let tail = out[close..].strip_prefix('\n').unwrap_or(&out[close..]);
        (n, format!("{head}{tail}"))
    }

    #[test]
    fn short_text_is_borrowed_unchanged() {
        assert!(matches!(
            truncate("abc", 3, Keep::Head),
            Cow::Borrowed("abc")
        ));
        assert_eq!(truncate("", 0, Keep::Tail), "");
    }

    #[test]
    fn each_policy_keeps_its_part() {
        let text: String = (0..200)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let head = truncate(&text, 60, Keep::Head);
        assert!(head.starts_with("abcdefghij"), "{head}");
        assert!(head.ends_with(" bytes omitted …]"), "{head}");
        let tail = truncate(&text, 60, Keep::Tail);
        assert!(tail.starts_with("[… "), "{tail}");
        assert!(text.ends_with(tail.rsplit('\n').next().unwrap()));
        let ends = truncate(&text, 80, Keep::Ends { head_percent: 75 });
        let (n, kept) = parts(&ends);
        assert!(ends.starts_with("abc"), "{ends}");
        assert!(ends.ends_with(&text[text.len() - 5..]), "{ends}");
        assert_eq!(n, text.len() - kept.len());
    }

    #[test]
    fn result_fits_and_count_is_exact_for_every_budget() {
        // Multi-byte characters everywhere, so every cut has to find a boundary.
        let text = "é日本語🙂x".repeat(40);
        for keep in [Keep::Head, Keep::Tail, Keep::Ends { head_percent: 25 }] {
            for max in 0..text.len() {
                let out = truncate(&text, max, keep);
                let (n, kept) = parts(&out);
                assert_eq!(n, text.len() - kept.len(), "{keep:?} max {max}: {out}");
                let marker_only = omitted_marker(text.len()).len();
                if max >= marker_only + 2 {
                    assert!(out.len() <= max, "{keep:?} max {max}: {} bytes", out.len());
                }
                match keep {
                    Keep::Head => assert!(text.starts_with(&kept)),
                    Keep::Tail => assert!(text.ends_with(&kept)),
                    Keep::Ends { .. } => {}
                }
            }
        }
    }

    #[test]
    fn tiny_budget_gives_the_marker_alone() {
        assert_eq!(
            truncate("0123456789", 3, Keep::Head),
            "[… 10 bytes omitted …]"
        );
    }

    #[test]
    fn char_boundaries() {
        let s = "aé";
        assert_eq!(floor_char_boundary(s, 2), 1);
        assert_eq!(ceil_char_boundary(s, 2), 3);
        assert_eq!(floor_char_boundary(s, 99), 3);
        assert_eq!(ceil_char_boundary(s, 99), 3);
    }

    #[test]
    fn sink_keeps_both_ends_and_counts_exactly() {
        let mut sink = ByteSink::new(10, 10);
        for _ in 0..100 {
            sink.push(b"0123456789");
        }
        assert_eq!(sink.total(), 1000);
        assert!(sink.truncated());
        let out = sink.render();
        assert_eq!(out, "0123456789\n[… 980 bytes omitted …]\n0123456789");
    }

    #[test]
    fn sink_without_overflow_is_the_stream() {
        let mut sink = ByteSink::new(4, 4);
        sink.push(b"abc");
        sink.push(b"defgh");
        assert!(!sink.truncated());
        assert_eq!(sink.render(), "abcdefgh");
    }

    #[test]
    fn sink_cuts_at_lines_and_counts_what_the_snap_dropped() {
        let mut sink = ByteSink::new(8, 8);
        sink.push(b"one\ntwo-three\n");
        sink.push(&[b'x'; 100]);
        sink.push(b"\nfour\nfive");
        // The head "one\ntwo-" snaps to "one\n", the tail "our\nfive" past its first break.
        let out = sink.render();
        let kept = "one\nfive".len() as u64;
        assert_eq!(
            out,
            format!("one\n[… {} bytes omitted …]\nfive", sink.total() - kept)
        );
    }

    #[test]
    fn sink_never_splits_a_character() {
        let text = "日本語".repeat(50);
        let mut sink = ByteSink::new(7, 0);
        sink.push(text.as_bytes());
        let out = sink.render();
        assert!(!out.contains('\u{FFFD}'), "{out}");
        let (n, kept) = parts(&out);
        assert_eq!(kept, "日本");
        assert_eq!(n, text.len() - kept.len());
        let mut tail = ByteSink::new(0, 7);
        tail.push(text.as_bytes());
        let out = tail.render();
        assert!(!out.contains('\u{FFFD}'), "{out}");
        let (n, kept) = parts(&out);
        assert_eq!(kept, "本語");
        assert_eq!(n, text.len() - kept.len());
    }

    #[test]
    fn terminal_controls_are_replaced() {
        let hostile = "ok\x1b[2J\x07bell\u{9b}31m\u{2028}x\r\ny\tz\x7f";
        assert_eq!(
            sanitize_terminal(hostile),
            "ok\u{FFFD}[2J\u{FFFD}bell\u{FFFD}31m\u{FFFD}x\u{FFFD}\ny\tz\u{FFFD}"
        );
        assert_eq!(sanitize_line("a\nb\tc"), "a\u{FFFD}b\u{FFFD}c");
        assert!(matches!(sanitize_terminal("añ 日本\n\t"), Cow::Borrowed(_)));
        for bad in ["\x1b", "\u{85}", "\u{2029}", "\n", "\0"] {
            assert!(has_controls(bad), "{bad:?}");
        }
        assert!(!has_controls("src/main.rs añ 日本"));
    }
}
