//! The terminal UI as a session's front end: its events drawn, its input, interrupts and
//! approvals coming from the keyboard (`baton tui`).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;
use baton_agent::agent::{self, Approver, RunSummary, Session, SessionHandle, Submission};
use baton_protocol::{ApprovalAnswer, ApprovalRequest};
use baton_tui::term::Mode;
use baton_tui::theme::{Theme, ThemeName};
use baton_tui::{Msg, Request};
use tokio::sync::mpsc::UnboundedSender;

use crate::signals::watch_signals;

/// How the session's front end is the UI.
#[derive(Debug)]
pub struct TuiFront {
    pub mode: Mode,
    pub theme: ThemeName,
    /// The UI's messages: made before the session is set up, so that its delegations report
    /// into the UI's side panel.
    pub tx: std::sync::mpsc::Sender<Msg>,
    pub rx: std::sync::mpsc::Receiver<Msg>,
    /// The session `/resume` picked to go on with once this one ends (`baton tui` then resumes
    /// it in the same terminal).
    pub next: Arc<std::sync::Mutex<Option<String>>>,
}

impl TuiFront {
    pub fn new(mode: Mode, theme: ThemeName) -> TuiFront {
        let (tx, rx) = std::sync::mpsc::channel();
        TuiFront {
            mode,
            theme,
            tx,
            rx,
            next: Arc::default(),
        }
    }
}

/// The keymap of `~/.config/baton/keys.toml` (or `$XDG_CONFIG_HOME/baton/keys.toml`).
pub fn keymap() -> Result<baton_tui::keymap::Keymap> {
    let dir = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")));
    match dir {
        Some(d) => baton_tui::keymap::Keymap::load(&d.join("baton").join("keys.toml")),
        None => Ok(baton_tui::keymap::Keymap::default()),
    }
}

/// The UI's answer to an approval, through its message channel.
struct TuiApprover {
    tx: std::sync::mpsc::Sender<Msg>,
}

#[async_trait::async_trait]
impl Approver for TuiApprover {
    async fn ask(&self, request: ApprovalRequest) -> ApprovalAnswer {
        let (otx, orx) = tokio::sync::oneshot::channel();
        let reply: baton_tui::app::Reply = Box::new(move |a| {
            let _ = otx.send(a);
        });
        let closed = ApprovalAnswer::No {
            feedback: "the terminal UI closed before the user answered".into(),
        };
        if self.tx.send(Msg::Approval(request, reply)).is_err() {
            return closed;
        }
        orx.await.unwrap_or(closed)
    }
}

/// `/model NAME`: the routes it names, read from the project's config as it is now (an edit
/// applies without a restart), with the session's thinking level where the route sets none.
fn switch(
    cwd: &std::path::Path,
    thinking: Option<baton_protocol::ThinkingLevel>,
    name: &str,
) -> Result<Submission, String> {
    let ctx = baton_app::project::project_context(Some(cwd.to_path_buf()))
        .map_err(|e| format!("/model: {e:#}"))?;
    baton_app::settings::switch_routes(&ctx.config.config, name, thinking)
        .map(|chain| Submission::Routes(agent::RouteSwitch(chain)))
        .map_err(|e| format!("{e:#}"))
}

/// A request of the UI as the session's submission.
fn submit(
    tx: &UnboundedSender<Submission>,
    interrupter: &agent::Interrupter,
    spec: &baton_agent::agent::AgentSpec,
    r: Request,
) -> Result<(), String> {
    let sub = match r {
        Request::Answer { .. }
        | Request::FlowContinue { .. }
        | Request::FlowAbandon { .. }
        | Request::FlowClean { .. }
        | Request::CancelTask { .. }
        | Request::Run { .. }
        | Request::WorkerSend { .. }
        | Request::OpenFile { .. }
        | Request::OpenSession { .. }
        | Request::Shell { .. }
        | Request::OpenLog { .. }
        | Request::Diff
        | Request::Sessions
        | Request::Switch(_)
        | Request::Approval(_) => return Err("not a request of the session".into()),
        Request::Input(t) => Submission::Input(t),
        Request::Interrupt => {
            interrupter.interrupt();
            Submission::Interrupt
        }
        Request::Compact(focus) => Submission::Compact(focus),
        Request::Model(name) => switch(&spec.cwd, spec.route.thinking, &name)?,
        Request::Clear => Submission::Clear,
        Request::Undo(n) => Submission::Undo(n),
        Request::Profile(word) => baton_agent::routing::view::parse_profile(&word)
            .map(Submission::Control)
            .map_err(|e| format!("/profile: {e}"))?,
        Request::Resume => Submission::Resume,
    };
    tx.send(sub).map_err(|_| {
        "the session has ended: quit (ctrl+d) and resume it with `baton tui --resume last`"
            .to_string()
    })
}

/// `/diff`: what changed in the project since the session started (`start`, a snapshot of the
/// tree then, untracked files included), as a diff in the panel's viewer, read on a thread.
fn diff_since(cwd: &std::path::Path, start: Option<String>, tx: std::sync::mpsc::Sender<Msg>) {
    let cwd = cwd.to_path_buf();
    std::thread::spawn(move || {
        let say = |text: String| {
            let _ = tx.send(Msg::Note(text));
        };
        let Some(start) = start else {
            return say("/diff: the session's folder is not in a git repository, so there is nothing to compare".into());
        };
        let Some(now) = baton_git::snapshot::commit(&cwd) else {
            return say("/diff: the project's tree could not be read now (git failed)".into());
        };
        let git = baton_git::Git::new(&cwd);
        let out = |args: &[&str]| match git.run_output(args) {
            Ok(o) if o.status.success() => Ok(String::from_utf8_lossy(&o.stdout).into_owned()),
            Ok(o) => Err(String::from_utf8_lossy(&o.stderr).trim().to_string()),
            Err(e) => Err(e.to_string()),
        };
        let (stat, patch) = match (
            out(&[
                "diff",
                "--no-ext-diff",
                "--no-textconv",
                "--stat",
                "--no-color",
                &start,
                &now,
            ]),
            out(&[
                "diff",
                "--no-ext-diff",
                "--no-textconv",
                "--no-color",
                &start,
                &now,
            ]),
        ) {
            (Ok(stat), Ok(patch)) => (stat, patch),
            (Err(e), _) | (_, Err(e)) => {
                return say(format!("/diff: git could not compare the trees: {e}"))
            }
        };
        if patch.trim().is_empty() {
            return say("/diff: nothing changed in the project since the session started".into());
        }
        let lines = stat
            .lines()
            .chain(std::iter::once(""))
            .chain(patch.lines())
            .map(|l| baton_text::sanitize_line(l).into_owned())
            .collect();
        let _ = tx.send(Msg::Text {
            title: "what changed since the session started".into(),
            lines,
        });
    });
}

/// What the UI starts from besides the session: what the header shows and the project whose
/// work the panel follows.
pub struct Start {
    /// The task the session was started with (`baton tui "…"`).
    pub task: Option<String>,
    pub branch: Option<String>,
    /// The project's state folder and root, whose work the panel follows.
    pub project: (baton_state::StateDir, PathBuf),
}

/// Serves the session with the UI as its front end, until the user quits (which cancels what
/// still runs) or the session ends and the user quits after reading it.
pub async fn serve(front: TuiFront, session: Session, start: Start) -> Result<RunSummary> {
    let Start {
        task,
        branch,
        project,
    } = start;
    let TuiFront {
        mode,
        theme,
        tx: mtx,
        rx: mrx,
        next,
    } = front;
    let (state, root) = project;
    let spec = session.spec().clone();
    crate::tui_work::follow(state.clone(), root.clone(), Vec::new(), mtx.clone());
    crate::tui_work::list_files(spec.cwd.clone(), mtx.clone());
    let seats = spec.routing.as_ref().and_then(|r| {
        Some((
            r.coordinator.first()?.route.to_string(),
            r.executor.first()?.route.to_string(),
        ))
    });
    let opts = baton_tui::Options {
        mode,
        theme: Theme::of(theme),
        keymap: keymap()?,
        branch,
        seats,
        context_window: spec.context_window,
        approval_policy: spec.approval.to_string(),
        first: task,
        history: session
            .history()
            .iter()
            .filter(|(seat, _)| seat.is_none() || seat.as_deref() == Some("coordinator"))
            .map(|(_, m)| m.clone())
            .collect(),
        checkpoints: session
            .checkpoints()
            .into_iter()
            .map(|c| baton_tui::view::CheckpointRow {
                checkpoint: c.checkpoint,
                input: c.input,
                files: c.files,
            })
            .collect(),
        attach: None,
        routes: baton_app::project::project_context(Some(spec.cwd.clone()))
            .map(|ctx| baton_app::settings::route_choices(&ctx.config.config))
            .unwrap_or_default(),
    };
    let SessionHandle {
        submissions: tx,
        mut events,
        cancel,
        interrupter,
        approval,
        end,
        ..
    } = session
        .approver(Arc::new(TuiApprover { tx: mtx.clone() }))
        .spawn();
    let _signals = watch_signals(cancel.clone());
    let ui_tx = mtx.clone();
    let quit = cancel.clone();
    let runtime = tokio::runtime::Handle::current();
    let tool_ctx = Arc::new(spec.tool_context(&cancel));
    // The project as the session found it, for `/diff` (`None` outside git).
    let start_tree = baton_git::snapshot::commit(&spec.cwd);
    let diff_cwd = spec.cwd.clone();
    let ui = std::thread::spawn(move || {
        let notes = ui_tx.clone();
        let log_state = state.clone();
        let sessions_state = state.clone();
        let mut send = move |r: Request| match (&r, crate::tui_work::act(&root, &state, &notes, &r))
        {
            (_, Some(done)) => done,
            (Request::Approval(word), None) => word
                .parse::<baton_protocol::ApprovalPolicy>()
                .map(|p| approval.set(p))
                .map_err(|e| format!("approval: {e}")),
            (Request::Diff, None) => {
                diff_since(&diff_cwd, start_tree.clone(), notes.clone());
                Ok(())
            }
            (Request::Shell { command }, None) => {
                shell(&runtime, &tool_ctx, command.clone(), notes.clone());
                Ok(())
            }
            (Request::Sessions, None) => {
                let list = session_choices(&sessions_state);
                let _ = notes.send(Msg::Sessions(list));
                Ok(())
            }
            (Request::Switch(id), None) => {
                let id = baton_agent::session::resolve_id(&sessions_state, id)
                    .map_err(|e| format!("/resume: {e}"))?;
                if let Ok(mut n) = next.lock() {
                    *n = Some(id);
                }
                Ok(())
            }
            (_, None) => submit(&tx, &interrupter, &spec, r),
        };
        let end = {
            let _stderr = crate::tui_work::StderrToLog::new(&log_state);
            baton_tui::run(opts, ui_tx, mrx, &mut send)
        };
        // The user quit while work runs: it stops (the transcript keeps what was done). Quit
        // while idle, the inbox closes and the session ends as its last input did.
        if end.as_ref().map_or(true, |e| e.working) {
            quit.cancel();
        }
        end
    });
    while let Some(ev) = events.recv().await {
        let _ = mtx.send(Msg::Agent(ev));
    }
    let summary = end.await;
    let _ = mtx.send(Msg::Closed);
    drop(mtx);
    let end = tokio::task::spawn_blocking(move || ui.join())
        .await
        .map_err(|e| anyhow::anyhow!("the terminal UI failed: {e}"))?
        .map_err(|_| anyhow::anyhow!("the terminal UI panicked"))??;
    let _ = end;
    Ok(summary)
}

/// Runs a `!` command as the session's `bash` tool would (sandboxed, under the process guard,
/// bounded), and hands its output to the UI.
fn shell(
    runtime: &tokio::runtime::Handle,
    ctx: &Arc<baton_agent::tools::ToolContext>,
    command: String,
    tx: std::sync::mpsc::Sender<Msg>,
) {
    use baton_agent::tools::Tool as _;
    let ctx = ctx.clone();
    runtime.spawn(async move {
        let out = baton_agent::tools::BashTool
            .run(serde_json::json!({ "command": command }), &ctx)
            .await;
        let _ = tx.send(Msg::Shell {
            command,
            output: out.output,
            exit_code: out.exit_code,
            ok: !out.is_error,
        });
    });
}

/// The saved sessions of the project whose state is `state`, newest first, as the pickers list
/// them (`baton tui --resume`, `/resume`).
pub fn session_choices(state: &baton_state::StateDir) -> Vec<baton_tui::picker::Choice> {
    let (mut infos, _) = baton_agent::session::list(state);
    infos.reverse();
    infos
        .iter()
        .map(|i| baton_tui::picker::Choice {
            id: i.header.session_id.clone(),
            short: baton_agent::session::short_id(&i.header.session_id).to_string(),
            when: crate::term::short_time(&i.header.created),
            outcome: i
                .ended
                .map_or("unfinished", |(o, _)| o.as_str())
                .to_string(),
            cost: i
                .cost_usd
                .map_or_else(|| "-".to_string(), |c| format!("${c:.4}")),
            route: i.header.model.clone(),
            task: baton_agent::routing::view::user_words(&i.task)
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .to_string(),
        })
        .collect()
}
