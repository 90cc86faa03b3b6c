//! The documents of `--json` and MCP results are `baton_app::documents`; this module prints them.

pub use baton_app::documents::*;

/// Prints `doc` as one line of JSON on stdout (known provider keys redacted, as all output).
pub fn print<T: serde::Serialize>(doc: &T) {
    outln!("{}", to_value(doc));
}
