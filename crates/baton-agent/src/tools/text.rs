//! Keeping text for the model bounded.

/// Cuts `line` to at most `max_chars` characters, saying how much was cut.
pub(crate) fn clip_line(line: &str, max_chars: usize) -> String {
    match line.char_indices().nth(max_chars) {
        None => line.to_owned(),
        Some((cut, _)) => {
            let rest = line[cut..].chars().count();
            format!(
                "{} [… line truncated, {rest} more characters]",
                &line[..cut]
            )
        }
    }
}

/// `n` with a unit that reads naturally (`1 line`, `3 lines`).
pub(crate) fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("{n} {one}")
    } else {
        format!("{n} {many}")
    }
}

/// Counts lines the way an editor shows them: a trailing newline does not start a new line,
/// and empty text has no lines.
pub(crate) fn count_lines(text: &str) -> usize {
    if text.is_empty() {
        0
    } else {
        text.matches('\n').count() + usize::from(!text.ends_with('\n'))
    }
}

/// A byte sink that keeps the first `head` and the last `tail` bytes of a stream, and counts
/// what falls between them.
#[derive(Debug)]
pub(crate) struct HeadTail {
    head_cap: usize,
    tail_cap: usize,
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    total: u64,
}

impl HeadTail {
    pub(crate) fn new(head_cap: usize, tail_cap: usize) -> Self {
        HeadTail {
            head_cap,
            tail_cap,
            head: Vec::new(),
            tail: std::collections::VecDeque::new(),
            total: 0,
        }
    }

    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if self.head.len() < self.head_cap {
            let take = (self.head_cap - self.head.len()).min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
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

    /// The kept text, with a marker where bytes were dropped. Invalid UTF-8 is replaced.
    pub(crate) fn render(&self) -> String {
        let kept = self.head.len() as u64 + self.tail.len() as u64;
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        if kept == self.total {
            let mut all = self.head.clone();
            all.extend_from_slice(&tail);
            return String::from_utf8_lossy(&all).into_owned();
        }
        let omitted = self.total - kept;
        // Cut at line breaks when one is near, so the marker sits on its own line.
        let head = match self.head.iter().rposition(|&b| b == b'\n') {
            Some(i) if i + 1 >= self.head.len().saturating_sub(1024) => &self.head[..=i],
            _ => &self.head[..],
        };
        let tail = match tail.iter().position(|&b| b == b'\n') {
            Some(i) if i < 1024 => &tail[i + 1..],
            _ => &tail[..],
        };
        let omitted =
            omitted + (self.head.len() - head.len()) as u64 + (self.tail.len() - tail.len()) as u64;
        let mut out = String::from_utf8_lossy(head).into_owned();
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!("[... {omitted} bytes omitted ...]\n"));
        out.push_str(&String::from_utf8_lossy(tail));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipping() {
        assert_eq!(clip_line("abc", 5), "abc");
        assert_eq!(clip_line("ééééé", 5), "ééééé");
        assert_eq!(
            clip_line("éééééé", 5),
            "ééééé [… line truncated, 1 more characters]"
        );
    }

    #[test]
    fn line_counts() {
        assert_eq!(count_lines(""), 0);
        assert_eq!(count_lines("a"), 1);
        assert_eq!(count_lines("a\n"), 1);
        assert_eq!(count_lines("a\nb"), 2);
    }

    #[test]
    fn head_tail_keeps_both_ends() {
        let mut h = HeadTail::new(10, 10);
        h.push(b"0123456789abcdefghij");
        assert_eq!(h.render(), "0123456789abcdefghij");
        h.push(b"KLMNOPQRST");
        let text = h.render();
        assert!(
            text.starts_with("0123456789\n[... 10 bytes omitted ...]\nKLMNOPQRST"),
            "{text}"
        );
        assert_eq!(h.total, 30);

        let mut h = HeadTail::new(4, 4);
        for chunk in [b"ab".as_slice(), b"cdef", b"g", b"hijklmn", b"o"] {
            h.push(chunk);
        }
        let text = h.render();
        assert!(
            text.starts_with("abcd\n[... 7 bytes omitted ...]\nlmno"),
            "{text}"
        );
    }

    #[test]
    fn head_tail_cuts_at_lines() {
        let mut h = HeadTail::new(8, 8);
        h.push(b"one\ntwo\nthree\nfour\nfive\nsix\n");
        let text = h.render();
        assert!(text.starts_with("one\ntwo\n[... "), "{text}");
        assert!(text.ends_with("\nsix\n"), "{text}");
    }
}
