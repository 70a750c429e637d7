import { performance } from 'node:perf_hooks';
import type { WorkContext } from '../recording/context.js';
import { appCaller, queryEnded, queryStarted, requestOf } from '../recording/inside.js';
import { ownerOf, type DriverAdapter, type PlanRow } from './driver.js';

type Fn = (this: any, ...args: any[]) => any;
type Callback = (err: unknown, result?: unknown, ...rest: unknown[]) => unknown;

/** Marks the profiler's own statements (its EXPLAIN, and its PostgreSQL store's pool, clients and queries): never recorded. */
const kOwn = Symbol.for('express-web-profiler.own-query');
/** Set on a client as a pool hands it over: the request, caller line and wait of the pool.query or pool.connect that asked for it. */
const kHandover = Symbol('web-profiler.handover');
/** The pool a client came from: EXPLAIN runs on the pool, never on a client the app may hold in a transaction. */
const kPool = Symbol('web-profiler.pool');
const kHooked = Symbol('web-profiler.pg');

interface Handover {
  ctx: WorkContext | undefined;
  caller: string | undefined;
  wait: number;
}

/** The pool.query under way: its connect() is called synchronously from it. */
let asking: { ctx: WorkContext; caller: string | undefined } | undefined;

/**
 * node-postgres: every statement goes through Client.prototype.query (pool.query checks a client
 * out and calls it), and pool waits through Pool.prototype.connect. pg publishes no tracing
 * channels in a release yet; when it does, this file subscribes to them instead.
 */
export const pg: DriverAdapter = {
  name: 'pg',
  panel: 'db',
  main: /[\\/]node_modules[\\/]pg[\\/]lib[\\/]index\.js$/,
  matches: (loaded) => typeof (loaded as { Client?: { prototype?: { query?: unknown } } })?.Client?.prototype?.query === 'function' &&
    typeof (loaded as { Pool?: unknown }).Pool === 'function',
  hook(loaded) {
    const { Client, Pool } = loaded as { Client: { prototype: Record<string | symbol, unknown> }; Pool: { prototype: object } };
    if (!Client.prototype[kHooked]) {
      Client.prototype[kHooked] = true;
      Client.prototype.query = clientQuery(Client.prototype.query as Fn);
    }
    const poolProto = ownerOf(Pool.prototype, 'query');
    if (poolProto && !poolProto[kHooked]) {
      poolProto[kHooked] = true;
      poolProto.query = poolQuery(poolProto.query as Fn);
      poolProto.connect = poolConnect(poolProto.connect as Fn);
    }
  },
  async explain(connection, sql, params) {
    const conn = connection as { query: Fn; _txStatus?: string | null; _queryQueue?: unknown[]; _activeQuery?: unknown; _ending?: boolean; ending?: boolean };
    if (conn._ending || conn.ending) throw new Error('its connection has been closed');
    // A client of the app's own is used only while it is idle outside a transaction: a failed EXPLAIN would abort the app's.
    if ('_txStatus' in conn && (conn._txStatus !== 'I' || conn._activeQuery || (conn._queryQueue?.length ?? 0) > 0)) {
      throw new Error('its connection is busy or inside a transaction: try again in a moment');
    }
    // The extended protocol takes exactly one statement: nothing can ride along after the SELECT.
    const config = { text: `EXPLAIN ${sql}`, values: Array.isArray(params) ? params : [], queryMode: 'extended', [kOwn]: true };
    const result = (await conn.query(config)) as { rows: { 'QUERY PLAN': string }[] };
    return planTree(result.rows.map((r) => r['QUERY PLAN']));
  },
};

/** PostgreSQL's text plan as rows of a tree: a node's children are the `->` lines indented under it. */
function planTree(lines: string[]): PlanRow[] {
  const rows: PlanRow[] = [];
  const open: { indent: number; id: number }[] = [];
  lines.forEach((line, i) => {
    const id = i + 1;
    const arrow = line.indexOf('->');
    const node = i === 0 || arrow >= 0;
    const indent = node ? (i === 0 ? -1 : arrow) : line.search(/\S/);
    while (open.length > 0 && open[open.length - 1].indent >= indent) open.pop();
    rows.push({ id, parent: open[open.length - 1]?.id ?? 0, detail: (arrow >= 0 ? line.slice(arrow + 2) : line).trim() });
    if (node) open.push({ indent, id });
  });
  return rows;
}

function rowsOf(result: unknown): number | undefined {
  if (Array.isArray(result)) return result.reduce((n: number, r) => n + (rowsOf(r) ?? 0), 0);
  const count = (result as { rowCount?: unknown } | undefined)?.rowCount;
  return typeof count === 'number' ? count : undefined;
}

function clientQuery(original: Fn): Fn {
  return function query(this: Record<string | symbol, unknown>, config: any, values?: any, callback?: any) {
    const handover = this[kHandover] as Handover | undefined;
    if (handover !== undefined) this[kHandover] = undefined;
    const ctx = handover?.ctx ?? requestOf();
    if (ctx === undefined || config == null || config[kOwn] || this[kOwn]) return original.apply(this, arguments as never);
    // pg-query-stream keeps its statement in the cursor it wraps.
    const text = typeof config === 'string' ? config : String(config.text ?? config.cursor?.text ?? '');
    const params = Array.isArray(values) ? values : (config.values ?? config.cursor?.values);
    const entry = queryStarted(ctx, 'pg', text, params, handover?.caller);
    if (handover !== undefined) entry.wait = handover.wait;
    if (entry.kept && /^\s*(select|with)\b/i.test(text)) {
      entry.explain = { driver: 'pg', connection: (this[kPool] as object | undefined) ?? this, sql: text, params };
    }
    const end = (err: unknown, result?: unknown) => queryEnded(ctx, entry, err ? undefined : rowsOf(result), err ?? undefined);
    const observe = (cb: Callback): Callback => function (this: unknown, err, result, ...rest) {
      end(err, result);
      return cb.call(this, err, result, ...rest);
    };
    try {
      if (typeof config.submit === 'function') {
        // A submittable (pg-cursor, pg-query-stream) is returned as it is; its callback, if any, says when it ends.
        if (typeof values === 'function') return original.call(this, config, observe(values));
        if (typeof callback === 'function') return original.call(this, config, values, observe(callback));
        if (typeof config.callback === 'function') config.callback = observe(config.callback);
        else untilDone(config.cursor ?? config, (err, rows) => queryEnded(ctx, entry, err ? undefined : rows, err));
        return original.call(this, config, values, callback);
      }
      if (typeof values === 'function') return original.call(this, config, observe(values));
      if (typeof callback === 'function') return original.call(this, config, values, observe(callback));
      if (typeof config.callback === 'function') return original.call(this, config, values, observe(config.callback));
      // The promise form, made as pg makes it: one that settles with the query, its stack led back to the app.
      const PromiseClass = (this._Promise as PromiseConstructor | undefined) ?? Promise;
      return new PromiseClass((resolve, reject) => {
        original.call(this, config, values, (err: unknown, result: unknown) => {
          end(err, result);
          if (err) reject(err);
          else resolve(result);
        });
      }).catch((err: unknown) => {
        if (err instanceof Error) Error.captureStackTrace(err);
        throw err;
      });
    } catch (err) {
      end(err);
      throw err;
    }
  };
}

function poolQuery(original: Fn): Fn {
  return function query(this: Record<symbol, unknown>, text: any) {
    const ctx = text?.[kOwn] || this[kOwn] ? undefined : requestOf();
    if (ctx === undefined) return original.apply(this, arguments as never);
    const outer = asking;
    asking = { ctx, caller: appCaller() };
    try {
      return original.apply(this, arguments as never);
    } finally {
      asking = outer;
    }
  };
}

function poolConnect(original: Fn): Fn {
  return function connect(this: Record<symbol, unknown>, cb?: Callback) {
    const asked = asking;
    asking = undefined;
    const ctx = this[kOwn] ? undefined : asked?.ctx ?? requestOf();
    if (ctx === undefined) return original.call(this, cb);
    const pool = this;
    const from = performance.now();
    const handOver = (client: unknown) => {
      if (client === null || typeof client !== 'object') return;
      const c = client as Record<symbol, unknown>;
      c[kPool] = pool;
      c[kHandover] = { ctx: asked?.ctx, caller: asked?.caller, wait: performance.now() - from } satisfies Handover;
    };
    if (typeof cb === 'function') {
      return original.call(this, function (this: unknown, err: unknown, client: unknown, ...rest: unknown[]) {
        if (!err) handOver(client);
        return cb.call(this, err, client, ...rest);
      });
    }
    return (original.call(this) as Promise<unknown>).then((client) => {
      handOver(client);
      return client;
    });
  };
}

/**
 * A cursor (pg-cursor, the one pg-query-stream reads through) read in batches: it ends with its
 * 'end' event, or an 'error', and gives its rows one 'row' event each. Seen through its emit(),
 * so that no listener is added (an 'error' listener would swallow what the app does not handle).
 */
function untilDone(emitter: { emit?: unknown }, done: (err: unknown, rows: number) => void): void {
  const emit = emitter?.emit;
  if (typeof emit !== 'function') return done(undefined, 0);
  let rows = 0;
  let ended = false;
  emitter.emit = function (this: unknown, event: string, ...args: unknown[]) {
    if (event === 'row') rows++;
    else if (!ended && (event === 'end' || event === 'error')) {
      ended = true;
      done(event === 'error' ? args[0] : undefined, rows);
    }
    return (emit as (...a: unknown[]) => boolean).call(this, event, ...args);
  };
}
