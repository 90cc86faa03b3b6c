//! Types shared by every baton crate. Nothing here performs I/O.
//!
//! - [`message`]: the conversation a model sees (user text, assistant parts, tool results).
//! - [`event`]: the versioned agent event stream printed by `baton agent --json` (see `docs/protocol.md`).
//! - [`route`]: thinking levels, routes `provider/model[:thinking]` and model classes.
//! - [`role`]: role specifications (parsed from Markdown elsewhere).
//! - [`config`]: the TOML config file schema.
//! - [`sandbox`]: the sandbox modes of model-chosen commands.
//! - [`approval`]: the approval policy and what the loop asks its front end before a tool call.
//! - [`bus`]: an in-process fan-out of events to subscribers (no I/O: channels).
//! - [`project_event`]: the envelope, positions and cursors of the project event feed
//!   (`baton events`).

/// A closed set of words (a status, a mode, a kind): one enum whose serde form,
/// [`as_str`](#method.as_str), `parse`, [`FromStr`](std::str::FromStr) (its error naming the set
/// and every member) and `ALL` are generated from one list, so they cannot disagree. The one
/// derive every crate uses for such sets; more derives (`Default`, `Ord` …) go in the attributes.
///
/// ```
/// baton_protocol::closed_set! {
///     /// How a thing went.
///     pub enum Verdict ("verdict") {
///         Pass = "PASS",
///         Fail = "FAIL",
///     }
/// }
/// assert_eq!(Verdict::Pass.as_str(), "PASS");
/// assert_eq!("FAIL".parse::<Verdict>().unwrap(), Verdict::Fail);
/// assert!("maybe".parse::<Verdict>().unwrap_err().to_string().contains("PASS, FAIL"));
/// ```
#[macro_export]
macro_rules! closed_set {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident ($set:expr) {
            $( $(#[$vmeta:meta])* $variant:ident = $wire:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        $vis enum $name {
            $( $(#[$vmeta])* #[serde(rename = $wire)] $variant, )+
        }

        impl $name {
            /// Every member, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The word as it is written.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $wire, )+
                }
            }

            /// The member a word names.
            pub fn parse(word: &str) -> Option<$name> {
                $name::ALL.iter().copied().find(|m| m.as_str() == word)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = $crate::UnknownValue;

            fn from_str(s: &str) -> Result<Self, $crate::UnknownValue> {
                $name::parse(s).ok_or_else(|| $crate::UnknownValue {
                    set: $set,
                    value: s.to_string(),
                    expected: [$($wire),+].join(", "),
                })
            }
        }
    };
}

pub mod approval;
pub mod bus;
pub mod config;
pub mod event;
pub mod message;
pub mod project_event;
pub mod role;
pub mod route;
pub mod sandbox;

pub use approval::{ApprovalAnswer, ApprovalPolicy, ApprovalRequest};
pub use bus::{EventBus, Subscription};
pub use event::{
    AgentEvent, EndReason, ErrorCode, ErrorInfo, Item, ItemKind, ItemStatus, Outcome, RouteUsage,
    SandboxInfo, UnknownValue, PROTOCOL_VERSION,
};
pub use message::{AssistantPart, Message, StopReason, ToolSpec, Usage};
pub use project_event::{Cursor, Position, PositionError, ProjectEvent, Source, SourceKind};
pub use route::{ModelClass, Route, RouteParseError, ThinkingLevel};
