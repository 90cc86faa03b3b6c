//! The closed sets of words the projection's documents use: what a row is, where it stands and
//! how far a Flow unit's step went.

baton_protocol::closed_set! {
    /// What a row is.
    #[derive(PartialOrd, Ord)]
    #[cfg_attr(test, derive(ts_rs::TS))]
    pub enum Kind ("row kind") {
        /// A child of this session's `delegate_task`.
        Delegation = "delegation",
        /// A child of a background task (`baton task --background`, `delegate_task` background).
        Task = "task",
        Flow = "flow",
        Workflow = "workflow",
        /// A managed worker (`baton worker`).
        Worker = "worker",
        /// A session's transcript.
        Session = "session",
    }
}

baton_protocol::closed_set! {
    /// Where a thing stands; the panel's groups, in the order they are shown.
    #[derive(PartialOrd, Ord)]
    #[cfg_attr(test, derive(ts_rs::TS))]
    pub enum State ("state") {
        /// Waiting for the user: a checkpoint, a halted or failed Flow.
        NeedsInput = "needs",
        Running = "running",
        Done = "done",
        Failed = "failed",
        /// A background task whose children were stopped (`baton task cancel`), none failed.
        Cancelled = "cancelled",
    }
}

impl State {
    pub fn heading(self) -> &'static str {
        match self {
            State::NeedsInput => "needs you",
            State::Running => "running",
            State::Done => "done",
            State::Failed => "failed",
            State::Cancelled => "cancelled",
        }
    }
}

baton_protocol::closed_set! {
    /// How far one step of a Flow unit (or a workflow's dispatch) went.
    #[derive(Default)]
    #[cfg_attr(test, derive(ts_rs::TS))]
    pub enum Step ("step") {
        #[default]
        Pending = "pending",
        Running = "running",
        Done = "done",
        Failed = "failed",
        Skipped = "skipped",
    }
}

/// The steps of a Flow unit, in order.
pub const STEPS: [&str; 5] = ["implement", "rebase", "validate", "review", "merge"];
