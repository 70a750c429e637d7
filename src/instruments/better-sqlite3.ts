import type Database from 'better-sqlite3';
import { queryStarted, requestOf, unrecorded } from '../recording/inside.js';
import { hasParams, paramsOf, wrapBinding } from './sync-statements.js';
import type { DriverAdapter, PlanRow } from './driver.js';

interface Statement {
  source: string;
  reader: boolean;
  database: Database.Database;
}

/** Connections of the profiler's own (its store): never recorded. */
export const ownDatabases = new WeakSet<object>();


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
  panel: 'db',
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
    wrapBinding(statementProto, DatabaseClass.prototype as never, begin, beginSql);
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

function begin(stmt: object, args: unknown[]) {
  const ctx = requestOf();
  if (ctx === undefined || ownDatabases.has((stmt as Statement).database)) return undefined;
  const { database, source, reader } = stmt as Statement;
  const entry = queryStarted(ctx, 'sqlite', source, paramsOf(args));
  if (reader && entry.kept) entry.explain = { driver: 'better-sqlite3', connection: database, sql: source, params: entry.params };
  return { ctx, entry };
}

/** A call on the database itself (exec, a prepare that fails): its SQL is its first argument. */
function beginSql(db: object, args: unknown[]) {
  const ctx = requestOf();
  if (ctx === undefined || ownDatabases.has(db)) return undefined;
  return { ctx, entry: queryStarted(ctx, 'sqlite', String(args[0]), undefined) };
}
