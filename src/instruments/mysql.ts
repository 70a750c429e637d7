import { AsyncResource } from 'node:async_hooks';
import { createRequire } from 'node:module';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { WorkContext } from '../recording/context.js';
import { appCaller, queryEnded, queryStarted, requestOf, type QueryEntry } from '../recording/inside.js';
import type { DriverAdapter } from './driver.js';

/** A pool's handover to the code that asked for a connection: what runs in there is the asker's. */
interface Handover {
  ctx: WorkContext;
  caller: string | undefined;
  wait: number;
}
const handovers: (Handover | undefined)[] = [];

interface Query {
  sql?: unknown;
  end(this: Query, err?: unknown, ...results: unknown[]): unknown;
  emit(this: Query, event: string, ...args: unknown[]): boolean;
}

const hooked = new WeakSet<object>();

function rowsOf(results: unknown): number | undefined {
  if (Array.isArray(results)) return results.length;
  const affected = (results as { affectedRows?: unknown } | undefined)?.affectedRows;
  return typeof affected === 'number' ? affected : undefined;
}

/**
 * mysql (mysqljs), which publishes nothing: every statement is a Query that
 * Connection.prototype.query makes and queues, on the caller's stack, and that ends in its end()
 * (its callback runs from there; a streamed one's rows come as 'result' events before it). A
 * pool's getConnection callback is bound to the asker's request, as for mysql2.
 */
export const mysql: DriverAdapter = {
  name: 'mysql',
  panel: 'db',
  main: /[\\/]node_modules[\\/]mysql[\\/]index\.js$/,
  matches: (loaded) => {
    const m = loaded as Record<string, unknown> | null;
    return typeof m?.createConnection === 'function' && typeof m.createQuery === 'function' && typeof m.createPool === 'function' && !('Connection' in m);
  },
  hook(_loaded, file, tell) {
    if (file === undefined) {
      tell('mysql: instrument() cannot find where this copy of mysql lives, so its queries are not recorded; mount the profiler where the app requires mysql from node_modules');
      return;
    }
    // Its classes load with the first connection; loading them here is the same module the app gets.
    const load = createRequire(file);
    const Connection = load(path.join(path.dirname(file), 'lib', 'Connection.js')) as { prototype: Record<string, unknown> };
    const Pool = load(path.join(path.dirname(file), 'lib', 'Pool.js')) as { prototype: Record<string, unknown> };
    hookQuery(Connection.prototype);
    hookPool(Pool.prototype);
  },
};

function hookQuery(proto: Record<string, unknown>): void {
  const query0 = proto.query;
  if (typeof query0 !== 'function' || hooked.has(proto)) return;
  hooked.add(proto);
  proto.query = function query(this: unknown, ...args: unknown[]) {
    const q = (query0 as (...a: unknown[]) => Query).apply(this, args);
    try {
      follow(q);
    } catch {
      // The statement runs unrecorded.
    }
    return q;
  };
}

function hookPool(proto: Record<string, unknown>): void {
  const getConnection = proto.getConnection;
  if (typeof getConnection !== 'function' || hooked.has(proto)) return;
  hooked.add(proto);
  proto.getConnection = function (this: unknown, cb: unknown) {
    const ctx = typeof cb === 'function' ? requestOf() : undefined;
    if (ctx === undefined) return (getConnection as (cb: unknown) => unknown).call(this, cb);
    const caller = appCaller();
    const from = performance.now();
    const bound = AsyncResource.bind(function (this: unknown, ...args: unknown[]) {
      handovers.push({ ctx, caller, wait: performance.now() - from });
      try {
        return (cb as (...a: unknown[]) => unknown).apply(this, args);
      } finally {
        handovers.pop();
      }
    });
    return (getConnection as (cb: unknown) => unknown).call(this, bound);
  };
}

function follow(q: Query): void {
  if (q === null || typeof q !== 'object' || typeof q.end !== 'function') return;
  const handover = handovers[handovers.length - 1];
  const ctx = handover?.ctx ?? requestOf();
  if (ctx === undefined) return;
  // The package formats the values into the SQL before sending it (it binds nothing on the server):
  // they are in the SQL, redacted there, and a copy beside it would keep what that took out.
  const entry: QueryEntry = queryStarted(ctx, 'mysql', String(q.sql ?? ''), undefined, handover?.caller);
  if (handover !== undefined) entry.wait = handover.wait;
  let streamed = 0;
  const emit = q.emit;
  q.emit = function (this: Query, event: string, ...args: unknown[]) {
    if (event === 'result') streamed++;
    return emit.call(this, event, ...args);
  };
  const end = q.end;
  q.end = function (this: Query, err?: unknown, ...results: unknown[]) {
    queryEnded(ctx, entry, err ? undefined : (rowsOf(results[0]) ?? (streamed > 0 ? streamed : undefined)), err ?? undefined);
    return end.call(this, err, ...results);
  };
}
