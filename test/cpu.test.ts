import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../src/cli/run.js';
import { webProfiler } from '../src/index.js';
import { burnPrimes, listen, tempDb, type Running } from './helpers.js';

let app: Running;
let profiler: ReturnType<typeof webProfiler>;
let database: string;
const holding = (() => {
  let started!: () => void;
  let release!: () => void;
  return { started: () => started(), hasStarted: new Promise<void>((r) => (started = r)), released: new Promise<void>((r) => (release = r)), release: () => release() };
})();

beforeAll(async () => {
  database = tempDb();
  profiler = webProfiler({ database, onError: () => {}, secret: 'the-secret' });
  const e = express();
  e.use(profiler);
  e.get('/burn', async (req, res) => {
    const primes = burnPrimes(Number(req.query.k ?? 120));
    await new Promise((r) => setTimeout(r, Number(req.query.wait ?? 0)));
    res.json({ primes });
  });
  // Profiles until the test lets it answer: a second ask comes while it surely runs.
  e.get('/hold', async (_req, res) => {
    const primes = burnPrimes(300);
    holding.started();
    await holding.released;
    res.json({ primes });
  });
  // Handlers of their own, each run once: a handler V8 has optimized may have burnPrimes inlined into it, and then its samples are the handler's.
  for (const path of ['/burn-top', '/burn-cli']) e.get(path, (req, res) => res.json({ primes: burnPrimes(Number(req.query.k)) }));
  app = await listen(e);
});

afterAll(async () => {
  await app?.close();
  profiler?.close();
});

async function cpuOf(res: Response) {
  await res.text();
  profiler.flush();
  const body = await (await fetch(`${app.url}/_profiler/${res.headers.get('x-debug-token')}?panel=cpu`, { headers: { accept: 'application/json' } })).json();
  return body.data;
}

describe('CPU profile on demand', () => {
  it('profiles a request that asks: the function that burns is on top of the self time, and in the flame graph', async () => {
    const data = await cpuOf(await fetch(`${app.url}/burn-top?k=1500`, { headers: { 'x-debug-profile': 'cpu' } }));
    expect(data.samples).toBeGreaterThan(20);
    expect(data.interval).toBeGreaterThan(0.5);
    const top = data.functions[0];
    expect(top).toMatchObject({ name: 'burnPrimes', kind: 'app' });
    expect(top.file).toMatch(/helpers\.ts$/);
    expect(top.self).toBeGreaterThan(60);
    const names: string[] = [];
    const walk = (n: any) => {
      names.push(n.n);
      for (const c of n.c ?? []) walk(c);
    };
    walk(data.flame);
    expect(names).toContain('burnPrimes');
    expect(data.others).toBe(0);
    const page = await (await fetch(`${app.url}/_profiler/${(await fetch(`${app.url}/_profiler/latest?panel=cpu`, { redirect: 'manual' })).headers.get('location')!.slice(11, 17)}?panel=cpu`)).text();
    expect(page).toContain('<svg class="flame"');
  });

  it('does not profile a request that does not ask', async () => {
    const res = await fetch(`${app.url}/burn?k=200`);
    await res.text();
    profiler.flush();
    const profile = await (await fetch(`${app.url}/_profiler/${res.headers.get('x-debug-token')}`, { headers: { accept: 'application/json' } })).json();
    expect(profile.collectors.cpu).toBeUndefined();
    expect(profile.collectors.cpuprofile).toBeUndefined();
  });

  it('profiles one request at a time: a second ask is told, and the first says others ran', async () => {
    const first = fetch(`${app.url}/hold`, { headers: { 'x-debug-profile': 'cpu' } });
    await holding.hasStarted;
    const b = await cpuOf(await fetch(`${app.url}/burn?k=100`, { headers: { 'x-debug-profile': 'cpu' } }));
    holding.release();
    const a = await cpuOf(await first);
    expect(b).toEqual({ busy: true, others: 0 });
    expect(a.others).toBe(1);
    expect(a.samples).toBeGreaterThan(0);
  });

  it('ignores the ask of a client the access check does not let in', async () => {
    // Proxied from elsewhere without the secret: not plainly local.
    const data = await cpuOf(await fetch(`${app.url}/burn?k=200`, { headers: { 'x-debug-profile': 'cpu', 'x-forwarded-for': '203.0.113.9' } }));
    expect(data).toBeNull();
    const allowed = await cpuOf(await fetch(`${app.url}/burn?k=200`, { headers: { 'x-debug-profile': 'cpu', 'x-forwarded-for': '203.0.113.9', 'x-profiler-secret': 'the-secret' } }));
    expect(allowed.samples).toBeGreaterThan(0);
  });

  it('asks through the one-shot cookie, which the profiled response clears', async () => {
    const res = await fetch(`${app.url}/burn?k=200`, { headers: { cookie: 'theme=dark; _wp_profile=cpu' } });
    expect(res.headers.get('set-cookie')).toBe('_wp_profile=; Path=/; Max-Age=0; SameSite=Strict');
    expect((await cpuOf(res)).samples).toBeGreaterThan(0);
  });

  it('downloads a valid .cpuprofile, and the CLI prints the top functions', async () => {
    const res = await fetch(`${app.url}/burn-cli?k=800`, { headers: { 'x-debug-profile': 'cpu' } });
    await res.text();
    profiler.flush();
    const token = res.headers.get('x-debug-token')!;
    const download = await fetch(`${app.url}/_profiler/${token}/cpu.cpuprofile`);
    expect(download.headers.get('content-disposition')).toBe(`attachment; filename="${token}.cpuprofile"`);
    const raw = await download.json();
    expect(Array.isArray(raw.nodes) && Array.isArray(raw.samples) && Array.isArray(raw.timeDeltas)).toBe(true);
    expect(raw.endTime).toBeGreaterThan(raw.startTime);
    expect(raw.nodes[0].callFrame.functionName).toBe('(root)');
    expect((await fetch(`${app.url}/_profiler/${(await cpuOf(await fetch(`${app.url}/burn?k=10`))) ?? 'abcdef'}/cpu.cpuprofile`)).status).toBe(404);
    const lines: string[] = [];
    expect(await run(['show', token, '--cpu', '--db', database], { out: (l) => lines.push(l), err: (l) => lines.push(l) }, {})).toBe(0);
    // The CLI's own job: the top functions, by self time, each with its place. (Which name the burning
    // code has depends on what V8 inlined by then; the panel test above checks the name.)
    const text = lines.join('\n');
    expect(text).toMatch(/cpu: \d+ samples over [\d.]+ ms; top functions by self time:\n\s+[\d.]+ms\s+[\d.]+ms\s+\S+\s+\S*(?:cpu\.test|helpers)\.ts:\d+/);
    const selfTimes = lines.slice(lines.findIndex((l) => l.includes('top functions')) + 1).map((l) => Number(/^\s+([\d.]+)ms/.exec(l)?.[1])).filter(Number.isFinite);
    expect(selfTimes.length).toBeGreaterThan(1);
    expect(selfTimes).toEqual([...selfTimes].sort((a, b) => b - a));
  });
});
