// Debian's headless Chromium as every browser test starts it: no sandbox (CI runs as root), no
// GPU, no background networking, updates or sync. `extra` adds flags (the bench's `--js-flags`).
import { chromium } from 'playwright-core';

export const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync'];

/** @param {string[]} [extra] */
export function launch(extra = []) {
  return chromium.launch({
    executablePath: process.env.BATON_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: [...ARGS, ...extra],
  });
}
