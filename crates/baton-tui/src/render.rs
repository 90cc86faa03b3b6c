//! The view drawn into a ratatui frame: the transcript (virtualised), queued input, the
//! composer, the status line and the overlays.
//!
//! The transcript is laid out from its end upwards and only until the screen (plus the scroll
//! offset) is filled: a frame at 10,000 entries costs what a frame at ten does. Each entry's
//! lines are cached by width, revision, fold state and — for a running call only — its clock.

use std::collections::HashSet;

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear};
use ratatui::Frame;
use unicode_width::UnicodeWidthStr;

pub use crate::cells::SPINNER_MS;
use crate::cells::{entry_lines, gap_before, secs, spinner};
use crate::composer::Composer;
use crate::keymap::Keymap;
use crate::markdown;
pub use crate::overlay::Overlay;
use crate::overlay::{approval_height, draw_approval, draw_help, draw_undo};
use crate::theme::Theme;
use crate::view::{Body, Entry, Phase, View};

/// Everything the UI keeps beside the view.
pub struct Ui {
    pub composer: Composer,
    pub keymap: Keymap,
    pub theme: Theme,
    /// Rows scrolled up from the end; 0 follows the end.
    pub scroll: usize,
    pub focus: Option<usize>,
    pub expanded: HashSet<usize>,
    pub overlay: Option<Overlay>,
    pub branch: Option<String>,
    /// The routes of a routed session's two participants.
    pub seats: Option<(String, String)>,
    pub approval_policy: String,
    cache: Vec<Option<Cached>>,
    /// The streaming answers' kept lines (`markdown::render_streaming`).
    streams: std::collections::HashMap<usize, markdown::Streamed>,
    /// The transcript's height at the last frame (for page scrolling).
    pub page: usize,
    /// Inline mode: the entries before this one are in the terminal's scrollback.
    pub first: usize,
    /// Rows the help overlay is scrolled down.
    pub help_scroll: u16,
    /// The side panel.
    pub panel: crate::panel::Panel,
    /// The project's files, for `@` mentions.
    pub files: Vec<String>,
    /// The saved sessions `/resume` lists.
    pub sessions: Vec<crate::picker::Choice>,
    /// Attached to another process's work (`--attach`): no session of its own.
    pub attached: bool,
    /// Ctrl+C was pressed on an empty composer: one more press quits, any other key disarms it.
    pub quit_armed: bool,
    /// Esc was pressed while idle on an empty composer: one more Esc opens the undo list.
    pub undo_armed: bool,
    /// The user interrupted the turn: the queued messages stay queued when it ends (Enter
    /// sends them, Up takes the last back to edit).
    pub hold_queue: bool,
    /// The transcript as the last frame drew it (per lane), and what it was drawn from.
    memo: [Option<(MemoKey, ratatui::buffer::Buffer)>; 3],
}

/// Everything the transcript's pixels depend on.
#[derive(Debug, Clone, PartialEq, Eq)]
struct MemoKey {
    rev: u64,
    entries: usize,
    area: Rect,
    scroll: usize,
    focus: Option<usize>,
    expanded: Vec<usize>,
    first: usize,
    /// The spinner step, while a call runs near the end.
    clock: u64,
}

struct Cached {
    key: (u32, u16, bool, bool, u64),
    lines: Vec<Line<'static>>,
}

impl Ui {
    pub fn new(theme: Theme, keymap: Keymap) -> Ui {
        Ui {
            composer: Composer::default(),
            keymap,
            theme,
            scroll: 0,
            focus: None,
            expanded: HashSet::new(),
            overlay: None,
            branch: None,
            seats: None,
            approval_policy: "never".into(),
            cache: Vec::new(),
            streams: Default::default(),
            page: 10,
            first: 0,
            help_scroll: 0,
            panel: Default::default(),
            files: Vec::new(),
            sessions: Vec::new(),
            attached: false,
            quit_armed: false,
            undo_armed: false,
            hold_queue: false,
            memo: [None, None, None],
        }
    }

    /// Forgets every laid-out entry (a theme change).
    pub fn clear_cache(&mut self) {
        self.cache.clear();
        self.memo = [None, None, None];
    }

    /// The lines of entry `i` at `width`, from the cache when nothing they show changed.
    fn lines(&mut self, view: &View, i: usize, width: u16, now_ms: u64) -> &[Line<'static>] {
        let entry = &view.entries[i];
        let gap = i > 0 && gap_before(&view.entries[i - 1], entry);
        let expanded = self.expanded.contains(&i);
        // A running call shows its clock and spinner: its lines change with time.
        let clock = match &entry.body {
            Body::Tool(c) if c.ended_ms.is_none() => now_ms / SPINNER_MS + 1,
            _ => 0,
        };
        let key = (entry.rev, width, expanded, gap, clock);
        if self.cache.len() < view.entries.len() {
            self.cache.resize_with(view.entries.len(), || None);
        }
        let fresh = !matches!(&self.cache[i], Some(c) if c.key == key);
        if fresh {
            let mut lines = Vec::new();
            if gap {
                lines.push(Line::default());
            }
            match &entry.body {
                // A streaming answer: only what is new since the last frame is laid out.
                Body::Assistant {
                    text,
                    streaming: true,
                } => {
                    let cache = self.streams.entry(i).or_default();
                    let body = markdown::render_streaming(
                        text,
                        (width as usize).max(10),
                        &self.theme,
                        cache,
                    );
                    if body.is_empty() {
                        lines.push(Line::from(Span::styled("…", self.theme.dim)));
                    }
                    lines.extend(body);
                }
                _ => {
                    self.streams.remove(&i);
                    lines.extend(entry_lines(
                        entry,
                        width as usize,
                        expanded,
                        now_ms,
                        &self.theme,
                    ));
                }
            }
            self.cache[i] = Some(Cached { key, lines });
        }
        match &self.cache[i] {
            Some(c) => &c.lines,
            None => &[],
        }
    }

    /// Rows from the transcript's end to the start of entry `i` (to bring it into view).
    fn rows_after(&mut self, view: &View, i: usize, width: u16, now_ms: u64) -> (usize, usize) {
        let mut below = 0;
        for k in (i + 1..view.entries.len()).rev() {
            below += self.lines(view, k, width, now_ms).len();
        }
        (below, self.lines(view, i, width, now_ms).len())
    }
}

/// Draws the whole screen.
pub fn draw(frame: &mut Frame<'_>, view: &View, ui: &mut Ui, now_ms: u64) {
    let area = frame.area();
    if area.width < 4 || area.height < 3 {
        return;
    }
    let t = ui.theme;
    let width = area.width;
    // The composer: its lines (at most 6, at most a third of the screen), one line of border.
    let comp_lines = ui
        .composer
        .text()
        .split('\n')
        .count()
        .clamp(1, 6)
        .min((area.height as usize / 3).max(1));
    let queued = view.queued.len().min(3);
    let [body, queue_area, comp_area, status_area] = Layout::vertical([
        Constraint::Min(1),
        Constraint::Length(queued as u16),
        Constraint::Length(comp_lines as u16 + 1),
        Constraint::Length(1),
    ])
    .areas(area);

    // An approval takes the rows under the transcript, which is drawn above it: the message
    // that led to the call stays in view.
    // On a short screen the modal takes what it needs first (its change's lines give way).
    let modal_h = approval_height(view, ui.overlay.as_ref(), t, body.width).min(body.height);
    let [body, modal_area] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(modal_h)]).areas(body);
    // The side panel: beside the transcript on a wide screen, over it on a narrow one.
    let (body_t, panel_area) = if ui.panel.open {
        // A Flow's or a workflow's view, or a log, takes the whole width.
        let wide = ui.panel.detail.is_some() || ui.panel.viewer.is_some();
        if ui.panel.pinned || wide || width < 100 {
            (None, Some(body))
        } else {
            let pw = (width * 2 / 5).max(36);
            let [l, r] =
                Layout::horizontal([Constraint::Min(30), Constraint::Length(pw)]).areas(body);
            (Some(l), Some(r))
        }
    } else {
        (Some(body), None)
    };
    if let Some(b) = body_t {
        // A routed session on a wide screen: the Coordinator's lane and the Executor's.
        if ui.seats.is_some() && b.width >= 100 {
            let [l, r] =
                Layout::horizontal([Constraint::Ratio(1, 2), Constraint::Ratio(1, 2)]).areas(b);
            for (lane, area, title) in [
                (Lane::Coordinator, l, " Coordinator "),
                (Lane::Executor, r, " Executor "),
            ] {
                let responsible = view
                    .routing
                    .as_ref()
                    .and_then(|r| r.responsible.as_deref())
                    .unwrap_or("coordinator");
                let active = (lane == Lane::Executor) == (responsible == "executor");
                let style = if active { t.accent } else { t.dim };
                let block = Block::default()
                    .borders(Borders::TOP)
                    .border_style(style)
                    .title(Span::styled(
                        if active {
                            format!("{title}· responsible ")
                        } else {
                            title.to_string()
                        },
                        style,
                    ));
                let inner = block.inner(area);
                frame.render_widget(block, area);
                draw_transcript(frame, view, ui, inner, now_ms, lane);
            }
        } else {
            draw_transcript(frame, view, ui, b, now_ms, Lane::All);
        }
    }
    if let Some(p) = panel_area {
        crate::panel::draw(frame, &ui.panel, &view.project, p, now_ms, &ui.theme);
    }

    for (k, q) in view.queued.iter().take(queued).enumerate() {
        let text = format!("↳ queued: {}", baton_text::sanitize_line(q));
        frame.buffer_mut().set_line(
            queue_area.x,
            queue_area.y + k as u16,
            &Line::from(Span::styled(
                baton_text::fit_columns(&text, width as usize).into_owned(),
                t.dim,
            )),
            width,
        );
    }

    draw_composer(frame, view, ui, comp_area);
    draw_status(frame, view, ui, status_area, now_ms);

    // The `@` mention's matches, above the composer (Tab takes the first).
    if let Some((_, q)) = ui.composer.mention() {
        let found = crate::composer::fuzzy(q, &ui.files, 6);
        if !found.is_empty() && ui.overlay.is_none() {
            let h = (found.len() as u16).min(body.height);
            let popup = Rect::new(body.x, body.y + body.height - h, width, h);
            frame.render_widget(Clear, popup);
            for (k, f) in found.iter().take(h as usize).enumerate() {
                let style = if k == 0 { t.accent } else { t.dim };
                let line = Line::from(Span::styled(
                    format!(" @{}", baton_text::sanitize_line(f)),
                    style,
                ));
                frame
                    .buffer_mut()
                    .set_line(popup.x, popup.y + k as u16, &line, width);
            }
        }
    }
    // The command filter, above the composer.
    let matches = ui.composer.command_matches();
    if !matches.is_empty() && ui.overlay.is_none() {
        let h = (matches.len() as u16).min(body.height);
        let popup = Rect::new(body.x, body.y + body.height - h, width, h);
        frame.render_widget(Clear, popup);
        for (k, (c, what)) in matches.iter().take(h as usize).enumerate() {
            let line = Line::from(vec![
                Span::styled(format!(" {c:<11}"), t.accent),
                Span::styled(what.to_string(), t.dim),
            ]);
            frame
                .buffer_mut()
                .set_line(popup.x, popup.y + k as u16, &line, width);
        }
    }

    if view.approval.is_some() {
        draw_approval(frame, view, ui.overlay.as_ref(), ui.theme, modal_area);
    } else if ui.overlay == Some(Overlay::Help) {
        draw_help(frame, &ui.keymap, ui.help_scroll, ui.theme, area);
    } else if let Some(Overlay::Undo(at)) = ui.overlay {
        draw_undo(frame, view, at, ui.theme, area);
    } else if let Some(Overlay::Sessions(cursor)) = ui.overlay {
        frame.render_widget(ratatui::widgets::Clear, area);
        crate::picker::draw_in(frame, area, &ui.sessions, cursor, ui.theme);
    }
}

/// Which entries a transcript area shows: all, or one participant's lane of a routed session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    All,
    Coordinator,
    Executor,
}

impl Lane {
    fn shows(self, e: &Entry) -> bool {
        match self {
            Lane::All => true,
            Lane::Coordinator => e.seat.is_none() || matches!(e.body, Body::Routing { .. }),
            Lane::Executor => {
                e.seat.as_deref() == Some("executor") || matches!(e.body, Body::Routing { .. })
            }
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

fn draw_transcript(
    frame: &mut Frame<'_>,
    view: &View,
    ui: &mut Ui,
    area: Rect,
    now_ms: u64,
    lane: Lane,
) {
    // Nothing it shows changed (a spinner tick of the status line): the last frame's transcript.
    let running = view
        .entries
        .iter()
        .rev()
        .take(64)
        .any(|e| matches!(&e.body, Body::Tool(c) if c.ended_ms.is_none()));
    let mut expanded: Vec<usize> = ui.expanded.iter().copied().collect();
    expanded.sort_unstable();
    let key = MemoKey {
        rev: view.transcript_rev,
        entries: view.entries.len(),
        area,
        scroll: ui.scroll,
        focus: ui.focus,
        expanded,
        first: ui.first,
        clock: if running { now_ms / SPINNER_MS + 1 } else { 0 },
    };
    if let Some((k, memo)) = &ui.memo[lane.index()] {
        if *k == key {
            frame.buffer_mut().merge(memo);
            return;
        }
    }
    draw_transcript_now(frame, view, ui, area, now_ms, lane);
    let buf = frame.buffer_mut();
    let mut memo = ratatui::buffer::Buffer::empty(area);
    for y in area.top()..area.bottom() {
        for x in area.left()..area.right() {
            memo[(x, y)] = buf[(x, y)].clone();
        }
    }
    // Scrolling may have been clamped while drawing.
    let key = MemoKey {
        scroll: ui.scroll,
        ..key
    };
    ui.memo[lane.index()] = Some((key, memo));
}

fn draw_transcript_now(
    frame: &mut Frame<'_>,
    view: &View,
    ui: &mut Ui,
    area: Rect,
    now_ms: u64,
    lane: Lane,
) {
    let height = area.height as usize;
    ui.page = height.max(1);
    let inner = area.width.saturating_sub(2).max(1);
    // Bring the focused entry into view.
    if let Some(f) = ui.focus.filter(|f| *f < view.entries.len()) {
        let (below, len) = ui.rows_after(view, f, inner, now_ms);
        if below < ui.scroll {
            ui.scroll = below;
        } else if below + len > ui.scroll + height {
            ui.scroll = (below + len).saturating_sub(height);
        }
    }
    // From the end upwards until the screen and the scroll offset are filled.
    let need = height + ui.scroll;
    let mut rows: Vec<(usize, Line<'static>)> = Vec::new();
    let mut got = 0;
    let mut reached_top = true;
    for i in (ui.first.min(view.entries.len())..view.entries.len()).rev() {
        if got >= need {
            reached_top = false;
            break;
        }
        if !lane.shows(&view.entries[i]) {
            continue;
        }
        let lines = ui.lines(view, i, inner, now_ms);
        // Only the rows that can reach the screen are copied.
        for l in lines.iter().rev().take(need - got) {
            rows.push((i, l.clone()));
        }
        got += lines.len();
    }
    // Scrolled past the start: stop at it.
    if reached_top && ui.scroll > got.saturating_sub(height) {
        ui.scroll = got.saturating_sub(height);
    }
    let buf = frame.buffer_mut();
    // rows[0] is the last line; the screen's bottom row shows rows[scroll].
    for y in 0..height {
        let k = ui.scroll + (height - 1 - y);
        let Some((i, line)) = rows.get(k) else {
            continue;
        };
        let focused = ui.focus == Some(*i);
        let gutter = if focused {
            Span::styled("▌ ", ui.theme.accent)
        } else {
            Span::raw("  ")
        };
        let yy = area.y + y as u16;
        buf.set_line(area.x, yy, &Line::from(gutter), 2);
        buf.set_line(area.x + 2, yy, line, inner);
    }
    if ui.scroll > 0 {
        let note = format!(" ↓ {} more rows · ctrl+end ", ui.scroll);
        let w = note.width() as u16;
        if w < area.width {
            buf.set_string(
                area.x + area.width - w,
                area.y + area.height - 1,
                note,
                ui.theme.status,
            );
        }
    }
}

fn draw_composer(frame: &mut Frame<'_>, view: &View, ui: &Ui, area: Rect) {
    let t = ui.theme;
    let title = match (&ui.composer.search, &view.phase) {
        (Some(q), _) => {
            let m = ui.composer.search_match().unwrap_or("no match");
            format!(" search: {q} → {} ", baton_text::sanitize_line(m))
        }
        (None, _) if ui.quit_armed => " press ctrl+c again to quit ".into(),
        (None, _) if ui.undo_armed => " press Esc again to undo a prompt's file changes ".into(),
        (None, Phase::Working { .. }) => " Enter queues for the next turn · Esc interrupts ".into(),
        (None, Phase::Ended { .. }) => " the session ended · ctrl+d quits ".into(),
        (None, Phase::Idle) if !view.queued.is_empty() => format!(
            " {} queued · Enter sends · ↑ edits the last ",
            view.queued.len()
        ),
        (None, Phase::Idle) => " ? help · / commands ".into(),
    };
    let block = Block::default()
        .borders(Borders::TOP)
        .border_style(t.dim)
        .title(Span::styled(
            baton_text::fit_columns(&title, area.width as usize).into_owned(),
            t.dim,
        ));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let text = ui.composer.text();
    let lines: Vec<&str> = text.split('\n').collect();
    let (row, col) = ui.composer.cursor_pos();
    let h = inner.height as usize;
    let first = (row + 1).saturating_sub(h);
    for (k, l) in lines.iter().skip(first).take(h).enumerate() {
        let prefix = if first + k == 0 { "› " } else { "  " };
        let shown = format!("{prefix}{}", baton_text::sanitize_line(l));
        frame
            .buffer_mut()
            .set_string(inner.x, inner.y + k as u16, shown, t.text);
    }
    if ui.overlay.is_none() && view.approval.is_none() {
        let x = inner.x + ((col + 2) as u16).min(inner.width.saturating_sub(1));
        let y = inner.y + (row - first) as u16;
        frame.set_cursor_position((x, y));
    }
}

/// The status line's parts, most important first; those that do not fit are dropped.
pub fn status_parts(view: &View, ui: &Ui, now_ms: u64) -> Vec<String> {
    let mut parts = Vec::new();
    parts.push(match view.phase {
        Phase::Working { since_ms } => format!(
            "{} working {}",
            spinner(now_ms),
            secs(now_ms.saturating_sub(since_ms))
        ),
        Phase::Idle => "● ready".into(),
        Phase::Ended { outcome } => format!("■ {outcome}"),
    });
    match (&ui.seats, &view.routing) {
        (Some((c, e)), r) => {
            let who = r
                .as_ref()
                .and_then(|r| r.responsible.as_deref())
                .unwrap_or("coordinator");
            let (cm, em) = if who == "executor" {
                ("", "*")
            } else {
                ("*", "")
            };
            parts.push(format!("C{cm} {c} · E{em} {e}"));
        }
        // Attached to another process's work: no session of its own.
        (None, _) if ui.attached => {
            parts.push("attached · read-only".into());
            // The transcript is hidden: its last notice (an action's outcome) shows here.
            if let Some(text) = view.entries.iter().rev().find_map(|e| match &e.body {
                Body::Notice { text, .. } => Some(text),
                _ => None,
            }) {
                parts.push(baton_text::sanitize_line(text).into_owned());
            }
        }
        (None, _) => parts.push(view.session.model.clone()),
    }
    if !ui.attached {
        if let Some(w) = view.context_window.filter(|w| *w > 0) {
            parts.push(format!("ctx {}%", view.context_used * 100 / u64::from(w)));
        }
        let tokens = view.usage.input_tokens + view.usage.output_tokens;
        parts.push(format!("{} tok", human(tokens)));
        parts.push(match view.cost_usd {
            Some(c) => format!("${c:.4}"),
            None => "$ unpriced".into(),
        });
    }
    if ui.approval_policy != "never" {
        parts.push(format!("approval {}", ui.approval_policy));
    }
    if let Some(b) = &ui.branch {
        parts.push(format!("⎇ {b}"));
    }
    if let Some(s) = &view.session.sandbox {
        parts.push(s.clone());
    }
    parts
}

fn human(n: u64) -> String {
    if n >= 1_000_000 {
        format!("{:.1}M", n as f64 / 1e6)
    } else if n >= 1000 {
        format!("{:.1}k", n as f64 / 1e3)
    } else {
        n.to_string()
    }
}

fn draw_status(frame: &mut Frame<'_>, view: &View, ui: &Ui, area: Rect, now_ms: u64) {
    let parts = status_parts(view, ui, now_ms);
    let mut text = String::new();
    for p in parts {
        let sep = if text.is_empty() { "" } else { " │ " };
        if text.width() + sep.width() + p.width() > area.width as usize {
            break;
        }
        text.push_str(sep);
        text.push_str(&p);
    }
    let buf = frame.buffer_mut();
    buf.set_style(area, ui.theme.status);
    buf.set_string(
        area.x,
        area.y,
        baton_text::fit_columns(&text, area.width as usize),
        ui.theme.status,
    );
}

#[cfg(test)]
mod tests;
