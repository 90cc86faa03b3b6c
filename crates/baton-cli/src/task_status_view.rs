//! Live status of delegated tasks: a redrawn two-line block per task on a TTY, plain progress
//! lines otherwise.

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use baton_exec::delegate::{EntryEvent, EntryStatus};
use baton_exec::Activity;

/// Most rows shown at once; at capacity the oldest finished row makes room.
const CAPACITY: usize = 8;

#[derive(Debug, Clone, Default)]
struct Row {
    index: usize,
    name: String,
    role: String,
    model: String,
    thinking: Option<String>,
    started: Option<Instant>,
    ended: Option<Instant>,
    status: Option<EntryStatus>,
    /// The running tool and when it started, or `None` while thinking.
    tool: Option<(String, Option<String>, Instant)>,
    turns: u32,
    tools: u32,
    tokens: u64,
    finished_seq: u64,
}

struct Board {
    rows: Vec<Row>,
    drawn_lines: usize,
    seq: u64,
}

/// Receives entry events from any thread and renders them.
pub struct Status {
    tty: bool,
    board: Arc<Mutex<Board>>,
}

fn basename(p: &str) -> &str {
    Path::new(p)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(p)
}

fn fmt_secs(d: std::time::Duration) -> String {
    let s = d.as_secs_f64();
    if s < 60.0 {
        format!("{s:.1}s")
    } else {
        format!("{}m{:02}s", d.as_secs() / 60, d.as_secs() % 60)
    }
}

fn fmt_tokens(n: u64) -> String {
    if n >= 1000 {
        format!("{:.1}k", n as f64 / 1000.0)
    } else {
        n.to_string()
    }
}

impl Status {
    pub fn new(tty: bool) -> Self {
        let board = Arc::new(Mutex::new(Board {
            rows: Vec::new(),
            drawn_lines: 0,
            seq: 0,
        }));
        if tty {
            // Elapsed times tick between events: redraw while some entry runs. The thread ends
            // with the last owner of the board.
            let weak = Arc::downgrade(&board);
            std::thread::spawn(move || loop {
                std::thread::sleep(TICK);
                let Some(board) = weak.upgrade() else {
                    return;
                };
                let Ok(mut b) = board.lock() else {
                    return;
                };
                let running = b
                    .rows
                    .iter()
                    .any(|r| r.started.is_some() && r.status.is_none());
                if running && b.drawn_lines > 0 {
                    redraw(&mut b);
                }
            });
        }
        Status { tty, board }
    }

    pub fn event(&self, index: usize, ev: &EntryEvent) {
        let Ok(mut b) = self.board.lock() else {
            return;
        };
        let now = Instant::now();
        // Every call announces its entries first, starting at index 0: a new call starts a new
        // block below whatever was printed since the last one.
        if matches!(ev, EntryEvent::Queued { .. }) && index == 0 {
            b.rows.clear();
            b.drawn_lines = 0;
        }
        let plain_line = {
            let seq = b.seq;
            let row = match b.rows.iter_mut().find(|r| r.index == index) {
                Some(r) => r,
                None => {
                    b.rows.push(Row {
                        index,
                        ..Row::default()
                    });
                    let last = b.rows.len() - 1;
                    &mut b.rows[last]
                }
            };
            match ev {
                EntryEvent::Queued { name, role } => {
                    row.name.clone_from(name);
                    row.role.clone_from(role);
                    None
                }
                EntryEvent::Launching {
                    model,
                    thinking,
                    note,
                    ..
                } => {
                    row.model.clone_from(model);
                    row.thinking.clone_from(thinking);
                    row.started = Some(now);
                    Some(format!(
                        "[{}] started ({}, {}){}",
                        row.name,
                        row.role,
                        model,
                        note.as_ref().map(|n| format!(" — {n}")).unwrap_or_default()
                    ))
                }
                EntryEvent::Activity { activity } => match activity {
                    Activity::Started { .. } | Activity::Thinking => {
                        row.tool = None;
                        None
                    }
                    Activity::ToolStart { tool, path, .. } => {
                        row.tools += 1;
                        row.tool = Some((tool.clone(), path.clone(), now));
                        Some(format!(
                            "[{}] {tool}{}",
                            row.name,
                            path.as_deref()
                                .map(|p| format!(" {}", basename(p)))
                                .unwrap_or_default()
                        ))
                    }
                    Activity::ToolEnd { .. } => {
                        row.tool = None;
                        None
                    }
                    Activity::MessageEnd { turn } => {
                        row.turns = (*turn).max(row.turns);
                        None
                    }
                    Activity::Tokens { usage } => {
                        row.tokens = usage.input_tokens + usage.output_tokens;
                        None
                    }
                    Activity::Waiting { reason } => {
                        Some(format!("[{}] waiting: {reason}", row.name))
                    }
                },
                EntryEvent::Finished { status, .. } => {
                    row.status = Some(*status);
                    row.ended = Some(now);
                    row.tool = None;
                    row.finished_seq = seq;
                    let took = row
                        .started
                        .map(|s| format!(" in {}", fmt_secs(now - s)))
                        .unwrap_or_default();
                    Some(format!("[{}] {}{took}", row.name, word(*status)))
                }
            }
        };
        b.seq += 1;
        if self.tty {
            redraw(&mut b);
        } else if let Some(line) = plain_line {
            // One line per event, whatever the names and commands in it hold.
            errln!("{}", baton_text::sanitize_line(&line));
        }
    }
}

/// How often a running block is redrawn between events.
const TICK: std::time::Duration = std::time::Duration::from_millis(250);

fn redraw(b: &mut Board) {
    // Keep at most CAPACITY rows: drop the oldest finished ones first.
    while b.rows.len() > CAPACITY {
        let oldest = b
            .rows
            .iter()
            .enumerate()
            .filter(|(_, r)| r.status.is_some())
            .min_by_key(|(_, r)| r.finished_seq)
            .map(|(i, _)| i);
        match oldest {
            Some(i) => {
                b.rows.remove(i);
            }
            None => break,
        }
    }
    let now = Instant::now();
    // Every row is cut to the terminal's width, so each takes exactly one line and moving the
    // cursor up by the number of rows drawn lands on the first one.
    let cols = crate::term::stderr_columns().saturating_sub(1).max(1);
    let mut out = String::new();
    if b.drawn_lines > 0 {
        out.push_str(&format!("\x1b[{}A", b.drawn_lines));
    }
    let mut lines = 0;
    for r in b.rows.iter().filter(|r| !r.name.is_empty()) {
        let [head, detail] = row_lines(r, now, cols);
        out.push_str(&format!("\x1b[2K{head}\n\x1b[2K{detail}\n"));
        lines += 2;
    }
    // Blank what an earlier, taller drawing left below.
    let stale = b.drawn_lines.saturating_sub(lines);
    for _ in 0..stale {
        out.push_str("\x1b[2K\n");
    }
    lines += stale;
    b.drawn_lines = lines;
    let out = baton_text::redact::redact(&out);
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(out.as_bytes());
    let _ = err.flush();
}

/// The two lines of a row, each at most `cols` columns wide and free of control characters.
fn row_lines(r: &Row, now: Instant, cols: usize) -> [String; 2] {
    let fit =
        |line: &str| baton_text::fit_columns(&baton_text::sanitize_line(line), cols).into_owned();
    let glyph = match r.status {
        None if r.started.is_none() => "○",
        None => "●",
        Some(EntryStatus::Done) => "✓",
        Some(EntryStatus::Failed) => "✗",
        Some(EntryStatus::Stopped) => "■",
        Some(EntryStatus::Skipped) => "–",
    };
    let state = match r.status {
        Some(s) => word(s).to_string(),
        None if r.started.is_none() => "Queued".into(),
        None => match &r.tool {
            Some((tool, path, since)) => format!(
                "{tool}{} {}",
                path.as_deref()
                    .map(|p| format!(" {}", basename(p)))
                    .unwrap_or_default(),
                fmt_secs(now - *since)
            ),
            None => "thinking".into(),
        },
    };
    let dur = match (r.started, r.ended) {
        (Some(s), Some(e)) => fmt_secs(e - s),
        (Some(s), None) => fmt_secs(now - s),
        (None, _) => "-".into(),
    };
    // The route already names its thinking level when it has one (`mock/m:high`).
    let thinking = match r.thinking.as_deref() {
        Some(t) if !r.model.ends_with(&format!(":{t}")) => format!(":{t}"),
        Some(_) | None => String::new(),
    };
    [
        fit(&format!("{glyph} {} ({})", r.name, r.role)),
        fit(&format!(
            "    {state} · turns {} · tools {} · {}{thinking} · {} tok · {dur}",
            r.turns,
            r.tools,
            if r.model.is_empty() { "-" } else { &r.model },
            fmt_tokens(r.tokens),
        )),
    ]
}

fn word(s: EntryStatus) -> &'static str {
    match s {
        EntryStatus::Done => "Done",
        EntryStatus::Failed => "Failed",
        EntryStatus::Stopped => "Stopped",
        EntryStatus::Skipped => "Skipped",
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn row(model: &str, thinking: Option<&str>) -> Row {
        Row {
            index: 0,
            name: "review".into(),
            role: "reviewer".into(),
            model: model.into(),
            thinking: thinking.map(str::to_string),
            ..Row::default()
        }
    }

    #[test]
    fn a_row_names_the_thinking_level_once_and_fits_the_width() {
        let now = Instant::now();
        let [_, detail] = row_lines(&row("mock/slow:high", Some("high")), now, 200);
        assert!(detail.contains("mock/slow:high ·"), "{detail}");
        assert!(!detail.contains(":high:high"), "{detail}");
        let [_, detail] = row_lines(&row("mock/slow", Some("low")), now, 200);
        assert!(detail.contains("mock/slow:low ·"), "{detail}");
        let long = format!("command: sh -c {}\nsecond line", "x".repeat(300));
        for cols in [39, 59, 119] {
            for line in row_lines(&row(&long, None), now, cols) {
                assert!(line.chars().count() <= cols, "{cols}: {line}");
                assert!(!line.contains('\n'));
            }
        }
    }
}
