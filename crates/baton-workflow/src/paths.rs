//! How the files a plan or a user names are compared: one home for the three places that match
//! them (a fan-out's groups, a phase's tasks, a phase's scope). A name is cleaned (`./` and a
//! trailing `/` dropped), and a folder covers what is under it (`src/import` covers
//! `src/import/csv.rs`, not `src/importer.rs`).

/// A name as written, for comparing: trimmed, without `./` or a trailing `/`.
pub fn clean(f: &str) -> &str {
    f.trim().trim_start_matches("./").trim_end_matches('/')
}

/// Whether `path` is `scope` or under it (both cleaned; an empty name covers nothing).
pub fn covers(scope: &str, path: &str) -> bool {
    let (scope, path) = (clean(scope), clean(path));
    !scope.is_empty()
        && (path == scope
            || path
                .strip_prefix(scope)
                .is_some_and(|rest| rest.starts_with('/')))
}

/// Whether two names touch the same file: the same, or one a folder holding the other.
pub fn overlap(a: &str, b: &str) -> bool {
    covers(a, b) || covers(b, a)
}

/// Whether a name is a plain path of the project: ASCII letters, digits, `/`, `.`, `_` and `-`
/// only, relative, no `..` (no glob, no note beside it).
pub fn plain(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-'))
        && !s.starts_with('/')
        && !s.split('/').any(|c| c == "..")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_covers_what_is_under_it_and_nothing_beside_it() {
        assert!(covers("src/import/", "./src/import/csv.rs"));
        assert!(covers("Cargo.toml", "Cargo.toml"));
        assert!(!covers("src/import", "src/importer.rs"));
        assert!(!covers("", "a.rs"));
        assert!(overlap("src/import/csv.rs", "src/import"));
        assert!(!overlap("a.rs", "b.rs"));
        assert!(plain("src/a_b-c.rs") && !plain("src/**/*.rs") && !plain("../x") && !plain("/x"));
    }
}
