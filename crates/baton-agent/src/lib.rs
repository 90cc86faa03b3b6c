//! The agent runtime: loop, tools, roles, transcripts.

pub mod tools;
