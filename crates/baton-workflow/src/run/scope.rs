//! A planned phase's work compared with its scope (seed 001:572-576, "did it cover its scope"),
//! as far as the host can tell from the plan's own words: the expected artifacts that name files
//! must be there when the builder says the phase is done, and the reviewer is told which changed
//! files lie outside the phase's `files` (it judges whether they belong). A BUILD without a plan
//! declares no scope to compare with.

use std::path::Path;

use crate::artifact::{Artifact, NormalizedPhase};
use crate::state::HostCheck;

use super::plan;

/// Whether a plan's word names a file of the project: one relative path, no spaces (`a CSV
/// export` is prose, `src/export/csv.rs` a file).
fn names_a_file(s: &str) -> bool {
    let s = s.trim();
    let plain = s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-'));
    // Without a folder, a name with an extension of letters (`README.md`, not `v1.2.0`).
    let extension = s.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && (1..=8).contains(&ext.len())
            && ext.chars().any(|c| c.is_ascii_alphabetic())
    });
    !s.is_empty()
        && plain
        && (s.contains('/') || extension)
        && !s.starts_with('/')
        && !s.split('/').any(|c| c == "..")
}

/// The planned phase at the cursor, when the BUILD has a plan.
fn phase(a: &Artifact) -> Option<&NormalizedPhase> {
    a.results.plan.as_ref()?;
    plan::current(a).map(|(_, p)| p)
}

/// The expected artifacts of the phase at the cursor that name files and are not in `work`, as
/// failed host checks: a builder that says the phase is done has not made them.
pub(super) fn missing_artifacts(a: &Artifact, work: &Path) -> Vec<HostCheck> {
    let Some(p) = phase(a) else {
        return Vec::new();
    };
    p.expected_artifacts
        .iter()
        .flatten()
        .filter(|f| names_a_file(f))
        .filter(|f| !work.join(f.trim()).exists())
        .map(|f| HostCheck {
            command: format!(
                "test -e {} (an expected artifact of phase {})",
                f.trim(),
                p.phase_id
            ),
            ok: false,
            exit_code: Some(1),
            output:
                "the builder reported the phase done, and the plan's expected artifact is not there"
                    .into(),
            ..HostCheck::default()
        })
        .collect()
}

/// Of the change's files (`git diff --name-status` lines), those outside the phase's `files`
/// and expected artifacts (a folder covers what is under it), when the phase names any.
pub(super) fn outside(a: &Artifact, changed: &str) -> Vec<String> {
    let Some(p) = phase(a) else {
        return Vec::new();
    };
    let scope: Vec<&str> = p
        .files
        .iter()
        .flatten()
        .chain(p.expected_artifacts.iter().flatten())
        .map(|f| f.trim().trim_start_matches("./"))
        .filter(|f| names_a_file(f) || f.ends_with('/'))
        .collect();
    if scope.is_empty() {
        return Vec::new();
    }
    let within = |path: &str| {
        scope.iter().any(|f| {
            let dir = f.trim_end_matches('/');
            path == *f
                || path
                    .strip_prefix(dir)
                    .is_some_and(|rest| rest.starts_with('/'))
        })
    };
    changed
        .lines()
        .filter_map(|l| l.split_once('\t').map(|(_, path)| path))
        .filter(|path| !within(path))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_relative_file_names_are_taken_as_files() {
        for f in ["src/export/csv.rs", "README.md", "docs/"] {
            assert!(names_a_file(f) || f.ends_with('/'), "{f}");
        }
        for f in [
            "a CSV export",
            "/etc/passwd",
            "../up.rs",
            "src/*.rs",
            "",
            "v1.2.0",
            "e.g.",
            "parse()",
            "`x.rs`",
        ] {
            assert!(!names_a_file(f), "{f}");
        }
    }
}
