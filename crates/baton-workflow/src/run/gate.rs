//! Checkpoints (the questions a workflow stops on), the user's answers to them, and the brief a
//! finished or stopped workflow prints.

use crate::artifact::{ProofStatus, TaskStatus};
use crate::memory::GateRisk;
use crate::state::{Checkpoint, Gate, Record, Spent};

/// How an answer to a checkpoint is to be carried out.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Stop the workflow for good (`abort`).
    Abort,
    /// Scope decision: remediate with this scope.
    Scope(&'static str),
    /// Circuit breaker: finish now, the open findings deferred and the work marked unverified.
    Accept,
    /// Circuit breaker: allow one more remediation cycle.
    OneMoreCycle,
    /// Any other gate: dispatch the stopped tasks again with the answer as guidance.
    Retry,
    /// The finishing choice: `merge`, `keep` or `discard` the workflow's branch.
    Finish(&'static str),
    /// The deferred findings' triage: `fix_now`, `follow_up` or `accepted`.
    Triage(&'static str),
    /// A finding against a plan mandate: the plan governs (`true`) or the finding.
    PlanGoverns(bool),
    /// Every phase verified: run the final whole-branch review (`true`) or skip it.
    FinalReview(bool),
    /// The hunter's HIGH findings or the verifier's failure: create the fix.
    Remediate,
    /// The hunter's HIGH findings: go on, the findings deferred.
    Proceed,
    /// The verifier recommends reverting: stop, the revert left to the user.
    Revert,
    /// Broad work: plan it first (`true`, the workflow becomes a PLAN) or build directly.
    PlanFirst(bool),
    /// A REVIEW that requested changes: a BUILD fixes them (`true`) or done for now.
    StartBuild(bool),
    /// PLAN's research offer: research first (`true`) or plan now.
    Research(bool),
    /// PLAN's Doubt Pass: run it (`true`) or go on to the fresh review.
    Doubt(bool),
}

/// What a gate risks when `AUTO_PROCEED` would take its recommended option.
pub fn risk(gate: Gate) -> GateRisk {
    match gate {
        // The recommended finishing choice is `keep`, which changes nothing.
        Gate::ScopeDecision
        | Gate::Finish
        | Gate::DeferredTriage
        | Gate::FinalReview
        | Gate::HunterFindings
        | Gate::PlanFirst
        | Gate::ResearchOffer
        | Gate::DoubtPass
        | Gate::MissingPlan => GateRisk::Ordinary,
        _ => GateRisk::FailureStop,
    }
}

/// The question for a gate.
pub fn checkpoint(gate: Gate, reason: &str, brief: String) -> Checkpoint {
    let (question, options, recommended): (String, Vec<&str>, Option<&str>) = match gate {
        Gate::ScopeDecision => (
            format!("{reason}. Fix the critical issues only, or all issues?"),
            vec!["critical only", "all issues", "abort"],
            Some("critical only"),
        ),
        Gate::CircuitBreaker => (
            format!(
                "{reason}. Allow one more remediation cycle, accept the work as it is (the open findings are deferred and the work is marked unverified), or abort?"
            ),
            vec!["one more cycle", "accept", "abort"],
            None,
        ),
        Gate::HunterFindings => (
            format!("{reason}. Remediate them (one fix, then re-review, re-hunt and verification), or proceed with them deferred (listed in the brief)?"),
            vec!["remediate", "proceed"],
            Some("remediate"),
        ),
        Gate::RevertDecision => (
            format!("{reason}. Revert (the workflow stops; the brief gives the command that puts the phase's base back), or create a fix?"),
            vec!["revert", "fix"],
            None,
        ),
        Gate::PlanFirst => (
            format!("{reason}. Plan it first (a PLAN workflow writes a phased plan that `baton run --plan` then builds phase by phase), or build it directly as one phase?"),
            vec!["plan first", "build directly"],
            Some("plan first"),
        ),
        Gate::ResearchOffer => (
            format!("{reason}. Research it on the web and GitHub before planning (the planner gets the research files), or plan now?"),
            vec!["research", "plan now"],
            Some("research"),
        ),
        Gate::DoubtPass => (
            format!("{reason}. Run a Doubt Pass first (the brainstormer argues against its key decision and saves the objections, which the fresh review weighs), or go on to the fresh review?"),
            vec!["run doubt pass", "no doubt pass"],
            Some("run doubt pass"),
        ),
        Gate::BuildTransition => (
            format!("The review requested changes ({reason}). Start a BUILD that fixes them (this workflow goes on as that BUILD, the findings handed to its builder), or done for now (the findings stay in the brief and memory)?"),
            vec!["start build to fix", "done for now"],
            Some("start build to fix"),
        ),
        Gate::IntentReadiness => (
            format!("{reason}. Say what to change, where, and what will show it is done (your words join the request), or `abort`."),
            Vec::new(),
            None,
        ),
        Gate::MissingPlan => (
            format!("{reason}. Re-plan first (a PLAN workflow writes the plan again, then `baton run --plan` builds it), or build without a plan (this request as one phase)?"),
            vec!["re-plan first", "build without plan"],
            Some("re-plan first"),
        ),
        Gate::FinalReview => (
            format!("{reason}. Run a final review of the whole branch (one reviewer over every phase's change; its findings get one fix wave and a re-verification), or skip to finishing?"),
            vec!["run", "skip"],
            Some("run"),
        ),
        Gate::WhichGoverns => (
            format!("{reason}. Which governs? `plan governs`: the finding is dismissed (the reason is recorded) and the mandate stays; `finding governs`: the mandate is overridden and a fix applies the finding"),
            vec!["plan governs", "finding governs"],
            None,
        ),
        Gate::DeferredTriage => (
            format!("{reason}. Fix them now (you fix them before the work is merged; memory lists them as to fix now), file them as follow-ups (memory keeps them open), or accept them knowingly (memory's Decisions records it)? baton changes no code for any answer"),
            vec!["fix now", "follow up", "accept"],
            Some("follow up"),
        ),
        Gate::Finish => (
            format!("{reason}. Merge it into the base branch (fast-forward, then the test suite on the merged tree before the worktree and branch go), keep the branch, push it for a pull request, or discard it?"),
            vec!["merge", "keep", "pr", "discard"],
            Some("keep"),
        ),
        Gate::ConfirmDiscard => (
            format!("{reason}. Answer discard again to delete them, or keep the branch?"),
            vec!["discard", "keep"],
            Some("keep"),
        ),
        Gate::PhaseDecision => (
            format!("{reason}. Answer with your decision (the phase's builder gets your words, and they join the approved decisions), or `abort`."),
            Vec::new(),
            None,
        ),
        Gate::HumanAction => (
            format!("{reason}. Do it, then answer with what you did (the phase's builder gets your words), or `abort`."),
            Vec::new(),
            None,
        ),
        Gate::HumanVerify => (
            format!("{reason}. Answer `verified` to go on, or say what is wrong (a fix runs with your words, then the phase is reviewed, verified and shown to you again), or `abort`."),
            Vec::new(),
            None,
        ),
        Gate::Budget => (
            format!("{reason}. Raise the budget (resume with --budget-usd or --budget-tokens and --answer continue) or abort?"),
            vec!["continue", "abort"],
            None,
        ),
        _ => (
            format!("{reason}. Answer with guidance for the agent (it is dispatched again with your words), or `abort`."),
            Vec::new(),
            None,
        ),
    };
    Checkpoint {
        gate,
        question,
        options: options.into_iter().map(str::to_string).collect(),
        recommended: recommended.map(str::to_string),
        brief,
    }
}

/// Reads the user's answer to `cp`. An option gate takes one of its options exactly — the words
/// alone, in any case, with spaces trimmed and runs of spaces as one — or `abort`; anything else
/// (a prefix, an option with more words, `abort please`) is refused naming the options, so that
/// no answer is taken for one it merely starts with. A free-text gate takes any text as guidance,
/// `abort` alone stopping the workflow.
pub fn read_answer(cp: &Checkpoint, answer: &str) -> Result<Answer, String> {
    let a = answer.trim();
    if a.is_empty() {
        return Err("--answer is empty: answer the question, or `abort`".into());
    }
    let words = a.split_whitespace().collect::<Vec<_>>().join(" ");
    let lower = words.to_lowercase();
    if lower == "abort" || lower == "stop" {
        return Ok(Answer::Abort);
    }
    if cp.options.is_empty() {
        return Ok(Answer::Retry);
    }
    let Some(chosen) = cp.options.iter().find(|o| o.to_lowercase() == lower) else {
        return Err(format!(
            "the {} checkpoint takes one of: {} (you answered {a:?}): answer with one of them \
             alone, e.g. --answer {:?}",
            cp.gate,
            cp.options.join(", "),
            cp.recommended.as_deref().unwrap_or(cp.options[0].as_str())
        ));
    };
    Ok(match chosen.as_str() {
        "critical only" => Answer::Scope("CRITICAL_ONLY"),
        "all issues" => Answer::Scope("ALL_ISSUES"),
        "accept" if cp.gate == Gate::DeferredTriage => Answer::Triage("accepted"),
        "plan governs" => Answer::PlanGoverns(true),
        "finding governs" => Answer::PlanGoverns(false),
        "fix now" => Answer::Triage("fix_now"),
        "follow up" => Answer::Triage("follow_up"),
        "accept" => Answer::Accept,
        "one more cycle" => Answer::OneMoreCycle,
        "merge" => Answer::Finish("merge"),
        "keep" => Answer::Finish("keep"),
        "discard" => Answer::Finish("discard"),
        "pr" => Answer::Finish("pr"),
        "run" => Answer::FinalReview(true),
        "plan first" | "re-plan first" => Answer::PlanFirst(true),
        "start build to fix" => Answer::StartBuild(true),
        "done for now" => Answer::StartBuild(false),
        "build directly" | "build without plan" => Answer::PlanFirst(false),
        "remediate" | "fix" => Answer::Remediate,
        "proceed" => Answer::Proceed,
        "revert" => Answer::Revert,
        "research" => Answer::Research(true),
        "plan now" => Answer::Research(false),
        "run doubt pass" => Answer::Doubt(true),
        "no doubt pass" => Answer::Doubt(false),
        "skip" => Answer::FinalReview(false),
        "abort" => Answer::Abort,
        _ => Answer::Retry,
    })
}

fn tokens(n: u64) -> String {
    if n >= 10_000 {
        format!("{:.1}k", n as f64 / 1000.0)
    } else {
        n.to_string()
    }
}

/// One line: what was spent.
pub fn spent_line(s: &Spent) -> String {
    let mut line = format!(
        "{} dispatches, {} tokens in, {} out, ",
        s.dispatches,
        tokens(s.input_tokens),
        tokens(s.output_tokens),
    );
    // Nothing priced: no dollar figure, which would read as free.
    if s.unpriced_dispatches > 0 && s.cost_usd == 0.0 {
        let n = s.unpriced_dispatches;
        line.push_str(&format!(
            "unpriced ({n} dispatch{} at no known price: the cost is unknown, not zero)",
            if n == 1 { "" } else { "es" }
        ));
        return line;
    }
    line.push_str(&format!("${:.4}", s.cost_usd));
    if s.unpriced_dispatches > 0 {
        line.push_str(&format!(
            " (+{} unpriced dispatches: their cost is unknown, not zero)",
            s.unpriced_dispatches
        ));
    }
    line
}

/// The tasks in the order they ran: those whose outputs came in, in that order, then the rest
/// (the host's own steps, tasks not run) in id order (`t2` before `t10`). A remediation's fix and
/// re-review so come before the verifier that waited for them, as they ran.
fn run_order<'a>(
    tasks: &'a [crate::artifact::Task],
    finished: &[String],
) -> Vec<&'a crate::artifact::Task> {
    let num = |id: &str| {
        id.trim_start_matches('t')
            .parse::<u64>()
            .unwrap_or(u64::MAX)
    };
    let mut out: Vec<&crate::artifact::Task> = finished
        .iter()
        .filter_map(|id| tasks.iter().find(|t| &t.id == id))
        .collect();
    let mut rest: Vec<&crate::artifact::Task> =
        tasks.iter().filter(|t| !finished.contains(&t.id)).collect();
    rest.sort_by_key(|t| (num(&t.id), t.id.clone()));
    out.extend(rest);
    out
}

/// The decision-ready brief: the request, every task with its verdict, the remediation cycles,
/// the proof, what was spent, and why the workflow stands where it does.
pub fn brief_of(r: &Record, headline: &str) -> String {
    let (a, v) = (&r.artifact, &r.state);
    let mut out = String::new();
    out.push_str(headline);
    out.push('\n');
    if let Some(r) = &a.user_request {
        out.push_str(&format!("request: {r}\n"));
    }
    out.push_str("tasks:\n");
    for t in run_order(&v.tasks, &v.host.finished_order) {
        let output = v.host.outputs.get(&t.id);
        // A dispatch that failed, or whose answer holds no valid contract, is not `done`.
        let failed = output.is_some_and(|o| {
            o.error.is_some()
                || crate::contract::Role::from_name(&o.role)
                    .is_some_and(|r| crate::contract::parse(r, &o.text).is_err())
        });
        let status = match t.status {
            _ if failed => "failed",
            Some(TaskStatus::Completed) => "done",
            Some(TaskStatus::Deleted) => "pruned",
            Some(TaskStatus::InProgress) => "running",
            Some(TaskStatus::Pending) | None => "pending",
        };
        // A memory step is the host's own work: no agent ran it.
        let role = match (v.host.outputs.get(&t.id), t.kind) {
            (Some(o), _) => o.role.as_str(),
            (None, Some(crate::artifact::TaskKind::Memory)) => "host",
            (None, _) => "",
        };
        let verdict = v
            .host
            .outputs
            .get(&t.id)
            .and_then(|o| {
                crate::contract::Role::from_name(&o.role)
                    .and_then(|r| crate::contract::parse(r, &o.text).ok())
            })
            .map(|c| c.outcome.verdict().name())
            .unwrap_or("");
        // An investigator of a DEBUG fan-out: the files it owns, and those it edited.
        let lane = crate::engine::fan_in::lane_files(t)
            .map(|files| {
                let edited = output.map(|o| o.edited.join(", ")).unwrap_or_default();
                match edited.is_empty() {
                    true => format!(" (owns {})", files.join(", ")),
                    false => format!(" (owns {}; edited {edited})", files.join(", ")),
                }
            })
            .unwrap_or_default();
        out.push_str(&format!(
            "  {} {:<18} {:<8} {} {}{lane}\n",
            t.id,
            t.phase.as_deref().unwrap_or("?"),
            status,
            role,
            verdict
        ));
    }
    if !a.remediation_history.is_empty() {
        out.push_str(&format!(
            "remediation cycles: {}\n",
            a.remediation_history.len()
        ));
        let fixes: Vec<&crate::artifact::Task> = v
            .tasks
            .iter()
            .filter(|t| t.kind == Some(crate::artifact::TaskKind::Remfix))
            .collect();
        for t in fixes {
            out.push_str(&format!(
                "  - {} ({}): {}\n",
                t.id,
                t.scope.as_deref().unwrap_or("ALL_ISSUES"),
                t.reason.as_deref().unwrap_or("")
            ));
        }
    }
    if !a.deferred_findings.is_empty() {
        let triage = a
            .results
            .deferred_triage
            .as_ref()
            .map(|t| format!(" (triaged: {})", t.choice.replace('_', " ")))
            .unwrap_or_default();
        out.push_str(&format!(
            "deferred findings: {}{triage}\n",
            a.deferred_findings.len()
        ));
        for f in &a.deferred_findings {
            out.push_str(&format!(
                "  - [{}] {}\n",
                f.finding.severity, f.finding.text
            ));
        }
    }
    if let Some(b) = &a.results.baseline {
        match b.is_recorded() {
            true if b.failures.is_empty() => {}
            true => out.push_str(&format!(
                "pre-existing failures (failing before the build, not blamed on it): {}\n",
                b.failures.join(", ")
            )),
            false => out.push_str(&format!(
                "baseline: unavailable ({}): every test failure was suspect\n",
                b.reason.as_deref().unwrap_or("")
            )),
        }
    }
    out.push_str(&format!(
        "proof: {}\n",
        a.proof_status.map_or("none", ProofStatus::as_str)
    ));
    out.push_str(&format!("spent: {}\n", spent_line(&v.spent)));
    if let Some(f) = &v.host.finished {
        out.push_str(&format!("finish: {f}\n"));
    } else if let Some(wt) = &v.host.worktree {
        out.push_str(&format!(
            "worktree: {} on branch {}\n",
            wt.path.display(),
            wt.branch
        ));
    }
    if let Some(f) = &v.host.failure {
        out.push_str(&format!("stopped because: {f}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_gates_take_an_option_or_say_which_ones_exist() {
        let cp = checkpoint(
            Gate::ScopeDecision,
            "critical and high findings",
            String::new(),
        );
        assert_eq!(
            read_answer(&cp, "Critical only"),
            Ok(Answer::Scope("CRITICAL_ONLY"))
        );
        assert_eq!(
            read_answer(&cp, "  ALL   issues\n"),
            Ok(Answer::Scope("ALL_ISSUES"))
        );
        assert_eq!(read_answer(&cp, "abort"), Ok(Answer::Abort));
        assert_eq!(read_answer(&cp, " Abort "), Ok(Answer::Abort));
        // Only the option alone: not a prefix of one, nor an option followed by more words.
        for bad in [
            "maybe",
            "all",
            "critical",
            "abort please",
            "abortion",
            "Critical only, please",
            "all issues!",
        ] {
            let err = read_answer(&cp, bad).unwrap_err();
            assert!(
                err.contains("critical only, all issues, abort"),
                "{bad}: {err}"
            );
            assert!(err.contains("--answer \"critical only\""), "{bad}: {err}");
        }
        let finish = checkpoint(Gate::Finish, "verified", String::new());
        assert_eq!(read_answer(&finish, "MERGE"), Ok(Answer::Finish("merge")));
        assert!(read_answer(&finish, "merge it").is_err());
        assert!(read_answer(&finish, "keep going").is_err());
        let free = checkpoint(
            Gate::Clarification,
            "the planner needs answers",
            String::new(),
        );
        assert_eq!(read_answer(&free, "use postgres"), Ok(Answer::Retry));
        // Free text that starts with `abort` is guidance, not the word alone.
        assert_eq!(read_answer(&free, "abort please"), Ok(Answer::Retry));
        assert_eq!(read_answer(&free, "ABORT"), Ok(Answer::Abort));
        assert!(read_answer(&free, "  ").is_err());
    }

    #[test]
    fn spending_at_no_known_price_is_unpriced_not_free() {
        let mut s = Spent {
            input_tokens: 10,
            output_tokens: 5,
            dispatches: 1,
            unpriced_dispatches: 1,
            ..Spent::default()
        };
        let line = spent_line(&s);
        assert!(
            line.ends_with(
                "unpriced (1 dispatch at no known price: the cost is unknown, not zero)"
            ),
            "{line}"
        );
        s.cost_usd = 0.5;
        s.dispatches = 2;
        assert!(spent_line(&s).contains("$0.5000 (+1 unpriced"));
    }
}
