//! The composer: a multi-line input with a cursor, history (Up/Down and a reverse search),
//! pastes (a long one shown as a chip, sent whole) and the `/` commands with a filter.

use unicode_width::UnicodeWidthStr;

/// A paste longer than this many lines (or bytes) is shown as a chip.
const CHIP_LINES: usize = 6;
const CHIP_BYTES: usize = 600;

/// The slash commands, with what each does (the `/` filter and `/help` show them).
pub const COMMANDS: &[(&str, &str)] = &[
    ("/help", "keys and commands"),
    (
        "/status",
        "the session: id, role, route, sandbox, turns, tokens, cost",
    ),
    ("/cost", "tokens and cost so far, per turn total"),
    (
        "/compact",
        "summarise the conversation now ([focus] words optional)",
    ),
    ("/profile", "routed sessions: coordinator, executor or auto"),
    (
        "/resume",
        "go on with another saved session (or /resume ID); routed: rerun the assignment",
    ),
    ("/interrupt", "stop the running task (Esc)"),
    (
        "/flow",
        "the newest Flow's view: units × steps, continue, abandon, clean",
    ),
    ("/run", "start a workflow: /run \"add a --verbose flag\""),
    (
        "/worker",
        "prompt a managed worker: /worker NAME what to do (its answer in the side panel)",
    ),
    (
        "/model",
        "the session's route; /model NAME switches (a class or provider/model)",
    ),
    (
        "/clear",
        "a new conversation: the model sees nothing before",
    ),
    (
        "/diff",
        "what changed in the project since the session started",
    ),
    (
        "/undo",
        "put the files back to before a prompt (a list; /undo N, or Esc Esc when idle); files changed by hand stay",
    ),
    ("/role", "the session's role (start another with --role)"),
    ("/quit", "end the session"),
];

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Composer {
    text: String,
    /// Byte offset of the cursor in `text`.
    cursor: usize,
    /// Pastes shown as chips: the chip's text and what it stands for.
    chips: Vec<(String, String)>,
    history: Vec<String>,
    /// Where Up/Down is in the history (`None`: the draft).
    at: Option<usize>,
    draft: String,
    /// Reverse history search (Ctrl+R): the query.
    pub search: Option<String>,
}

impl Composer {
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    pub fn set(&mut self, text: &str) {
        self.text = text.to_string();
        self.cursor = self.text.len();
        self.at = None;
    }

    pub fn insert(&mut self, c: char) {
        self.text.insert(self.cursor, c);
        self.cursor += c.len_utf8();
    }

    /// A paste: inserted as it is, or as a chip when long.
    pub fn paste(&mut self, pasted: &str) {
        let pasted = pasted.replace("\r\n", "\n").replace('\r', "\n");
        let lines = pasted.lines().count();
        if lines > CHIP_LINES || pasted.len() > CHIP_BYTES {
            let chip = format!("[pasted {lines} lines #{}]", self.chips.len() + 1);
            self.text.insert_str(self.cursor, &chip);
            self.cursor += chip.len();
            self.chips.push((chip, pasted));
        } else {
            self.text.insert_str(self.cursor, &pasted);
            self.cursor += pasted.len();
        }
    }

    pub fn backspace(&mut self) {
        // A chip goes as one.
        if let Some(k) = self
            .chips
            .iter()
            .position(|(c, _)| self.text[..self.cursor].ends_with(c.as_str()))
        {
            let len = self.chips[k].0.len();
            self.text.replace_range(self.cursor - len..self.cursor, "");
            self.cursor -= len;
            self.chips.remove(k);
            return;
        }
        if let Some(c) = self.text[..self.cursor].chars().next_back() {
            self.cursor -= c.len_utf8();
            self.text.remove(self.cursor);
        }
    }

    pub fn delete(&mut self) {
        if self.cursor < self.text.len() {
            self.text.remove(self.cursor);
        }
    }

    pub fn left(&mut self) {
        if let Some(c) = self.text[..self.cursor].chars().next_back() {
            self.cursor -= c.len_utf8();
        }
    }

    pub fn right(&mut self) {
        if let Some(c) = self.text[self.cursor..].chars().next() {
            self.cursor += c.len_utf8();
        }
    }

    pub fn home(&mut self) {
        self.cursor = self.text[..self.cursor]
            .rfind('\n')
            .map(|k| k + 1)
            .unwrap_or(0);
    }

    pub fn end(&mut self) {
        self.cursor = self.text[self.cursor..]
            .find('\n')
            .map(|k| self.cursor + k)
            .unwrap_or(self.text.len());
    }

    /// Deletes the word before the cursor (Ctrl+W).
    pub fn delete_word(&mut self) {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end();
        let start = trimmed
            .rfind(char::is_whitespace)
            .map(|k| k + 1)
            .unwrap_or(0);
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// Whether the cursor is on the first (last) line: Up (Down) then walks the history.
    pub fn on_first_line(&self) -> bool {
        !self.text[..self.cursor].contains('\n')
    }

    pub fn on_last_line(&self) -> bool {
        !self.text[self.cursor..].contains('\n')
    }

    /// Moves the cursor one line up or down, keeping its column as far as it can.
    pub fn vertical(&mut self, up: bool) {
        let line_start = self.text[..self.cursor]
            .rfind('\n')
            .map(|k| k + 1)
            .unwrap_or(0);
        let col = self.text[line_start..self.cursor].chars().count();
        let (start, end) = if up {
            let Some(prev_end) = line_start.checked_sub(1) else {
                return;
            };
            let prev_start = self.text[..prev_end]
                .rfind('\n')
                .map(|k| k + 1)
                .unwrap_or(0);
            (prev_start, prev_end)
        } else {
            let Some(nl) = self.text[self.cursor..].find('\n') else {
                return;
            };
            let next_start = self.cursor + nl + 1;
            let next_end = self.text[next_start..]
                .find('\n')
                .map(|k| next_start + k)
                .unwrap_or(self.text.len());
            (next_start, next_end)
        };
        let mut pos = start;
        for (n, (k, c)) in self.text[start..end].char_indices().enumerate() {
            if n == col {
                break;
            }
            pos = start + k + c.len_utf8();
        }
        self.cursor = pos.min(end);
    }

    /// The previous (older) history entry.
    pub fn history_prev(&mut self) {
        if self.history.is_empty() {
            return;
        }
        let next = match self.at {
            None => {
                self.draft = self.text.clone();
                self.history.len() - 1
            }
            Some(0) => 0,
            Some(k) => k - 1,
        };
        self.at = Some(next);
        self.text = self.history[next].clone();
        self.cursor = self.text.len();
    }

    /// The next (newer) history entry, then the draft.
    pub fn history_next(&mut self) {
        match self.at {
            None => {}
            Some(k) if k + 1 < self.history.len() => {
                self.at = Some(k + 1);
                self.text = self.history[k + 1].clone();
                self.cursor = self.text.len();
            }
            Some(_) => {
                self.at = None;
                self.text = std::mem::take(&mut self.draft);
                self.cursor = self.text.len();
            }
        }
    }

    /// The newest history entry holding the search query.
    pub fn search_match(&self) -> Option<&str> {
        let q = self.search.as_deref()?;
        self.history
            .iter()
            .rev()
            .find(|h| h.contains(q))
            .map(String::as_str)
    }

    /// Ends the search, keeping its match in the composer when `accept`.
    pub fn end_search(&mut self, accept: bool) {
        if accept {
            if let Some(m) = self.search_match().map(str::to_string) {
                self.set(&m);
            }
        }
        self.search = None;
    }

    /// Takes the text to send (chips expanded), recording it in the history.
    pub fn take(&mut self) -> String {
        let shown = std::mem::take(&mut self.text);
        self.cursor = 0;
        self.at = None;
        let mut full = shown.clone();
        for (chip, pasted) in self.chips.drain(..) {
            full = full.replacen(&chip, &pasted, 1);
        }
        if !shown.trim().is_empty() && self.history.last() != Some(&shown) {
            self.history.push(shown);
        }
        full
    }

    pub fn history(&self) -> &[String] {
        &self.history
    }

    /// The commands the text filters to, while it is a `/` word without a space.
    pub fn command_matches(&self) -> Vec<(&'static str, &'static str)> {
        let t = self.text.as_str();
        if !t.starts_with('/') || t.contains(char::is_whitespace) {
            return Vec::new();
        }
        COMMANDS
            .iter()
            .copied()
            .filter(|(c, _)| c.starts_with(t))
            .collect()
    }

    /// Tab: completes the only (or first) matching command.
    pub fn complete(&mut self) {
        if let Some((c, _)) = self.command_matches().first() {
            self.set(&format!("{c} "));
        }
    }

    /// The cursor as (row, column) in the text's lines.
    pub fn cursor_pos(&self) -> (usize, usize) {
        let before = &self.text[..self.cursor];
        let row = before.matches('\n').count();
        let line_start = before.rfind('\n').map(|k| k + 1).unwrap_or(0);
        (row, before[line_start..].width())
    }
}

impl Composer {
    /// The `@` mention the cursor is in: where its `@` is, and what follows it so far.
    pub fn mention(&self) -> Option<(usize, &str)> {
        let before = &self.text[..self.cursor];
        let start = before
            .rfind(|c: char| c.is_whitespace())
            .map(|k| k + 1)
            .unwrap_or(0);
        let word = &before[start..];
        word.strip_prefix('@').map(|q| (start, q))
    }

    /// Replaces the mention at the cursor with `@path` and a space.
    pub fn complete_mention(&mut self, path: &str) {
        if let Some((start, _)) = self.mention() {
            let insert = format!("@{path} ");
            self.text.replace_range(start..self.cursor, &insert);
            self.cursor = start + insert.len();
        }
    }
}

/// The `n` best of `candidates` for `query`, a fuzzy match: its characters in order (case
/// ignored); a match in the file name, at a word start and in a run scores higher, a shorter
/// path breaks ties. An empty query gives the first `n`.
pub fn fuzzy<'a>(query: &str, candidates: &'a [String], n: usize) -> Vec<&'a str> {
    let q: Vec<char> = query.to_lowercase().chars().collect();
    let mut scored: Vec<(i64, &str)> = candidates
        .iter()
        .filter_map(|c| score(&q, c).map(|s| (s, c.as_str())))
        .collect();
    scored.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then(a.1.len().cmp(&b.1.len()))
            .then(a.1.cmp(b.1))
    });
    scored.into_iter().take(n).map(|(_, c)| c).collect()
}

fn score(q: &[char], candidate: &str) -> Option<i64> {
    let name_start = candidate.rfind('/').map(|k| k + 1).unwrap_or(0);
    let mut score = 0i64;
    let mut qi = 0;
    let mut prev: Option<usize> = None;
    let mut prev_char = '/';
    for (k, c) in candidate.char_indices() {
        if qi == q.len() {
            break;
        }
        if c.to_lowercase().eq(std::iter::once(q[qi])) {
            score += 1;
            if k >= name_start {
                score += 2;
            }
            if matches!(prev_char, '/' | '_' | '-' | '.' | ' ') {
                score += 3;
            }
            if prev.is_some_and(|p| p + prev_char.len_utf8() == k) {
                score += 4;
            }
            prev = Some(k);
            qi += 1;
        }
        prev_char = c;
    }
    (qi == q.len()).then_some(score)
}

/// A line of the composer parsed: a command, or text for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    Text(String),
    Command { name: String, rest: String },
}

pub fn parse(text: &str) -> Parsed {
    let t = text.trim();
    match t.strip_prefix('/') {
        Some(c) if !c.is_empty() && !c.starts_with('/') => {
            let (name, rest) = c.split_once(char::is_whitespace).unwrap_or((c, ""));
            Parsed::Command {
                name: name.to_string(),
                rest: rest.trim().to_string(),
            }
        }
        _ => Parsed::Text(text.trim_end().to_string()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn editing_history_and_multi_line_moves() {
        let mut c = Composer::default();
        for ch in "héllo".chars() {
            c.insert(ch);
        }
        c.left();
        c.backspace();
        assert_eq!(c.text(), "hélo");
        c.end();
        c.insert('\n');
        for ch in "world".chars() {
            c.insert(ch);
        }
        assert!(!c.on_first_line());
        c.vertical(true);
        assert_eq!(c.cursor_pos(), (0, 4));
        assert_eq!(c.take(), "hélo\nworld");
        c.set("second");
        c.take();
        c.insert('x');
        c.history_prev();
        assert_eq!(c.text(), "second");
        c.history_prev();
        assert_eq!(c.text(), "hélo\nworld");
        c.history_next();
        c.history_next();
        assert_eq!(c.text(), "x", "back to the draft");
        c.search = Some("wor".into());
        assert_eq!(c.search_match(), Some("hélo\nworld"));
        c.end_search(true);
        assert_eq!(c.text(), "hélo\nworld");
    }

    #[test]
    fn a_long_paste_is_a_chip_sent_whole_and_deleted_as_one() {
        let mut c = Composer::default();
        let long = "line\n".repeat(20);
        c.insert('a');
        c.paste(&long);
        assert_eq!(c.text(), "a[pasted 20 lines #1]");
        let mut d = c.clone();
        d.backspace();
        assert_eq!(d.text(), "a");
        assert_eq!(c.take(), format!("a{long}"));
        assert_eq!(c.history(), &["a[pasted 20 lines #1]".to_string()]);
    }

    #[test]
    fn an_at_mention_completes_to_the_best_fuzzy_match() {
        let files: Vec<String> = [
            "src/main.rs",
            "src/parser/mod.rs",
            "docs/parsing.md",
            "README.md",
            "crates/parse_util.rs",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        // A match in the file name ranks above one in a folder name.
        assert_eq!(
            fuzzy("pars", &files, 3),
            vec![
                "docs/parsing.md",
                "crates/parse_util.rs",
                "src/parser/mod.rs"
            ]
        );
        assert_eq!(fuzzy("readme", &files, 5), vec!["README.md"]);
        assert_eq!(fuzzy("zzz", &files, 5), Vec::<&str>::new());
        let mut c = Composer::default();
        c.set("look at @pars");
        assert_eq!(c.mention(), Some((8, "pars")));
        c.complete_mention("src/parser/mod.rs");
        assert_eq!(c.text(), "look at @src/parser/mod.rs ");
        assert_eq!(c.mention(), None);
        c.set("mail me@home");
        assert_eq!(c.mention(), None, "an @ inside a word is no mention");
    }

    #[test]
    fn slash_commands_filter_complete_and_parse() {
        let mut c = Composer::default();
        c.set("/co");
        assert_eq!(
            c.command_matches().iter().map(|m| m.0).collect::<Vec<_>>(),
            vec!["/cost", "/compact"]
        );
        c.set("/pro");
        c.complete();
        assert_eq!(c.text(), "/profile ");
        assert_eq!(
            parse("/compact the tests"),
            Parsed::Command {
                name: "compact".into(),
                rest: "the tests".into()
            }
        );
        assert_eq!(parse("fix it"), Parsed::Text("fix it".into()));
        assert_eq!(
            parse("//not a command"),
            Parsed::Text("//not a command".into())
        );
    }
}
