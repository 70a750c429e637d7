// node-sqlite3, the driver under Sequelize's SQLite dialect and knex's sqlite3 client: recorded
// with no setup, directly and through both.
import express from 'express';
import knex from 'knex';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Sequelize, DataTypes } from 'sequelize';
import sqlite3 from 'sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { webProfiler } from '../src/index.js';
import { listen, tempDb, tempDir, type Running } from './helpers.js';

const running: Running[] = [];
const closing: (() => unknown)[] = [];
afterAll(async () => {
  await Promise.all(running.splice(0).map((r) => r.close()));
  for (const close of closing) await close();
});

const THIS_FILE = /sqlite3\.test\.ts:\d+$/;

describe('database queries: sqlite3 (node-sqlite3), no setup', () => {
  it('records run, get, all, each and exec, their rows and errors, directly and through knex and Sequelize, with caller lines', async () => {
    const file = path.join(tempDir(), 'app.sqlite');
    const db = new sqlite3.Database(file);
    closing.push(() => new Promise((resolve) => db.close(resolve)));
    const call = <T>(fn: (cb: (err: Error | null, value?: T) => void) => void) => new Promise<T>((resolve, reject) => fn((err, value) => (err ? reject(err) : resolve(value as T))));
    await call((cb) => db.exec('CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO items (name) VALUES (\'one\'), (\'two\'), (\'three\')', cb));
    const orm = new Sequelize({ dialect: 'sqlite', storage: file, logging: false });
    closing.push(() => orm.close());
    const Item = orm.define('items', { id: { type: DataTypes.INTEGER, primaryKey: true }, name: DataTypes.STRING }, { timestamps: false });
    const builder = knex({ client: 'sqlite3', connection: { filename: file }, useNullAsDefault: true });
    closing.push(() => builder.destroy());

    const profiler = webProfiler({ database: tempDb(), onError: () => {} });
    closing.push(() => profiler.close());
    const app = express();
    app.use(profiler);
    app.get('/direct', async (_req, res) => {
      const all = await call<unknown[]>((cb) => db.all('SELECT * FROM items WHERE id > ?', [1], cb));
      const one = await call<unknown>((cb) => db.get('SELECT name FROM items WHERE id = ?', 1, cb));
      const changed = await new Promise<number>((resolve, reject) => db.run('UPDATE items SET name = ? WHERE id = ?', ['uno', 1], function (this: { changes: number }, err: Error | null) {
        if (err) reject(err);
        else resolve(this.changes);
      }));
      let seen = 0;
      await call<number>((cb) => db.each('SELECT id FROM items', () => seen++, cb));
      const failed = await call((cb) => db.all('SELECT nope FROM items', cb)).then(() => '', (err: Error) => err.message);
      res.json({ all: all.length, one, changed, seen, failed });
    });
    app.get('/orms', async (_req, res) => {
      const byKnex = await builder('items').select('name').where('id', '<', 3).orderBy('id');
      const bySequelize = await Item.findAll({ where: { id: 3 } });
      res.json({ byKnex: byKnex.length, bySequelize: bySequelize.map((i) => i.get('name')) });
    });
    const server = await listen(app);
    running.push(server);
    const panel = async (path: string) => {
      const res = await fetch(server.url + path);
      const body = await res.json();
      profiler.flush();
      const data = (await (await fetch(`${server.url}/_profiler/${res.headers.get('x-debug-token')}?panel=db`, { headers: { accept: 'application/json' } })).json()).data;
      return { body, queries: data.queries };
    };

    const direct = await panel('/direct');
    expect(direct.body).toEqual({ all: 2, one: { name: 'one' }, changed: 1, seen: 3, failed: expect.stringContaining('no such column: nope') });
    expect(direct.queries.map((q: any) => [q.driver, q.sql, q.params, q.rows])).toEqual([
      ['sqlite', 'SELECT * FROM items WHERE id > ?', [1], 2],
      ['sqlite', 'SELECT name FROM items WHERE id = ?', 1, 1],
      ['sqlite', 'UPDATE items SET name = ? WHERE id = ?', ['uno', 1], 1],
      ['sqlite', 'SELECT id FROM items', undefined, 3],
      ['sqlite', 'SELECT nope FROM items', undefined, undefined],
    ]);
    expect(direct.queries[4].error.message).toContain('no such column: nope');
    for (const q of direct.queries) expect(q.caller).toMatch(THIS_FILE);

    const orms = await panel('/orms');
    expect(orms.body).toEqual({ byKnex: 2, bySequelize: ['three'] });
    const sql = orms.queries.map((q: any) => q.sql);
    expect(sql).toContain('select `name` from `items` where `id` < ? order by `id` asc');
    expect(sql.some((s: string) => /^SELECT `id`, `name` FROM `items` AS `items` WHERE `items`.`id` = 3;?$/.test(s))).toBe(true);
    for (const q of orms.queries) expect(q.caller).toMatch(THIS_FILE);
    // Sequelize runs its SELECT from a callback of node-sqlite3's (retry-as-promised in between): no line of the app's is
    // on its stack nor in its async frames. It is said to be unknown, with the line that answered given as that.
    const select = orms.queries.find((q: any) => q.sql.startsWith('SELECT `id`'));
    const answered = readFileSync(path.resolve('test/sqlite3.test.ts'), 'utf8').split('\n').findIndex((l) => l.includes('res.json({ byKnex')) + 1;
    expect([select.caller, select.callerFrom]).toEqual([`${path.resolve('test/sqlite3.test.ts')}:${answered}`, 'response']);
    expect(orms.queries.find((q: any) => q.sql.startsWith('select `name`')).callerFrom).toBeUndefined();
  });

  it('a knex transaction that commits after the response: its COMMIT says it ran after the response, from a callback', async () => {
    const file = path.join(tempDir(), 'tx.sqlite');
    const builder = knex({ client: 'sqlite3', connection: { filename: file }, useNullAsDefault: true });
    closing.push(() => builder.destroy());
    await builder.schema.createTable('links', (t) => { t.increments('id'); t.string('url'); });
    const profiler = webProfiler({ database: tempDb(), onError: () => {} });
    closing.push(() => profiler.close());
    const app = express();
    app.use(profiler);
    app.post('/links', async (_req, res) => {
      await builder.transaction(async (trx) => {
        await trx('links').insert({ url: 'https://example.test/a' });
        // Answered inside the transaction: knex commits once this callback's promise settles.
        res.status(201).send('made');
      });
    });
    const server = await listen(app);
    running.push(server);
    const res = await fetch(`${server.url}/links`, { method: 'POST' });
    expect(res.status).toBe(201);
    const queries = (await (await fetch(`${server.url}/_profiler/${res.headers.get('x-debug-token')}?panel=db`, { headers: { accept: 'application/json' } })).json()).data.queries;
    const commit = queries.find((q: any) => /^COMMIT/i.test(q.sql));
    expect(commit).toMatchObject({ after: expect.any(String), callerFrom: 'after' });
    expect(commit.caller).toBeUndefined();
    // Every statement has the app's line or says where it ran from.
    for (const q of queries) expect(q.caller !== undefined || q.callerFrom !== undefined, q.sql).toBe(true);
    const page = await (await fetch(`${server.url}/_profiler/${res.headers.get('x-debug-token')}?panel=db`)).text();
    expect(page).toContain('ran after the response</abbr>, from a callback');
  });
});
