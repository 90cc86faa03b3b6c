//! Agent contracts: reading an agent's final output into a typed contract and deciding whether
//! it lets a workflow move on.
//!
//! Every role of a workflow ends its output with a machine-readable contract, in one of two
//! dialects:
//!
//! - read-only roles (code-reviewer, failure-hunter, integration-verifier, plan-gap-reviewer)
//!   put a `CONTRACT {"s": …}` JSON envelope on their first line; when it is absent or malformed
//!   a status heading (`## Review: Approve`) within the first five lines stands in for it. Their
//!   structured fields (`REMEDIATION_NEEDED: true`, the verifier's scenario accounting) come from
//!   `KEY: value` lines and from an optional fenced YAML router contract;
//! - write roles (component-builder, bug-investigator, planner, doc-syncer, researcher,
//!   brainstormer) end with
//!   a fenced YAML block under `### Router Contract (MACHINE-READABLE)` carrying every required
//!   field of their role.
//!
//! [`parse`] returns a [`Checked`] contract — the typed fields, where the status came from, the
//! [`Outcome`] (whether the workflow may advance, and why not) and notes on every override it
//! applied — or a [`ContractError`] naming what is missing or malformed and how to fix it.
//! Output with no contract at all, prose such as "looks good", is an error: it never advances a
//! workflow. [`merge`] combines the findings of reviewer and hunter, applies the verifier's
//! finding validation and picks the stricter of two verdicts.

mod error;
pub mod merge;
mod readonly;
pub mod scenario;
mod text;
mod write;

#[cfg(test)]
mod fixture_tests;
#[cfg(test)]
mod readonly_tests;
#[cfg(test)]
mod tests;

use std::fmt;

pub use error::ContractError;
pub use readonly::{
    HuntContract, HuntStatus, PlanGapContract, PlanGapStatus, ReadOnlyCommon, ReadOnlyFields,
    RemediationScope, ReviewContract, ReviewStatus, VerifyContract, VerifyStatus,
};
pub use write::{
    BrainstormContract, BrainstormStatus, BuilderContract, BuilderStatus, CheckpointType,
    DebugCloseout, DocSyncContract, DocSyncStatus, FeedbackLoop, InvestigatorContract,
    InvestigatorStatus, List, PhaseStatus, PlanMode, PlannerContract, PlannerStatus, ProofStatus,
    RedReasonKind, ResearchContract, ResearchStatus, SeamGateStatus, VerificationRigor,
};

/// The roles whose contracts baton validates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    ComponentBuilder,
    BugInvestigator,
    Planner,
    DocSyncer,
    /// The web and GitHub researchers share one contract.
    Researcher,
    /// PLAN's brainstorming before the planner (cc10x's exploration skill).
    Brainstormer,
    CodeReviewer,
    FailureHunter,
    IntegrationVerifier,
    PlanGapReviewer,
}

impl Role {
    pub const ALL: [Role; 10] = [
        Role::ComponentBuilder,
        Role::BugInvestigator,
        Role::Planner,
        Role::DocSyncer,
        Role::Researcher,
        Role::Brainstormer,
        Role::CodeReviewer,
        Role::FailureHunter,
        Role::IntegrationVerifier,
        Role::PlanGapReviewer,
    ];

    /// The role's name as cc10x's registry spells it.
    pub fn name(self) -> &'static str {
        match self {
            Role::ComponentBuilder => "component-builder",
            Role::BugInvestigator => "bug-investigator",
            Role::Planner => "planner",
            Role::DocSyncer => "doc-syncer",
            Role::Researcher => "researcher",
            Role::Brainstormer => "brainstormer",
            Role::CodeReviewer => "code-reviewer",
            Role::FailureHunter => "failure-hunter",
            Role::IntegrationVerifier => "integration-verifier",
            Role::PlanGapReviewer => "plan-gap-reviewer",
        }
    }

    /// A role by name; `silent-failure-hunter`, `web-researcher` and `github-researcher` are the
    /// registry's other spellings of two of them.
    pub fn from_name(name: &str) -> Option<Role> {
        let name = name.trim().to_ascii_lowercase().replace('_', "-");
        match name.as_str() {
            "silent-failure-hunter" => return Some(Role::FailureHunter),
            "web-researcher" | "github-researcher" => return Some(Role::Researcher),
            _ => {}
        }
        Role::ALL.into_iter().find(|r| r.name() == name)
    }

    /// Read-only roles answer with a line-1 envelope; the others with a YAML router contract.
    pub fn is_read_only(self) -> bool {
        matches!(
            self,
            Role::CodeReviewer
                | Role::FailureHunter
                | Role::IntegrationVerifier
                | Role::PlanGapReviewer
        )
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a contract's status was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The `CONTRACT {…}` envelope on the first line.
    Envelope,
    /// The status heading within the first five lines (the envelope was absent or malformed).
    Heading,
    /// The fenced YAML block under `### Router Contract`.
    RouterContract,
}

/// What a valid contract means for the workflow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A passing status whose every pass condition holds: the workflow may advance.
    Pass,
    /// A passing status with a caveat to record (doc-syncer `PARTIAL`, researcher `PARTIAL`).
    SoftPass { note: String },
    /// The agent reported a status that is not a pass (`FAIL`, `BLOCKED`, `CHANGES_REQUESTED` …,
    /// or a pass the registry's overrides turned into one).
    NotPassed { status: String },
    /// The agent claimed a pass its own fields do not support; each entry is one unmet condition.
    PassRefused { unmet: Vec<String> },
    /// A pass too thin to trust (a rubber-stamp approval, a clean audit with no stated scope):
    /// the router is to verify inline before believing it.
    NeedsVerification { reason: String },
}

impl Outcome {
    /// Whether the workflow may move past this agent.
    pub fn advances(&self) -> bool {
        matches!(self, Outcome::Pass | Outcome::SoftPass { .. })
    }

    pub fn verdict(&self) -> Verdict {
        match self {
            Outcome::Pass => Verdict::Pass,
            Outcome::SoftPass { .. } => Verdict::SoftPass,
            Outcome::NeedsVerification { .. } => Verdict::NeedsVerification,
            Outcome::NotPassed { .. } | Outcome::PassRefused { .. } => Verdict::Fail,
        }
    }
}

/// A contract's verdict, ordered from the most lenient to the strictest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verdict {
    Pass,
    SoftPass,
    NeedsVerification,
    Fail,
}

impl Verdict {
    pub fn is_pass(self) -> bool {
        matches!(self, Verdict::Pass | Verdict::SoftPass)
    }

    pub fn name(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::SoftPass => "soft pass",
            Verdict::NeedsVerification => "needs verification",
            Verdict::Fail => "fail",
        }
    }
}

/// The typed contract of one role.
#[derive(Debug, Clone, PartialEq)]
pub enum Contract {
    Builder(BuilderContract),
    Investigator(InvestigatorContract),
    Planner(PlannerContract),
    DocSync(DocSyncContract),
    Research(ResearchContract),
    Brainstorm(BrainstormContract),
    Review(ReviewContract),
    Hunt(HuntContract),
    Verify(VerifyContract),
    PlanGap(PlanGapContract),
}

/// A contract that parsed and validated.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    pub role: Role,
    pub source: Source,
    pub contract: Contract,
    pub outcome: Outcome,
    /// Overrides applied and oddities passed over (an envelope on a later line, a heading that
    /// disagreed with the envelope), one sentence each, for the workflow's history.
    pub notes: Vec<String>,
}

impl Checked {
    pub fn advances(&self) -> bool {
        self.outcome.advances()
    }
}

/// Reads `output`, an agent's final message, as the contract of `role` and validates it.
pub fn parse(role: Role, output: &str) -> Result<Checked, ContractError> {
    if output.trim().is_empty() {
        return Err(ContractError::Empty { role });
    }
    if role.is_read_only() {
        readonly::parse(role, output)
    } else {
        write::parse(role, output)
    }
}

/// Validates the fields of a write role's router contract given as a map (the YAML block already
/// parsed, or a contract kept in a workflow artifact): every required field present, each value
/// of the right type and in its allowed set, then the role's pass conditions.
pub fn validate_fields(
    role: Role,
    fields: &serde_json::Map<String, serde_json::Value>,
) -> Result<Checked, ContractError> {
    if role.is_read_only() {
        return Err(ContractError::Inconsistent {
            role,
            reason: "a read-only role's contract is read from its output, not from a field map"
                .into(),
        });
    }
    write::check_fields(role, fields, Vec::new(), None)
}
