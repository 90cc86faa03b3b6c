//! The side panel (Ctrl+T): every delegation of the session and every background task, Flow
//! and workflow of the project, grouped needs you / running / done, one live row each; and the
//! views it opens — a Flow's units × steps, a workflow's dispatch graph with its checkpoint
//! form, a task's log — with the actions the CLI has, each confirmed first.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};
use ratatui::Frame;
use unicode_width::UnicodeWidthStr;

use crate::markdown::wrap;
use crate::project::{Kind, Project, Row, State, Step, STEPS};
use crate::request::Request;
use crate::theme::Theme;

/// What the panel shows beside its list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Detail {
    Flow(String),
    Workflow(String),
}

/// A question the panel asks before it acts, or text it takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Form {
    /// The words answering a workflow's checkpoint.
    Answer { workflow: String, text: String },
    /// Guidance for a blocked Flow unit's repair (`flow continue --guidance`).
    Guidance { flow: String, text: String },
    /// `y` does it, anything else does not.
    Confirm { question: String, request: Request },
}

/// The panel's state.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Panel {
    pub open: bool,
    pub selected: usize,
    pub detail: Option<Detail>,
    pub form: Option<Form>,
    /// Read-only text (a task's log): its title and lines, and how far it is scrolled.
    pub viewer: Option<(String, Vec<String>, usize)>,
    /// Attached (`--attach`): the panel is the whole UI and cannot be closed.
    pub pinned: bool,
    /// The unit selected in a Flow's view.
    pub unit: usize,
}

fn glyph(step: Step) -> &'static str {
    match step {
        Step::Pending => "·",
        Step::Running => "◐",
        Step::Done => "✓",
        Step::Failed => "✗",
        Step::Skipped => "–",
    }
}

fn state_glyph(s: State) -> &'static str {
    match s {
        State::NeedsInput => "?",
        State::Running => "◐",
        State::Done => "✓",
        State::Failed => "✗",
        // Stopped on purpose: not a failure, not a success.
        State::Cancelled => "⊘",
    }
}

/// A token count as people read it: `45`, `1.2k`, `12k`, `1.5M`.
fn tokens(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=9_999 => format!("{:.1}k", n as f64 / 1000.0),
        10_000..=999_999 => format!("{}k", n / 1000),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

fn secs(ms: u64) -> String {
    if ms < 10_000 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else if ms < 60_000 {
        format!("{}s", ms / 1000)
    } else {
        format!("{}m{:02}s", ms / 60_000, ms / 1000 % 60)
    }
}

impl Panel {
    /// Handles a key while the panel is open; the request it makes, if any. `false` in the
    /// second place when the key was not the panel's.
    pub fn key(&mut self, key: KeyEvent, project: &Project) -> (Option<Request>, bool) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if self.form.is_some() {
            return self.form_key(key, ctrl);
        }
        if self.viewer.is_some() {
            self.viewer_key(key);
            return (None, true);
        }
        // Control keys are the app's (quit, the panel's own toggle, help …).
        if ctrl {
            return (None, false);
        }
        if let Some(detail) = self.detail.clone() {
            return self.detail_key(key, &detail, project, ctrl);
        }
        self.list_key(key, project)
    }

    /// A key while a form is open: it answers a confirmation, or edits (and, with Enter,
    /// confirms) the text of an answer or a guidance.
    fn form_key(&mut self, key: KeyEvent, ctrl: bool) -> (Option<Request>, bool) {
        let Some(form) = &mut self.form else {
            return (None, true);
        };
        match form {
            Form::Confirm { request, .. } => {
                let r = (key.code == KeyCode::Char('y')).then(|| request.clone());
                self.form = None;
                return (r, true);
            }
            Form::Answer { text, .. } | Form::Guidance { text, .. } => match key.code {
                KeyCode::Esc => self.form = None,
                KeyCode::Backspace => {
                    text.pop();
                }
                KeyCode::Enter if !text.trim().is_empty() => {
                    let request = match form {
                        Form::Answer { workflow, text } => Request::Answer {
                            workflow: workflow.clone(),
                            text: text.trim().to_string(),
                        },
                        Form::Guidance { flow, text } => Request::FlowContinue {
                            flow: flow.clone(),
                            guidance: text.trim().to_string(),
                        },
                        Form::Confirm { .. } => return (None, true),
                    };
                    let question = match &request {
                        Request::Answer { workflow, text } => {
                            format!("answer workflow {workflow} with “{text}”?")
                        }
                        Request::FlowContinue { flow, guidance } => {
                            format!("continue flow {flow} with “{guidance}”?")
                        }
                        _ => String::new(),
                    };
                    self.form = Some(Form::Confirm { question, request });
                }
                KeyCode::Char(c) if !ctrl => text.push(c),
                _ => {}
            },
        }
        (None, true)
    }

    /// A key while text is read in the viewer: it scrolls or closes.
    fn viewer_key(&mut self, key: KeyEvent) {
        let Some((_, lines, scroll)) = &mut self.viewer else {
            return;
        };
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => self.viewer = None,
            KeyCode::Down | KeyCode::Char('j') => {
                *scroll = (*scroll + 1).min(lines.len().saturating_sub(1))
            }
            KeyCode::Up | KeyCode::Char('k') => *scroll = scroll.saturating_sub(1),
            KeyCode::PageDown => *scroll = (*scroll + 20).min(lines.len().saturating_sub(1)),
            KeyCode::PageUp => *scroll = scroll.saturating_sub(20),
            _ => {}
        }
    }

    /// A key in a Flow's or a workflow's view: it moves among the units, opens a unit's text
    /// or packet, asks for an action, or starts a checkpoint's answer.
    fn detail_key(
        &mut self,
        key: KeyEvent,
        detail: &Detail,
        project: &Project,
        ctrl: bool,
    ) -> (Option<Request>, bool) {
        match (key.code, detail) {
            (KeyCode::Esc, _) if !self.pinned => self.detail = None,
            (KeyCode::Down | KeyCode::Char('j'), Detail::Flow(id)) => {
                let n = project.flows.get(id).map_or(0, |f| f.units.len());
                self.unit = (self.unit + 1).min(n.saturating_sub(1));
            }
            (KeyCode::Up | KeyCode::Char('k'), Detail::Flow(_)) => {
                self.unit = self.unit.saturating_sub(1)
            }
            (KeyCode::Enter, Detail::Flow(id)) => {
                if let Some(u) = project.flows.get(id).and_then(|f| f.units.get(self.unit)) {
                    self.viewer = Some((
                        format!("unit {}: validation and review", u.id),
                        unit_text(u),
                        0,
                    ));
                }
            }
            (KeyCode::Char('p'), Detail::Flow(id)) => {
                if let Some(u) = project.flows.get(id).and_then(|f| f.units.get(self.unit)) {
                    return self.open_packet(u);
                }
            }
            (KeyCode::Char('c'), Detail::Flow(id)) => {
                self.form = Some(Form::Guidance {
                    flow: id.clone(),
                    text: String::new(),
                })
            }
            (KeyCode::Char('a'), Detail::Flow(id)) => {
                self.form = Some(Form::Confirm {
                    question: format!("abandon flow {id}? (its kept work stays until `clean`)"),
                    request: Request::FlowAbandon { flow: id.clone() },
                })
            }
            (KeyCode::Char('l'), Detail::Flow(id)) => {
                self.form = Some(Form::Confirm {
                    question: format!("clean flow {id}: remove its worktrees and branches?"),
                    request: Request::FlowClean { flow: id.clone() },
                })
            }
            (KeyCode::Char(c), Detail::Workflow(id)) if !ctrl => {
                if let Some(cp) = project
                    .workflows
                    .get(id)
                    .and_then(|w| w.checkpoint.as_ref())
                {
                    // A digit picks an option; other characters start free text.
                    let text = c
                        .to_digit(10)
                        .and_then(|d| cp.options.get((d as usize).checked_sub(1)?))
                        .cloned()
                        .unwrap_or_else(|| c.to_string());
                    self.form = Some(Form::Answer {
                        workflow: id.clone(),
                        text,
                    });
                }
            }
            _ => return (None, !matches!(key.code, KeyCode::Esc)),
        }
        (None, true)
    }

    /// `p` on a Flow's unit: its review packet opened, or a note that it has none.
    fn open_packet(&mut self, u: &crate::project::Unit) -> (Option<Request>, bool) {
        match &u.packet {
            Some(path) => (
                Some(Request::OpenFile {
                    title: format!("unit {}: the review packet", u.id),
                    path: path.clone(),
                }),
                true,
            ),
            None => {
                self.viewer = Some((
                    format!("unit {}", u.id),
                    vec!["no review packet: the unit was not reviewed".into()],
                    0,
                ));
                (None, true)
            }
        }
    }

    /// A key in the list: it moves the selection, opens the selected row, cancels a running
    /// task, or closes the panel.
    fn list_key(&mut self, key: KeyEvent, project: &Project) -> (Option<Request>, bool) {
        let rows = project.grouped();
        match key.code {
            KeyCode::Down | KeyCode::Char('j') => {
                self.selected = (self.selected + 1).min(rows.len().saturating_sub(1))
            }
            KeyCode::Up | KeyCode::Char('k') => self.selected = self.selected.saturating_sub(1),
            KeyCode::Enter => {
                if let Some(row) = rows.get(self.selected) {
                    return self.open_row(row);
                }
            }
            KeyCode::Char('x') => {
                if let Some(row) = rows
                    .get(self.selected)
                    .filter(|r| r.kind == Kind::Task && r.state == State::Running)
                {
                    self.form = Some(Form::Confirm {
                        question: format!("cancel task {} ({})?", row.id, row.name),
                        request: Request::CancelTask {
                            task: row.id.clone(),
                        },
                    });
                }
            }
            KeyCode::Esc if !self.pinned => self.open = false,
            _ => return (None, false),
        }
        (None, true)
    }

    /// Enter on a row: a Flow's or a workflow's view, a transcript, a task's log, or a note
    /// that there is nothing to read yet.
    fn open_row(&mut self, row: &Row) -> (Option<Request>, bool) {
        match row.kind {
            Kind::Flow => self.detail = Some(Detail::Flow(row.id.clone())),
            Kind::Workflow => self.detail = Some(Detail::Workflow(row.id.clone())),
            // A child's (or a worker's) own transcript when it named one, else (a
            // task) its log.
            Kind::Task | Kind::Delegation | Kind::Worker | Kind::Session
                if row.session.is_some() =>
            {
                let id = row.session.clone().unwrap_or_default();
                return (Some(Request::OpenSession { id }), true);
            }
            Kind::Task => {
                return (
                    Some(Request::OpenLog {
                        task: row.id.clone(),
                    }),
                    true,
                )
            }
            Kind::Worker => {
                self.viewer = Some((
                    format!("worker {} · {}", row.name, row.role),
                    vec!["its session is not set up yet".into()],
                    0,
                ));
            }
            // The panel has no session rows (the projection keeps sessions apart).
            Kind::Delegation | Kind::Session => {
                self.viewer = Some((
                    format!("{} · {}", row.name, row.role),
                    vec!["no transcript yet: a child's own session shows once it finished and named it (a baton child does; pi, Codex, Claude Code and command children keep their own)".into()],
                    0,
                ));
            }
        }
        (None, true)
    }
}

/// One row of the list, in two lines: what and where.
fn row_lines(
    row: &Row,
    selected: bool,
    width: usize,
    now_ms: u64,
    t: &Theme,
) -> Vec<Line<'static>> {
    let style = match row.state {
        State::NeedsInput => t.warn,
        State::Running => t.accent,
        State::Done => t.ok,
        State::Failed => t.error,
        State::Cancelled => t.warn,
    };
    let mut figures = Vec::new();
    if row.turns > 0 {
        figures.push(format!("{}t", row.turns));
    }
    if row.tokens > 0 {
        figures.push(format!("{} tok", tokens(row.tokens)));
    }
    if let Some(c) = row.cost_usd {
        figures.push(format!("${c:.3}"));
    }
    // A finished row's duration comes from its events' own times; one without them that ended
    // as it was read (history folded at once) shows none: "0s" would say nothing true.
    let elapsed = row.elapsed_ms(now_ms);
    if elapsed > 0 || row.ended_ms.is_none() {
        figures.push(secs(elapsed));
    }
    let right = figures.join(" ");
    let marker = if selected { "▶" } else { " " };
    let left = format!(
        "{marker}{} {} · {}",
        state_glyph(row.state),
        row.name,
        row.role
    );
    let room = width.saturating_sub(right.width() + 1);
    let left = baton_text::fit_columns(&baton_text::sanitize_line(&left), room).into_owned();
    let pad = " ".repeat(width.saturating_sub(left.width() + right.width()));
    let first = Line::from(vec![
        Span::styled(
            left,
            if selected {
                style.patch(t.selected)
            } else {
                style
            },
        ),
        Span::raw(pad),
        Span::styled(right, t.dim),
    ]);
    let now = match (&row.tool, &row.path) {
        (Some(tool), Some(p)) => format!("{tool} {p}"),
        (Some(tool), None) => tool.clone(),
        _ => row.detail.clone(),
    };
    let second = Line::from(Span::styled(
        baton_text::fit_columns(&format!("   {}", baton_text::sanitize_line(&now)), width)
            .into_owned(),
        t.dim,
    ));
    vec![first, second]
}

/// Draws the panel into `area`.
pub fn draw(
    frame: &mut Frame<'_>,
    panel: &Panel,
    project: &Project,
    area: Rect,
    now_ms: u64,
    t: &Theme,
) {
    frame.render_widget(Clear, area);
    let block = Block::bordered().border_style(t.dim).title(Span::styled(
        match &panel.detail {
            Some(Detail::Flow(id)) => format!(" flow {id} "),
            Some(Detail::Workflow(id)) => format!(" workflow {id} "),
            None => " work · Enter opens · x cancels · Esc closes ".into(),
        },
        t.dim,
    ));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let width = inner.width as usize;
    let mut lines: Vec<Line<'static>> = Vec::new();
    match &panel.detail {
        None => {
            let rows = project.grouped();
            if rows.is_empty() {
                lines.push(Line::from(Span::styled(
                    "nothing yet: delegations, background tasks, Flows and workflows show here",
                    t.dim,
                )));
            }
            let mut group = None;
            for (k, row) in rows.iter().enumerate() {
                if group != Some(row.state) {
                    group = Some(row.state);
                    let n = rows.iter().filter(|r| r.state == row.state).count();
                    lines.push(Line::from(Span::styled(
                        format!("{} ({n})", row.state.heading()),
                        t.heading,
                    )));
                }
                lines.extend(row_lines(row, k == panel.selected, width, now_ms, t));
            }
        }
        Some(Detail::Flow(id)) => flow_lines(project, id, panel.unit, width, &mut lines, t),
        Some(Detail::Workflow(id)) => workflow_lines(project, id, width, &mut lines, t),
    }
    // Keep the selected row in view.
    let selected_line = lines
        .iter()
        .position(|l| l.spans.first().is_some_and(|s| s.content.starts_with('▶')))
        .unwrap_or(0);
    let skip = (selected_line + 2).saturating_sub(inner.height as usize);
    frame.render_widget(
        Paragraph::new(lines.into_iter().skip(skip).collect::<Vec<_>>()),
        inner,
    );
    if let Some((title, text, scroll)) = &panel.viewer {
        let shown: Vec<Line<'static>> = text
            .iter()
            .skip(*scroll)
            .map(|l| {
                Line::from(Span::styled(
                    baton_text::sanitize_line(l).into_owned(),
                    t.text,
                ))
            })
            .collect();
        frame.render_widget(Clear, area);
        frame.render_widget(
            Paragraph::new(shown).block(Block::bordered().border_style(t.dim).title(Span::styled(
                format!(" {title} · ↑↓ scroll · Esc closes "),
                t.dim,
            ))),
            area,
        );
    }
    if let Some(form) = &panel.form {
        draw_form(frame, form, area, t);
    }
}

fn flow_lines(
    project: &Project,
    id: &str,
    selected: usize,
    width: usize,
    lines: &mut Vec<Line<'static>>,
    t: &Theme,
) {
    let Some(flow) = project.flows.get(id) else {
        return;
    };
    let row = project
        .rows
        .iter()
        .find(|r| r.kind == Kind::Flow && r.id == id);
    if let Some(r) = row {
        lines.extend(wrap(
            vec![Span::styled(r.detail.clone(), t.text)],
            width,
            "",
            "  ",
        ));
    }
    lines.push(Line::default());
    let name_w = flow
        .units
        .iter()
        .map(|u| u.id.width())
        .max()
        .unwrap_or(4)
        .max(4);
    // Narrow: short step names, no base..tip column.
    let narrow = width < name_w + 2 + 5 * 10 + 18;
    let col = if narrow { 5 } else { 10 };
    let mut head = format!(" {:<name_w$} ", "unit");
    for s in STEPS {
        let s = if narrow { &s[..3] } else { s };
        head.push_str(&format!("{s:<col$}"));
    }
    if !narrow {
        head.push_str("base..tip");
    }
    lines.push(Line::from(Span::styled(head, t.heading)));
    for (k, u) in flow.units.iter().enumerate() {
        let marker = if k == selected { "▸" } else { " " };
        let mut spans = vec![Span::styled(format!("{marker}{:<name_w$} ", u.id), t.text)];
        for s in u.steps {
            let st = match s {
                Step::Done => t.ok,
                Step::Failed => t.error,
                Step::Running => t.accent,
                Step::Pending | Step::Skipped => t.dim,
            };
            spans.push(Span::styled(format!("{:<col$}", glyph(s)), st));
        }
        let range = match (&u.base, &u.tip) {
            (Some(b), Some(tip)) if !narrow => format!("{b}..{tip}"),
            _ => String::new(),
        };
        spans.push(Span::styled(range, t.dim));
        lines.push(Line::from(spans));
        if let Some(note) = &u.note {
            lines.extend(wrap(
                vec![Span::styled(note.clone(), t.warn)],
                width,
                "  ! ",
                "    ",
            ));
        }
        if let Some(review) = u.review.as_ref().filter(|_| u.steps[3] == Step::Failed) {
            for l in review.lines().take(6) {
                lines.extend(wrap(
                    vec![Span::styled(
                        baton_text::sanitize_line(l).into_owned(),
                        t.dim,
                    )],
                    width,
                    "  │ ",
                    "  │ ",
                ));
            }
        }
    }
    lines.push(Line::default());
    lines.extend(wrap(
        vec![Span::styled(
            "j/k unit · Enter its validation and review · p review packet · c continue --guidance · a abandon · l clean · Esc back",
            t.dim,
        )],
        width,
        "",
        "",
    ));
}

fn workflow_lines(
    project: &Project,
    id: &str,
    width: usize,
    lines: &mut Vec<Line<'static>>,
    t: &Theme,
) {
    let Some(wf) = project.workflows.get(id) else {
        return;
    };
    lines.push(Line::from(Span::styled(
        format!("{} · {}", wf.kind, wf.phase),
        t.heading,
    )));
    lines.push(budget_line(&wf.spent, width, t));
    for n in &wf.nodes {
        let st = match n.state {
            Step::Done => t.ok,
            Step::Failed => t.error,
            Step::Running => t.accent,
            Step::Pending | Step::Skipped => t.dim,
        };
        let cycle = if n.attempt > 1 {
            format!(" ↻ {}/3", n.attempt - 1)
        } else {
            String::new()
        };
        let verdict = n
            .verdict
            .as_deref()
            .map(|v| format!(" {v}"))
            .unwrap_or_default();
        // What a workflow's log says is shown as text only (its fields come from agents' output
        // through the runner).
        let clean = |s: String| baton_text::sanitize_line(&s).into_owned();
        lines.push(Line::from(vec![
            Span::styled(format!("{} ", glyph(n.state)), st),
            Span::styled(clean(format!("{} {}", n.task_id, n.agent)), t.text),
            Span::styled(clean(format!(" ({}){verdict}{cycle}", n.phase)), t.dim),
        ]));
        // A failed dispatch says why, in words, under its row.
        if let (Step::Failed, Some(reason)) = (n.state, &n.reason) {
            lines.extend(wrap(
                vec![Span::styled(clean(reason.clone()), t.error)],
                width,
                "    ",
                "    ",
            ));
        }
    }
    if let Some(note) = &wf.note {
        lines.extend(wrap(
            vec![Span::styled(
                baton_text::sanitize_line(note).into_owned(),
                t.dim,
            )],
            width,
            "",
            "",
        ));
    }
    if let Some(cp) = &wf.checkpoint {
        lines.push(Line::default());
        lines.push(Line::from(Span::styled(
            format!("checkpoint: {}", cp.gate),
            t.warn,
        )));
        lines.extend(wrap(
            vec![Span::styled(
                baton_text::sanitize_line(&cp.question).into_owned(),
                t.text,
            )],
            width,
            "",
            "",
        ));
        for (k, o) in cp.options.iter().enumerate() {
            let rec = if cp.recommended.as_deref() == Some(o.as_str()) {
                "  (recommended)"
            } else {
                ""
            };
            lines.push(Line::from(Span::styled(
                baton_text::sanitize_line(&format!("{}  {o}{rec}", k + 1)).into_owned(),
                t.accent,
            )));
        }
        lines.push(Line::from(Span::styled(
            "a number picks an option; or type your answer · Esc back",
            t.dim,
        )));
    }
}

fn draw_form(frame: &mut Frame<'_>, form: &Form, area: Rect, t: &Theme) {
    let (title, body) = match form {
        Form::Answer { text, .. } => (" your answer (Enter) ", format!("› {text}")),
        Form::Guidance { text, .. } => (" guidance for the repair (Enter) ", format!("› {text}")),
        Form::Confirm { question, .. } => (" confirm ", format!("{question}  y / n")),
    };
    let w = area.width.saturating_sub(2).max(10);
    let lines = wrap(
        vec![Span::styled(
            baton_text::sanitize_line(&body).into_owned(),
            t.text,
        )],
        w.saturating_sub(2) as usize,
        "",
        "",
    );
    let h = (lines.len() as u16 + 2).min(area.height);
    let r = Rect::new(area.x + 1, area.y + area.height.saturating_sub(h + 1), w, h);
    frame.render_widget(Clear, r);
    frame.render_widget(
        Paragraph::new(lines).wrap(Wrap { trim: false }).block(
            Block::bordered()
                .border_style(t.warn)
                .title(Span::styled(title, t.warn)),
        ),
        r,
    );
}

/// The spending, and against a budget a gauge: `$0.0111 of $0.0150 ███████░░░ 74%`.
fn budget_line(s: &crate::project::Spent, width: usize, t: &Theme) -> Line<'static> {
    let mut text = format!("spent ${:.4}", s.cost_usd);
    if s.tokens() > 0 {
        text.push_str(&format!(" · {} tokens", s.tokens()));
    }
    let Some(share) = s.share() else {
        return Line::from(Span::styled(format!("{text} · no budget"), t.dim));
    };
    let limits: Vec<String> = [
        s.budget_usd.map(|b| format!("${b:.4}")),
        s.budget_tokens.map(|b| format!("{b} tokens")),
    ]
    .into_iter()
    .flatten()
    .collect();
    text.push_str(&format!(" of {} ", limits.join(" / ")));
    let room = width.saturating_sub(text.width() + 6).clamp(4, 20);
    let filled = ((share.min(1.0)) * room as f64).round() as usize;
    let style = if share >= 0.9 {
        t.error
    } else if share >= 0.7 {
        t.warn
    } else {
        t.ok
    };
    Line::from(vec![
        Span::styled(text, t.dim),
        Span::styled("█".repeat(filled), style),
        Span::styled("░".repeat(room - filled), t.dim),
        Span::styled(format!(" {:.0}%", share * 100.0), style),
    ])
}

/// A unit's validation (each command, passed or not, and its output) and its reviewer's words.
fn unit_text(u: &crate::project::Unit) -> Vec<String> {
    let mut out = vec![format!("unit {} ({})", u.id, u.name)];
    match &u.implementer {
        Some(text) => {
            out.push("implementer:".into());
            out.extend(text.lines().map(|l| format!("  {l}")));
        }
        None => out.push("implementer: not finished".into()),
    }
    out.push(String::new());
    if u.validation.is_empty() {
        out.push("validation: not run".into());
    }
    for c in &u.validation {
        out.push(format!("{} {}", if c.ok { "✓" } else { "✗" }, c.command));
        out.extend(c.output.lines().map(|l| format!("  {l}")));
    }
    out.push(String::new());
    match &u.review {
        Some(r) => {
            out.push("review:".into());
            out.extend(r.lines().map(|l| format!("  {l}")));
        }
        None => out.push("review: none".into()),
    }
    if let Some(note) = &u.note {
        out.push(String::new());
        out.push(format!("blocked: {note}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [22/24] 45 tokens once showed as `0k tok` and a one-second step as `0s`.
    #[test]
    fn small_figures_read_as_what_they_are() {
        assert_eq!(tokens(45), "45");
        assert_eq!(tokens(1_234), "1.2k");
        assert_eq!(tokens(45_000), "45k");
        assert_eq!(tokens(2_500_000), "2.5M");
        assert_eq!(secs(400), "0.4s");
        assert_eq!(secs(12_300), "12s");
        assert_eq!(secs(75_000), "1m15s");
    }
}
