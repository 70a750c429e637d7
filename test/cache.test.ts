import express from 'express';
import { Redis } from 'ioredis';
import Redis4 from 'ioredis4';
import { createClient } from 'redis';
import { createClient as createClient4 } from 'redis4';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { webProfiler } from '../src/index.js';
import { listen, tempDb, type Running } from './helpers.js';

const url = inject('redisUrl');
if (!url) process.stderr.write(`\n!!! REDIS TESTS SKIPPED: ${inject('redisMissing')}\n\n`);

/** What each client calls a command, and the calls an app makes through it. */
interface Client {
  name: string;
  client: string;
  get(key: string): Promise<unknown>;
  set(key: string, value: string): Promise<unknown>;
  mget(keys: string[]): Promise<unknown>;
  pipeline(): Promise<unknown>;
  multi(): Promise<unknown>;
  failing(): Promise<unknown>;
  quit(): Promise<unknown>;
}

function ioredisClient(name: string, Make: typeof Redis): Client {
  const r = new Make(url, { lazyConnect: false });
  return {
    name,
    client: 'ioredis',
    get: (key) => r.get(key),
    set: (key, value) => r.set(key, value, 'EX', 60),
    mget: (keys) => r.mget(...keys),
    pipeline: () => r.pipeline().get('status:cached').set('counter', '1').get('status:missing').exec(),
    multi: () => r.multi().incr('counter').get('counter').exec(),
    failing: () => r.hget('status:cached', 'field'),
    quit: () => r.quit(),
  };
}

function nodeRedisClient(name: string, make: typeof createClient): Client {
  const r = make({ url });
  const ready = r.connect();
  return {
    name,
    client: 'node-redis',
    get: async (key) => (await ready, r.get(key)),
    set: async (key, value) => (await ready, r.set(key, value, { EX: 60 })),
    mget: async (keys) => (await ready, r.mGet(keys)),
    pipeline: async () => (await ready, r.multi().get('status:cached').set('counter', '1').get('status:missing').execAsPipeline()),
    multi: async () => (await ready, r.multi().incr('counter').get('counter').exec()),
    failing: async () => (await ready, r.hGet('status:cached', 'field')),
    quit: async () => (await ready, r.quit()),
  };
}

describe.skipIf(!url)('the cache panel: Redis commands against a real redis-server', () => {
  let server: Running;
  let profiler: ReturnType<typeof webProfiler>;
  let clients: Client[];

  beforeAll(async () => {
    profiler = webProfiler({ database: tempDb(), onError: () => {} });
    clients = [
      ioredisClient('ioredis 6 (tracing channels)', Redis),
      ioredisClient('ioredis 4 (no channels)', Redis4 as unknown as typeof Redis),
      nodeRedisClient('node-redis 6 (tracing channels)', createClient),
      nodeRedisClient('node-redis 4 (no channels)', createClient4 as unknown as typeof createClient),
    ];
    await clients[0].set('status:cached', 'green');
    await clients[0].get('status:cached');
    const app = express();
    app.use(profiler);
    app.get('/:n/status', async (req, res) => {
      const c = clients[Number(req.params.n)];
      const cached = await c.get('status:cached');
      const missing = await c.get('status:missing');
      await c.get('status:cached');
      await c.set('session:abc', 'secret-value');
      const many = await c.mget(['status:cached', 'status:missing']);
      res.json({ cached, missing, many });
    });
    app.get('/:n/batches', async (req, res) => {
      const c = clients[Number(req.params.n)];
      res.json({ pipeline: await c.pipeline(), multi: await c.multi() });
    });
    app.get('/:n/failing', async (req, res) => {
      try {
        await clients[Number(req.params.n)].failing();
        res.send('no error');
      } catch (err) {
        res.status(500).send((err as Error).message);
      }
    });
    server = await listen(app);
  });

  afterAll(async () => {
    await server?.close();
    profiler?.close();
    await Promise.all((clients ?? []).map((c) => c.quit().catch(() => {})));
  });

  async function cacheOf(path: string) {
    const res = await fetch(server.url + path);
    const body = await res.text();
    const token = res.headers.get('x-debug-token')!;
    const json = await (await fetch(`${server.url}/_profiler/${token}?panel=cache`, { headers: { accept: 'application/json' } })).json();
    return { status: res.status, body, token, data: json.data };
  }

  for (const [n, name] of ['ioredis 6 (tracing channels)', 'ioredis 4 (no channels)', 'node-redis 6 (tracing channels)', 'node-redis 4 (no channels)'].entries()) {
    describe(name, () => {
      it('records each command with its key, hit or miss, reply size, duration and the line that sent it', async () => {
        const { status, data } = await cacheOf(`/${n}/status`);
        expect(status).toBe(200);
        expect(data.count).toBe(5);
        const [hit, miss, again, set, mget] = data.commands;
        expect(hit.command.toUpperCase()).toBe('GET');
        expect(hit).toMatchObject({ keys: ['status:cached'], hit: true, size: 5, client: clients[n].client });
        expect(miss).toMatchObject({ keys: ['status:missing'], hit: false });
        expect(again.hit).toBe(true);
        expect(set.command.toUpperCase()).toBe('SET');
        expect(set.keys).toEqual(['session:abc']);
        // The value is hidden as the clients' own tracing hides it.
        expect(set.args.slice(0, 2)).toEqual(['session:abc', '?']);
        // Their tracing channels hide MGET's keys too; the commands the profiler follows itself show them.
        expect(mget).toMatchObject({ keys: n % 2 === 0 ? [] : ['status:cached', 'status:missing'], hit: false });
        expect(data.hits).toBe(3);
        expect(data.misses).toBe(2);
        for (const c of data.commands) {
          expect(c.duration).toBeGreaterThan(0);
          expect(c.caller).toMatch(/cache\.test\.ts:\d+$/);
        }
        // MGET reads them again where its keys are known.
        expect(data.repeated).toEqual(n % 2 === 0 ? [{ key: 'status:cached', reads: 2 }] : [{ key: 'status:cached', reads: 3 }, { key: 'status:missing', reads: 2 }]);
        expect(JSON.stringify(data)).not.toContain('secret-value');
      });

      it('shows a pipeline and a MULTI as one entry each, with their commands', async () => {
        const { data } = await cacheOf(`/${n}/batches`);
        expect(data.commands.map((c: any) => c.command)).toEqual(['pipeline', 'multi']);
        const [pipeline, multi] = data.commands;
        expect(pipeline.commands.map((c: any) => c.command.toUpperCase())).toEqual(['GET', 'SET', 'GET']);
        expect(pipeline.commands.map((c: any) => c.hit)).toEqual([true, undefined, false]);
        // node-redis 5.12+ publishes a MULTI as a batch of a size, not command by command.
        if (multi.commands.length > 0) expect(multi.commands.map((c: any) => c.command.toUpperCase())).toEqual(['INCR', 'GET']);
        else expect(multi.sent).toBe(2);
        expect(pipeline.caller).toMatch(/cache\.test\.ts:\d+$/);
      });

      it('records a failing command with its error', async () => {
        const { status, data, body } = await cacheOf(`/${n}/failing`);
        expect(status).toBe(500);
        expect(body).toContain('WRONGTYPE');
        expect(data.errors).toBe(1);
        expect(data.commands[0].error.message).toContain('WRONGTYPE');
      });
    });
  }

  it('puts the commands on the timeline and the toolbar', async () => {
    const res = await fetch(`${server.url}/0/status`);
    const token = res.headers.get('x-debug-token')!;
    const perf = (await (await fetch(`${server.url}/_profiler/${token}?panel=performance`, { headers: { accept: 'application/json' } })).json()).data;
    expect(perf.timeline.filter((r: any) => r.kind === 'cache').map((r: any) => r.name)).toContain('get status:cached');
    const page = await (await fetch(`${server.url}/_profiler/${token}?panel=cache`)).text();
    expect(page).toContain('Read more than once in this request');
    expect(page).toContain('status:cached');
    const bar = await (await fetch(`${server.url}/_wdt/${token}`)).text();
    expect(bar).toMatch(/Cache<\/span> <span class="wp-wdt-mono">5 in [^<]+ · 3\/5 hit/);
  });

  it('ioredis 6: commands sent before its connection is ready are each in the profile of the request that sent them', async () => {
    // A client of its own, connecting on its first command: the first requests' commands wait in its offline queue.
    const fresh = new Redis(url, { lazyConnect: true });
    const app = express();
    app.use(profiler);
    app.get('/fresh/:key', async (req, res) => res.json({ value: await fresh.get(`fresh:${req.params.key}`) }));
    const own = await listen(app);
    try {
      const answers = await Promise.all(['a', 'b', 'c'].map((key) => fetch(`${own.url}/fresh/${key}`)));
      for (const [i, res] of answers.entries()) {
        expect(res.status).toBe(200);
        const data = (await (await fetch(`${own.url}/_profiler/${res.headers.get('x-debug-token')}?panel=cache`, { headers: { accept: 'application/json' } })).json()).data;
        // The first also carries what ioredis sends as it connects (INFO, CLIENT SETINFO): it waited for them.
        expect(data.commands.filter((c: { command: string }) => c.command.toLowerCase() === 'get').map((c: { keys: string[] }) => c.keys)).toEqual([[`fresh:${'abc'[i]}`]]);
      }
    } finally {
      await own.close();
      await fresh.quit();
    }
  });

  it('runs in CI', () => {
    if (process.env.CI) expect(inject('redisMissing')).toBe('');
  });
});
