import { createRequire } from 'node:module';
import type { DriverAdapter } from './driver.js';
import { betterSqlite3 } from './better-sqlite3.js';
import { mysql2 } from './mysql2.js';
import { pg } from './pg.js';

/** The drivers recorded with no setup. A new one: its adapter file beside these, and its name here. */
export const drivers: DriverAdapter[] = [betterSqlite3, pg, mysql2];

const requireCache = createRequire(__filename).cache;
const hooked = new WeakSet<object>();

function hookOnce(adapter: DriverAdapter, loaded: unknown): boolean {
  if (loaded === null || (typeof loaded !== 'object' && typeof loaded !== 'function') || hooked.has(loaded)) return false;
  hooked.add(loaded);
  adapter.hook(loaded);
  return true;
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
      if (!adapter.main.test(file) || !mod?.loaded) continue;
      try {
        found = hookOnce(adapter, mod.exports) || found;
      } catch (err) {
        tell(`recording ${adapter.name} failed: ${(err as Error)?.message ?? err}`);
      }
    }
  }
  return found;
}

/**
 * Record a driver module the profiler cannot find by itself (a bundled app, a copy loaded after
 * the first request): `instrument(pg)`. Returns the adapter's name, or throws for a module no
 * adapter knows.
 */
export function instrument(loaded: unknown): string {
  const namespace = (loaded as { default?: unknown } | null)?.default ?? loaded;
  const adapter = drivers.find((d) => d.matches(namespace)) ?? drivers.find((d) => d.matches(loaded));
  if (adapter === undefined) throw new TypeError('instrument(): not a driver the profiler knows (better-sqlite3, pg, mysql2)');
  hookOnce(adapter, adapter.matches(namespace) ? namespace : loaded);
  return adapter.name;
}

export const adapterNamed = (name: string): DriverAdapter | undefined => drivers.find((d) => d.name === name);
