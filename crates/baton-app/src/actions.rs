//! The actions the terminal UI's side panel and the web dashboard offer, carried out by this
//! same `baton` program with the CLI's own command — so each writes exactly the durable record
//! the CLI writes. One runs detached, in a session of its own (it goes on when the front end
//! quits), its output in `.baton/state/actions/NAME.log`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use baton_state::StateDir;

/// One action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Answer a workflow's checkpoint with the user's exact words (`baton resume ID --answer`).
    Answer { workflow: String, text: String },
    /// `baton flow continue --guidance`.
    FlowContinue { flow: String, guidance: String },
    /// `baton flow abandon`.
    FlowAbandon { flow: String },
    /// `baton flow clean ID --yes`.
    FlowClean { flow: String },
    /// `baton task cancel ID`.
    CancelTask { task: String },
    /// `baton run "request"`.
    Run { request: String },
    /// `baton worker send NAME TEXT --no-wait`: a prompt for a managed worker, answered in its
    /// log (the front end follows it through the feed).
    WorkerSend { worker: String, text: String },
}

impl Action {
    /// The command's arguments. Text of the user's (an answer, guidance, a request, a prompt)
    /// is never read as an option: it is an option's value written `--name=TEXT`, or a
    /// positional after `--`; ids are checked ([`Action::check`]: none starts with `-`).
    pub fn args(&self) -> Vec<String> {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        match self {
            Action::Answer { workflow, text } => {
                s(&["resume", &format!("--answer={text}"), "--", workflow])
            }
            Action::FlowContinue { flow, guidance } => s(&[
                "flow",
                "continue",
                &format!("--guidance={guidance}"),
                "--",
                flow,
            ]),
            Action::FlowAbandon { flow } => s(&[
                "flow",
                "abandon",
                "--reason=abandoned from a baton front end",
                "--",
                flow,
            ]),
            Action::FlowClean { flow } => s(&["flow", "clean", "--yes", "--", flow]),
            Action::CancelTask { task } => s(&["task", "cancel", "--", task]),
            Action::Run { request } => s(&["run", "--", request]),
            Action::WorkerSend { worker, text } => {
                s(&["worker", "send", "--no-wait", "--", worker, text])
            }
        }
    }

    /// The record it acts on must be one of the project's (an id the state folder takes).
    pub fn check(&self) -> Result<(), String> {
        let id = match self {
            Action::Answer { workflow, .. } => workflow,
            Action::FlowContinue { flow, .. }
            | Action::FlowAbandon { flow }
            | Action::FlowClean { flow } => flow,
            Action::CancelTask { task } => task,
            Action::WorkerSend { worker, text } => {
                if text.trim().is_empty() {
                    return Err("the prompt is empty: say what the worker should do".into());
                }
                return baton_state::check_id(baton_state::IdKind::Worktree, worker)
                    .map_err(|e| e.to_string());
            }
            Action::Run { request } => {
                return if request.trim().is_empty() {
                    Err("the request is empty: say what the workflow should do".into())
                } else {
                    Ok(())
                };
            }
        };
        baton_state::check_id(baton_state::IdKind::Record, id).map_err(|e| e.to_string())
    }

    /// The name of its log file.
    fn log_name(&self) -> String {
        match self {
            Action::Answer { workflow, .. } => format!("resume-{workflow}"),
            Action::FlowContinue { flow, .. } => format!("flow-continue-{flow}"),
            Action::FlowAbandon { flow } => format!("flow-abandon-{flow}"),
            Action::FlowClean { flow } => format!("flow-clean-{flow}"),
            Action::CancelTask { task } => format!("task-cancel-{task}"),
            Action::Run { .. } => format!("run-{}", uuid::Uuid::now_v7().simple()),
            Action::WorkerSend { worker, .. } => {
                format!("worker-send-{worker}-{}", uuid::Uuid::now_v7().simple())
            }
        }
    }

    /// What it does, for the note a front end shows.
    pub fn describe(&self) -> String {
        match self {
            Action::Answer { workflow, .. } => format!(
                "answering workflow {workflow}: `baton resume {workflow} --answer …` runs it on"
            ),
            Action::FlowContinue { flow, .. } => format!("continuing flow {flow}"),
            Action::FlowAbandon { flow } => format!("abandoning flow {flow}"),
            Action::FlowClean { flow } => format!("cleaning flow {flow}"),
            Action::CancelTask { task } => format!("cancelling task {task}"),
            Action::Run { request } => format!("started the workflow `baton run {request:?}`"),
            Action::WorkerSend { worker, .. } => {
                format!("sent to worker {worker}; its answer shows in the side panel")
            }
        }
    }
}

/// Starts `action` with `exe` (this `baton`) in the project at `root`, detached; the path of its
/// output.
pub fn start(
    exe: &Path,
    root: &Path,
    state: &StateDir,
    action: &Action,
) -> Result<PathBuf, String> {
    action.check()?;
    let dir = state.root().join("actions");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let log = dir.join(format!("{}.log", action.log_name()));
    let out = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    let err = out
        .try_clone()
        .map_err(|e| format!("{}: {e}", log.display()))?;
    let args = action.args();
    let mut cmd = Command::new(exe);
    cmd.args(&args)
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    use std::os::unix::process::CommandExt as _;
    // SAFETY: setsid between fork and exec is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    cmd.spawn()
        .map_err(|e| format!("cannot start baton {}: {e}", args.join(" ")))?;
    Ok(log)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn each_action_is_the_cli_command_and_a_bad_id_is_refused() {
        let a = Action::Answer {
            workflow: "wf-1".into(),
            text: "critical only".into(),
        };
        assert_eq!(a.args(), ["resume", "--answer=critical only", "--", "wf-1"]);
        assert_eq!(
            Action::FlowClean { flow: "f1".into() }.args(),
            ["flow", "clean", "--yes", "--", "f1"]
        );
        // The Flow of the URL, not the project's active one.
        assert_eq!(
            Action::FlowAbandon { flow: "f2".into() }
                .args()
                .last()
                .unwrap(),
            "f2"
        );
        assert!(Action::FlowClean {
            flow: "--force".into()
        }
        .check()
        .is_err());
        assert!(Action::CancelTask {
            task: "../x".into()
        }
        .check()
        .is_err());
        assert!(Action::Run {
            request: " ".into()
        }
        .check()
        .is_err());
    }
}
