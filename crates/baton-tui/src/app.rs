//! The event loop: messages in (the session's events, approvals, keys), requests out, and
//! frames drawn by a scheduler that merges redraw requests, draws at most 60 times a second,
//! and — when nothing animates — sleeps until the next message, so an idle screen costs nothing.

use std::time::{Duration, Instant};

use baton_protocol::{AgentEvent, ApprovalAnswer, ApprovalRequest};
use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEventKind};

use crate::composer::{parse, Parsed, COMMANDS};
use crate::keymap::{Action, Keymap};
use crate::render::{Overlay, Ui};
use crate::term::{self, Mode};
use crate::theme::Theme;
use crate::view::{Body, Level, Phase, View};

/// Answers an approval; called once.
pub type Reply = Box<dyn FnOnce(ApprovalAnswer) + Send>;

/// What reaches the loop.
pub enum Msg {
    Agent(AgentEvent),
    Approval(ApprovalRequest, Reply),
    Term(Event),
    /// The session is over (its task ended): no more events come.
    Closed,
    /// An event of the project feed (tasks, Flows, workflows).
    Project(Box<baton_events::Event>),
    /// The session's own delegation: an entry's progress.
    Delegation(usize, baton_exec::delegate::EntryEvent),
    /// Text to read (a task's log), answering [`Request::OpenLog`].
    Text {
        title: String,
        lines: Vec<String>,
    },
    /// A line the front end wants shown (an action's outcome).
    Note(String),
    /// The project's files, for `@` mentions (listed on a thread while the UI starts).
    Files(Vec<String>),
    /// The saved sessions, answering [`Request::Sessions`] (newest first).
    Sessions(Vec<crate::picker::Choice>),
    /// A `!` command ran (or failed to), in the session's sandbox.
    Shell {
        command: String,
        output: String,
        exit_code: Option<i32>,
        ok: bool,
    },
}

pub use crate::request::Request;

mod lists;

/// How the UI starts.
pub struct Options {
    pub mode: Mode,
    pub theme: Theme,
    pub keymap: Keymap,
    pub branch: Option<String>,
    /// A routed session's two routes (Coordinator, Executor).
    pub seats: Option<(String, String)>,
    pub context_window: Option<u32>,
    pub approval_policy: String,
    /// A first message to send.
    pub first: Option<String>,
    /// The conversation so far of a resumed session.
    pub history: Vec<baton_protocol::Message>,
    /// The checkpoints a resumed session can still undo, oldest first.
    pub checkpoints: Vec<crate::view::CheckpointRow>,
    /// `--attach`: follow this work of another process, read-only (but for a checkpoint's
    /// answer and the panel's actions).
    pub attach: Option<Attach>,
    /// What `/model` can switch to: the configured classes (each with its route) and routes.
    pub routes: Vec<String>,
}

/// What `baton tui --attach ID` follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attach {
    Workflow(String),
    Flow(String),
    Task(String),
    Session(String),
}

/// How the UI ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TuiEnd {
    /// The outcome the session ended with, when it did.
    pub ended: Option<baton_protocol::Outcome>,
    /// The user quit while the session worked: what runs must be stopped.
    pub working: bool,
}

/// The state of the loop, apart from the terminal: what a test drives without one.
pub struct App {
    pub view: View,
    pub ui: Ui,
    reply: Option<Reply>,
    pub quit: bool,
    started: Instant,
    /// Bytes to write outside a frame (OSC 52).
    pub raw: Vec<u8>,
    /// The editor was asked for (Ctrl+G): the loop suspends the terminal for it.
    pub want_editor: bool,
    /// Ctrl+L: the next frame redraws everything.
    pub want_clear: bool,
    /// When set, how long each frame took to build and write (the benchmarks read it).
    pub frame_times: Option<Vec<Duration>>,
    /// Attached to another process's work: nothing is sent to a session.
    pub attached: Option<Attach>,
    /// `!` commands run since the last message, as the context that goes with the next one.
    pub shell_context: Vec<String>,
    /// What `/model` can switch to ([`Options::routes`]).
    pub routes: Vec<String>,
}

impl App {
    pub fn new(opts: &Options) -> App {
        let mut ui = Ui::new(opts.theme, opts.keymap.clone());
        ui.attached = opts.attach.is_some();
        // Attached to a workflow, a Flow or a task: the panel is the whole UI, on its view.
        let detail = match &opts.attach {
            Some(Attach::Workflow(id)) => Some(Some(crate::panel::Detail::Workflow(id.clone()))),
            Some(Attach::Flow(id)) => Some(Some(crate::panel::Detail::Flow(id.clone()))),
            Some(Attach::Task(_)) => Some(None),
            Some(Attach::Session(_)) | None => None,
        };
        if let Some(detail) = detail {
            ui.panel = crate::panel::Panel {
                open: true,
                pinned: true,
                detail,
                ..Default::default()
            };
        }
        ui.branch = opts.branch.clone();
        ui.seats = opts.seats.clone();
        ui.approval_policy = opts.approval_policy.clone();
        App {
            view: View::new(opts.context_window),
            ui,
            reply: None,
            quit: false,
            started: Instant::now(),
            raw: Vec::new(),
            want_editor: false,
            want_clear: false,
            frame_times: None,
            attached: opts.attach.clone(),
            shell_context: Vec::new(),
            routes: opts.routes.clone(),
        }
    }

    pub fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// Handles one message; `send` passes requests to the session (an error is shown).
    pub fn handle(&mut self, msg: Msg, send: &mut dyn FnMut(Request) -> Result<(), String>) {
        let now = self.now_ms();
        match msg {
            Msg::Agent(ev) => {
                let turn_end = matches!(
                    ev,
                    AgentEvent::TurnCompleted { .. } | AgentEvent::InputCompleted { .. }
                );
                self.view.apply(&ev, now);
                // Queued input goes in at a turn's end: it joins the conversation at the next
                // safe point and steers the next turn.
                // After an interrupt the queue is held until the user sends or edits it.
                let held = self.ui.hold_queue && !self.view.queued.is_empty();
                if turn_end && !held {
                    self.ui.hold_queue = false;
                    for text in self.view.flush_queue(now) {
                        if let Err(e) = send(Request::Input(text)) {
                            self.view.say(Level::Error, e);
                        }
                    }
                }
            }
            Msg::Approval(req, reply) => {
                self.view.ask(req);
                self.reply = Some(reply);
            }
            Msg::Term(Event::Key(key)) if key.kind != KeyEventKind::Release => self.key(key, send),
            Msg::Term(Event::Paste(text)) => {
                self.view.rev += 1;
                match &mut self.ui.overlay {
                    Some(Overlay::Feedback(f)) => f.push_str(&text),
                    _ => self.ui.composer.paste(&text),
                }
            }
            Msg::Term(Event::Mouse(m)) => {
                self.view.rev += 1;
                match m.kind {
                    MouseEventKind::ScrollUp => self.ui.scroll += 3,
                    MouseEventKind::ScrollDown => self.ui.scroll = self.ui.scroll.saturating_sub(3),
                    _ => {}
                }
            }
            Msg::Term(Event::Resize(..)) => self.view.rev += 1,
            Msg::Term(_) => {}
            Msg::Project(e) => {
                self.view.rev += 1;
                // An attached session's transcript, as it is written.
                if let baton_events::Payload::Session(line) = &e.event {
                    use baton_agent::session::Line;
                    match line {
                        Line::Message { message, seat }
                            if seat.as_deref().is_none_or(|s| s == "coordinator") =>
                        {
                            self.view.history(std::slice::from_ref(message))
                        }
                        Line::Session(h) => {
                            self.view.session.id.clone_from(&h.session_id);
                            self.view.session.role.clone_from(&h.role);
                            self.view.session.model.clone_from(&h.model);
                        }
                        Line::Ended { outcome, .. } => {
                            self.view.phase = Phase::Ended { outcome: *outcome }
                        }
                        _ => {}
                    }
                }
                self.view.project.apply(&e, now);
            }
            Msg::Delegation(i, e) => {
                self.view.rev += 1;
                self.view.project.delegation(i, &e, now);
            }
            Msg::Text { title, lines } => {
                self.view.rev += 1;
                // Shown in the panel's viewer, the panel opened for it (`/diff` asks from the
                // composer).
                self.ui.panel.open = true;
                self.ui.panel.viewer = Some((title, lines, 0));
            }
            Msg::Note(text) => self.view.say(Level::Info, text),
            Msg::Sessions(mut list) => {
                self.view.rev += 1;
                // This session is not one to go to.
                list.retain(|c| c.id != self.view.session.id);
                if list.is_empty() {
                    self.view.say(
                        Level::Info,
                        "no other saved session of this project to resume",
                    );
                } else {
                    self.ui.sessions = list;
                    self.ui.overlay = Some(Overlay::Sessions(crate::picker::Cursor::default()));
                }
            }
            Msg::Files(files) => {
                self.view.rev += 1;
                self.ui.files = files;
            }
            Msg::Shell {
                command,
                output,
                exit_code,
                ok,
            } => {
                self.view.shell(&command, &output, exit_code, ok, now);
                let code = exit_code
                    .map(|c| format!(" (exit {c})"))
                    .unwrap_or_default();
                self.shell_context.push(format!(
                    "I ran `{command}` in the terminal{code}; its output:\n```\n{}\n```",
                    baton_text::truncate(
                        output.trim_end(),
                        16 * 1024,
                        baton_text::Keep::Ends { head_percent: 30 }
                    )
                ));
            }
            Msg::Closed => {
                if !matches!(self.view.phase, Phase::Ended { .. }) {
                    self.view.phase = Phase::Ended {
                        outcome: baton_protocol::Outcome::Failed,
                    };
                }
                self.view.rev += 1;
            }
        }
    }

    fn answer(&mut self, answer: ApprovalAnswer) {
        self.view.approval = None;
        self.ui.overlay = None;
        self.view.rev += 1;
        if let Some(reply) = self.reply.take() {
            reply(answer);
        }
    }

    fn key(&mut self, key: KeyEvent, send: &mut dyn FnMut(Request) -> Result<(), String>) {
        self.view.rev += 1;
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        // The approval modal takes every key.
        if self.view.approval.is_some() {
            self.approval_key(key, ctrl);
            return;
        }
        if self.ui.panel.open {
            let (request, handled) = self.ui.panel.key(key, &self.view.project);
            if let Some(r) = request {
                if let Err(e) = send(r) {
                    self.view.say(Level::Error, e);
                }
            }
            if handled {
                return;
            }
        }
        if self.ui.overlay == Some(Overlay::Help) {
            self.help_key(key);
            return;
        }
        if let Some(Overlay::Undo(at)) = self.ui.overlay {
            self.undo_key(key, at, send);
            return;
        }
        if let Some(Overlay::Sessions(cursor)) = self.ui.overlay {
            self.sessions_key(key, cursor, send);
            return;
        }
        if self.ui.composer.search.is_some() {
            self.search_key(key, ctrl);
            return;
        }
        if let Some(f) = self.ui.focus {
            if self.focus_key(key, f) {
                return;
            }
            self.ui.focus = None;
        }
        // Ctrl+C on an empty composer asks for a second press; any other key disarms it.
        let armed = std::mem::take(&mut self.ui.quit_armed);
        let undo_armed = std::mem::take(&mut self.ui.undo_armed);
        match self.ui.keymap.action(&key) {
            Some(Action::Cancel) if armed => self.quit = true,
            Some(Action::Interrupt) if undo_armed => {
                if let Err(e) = self.open_undo() {
                    self.view.say(Level::Info, e);
                }
            }
            Some(action) => self.act(action, send),
            None => self.type_key(key, ctrl),
        }
    }

    /// A key while an approval is asked: an answer, or the feedback typed for a refusal.
    fn approval_key(&mut self, key: KeyEvent, ctrl: bool) {
        if let Some(Overlay::Feedback(text)) = &mut self.ui.overlay {
            match key.code {
                KeyCode::Enter => {
                    let feedback = std::mem::take(text);
                    self.answer(ApprovalAnswer::No { feedback });
                }
                KeyCode::Esc => self.ui.overlay = None,
                KeyCode::Backspace => {
                    text.pop();
                }
                KeyCode::Char(c) if !ctrl => text.push(c),
                _ => {}
            }
            return;
        }
        match key.code {
            KeyCode::Char('1' | 'y') => self.answer(ApprovalAnswer::Yes),
            KeyCode::Char('2' | 'a') => self.answer(ApprovalAnswer::Always),
            KeyCode::Char('3' | 'n') => self.ui.overlay = Some(Overlay::Feedback(String::new())),
            KeyCode::Esc => self.answer(ApprovalAnswer::No {
                feedback: String::new(),
            }),
            _ => {}
        }
    }

    /// A key while the help is shown: it scrolls or closes.
    fn help_key(&mut self, key: KeyEvent) {
        match key.code {
            KeyCode::Esc | KeyCode::Char('q' | '?') | KeyCode::F(1) | KeyCode::Enter => {
                self.ui.overlay = None;
                self.ui.help_scroll = 0;
            }
            KeyCode::Down | KeyCode::Char('j') => self.ui.help_scroll += 1,
            KeyCode::Up | KeyCode::Char('k') => {
                self.ui.help_scroll = self.ui.help_scroll.saturating_sub(1)
            }
            KeyCode::PageDown => self.ui.help_scroll += 10,
            KeyCode::PageUp => self.ui.help_scroll = self.ui.help_scroll.saturating_sub(10),
            _ => {}
        }
    }

    /// A key while the history is searched: it edits the query, or ends the search.
    fn search_key(&mut self, key: KeyEvent, ctrl: bool) {
        let Some(q) = &mut self.ui.composer.search else {
            return;
        };
        match key.code {
            KeyCode::Enter => self.ui.composer.end_search(true),
            KeyCode::Esc => self.ui.composer.end_search(false),
            KeyCode::Backspace => {
                q.pop();
            }
            KeyCode::Char('r') if ctrl => {}
            KeyCode::Char(c) if !ctrl => q.push(c),
            _ => self.ui.composer.end_search(false),
        }
    }

    /// A key while entry `f` has the focus: whether it moved, toggled or copied the focus (or
    /// left it).
    fn focus_key(&mut self, key: KeyEvent, f: usize) -> bool {
        match key.code {
            KeyCode::Char('j') | KeyCode::Down => {
                self.ui.focus = Some((f + 1).min(self.view.entries.len().saturating_sub(1)));
                true
            }
            KeyCode::Char('k') | KeyCode::Up => {
                self.ui.focus = Some(f.saturating_sub(1));
                true
            }
            KeyCode::Enter | KeyCode::Char(' ') => {
                self.toggle(f);
                true
            }
            KeyCode::Char('y') => {
                self.copy(f);
                true
            }
            KeyCode::Esc => {
                self.ui.focus = None;
                self.ui.scroll = 0;
                true
            }
            _ => false,
        }
    }

    /// Does what a key bound in the keymap asks.
    fn act(&mut self, action: Action, send: &mut dyn FnMut(Request) -> Result<(), String>) {
        match action {
            Action::Submit => self.submit(send),
            Action::Newline => self.ui.composer.insert('\n'),
            Action::Interrupt => {
                if matches!(self.view.phase, Phase::Working { .. }) {
                    self.interrupt(send);
                } else if self.ui.composer.is_empty() && !self.view.checkpoints.is_empty() {
                    // Esc Esc, as Claude Code's rewind: the second opens the undo list.
                    self.ui.undo_armed = true;
                }
            }
            Action::Cancel => {
                if matches!(self.view.phase, Phase::Working { .. }) {
                    self.interrupt(send);
                } else if !self.ui.composer.is_empty() {
                    self.ui.composer.set("");
                } else {
                    // Quitting at once sent the next keystrokes to the shell: ask first.
                    self.ui.quit_armed = true;
                }
            }
            Action::Quit => {
                if self.ui.composer.is_empty() {
                    self.quit = true;
                } else {
                    self.ui.composer.delete();
                }
            }
            Action::HistoryPrev => self.history_prev(),
            Action::HistoryNext => {
                if self.ui.composer.on_last_line() {
                    self.ui.composer.history_next();
                } else {
                    self.ui.composer.vertical(false);
                }
            }
            Action::HistorySearch => self.ui.composer.search = Some(String::new()),
            Action::ScrollUp => self.ui.scroll += self.ui.page.saturating_sub(1).max(1),
            Action::ScrollDown => {
                self.ui.scroll = self
                    .ui
                    .scroll
                    .saturating_sub(self.ui.page.saturating_sub(1).max(1))
            }
            Action::ScrollTop => self.ui.scroll = usize::MAX / 4,
            Action::ScrollBottom => self.ui.scroll = 0,
            Action::FocusPrev => {
                let n = self.view.entries.len();
                if n > 0 {
                    self.ui.focus = Some(n - 1);
                }
            }
            Action::FocusNext => {}
            Action::Expand => self.expand(),
            Action::Copy => {
                if let Some(i) = self.ui.focus.or(self.view.entries.len().checked_sub(1)) {
                    self.copy(i);
                }
            }
            Action::Help => self.ui.overlay = Some(Overlay::Help),
            Action::Panel => {
                self.ui.panel.open = !self.ui.panel.open || self.ui.panel.pinned;
            }
            Action::Complete => self.complete(),
            Action::Editor => self.want_editor = true,
            Action::Redraw => self.want_clear = true,
            Action::DeleteWord => self.ui.composer.delete_word(),
            Action::CycleApproval => self.cycle_approval(send),
        }
    }

    /// Shift+Tab: the next approval policy, set in the session at once (it applies from the next
    /// tool call) and shown in the status line once the session took it.
    fn cycle_approval(&mut self, send: &mut dyn FnMut(Request) -> Result<(), String>) {
        if self.attached.is_some() {
            return;
        }
        const CYCLE: [(&str, &str); 3] = [
            (
                "never",
                "no call is asked about; the sandbox bounds what runs",
            ),
            (
                "on-write",
                "asks before every call of a tool that changes something",
            ),
            ("always", "asks before every tool call"),
        ];
        let at = CYCLE
            .iter()
            .position(|(p, _)| *p == self.ui.approval_policy)
            .map_or(0, |i| (i + 1) % CYCLE.len());
        let (next, what) = CYCLE[at];
        match send(Request::Approval(next.to_string())) {
            Ok(()) => {
                self.ui.approval_policy = next.to_string();
                self.view.say(
                    Level::Info,
                    format!("approval {next}: {what} (from the next tool call)"),
                );
            }
            Err(e) => self.view.say(Level::Error, e),
        }
    }

    /// A key bound to nothing: typed into the composer (or `?` on an empty one: the help).
    fn type_key(&mut self, key: KeyEvent, ctrl: bool) {
        match key.code {
            KeyCode::Char('?') if self.ui.composer.is_empty() => {
                self.ui.overlay = Some(Overlay::Help)
            }
            KeyCode::Char(c) if !ctrl => self.ui.composer.insert(c),
            KeyCode::Backspace => self.ui.composer.backspace(),
            KeyCode::Delete => self.ui.composer.delete(),
            KeyCode::Left => self.ui.composer.left(),
            KeyCode::Right => self.ui.composer.right(),
            KeyCode::Home => self.ui.composer.home(),
            KeyCode::End => self.ui.composer.end(),
            _ => {}
        }
    }

    /// Up in the composer: the line above, a queued message back to edit, or the history's
    /// previous entry.
    fn history_prev(&mut self) {
        if !self.ui.composer.on_first_line() {
            self.ui.composer.vertical(true);
        } else if self.ui.composer.is_empty() && !self.view.queued.is_empty() {
            // A queued message comes back to be edited.
            if let Some(q) = self.view.queued.pop() {
                self.ui.composer.set(&q);
            }
        } else {
            self.ui.composer.history_prev();
        }
    }

    /// Expands (or folds) the focused entry, or else the last tool call or reasoning.
    fn expand(&mut self) {
        let target = self.ui.focus.or_else(|| {
            self.view
                .entries
                .iter()
                .rposition(|e| matches!(e.body, Body::Tool(_) | Body::Reasoning { .. }))
        });
        if let Some(i) = target {
            self.toggle(i);
        }
    }

    /// Tab: completes the `@` mention with the best matching file, or else a command.
    fn complete(&mut self) {
        let best = self.ui.composer.mention().and_then(|(_, q)| {
            crate::composer::fuzzy(q, &self.ui.files, 1)
                .first()
                .map(|s| s.to_string())
        });
        match best {
            Some(path) => self.ui.composer.complete_mention(&path),
            None => self.ui.composer.complete(),
        }
    }

    /// Sends the queued messages (kept after an interrupt) as the next input.
    fn send_queued(&mut self, send: &mut dyn FnMut(Request) -> Result<(), String>) {
        self.ui.hold_queue = false;
        let now = self.now_ms();
        for text in self.view.flush_queue(now) {
            if let Err(e) = send(Request::Input(text)) {
                self.view.say(Level::Error, e);
            }
        }
    }

    fn interrupt(&mut self, send: &mut dyn FnMut(Request) -> Result<(), String>) {
        // What was queued was meant for after this turn, which the user is stopping: it stays
        // queued until the user sends it (Enter) or takes it back (Up).
        self.ui.hold_queue = !self.view.queued.is_empty();
        if self.ui.hold_queue {
            self.view.say(
                Level::Info,
                format!(
                    "interrupting: {} queued message(s) stay queued · Enter sends them · ↑ edits the last",
                    self.view.queued.len()
                ),
            );
        }
        if let Err(e) = send(Request::Interrupt) {
            self.view.say(Level::Error, e);
        }
    }

    fn toggle(&mut self, i: usize) {
        if !self.ui.expanded.remove(&i) {
            self.ui.expanded.insert(i);
        }
    }

    /// The entry's text on the clipboard (OSC 52).
    fn copy(&mut self, i: usize) {
        let Some(e) = self.view.entries.get(i) else {
            return;
        };
        let text = match &e.body {
            Body::User { text } | Body::Assistant { text, .. } | Body::Reasoning { text, .. } => {
                text.clone()
            }
            Body::Tool(c) => {
                let mut t = c.summary();
                if let Some(o) = &c.output {
                    t.push('\n');
                    t.push_str(o);
                }
                t
            }
            Body::Notice { text, .. } => text.clone(),
            Body::Routing { what, detail, .. } => format!("{what}: {detail}"),
        };
        self.raw.extend(term::osc52(&text));
        self.view.say(
            Level::Info,
            format!("copied {} characters", text.chars().count()),
        );
    }

    fn submit(&mut self, send: &mut dyn FnMut(Request) -> Result<(), String>) {
        let idle = matches!(self.view.phase, Phase::Idle);
        if self.ui.composer.text().trim().is_empty() {
            // Enter on an empty composer sends what an interrupt left queued.
            if idle {
                self.send_queued(send);
            }
            return;
        }
        if idle && !self.view.queued.is_empty() && !self.ui.composer.text().starts_with('/') {
            // Kept messages go first, in the order they were typed.
            self.send_queued(send);
        }
        let text = self.ui.composer.take();
        let now = self.now_ms();
        // `!command`: a shell command in the sandbox; its output goes with the next message.
        if let Some(command) = text
            .trim()
            .strip_prefix('!')
            .map(str::trim)
            .filter(|c| !c.is_empty())
        {
            if self.attached.is_some() {
                self.view.say(
                    Level::Warn,
                    "attached: read-only; start your own session with `baton tui`",
                );
                return;
            }
            let command = command.to_string();
            if let Err(e) = send(Request::Shell { command }) {
                self.view.say(Level::Error, e);
            }
            return;
        }
        match parse(&text) {
            Parsed::Text(_) if self.attached.is_some() => {
                self.view.say(Level::Warn, "attached: read-only (a checkpoint is answered in the panel, Ctrl+T); start your own session with `baton tui`");
            }
            Parsed::Text(t) => {
                // What `!` commands showed since the last message goes with it.
                let t = if self.shell_context.is_empty() {
                    t
                } else {
                    let mut full = std::mem::take(&mut self.shell_context).join("\n\n");
                    full.push_str("\n\n");
                    full.push_str(&t);
                    full
                };
                let working = matches!(self.view.phase, Phase::Working { .. });
                if matches!(self.view.phase, Phase::Ended { .. }) {
                    self.view.say(Level::Warn, "the session has ended: quit (ctrl+d) and resume it with `baton tui --resume last`");
                    return;
                }
                self.view.user(&t, now);
                if !working {
                    if let Err(e) = send(Request::Input(t)) {
                        self.view.say(Level::Error, e);
                    }
                }
            }
            Parsed::Command { name, rest } => self.command(&name, &rest, send),
        }
    }

    fn command(
        &mut self,
        name: &str,
        rest: &str,
        send: &mut dyn FnMut(Request) -> Result<(), String>,
    ) {
        let v = &self.view;
        let result = match name {
            "help" => {
                self.ui.overlay = Some(Overlay::Help);
                Ok(())
            }
            "quit" | "exit" => {
                self.quit = true;
                Ok(())
            }
            "status" => {
                let s = &v.session;
                let text = format!(
                    "session {} · role {} · route {} · sandbox {} · approval {} · {} turns · cwd {}",
                    s.id,
                    s.role,
                    s.model,
                    s.sandbox.as_deref().unwrap_or("?"),
                    self.ui.approval_policy,
                    v.turns,
                    s.cwd
                );
                self.view.say(Level::Info, text);
                Ok(())
            }
            "cost" => {
                let u = &v.usage;
                let cost = v
                    .cost_usd
                    .map(|c| format!("${c:.4}"))
                    .unwrap_or_else(|| "unpriced (see `baton models`)".into());
                let text = format!(
                    "{} turns · input {} (cached {}) · output {} tokens · {cost}",
                    v.turns, u.input_tokens, u.cached_input_tokens, u.output_tokens
                );
                self.view.say(Level::Info, text);
                Ok(())
            }
            "compact" => send(Request::Compact(
                (!rest.is_empty()).then(|| rest.to_string()),
            )),
            "profile" => send(Request::Profile(rest.to_string())),
            // A routed session's assignment runs again; in a session of one model, the saved
            // sessions to go on with (or the one named).
            "resume" if self.ui.seats.is_some() && rest.trim().is_empty() => send(Request::Resume),
            "resume" if rest.trim().is_empty() => send(Request::Sessions),
            "resume" => send(Request::Switch(rest.trim().to_string())).map(|()| self.quit = true),
            "interrupt" => send(Request::Interrupt),
            "model" if !rest.trim().is_empty() => send(Request::Model(rest.trim().to_string())),
            "model" => {
                let choices = if self.routes.is_empty() {
                    "a model class (fast, balanced, frontier, fav) or provider/model".to_string()
                } else {
                    self.routes.join(", ")
                };
                let text = format!(
                    "route {} · /model NAME switches from the next turn: {choices}",
                    v.session.model
                );
                self.view.say(Level::Info, text);
                Ok(())
            }
            "clear" => send(Request::Clear),
            "diff" => send(Request::Diff),
            "undo" if rest.trim().is_empty() => self.open_undo(),
            "undo" => match rest.trim().trim_start_matches('#').parse::<u32>() {
                Ok(n) => send(Request::Undo(n)),
                Err(_) => Err(format!(
                    "/undo takes a checkpoint number (/undo 2), not `{}`; /undo alone lists them",
                    rest.trim()
                )),
            },
            "flow" => {
                let newest = self
                    .view
                    .project
                    .rows
                    .iter()
                    .rev()
                    .find(|r| r.kind == crate::project::Kind::Flow)
                    .map(|r| r.id.clone());
                match newest {
                    Some(id) => {
                        self.ui.panel.open = true;
                        self.ui.panel.detail = Some(crate::panel::Detail::Flow(id));
                        Ok(())
                    }
                    None => Err("no Flow in this project yet: `baton flow start units.json` starts one, or ask for one (the delegate_flow tool)".to_string()),
                }
            }
            "run" => {
                let request = rest.trim().trim_matches('"').trim().to_string();
                if request.is_empty() {
                    Err("/run needs the request: /run \"add a --verbose flag\"".to_string())
                } else {
                    self.ui.panel.open = true;
                    send(Request::Run { request })
                }
            }
            "worker" => {
                let rest = rest.trim();
                match rest.split_once(char::is_whitespace) {
                    Some((worker, text)) if !text.trim().is_empty() => {
                        self.ui.panel.open = true;
                        send(Request::WorkerSend {
                            worker: worker.to_string(),
                            text: text.trim().to_string(),
                        })
                    }
                    _ => Err("/worker needs a worker and a prompt: /worker NAME what to do (`baton worker list` shows them)".to_string()),
                }
            }
            "role" => {
                let text = format!("role {} · another role: quit and start `baton tui --role NAME` (`baton roles` lists them)", v.session.role);
                self.view.say(Level::Info, text);
                Ok(())
            }
            other => {
                let names: Vec<&str> = COMMANDS.iter().map(|c| c.0).collect();
                Err(format!(
                    "unknown command /{other}: the commands are {}",
                    names.join(", ")
                ))
            }
        };
        if let Err(e) = result {
            self.view.say(Level::Error, e);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn app() -> App {
        app_with(None)
    }

    fn app_with(attach: Option<Attach>) -> App {
        App::new(&Options {
            mode: Mode {
                inline: false,
                mouse: false,
            },
            theme: Theme::dark(),
            keymap: Keymap::default(),
            branch: None,
            seats: None,
            context_window: None,
            approval_policy: "never".into(),
            first: None,
            history: Vec::new(),
            checkpoints: Vec::new(),
            attach,
            routes: vec!["fast (mock/small)".into(), "mock/big".into()],
        })
    }

    /// [22/24] `/model NAME` and `/clear` go to the session; `/model` alone lists the choices.
    #[test]
    fn slash_model_and_clear_are_requests_and_bare_model_lists_the_choices() {
        let mut a = app();
        let mut sent = Vec::new();
        typed(&mut a, "/model fast", &mut sent);
        typed(&mut a, "/clear", &mut sent);
        typed(&mut a, "/model", &mut sent);
        assert_eq!(sent, vec![Request::Model("fast".into()), Request::Clear]);
        let said = format!("{:?}", a.view.entries.last());
        assert!(
            said.contains("/model NAME switches from the next turn: fast (mock/small), mock/big"),
            "{said}"
        );
    }

    fn typed(app: &mut App, text: &str, sent: &mut Vec<Request>) {
        let mut send = |r: Request| -> Result<(), String> {
            sent.push(r);
            Ok(())
        };
        for c in text.chars() {
            let key = KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE);
            app.handle(Msg::Term(Event::Key(key)), &mut send);
        }
        app.handle(
            Msg::Term(Event::Key(KeyEvent::new(
                KeyCode::Enter,
                KeyModifiers::NONE,
            ))),
            &mut send,
        );
    }

    #[test]
    fn slash_flow_opens_the_newest_flow_and_says_so_when_there_is_none() {
        let mut a = app();
        let mut sent = Vec::new();
        typed(&mut a, "/flow", &mut sent);
        assert!(
            matches!(&a.view.entries.last().unwrap().body, Body::Notice { level: Level::Error, text } if text.contains("no Flow"))
        );
        for e in crate::project::tests::fixture_events() {
            a.handle(Msg::Project(Box::new(e)), &mut |_| Ok(()));
        }
        typed(&mut a, "/flow", &mut sent);
        assert!(a.ui.panel.open);
        assert_eq!(
            a.ui.panel.detail,
            Some(crate::panel::Detail::Flow("20261205-085300-0830".into()))
        );
        assert!(sent.is_empty());
    }

    #[test]
    fn input_while_working_is_queued_sent_at_the_turn_s_end_and_editable_until_then() {
        let mut a = app();
        let mut sent = Vec::new();
        typed(&mut a, "first", &mut sent);
        assert_eq!(sent, vec![Request::Input("first".into())]);
        typed(&mut a, "second", &mut sent);
        assert_eq!(a.view.queued, vec!["second".to_string()]);
        // Up on an empty composer takes it back to edit.
        let mut send = |r: Request| -> Result<(), String> {
            sent.push(r);
            Ok(())
        };
        a.handle(
            Msg::Term(Event::Key(KeyEvent::new(KeyCode::Up, KeyModifiers::NONE))),
            &mut send,
        );
        assert_eq!(a.ui.composer.text(), "second");
        assert!(a.view.queued.is_empty());
        typed(&mut a, "!", &mut sent);
        assert_eq!(a.view.queued, vec!["second!".to_string()]);
        let mut send = |r: Request| -> Result<(), String> {
            sent.push(r);
            Ok(())
        };
        a.handle(
            Msg::Agent(AgentEvent::TurnCompleted {
                turn: 1,
                usage: Default::default(),
                cost_usd: None,
            }),
            &mut send,
        );
        assert_eq!(
            sent,
            vec![
                Request::Input("first".into()),
                Request::Input("second!".into())
            ]
        );
    }

    fn press(a: &mut App, code: KeyCode, mods: KeyModifiers, sent: &mut Vec<Request>) {
        a.handle(Msg::Term(Event::Key(KeyEvent::new(code, mods))), &mut |r| {
            sent.push(r);
            Ok(())
        });
    }

    /// [22/24] Esc stops the turn but what was queued for after it stays queued: nothing is
    /// sent when the interrupted turn ends; Enter on the empty composer sends it.
    #[test]
    fn esc_keeps_queued_messages_queued_until_enter_sends_them() {
        let mut a = app();
        let mut sent = Vec::new();
        typed(&mut a, "first", &mut sent);
        typed(&mut a, "second", &mut sent);
        press(&mut a, KeyCode::Esc, KeyModifiers::NONE, &mut sent);
        assert_eq!(
            sent,
            vec![Request::Input("first".into()), Request::Interrupt]
        );
        for ev in [
            AgentEvent::TurnCompleted {
                turn: 1,
                usage: Default::default(),
                cost_usd: None,
            },
            AgentEvent::InputCompleted {
                final_message: String::new(),
                reason: None,
            },
        ] {
            a.handle(Msg::Agent(ev), &mut |r| {
                sent.push(r);
                Ok(())
            });
        }
        assert_eq!(sent.len(), 2, "{sent:?}");
        assert_eq!(a.view.queued, vec!["second".to_string()]);
        press(&mut a, KeyCode::Enter, KeyModifiers::NONE, &mut sent);
        assert_eq!(sent.last(), Some(&Request::Input("second".into())));
        assert!(a.view.queued.is_empty() && !a.ui.hold_queue);
    }

    /// [22/24] Ctrl+C on an empty composer asks for a second press (quitting at once sent the
    /// next keystrokes to the shell); another key in between disarms it.
    #[test]
    fn ctrl_c_on_an_empty_composer_quits_on_the_second_press() {
        let mut a = app();
        let mut sent = Vec::new();
        press(&mut a, KeyCode::Char('c'), KeyModifiers::CONTROL, &mut sent);
        assert!(!a.quit && a.ui.quit_armed);
        press(&mut a, KeyCode::Char('x'), KeyModifiers::NONE, &mut sent);
        assert!(!a.quit && !a.ui.quit_armed);
        // Ctrl+C clears the typed text first, then asks, then quits.
        press(&mut a, KeyCode::Char('c'), KeyModifiers::CONTROL, &mut sent);
        assert!(!a.quit && !a.ui.quit_armed && a.ui.composer.is_empty());
        press(&mut a, KeyCode::Char('c'), KeyModifiers::CONTROL, &mut sent);
        assert!(!a.quit && a.ui.quit_armed);
        press(&mut a, KeyCode::Char('c'), KeyModifiers::CONTROL, &mut sent);
        assert!(a.quit);
        assert!(sent.is_empty());
    }

    #[test]
    fn a_bang_command_is_run_and_its_output_goes_with_the_next_message() {
        let mut a = app();
        let mut sent = Vec::new();
        typed(&mut a, "!ls", &mut sent);
        assert_eq!(
            sent,
            vec![Request::Shell {
                command: "ls".into()
            }]
        );
        a.handle(
            Msg::Shell {
                command: "ls".into(),
                output: "a.txt\n".into(),
                exit_code: Some(0),
                ok: true,
            },
            &mut |_| Ok(()),
        );
        typed(&mut a, "use it", &mut sent);
        let Request::Input(text) = &sent[1] else {
            panic!("{sent:?}")
        };
        assert!(
            text.starts_with("I ran `ls` in the terminal (exit 0); its output:"),
            "{text}"
        );
        assert!(text.ends_with("a.txt\n```\n\nuse it"), "{text}");
    }

    #[test]
    fn enter_in_a_flow_view_opens_the_unit_s_validation_and_review() {
        let mut a = app_with(Some(Attach::Flow("20261205-085300-0830".into())));
        for e in crate::project::tests::fixture_events() {
            a.handle(Msg::Project(Box::new(e)), &mut |_| Ok(()));
        }
        let press = |a: &mut App, code: KeyCode| {
            a.handle(
                Msg::Term(Event::Key(KeyEvent::new(code, KeyModifiers::NONE))),
                &mut |_| Ok(()),
            )
        };
        press(&mut a, KeyCode::Char('j'));
        assert_eq!(a.ui.panel.unit, 1);
        press(&mut a, KeyCode::Enter);
        let (title, lines, _) = a.ui.panel.viewer.clone().unwrap();
        assert_eq!(title, "unit b: validation and review");
        assert!(lines.iter().any(|l| l == "✓ test -f b.txt"), "{lines:?}");
        assert!(
            lines.iter().any(|l| l == "  done b"),
            "the implementer's answer: {lines:?}"
        );
    }
}
