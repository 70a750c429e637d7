import { queryEnded, queryStarted, requestOf } from '../recording/inside.js';
import { runAs } from '../recording/context.js';
import type { DriverAdapter } from './driver.js';

type Fn = (this: unknown, ...args: unknown[]) => unknown;

const kHooked = Symbol('web-profiler.sqlite3');

/**
 * sqlite3 (node-sqlite3, what Sequelize's SQLite dialect and knex's `sqlite3` client run on):
 * Database#run/get/all/each/exec for what the app runs on a database (a statement that cannot be
 * prepared answers there, not in the Statement's method), and Statement#run/get/all/each for
 * statements it prepared itself (the Database's methods call those too: not counted twice). Each
 * ends in its callback, which the API calls last. One run without a callback is recorded as
 * started, with no duration: adding a callback would swallow the 'error' event it would emit.
 */
export const sqlite3: DriverAdapter = {
  name: 'sqlite3',
  panel: 'db',
  main: /[\\/]node_modules[\\/]sqlite3[\\/]lib[\\/]sqlite3\.js$/,
  matches: (loaded) => {
    const m = loaded as Record<string, unknown> | null;
    return typeof (m?.Database as { prototype?: { exec?: unknown } } | undefined)?.prototype?.exec === 'function' && typeof m?.Statement === 'function' && typeof m?.verbose === 'function';
  },
  hook(loaded) {
    const { Database, Statement } = loaded as { Database: { prototype: Record<string | symbol, unknown> }; Statement: { prototype: Record<string | symbol, unknown> } };
    if (!Statement.prototype[kHooked]) {
      Statement.prototype[kHooked] = true;
      for (const method of ['run', 'get', 'all', 'each'] as const) Statement.prototype[method] = timed(Statement.prototype[method] as Fn, method, (self) => String((self as { sql?: unknown }).sql ?? ''), 0);
    }
    if (!Database.prototype[kHooked]) {
      Database.prototype[kHooked] = true;
      for (const method of ['run', 'get', 'all', 'each', 'exec'] as const) Database.prototype[method] = timed(Database.prototype[method] as Fn, method, (_self, args) => String(args[0] ?? ''), 1);
    }
  },
};

/** The rows a callback's arguments say: all's array, get's row or none, run's changes (on the statement it is called on). */
function rowsOf(method: string, self: unknown, result: unknown): number | undefined {
  if (method === 'all') return Array.isArray(result) ? result.length : undefined;
  if (method === 'get') return result === undefined ? 0 : 1;
  if (method === 'run') return typeof (self as { changes?: unknown })?.changes === 'number' ? (self as { changes: number }).changes : undefined;
  return undefined;
}

/** Set while a Database method runs: the Statement method it calls is the same statement. */
let inDatabase = false;

/** `first` is where the parameters start: after the SQL for a Database's methods, at once for a Statement's. */
function timed(original: Fn, method: string, sqlOf: (self: unknown, args: unknown[]) => string, first: number): Fn {
  const onDatabase = first === 1;
  return {
    [method](this: unknown, ...args: unknown[]) {
      const ctx = inDatabase ? undefined : requestOf();
      if (ctx === undefined || typeof original !== 'function') return original.apply(this, args);
      let end = args.length;
      while (end > first && typeof args[end - 1] === 'function') end--;
      const fns = args.length - end;
      // each(params…, row, complete): the completion is a second function; the others take one.
      const complete = fns >= (method === 'each' ? 2 : 1) ? args.length - 1 : -1;
      const rowAt = method === 'each' && fns >= 1 ? end : -1;
      const params = args.slice(first, end);
      const entry = queryStarted(ctx, 'sqlite', sqlOf(this, args), params.length === 0 ? undefined : params.length === 1 ? params[0] : params);
      if (complete < 0) {
        queryEnded(ctx, entry, undefined, undefined);
        return call(original, this, args, onDatabase);
      }
      let rows = 0;
      const copy = [...args];
      if (rowAt >= 0) {
        const row = args[rowAt] as Fn;
        copy[rowAt] = function (this: unknown, ...a: unknown[]) {
          rows++;
          return row.apply(this, a);
        };
      }
      const callback = args[complete] as Fn;
      copy[complete] = function (this: unknown, err: unknown, result: unknown, ...more: unknown[]) {
        queryEnded(ctx, entry, err ? undefined : method === 'each' ? rows : rowsOf(method, this, result), err ?? undefined);
        // node-sqlite3 calls back outside the async context it was called in: what the callback does is the request's all the same (the profiler's own context only).
        return runAs(ctx, () => callback.call(this, err, result, ...more));
      };
      return call(original, this, copy, onDatabase);
    },
  }[method] as Fn;
}

function call(original: Fn, self: unknown, args: unknown[], onDatabase: boolean): unknown {
  if (!onDatabase) return original.apply(self, args);
  inDatabase = true;
  try {
    return original.apply(self, args);
  } finally {
    inDatabase = false;
  }
}
