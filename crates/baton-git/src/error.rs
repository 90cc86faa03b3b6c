//! What can go wrong running git, and how git's own words are shown.

use std::path::PathBuf;

/// Longest piece of git's stderr or stdout quoted in an error message.
const MESSAGE_BOUND: usize = 2048;

/// What went wrong running git.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// The `git` program could not be started at all.
    #[error("could not run `git {}`: {source} (is git installed and on PATH?)", sanitize(&args.join(" ")))]
    Spawn {
        args: Vec<String>,
        #[source]
        source: std::io::Error,
    },
    /// git ran and exited unsuccessfully.
    #[error("{}", describe_failure(args, *code, stderr, stdout))]
    Failed {
        args: Vec<String>,
        /// `None` when git was killed by a signal.
        code: Option<i32>,
        stderr: String,
        stdout: String,
    },
    /// The directory is not inside a git work tree.
    #[error("{} is not inside a git repository: {}", dir.display(), bounded_clean(stderr, MESSAGE_BOUND))]
    NotARepo { dir: PathBuf, stderr: String },
    /// git's output was not what this wrapper expected.
    #[error("unexpected output from `git {}`: {what}: {}", sanitize(&args.join(" ")), bounded_clean(output, MESSAGE_BOUND))]
    Parse {
        args: Vec<String>,
        what: String,
        output: String,
    },
    /// An argument was refused before running git (for example a revision starting with `-`,
    /// which git would read as an option).
    #[error("refused {what} `{}`: {reason}", sanitize(value))]
    InvalidArgument {
        what: &'static str,
        value: String,
        reason: &'static str,
    },
    /// The `.git` of a pinned work tree is no longer what it was when pinned (see [`crate::pin`]).
    #[error(
        "refused to run git: {} was replaced since baton pinned this repository (a command moved, \
         removed or rewrote it); nothing was run. Put the repository's `.git` back, then run again",
        dot_git.display()
    )]
    Replaced { dot_git: PathBuf },
    /// A file under the git directory could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl GitError {
    /// git's stderr, when git ran and failed.
    pub fn stderr(&self) -> Option<&str> {
        match self {
            GitError::Failed { stderr, .. } | GitError::NotARepo { stderr, .. } => Some(stderr),
            GitError::Spawn { .. }
            | GitError::Parse { .. }
            | GitError::InvalidArgument { .. }
            | GitError::Replaced { .. }
            | GitError::Io { .. } => None,
        }
    }
}

pub type Result<T, E = GitError> = std::result::Result<T, E>;

/// Git's text made safe to print (see [`baton_text::sanitize_terminal`]).
pub(crate) fn sanitize(text: &str) -> String {
    baton_text::sanitize_terminal(text).into_owned()
}

/// At most `max` bytes of `text`: three quarters from its start (the command and first
/// complaint), the rest from its end (how it finished).
pub(crate) fn bounded(text: &str, max: usize) -> String {
    baton_text::truncate(text, max, baton_text::Keep::Ends { head_percent: 75 }).into_owned()
}

fn bounded_clean(text: &str, max: usize) -> String {
    sanitize(bounded(text.trim(), max).as_str())
}

fn describe_failure(args: &[String], code: Option<i32>, stderr: &str, stdout: &str) -> String {
    let status = match code {
        Some(code) => format!("exited with code {code}"),
        None => "was killed by a signal".to_string(),
    };
    let mut msg = format!("`git {}` {status}", sanitize(&args.join(" ")));
    let detail = if stderr.trim().is_empty() {
        stdout
    } else {
        stderr
    };
    if !detail.trim().is_empty() {
        msg.push_str(": ");
        msg.push_str(&bounded_clean(detail, MESSAGE_BOUND));
    }
    msg
}
