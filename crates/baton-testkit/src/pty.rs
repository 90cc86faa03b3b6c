//! A pseudo-terminal for end-to-end tests of what baton draws, and a small screen model to read
//! the result as a person would see it.
//!
//! [`Pty::open`] makes a terminal of a given size; its [`Pty::slave`] end becomes a child's
//! stderr (or stdout), and [`Pty::start_reader`] collects everything the child wrote. [`Screen`]
//! replays those bytes the way a VT100-style terminal does — printable characters with automatic
//! wrap at the right margin, `\r`, `\n` (as `\r\n`), cursor up (`ESC [ n A`), erase line (`ESC [ 2 K`),
//! other escape sequences ignored — and gives back the visible lines.

use std::fs::File;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex};

/// A pseudo-terminal pair of a fixed size.
pub struct Pty {
    master: File,
    slave: OwnedFd,
}

impl Pty {
    /// A terminal `cols` columns wide and `rows` high.
    pub fn open(cols: u16, rows: u16) -> std::io::Result<Pty> {
        let size = nix::pty::Winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        let pair = nix::pty::openpty(Some(&size), None)?;
        Ok(Pty {
            master: File::from(pair.master),
            slave: pair.slave,
        })
    }

    /// A new handle on the terminal side, to hand to a child as stdout or stderr.
    pub fn slave(&self) -> std::io::Result<std::process::Stdio> {
        Ok(std::process::Stdio::from(self.slave.try_clone()?))
    }

    /// Starts collecting what is written to the terminal, on a thread, until every handle on the
    /// terminal side is closed: drop this `Pty`'s own with [`Pty::close_slave`] after spawning.
    pub fn start_reader(&self) -> std::io::Result<Output> {
        let mut master = self.master.try_clone()?;
        let bytes = Arc::new(Mutex::new(Vec::new()));
        let sink = bytes.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            // EIO once the last terminal-side handle closes: the normal end.
            while let Ok(n) = master.read(&mut buf) {
                if n == 0 {
                    break;
                }
                if let Ok(mut b) = sink.lock() {
                    b.extend_from_slice(&buf[..n]);
                }
            }
        });
        Ok(Output { bytes })
    }

    /// Closes this process's handle on the terminal side (the children keep theirs).
    pub fn close_slave(self) -> File {
        self.master
    }
}

/// Everything written to a [`Pty`] so far.
#[derive(Clone)]
pub struct Output {
    bytes: Arc<Mutex<Vec<u8>>>,
}

impl Output {
    pub fn bytes(&self) -> Vec<u8> {
        self.bytes.lock().map(|b| b.clone()).unwrap_or_default()
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes()).into_owned()
    }
}

/// The visible state of a terminal after some output.
#[derive(Debug, Clone)]
pub struct Screen {
    cols: usize,
    lines: Vec<Vec<char>>,
    row: usize,
    col: usize,
    /// The last column was written: the next printable character wraps first.
    pending_wrap: bool,
    /// Lines written past the last column (each automatic wrap counts one).
    pub wraps: usize,
}

impl Screen {
    /// Replays `bytes` on an empty screen `cols` wide (as tall as it needs to be: no scrolling).
    pub fn replay(bytes: &[u8], cols: usize) -> Screen {
        let mut s = Screen {
            cols,
            lines: vec![Vec::new()],
            row: 0,
            col: 0,
            pending_wrap: false,
            wraps: 0,
        };
        let text = String::from_utf8_lossy(bytes);
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\u{1b}' => {
                    if chars.peek() == Some(&'[') {
                        chars.next();
                        let mut param = String::new();
                        let mut fin = ' ';
                        for c in chars.by_ref() {
                            if c.is_ascii_alphabetic() || c == '@' || c == '~' {
                                fin = c;
                                break;
                            }
                            param.push(c);
                        }
                        s.csi(&param, fin);
                    }
                }
                '\r' => {
                    s.col = 0;
                    s.pending_wrap = false;
                }
                // A terminal's line discipline turns `\n` into `\r\n` (onlcr): so does this.
                '\n' => {
                    s.down();
                    s.col = 0;
                    s.pending_wrap = false;
                }
                c if c.is_control() => {}
                c => s.put(c),
            }
        }
        s
    }

    fn down(&mut self) {
        self.row += 1;
        if self.lines.len() <= self.row {
            self.lines.push(Vec::new());
        }
    }

    fn put(&mut self, c: char) {
        if self.pending_wrap {
            self.down();
            self.col = 0;
            self.pending_wrap = false;
            self.wraps += 1;
        }
        let line = &mut self.lines[self.row];
        if line.len() <= self.col {
            line.resize(self.col + 1, ' ');
        }
        line[self.col] = c;
        if self.col + 1 >= self.cols {
            self.pending_wrap = true;
        } else {
            self.col += 1;
        }
    }

    fn csi(&mut self, param: &str, fin: char) {
        let n = param.parse::<usize>().unwrap_or(1).max(1);
        match fin {
            'A' => {
                self.row = self.row.saturating_sub(n);
                self.pending_wrap = false;
            }
            'K' => {
                // Only whole-line erase is used by baton; treat the others the same way.
                self.lines[self.row].clear();
            }
            'G' => {
                self.col = n - 1;
                self.pending_wrap = false;
            }
            _ => {}
        }
    }

    /// The visible lines, trailing spaces and trailing empty lines removed.
    pub fn lines(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .lines
            .iter()
            .map(|l| l.iter().collect::<String>().trim_end().to_string())
            .collect();
        while out.last().is_some_and(String::is_empty) {
            out.pop();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn wraps_at_the_margin_and_redraws_in_place() {
        let s = Screen::replay(b"abcdef\n", 4);
        assert_eq!(s.lines(), ["abcd", "ef"]);
        assert_eq!(s.wraps, 1);
        // Exactly the width, then a newline: no extra line.
        let s = Screen::replay(b"abcd\nx", 4);
        assert_eq!(s.lines(), ["abcd", "x"]);
        assert_eq!(s.wraps, 0);
        // A two-line block drawn, then redrawn over itself.
        let s = Screen::replay(b"\x1b[2Kone\n\x1b[2Ktwo\n\x1b[2A\x1b[2K1\n\x1b[2K2\n", 10);
        assert_eq!(s.lines(), ["1", "2"]);
    }

    #[test]
    fn a_pty_has_the_size_it_was_given() {
        let pty = Pty::open(61, 20).unwrap();
        let out = pty.start_reader().unwrap();
        let mut child = std::process::Command::new("stty")
            .arg("size")
            .stdin(pty.slave().unwrap())
            .stdout(pty.slave().unwrap())
            .spawn()
            .unwrap();
        let _master = pty.close_slave();
        child.wait().unwrap();
        crate::fixture::wait_until(std::time::Duration::from_secs(5), || {
            out.text().contains("20 61")
        });
        assert!(out.text().contains("20 61"), "{:?}", out.text());
    }
}
