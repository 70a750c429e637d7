import autocannon from 'autocannon';
import { openDatabase } from '../src/storage/sqlite.js';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from './helpers.js';

// Long: 100,000 requests. .ci/run sets LONG_TESTS=1; locally: LONG_TESTS=1 npx vitest run test/load.test.ts
const LONG = process.env.LONG_TESTS === '1';
if (!LONG) process.stderr.write('\n!!! LOAD TEST SKIPPED: set LONG_TESTS=1 to run 100,000 requests against the demo (.ci/run does).\n\n');

const rssOf = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;

describe.skipIf(!LONG)('load against npm start', () => {
  it('100,000 requests at concurrency 100: no error, one stored profile each, RSS bounded, the cap held', async () => {
    const dir = tempDir();
    const cap = 100_000;
    const child = spawn(process.execPath, ['dist/demo/main.js'], {
      env: { ...process.env, PORT: '0', APP_ENV: 'dev', STORAGE_DIR: path.join(dir, 'storage'), WEB_PROFILER_MAX_PROFILES: String(cap) },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout!.on('data', (d) => {
          out += d;
          const m = /API\s+(http:\/\/\S+)/.exec(out);
          // The banner names localhost; the load goes to the address the demo listens on.
          if (m) resolve(m[1].replace('//localhost:', '//127.0.0.1:'));
        });
        child.once('exit', (code) => reject(new Error(`demo exited with ${code}: ${out}`)));
      });
      const tokens: string[] = [];
      const run = (amount: number) => autocannon({
        url,
        connections: 100,
        amount,
        requests: [{ method: 'GET', path: '/pub/status/web', onResponse: (_status: number, _body: string, _ctx: unknown, headers: Record<string, string>) => { tokens.push(headers['x-debug-token'] ?? headers['X-Debug-Token']); } }],
      } as autocannon.Options);
      const warm = await run(5_000);
      const first = await run(45_000);
      const rssMid = rssOf(child.pid!);
      const result = await run(50_000);
      const rssAfter = rssOf(child.pid!);
      expect(first.errors + first.timeouts + first.non2xx + result.errors + result.timeouts + result.non2xx).toBe(0);
      // autocannon drops the odd request in flight when a connection of its own ends (it reconnects
      // and counts nothing), which it does under CPU contention: each answer is checked, all of them.
      const answered = warm['2xx'] + first['2xx'] + result['2xx'];
      expect(answered).toBeGreaterThan(99_900);
      expect(tokens).toHaveLength(answered);
      expect(tokens.every((t) => /^[0-9a-f]{6,}$/.test(t))).toBe(true);
      expect(new Set(tokens).size).toBe(answered);
      // Memory: the queue and caches are bounded. Measured between two equal stretches of load, once the
      // first has grown the heap and the writer's backlog to what this load needs (from the start, the
      // growth moved between 106 and 190 MiB from run to run, on this code and the one before): the
      // second 50,000 requests must not grow the process by 150 MiB more, which a leak of one profile's
      // capture a request (3 KiB and more) would.
      expect(rssAfter - rssMid).toBeLessThan(150 * 2 ** 20);
      // Every token read back, once the writer's backlog has landed (it flushes every 100 ms).
      const file = path.join(dir, 'storage', 'profiler-dev.sqlite');
      const read = <T>(sql: string) => {
        const db = openDatabase(file, { readonly: true });
        try {
          return db.prepare(sql).all() as T[];
        } finally {
          db.close();
        }
      };
      let stored = new Set<string>();
      const unstored = () => {
        stored = new Set(read<{ token: string }>('SELECT token FROM profiles').map((row) => row.token));
        return tokens.filter((t) => !stored.has(t)).length;
      };
      await expect.poll(unstored, { timeout: 120_000, interval: 250 }).toBe(0);
      expect(stored.size).toBeGreaterThanOrEqual(answered);
      expect(stored.size).toBeLessThanOrEqual(100_000);
      for (const t of tokens) if (!stored.has(t)) throw new Error(`token ${t} answered but not stored`);
      // Past the cap, retention prunes the oldest: once the 5,000 over it have landed, the count is
      // back at the cap (retention goes in bounded steps, so it is waited for).
      const extra = await run(5_000);
      const count = () => read<{ n: number }>('SELECT count(*) AS n FROM profiles')[0].n;
      const landed = () => read<{ n: number }>(`SELECT count(*) AS n FROM profiles WHERE time >= ${extra.start.getTime()}`)[0].n;
      await expect.poll(landed, { timeout: 120_000, interval: 250 }).toBeGreaterThanOrEqual(extra['2xx']);
      await expect.poll(count, { timeout: 120_000, interval: 250 }).toBe(cap);
    } finally {
      child.kill('SIGTERM');
    }
  }, 600_000);
});
