//! An agent session: what it runs with ([`AgentSpec`]), what it ends with ([`RunSummary`]) and its
//! system prompt. The loop itself is `queue.rs`: a queue pair of submissions in and events out,
//! with one seat for an ordinary session and two for a routed one; front ends start it with
//! [`Session::spawn`] (`spawn.rs`).

mod queue;
mod spawn;

pub use crate::approval::Approver;
pub use queue::{ApprovalSwitch, Interrupter, RouteSwitch, Submission};
pub use spawn::{Session, SessionEnd, SessionHandle};

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use baton_model::retry::RetryPolicy;
use baton_model::Provider;
use baton_protocol::config::Price;
use baton_protocol::role::RoleSpec;
use baton_protocol::{EndReason, ErrorInfo, Outcome, Route, RouteUsage, Usage};

use crate::tools::Tool;

/// Default turn limit, the last turn reserved for the handoff report.
pub const DEFAULT_MAX_TURNS: u32 = 50;
/// Largest context file added to the system prompt.
const CONTEXT_FILE_CAP: usize = 64 * 1024;

/// The sections every handoff report has, in order.
pub const HANDOFF_SECTIONS: [&str; 6] = [
    "Status",
    "Outcome",
    "Evidence",
    "Blocker",
    "Risk",
    "Suggested next action",
];

/// Everything one agent run needs.
pub struct AgentSpec {
    pub session_id: String,
    pub role: RoleSpec,
    pub route: Route,
    pub provider: Arc<dyn Provider>,
    pub retry: RetryPolicy,
    pub max_turns: u32,
    pub max_output_tokens: Option<u32>,
    /// The route's context window in tokens, when known (see [`Fallback::context_window`]).
    pub context_window: Option<u32>,
    /// The route that writes compaction summaries (`agent.compaction_class`); `None`: the
    /// seat's own route.
    pub compaction: Option<Fallback>,
    /// Workspace root: tools may only touch files under it.
    pub root: PathBuf,
    pub cwd: PathBuf,
    pub bash_timeout: Duration,
    /// What `bash` commands do not get of baton's environment.
    pub env_filter: baton_tool::EnvFilter,
    /// How `bash` commands are confined.
    pub sandbox: baton_tool::SandboxPolicy,
    /// The session's temp dir (`TMPDIR` of `bash` commands, writable in the sandbox).
    pub tmp_dir: Option<PathBuf>,
    /// File names looked up in `root` and added to the system prompt.
    pub context_files: Vec<String>,
    /// The skills the session is offered by name and description (their folders are readable
    /// with `read`, even outside the root).
    pub skills: Vec<SkillRef>,
    pub prices: BTreeMap<String, Price>,
    /// Every tool the host has; the role's `tools` list picks which are offered.
    pub tools: Vec<Arc<dyn Tool>>,
    /// Tools the host adds in a main session (delegation). The role's `tools` list picks which of
    /// them are offered too: it is the only authority on what a session may call.
    pub host_tools: Vec<Arc<dyn Tool>>,
    /// The tools of the session's MCP servers (`mcp__SERVER__TOOL`): offered as they are, the
    /// role's `mcp` having chosen the servers. Environment tools: a routed Coordinator runs them
    /// only inside an `act_bounded` scope.
    pub mcp_tools: Vec<Arc<dyn Tool>>,
    /// Sections appended to the system prompt (the main-side delegation policy).
    pub extra_instructions: Vec<String>,
    /// How often running tool calls are reported again (`item.updated`) while they run.
    pub heartbeat: Duration,
    /// Where the session goes, in order, when its route fails in a way another route may not
    /// ([`baton_model::ModelError::fails_over`]): the other usable routes of its model class.
    /// Empty for a route given explicitly.
    pub fallbacks: Vec<Fallback>,
    /// A routed session: the Coordinator's and the Executor's routes and the journal. `None` for
    /// an ordinary session, which runs on `route`.
    pub routing: Option<crate::routing::RoutingSpec>,
    /// When the loop asks its front end (the inbox's [`Approver`]) before a tool call runs.
    pub approval: baton_protocol::ApprovalPolicy,
    /// Whether prompts that change files leave checkpoints for `/undo` (`queue/checkpoint.rs`):
    /// on, but for a delegated child, which nobody undoes (its parent reads its change).
    pub checkpoints: bool,
}

impl AgentSpec {
    /// A session `session_id` of `role` on `seat` (its route, provider, output limit and context
    /// window), working in `root` (also its folder), with everything else at its default: the
    /// built-in tools (the role's list picks), the default retries, turn limit, `bash` timeout
    /// and heartbeat, the sandbox policy's default, no temp dir, context files, skills, prices,
    /// host or MCP tools, fallbacks, compaction route or routing, and approvals never asked.
    /// A session of `baton agent` gets the rest from its resolved config
    /// (`baton_app::settings::SessionConfig::agent_spec`); the test harness keeps the defaults.
    pub fn new(
        session_id: impl Into<String>,
        role: RoleSpec,
        seat: Fallback,
        root: PathBuf,
    ) -> Self {
        AgentSpec {
            session_id: session_id.into(),
            role,
            route: seat.route,
            provider: seat.provider,
            retry: RetryPolicy::default(),
            max_turns: DEFAULT_MAX_TURNS,
            max_output_tokens: seat.max_output_tokens,
            context_window: seat.context_window,
            compaction: None,
            cwd: root.clone(),
            root,
            bash_timeout: crate::tools::DEFAULT_BASH_TIMEOUT,
            env_filter: baton_tool::EnvFilter::default(),
            sandbox: baton_tool::SandboxPolicy::default(),
            tmp_dir: None,
            context_files: Vec::new(),
            skills: Vec::new(),
            prices: BTreeMap::new(),
            tools: crate::tools::builtin_tools(),
            host_tools: Vec::new(),
            mcp_tools: Vec::new(),
            extra_instructions: Vec::new(),
            heartbeat: DEFAULT_HEARTBEAT,
            fallbacks: Vec::new(),
            routing: None,
            approval: baton_protocol::ApprovalPolicy::Never,
            checkpoints: true,
        }
    }

    /// What the session's tools run with: its root and folder, the `bash` timeout, the sandbox,
    /// the key filter, the temp dir and (readable) skill folders; cancelled with `cancel`. The
    /// terminal UI's `!` commands run with it too.
    pub fn tool_context(
        &self,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> crate::tools::ToolContext {
        crate::tools::ToolContext {
            root: self.root.clone(),
            cwd: self.cwd.clone(),
            bash_timeout: self.bash_timeout,
            cancel: cancel.clone(),
            env_filter: self.env_filter.clone(),
            sandbox: self.sandbox.clone(),
            tmp_dir: self.tmp_dir.clone(),
            read_roots: self.skills.iter().map(|s| s.dir.clone()).collect(),
        }
    }
}

pub use crate::turn::Fallback;

/// A skill offered to a session: its name, when it applies, and its folder (holding `SKILL.md`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillRef {
    pub name: String,
    pub description: String,
    pub dir: PathBuf,
}

/// Default interval of `item.updated` heartbeats for running tool calls.
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(30);

/// What a run ended with.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    pub outcome: Outcome,
    /// Why the run ended without a plain answer; `None` exactly when `outcome` is `Completed`.
    pub reason: Option<EndReason>,
    pub final_message: String,
    pub turns: u32,
    pub usage: Usage,
    pub cost_usd: Option<f64>,
    pub error: Option<ErrorInfo>,
    /// Every route the session ran on, in order, with what each did: one, unless it failed over.
    pub routes: Vec<RouteUsage>,
}

/// Builds the system prompt: role instructions, the environment, and project context files.
/// The system prompt of a seat offered the tools `offered`. The host's sections
/// (`extra_instructions`, which describe the delegation tools) are added only with
/// `host_sections`: a seat without those tools is not told about them.
pub fn system_prompt(spec: &AgentSpec, offered: &[String], host_sections: bool) -> String {
    let mut s = String::new();
    s.push_str(spec.role.body.trim());
    s.push_str("\n\n# Environment\n");
    s.push_str(&format!(
        "- Working directory: {}\n- Workspace root (files outside it cannot be touched): {}\n",
        spec.cwd.display(),
        spec.root.display()
    ));
    if offered.is_empty() {
        s.push_str("- You have no tools in this session: answer from what you are given.\n");
    } else {
        s.push_str(&format!("- Tools available: {}\n", offered.join(", ")));
    }
    s.push_str(&format!(
        "- You have at most {} model turns. If you run out, you will be asked for a handoff report.\n",
        spec.max_turns
    ));
    for section in spec.extra_instructions.iter().filter(|_| host_sections) {
        s.push('\n');
        s.push_str(section.trim());
        s.push('\n');
    }
    if !spec.skills.is_empty() && offered.iter().any(|t| t == "read") {
        s.push_str(
            "\n# Skills\n\nA skill holds instructions for one kind of work. When a task matches a skill's description, \
             read its SKILL.md with `read` before you start and follow it; files it mentions are in its folder.\n\n",
        );
        for k in &spec.skills {
            s.push_str(&format!(
                "- {}: {} ({})\n",
                k.name,
                k.description,
                k.dir.join("SKILL.md").display()
            ));
        }
    }
    // Resolved once for every file: each would otherwise walk the path's links again.
    let root = spec.root.canonicalize().ok();
    for name in &spec.context_files {
        let Some(text) = root.as_deref().and_then(|r| read_context_file(r, name)) else {
            continue;
        };
        {
            let text = truncate(&text, CONTEXT_FILE_CAP);
            s.push_str(&format!(
                "\n# Project context from {name}\n\n{}\n",
                text.trim()
            ));
        }
    }
    s
}

/// A context file's text: a regular file under the workspace root (`root`, resolved; no
/// absolute path, no `..`, no link leading out), at most a little over [`CONTEXT_FILE_CAP`] bytes
/// read. `None` when it is missing or not such a file.
fn read_context_file(root: &std::path::Path, name: &str) -> Option<String> {
    use std::io::Read as _;
    if !context_file_name_ok(name) {
        return None;
    }
    let file = crate::tools::fsutil::open_read(root, &root.join(name)).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(CONTEXT_FILE_CAP as u64 + 4)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// Whether a `context_files` entry names a path under the project root: relative, without `..`.
pub fn context_file_name_ok(name: &str) -> bool {
    let p = std::path::Path::new(name);
    !name.is_empty()
        && p.is_relative()
        && p.components().all(|c| {
            matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        })
}

/// At most `cap` bytes of `text`, from its start, with the one omission marker.
fn truncate(text: &str, cap: usize) -> String {
    baton_text::truncate(text, cap, baton_text::Keep::Head).into_owned()
}

fn handoff_request(max_turns: u32) -> String {
    format!(
        "You have reached the turn limit ({max_turns} turns). Do not call any tools. Write a handoff report \
         for whoever continues this work, with exactly these sections as headings: {}. Status is one of \
         done, partial or blocked; Evidence lists what you ran or read that supports the outcome.",
        HANDOFF_SECTIONS.join(", ")
    )
}
