//! The agent runtime: loop, tools, transcripts.

pub mod agent;
pub mod approval;
pub mod harness;
pub mod routing;
pub mod session;
pub mod tools;
pub mod turn;
