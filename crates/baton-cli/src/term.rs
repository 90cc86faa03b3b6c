//! What baton needs to know about the terminal it draws on.

/// The width of the terminal on stderr in columns: the kernel's window size, else `$COLUMNS`,
/// else 80.
pub fn stderr_columns() -> usize {
    let mut size = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one winsize struct through the pointer it is given.
    let ok = unsafe { libc::ioctl(2, libc::TIOCGWINSZ, &mut size) } == 0;
    if ok && size.ws_col > 0 {
        return usize::from(size.ws_col);
    }
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse().ok())
        .filter(|c| *c > 0)
        .unwrap_or(80)
}

/// An RFC 3339 timestamp as a person reads it in a table: `2026-12-05 05:57:23` (to the second,
/// `UTC` when it was recorded in UTC); anything else is shown as it is.
pub fn short_time(ts: &str) -> String {
    let b = ts.as_bytes();
    if ts.len() < 19 || !ts.is_char_boundary(19) || b[10] != b'T' {
        return ts.to_string();
    }
    let utc = ts.ends_with('Z') || ts.ends_with("+00:00");
    format!(
        "{} {}{}",
        &ts[..10],
        &ts[11..19],
        if utc { " UTC" } else { "" }
    )
}

/// A state as a listing shows it: a symbol before the word, in the state's colour on a terminal
/// (not with `NO_COLOR`): `✓ completed`, `✗ failed`, `⊘ cancelled`, `■ stopped`,
/// `? checkpoint` (it waits for you), `◐ running`. The word is kept, so a reader without colour
/// or symbols loses nothing.
pub fn marked(state: &str, color: bool) -> String {
    let word = state.split_whitespace().next().unwrap_or(state);
    let (mark, code) = match word {
        "completed" | "done" => ("✓", "32"),
        "failed" | "damaged" | "unreadable" | "lost" => ("✗", "31"),
        "cancelled" => ("⊘", "33"),
        "stopped" | "interrupted" | "blocked" => ("■", "33"),
        "checkpoint" | "needs" | "waiting" => ("?", "33;1"),
        "running" | "starting" | "queued" => ("◐", "34"),
        _ => ("·", "0"),
    };
    if color {
        format!("\x1b[{code}m{mark} {state}\x1b[0m")
    } else {
        format!("{mark} {state}")
    }
}

/// Whether stdout is a terminal that takes colour (`NO_COLOR` unset).
pub fn stdout_color() -> bool {
    use std::io::IsTerminal as _;
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

#[cfg(test)]
mod tests {
    use super::{marked, short_time};

    #[test]
    fn states_carry_their_symbol_and_keep_their_word() {
        assert_eq!(marked("completed", false), "✓ completed");
        assert_eq!(marked("cancelled", false), "⊘ cancelled");
        assert_eq!(marked("failed", false), "✗ failed");
        assert_eq!(marked("running (pid 7)", false), "◐ running (pid 7)");
        assert_eq!(marked("failed", true), "\x1b[31m✗ failed\x1b[0m");
    }

    #[test]
    fn timestamps_are_shown_to_the_second() {
        assert_eq!(
            short_time("2026-12-05T05:57:23.123456789Z"),
            "2026-12-05 05:57:23 UTC"
        );
        assert_eq!(
            short_time("2026-12-05T05:57:23+02:00"),
            "2026-12-05 05:57:23"
        );
        assert_eq!(short_time("yesterday"), "yesterday");
    }
}
