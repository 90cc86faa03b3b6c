//! The event loop and its frame scheduler: messages in (the session's events, approvals,
//! keys), requests out, and frames drawn only when something changed — redraws merged and
//! capped at 60 a second (a typed key 4 ms after the last frame), and no timer at all when
//! nothing animates, so an idle screen costs nothing.

use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use crossterm::event::Event;
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget};

use crate::app::{App, Msg, Options, TuiEnd};
use crate::render::{self, SPINNER_MS};
use crate::request::Request;
use crate::term::{self, Mode, Tui};
use crate::view::{Body, Level, Phase, View};

/// The shortest time between two frames: 60 a second at most.
pub const FRAME: Duration = Duration::from_micros(16_667);
/// The shortest time between a frame and the one echoing a key: typing is never held for a
/// stream's frame slot, and a key adds at most one frame.
pub const KEY_FRAME: Duration = Duration::from_millis(4);

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
    app.view.checkpoints = opts.checkpoints.clone();
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
    // A file of our own (0600, unguessable name), removed when this returns.
    let compose = tempfile::Builder::new()
        .prefix("baton-compose-")
        .suffix(".md")
        .tempfile()?;
    let file = compose.path().to_path_buf();
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
    drop(compose);
    app.view.rev += 1;
    Ok(())
}
