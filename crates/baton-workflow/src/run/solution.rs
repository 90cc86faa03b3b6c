//! cc10x's knowledge-compounding check (seed 001:695): a BUILD or DEBUG whose evidence crosses a
//! threshold leaves a solution doc under `docs/solutions/` (Problem, What Didn't Work, Solution,
//! Why, Prevention), which memory's learnings name.
//!
//! Two of the three thresholds are read from the record: a DEBUG fixed after three or more
//! investigations, and one defect pattern the reviewer or the hunter found in three or more
//! files (the same words after the `file:line`). The third — a fix that contradicts an assumption
//! recorded in `patterns.md` — needs judgement baton does not make.

use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::artifact::Phase;
use crate::contract::merge::findings_in;
use crate::state::WorkflowState;

/// Files one defect pattern must be found in for a solution doc.
pub const PATTERN_FILES: usize = 3;

impl Runner<'_> {
    /// The solution doc this workflow crossed a threshold for, written; its path from the
    /// project's root. `None` when it crossed none, or is not proven.
    pub(super) fn solution_doc(
        &self,
        art: &Artifact,
        v: &WorkflowState,
        proven: bool,
    ) -> Result<Option<String>, RunError> {
        let kind = self.kind();
        if !matches!(kind, WorkflowKind::Build | WorkflowKind::Debug) || !proven {
            return Ok(None);
        }
        let text = match self.after_investigations(art, v) {
            Some(t) => t,
            None => match repeated_pattern(v) {
                Some((pattern, places)) => self.pattern_doc(art, v, &pattern, &places),
                None => return Ok(None),
            },
        };
        let folder = if kind == WorkflowKind::Debug {
            "debug"
        } else {
            "build"
        };
        let rel = format!("docs/solutions/{folder}/{}.md", self.id);
        let path = self.work_dir(v).join(&rel);
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&path, text));
        match written {
            Ok(()) => Ok(Some(rel)),
            Err(e) => Err(RunError::MemoryWrite(format!("{}: {e}", path.display()))),
        }
    }

    /// The first threshold: a DEBUG fixed after three or more investigations.
    fn after_investigations(&self, art: &Artifact, v: &WorkflowState) -> Option<String> {
        if self.kind() != WorkflowKind::Debug {
            return None;
        }
        // A fan-out's investigators are separate problems: the one tried most often counts.
        let lanes = v
            .tasks
            .iter()
            .filter_map(|t| super::fan_out::lane_files(t).and(t.scope.clone()));
        let busiest = lanes.max_by_key(|scope| {
            v.tasks
                .iter()
                .filter(|t| t.scope.as_ref() == Some(scope) && v.host.outputs.contains_key(&t.id))
                .count()
        });
        let reports: Vec<outputs::InvestigatorReport> = v
            .tasks
            .iter()
            .filter(|t| t.node() == Some(Phase::DebugInvestigate))
            .filter(|t| busiest.is_none() || t.scope == busiest)
            .filter_map(|t| v.host.outputs.get(&t.id))
            .filter_map(|o| contract::parse(Role::BugInvestigator, &o.text).ok())
            .filter_map(|c| outputs::from_contract(&c).investigator)
            .collect();
        let (last, tried) = reports.split_last().filter(|(_, t)| t.len() >= 2)?;
        let said = |r: &outputs::InvestigatorReport| {
            r.root_cause
                .clone()
                .unwrap_or_else(|| format!("{} (no root cause named)", r.status))
        };
        let mut text = format!(
            "# {}\n\nFrom DEBUG workflow {}, fixed after {} investigations.\n\n## Problem\n{}\n\n## What Didn't Work\n",
            art.user_request.as_deref().unwrap_or("a bug").trim(),
            self.id,
            reports.len(),
            art.user_request.as_deref().unwrap_or("").trim()
        );
        for (n, r) in tried.iter().enumerate() {
            text.push_str(&format!(
                "- Attempt {}: {} — {}\n",
                n + 1,
                r.status,
                said(r)
            ));
        }
        text.push_str(&format!("\n## Solution\n{}\n\n## Why\n", said(last)));
        for s in last.scenarios.iter().filter(|s| s.status == "PASS") {
            text.push_str(&format!(
                "- `{}` → exit {}\n",
                s.command,
                s.exit_code.map_or("?".into(), |c| c.to_string())
            ));
        }
        text.push_str("\n## Prevention\nKeep the scenarios above in the suite; read this before the next fix in the same place.\n");
        Some(text)
    }

    /// The second threshold's doc: one defect pattern in `places` (`file:line`, three files or
    /// more), how it was fixed and proven.
    fn pattern_doc(
        &self,
        art: &Artifact,
        v: &WorkflowState,
        pattern: &str,
        places: &[String],
    ) -> String {
        let files: BTreeSet<&str> = places.iter().map(|p| file_of(p)).collect();
        let mut text = format!(
            "# {}\n\nFrom {} workflow {}: one defect pattern found in {} files.\n\n## Problem\n{pattern}\n\n## What Didn't Work\nThe same defect was written in each of these places:\n",
            art.user_request.as_deref().unwrap_or("a change").trim(),
            self.kind(),
            self.id,
            files.len(),
        );
        for p in places {
            text.push_str(&format!("- {p}\n"));
        }
        text.push_str("\n## Solution\n");
        let fixes: Vec<&str> = v
            .tasks
            .iter()
            .filter(|t| t.kind == Some(TaskKind::Remfix))
            .filter_map(|t| t.reason.as_deref())
            .collect();
        match fixes.is_empty() {
            true => text.push_str("Fixed in the workflow's own change.\n"),
            false => {
                for f in fixes {
                    text.push_str(&format!("- {f}\n"));
                }
            }
        }
        text.push_str("\n## Why\n");
        let proofs = v
            .tasks
            .iter()
            .filter(|t| {
                matches!(
                    t.node(),
                    Some(Phase::BuildVerify | Phase::DebugVerify | Phase::ReVerify)
                )
            })
            .filter_map(|t| v.host.outputs.get(&t.id))
            .filter_map(|o| contract::parse(Role::IntegrationVerifier, &o.text).ok())
            .filter_map(|c| outputs::from_contract(&c).verifier)
            .flat_map(|r| r.scenario_rows)
            .filter(|s| s.status == "PASS");
        for s in proofs {
            text.push_str(&format!(
                "- `{}` → exit {}\n",
                s.command,
                s.exit_code.map_or("?".into(), |c| c.to_string())
            ));
        }
        text.push_str(&format!(
            "\n## Prevention\nLook for \"{pattern}\" in new code beside these files: a lint or a test that finds it keeps it out.\n"
        ));
        text
    }
}

/// `src/a.rs` of `src/a.rs:12`.
fn file_of(place: &str) -> &str {
    place.rsplit_once(':').map_or(place, |(f, _)| f)
}

/// The first defect pattern the reviewer or the hunter found in [`PATTERN_FILES`] files or more,
/// over every review of the workflow: the finding's words after its `file:line`, compared
/// without case; with the places it was found.
fn repeated_pattern(v: &WorkflowState) -> Option<(String, Vec<String>)> {
    let mut seen: BTreeMap<String, (String, Vec<String>)> = BTreeMap::new();
    let reviews = v
        .tasks
        .iter()
        .filter_map(|t| v.host.outputs.get(&t.id))
        .filter(|o| o.role == Role::CodeReviewer.name() || o.role == Role::FailureHunter.name());
    for o in reviews {
        for f in findings_in(&o.text) {
            let Some(at) = f.location.as_ref().map(ToString::to_string) else {
                continue;
            };
            let words = f.text.replacen(&at, "", 1);
            let words = words.trim().trim_start_matches([':', '-', '—']).trim();
            if words.is_empty() {
                continue;
            }
            let entry = seen
                .entry(words.to_lowercase())
                .or_insert_with(|| (words.to_string(), Vec::new()));
            if !entry.1.contains(&at) {
                entry.1.push(at);
            }
        }
    }
    seen.into_values().find(|(_, places)| {
        places
            .iter()
            .map(|p| file_of(p))
            .collect::<BTreeSet<_>>()
            .len()
            >= PATTERN_FILES
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_place_s_file_is_before_its_line() {
        assert_eq!(file_of("src/a.rs:12"), "src/a.rs");
        assert_eq!(file_of("README"), "README");
    }
}
