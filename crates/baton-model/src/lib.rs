//! The model layer: one streamed model turn at a time, over any provider.
//!
//! - [`Provider`] streams one attempt of one turn as [`StreamEvent`]s.
//! - [`retry::run_turn`] drives a provider with retries and assembles an [`AssistantTurn`].
//! - [`routes`] resolves model classes to routes and builds providers from config.

pub mod anthropic;
pub mod catalog;
pub mod error;
mod http;
pub mod openai_chat;
pub mod openai_responses;
pub mod prices;
pub mod probe;
pub mod provider;
pub mod replay;
pub mod retry;
pub mod routes;
pub mod sse;
pub mod types;
#[cfg(test)]
mod wire_tests;

pub use error::ModelError;
pub use http::Connection;
pub use provider::{EventStream, Provider};
pub use types::{AssistantTurn, ModelRequest, StreamEvent, TurnAccumulator};
