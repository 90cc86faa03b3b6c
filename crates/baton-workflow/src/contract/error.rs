//! Why an agent's output is not a usable contract, and what the agent must do instead.

use std::fmt;

use super::Role;

/// A missing or malformed contract. None of these advances a workflow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContractError {
    /// The output is empty.
    Empty { role: Role },
    /// The output has no contract of any kind: prose alone, such as "looks good".
    ProseOnly { role: Role, excerpt: String },
    /// An envelope sits on a later line and no status heading stands in for it.
    EnvelopeNotOnFirstLine { role: Role, line: usize },
    /// The first line is a `CONTRACT` envelope that does not parse or breaks the role's rules,
    /// and no status heading stands in for it.
    MalformedEnvelope { role: Role, reason: String },
    /// A write role's output has no fenced YAML block under `### Router Contract`.
    MissingRouterContract { role: Role, reason: String },
    /// The YAML router contract does not parse, or is not a mapping.
    MalformedYaml { role: Role, reason: String },
    /// Required fields absent from the router contract, in the registry's order.
    MissingFields { role: Role, fields: Vec<String> },
    /// A field holds a value of the wrong type or outside its allowed set.
    InvalidField {
        role: Role,
        field: String,
        reason: String,
    },
    /// Two parts of the contract contradict each other.
    Inconsistent { role: Role, reason: String },
    /// The verifier's scenario accounting does not reconcile; each entry is one problem.
    ScenarioAccounting { role: Role, problems: Vec<String> },
}

impl ContractError {
    pub fn role(&self) -> Role {
        match self {
            ContractError::Empty { role }
            | ContractError::ProseOnly { role, .. }
            | ContractError::EnvelopeNotOnFirstLine { role, .. }
            | ContractError::MalformedEnvelope { role, .. }
            | ContractError::MissingRouterContract { role, .. }
            | ContractError::MalformedYaml { role, .. }
            | ContractError::MissingFields { role, .. }
            | ContractError::InvalidField { role, .. }
            | ContractError::Inconsistent { role, .. }
            | ContractError::ScenarioAccounting { role, .. } => *role,
        }
    }

    /// What the agent has to change for its output to validate.
    pub fn fix(&self) -> String {
        let role = self.role();
        match self {
            ContractError::Empty { .. } | ContractError::ProseOnly { .. } => expected_form(role),
            ContractError::EnvelopeNotOnFirstLine { .. } => {
                "move the CONTRACT envelope to the first line of the output".into()
            }
            ContractError::MalformedEnvelope { .. } => format!(
                "write line 1 as {} (one JSON object, nothing after it)",
                envelope_example(role)
            ),
            ContractError::MissingRouterContract { .. } | ContractError::MalformedYaml { .. } => {
                expected_form(role)
            }
            ContractError::MissingFields { fields, .. } => format!(
                "add {} to the router contract (an empty list, null or false where nothing applies)",
                fields.join(", ")
            ),
            ContractError::InvalidField { field, .. } => {
                format!("give {field} a value of the type and set the registry allows")
            }
            ContractError::Inconsistent { .. } => {
                "make the contract's parts agree, or report the stricter status".into()
            }
            ContractError::ScenarioAccounting { .. } => "make SCENARIOS_TOTAL equal \
                SCENARIOS_PASSED + SCENARIOS_FAILED, list one SCENARIO_ROWS entry per counted \
                scenario (name, command, expected, actual, exit_code, status) and one EVIDENCE \
                entry per row"
                .into(),
        }
    }
}

fn envelope_example(role: Role) -> &'static str {
    match role {
        Role::CodeReviewer => r#"CONTRACT {"s":"APPROVE","b":false,"cr":0}"#,
        Role::FailureHunter => r#"CONTRACT {"s":"CLEAN","b":false,"cr":0}"#,
        Role::IntegrationVerifier => r#"CONTRACT {"s":"PASS","b":false,"cr":0}"#,
        Role::PlanGapReviewer => r#"CONTRACT {"s":"PASS","b":false,"bf":0}"#,
        _ => r#"CONTRACT {"s":"<STATUS>"}"#,
    }
}

fn expected_form(role: Role) -> String {
    match role {
        Role::CodeReviewer => format!(
            "start the output with {} or a `## Review: Approve` / `## Review: Changes Requested` heading",
            envelope_example(role)
        ),
        Role::FailureHunter => format!(
            "start the output with {} or a `## Error Handling Audit: CLEAN` / `ISSUES_FOUND` heading",
            envelope_example(role)
        ),
        Role::IntegrationVerifier => format!(
            "start the output with {} or a `## Verification: PASS` / `FAIL` heading, and end it \
             with the scenario accounting in a fenced YAML block under `### Router Contract`",
            envelope_example(role)
        ),
        Role::PlanGapReviewer => format!(
            "start the output with {} or a `## Planning Review: Pass` / `Findings` heading",
            envelope_example(role)
        ),
        _ => "end the output with `### Router Contract (MACHINE-READABLE)` followed by a fenced \
              ```yaml block that is one mapping holding every required field"
            .into(),
    }
}

impl ContractError {
    /// What is wrong, without the fix addressed to the agent: the part a user reads.
    pub fn problem(&self) -> String {
        let full = self.to_string();
        match full.rfind(". Fix: ") {
            Some(i) => full[..i].to_string(),
            None => full,
        }
    }
}

impl fmt::Display for ContractError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let role = self.role();
        match self {
            ContractError::Empty { .. } => write!(f, "{role}: the output is empty")?,
            ContractError::ProseOnly { excerpt, .. } => write!(
                f,
                "{role}: no contract, only prose (\"{excerpt}\"); prose never advances a workflow"
            )?,
            ContractError::EnvelopeNotOnFirstLine { line, .. } => write!(
                f,
                "{role}: the CONTRACT envelope is on line {line}, not line 1, and no status \
                 heading stands in for it"
            )?,
            ContractError::MalformedEnvelope { reason, .. } => write!(
                f,
                "{role}: malformed CONTRACT envelope on line 1 ({reason}) and no status heading \
                 stands in for it"
            )?,
            ContractError::MissingRouterContract { reason, .. } => {
                write!(f, "{role}: no router contract: {reason}")?
            }
            ContractError::MalformedYaml { reason, .. } => {
                write!(f, "{role}: the router contract is not valid YAML: {reason}")?
            }
            ContractError::MissingFields { fields, .. } => write!(
                f,
                "{role}: the router contract lacks required field{} {}",
                if fields.len() == 1 { "" } else { "s" },
                fields.join(", ")
            )?,
            ContractError::InvalidField { field, reason, .. } => {
                write!(f, "{role}: field {field}: {reason}")?
            }
            ContractError::Inconsistent { reason, .. } => {
                write!(f, "{role}: contradictory contract: {reason}")?
            }
            ContractError::ScenarioAccounting { problems, .. } => write!(
                f,
                "{role}: the scenario accounting does not reconcile: {}",
                problems.join("; ")
            )?,
        }
        write!(f, ". Fix: {}", self.fix())
    }
}

impl std::error::Error for ContractError {}
