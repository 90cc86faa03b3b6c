// The page's model: the project event feed folded into one row per log, a timeline of every
// event, each workflow's dispatches and graph, each Flow's units, and what was spent. Pure: no
// DOM, so that node can run it too. Events arrive in batches (a JSON array per message); an event
// whose position the model already holds is dropped, so a batch given twice changes nothing.

export const STEPS = ['implement', 'rebase', 'validate', 'review', 'merge'];

// Milliseconds since the epoch of an RFC 3339 time (its nanoseconds cut to milliseconds).
export function ms(ts) {
  if (!ts) return NaN;
  return Date.parse(String(ts).replace(/(\.\d{3})\d+/, '$1'));
}

export function nameOf(ev) {
  return (ev && (ev.type || ev.event)) || '?';
}

function stateOf(kind, name, prev) {
  if (kind === 'workflow') {
    if (name === 'checkpoint_requested' || name === 'budget_stopped' || name === 'workflow_stopped') return 'needs';
    if (name === 'workflow_completed') return 'done';
    if (name === 'workflow_failed') return 'failed';
    return name === 'checkpoint_answered' || !prev ? 'running' : prev;
  }
  if (kind === 'flow') {
    if (name === 'flow.halted' || name === 'unit.blocked' || name === 'flow.failed') return 'needs';
    if (name === 'flow.completed' || name === 'flow.abandoned' || name === 'flow.cleaned') return 'done';
    if (name === 'flow.cleaning' || name === 'unit.cleaning') return prev || 'done';
    return prev && prev !== 'needs' ? prev : 'running';
  }
  if (kind === 'task') {
    if (name === 'task.completed') return 'done'; // refined from its report (Model.task)
    if (name === 'task.failed' || name === 'task.cancelled' || name === 'task.lost') return 'failed';
    return prev === 'done' || prev === 'failed' ? prev : 'running';
  }
  if (kind === 'session') return name === 'ended' ? 'done' : 'running';
  if (kind === 'worker') {
    if (name === 'worker.stopped' || name === 'worker.retired') return 'done';
    if (name === 'worker.spawned' || name === 'worker.started') return 'running';
    return prev || 'running';
  }
  return prev || 'running';
}

// One sentence on what an event says, for the timeline.
function gist(kind, ev, name) {
  const bits = [];
  if (kind === 'workflow') {
    if (ev.agent) bits.push(ev.agent);
    if (ev.task_id) bits.push(ev.task_id);
    if (ev.phase) bits.push(ev.phase);
    if (ev.decision) bits.push(ev.decision);
    if (ev.reason) bits.push(ev.reason);
  } else if (kind === 'flow') {
    if (ev.unit) bits.push(`unit ${ev.unit}`);
    if (ev.reason) bits.push(String(ev.reason));
    if (ev.message) bits.push(ev.message);
    if (ev.evidence) bits.push(ev.evidence);
  } else if (kind === 'task') {
    if (name === 'entry' && ev.event) bits.push(`#${ev.index} ${nameOf(ev.event)}`);
    if (ev.message) bits.push(ev.message);
  } else if (kind === 'worker') {
    if (ev.id) bits.push(`prompt ${ev.id}`);
    if (ev.reason) bits.push(String(ev.reason));
    if (ev.answer) bits.push(String(ev.answer));
    if (ev.text) bits.push(String(ev.text));
  } else if (kind === 'session') {
    if (ev.message) bits.push(ev.message.role);
    if (ev.outcome) bits.push(ev.outcome);
    if (ev.model) bits.push(ev.model);
  }
  return bits.join(' · ').slice(0, 160);
}

export class Model {
  constructor() {
    this.rows = new Map(); // "kind/id" -> row
    this.timeline = []; // every event: {t, kind, id, name, text, seq} (kept small: 100,000 of them)
    this.seen = new Map(); // "kind/id" -> the offset of the last event taken
    this.spend = []; // {t, day, model, role, workflow, usd, tokens}
    this.version = 0;
    this.duplicates = 0; // events given twice (dropped)
    this.changed = new Set(); // "kind/id" changed since the last take
  }

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
    // A line that records no time (a task's progress) takes its log's last known one.
    const known = this.rows.get(key);
    const t = at ? ms(at) : known ? known.t : NaN;
    this.timeline.push({ t, kind, id: e.source.id, name, text: gist(kind, ev, name), seq: ev.seq });
    if (kind === 'routing') return;
    let row = this.rows.get(key);
    if (!row) {
      row = { kind, id: e.source.id, state: undefined, events: 0, first: t, tokens: 0, cost: 0 };
      this.rows.set(key, row);
    }
    row.events += 1;
    row.state = stateOf(kind, name, row.state);
    row.last = name;
    if (at) { row.at = at; row.t = t; }
    if (kind === 'workflow') this.workflow(row, ev, name, t);
    else if (kind === 'flow') this.flow(row, ev, name);
    else if (kind === 'task') this.task(row, ev, name, t);
    else if (kind === 'session') this.session(row, ev, name);
    else if (kind === 'worker') this.worker(row, ev, name, t);
    this.changed.add(key);
  }

  workflow(row, ev, name, t) {
    row.nodes = row.nodes || new Map();
    row.graph = row.graph || new Map();
    row.findings = row.findings || [];
    row.marks = row.marks || [];
    if (name === 'workflow_started') row.type = ev.decision || row.type;
    if (ev.phase && name !== 'checkpoint_requested') row.phase = ev.phase;
    const d = ev.delta || {};
    if (Array.isArray(d.tasks)) {
      for (const task of d.tasks) {
        const g = row.graph.get(task.id) || { id: task.id, seen: t };
        Object.assign(g, { status: task.status, blockedBy: task.blockedBy || [], phase: task.phase, origin: task.origin });
        row.graph.set(task.id, g);
      }
    }
    if (d.spent) row.spent = { ...(row.spent || {}), ...d.spent };
    if (d.run) {
      if (typeof d.run.budget_usd === 'number') row.budgetUsd = d.run.budget_usd;
      if (typeof d.run.budget_tokens === 'number') row.budgetTokens = d.run.budget_tokens;
    }
    if (name === 'task_created' && ev.details && Array.isArray(ev.details.tasks)) {
      for (const id of ev.details.tasks) {
        const g = row.graph.get(id) || { id, blockedBy: [] };
        if (g.created === undefined) g.created = t;
        row.graph.set(id, g);
      }
    }
    if (name === 'checkpoint_requested') {
      const det = ev.details || {};
      row.checkpoint = { gate: ev.phase || '', question: ev.reason || '', options: det.options || [], recommended: det.recommended, seq: ev.seq };
      row.marks.push({ seq: ev.seq, what: `checkpoint ${ev.phase || ''}`, t });
    } else if (name === 'checkpoint_answered') {
      row.checkpoint = undefined;
      row.marks.push({ seq: ev.seq, what: `answered ${((ev.details || {}).answer || '').slice(0, 40)}`, t });
    } else if (name === 'budget_stopped' || name === 'workflow_stopped' || name === 'workflow_failed' || name === 'workflow_completed') {
      row.waits = name === 'budget_stopped' ? 'budget' : undefined;
      row.reason = ev.reason || row.reason;
      row.marks.push({ seq: ev.seq, what: name, t });
    }
    row.waits = row.checkpoint ? `${row.checkpoint.gate}` : row.state === 'needs' ? row.waits || name : undefined;
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
    if (name === 'agent_completed' && ev.task_id) {
      const n = [...row.nodes.values()].reverse().find((x) => x.task === ev.task_id && x.end === undefined);
      if (n) {
        const det = ev.details || {};
        const usage = det.usage || {};
        n.end = t;
        n.verdict = ev.decision || '';
        n.cost = typeof det.cost_usd === 'number' ? det.cost_usd : null;
        n.tokens = (usage.input_tokens || 0) + (usage.output_tokens || 0);
        n.route = det.route || det.backend || '';
        n.error = det.error || null;
        n.session = det.session;
        row.tokens += n.tokens;
        row.cost += n.cost || 0;
        const g = row.graph.get(ev.task_id);
        if (g) g.done = t;
        this.spend.push({ t, day: dayOf(t), model: n.route || '(no route)', role: n.role || n.agent || '?', workflow: row.id, usd: n.cost || 0, tokens: n.tokens, priced: n.cost !== null });
      }
    }
  }

  // When `task` became ready to run: its creation, or the end of its last blocker, if later.
  ready(row, task, fallback) {
    const g = row.graph.get(task);
    if (!g) return fallback;
    let at = g.created !== undefined ? g.created : g.seen !== undefined ? g.seen : fallback;
    for (const b of g.blockedBy || []) {
      const bg = row.graph.get(b);
      if (bg && bg.done !== undefined && bg.done > at) at = bg.done;
    }
    return Math.min(at, fallback);
  }

  flow(row, ev, name) {
    row.units = row.units || new Map();
    if (name === 'flow.created') {
      for (const u of ev.units || []) row.units.set(u.id, { id: u.id, name: u.name, steps: STEPS.map(() => 'pending'), note: '', validation: [] });
      return;
    }
    if (name === 'flow.halted') row.reason = ev.reason;
    if (name === 'flow.failed') row.reason = ev.message;
    const u = ev.unit && row.units.get(ev.unit);
    if (!u) return;
    const set = (k, v) => { u.steps[k] = v; };
    switch (name) {
      case 'unit.implementer_started': case 'unit.implementer_spawned': set(0, 'running'); break;
      case 'unit.implementer_finished': set(0, ev.result && ev.result.ok ? 'done' : 'failed'); u.answer = ev.result && (ev.result.output || ev.result.summary); break;
      case 'unit.derived': if (u.steps[1] === 'pending') set(1, 'skipped'); u.base = ev.base; u.tip = ev.tip; break;
      case 'unit.rebasing': set(1, 'running'); break;
      case 'unit.rebased': set(1, 'done'); u.base = ev.base; u.tip = ev.head; break;
      case 'unit.validating': set(2, 'running'); break;
      case 'unit.validated':
        set(2, (ev.results || []).every((x) => x.ok) ? 'done' : 'failed');
        u.validation = (ev.results || []).map((x) => ({ command: [x.command].concat(x.args || []).join(' '), ok: x.ok, output: x.output || '' }));
        break;
      case 'unit.reviewing': set(3, 'running'); u.packet = true; break;
      case 'unit.reviewed': set(3, ev.approved ? 'done' : 'failed'); u.review = ev.output; break;
      case 'unit.blocked': row.reason = `unit ${u.id} blocked: ${ev.reason}`; u.note = `${ev.reason}: ${ev.evidence}`; { const k = u.steps.indexOf('running'); if (k >= 0) set(k, 'failed'); } break;
      case 'unit.repair_started': u.note = ''; break;
      case 'unit.merging': set(4, 'running'); break;
      case 'unit.merged': set(4, 'done'); u.tip = ev.tip; if (u.steps[3] === 'pending') set(3, 'skipped'); break;
      default: break;
    }
  }

  task(row, ev, name, t) {
    if (name === 'task.created' && ev.request) {
      const entries = ev.request.entries || [];
      row.what = entries.map((x) => `${x.name || x.role}: ${x.task || ''}`).join('; ').slice(0, 200);
    }
    if (name === 'task.failed') row.reason = ev.message;
    if (name === 'task.completed' && ev.report) {
      // Every entry done: done; some stopped and none failed: cancelled; else failed.
      const st = (ev.report.entries || []).map((x) => x.status);
      row.state = st.every((x) => x === 'done') ? 'done' : st.includes('stopped') && !st.includes('failed') ? 'cancelled' : 'failed';
      const broken = (ev.report.entries || []).find((x) => x.status === 'failed');
      if (broken) row.reason = `${broken.name}: ${(broken.error && broken.error.message) || 'failed'}`;
      for (const entry of ev.report.entries || []) {
        const usage = entry.usage || {};
        const tokens = (usage.input_tokens || 0) + (usage.output_tokens || 0);
        const usd = typeof entry.cost_usd === 'number' ? entry.cost_usd : 0;
        row.tokens += tokens;
        row.cost += usd;
        if (entry.session_id) row.session = entry.session_id;
        this.spend.push({ t, day: dayOf(t), model: entry.model || '(no route)', role: entry.role || '?', workflow: `task ${row.id}`, usd, tokens, priced: typeof entry.cost_usd === 'number' });
      }
    }
  }

  worker(row, ev, name, t) {
    if (name === 'worker.created' && ev.spec) {
      row.role = ev.spec.role;
      row.model = ev.spec.model || ev.spec.model_class || '';
    }
    if (name === 'worker.started') { row.session = ev.session; row.doing = 'idle'; }
    if (name === 'prompt.delivered') row.doing = 'working';
    if (name === 'prompt.lost') row.doing = 'a prompt was lost (send --retry)';
    if (name === 'worker.stopped') {
      row.doing = `stopped (${ev.reason})`;
      if (ev.reason === 'failed') row.state = 'failed';
    }
    if (name === 'worker.retired') row.doing = 'retired';
    if (name === 'prompt.answered') {
      const u = ev.usage || {};
      const tokens = (u.input_tokens || 0) + (u.output_tokens || 0);
      row.turns = (row.turns || 0) + 1;
      row.tokens += tokens;
      row.cost += u.cost_usd || 0;
      row.doing = 'idle';
      row.answer = String(ev.answer || '').split('\n')[0].slice(0, 160);
      this.spend.push({ t, day: dayOf(t), model: row.model || '(the role\'s)', role: row.role || '?', workflow: `worker ${row.id}`, usd: u.cost_usd || 0, tokens, priced: typeof u.cost_usd === 'number' });
    }
  }

  session(row, ev, name) {
    if (name === 'session') { row.role = ev.role; row.model = ev.model; }
    if (name === 'route') row.model = ev.model;
    if (name === 'message' && ev.seat) row.routed = true;
  }

  // The rows of `kind`, newest first.
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
      if (r.state === 'needs' || (r.kind === 'task' && r.state === 'failed')) out.push(r);
    }
    out.sort((a, b) => (b.t || 0) - (a.t || 0));
    return out;
  }

  // What was spent, summed by `by` (model, role, day, workflow): [{key, usd, tokens, count}],
  // the largest first.
  costBy(by) {
    const sums = new Map();
    for (const s of this.spend) {
      const k = s[by];
      const x = sums.get(k) || { key: k, usd: 0, tokens: 0, count: 0, unpriced: 0 };
      x.usd += s.usd;
      x.tokens += s.tokens;
      x.count += 1;
      if (!s.priced) x.unpriced += 1;
      sums.set(k, x);
    }
    return [...sums.values()].sort((a, b) => b.usd - a.usd || b.tokens - a.tokens || String(a.key).localeCompare(String(b.key)));
  }
}

export function dayOf(t) {
  return Number.isFinite(t) ? new Date(t).toISOString().slice(0, 10) : '?';
}

// The layers of a task graph: each task one column right of its last blocker.
export function layers(graph) {
  const depth = new Map();
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
  const cols = [];
  for (const [id, d] of depth) (cols[d] = cols[d] || []).push(id);
  return cols.map((c) => c || []);
}

// The verifier's scenarios in a contract's text (`SCENARIO_ROWS:` or `SCENARIOS:` items with name and status).
export function scenarios(text) {
  const out = [];
  const m = /(?:SCENARIOS|SCENARIO_ROWS):\s*\n((?:[ \t]+.*\n?)*)/.exec(text || '');
  if (!m) return out;
  let cur = null;
  for (const line of m[1].split('\n')) {
    const item = /^\s*-\s*name:\s*(.*)$/.exec(line);
    if (item) { cur = { name: item[1].trim(), status: '' }; out.push(cur); continue; }
    const st = /^\s*status:\s*(.*)$/.exec(line);
    if (st && cur) cur.status = st[1].trim();
  }
  return out;
}

// The contract block of an agent's answer (the YAML after `Router Contract`), as text.
export function contract(text) {
  const m = /Router Contract[^\n]*\n```(?:yaml)?\n([\s\S]*?)```/.exec(text || '');
  return m ? m[1] : '';
}
