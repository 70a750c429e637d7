import express from 'express';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { webProfiler } from '../src/index.js';
import { listen, readRows, tempDb, tempDir, type Running } from './helpers.js';

/** Node's own SQLite (22.13 and later, no flag): an app of the shape apps on Node 22 and 24 have. */
const sqlite = process.getBuiltinModule?.('node:sqlite') as typeof import('node:sqlite') | undefined;

const running: Running[] = [];
const closing: (() => void)[] = [];
afterAll(async () => {
  for (const close of closing.splice(0)) close();
  await Promise.all(running.splice(0).map((r) => r.close()));
});

function build(db: import('node:sqlite').DatabaseSync, profiler?: ReturnType<typeof webProfiler>) {
  const app = express();
  if (profiler) app.use(profiler);
  app.use(express.json());
  app.post('/login', (req, res) => {
    const user = db.prepare('SELECT id, name FROM users WHERE name = ? AND password = ?').get(req.body.name, req.body.password);
    res.status(user ? 200 : 401).json({ user: user ?? null });
  });
  app.get('/users', async (_req, res) => {
    await new Promise((r) => setTimeout(r, 1));
    const names = db.prepare('SELECT name FROM users ORDER BY name').iterate().map((row) => (row as { name: string }).name).toArray();
    const all = db.prepare('SELECT id FROM users WHERE id > :min').all({ min: 0 });
    db.exec("UPDATE users SET seen = seen + 1 WHERE name = 'ada'");
    const changed = db.prepare('UPDATE users SET seen = 0 WHERE id = ?').run(2);
    res.json({ names, count: all.length, changed: Number(changed.changes) });
  });
  app.get('/broken', (_req, res) => {
    try {
      db.prepare('SELECT nope FROM missing_table').all();
      res.send('?');
    } catch (err) {
      res.status(500).send((err as Error).message);
    }
  });
  return app;
}

function database(): import('node:sqlite').DatabaseSync {
  const db = new sqlite!.DatabaseSync(path.join(tempDir(), 'app.sqlite'));
  db.exec("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT UNIQUE, password TEXT, seen INTEGER DEFAULT 0); INSERT INTO users (name, password) VALUES ('ada', 'lovelace-pw'), ('grace', 'hopper-pw')");
  closing.push(() => db.close());
  return db;
}

describe.skipIf(!sqlite)('node:sqlite, no setup', () => {
  it('records exec, prepare and each statement call with its SQL, redacted params, rows, caller and errors; the app answers as bare', async () => {
    const store = tempDb();
    const profiler = webProfiler({ database: store, onError: () => {} });
    closing.push(() => profiler.close());
    const bare = await listen(build(database()));
    const recorded = await listen(build(database(), profiler));
    running.push(bare, recorded);

    const answers: unknown[][] = [[], []];
    const tokens: string[] = [];
    for (const [i, server] of [bare, recorded].entries()) {
      for (const [method, url, body] of [['POST', '/login', { name: 'ada', password: 'lovelace-pw' }], ['GET', '/users'], ['GET', '/broken']] as const) {
        const res = await fetch(`${server.url}${url}`, { method, headers: { 'content-type': 'application/json' }, body: body ? JSON.stringify(body) : undefined });
        answers[i].push([res.status, await res.text()]);
        if (i === 1) tokens.push(res.headers.get('x-debug-token')!);
      }
    }
    expect(answers[1]).toEqual(answers[0]);
    profiler.flush();
    const rows = readRows(store);
    const db = (token: string) => rows.find((r) => r.token === token)!.collectors.db;

    const [login] = db(tokens[0]).queries;
    expect(login).toMatchObject({ sql: 'SELECT id, name FROM users WHERE name = ? AND password = ?', params: ['ada', '[redacted]'], rows: 1 });
    expect(login.caller).toMatch(/node-sqlite\.test\.ts:\d+$/);

    const users = db(tokens[1]).queries;
    expect(users.map((q: { sql: string; rows: number }) => [q.sql, q.rows])).toEqual([
      ['SELECT name FROM users ORDER BY name', 2],
      ['SELECT id FROM users WHERE id > :min', 2],
      ["UPDATE users SET seen = seen + 1 WHERE name = 'ada'", undefined],
      ['UPDATE users SET seen = 0 WHERE id = ?', 1],
    ]);
    expect(users[1].params).toEqual({ min: 0 });
    for (const q of users) expect(q.caller).toMatch(/node-sqlite\.test\.ts:\d+$/);

    const [broken] = db(tokens[2]).queries;
    expect(broken.sql).toBe('SELECT nope FROM missing_table');
    expect(broken.error).toMatchObject({ message: 'no such table: missing_table' });

    // Nothing of the password in the store.
    expect(readFileSync(store).toString('latin1')).not.toContain('lovelace-pw');
  });

  it('explains a recorded SELECT through a read-only connection of its own', async () => {
    const profiler = webProfiler({ database: tempDb(), onError: () => {} });
    closing.push(() => profiler.close());
    const server = await listen(build(database(), profiler));
    running.push(server);
    const res = await fetch(`${server.url}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'grace', password: 'x' }) });
    expect(res.status).toBe(401);
    profiler.flush();
    const explained = await fetch(`${server.url}/_profiler/${res.headers.get('x-debug-token')}/db/0/explain`, { headers: { accept: 'application/json' } });
    expect(explained.status).toBe(200);
    const body = await explained.json();
    expect(body.driver).toBe('node:sqlite');
    expect(body.plan.map((r: { detail: string }) => r.detail).join('\n')).toMatch(/SEARCH users USING INDEX/);
  });
});
