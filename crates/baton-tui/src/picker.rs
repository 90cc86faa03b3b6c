//! `baton tui --resume` without an id: the saved sessions, newest first, to pick one from —
//! each with its short id, when it began, how it ended, what it cost, its route and its first
//! prompt.

use std::io;

use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;
use unicode_width::UnicodeWidthStr as _;

use crate::term::{self, Mode};
use crate::theme::Theme;

/// One saved session as the picker lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// The session's id.
    pub id: String,
    /// The id's last 8 characters: unique where a time-ordered id's first ones are not.
    pub short: String,
    pub when: String,
    pub outcome: String,
    /// What its runs cost (`$0.0123`), or `-` when no run recorded a price.
    pub cost: String,
    pub route: String,
    /// Its first prompt, one line.
    pub task: String,
}

/// Where the picker stands: the choice under the cursor and the first one shown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cursor {
    pub at: usize,
    pub top: usize,
}

impl Cursor {
    /// Moves by `by` rows within `len` choices, keeping the cursor inside `rows` shown.
    pub fn step(&mut self, by: isize, len: usize, rows: usize) {
        let last = len.saturating_sub(1);
        self.at = self.at.saturating_add_signed(by).min(last);
        if self.at < self.top {
            self.top = self.at;
        } else if rows > 0 && self.at >= self.top + rows {
            self.top = self.at + 1 - rows;
        }
    }
}

/// Lets the user pick one of `choices` on the terminal (the alternate screen): ↑↓ (or j k)
/// move, Enter picks, Esc, q or Ctrl+C leave without one.
pub fn pick(choices: &[Choice], theme: Theme) -> io::Result<Option<usize>> {
    let mode = Mode {
        inline: false,
        mouse: false,
    };
    let mut terminal = term::start(mode)?;
    let mut cursor = Cursor::default();
    let picked = loop {
        terminal.draw(|f| draw(f, choices, cursor, theme))?;
        terminal.backend_mut().writer_mut().commit()?;
        let rows = usize::from(terminal.size()?.height.saturating_sub(3));
        let Event::Key(KeyEvent {
            code,
            modifiers,
            kind: KeyEventKind::Press,
            ..
        }) = event::read()?
        else {
            continue;
        };
        match code {
            KeyCode::Up | KeyCode::Char('k') => cursor.step(-1, choices.len(), rows),
            KeyCode::Down | KeyCode::Char('j') => cursor.step(1, choices.len(), rows),
            KeyCode::PageUp => cursor.step(-(rows as isize), choices.len(), rows),
            KeyCode::PageDown => cursor.step(rows as isize, choices.len(), rows),
            KeyCode::Enter if !choices.is_empty() => break Some(cursor.at),
            KeyCode::Esc | KeyCode::Char('q') => break None,
            KeyCode::Char('c') if modifiers.contains(KeyModifiers::CONTROL) => break None,
            _ => {}
        }
    };
    term::restore(mode);
    Ok(picked)
}

/// The picker on the whole screen.
pub fn draw(frame: &mut Frame<'_>, choices: &[Choice], cursor: Cursor, t: Theme) {
    draw_in(frame, frame.area(), choices, cursor, t);
}

/// The picker in `area`: a title, one row per choice (the one under the cursor highlighted), and
/// the keys (`/resume` in the terminal UI draws it over the session).
pub fn draw_in(frame: &mut Frame<'_>, area: Rect, choices: &[Choice], cursor: Cursor, t: Theme) {
    if area.height < 3 || area.width < 10 {
        return;
    }
    let width = usize::from(area.width);
    let title = format!("Resume a session ({} saved, newest first)", choices.len());
    frame.render_widget(
        Paragraph::new(Line::from(Span::styled(title, t.heading))),
        Rect { height: 1, ..area },
    );
    let rows = usize::from(area.height - 3);
    let shown = choices.iter().enumerate().skip(cursor.top).take(rows);
    let lines: Vec<Line<'_>> = shown
        .map(|(i, c)| {
            let head = format!(
                "{} {}  {}  {:<10}  {:>8}  {}  ",
                if i == cursor.at { "›" } else { " " },
                c.short,
                c.when,
                c.outcome,
                c.cost,
                c.route
            );
            let room = width.saturating_sub(head.width());
            let task =
                baton_text::fit_columns(&baton_text::sanitize_line(&c.task), room).into_owned();
            let style = if i == cursor.at { t.selected } else { t.text };
            Line::from(vec![Span::styled(head, style), Span::styled(task, style)])
        })
        .collect();
    frame.render_widget(
        Paragraph::new(lines),
        Rect {
            y: area.y + 2,
            height: area.height - 3,
            ..area
        },
    );
    frame.render_widget(
        Paragraph::new(Line::from(Span::styled(
            "↑↓ move · Enter resumes · Esc leaves",
            t.dim,
        ))),
        Rect {
            y: area.y + area.height - 1,
            height: 1,
            ..area
        },
    );
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    fn choices(n: usize) -> Vec<Choice> {
        (0..n)
            .map(|i| Choice {
                id: format!("{:08x}", 0xa1b2_c3d0 + i),
                short: format!("{:08x}", 0xa1b2_c3d0 + i),
                when: format!("2026-12-06 16:{:02}:00 UTC", 59 - i),
                outcome: if i % 3 == 2 { "failed" } else { "completed" }.into(),
                cost: if i % 4 == 3 {
                    "-".into()
                } else {
                    format!("${:.4}", 0.0123 * i as f64)
                },
                route: "mock/mock-model".into(),
                task: format!("task number {i}: fix the parser and explain what was wrong"),
            })
            .collect()
    }

    fn screen(choices: &[Choice], cursor: Cursor, w: u16, h: u16) -> String {
        let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
        t.draw(|f| draw(f, choices, cursor, Theme::dark())).unwrap();
        let buf = t.backend().buffer().clone();
        (0..h)
            .map(|y| {
                (0..w)
                    .map(|x| buf[(x, y)].symbol().to_string())
                    .collect::<String>()
                    .trim_end()
                    .to_string()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn the_picker_lists_sessions_and_follows_the_cursor() {
        let c = choices(12);
        let mut cursor = Cursor::default();
        cursor.step(1, c.len(), 5);
        insta::assert_snapshot!("picker", screen(&c, cursor, 100, 8));
        // Past the bottom the list scrolls; it never leaves the choices.
        for _ in 0..20 {
            cursor.step(1, c.len(), 5);
        }
        assert_eq!(cursor, Cursor { at: 11, top: 7 });
        cursor.step(-30, c.len(), 5);
        assert_eq!(cursor, Cursor { at: 0, top: 0 });
    }
}
