import express from 'express';
import { request } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { webProfiler, type WebProfiler } from '../src/index.js';
import { listen, tempDb, type Running } from './helpers.js';

const pgUrl = inject('pgUrl');
if (!pgUrl) process.stderr.write(`\n!!! LIVE LIST ON POSTGRESQL SKIPPED: ${inject('pgMissing')}\n\n`);

const stores = [
  { name: 'SQLite', database: () => tempDb(), schema: undefined },
  { name: 'PostgreSQL', database: () => pgUrl, schema: `live_${process.pid}` },
];

const cleanup: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const done of cleanup.splice(0)) await done();
});

/** An app whose access check takes a while, as one asking a session store does: the window in which a client can leave. */
async function start(database: string, schema: string | undefined) {
  const profiler = webProfiler({ database, schema, onError: () => {}, authorize: async () => { await sleep(80); return true; } });
  const app = express();
  app.use(profiler);
  app.get('/hello', (_req, res) => res.send('hello'));
  const server = await listen(app);
  cleanup.push(() => server.close(), () => profiler.close());
  return { server, profiler, polls: countPolls(profiler) };
}

/** How many times the live list has read the store: each poll is one since(). */
function countPolls(profiler: WebProfiler): () => number {
  const store = profiler.store()!;
  let polls = 0;
  const since = store.since.bind(store);
  store.since = ((...args: Parameters<typeof since>) => {
    polls++;
    return since(...args);
  }) as typeof store.since;
  return () => polls;
}

/** A client that opens the live list and is gone after `ms`, before (or as) the stream is set up. */
const leaveAfter = (server: Running, ms: number) => new Promise<void>((resolve) => {
  const url = new URL(`${server.url}/_profiler/stream`);
  const req = request({ host: url.hostname, port: url.port, path: url.pathname }, (res) => res.resume());
  req.on('error', () => resolve());
  req.on('close', () => resolve());
  setTimeout(() => req.destroy(), ms);
  req.end();
});

/** Polls that happen in a window longer than two poll intervals (250 ms). */
async function pollsDuring(polls: () => number, ms = 700) {
  const before = polls();
  await sleep(ms);
  return polls() - before;
}

/**
 * Whether the polling stops: a window with no poll comes within a generous ceiling. A poller left
 * behind polls for ever; one that is gone stops, however late a loaded machine lets it notice.
 */
async function stopsPolling(polls: () => number): Promise<boolean> {
  for (const started = Date.now(); Date.now() - started < 30_000;) if ((await pollsDuring(polls)) === 0) return true;
  return false;
}

/** Whether a poll comes, within a generous ceiling. */
async function polling(polls: () => number): Promise<boolean> {
  const before = polls();
  for (const started = Date.now(); Date.now() - started < 30_000; await sleep(50)) if (polls() > before) return true;
  return false;
}

describe.each(stores)('the live list on $name', ({ name, database, schema }) => {
  const run = name === 'PostgreSQL' && !pgUrl ? it.skip : it;

  run('a profile stored after the list page was read and before its stream opened comes on the stream', async () => {
    const { server } = await start(database(), schema);
    const page = await (await fetch(`${server.url}/_profiler/`)).text();
    const live = /data-live="([^"]+)"/.exec(page)![1].replaceAll('&amp;', '&');
    const token = (await fetch(`${server.url}/hello`)).headers.get('x-debug-token')!;
    // Stored (the profiler's pages wait for the writer) before the stream is asked for.
    expect((await fetch(`${server.url}/_profiler/${token}`, { headers: { accept: 'application/json' } })).status).toBe(200);
    const stop = new AbortController();
    const res = await fetch(`${server.url}${live}`, { signal: stop.signal });
    const reader = res.body!.getReader();
    let text = '';
    const ceiling = setTimeout(() => stop.abort(), 30_000);
    try {
      while (!text.includes(`"token":"${token}"`)) text += new TextDecoder().decode((await reader.read()).value);
    } catch {
      // The ceiling: the assertion below says what was seen.
    }
    clearTimeout(ceiling);
    stop.abort();
    expect(text).toContain(`"token":"${token}"`);
  });

  run('clients that leave while their stream is set up leave no poller and no slot behind', async () => {
    const { server, polls } = await start(database(), schema);
    // Gone during the access check, and gone just after it.
    await Promise.all(Array.from({ length: 40 }, (_, i) => leaveAfter(server, i % 2 === 0 ? 20 : 90)));
    expect(await stopsPolling(polls)).toBe(true);
    // Every slot is free again: a client that stays gets its stream.
    const stay = new AbortController();
    const res = await fetch(`${server.url}/_profiler/stream`, { signal: stay.signal });
    expect(res.status).toBe(200);
    expect(await polling(polls)).toBe(true);
    stay.abort();
    expect(await stopsPolling(polls)).toBe(true);
  });

  run('clients arriving together meet the cap of 16, and their slots come back when they go', async () => {
    const { server, polls } = await start(database(), schema);
    const all = new AbortController();
    const answers = await Promise.all(Array.from({ length: 40 }, () => fetch(`${server.url}/_profiler/stream`, { signal: all.signal, headers: { accept: 'application/json' } })));
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 200)).toHaveLength(16);
    expect(statuses.filter((s) => s === 503)).toHaveLength(24);
    all.abort();
    expect(await stopsPolling(polls)).toBe(true);
    const fresh = new AbortController();
    const again = await Promise.all(Array.from({ length: 16 }, () => fetch(`${server.url}/_profiler/stream`, { signal: fresh.signal })));
    expect(again.every((r) => r.status === 200)).toBe(true);
    fresh.abort();
  });
});
