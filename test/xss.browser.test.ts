import express from 'express';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webProfiler } from '../src/index.js';
import { CHROMIUM, launch, openPage, shot } from './browser.js';
import { listen, type Running } from './helpers.js';

// Each payload, if it ever ran, would push to window.__xss or open a dialog: either fails the test.
const SCRIPT = '<script>window.__xss.push("script")</script>';
const IMG = '"><img src=x onerror="window.__xss.push(\'img\')">';
const JS_URL = 'javascript:window.__xss.push("url")';
const TEMPLATE = '<%= it.h %>{{ constructor.constructor("window.__xss.push(1)")() }}';
const ALL = [SCRIPT, IMG, JS_URL, TEMPLATE].join(' ');
// A cookie's value is hidden everywhere in its profile: its own payload, so that the others stay to be shown.
const COOKIE = '<script>window.__xss.push("cookie")</script>';

let browser: Browser;
let app: Running;
let token: string;
let notFoundToken: string;

beforeAll(async () => {
  if (!CHROMIUM) return;
  const profiler = webProfiler({ database: ':memory:', onError: () => {} });
  const e = express();
  e.use(profiler);
  e.use(express.json());
  e.post('/orders/:id', (req) => {
    req.log.warn(`log line ${ALL}`, { note: ALL });
    console.log(`console ${SCRIPT}`);
    throw new Error(`exception ${ALL}`);
  });
  e.use(profiler.notFound);
  e.use(profiler.errorHandler);
  app = await listen(e);
  const res = await fetch(`${app.url}/orders/${encodeURIComponent(IMG)}?q=${encodeURIComponent(ALL)}&${encodeURIComponent(SCRIPT)}=1`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-evil': IMG, cookie: `${encodeURIComponent('<b>c')}=${encodeURIComponent(COOKIE)}`, referer: JS_URL, accept: 'application/json' },
    body: JSON.stringify({ comment: ALL, [SCRIPT]: IMG }),
  });
  token = res.headers.get('x-debug-token')!;
  notFoundToken = (await fetch(`${app.url}/${encodeURIComponent(SCRIPT)}`, { headers: { accept: 'application/json', referer: JS_URL } })).headers.get('x-debug-token')!;
  browser = await launch();
});
afterAll(async () => {
  await browser?.close();
  await app?.close();
});

async function guardedPage(): Promise<{ page: Page; errors: string[] }> {
  const opened = await openPage(browser);
  await opened.page.addInitScript(() => {
    (window as unknown as { __xss: string[] }).__xss = [];
  });
  return opened;
}

async function expectInert(page: Page, errors: string[]) {
  expect(await page.evaluate(() => (window as unknown as { __xss: string[] }).__xss)).toEqual([]);
  expect(await page.locator('img[src="x"]').count()).toBe(0);
  expect(await page.locator('a[href^="javascript:"]').count()).toBe(0);
  expect(errors.filter((e) => e.startsWith('dialog'))).toEqual([]);
}

describe.skipIf(!CHROMIUM)('hostile values are shown, never run', () => {
  it('in every panel of the profile, the list, the search and the toolbar fragment', async () => {
    const { page, errors } = await guardedPage();
    const pages = [
      ...['request', 'response', 'exception', 'logs', 'performance', 'routing', 'config'].map((p) => `/_profiler/${token}?panel=${p}&type=request`),
      '/_profiler/', `/_profiler/search?url=${encodeURIComponent('orders')}`, `/_profiler/${notFoundToken}?panel=exception`, `/_wdt/${token}`,
      `/_profiler/${token}?panel=${encodeURIComponent(SCRIPT)}`,
    ];
    for (const path of pages) {
      await page.goto(app.url + path);
      await expectInert(page, errors);
    }
    // The text is there, escaped: what the request carried is readable.
    await page.goto(`${app.url}/_profiler/${token}?panel=exception`);
    expect(await page.locator('.exception-head h1').textContent()).toBe(`exception ${ALL}`);
    await page.goto(`${app.url}/_profiler/${token}?panel=logs`);
    expect(await page.locator('.logs').textContent()).toContain(`log line ${ALL}`);
    await page.goto(`${app.url}/_profiler/${token}?panel=request`);
    await page.click('#rq-tab-headers');
    expect(await page.locator('#rq-headers').textContent()).toContain(IMG);
    await shot(page, 'xss-request-headers');
  });

  it('on the debug 404 and exception pages', async () => {
    const { page, errors } = await guardedPage();
    const missing = await page.goto(`${app.url}/${encodeURIComponent(SCRIPT)}${encodeURIComponent(IMG)}`);
    expect(missing?.status()).toBe(404);
    await expectInert(page, errors);
    expect(await page.locator('.exception-head h1').textContent()).toContain(encodeURIComponent(SCRIPT));
    const failed = await page.evaluate(async (url) => {
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/html' }, body: '{}' });
      return res.text();
    }, `${app.url}/orders/1`);
    await page.setContent(failed);
    await expectInert(page, errors);
  });
});
