//! How `baton` ends: every exit code of every command, in one place (README.md, "Exit codes").
//!
//! A command returns the [`Exit`] its work came to. An error that reaches `main` is
//! [`Exit::Refused`] (bad input or config: nothing was run) unless it was marked with
//! [`AfterWorkBegan::after_work_began`]: then the work had begun (a model was called, a
//! child ran, a record was written) and it is [`Exit::Failed`].

use std::fmt;

/// The exit code of a `baton` command.
/// Ordered by code (the variants are declared in that order): the larger of two is the worse
/// end, as when one command reports on several Flows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Exit {
    /// The work ran and succeeded.
    Ok = 0,
    /// The work ran and failed (the model could not be used after retries, a child failed, a
    /// Flow failed, an error after the work began).
    Failed = 1,
    /// Bad input or config: nothing was run.
    Refused = 2,
    /// The session stopped at a limit: the turn limit (the final message is a handoff report) or
    /// the output token limit (`reason` `max_tokens`).
    Limit = 3,
    /// The work waits for the user: a workflow at a checkpoint (`baton resume --answer`), a Flow
    /// paused on a blocked unit (`baton flow continue` or `abandon`).
    Waiting = 4,
    /// Stopped by SIGINT or SIGTERM; the record says what happened.
    Interrupted = 130,
}

impl Exit {
    /// The code of an error that reached `main`: [`Exit::Failed`] when it was marked as
    /// happening after the work began, else [`Exit::Refused`].
    pub fn of_error(e: &anyhow::Error) -> Exit {
        if e.chain().any(|c| c.is::<WorkBegan>()) {
            Exit::Failed
        } else {
            Exit::Refused
        }
    }
}

impl From<Exit> for std::process::ExitCode {
    fn from(e: Exit) -> Self {
        std::process::ExitCode::from(e as u8)
    }
}

/// An error that happened after the work began: `main` exits [`Exit::Failed`], not
/// [`Exit::Refused`]. It prints as the error it wraps.
#[derive(Debug)]
struct WorkBegan(anyhow::Error);

impl fmt::Display for WorkBegan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#}", self.0)
    }
}

impl std::error::Error for WorkBegan {}

/// Marks the error of a step that comes after the work began.
pub trait AfterWorkBegan<T> {
    fn after_work_began(self) -> anyhow::Result<T>;
}

impl<T, E: Into<anyhow::Error>> AfterWorkBegan<T> for Result<T, E> {
    fn after_work_began(self) -> anyhow::Result<T> {
        self.map_err(|e| anyhow::Error::new(WorkBegan(e.into())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_is_a_refusal_unless_marked() {
        assert_eq!(Exit::of_error(&anyhow::anyhow!("bad flag")), Exit::Refused);
        let failed: anyhow::Result<()> = Err(anyhow::anyhow!("disk full")).after_work_began();
        let e = failed.unwrap_err();
        assert_eq!(format!("{e:#}"), "disk full");
        assert_eq!(Exit::of_error(&e), Exit::Failed);
        // Context added later keeps the mark.
        let e = e.context("saving");
        assert_eq!(Exit::of_error(&e), Exit::Failed);
    }
}
