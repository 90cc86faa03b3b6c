//! The signal table and the scan that finds its words and phrases in a request.
//!
//! Every keyword is listed with the exact forms that match it (no stemming: `debugger`,
//! `prefix`, `reviewer` and `planner` match nothing). Phrases match word for word within one
//! clause; a gap (`how does X work`) takes one to a few tokens. The longest match at a position
//! wins, so `help me understand` is one signal, not `understand`.
//!
//! A match is *lead* when it is what a clause of the request asks for: the first word of a
//! sentence after courtesy words (`please`, `can you`, `I want to`, `just`, …); the first word
//! after `and`, `then`, `also`, `plus`, `but` or a comma in a sentence that itself starts with a
//! signal (`add X and fix Y`); the first word after a comma in a sentence that starts with `if`,
//! `when`, `once` … (`if the cache is cold, add a warm-up`). A lead word directly followed by a
//! colon, or by a word that makes it a noun (`build fails`, `update is broken`), is not lead.
//! BUILD verbs are signals only when lead: `add` in "crashes when I add an item" asks for nothing.

use super::words::{Break, Token};
use super::Category;

/// One step of a phrase.
enum Part {
    /// One word, any of these forms.
    Word(&'static [&'static str]),
    /// Between `min` and `max` tokens of any kind (`X` in `how does X work`).
    Gap(usize, usize),
}

/// What a phrase is remembered for beyond its category, by the rules that name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tag {
    /// `help me understand`: ORIENT over REVIEW.
    HelpMeUnderstand,
    /// `tell me what's wrong`, `what's wrong`: REVIEW over ORIENT.
    WhatsWrong,
}

/// A row of the table: a pattern and the category it signals, or `None` for a compound that
/// only looks like a signal (`error handling` names code; it reports nothing broken).
struct Entry {
    category: Option<Category>,
    parts: &'static [Part],
    tag: Option<Tag>,
}

use Category::{Build, Error, Orient, Plan, Review};
use Part::{Gap, Word};

/// A one-word entry: `kw!(Error; "fix", "fixes")`.
macro_rules! kw {
    ($cat:expr; $($form:literal),+) => {
        Entry { category: Some($cat), parts: &[Word(&[$($form),+])], tag: None }
    };
}

/// A phrase entry: `phrase!(Orient; ["zoom"], ["out"])`, gaps as `(min, max)`.
macro_rules! phrase {
    (@part [$($form:literal),+]) => { Word(&[$($form),+]) };
    (@part ($min:literal, $max:literal)) => { Gap($min, $max) };
    ($cat:expr, $tag:expr; $($part:tt),+) => {
        Entry { category: $cat, parts: &[$(phrase!(@part $part)),+], tag: $tag }
    };
}

/// The table. ERROR, PLAN, REVIEW and ORIENT keywords are those of the routing table of cc10x's
/// router with their plural and verb forms; BUILD verbs name new or changed functionality.
static TABLE: &[Entry] = &[
    // ERROR → DEBUG
    kw!(Error; "error", "errors"),
    kw!(Error; "bug", "bugs"),
    kw!(Error; "fix", "fixes", "fixed", "fixing"),
    kw!(Error; "broken"),
    kw!(Error; "crash", "crashes", "crashed", "crashing"),
    kw!(Error; "fail", "fails", "failed", "failing", "failure", "failures"),
    kw!(Error; "debug", "debugs", "debugged", "debugging"),
    kw!(Error; "troubleshoot", "troubleshoots", "troubleshooting"),
    kw!(Error; "issue", "issues"),
    // Compounds that name code, not a fault.
    phrase!(None, None; ["error"], ["handling", "handler", "handlers", "message", "messages", "type", "types", "code", "codes"]),
    phrase!(None, None; ["debug"], ["logging", "log", "logs", "build", "builds", "mode", "output", "symbols"]),
    phrase!(None, None; ["issue", "bug"], ["tracker", "template", "templates"]),
    // PLAN
    kw!(Plan; "plan", "plans", "planned", "planning"),
    kw!(Plan; "design", "designs", "designed", "designing"),
    kw!(Plan; "architect", "architects", "architected", "architecting"),
    kw!(Plan; "roadmap", "roadmaps"),
    kw!(Plan; "strategy", "strategies"),
    kw!(Plan; "spec", "specs"),
    kw!(Plan; "brainstorm", "brainstorms", "brainstormed", "brainstorming"),
    // REVIEW
    kw!(Review; "review", "reviews", "reviewed", "reviewing"),
    kw!(Review; "audit", "audits", "audited", "auditing"),
    kw!(Review; "analyze", "analyzes", "analyzed", "analyzing", "analyse", "analyses", "analysed", "analysing"),
    kw!(Review; "assess", "assesses", "assessed", "assessing"),
    phrase!(Some(Review), None; ["is"], ["this"], (0, 2), ["good"]),
    phrase!(Some(Review), Some(Tag::WhatsWrong); ["tell"], ["me"], ["what's"], ["wrong"]),
    phrase!(Some(Review), Some(Tag::WhatsWrong); ["tell"], ["me"], ["what"], ["is"], ["wrong"]),
    phrase!(Some(Review), Some(Tag::WhatsWrong); ["what's"], ["wrong"]),
    phrase!(Some(Review), Some(Tag::WhatsWrong); ["what"], ["is"], ["wrong"]),
    // ORIENT
    phrase!(Some(Orient), None; ["zoom"], ["out"]),
    kw!(Orient; "explain", "explains", "explained", "explaining"),
    kw!(Orient; "understand", "understands", "understanding"),
    phrase!(Some(Orient), Some(Tag::HelpMeUnderstand); ["help"], ["me"], ["understand"]),
    phrase!(Some(Orient), None; ["how"], ["does", "do"], (1, 6), ["work", "works"]),
    kw!(Orient; "unfamiliar"),
    phrase!(Some(Orient), None; ["map"], ["this"]),
    phrase!(Some(Orient), None; ["walk"], ["me"], ["through"]),
    phrase!(Some(Orient), None; ["where"], ["is", "are"]),
    kw!(Orient; "where's"),
    phrase!(Some(Orient), None; ["what"], ["does"], (1, 4), ["do"]),
    // BUILD (lead only)
    kw!(Build; "add", "implement", "create", "build", "make", "write", "rewrite", "introduce",
        "support", "change", "update", "extend", "refactor", "rename", "remove", "delete",
        "drop", "replace", "migrate", "convert", "port", "upgrade", "bump", "wire", "enable",
        "disable", "expose", "generate", "execute", "move", "split", "extract", "allow",
        "integrate", "improve", "optimize", "optimise", "document", "tweak", "adjust",
        "redesign", "deprecate", "ship", "draft"),
    phrase!(Some(Build), None; ["set", "hook", "clean", "speed"], ["up"]),
    phrase!(Some(Build), None; ["turn"], ["on", "off"]),
];

/// Words skipped before a lead word: courtesy, urgency and "I want you to".
const PREFIXES: &[&str] = &[
    "please", "pls", "kindly", "just", "quickly", "simply", "now", "also", "then", "and", "plus",
    "so", "first", "next", "finally", "ok", "okay", "hey", "hi", "go", "ahead", "let's", "lets",
    "let", "us", "can", "could", "would", "will", "you", "we", "i", "i'd", "like", "want", "need",
    "to", "should", "must", "try", "help", "me", "but",
];

/// Words that start a new clause in a sentence that asks for something.
const COORDINATORS: &[&str] = &["and", "then", "also", "plus", "but"];

/// First words of a sentence whose clause after the comma asks for something.
const SUBORDINATORS: &[&str] = &[
    "if", "when", "once", "after", "before", "while", "since", "because", "whenever", "as",
    "unless", "until",
];

/// Words that, right after a lead word, make it a noun: "build fails", "update is broken".
const NOUN_FOLLOWERS: &[&str] = &[
    "is", "are", "was", "were", "has", "have", "had", "keeps", "kept", "does", "did", "doesn't",
    "didn't", "won't", "can't", "cannot", "isn't", "aren't", "wasn't", "seems", "no", "fails",
    "failed", "failing", "crashes", "crashed", "crashing", "broken", "breaks", "broke", "errored",
];

/// Words that make a BUILD verb ask for proof, not functionality: "add a regression test".
const TEST_OBJECTS: &[&str] = &["test", "tests"];

/// BUILD verbs whose PLAN object is the deliverable: "write a spec", "create a roadmap".
const AUTHORING: &[&str] = &["write", "create", "draft"];

/// One signal found in a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Found {
    pub(crate) category: Category,
    /// Tokens `start..end` of the request.
    pub(crate) start: usize,
    pub(crate) end: usize,
    /// What a clause asks for (see the module doc).
    pub(crate) lead: bool,
    /// An ERROR word after `why` in the same sentence: the request asks for a diagnosis.
    pub(crate) diagnosis: bool,
    pub(crate) tag: Option<Tag>,
}

/// Every signal of the request, in order.
pub(crate) fn scan(tokens: &[Token]) -> Vec<Found> {
    let mut found = Vec::new();
    let mut start = 0;
    while start < tokens.len() {
        let end = tokens[start..]
            .iter()
            .position(|t| t.after.ends_sentence())
            .map_or(tokens.len(), |at| start + at + 1);
        scan_sentence(tokens, start, end, &mut found);
        start = end;
    }
    found
}

fn is_one_of(token: &Token, words: &[&str]) -> bool {
    token.word().is_some_and(|w| words.contains(&w))
}

/// The first token at or after `from` (before `end`) that is not a prefix word.
fn skip_prefixes(tokens: &[Token], from: usize, end: usize) -> usize {
    (from..end)
        .find(|&i| !is_one_of(&tokens[i], PREFIXES))
        .unwrap_or(end)
}

fn scan_sentence(tokens: &[Token], start: usize, end: usize, found: &mut Vec<Found>) {
    let subordinate = is_one_of(&tokens[start], SUBORDINATORS);
    // The sentence asks for something: its first clause starts with a signal.
    let mut imperative = false;
    let mut first_clause = true;
    // Matches starting in `open..=lead_until` are lead.
    let mut lead_until = Some(skip_prefixes(tokens, start, end));
    let mut seen_why = false;
    // A PLAN word that an authoring verb asked for ("write a spec"): lead where it starts.
    let mut plan_object: Option<usize> = None;
    let mut i = start;
    while i < end {
        let in_lead = lead_until.is_some_and(|until| i <= until);
        let mut next = i + 1;
        match longest_match(tokens, i, end, in_lead) {
            Some((entry, stop)) => {
                let mut lead = in_lead && used_as_verb(tokens, i, stop, end);
                if let Some(category) = entry.category {
                    let counts = match category {
                        Build if lead => match object(tokens, i, stop, end) {
                            Object::Functionality => true,
                            Object::Tests => false,
                            Object::Plan(at) => {
                                plan_object = Some(at);
                                false
                            }
                        },
                        Build => false,
                        Plan if plan_object == Some(i) => {
                            lead = true;
                            true
                        }
                        Error | Plan | Review | Orient => true,
                    };
                    if counts {
                        found.push(Found {
                            category,
                            start: i,
                            end: stop,
                            lead,
                            diagnosis: category == Error && seen_why,
                            tag: entry.tag,
                        });
                    }
                    if in_lead && first_clause {
                        imperative = lead;
                    }
                }
                if in_lead {
                    lead_until = None;
                    first_clause = false;
                }
                next = stop;
            }
            None => {
                if lead_until == Some(i) {
                    lead_until = None;
                    first_clause = false;
                }
            }
        }
        if tokens[i..next].iter().any(|t| t.word() == Some("why")) {
            seen_why = true;
        }
        i = next;
        if lead_until.is_none() && i < end {
            let after_comma = tokens[i - 1].after == Break::Comma;
            let coordinator = is_one_of(&tokens[i], COORDINATORS);
            if (after_comma && (imperative || subordinate)) || (coordinator && imperative) {
                lead_until = Some(skip_prefixes(tokens, i, end));
            }
        }
    }
}

/// Whether the word(s) at `start..stop` are a verb or question, not a noun or a label: a
/// one-word match followed by a colon or by a word of [`NOUN_FOLLOWERS`] is not.
fn used_as_verb(tokens: &[Token], start: usize, stop: usize, end: usize) -> bool {
    if stop - start > 1 {
        return true;
    }
    let last = &tokens[stop - 1];
    if last.after == Break::Colon {
        return false;
    }
    !(stop < end && last.after == Break::None && is_one_of(&tokens[stop], NOUN_FOLLOWERS))
}

/// What a lead BUILD verb asks for.
enum Object {
    Functionality,
    /// `add a regression test`: proof, not a deliverable of its own.
    Tests,
    /// `write a spec`: the PLAN word at this token is the deliverable.
    Plan(usize),
}

/// Looks at the three tokens after the BUILD verb at `verb..stop`, within its clause, for
/// `test(s)` or, after an authoring verb, a PLAN word.
fn object(tokens: &[Token], verb: usize, stop: usize, end: usize) -> Object {
    let authoring = stop - verb == 1 && is_one_of(&tokens[verb], AUTHORING);
    let mut at = stop;
    while at < end && at < stop + 3 && tokens[at - 1].after == Break::None {
        if is_one_of(&tokens[at], TEST_OBJECTS) {
            return Object::Tests;
        }
        if authoring
            && TABLE.iter().any(|e| {
                e.category == Some(Plan) && match_parts(tokens, at, end, e.parts, true).is_some()
            })
        {
            return Object::Plan(at);
        }
        at += 1;
    }
    Object::Functionality
}

/// The longest entry matching at `at` (BUILD entries only when `lead`), and where it stops.
fn longest_match(
    tokens: &[Token],
    at: usize,
    end: usize,
    lead: bool,
) -> Option<(&'static Entry, usize)> {
    TABLE
        .iter()
        .filter(|e| lead || e.category != Some(Build))
        .filter_map(|e| match_parts(tokens, at, end, e.parts, true).map(|stop| (e, stop)))
        .max_by_key(|(_, stop)| *stop)
}

/// Where `parts` matched from `at` stop, without crossing a break; a gap takes as few tokens as
/// it can.
fn match_parts(
    tokens: &[Token],
    at: usize,
    end: usize,
    parts: &[Part],
    first: bool,
) -> Option<usize> {
    let Some((part, rest)) = parts.split_first() else {
        return Some(at);
    };
    // A phrase stays in one clause: the token before this one must not end it.
    let joined = |i: usize| (first && i == at) || tokens[i - 1].after == Break::None;
    match part {
        Word(forms) => (at < end && joined(at) && is_one_of(&tokens[at], forms))
            .then(|| match_parts(tokens, at + 1, end, rest, false))
            .flatten(),
        Gap(min, max) => (*min..=*max).find_map(|n| {
            let stop = at + n;
            if stop > end || !(at..stop).all(joined) {
                return None;
            }
            match_parts(tokens, stop, end, rest, n == 0 && first)
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::super::words::tokens;
    use super::*;
    use pretty_assertions::assert_eq;

    /// Each signal as `text/CATEGORY`, with `*` when lead and `?` when a diagnosis.
    fn signals(request: &str) -> Vec<String> {
        let toks = tokens(request);
        scan(&toks)
            .into_iter()
            .map(|f| {
                let text: Vec<&str> = toks[f.start..f.end]
                    .iter()
                    .map(|t| t.text.as_str())
                    .collect();
                format!(
                    "{}/{}{}{}",
                    text.join(" "),
                    f.category.as_str(),
                    if f.lead { "*" } else { "" },
                    if f.diagnosis { "?" } else { "" }
                )
            })
            .collect()
    }

    #[test]
    fn keywords_match_whole_words_in_their_listed_forms_only() {
        assert_eq!(signals("the tests are failing"), ["failing/ERROR"]);
        assert_eq!(
            signals("prefix suffix fixture debugger reviewer planner issuer"),
            Vec::<String>::new()
        );
        // Each a sentence of one word, so each is lead.
        assert_eq!(
            signals("Crashed. Bugs! ISSUES?"),
            ["crashed/ERROR*", "bugs/ERROR*", "issues/ERROR*"]
        );
    }

    #[test]
    fn phrases_take_the_longest_match_and_stay_in_one_clause() {
        assert_eq!(
            signals("help me understand the scheduler"),
            ["help me understand/ORIENT*"]
        );
        assert_eq!(
            signals("how does the retry loop work?"),
            ["how does the retry loop work/ORIENT*"]
        );
        // A comma inside breaks the phrase.
        assert_eq!(signals("how does it, in short, work"), Vec::<String>::new());
        assert_eq!(signals("is this good"), ["is this good/REVIEW*"]);
        assert_eq!(
            signals("is this approach good?"),
            ["is this approach good/REVIEW*"]
        );
    }

    #[test]
    fn compounds_that_name_code_are_not_signals() {
        assert_eq!(signals("explain the error handling"), ["explain/ORIENT*"]);
        assert_eq!(signals("debug logging is noisy"), Vec::<String>::new());
    }

    #[test]
    fn build_verbs_count_only_where_a_clause_asks_for_something() {
        assert_eq!(
            signals("please add a toggle and then fix the alignment, rename the flag"),
            ["add/BUILD*", "fix/ERROR*", "rename/BUILD*"]
        );
        assert_eq!(
            signals("it crashes when I open the menu and add an item"),
            ["crashes/ERROR"]
        );
        assert_eq!(
            signals("if the cache is cold, add a warm-up step"),
            ["add/BUILD*"]
        );
        assert_eq!(signals("build fails on main"), ["fails/ERROR"]);
        assert_eq!(signals("Update: the login crashes"), ["crashes/ERROR"]);
        // Asking for tests is asking for proof.
        assert_eq!(
            signals("fix the crash and add a regression test"),
            ["fix/ERROR*", "crash/ERROR"]
        );
    }

    #[test]
    fn an_authored_plan_is_the_deliverable() {
        assert_eq!(signals("write a spec for the store"), ["spec/PLAN*"]);
        assert_eq!(signals("create the migration roadmap"), ["roadmap/PLAN*"]);
        // Implementing a plan is functionality.
        assert_eq!(
            signals("implement the plan"),
            ["implement/BUILD*", "plan/PLAN"]
        );
        assert_eq!(signals("add tests, then write docs"), ["write/BUILD*"]);
    }

    #[test]
    fn a_fault_after_why_asks_for_a_diagnosis() {
        assert_eq!(
            signals("explain why the upload fails"),
            ["explain/ORIENT*", "fails/ERROR?"]
        );
        assert_eq!(signals("the upload fails. why?"), ["fails/ERROR"]);
    }
}
