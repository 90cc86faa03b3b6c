//! The async runtime of a command: one builder, so every front end (the `baton` commands and the
//! MCP server) runs its work on the same kind of runtime.

use anyhow::Context as _;

/// A multi-threaded runtime with `threads` worker threads, timers and I/O enabled.
pub fn build(threads: usize) -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// A runtime on the calling thread only: a session (`baton agent`, whose work is one loop and
/// whose start-up time counts) and `baton doctor`.
pub fn current_thread() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Runs `work` on a thread of its own at a lower priority ([`baton_process::lower_this_thread`]):
/// work that may take a while and that nobody waits on, started beside a server that answers a
/// person meanwhile.
pub fn background(work: impl FnOnce() + Send + 'static) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        baton_process::lower_this_thread();
        work();
    })
}
