import type { Express } from 'express';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import type { AddressInfo, Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { profileOf, READ_SQL } from '../src/storage/query.js';
import { profileFrom } from '../src/collectors/build.js';
import { corePanels, panelOptionsOf } from '../src/collectors/index.js';
import { resolveOptions } from '../src/options.js';
import { openDatabase } from '../src/storage/sqlite.js';

export interface Running {
  url: string;
  server: Server;
  close(): Promise<void>;
}

/** Start an app on a free port of 127.0.0.1. */
export async function listen(app: Express | ((req: any, res: any) => void)): Promise<Running> {
  const { createServer } = await import('node:http');
  const server = createServer(app as never);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections?.();
      server.close(() => resolve());
    }),
  };
}

export const tempDir = (): string => mkdtempSync(path.join(tmpdir(), 'wp-test-'));
export const tempDb = (): string => path.join(tempDir(), 'profiler.sqlite');

/** The stored rows, read straight from the SQLite file as another process would, and made into the profiles they store. */
export function readRows(file: string): Array<{ token: string; parent: string | null; method: string; url: string; status: number; ip: string; duration: number; type: string; collectors: Record<string, any>; collectorErrors?: Record<string, string> }> {
  const db = openDatabase(file, { readonly: true });
  try {
    const rows = db.prepare(`SELECT p.id, ${READ_SQL.slice('SELECT '.length).replace(/WHERE p.token = \?$/, 'ORDER BY p.id')}`).all() as any[];
    const options = panelOptionsOf(resolveOptions({}));
    return rows.map(({ id, ...row }) => ({ id, ...profileFrom(profileOf(row), corePanels, options, () => {}) }));
  } finally {
    db.close();
  }
}

export interface FixtureApp { child: ChildProcess; url: string; stderr: () => string; stop(): Promise<void> }

/**
 * A fixture app in a process of its own, with the environment a developer's shell has (no test
 * mode, nothing trusted) plus `env`: it prints "port <n>" once it listens.
 */
export async function startFixture(file: string, args: string[], env: Record<string, string> = {}, nodeArgs: string[] = []): Promise<FixtureApp> {
  const { NODE_ENV: _mode, WEB_PROFILER_TRUST_LOCAL: _trust, WEB_PROFILER_SECRET: _secret, ...shell } = process.env;
  const child = spawn(process.execPath, [...nodeArgs, file, ...args], { env: { ...shell, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr!.on('data', (c) => { err += c; });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.on('data', (c) => {
      out += c;
      const m = /port (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`the app exited (${code}): ${err}`)));
  });
  return {
    child,
    url: `http://127.0.0.1:${port}`,
    stderr: () => err,
    stop: () => new Promise((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    }),
  };
}

/**
 * A function with a name of its own that tests `thousands` × 1,000 numbers for primes: a fixed
 * amount of work (about 10 ms a thousand here, idle), which a busy machine makes take longer and
 * so be sampled more, never less. It reads no clock: a burn until a time is shorter in CPU the
 * busier the machine, and performance.now() itself then comes out on top.
 */
export function burnPrimes(thousands: number): number {
  const limit = 2 + thousands * 1000;
  let found = 0;
  for (let n = 2; n < limit; n++) {
    let prime = true;
    for (let d = 2; d * d <= n; d++) if (n % d === 0) { prime = false; break; }
    if (prime) found++;
  }
  return found;
}
