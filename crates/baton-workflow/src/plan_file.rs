//! A plan file: the Markdown a planner writes and a planned BUILD executes (`baton run --plan`).
//!
//! The phases are machine-readable: a fenced YAML block under a `## Phases` heading, one entry
//! per phase with cc10x's `normalized_phases` fields. Beside it the plan names its `plan_mode`
//! and `verification_rigor` (a `key: value` line each, outside code blocks) and has an
//! `## Open Decisions` section (empty, `None`, or every item marked approved) and a
//! `## Differences from agreement` section (present, even if empty). `## Acceptance Criteria`
//! and `## Decisions` are read when present. [`PlanFile::read`] checks all of it (cc10x's
//! `plan_trust_gate` without the approval) and names the phase and field of every problem;
//! [`Approvals`] keeps the hash each plan was approved at, so a plan edited after its approval is
//! refused.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::artifact::NormalizedPhase;
use crate::contract::{PlanMode, VerificationRigor};

/// One phase of a plan, as the `## Phases` block lists it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanPhase {
    #[serde(default)]
    pub phase_id: String,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub objective: String,
    /// The files or surfaces the phase touches.
    #[serde(default, alias = "surfaces")]
    pub files: Vec<String>,
    /// The commands or checks that prove the phase (`required_checks`).
    #[serde(default, alias = "required_checks")]
    pub checks: Vec<String>,
    /// What must hold for the phase to exit; never empty.
    #[serde(default)]
    pub exit_criteria: Vec<String>,
    /// The seams the phase's tests go through; never empty in a plan.
    #[serde(default)]
    pub test_seams: Vec<String>,
    #[serde(default)]
    pub inputs: Vec<String>,
    #[serde(default)]
    pub expected_artifacts: Vec<String>,
    /// `none` (default), `decision` or `human-verify`.
    #[serde(default)]
    pub checkpoint_type: Option<String>,
    /// The opt-in pilot of a fresh builder per task (build-workflow.md, "Per-TASK
    /// fresh-implementer dispatch"): the phase's `tasks` become phases of their own when the plan
    /// is read ([`per_task::expand`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fresh_builder_per_task: bool,
    /// The phase's separable tasks, for `fresh_builder_per_task`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<PhaseTask>,
}

/// One separable task of a phase built with a fresh builder per task.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhaseTask {
    #[serde(default)]
    pub title: String,
    /// What the task achieves (default: its title).
    #[serde(default)]
    pub objective: String,
    /// The files the task touches; no other task of the phase may touch them.
    #[serde(default)]
    pub files: Vec<String>,
    /// What must hold when the task is done (default: its objective holds).
    #[serde(default)]
    pub exit_criteria: Vec<String>,
    /// The seams its tests go through (default: the phase's).
    #[serde(default)]
    pub test_seams: Vec<String>,
}

impl PlanPhase {
    /// The phase as the workflow artifact's `normalized_phases` keeps it.
    pub fn normalized(&self) -> NormalizedPhase {
        let some = |v: &Vec<String>| Some(v.clone()).filter(|v| !v.is_empty());
        NormalizedPhase {
            objective: Some(self.objective.clone()),
            files: Some(self.files.clone()),
            checks: Some(self.checks.clone()),
            exit_criteria: Some(self.exit_criteria.clone()),
            test_seams: Some(self.test_seams.clone()),
            inputs: some(&self.inputs),
            expected_artifacts: some(&self.expected_artifacts),
            checkpoint_type: Some(self.checkpoint_type.clone().unwrap_or("none".into())),
            ..NormalizedPhase::new(&self.phase_id, Some(&self.title))
        }
    }
}

/// A plan read and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanFile {
    /// The path it was read from, as given.
    pub path: PathBuf,
    /// The first `# ` heading, if any.
    pub title: Option<String>,
    pub plan_mode: PlanMode,
    pub verification_rigor: VerificationRigor,
    pub phases: Vec<PlanPhase>,
    /// `## Decisions`, and the approved items of `## Open Decisions`.
    pub decisions: Vec<String>,
    pub acceptance_criteria: Vec<String>,
    pub differences: Vec<String>,
    /// Hex SHA-256 of the file's bytes.
    pub sha256: String,
}

/// Why a plan cannot be built from: every problem found, each naming where it is and the fix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", render(path, problems))]
pub struct PlanError {
    pub path: PathBuf,
    pub problems: Vec<String>,
}

fn render(path: &Path, problems: &[String]) -> String {
    let mut s = format!(
        "plan {} cannot be built from ({} problem{}):",
        path.display(),
        problems.len(),
        if problems.len() == 1 { "" } else { "s" }
    );
    for p in problems {
        s.push_str("\n  - ");
        s.push_str(p);
    }
    s
}

/// The hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The Markdown split into sections: `## Heading` (lowercased, trimmed) → its lines, code fences
/// kept; plus the lines outside any fenced block.
struct Sections<'a> {
    title: Option<String>,
    sections: BTreeMap<String, Vec<&'a str>>,
    prose: Vec<&'a str>,
}

fn sections(text: &str) -> Sections<'_> {
    let mut s = Sections {
        title: None,
        sections: BTreeMap::new(),
        prose: Vec::new(),
    };
    let mut current: Option<String> = None;
    let mut fenced = false;
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            fenced = !fenced;
        } else if !fenced {
            if let Some(h) = t.strip_prefix("## ") {
                current = Some(h.trim().trim_end_matches(':').to_lowercase());
                s.sections
                    .entry(current.clone().unwrap_or_default())
                    .or_default();
                continue;
            }
            if let Some(h) = t.strip_prefix("# ") {
                s.title.get_or_insert_with(|| h.trim().to_string());
                current = None;
                continue;
            }
            s.prose.push(line);
        }
        if let Some(c) = &current {
            s.sections.entry(c.clone()).or_default().push(line);
        }
    }
    s
}

/// The list items of a section (`- x`, `* x`, `1. x`), `None`-like items left out.
fn items(lines: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in lines {
        let t = line.trim();
        if t.starts_with("```") || t.starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        if fenced || t.is_empty() {
            continue;
        }
        let item = t
            .strip_prefix("- ")
            .or_else(|| t.strip_prefix("* "))
            .or_else(|| {
                let digits = t.chars().take_while(char::is_ascii_digit).count();
                (digits > 0)
                    .then(|| t[digits..].strip_prefix(". "))
                    .flatten()
            })
            .unwrap_or(t)
            .trim();
        let lower = item.to_lowercase();
        let lower = lower.trim_end_matches('.');
        if matches!(lower, "none" | "n/a" | "[]" | "nothing" | "(none)" | "-") {
            continue;
        }
        out.push(item.to_string());
    }
    out
}

/// Whether an open-decision item is marked approved: `[x] …`, `approved: …`, `… (approved)`.
fn approved(item: &str) -> Option<String> {
    for prefix in ["[x] ", "approved: ", "approved - ", "[approved] "] {
        if item
            .get(..prefix.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(prefix))
        {
            return Some(item[prefix.len()..].trim().to_string());
        }
    }
    let t = item.trim_end_matches('.').trim_end();
    let mark = "(approved)";
    let cut = t.len().checked_sub(mark.len())?;
    t.get(cut..)
        .filter(|m| m.eq_ignore_ascii_case(mark))
        .map(|_| t[..cut].trim().to_string())
}

/// `key: value` from a prose line (`plan_mode: execution_plan`, also bulleted, bold or in
/// backticks).
fn prose_value(prose: &[&str], key: &str) -> Option<String> {
    prose.iter().find_map(|l| {
        let t = l
            .trim()
            .trim_start_matches(['-', '*', ' '])
            .replace(['`', '*'], "");
        let (k, v) = t.split_once(':')?;
        (k.trim().eq_ignore_ascii_case(key)).then(|| v.trim().to_string())
    })
}

const PHASES: &str = "phases";
const OPEN: &str = "open decisions";
const DIFFERENCES: &str = "differences from agreement";

impl PlanFile {
    /// Reads and checks the plan at `path`.
    pub fn read(path: &Path) -> Result<PlanFile, PlanError> {
        let err = |p: String| PlanError {
            path: path.to_path_buf(),
            problems: vec![p],
        };
        let bytes = std::fs::read(path).map_err(|e| {
            err(format!(
                "it cannot be read ({e}): give the path of a plan file, e.g. docs/plans/<topic>.md"
            ))
        })?;
        let text = String::from_utf8(bytes.clone())
            .map_err(|_| err("it is not UTF-8 text: a plan is a Markdown file".into()))?;
        Self::parse(path, &text, sha256_hex(&bytes))
    }

    /// Checks a plan's text (`sha256` is the hash of its bytes).
    pub fn parse(path: &Path, text: &str, sha256: String) -> Result<PlanFile, PlanError> {
        let s = sections(text);
        let mut problems = Vec::new();
        let mode_word = prose_value(&s.prose, "plan_mode");
        let plan_mode = match mode_word.as_deref() {
            None => {
                problems.push("plan_mode is missing: add a line `plan_mode: execution_plan` (or direct, decision_rfc)".to_string());
                None
            }
            Some(w) => PlanMode::parse(w).or_else(|| {
                problems.push(format!(
                    "plan_mode {w:?} is not direct, execution_plan or decision_rfc"
                ));
                None
            }),
        };
        let rigor_word = prose_value(&s.prose, "verification_rigor");
        let verification_rigor = match rigor_word.as_deref() {
            None => {
                problems.push("verification_rigor is missing: add a line `verification_rigor: standard` (or critical_path)".to_string());
                None
            }
            Some(w) => VerificationRigor::parse(w).or_else(|| {
                problems.push(format!(
                    "verification_rigor {w:?} is not standard or critical_path"
                ));
                None
            }),
        };
        let phases = match s.sections.get(PHASES) {
            None => {
                problems.push("the `## Phases` section is missing: list the phases in a fenced ```yaml block under it".into());
                Vec::new()
            }
            Some(lines) => phases_of(lines, &mut problems),
        };
        let mut decisions = s
            .sections
            .get("decisions")
            .map(|l| items(l))
            .unwrap_or_default();
        match s.sections.get(OPEN) {
            None => problems.push("the `## Open Decisions` section is missing: add it, empty (or `None`) when every decision is made".into()),
            Some(lines) => {
                for item in items(lines) {
                    match approved(&item) {
                        Some(d) => decisions.push(d),
                        None => problems.push(format!(
                            "open decision {item:?} is not made: decide it (mark the item `[x]` or `approved:`, or move it to `## Decisions`) and approve the plan again"
                        )),
                    }
                }
            }
        }
        let differences = match s.sections.get(DIFFERENCES) {
            None => {
                problems.push("the `## Differences from agreement` section is missing: add it, even empty (`None`)".into());
                Vec::new()
            }
            Some(lines) => items(lines),
        };
        let acceptance_criteria = s
            .sections
            .get("acceptance criteria")
            .map(|l| items(l))
            .unwrap_or_default();
        // cc10x's plan_trust_gate: a plan that is more than a direct change says what must hold
        // once it is built (field completeness, not presence).
        if matches!(
            plan_mode,
            Some(PlanMode::ExecutionPlan | PlanMode::DecisionRfc)
        ) && acceptance_criteria.iter().all(|c| c.trim().is_empty())
        {
            problems.push(format!(
                "`## Acceptance Criteria` is {}: with plan_mode {} the plan lists what must hold once it is built, one `- ` item each",
                if s.sections.contains_key("acceptance criteria") { "empty" } else { "missing" },
                mode_word.as_deref().unwrap_or("")
            ));
        }
        match (plan_mode, verification_rigor) {
            (Some(plan_mode), Some(verification_rigor)) if problems.is_empty() => Ok(PlanFile {
                path: path.to_path_buf(),
                title: s.title,
                plan_mode,
                verification_rigor,
                phases,
                decisions,
                acceptance_criteria,
                differences,
                sha256,
            }),
            _ => Err(PlanError {
                path: path.to_path_buf(),
                problems,
            }),
        }
    }

    /// The phases as the artifact keeps them.
    pub fn normalized_phases(&self) -> Vec<NormalizedPhase> {
        self.phases.iter().map(PlanPhase::normalized).collect()
    }

    /// The artifact's `intent`: the goal (the plan's title) and its acceptance criteria (the
    /// approved decisions are the artifact's top-level `approved_decisions`).
    pub fn intent(&self) -> Map<String, Value> {
        let mut m = Map::new();
        if let Some(t) = &self.title {
            m.insert("goal".into(), t.clone().into());
        }
        m.insert(
            "acceptance_criteria".into(),
            self.acceptance_criteria.clone().into(),
        );
        m
    }
}

/// The `## Phases` section's YAML block, each phase checked.
fn phases_of(lines: &[&str], problems: &mut Vec<String>) -> Vec<PlanPhase> {
    let mut yaml = String::new();
    let mut inside = false;
    let mut found = false;
    for l in lines {
        let t = l.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            if inside {
                break;
            }
            inside = true;
            found = true;
            continue;
        }
        if inside {
            yaml.push_str(l);
            yaml.push('\n');
        }
    }
    if !found {
        problems.push("`## Phases` has no fenced ```yaml block: list the phases in one (phase_id, title, objective, files, checks, exit_criteria, test_seams)".into());
        return Vec::new();
    }
    let mut phases: Vec<PlanPhase> = match serde_norway::from_str::<Vec<PlanPhase>>(&yaml) {
        Ok(p) => p,
        Err(e) => {
            let hint = baton_text::yaml_quoting_hint(&e.to_string())
                .map(|h| format!("; {h}"))
                .unwrap_or_default();
            problems.push(format!(
                "the `## Phases` block does not read as a list of phases: {e}{hint} (each phase takes phase_id, title, objective, files, checks, exit_criteria, test_seams, inputs, expected_artifacts, checkpoint_type, fresh_builder_per_task, tasks; each task title, objective, files, exit_criteria, test_seams)"
            ));
            return Vec::new();
        }
    };
    if phases.is_empty() {
        problems.push("`## Phases` lists no phase: a plan has at least one".into());
    }
    let mut seen = std::collections::BTreeSet::new();
    for (i, p) in phases.iter_mut().enumerate() {
        let name = if p.phase_id.trim().is_empty() {
            format!("phase {}", i + 1)
        } else {
            format!("phase {} ({})", i + 1, p.phase_id)
        };
        let id_ok = !p.phase_id.trim().is_empty()
            && p.phase_id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !id_ok {
            problems.push(format!(
                "{name}: phase_id must be letters, digits, `-` or `_`, e.g. phase-{}",
                i + 1
            ));
        } else if !seen.insert(p.phase_id.clone()) {
            problems.push(format!(
                "{name}: phase_id is used twice: give each phase its own"
            ));
        }
        if p.objective.trim().is_empty() {
            problems.push(format!(
                "{name}: objective is empty: say what the phase achieves"
            ));
        }
        if p.exit_criteria.iter().all(|c| c.trim().is_empty()) {
            problems.push(format!(
                "{name}: exit_criteria is empty: list what must hold for the phase to exit"
            ));
        }
        if p.test_seams.iter().all(|c| c.trim().is_empty()) {
            problems.push(format!(
                "{name}: test_seams is empty: name the seams its tests go through (a function, a command, an endpoint)"
            ));
        }
        if let Some(c) = &p.checkpoint_type {
            match checkpoint_word(c) {
                Some(w) => p.checkpoint_type = Some(w.to_string()),
                None => problems.push(format!(
                    "{name}: checkpoint_type {c:?} is not none, human_verify, decision or human_action"
                )),
            }
        }
    }
    per_task::expand(phases, problems)
}

/// One approval: the hash a plan was approved at, when and by what.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Approval {
    pub sha256: String,
    pub approved_at: String,
    pub by: String,
}

/// `.baton/state/plans.json`: the approved hash of each plan, by its path in the project. The
/// model cannot write there (`.baton/` is read-only in its sandbox).
pub struct Approvals {
    file: PathBuf,
    root: PathBuf,
}

/// What [`Approvals::check`] found.
#[derive(Debug, Clone, PartialEq)]
pub enum ApprovalState {
    /// Never approved.
    New,
    /// Approved at this content.
    Approved(Approval),
    /// Approved, then changed.
    Changed(Approval),
}

impl Approvals {
    /// The approvals of the project at `root` with state folder `state`.
    pub fn new(state: &baton_state::StateDir, root: &Path) -> Approvals {
        Approvals {
            file: state.root().join("plans.json"),
            root: root.to_path_buf(),
        }
    }

    /// The key of a plan: its path relative to the project root when inside it.
    pub fn key(&self, plan: &Path) -> String {
        let abs = std::path::absolute(plan).unwrap_or_else(|_| plan.to_path_buf());
        let abs = abs.canonicalize().unwrap_or(abs);
        let root = self.root.canonicalize().unwrap_or(self.root.clone());
        abs.strip_prefix(&root)
            .map(Path::to_path_buf)
            .unwrap_or(abs)
            .to_string_lossy()
            .into_owned()
    }

    fn load(&self) -> Result<BTreeMap<String, Approval>, String> {
        match std::fs::read(&self.file) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
            Err(e) => Err(format!("{}: {e}", self.file.display())),
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                format!(
                    "{} is damaged ({e}): the plan approvals it held are lost; move it aside and approve the plans again (baton plan approve FILE)",
                    self.file.display()
                )
            }),
        }
    }

    /// Where `plan` (read as `sha256`) stands.
    pub fn check(&self, plan: &Path, sha256: &str) -> Result<ApprovalState, String> {
        Ok(match self.load()?.remove(&self.key(plan)) {
            None => ApprovalState::New,
            Some(a) if a.sha256 == sha256 => ApprovalState::Approved(a),
            Some(a) => ApprovalState::Changed(a),
        })
    }

    /// Records `plan` as approved at `sha256`.
    pub fn approve(&self, plan: &Path, sha256: &str, by: &str) -> Result<Approval, String> {
        let mut all = self.load()?;
        let a = Approval {
            sha256: sha256.to_string(),
            approved_at: baton_state::now_rfc3339(),
            by: by.to_string(),
        };
        all.insert(self.key(plan), a.clone());
        let dir = self.file.parent().unwrap_or(Path::new("."));
        baton_state::create_own_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let tmp = dir.join(format!(".plans.json.{}.tmp", std::process::id()));
        let text = serde_json::to_string_pretty(&all).map_err(|e| e.to_string())?;
        std::fs::write(&tmp, text + "\n")
            .and_then(|()| std::fs::rename(&tmp, &self.file))
            .map_err(|e| {
                let _ = std::fs::remove_file(&tmp);
                format!("{}: {e}", self.file.display())
            })?;
        Ok(a)
    }
}

mod per_task;
pub use per_task::is_task_phase;
#[cfg(test)]
mod tests;

/// A phase's `checkpoint_type` in cc10x's words (`none`, `human_verify`, `decision`,
/// `human_action`; a `-` reads as `_`, any case); `None` for another word.
pub fn checkpoint_word(word: &str) -> Option<&'static str> {
    match word.trim().to_ascii_lowercase().replace('-', "_").as_str() {
        "none" => Some("none"),
        "human_verify" => Some("human_verify"),
        "decision" => Some("decision"),
        "human_action" => Some("human_action"),
        _ => None,
    }
}
