//! Backends (being written).
