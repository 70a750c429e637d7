import Database from './fixtures/better-sqlite3.cjs';
import express from 'express';
import nodemailer from 'nodemailer';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webProfiler } from '../src/index.js';
import { assertMailSent, assertNoException, assertNoNPlusOne, assertQuery, assertQueryCount, matchers, profileOf, tokenOf } from '../src/testing/index.js';
import { listen, tempDb, type Running } from './helpers.js';
import type {} from '../setup/vitest.d.mts';

expect.extend(matchers);

let server: Running;
let profiler: ReturnType<typeof webProfiler>;
let app: express.Express;

beforeAll(async () => {
  profiler = webProfiler({ database: tempDb(), onError: () => {} });
  const db = new Database(':memory:');
  db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a')");
  app = express();
  app.use(profiler);
  app.get('/one', (_req, res) => res.json(db.prepare('SELECT v FROM t WHERE id = ?').get(1)));
  const mail = nodemailer.createTransport(profiler.mailTransport());
  app.get('/loop', async (_req, res) => {
    for (let i = 0; i < 5; i++) db.prepare('SELECT v FROM t WHERE id = ?').get(1);
    await mail.sendMail({ from: 'shop@example.test', to: 'Ada <ada@example.test>', subject: 'Your order', text: 'Thanks' });
    res.send('ok');
  });
  app.get('/boom', () => {
    throw new TypeError('no such order');
  });
  app.use(profiler.errorHandler);
  server = await listen(app);
});

afterAll(async () => {
  await server?.close();
  profiler?.close();
});

describe('profileOf', () => {
  it('finds the token in a fetch Response, a supertest response, a headers object, a Headers and a string', async () => {
    const res = await fetch(`${server.url}/one`);
    const token = res.headers.get('x-debug-token')!;
    const test = await request(app).get('/one');
    expect([tokenOf(res), tokenOf(res.headers), tokenOf({ 'X-Debug-Token': token }), tokenOf(token), tokenOf({ headers: { 'x-debug-token': [token] } })]).toEqual([token, token, token, token, token]);
    expect(tokenOf(test)).toBe(test.headers['x-debug-token']);
    expect(tokenOf('not a token')).toBeUndefined();
    expect(tokenOf({})).toBeUndefined();
  });

  it('reads the same profile in this process and, given its URL, from the server\'s JSON twin', async () => {
    const res = await fetch(`${server.url}/one`);
    const here = await profileOf(res);
    const there = await profileOf(res, { url: server.url });
    expect(here.collectors.db).toEqual(there.collectors.db);
    expect((here.collectors.db as any).queries[0].sql).toBe('SELECT v FROM t WHERE id = ?');
  });

  it('says what is wrong with what it was given', async () => {
    await expect(profileOf({})).rejects.toThrow(/no X-Debug-Token in what it was given/);
    await expect(profileOf('abcdef')).rejects.toThrow(/no profile abcdef in the 1 profiler of this process .*pass \{ url \}/);
    await expect(profileOf('abcdef', { url: server.url })).rejects.toThrow(/answered 404 for profile abcdef/);
  });

  it('matchers and assertions take a profile already read, and fail with what ran', async () => {
    const profile = await profileOf(await request(app).get('/one'));
    await expect(profile).toHaveQueryCount(1);
    await expect(profile).not.toHaveSentMailTo('ada@example.test');
    await assertNoException(profile);
    await expect(assertMailSent(profile, 'ada@example.test')).rejects.toThrow(/GET http:\/\/127\.0\.0\.1:\d+\/one → 200 \(profile [0-9a-f]{6}\) sent no mail to ada@example\.test:\n {2}\(no mail\)/);
  });
});

describe('each check, passing and failing with what ran', () => {
  it('as matchers and as node:assert functions', async () => {
    const loop = await request(app).get('/loop');
    const one = await request(app).get('/one');
    const boom = await request(app).get('/boom').set('accept', 'application/json');
    await expect(loop).toHaveQueryCount(5);
    await expect(expect(loop).toHaveQueryCount(2)).rejects.toThrow(/ran 5 queries, expected 2:\n {2}1\. SELECT v FROM t WHERE id = \? {3}\(.*testing\.test\.ts:\d+\)/);
    await expect(loop).toHaveNPlusOne();
    await expect(expect(one).toHaveNPlusOne()).rejects.toThrow(/ran no statement 5 times or more from one line/);
    await expect(expect(loop).not.toHaveNPlusOne()).rejects.toThrow(/5 × SELECT v FROM t WHERE id = \?\n {6}5 × from .*testing\.test\.ts:\d+/);
    await expect(one).toHaveRunQuery(/FROM t WHERE/);
    await expect(expect(one).toHaveRunQuery('FROM users')).rejects.toThrow(/ran no query matching FROM users/);
    await expect(loop).toHaveSentMailTo('ada@example.test');
    await expect(expect(loop).toHaveSentMailTo(/grace@/)).rejects.toThrow(/sent no mail to \/grace@\/:\n {2}1\. "Your order" to Ada <ada@example\.test>/);
    await expect(boom).toHaveThrown(TypeError.name);
    await expect(boom).toHaveThrown(/no such order/);
    await expect(expect(boom).not.toHaveThrown()).rejects.toThrow(/→ 500 .* threw:\n {2}TypeError: no such order\n {4}at .*testing\.test\.ts:\d+/);
    await assertQueryCount(loop, 5);
    await expect(assertQueryCount(loop, 1)).rejects.toThrow(/ran 5 queries, expected 1/);
    await assertQuery(one, 'FROM t');
    await expect(assertQuery(one, /DELETE/)).rejects.toThrow(/ran no query matching \/DELETE\//);
    await assertNoNPlusOne(one);
    await expect(assertNoNPlusOne(loop)).rejects.toThrow(/likely N\+1/);
    await assertMailSent(loop, /ada@/);
    await assertNoException(one);
    await expect(assertNoException(boom)).rejects.toThrow(/TypeError: no such order/);
  });
});

