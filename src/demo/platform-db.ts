import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';

const scryptAsync = promisify(scrypt) as (password: string, salt: Buffer, keylen: number) => Promise<Buffer>;

export interface Account {
  id: number;
  username: string;
  role: 'admin' | 'user';
}

export interface RefusalGroup {
  ip: string;
  attempts: number;
  usernames: string;
  last: number;
}

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS accounts (
    id INTEGER PRIMARY KEY,
    username TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    role TEXT NOT NULL DEFAULT 'user',
    created_at INTEGER NOT NULL
  );
  CREATE TABLE IF NOT EXISTS refused_authentications (
    id INTEGER PRIMARY KEY,
    ip TEXT NOT NULL,
    username TEXT,
    time INTEGER NOT NULL
  );
  CREATE INDEX IF NOT EXISTS refused_time ON refused_authentications (time);
  CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
`;

async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scryptAsync(password, salt, 32);
  return `scrypt$${salt.toString('base64')}$${key.toString('base64')}`;
}

const MAX_USERNAME = 64;
const MAX_REFUSALS = 10_000;
const SHOWN_USERNAMES = 5;

/** A fixed hash to check unknown usernames against, so both refusals take the same time. */
const DUMMY_HASH = `scrypt$${Buffer.alloc(16).toString('base64')}$${Buffer.alloc(32).toString('base64')}`;

async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, salt, key] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !key) return false;
  const expected = Buffer.from(key, 'base64');
  const actual = await scryptAsync(password, Buffer.from(salt, 'base64'), expected.length);
  return timingSafeEqual(actual, expected);
}

/** What the platform asks of SQLite: the part node:sqlite and better-sqlite3 have in common. */
interface Sqlite {
  exec(sql: string): unknown;
  prepare(sql: string): {
    run(...params: unknown[]): { lastInsertRowid: number | bigint };
    get(...params: unknown[]): unknown;
    all(...params: unknown[]): unknown[];
  };
  close(): void;
}

/**
 * Node's own SQLite where this Node has it (22.13 and later), as an app on Node 22 or 24 would
 * take it; better-sqlite3 on Node 20. better-sqlite3 12 aborts Node 24.19 and later when a
 * garbage collection frees one of its statements, and 13 does not load on Node 20.
 */
function openSqlite(file: string): Sqlite {
  const nodeSqlite = process.getBuiltinModule?.('node:sqlite') as typeof import('node:sqlite') | undefined;
  if (nodeSqlite) return new nodeSqlite.DatabaseSync(file) as unknown as Sqlite;
  const Database = createRequire(__filename)('better-sqlite3') as new (file: string) => Sqlite;
  return new Database(file);
}

const column = (rows: unknown[]): string[] => rows.map((row) => Object.values(row as object)[0] as string);

/** The platform's own data: accounts, refused sign-ins and the token signing secret. */
export class PlatformDb {
  private readonly db: Sqlite;
  private open = true;

  constructor(file: string) {
    if (file !== ':memory:') mkdirSync(path.dirname(file), { recursive: true });
    this.db = openSqlite(file);
    this.db.exec('PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 1000;');
    this.db.exec(SCHEMA);
  }

  /** The secret that signs access tokens: made once, kept in the database. */
  signingSecret(): string {
    const row = this.db.prepare("SELECT value FROM settings WHERE key = 'signing_secret'").get() as { value: string } | undefined;
    if (row) return row.value;
    const secret = randomBytes(32).toString('base64url');
    this.db.prepare("INSERT INTO settings (key, value) VALUES ('signing_secret', ?)").run(secret);
    return secret;
  }

  async createAccount(username: string, password: string, role: Account['role']): Promise<void> {
    const hash = await hashPassword(password);
    this.db.prepare('INSERT INTO accounts (username, password_hash, role, created_at) VALUES (?, ?, ?, ?)').run(username, hash, role, Date.now());
  }

  async setPassword(username: string, password: string): Promise<void> {
    this.db.prepare('UPDATE accounts SET password_hash = ? WHERE username = ?').run(await hashPassword(password), username);
  }

  /** The account if the password is right, else undefined; the same work either way. */
  async verify(username: string, password: string): Promise<Account | undefined> {
    const row = this.db.prepare('SELECT id, username, role, password_hash FROM accounts WHERE username = ?').get(username) as (Account & { password_hash: string }) | undefined;
    const ok = await verifyPassword(password, row?.password_hash ?? DUMMY_HASH);
    return row && ok ? { id: row.id, username: row.username, role: row.role } : undefined;
  }

  account(id: number): Account | undefined {
    return this.db.prepare('SELECT id, username, role FROM accounts WHERE id = ?').get(id) as Account | undefined;
  }

  /**
   * Usernames are what a client chose to send: each is kept to MAX_USERNAME characters, and the
   * table to the most recent MAX_REFUSALS rows, so that no client can grow it (or the dashboard) without bound.
   */
  recordRefusal(ip: string, username: string | undefined): void {
    const name = username === undefined ? null : username.length > MAX_USERNAME ? `${username.slice(0, MAX_USERNAME)}…` : username;
    const { lastInsertRowid } = this.db.prepare('INSERT INTO refused_authentications (ip, username, time) VALUES (?, ?, ?)').run(ip.slice(0, 100), name, Date.now());
    this.db.prepare('DELETE FROM refused_authentications WHERE rowid <= ?').run(Number(lastInsertRowid) - MAX_REFUSALS);
  }

  /** The usernames refused from one address since a time, oldest first. */
  refusalsFrom(ip: string, since: number): string[] {
    return column(this.db.prepare("SELECT coalesce(username, '(none)') FROM refused_authentications WHERE ip = ? AND time >= ? ORDER BY time").all(ip.slice(0, 100), since));
  }

  adminNames(): string[] {
    return column(this.db.prepare("SELECT username FROM accounts WHERE role = 'admin' ORDER BY id").all());
  }

  /** Refusals by client address; each group names at most a few distinct usernames, with how many more there were. */
  refusalsByAddress(since: number, limit = 20): RefusalGroup[] {
    const groups = this.db.prepare(`
      SELECT ip, count(*) AS attempts, count(DISTINCT coalesce(username, '(none)')) AS names, max(time) AS last
      FROM refused_authentications WHERE time >= ? GROUP BY ip ORDER BY attempts DESC, last DESC LIMIT ?`).all(since, limit) as (Omit<RefusalGroup, 'usernames'> & { names: number })[];
    const someNames = this.db.prepare(`
      SELECT DISTINCT coalesce(username, '(none)') AS name FROM refused_authentications WHERE ip = ? AND time >= ? LIMIT ${SHOWN_USERNAMES}`);
    return groups.map(({ names, ...g }) => {
      const shown = column(someNames.all(g.ip, since));
      return { ...g, usernames: shown.join(',') + (names > shown.length ? ` and ${names - shown.length} more` : '') };
    });
  }

  /** A real query, as the db health check promises. */
  healthy(): boolean {
    try {
      return (this.db.prepare('SELECT count(*) AS n FROM accounts').get() as { n: number }).n >= 0;
    } catch {
      return false;
    }
  }

  close(): void {
    if (this.open) this.db.close();
    this.open = false;
  }
}
