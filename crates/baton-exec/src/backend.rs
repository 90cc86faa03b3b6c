//! Backends: how each agent program is launched ([`launch_for`]) and how its stdout is read
//! ([`parser_for`]).
//!
//! | backend | program (default) | task goes to | stream |
//! | --- | --- | --- | --- |
//! | `baton` | the running baton binary | stdin (`-`) | [`StreamFormat::Baton`], docs/protocol.md |
//! | `pi` | `pi` | stdin (pi reads piped stdin as the prompt) | [`StreamFormat::Pi`] |
//! | `codex` | `codex` | stdin (`-`), after the role's instructions | [`StreamFormat::Codex`] |
//! | `claude` | `claude` | stdin | [`StreamFormat::Claude`] |
//! | `command` | the role's `command[0]` | stdin | [`StreamFormat::Plain`] |
//!
//! The task always travels on stdin, never in argv: a long task would hit the kernel's limit on one
//! argument (128 KiB), and a task that starts with `-` would be read as a flag.
//!
//! Every child gets `BATON_CHILD=1`, so a baton started inside it (directly or from a tool) offers no
//! delegation tools and delegation cannot recurse. `command` children also get `BATON_ROLE`,
//! `BATON_CWD` and, when set, `BATON_MODEL`, `BATON_THINKING` and `BATON_MAX_TURNS`; the caller adds
//! per-task context such as `BATON_TASK_NAME` through [`TaskSpec::extra_env`], which every backend
//! passes on.

// `ExecError` carries a partial `ChildResult` by value (a type shared across the crate), which
// makes it large; launches are built once per child, so the size costs nothing that matters.
#![allow(clippy::result_large_err)]

mod baton;
mod claude;
mod codex;
mod pi;
mod plain;

use std::path::PathBuf;

use baton_protocol::role::{BackendKind, RoleSpec};
use baton_protocol::{Route, ThinkingLevel, Usage};

use crate::types::{Activity, ExecError, ExecErrorCode, Launch, StreamFormat};

pub use plain::MAX_PLAIN_OUTPUT;

/// Everything needed to build the [`Launch`] of one delegated task.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskSpec {
    pub backend: BackendKind,
    pub role: RoleSpec,
    /// The full task text.
    pub task: String,
    pub cwd: PathBuf,
    /// `provider/model[:thinking]` resolved by the caller for the baton backend; for peers either
    /// such a route or a bare model name of that program.
    pub route: Option<String>,
    /// A thinking level that overrides the route's.
    pub thinking: Option<String>,
    /// The program, from config `executor.programs.<backend>`; see [`default_program`].
    pub program: Option<PathBuf>,
    /// Baton backend: a file holding the frozen role, passed as `--role-file` (else `--role NAME`).
    pub role_file: Option<PathBuf>,
    pub max_turns: Option<u32>,
    /// Added to the child's environment after the variables baton sets.
    pub extra_env: Vec<(String, String)>,
    /// The folders of the skills the role names, resolved by Main: a `baton` child and pi get
    /// each as `--skill DIR`; Claude Code and Codex have no way to be given skills.
    pub skills: Vec<PathBuf>,
}

/// The program a backend runs when config names none: the running baton binary for `baton`, the
/// program's name (looked up on `PATH`) for the peers, nothing for `command` (the role names it).
pub fn default_program(backend: BackendKind) -> Option<PathBuf> {
    match backend {
        BackendKind::Baton => baton_process::own_program().ok(),
        BackendKind::Pi => Some("pi".into()),
        BackendKind::Codex => Some("codex".into()),
        BackendKind::Claude => Some("claude".into()),
        BackendKind::Command => None,
    }
}

/// The config key that names a backend's program, for error messages.
pub fn program_key(backend: BackendKind) -> String {
    format!("executor.programs.{}", backend.as_str())
}

/// Builds the child process for a task. Errors (code `prepare`) name the bad field.
pub fn launch_for(spec: &TaskSpec) -> Result<Launch, ExecError> {
    let thinking = match spec.thinking.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(t) => Some(
            t.parse::<ThinkingLevel>()
                .map_err(|e| prepare(format!("thinking: {e}")))?,
        ),
    };
    if let Some(route) = &spec.route {
        if route.trim().is_empty() || route.chars().any(char::is_control) {
            return Err(prepare(format!(
                "model `{route}` is not a usable route: pass `provider/model[:thinking]` or a model name"
            )));
        }
    }
    let mut env = vec![("BATON_CHILD".to_string(), "1".to_string())];
    let mut launch = match spec.backend {
        BackendKind::Baton => baton::launch(spec, thinking)?,
        BackendKind::Pi => pi::launch(spec, thinking)?,
        BackendKind::Codex => codex::launch(spec, thinking)?,
        BackendKind::Claude => claude::launch(spec, thinking)?,
        BackendKind::Command => plain::launch(spec, thinking, &mut env)?,
    };
    env.append(&mut launch.env);
    env.extend(spec.extra_env.iter().cloned());
    launch.env = env;
    Ok(launch)
}

pub(crate) fn prepare(message: impl Into<String>) -> ExecError {
    ExecError::new(ExecErrorCode::Prepare, message)
}

/// The configured or default program of a peer backend.
pub(crate) fn program_of(spec: &TaskSpec) -> Result<PathBuf, ExecError> {
    match spec
        .program
        .clone()
        .or_else(|| default_program(spec.backend))
    {
        Some(p) if !p.as_os_str().is_empty() => Ok(p),
        Some(_) | None => Err(prepare(format!(
            "no program for the {} backend: set {}",
            spec.backend.as_str(),
            program_key(spec.backend)
        ))),
    }
}

/// A peer's model: a route `provider/model[:thinking]` split into its parts, or a bare model name.
pub(crate) struct PeerModel {
    pub provider: Option<String>,
    pub model: String,
    pub thinking: Option<ThinkingLevel>,
}

pub(crate) fn peer_model(route: &str) -> PeerModel {
    match route.parse::<Route>() {
        Ok(r) => PeerModel {
            provider: Some(r.provider),
            model: r.model,
            thinking: r.thinking,
        },
        Err(_) => PeerModel {
            provider: None,
            model: route.to_string(),
            thinking: None,
        },
    }
}

/// The model a peer program runs and how the launch names it: the route's parts (see
/// [`peer_model`]), the thinking level (the given one, else the route's) and the label (the route
/// as given, or `default`).
pub(crate) struct PeerChoice {
    pub model: Option<PeerModel>,
    pub level: Option<ThinkingLevel>,
    pub label: String,
}

impl PeerChoice {
    /// The peer's [`Launch::task`], labelled with this model and thinking level.
    pub fn launch(
        self,
        spec: &TaskSpec,
        program: PathBuf,
        args: Vec<String>,
        format: StreamFormat,
    ) -> Launch {
        Launch::task(spec, program, args, format, self.label, self.level)
    }
}

pub(crate) fn peer_choice(spec: &TaskSpec, thinking: Option<ThinkingLevel>) -> PeerChoice {
    let model = spec.route.as_deref().map(peer_model);
    PeerChoice {
        level: thinking.or(model.as_ref().and_then(|m| m.thinking)),
        label: spec.route.clone().unwrap_or_else(|| "default".into()),
        model,
    }
}

// ------------------------------------------------------------------------------------------------
// Parsing

/// How a child's stream said it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The final event reported success (the exit code still has to be 0).
    Completed,
    /// The final event reported that the model or agent failed.
    Failed,
    /// The child stopped at its turn limit.
    TurnLimit,
    /// The model's output token limit cut the final answer.
    TokenLimit,
    /// No final event was seen.
    NoFinal,
}

impl Launch {
    /// A delegated task's child: `program args` in the task's folder, the task on stdin,
    /// nothing added to the environment and no confinement (set the fields that differ).
    pub(crate) fn task(
        spec: &TaskSpec,
        program: PathBuf,
        args: Vec<String>,
        format: StreamFormat,
        model_label: String,
        thinking: Option<baton_protocol::ThinkingLevel>,
    ) -> Launch {
        Launch {
            program,
            args,
            env: Vec::new(),
            cwd: spec.cwd.clone(),
            stdin: Some(spec.task.clone()),
            format,
            model_label,
            thinking_label: thinking.map(|t| t.as_str().to_string()),
            confine: None,
        }
    }
}

/// What a parser learned from the whole stream.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedEnd {
    /// The assistant's final answer (for `command` children: stdout).
    pub final_text: String,
    /// Bytes of the final answer dropped before it reached the output budget.
    pub final_omitted: usize,
    pub usage: Usage,
    pub turns: u32,
    pub tools_started: u32,
    /// The child's own stop reason or outcome, when it gave one.
    pub stop_reason: Option<String>,
    /// An error the child reported (model failure and the like).
    pub error_message: Option<String>,
    pub verdict: Verdict,
    /// What the child said its run cost in USD (Claude Code's `total_cost_usd`); `None`: it did
    /// not say, and its tokens are priced with the price table.
    pub cost_usd: Option<f64>,
    /// The child's own session id, when its stream names it (`baton` agent: `session.started`;
    /// Claude Code: `result`): where its whole conversation is kept.
    pub session_id: Option<String>,
}

impl ParsedEnd {
    pub(crate) fn new() -> Self {
        ParsedEnd {
            final_text: String::new(),
            final_omitted: 0,
            usage: Usage::default(),
            turns: 0,
            tools_started: 0,
            stop_reason: None,
            error_message: None,
            verdict: Verdict::NoFinal,
            cost_usd: None,
            session_id: None,
        }
    }
}

/// A line that is not an event this parser can read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a readable event line: {0}")]
pub struct Malformed(pub String);

/// Reads one child's stdout, line by line, into activity events and a final result.
pub trait StreamParser: Send {
    /// One complete line (without its newline). Activity it implies is pushed to `out` in order.
    fn line(&mut self, line: &[u8], out: &mut Vec<Activity>) -> Result<(), Malformed>;
    /// A line longer than [`crate::types::MAX_EVENT_LINE`]: only its first bytes and its length.
    /// Parsers salvage what they can (a tool start's call id and tool name; a final event's type).
    fn oversized(&mut self, prefix: &[u8], len: usize, out: &mut Vec<Activity>);
    /// True for parsers that want the raw bytes (plain stdout) instead of lines.
    fn wants_raw(&self) -> bool {
        false
    }
    /// Raw stdout bytes, for parsers whose [`StreamParser::wants_raw`] is true.
    fn raw(&mut self, _bytes: &[u8]) {}
    /// What the stream said, so far; callable at any time (also after a kill).
    fn finish(&mut self) -> ParsedEnd;
}

/// The parser for a stream format.
pub fn parser_for(format: StreamFormat) -> Box<dyn StreamParser> {
    match format {
        StreamFormat::Baton => Box::new(baton::BatonParser::default()),
        StreamFormat::Pi => Box::new(pi::PiParser::default()),
        StreamFormat::Codex => Box::new(codex::CodexParser::default()),
        StreamFormat::Claude => Box::new(claude::ClaudeParser::default()),
        StreamFormat::Plain => Box::new(plain::PlainParser::default()),
    }
}

/// Emits [`Activity::Thinking`] only when the child switches into thinking or streaming text, not
/// for every delta.
#[derive(Debug, Default)]
pub(crate) struct ThinkingPulse {
    on: bool,
}

impl ThinkingPulse {
    pub fn thinking(&mut self, out: &mut Vec<Activity>) {
        if !self.on {
            self.on = true;
            out.push(Activity::Thinking);
        }
    }
    pub fn reset(&mut self) {
        self.on = false;
    }
}

/// What every event-stream parser keeps alike: the thinking pulse, and the counts that go into
/// its [`ParsedEnd`] (usage of the turns that ended, turns, tool calls started).
#[derive(Debug, Default)]
pub(crate) struct Tally {
    pub pulse: ThinkingPulse,
    pub usage: Usage,
    pub turns: u32,
    pub tools_started: u32,
}

impl Tally {
    /// A tool call started: thinking is over, the call is counted and its start reported.
    pub fn tool_start(
        &mut self,
        id: &str,
        tool: &str,
        path: Option<&str>,
        out: &mut Vec<Activity>,
    ) {
        self.pulse.reset();
        self.tools_started += 1;
        out.extend(crate::limits::tool_start(id, tool, path));
    }

    /// The end so far: `final_text` and these counts, without a final event.
    pub fn end(&self, final_text: String) -> ParsedEnd {
        ParsedEnd {
            final_text,
            usage: self.usage,
            turns: self.turns,
            tools_started: self.tools_started,
            ..ParsedEnd::new()
        }
    }
}

/// Parses one line as JSON into `T`, mapping errors to [`Malformed`].
pub(crate) fn json_line<'a, T: serde::Deserialize<'a>>(line: &'a [u8]) -> Result<T, Malformed> {
    serde_json::from_slice(line).map_err(|e| Malformed(e.to_string()))
}

/// One JSON event of a line, or `None` for a blank line (which every parser skips silently).
pub(crate) fn json_event<'a, T: serde::Deserialize<'a>>(
    line: &'a [u8],
) -> Result<Option<T>, Malformed> {
    if blank(line) {
        return Ok(None);
    }
    json_line(line).map(Some)
}

/// True for lines with nothing but whitespace, which every parser skips silently.
pub(crate) fn blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

/// The first string found at `keys` (see [`crate::limits::Found::at`]).
pub(crate) fn found_at<'f>(
    found: &'f [crate::limits::Found],
    keys: &[&str],
) -> Option<&'f crate::limits::Found> {
    found.iter().find(|f| f.at(keys) && f.complete)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use baton_protocol::role::{RoleFrontmatter, RoleSource};
    use pretty_assertions::assert_eq;

    pub(crate) fn role(tools: &[&str], command: Option<Vec<&str>>) -> RoleSpec {
        RoleSpec {
            meta: RoleFrontmatter {
                name: "scout".into(),
                description: "reads things".into(),
                tools: tools.iter().map(|t| t.to_string()).collect(),
                skills: vec![],
                mcp: vec![],
                extensions: vec![],
                isolation: None,
                model_class: None,
                backend: None,
                command: command.map(|c| c.iter().map(|s| s.to_string()).collect()),
                sandbox: None,
            },
            body: "You are a scout.".into(),
            source: RoleSource::Builtin,
        }
    }

    pub(crate) fn spec(backend: BackendKind) -> TaskSpec {
        TaskSpec {
            backend,
            role: role(&["read", "grep"], None),
            task: "--look at the notes".into(),
            cwd: "/work/dir".into(),
            route: Some("local/qwen2.5-coder:7b".into()),
            thinking: None,
            program: Some("/opt/bin/agent".into()),
            role_file: None,
            max_turns: Some(7),
            extra_env: vec![("EXTRA".into(), "1".into())],
            skills: Vec::new(),
        }
    }

    #[test]
    fn baton_launch() {
        let mut s = spec(BackendKind::Baton);
        s.thinking = Some("high".into());
        s.skills = vec![PathBuf::from("/p/.baton/skills/style")];
        let l = launch_for(&s).unwrap();
        assert_eq!(
            l,
            Launch {
                program: "/opt/bin/agent".into(),
                args: [
                    "agent",
                    "--json",
                    "--role",
                    "scout",
                    "--model",
                    "local/qwen2.5-coder:7b:high",
                    "--max-turns",
                    "7",
                    "--skill",
                    "/p/.baton/skills/style",
                    "--cwd",
                    "/work/dir",
                    "-"
                ]
                .map(String::from)
                .to_vec(),
                env: vec![
                    ("BATON_CHILD".into(), "1".into()),
                    ("EXTRA".into(), "1".into())
                ],
                cwd: "/work/dir".into(),
                stdin: Some("--look at the notes".into()),
                format: StreamFormat::Baton,
                model_label: "local/qwen2.5-coder:7b:high".into(),
                thinking_label: Some("high".into()),
                confine: None,
            }
        );
        s.role_file = Some("/tmp/role.md".into());
        s.skills.clear();
        s.route = None;
        s.thinking = None;
        s.max_turns = None;
        let l = launch_for(&s).unwrap();
        assert_eq!(
            l.args,
            [
                "agent",
                "--json",
                "--role-file",
                "/tmp/role.md",
                "--cwd",
                "/work/dir",
                "-"
            ]
        );
        assert_eq!(l.model_label, "default");
        s.thinking = Some("high".into());
        let e = launch_for(&s).unwrap_err();
        assert_eq!(e.code, ExecErrorCode::Prepare);
        s.route = Some("nonsense".into());
        let e = launch_for(&s).unwrap_err();
        assert_eq!(e.code, ExecErrorCode::Prepare);
        assert!(e.message.contains("provider/model"), "{}", e.message);
    }

    #[test]
    fn pi_launch() {
        let mut s = spec(BackendKind::Pi);
        let l = launch_for(&s).unwrap();
        // Every pi launch starts the same and ends with the role's body.
        let pi = |middle: &[&'static str]| -> Vec<&str> {
            let head = ["--mode", "json", "-p", "--no-session"];
            let tail = ["--no-skills", "--append-system-prompt", "You are a scout."];
            [&head[..], middle, &tail[..]].concat()
        };
        assert_eq!(
            l.args,
            pi(&[
                "--provider",
                "local",
                "--model",
                "qwen2.5-coder:7b",
                "--tools",
                "read,grep"
            ])
        );
        assert_eq!(l.stdin.as_deref(), Some("--look at the notes"));
        assert_eq!(l.format, StreamFormat::Pi);
        s.route = Some("sonnet".into());
        s.thinking = Some("low".into());
        // Children never delegate: a role's delegation tools are not passed on.
        s.role = role(&["delegate_task", "delegate_flow"], None);
        s.program = None;
        let l = launch_for(&s).unwrap();
        assert_eq!(l.program, PathBuf::from("pi"));
        assert_eq!(
            l.args,
            pi(&["--model", "sonnet", "--thinking", "low", "--no-tools"])
        );
        // Exactly the role's skills, each by its folder, and none of pi's own.
        s.skills = vec![PathBuf::from("/p/.baton/skills/style")];
        let l = launch_for(&s).unwrap();
        let at = l.args.iter().position(|a| a == "--no-skills").unwrap();
        assert_eq!(
            l.args[at..at + 3],
            ["--no-skills", "--skill", "/p/.baton/skills/style"]
        );
        s.thinking = Some("loud".into());
        assert_eq!(launch_for(&s).unwrap_err().code, ExecErrorCode::Prepare);
    }

    #[test]
    fn codex_launch() {
        let mut s = spec(BackendKind::Codex);
        s.route = Some("mock/gpt-5.5:medium".into());
        let l = launch_for(&s).unwrap();
        // Every codex launch starts the same in the task's directory and reads stdin.
        let codex = |middle: &[&'static str]| -> Vec<&str> {
            let head = [
                "exec",
                "--json",
                "--skip-git-repo-check",
                "--ephemeral",
                "--cd",
                "/work/dir",
            ];
            [&head[..], middle, &["-"][..]].concat()
        };
        assert_eq!(
            l.args,
            codex(&[
                "-m",
                "gpt-5.5",
                "-c",
                "model_provider=\"mock\"",
                "-c",
                "model_reasoning_effort=\"medium\"",
                "--sandbox",
                "read-only"
            ])
        );
        assert_eq!(
            l.stdin.as_deref(),
            Some("You are a scout.\n\n---\n\n--look at the notes")
        );
        s.route = None;
        s.role = role(&["read", "edit", "bash"], None);
        let l = launch_for(&s).unwrap();
        assert_eq!(l.args, codex(&["--sandbox", "workspace-write"]));
    }

    #[test]
    fn claude_launch() {
        let mut s = spec(BackendKind::Claude);
        s.route = Some("anthropic/claude-sonnet-4-5:high".into());
        s.role = role(
            &[
                "read",
                "grep",
                "find",
                "ls",
                "bash",
                "mcp__x",
                "delegate_task",
            ],
            None,
        );
        let l = launch_for(&s).unwrap();
        assert_eq!(
            l.args,
            [
                "-p",
                "--output-format",
                "stream-json",
                "--verbose",
                "--model",
                "claude-sonnet-4-5",
                "--max-turns",
                "7",
                "--append-system-prompt",
                "You are a scout.",
                "--allowedTools",
                "Read,Grep,Glob,Bash,mcp__x",
                "--disallowedTools",
                "Edit,MultiEdit,Write,NotebookEdit,WebFetch,WebSearch,Task"
            ]
        );
        assert!(l
            .env
            .contains(&("MAX_THINKING_TOKENS".to_string(), "32000".to_string())));
        assert_eq!(l.stdin.as_deref(), Some("--look at the notes"));
    }

    #[test]
    fn command_launch() {
        let mut s = spec(BackendKind::Command);
        let e = launch_for(&s).unwrap_err();
        assert_eq!(e.code, ExecErrorCode::Prepare);
        assert!(e.message.contains("command"), "{}", e.message);
        s.role = role(&[], Some(vec!["./fix.sh", "--fast"]));
        let l = launch_for(&s).unwrap();
        assert_eq!(l.program, PathBuf::from("./fix.sh"));
        assert_eq!(l.args, ["--fast"]);
        assert_eq!(l.format, StreamFormat::Plain);
        assert_eq!(l.stdin.as_deref(), Some("--look at the notes"));
        assert_eq!(
            l.env,
            [
                ("BATON_CHILD", "1"),
                ("BATON_ROLE", "scout"),
                ("BATON_CWD", "/work/dir"),
                ("BATON_MODEL", "local/qwen2.5-coder:7b"),
                ("BATON_MAX_TURNS", "7"),
                ("EXTRA", "1"),
            ]
            .map(|(k, v)| (k.to_string(), v.to_string()))
        );
        assert_eq!(l.model_label, "command: ./fix.sh --fast");
    }
}
