import Database from 'better-sqlite3';
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, renameSync } from 'node:fs';
import path from 'node:path';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { serialise, type Profile, type ProfileSummary, type StoredProfile } from './profile.js';
import { migrate } from './schema.js';

export interface SearchFilter {
  ip?: string;
  method?: string;
  status?: number;
  /** Substring of the URL. */
  url?: string;
  /** Epoch milliseconds, inclusive. */
  from?: number;
  to?: number;
  type?: string;
  /** Only profiles recorded before this one (paging to older results). */
  before?: string;
  /** Newest first (the default), or slowest first. */
  sort?: 'time' | 'duration';
  /** A range of statuses, inclusive (500 to 599: the server errors). */
  statusFrom?: number;
  statusTo?: number;
  /** Only requests that took at least this many milliseconds. */
  minDuration?: number;
  limit: number;
}

export interface StoreStats {
  profiles: number;
  oldest: number | null;
  newest: number | null;
  bytes: number;
  file: string;
}

const ENCODING_JSON = 0;
const ENCODING_DEFLATE = 1;
/** Below this, deflate's header and CPU cost more than they save. */
const COMPRESS_FROM = 8192;
const PRUNE_CHUNK = 500;

const SUMMARY_COLUMNS = 'token, parent, ip, method, url, status, time, duration, type';

/** A SQLite error that means the file is not a database we can use: move it aside and start anew. */
export const isCorruption = (err: unknown): boolean =>
  /^SQLITE_(CORRUPT|NOTADB)/.test(String((err as { code?: unknown })?.code ?? ''));

/**
 * The profiles in SQLite: an index table for lists and search, the panel data (JSON, deflated
 * when that pays) in a table of its own. All calls are synchronous, as better-sqlite3 is; callers
 * keep them off the request path.
 */
export class ProfileStore {
  readonly db: Database.Database;
  readonly file: string;
  private readonly stmts;

  private constructor(file: string, db: Database.Database) {
    this.file = file;
    this.db = db;
    this.stmts = {
      insert: db.prepare(`INSERT INTO profiles (${SUMMARY_COLUMNS}) VALUES (@token, @parent, @ip, @method, @url, @status, @time, @duration, @type) ON CONFLICT (token) DO NOTHING`),
      tokensAfter: db.prepare('SELECT id, token FROM profiles WHERE id > ? ORDER BY id'),
      span: db.prepare('SELECT min(id) AS first, max(id) AS last FROM profiles'),
      insertData: db.prepare('INSERT INTO profile_data (id, encoding, data) VALUES (?, ?, ?)'),
      read: db.prepare(`SELECT p.id, ${SUMMARY_COLUMNS}, d.encoding, d.data FROM profiles p LEFT JOIN profile_data d ON d.id = p.id WHERE p.token = ?`),
      idOf: db.prepare('SELECT id FROM profiles WHERE token = ?').pluck(),
      latest: db.prepare(`SELECT token FROM profiles WHERE type = ? ORDER BY id DESC LIMIT 1`).pluck(),
      pruneAge: db.prepare(`DELETE FROM profiles WHERE id IN (SELECT id FROM profiles WHERE time < ? ORDER BY id LIMIT ${PRUNE_CHUNK}) RETURNING token`).pluck(),
      pruneCount: db.prepare(`DELETE FROM profiles WHERE id IN (SELECT id FROM profiles WHERE id <= ? ORDER BY id LIMIT ${PRUNE_CHUNK}) RETURNING token`).pluck(),
    };
  }

  /**
   * Open (creating and migrating) the file; a file that is not a database is moved aside first.
   * `busyTimeout` is how long a statement may wait for a lock another connection holds: short on
   * the app's thread, longer on the writer's.
   */
  static open(file: string, busyTimeout = 50): ProfileStore {
    if (file !== ':memory:') ownOnly(file);
    try {
      return ProfileStore.openAs(file, busyTimeout);
    } catch (err) {
      if (!isCorruption(err) || file === ':memory:') throw err;
      ProfileStore.moveAside(file);
      return ProfileStore.openAs(file, busyTimeout);
    }
  }

  /**
   * A connection that can only read (what the MCP server uses): SQLite itself refuses every write
   * on it, whatever is asked. The file must exist and hold the profiler's tables.
   */
  static openReadOnly(file: string, busyTimeout = 1000): ProfileStore {
    const db = new Database(file, { readonly: true, fileMustExist: true });
    try {
      db.pragma(`busy_timeout = ${Math.trunc(busyTimeout)}`);
      db.prepare('SELECT count(*) FROM profiles').get();
      return new ProfileStore(file, db);
    } catch (err) {
      db.close();
      throw err;
    }
  }

  /** Rename a corrupt file (and its WAL companions) out of the way; returns the new name. */
  static moveAside(file: string): string {
    const aside = `${file}.corrupt-${Date.now()}`;
    for (const suffix of ['', '-wal', '-shm']) {
      if (existsSync(file + suffix)) renameSync(file + suffix, aside + suffix);
    }
    return aside;
  }

  private static openAs(file: string, busyTimeout: number): ProfileStore {
    const db = new Database(file);
    try {
      db.pragma(`busy_timeout = ${Math.trunc(busyTimeout)}`);
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      migrate(db);
      db.prepare('SELECT count(*) FROM profiles').get();
      return new ProfileStore(file, db);
    } catch (err) {
      db.close();
      throw err;
    }
  }

  /** Write profiles in one transaction (each serialised alone: see serialise()). */
  insert(profiles: Profile[]): void {
    this.insertSerialised(profiles.map(serialise));
  }

  /**
   * Write a batch in one transaction. Another process may have taken a token meanwhile (a race of
   * milliseconds): that profile is kept under the token with characters appended, never dropped.
   */
  insertSerialised(rows: StoredProfile[]): void {
    this.db.transaction((batch: StoredProfile[]) => {
      for (const row of batch) {
        const summary = { ...row.summary };
        let result = this.stmts.insert.run(summary);
        while (result.changes === 0 && summary.token.length < 32) {
          summary.token += '0';
          result = this.stmts.insert.run(summary);
        }
        const [encoding, data] = encode(row.data);
        this.stmts.insertData.run(result.lastInsertRowid, encoding, data);
      }
    }).immediate(rows);
  }

  /** Tokens stored after row `id`, with their row ids: all of them from 0, or what others wrote since. */
  tokensAfter(id: number): { id: number; token: string }[] {
    return this.stmts.tokensAfter.all(id) as { id: number; token: string }[];
  }

  read(token: string): Profile | undefined {
    const row = this.stmts.read.get(token) as (ProfileSummary & { id: number; encoding: number | null; data: Buffer | string | null }) | undefined;
    if (!row) return undefined;
    const { id: _id, encoding, data, ...summary } = row;
    const body = data == null ? { collectors: {} } : (JSON.parse(decode(encoding!, data)) as Pick<Profile, 'collectors' | 'collectorErrors'>);
    return { ...summary, collectors: body.collectors ?? {}, ...(body.collectorErrors ? { collectorErrors: body.collectorErrors } : {}) };
  }

  latest(type = 'request'): string | undefined {
    return this.stmts.latest.get(type) as string | undefined;
  }

  find(filter: SearchFilter): ProfileSummary[] {
    const { where, args } = this.whereOf(filter);
    const order = filter.sort === 'duration' ? 'duration DESC, id DESC' : 'id DESC';
    const sql = `SELECT ${SUMMARY_COLUMNS} FROM profiles ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY ${order} LIMIT ?`;
    return this.db.prepare(sql).all(...args, filter.limit) as ProfileSummary[];
  }

  /** Profiles stored after row `id` that match, oldest first, with their row ids: what a live list has not shown yet. */
  since(id: number, filter: SearchFilter): (ProfileSummary & { id: number })[] {
    const { where, args } = this.whereOf(filter);
    where.push('id > ?');
    const sql = `SELECT id, ${SUMMARY_COLUMNS} FROM profiles WHERE ${where.join(' AND ')} ORDER BY id LIMIT ?`;
    return this.db.prepare(sql).all(...args, id, filter.limit) as (ProfileSummary & { id: number })[];
  }

  /** The last row id: where a live list starts. */
  lastId(): number {
    return (this.stmts.span.get() as { last: number | null }).last ?? 0;
  }

  private whereOf(filter: SearchFilter): { where: string[]; args: unknown[] } {
    const where: string[] = [];
    const args: unknown[] = [];
    const add = (sql: string, value: unknown) => {
      where.push(sql);
      args.push(value);
    };
    if (filter.ip) add('ip = ?', filter.ip);
    if (filter.method) add('method = ?', filter.method.toUpperCase());
    if (filter.status !== undefined) add('status = ?', filter.status);
    if (filter.statusFrom !== undefined) add('status >= ?', filter.statusFrom);
    if (filter.statusTo !== undefined) add('status <= ?', filter.statusTo);
    if (filter.minDuration !== undefined) add('duration >= ?', filter.minDuration);
    if (filter.url) add("url LIKE ? ESCAPE '\\'", `%${filter.url.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
    if (filter.from !== undefined) add('time >= ?', filter.from);
    if (filter.to !== undefined) add('time <= ?', filter.to);
    if (filter.type) add('type = ?', filter.type);
    if (filter.before) {
      const id = this.stmts.idOf.get(filter.before);
      if (id !== undefined) add('id < ?', id);
    }
    return { where, args };
  }

  /**
   * One bounded step of retention, at most PRUNE_CHUNK rows: over the count first, then (when
   * `maxAge` is given) too old. Returns the tokens that went, so their bits can be cleared and a
   * caller can schedule another step while a full chunk went.
   */
  prune(maxProfiles: number, maxAge?: number, now = Date.now()): string[] {
    // Rows go oldest first and ids only grow, so the id span is the count, read in O(log n).
    const { first, last } = this.stmts.span.get() as { first: number | null; last: number | null };
    if (first !== null && last !== null && last - first + 1 > maxProfiles) {
      return this.stmts.pruneCount.all(last - maxProfiles) as string[];
    }
    return maxAge === undefined ? [] : (this.stmts.pruneAge.all(now - maxAge) as string[]);
  }

  /**
   * Delete profiles older than `before` (epoch ms), or all of them, and their bytes with them:
   * secure_delete zeroes what is deleted, VACUUM rewrites the file without the free pages, and the
   * checkpoint empties the WAL. Returns how many went.
   */
  purge(before?: number): number {
    this.db.pragma('secure_delete = ON');
    const changes = before === undefined
      ? this.db.prepare('DELETE FROM profiles').run().changes
      : this.db.prepare('DELETE FROM profiles WHERE time < ?').run(before).changes;
    this.db.pragma('wal_checkpoint(TRUNCATE)');
    this.db.exec('VACUUM');
    this.db.pragma('wal_checkpoint(TRUNCATE)');
    return changes;
  }

  stats(): StoreStats {
    const row = this.db.prepare('SELECT count(*) AS profiles, min(time) AS oldest, max(time) AS newest FROM profiles').get() as Omit<StoreStats, 'bytes' | 'file'>;
    const pages = this.db.pragma('page_count', { simple: true }) as number;
    const size = this.db.pragma('page_size', { simple: true }) as number;
    return { ...row, bytes: pages * size, file: this.file };
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}

/**
 * Profiles hold what requests carried: the file is its owner's alone (0600, in a 0700 directory
 * when we make it). SQLite gives the WAL and SHM files the database file's mode.
 */
function ownOnly(file: string): void {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  if (!existsSync(file)) closeSync(openSync(file, 'a', 0o600));
  for (const suffix of ['', '-wal', '-shm']) {
    try {
      chmodSync(file + suffix, 0o600);
    } catch {
      // Not there yet, or not ours to change: SQLite then says what it can do with it.
    }
  }
}

function encode(json: string): [number, string | Buffer] {
  if (json.length < COMPRESS_FROM) return [ENCODING_JSON, json];
  return [ENCODING_DEFLATE, deflateRawSync(json, { level: 1 })];
}

function decode(encoding: number, data: Buffer | string): string {
  if (encoding === ENCODING_DEFLATE) return inflateRawSync(data as Buffer).toString('utf8');
  return typeof data === 'string' ? data : data.toString('utf8');
}
