//! The overlays over the whole screen: the approval modal and the help.

use baton_protocol::ItemStatus;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};
use ratatui::Frame;
use unicode_width::UnicodeWidthStr;

use crate::composer::COMMANDS;
use crate::keymap::Keymap;
use crate::markdown::wrap;
use crate::theme::Theme;
use crate::view::{ToolCell, View};

/// What covers the screen now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Overlay {
    Help,
    /// The checkpoints `/undo` offers, the one at the cursor (an index of the view's list).
    Undo(usize),
    /// The saved sessions `/resume` offers (`Ui::sessions`), and where the cursor is.
    Sessions(crate::picker::Cursor),
    /// The approval modal is typing the "no" feedback.
    Feedback(String),
}

fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

/// The approval modal's lines: the call, its change, and the choices (or the "no" feedback).
fn approval_lines(view: &View, overlay: Option<&Overlay>, t: Theme) -> Option<Vec<Line<'static>>> {
    let req = view.approval.as_ref()?;
    let cell = ToolCell {
        item_id: req.item_id.clone(),
        call_id: String::new(),
        reference: None,
        selected: false,
        tool: req.tool.clone(),
        arguments: req.arguments.clone(),
        path: req.path.clone(),
        status: ItemStatus::InProgress,
        started_ms: 0,
        ended_ms: None,
        output: None,
        exit_code: None,
    };
    let mut lines = vec![Line::from(vec![
        Span::styled(format!("{} ", req.tool), t.heading),
        Span::styled(cell.summary(), t.text),
    ])];
    if let Some(diff) = cell.diff() {
        for (sign, _, l) in diff.iter().take(6) {
            let st = match sign {
                '+' => t.added,
                '-' => t.removed,
                _ => t.dim,
            };
            lines.push(Line::from(Span::styled(
                format!("{sign} {}", baton_text::sanitize_line(l)),
                st,
            )));
        }
    }
    lines.push(Line::default());
    match overlay {
        Some(Overlay::Feedback(text)) => {
            lines.push(Line::from(Span::styled(
                "Tell the model why (Enter sends, Esc goes back):",
                t.text,
            )));
            lines.push(Line::from(Span::styled(
                format!("› {}", baton_text::sanitize_line(text)),
                t.user,
            )));
        }
        _ => {
            lines.push(Line::from(Span::styled("1  yes", t.ok)));
            lines.push(Line::from(Span::styled(
                format!("2  yes, and always `{}` this session", req.tool),
                t.ok,
            )));
            lines.push(Line::from(Span::styled(
                "3  no, and tell the model what to do instead",
                t.warn,
            )));
        }
    }
    Some(lines)
}

/// The rows the approval modal takes (0 without one): the transcript is drawn above it, so the
/// message that led to the call stays in view.
pub(crate) fn approval_height(view: &View, overlay: Option<&Overlay>, t: Theme, width: u16) -> u16 {
    let inner = usize::from(width.saturating_sub(2)).max(1);
    approval_lines(view, overlay, t).map_or(0, |ls| {
        let rows: usize = ls.iter().map(|l| l.width().max(1).div_ceil(inner)).sum();
        u16::try_from(rows + 2).unwrap_or(u16::MAX)
    })
}

/// `lines` in `area` (borders included), each taking the rows it wraps to: the change's lines go
/// first, so the call and the choices stay (a screen too small for those cuts the last).
fn fitted(mut lines: Vec<Line<'static>>, area: Rect, choices: usize) -> Vec<Line<'static>> {
    let (room, inner) = (
        usize::from(area.height.saturating_sub(2)),
        usize::from(area.width.saturating_sub(2)).max(1),
    );
    let rows =
        |ls: &[Line<'_>]| -> usize { ls.iter().map(|l| l.width().max(1).div_ceil(inner)).sum() };
    // The call and the last `choices` lines (the choices, or the feedback being typed) stay.
    while rows(&lines) > room && lines.len() > 1 + choices {
        // Index 1 is the change (or the blank line before the choices) while there is one.
        lines.remove(1);
    }
    lines
}

/// The approval modal in `area`: the rows under the transcript, above the composer.
pub(crate) fn draw_approval(
    frame: &mut Frame<'_>,
    view: &View,
    overlay: Option<&Overlay>,
    t: Theme,
    area: Rect,
) {
    let Some(lines) = approval_lines(view, overlay, t) else {
        return;
    };
    let choices = if matches!(overlay, Some(Overlay::Feedback(_))) {
        2
    } else {
        3
    };
    let lines = fitted(lines, area, choices);
    frame.render_widget(Clear, area);
    let p = Paragraph::new(lines).wrap(Wrap { trim: false }).block(
        Block::bordered()
            .title(Span::styled(" approve this call? ", t.warn))
            .border_style(t.warn),
    );
    frame.render_widget(p, area);
}

/// The undo list: the checkpoints newest first, the one at `at` (an index of
/// `view.checkpoints`) marked; Enter puts the files back to before it.
pub(crate) fn draw_undo(frame: &mut Frame<'_>, view: &View, at: usize, t: Theme, area: Rect) {
    let rows = view.checkpoints.len() as u16;
    let r = centered(area, area.width.saturating_sub(2).min(96), rows + 4);
    let inner = r.width.saturating_sub(4) as usize;
    let mut lines: Vec<Line<'static>> = vec![Line::from(Span::styled(
        "files go back to before the picked prompt and every later one; files changed by hand stay",
        t.dim,
    ))];
    for (i, c) in view.checkpoints.iter().enumerate().rev() {
        let mark = if i == at { "› " } else { "  " };
        let files = if c.files == 1 { "file" } else { "files" };
        let mut text = format!("{mark}#{} {} · {} {files}", c.checkpoint, c.input, c.files);
        if text.width() > inner {
            text = clip(&text, inner);
        }
        let style = if i == at { t.accent } else { t.text };
        lines.push(Line::from(Span::styled(text, style)));
    }
    frame.render_widget(Clear, r);
    let p = Paragraph::new(lines).wrap(Wrap { trim: false }).block(
        Block::bordered()
            .title(Span::styled(" undo · ↑↓ Enter · Esc closes ", t.warn))
            .border_style(t.warn),
    );
    frame.render_widget(p, r);
}

/// `text` cut to `width` columns, with `…` where it was cut.
fn clip(text: &str, width: usize) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if out.width() + c.to_string().width() + 1 > width {
            out.push('…');
            break;
        }
        out.push(c);
    }
    out
}

pub(crate) fn draw_help(frame: &mut Frame<'_>, keymap: &Keymap, scroll: u16, t: Theme, area: Rect) {
    let r = centered(area, area.width.saturating_sub(2).min(96), area.height);
    let inner = r.width.saturating_sub(2) as usize;
    let mut rows: Vec<(String, String)> = keymap
        .help()
        .into_iter()
        .map(|(k, w)| (k, w.to_string()))
        .collect();
    rows.push((String::new(), String::new()));
    rows.extend(COMMANDS.iter().map(|(c, w)| (c.to_string(), w.to_string())));
    rows.push((String::new(), String::new()));
    rows.push((
        "j k Enter y Esc".into(),
        "on a focused entry: move, expand, copy, leave".into(),
    ));
    rows.push((
        "keys.toml".into(),
        "~/.config/baton/keys.toml changes the keys".into(),
    ));
    let key_col = rows.iter().map(|(k, _)| k.width()).max().unwrap_or(0) + 2;
    // Narrow: each key on its own line, what it does under it.
    let two_lines = inner < key_col + 30;
    let mut lines: Vec<Line<'static>> = Vec::new();
    for (k, w) in rows {
        if k.is_empty() {
            lines.push(Line::default());
        } else if two_lines {
            lines.push(Line::from(Span::styled(k, t.accent)));
            lines.extend(wrap(vec![Span::styled(w, t.text)], inner, "  ", "  "));
        } else {
            let pad = format!("{k:<key_col$}");
            lines.extend(
                wrap(
                    vec![Span::styled(w, t.text)],
                    inner,
                    &pad,
                    &" ".repeat(key_col),
                )
                .into_iter()
                .enumerate()
                .map(|(n, mut l)| {
                    if n == 0 {
                        if let Some(first) = l.spans.first_mut() {
                            first.style = t.accent;
                        }
                    }
                    l
                }),
            );
        }
    }
    frame.render_widget(Clear, r);
    frame.render_widget(
        Paragraph::new(lines).scroll((scroll, 0)).block(
            Block::bordered()
                .title(" help · ↑↓ scroll · Esc closes ")
                .border_style(t.dim)
                .style(Style::default()),
        ),
        r,
    );
}
