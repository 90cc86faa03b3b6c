//! The prompt of one dispatch: the scaffold, what earlier agents found, the change to read.

use super::*;
use crate::artifact::Phase;
use crate::state::{Record, WorkflowState};

impl Runner<'_> {
    /// The artifact as agents read it (seed 001:726: never another agent's live output or the
    /// router's bookkeeping): cc10x's artifact without the runner's keys (`run`, `tasks`,
    /// `checkpoint`, …, where every agent's answer is kept), written before each dispatch as
    /// `.baton/state/agent-artifacts/<id>.json` (apart from the records, whose folder holds
    /// only them). When it cannot be written, the record's own snapshot is named, as before.
    fn agent_view(&self, a: &crate::artifact::Artifact) -> std::path::PathBuf {
        let state = &self.env.delegate.state;
        let dir = state.root().join("agent-artifacts");
        let view = dir.join(format!("{}.json", self.id));
        let written = serde_json::to_vec_pretty(&a.to_json())
            .map_err(std::io::Error::other)
            .and_then(|bytes| {
                std::fs::create_dir_all(&dir)?;
                let mut tmp = tempfile::NamedTempFile::new_in(&dir)?;
                std::io::Write::write_all(&mut tmp, &bytes)?;
                tmp.persist(&view).map_err(|e| e.error)
            });
        match written {
            Ok(_) => view,
            Err(_) => state.workflows().join(format!("{}.json", self.id)),
        }
    }

    /// The scaffold of one dispatch.
    pub(super) fn prompt(
        &self,
        r: &Record,
        task: &Task,
        role: Role,
        precedence: Option<&str>,
        change: Option<&(String, Option<String>)>,
    ) -> String {
        let (a, v) = (&r.artifact, &r.state);
        let memory = MemoryDir::new(&self.root);
        let cut = |s: String| s.chars().take(2000).collect::<String>();
        let summary = memory.read(MemoryFile::ActiveContext).ok().map(cut);
        let patterns = memory.read(MemoryFile::Patterns).ok().map(cut);
        let skill_hints = self.skill_hints().map(cut);
        let domain = agent::domain_context(&self.root, 4000);
        // The verifier and a remediation see what the latest read-only agents found: the
        // verifier in cc10x's per-agent blocks with the reviewer's verdict.
        let remfix = task.kind == Some(TaskKind::Remfix);
        let findings = (role == Role::IntegrationVerifier || remfix)
            .then(|| previous_findings(v, role == Role::IntegrationVerifier));
        // The re-plan is handed the gap review's findings it answers (cc10x plan-workflow).
        let findings = findings.or_else(|| {
            (task.node() == Some(Phase::RePlan)).then(|| {
                v.tasks
                    .iter()
                    .rev()
                    .filter(|t| t.node() == Some(Phase::PlanReviewGap1))
                    .find_map(|t| v.host.outputs.get(&t.id))
                    .map(|o| o.text.chars().take(6000).collect::<String>())
                    .unwrap_or_default()
            })
        });
        let last_problem = v.host.failure.clone().filter(|_| v.host.guidance.is_some());
        // The investigator or planner after a research round reads where its files are and how
        // good they are (seed 001:347-348); the plan's reviewer gets them among the context the
        // plan was made from; and the fix after a round made because the remediation did not
        // converge reads it too.
        let stuck = crate::engine::stuck_reason(a.phase_cursor.as_deref());
        let for_stuck_fix = remfix
            && a.research_rounds.last().is_some_and(|r| {
                r.reason
                    .as_deref()
                    .is_some_and(|w| w.starts_with(&format!("{stuck}: ")))
            });
        let round = (for_stuck_fix
            || matches!(
                role,
                Role::BugInvestigator | Role::Planner | Role::PlanGapReviewer
            ))
        .then(|| a.research_rounds.last())
        .flatten();
        let research_files = round.map(|round| {
            let file = |f: &Option<String>| f.as_deref().unwrap_or("Unavailable").to_string();
            format!(
                "Web: {}\nGitHub: {}",
                file(&round.web_file),
                file(&round.github_file)
            )
        });
        let research_quality = round.map(|_| {
            let q = &a.research_quality;
            let say = |s: &Option<String>| s.as_deref().unwrap_or("none").to_string();
            format!(
                "Web: {} · GitHub: {} · overall: {}",
                say(&q.web),
                say(&q.github),
                say(&q.overall)
            )
        });
        let artifact_path = self.agent_view(a);
        let base = phase_base(a);
        let outside = change
            .and_then(|(_, files)| files.as_deref())
            .map(|files| super::scope::outside(a, files).join("\n"));
        agent::scaffold(&agent::Scaffold {
            wf: &self.id,
            artifact_path: &artifact_path,
            task,
            role,
            request: a.user_request.as_deref().unwrap_or(""),
            plan_file: a.plan_file.as_deref(),
            memory_summary: summary.as_deref(),
            patterns: patterns.as_deref(),
            guidance: v.host.guidance.as_deref(),
            previous_findings: findings.as_deref(),
            last_problem: last_problem.as_deref(),
            research_files: research_files.as_deref(),
            research_quality: research_quality.as_deref(),
            base: base.as_deref(),
            design_file: a.design_file.as_deref(),
            doubts: a
                .results
                .doubt_pass
                .as_ref()
                .and_then(|d| d.file.as_deref()),
            domain: domain.as_deref(),
            head: change.map(|(now, _)| now.as_str()),
            changed_files: change.and_then(|(_, files)| files.as_deref()),
            outside_scope: outside.as_deref(),
            skill_hints: skill_hints.as_deref(),
            precedence,
            baseline: (role == Role::IntegrationVerifier)
                .then(|| {
                    let parts: Vec<String> = [
                        baseline::prompt_section(a),
                        dispute::prompt_section(&dispute::recorded(a)),
                    ]
                    .into_iter()
                    .flatten()
                    .collect();
                    (!parts.is_empty()).then(|| parts.join("\n"))
                })
                .flatten()
                .as_deref(),
            phase: plan::brief(
                a,
                matches!(role, Role::ComponentBuilder | Role::IntegrationVerifier),
            )
            .as_deref(),
        })
    }
}

/// What the latest read-only agents (those after the last write agent) found. For the verifier,
/// cc10x's hand-off: a block per agent, the code reviewer's with its verdict, the failure hunter's
/// even when it did not run ("not in this workflow"); for a remediation, one line per finding.
fn previous_findings(v: &WorkflowState, verifier: bool) -> String {
    let mut by_role: Vec<(String, String, Vec<String>)> = Vec::new();
    for t in v.tasks.iter().rev() {
        let Some(o) = v.host.outputs.get(&t.id) else {
            continue;
        };
        // A research round between the review and the fix is read past: its files come in
        // their own section.
        if o.role == Role::Researcher.name() {
            continue;
        }
        let Some(role) = Role::from_name(&o.role).filter(|r| r.is_read_only()) else {
            break;
        };
        if by_role.iter().any(|(r, ..)| *r == o.role) {
            continue;
        }
        let mut lines: Vec<String> = contract::merge::findings_in(&o.text)
            .iter()
            .map(|f| format!("- [{}] {}", f.severity.name(), f.text))
            .collect();
        lines.extend(o.text.lines().filter_map(|l| {
            let l = l.trim().trim_start_matches("- ");
            l.starts_with("REMEDIATION_REASON:")
                .then(|| format!("- {l}"))
        }));
        let verdict = match contract::parse(role, &o.text).map(|c| c.outcome) {
            Ok(out) if out.advances() => "Approve",
            Ok(_) => "Changes Requested",
            Err(_) => "unreadable (no contract)",
        };
        by_role.push((o.role.clone(), verdict.to_string(), lines));
    }
    if !verifier {
        return by_role
            .iter()
            .flat_map(|(role, _, lines)| lines.iter().map(move |l| format!("{l} ({role})")))
            .collect::<Vec<_>>()
            .join("\n");
    }
    let block = |title: &str, role: &str, verdict: bool| {
        let mut b = format!("### {title}\n");
        match by_role.iter().find(|(r, ..)| r == role) {
            Some((_, v, lines)) => {
                if verdict {
                    b.push_str(&format!("**Verdict:** {v}\n"));
                }
                let critical: Vec<&String> = lines
                    .iter()
                    .filter(|l| l.starts_with("- [critical]"))
                    .collect();
                let other: Vec<&String> = lines
                    .iter()
                    .filter(|l| !l.starts_with("- [critical]"))
                    .collect();
                b.push_str("**Critical Issues:**\n");
                match critical.is_empty() {
                    true => b.push_str("None\n"),
                    false => critical.iter().for_each(|l| b.push_str(&format!("{l}\n"))),
                }
                if !other.is_empty() {
                    b.push_str("**Other Findings:**\n");
                    other.iter().for_each(|l| b.push_str(&format!("{l}\n")));
                }
            }
            None if verdict => b.push_str("Not run in this batch.\n"),
            None => b.push_str("**Critical Issues:**\nNone / not in this workflow\n"),
        }
        b
    };
    let mut out = vec![
        block("Code Reviewer", "code-reviewer", true),
        block("Failure Hunter", "failure-hunter", false),
    ];
    for (role, _, lines) in &by_role {
        if role != "code-reviewer" && role != "failure-hunter" && !lines.is_empty() {
            out.push(format!("### {role}\n{}\n", lines.join("\n")));
        }
    }
    out.join("\n")
}

/// The base the roles that read the change diff against: the phase's; for the final
/// whole-branch review and its fix wave, the workflow's (every phase's change).
pub(super) fn phase_base(a: &Artifact) -> Option<String> {
    match final_review(a) {
        Some("running" | "fixing") => a.results.workflow_base_sha.clone(),
        _ => a.results.git_base_sha.clone(),
    }
}

/// Where the final whole-branch review stands (`results.final_branch_review.status`).
fn final_review(a: &Artifact) -> Option<&str> {
    a.results
        .final_branch_review
        .as_ref()
        .map(|f| f.status.as_str())
}
