//! The clean baseline of a BUILD (cc10x build preparation 0b and 0c): which dependency install
//! and which test command a tree needs, and which tests a test run's output says failed — so
//! that a test already failing before the build is listed as pre-existing, not blamed on it.
//! Pure: the runner runs the commands.

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// How the dependency install came out (`results.deps`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Deps {
    /// `installed`, `install_failed`, `no_manifest`, `skipped` (in place: the tree's
    /// dependencies are the user's) or `off` (`workflow.install = "off"`).
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The test run before the first builder (`results.baseline`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    /// `recorded`, or `unavailable` (no test command, the suite did not run, or it failed with
    /// no failing test readable from its output): every failure is then suspect.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Tests seen in the output (passed and failed), when it counts them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<usize>,
    /// The tests already failing, by id.
    #[serde(default)]
    pub failures: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Baseline {
    pub fn unavailable(command: Option<&str>, reason: &str) -> Baseline {
        Baseline {
            status: "unavailable".into(),
            command: command.map(str::to_string),
            reason: Some(reason.to_string()),
            ..Baseline::default()
        }
    }

    pub fn is_recorded(&self) -> bool {
        self.status == "recorded"
    }

    /// The baseline from one run of the suite.
    pub fn from_run(command: &str, exit_code: Option<i32>, output: &str) -> Baseline {
        let run = read_run(output);
        if exit_code != Some(0) && run.failed.is_empty() {
            let how = exit_code.map_or("did not finish".to_string(), |c| format!("exits {c}"));
            return Baseline {
                exit_code,
                ..Baseline::unavailable(
                    Some(command),
                    &format!(
                        "the suite {how} and no failing test can be read from its output (libtest, pytest, go test, TAP and jest forms are read)"
                    ),
                )
            };
        }
        Baseline {
            status: "recorded".into(),
            command: Some(command.to_string()),
            exit_code,
            total: (run.passed + run.failed.len() > 0).then_some(run.passed + run.failed.len()),
            failures: run.failed.into_iter().collect(),
            reason: None,
        }
    }
}

/// What a test run's output says.
#[derive(Debug, Default, PartialEq)]
pub struct TestRun {
    pub passed: usize,
    pub failed: BTreeSet<String>,
}

/// Reads the tests a run passed and failed from its output, in the forms of libtest
/// (`test a::b ... FAILED`), pytest (`FAILED tests/x.py::t - …`, `x.py::t PASSED`), go test
/// (`--- FAIL: TestX`), TAP and `node --test` (`not ok 3 - name`) and jest (`✕ name`).
pub fn read_run(output: &str) -> TestRun {
    let mut run = TestRun::default();
    for line in output.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("test ") {
            if let Some((name, verdict)) = rest.rsplit_once(" ... ") {
                match verdict.trim() {
                    "ok" => run.passed += 1,
                    v if v.starts_with("FAILED") => {
                        run.failed.insert(name.trim().to_string());
                    }
                    _ => {}
                }
                continue;
            }
        }
        if let Some(rest) = t.strip_prefix("FAILED ") {
            let id = rest.split(" - ").next().unwrap_or(rest).trim();
            if id.contains("::") {
                run.failed.insert(id.to_string());
                continue;
            }
        }
        if t.ends_with(" PASSED") && t.contains("::") {
            run.passed += 1;
            continue;
        }
        if let Some(rest) = t.strip_prefix("--- FAIL: ") {
            run.failed
                .insert(rest.split_whitespace().next().unwrap_or(rest).to_string());
            continue;
        }
        if t.starts_with("--- PASS: ") {
            run.passed += 1;
            continue;
        }
        if let Some(rest) = t.strip_prefix("not ok ") {
            let name = rest
                .split_once(" - ")
                .map_or(rest, |(_, n)| n)
                .split(" # ")
                .next()
                .unwrap_or(rest)
                .trim();
            run.failed.insert(name.to_string());
            continue;
        }
        if t.starts_with("ok ") && t[3..].starts_with(|c: char| c.is_ascii_digit()) {
            run.passed += 1;
            continue;
        }
        if let Some(rest) = t.strip_prefix("✕ ").or_else(|| t.strip_prefix("× ")) {
            let name = rest.rsplit_once(" (").map_or(rest, |(n, _)| n).trim();
            run.failed.insert(name.to_string());
            continue;
        }
        if t.starts_with("✓ ") || t.starts_with("√ ") {
            run.passed += 1;
        }
    }
    run
}

/// The failures of a later run that the baseline does not hold: the new ones.
pub fn new_failures(baseline: &Baseline, now: &TestRun) -> Vec<String> {
    now.failed
        .iter()
        .filter(|f| !baseline.failures.contains(f))
        .cloned()
        .collect()
}

/// The dependency install a fresh tree at `dir` needs, by the lockfile or manifest at its root:
/// `None` when it has none baton knows.
pub fn detect_install(dir: &Path) -> Option<&'static str> {
    let has = |f: &str| dir.join(f).is_file();
    Some(if has("pnpm-lock.yaml") {
        "pnpm install --frozen-lockfile"
    } else if has("yarn.lock") {
        "yarn install --frozen-lockfile"
    } else if has("package-lock.json") {
        "npm ci"
    } else if has("package.json") {
        "npm install"
    } else if has("Cargo.toml") {
        "cargo fetch"
    } else if has("uv.lock") {
        "uv sync"
    } else if has("poetry.lock") {
        "poetry install"
    } else if has("requirements.txt") {
        "pip install -r requirements.txt"
    } else if has("go.mod") {
        "go mod download"
    } else {
        return None;
    })
}

/// The test command of the tree at `dir`: `None` when it has no manifest baton knows.
pub fn detect_test_command(dir: &Path) -> Option<&'static str> {
    let has = |f: &str| dir.join(f).is_file();
    if has("Cargo.toml") {
        return Some("cargo test");
    }
    if has("package.json") {
        let text = std::fs::read_to_string(dir.join("package.json")).unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        let script = v["scripts"]["test"].as_str().unwrap_or("");
        // npm's placeholder `echo "Error: no test specified" && exit 1` is no suite.
        return (!script.is_empty() && !script.contains("no test specified")).then_some("npm test");
    }
    if has("go.mod") {
        return Some("go test ./...");
    }
    if has("pytest.ini") || has("pyproject.toml") || has("setup.cfg") || has("tox.ini") {
        return Some("python3 -m pytest -q -rf");
    }
    let make = std::fs::read_to_string(dir.join("Makefile")).unwrap_or_default();
    make.lines()
        .any(|l| l.starts_with("test:"))
        .then_some("make test")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failing_tests_are_read_from_each_runner_s_output() {
        let libtest = "running 3 tests\ntest math::add ... ok\ntest math::div ... FAILED\ntest io::read ... ignored\n\ntest result: FAILED. 1 passed; 1 failed; 1 ignored\n";
        let r = read_run(libtest);
        assert_eq!(r.passed, 1);
        assert_eq!(r.failed, BTreeSet::from(["math::div".to_string()]));
        let pytest = "tests/test_a.py::test_ok PASSED\n=== short test summary info ===\nFAILED tests/test_a.py::test_div - ZeroDivisionError\n";
        let r = read_run(pytest);
        assert_eq!(r.passed, 1);
        assert_eq!(
            r.failed,
            BTreeSet::from(["tests/test_a.py::test_div".to_string()])
        );
        let go = "=== RUN   TestAdd\n--- PASS: TestAdd (0.00s)\n--- FAIL: TestDiv (0.00s)\nFAIL\n";
        assert_eq!(read_run(go).failed, BTreeSet::from(["TestDiv".to_string()]));
        let tap = "TAP version 13\nok 1 - adds\nnot ok 2 - divides # TODO\n";
        let r = read_run(tap);
        assert_eq!((r.passed, r.failed.len()), (1, 1));
        assert!(r.failed.contains("divides"));
        let jest = "  ✓ adds (3 ms)\n  ✕ divides (5 ms)\n";
        assert_eq!(
            read_run(jest).failed,
            BTreeSet::from(["divides".to_string()])
        );
    }

    #[test]
    fn a_baseline_keeps_the_failures_and_only_new_ones_count_later() {
        let b = Baseline::from_run(
            "cargo test",
            Some(101),
            "test a ... ok\ntest b ... FAILED\n",
        );
        assert!(b.is_recorded());
        assert_eq!(b.failures, ["b"]);
        assert_eq!(b.total, Some(2));
        let later = read_run("test a ... FAILED\ntest b ... FAILED\ntest c ... ok\n");
        assert_eq!(new_failures(&b, &later), ["a"]);
        // A red suite whose failures cannot be read is no baseline.
        let u = Baseline::from_run("make test", Some(2), "make: *** [test] Error 2\n");
        assert!(!u.is_recorded());
        assert!(u.reason.unwrap().contains("exits 2"));
        assert!(Baseline::from_run("true", Some(0), "").is_recorded());
    }

    #[test]
    fn the_install_and_test_command_follow_the_tree_s_files() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(detect_install(d.path()), None);
        assert_eq!(detect_test_command(d.path()), None);
        std::fs::write(
            d.path().join("package.json"),
            r#"{"scripts":{"test":"echo \"Error: no test specified\" && exit 1"}}"#,
        )
        .unwrap();
        assert_eq!(detect_test_command(d.path()), None);
        std::fs::write(
            d.path().join("package.json"),
            r#"{"scripts":{"test":"node --test"}}"#,
        )
        .unwrap();
        std::fs::write(d.path().join("package-lock.json"), "{}").unwrap();
        assert_eq!(detect_install(d.path()), Some("npm ci"));
        let py = tempfile::tempdir().unwrap();
        std::fs::write(py.path().join("requirements.txt"), "requests\n").unwrap();
        assert_eq!(
            detect_install(py.path()),
            Some("pip install -r requirements.txt")
        );
        std::fs::write(py.path().join("poetry.lock"), "").unwrap();
        assert_eq!(detect_install(py.path()), Some("poetry install"));
        assert_eq!(detect_test_command(d.path()), Some("npm test"));
    }
}
