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

#[cfg(test)]
mod tests {
    use super::short_time;

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
