//! `baton serve`: the project's web dashboard, a second view of the project event feed (the
//! terminal UI is the first).
//!
//! - [`guard`]: who may ask — loopback by default; any other address needs a bearer token; the
//!   `Host` and `Origin` of every request are checked (a page of another origin, a DNS-rebound
//!   name: 403); a request that changes something needs the page's CSRF token.
//! - [`live`]: the feed as server-sent events; each event's id is the feed's cursor after it, so
//!   a reconnect with `Last-Event-ID` resumes with no gap and no duplicate, and a slow client is
//!   served from the files again (its reader waits for it), never dropped.
//! - [`server`]: the routes, the embedded page (hand-written, no build step) and `serve`.

pub mod guard;
pub mod live;
pub mod server;

pub use server::{serve, Options};
