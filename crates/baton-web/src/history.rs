//! The project's history as the page pages through it, the way Temporal's UI pages a
//! workflow's history: the page holds only what it shows and asks the server for the rest.
//!
//! - The page's first message (`overview`, see [`crate::live`]) has every log's [`Summary`] and
//!   document: the lists and "Needs you" are drawn from those, whatever the history's length.
//! - The Events list asks for the page of lines it scrolled to (`GET /api/timeline`), newest
//!   first, filtered here.
//! - The Cost view asks for its sums (`GET /api/cost`).
//! - A workflow's view reads that one log (`GET /api/workflows/{id}/events`).
//!
//! One [`History`] per server, caught up from the logs when a request needs lines it has not
//! read yet (only what was appended since is read).

use std::collections::{BTreeMap, HashMap};

use baton_events::projection::{Doc, Projection};
use baton_events::{Cursor, Event, Feed, Filter, Payload, SourceKind};
use baton_state::StateDir;
use serde::Serialize;
use serde_json::Value;

use crate::lean::{lean, price_typed, Prices};

/// The most lines one page of the Events list may ask for.
pub const MOST_LINES: usize = 500;
/// How long lines read stay current for a request that does not say how many it knows of.
const STALE: std::time::Duration = std::time::Duration::from_secs(1);
/// How much of an event the Events list shows.
const GIST: usize = 160;

/// Where one log stands by its events: how many, the first time, the last event and its time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub kind: SourceKind,
    pub id: String,
    pub events: u64,
    pub first: Option<String>,
    pub last: String,
    pub at: Option<String>,
}

/// Every log's [`Summary`], folded event by event.
#[derive(Debug, Default)]
pub struct Summaries {
    logs: BTreeMap<(SourceKind, String), Summary>,
}

impl Summaries {
    /// Folds one event; the caller names it ([`Summaries::set_last`]).
    pub fn add(&mut self, e: &Event) -> &mut Summary {
        let key = (e.source.kind, e.source.id.clone());
        let s = self.logs.entry(key).or_insert_with(|| Summary {
            kind: e.source.kind,
            id: e.source.id.clone(),
            events: 0,
            first: None,
            last: String::new(),
            at: None,
        });
        s.events += 1;
        let ts = ts_of(e);
        if s.first.is_none() {
            s.first = ts.map(str::to_string);
        }
        if let Some(ts) = ts {
            s.at = Some(ts.to_string());
        }
        s
    }

    /// Names the last event of the log `kind`/`id`.
    pub fn set_last(&mut self, kind: SourceKind, id: &str, name: &str) {
        if let Some(s) = self.logs.get_mut(&(kind, id.to_string())) {
            name.clone_into(&mut s.last);
        }
    }

    /// Every log's summary (routing journals are lines of their session's, not logs of their own).
    pub fn all(&self) -> Vec<&Summary> {
        self.logs
            .values()
            .filter(|s| s.kind != SourceKind::Routing)
            .collect()
    }
}

/// The time an event records: the envelope's, else its line's own.
fn ts_of(e: &Event) -> Option<&str> {
    e.ts.as_deref().or_else(|| e.event.ts())
}

/// One line of the Events list.
struct Line {
    ts: Option<Box<str>>,
    source: u32,
    name: Box<str>,
    text: Box<str>,
    seq: Option<u64>,
}

/// What one dispatch, task child or worker prompt spent.
#[derive(Debug, Clone, PartialEq)]
struct Spend {
    day: String,
    model: String,
    role: String,
    workflow: String,
    usd: f64,
    tokens: u64,
    priced: bool,
}

/// A line of the Events list as the page gets it: `i` is its place in the history (0 the
/// oldest).
#[derive(Debug, Serialize)]
pub struct Item<'a> {
    pub i: usize,
    pub ts: Option<&'a str>,
    pub kind: SourceKind,
    pub id: &'a str,
    pub name: &'a str,
    pub text: &'a str,
    pub seq: Option<u64>,
}

/// One page of the Events list.
#[derive(Debug, Serialize)]
pub struct Page<'a> {
    /// The lines the history holds.
    pub total: usize,
    /// Of the first `upto` lines, those the filter takes.
    pub matched: usize,
    /// Newest first, from the `skip`th match on.
    pub items: Vec<Item<'a>>,
    /// Logs that stopped being readable (damage), each with what was lost.
    pub problems: &'a [String],
}

/// What to show of the Events list.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Query {
    pub kind: Option<SourceKind>,
    /// Lower case; a line is taken when its log's id, name or text holds it.
    pub text: String,
    pub skip: usize,
    pub limit: usize,
    /// The lines the page knows of (its count from the live feed): the list it pages through
    /// is the first `upto` lines, so a line appended meanwhile does not shift it.
    pub upto: Option<usize>,
}

/// One key's sum of the Cost view.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sum {
    pub key: String,
    pub usd: f64,
    pub tokens: u64,
    pub count: u64,
    pub unpriced: u64,
}

/// The Cost view: what was spent, summed by model, role, day or workflow, the largest first.
#[derive(Debug, Serialize)]
pub struct Cost<'a> {
    pub total_usd: f64,
    /// Dispatches, task children and worker prompts counted.
    pub dispatches: usize,
    pub sums: Vec<Sum>,
    pub problems: &'a [String],
}

/// What the Cost view sums by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    Model,
    Role,
    Day,
    Workflow,
}

impl std::str::FromStr for By {
    type Err = String;
    fn from_str(s: &str) -> Result<By, String> {
        match s {
            "model" => Ok(By::Model),
            "role" => Ok(By::Role),
            "day" => Ok(By::Day),
            "workflow" => Ok(By::Workflow),
            _ => Err(format!(
                "`by={}`: the Cost view sums by model, role, day or workflow",
                baton_text::sanitize_line(s)
            )),
        }
    }
}

/// The filter a page was last asked with, and its matches so far.
struct Hits {
    kind: Option<SourceKind>,
    text: String,
    scanned: usize,
    at: Vec<u32>,
}

/// The whole history, read once and kept up.
pub struct History {
    feed: Feed,
    prices: Prices,
    sources: Vec<(SourceKind, String)>,
    index: HashMap<(SourceKind, String), u32>,
    lines: Vec<Line>,
    spend: Vec<Spend>,
    /// A workflow's dispatches started and not yet completed: who was dispatched.
    open: HashMap<(u32, String), String>,
    /// A worker's spec: its role and model.
    workers: HashMap<u32, (String, String)>,
    hits: Option<Hits>,
    problems: Vec<String>,
    read_at: Option<std::time::Instant>,
    /// Each log's last recorded time.
    last_ts: HashMap<u32, Box<str>>,
    /// Where each log stands: its document and its summary; the cursor after what was read.
    projection: Projection,
    summaries: Summaries,
    cursor: Cursor,
}

/// The page's first message: every log's document and [`Summary`], and how many events they
/// cover.
#[derive(Debug, Serialize)]
pub struct Overview<'a> {
    pub events: usize,
    pub docs: Vec<Doc>,
    pub logs: Vec<&'a Summary>,
}

impl History {
    pub fn new(state: StateDir, prices: Prices) -> History {
        History {
            feed: Feed::new(state, Filter::default(), baton_events::Cursor::default()).projected(),
            prices,
            sources: Vec::new(),
            index: HashMap::new(),
            lines: Vec::new(),
            spend: Vec::new(),
            open: HashMap::new(),
            workers: HashMap::new(),
            hits: None,
            problems: Vec::new(),
            read_at: None,
            last_ts: HashMap::new(),
            projection: Projection::default(),
            summaries: Summaries::default(),
            cursor: Cursor::default(),
        }
    }

    /// Reads what was appended since the last read, when the page knows of more lines than
    /// were read (`upto`) or when nothing was read for a second (a page without a count).
    pub fn catch_up_for(&mut self, upto: Option<usize>) {
        let stale = self.read_at.is_none_or(|t| t.elapsed() >= STALE);
        if upto.map_or(stale, |u| u > self.lines.len() || stale) {
            self.catch_up();
        }
    }

    /// Reads what was appended since the last read.
    pub fn catch_up(&mut self) {
        self.read_at = Some(std::time::Instant::now());
        let (events, errors) = self.feed.poll();
        for e in errors {
            self.problems.push(e.to_string());
        }
        for e in events {
            self.fold(e);
        }
    }

    /// The lines read so far.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// Everything read so far, as the page's first message; the projection it was drawn from
    /// and the cursor after it (a stream that goes on from there).
    pub fn overview(&self) -> (Overview<'_>, &Projection, &Cursor) {
        let o = Overview {
            events: self.lines.len(),
            docs: self.projection.docs(),
            logs: self.summaries.all(),
        };
        (o, &self.projection, &self.cursor)
    }

    fn fold(&mut self, mut e: Event) {
        // Priced in the typed event, so the spending below reads what the page is sent.
        price_typed(&mut e, &self.prices);
        self.projection.apply(&e, 0);
        self.cursor.advance(&e.pos);
        self.summaries.add(&e);
        let key = (e.source.kind, e.source.id.clone());
        let source = match self.index.get(&key) {
            Some(k) => *k,
            None => {
                let k = u32::try_from(self.sources.len()).unwrap_or(u32::MAX);
                self.sources.push(key.clone());
                self.index.insert(key, k);
                k
            }
        };
        let kind = e.source.kind;
        let ts = ts_of(&e).map(Box::<str>::from);
        // A line that records no time (a task's progress) is spent at its log's last known one.
        let spent_at = match &ts {
            Some(t) => {
                self.last_ts.insert(source, t.clone());
                Some(t.clone())
            }
            None => self.last_ts.get(&source).cloned(),
        };
        let line = match folded_line(e.event) {
            Ok(v) => v,
            Err(err) => {
                self.problems
                    .push(format!("an event could not be read: {err}"));
                return;
            }
        };
        let ev = &line;
        let name = name_of(ev);
        let seq = ev.get("seq").and_then(Value::as_u64);
        let text = gist(kind, ev, &name);
        self.summaries
            .set_last(kind, &self.sources[source as usize].1, &name);
        self.spent(kind, source, ev, &name, spent_at.as_deref());
        self.lines.push(Line {
            ts,
            source,
            name: name.into(),
            text: text.into(),
            seq,
        });
    }

    /// What the event spent, if it is a dispatch's end, a finished task or a worker's answer.
    fn spent(&mut self, kind: SourceKind, source: u32, ev: &Value, name: &str, ts: Option<&str>) {
        let id = self.sources[source as usize].1.clone();
        let day = ts.map_or_else(|| "?".to_string(), day_of);
        let tokens = |u: &Value| count(&u["input_tokens"]) + count(&u["output_tokens"]);
        match kind {
            SourceKind::Workflow => {
                let Some(task) = ev["task_id"].as_str().filter(|t| !t.is_empty()) else {
                    return;
                };
                let det = &ev["details"];
                if name == "agent_started" {
                    let who = text(&det["role"]).or_else(|| text(&ev["agent"]));
                    self.open
                        .insert((source, task.to_string()), who.unwrap_or_default());
                } else if name == "agent_completed" {
                    let Some(who) = self.open.remove(&(source, task.to_string())) else {
                        return;
                    };
                    let model = text(&det["route"]).or_else(|| text(&det["backend"]));
                    let usd = det["cost_usd"].as_f64();
                    self.spend.push(Spend {
                        day,
                        model: model.unwrap_or_else(|| "(no route)".into()),
                        role: if who.is_empty() { "?".into() } else { who },
                        workflow: id,
                        usd: usd.unwrap_or(0.0),
                        tokens: tokens(&det["usage"]),
                        priced: usd.is_some(),
                    });
                }
            }
            SourceKind::Task if name == "task.completed" => {
                let entries = ev["report"]["entries"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                for entry in entries {
                    let usd = entry["cost_usd"].as_f64();
                    self.spend.push(Spend {
                        day: day.clone(),
                        model: text(&entry["model"]).unwrap_or_else(|| "(no route)".into()),
                        role: text(&entry["role"]).unwrap_or_else(|| "?".into()),
                        workflow: format!("task {id}"),
                        usd: usd.unwrap_or(0.0),
                        tokens: tokens(&entry["usage"]),
                        priced: usd.is_some(),
                    });
                }
            }
            SourceKind::Worker if name == "worker.created" => {
                let spec = &ev["spec"];
                let model = text(&spec["model"]).or_else(|| text(&spec["model_class"]));
                let role = text(&spec["role"]).unwrap_or_default();
                self.workers
                    .insert(source, (role, model.unwrap_or_default()));
            }
            SourceKind::Worker if name == "prompt.answered" => {
                let (role, model) = self.workers.get(&source).cloned().unwrap_or_default();
                let u = &ev["usage"];
                let usd = u["cost_usd"].as_f64();
                self.spend.push(Spend {
                    day,
                    model: if model.is_empty() {
                        "(the role's)".into()
                    } else {
                        model
                    },
                    role: if role.is_empty() { "?".into() } else { role },
                    workflow: format!("worker {id}"),
                    usd: usd.unwrap_or(0.0),
                    tokens: tokens(u),
                    priced: usd.is_some(),
                });
            }
            _ => {}
        }
    }

    /// A page of the Events list, newest first.
    pub fn page(&mut self, q: &Query) -> Page<'_> {
        let upto = q.upto.unwrap_or(self.lines.len()).min(self.lines.len());
        let limit = q.limit.min(MOST_LINES);
        let picked: Vec<usize> = if q.kind.is_none() && q.text.is_empty() {
            (0..upto.saturating_sub(q.skip)).rev().take(limit).collect()
        } else {
            let at = self.matches(q.kind, &q.text);
            let m = at.partition_point(|&i| (i as usize) < upto);
            (0..m.saturating_sub(q.skip))
                .rev()
                .take(limit)
                .map(|k| at[k] as usize)
                .collect()
        };
        let matched = if q.kind.is_none() && q.text.is_empty() {
            upto
        } else {
            let at = self.hits.as_ref().map_or(&[][..], |h| &h.at[..]);
            at.partition_point(|&i| (i as usize) < upto)
        };
        let items = picked
            .into_iter()
            .map(|i| {
                let l = &self.lines[i];
                let (kind, id) = &self.sources[l.source as usize];
                Item {
                    i,
                    ts: l.ts.as_deref(),
                    kind: *kind,
                    id,
                    name: &l.name,
                    text: &l.text,
                    seq: l.seq,
                }
            })
            .collect();
        Page {
            total: self.lines.len(),
            matched,
            items,
            problems: &self.problems,
        }
    }

    /// The places of the lines `kind` and `text` take, the last filter's kept and extended.
    fn matches(&mut self, kind: Option<SourceKind>, text: &str) -> &[u32] {
        let same = self
            .hits
            .as_ref()
            .is_some_and(|h| h.kind == kind && h.text == text);
        if !same {
            self.hits = Some(Hits {
                kind,
                text: text.to_string(),
                scanned: 0,
                at: Vec::new(),
            });
        }
        let Some(h) = self.hits.as_mut() else {
            return &[];
        };
        for (i, l) in self.lines.iter().enumerate().skip(h.scanned) {
            let (k, id) = &self.sources[l.source as usize];
            let takes = kind.is_none_or(|want| want == *k)
                && (text.is_empty() || {
                    let all = format!("{id} {} {}", l.name, l.text).to_lowercase();
                    all.contains(text)
                });
            if takes {
                h.at.push(u32::try_from(i).unwrap_or(u32::MAX));
            }
        }
        h.scanned = self.lines.len();
        &h.at
    }

    /// What was spent, summed by `by`, the largest first (then the most tokens, then by key).
    pub fn cost(&self, by: By) -> Cost<'_> {
        let mut sums: HashMap<&str, Sum> = HashMap::new();
        for s in &self.spend {
            let key = match by {
                By::Model => &s.model,
                By::Role => &s.role,
                By::Day => &s.day,
                By::Workflow => &s.workflow,
            };
            let x = sums.entry(key).or_insert_with(|| Sum {
                key: key.clone(),
                usd: 0.0,
                tokens: 0,
                count: 0,
                unpriced: 0,
            });
            x.usd += s.usd;
            x.tokens += s.tokens;
            x.count += 1;
            if !s.priced {
                x.unpriced += 1;
            }
        }
        let mut sums: Vec<Sum> = sums.into_values().collect();
        sums.sort_by(|a, b| {
            b.usd
                .total_cmp(&a.usd)
                .then(b.tokens.cmp(&a.tokens))
                .then_with(|| a.key.cmp(&b.key))
        });
        Cost {
            total_usd: self.spend.iter().map(|s| s.usd).sum(),
            dispatches: self.spend.len(),
            sums,
            problems: &self.problems,
        }
    }
}

/// One workflow's events as the page gets them (its view's waterfall, graph, findings and
/// marks are folded from them), and what could not be read.
pub fn workflow_events(state: &StateDir, id: &str) -> (Vec<Value>, Vec<String>) {
    let filter = Filter {
        kinds: vec![SourceKind::Workflow],
        ids: vec![id.to_string()],
    };
    let (events, errors) = Feed::new(state.clone(), filter, baton_events::Cursor::default()).poll();
    let mut problems: Vec<String> = errors.iter().map(ToString::to_string).collect();
    let mut out = Vec::with_capacity(events.len());
    for e in events {
        match lean(e, &[]) {
            Ok(v) => out.push(v),
            Err(err) => problems.push(format!("an event could not be read: {err}")),
        }
    }
    (out, problems)
}

/// The event's own line as a `Value`, for the fold: what the Events list and the spending read.
/// A workflow event's change of the artifact is left out before anything is copied: the fold
/// reads none of it (the projection has folded it from the typed event), and it is most of a
/// log's bytes. Reading the page's `lean` form instead made the whole read 1.35–1.85× slower at
/// 100,000 events (`cargo bench -p baton-web --bench history`, docs/serve.md).
fn folded_line(mut event: Payload) -> serde_json::Result<Value> {
    if let Payload::Workflow(w) = &mut event {
        w.delta = None;
    }
    serde_json::to_value(&event)
}

/// An event's name: the `type` of its line (`event` for a workflow's).
pub fn name_of(ev: &Value) -> String {
    ev.get("type")
        .or_else(|| ev.get("event"))
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_string()
}

/// A field as words, when it says something (not null, false, zero or empty).
fn text(v: &Value) -> Option<String> {
    match v {
        Value::Null | Value::Bool(false) => None,
        Value::String(s) if s.is_empty() => None,
        Value::String(s) => Some(s.clone()),
        Value::Number(n) if n.as_f64() == Some(0.0) => None,
        other => Some(other.to_string()),
    }
}

fn count(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// The day (UTC) of an RFC 3339 time, or `?`.
fn day_of(ts: &str) -> String {
    use time::format_description::well_known::Rfc3339;
    match time::OffsetDateTime::parse(ts, &Rfc3339) {
        Ok(t) => {
            let d = t.to_offset(time::UtcOffset::UTC).date();
            format!("{:04}-{:02}-{:02}", d.year(), u8::from(d.month()), d.day())
        }
        Err(_) => "?".into(),
    }
}

/// One sentence on what an event says, for the Events list.
fn gist(kind: SourceKind, ev: &Value, name: &str) -> String {
    let mut bits: Vec<String> = Vec::new();
    let fields = |bits: &mut Vec<String>, keys: &[&str]| {
        bits.extend(keys.iter().filter_map(|k| text(&ev[*k])));
    };
    match kind {
        SourceKind::Workflow => {
            fields(
                &mut bits,
                &["agent", "task_id", "phase", "decision", "reason"],
            );
        }
        SourceKind::Flow => {
            bits.extend(text(&ev["unit"]).map(|u| format!("unit {u}")));
            fields(&mut bits, &["reason", "message", "evidence"]);
        }
        SourceKind::Task => {
            if name == "entry" && !ev["event"].is_null() {
                let index = text(&ev["index"]).unwrap_or_else(|| "0".into());
                bits.push(format!("#{index} {}", name_of(&ev["event"])));
            }
            fields(&mut bits, &["message"]);
        }
        SourceKind::Worker => {
            bits.extend(text(&ev["id"]).map(|id| format!("prompt {id}")));
            fields(&mut bits, &["reason", "answer", "text"]);
        }
        SourceKind::Session => {
            bits.extend(text(&ev["message"]["role"]));
            fields(&mut bits, &["outcome", "model"]);
        }
        SourceKind::Routing => {}
    }
    bits.join(" · ").chars().take(GIST).collect()
}

#[cfg(test)]
#[path = "history_tests.rs"]
mod tests;
