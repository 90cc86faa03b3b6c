//! The artifact's `results`: what the workflow's host and its agents recorded, by key, each key
//! typed. The host's own keys (the plan it trusted, the baseline, the bases of the phases, the
//! choices at the gates, the disputes) are fields; every other key is an agent's result
//! ([`AgentResult`]): the engine's summary of a contract (`builder`, `verifier`, …) or the
//! runner's record of a task (`component-builder`, `code-reviewer`, …). A key whose value does
//! not decode is an error naming it, as for the rest of the record.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::baseline::{Baseline, Deps};

/// `results`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Results {
    /// The plan file the workflow trusted, and its hash then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanPin>,
    /// The dependency install of a fresh worktree.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deps: Option<Deps>,
    /// The read-only git look at a BUILD's workspace before its first builder.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub git_preflight: Option<GitPreflight>,
    /// The test run before the first builder.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Baseline>,
    /// The disputes remediation raised against findings.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub disputes: Vec<Dispute>,
    /// The instruction-precedence key last resolved (the gate runs once per key).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub precedence: Option<String>,
    /// The commit the current phase started from (or `unavailable`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub git_base_sha: Option<String>,
    /// The phase `git_base_sha` is the base of.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub git_base_phase: Option<String>,
    /// The commit the workflow started from (or `unavailable`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workflow_base_sha: Option<String>,
    /// The final whole-branch review of a planned BUILD.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub final_branch_review: Option<FinalReview>,
    /// What a BUILD or DEBUG in place left in the working tree, uncommitted, once it ended: the
    /// next `baton flow start` (which needs a clean tree) tells it apart from other changes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub left_in_place: Option<LeftInPlace>,
    /// Which-governs answers: a review finding beside the plan mandate it contradicts, and
    /// whether the plan or the finding governs (remediation-and-research.md:203-212).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub plan_adjudications: Vec<PlanAdjudication>,
    /// The triage of the deferred findings before finishing (`fix_now`, `follow_up` or
    /// `accepted`, for the whole list; each finding keeps it as its `disposition` too).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deferred_triage: Option<GateChoice>,
    /// A BUILD's finishing choice (`merge`, `keep`, `pr` or `discard`), cc10x's
    /// `results.finishing.choice`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finishing: Option<GateChoice>,
    /// The user's choice at a revert gate, with its phase.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revert_decision: Option<GateChoice>,
    /// The user's choice at a hunter-findings gate, with its phase.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hunter_findings: Option<GateChoice>,
    /// The reviewers' findings merged into one summary (the reviewer's and the hunter's, one
    /// per place), written once they answered and before the verifier runs (seed 001:560).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub findings_summary: Option<Vec<crate::event::LoggedFinding>>,
    /// PLAN's research offer (plan-workflow.md:14-16): what the brainstormer named, and the
    /// user's choice once made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub research_offer: Option<ResearchOffer>,
    /// PLAN's Doubt Pass (plan-workflow.md:27), for a decision RFC or a critical-path plan: the
    /// user's choice and, once it ran, the file of its objections.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub doubt_pass: Option<DoubtPass>,
    /// Every other key: an agent's result (`null` in cc10x's skeleton until the agent ran).
    #[serde(flatten)]
    pub agents: BTreeMap<String, Option<AgentResult>>,
}

/// `results.git_preflight` (cc10x build-workflow 0a): what the finishing step needs to know of
/// the workspace, found with read-only git commands once, before the first builder.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GitPreflight {
    /// `true` (a linked worktree: the workflow's own, or one the user works in), `false` (the
    /// main checkout) or `submodule`.
    pub isolated: Isolation,
    /// The workspace is on no branch: a merge has nothing to merge into, and a pull request
    /// needs a branch first.
    pub detached_head: bool,
    /// A git command failed (not a repository, no git): why. The other fields are then guesses
    /// (`false`), and git-dependent steps say what to run instead of running it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded: Option<String>,
}

/// `results.git_preflight.isolated`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Isolation {
    #[serde(rename = "true")]
    Worktree,
    #[serde(rename = "false")]
    InPlace,
    #[serde(rename = "submodule")]
    Submodule,
}

/// `results.plan`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PlanPin {
    /// The plan file, as the workflow names it.
    pub file: String,
    pub sha256: String,
    /// How many phases it had.
    pub phases: usize,
}

/// `results.final_branch_review`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FinalReview {
    /// `running` (with its task), `skipped`, `clean` or `fixed`.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
}

/// The research offered before a plan: the outside technology the brainstormer named, and
/// `research` or `plan now` once the user chose (`None` while asked).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ResearchOffer {
    pub topics: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choice: Option<String>,
}

/// A Doubt Pass offered before a plan's fresh review: `run` or `skip`, and where its objections
/// are once it ran.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DoubtPass {
    pub choice: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

/// The change a workflow in place left uncommitted: a snapshot of the tree as it ended (a commit
/// no branch points at) and the files it differs in from the workflow's base.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LeftInPlace {
    pub snapshot: String,
    pub files: Vec<String>,
}

/// A choice the user made at a gate, and the phase it holds for.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GateChoice {
    pub phase: Option<String>,
    /// `fix` (revert gate), `proceed` (hunter findings), or the finishing choice.
    pub choice: String,
}

/// One which-governs answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PlanAdjudication {
    pub phase: Option<String>,
    pub finding: String,
    pub mandate: String,
    /// `plan` (the finding is dismissed) or `finding` (the mandate is overridden).
    pub governs: String,
}

/// One dispute, as `results.disputes` keeps it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Dispute {
    /// The remediation task that raised it.
    pub task: String,
    /// The finding, restated by the fix agent.
    pub finding: String,
    pub command: Option<String>,
    /// The output the fix agent says proves the finding false.
    pub claimed_output: Option<String>,
    /// The host's own run of the command: its exit code (`None`: it did not finish).
    pub host_exit_code: Option<i32>,
    /// `pending` (for the verifier), `void` (no command: the finding stands), `upheld`,
    /// `rejected`.
    pub status: String,
    /// The verifier task that ruled on it.
    pub ruled_by: Option<String>,
}

/// An agent's result: the engine's summary of its contract (`status` and what goes with it),
/// or the runner's record of its task (`task`, `phase`, `node`, `verdict`). Keys baton does
/// not write are kept as read.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentResult {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The task that ran it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// The plan phase it ran in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// The graph node it ran as.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// `pass` or `fail`, as the runner judged its contract.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    /// The builder's phase.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase_id: Option<String>,
    /// The verifier's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub passed: Option<bool>,
    /// The doc syncer's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub doc_sync_partial: Option<bool>,
    /// The plan review's pass (1 or 2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pass: Option<u32>,
    /// The file a planner or researcher wrote.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl AgentResult {
    /// A contract summary: its status.
    pub fn status(status: &str) -> AgentResult {
        AgentResult {
            status: Some(status.to_string()),
            ..AgentResult::default()
        }
    }

    /// The verifier's: whether it passed.
    pub fn verified(passed: bool) -> AgentResult {
        AgentResult {
            passed: Some(passed),
            ..AgentResult::default()
        }
    }

    /// The builder's PASS at its phase.
    pub fn built(phase: Option<String>) -> AgentResult {
        AgentResult {
            phase_id: phase,
            ..AgentResult::status("PASS")
        }
    }

    /// The doc syncer's status, and whether it synced only part.
    pub fn docs_synced(status: &str, partial: bool) -> AgentResult {
        AgentResult {
            doc_sync_partial: Some(partial),
            ..AgentResult::status(status)
        }
    }
}

impl FinalReview {
    /// Chosen by the user: running as task `task`.
    pub fn running(task: String) -> FinalReview {
        FinalReview {
            status: "running".into(),
            task: Some(task),
        }
    }

    /// Declined by the user.
    pub fn skipped() -> FinalReview {
        FinalReview {
            status: "skipped".into(),
            task: None,
        }
    }
}

impl GateChoice {
    /// `choice`, made at `phase`.
    pub fn new(phase: Option<String>, choice: &str) -> GateChoice {
        GateChoice {
            phase,
            choice: choice.to_string(),
        }
    }

    /// Whether this choice was made at `phase`.
    pub fn at(&self, phase: Option<&str>) -> bool {
        self.phase.as_deref() == phase
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use serde_json::json;

    /// Each key reads as its type and writes back as it was; an agent's key keeps what baton
    /// does not know; a host key of the wrong shape is an error naming it.
    #[test]
    fn results_read_typed_and_write_back_unchanged() {
        let on_disk = json!({
            "plan": {"file": "docs/plans/x.md", "sha256": "ab", "phases": 3},
            "baseline": {"status": "recorded", "failures": ["math::div"], "total": 2},
            "deps": {"status": "skipped", "reason": "in place"},
            "disputes": [{"task": "t9", "finding": "f", "command": null, "claimed_output": null,
                          "host_exit_code": null, "status": "void", "ruled_by": null}],
            "git_base_sha": "unavailable",
            "final_branch_review": {"status": "running", "task": "t12"},
            "revert_decision": {"phase": "phase-2", "choice": "fix"},
            "builder": {"status": "PASS", "phase_id": "phase-1"},
            "code-reviewer": {"task": "t2", "phase": "phase-1", "node": "build-review", "verdict": "pass"},
            "custom-agent": {"status": "DONE", "note": "kept"},
        });
        let r: Results = serde_json::from_value(on_disk.clone()).unwrap();
        assert_eq!(r.plan.as_ref().unwrap().phases, 3);
        assert_eq!(r.baseline.as_ref().unwrap().failures, ["math::div"]);
        assert!(r.revert_decision.as_ref().unwrap().at(Some("phase-2")));
        let agent = |k: &str| r.agents[k].clone().unwrap();
        assert_eq!(agent("builder").phase_id.as_deref(), Some("phase-1"));
        assert_eq!(agent("custom-agent").extra["note"], "kept");
        assert_eq!(serde_json::to_value(&r).unwrap(), on_disk);
        let bad = json!({"plan": {"file": "x.md", "sha256": 7, "phases": 1}});
        let e = serde_path_to_error::deserialize::<_, Results>(bad).unwrap_err();
        assert_eq!(e.path().to_string(), "plan.sha256");
    }
}
