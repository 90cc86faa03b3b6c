//! One transcript entry as lines: a message, reasoning, a tool call's cell (with its diff and
//! output), a notice, a routing step.

use baton_protocol::ItemStatus;
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr;

use crate::markdown::{self, wrap};
use crate::theme::Theme;
use crate::view::{Body, Entry, Level, ToolCell};

/// Spinner frames; one every 125 ms (8 a second).
pub(crate) const SPINNER: [&str; 8] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧"];
pub const SPINNER_MS: u64 = 125;
/// Lines of a call's output shown expanded, and of a diff shown folded.
const OUTPUT_LINES: usize = 40;
/// How many of a command's last output lines show under its call.
const BASH_TAIL: usize = 3;
const DIFF_LINES: usize = 8;

/// A blank line between entries, but not between consecutive tool calls.
pub(crate) fn gap_before(prev: &Entry, entry: &Entry) -> bool {
    !(matches!(entry.body, Body::Tool(_) | Body::Reasoning { .. })
        && matches!(prev.body, Body::Tool(_) | Body::Reasoning { .. }))
}

pub(crate) fn spinner(now_ms: u64) -> &'static str {
    SPINNER[(now_ms / SPINNER_MS) as usize % SPINNER.len()]
}

pub(crate) fn secs(ms: u64) -> String {
    if ms < 60_000 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else {
        format!("{}m{:02}s", ms / 60_000, ms / 1000 % 60)
    }
}

/// The lines of one entry at `width` columns (the 2-column gutter is not included).
pub fn entry_lines(
    entry: &Entry,
    width: usize,
    expanded: bool,
    now_ms: u64,
    t: &Theme,
) -> Vec<Line<'static>> {
    let width = width.max(10);
    match &entry.body {
        Body::User { text } => {
            let clean = baton_text::sanitize_terminal(text).replace('\t', "    ");
            let mut out = Vec::new();
            for (n, l) in clean.lines().enumerate() {
                let first = if n == 0 { "› " } else { "  " };
                out.extend(wrap(
                    vec![Span::styled(l.to_string(), t.user)],
                    width,
                    first,
                    "  ",
                ));
            }
            if out.is_empty() {
                out.push(Line::from(Span::styled("›", t.user)));
            }
            out
        }
        Body::Assistant { text, streaming } => {
            let lines = markdown::render(text, width, t, *streaming);
            if lines.is_empty() && *streaming {
                return vec![Line::from(Span::styled("…", t.dim))];
            }
            lines
        }
        Body::Reasoning { text, streaming } => {
            let words = text.split_whitespace().count();
            let head = if *streaming { "thinking…" } else { "thought" };
            let mut out = vec![Line::from(vec![
                Span::styled(format!("∴ {head} "), t.dim),
                Span::styled(
                    format!(
                        "({words} words{})",
                        if expanded { "" } else { ", ctrl+o to read" }
                    ),
                    t.dim,
                ),
            ])];
            if expanded {
                let clean = baton_text::sanitize_terminal(text).into_owned();
                for l in clean.lines() {
                    out.extend(wrap(
                        vec![Span::styled(l.to_string(), t.dim)],
                        width,
                        "  ",
                        "  ",
                    ));
                }
            }
            out
        }
        Body::Tool(cell) => tool_lines(cell, width, expanded, now_ms, t),
        Body::Notice { level, text } => {
            let (mark, style) = match level {
                Level::Info => ("·", t.dim),
                Level::Warn => ("!", t.warn),
                Level::Error => ("✗", t.error),
            };
            let clean = baton_text::sanitize_terminal(text).into_owned();
            let mut out = Vec::new();
            for (n, l) in clean.lines().enumerate() {
                let first = if n == 0 {
                    format!("{mark} ")
                } else {
                    "  ".into()
                };
                out.extend(wrap(
                    vec![Span::styled(l.to_string(), style)],
                    width,
                    &first,
                    "  ",
                ));
            }
            out
        }
        Body::Routing {
            what,
            detail,
            responsible,
        } => {
            let mut text = what.clone();
            if !detail.is_empty() {
                text.push_str(": ");
                text.push_str(&baton_text::sanitize_line(detail));
            }
            if let Some(r) = responsible {
                text.push_str(&format!("  → {r}"));
            }
            wrap(vec![Span::styled(text, t.accent)], width, "⇄ ", "  ")
        }
    }
}

fn tool_lines(
    cell: &ToolCell,
    width: usize,
    expanded: bool,
    now_ms: u64,
    t: &Theme,
) -> Vec<Line<'static>> {
    let (glyph, style) = match cell.status {
        ItemStatus::InProgress => (spinner(now_ms), t.accent),
        ItemStatus::Completed => ("✓", t.ok),
        ItemStatus::Failed => ("✗", t.error),
        ItemStatus::Declined => ("⊘", t.warn),
    };
    let mut tail = format!("  {}", secs(cell.elapsed_ms(now_ms)));
    if let Some(code) = cell.exit_code.filter(|c| *c != 0) {
        tail.push_str(&format!("  exit {code}"));
    }
    // A routed Executor's result: its evidence reference, and a star once it is selected for
    // the Coordinator.
    if let Some(r) = &cell.reference {
        tail.push_str(&format!("  {}", baton_text::sanitize_line(r)));
    }
    let head = format!("{glyph} {} ", cell.tool);
    let star = if cell.selected { "★ " } else { "" };
    let room = width.saturating_sub(head.width() + tail.width() + star.width());
    let summary = baton_text::fit_columns(&cell.summary(), room).into_owned();
    let mut out = vec![Line::from(vec![
        Span::styled(star.to_string(), t.warn),
        Span::styled(head, style),
        Span::styled(summary, t.text),
        Span::styled(tail, t.dim),
    ])];
    if let Some(diff) = cell.diff() {
        let shown = if expanded {
            diff.len()
        } else {
            diff.len().min(DIFF_LINES)
        };
        // Line numbers where the file's are known, right-aligned in one column.
        let digits = diff
            .iter()
            .filter_map(|(_, n, _)| *n)
            .max()
            .map_or(0, |n| n.to_string().len());
        for (sign, number, line) in &diff[..shown] {
            let st = match sign {
                '+' => t.added,
                '-' => t.removed,
                _ => t.dim,
            };
            let text = baton_text::sanitize_line(line).into_owned();
            let num = match number {
                Some(n) => format!("{n:>digits$} "),
                None if digits > 0 => " ".repeat(digits + 1),
                None => String::new(),
            };
            out.push(Line::from(vec![
                Span::styled(format!("  {num}"), t.dim),
                Span::styled(
                    baton_text::fit_columns(
                        &format!("{sign} {text}"),
                        width.saturating_sub(2 + num.len()),
                    )
                    .into_owned(),
                    st,
                ),
            ]));
        }
        if shown < diff.len() {
            out.push(Line::from(Span::styled(
                format!("  … {} more lines (ctrl+o)", diff.len() - shown),
                t.dim,
            )));
        }
    }
    let declined = cell.status == ItemStatus::Declined;
    // The user's own `!` command shows its output.
    let shell = cell.tool == "!";
    if expanded || declined || shell {
        if let Some(output) = &cell.output {
            let clean = baton_text::sanitize_terminal(output).replace('\t', "    ");
            let lines: Vec<&str> = clean.lines().collect();
            let limit = match (expanded, shell) {
                (true, _) => OUTPUT_LINES,
                (false, true) => 12,
                (false, false) => 2,
            };
            for l in lines.iter().take(limit) {
                out.extend(markdown::wrap_chars(
                    &[Span::styled(l.to_string(), t.dim)],
                    width.saturating_sub(4),
                    "  │ ",
                ));
            }
            if lines.len() > limit {
                out.push(Line::from(Span::styled(
                    format!("  │ … {} more lines", lines.len() - limit),
                    t.dim,
                )));
            }
        }
    } else if cell.tool == "bash" {
        // A command's last lines, as a terminal leaves them (ctrl+o shows the whole).
        if let Some(output) = &cell.output {
            out.extend(output_tail(output, width, t));
        }
    }
    out
}

/// The last [`BASH_TAIL`] lines of a command's output, under a line counting those before.
fn output_tail(output: &str, width: usize, t: &Theme) -> Vec<Line<'static>> {
    let clean = baton_text::sanitize_terminal(output).replace('\t', "    ");
    let lines: Vec<&str> = clean.lines().filter(|l| !l.trim().is_empty()).collect();
    let from = lines.len().saturating_sub(BASH_TAIL);
    let mut out = Vec::new();
    if from > 0 {
        out.push(Line::from(Span::styled(
            format!("  │ … {from} earlier lines (ctrl+o)"),
            t.dim,
        )));
    }
    for l in &lines[from..] {
        out.push(Line::from(Span::styled(
            baton_text::fit_columns(&format!("  │ {l}"), width).into_owned(),
            t.dim,
        )));
    }
    out
}
