import express from 'express';
import { Agent, request } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { logger, webProfiler } from '../src/index.js';
import { listen, readRows, tempDb, type Running } from './helpers.js';

/**
 * Every record belongs to the request that made it, or to none: a request's context never reaches
 * code that does not descend from it (a client in the same process, a request that never answered,
 * a socket kept alive, a timer made at start-up).
 */
const running: Running[] = [];
const closing: (() => void)[] = [];
afterAll(async () => {
  for (const close of closing.splice(0)) close();
  await Promise.all(running.splice(0).map((r) => r.close()));
});

/** /hang never answers; /echo answers the parent token its request carried; /fan calls /echo and answers what it got. */
function build(profiler?: ReturnType<typeof webProfiler>) {
  const app = express();
  if (profiler) app.use(profiler);
  app.get('/hang', () => {});
  app.get('/echo', (req, res) => {
    logger.info('echoing');
    res.json({ parent: req.headers['x-debug-parent-token'] ?? null });
  });
  app.get('/fan', async (req, res) => {
    await new Promise((r) => setTimeout(r, Number(req.query.wait)));
    const echoed = await (await fetch(`http://127.0.0.1:${req.socket.localPort}/echo`)).json();
    res.json({ echoed });
  });
  return app;
}

/** A node:http client in this process, with a socket kept alive between calls; gives up after `giveUp` ms. */
function get(agent: Agent, base: string, path: string, giveUp?: number): Promise<{ status: number; body: string; token: string } | 'gave up'> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path, agent }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d) => (body += d)).on('end', () => resolve({ status: res.statusCode!, body, token: String(res.headers['x-debug-token']) }));
    });
    if (giveUp !== undefined) req.setTimeout(giveUp, () => {
      req.destroy();
      resolve('gave up');
    });
    req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
    req.end();
  });
}

describe('a request\'s context stays its own', () => {
  it.each([false, true])('an in-process client calls /echo, /hang (gives up), /echo: no parent token reaches the client\'s calls (recorded: %s)', async (recorded) => {
    const database = tempDb();
    const profiler = recorded ? webProfiler({ database, onError: () => {} }) : undefined;
    const server = await listen(build(profiler));
    running.push(server);
    const agent = new Agent({ keepAlive: true });
    closing.push(() => agent.destroy());
    const first = await get(agent, server.url, '/echo');
    expect(await get(agent, server.url, '/hang', 300)).toBe('gave up');
    const second = await get(agent, server.url, '/echo');
    // A startup-time timer's line, while /hang is still open on the server: no request's.
    await new Promise<void>((resolve) => setTimeout(() => {
      logger.info('from a timer of nobody\'s request');
      resolve();
    }, 5));
    for (const answer of [first, second]) {
      expect(answer).not.toBe('gave up');
      expect(JSON.parse((answer as { body: string }).body)).toEqual({ parent: null });
    }
    if (!profiler) return;
    profiler.flush();
    const rows = readRows(database);
    const echoes = rows.filter((r) => r.url.endsWith('/echo'));
    expect(echoes).toHaveLength(2);
    for (const row of echoes) {
      expect(row.parent).toBeNull();
      expect(row.collectors.logs.lines.map((l: { message: string }) => l.message)).toEqual(['echoing']);
    }
    profiler.close();
  });

  it('two requests in flight together that each call another: each call carries its own request\'s token, and no other', async () => {
    const database = tempDb();
    const profiler = webProfiler({ database, onError: () => {} });
    const server = await listen(build(profiler));
    running.push(server);
    const [a, b] = await Promise.all([fetch(`${server.url}/fan?wait=30`), fetch(`${server.url}/fan?wait=5`)]);
    for (const res of [a, b]) expect((await res.json()).echoed).toEqual({ parent: res.headers.get('x-debug-token') });
    profiler.flush();
    const rows = readRows(database);
    const tokens = [a, b].map((r) => r.headers.get('x-debug-token'));
    expect(rows.filter((r) => r.url.endsWith('/echo')).map((r) => r.parent).sort()).toEqual([...tokens].sort());
    profiler.close();
  });
});
