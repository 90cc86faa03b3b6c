// The page's model (src/assets/model.js) under node's test runner, on logs the binary wrote
// (the projection's fixtures: a BUILD with a checkpoint and a remediation, a Flow blocked by its
// reviewer, a background task) and the projection's documents of them, as the server sends them
// (fixtures/projection.json, kept equal to the Rust fold by baton-events' tests). Run by
// tests/model_js.rs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Model, layers } from '../src/assets/model.js';

const fixtures = new URL('../../baton-events/src/projection/fixtures/', import.meta.url);

// A log's lines as the feed's events (position = the line's byte offset), the way the stream
// sends them; a workflow event's delta cut as the server cuts it.
function feed(kind, file) {
  const text = readFileSync(new URL(file, fixtures), 'utf8');
  const out = [];
  let offset = 0;
  for (const line of text.split('\n')) {
    if (line) {
      const event = JSON.parse(line);
      const id = kind === 'workflow' ? event.wf : kind === 'flow' ? '20261205-085300-0830' : 't1a245681cbdac0a8';
      if (event.delta) {
        const d = {};
        if (event.delta.tasks) d.tasks = event.delta.tasks.map(({ id: i, status, blockedBy, phase, origin }) => ({ id: i, status, blockedBy, phase, origin }));
        if (event.delta.spent) d.spent = event.delta.spent;
        event.delta = d;
      }
      out.push({ pos: `${kind}/${id}:${offset}`, source: { kind, id }, ts: event.ts || event.at, event });
    }
    offset += Buffer.byteLength(line) + 1;
  }
  return out;
}

// The workflow's, the Flow's and the task's documents (the worker's log is not among the events).
const docs = JSON.parse(readFileSync(new URL('projection.json', fixtures), 'utf8')).filter((d) => d.kind !== 'worker');

const all = [...feed('workflow', 'workflow.events.jsonl'), ...feed('flow', 'flow.events.jsonl'), ...feed('task', 'task.events.jsonl')];
for (const e of all) e.pos = { source: e.source, offset: Number(e.pos.split(':').pop()) };

// What a model holds, as plain data.
const plain = (m) => JSON.stringify([...m.rows.values()], (k, v) => (v instanceof Map ? [...v.entries()] : v));

test('a BUILD with a checkpoint and a remediation folds to its end', () => {
  const m = new Model();
  m.add(all);
  m.project(docs);
  const [w] = m.list('workflow');
  assert.equal(w.type, 'BUILD');
  assert.equal(w.state, 'done');
  assert.equal(w.nodes.size, 8, JSON.stringify([...w.nodes.keys()]));
  assert.deepEqual([...w.nodes.values()].map((n) => n.agent).slice(0, 3), ['component-builder', 'code-reviewer', 'failure-hunter']);
  for (const n of w.nodes.values()) {
    assert.ok(n.ready <= n.start, `${n.key} ready after it started`);
    assert.ok(n.end >= n.start, `${n.key} ended before it started`);
  }
  assert.ok(w.graph.get('t4').blockedBy.includes('t2'));
  assert.ok(w.marks.some((x) => x.what.startsWith('checkpoint')));
  assert.ok(w.findings.length > 0);
});

test('a blocked Flow and a task', () => {
  const m = new Model();
  m.add(all);
  m.project(docs);
  const [f] = m.list('flow');
  const b = f.units.get('b');
  assert.deepEqual(b.steps, ['done', 'done', 'done', 'failed', 'pending']);
  assert.equal(b.validation.length, 1);
  assert.match(f.reason, /b blocked/);
  assert.equal(b.validation[0].ok, true);
  const [t] = m.list('task');
  assert.equal(t.state, 'done');
  assert.ok(m.needs().some((r) => r.kind === 'flow'));
});

test('in chunks, or given twice, the model is the same', () => {
  const once = new Model();
  once.add(all);
  once.project(docs);
  const chunked = new Model();
  for (let i = 0; i < all.length; i += 3) chunked.add(all.slice(i, i + 3));
  chunked.project(docs);
  assert.equal(plain(chunked), plain(once));
  const twice = new Model();
  twice.add(all);
  twice.add(all.slice(5, 40));
  twice.project(docs);
  assert.equal(plain(twice), plain(once));
  assert.equal(twice.duplicates, 35);
  assert.equal(twice.count, all.length);
});

// The page's first message stands for the events it covers: a model given it, then the rest of
// the events, holds the rows a model given every event holds.
test('an overview then the events after it is every event folded', () => {
  const cut = 40;
  const before = all.slice(0, cut);
  const logs = new Map();
  for (const e of before) {
    const k = `${e.source.kind}/${e.source.id}`;
    const s = logs.get(k) || { kind: e.source.kind, id: e.source.id, events: 0, first: null, last: '', at: null };
    const at = e.ts || null;
    s.events += 1;
    if (s.first === null) s.first = at;
    if (at) s.at = at;
    s.last = e.event.type || e.event.event;
    logs.set(k, s);
  }
  const paged = new Model();
  paged.overview({ events: cut, docs: [], logs: [...logs.values()] });
  paged.add(all.slice(cut));
  paged.project(docs);
  const whole = new Model();
  whole.add(all);
  whole.project(docs);
  const rows = (m) => m.list('workflow').concat(m.list('flow'), m.list('task')).map((r) => [r.kind, r.id, r.events, r.first, r.last, r.at, r.state]);
  assert.deepEqual(rows(paged), rows(whole));
  assert.equal(paged.count, whole.count);
});

test('graph layers', () => {
  const g = new Map([['a', { blockedBy: [] }], ['b', { blockedBy: ['a'] }], ['c', { blockedBy: ['a'] }], ['d', { blockedBy: ['b', 'c'] }], ['x', { blockedBy: ['y'] }], ['y', { blockedBy: ['x'] }]]);
  const cols = layers(g);
  // Each task right of its blockers; a cycle is drawn, not followed.
  const at = (id) => cols.findIndex((c) => c.includes(id));
  assert.equal(at('a'), 0);
  assert.equal(at('b'), 1);
  assert.equal(at('c'), 1);
  assert.equal(at('d'), 2);
  assert.equal(cols.flat().length, 6);
});
