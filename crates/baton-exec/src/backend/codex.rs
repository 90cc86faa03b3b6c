//! Codex (`codex exec --json`).
//!
//! Events read: `turn.started`, `item.started`/`item.updated`/`item.completed` with items
//! `command_execution` (tool `shell`), `file_change` (tool `apply_patch`, path when it touches one
//! file), `mcp_tool_call` (its `tool`), `web_search`, `agent_message` (the answer; the last one is
//! final), `reasoning` (→ [`Activity::Thinking`]); `turn.completed {usage}` (final, success),
//! `turn.failed {error}` (final, failure) and `error {message}` (kept as the error message; codex
//! also prints it for retries it recovers from). Codex reports one turn per `exec`, so `turns` is 1
//! and [`Activity::MessageEnd`] comes with each answer message.

use std::borrow::Cow;

use baton_protocol::{ThinkingLevel, Usage};
use serde::Deserialize;

use super::{
    found_at, json_event, peer_choice, program_of, Malformed, ParsedEnd, StreamParser, Tally,
    TaskSpec, Verdict,
};
use crate::limits::{scan_prefix, tool_end};
use crate::types::{Activity, ExecError, Launch, StreamFormat};

/// Tools that change files or run commands: a role with one of them runs in codex's
/// `workspace-write` sandbox, any other in `read-only`.
const WRITING_TOOLS: [&str; 3] = ["write", "edit", "bash"];

/// `codex exec --json --skip-git-repo-check --ephemeral --cd DIR [-m MODEL]
/// [-c model_provider="P"] [-c model_reasoning_effort="L"] --sandbox workspace-write|read-only -` with the role's
/// instructions and the task on stdin. A route `provider/model` selects codex's provider of that
/// name; a bare name is only the model. Codex has no turn limit flag; `max_turns` is dropped.
pub(super) fn launch(
    spec: &TaskSpec,
    thinking: Option<ThinkingLevel>,
) -> Result<Launch, ExecError> {
    let program = program_of(spec)?;
    let mut args: Vec<String> = [
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--ephemeral",
        "--cd",
    ]
    .map(String::from)
    .to_vec();
    args.push(spec.cwd.display().to_string());
    let peer = peer_choice(spec, thinking);
    if let Some(m) = &peer.model {
        args.push("-m".into());
        args.push(m.model.clone());
        if let Some(p) = &m.provider {
            args.push("-c".into());
            args.push(format!("model_provider={}", toml_string(p)));
        }
    }
    if let Some(l) = peer.level {
        args.push("-c".into());
        args.push(format!(
            "model_reasoning_effort={}",
            toml_string(l.effort())
        ));
    }
    // The role's `sandbox` is passed on (codex's modes have the same names). Without one:
    // codex's own default may be read-only; a role that edits or runs commands needs writes to
    // its working directory, and a read-only role gets no more than reading.
    let tools = &spec.role.meta.tools;
    args.push("--sandbox".into());
    match spec.role.meta.sandbox {
        Some(mode) => args.push(mode.as_str().into()),
        None if tools.iter().any(|t| WRITING_TOOLS.contains(&t.as_str())) => {
            args.push("workspace-write".into())
        }
        None => args.push("read-only".into()),
    }
    args.push("-".into());
    let stdin = if spec.role.body.trim().is_empty() {
        spec.task.clone()
    } else {
        format!("{}\n\n---\n\n{}", spec.role.body.trim_end(), spec.task)
    };
    Ok(Launch {
        stdin: Some(stdin),
        ..peer.launch(spec, program, args, StreamFormat::Codex)
    })
}

/// A TOML basic string, for `-c key=value`.
fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    item: Option<Item<'a>>,
    #[serde(default)]
    usage: Option<CodexUsage>,
    #[serde(default, borrow)]
    error: Option<ErrorBody<'a>>,
    #[serde(default, borrow)]
    message: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Item<'a> {
    #[serde(borrow)]
    id: Cow<'a, str>,
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    status: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default)]
    exit_code: Option<i64>,
    #[serde(default, borrow)]
    tool: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    changes: Option<Vec<Change<'a>>>,
}

#[derive(Deserialize)]
struct Change<'a> {
    #[serde(default, borrow)]
    path: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct ErrorBody<'a> {
    #[serde(default, borrow)]
    message: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default, Clone, Copy)]
#[serde(default)]
struct CodexUsage {
    input_tokens: u64,
    cached_input_tokens: u64,
    output_tokens: u64,
}

/// The tool an item stands for, when it is a tool.
fn item_tool<'i>(kind: &str, tool: Option<&'i str>) -> Option<Cow<'i, str>> {
    match kind {
        "command_execution" => Some(Cow::Borrowed("shell")),
        "file_change" => Some(Cow::Borrowed("apply_patch")),
        "web_search" => Some(Cow::Borrowed("web_search")),
        "mcp_tool_call" => Some(Cow::Borrowed(tool.unwrap_or("mcp"))),
        _ => None,
    }
}

#[derive(Default)]
pub(crate) struct CodexParser {
    tally: Tally,
    /// Tool items started and not yet completed (few at a time).
    open: Vec<String>,
    final_text: String,
    error: Option<String>,
    verdict: Option<Verdict>,
}

impl CodexParser {
    fn start(&mut self, id: &str, tool: &str, path: Option<&str>, out: &mut Vec<Activity>) {
        self.open.push(id.to_string());
        self.tally.tool_start(id, tool, path, out);
    }
}

impl StreamParser for CodexParser {
    fn line(&mut self, line: &[u8], out: &mut Vec<Activity>) -> Result<(), Malformed> {
        let Some(ev) = json_event::<Line<'_>>(line)? else {
            return Ok(());
        };
        match ev.kind.as_ref() {
            "turn.started" => {
                self.tally.pulse.reset();
                self.tally.turns += 1;
            }
            "item.started" | "item.updated" | "item.completed" => {
                let Some(item) = ev.item else {
                    return Err(Malformed(format!("{} without an item", ev.kind)));
                };
                let completed = ev.kind == "item.completed";
                if let Some(tool) = item_tool(&item.kind, item.tool.as_deref()) {
                    let known = self.open.iter().any(|id| *id == item.id);
                    if !known && (ev.kind == "item.started" || completed) {
                        let path = match item.changes.as_deref() {
                            Some([one]) => one.path.as_deref(),
                            _ => None,
                        };
                        self.start(&item.id, &tool, path, out);
                    }
                    if completed {
                        self.open.retain(|id| *id != item.id);
                        let failed = matches!(item.status.as_deref(), Some("failed" | "declined"))
                            || item.exit_code.is_some_and(|c| c != 0);
                        out.extend(tool_end(&item.id, &tool, failed));
                    }
                    return Ok(());
                }
                match item.kind.as_ref() {
                    "reasoning" => self.tally.pulse.thinking(out),
                    "agent_message" => {
                        self.tally.pulse.thinking(out);
                        if completed {
                            if let Some(text) = item.text {
                                self.final_text = text.into_owned();
                            }
                            self.tally.pulse.reset();
                            out.push(Activity::MessageEnd {
                                turn: self.tally.turns.max(1),
                            });
                        }
                    }
                    _ => {}
                }
            }
            "turn.completed" => {
                self.tally.pulse.reset();
                if let Some(u) = ev.usage {
                    self.tally.usage.add(&Usage {
                        input_tokens: u.input_tokens,
                        cached_input_tokens: u.cached_input_tokens,
                        output_tokens: u.output_tokens,
                        cache_write_tokens: 0,
                    });
                }
                out.push(Activity::Tokens {
                    usage: self.tally.usage,
                });
                self.error = None;
                self.verdict = Some(Verdict::Completed);
            }
            "turn.failed" => {
                if let Some(m) = ev.error.and_then(|e| e.message) {
                    self.error = Some(m.into_owned());
                }
                self.verdict = Some(Verdict::Failed);
            }
            "error" => {
                if let Some(m) = ev.message {
                    self.error = Some(m.into_owned());
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn oversized(&mut self, prefix: &[u8], _len: usize, out: &mut Vec<Activity>) {
        let found = scan_prefix(prefix, 2);
        if found_at(&found, &["type"]).map(|f| f.value.as_str()) != Some("item.started") {
            return;
        }
        let id = found_at(&found, &["item", "id"]).map(|f| f.value.clone());
        let kind = found_at(&found, &["item", "type"]).map(|f| f.value.clone());
        let tool = found_at(&found, &["item", "tool"]).map(|f| f.value.clone());
        if let (Some(id), Some(kind)) = (id, kind) {
            if let Some(name) = item_tool(&kind, tool.as_deref()) {
                let name = name.into_owned();
                self.start(&id, &name, None, out);
            }
        }
    }

    fn finish(&mut self) -> ParsedEnd {
        ParsedEnd {
            stop_reason: match self.verdict {
                Some(Verdict::Completed) => Some("completed".into()),
                Some(Verdict::Failed) => Some("failed".into()),
                Some(Verdict::TurnLimit | Verdict::TokenLimit | Verdict::NoFinal) | None => None,
            },
            error_message: self.error.clone(),
            verdict: self.verdict.unwrap_or(Verdict::NoFinal),
            ..self.tally.end(self.final_text.clone())
        }
    }
}
