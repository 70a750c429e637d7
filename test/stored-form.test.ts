import { openDatabase } from '../src/storage/sqlite.js';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { profileFrom } from '../src/collectors/build.js';
import { corePanels, panelOptionsOf } from '../src/collectors/index.js';
import { webProfiler } from '../src/index.js';
import { resolveOptions } from '../src/options.js';
import { serialiseRecord, type ProfileSummary } from '../src/storage/profile.js';
import { profileOf } from '../src/storage/query.js';
import { ProfileStore } from '../src/storage/store.js';
import type { Captured } from '../src/recording/capture.js';
import { recordOf } from '../src/redaction/record.js';
import { listen, readRows, tempDb, type Running } from './helpers.js';

const running: Running[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.close()));
});

/** A stored row as the pages read it: its panels derived. */
const shown = (row: { summary: object; data: string; config: string | null }) =>
  profileFrom(profileOf({ ...(row.summary as ProfileSummary), encoding: 0, data: row.data, config: row.config }), corePanels, panelOptionsOf(resolveOptions({})), () => {});

describe('profiles stored before records open as they did', () => {
  // Rows the writer stored before records (its panels packed: see CorePanel.unpack), and the profiles they were made from.
  const rows = JSON.parse(readFileSync(path.join(__dirname, 'fixtures/packed-rows.json'), 'utf8')) as { name: string; summary: object; data: string; config: string | null; profile: unknown }[];
  for (const row of rows) {
    it(row.name, () => {
      // Key order too: a panel shows its fields in the order they are given.
      expect(JSON.stringify(shown(row))).toBe(JSON.stringify(row.profile));
    });
  }

  it("refuses an app's panel that would take a core panel's place", () => {
    expect(() => webProfiler({ enabled: true, collectors: [{ id: 'response', title: 'Mine', collect: () => 1 }] })).toThrow(/cannot be "response", which is a core panel's/);
  });
});

const TIME = Date.UTC(2026, 10, 25, 10, 28, 38, 123);
const HEAD = (token: string, extra = '') =>
  `HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nX-Debug-Token: ${token}\r\nX-Debug-Token-Link: http://127.0.0.1:4000/_profiler/${token}\r\nX-Robots-Tag: noindex\r\nDate: ${new Date(TIME).toUTCString()}\r\n${extra}\r\n`;

/** A capture as the writer thread gets it: a plain hello unless told otherwise. */
function captured(change: (c: Captured) => void = () => {}): Captured {
  const c: Captured = {
    size: 0, token: 'a1b2c3', parent: null, time: TIME, duration: 1.2345678, ttfb: 0.5123456, rss: 90_000_000, aborted: false, ip: '127.0.0.1',
    origin: 'http://127.0.0.1:4000', method: 'GET', url: '/hello', httpVersion: '1.1', rawHeaders: ['Host', '127.0.0.1:4000', 'Connection', 'keep-alive'],
    secure: false, remoteAddress: '127.0.0.1', status: 200, statusMessage: 'OK', head: HEAD('a1b2c3'), responseBody: { text: 'Hello World!', bytes: false, size: 12 },
    route: '/hello', params: {}, trail: ['route\troute GET /hello', 0.1000004, 'handler\thello', 0.2000004],
  };
  change(c);
  return c;
}

/** What the pages show of a capture once it is stored: the record made, written as JSON, read back and derived. */
function storedAndShown(c: Captured) {
  const options = resolveOptions({});
  const { summary, record } = recordOf(c, options);
  const row = serialiseRecord({ ...summary, type: 'request' }, record, { pid: 42 });
  return { row, profile: shown({ summary: row.summary, data: row.data, config: row.config ?? null }) as { url: string; collectors: Record<string, any> } };
}

describe('records: stored light, shown as they went', () => {
  const cases: [string, (c: Captured) => void, (p: Record<string, any>) => void][] = [
    ['a hello', () => {}, (p) => {
      expect(p.request.headers).toEqual({ host: '127.0.0.1:4000', connection: 'keep-alive' });
      expect(p.response.headers).toEqual({ 'content-type': 'text/html; charset=utf-8', 'x-debug-token': 'a1b2c3', 'x-debug-token-link': 'http://127.0.0.1:4000/_profiler/a1b2c3', 'x-robots-tag': 'noindex', date: new Date(TIME).toUTCString() });
      expect(p.request).toMatchObject({ method: 'GET', url: '/hello', httpVersion: '1.1', server: { remoteAddress: '127.0.0.1', secure: false, pid: 42 } });
      expect(p.response).toMatchObject({ status: 200, statusMessage: 'OK', body: { size: 12, contentType: 'text/html; charset=utf-8', kind: 'text', text: 'Hello World!', truncated: false }, aborted: false });
      expect(p.performance).toMatchObject({ total: 1.235, ttfb: 0.512, spans: [{ name: 'route GET /hello', start: 0.1, end: 0.2 }, { name: 'hello', start: 0.2, end: 1.235 }] });
      expect(p.routing).toEqual({ method: 'GET', path: '/hello', route: '/hello', params: {} });
      expect(p.config).toEqual({ pid: 42 });
    }],
    ['an absolute-form target, a Host of its own, HTTP/1.0, behind a proxy', (c) => {
      Object.assign(c, { url: '*', method: 'OPTIONS', httpVersion: '1.0', ip: '203.0.113.9', origin: 'http://Shop.Example', rawHeaders: ['HOST', 'Shop.Example', 'X-Forwarded-For', '203.0.113.9'] });
    }, (p) => {
      expect(p.request).toMatchObject({ method: 'OPTIONS', url: '*', httpVersion: '1.0', headers: { host: 'Shop.Example', 'x-forwarded-for': '203.0.113.9' }, server: { remoteAddress: '127.0.0.1' } });
      // The link was made from another origin than the summary's: kept as it went.
      expect(p.response.headers['x-debug-token-link']).toBe('http://127.0.0.1:4000/_profiler/a1b2c3');
    }],
    ['headers the app set itself, a Date of the next second, a status text of its own, cookies set twice', (c) => {
      c.head = `HTTP/1.1 418 Short and stout\r\nx-debug-token: mine\r\nX-Debug-Token-Link: \r\nX-Robots-Tag: none\r\nDate: ${new Date(TIME + 1000).toUTCString()}\r\nSet-Cookie: sid=abc; Path=/\r\nSet-Cookie: theme=dark\r\n\r\n`;
      Object.assign(c, { status: 418, statusMessage: 'Short and stout' });
    }, (p) => {
      expect(p.response.statusMessage).toBe('Short and stout');
      expect(p.response.headers).toEqual({ 'x-debug-token': 'mine', 'x-debug-token-link': '', 'x-robots-tag': 'none', date: new Date(TIME + 1000).toUTCString(), 'set-cookie': ['sid=[redacted]; Path=/', 'theme=[redacted]'] });
    }],
    ['the lines most heads carry, and lines that only look like them', (c) => {
      c.head = HEAD('a1b2c3', 'X-Powered-By: Express\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\nTransfer-Encoding: chunked\r\nX-Powered-By: express\r\nKeep-Alive: timeout=50\r\n');
    }, (p) => {
      expect(p.response.headers).toEqual({
        'content-type': 'text/html; charset=utf-8', 'x-debug-token': 'a1b2c3', 'x-debug-token-link': 'http://127.0.0.1:4000/_profiler/a1b2c3', 'x-robots-tag': 'noindex', date: new Date(TIME).toUTCString(),
        'x-powered-by': ['Express', 'express'], connection: 'keep-alive', 'keep-alive': ['timeout=5', 'timeout=50'], 'transfer-encoding': 'chunked',
      });
    }],
    ['no head went out, no peer address, no status text', (c) => {
      Object.assign(c, { head: { 'x-robots-tag': 'noindex', 'content-length': 0, 'set-cookie': 'a=1' }, remoteAddress: undefined, statusMessage: undefined, aborted: true, responseBody: { text: '', bytes: false, size: 0 } });
    }, (p) => {
      expect(p.response).toMatchObject({ statusMessage: undefined, aborted: true, headers: { 'x-robots-tag': 'noindex', 'content-length': '0', 'set-cookie': ['a=[redacted]'] } });
      expect(p.request.server.remoteAddress).toBeUndefined();
    }],
  ];
  for (const [name, change, check] of cases) {
    it(name, () => {
      const { profile } = storedAndShown(captured(change));
      check(profile.collectors);
    });
  }

  it('leaves out of the stored row what the summary already says, and nothing of a secret', () => {
    const { row } = storedAndShown(captured((c) => {
      c.rawHeaders.push('Authorization', 'Bearer s3cr3t-t0ken-value', 'Cookie', 'sid=abcdef123456');
      c.url = '/hello?token=t0k3n-in-query';
    }));
    for (const said of ['_profiler/a1b2c3', 'GMT', 'noindex', 'text/html', 'X-Debug-Token', '127.0.0.1:4000', '"OK"', '"httpVersion"', '"url"', '"duration"', '"remoteAddress"', 's3cr3t', 'abcdef123456', 't0k3n-in-query']) expect(row.data).not.toContain(said);
    expect(row.data.length).toBeLessThan(370);
  });
});

describe('stored profiles, through a running app', () => {
  it('shows the headers as they went out, stores each process config once, and keeps hello under 1 KB', async () => {
    const database = tempDb();
    const profiler = webProfiler({ database, onError: () => {} });
    const app = express();
    app.use(profiler);
    app.get('/hello', (_req, res) => res.send('Hello World!'));
    const r = await listen(app);
    running.push(r);
    let last: Response | undefined;
    for (let i = 0; i < 20; i++) {
      last = await fetch(`${r.url}/hello`);
      await last.text();
    }
    profiler.flush();
    const token = last!.headers.get('x-debug-token')!;
    const profile = (await (await fetch(`${r.url}/_profiler/${token}`, { headers: { accept: 'application/json' } })).json()) as { collectors: Record<string, any> };
    const shown = profile.collectors.response.headers;
    for (const name of ['x-debug-token', 'x-debug-token-link', 'x-robots-tag', 'date', 'etag', 'content-type']) expect(shown[name]).toBe(last!.headers.get(name));
    expect(profile.collectors.request.headers.host).toBe(new URL(r.url).host);
    expect(profile.collectors.request.server.remoteAddress).toBe('127.0.0.1');
    expect(profile.collectors.config).toMatchObject({ node: process.version, pid: process.pid });
    const db = openDatabase(database, { readonly: true });
    try {
      expect(db.prepare('SELECT count(*) AS n FROM configs').get()).toEqual({ n: 1 });
      const sizes = (db.prepare('SELECT length(data) AS n FROM profile_data').all() as { n: number }[]).map((row) => row.n);
      expect(sizes).toHaveLength(20);
      for (const n of sizes) expect(n).toBeLessThan(900);
    } finally {
      db.close();
    }
    profiler.close();
  });

  it('reads profiles stored whole as they were, and retention keeps the configs in use', () => {
    const database = tempDb();
    const store = ProfileStore.open(database);
    const read = (token: string) => {
      const stored = store.read(token);
      return stored && profileFrom(stored, corePanels, panelOptionsOf(resolveOptions({})), () => {});
    };
    const summary = { token: 'abc123', parent: null, ip: '::1', method: 'GET', url: 'http://old/', status: 200, time: Date.now(), duration: 1, type: 'request', instance: null };
    store.db.prepare('INSERT INTO profiles (token, parent, ip, method, url, status, time, duration, type) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)')
      .run(summary.token, null, summary.ip, summary.method, summary.url, 200, summary.time, 1, 'request');
    store.db.prepare('INSERT INTO profile_data (id, encoding, data) VALUES (last_insert_rowid(), 0, ?)')
      .run(JSON.stringify({ collectors: { response: { status: 200, headers: { date: 'then' } }, config: { node: 'v18.0.0' } } }));
    expect(read('abc123')?.collectors).toEqual({ response: { status: 200, headers: { date: 'then' } }, config: { node: 'v18.0.0' } });

    // A core panel's data of a shape of its own, given to the store by hand: kept as it is.
    store.insert([{ ...summary, token: 'def456', collectors: { request: { pad: 'x' }, response: { status: 'odd' }, logs: null } }]);
    expect(read('def456')?.collectors).toEqual({ request: { pad: 'x' }, response: { status: 'odd' }, logs: null });

    // Two processes' profiles; the older one's all go, and its config with them.
    const record = { duration: 1, ttfb: 1, rss: 0, origin: 'http://new', url: '/', httpVersion: '1.1', rawHeaders: [], statusMessage: 'OK', head: {}, responseBody: { size: 0, kind: 'text' as const, truncated: false }, trail: [], pid: 1 };
    const at = (token: string, time: number, pid: number) => serialiseRecord({ ...summary, token, time, url: 'http://new/' }, record, { pid });
    store.insertSerialised([at('0000aa', 1_000, 1), at('0000bb', 2_000, 1)]);
    store.insertSerialised(Array.from({ length: 5 }, (_, i) => at(`1111${i}0`, Date.now(), 2)));
    expect(store.db.prepare('SELECT count(*) AS n FROM configs').get()).toEqual({ n: 2 });
    // Process 1 last wrote long ago (a writer marks what it uses in each batch).
    store.db.prepare(`UPDATE configs SET used = 2000 WHERE data = '{"pid":1}'`).run();
    store.prune(5);
    expect(store.db.prepare('SELECT count(*) AS n FROM profiles').get()).toEqual({ n: 5 });
    expect(store.db.prepare('SELECT count(*) AS n FROM configs').get()).toEqual({ n: 1 });
    expect(read('111140')?.collectors.config).toEqual({ pid: 2 });
    expect(readRows(database).map((row) => row.collectors.config)).toEqual(Array(5).fill({ pid: 2 }));
    store.close();
  });
});
