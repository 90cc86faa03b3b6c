// The page's model: one row per log (its events' count, first and last), and a workflow's
// dispatches as a waterfall and its graph. Where a log stands (its state, a workflow's phase,
// checkpoint and budget, a Flow's units × steps, a task's or worker's figures) is not guessed here:
// it is the server's projection (`baton_events::projection`), whose documents arrive beside the
// events (`project`). The page holds only what it shows: the history up to the page's first
// message is that message's summary of each log (`overview`), the Events list and the Cost view
// are asked of the server a page at a time, and a workflow's view folds that one log's events
// into a model of its own. Pure: no DOM, so that node can run it too. Events arrive in batches (a
// JSON array per message); an event whose position the model already holds is dropped, so a batch
// given twice changes nothing.
//
// Checked by `tsc` (`crates/baton-web/tsconfig.json`) against the documents' types, which are
// derived from the Rust ones (`projection.d.ts`, written by a baton-events test).
// @ts-check

/**
 * @typedef {import('./projection').Doc} Doc
 * @typedef {import('./projection').State} State
 * @typedef {import('./projection').Checkpoint} Checkpoint
 * @typedef {import('./projection').Unit} Unit
 */

/**
 * One event of the feed as `baton events --json` prints it (its `event` is the log's own line,
 * not typed here).
 * @typedef {{source: {kind: string, id: string}, pos?: {offset: number}, ts?: string, event?: any}} FeedEvent
 */

/**
 * A task of a workflow's graph, from the record's changes.
 * @typedef {{id: string, seen?: number, created?: number, done?: number, status?: string, blockedBy?: string[], phase?: string, origin?: string}} GraphTask
 */

/**
 * One dispatch of a workflow, from its events (a rerun is a dispatch of its own).
 * @typedef {{key: string, task: string, agent: string, phase: string, role?: string, class?: string, attempt: number, start: number, ready: number, end?: number, verdict?: string, reason?: string, cost?: number | null, tokens?: number, route?: string, error?: any, session?: string, change?: boolean}} Dispatch
 */

/**
 * Where one log stands by its events, as the page's first message says (`history::Summary`, not
 * derived: written here by hand).
 * @typedef {{kind: string, id: string, events: number, first: string | null, last: string, at: string | null}} Summary
 */

/**
 * One log's row: what its events say (count, times, a workflow's dispatches and graph, a
 * worker's spec) and, from its document (`project`), where it stands.
 * @typedef {object} Row
 * @property {string} kind
 * @property {string} id
 * @property {State | undefined} state
 * @property {number} events
 * @property {number | undefined} first
 * @property {number} tokens
 * @property {number} cost
 * @property {string} [last]
 * @property {string} [at]
 * @property {number} [t]
 * @property {Doc} [doc]
 * @property {string} [detail]
 * @property {string} [role]
 * @property {string | null} [model]
 * @property {string | null} [session]
 * @property {string} [type]
 * @property {string} [phase]
 * @property {Checkpoint | null} [checkpoint]
 * @property {string | null} [waits]
 * @property {string | null} [reason]
 * @property {number | null} [budgetUsd]
 * @property {Map<string, Unit>} [units]
 * @property {string | null} [what]
 * @property {string | null} [request]
 * @property {string | null} [runState]
 * @property {number} [turns]
 * @property {string} [doing]
 * @property {string | null} [answer]
 * @property {boolean} [routed]
 * @property {Map<string, Dispatch>} [nodes]
 * @property {Map<string, GraphTask>} [graph]
 * @property {object[]} [findings]
 * @property {{seq: number, what: string, t: number}[]} [marks]
 */

export const STEPS = ['implement', 'rebase', 'validate', 'review', 'merge'];

/** Whether an agent's verdict means its dispatch failed (as `failed_verdict` in the projection).
 * @param {string | undefined} v */
export function failedVerdict(v) {
  return ['fail', 'failed', 'blocked', 'changes_requested', 'error', 'no contract'].includes((v || '').toLowerCase());
}

// Milliseconds since the epoch of an RFC 3339 time (its nanoseconds cut to milliseconds).
/** @param {string | null | undefined} ts */
export function ms(ts) {
  if (!ts) return NaN;
  return Date.parse(String(ts).replace(/(\.\d{3})\d+/, '$1'));
}

/** @param {any} ev @returns {string} */
export function nameOf(ev) {
  return (ev && (ev.type || ev.event)) || '?';
}

export class Model {
  constructor() {
    /** @type {Map<string, Row>} "kind/id" -> row */
    this.rows = new Map();
    /** How many events the history holds: the first message's, and every one since. */
    this.count = 0;
    /** @type {Map<string, number>} "kind/id" -> the offset of the last event taken */
    this.seen = new Map();
    this.version = 0;
    this.duplicates = 0; // events given twice (dropped)
    /** @type {Set<string>} "kind/id" changed since the last take */
    this.changed = new Set();
  }

  /** @param {FeedEvent[]} batch */
  add(batch) {
    for (const e of batch) this.fold(e);
    if (batch.length) this.version += 1;
  }

  // The keys changed since the last call.
  take() {
    const c = this.changed;
    this.changed = new Set();
    return c;
  }

  /** @param {FeedEvent} e */
  fold(e) {
    const kind = e.source.kind;
    const key = `${kind}/${e.source.id}`;
    const offset = e.pos && e.pos.offset;
    if (offset !== undefined) {
      const before = this.seen.get(key);
      if (before !== undefined && offset <= before) { this.duplicates += 1; return; }
      this.seen.set(key, offset);
    }
    const ev = e.event || {};
    const name = nameOf(ev);
    const at = e.ts || ev.ts || ev.at || ev.created || null;
    // A line that records no time (a task's progress) takes its log's last known one (none when
    // its row was made by its document, which comes before the batch: NaN, as for no time).
    const known = this.rows.get(key);
    const t = at ? ms(at) : known && known.t !== undefined ? known.t : NaN;
    this.count += 1;
    if (kind === 'routing') return;
    const row = this.row(kind, e.source.id);
    row.events += 1;
    if (row.first === undefined) row.first = t;
    row.last = name;
    if (at) { row.at = at; row.t = t; }
    if (kind === 'workflow') this.workflow(row, ev, name, t);
    this.changed.add(key);
  }

  // The page's first message: how many events the history holds, each log's summary of them and
  // its document (what an event folded after it adds to, as if each had been folded).
  /** @param {{events: number, docs: Doc[], logs: Summary[]}} o */
  overview(o) {
    this.count = o.events;
    for (const s of o.logs) {
      const row = this.row(s.kind, s.id);
      row.events = s.events;
      row.first = s.first ? ms(s.first) : NaN;
      row.last = s.last;
      if (s.at) { row.at = s.at; row.t = ms(s.at); }
      this.changed.add(`${s.kind}/${s.id}`);
    }
    this.project(o.docs);
    this.version += 1;
  }

  // The row of a log, made on first sight (by an event or by its document).
  /** @param {string} kind @param {string} id @returns {Row} */
  row(kind, id) {
    const key = `${kind}/${id}`;
    let row = this.rows.get(key);
    if (!row) {
      row = { kind, id, state: undefined, events: 0, first: undefined, tokens: 0, cost: 0 };
      this.rows.set(key, row);
    }
    return row;
  }

  // The server's projection: each document says where one log stands now.
  /** @param {Doc[]} docs */
  project(docs) {
    for (const d of docs) {
      const row = this.row(d.kind, d.id);
      row.doc = d;
      set(row, { state: d.state, detail: d.detail, role: d.role, model: d.model, session: d.session, tokens: d.tokens, cost: d.cost_usd || 0 });
      if (d.workflow) {
        const w = d.workflow;
        set(row, { type: w.kind, request: w.request, runState: w.run_state, phase: w.phase, checkpoint: w.checkpoint, waits: w.waits, reason: w.note, budgetUsd: w.spent.budget_usd, tokens: w.spent.input_tokens + w.spent.output_tokens, cost: w.spent.cost_usd });
      }
      if (d.flow) set(row, { units: new Map(d.flow.units.map((u) => [u.id, u])), reason: d.detail });
      if (d.kind === 'task' || d.kind === 'session') set(row, { what: d.what, reason: d.reason });
      if (d.kind === 'worker') set(row, { turns: d.turns, doing: d.detail, answer: d.answer });
      if (d.kind === 'session') row.routed = d.routed;
      this.changed.add(`${d.kind}/${d.id}`);
    }
    if (docs.length) this.version += 1;
  }

  /** @param {Row} row @param {any} ev @param {string} name @param {number} t */
  workflow(row, ev, name, t) {
    row.nodes = row.nodes || new Map();
    row.graph = row.graph || new Map();
    row.findings = row.findings || [];
    row.marks = row.marks || [];
    const d = ev.delta || {};
    if (Array.isArray(d.tasks)) {
      for (const task of d.tasks) {
        const g = row.graph.get(task.id) || { id: task.id, seen: t };
        Object.assign(g, { status: task.status, blockedBy: task.blockedBy || [], phase: task.phase, origin: task.origin });
        row.graph.set(task.id, g);
      }
    }
    if (name === 'task_created' && ev.details && Array.isArray(ev.details.tasks)) {
      for (const id of ev.details.tasks) {
        /** @type {GraphTask} */
        const g = row.graph.get(id) || { id, blockedBy: [] };
        if (g.created === undefined) g.created = t;
        row.graph.set(id, g);
      }
    }
    // The marks of the record's time travel: checkpoint, answer, stop, end.
    if (name === 'checkpoint_requested') row.marks.push({ seq: ev.seq, what: `checkpoint ${ev.phase || ''}`, t });
    else if (name === 'checkpoint_answered') row.marks.push({ seq: ev.seq, what: `answered ${((ev.details || {}).answer || '').slice(0, 40)}`, t });
    else if (name === 'budget_stopped' || name === 'workflow_stopped' || name === 'workflow_failed' || name === 'workflow_completed') row.marks.push({ seq: ev.seq, what: name, t });
    if (name === 'decided' && ev.details && Array.isArray(ev.details.findings)) {
      for (const f of ev.details.findings) row.findings.push({ ...f, seq: ev.seq });
    }
    if (name === 'agent_started' && ev.task_id) {
      const det = ev.details || {};
      // A task dispatched again (a remediation's rerun) is its own row: an attempt of its own.
      const attempt = det.attempt || 1;
      const key = attempt > 1 ? `${ev.task_id}#${attempt}` : ev.task_id;
      row.nodes.set(key, { key, task: ev.task_id, agent: ev.agent || '', phase: ev.phase || '', role: det.role, class: det.class, attempt, start: t, ready: this.ready(row, ev.task_id, t) });
    }
    // The runner's reading of an answer: why one without a contract failed.
    if (name === 'contract_parsed' && ev.task_id && failedVerdict(ev.decision)) {
      const n = [...row.nodes.values()].reverse().find((x) => x.task === ev.task_id);
      if (n) {
        n.verdict = ev.decision || '';
        n.reason = ev.reason || '';
      }
    }
    if (name === 'agent_completed' && ev.task_id) {
      const n = [...row.nodes.values()].reverse().find((x) => x.task === ev.task_id && x.end === undefined);
      if (n) {
        const det = ev.details || {};
        const usage = det.usage || {};
        n.end = t;
        n.verdict = ev.decision || '';
        n.cost = typeof det.cost_usd === 'number' ? det.cost_usd : null;
        /** @type {number} */
        const tokens = (usage.input_tokens || 0) + (usage.output_tokens || 0);
        n.tokens = tokens;
        n.route = det.route || det.backend || '';
        n.error = det.error || null;
        n.session = det.session;
        // A writer's dispatch: the snapshots before and after it, so what it changed can be read.
        n.change = Boolean(det.tree_before && det.tree_after);
        const g = row.graph.get(ev.task_id);
        if (g) g.done = t;
      }
    }
  }

  // When `task` became ready to run: its creation, or the end of its last blocker, if later.
  /** @param {Row} row @param {string} task @param {number} fallback */
  ready(row, task, fallback) {
    const graph = row.graph;
    const g = graph && graph.get(task);
    if (!graph || !g) return fallback;
    let at = g.created !== undefined ? g.created : g.seen !== undefined ? g.seen : fallback;
    for (const b of g.blockedBy || []) {
      const bg = graph.get(b);
      if (bg && bg.done !== undefined && bg.done > at) at = bg.done;
    }
    return Math.min(at, fallback);
  }

  // The rows of `kind`, newest first.
  /** @param {string} kind */
  list(kind) {
    const out = [];
    for (const r of this.rows.values()) if (r.kind === kind) out.push(r);
    out.sort((a, b) => (b.t || 0) - (a.t || 0) || (a.id < b.id ? 1 : -1));
    return out;
  }

  // What waits for the user, newest first: checkpoints, stopped Flows, failed tasks.
  needs() {
    const out = [];
    for (const r of this.rows.values()) {
      // A failed workflow takes the user's guidance (`baton resume --answer`): it waits for them.
      const guidance = r.kind === 'workflow' && r.runState === 'failed';
      if (r.state === 'needs' || guidance || (r.kind === 'task' && r.state === 'failed')) out.push(r);
    }
    out.sort((a, b) => (b.t || 0) - (a.t || 0));
    return out;
  }
}

// A row's fields from its document (checked: a field the row does not have is an error).
/** @param {Row} row @param {Partial<Row>} fields */
function set(row, fields) {
  Object.assign(row, fields);
}

// The layers of a task graph: each task one column right of its last blocker.
/** @param {Map<string, GraphTask>} graph @returns {string[][]} */
export function layers(graph) {
  const depth = new Map();
  /** @type {(id: string, path: Set<string>) => number} */
  const visit = (id, path) => {
    if (depth.has(id)) return depth.get(id);
    if (path.has(id)) return 0; // a cycle: drawn, not followed
    path.add(id);
    const g = graph.get(id);
    let d = 0;
    for (const b of (g && g.blockedBy) || []) if (graph.has(b)) d = Math.max(d, visit(b, path) + 1);
    path.delete(id);
    depth.set(id, d);
    return d;
  };
  for (const id of graph.keys()) visit(id, new Set());
  /** @type {string[][]} */
  const cols = [];
  for (const [id, d] of depth) (cols[d] = cols[d] || []).push(id);
  return cols.map((c) => c || []);
}
