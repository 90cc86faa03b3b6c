//! The bounds the executor puts on what a child may hand back: the shared output budget, the
//! stderr tail, the line splitter that never buffers more than one event line, the checks that keep
//! terminal controls out of activity events, and a scanner that reads fields from the start of a
//! JSON line too long to parse.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::types::{Activity, DEFAULT_OUTPUT_CAP, MAX_ACTIVITY_TEXT, MAX_EVENT_LINE};

/// How many bytes of an over-long line are kept for salvaging. A JSON string byte can take up to
/// six bytes of source (`\u0000`), so this holds two maximal activity fields plus the keys around them.
pub const MAX_SALVAGE_PREFIX: usize = 2 * MAX_ACTIVITY_TEXT * 6 + 1024;

/// The default bound on a child's stderr: its last 16 KiB are kept.
pub const STDERR_TAIL: usize = 16 * 1024;

// ------------------------------------------------------------------------------------------------
// Output budget

/// The assistant-visible output allowed for one delegate call, shared by all of its children.
///
/// [`OutputBudget::take`] hands back a text whole while the budget lasts. The text that crosses the
/// budget is cut (on a character boundary) and followed by the marker
/// `[… N bytes omitted …]` (the one marker of `baton_text`); after that every text is replaced by the marker alone. The
/// kept bytes of all texts together never exceed the cap; the markers come on top of it.
/// Thread-safe: share it by reference or in an `Arc`.
#[derive(Debug)]
pub struct OutputBudget {
    cap: usize,
    used: AtomicUsize,
}

impl Default for OutputBudget {
    fn default() -> Self {
        OutputBudget::new(DEFAULT_OUTPUT_CAP)
    }
}

impl OutputBudget {
    pub fn new(cap: usize) -> Self {
        OutputBudget {
            cap,
            used: AtomicUsize::new(0),
        }
    }

    pub fn cap(&self) -> usize {
        self.cap
    }

    /// Bytes still available.
    pub fn remaining(&self) -> usize {
        self.cap.saturating_sub(self.used.load(Ordering::Acquire))
    }

    /// The text, or its truncation with the marker once the budget is spent.
    pub fn take(&self, text: &str) -> String {
        self.take_with_omitted(text, 0)
    }

    /// Like [`OutputBudget::take`] for a text of which `omitted` further bytes were already dropped
    /// before it got here; those count in the marker, which is then always added.
    pub fn take_with_omitted(&self, text: &str, omitted: usize) -> String {
        self.take_counted(text, omitted).0
    }

    /// Spends the budget on an output an earlier budget already bounded: `rendered` as that
    /// budget's [`OutputBudget::take_counted`] returned it, `dropped` its count. The earlier
    /// marker is replaced, so the one marker left counts every byte cut by either budget.
    pub fn retake(&self, rendered: &str, dropped: usize) -> (String, usize) {
        let kept = kept_part(rendered, dropped);
        self.take_counted(kept, dropped)
    }

    /// [`OutputBudget::take_with_omitted`], and the number of bytes it states as omitted (0 when
    /// the text passed whole). The marker stands on a line of its own after the kept text.
    pub fn take_counted(&self, text: &str, omitted: usize) -> (String, usize) {
        let mut granted = 0;
        // Reserve the largest char-aligned prefix that fits, atomically.
        let _ = self
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                let room = self.cap.saturating_sub(used);
                granted = baton_text::floor_char_boundary(text, text.len().min(room));
                Some(used + granted)
            });
        let dropped = text.len() - granted + omitted;
        if dropped == 0 {
            return (text.to_string(), 0);
        }
        let kept = &text[..granted];
        let marker = baton_text::omitted_marker(dropped);
        // Always a separator before a kept text's marker, so the kept part can be told exactly.
        let rendered = if kept.is_empty() {
            marker
        } else {
            format!("{kept}\n{marker}")
        };
        (rendered, dropped)
    }
}

/// The kept text of an output rendered by [`OutputBudget::take_counted`] with `dropped` bytes
/// omitted (the whole text when nothing was).
fn kept_part(rendered: &str, dropped: usize) -> &str {
    if dropped == 0 {
        return rendered;
    }
    let marker = baton_text::omitted_marker(dropped);
    match rendered.strip_suffix(marker.as_str()) {
        Some("") => "",
        Some(rest) => rest.strip_suffix('\n').unwrap_or(rest),
        None => rendered,
    }
}

// ------------------------------------------------------------------------------------------------
// Line splitting

/// One piece of a child's stdout, as the [`LineSplitter`] hands it out.
#[derive(Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    /// A complete line, without its `\n` (and without a `\r` before it).
    Line(&'a [u8]),
    /// A line longer than the limit: its first bytes (at most [`MAX_SALVAGE_PREFIX`]) and its
    /// full length. The rest was never buffered.
    Oversized { prefix: &'a [u8], len: usize },
}

/// Splits a byte stream into lines on `\n` without ever holding more than one line of at most
/// `max_line` bytes; longer lines are reported as [`Piece::Oversized`] with only a prefix kept.
#[derive(Debug)]
pub struct LineSplitter {
    max_line: usize,
    keep_prefix: usize,
    buf: Vec<u8>,
    /// Inside a line that is already too long: `buf` holds its prefix, `skipped_len` its length.
    skipping: bool,
    skipped_len: usize,
}

impl Default for LineSplitter {
    fn default() -> Self {
        LineSplitter::new(MAX_EVENT_LINE)
    }
}

impl LineSplitter {
    pub fn new(max_line: usize) -> Self {
        LineSplitter {
            max_line,
            keep_prefix: MAX_SALVAGE_PREFIX.min(max_line),
            buf: Vec::new(),
            skipping: false,
            skipped_len: 0,
        }
    }

    /// Feeds the next chunk; `emit` receives every line the chunk completes, in order.
    pub fn push(&mut self, mut chunk: &[u8], emit: &mut dyn FnMut(Piece<'_>)) {
        while !chunk.is_empty() {
            let Some(nl) = memchr::memchr(b'\n', chunk) else {
                self.absorb(chunk);
                return;
            };
            let (part, rest) = (&chunk[..nl], &chunk[nl + 1..]);
            chunk = rest;
            if !self.skipping && self.buf.is_empty() && part.len() <= self.max_line {
                // The common case: the whole line is inside this chunk.
                emit(Piece::Line(trim_cr(part)));
                continue;
            }
            self.absorb(part);
            if self.skipping {
                emit(Piece::Oversized {
                    prefix: &self.buf,
                    len: self.skipped_len,
                });
            } else {
                emit(Piece::Line(trim_cr(&self.buf)));
            }
            self.buf.clear();
            self.skipping = false;
            self.skipped_len = 0;
        }
    }

    /// Adds bytes of an unfinished line, switching to skipping once it is too long.
    fn absorb(&mut self, part: &[u8]) {
        if self.skipping {
            self.skipped_len += part.len();
            return;
        }
        if self.buf.len() + part.len() <= self.max_line {
            self.buf.extend_from_slice(part);
            return;
        }
        self.skipping = true;
        self.skipped_len = self.buf.len() + part.len();
        if self.buf.len() > self.keep_prefix {
            self.buf.truncate(self.keep_prefix);
        } else {
            let room = self.keep_prefix - self.buf.len();
            self.buf.extend_from_slice(&part[..room.min(part.len())]);
        }
    }

    /// At end of stream: the length of an unterminated last line, which is discarded.
    pub fn finish(&mut self) -> Option<usize> {
        let len = if self.skipping {
            self.skipped_len
        } else {
            self.buf.len()
        };
        self.buf.clear();
        self.skipping = false;
        self.skipped_len = 0;
        (len > 0).then_some(len)
    }
}

fn trim_cr(line: &[u8]) -> &[u8] {
    match line.split_last() {
        Some((b'\r', rest)) => rest,
        _ => line,
    }
}

// ------------------------------------------------------------------------------------------------
// Activity field checks

use baton_text::has_controls as has_terminal_controls;

/// A call id or tool name fit to show: not blank, at most [`MAX_ACTIVITY_TEXT`] bytes, no controls.
pub(crate) fn activity_text_ok(text: &str) -> bool {
    !text.trim().is_empty() && text.len() <= MAX_ACTIVITY_TEXT && !has_terminal_controls(text)
}

/// A tool-start event, or none when its id or name is unfit or its path too long. A path that is
/// blank or holds terminal controls is left out of an otherwise valid event.
pub(crate) fn tool_start(call_id: &str, tool: &str, path: Option<&str>) -> Option<Activity> {
    if !activity_text_ok(call_id) || !activity_text_ok(tool) {
        return None;
    }
    if path.is_some_and(|p| p.len() > MAX_ACTIVITY_TEXT) {
        return None;
    }
    let path = path
        .filter(|p| !p.trim().is_empty() && !has_terminal_controls(p))
        .map(str::to_string);
    Some(Activity::ToolStart {
        call_id: call_id.to_string(),
        tool: tool.to_string(),
        path,
    })
}

/// A tool-end event, or none when its id or name is unfit.
pub(crate) fn tool_end(call_id: &str, tool: &str, is_error: bool) -> Option<Activity> {
    if !activity_text_ok(call_id) || !activity_text_ok(tool) {
        return None;
    }
    Some(Activity::ToolEnd {
        call_id: call_id.to_string(),
        tool: tool.to_string(),
        is_error,
    })
}

// ------------------------------------------------------------------------------------------------
// Prefix scanning

/// One step of the path to a value inside a JSON document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seg {
    Key(String),
    Index(usize),
}

/// A string value found in a JSON prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    pub path: Vec<Seg>,
    pub value: String,
    /// False when the prefix ended inside this string: `value` is only its beginning.
    pub complete: bool,
}

impl Found {
    /// True when the path is exactly these keys (indices match `"#"`).
    pub fn at(&self, keys: &[&str]) -> bool {
        self.path.len() == keys.len()
            && self.path.iter().zip(keys).all(|(seg, key)| match seg {
                Seg::Key(k) => k == key,
                Seg::Index(_) => *key == "#",
            })
    }
}

/// The string values (with their paths) of a JSON text that may be cut off anywhere, up to
/// `max_depth` levels deep, in document order. Scanning stops at the cut or at the first syntax
/// error; what was found before stays. Strings inside the cut are reported incomplete.
pub(crate) fn scan_prefix(text: &[u8], max_depth: usize) -> Vec<Found> {
    let mut scanner = Scanner {
        text,
        pos: 0,
        max_depth,
        path: Vec::new(),
        found: Vec::new(),
    };
    let _ = scanner.value(0);
    scanner.found
}

struct Stop;

struct Scanner<'a> {
    text: &'a [u8],
    pos: usize,
    max_depth: usize,
    path: Vec<Seg>,
    found: Vec<Found>,
}

/// Nesting beyond this ends the scan (it guards the recursion, not the reported depth).
const SCAN_NESTING: usize = 64;

impl Scanner<'_> {
    fn ws(&mut self) {
        while self
            .text
            .get(self.pos)
            .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Result<u8, Stop> {
        self.ws();
        self.text.get(self.pos).copied().ok_or(Stop)
    }

    fn value(&mut self, depth: usize) -> Result<(), Stop> {
        if depth > SCAN_NESTING {
            return Err(Stop);
        }
        match self.peek()? {
            b'{' => {
                self.pos += 1;
                if self.peek()? == b'}' {
                    self.pos += 1;
                    return Ok(());
                }
                loop {
                    if self.peek()? != b'"' {
                        return Err(Stop);
                    }
                    let (key, complete) = self.string();
                    if !complete {
                        return Err(Stop);
                    }
                    if self.peek()? != b':' {
                        return Err(Stop);
                    }
                    self.pos += 1;
                    self.path.push(Seg::Key(key));
                    let r = self.value(depth + 1);
                    self.path.pop();
                    r?;
                    match self.peek()? {
                        b',' => self.pos += 1,
                        b'}' => {
                            self.pos += 1;
                            return Ok(());
                        }
                        _ => return Err(Stop),
                    }
                }
            }
            b'[' => {
                self.pos += 1;
                if self.peek()? == b']' {
                    self.pos += 1;
                    return Ok(());
                }
                let mut index = 0;
                loop {
                    self.path.push(Seg::Index(index));
                    let r = self.value(depth + 1);
                    self.path.pop();
                    r?;
                    index += 1;
                    match self.peek()? {
                        b',' => self.pos += 1,
                        b']' => {
                            self.pos += 1;
                            return Ok(());
                        }
                        _ => return Err(Stop),
                    }
                }
            }
            b'"' => {
                let (value, complete) = self.string();
                if depth <= self.max_depth {
                    self.found.push(Found {
                        path: self.path.clone(),
                        value,
                        complete,
                    });
                }
                if complete {
                    Ok(())
                } else {
                    Err(Stop)
                }
            }
            _ => {
                // A number, true, false or null: skip to the next delimiter.
                let start = self.pos;
                while self.text.get(self.pos).is_some_and(|b| {
                    !matches!(b, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t')
                }) {
                    self.pos += 1;
                }
                if self.pos == start || self.pos >= self.text.len() {
                    return Err(Stop);
                }
                Ok(())
            }
        }
    }

    /// Reads a string starting at its opening quote; returns its decoded text and whether it closed.
    fn string(&mut self) -> (String, bool) {
        self.pos += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let Some(&b) = self.text.get(self.pos) else {
                return (lossy_prefix(out), false);
            };
            match b {
                b'"' => {
                    self.pos += 1;
                    return (lossy_prefix(out), true);
                }
                b'\\' => {
                    let Some(&e) = self.text.get(self.pos + 1) else {
                        return (lossy_prefix(out), false);
                    };
                    self.pos += 2;
                    match e {
                        b'"' => out.push(b'"'),
                        b'\\' => out.push(b'\\'),
                        b'/' => out.push(b'/'),
                        b'b' => out.push(0x08),
                        b'f' => out.push(0x0c),
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'u' => {
                            let Some(first) = self.hex4() else {
                                return (lossy_prefix(out), false);
                            };
                            let code = if (0xD800..0xDC00).contains(&first)
                                && self.text.get(self.pos) == Some(&b'\\')
                                && self.text.get(self.pos + 1) == Some(&b'u')
                            {
                                self.pos += 2;
                                let Some(second) = self.hex4() else {
                                    return (lossy_prefix(out), false);
                                };
                                0x10000
                                    + ((first - 0xD800) << 10)
                                    + (second.wrapping_sub(0xDC00) & 0x3FF)
                            } else {
                                first
                            };
                            let c = char::from_u32(code).unwrap_or('\u{FFFD}');
                            let mut tmp = [0u8; 4];
                            out.extend_from_slice(c.encode_utf8(&mut tmp).as_bytes());
                        }
                        _ => out.push(e),
                    }
                }
                _ => {
                    out.push(b);
                    self.pos += 1;
                }
            }
        }
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.text.get(self.pos..self.pos + 4)?;
        let text = std::str::from_utf8(digits).ok()?;
        let v = u32::from_str_radix(text, 16).ok()?;
        self.pos += 4;
        Some(v)
    }
}

/// Decodes bytes that may end inside a UTF-8 sequence, dropping such an unfinished tail; other
/// invalid bytes become U+FFFD.
fn lossy_prefix(bytes: Vec<u8>) -> String {
    match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) if e.utf8_error().error_len().is_none() => {
            let valid = e.utf8_error().valid_up_to();
            let mut bytes = e.into_bytes();
            bytes.truncate(valid);
            String::from_utf8_lossy(&bytes).into_owned()
        }
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn budget_passes_text_until_spent_then_marks() {
        let budget = OutputBudget::new(10);
        assert_eq!(budget.take("hello"), "hello");
        assert_eq!(budget.remaining(), 5);
        assert_eq!(budget.take("world, again"), "world\n[… 7 bytes omitted …]");
        assert_eq!(budget.take("more"), "[… 4 bytes omitted …]");
        assert_eq!(budget.take(""), "");
    }

    #[test]
    fn budget_cuts_on_char_boundaries_and_counts_earlier_drops() {
        let budget = OutputBudget::new(4);
        // "é" is two bytes: 4 bytes hold "aé" plus one byte that cannot start a char.
        assert_eq!(budget.take("aébc"), "aéb\n[… 1 bytes omitted …]");
        let budget = OutputBudget::new(100);
        assert_eq!(
            budget.take_with_omitted("abc\n", 7),
            "abc\n\n[… 7 bytes omitted …]"
        );
    }

    #[test]
    fn a_second_budget_states_every_byte_cut() {
        // A child's 5,000,000 bytes, bounded alone to 100, then again in a call whose budget
        // another entry has partly spent.
        let text = "x".repeat(5_000_000);
        let (first, dropped) = OutputBudget::new(100).take_counted(&text, 0);
        assert_eq!(dropped, 4_999_900);
        let call = OutputBudget::new(130);
        assert_eq!(call.take("0123456789".repeat(7).as_str()).len(), 70);
        let (second, total) = call.retake(&first, dropped);
        assert_eq!(total, 4_999_940);
        assert_eq!(
            second,
            format!("{}\n[… 4999940 bytes omitted …]", "x".repeat(60))
        );
        let (third, total) = call.retake(&first, dropped);
        assert_eq!(
            (third.as_str(), total),
            ("[… 5000000 bytes omitted …]", 5_000_000)
        );
        // Text that passed whole stays whole, newline and all.
        let (whole, n) = OutputBudget::new(100).retake("abc\n", 0);
        assert_eq!((whole.as_str(), n), ("abc\n", 0));
        let (cut, n) = OutputBudget::new(3).take_counted("abc\ndef", 0);
        assert_eq!(OutputBudget::new(100).retake(&cut, n), (cut.clone(), n));
    }

    #[test]
    fn budget_is_shared_across_threads() {
        let budget = std::sync::Arc::new(OutputBudget::new(1000));
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let b = budget.clone();
                std::thread::spawn(move || {
                    (0..50)
                        .map(|_| b.take("0123456789"))
                        .filter(|t| t == "0123456789")
                        .count()
                })
            })
            .collect();
        let whole: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
        assert_eq!(whole, 100);
        assert_eq!(budget.remaining(), 0);
    }

    fn split(max: usize, chunks: &[&[u8]]) -> (Vec<String>, Option<usize>) {
        let mut s = LineSplitter::new(max);
        let mut out = Vec::new();
        for c in chunks {
            s.push(c, &mut |p| {
                out.push(match p {
                    Piece::Line(l) => format!("L:{}", String::from_utf8_lossy(l)),
                    Piece::Oversized { prefix, len } => {
                        format!("O:{}:{}", String::from_utf8_lossy(prefix), len)
                    }
                })
            });
        }
        (out, s.finish())
    }

    #[test]
    fn splitter_handles_chunk_boundaries_crlf_and_partial_tail() {
        let (lines, partial) = split(100, &[b"ab", b"c\nde\r\n\nf", b"g\nh"]);
        assert_eq!(lines, ["L:abc", "L:de", "L:", "L:fg"]);
        assert_eq!(partial, Some(1));
    }

    #[test]
    fn splitter_skips_long_lines_keeping_a_prefix() {
        let long = vec![b'x'; 30];
        let (lines, partial) = split(10, &[b"ok\n", &long[..7], &long[7..], b"\nnext\n"]);
        assert_eq!(lines, ["L:ok", "O:xxxxxxxxxx:30", "L:next"]);
        assert_eq!(partial, None);
        // A line that is too long inside one chunk.
        let mut chunk = long.clone();
        chunk.extend_from_slice(b"\n");
        let (lines, _) = split(10, &[&chunk]);
        assert_eq!(lines, ["O:xxxxxxxxxx:30"]);
        // Exactly the limit is still a line.
        let (lines, _) = split(10, &[&long[..10], b"\n"]);
        assert_eq!(lines, ["L:xxxxxxxxxx"]);
    }

    #[test]
    fn tool_start_rules() {
        assert_eq!(
            tool_start("c1", "read", Some("a.txt")),
            Some(Activity::ToolStart {
                call_id: "c1".into(),
                tool: "read".into(),
                path: Some("a.txt".into())
            })
        );
        assert_eq!(
            tool_start("c1", "read", Some("a\u{1b}[2J.txt")),
            Some(Activity::ToolStart {
                call_id: "c1".into(),
                tool: "read".into(),
                path: None
            })
        );
        assert_eq!(tool_start("c1", "read", Some(&"p".repeat(4097))), None);
        assert_eq!(tool_start("c\n1", "read", None), None);
        assert_eq!(tool_start("c1", &"t".repeat(4097), None), None);
        assert_eq!(tool_start(" ", "read", None), None);
        assert!(tool_start("c1", &"t".repeat(4096), None).is_some());
    }

    #[test]
    fn prefix_scanner_reads_fields_of_a_cut_document() {
        let text = br#"{"type":"item.started","item":{"id":"item_0","n":12,"ok":true,"x":null,"a":[{"k":"v\u00e9\n"}],"call_id":"c\"1","arguments":{"content":"aaaa"#;
        let found = scan_prefix(text, 4);
        let pairs: Vec<(Vec<Seg>, &str, bool)> = found
            .iter()
            .map(|f| (f.path.clone(), f.value.as_str(), f.complete))
            .collect();
        let k = |s: &str| Seg::Key(s.to_string());
        assert_eq!(
            pairs,
            vec![
                (vec![k("type")], "item.started", true),
                (vec![k("item"), k("id")], "item_0", true),
                (vec![k("item"), k("a"), Seg::Index(0), k("k")], "vé\n", true),
                (vec![k("item"), k("call_id")], "c\"1", true),
                (vec![k("item"), k("arguments"), k("content")], "aaaa", false),
            ]
        );
        assert!(found[3].at(&["item", "call_id"]));
        assert!(found[2].at(&["item", "a", "#", "k"]));
        // Depth limits what is reported, not what is walked.
        let shallow = scan_prefix(text, 1);
        assert_eq!(shallow.len(), 1);
        // Garbage stops the scan without panicking.
        assert!(scan_prefix(b"not json", 3).is_empty());
        assert!(scan_prefix(&[b'['; 10_000], 3).is_empty());
        let cut_utf8 = "{\"a\":\"日本".as_bytes();
        let found = scan_prefix(&cut_utf8[..cut_utf8.len() - 1], 2);
        assert_eq!(found[0].value, "日");
    }
}
