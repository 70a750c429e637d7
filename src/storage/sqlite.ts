import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { nodeSqliteModule } from '../instruments/node-sqlite.js';

/**
 * The SQLite connection the store uses, whichever binding runs it: Node's own `node:sqlite` where
 * the running Node has it without a flag (22.13 and later), better-sqlite3 elsewhere (Node 20).
 * better-sqlite3 up to 12 derives its objects from node::ObjectWrap, whose destructor aborts the
 * process on Node 24.19 and later when a garbage collection outside JavaScript frees one; 13 does
 * not load on Node 20. Node's own binding has neither trouble and needs no native build.
 */
export interface SqliteStatement {
  run(...params: unknown[]): { changes: number | bigint; lastInsertRowid: number | bigint };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
}

export interface SqliteDatabase {
  readonly open: boolean;
  /** Which binding runs it: `node:sqlite` or `better-sqlite3`. */
  readonly binding: string;
  prepare(sql: string): SqliteStatement;
  exec(sql: string): void;
  /** Runs `PRAGMA <sql>` and returns the first column of its first row. */
  pragma(sql: string): unknown;
  /** `fn` as one transaction begun IMMEDIATE (the write lock taken at once), rolled back if it throws. */
  immediate<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R;
  close(): void;
}

export interface OpenOptions {
  readonly?: boolean;
  fileMustExist?: boolean;
}

/** SQLite's primary result codes, by number: node:sqlite gives the number, better-sqlite3 the name. */
const CODES = ['OK', 'ERROR', 'INTERNAL', 'PERM', 'ABORT', 'BUSY', 'LOCKED', 'NOMEM', 'READONLY', 'INTERRUPT', 'IOERR', 'CORRUPT', 'NOTFOUND', 'FULL', 'CANTOPEN', 'PROTOCOL', 'EMPTY', 'SCHEMA', 'TOOBIG', 'CONSTRAINT', 'MISMATCH', 'MISUSE', 'NOLFS', 'AUTH', 'FORMAT', 'RANGE', 'NOTADB'];

/** An error's SQLite result code as better-sqlite3 names it (`SQLITE_BUSY`, `SQLITE_IOERR_WRITE`: compare by prefix), or ''. */
export function sqliteCode(err: unknown): string {
  const { code, errcode } = (err ?? {}) as { code?: unknown; errcode?: unknown };
  if (typeof code === 'string' && code.startsWith('SQLITE_')) return code;
  if (typeof errcode === 'number') return `SQLITE_${CODES[errcode & 0xff] ?? errcode}`;
  return '';
}

type NodeSqlite = typeof import('node:sqlite');
type BetterSqlite3 = typeof import('better-sqlite3');

let betterSqlite3: BetterSqlite3 | undefined;

function loadBetterSqlite3(): BetterSqlite3 {
  try {
    return (betterSqlite3 ??= createRequire(__filename)('better-sqlite3') as BetterSqlite3);
  } catch (err) {
    throw new Error(`Node ${process.version} has no node:sqlite (Node 22.13 and later have it): the profiler's SQLite store needs better-sqlite3 here (npm install better-sqlite3@12), or a postgres:// database (${(err as Error).message.split('\n')[0]})`);
  }
}

/** The binding this process uses for its store. */
export const sqliteBinding = (): string => (nodeSqliteModule() ? 'node:sqlite' : 'better-sqlite3');

export function openDatabase(file: string, options: OpenOptions = {}): SqliteDatabase {
  const native = nodeSqliteModule();
  return native ? openNode(native, file, options) : openBetter(loadBetterSqlite3(), file, options);
}

function openNode(sqlite: NodeSqlite, file: string, { readonly = false, fileMustExist = false }: OpenOptions): SqliteDatabase {
  if (fileMustExist && file !== ':memory:' && !existsSync(file)) {
    throw Object.assign(new Error(`unable to open database file: ${file} does not exist`), { code: 'SQLITE_CANTOPEN' });
  }
  const db = new sqlite.DatabaseSync(file, { readOnly: readonly });
  let open = true;
  return {
    binding: 'node:sqlite',
    get open() {
      return open;
    },
    prepare: (sql) => db.prepare(sql) as unknown as SqliteStatement,
    exec: (sql) => db.exec(sql),
    pragma(sql) {
      const row = db.prepare(`PRAGMA ${sql}`).get();
      return row === undefined ? undefined : Object.values(row)[0];
    },
    immediate: (fn) => (...args) => {
      db.exec('BEGIN IMMEDIATE');
      try {
        const result = fn(...args);
        db.exec('COMMIT');
        return result;
      } catch (err) {
        try {
          db.exec('ROLLBACK');
        } catch {
          // SQLite rolled it back itself (some errors end the transaction): nothing is left to undo.
        }
        throw err;
      }
    },
    close() {
      if (!open) return;
      open = false;
      db.close();
    },
  };
}

function openBetter(Database: BetterSqlite3, file: string, { readonly = false, fileMustExist = false }: OpenOptions): SqliteDatabase {
  const db = new Database(file, { readonly, fileMustExist });
  return {
    binding: 'better-sqlite3',
    get open() {
      return db.open;
    },
    prepare: (sql) => db.prepare(sql),
    exec: (sql) => void db.exec(sql),
    pragma: (sql) => db.pragma(sql, { simple: true }),
    immediate: (fn) => {
      const transaction = db.transaction(fn);
      return (...args) => transaction.immediate(...args);
    },
    close() {
      if (db.open) db.close();
    },
  };
}
