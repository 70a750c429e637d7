import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createDemoApp } from '../src/demo/app.js';
import { configFrom } from '../src/demo/config.js';
import { CHROMIUM, launch, onFirstScreen, openPage, shot } from './browser.js';
import { listen, tempDir, type Running } from './helpers.js';

const SEED = { username: 'ada', password: 'correct horse battery staple' };
let browser: Browser;
let server: Running;
let demo: Awaited<ReturnType<typeof createDemoApp>>;
let admin: string;

beforeAll(async () => {
  if (!CHROMIUM) return;
  // As a developer runs it: every client presents the profiler's key.
  vi.stubEnv('WEB_PROFILER_TRUST_LOCAL', '');
  demo = await createDemoApp(configFrom({ APP_ENV: 'dev', STORAGE_DIR: path.join(tempDir(), 'storage') }), { seed: SEED });
  server = await listen(demo.app);
  admin = server.url.replace('127.0.0.1', 'admin.localhost');
  browser = await launch();
});
afterAll(async () => {
  vi.unstubAllEnvs();
  await browser?.close();
  await server?.close();
  demo?.close();
});

describe.skipIf(!CHROMIUM)('the demo in chromium', () => {
  it('an admin signs in, a refused authentication shows on the dashboard and in the profiler', async () => {
    const { page, errors } = await openPage(browser);
    // admin.localhost: Chromium resolves *.localhost to loopback by itself. The link npm start
    // prints (it carries the key) comes first; without it, the profiler answers 403.
    await page.goto(`${admin}/_profiler/`);
    expect(await page.locator('h1').textContent()).toBe('Access denied');
    await page.goto(`${admin}/_profiler/?_profiler_secret=${encodeURIComponent(demo.profiler.options.secret!)}`);
    expect(page.url()).toBe(`${admin}/_profiler/`);
    await page.goto(`${admin}/`);
    await page.fill('input[name="username"]', SEED.username);
    await page.fill('input[name="password"]', SEED.password);
    await page.click('button[type="submit"]');
    await page.locator('h1', { hasText: 'Dashboard' }).waitFor();

    // Another client gets its credentials wrong.
    const refused = await page.request.post(`${server.url}/api/authenticate`, { data: { username: 'mallory', password: 'hunter2' } });
    expect(refused.status()).toBe(401);
    await page.reload();
    const row = page.locator('tr', { hasText: 'mallory' });
    await row.waitFor();
    expect(await row.textContent()).toContain('127.0.0.1');
    await shot(page, 'demo-admin-dashboard');

    await row.locator('a', { hasText: 'Profiles' }).click();
    await page.waitForURL(/\/_profiler\/search\?/);
    const result = page.locator('tbody tr').first();
    expect(await result.textContent()).toContain('/api/authenticate');
    expect(await result.textContent()).toContain('401');
    await shot(page, 'demo-profiler-search');
    await result.locator('a.row-link').click();
    await page.click('.menu a:has-text("Logs")');
    await page.locator('td', { hasText: 'Authentication refused' }).waitFor();
    // The line's object, as a tree: its keys and values.
    expect(await page.locator('.logs .vt').first().textContent()).toContain('username: "mallory"');
    await page.click('.menu a:has-text("Request")');
    await page.click('button[role="tab"]:has-text("Body")');
    const body = await page.locator('#rq-body').textContent();
    expect(body).toContain('[redacted]');
    expect(body).not.toContain('hunter2');
    await shot(page, 'demo-profile-request');
    expect(errors).toEqual([]);
  });

  it('on a phone, the list\'s first rows are on the first screen; its filters open from one control', async () => {
    const { page, errors } = await openPage(browser, 'light', 390);
    await page.goto(`${server.url}/_profiler/?_profiler_secret=${encodeURIComponent(demo.profiler.options.secret!)}`);
    await page.request.post(`${server.url}/api/authenticate`, { data: { username: 'mallory', password: 'hunter2' } });
    await page.reload();
    expect(await onFirstScreen(page, 'tbody tr')).toBe(true);
    expect(await page.locator('.search-form').isVisible()).toBe(false);
    await page.click('.fold-label');
    expect(await page.locator('.search-form input[name="url"]').isVisible()).toBe(true);
    expect(errors).toEqual([]);
    await page.context().close();
  });

  it('every page, at 390 and 1280 px, light and dark: the page itself never scrolls sideways, the panel menu is one row on a phone', async () => {
    const { page } = await openPage(browser);
    await page.goto(`${server.url}/_profiler/?_profiler_secret=${encodeURIComponent(demo.profiler.options.secret!)}`);
    const refused = await page.request.post(`${server.url}/api/authenticate`, { data: { username: 'mallory', password: 'hunter2' } });
    const token = refused.headers()['x-debug-token'];
    const missing = await page.request.get(`${server.url}/no/such/page`, { headers: { accept: 'text/html' } });
    const pages: [string, string][] = [
      ['list', '/_profiler/'],
      ['search', '/_profiler/search?status_code=401&url=%2Fapi%2F&type=request'],
      ['refused', `/_profiler/${token}`],
      ['refused-logs', `/_profiler/${token}?panel=logs`],
      ['refused-db', `/_profiler/${token}?panel=db`],
      ['refused-routing', `/_profiler/${token}?panel=routing`],
      ['not-found', `/_profiler/${missing.headers()['x-debug-token']}?panel=exception`],
      ['config', `/_profiler/${token}?panel=config`],
    ];
    const cookies = await page.context().cookies();
    await page.context().close();
    for (const scheme of ['light', 'dark'] as const) {
      for (const width of [390, 1280]) {
        const { page: p, errors } = await openPage(browser, scheme, width);
        await p.context().addCookies(cookies);
        for (const [name, url] of pages) {
          await p.goto(server.url + url);
          const overflow = await p.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
          expect(overflow, `${name} ${scheme} ${width}`).toBeLessThanOrEqual(0);
          if (width === 390 && url.includes(token)) {
            const rows = await p.evaluate(() => new Set([...document.querySelectorAll('.menu li')].map((li) => Math.round(li.getBoundingClientRect().top))).size);
            expect(rows, `${name}: the panel menu's rows`).toBe(1);
          }
          await shot(p, `pages-${name}-${scheme}-${width}`, false);
        }
        expect(errors).toEqual([]);
        await p.context().close();
      }
    }
  });

  for (const scheme of ['light', 'dark'] as const) {
    for (const width of [390, 1280]) {
      it(`the profile a refused sign-in links to shows its message and warning on the first screen (${scheme}, ${width} px)`, async () => {
        const { page, errors } = await openPage(browser, scheme, width);
        await page.goto(`${server.url}/_profiler/?_profiler_secret=${encodeURIComponent(demo.profiler.options.secret!)}`);
        const refused = await page.request.post(`${server.url}/api/authenticate`, { data: { username: 'mallory', password: 'hunter2' } });
        expect(refused.status()).toBe(401);
        await page.goto(refused.headers()['x-debug-token-link']);
        expect(await page.locator('.failure-message').textContent()).toBe('Invalid credentials.');
        expect(await page.locator('.failure-lines li').first().textContent()).toContain('Authentication refused');
        expect(await onFirstScreen(page, '.failure-message')).toBe(true);
        expect(await onFirstScreen(page, '.failure-lines li')).toBe(true);
        await shot(page, `demo-refused-${scheme}-${width}`, false);
        expect(errors).toEqual([]);
        await page.context().close();
      });
    }
  }
});
