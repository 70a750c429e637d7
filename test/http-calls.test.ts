import express from 'express';
import http from 'node:http';
import { createServer } from 'node:net';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { webProfiler } from '../src/index.js';
import { listen, tempDb, type Running } from './helpers.js';

const running: Running[] = [];
const closing: (() => void)[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.close()));
});
afterAll(() => closing.forEach((close) => close()));

/** A port nothing listens on: taken, then let go. */
const refusedPort = () => new Promise<number>((resolve) => {
  const server = createServer().listen(0, '127.0.0.1', () => {
    const { port } = server.address() as { port: number };
    server.close(() => resolve(port));
  });
});

const get = (url: string, headers: Record<string, string> = {}) => new Promise<{ status: number; body: string }>((resolve, reject) => {
  http.get(url, { headers }, (res) => {
    let body = '';
    res.setEncoding('utf8');
    res.on('data', (c) => (body += c));
    res.on('end', () => resolve({ status: res.statusCode!, body }));
  }).on('error', reject);
});

/** Two apps, each with a profiler and a store of its own: the front calls the back by fetch and by http.get. */
async function twoApps() {
  const backProfiler = webProfiler({ database: tempDb(), onError: () => {} });
  const back = express();
  back.use(backProfiler);
  back.get('/status/:name', (req, res) => res.json({ name: req.params.name, ok: true }));
  back.get('/broken', (_req, res) => res.status(503).json({ ok: false }));
  const backServer = await listen(back);

  const frontProfiler = webProfiler({ database: tempDb(), onError: () => {} });
  const front = express();
  front.use(frontProfiler);
  front.get('/dashboard', async (_req, res) => {
    const a = await (await fetch(`${backServer.url}/status/fetch`, { headers: { authorization: 'Bearer top-secret-token' } })).json();
    const b = JSON.parse((await get(`${backServer.url}/status/http?api_key=key-secret-value`)).body);
    const c = await fetch(`${backServer.url}/broken`);
    res.json({ a, b, c: c.status });
  });
  front.get('/refused/:port', async (req, res) => {
    const errors: string[] = [];
    await fetch(`http://127.0.0.1:${req.params.port}/x`).catch((err: Error) => errors.push(`fetch: ${(err.cause as { code?: string })?.code}`));
    await get(`http://127.0.0.1:${req.params.port}/y`).catch((err: NodeJS.ErrnoException) => errors.push(`http: ${err.code}`));
    res.json({ errors });
  });
  const frontServer = await listen(front);
  running.push(backServer, frontServer);
  closing.push(() => backProfiler.close(), () => frontProfiler.close());
  return { back: { ...backServer, profiler: backProfiler }, front: { ...frontServer, profiler: frontProfiler } };
}

/** An app with a profiler of its own, closed after the file. */
function recordedApp() {
  const profiler = webProfiler({ database: tempDb(), onError: () => {} });
  closing.push(() => profiler.close());
  const app = express();
  app.use(profiler);
  return { profiler, app };
}

async function json(url: string) {
  const res = await fetch(url, { headers: { accept: 'application/json' } });
  expect(res.status).toBe(200);
  return res.json();
}

describe('outgoing HTTP calls', () => {
  it('records fetch and http.get calls, and links the two apps\' profiles both ways', async () => {
    const { back, front } = await twoApps();
    const res = await fetch(`${front.url}/dashboard`);
    expect(await res.json()).toEqual({ a: { name: 'fetch', ok: true }, b: { name: 'http', ok: true }, c: 503 });
    const token = res.headers.get('x-debug-token')!;
    front.profiler.flush();
    back.profiler.flush();
    const calls = (await json(`${front.url}/_profiler/${token}?panel=http_client`)).data;
    expect(calls.count).toBe(3);
    expect(calls.errors).toBe(1);
    const [a, b, c] = calls.requests;
    expect(a).toMatchObject({ api: 'fetch', method: 'GET', url: `${back.url}/status/fetch`, status: 200, layer: 'route GET /dashboard › handler' });
    expect(b).toMatchObject({ api: 'http', method: 'GET', url: `${back.url}/status/http?api_key=[redacted]`, status: 200, layer: 'route GET /dashboard › handler' });
    expect(b.caller).toMatch(/http-calls\.test\.ts:\d+$/);
    expect(c).toMatchObject({ status: 503 });
    expect(a.requestHeaders.authorization).toBe('Bearer [redacted]');
    for (const call of calls.requests) {
      expect(call.duration).toBeGreaterThan(0);
      // The called app's profile: its token, and the link it sent.
      expect(call.token).toMatch(/^[0-9a-f]{6}$/);
      expect(call.link).toBe(`${back.url}/_profiler/${call.token}`);
      const child = await json(`${back.url}/_profiler/${call.token}`);
      expect(child.parent).toBe(token);
      const page = await (await fetch(`${back.url}/_profiler/${call.token}`)).text();
      expect(page).toContain(`<dt>Called by</dt><dd><a href="${front.url}/_profiler/${token}"`);
    }
    const page = await (await fetch(`${front.url}/_profiler/${token}?panel=http_client`)).text();
    expect(page).toContain(`<a class="tag link" href="${back.url}/_profiler/${a.token}"`);
    expect(page).not.toContain('top-secret-token');
    expect(page).not.toContain('key-secret-value');
  });

  it('links only to profilers on hosts it knows: a Called by or a called service\'s link to another host is text', async () => {
    const profiler = webProfiler({ database: tempDb(), onError: () => {} });
    const app = express();
    app.use(profiler);
    // A service that answers with a link of its own choosing, as any called service could.
    app.get('/service', (_req, res) => res.set('x-debug-token', 'abcdef').set('x-debug-token-link', 'https://evil.example/_profiler/abcdef').json({ ok: true }));
    app.get('/calls', async (_req, res) => res.json(await (await fetch(`${server.url}/service`)).json()));
    const server = await listen(app);
    try {
      // Called by: a client claims a caller on another host.
      const called = await fetch(`${server.url}/calls`, { headers: { 'x-debug-parent-token': 'fedcba', 'x-debug-parent-link': 'https://evil.example/_profiler/fedcba' } });
      await called.text();
      profiler.flush();
      const token = called.headers.get('x-debug-token')!;
      const page = await (await fetch(`${server.url}/_profiler/${token}`)).text();
      expect(page).toContain('<dt>Called by</dt>');
      // Shown as the header it came in (text), never as a link.
      expect(page).not.toContain('href="https://evil.example');
      const calls = (await json(`${server.url}/_profiler/${token}?panel=http_client`)).data;
      expect(calls.requests[0]).toMatchObject({ token: 'abcdef' });
      expect(calls.requests[0].link).toBeUndefined();
      const panel = await (await fetch(`${server.url}/_profiler/${token}?panel=http_client`)).text();
      expect(panel).not.toContain('href="https://evil.example');
    } finally {
      await server.close();
      profiler.close();
    }
  });

  it('records calls to a refused port with their error, for fetch and http.get alike', async () => {
    const { front } = await twoApps();
    const port = await refusedPort();
    const res = await fetch(`${front.url}/refused/${port}`);
    expect((await res.json()).errors).toEqual(['fetch: ECONNREFUSED', 'http: ECONNREFUSED']);
    front.profiler.flush();
    const calls = (await json(`${front.url}/_profiler/${res.headers.get('x-debug-token')}?panel=http_client`)).data;
    expect(calls.requests.map((c: any) => [c.api, c.url, c.status, c.error?.code ?? c.error?.message])).toEqual([
      ['fetch', `http://127.0.0.1:${port}/x`, undefined, expect.stringMatching(/ECONNREFUSED|fetch failed/)],
      ['http', `http://127.0.0.1:${port}/y`, undefined, 'ECONNREFUSED'],
    ]);
    expect(calls.errors).toBe(2);
    const toolbar = await json(`${front.url}/_wdt/${res.headers.get('x-debug-token')}`);
    expect(toolbar).toMatchObject({ calls: 2, callErrors: 2 });
  });

  it('sends the parent token on calls to loopback hosts, and a called app ignores one that is no token', async () => {
    const seen: (string | undefined)[] = [];
    const sink = await listen((req: http.IncomingMessage, res: http.ServerResponse) => {
      seen.push(req.headers['x-debug-parent-token'] as string | undefined);
      res.end('ok');
    });
    running.push(sink);
    const { profiler, app } = recordedApp();
    app.get('/call', async (_req, res) => {
      await (await fetch(sink.url.replace('127.0.0.1', 'localhost'))).text();
      await get(sink.url);
      res.send('done');
    });
    const server = await listen(app);
    running.push(server);
    const res = await fetch(`${server.url}/call`);
    expect(await res.text()).toBe('done');
    expect(seen).toEqual([res.headers.get('x-debug-token'), res.headers.get('x-debug-token')]);
    // A request arriving with a parent that is no token records none.
    const forged = await fetch(`${server.url}/nothing`, { headers: { 'x-debug-parent-token': '../../etc' } });
    await forged.text();
    profiler.flush();
    expect((await json(`${server.url}/_profiler/${forged.headers.get('x-debug-token')}`)).parent).toBeNull();
  });

  it('leaves calls of real shapes as they are: raw-array headers, a Uint8Array body, a call outside any request', async () => {
    const seen: { headers: string[]; body: string }[] = [];
    const sink = await listen((req: http.IncomingMessage, res: http.ServerResponse) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        seen.push({ headers: req.rawHeaders, body });
        res.end('ok');
      });
    });
    running.push(sink);
    const { profiler, app } = recordedApp();
    app.get('/raw', (_req, res) => {
      // Headers as a raw array are fixed when the request is made: nothing can be added, and nothing breaks.
      const out = http.request(sink.url, { method: 'POST', headers: ['Host', new URL(sink.url).host, 'X-Twice', 'a', 'X-Twice', 'b', 'Content-Length', '3'] }, (r) => {
        r.resume();
        r.on('end', () => res.send('sent'));
      });
      out.end(new Uint8Array([104, 105, 33]));
    });
    const server = await listen(app);
    running.push(server);
    const res = await fetch(`${server.url}/raw`);
    expect(await res.text()).toBe('sent');
    expect(seen[0].body).toBe('hi!');
    expect(seen[0].headers.filter((_h, i, all) => i % 2 === 0 && all[i] === 'X-Twice')).toHaveLength(2);
    await (await fetch(sink.url)).text();
    profiler.flush();
    const calls = (await json(`${server.url}/_profiler/${res.headers.get('x-debug-token')}?panel=http_client`)).data;
    expect(calls.requests).toMatchObject([{ api: 'http', method: 'POST', status: 200 }]);
  });
});
