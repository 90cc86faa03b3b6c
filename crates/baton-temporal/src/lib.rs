//! Workflows past one machine, on Temporal.
//!
//! A baton workflow is one Temporal workflow whose id is the baton workflow's id. Its history
//! holds the workflow's record (the same typed event log the local engine keeps under
//! `.baton/state/workflows/`) and, for its files, only commit SHAs and ref names: the work itself
//! travels through a shared git remote (`[engine] remote`). Each *step* — one decision of the
//! runner and the dispatch batch it leads to (a builder; a reviewer and a hunter together; a
//! verifier) — is one activity, run by `baton worker-node` on whichever machine polls the task
//! queue: it checks out the workflow's head in a worktree of its cached clone, puts the record in
//! place, runs `baton run`/`baton resume --steps 1` there under the process guard while it
//! heartbeats, commits, and pushes the new head with `--force-with-lease` to the head it started
//! from. So the decisions are the local runner's own, made from the record, and the two engines
//! produce the same events for the same roles.
//!
//! - [`mapping`]: the payloads (step input and result, heartbeat details, status) and the
//!   workflow's pure decisions (what a step's outcome leads to; which answers a checkpoint takes).
//! - [`node`]: the worker node's side of a step, without Temporal: the cached clone, the
//!   worktree, the child, the commit and the push.
//! - `sdk` (feature `temporal`): the Temporal workflow, the activity, the worker node's loop and
//!   the client calls `baton run/resume/status --engine temporal` make.
//! - `proto_json` (feature `temporal`): a history as Temporal's CLI and UI write it, read for
//!   `baton worker-node --check-history`.

pub mod flow;
pub mod flow_mirror;
#[cfg(feature = "temporal")]
pub mod flow_sdk;
pub mod mapping;
pub mod node;
#[cfg(feature = "temporal")]
pub mod proto_json;
#[cfg(feature = "temporal")]
pub mod sdk;
#[cfg(feature = "temporal")]
pub mod worker;

pub use mapping::{Progress, Status, StepInput, StepOutcome, StepResult, WorkflowInput};

/// Why a command that needs Temporal cannot run in this build.
pub const NOT_BUILT: &str = "this baton was built without Temporal: build it with `cargo build --release -p baton-cli --features temporal`, or run with the local engine (`--engine local`)";
