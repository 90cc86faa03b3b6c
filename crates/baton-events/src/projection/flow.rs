//! A Flow's document: its units × steps, folded from its typed events ([`FlowEvent`]).

use baton_flow::FlowEvent;
use serde::Serialize;

use super::words::{State, Step, STEPS};

/// One validation command of a unit's last run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Check {
    /// The command as typed.
    pub command: String,
    pub ok: bool,
    /// Its output (stdout and stderr interleaved, bounded).
    pub output: String,
}

/// One unit of a Flow: its steps and where its branch is.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Unit {
    pub id: String,
    pub name: String,
    /// implement, rebase, validate, review, merge ([`STEPS`]).
    pub steps: [Step; 5],
    pub base: Option<String>,
    pub tip: Option<String>,
    /// Why it stopped, when it did (a blocked step's reason and evidence).
    pub note: Option<String>,
    /// The reviewer's output, when it reviewed.
    pub review: Option<String>,
    /// The implementer's last answer (its output, and its stderr when it failed).
    pub implementer: Option<String>,
    /// Each validation command of the last run.
    pub validation: Vec<Check>,
    /// The review packet the reviewer was given (a patch file of the Flow's record).
    pub packet: Option<std::path::PathBuf>,
}

/// A Flow's view: units × steps.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Flow {
    pub units: Vec<Unit>,
    pub main_branch: String,
    /// `completed`, `failed` or `abandoned`, once it is one.
    pub outcome: Option<String>,
    /// A Flow on Temporal: its record is what the checkout that started it last saw, which its
    /// row says whatever event came last.
    #[serde(skip)]
    pub on_temporal: bool,
}

impl Flow {
    /// Folds one event of the Flow in; the state and the detail its row takes, when the event
    /// sets them.
    pub(super) fn apply(&mut self, ev: &FlowEvent) -> (Option<State>, Option<String>) {
        let unit_index = ev
            .unit()
            .and_then(|u| self.units.iter().position(|x| x.id == u));
        let mut state = None;
        let mut detail = None;
        match ev {
            FlowEvent::Created {
                units,
                main_branch,
                temporal,
                ..
            } => {
                self.main_branch.clone_from(main_branch);
                self.on_temporal = temporal.is_some();
                self.units = units
                    .iter()
                    .map(|u| Unit {
                        id: u.id.clone(),
                        name: u.name.clone(),
                        ..Unit::default()
                    })
                    .collect();
                state = Some(State::Running);
                detail = Some(format!("{} units onto {main_branch}", units.len()));
            }
            FlowEvent::Blocked {
                unit,
                reason,
                evidence,
                ..
            } => {
                state = Some(State::NeedsInput);
                detail = Some(format!(
                    "{unit} blocked ({}): continue --guidance, or abandon",
                    reason.label()
                ));
                if let Some(u) = unit_index.and_then(|i| self.units.get_mut(i)) {
                    u.note = Some(format!(
                        "{}: {}",
                        reason.label(),
                        baton_text::sanitize_line(&evidence.replace('\n', " "))
                    ));
                    if let Some(s) = u.steps.iter_mut().find(|s| **s == Step::Running) {
                        *s = Step::Failed;
                    }
                }
            }
            FlowEvent::Halted { reason } => {
                state = Some(State::NeedsInput);
                detail = Some(format!("halted: {}", baton_text::sanitize_line(reason)));
            }
            FlowEvent::Completed { .. } => {
                state = Some(State::Done);
                self.outcome = Some("completed".into());
                detail = Some("completed".into());
            }
            FlowEvent::Failed { message, unit, .. } => {
                state = Some(State::NeedsInput);
                self.outcome = Some("failed".into());
                detail = Some(format!(
                    "failed{}: {}",
                    unit.as_deref()
                        .map(|u| format!(" at {u}"))
                        .unwrap_or_default(),
                    baton_text::sanitize_line(message)
                ));
            }
            FlowEvent::Abandoned { .. } => {
                state = Some(State::Done);
                self.outcome = Some("abandoned".into());
                detail = Some("abandoned".into());
            }
            _ => self.apply_step(ev, unit_index),
        }
        (state, detail)
    }

    /// Folds in an event of a unit's step (implement, rebase, validate, review, merge): the
    /// step's mark and what the unit shows of it.
    fn apply_step(&mut self, ev: &FlowEvent, unit_index: Option<usize>) {
        let unit = unit_index.and_then(|i| self.units.get_mut(i));
        let Some(u) = unit else {
            return;
        };
        match ev {
            FlowEvent::ImplementerStarted { .. } | FlowEvent::ImplementerSpawned { .. } => {
                u.steps[0] = Step::Running;
            }
            FlowEvent::ImplementerFinished { result, .. } => {
                u.steps[0] = if result.ok { Step::Done } else { Step::Failed };
                let mut text = result.output.clone();
                if !result.ok && !result.stderr.trim().is_empty() {
                    text.push_str("\nstderr:\n");
                    text.push_str(&result.stderr);
                }
                u.implementer = Some(text);
            }
            FlowEvent::Rebasing { .. } => u.steps[1] = Step::Running,
            FlowEvent::Rebased { base, head, .. } => {
                u.steps[1] = Step::Done;
                u.base = Some(short(base));
                u.tip = Some(short(head));
            }
            FlowEvent::Derived { base, tip, .. } => {
                // Not rebased: it was made on the Flow's base already.
                if u.steps[1] == Step::Pending {
                    u.steps[1] = Step::Skipped;
                }
                u.base = Some(short(base));
                u.tip = Some(short(tip));
            }
            FlowEvent::Validating { .. } => u.steps[2] = Step::Running,
            FlowEvent::Validated { results, .. } => {
                let ok = results.iter().all(|r| r.ok);
                u.steps[2] = if ok { Step::Done } else { Step::Failed };
                u.validation = results
                    .iter()
                    .map(|r| Check {
                        command: r.command.clone(),
                        ok: r.ok,
                        output: r.output.clone(),
                    })
                    .collect();
            }
            FlowEvent::Reviewing { patch_path, .. } => {
                u.steps[3] = Step::Running;
                u.packet = Some(patch_path.clone());
            }
            FlowEvent::Reviewed {
                approved, output, ..
            } => {
                u.steps[3] = if *approved { Step::Done } else { Step::Failed };
                u.review = Some(output.clone());
            }
            FlowEvent::RepairStarted { .. } => u.note = None,
            FlowEvent::Merging { .. } => u.steps[4] = Step::Running,
            FlowEvent::Merged { tip, .. } => {
                u.steps[4] = Step::Done;
                u.tip = Some(short(tip));
                if u.steps[3] == Step::Pending {
                    u.steps[3] = Step::Skipped;
                }
            }
            _ => {}
        }
    }

    /// How many of its units are merged.
    pub fn merged(&self) -> usize {
        self.units
            .iter()
            .filter(|u| u.steps[4] == Step::Done)
            .count()
    }

    /// The detail of the Flow's row: where the Flow is, from its units, after the event's own
    /// `detail` (which wins unless the Flow just started).
    pub(super) fn row_detail(&self, state: Option<State>, detail: Option<String>) -> String {
        let running = self.units.iter().find_map(|u| {
            u.steps
                .iter()
                .position(|s| *s == Step::Running)
                .map(|k| format!("{}: {}", u.id, STEPS[k]))
        });
        let merged = self.merged();
        let total = self.units.len();
        let line = match (detail, running) {
            (Some(d), _) if state != Some(State::Running) => {
                format!("{d} · {merged}/{total} merged")
            }
            (_, Some(r)) => format!("{r} · {merged}/{total} merged"),
            (Some(d), None) => d,
            (None, None) => format!("{merged}/{total} merged"),
        };
        match self.on_temporal {
            true => format!("{line} · on Temporal, as last seen here"),
            false => line,
        }
    }
}

fn short(oid: &str) -> String {
    oid.chars().take(8).collect()
}
