// The dashboard: the project event feed (server-sent events, a batch per message) folded by the
// model, drawn at most once per frame. Every text from the feed goes into the page as text, never
// as markup: nothing a model wrote becomes HTML.
//
// Checked by `tsc` (`crates/baton-web/tsconfig.json`) against the documents' types
// (`projection.d.ts`) and the model's (`model.js`).
// @ts-check

import { Model, STEPS, failedVerdict, ms } from './model.js';
import { VList } from './vlist.js';
import { el, money, secs, graphPicture, diffView, transcriptView, costChart } from './views.js';

/**
 * @typedef {import('./projection').Unit} Unit
 * @typedef {import('./projection').Step} Step
 * @typedef {import('./model.js').Row} Row
 * @typedef {import('./model.js').Dispatch} Dispatch
 */

/**
 * A line of the Events list as `/api/timeline` sends it (`baton_web::history::Item`, not derived:
 * written here by hand); `i` is its place in the history, 0 the oldest.
 * @typedef {{i: number, ts: string | null, kind: string, id: string, name: string, text: string, seq: number | null}} Line
 */

/**
 * What was spent, summed by one key, as `/api/cost` sends it (`baton_web::history::Cost`).
 * @typedef {{key: string, usd: number, tokens: number, count: number, unpriced: number}} Sum
 * @typedef {{total_usd: number, dispatches: number, sums: Sum[], problems: string[]}} Cost
 */

/**
 * A finding of a workflow's decision, as its log keeps it (`baton_workflow::event::LoggedFinding`,
 * not derived: written here by hand).
 * @typedef {{severity: string, location?: string | null, text: string, raised_by?: string[], cross_confirmed?: boolean}} Finding
 */

/**
 * A dispatch's answer and its contract as `/api/workflows/{id}/dispatches/{task}` sends them
 * (`baton_app::task_log::Dispatch`, not derived: written here by hand).
 * @typedef {object} Answer
 * @property {string} task
 * @property {string} role
 * @property {string} text
 * @property {string | null} error
 * @property {{verdict: string, advances: boolean, source: string, scenarios: {name: string, status: string | null}[], notes: string[]} | null} contract
 * @property {string | null} problem
 */

/**
 * A list row's button that opens something: what it opens is `go`, set each time the row is filled.
 * @typedef {HTMLButtonElement & {go: () => void}} Opener
 */

const csrf = /** @type {HTMLMetaElement} */ (document.querySelector('meta[name="baton-csrf"]')).content;
const model = new Model();
// An element of the page by its id (index.html, served with this module, has every one asked for).
const $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));

// ---- tabs and the address ----------------------------------------------------------------
// Every view has an address that survives a reload and can be pasted to a teammate:
// `#/workflows`, `#/flows`, …, and `#/workflows/ID`, `#/flows/ID`, `#/sessions/ID` (its
// transcript), `#/tasks/ID` (its log). The address is the one source of what is shown: a click
// sets it, and `route` shows what it says.
const TABS = ['workflows', 'flows', 'tasks', 'sessions', 'workers', 'events', 'cost'];
/** @type {string | undefined} */
let tab = 'workflows';
/** @param {string} t */
function selectTab(t) {
  if (tab === t) return;
  tab = t;
  for (const o of document.querySelectorAll('#tabs button')) o.setAttribute('aria-pressed', String(/** @type {HTMLElement} */ (o).dataset.tab === t));
  for (const s of /** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll('section.tab'))) s.hidden = s.id !== `tab-${t}`;
  dirtyAll = true;
  schedule();
}
/** @param {string} view @param {string} [id] */
function go(view, id) {
  const to = `#/${view}${id ? `/${encodeURIComponent(id)}` : ''}`;
  if (location.hash === to) route();
  else location.hash = to;
}
// What the address says: its tab, and the workflow, Flow, transcript or log it opens.
function route() {
  const [view = '', ...rest] = location.hash.replace(/^#\/?/, '').split('/');
  const t = TABS.includes(view) ? view : 'workflows';
  const id = rest.length ? decodeURIComponent(rest.join('/')) : '';
  selectTab(t);
  // What the address does not name is closed (the back button closes what it opened).
  if (wfOpen && !(t === 'workflows' && id === wfOpen)) { wfOpen = null; wfView = null; renderWorkflow(); }
  if (flowOpen && !(t === 'flows' && id === flowOpen)) { flowOpen = null; renderFlow(); }
  if (!((t === 'sessions' || t === 'tasks') && id)) $('viewer').hidden = true;
  if (t === 'workflows' && id && id !== wfOpen) showWorkflow(id);
  else if (t === 'flows' && id && id !== flowOpen) showFlow(id);
  else if (t === 'sessions' && id) showTranscript(id);
  else if (t === 'tasks' && id) showLog(id);
}
for (const b of /** @type {NodeListOf<HTMLButtonElement>} */ (document.querySelectorAll('#tabs button'))) {
  b.addEventListener('click', () => go(/** @type {string} */ (b.dataset.tab)));
}
window.addEventListener('hashchange', route);

/** @param {number | undefined} t */
function age(t) {
  if (t === undefined || !Number.isFinite(t)) return '';
  const s = Math.max(0, (Date.now() - t) / 1000);
  return s < 60 ? `${Math.round(s)}s` : s < 3600 ? `${Math.round(s / 60)}m` : s < 86400 ? `${Math.round(s / 3600)}h` : `${Math.round(s / 86400)}d`;
}

/** When something began, in the viewer's local time (the date too when not today). @param {number | undefined} t */
function started(t) {
  if (t === undefined || !Number.isFinite(t)) return '';
  const d = new Date(t);
  const time = d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  return d.toDateString() === new Date().toDateString() ? time : `${d.toLocaleDateString()} ${time}`;
}

/** @param {HTMLTableRowElement} tr @param {(string | number | null | undefined)[]} texts */
function cells(tr, texts) {
  for (const text of texts) tr.append(el('td', { text: text === undefined || text === null ? '' : String(text) }));
  return tr;
}

/** @param {string} label @param {string} text @param {() => void} go */
function opener(label, text, go) {
  return el('button', { type: 'button', class: 'link', 'aria-label': label, text, onclick: go });
}

// Filling a list row in place (see vlist.js): `put` writes texts into the cells of `tr` from
// column `from` on, `link` makes column `k` a button that opens something (or plain text when
// `go` is null). Both make the cell the first time and only change what differs after.
/** @param {HTMLTableRowElement} tr @param {number} from @param {(string | number | null | undefined)[]} texts */
function put(tr, from, texts) {
  for (let k = 0; k < texts.length; k++) {
    const v = texts[k] === undefined || texts[k] === null ? '' : String(texts[k]);
    const td = cell(tr, from + k);
    const first = /** @type {Text} */ (td.firstChild); // a text node where the test says so
    if (td.childNodes.length !== 1 || first.nodeType !== Node.TEXT_NODE) td.replaceChildren(v);
    else if (first.data !== v) first.data = v;
  }
  return tr;
}

/**
 * @param {HTMLTableRowElement} tr @param {number} k @param {string} label @param {string} text
 * @param {(() => void) | null} go
 */
function link(tr, k, label, text, go) {
  if (!go) return put(tr, k, [text]);
  const td = cell(tr, k);
  let b = /** @type {Opener | null} */ (td.firstChild); // an Opener where the test says so
  if (!b || b.nodeName !== 'BUTTON' || td.childNodes.length !== 1) {
    b = /** @type {Opener} */ (el('button', { type: 'button', class: 'link', onclick: () => /** @type {Opener} */ (b).go() }));
    td.replaceChildren(b);
  }
  b.go = go;
  if (b.getAttribute('aria-label') !== label) b.setAttribute('aria-label', label);
  if (b.textContent !== text) b.textContent = text;
  return tr;
}

/** @param {HTMLTableRowElement} tr @param {number} k */
function cell(tr, k) {
  while (tr.children.length <= k) tr.append(el('td'));
  return /** @type {HTMLTableCellElement} */ (tr.children[k]);
}

/** @param {Element} node @param {string} name @param {string | number | undefined} value */
function mark(node, name, value) {
  const v = String(value);
  if (node.getAttribute(name) !== v) node.setAttribute(name, v);
}

// ---- the lists ----------------------------------------------------------------------------
// The scrolling box around the list whose <table> is `sel`.
const boxOf = (/** @type {string} */ sel) => /** @type {HTMLElement} */ (/** @type {Element} */ (document.querySelector(sel)).parentElement);
/** @type {VList<Row>} */
const workflows = new VList(boxOf('#workflows'), (r, i, tr = el('tr')) => {
  mark(tr, 'data-id', r.id);
  link(tr, 0, `open workflow ${r.id}`, r.id, () => openWorkflow(r.id));
  put(tr, 1, [r.type || '', r.state, r.request || '', r.phase || '', r.waits || '', r.tokens || '', money(r.cost), age(r.first), r.last]);
  tr.children[2].className = r.state || '';
  mark(tr.children[3], 'title', r.request || '');
  return tr;
});
/** @type {VList<Row>} */
const flows = new VList(boxOf('#flows'), (r, i, tr = el('tr')) => {
  mark(tr, 'data-id', r.id);
  link(tr, 0, `open flow ${r.id}`, r.id, () => openFlow(r.id));
  const units = [...(r.units || /** @type {Map<string, Unit>} */ (new Map())).values()];
  put(tr, 1, [r.state, `${units.filter((u) => u.steps[4] === 'done').length}/${units.length}`, r.last, r.at || '']);
  tr.children[1].className = r.state || '';
  return tr;
});
/** @type {VList<Row>} */
const tasks = new VList(boxOf('#tasks'), (r, i, tr = el('tr')) => {
  mark(tr, 'data-id', r.id);
  link(tr, 0, `open task ${r.id} log`, r.id, () => openLog(r.id));
  put(tr, 1, [r.state, r.what || '', r.tokens || '', money(r.cost), r.last]);
  tr.children[1].className = r.state || '';
  const act = cell(tr, 6);
  const label = `cancel task ${r.id}`;
  if (r.state !== 'running') act.replaceChildren();
  else if (!act.firstChild || /** @type {Element} */ (act.firstChild).getAttribute('aria-label') !== label) {
    act.replaceChildren(el('button', { type: 'button', text: 'cancel', 'aria-label': label, onclick: () => post(`/api/tasks/${encodeURIComponent(r.id)}/cancel`, '', `Cancel task ${r.id}?`) }));
  }
  return tr;
});
/** @type {VList<Row>} */
const sessions = new VList(boxOf('#sessions'), (r, i, tr = el('tr')) => {
  mark(tr, 'data-id', r.id);
  link(tr, 0, `open session ${r.id} transcript`, r.id, () => openTranscript(r.id));
  put(tr, 1, [r.state, r.what || '', r.role || '', r.model || '', r.routed ? 'two lanes' : '', started(r.first), r.last]);
  mark(tr.children[2], 'title', r.what || '');
  tr.children[1].className = r.state || '';
  return tr;
});
/** @type {VList<Row>} */
const workersList = new VList(boxOf('#workers'), (r, i, tr = el('tr')) => {
  mark(tr, 'data-id', r.id);
  link(tr, 0, `open worker ${r.id} transcript`, r.id, r.session ? () => openTranscript(/** @type {string} */ (r.session)) : null);
  put(tr, 1, [r.state, r.role || '', r.model || '', r.turns || 0, r.tokens || '', money(r.cost), r.doing || '', r.answer || '']);
  tr.children[1].className = r.state || '';
  return tr;
});
/** @type {VList<Line>} */
const events = new VList(boxOf('#events'), (x, i, tr = el('tr')) => {
  const t = ms(x.ts);
  return put(tr, 0, [Number.isFinite(t) ? new Date(t).toISOString() : '', x.kind, x.id, x.name, x.text]);
});

// ---- asking the server --------------------------------------------------------------------
// What the page asks of the server (a page of events, the cost's sums, a workflow's events) is
// counted while it is on its way (`data-pending` on <body>: a test waits for 0).
let pending = 0;
/** @param {string} url @returns {Promise<Response>} */
async function ask(url) {
  pending += 1;
  document.body.dataset.pending = String(pending);
  try {
    return await fetch(url);
  } finally {
    pending -= 1;
    document.body.dataset.pending = String(pending);
  }
}

// ---- the Events list, a page at a time ----------------------------------------------------
// The history is the server's (`/api/timeline`): the list knows how many lines it has and asks
// for the page of lines it scrolled to, newest first. Unfiltered, a line is kept by its place in
// the history (`i`, which never changes: the history only grows), so more lines only lengthen
// the list. Filtered by the server, the list pages through the matches among the first `upto`
// lines (the count the live feed gave), and a new count starts it again.
const PAGE = 200;
/** @type {Line} */
const WAITING = { i: -1, ts: null, kind: '', id: '', name: '…', text: '', seq: null };
/** @type {Map<number, Line>} unfiltered lines, by their place in the history */
const lines = new Map();
/** @type {{key: string, upto: number, matched: number, pages: Map<number, Line[]>, asked: Set<string>}} */
const pager = { key: '', upto: -1, matched: 0, pages: new Map(), asked: new Set() };
/** @returns {import('./vlist.js').Items<Line>} */
function eventItems() {
  const kind = /** @type {HTMLSelectElement} */ ($('ev-kind')).value;
  const text = /** @type {HTMLInputElement} */ ($('ev-text')).value.trim().toLowerCase();
  const key = `${kind}\n${text}`;
  const filtered = Boolean(kind || text);
  if (!filtered) {
    if (key !== pager.key) Object.assign(pager, { key, pages: new Map(), asked: new Set() });
    pager.upto = model.count;
    pager.matched = model.count;
  } else if (key !== pager.key || pager.upto !== model.count) {
    // Another filter counts again (0 until the server says); more lines keep the last count.
    const matched = key === pager.key ? pager.matched : 0;
    Object.assign(pager, { key, upto: model.count, matched, pages: new Map(), asked: new Set() });
    askPage(0);
  }
  $('ev-count').textContent = `${pager.matched} events`;
  return { length: pager.matched, at: line };
}
/** @param {number} k the list's row, 0 the newest */
function line(k) {
  if (pager.key === '\n') {
    // Unfiltered: the line at its place in the history, asked for by the page of places.
    const at = pager.upto - 1 - k;
    const got = lines.get(at);
    if (got) return got;
    askPlaces(Math.floor(at / PAGE));
    return WAITING;
  }
  const p = Math.floor(k / PAGE);
  const page = pager.pages.get(p);
  if (page) return page[k - p * PAGE] || WAITING;
  askPage(p);
  return WAITING;
}
/** The lines at places `p * PAGE` to `p * PAGE + PAGE - 1` of the history (the newest page as
 * far as the count goes: asked again as it grows). @param {number} p */
async function askPlaces(p) {
  const upto = Math.min(pager.upto, (p + 1) * PAGE);
  const key = `places ${p} ${upto}`;
  if (pager.asked.has(key)) return;
  pager.asked.add(key);
  const q = new URLSearchParams({ skip: '0', limit: String(PAGE), upto: String(upto) });
  try {
    const res = await ask(`/api/timeline?${q}`);
    if (!res.ok) throw new Error(await res.text());
    /** @type {{items: Line[], problems: string[]}} */
    const body = await res.json();
    for (const item of body.items) lines.set(item.i, item);
    if (body.problems.length) live.textContent = `error: ${body.problems.join('; ')}`;
    events.refresh();
  } catch (e) {
    pager.asked.delete(key); // asked again when it is shown again
    live.textContent = `error: ${e}`;
  }
}
/** A page of the filtered list. @param {number} p */
async function askPage(p) {
  const tag = `page ${p}`;
  if (pager.asked.has(tag)) return;
  pager.asked.add(tag);
  const { key, upto } = pager;
  const [kind, text] = key.split('\n');
  const q = new URLSearchParams({ skip: String(p * PAGE), limit: String(PAGE), upto: String(upto), kind, text });
  try {
    const res = await ask(`/api/timeline?${q}`);
    if (pager.key !== key || pager.upto !== upto) return; // the list started again meanwhile
    if (!res.ok) throw new Error(await res.text());
    /** @type {{matched: number, items: Line[], problems: string[]}} */
    const body = await res.json();
    pager.pages.set(p, body.items);
    if (body.problems.length) live.textContent = `error: ${body.problems.join('; ')}`;
    if (body.matched !== pager.matched) {
      pager.matched = body.matched;
      $('ev-count').textContent = `${pager.matched} events`;
      events.set({ length: pager.matched, at: line });
    } else events.refresh();
  } catch (e) {
    if (pager.key === key && pager.upto === upto) pager.asked.delete(tag);
    live.textContent = `error: ${e}`;
  }
}

function workflowItems() {
  const type = /** @type {HTMLSelectElement} */ ($('wf-type')).value;
  const state = /** @type {HTMLSelectElement} */ ($('wf-state')).value;
  const text = /** @type {HTMLInputElement} */ ($('wf-text')).value.trim().toLowerCase();
  const rows = model.list('workflow').filter((r) => (!type || r.type === type) && (!state || r.state === state)
    && (!text || `${r.id} ${r.request || ''} ${r.phase || ''} ${r.waits || ''} ${r.last}`.toLowerCase().includes(text)));
  $('wf-count').textContent = `${rows.length} shown`;
  return rows;
}

/** @type {Set<string>} */
const types = new Set();
for (const id of ['wf-type', 'wf-state', 'wf-text', 'ev-kind', 'ev-text', 'cost-by']) {
  $(id).addEventListener('input', () => { dirtyAll = true; schedule(); });
}

// ---- Needs you ----------------------------------------------------------------------------
const MOST_NEEDS = 50;
function renderNeeds() {
  const box = $('needs');
  const waiting = model.needs();
  if (waiting.length === 0) {
    box.replaceChildren(el('p', { class: 'empty', text: 'Nothing waits for you.' }));
    return;
  }
  /** @type {HTMLElement[]} */
  const cards = waiting.slice(0, MOST_NEEDS).map(needCard);
  if (waiting.length > MOST_NEEDS) cards.push(el('p', { class: 'empty', text: `and ${waiting.length - MOST_NEEDS} more (the lists have them all)` }));
  box.replaceChildren(...cards);
}

/** @param {Row} r */
function needCard(r) {
  const card = el('form', { class: 'need', 'aria-label': `${r.kind} ${r.id}` }, el('h3', { text: `${r.kind} ${r.id}` }));
  if (r.kind === 'workflow' && r.checkpoint) {
    const c = r.checkpoint;
    card.append(el('p', { text: `${c.gate}: ${c.question}` }));
    if (c.gate === 'finish') {
      // The change a merge would land, beside the choice.
      const slot = el('div', { class: 'need-change' });
      card.append(el('button', { type: 'button', text: 'show the change it would merge', onclick: () => loadChange(`/api/workflows/${encodeURIComponent(r.id)}/change`, slot) }), slot);
    }
    for (const option of c.options) {
      card.append(el('button', { type: 'button', text: option, class: option === c.recommended ? 'recommended' : undefined, onclick: () => post(`/api/workflows/${encodeURIComponent(r.id)}/answer`, option, `Answer “${option}”?`) }));
    }
    const input = el('input', { name: 'answer' });
    card.append(el('label', { text: 'or your own words ' }, input), el('button', { type: 'submit', text: 'answer' }));
    card.addEventListener('submit', (ev) => {
      ev.preventDefault();
      if (input.value.trim()) post(`/api/workflows/${encodeURIComponent(r.id)}/answer`, input.value, `Answer “${input.value}”?`);
    });
  } else if (r.kind === 'workflow' && r.runState === 'failed') {
    // Failed: its failed agents run again with the user's guidance, or `abort` ends it.
    const url = `/api/workflows/${encodeURIComponent(r.id)}/answer`;
    card.append(el('p', { class: 'failed', text: `failed: ${r.reason || r.last}` }));
    const input = el('input', { name: 'guidance' });
    card.append(el('label', { text: 'guidance ' }, input), el('button', { type: 'submit', text: 'retry with guidance' }),
      el('button', { type: 'button', text: 'abort', onclick: () => post(url, 'abort', `Abort workflow ${r.id}?`) }),
      opener(`view of workflow ${r.id}`, 'its view', () => openWorkflow(r.id)));
    card.addEventListener('submit', (ev) => {
      ev.preventDefault();
      if (input.value.trim()) post(url, input.value, `Run workflow ${r.id}'s failed agents again with this guidance?`);
    });
  } else if (r.kind === 'flow') {
    card.append(el('p', { text: r.reason || r.last }));
    const input = el('input', { name: 'guidance' });
    card.append(el('label', { text: 'guidance ' }, input), el('button', { type: 'submit', text: 'continue' }),
      el('button', { type: 'button', text: 'abandon', onclick: () => post(`/api/flows/${encodeURIComponent(r.id)}/abandon`, '', `Abandon flow ${r.id}?`) }));
    card.addEventListener('submit', (ev) => {
      ev.preventDefault();
      if (input.value.trim()) post(`/api/flows/${encodeURIComponent(r.id)}/continue`, input.value, `Continue flow ${r.id} with this guidance?`);
    });
  } else if (r.kind === 'task') {
    card.append(el('p', { text: `failed: ${r.reason || r.last}` }), opener(`open task ${r.id} log`, 'its log', () => openLog(r.id)));
  } else {
    card.append(el('p', { text: r.reason || r.last }));
  }
  return card;
}

// ---- one workflow -------------------------------------------------------------------------
/** @type {string | null} */
let wfOpen = null;
/** @type {VList<Dispatch>} */
const dispatches = new VList($('dispatches-box'), (n, i, tr = el('tr')) => {
  mark(tr, 'data-task', n.task);
  link(tr, 0, `dispatch ${n.key}`, n.key, () => showDispatch(n));
  const run = n.end !== undefined ? n.end - n.start : Date.now() - n.start;
  const queue = Math.max(0, n.start - n.ready);
  put(tr, 1, [n.agent, n.phase, n.verdict || '', n.route || '', n.tokens || '', money(n.cost), secs(queue), n.end !== undefined ? secs(run) : 'running']);
  const s = scale;
  const lane = cell(tr, 9);
  if (!lane.firstChild) {
    lane.className = 'lane';
    lane.append(el('div', { class: 'track' }, el('div', { class: 'bar queue', role: 'img' }), el('div', { role: 'img' })));
  }
  const track = /** @type {HTMLDivElement} */ (lane.firstChild);
  const [q, b] = /** @type {HTMLCollectionOf<HTMLDivElement>} */ (track.children);
  mark(q, 'aria-label', `queued ${secs(queue)}`);
  q.style.marginLeft = `${((n.ready - s.t0) / s.span) * 100}%`;
  q.style.width = `${(queue / s.span) * 100}%`;
  const failed = failedVerdict(n.verdict) || n.error;
  b.className = `bar run ${failed ? 'failed' : n.end !== undefined ? 'done' : 'running'}`;
  // A failed dispatch's verdict is drawn as failed, with the reason in words beside it.
  const v = cell(tr, 3);
  v.className = failed ? 'failed' : '';
  if (n.reason) v.textContent = `${n.verdict}: ${n.reason}`;
  mark(b, 'aria-label', `${n.agent} from ${secs(n.start - s.t0)} for ${secs(run)}`);
  b.style.width = `${Math.max((run / s.span) * 100, 0.5)}%`;
  return tr;
});
let scale = { t0: 0, span: 1 };

/**
 * The open workflow's own events, folded by a model of their own: its dispatches, graph, findings
 * and marks. Live events of that log wait in `held` while it is read.
 * @type {{id: string, model: Model, loading: boolean, held: import('./model.js').FeedEvent[], problems: string[]} | null}
 */
let wfView = null;

/** @param {string} id */
async function loadWorkflowEvents(id) {
  const view = { id, model: new Model(), loading: true, held: /** @type {import('./model.js').FeedEvent[]} */ ([]), problems: /** @type {string[]} */ ([]) };
  wfView = view;
  try {
    const res = await ask(`/api/workflows/${encodeURIComponent(id)}/events`);
    if (wfView !== view) return; // another was opened meanwhile
    if (res.ok) {
      /** @type {{events: import('./model.js').FeedEvent[], problems: string[]}} */
      const body = await res.json();
      view.model.add(body.events);
      view.problems = body.problems;
    } else view.problems = [await res.text()];
  } catch (e) {
    if (wfView !== view) return;
    view.problems = [`its events could not be read: ${e}`];
  }
  view.model.add(view.held);
  view.held = [];
  view.loading = false;
  renderWorkflow(true);
}

/** @param {string} id */
function openWorkflow(id) { go('workflows', id); }
/** @param {string} id */
function showWorkflow(id) {
  wfOpen = id;
  $('dispatch-detail').replaceChildren();
  $('wf-change').replaceChildren();
  loadWorkflowEvents(id);
  renderWorkflow(true);
  const r = model.rows.get(`workflow/${id}`);
  if (r) /** @type {HTMLInputElement} */ ($('artifact-seq')).value = String(r.events);
  loadArtifact();
  $('detail').scrollIntoView({ block: 'start' });
}

/** @param {boolean} [changed] */
function renderWorkflow(changed) {
  const section = $('detail');
  const r = wfOpen && model.rows.get(`workflow/${wfOpen}`);
  if (!r) { section.hidden = true; return; }
  section.hidden = false;
  $('h-detail').textContent = `Workflow ${r.id}`;
  // Where it stands is the row's (its document); what happened, its own events' (`wfView`).
  const v = wfView && wfView.id === r.id ? wfView : null;
  const own = (v && v.model.rows.get(`workflow/${r.id}`)) || /** @type {Row} */ ({ kind: 'workflow', id: r.id, state: r.state, events: 0, first: undefined, tokens: 0, cost: 0 });
  const nodes = [...(own.nodes || /** @type {Map<string, Dispatch>} */ (new Map())).values()];
  const budget = r.budgetUsd ? ` of $${r.budgetUsd}` : '';
  const reading = !v || v.loading ? ' · reading its events…' : v.problems.length ? ` · not all read: ${v.problems.join('; ')}` : '';
  $('detail-summary').textContent = `${r.type || ''} · ${r.state} · ${nodes.length} dispatches · ${money(r.cost) || '$0'}${budget} · ${r.tokens} tokens${r.waits ? ` · waits for ${r.waits}` : ''}${reading}`;
  if (!changed) return;
  $('graph').replaceChildren(graphPicture(own, (task) => { const n = nodes.find((x) => x.task === task); if (n) showDispatch(n); }));
  const t0 = Math.min(...nodes.map((n) => Math.min(n.ready, n.start)));
  const t1 = Math.max(...nodes.map((n) => (n.end !== undefined ? n.end : Date.now())));
  scale = { t0, span: Math.max(t1 - t0, 1) };
  dispatches.set(nodes);
  const findings = /** @type {Finding[]} */ (own.findings || []);
  $('findings').replaceChildren(...(findings.length ? findings.map((f) => el('p', { class: `finding ${f.severity}`, text: `${f.severity}${f.cross_confirmed ? ' (both)' : ''} ${f.location || ''} — ${f.text} [${(f.raised_by || []).join(', ')}]` })) : [el('p', { class: 'empty', text: 'No findings.' })]));
  const marks = $('artifact-marks');
  marks.replaceChildren(...(own.marks || []).slice(-12).map((m) => el('button', { type: 'button', class: 'link', text: `${m.seq}: ${m.what}`, onclick: () => { /** @type {HTMLInputElement} */ ($('artifact-seq')).value = String(m.seq); loadArtifact(); } })));
}

// The artifact at the event asked for: time travel through the record.
async function loadArtifact() {
  if (!wfOpen) return;
  const seq = /** @type {HTMLInputElement} */ ($('artifact-seq')).value;
  const res = await fetch(`/api/workflows/${encodeURIComponent(wfOpen)}/artifact${seq ? `?seq=${encodeURIComponent(seq)}` : ''}`);
  if (!res.ok) { $('artifact').textContent = await res.text(); return; }
  /** @type {{seq: number, events: number, artifact: unknown}} */
  const body = await res.json();
  /** @type {HTMLInputElement} */ ($('artifact-seq')).max = String(body.events);
  $('artifact').textContent = JSON.stringify(body.artifact, null, 2);
}
$('artifact-go').addEventListener('click', loadArtifact);

// What a piece of work changed, as a diff read from the repository when asked (`url`), into `slot`.
/** @param {string} url @param {HTMLElement} slot */
async function loadChange(url, slot) {
  const res = await fetch(url);
  slot.replaceChildren(res.ok ? diffView(await res.text()) : el('p', { class: 'empty', text: await res.text() }));
}
$('wf-change-show').addEventListener('click', () => {
  if (wfOpen) loadChange(`/api/workflows/${encodeURIComponent(wfOpen)}/change`, $('wf-change'));
});

// A dispatch's answer and its contract, as the server's parser read it (the runner's own).
/** @param {Dispatch} n */
async function showDispatch(n) {
  const res = await fetch(`/api/workflows/${encodeURIComponent(/** @type {string} */ (wfOpen))}/dispatches/${encodeURIComponent(n.task)}`);
  /** @type {Answer | null} */
  const d = res.ok ? await res.json() : null;
  const box = $('dispatch-detail');
  /** @type {HTMLElement[]} */
  const parts = [el('h4', { text: `${n.key}: ${n.agent} (${n.phase})` })];
  const c = d && d.contract;
  if (c) parts.push(el('p', { text: `contract: ${c.verdict} (${c.source})${c.advances ? '' : ', does not advance'}` }));
  if (c && c.scenarios.length) parts.push(el('ul', { class: 'scenarios', 'aria-label': 'scenarios' }, ...c.scenarios.map((s) => el('li', { class: s.status === 'PASS' ? 'done' : 'failed', text: `${s.status || '?'} ${s.name}` }))));
  if (d && d.problem) parts.push(el('p', { class: 'failed', text: d.problem }));
  parts.push(el('pre', { class: 'contract', tabindex: '0', 'aria-label': 'contract', text: (d && (d.text || d.error)) || (res.ok ? 'no answer recorded' : await res.text()) }));
  if (n.session) parts.push(opener(`open session ${n.session} transcript`, `its transcript (${n.session})`, () => openTranscript(/** @type {string} */ (n.session))));
  if (n.change) {
    // What this dispatch changed: the tree before and after it, read from the repository.
    const slot = el('div', { id: 'dispatch-change' });
    const url = `/api/workflows/${encodeURIComponent(/** @type {string} */ (wfOpen))}/dispatches/${encodeURIComponent(n.task)}/change?attempt=${n.attempt}`;
    parts.push(el('button', { type: 'button', text: 'show what this dispatch changed', onclick: () => loadChange(url, slot) }), slot);
  }
  box.replaceChildren(...parts);
}
$('detail-close').addEventListener('click', () => go('workflows'));

// ---- one Flow -----------------------------------------------------------------------------
/** @type {string | null} */
let flowOpen = null;
/** @type {Record<Step, string>} */
const GLYPH = { pending: '·', running: '◐', done: '✓', failed: '✗', skipped: '–' };
/** @param {string} id */
function openFlow(id) { go('flows', id); }
/** @param {string} id */
function showFlow(id) { flowOpen = id; $('unit-detail').replaceChildren(); renderFlow(); $('flow-detail').scrollIntoView({ block: 'start' }); }
function renderFlow() {
  const section = $('flow-detail');
  const r = flowOpen && model.rows.get(`flow/${flowOpen}`);
  if (!r) { section.hidden = true; return; }
  section.hidden = false;
  $('h-flow').textContent = `Flow ${r.id}`;
  const units = [...(r.units || /** @type {Map<string, Unit>} */ (new Map())).values()];
  const merged = units.filter((u) => u.steps[4] === 'done').length;
  $('flow-summary').textContent = `${r.state} · ${merged}/${units.length} merged · last: ${r.last}`;
  /** @type {HTMLTableSectionElement} */ (document.querySelector('#units tbody')).replaceChildren(...units.map((u) => {
    const tr = el('tr', { 'data-unit': u.id }, el('th', { scope: 'row', text: u.id }));
    u.steps.forEach((st, k) => {
      tr.append(el('td', { text: GLYPH[st], class: ['done', 'failed', 'running'].includes(st) ? st : undefined, 'aria-label': `${STEPS[k]}: ${st}` }));
    });
    tr.append(el('td', { text: u.base && u.tip ? `${u.base.slice(0, 8)}..${u.tip.slice(0, 8)}` : '' }));
    tr.append(el('td', {}, el('button', { type: 'button', text: 'details', 'aria-label': `unit ${u.id} details`, onclick: () => showUnit(r.id, u) })));
    return tr;
  }));
  const notes = units.filter((u) => u.note || (u.review && u.steps[3] === 'failed')).map((u) => el('p', { text: `${u.id}: ${u.note || ''}${u.review && u.steps[3] === 'failed' ? ` — review: ${u.review}` : ''}` }));
  if (r.state === 'needs') {
    notes.push(el('p', { class: 'hint', text: `To go on: baton flow continue ${r.id} --guidance "…" (one repair of the blocked unit), or baton flow abandon ${r.id} (worktrees kept), then baton flow clean ${r.id}.` }));
  }
  $('flow-notes').replaceChildren(...notes);
}

/** @param {string} flow @param {Unit} u */
function showUnit(flow, u) {
  /** @type {HTMLElement[]} */
  const parts = [el('h3', { text: `unit ${u.id}${u.name ? `: ${u.name}` : ''}` })];
  if (u.implementer) parts.push(el('h4', { text: 'implementer' }), el('pre', { text: u.implementer }));
  parts.push(el('h4', { text: 'validation' }));
  if (!u.validation.length) parts.push(el('p', { class: 'empty', text: 'not validated yet' }));
  for (const v of u.validation) parts.push(el('p', { class: v.ok ? 'done' : 'failed', text: `${v.ok ? '✓' : '✗'} ${v.command}` }), el('pre', { class: 'output', text: v.output || '(no output)' }));
  if (u.review) parts.push(el('h4', { text: 'review' }), el('pre', { text: u.review }));
  if (u.base && u.tip) {
    // What the unit changed: its base..tip as a diff, read from the repository when asked.
    const slot = el('div', { id: 'unit-change' });
    parts.push(el('h4', { text: 'change' }), el('button', {
      type: 'button', text: 'show what it changed', onclick: async () => {
        const res = await fetch(`/api/flows/${encodeURIComponent(flow)}/units/${encodeURIComponent(u.id)}/change`);
        slot.replaceChildren(res.ok ? diffView(await res.text()) : el('p', { text: await res.text() }));
      },
    }), slot);
  }
  if (u.packet) {
    const slot = el('div', { id: 'packet' });
    parts.push(el('h4', { text: 'review packet' }), el('button', {
      type: 'button', text: 'show the exact packet', onclick: async () => {
        const res = await fetch(`/api/flows/${encodeURIComponent(flow)}/units/${encodeURIComponent(u.id)}/packet`);
        slot.replaceChildren(res.ok ? diffView(await res.text()) : el('p', { text: await res.text() }));
      },
    }), slot);
  }
  $('unit-detail').replaceChildren(...parts);
}
$('flow-close').addEventListener('click', () => go('flows'));

// ---- a task's log, a session's transcript -------------------------------------------------
/** @param {string} id */
function openLog(id) { go('tasks', id); }
/** @param {string} id */
async function showLog(id) {
  const res = await fetch(`/api/tasks/${encodeURIComponent(id)}/log`);
  show(`task ${id}: log`, res.ok ? el('pre', { tabindex: '0', text: (await res.json()).join('\n') }) : el('p', { text: await res.text() }));
}
/** @param {string} id */
function openTranscript(id) { go('sessions', id); }
/** @param {string} id */
async function showTranscript(id) {
  const res = await fetch(`/api/sessions/${encodeURIComponent(id)}/transcript`);
  const slot = el('div', { id: 'session-change' });
  const changes = el('button', { type: 'button', text: 'show what the session changed', onclick: () => loadChange(`/api/sessions/${encodeURIComponent(id)}/change`, slot) });
  show(`session ${id}: transcript`, el('div', {}, changes, slot, res.ok ? transcriptView(await res.json()) : el('p', { text: await res.text() })));
}
/** @param {string} title @param {HTMLElement} body */
function show(title, body) {
  $('h-viewer').textContent = title;
  $('viewer-body').replaceChildren(body);
  $('viewer').hidden = false;
  $('viewer').scrollIntoView({ block: 'start' });
}
$('viewer-close').addEventListener('click', () => go(tab || 'workflows'));

// ---- cost ---------------------------------------------------------------------------------
// The sums are the server's (`/api/cost`), asked for again as spending goes on: one request at a
// time, and one more after it when something changed meanwhile.
let costAsking = false;
let costAgain = false;
async function renderCost() {
  if (costAsking) { costAgain = true; return; }
  costAsking = true;
  try {
    // The select's options are the keys the server sums by.
    const by = /** @type {HTMLSelectElement} */ ($('cost-by')).value;
    const res = await ask(`/api/cost?by=${encodeURIComponent(by)}&upto=${model.count}`);
    if (!res.ok) { $('cost-total').textContent = await res.text(); return; }
    /** @type {Cost} */
    const c = await res.json();
    const budgetOf = by === 'workflow' ? (/** @type {string} */ k) => { const r = model.rows.get(`workflow/${k}`); return r && r.budgetUsd; } : null;
    const problems = c.problems.length ? ` (not counted: ${c.problems.join('; ')})` : '';
    $('cost-total').textContent = `total ${money(c.total_usd) || '$0'} over ${c.dispatches} dispatches${problems}`;
    $('cost-key').textContent = by;
    $('cost-chart').replaceChildren(costChart(c.sums, by, budgetOf));
    /** @type {HTMLTableSectionElement} */ (document.querySelector('#cost tbody')).replaceChildren(...c.sums.slice(0, 200).map((s) => {
      const budget = budgetOf && budgetOf(s.key);
      return cells(el('tr'), [s.key, money(s.usd) || '$0', s.tokens, s.count, s.unpriced || '', budget ? `$${budget} (${Math.round((100 * s.usd) / budget)}%)` : '']);
    }));
  } finally {
    costAsking = false;
    if (costAgain) { costAgain = false; renderCost(); }
  }
}

// ---- actions ------------------------------------------------------------------------------
/** @param {string} url @param {string} body @param {string} question */
async function post(url, body, question) {
  if (!confirm(question)) return;
  const res = await fetch(url, { method: 'POST', headers: { 'X-Baton-CSRF': csrf, 'Content-Type': 'text/plain' }, body });
  if (!res.ok) alert(await res.text());
}

// ---- drawing, once per frame --------------------------------------------------------------
let queued = false;
let dirtyAll = true;
function schedule() {
  if (queued) return;
  queued = true;
  requestAnimationFrame(draw);
}

function draw() {
  queued = false;
  const changed = model.take();
  const all = dirtyAll;
  dirtyAll = false;
  const touches = (/** @type {string} */ kind) => all || [...changed].some((k) => k.startsWith(`${kind}/`));
  if (all || changed.size) renderNeeds();
  for (const r of model.rows.values()) if (r.type && !types.has(r.type)) { types.add(r.type); $('wf-type').append(el('option', { text: r.type })); }
  if (tab === 'workflows' && touches('workflow')) workflows.set(workflowItems());
  if (tab === 'flows' && touches('flow')) flows.set(model.list('flow'));
  if (tab === 'tasks' && touches('task')) tasks.set(model.list('task'));
  if (tab === 'sessions' && touches('session')) sessions.set(model.list('session'));
  if (tab === 'workers' && touches('worker')) workersList.set(model.list('worker'));
  if (tab === 'events' && (all || changed.size)) events.set(eventItems());
  if (tab === 'cost' && (all || changed.size)) renderCost();
  if (wfOpen) renderWorkflow(all || changed.has(`workflow/${wfOpen}`));
  if (flowOpen && (all || changed.has(`flow/${flowOpen}`))) renderFlow();
  live.textContent = `live · ${model.count} events`;
  document.body.dataset.events = String(model.count);
  document.body.dataset.duplicates = String(model.duplicates);
}

// ---- the feed -----------------------------------------------------------------------------
const live = $('live');
// The first message says where each log stands and how many events the history holds (the
// history itself is asked for a page at a time); the events after it come one batch a message.
const source = new EventSource('/api/events?overview=1');
source.onopen = () => { live.textContent = `live · ${model.count} events`; };
source.onerror = () => { live.textContent = 'reconnecting…'; };
source.addEventListener('overview', (m) => {
  model.overview(JSON.parse(m.data));
  dirtyAll = true;
  schedule();
});
source.onmessage = (m) => {
  /** @type {import('./model.js').FeedEvent[]} */
  const batch = JSON.parse(m.data);
  model.add(batch);
  // The open workflow's view folds its own log's events (held back while that log is read).
  const mine = wfOpen ? batch.filter((e) => e.source.kind === 'workflow' && e.source.id === wfOpen) : [];
  if (mine.length && wfView) {
    if (wfView.loading) wfView.held.push(...mine);
    else wfView.model.add(mine);
  }
  schedule();
};
// The projection's documents of what the next batch touched: where each log stands.
source.addEventListener('projection', (m) => {
  model.project(JSON.parse(m.data));
  schedule();
});
// The server's `error` message says what went wrong; the connection's own error event has no data.
source.addEventListener('error', (m) => { const data = /** @type {MessageEvent} */ (m).data; if (data) live.textContent = `error: ${data}`; });

// The address the page was opened at (or reloaded with).
route();
