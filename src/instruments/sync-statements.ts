import { queryEnded, type QueryEntry } from '../recording/inside.js';
import type { WorkContext } from '../recording/context.js';

/**
 * The prepared statements of SQLite's synchronous bindings (better-sqlite3, node:sqlite): each of
 * run/get/all is timed exactly around the call, iterate() as the app pulls its rows. `begin` says
 * whether a call is recorded, and opens its entry.
 */
export type Method = (this: object, ...args: unknown[]) => unknown;
export type Begin = (stmt: object, args: unknown[]) => { ctx: WorkContext; entry: QueryEntry } | undefined;

/** The statement's arguments as the app passed them: one array or object of values, or the values themselves. */
export const paramsOf = (args: unknown[]): unknown => (args.length === 0 ? undefined : args.length === 1 ? args[0] : args);

export const hasParams = (params: unknown) => params !== undefined && !(Array.isArray(params) && params.length === 0);

const ROWS = {
  run: (info: unknown) => (info as { changes?: number | bigint })?.changes === undefined ? undefined : Number((info as { changes: number | bigint }).changes),
  get: (row: unknown) => (row === undefined ? 0 : 1),
  all: (rows: unknown) => (rows as unknown[]).length,
};

const wrapped = Symbol('web-profiler.sync-statements');

/**
 * Wraps a binding's statement and database prototypes, once: run/get/all/iterate of its
 * statements, exec and prepare of its databases. `begin` opens a statement call's entry,
 * `beginSql` a database call's (its SQL the first argument); `prepared` learns each statement.
 */
export function wrapBinding(statementProto: Record<string | symbol, unknown>, dbProto: Record<string | symbol, unknown>, begin: Begin, beginSql: Begin, prepared?: (stmt: object, db: object) => void): void {
  if (statementProto[wrapped]) return;
  statementProto[wrapped] = true;
  statementProto.run = timed(statementProto.run as Method, begin, ROWS.run);
  statementProto.get = timed(statementProto.get as Method, begin, ROWS.get);
  statementProto.all = timed(statementProto.all as Method, begin, ROWS.all);
  statementProto.iterate = iterated(statementProto.iterate as Method, begin);
  dbProto.prepare = preparing(dbProto.prepare as Method, beginSql, prepared);
  dbProto.exec = timed(dbProto.exec as Method, beginSql, () => undefined);
}

function timed(original: Method, begin: Begin, rowsOf: (result: unknown) => number | undefined): Method {
  return {
    [original.name](this: object, ...args: unknown[]) {
      const started = begin(this, args);
      if (started === undefined) return original.apply(this, args);
      try {
        const result = original.apply(this, args);
        queryEnded(started.ctx, started.entry, rowsOf(result), undefined);
        return result;
      } catch (err) {
        queryEnded(started.ctx, started.entry, undefined, err);
        throw err;
      }
    },
  }[original.name] as Method;
}

const IteratorClass = (globalThis as { Iterator?: abstract new () => object }).Iterator;

/**
 * iterate(): the statement runs as the app pulls rows, so it ends when the iterator is done,
 * returned or fails. The iterator handed back has the helpers (map, toArray…) where the binding's has them.
 */
function iterated(original: Method, begin: Begin): Method {
  return function iterate(this: object, ...args: unknown[]) {
    const started = begin(this, args);
    if (started === undefined) return original.apply(this, args);
    const { ctx, entry } = started;
    let rows = 0;
    let it: Iterator<unknown> & { return?: (v?: unknown) => IteratorResult<unknown> };
    try {
      it = original.apply(this, args) as typeof it;
    } catch (err) {
      queryEnded(ctx, entry, undefined, err);
      throw err;
    }
    const step = (fn: () => IteratorResult<unknown>) => {
      try {
        const r = fn();
        if (r.done) queryEnded(ctx, entry, rows, undefined);
        else rows++;
        return r;
      } catch (err) {
        queryEnded(ctx, entry, rows, err);
        throw err;
      }
    };
    const wrapper = Object.create(IteratorClass !== undefined && it instanceof IteratorClass ? IteratorClass.prototype : Object.prototype) as Iterator<unknown> & Iterable<unknown>;
    return Object.assign(wrapper, {
      next: () => step(() => it.next()),
      return: (value?: unknown) => {
        queryEnded(ctx, entry, rows, undefined);
        return it.return ? it.return(value) : { done: true, value };
      },
      [Symbol.iterator]() {
        return this;
      },
    });
  };
}

/**
 * prepare(): a statement that cannot be prepared (a syntax error, a missing table) is a failed
 * query too; `prepared` learns each statement and its database.
 */
function preparing(original: Method, begin: Begin, prepared?: (stmt: object, db: object) => void): Method {
  return function prepare(this: object, ...args: unknown[]) {
    let stmt: unknown;
    try {
      stmt = original.apply(this, args);
    } catch (err) {
      const started = begin(this, args);
      if (started !== undefined) queryEnded(started.ctx, started.entry, undefined, err);
      throw err;
    }
    if (prepared !== undefined && stmt !== null && typeof stmt === 'object') prepared(stmt, this);
    return stmt;
  };
}
