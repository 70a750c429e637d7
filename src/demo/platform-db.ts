import Database from 'better-sqlite3';
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { mkdirSync } from 'node:fs';
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

/** A fixed hash to check unknown usernames against, so both refusals take the same time. */
const DUMMY_HASH = `scrypt$${Buffer.alloc(16).toString('base64')}$${Buffer.alloc(32).toString('base64')}`;

async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, salt, key] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !key) return false;
  const expected = Buffer.from(key, 'base64');
  const actual = await scryptAsync(password, Buffer.from(salt, 'base64'), expected.length);
  return timingSafeEqual(actual, expected);
}

/** The platform's own data: accounts, refused sign-ins and the token signing secret. */
export class PlatformDb {
  readonly db: Database.Database;

  constructor(file: string) {
    if (file !== ':memory:') mkdirSync(path.dirname(file), { recursive: true });
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('busy_timeout = 1000');
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

  hasAccounts(): boolean {
    return this.db.prepare('SELECT 1 FROM accounts LIMIT 1').get() !== undefined;
  }

  async createAccount(username: string, password: string, role: Account['role']): Promise<void> {
    const hash = await hashPassword(password);
    this.db.prepare('INSERT INTO accounts (username, password_hash, role, created_at) VALUES (?, ?, ?, ?)').run(username, hash, role, Date.now());
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

  recordRefusal(ip: string, username: string | undefined): void {
    this.db.prepare('INSERT INTO refused_authentications (ip, username, time) VALUES (?, ?, ?)').run(ip, username ?? null, Date.now());
  }

  refusalsByAddress(since: number, limit = 20): RefusalGroup[] {
    return this.db.prepare(`
      SELECT ip, count(*) AS attempts, group_concat(DISTINCT coalesce(username, '(none)')) AS usernames, max(time) AS last
      FROM refused_authentications WHERE time >= ? GROUP BY ip ORDER BY attempts DESC, last DESC LIMIT ?`).all(since, limit) as RefusalGroup[];
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
    if (this.db.open) this.db.close();
  }
}
