import express from 'express';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { webProfiler, type WebProfiler } from '../src/index.js';
import { CHROMIUM, launch, openPage, shot } from './browser.js';
import { listen, type Running } from './helpers.js';

const url = inject('pgUrl');
let browser: Browser;
const apps: { app: Running; profiler: WebProfiler }[] = [];

/** Two instances of one app in this process, on one PostgreSQL schema: each its own profiler, slot and name. */
beforeAll(async () => {
  if (!CHROMIUM || !url) return;
  const schema = `shared_browser_${process.pid}`;
  for (const instance of ['web-a', 'web-b']) {
    const profiler = webProfiler({ database: url, schema, instance, onError: () => {}, flushInterval: 20 });
    const e = express();
    e.use(profiler);
    e.get('/api/orders/:id', (req, res) => res.json({ id: req.params.id, served: instance }));
    e.use(profiler.notFound);
    e.use(profiler.errorHandler);
    apps.push({ app: await listen(e), profiler });
  }
  browser = await launch();
});
afterAll(async () => {
  await browser?.close();
  for (const { app, profiler } of apps) {
    await app.close();
    profiler.close();
  }
});

describe.skipIf(!CHROMIUM || !url)('a shared store, in chromium', () => {
  it("one instance's list shows the other's requests live, with the instance that served each, light and dark", async () => {
    const [a, b] = apps;
    for (const scheme of ['light', 'dark'] as const) {
      const { page, errors } = await openPage(browser, scheme);
      await page.goto(`${b.app.url}/_profiler/`);
      await expect(page.locator('th', { hasText: 'Instance' }).count()).resolves.toBe(1);
      const fromA = await fetch(`${a.app.url}/api/orders/${scheme}-1`);
      const fromB = await fetch(`${b.app.url}/api/orders/${scheme}-2`);
      const ta = fromA.headers.get('x-debug-token')!;
      const tb = fromB.headers.get('x-debug-token')!;
      const rowA = page.locator(`tr[data-token="${ta}"]`);
      await rowA.waitFor({ timeout: 30_000 });
      await page.locator(`tr[data-token="${tb}"]`).waitFor({ timeout: 30_000 });
      await expect(rowA.locator('td').nth(6).textContent()).resolves.toBe('web-a');
      await shot(page, `shared-list-${scheme}`);

      // The instance's name links to its requests only.
      await page.reload();
      await page.locator(`tr[data-token="${ta}"] a`, { hasText: 'web-a' }).click();
      await page.waitForURL(/instance=web-a/);
      const instances = await page.locator('tbody tr td:nth-child(7)').allTextContents();
      expect(instances.length).toBeGreaterThan(0);
      expect(new Set(instances.map((t) => t.trim()))).toEqual(new Set(['web-a']));

      await page.goto(`${b.app.url}/_profiler/${ta}`);
      await expect(page.locator('header.summary').textContent()).resolves.toMatch(/Served by\s*web-a/);
      await shot(page, `shared-profile-${scheme}`);
      expect(errors).toEqual([]);
      await page.context().close();
    }
  });
});
