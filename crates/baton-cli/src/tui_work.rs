//! The project's work in the terminal UI: the project event feed followed into the UI (its side
//! panel and `--attach`), and the actions the panel asks for, carried out by this same `baton`
//! program as the CLI would (`baton resume --answer`, `baton flow continue|abandon|clean`, `baton
//! task cancel`), so each writes the same durable record the CLI writes.

use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;

use baton_app::actions::Action;
use baton_events::{Cursor, Feed, Filter};
use baton_protocol::SourceKind;
use baton_state::StateDir;
use baton_tui::{Msg, Request};

/// Follows the project's task, Flow and workflow logs (and, attached, `ids` only, a session's
/// too) into the UI, on a thread of its own, from their start.
pub fn follow(state: StateDir, root: PathBuf, ids: Vec<String>, tx: Sender<Msg>) {
    let kinds = if ids.is_empty() {
        vec![
            SourceKind::Task,
            SourceKind::Flow,
            SourceKind::Workflow,
            SourceKind::Worker,
        ]
    } else {
        Vec::new()
    };
    std::thread::spawn(move || {
        // The panel folds the projection and an attached session's transcript, nothing of a
        // workflow's change but what the projection reads.
        let mut feed = Feed::new(state, Filter { kinds, ids }, Cursor::default()).projected();
        let note = tx.clone();
        let mut emit = |e: &baton_events::Event| -> std::io::Result<()> {
            tx.send(Msg::Project(Box::new(e.clone())))
                .map_err(|_| std::io::Error::other("the UI is gone"))
        };
        let mut report = |e: &baton_events::FeedError| {
            let _ = note.send(Msg::Note(format!("event feed: {e}")));
        };
        let _ = baton_events::follow::stream(&mut feed, &root, true, &mut emit, &mut report);
    });
}

/// Carries out a request of the panel; `false` when it is not one (a session's own request).
pub fn act(
    root: &Path,
    state: &StateDir,
    tx: &Sender<Msg>,
    r: &Request,
) -> Option<Result<(), String>> {
    let started = |what: String, log: Result<PathBuf, String>| {
        log.map(|l| {
            let _ = tx.send(Msg::Note(format!("{what} (its output: {})", l.display())));
        })
    };
    let action = match r {
        Request::Answer { workflow, text } => Some(Action::Answer {
            workflow: workflow.clone(),
            text: text.clone(),
        }),
        Request::FlowContinue { flow, guidance } => Some(Action::FlowContinue {
            flow: flow.clone(),
            guidance: guidance.clone(),
        }),
        Request::FlowAbandon { flow } => Some(Action::FlowAbandon { flow: flow.clone() }),
        Request::FlowClean { flow } => Some(Action::FlowClean { flow: flow.clone() }),
        Request::CancelTask { task } => Some(Action::CancelTask { task: task.clone() }),
        Request::Run { request } => Some(Action::Run {
            request: request.clone(),
        }),
        Request::WorkerSend { worker, text } => Some(Action::WorkerSend {
            worker: worker.clone(),
            text: text.clone(),
        }),
        _ => None,
    };
    if let Some(action) = action {
        let exe = match baton_process::own_program() {
            Ok(e) => e,
            Err(e) => return Some(Err(format!("cannot find baton's own program: {e}"))),
        };
        return Some(started(
            action.describe(),
            baton_app::actions::start(&exe, root, state, &action),
        ));
    }
    Some(match r {
        Request::OpenLog { task } => match baton_app::task_log::read(state, task) {
            Ok(lines) => {
                let _ = tx.send(Msg::Text {
                    title: format!("task {task}"),
                    lines,
                });
                Ok(())
            }
            Err(e) => Err(e),
        },
        Request::OpenSession { id } => match baton_app::task_log::transcript(state, id) {
            Ok(lines) => {
                let _ = tx.send(Msg::Text {
                    title: format!("session {id} (read-only)"),
                    lines,
                });
                Ok(())
            }
            Err(e) => Err(e),
        },
        Request::OpenFile { title, path } => {
            // Only the project's own records (a review packet under `.baton/state/`).
            let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
            if !real(path).starts_with(real(state.root())) {
                return Some(Err(format!(
                    "{}: not a file of this project's records",
                    path.display()
                )));
            }
            match baton_text::input::read_input(path) {
                Ok(text) => {
                    let _ = tx.send(Msg::Text {
                        title: title.clone(),
                        lines: text.lines().map(str::to_string).collect(),
                    });
                    Ok(())
                }
                Err(e) => Err(format!("{}: {e}", path.display())),
            }
        }
        // The actions were carried out above.
        Request::Answer { .. }
        | Request::FlowContinue { .. }
        | Request::FlowAbandon { .. }
        | Request::FlowClean { .. }
        | Request::CancelTask { .. }
        | Request::Run { .. }
        | Request::WorkerSend { .. } => return None,
        Request::Input(_)
        | Request::Shell { .. }
        | Request::Interrupt
        | Request::Compact(_)
        | Request::Model(_)
        | Request::Clear
        | Request::Diff
        | Request::Undo(_)
        | Request::Approval(_)
        | Request::Profile(_)
        | Request::Resume
        | Request::Sessions
        | Request::Switch(_) => return None,
    })
}

/// The most files `@` mentions offer.
const MENTION_FILES: usize = 20_000;

/// Lists the project's files (as git would: ignored files left out) for `@` mentions, on a
/// thread, and hands them to the UI.
pub fn list_files(root: PathBuf, tx: Sender<Msg>) {
    std::thread::spawn(move || {
        let mut files = Vec::new();
        for entry in ignore::WalkBuilder::new(&root).build().flatten() {
            if files.len() >= MENTION_FILES {
                break;
            }
            if entry.file_type().is_some_and(|t| t.is_file()) {
                if let Ok(rel) = entry.path().strip_prefix(&root) {
                    files.push(rel.to_string_lossy().into_owned());
                }
            }
        }
        files.sort();
        let _ = tx.send(Msg::Files(files));
    });
}

/// While the UI owns the terminal, what the process writes to stderr (a warning, a log line)
/// would tear its screen: it goes to `.baton/state/tui/stderr.log` instead, and stderr comes
/// back when this is dropped.
pub struct StderrToLog {
    saved: Option<std::os::fd::OwnedFd>,
}

impl StderrToLog {
    pub fn new(state: &StateDir) -> StderrToLog {
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        let dir = state.root().join("tui");
        let file = std::fs::create_dir_all(&dir).and_then(|_| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.join("stderr.log"))
        });
        let Ok(file) = file else {
            return StderrToLog { saved: None };
        };
        // SAFETY: dup and dup2 on descriptors this process owns.
        unsafe {
            let saved = libc::dup(2);
            if saved < 0 {
                return StderrToLog { saved: None };
            }
            if libc::dup2(file.as_raw_fd(), 2) < 0 {
                libc::close(saved);
                return StderrToLog { saved: None };
            }
            StderrToLog {
                saved: Some(OwnedFd::from_raw_fd(saved)),
            }
        }
    }
}

impl Drop for StderrToLog {
    fn drop(&mut self) {
        use std::os::fd::AsRawFd;
        if let Some(saved) = &self.saved {
            // SAFETY: dup2 of a descriptor this value owns back onto stderr.
            unsafe {
                libc::dup2(saved.as_raw_fd(), 2);
            }
        }
    }
}
