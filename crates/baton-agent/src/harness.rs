//! An agent session in this process, for tests: the real loop, tools and routing rules against a
//! model server (baton-testkit's mock on 127.0.0.1), with the session's typed events collected
//! or awaited one by one. What `baton agent` adds around it (config, transcripts on disk,
//! printing) is left out; the e2e tests prove that part through the binary.
//!
//! ```ignore
//! let ran = Harness::openai(&server.url(), "mock-model", dir.path()).run("hi").await;
//! assert_eq!(ran.summary.outcome, Outcome::Completed);
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use baton_model::catalog::Profile;
use baton_model::openai_chat::OpenAiChat;
use baton_model::retry::RetryPolicy;
use baton_model::Connection;
use baton_protocol::config::ProviderKind;
use baton_protocol::role::{RoleFrontmatter, RoleSource, RoleSpec};
use baton_protocol::{AgentEvent, Route};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::agent::{AgentSpec, RunSummary, Session, SessionEnd};
use crate::routing::RoutingSpec;
use crate::turn::Fallback;

/// The tools an ordinary harness session offers: every built-in one.
const TOOLS: [&str; 7] = ["read", "write", "edit", "bash", "grep", "find", "ls"];

/// A session to run in-process.
pub struct Harness {
    spec: AgentSpec,
    base_url: String,
    approver: Option<Arc<dyn crate::approval::Approver>>,
}

/// A finished session: how it ended and every event it emitted, in order.
pub struct Ran {
    pub summary: RunSummary,
    pub events: Vec<AgentEvent>,
}

/// A running session whose events a test awaits.
pub struct Live {
    events: mpsc::UnboundedReceiver<AgentEvent>,
    done: SessionEnd,
    /// Cancels the session (as SIGINT does for `baton agent`).
    pub cancel: CancellationToken,
    /// Stops the streaming model turn at once (the terminal UI's Esc).
    pub interrupter: crate::agent::Interrupter,
}

impl Harness {
    /// A session on `mock/<model>` of an OpenAI Chat Completions server at `base_url` (the
    /// server's root; `/v1` is added), working in `root` with the built-in tools, no sandbox,
    /// retries after 1 ms.
    pub fn openai(base_url: &str, model: &str, root: &Path) -> Harness {
        let seat = Fallback {
            route: Route {
                provider: "mock".into(),
                model: model.into(),
                thinking: None,
            },
            provider: provider(base_url, model),
            max_output_tokens: None,
            context_window: None,
        };
        let mut spec = AgentSpec::new("harness", role(), seat, root.to_path_buf());
        spec.retry = RetryPolicy {
            max_attempts: 3,
            initial_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(20),
        };
        spec.max_turns = 20;
        Harness {
            spec,
            base_url: base_url.to_string(),
            approver: None,
        }
    }

    /// Makes it a routed session: the Coordinator on `mock/<coordinator>`, the Executor on
    /// `mock/<executor>` of the same server, the journal at `journal`, starting automatic.
    pub fn routed(mut self, coordinator: &str, executor: &str, journal: PathBuf) -> Harness {
        let seat = |model: &str| {
            vec![Fallback {
                route: Route {
                    provider: "mock".into(),
                    model: model.into(),
                    thinking: None,
                },
                provider: provider(&self.base_url, model),
                max_output_tokens: None,
                context_window: None,
            }]
        };
        self.spec.routing = Some(RoutingSpec {
            coordinator: seat(coordinator),
            executor: seat(executor),
            journal,
            projection: true,
            start: Some(crate::routing::state::Control::Automatic),
        });
        self
    }

    /// Asks `approver` before tool calls, as `policy` says.
    pub fn approvals(
        mut self,
        policy: baton_protocol::ApprovalPolicy,
        approver: Option<Arc<dyn crate::approval::Approver>>,
    ) -> Harness {
        self.spec.approval = policy;
        self.approver = approver;
        self
    }

    /// The session's spec, for what the constructors do not set.
    pub fn spec_mut(&mut self) -> &mut AgentSpec {
        &mut self.spec
    }

    /// Runs `task` to its end.
    pub async fn run(self, task: &str) -> Ran {
        let mut live = self.start(task);
        let mut events = Vec::new();
        while let Some(e) = live.events.recv().await {
            events.push(e);
        }
        let summary = live.done.await;
        Ran { summary, events }
    }

    /// Starts `task` on a task of its own, with the session's inbox open: the returned sender
    /// submits more (user input while it works, `/interrupt`, …); the session ends once the
    /// sender is dropped and nothing is left to do.
    pub fn start_open(self, task: &str) -> (Live, mpsc::UnboundedSender<crate::agent::Submission>) {
        let mut session = Session::new(Arc::new(self.spec), Vec::new(), false, None);
        if let Some(a) = self.approver {
            session = session.approver(a);
        }
        let handle = session.spawn();
        let _ = handle
            .submissions
            .send(crate::agent::Submission::Input(task.to_string()));
        (
            Live {
                events: handle.events,
                done: handle.end,
                cancel: handle.cancel,
                interrupter: handle.interrupter,
            },
            handle.submissions,
        )
    }

    /// Starts `task` on a task of its own; the events arrive as they are emitted. The inbox
    /// holds only the task (as `baton agent` does).
    pub fn start(self, task: &str) -> Live {
        self.start_open(task).0
    }
}

impl Live {
    /// The next event `pick` accepts (earlier ones are dropped), or `None` when the session
    /// ended without one.
    pub async fn next<T>(&mut self, mut pick: impl FnMut(&AgentEvent) -> Option<T>) -> Option<T> {
        while let Some(e) = self.events.recv().await {
            if let Some(t) = pick(&e) {
                return Some(t);
            }
        }
        None
    }

    /// Waits for the end of the session (the remaining events are dropped).
    pub async fn finish(mut self) -> RunSummary {
        while self.events.recv().await.is_some() {}
        self.done.await
    }
}

fn provider(base_url: &str, model: &str) -> Arc<dyn baton_model::Provider> {
    let connection = Connection {
        name: "mock".into(),
        base_url: format!("{}/v1", base_url.trim_end_matches('/')),
        api_key: None,
        headers: Vec::new(),
        stream_idle_timeout: Duration::from_secs(30),
    };
    Arc::new(OpenAiChat::new(
        connection,
        Profile::builtin(ProviderKind::OpenAi, model),
    ))
}

fn role() -> RoleSpec {
    RoleSpec {
        meta: RoleFrontmatter {
            name: "harness".into(),
            description: "an in-process test session".into(),
            tools: TOOLS.iter().map(|t| t.to_string()).collect(),
            skills: Vec::new(),
            mcp: Vec::new(),
            extensions: Vec::new(),
            isolation: None,
            model_class: None,
            backend: None,
            command: None,
            sandbox: None,
        },
        body: "You are a test agent.".into(),
        source: RoleSource::Builtin,
    }
}
