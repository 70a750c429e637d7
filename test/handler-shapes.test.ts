import express5 from 'express';
import express4 from 'express4';
import { request } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { webProfiler, type WebProfiler } from '../src/index.js';
import { listen, readRows, tempDb, type Running } from './helpers.js';

type Express = typeof express5;

/** What the vhost package does: call another app as a plain handler when the Host matches. */
const vhost = (host: string, handle: (req: any, res: any, next: any) => void) => (req: any, res: any, next: any) =>
  (String(req.headers.host).split(':')[0] === host ? handle(req, res, next) : next());

/** The same app, bare or with a profiler: apps called as handlers, mounted in apps mounted in apps, the profiler mounted again inside. */
function build(express: Express, profiler?: WebProfiler) {
  const hosted = express();
  hosted.get('/v', (_req, res) => res.send('hosted by name'));
  const wrapped = express();
  wrapped.get('/w', (_req, res) => res.json({ wrapped: true }));
  const again = express();
  if (profiler) again.use(profiler);
  again.get('/t', (_req, res) => res.send('<html><body>again</body></html>'));
  const deepest = express();
  deepest.get('/deep', (req, res) => res.send(`deep ${req.baseUrl}`));
  const middle = express();
  middle.use('/c', deepest);
  const outer = express();
  outer.use('/b', middle);

  const app = express();
  if (profiler) app.use(profiler);
  app.use(vhost('hosted.localhost', hosted));
  app.use('/x', (req, res, next) => wrapped(req as never, res as never, next));
  app.use('/again', again);
  app.use('/a', outer);
  if (profiler) {
    app.use(profiler.notFound);
    app.use(profiler.errorHandler);
  }
  return app;
}

const get = (base: string, path: string, host?: string) => new Promise<{ status: number; body: string; headers: Record<string, unknown> }>((resolve, reject) => {
  request(base + path, { headers: host ? { host } : {} }, (res) => {
    let body = '';
    res.on('data', (c) => { body += c; });
    res.on('end', () => resolve({ status: res.statusCode!, body, headers: res.headers }));
  }).on('error', reject).end();
});

const cases: [string, string, string?][] = [
  ['an app called by host name (vhost)', '/v', 'hosted.localhost'],
  ['an app called from a wrapper function', '/x/w'],
  ['an app that mounts the same profiler again', '/again/t'],
  ['an app mounted in an app mounted in an app', '/a/b/c/deep'],
];

const running: Running[] = [];
const profilers: WebProfiler[] = [];
afterAll(async () => {
  for (const r of running) await r.close();
  for (const p of profilers) p.close();
});

describe.each([['Express 5', express5], ['Express 4', express4 as unknown as Express]] as const)('%s: every response through a profiled app', (_name, express) => {
  for (const [shape, path, host] of cases) {
    it(`${shape}: its headers, one profile, readable at once, and the bare answer`, async () => {
      const database = tempDb();
      const profiler = webProfiler({ database, onError: () => {} });
      profilers.push(profiler);
      const [bare, profiled] = await Promise.all([listen(build(express)), listen(build(express, profiler))]);
      running.push(bare, profiled);
      const plain = await get(bare.url, path, host);
      const res = await get(profiled.url, path, host);
      expect(res.status).toBe(plain.status);
      expect(res.body.replace(/<div id="wp-wdt"[\s\S]*<\/script>/, '')).toBe(plain.body);
      expect(res.status).toBe(200);
      const token = res.headers['x-debug-token'] as string;
      expect(token).toMatch(/^[0-9a-f]{6}$/);
      expect(res.headers['x-robots-tag']).toBe('noindex');
      expect(res.headers['x-debug-token-link']).toMatch(new RegExp(`/_profiler/${token}$`));
      const profile = await fetch(`${profiled.url}/_profiler/${token}`, { headers: { accept: 'application/json' } });
      expect(profile.status).toBe(200);
      expect((await profile.json()).url).toContain(path);
      profiler.flush();
      expect(readRows(database).map((r) => r.token)).toEqual([token]);
    });
  }
});

describe('handlers behind wrappers are named by what they are', () => {
  it("an async-error wrapper's name (asyncUtilWrap) gives way to the route; a bound handler keeps its own name", async () => {
    // express-async-handler, as written there.
    const asyncHandler = (fn: (...args: any[]) => Promise<unknown>) => function asyncUtilWrap(...args: any[]) {
      const next = args[args.length - 1];
      return Promise.resolve(fn(...args)).catch(next);
    };
    const database = tempDb();
    const profiler = webProfiler({ database, onError: () => {} });
    profilers.push(profiler);
    const app = express5();
    app.use(profiler);
    app.get('/books', asyncHandler(async (_req, res) => res.json([])));
    function showBook(this: unknown, _req: unknown, res: { json(v: unknown): void }) {
      res.json({ id: 1 });
    }
    app.get('/book', showBook.bind(null) as never);
    const server = await listen(app);
    running.push(server);
    for (const path of ['/books', '/book']) expect((await fetch(server.url + path)).status).toBe(200);
    profiler.flush();
    const spans = readRows(database).map((r) => r.collectors.performance.spans.map((s: { name: string }) => s.name));
    expect(spans).toEqual([['route GET /books', 'handler'], ['route GET /book', 'showBook']]);
  });
});
