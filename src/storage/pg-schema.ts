import type { PoolClient } from 'pg';

/**
 * Migrations of the PostgreSQL store, applied in order inside its own schema (the connection's
 * search_path): append, never edit. The version is kept in the schema's `meta` table.
 */
const MIGRATIONS: string[] = [
  `CREATE TABLE profiles (
     id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
     -- "C": byte order, so that one instance's tokens (a common prefix) are a range of the index.
     token text COLLATE "C" NOT NULL UNIQUE,
     parent text,
     ip text NOT NULL,
     method text NOT NULL,
     url text COLLATE "C" NOT NULL,
     status integer NOT NULL,
     time bigint NOT NULL,
     duration double precision NOT NULL,
     type text NOT NULL DEFAULT 'request',
     instance text
   );
   CREATE INDEX profiles_time ON profiles (time);
   -- "Compare with…": the same page, any query string (a range in byte order).
   CREATE INDEX profiles_url ON profiles (url);
   -- Panel data lives apart so that list and search scans read only the small index rows.
   CREATE TABLE profile_data (
     id bigint PRIMARY KEY REFERENCES profiles (id) ON DELETE CASCADE,
     encoding smallint NOT NULL,
     data bytea NOT NULL
   );
   -- Each running instance holds a slot: the first four hex characters of the tokens it draws.
   CREATE SEQUENCE instance_slot AS integer MINVALUE 0 MAXVALUE 65535 CYCLE;
   CREATE TABLE instances (
     slot integer PRIMARY KEY,
     owner text NOT NULL,
     name text NOT NULL,
     started bigint NOT NULL,
     seen bigint NOT NULL
   );`,
  // The config panel is the same for every request of a process: stored once, by its JSON.
  `CREATE TABLE configs (
     id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
     data text NOT NULL UNIQUE,
     used bigint NOT NULL
   );
   ALTER TABLE profile_data ADD COLUMN config bigint;`,
  // The OpenTelemetry trace a profile ran under (searched by), and what a profile started (its children: jobs, runs, calls).
  `ALTER TABLE profiles ADD COLUMN trace text;
   CREATE INDEX profiles_trace ON profiles (trace) WHERE trace IS NOT NULL;
   CREATE INDEX profiles_parent ON profiles (parent) WHERE parent IS NOT NULL;`,
  // What the list shows beside the URL (a GraphQL operation: "query GetUser"), and why it failed
  // where the status does not say (see FAILED in redaction/record.ts).
  `ALTER TABLE profiles ADD COLUMN label text;
   ALTER TABLE profiles ADD COLUMN failed integer NOT NULL DEFAULT 0;
   ALTER TABLE profiles ADD COLUMN blocked_by text;
   CREATE INDEX profiles_blocked_by ON profiles (blocked_by) WHERE blocked_by IS NOT NULL;`,
  // Who made it, as the list names them (the search's user filter: newest first within one user).
  `ALTER TABLE profiles ADD COLUMN user_label text;
   CREATE INDEX profiles_user ON profiles (user_label, id) WHERE user_label IS NOT NULL;`,
  // What each profile adds to the insights across requests (see redaction/facts.ts): gone with it.
  `CREATE TABLE facts (
     profile bigint NOT NULL REFERENCES profiles (id) ON DELETE CASCADE,
     time bigint NOT NULL,
     kind text NOT NULL,
     key text NOT NULL,
     n integer NOT NULL,
     ms double precision NOT NULL,
     peak double precision NOT NULL,
     bad integer NOT NULL,
     line text,
     route text
   );
   CREATE INDEX facts_time ON facts (kind, time);
   CREATE INDEX facts_key ON facts (kind, key, peak);
   CREATE INDEX facts_profile ON facts (profile);`,
  // The insights' sums by the minute and the hour (see insight-sums.ts), in place of each profile's facts: a period reads a few rows.
  // (facts stays, unused, for a process of the version before still running on this store: dropped by a later migration.)
  `CREATE TABLE insight_sums (
     span integer NOT NULL,
     bucket bigint NOT NULL,
     kind text NOT NULL,
     key text NOT NULL,
     route text NOT NULL,
     line text NOT NULL,
     requests integer NOT NULL,
     n double precision NOT NULL,
     ms double precision NOT NULL,
     peak double precision NOT NULL,
     bad double precision NOT NULL,
     flagged integer NOT NULL,
     first bigint NOT NULL,
     last bigint NOT NULL,
     shown text NOT NULL,
     hist text,
     nhist text,
     PRIMARY KEY (span, bucket, kind, key, route, line)
   );`,
];

export const PG_SCHEMA_VERSION = MIGRATIONS.length;

const quoted = (name: string) => `"${name.replace(/"/g, `""`)}"`;

/**
 * Create or upgrade the schema, one instance at a time (a transaction-scoped advisory lock): the
 * others wait a moment, then find it done. Touches nothing outside `schema`, except that it
 * installs pg_trgm where it is missing and the role may (see urlIndex).
 */
export async function migratePg(client: PoolClient, schema: string, lockKey: (name: string) => string): Promise<void> {
  await client.query('BEGIN');
  try {
    await client.query(`SELECT pg_advisory_xact_lock(${lockKey('migrate')})`);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoted(schema)}`);
    await client.query(`SET LOCAL search_path TO ${quoted(schema)}`);
    await client.query('CREATE TABLE IF NOT EXISTS meta (key text PRIMARY KEY, value text NOT NULL)');
    const row = (await client.query("SELECT value FROM meta WHERE key = 'version'")).rows[0] as { value: string } | undefined;
    const current = row ? Number(row.value) : 0;
    if (current > PG_SCHEMA_VERSION) {
      throw new Error(`profiler schema "${schema}" has version ${current}, newer than this version knows (${PG_SCHEMA_VERSION})`);
    }
    for (let v = current; v < PG_SCHEMA_VERSION; v++) await client.query(MIGRATIONS[v]);
    if (current < PG_SCHEMA_VERSION) {
      await client.query("INSERT INTO meta (key, value) VALUES ('version', $1) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value", [String(PG_SCHEMA_VERSION)]);
    }
    await urlIndex(client);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  }
}

/**
 * A trigram index makes "URL contains" an index search instead of a scan (at 100,000 profiles,
 * about 10 ms instead of 230). pg_trgm ships with PostgreSQL and is a trusted extension. An
 * extension exists once per database, so it goes where an app's own CREATE EXTENSION would have
 * put it (public), never in the profiler's schema: the app may use it too, and dropping the
 * profiler's schema must not take it away. Where it cannot be had (no right to create it in
 * public), search scans, which stays quick at the default retention of 10,000.
 */
async function urlIndex(client: PoolClient): Promise<void> {
  const exists = (await client.query("SELECT to_regclass('profiles_url_trgm') IS NOT NULL AS found")).rows[0] as { found: boolean };
  if (exists.found) return;
  await client.query('SAVEPOINT trgm');
  try {
    await client.query('CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public');
    const ns = (await client.query("SELECT n.nspname FROM pg_opclass c JOIN pg_namespace n ON n.oid = c.opcnamespace WHERE c.opcname = 'gin_trgm_ops' LIMIT 1")).rows[0] as { nspname: string };
    await client.query(`CREATE INDEX profiles_url_trgm ON profiles USING gin (url ${quoted(ns.nspname)}.gin_trgm_ops)`);
    await client.query('RELEASE SAVEPOINT trgm');
  } catch {
    await client.query('ROLLBACK TO SAVEPOINT trgm');
  }
}
