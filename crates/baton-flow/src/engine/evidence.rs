//! What the Flow tells its children (tasks) and records about them (evidence).

use super::*;

pub(super) fn ensure_role_file(role: &FrozenRole) -> Result<PathBuf, String> {
    if role.file.is_file() {
        return Ok(role.file.clone());
    }
    // Rewrite it from the log's copy, through the writer that froze it: the file is
    // `<flow dir>/roles/<index>-<name>.md`.
    let flow_dir = role.file.parent().and_then(Path::parent);
    let index = role
        .file
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.split('-').next())
        .and_then(|n| n.parse::<usize>().ok());
    match (flow_dir, index) {
        (Some(dir), Some(index)) => {
            write_frozen_role(&dir.join("roles"), index, &role.spec).map_err(|e| e.message)
        }
        _ => Err(format!(
            "the frozen role file {} is missing",
            role.file.display()
        )),
    }
}

pub(super) fn summarize(r: &ChildResult) -> ChildSummary {
    ChildSummary {
        ok: r.status == ChildStatus::Success,
        exit_code: r.exit_code,
        error: None,
        output: bounded(&r.output, EVIDENCE_BOUND),
        stderr: bounded(&r.stderr, EVIDENCE_BOUND / 2),
        duration_ms: r.duration_ms,
    }
}

pub(super) fn summarize_error(e: &ExecError) -> ChildSummary {
    let (output, stderr, exit_code, duration_ms) = match &e.partial {
        Some(p) => (
            p.output.as_str(),
            p.stderr.as_str(),
            p.exit_code,
            p.duration_ms,
        ),
        None => ("", "", None, 0),
    };
    ChildSummary {
        ok: false,
        exit_code,
        error: Some(format!("{}: {}", e.code.as_str(), e.message)),
        output: bounded(output, EVIDENCE_BOUND),
        stderr: bounded(stderr, EVIDENCE_BOUND / 2),
        duration_ms,
    }
}

pub(super) fn child_evidence(s: &ChildSummary) -> String {
    let mut text = match (&s.error, s.exit_code) {
        (Some(e), _) => format!("the child did not finish: {e}"),
        (None, Some(c)) => format!("the child exited with code {c}"),
        (None, None) => "the child failed".to_string(),
    };
    if !s.stderr.trim().is_empty() {
        text.push_str(&format!("\nstderr:\n{}", s.stderr.trim_end()));
    }
    if !s.output.trim().is_empty() {
        text.push_str(&format!("\noutput:\n{}", s.output.trim_end()));
    }
    text
}

pub(super) fn validation_evidence(results: &[crate::event::CheckResult]) -> String {
    let Some(last) = results.last() else {
        return "validation failed".into();
    };
    let status = match (&last.error, last.exit_code) {
        (Some(e), _) => e.clone(),
        (None, Some(c)) => format!("exit code {c}"),
        (None, None) => "failed".into(),
    };
    let mut text = format!("`{}` failed: {status}", last.command);
    if !last.output.trim().is_empty() {
        text.push_str(&format!("\n{}", last.output.trim_end()));
    }
    text
}

pub(super) fn implementer_task(
    state: &FlowState,
    u: &UnitState,
    path: &Path,
    interrupted_before: bool,
) -> String {
    let branch = u.branch.as_deref().unwrap_or("");
    let mut t = format!(
        "You are implementing one unit of a Flow: independent changes made in parallel, each in its own git worktree, \
         then validated{} and fast-forward merged into {} one at a time.\n\n\
         Unit `{}`: {}\n\n## Task\n\n{}\n\n## Validation\n\n\
         When you are done, Flow runs these commands in this worktree, directly (not through a shell). Every one must exit 0:\n",
        if u.spec.review.is_some() { ", reviewed" } else { "" },
        state.main_branch,
        u.spec.id,
        u.spec.name,
        u.spec.task.trim_end(),
    );
    for c in &u.spec.validation {
        t.push_str(&format!("- `{}`\n", c.display()));
    }
    if let Some(r) = &u.spec.review {
        t.push_str(&format!(
            "\n## Review criterion\n\nA reviewer will judge the committed change against: {}\n",
            r.trim_end()
        ));
    }
    t.push_str(&format!(
        "\n## Rules\n\n\
         - Work only in this worktree ({}) on branch `{branch}`. Do not switch branches, rebase, push, or touch other checkouts.\n\
         - Commit your finished work on this branch and leave nothing uncommitted: uncommitted changes block the unit, and so does a branch without commits.\n\
         - Flow reads your result from git, not from your words. End with a short report of what you changed.\n",
        path.display()
    ));
    if interrupted_before {
        t.push_str(&format!(
            "\nNote: an earlier run of this task was interrupted. The worktree may already hold part of its work \
             (see `git status` and `git log {}..HEAD`); continue from there.\n",
            u.base.as_deref().map(short).unwrap_or("HEAD")
        ));
    }
    if !u.validation_untracked.is_empty() {
        t.push_str(&format!(
            "\nNote: an earlier validation run left these untracked paths in the worktree: {}. \
             Flow ignores exactly these when it checks for uncommitted changes; leave them alone or delete them, \
             and do not commit them unless the task asks for them.\n",
            u.validation_untracked
                .iter()
                .map(|p| format!("`{p}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if u.attempt >= 1 {
        let (reason, evidence) = u
            .block
            .as_ref()
            .map_or(("blocked", ""), |b| (b.reason.label(), b.evidence.as_str()));
        t.push_str(&format!(
            "\n## Repair\n\nThe previous attempt was blocked: {reason}.\n\nEvidence:\n\n{}\n\nGuidance:\n\n{}\n\n\
             This is the unit's only repair: if it blocks again, the Flow stops. The worktree still holds the previous attempt's work.\n",
            evidence.trim_end(),
            u.guidance.as_deref().unwrap_or("").trim_end()
        ));
    }
    t
}
