// Drives `baton serve`'s page in Debian's headless Chromium: a workflow waiting at its
// checkpoint shows under "Needs you"; its option is clicked (the confirmation accepted); the page
// follows the workflow to its end; axe finds no violation; a screenshot of each state is kept.
//
// node page.mjs BASE_URL WORKFLOW_ID SCREENSHOT_DIR
import { launch } from './launch.mjs';
import { AxeBuilder } from '@axe-core/playwright';
import { mkdirSync } from 'node:fs';

const [base, workflow, shots] = process.argv.slice(2);
mkdirSync(shots, { recursive: true });
const browser = await launch();
const result = { violations: [] };
try {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.on('dialog', (d) => d.accept());
  await page.goto(base);
  const row = `#workflows tbody tr[data-id="${workflow}"]`;
  await page.waitForSelector(`${row} td.needs`, { timeout: 30000 });
  const card = page.locator(`form.need[aria-label="workflow ${workflow}"]`);
  await card.waitFor({ timeout: 30000 });
  result.question = await card.locator('p').textContent();
  await page.screenshot({ path: `${shots}/needs-you.png`, fullPage: true });
  const axe = await new AxeBuilder({ page }).analyze();
  result.violations.push(...axe.violations.map((v) => `${v.id}: ${v.help}`));
  await card.getByRole('button', { name: 'critical only' }).click();
  await page.waitForSelector(`${row} td.done`, { timeout: 60000 });
  result.last = await page.locator(`${row} td`).nth(9).textContent();
  await page.screenshot({ path: `${shots}/done.png`, fullPage: true });
  const after = await new AxeBuilder({ page }).analyze();
  result.violations.push(...after.violations.map((v) => `${v.id}: ${v.help}`));
  // The workflow's own view: its dispatches and their waterfall.
  await page.getByRole('button', { name: `open workflow ${workflow}` }).click();
  await page.waitForSelector('#detail:not([hidden]) #dispatches tbody tr:not(.spacer)');
  result.dispatches = await page.locator('#dispatches tbody tr:not(.spacer)').evaluateAll((trs) =>
    trs.map((tr) => [...tr.children].slice(0, 4).map((td) => td.textContent)));
  result.bars = await page.locator('#dispatches .bar.run').count();
  result.queues = await page.locator('#dispatches tbody tr:not(.spacer) td:nth-child(8)').allTextContents();
  result.edges = await page.locator('#graph path.edge').count();
  result.nodes = await page.locator('#graph g.node').count();
  result.graphTitle = await page.locator('#graph title').textContent();
  // What the builder's dispatch changed: the tree before and after it, as a diff.
  await page.getByRole('button', { name: /^dispatch t1$/ }).click();
  await page.getByRole('button', { name: 'show what this dispatch changed' }).click();
  await page.waitForSelector('#dispatch-change pre.diff');
  result.dispatchChange = await page.locator('#dispatch-change pre.diff').textContent();
  // A dispatch's contract and the verifier's scenarios; the artifact at the checkpoint.
  await page.getByRole('button', { name: /^dispatch t4/ }).click();
  // The detail is t4's (the builder's, opened above, is replaced once t4's answer is read).
  await page.waitForFunction(() => (document.querySelector('#dispatch-detail h4') || { textContent: '' }).textContent.startsWith('t4'));
  await page.waitForSelector('#dispatch-detail pre.contract');
  result.scenarios = await page.locator('#dispatch-detail ul.scenarios li').allTextContents();
  await page.waitForFunction(() => document.getElementById('artifact').textContent.includes('workflow_id'));
  result.artifactStatus = JSON.parse(await page.locator('#artifact').textContent()).run_state;
  await page.locator('#artifact-marks button', { hasText: 'checkpoint' }).first().click();
  await page.waitForFunction(() => document.getElementById('artifact').textContent.includes('"pending_gate": "scope_decision"'));
  result.artifactAtCheckpoint = JSON.parse(await page.locator('#artifact').textContent()).pending_gate;
  result.summary = await page.locator('#detail-summary').textContent();
  await page.screenshot({ path: `${shots}/workflow.png`, fullPage: true });
  const detail = await new AxeBuilder({ page }).analyze();
  result.violations.push(...detail.violations.map((v) => `${v.id}: ${v.help}`));
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
