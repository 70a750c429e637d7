// Work a request starts and does not await: its profile waits for it (within a bound), and keeps
// what its own context records after the response, marked as such (Symfony's late collectors).
import express from 'express';
import nodemailer from 'nodemailer';
import path from 'node:path';
import sqlite3 from 'sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { webProfiler } from '../src/index.js';
import { listen, tempDb, tempDir, type Running } from './helpers.js';

const closing: (() => unknown)[] = [];
afterAll(async () => {
  for (const close of closing.reverse()) await close();
});

describe('work after the response', () => {
  it('an unawaited mail has its transport\'s answer, an unawaited query its rows, and a query its callback ran after the response is there too', async () => {
    const db = new sqlite3.Database(path.join(tempDir(), 'app.sqlite'));
    closing.push(() => new Promise((resolve) => db.close(resolve)));
    // A transport that answers once the SMTP exchange is over: later than the response, as a real one does.
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    const slowSmtp = nodemailer.createTransport({
      name: 'slow-smtp',
      version: '1',
      send(mail: { data: { to: string } }, done: (err: Error | null, info?: unknown) => void) {
        answered.then(() => done(null, { envelope: { from: 'shop@example.test', to: [mail.data.to] }, messageId: '<late@example.test>', accepted: [mail.data.to], rejected: [], response: '250 2.0.0 queued as LATE' }));
      },
    } as never);
    const profiler = webProfiler({ database: tempDb(), onError: () => {} });
    closing.push(() => profiler.close());
    const app = express();
    app.use(profiler);
    app.post('/orders', (_req, res) => {
      // Neither is awaited: the app answers first.
      void slowSmtp.sendMail({ from: 'shop@example.test', to: 'ada@example.test', subject: 'Your order', text: 'Thanks.' });
      db.all('SELECT 1 AS n', () => db.all('SELECT 2 AS n', () => {}));
      res.status(201).json({ ok: true });
    });
    const server: Running = await listen(app);
    closing.push(() => server.close());

    const res = await fetch(`${server.url}/orders`, { method: 'POST' });
    expect(res.status).toBe(201);
    const token = res.headers.get('x-debug-token')!;
    // The SMTP server answers after the client has had its response.
    answer();
    const panel = async (name: string) => (await (await fetch(`${server.url}/_profiler/${token}?panel=${name}`, { headers: { accept: 'application/json' } })).json()).data;
    const mail = await panel('mail');
    expect(mail.messages).toEqual([expect.objectContaining({ subject: 'Your order', accepted: ['ada@example.test'], response: '250 2.0.0 queued as LATE', after: 'ended' })]);
    const db1 = await panel('db');
    expect(db1.queries.map((q: { sql: string; rows?: number; after?: string }) => [q.sql, q.rows, q.after])).toEqual([['SELECT 1 AS n', 1, expect.any(String)], ['SELECT 2 AS n', 1, 'started']]);
    const page = await (await fetch(`${server.url}/_profiler/${token}?panel=mail`)).text();
    expect(page).toContain('ended after the response');
    expect(await (await fetch(`${server.url}/_profiler/${token}?panel=db`)).text()).toContain('>after the response</span>');
  });

  it('flush() stores an answered request at once, with what its work had done by then', async () => {
    const profiler = webProfiler({ database: tempDb(), onError: () => {} });
    closing.push(() => profiler.close());
    const db = new sqlite3.Database(':memory:');
    closing.push(() => new Promise((resolve) => db.close(resolve)));
    const app = express();
    app.use(profiler);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    app.get('/report', (_req, res) => {
      void held.then(() => db.all('SELECT 3 AS n', () => {}));
      db.all('SELECT 4 AS n', () => {});
      res.send('queued');
    });
    const server: Running = await listen(app);
    closing.push(() => server.close());
    const res = await fetch(`${server.url}/report`);
    const token = res.headers.get('x-debug-token')!;
    // flush() is the app's own "store it now": it does not wait for work the request left running.
    expect(profiler.flush()).toBeGreaterThanOrEqual(1);
    release();
    // What it had done by then, and nothing the request started after it was stored.
    const stored = (await (await fetch(`${server.url}/_profiler/${token}?panel=db`, { headers: { accept: 'application/json' } })).json()).data;
    expect(stored.queries.map((q: { sql: string }) => q.sql)).toEqual(['SELECT 4 AS n']);
  });
});
