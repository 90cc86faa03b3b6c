//! `baton serve`: the project's web dashboard, a second view of the project event feed (the
//! terminal UI is the first).
//!
//! - [`guard`]: who may ask — loopback by default; any other address needs a bearer token; the
//!   `Host` and `Origin` of every request are checked (a page of another origin, a DNS-rebound
//!   name: 403); a request that changes something needs the page's CSRF token.
//! - [`history`]: the history the page pages through (the Events list's pages, the Cost view's
//!   sums, one workflow's events), kept up from the logs: the page holds only what it shows.
//! - [`lean`]: an event as the page gets it (its bulk cut, a task's children priced).
//! - [`live`]: the feed as server-sent events; each event's id is the feed's cursor after it, so
//!   a reconnect with `Last-Event-ID` resumes with no gap and no duplicate, and a slow client is
//!   served from the files again (its reader waits for it), never dropped.
//! - [`server`]: the routes, the embedded page (hand-written, no build step) and `serve`.

pub mod guard;
pub mod history;
pub mod lean;
pub mod live;
pub mod server;

pub use server::{serve, Options};
