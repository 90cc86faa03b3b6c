// A Flow another process left blocked, in `baton serve`'s page in headless Chromium: its view
// shows units × steps and the reviewer's findings; it is abandoned from "Needs you" (the
// confirmation accepted) and the page follows it; axe finds no violation.
//
// node flow.mjs BASE_URL FLOW_ID SCREENSHOT_DIR
import { launch } from './launch.mjs';
import { AxeBuilder } from '@axe-core/playwright';
import { mkdirSync } from 'node:fs';

const [base, flow, shots] = process.argv.slice(2);
mkdirSync(shots, { recursive: true });
const browser = await launch();
const result = { violations: [] };
const axe = async (page) => {
  const r = await new AxeBuilder({ page }).analyze();
  result.violations.push(...r.violations.map((v) => `${v.id}: ${v.help}`));
};
try {
  const context = await browser.newContext();
  const page = await context.newPage();
  page.on('dialog', (d) => d.accept());
  await page.goto(base);
  await page.getByRole('button', { name: 'Flows', exact: true }).click();
  const row = `#flows tbody tr[data-id="${flow}"]`;
  await page.waitForSelector(`${row} td.needs`, { timeout: 30000 });
  await page.getByRole('button', { name: `open flow ${flow}` }).click();
  await page.waitForSelector('#flow-detail:not([hidden]) #units tbody tr');
  result.units = await page.locator('#units tbody tr').evaluateAll((trs) =>
    trs.map((tr) => [...tr.children].slice(0, 6).map((td) => td.textContent)));
  result.notes = await page.locator('#flow-notes').textContent();
  // Unit b: its validation output, its review and the exact packet its reviewer got, as a diff.
  await page.getByRole('button', { name: 'unit b details' }).click();
  await page.getByRole('button', { name: 'show the exact packet' }).click();
  await page.waitForSelector('#packet pre.diff');
  result.validation = await page.locator('#unit-detail pre.output').allTextContents();
  result.packetAdded = await page.locator('#packet .add').allTextContents();
  await page.screenshot({ path: `${shots}/flow.png`, fullPage: true });
  await axe(page);
  const card = page.locator(`form.need[aria-label="flow ${flow}"]`);
  await card.getByRole('button', { name: 'abandon' }).click();
  await page.waitForSelector(`${row} td.done`, { timeout: 30000 });
  result.last = await page.locator(`${row} td`).nth(3).textContent();
  await page.screenshot({ path: `${shots}/flow-abandoned.png`, fullPage: true });
  await axe(page);
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
