//! The project's workflows as documents: `baton status --json` and `baton resume`'s choice of a
//! workflow, the MCP `workflow_status` tool and workflow resources, and what a run's outcome
//! answers with. Records are read defensively: every artifact key may be missing; each record is
//! checked as `baton resume` would read it ([`summarize`]), and a damaged one is an error naming
//! the damage, never the state its snapshot claims.

use std::sync::Arc;

use baton_exec::delegate::DelegateEnv;
use baton_exec::executor::Executor;
use baton_state::LogError;
use baton_workflow::run::{Observer, Outcome, RunEnv};
use baton_workflow::store::{StoreError, WorkflowStore};
use serde_json::Value;

use crate::documents::{
    StatusDocument, WorkflowEntry, WorkflowOutcome, WorkflowStatusAnswer, WorkflowSummary,
};
use crate::project::{state_dir, ProjectContext};

/// Characters of the request shown in the text listing.
pub const REQUEST_WIDTH: usize = 60;

/// One line of terminal-safe text, at most `width` characters (an ellipsis marks a cut).
pub fn one_line(text: &str, width: usize) -> String {
    let first = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let clean = baton_text::sanitize_line(first);
    let mut shown: String = clean.chars().take(width).collect();
    if clean.chars().count() > width || text.trim().lines().count() > 1 {
        shown.push('…');
    }
    shown
}

pub fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// A sort key for an RFC 3339 UTC time, fractions of a second included (`07Z` and `07.5Z` do
/// not compare right as plain text).
pub fn time_key(ts: &str) -> (String, String) {
    let secs: String = ts.chars().take(19).collect();
    let frac: String = ts
        .get(19..)
        .and_then(|rest| rest.strip_prefix('.'))
        .map(|rest| rest.chars().take_while(char::is_ascii_digit).collect())
        .unwrap_or_default();
    (secs, format!("{frac:0<9}"))
}

/// The workflow ids of the project, newest first: by `created_at` when the snapshot has it,
/// else by id (ids begin with their creation time).
pub fn newest_first(store: &WorkflowStore) -> Vec<String> {
    let mut ids: Vec<((String, String), String)> = store
        .list()
        .into_iter()
        .map(|id| {
            let created = store
                .snapshot(&id)
                .ok()
                .flatten()
                .and_then(|s| str_at(&s, "created_at").map(time_key));
            // Without a snapshot, the id's own stamp (`wf-20261203T134507Z-…`) stands in.
            let key = created.unwrap_or_else(|| (id_stamp(&id), String::new()));
            (key, id)
        })
        .collect();
    ids.sort();
    ids.reverse();
    ids.into_iter().map(|(_, id)| id).collect()
}

/// `wf-20261203T134507Z-…` → `2026-12-03T13:45:07`, comparable with a [`time_key`].
pub fn id_stamp(id: &str) -> String {
    let s = id.strip_prefix("wf-").unwrap_or(id);
    let d: Vec<char> = s.chars().take(15).collect();
    if d.len() < 15 || d[8] != 'T' {
        return String::new();
    }
    let p = |r: std::ops::Range<usize>| d[r].iter().collect::<String>();
    format!(
        "{}-{}-{}T{}:{}:{}",
        p(0..4),
        p(4..6),
        p(6..8),
        p(9..11),
        p(11..13),
        p(13..15)
    )
}

/// What `baton status` knows of one workflow.
pub struct Summary {
    pub id: String,
    pub artifact: Value,
    /// The same, decoded (the store hands out only a record that decodes).
    pub record: baton_workflow::state::Record,
    /// The last event's kind, for records whose artifact has no `run_state`.
    pub last_event: Option<String>,
    /// The lock holder's note, when a live process holds the lock.
    pub holder: Option<String>,
}

/// The artifact (the snapshot brought up to date with the log, or the fold of the events when
/// there is none) and the holder. A damaged record is an error naming the damage.
pub fn summarize(store: &WorkflowStore, id: &str) -> Result<Summary, String> {
    let holder = store.holder(id).map_err(|e| e.to_string())?;
    let loaded = store.load(id).map_err(|e| match e {
        StoreError::Log(LogError::Damaged(d)) => format!("damaged: {d}"),
        e => format!("unreadable: {e}"),
    })?;
    Ok(Summary {
        id: id.to_string(),
        artifact: loaded.artifact,
        record: loaded.record,
        last_event: loaded
            .last_event
            .and_then(|k| serde_json::to_value(k).ok())
            .and_then(|v| v.as_str().map(str::to_string)),
        holder,
    })
}

impl Summary {
    /// `run_state` as recorded, else what the last event says.
    pub fn run_state(&self) -> String {
        if let Some(s) = str_at(&self.artifact, "run_state") {
            return s.to_string();
        }
        match self.last_event.as_deref() {
            Some("workflow_completed") => "completed",
            Some("workflow_failed") => "failed",
            Some("workflow_stopped" | "budget_stopped") => "stopped",
            Some("checkpoint_requested") => "checkpoint",
            Some(_) => "running",
            None => "unknown",
        }
        .to_string()
    }

    /// The state as shown: `running (pid N)` when a live process holds the lock; `interrupted`
    /// when the record says running but nothing does.
    pub fn state_text(&self) -> String {
        match (&self.holder, self.run_state().as_str()) {
            (Some(h), _) if h.is_empty() => "running".into(),
            (Some(h), _) => format!("running ({h})"),
            (None, "running") => "interrupted".into(),
            (None, s) => s.to_string(),
        }
    }

    /// What the workflow waits for before it can go on.
    pub fn waiting_for(&self) -> String {
        let a = &self.artifact;
        let gate = str_at(a, "pending_gate");
        if self.holder.is_some() {
            return match gate {
                Some(g) => format!("the running process (gate {})", one_line(g, 40)),
                None => "the running process".into(),
            };
        }
        match self.run_state().as_str() {
            "checkpoint" => checkpoint_text(a.get("checkpoint"), gate),
            "running" => "nothing runs it: it was interrupted".into(),
            // Failed, it takes the user's guidance: the agents that failed run again with it.
            "failed" => format!(
                "your guidance: `baton resume {} --answer \"…\"` runs the failed agents again with it (`--answer abort` ends it)",
                self.id
            ),
            s @ ("completed" | "stopped") => format!("nothing ({s})"),
            _ => match gate {
                Some(g) => format!("gate {}", one_line(g, 40)),
                None => "unknown".into(),
            },
        }
    }
}

/// `gate G: "question" (options: a, b; recommended: a)`, with `baton resume --answer`.
fn checkpoint_text(cp: Option<&Value>, pending_gate: Option<&str>) -> String {
    let cp = cp.unwrap_or(&Value::Null);
    let mut text = match str_at(cp, "gate").or(pending_gate) {
        Some(gate) => format!("an answer at gate {}", one_line(gate, 40)),
        None => "an answer".to_string(),
    };
    if let Some(q) = str_at(cp, "question") {
        text.push_str(&format!(": \"{}\"", one_line(q, REQUEST_WIDTH)));
    }
    let options: Vec<String> = cp
        .get("options")
        .and_then(Value::as_array)
        .map(|o| {
            o.iter()
                .map(|v| one_line(v.as_str().unwrap_or(&v.to_string()), 30))
                .collect()
        })
        .unwrap_or_default();
    let mut extra = Vec::new();
    if !options.is_empty() {
        extra.push(format!("options: {}", options.join(", ")));
    }
    if let Some(r) = cp.get("recommended").filter(|r| !r.is_null()) {
        extra.push(format!(
            "recommended: {}",
            one_line(r.as_str().unwrap_or(&r.to_string()), 30)
        ));
    }
    if !extra.is_empty() {
        text.push_str(&format!(" ({})", extra.join("; ")));
    }
    text.push_str(" — `baton resume --answer`");
    text
}

fn summary_json(s: &Summary) -> WorkflowSummary {
    let a = &s.artifact;
    let pid = s
        .holder
        .as_deref()
        .and_then(|h| h.strip_prefix("pid "))
        .and_then(|p| p.trim().parse::<u64>().ok());
    let field = |k: &str| a.get(k).cloned();
    WorkflowSummary {
        id: s.id.clone(),
        workflow_type: field("workflow_type"),
        run_state: s.run_state(),
        state: s.state_text(),
        running: s.holder.is_some(),
        holder: s.holder.clone(),
        pid,
        phase_cursor: field("phase_cursor"),
        pending_gate: field("pending_gate"),
        checkpoint: field("checkpoint"),
        waiting_for: s.waiting_for(),
        spent: field("spent"),
        created_at: field("created_at"),
        updated_at: field("updated_at"),
        request: field("user_request"),
    }
}

/// The document of `baton status --json` (`{"workflows": [summary, …]}`, newest first; an unreadable
/// workflow as `{"id", "error"}`), or with `id` (an id, a unique prefix of one, or `last`) that one
/// workflow's summary. The error names the fix.
pub fn status_json(ctx: &ProjectContext, id: Option<&str>) -> Result<WorkflowStatusAnswer, String> {
    let store = WorkflowStore::new(state_dir(ctx));
    if let Some(wanted) = id {
        let id = resolve(&store, wanted)?;
        return summarize(&store, &id)
            .map(|s| WorkflowStatusAnswer::One(Box::new(summary_json(&s))));
    }
    let workflows: Vec<WorkflowEntry> = newest_first(&store)
        .iter()
        .map(|id| match summarize(&store, id) {
            Ok(s) => WorkflowEntry::Summary(Box::new(summary_json(&s))),
            Err(e) => WorkflowEntry::Unreadable {
                id: id.clone(),
                error: e,
            },
        })
        .collect();
    Ok(WorkflowStatusAnswer::All(StatusDocument { workflows }))
}

/// One workflow as `baton mcp` serves it as a resource: its id (`wanted` is an id, a unique
/// prefix of one, or `last`), its summary (the document `workflow_status` answers with) and its
/// artifact (the snapshot, or the fold of the events when there is none).
pub fn record(
    ctx: &ProjectContext,
    wanted: &str,
) -> Result<(String, WorkflowSummary, baton_workflow::state::Record), String> {
    let store = WorkflowStore::new(state_dir(ctx));
    let id = resolve(&store, wanted)?;
    let s = summarize(&store, &id)?;
    Ok((id, summary_json(&s), s.record))
}

/// The id `wanted` names: `last` (the newest), a whole id, or a prefix of exactly one.
pub fn resolve(store: &WorkflowStore, wanted: &str) -> Result<String, String> {
    let ids = newest_first(store);
    let fix = "`baton status` lists the workflows of this project";
    if wanted == "last" {
        return ids
            .into_iter()
            .next()
            .ok_or_else(|| format!("no workflows in this project yet; {fix}"));
    }
    if ids.iter().any(|id| id == wanted) {
        return Ok(wanted.to_string());
    }
    let matches: Vec<&String> = ids.iter().filter(|id| id.starts_with(wanted)).collect();
    match matches.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(format!(
            "no workflow `{}`: {fix} (a unique prefix of an id, or `last`, is enough)",
            baton_text::sanitize_line(wanted)
        )),
        many => Err(format!(
            "`{}` matches {} workflows ({}): give more of the id",
            baton_text::sanitize_line(wanted),
            many.len(),
            many.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// The environment a workflow runs in, for `baton run`, `baton resume` and `baton mcp`: the
/// project's delegation settings, the executor its dispatches share, the crash hook of the tests
/// (`BATON_WORKFLOW_CRASH_AT`) and who hears of each step; no recording or replay.
pub fn workflow_env(
    delegate: DelegateEnv,
    executor: Arc<Executor>,
    observer: Option<Observer>,
) -> RunEnv {
    RunEnv {
        delegate,
        executor,
        record: None,
        replay: None,
        max_batches: None,
        crash_after: std::env::var("BATON_WORKFLOW_CRASH_AT")
            .ok()
            .and_then(|s| s.trim().parse().ok()),
        observer,
        events: None,
    }
}

/// The workflow `resume` means: the id or unique prefix given, else the one unfinished workflow
/// (with several, none: the error lists them, newest first).
pub fn pick(store: &WorkflowStore, id: Option<&str>) -> Result<String, String> {
    let ids = store.list();
    match id {
        Some(want) => {
            let hits: Vec<&String> = ids.iter().filter(|i| i.starts_with(want)).collect();
            match hits.as_slice() {
                [one] => Ok((*one).clone()),
                [] => Err(format!(
                    "no workflow {want}: `baton status` lists the workflows of this project"
                )),
                many => Err(format!(
                    "{want} matches {} workflows ({}): give more of the id",
                    many.len(),
                    many.iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            }
        }
        None => {
            // Each record is checked as `resume` would read it: a missing snapshot is derived
            // from the log again, a damaged record is not passed over when it may be the one
            // meant (newer than the workflow that would be taken).
            // With more than one unfinished, none is taken: which one is meant cannot be known
            // (seed 001:124, "do not resume a workflow you cannot scope confidently").
            let mut open: Vec<(String, String)> = Vec::new();
            let mut damaged = None;
            for i in ids.iter().rev() {
                match store.load(i) {
                    Ok(l) => {
                        let state = l.artifact.get("run_state").and_then(|v| v.as_str());
                        if !matches!(state, Some("completed" | "stopped")) {
                            let asked = l
                                .artifact
                                .get("user_request")
                                .and_then(|v| v.as_str())
                                .unwrap_or_default();
                            let words: String = asked.chars().take(40).collect();
                            open.push((
                                i.clone(),
                                format!("{i} ({}: {words})", state.unwrap_or("running")),
                            ));
                        }
                    }
                    Err(StoreError::Log(baton_state::LogError::Damaged(d))) => {
                        if open.is_empty() {
                            damaged.get_or_insert((i.clone(), d));
                        }
                    }
                    Err(_) => {}
                }
            }
            match (damaged, open.as_slice()) {
                (Some((i, d)), _) => Err(format!(
                    "workflow {i} may be the one waiting, but its record is damaged: {d}; or name the workflow to resume: `baton resume ID`"
                )),
                (None, [(i, _)]) => Ok(i.clone()),
                (None, []) => {
                    Err("no workflow waits to be resumed: `baton status` lists them".to_string())
                }
                (None, many) => Err(format!(
                    "{} workflows are unfinished, newest first: {}; name the one to resume: `baton resume {}`",
                    many.len(),
                    many.iter().map(|(_, line)| line.as_str()).collect::<Vec<_>>().join("; "),
                    many[0].0
                )),
            }
        }
    }
}

/// The document `--json` prints for an outcome of `baton run` or `baton resume` (and
/// `run_workflow` / `workflow_resume` of `baton mcp` answer): `{"type": "workflow.<outcome>",
/// "id", "brief" | "checkpoint"}`.
pub fn outcome_document(outcome: &Outcome) -> WorkflowOutcome {
    WorkflowOutcome::Returned(outcome.clone())
}

/// The document of ORIENT's inline answer.
pub fn answer_document(text: &str) -> WorkflowOutcome {
    WorkflowOutcome::Answer(crate::documents::OrientAnswer {
        workflow: "ORIENT".to_string(),
        answer: text.to_string(),
    })
}

/// The newest workflow that ended in place leaving its change uncommitted, when the working
/// tree at `root` holds exactly that change now (and nothing is committed of it): its id and
/// the files it changed. What `baton flow start`, which needs a clean tree, says instead of a
/// bare list of files.
pub fn left_uncommitted(
    state: &baton_state::StateDir,
    root: &std::path::Path,
) -> Option<(String, Vec<String>)> {
    let store = WorkflowStore::new(state.clone());
    let (id, left) = store.list().into_iter().rev().take(20).find_map(|id| {
        let snap = store.snapshot(&id).ok()??;
        let left = snap.pointer("/results/left_in_place")?.clone();
        Some((id, left))
    })?;
    // Only a commit id the record names reaches git.
    let theirs = left["snapshot"]
        .as_str()
        .filter(|s| baton_git::is_commit_id(s))?;
    let files: Vec<String> = left["files"]
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .map(String::from)
        .collect();
    let git = baton_git::Git::new(root);
    let tree = |commit: &str| {
        git.run(["rev-parse", "--verify", "-q", &format!("{commit}^{{tree}}")])
            .ok()
    };
    let now = tree(&baton_git::snapshot::commit(root)?)?;
    (Some(&now) == tree(theirs).as_ref() && Some(&now) != tree("HEAD").as_ref())
        .then_some((id, files))
}

/// How many of the newest workflows a new one is compared with (older ones are not looked at).
const PENDING_LOOKED_AT: usize = 20;

/// Before a new workflow (seed 001: pending work resumes instead of being duplicated): an
/// unfinished workflow of the same kind asked the same words is an error naming it and how to
/// go on with it or end it; other unfinished workflows are a note (`None` when there are none).
/// Only the newest workflows are looked at, by their snapshots.
pub fn pending(store: &WorkflowStore, request: &str, kind: &str) -> Result<Option<String>, String> {
    let words = |s: &str| {
        s.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    };
    let asked = words(request);
    let mut others = Vec::new();
    for id in store.list().into_iter().rev().take(PENDING_LOOKED_AT) {
        let Ok(Some(snap)) = store.snapshot(&id) else {
            continue;
        };
        let state = str_at(&snap, "run_state").unwrap_or("running");
        if matches!(state, "completed" | "stopped") {
            continue;
        }
        let theirs = str_at(&snap, "user_request").unwrap_or_default();
        if words(theirs) == asked && str_at(&snap, "workflow_type") == Some(kind) {
            // How to end it depends on where it is: an answer ends one that waits for one.
            let end = match state {
                "checkpoint" | "failed" => format!(" (`baton resume {id} --answer abort` ends it)"),
                _ => String::new(),
            };
            return Err(format!(
                "workflow {id} ({kind}, {state}) was asked the same and is not finished: `baton resume {id}` goes on with it{end}, rather than doing the work twice"
            ));
        }
        let short: String = theirs.chars().take(40).collect();
        others.push(format!("{id} ({state}: {short})"));
    }
    Ok((!others.is_empty()).then(|| {
        format!(
            "unfinished, and not this request: {}; `baton resume ID` goes on with one",
            others.join("; ")
        )
    }))
}
