import express from 'express';
import pg from 'pg';
import Cursor from 'pg-cursor';
import QueryStream from 'pg-query-stream';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { webProfiler } from '../src/index.js';
import { listen, tempDb, type Running } from './helpers.js';

const url = inject('pgUrl');
if (!url) {
  // Loud on purpose: CI installs PostgreSQL, so a skip there is a failure (see the test below).
  process.stderr.write(`\n!!! POSTGRESQL TESTS SKIPPED: ${inject('pgMissing')}\n\n`);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!url)('database queries: PostgreSQL through pg, against a real server', () => {
  let server: Running;
  let pool: pg.Pool;
  let client: pg.Client;
  let profiler: ReturnType<typeof webProfiler>;

  beforeAll(async () => {
    pool = new pg.Pool({ connectionString: url, max: 2 });
    client = new pg.Client({ connectionString: url });
    await client.connect();
    await pool.query(`DROP TABLE IF EXISTS accounts; CREATE TABLE accounts (id serial PRIMARY KEY, name text UNIQUE NOT NULL, api_token text);
      INSERT INTO accounts (name, api_token) SELECT 'user' || n, 'token-' || n FROM generate_series(1, 8) n;`);
    profiler = webProfiler({ database: tempDb(), onError: () => {} });
    const app = express();
    app.use(profiler);
    app.get('/pool', async (_req, res) => {
      const { rows } = await pool.query('SELECT id, name FROM accounts WHERE id = $1', [3]);
      res.json(rows);
    });
    app.get('/after-awaits/:id', async (req, res) => {
      await sleep(Number(req.query.wait ?? 1));
      const a = await pool.query('SELECT name FROM accounts WHERE id = $1', [Number(req.params.id)]);
      await sleep(1);
      const b = await client.query('SELECT count(*)::int AS n FROM accounts WHERE id <= $1', [Number(req.params.id)]);
      res.json({ name: a.rows[0].name, n: b.rows[0].n });
    });
    app.get('/n1', async (_req, res) => {
      const { rows } = await pool.query('SELECT id FROM accounts ORDER BY id');
      const names = [];
      for (const row of rows) names.push((await pool.query('SELECT name FROM accounts WHERE id = $1', [row.id])).rows[0].name);
      res.json(names);
    });
    app.get('/failing', async (_req, res) => {
      const message = await pool.query('SELECT * FROM no_such_table').then(() => '', (err: Error) => err.message);
      client.query('SELECT 1/0 AS broken', (err: Error | null) => res.status(500).json({ message, callback: err?.message }));
    });
    app.get('/pool-wait', async (_req, res) => {
      // Both pooled connections held a while: the query asked for now has to wait for one.
      const held = await Promise.all([pool.connect(), pool.connect()]);
      setTimeout(() => held.forEach((c) => c.release()), 300);
      const { rows } = await pool.query('SELECT 1 AS one');
      res.json(rows);
    });
    app.get('/cursor', async (_req, res) => {
      const conn = await pool.connect();
      const cursor = conn.query(new Cursor('SELECT id FROM accounts WHERE id <= $1 ORDER BY id', [5]));
      const first = await cursor.read(2);
      const rest = await cursor.read(10);
      await cursor.close();
      const streamed: number[] = [];
      const stream = conn.query(new QueryStream('SELECT id FROM accounts WHERE id > $1 ORDER BY id', [5]));
      for await (const row of stream) streamed.push((row as { id: number }).id);
      conn.release();
      res.json({ cursor: [...first, ...rest].map((r: { id: number }) => r.id), streamed });
    });
    app.get('/secret', async (_req, res) => {
      await pool.query('UPDATE accounts SET api_token = $1 WHERE name = $2', ['fresh-token-value', 'user1']);
      res.sendStatus(204);
    });
    server = await listen(app);
  });

  afterAll(async () => {
    await server?.close();
    profiler?.close();
    await client?.end();
    await pool?.end();
  });

  async function run(path: string) {
    const res = await fetch(server.url + path);
    const body = await res.text();
    profiler.flush();
    const token = res.headers.get('x-debug-token')!;
    const data = (await (await fetch(`${server.url}/_profiler/${token}?panel=db`, { headers: { accept: 'application/json' } })).json()).data;
    return { body, token, db: data };
  }

  it('records pool.query with its SQL, parameters, rows, caller line and layer', async () => {
    const { body, db } = await run('/pool');
    expect(JSON.parse(body)).toEqual([{ id: 3, name: 'user3' }]);
    expect(db.count).toBe(1);
    expect(db.queries[0]).toMatchObject({ driver: 'pg', sql: 'SELECT id, name FROM accounts WHERE id = $1', params: [3], rows: 1, layer: 'route GET /pool › handler', runnable: 'SELECT id, name FROM accounts WHERE id = 3' });
    expect(db.queries[0].caller).toMatch(/postgres\.test\.ts:\d+$/);
    expect(db.queries[0].wait).toBeGreaterThanOrEqual(0);
  });

  it('records a cursor and a query stream with their SQL, the rows they gave and how long they ran', async () => {
    const { body, db } = await run('/cursor');
    expect(JSON.parse(body)).toEqual({ cursor: [1, 2, 3, 4, 5], streamed: [6, 7, 8] });
    // The parameters as the cursor sends them (pg-cursor turns them into text as it is made).
    expect(db.queries.map((q: any) => [q.sql, q.params, q.rows])).toEqual([
      ['SELECT id FROM accounts WHERE id <= $1 ORDER BY id', ['5'], 5],
      ['SELECT id FROM accounts WHERE id > $1 ORDER BY id', ['5'], 3],
    ]);
    for (const q of db.queries) expect(q.duration).toBeGreaterThan(0);
  });

  it('gives queries after awaits to their own request, pooled and on a client, finishing out of order', async () => {
    const ids = [1, 2, 3, 4, 5];
    const results = await Promise.all(ids.map((id) => run(`/after-awaits/${id}?wait=${(6 - id) * 10}`)));
    results.forEach(({ body, db }, i) => {
      expect(JSON.parse(body)).toEqual({ name: `user${ids[i]}`, n: ids[i] });
      expect(db.queries.map((q: any) => q.params)).toEqual([[ids[i]], [ids[i]]]);
    });
  });

  it('flags the N+1 loop', async () => {
    const { db } = await run('/n1');
    expect(db.count).toBe(9);
    expect(db.groups.find((g: any) => g.nPlusOne)).toMatchObject({ sql: 'SELECT name FROM accounts WHERE id = $1', count: 8 });
  });

  it('records failed queries, promise and callback forms, and leaves the app\'s errors as they were', async () => {
    const { body, db } = await run('/failing');
    expect(JSON.parse(body)).toEqual({ message: 'relation "no_such_table" does not exist', callback: 'division by zero' });
    expect(db.queries.map((q: any) => [q.sql, q.error?.code, q.error?.message])).toEqual([
      ['SELECT * FROM no_such_table', '42P01', 'relation "no_such_table" does not exist'],
      ['SELECT 1/0 AS broken', '22012', 'division by zero'],
    ]);
  });

  it('shows the time spent waiting for a pooled connection apart from the query\'s', async () => {
    const { db } = await run('/pool-wait');
    const query = db.queries.find((q: any) => q.sql === 'SELECT 1 AS one');
    expect(query.wait).toBeGreaterThanOrEqual(250);
    expect(query.duration).toBeLessThan(query.wait);
  });

  it('redacts a secret column\'s parameter', async () => {
    const { db } = await run('/secret');
    expect(db.queries[0]).toMatchObject({ params: ['[redacted]', 'user1'], runnable: "UPDATE accounts SET api_token = $1 WHERE name = 'user1'" });
  });

  it('explains a recorded SELECT with plain EXPLAIN on the app\'s pool, never ANALYZE', async () => {
    const { token } = await run('/pool');
    const res = await fetch(`${server.url}/_profiler/${token}/db/0/explain`, { headers: { accept: 'application/json' } });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.driver).toBe('pg');
    const text = body.plan.map((r: any) => r.detail).join('\n');
    expect(text).toMatch(/Scan .*on accounts/);
    expect(text).not.toMatch(/actual time/);
    const page = await (await fetch(`${server.url}/_profiler/${token}?panel=db&explain=0`)).text();
    expect(page).toContain('Query plan (EXPLAIN, on the app');
  });

  it('will not explain on an app\'s client that is inside a transaction', async () => {
    const { token } = await run('/after-awaits/2');
    await client.query('BEGIN');
    try {
      const res = await fetch(`${server.url}/_profiler/${token}/db/1/explain`, { headers: { accept: 'application/json' } });
      expect(res.status).toBe(404);
      expect((await res.json()).detail).toContain('busy or inside a transaction');
    } finally {
      await client.query('ROLLBACK');
    }
    const res = await fetch(`${server.url}/_profiler/${token}/db/1/explain`, { headers: { accept: 'application/json' } });
    expect(res.status).toBe(200);
  });
});

describe.skipIf(!url)('secrets in SQL through calls, casts and column-less INSERTs, and in EXPLAIN plans (PostgreSQL)', () => {
  const PASSWORD = 'Sup3r-Secret-PW';
  // Upper case in it: PostgreSQL folds lower($1) into a constant, which a plan prints in lower case.
  const SESSION = 'sess_LIVE_9fQ2xKd81LmZp04TrW7e';
  let server: Running;
  let pool: pg.Pool;
  let profiler: ReturnType<typeof webProfiler>;

  beforeAll(async () => {
    pool = new pg.Pool({ connectionString: url, max: 2 });
    await pool.query(`CREATE EXTENSION IF NOT EXISTS pgcrypto; DROP TABLE IF EXISTS members;
      CREATE TABLE members (id serial PRIMARY KEY, email text NOT NULL, password_hash text NOT NULL, token text NOT NULL)`);
    profiler = webProfiler({ database: tempDb(), onError: () => {} });
    const app = express();
    app.use(profiler);
    app.use(express.json());
    // The session token is made by the server: nothing in the request names it.
    app.post('/signup', async (req, res) => {
      const { email, password } = req.body;
      await pool.query("INSERT INTO members VALUES (DEFAULT, $1, crypt($2, gen_salt('bf', 4)), $3)", [email, password, SESSION]);
      await pool.query("INSERT INTO members (email, password_hash, token) VALUES ($1, crypt($2, gen_salt('bf', 4)), $3)", [email, password, SESSION]);
      await pool.query("INSERT INTO members (email, password_hash, token) SELECT $1, crypt($2, gen_salt('bf', 4)), $3", [email, password, SESSION]);
      res.status(201).json({ ok: true });
    });
    app.post('/login', async (req, res) => {
      const { rows } = await pool.query('SELECT id FROM members WHERE email = $1 AND password_hash = crypt($2, password_hash)', [req.body.email, req.body.password]);
      res.json({ ok: rows.length > 0 });
    });
    app.get('/me', async (_req, res) => {
      const a = await pool.query('SELECT id FROM members WHERE lower(token) = lower($1)', [SESSION]);
      const b = await pool.query('SELECT id FROM members WHERE token = ANY($1)', [[SESSION]]);
      const c = await pool.query('SELECT id FROM members WHERE token = CAST($1 AS text)', [SESSION]);
      res.json({ found: [a.rowCount, b.rowCount, c.rowCount] });
    });
    server = await listen(app);
  });

  afterAll(async () => {
    await server?.close();
    profiler?.close();
    await pool?.end();
  });

  async function stored(res: Response) {
    await res.text();
    profiler.flush();
    const token = res.headers.get('x-debug-token')!;
    const profile = await (await fetch(`${server.url}/_profiler/${token}`, { headers: { accept: 'application/json' } })).text();
    return { token, profile, db: JSON.parse(profile).collectors.db };
  }

  const leaks = (text: string) => [PASSWORD, SESSION, SESSION.toLowerCase()].filter((secret) => text.includes(secret));

  it('keeps no secret value in the db panel, the runnable SQL or the JSON twin', async () => {
    const post = (path: string) => fetch(server.url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'ada@example.com', password: PASSWORD }) });
    for (const res of [await post('/signup'), await post('/login'), await fetch(`${server.url}/me`)]) {
      const { profile, db } = await stored(res);
      expect(res.status).toBeLessThan(300);
      expect(leaks(profile)).toEqual([]);
      expect(db.count).toBeGreaterThan(0);
      // What is not secret stays readable: the e-mail address, and the placeholders of what went.
      for (const q of db.queries) expect(q.runnable).toMatch(/\$\d/);
      if (db.queries[0].sql.startsWith('INSERT')) expect(db.queries[0].params[0]).toBe('ada@example.com');
    }
  });

  it('shows EXPLAIN plans without the values the profile hid', async () => {
    const login = await stored(await fetch(`${server.url}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'ada@example.com', password: PASSWORD }) }));
    const me = await stored(await fetch(`${server.url}/me`));
    for (const [token, n] of [[login.token, 0], [me.token, 0], [me.token, 1], [me.token, 2]] as const) {
      const res = await fetch(`${server.url}/_profiler/${token}/db/${n}/explain`, { headers: { accept: 'application/json' } });
      expect(res.status, `${token} #${n}`).toBe(200);
      const plan = (await res.json()).plan.map((r: any) => r.detail).join('\n');
      expect(plan, `${token} #${n}`).toMatch(/Scan .*on members/);
      expect(leaks(plan), plan).toEqual([]);
      const page = await (await fetch(`${server.url}/_profiler/${token}?panel=db&explain=${n}`)).text();
      expect(leaks(page)).toEqual([]);
    }
    // The e-mail address was not hidden: it stays in the plan, so the plan still says what it looked for.
    const shown = await (await fetch(`${server.url}/_profiler/${login.token}/db/0/explain`, { headers: { accept: 'application/json' } })).json();
    expect(shown.plan.map((r: any) => r.detail).join('\n')).toContain("'ada@example.com'");
  });
});

it('has a PostgreSQL server in CI', () => {
  if (process.env.CI) expect(inject('pgMissing')).toBe('');
});
