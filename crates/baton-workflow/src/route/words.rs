//! The words of a request, as the router reads them.
//!
//! A request is split on whitespace. Punctuation around a chunk is stripped and remembered as a
//! break after it (`,` a comma; `:` a colon; `.`, `!`, `?`, `;`, `…` and a line end a stop). What
//! is left is lowercased. A chunk made only of letters, digits, apostrophes and inner hyphens is
//! one or more words (`dark-mode` is `dark` and `mode`); anything else — a path, a file name,
//! `snake_case`, `a.b`, `--flag`, `#42` — is one code token, and so is everything between
//! backticks. Code tokens are never signals: `src/error.rs` does not say "error".

/// What follows a token, as far as the router cares. Ordered by strength.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Break {
    /// Nothing: the next token continues the clause.
    None,
    /// A comma: the clause ends, the sentence goes on.
    Comma,
    /// A colon: the sentence ends (`Bug: the login page…`).
    Colon,
    /// `.`, `!`, `?`, `;`, `…` or a line end: the sentence ends.
    Stop,
}

impl Break {
    /// Whether the sentence ends after this token.
    pub(crate) fn ends_sentence(self) -> bool {
        matches!(self, Break::Colon | Break::Stop)
    }
}

/// One word or code token of a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Token {
    /// Lowercased text (a code token's text as written, lowercased).
    pub(crate) text: String,
    /// A path, identifier, flag or backticked span: never matched against the signal table.
    pub(crate) code: bool,
    /// The break after it.
    pub(crate) after: Break,
}

impl Token {
    /// The word, when this is a word and not code.
    pub(crate) fn word(&self) -> Option<&str> {
        (!self.code).then_some(self.text.as_str())
    }
}

/// Characters stripped from the start of a chunk: opening quotes and brackets, Markdown emphasis.
const OPENERS: &[char] = &['(', '[', '{', '"', '\'', '<', '*', '\u{201c}', '\u{ab}'];

/// The break a trailing character of a chunk stands for, or `None` when it is not punctuation
/// that the router strips.
fn trailing_break(c: char) -> Option<Break> {
    match c {
        '.' | '!' | '?' | ';' | '\u{2026}' => Some(Break::Stop),
        ':' => Some(Break::Colon),
        ',' | '\u{2014}' | '\u{2013}' => Some(Break::Comma),
        ')' | ']' | '}' | '"' | '\'' | '>' | '*' | '\u{201d}' | '\u{bb}' => Some(Break::None),
        _ => None,
    }
}

/// The tokens of `request`, in order.
pub(crate) fn tokens(request: &str) -> Vec<Token> {
    // One apostrophe: "what’s" is "what's".
    let text: String = request
        .chars()
        .map(|c| match c {
            '\u{2018}' | '\u{2019}' | '\u{2bc}' => '\'',
            c => c,
        })
        .collect();
    let mut out = Vec::new();
    for (n, segment) in text.split('`').enumerate() {
        if n % 2 == 1 {
            // Between backticks (or after an unclosed one): code, whatever it says.
            let code = segment.trim();
            if !code.is_empty() {
                out.push(Token {
                    text: code.to_lowercase(),
                    code: true,
                    after: Break::None,
                });
            }
            continue;
        }
        for (l, line) in segment.split('\n').enumerate() {
            if l > 0 {
                end_with(&mut out, Break::Stop);
            }
            for chunk in line.split_whitespace() {
                push_chunk(&mut out, chunk);
            }
        }
    }
    out
}

/// Raises the break after the last token to at least `brk`.
fn end_with(out: &mut [Token], brk: Break) {
    if let Some(last) = out.last_mut() {
        last.after = last.after.max(brk);
    }
}

fn push_chunk(out: &mut Vec<Token>, chunk: &str) {
    let mut core = chunk.trim_start_matches(OPENERS);
    let mut brk = Break::None;
    while let Some(c) = core.chars().next_back() {
        let Some(b) = trailing_break(c) else { break };
        // `f()` and `a[0]` keep their closing bracket.
        if (c == ')' && core.contains('(')) || (c == ']' && core.contains('[')) {
            break;
        }
        brk = brk.max(b);
        core = &core[..core.len() - c.len_utf8()];
    }
    if !core.is_empty() && core.chars().all(|c| c == '-') {
        // A dash between words: "X - Y".
        brk = brk.max(Break::Comma);
        core = "";
    }
    let wordy = !core.is_empty()
        && !core.starts_with('-')
        && core
            .chars()
            .all(|c| c.is_alphanumeric() || c == '\'' || c == '-');
    if wordy {
        for part in core.split('-').filter(|p| !p.is_empty()) {
            out.push(Token {
                text: part.to_lowercase(),
                code: false,
                after: Break::None,
            });
        }
    } else if !core.is_empty() {
        out.push(Token {
            text: core.to_lowercase(),
            code: true,
            after: Break::None,
        });
    }
    end_with(out, brk);
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// Each token as `word`, `[code]`, followed by `,` `:` or `.` for its break.
    fn shape(request: &str) -> Vec<String> {
        tokens(request)
            .into_iter()
            .map(|t| {
                let mut s = if t.code {
                    format!("[{}]", t.text)
                } else {
                    t.text
                };
                s.push_str(match t.after {
                    Break::None => "",
                    Break::Comma => ",",
                    Break::Colon => ":",
                    Break::Stop => ".",
                });
                s
            })
            .collect()
    }

    #[test]
    fn words_are_lowercased_and_punctuation_becomes_breaks() {
        assert_eq!(
            shape("Fix the BUG, then add (a) toggle! Is this good?"),
            ["fix", "the", "bug,", "then", "add", "a", "toggle.", "is", "this", "good."]
        );
        assert_eq!(shape("Bug: it crashes…"), ["bug:", "it", "crashes."]);
        assert_eq!(shape("**fix** \"this\""), ["fix", "this"]);
    }

    #[test]
    fn hyphens_split_words_and_apostrophes_stay_inside() {
        assert_eq!(
            shape("add a dark-mode toggle; what’s wrong with users' data"),
            ["add", "a", "dark", "mode", "toggle.", "what's", "wrong", "with", "users", "data"]
        );
    }

    #[test]
    fn paths_identifiers_flags_and_backticks_are_code() {
        assert_eq!(
            shape("explain src/error.rs, fix_bug() and --fix in `cargo fix --all` #42"),
            [
                "explain",
                "[src/error.rs],",
                "[fix_bug()]",
                "and",
                "[--fix]",
                "in",
                "[cargo fix --all]",
                "[#42]"
            ]
        );
        // An unclosed backtick makes the rest code.
        assert_eq!(shape("see `fix it"), ["see", "[fix it]"]);
    }

    #[test]
    fn dashes_between_words_end_a_clause() {
        assert_eq!(
            shape("zoom out \u{2014} map this - thanks"),
            ["zoom", "out,", "map", "this,", "thanks"]
        );
    }

    #[test]
    fn a_line_end_is_a_stop() {
        assert_eq!(
            shape("crash on start\nadd logging"),
            ["crash", "on", "start.", "add", "logging"]
        );
        assert_eq!(shape("  \n\n "), Vec::<String>::new());
    }
}
