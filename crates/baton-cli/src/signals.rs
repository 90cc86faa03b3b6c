//! What the commands that run work share: their async runtime, and SIGINT and SIGTERM cancelling
//! the work.

use tokio_util::sync::CancellationToken;

/// Cancels `cancel` on SIGINT or SIGTERM. The returned token is cancelled only by a signal.
///
/// The handlers are in place when this returns (a signal that arrives a moment later cancels
/// instead of killing the process), so call it before recording that the work has started. It
/// must be called inside a Tokio runtime (`block_on` or `Runtime::enter`).
pub fn watch_signals(cancel: CancellationToken) -> CancellationToken {
    use tokio::signal::unix::{signal, SignalKind};
    let by_signal = CancellationToken::new();
    let flag = by_signal.clone();
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return by_signal;
    };
    tokio::spawn(async move {
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
        flag.cancel();
        cancel.cancel();
    });
    by_signal
}

/// The runtime of a command that runs work (`run`, `task`, `flow`, `demo`): two worker threads.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    baton_app::runtime::build(2)
}
