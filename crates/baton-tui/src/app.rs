//! The event loop: messages in (the session's events, approvals, keys), requests out, and
//! frames drawn by a scheduler that merges redraw requests, draws at most 60 times a second,
//! and — when nothing animates — sleeps until the next message, so an idle screen costs nothing.

use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use baton_protocol::{AgentEvent, ApprovalAnswer, ApprovalRequest};
use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEventKind};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget};

use crate::composer::{parse, Parsed, COMMANDS};
use crate::keymap::{Action, Keymap};
use crate::render::{self, Overlay, Ui, SPINNER_MS};
use crate::term::{self, Mode, Tui};
use crate::theme::Theme;
use crate::view::{Body, Level, Phase, View};

/// The shortest time between two frames: 60 a second at most.
pub const FRAME: Duration = Duration::from_micros(16_667);
/// The shortest time between a frame and the one echoing a key: typing is never held for a
/// stream's frame slot, and a key adds at most one frame.
pub const KEY_FRAME: Duration = Duration::from_millis(4);

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
    /// A `!` command ran (or failed to), in the session's sandbox.
    Shell {
        command: String,
        output: String,
        exit_code: Option<i32>,
        ok: bool,
    },
}

pub use crate::request::Request;

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
    /// `--attach`: follow this work of another process, read-only (but for a checkpoint's
    /// answer and the panel's actions).
    pub attach: Option<Attach>,
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
}

impl App {
    pub fn new(opts: &Options) -> App {
        let mut ui = Ui::new(opts.theme, opts.keymap.clone());
        ui.attached = opts.attach.is_some();
        match &opts.attach {
            Some(Attach::Workflow(id)) => {
                ui.panel = crate::panel::Panel {
                    open: true,
                    pinned: true,
                    detail: Some(crate::panel::Detail::Workflow(id.clone())),
                    ..Default::default()
                }
            }
            Some(Attach::Flow(id)) => {
                ui.panel = crate::panel::Panel {
                    open: true,
                    pinned: true,
                    detail: Some(crate::panel::Detail::Flow(id.clone())),
                    ..Default::default()
                }
            }
            Some(Attach::Task(_)) => {
                ui.panel = crate::panel::Panel {
                    open: true,
                    pinned: true,
                    ..Default::default()
                }
            }
            Some(Attach::Session(_)) | None => {}
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
                if turn_end {
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
                self.ui.panel.viewer = Some((title, lines, 0));
            }
            Msg::Note(text) => self.view.say(Level::Info, text),
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
                        &output,
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
                KeyCode::Char('3' | 'n') => {
                    self.ui.overlay = Some(Overlay::Feedback(String::new()))
                }
                KeyCode::Esc => self.answer(ApprovalAnswer::No {
                    feedback: String::new(),
                }),
                _ => {}
            }
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
            return;
        }
        if let Some(q) = &mut self.ui.composer.search {
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
            return;
        }
        if let Some(f) = self.ui.focus {
            let handled = match key.code {
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
            };
            if handled {
                return;
            }
            self.ui.focus = None;
        }
        let action = self.ui.keymap.action(&key);
        match action {
            Some(Action::Submit) => self.submit(send),
            Some(Action::Newline) => self.ui.composer.insert('\n'),
            Some(Action::Interrupt) => {
                if matches!(self.view.phase, Phase::Working { .. }) {
                    self.interrupt(send);
                }
            }
            Some(Action::Cancel) => {
                if matches!(self.view.phase, Phase::Working { .. }) {
                    self.interrupt(send);
                } else if !self.ui.composer.is_empty() {
                    self.ui.composer.set("");
                } else {
                    self.quit = true;
                }
            }
            Some(Action::Quit) => {
                if self.ui.composer.is_empty() {
                    self.quit = true;
                } else {
                    self.ui.composer.delete();
                }
            }
            Some(Action::HistoryPrev) => {
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
            Some(Action::HistoryNext) => {
                if self.ui.composer.on_last_line() {
                    self.ui.composer.history_next();
                } else {
                    self.ui.composer.vertical(false);
                }
            }
            Some(Action::HistorySearch) => self.ui.composer.search = Some(String::new()),
            Some(Action::ScrollUp) => self.ui.scroll += self.ui.page.saturating_sub(1).max(1),
            Some(Action::ScrollDown) => {
                self.ui.scroll = self
                    .ui
                    .scroll
                    .saturating_sub(self.ui.page.saturating_sub(1).max(1))
            }
            Some(Action::ScrollTop) => self.ui.scroll = usize::MAX / 4,
            Some(Action::ScrollBottom) => self.ui.scroll = 0,
            Some(Action::FocusPrev) => {
                let n = self.view.entries.len();
                if n > 0 {
                    self.ui.focus = Some(n - 1);
                }
            }
            Some(Action::FocusNext) => {}
            Some(Action::Expand) => {
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
            Some(Action::Copy) => {
                if let Some(i) = self.ui.focus.or(self.view.entries.len().checked_sub(1)) {
                    self.copy(i);
                }
            }
            Some(Action::Help) => self.ui.overlay = Some(Overlay::Help),
            Some(Action::Panel) => {
                self.ui.panel.open = !self.ui.panel.open || self.ui.panel.pinned;
            }
            Some(Action::Complete) => {
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
            Some(Action::Editor) => self.want_editor = true,
            Some(Action::Redraw) => self.want_clear = true,
            Some(Action::DeleteWord) => self.ui.composer.delete_word(),
            None => match key.code {
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
            },
        }
    }

    fn interrupt(&mut self, send: &mut dyn FnMut(Request) -> Result<(), String>) {
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
        if self.ui.composer.text().trim().is_empty() {
            return;
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
            "resume" => send(Request::Resume),
            "interrupt" => send(Request::Interrupt),
            "model" => {
                let text = format!("route {} · another route: quit and start `baton tui --model provider/model` (or --model-class)", v.session.model);
                self.view.say(Level::Info, text);
                Ok(())
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

/// Runs the UI on this thread until the user quits: messages from `rx` (a thread of its own
/// reads the terminal into `tx`), requests through `send`.
pub fn run(
    opts: Options,
    tx: Sender<Msg>,
    rx: Receiver<Msg>,
    send: &mut dyn FnMut(Request) -> Result<(), String>,
) -> anyhow::Result<TuiEnd> {
    let mut app = App::new(&opts);
    let mut terminal = term::start(opts.mode)?;
    let inline = opts.mode.inline;
    std::thread::spawn(move || loop {
        // Inline, ratatui asks the terminal where the cursor is (on a resize): the reader must
        // let go of the terminal now and then for the answer to reach it. Full screen nothing
        // asks, and the reader waits for input without waking.
        if inline && !matches!(crossterm::event::poll(Duration::from_millis(100)), Ok(true)) {
            continue;
        }
        let Ok(ev) = crossterm::event::read() else {
            break;
        };
        if tx.send(Msg::Term(ev)).is_err() {
            break;
        }
    });
    app.view.history(&opts.history);
    if let Some(first) = opts.first.clone() {
        app.view.user(&first, 0);
        if let Err(e) = send(Request::Input(first)) {
            app.view.say(Level::Error, e);
        }
    }
    let result = event_loop(&mut app, &mut terminal, opts.mode, &rx, send);
    term::restore(opts.mode);
    result?;
    Ok(TuiEnd {
        ended: match app.view.phase {
            Phase::Ended { outcome } => Some(outcome),
            _ => None,
        },
        working: matches!(app.view.phase, Phase::Working { .. }) || app.view.approval.is_some(),
    })
}

/// The loop itself, on any terminal (the benchmarks give it one writing to memory): until the
/// user quits or every sender of `rx` is gone.
pub fn event_loop(
    app: &mut App,
    terminal: &mut Tui,
    mode: Mode,
    rx: &Receiver<Msg>,
    send: &mut dyn FnMut(Request) -> Result<(), String>,
) -> anyhow::Result<()> {
    let mut drawn_rev = u64::MAX;
    // A key typed since the last frame: its echo is drawn after `KEY_FRAME`, not a whole frame.
    let mut typed = false;
    let mut last_frame: Option<Instant> = None;
    let mut last_tick = 0u64;
    loop {
        // Draw when something changed, at most once a frame.
        let now = Instant::now();
        let gap = if typed { KEY_FRAME } else { FRAME };
        let due = last_frame.map(|t| t + gap).unwrap_or(now);
        let tick = app.view.animating().then(|| app.now_ms() / SPINNER_MS);
        let changed = app.view.rev != drawn_rev || tick.is_some_and(|t| t != last_tick);
        if changed && now >= due {
            if app.want_clear {
                app.want_clear = false;
                // Everything drawn again: a resize to the same size clears the viewport and
                // forgets what was drawn (`clear` would ask the terminal where the cursor is).
                let size = terminal.size()?;
                terminal.resize(ratatui::layout::Rect::new(0, 0, size.width, size.height))?;
            }
            if mode.inline {
                emit_settled(app, terminal)?;
            }
            let now_ms = app.now_ms();
            let began = Instant::now();
            terminal.draw(|f| render::draw(f, &app.view, &mut app.ui, now_ms))?;
            terminal.backend_mut().writer_mut().commit()?;
            if let Some(times) = &mut app.frame_times {
                times.push(began.elapsed());
            }
            drawn_rev = app.view.rev;
            typed = false;
            last_tick = tick.unwrap_or(last_tick);
            last_frame = Some(now);
        }
        if !app.raw.is_empty() {
            let raw = std::mem::take(&mut app.raw);
            terminal.backend_mut().writer_mut().raw(&raw)?;
        }
        if app.quit {
            return Ok(());
        }
        if app.want_editor {
            app.want_editor = false;
            edit_in_editor(app, terminal, mode)?;
            continue;
        }
        // Sleep until a message, the next frame (a pending change) or the next spinner step;
        // with nothing pending and nothing animating, until a message.
        let pending = app.view.rev != drawn_rev;
        let wake = if pending {
            Some(due.max(now))
        } else if app.view.animating() {
            let next_tick_ms = (app.now_ms() / SPINNER_MS + 1) * SPINNER_MS;
            Some(Instant::now() + Duration::from_millis(next_tick_ms.saturating_sub(app.now_ms())))
        } else {
            None
        };
        let first = match wake {
            None => rx.recv().ok(),
            Some(at) => match rx.recv_timeout(at.saturating_duration_since(Instant::now())) {
                Ok(m) => Some(m),
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => None,
            },
        };
        let Some(first) = first else {
            return Ok(());
        };
        typed |= is_input(&first);
        app.handle(first, send);
        // Everything already waiting goes into the same frame.
        while let Ok(m) = rx.try_recv() {
            typed |= is_input(&m);
            app.handle(m, send);
            if app.quit {
                break;
            }
        }
    }
}

/// What the user typed or pasted: drawn sooner than a stream's next frame.
fn is_input(m: &Msg) -> bool {
    matches!(m, Msg::Term(Event::Key(_) | Event::Paste(_)))
}

/// Inline mode: the entries that will not change any more go to the terminal's scrollback,
/// once, above the live area; the live area draws the rest.
fn emit_settled(app: &mut App, terminal: &mut Tui) -> anyhow::Result<()> {
    let width = terminal.size()?.width;
    let now = app.now_ms();
    let start = app.ui.first;
    let mut end = start;
    while end < app.view.entries.len() && settled(&app.view, end) {
        end += 1;
    }
    if end == start {
        return Ok(());
    }
    let mut lines: Vec<Line<'static>> = Vec::new();
    for i in start..end {
        if i > 0 {
            lines.push(Line::default());
        }
        lines.extend(crate::cells::entry_lines(
            &app.view.entries[i],
            width as usize,
            false,
            now,
            &app.ui.theme,
        ));
    }
    app.ui.first = end;
    // ratatui inserts at most the screen's height at a time.
    for chunk in lines.chunks(usize::from(terminal.size()?.height.max(1))) {
        let chunk = chunk.to_vec();
        terminal.insert_before(chunk.len() as u16, |buf| {
            Paragraph::new(chunk).render(buf.area, buf);
        })?;
    }
    Ok(())
}

/// An entry that will not change: not streaming, not a running call.
fn settled(view: &View, i: usize) -> bool {
    match &view.entries[i].body {
        Body::Assistant { streaming, .. } | Body::Reasoning { streaming, .. } => !streaming,
        Body::Tool(c) => c.ended_ms.is_some(),
        _ => true,
    }
}

/// Ctrl+G: the composer's text in `$VISUAL` / `$EDITOR` (else `vi`), the terminal handed over
/// meanwhile.
fn edit_in_editor(app: &mut App, terminal: &mut Tui, mode: Mode) -> anyhow::Result<()> {
    let editor = std::env::var("VISUAL")
        .or_else(|_| std::env::var("EDITOR"))
        .ok()
        .filter(|e| !e.trim().is_empty())
        .unwrap_or_else(|| "vi".into());
    let file = std::env::temp_dir().join(format!("baton-compose-{}.md", std::process::id()));
    std::fs::write(&file, app.ui.composer.text())?;
    term::restore(mode);
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(&file)
        .status();
    *terminal = term::start(mode)?;
    match status {
        Ok(s) if s.success() => {
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            app.ui.composer.set(text.trim_end_matches('\n'));
        }
        Ok(s) => app.view.say(
            Level::Warn,
            format!("{editor} exited with {s}: the input is unchanged"),
        ),
        Err(e) => app.view.say(
            Level::Error,
            format!("cannot run {editor}: {e}: set $EDITOR"),
        ),
    }
    let _ = std::fs::remove_file(&file);
    app.view.rev += 1;
    Ok(())
}
