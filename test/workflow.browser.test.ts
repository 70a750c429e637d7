import express from 'express';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webProfiler, type WebProfiler } from '../src/index.js';
import { CHROMIUM, launch, openPage, shot } from './browser.js';
import { listen, tempDb, type Running } from './helpers.js';

let browser: Browser;
let app: Running;
let profiler: WebProfiler;

beforeAll(async () => {
  if (!CHROMIUM) return;
  profiler = webProfiler({ database: tempDb(), onError: () => {}, flushInterval: 20 });
  const e = express();
  e.use(profiler);
  e.use(express.json());
  e.post('/api/orders', (req, res) => {
    req.log.info('order received', { items: req.body.items?.length ?? 0 });
    if (!req.body.items?.length) {
      req.log.error('an order needs items');
      return res.status(500).json({ error: 'no items' });
    }
    res.json({ id: 'ord_1', items: req.body.items.length });
  });
  e.get('/page', (_req, res) => res.send('<!doctype html><html><body><h1>Orders</h1></body></html>'));
  e.use(profiler.notFound);
  e.use(profiler.errorHandler);
  app = await listen(e);
  browser = await launch();
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
  profiler?.close();
});

const order = (items: unknown[], secret = 'card-secret-4242') =>
  fetch(`${app.url}/api/orders`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` }, body: JSON.stringify({ items }) });

describe.skipIf(!CHROMIUM)('after a failed call, in chromium', () => {
  it('the live list gains rows while open, and holds them while paused', async () => {
    const { page, errors } = await openPage(browser, 'dark');
    await page.goto(`${app.url}/_profiler/`);
    const rows = page.locator('table[data-live] tbody tr');
    const before = await rows.count();
    const first = await order([{ sku: 'A' }]);
    await page.waitForSelector(`tr[data-token="${first.headers.get('x-debug-token')}"]`, { timeout: 30_000 });
    expect(await rows.count()).toBe(before + 1);
    await page.click('[data-live-toggle]');
    const held = await order([]);
    await page.waitForFunction(() => /1 new request waiting/.test(document.querySelector('[data-live-state]')?.textContent ?? ''), undefined, { timeout: 30_000 });
    expect(await rows.count()).toBe(before + 1);
    await page.click('[data-live-toggle]');
    await page.waitForSelector(`tr[data-token="${held.headers.get('x-debug-token')}"]`);
    expect(await rows.first().getAttribute('data-token')).toBe(held.headers.get('x-debug-token'));
    await shot(page, 'live-list-dark');
    expect(errors).toEqual([]);
    await page.context().close();
  });

  it('copies a request as cURL, and compares a 200 with a 500 of the same route, light and dark', async () => {
    const ok = await order([{ sku: 'A' }, { sku: 'B' }]);
    const failed = await order([]);
    profiler.flush();
    const [a, b] = [ok, failed].map((r) => r.headers.get('x-debug-token')!);
    for (const scheme of ['light', 'dark'] as const) {
      const { page, errors } = await openPage(browser, scheme);
      await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: app.url });
      await page.goto(`${app.url}/_profiler/${b}?panel=request`);
      await page.click('button:has-text("Copy as cURL")');
      // The command is fetched when asked, and the clipboard filled when it comes: wait for it there.
      await expect.poll(() => page.evaluate(() => navigator.clipboard.readText()), { timeout: 15_000 }).toContain(`curl -X 'POST' '${app.url}/api/orders'`);
      const copied = await page.evaluate(() => navigator.clipboard.readText());
      expect(copied).toMatch(/-H 'authorization: Bearer '"\$WP_SECRET_\d+"/);
      expect(copied).toMatch(/#   WP_SECRET_\d+: authorization/);
      expect(copied).not.toContain('card-secret-4242');
      await page.click('summary:has-text("Compare with")');
      await page.click(`a[href="/_profiler/${b}/compare/${a}"]`);
      await page.waitForSelector('.compare-table');
      const differing = await page.locator('tr.differs th[scope="row"]').allTextContents();
      expect(differing.map((t) => t.replace(' differs', '').trim())).toEqual(expect.arrayContaining(['status', 'request.body', 'response.body', 'logs']));
      await shot(page, `compare-${scheme}`);
      expect(errors).toEqual([]);
      await page.context().close();
    }
  });

  it('the toolbar says its profile is still being written while it is not stored yet, then shows', async () => {
    const { page, errors } = await openPage(browser, 'light');
    // The first two answers are what a profile not yet stored gets.
    let refused = 0;
    await page.route('**/_wdt/**', (route) => (refused++ < 2 ? route.fulfill({ status: 404, headers: { 'retry-after': '1' }, body: 'not yet' }) : route.continue()));
    await page.goto(`${app.url}/page`);
    await page.waitForSelector('#wp-wdt [role="status"]');
    expect(await page.textContent('#wp-wdt')).toContain('The profile of this request is still being written');
    await page.waitForSelector('#wp-wdt [role="region"]');
    expect(await page.textContent('#wp-wdt')).toContain('GET');
    expect(refused).toBeGreaterThanOrEqual(3);
    expect(errors).toEqual([]);
    await page.context().close();
  });
});
