//! The role answers the workflow tests script: a cc10x router contract or review envelope per
//! name, as string literals so both the in-process runner harness (baton-workflow) and the
//! binary's e2e scripts (baton-cli, wrapping them in `cat <<'EOF'`) can build constants from them.

/// The text of one scripted role answer: `contract!(BUILDER_PASS)`, `contract!(REVIEW_APPROVE)`,
/// `contract!(REVIEW_CRITICAL)`, `contract!(REVIEW_CRITICAL_AND_HIGH)`, `contract!(HUNT_CLEAN)`,
/// `contract!(VERIFY_PASS)`, `contract!(DOCS_SKIPPED)`, `contract!(BRAINSTORM_NO_DESIGN)`.
#[macro_export]
macro_rules! contract {
    (BUILDER_PASS) => {
        r#"Added the feature.

### Router Contract (MACHINE-READABLE)
```yaml
STATUS: PASS
CONFIDENCE: 85
PHASE_ID: phase-1
PHASE_STATUS: completed
PHASE_EXIT_READY: true
CHECKPOINT_TYPE: none
PROOF_STATUS: passed
BUILD_PREFLIGHT_EMITTED: true
INPUTS: []
EXPECTED_ARTIFACTS: [feature.txt]
TDD_RED_EXIT: 1
TDD_RED_REASON_KIND: behavioral
TDD_RED_REASON: the feature test failed before the change
TDD_GREEN_EXIT: 0
TEST_SEAMS: [feature.txt, part1::run, part2::run, part3::run]
SEAM_GATE_STATUS: confirmed
SCENARIOS:
  - name: feature works
    command: test -s feature.txt
    expected: exit 0
    actual: exit 0
    exit_code: 0
    status: PASS
ASSUMPTIONS: []
DECISIONS: []
BLOCKED_ITEMS: []
SKIPPED_ITEMS: []
SCOPE_INCREASES: []
BLOCKING: false
NEXT_ACTION: review
REMEDIATION_NEEDED: false
REQUIRES_REMEDIATION: false
REMEDIATION_REASON: null
MEMORY_NOTES: null
```
"#
    };
    (REVIEW_APPROVE) => {
        r#"CONTRACT {"s":"APPROVE","b":false,"cr":0}
## Review: Approve

### Critical Issues
- none

### Checked
- src/feature.rs:1 the line is there
- src/feature.rs:2 no stray output
- src/main.rs:1 unchanged
"#
    };
    (REVIEW_CRITICAL) => {
        r#"CONTRACT {"s":"CHANGES_REQUESTED","b":true,"cr":1}
## Review: Changes Requested

### Critical Issues
- [90] feature.txt:1 the feature is never wired in

REMEDIATION_NEEDED: true
REMEDIATION_REASON: the feature is never wired in
REMEDIATION_SCOPE_REQUESTED: ALL_ISSUES
"#
    };
    (REVIEW_CRITICAL_AND_HIGH) => {
        r#"CONTRACT {"s":"CHANGES_REQUESTED","b":true,"cr":1}
## Review: Changes Requested

### Critical Issues
- [90] feature.txt:1 the feature is never wired in

### High Issues
- [80] feature.txt:2 errors are swallowed

REMEDIATION_NEEDED: true
REMEDIATION_REASON: wire the feature in
REMEDIATION_SCOPE_REQUESTED: ALL_ISSUES
"#
    };
    (HUNT_CLEAN) => {
        r#"CONTRACT {"s":"CLEAN","b":false,"cr":0}
## Error Handling Audit: Clean

### Critical Issues
- none

SCOPE: feature.txt
FILES_SCANNED: 1
ERROR_HANDLING_SITES_INSPECTED: 2
REMEDIATION_NEEDED: false
REMEDIATION_SCOPE_REQUESTED: N/A
"#
    };
    (VERIFY_PASS) => {
        r#"CONTRACT {"s":"PASS","b":false,"cr":0}
## Verification: PASS

### Router Contract
```yaml
SCENARIOS_TOTAL: 1
SCENARIOS_PASSED: 1
SCENARIOS_FAILED: 0
SCENARIO_ROWS:
  - name: feature file exists
    command: test -f feature.txt
    expected: exit 0
    actual: exit 0
    exit_code: 0
    status: PASS
EVIDENCE:
  scenarios:
    - "feature file exists | test -f feature.txt -> exit 0"
REMEDIATION_NEEDED: false
REVERT_RECOMMENDED: false
```
"#
    };
    (DOCS_SKIPPED) => {
        r#"### Router Contract (MACHINE-READABLE)
```yaml
STATUS: SKIPPED
IMPACT_LEVEL: none
DOC_LAYERS_EVALUATED: [README]
DOC_FILES_UPDATED: []
DOC_FILES_SKIPPED: [README]
SKIP_REASON: no user-facing change
AUDIT_DOCS_CREATED: []
AUDIT_DOCS_UPDATED: []
MEMORY_NOTES: null
```
"#
    };
    (BRAINSTORM_NO_DESIGN) => {
        r#"The request is clear and small enough to plan directly.

### Router Contract (MACHINE-READABLE)
```yaml
STATUS: NO_DESIGN
DESIGN_FILE: null
DESIGN_SUMMARY: null
QUESTIONS: []
RESEARCH_TOPICS: []
MEMORY_NOTES: null
```
"#
    };
}

/// The phases a full BUILD dispatches, in order; the reviewer and the hunter run together, so
/// they stand sorted.
pub const FULL_BUILD: [&str; 5] = [
    "build-implement",
    "build-hunt",
    "build-review",
    "build-verify",
    "build-doc-sync",
];

/// Asserts that `dispatched` (the phases in dispatch order) is one full BUILD: the reviewer and
/// the hunter in either order.
pub fn assert_full_build(mut dispatched: Vec<String>) {
    if dispatched.len() >= 3 {
        dispatched[1..3].sort();
    }
    assert_eq!(dispatched, FULL_BUILD, "the phases dispatched");
}
