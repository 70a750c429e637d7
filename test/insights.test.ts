import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import express from 'express';
import express4 from 'express4';
import { rateLimit } from 'express-rate-limit';
import { Redis } from 'ioredis';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { webProfiler } from '../src/index.js';
import Database from './fixtures/better-sqlite3.cjs';
import { listen, tempDb, type Running } from './helpers.js';
import { openReader } from '../src/storage/open.js';
import { insightsOf } from '../src/storage/insights.js';
import { PgProfileStore } from '../src/storage/pg-store.js';
import { ProfileStore } from '../src/storage/store.js';
import { regressionsOf } from '../src/web/insights.js';
import { WaitingSums } from '../src/storage/insight-sums.js';

/**
 * Insights across requests: a known mix of requests, and what each card of /_profiler/insights
 * (and its JSON twin, and MCP's `insights`) says of it, in its order, each row linked to the profile
 * that shows it: on SQLite and PostgreSQL, for Express 4 and 5.
 */
const pgUrl = inject('pgUrl');
const redisUrl = inject('redisUrl');
const KEY = 'insights-key';
const spin = (ms: number) => {
  const end = performance.now() + ms;
  while (performance.now() < end);
};

const stores: [string, () => string | undefined][] = [['SQLite', () => tempDb()], ['PostgreSQL', () => pgUrl]];
let schemas = 0;

describe.each(stores.flatMap(([store, database]) => [[store, database, 'Express 5', express], [store, database, 'Express 4', express4]] as const))('%s, %s: a known mix', (storeName, databaseOf, _expressName, expressOf) => {
  const database = databaseOf();
  const skip = database === undefined;
  const schema = `insights_${process.pid}_${++schemas}`;
  let server: Running;
  let closed: Running;
  let profiler: ReturnType<typeof webProfiler>;
  let redis: Redis | undefined;
  const db = new Database(':memory:');
  db.exec("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO items (name) VALUES ('a'), ('b'), ('c'), ('d'), ('e'), ('f')");
  const tokens: Record<string, string[]> = {};
  let json: any;

  beforeAll(async () => {
    if (skip) return;
    profiler = webProfiler({ database: database!, schema, secret: KEY, insights: true, onError: () => {} });
    if (redisUrl) redis = new Redis(redisUrl);
    closed = await listen((_req: unknown, res: { end(): void }) => res.end());
    const gone = `${closed.url}/prices/42`;
    await closed.close();
    const app = (expressOf as typeof express)();
    app.use(profiler);
    app.get('/items/:id', (req, res) => {
      if (req.query.as) (req as { user?: unknown }).user = { id: 3, username: String(req.query.as) };
      res.json(db.prepare('SELECT name FROM items WHERE id = ?').get(req.params.id));
    });
    // The slow one: 40 ms of the request's own work, one statement.
    app.get('/report/:id', (_req, res) => {
      spin(40);
      res.json(db.prepare('SELECT count(*) AS n FROM items').get());
    });
    // A likely N+1: six statements from one line.
    app.get('/list', (req, res) => {
      const names = [];
      for (let id = 1; id <= 6; id++) names.push(db.prepare('SELECT name FROM items WHERE id = ?').get(id));
      req.log.warn(`stock low for item ${names.length}`);
      res.json(names);
    });
    app.get('/boom/:id', (req) => {
      throw new Error(`order ${req.params.id} cannot be priced`);
    });
    app.use('/limited', rateLimit({ windowMs: 60_000, limit: 1, legacyHeaders: false, standardHeaders: false }));
    app.get('/limited', (_req, res) => res.send('within'));
    app.get('/price', async (_req, res) => {
      await fetch(gone).catch(() => {});
      res.send('no price');
    });
    app.get('/cached/:id', async (req, res) => {
      const key = `item:${req.params.id}`;
      const hit = await redis!.get(key);
      if (hit === null) await redis!.set(key, 'x', 'EX', 60);
      res.send(hit ?? 'miss');
    });
    app.use(profiler.notFound);
    app.use(profiler.errorHandler);
    server = await listen(app);
    const call = async (name: string, url: string, headers: Record<string, string> = {}) => {
      const res = await fetch(server.url + url, { headers });
      await res.arrayBuffer();
      (tokens[name] ??= []).push(res.headers.get('x-debug-token')!);
    };
    for (let i = 0; i < 4; i++) await call('items', `/items/${i + 1}?as=ada`);
    for (let i = 0; i < 3; i++) await call('report', `/report/${i}`);
    for (let i = 0; i < 2; i++) await call('list', '/list');
    await call('boom', '/boom/7', { accept: 'application/json' });
    await call('boom', '/boom/8', { accept: 'application/json' });
    await call('limited', '/limited');
    await call('limited', '/limited');
    await call('price', '/price');
    if (redis) {
      await redis.del('item:1', 'item:2');
      for (const id of [1, 1, 2]) await call('cached', `/cached/${id}`);
    }
    await profiler.run('nightly import', async () => {
      db.prepare('SELECT count(*) FROM items').get();
    });
    json = await (await fetch(`${server.url}/_profiler/insights`, { headers: { accept: 'application/json', 'x-profiler-secret': KEY } })).json();
  });
  afterAll(async () => {
    await server?.close();
    redis?.disconnect();
    await profiler?.close();
  });

  it.skipIf(skip)('routes: by total time, with their percentiles, errors, statements and N+1, each linked to its slowest request', async () => {
    const routes = json.routes as any[];
    expect(routes[0]).toMatchObject({ key: 'GET /report/:id', requests: 3, statements: { median: 1, max: 1 }, errors: 0 });
    expect(routes[0].p50).toBeGreaterThanOrEqual(40);
    expect(tokens.report).toContain(routes[0].token);
    const byKey = Object.fromEntries(routes.map((r) => [r.key, r]));
    expect(byKey['GET /list']).toMatchObject({ requests: 2, statements: { median: 6, max: 6 }, nPlusOne: 2 });
    expect(byKey['GET /boom/:id']).toMatchObject({ requests: 2, errors: 2 });
    expect(byKey['GET /items/:id']).toMatchObject({ requests: 4, statements: { median: 1, max: 1 } });
    expect(routes.map((r) => r.total)).toEqual([...routes.map((r) => r.total)].sort((a, b) => b - a));
    expect(json.fixFirst).toMatchObject({ card: 'routes', key: 'GET /report/:id', token: routes[0].token });
    // The slowest request is the one linked.
    const slowest = await Promise.all(tokens.report.map(async (t) => (await (await fetch(`${server.url}/_profiler/${t}`, { headers: { accept: 'application/json', 'x-profiler-secret': KEY } })).json()).duration));
    expect(routes[0].max).toBeCloseTo(Math.max(...slowest), 1);
  });

  it.skipIf(skip)('statements, failures, calls, cache, commands, warnings and users, each as counted', () => {
    const statements = Object.fromEntries((json.statements as any[]).map((s) => [s.key, s]));
    expect(statements['SELECT name FROM items WHERE id = ?']).toMatchObject({ count: 16, requests: 6, routes: ['GET /items/:id', 'GET /list'] });
    expect(statements['SELECT name FROM items WHERE id = ?'].lines[0]).toMatch(/insights\.test\.ts:\d+$/);
    expect(json.failures.map((f: any) => [f.kind, f.key, f.requests])).toEqual([
      ['exception', 'Error: order # cannot be priced', 2],
      ['refusal', 'express-rate-limit: # counted against a limit of #', 1],
    ]);
    expect(json.failures[0].routes).toEqual(['GET /boom/:id']);
    expect(tokens.boom).toContain(json.failures[0].token);
    expect(json.calls).toEqual([expect.objectContaining({ key: `GET ${new URL(closed.url).host}/prices/:id`, requests: 1, bad: 1, token: tokens.price[0] })]);
    if (redis) expect(json.cache).toEqual([expect.objectContaining({ key: 'GET item:*', count: 3, bad: 2, requests: 3 })]);
    expect(json.commands).toEqual([expect.objectContaining({ key: 'RUN nightly import', requests: 1, errors: 0 })]);
    expect(json.warnings).toEqual([expect.objectContaining({ key: 'stock low for item #', count: 2, requests: 2 })]);
    expect(json.users).toEqual([expect.objectContaining({ key: 'ada', requests: 4 })]);
    // p95 of four requests: the slowest one.
    expect(json.users[0].max).toBeGreaterThan(0);
    expect(json.users[0].p95).toBe(json.users[0].max);
    expect(json.requests).toBe(Object.values(tokens).flat().length + 1);
  });

  it.skipIf(skip)('the page: each card, its rows linked, its pictures drawn without script', async () => {
    const html = await (await fetch(`${server.url}/_profiler/insights`, { headers: { 'x-profiler-secret': KEY } })).text();
    expect(html).toContain('<span class="badge s-client">Fix first</span> <strong>GET /report/:id</strong>');
    for (const title of ['Routes', 'Statements', 'Exceptions and refusals', 'Outgoing calls', 'Cache keys', 'Jobs and commands', 'Missing translations and warnings', 'Who']) expect(html).toContain(`<h2>${title}</h2>`);
    expect(html).toContain(`<a class="mono" href="/_profiler/${json.routes[0].token}">GET /report/:id</a>`);
    // Each route's times as bars: the report's three requests all past 20 ms.
    expect(html).toMatch(/GET \/report\/:id<\/a>.*?<svg class="bars" role="img" aria-label="Requests by time: (\d+ up to (50|100|200|500) ms(, )?)+"/s);
    expect(html).toContain('N+1 × 2');
    expect(html).not.toContain('<script>');
  });

  it.skipIf(skip || storeName !== 'SQLite')('MCP\'s insights answers the same top rows as the page', async () => {
    const mcp = new Client({ name: 'test', version: '1.0.0' });
    await mcp.connect(new StdioClientTransport({ command: process.execPath, args: [path.resolve('dist/cli.js'), 'mcp', '--db', database!], stderr: 'pipe' }));
    try {
      const result = (await mcp.callTool({ name: 'insights', arguments: { rows: 5 } })) as { structuredContent: any };
      const answer = result.structuredContent.recorded;
      expect(answer.fixFirst).toEqual(json.fixFirst);
      expect(answer.routes.map((r: any) => [r.key, r.token])).toEqual(json.routes.slice(0, 5).map((r: any) => [r.key, r.token]));
      expect(answer.statements.map((s: any) => s.key)).toEqual(json.statements.slice(0, 5).map((s: any) => s.key));
      expect(answer.failures.map((s: any) => s.key)).toEqual(json.failures.slice(0, 5).map((s: any) => s.key));
    } finally {
      await mcp.close();
    }
  });

  it.skipIf(skip)('a period counts only its own requests, and a profile deleted takes its counts with it', async () => {
    const ask = async (query: string) => (await fetch(`${server.url}/_profiler/insights?${query}`, { headers: { accept: 'application/json', 'x-profiler-secret': KEY } })).json();
    const before = await ask(`start=0&end=${json.period.from - 1}`);
    expect(before.requests).toBe(0);
    expect((await ask('period=hour')).requests).toBe(json.requests);
    // Retention's way out, as `web-profiler purge` takes it: the profiles of the boom route go, and their counts with them.
    const store = openReader(database!, schema);
    try {
      const boomAt = Math.max(...(await Promise.all(tokens.boom.map(async (t) => (await store.read(t))!.time))));
      await store.purge(boomAt + 1);
    } finally {
      await store.close();
    }
    const after = await ask(`start=0&end=${Date.now() + 1}`);
    expect(after.routes.map((r: any) => r.key)).not.toContain('GET /boom/:id');
    expect(after.failures.map((f: any) => f.kind)).not.toContain('exception');
    expect(after.requests).toBeLessThan(json.requests);
  });
});

describe.each(stores)('%s: regressions between two periods', (_name, databaseOf) => {
  const database = databaseOf();
  it.skipIf(database === undefined)('after a restart, a route made slower and given one more statement is flagged against before it; an unchanged one is not', async () => {
    const schema = `regress_${process.pid}_${++schemas}`;
    const db = new Database(':memory:');
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY)');
    // The app as it was, then as a change left it: one process each, on one store.
    const run = async (slower: boolean) => {
      const profiler = webProfiler({ database: database!, schema, secret: KEY, insights: true, onError: () => {} });
      const app = express();
      app.use(profiler);
      app.get('/changed', (_req, res) => {
        db.prepare('SELECT count(*) FROM t').get();
        if (slower) {
          spin(25);
          db.prepare('SELECT max(id) FROM t').get();
        }
        res.send('ok');
      });
      app.get('/same', (_req, res) => res.json(db.prepare('SELECT count(*) FROM t').get()));
      const server = await listen(app);
      for (let i = 0; i < 20; i++) for (const route of ['/changed', '/same']) await (await fetch(server.url + route)).arrayBuffer();
      return { profiler, server };
    };
    const before = await run(false);
    await before.server.close();
    await before.profiler.close();
    const { profiler, server } = await run(true);
    try {
      const ask = async (accept: string) => fetch(`${server.url}/_profiler/insights?period=all&compare=start`, { headers: { accept, 'x-profiler-secret': KEY } });
      const answer = await (await ask('application/json')).json();
      const flagged = answer.regressions.filter((r: any) => r.flagged).map((r: any) => [r.key, r.metric]);
      expect(flagged).toEqual(expect.arrayContaining([['GET /changed', 'p50'], ['GET /changed', 'p95'], ['GET /changed', 'statements a request']]));
      expect(flagged.filter(([key]: string[]) => key === 'GET /same')).toEqual([]);
      // Since this start, the default period: this process's requests only.
      expect((await (await fetch(`${server.url}/_profiler/insights`, { headers: { accept: 'application/json', 'x-profiler-secret': KEY } })).json()).requests).toBe(40);
      const page = await (await ask('text/html')).text();
      expect(page).toMatch(/GET \/changed<\/a><\/td><td>p95<\/td>.*<span class="badge s-client">grew<\/span>/);
    } finally {
      await server.close();
      await profiler.close();
    }
  });
});

/**
 * The sums by the minute and the hour, as the store keeps them: profiles a minute apart over four
 * hours, written as the writer writes them, read over periods that cut hours, compared at a time,
 * and pruned: each answer against the one counted from the profiles themselves.
 */
describe.each(stores)('%s: sums by the minute and the hour', (_name, databaseOf) => {
  const database = databaseOf();
  const MIN = 60_000;
  const HOUR = 3_600_000;
  const start = Math.floor(Date.now() / HOUR) * HOUR - 6 * HOUR;
  type Seeded = { time: number; token: string; route: string; ms: number; statements: number; failed: boolean };
  const seeded: Seeded[] = [];
  for (let i = 0; i < 240; i++) {
    // GET /a every minute, 1 to 10 ms, 8 ms more and a statement more from the third hour on; GET /b every other, 100 ms.
    const later = i >= 120;
    seeded.push({ time: start + i * MIN + 7_000, token: (0x200000 + i * 2).toString(16), route: 'GET /a', ms: 1 + (i % 10) + (later ? 8 : 0), statements: 1 + (i % 3) + (later ? 1 : 0), failed: i % 20 === 0 });
    if (i % 2 === 0) seeded.push({ time: start + i * MIN + 31_000, token: (0x200001 + i * 2).toString(16), route: 'GET /b', ms: 100, statements: 2, failed: false });
    // Twenty requests each side of 1 ms, but for two later ones of 30 ms (GET /c: pauses) or three (GET /d: its tail grew).
    if (i % 6 === 0) {
      const slow = (of: number) => later && (i - 120) / 6 < of;
      seeded.push({ time: start + i * MIN + 41_000, token: (0x300000 + i).toString(16), route: 'GET /c', ms: slow(2) ? 30 : 1, statements: 1, failed: false });
      seeded.push({ time: start + i * MIN + 42_000, token: (0x400000 + i).toString(16), route: 'GET /d', ms: slow(3) ? 30 : 1, statements: 1, failed: false });
    }
  }
  const rowOf = (p: Seeded) => ({
    summary: { token: p.token, parent: null, ip: '10.0.0.1', method: 'GET', url: p.route.slice(4), status: p.failed ? 500 : 200, time: p.time, duration: p.ms, type: 'request' },
    data: '{}',
    insights: { since: 0, facts: [
      { kind: 'route', key: p.route, n: p.statements, ms: p.ms, peak: p.ms, bad: p.failed ? 1 : 0 },
      { kind: 'statement', key: `SELECT * FROM ${p.route.slice(5)} WHERE id = ?`, n: p.statements, ms: p.statements * 0.5, peak: 0.5, bad: 0, line: '/app/routes.js:9', route: p.route },
    ] },
  });
  const exact = (list: Seeded[]) => {
    const sorted = list.map((p) => p.ms).sort((a, b) => a - b);
    const counts = list.map((p) => p.statements).sort((a, b) => a - b);
    const rank = (values: number[], q: number) => values[Math.ceil(q * values.length) - 1];
    return { requests: list.length, total: list.reduce((a, p) => a + p.ms, 0), max: sorted[sorted.length - 1], errors: list.filter((p) => p.failed).length, p50: rank(sorted, 0.5), p95: rank(sorted, 0.95), statements: rank(counts, 0.5) };
  };
  const schema = `sums_${process.pid}_${++schemas}`;
  let store: ReturnType<typeof openReader> & { insert?: unknown };

  beforeAll(async () => {
    if (database === undefined) return;
    store = openReader(database, schema);
    const rows = seeded.map(rowOf);
    // In batches, as the writer writes: some buckets take several.
    for (let i = 0; i < rows.length; i += 50) {
      const batch = rows.slice(i, i + 50) as never;
      if (store instanceof ProfileStore) store.insertSerialised(batch);
      else await (store as PgProfileStore).insert(batch);
    }
  });
  afterAll(async () => {
    await store?.close();
  });

  it.skipIf(database === undefined)('a period that cuts hours counts each profile in it once, its percentiles within a bin', async () => {
    for (const period of [{ from: start + 30 * MIN, to: start + 210 * MIN - 1 }, { from: start, to: start + 4 * HOUR - 1 }, { from: start + 61 * MIN, to: start + 119 * MIN - 1 }, { from: 0, to: Date.now() }]) {
      const found = await insightsOf(store, period);
      // A minute is in a period when it starts in it: the profiles of the minutes that do.
      const inside = seeded.filter((p) => p.time - (p.time % MIN) >= period.from && p.time - (p.time % MIN) <= period.to);
      for (const route of ['GET /a', 'GET /b']) {
        const want = exact(inside.filter((p) => p.route === route));
        const row = found.routes.find((r) => r.key === route)!;
        expect(row).toMatchObject({ requests: want.requests, max: want.max, errors: want.errors, statements: { median: want.statements } });
        expect(row.total).toBeCloseTo(want.total, 6);
        // A bin's upper bound: never under the exact value, and within a bin (16 %) over it.
        for (const q of ['p50', 'p95'] as const) {
          expect(row[q]).toBeGreaterThanOrEqual(want[q]);
          expect(row[q]).toBeLessThanOrEqual(want[q] * 1.16);
        }
        expect(row.histogram.reduce((a, b) => a + b, 0)).toBe(want.requests);
      }
      expect(found.requests).toBe(inside.length);
      const statement = found.statements.find((t) => t.key === 'SELECT * FROM a WHERE id = ?')!;
      expect(statement).toMatchObject({ requests: inside.filter((p) => p.route === 'GET /a').length, count: inside.filter((p) => p.route === 'GET /a').reduce((a, p) => a + p.statements, 0), routes: ['GET /a'], lines: ['/app/routes.js:9'] });
      // The slowest request of a route is the one linked.
      const slowest = inside.filter((p) => p.route === 'GET /a').reduce((a, b) => (b.ms >= a.ms ? b : a));
      expect(found.routes.find((r) => r.key === 'GET /a')!.token).toBe(slowest.token);
    }
  });

  it.skipIf(database === undefined)('compared at a time: the route that grew is flagged, to the minute; the one that did not is not, nor a p95 two pauses moved', async () => {
    const changes = await regressionsOf(store, { from: 0, to: Date.now() }, start + 120 * MIN);
    const flagged = changes.filter((r) => r.flagged).map((r) => [r.key, r.metric]);
    expect(flagged).toEqual(expect.arrayContaining([['GET /a', 'p50'], ['GET /a', 'p95'], ['GET /a', 'statements a request'], ['SELECT * FROM a WHERE id = ?', 'runs a request'], ['GET /d', 'p95']]));
    expect(flagged.filter(([key]) => /\/[bc]\b| [bc] /.test(key))).toEqual([]);
    // Two requests of twenty moved GET /c's p95 (the 19th), not beyond noise: three did GET /d's.
    expect(changes.find((r) => r.key === 'GET /c' && r.metric === 'p95')).toMatchObject({ before: 1, after: 30, flagged: false });
    const p50 = changes.find((r) => r.key === 'GET /a' && r.metric === 'p50')!;
    expect(p50.before).toBeLessThan(7);
    expect(p50.after).toBeGreaterThan(12);
  });

  it.skipIf(database === undefined)('retention: what a pruned profile added is counted nowhere, what came after it still is', async () => {
    const kept = 100;
    let gone: string[] | undefined = [];
    do gone = await (store as ProfileStore).prune(kept, undefined, Date.now());
    while (gone !== undefined && gone.length > 0);
    const stored = seeded.slice(-kept);
    const newestGone = Math.max(...seeded.slice(0, -kept).map((p) => p.time));
    const found = await insightsOf(store, { from: 0, to: Date.now() });
    // Counted: the profiles kept whose minute began after the newest one pruned.
    const counted = stored.filter((p) => p.time - (p.time % MIN) > newestGone);
    expect(found.requests).toBe(counted.length);
    expect(counted.length).toBeGreaterThan(kept - 5);
    // The page says from when it counts: the minute after the newest profile retention deleted.
    expect(found.countedFrom).toBe(newestGone - (newestGone % MIN) + MIN);
    for (const route of ['GET /a', 'GET /b']) expect(found.routes.find((r) => r.key === route)!.requests).toBe(counted.filter((p) => p.route === route).length);
    // And a purge of the rest leaves nothing.
    await store.purge();
    expect((await insightsOf(store, { from: 0, to: Date.now() })).requests).toBe(0);
  });

  it.skipIf(database === undefined)('sums written after retention took their profiles (as the writer writes them, up to a second late) are counted nowhere', async () => {
    const waiting = new WaitingSums();
    const write = async (rows: ReturnType<typeof rowOf>[], now: boolean) => {
      const sums = waiting.forTransaction(now);
      if (store instanceof ProfileStore) store.insertSerialised(rows as never, 0, undefined, sums.add);
      else await (store as PgProfileStore).insert(rows as never, sums.add);
      sums.committed();
    };
    const late = seeded.slice(0, 40).map((p) => ({ ...p, token: `a${p.token}` }));
    // After the horizon the earlier tests' purge left (their newest profile's time).
    const kept = seeded.slice(40, 60).map((p) => ({ ...p, token: `b${p.token}`, time: p.time + 5 * HOUR }));
    // Stored, their sums waiting; then retention takes them all; then their sums land, with the next batch's.
    await write(late.map(rowOf), false);
    expect((await insightsOf(store, { from: 0, to: Date.now() })).requests).toBe(0);
    await store.purge(Math.max(...late.map((p) => p.time)) + 1);
    await write(kept.map(rowOf), true);
    const found = await insightsOf(store, { from: 0, to: Date.now() });
    expect(found.requests).toBe(kept.filter((p) => p.time - (p.time % MIN) > Math.max(...late.map((q) => q.time))).length);
    expect(found.requests).toBeGreaterThan(0);
  });
});

describe('hidden once, hidden in the insights too', () => {
  it('a key an earlier request hid is in no fact of a later one; a name that is not a secret stays', async () => {
    const database = tempDb();
    const profiler = webProfiler({ database, secret: KEY, insights: true, onError: () => {} });
    const planted = 'planted7Qw8Er9Ty0Ui1Op2As3Df4Gh';
    // Its numbers would be a pattern's '#': it is cut before the pattern is made.
    const numbered = 'ak-8842-Zq9sEcReTpArT77x';
    const app = express();
    app.use(profiler);
    app.get('/keyed', (_req, res) => res.send('ok'));
    app.get('/retry', (req, res) => {
      req.log.warn(`retrying with key ${planted} for tokenName ci-deploy, then ${numbered}`);
      res.send('retried');
    });
    const server = await listen(app);
    try {
      await (await fetch(`${server.url}/keyed`, { headers: { 'x-api-key': planted, 'x-auth-token': numbered } })).arrayBuffer();
      await (await fetch(`${server.url}/retry`)).arrayBuffer();
      const json = await (await fetch(`${server.url}/_profiler/insights`, { headers: { accept: 'application/json', 'x-profiler-secret': KEY } })).json();
      expect(json.warnings.map((w: any) => w.key)).toEqual(['retrying with key [redacted] for tokenName ci-deploy, then [redacted]']);
      await profiler.flush();
      const file = readFileSync(database).toString('latin1') + (existsSync(`${database}-wal`) ? readFileSync(`${database}-wal`).toString('latin1') : '');
      expect(file).not.toContain(planted);
      expect(file).not.toContain('Zq9sEcReTpArT');
    } finally {
      await server.close();
      await profiler.close();
    }
  });
});

describe('off by default', () => {
  it('stores nothing for insights, and the page says how to turn them on', async () => {
    const database = tempDb();
    const profiler = webProfiler({ database, secret: KEY, onError: () => {} });
    const app = express();
    app.use(profiler);
    app.get('/x', (_req, res) => res.send('x'));
    const server = await listen(app);
    try {
      await (await fetch(`${server.url}/x`)).arrayBuffer();
      const json = await (await fetch(`${server.url}/_profiler/insights`, { headers: { accept: 'application/json', 'x-profiler-secret': KEY } })).json();
      expect(json).toMatchObject({ recording: false, requests: 0, routes: [] });
      await profiler.flush();
      const store = openReader(database, 'unused');
      try {
        expect(await store.select('SELECT count(*) AS n FROM insight_sums', [])).toEqual([{ n: 0 }]);
      } finally {
        await store.close();
      }
      const page = await (await fetch(`${server.url}/_profiler/insights`, { headers: { 'x-profiler-secret': KEY } })).text();
      expect(page).toContain('Start it with <code>webProfiler({ insights: true })</code>');
    } finally {
      await server.close();
      await profiler.close();
    }
  });
});

describe('a store that keeps less than a minute of requests', () => {
  it('counts nothing of the minute retention cut, and the page says why', async () => {
    const profiler = webProfiler({ database: tempDb(), secret: KEY, insights: true, maxProfiles: 5, onError: () => {} });
    const app = express();
    app.use(profiler);
    app.get('/x', (_req, res) => res.send('x'));
    const server = await listen(app);
    try {
      // Retention takes profiles of this very minute; a minute that ends in between starts the round again.
      let page = '';
      for (let round = 0; round < 3 && !page.includes('Nothing can be counted yet'); round++) {
        for (let i = 0; i < 12; i++) await (await fetch(`${server.url}/x`)).arrayBuffer();
        await profiler.flush();
        // A period of its own each round: an answer is kept for 10 s by its period.
        page = await (await fetch(`${server.url}/_profiler/insights?start=${Date.now() - 3_600_000}&end=${Date.now() + 1}`, { headers: { 'x-profiler-secret': KEY } })).text();
      }
      expect(page).toContain('retention keeps less than a minute of requests');
      expect(page).toMatch(/<strong>0<\/strong>\s+requests and commands/);
    } finally {
      await server.close();
      await profiler.close();
    }
  });
});

describe('sums that wait on the writer side', () => {
  it('are written when due or asked for, and a transaction that failed adds nothing', () => {
    const fact = (key: string) => ({ kind: 'route' as const, key, n: 0, ms: 1, peak: 1, bad: 0 });
    const waiting = new WaitingSums();
    const at = Date.now();
    // Stored, not due yet: nothing written, and it waits.
    const first = waiting.forTransaction(false);
    expect(first.add([{ time: at, token: 'a1', since: 0, facts: [fact('GET /a')] }])).toEqual([]);
    first.committed();
    expect(waiting.dueIn()).toBeGreaterThan(0);
    // A transaction that brings GET /b and fails (never committed).
    waiting.forTransaction(false).add([{ time: at, token: 'b1', since: 0, facts: [fact('GET /b')] }]);
    // Asked for: what waits, with this one's, and not the failed one's.
    const asked = waiting.forTransaction(true);
    const rows = asked.add([{ time: at, token: 'c1', since: 0, facts: [fact('GET /c')] }]);
    expect([...new Set(rows.map((r) => r.key))]).toEqual(['GET /a', 'GET /c']);
    expect(rows.map((r) => r.span).sort((x, y) => x - y)).toEqual([60_000, 60_000, 3_600_000, 3_600_000]);
    asked.committed();
    expect(waiting.dueIn()).toBeUndefined();
  });
});
