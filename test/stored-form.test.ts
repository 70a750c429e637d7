import { openDatabase } from '../src/storage/sqlite.js';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { buildProfile } from '../src/collectors/build.js';
import { corePanels } from '../src/collectors/index.js';
import { webProfiler } from '../src/index.js';
import { DEFAULT_REDACT_KEYS } from '../src/options.js';
import type { Snapshot } from '../src/recording/snapshot.js';
import { serialise } from '../src/storage/profile.js';
import { profileOf } from '../src/storage/query.js';
import { ProfileStore } from '../src/storage/store.js';
import { listen, readRows, tempDb, type Running } from './helpers.js';

const running: Running[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.close()));
});

const TIME = Date.UTC(2026, 10, 22, 10, 28, 38, 123);

/** A finished request as the writer thread gets it: a plain hello unless told otherwise. */
function snapshot(change: (s: Snapshot) => void = () => {}): Snapshot {
  const s: Snapshot = {
    token: 'a1b2c3',
    parent: null,
    time: TIME,
    duration: 1.2345,
    ttfb: 0.5,
    rss: 90_000_000,
    aborted: false,
    ip: '127.0.0.1',
    url: 'http://127.0.0.1:4000/hello',
    request: { method: 'GET', url: '/hello', httpVersion: '1.1', headers: { host: '127.0.0.1:4000', connection: 'keep-alive' }, query: {}, secure: false, remoteAddress: '127.0.0.1' },
    response: {
      status: 200,
      statusMessage: 'OK',
      headers: {
        'content-type': 'text/html; charset=utf-8',
        'x-debug-token': 'a1b2c3',
        'x-debug-token-link': 'http://127.0.0.1:4000/_profiler/a1b2c3',
        'x-robots-tag': 'noindex',
        date: new Date(TIME).toUTCString(),
      },
      body: { bytes: 'Hello World!', size: 12 },
    },
    route: '/hello',
    params: {},
    spans: [{ name: 'handler', kind: 'handler', start: 0.1, end: 1.2 }],
    logs: [],
    logsDropped: 0,
    extra: {},
  };
  change(s);
  return s;
}

/** What a panel page reads back: the profile as stored, then read. */
function stored(s: Snapshot) {
  const profile = buildProfile(s, corePanels, { debug: true, bodyLimit: 64 * 1024, redactKeys: DEFAULT_REDACT_KEYS, slowQuery: 100, knownHosts: [] }, () => {});
  const built = JSON.parse(JSON.stringify(profile));
  const row = serialise(profile);
  const read = profileOf({ ...row.summary, encoding: 0, data: row.data, config: row.config ?? null });
  return { profile: built, read, row };
}

describe('profiles are stored packed and read back as they were', () => {
  const cases: [string, (s: Snapshot) => void][] = [
    ['a hello', () => {}],
    ['a JSON body, a query, cookies and params', (s) => {
      s.url = 'http://127.0.0.1:4000/users/7?tab=orders&token=abc';
      s.request = { ...s.request, method: 'POST', url: '/users/7?tab=orders&token=abc', query: { tab: 'orders', token: 'abc' }, headers: { ...s.request.headers, cookie: 'sid=1; theme=dark', 'content-type': 'application/json' }, body: { name: 'Ada', password: 'x' } };
      s.params = { id: '7' };
    }],
    ['a body with no Content-Type, bytes out, a status of its own', (s) => {
      s.request = { ...s.request, method: 'PUT', rawBody: { bytes: 'plain words', size: 11 } };
      s.response = { status: 418, statusMessage: 'Short and stout', headers: { 'content-type': 'application/octet-stream' }, body: { bytes: new Uint8Array([0, 1, 2, 3]), size: 4 } };
    }],
    ['headers the app set itself, and a Date of the next second', (s) => {
      s.response.headers = { ...s.response.headers, 'x-debug-token': 'mine', 'x-robots-tag': 'none', date: new Date(TIME + 1000).toUTCString() };
    }],
    ['a header value the number 0 (headers set, never sent)', (s) => {
      s.aborted = true;
      s.response = { status: 200, statusMessage: undefined as unknown as string, headers: { 'x-robots-tag': 0, 'x-debug-token': 'a1b2c3', 'content-length': 0 }, body: { bytes: '', size: 0 } };
    }],
    ['a client behind a proxy, over TLS, on HTTP/2, with a Host of its own', (s) => {
      s.ip = '203.0.113.9';
      s.url = 'https://shop.example/cart';
      s.request = { ...s.request, url: '/cart', httpVersion: '2.0', secure: true, headers: { host: 'internal:8080', 'x-forwarded-for': '203.0.113.9' } };
    }],
    ['no peer address, an absolute-form target', (s) => {
      s.ip = 'unknown';
      s.request = { ...s.request, remoteAddress: undefined, url: '*' };
      s.url = 'http://127.0.0.1:4000*';
    }],
    ['log lines, some dropped, a route that is no route', (s) => {
      s.logs = [
        { time: TIME, level: 'info', message: 'one', channel: 'app', context: { n: 1 } },
        { time: TIME, level: 'error', message: 'two', channel: 'console' },
        { time: TIME, level: 'warn', message: '', channel: 'app', raw: '{"level":40,"msg":"from pino","name":"api","order":5}' },
      ];
      s.logsDropped = 3;
      s.route = undefined;
    }],
  ];
  for (const [name, change] of cases) {
    it(name, () => {
      const { profile, read } = stored(snapshot(change));
      // Key order too: a panel shows its fields in the order they are given.
      expect(JSON.stringify(read)).toBe(JSON.stringify(profile));
    });
  }

  it("refuses an app's panel that would take a core panel's place", () => {
    expect(() => webProfiler({ enabled: true, collectors: [{ id: 'response', title: 'Mine', collect: () => 1 }] })).toThrow(/cannot be "response", which is a core panel's/);
  });

  it('leaves out of the stored row what the summary already says', () => {
    const { row } = stored(snapshot());
    expect(row.data).not.toContain('_profiler/a1b2c3');
    expect(row.data).not.toContain('GMT');
    expect(row.data).not.toContain('"counts"');
    expect(row.data).not.toContain('"node"');
    expect(row.config).toContain(`"node":"${process.version}"`);
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

  it('reads profiles stored before packing as they were, and retention keeps the configs in use', () => {
    const database = tempDb();
    const store = ProfileStore.open(database);
    const summary = { token: 'abc123', parent: null, ip: '::1', method: 'GET', url: 'http://old/', status: 200, time: Date.now(), duration: 1, type: 'request', instance: null };
    store.db.prepare('INSERT INTO profiles (token, parent, ip, method, url, status, time, duration, type) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)')
      .run(summary.token, null, summary.ip, summary.method, summary.url, 200, summary.time, 1, 'request');
    store.db.prepare('INSERT INTO profile_data (id, encoding, data) VALUES (last_insert_rowid(), 0, ?)')
      .run(JSON.stringify({ collectors: { response: { status: 200, headers: { date: 'then' } }, config: { node: 'v18.0.0' } } }));
    expect(store.read('abc123')?.collectors).toEqual({ response: { status: 200, headers: { date: 'then' } }, config: { node: 'v18.0.0' } });

    // A core panel's data of a shape of its own, given to the store by hand: kept as it is.
    store.insert([{ ...summary, token: 'def456', collectors: { request: { pad: 'x' }, response: { status: 'odd' }, logs: null } }]);
    expect(store.read('def456')?.collectors).toEqual({ request: { pad: 'x' }, response: { status: 'odd' }, logs: null });

    // Two processes' profiles; the older one's all go, and its config with them.
    const at = (token: string, time: number, pid: number) => serialise({ ...summary, token, time, url: 'http://new/', collectors: { config: { pid } } });
    store.insertSerialised([at('0000aa', 1_000, 1), at('0000bb', 2_000, 1)]);
    store.insertSerialised(Array.from({ length: 5 }, (_, i) => at(`1111${i}0`, Date.now(), 2)));
    expect(store.db.prepare('SELECT count(*) AS n FROM configs').get()).toEqual({ n: 2 });
    // Process 1 last wrote long ago (a writer marks what it uses in each batch).
    store.db.prepare(`UPDATE configs SET used = 2000 WHERE data = '{"pid":1}'`).run();
    store.prune(5);
    expect(store.db.prepare('SELECT count(*) AS n FROM profiles').get()).toEqual({ n: 5 });
    expect(store.db.prepare('SELECT count(*) AS n FROM configs').get()).toEqual({ n: 1 });
    expect(store.read('111140')?.collectors.config).toEqual({ pid: 2 });
    expect(readRows(database).map((row) => row.collectors.config)).toEqual(Array(5).fill({ pid: 2 }));
    store.close();
  });
});
