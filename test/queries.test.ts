import Database from './fixtures/better-sqlite3.cjs';
import express from 'express';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { instrument, span, webProfiler, type ProfilerOptions } from '../src/index.js';
import { listen, tempDb, tempDir, type Running } from './helpers.js';
import { redactStatement } from '../src/redaction/sql.js';
import { resolveOptions } from '../src/options.js';

const running: Running[] = [];
const closing: (() => void)[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.close()));
});
afterAll(() => closing.forEach((close) => close()));

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const THIS_FILE = path.resolve('test/queries.test.ts');

/** A library in node_modules that runs the app's statement later, in a callback of its own, as ORMs do: no line of the app's is on its stack. */
function detachedLibrary(): { later(fn: () => unknown): Promise<unknown> } {
  const dir = path.join(tempDir(), 'node_modules', 'detached-orm');
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'index.js'), 'exports.later = (db, sql) => new Promise((resolve) => setImmediate(() => resolve(db.prepare(sql).all())));\n');
  return createRequire(path.join(dir, '..', '..', 'x.js'))('detached-orm');
}

/** The app's own database helper, in a file of its own as apps write one: every statement goes through its line. */
const WRAPPER = (() => {
  const file = path.join(tempDir(), 'db.cjs');
  writeFileSync(file, 'exports.query = (db, sql, ...params) => db.prepare(sql).all(...params);\n');
  return file;
})();
const { query: wrapped } = createRequire(WRAPPER)(WRAPPER) as { query(db: Database.Database, sql: string, ...params: unknown[]): unknown[] };

/** An app of the shapes real code has, on a better-sqlite3 file database of its own. */
async function start(options: ProfilerOptions = {}) {
  const file = path.join(tempDir(), 'app.sqlite');
  const db = new Database(file);
  closing.push(() => db.close());
  db.exec(`CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, password TEXT);
           CREATE TABLE posts (id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL, title TEXT);`);
  const addUser = db.prepare('INSERT INTO users (name, password) VALUES (?, ?)');
  for (let i = 1; i <= 8; i++) addUser.run(`user${i}`, `pw-${i}`);
  const addPost = db.prepare('INSERT INTO posts (user_id, title) VALUES (@user, @title)');
  for (let i = 1; i <= 8; i++) addPost.run({ user: i, title: `post ${i}` });

  const profiler = webProfiler({ database: tempDb(), onError: () => {}, ...options });
  const app = express();
  app.use(profiler);
  // Values whose columns say nothing: the body's password goes into a hash, the cookie's session id is an id.
  db.exec('CREATE TABLE accounts (id INTEGER PRIMARY KEY, name TEXT, hash TEXT); CREATE TABLE sessions (id TEXT, account INTEGER)');
  app.post('/signup', express.json(), (req, res) => {
    db.prepare('INSERT INTO accounts VALUES (NULL, ?, ?)').run(req.body.name, `h:${req.body.password}`);
    db.prepare('SELECT account FROM sessions WHERE id = ?').get(String(req.headers.cookie).split('=')[1]);
    res.sendStatus(201);
  });
  app.get('/sync', (_req, res) => {
    const user = db.prepare('SELECT id, name FROM users WHERE id = ?').get(3);
    const posts = db.prepare('SELECT * FROM posts WHERE user_id = @user').all({ user: 3 });
    res.json({ user, posts: posts.length });
  });
  app.get('/async/:id', async (req, res) => {
    await sleep(Number(req.query.wait ?? 1));
    const user = db.prepare('SELECT name FROM users WHERE id = ?').get(Number(req.params.id));
    await sleep(1);
    const posts = db.prepare('SELECT title FROM posts WHERE user_id = ?').all(Number(req.params.id));
    res.json({ user, posts });
  });
  const orm = detachedLibrary() as unknown as { later(db: Database.Database, sql: string): Promise<unknown[]> };
  app.get('/detached', async (_req, res) => {
    const users = await orm.later(db, 'SELECT id FROM users');
    res.json({ users: users.length });
  });
  app.get('/n1', (_req, res) => {
    const posts = db.prepare('SELECT * FROM posts').all() as { user_id: number }[];
    const authors = posts.map((p) => db.prepare('SELECT name FROM users WHERE id = ?').get(p.user_id));
    res.send(`<!doctype html><html><body>${authors.length} authors</body></html>`);
  });
  app.get('/failing', (_req, res) => {
    const errors: string[] = [];
    try {
      addUser.run('user1', 'x');
    } catch (err) {
      errors.push((err as Error).message);
    }
    try {
      db.prepare('SELECT * FROM missing_table').all();
    } catch (err) {
      errors.push((err as Error).message);
    }
    res.status(500).json({ errors });
  });
  app.post('/password', (_req, res) => {
    db.prepare('UPDATE users SET password = ? WHERE id = ?').run('new-secret-pw', 2);
    db.prepare('SELECT id FROM users WHERE name = @name AND password = @password').get({ name: 'user2', password: 'new-secret-pw' });
    db.prepare("SELECT id FROM users WHERE password = 'literal-secret-pw'").get();
    res.sendStatus(204);
  });
  app.get('/wrapped', (_req, res) => {
    const users = wrapped(db, 'SELECT id FROM users');
    const posts = wrapped(db, 'SELECT id FROM posts');
    const named = wrapped(db, 'SELECT name FROM users WHERE id = ?', 1);
    res.json({ users: users.length, posts: posts.length, named });
  });
  app.get('/many', (_req, res) => {
    const stmt = db.prepare('SELECT ? AS n');
    for (let i = 0; i < 600; i++) stmt.get(i);
    res.send('ok');
  });
  app.get('/shapes', (_req, res) => {
    const names: string[] = [];
    for (const row of db.prepare('SELECT name FROM users ORDER BY id').iterate() as IterableIterator<{ name: string }>) {
      names.push(row.name);
      if (names.length === 2) break;
    }
    const ids = db.prepare('SELECT id FROM users ORDER BY id LIMIT 3').pluck().all();
    const move = db.transaction((from: number) => db.prepare('UPDATE posts SET user_id = ? WHERE user_id = ?').run(from + 100, from));
    move(8);
    db.exec('CREATE TEMP TABLE IF NOT EXISTS scratch (x)');
    const mode = db.pragma('journal_mode', { simple: true });
    res.json({ names, ids, mode });
  });
  app.get('/spans', async (_req, res) => {
    const total = await span('load page', async () => {
      const count = span('count users', () => (db.prepare('SELECT count(*) AS n FROM users').get() as { n: number }).n);
      await span('wait', () => sleep(5));
      return count;
    });
    let thrown = '';
    try {
      span('broken step', () => {
        throw new Error('step failed');
      });
    } catch (err) {
      thrown = (err as Error).message;
    }
    res.json({ total, thrown });
  });
  app.use(profiler.notFound);
  app.use(profiler.errorHandler);
  const server = await listen(app);
  running.push(server);
  closing.push(() => profiler.close());
  return { ...server, profiler, db };
}

async function panel(url: string, token: string, id: string, profiler: { flush(): number }) {
  profiler.flush();
  const res = await fetch(`${url}/_profiler/${token}?panel=${id}`, { headers: { accept: 'application/json' } });
  expect(res.status).toBe(200);
  return (await res.json()).data;
}

async function call(url: string, pathname: string, init?: RequestInit) {
  const res = await fetch(url + pathname, init);
  const body = await res.text();
  return { res, body, token: res.headers.get('x-debug-token')! };
}

describe('database queries: better-sqlite3, no setup', () => {
  it('records each statement of a sync route: SQL, parameters, rows, duration, caller line and layer', async () => {
    const app = await start();
    const { token, body } = await call(app.url, '/sync');
    expect(JSON.parse(body)).toEqual({ user: { id: 3, name: 'user3' }, posts: 1 });
    const db = await panel(app.url, token, 'db', app.profiler);
    expect(db.count).toBe(2);
    expect(db.queries.map((q: any) => [q.sql, q.params, q.rows])).toEqual([
      ['SELECT id, name FROM users WHERE id = ?', 3, 1],
      ['SELECT * FROM posts WHERE user_id = @user', { user: 3 }, 1],
    ]);
    for (const q of db.queries) {
      expect(q.caller).toMatch(new RegExp(`^${THIS_FILE.replace(/[.]/g, '\\.')}:\\d+$`));
      expect(q.layer).toBe('route GET /sync › handler');
      expect(q.duration).toBeGreaterThanOrEqual(0);
      expect(q.error).toBeUndefined();
    }
    expect(db.time).toBeGreaterThan(0);
    expect(db.groups.map((g: any) => [g.sql, g.count, g.nPlusOne])).toEqual([
      ['SELECT id, name FROM users WHERE id = ?', 1, false],
      ['SELECT * FROM posts WHERE user_id = @user', 1, false],
    ]);
    expect(db.queries[1].runnable).toBe('SELECT * FROM posts WHERE user_id = 3');
    // The profiler's own store is never in a profile.
    expect(db.queries.some((q: any) => /profiles|profile_data/.test(q.sql))).toBe(false);
  });

  it('a statement with no line of the app\'s on its stack says it ran from a callback, and where the request answered', async () => {
    const app = await start();
    const { token, body } = await call(app.url, '/detached');
    expect(JSON.parse(body)).toEqual({ users: 8 });
    const db = await panel(app.url, token, 'db', app.profiler);
    expect(db.queries).toHaveLength(1);
    expect(db.queries[0]).toMatchObject({ sql: 'SELECT id FROM users', callerFrom: 'response', caller: expect.stringMatching(new RegExp(`^${THIS_FILE.replace(/[.]/g, '\\.')}:\\d+$`)) });
    const page = await (await fetch(`${app.url}/_profiler/${token}?panel=db`)).text();
    // The line that answered is not presented as the statement's caller.
    expect(page).toMatch(/ran from a callback<\/abbr>; the request answered at [^<]*queries\.test\.ts:\d+/);
    // A statement that had its own line keeps it, unmarked.
    const sync = await panel(app.url, (await call(app.url, '/sync')).token, 'db', app.profiler);
    expect(sync.queries.every((q: any) => q.callerFrom === undefined && q.caller !== undefined)).toBe(true);
  });

  it('an app\'s own wrapper: the panel says every statement ran from its line; named in skipFrames, each is named by the line that called it', async () => {
    const line = (text: string) => `${THIS_FILE}:${readFileSync(THIS_FILE, 'utf8').split('\n').findIndex((l) => l.includes(text)) + 1}`;
    const before = await start();
    const { token } = await call(before.url, '/wrapped');
    const db = await panel(before.url, token, 'db', before.profiler);
    expect(db.queries.map((q: any) => q.caller)).toEqual([`${WRAPPER}:1`, `${WRAPPER}:1`, `${WRAPPER}:1`]);
    // Each statement's chain: the wrapper's line, then the line that called it.
    expect(db.queries.map((q: any) => q.via?.[0])).toEqual([line("wrapped(db, 'SELECT id FROM users')"), line("wrapped(db, 'SELECT id FROM posts')"), line("wrapped(db, 'SELECT name FROM users")]);
    expect(db.oneCaller).toBe(`${WRAPPER}:1`);
    const page = await (await fetch(`${before.url}/_profiler/${token}?panel=db`)).text();
    expect(page).toContain('name its file in the <span class="mono">skipFrames</span> option');
    expect(page).toContain(`called from ${path.relative(process.cwd(), line("wrapped(db, 'SELECT id FROM users')"))}`);
    // Passed over as library code (a folder, as given): the route's lines.
    const after = await start({ skipFrames: [path.dirname(WRAPPER)] });
    const skipped = await panel(after.url, (await call(after.url, '/wrapped')).token, 'db', after.profiler);
    expect(skipped.queries.map((q: any) => q.caller)).toEqual([line("wrapped(db, 'SELECT id FROM users')"), line("wrapped(db, 'SELECT id FROM posts')"), line("wrapped(db, 'SELECT name FROM users")]);
    expect(skipped.oneCaller).toBeUndefined();
    expect(() => webProfiler({ database: ':memory:', skipFrames: 'src/db.js' as unknown as string[] })).toThrow(/skipFrames must be an array/);
  });

  it('gives queries after awaits to their own request, with requests finishing out of order', async () => {
    const app = await start();
    const ids = [1, 2, 3, 4, 5, 6];
    const calls = await Promise.all(ids.map((id) => call(app.url, `/async/${id}?wait=${(7 - id) * 8}`)));
    for (const [i, { token, body }] of calls.entries()) {
      const id = ids[i];
      expect(JSON.parse(body).user).toEqual({ name: `user${id}` });
      const db = await panel(app.url, token, 'db', app.profiler);
      expect(db.queries.map((q: any) => q.params)).toEqual([id, id]);
    }
  });

  it('flags a statement run 5 times or more from one line as a likely N+1: panel, badge and toolbar', async () => {
    const app = await start();
    const { token } = await call(app.url, '/n1');
    const db = await panel(app.url, token, 'db', app.profiler);
    expect(db.count).toBe(9);
    const loop = db.groups.find((g: any) => g.sql === 'SELECT name FROM users WHERE id = ?');
    expect(loop).toMatchObject({ count: 8, nPlusOne: true });
    expect(loop.callers).toEqual([{ caller: expect.stringContaining('queries.test.ts:'), count: 8 }]);
    expect(db.nPlusOne).toBe(1);
    expect(db.queries.filter((q: any) => q.nPlusOne)).toHaveLength(8);
    expect(db.queries[0].nPlusOne).toBe(false);

    const page = await (await fetch(`${app.url}/_profiler/${token}?panel=db`)).text();
    // A likely N+1 makes the panel's badge stand out, as a warning.
    expect(page).toMatch(/<span class="badge s-client" title="9 · N\+1">9 · N\+1<\/span>/);
    expect(page).toContain('Likely N+1:</strong> this statement ran 8 times from');
    const toolbar = await (await fetch(`${app.url}/_wdt/${token}`)).text();
    expect(toolbar).toMatch(/DB<\/span> <span class="wp-wdt-mono">9 in [\d.]+ ms<\/span>/);
    expect(toolbar).toContain('<span class="wp-wdt-warn">N+1</span>');
  });

  it('records failed statements with their error: one that fails as it runs, one that cannot be prepared', async () => {
    const app = await start();
    const { token, body } = await call(app.url, '/failing');
    expect(JSON.parse(body).errors).toHaveLength(2);
    const db = await panel(app.url, token, 'db', app.profiler);
    expect(db.errors).toBe(2);
    expect(db.queries[0]).toMatchObject({ sql: 'INSERT INTO users (name, password) VALUES (?, ?)', error: { class: 'SqliteError', code: 'SQLITE_CONSTRAINT_UNIQUE' } });
    expect(db.queries[0].error.message).toContain('UNIQUE constraint failed');
    expect(db.queries[1]).toMatchObject({ sql: 'SELECT * FROM missing_table', error: { class: 'SqliteError', message: 'no such table: missing_table' } });
    const page = await (await fetch(`${app.url}/_profiler/${token}?panel=db`)).text();
    expect(page).toContain('SqliteError [SQLITE_CONSTRAINT_UNIQUE]: UNIQUE constraint failed: users.name');
  });

  it('redacts secret columns and parameters before storing; the runnable SQL keeps their placeholders', async () => {
    const app = await start();
    const { token } = await call(app.url, '/password', { method: 'POST' });
    const db = await panel(app.url, token, 'db', app.profiler);
    expect(db.queries[0]).toMatchObject({ sql: 'UPDATE users SET password = ? WHERE id = ?', params: ['[redacted]', 2], runnable: 'UPDATE users SET password = ? WHERE id = 2' });
    expect(db.queries[1]).toMatchObject({ params: { name: 'user2', password: '[redacted]' }, runnable: "SELECT id FROM users WHERE name = 'user2' AND password = @password" });
    expect(db.queries[2].sql).toBe("SELECT id FROM users WHERE password = '[redacted]'");
    const stored = readFileSync(app.profiler.options.database);
    expect(stored.includes('new-secret-pw')).toBe(false);
    expect(stored.includes('literal-secret-pw')).toBe(false);
  });

  it('finds the column through calls, casts and INSERT shapes, and hides what no column names when it looks like a token', () => {
    const keys = resolveOptions({}, {}).redactKeys;
    const token = 'sess_LIVE_9fQ2xKd81LmZp04TrW7e';
    const cases: [string, unknown, unknown][] = [
      ["SELECT id FROM users WHERE password_hash = crypt(?, gen_salt('bf'))", ['pw-1'], ['[redacted]']],
      ['SELECT id FROM users WHERE lower(u.token) = lower(?) AND id = ?', ['AbC-1', 7], ['[redacted]', 7]],
      ['SELECT id FROM users WHERE ? = api_key', ['k-1'], ['[redacted]']],
      ['SELECT id FROM users WHERE CAST(? AS text) = lower(secret)', ['s-1'], ['[redacted]']],
      ['INSERT INTO users (name, password) SELECT ?, ?', ['ada', 'pw-2'], ['ada', '[redacted]']],
      ["INSERT INTO users (name, password) VALUES (?, crypt(?, 'x')), (?, ?)", ['ada', 'pw-3', 'bob', 'pw-4'], ['ada', '[redacted]', 'bob', '[redacted]']],
      ['INSERT INTO users (name, email) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET password = ?', ['ada', 'a@x.io', 'pw-5'], ['ada', 'a@x.io', '[redacted]']],
      // No column list: the name and address stay; a token's shape goes.
      ['INSERT INTO users VALUES (?, ?, ?)', ['ada', 'a@x.io', token], ['ada', 'a@x.io', '[redacted]']],
      ['SELECT ?', [token], ['[redacted]']],
    ];
    for (const [sql, params, expected] of cases) expect(redactStatement(sql, params, keys).params, sql).toEqual(expected);
    expect(redactStatement(`INSERT INTO sessions VALUES (1, '${token}')`, undefined, keys).sql).toBe("INSERT INTO sessions VALUES (1, '[redacted]')");
  });

  it('hides a statement value the profile redacts elsewhere: a password from the body, the session cookie', async () => {
    const app = await start();
    const res = await fetch(`${app.url}/signup`, { method: 'POST', headers: { 'content-type': 'application/json', cookie: 'sid=q1w2e3r4t5' }, body: JSON.stringify({ name: 'ada', password: 'correct-horse' }) });
    const db = await panel(app.url, res.headers.get('x-debug-token')!, 'db', app.profiler);
    expect(db.queries.map((q: any) => q.params)).toEqual([['ada', '[redacted]'], '[redacted]']);
    const stored = readFileSync(app.profiler.options.database);
    expect(stored.includes('correct-horse')).toBe(false);
    expect(stored.includes('q1w2e3r4t5')).toBe(false);
  });

  it('keeps details of the first 500 statements of a request and counts the rest', async () => {
    const app = await start();
    const { token } = await call(app.url, '/many');
    const db = await panel(app.url, token, 'db', app.profiler);
    expect(db.count).toBe(600);
    expect(db.queries).toHaveLength(500);
    expect(db.omitted).toBe(100);
  });

  it('records iterate, pluck, transactions, exec and pragma, and leaves their results as they were', async () => {
    const app = await start();
    const { token, body } = await call(app.url, '/shapes');
    expect(JSON.parse(body)).toEqual({ names: ['user1', 'user2'], ids: [1, 2, 3], mode: 'delete' });
    const db = await panel(app.url, token, 'db', app.profiler);
    expect(db.queries.map((q: any) => [q.sql, q.rows])).toEqual([
      ['SELECT name FROM users ORDER BY id', 2],
      ['SELECT id FROM users ORDER BY id LIMIT 3', 3],
      ['BEGIN', 0],
      ['UPDATE posts SET user_id = ? WHERE user_id = ?', 1],
      ['COMMIT', 0],
      ['CREATE TEMP TABLE IF NOT EXISTS scratch (x)', undefined],
      ['PRAGMA journal_mode', 1],
    ]);
  });
});

describe('EXPLAIN by reference', () => {
  it('explains a recorded SELECT on the app\'s own database, as JSON and inside the db panel', async () => {
    const app = await start();
    const { token } = await call(app.url, '/sync');
    app.profiler.flush();
    const res = await fetch(`${app.url}/_profiler/${token}/db/1/explain`, { headers: { accept: 'application/json' } });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body).toMatchObject({ token, query: 1, driver: 'better-sqlite3' });
    expect(body.plan.map((r: any) => r.detail).join('\n')).toMatch(/SCAN posts/);
    const page = await (await fetch(`${app.url}/_profiler/${token}?panel=db&explain=0`)).text();
    expect(page).toContain("Query plan (EXPLAIN QUERY PLAN, on the app's connection)");
    expect(page).toContain('SEARCH users USING INTEGER PRIMARY KEY (rowid=?)');
    const standalone = await (await fetch(`${app.url}/_profiler/${token}/db/0/explain`)).text();
    expect(standalone).toContain('<h1>Query plan</h1>');
  });

  it('keeps what EXPLAIN needs within a budget of bytes: 60 requests with 4 MiB parameters leave the heap as it was', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const profiler = webProfiler({ database: tempDb(), onError: () => {} });
    closing.push(() => profiler.close());
    const db = new Database(':memory:');
    closing.push(() => db.close());
    const app = express();
    app.use(profiler);
    app.get('/big', (_req, res) => {
      // A fresh 4 MiB parameter each time: what a request keeps alive is its own.
      res.json(db.prepare('SELECT length(?) AS n').get(`${Math.random()}`.padEnd(4 * 1024 * 1024, 'x')));
    });
    const server = await listen(app);
    running.push(server);
    const heap = () => {
      gc();
      gc();
      return process.memoryUsage().heapUsed;
    };
    await (await fetch(`${server.url}/big`)).text();
    const before = heap();
    let token = '';
    for (let i = 0; i < 60; i++) token = (await fetch(`${server.url}/big`)).headers.get('x-debug-token')!;
    profiler.flush();
    const grown = heap() - before;
    expect(grown).toBeLessThan(32 * 1024 * 1024);
    const asked = await fetch(`${server.url}/_profiler/${token}/db/0/explain`, { headers: { accept: 'application/json' } });
    expect((await asked.json()).detail).toContain('more than the profiler keeps for EXPLAIN');
  });

  it('refuses what is not a recorded SELECT, and never takes SQL from the browser', async () => {
    const app = await start();
    const { token } = await call(app.url, '/password', { method: 'POST' });
    app.profiler.flush();
    const update = await fetch(`${app.url}/_profiler/${token}/db/0/explain`, { headers: { accept: 'application/json' } });
    expect(update.status).toBe(404);
    expect((await update.json()).detail).toBe('Only a SELECT can be explained.');
    const unknown = await fetch(`${app.url}/_profiler/abcdef123456/db/0/explain`, { headers: { accept: 'application/json' } });
    expect(unknown.status).toBe(404);
    expect((await unknown.json()).detail).toContain('can no longer be explained');
    const smuggled = await fetch(`${app.url}/_profiler/${token}/db/0/explain?sql=DROP%20TABLE%20users`);
    expect(smuggled.status).toBe(404);
    expect((app.db.prepare('SELECT count(*) AS n FROM users').get() as { n: number }).n).toBe(8);
    const notNumber = await fetch(`${app.url}/_profiler/${token}/db/x/explain`);
    expect(notNumber.status).toBe(404);
  });
});

describe('spans and the timeline', () => {
  it('records spans, nested where they nest, with queries under them; a span that throws passes its error on', async () => {
    const app = await start();
    const { token, body } = await call(app.url, '/spans');
    expect(JSON.parse(body)).toEqual({ total: 8, thrown: 'step failed' });
    const perf = await panel(app.url, token, 'performance', app.profiler);
    const rows = perf.timeline.map((r: any) => [r.kind, r.name, r.depth, r.error ?? false]);
    expect(rows).toEqual([
      ['route', 'route GET /spans', 0, false],
      ['handler', 'handler', 0, false],
      ['span', 'load page', 1, false],
      ['span', 'count users', 2, false],
      ['query', 'SELECT count(*) AS n FROM users', 3, false],
      ['span', 'wait', 2, false],
      ['span', 'broken step', 1, true],
    ]);
    const wait = perf.timeline.find((r: any) => r.name === 'wait');
    expect(wait.end - wait.start).toBeGreaterThanOrEqual(4);
    for (const r of perf.timeline) expect(r.end).toBeGreaterThanOrEqual(r.start);
  });

  it('runs fn as it is outside a request', async () => {
    expect(span('alone', () => 42)).toBe(42);
    await expect(span('alone', async () => 'x')).resolves.toBe('x');
  });

  it('adds Server-Timing only when asked to', async () => {
    const plain = await start();
    expect((await fetch(`${plain.url}/sync`)).headers.get('server-timing')).toBeNull();
    const timed = await start({ serverTiming: true });
    const header = (await fetch(`${timed.url}/sync`)).headers.get('server-timing');
    expect(header).toMatch(/^db;dur=[\d.]+;desc="2 queries", http;dur=0\.00;desc="0 calls", app;dur=[\d.]+$/);
  });
});

describe('instrument()', () => {
  it('takes a driver module a bundle hides from the require cache, and refuses anything else', () => {
    expect(instrument(Database)).toBe('better-sqlite3');
    expect(instrument({ default: Database })).toBe('better-sqlite3');
    expect(() => instrument({ query() {} })).toThrow(/not a driver the profiler knows/);
  });
});

describe('an empty panel says why', () => {
  it('names what the profiler follows in this process, and a database package it found loaded but does not follow; the configuration lists both', async () => {
    // A package of a kind no adapter knows, loaded as an app loads it.
    const root = tempDir();
    mkdirSync(path.join(root, 'node_modules', 'mongodb'), { recursive: true });
    writeFileSync(path.join(root, 'node_modules', 'mongodb', 'package.json'), '{"name":"mongodb","version":"6.3.0","main":"index.js"}');
    writeFileSync(path.join(root, 'node_modules', 'mongodb', 'index.js'), 'exports.MongoClient = class MongoClient {};\n');
    createRequire(path.join(root, 'app.js'))('mongodb');
    const profiler = webProfiler({ database: tempDb(), onError: () => {} });
    closing.push(() => profiler.close());
    const app = express();
    app.use(profiler);
    app.get('/nothing', (_req, res) => res.send('no query here'));
    const server = await listen(app);
    running.push(server);
    const res = await fetch(`${server.url}/nothing`);
    await res.text();
    profiler.flush();
    const token = res.headers.get('x-debug-token');
    const page = await (await fetch(`${server.url}/_profiler/${token}?panel=db`)).text();
    expect(page).toContain('Nothing was recorded for this panel.');
    expect(page).toMatch(/In this process the profiler follows [^<]*better-sqlite3 \d+\.\d+\.\d+/);
    expect(page).toMatch(/Loaded, not recorded:[\s\S]*mongodb 6\.3\.0<\/span>: no adapter: its work is not recorded/);
    const config = await (await fetch(`${server.url}/_profiler/${token}?panel=config`)).text();
    expect(config).toContain('Libraries recorded');
    expect(config).toMatch(/mongodb 6\.3\.0/);
  });
});
