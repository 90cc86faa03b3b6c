//! DEBUG's opt-in fan-out (debug-workflow.md, "independence-test gate" and "fan-in
//! conflict-check"): failures the user groups by domain, each group with the files it must
//! touch, get one scoped investigator each. baton checks the half of the independence test it
//! can check, that the groups' files are disjoint (groups that share a file are merged into one
//! investigator); the other half, that each problem is understandable without the others, is the
//! user's in grouping them. The investigators run one after another (two write agents never run
//! together), so what each one edited is exactly the tree between its two snapshots; the engine's
//! fan-in check compares those sets before the review.

use std::fmt;
use std::str::FromStr;

use crate::artifact::{Phase, Task, TaskKind};
pub use crate::engine::fan_in::{conflicts, is_reconcile, lane_files, RECONCILE};
use crate::paths::overlap;

use super::graph::{self, NewTask};

/// The most investigators one fan-out starts.
pub const MAX_LANES: usize = 8;

/// One group of failures: its domain and the files its investigator owns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lane {
    pub domain: String,
    pub files: Vec<String>,
}

/// Why `--debug-group` cannot be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaneError(String);

impl fmt::Display for LaneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LaneError {}

impl FromStr for Lane {
    type Err = LaneError;

    /// `DOMAIN=FILE[,FILE...]`, files relative to the project's top.
    fn from_str(s: &str) -> Result<Lane, LaneError> {
        let example = "give DOMAIN=FILE[,FILE...], e.g. parser=src/parser.rs,tests/parser.rs";
        let Some((domain, files)) = s.split_once('=') else {
            return Err(LaneError(format!("{s:?} names no files: {example}")));
        };
        let domain = domain.trim();
        if domain.is_empty() || domain.chars().any(char::is_control) {
            return Err(LaneError(format!("{s:?} has no domain name: {example}")));
        }
        let mut out = Vec::new();
        for f in files.split(',').map(str::trim).filter(|f| !f.is_empty()) {
            let path = std::path::Path::new(f);
            let outside = path.is_absolute()
                || path
                    .components()
                    .any(|c| matches!(c, std::path::Component::ParentDir));
            if outside || f.chars().any(char::is_control) {
                return Err(LaneError(format!(
                    "{f:?} (domain {domain}) is not a file of the project: name it relative to the project's top, without `..`"
                )));
            }
            let f = f.trim_start_matches("./").to_string();
            if !out.contains(&f) {
                out.push(f);
            }
        }
        if out.is_empty() {
            return Err(LaneError(format!("{s:?} names no files: {example}")));
        }
        Ok(Lane {
            domain: domain.to_string(),
            files: out,
        })
    }
}

/// The disjoint-files half of the independence test: groups that share a file are merged into
/// one (in the order given), with a line saying so for each merge.
pub fn independent(lanes: Vec<Lane>) -> (Vec<Lane>, Vec<String>) {
    let mut out: Vec<Lane> = Vec::new();
    let mut notes = Vec::new();
    for lane in lanes {
        let mut merged = lane;
        // Every group already kept that shares a file with this one joins it (and so, in turn,
        // with each other: the union is taken again until nothing overlaps).
        while let Some(i) = out.iter().position(|o| {
            o.files
                .iter()
                .any(|f| merged.files.iter().any(|m| overlap(f, m)))
        }) {
            let other = out.remove(i);
            let shared: Vec<&String> = other
                .files
                .iter()
                .filter(|f| merged.files.iter().any(|m| overlap(f, m)))
                .collect();
            notes.push(format!(
                "the groups {} and {} both touch {}: not independent, one investigator takes both",
                other.domain,
                merged.domain,
                shared
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            let mut files = other.files;
            for f in merged.files {
                if !files.contains(&f) {
                    files.push(f);
                }
            }
            merged = Lane {
                domain: format!("{} + {}", other.domain, merged.domain),
                files,
            };
        }
        out.push(merged);
    }
    (out, notes)
}

/// The scope a lane's task carries: its files, comma-separated.
pub fn scope_of(files: &[String]) -> String {
    files.join(", ")
}

/// The lanes a workflow starts with, checked before anything is recorded, and a line for each
/// merge: `--debug-group` only for a DEBUG, at most [`MAX_LANES`], and in a git repository (the
/// fan-in check reads what each investigator edited from snapshots of the tree).
pub fn prepare(
    opts: &super::StartOptions,
    root: &std::path::Path,
) -> Result<(Vec<Lane>, Vec<String>), super::RunError> {
    if opts.fan_out.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let refuse = |why: String| Err(super::RunError::Refused(format!("--debug-group: {why}")));
    if opts.kind != crate::route::WorkflowKind::Debug {
        return refuse(format!(
            "only a DEBUG fans out to scoped investigators, and this request runs {}: drop --debug-group, or give --workflow DEBUG",
            opts.kind
        ));
    }
    if opts.fan_out.len() > MAX_LANES {
        return refuse(format!(
            "{} groups given, at most {MAX_LANES} investigators run: merge some groups",
            opts.fan_out.len()
        ));
    }
    if baton_git::Git::new(root)
        .run_output(["rev-parse", "--is-inside-work-tree"])
        .map_or(true, |o| !o.status.success())
    {
        return refuse(
            "the fan-in check compares the files each investigator changed, which needs a git repository: run it in one, or drop --debug-group".into(),
        );
    }
    let (lanes, mut notes) = independent(opts.fan_out.clone());
    if opts.fan_out.len() < 2 {
        notes.push(
            "one group given, and a fan-out needs two: one investigator takes all the failures"
                .into(),
        );
    } else if lanes.len() < 2 {
        notes.push(
            "one group is left after merging: one investigator takes all the failures".into(),
        );
    } else {
        notes.push(format!(
            "fan-out: {} scoped investigators, one after another: {}",
            lanes.len(),
            lanes
                .iter()
                .map(|l| format!("{} ({})", l.domain, scope_of(&l.files)))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    Ok((lanes, notes))
}

/// A fan-out's investigators run one per batch, so that the engine decides each one's report
/// (a BLOCKED or INVESTIGATING lane is acted on before the next lane runs): of the lanes in
/// `batch`, the one this decision created (a lane going on, or re-run after its research), else
/// the first.
pub fn one_lane(batch: &mut Vec<String>, tasks: &[Task], before: &[Task]) {
    let lanes: Vec<&String> = batch
        .iter()
        .filter(|id| {
            tasks
                .iter()
                .any(|t| &&t.id == id && lane_files(t).is_some())
        })
        .collect();
    if lanes.len() < 2 {
        return;
    }
    let keep = lanes
        .iter()
        .find(|id| !before.iter().any(|t| &&t.id == *id))
        .unwrap_or(&lanes[0])
        .to_string();
    batch.retain(|id| *id == keep);
}

/// DEBUG's graph as the groups and the request shape it: one investigator per group (see
/// [`fan_out`]), and research first when the user asks for it (debug-workflow.md:3: the
/// investigators wait for the web and GitHub researchers and read their files).
pub fn debug_graph(tasks: &mut Vec<Task>, wf: &str, lanes: &[Lane], request: &str) {
    fan_out(tasks, wf, lanes);
    if let Some(asked) = crate::route::scope::asks_for_research(request) {
        graph::research_first(tasks, wf, asked);
    }
}

/// Replaces DEBUG's one investigator with one per lane (two or more, after
/// [`independent`]); the reviewer waits for them all. Does nothing with fewer than two.
pub fn fan_out(tasks: &mut Vec<Task>, wf: &str, lanes: &[Lane]) {
    if lanes.len() < 2 {
        return;
    }
    let Some(first) = tasks
        .iter()
        .position(|t| t.node() == Some(Phase::DebugInvestigate))
    else {
        return;
    };
    let mut ids = Vec::new();
    for (n, lane) in lanes.iter().enumerate() {
        let reason = format!(
            "Independent root cause for the {} failures. Find the root cause and apply the fix WITHIN your scoped files only ({}): do not edit any other file; another investigator owns the rest.",
            lane.domain,
            scope_of(&lane.files)
        );
        let new = NewTask {
            kind: TaskKind::Agent,
            phase: Phase::DebugInvestigate.as_str(),
            origin: "router",
            scope: &scope_of(&lane.files),
            reason: &reason,
            blocked_by: Vec::new(),
        };
        if n == 0 {
            // The graph's own investigator becomes the first lane: its id stays the one the
            // reviewer already waits for.
            let t = &mut tasks[first];
            t.scope = Some(new.scope.to_string());
            t.reason = Some(reason.clone());
            ids.push(t.id.clone());
        } else {
            let t = graph::task(tasks, wf, new);
            ids.push(t.id.clone());
            tasks.push(t);
        }
    }
    for t in tasks.iter_mut() {
        if t.node() == Some(Phase::DebugReview) {
            for id in &ids {
                if !t.blocked_by.contains(id) {
                    t.blocked_by.push(id.clone());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lane(s: &str) -> Lane {
        s.parse().expect("a lane")
    }

    #[test]
    fn a_lane_is_a_domain_and_its_project_files() {
        assert_eq!(
            lane("parser = src/parser.rs, ./tests/parser.rs,src/parser.rs"),
            Lane {
                domain: "parser".into(),
                files: vec!["src/parser.rs".into(), "tests/parser.rs".into()]
            }
        );
        for bad in ["parser", "=a.rs", "parser=", "p=/etc/passwd", "p=../x.rs"] {
            let e = bad.parse::<Lane>().expect_err(bad).to_string();
            assert!(
                e.contains("give DOMAIN=FILE") || e.contains("not a file of the project"),
                "{e}"
            );
        }
    }

    #[test]
    fn groups_that_share_a_file_become_one_and_a_chain_of_them_too() {
        let (lanes, notes) = independent(vec![
            lane("a=a.rs"),
            lane("b=b.rs,shared.rs"),
            lane("c=c.rs"),
            lane("d=shared.rs,d.rs"),
        ]);
        assert_eq!(lanes.len(), 3, "{lanes:?}");
        assert_eq!(lanes[2].domain, "b + d");
        assert_eq!(lanes[2].files, vec!["b.rs", "shared.rs", "d.rs"]);
        assert_eq!(notes.len(), 1);
        assert!(notes[0].contains("shared.rs"), "{notes:?}");
        // Joined through a third: x-y share one file, y-z another.
        let (lanes, notes) = independent(vec![lane("x=1.rs"), lane("z=2.rs"), lane("y=1.rs,2.rs")]);
        assert_eq!(lanes.len(), 1, "{lanes:?}");
        assert_eq!(notes.len(), 2);
    }

    #[test]
    fn a_group_naming_a_folder_shares_the_files_under_it() {
        let (lanes, notes) = independent(vec![lane("a=src/import/"), lane("b=src/import/csv.rs")]);
        assert_eq!(lanes.len(), 1, "{lanes:?}");
        assert!(notes[0].contains("src/import"), "{notes:?}");
        let (lanes, _) = independent(vec![lane("a=src/import"), lane("b=src/importer.rs")]);
        assert_eq!(lanes.len(), 2, "{lanes:?}");
    }

    #[test]
    fn the_fan_out_gives_each_lane_an_investigator_the_review_waits_for() {
        let wf = "wf-20261207T150000Z-0a1b2c3d";
        let mut tasks = graph::initial(crate::route::WorkflowKind::Debug, false, wf);
        fan_out(&mut tasks, wf, &[lane("a=a.rs"), lane("b=b.rs,c.rs")]);
        let lanes: Vec<&Task> = tasks.iter().filter(|t| lane_files(t).is_some()).collect();
        assert_eq!(lanes.len(), 2);
        assert_eq!(
            lane_files(lanes[1]),
            Some(vec!["b.rs".into(), "c.rs".into()])
        );
        for t in &tasks {
            t.validate().unwrap_or_else(|e| panic!("{}: {e:?}", t.id));
        }
        let review = tasks
            .iter()
            .find(|t| t.node() == Some(Phase::DebugReview))
            .unwrap();
        for l in lanes {
            assert!(review.blocked_by.contains(&l.id), "{review:?}");
        }
    }

    #[test]
    fn only_files_two_lanes_edited_conflict_and_a_reconciler_takes_them_over() {
        let wf = "wf-20261207T150000Z-0a1b2c3d";
        let mut tasks = graph::initial(crate::route::WorkflowKind::Debug, false, wf);
        fan_out(&mut tasks, wf, &[lane("a=a.rs"), lane("b=b.rs")]);
        let ids: Vec<String> = tasks
            .iter()
            .filter(|t| lane_files(t).is_some())
            .map(|t| t.id.clone())
            .collect();
        let mut edited = std::collections::BTreeMap::new();
        edited.insert(ids[0].clone(), vec!["a.rs".to_string(), "util.rs".into()]);
        edited.insert(ids[1].clone(), vec!["b.rs".to_string(), "util.rs".into()]);
        assert_eq!(
            conflicts(&tasks, &edited),
            vec![("util.rs".to_string(), ids.clone())]
        );
        let reason = format!("{RECONCILE} util.rs");
        let r = graph::task(
            &tasks,
            wf,
            NewTask {
                kind: TaskKind::Agent,
                phase: Phase::DebugInvestigate.as_str(),
                origin: "router",
                scope: "util.rs",
                reason: &reason,
                blocked_by: Vec::new(),
            },
        );
        let rid = r.id.clone();
        tasks.push(r);
        edited.insert(rid.clone(), vec!["util.rs".to_string()]);
        assert!(conflicts(&tasks, &edited).is_empty());
        // A reconciler that strays into a lane's file conflicts with that lane.
        edited.insert(rid.clone(), vec!["util.rs".to_string(), "a.rs".into()]);
        assert_eq!(
            conflicts(&tasks, &edited),
            vec![("a.rs".to_string(), vec![ids[0].clone(), rid])]
        );
    }
}
