// The dashboard: the project event feed (server-sent events) folded into one row per log.
// Every text from the feed goes into the page with textContent: nothing a model wrote becomes
// markup.
const csrf = document.querySelector('meta[name="baton-csrf"]').content;
const rows = new Map(); // "kind/id" -> {kind, id, state, last, at}

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
  rows.set(key, { kind, id: e.source.id, state: stateOf(kind, name, prev && prev.state), last: name, at: e.ts || (prev && prev.at) });
  render(kind);
};
