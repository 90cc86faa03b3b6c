//! A BUILD's scope from its request (cc10x build preparation 4): clearly trivial work takes the
//! reduced graph without a question; work that clearly spans several concerns is asked "Plan
//! first (Recommended) / Build directly"; everything else is a standard BUILD. The signals are
//! the request's words only, so the rules lean to the middle: a request is trivial or broad only
//! when its words say so plainly.

/// What the request's words say about its scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// One small, single change (the signals that said so).
    Trivial(Vec<String>),
    /// Neither clearly trivial nor clearly broad.
    Standard,
    /// Several concerns, files or modules (the signals that said so).
    Broad(Vec<String>),
}

/// Words of small, single changes.
const TRIVIAL_WORDS: &[&str] = &[
    "typo",
    "typos",
    "spelling",
    "misspelled",
    "rename",
    "bump",
    "whitespace",
    "one-line",
    "one-liner",
    "comment",
    "wording",
];

/// Words of work that spans modules or needs design.
const BROAD_WORDS: &[&str] = &[
    "refactor",
    "migrate",
    "migration",
    "redesign",
    "rewrite",
    "architecture",
    "across",
    "overhaul",
    "end-to-end",
    "subsystem",
    "multiple",
];

/// Assesses a BUILD request's scope.
pub fn assess(request: &str) -> Scope {
    let lower = request.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | ':' | '(' | ')'))
        .filter(|w| !w.is_empty())
        .collect();
    let bare = |w: &str| {
        w.trim_matches(|c: char| !c.is_alphanumeric() && c != '-')
            .to_string()
    };
    let files: Vec<&str> = request
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| matches!(c, '`' | '"' | '\'' | ',' | ';' | '(' | ')')))
        .filter(|w| looks_like_path(w))
        .collect();
    let mut broad = Vec::new();
    for w in &words {
        let w = bare(w);
        if BROAD_WORDS.contains(&w.as_str()) && !broad.contains(&w) {
            broad.push(w);
        }
    }
    if files.len() >= 3 {
        broad.push(format!("{} files named", files.len()));
    }
    // Separate asks: `A with B and C`, `A; B`, `A, then B`. (`and also` counts once, as
    // `and`.) Files already counted above are not concerns of their own.
    let concerns = 1
        + lower.matches(" and ").count()
        + lower.matches("; ").count()
        + lower.matches(" then ").count()
        + lower.matches(" as well as ").count()
        + lower.matches(" with ").count()
        + lower
            .matches(", ")
            .count()
            .saturating_sub(files.len().saturating_sub(1));
    let several = concerns >= 3 && files.len() < 3;
    if several {
        broad.push(format!("{concerns} concerns"));
    }
    if words.len() > 60 {
        broad.push(format!("{} words", words.len()));
    }
    // cc10x build preparation 4: non-trivial work (separable concerns, several file groups) is
    // asked; one signal of several concerns is enough, other signals need a second.
    if broad.len() >= 2 || several {
        return Scope::Broad(broad);
    }
    let trivial: Vec<String> = words
        .iter()
        .map(|w| bare(w))
        .filter(|w| TRIVIAL_WORDS.contains(&w.as_str()))
        .collect();
    if !trivial.is_empty()
        && broad.is_empty()
        && words.len() <= 15
        && files.len() <= 1
        && concerns == 1
    {
        let mut signals = trivial;
        signals.dedup();
        signals.push(match files.len() {
            0 => "no file named".into(),
            _ => "one file".into(),
        });
        return Scope::Trivial(signals);
    }
    Scope::Standard
}

/// A word that names a file: a path with a slash and a dot, or a name with a known extension.
fn looks_like_path(w: &str) -> bool {
    let ext = w.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    let known = [
        "rs", "py", "ts", "tsx", "js", "jsx", "go", "java", "kt", "c", "h", "cc", "cpp", "rb",
        "md", "toml", "yaml", "yml", "json", "sh", "css", "html", "sql", "swift",
    ];
    w.len() > 2
        && !w.ends_with('.')
        && (known.contains(&ext) || (w.contains('/') && w.contains('.')))
}

/// Words that ask for change without saying what: cc10x's readiness gate asks for specifics
/// when a request holds nothing else ("make it better" without a metric).
const VAGUE_WORDS: &[&str] = &[
    "better",
    "improve",
    "improved",
    "improvement",
    "improvements",
    "enhance",
    "optimize",
    "optimise",
    "clean",
    "cleanup",
    "cleaner",
    "tidy",
    "polish",
    "nicer",
    "faster",
    "quicker",
    "good",
    "great",
    "work",
    "fix",
    "update",
    "change",
    "tweak",
    "modernize",
    "modernise",
];

/// Words that name nothing in particular (pronouns, articles, courtesy, "the code").
const FILLER_WORDS: &[&str] = &[
    "make",
    "it",
    "its",
    "this",
    "that",
    "these",
    "those",
    "things",
    "thing",
    "stuff",
    "everything",
    "something",
    "all",
    "the",
    "a",
    "an",
    "code",
    "app",
    "project",
    "codebase",
    "repo",
    "more",
    "much",
    "bit",
    "little",
    "some",
    "please",
    "can",
    "could",
    "would",
    "you",
    "we",
    "i",
    "me",
    "my",
    "our",
    "just",
    "do",
    "so",
    "to",
    "up",
    "overall",
    "general",
    "generally",
    "somehow",
    "really",
    "very",
    "pretty",
    "lot",
    "again",
    "now",
    "here",
    "there",
    "be",
    "is",
    "are",
    "and",
    "or",
    "of",
    "in",
    "on",
    "for",
    "with",
    "way",
];

/// cc10x's Intent Readiness Gate, its third condition: a request whose every word is a vague ask
/// or a filler ("make it better", "improve the code", "clean things up") names no goal any
/// scenario could verify. The words that made it so; `None` when the request names something
/// (a word of its own, a file, an identifier, a number).
pub fn unspecific(request: &str) -> Option<String> {
    let lower = request.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    let vague: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| VAGUE_WORDS.contains(w))
        .collect();
    let named = words
        .iter()
        .any(|w| !VAGUE_WORDS.contains(w) && !FILLER_WORDS.contains(w));
    (!named && !vague.is_empty()).then(|| vague.join(", "))
}

/// Words by which a request asks for research before the work (debug-workflow.md:3: research
/// first "when the user asks"): the phrase found, or `None`.
pub fn asks_for_research(request: &str) -> Option<&'static str> {
    const ASKS: [&str; 6] = [
        "research",
        "look up",
        "look it up",
        "check the docs",
        "read the docs",
        "check upstream",
    ];
    let lower = request.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    let text = format!(" {} ", words.join(" "));
    ASKS.into_iter().find(|a| text.contains(&format!(" {a} ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_that_asks_for_research_says_so() {
        assert_eq!(
            asks_for_research("fix the crash; research how upstream treats empty input"),
            Some("research")
        );
        assert_eq!(
            asks_for_research("Look up the API, then fix it"),
            Some("look up")
        );
        assert_eq!(asks_for_research("fix the researcher's crash"), None);
        assert_eq!(asks_for_research("fix the crash in the parser"), None);
    }

    #[test]
    fn plain_small_changes_are_trivial() {
        for r in [
            "fix the typo in README.md",
            "rename the config key timeout_ms",
            "bump the version to 1.2.0",
        ] {
            assert!(matches!(assess(r), Scope::Trivial(_)), "{r}");
        }
        assert_eq!(
            assess("fix the typo in README.md"),
            Scope::Trivial(vec!["typo".into(), "one file".into()])
        );
    }

    #[test]
    fn work_across_modules_is_broad_and_the_rest_standard() {
        let r = "refactor the storage layer across src/db.rs, src/cache.rs and src/api.rs";
        assert_eq!(
            assess(r),
            Scope::Broad(vec![
                "refactor".into(),
                "across".into(),
                "3 files named".into()
            ])
        );
        assert!(matches!(
            assess(
                "migrate the users table to postgres; update the API; then rewrite the admin page"
            ),
            Scope::Broad(_)
        ));
        for r in [
            "add a feature file",
            "add a --verbose flag",
            "fix the crash in the parser",
            "rename the config key and migrate every caller across the codebase",
        ] {
            assert!(!matches!(assess(r), Scope::Trivial(_)), "{r}");
        }
        assert_eq!(assess("add a --verbose flag"), Scope::Standard);
        // Several separable asks in one request: asked plan first (cc10x: non-trivial).
        assert_eq!(
            assess("add a user profile page with avatar upload and settings"),
            Scope::Broad(vec!["3 concerns".into()])
        );
        assert_eq!(
            assess("add a --verbose flag and document it"),
            Scope::Standard
        );
        // A trivial word in a long or multi-file request is not trivial.
        assert_eq!(
            assess("fix the typo in src/a.rs and src/b.rs"),
            Scope::Standard
        );
    }

    #[test]
    fn a_request_of_vague_words_only_is_unspecific() {
        for vague in [
            "make it better",
            "Improve the code.",
            "clean things up please",
            "make it faster",
            "fix it",
        ] {
            assert!(unspecific(vague).is_some(), "{vague}");
        }
        for specific in [
            "make the parser faster",
            "add a user profile page with avatar upload",
            "improve error messages in src/cli.rs",
            "fix the typo in README",
            "make `parse_args` better",
            "make it 2x faster",
        ] {
            assert_eq!(unspecific(specific), None, "{specific}");
        }
    }
}
