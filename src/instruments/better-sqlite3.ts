import type Database from 'better-sqlite3';
import { queryEnded, queryStarted, requestOf, unrecorded, type QueryEntry } from '../recording/inside.js';
import type { DriverAdapter, PlanRow } from './driver.js';

type Method = (this: Statement, ...args: unknown[]) => unknown;
interface Statement {
  source: string;
  reader: boolean;
  database: Database.Database;
}

/** Connections of the profiler's own (its store): never recorded. */
export const ownDatabases = new WeakSet<object>();

const wrapped = Symbol('web-profiler.sqlite');

/**
 * better-sqlite3 up to 12 aborts the process on Node 24.19 and later when a garbage collection
 * run outside JavaScript frees one of its objects (its node::ObjectWrap destructor needs a
 * context). So nothing the profiler makes with the app's copy ever becomes garbage on its own:
 * the probe lives as long as the process, and what EXPLAIN makes for a connection lives as long
 * as that connection (then the app's own objects go in the same collection).
 */
const keptAlive: object[] = [];

interface Explainer {
  readonly: Database.Database | undefined;
  statements: Map<string, Database.Statement>;
}
const explainers = new WeakMap<object, Explainer>();

/** Where EXPLAIN runs for `db`: a file through one read-only connection of its own, an in-memory database on the app's (it exists nowhere else). */
function explainerOf(db: Database.Database): { prepare(sql: string): Database.Statement } {
  let explainer = explainers.get(db);
  if (explainer === undefined) {
    const Ctor = db.constructor as typeof Database;
    const readonly = db.memory ? undefined : new Ctor(db.name, { readonly: true, fileMustExist: true });
    if (readonly) ownDatabases.add(readonly);
    explainers.set(db, (explainer = { readonly, statements: new Map() }));
  }
  const { readonly, statements } = explainer;
  return {
    prepare(sql) {
      let stmt = statements.get(sql);
      if (stmt === undefined) statements.set(sql, (stmt = (readonly ?? db).prepare(sql)));
      return stmt;
    },
  };
}

/**
 * better-sqlite3: every statement goes through Statement.prototype.run/get/all/iterate (pragma()
 * and transactions too: they prepare PRAGMA, BEGIN and COMMIT statements), and exec() through
 * Database.prototype. The API is synchronous, so a wrapper times it exactly.
 */
export const betterSqlite3: DriverAdapter = {
  name: 'better-sqlite3',
  main: /[\\/]node_modules[\\/]better-sqlite3[\\/]lib[\\/]index\.js$/,
  matches: (loaded) => typeof loaded === 'function' && typeof (loaded as { prototype?: { prepare?: unknown } }).prototype?.prepare === 'function' && (loaded as { name?: string }).name === 'Database',
  hook(loaded) {
    const DatabaseClass = loaded as typeof Database;
    const probe = new DatabaseClass(':memory:');
    ownDatabases.add(probe);
    const statement = probe.prepare('SELECT 1');
    const statementProto = Object.getPrototypeOf(statement) as Record<string | symbol, unknown>;
    probe.close();
    keptAlive.push(probe, statement);
    if (statementProto[wrapped]) return;
    statementProto[wrapped] = true;
    statementProto.run = timed(statementProto.run as Method, (info) => (info as { changes?: number })?.changes);
    statementProto.get = timed(statementProto.get as Method, (row) => (row === undefined ? 0 : 1));
    statementProto.all = timed(statementProto.all as Method, (rows) => (rows as unknown[]).length);
    statementProto.iterate = iterated(statementProto.iterate as Method);
    const dbProto = DatabaseClass.prototype as unknown as Record<string, unknown>;
    // A statement that cannot be prepared (a syntax error, a missing table) is a failed query too.
    const prepare0 = dbProto.prepare as (this: Database.Database, ...args: unknown[]) => unknown;
    dbProto.prepare = function prepare(this: Database.Database, ...args: unknown[]) {
      try {
        return prepare0.apply(this, args);
      } catch (err) {
        const ctx = requestOf();
        if (ctx !== undefined && !ownDatabases.has(this)) queryEnded(ctx, queryStarted(ctx, 'sqlite', String(args[0]), undefined), undefined, err);
        throw err;
      }
    };
    const exec0 = dbProto.exec as (this: Database.Database, sql: string) => unknown;
    dbProto.exec = function exec(this: Database.Database, sql: string) {
      const ctx = requestOf();
      if (ctx === undefined || ownDatabases.has(this)) return exec0.call(this, sql);
      const entry = queryStarted(ctx, 'sqlite', String(sql), undefined);
      try {
        const result = exec0.call(this, sql);
        queryEnded(ctx, entry, undefined, undefined);
        return result;
      } catch (err) {
        queryEnded(ctx, entry, undefined, err);
        throw err;
      }
    };
  },
  explain(connection, sql, params) {
    const db = connection as Database.Database;
    if (!db.open) throw new Error('its connection has been closed');
    const plan = () => {
      const stmt = explainerOf(db).prepare(`EXPLAIN QUERY PLAN ${sql}`);
      return (hasParams(params) ? stmt.all(params as never) : stmt.all()) as { id: number; parent: number; detail: string }[];
    };
    return unrecorded(plan).map((row): PlanRow => ({ id: row.id, parent: row.parent, detail: row.detail }));
  },
};

const hasParams = (params: unknown) => params !== undefined && !(Array.isArray(params) && params.length === 0);

/** The statement's arguments as the app passed them: one array or object of values, or the values themselves. */
const paramsOf = (args: unknown[]): unknown => (args.length === 0 ? undefined : args.length === 1 ? args[0] : args);

function begin(stmt: Statement, args: unknown[]): { ctx: NonNullable<ReturnType<typeof requestOf>>; entry: QueryEntry } | undefined {
  const ctx = requestOf();
  if (ctx === undefined || ownDatabases.has(stmt.database)) return undefined;
  const entry = queryStarted(ctx, 'sqlite', stmt.source, paramsOf(args));
  if (stmt.reader && entry.kept) entry.explain = { driver: 'better-sqlite3', connection: stmt.database, sql: stmt.source, params: entry.params };
  return { ctx, entry };
}

function timed(original: Method, rowsOf: (result: unknown) => number | undefined): Method {
  return {
    [original.name](this: Statement, ...args: unknown[]) {
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

/** iterate(): the statement runs as the app pulls rows, so it ends when the iterator is done, returned or fails. */
function iterated(original: Method): Method {
  return function iterate(this: Statement, ...args: unknown[]) {
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
    return {
      next: () => step(() => it.next()),
      return: (value?: unknown) => {
        queryEnded(ctx, entry, rows, undefined);
        return it.return ? it.return(value) : { done: true, value };
      },
      [Symbol.iterator]() {
        return this;
      },
    };
  };
}
