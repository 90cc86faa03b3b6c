//! Pi (`pi --mode json`): both the full `message_update` form of 0.7x (a `partial` snapshot in every
//! update) and the delta-only form of 1.x (a top-level `usage`, no snapshots), which read alike
//! since the parser never looks at the snapshots.
//!
//! Events read: `message_start`/`message_update` (thinking and text deltas → [`Activity::Thinking`]),
//! `message_end` of an assistant message (its text, usage, `stopReason`, `errorMessage` →
//! [`Activity::MessageEnd`] and [`Activity::Tokens`]), `tool_execution_start`/`_end` (→ tool
//! activity), `turn_start`, `agent_end` (final unless `willRetry`) and `agent_settled` (1.x, final).
//! Everything else (`session`, `queue_update`, compaction and retry events …) is skipped.

use std::borrow::Cow;

use baton_protocol::{ThinkingLevel, Usage};
use serde::de::{self, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::{
    found_at, json_event, peer_choice, program_of, Malformed, ParsedEnd, StreamParser, Tally,
    TaskSpec, Verdict,
};
use crate::limits::{scan_prefix, tool_end};
use crate::types::{Activity, ExecError, Launch, StreamFormat};

/// `pi --mode json -p --no-session [--provider P] [--model M] [--thinking L]
/// (--tools a,b | --no-tools) [--append-system-prompt BODY]` with the task on stdin. Pi's built-in
/// tools carry the same names as baton's (read, bash, edit, write, grep, find, ls), so a role's
/// tool list, less the delegation tools, passes through as the allowlist. `--max-turns` has no pi equivalent and is dropped.
pub(super) fn launch(
    spec: &TaskSpec,
    thinking: Option<ThinkingLevel>,
) -> Result<Launch, ExecError> {
    let program = program_of(spec)?;
    let mut args: Vec<String> = ["--mode", "json", "-p", "--no-session"]
        .map(String::from)
        .to_vec();
    let peer = peer_choice(spec, thinking);
    if let Some(m) = &peer.model {
        if let Some(p) = &m.provider {
            args.push("--provider".into());
            args.push(p.clone());
        }
        args.push("--model".into());
        args.push(m.model.clone());
    }
    if let Some(l) = peer.level {
        args.push("--thinking".into());
        args.push(l.as_str().into());
    }
    // Children never delegate: the delegation tools a role lists are not passed on.
    let tools: Vec<&str> = spec
        .role
        .meta
        .tools
        .iter()
        .map(String::as_str)
        .filter(|t| !baton_roles::is_delegation_tool(t))
        .collect();
    if tools.is_empty() {
        args.push("--no-tools".into());
    } else {
        args.push("--tools".into());
        args.push(tools.join(","));
    }
    // Exactly the role's skills: none of pi's own discovery (seed 004).
    args.push("--no-skills".into());
    for dir in &spec.skills {
        args.push("--skill".into());
        args.push(dir.display().to_string());
    }
    if !spec.role.body.trim().is_empty() {
        args.push("--append-system-prompt".into());
        args.push(spec.role.body.clone());
    }
    Ok(peer.launch(spec, program, args, StreamFormat::Pi))
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    message: Option<Message<'a>>,
    #[serde(default, rename = "assistantMessageEvent", borrow)]
    update: Option<Update<'a>>,
    #[serde(default, rename = "toolCallId", borrow)]
    tool_call_id: Option<Cow<'a, str>>,
    #[serde(default, rename = "toolName", borrow)]
    tool_name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    args: Option<Args<'a>>,
    #[serde(default, rename = "isError")]
    is_error: Option<bool>,
    #[serde(default, rename = "willRetry")]
    will_retry: Option<bool>,
}

#[derive(Deserialize)]
struct Update<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
}

#[derive(Deserialize)]
struct Args<'a> {
    #[serde(default, borrow)]
    path: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(default, borrow)]
    role: Option<Cow<'a, str>>,
    #[serde(default)]
    content: Option<TextOf>,
    #[serde(default)]
    usage: Option<PiUsage>,
    #[serde(default, rename = "stopReason", borrow)]
    stop_reason: Option<Cow<'a, str>>,
    #[serde(default, rename = "errorMessage", borrow)]
    error_message: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default, Clone, Copy)]
#[serde(default)]
struct PiUsage {
    input: u64,
    output: u64,
    #[serde(rename = "cacheRead")]
    cache_read: u64,
    #[serde(rename = "cacheWrite")]
    cache_write: u64,
}

impl From<PiUsage> for Usage {
    /// Pi counts cache reads and writes apart from `input`; baton's input includes them.
    fn from(u: PiUsage) -> Usage {
        Usage {
            input_tokens: u.input + u.cache_read + u.cache_write,
            cached_input_tokens: u.cache_read,
            output_tokens: u.output,
            cache_write_tokens: 0,
        }
    }
}

/// The text of a message's `content`: a string, or the `text` blocks of an array joined by newlines.
#[derive(Default)]
struct TextOf(String);

impl<'de> Deserialize<'de> for TextOf {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = TextOf;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or an array of content blocks")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<TextOf, E> {
                Ok(TextOf(v.to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<TextOf, A::Error> {
                let mut text = String::new();
                while let Some(block) = seq.next_element::<Block<'de>>()? {
                    if block.kind.as_deref() == Some("text") {
                        if let Some(t) = block.text {
                            if !text.is_empty() {
                                text.push('\n');
                            }
                            text.push_str(&t);
                        }
                    }
                }
                Ok(TextOf(text))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(default, rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
}

#[derive(Default)]
pub(crate) struct PiParser {
    tally: Tally,
    final_text: String,
    stop_reason: Option<String>,
    error: Option<String>,
    done: bool,
}

impl StreamParser for PiParser {
    fn line(&mut self, line: &[u8], out: &mut Vec<Activity>) -> Result<(), Malformed> {
        let Some(ev) = json_event::<Line<'_>>(line)? else {
            return Ok(());
        };
        match ev.kind.as_ref() {
            "turn_start" => self.tally.pulse.reset(),
            "message_update" => {
                let kind = ev.update.as_ref().map(|u| u.kind.as_ref()).unwrap_or("");
                if kind.starts_with("text_") || kind.starts_with("thinking_") {
                    self.tally.pulse.thinking(out);
                }
            }
            "message_end" => {
                let Some(msg) = ev.message else {
                    return Err(Malformed("message_end without a message".into()));
                };
                if msg.role.as_deref() != Some("assistant") {
                    return Ok(());
                }
                self.tally.pulse.reset();
                self.tally.turns += 1;
                if let Some(u) = msg.usage {
                    self.tally.usage.add(&u.into());
                }
                if let Some(TextOf(text)) = msg.content {
                    if !text.trim().is_empty() {
                        self.final_text = text;
                    }
                }
                self.stop_reason = msg.stop_reason.map(Cow::into_owned);
                // A later success clears an earlier (retried) error.
                self.error = msg.error_message.map(Cow::into_owned);
                out.push(Activity::MessageEnd {
                    turn: self.tally.turns,
                });
                out.push(Activity::Tokens {
                    usage: self.tally.usage,
                });
            }
            "tool_execution_start" => {
                let id = ev.tool_call_id.as_deref().unwrap_or("");
                let name = ev.tool_name.as_deref().unwrap_or("");
                let path = ev.args.as_ref().and_then(|a| a.path.as_deref());
                self.tally.tool_start(id, name, path, out);
            }
            "tool_execution_end" => {
                self.tally.pulse.reset();
                let id = ev.tool_call_id.as_deref().unwrap_or("");
                let name = ev.tool_name.as_deref().unwrap_or("");
                out.extend(tool_end(id, name, ev.is_error.unwrap_or(false)));
            }
            "agent_end" if ev.will_retry != Some(true) => self.done = true,
            "agent_settled" => self.done = true,
            _ => {}
        }
        Ok(())
    }

    fn oversized(&mut self, prefix: &[u8], _len: usize, out: &mut Vec<Activity>) {
        let found = scan_prefix(prefix, 2);
        match found_at(&found, &["type"]).map(|f| f.value.as_str()) {
            Some("tool_execution_start") => {
                let id = found_at(&found, &["toolCallId"]);
                let name = found_at(&found, &["toolName"]);
                if let (Some(id), Some(name)) = (id, name) {
                    let path = found_at(&found, &["args", "path"]).map(|f| f.value.clone());
                    let (id, name) = (id.value.clone(), name.value.clone());
                    self.tally.tool_start(&id, &name, path.as_deref(), out);
                }
            }
            // The whole conversation rides on agent_end, so it is the line most likely to be long.
            Some("agent_end" | "agent_settled") => self.done = true,
            _ => {}
        }
    }

    fn finish(&mut self) -> ParsedEnd {
        let verdict = if !self.done {
            Verdict::NoFinal
        } else {
            match self.stop_reason.as_deref() {
                Some("error" | "aborted") => Verdict::Failed,
                Some("length") => Verdict::TokenLimit,
                Some(_) | None if self.tally.turns == 0 => Verdict::Failed,
                Some(_) | None => Verdict::Completed,
            }
        };
        ParsedEnd {
            stop_reason: self.stop_reason.clone(),
            error_message: self.error.clone(),
            verdict,
            ..self.tally.end(self.final_text.clone())
        }
    }
}
