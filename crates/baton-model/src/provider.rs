//! The provider interface.

use std::pin::Pin;

use futures::Stream;

use crate::error::ModelError;
use crate::types::{ModelRequest, StreamEvent};

/// A stream of one attempt at one model turn. A successful stream ends with `StreamEvent::Stop`;
/// a stream that ends without it was cut and is reported as `ModelError::StreamCut`.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, ModelError>> + Send>>;

/// One model backend. Implementations make exactly one HTTP request per call and never retry;
/// [`crate::retry::run_turn`] owns retries.
#[async_trait::async_trait]
pub trait Provider: Send + Sync {
    /// The provider's config name (`[providers.NAME]`), used in error messages.
    fn name(&self) -> &str;

    /// Starts one attempt. Errors before the first byte of the body (HTTP status, connection) are
    /// returned here; errors later arrive in the stream.
    async fn stream(&self, request: &ModelRequest) -> Result<EventStream, ModelError>;
}
