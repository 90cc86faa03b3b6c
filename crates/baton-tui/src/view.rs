//! The view model of a session and its reducer: [`View::apply`] folds one
//! [`AgentEvent`] in. Pure: the time of an event is passed in (milliseconds since the UI
//! started), so the same events at the same times always give the same view.

use std::collections::BTreeMap;

use baton_protocol::{
    AgentEvent, ApprovalRequest, EndReason, ErrorInfo, Item, ItemKind, ItemStatus, Outcome, Usage,
};
use serde_json::Value;

/// One entry of the transcript.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub body: Body,
    /// Bumped at every change: the layout cache keys on it.
    pub rev: u32,
    /// In a routed session, the participant responsible when it was made (`executor` for the
    /// Executor's work; `None` for the Coordinator's and for routing steps, shown in both lanes).
    pub seat: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// What the user sent.
    User {
        text: String,
    },
    /// The model's answer; `streaming` until its item completes.
    Assistant {
        text: String,
        streaming: bool,
    },
    /// The model's reasoning, folded unless expanded.
    Reasoning {
        text: String,
        streaming: bool,
    },
    Tool(ToolCell),
    /// Something the host says: a retry, a failover, a compaction, the end.
    Notice {
        level: Level,
        text: String,
    },
    /// A routed session's host recorded a step (a handoff, a report …), with the participant
    /// responsible after it.
    Routing {
        what: String,
        detail: String,
        responsible: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    Warn,
    Error,
}

/// A tool call: one line, expandable to its output.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCell {
    pub item_id: String,
    /// The provider's call id (an evidence reference names the call by it).
    pub call_id: String,
    /// In a routed session, the Executor result's evidence reference (`ctx:t3`), and whether
    /// the Executor selected it for the Coordinator.
    pub reference: Option<String>,
    pub selected: bool,
    pub tool: String,
    pub arguments: Value,
    pub path: Option<String>,
    pub status: ItemStatus,
    /// When it started and (once done) ended, in the UI's milliseconds.
    pub started_ms: u64,
    pub ended_ms: Option<u64>,
    pub output: Option<String>,
    pub exit_code: Option<i32>,
}

impl ToolCell {
    /// The call in one line: what it works on (a command, a path, a pattern …).
    pub fn summary(&self) -> String {
        let arg = |k: &str| self.arguments.get(k).and_then(Value::as_str);
        let text = match self.tool.as_str() {
            "bash" | "!" => arg("command").map(str::to_string),
            "grep" | "glob" | "find" => arg("pattern").map(|p| match arg("path") {
                Some(path) => format!("{p}  in {path}"),
                None => p.to_string(),
            }),
            "delegate_task" => arg("task").map(|t| match arg("role") {
                Some(r) => format!("{r}: {t}"),
                None => t.to_string(),
            }),
            _ => None,
        };
        let text = text
            .or_else(|| self.path.clone())
            .or_else(|| arg("path").map(str::to_string))
            .unwrap_or_else(|| match &self.arguments {
                Value::Object(m) if m.is_empty() => String::new(),
                v => v.to_string(),
            });
        // One line: the first line of a multi-line command.
        let first = text.lines().next().unwrap_or("").to_string();
        let more = text.lines().count() > 1;
        baton_text::sanitize_line(&if more { format!("{first} …") } else { first }).into_owned()
    }

    /// Elapsed milliseconds: to its end, or (running) to `now_ms`.
    pub fn elapsed_ms(&self, now_ms: u64) -> u64 {
        self.ended_ms
            .unwrap_or(now_ms)
            .saturating_sub(self.started_ms)
    }

    /// The lines of an edit or a write as a diff: `-` old, `+` new.
    /// The call's change as diff lines: the sign, the line's number in the file where it is
    /// known (a write's lines from 1; an edit's from the line its result says it replaced at),
    /// and the text.
    pub fn diff(&self) -> Option<Vec<(char, Option<usize>, String)>> {
        let arg = |k: &str| self.arguments.get(k).and_then(Value::as_str);
        match self.tool.as_str() {
            "edit" => {
                let old = arg("old_string")?;
                let new = arg("new_string")?;
                // "replaced 1 occurrence at line N": where the edit sits in the file.
                let at = self.output.as_deref().and_then(|o| {
                    let rest = o.split("replaced 1 occurrence at line ").nth(1)?;
                    rest.split(|c: char| !c.is_ascii_digit())
                        .next()?
                        .parse::<usize>()
                        .ok()
                });
                Some(crate::linediff::diff(old, new, at))
            }
            "write" => Some(
                arg("content")?
                    .lines()
                    .enumerate()
                    .map(|(k, l)| ('+', Some(k + 1), l.to_string()))
                    .collect(),
            ),
            _ => None,
        }
    }
}

/// Where the session is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Waiting for input.
    Idle,
    /// Working on an input since then.
    Working { since_ms: u64 },
    /// The session ended.
    Ended { outcome: Outcome },
}

/// What `session.started` said.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionInfo {
    pub id: String,
    pub role: String,
    pub model: String,
    pub cwd: String,
    pub sandbox: Option<String>,
    pub resumed: bool,
}

/// A routed session: who is responsible now.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Routing {
    pub responsible: Option<String>,
}

/// The whole view of a session.
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    pub entries: Vec<Entry>,
    /// Item id → its entry.
    index: BTreeMap<String, usize>,
    pub session: SessionInfo,
    pub phase: Phase,
    pub turns: u32,
    pub usage: Usage,
    /// The sum of the priced turns; `None` until one is priced.
    pub cost_usd: Option<f64>,
    /// The input tokens of the last request: how full the context is.
    pub context_used: u64,
    /// The route's context window, when known.
    pub context_window: Option<u32>,
    pub routing: Option<Routing>,
    /// Input sent while a task runs, not yet taken by the session.
    pub queued: Vec<String>,
    /// A tool call waiting for the user's approval.
    pub approval: Option<ApprovalRequest>,
    /// The project's work beside the session (the side panel).
    pub project: crate::project::Project,
    /// Bumped at every change of anything shown: the frame scheduler redraws only then.
    pub rev: u64,
    /// Bumped at every change of the entries: a frame that finds it unchanged reuses the
    /// transcript it drew last.
    pub transcript_rev: u64,
    /// The checkpoints `/undo` can go back to, oldest first.
    pub checkpoints: Vec<CheckpointRow>,
}

/// A prompt that changed files, as `/undo` offers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointRow {
    pub checkpoint: u32,
    /// The prompt's first line.
    pub input: String,
    pub files: usize,
}

impl Default for View {
    fn default() -> Self {
        View::new(None)
    }
}

impl View {
    pub fn new(context_window: Option<u32>) -> View {
        View {
            entries: Vec::new(),
            index: BTreeMap::new(),
            session: SessionInfo::default(),
            phase: Phase::Idle,
            turns: 0,
            usage: Usage::default(),
            cost_usd: None,
            context_used: 0,
            context_window,
            routing: None,
            queued: Vec::new(),
            approval: None,
            project: Default::default(),
            rev: 0,
            transcript_rev: 0,
            checkpoints: Vec::new(),
        }
    }

    fn push(&mut self, body: Body) -> usize {
        self.transcript_rev += 1;
        let seat = match &body {
            Body::Routing { .. } | Body::User { .. } => None,
            _ => self
                .routing
                .as_ref()
                .and_then(|r| r.responsible.clone())
                .filter(|s| s == "executor"),
        };
        self.entries.push(Entry { body, rev: 0, seat });
        self.entries.len() - 1
    }

    fn notice(&mut self, level: Level, text: impl Into<String>) {
        self.push(Body::Notice {
            level,
            text: text.into(),
        });
    }

    fn entry_of(&mut self, item_id: &str) -> Option<&mut Entry> {
        let i = *self.index.get(item_id)?;
        let e = self.entries.get_mut(i)?;
        e.rev += 1;
        self.transcript_rev += 1;
        Some(e)
    }

    /// The user sent `text`: shown now, and the session works (or it is queued while it works).
    pub fn user(&mut self, text: &str, now_ms: u64) {
        self.rev += 1;
        if matches!(self.phase, Phase::Working { .. }) {
            self.queued.push(text.to_string());
            return;
        }
        self.push(Body::User {
            text: text.to_string(),
        });
        self.phase = Phase::Working { since_ms: now_ms };
    }

    /// A note of the UI itself (a command's answer, an error of the composer).
    pub fn say(&mut self, level: Level, text: impl Into<String>) {
        self.rev += 1;
        self.notice(level, text);
    }

    /// Folds one event in.
    pub fn apply(&mut self, event: &AgentEvent, now_ms: u64) {
        self.rev += 1;
        match event {
            AgentEvent::SessionStarted {
                session_id,
                role,
                model,
                cwd,
                resumed,
                sandbox,
                ..
            } => {
                self.session = SessionInfo {
                    id: session_id.clone(),
                    role: role.clone(),
                    model: model.clone(),
                    cwd: cwd.clone(),
                    sandbox: sandbox.as_ref().map(|s| s.mode.to_string()),
                    resumed: *resumed,
                };
                if *resumed {
                    self.notice(Level::Info, format!("resumed session {session_id}"));
                }
            }
            AgentEvent::TurnStarted { turn } => {
                self.turns = self.turns.max(*turn);
                if !matches!(self.phase, Phase::Working { .. }) {
                    self.phase = Phase::Working { since_ms: now_ms };
                }
            }
            AgentEvent::TurnRetrying {
                turn,
                attempt,
                delay_ms,
                error,
            } => self.retrying(*turn, *attempt, *delay_ms, error),
            AgentEvent::TurnRouteChanged {
                from, to, error, ..
            } => {
                self.session.model = to.clone();
                self.notice(
                    Level::Warn,
                    format!("{from} failed ({}): continuing on {to}", error.message),
                );
            }
            AgentEvent::SessionRouteSet { from, to } => {
                self.session.model = to.clone();
                self.notice(
                    Level::Info,
                    format!("route {to} from the next turn (was {from})"),
                );
            }
            AgentEvent::SessionCleared { messages } => self.notice(
                Level::Info,
                format!(
                    "conversation cleared: the model sees none of the {messages} message{} above (the transcript keeps them)",
                    if *messages == 1 { "" } else { "s" }
                ),
            ),
            AgentEvent::CheckpointSaved {
                checkpoint,
                input,
                files,
            } => self.checkpoints.push(CheckpointRow {
                checkpoint: *checkpoint,
                input: input.clone(),
                files: *files,
            }),
            AgentEvent::SessionUndone {
                checkpoint,
                restored,
                removed,
                kept,
                failed,
            } => self.undone(*checkpoint, restored, removed, kept, failed),
            AgentEvent::InputCompleted { reason, .. } => self.input_completed(reason.as_ref()),
            AgentEvent::InputRefused { input, reason } => {
                self.notice(Level::Warn, format!("{input}: {reason}"))
            }
            AgentEvent::SessionCompacted {
                trigger,
                tokens_before,
                tokens_after,
                seat,
                ..
            } => self.compacted(seat.as_deref(), trigger, *tokens_before, *tokens_after),
            AgentEvent::ItemStarted { item } => self.item_started(item, now_ms),
            AgentEvent::ItemDelta { item_id, delta } => {
                if let Some(e) = self.entry_of(item_id) {
                    if let Body::Assistant { text, .. } | Body::Reasoning { text, .. } = &mut e.body
                    {
                        text.push_str(delta);
                    }
                }
            }
            AgentEvent::ItemCompleted { item } => self.item_changed(item, true, now_ms),
            AgentEvent::ItemUpdated { item } => self.item_changed(item, false, now_ms),
            AgentEvent::TurnCompleted {
                usage, cost_usd, ..
            } => self.turn_completed(usage, *cost_usd),
            AgentEvent::EvidenceReferenced { call_id, reference } => {
                self.evidence_referenced(call_id, reference);
            }
            AgentEvent::TurnFailed { turn, error } => self.notice(
                Level::Error,
                format!("turn {turn} failed ({}): {}", error.code, error.message),
            ),
            AgentEvent::RoutingRecorded {
                record,
                responsible,
            } => self.routing_recorded(record, responsible.as_ref()),
            AgentEvent::SessionCompleted {
                outcome,
                reason,
                error,
                ..
            } => self.session_completed(*outcome, reason.as_ref(), error.as_ref()),
        }
    }

    /// `/undo`: what was put back, and what was kept because it was changed by hand.
    fn undone(
        &mut self,
        checkpoint: u32,
        restored: &[String],
        removed: &[String],
        kept: &[String],
        failed: &[String],
    ) {
        self.checkpoints.retain(|c| c.checkpoint < checkpoint);
        let mut text = format!("undone to before checkpoint {checkpoint}");
        for (what, files) in [
            ("put back", restored),
            ("removed", removed),
            ("kept (changed by hand since)", kept),
            ("not put back", failed),
        ] {
            if !files.is_empty() {
                text.push_str(&format!(" · {what}: {}", files.join(", ")));
            }
        }
        if restored.is_empty() && removed.is_empty() {
            text.push_str(" · no file was put back");
        }
        let level = if failed.is_empty() && kept.is_empty() {
            Level::Info
        } else {
            Level::Warn
        };
        self.notice(level, text);
    }

    /// A turn is retried: a warning says when and why.
    fn retrying(&mut self, turn: u32, attempt: u32, delay_ms: u64, error: &ErrorInfo) {
        self.notice(
            Level::Warn,
            format!(
                "turn {turn}: retrying (attempt {attempt}) in {:.1}s: {}",
                delay_ms as f64 / 1000.0,
                error.message
            ),
        );
    }

    /// The input was worked through: the session waits, and a warning says if it was cut short.
    fn input_completed(&mut self, reason: Option<&EndReason>) {
        self.phase = Phase::Idle;
        match reason {
            None => {}
            Some(EndReason::Cancelled) => self.notice(Level::Warn, "interrupted"),
            Some(r) => self.notice(Level::Warn, format!("stopped: {r}")),
        }
    }

    /// The context was compacted: its new size, and a notice of the change.
    fn compacted(&mut self, seat: Option<&str>, trigger: &str, before: u64, after: u64) {
        self.context_used = after;
        let whose = seat.map(|s| format!(" ({s})")).unwrap_or_default();
        self.notice(
            Level::Info,
            format!("context compacted{whose}, {trigger}: {before} → {after} tokens"),
        );
    }

    /// An item started: a new entry for it (a message, a reasoning or a tool call).
    fn item_started(&mut self, item: &Item, now_ms: u64) {
        let body = match &item.kind {
            ItemKind::AgentMessage { text } => Body::Assistant {
                text: text.clone(),
                streaming: true,
            },
            ItemKind::Reasoning { text } => Body::Reasoning {
                text: text.clone(),
                streaming: true,
            },
            ItemKind::ToolCall {
                call_id,
                tool,
                arguments,
                path,
                output,
                exit_code,
            } => Body::Tool(ToolCell {
                item_id: item.id.clone(),
                call_id: call_id.clone(),
                reference: None,
                selected: false,
                tool: tool.clone(),
                arguments: arguments.clone(),
                path: path.clone(),
                status: item.status,
                started_ms: now_ms,
                ended_ms: None,
                output: output.clone(),
                exit_code: *exit_code,
            }),
        };
        let i = self.push(body);
        self.index.insert(item.id.clone(), i);
    }

    /// An item was updated, or completed (`done`): its entry takes the new state.
    fn item_changed(&mut self, item: &Item, done: bool, now_ms: u64) {
        if !self.index.contains_key(&item.id) {
            // Completed without a start (a call refused before it began): shown now.
            self.apply(&AgentEvent::ItemStarted { item: item.clone() }, now_ms);
        }
        if let Some(e) = self.entry_of(&item.id) {
            match (&mut e.body, &item.kind) {
                (
                    Body::Assistant { text, streaming } | Body::Reasoning { text, streaming },
                    ItemKind::AgentMessage { text: t } | ItemKind::Reasoning { text: t },
                ) if done => {
                    *text = t.clone();
                    *streaming = false;
                }
                (
                    Body::Tool(cell),
                    ItemKind::ToolCall {
                        output,
                        exit_code,
                        path,
                        ..
                    },
                ) => {
                    cell.status = item.status;
                    if done {
                        cell.ended_ms = Some(now_ms);
                        cell.output = output.clone();
                        cell.exit_code = *exit_code;
                        if path.is_some() {
                            cell.path = path.clone();
                        }
                    }
                }
                _ => {}
            }
        }
        if done && self.approval.as_ref().is_some_and(|a| a.item_id == item.id) {
            self.approval = None;
        }
    }

    /// A turn completed: its usage and cost are added up, and the context's size follows.
    fn turn_completed(&mut self, usage: &Usage, cost_usd: Option<f64>) {
        self.usage.input_tokens += usage.input_tokens;
        self.usage.cached_input_tokens += usage.cached_input_tokens;
        self.usage.output_tokens += usage.output_tokens;
        self.usage.cache_write_tokens += usage.cache_write_tokens;
        self.context_used = usage.input_tokens + usage.output_tokens;
        if let Some(c) = cost_usd {
            self.cost_usd = Some(self.cost_usd.unwrap_or(0.0) + c);
        }
    }

    /// A tool call's result got an evidence reference: the last cell of that call shows it.
    fn evidence_referenced(&mut self, call_id: &str, reference: &str) {
        if let Some(e) = self
            .entries
            .iter_mut()
            .rev()
            .find(|e| matches!(&e.body, Body::Tool(c) if c.call_id == *call_id))
        {
            if let Body::Tool(c) = &mut e.body {
                c.reference = Some(reference.to_string());
            }
            e.rev += 1;
            self.transcript_rev += 1;
        }
    }

    /// The host recorded a routing step: who is responsible now, and an entry for the step.
    fn routing_recorded(&mut self, record: &Value, responsible: Option<&String>) {
        let routing = self.routing.get_or_insert_with(Routing::default);
        routing.responsible = responsible.cloned();
        self.mark_selected(record);
        let what = record
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("routing")
            .to_string();
        self.push(Body::Routing {
            what,
            detail: routing_detail(record),
            responsible: responsible.cloned(),
        });
    }

    /// The session ended: the phase says how, and a notice says why.
    fn session_completed(
        &mut self,
        outcome: Outcome,
        reason: Option<&EndReason>,
        error: Option<&ErrorInfo>,
    ) {
        self.phase = Phase::Ended { outcome };
        let why = match (reason, error) {
            (_, Some(e)) => format!(": {}", e.message),
            (Some(r), None) => format!(": {r}"),
            (None, None) => String::new(),
        };
        let level = match outcome {
            Outcome::Completed => Level::Info,
            Outcome::Partial => Level::Warn,
            Outcome::Failed => Level::Error,
        };
        self.notice(level, format!("session {outcome}{why}"));
    }

    /// Hands the queued input to the session: each becomes a user entry, and the session works
    /// (the app sends them at a turn's end, so they join the conversation at the next safe point
    /// and steer the next turn; until then they can be edited).
    pub fn flush_queue(&mut self, now_ms: u64) -> Vec<String> {
        if self.queued.is_empty() {
            return Vec::new();
        }
        self.rev += 1;
        let texts = std::mem::take(&mut self.queued);
        for t in &texts {
            self.push(Body::User { text: t.clone() });
        }
        if !matches!(self.phase, Phase::Working { .. } | Phase::Ended { .. }) {
            self.phase = Phase::Working { since_ms: now_ms };
        }
        texts
    }

    /// The conversation of a resumed session, as entries (its calls completed, with their
    /// results; reasoning folded).
    pub fn history(&mut self, messages: &[baton_protocol::Message]) {
        use baton_protocol::{AssistantPart, Message};
        self.rev += 1;
        for m in messages {
            match m {
                Message::User { text } => {
                    self.push(Body::User { text: text.clone() });
                }
                Message::Assistant { parts } => {
                    for p in parts {
                        match p {
                            AssistantPart::Text { text } if !text.trim().is_empty() => {
                                self.push(Body::Assistant {
                                    text: text.clone(),
                                    streaming: false,
                                });
                            }
                            AssistantPart::Reasoning { text, .. } if !text.trim().is_empty() => {
                                self.push(Body::Reasoning {
                                    text: text.clone(),
                                    streaming: false,
                                });
                            }
                            AssistantPart::ToolCall {
                                id,
                                name,
                                arguments,
                                ..
                            } => {
                                let args: Value = serde_json::from_str(arguments)
                                    .unwrap_or_else(|_| Value::String(arguments.clone()));
                                let i = self.push(Body::Tool(ToolCell {
                                    item_id: id.clone(),
                                    call_id: id.clone(),
                                    reference: None,
                                    selected: false,
                                    tool: name.clone(),
                                    path: args
                                        .get("path")
                                        .and_then(Value::as_str)
                                        .map(str::to_string),
                                    arguments: args,
                                    status: ItemStatus::Completed,
                                    started_ms: 0,
                                    ended_ms: Some(0),
                                    output: None,
                                    exit_code: None,
                                }));
                                self.index.insert(format!("history:{id}"), i);
                            }
                            _ => {}
                        }
                    }
                }
                Message::Tool {
                    call_id,
                    output,
                    is_error,
                    ..
                } => {
                    self.transcript_rev += 1;
                    if let Some(&i) = self.index.get(&format!("history:{call_id}")) {
                        if let Some(Body::Tool(c)) = self.entries.get_mut(i).map(|e| &mut e.body) {
                            c.output = Some(output.clone());
                            if *is_error {
                                c.status = ItemStatus::Failed;
                            }
                        }
                    }
                }
            }
        }
        self.index.retain(|k, _| !k.starts_with("history:"));
    }

    /// The Executor's selection of evidence changed (`project` add or remove), or a report named
    /// what it cites: the cells with those references are marked (or unmarked).
    fn mark_selected(&mut self, record: &Value) {
        let refs = |v: &Value| -> Vec<String> {
            v.as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        };
        let (refs, on) = match record.get("type").and_then(Value::as_str) {
            Some("projection_added") => (refs(&record["refs"]), true),
            Some("projection_removed") => (refs(&record["refs"]), false),
            Some("report_saved") => (refs(&record["report"]["evidence"]), true),
            _ => return,
        };
        if refs.is_empty() {
            return;
        }
        for e in &mut self.entries {
            if let Body::Tool(c) = &mut e.body {
                if c.reference.as_ref().is_some_and(|r| refs.contains(r)) && c.selected != on {
                    c.selected = on;
                    e.rev += 1;
                    self.transcript_rev += 1;
                }
            }
        }
    }

    /// A `!` command the user ran: shown as a call of `!`, done.
    pub fn shell(
        &mut self,
        command: &str,
        output: &str,
        exit_code: Option<i32>,
        ok: bool,
        now_ms: u64,
    ) {
        self.rev += 1;
        self.push(Body::Tool(ToolCell {
            item_id: format!("shell-{}", self.entries.len()),
            call_id: String::new(),
            reference: None,
            selected: false,
            tool: "!".into(),
            arguments: serde_json::json!({ "command": command }),
            path: None,
            status: if ok {
                ItemStatus::Completed
            } else {
                ItemStatus::Failed
            },
            started_ms: now_ms,
            ended_ms: Some(now_ms),
            output: Some(output.to_string()),
            exit_code,
        }));
    }

    /// A tool call asks for approval.
    pub fn ask(&mut self, request: ApprovalRequest) {
        self.rev += 1;
        self.approval = Some(request);
    }

    /// Whether anything moves on screen by itself (a spinner, a running call's clock).
    pub fn animating(&self) -> bool {
        matches!(self.phase, Phase::Working { .. })
    }
}

/// The detail shown beside a routing step: its first telling field, or the references a
/// selection names.
fn routing_detail(record: &Value) -> String {
    [
        "objective",
        "summary",
        "status",
        "reason",
        "profile",
        "control",
    ]
    .iter()
    .find_map(|k| match record.get(*k) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(v @ Value::Object(_)) => Some(v.to_string()),
        _ => None,
    })
    // A selection names its references.
    .or_else(|| {
        record.get("refs").and_then(Value::as_array).map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        })
    })
    .unwrap_or_default()
}

#[cfg(test)]
pub(crate) mod tests;
