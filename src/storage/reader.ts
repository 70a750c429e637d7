import type { ProfileSummary, StoredRead } from './profile.js';
import type { SearchFilter } from './query.js';

export type Awaitable<T> = T | Promise<T>;

export interface StoreStats {
  profiles: number;
  oldest: number | null;
  newest: number | null;
  bytes: number;
  /** The SQLite file, or the PostgreSQL database (without its password) and schema. */
  file: string;
}

/**
 * What the pages, the CLI and the MCP server read, from either store: SQLite answers at once,
 * PostgreSQL with promises, and every caller awaits.
 */
export interface ProfileReader {
  /** Where the profiles are, to name in messages: a file, or a database without its password. */
  readonly location: string;
  /** Several instances write it (PostgreSQL): lists say which served each request. */
  readonly shared: boolean;
  read(token: string): Awaitable<StoredRead | undefined>;
  latest(type?: string): Awaitable<string | undefined>;
  find(filter: SearchFilter): Awaitable<ProfileSummary[]>;
  since(id: number, filter: SearchFilter): Awaitable<(ProfileSummary & { id: number })[]>;
  /** The last row id: where a live list starts. */
  lastId(): Awaitable<number>;
  stats(): Awaitable<StoreStats>;
  /** A read of the insights' tables (see insights.ts): `?` placeholders, the same SQL on both stores. */
  select<T>(sql: string, args: unknown[]): Awaitable<T[]>;
  /** Delete profiles older than `before` (epoch ms), or all of them; returns how many went. */
  purge(before?: number): Awaitable<number>;
  close(): Awaitable<void>;
}

/** The store could not answer (unreachable, locked): the page says so with a 503, not a 500. */
export class StorageUnavailable extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StorageUnavailable';
  }
}
