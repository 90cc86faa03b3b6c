//! The project's work beside the session: the session's own delegations, the project's
//! background tasks, Flows and workflows. The model is the one projection every view reads,
//! [`baton_events::projection`], folded from the typed project event feed and the session's
//! delegation progress; this panel draws its rows, a Flow's units × steps and a workflow's
//! dispatches.

pub use baton_events::projection::{
    Check, Checkpoint, Flow, Kind, Node, Projection as Project, Row, Spent, State, Step, Unit,
    Workflow, STEPS,
};

#[cfg(test)]
pub(crate) mod tests {
    pub(crate) use baton_events::projection::fixtures::{fixture_events, worker_events};
}
