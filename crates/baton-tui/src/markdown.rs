//! Markdown as a model writes it, to styled lines wrapped at a width.
//!
//! Streaming is newline-gated: of a text still streaming only its complete lines are drawn (a
//! half word never flickers in and out of a wrap), and a table at its end waits until a line
//! that is not a table row follows. Blocks: headings, lists, quotes, fenced code (keywords,
//! strings, comments and numbers highlighted), tables, paragraphs; inline `code`, **bold** and
//! *italic*. Everything a model wrote goes through `baton_text::sanitize_terminal` first.

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use crate::theme::Theme;

/// The part of `text` a streaming view draws: its complete lines, less a table still growing.
pub fn settled(text: &str) -> &str {
    let Some(end) = text.rfind('\n') else {
        return "";
    };
    let done = &text[..end];
    // A table at the end waits for the line after it.
    let mut cut = done.len();
    for line in done.rsplit('\n') {
        if line.trim_start().starts_with('|') {
            cut = cut.saturating_sub(line.len() + 1);
        } else {
            break;
        }
    }
    &done[..cut.min(done.len())]
}

/// What is kept of a streaming answer between frames: its lines up to a block boundary.
#[derive(Debug, Clone, Default)]
pub struct Streamed {
    boundary: usize,
    width: usize,
    lines: Vec<Line<'static>>,
}

/// The last place in `text` (the start of a line) where rendering may be split: no code fence is
/// open before it, neither the line before nor the line at it is blank or a table row. Lines on
/// either side then render the same apart as together.
fn boundary(text: &str) -> usize {
    let mut best = 0;
    let mut open = false;
    let mut prev_ok = false;
    let mut pos = 0;
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        let splittable = !t.is_empty() && !t.starts_with('|');
        if pos > 0 && !open && prev_ok && splittable {
            best = pos;
        }
        if t.starts_with("```") {
            open = !open;
        }
        prev_ok = splittable && !t.starts_with("```") && !open;
        pos += line.len();
    }
    best
}

/// [`render`] of a streaming `text`, the lines before its last block boundary kept in `cache`
/// and extended as the text grows: a frame renders the new lines only, not the whole answer.
pub fn render_streaming(
    text: &str,
    width: usize,
    theme: &Theme,
    cache: &mut Streamed,
) -> Vec<Line<'static>> {
    let settled = settled(text);
    let b = boundary(settled);
    if cache.width != width || b < cache.boundary || cache.boundary > settled.len() {
        *cache = Streamed {
            boundary: 0,
            width,
            lines: Vec::new(),
        };
    }
    if b > cache.boundary {
        let more = render(&settled[cache.boundary..b], width, theme, false);
        cache.lines.extend(more);
        cache.boundary = b;
    }
    let mut out = cache.lines.clone();
    out.extend(render(&settled[cache.boundary..], width, theme, false));
    out
}

/// `text` as lines at most `width` columns wide.
pub fn render(text: &str, width: usize, theme: &Theme, streaming: bool) -> Vec<Line<'static>> {
    let width = width.max(8);
    let text = if streaming { settled(text) } else { text };
    let clean = baton_text::sanitize_terminal(text).replace('\t', "    ");
    let mut out = Vec::new();
    let lines: Vec<&str> = clean.lines().collect();
    let mut i = 0;
    let mut blank = false;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_start();
        if let Some(lang) = trimmed.strip_prefix("```") {
            let lang = lang.trim().to_string();
            i += 1;
            while i < lines.len() && !lines[i].trim_start().starts_with("```") {
                for l in wrap_chars(&highlight(lines[i], &lang, theme), width - 2, "  ") {
                    out.push(l);
                }
                i += 1;
            }
            i += 1;
            blank = false;
            continue;
        }
        if trimmed.starts_with('|') {
            let start = i;
            while i < lines.len() && lines[i].trim_start().starts_with('|') {
                i += 1;
            }
            out.extend(table(&lines[start..i], width, theme));
            blank = false;
            continue;
        }
        i += 1;
        if trimmed.is_empty() {
            if !blank && !out.is_empty() {
                out.push(Line::default());
            }
            blank = true;
            continue;
        }
        blank = false;
        let hashes = trimmed.chars().take_while(|c| *c == '#').count();
        if (1..=6).contains(&hashes) && trimmed[hashes..].starts_with(' ') {
            let spans = vec![Span::styled(
                trimmed[hashes + 1..].to_string(),
                theme.heading,
            )];
            out.extend(wrap(spans, width, "", ""));
            continue;
        }
        if let Some(rest) = trimmed
            .strip_prefix("> ")
            .or(trimmed.strip_prefix('>').filter(|r| r.is_empty()))
        {
            let spans = inline(rest, theme.dim, theme);
            out.extend(wrap(spans, width, "│ ", "│ "));
            continue;
        }
        let indent = " ".repeat((line.len() - trimmed.len()).min(8));
        if let Some((marker, rest)) = list_item(trimmed) {
            let first = format!("{indent}{marker} ");
            let cont = " ".repeat(first.width());
            out.extend(wrap(inline(rest, theme.text, theme), width, &first, &cont));
            continue;
        }
        out.extend(wrap(
            inline(trimmed, theme.text, theme),
            width,
            &indent,
            &indent,
        ));
    }
    while out.last().is_some_and(|l| l.spans.is_empty()) {
        out.pop();
    }
    out
}

/// `- x`, `* x`, `+ x` → `•`; `1. x`, `1) x` → `1.`.
fn list_item(line: &str) -> Option<(String, &str)> {
    for b in ["- ", "* ", "+ "] {
        if let Some(rest) = line.strip_prefix(b) {
            return Some(("•".into(), rest));
        }
    }
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 && digits < 4 {
        let rest = &line[digits..];
        if let Some(r) = rest.strip_prefix(". ").or(rest.strip_prefix(") ")) {
            return Some((format!("{}.", &line[..digits]), r));
        }
    }
    None
}

/// Inline `code`, **bold**, *italic* / _italic_ as spans on `base`.
fn inline(text: &str, base: Style, theme: &Theme) -> Vec<Span<'static>> {
    let mut spans = Vec::new();
    let mut plain = String::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    let flush = |plain: &mut String, spans: &mut Vec<Span<'static>>| {
        if !plain.is_empty() {
            spans.push(Span::styled(std::mem::take(plain), base));
        }
    };
    let find = |from: usize, pat: &[char]| -> Option<usize> {
        (from..chars.len().saturating_sub(pat.len() - 1)).find(|&k| chars[k..k + pat.len()] == *pat)
    };
    while i < chars.len() {
        let c = chars[i];
        if c == '`' {
            if let Some(end) = find(i + 1, &['`']) {
                flush(&mut plain, &mut spans);
                spans.push(Span::styled(
                    chars[i + 1..end].iter().collect::<String>(),
                    theme.code.add_modifier(Modifier::BOLD),
                ));
                i = end + 1;
                continue;
            }
        }
        if c == '*' && chars.get(i + 1) == Some(&'*') {
            if let Some(end) = find(i + 2, &['*', '*']).filter(|&e| e > i + 2) {
                flush(&mut plain, &mut spans);
                spans.push(Span::styled(
                    chars[i + 2..end].iter().collect::<String>(),
                    base.add_modifier(Modifier::BOLD),
                ));
                i = end + 2;
                continue;
            }
        }
        if (c == '*' || c == '_')
            && chars.get(i + 1).is_some_and(|n| !n.is_whitespace())
            && (i == 0 || !chars[i - 1].is_alphanumeric())
        {
            if let Some(end) =
                find(i + 1, &[c]).filter(|&e| e > i + 1 && !chars[e - 1].is_whitespace())
            {
                flush(&mut plain, &mut spans);
                spans.push(Span::styled(
                    chars[i + 1..end].iter().collect::<String>(),
                    base.add_modifier(Modifier::ITALIC),
                ));
                i = end + 1;
                continue;
            }
        }
        plain.push(c);
        i += 1;
    }
    flush(&mut plain, &mut spans);
    spans
}

/// Word-wraps `spans` at `width` columns: the first line starts with `first`, the others with
/// `cont`. A word wider than a line is cut.
pub fn wrap(
    spans: Vec<Span<'static>>,
    width: usize,
    first: &str,
    cont: &str,
) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let mut cur: Vec<Span<'static>> = vec![Span::raw(first.to_string())];
    let mut used = first.width();
    let mut start_of_line = true;
    let new_line =
        |lines: &mut Vec<Line<'static>>, cur: &mut Vec<Span<'static>>, used: &mut usize| {
            lines.push(Line::from(std::mem::take(cur)));
            cur.push(Span::raw(cont.to_string()));
            *used = cont.width();
        };
    for span in spans {
        let style = span.style;
        // Words with the spaces before them.
        let mut rest: &str = &span.content;
        while !rest.is_empty() {
            let space_len = rest.len() - rest.trim_start_matches(' ').len();
            let word_end = rest[space_len..]
                .find(' ')
                .map(|k| k + space_len)
                .unwrap_or(rest.len());
            let (spaces, word) = (&rest[..space_len], &rest[space_len..word_end]);
            rest = &rest[word_end..];
            let (sw, ww) = (spaces.width(), word.width());
            if !start_of_line && used + sw + ww > width {
                new_line(&mut lines, &mut cur, &mut used);
                start_of_line = true;
            }
            if !start_of_line {
                cur.push(Span::styled(spaces.to_string(), style));
                used += sw;
            }
            // Cut a word wider than what is left of an empty line.
            let mut w = word;
            while used + w.width() > width && !w.is_empty() {
                let mut take = 0;
                let mut cols = 0;
                for (k, ch) in w.char_indices() {
                    let cw = ch.width().unwrap_or(0);
                    if used + cols + cw > width {
                        break;
                    }
                    cols += cw;
                    take = k + ch.len_utf8();
                }
                if take == 0 {
                    if start_of_line {
                        // Not even one character fits: take it anyway.
                        take = w.chars().next().map(char::len_utf8).unwrap_or(w.len());
                    } else {
                        new_line(&mut lines, &mut cur, &mut used);
                        start_of_line = true;
                        continue;
                    }
                }
                cur.push(Span::styled(w[..take].to_string(), style));
                w = &w[take..];
                new_line(&mut lines, &mut cur, &mut used);
                start_of_line = true;
            }
            if !w.is_empty() {
                cur.push(Span::styled(w.to_string(), style));
                used += w.width();
                start_of_line = false;
            }
        }
    }
    if !start_of_line || lines.is_empty() {
        lines.push(Line::from(cur));
    }
    lines
}

/// A line cut (not word-wrapped) every `width` columns, each piece after `prefix`.
pub fn wrap_chars(spans: &[Span<'static>], width: usize, prefix: &str) -> Vec<Line<'static>> {
    let width = width.max(1);
    let mut lines = Vec::new();
    let mut cur = vec![Span::raw(prefix.to_string())];
    let mut used = 0;
    for span in spans {
        let mut piece = String::new();
        for ch in span.content.chars() {
            let cw = ch.width().unwrap_or(0);
            if used + cw > width {
                cur.push(Span::styled(std::mem::take(&mut piece), span.style));
                lines.push(Line::from(std::mem::replace(
                    &mut cur,
                    vec![Span::raw(prefix.to_string())],
                )));
                used = 0;
            }
            piece.push(ch);
            used += cw;
        }
        if !piece.is_empty() {
            cur.push(Span::styled(piece, span.style));
        }
    }
    lines.push(Line::from(cur));
    lines
}

const KEYWORDS: &[&str] = &[
    "as",
    "async",
    "await",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "def",
    "default",
    "do",
    "done",
    "elif",
    "else",
    "enum",
    "esac",
    "except",
    "export",
    "extends",
    "false",
    "fi",
    "finally",
    "fn",
    "for",
    "from",
    "func",
    "function",
    "go",
    "if",
    "impl",
    "import",
    "in",
    "interface",
    "let",
    "loop",
    "match",
    "mod",
    "move",
    "mut",
    "new",
    "nil",
    "None",
    "null",
    "package",
    "pub",
    "raise",
    "return",
    "self",
    "Self",
    "static",
    "struct",
    "super",
    "switch",
    "then",
    "this",
    "throw",
    "trait",
    "true",
    "True",
    "False",
    "try",
    "type",
    "typeof",
    "use",
    "var",
    "where",
    "while",
    "with",
    "yield",
];

/// One line of code with keywords, strings, comments and numbers coloured. `lang` picks the
/// comment marker (`#` for shells, Python, TOML and YAML; `//` otherwise; both when unnamed).
fn highlight(line: &str, lang: &str, theme: &Theme) -> Vec<Span<'static>> {
    let hash = matches!(
        lang,
        "" | "sh"
            | "bash"
            | "shell"
            | "zsh"
            | "python"
            | "py"
            | "toml"
            | "yaml"
            | "yml"
            | "ruby"
            | "rb"
    );
    let slash = !matches!(
        lang,
        "sh" | "bash" | "shell" | "zsh" | "python" | "py" | "toml" | "yaml" | "yml" | "ruby" | "rb"
    );
    let mut spans = Vec::new();
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    let mut plain = String::new();
    let push = |spans: &mut Vec<Span<'static>>, plain: &mut String| {
        if !plain.is_empty() {
            spans.push(Span::styled(std::mem::take(plain), theme.code));
        }
    };
    while i < chars.len() {
        let c = chars[i];
        let comment = (hash && c == '#' && (i == 0 || chars[i - 1].is_whitespace()))
            || (slash && c == '/' && chars.get(i + 1) == Some(&'/'));
        if comment {
            push(&mut spans, &mut plain);
            spans.push(Span::styled(
                chars[i..].iter().collect::<String>(),
                theme.comment,
            ));
            return spans;
        }
        if c == '"' || c == '\'' || c == '`' {
            let mut j = i + 1;
            while j < chars.len() && chars[j] != c {
                if chars[j] == '\\' {
                    j += 1;
                }
                j += 1;
            }
            let end = (j + 1).min(chars.len());
            push(&mut spans, &mut plain);
            spans.push(Span::styled(
                chars[i..end].iter().collect::<String>(),
                theme.string,
            ));
            i = end;
            continue;
        }
        if c.is_alphanumeric() || c == '_' {
            let mut j = i;
            while j < chars.len() && (chars[j].is_alphanumeric() || chars[j] == '_') {
                j += 1;
            }
            let word: String = chars[i..j].iter().collect();
            let style = if c.is_ascii_digit() {
                Some(theme.number)
            } else if KEYWORDS.contains(&word.as_str()) {
                Some(theme.keyword)
            } else {
                None
            };
            match style {
                Some(s) => {
                    push(&mut spans, &mut plain);
                    spans.push(Span::styled(word, s));
                }
                None => plain.push_str(&word),
            }
            i = j;
            continue;
        }
        plain.push(c);
        i += 1;
    }
    push(&mut spans, &mut plain);
    spans
}

/// A Markdown table with aligned columns; wider than `width`, each row as its own wrapped line.
fn table(rows: &[&str], width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .filter(|r| !r.chars().all(|c| matches!(c, '|' | '-' | ':' | ' ')))
        .map(|r| {
            let t = r.trim().trim_start_matches('|').trim_end_matches('|');
            t.split('|').map(|c| c.trim().to_string()).collect()
        })
        .collect();
    let cols = cells.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0usize; cols];
    for row in &cells {
        for (k, c) in row.iter().enumerate() {
            widths[k] = widths[k].max(c.width());
        }
    }
    let total: usize = widths.iter().sum::<usize>() + 3 * cols.saturating_sub(1);
    let mut out = Vec::new();
    for (n, row) in cells.iter().enumerate() {
        let style = if n == 0 { theme.heading } else { theme.text };
        if total > width {
            out.extend(wrap(
                vec![Span::styled(row.join(" │ "), style)],
                width,
                "",
                "  ",
            ));
            continue;
        }
        let mut spans = Vec::new();
        for (k, w) in widths.iter().enumerate() {
            let c = row.get(k).map(String::as_str).unwrap_or("");
            if k > 0 {
                spans.push(Span::styled(" │ ", theme.dim));
            }
            spans.push(Span::styled(
                format!("{c}{}", " ".repeat(w - c.width())),
                style,
            ));
        }
        out.push(Line::from(spans));
        if n == 0 {
            let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
            out.push(Line::from(Span::styled(rule.join("─┼─"), theme.dim)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn plain(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| {
                l.spans
                    .iter()
                    .map(|s| s.content.as_ref())
                    .collect::<String>()
            })
            .collect()
    }

    #[test]
    fn a_streaming_text_shows_complete_lines_and_holds_a_growing_table_back() {
        assert_eq!(settled("half a li"), "");
        assert_eq!(settled("one\ntw"), "one");
        assert_eq!(settled("intro\n| a | b |\n|---|---|\n| 1 |"), "intro");
        assert_eq!(
            settled("intro\n| a | b |\n| 1 | 2 |\ndone\n"),
            "intro\n| a | b |\n| 1 | 2 |\ndone"
        );
    }

    #[test]
    fn blocks_and_inline_marks_render_and_wrap_at_the_width() {
        let t = Theme::dark();
        let text = "# Title\nSome **bold** and `code` words that wrap around.\n- item one\n1. first\n> quoted\n```rust\nfn main() { let x = \"s\"; } // c\n```\n| a | bb |\n|---|---|\n| 1 | 2 |\n";
        let lines = render(text, 24, &t, false);
        assert_eq!(
            plain(&lines),
            vec![
                "Title",
                "Some bold and code words",
                "that wrap around.",
                "• item one",
                "1. first",
                "│ quoted",
                "  fn main() { let x = \"s",
                "  \"; } // c",
                "a │ bb",
                "──┼───",
                "1 │ 2 ",
            ]
        );
        // Styles: the heading, bold, the keyword, the string, the comment.
        assert_eq!(lines[0].spans[1].style, t.heading);
        assert!(lines[1]
            .spans
            .iter()
            .any(|s| s.content == "bold" && s.style.add_modifier.contains(Modifier::BOLD)));
        assert!(lines[6]
            .spans
            .iter()
            .any(|s| s.content == "fn" && s.style == t.keyword));
        assert!(lines[7]
            .spans
            .iter()
            .any(|s| s.content == " // c" || s.content == "// c"));
    }

    #[test]
    fn a_streaming_answer_rendered_in_pieces_equals_it_rendered_whole() {
        let t = Theme::dark();
        let text = "# Plan\nFirst **step** here.\n\n- a\n- b\n```rust\nfn x() {}\n\nlet y = 1;\n```\nAfter the code.\n| h | i |\n|---|---|\n| 1 | 2 |\nEnd line.\n\n> quote\nlast";
        for width in [12, 30, 80] {
            let mut cache = Streamed::default();
            for cut in 0..=text.len() {
                if !text.is_char_boundary(cut) {
                    continue;
                }
                let part = &text[..cut];
                let pieces = render_streaming(part, width, &t, &mut cache);
                assert_eq!(
                    plain(&pieces),
                    plain(&render(part, width, &t, true)),
                    "width {width}, cut {cut}: {part:?}"
                );
            }
        }
    }

    #[test]
    fn control_characters_a_model_wrote_never_reach_the_terminal() {
        let lines = render("evil \u{1b}[2J clear\n", 40, &Theme::dark(), false);
        let text = plain(&lines).join("\n");
        assert!(!text.contains('\u{1b}'), "{text:?}");
        assert!(text.contains('\u{FFFD}'));
    }

    #[test]
    fn a_word_wider_than_the_line_is_cut_and_wide_characters_count_two() {
        let lines = wrap(vec![Span::raw("abcdefghij 漢字漢字")], 4, "", "");
        assert_eq!(plain(&lines), vec!["abcd", "efgh", "ij", "漢字", "漢字"]);
    }
}
