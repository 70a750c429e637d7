import { readFileSync, statSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNginx } from './servers.js';
import { startFixture, tempDb, type FixtureApp } from './helpers.js';

const APP = path.resolve('test/fixtures/keyed-app.mjs');

const startApp = (database: string, env: Record<string, string> = {}) => startFixture(APP, [database], env);

/** What a dev server's proxy does on its defaults (http-proxy with changeOrigin, xfwd off): Host rewritten, no forwarding header. */
function devServerProxy(upstream: URL): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    const up = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: { ...req.headers, host: upstream.host } }, (answer) => {
      res.writeHead(answer.statusCode!, answer.headers);
      answer.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server })));
}

const get = (url: string, headers: Record<string, string> = {}) => fetch(url, { headers, redirect: 'manual' });

/** Everything the profiler serves, and what must never come out of it to a stranger. */
async function expectShut(base: string, token: string, headers: Record<string, string> = {}) {
  for (const page of ['/_profiler/', `/_profiler/${token}`, `/_profiler/${token}?panel=request`, '/_profiler/latest', '/_profiler/search?url=hello', `/_wdt/${token}`]) {
    for (const accept of ['text/html', 'application/json']) {
      const res = await get(base + page, { accept, ...headers });
      expect(res.status, `${page} ${accept}`).toBe(403);
      const body = await res.text();
      expect(body, page).not.toContain('/hello');
      expect(body, page).not.toMatch(/wp-test-|profiler\.key/);
    }
  }
}

describe('behind a proxy on the same machine that adds no forwarding header', () => {
  let app: FixtureApp;
  let nginx: { url: string; stop(): void } | string;
  let token: string;
  const database = tempDb();

  beforeAll(async () => {
    app = await startApp(database);
    nginx = await startNginx(new URL(app.url).host);
    const res = await get(`${app.url}/hello`);
    token = res.headers.get('x-debug-token')!;
  });
  afterAll(async () => {
    if (typeof nginx !== 'string') nginx.stop();
    await app.stop();
  });

  it("nginx's bare proxy_pass lets nobody in without the key, while the app answers through it as bare", async (ctx) => {
    if (typeof nginx === 'string') {
      if (process.env.CI) throw new Error(nginx);
      console.warn(`SKIPPED: ${nginx}`);
      return ctx.skip();
    }
    const page = await get(`${nginx.url}/hello`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<h1>hello</h1>');
    await expectShut(nginx.url, page.headers.get('x-debug-token')!);
  });

  it("a dev server's proxy (Host rewritten, no X-Forwarded-For) lets nobody in either", async () => {
    const proxy = await devServerProxy(new URL(app.url));
    try {
      await expectShut(proxy.url, token);
    } finally {
      proxy.server.close();
    }
  });

  it('a browser on this machine is asked for the key too: the profiler cannot tell it from such a proxy', async () => {
    await expectShut(app.url, token, { host: 'localhost' });
    const res = await get(`${app.url}/_profiler/${token}?panel=request`, { host: 'localhost', accept: 'text/html' });
    const page = await res.text();
    expect(page).toContain('printed a link');
    // A field for the key, which sends it to the same page (its query kept), where it becomes the cookie.
    expect(page).toContain('<input id="wp-key" type="password" name="_profiler_secret"');
    expect(page).toContain('<input type="hidden" name="panel" value="request">');
  });

  it('the developer opens the link the server printed once; its cookie opens every page, through the proxy too', async () => {
    const printed = /Profiler: (http:\/\/localhost:\d+\/_profiler\/\?_profiler_secret=([\w-]+))/.exec(app.stderr());
    expect(printed, app.stderr()).not.toBeNull();
    const key = printed![2];
    const file = database.replace(/\.sqlite$/, '.key');
    expect(readFileSync(file, 'utf8').trim()).toBe(key);
    expect(statSync(file).mode & 0o077).toBe(0);
    const opened = await get(printed![1].replace('localhost', '127.0.0.1'), { host: new URL(printed![1]).host });
    expect(opened.status).toBe(303);
    expect(opened.headers.get('location')).toBe('/_profiler/');
    const cookie = opened.headers.get('set-cookie')!.split(';')[0];
    expect(cookie).not.toContain(key);
    const via = typeof nginx === 'string' ? app.url : nginx.url;
    // Written within the app's flush interval after its response.
    await expect.poll(async () => (await get(`${via}/_profiler/${token}?panel=request`, { cookie, accept: 'application/json' })).status).toBe(200);
    expect(await (await get(`${via}/_profiler/${token}?panel=request`, { cookie, accept: 'application/json' })).text()).toContain('/hello');
    const toolbar = await get(`${via}/_wdt/${token}`, { cookie });
    expect(toolbar.status).toBe(200);
  });

  it('a restart keeps the key, so the cookie stays good; a given WEB_PROFILER_SECRET is the only key then', async () => {
    const again = await startApp(database);
    try {
      await get(`${again.url}/hello`);
      const key = readFileSync(database.replace(/\.sqlite$/, '.key'), 'utf8').trim();
      await expect.poll(() => again.stderr()).toContain(`_profiler_secret=${key}`);
    } finally {
      await again.stop();
    }
    const given = await startApp(database, { WEB_PROFILER_SECRET: 'given-staging-secret' });
    try {
      const res = await get(`${given.url}/hello`);
      expect(given.stderr()).not.toContain('_profiler_secret');
      await expectShut(given.url, res.headers.get('x-debug-token')!, { 'x-profiler-secret': readFileSync(database.replace(/\.sqlite$/, '.key'), 'utf8').trim() });
      const shown = await get(`${given.url}/_profiler/`, { 'x-profiler-secret': 'given-staging-secret' });
      expect(shown.status).toBe(200);
    } finally {
      await given.stop();
    }
  });
});
