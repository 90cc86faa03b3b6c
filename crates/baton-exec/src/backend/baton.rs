//! The native child: `baton agent --json`, read as described in docs/protocol.md.

use std::borrow::Cow;

use baton_protocol::{EndReason, ErrorCode, ItemStatus, Outcome, Route, ThinkingLevel, Usage};
use serde::Deserialize;

use super::{
    found_at, json_event, prepare, program_key, Malformed, ParsedEnd, StreamParser, Tally,
    TaskSpec, Verdict,
};
use crate::limits::{scan_prefix, tool_end};
use crate::types::{Activity, ExecError, Launch, StreamFormat};

/// `<baton> agent --json (--role-file FILE | --role NAME) [--model ROUTE] [--max-turns N]
/// [--skill DIR]… --cwd DIR -`
/// with the task on stdin.
pub(super) fn launch(
    spec: &TaskSpec,
    thinking: Option<ThinkingLevel>,
) -> Result<Launch, ExecError> {
    let program = match &spec.program {
        Some(p) => p.clone(),
        None => baton_process::own_program().map_err(|e| {
            prepare(format!(
                "cannot find the running baton binary ({e}): set {}",
                program_key(spec.backend)
            ))
        })?,
    };
    let mut args: Vec<String> = vec!["agent".into(), "--json".into()];
    match &spec.role_file {
        Some(file) => {
            args.push("--role-file".into());
            args.push(file.display().to_string());
        }
        None => {
            args.push("--role".into());
            args.push(spec.role.name().to_string());
        }
    }
    let route =
        match (&spec.route, thinking) {
            (Some(text), thinking) => {
                let mut route: Route = text.parse().map_err(|e| {
                    prepare(format!(
                        "model: {e} (the baton backend needs a route `provider/model[:thinking]`)"
                    ))
                })?;
                if thinking.is_some() {
                    route.thinking = thinking;
                }
                Some(route)
            }
            (None, Some(_)) => return Err(prepare(
                "thinking was given without a model: the baton backend takes the thinking level \
                 as part of a route `provider/model:thinking`, so resolve the route first",
            )),
            (None, None) => None,
        };
    if let Some(route) = &route {
        args.push("--model".into());
        args.push(route.to_string());
    }
    if let Some(n) = spec.max_turns {
        args.push("--max-turns".into());
        args.push(n.to_string());
    }
    // The role's skills as Main resolved them (seed 004: through Main's registry).
    for dir in &spec.skills {
        args.push("--skill".into());
        args.push(dir.display().to_string());
    }
    args.push("--cwd".into());
    args.push(spec.cwd.display().to_string());
    args.push("-".into());
    let label = route
        .as_ref()
        .map_or_else(|| "default".into(), |r| r.to_string());
    let thinking = route.as_ref().and_then(|r| r.thinking);
    Ok(Launch::task(
        spec,
        program,
        args,
        StreamFormat::Baton,
        label,
        thinking,
    ))
}

/// One line of the stream, with only the fields the parser reads; the rest is skipped unparsed.
/// The closed sets (outcome, end reason, item status, error code) are parsed strictly: a value
/// baton does not emit makes the line malformed.
#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    turn: Option<u32>,
    #[serde(default, borrow)]
    item: Option<Item<'a>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    outcome: Option<Outcome>,
    #[serde(default)]
    reason: Option<EndReason>,
    #[serde(default, borrow)]
    final_message: Option<Cow<'a, str>>,
    #[serde(default)]
    turns: Option<u32>,
    #[serde(default, borrow)]
    error: Option<ErrorBody<'a>>,
    #[serde(default, borrow)]
    session_id: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Item<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    status: Option<ItemStatus>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    call_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    tool: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    path: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct ErrorBody<'a> {
    #[serde(default)]
    code: Option<ErrorCode>,
    #[serde(default, borrow)]
    message: Option<Cow<'a, str>>,
}

impl ErrorBody<'_> {
    /// `code: message`, as a child's error is reported.
    fn text(&self) -> String {
        format!(
            "{}: {}",
            self.code.map_or("error", ErrorCode::as_str),
            self.message.as_deref().unwrap_or("")
        )
    }
}

#[derive(Deserialize, Default, Clone, Copy)]
#[serde(default)]
struct WireUsage {
    input_tokens: u64,
    cached_input_tokens: u64,
    output_tokens: u64,
}

impl From<WireUsage> for Usage {
    fn from(u: WireUsage) -> Usage {
        Usage {
            input_tokens: u.input_tokens,
            cached_input_tokens: u.cached_input_tokens,
            output_tokens: u.output_tokens,
            cache_write_tokens: 0,
        }
    }
}

#[derive(Default)]
pub(crate) struct BatonParser {
    end: Option<ParsedEnd>,
    tally: Tally,
    last_message: String,
    last_error: Option<String>,
    /// The session id `session.started` gave.
    session_id: Option<String>,
}

impl BatonParser {
    fn end(&mut self) -> &mut ParsedEnd {
        self.end.get_or_insert_with(ParsedEnd::new)
    }

    /// A turn started or completed: thinking is over, and the turn count is at least its number.
    fn turn_event(&mut self, turn: Option<u32>) {
        self.tally.pulse.reset();
        if let Some(t) = turn {
            self.tally.turns = self.tally.turns.max(t);
        }
    }
}

impl StreamParser for BatonParser {
    fn line(&mut self, line: &[u8], out: &mut Vec<Activity>) -> Result<(), Malformed> {
        let Some(ev) = json_event::<Line<'_>>(line)? else {
            return Ok(());
        };
        match ev.kind.as_ref() {
            "session.started" => self.session_id = ev.session_id.map(Cow::into_owned),
            "turn.started" => self.turn_event(ev.turn),
            "item.delta" => self.tally.pulse.thinking(out),
            "item.started" | "item.completed" => {
                let Some(item) = ev.item else {
                    return Err(Malformed(format!("{} without an item", ev.kind)));
                };
                let started = ev.kind == "item.started";
                match item.kind.as_ref() {
                    "tool_call" => {
                        let call_id = item.call_id.as_deref().unwrap_or("");
                        let tool = item.tool.as_deref().unwrap_or("");
                        if started {
                            self.tally
                                .tool_start(call_id, tool, item.path.as_deref(), out);
                        } else {
                            self.tally.pulse.reset();
                            let failed = match item.status {
                                Some(ItemStatus::Failed | ItemStatus::Declined) => true,
                                Some(ItemStatus::Completed | ItemStatus::InProgress) | None => {
                                    false
                                }
                            };
                            out.extend(tool_end(call_id, tool, failed));
                        }
                    }
                    "agent_message" => {
                        if started {
                            self.tally.pulse.thinking(out);
                        } else if let Some(text) = item.text {
                            self.last_message = text.into_owned();
                        }
                    }
                    "reasoning" if started => self.tally.pulse.thinking(out),
                    _ => {}
                }
            }
            "turn.completed" => {
                self.turn_event(ev.turn);
                if let Some(u) = ev.usage {
                    self.tally.usage.add(&u.into());
                }
                out.push(Activity::MessageEnd {
                    turn: self.tally.turns,
                });
                out.push(Activity::Tokens {
                    usage: self.tally.usage,
                });
            }
            "turn.failed" => {
                if let Some(e) = ev.error {
                    self.last_error = Some(e.text());
                }
            }
            "session.completed" => {
                // A session refused before it started says why only here.
                if let (None, Some(e)) = (&self.last_error, &ev.error) {
                    self.last_error = Some(e.text());
                }
                let end = ParsedEnd {
                    final_text: ev.final_message.map(Cow::into_owned).unwrap_or_default(),
                    final_omitted: 0,
                    usage: ev.usage.map(Usage::from).unwrap_or(self.tally.usage),
                    turns: ev.turns.unwrap_or(self.tally.turns),
                    tools_started: self.tally.tools_started,
                    stop_reason: stop_reason(ev.outcome, ev.reason),
                    error_message: self.last_error.clone(),
                    verdict: verdict(ev.outcome, ev.reason),
                    cost_usd: None,
                    session_id: None,
                };
                self.end = Some(end);
            }
            _ => {}
        }
        Ok(())
    }

    fn oversized(&mut self, prefix: &[u8], len: usize, out: &mut Vec<Activity>) {
        let found = scan_prefix(prefix, 2);
        let kind = found_at(&found, &["type"]).map(|f| f.value.as_str());
        match kind {
            Some("item.started") => {
                let is_tool =
                    found_at(&found, &["item", "type"]).is_some_and(|f| f.value == "tool_call");
                let call_id = found_at(&found, &["item", "call_id"]);
                let tool = found_at(&found, &["item", "tool"]);
                if let (true, Some(call_id), Some(tool)) = (is_tool, call_id, tool) {
                    let path = found_at(&found, &["item", "path"]).map(|f| f.value.as_str());
                    self.tally
                        .tool_start(&call_id.value, &tool.value, path, out);
                }
            }
            Some("session.completed") => {
                // The final message is too long to parse: keep what the prefix holds of it. An
                // outcome or reason baton does not emit leaves the session without a final
                // event, as a malformed line does.
                let parsed = (
                    found_at(&found, &["outcome"])
                        .map(|f| f.value.parse::<Outcome>())
                        .transpose(),
                    found_at(&found, &["reason"])
                        .map(|f| f.value.parse::<EndReason>())
                        .transpose(),
                );
                let (Ok(outcome), Ok(reason)) = parsed else {
                    return;
                };
                let text = found
                    .iter()
                    .find(|f| f.at(&["final_message"]))
                    .map(|f| f.value.clone())
                    .unwrap_or_default();
                let omitted = len.saturating_sub(text.len());
                let (usage, turns, tools_started, error) = (
                    self.tally.usage,
                    self.tally.turns,
                    self.tally.tools_started,
                    self.last_error.clone(),
                );
                let end = self.end();
                *end = ParsedEnd {
                    final_text: text,
                    final_omitted: omitted,
                    usage,
                    turns,
                    tools_started,
                    stop_reason: stop_reason(outcome, reason),
                    error_message: error,
                    verdict: verdict(outcome, reason),
                    cost_usd: None,
                    session_id: None,
                };
            }
            _ => {}
        }
    }

    fn finish(&mut self) -> ParsedEnd {
        let mut end = match &self.end {
            Some(end) => end.clone(),
            None => ParsedEnd {
                error_message: self.last_error.clone(),
                ..self.tally.end(self.last_message.clone())
            },
        };
        end.session_id = self.session_id.clone();
        end
    }
}

/// The verdict of a `session.completed` event: a limit when its reason names one, else by outcome.
fn verdict(outcome: Option<Outcome>, reason: Option<EndReason>) -> Verdict {
    match reason {
        Some(EndReason::TurnLimit) => Verdict::TurnLimit,
        Some(EndReason::MaxTokens) => Verdict::TokenLimit,
        Some(
            EndReason::Cancelled
            | EndReason::ModelError
            | EndReason::Refused
            | EndReason::NotStarted
            | EndReason::ApprovalUnavailable,
        )
        | None => match outcome {
            Some(Outcome::Completed) => Verdict::Completed,
            Some(Outcome::Partial | Outcome::Failed) | None => Verdict::Failed,
        },
    }
}

/// The stop reason reported for a session: its end reason, else its outcome.
fn stop_reason(outcome: Option<Outcome>, reason: Option<EndReason>) -> Option<String> {
    reason
        .map(EndReason::as_str)
        .or(outcome.map(Outcome::as_str))
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use pretty_assertions::assert_eq;

    fn feed(p: &mut BatonParser, text: &str) -> Vec<Activity> {
        let mut out = Vec::new();
        for line in text.lines() {
            let _ = p.line(line.as_bytes(), &mut out);
        }
        out
    }

    #[test]
    fn documented_example_stream() {
        let doc = include_str!("../../../../docs/protocol.md");
        let example = doc
            .split("## Example\n\n```json\n")
            .nth(1)
            .unwrap()
            .split("```")
            .next()
            .unwrap();
        let mut p = BatonParser::default();
        let out = feed(&mut p, example);
        let usage = |i, c, o| Usage {
            input_tokens: i,
            cached_input_tokens: c,
            output_tokens: o,
            cache_write_tokens: 0,
        };
        assert_eq!(
            out,
            vec![
                Activity::MessageEnd { turn: 1 },
                Activity::Tokens {
                    usage: usage(812, 0, 31)
                },
                Activity::ToolStart {
                    call_id: "call_1".into(),
                    tool: "read".into(),
                    path: Some("notes.txt".into())
                },
                Activity::ToolEnd {
                    call_id: "call_1".into(),
                    tool: "read".into(),
                    is_error: false
                },
                Activity::Thinking,
                Activity::MessageEnd { turn: 2 },
                Activity::Tokens {
                    usage: usage(1682, 800, 40)
                },
            ]
        );
        assert_eq!(
            p.finish(),
            ParsedEnd {
                final_text: "The file says hello.".into(),
                final_omitted: 0,
                usage: usage(1682, 800, 40),
                turns: 2,
                tools_started: 1,
                stop_reason: Some("completed".into()),
                error_message: None,
                verdict: Verdict::Completed,
                cost_usd: None,
                session_id: Some("0193…".into()),
            }
        );
    }

    #[test]
    fn outcomes() {
        let mut p = BatonParser::default();
        feed(
            &mut p,
            r#"{"type":"session.completed","outcome":"partial","reason":"turn_limit","final_message":"Status: …","turns":3,"usage":{"input_tokens":1,"cached_input_tokens":0,"output_tokens":2}}"#,
        );
        assert_eq!(p.finish().verdict, Verdict::TurnLimit);
        let mut p = BatonParser::default();
        feed(
            &mut p,
            concat!(
                r#"{"type":"turn.failed","turn":1,"error":{"code":"unauthorized","message":"bad key"}}"#,
                "\n",
                r#"{"type":"session.completed","outcome":"failed","reason":"model_error","final_message":"","turns":1,"usage":{"input_tokens":0,"cached_input_tokens":0,"output_tokens":0}}"#
            ),
        );
        let end = p.finish();
        assert_eq!(end.verdict, Verdict::Failed);
        assert_eq!(end.stop_reason.as_deref(), Some("model_error"));
        assert_eq!(end.error_message.as_deref(), Some("unauthorized: bad key"));
        // Values baton never emits make the line malformed: no final event, no guessed verdict.
        for line in [
            r#"{"type":"session.completed","outcome":"partial","reason":"token_limit","final_message":"x","turns":1}"#,
            r#"{"type":"session.completed","outcome":"done","final_message":"x","turns":1}"#,
            r#"{"type":"turn.failed","turn":1,"error":{"code":"teapot","message":"x"}}"#,
            r#"{"type":"item.completed","item":{"id":"item_0","status":"ok","type":"tool_call","call_id":"c","tool":"ls"}}"#,
        ] {
            let mut p = BatonParser::default();
            let e = p.line(line.as_bytes(), &mut Vec::new()).unwrap_err();
            assert!(e.0.contains("unknown variant"), "{line}: {}", e.0);
            assert_eq!(p.finish().verdict, Verdict::NoFinal, "{line}");
        }
        let mut p = BatonParser::default();
        feed(
            &mut p,
            r#"{"type":"session.completed","outcome":"partial","reason":"max_tokens","final_message":"cut","turns":1}"#,
        );
        assert_eq!(p.finish().verdict, Verdict::TokenLimit);
        let mut p = BatonParser::default();
        assert!(p.line(b"{\"type\":", &mut Vec::new()).is_err());
        assert!(p.line(b"   ", &mut Vec::new()).is_ok());
        assert_eq!(p.finish().verdict, Verdict::NoFinal);
    }

    #[test]
    fn oversized_lines_salvage_tool_starts_and_final_messages() {
        let mut p = BatonParser::default();
        let mut out = Vec::new();
        let start = br#"{"type":"item.started","item":{"id":"item_0","status":"in_progress","type":"tool_call","call_id":"call_9","tool":"write","arguments":{"path":"big.txt","content":"xxxxxxxx"#;
        p.oversized(start, 5_000_000, &mut out);
        assert_eq!(
            out,
            vec![Activity::ToolStart {
                call_id: "call_9".into(),
                tool: "write".into(),
                path: None
            }]
        );
        let fin = br#"{"type":"session.completed","outcome":"completed","final_message":"abcdef"#;
        p.oversized(fin, 2_000_000, &mut out);
        let end = p.finish();
        assert_eq!(end.verdict, Verdict::Completed);
        assert_eq!(end.final_text, "abcdef");
        assert_eq!(end.final_omitted, 2_000_000 - 6);
        assert_eq!(end.tools_started, 1);

        // The same reasons as a parsed line: `max_tokens` is the token limit.
        let mut p = BatonParser::default();
        let fin = br#"{"type":"session.completed","outcome":"partial","reason":"max_tokens","final_message":"abc"#;
        p.oversized(fin, 2_000_000, &mut Vec::new());
        let end = p.finish();
        assert_eq!(end.verdict, Verdict::TokenLimit);
        assert_eq!(end.stop_reason.as_deref(), Some("max_tokens"));
        // A reason baton does not emit is not guessed at.
        let mut p = BatonParser::default();
        let fin = br#"{"type":"session.completed","outcome":"partial","reason":"token_limit","final_message":"abc"#;
        p.oversized(fin, 2_000_000, &mut Vec::new());
        assert_eq!(p.finish().verdict, Verdict::NoFinal);
    }
}
