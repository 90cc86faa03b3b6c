// Every view of `baton serve`'s page, in Debian's headless Chromium, against a project holding
// workflows, Flows, tasks and sessions in every state: each view is read back, checked by axe
// and kept as a screenshot. Prints what it read as one JSON line.
//
// node tour.mjs BASE_URL IDS_JSON SCREENSHOT_DIR
import { launch } from './launch.mjs';
import { AxeBuilder } from '@axe-core/playwright';
import { mkdirSync } from 'node:fs';

const [base, idsJson, shots] = process.argv.slice(2);
const ids = JSON.parse(idsJson);
mkdirSync(shots, { recursive: true });
const browser = await launch();
const result = { violations: [], views: [] };
try {
  const page = await (await browser.newContext({ viewport: { width: 1400, height: 1000 } })).newPage();
  page.on('dialog', (d) => d.accept());
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  const view = async (name) => {
    const r = await new AxeBuilder({ page }).analyze();
    result.violations.push(...r.violations.map((v) => `${name}: ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`));
    await page.screenshot({ path: `${shots}/${name}.png`, fullPage: true });
    result.views.push(name);
  };
  const rows = (table) => page.locator(`#${table} tbody tr:not(.spacer)`).evaluateAll((trs) =>
    trs.map((tr) => [...tr.children].map((td) => td.textContent)));
  // The page draws once per frame: wait for two frames after a change, for what it asked the
  // server meanwhile (a page of events, the cost, a workflow's events) and two frames more.
  const frames = () => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  const settle = async () => {
    await frames();
    await page.waitForFunction(() => (document.body.dataset.pending || '0') === '0');
    await frames();
  };
  const tab = async (name) => {
    await page.getByRole('button', { name, exact: true }).click();
    await settle();
  };

  await page.goto(base);
  // Everything the feed holds reaches the page.
  await page.waitForFunction((n) => Number(document.body.dataset.events) >= n, ids.events, { timeout: 30000 });
  result.events = Number(await page.evaluate(() => document.body.dataset.events));
  result.needs = await page.locator('#needs form.need h3').allTextContents();
  // A failed workflow waits for guidance: its card says why and offers the retry.
  const failedCard = page.locator('#needs form.need', { hasText: `workflow ${ids.workflow_failed}` });
  result.failed_card = {
    text: await failedCard.locator('p').first().textContent(),
    buttons: await failedCard.locator('button').allTextContents(),
  };

  // Workflows: the list, a filter, and one workflow in each state.
  await page.waitForSelector(`#workflows tr[data-id="${ids.workflow_running}"]`);
  result.workflows = await rows('workflows');
  await view('workflows');
  await page.selectOption('#wf-state', 'needs');
  await settle();
  result.filtered = await rows('workflows');
  await page.selectOption('#wf-state', '');
  await settle();
  // Searching the words a workflow was asked with finds it.
  await page.fill('#wf-text', 'third feature');
  await settle();
  result.searched = { rows: await rows('workflows'), count: await page.locator('#wf-count').textContent() };
  await page.fill('#wf-text', '');
  await settle();
  for (const [state, id] of [['done', ids.workflow_done], ['failed', ids.workflow_failed], ['running', ids.workflow_running]]) {
    await page.getByRole('button', { name: `open workflow ${id}` }).click();
    await page.waitForFunction((i) => document.getElementById('h-detail').textContent === `Workflow ${i}`, id);
    await page.waitForSelector('#graph svg');
    await settle();
    result[`workflow_${state}`] = {
      summary: await page.locator('#detail-summary').textContent(),
      dispatches: await rows('dispatches'),
      nodes: await page.locator('#graph g.node').count(),
      edges: await page.locator('#graph path.edge').count(),
      failed_nodes: await page.locator('#graph g.node.failed').count(),
      failed_verdicts: await page.locator('#dispatches tbody td.failed').evaluateAll((tds) => tds.map((td) => td.textContent)),
    };
    if (state === 'done') {
      // What it changed, read from the repository: its base to its tree now.
      await page.getByRole('button', { name: 'show what the workflow changed' }).click();
      await page.waitForSelector('#wf-change pre.diff, #wf-change p');
      result.workflow_change = await page.locator('#wf-change').textContent();
    }
    await view(`workflow-${state}`);
  }
  await page.getByRole('button', { name: 'close' }).first().click();

  // Flows: the list, the blocked one (a unit's validation and packet) and the landed one.
  await tab('Flows');
  await page.waitForSelector(`#flows tr[data-id="${ids.flow_done}"]`);
  result.flows = await rows('flows');
  await view('flows');
  await page.getByRole('button', { name: `open flow ${ids.flow_blocked}` }).click();
  await page.waitForSelector('#flow-detail:not([hidden]) #units tbody tr');
  await page.getByRole('button', { name: 'unit b details' }).click();
  await page.getByRole('button', { name: 'show the exact packet' }).click();
  await page.waitForSelector('#packet pre.diff');
  result.flow_blocked = {
    units: await page.locator('#units tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.children].slice(0, 6).map((td) => td.textContent))),
    notes: await page.locator('#flow-notes').textContent(),
    packet: await page.locator('#packet pre.diff').textContent(),
  };
  await view('flow-blocked');
  await page.getByRole('button', { name: `open flow ${ids.flow_done}` }).click();
  await page.waitForFunction((i) => document.getElementById('h-flow').textContent === `Flow ${i}`, ids.flow_done);
  result.flow_done = await page.locator('#units tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.children].slice(0, 6).map((td) => td.textContent)));
  // A landed unit's change, read from the repository.
  await page.getByRole('button', { name: 'unit d details' }).click();
  await page.getByRole('button', { name: 'show what it changed' }).click();
  await page.waitForSelector('#unit-change pre.diff');
  result.unit_change = await page.locator('#unit-change pre.diff').textContent();
  await view('flow-done');

  // Tasks: every state, and a log.
  await tab('Tasks');
  await page.waitForSelector(`#tasks tr[data-id="${ids.task_running}"]`);
  result.tasks = await rows('tasks');
  await page.getByRole('button', { name: `open task ${ids.task_done} log` }).click();
  await page.waitForSelector('#viewer:not([hidden]) pre');
  result.task_log = await page.locator('#viewer-body').textContent();
  await view('tasks');

  // Sessions: a routed one in two lanes, a plain one with its write as a diff.
  await tab('Sessions');
  await page.waitForSelector(`#sessions tr[data-id="${ids.session_routed}"]`);
  result.sessions = await rows('sessions');
  await page.getByRole('button', { name: `open session ${ids.session_routed} transcript` }).click();
  await page.waitForSelector('#viewer-body .lanes');
  result.lanes = await page.locator('#viewer-body .lane h3').allTextContents();
  result.executor = await page.locator('#viewer-body .lane').nth(1).textContent();
  await view('session-routed');
  await page.getByRole('button', { name: `open session ${ids.session_plain} transcript` }).click();
  await page.waitForSelector('#viewer-body .transcript');
  // What the session changed: from before its first checkpoint to after its last.
  await page.getByRole('button', { name: 'show what the session changed' }).click();
  await page.waitForSelector('#session-change pre.diff, #session-change p');
  result.session_change = await page.locator('#session-change').textContent();
  await page.locator('#viewer-body details.call summary').first().click();
  result.plain_diff = await page.locator('#viewer-body details.call .diff .add').allTextContents();
  // Rendered as the terminal UI renders it: the call in one line, the answer's Markdown.
  result.plain_rendered = {
    call: await page.locator('#viewer-body details.call summary').first().textContent(),
    strong: await page.locator('#viewer-body .msg.assistant strong').allTextContents(),
    items: await page.locator('#viewer-body .msg.assistant li').allTextContents(),
    code: await page.locator('#viewer-body .msg.assistant code').allTextContents(),
  };
  await view('session-plain');

  // Workers: a managed worker with its turns, cost and last answer.
  await tab('Workers');
  await page.waitForSelector(`#workers tr[data-id="${ids.worker}"]`);
  result.workers = await rows('workers');
  await view('workers');

  // Events: all of them, then one log kind.
  await tab('Events');
  await page.waitForSelector('#events tbody tr:not(.spacer)');
  result.events_count = await page.locator('#ev-count').textContent();
  result.events_rows = await page.locator('#events tbody tr:not(.spacer)').count();
  await page.selectOption('#ev-kind', 'flow');
  await settle();
  result.flow_events = await page.locator('#ev-count').textContent();
  await view('events');

  // Cost: by model, by workflow (against its budget), by role, by day.
  await tab('Cost');
  await page.waitForSelector('#cost-chart svg');
  result.cost = {};
  for (const by of ['model', 'workflow', 'role', 'day']) {
    await page.selectOption('#cost-by', by);
    await settle();
    result.cost[by] = await rows('cost');
  }
  result.cost_total = await page.locator('#cost-total').textContent();
  await view('cost');

  // A URL per view: what a click opened has an address; the address, pasted into a new page or
  // reloaded, shows the same; the back button closes what a click opened.
  await tab('Workflows');
  await page.getByRole('button', { name: `open workflow ${ids.workflow_failed}` }).click();
  await page.waitForFunction((i) => document.getElementById('h-detail').textContent === `Workflow ${i}`, ids.workflow_failed);
  result.addresses = { clicked: new URL(page.url()).hash };
  await page.goBack();
  await settle();
  result.addresses.back = { hash: new URL(page.url()).hash, detail_hidden: await page.locator('#detail').isHidden() };
  const fresh = await (await browser.newContext({ viewport: { width: 1400, height: 1000 } })).newPage();
  fresh.on('pageerror', (e) => errors.push(String(e)));
  const opened = async (hash, ready, read) => {
    await fresh.goto(`${base}${hash}`);
    await fresh.waitForSelector(ready);
    return fresh.locator(read).first().textContent();
  };
  result.addresses.workflow = await opened(`#/workflows/${ids.workflow_failed}`, '#detail:not([hidden]) #graph svg', '#h-detail');
  result.addresses.flow = await opened(`#/flows/${ids.flow_done}`, '#flow-detail:not([hidden]) #units tbody tr', '#h-flow');
  result.addresses.session = await opened(`#/sessions/${ids.session_plain}`, '#viewer:not([hidden]) .transcript', '#h-viewer');
  result.addresses.task = await opened(`#/tasks/${ids.task_done}`, '#viewer:not([hidden]) pre', '#h-viewer');
  result.addresses.events_tab = await opened('#/events', '#tab-events:not([hidden])', '#tabs button[aria-pressed="true"]');
  await fresh.reload();
  await fresh.waitForSelector('#tab-events:not([hidden])');
  result.addresses.reloaded = await fresh.locator('#tabs button[aria-pressed="true"]').textContent();

  // 800 px wide: the lists scroll inside their boxes, the page never sideways.
  await fresh.setViewportSize({ width: 800, height: 900 });
  const sideways = () => fresh.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  await fresh.goto(`${base}#/workflows`);
  await fresh.waitForSelector(`#workflows tr[data-id="${ids.workflow_running}"]`);
  result.narrow = { workflows: await sideways() };
  await fresh.goto(`${base}#/workflows/${ids.workflow_done}`);
  await fresh.waitForSelector('#detail:not([hidden]) #graph svg');
  result.narrow.workflow = await sideways();
  await fresh.screenshot({ path: `${shots}/narrow-workflow.png`, fullPage: true });
  await fresh.goto(`${base}#/sessions/${ids.session_routed}`);
  await fresh.waitForSelector('#viewer-body .lanes');
  result.narrow.session = await sideways();
  result.errors = errors;
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
