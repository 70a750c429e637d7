import express from 'express';
import express4 from 'express4';
import { afterEach, describe, expect, it } from 'vitest';
import { webProfiler } from '../src/index.js';
import { listen, readRows, tempDb, type Running } from './helpers.js';

const running: Running[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.close()));
});

type Lib = typeof express;
const stackOf = (app: any): { name: string }[] => (app._router ?? app.router).stack;
const json = { headers: { accept: 'application/json' } };

/**
 * An app with the profiler where users put it; a middleware that waits before passing on (the first
 * request is inside the router, past it, when the profiler moves in front), and one after it.
 */
function appWith(lib: Lib, mount: (app: any, profiler: ReturnType<typeof webProfiler>) => void) {
  const database = tempDb();
  const profiler = webProfiler({ database, onError: () => {} });
  const app = lib();
  mount(app, profiler);
  let release: () => void = () => {};
  const held = new Promise<void>((resolve) => (release = resolve));
  // Said when a held request has reached this layer: the test waits for that, not for a time.
  let reached: () => void = () => {};
  const arrived = new Promise<void>((resolve) => (reached = resolve));
  app.use(async function waits(req: any, _res: any, next: any) {
    if (req.query.hold !== undefined) {
      reached();
      await held;
    }
    next();
  });
  app.use(function after(_req: any, res: any, next: any) {
    res.setHeader('X-After', 'ran');
    next();
  });
  app.get('/hello', (_req: any, res: any) => res.send('Hello'));
  return { app, profiler, database, release, arrived };
}

for (const [version, lib] of [['Express 5', express], ['Express 4', express4]] as [string, Lib][]) {
  describe(`${version}: the profiler first in the app runs in front of its router`, () => {
    it('leaves the stack after the first request, which still runs every layer; what is recorded is the same', async () => {
      const { app, profiler, database, release, arrived } = appWith(lib, (a, p) => a.use(p));
      const r = await listen(app);
      running.push(r);
      const layersBefore = stackOf(app).map((l) => l.name);
      expect(layersBefore).toContain('webProfilerMiddleware');
      const first = fetch(`${r.url}/hello?hold`);
      await arrived;
      // The first request is waiting past the profiler's layer; the profiler has moved in front meanwhile.
      expect(stackOf(app).map((l) => l.name)).toEqual(layersBefore.filter((n) => n !== 'webProfilerMiddleware'));
      release();
      const answers = [await first, await fetch(`${r.url}/hello`)];
      for (const answer of answers) {
        expect(answer.status).toBe(200);
        expect(answer.headers.get('x-after')).toBe('ran');
        expect(answer.headers.get('x-debug-token')).toMatch(/^[0-9a-f]{6}$/);
        expect(await answer.text()).toBe('Hello');
      }
      profiler.flush();
      const rows = readRows(database);
      expect(rows.map((row) => row.token)).toEqual(answers.map((a) => a.headers.get('x-debug-token')));
      for (const row of rows) {
        expect(row.collectors.performance.spans.map((s: { name: string }) => s.name)).toEqual(['waits', 'after', 'route GET /hello', 'handler']);
        expect(row.collectors.routing.route).toBe('/hello');
      }
      // The pages, answered in front of the router: the JSON list's link to older profiles is the profiler's own.
      for (let i = 0; i < 10; i++) await (await fetch(`${r.url}/hello`)).text();
      profiler.flush();
      const list = (await (await fetch(`${r.url}/_profiler/search?limit=10`, json)).json()) as { profiles: unknown[]; next: string | null };
      expect(list.profiles).toHaveLength(10);
      expect(list.next).toMatch(/^\/_profiler\/search\?/);
      profiler.close();
    });
  });

  describe(`${version}: anywhere else the profiler keeps its layer`, () => {
    /** How to mount it, and the stack its layer stays in. */
    const cases: [string, (app: any, p: ReturnType<typeof webProfiler>) => { stack: { name: string }[] } | any][] = [
      ['after middleware of the app', (a, p) => {
        a.use(function first(_req: any, _res: any, next: any) {
          next();
        });
        a.use(p);
        return a._router ?? a.router;
      }],
      ['under a path', (a, p) => {
        a.use('/hello', p);
        return a._router ?? a.router;
      }],
      ['in a Router', (a, p) => {
        const router = lib.Router();
        router.use(p);
        a.use(router);
        return router;
      }],
    ];
    for (const [name, mount] of cases) {
      it(name, async () => {
        let kept: { stack: { name: string }[] } | undefined;
        const { app, profiler, database, release } = appWith(lib, (a, p) => (kept = mount(a, p)));
        release();
        const r = await listen(app);
        running.push(r);
        const answers = [await fetch(`${r.url}/hello`), await fetch(`${r.url}/hello`)];
        for (const answer of answers) {
          expect(answer.headers.get('x-after')).toBe('ran');
          expect(await answer.text()).toBe('Hello');
        }
        expect(kept!.stack.map((l) => l.name)).toContain('webProfilerMiddleware');
        profiler.flush();
        expect(readRows(database).map((row) => row.token)).toEqual(answers.map((a) => a.headers.get('x-debug-token')));
        profiler.close();
      });
    }
  });
}

describe('a sub-app that mounts the profiler first', () => {
  it('records its requests in front of its own router, the parent app untouched', async () => {
    const database = tempDb();
    const profiler = webProfiler({ database, onError: () => {} });
    const sub = express();
    sub.use(profiler);
    sub.get('/ping', (_req, res) => res.send('pong'));
    const app = express();
    app.get('/outside', (_req, res) => res.send('outside'));
    app.use('/admin', sub);
    const r = await listen(app);
    running.push(r);
    const answers = [await fetch(`${r.url}/admin/ping`), await fetch(`${r.url}/admin/ping`), await fetch(`${r.url}/outside`)];
    expect(await Promise.all(answers.map((a) => a.text()))).toEqual(['pong', 'pong', 'outside']);
    expect(answers.map((a) => a.headers.has('x-debug-token'))).toEqual([true, true, false]);
    expect(stackOf(sub).map((l) => l.name)).not.toContain('webProfilerMiddleware');
    profiler.flush();
    expect(readRows(database).map((row) => row.url)).toEqual([`${r.url}/admin/ping`, `${r.url}/admin/ping`]);
    profiler.close();
  });
});
