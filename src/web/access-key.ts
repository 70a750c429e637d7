import { randomBytes } from 'node:crypto';
import { closeSync, constants, fstatSync, linkSync, openSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { IncomingMessage } from 'node:http';
import { isTestRun, type ResolvedOptions } from '../options.js';
import { isPostgresUrl } from '../storage/location.js';
import { privateDir } from '../storage/store.js';
import { SECRET_QUERY } from './access.js';

export interface AccessKey {
  key: string;
  /** Where it is kept, so that a restart (or another process on the same store) keeps the browser's cookie good. */
  file?: string;
}

const freshKey = () => randomBytes(24).toString('base64url');

/** Beside the SQLite file: storage/profiler.sqlite keeps its key in storage/profiler.key. */
export const keyFileOf = (database: string) =>
  path.join(path.dirname(database), `${path.basename(database, path.extname(database))}.key`);

/**
 * The key of a profiler that was given none. A SQLite store keeps it in a file only its owner may
 * read, published whole (a link of a finished file) so that processes starting together agree on
 * one. A PostgreSQL store, or a file that cannot be written, gets a key for this process alone.
 */
export function madeAccessKey(database: string, tell: (message: string) => void): AccessKey {
  if (isPostgresUrl(database)) return { key: freshKey() };
  const file = keyFileOf(database);
  try {
    const kept = readKey(file);
    if (kept !== undefined) return { key: kept, file };
    privateDir(path.dirname(file));
    const draft = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
    writeFileSync(draft, `${freshKey()}\n`, { mode: 0o600 });
    try {
      linkSync(draft, file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    } finally {
      unlinkSync(draft);
    }
    const key = readKey(file);
    if (key === undefined) throw new Error(`${file} holds no key`);
    return { key, file };
  } catch (err) {
    tell(`the profiler's access key could not be kept in ${file} (${(err as Error).message}): this process has a key of its own, printed at its first request`);
    return { key: freshKey() };
  }
}

/**
 * The key a file holds, if this user made it: a file another user owns, or that others may read
 * or write, or a link to one, may have been planted in a shared store directory by someone who
 * then knows the key. Such a file is refused (and the process keeps a key of its own).
 */
function readKey(file: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP') throw new Error(`${file} is a symbolic link: remove it to have a new key made`);
    throw err;
  }
  let text: string;
  try {
    const { uid, mode } = fstatSync(fd);
    const own = process.getuid?.();
    // Windows has no owners or modes to check.
    if (own !== undefined && uid !== own) throw new Error(`${file} is owned by another user (uid ${uid}): remove it to have a new key made`);
    if (own !== undefined && (mode & 0o077) !== 0) throw new Error(`${file} may be read or written by other users (mode ${(mode & 0o777).toString(8)}): remove it to have a new key made`);
    text = readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
  const key = text.trim();
  if (!/^[\w-]{16,200}$/.test(key)) throw new Error(`${file} holds no key (16 or more letters, digits, - or _): remove it to have a new one made`);
  return key;
}

/**
 * The line a developer opens the profiler from, printed once, at the first request: the server
 * has a port by then. It names localhost, whatever Host the request carried (a client chooses
 * that), and is not printed in test runs, whose pages nobody opens.
 */
export function keyLink(req: IncomingMessage & { baseUrl?: string }, key: string): string {
  const scheme = (req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http';
  return linkWithKey(`${scheme}://localhost:${req.socket.localPort}${req.baseUrl ?? ''}`, key);
}

/** The profiler's list under `origin` (scheme, host, port and any mount path), opened with `key` when there is one. */
export const linkWithKey = (origin: string, key: string | undefined): string =>
  `${origin.replace(/\/+$/, '')}/_profiler/${key === undefined ? '' : `?${SECRET_QUERY}=${encodeURIComponent(key)}`}`;

export const announcesKey = (options: ResolvedOptions, env: NodeJS.ProcessEnv = process.env) =>
  options.keyMade && !options.trustLocal && !isTestRun(env);
