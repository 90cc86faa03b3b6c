//! Typed wrapper over the git CLI (being written).
