import { isPostgresUrl } from './location.js';
import { hasPg, PgProfileStore } from './pg-store.js';
import { fileFor, release } from './private-file.js';
import type { ProfileReader } from './reader.js';
import { StoreHandle } from './store-handle.js';
import { ProfileStore } from './store.js';

/**
 * What the writer thread and the pages open: the SQLite file (':memory:' made a private file), or
 * the URL. Runs before anything is started, so that a missing pg is told before a writer thread
 * is set up for a store it could not open.
 */
export function storedAt(database: string): string {
  if (!isPostgresUrl(database)) return fileFor(database);
  if (!hasPg()) throw new Error('webProfiler: a postgres:// database needs the "pg" package: npm install pg');
  return database;
}

/** What a profiler reads its pages from, chosen by its database option. */
export interface PageStorage {
  /** Several instances share it: tokens carry a slot, the list shows instances. */
  readonly shared: boolean;
  /** The store for a page; undefined while it cannot be opened. */
  read(): ProfileReader | undefined;
  close(): void;
}

/**
 * SQLite: a connection of this thread's own, opened now, so that the tokens already stored are
 * learnt (`learn`) before the first request. PostgreSQL: a small pool, made at the first page.
 * `database` is what storedAt() gave.
 */
export function pageStorage(database: string, schema: string, learn: (token: string) => void): PageStorage {
  if (isPostgresUrl(database)) {
    let store: PgProfileStore | undefined;
    return {
      shared: true,
      read: () => (store ??= new PgProfileStore({ url: database, schema, max: 3 })),
      close: () => void store?.close(),
    };
  }
  const reader = new StoreHandle(database, () => {}, (store) => {
    for (const { token } of store.tokensAfter(0)) learn(token);
  }, 200);
  reader.get();
  return {
    shared: false,
    // Pages are few and asked for by a person: each tries to open a store that could not be opened
    // (another thread migrating it held the lock, say) at once, rather than after the pause.
    read: () => {
      reader.changed();
      return reader.get(true);
    },
    close: () => {
      reader.close();
      release(database);
    },
  };
}

/** The CLI's and the MCP server's store: a file or a database, read-only when asked (the MCP server). */
export function openReader(database: string, schema: string, readOnly = false): ProfileReader {
  if (isPostgresUrl(database)) return new PgProfileStore({ url: database, schema, max: 2, readOnly });
  return readOnly ? ProfileStore.openReadOnly(database) : ProfileStore.open(database);
}
