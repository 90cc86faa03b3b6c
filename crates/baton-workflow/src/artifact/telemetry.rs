//! The artifact's `telemetry`: timings, loop counts and the verifier's workload, kept for
//! measurement only.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Timing and loop counts. Informational: the engine never decides on them except to report
/// them, and never changes them except to count the loops it starts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Telemetry {
    /// `"true"`, `"false"` or `"unknown"` (cc10x writes a string).
    pub task_metrics_available: Option<String>,
    pub workflow_wall_clock_seconds: u64,
    pub agent_wall_clock_seconds: Map<String, Value>,
    pub loop_counts: LoopCounts,
    pub verifier: Map<String, Value>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Telemetry {
    /// Whether task timings were recorded (a string `true`, as cc10x writes it).
    pub fn metrics_available(&self) -> bool {
        self.task_metrics_available.as_deref() == Some("true")
    }

    /// One dispatch's wall-clock time, added to its role's under cc10x's short name
    /// (`builder`, `investigator`, `reviewer`, `hunter`, `verifier`, `planner`; other roles by
    /// their own); a verifier's dispatch is also one phase-exit proof run. Measured, never
    /// decided on: `task_metrics_available` is left as it is (the engine reads it, cc10x's
    /// host task metrics, as a reason to report timings instead of routing).
    pub fn record_dispatch(&mut self, role: &str, seconds: f64) {
        let key = match role {
            "component-builder" => "builder",
            "bug-investigator" => "investigator",
            "code-reviewer" => "reviewer",
            "failure-hunter" => "hunter",
            "integration-verifier" => "verifier",
            other => other,
        };
        let so_far = self
            .agent_wall_clock_seconds
            .get(key)
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        let total = ((so_far + seconds) * 1000.0).round() / 1000.0;
        self.agent_wall_clock_seconds
            .insert(key.to_string(), Value::from(total));
        if key == "verifier" {
            let runs = self
                .verifier
                .get("phase_exit_proof_runs")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            self.verifier
                .insert("phase_exit_proof_runs".into(), Value::from(runs + 1));
        }
    }

    /// The verifier's `### Timing & Workload` section, when its answer has one (seed 001:418):
    /// `- extended_audit_runs: N` and the seconds it spent on `tests`, `build`, `scan`,
    /// `reconcile` and `reasoning` (`- tests: 38`), added to `telemetry.verifier`
    /// (`extended_audit_runs`, `workload_seconds.{…}`) over the workflow's verifier runs. Other
    /// lines are left out; a number that does not read is skipped. Kept to explain latency only.
    pub fn record_verifier_workload(&mut self, answer: &str) {
        const KINDS: [&str; 5] = ["tests", "build", "scan", "reconcile", "reasoning"];
        let mut in_section = false;
        for line in answer.lines() {
            let t = line.trim();
            if t.starts_with('#') {
                in_section = t
                    .trim_start_matches('#')
                    .trim()
                    .eq_ignore_ascii_case("Timing & Workload");
                continue;
            }
            if !in_section {
                continue;
            }
            let Some((key, value)) = t.trim_start_matches(['-', '*']).split_once(':') else {
                continue;
            };
            let key = key
                .trim()
                .trim_matches(['`', '*'])
                .trim()
                .to_ascii_lowercase();
            // `38`, `38s`, `38 seconds`, `**38**`.
            let number = value
                .trim()
                .trim_matches('*')
                .split_whitespace()
                .next()
                .unwrap_or("")
                .trim_end_matches('s')
                .parse::<f64>()
                .ok()
                .filter(|n| n.is_finite() && *n >= 0.0);
            let Some(n) = number else { continue };
            let add = |map: &mut Map<String, Value>, k: &str| {
                let so_far = map.get(k).and_then(Value::as_f64).unwrap_or(0.0);
                map.insert(
                    k.to_string(),
                    Value::from(((so_far + n) * 1000.0).round() / 1000.0),
                );
            };
            if key == "extended_audit_runs" {
                let so_far = self
                    .verifier
                    .get("extended_audit_runs")
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                self.verifier.insert(
                    "extended_audit_runs".into(),
                    Value::from(so_far + n.round() as u64),
                );
            } else if let Some(kind) = KINDS
                .iter()
                .find(|k| key == **k || key == format!("{k}_seconds"))
            {
                let mut seconds = match self.verifier.remove("workload_seconds") {
                    Some(Value::Object(m)) => m,
                    _ => Map::new(),
                };
                add(&mut seconds, kind);
                self.verifier
                    .insert("workload_seconds".into(), Value::Object(seconds));
            }
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LoopCounts {
    pub re_review: u32,
    pub re_hunt: u32,
    pub re_verify: u32,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
