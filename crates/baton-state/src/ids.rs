//! The one validator for ids baton turns into file names, directory names and branch names.

/// What an id names, which decides the characters it may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdKind {
    /// A record of the state folder: a session, a background task, a Flow, a workflow, a run of
    /// frozen roles. ASCII letters, digits and `-`, 1 to 64 bytes.
    Record,
    /// A Flow unit: part of a branch name and a directory name. ASCII letters, digits, `-` and
    /// `_`, starting with a letter or digit, 1 to 40 bytes.
    Unit,
    /// A delegated entry's worktree: ASCII letters, digits, `-`, `_` and `.`, starting with a
    /// letter or digit, no `..`, not ending in `.` or `.lock`, 1 to 100 bytes.
    Worktree,
}

impl IdKind {
    pub const fn max_len(self) -> usize {
        match self {
            IdKind::Record => 64,
            IdKind::Unit => 40,
            IdKind::Worktree => 100,
        }
    }

    fn allows(self, c: char) -> bool {
        c.is_ascii_alphanumeric()
            || match self {
                IdKind::Record => c == '-',
                IdKind::Unit => c == '-' || c == '_',
                IdKind::Worktree => matches!(c, '-' | '_' | '.'),
            }
    }

    /// The characters allowed, for messages.
    pub fn alphabet(self) -> &'static str {
        match self {
            IdKind::Record => "ASCII letters, digits and `-`",
            IdKind::Unit => "ASCII letters, digits, `-` and `_`",
            IdKind::Worktree => "ASCII letters, digits, `-`, `_` and `.`",
        }
    }
}

/// Why an id was refused. `id` is shown with terminal controls replaced.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("the id is empty")]
    Empty { kind: IdKind },
    #[error("`{id}` is longer than {max} characters")]
    TooLong {
        kind: IdKind,
        id: String,
        max: usize,
    },
    #[error("`{id}` may use only {}", kind.alphabet())]
    BadChar { kind: IdKind, id: String },
    #[error("`{id}` must start with a letter or digit")]
    BadStart { kind: IdKind, id: String },
    #[error("`{id}` must not contain `..` or end with `.` or `.lock`")]
    BadRefName { kind: IdKind, id: String },
}

impl IdError {
    pub fn kind(&self) -> IdKind {
        match self {
            IdError::Empty { kind }
            | IdError::TooLong { kind, .. }
            | IdError::BadChar { kind, .. }
            | IdError::BadStart { kind, .. }
            | IdError::BadRefName { kind, .. } => *kind,
        }
    }
}

/// Checks `id` against the rules of `kind`.
pub fn check_id(kind: IdKind, id: &str) -> Result<(), IdError> {
    let shown = || baton_text::sanitize_line(id).into_owned();
    if id.is_empty() {
        return Err(IdError::Empty { kind });
    }
    if id.len() > kind.max_len() {
        return Err(IdError::TooLong {
            kind,
            id: shown(),
            max: kind.max_len(),
        });
    }
    if !id.chars().all(|c| kind.allows(c)) {
        return Err(IdError::BadChar { kind, id: shown() });
    }
    // Every kind: an id is passed to baton's own commands as an argument, and one starting
    // with `-` would be read as an option (`--force`).
    let start_ok = id.starts_with(|c: char| c.is_ascii_alphanumeric());
    if !start_ok {
        return Err(IdError::BadStart { kind, id: shown() });
    }
    if kind == IdKind::Worktree && (id.contains("..") || id.ends_with('.') || id.ends_with(".lock"))
    {
        return Err(IdError::BadRefName { kind, id: shown() });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn each_kind_has_its_alphabet_and_length() {
        assert!(check_id(IdKind::Record, "20261202T190000Z-1a2b").is_ok());
        for option_like in ["--force", "-x"] {
            assert!(matches!(
                check_id(IdKind::Record, option_like),
                Err(IdError::BadStart { .. })
            ));
        }
        assert!(matches!(
            check_id(IdKind::Record, "a_b"),
            Err(IdError::BadChar { .. })
        ));
        assert!(check_id(IdKind::Unit, "parser_fix-2").is_ok());
        assert!(matches!(
            check_id(IdKind::Unit, "-x"),
            Err(IdError::BadStart { .. })
        ));
        assert!(matches!(
            check_id(IdKind::Unit, "a.b"),
            Err(IdError::BadChar { .. })
        ));
        assert!(check_id(IdKind::Worktree, "v1.2").is_ok());
        for bad in ["a..b", "a.", "x.lock"] {
            assert!(
                matches!(
                    check_id(IdKind::Worktree, bad),
                    Err(IdError::BadRefName { .. })
                ),
                "{bad}"
            );
        }
        assert_eq!(
            check_id(IdKind::Unit, &"x".repeat(41)),
            Err(IdError::TooLong {
                kind: IdKind::Unit,
                id: "x".repeat(41),
                max: 40
            })
        );
        assert_eq!(
            check_id(IdKind::Record, ""),
            Err(IdError::Empty {
                kind: IdKind::Record
            })
        );
    }

    #[test]
    fn shown_ids_cannot_drive_a_terminal() {
        let err = check_id(IdKind::Unit, "a\x1b[2Jb").unwrap_err();
        assert_eq!(
            err.to_string(),
            "`a\u{FFFD}[2Jb` may use only ASCII letters, digits, `-` and `_`"
        );
    }
}
