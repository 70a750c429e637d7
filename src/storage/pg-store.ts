import { createRequire } from 'node:module';
import type { Pool, PoolClient, PoolConfig } from 'pg';
import { encode } from './codec.js';
import type { ProfileSummary, StoredProfile } from './profile.js';
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
    const gone = await this.rows<{ n: number }>(`WITH gone AS (DELETE FROM profiles ${before === undefined ? '' : 'WHERE time < ?'} RETURNING 1) SELECT count(*)::int AS n FROM gone`, before === undefined ? [] : [before]);
    await this.rows(before === undefined ? 'DELETE FROM configs' : PRUNE_CONFIGS_SQL);
    await this.rows('VACUUM profiles, profile_data, configs');
    return gone[0].n;
  }

  /** Refresh the planner's statistics now rather than when autovacuum next comes round (the bench, after seeding). */
  async analyze(): Promise<void> {
    await this.rows('ANALYZE profiles, profile_data');
  }

  /**
   * Write a batch in one transaction. Writers of every instance take turns (a transaction lock),
   * so that row ids become visible in order and a live list polling "after id N" misses nothing.
   * A token already stored is never overwritten: that profile is kept under the token with
   * characters appended (it can only be a provisional token: see sharedTokenSource).
   */
  async insert(rows: StoredProfile[]): Promise<void> {
    await this.ready();
    await this.withClient(async (c) => {
      await c.query('BEGIN');
      try {
        await c.query(`SELECT pg_advisory_xact_lock(${this.lock('insert')})`);
        let batch = rows;
        while (batch.length > 0) {
          const stored = new Set((await c.query(INSERT_SQL, columnsOf(batch))).rows.map((r: { token: string }) => r.token));
          batch = batch.filter((r) => !stored.has(r.summary.token) && r.summary.token.length < 32)
            .map((r) => ({ ...r, summary: { ...r.summary, token: `${r.summary.token}0` } }));
        }
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
          // Rows go oldest first and ids only grow, so the id span is the count, read from the index.
          const { first, last } = (await c.query('SELECT min(id) AS first, max(id) AS last FROM profiles')).rows[0] as { first: number | null; last: number | null };
          // Each walks its own index from the oldest end, so a step that finds nothing reads nothing.
          const chunk = (column: 'id' | 'time', op: string, value: number) => c.query(`DELETE FROM profiles WHERE id IN (SELECT id FROM profiles WHERE ${column} ${op} $1 ORDER BY ${column} LIMIT ${PRUNE_CHUNK}) RETURNING token`, [value]);
          if (first !== null && last !== null && last - first + 1 > maxProfiles) gone = (await chunk('id', '<=', last - maxProfiles)).rows.map((r) => r.token);
          else if (maxAge !== undefined) gone = (await chunk('time', '<', now - maxAge)).rows.map((r) => r.token);
          if (gone.length > 0) await c.query(PRUNE_CONFIGS_SQL);
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
  ), facts_of AS (
    INSERT INTO facts (profile, time, kind, key, n, ms, peak, bad, line, route)
    SELECT s.id, b.time, f.kind, f.key, f.n, f.ms, f.peak, f.bad, f.line, f.route
    FROM unnest($21::text[], $22::text[], $23::text[], $24::integer[], $25::float8[], $26::float8[], $27::integer[], $28::text[], $29::text[]) AS f(token, kind, key, n, ms, peak, bad, line, route)
    JOIN stored s ON s.token = f.token JOIN batch b ON b.token = f.token
  )
  SELECT token FROM stored`;

/** A batch as INSERT_SQL's parameters: the column arrays it unnests, then its configs and the time, then its facts; a token twice in one batch keeps its first row. */
function columnsOf(rows: StoredProfile[]): unknown[] {
  const cols: unknown[][] = Array.from({ length: 18 }, () => []);
  // Each fact as one entry of nine arrays, named by its profile's token (see facts_of).
  const facts: unknown[][] = Array.from({ length: 9 }, () => []);
  const configs: string[] = [];
  const seen = new Set<string>();
  for (const { summary: s, data, config, facts: derived } of rows) {
    if (seen.has(s.token)) continue;
    seen.add(s.token);
    const [encoding, body] = encode(data);
    const values = [s.token, s.parent, s.ip, s.method, s.url, s.status, s.time, s.duration, s.type, s.instance ?? null, s.trace ?? null, s.label ?? null, s.failed ?? 0, s.blockedBy ?? null, s.user ?? null, encoding, typeof body === 'string' ? Buffer.from(body) : body, config === undefined ? null : configAt(configs, config)];
    values.forEach((v, i) => cols[i].push(v));
    for (const f of derived ?? []) [s.token, f.kind, f.key, f.n, f.ms, f.peak, f.bad, f.line ?? null, f.route ?? null].forEach((v, i) => facts[i].push(v));
  }
  return [...cols, configs, Date.now(), ...facts];
}

/** The 1-based position of `config` in `configs`, added when new: a batch names each distinct config once. */
function configAt(configs: string[], config: string): number {
  const at = configs.indexOf(config);
  return (at < 0 ? configs.push(config) : at + 1);
}
