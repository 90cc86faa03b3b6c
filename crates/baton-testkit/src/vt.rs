//! A full terminal for end-to-end tests of the terminal UI: a child runs with a pseudo-terminal
//! as its controlling terminal and as stdin, stdout and stderr; everything it writes goes
//! through a VT parser (`vt100`) whose screen a test reads as a person would see it, and is kept
//! byte for byte for checks of the sequences themselves. Keys are typed with [`Vt::send`]; the
//! window is resized with [`Vt::resize`] (the child gets `SIGWINCH`). The child's cursor
//! position queries (`CSI 6 n`) are answered from the parser, as a terminal would.

use std::fs::File;
use std::io::{Read, Write};
use std::num::NonZeroU16;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn nz(n: u16) -> NonZeroU16 {
    NonZeroU16::new(n).unwrap_or(NonZeroU16::MIN)
}

struct Shared {
    parser: vt100::Parser,
    bytes: Vec<u8>,
    closed: bool,
}

/// A child on a terminal of its own.
pub struct Vt {
    master: File,
    shared: Arc<Mutex<Shared>>,
    child: Child,
}

impl Vt {
    /// Starts `cmd` on a `cols` × `rows` terminal.
    pub fn spawn(mut cmd: Command, cols: u16, rows: u16) -> std::io::Result<Vt> {
        let size = nix::pty::Winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        let pair = nix::pty::openpty(Some(&size), None)?;
        let slave: OwnedFd = pair.slave;
        let io = |fd: &OwnedFd| -> std::io::Result<Stdio> { Ok(Stdio::from(fd.try_clone()?)) };
        cmd.stdin(io(&slave)?)
            .stdout(io(&slave)?)
            .stderr(io(&slave)?);
        // SAFETY: between fork and exec only async-signal-safe calls: a new session whose
        // controlling terminal is the pseudo-terminal on stdin.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::ioctl(0, libc::TIOCSCTTY as _, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn()?;
        drop(slave);
        let master = File::from(pair.master);
        let shared = Arc::new(Mutex::new(Shared {
            parser: vt100::Parser::new(nz(rows), nz(cols), 0),
            bytes: Vec::new(),
            closed: false,
        }));
        let mut reader = master.try_clone()?;
        let mut answer = master.try_clone()?;
        let sink = shared.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            // EIO once the child and everything it started closed the terminal.
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let chunk = &buf[..n];
                let reply = {
                    let Ok(mut s) = sink.lock() else { break };
                    s.bytes.extend_from_slice(chunk);
                    s.parser.process(chunk);
                    let count = |q: &[u8]| chunk.windows(q.len()).filter(|w| *w == q).count();
                    let (row, col) = s.parser.screen().cursor_position();
                    let mut reply = String::new();
                    for _ in 0..count(b"\x1b[6n") {
                        reply.push_str(&format!("\x1b[{};{}R", row + 1, col + 1));
                    }
                    // Device attributes (asked after the keyboard-protocol query): a VT220
                    // that does not speak the keyboard protocol.
                    for _ in 0..count(b"\x1b[c") {
                        reply.push_str("\x1b[?62;22c");
                    }
                    reply
                };
                if !reply.is_empty() {
                    let _ = answer.write_all(reply.as_bytes());
                }
            }
            if let Ok(mut s) = sink.lock() {
                s.closed = true;
            }
        });
        Ok(Vt {
            master,
            shared,
            child,
        })
    }

    /// Types `bytes` (keys as the terminal sends them: `"\r"` is Enter, `"\x1b"` Esc).
    pub fn send(&mut self, bytes: &[u8]) {
        let _ = self.master.write_all(bytes);
        let _ = self.master.flush();
    }

    /// The screen's text, one line per row, trailing spaces removed.
    pub fn screen(&self) -> String {
        self.shared
            .lock()
            .map(|s| {
                s.parser
                    .screen()
                    .rows(0, s.parser.screen().size().1.get())
                    .map(|r| r.trim_end().to_string())
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default()
    }

    /// The screen's parser, to read cells, colours and the cursor.
    pub fn with_screen<T>(&self, f: impl FnOnce(&vt100::Screen) -> T) -> Option<T> {
        self.shared.lock().ok().map(|s| f(s.parser.screen()))
    }

    /// Every byte the child wrote so far.
    pub fn bytes(&self) -> Vec<u8> {
        self.shared
            .lock()
            .map(|s| s.bytes.clone())
            .unwrap_or_default()
    }

    /// Waits until the screen satisfies `pred` (at most `limit`); the screen when it did not.
    pub fn wait_for(&self, limit: Duration, pred: impl Fn(&str) -> bool) -> Result<String, String> {
        let mut last = String::new();
        let ok = crate::fixture::wait_until(limit, || {
            last = self.screen();
            pred(&last)
        });
        if ok {
            Ok(last)
        } else {
            Err(last)
        }
    }

    /// Resizes the window: the child gets `SIGWINCH`.
    pub fn resize(&self, cols: u16, rows: u16) {
        let size = libc::winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        if let Ok(mut s) = self.shared.lock() {
            s.parser.set_size(nz(rows), nz(cols));
        }
        // SAFETY: TIOCSWINSZ with a valid winsize on an open pty master.
        unsafe {
            libc::ioctl(self.master.as_raw_fd(), libc::TIOCSWINSZ, &size);
        }
    }

    /// The child's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits for the child to exit (at most `limit`, then kills it and panics), and for the
    /// last of what it wrote to be read.
    pub fn wait(&mut self, limit: Duration) -> ExitStatus {
        let mut status = None;
        crate::fixture::wait_until(limit, || {
            status = self.child.try_wait().ok().flatten();
            status.is_some()
        });
        match status {
            Some(s) => {
                crate::fixture::wait_until(limit, || {
                    self.shared.lock().map(|s| s.closed).unwrap_or(true)
                });
                s
            }
            None => {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "the child did not exit in {limit:?}; its screen:\n{}",
                    self.screen()
                );
            }
        }
    }
}

impl Drop for Vt {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
