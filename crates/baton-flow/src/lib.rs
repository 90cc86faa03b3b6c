//! Flow: land 1–8 independent changes at once, safely.
//!
//! Every unit gets its own git worktree (outside the repository) and branch; all worktrees are
//! created before any implementer is launched. The implementers run in parallel through the
//! executor. Then, unit by unit in declared order, Flow checks that Main is where it left it,
//! rebases the unit onto Main if earlier units advanced it, derives base and tip from git, runs the
//! unit's validation commands, asks the reviewer about the unit's `review` criterion if it has one,
//! fast-forwards Main to the exact tip, and removes the worktree and branch without force.
//!
//! A blocked unit pauses the Flow; [`continue_flow`] repairs it once. Every step is an event in
//! `.baton/state/flows/<id>.events.jsonl`, written before the step acts, so [`status`] works from
//! any process and [`resume`] carries an interrupted Flow on without merging anything twice.
//!
//! - [`units`]: the units file and its checks.
//! - [`event`], [`state`], [`store`]: the event log, the state it folds into, and the files.
//! - [`lock`]: one Flow at a time per repository.
//! - [`engine`]: the driver ([`start`], [`continue_flow`], [`resume`], [`abandon`], [`status`]),
//!   and [`clean`], which removes what an ended Flow kept.
//! - [`validate`]: running validation commands without a shell.
//! - [`render`]: text for people.
//! - [`tool`]: `delegate_flow` and `delegate_flow_continue` for a main agent session.

pub mod engine;
pub mod event;
pub mod lock;
pub mod render;
pub mod state;
pub mod store;
pub mod tool;
pub mod units;
pub use baton_exec::guarded as validate;

pub use engine::review;
pub use engine::{
    abandon, build_args, build_task, clean, clean_plan, commit_change, continue_flow, land, repair,
    resume, start, start_as, status, CleanPlan, FlowEnv, FlowError, FlowStatus, MainNow, Notice,
    Observer,
};
pub use event::{CleanItem, FlowEvent, Record, UnitWorkflow};
pub use state::{FlowState, Phase, UnitStatus};
pub use store::{CrashHook, CrashMode, FlowStore};
pub use units::{parse_units, read_units_file, InputError, UnitSpec, ValidationCommand};
