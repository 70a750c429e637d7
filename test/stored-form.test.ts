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
