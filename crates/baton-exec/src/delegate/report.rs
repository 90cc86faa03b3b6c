//! What a delegation reports: live events per entry, and the final report and its text.

use std::sync::Arc;

use baton_protocol::Usage;
use serde::{Deserialize, Serialize};

use super::request::{Mode, TaskEntry};
use crate::types::Activity;

/// What happens to one entry, for live status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EntryEvent {
    Queued {
        name: String,
        role: String,
    },
    Launching {
        model: String,
        thinking: Option<String>,
        cwd: String,
        note: Option<String>,
    },
    Activity {
        activity: Activity,
    },
    Finished {
        status: EntryStatus,
        /// The child's own session id, when its stream named it (a `baton` child's transcript:
        /// `sessions/<id>.jsonl` of the folder it ran in).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session: Option<String>,
    },
}

baton_protocol::closed_set! {
    pub enum EntryStatus ("entry status") {
        Done = "done",
        Failed = "failed",
        Stopped = "stopped",
        /// A chain step after a failure; never launched.
        Skipped = "skipped",
    }
}

/// How an entry's worktree ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorktreeReport {
    pub path: String,
    pub branch: String,
    pub kept_path: bool,
    pub kept_branch: bool,
    pub commits: Vec<String>,
    /// How to recover retained work, when any was retained.
    pub recovery: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EntryReport {
    pub index: usize,
    pub name: String,
    pub role: String,
    pub status: EntryStatus,
    pub output: String,
    /// Bytes of the child's answer cut from `output`, by its own bound and the call's budget
    /// together: the number the marker at the end of `output` states (0 when it is whole).
    #[serde(default, skip_serializing_if = "crate::types::is_zero")]
    pub omitted: usize,
    pub error: Option<ExecErrorInfo>,
    pub model: Option<String>,
    pub usage: Usage,
    /// What the child said its run cost (Claude Code's `total_cost_usd`); `None`: its tokens are
    /// priced with the price table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    pub turns: u32,
    pub duration_ms: u64,
    pub worktree: Option<WorktreeReport>,
    /// The child's own session id, when its stream named it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Things the caller should know (ran in the working directory instead of a worktree, …).
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecErrorInfo {
    pub code: String,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DelegateReport {
    pub mode: Mode,
    pub entries: Vec<EntryReport>,
}

impl DelegateReport {
    /// Prices the entries that did not say what they cost, from their model and tokens with
    /// `prices` (`[prices]` over the built-in table), as `baton task` prices them; the indices of
    /// the entries it priced.
    pub fn price_unpriced(
        &mut self,
        prices: &std::collections::BTreeMap<String, baton_protocol::config::Price>,
    ) -> Vec<usize> {
        let mut priced = Vec::new();
        for (k, entry) in self.entries.iter_mut().enumerate() {
            let (None, Some(model)) = (entry.cost_usd, entry.model.as_deref()) else {
                continue;
            };
            if let Some(cost) = baton_model::routes::cost_of_label(prices, model, &entry.usage) {
                entry.cost_usd = Some(cost);
                priced.push(k);
            }
        }
        priced
    }

    pub fn ok(&self) -> bool {
        self.entries.iter().all(|e| e.status == EntryStatus::Done)
    }
}

/// Progress callback: entry index and what happened.
pub type Progress = Arc<dyn Fn(usize, EntryEvent) + Send + Sync>;

pub(super) fn skipped(i: usize, e: &TaskEntry) -> EntryReport {
    EntryReport {
        index: i,
        name: e.name.clone(),
        role: e.role.clone(),
        status: EntryStatus::Skipped,
        output: String::new(),
        omitted: 0,
        error: None,
        model: None,
        usage: Usage::default(),
        cost_usd: None,
        turns: 0,
        duration_ms: 0,
        worktree: None,
        session_id: None,
        notes: vec!["not run: an earlier chain step did not succeed".into()],
    }
}

/// The minimal text the calling model sees: a line per entry with role attribution, its bounded
/// output, and recovery paths only for retained work.
pub fn render_report(report: &DelegateReport) -> String {
    let total = report.entries.len();
    let mut s = String::new();
    for e in &report.entries {
        let head = match report.mode {
            Mode::Single => format!("{} ({})", e.name, e.role),
            Mode::Parallel | Mode::Chain => {
                format!("[{}/{total}] {} ({})", e.index + 1, e.name, e.role)
            }
        };
        let err = e
            .error
            .as_ref()
            .map(|x| format!(" — {}: {}", x.code, x.message))
            .unwrap_or_default();
        s.push_str(&format!("{head}: {}{err}\n", e.status.as_str()));
        if !e.output.trim().is_empty() {
            s.push_str(e.output.trim_end());
            s.push('\n');
        }
        for n in &e.notes {
            s.push_str(&format!("note: {n}\n"));
        }
        if let Some(w) = &e.worktree {
            if let Some(r) = &w.recovery {
                s.push_str(&format!("retained work: {r}\n"));
            }
        }
        s.push('\n');
    }
    s.trim_end().to_string()
}

/// `1.2s`, `3m 04s`.
fn duration_text(ms: u64) -> String {
    if ms < 60_000 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else {
        format!("{}m {:02}s", ms / 60_000, (ms % 60_000) / 1000)
    }
}

/// One line of usage: tokens, cost when known, duration.
fn usage_text(usage: &Usage, cost: Option<f64>, ms: u64) -> String {
    let cost = cost.map(|c| format!(" · ${c:.4}")).unwrap_or_default();
    format!(
        "{} in ({} cached) / {} out tokens{cost} · {}",
        usage.input_tokens,
        usage.cached_input_tokens,
        usage.output_tokens,
        duration_text(ms)
    )
}

/// What each entry used — tokens, cost (when its model is priced in `prices`) and duration — and
/// a total line; for a person reading the final report (`baton task`).
pub fn render_usage(
    report: &DelegateReport,
    prices: &std::collections::BTreeMap<String, baton_protocol::config::Price>,
) -> String {
    let mut total = Usage::default();
    let mut total_cost: Option<f64> = None;
    let mut total_ms = 0;
    let mut lines = Vec::new();
    for e in &report.entries {
        let cost = e
            .cost_usd
            .or_else(|| baton_model::routes::cost_of_label(prices, e.model.as_deref()?, &e.usage));
        total.input_tokens += e.usage.input_tokens;
        total.cached_input_tokens += e.usage.cached_input_tokens;
        total.output_tokens += e.usage.output_tokens;
        total_ms += e.duration_ms;
        if let Some(c) = cost {
            total_cost = Some(total_cost.unwrap_or(0.0) + c);
        }
        // A command child calls no model: its line says so instead of a row of zeros.
        let text = if e.model.is_none() && e.usage == Usage::default() {
            format!("no model (a command) · {}", duration_text(e.duration_ms))
        } else {
            usage_text(&e.usage, cost, e.duration_ms)
        };
        lines.push(format!("  {} ({}): {text}", e.name, e.role));
    }
    let any_model = report.entries.iter().any(|e| e.model.is_some());
    lines.push(format!(
        "  total: {}",
        if any_model || total != Usage::default() {
            usage_text(&total, total_cost, total_ms)
        } else {
            duration_text(total_ms)
        }
    ));
    format!("usage:\n{}", lines.join("\n"))
}

#[cfg(test)]
mod usage_tests {
    use super::*;

    #[test]
    fn a_command_child_has_no_row_of_zeros() {
        let mut e = skipped(
            0,
            &serde_json::from_value(
                serde_json::json!({"role": "echoer", "name": "ping", "task": "x"}),
            )
            .unwrap(),
        );
        e.status = EntryStatus::Done;
        e.duration_ms = 1200;
        let report = DelegateReport {
            mode: Mode::Single,
            entries: vec![e],
        };
        let text = render_usage(&report, &Default::default());
        assert_eq!(
            text,
            "usage:\n  ping (echoer): no model (a command) · 1.2s\n  total: 1.2s"
        );
    }
}
