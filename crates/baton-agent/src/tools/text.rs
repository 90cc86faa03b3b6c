//! Keeping text for the model bounded.

/// Cuts `line` to at most `max_chars` characters, saying how much was cut.
pub(crate) fn clip_line(line: &str, max_chars: usize) -> String {
    match line.char_indices().nth(max_chars) {
        None => line.to_owned(),
        Some((cut, _)) => {
            let rest = line[cut..].chars().count();
            format!(
                "{} [… line truncated, {rest} more characters]",
                &line[..cut]
            )
        }
    }
}

/// `n` with a unit that reads naturally (`1 line`, `3 lines`).
pub(crate) fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("{n} {one}")
    } else {
        format!("{n} {many}")
    }
}

/// Counts lines the way an editor shows them: a trailing newline does not start a new line,
/// and empty text has no lines.
pub(crate) fn count_lines(text: &str) -> usize {
    if text.is_empty() {
        0
    } else {
        text.matches('\n').count() + usize::from(!text.ends_with('\n'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipping() {
        assert_eq!(clip_line("abc", 5), "abc");
        assert_eq!(clip_line("ééééé", 5), "ééééé");
        assert_eq!(
            clip_line("éééééé", 5),
            "ééééé [… line truncated, 1 more characters]"
        );
    }

    #[test]
    fn line_counts() {
        assert_eq!(count_lines(""), 0);
        assert_eq!(count_lines("a"), 1);
        assert_eq!(count_lines("a\n"), 1);
        assert_eq!(count_lines("a\nb"), 2);
    }
}
