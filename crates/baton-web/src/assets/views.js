// The page's pictures and readers: a workflow's task graph, a diff, a transcript (two lanes for a
// routed session) and the cost chart. Every text goes in as a text node, never as markup.
//
// Checked by `tsc` (`crates/baton-web/tsconfig.json`) against the documents' types
// (`projection.d.ts`) and the model's (`model.js`).
// @ts-check

import { layers, failedVerdict } from './model.js';

/**
 * @typedef {import('./model.js').Row} Row
 * @typedef {import('./model.js').GraphTask} GraphTask
 * @typedef {import('./model.js').Dispatch} Dispatch
 */

/**
 * An element's attributes: `class`, `text` (its text), `on…` (a listener), any other an
 * attribute (`true` present and empty; `undefined`, `null` or `false` left out).
 * @typedef {Record<string, string | number | boolean | null | undefined | EventListener>} Attrs
 */

/**
 * One entry of a session's transcript as `/api/sessions/{id}/transcript` sends it
 * (`baton_app::task_log::TranscriptEntry`, not derived: written here by hand).
 * @typedef {object} Entry
 * @property {string} [seat] a routed session's seat (`coordinator`, `executor`)
 * @property {'session' | 'user' | 'assistant' | 'tool_call' | 'tool_result' | 'note'} kind
 * @property {string} text
 * @property {string} [name] a tool call's tool
 * @property {string} [arguments] a tool call's arguments (JSON text)
 * @property {boolean} [error] a tool result that is an error
 */

/**
 * What was spent under one key (`Model.costBy`).
 * @typedef {{key: string, usd: number}} Sum
 */

const SVG = 'http://www.w3.org/2000/svg';

// An element with attributes and children (strings become text).
/**
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag @param {Attrs} [attrs] @param {...(Node | string | null | undefined)} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = /** @type {string} */ (v);
    else if (k === 'text') e.textContent = /** @type {string} */ (v);
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), /** @type {EventListener} */ (v));
    else e.setAttribute(k, v === true ? '' : /** @type {string} */ (v));
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

/** @param {string} tag @param {Record<string, string | number>} [attrs] */
function svg(tag, attrs = {}) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
}

/** @param {number | null | undefined} x */
export function money(x) {
  return typeof x === 'number' && x > 0 ? `$${x.toFixed(4)}` : x === 0 ? '$0' : '';
}

/** @param {number} msec */
export function secs(msec) {
  if (!Number.isFinite(msec)) return '';
  return msec < 1000 ? `${Math.round(msec)}ms` : `${(msec / 1000).toFixed(2)}s`;
}

/** @type {Record<string, string>} */
const STATUS_CLASS = { completed: 'done', done: 'done', in_progress: 'running', running: 'running', failed: 'failed', blocked: 'failed' };

// A workflow's task graph: one column per layer (a task right of its blockers), an arrow per
// `blockedBy` edge, a remediation task (origin other than the router) drawn dashed.
/** @param {Row} row @param {(task: string) => void} [onPick] */
export function graphPicture(row, onPick) {
  /** @type {Map<string, GraphTask>} */
  const graph = row.graph || new Map();
  const cols = layers(graph);
  const W = 150, H = 46, GX = 50, GY = 14;
  const pos = new Map();
  cols.forEach((col, x) => col.forEach((id, y) => pos.set(id, { x: 10 + x * (W + GX), y: 10 + y * (H + GY) })));
  const width = 20 + cols.length * (W + GX);
  const height = 20 + Math.max(1, ...cols.map((c) => c.length)) * (H + GY);
  let edges = 0;
  const pic = svg('svg', { viewBox: `0 0 ${width} ${height}`, width, height, role: 'img', 'aria-labelledby': 'graph-title' });
  const title = svg('title', { id: 'graph-title' });
  pic.append(title);
  const defs = svg('defs');
  const marker = svg('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 6, markerHeight: 6, orient: 'auto' });
  marker.append(svg('path', { d: 'M0,0 L10,5 L0,10 z', fill: '#555' }));
  defs.append(marker);
  pic.append(defs);
  for (const [id, g] of graph) {
    const to = pos.get(id);
    for (const b of g.blockedBy || []) {
      const from = pos.get(b);
      if (!from || !to) continue;
      edges += 1;
      const x1 = from.x + W, y1 = from.y + H / 2, x2 = to.x, y2 = to.y + H / 2;
      pic.append(svg('path', { d: `M${x1},${y1} C${x1 + GX / 2},${y1} ${x2 - GX / 2},${y2} ${x2},${y2}`, class: 'edge', 'marker-end': 'url(#arrow)', 'data-from': b, 'data-to': id }));
    }
  }
  for (const [id, g] of graph) {
    const p = pos.get(id);
    if (!p) continue;
    const remedy = g.origin && g.origin !== 'router';
    // The record calls a task that ran "completed" whatever it answered: a failed verdict (no
    // contract, blocked, an error) is drawn as the failure it is.
    const last = [...(row.nodes || /** @type {Map<string, Dispatch>} */ (new Map())).values()].reverse().find((n) => n.task === id);
    const failed = last && failedVerdict(last.verdict);
    const cls = failed ? 'failed' : (g.status && STATUS_CLASS[g.status]) || 'pending';
    const node = svg('g', { class: `node ${cls}${remedy ? ' remedy' : ''}`, transform: `translate(${p.x},${p.y})`, 'data-task': id });
    node.append(svg('rect', { width: W, height: H, rx: 6 }));
    const t1 = svg('text', { x: 8, y: 18 });
    t1.textContent = `${id} · ${failed ? last.verdict : g.status || 'pending'}`;
    const t2 = svg('text', { x: 8, y: 36, class: 'sub' });
    t2.textContent = `${g.phase || ''}${remedy ? ' ↻' : ''}`.slice(0, 22);
    node.append(t1, t2);
    if (onPick) node.addEventListener('click', () => onPick(id));
    pic.append(node);
  }
  title.textContent = `Task graph: ${graph.size} tasks, ${edges} blockedBy edges, in ${cols.length} layers`;
  return pic;
}

// A unified diff, each line classed by its first character.
/** @param {string} text */
export function diffView(text) {
  const pre = el('pre', { class: 'diff', tabindex: '0', 'aria-label': 'diff' });
  const lines = String(text).split('\n');
  for (const line of lines.slice(0, 5000)) {
    const c = line.startsWith('+++') || line.startsWith('---') ? 'file'
      : line.startsWith('+') ? 'add' : line.startsWith('-') ? 'del' : line.startsWith('@@') ? 'hunk'
        : line.startsWith('diff ') ? 'file' : '';
    pre.append(el('span', { class: c, text: `${line}\n` }));
  }
  if (lines.length > 5000) pre.append(el('span', { text: `… ${lines.length - 5000} more lines\n` }));
  return pre;
}

// A tool call's change as a diff, where its arguments say old and new text (edit) or the whole
// new file (write); null otherwise.
// A text's lines, without the empty one after a final newline.
const linesOf = (/** @type {string} */ text) => text.replace(/\n$/, '').split('\n');

/** @param {string | undefined} name @param {string | undefined} args */
function callDiff(name, args) {
  /** @type {any} a tool's own arguments: any JSON */
  let a;
  try { a = JSON.parse(args || '{}'); } catch { return null; }
  const path = a.path || a.file_path || a.file || '';
  const oldText = a.old_string ?? a.old_text ?? a.old;
  const newText = a.new_string ?? a.new_text ?? a.new;
  if (typeof oldText === 'string' && typeof newText === 'string') {
    return diffView([`--- ${path}`, `+++ ${path}`, ...linesOf(oldText).map((l) => `-${l}`), ...linesOf(newText).map((l) => `+${l}`)].join('\n'));
  }
  if (/write/.test(name ?? '') && typeof a.content === 'string') {
    return diffView([`+++ ${path}`, ...linesOf(a.content).map((l) => `+${l}`)].join('\n'));
  }
  return null;
}

// Markdown as the terminal UI shows it: headings, lists, quotes, fenced code, and `code`,
// **bold** and *emphasis* inline. Built from text nodes only: nothing a model wrote becomes
// markup (a link stays its text).
/** @param {string} text */
export function markdownView(text) {
  const box = el('div', { class: 'md' });
  const lines = String(text).split('\n');
  /** @type {HTMLElement | null} */
  let list = null;
  /** @type {string[]} */
  let para = [];
  const flush = () => {
    if (para.length) box.append(inline(el('p'), para.join(' ')));
    para = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = /^\s*(```|~~~)/.exec(line);
    if (fence) {
      flush(); list = null;
      const code = [];
      for (i++; i < lines.length && !lines[i].trimStart().startsWith(fence[1]); i++) code.push(lines[i]);
      box.append(el('pre', { class: 'code', text: code.join('\n') }));
      continue;
    }
    const head = /^(#{1,6})\s+(.*)$/.exec(line);
    const item = /^\s*([-*+]|\d+[.)])\s+(.*)$/.exec(line);
    const quote = /^>\s?(.*)$/.exec(line);
    if (head) { flush(); list = null; box.append(inline(el('p', { class: `md-h md-h${head[1].length}` }), head[2])); }
    else if (item) {
      flush();
      const tag = /\d/.test(item[1]) ? 'ol' : 'ul';
      if (!list || list.tagName.toLowerCase() !== tag) { list = el(tag); box.append(list); }
      list.append(inline(el('li'), item[2]));
    } else if (quote) { flush(); list = null; box.append(inline(el('blockquote'), quote[1])); }
    else if (!line.trim()) { flush(); list = null; }
    else { list = null; para.push(line.trim()); }
  }
  flush();
  return box;
}

// `code`, **bold**, *emphasis* and _emphasis_ of one line of Markdown, appended to `node`.
/** @template {HTMLElement} N @param {N} node @param {string} text @returns {N} */
function inline(node, text) {
  const re = /`([^`]+)`|\*\*([^*]+)\*\*|\*([^*\s][^*]*)\*|\b_([^_]+)_\b/g;
  let at = 0;
  for (const m of text.matchAll(re)) {
    const k = m.index ?? 0;
    if (k > at) node.append(text.slice(at, k));
    if (m[1] !== undefined) node.append(el('code', { text: m[1] }));
    else if (m[2] !== undefined) node.append(el('strong', { text: m[2] }));
    else node.append(el('em', { text: m[3] ?? m[4] }));
    at = k + m[0].length;
  }
  if (at < text.length) node.append(text.slice(at));
  return node;
}

// A tool call in one line, as the terminal UI shows it: the tool and what it works on (its
// command, path or pattern), not its arguments as JSON.
/** @param {string | undefined} name @param {string | undefined} args */
export function callLine(name, args) {
  /** @type {any} a tool's own arguments: any JSON */
  let a = null;
  try { a = JSON.parse(args || '{}'); } catch { a = null; }
  const on = a && typeof a === 'object'
    ? ['cmd', 'command', 'path', 'file_path', 'pattern', 'query', 'url', 'task'].map((k) => a[k]).find((v) => typeof v === 'string' && v)
    : undefined;
  const what = on !== undefined ? String(on).split('\n')[0] : String(args || '');
  return `⚙ ${name || 'tool'} ${what.slice(0, 120)}`;
}

/** @param {Entry} e */
function entryView(e) {
  switch (e.kind) {
    case 'user': return el('div', { class: 'msg user' }, el('span', { class: 'who', text: 'you › ' }), e.text);
    case 'assistant': return el('div', { class: 'msg assistant' }, markdownView(e.text));
    case 'tool_call': {
      const d = el('details', { class: 'call' }, el('summary', { text: callLine(e.name, e.arguments) }));
      d.append(callDiff(e.name, e.arguments) || el('pre', { text: e.arguments || '' }));
      return d;
    }
    case 'tool_result': {
      const first = String(e.text).split('\n')[0].slice(0, 160);
      return el('details', { class: `result${e.error ? ' failed' : ''}` }, el('summary', { text: `${e.error ? '✗' : '→'} ${first}` }), el('pre', { text: e.text }));
    }
    default: return el('div', { class: 'note', text: `— ${e.text}` });
  }
}

// A session's transcript: one column, or two lanes (Coordinator, Executor) when entries carry a
// seat; an entry without one (a note) goes in both.
/** @param {Entry[]} entries */
export function transcriptView(entries) {
  const routed = entries.some((e) => e.seat);
  if (!routed) return el('div', { class: 'transcript' }, ...entries.map(entryView));
  /** @param {string} seat @param {string} title */
  const lane = (seat, title) => el('section', { class: 'lane', 'aria-label': `${title} lane` }, el('h3', { text: title }),
    ...entries.filter((e) => !e.seat || e.seat === seat).map(entryView));
  return el('div', { class: 'lanes' }, lane('coordinator', 'Coordinator'), lane('executor', 'Executor'));
}

// Horizontal bars of what was spent per key, with a budget mark where one is known.
/**
 * @param {Sum[]} sums @param {string} label
 * @param {((key: string) => number | null | undefined) | null} budgetOf
 */
export function costChart(sums, label, budgetOf) {
  const top = sums.slice(0, 20);
  const most = Math.max(1e-9, ...top.map((s) => Math.max(s.usd, (budgetOf && budgetOf(s.key)) || 0)));
  const W = 640, BAR = 22, LABEL = 220;
  const pic = svg('svg', { viewBox: `0 0 ${W} ${top.length * BAR + 10}`, width: W, height: top.length * BAR + 10, role: 'img', 'aria-labelledby': 'cost-title' });
  const title = svg('title', { id: 'cost-title' });
  title.textContent = `Cost by ${label}: ${top.map((s) => `${s.key} ${money(s.usd) || '$0'}`).join(', ') || 'nothing spent'}`;
  pic.append(title);
  top.forEach((s, i) => {
    const y = 5 + i * BAR;
    const name = svg('text', { x: 0, y: y + 15, class: 'sub' });
    name.textContent = String(s.key).slice(0, 30);
    const w = ((W - LABEL - 80) * s.usd) / most;
    pic.append(name, svg('rect', { x: LABEL, y: y + 3, width: Math.max(w, 1), height: BAR - 8, class: 'spend' }));
    const v = svg('text', { x: LABEL + Math.max(w, 1) + 6, y: y + 15, class: 'sub' });
    v.textContent = money(s.usd) || '$0';
    pic.append(v);
    const budget = budgetOf && budgetOf(s.key);
    if (budget) {
      const bx = LABEL + ((W - LABEL - 80) * budget) / most;
      pic.append(svg('line', { x1: bx, x2: bx, y1: y, y2: y + BAR - 2, class: 'budget' }));
    }
  });
  return pic;
}
