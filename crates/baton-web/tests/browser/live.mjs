// Live updates in Debian's headless Chromium, driven step by step by the Rust test over stdin
// and stdout (one word a line):
//
//   this script                       the test
//   loaded                   ──►      starts a workflow with the CLI (its builder waits)
//                            ◄──      started
//   (sees it, reloads the page, sees it again)
//   reloaded                 ──►      restarts the server on the same port, lets the builder go
//                            ◄──      restarted
//   (the stream reconnects by itself; the workflow reaches its end in the page)
//   then appends SAMPLES lines to LOG on disk, one at a time, timing each to visible.
//
// node live.mjs BASE_URL LOG SCREENSHOT_DIR — prints its result as the last line.
import { launch } from './launch.mjs';
import { appendFileSync, mkdirSync } from 'node:fs';
import { createInterface } from 'node:readline';

const [base, log, shots] = process.argv.slice(2);
mkdirSync(shots, { recursive: true });
const SAMPLES = 40;
const rl = createInterface({ input: process.stdin });
const lines = rl[Symbol.asyncIterator]();
const expect = async (word) => {
  const { value } = await lines.next();
  if (value !== word) throw new Error(`expected ${word}, got ${value}`);
};
const browser = await launch();
const result = {};
try {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  const count = () => page.evaluate(() => Number(document.body.dataset.events || 0));
  await page.goto(base);
  await page.waitForFunction(() => Number(document.body.dataset.events) > 0);
  console.log('loaded');
  await expect('started');
  const row = '#workflows tbody tr[data-id^="wf-"]';
  await page.waitForSelector(`${row} td.running`, { timeout: 30000 });
  result.id = await page.locator(row).first().getAttribute('data-id');
  // Mid-run: the page is loaded again and finds the workflow where it is.
  await page.reload();
  await page.waitForSelector(`${row} td.running`, { timeout: 30000 });
  result.beforeRestart = await count();
  console.log('reloaded');
  await expect('restarted');
  // The server went away and came back: the stream reconnects with its last id.
  await page.waitForSelector(`${row} td.done`, { timeout: 60000 });
  await page.screenshot({ path: `${shots}/live.png`, fullPage: true });
  result.afterRun = await count();
  // On-disk event to visible: the time from appending a line to the page counting it.
  await page.evaluate(() => {
    window.seenAt = {};
    new MutationObserver(() => { window.seenAt[document.body.dataset.events] = Date.now(); })
      .observe(document.body, { attributes: true, attributeFilter: ['data-events'] });
  });
  const latencies = [];
  for (let i = 0; i < SAMPLES; i++) {
    const want = (await count()) + 1;
    const t0 = Date.now();
    appendFileSync(log, `${JSON.stringify({ type: 'entry', index: 0, event: { type: 'queued', name: `probe-${i}`, role: 'helper' } })}\n`);
    await page.waitForFunction((n) => window.seenAt[n] !== undefined, want, { timeout: 10000, polling: 10 });
    latencies.push((await page.evaluate((n) => window.seenAt[n], want)) - t0);
  }
  latencies.sort((a, b) => a - b);
  result.latency = { p50: latencies[Math.floor(SAMPLES * 0.5)], p95: latencies[Math.ceil(SAMPLES * 0.95) - 1], max: latencies[SAMPLES - 1] };
  result.events = await count();
  result.duplicates = await page.evaluate(() => Number(document.body.dataset.duplicates));
  result.errors = errors;
} finally {
  rl.close();
  await browser.close();
}
console.log(JSON.stringify(result));
