//! How `baton agent` shows a session: JSON event lines, or text (the answer on stdout, one line
//! per tool call, retry or failure on stderr, a spinner line while tools run on a terminal).

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};

use baton_agent::agent::RunSummary;
use baton_agent::tools::SandboxMode;
use baton_protocol::{AgentEvent, Item, ItemKind, ItemStatus};
use baton_text::redact::RedactStream;

/// Renders events as JSON lines on stdout, or as text: the streamed answer on stdout and one line
/// per tool call, retry or failure on stderr.
///
/// Text mode shows model-chosen text (arguments, paths, errors) through the one terminal
/// sanitiser of `baton-text`: everything on stderr always (a tool line is one line: its control
/// characters, line breaks included, become U+FFFD; messages keep their newlines and tabs), the
/// answer on stdout when stdout is a terminal (newlines and tabs kept). Off a terminal the answer
/// is written as the model wrote it.
///
/// Both modes write every known provider key as `[REDACTED]` (`baton_text::redact`); streamed
/// text is held back where it may begin a key, so a key split between two deltas is caught too
/// (the deltas of an item still add up to its text).
pub(crate) struct Printer {
    json: bool,
    out: Box<dyn Write + Send>,
    err: Box<dyn Write + Send>,
    /// Whether stdout is a terminal.
    out_tty: bool,
    color: bool,
    /// Whether the last thing written to stdout ended a line.
    at_line_start: bool,
    /// The last answer written off a terminal at `input.completed`.
    answered: Option<String>,
    /// Whether stderr is a terminal (lines are fitted to its width).
    err_tty: bool,
    /// Ids of agent-message items, whose deltas are the streamed answer.
    message_items: Vec<String>,
    /// The streamed text of open items, redacted as it comes.
    streams: BTreeMap<String, RedactStream>,
    /// On a terminal: the line showing the tools that run now, with their elapsed time.
    spinner: Option<Spinner>,
}

/// The running tools of a text-mode session on a terminal: one spinner line, replaced by each
/// tool's result line when it ends.
struct Spinner {
    bar: Option<indicatif::ProgressBar>,
    /// Item id and summary of each running tool, in start order.
    running: Vec<(String, String)>,
}

impl Spinner {
    fn start(&mut self, id: String, summary: String) {
        self.running.push((id, summary));
        let bar = self.bar.get_or_insert_with(|| {
            let bar = indicatif::ProgressBar::new_spinner();
            if let Ok(style) =
                indicatif::ProgressStyle::with_template("{spinner} {wide_msg} {elapsed}")
            {
                bar.set_style(style);
            }
            bar.enable_steady_tick(std::time::Duration::from_millis(100));
            bar
        });
        bar.set_message(Self::message(&self.running));
    }

    fn end(&mut self, id: &str) {
        self.running.retain(|(i, _)| i != id);
        match &self.bar {
            Some(bar) if !self.running.is_empty() => bar.set_message(Self::message(&self.running)),
            Some(bar) => {
                bar.finish_and_clear();
                self.bar = None;
            }
            None => {}
        }
    }

    fn message(running: &[(String, String)]) -> String {
        let text = running
            .iter()
            .map(|(_, s)| s.as_str())
            .collect::<Vec<_>>()
            .join(" · ");
        baton_text::redact::redact(&baton_text::sanitize_line(&text)).into_owned()
    }
}

impl Printer {
    pub(crate) fn new(json: bool) -> Self {
        let err_tty = std::io::stderr().is_terminal();
        let color = err_tty && std::env::var_os("NO_COLOR").is_none();
        let mut printer = Printer::with_output(
            json,
            Box::new(std::io::stdout()),
            Box::new(std::io::stderr()),
            std::io::stdout().is_terminal(),
            color,
        );
        printer.err_tty = err_tty;
        if err_tty && !json {
            printer.with_spinner()
        } else {
            printer
        }
    }

    fn with_output(
        json: bool,
        out: Box<dyn Write + Send>,
        err: Box<dyn Write + Send>,
        out_tty: bool,
        color: bool,
    ) -> Self {
        Printer {
            json,
            out,
            err,
            out_tty,
            color,
            at_line_start: true,
            answered: None,
            err_tty: false,
            message_items: Vec::new(),
            streams: BTreeMap::new(),
            spinner: None,
        }
    }

    /// Shows running tools on a spinner line (text mode on a terminal only).
    fn with_spinner(mut self) -> Self {
        self.spinner = Some(Spinner {
            bar: None,
            running: Vec::new(),
        });
        self
    }

    /// What of an item's next `delta` can be shown now, redacted.
    fn delta(&mut self, item_id: &str, delta: &str) -> String {
        self.streams
            .entry(item_id.to_string())
            .or_default()
            .push(baton_text::redact::installed(), delta)
    }

    /// The rest of an item's streamed text, once it is complete.
    fn flush(&mut self, item_id: &str) -> String {
        self.streams
            .remove(item_id)
            .map(|mut s| s.finish())
            .unwrap_or_default()
    }

    /// A piece of the answer on stdout, sanitised on a terminal.
    fn answer(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        // A pipe may end in a terminal too (`| less -R`, `| cat`): escapes are never written raw.
        if self.out_tty {
            self.out_raw(&baton_text::sanitize_terminal(text));
        } else {
            self.out_raw(&baton_text::escape_controls(text));
        }
        self.at_line_start = text.ends_with('\n');
    }

    fn json_event(&mut self, ev: AgentEvent) {
        let events = match ev {
            AgentEvent::ItemDelta { item_id, delta } => {
                let delta = self.delta(&item_id, &delta);
                if delta.is_empty() {
                    Vec::new()
                } else {
                    vec![AgentEvent::ItemDelta { item_id, delta }]
                }
            }
            AgentEvent::ItemCompleted { item } => {
                let rest = self.flush(&item.id);
                let mut events = Vec::new();
                if !rest.is_empty() {
                    events.push(AgentEvent::ItemDelta {
                        item_id: item.id.clone(),
                        delta: rest,
                    });
                }
                events.push(AgentEvent::ItemCompleted { item });
                events
            }
            // Text of items that never completed (stopped mid-stream) comes before the last line.
            ev @ AgentEvent::SessionCompleted { .. } => {
                let open: Vec<String> = self.streams.keys().cloned().collect();
                let mut events: Vec<AgentEvent> = open
                    .into_iter()
                    .map(|item_id| {
                        let delta = self.flush(&item_id);
                        AgentEvent::ItemDelta { item_id, delta }
                    })
                    .filter(
                        |ev| !matches!(ev, AgentEvent::ItemDelta { delta, .. } if delta.is_empty()),
                    )
                    .collect();
                events.push(ev);
                events
            }
            other => vec![other],
        };
        for ev in events {
            if let Ok(line) = serde_json::to_string(&ev) {
                self.out_raw(&format!("{line}\n"));
            }
        }
    }

    /// Writes `text` to stdout as it is (baton's own text, or JSON, which escapes controls) but
    /// for known keys.
    fn out_raw(&mut self, text: &str) {
        let text = baton_text::redact::redact(text);
        let _ = self.out.write_all(text.as_bytes());
        let _ = self.out.flush();
    }

    /// `line` and a line break on stderr, terminal-safe; `dim` when colour is on.
    fn err_line(&mut self, line: &str, dim: bool) {
        let line = baton_text::redact::redact(line);
        let line = baton_text::sanitize_terminal(&line);
        let (on, off) = if dim && self.color {
            ("\x1b[2m", "\x1b[0m")
        } else {
            ("", "")
        };
        let err = &mut self.err;
        let mut write = || {
            let _ = writeln!(err, "{on}{line}{off}");
            let _ = err.flush();
        };
        // Above the spinner line, which is drawn again below it.
        match self.spinner.as_ref().and_then(|s| s.bar.as_ref()) {
            Some(bar) => bar.suspend(write),
            None => write(),
        }
    }

    pub(crate) fn event(&mut self, ev: AgentEvent) {
        if self.json {
            self.json_event(ev);
            return;
        }
        match ev {
            AgentEvent::ItemStarted { item } => match item.kind {
                ItemKind::AgentMessage { .. } => self.message_items.push(item.id),
                ItemKind::ToolCall {
                    tool,
                    arguments,
                    path,
                    ..
                } => {
                    if let Some(spinner) = self.spinner.as_mut() {
                        let what = tool_summary(&tool, &arguments, path.as_deref());
                        spinner.start(item.id, format!("{tool} {what}").trim_end().to_string());
                    }
                }
                ItemKind::Reasoning { .. } => {}
            },
            // On a terminal the answer streams as it comes; off one (`> answer.md`) only the
            // final answer is written, at the end, so no partial text of a retried turn and no
            // narration between tool calls lands in the file.
            AgentEvent::ItemDelta { item_id, delta } => {
                if self.out_tty && self.message_items.contains(&item_id) {
                    let shown = self.delta(&item_id, &delta);
                    self.answer(&shown);
                }
            }
            AgentEvent::SessionStarted {
                sandbox: Some(sandbox),
                ..
            } => errln!("baton: {}", sandbox_header(&sandbox)),
            AgentEvent::SessionStarted { sandbox: None, .. }
            | AgentEvent::ItemUpdated { .. }
            | AgentEvent::EvidenceReferenced { .. }
            | AgentEvent::TurnStarted { .. }
            | AgentEvent::TurnCompleted { .. }
            | AgentEvent::SessionCompleted { .. } => {}
            AgentEvent::RoutingRecorded {
                record,
                responsible,
            } => {
                if let Some(line) = routing_line(&record, responsible.as_deref()) {
                    errln!("{line}");
                }
            }
            AgentEvent::ItemCompleted { item } => self.item_completed(item),
            AgentEvent::TurnRetrying {
                attempt,
                delay_ms,
                error,
                ..
            } => self.err_line(
                &format!(
                    "baton: {} — retrying (attempt {}) in {:.1}s",
                    error.message,
                    attempt,
                    delay_ms as f64 / 1000.0
                ),
                false,
            ),
            AgentEvent::TurnFailed { error, .. } => {
                self.err_line(&format!("baton: {}", error.message), false)
            }
            AgentEvent::InputRefused { input, reason } => {
                self.err_line(&format!("baton: {input}: {reason}"), false)
            }
            // Off a terminal, each input's answer is written as it completes (`baton chat`
            // answers every line); `finish` does not write it again.
            AgentEvent::InputCompleted { final_message, .. } => {
                if !self.out_tty {
                    self.answer(&final_message);
                    if !self.at_line_start {
                        self.out_raw("\n");
                        self.at_line_start = true;
                    }
                    self.answered = Some(final_message);
                }
            }
            AgentEvent::SessionCompacted {
                seat,
                trigger,
                tokens_before,
                tokens_after,
                kept,
            } => self.err_line(
                &format!(
                    "baton: {}context compacted ({trigger}): about {tokens_before} → {tokens_after} tokens, the last {kept} message(s) kept verbatim",
                    seat.as_deref().map(|s| format!("{s}'s ")).unwrap_or_default()
                ),
                false,
            ),
            AgentEvent::TurnRouteChanged {
                from, to, error, ..
            } => self.err_line(
                &format!(
                    "baton: route {from} failed over to {to} for the rest of the session: {}",
                    error.message
                ),
                false,
            ),
            AgentEvent::SessionRouteSet { from, to } => self.err_line(
                &format!("baton: route {to} from the next turn (was {from})"),
                false,
            ),
            AgentEvent::SessionCleared { messages } => self.err_line(
                &format!("baton: conversation cleared ({messages} message(s) out of the model's view)"),
                false,
            ),
            AgentEvent::CheckpointSaved {
                checkpoint, files, ..
            } => self.err_line(
                &format!("baton: checkpoint {checkpoint}: {files} file(s) changed (`/undo {checkpoint}` puts them back)"),
                false,
            ),
            AgentEvent::SessionUndone {
                checkpoint,
                restored,
                removed,
                kept,
                failed,
            } => self.err_line(
                &format!(
                    "baton: undone to before checkpoint {checkpoint}: {} put back, {} removed, {} kept as changed by hand{}",
                    restored.len(),
                    removed.len(),
                    kept.len(),
                    if failed.is_empty() {
                        String::new()
                    } else {
                        format!("; not put back: {}", failed.join("; "))
                    }
                ),
                false,
            ),
        }
    }

    /// An item's end: an answer flushed (or, off a terminal, a note that it was cut off), a tool
    /// call's line with how it ended.
    fn item_completed(&mut self, item: Item) {
        match item.kind {
            ItemKind::AgentMessage { .. } if !self.out_tty => {
                if item.status == ItemStatus::Failed {
                    self.err_line(
                        "baton: a partial answer was cut off; the turn is being retried (it is not written to stdout)",
                        false,
                    );
                }
            }
            ItemKind::AgentMessage { .. } => {
                let rest = self.flush(&item.id);
                self.answer(&rest);
                if !self.at_line_start {
                    self.out_raw("\n");
                    self.at_line_start = true;
                }
                if item.status == ItemStatus::Failed {
                    self.err_line(
                        "baton: the partial answer above was cut off; the turn is being retried",
                        false,
                    );
                }
            }
            ItemKind::Reasoning { .. } => {}
            ItemKind::ToolCall {
                tool,
                arguments,
                path,
                output,
                exit_code,
                ..
            } => {
                if let Some(spinner) = self.spinner.as_mut() {
                    spinner.end(&item.id);
                }
                let what = tool_summary(&tool, &arguments, path.as_deref());
                // A refusal or an error says why in full on its line: on a terminal it is
                // fitted to the width at a word boundary, elsewhere it is not cut.
                let room = if self.err_tty {
                    crate::term::stderr_columns()
                        .saturating_sub(tool.len() + what.chars().count() + 16)
                        .max(40)
                } else {
                    usize::MAX
                };
                let why = |o: &Option<String>| reason_line(o.as_deref().unwrap_or(""), room);
                let status = match (item.status, exit_code) {
                    (ItemStatus::Declined, _) => format!("declined: {}", why(&output)),
                    (ItemStatus::Failed, Some(c)) => format!("exit {c}"),
                    (ItemStatus::Failed, None) => format!("error: {}", why(&output)),
                    (ItemStatus::Completed | ItemStatus::InProgress, Some(c)) => {
                        format!("exit {c}")
                    }
                    (ItemStatus::Completed | ItemStatus::InProgress, None) => "ok".into(),
                };
                let what = if what.is_empty() {
                    what
                } else {
                    format!(" {what}")
                };
                let line = format!("• {tool}{what} → {status}");
                self.err_line(&baton_text::sanitize_line(&line), true);
            }
        }
    }

    pub(crate) fn finish(&mut self, s: &RunSummary, session_id: &str) {
        if self.json {
            return;
        }
        // A session stopped while tools ran: the spinner line goes.
        if let Some(bar) = self.spinner.as_mut().and_then(|sp| sp.bar.take()) {
            bar.finish_and_clear();
        }
        if self.out_tty {
            // Text of items that never completed (the session was stopped mid-stream).
            let open: Vec<String> = self.streams.keys().cloned().collect();
            for item_id in open {
                let rest = self.flush(&item_id);
                self.answer(&rest);
            }
        } else if self.answered.as_deref() != Some(s.final_message.as_str()) {
            self.answer(&s.final_message);
        }
        if !self.at_line_start {
            self.out_raw("\n");
        }
        let cost = s
            .cost_usd
            .map(|c| format!(" · ${c:.4}"))
            .unwrap_or_default();
        let why = match s.reason {
            Some(r) => format!(" ({r})"),
            None => String::new(),
        };
        self.err_line(
            &format!(
                "baton: {}{why} after {} turn(s) · {} in ({} cached) / {} out tokens{cost}{} · session {session_id}",
                s.outcome.as_str(),
                s.turns,
                s.usage.input_tokens,
                s.usage.cached_input_tokens,
                s.usage.output_tokens,
                routes_summary(&s.routes),
            ),
            false,
        );
    }
}

/// The routes of a session that ran on more than one, with each one's turns and cost:
/// ` · routes a/x (1 turn, $0.0010) → b/y (2 turns)` after a failover; in a routed session each
/// names its participant: ` · coordinator a/x (2 turns), executor b/y (5 turns)`. Empty for a
/// session on one route.
fn routes_summary(routes: &[baton_protocol::RouteUsage]) -> String {
    if routes.len() < 2 {
        return String::new();
    }
    let each: Vec<String> = routes
        .iter()
        .map(|r| {
            let turns = if r.turns == 1 { "turn" } else { "turns" };
            let cost = r.cost_usd.map(|c| format!(", ${c:.4}")).unwrap_or_default();
            let seat = r
                .seat
                .as_deref()
                .map(|s| format!("{s} "))
                .unwrap_or_default();
            format!("{seat}{} ({} {turns}{cost})", r.model, r.turns)
        })
        .collect();
    if routes.iter().any(|r| r.seat.is_some()) {
        format!(" · {}", each.join(", "))
    } else {
        format!(" · routes {}", each.join(" → "))
    }
}

/// The first line of `s`, at most `room` characters: cut at the last word boundary that fits,
/// with `…`.
fn reason_line(s: &str, room: usize) -> String {
    let line = s.lines().next().unwrap_or("").trim_end();
    if line.chars().count() <= room {
        return line.to_string();
    }
    let head: String = line.chars().take(room.saturating_sub(1)).collect();
    let cut = head
        .rfind(' ')
        .filter(|&i| i > head.len() / 2)
        .unwrap_or(head.len());
    format!("{}…", head[..cut].trim_end())
}

fn first_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or("");
    let mut out: String = line.chars().take(120).collect();
    if line.chars().count() > 120 {
        out.push('…');
    }
    out
}

fn tool_summary(tool: &str, args: &serde_json::Value, path: Option<&str>) -> String {
    let field = |k: &str| args.get(k).and_then(|v| v.as_str()).map(first_line);
    match tool {
        "bash" => field("command").unwrap_or_default(),
        "grep" | "find" => {
            let p = field("pattern").unwrap_or_default();
            match path {
                Some(path) => format!("{p} in {path}"),
                None => p,
            }
        }
        _ => path.map(str::to_string).unwrap_or_default(),
    }
}

/// The session header's sandbox line: the mode, what commands may write, and the network.
fn sandbox_header(s: &baton_protocol::SandboxInfo) -> String {
    match s.mode {
        SandboxMode::DangerFullAccess => {
            "sandbox danger-full-access: bash commands run unconfined, with all your rights".into()
        }
        SandboxMode::ReadOnly | SandboxMode::WorkspaceWrite => format!(
            "sandbox {}: bash may write only {}; network {}",
            s.mode,
            baton_text::sanitize_line(&s.writable.join(", ")),
            if s.network { "on" } else { "off" }
        ),
    }
}

/// A routing record as a line for a person, or `None` for bookkeeping (handoff delivery,
/// projection changes).
fn routing_line(record: &serde_json::Value, responsible: Option<&str>) -> Option<String> {
    let field = |k: &str| record[k].as_str().unwrap_or("").to_string();
    let what = match record["type"].as_str()? {
        "control_set" => format!(
            "control {}",
            match record["control"]["mode"].as_str() {
                Some("manual") => format!(
                    "manual ({})",
                    record["control"]["profile"].as_str().unwrap_or("?")
                ),
                Some(m) => m.to_string(),
                None => "?".into(),
            }
        ),
        "unit_opened" => format!("unit {} opened: {}", field("unit"), field("outcome")),
        "assigned" => format!("assignment {} to the Executor", field("assignment")),
        "replaced" => format!(
            "assignment {} replaces {}: {}",
            field("assignment"),
            field("old"),
            field("reason")
        ),
        "execution_started" => format!(
            "execution {} of {}",
            field("execution"),
            field("assignment")
        ),
        "execution_ended" => format!("execution {} {}", field("execution"), field("how")),
        "report_saved" => format!(
            "report of {} (revision {}, {})",
            field("assignment"),
            record["report"]["revision"],
            record["report"]["outcome"].as_str().unwrap_or("?")
        ),
        "unit_closed" => format!("unit {} closed {}", field("unit"), field("disposition")),
        "act_bounded_opened" => "act_bounded scope opened".into(),
        "handoff_blocked" => format!("handoff {} blocked: {}", field("handoff"), field("reason")),
        _ => return None,
    };
    Some(match responsible {
        Some(r) => format!("routing: {what} — {r} responsible"),
        None => format!("routing: {what}"),
    })
}

#[cfg(test)]
mod tests {

    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::sync::{Arc, Mutex};

    use baton_protocol::{EndReason, Item};
    use serde_json::json;

    use super::*;

    #[test]
    fn a_reason_is_cut_at_a_word_boundary_only_when_it_does_not_fit() {
        let why = "refused by the routing rule `coordinator-environment`: the Coordinator does not run tools";
        assert_eq!(reason_line(why, usize::MAX), why);
        assert_eq!(reason_line(&format!("{why}\nmore"), 500), why);
        let cut = reason_line(why, 60);
        assert_eq!(
            cut,
            "refused by the routing rule `coordinator-environment`: the…"
        );
        assert!(cut.chars().count() <= 60);
    }

    /// A writer whose bytes the test reads back.
    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);

    impl Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Buf {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    /// What text mode writes on stdout and stderr for a message and a tool call that both hold
    /// terminal control sequences chosen by the model.
    fn render(out_tty: bool) -> (String, String) {
        let (out, err) = (Buf::default(), Buf::default());
        let mut p = Printer::with_output(
            false,
            Box::new(out.clone()),
            Box::new(err.clone()),
            out_tty,
            true,
        );
        let evil = "\u{1b}]0;TITLE\u{7}\u{1b}[2J";
        let message = |status| Item {
            id: "m".into(),
            status,
            kind: ItemKind::AgentMessage {
                text: String::new(),
            },
        };
        p.event(AgentEvent::ItemStarted {
            item: message(ItemStatus::InProgress),
        });
        p.event(AgentEvent::ItemDelta {
            item_id: "m".into(),
            delta: format!("done{evil}\n\tok"),
        });
        p.event(AgentEvent::ItemCompleted {
            item: message(ItemStatus::Completed),
        });
        p.event(AgentEvent::ItemCompleted {
            item: Item {
                id: "t".into(),
                status: ItemStatus::Failed,
                kind: ItemKind::ToolCall {
                    call_id: "c".into(),
                    tool: "write".into(),
                    arguments: json!({"path": format!("a{evil}\nb"), "content": "x"}),
                    path: Some(format!("a{evil}\nb")),
                    output: Some(format!("cannot write a{evil}")),
                    exit_code: None,
                },
            },
        });
        (out.text(), err.text())
    }

    /// With `--json`, a key split between deltas is redacted, the deltas of an item add up to its
    /// redacted text, and text held back of an item that never completed comes before
    /// `session.completed`, which stays last. (The redactor is installed for the whole test
    /// process; its secret appears in no other test.)
    #[test]
    fn json_deltas_are_redacted_across_pieces_and_session_completed_stays_last() {
        let secret = "printer-secret-123";
        baton_text::redact::install(baton_text::redact::Redactor::new([secret]));
        let out = Buf::default();
        let mut p = Printer::with_output(
            true,
            Box::new(out.clone()),
            Box::new(Buf::default()),
            false,
            false,
        );
        for (id, pieces, complete) in [
            ("a", ["key printer-sec", "ret-123 ok"], true),
            ("b", ["cut printer", "-sec"], false),
        ] {
            p.event(AgentEvent::ItemStarted {
                item: Item {
                    id: id.into(),
                    status: ItemStatus::InProgress,
                    kind: ItemKind::AgentMessage {
                        text: String::new(),
                    },
                },
            });
            for piece in pieces {
                p.event(AgentEvent::ItemDelta {
                    item_id: id.into(),
                    delta: piece.into(),
                });
            }
            if complete {
                p.event(AgentEvent::ItemCompleted {
                    item: Item {
                        id: id.into(),
                        status: ItemStatus::Completed,
                        kind: ItemKind::AgentMessage {
                            text: format!("key {secret} ok"),
                        },
                    },
                });
            }
        }
        p.event(AgentEvent::SessionCompleted {
            outcome: baton_protocol::Outcome::Partial,
            reason: Some(EndReason::Cancelled),
            final_message: String::new(),
            turns: 1,
            usage: Default::default(),
            cost_usd: None,
            error: None,
            routes: Vec::new(),
        });
        let events: Vec<AgentEvent> = out
            .text()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let deltas = |id: &str| -> String {
            events
                .iter()
                .filter_map(|e| match e {
                    AgentEvent::ItemDelta { item_id, delta } if item_id == id => {
                        Some(delta.as_str())
                    }
                    _ => None,
                })
                .collect()
        };
        assert_eq!(deltas("a"), "key [REDACTED] ok");
        assert_eq!(deltas("b"), "cut printer-sec");
        assert!(!out.text().contains(secret));
        assert!(matches!(
            events.last(),
            Some(AgentEvent::SessionCompleted { .. })
        ));
    }

    #[test]
    fn text_mode_shows_no_control_sequence_of_the_model() {
        let (out, err) = render(true);
        assert_eq!(out, "done\u{fffd}]0;TITLE\u{fffd}\u{fffd}[2J\n\tok\n");
        // One dimmed tool line: baton's own colour codes, nothing of the model's.
        assert_eq!(
            err,
            "\u{1b}[2m• write a\u{fffd}]0;TITLE\u{fffd}\u{fffd}[2J\u{fffd}b → error: cannot write a\u{fffd}]0;TITLE\u{fffd}\u{fffd}[2J\u{1b}[0m\n"
        );
        // Off a terminal only the final answer is written, at the end, as the model wrote it;
        // stderr is always safe.
        let (out, err_off) = render(false);
        assert_eq!(out, "");
        assert_eq!(err_off, err);
    }
}
