//! A planned phase's work compared with its scope (seed 001:572-576, "did it cover its scope"),
//! as far as the host can tell from the plan's own words: the expected artifacts that name files
//! must be there when the builder says the phase is done, and the reviewer is told which changed
//! files lie outside the phase's `files` (it judges whether they belong). A BUILD without a plan
//! declares no scope to compare with.

use std::path::Path;

use crate::artifact::{Artifact, NormalizedPhase};
use crate::paths;
use crate::state::HostCheck;

use super::plan;

/// Whether a plan's word names a file of the project: one relative path, no spaces (`a CSV
/// export` is prose, `src/export/csv.rs` a file).
fn names_a_file(s: &str) -> bool {
    let s = s.trim();
    // Without a folder, a name with an extension of letters (`README.md`, not `v1.2.0`).
    let extension = s.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && (1..=8).contains(&ext.len())
            && ext.chars().any(|c| c.is_ascii_alphabetic())
    });
    paths::plain(s) && (s.contains('/') || extension)
}

/// The planned phase at the cursor, when the BUILD has a plan.
fn phase(a: &Artifact) -> Option<&NormalizedPhase> {
    a.results.plan.as_ref()?;
    plan::current(a).map(|(_, p)| p)
}

/// A phase's `files` as paths to match (a folder covers what is under it), or `None` when one
/// of them cannot be read as a path (a glob, a note beside it): then nothing is matched.
fn scope_paths(p: &NormalizedPhase) -> Option<Vec<String>> {
    let mut out = Vec::new();
    for f in p.files.iter().flatten() {
        let word = paths::clean(f.split_whitespace().next().unwrap_or(""));
        if !paths::plain(word) {
            return None;
        }
        out.push(word.to_string());
    }
    Some(out)
}

/// Whether `path` is one of `scope` or under one of them.
fn within(scope: &[String], path: &str) -> bool {
    scope.iter().any(|f| paths::covers(f, path))
}

/// The expected artifacts of the phase at the cursor that are files the phase itself names (in
/// its `files` too) and are not in `work`, as failed host checks: a builder that says the phase
/// is done has not made them. An artifact only in prose, or outside the phase's files (a build
/// output, `N/A`), is the verifier's to judge.
pub(super) fn missing_artifacts(a: &Artifact, work: &Path) -> Vec<HostCheck> {
    let Some(p) = phase(a) else {
        return Vec::new();
    };
    let Some(scope) = scope_paths(p) else {
        return Vec::new();
    };
    p.expected_artifacts
        .iter()
        .flatten()
        .filter(|f| names_a_file(f))
        .filter(|f| within(&scope, f.trim().trim_start_matches("./")))
        .filter(|f| !work.join(f.trim()).exists())
        .map(|f| HostCheck {
            command: format!(
                "test -e {} (an expected artifact of phase {})",
                f.trim(),
                p.phase_id
            ),
            ok: false,
            exit_code: Some(1),
            error: Some("the plan's expected artifact is not in the tree".into()),
            ..HostCheck::default()
        })
        .collect()
}

/// Of the change's files (`git diff --name-status` lines), those outside the phase's `files`
/// and expected artifacts (a folder covers what is under it), when the phase names its files in
/// a form that can be matched.
pub(super) fn outside(a: &Artifact, changed: &str) -> Vec<String> {
    let Some(p) = phase(a) else {
        return Vec::new();
    };
    let Some(mut scope) = scope_paths(p) else {
        return Vec::new();
    };
    scope.extend(
        p.expected_artifacts
            .iter()
            .flatten()
            .filter(|f| names_a_file(f))
            .map(|f| f.trim().trim_start_matches("./").to_string()),
    );
    if scope.is_empty() {
        return Vec::new();
    }
    changed
        .lines()
        .filter_map(|l| l.split_once('\t').map(|(_, path)| path))
        .filter(|path| !within(&scope, path))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_phase_s_files_are_matched_as_paths_and_folders_or_not_at_all() {
        let phase = |files: &[&str]| NormalizedPhase {
            files: Some(files.iter().map(|f| f.to_string()).collect()),
            ..NormalizedPhase::new("phase-1", None)
        };
        let scope = scope_paths(&phase(&["src/import", "./Cargo.toml", "tests/ (new)"])).unwrap();
        assert_eq!(scope, ["src/import", "Cargo.toml", "tests"]);
        assert!(within(&scope, "src/import/csv.rs") && within(&scope, "Cargo.toml"));
        assert!(!within(&scope, "src/importer.rs"));
        assert_eq!(scope_paths(&phase(&["src/**/*.rs", "Cargo.toml"])), None);
    }

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
