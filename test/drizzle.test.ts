import Database from './fixtures/better-sqlite3.cjs';
import { eq } from 'drizzle-orm';
import { drizzle as sqliteDrizzle } from 'drizzle-orm/better-sqlite3';
import { drizzle as pgDrizzle } from 'drizzle-orm/node-postgres';
import { integer as pgInteger, pgTable, text as pgText } from 'drizzle-orm/pg-core';
import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import express from 'express';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { webProfiler } from '../src/index.js';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { listen, startFixture, type Running } from './helpers.js';

const pgUrl = inject('pgUrl');

const users = sqliteTable('users', { id: integer('id').primaryKey(), name: text('name') });
const accounts = pgTable('drizzle_accounts', { id: pgInteger('id').primaryKey(), name: pgText('name') });

let server: Running;
let profiler: ReturnType<typeof webProfiler>;
let pool: pg.Pool | undefined;

beforeAll(async () => {
  profiler = webProfiler({ database: ':memory:', onError: () => {} });
  const sqlite = new Database(':memory:');
  sqlite.exec("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users VALUES (1, 'ada'), (2, 'grace')");
  const db = sqliteDrizzle(sqlite);
  const app = express();
  app.use(profiler);
  app.get('/sqlite', async (_req, res) => {
    const one = await db.select().from(users).where(eq(users.id, 1));
    await db.update(users).set({ name: 'ada' }).where(eq(users.id, 1));
    const all = db.select().from(users).all();
    res.json({ one, all });
  });
  if (pgUrl) {
    pool = new pg.Pool({ connectionString: pgUrl, max: 2 });
    await pool.query('CREATE TABLE IF NOT EXISTS drizzle_accounts (id int PRIMARY KEY, name text)');
    await pool.query("INSERT INTO drizzle_accounts VALUES (1, 'ada') ON CONFLICT DO NOTHING");
    const pgDb = pgDrizzle(pool);
    app.get('/pg', async (_req, res) => {
      const rows = await pgDb.select().from(accounts).where(eq(accounts.id, 1));
      res.json(rows);
    });
  }
  server = await listen(app);
});

afterAll(async () => {
  await server?.close();
  profiler?.close();
  await pool?.end();
});

async function queriesOf(path: string) {
  const res = await fetch(server.url + path);
  expect(res.status).toBe(200);
  const token = res.headers.get('x-debug-token')!;
  return (await (await fetch(`${server.url}/_profiler/${token}?panel=db`, { headers: { accept: 'application/json' } })).json()).data.queries;
}

const lineOf = (caller: string) => Number(caller.slice(import.meta.filename.length + 1));

describe('Drizzle queries', () => {
  it('carry the line that awaited them, not the one that answered (better-sqlite3)', async () => {
    const queries = await queriesOf('/sqlite');
    // Three statements on three lines in a row, each its own (vitest's lines are the transformed file's).
    expect(queries.map((q: any) => q.caller.slice(0, import.meta.filename.length))).toEqual([import.meta.filename, import.meta.filename, import.meta.filename]);
    const [a, b, c] = queries.map((q: any) => lineOf(q.caller));
    expect([b - a, c - b]).toEqual([1, 1]);
    expect(queries.every((q: any) => q.callerFrom === undefined)).toBe(true);
  });

  it.skipIf(!pgUrl)('carry the line that awaited them (node-postgres, through its pool)', async () => {
    const queries = await queriesOf('/pg');
    expect(queries).toEqual([expect.objectContaining({ sql: expect.stringContaining('from "drizzle_accounts"'), caller: expect.stringMatching(/drizzle\.test\.ts:\d+$/) })]);
    expect(queries[0].callerFrom).toBeUndefined();
  });
});

describe('Drizzle as an ES module, in an app whose entry is CommonJS', () => {
  it('carries the awaited lines for dialects imported after the profiler started, which loaded none of them', async () => {
    const file = path.resolve('test/fixtures/drizzle-cjs.cjs');
    const app = await startFixture(file, []);
    try {
      const res = await fetch(`${app.url}/users/1`);
      const body = await res.json();
      expect(body.user).toEqual({ id: 1, name: 'ada' });
      // Where Node can tell: the profiler did not load drizzle's other dialects (a second and some 250 MB of heap).
      if (body.dialects !== null) expect(body.dialects).toEqual(['sqlite-core']);
      const token = res.headers.get('x-debug-token')!;
      const { data } = await (await fetch(`${app.url}/_profiler/${token}?panel=db`, { headers: { accept: 'application/json' } })).json();
      const lines = readFileSync(file, 'utf8').split('\n');
      const lineOf = (text: string) => lines.findIndex((l) => l.includes(text)) + 1;
      expect(data.queries.map((q: any) => [q.caller, q.callerFrom])).toEqual([
        [`${file}:${lineOf('await db.select()')}`, undefined],
        [`${file}:${lineOf('await db.update(users)')}`, undefined],
      ]);
    } finally {
      await app.stop();
    }
  });
});
