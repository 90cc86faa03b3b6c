//! The `command` backend: any executable, the task on stdin, stdout as the result.

use baton_protocol::ThinkingLevel;

use super::{prepare, Malformed, ParsedEnd, StreamParser, TaskSpec, Verdict};
use crate::types::{Activity, ExecError, Launch, StreamFormat};

/// Stdout bytes a `command` child may produce that are kept; the rest is counted and dropped (the
/// output budget cuts the result much shorter anyway).
pub const MAX_PLAIN_OUTPUT: usize = 1024 * 1024;

/// The role's `command: [program, args…]`, in the task's directory, with the task on stdin and
/// `BATON_ROLE`, `BATON_CWD` and, when set, `BATON_MODEL` (the route), `BATON_THINKING` and
/// `BATON_MAX_TURNS` in its environment (plus the caller's `extra_env`, e.g. `BATON_TASK_NAME`).
/// Config's program override does not apply: the role names its program.
pub(super) fn launch(
    spec: &TaskSpec,
    thinking: Option<ThinkingLevel>,
    env: &mut Vec<(String, String)>,
) -> Result<Launch, ExecError> {
    let argv = spec.role.meta.command.as_deref().unwrap_or_default();
    let Some((program, args)) = argv.split_first().filter(|(p, _)| !p.trim().is_empty()) else {
        return Err(prepare(format!(
            "role `{}` has backend: command but no command: add `command: [program, args…]` to its frontmatter",
            spec.role.name()
        )));
    };
    let mut set = |k: &str, v: String| env.push((k.to_string(), v));
    set("BATON_ROLE", spec.role.name().to_string());
    set("BATON_CWD", spec.cwd.display().to_string());
    if let Some(route) = &spec.route {
        set("BATON_MODEL", route.clone());
    }
    if let Some(t) = thinking {
        set("BATON_THINKING", t.as_str().to_string());
    }
    if let Some(n) = spec.max_turns {
        set("BATON_MAX_TURNS", n.to_string());
    }
    Ok(Launch::task(
        spec,
        program.into(),
        args.to_vec(),
        StreamFormat::Plain,
        format!("command: {}", argv.join(" ")),
        thinking,
    ))
}

/// Keeps stdout as it comes (up to [`MAX_PLAIN_OUTPUT`] bytes); always "completed", so the exit
/// code alone decides success.
#[derive(Default)]
pub(crate) struct PlainParser {
    kept: Vec<u8>,
    dropped: usize,
}

impl StreamParser for PlainParser {
    fn line(&mut self, line: &[u8], _out: &mut Vec<Activity>) -> Result<(), Malformed> {
        self.raw(line);
        self.raw(b"\n");
        Ok(())
    }

    fn oversized(&mut self, prefix: &[u8], len: usize, _out: &mut Vec<Activity>) {
        self.raw(prefix);
        self.dropped += len.saturating_sub(prefix.len());
    }

    fn wants_raw(&self) -> bool {
        true
    }

    fn raw(&mut self, bytes: &[u8]) {
        let room = MAX_PLAIN_OUTPUT.saturating_sub(self.kept.len());
        let take = room.min(bytes.len());
        self.kept.extend_from_slice(&bytes[..take]);
        self.dropped += bytes.len() - take;
    }

    fn finish(&mut self) -> ParsedEnd {
        let mut text = String::from_utf8_lossy(&self.kept).into_owned();
        let mut dropped = self.dropped;
        // A kept part that ends inside a UTF-8 sequence was cut by the byte limit.
        if dropped > 0 && text.ends_with('\u{FFFD}') {
            text.pop();
            dropped += 1;
        }
        ParsedEnd {
            final_text: text,
            final_omitted: dropped,
            verdict: Verdict::Completed,
            ..ParsedEnd::new()
        }
    }
}
