import express from 'express';
import express4 from 'express4';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { logger, webProfiler, type ProfilerOptions } from '../src/index.js';
import { LANE_UNKNOWN, LANES, laneTokenSource, tokenSource } from '../src/recording/token.js';
import { hostname } from 'node:os';
import { holderRuns, laneHost } from '../src/storage/sink.js';
import { ProfileStore } from '../src/storage/store.js';
import { listen, readRows, tempDb, tempDir, type Running } from './helpers.js';

const running: Running[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.close()));
});

/** A small app with the profiler mounted the documented way. */
async function start(options: ProfilerOptions = {}, lib: typeof express = express) {
  const database = options.database ?? tempDb();
  const errors: string[] = [];
  const profiler = webProfiler({ database, onError: (m) => errors.push(m), ...options });
  const app = lib();
  app.use(profiler);
  app.use(lib.json({ limit: '20mb' }));
  app.use(lib.raw({ type: 'application/octet-stream', limit: '20mb' }));
  app.get('/hello', (req, res) => {
    req.log.info('saying hello', { who: 'world' });
    res.json({ hello: 'world' });
  });
  app.post('/users/:id', (req, res) => {
    logger.warn('updating user', { id: req.params.id, password: 'hunter2' });
    console.log('console line for %s', req.params.id);
    res.status(201).cookie('session', 'set-cookie-secret').json({ ok: true, token: 'response-token-secret' });
  });
  // Logs after an await, where no router layer is running.
  app.get('/later/:id', async (req, res) => {
    await new Promise((resolve) => setTimeout(resolve, Number(req.query.wait ?? 1)));
    logger.info(`logger after await ${req.params.id}`);
    console.log(`console after await ${req.params.id}`);
    res.send('done');
  });
  // Node's own API, bypassing Express: headers passed to writeHead, or flushed before the body.
  app.get('/raw', (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.end('raw');
  });
  app.get('/flushed', (_req, res) => {
    res.flushHeaders();
    res.write('part one, ');
    res.end('part two');
  });
  app.post('/upload', (req, res) => res.json({ size: (req.body as Buffer).length }));
  app.get('/fail', (_req, _res, next) => next(new Error('the database is gone')));
  app.get('/robots', (_req, res) => res.set('X-Robots-Tag', 'all').send('ok'));
  app.use(profiler.notFound);
  app.use(profiler.errorHandler);
  // Express's own final handler answers what no route took.
  const server = await listen(app);
  running.push(server);
  return { ...server, profiler, database, errors };
}

describe('recorder: headers', () => {
  it('announces the token, its profile link and noindex on every response', async () => {
    const { url } = await start();
    for (const path of ['/hello', '/nowhere', '/fail', '/raw', '/flushed']) {
      const res = await fetch(url + path);
      const token = res.headers.get('x-debug-token');
      expect(token).toMatch(/^[0-9a-f]{6}$/);
      expect(res.headers.get('x-debug-token-link')).toBe(`${url}/_profiler/${token}`);
      expect(res.headers.get('x-robots-tag')).toBe('noindex');
    }
  });

  it("keeps the app's own X-Robots-Tag", async () => {
    const { url } = await start();
    expect((await fetch(`${url}/robots`)).headers.get('x-robots-tag')).toBe('all');
  });

  it('records without debug mode, and then sends no X-Robots-Tag', async () => {
    const { url } = await start({ debug: false });
    const res = await fetch(`${url}/hello`);
    expect(res.headers.get('x-debug-token')).toMatch(/^[0-9a-f]{6}$/);
    expect(res.headers.get('x-robots-tag')).toBeNull();
  });

  it('honours a longer token length', async () => {
    const { url } = await start({ tokenLength: 12 });
    expect((await fetch(`${url}/hello`)).headers.get('x-debug-token')).toMatch(/^[0-9a-f]{12}$/);
  });

  it('is silent when disabled: no token, no file written', async () => {
    const database = path.join(tempDir(), 'never.sqlite');
    const { url } = await start({ enabled: false, debug: false, database });
    const res = await fetch(`${url}/hello`);
    expect(res.status).toBe(200);
    expect(res.headers.get('x-debug-token')).toBeNull();
    expect(() => readFileSync(database)).toThrow();
  });
});

describe('recorder: the stored profile', () => {
  it('stores index columns and every panel as JSON', async () => {
    const { url, profiler, database } = await start();
    const res = await fetch(`${url}/users/42?page=2`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie: 'theme=dark' },
      body: JSON.stringify({ name: 'Ada' }),
    });
    expect(res.status).toBe(201);
    const token = res.headers.get('x-debug-token')!;
    profiler.flush();
    const [row] = readRows(database).filter((r) => r.token === token);
    expect(row).toMatchObject({ method: 'POST', url: `${url}/users/42?page=2`, status: 201, ip: '127.0.0.1', type: 'request' });
    expect(row.duration).toBeGreaterThan(0);
    const c = row.collectors;
    expect(c.request.query).toEqual({ page: '2' });
    expect(c.request.body).toMatchObject({ kind: 'json', json: { name: 'Ada' } });
    expect(c.request.params).toEqual({ id: '42' });
    expect(Object.keys(c.request.cookies)).toEqual(['theme']);
    expect(c.response.status).toBe(201);
    expect(c.response.body.kind).toBe('json');
    expect(c.routing).toMatchObject({ route: '/users/:id', params: { id: '42' } });
    expect(c.logs.lines.map((l: any) => [l.level, l.message, l.channel])).toEqual([
      ['warn', 'updating user', 'app'],
      ['info', 'console line for 42', 'console'],
    ]);
    expect(c.performance.total).toBeGreaterThan(0);
    expect(c.performance.spans.map((s: any) => s.name)).toEqual(expect.arrayContaining(['jsonParser', 'route POST /users/:id']));
    expect(c.config).toMatchObject({ node: process.version, express: expect.stringMatching(/^5\./), debug: true });
    expect(c.exception).toBeUndefined();
  });

  it('keeps a body written in chunks, and the response head as it went out', async () => {
    const { url, profiler, database } = await start();
    const token = (await fetch(`${url}/flushed`)).headers.get('x-debug-token');
    profiler.flush();
    const { response } = readRows(database).find((r) => r.token === token)!.collectors;
    expect(response.body).toMatchObject({ kind: 'text', text: 'part one, part two', size: 18, truncated: false });
    expect(response.headers).toMatchObject({ 'x-debug-token': token, 'transfer-encoding': 'chunked', connection: 'keep-alive' });
  });

  it('records the exception of a request that failed', async () => {
    const { url, profiler, database } = await start();
    const token = (await fetch(`${url}/fail`)).headers.get('x-debug-token');
    profiler.flush();
    const row = readRows(database).find((r) => r.token === token)!;
    expect(row.status).toBe(500);
    expect(row.collectors.exception.status).toBe(500);
    const [thrown] = row.collectors.exception.chain;
    expect(thrown).toMatchObject({ class: 'Error', message: 'the database is gone' });
    // The error has no status of its own: only the status sent is said.
    expect(thrown.status).toBeUndefined();
    const appFrame = thrown.frames.find((f: any) => f.kind === 'app');
    expect(appFrame.file).toContain('recorder.test.ts');
    expect(appFrame.excerpt.lines.join('\n')).toContain("next(new Error('the database is gone'))");
  });

  it("does not record the profiler's own pages", async () => {
    const { url, profiler, database } = await start();
    await fetch(`${url}/_profiler/abcdef`);
    await fetch(`${url}/_wdt/abcdef`);
    await fetch(`${url}/hello`);
    profiler.flush();
    expect(readRows(database).map((r) => new URL(r.url).pathname)).toEqual(['/hello']);
  });

  it('writes after the response, in batches', async () => {
    const { url, profiler, database, errors } = await start({ flushInterval: 60_000 });
    await Promise.all(Array.from({ length: 20 }, () => fetch(`${url}/hello`)));
    expect(readRows(database)).toHaveLength(0);
    expect(profiler.flush(), errors.join('\n')).toBe(20);
    expect(readRows(database)).toHaveLength(20);
  });

  it("takes the client address as the app's trust proxy setting says", async () => {
    const database = tempDb();
    const profiler = webProfiler({ database, onError: () => {} });
    const app = express();
    app.set('trust proxy', 'loopback');
    app.use(profiler);
    app.get('/where', (req, res) => res.send(req.ip));
    const server = await listen(app);
    running.push(server);
    const forwarded = await fetch(`${server.url}/where?from=proxy`, { headers: { 'x-forwarded-for': '203.0.113.7' } });
    expect(await forwarded.text()).toBe('203.0.113.7');
    await fetch(`${server.url}/where`);
    profiler.flush();
    const [viaProxy, direct] = readRows(database);
    expect(viaProxy.ip).toBe('203.0.113.7');
    expect(viaProxy.collectors.request.query).toEqual({ from: 'proxy' });
    expect(direct.ip).toMatch(/^(::ffff:)?127\.0\.0\.1$/);
    expect(direct.collectors.request.query).toEqual({});
  });

  it('works the same on Express 4', async () => {
    const { url, profiler, database } = await start({}, express4 as unknown as typeof express);
    const res = await fetch(`${url}/users/7`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":1}' });
    expect(res.status).toBe(201);
    profiler.flush();
    const [row] = readRows(database);
    expect(row.token).toBe(res.headers.get('x-debug-token'));
    expect(row.collectors.routing.route).toBe('/users/:id');
    expect(row.collectors.config.express).toMatch(/^\d+\./);
    expect(row.collectors.logs.lines).toHaveLength(2);
    // Express 4's layers are entered through handle_request: the timeline is there too.
    expect(row.collectors.performance.spans.map((s: { name: string }) => s.name)).toEqual(expect.arrayContaining(['jsonParser', 'route POST /users/:id']));
    const failed = await fetch(`${url}/fail`, { headers: { accept: 'text/plain' } });
    expect(failed.status).toBe(500);
    profiler.flush();
    expect(readRows(database).find((r) => r.token === failed.headers.get('x-debug-token'))!.collectors.exception.chain[0].message).toBe('the database is gone');
  });
});

describe('recorder: the exported logger and console', () => {
  const linesOf = (database: string, token: string | null) =>
    readRows(database).find((r) => r.token === token)!.collectors.logs.lines.map((l: any) => l.message);

  it("lands lines logged after an await in their own request's profile, alone or side by side", async () => {
    const { url, profiler, database } = await start();
    logger.info('logged while no request runs');
    const first = (await fetch(`${url}/later/1`)).headers.get('x-debug-token');
    // Side by side, finishing in the opposite order from their start.
    const tokens = await Promise.all([2, 3, 4, 5].map(async (id) =>
      [id, (await fetch(`${url}/later/${id}?wait=${40 - id * 5}`)).headers.get('x-debug-token')] as const));
    profiler.flush();
    expect(linesOf(database, first)).toEqual(['logger after await 1', 'console after await 1']);
    for (const [id, token] of tokens) expect(linesOf(database, token)).toEqual([`logger after await ${id}`, `console after await ${id}`]);
  });
});

describe('recorder: secrets and bodies', () => {
  it('never writes credentials to the SQLite file', async () => {
    const { url, profiler, database } = await start({ redactKeys: ['password', 'token', 'cookie', 'secret', 'ssn'] });
    await fetch(`${url}/users/1?token=query-token-secret&ssn=123-45-6789`, {
      method: 'POST',
      headers: {
        authorization: 'Bearer header-bearer-secret',
        'proxy-authorization': 'Basic cHJveHktc2VjcmV0',
        cookie: 'sid=cookie-value-secret; theme=dark-cookie-secret',
        'content-type': 'application/json',
      },
      body: JSON.stringify({ user: 'ada', password: 'body-password-secret', nested: { client_secret: 'nested-secret' } }),
    });
    profiler.close();
    const bytes = readFileSync(database).toString('latin1') + readWal(database);
    for (const secret of ['header-bearer-secret', 'cHJveHktc2VjcmV0', 'cookie-value-secret', 'dark-cookie-secret', 'body-password-secret',
      'nested-secret', 'query-token-secret', '123-45-6789', 'hunter2', 'set-cookie-secret', 'response-token-secret']) {
      expect(bytes, secret).not.toContain(secret);
    }
    const [row] = readRows(database);
    expect(row.collectors.request.headers.authorization).toBe('Bearer [redacted]');
    expect(row.collectors.request.body.json).toEqual({ user: 'ada', password: '[redacted]', nested: { client_secret: '[redacted]' } });
    expect(row.url).toContain('token=[redacted]');
    expect(row.collectors.response.headers['set-cookie'][0]).toMatch(/^session=\[redacted\]; Path=\//);
  });

  it('keeps bodies up to the limit, marked truncated beyond it', async () => {
    const { url, profiler, database } = await start({ bodyLimit: 1024 });
    const big = { text: 'x'.repeat(5000) };
    await fetch(`${url}/users/1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(big) });
    profiler.flush();
    const { body } = readRows(database)[0].collectors.request;
    // Cut on the request's thread to about the limit: the structure stays, the long string is cut and marked.
    expect(body).toMatchObject({ kind: 'json', truncated: true, size: JSON.stringify(big).length });
    expect(body.json.text).toMatch(/^x+…$/);
    expect(JSON.stringify(body.json).length).toBeLessThanOrEqual(1024 + 16);
  });

  it('describes binary bodies without storing their bytes', async () => {
    const { url, profiler, database } = await start();
    const bytes = Buffer.alloc(200_000, 0);
    bytes.write('MARKER-IN-BINARY', 100);
    const res = await fetch(`${url}/upload`, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: bytes });
    expect(await res.json()).toEqual({ size: 200_000 });
    profiler.close();
    expect(readRows(database)[0].collectors.request.body).toEqual({ size: 200_000, contentType: 'application/octet-stream', kind: 'binary', truncated: false });
    expect(readFileSync(database).toString('latin1')).not.toContain('MARKER-IN-BINARY');
  });
});

describe('recorder: failures stay inside the profiler', () => {
  it('a collector that throws costs only its own panel', async () => {
    const { url, profiler, database, errors } = await start({
      collectors: [{ id: 'broken', title: 'Broken', collect: () => { throw new Error('collector exploded'); } }],
    });
    const res = await fetch(`${url}/hello`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ hello: 'world' });
    await fetch(`${url}/hello`);
    profiler.flush();
    const rows = readRows(database);
    expect(rows).toHaveLength(2);
    expect(rows[0].collectorErrors).toEqual({ broken: 'collector exploded' });
    expect(rows[0].collectors.request.method).toBe('GET');
    // Told once, however many profiles it spoils.
    expect(errors).toEqual(['collector "broken" failed: collector exploded']);
  });

  it('values that cannot cross to the writer thread (a function, a socket) are stored as plain text', async () => {
    const database = tempDb();
    const profiler = webProfiler({ database, onError: () => {} });
    const app = express();
    app.use(profiler);
    app.use((req, _res, next) => {
      req.body = { name: 'ada', validate() {} };
      next();
    });
    app.get('/odd', (req, res) => {
      req.log.info('with a socket', { socket: req.socket, at: new Date(0) });
      res.send('ok');
    });
    const server = await listen(app);
    running.push(server);
    const res = await fetch(`${server.url}/odd`);
    expect(await res.text()).toBe('ok');
    await fetch(`${server.url}/odd`);
    profiler.flush();
    const rows = readRows(database);
    expect(rows).toHaveLength(2);
    expect(rows[0].collectors.request.body.json).toEqual({ name: 'ada', validate: '[function validate]' });
    expect(rows[0].collectors.logs.lines[0].message).toBe('with a socket');
    expect(rows[0].collectors.logs.lines[0].context.at).toBe('1970-01-01T00:00:00.000Z');
  });

  it("':memory:' keeps its profiles in a private temporary file, gone on close", async () => {
    const { url, profiler } = await start({ database: ':memory:' });
    const token = (await fetch(`${url}/hello`)).headers.get('x-debug-token')!;
    profiler.flush();
    const page = await fetch(`${url}/_profiler/${token}?panel=request`, { headers: { accept: 'application/json' } });
    expect(page.status).toBe(200);
    expect((await page.json()).data.method).toBe('GET');
    const file = profiler.store()!.location;
    expect(file).not.toBe(':memory:');
    expect(existsSync(file)).toBe(true);
    profiler.close();
    expect(existsSync(file)).toBe(false);
  });

  it('an unwritable storage path: the app serves, the profiler says so', async () => {
    const blocker = path.join(tempDir(), 'a-file');
    writeFileSync(blocker, 'not a directory');
    const { url, profiler, errors } = await start({ database: path.join(blocker, 'profiler.sqlite') });
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${url}/hello`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ hello: 'world' });
      expect(res.headers.get('x-debug-token')).toMatch(/^[0-9a-f]{6}$/);
    }
    expect(profiler.flush()).toBe(0);
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.join('\n')).toMatch(/cannot open profiler storage .*a-file\/profiler\.sqlite/);
    expect(profiler.store()).toBeUndefined();
  });
});

describe('tokens', () => {
  it('redraws a token that is taken, never returning it, and takes what it returns', () => {
    const taken = new Set<string>();
    const next = tokenSource(6, taken);
    for (let i = 0; i < 5000; i++) {
      const before = taken.size;
      expect(taken.has(next())).toBe(true);
      expect(taken.size).toBe(before + 1);
    }
    // With every 6-character token "taken", the source grows the token instead of looping.
    const full = tokenSource(6, { has: (t) => t.length === 6, add: () => {} });
    expect(full()).toMatch(/^[0-9a-f]{7}$/);
  });

  it('two processes drawing in their lanes never draw the same token, each knowing only its own', () => {
    // Two processes' bitmaps, neither told of the other's tokens (the milliseconds before either is
    // stored): 30,000 draws each from the whole space meet about 54 times; in two lanes, never.
    const lane = (n: number) => new Int32Array(1).fill(n);
    const draws = (source: () => string) => Array.from({ length: 30_000 }, source);
    const a = draws(laneTokenSource(6, new Set<string>(), lane(0)));
    const b = new Set(draws(laneTokenSource(6, new Set<string>(), lane(1))));
    expect(a.every((t) => /^[0-9a-f]{6}$/.test(t))).toBe(true);
    expect(new Set(a).size).toBe(30_000);
    expect(a.filter((t) => b.has(t))).toEqual([]);
    // Longer tokens keep the lane in their first six characters.
    const c = draws(laneTokenSource(10, new Set<string>(), lane(2)));
    expect(c.every((t) => /^[0-9a-f]{10}$/.test(t) && !b.has(t.slice(0, 6)))).toBe(true);
  });

  it('draws from the whole space before its lane is known, and long tokens when no lane is free or its lane is full', () => {
    const cell = new Int32Array(1).fill(LANE_UNKNOWN);
    const taken = new Set<string>();
    const next = laneTokenSource(6, taken, cell);
    expect(next()).toMatch(/^[0-9a-f]{6}$/);
    Atomics.store(cell, 0, LANES);
    const long = next();
    expect(long).toMatch(/^[0-9a-f]{20}$/);
    expect(taken.has(long)).toBe(true);
    // Every 6-character token taken: the lane is full, and the token is long rather than looping.
    Atomics.store(cell, 0, 3);
    expect(laneTokenSource(6, { has: (t) => t.length === 6, add: () => {} }, cell)()).toMatch(/^[0-9a-f]{20}$/);
    // Never shorter than the length asked for.
    expect(laneTokenSource(24, new Set<string>(), new Int32Array(1).fill(LANES))()).toMatch(/^[0-9a-f]{24}$/);
  });

  it('a lane is taken by one process at a time, until its holder is gone', () => {
    const file = tempDb();
    const a = ProfileStore.open(file);
    const b = ProfileStore.open(file);
    const me = (owner: string) => ({ owner, host: laneHost, pid: process.pid, seen: Date.now() });
    // Processes see each other's pids on one machine's boot, in one pid namespace (Linux names both).
    if (process.platform === 'linux') expect(laneHost).toMatch(new RegExp(`^${hostname()} [0-9a-f-]{36} pid:\\[\\d+\\]$`));
    try {
      expect(a.takeLane(LANES, me('a'), holderRuns)).toBe(0);
      expect(b.takeLane(LANES, me('b'), holderRuns)).toBe(1);
      // Its own lane again (a file reopened): the same, and no second row.
      expect(a.takeLane(LANES, me('a'), holderRuns, 0)).toBe(0);
      for (let i = 2; i < LANES; i++) expect(b.takeLane(LANES, me(`p${i}`), holderRuns)).toBe(i);
      expect(b.db.prepare('SELECT count(*) AS n FROM lanes').get()).toEqual({ n: LANES });
      // Every lane held by a running process: none for a seventeenth, whatever it prefers.
      expect(a.takeLane(LANES, me('q'), holderRuns, 3)).toBeUndefined();
      // A holder that crashed on this host (its pid runs no more) leaves its lane to the next.
      b.db.prepare('UPDATE lanes SET pid = ? WHERE owner = ?').run(2 ** 22 + 1, 'p5');
      expect(a.takeLane(LANES, me('q'), holderRuns)).toBe(5);
      // One on another host is held while it touches its lane, gone once it has not for long; its touch then says it lost the lane.
      b.db.prepare('UPDATE lanes SET host = ? WHERE owner = ?').run('elsewhere', 'p7');
      expect(a.takeLane(LANES, me('r'), holderRuns, 7)).toBeUndefined();
      b.db.prepare('UPDATE lanes SET seen = ? WHERE owner = ?').run(Date.now() - 3_600_000, 'p7');
      expect(a.takeLane(LANES, me('r'), holderRuns, 7)).toBe(7);
      expect(b.touchLane(7, 'p7', Date.now())).toBe(false);
      expect(a.touchLane(7, 'r', Date.now())).toBe(true);
      // A lane let go at close is free at once; one preferred (held before a reopen) is taken where free.
      a.releaseLane('a');
      a.releaseLane('p9');
      expect(b.takeLane(LANES, me('s'), holderRuns, 9)).toBe(9);
      expect(b.takeLane(LANES, me('t'), holderRuns, 9)).toBe(0);
    } finally {
      a.close();
      b.close();
    }
  });

  it('50,000 sequential requests give 50,000 distinct stored profiles', async () => {
    const { url, profiler, database } = await start({ maxProfiles: 100_000 });
    const { Agent, request } = await import('node:http');
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const seen = new Set<string>();
    const get = () => new Promise<string>((resolve, reject) => {
      request(`${url}/hello`, { agent }, (res) => {
        res.resume();
        res.on('end', () => resolve(String(res.headers['x-debug-token'])));
      }).on('error', reject).end();
    });
    for (let i = 0; i < 50_000; i++) seen.add(await get());
    agent.destroy();
    profiler.flush();
    expect(seen.size).toBe(50_000);
    const rows = readRows(database);
    expect(rows).toHaveLength(50_000);
    expect(new Set(rows.map((r) => r.token))).toEqual(seen);
  }, 180_000);
});

function readWal(file: string): string {
  try {
    return readFileSync(`${file}-wal`).toString('latin1');
  } catch {
    return '';
  }
}

describe('recorder: mounted sub-apps', () => {
  it('records logs, bodies and the toolbar inside a sub-app (its prototypes inherit the patched ones)', async () => {
    const database = tempDb();
    const profiler = webProfiler({ database, onError: () => {} });
    const admin = express();
    admin.get('/page', (req, res) => {
      req.log.info('inside the admin sub-app');
      res.type('html').send('<html><body>admin</body></html>');
    });
    const app = express();
    app.use(profiler);
    app.use('/admin', admin);
    app.use(profiler.notFound);
    app.use(profiler.errorHandler);
    const server = await listen(app);
    running.push(server);
    const res = await fetch(`${server.url}/admin/page`);
    const html = await res.text();
    expect(html).toContain(`<div id="wp-wdt" data-token="${res.headers.get('x-debug-token')}" hidden></div>`);
    profiler.flush();
    const [row] = readRows(database);
    expect(row.collectors.logs.lines.map((l: { message: string }) => l.message)).toEqual(['inside the admin sub-app']);
    // The profile shows the body the app wrote, without the toolbar.
    expect(row.collectors.response.body.text).toBe('<html><body>admin</body></html>');
    // The route with the path its app is mounted at.
    expect(row.collectors.routing.route).toBe('/admin/page');
  });
});

describe('recorder: a body that did not parse', () => {
  it('keeps the bytes it was sent (redacted as any body) and says why, where body-parser left req.body {}; a form is said to be one', async () => {
    const database = tempDb();
    const own = webProfiler({ database, onError: () => {} });
    const app = express();
    app.use(own);
    app.use(express.json());
    app.use(express.urlencoded({ extended: false }));
    app.post('/json', (_req, res) => res.send('parsed'));
    app.use((err: { status?: number }, _req: express.Request, res: express.Response, _next: express.NextFunction) => res.status(err.status ?? 500).send('bad body'));
    const server = await listen(app);
    try {
      const broken = await fetch(`${server.url}/json`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"password":"hunter2-broken","note":' });
      expect([broken.status, await broken.text()]).toEqual([400, 'bad body']);
      const form = await fetch(`${server.url}/json`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'note=hello&password=hunter2-form' });
      expect(await form.text()).toBe('parsed');
      own.flush();
      const rows = readRows(database);
      const body = rows.find((r) => r.token === broken.headers.get('x-debug-token'))!.collectors.request.body;
      expect(body).toMatchObject({ kind: 'text', contentType: 'application/json', size: 36 });
      expect(body.text).toBe('{"password":"[redacted]","note":');
      expect(body.unparsed).toMatch(/JSON/);
      const page = await (await fetch(`${server.url}/_profiler/${broken.headers.get('x-debug-token')}?panel=request`)).text();
      expect(page).toContain('It did not parse: ');
      const formPage = await (await fetch(`${server.url}/_profiler/${form.headers.get('x-debug-token')}?panel=request`)).text();
      expect(formPage).toContain('parsed as a form');
      expect(JSON.stringify(rows)).not.toMatch(/hunter2-(broken|form)/);
    } finally {
      await server.close();
      own.close();
    }
  });
});
