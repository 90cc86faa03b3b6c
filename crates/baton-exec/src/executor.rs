//! Executor (being written).
