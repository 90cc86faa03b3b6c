//! Commands the sandbox tests run as a model would, shared by the unit tests of
//! `baton-sandbox` and the end-to-end tests of the binary.

/// A shell command that forks up to `tries` children (each sleeps, its output closed) until a
/// fork is refused; it prints `refused ERRNO` when one was, then `forked N`.
pub fn fork_until_refused(tries: u32) -> String {
    format!(
        "python3 -c '
import os, time
n = 0
for i in range({tries}):
    try:
        pid = os.fork()
    except OSError as e:
        print(\"refused\", e.errno)
        break
    if pid == 0:
        os.close(1); os.close(2); time.sleep(2); os._exit(0)
    n += 1
print(\"forked\", n)
'"
    )
}

/// How many children [`fork_until_refused`] started, read from its output.
pub fn forked(output: &str) -> Option<u64> {
    output
        .lines()
        .find_map(|l| l.strip_prefix("forked "))
        .and_then(|n| n.trim().parse().ok())
}
