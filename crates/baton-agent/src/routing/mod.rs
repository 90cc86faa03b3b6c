//! Cognitive routing: one session, two participants — a Coordinator that plans, assigns and
//! assesses, and an Executor that works and returns evidence — with the identities, transitions
//! and evidence owned by the host. `state` is the data and its fold, `rules` what each
//! participant may do, `journal` the durable record under `.baton/state/sessions/`. See
//! docs/routing.md.

pub mod journal;
pub mod rules;
pub mod state;

#[cfg(test)]
mod tests;
