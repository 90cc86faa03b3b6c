//! Walking the workspace for `grep` and `find`, and matching paths against globs.

use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};
use ignore::WalkBuilder;

/// A walker over `root` that honours `.gitignore`, `.ignore` and `.git/info/exclude` (also
/// outside git repositories), skips hidden entries unless `hidden` is set, never enters a
/// `.git` directory, and visits siblings in name order so results are stable.
pub(crate) fn walker(root: &Path, hidden: bool) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(!hidden)
        .git_ignore(true)
        .git_exclude(true)
        .ignore(true)
        .parents(true)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|entry| entry.depth() == 0 || entry.file_name() != ".git")
        .sort_by_file_name(|a, b| a.cmp(b));
    builder
}

/// A glob over paths. A pattern without `/` (`*.rs`) is matched against file names at any
/// depth; one with `/` (`src/**/*.rs`) against the path relative to the search root. `*` does
/// not cross `/`; `**` does; `{a,b}` and `[abc]` work as usual.
#[derive(Debug, Clone)]
pub(crate) struct PathGlob {
    matcher: GlobMatcher,
    basename_only: bool,
    hidden: bool,
}

impl PathGlob {
    pub(crate) fn new(pattern: &str) -> Result<PathGlob, String> {
        let trimmed = pattern.trim();
        let trimmed = trimmed.strip_prefix("./").unwrap_or(trimmed);
        let trimmed = trimmed.trim_start_matches('/');
        if trimmed.is_empty() {
            return Err(format!("the glob `{pattern}` is empty"));
        }
        let glob = GlobBuilder::new(trimmed)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|e| format!("invalid glob `{pattern}`: {e}"))?;
        Ok(PathGlob {
            matcher: glob.compile_matcher(),
            basename_only: !trimmed.contains('/'),
            hidden: trimmed
                .split('/')
                .any(|part| part.starts_with('.') && part != "." && part != ".."),
        })
    }

    /// Whether `rel` (relative to the search root) matches.
    pub(crate) fn is_match(&self, rel: &Path) -> bool {
        if self.basename_only {
            rel.file_name()
                .is_some_and(|name| self.matcher.is_match(name))
        } else {
            self.matcher.is_match(rel)
        }
    }

    /// Whether the pattern names hidden entries itself (`.github/**`, `.env*`), in which case
    /// the walk should not skip them.
    pub(crate) fn wants_hidden(&self) -> bool {
        self.hidden
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basename_and_path_globs() {
        let g = PathGlob::new("*.rs").unwrap();
        assert!(g.is_match(Path::new("a/b/c.rs")));
        assert!(g.is_match(Path::new("c.rs")));
        assert!(!g.is_match(Path::new("c.rsx")));
        let g = PathGlob::new("src/*.rs").unwrap();
        assert!(g.is_match(Path::new("src/a.rs")));
        assert!(!g.is_match(Path::new("src/x/a.rs")));
        let g = PathGlob::new("./src/**/*.{rs,toml}").unwrap();
        assert!(g.is_match(Path::new("src/a.rs")));
        assert!(g.is_match(Path::new("src/x/y/a.toml")));
        let g = PathGlob::new("**/*.md").unwrap();
        assert!(g.is_match(Path::new("README.md")));
        assert!(g.is_match(Path::new("docs/x.md")));
        assert!(!g.wants_hidden());
        assert!(PathGlob::new(".github/**").unwrap().wants_hidden());
        assert!(PathGlob::new("**/.env*").unwrap().wants_hidden());
        assert!(PathGlob::new("a[").is_err());
        assert!(PathGlob::new("  ").is_err());
    }
}
