import { openDatabase } from '../src/storage/sqlite.js';
import express from 'express';
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { webProfiler, type Profile } from '../src/index.js';
import { WriteQueue } from '../src/storage/queue.js';
import { laneHost, SqliteSink } from '../src/storage/sink.js';
import { ProfileStore } from '../src/storage/store.js';
import { LANE_UNKNOWN, LANES } from '../src/recording/token.js';
import type { StoreHandle } from '../src/storage/store-handle.js';
import { serialise } from '../src/storage/profile.js';
import { TokenBitmap } from '../src/storage/token-bitmap.js';
import { listen, readRows, tempDb, type Running } from './helpers.js';

const running: Running[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.close()));
});

async function app(database: string) {
  const errors: string[] = [];
  const waiting: { pattern: RegExp; resolve: () => void }[] = [];
  /** Resolves when the profiler tells a message that matches (the test's timeout is the ceiling). */
  const told = (pattern: RegExp) => new Promise<void>((resolve) => (errors.some((m) => pattern.test(m)) ? resolve() : waiting.push({ pattern, resolve })));
  const profiler = webProfiler({ database, flushInterval: 10, onError: (m) => {
    errors.push(m);
    for (const w of waiting.filter((w) => w.pattern.test(m))) w.resolve();
  } });
  const e = express();
  e.use(profiler);
  e.get('/hello', (_req, res) => res.send('hello'));
  e.use(profiler.notFound);
  e.use(profiler.errorHandler);
  const server = await listen(e);
  running.push(server);
  const hit = async () => {
    const started = performance.now();
    const res = await fetch(`${server.url}/hello`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('hello');
    return { token: res.headers.get('x-debug-token')!, ms: performance.now() - started };
  };
  return { profiler, errors, hit, told };
}

/** Who holds the file's token lanes. */
function lanesOf(file: string): { lane: number; pid: number }[] {
  const db = openDatabase(file, { readonly: true });
  try {
    return db.prepare('SELECT lane, pid FROM lanes ORDER BY lane').all() as { lane: number; pid: number }[];
  } finally {
    db.close();
  }
}

const storedTokens = (file: string) => new Set(readRows(file).map((r) => r.token));

describe('storage faults: the app keeps answering, the profiler says so once and recovers', () => {
  it('a database file deleted while running is replaced by a new one', async () => {
    const db = tempDb();
    const { profiler, errors, hit } = await app(db);
    await hit();
    profiler.flush();
    for (const suffix of ['', '-wal', '-shm']) rmSync(db + suffix, { force: true });
    const after = await hit();
    profiler.flush();
    expect(errors.some((m) => m.includes('was deleted; starting a new file'))).toBe(true);
    expect(storedTokens(db)).toEqual(new Set([after.token]));
  });

  it('a file replaced by garbage is moved aside and a new one started', async () => {
    const db = tempDb();
    const { profiler, errors, hit } = await app(db);
    await hit();
    profiler.flush();
    profiler.close();
    writeFileSync(db, Buffer.alloc(8192, 0x5a));
    rmSync(`${db}-wal`, { force: true });
    rmSync(`${db}-shm`, { force: true });
    const again = await app(db);
    const { token } = await again.hit();
    again.profiler.flush();
    expect(storedTokens(db)).toEqual(new Set([token]));
    expect(readdirSync(path.dirname(db)).some((f) => f.startsWith('profiler.sqlite.corrupt-'))).toBe(true);
    expect(errors).toEqual([]);
  });

  it('a file replaced while open is noticed and reopened, losing nothing', async () => {
    const db = tempDb();
    const { profiler, errors, hit } = await app(db);
    const before = await hit();
    profiler.flush();
    rmSync(db);
    writeFileSync(db, 'this is not a database at all, '.repeat(300));
    const after = await hit();
    profiler.flush();
    expect(errors.some((m) => m.includes('was replaced; reopening it'))).toBe(true);
    // The WAL still held every page: SQLite reads them over the garbage, so both profiles stand.
    const stored = storedTokens(db);
    expect(stored.has(before.token) && stored.has(after.token)).toBe(true);
    const check = openDatabase(db, { readonly: true });
    expect(check.pragma('integrity_check')).toBe('ok');
    check.close();
  });

  it('another process holding the write lock: requests answer while it is held, profiles wait and land', async () => {
    const db = tempDb();
    const { profiler, errors, hit, told } = await app(db);
    await hit();
    profiler.flush();
    // The same SQLite library as the store's: two copies of SQLite in one process do not see each other's locks.
    const other = openDatabase(db);
    other.pragma('busy_timeout = 0');
    other.prepare('BEGIN IMMEDIATE').run();
    // The lock is held until the writer has met it and every request below has answered: a request
    // that waited for the store would never answer (the test's own timeout is the ceiling).
    const during: { token: string; ms: number }[] = [];
    for (let i = 0; i < 10; i++) during.push(await hit());
    await told(/locked by another process/);
    for (let i = 0; i < 10; i++) during.push(await hit());
    other.prepare('COMMIT').run();
    other.close();
    expect(errors.filter((m) => m.includes('locked by another process'))).toHaveLength(1);
    // The waiting profiles land once the lock is gone: the store says so when it has written them.
    await told(/writable again/);
    profiler.flush();
    const stored = storedTokens(db);
    for (const d of during) expect(stored.has(d.token), d.token).toBe(true);
    expect(errors.at(-1)).toMatch(/^profiler storage is writable again: \d+ waiting profiles written$/);
  }, 20_000);

  // The writer thread owns its connection, so the page limit that stands in for a full disk is set
  // on the queue that thread runs, driven directly.
  it('a full database: profiles wait, nothing is lost once there is room again', async () => {
    const db = tempDb();
    const errors: string[] = [];
    const profile = (i: number): Profile => ({ token: (0xa00000 + i).toString(16), parent: null, ip: '127.0.0.1', method: 'GET', url: `http://localhost/${i}`, status: 200, time: Date.now(), duration: 1, type: 'request', collectors: { request: { pad: 'x'.repeat(2000) } } });
    let sink: SqliteSink | undefined;
    const queue = new WriteQueue<Profile>({ database: db, schema: '', instance: 'test', maxProfiles: 1000, maxAge: 3_600_000, flushInterval: 10 }, (tell) => (sink = new SqliteSink(db, new TokenBitmap(), { cell: new Int32Array(1).fill(-1), owner: 'test' }, tell, tell)), serialise, (m) => errors.push(m));
    queue.push([profile(0)]);
    expect(await queue.flush()).toBe(1);
    const store = (sink as unknown as { handle: StoreHandle }).handle.get()!;
    store.db.pragma(`max_page_count = ${store.db.pragma('page_count') as number}`);
    queue.push(Array.from({ length: 40 }, (_, i) => profile(i + 1)));
    expect(await queue.flush()).toBe(0);
    expect(errors.some((m) => /SQLITE_FULL/.test(m))).toBe(true);
    // The failed store was closed; the next open (now, not after the pause) has no page limit.
    await queue.flush(true);
    await queue.close();
    expect(storedTokens(db).size).toBe(41);
    expect(errors.at(-1)).toBe('profiler storage is writable again: 40 waiting profiles written');
  });
});

describe('token lanes', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a lane its process could not touch for five minutes is let go (long tokens), and taken again once it can', () => {
    vi.useFakeTimers({ toFake: ['Date', 'setInterval', 'clearInterval'] });
    const db = tempDb();
    const cell = new Int32Array(1).fill(LANE_UNKNOWN);
    const sink = new SqliteSink(db, new TokenBitmap(), { cell, owner: 'me' }, () => {}, () => {});
    try {
      expect(Atomics.load(cell, 0)).toBe(0);
      // Another connection holds the write lock: the touches fail (each after the writer's busy wait).
      const other = openDatabase(db);
      other.pragma('busy_timeout = 0');
      other.prepare('BEGIN IMMEDIATE').run();
      vi.advanceTimersByTime(30_000);
      expect(Atomics.load(cell, 0)).toBe(0);
      vi.setSystemTime(Date.now() + 5 * 60_000);
      vi.advanceTimersByTime(30_000);
      expect(Atomics.load(cell, 0)).toBe(LANES);
      other.prepare('COMMIT').run();
      other.close();
      vi.advanceTimersByTime(30_000);
      expect(Atomics.load(cell, 0)).toBe(0);
      expect(lanesOf(db)).toEqual([{ lane: 0, pid: process.pid }]);
    } finally {
      sink.close();
    }
    expect(lanesOf(db)).toEqual([]);
  }, 20_000);
});

function spawnServer(database: string) {
  const child = fork(path.resolve('test/fixtures/recording-server.mjs'), [database], { stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
  const committed = new Set<string>();
  const errors: string[] = [];
  child.on('message', (msg: { type: string; tokens?: string[]; message?: string }) => {
    if (msg.type === 'committed') msg.tokens!.forEach((t) => committed.add(t));
    if (msg.type === 'error') errors.push(msg.message!);
  });
  const ready = new Promise<string>((resolve, reject) => {
    child.once('error', reject);
    child.on('message', (msg: { type: string; port?: number }) => {
      if (msg.type === 'ready') resolve(`http://127.0.0.1:${msg.port}`);
    });
  });
  const stop = () => new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.send({ type: 'stop' });
  });
  return { child, ready, committed, errors, stop };
}

/** n GETs spread over the given servers, `concurrency` at a time; the tokens they announced. */
async function hammer(urls: string[], n: number, concurrency: number, onError?: (e: unknown) => void) {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const tokens: string[] = [];
  let sent = 0;
  const one = (url: string) => new Promise<void>((resolve) => {
    request(`${url}/hello`, { agent }, (res) => {
      res.resume();
      res.on('end', () => {
        if (res.statusCode === 200) tokens.push(String(res.headers['x-debug-token']));
        resolve();
      });
    }).on('error', (e) => {
      onError?.(e);
      resolve();
    }).end();
  });
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (sent < n) await one(urls[sent++ % urls.length]);
  }));
  agent.destroy();
  return tokens;
}

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
});

describe('several processes and crashes', () => {
  it('two processes recording into one file lose nothing and share no token', async () => {
    const db = tempDb();
    const a = spawnServer(db);
    const b = spawnServer(db);
    children.push(a.child, b.child);
    const urls = await Promise.all([a.ready, b.ready]);
    const tokens = await hammer(urls, 3000, 20);
    expect(tokens).toHaveLength(3000);
    expect(new Set(tokens).size).toBe(3000);
    // Each draws its tokens in a lane of its own.
    expect(lanesOf(db).map((l) => l.pid).sort()).toEqual([a.child.pid, b.child.pid].sort());
    expect(new Set(lanesOf(db).map((l) => l.lane)).size).toBe(2);
    await Promise.all([a.stop(), b.stop()]);
    const rows = readRows(db);
    expect(rows).toHaveLength(3000);
    expect(new Set(rows.map((r) => r.token))).toEqual(new Set(tokens));
    expect([...a.errors, ...b.errors].filter((m) => /BUSY|locked/.test(m))).toEqual([]);
    // Once they are gone, however they went, the next process takes the first lane again.
    const c = spawnServer(db);
    children.push(c.child);
    await c.ready;
    for (let waited = 0; !lanesOf(db).some((l) => l.pid === c.child.pid) && waited < 30_000; waited += 50) await new Promise((r) => setTimeout(r, 50));
    expect(lanesOf(db).find((l) => l.pid === c.child.pid)?.lane).toBe(0);
    await c.stop();
  }, 60_000);

  it('a seventeenth process on one file, every lane held by a running one: long tokens, said once', async () => {
    const db = tempDb();
    const holders = ProfileStore.open(db);
    for (let lane = 0; lane < LANES; lane++) holders.db.prepare('INSERT INTO lanes (lane, owner, host, pid, seen) VALUES (?, ?, ?, ?, ?)').run(lane, `other ${lane}`, laneHost, process.pid, Date.now());
    const { profiler, errors, hit, told } = await app(db);
    await told(/token lanes are held/);
    const { token } = await hit();
    expect(token).toMatch(/^[0-9a-f]{20}$/);
    await profiler.flush();
    expect(storedTokens(db).has(token)).toBe(true);
    expect(errors).toEqual([`profiler storage ${db}: all 16 token lanes are held by running processes; this one's tokens are long ones (20 characters or more) until one is free (PostgreSQL suits more processes)`]);
    holders.close();
  });

  it('kill -9 under load: the file opens cleanly and holds every committed batch', async () => {
    const db = tempDb();
    const server = spawnServer(db);
    children.push(server.child);
    const url = await server.ready;
    const load = hammer([url], 50_000, 20);
    // Killed once batches have been committed, however slowly a loaded machine gets there.
    for (let waited = 0; server.committed.size <= 100 && waited < 30_000; waited += 50) await new Promise((r) => setTimeout(r, 50));
    server.child.kill('SIGKILL');
    await load;
    const committed = [...server.committed];
    expect(committed.length).toBeGreaterThan(100);
    const check = openDatabase(db);
    expect(check.pragma('integrity_check')).toBe('ok');
    check.close();
    const stored = storedTokens(db);
    for (const t of committed) expect(stored.has(t), t).toBe(true);
    expect(existsSync(db)).toBe(true);
  }, 60_000);
});
