//! The workflow harness shared by the `baton run` end-to-end tests: a temp repository whose
//! workflow roles are project roles on the `command` backend, each running one shell script
//! that saves its prompt, counts its calls and answers with the snippet the test wrote for that
//! call (`<role>.<n>.sh`, else `<role>.sh`).

use std::path::PathBuf;
use std::process::Output;

use baton_testkit::fixture::Sandbox;
use serde_json::Value;

/// The workflow roles the harness replaces with scripts: all nine built-in ones.
pub use baton_roles::WORKFLOW_ROLES as ROLES;

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

/// The text a snippet's `cat <<'EOF'` prints: the contract itself, for tests whose agents say it
/// some other way (a mock model's answer).
pub fn said(snippet: &'static str) -> &'static str {
    let start = snippet
        .find("cat <<'EOF'\n")
        .map_or(0, |i| i + "cat <<'EOF'\n".len());
    let end = snippet.rfind("EOF\n").unwrap_or(snippet.len());
    &snippet[start..end]
}

/// A repository whose workflow roles are the test's scripts.
pub struct Wf {
    pub sb: Sandbox,
    pub scripts: PathBuf,
}

impl Wf {
    pub fn new() -> Wf {
        Wf::with(Sandbox::new())
    }

    /// The same, in a temp folder under `dir` where possible (the fault test uses `/dev/shm`).
    pub fn new_in(dir: &std::path::Path) -> Wf {
        Wf::with(Sandbox::new_in(dir))
    }

    fn with(sb: Sandbox) -> Wf {
        let sb = sb.baton_exe(env!("CARGO_BIN_EXE_baton"));
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
                    "---\nname: {role}\ndescription: test script\ntools: []\nbackend: command\nsandbox: danger-full-access\ncommand: [sh, {}, {role}]\n---\nAnswer.\n",
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

pub fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
