//! The conversion's own rules: findings both agents raise at one line count once, what proves a
//! remediation, how good a research round was. The built-in roles' examples as the engine reads
//! them are tested in `engine/contract_tests.rs`, which borrows the helpers here.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use pretty_assertions::assert_eq;

use super::*;
use crate::contract::{self, Checked, Role};

/// The example contract a built-in role's prompt shows, as the dispatch test reads it.
pub(crate) fn example(role: Role) -> String {
    let spec = baton_roles::builtin_roles()
        .unwrap()
        .into_iter()
        .find(|s| s.name() == role.name())
        .unwrap_or_else(|| panic!("no built-in role {role}"));
    if role.is_read_only() {
        let at = spec.body.find("CONTRACT {").unwrap();
        spec.body[at..].to_string()
    } else {
        spec.body
    }
}

pub(crate) fn parsed(role: Role, output: &str) -> Checked {
    contract::parse(role, output).unwrap_or_else(|e| panic!("{role}: {e}"))
}

pub(crate) fn checked(role: Role) -> Checked {
    parsed(role, &example(role))
}

const REVIEW_A10: &str = "CONTRACT {\"s\":\"CHANGES_REQUESTED\",\"b\":true,\"cr\":1}
## Review: Changes Requested

### Critical Issues
- src/a.rs:10 the write error is dropped

### High Issues
- src/b.rs:3 the retry never gives up
";

fn hunt(location: &str, cr: u32) -> String {
    format!(
        "CONTRACT {{\"s\":\"ISSUES_FOUND\",\"b\":true,\"cr\":{cr}}}
## Error Handling Audit: Issues Found

### Critical Issues
- {location} the result of the write is discarded

FILES_SCANNED: 2
ERROR_HANDLING_SITES_INSPECTED: 5
"
    )
}

#[test]
fn a_critical_finding_both_raise_at_one_line_counts_once() {
    let review = parsed(Role::CodeReviewer, REVIEW_A10);
    let same = parsed(Role::FailureHunter, &hunt("src/a.rs:10", 1));
    let f = findings_from(Some(&review), Some(&same));
    assert_eq!(
        f,
        MergedFindings {
            critical_issues: 1,
            high_issues: 1,
            hunter_only_high: 0,
        }
    );
    let elsewhere = parsed(Role::FailureHunter, &hunt("src/c.rs:7", 1));
    assert_eq!(
        findings_from(Some(&review), Some(&elsewhere)).critical_issues,
        2
    );
    // Either side alone, and an envelope counting criticals it does not list.
    assert_eq!(findings_from(None, Some(&same)).critical_issues, 1);
    assert_eq!(findings_from(Some(&review), None).high_issues, 1);
    let unlisted = parsed(Role::FailureHunter, &hunt("src/a.rs:10", 3));
    assert_eq!(
        findings_from(Some(&review), Some(&unlisted)).critical_issues,
        3
    );
    assert_eq!(findings_from(None, None), MergedFindings::default());
}

#[test]
fn a_passing_builder_proves_its_remediation_and_one_without_scenarios_does_not() {
    let proof = remfix_proof(&checked(Role::ComponentBuilder));
    assert_eq!(
        proof,
        RemfixReport {
            covering_tests: vec!["empty input is refused".into()],
            test_command: Some("cargo test parser::empty".into()),
            test_output: Some("exit 0, 1 passed".into()),
        }
    );
    assert!(proof.is_proven());

    let builder = example(Role::ComponentBuilder);
    let start = builder.find("SCENARIOS:").unwrap();
    let end = builder.find("ASSUMPTIONS:").unwrap();
    let bare = format!("{}SCENARIOS: []\n{}", &builder[..start], &builder[end..]);
    let bare = parsed(Role::ComponentBuilder, &bare);
    assert!(!bare.advances());
    assert!(!remfix_proof(&bare).is_proven());

    // Seams, when given, are the covering tests; a failed fix proves nothing.
    let seams = builder.replace("TEST_SEAMS: []", "TEST_SEAMS: [parser::tests::empty]");
    let seams = remfix_proof(&parsed(Role::ComponentBuilder, &seams));
    assert_eq!(seams.covering_tests, ["parser::tests::empty"]);
    let failed = builder.replace("STATUS: PASS ", "STATUS: FAIL ");
    assert!(!remfix_proof(&parsed(Role::ComponentBuilder, &failed)).is_proven());
    assert_eq!(
        remfix_proof(&checked(Role::CodeReviewer)),
        RemfixReport::default()
    );
}

#[test]
fn research_of_both_backends_takes_the_best_usable_quality() {
    let web = example(Role::Researcher);
    let github = web
        .replace("KEY_FINDINGS_COUNT: 3", "IMPLEMENTATIONS_FOUND: 2")
        .replace("QUALITY_LEVEL: high", "QUALITY_LEVEL: medium");
    let github = parsed(Role::Researcher, &github);
    assert_eq!(
        from_contract(&github)
            .research
            .unwrap()
            .github_status
            .as_deref(),
        Some("COMPLETE")
    );
    let unavailable = web
        .replace("STATUS: COMPLETE", "STATUS: UNAVAILABLE")
        .replace("QUALITY_LEVEL: high", "QUALITY_LEVEL: low");
    let unavailable = parsed(Role::Researcher, &unavailable);
    let both = research_from(Some(&unavailable), Some(&github));
    assert_eq!(
        both,
        ResearchOutcome {
            web_status: Some("UNAVAILABLE".into()),
            github_status: Some("COMPLETE".into()),
            overall_quality: Some("medium".into()),
        }
    );
    assert_eq!(
        research_from(Some(&unavailable), None)
            .overall_quality
            .as_deref(),
        Some("none")
    );
    assert_eq!(research_from(None, None), ResearchOutcome::default());
}
