import type { DatabaseSync } from 'node:sqlite';
import { queryStarted, requestOf, unrecorded } from '../recording/inside.js';
import type { DriverAdapter, PlanRow } from './driver.js';
import { hasParams, paramsOf, wrapBinding } from './sync-statements.js';

type NodeSqlite = typeof import('node:sqlite');

let loaded: NodeSqlite | null | undefined;

/**
 * node:sqlite, or null where this Node has none without a flag (before 22.13). Node 22 warns that
 * it is experimental: the app did not ask for it, so that one warning is not passed on.
 */
export function nodeSqliteModule(): NodeSqlite | null {
  if (loaded !== undefined) return loaded;
  const emitWarning = process.emitWarning;
  process.emitWarning = function (warning: string | Error, ...rest: unknown[]) {
    if (/SQLite/.test(String(warning)) && (rest[0] === 'ExperimentalWarning' || (rest[0] as { type?: string })?.type === 'ExperimentalWarning')) return;
    return (emitWarning as (...args: unknown[]) => void).call(process, warning, ...rest);
  } as typeof process.emitWarning;
  try {
    loaded = (process.getBuiltinModule?.('node:sqlite') as NodeSqlite | undefined) ?? null;
  } catch {
    loaded = null;
  } finally {
    process.emitWarning = emitWarning;
  }
  return loaded;
}

/** Each statement's database: node:sqlite's statements do not name theirs, and EXPLAIN runs there. */
const databaseOf = new WeakMap<object, DatabaseSync>();

/** A statement that returns rows of a table: the ones EXPLAIN QUERY PLAN says something of. */
const READER = /^\s*(?:SELECT|WITH|VALUES)\b/i;

/**
 * node:sqlite (Node 22.13 and later), Node's own SQLite: every statement goes through
 * StatementSync.prototype.run/get/all/iterate and DatabaseSync.prototype.exec, synchronous, so a
 * wrapper times it exactly. A builtin is in no require cache: the profiler hooks it when it starts,
 * whether or not the app uses it (an app that does not pays nothing more than a lookup).
 */
export const nodeSqlite: DriverAdapter = {
  name: 'node:sqlite',
  panel: 'db',
  main: /^node:sqlite$/,
  matches: (loaded) => typeof (loaded as Partial<NodeSqlite> | null)?.DatabaseSync === 'function' && typeof (loaded as Partial<NodeSqlite>).StatementSync === 'function',
  hook(loaded) {
    const { DatabaseSync, StatementSync } = loaded as NodeSqlite;
    wrapBinding(StatementSync.prototype as never, DatabaseSync.prototype as never, begin, beginSql, (stmt, db) => databaseOf.set(stmt, db as DatabaseSync));
  },
  explain(connection, sql, params) {
    const db = connection as DatabaseSync;
    if (db.isOpen === false) throw new Error('its connection has been closed');
    // A file is read through a connection of its own that can only read; an in-memory database exists on the app's alone.
    const file = typeof db.location === 'function' ? db.location() : null;
    const plan = () => {
      const reader = file ? new (db.constructor as typeof DatabaseSync)(file, { readOnly: true }) : db;
      try {
        const stmt = reader.prepare(`EXPLAIN QUERY PLAN ${sql}`);
        const rows = !hasParams(params) ? stmt.all() : Array.isArray(params) ? stmt.all(...(params as never[])) : stmt.all(params as never);
        return rows as unknown as { id: number; parent: number; detail: string }[];
      } finally {
        if (reader !== db) reader.close();
      }
    };
    return unrecorded(plan).map((row): PlanRow => ({ id: row.id, parent: row.parent, detail: row.detail }));
  },
};

function begin(stmt: object, args: unknown[]) {
  const ctx = requestOf();
  if (ctx === undefined) return undefined;
  const sql = (stmt as { sourceSQL: string }).sourceSQL;
  const entry = queryStarted(ctx, 'sqlite', sql, paramsOf(args));
  const database = databaseOf.get(stmt);
  if (database !== undefined && entry.kept && READER.test(sql)) entry.explain = { driver: 'node:sqlite', connection: database, sql, params: entry.params };
  return { ctx, entry };
}

/** A call on the database itself (exec, a prepare that fails): its SQL is its first argument. */
function beginSql(_db: object, args: unknown[]) {
  const ctx = requestOf();
  return ctx === undefined ? undefined : { ctx, entry: queryStarted(ctx, 'sqlite', String(args[0]), undefined) };
}
