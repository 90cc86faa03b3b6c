//! The agent runtime: loop, tools, roles, transcripts.

pub mod agent;
pub mod roles;
pub mod session;
pub mod tools;
