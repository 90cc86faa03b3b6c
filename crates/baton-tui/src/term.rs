//! The terminal: set up, one write per frame wrapped in synchronized output, and restored on
//! every way out (return, error, panic).
//!
//! [`FrameWriter`] keeps what ratatui writes during a frame in memory and hands it to the
//! terminal in one `write` between `CSI ? 2026 h` and `CSI ? 2026 l` (DEC synchronized output:
//! a terminal that knows it shows the frame at once, one that does not ignores it). A frame in
//! which nothing changed writes nothing.

use std::io::{self, Write};

use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
    KeyboardEnhancementFlags, PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::terminal::{self, EnterAlternateScreen, LeaveAlternateScreen};
use crossterm::ExecutableCommand;
use ratatui::backend::CrosstermBackend;
use ratatui::{Terminal, TerminalOptions, Viewport};

pub const BEGIN_SYNC: &[u8] = b"\x1b[?2026h";
pub const END_SYNC: &[u8] = b"\x1b[?2026l";

/// Collects a frame's bytes; [`FrameWriter::commit`] writes them in one piece.
pub struct FrameWriter {
    frame: Vec<u8>,
    out: Box<dyn Write + Send>,
    /// Bytes and frames written so far (the benchmarks read them).
    pub written: u64,
    pub frames: u64,
}

impl FrameWriter {
    pub fn new(out: Box<dyn Write + Send>) -> FrameWriter {
        FrameWriter {
            frame: Vec::new(),
            out,
            written: 0,
            frames: 0,
        }
    }

    /// Writes the frame, wrapped in synchronized output; nothing when it is empty.
    pub fn commit(&mut self) -> io::Result<()> {
        if self.frame.is_empty() {
            return Ok(());
        }
        let mut all = Vec::with_capacity(self.frame.len() + 16);
        all.extend_from_slice(BEGIN_SYNC);
        all.append(&mut self.frame);
        all.extend_from_slice(END_SYNC);
        self.out.write_all(&all)?;
        self.out.flush()?;
        self.written += all.len() as u64;
        self.frames += 1;
        Ok(())
    }

    /// Writes bytes outside a frame (terminal modes, OSC 52), at once.
    pub fn raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.out.flush()?;
        self.written += bytes.len() as u64;
        Ok(())
    }
}

impl Write for FrameWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.frame.extend_from_slice(buf);
        Ok(buf.len())
    }

    /// ratatui flushes at the end of its draw; the frame is written by `commit`.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

pub type Tui = Terminal<CrosstermBackend<FrameWriter>>;

/// How the terminal is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mode {
    /// The main screen with native scrollback instead of the alternate screen.
    pub inline: bool,
    /// Capture the mouse (wheel scrolling; the terminal's own selection then needs Shift).
    pub mouse: bool,
}

/// The inline viewport's height: the live part of the screen.
pub fn inline_height(rows: u16) -> u16 {
    (rows / 2).clamp(6, 16).min(rows)
}

/// Puts the terminal into the UI's modes and makes the ratatui terminal.
pub fn start(mode: Mode) -> io::Result<Tui> {
    terminal::enable_raw_mode()?;
    let mut out = io::stdout();
    if !mode.inline {
        out.execute(EnterAlternateScreen)?;
    }
    out.execute(EnableBracketedPaste)?;
    if mode.mouse {
        out.execute(EnableMouseCapture)?;
    }
    // Shift+Enter is told apart from Enter where the terminal speaks the keyboard protocol.
    if terminal::supports_keyboard_enhancement().unwrap_or(false) {
        let _ = out.execute(PushKeyboardEnhancementFlags(
            KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES,
        ));
    }
    install_panic_restore(mode);
    let backend = CrosstermBackend::new(FrameWriter::new(Box::new(io::stdout())));
    let viewport = if mode.inline {
        let (_, rows) = terminal::size()?;
        Viewport::Inline(inline_height(rows))
    } else {
        Viewport::Fullscreen
    };
    Terminal::with_options(backend, TerminalOptions { viewport })
}

/// Gives the terminal back as it was.
pub fn restore(mode: Mode) {
    let mut out = io::stdout();
    let _ = out.execute(PopKeyboardEnhancementFlags);
    if mode.mouse {
        let _ = out.execute(DisableMouseCapture);
    }
    let _ = out.execute(DisableBracketedPaste);
    if !mode.inline {
        let _ = out.execute(LeaveAlternateScreen);
    }
    let _ = out.execute(crossterm::cursor::Show);
    let _ = terminal::disable_raw_mode();
    if mode.inline {
        let _ = out.write_all(b"\r\n");
        let _ = out.flush();
    }
}

fn install_panic_restore(mode: Mode) {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore(mode);
        previous(info);
    }));
}

/// OSC 52: asks the terminal to put `text` on the clipboard.
pub fn osc52(text: &str) -> Vec<u8> {
    let mut out = b"\x1b]52;c;".to_vec();
    out.extend_from_slice(base64(text.as_bytes()).as_bytes());
    out.push(0x07);
    out
}

fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for k in 0..4 {
            if k <= chunk.len() {
                s.push(A[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn base64_of_the_clipboard() {
        assert_eq!(base64(b"hello"), "aGVsbG8=");
        assert_eq!(base64(b"hi!"), "aGkh");
        assert_eq!(base64(b"a"), "YQ==");
        assert_eq!(osc52("hi!"), b"\x1b]52;c;aGkh\x07".to_vec());
    }

    #[test]
    fn a_frame_is_one_write_wrapped_in_synchronized_output_and_an_empty_one_writes_nothing() {
        #[derive(Clone, Default)]
        struct Sink(std::sync::Arc<std::sync::Mutex<Vec<Vec<u8>>>>);
        impl Write for Sink {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                self.0.lock().unwrap().push(b.to_vec());
                Ok(b.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let sink = Sink::default();
        let mut w = FrameWriter::new(Box::new(sink.clone()));
        w.commit().unwrap();
        assert!(sink.0.lock().unwrap().is_empty());
        w.write_all(b"abc").unwrap();
        w.write_all(b"def").unwrap();
        w.flush().unwrap();
        w.commit().unwrap();
        let writes = sink.0.lock().unwrap().clone();
        assert_eq!(writes, vec![b"\x1b[?2026habcdef\x1b[?2026l".to_vec()]);
        assert_eq!((w.frames, w.written), (1, 22));
    }
}
