//! `baton run` / `baton resume` end to end: the real binary in a temp repository, with the nine
//! workflow roles overridden by project roles on the `command` backend. Each role runs one shell
//! script that saves its prompt, counts its calls and answers with the snippet the test wrote for
//! that call (`<role>.<n>.sh`, else `<role>.sh`). Nothing waits on time.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::new_without_default)]

use std::path::PathBuf;
use std::process::Output;

use baton_testkit::fixture::{assert_exit, Sandbox};
use serde_json::Value;

const ROLES: [&str; 9] = [
    "component-builder",
    "bug-investigator",
    "code-reviewer",
    "failure-hunter",
    "integration-verifier",
    "planner",
    "plan-gap-reviewer",
    "doc-syncer",
    "researcher",
];

pub const BUILDER_PASS: &str = r#"echo "change $n" >> feature.txt
cat <<'EOF'
Added the feature.

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
TEST_SEAMS: []
SEAM_GATE_STATUS: not_applicable
SCENARIOS:
  - name: feature works
    command: test -f feature.txt
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
EOF
"#;

pub const REVIEW_APPROVE: &str = r#"cat <<'EOF'
CONTRACT {"s":"APPROVE","b":false,"cr":0}
## Review: Approve

### Critical Issues
- none

### Checked
- src/feature.rs:1 the line is there
- src/feature.rs:2 no stray output
- src/main.rs:1 unchanged
EOF
"#;

pub const REVIEW_CRITICAL: &str = r#"cat <<'EOF'
CONTRACT {"s":"CHANGES_REQUESTED","b":true,"cr":1}
## Review: Changes Requested

### Critical Issues
- [90] feature.txt:1 the feature is never wired in

REMEDIATION_NEEDED: true
REMEDIATION_REASON: the feature is never wired in
REMEDIATION_SCOPE_REQUESTED: ALL_ISSUES
EOF
"#;

pub const REVIEW_CRITICAL_AND_HIGH: &str = r#"cat <<'EOF'
CONTRACT {"s":"CHANGES_REQUESTED","b":true,"cr":1}
## Review: Changes Requested

### Critical Issues
- [90] feature.txt:1 the feature is never wired in

### High Issues
- [80] feature.txt:2 errors are swallowed

REMEDIATION_NEEDED: true
REMEDIATION_REASON: wire the feature in
REMEDIATION_SCOPE_REQUESTED: ALL_ISSUES
EOF
"#;

pub const HUNT_CLEAN: &str = r#"cat <<'EOF'
CONTRACT {"s":"CLEAN","b":false,"cr":0}
## Error Handling Audit: Clean

### Critical Issues
- none

SCOPE: feature.txt
FILES_SCANNED: 1
ERROR_HANDLING_SITES_INSPECTED: 2
REMEDIATION_NEEDED: false
REMEDIATION_SCOPE_REQUESTED: N/A
EOF
"#;

pub const VERIFY_PASS: &str = r#"cat <<'EOF'
CONTRACT {"s":"PASS","b":false,"cr":0}
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
EOF
"#;

pub const DOCS_SKIPPED: &str = r#"cat <<'EOF'
### Router Contract (MACHINE-READABLE)
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
EOF
"#;

/// A repository whose workflow roles are the test's scripts.
pub struct Wf {
    pub sb: Sandbox,
    scripts: PathBuf,
}

impl Wf {
    pub fn new() -> Wf {
        let sb = Sandbox::new().baton_exe(env!("CARGO_BIN_EXE_baton"));
        sb.init_repo("main");
        sb.write("README", "hello\n");
        sb.commit_all("initial");
        let scripts = sb.path("scripts");
        std::fs::create_dir_all(&scripts).unwrap();
        let runner = scripts.join("run.sh");
        std::fs::write(
            &runner,
            format!(
                "dir={}\nrole=$1\nn=$(cat \"$dir/$role.count\" 2>/dev/null || echo 0)\nn=$((n+1))\necho $n > \"$dir/$role.count\"\ncat > \"$dir/$role.$n.prompt\"\nf=\"$dir/$role.$n.sh\"\n[ -f \"$f\" ] || f=\"$dir/$role.sh\"\n[ -f \"$f\" ] || {{ echo \"no script for $role call $n\" >&2; exit 9; }}\n. \"$f\"\n",
                scripts.display()
            ),
        )
        .unwrap();
        for role in ROLES {
            sb.write(
                format!(".baton/roles/{role}.md"),
                &format!(
                    "---\nname: {role}\ndescription: test script\ntools: []\nbackend: command\ncommand: [sh, {}, {role}]\n---\nAnswer.\n",
                    runner.display()
                ),
            );
        }
        Wf { sb, scripts }
    }

    /// What `role` answers on every call without a numbered snippet.
    pub fn answer(&self, role: &str, snippet: &str) -> &Self {
        std::fs::write(self.scripts.join(format!("{role}.sh")), snippet).unwrap();
        self
    }

    /// What `role` answers on call `n` (1-based).
    pub fn answer_nth(&self, role: &str, n: u32, snippet: &str) -> &Self {
        std::fs::write(self.scripts.join(format!("{role}.{n}.sh")), snippet).unwrap();
        self
    }

    pub fn calls(&self, role: &str) -> u32 {
        std::fs::read_to_string(self.scripts.join(format!("{role}.count")))
            .map(|s| s.trim().parse().unwrap())
            .unwrap_or(0)
    }

    pub fn prompt(&self, role: &str, n: u32) -> String {
        std::fs::read_to_string(self.scripts.join(format!("{role}.{n}.prompt"))).unwrap()
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.sb.run(args)
    }

    /// The one workflow's id.
    pub fn id(&self) -> String {
        let dir = self.sb.work().join(".baton/state/workflows");
        let mut ids: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| {
                let name = e.unwrap().file_name().into_string().unwrap();
                name.strip_suffix(".events.jsonl").map(str::to_string)
            })
            .collect();
        assert_eq!(ids.len(), 1, "{ids:?}");
        ids.pop().unwrap()
    }

    pub fn events(&self) -> Vec<Value> {
        let id = self.id();
        let text = std::fs::read_to_string(
            self.sb
                .work()
                .join(format!(".baton/state/workflows/{id}.events.jsonl")),
        )
        .unwrap();
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    pub fn snapshot(&self) -> Value {
        let id = self.id();
        let text = std::fs::read_to_string(
            self.sb
                .work()
                .join(format!(".baton/state/workflows/{id}.json")),
        )
        .unwrap();
        serde_json::from_str(&text).unwrap()
    }

    /// The phases dispatched, in order (`agent_started` events).
    pub fn dispatched(&self) -> Vec<String> {
        self.events()
            .iter()
            .filter(|e| e["event"] == "agent_started")
            .map(|e| e["phase"].as_str().unwrap().to_string())
            .collect()
    }

    pub fn happy(&self) -> &Self {
        self.answer("component-builder", BUILDER_PASS)
            .answer("code-reviewer", REVIEW_APPROVE)
            .answer("failure-hunter", HUNT_CLEAN)
            .answer("integration-verifier", VERIFY_PASS)
            .answer("doc-syncer", DOCS_SKIPPED)
    }
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_build_runs_the_full_graph_and_ends_verified() {
    let wf = Wf::new();
    wf.happy();
    let o = wf.run(&["run", "add a feature file"]);
    assert_exit(&o, 0);
    assert!(
        err(&o).starts_with("-> BUILD workflow (signals: add)"),
        "{}",
        err(&o)
    );
    let brief = out(&o);
    assert!(brief.contains("completed"), "{brief}");
    assert!(brief.contains("proof: passed"), "{brief}");
    let mut phases = wf.dispatched();
    // Reviewer and hunter run together; their order is whichever started first.
    phases[1..3].sort();
    assert_eq!(
        phases,
        [
            "build-implement",
            "build-hunt",
            "build-review",
            "build-verify",
            "build-doc-sync"
        ]
    );
    let snap = wf.snapshot();
    assert_eq!(snap["run_state"], "completed");
    assert_eq!(snap["proof_status"], "passed");
    assert_eq!(snap["quality"]["convergence_state"], "stable");
    assert!(snap["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["status"] == "completed"));
    // Memory was finalized.
    let progress = std::fs::read_to_string(wf.sb.work().join(".baton/memory/progress.md")).unwrap();
    assert!(progress.contains("add a feature file"), "{progress}");
    assert!(progress.contains("test -f feature.txt"), "{progress}");
    // The reviewer's prompt is the scaffold, without the memory summary.
    let review = wf.prompt("code-reviewer", 1);
    assert!(
        review.starts_with("## Task Context\n- Task ID: t2\n"),
        "{review}"
    );
    assert!(!review.contains("## Memory Summary"), "{review}");
    assert!(wf
        .prompt("component-builder", 1)
        .contains("## Memory Summary"));
}

#[test]
fn prose_without_a_contract_stops_the_workflow() {
    let wf = Wf::new();
    wf.happy().answer(
        "component-builder",
        "echo x >> feature.txt\necho 'Done, looks good, all tests pass.'\n",
    );
    let o = wf.run(&["run", "add a feature file"]);
    assert_exit(&o, 1);
    assert!(
        out(&o).contains("returned no valid contract"),
        "{}",
        out(&o)
    );
    assert_eq!(wf.dispatched(), ["build-implement"]);
    assert_eq!(wf.snapshot()["run_state"], "failed");
}

#[test]
fn a_prose_approval_does_not_advance_to_the_verifier() {
    let wf = Wf::new();
    wf.happy()
        .answer("code-reviewer", "echo 'Looks good to me, ship it.'\n");
    let o = wf.run(&["run", "add a feature file"]);
    assert_exit(&o, 1);
    assert_eq!(wf.calls("integration-verifier"), 0);
    assert!(out(&o).contains("code-reviewer"), "{}", out(&o));
}

#[test]
fn a_builder_pass_that_changed_nothing_is_not_believed() {
    let wf = Wf::new();
    wf.happy().answer(
        "component-builder",
        &BUILDER_PASS.replace("echo \"change $n\" >> feature.txt\n", ""),
    );
    let o = wf.run(&["run", "add a feature file"]);
    assert_exit(&o, 1);
    assert!(out(&o).contains("changed no file"), "{}", out(&o));
    assert_eq!(wf.calls("code-reviewer"), 0);
}

#[test]
fn remediation_stops_at_the_circuit_breaker_after_three_cycles() {
    let wf = Wf::new();
    wf.happy().answer("code-reviewer", REVIEW_CRITICAL);
    let o = wf.run(&["run", "add a feature file"]);
    assert_exit(&o, 4);
    let text = out(&o);
    assert!(text.contains("question:"), "{text}");
    assert!(text.contains("one more cycle | accept | abort"), "{text}");
    assert!(text.contains("remediation cycles: 3"), "{text}");
    let snap = wf.snapshot();
    assert_eq!(snap["pending_gate"], "circuit_breaker");
    assert_eq!(snap["remediation_history"].as_array().unwrap().len(), 3);
    // The builder ran once for the phase and once per cycle; the verifier never ran.
    assert_eq!(wf.calls("component-builder"), 4);
    assert_eq!(wf.calls("integration-verifier"), 0);
    // The remediation prompt says what to fix.
    assert!(wf
        .prompt("component-builder", 2)
        .contains("the feature is never wired in"));
    let id = wf.id();
    let o = wf.run(&["resume", &id, "--answer", "abort"]);
    assert_exit(&o, 1);
    assert_eq!(wf.snapshot()["run_state"], "stopped");
    let o = wf.run(&["resume", &id]);
    assert_exit(&o, 2);
}

#[test]
fn a_scope_checkpoint_is_answered_by_resume_and_the_workflow_completes() {
    let wf = Wf::new();
    wf.happy()
        .answer_nth("code-reviewer", 1, REVIEW_CRITICAL_AND_HIGH);
    let o = wf.run(&["run", "add a feature file"]);
    assert_exit(&o, 4);
    assert!(
        out(&o).contains("critical only | all issues | abort"),
        "{}",
        out(&o)
    );
    let id = wf.id();
    // A word that is no option is refused and changes nothing.
    let o = wf.run(&["resume", &id, "--answer", "whatever"]);
    assert_exit(&o, 2);
    assert!(
        err(&o).contains("critical only, all issues, abort"),
        "{}",
        err(&o)
    );
    let o = wf.run(&["resume", &id, "--answer", "Critical only, please"]);
    assert_exit(&o, 0);
    let events = wf.events();
    let answered: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "checkpoint_answered")
        .collect();
    assert_eq!(answered.len(), 1);
    assert_eq!(answered[0]["details"]["answer"], "Critical only, please");
    let snap = wf.snapshot();
    let remfix: Vec<&Value> = snap["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["kind"] == "remfix")
        .collect();
    assert_eq!(remfix.len(), 1);
    assert_eq!(remfix[0]["scope"], "CRITICAL_ONLY");
    let mut phases = wf.dispatched();
    phases[1..3].sort();
    phases[4..6].sort();
    assert_eq!(
        phases,
        [
            "build-implement",
            "build-hunt",
            "build-review",
            "build-implement",
            "re-hunt",
            "re-review",
            "build-verify",
            "build-doc-sync"
        ]
    );
    assert_eq!(snap["run_state"], "completed");
}

#[test]
fn review_is_advisory_and_never_runs_a_write_agent() {
    let wf = Wf::new();
    wf.happy().answer("code-reviewer", REVIEW_CRITICAL);
    let o = wf.run(&["run", "review the feature code"]);
    assert_exit(&o, 0);
    assert!(err(&o).starts_with("-> REVIEW workflow"), "{}", err(&o));
    assert!(out(&o).contains("changes requested"), "{}", out(&o));
    assert_eq!(wf.dispatched(), ["review-audit"]);
    assert_eq!(wf.calls("component-builder"), 0);
    let snap = wf.snapshot();
    assert!(snap["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["kind"] != "remfix"));
}

#[test]
fn orient_answers_inline_and_keeps_no_record() {
    let wf = Wf::new();
    wf.sb.write(
        ".baton/roles/scout.md",
        "---\nname: scout\ndescription: test\ntools: []\nbackend: command\ncommand: [sh, -c, \"cat >/dev/null; echo the parser lives in src/parse.rs\"]\n---\nAnswer.\n",
    );
    let o = wf.run(&["run", "help me understand the parser"]);
    assert_exit(&o, 0);
    assert!(err(&o).starts_with("-> ORIENT workflow"), "{}", err(&o));
    assert_eq!(out(&o).trim(), "the parser lives in src/parse.rs");
    assert!(!wf.sb.work().join(".baton/state/workflows").exists());
}

#[test]
fn a_reviewer_tier_below_the_floor_is_refused_before_anything_runs() {
    let wf = Wf::new();
    wf.happy();
    wf.sb.write(
        ".baton/config.toml",
        "[workflow.tiers]\ncode-reviewer = \"fast\"\n",
    );
    let o = wf.run(&["run", "add a feature file"]);
    assert_exit(&o, 2);
    assert!(err(&o).contains("code-reviewer"), "{}", err(&o));
    assert!(err(&o).contains("balanced"), "{}", err(&o));
    assert_eq!(wf.calls("component-builder"), 0);
    assert!(!wf.sb.work().join(".baton/state/workflows").exists());
}
