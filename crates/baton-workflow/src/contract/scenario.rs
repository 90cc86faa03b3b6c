//! Scenarios — the named, runnable checks agents report — and the integration verifier's
//! scenario accounting, which must reconcile before its verdict counts.

use serde::Deserialize;

/// How one scenario ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum ScenarioStatus {
    #[serde(rename = "PASS", alias = "pass", alias = "Pass")]
    Pass,
    #[serde(rename = "FAIL", alias = "fail", alias = "Fail")]
    Fail,
}

/// One scenario: given / when / then, the command that checks it, what was expected, what
/// happened and the command's exit code.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct Scenario {
    pub name: Option<String>,
    pub given: Option<String>,
    pub when: Option<String>,
    pub then: Option<String>,
    pub command: Option<String>,
    pub expected: Option<String>,
    pub actual: Option<String>,
    pub exit_code: Option<i64>,
    pub status: Option<ScenarioStatus>,
}

fn filled(s: &Option<String>) -> bool {
    s.as_deref().is_some_and(|s| !s.trim().is_empty())
}

impl Scenario {
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or("").trim()
    }

    /// The evidence fields this scenario leaves empty: `name`, `command`, `expected`, `actual`,
    /// `exit_code`.
    pub fn missing_evidence(&self) -> Vec<&'static str> {
        let mut missing = Vec::new();
        for (field, ok) in [
            ("name", filled(&self.name)),
            ("command", filled(&self.command)),
            ("expected", filled(&self.expected)),
            ("actual", filled(&self.actual)),
            ("exit_code", self.exit_code.is_some()),
        ] {
            if !ok {
                missing.push(field);
            }
        }
        missing
    }

    /// Complete evidence and a `PASS` status.
    pub fn is_proven_pass(&self) -> bool {
        self.status == Some(ScenarioStatus::Pass) && self.missing_evidence().is_empty()
    }
}

/// The evidence list of a verifier's contract.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct Evidence {
    /// One line per scenario, starting with the scenario's name
    /// (`Profile page renders | … | npm test -- profile -> exit 0 | …`).
    pub scenarios: Vec<String>,
}

/// The integration verifier's counts, its scenario table and its evidence.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub struct ScenarioAccounting {
    pub scenarios_total: u64,
    pub scenarios_passed: u64,
    pub scenarios_failed: u64,
    pub scenario_rows: Vec<Scenario>,
    #[serde(default)]
    pub evidence: Evidence,
}

/// The fields [`ScenarioAccounting`] is read from.
pub const ACCOUNTING_FIELDS: [&str; 5] = [
    "SCENARIOS_TOTAL",
    "SCENARIOS_PASSED",
    "SCENARIOS_FAILED",
    "SCENARIO_ROWS",
    "EVIDENCE",
];

impl ScenarioAccounting {
    /// Every way the counts, the rows and the evidence disagree; empty when they reconcile:
    ///
    /// - `SCENARIOS_TOTAL = SCENARIOS_PASSED + SCENARIOS_FAILED`;
    /// - one row per counted scenario, and as many `PASS` / `FAIL` rows as the counts say;
    /// - every row has a name, a command, an expected and an actual value, an exit code and a
    ///   status;
    /// - every row has its own evidence entry (one starting with the row's name), and there is
    ///   one entry per counted scenario.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        let (total, passed, failed) = (
            self.scenarios_total,
            self.scenarios_passed,
            self.scenarios_failed,
        );
        if total != passed.saturating_add(failed) {
            out.push(format!(
                "SCENARIOS_TOTAL is {total} but SCENARIOS_PASSED + SCENARIOS_FAILED is {passed} + {failed} = {}",
                passed.saturating_add(failed)
            ));
        }
        let rows = self.scenario_rows.len() as u64;
        if rows != total {
            out.push(format!(
                "SCENARIOS_TOTAL is {total} but SCENARIO_ROWS has {rows} row{}",
                plural(rows)
            ));
        }
        let count = |s| {
            self.scenario_rows
                .iter()
                .filter(|r| r.status == Some(s))
                .count() as u64
        };
        let (rows_passed, rows_failed) = (count(ScenarioStatus::Pass), count(ScenarioStatus::Fail));
        if rows_passed != passed {
            out.push(format!(
                "SCENARIOS_PASSED is {passed} but {rows_passed} row{} {} status PASS",
                plural(rows_passed),
                if rows_passed == 1 { "has" } else { "have" }
            ));
        }
        if rows_failed != failed {
            out.push(format!(
                "SCENARIOS_FAILED is {failed} but {rows_failed} row{} {} status FAIL",
                plural(rows_failed),
                if rows_failed == 1 { "has" } else { "have" }
            ));
        }
        for (i, row) in self.scenario_rows.iter().enumerate() {
            let label = if row.name().is_empty() {
                format!("row {}", i + 1)
            } else {
                format!("scenario \"{}\"", row.name())
            };
            let mut missing = row.missing_evidence();
            if row.status.is_none() {
                missing.push("status");
            }
            if !missing.is_empty() {
                out.push(format!("{label} has no {}", missing.join(", ")));
            }
            if !row.name().is_empty()
                && !self
                    .evidence
                    .scenarios
                    .iter()
                    .any(|e| e.trim_start().starts_with(row.name()))
            {
                out.push(format!("{label} has no EVIDENCE entry"));
            }
        }
        let entries = self.evidence.scenarios.len() as u64;
        if entries != total {
            out.push(format!(
                "SCENARIOS_TOTAL is {total} but EVIDENCE.scenarios has {entries} entr{}",
                if entries == 1 { "y" } else { "ies" }
            ));
        }
        out
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
