import express from 'express';
import { cpSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import winston from 'winston';
import log4js from 'log4js';
import { createRequire } from 'node:module';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { logger, pinoDestination, webProfiler } from '../src/index.js';
import { profilerTransport } from '../src/instruments/winston.js';
import { listen, readRows, tempDb, type Running } from './helpers.js';

const running: Running[] = [];
const closing: (() => void)[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.close()));
});
afterAll(() => closing.forEach((close) => close()));

// Loaded untyped: pino-http's types give every IncomingMessage a pino `log`, over the profiler's.
const pinoHttp = createRequire(import.meta.url)('pino-http') as (options: unknown) => express.RequestHandler;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A destination that keeps what it was given, byte for byte. */
function sink() {
  const chunks: string[] = [];
  return { chunks, stream: { write: (s: string) => void chunks.push(s) } };
}

/** The same app, with or without the profiler: what the loggers write must not differ. */
async function start(recorded: boolean, transport = true) {
  const out = sink();
  const log = pino({ name: 'shop', timestamp: false, base: undefined, level: 'trace' }, out.stream);
  const winstonOut: string[] = [];
  const wlog = winston.createLogger({
    level: 'silly',
    format: winston.format.json(),
    transports: [
      new winston.transports.Stream({ stream: new Writable({ write(chunk, _enc, cb) { winstonOut.push(String(chunk)); cb(); } }) }),
      // A transport that answers late, like any network one: lines queue up behind it.
      new (class extends winston.transports.Stream {
        override log(info: unknown, cb: () => void) {
          setTimeout(cb, 1);
        }
      })({ stream: new Writable({ write(_c, _e, cb) { cb(); } }) }),
      ...(recorded && transport ? [profilerTransport()] : []),
    ],
  });
  const profiler = recorded ? webProfiler({ database: tempDb(), onError: () => {} }) : undefined;
  const app = express();
  if (profiler) app.use(profiler);
  app.use(pinoHttp({ logger: log.child({ component: 'http' }), autoLogging: { ignore: (req: express.Request) => (req.url ?? '').startsWith('/_profiler') } }));
  app.get('/pino/:id', async (req, res) => {
    const orders = log.child({ module: 'orders' });
    orders.info({ order: req.params.id }, 'order %s received', req.params.id);
    await sleep(Number(req.query.wait ?? 1));
    orders.warn({ order: req.params.id, card: { number: '4242', password: 'pino-secret' } }, 'payment slow');
    (req.log as unknown as pino.Logger).debug('from pino-http');
    logger.info('from the profiler\'s logger');
    log.trace('tracing');
    log.fatal('fatal line');
    res.json({ id: (req as unknown as { id: unknown }).id });
  });
  app.get('/chatty', (_req, res) => {
    for (let i = 0; i < 1100; i++) log.info({ i }, 'line');
    res.send('ok');
  });
  app.get('/winston/:id', async (req, res) => {
    wlog.info('order received', { order: req.params.id });
    await sleep(Number(req.query.wait ?? 1));
    for (let i = 0; i < 3; i++) wlog.warn(`step ${i}`, { order: req.params.id, api_key: 'winston-secret' });
    wlog.log('silly', 'very detailed');
    res.send('ok');
  });
  const server = await listen(app);
  running.push(server);
  if (profiler) closing.push(() => profiler.close());
  return { ...server, profiler, out, winstonOut, log, wlog };
}

async function logs(app: Awaited<ReturnType<typeof start>>, token: string) {
  app.profiler!.flush();
  const res = await fetch(`${app.url}/_profiler/${token}?panel=logs`, { headers: { accept: 'application/json' } });
  return (await res.json()).data;
}

describe('pino and pino-http', () => {
  it('puts each pino line into the profile of the request that logged it, after awaits and out of order', async () => {
    const app = await start(true);
    const ids = ['a1', 'b2', 'c3', 'd4'];
    const replies = await Promise.all(ids.map((id, i) => fetch(`${app.url}/pino/${id}?wait=${(4 - i) * 15}`)));
    for (const [i, res] of replies.entries()) {
      const token = res.headers.get('x-debug-token')!;
      // pino-http keeps an existing req.id: the profile's token.
      expect((await res.json()).id).toBe(token);
      const data = await logs(app, token);
      const pinoLines = data.lines.filter((l: any) => l.channel === 'pino');
      expect(pinoLines.map((l: any) => [l.level, l.message, l.logger])).toEqual([
        ['info', `order ${ids[i]} received`, 'shop'],
        ['warn', 'payment slow', 'shop'],
        ['debug', 'from pino-http', 'shop'],
        ['debug', 'tracing', 'shop'],
        ['error', 'fatal line', 'shop'],
        ['info', 'request completed', 'shop'],
      ]);
      expect(pinoLines[0].context).toEqual({ module: 'orders', order: ids[i] });
      expect(pinoLines[1].context.card).toEqual({ number: '4242', password: '[redacted]' });
      expect(pinoLines[2].context.req.id).toBe(token);
      expect(data.channels.pino).toBe(6);
    }
    // The access-log line pino-http writes names the profile.
    const completed = app.out.chunks.map((c) => JSON.parse(c)).filter((l) => l.msg === 'request completed');
    expect(completed.map((l) => l.req.id).sort()).toEqual(replies.map((r) => r.headers.get('x-debug-token')).sort());
  });

  it('writes to pino\'s destination exactly what it writes without the profiler', async () => {
    const bare = await start(false);
    const recorded = await start(true);
    for (const app of [bare, recorded]) {
      await (await fetch(`${app.url}/pino/x1`)).text();
      app.log.info({ outside: true }, 'a line outside any request');
    }
    // The app's own lines byte for byte; pino-http's name the request (its id, port and timing) and
    // the response (whose id, the profile's token, and debug headers differ by design).
    const http = (line: string) => {
      const parsed = JSON.parse(line);
      parsed.req.id = parsed.req.remotePort = 0;
      parsed.req.headers.host = '';
      if (parsed.res) {
        parsed.responseTime = 0;
        for (const h of ['x-debug-token', 'x-debug-token-link', 'x-robots-tag', 'content-length', 'etag']) delete parsed.res.headers[h];
      }
      return parsed;
    };
    const same = (lines: string[]) => lines.map((l) => (l.includes('"component":"http"') ? http(l) : l));
    expect(same(recorded.out.chunks)).toEqual(same(bare.out.chunks));
    expect(recorded.out.chunks.length).toBeGreaterThanOrEqual(6);
  });

  it('takes lines from a destination for older pino, once each with a pino that has the channel too', async () => {
    const profiler = webProfiler({ database: tempDb(), onError: () => {} });
    closing.push(() => profiler.close());
    const out = sink();
    const log = pino({ timestamp: false }, pino.multistream([{ stream: out.stream }, { stream: pinoDestination() }]));
    const app = express();
    app.use(profiler);
    app.get('/', (_req, res) => {
      log.error({ code: 7 }, 'through multistream');
      res.send('ok');
    });
    const server = await listen(app);
    running.push(server);
    const res = await fetch(server.url);
    await res.text();
    profiler.flush();
    const data = (await (await fetch(`${server.url}/_profiler/${res.headers.get('x-debug-token')}?panel=logs`, { headers: { accept: 'application/json' } })).json()).data;
    expect(data.lines.map((l: any) => [l.channel, l.level, l.message, l.context])).toEqual([['pino', 'error', 'through multistream', { code: 7 }]]);
    expect(out.chunks).toHaveLength(1);
  });
});

describe('winston', () => {
  it.each([
    ['with profilerTransport() added (each line once)', true],
    ['with no setup at all', false],
  ])('puts lines into the request that logged them, even when a slow transport makes them late: %s', async (_name, transport) => {
    const app = await start(true, transport);
    const ids = ['w1', 'w2', 'w3'];
    const replies = await Promise.all(ids.map((id, i) => fetch(`${app.url}/winston/${id}?wait=${(3 - i) * 10}`)));
    for (const [i, res] of replies.entries()) {
      await res.text();
      const data = await logs(app, res.headers.get('x-debug-token')!);
      const lines = data.lines.filter((l: any) => l.channel === 'winston');
      expect(lines.map((l: any) => [l.level, l.message])).toEqual([
        ['info', 'order received'], ['warn', 'step 0'], ['warn', 'step 1'], ['warn', 'step 2'], ['debug', 'very detailed'],
      ]);
      expect(lines.slice(0, 4).every((l: any) => l.context.order === ids[i])).toBe(true);
      expect(lines[1].context.api_key).toBe('[redacted]');
    }
  });

  it('leaves what its other transports write unchanged, and keeps no line logged outside a request', async () => {
    const bare = await start(false);
    const recorded = await start(true);
    for (const app of [bare, recorded]) {
      await (await fetch(`${app.url}/winston/q1`)).text();
      app.wlog.info('outside any request');
    }
    // winston writes through streams: wait for the line, not for a time.
    const wrote = (out: string[]) => out.some((line) => line.includes('outside any request'));
    for (let waited = 0; !(wrote(bare.winstonOut) && wrote(recorded.winstonOut)) && waited < 5000; waited += 10) await sleep(10);
    expect(recorded.winstonOut).toEqual(bare.winstonOut);
    expect(recorded.winstonOut).toContain('{"level":"info","message":"outside any request"}\n');
  });
});

describe('winston: a copy the profiler did not find', () => {
  it('its logger, made before the profiler with profilerTransport(), has its lines recorded once, beside a logger of the copy it found', async () => {
    // A second winston at a path that is no package's (vendored): the profiler hooks only the one in node_modules.
    const vendored = path.resolve('test-artifacts', `vendor-${process.pid}`, 'winston');
    cpSync(path.resolve('node_modules/winston'), vendored, { recursive: true });
    const other = createRequire(import.meta.url)(vendored) as typeof winston;
    const quiet = () => new Writable({ write(_c, _e, cb) { cb(); } });
    const fromCopy = other.createLogger({ transports: [new other.transports.Stream({ stream: quiet() }), profilerTransport()] });
    const fromFound = winston.createLogger({ transports: [new winston.transports.Stream({ stream: quiet() }), profilerTransport()] });
    const database = tempDb();
    const profiler = webProfiler({ database, onError: () => {} });
    closing.push(() => profiler.close());
    const app = express();
    app.use(profiler);
    app.get('/both', (_req, res) => {
      fromCopy.info('from the vendored copy');
      fromFound.info('from the copy it found');
      res.send('ok');
    });
    const server = await listen(app);
    running.push(server);
    const res = await fetch(`${server.url}/both`);
    await res.text();
    const token = res.headers.get('x-debug-token')!;
    // winston writes through streams: wait for the lines, not for a time.
    const lines = () => {
      profiler.flush();
      return (readRows(database).find((r) => r.token === token)?.collectors.logs.lines ?? []).filter((l: { channel: string }) => l.channel === 'winston').map((l: { message: string }) => l.message);
    };
    for (let waited = 0; lines().length < 2 && waited < 30_000; waited += 20) await sleep(20);
    expect(lines().sort()).toEqual(['from the copy it found', 'from the vendored copy']);
  });
});

describe('log4js', () => {
  it('keeps each line once, at its level, with its category and context and without colours, from a log4js loaded before the profiler; what log4js writes is unchanged', async () => {
    // log4js is imported at the top of this file, before any profiler is made, as an ES module app's hoisted imports load it.
    const printed: string[] = [];
    const collect = { configure: (config: { layout: unknown }, layouts: { layout(type: string, config: unknown): (event: unknown) => string }) => {
      const layout = layouts.layout('pattern', config.layout);
      return (event: unknown) => printed.push(layout(event));
    } };
    // An appender that writes through console.log as it is when the line comes, as log4js's own console appender does when it loads after the profiler.
    const viaConsole = { configure: (_config: unknown, layouts: { colouredLayout: (event: unknown) => string }) => (event: unknown) => console.log(layouts.colouredLayout(event)) };
    log4js.configure({
      appenders: { coloured: { type: viaConsole }, pattern: { type: collect, layout: { type: 'pattern', pattern: '%p %c %m at %f{1}:%l' } } },
      categories: { default: { appenders: ['coloured', 'pattern'], level: 'debug', enableCallStack: true } },
    } as never);
    const pool = log4js.getLogger('db-pool');
    pool.addContext('pool', 'primary');
    const database = tempDb();
    const profiler = webProfiler({ database, onError: () => {} });
    closing.push(() => profiler.close());
    const app = express();
    app.use(profiler);
    app.get('/pool', (_req, res) => {
      pool.warn('slow acquire: %d ms', 812);
      log4js.getLogger('http').error(new Error('upstream refused'));
      res.send('ok');
    });
    const server = await listen(app);
    running.push(server);
    const res = await fetch(`${server.url}/pool`);
    await res.text();
    const warnLine = readFileSync(new URL(import.meta.url), 'utf8').split('\n').findIndex((l) => l.includes("pool.warn('slow acquire")) + 1;
    profiler.flush();
    const lines = readRows(database).find((r) => r.token === res.headers.get('x-debug-token'))!.collectors.logs.lines;
    expect(lines.map((l: any) => [l.level, l.logger, l.channel, l.message.split('\n')[0]])).toEqual([
      ['warn', 'db-pool', 'log4js', 'slow acquire: 812 ms'],
      ['error', 'http', 'log4js', 'Error: upstream refused'],
    ]);
    expect(lines[0].context).toEqual({ pool: 'primary' });
    // log4js wrote what it writes bare: its pattern with the app's line (log4js counts the frames up to it).
    expect(printed[0]).toBe(`WARN db-pool slow acquire: 812 ms at loggers.test.ts:${warnLine}`);
  });
});

describe('the logs panel', () => {
  it('names each line\'s logger and filters by it', async () => {
    const app = await start(true);
    const res = await fetch(`${app.url}/pino/p9`);
    await res.text();
    app.profiler!.flush();
    const page = await (await fetch(`${app.url}/_profiler/${res.headers.get('x-debug-token')}?panel=logs`)).text();
    expect(page).toContain('data-filter-by="channel"');
    expect(page).toMatch(/<td class="mono muted">pino<div>shop<\/div><\/td>/);
  });

  it('keeps the first 1,000 lines of a request and counts the rest', async () => {
    const app = await start(true);
    const res = await fetch(`${app.url}/chatty`);
    await res.text();
    const data = await logs(app, res.headers.get('x-debug-token')!);
    expect(data.lines).toHaveLength(1000);
    // pino-http's access line comes after the 1,100: dropped too.
    expect(data.dropped).toBe(101);
    expect(data.capped).toBe(true);
    const page = await (await fetch(`${app.url}/_profiler/${res.headers.get('x-debug-token')}?panel=logs`)).text();
    expect(page).toContain('Only the first 1000 lines were kept; 101 more were counted and dropped.');
  });
});

describe('console lines with objects', () => {
  it('keep the objects as the line\'s context, shown as a tree to unfold; the text stays the rest', async () => {
    const database = tempDb();
    const own = webProfiler({ database, onError: () => {} });
    const app = express();
    app.use(own);
    app.get('/c', (_req, res) => {
      console.log('the order', { id: 7, lines: [{ sku: 'A-1' }], password: 'console-secret' });
      console.info({ alone: true });
      console.log('plain %s', 'text');
      res.send('ok');
    });
    const server = await listen(app);
    try {
      const res = await fetch(`${server.url}/c`);
      await res.text();
      own.flush();
      const lines = readRows(database)[0].collectors.logs.lines.filter((l: { channel: string }) => l.channel === 'console');
      expect(lines.map((l: { message: string; context?: unknown }) => [l.message, l.context])).toEqual([
        ['the order', { id: 7, lines: [{ sku: 'A-1' }], password: '[redacted]' }],
        ['{…}', { alone: true }],
        ['plain text', undefined],
      ]);
      const page = await (await fetch(`${server.url}/_profiler/${res.headers.get('x-debug-token')}?panel=logs`)).text();
      expect(page).toContain('<span class="v-key">sku</span>: <span class="v-str">"A-1"</span>');
    } finally {
      await server.close();
      own.close();
    }
  });
});
