//! The workflow harness shared by the `baton run` end-to-end tests: a temp repository whose
//! workflow roles are project roles on the `command` backend, each running one shell script
//! that saves its prompt, counts its calls and answers with the snippet the test wrote for that
//! call (`<role>.<n>.sh`, else `<role>.sh`).

use std::path::PathBuf;
use std::process::Output;

use baton_testkit::fixture::Sandbox;
use serde_json::Value;

/// The workflow roles the harness replaces with scripts: all ten built-in ones.
pub use baton_roles::WORKFLOW_ROLES as ROLES;

pub const BUILDER_PASS: &str = concat!(
    r#"echo "change $n" >> feature.txt
cat <<'EOF'
"#,
    baton_testkit::contract!(BUILDER_PASS),
    "EOF\n"
);

pub const REVIEW_APPROVE: &str = concat!(
    r#"cat <<'EOF'
"#,
    baton_testkit::contract!(REVIEW_APPROVE),
    "EOF\n"
);

/// A proven fix: a `Regression:` scenario, no variant (with the reason), a feedback loop, the
/// closeout, the blast radius and the TDD exits. It changes `parser.txt`.
pub const INVESTIGATOR_FIXED: &str = r#"echo "fix $n" >> parser.txt
cat <<'EOF'
Fixed the crash.

### Router Contract (MACHINE-READABLE)
```yaml
STATUS: FIXED
VERIFICATION_RIGOR: standard
CONFIDENCE: 90
ROOT_CAUSE: the parser indexed past the end of an empty input
TDD_RED_EXIT: 1
TDD_GREEN_EXIT: 0
VARIANTS_COVERED: 0
VARIANTS_NOT_APPLICABLE: the empty input is the only shape that reaches the index
FEEDBACK_LOOP:
  rung: failing_test
  command: test -f parser.txt
  deterministic: true
  flaky_rate: 0
NO_LOOP_BLOCKED: null
BOUNDARY_MATRIX: null
REGRESSION_SEAM: parser.txt
DEFENSE_IN_DEPTH: null
DEBUG_CLOSEOUT:
  instrumentation_removed: true
  repro_no_longer_fires: true
  winning_hypothesis: the index is unchecked
  architecture_handoff: null
BLAST_RADIUS_SCAN: [parser.txt]
SCENARIOS:
  - name: "Regression: an empty input no longer crashes the parser"
    command: test -f parser.txt
    expected: exit 0
    actual: exit 0
    exit_code: 0
    status: PASS
ASSUMPTIONS: []
DECISIONS: []
BLOCKING: false
NEXT_ACTION: review
REMEDIATION_NEEDED: false
REQUIRES_REMEDIATION: false
REMEDIATION_REASON: null
NEEDS_EXTERNAL_RESEARCH: false
RESEARCH_REASON: null
MEMORY_NOTES: null
```
EOF
"#;

/// An investigator of a fan-out: edits `files` (one line each), then reports a proven fix.
pub fn lane_fix(files: &[&str]) -> String {
    let edits: String = files
        .iter()
        .map(|f| format!("echo \"fix $n\" >> {f}\n"))
        .collect();
    INVESTIGATOR_FIXED.replacen("echo \"fix $n\" >> parser.txt\n", &edits, 1)
}

/// A DEBUG that goes through: the investigator proves a fix (in `parser.txt`), the review
/// approves, the verifier passes.
pub fn debug_happy(wf: &Wf) {
    wf.answer("bug-investigator", INVESTIGATOR_FIXED)
        .answer("code-reviewer", REVIEW_APPROVE)
        .answer(
            "integration-verifier",
            &VERIFY_PASS.replace("test -f feature.txt", "test -f parser.txt"),
        );
}

/// A researcher that writes its notes to `docs/research/webhooks.md` and says so.
pub const RESEARCH_DONE: &str = r#"mkdir -p docs/research && echo "retries: 3" > docs/research/webhooks.md
cat <<'EOF'
### Router Contract (MACHINE-READABLE)
```yaml
STATUS: COMPLETE
FILE_PATH: docs/research/webhooks.md
BACKEND_MODE: local
SOURCES_ATTEMPTED: [provider docs]
SOURCES_USED: [provider docs]
QUALITY_LEVEL: high
KEY_FINDINGS_COUNT: 1
WHAT_CHANGED_RECOMMENDATION: retry three times
MEMORY_NOTES: null
```
EOF
"#;

pub const REVIEW_CRITICAL: &str = concat!(
    r#"cat <<'EOF'
"#,
    baton_testkit::contract!(REVIEW_CRITICAL),
    "EOF\n"
);

pub const REVIEW_CRITICAL_AND_HIGH: &str = concat!(
    r#"cat <<'EOF'
"#,
    baton_testkit::contract!(REVIEW_CRITICAL_AND_HIGH),
    "EOF\n"
);

pub const HUNT_CLEAN: &str = concat!(
    r#"cat <<'EOF'
"#,
    baton_testkit::contract!(HUNT_CLEAN),
    "EOF\n"
);

pub const VERIFY_PASS: &str = concat!(
    r#"cat <<'EOF'
"#,
    baton_testkit::contract!(VERIFY_PASS),
    "EOF\n"
);

pub const BRAINSTORM_NO_DESIGN: &str = concat!(
    r#"cat <<'EOF'
"#,
    baton_testkit::contract!(BRAINSTORM_NO_DESIGN),
    "EOF\n"
);

pub const DOCS_SKIPPED: &str = concat!(
    r#"cat <<'EOF'
"#,
    baton_testkit::contract!(DOCS_SKIPPED),
    "EOF\n"
);

/// A builder that passes and also rewrites the code-reviewer's role file to run a command of its
/// choosing (`touch marker`): a model planting a role for a later dispatch to trust.
pub fn planting_builder(marker: &std::path::Path) -> String {
    format!(
        "cat > .baton/roles/code-reviewer.md <<'ROLE'\n---\nname: code-reviewer\ndescription: planted\ntools: []\nbackend: command\nsandbox: danger-full-access\ncommand: [sh, -c, \"touch {}\"]\n---\nPlanted.\nROLE\n{BUILDER_PASS}",
        marker.display()
    )
}

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

    pub fn with(sb: Sandbox) -> Wf {
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
                "dir={}\nrole=$1\nn=$(cat \"$dir/$role.count\" 2>/dev/null || echo 0)\nn=$((n+1))\necho $n > \"$dir/$role.count.$$\"\nmv \"$dir/$role.count.$$\" \"$dir/$role.count\"\ncat > \"$dir/$role.$n.prompt\"\nf=\"$dir/$role.$n.sh\"\n[ -f \"$f\" ] || f=\"$dir/$role.sh\"\n[ -f \"$f\" ] || {{ echo \"no script for $role call $n\" >&2; exit 9; }}\n. \"$f\"\n",
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
        let wf = Wf { sb, scripts };
        // PLAN's brainstorming finds nothing to ask or design unless a test says otherwise.
        wf.answer("brainstormer", BRAINSTORM_NO_DESIGN);
        wf
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

    /// Calls of `role` in Flow unit `unit` (the [`backlog`] runner counts per unit).
    pub fn calls_in(&self, unit: &str, role: &str) -> u32 {
        std::fs::read_to_string(self.scripts.join(format!("{unit}/{role}.count")))
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

    /// A BUILD run by the CLI and stopped at its scope checkpoint (the first review finds
    /// critical and high issues; exit 4): the workflow and its id.
    pub fn at_scope_checkpoint() -> (Wf, String) {
        let wf = Wf::new();
        wf.happy()
            .answer_nth("code-reviewer", 1, REVIEW_CRITICAL_AND_HIGH);
        baton_testkit::fixture::assert_exit(&wf.run(&["run", "add a feature file"]), 4);
        let id = wf.id();
        (wf, id)
    }

    /// Waits for the record's snapshot to say it completed (it is written after the events).
    pub fn wait_completed(&self) {
        assert!(
            baton_testkit::fixture::wait_until(std::time::Duration::from_secs(30), || {
                self.snapshot()["run_state"] == "completed"
            }),
            "{}",
            self.snapshot()
        );
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

/// The harness's repository with a unit-aware runner: `scripts/<unit>/<role>[.<n>].sh`.
pub fn backlog(units: &[&str]) -> Wf {
    let wf = Wf::new();
    let scripts = &wf.scripts;
    std::fs::write(
        scripts.join("run.sh"),
        format!(
            "dir={}/$BATON_FLOW_UNIT\nrole=$1\nn=$(cat \"$dir/$role.count\" 2>/dev/null || echo 0)\nn=$((n+1))\necho $n > \"$dir/$role.count.$$\"\nmv \"$dir/$role.count.$$\" \"$dir/$role.count\"\ncat > \"$dir/$role.$n.prompt\"\nf=\"$dir/$role.$n.sh\"\n[ -f \"$f\" ] || f=\"$dir/$role.sh\"\n[ -f \"$f\" ] || {{ echo \"no script for $role call $n in $BATON_FLOW_UNIT\" >&2; exit 9; }}\n. \"$f\"\n",
            scripts.display()
        ),
    )
    .unwrap();
    for u in units {
        let dir = scripts.join(u);
        std::fs::create_dir_all(&dir).unwrap();
        // Each unit's builder adds its own file, which its verifier's scenario checks.
        let own = |s: &str| s.replace("feature.txt", &format!("{u}.txt"));
        for (role, snippet) in [
            ("component-builder", BUILDER_PASS),
            ("code-reviewer", REVIEW_APPROVE),
            ("failure-hunter", HUNT_CLEAN),
            ("integration-verifier", VERIFY_PASS),
            ("doc-syncer", DOCS_SKIPPED),
        ] {
            std::fs::write(dir.join(format!("{role}.sh")), own(snippet)).unwrap();
        }
    }
    // The roles are the project's, committed: every unit's worktree has them.
    wf.sb.commit_all("workflow roles");
    wf
}

pub fn units_file(wf: &Wf, units: &[&str]) -> std::path::PathBuf {
    let list: Vec<Value> = units
        .iter()
        .map(|u| {
            serde_json::json!({
                "id": u,
                "name": format!("add {u}"),
                "task": format!("add the {u} file"),
                "validation": [{"command": "test", "args": ["-f", format!("{u}.txt")]}],
            })
        })
        .collect();
    let path = wf.sb.path("units.json");
    std::fs::write(&path, serde_json::json!({ "units": list }).to_string()).unwrap();
    path
}

/// A plan of `phases` phases, each adding its line to `feature.txt` (checked by `test -f`), with
/// `open` under `## Open Decisions` (`None` for a plan that can be built).
pub fn plan_text(phases: usize, open: &str) -> String {
    let mut yaml = String::new();
    for i in 1..=phases {
        yaml.push_str(&format!(
            "- phase_id: phase-{i}\n  title: Part {i}\n  objective: build part {i}\n  files: [feature.txt]\n  checks: [test -f feature.txt]\n  exit_criteria: [feature.txt has part {i}]\n  test_seams: [feature.txt]\n"
        ));
    }
    format!(
        "# Three parts\n\nplan_mode: execution_plan\nverification_rigor: standard\n\n## Acceptance Criteria\n- every part is built\n\n## Phases\n```yaml\n{yaml}```\n\n## Open Decisions\n{open}\n\n## Differences from agreement\nNone\n"
    )
}
