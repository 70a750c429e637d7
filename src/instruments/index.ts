import dc from 'node:diagnostics_channel';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { DriverAdapter, DriverPanel } from './driver.js';
import { betterSqlite3 } from './better-sqlite3.js';
import { nodeSqlite, nodeSqliteModule } from './node-sqlite.js';
import { mysql } from './mysql.js';
import { mysql2 } from './mysql2.js';
import { pg } from './pg.js';
import { sqlite3 } from './sqlite3.js';
import { ioredis } from './ioredis.js';
import { nodeRedis } from './node-redis.js';
import { nodemailer } from './nodemailer.js';
import { drizzle } from './drizzle.js';
import { bullmq } from './bullmq.js';
import { anthropic, openai } from './ai-sdks.js';
import { passport } from './passport.js';
import { jsonwebtoken } from './jsonwebtoken.js';
import { i18next } from './i18next.js';
import { joi } from './joi.js';
import { yup } from './yup.js';
import { valibot } from './valibot.js';
import { ajv } from './ajv.js';
import { expressSession } from './express-session.js';

/** The packages recorded with no setup: databases, caches, mail, queues, AI providers. A new one: its adapter file beside these, and its name here. */
export const drivers: DriverAdapter[] = [betterSqlite3, nodeSqlite, pg, mysql2, mysql, sqlite3, ioredis, nodeRedis, nodemailer, drizzle, bullmq, openai, anthropic, passport, jsonwebtoken, expressSession, i18next, joi, yup, valibot, ajv];

const requireCache = createRequire(__filename).cache;
const hooked = new WeakSet<object>();

function hookOnce(adapter: DriverAdapter, loaded: unknown, file: string | undefined, tell: (message: string) => void): boolean {
  if (loaded === null || (typeof loaded !== 'object' && typeof loaded !== 'function') || hooked.has(loaded)) return false;
  hooked.add(loaded);
  adapter.hook(loaded, file, tell);
  followedCopies.add(file === undefined ? adapter.name : packageDir(file, adapter.name) ?? adapter.name);
  return true;
}

/** Where each followed copy is: its package folder (or the adapter's name, for a builtin or a module handed over). */
const followedCopies = new Set<string>();

/** The folder of package `name` that holds `file`, when the file is inside one. */
function packageDir(file: string, name: string): string | undefined {
  const marker = `${path.sep}node_modules${path.sep}${name.split('/').join(path.sep)}${path.sep}`;
  const at = file.lastIndexOf(marker);
  return at < 0 ? undefined : file.slice(0, at + marker.length - 1);
}

/**
 * Packages of a kind the panels show that no adapter follows: their work is not recorded (their
 * OpenTelemetry spans are, through spanProcessor()). Named so that an empty panel says so.
 */
const UNFOLLOWED: [string, DriverPanel][] = [
  ['mongodb', 'db'], ['mongoose', 'db'], ['postgres', 'db'], ['@prisma/client', 'db'], ['mssql', 'db'], ['tedious', 'db'], ['oracledb', 'db'],
  ['@libsql/client', 'db'], ['@neondatabase/serverless', 'db'], ['@planetscale/database', 'db'], ['cassandra-driver', 'db'],
  ['memcached', 'cache'], ['memjs', 'cache'], ['@aws-sdk/client-sesv2', 'mail'], ['@sendgrid/mail', 'mail'], ['@google/genai', 'ai'], ['cohere-ai', 'ai'],
];

export interface DriverCopy {
  name: string;
  version: string | undefined;
  /** Why its work is not recorded, when it is not. */
  why?: string;
}

/**
 * What this process records for a panel and what it cannot: each copy of a known package it has
 * loaded, followed or not, and packages of the panel's kind no adapter knows. Read when a page is
 * shown, never on a request's way.
 */
export function driverReport(panel: DriverPanel): { followed: DriverCopy[]; unfollowed: DriverCopy[] } {
  const adapters = drivers.filter((adapter) => adapter.panel === panel);
  const unknown = UNFOLLOWED.filter(([, kind]) => kind === panel).map(([name]) => name);
  const followed: DriverCopy[] = adapters.filter((a) => followedCopies.has(a.name)).map((a) => ({ name: a.name, version: a.name === 'node:sqlite' ? `SQLite ${process.versions.sqlite}` : undefined }));
  const unfollowed: DriverCopy[] = [];
  const seen = new Set<string>();
  const add = (name: string, dir: string | undefined, why: string | undefined) => {
    if (dir === undefined || seen.has(dir)) return;
    seen.add(dir);
    (why === undefined ? followed : unfollowed).push({ name, version: versionAt(dir), ...(why === undefined ? {} : { why }) });
  };
  for (const file of Object.keys(requireCache)) {
    // A copy of a known package is loaded when its main module is: the profiler itself may have read other files of it.
    for (const adapter of adapters) {
      if (!adapter.main.test(file)) continue;
      const dir = packageDir(file, adapter.name);
      add(adapter.name, dir, dir !== undefined && followedCopies.has(dir) ? undefined : 'loaded, but not in a shape the profiler knows (a version it does not support, or a copy it has not met yet: instrument() hands one over)');
    }
    for (const name of unknown) add(name, packageDir(file, name), 'no adapter: its work is not recorded (its OpenTelemetry spans are, through spanProcessor())');
  }
  return { followed, unfollowed };
}

function versionAt(dir: string): string | undefined {
  try {
    const { version } = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { version?: unknown };
    return typeof version === 'string' ? version : undefined;
  } catch {
    return undefined;
  }
}

/** Where the require cache holds a module the app handed over itself, if it does. */
function fileOf(loaded: unknown): string | undefined {
  for (const [file, mod] of Object.entries(requireCache)) if (mod?.exports === loaded) return file;
  return undefined;
}

/**
 * Hook every copy of a known driver the process has loaded (ES modules importing them load them
 * through the require cache too). Runs when a profiler starts and when an app's first request
 * comes: by then the app has opened its connections. Returns whether a driver was hooked.
 */
export function instrumentLoaded(tell: (message: string) => void): boolean {
  let found = false;
  for (const [file, mod] of Object.entries(requireCache)) {
    for (const adapter of drivers) {
      if (!adapter.main.test(file) || !mod?.loaded || !adapter.matches(mod.exports)) continue;
      try {
        found = hookOnce(adapter, mod.exports, file, tell) || found;
      } catch (err) {
        tell(`recording ${adapter.name} failed: ${(err as Error)?.message ?? err}`);
      }
    }
  }
  return found;
}

/** Node's own SQLite, a builtin that no require cache lists: hooked when a profiler starts, where this Node has it. */
export function instrumentBuiltins(tell: (message: string) => void): void {
  const sqlite = nodeSqliteModule();
  if (sqlite === null) return;
  try {
    hookOnce(nodeSqlite, sqlite, undefined, tell);
  } catch (err) {
    tell(`recording node:sqlite failed: ${(err as Error)?.message ?? err}`);
  }
}

/** The packages whose loading makes the profiler look for drivers again: by name, or by a path into their folder. */
const DRIVER_SPECIFIER = /(?:^|[\\/]node_modules[\\/])(?:better-sqlite3|pg|mysql2?|sqlite3|ioredis|redis|@redis\/client|nodemailer|drizzle-orm|bullmq|openai|@anthropic-ai\/sdk|passport|jsonwebtoken|i18next|joi|yup|valibot|ajv|winston|log4js|@nestjs\/(?:core|common))(?:[\\/]|$)/;
let following = false;

/**
 * A driver loaded after the profiler started, in a process that serves no request to find it at
 * (a script, a queue worker): Node (22.15 and later) publishes each require and import, and the
 * loaded copies are hooked as it returns. On Node 20 the profiler's own storage has loaded
 * better-sqlite3 before any script does; elsewhere an app's first request finds the rest.
 */
export function followLoads(found: () => void): void {
  if (following) return;
  following = true;
  const loaded = (message: unknown) => {
    const m = message as { id?: unknown; url?: unknown };
    const specifier = typeof m.id === 'string' ? m.id : typeof m.url === 'string' ? m.url : '';
    if (DRIVER_SPECIFIER.test(specifier)) found();
  };
  for (const name of ['module.require', 'module.import']) {
    dc.tracingChannel(name).subscribe({ start() {}, end: loaded, asyncStart() {}, asyncEnd: loaded, error() {} });
  }
}

/**
 * Record a driver module the profiler cannot find by itself (a bundled app, a copy loaded after
 * the first request): `instrument(pg)`. Returns the adapter's name, or throws for a module no
 * adapter knows.
 */
export function instrument(loaded: unknown, tell: (message: string) => void = (message) => process.stderr.write(`[web-profiler] ${message}\n`)): string {
  const namespace = (loaded as { default?: unknown } | null)?.default ?? loaded;
  const adapter = drivers.find((d) => d.matches(namespace)) ?? drivers.find((d) => d.matches(loaded));
  if (adapter === undefined) throw new TypeError(`instrument(): not a driver the profiler knows (${drivers.map((d) => d.name).join(', ')})`);
  const target = adapter.matches(namespace) ? namespace : loaded;
  hookOnce(adapter, target, fileOf(target), tell);
  return adapter.name;
}

export const adapterNamed = (name: string): DriverAdapter | undefined => drivers.find((d) => d.name === name);
