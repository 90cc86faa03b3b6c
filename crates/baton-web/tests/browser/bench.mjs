// The dashboard at scale, in Debian's headless Chromium: prints its figures beside their targets.
// It fails when a target it counts is missed (bytes, rows, the row a click opens); a target it
// times (milliseconds) is printed as SLOW when missed and does not fail it: a time on a shared
// 2-core machine says as much about the machine as about the page.
//
//   node bench.mjs grow STATE_DIR TEMPLATE_LOG EVENTS
//     writes workflow logs into STATE_DIR/workflows/ until they hold EVENTS events: copies of a
//     log the binary wrote (TEMPLATE_LOG, its id renamed), and one workflow of 10,000 dispatches
//     (its agent_started / agent_completed pair repeated): the page's long lists.
//   node bench.mjs measure BASE_URL EVENTS BIG_ID [BASELINE_JSON]
//     opens the page and measures: first paint, the bytes of the first paint (compressed), the
//     time until every event is counted (the page holds each log's summary; the Events list
//     asks for the pages it scrolls to), then scrolls the workflow list, the event list and the big
//     workflow's dispatches, three passes each: the longest task of each pass (the target holds
//     for the median pass), the rows in the page, the time from a scroll to its rows drawn. With BASELINE_JSON (the same measure of a small project), the
//     scroll figures are also printed as ratios against it. The last line is the result as JSON.
import { launch } from './launch.mjs';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';

const TARGETS = { firstPaintMs: 300, firstPaintKiB: 60, longTaskMs: 50, rows: 100, scrollMs: 100 };
const [mode, ...args] = process.argv.slice(2);

if (mode === 'grow') {
  const [state, template, total] = [args[0], args[1], Number(args[2])];
  const lines = readFileSync(template, 'utf8').trim().split('\n');
  const id = JSON.parse(lines[0]).wf;
  const dir = `${state}/workflows`;
  mkdirSync(dir, { recursive: true });
  // The big one: the template's first dispatch repeated 10,000 times, then its end.
  const started = lines.findIndex((l) => JSON.parse(l).event === 'agent_started');
  const completed = lines.findIndex((l) => JSON.parse(l).event === 'agent_completed');
  const big = `${id.slice(0, -8)}b1900000`;
  const out = [];
  let seq = 0;
  const put = (line, patch) => {
    const e = JSON.parse(line.split(id).join(big));
    seq += 1;
    Object.assign(e, patch, { seq });
    out.push(JSON.stringify(e));
  };
  for (const l of lines.slice(0, started)) put(l, {});
  for (let k = 1; k <= 10000; k++) {
    const a = JSON.parse(lines[started]);
    const c = JSON.parse(lines[completed]);
    delete a.delta; delete c.delta;
    put(JSON.stringify(a), { task_id: `r${k}` });
    put(JSON.stringify(c), { task_id: `r${k}` });
  }
  writeFileSync(`${dir}/${big}.events.jsonl`, `${out.join('\n')}\n`);
  let events = out.length;
  for (let n = 0; events < total; n++) {
    const copy = `${id.slice(0, -8)}${String(n).padStart(8, '0')}`;
    const take = Math.min(lines.length, total - events);
    writeFileSync(`${dir}/${copy}.events.jsonl`, `${lines.slice(0, take).map((l) => l.split(id).join(copy)).join('\n')}\n`);
    events += take;
  }
  console.log(JSON.stringify({ events, big }));
  process.exit(0);
}

const [base, total, big, baselineJson] = args;
const baseline = baselineJson ? JSON.parse(baselineJson) : null;
// --expose-gc: the garbage the load left is collected before the lists are scrolled (see
// `scroll`), so a collection the load made due is not charged to scrolling.
const browser = await launch(['--js-flags=--expose-gc']);
const r = {};
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  await page.addInitScript(() => {
    window.longTasks = [];
    new PerformanceObserver((list) => { for (const e of list.getEntries()) window.longTasks.push(e.duration); })
      .observe({ type: 'longtask', buffered: true });
  });
  const t0 = Date.now();
  await page.goto(base, { waitUntil: 'load' });
  await page.waitForFunction(() => performance.getEntriesByType('paint').length > 0);
  const paint = await page.evaluate(() => {
    const p = performance.getEntriesByType('paint').find((e) => e.name === 'first-paint') || performance.getEntriesByType('paint')[0];
    const nav = performance.getEntriesByType('navigation')[0];
    const files = performance.getEntriesByType('resource').filter((e) => !e.name.includes('/api/'));
    return { ms: p.startTime, bytes: nav.transferSize + files.reduce((a, e) => a + e.transferSize, 0), files: files.length + 1 };
  });
  r.firstPaintMs = Math.round(paint.ms);
  r.firstPaintKiB = +(paint.bytes / 1024).toFixed(1);
  r.firstPaintFiles = paint.files;
  await page.waitForFunction((n) => Number(document.body.dataset.events) >= n, Number(total), { timeout: 600000, polling: 200 });
  r.loadedMs = Date.now() - t0;
  r.events = await page.evaluate(() => Number(document.body.dataset.events));
  r.longTasksWhileLoading = await page.evaluate(() => window.longTasks.length);

  // Scrolls `box` from top to bottom in `steps` jumps, each timed to its rows drawn; the long
  // tasks meanwhile; the most rows the page held.
  // Each list is scrolled once the page has settled: the load's garbage collected (a full
  // collection, outside the measure), a second without a long task, then an idle callback. A
  // reader scrolls a page that has settled; what scrolling itself costs is what is measured.
  const scroll = (selector, steps) => page.evaluate(async ([sel, n]) => {
    if (typeof window.gc === 'function') window.gc();
    const quiet = Date.now() + 15000;
    for (;;) {
      const seen = window.longTasks.length;
      await new Promise((res) => setTimeout(res, 1000));
      if (window.longTasks.length === seen || Date.now() > quiet) break;
    }
    await new Promise((res) => requestIdleCallback(res, { timeout: 2000 }));
    const box = document.querySelector(sel);
    const frame = () => new Promise((res) => requestAnimationFrame(() => requestAnimationFrame(res)));
    const times = [];
    const passes = [];
    let rows = 0;
    const made = new Set(); // every <tr> the list ever showed: recycled rows are counted once
    const end = box.scrollHeight - box.clientHeight;
    // Three passes top to bottom; each pass's longest task is kept, so a one-off stall of the
    // machine shows as one pass's figure, not as the list's.
    for (let pass = 0; pass < 3; pass++) {
      box.scrollTop = 0;
      await frame();
      // No collection between passes: the rows are recycled (vlist.js), so scrolling leaves no
      // garbage, and a collection that scrolling made due is charged to the pass it falls in.
      const before = window.longTasks.length;
      for (let i = 1; i <= n; i++) {
        const t = performance.now();
        box.scrollTop = (end * i) / n;
        box.dispatchEvent(new Event('scroll'));
        await frame();
        times.push(performance.now() - t);
        rows = Math.max(rows, document.querySelectorAll('tbody tr:not(.spacer)').length);
        for (const tr of box.querySelectorAll('tbody tr:not(.spacer)')) made.add(tr);
      }
      const long = window.longTasks.slice(before);
      passes.push(long.length ? Math.round(Math.max(...long)) : 0);
    }
    times.sort((a, b) => a - b);
    const sorted = [...passes].sort((a, b) => a - b);
    return {
      height: box.scrollHeight, rows, p50: +times[Math.floor(times.length / 2)].toFixed(1),
      p95: +times[Math.ceil(times.length * 0.95) - 1].toFixed(1), passes, made: made.size,
      longestTask: sorted[1],
    };
  }, [selector, steps]);

  r.workflows = await scroll('#workflows-box', 60);
  await page.getByRole('button', { name: 'Events', exact: true }).click();
  await page.waitForSelector('#events tbody tr:not(.spacer)');
  r.timeline = await scroll('#events-box', 60);
  await page.getByRole('button', { name: 'Workflows', exact: true }).click();
  await page.evaluate(() => { document.getElementById('wf-text').value = ''; });
  const beforeOpen = await page.evaluate(() => window.longTasks.length);
  const opened = Date.now();
  await page.getByRole('button', { name: `open workflow ${big}` }).click();
  await page.waitForSelector('#dispatches tbody tr:not(.spacer)', { timeout: 60000 });
  await page.waitForFunction(() => document.getElementById('artifact').textContent.length > 0, null, { timeout: 60000 });
  r.openMs = Date.now() - opened;
  r.openLongTasks = await page.evaluate((k) => window.longTasks.slice(k).map(Math.round), beforeOpen);
  r.dispatches = await scroll('#dispatches-box', 60);
  // A row filled again for another dispatch opens that dispatch, not the one it was made for.
  const lastShown = page.locator('#dispatches tbody tr:not(.spacer) button.link').last();
  r.openedLabel = await lastShown.getAttribute('aria-label');
  await lastShown.click();
  await page.waitForSelector('#dispatch-detail h4');
  r.openedTitle = await page.locator('#dispatch-detail h4').textContent();
  r.dispatchCount = await page.evaluate(() => document.getElementById('detail-summary').textContent);
} finally {
  await browser.close();
}

const misses = [];
const slow = [];
const check = (what, value, most) => { if (!(value <= most)) misses.push(`${what}: ${value} > ${most}`); };
const timed = (what, value, most) => { if (!(value <= most)) slow.push(`${what}: ${value} > ${most}`); };
timed('first paint (ms)', r.firstPaintMs, TARGETS.firstPaintMs);
check('first paint (KiB, compressed)', r.firstPaintKiB, TARGETS.firstPaintKiB);
for (const list of ['workflows', 'timeline', 'dispatches']) {
  if (!r[list]) continue;
  check(`${list}: rows in the page`, r[list].rows, TARGETS.rows);
  check(`${list}: rows ever made while scrolling (recycled)`, r[list].made, TARGETS.rows);
  timed(`${list}: longest task while scrolling, the median of 3 passes (ms)`, r[list].longestTask, TARGETS.longTaskMs);
  timed(`${list}: scroll to drawn p95 (ms)`, r[list].p95, TARGETS.scrollMs);
  if (baseline && baseline[list]) r[list].vsBaseline = +(r[list].p95 / Math.max(baseline[list].p95, 0.1)).toFixed(2);
}
const say = (s) => process.stderr.write(`${s}\n`);
say(`baton serve at ${r.events} events`);
say(`  first paint            ${r.firstPaintMs} ms (target ≤ ${TARGETS.firstPaintMs}), ${r.firstPaintKiB} KiB compressed in ${r.firstPaintFiles} files (≤ ${TARGETS.firstPaintKiB})`);
say(`  every event counted    ${r.loadedMs} ms (the first message: every log's row, Needs you, the Events list's length)`);
for (const list of ['workflows', 'timeline', 'dispatches']) {
  const x = r[list];
  if (!x) continue;
  say(`  ${list.padEnd(22)} ${x.rows} rows · scroll→drawn p50 ${x.p50} ms p95 ${x.p95} ms${x.vsBaseline ? ` (${x.vsBaseline}× the small project)` : ''} · ${x.made} rows made · longest task per pass ${x.passes.join(' / ')} ms`);
}
if (r.openedLabel !== undefined && !(r.openedTitle || '').startsWith(`${r.openedLabel.replace(/^dispatch /, '')}:`)) {
  misses.push(`the recycled row "${r.openedLabel}" opened "${r.openedTitle}"`);
}
if (slow.length) say(`SLOW (printed, not failed): ${slow.join('; ')}`);
if (misses.length) say(`MISSED: ${misses.join('; ')}`);
r.misses = misses;
r.slow = slow;
console.log(JSON.stringify(r));
process.exit(misses.length ? 1 : 0);
