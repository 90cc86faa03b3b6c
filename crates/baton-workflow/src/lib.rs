//! Workflows: what `baton run` will drive. Only the first piece exists so far.
//!
//! - [`route`] decides which workflow a request belongs to (BUILD, DEBUG, PLAN, REVIEW, ORIENT)
//!   by rules over the words of the request, and says which words and which rule decided.
//!   `baton route "request"` prints that decision and does nothing else.
//!
//! - [`contract`] reads an agent's final output into its role's typed contract (the line-1
//!   `CONTRACT` envelope, the heading fallback, the fenced YAML router contract), validates it,
//!   and merges findings across reviewer, hunter and verifier.
//!
//! Task graphs, the workflow store, gates, remediation and memory files are not built yet;
//! `docs/workflows.md` says what is there and what is not.

pub mod contract;
pub mod route;
