//! The executor: runs one prepared task in one child process under hard limits and returns a typed
//! result; plus the agent backends, delegation modes, worktree isolation and background tasks.
//!
//! - [`types`]: launches, limits, activity events, results and errors shared by every module.
//! - [`executor`]: the concurrency cap, child process management, timeouts, cancellation, bounds.
//! - [`guarded`]: commands run through the process guard, one after another, bounded, optionally
//!   sandboxed (Flow's validation commands, a workflow verifier's re-run scenarios).
//! - [`backend`]: how each agent program is launched and how its stdout stream is parsed.
//! - [`limits`]: the output budget, the stderr tail, the bounded line splitter, activity field checks.
//! - [`worktree`]: per-task git worktrees outside the repository, created and finalized.

pub mod backend;
pub mod background;
pub mod delegate;
pub mod executor;
pub mod guarded;
pub mod limits;
pub mod tool;
pub mod types;
pub mod worker;
pub mod worker_door;
pub mod worktree;

pub use types::*;
