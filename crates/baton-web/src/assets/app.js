// The dashboard: the project event feed (server-sent events) folded into one row per log.
// Every text from the feed goes into the page with textContent: nothing a model wrote becomes
// markup.
const csrf = document.querySelector('meta[name="baton-csrf"]').content;
const rows = new Map(); // "kind/id" -> {kind, id, state, last, at, checkpoint}

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
    return prev && prev !== 'needs' ? prev : 'running';
  }
  if (kind === 'task') {
    if (name === 'task.completed') return 'done';
    if (name === 'task.failed') return 'failed';
    return 'running';
  }
  if (kind === 'session') return name === 'ended' ? 'done' : 'running';
  return prev || 'running';
}

function nameOf(event) {
  return event.type || event.event || '?';
}

function render(kind) {
  const table = document.getElementById(kind === 'workflow' ? 'workflows' : kind === 'flow' ? 'flows' : kind === 'task' ? 'tasks' : 'sessions');
  if (!table) return;
  const body = table.tBodies[0];
  const mine = [...rows.values()].filter((r) => r.kind === kind);
  body.replaceChildren(...mine.map((r) => {
    const tr = document.createElement('tr');
    tr.dataset.id = r.id;
    for (const text of [r.id, r.state, r.last, r.at || '']) {
      const td = document.createElement('td');
      td.textContent = text;
      tr.append(td);
    }
    tr.children[1].className = r.state;
    // The id opens what the row stands for: a task's log, a session's transcript, a Flow's or
    // a workflow's view.
    const opens = {
      task: [`open task ${r.id} log`, () => view(`task ${r.id}: log`, `/api/tasks/${encodeURIComponent(r.id)}/log`)],
      session: [`open session ${r.id} transcript`, () => view(`session ${r.id}: transcript`, `/api/sessions/${encodeURIComponent(r.id)}/transcript`)],
      flow: [`open flow ${r.id}`, () => { openFlow = r.id; renderFlow(); }],
      workflow: [`open workflow ${r.id}`, () => { openWorkflow = r.id; renderDetail(); }],
    }[kind];
    if (opens) {
      const id = tr.children[0];
      const open = document.createElement('button');
      open.type = 'button';
      open.className = 'link';
      open.textContent = r.id;
      open.setAttribute('aria-label', opens[0]);
      open.addEventListener('click', opens[1]);
      id.replaceChildren(open);
    }
    if (kind === 'task') {
      const td = tr.children[3];
      td.textContent = '';
      if (r.state === 'running') {
        const b = document.createElement('button');
        b.textContent = 'cancel';
        b.addEventListener('click', () => cancel(r.id));
        td.append(b);
      }
    }
    return tr;
  }));
}

// What waits for the user: a workflow's checkpoint (its options, or free words) and a Flow that
// stopped (continue with guidance, or abandon). Each answer is confirmed, then sent as the CLI
// would send it; the page follows the result through the feed.
function renderNeeds() {
  const box = document.getElementById('needs');
  const waiting = [...rows.values()].filter((r) => r.state === 'needs');
  if (waiting.length === 0) {
    const p = document.createElement('p');
    p.className = 'empty';
    p.textContent = 'Nothing waits for you.';
    box.replaceChildren(p);
    return;
  }
  box.replaceChildren(...waiting.map((r) => {
    const card = document.createElement('form');
    card.className = 'need';
    card.setAttribute('aria-label', `${r.kind} ${r.id}`);
    const title = document.createElement('h3');
    title.textContent = `${r.kind} ${r.id}`;
    card.append(title);
    const say = document.createElement('p');
    if (r.kind === 'workflow' && r.checkpoint) {
      say.textContent = `${r.checkpoint.gate}: ${r.checkpoint.question}`;
      card.append(say);
      for (const option of r.checkpoint.options) {
        const b = document.createElement('button');
        b.type = 'button';
        b.textContent = option;
        b.addEventListener('click', () => act(`/api/workflows/${encodeURIComponent(r.id)}/answer`, option, `Answer “${option}”?`));
        card.append(b);
      }
      const label = document.createElement('label');
      label.textContent = 'or your own words ';
      const input = document.createElement('input');
      input.name = 'answer';
      label.append(input);
      const send = document.createElement('button');
      send.type = 'submit';
      send.textContent = 'answer';
      card.append(label, send);
      card.addEventListener('submit', (ev) => {
        ev.preventDefault();
        if (input.value.trim()) act(`/api/workflows/${encodeURIComponent(r.id)}/answer`, input.value, `Answer “${input.value}”?`);
      });
    } else if (r.kind === 'flow') {
      say.textContent = r.last;
      card.append(say);
      const label = document.createElement('label');
      label.textContent = 'guidance ';
      const input = document.createElement('input');
      input.name = 'guidance';
      label.append(input);
      const go = document.createElement('button');
      go.type = 'submit';
      go.textContent = 'continue';
      const stop = document.createElement('button');
      stop.type = 'button';
      stop.textContent = 'abandon';
      stop.addEventListener('click', () => act(`/api/flows/${encodeURIComponent(r.id)}/abandon`, '', `Abandon flow ${r.id}?`));
      card.append(label, go, stop);
      card.addEventListener('submit', (ev) => {
        ev.preventDefault();
        if (input.value.trim()) act(`/api/flows/${encodeURIComponent(r.id)}/continue`, input.value, `Continue flow ${r.id} with this guidance?`);
      });
    } else {
      say.textContent = r.last;
      card.append(say);
    }
    return card;
  }));
}

// One workflow: its dispatches as a table, each with a bar on one time scale (a waterfall).
let openWorkflow = null;
function renderDetail() {
  const section = document.getElementById('detail');
  const r = openWorkflow && rows.get(`workflow/${openWorkflow}`);
  if (!r) { section.hidden = true; return; }
  section.hidden = false;
  document.getElementById('h-detail').textContent = `Workflow ${r.id}`;
  const nodes = [...(r.nodes || new Map()).values()];
  const cost = nodes.reduce((sum, n) => sum + (n.cost || 0), 0);
  document.getElementById('detail-summary').textContent =
    `${r.kind === 'workflow' ? r.type || '' : ''} · ${r.state} · ${nodes.length} dispatches · $${cost.toFixed(4)}`;
  const t0 = Math.min(...nodes.map((n) => n.start));
  const t1 = Math.max(...nodes.map((n) => n.end || Date.now()));
  const span = Math.max(t1 - t0, 1);
  const body = document.querySelector('#dispatches tbody');
  body.replaceChildren(...nodes.map((n) => {
    const tr = document.createElement('tr');
    const secs = n.end ? ((n.end - n.start) / 1000).toFixed(2) + 's' : 'running';
    for (const text of [n.task, n.agent, n.phase, n.verdict || '', n.cost ? `$${n.cost.toFixed(4)}` : '', secs]) {
      const td = document.createElement('td');
      td.textContent = text;
      tr.append(td);
    }
    const td = document.createElement('td');
    td.className = 'lane';
    const bar = document.createElement('div');
    bar.className = `bar ${n.verdict === 'fail' ? 'failed' : n.end ? 'done' : 'running'}`;
    bar.style.marginLeft = `${((n.start - t0) / span) * 100}%`;
    bar.style.width = `${Math.max((((n.end || Date.now()) - n.start) / span) * 100, 0.5)}%`;
    bar.setAttribute('role', 'img');
    bar.setAttribute('aria-label', `${n.agent} from ${((n.start - t0) / 1000).toFixed(2)}s for ${secs}`);
    td.append(bar);
    tr.append(td);
    return tr;
  }));
}
document.getElementById('detail-close').addEventListener('click', () => { openWorkflow = null; renderDetail(); });

// One Flow: its units × steps, from the unit.* events.
const STEPS = ['implement', 'rebase', 'validate', 'review', 'merge'];
const GLYPH = { pending: '·', running: '◐', done: '✓', failed: '✗', skipped: '–' };
function foldFlow(r, ev, name) {
  r.units = r.units || new Map();
  if (name === 'flow.created') {
    for (const u of ev.units || []) r.units.set(u.id, { id: u.id, steps: STEPS.map(() => 'pending'), note: '' });
    return;
  }
  const u = ev.unit && r.units.get(ev.unit);
  if (!u) return;
  const set = (k, v) => { u.steps[k] = v; };
  switch (name) {
    case 'unit.implementer_started': case 'unit.implementer_spawned': set(0, 'running'); break;
    case 'unit.implementer_finished': set(0, ev.result && ev.result.ok ? 'done' : 'failed'); break;
    case 'unit.derived': if (u.steps[1] === 'pending') set(1, 'skipped'); u.base = ev.base; u.tip = ev.tip; break;
    case 'unit.rebasing': set(1, 'running'); break;
    case 'unit.rebased': set(1, 'done'); u.base = ev.base; u.tip = ev.head; break;
    case 'unit.validating': set(2, 'running'); break;
    case 'unit.validated': set(2, (ev.results || []).every((x) => x.ok) ? 'done' : 'failed'); break;
    case 'unit.reviewing': set(3, 'running'); break;
    case 'unit.reviewed': set(3, ev.approved ? 'done' : 'failed'); u.review = ev.output; break;
    case 'unit.blocked': u.note = `${ev.reason}: ${ev.evidence}`; { const k = u.steps.indexOf('running'); if (k >= 0) set(k, 'failed'); } break;
    case 'unit.merging': set(4, 'running'); break;
    case 'unit.merged': set(4, 'done'); u.tip = ev.tip; if (u.steps[3] === 'pending') set(3, 'skipped'); break;
    default: break;
  }
}

let openFlow = null;
function renderFlow() {
  const section = document.getElementById('flow-detail');
  const r = openFlow && rows.get(`flow/${openFlow}`);
  if (!r) { section.hidden = true; return; }
  section.hidden = false;
  document.getElementById('h-flow').textContent = `Flow ${r.id}`;
  const units = [...(r.units || new Map()).values()];
  const merged = units.filter((u) => u.steps[4] === 'done').length;
  document.getElementById('flow-summary').textContent = `${r.state} · ${merged}/${units.length} merged · last: ${r.last}`;
  document.querySelector('#units tbody').replaceChildren(...units.map((u) => {
    const tr = document.createElement('tr');
    tr.dataset.unit = u.id;
    const th = document.createElement('th');
    th.scope = 'row';
    th.textContent = u.id;
    tr.append(th);
    u.steps.forEach((st, k) => {
      const td = document.createElement('td');
      td.textContent = GLYPH[st];
      td.className = st === 'done' ? 'done' : st === 'failed' ? 'failed' : st === 'running' ? 'running' : '';
      td.setAttribute('aria-label', `${STEPS[k]}: ${st}`);
      tr.append(td);
    });
    const range = document.createElement('td');
    range.textContent = u.base && u.tip ? `${u.base.slice(0, 8)}..${u.tip.slice(0, 8)}` : '';
    tr.append(range);
    return tr;
  }));
  document.getElementById('flow-notes').replaceChildren(...units.filter((u) => u.note || (u.review && u.steps[3] === 'failed')).map((u) => {
    const p = document.createElement('p');
    p.textContent = `${u.id}: ${u.note || ''}${u.review && u.steps[3] === 'failed' ? ` — review: ${u.review}` : ''}`;
    return p;
  }));
}
document.getElementById('flow-close').addEventListener('click', () => { openFlow = null; renderFlow(); });

// A task's log or a session's transcript, read-only, as text.
async function view(title, url) {
  const res = await fetch(url);
  const text = res.ok ? (await res.json()).join('\n') : await res.text();
  document.getElementById('h-viewer').textContent = title;
  document.getElementById('viewer-text').textContent = text;
  document.getElementById('viewer').hidden = false;
}
document.getElementById('viewer-close').addEventListener('click', () => { document.getElementById('viewer').hidden = true; });

async function act(url, body, question) {
  if (!confirm(question)) return;
  const res = await fetch(url, { method: 'POST', headers: { 'X-Baton-CSRF': csrf, 'Content-Type': 'text/plain' }, body });
  if (!res.ok) alert(await res.text());
}

async function cancel(id) {
  if (!confirm(`Cancel task ${id}?`)) return;
  const res = await fetch(`/api/tasks/${encodeURIComponent(id)}/cancel`, { method: 'POST', headers: { 'X-Baton-CSRF': csrf } });
  if (!res.ok) alert(await res.text());
}

const live = document.getElementById('live');
const source = new EventSource('/api/events');
source.onopen = () => { live.textContent = 'live'; };
source.onerror = () => { live.textContent = 'reconnecting…'; };
source.onmessage = (m) => {
  const e = JSON.parse(m.data);
  const kind = e.source.kind;
  if (kind === 'routing') return;
  const key = `${kind}/${e.source.id}`;
  const name = nameOf(e.event);
  const prev = rows.get(key);
  let checkpoint = prev && prev.checkpoint;
  if (name === 'checkpoint_requested') {
    const d = e.event.details || {};
    checkpoint = { gate: e.event.phase || '', question: e.event.reason || '', options: d.options || [] };
  } else if (name === 'checkpoint_answered') {
    checkpoint = undefined;
  }
  const nodes = (prev && prev.nodes) || new Map();
  let type = prev && prev.type;
  if (kind === 'workflow') {
    const ev = e.event;
    // Milliseconds are enough (the log's times have nanoseconds).
    const at = Date.parse((e.ts || ev.ts || '').replace(/(\.\d{3})\d+/, '$1')) || Date.now();
    if (name === 'workflow_started') type = ev.decision || type;
    if (name === 'agent_started' && ev.task_id) {
      nodes.set(ev.task_id, { task: ev.task_id, agent: ev.agent || '', phase: ev.phase || '', start: at });
    }
    if (name === 'agent_completed' && ev.task_id && nodes.has(ev.task_id)) {
      const n = nodes.get(ev.task_id);
      n.end = at;
      n.verdict = ev.decision || '';
      n.cost = (ev.details && ev.details.cost_usd) || 0;
    }
  }
  const row = { kind, id: e.source.id, state: stateOf(kind, name, prev && prev.state), last: name, at: e.ts || (prev && prev.at), checkpoint, nodes, type, units: prev && prev.units };
  if (kind === 'flow') foldFlow(row, e.event, name);
  rows.set(key, row);
  render(kind);
  renderNeeds();
  if (kind === 'workflow' && e.source.id === openWorkflow) renderDetail();
  if (kind === 'flow' && e.source.id === openFlow) renderFlow();
};
