import express from 'express';
import type { Browser } from 'playwright-core';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webProfiler } from '../src/index.js';
import { CHROMIUM, launch, openPage } from './browser.js';
import { listen, tempDb, type Running } from './helpers.js';

let browser: Browser;
let app: Running;
let other: Running;
let token: string;

/** Fetch metadata as a browser sends it, on a raw request (fetch() may not set Sec-Fetch-*). */
function askWith(path: string, headers: Record<string, string>) {
  const url = new URL(app.url);
  return new Promise<number>((resolve, reject) => {
    httpRequest({ host: url.hostname, port: url.port, path, headers }, (res) => {
      res.resume();
      resolve(res.statusCode!);
    }).on('error', reject).end();
  });
}

beforeAll(async () => {
  const profiler = webProfiler({ database: tempDb(), onError: () => {} });
  const e = express();
  e.use(profiler);
  e.get('/api/account', (_req, res) => res.status(403).json({ error: 'forbidden', account: 'acct-77-private' }));
  app = await listen(e);
  const res = await fetch(`${app.url}/api/account`, { headers: { authorization: 'Bearer a-recorded-credential' } });
  await res.text();
  token = res.headers.get('x-debug-token')!;
  profiler.flush();
  // A page on another port of the same host (same-site, another origin): it tries to run and read what the profiler serves.
  const page = express();
  page.get('/', (_req, res) => res.type('html').send(`<!doctype html><title>elsewhere</title>
<script>
  window.leaked = [];
  window.require = function () { return { equal() {}, deepEqual() {}, ok() {} }; };
  window.process = { env: {} };
  window.test = function (name, fn) { window.leaked.push(name + String(fn)); };
  window.loaded = 0;
</script>
<script src="${app.url}/_profiler/${token}/test?runner=jest" onload="window.loaded++" onerror="window.loaded++"></script>
<script src="${app.url}/_profiler/${token}/fetch" onload="window.loaded++" onerror="window.loaded++"></script>
<script>
  fetch(${JSON.stringify(`${app.url}/_profiler/${token}?panel=request`)}, { credentials: 'include' }).then((r) => r.text()).then((t) => window.leaked.push(t), () => { window.loaded++; });
</script>
<a id="open" href="${app.url}/_profiler/${token}">the profile</a>`));
  other = await listen(page);
  if (CHROMIUM) browser = await launch();
});

afterAll(async () => {
  await browser?.close();
  await app?.close();
  await other?.close();
});

describe('a page of another origin', () => {
  it.skipIf(!CHROMIUM)('cannot run or read a profile\'s export or page; a link to the profile still opens it', async () => {
    const { page } = await openPage(browser);
    await page.goto(`${other.url}/`);
    await page.waitForFunction(() => (window as unknown as { loaded: number }).loaded >= 3, undefined, { timeout: 30_000 });
    expect(await page.evaluate(() => (window as unknown as { leaked: string[] }).leaked)).toEqual([]);
    await Promise.all([page.waitForURL(`${app.url}/_profiler/${token}`), page.click('#open')]);
    expect((await page.textContent('body'))!.replace(/\s+/g, ' ')).toContain(`403 GET ${app.url}/api/account`);
    await page.context().close();
  });

  it('gets nothing as a script, a style, an image or a fetch; a top-level navigation and a client without metadata pass', async () => {
    const path = `/_profiler/${token}/test?runner=jest`;
    for (const [site, mode, dest] of [['cross-site', 'no-cors', 'script'], ['same-site', 'no-cors', 'script'], ['same-site', 'cors', 'empty'], ['cross-site', 'no-cors', 'image'], ['same-site', 'navigate', 'iframe']]) {
      expect(await askWith(path, { 'sec-fetch-site': site, 'sec-fetch-mode': mode, 'sec-fetch-dest': dest }), `${site} ${mode} ${dest}`).toBe(403);
    }
    expect(await askWith(`/_profiler/${token}`, { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document' })).toBe(200);
    expect(await askWith(path, { 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'cors', 'sec-fetch-dest': 'empty' })).toBe(200);
    expect(await askWith(path, {})).toBe(200);
  });
});
