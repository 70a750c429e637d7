import { chmodSync, closeSync, constants, existsSync, lstatSync, mkdirSync, openSync, renameSync } from 'node:fs';
import path from 'node:path';
import { encode } from './codec.js';
import { serialise, type Profile, type ProfileSummary, type StoredProfile, type StoredRead } from './profile.js';
import { findSql, INSERT_COLUMNS, profileOf, PRUNE_CONFIGS_SQL, READ_SQL, sinceSql, type SearchFilter } from './query.js';
import type { ProfileReader, StoreStats } from './reader.js';
import { FORGET_SQL, HORIZON_SQL, onConflict, sumsOf, SUM_COLUMNS, sumValues, type Counted, type SumRow } from './insight-sums.js';
import { migrate } from './schema.js';
import { openDatabase, sqliteCode, type SqliteDatabase } from './sqlite.js';

export type { SearchFilter } from './query.js';

/** Who holds a token lane of the file (see SqliteSink), and when it last said so. */
export interface LaneHolder {
  owner: string;
  host: string;
  pid: number;
  seen: number;
}
export type { StoreStats } from './reader.js';

const PRUNE_CHUNK = 500;

/** Two JSON counts (`{ "bin": n }`) summed, in SQLite's JSON functions. */
const mergeCounts = (column: string) => `CASE WHEN excluded.${column} IS NULL THEN insight_sums.${column} ELSE (SELECT json_group_object(key, total) FROM
  (SELECT key, sum(value) AS total FROM (SELECT key, value FROM json_each(insight_sums.${column}) UNION ALL SELECT key, value FROM json_each(excluded.${column})) GROUP BY key)) END`;

/** A SQLite error that means the file is not a database we can use: move it aside and start anew. */
export const isCorruption = (err: unknown): boolean => /^SQLITE_(CORRUPT|NOTADB)/.test(sqliteCode(err));

/**
 * The profiles in SQLite: an index table for lists and search, the panel data (JSON, deflated
 * when that pays) in a table of its own. All calls are synchronous, as SQLite's bindings are;
 * callers keep them off the request path.
 */
export class ProfileStore implements ProfileReader {
  readonly db: SqliteDatabase;
  readonly file: string;
  readonly shared = false;
  private readonly stmts;
  private readonly writeBatch: (batch: StoredProfile[], seen: number, learn: ((token: string) => void) | undefined, sums: (counted: Counted[]) => SumRow[]) => number;
  private readonly pruneStep: (maxProfiles: number, maxAge: number | undefined, now: number) => string[];
  private readonly purgeRows: (before?: number) => number;

  private constructor(file: string, db: SqliteDatabase) {
    this.file = file;
    this.db = db;
    // Made at the first write: a read-only connection (the MCP server's) to a file an older version wrote lacks what they name.
    const onWrite = (sql: string) => {
      let made: ReturnType<SqliteDatabase['prepare']> | undefined;
      return () => (made ??= db.prepare(sql));
    };
    this.stmts = {
      insert: onWrite(`INSERT INTO profiles (${INSERT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (token) DO NOTHING`),
      tokensAfter: db.prepare('SELECT id, token FROM profiles WHERE id > ? ORDER BY id'),
      // Each in its own subquery: SQLite reads min() or max() alone off the end of the id b-tree, both together by scanning every row.
      span: db.prepare('SELECT (SELECT min(id) FROM profiles) AS first, (SELECT max(id) FROM profiles) AS last'),
      insertData: db.prepare('INSERT INTO profile_data (id, encoding, data, config) VALUES (?, ?, ?, ?)'),
      addSums: onWrite(`INSERT INTO insight_sums (${SUM_COLUMNS}) VALUES (${SUM_COLUMNS.split(',').map(() => '?').join(', ')}) ${onConflict(mergeCounts)}`),
      forget: onWrite(FORGET_SQL),
      horizon: onWrite(HORIZON_SQL),
      useConfig: db.prepare('INSERT INTO configs (data, used) VALUES (?, ?) ON CONFLICT (data) DO UPDATE SET used = excluded.used RETURNING id'),
      pruneConfigs: db.prepare(PRUNE_CONFIGS_SQL),
      read: db.prepare(READ_SQL),
      latest: db.prepare(`SELECT token FROM profiles WHERE type = ? ORDER BY id DESC LIMIT 1`),
      // By the time index from the oldest end: a step that finds nothing too old reads nothing (ORDER BY id scanned the table).
      pruneAge: db.prepare(`DELETE FROM profiles WHERE id IN (SELECT id FROM profiles WHERE time < ? ORDER BY time LIMIT ${PRUNE_CHUNK}) RETURNING token, time`),
      pruneCount: db.prepare(`DELETE FROM profiles WHERE id IN (SELECT id FROM profiles WHERE id <= ? ORDER BY id LIMIT ${PRUNE_CHUNK}) RETURNING token, time`),
    };
    this.writeBatch = db.immediate((batch: StoredProfile[], seen: number, learn: ((token: string) => void) | undefined, sums: (counted: Counted[]) => SumRow[]): number => {
      if (learn) for (const { token } of this.tokensAfter(seen)) learn(token);
      let last = seen;
      // Looked up (and marked used) once a batch: another process's retention may have taken it since the last.
      const configs = new Map<string, number>();
      const configId = (config: string) => {
        let id = configs.get(config);
        if (id === undefined) configs.set(config, (id = (this.stmts.useConfig.get(config, Date.now()) as { id: number }).id));
        return id;
      };
      const insert = this.stmts.insert();
      const put = (s: ProfileSummary, token: string) => insert.run(token, s.parent, s.ip, s.method, s.url, s.status, s.time, s.duration, s.type, s.instance ?? null, s.trace ?? null, s.label ?? null, s.failed ?? 0, s.blockedBy ?? null, s.user ?? null);
      const counted: Counted[] = [];
      for (const { summary: s, data, config, insights } of batch) {
        let token = s.token;
        let result = put(s, token);
        while (result.changes === 0 && token.length < 32) result = put(s, (token += '0'));
        if (result.changes === 0) continue;
        const [encoding, stored] = encode(data);
        last = Number(result.lastInsertRowid);
        this.stmts.insertData.run(last, encoding, stored, config === undefined ? null : configId(config));
        if (insights !== undefined) counted.push({ time: s.time, token, ...insights });
      }
      for (const row of sums(counted)) this.stmts.addSums().run(...sumValues(row));
      return last;
    });
    // Profiles and the insights' sums they were counted in go in one transaction: no count outlives its profile.
    this.pruneStep = db.immediate((maxProfiles: number, maxAge: number | undefined, now: number): string[] => {
      // Rows go oldest first and ids only grow, so the id span is the count, read in O(log n).
      const { first, last } = this.stmts.span.get() as { first: number | null; last: number | null };
      const gone = (first !== null && last !== null && last - first + 1 > maxProfiles
        ? this.stmts.pruneCount.all(last - maxProfiles)
        : maxAge === undefined ? [] : this.stmts.pruneAge.all(now - maxAge)) as { token: string; time: number }[];
      if (gone.length > 0) {
        this.stmts.pruneConfigs.run();
        this.forget(gone.reduce((newest, row) => Math.max(newest, row.time), 0));
      }
      return gone.map((row) => row.token);
    });
    this.purgeRows = db.immediate((before?: number): number => {
      const { newest } = db.prepare(`SELECT max(time) AS newest FROM profiles${before === undefined ? '' : ' WHERE time < ?'}`).get(...(before === undefined ? [] : [before])) as { newest: number | null };
      if (newest !== null) this.forget(newest);
      const changes = Number(before === undefined
        ? db.prepare('DELETE FROM profiles').run().changes
        : db.prepare('DELETE FROM profiles WHERE time < ?').run(before).changes);
      if (before === undefined) db.prepare('DELETE FROM configs').run();
      else this.stmts.pruneConfigs.run();
      return changes;
    });
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
    const db = openDatabase(file, { readonly: true, fileMustExist: true });
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
    const db = openDatabase(file);
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

  /** Write whole profiles in one transaction (tests, tools): see serialise(). */
  insert(profiles: Profile[]): void {
    this.insertSerialised(profiles.map(serialise));
  }

  /**
   * Write a batch in one transaction. Another process may have taken a token meanwhile (a race of
   * milliseconds): that profile is kept under the token with characters appended, never dropped.
   * `learn` is told the tokens other processes stored after row `seen`, read under the same write
   * lock, so that none can come between; returns the last row id, which the next call passes as
   * `seen` (the batch's own rows are not read back). `sums` says which insights' sums the
   * transaction adds, given the profiles it stored (see WaitingSums): by default theirs.
   */
  insertSerialised(rows: StoredProfile[], seen = 0, learn?: (token: string) => void, sums: (counted: Counted[]) => SumRow[] = sumsOf): number {
    return this.writeBatch(rows, seen, learn, sums);
  }

  /** Tokens stored after row `id`, with their row ids: all of them from 0, or what others wrote since. */
  tokensAfter(id: number): { id: number; token: string }[] {
    return this.stmts.tokensAfter.all(id) as { id: number; token: string }[];
  }

  read(token: string): StoredRead | undefined {
    const row = this.stmts.read.get(token) as Parameters<typeof profileOf>[0] | undefined;
    return row && profileOf(row);
  }

  latest(type = 'request'): string | undefined {
    return (this.stmts.latest.get(type) as { token: string } | undefined)?.token;
  }

  find(filter: SearchFilter): ProfileSummary[] {
    const { sql, args } = findSql(filter, 'LIKE');
    return this.db.prepare(sql).all(...args) as ProfileSummary[];
  }

  /** Profiles stored after row `id` that match, oldest first, with their row ids: what a live list has not shown yet. */
  since(id: number, filter: SearchFilter): (ProfileSummary & { id: number })[] {
    const { sql, args } = sinceSql(id, filter, 'LIKE');
    return this.db.prepare(sql).all(...args) as (ProfileSummary & { id: number })[];
  }

  select<T>(sql: string, args: unknown[]): T[] {
    return this.db.prepare(sql).all(...args) as T[];
  }

  /** The last row id: where a live list starts. */
  lastId(): number {
    return (this.stmts.span.get() as { last: number | null }).last ?? 0;
  }

  /**
   * One bounded step of retention, at most PRUNE_CHUNK rows: over the count first, then (when
   * `maxAge` is given) too old. Returns the tokens that went, so their bits can be cleared and a
   * caller can schedule another step while a full chunk went.
   */
  prune(maxProfiles: number, maxAge?: number, now = Date.now()): string[] {
    return this.pruneStep(maxProfiles, maxAge, now);
  }

  /**
   * Take a lane for `holder.owner`: `prefer` where it is free, else the first of `lanes` that no
   * row holds, or whose holder `runs` says is gone, or that is the owner's own. Read and written
   * under the write lock, so two processes never take the same one; the owner's other rows (an
   * earlier open's) go. Returns the lane, or undefined when every one is held.
   */
  takeLane(lanes: number, holder: LaneHolder, runs: (row: LaneHolder) => boolean, prefer?: number): number | undefined {
    return this.db.immediate(() => {
      const rows = new Map((this.db.prepare('SELECT lane, owner, host, pid, seen FROM lanes').all() as (LaneHolder & { lane: number })[]).map((row) => [row.lane, row]));
      const free = (lane: number) => {
        const row = rows.get(lane);
        return row === undefined || row.owner === holder.owner || !runs(row);
      };
      const lane = prefer !== undefined && free(prefer) ? prefer : Array.from({ length: lanes }, (_, i) => i).find(free);
      this.releaseLane(holder.owner);
      if (lane === undefined) return undefined;
      this.db.prepare('INSERT OR REPLACE INTO lanes (lane, owner, host, pid, seen) VALUES (?, ?, ?, ?, ?)').run(lane, holder.owner, holder.host, holder.pid, holder.seen);
      return lane;
    })();
  }

  /** Say the lane is still held; false when another process took it meanwhile (ours looked gone). */
  touchLane(lane: number, owner: string, now: number): boolean {
    return Number(this.db.prepare('UPDATE lanes SET seen = ? WHERE lane = ? AND owner = ?').run(now, lane, owner).changes) > 0;
  }

  releaseLane(owner: string): void {
    this.db.prepare('DELETE FROM lanes WHERE owner = ?').run(owner);
  }

  /** The insights' sums of every bucket up to `time` go with the profiles retention deleted up to it (see insight-sums.ts). */
  private forget(time: number): void {
    this.stmts.forget().run(time);
    this.stmts.horizon().run(time);
  }

  /**
   * Delete profiles older than `before` (epoch ms), or all of them, and their bytes with them:
   * secure_delete zeroes what is deleted, VACUUM rewrites the file without the free pages, and the
   * checkpoint empties the WAL. Returns how many went.
   */
  purge(before?: number): number {
    this.db.pragma('secure_delete = ON');
    const changes = this.purgeRows(before);
    this.db.pragma('wal_checkpoint(TRUNCATE)');
    this.db.exec('VACUUM');
    this.db.pragma('wal_checkpoint(TRUNCATE)');
    return changes;
  }

  stats(): StoreStats {
    const row = this.db.prepare('SELECT count(*) AS profiles, min(time) AS oldest, max(time) AS newest FROM profiles').get() as Omit<StoreStats, 'bytes' | 'file'>;
    const pages = this.db.pragma('page_count') as number;
    const size = this.db.pragma('page_size') as number;
    return { ...row, bytes: pages * size, file: this.file };
  }

  get location(): string {
    return this.file;
  }

  close(): void {
    this.db.close();
  }
}

/**
 * Profiles hold what requests carried: the file is its owner's alone (0600, in a 0700 directory
 * when we make it). A shared directory may hold files another user planted to read what is
 * written, or to feed the pages: a link, or a database, WAL or SHM file of another owner, is
 * refused with why (the app goes on unrecorded), as the key file is. SQLite gives the WAL and
 * SHM files the database file's mode.
 */
function ownOnly(file: string): void {
  privateDir(path.dirname(file));
  try {
    closeSync(openSync(file, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY | (constants.O_NOFOLLOW ?? 0), 0o600));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  for (const suffix of ['', '-wal', '-shm', '-journal']) ownedFile(file + suffix);
}

/** A directory of the store's, made 0700 when it is not there. */
export function privateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
}

function ownedFile(file: string): void {
  let found;
  try {
    found = lstatSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  if (found.isSymbolicLink()) throw new Error(`${file} is a symbolic link: the profiler stores through none (another user may have planted it); remove it`);
  const own = process.getuid?.();
  // Windows has no owners or modes to check.
  if (own === undefined) return;
  if (found.uid !== own) throw new Error(`${file} is owned by another user (uid ${found.uid}): the profiler stores in its own files only; remove it`);
  if ((found.mode & 0o077) !== 0) chmodSync(file, 0o600);
}
