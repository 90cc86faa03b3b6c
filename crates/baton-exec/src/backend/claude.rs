//! Claude Code (`claude -p --output-format stream-json --verbose`).
//!
//! Events read: `assistant` messages (content blocks `text` and `thinking` → [`Activity::Thinking`],
//! `tool_use` → [`Activity::ToolStart`] with `input.file_path`/`path`/`notebook_path` as the path;
//! per-message `usage`; `stop_reason`), `user` messages (`tool_result` blocks → [`Activity::ToolEnd`]),
//! and the final `result` (`subtype` `success` or `error_*`, `is_error`, `result`, `num_turns`,
//! `usage`, `total_cost_usd`). Claude repeats one message id over several events (one per content block), so a
//! message ends — [`Activity::MessageEnd`] and [`Activity::Tokens`] — when the next message or the
//! result arrives. `system` events are skipped.

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

/// Claude Code tools that change things; those a role does not allow are disallowed outright.
const GUARDED_TOOLS: [&str; 8] = [
    "Bash",
    "Edit",
    "MultiEdit",
    "Write",
    "NotebookEdit",
    "WebFetch",
    "WebSearch",
    "Task",
];

/// Claude Code's names for baton's tools; other names pass through unchanged.
fn claude_tools(tool: &str) -> &[&str] {
    match tool {
        "read" => &["Read"],
        "write" => &["Write"],
        "edit" => &["Edit", "MultiEdit"],
        "bash" => &["Bash"],
        "grep" => &["Grep"],
        "find" | "ls" => &["Glob"],
        _ => &[],
    }
}

/// `claude -p --output-format stream-json --verbose [--model M] [--max-turns N]
/// [--append-system-prompt BODY] [--allowedTools …] [--disallowedTools …]` with the task on stdin.
/// The thinking level becomes `MAX_THINKING_TOKENS` (off 0, minimal 1024, low 4096, medium 10000,
/// high 32000, xhigh 63999).
pub(super) fn launch(
    spec: &TaskSpec,
    thinking: Option<ThinkingLevel>,
) -> Result<Launch, ExecError> {
    let program = program_of(spec)?;
    let mut args: Vec<String> = ["-p", "--output-format", "stream-json", "--verbose"]
        .map(String::from)
        .to_vec();
    let peer = peer_choice(spec, thinking);
    if let Some(m) = &peer.model {
        args.push("--model".into());
        args.push(m.model.clone());
    }
    if let Some(n) = spec.max_turns {
        args.push("--max-turns".into());
        args.push(n.to_string());
    }
    if !spec.role.body.trim().is_empty() {
        args.push("--append-system-prompt".into());
        args.push(spec.role.body.clone());
    }
    let mut allowed: Vec<String> = Vec::new();
    // Children never delegate: the delegation tools a role lists are not passed on.
    for tool in spec
        .role
        .meta
        .tools
        .iter()
        .filter(|t| !baton_roles::is_delegation_tool(t))
    {
        let mapped = claude_tools(tool);
        let names: Vec<String> = if mapped.is_empty() {
            vec![tool.clone()]
        } else {
            mapped.iter().map(|s| s.to_string()).collect()
        };
        for n in names {
            if !allowed.contains(&n) {
                allowed.push(n);
            }
        }
    }
    if !allowed.is_empty() {
        args.push("--allowedTools".into());
        args.push(allowed.join(","));
    }
    let denied: Vec<&str> = GUARDED_TOOLS
        .iter()
        .copied()
        .filter(|t| !allowed.iter().any(|a| a == t))
        .collect();
    if !denied.is_empty() {
        args.push("--disallowedTools".into());
        args.push(denied.join(","));
    }
    let mut env = Vec::new();
    if let Some(l) = peer.level {
        let budget = match l {
            ThinkingLevel::Off => "0",
            ThinkingLevel::Minimal => "1024",
            ThinkingLevel::Low => "4096",
            ThinkingLevel::Medium => "10000",
            ThinkingLevel::High => "32000",
            ThinkingLevel::Xhigh => "63999",
        };
        env.push(("MAX_THINKING_TOKENS".to_string(), budget.to_string()));
    }
    Ok(Launch {
        env,
        ..peer.launch(spec, program, args, StreamFormat::Claude)
    })
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    subtype: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    message: Option<Message<'a>>,
    #[serde(default, borrow)]
    result: Option<Cow<'a, str>>,
    #[serde(default)]
    is_error: Option<bool>,
    #[serde(default)]
    num_turns: Option<u32>,
    #[serde(default)]
    usage: Option<ClaudeUsage>,
    #[serde(default)]
    total_cost_usd: Option<f64>,
    #[serde(default, borrow)]
    session_id: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    content: Option<Blocks<'a>>,
    #[serde(default)]
    usage: Option<ClaudeUsage>,
    #[serde(default, borrow)]
    stop_reason: Option<Cow<'a, str>>,
}

/// A message's content: an array of blocks (a plain string holds none of interest).
struct Blocks<'a>(Vec<Block<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for Blocks<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Blocks<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or an array of content blocks")
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Blocks<'a>, E> {
                Ok(Blocks(Vec::new()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Blocks<'a>, A::Error> {
                let mut blocks = Vec::new();
                while let Some(b) = seq.next_element::<Block<'a>>()? {
                    blocks.push(b);
                }
                Ok(Blocks(blocks))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    input: Option<Input<'a>>,
    #[serde(default, borrow)]
    tool_use_id: Option<Cow<'a, str>>,
    #[serde(default)]
    is_error: Option<bool>,
}

#[derive(Deserialize)]
struct Input<'a> {
    #[serde(default, borrow)]
    file_path: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    path: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    notebook_path: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default, Clone, Copy)]
#[serde(default)]
struct ClaudeUsage {
    input_tokens: u64,
    cache_creation_input_tokens: u64,
    cache_read_input_tokens: u64,
    output_tokens: u64,
}

impl From<ClaudeUsage> for Usage {
    /// Anthropic counts cache reads and writes apart from `input_tokens`; baton's input includes them.
    fn from(u: ClaudeUsage) -> Usage {
        Usage {
            input_tokens: u.input_tokens
                + u.cache_creation_input_tokens
                + u.cache_read_input_tokens,
            cached_input_tokens: u.cache_read_input_tokens,
            output_tokens: u.output_tokens,
            cache_write_tokens: 0,
        }
    }
}

#[derive(Default)]
pub(crate) struct ClaudeParser {
    /// Usage of messages that have ended, turns and tool calls.
    tally: Tally,
    /// The message being streamed: its id and latest usage.
    current: Option<(String, Usage)>,
    /// Tool calls without a result yet: id → tool name.
    open: Vec<(String, String)>,
    last_text: String,
    last_stop: Option<String>,
    end: Option<ParsedEnd>,
}

impl ClaudeParser {
    fn close_message(&mut self, out: &mut Vec<Activity>) {
        if let Some((_, u)) = self.current.take() {
            self.tally.usage.add(&u);
            self.tally.pulse.reset();
            out.push(Activity::MessageEnd {
                turn: self.tally.turns,
            });
            out.push(Activity::Tokens {
                usage: self.tally.usage,
            });
        }
    }

    fn start_tool(&mut self, id: &str, name: &str, path: Option<&str>, out: &mut Vec<Activity>) {
        self.open.push((id.to_string(), name.to_string()));
        self.tally.tool_start(id, name, path, out);
    }
}

impl StreamParser for ClaudeParser {
    fn line(&mut self, line: &[u8], out: &mut Vec<Activity>) -> Result<(), Malformed> {
        let Some(ev) = json_event::<Line<'_>>(line)? else {
            return Ok(());
        };
        match ev.kind.as_ref() {
            "assistant" => {
                let Some(msg) = ev.message else {
                    return Err(Malformed("assistant event without a message".into()));
                };
                let id = msg.id.as_deref().unwrap_or("");
                let same = self.current.as_ref().is_some_and(|(cur, _)| cur == id);
                if !same {
                    self.close_message(out);
                    self.tally.turns += 1;
                    self.current = Some((id.to_string(), Usage::default()));
                }
                if let (Some(u), Some((_, cur))) = (msg.usage, self.current.as_mut()) {
                    *cur = u.into();
                }
                if let Some(stop) = msg.stop_reason {
                    self.last_stop = Some(stop.into_owned());
                }
                for block in msg.content.map(|b| b.0).unwrap_or_default() {
                    match block.kind.as_ref() {
                        "text" => {
                            self.tally.pulse.thinking(out);
                            if let Some(t) = block.text {
                                self.last_text = t.into_owned();
                            }
                        }
                        "thinking" | "redacted_thinking" => self.tally.pulse.thinking(out),
                        "tool_use" | "server_tool_use" => {
                            let input = block.input.as_ref();
                            let path = input.and_then(|i| {
                                i.file_path
                                    .as_deref()
                                    .or(i.path.as_deref())
                                    .or(i.notebook_path.as_deref())
                            });
                            self.start_tool(
                                block.id.as_deref().unwrap_or(""),
                                block.name.as_deref().unwrap_or(""),
                                path,
                                out,
                            );
                        }
                        _ => {}
                    }
                }
            }
            "user" => {
                let Some(msg) = ev.message else {
                    return Ok(());
                };
                for block in msg.content.map(|b| b.0).unwrap_or_default() {
                    if block.kind != "tool_result" {
                        continue;
                    }
                    let id = block.tool_use_id.as_deref().unwrap_or("");
                    let Some(pos) = self.open.iter().position(|(open, _)| open == id) else {
                        continue;
                    };
                    let (id, name) = self.open.remove(pos);
                    self.tally.pulse.reset();
                    out.extend(tool_end(&id, &name, block.is_error.unwrap_or(false)));
                }
            }
            "result" => {
                self.close_message(out);
                let subtype = ev.subtype.as_deref().unwrap_or("");
                let verdict = match subtype {
                    "error_max_turns" => Verdict::TurnLimit,
                    _ if ev.is_error == Some(true) || subtype != "success" => Verdict::Failed,
                    _ if self.last_stop.as_deref() == Some("max_tokens") => Verdict::TokenLimit,
                    _ => Verdict::Completed,
                };
                let result = ev.result.map(Cow::into_owned);
                let failed = verdict == Verdict::Failed;
                self.end = Some(ParsedEnd {
                    final_text: match (&result, failed) {
                        (Some(r), false) => r.clone(),
                        (Some(_) | None, _) => self.last_text.clone(),
                    },
                    final_omitted: 0,
                    usage: ev.usage.map(Usage::from).unwrap_or(self.tally.usage),
                    turns: ev.num_turns.unwrap_or(self.tally.turns),
                    tools_started: self.tally.tools_started,
                    stop_reason: Some(subtype.to_string()),
                    error_message: if failed {
                        result.or_else(|| Some(subtype.to_string()))
                    } else {
                        None
                    },
                    verdict,
                    // Claude Code prices its own run; a number that is not one is not taken.
                    cost_usd: ev.total_cost_usd.filter(|c| c.is_finite() && *c >= 0.0),
                    session_id: ev.session_id.map(Cow::into_owned),
                });
            }
            _ => {}
        }
        Ok(())
    }

    fn oversized(&mut self, prefix: &[u8], _len: usize, out: &mut Vec<Activity>) {
        let found = scan_prefix(prefix, 5);
        if found_at(&found, &["type"]).map(|f| f.value.as_str()) != Some("assistant") {
            return;
        }
        // The first tool_use block whose id and name came before the cut.
        let mut i = 0;
        loop {
            let at = |key: &str| {
                found.iter().find(|f| {
                    f.complete
                        && f.path.len() == 4
                        && f.at(&["message", "content", "#", key])
                        && f.path[2] == crate::limits::Seg::Index(i)
                })
            };
            let (Some(kind), id, name) = (at("type"), at("id"), at("name")) else {
                return;
            };
            if kind.value == "tool_use" {
                if let (Some(id), Some(name)) = (id, name) {
                    let (id, name) = (id.value.clone(), name.value.clone());
                    self.start_tool(&id, &name, None, out);
                }
                return;
            }
            i += 1;
        }
    }

    fn finish(&mut self) -> ParsedEnd {
        match &self.end {
            Some(end) => end.clone(),
            None => {
                let mut usage = self.tally.usage;
                if let Some((_, u)) = &self.current {
                    usage.add(u);
                }
                ParsedEnd {
                    usage,
                    stop_reason: self.last_stop.clone(),
                    ..self.tally.end(self.last_text.clone())
                }
            }
        }
    }
}
