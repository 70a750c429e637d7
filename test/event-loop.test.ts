import express from 'express';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webProfiler } from '../src/index.js';
import { listen, tempDb, type Running } from './helpers.js';

/** An app function that holds the loop: the CPU profile's stack names it. */
function priceEveryOrder(ms: number): number {
  const until = performance.now() + ms;
  let total = 0;
  while (performance.now() < until) total += Math.sqrt(total + 1);
  return total;
}

describe('the event loop per request', () => {
  let server: Running;
  let profiler: ReturnType<typeof webProfiler>;

  beforeAll(async () => {
    profiler = webProfiler({ database: tempDb(), heapAndGc: true, onError: () => {} });
    const app = express();
    app.use(profiler);
    app.get('/report', (_req, res) => {
      // The head first: the client sends the others once it has it, while this holds the loop (see fixtures/burst.mjs).
      res.writeHead(200, { 'content-type': 'application/json' });
      res.flushHeaders();
      // Synchronous work: nothing else runs meanwhile.
      const until = performance.now() + 200;
      let n = 0;
      while (performance.now() < until) n++;
      res.end(JSON.stringify({ n: n > 0 }));
    });
    app.get('/quick/:n', (req, res) => res.json({ n: req.params.n }));
    app.get('/crunch', (_req, res) => res.json({ total: priceEveryOrder(120) }));
    app.get('/garbage', (_req, res) => {
      let kept = 0;
      for (let i = 0; i < 400; i++) kept += new Array(50_000).fill(i).length;
      res.json({ kept });
    });
    server = await listen(app);
  });
  afterAll(async () => {
    await server?.close();
    profiler?.close();
  });

  const json = async (url: string) => (await fetch(`${server.url}${url}`, { headers: { accept: 'application/json' } })).json();

  it('names the request whose synchronous code held the loop, and links the ten that waited behind it', async () => {
    // The clients are another process, as they are in life: this one's loop is the one held.
    const { stdout } = await promisify(execFile)(process.execPath, [path.resolve('test/fixtures/burst.mjs'), server.url], { encoding: 'utf8', timeout: 30_000 });
    const { block: blockToken, waited } = JSON.parse(stdout) as { block: string; waited: string[] };
    profiler.flush();

    const held = (await json(`/_profiler/${blockToken}?panel=performance`)).data.loop;
    expect(held.blocks).toHaveLength(1);
    expect(held.blocks[0].duration).toBeGreaterThanOrEqual(195);
    expect(held.blocks[0].layer).toMatch(/route GET \/report/);
    expect(held.waits).toBeUndefined();
    for (const token of waited) {
      const profile = await json(`/_profiler/${token}`);
      expect(profile.blockedBy, token).toBe(blockToken);
      expect(profile.collectors.performance.loop.waits[0]).toMatchObject({ by: blockToken });
      expect(profile.collectors.performance.loop.blocks).toBeUndefined();
    }
    // The blocking request's page names every one that waited; each waiter's page links back.
    const page = await (await fetch(`${server.url}/_profiler/${blockToken}?panel=performance`)).text();
    expect(page).toContain('Held the event loop for');
    expect(page).toContain('10 requests waited behind it');
    expect(page).toContain('To see what ran: send it again with <span class="mono">X-Debug-Profile: cpu</span>');
    for (const token of waited) expect(page).toContain(`href="/_profiler/${token}?panel=performance"`);
    const waiterPage = await (await fetch(`${server.url}/_profiler/${waited[0]}?panel=performance`)).text();
    expect(waiterPage).toContain(`Arrived while the synchronous code of <a class="mono" href="/_profiler/${blockToken}?panel=performance"`);
  });

  it('shows the stack that held the loop, from the request\'s CPU profile', async () => {
    const res = await fetch(`${server.url}/crunch`, { headers: { 'x-debug-profile': 'cpu' } });
    await res.json();
    const token = res.headers.get('x-debug-token')!;
    profiler.flush();
    const profile = await json(`/_profiler/${token}`);
    expect(profile.collectors.performance.loop.blocks[0].duration).toBeGreaterThanOrEqual(115);
    const held = profile.collectors.cpu.held
    expect(held).toHaveLength(1);
    expect(held[0].start).toBe(profile.collectors.performance.loop.blocks[0].start);
    expect(held[0].stack).toContainEqual(expect.objectContaining({ name: 'priceEveryOrder', kind: 'app', file: expect.stringMatching(/event-loop\.test\.ts$/) }));
    const page = await (await fetch(`${server.url}/_profiler/${token}?panel=performance`)).text();
    expect(page).toContain('What ran, from this request\'s CPU profile');
    expect(page).toMatch(/<li class="frame-app">priceEveryOrder <span class="muted">[^<]*event-loop\.test\.ts:\d+<\/span><\/li>/);
  });

  it('counts the garbage collections a request saw and its heap at start and end; a quick request holds nothing up', async () => {
    const res = await fetch(`${server.url}/garbage`);
    const token = res.headers.get('x-debug-token')!;
    // V8 tells of a collection a turn or more after it: the writer's own interval (100 ms) leaves it
    // that time, flush() would not. (Past its backlog window too: the garbage route holds the loop itself.)
    await new Promise((resolve) => setTimeout(resolve, 150));
    const quick = await fetch(`${server.url}/quick/x`);
    profiler.flush();
    const loop = (await json(`/_profiler/${token}?panel=performance`)).data.loop;
    expect(loop.gc.count).toBeGreaterThan(0);
    expect(loop.heap[0]).toBeGreaterThan(0);
    expect(loop.heap[1]).toBeGreaterThan(0);
    const calm = (await json(`/_profiler/${quick.headers.get('x-debug-token')}?panel=performance`)).data.loop;
    expect(calm.blocks).toBeUndefined();
    expect(calm.waits).toBeUndefined();
  });
});
