//! Workflows: what `baton run` will drive.
//!
//! - [`route`] decides which workflow a request belongs to (BUILD, DEBUG, PLAN, REVIEW, ORIENT)
//!   by rules over the words of the request, and says which words and which rule decided.
//!   `baton route "request"` prints that decision and does nothing else.
//! - [`artifact`] is the workflow artifact (the durable state of one workflow) with serde that
//!   keeps unknown keys, and the workflow tasks with their seven metadata lines and `validate()`.
//! - [`outputs`] types what agents return and the checks before a passing status is believed,
//!   and builds those types from the [`contract`] module's checked contracts.
//! - [`engine`] is the decision function: artifact + tasks + agent outputs → next action, gate,
//!   follow-up tasks and artifact changes. Pure: no I/O, no clock, no model.
//! - [`contract`] reads an agent's final output into its role's typed contract (the line-1
//!   `CONTRACT` envelope, the heading fallback, the fenced YAML router contract), validates it,
//!   and merges findings across reviewer, hunter and verifier.
//! - [`state`] is the runner's typed workflow state (`WorkflowState`: run state, checkpoint,
//!   spend, tasks, the runner's bookkeeping), decoded strictly: a field that does not decode is
//!   an error naming it, never a default.
//! - [`event`] is the event log's record: a tagged enum with one payload per kind, read from and
//!   written to the flat JSON line every baton has written.
//! - [`store`] is the durable record: the event log, the artifact snapshot rebuilt from it, the
//!   lock per workflow.
//! - [`dispatch`] is the phase → role table (which built-in or overriding role runs each phase)
//!   and the model class of each dispatch, with the floor of the gating roles.
//! - [`memory`] keeps `.baton/memory/` (activeContext, patterns, progress): made from templates,
//!   healed, read back, Session Settings, finalization.
//!
//! Launching agents, task graphs run against them and `baton run` are not built yet;
//! `docs/workflows.md` says what is there and what is not.

/// A closed set of words of the workflow records and contracts: `baton_protocol::closed_set!`
/// (serde names, `as_str`, `parse`, `FromStr`, `ALL`, `Display` from one list), the set named
/// after the enum in its parse errors.
macro_rules! closed_set {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $word:literal),+ $(,)? }) => {
        baton_protocol::closed_set! {
            $(#[$doc])*
            pub enum $name (stringify!($name)) {
                $($(#[$vdoc])* $variant = $word),+
            }
        }
    };
}

pub mod artifact;
pub mod baseline;
pub mod contract;
pub mod dispatch;
pub mod engine;
pub mod event;
pub mod memory;
pub mod outputs;
pub mod paths;
pub mod plan_file;
pub mod results;
pub mod route;
pub mod run;
pub mod state;
pub mod store;
