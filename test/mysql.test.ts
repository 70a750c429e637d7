import express from 'express';
import mysqljs from 'mysql';
import mysql from 'mysql2';
import mysqlPromise from 'mysql2/promise';
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { webProfiler } from '../src/index.js';
import { listen, readRows, tempDb, type Running } from './helpers.js';

const url = inject('mysqlUrl');
if (!url) process.stderr.write(`\n!!! MYSQL TESTS SKIPPED: ${inject('mysqlMissing')}\n\n`);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!url)('database queries: mysql2 through its tracing channels, against a real MariaDB', () => {
  let server: Running;
  let pool: mysqlPromise.Pool;
  let callbacks: mysql.Pool;
  let profiler: ReturnType<typeof webProfiler>;

  beforeAll(async () => {
    // The profiler first, as an app mounts it: it subscribes to the channels mysql2 publishes on.
    profiler = webProfiler({ database: tempDb(), onError: () => {} });
    pool = mysqlPromise.createPool({ uri: url, connectionLimit: 3 });
    callbacks = mysql.createPool({ uri: url, connectionLimit: 1 });
    await pool.query('CREATE DATABASE IF NOT EXISTS shop');
    await pool.query('DROP TABLE IF EXISTS shop.accounts');
    await pool.query('CREATE TABLE shop.accounts (id INT PRIMARY KEY, name VARCHAR(40) UNIQUE, api_token VARCHAR(80))');
    for (let i = 1; i <= 6; i++) await pool.execute('INSERT INTO shop.accounts VALUES (?, ?, ?)', [i, `user${i}`, `token-${i}`]);
    const app = express();
    app.use(profiler);
    app.get('/accounts/:id', async (req, res) => {
      await sleep(Number(req.query.wait ?? 1));
      const [rows] = await pool.execute('SELECT name FROM shop.accounts WHERE id = ?', [Number(req.params.id)]);
      const [all] = await pool.query('SELECT id FROM shop.accounts ORDER BY id');
      res.json({ name: (rows as { name: string }[])[0].name, count: (all as unknown[]).length });
    });
    app.get('/n1', async (_req, res) => {
      const [all] = await pool.query('SELECT id FROM shop.accounts ORDER BY id');
      for (const row of all as { id: number }[]) await pool.execute('SELECT name FROM shop.accounts WHERE id = ?', [row.id]);
      res.send('ok');
    });
    app.get('/failing', (_req, res) => {
      callbacks.query('SELECT * FROM shop.missing', (err) => {
        callbacks.query("UPDATE shop.accounts SET api_token = 'fresh-secret' WHERE id = 1", (err2, result) =>
          res.json({ error: err?.message, changed: (result as { affectedRows: number }).affectedRows, err2: err2?.message ?? null }));
      });
    });
    server = await listen(app);
  });

  afterAll(async () => {
    await server?.close();
    profiler?.close();
    await pool?.end();
    await new Promise((resolve) => callbacks?.end(resolve));
  });

  async function run(path: string) {
    const res = await fetch(server.url + path);
    const body = await res.text();
    profiler.flush();
    const token = res.headers.get('x-debug-token')!;
    const data = (await (await fetch(`${server.url}/_profiler/${token}?panel=db`, { headers: { accept: 'application/json' } })).json()).data;
    return { body, db: data, token };
  }

  it('offers no EXPLAIN where it cannot run, and says why when asked', async () => {
    const { db, token } = await run('/accounts/1');
    expect(db.queries.every((q: any) => q.explainable === false)).toBe(true);
    const page = await (await fetch(`${server.url}/_profiler/${token}?panel=db`)).text();
    expect(page).not.toContain('explain=0');
    const asked = await fetch(`${server.url}/_profiler/${token}/db/0/explain`, { headers: { accept: 'application/json' } });
    expect(asked.status).toBe(404);
    expect((await asked.json()).detail).toContain('its driver does not say which connection ran it');
  });

  it('records execute() and query() of the promise API, after awaits, each in its own request', async () => {
    const ids = [1, 2, 3, 4];
    const results = await Promise.all(ids.map((id) => run(`/accounts/${id}?wait=${(5 - id) * 10}`)));
    results.forEach(({ body, db }, i) => {
      expect(JSON.parse(body)).toEqual({ name: `user${ids[i]}`, count: 6 });
      expect(db.queries.map((q: any) => [q.driver, q.sql, q.params, q.rows])).toEqual([
        ['mysql', 'SELECT name FROM shop.accounts WHERE id = ?', [ids[i]], 1],
        ['mysql', 'SELECT id FROM shop.accounts ORDER BY id', undefined, 6],
      ]);
      expect(db.queries[0].layer).toBe('route GET /accounts/:id › handler');
      expect(db.queries[0].caller).toMatch(/mysql\.test\.ts:\d+$/);
      expect(db.queries[0].wait).toBeGreaterThanOrEqual(0);
    });
  });

  it('flags the N+1 loop', async () => {
    const { db } = await run('/n1');
    expect(db.count).toBe(7);
    // The pool runs each statement in a callback of its own: the line is the one that asked the pool for a connection.
    expect(db.groups.find((g: any) => g.nPlusOne)).toMatchObject({ sql: 'SELECT name FROM shop.accounts WHERE id = ?', count: 6, callers: [{ caller: expect.stringMatching(/mysql\.test\.ts:\d+$/), count: 6 }] });
  });

  it('records a failed query with its error, and redacts a secret column\'s literal, in the callback API', async () => {
    const { body, db } = await run('/failing');
    expect(JSON.parse(body)).toMatchObject({ error: "Table 'shop.missing' doesn't exist", changed: 1 });
    expect(db.queries[0]).toMatchObject({ sql: 'SELECT * FROM shop.missing', error: { code: 'ER_NO_SUCH_TABLE', message: "Table 'shop.missing' doesn't exist" } });
    expect(db.queries[1]).toMatchObject({ sql: "UPDATE shop.accounts SET api_token = '[redacted]' WHERE id = 1", rows: 1 });
  });
});

it('has a MariaDB server in CI', () => {
  if (process.env.CI) expect(inject('mysqlMissing')).toBe('');
});

describe.skipIf(!url)('database queries: the mysql package (mysqljs), against a real MariaDB', () => {
  it('records callback, pooled and streamed statements with their SQL, rows, errors and caller lines', async () => {
    const profiler = webProfiler({ database: tempDb(), onError: () => {} });
    const pool = mysqljs.createPool({ ...poolConfig(url), connectionLimit: 1 });
    const q = (sql: string, values?: unknown[]) => new Promise<any>((resolve, reject) => pool.query(sql, values, (err, rows) => (err ? reject(err) : resolve(rows))));
    await q('CREATE DATABASE IF NOT EXISTS legacy');
    await q('CREATE TABLE IF NOT EXISTS legacy.items (id INT PRIMARY KEY, name VARCHAR(40))');
    await q('REPLACE INTO legacy.items VALUES (1, ?), (2, ?)', ['one', 'two']);
    const app = express();
    app.use(profiler);
    app.get('/items', async (_req, res) => {
      const rows = await q('SELECT name FROM legacy.items WHERE id > ?', [0]);
      const names: string[] = [];
      await new Promise<void>((resolve, reject) => {
        pool.getConnection((err, connection) => {
          if (err) return reject(err);
          connection.query('SELECT id FROM legacy.items').on('result', (row: { id: number }) => names.push(String(row.id))).on('end', () => {
            connection.release();
            resolve();
          });
        });
      });
      let failed = '';
      await q('SELECT nope FROM legacy.items').catch((err: Error) => (failed = err.message));
      res.json({ rows: rows.length, names, failed });
    });
    const server = await listen(app);
    try {
      const res = await fetch(`${server.url}/items`);
      expect(await res.json()).toEqual({ rows: 2, names: ['1', '2'], failed: expect.stringContaining('ER_BAD_FIELD_ERROR') });
      profiler.flush();
      const db = (await (await fetch(`${server.url}/_profiler/${res.headers.get('x-debug-token')}?panel=db`, { headers: { accept: 'application/json' } })).json()).data;
      expect(db.queries.map((x: any) => [x.driver, x.sql, x.rows])).toEqual([
        ['mysql', "SELECT name FROM legacy.items WHERE id > 0", 2],
        ['mysql', 'SELECT id FROM legacy.items', 2],
        ['mysql', 'SELECT nope FROM legacy.items', undefined],
      ]);
      // query() formats its values into the SQL before sending it: they are there, not beside it.
      expect(db.queries[0].params).toBeUndefined();
      expect(db.queries[2].error.code).toBe('ER_BAD_FIELD_ERROR');
      for (const x of db.queries) expect(x.caller).toMatch(/mysql\.test\.ts:\d+$/);
    } finally {
      await server.close();
      profiler.close();
      pool.end();
    }
  });
});

/** mysqljs takes no URL with a path of options as mysql2 does: host, port, user from it. */
function poolConfig(uri: string) {
  const u = new URL(uri);
  return { host: u.hostname, port: Number(u.port), user: decodeURIComponent(u.username) };
}

describe.skipIf(!url)('a secret formatted into the SQL by query(), on mysql2 with and without its tracing channels', () => {
  // 3.11 has no tracing channels: its commands are followed as connections queue them.
  it.each([['current', 'mysql2/promise'], ['3.11', 'mysql2-3.11/promise']])('mysql2 %s: the value is redacted in the SQL and kept nowhere else', async (_version, name) => {
    const driver = createRequire(import.meta.url)(name) as typeof mysqlPromise;
    const database = tempDb();
    const profiler = webProfiler({ database, onError: () => {} });
    const pool = driver.createPool({ uri: url, connectionLimit: 1 });
    await pool.query('CREATE DATABASE IF NOT EXISTS shop');
    await pool.query('CREATE TABLE IF NOT EXISTS shop.verifications (id INT AUTO_INCREMENT PRIMARY KEY, email VARCHAR(80), verification_token VARCHAR(80))');
    const app = express();
    app.use(profiler);
    app.post('/verify', async (_req, res) => {
      await pool.query('INSERT INTO shop.verifications (email, verification_token) VALUES (?, ?)', ['ada@example.test', 'verify-secret-4f2a']);
      res.send('sent');
    });
    const server = await listen(app);
    try {
      const res = await fetch(`${server.url}/verify`, { method: 'POST' });
      expect(await res.text()).toBe('sent');
      profiler.flush();
      const [query] = readRows(database).find((r) => r.token === res.headers.get('x-debug-token'))!.collectors.db.queries;
      expect(query.sql).toBe("INSERT INTO shop.verifications (email, verification_token) VALUES ('ada@example.test', '[redacted]')");
      expect(query.params).toBeUndefined();
      expect(readFileSync(database).toString('latin1')).not.toContain('verify-secret-4f2a');
    } finally {
      await server.close();
      profiler.close();
      await pool.end();
    }
  });
});
