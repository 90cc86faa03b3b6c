//! Cognitive routing: one session, two participants — a Coordinator that plans, assigns and
//! assesses, and an Executor that works and returns evidence — with the identities, transitions
//! and evidence owned by the host. `state` is the data and its fold, `rules` what each
//! participant may do, `journal` the durable record under `.baton/state/sessions/`. See
//! docs/routing.md.

pub mod journal;
pub mod rules;
pub mod state;
pub mod tools;
pub mod view;

use std::path::PathBuf;

use crate::turn::Fallback;
use state::Control;

/// How a session is routed: the participants' routes, the journal, projection, and the control
/// asked for at start.
#[derive(Clone)]
pub struct RoutingSpec {
    /// The Coordinator's route first, then the routes of its class it may fail over to.
    pub coordinator: Vec<Fallback>,
    /// The same for the Executor.
    pub executor: Vec<Fallback>,
    /// `.baton/state/sessions/<id>.journal`.
    pub journal: PathBuf,
    /// Whether the Coordinator sees the evidence the Executor selects (on by default).
    pub projection: bool,
    /// The control asked for when the session starts (`--routing`); `None` keeps the journal's
    /// (a manual hold lasts across restarts), which for a new journal is automatic.
    pub start: Option<Control>,
}

#[cfg(test)]
mod tests;
