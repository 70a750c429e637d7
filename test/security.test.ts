import express, { type Request } from 'express';
import { chmodSync, chownSync, mkdirSync, readFileSync, renameSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webProfiler, type WebProfiler } from '../src/index.js';
import { resolveOptions } from '../src/options.js';
import { checkAccess } from '../src/web/access.js';
import { listen, readRows, tempDb, tempDir, type Running } from './helpers.js';

/** Raw HTTP, for what fetch would normalise or refuse: backslashes, bad escapes, huge headers, a chosen Host. */
function raw(base: string, method: string, path: string, headers: Record<string, string> = {}, body?: Buffer | string) {
  const url = new URL(base);
  return new Promise<{ status: number; headers: Record<string, unknown>; body: string }>((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

function build(profiler?: WebProfiler) {
  const app = express();
  app.set('strict routing', true);
  if (profiler) app.use(profiler);
  app.use(express.json({ limit: '20mb' }));
  app.use(express.raw({ type: 'application/octet-stream', limit: '20mb' }));
  app.get('/q', (req, res) => res.json({ keys: Object.keys(req.query as object).length }));
  app.get('/items/:id', (req, res) => res.json({ id: req.params.id }));
  for (const path of ['/reset/:token', '/hooks/:webhookSecret/deliver', '/login/magic/:magicToken']) app.get(path, (_req, res) => res.send('<html><body>ok</body></html>'));
  app.post('/echo', (req, res) => res.json({ type: typeof req.body, size: JSON.stringify(req.body ?? null).length }));
  app.post('/bin', (req, res) => res.json({ bytes: Buffer.isBuffer(req.body) ? req.body.length : -1 }));
  app.get('/*rest/', (_req, res) => res.send('any path with a slash'));
  if (profiler) {
    app.use(profiler.notFound);
    app.use(profiler.errorHandler);
  }
  return app;
}

let bare: Running;
let profiled: Running;
let profiler: WebProfiler;
let db: string;

beforeAll(async () => {
  db = tempDb();
  profiler = webProfiler({ database: db, onError: () => {} });
  bare = await listen(build());
  profiled = await listen(build(profiler));
});
afterAll(async () => {
  await bare.close();
  await profiled.close();
});

describe('hostile requests: the app answers as it would without the profiler, and the profile is stored', () => {
  const cases: [string, string, string, Record<string, string>, (Buffer | string)?][] = [
    ['invalid UTF-8 in the query', 'GET', '/q?name=%ff%fe&x=%E0%A4%A', {}],
    ['invalid UTF-8 in the path', 'GET', '/items/%ff', {}],
    ['1,000 query parameters', 'GET', `/q?${Array.from({ length: 1000 }, (_, i) => `p${i}=${i}`).join('&')}`, {}],
    ['malformed JSON', 'POST', '/echo', { 'content-type': 'application/json' }, '{"a": [1, 2'],
    ['a 10 MB JSON body', 'POST', '/echo', { 'content-type': 'application/json' }, JSON.stringify({ blob: 'x'.repeat(10 * 1024 * 1024) })],
    ['a binary body', 'POST', '/bin', { 'content-type': 'application/octet-stream' }, Buffer.from(Array.from({ length: 70_000 }, (_, i) => i % 256))],
    ['a 15 KB header', 'GET', '/q', { 'x-big': 'h'.repeat(15 * 1024) }],
  ];
  for (const [name, method, path, headers, body] of cases) {
    it(name, async () => {
      const without = await raw(bare.url, method, path, headers, body);
      const withIt = await raw(profiled.url, method, path, { ...headers, accept: 'application/json' }, body);
      expect(withIt.status).toBe(without.status);
      if (without.status < 400) expect(withIt.body).toBe(without.body);
      const token = withIt.headers['x-debug-token'] as string;
      expect(token).toMatch(/^[0-9a-f]{6}$/);
      profiler.flush();
      const row = readRows(db).find((r) => r.token === token);
      expect(row, 'stored').toBeDefined();
      expect(row!.status).toBe(without.status);
    });
  }

  it('keeps a 10 MB body to its limit in the profile', async () => {
    const res = await raw(profiled.url, 'POST', '/echo', { 'content-type': 'application/json' }, JSON.stringify({ blob: 'y'.repeat(10 * 1024 * 1024) }));
    profiler.flush();
    const row = readRows(db).find((r) => r.token === res.headers['x-debug-token'])!;
    expect(row.collectors.request.body).toMatchObject({ truncated: true, kind: 'json', size: 10 * 1024 * 1024 + 11 });
    expect(JSON.stringify(row.collectors.request.body.json).length).toBeLessThanOrEqual(64 * 1024 + 16);
  });
});

describe('the trailing-slash redirect never leaves the host', () => {
  for (const path of ['//evil.example', '/\\evil.example', '//evil.example/x', '/\\/evil.example', '/%2F%2Fevil.example', '/%5Cevil.example']) {
    it(path, async () => {
      const res = await raw(profiled.url, 'GET', path, { accept: 'text/plain' });
      const location = res.headers.location as string | undefined;
      if (res.status === 301) {
        expect(location).toMatch(/^\/[^/\\]/);
        expect(new URL(location!, profiled.url).host).toBe(new URL(profiled.url).host);
      } else {
        expect(location).toBeUndefined();
      }
    });
  }
});

describe('secrets in a URL path, an API key or an OAuth code in a query string', () => {
  const SECRETS = ['R3set-T0ken-8d1f4c', 'whsec-Q81bNfa02', 'mAg1c-L1nk-5e6f7a', 'AIzaSyD-Key-0123', '4/0AX4XfWh-code-9876'];

  it('go everywhere the URL goes: the list, search, the profile and its JSON, routing, cURL, the store', async () => {
    const visits = [
      `/reset/${SECRETS[0]}?key=${SECRETS[3]}`,
      `/hooks/${SECRETS[1]}/deliver`,
      `/login/magic/${encodeURIComponent(SECRETS[2])}?code=${encodeURIComponent(SECRETS[4])}&state=xyz`,
    ];
    const tokens: string[] = [];
    for (const path of visits) {
      // The next page's Referer carries the last one's URL: an OAuth callback's code with it.
      const res = await fetch(profiled.url + path, { headers: { referer: `https://accounts.example/cb?code=${SECRETS[4]}&scope=email` } });
      expect(res.status).toBe(200);
      tokens.push(res.headers.get('x-debug-token')!);
    }
    profiler.flush();
    const pages = ['/_profiler/', '/_profiler/search?url=reset', '/_profiler/search?url=R3set', ...tokens.flatMap((t) => [`/_profiler/${t}`, `/_profiler/${t}?panel=request`, `/_profiler/${t}?panel=routing`, `/_profiler/${t}/curl`, `/_profiler/${t}/fetch`])];
    for (const page of pages) {
      for (const accept of ['text/html', 'application/json']) {
        const text = await (await fetch(profiled.url + page, { headers: { accept } })).text();
        for (const secret of SECRETS) {
          expect(text, `${page} ${accept}`).not.toContain(secret);
          expect(text, `${page} ${accept}`).not.toContain(encodeURIComponent(secret));
        }
      }
    }
    const summary = await (await fetch(`${profiled.url}/_profiler/${tokens[0]}`, { headers: { accept: 'application/json' } })).json();
    expect(summary.url).toMatch(/\/reset\/\[redacted\]\?key=\[redacted\]$/);
    expect(summary.collectors.request.query).toEqual({ key: '[redacted]' });
    // Search cannot find a request by its secret: it is not stored.
    const found = await (await fetch(`${profiled.url}/_profiler/search?url=R3set`, { headers: { accept: 'application/json' } })).json();
    expect(found.profiles).toEqual([]);
    // What is not secret stays: the route, the other parameters.
    const magic = await (await fetch(`${profiled.url}/_profiler/${tokens[2]}?panel=routing`, { headers: { accept: 'application/json' } })).json();
    expect(magic.data).toMatchObject({ route: '/login/magic/:magicToken', path: '/login/magic/[redacted]', params: { magicToken: '[redacted]' } });
    const stored = readFileSync(db);
    for (const secret of SECRETS) expect(stored.includes(secret), secret).toBe(false);
  });
});

describe('tokens and parameters never make a 500 or leak a trace', () => {
  let staging: Running;
  beforeAll(async () => {
    const p = webProfiler({ database: tempDb(), debug: false, onError: () => {} });
    staging = await listen(build(p));
  });
  afterAll(() => staging.close());

  const paths = ['/_profiler/..%2F..%2Fetc%2Fpasswd', '/_profiler/%00', '/_profiler/ABCDEF', '/_profiler/a', `/_profiler/${'a'.repeat(100)}`,
    "/_profiler/'%20OR%201=1%20--", '/_profiler/abcdef?panel=%00', '/_profiler/search?limit=99999999999', '/_profiler/search?limit=-5',
    '/_profiler/search?start=not-a-date', '/_profiler/search?status_code=%ff', '/_profiler/search?ip[]=x&url[a]=b', '/_profiler/latest?type=%3Cscript%3E',
    '/_wdt/..%2F', '/_profiler/search?token=%ff', '/_profiler/%ff'];
  for (const path of paths) {
    it(path, async () => {
      for (const accept of ['text/html', 'application/json']) {
        const res = await raw(staging.url, 'GET', path, { accept });
        // Array and object values are reduced or ignored (200); nothing is a 500.
        expect([200, 302, 400, 404]).toContain(res.status);
        expect(res.body).not.toMatch(/\n\s+at |node_modules|\.ts:\d+/);
      }
    });
  }
});

describe('access', () => {
  const options = resolveOptions({ secret: 's3cret' }, {});
  const req = (remoteAddress: string, headers: Record<string, string> = {}, query: Record<string, string> = {}) =>
    ({ socket: { remoteAddress }, headers: { host: '127.0.0.1:8000', ...headers }, query }) as unknown as Request;

  const ok = async (verdict: ReturnType<typeof checkAccess>) => (await verdict).ok;

  const trusting = resolveOptions({ secret: 's3cret' }, { WEB_PROFILER_TRUST_LOCAL: '1' });

  it('asks every client for the key by default, loopback ones included: a same-machine proxy looks local', async () => {
    for (const address of ['127.0.0.1', '::1', '::ffff:127.0.0.1']) {
      expect(await checkAccess(req(address, { host: 'localhost:8000' }), options)).toMatchObject({ ok: false, reason: expect.stringContaining('needs its key') });
      expect(await ok(checkAccess(req(address, { 'x-profiler-secret': 's3cret' }), options))).toBe(true);
    }
  });

  it('with trustLocal, lets loopback clients in through loopback host names only', async () => {
    for (const address of ['127.0.0.1', '::1', '::ffff:127.0.0.1']) expect(await ok(checkAccess(req(address), trusting))).toBe(true);
    for (const host of ['localhost:8000', 'admin.localhost', '[::1]:3000']) expect(await ok(checkAccess(req('127.0.0.1', { host }), trusting))).toBe(true);
    const rebinding = await checkAccess(req('127.0.0.1', { host: 'attacker.example' }), trusting);
    expect(rebinding).toMatchObject({ ok: false, reason: expect.stringContaining('attacker.example') });
    expect(await ok(checkAccess(req('127.0.0.1', { host: 'dev.internal' }), resolveOptions({ allowedHosts: ['dev.internal'], trustLocal: true }, {})))).toBe(true);
    expect(await ok(checkAccess(req('10.1.2.3'), trusting))).toBe(false);
  });

  it('does not adopt a key file planted in the store\'s directory: one readable by others, a link, or (as root) one another user owns', async () => {
    const plants: [string, (file: string) => void][] = [
      ['readable by others', (file) => chmodSync(file, 0o644)],
      ['a symbolic link', (file) => {
        renameSync(file, `${file}.target`);
        symlinkSync(`${file}.target`, file);
      }],
    ];
    if (process.getuid?.() === 0) plants.push(['owned by another user', (file) => chownSync(file, 65534, 65534)]);
    for (const [what, plant] of plants) {
      const database = tempDb();
      const file = database.replace(/\.sqlite$/, '.key');
      writeFileSync(file, 'planted-key-0123456789abcdef\n', { mode: 0o600 });
      plant(file);
      const told: string[] = [];
      const planted = webProfiler({ database, trustLocal: false, onError: (message) => told.push(message) });
      const app = express();
      app.use(planted);
      const server = await listen(app);
      try {
        const res = await fetch(`${server.url}/_profiler/`, { headers: { 'x-profiler-secret': 'planted-key-0123456789abcdef', accept: 'application/json' } });
        expect(res.status, what).toBe(403);
        expect(told.join('\n'), what).toContain(`could not be kept in ${file}`);
      } finally {
        await server.close();
        planted.close();
      }
    }
  });

  it('stores in no database, WAL or link planted in a shared directory, and makes its own directory 0700 whatever the umask', async () => {
    const shared = tempDir();
    chmodSync(shared, 0o1777);
    const plants: [string, (database: string) => string][] = [
      ['a link to a file the planter reads', (database) => {
        writeFileSync(`${database}.target`, '');
        symlinkSync(`${database}.target`, database);
        return `${database}.target`;
      }],
      ['a link as the WAL', (database) => {
        writeFileSync(`${database}.wal-target`, '');
        symlinkSync(`${database}.wal-target`, `${database}-wal`);
        return `${database}.wal-target`;
      }],
    ];
    if (process.getuid?.() === 0) {
      plants.push(['a database another user owns', (database) => {
        writeFileSync(database, '', { mode: 0o666 });
        chownSync(database, 65534, 65534);
        return database;
      }]);
    }
    for (const [i, [what, plant]] of plants.entries()) {
      const database = path.join(shared, `store-${i}`, 'profiler.sqlite');
      mkdirSync(path.dirname(database), { mode: 0o777 });
      chmodSync(path.dirname(database), 0o777);
      const watched = plant(database);
      const told: string[] = [];
      const planted = webProfiler({ database, onError: (message) => told.push(message) });
      const app = express();
      app.use(planted);
      app.get('/', (_req, res) => res.send('still serving'));
      const server = await listen(app);
      try {
        const res = await fetch(`${server.url}/`);
        expect(await res.text(), what).toBe('still serving');
        planted.flush();
        expect(statSync(watched).size, what).toBe(0);
        expect(told.join('\n'), what).toMatch(/symbolic link|owned by another user/);
      } finally {
        await server.close();
        planted.close();
      }
    }
    // A store directory it makes is its owner's alone, even under umask 000.
    const before = process.umask(0);
    try {
      const database = path.join(shared, 'made', 'deeper', 'profiler.sqlite');
      const own = webProfiler({ database, onError: () => {} });
      const app = express();
      app.use(own);
      app.get('/', (_req, res) => res.send('ok'));
      const server = await listen(app);
      await (await fetch(`${server.url}/`)).text();
      own.flush();
      await server.close();
      own.close();
      for (const dir of [path.dirname(database), path.dirname(path.dirname(database))]) expect((statSync(dir).mode & 0o777).toString(8)).toBe('700');
      expect((statSync(database).mode & 0o777).toString(8)).toBe('600');
    } finally {
      process.umask(before);
    }
  });

  it('refuses other clients unless they present the secret, whatever they claim', async () => {
    expect(await ok(checkAccess(req('10.1.2.3'), options))).toBe(false);
    expect(await ok(checkAccess(req('10.1.2.3', { 'x-forwarded-for': '127.0.0.1' }), options))).toBe(false);
    expect(await ok(checkAccess(req('10.1.2.3', { 'x-profiler-secret': 'wrong' }), options))).toBe(false);
    expect(await ok(checkAccess(req('10.1.2.3', { 'x-profiler-secret': 's3cret' }), options))).toBe(true);
    expect(await ok(checkAccess(req('10.1.2.3', {}, { _profiler_secret: 's3cret' }), options))).toBe(true);
    expect(await ok(checkAccess(req('10.1.2.3', { 'x-profiler-secret': 's3cret' }), resolveOptions({}, {})))).toBe(false);
    // The cookie holds a value derived from the secret, never the secret: the secret itself is refused there.
    expect(await ok(checkAccess(req('10.1.2.3', { cookie: 'a=b; web_profiler_secret=s3cret' }), options))).toBe(false);
  });

  it('with trustLocal, asks for the key from a loopback peer that came through a proxy that says so', async () => {
    for (const header of ['forwarded', 'x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto', 'x-real-ip', 'via', 'true-client-ip', 'cf-connecting-ip']) {
      const proxied = req('127.0.0.1', { host: 'localhost:8000', [header]: header === 'forwarded' ? 'for=203.0.113.9' : '203.0.113.9' });
      expect(await checkAccess(proxied, trusting), header).toMatchObject({ ok: false, reason: expect.stringContaining('proxy') });
      expect(await ok(checkAccess(proxied, resolveOptions({ trustLocal: true }, {}))), `${header}, no secret`).toBe(false);
      expect(await ok(checkAccess(req('127.0.0.1', { host: 'localhost:8000', [header]: 'x', 'x-profiler-secret': 's3cret' }), trusting)), `${header}, secret`).toBe(true);
    }
  });

  it('an authorize() function decides alone: only true, or a promise of true, lets a request in', async () => {
    expect(await ok(checkAccess(req('10.1.2.3'), resolveOptions({ authorize: () => true }, {})))).toBe(true);
    expect(await ok(checkAccess(req('10.1.2.3'), resolveOptions({ authorize: async () => true }, {})))).toBe(true);
    expect(await ok(checkAccess(req('127.0.0.1'), resolveOptions({ authorize: () => false }, {})))).toBe(false);
    expect(await ok(checkAccess(req('127.0.0.1'), resolveOptions({ authorize: async () => false }, {})))).toBe(false);
    expect(await ok(checkAccess(req('127.0.0.1'), resolveOptions({ authorize: (() => 'yes') as never }, {})))).toBe(false);
    expect(await ok(checkAccess(req('127.0.0.1'), resolveOptions({ authorize: () => { throw new Error('x'); } }, {})))).toBe(false);
    expect(await ok(checkAccess(req('127.0.0.1'), resolveOptions({ authorize: () => Promise.reject(new Error('x')) }, {})))).toBe(false);
  });

  it('an async authorize() that says no keeps every page shut', async () => {
    const p = webProfiler({ database: tempDb(), authorize: async () => false, onError: () => {} });
    const server = await listen(build(p));
    try {
      const token = (await fetch(`${server.url}/q?report=private-report`)).headers.get('x-debug-token');
      p.flush();
      for (const path of ['/_profiler/', `/_profiler/${token}`, `/_wdt/${token}`]) {
        const res = await fetch(server.url + path, { headers: { accept: 'application/json' } });
        expect(res.status, path).toBe(403);
        expect(await res.text()).not.toContain('private-report');
      }
    } finally {
      await server.close();
    }
  });

  it('covers pages, JSON twins and the toolbar alike', async () => {
    const p = webProfiler({ database: tempDb(), authorize: () => false, onError: () => {} });
    const server = await listen(build(p));
    try {
      // A marker with a '-', which the pages' base64 CSP nonce can never contain by chance.
      const token = (await fetch(`${server.url}/q?report=private-report`)).headers.get('x-debug-token');
      for (const path of ['/_profiler/', `/_profiler/${token}`, '/_profiler/search?url=q', '/_profiler/latest', `/_wdt/${token}`]) {
        for (const accept of ['text/html', 'application/json']) {
          const res = await fetch(server.url + path, { headers: { accept }, redirect: 'manual' });
          expect(res.status, `${path} ${accept}`).toBe(403);
          expect(await res.text()).not.toContain('private-report');
        }
      }
    } finally {
      await server.close();
    }
  });

  it('is off in production, whichever variable says so: no recording, no debug mode', async () => {
    for (const env of [{ NODE_ENV: 'production' }, { APP_ENV: 'prod' }, { APP_ENV: 'production' }, { APP_ENV: 'PROD' }, { NODE_ENV: 'prod' }, { ENVIRONMENT: 'production' }]) {
      const options = resolveOptions({}, env);
      expect(options.enabled, JSON.stringify(env)).toBe(false);
      expect(options.debug, JSON.stringify(env)).toBe(false);
    }
    expect(resolveOptions({}, { APP_ENV: 'staging' }).debug).toBe(true);
    expect(resolveOptions({ enabled: true }, { NODE_ENV: 'production' }).enabled).toBe(true);
  });

  it('a secret in the query becomes an HttpOnly, SameSite=Strict cookie of a derived value, and leaves the address bar', async () => {
    const p = webProfiler({ database: tempDb(), secret: 'q-secret', onError: () => {} });
    const server = await listen(build(p));
    try {
      const res = await raw(server.url, 'GET', '/_profiler/search?url=x&_profiler_secret=q-secret', { host: 'staging.example.com' });
      expect(res.status).toBe(303);
      expect(res.headers.location).toBe('/_profiler/search?url=x');
      const cookie = String(res.headers['set-cookie']);
      expect(cookie).toMatch(/^web_profiler_secret_[0-9a-f]{8}=[\w-]{20,}; Path=\/; Max-Age=2592000; HttpOnly; SameSite=Strict/);
      expect(cookie).not.toContain('q-secret');
      const next = await raw(server.url, 'GET', res.headers.location as string, { host: 'staging.example.com', cookie: cookie.split(';')[0] });
      expect(next.status).toBe(200);
      const wrong = await raw(server.url, 'GET', '/_profiler/?_profiler_secret=nope', { host: 'staging.example.com' });
      expect(wrong.status).toBe(403);
      expect(wrong.headers['set-cookie']).toBeUndefined();
    } finally {
      await server.close();
    }
  });
});

describe('a password in a URL (`scheme://user:password@host`)', () => {
  it('is nowhere in the store: log lines, an error\'s message, a span\'s attributes (a view\'s locals are kept by name)', async () => {
    // Made at run time: the error's code excerpt shows this file's lines, which must not hold the values.
    const pw = (name: string) => `${name}-pass-${process.pid}`;
    const database = tempDb();
    const own = webProfiler({ database, onError: () => {} });
    const tracer = new BasicTracerProvider({ spanProcessors: [own.spanProcessor()] }).getTracer('db-pool');
    const views = tempDir();
    writeFileSync(path.join(views, 'status.txt'), 'status');
    const app = express();
    app.use(own);
    app.engine('txt', (_file: string, _options: object, done: (err: null, out: string) => void) => done(null, 'rendered'));
    app.set('views', views);
    app.get('/connect', (req, res, next) => {
      req.log.warn(`connecting to postgres://app:${pw('pg')}@db.internal:5432/app`);
      const span = tracer.startSpan('connect', { attributes: { 'db.connection_string': `mysql://root:${pw('my')}@db.internal/app`, 'url.full': `https://bot:${pw('hook')}@hooks.example.test/deliver` } });
      span.end();
      res.render('status.txt', { dsn: `redis://:${pw('redis')}@cache.internal:6379/0` }, () => next(new Error(`cannot reach amqp://queue:${pw('amqp')}@mq.internal:5672`)));
    });
    app.use(own.errorHandler);
    const server = await listen(app);
    try {
      const res = await fetch(`${server.url}/connect`);
      expect(res.status).toBe(500);
      own.flush();
      const [row] = readRows(database).filter((r) => r.url.endsWith('/connect'));
      expect(row.collectors.logs.lines[0].message).toBe('connecting to postgres://app:[redacted]@db.internal:5432/app');
      expect(row.collectors.exception.chain[0].message).toBe('cannot reach amqp://queue:[redacted]@mq.internal:5672');
      // A view's locals are kept by name.
      expect(row.collectors.views.renders[0].locals).toEqual(['dsn']);
      expect(JSON.stringify(row.collectors.performance.traced)).toContain('mysql://root:[redacted]@db.internal/app');
      const stored = readFileSync(database).toString('latin1') + JSON.stringify(readRows(database));
      for (const name of ['pg', 'my', 'hook', 'redis', 'amqp']) expect(stored).not.toContain(pw(name));
    } finally {
      await server.close();
      own.close();
    }
  });
});

describe('a database span whose statement is JSON (MongoDB\'s shape, through OpenTelemetry)', () => {
  it('keeps the command and its shape, and no value under a secret key nor a token, on the db panel, the timeline and in the store', async () => {
    const database = tempDb();
    const own = webProfiler({ database, onError: () => {} });
    const tracer = new BasicTracerProvider({ spanProcessors: [own.spanProcessor()] }).getTracer('@opentelemetry/instrumentation-mongodb');
    const resetToken = `rt${process.pid}x9f8e7d6c5b4a3f2e1d0c`;
    const app = express();
    app.use(own);
    app.post('/reset', (_req, res) => {
      const statement = JSON.stringify({ update: 'users', updates: [{ q: { email: 'ada@example.test' }, u: { $set: { password: `mongo-pass-${process.pid}`, resetToken } } }] });
      tracer.startSpan('mongodb.update', { attributes: { 'db.system': 'mongodb', 'db.statement': statement } }).end();
      res.status(204).end();
    });
    const server = await listen(app);
    try {
      const res = await fetch(`${server.url}/reset`, { method: 'POST' });
      expect(res.status).toBe(204);
      own.flush();
      const profile = await (await fetch(`${server.url}/_profiler/${res.headers.get('x-debug-token')}`, { headers: { accept: 'application/json' } })).json();
      const [query] = profile.collectors.db.queries;
      expect(query.driver).toBe('mongodb');
      expect(JSON.parse(query.sql)).toEqual({ update: 'users', updates: [{ q: { email: 'ada@example.test' }, u: { $set: { password: '[redacted]', resetToken: '[redacted]' } } }] });
      const timeline = JSON.stringify(profile.collectors.performance.timeline);
      expect(timeline).toContain('users');
      const stored = readFileSync(database).toString('latin1') + JSON.stringify(readRows(database)) + timeline;
      for (const secret of [`mongo-pass-${process.pid}`, resetToken]) expect(stored).not.toContain(secret);
    } finally {
      await server.close();
      own.close();
    }
  });
});

describe('a secret the app wrote into its code', () => {
  it('is hidden in the code excerpt of an exception, stored and on the debug page; the rest of the line stays', async () => {
    const { sign } = createRequire(import.meta.url)('./fixtures/hardcoded-secret.cjs') as { sign: (p: { user?: string }) => string };
    const database = tempDb();
    const profiler = webProfiler({ database, onError: () => {} });
    const app = express();
    app.use(profiler);
    app.get('/sign', (_req, res) => res.send(sign({})));
    app.use(profiler.errorHandler);
    const server = await listen(app);
    try {
      const res = await fetch(`${server.url}/sign`, { headers: { accept: 'text/html' } });
      const page = await res.text();
      expect(res.status).toBe(500);
      expect(page).toContain('cannot sign for no user');
      for (const literal of ['literal-secret-in-code-77', 'literal-api-key-in-code-78']) expect(page).not.toContain(literal);
      expect(page).toContain('const SIGNING_SECRET = &#39;[redacted]&#39;;');
      profiler.flush();
      const stored = JSON.stringify(readRows(database).find((r) => r.token === res.headers.get('x-debug-token'))!.collectors.exception);
      expect(stored).toContain("region: 'eu-west-1'");
      for (const literal of ['literal-secret-in-code-77', 'literal-api-key-in-code-78']) expect(stored).not.toContain(literal);
    } finally {
      await server.close();
      profiler.close();
    }
  });
});
