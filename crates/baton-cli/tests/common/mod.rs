//! Helpers shared by the end-to-end tests of the `baton` binary.
#![allow(dead_code)]

use std::time::{Duration, Instant};

/// Polls `f` every 20 ms until it holds or `deadline` passes; returns its last answer. Used to
/// wait for an observable state (a file, a process gone), never as a delay.
pub fn wait_until(deadline: Duration, mut f: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < deadline {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    f()
}

/// Alive and not a zombie (the check baton itself uses for supervisors).
pub fn alive(pid: i32) -> bool {
    u32::try_from(pid).is_ok_and(baton_process::alive)
}
