//! Worktrees (being written).
