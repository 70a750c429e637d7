import type { SqliteDatabase } from './sqlite.js';

/**
 * Migrations, applied in order to reach PRAGMA user_version = MIGRATIONS.length. Append, never edit:
 * a file written by an older version upgrades by running the ones it lacks.
 */
const MIGRATIONS: string[] = [
  `CREATE TABLE profiles (
     id INTEGER PRIMARY KEY,
     token TEXT NOT NULL UNIQUE,
     parent TEXT,
     ip TEXT NOT NULL,
     method TEXT NOT NULL,
     url TEXT NOT NULL,
     status INTEGER NOT NULL,
     time INTEGER NOT NULL,
     duration REAL NOT NULL,
     type TEXT NOT NULL DEFAULT 'request'
   );
   CREATE INDEX profiles_time ON profiles (time);
   -- Panel data lives apart so that list and search scans read only the small index rows.
   CREATE TABLE profile_data (
     id INTEGER PRIMARY KEY,
     encoding INTEGER NOT NULL,
     data BLOB NOT NULL
   );
   CREATE TRIGGER profiles_delete AFTER DELETE ON profiles BEGIN
     DELETE FROM profile_data WHERE id = old.id;
   END;`,
  // Which instance (host and pid, or the name given) served the request: several share one store.
  'ALTER TABLE profiles ADD COLUMN instance TEXT;',
  // The config panel is the same for every request of a process: stored once, by its JSON.
  `CREATE TABLE configs (
     id INTEGER PRIMARY KEY,
     data TEXT NOT NULL UNIQUE,
     used INTEGER NOT NULL
   );
   ALTER TABLE profile_data ADD COLUMN config INTEGER;`,
  // The OpenTelemetry trace a profile ran under (searched by), and what a profile started (its children: jobs, runs, calls).
  `ALTER TABLE profiles ADD COLUMN trace TEXT;
   CREATE INDEX profiles_trace ON profiles (trace) WHERE trace IS NOT NULL;
   CREATE INDEX profiles_parent ON profiles (parent) WHERE parent IS NOT NULL;`,
  // What the list shows beside the URL (a GraphQL operation: "query GetUser"), and why it failed
  // where the status does not say (see FAILED in redaction/record.ts).
  `ALTER TABLE profiles ADD COLUMN label TEXT;
   ALTER TABLE profiles ADD COLUMN failed INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE profiles ADD COLUMN blocked_by TEXT;
   CREATE INDEX profiles_blocked_by ON profiles (blocked_by) WHERE blocked_by IS NOT NULL;`,
  // Who made it, as the list names them (the search's user filter: newest first within one user).
  `ALTER TABLE profiles ADD COLUMN user_label TEXT;
   CREATE INDEX profiles_user ON profiles (user_label, id) WHERE user_label IS NOT NULL;`,
  // What each profile adds to the insights across requests (see redaction/facts.ts): gone with it.
  `CREATE TABLE facts (
     profile INTEGER NOT NULL,
     time INTEGER NOT NULL,
     kind TEXT NOT NULL,
     key TEXT NOT NULL,
     n INTEGER NOT NULL,
     ms REAL NOT NULL,
     peak REAL NOT NULL,
     bad INTEGER NOT NULL,
     line TEXT,
     route TEXT
   );
   CREATE INDEX facts_time ON facts (kind, time);
   CREATE INDEX facts_key ON facts (kind, key, peak);
   CREATE INDEX facts_profile ON facts (profile);
   CREATE TRIGGER profiles_delete_facts AFTER DELETE ON profiles BEGIN
     DELETE FROM facts WHERE profile = old.id;
   END;`,
  // The insights' sums by the minute and the hour (see insight-sums.ts), in place of each profile's facts: a period reads a few rows.
  // (facts stays, unused, for a process of the version before still running on this store: dropped by a later migration.)
  `CREATE TABLE insight_sums (
     span INTEGER NOT NULL,
     bucket INTEGER NOT NULL,
     kind TEXT NOT NULL,
     key TEXT NOT NULL,
     route TEXT NOT NULL,
     line TEXT NOT NULL,
     requests INTEGER NOT NULL,
     n REAL NOT NULL,
     ms REAL NOT NULL,
     peak REAL NOT NULL,
     bad REAL NOT NULL,
     flagged INTEGER NOT NULL,
     first INTEGER NOT NULL,
     last INTEGER NOT NULL,
     shown TEXT NOT NULL,
     hist TEXT,
     nhist TEXT,
     PRIMARY KEY (span, bucket, kind, key, route, line)
   ) WITHOUT ROWID;`,
  // Token lanes: each process writing the file draws its tokens in a lane no other live one holds (see laneTokenSource).
  `CREATE TABLE lanes (
     lane INTEGER PRIMARY KEY,
     owner TEXT NOT NULL,
     host TEXT NOT NULL,
     pid INTEGER NOT NULL,
     seen INTEGER NOT NULL
   );`,
];

export const SCHEMA_VERSION = MIGRATIONS.length;

export function migrate(db: SqliteDatabase): void {
  const version = () => {
    const current = db.pragma('user_version') as number;
    if (current > SCHEMA_VERSION) {
      throw new Error(`profiler database has schema version ${current}, newer than this version knows (${SCHEMA_VERSION})`);
    }
    return current;
  };
  if (version() === SCHEMA_VERSION) return;
  // Read again under the write lock: another connection (the writer thread, another process) may have migrated meanwhile.
  db.immediate(() => {
    for (let v = version(); v < SCHEMA_VERSION; v++) db.exec(MIGRATIONS[v]);
    db.pragma(`user_version = ${SCHEMA_VERSION}`);
  })();
}
