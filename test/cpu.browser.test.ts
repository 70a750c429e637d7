import express from 'express';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webProfiler, type WebProfiler } from '../src/index.js';
import { CHROMIUM, launch, openPage, shot } from './browser.js';
import { listen, tempDb, type Running } from './helpers.js';

let browser: Browser;
let app: Running;
let profiler: WebProfiler;

function renderInvoice(lines: number): string {
  let html = '';
  for (let i = 0; i < lines; i++) html += `<li>${sortedTotals(200).join(',').length}</li>`;
  return html;
}
/** All its work in its own body, no callbacks: its samples are its own self time, whatever the load. */
function sortedTotals(n: number): number[] {
  const totals: number[] = [];
  for (let i = 0; i < n; i++) {
    const value = Math.sin(i) * 1000;
    let j = totals.length;
    for (; j > 0 && totals[j - 1] > value; j--) totals[j] = totals[j - 1];
    totals[j] = value;
  }
  return totals;
}

beforeAll(async () => {
  if (!CHROMIUM) return;
  profiler = webProfiler({ database: tempDb(), onError: () => {} });
  const e = express();
  e.use(profiler);
  e.get('/invoice', (_req, res) => res.send(`<!doctype html><html><body><h1>Invoice</h1><ul>${renderInvoice(1500)}</ul></body></html>`));
  app = await listen(e);
  browser = await launch();
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
  profiler?.close();
});

describe.skipIf(!CHROMIUM)('the CPU panel in chromium', () => {
  it('the toolbar asks for the next page load to be profiled; the flame graph zooms on a click, light and dark', async () => {
    for (const scheme of ['light', 'dark'] as const) {
      const { page, errors } = await openPage(browser, scheme);
      await page.goto(`${app.url}/invoice`);
      await page.waitForSelector('#wp-wdt [data-wdt-cpu]');
      await Promise.all([page.waitForEvent('load'), page.click('#wp-wdt [data-wdt-cpu]')]);
      await page.waitForSelector('#wp-wdt a[href$="?panel=cpu"]');
      // The cookie was one-shot: the profiled response cleared it.
      expect((await page.context().cookies()).some((c) => c.name === '_wp_profile')).toBe(false);
      await page.click('#wp-wdt a[href$="?panel=cpu"]');
      await page.waitForSelector('svg.flame');
      // The app's work, under whichever of its functions V8 left standing: it may inline
      // sortedTotals and renderInvoice into the handler once it optimizes it (Node 22 does).
      expect(await page.textContent('table')).toContain('test/cpu.browser.test.ts:');
      const frame = page.locator('svg.flame .frame:has(title:text-matches("cpu.browser.test.ts:[0-9]+"))').last();
      const before = Number(await frame.locator('rect').getAttribute('width'));
      await frame.click();
      const after = Number(await frame.locator('rect').getAttribute('width'));
      expect(after).toBeGreaterThan(before);
      await shot(page, `cpu-flame-${scheme}`);
      expect(errors).toEqual([]);
      await page.context().close();
    }
  });
});
