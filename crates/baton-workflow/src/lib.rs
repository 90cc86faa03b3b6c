//! Workflows: what `baton run` will drive. Only the first piece exists so far.
//!
//! - [`route`] decides which workflow a request belongs to (BUILD, DEBUG, PLAN, REVIEW, ORIENT)
//!   by rules over the words of the request, and says which words and which rule decided.
//!   `baton route "request"` prints that decision and does nothing else.
//!
//! Task graphs, the workflow store, contracts, gates, remediation and memory files are not built
//! yet; `docs/workflows.md` says what is there and what is not.

pub mod route;
pub mod store;
