//! Intent routing: which workflow a request belongs to, decided by rules, with the words and
//! the rule that decided it.
//!
//! The signal table is cc10x's (ERROR → DEBUG, PLAN, REVIEW, ORIENT, anything else BUILD, in
//! that priority), plus BUILD verbs (`add`, `implement`, `refactor`, …) that name new or changed
//! functionality. [`route`] finds the signals ([`lexicon`] lists every word and phrase, [`words`]
//! says how a request is split into words), then decides with these rules, first that applies:
//!
//! 1. No signal: BUILD ([`Rule::DefaultBuild`]).
//! 2. The *lead* signals — what the request, or one clause of it, starts by asking for (`fix`
//!    in "please fix the crash", `add` and `fix` in "add X and fix Y") — name the deliverable.
//!    When there are lead signals only their categories compete; other signals are mentions
//!    ("add error handling" asks for functionality, it reports no error). Without a lead
//!    signal, every signal competes. An ERROR word after `why` in its sentence (`explain why
//!    the upload fails`) asks for a diagnosis and competes as lead.
//! 3. One category competes: its workflow. The rule is [`Rule::PrimaryDeliverable`] when
//!    mentions of another category were set aside, or the category is BUILD; otherwise
//!    [`Rule::OrientBeforeBuild`] for ORIENT and [`Rule::Priority`] over BUILD for the rest.
//! 4. ERROR and BUILD compete: BUILD — the deliverable is new functionality and the fix is part
//!    of it ([`Rule::PrimaryDeliverable`]).
//! 5. A diagnosis competes with anything but BUILD: DEBUG ([`Rule::PrimaryDeliverable`]).
//! 6. ORIENT and REVIEW compete (BUILD may too): `help me understand` is ORIENT
//!    ([`Rule::HelpMeUnderstand`]), `tell me what's wrong` REVIEW ([`Rule::WhatsWrong`]).
//! 7. ORIENT and BUILD compete: ORIENT, which is read-only ([`Rule::OrientBeforeBuild`]).
//! 8. Otherwise the priority table decides ([`Rule::Priority`]). When the competitors were lead
//!    signals — the request asks for two different things — the decision is a *conflict*
//!    ([`Decision::conflict`]), and [`Decision::contenders`] lists the workflows in play.
//!
//! A conflict is where a small model may break the tie: [`tiebreak`] holds its prompt and the
//! check of its strict JSON answer, and `baton run` makes the call when a `fast` route is
//! configured. Nothing in this module calls a model; without a tiebreak the priority table
//! decides.
//!
//! TRIAGE and CODEBASE-HEALTH are never chosen by signals; only an explicit workflow
//! ([`route_as`]) selects them.

mod lexicon;
pub mod scope;
pub mod tiebreak;
mod words;

use std::fmt;
use std::str::FromStr;

/// A workflow a request can run as. The wire spellings (`as_str`) are those of the cc10x
/// workflow artifact's `workflow_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WorkflowKind {
    /// New or changed functionality: builder, reviewer and failure hunter, verifier.
    Build,
    /// Diagnose and repair broken behaviour: bug investigator, reviewer, verifier.
    Debug,
    /// A plan, with a bounded fresh review.
    Plan,
    /// An advisory review; never creates a code-changing task.
    Review,
    /// A read-only explanation of existing code; no agents that write.
    Orient,
    /// Read-only: categorise and verify a bug report, write a brief. Only chosen explicitly.
    Triage,
    /// Read-only: scan the architecture for deepening candidates. Only chosen explicitly.
    CodebaseHealth,
}

impl WorkflowKind {
    /// Every workflow, in the order of the docs.
    pub const ALL: [WorkflowKind; 7] = [
        WorkflowKind::Build,
        WorkflowKind::Debug,
        WorkflowKind::Plan,
        WorkflowKind::Review,
        WorkflowKind::Orient,
        WorkflowKind::Triage,
        WorkflowKind::CodebaseHealth,
    ];

    /// `BUILD`, `DEBUG`, `PLAN`, `REVIEW`, `ORIENT`, `TRIAGE`, `CODEBASE-HEALTH`.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkflowKind::Build => "BUILD",
            WorkflowKind::Debug => "DEBUG",
            WorkflowKind::Plan => "PLAN",
            WorkflowKind::Review => "REVIEW",
            WorkflowKind::Orient => "ORIENT",
            WorkflowKind::Triage => "TRIAGE",
            WorkflowKind::CodebaseHealth => "CODEBASE-HEALTH",
        }
    }
}

impl fmt::Display for WorkflowKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not a workflow; its message lists the names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownWorkflow(pub String);

impl fmt::Display for UnknownWorkflow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = WorkflowKind::ALL.iter().map(|w| w.as_str()).collect();
        write!(
            f,
            "unknown workflow {:?}: use one of {}",
            self.0,
            names.join(", ")
        )
    }
}

impl std::error::Error for UnknownWorkflow {}

impl FromStr for WorkflowKind {
    type Err = UnknownWorkflow;

    /// A wire spelling in any case, `_` for `-` allowed (`codebase_health`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim().to_ascii_uppercase().replace('_', "-");
        WorkflowKind::ALL
            .into_iter()
            .find(|w| w.as_str() == wanted)
            .ok_or_else(|| UnknownWorkflow(s.to_string()))
    }
}

baton_protocol::closed_set! {
    /// The category of a signal: a row of the routing table.
    #[derive(PartialOrd, Ord)]
    pub enum Category ("category") {
        /// Priority 1: something is broken. Routes to DEBUG.
        Error = "ERROR",
        /// Priority 2. Routes to PLAN.
        Plan = "PLAN",
        /// Priority 3. Routes to REVIEW.
        Review = "REVIEW",
        /// Priority 4. Routes to ORIENT.
        Orient = "ORIENT",
        /// Last: a verb asking for new or changed functionality. Routes to BUILD, as does no signal.
        Build = "BUILD",
    }
}

impl Category {
    /// The workflow this category routes to.
    pub fn workflow(self) -> WorkflowKind {
        match self {
            Category::Error => WorkflowKind::Debug,
            Category::Plan => WorkflowKind::Plan,
            Category::Review => WorkflowKind::Review,
            Category::Orient => WorkflowKind::Orient,
            Category::Build => WorkflowKind::Build,
        }
    }

    /// What a request whose deliverable is of this category asks for.
    fn deliverable(self) -> &'static str {
        match self {
            Category::Error => "diagnosing or repairing broken behaviour",
            Category::Plan => "a plan",
            Category::Review => "a review",
            Category::Orient => "an explanation",
            Category::Build => "new functionality",
        }
    }
}

/// A word or phrase of the request that matched the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signal {
    /// The request's own words, lowercased, one space between them (`fix`, `failing`,
    /// `how does the retry loop work`).
    pub text: String,
    pub category: Category,
}

/// The rule that decided. `Display` gives the text `baton route` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// The workflow was given (`--workflow`): "override --workflow".
    Override,
    /// No signal: "default BUILD".
    DefaultBuild,
    /// The priority table: "priority: ERROR over BUILD".
    Priority { winner: Category, over: Category },
    /// What the request asks for: "primary deliverable: new functionality".
    PrimaryDeliverable(Category),
    /// ORIENT is read-only and comes before BUILD: "ORIENT before BUILD".
    OrientBeforeBuild,
    /// "help me understand" is ORIENT, not REVIEW.
    HelpMeUnderstand,
    /// "tell me what's wrong" is REVIEW, not ORIENT.
    WhatsWrong,
    /// A conflict the `fast` model broke ([`tiebreak`]).
    Tiebreak,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rule::Override => f.write_str("override --workflow"),
            Rule::DefaultBuild => f.write_str("default BUILD"),
            Rule::Priority { winner, over } => write!(f, "priority: {winner} over {over}"),
            Rule::PrimaryDeliverable(c) => write!(f, "primary deliverable: {}", c.deliverable()),
            Rule::OrientBeforeBuild => f.write_str("ORIENT before BUILD"),
            Rule::HelpMeUnderstand => f.write_str("\"help me understand\" is ORIENT"),
            Rule::WhatsWrong => f.write_str("\"tell me what's wrong\" is REVIEW"),
            Rule::Tiebreak => f.write_str("tiebreak by the fast model"),
        }
    }
}

/// What the router decided for one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub workflow: WorkflowKind,
    /// Every signal, in the order of the request, each text and category once.
    pub signals: Vec<Signal>,
    pub rule: Rule,
    /// The workflows the request asked for at once, in priority order, when the priority table
    /// alone had to pick; empty otherwise.
    contenders: Vec<WorkflowKind>,
}

impl Decision {
    /// Whether the rules could not separate two categories cleanly: the request leads with
    /// signals of two or more categories and only the priority table picked one; `baton run`
    /// lets a `fast` model break the tie when one is configured ([`tiebreak`]).
    pub fn conflict(&self) -> bool {
        self.contenders.len() > 1
    }

    /// The workflows in conflict, in priority order (the first is the one chosen); empty when
    /// there is no conflict.
    pub fn contenders(&self) -> &[WorkflowKind] {
        &self.contenders
    }

    /// `-> BUILD workflow (signals: add, fix)`, the line printed before a workflow runs
    /// (`signals: none` when there is none).
    pub fn headline(&self) -> String {
        let signals = if self.signals.is_empty() {
            "none".to_string()
        } else {
            let texts: Vec<&str> = self.signals.iter().map(|s| s.text.as_str()).collect();
            texts.join(", ")
        };
        format!("-> {} workflow (signals: {signals})", self.workflow)
    }
}

/// The signals of a request (deduplicated, in order) and what the rules need to know of them.
struct Scan {
    signals: Vec<Signal>,
    found: Vec<lexicon::Found>,
}

fn scan(request: &str) -> Scan {
    let tokens = words::tokens(request);
    let found = lexicon::scan(&tokens);
    let mut signals: Vec<Signal> = Vec::new();
    for f in &found {
        let text: Vec<&str> = tokens[f.start..f.end]
            .iter()
            .map(|t| t.text.as_str())
            .collect();
        let signal = Signal {
            text: text.join(" "),
            category: f.category,
        };
        if !signals.contains(&signal) {
            signals.push(signal);
        }
    }
    Scan { signals, found }
}

/// Routes `request` by the rules of the module doc. Calls no model; an empty request is BUILD
/// by default (callers that take requests from people refuse it first).
pub fn route(request: &str) -> Decision {
    let Scan { signals, found } = scan(request);
    let (workflow, rule, contenders) = decide(&found);
    Decision {
        workflow,
        signals,
        rule,
        contenders,
    }
}

/// The decision for a request whose workflow was chosen by hand (`--workflow`): that workflow,
/// with the request's signals for the record.
pub fn route_as(request: &str, workflow: WorkflowKind) -> Decision {
    Decision {
        workflow,
        signals: scan(request).signals,
        rule: Rule::Override,
        contenders: Vec::new(),
    }
}

/// The set of categories as a sorted list (priority order).
fn categories(found: &[&lexicon::Found]) -> Vec<Category> {
    let mut out: Vec<Category> = found.iter().map(|f| f.category).collect();
    out.sort();
    out.dedup();
    out
}

fn decide(found: &[lexicon::Found]) -> (WorkflowKind, Rule, Vec<WorkflowKind>) {
    let leading: Vec<&lexicon::Found> = found.iter().filter(|f| f.lead || f.diagnosis).collect();
    let from_lead = !leading.is_empty();
    let competing = if from_lead {
        leading
    } else {
        found.iter().collect()
    };
    let set = categories(&competing);
    let has = |c: Category| set.contains(&c);
    let tagged = |tag: lexicon::Tag| competing.iter().any(|f| f.tag == Some(tag));
    let clean = |c: Category, rule: Rule| (c.workflow(), rule, Vec::new());
    match set.as_slice() {
        [] => return clean(Category::Build, Rule::DefaultBuild),
        [only] => {
            let only = *only;
            // A mention of another category was set aside for what the request asks.
            let set_aside = found.iter().any(|f| f.category != only);
            let rule = if set_aside {
                Rule::PrimaryDeliverable(only)
            } else {
                match only {
                    Category::Build => Rule::PrimaryDeliverable(only),
                    Category::Orient => Rule::OrientBeforeBuild,
                    Category::Error | Category::Plan | Category::Review => Rule::Priority {
                        winner: only,
                        over: Category::Build,
                    },
                }
            };
            return clean(only, rule);
        }
        [Category::Error, Category::Build] => {
            return clean(Category::Build, Rule::PrimaryDeliverable(Category::Build))
        }
        _ => {}
    }
    if has(Category::Error) && !has(Category::Build) && competing.iter().any(|f| f.diagnosis) {
        return clean(Category::Error, Rule::PrimaryDeliverable(Category::Error));
    }
    let reading = set
        .iter()
        .all(|c| matches!(c, Category::Orient | Category::Review | Category::Build));
    if reading && has(Category::Orient) && has(Category::Review) {
        match (
            tagged(lexicon::Tag::HelpMeUnderstand),
            tagged(lexicon::Tag::WhatsWrong),
        ) {
            (true, false) => return clean(Category::Orient, Rule::HelpMeUnderstand),
            (false, true) => return clean(Category::Review, Rule::WhatsWrong),
            (true, true) | (false, false) => {}
        }
    }
    if set == [Category::Orient, Category::Build] {
        return clean(Category::Orient, Rule::OrientBeforeBuild);
    }
    // Two or more categories, no rule above: the priority table.
    let (winner, over) = (set[0], set[1]);
    let contenders = if from_lead {
        set.iter().map(|c| c.workflow()).collect()
    } else {
        Vec::new()
    };
    (
        winner.workflow(),
        Rule::Priority { winner, over },
        contenders,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn texts(d: &Decision) -> Vec<String> {
        d.signals
            .iter()
            .map(|s| format!("{}/{}", s.text, s.category))
            .collect()
    }

    #[test]
    fn the_seed_example_is_build_with_the_fix_in_scope() {
        let d = route("add a dark-mode toggle and fix the button alignment");
        assert_eq!(d.workflow, WorkflowKind::Build);
        assert_eq!(texts(&d), ["add/BUILD", "fix/ERROR"]);
        assert_eq!(d.rule.to_string(), "primary deliverable: new functionality");
        assert!(!d.conflict());
        assert_eq!(d.headline(), "-> BUILD workflow (signals: add, fix)");
    }

    #[test]
    fn no_signal_is_build_by_default() {
        for request in [
            "",
            "   ",
            "the sky is blue",
            "prefix the ids with the tenant",
        ] {
            let d = route(request);
            assert_eq!(
                (d.workflow, d.rule, d.signals.len()),
                (WorkflowKind::Build, Rule::DefaultBuild, 0),
                "{request:?}"
            );
            assert_eq!(d.headline(), "-> BUILD workflow (signals: none)");
        }
    }

    #[test]
    fn one_category_wins_over_the_default() {
        let d = route("the checkout page crashes on submit");
        assert_eq!(d.workflow, WorkflowKind::Debug);
        assert_eq!(d.rule.to_string(), "priority: ERROR over BUILD");
        assert_eq!(
            route("explain the retry loop").rule,
            Rule::OrientBeforeBuild
        );
    }

    #[test]
    fn a_lead_request_sets_aside_a_higher_priority_mention() {
        let d = route("review the auth module for bugs");
        assert_eq!(d.workflow, WorkflowKind::Review);
        assert_eq!(d.rule.to_string(), "primary deliverable: a review");
        assert_eq!(texts(&d), ["review/REVIEW", "bugs/ERROR"]);
        assert!(!d.conflict());
    }

    #[test]
    fn two_requests_at_once_are_a_conflict_decided_by_priority() {
        let d = route("plan the storage migration and fix the flaky upload");
        assert_eq!(d.workflow, WorkflowKind::Debug);
        assert_eq!(d.rule.to_string(), "priority: ERROR over PLAN");
        assert!(d.conflict());
        assert_eq!(d.contenders(), [WorkflowKind::Debug, WorkflowKind::Plan]);
        // Mentions only: the table's own order, no conflict.
        let d = route("the design doc generator crashes");
        assert_eq!(d.rule.to_string(), "priority: ERROR over PLAN");
        assert!(!d.conflict());
        assert!(d.contenders().is_empty());
    }

    #[test]
    fn signals_are_listed_once_in_request_order() {
        let d = route("fix the bug, fix the other bug");
        assert_eq!(texts(&d), ["fix/ERROR", "bug/ERROR"]);
    }

    #[test]
    fn an_override_keeps_the_signals_and_names_the_rule() {
        let d = route_as("fix the crash", WorkflowKind::Triage);
        assert_eq!(d.workflow, WorkflowKind::Triage);
        assert_eq!(d.rule.to_string(), "override --workflow");
        assert_eq!(texts(&d), ["fix/ERROR", "crash/ERROR"]);
        assert!(!d.conflict());
    }

    #[test]
    fn workflow_names_parse_in_any_case_and_list_the_names_when_unknown() {
        assert_eq!("build".parse(), Ok(WorkflowKind::Build));
        assert_eq!("CODEBASE-HEALTH".parse(), Ok(WorkflowKind::CodebaseHealth));
        assert_eq!("codebase_health".parse(), Ok(WorkflowKind::CodebaseHealth));
        for kind in WorkflowKind::ALL {
            assert_eq!(kind.as_str().parse(), Ok(kind));
        }
        let err = "QUICK".parse::<WorkflowKind>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown workflow \"QUICK\": use one of BUILD, DEBUG, PLAN, REVIEW, ORIENT, TRIAGE, CODEBASE-HEALTH"
        );
    }

    #[test]
    fn triage_and_codebase_health_are_never_routed_to() {
        for request in [
            "triage bug report #99",
            "audit codebase architecture for deepening opportunities",
            "check the codebase health",
        ] {
            let d = route(request);
            assert!(
                !matches!(
                    d.workflow,
                    WorkflowKind::Triage | WorkflowKind::CodebaseHealth
                ),
                "{request}: {d:?}"
            );
        }
    }
}
