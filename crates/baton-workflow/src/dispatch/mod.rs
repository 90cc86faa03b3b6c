//! Dispatch: which role runs each phase of a workflow, and on which model class.
//!
//! [`role_for_phase`] and [`role_for_task`] read the phase → role table ([`PHASE_ROLES`]); the
//! roles are ordinary baton roles of the same names (built into `baton-roles`, overridable by
//! user and project role files). [`tier_for`] picks the model class of one dispatch: the config's
//! class for the role, else the role file's `model_class`, else the role's default tier. The
//! gating roles ([`Role::is_gating`]) have a floor: a class below `balanced` for them is refused,
//! wherever it was asked for, with an error naming the role, the class and the fix.

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use baton_protocol::role::RoleSpec;
use baton_protocol::ModelClass;

use crate::artifact::{Phase, TaskKind};
use crate::contract::Role;

/// Every phase an agent runs in, and the role that runs it. The other phases of
/// [`Phase`] (`build`, `build-finish`, `debug`, `review`, `plan`,
/// `memory-finalize`) belong to the workflow itself: no agent is dispatched for them.
pub const PHASE_ROLES: [(Phase, Role); 19] = [
    (Phase::BuildImplement, Role::ComponentBuilder),
    (Phase::BuildReview, Role::CodeReviewer),
    (Phase::BuildHunt, Role::FailureHunter),
    (Phase::BuildVerify, Role::IntegrationVerifier),
    (Phase::BuildDocSync, Role::DocSyncer),
    (Phase::DebugInvestigate, Role::BugInvestigator),
    (Phase::DebugReview, Role::CodeReviewer),
    (Phase::DebugVerify, Role::IntegrationVerifier),
    (Phase::ReviewAudit, Role::CodeReviewer),
    (Phase::Brainstorm, Role::Brainstormer),
    (Phase::PlanCreate, Role::Planner),
    (Phase::PlanReviewGap1, Role::PlanGapReviewer),
    (Phase::PlanReviewGap2, Role::PlanGapReviewer),
    (Phase::ReReview, Role::CodeReviewer),
    (Phase::ReHunt, Role::FailureHunter),
    (Phase::ReVerify, Role::IntegrationVerifier),
    (Phase::RePlan, Role::Planner),
    (Phase::ResearchWeb, Role::Researcher),
    (Phase::ResearchGithub, Role::Researcher),
];

/// The role dispatched for a phase; `None` for a phase no agent runs.
pub fn role_for_phase(phase: &str) -> Option<Role> {
    PHASE_ROLES
        .iter()
        .find(|(p, _)| p.as_str() == phase)
        .map(|(_, r)| *r)
}

/// The role that fixes what another found: the investigator fixes its own findings, the builder
/// everyone else's (a reviewer's, a verifier's, the workflow's own).
pub fn role_for_remfix(origin: &str) -> Option<Role> {
    match origin {
        "bug-investigator" => Some(Role::BugInvestigator),
        "code-reviewer" | "integration-verifier" | "router" => Some(Role::ComponentBuilder),
        _ => None,
    }
}

/// The role dispatched for a task: a remediation task by its origin, any other by its phase.
pub fn role_for_task(kind: TaskKind, phase: &str, origin: &str) -> Option<Role> {
    match kind {
        TaskKind::Remfix => role_for_remfix(origin),
        _ => role_for_phase(phase),
    }
}

/// The three tiers of the workflow design and the class each maps to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    /// Mechanical work against an explicit input: `fast`.
    Cheap,
    /// Judgment within a bounded change: `balanced`.
    Standard,
    /// Decomposition and last-line checks: `frontier`.
    Capable,
}

impl Tier {
    pub fn class(self) -> ModelClass {
        match self {
            Tier::Cheap => ModelClass::Fast,
            Tier::Standard => ModelClass::Balanced,
            Tier::Capable => ModelClass::Frontier,
        }
    }
}

impl Role {
    /// The tier a role runs on unless its role file or the config says otherwise.
    pub fn default_tier(self) -> Tier {
        match self {
            Role::DocSyncer => Tier::Cheap,
            Role::ComponentBuilder
            | Role::BugInvestigator
            | Role::Researcher
            | Role::CodeReviewer
            | Role::FailureHunter => Tier::Standard,
            Role::Planner
            | Role::Brainstormer
            | Role::PlanGapReviewer
            | Role::IntegrationVerifier => Tier::Capable,
        }
    }

    /// Roles whose verdict gates the workflow: they never run below [`FLOOR`].
    pub fn is_gating(self) -> bool {
        self.is_read_only()
    }
}

/// The lowest class a gating role may run on.
pub const FLOOR: ModelClass = ModelClass::Balanced;

/// A class's rank; `fav` (the user's chosen model) has none.
fn rank(class: ModelClass) -> Option<u8> {
    match class {
        ModelClass::Fast => Some(0),
        ModelClass::Balanced => Some(1),
        ModelClass::Frontier => Some(2),
        ModelClass::Fav => None,
    }
}

/// The class a role's dispatches run on, by role name, as a config gives it (meant for a
/// `[workflow.tiers]` table; no config file fills it yet).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TierConfig {
    pub classes: BTreeMap<String, ModelClass>,
}

/// A class refused for a gating role.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "role `{role}` gates the workflow and runs on `balanced` or above, but {asked_by} asks for `{class}`{why}: set it to `balanced` or `frontier` (or remove it for the default `{default}`)"
)]
pub struct BelowFloor {
    pub role: String,
    pub class: ModelClass,
    /// Where the class came from: the config, or the role file and its origin.
    pub asked_by: String,
    why: &'static str,
    default: ModelClass,
}

/// The class to dispatch `role` on: the config's class for its name, else the role file's
/// `model_class`, else its default tier (`balanced` for a role outside the workflow table).
/// A gating role (by name, so an override of a built-in keeps the floor) asking for less than
/// `balanced`, or for `fav` whose rank is unknown, is refused.
pub fn tier_for(role: &RoleSpec, config: &TierConfig) -> Result<ModelClass, BelowFloor> {
    let name = role.name();
    let workflow_role = Role::from_name(name).filter(|r| r.name() == name);
    let default = workflow_role.map_or(FLOOR, |r| r.default_tier().class());
    let (class, asked_by) = match (config.classes.get(name), role.meta.model_class) {
        (Some(c), _) => (*c, format!("the config's tier for `{name}`")),
        (None, Some(c)) => (c, format!("the role file ({})", source_name(role))),
        (None, None) => (default, String::new()),
    };
    if workflow_role.is_some_and(Role::is_gating) {
        let why = match rank(class) {
            Some(r) if r >= rank(FLOOR).unwrap_or(1) => return Ok(class),
            Some(_) => "",
            None => " (whose rank is unknown, so the floor cannot be checked)",
        };
        return Err(BelowFloor {
            role: name.to_string(),
            class,
            asked_by,
            why,
            default,
        });
    }
    Ok(class)
}

fn source_name(role: &RoleSpec) -> String {
    use baton_protocol::role::RoleSource;
    match &role.source {
        RoleSource::Builtin => "built-in".into(),
        RoleSource::User(p) | RoleSource::Project(p) => p.clone(),
    }
}
