//! Types shared by every baton crate. Nothing here performs I/O.
//!
//! - [`message`]: the conversation a model sees (user text, assistant parts, tool results).
//! - [`event`]: the versioned agent event stream printed by `baton agent --json` (see `docs/protocol.md`).
//! - [`route`]: thinking levels, routes `provider/model[:thinking]` and model classes.
//! - [`role`]: role specifications (parsed from Markdown elsewhere).
//! - [`config`]: the TOML config file schema.
//! - [`sandbox`]: the sandbox modes of model-chosen commands.
//! - [`bus`]: an in-process fan-out of events to subscribers (no I/O: channels).
//! - [`project_event`]: the envelope, positions and cursors of the project event feed
//!   (`baton events`).

pub mod bus;
pub mod config;
pub mod event;
pub mod message;
pub mod project_event;
pub mod role;
pub mod route;
pub mod sandbox;

pub use bus::{EventBus, Subscription};
pub use event::{
    AgentEvent, EndReason, ErrorCode, ErrorInfo, Item, ItemKind, ItemStatus, Outcome, RouteUsage,
    SandboxInfo, UnknownValue, PROTOCOL_VERSION,
};
pub use message::{AssistantPart, Message, StopReason, ToolSpec, Usage};
pub use project_event::{Cursor, Position, PositionError, ProjectEvent, Source, SourceKind};
pub use route::{ModelClass, Route, RouteParseError, ThinkingLevel};
