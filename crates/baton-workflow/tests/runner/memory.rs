//! Memory finalization writes what the workflow learned: the agents' MEMORY_NOTES, the findings
//! left open, the tests that failed before the build.

use baton_workflow::run::Outcome;

use crate::harness::*;

fn memory(h: &Harness, file: &str) -> String {
    std::fs::read_to_string(h.env.delegate.cwd.join(".baton/memory").join(file)).unwrap()
}

#[test]
fn the_agents_memory_notes_and_the_open_findings_reach_memory() {
    let h = Harness::new();
    let builder = BUILDER_PASS.replace(
        "MEMORY_NOTES: null",
        "MEMORY_NOTES:\n  learnings: [the flag parser lives in cli.rs]\n  patterns: [feature.txt is generated: never edit it by hand]\n  verification: [test -f feature.txt passed]",
    );
    let review = REVIEW_APPROVE.to_string()
        + "\n### Memory Notes\n- **Learnings:** reviewers should read cli.rs first\n- Patterns: errors are logged, never swallowed\n";
    h.happy()
        .answer("component-builder", &builder)
        .answer("code-reviewer", &review);
    let o = h.build("add a feature file").unwrap();
    assert!(matches!(o, Outcome::Completed { .. }), "{o:?}");
    let active = memory(&h, "activeContext.md");
    assert!(
        active.contains("- the flag parser lives in cli.rs"),
        "{active}"
    );
    assert!(
        active.contains("- reviewers should read cli.rs first"),
        "{active}"
    );
    let patterns = memory(&h, "patterns.md");
    assert!(
        patterns.contains("- feature.txt is generated: never edit it by hand"),
        "{patterns}"
    );
    assert!(
        patterns.contains("- errors are logged, never swallowed"),
        "{patterns}"
    );
    let progress = memory(&h, "progress.md");
    assert!(
        progress.contains("- test -f feature.txt passed"),
        "{progress}"
    );
}

/// A happy BUILD harness whose project has `patterns.md` with these User Standards and
/// SKILL_HINTS lines, and the skill `rust-testing` in `.baton/skills/`.
fn with_patterns_and_skill(standards: &str, hints: &str) -> Harness {
    let h = Harness::new();
    h.happy();
    let dir = h.env.delegate.cwd.join(".baton/memory");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("patterns.md"),
        format!("# Project patterns\n\n## User Standards\n{standards}\n## Common Gotchas\n\n## Project SKILL_HINTS\n{hints}\n## Last Updated\n"),
    )
    .unwrap();
    let skill = h.env.delegate.cwd.join(".baton/skills/rust-testing");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: rust-testing\ndescription: How this project tests Rust\n---\nTests live beside the code.\n",
    )
    .unwrap();
    h
}

#[test]
fn the_project_s_skill_hints_reach_every_dispatch() {
    // A hinted skill that exists is given to every dispatched agent; `ghost` stays a hint.
    let h = with_patterns_and_skill(
        "",
        "- rust-testing: tests live beside the code\n- `ghost`: no such skill\n",
    );
    let o = h.build("add a feature file").unwrap();
    assert!(matches!(o, Outcome::Completed { .. }), "{o:?}");
    for call in h.calls() {
        assert!(
            call.prompt
                .contains("## SKILL_HINTS\n- rust-testing: tests live beside the code\n"),
            "{}",
            call.prompt
        );
        assert_eq!(call.skills, ["rust-testing"], "{}", call.role);
    }
}

#[test]
fn competing_instructions_are_resolved_once_and_every_dispatch_is_told() {
    let h = with_patterns_and_skill(
        "- tabs, not spaces\n",
        "- rust-testing: tests live beside the code\n",
    );
    let o = h.build("add a feature file").unwrap();
    let Outcome::Completed { id, .. } = &o else {
        panic!("{o:?}")
    };
    // Project standards outrank a skill: every dispatch is told so.
    for call in h.calls() {
        assert!(
            call.prompt.contains(
                "## Instruction Precedence\nWhere instructions disagree, the stronger governs: the user request, then project standards (patterns.md User Standards), then skills (rust-testing), then your role's instructions"
            ),
            "{}",
            call.prompt
        );
    }
    // Resolved (and recorded) once, not at every dispatch.
    let a = h.artifact(id);
    let resolved: Vec<&serde_json::Value> = a["status_history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "precedence_resolved")
        .collect();
    assert_eq!(resolved.len(), 1, "{resolved:?}");
    assert!(
        resolved[0]["reason"]
            .as_str()
            .unwrap()
            .contains("ProjectStandard governs"),
        "{resolved:?}"
    );
}

/// `DIFF_DRIVEN_DOCS: skip` in the session settings: no doc-sync task is made and the memory
/// step follows the verifier (cc10x build-workflow's opt-out check).
#[test]
fn diff_driven_docs_skip_runs_no_doc_syncer() {
    let h = Harness::new();
    h.happy();
    let o = h.build("add a feature file").unwrap();
    assert!(matches!(o, Outcome::Completed { .. }), "{o:?}");
    assert_eq!(h.calls_of("doc-syncer").len(), 1);
    let path = h.env.delegate.cwd.join(".baton/memory/activeContext.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let text = text.replacen(
        "## Session Settings\n",
        "## Session Settings\nDIFF_DRIVEN_DOCS: skip\n",
        1,
    );
    assert!(text.contains("DIFF_DRIVEN_DOCS: skip"), "{text}");
    std::fs::write(&path, text).unwrap();
    let o = h.build("add another feature file").unwrap();
    assert!(matches!(o, Outcome::Completed { .. }), "{o:?}");
    assert_eq!(
        h.calls_of("doc-syncer").len(),
        1,
        "the doc-syncer ran again"
    );
    let s = baton_workflow::state::WorkflowState::read(&h.artifact(&id_of(&o))).unwrap();
    use baton_workflow::artifact::Phase;
    assert!(
        s.tasks
            .iter()
            .all(|t| t.node() != Some(Phase::BuildDocSync)),
        "{:?}",
        s.tasks
    );
    let verifier = s
        .tasks
        .iter()
        .find(|t| t.node() == Some(Phase::BuildVerify))
        .unwrap();
    let memory = s
        .tasks
        .iter()
        .find(|t| t.node() == Some(Phase::MemoryFinalize))
        .unwrap();
    assert_eq!(memory.blocked_by, std::slice::from_ref(&verifier.id));
}

/// cc10x's marker rules: a BUILD writes `[BUILD-START: wf:ID]` under `## Recent Changes` as soon
/// as its id exists (before any agent runs), once.
#[test]
fn a_build_writes_its_start_marker_before_any_agent_runs() {
    let h = Harness::new();
    h.happy().answer("component-builder", "exit 3\n");
    let o = h.build("add a feature file").unwrap();
    let id = id_of(&o);
    let active = memory(&h, "activeContext.md");
    let marker = format!("[BUILD-START: wf:{id}]");
    assert_eq!(active.matches(&marker).count(), 1, "{active}");
}

/// seed 001:695, the second threshold: the review found one defect pattern in three files; once
/// fixed and verified, the BUILD leaves `docs/solutions/build/ID.md`, and memory's learnings
/// name it. A pattern in two files leaves none.
#[test]
fn one_defect_pattern_in_three_files_leaves_a_solution_doc() {
    let review = |files: &[&str]| {
        let mut text = String::from(
            "CONTRACT {\"s\":\"CHANGES_REQUESTED\",\"b\":true,\"cr\":0}\n## Review: Changes Requested\n\n### High Issues\n",
        );
        for (n, f) in files.iter().enumerate() {
            text.push_str(&format!("- [85] {f}:{} a write error is ignored\n", n + 1));
        }
        text.push_str("\nREMEDIATION_NEEDED: true\nREMEDIATION_REASON: write errors are ignored\nREMEDIATION_SCOPE_REQUESTED: ALL_ISSUES\n");
        text
    };
    for (files, expected) in [
        (&["src/a.rs", "src/b.rs", "src/c.rs"][..], true),
        (&["src/a.rs", "src/b.rs"][..], false),
    ] {
        let h = Harness::new();
        h.happy().answer_nth("code-reviewer", 1, &review(files));
        let o = h.build("add a feature file").unwrap();
        let Outcome::Completed { id, .. } = &o else {
            panic!("{o:?}")
        };
        let cwd = &h.env.delegate.cwd;
        let doc = cwd.join(format!("docs/solutions/build/{id}.md"));
        assert_eq!(doc.exists(), expected, "{files:?}");
        if !expected {
            continue;
        }
        let text = std::fs::read_to_string(&doc).unwrap();
        assert!(
            text.contains(
                "one defect pattern found in 3 files.\n\n## Problem\na write error is ignored\n"
            ),
            "{text}"
        );
        for place in ["src/a.rs:1", "src/b.rs:2", "src/c.rs:3"] {
            assert!(text.contains(&format!("- {place}\n")), "{text}");
        }
        assert!(text.contains("## Solution\n- "), "{text}");
        assert!(text.contains("## Why\n- `"), "{text}");
        let active = std::fs::read_to_string(cwd.join(".baton/memory/activeContext.md")).unwrap();
        assert!(
            active.contains(&format!(
                "Solution doc for {id}: docs/solutions/build/{id}.md"
            )),
            "{active}"
        );
    }
}
