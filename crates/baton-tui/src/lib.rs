//! `baton tui`: the terminal UI of a session, a view of its typed event stream.
//!
//! - [`view`]: the view model and its reducer — every [`baton_protocol::AgentEvent`] folded into
//!   a transcript of entries, the status line's figures and the session's state. Pure: time is
//!   passed in, so a fold is deterministic and folding in chunks equals folding at once.
//! - [`markdown`]: streaming Markdown to styled, wrapped lines (newline-gated: only complete
//!   lines of a streaming answer are shown, a table only once it is whole), with keyword
//!   highlighting of fenced code.
//! - [`render`]: the view drawn into a ratatui buffer — the transcript virtualised (only the
//!   entries that reach the screen are laid out, each entry's lines cached per width), the
//!   status line, the composer and the overlays (help, approval, history search, commands).
//! - [`composer`]: the input editor: multi-line, history, slash commands with a filter.
//! - [`keymap`]: the one table of keys that drives both the input handling and the `?` help;
//!   overridable in `~/.config/baton/keys.toml`.
//! - [`term`]: the terminal: alternate screen (or inline), raw mode, bracketed paste, no mouse
//!   capture unless asked, and every frame wrapped in synchronized output (DEC mode 2026).
//! - [`app`]: the UI's state and what each message and key does.
//! - [`frames`]: the event loop and its frame scheduler — redraws merged and capped at 60 frames a
//!   second, and no timer at all when nothing animates, so an idle screen writes nothing.

pub mod app;
pub mod cells;
pub mod composer;
pub mod frames;
pub mod keymap;
pub mod linediff;
pub mod markdown;
pub mod overlay;
pub mod panel;
pub mod picker;
pub mod project;
pub mod render;
pub mod request;
pub mod term;
pub mod theme;
pub mod view;

pub use app::{Attach, Msg, Options, Request, TuiEnd};
pub use frames::run;
