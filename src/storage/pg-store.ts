import { createRequire } from 'node:module';
import type { Pool, PoolClient, PoolConfig } from 'pg';
import { encode } from './codec.js';
import type { ProfileSummary, StoredProfile } from './profile.js';
import { FORGET_SQL, HORIZON_SQL, onConflict, sumsOf, SUM_COLUMNS, sumValues, type Counted, type SumRow } from './insight-sums.js';
import { migratePg } from './pg-schema.js';
import { findSql, INSERT_COLUMNS, profileOf, PRUNE_CONFIGS_SQL, READ_SQL, sinceSql, type SearchFilter } from './query.js';
import { withoutPassword } from './location.js';
import { StorageUnavailable, type ProfileReader, type StoreStats } from './reader.js';

type Pg = typeof import('pg');

/**
 * node-postgres is an optional peer dependency, loaded only for a postgres:// database. Its
 * absence is a setup error, told when the profiler is made, never on a request.
 */
export function loadPg(): Pg {
  try {
    return requirePg('pg') as Pg;
  } catch (err) {
    throw new Error(`a postgres:// database needs the "pg" package (npm install pg): ${(err as Error).message}`);
  }
}

/** Whether pg can be loaded, without loading it (loaded, it would make the profiler follow every request's async context). */
export function hasPg(): boolean {
  try {
    requirePg.resolve('pg');
    return true;
  } catch {
    return false;
  }
}

const requirePg = createRequire(__filename);

/** Marks the profiler's own statements, so that the pg instrument never records them as the app's. */
const kOwn = Symbol.for('express-web-profiler.own-query');

export interface PgStoreOptions {
  url: string;
  schema: string;
  /** Connections at most: the writer needs two, a page reader a few. */
  max: number;
  /** A connection on which PostgreSQL refuses every write (the MCP server's). */
  readOnly?: boolean;
}

/** Advisory lock keys of this schema: (the product, the schema and purpose), so that other apps' locks never meet ours. */
const lockKey = (schema: string) => (name: string) => `hashtext('express-web-profiler'), hashtext('${schema}:${name}')`;

/** `?` placeholders (as the shared search SQL has them) as PostgreSQL's `$n`. */
const numbered = (sql: string) => {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
};

const PRUNE_CHUNK = 500;

/**
 * The profiles in PostgreSQL, shared by every instance that points at the same database: the
 * same tables and searches as the SQLite store, in a schema of the profiler's own. Every call is a
 * promise; failures to reach the database are StorageUnavailable.
 */
export class PgProfileStore implements ProfileReader {
  readonly location: string;
  readonly shared = true;
  private readonly pool: Pool;
  private readonly lock: (name: string) => string;
  private migrated: Promise<void> | undefined;

  constructor(private readonly options: PgStoreOptions, pg: Pg = loadPg()) {
    this.location = `${withoutPassword(options.url)} (schema ${options.schema})`;
    this.lock = lockKey(options.schema);
    const config: PoolConfig = {
      connectionString: options.url,
      max: options.max,
      // A database that is down or slow is given up on quickly: profiles wait, pages say so.
      connectionTimeoutMillis: 2_000,
      statement_timeout: 10_000,
      query_timeout: 12_000,
      idleTimeoutMillis: 30_000,
      // Idle connections never keep an app's process alive (one that exits without close()).
      allowExitOnIdle: true,
      keepAlive: true,
      application_name: 'express-web-profiler',
      options: `-c search_path=${options.schema}${options.readOnly ? ' -c default_transaction_read_only=on' : ''}`,
      // Epoch milliseconds and row ids fit a double: numbers, as SQLite gives them.
      types: { getTypeParser: ((oid: number, format?: string) => (oid === 20 ? Number : pg.types.getTypeParser(oid, format as 'text'))) as never },
    };
    // Marked as the profiler's own, pool and clients: the pg instrument records none of their statements.
    class OwnClient extends pg.Client {}
    (OwnClient.prototype as unknown as Record<symbol, boolean>)[kOwn] = true;
    this.pool = new pg.Pool({ ...config, Client: OwnClient } as PoolConfig);
    (this.pool as unknown as Record<symbol, boolean>)[kOwn] = true;
    // A connection the server closed (a restart) is dropped from the pool; the next query opens another.
    this.pool.on('error', () => {});
  }

  /** The schema made or upgraded once per store (never on a read-only connection, which cannot). */
  private ready(): Promise<void> {
    if (this.options.readOnly) return Promise.resolve();
    return (this.migrated ??= this.withClient((c) => migratePg(c, this.options.schema, this.lock)).catch((err) => {
      this.migrated = undefined;
      throw err;
    }));
  }

  private async withClient<T>(fn: (client: PoolClient) => Promise<T>): Promise<T> {
    let client: PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw new StorageUnavailable(`cannot reach the profiler database ${withoutPassword(this.options.url)}: ${(err as Error).message}`, { cause: err });
    }
    // A connection the server closes while it is checked out emits 'error'; unheard, that would
    // end the thread (the app's own, for the pages). The query under way fails instead.
    const heard = () => {};
    client.on('error', heard);
    let broken: unknown;
    try {
      return await fn(client);
    } catch (err) {
      broken = isConnectionError(err) ? err : undefined;
      throw isConnectionError(err) ? new StorageUnavailable(`the profiler database ${withoutPassword(this.options.url)} failed: ${(err as Error).message}`, { cause: err }) : err;
    } finally {
      client.off('error', heard);
      client.release(broken as Error | undefined);
    }
  }

  private async rows<T>(sql: string, args: unknown[] = []): Promise<T[]> {
    await this.ready();
    return this.withClient(async (c) => (await c.query(numbered(sql), args)).rows as T[]);
  }

  async read(token: string) {
    const [row] = await this.rows<Parameters<typeof profileOf>[0]>(READ_SQL, [token]);
    return row && profileOf(row);
  }

  async latest(type = 'request') {
    const [row] = await this.rows<{ token: string }>('SELECT token FROM profiles WHERE type = ? ORDER BY id DESC LIMIT 1', [type]);
    return row?.token;
  }

  find(filter: SearchFilter) {
    const { sql, args } = findSql(filter, 'ILIKE');
    return this.rows<ProfileSummary>(sql, args);
  }

  since(id: number, filter: SearchFilter) {
    const { sql, args } = sinceSql(id, filter, 'ILIKE');
    return this.rows<ProfileSummary & { id: number }>(sql, args);
  }

  select<T>(sql: string, args: unknown[]) {
    return this.rows<T>(sql, args);
  }

  async lastId() {
    const [row] = await this.rows<{ last: number | null }>('SELECT max(id) AS last FROM profiles');
    return row?.last ?? 0;
  }

  async stats(): Promise<StoreStats> {
    const [row] = await this.rows<Omit<StoreStats, 'file'>>(`SELECT count(*)::int AS profiles, min(time) AS oldest, max(time) AS newest,
      (pg_total_relation_size('profiles') + pg_total_relation_size('profile_data'))::bigint AS bytes FROM profiles`);
    return { ...row, file: this.location };
  }

  /** Delete profiles older than `before`, or all; VACUUM then gives their space back for new profiles. */
  async purge(before?: number) {
    await this.ready();
    const n = await this.withClient(async (c) => {
      await c.query('BEGIN');
      try {
        await this.writersWait(c);
        const gone = (await c.query(`WITH gone AS (DELETE FROM profiles ${before === undefined ? '' : 'WHERE time < $1'} RETURNING time) SELECT count(*)::int AS n, max(time) AS newest FROM gone`, before === undefined ? [] : [before])).rows[0] as { n: number; newest: number | null };
        if (gone.newest !== null) await this.forget(c, gone.newest);
        await c.query(before === undefined ? 'DELETE FROM configs' : PRUNE_CONFIGS_SQL);
        await c.query('COMMIT');
        return gone.n;
      } catch (err) {
        await c.query('ROLLBACK').catch(() => {});
        throw err;
      }
    });
    await this.rows('VACUUM profiles, profile_data, configs, insight_sums');
    return n;
  }

  /**
   * Take the writers' turn (their transaction lock) before deleting anything: a writer adding to a
   * sums row or marking a config used that this deletes then waits, rather than deadlocks.
   */
  private async writersWait(c: PoolClient): Promise<void> {
    await c.query(`SELECT pg_advisory_xact_lock(${this.lock('insert')})`);
  }

  /** The insights' sums of every bucket up to `time` go with the profiles deleted up to it (see insight-sums.ts); under the writers' turn. */
  private async forget(c: PoolClient, time: number): Promise<void> {
    await c.query(numbered(FORGET_SQL), [time]);
    await c.query(numbered(HORIZON_SQL), [time]);
  }

  /** Refresh the planner's statistics now rather than when autovacuum next comes round (the bench, after seeding). */
  async analyze(): Promise<void> {
    await this.rows('ANALYZE profiles, profile_data');
  }

  /**
   * Write a batch in one transaction. Writers of every instance take turns (a transaction lock),
   * so that row ids become visible in order and a live list polling "after id N" misses nothing.
   * A token already stored is never overwritten: that profile is kept under the token with
   * characters appended (it can only be a provisional token: see sharedTokenSource). `sums` says
   * which insights' sums the transaction adds, given the profiles it stored (see WaitingSums): by default theirs.
   */
  async insert(rows: StoredProfile[], sums: (counted: Counted[]) => SumRow[] = sumsOf): Promise<void> {
    await this.ready();
    await this.withClient(async (c) => {
      await c.query('BEGIN');
      try {
        await c.query(`SELECT pg_advisory_xact_lock(${this.lock('insert')})`);
        let batch = rows;
        const counted: Counted[] = [];
        while (batch.length > 0) {
          const stored = new Set((await c.query(INSERT_SQL, columnsOf(batch))).rows.map((r: { token: string }) => r.token));
          // A token twice in a batch stored its first row only (see columnsOf): counted once.
          const unsummed = new Set(stored);
          for (const { summary: s, insights } of batch) if (unsummed.delete(s.token) && insights !== undefined) counted.push({ time: s.time, token: s.token, ...insights });
          batch = batch.filter((r) => !stored.has(r.summary.token) && r.summary.token.length < 32)
            .map((r) => ({ ...r, summary: { ...r.summary, token: `${r.summary.token}0` } }));
        }
        const adding = sums(counted);
        if (adding.length > 0) await c.query(SUMS_SQL, sumColumnsOf(adding));
        await c.query('COMMIT');
      } catch (err) {
        await c.query('ROLLBACK').catch(() => {});
        throw err;
      }
    });
  }

  /**
   * One bounded step of retention, by one instance at a time: the others skip it while it runs.
   * Returns the tokens that went, or undefined when another instance held the turn.
   */
  async prune(maxProfiles: number, maxAge: number | undefined, now = Date.now()): Promise<string[] | undefined> {
    await this.ready();
    return this.withClient(async (c) => {
      await c.query('BEGIN');
      try {
        const turn = (await c.query(`SELECT pg_try_advisory_xact_lock(${this.lock('prune')}) AS mine`)).rows[0] as { mine: boolean };
        let gone: string[] | undefined;
        if (turn.mine) {
          gone = [];
          await this.writersWait(c);
          // Rows go oldest first and ids only grow, so the id span is the count, read from the index.
          const { first, last } = (await c.query('SELECT min(id) AS first, max(id) AS last FROM profiles')).rows[0] as { first: number | null; last: number | null };
          // Each walks its own index from the oldest end, so a step that finds nothing reads nothing.
          const chunk = (column: 'id' | 'time', op: string, value: number) => c.query(`DELETE FROM profiles WHERE id IN (SELECT id FROM profiles WHERE ${column} ${op} $1 ORDER BY ${column} LIMIT ${PRUNE_CHUNK}) RETURNING token, time`, [value]);
          let deleted: { token: string; time: number }[] = [];
          if (first !== null && last !== null && last - first + 1 > maxProfiles) deleted = (await chunk('id', '<=', last - maxProfiles)).rows;
          else if (maxAge !== undefined) deleted = (await chunk('time', '<', now - maxAge)).rows;
          gone = deleted.map((r) => r.token);
          if (gone.length > 0) {
            await c.query(PRUNE_CONFIGS_SQL);
            await this.forget(c, deleted.reduce((newest, r) => Math.max(newest, r.time), 0));
          }
        }
        await c.query('COMMIT');
        return gone;
      } catch (err) {
        await c.query('ROLLBACK').catch(() => {});
        throw err;
      }
    });
  }

  /**
   * Take a token slot for an instance: the next of the cycling sequence whose holder has not been
   * seen for `staleMs` (a live instance touches its slot far more often). Returns the slot.
   */
  async takeSlot(owner: string, name: string, staleMs: number, now = Date.now()): Promise<number> {
    await this.ready();
    for (let tries = 0; tries < 65_536; tries++) {
      const [row] = await this.rows<{ slot: number }>(`INSERT INTO instances (slot, owner, name, started, seen) VALUES (nextval('instance_slot'), ?, ?, ?, ?)
        ON CONFLICT (slot) DO UPDATE SET owner = EXCLUDED.owner, name = EXCLUDED.name, started = EXCLUDED.started, seen = EXCLUDED.seen
        WHERE instances.seen < ? RETURNING slot`, [owner, name, now, now, now - staleMs]);
      if (row) return row.slot;
    }
    throw new Error('every token slot is held by a live instance');
  }

  /** Say the slot is still held; false when another instance took it meanwhile (ours went stale). */
  async touchSlot(slot: number, owner: string, now = Date.now()): Promise<boolean> {
    const rows = await this.rows('UPDATE instances SET seen = ? WHERE slot = ? AND owner = ? RETURNING slot', [now, slot, owner]);
    return rows.length > 0;
  }

  /** The tokens stored under a slot's prefix (a range of the token index). */
  async tokensWithPrefix(prefix: string): Promise<string[]> {
    const rows = await this.rows<{ token: string }>('SELECT token FROM profiles WHERE token >= ? AND token < ?', [prefix, `${prefix}g`]);
    return rows.map((r) => r.token);
  }

  async close(): Promise<void> {
    await this.pool.end().catch(() => {});
  }
}

/** Errors of the connection rather than the statement: the database is down, restarting, or unreachable. */
function isConnectionError(err: unknown): boolean {
  const code = String((err as { code?: unknown })?.code ?? '');
  // 08: connection exceptions; 57P: operator intervention (shutdown, restart); 53: out of resources.
  if (/^(08|57P|53)/.test(code)) return true;
  return /ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|ENOTFOUND|EAI_AGAIN|Connection terminated|timeout/i.test(`${code} ${(err as Error)?.message ?? ''}`);
}

/**
 * One statement a batch: its configs (the distinct ones, $19, each row naming its own by position
 * in $18) stored or marked used at $20 (another instance's retention may have taken one since the
 * last batch), its profiles, their data.
 */
const INSERT_SQL = `WITH batch AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::integer[], $7::bigint[], $8::float8[], $9::text[], $10::text[], $11::text[], $12::text[], $13::integer[], $14::text[], $15::text[], $16::smallint[], $17::bytea[], $18::integer[])
      WITH ORDINALITY AS b(token, parent, ip, method, url, status, time, duration, type, instance, trace, label, failed, blocked_by, user_label, encoding, data, config, n)
  ), used AS (
    INSERT INTO configs (data, used) SELECT c, $20::bigint FROM unnest($19::text[]) AS c
    ON CONFLICT (data) DO UPDATE SET used = EXCLUDED.used
    RETURNING id, data
  ), stored AS (
    INSERT INTO profiles (${INSERT_COLUMNS})
    SELECT ${INSERT_COLUMNS} FROM batch ORDER BY n
    ON CONFLICT (token) DO NOTHING
    RETURNING id, token
  ), data AS (
    INSERT INTO profile_data (id, encoding, data, config)
    SELECT s.id, b.encoding, b.data, u.id FROM stored s JOIN batch b ON b.token = s.token LEFT JOIN used u ON u.data = ($19::text[])[b.config]
  )
  SELECT token FROM stored`;

/** A batch as INSERT_SQL's parameters: the column arrays it unnests, then its configs and the time; a token twice in one batch keeps its first row. */
function columnsOf(rows: StoredProfile[]): unknown[] {
  const cols: unknown[][] = Array.from({ length: 18 }, () => []);
  const configs: string[] = [];
  const seen = new Set<string>();
  for (const { summary: s, data, config } of rows) {
    if (seen.has(s.token)) continue;
    seen.add(s.token);
    const [encoding, body] = encode(data);
    const values = [s.token, s.parent, s.ip, s.method, s.url, s.status, s.time, s.duration, s.type, s.instance ?? null, s.trace ?? null, s.label ?? null, s.failed ?? 0, s.blockedBy ?? null, s.user ?? null, encoding, typeof body === 'string' ? Buffer.from(body) : body, config === undefined ? null : configAt(configs, config)];
    values.forEach((v, i) => cols[i].push(v));
  }
  return [...cols, configs, Date.now()];
}

/** Two JSON counts (`{ "bin": n }`) summed, in PostgreSQL's JSON functions. */
const mergeCounts = (column: string) => `CASE WHEN excluded.${column} IS NULL THEN insight_sums.${column} ELSE (SELECT jsonb_object_agg(key, total)::text FROM
  (SELECT key, sum(value::integer) AS total FROM (SELECT * FROM jsonb_each_text(insight_sums.${column}::jsonb) UNION ALL SELECT * FROM jsonb_each_text(excluded.${column}::jsonb)) AS both_counts GROUP BY key) AS summed) END`;

/** A batch's insights' sums (see insight-sums.ts), one array a column. */
const SUMS_SQL = `INSERT INTO insight_sums (${SUM_COLUMNS})
  SELECT * FROM unnest($1::integer[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::integer[], $8::float8[], $9::float8[], $10::float8[], $11::float8[], $12::integer[], $13::bigint[], $14::bigint[], $15::text[], $16::text[], $17::text[])
  ${onConflict(mergeCounts)}`;

function sumColumnsOf(rows: SumRow[]): unknown[][] {
  const cols: unknown[][] = Array.from({ length: 17 }, () => []);
  for (const row of rows) sumValues(row).forEach((v, i) => cols[i].push(v));
  return cols;
}

/** The 1-based position of `config` in `configs`, added when new: a batch names each distinct config once. */
function configAt(configs: string[], config: string): number {
  const at = configs.indexOf(config);
  return (at < 0 ? configs.push(config) : at + 1);
}
