//! Damaged records: what a reader refuses instead of guessing, and the first half of a repair.
//!
//! A log line is committed when its `\n` is on disk. What a crash can leave is a *torn* last
//! line: the start of a record, no newline, nothing after it. That event never committed, so
//! readers drop it and [`crate::JsonlLog::open`] cuts it off. Everything else that does not read
//! is [`Damage`]: a complete line that is not a record, a line (torn or not) holding NUL or
//! other control bytes (serialized records never hold them; zero-filled blocks are what a file
//! system leaves for data that never reached the disk), records out of sequence, or a snapshot
//! that records more than its log holds. Damage is never repaired on the quiet: the error names
//! the file, the line, what is lost and `baton repair ID`.

use std::path::{Path, PathBuf};

/// Where a record is damaged and what cannot be used because of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// The damaged file.
    pub path: PathBuf,
    /// The 1-based line where the damage starts.
    pub line: usize,
    /// What is wrong there, worded to follow "line N".
    pub problem: String,
    /// What cannot be used because of it.
    pub lost: String,
    /// The records before the damage, intact.
    pub intact: usize,
    /// The length in bytes of the intact part of the file: what a repair keeps.
    pub intact_len: u64,
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let id = record_id(&self.path);
        write!(
            f,
            "{}: line {} {}; {}. The {} record{} before it {} intact; nothing was changed. \
             `baton repair {id}` shows the damage, `baton repair {id} --apply` rebuilds the \
             record from the intact part (keeping the damaged file beside it as `*.damaged`)",
            self.path.display(),
            self.line,
            self.problem,
            self.lost,
            self.intact,
            if self.intact == 1 { "" } else { "s" },
            if self.intact == 1 { "is" } else { "are" },
        )
    }
}

/// The id of the record a state file belongs to: its name up to the first `.`
/// (`wf-….events.jsonl`, `f1.json`, `<session>.journal`). Ids never hold a `.`.
pub fn record_id(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    name.split('.').next().unwrap_or_default().to_string()
}

/// Whether `b` can appear in a line of a log: serialized JSON escapes every control
/// character, so only the whitespace a hand edit may leave (tab, carriage return) is allowed.
fn foreign(b: u8) -> bool {
    b < 0x20 && b != b'\t' && b != b'\r'
}

/// Whether `bytes` hold a byte no line has ([`foreign`]) other than the `\n` between lines.
/// Thirty-two bytes at a time, as four words tested together (a block with a byte below 0x20 is
/// then checked byte by byte), so the scan of a large log is fast whatever the compiler
/// vectorizes.
fn any_foreign(bytes: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let bad = |c: &[u8]| c.iter().any(|&b| foreign(b) && b != b'\n');
    // Non-zero exactly when some byte of `w` is below 0x20.
    let low = |w: u64| w.wrapping_sub(ONES * 0x20) & !w & HIGH;
    let mut blocks = bytes.chunks_exact(32);
    for block in &mut blocks {
        let mut any = 0;
        for word in block.chunks_exact(8) {
            let mut w = [0u8; 8];
            w.copy_from_slice(word);
            any |= low(u64::from_le_bytes(w));
        }
        if any != 0 && bad(block) {
            return true;
        }
    }
    bad(blocks.remainder())
}

/// A non-blank complete line of a log: its number (from 1), its bytes and where it starts.
#[derive(Debug, Clone, Copy)]
pub struct Line<'a> {
    pub number: usize,
    pub bytes: &'a [u8],
    pub start: usize,
}

/// The lines of a log's bytes, checked for what no crash can leave.
#[derive(Debug)]
pub struct Lines<'a> {
    pub path: &'a Path,
    bytes: &'a [u8],
    /// The non-blank complete lines, in order.
    pub lines: Vec<Line<'a>>,
    /// The length of the complete lines; a torn last line after them is dropped.
    pub complete_len: usize,
}

/// Splits `bytes`, the content of the log at `path`, into its lines. A torn last line (no
/// newline, nothing but record bytes) is left out; a line holding NUL or control bytes, torn
/// or not, is [`Damage`].
pub fn lines<'a>(path: &'a Path, bytes: &'a [u8]) -> Result<Lines<'a>, Box<Damage>> {
    let complete_len = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let mut out = Lines {
        path,
        bytes,
        lines: Vec::new(),
        complete_len,
    };
    // One pass over the whole log first, eight bytes at a time; the line-by-line check below
    // runs only where it found something.
    let clean = !any_foreign(bytes);
    let mut start = 0;
    let mut number = 0;
    while start < complete_len {
        number += 1;
        let end = start + memchr::memchr(b'\n', &bytes[start..]).unwrap_or(0);
        let line = &bytes[start..end];
        if !clean && line.iter().any(|&b| foreign(b)) {
            return Err(out.damage(number, start, control_problem(line)));
        }
        if !line.iter().all(u8::is_ascii_whitespace) {
            out.lines.push(Line {
                number,
                bytes: line,
                start,
            });
        }
        start = end + 1;
    }
    let tail = &bytes[complete_len..];
    if tail.iter().any(|&b| foreign(b)) {
        let problem = format!(
            "is an unfinished last line that {} (a write cut short by a crash leaves the start of a record, never these)",
            control_problem(tail).trim_start_matches("holds ")
        );
        return Err(out.damage(number + 1, complete_len, problem));
    }
    Ok(out)
}

fn control_problem(line: &[u8]) -> String {
    let nul = line.iter().filter(|&&b| b == 0).count();
    let other = line.iter().filter(|&&b| foreign(b) && b != 0).count();
    match (nul, other) {
        (n, 0) => format!("holds {n} NUL byte{} where a record should be", plural(n)),
        (0, n) => format!("holds {n} control byte{} no record has", plural(n)),
        (n, m) => format!(
            "holds {n} NUL byte{} and {m} control byte{} no record has",
            plural(n),
            plural(m)
        ),
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

impl Lines<'_> {
    /// The damage of the line `number` that starts at byte `start`: it and everything after it
    /// is lost; the records before it are intact.
    pub fn damage(&self, number: usize, start: usize, problem: String) -> Box<Damage> {
        let rest = &self.bytes[start.min(self.bytes.len())..];
        let last = number
            + rest[..rest.len().saturating_sub(1)]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
        let lost = if last > number {
            format!(
                "lines {number}–{last} ({} bytes) cannot be used",
                rest.len()
            )
        } else {
            format!("line {number} ({} bytes) cannot be used", rest.len())
        };
        Box::new(Damage {
            path: self.path.to_path_buf(),
            line: number,
            problem,
            lost,
            intact: self.lines.iter().filter(|l| l.start < start).count(),
            intact_len: start as u64,
        })
    }

    /// The damage of a record that does not read (`why`, the parser's words).
    pub fn unreadable(&self, line: &Line<'_>, why: impl std::fmt::Display) -> Box<Damage> {
        self.damage(line.number, line.start, format!("cannot be read ({why})"))
    }

    /// Checks that the records' sequence numbers (`seqs`, one per line of [`Lines::lines`], in
    /// order) count 1, 2, 3, …: a line lost or repeated in the middle is damage.
    pub fn check_sequence(&self, seqs: impl IntoIterator<Item = u64>) -> Result<(), Box<Damage>> {
        for (expected, (line, seq)) in (1u64..).zip(self.lines.iter().zip(seqs)) {
            if seq != expected {
                let problem = if seq > expected {
                    format!(
                        "is event {seq} where event {expected} should be: event{} {expected}{} missing",
                        if seq - expected > 1 { "s" } else { "" },
                        if seq - expected > 1 {
                            format!("–{} are", seq - 1)
                        } else {
                            " is".to_string()
                        }
                    )
                } else {
                    format!("is event {seq} again where event {expected} should be")
                };
                return Err(self.damage(line.number, line.start, problem));
            }
        }
        Ok(())
    }

    /// The damage of a snapshot (`snapshot`) that records event `claims` while the log ends
    /// at event `holds`: the events in between were lost from the log.
    pub fn behind_snapshot(&self, snapshot: &Path, claims: u64, holds: u64) -> Box<Damage> {
        let number = self.lines.last().map_or(1, |l| l.number + 1);
        let lost = if claims == holds + 1 {
            format!("event {claims} is lost")
        } else {
            format!("events {}–{claims} are lost", holds + 1)
        };
        Box::new(Damage {
            path: self.path.to_path_buf(),
            line: number,
            problem: format!(
                "is where the log ends, after event {holds}, but its snapshot {} records event {claims}",
                snapshot.display()
            ),
            lost,
            intact: self.lines.len(),
            intact_len: self.complete_len as u64,
        })
    }
}

/// Moves `path` aside to `<path>.damaged` (or `.damaged.2`, `.3`, … when that exists) and
/// returns where it went; `None` when there is no such file.
pub fn set_aside(path: &Path) -> std::io::Result<Option<PathBuf>> {
    if !path.exists() {
        return Ok(None);
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut n = 1;
    loop {
        let suffix = if n == 1 {
            ".damaged".to_string()
        } else {
            format!(".damaged.{n}")
        };
        let to = path.with_file_name(format!("{name}{suffix}"));
        if !to.exists() {
            std::fs::rename(path, &to)?;
            return Ok(Some(to));
        }
        n += 1;
    }
}

/// Replaces the log at `path` with its first `keep` bytes, the damaged whole set aside
/// beside it ([`set_aside`]); returns where the damaged file went.
pub fn keep_intact(path: &Path, keep: u64) -> std::io::Result<PathBuf> {
    let bytes = std::fs::read(path)?;
    let keep = (keep as usize).min(bytes.len());
    let tmp = crate::stage_file(path, &bytes[..keep])?;
    let aside = set_aside(path)?.unwrap_or_else(|| path.with_extension("damaged"));
    crate::commit_file(&tmp, path)?;
    Ok(aside)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The word-at-a-time scan finds exactly the bytes the byte-by-byte rule finds, at every
    /// offset of a word and in the remainder.
    #[test]
    fn the_word_scan_agrees_with_the_byte_rule() {
        for len in 0..21 {
            for at in 0..len {
                for b in 0..=255u8 {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = b;
                    let naive = bytes.iter().any(|&x| foreign(x) && x != b'\n');
                    assert_eq!(any_foreign(&bytes), naive, "byte {b:#04x} at {at} of {len}");
                }
            }
        }
        assert!(!any_foreign(b"{\"a\":1}\n{\"b\":\"\xc3\xa9\"}\n\t\r"));
    }
}
