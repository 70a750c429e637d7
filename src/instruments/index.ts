import dc from 'node:diagnostics_channel';
import { createRequire } from 'node:module';
import type { DriverAdapter } from './driver.js';
import { betterSqlite3 } from './better-sqlite3.js';
import { nodeSqlite, nodeSqliteModule } from './node-sqlite.js';
import { mysql } from './mysql.js';
import { mysql2 } from './mysql2.js';
import { pg } from './pg.js';
import { sqlite3 } from './sqlite3.js';
import { ioredis } from './ioredis.js';
import { nodeRedis } from './node-redis.js';
import { nodemailer } from './nodemailer.js';
import { drizzle } from './drizzle.js';
import { bullmq } from './bullmq.js';
import { anthropic, openai } from './ai-sdks.js';

/** The packages recorded with no setup: databases, caches, mail, queues, AI providers. A new one: its adapter file beside these, and its name here. */
export const drivers: DriverAdapter[] = [betterSqlite3, nodeSqlite, pg, mysql2, mysql, sqlite3, ioredis, nodeRedis, nodemailer, drizzle, bullmq, openai, anthropic];

const requireCache = createRequire(__filename).cache;
const hooked = new WeakSet<object>();

function hookOnce(adapter: DriverAdapter, loaded: unknown, file: string | undefined, tell: (message: string) => void): boolean {
  if (loaded === null || (typeof loaded !== 'object' && typeof loaded !== 'function') || hooked.has(loaded)) return false;
  hooked.add(loaded);
  adapter.hook(loaded, file, tell);
  return true;
}

/** Where the require cache holds a module the app handed over itself, if it does. */
function fileOf(loaded: unknown): string | undefined {
  for (const [file, mod] of Object.entries(requireCache)) if (mod?.exports === loaded) return file;
  return undefined;
}

/**
 * Hook every copy of a known driver the process has loaded (ES modules importing them load them
 * through the require cache too). Runs when a profiler starts and when an app's first request
 * comes: by then the app has opened its connections. Returns whether a driver was hooked.
 */
export function instrumentLoaded(tell: (message: string) => void): boolean {
  let found = false;
  for (const [file, mod] of Object.entries(requireCache)) {
    for (const adapter of drivers) {
      if (!adapter.main.test(file) || !mod?.loaded || !adapter.matches(mod.exports)) continue;
      try {
        found = hookOnce(adapter, mod.exports, file, tell) || found;
      } catch (err) {
        tell(`recording ${adapter.name} failed: ${(err as Error)?.message ?? err}`);
      }
    }
  }
  return found;
}

/** Node's own SQLite, a builtin that no require cache lists: hooked when a profiler starts, where this Node has it. */
export function instrumentBuiltins(tell: (message: string) => void): void {
  const sqlite = nodeSqliteModule();
  if (sqlite === null) return;
  try {
    hookOnce(nodeSqlite, sqlite, undefined, tell);
  } catch (err) {
    tell(`recording node:sqlite failed: ${(err as Error)?.message ?? err}`);
  }
}

/** The packages whose loading makes the profiler look for drivers again: by name, or by a path into their folder. */
const DRIVER_SPECIFIER = /(?:^|[\\/]node_modules[\\/])(?:better-sqlite3|pg|mysql2?|sqlite3|ioredis|redis|@redis\/client|nodemailer|drizzle-orm|bullmq|openai|@anthropic-ai\/sdk)(?:[\\/]|$)/;
let following = false;

/**
 * A driver loaded after the profiler started, in a process that serves no request to find it at
 * (a script, a queue worker): Node (22.15 and later) publishes each require and import, and the
 * loaded copies are hooked as it returns. On Node 20 the profiler's own storage has loaded
 * better-sqlite3 before any script does; elsewhere an app's first request finds the rest.
 */
export function followLoads(found: () => void): void {
  if (following) return;
  following = true;
  const loaded = (message: unknown) => {
    const m = message as { id?: unknown; url?: unknown };
    const specifier = typeof m.id === 'string' ? m.id : typeof m.url === 'string' ? m.url : '';
    if (DRIVER_SPECIFIER.test(specifier)) found();
  };
  for (const name of ['module.require', 'module.import']) {
    dc.tracingChannel(name).subscribe({ start() {}, end: loaded, asyncStart() {}, asyncEnd: loaded, error() {} });
  }
}

/**
 * Record a driver module the profiler cannot find by itself (a bundled app, a copy loaded after
 * the first request): `instrument(pg)`. Returns the adapter's name, or throws for a module no
 * adapter knows.
 */
export function instrument(loaded: unknown, tell: (message: string) => void = (message) => process.stderr.write(`[web-profiler] ${message}\n`)): string {
  const namespace = (loaded as { default?: unknown } | null)?.default ?? loaded;
  const adapter = drivers.find((d) => d.matches(namespace)) ?? drivers.find((d) => d.matches(loaded));
  if (adapter === undefined) throw new TypeError(`instrument(): not a driver the profiler knows (${drivers.map((d) => d.name).join(', ')})`);
  const target = adapter.matches(namespace) ? namespace : loaded;
  hookOnce(adapter, target, fileOf(target), tell);
  return adapter.name;
}

export const adapterNamed = (name: string): DriverAdapter | undefined => drivers.find((d) => d.name === name);
