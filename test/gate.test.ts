import express, { type Request, type Response } from 'express';
import { Redis } from 'ioredis';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { dump, webProfiler, type WebProfiler } from '../src/index.js';
import Database from './fixtures/better-sqlite3.cjs';
import { listen, readRows, tempDb, type Running } from './helpers.js';

const redisUrl = inject('redisUrl');

/**
 * The gate every stored string passes, as the fifth audit and the real apps tried it: a client
 * that floods it, a bound that splits a secret, a secret written in another encoding, a secret
 * met again in a later request, a token that holds a word, and a request whose dumps are huge.
 * Secrets are made at run time, so that no code excerpt of this file holds them.
 */
const stamp = `${process.pid}${Date.now().toString(36)}`;
const RESET = `rst${stamp}Q7b2`;
const KEY = `apk${stamp}Zx9w-live`;
/** Characters every encoder writes differently: `!` (form), `/` (encodeURI), a space, parentheses. */
const ODD = `Od!d/${stamp} (x)*~'`;
const FLAG_HASH = `f${stamp}e3b0c44298fc1c149afbf4c8996fb924`;

let server: Running;
let profiler: WebProfiler;
let database: string;
let redis: Redis | undefined;
/** What the app remembers between requests: the key it issued last. */
let issued = '';

beforeAll(async () => {
  database = tempDb();
  profiler = webProfiler({ database, onError: () => {} });
  if (redisUrl) redis = new Redis(redisUrl, { lazyConnect: true });
  await redis?.connect();
  const db = new Database(':memory:');
  db.exec('CREATE TABLE users (id INTEGER PRIMARY KEY, reset_token TEXT); INSERT INTO users (id) VALUES (1); CREATE TABLE flags (name TEXT, env TEXT)');
  const app = express();
  app.use(profiler);
  app.get('/reset', (req: Request, res: Response) => {
    db.prepare('UPDATE users SET reset_token = ? WHERE id = 1').run(RESET);
    req.log.info(`reset link sent with ${RESET}`);
    dump({ note: `link /reset/${RESET}` });
    res.json({ ok: true });
  });
  app.get('/cut', (req: Request, res: Response) => {
    // A text longer than a dump keeps: its bound falls inside the key.
    dump(`${'.'.repeat(1990)}${req.get('x-api-key')}`, 'long');
    res.send('cut');
  });
  app.get('/forms', (req: Request, res: Response) => {
    const secret = String(req.get('x-api-key'));
    req.log.info(`form ${new URLSearchParams({ k: secret })}`);
    req.log.info(`lower ${encodeURIComponent(secret).replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase())}`);
    req.log.info(`uri ${encodeURI(secret)}`);
    res.send('forms');
  });
  app.post('/keys', (req: Request, res: Response) => {
    issued = String(req.get('x-api-key'));
    res.status(201).send('issued');
  });
  app.get('/later', async (req: Request, res: Response) => {
    await redis?.del(`u:${issued}`);
    req.log.info(`revoked ${issued}`);
    res.send(`revoked ${issued.length} characters`);
  });
  app.get('/flags', (req: Request, res: Response) => {
    const rows = db.prepare('SELECT name FROM flags WHERE env = ?').all('development');
    req.log.info('flags for development');
    res.json({ env: 'development', rows });
  });
  app.get('/page', (_req: Request, res: Response) => res.send('<!doctype html><html><body><h1>page</h1></body></html>'));
  app.get('/big', (_req: Request, res: Response) => {
    // Each a dump of 5,000 strings of 2,000 characters: 10 MB as dump() reads it.
    const blob = Array.from({ length: 100 }, (_, i) => Array.from({ length: 49 }, (_, j) => `${i}.${j}`.padEnd(2000, 'x')));
    for (let i = 0; i < 100; i++) dump(blob, `big ${i}`);
    res.send('big');
  });
  app.get('/small/:n', (req: Request, res: Response) => {
    dump({ n: req.params.n });
    res.send(`small ${req.params.n}`);
  });
  server = await listen(app);
});

afterAll(async () => {
  await server?.close();
  redis?.disconnect();
  profiler?.close();
});

const storedFile = () => readFileSync(database).toString('latin1') + readFileSync(`${database}-wal`, { flag: 'a+' }).toString('latin1');
const rowOf = (token: string) => readRows(database).find((r) => r.token === token)!;

describe('the gate', () => {
  it('notes every value a request hides, however many a client sends first', async () => {
    const flood = Array.from({ length: 520 }, (_, i) => `key=c${i}x${stamp}`).join('&');
    const res = await fetch(`${server.url}/reset?${flood}`);
    expect(res.status).toBe(200);
    profiler.flush();
    const row = rowOf(res.headers.get('x-debug-token')!);
    // Hidden where the db panel hides it, by its column's name...
    expect([row.collectors.db.queries[0].params].flat()).toEqual(['[redacted]']);
    // ...and so in the log line and the dump, with the text around it kept.
    expect(row.collectors.logs.lines.map((l: { message: string }) => l.message)).toContain('reset link sent with [redacted]');
    expect(JSON.stringify(row.collectors.dumps)).toContain('link /reset/[redacted]');
    expect(JSON.stringify(row)).not.toContain(RESET);
    expect(storedFile()).not.toContain(RESET);
  });

  it('leaves no head of a secret that a bound cut short', async () => {
    const res = await fetch(`${server.url}/cut`, { headers: { 'x-api-key': KEY } });
    profiler.flush();
    const row = rowOf(res.headers.get('x-debug-token')!);
    expect(row.collectors.request.headers['x-api-key']).toBe('[redacted]');
    const kept = row.collectors.dumps.dumps[0].value.v as string;
    expect(kept.startsWith('.'.repeat(1990))).toBe(true);
    expect(kept.endsWith('[redacted]')).toBe(true);
    expect(storedFile()).not.toContain(KEY.slice(0, 8));
  });

  it('cuts a secret written form-encoded, with lower-case escapes, or as encodeURI writes it', async () => {
    const res = await fetch(`${server.url}/forms`, { headers: { 'x-api-key': ODD } });
    profiler.flush();
    const row = rowOf(res.headers.get('x-debug-token')!);
    const lines = row.collectors.logs.lines.map((l: { message: string }) => l.message);
    expect(lines).toEqual(['form k=[redacted]', 'lower [redacted]', 'uri [redacted]']);
    const file = storedFile();
    for (const form of [new URLSearchParams({ k: ODD }).toString().slice(2), encodeURIComponent(ODD).replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase()), encodeURI(ODD)]) {
      expect(file).not.toContain(form);
    }
  });

  it('cuts a value hidden in one request from the requests after it', async () => {
    const first = await fetch(`${server.url}/keys`, { method: 'POST', headers: { 'x-api-key': KEY } });
    expect(first.status).toBe(201);
    const later = await fetch(`${server.url}/later`);
    expect(await later.text()).toBe(`revoked ${KEY.length} characters`);
    const token = later.headers.get('x-debug-token')!;
    profiler.flush();
    const row = rowOf(token);
    expect(row.collectors.logs.lines[0].message).toBe('revoked [redacted]');
    if (redis) expect(JSON.stringify(row.collectors.cache)).toContain('u:[redacted]');
    for (const panel of ['request', 'logs', ...(redis ? ['cache'] : [])]) {
      const page = await (await fetch(`${server.url}/_profiler/${token}?panel=${panel}`)).text();
      expect(page, panel).not.toContain(KEY);
      if (panel !== 'request') expect(page, panel).toContain('[redacted]');
    }
    expect(storedFile()).not.toContain(KEY);
  });

  it("lets no client choose what later profiles lose: a cookie's value that is no credential is cut from its own profile only", async () => {
    const chosen = 'text/html; charset=utf-8';
    const first = await fetch(`${server.url}/flags`, { headers: { cookie: `pick=${encodeURIComponent(chosen)}; other=rawHeaders; short=text` } });
    await first.text();
    const later = await fetch(`${server.url}/page`);
    expect(await later.text()).toContain('<h1>page</h1>');
    profiler.flush();
    const row = rowOf(later.headers.get('x-debug-token')!);
    expect(row.collectors.response.headers['content-type']).toBe(chosen);
    // Its own profile hides the values and keeps its shape: the names of the record's parts are no values.
    const own = rowOf(first.headers.get('x-debug-token')!);
    expect(own.collectors.request.headers.cookie).toBe('pick=[redacted]; other=[redacted]; short=[redacted]');
    expect(own.collectors.response.body.kind).toBe('json');
    expect(own.collectors.response.headers['content-type']).toBe('application/json; charset=utf-8');
  });

  it('keeps a word that a token holds: a part of a secret is not one', async () => {
    const authorization = `*:development.${FLAG_HASH}`;
    const res = await fetch(`${server.url}/flags`, { headers: { authorization } });
    expect(await res.json()).toEqual({ env: 'development', rows: [] });
    profiler.flush();
    const row = rowOf(res.headers.get('x-debug-token')!);
    expect(row.collectors.request.headers.authorization).toBe('[redacted]');
    expect([row.collectors.db.queries[0].params].flat()).toEqual(['development']);
    expect(row.collectors.logs.lines[0].message).toBe('flags for development');
    expect(JSON.stringify(row.collectors.response)).toContain('development');
    expect(storedFile()).not.toContain(FLAG_HASH);
  });

  it('stores twenty small requests beside one whose dumps are huge, and that one bounded', async () => {
    const answers = await Promise.all([fetch(`${server.url}/big`), ...Array.from({ length: 20 }, (_, n) => fetch(`${server.url}/small/${n}`))]);
    expect(answers.map((r) => r.status)).toEqual(Array(21).fill(200));
    const [big, ...small] = answers.map((r) => r.headers.get('x-debug-token')!);
    profiler.flush();
    const rows = readRows(database);
    const stored = new Set(rows.map((r) => r.token));
    for (const token of small) expect(stored.has(token), token).toBe(true);
    const bigRow = rows.find((r) => r.token === big)!;
    expect(bigRow).toBeDefined();
    const { dumps, dropped } = bigRow.collectors.dumps;
    // 2 MB of text across the record: the dump that reached it cut, those after it counted.
    expect(JSON.stringify(dumps).length).toBeLessThan(3 * 1024 * 1024);
    expect(dumps.length + dropped).toBe(100);
    expect(dropped).toBeGreaterThan(0);
  });
});
