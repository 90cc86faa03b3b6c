// Drives `baton serve`'s page in Debian's headless Chromium: a BUILD in a worktree waits at its
// finishing choice under "Needs you"; the card shows the change a merge would land, as a diff,
// beside the choice; "keep" is clicked (the confirmation accepted) and the page follows the
// workflow to its end; axe finds no violation.
//
// node finish.mjs BASE_URL WORKFLOW_ID SCREENSHOT_DIR
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
  const card = page.locator(`form.need[aria-label="workflow ${workflow}"]`);
  await card.waitFor({ timeout: 30000 });
  result.question = await card.locator('p').first().textContent();
  result.options = await card.locator('button:not(.link)').allTextContents();
  await card.getByRole('button', { name: 'show the change it would merge' }).click();
  await card.locator('.need-change pre.diff').waitFor({ timeout: 30000 });
  result.added = await card.locator('.need-change pre.diff span.add').allTextContents();
  result.files = await card.locator('.need-change pre.diff span.file').allTextContents();
  await page.screenshot({ path: `${shots}/finish.png`, fullPage: true });
  const axe = await new AxeBuilder({ page }).analyze();
  result.violations.push(...axe.violations.map((v) => `${v.id}: ${v.help}`));
  await card.getByRole('button', { name: 'keep', exact: true }).click();
  const row = `#workflows tbody tr[data-id="${workflow}"]`;
  await page.waitForSelector(`${row} td.done`, { timeout: 60000 });
  result.last = await page.locator(`${row} td`).nth(9).textContent();
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
