import express from 'express';
import { statSync } from 'node:fs';
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
  profiler = webProfiler({ database: tempDb(), onError: () => {} });
  const e = express();
  e.use(profiler);
  e.get('/', (req, res) => {
    req.log.info('home page rendered');
    res.type('html').send(`<!doctype html><html><head><title>Shop</title></head><body>
      <h1>Shop</h1><button id="load">Load orders</button><pre id="out"></pre>
      <script>document.getElementById('load').onclick = () => fetch('/api/orders').then((r) => r.json()).then((j) => { document.getElementById('out').textContent = JSON.stringify(j); });</script>
    </body></html>`);
  });
  e.get('/api/orders', (req, res) => {
    req.log.warn('orders are served from the cache');
    res.json({ orders: [1, 2] });
  });
  e.get('/checkout/:id', (req) => {
    req.log.info('checking out', { id: req.params.id });
    throw new Error('Payment gateway timed out', { cause: new Error('connect ETIMEDOUT 10.0.0.7:443') });
  });
  e.use(profiler.notFound);
  e.use(profiler.errorHandler);
  app = await listen(e);
  browser = await launch();
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
});

describe.skipIf(!CHROMIUM)('in chromium', () => {
  it('the toolbar shows on an HTML page, tracks a fetch and leads to its profile', async () => {
    const { page, errors } = await openPage(browser);
    await page.goto(`${app.url}/`);
    const bar = page.locator('#wp-wdt [role="region"]');
    await bar.waitFor();
    expect(await bar.textContent()).toContain('GET /');
    await page.click('#load');
    await page.locator('#out', { hasText: 'orders' }).waitFor();
    await page.locator('[data-wdt-ajax-count]', { hasText: '1' }).waitFor();
    await page.click('[data-wdt-ajax-toggle]');
    const row = page.locator('[data-wdt-ajax] tbody tr').first();
    expect(await row.textContent()).toContain('/api/orders');
    await shot(page, 'toolbar-light');
    await row.locator('a').click();
    await page.waitForURL(/\/_profiler\/[0-9a-f]{6}$/);
    expect(await page.locator('.summary .url').textContent()).toContain('/api/orders');
    await page.click('text=Logs');
    await page.locator('td', { hasText: 'orders are served from the cache' }).waitFor();
    expect(errors).toEqual([]);
  });

  it('the list links to a failed request, whose exception panel shows the cause and the code', async () => {
    const { page, errors } = await openPage(browser, 'dark');
    await page.goto(`${app.url}/checkout/42`, { waitUntil: 'load' });
    // Pages show what is stored: a person is slower than the writer, a test is not.
    profiler.flush();
    await page.goto(`${app.url}/_profiler`);
    expect(page.url()).toBe(`${app.url}/_profiler/`);
    await shot(page, 'list-dark');
    await page.locator('tr', { hasText: '/checkout/42' }).locator('a.row-link').click();
    await page.waitForURL(/\/_profiler\/[0-9a-f]{6}$/);
    await expect(page.locator('.exception-head h1').textContent()).resolves.toBe('Payment gateway timed out');
    expect(await page.locator('.chain').textContent()).toContain('Caused by');
    const excerpt = page.locator('.excerpt li.selected').first();
    expect(await excerpt.isVisible()).toBe(true);
    expect(await excerpt.textContent()).toContain("throw new Error('Payment gateway timed out'");
    await shot(page, 'profile-exception-dark');
    // Keyboard: the tabs move with the arrow keys.
    await page.locator('[role="tab"][aria-selected="true"]').first().focus();
    await page.keyboard.press('ArrowRight');
    expect(await page.locator('#pe-panel-logs').isVisible()).toBe(true);
    expect(await page.locator('#pe-panel-logs').textContent()).toContain('checking out');
    await page.click('text=Performance');
    await page.locator('svg.timeline').waitFor();
    await shot(page, 'profile-performance-dark');
    expect(errors).toEqual([]);
  });

  it('the debug 404 and exception pages show the message, the code excerpt and the log', async () => {
    const { page, errors } = await openPage(browser);
    const missing = await page.goto(`${app.url}/robots.txt`);
    expect(missing?.status()).toBe(404);
    expect(await page.locator('.exception-head h1').textContent()).toBe(`No route found for "GET ${app.url}/robots.txt"`);
    await shot(page, 'debug-404-light');
    const failed = await page.goto(`${app.url}/checkout/7`);
    expect(failed?.status()).toBe(500);
    expect(await page.locator('.excerpt li.selected').first().isVisible()).toBe(true);
    await page.click('#err-tab-logs');
    expect(await page.locator('#err-panel-logs').textContent()).toContain('checking out');
    const file = await shot(page, 'debug-exception-light');
    expect(statSync(file).size).toBeGreaterThan(10_000);
    profiler.flush();
    await page.click('.notice a >> nth=1');
    await page.waitForURL(/panel=exception/);
    expect(await page.locator('.exception-head h1').textContent()).toBe('Payment gateway timed out');
    expect(errors).toEqual([]);
  });

  it('reads on a narrow window, and the theme switch sticks', async () => {
    const { page } = await openPage(browser, 'light', 420);
    await page.goto(`${app.url}/_profiler/latest`);
    await page.click('#theme-switch');
    await page.click('#theme-switch');
    expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe('dark');
    await page.reload();
    expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe('dark');
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await shot(page, 'profile-narrow-dark');
  });
});
