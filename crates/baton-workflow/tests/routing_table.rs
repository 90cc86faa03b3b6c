//! The routing table: requests and the decision each must get — workflow, signals (text and
//! category, in order), the rule that decided and whether it was a conflict. It holds every
//! example cc10x's router spec gives, verbatim, then realistic requests for each workflow,
//! requests that mix signals, casing and punctuation, words that must not match, and two
//! requests where reading words is not reading meaning.

use baton_workflow::route::{route, Decision};

/// One row: request, workflow, signals as `text/CATEGORY`, rule, conflict.
type Row = (
    &'static str,
    &'static str,
    &'static [&'static str],
    &'static str,
    bool,
);

const NEW: &str = "primary deliverable: new functionality";
const ERROR: &str = "priority: ERROR over BUILD";
const PLAN: &str = "priority: PLAN over BUILD";
const REVIEW: &str = "priority: REVIEW over BUILD";
const ORIENT: &str = "ORIENT before BUILD";
const DEFAULT: &str = "default BUILD";
const DIAGNOSIS: &str = "primary deliverable: diagnosing or repairing broken behaviour";

/// The examples of the spec, word for word.
const SEED: &[Row] = &[
    (
        "add a dark-mode toggle and fix the button alignment",
        "BUILD",
        &["add/BUILD", "fix/ERROR"],
        NEW,
        false,
    ),
    (
        "help me understand this code",
        "ORIENT",
        &["help me understand/ORIENT"],
        ORIENT,
        false,
    ),
    (
        "help me understand",
        "ORIENT",
        &["help me understand/ORIENT"],
        ORIENT,
        false,
    ),
    (
        "tell me what's wrong",
        "REVIEW",
        &["tell me what's wrong/REVIEW"],
        REVIEW,
        false,
    ),
    (
        "is this good",
        "REVIEW",
        &["is this good/REVIEW"],
        REVIEW,
        false,
    ),
    ("zoom out", "ORIENT", &["zoom out/ORIENT"], ORIENT, false),
    (
        "how does X work",
        "ORIENT",
        &["how does x work/ORIENT"],
        ORIENT,
        false,
    ),
    ("map this", "ORIENT", &["map this/ORIENT"], ORIENT, false),
    (
        "walk me through",
        "ORIENT",
        &["walk me through/ORIENT"],
        ORIENT,
        false,
    ),
    ("where is X", "ORIENT", &["where is/ORIENT"], ORIENT, false),
    (
        "what does this do",
        "ORIENT",
        &["what does this do/ORIENT"],
        ORIENT,
        false,
    ),
    (
        "I'm unfamiliar with",
        "ORIENT",
        &["unfamiliar/ORIENT"],
        ORIENT,
        false,
    ),
    ("just add the endpoint", "BUILD", &["add/BUILD"], NEW, false),
    ("quickly fix X", "DEBUG", &["fix/ERROR"], ERROR, false),
    ("simply wire Y", "BUILD", &["wire/BUILD"], NEW, false),
    ("plan", "PLAN", &["plan/PLAN"], PLAN, false),
    ("design", "PLAN", &["design/PLAN"], PLAN, false),
    ("architect", "PLAN", &["architect/PLAN"], PLAN, false),
    ("brainstorm", "PLAN", &["brainstorm/PLAN"], PLAN, false),
];

/// What developers type, one workflow at a time.
const REALISTIC: &[Row] = &[
    // DEBUG
    (
        "The login page crashes when I submit an empty form",
        "DEBUG",
        &["crashes/ERROR"],
        ERROR,
        false,
    ),
    (
        "fix the failing test in tests/parse.rs",
        "DEBUG",
        &["fix/ERROR", "failing/ERROR"],
        ERROR,
        false,
    ),
    (
        "debug the intermittent 502 from the proxy",
        "DEBUG",
        &["debug/ERROR"],
        ERROR,
        false,
    ),
    (
        "Troubleshoot why the Docker build is broken on arm64",
        "DEBUG",
        &["troubleshoot/ERROR", "broken/ERROR"],
        ERROR,
        false,
    ),
    (
        "there's a bug in the pagination: page 2 repeats page 1",
        "DEBUG",
        &["bug/ERROR"],
        ERROR,
        false,
    ),
    (
        "Error: cannot find module 'foo' when running npm start",
        "DEBUG",
        &["error/ERROR"],
        ERROR,
        false,
    ),
    (
        "fix issue #42",
        "DEBUG",
        &["fix/ERROR", "issue/ERROR"],
        ERROR,
        false,
    ),
    (
        "Build fails on main after the tokio bump",
        "DEBUG",
        &["fails/ERROR"],
        ERROR,
        false,
    ),
    (
        "Why does `baton flow resume` hang after a crash?",
        "DEBUG",
        &["crash/ERROR"],
        ERROR,
        false,
    ),
    // PLAN
    (
        "plan the migration from SQLite to Postgres",
        "PLAN",
        &["plan/PLAN"],
        PLAN,
        false,
    ),
    (
        "Design a plugin system for custom tools",
        "PLAN",
        &["design/PLAN"],
        PLAN,
        false,
    ),
    (
        "brainstorm ways to cut cold-start time",
        "PLAN",
        &["brainstorm/PLAN"],
        PLAN,
        false,
    ),
    (
        "write a spec for the workflow store",
        "PLAN",
        &["spec/PLAN"],
        PLAN,
        false,
    ),
    (
        "we need a roadmap and a strategy for the v2 API",
        "PLAN",
        &["roadmap/PLAN", "strategy/PLAN"],
        PLAN,
        false,
    ),
    // REVIEW
    (
        "review the error handling in the parser",
        "REVIEW",
        &["review/REVIEW"],
        REVIEW,
        false,
    ),
    (
        "Audit our dependencies for known CVEs",
        "REVIEW",
        &["audit/REVIEW"],
        REVIEW,
        false,
    ),
    (
        "Can you analyse the performance of the SSE decoder?",
        "REVIEW",
        &["analyse/REVIEW"],
        REVIEW,
        false,
    ),
    (
        "assess whether the cache layer is worth keeping",
        "REVIEW",
        &["assess/REVIEW"],
        REVIEW,
        false,
    ),
    (
        "Is this approach good?",
        "REVIEW",
        &["is this approach good/REVIEW"],
        REVIEW,
        false,
    ),
    (
        "tell me what's wrong with this function",
        "REVIEW",
        &["tell me what's wrong/REVIEW"],
        REVIEW,
        false,
    ),
    (
        "do a code review of the flow engine",
        "REVIEW",
        &["review/REVIEW"],
        REVIEW,
        false,
    ),
    // ORIENT
    (
        "explain how the retry loop works",
        "ORIENT",
        &["explain/ORIENT"],
        ORIENT,
        false,
    ),
    (
        "walk me through the Flow integration engine",
        "ORIENT",
        &["walk me through/ORIENT"],
        ORIENT,
        false,
    ),
    (
        "Where is the config loaded?",
        "ORIENT",
        &["where is/ORIENT"],
        ORIENT,
        false,
    ),
    (
        "where are sessions stored on disk?",
        "ORIENT",
        &["where are/ORIENT"],
        ORIENT,
        false,
    ),
    (
        "what does this function do?",
        "ORIENT",
        &["what does this function do/ORIENT"],
        ORIENT,
        false,
    ),
    (
        "How does the session transcript work?",
        "ORIENT",
        &["how does the session transcript work/ORIENT"],
        ORIENT,
        false,
    ),
    (
        "Help me understand the Landlock rules before I change them",
        "ORIENT",
        &["help me understand/ORIENT"],
        ORIENT,
        false,
    ),
    // BUILD
    (
        "add a --verbose flag to the CLI and test it",
        "BUILD",
        &["add/BUILD"],
        NEW,
        false,
    ),
    (
        "refactor the printer module into smaller files",
        "BUILD",
        &["refactor/BUILD"],
        NEW,
        false,
    ),
    (
        "Rename `run_flow` to `drive`",
        "BUILD",
        &["rename/BUILD"],
        NEW,
        false,
    ),
    (
        "make the status view show elapsed time",
        "BUILD",
        &["make/BUILD"],
        NEW,
        false,
    ),
    (
        "set up the VS Code debugger",
        "BUILD",
        &["set up/BUILD"],
        NEW,
        false,
    ),
    ("add tests for the tokenizer", "BUILD", &[], DEFAULT, false),
];

/// Signals of more than one category: the rules that separate them, and the conflicts.
const MIXED: &[Row] = &[
    (
        "add error handling to the config loader",
        "BUILD",
        &["add/BUILD"],
        NEW,
        false,
    ),
    (
        "add crash reporting to the CLI",
        "BUILD",
        &["add/BUILD", "crash/ERROR"],
        NEW,
        false,
    ),
    (
        "fix the button alignment and add a dark-mode toggle",
        "BUILD",
        &["fix/ERROR", "add/BUILD"],
        NEW,
        false,
    ),
    (
        "the app crashes when I add an item to the cart",
        "DEBUG",
        &["crashes/ERROR"],
        ERROR,
        false,
    ),
    (
        "fix the crash and add a regression test",
        "DEBUG",
        &["fix/ERROR", "crash/ERROR"],
        ERROR,
        false,
    ),
    (
        "Implement the plan in docs/plan.md, phase 1 only",
        "BUILD",
        &["implement/BUILD", "plan/PLAN"],
        NEW,
        false,
    ),
    (
        "review the auth module for bugs",
        "REVIEW",
        &["review/REVIEW", "bugs/ERROR"],
        "primary deliverable: a review",
        false,
    ),
    (
        "explain the design of the cache",
        "ORIENT",
        &["explain/ORIENT", "design/PLAN"],
        "primary deliverable: an explanation",
        false,
    ),
    (
        "explain why the upload fails for files over 2 GB",
        "DEBUG",
        &["explain/ORIENT", "fails/ERROR"],
        DIAGNOSIS,
        false,
    ),
    (
        "help me understand the scheduler and review its locking",
        "ORIENT",
        &["help me understand/ORIENT", "review/REVIEW"],
        "\"help me understand\" is ORIENT",
        false,
    ),
    (
        "explain this code and tell me what's wrong with it",
        "REVIEW",
        &["explain/ORIENT", "tell me what's wrong/REVIEW"],
        "\"tell me what's wrong\" is REVIEW",
        false,
    ),
    (
        "explain the plugin API, then add a hello-world plugin",
        "ORIENT",
        &["explain/ORIENT", "add/BUILD"],
        ORIENT,
        false,
    ),
    (
        "I don't understand why the test fails",
        "DEBUG",
        &["understand/ORIENT", "fails/ERROR"],
        DIAGNOSIS,
        false,
    ),
    (
        "the design doc generator crashes",
        "DEBUG",
        &["design/PLAN", "crashes/ERROR"],
        "priority: ERROR over PLAN",
        false,
    ),
    (
        "plan the storage migration and fix the flaky upload",
        "DEBUG",
        &["plan/PLAN", "fix/ERROR"],
        "priority: ERROR over PLAN",
        true,
    ),
    (
        "review the parser and fix what you find",
        "DEBUG",
        &["review/REVIEW", "fix/ERROR"],
        "priority: ERROR over REVIEW",
        true,
    ),
    (
        "design the cache eviction policy, then review the current one",
        "PLAN",
        &["design/PLAN", "review/REVIEW"],
        "priority: PLAN over REVIEW",
        true,
    ),
];

/// Casing, punctuation, and words that contain a keyword without being one.
const FORMS: &[Row] = &[
    ("FIX THE BUILD!!!", "DEBUG", &["fix/ERROR"], ERROR, false),
    (
        "Is this good?!",
        "REVIEW",
        &["is this good/REVIEW"],
        REVIEW,
        false,
    ),
    (
        "where\u{2019}s the retry budget configured?",
        "ORIENT",
        &["where's/ORIENT"],
        ORIENT,
        false,
    ),
    (
        "what\u{2019}s wrong with the retry logic?",
        "REVIEW",
        &["what's wrong/REVIEW"],
        REVIEW,
        false,
    ),
    (
        "I'm unfamiliar with this codebase \u{2014} zoom out and map this for me",
        "ORIENT",
        &["unfamiliar/ORIENT", "zoom out/ORIENT", "map this/ORIENT"],
        ORIENT,
        false,
    ),
    (
        "Update: the login page crashes on Safari",
        "DEBUG",
        &["crashes/ERROR"],
        ERROR,
        false,
    ),
    (
        "prefix every log line with the session id",
        "BUILD",
        &[],
        DEFAULT,
        false,
    ),
    (
        "Add a suffix option and a fixture for the parser",
        "BUILD",
        &["add/BUILD"],
        NEW,
        false,
    ),
    (
        "attach a debugger to the failing test",
        "DEBUG",
        &["failing/ERROR"],
        ERROR,
        false,
    ),
    (
        "add an issuer claim; the planner and reviewer roles read it",
        "BUILD",
        &["add/BUILD"],
        NEW,
        false,
    ),
    (
        "explain src/error.rs and `fix_all()`",
        "ORIENT",
        &["explain/ORIENT"],
        ORIENT,
        false,
    ),
    (
        "please, please fix the bugs.",
        "DEBUG",
        &["fix/ERROR", "bugs/ERROR"],
        ERROR,
        false,
    ),
];

/// Where words are not meaning: decided deliberately, and documented in docs/workflows.md.
const LIMITS: &[Row] = &[
    // A question with no signal word falls to the default.
    ("how do I add a new provider?", "BUILD", &[], DEFAULT, false),
    // The lead asks where; ORIENT writes nothing.
    (
        "where is the bug that drops messages?",
        "ORIENT",
        &["where is/ORIENT", "bug/ERROR"],
        "primary deliverable: an explanation",
        false,
    ),
];

fn shape(d: &Decision) -> (String, Vec<String>, String, bool) {
    (
        d.workflow.to_string(),
        d.signals
            .iter()
            .map(|s| format!("{}/{}", s.text, s.category))
            .collect(),
        d.rule.to_string(),
        d.conflict(),
    )
}

#[test]
fn every_request_of_the_table_gets_its_decision() {
    let rows: Vec<&Row> = SEED
        .iter()
        .chain(REALISTIC)
        .chain(MIXED)
        .chain(FORMS)
        .chain(LIMITS)
        .collect();
    assert_eq!(rows.len(), 84, "docs/workflows.md counts the rows");
    let mut wrong = Vec::new();
    for (request, workflow, signals, rule, conflict) in rows {
        let got = shape(&route(request));
        let want = (
            workflow.to_string(),
            signals.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            rule.to_string(),
            *conflict,
        );
        if got != want {
            wrong.push(format!("{request:?}\n   want {want:?}\n    got {got:?}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} rows differ:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn the_headline_lists_the_signals_in_order() {
    assert_eq!(
        route("add a dark-mode toggle and fix the button alignment").headline(),
        "-> BUILD workflow (signals: add, fix)"
    );
    assert_eq!(
        route("plan the storage migration and fix the flaky upload").headline(),
        "-> DEBUG workflow (signals: plan, fix)"
    );
}
