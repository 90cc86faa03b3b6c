//! What the UI asks of its front end: the session's submissions, and the project actions of
//! the side panel.

/// What the UI asks of the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Input(String),
    /// Esc: stop the running turn now.
    Interrupt,
    Compact(Option<String>),
    /// `/model NAME`: switch the session's route (a class or `provider/model[:thinking]`).
    Model(String),
    /// `/clear`: a new conversation.
    Clear,
    /// `/diff`: what changed in the project since the session started.
    Diff,
    /// `/undo N` (or a pick in the undo list, Esc Esc): the files checkpoint N and every later
    /// one changed, back as they were before it.
    Undo(u32),
    /// Shift+Tab: the session's approval policy from its next tool call (`never`, `on-write`,
    /// `always`).
    Approval(String),
    /// `/profile WORD`.
    Profile(String),
    /// A routed session's `/resume`: run the interrupted assignment again.
    Resume,
    /// `/resume` in a session of one model: the saved sessions, answered with
    /// [`crate::app::Msg::Sessions`].
    Sessions,
    /// `/resume ID` (or a pick in the list): leave this session and go on with that one.
    Switch(String),
    /// Answer a workflow's checkpoint with the user's exact words (as `baton resume --answer`).
    Answer {
        workflow: String,
        text: String,
    },
    /// `baton flow continue --guidance`.
    FlowContinue {
        flow: String,
        guidance: String,
    },
    FlowAbandon {
        flow: String,
    },
    FlowClean {
        flow: String,
    },
    /// `baton task cancel`.
    CancelTask {
        task: String,
    },
    /// A background task's log, to read.
    OpenLog {
        task: String,
    },
    /// `/run "request"`: start a workflow (`baton run`), followed in the side panel.
    Run {
        request: String,
    },
    /// `/worker NAME prompt`: a prompt for a managed worker (`baton worker send`), its answer
    /// followed in the side panel.
    WorkerSend {
        worker: String,
        text: String,
    },
    /// A delegated child's transcript, to read (`sessions/<id>.jsonl` of the project).
    OpenSession {
        id: String,
    },
    /// A file of the project's own records to read (a Flow unit's review packet).
    OpenFile {
        title: String,
        path: std::path::PathBuf,
    },
    /// `!command`: run a shell command in the session's sandbox, as its `bash` tool does.
    Shell {
        command: String,
    },
}
