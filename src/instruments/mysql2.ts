import { AsyncResource } from 'node:async_hooks';
import dc from 'node:diagnostics_channel';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { WorkContext } from '../recording/context.js';
import { appCaller, queryEnded, queryStarted, requestOf, type QueryEntry } from '../recording/inside.js';
import { ownerOf, type DriverAdapter } from './driver.js';

/** What mysql2 publishes about a statement: the SQL as sent (values written in, for query()), and its values. */
interface Traced {
  query: string;
  values?: unknown;
  result?: unknown;
  error?: unknown;
}

const open = new WeakMap<object, { ctx: WorkContext; entry: QueryEntry }>();

/** A pool's getConnection, from the app's call to the connection handed over. */
interface Asked {
  ctx: WorkContext;
  caller: string | undefined;
  from: number;
}
const asking = new WeakMap<object, Asked>();
/**
 * The pool handovers whose callbacks are running: pool.query and pool.execute run their statement
 * in there, where async context is the connection's (whichever request released it), not the asker's.
 */
const handovers: ((Asked & { wait: number }) | null)[] = [];

function rowsOf(result: unknown): number | undefined {
  if (Array.isArray(result)) return result.length;
  const affected = (result as { affectedRows?: unknown } | undefined)?.affectedRows;
  return typeof affected === 'number' ? affected : undefined;
}

function ended(message: object): void {
  const call = open.get(message);
  if (call === undefined) return;
  open.delete(message);
  const { result, error } = message as Traced;
  queryEnded(call.ctx, call.entry, error ? undefined : rowsOf(result), error ?? undefined);
}

let subscribed = false;

/** The first version that publishes its statements on tracing channels. */
const CHANNELS_FROM = [3, 20];

function versionOf(file: string | undefined): number[] | undefined {
  if (file === undefined) return undefined;
  try {
    const { version } = JSON.parse(readFileSync(path.join(path.dirname(file), 'package.json'), 'utf8')) as { version: string };
    return version.split('.').map(Number);
  } catch {
    return undefined;
  }
}

const publishes = (version: number[] | undefined) =>
  version === undefined || version[0] > CHANNELS_FROM[0] || (version[0] === CHANNELS_FROM[0] && version[1] >= CHANNELS_FROM[1]);

/**
 * mysql2 ≥ 3.20 publishes each query() and execute() on the tracing channels `mysql2:query` and
 * `mysql2:execute`: subscribed, nothing is wrapped. The start comes in the code that ran the
 * statement; the callback's (or the promise's) settling ends it. Older copies (2.x, 3.0 to 3.19,
 * which apps lock) publish nothing: their commands are followed where a connection queues them
 * (see hookCommands).
 */
export const mysql2: DriverAdapter = {
  name: 'mysql2',
  panel: 'db',
  // An npm alias (`"mysql2-legacy": "npm:mysql2@2"`) is the same package under another folder's name.
  main: /[\\/]node_modules[\\/]mysql2(?:-[^\\/]+)?[\\/]index\.js$/,
  matches: (loaded) => typeof (loaded as { createPool?: unknown })?.createPool === 'function' && typeof (loaded as { format?: unknown }).format === 'function',
  hook(loaded, file, tell) {
    if (!publishes(versionOf(file)) || typeof dc.tracingChannel !== 'function') {
      if (!hookCommands(loaded as Mysql2Module)) tell(`mysql2 ${versionOf(file)?.join('.') ?? ''} at ${file}: neither its tracing channels (3.20 and later) nor its Connection.prototype.addCommand were found, so its queries are not recorded; mysql2 3.20 or later records them`);
      return;
    }
    if (subscribed) return;
    subscribed = true;
    dc.tracingChannel('mysql2:pool:connect').subscribe({
      start(message) {
        try {
          const ctx = requestOf();
          if (ctx !== undefined) asking.set(message as object, { ctx, caller: appCaller(), from: performance.now() });
        } catch {
          // Unrecorded.
        }
      },
      asyncStart(message) {
        const asked = asking.get(message as object);
        // null: asked for outside any request, so what runs in there belongs to none.
        handovers.push(asked === undefined ? null : { ...asked, wait: performance.now() - asked.from });
      },
      asyncEnd(message) {
        asking.delete(message as object);
        handovers.pop();
      },
      end() {},
      error() {},
    });
    for (const name of ['mysql2:query', 'mysql2:execute']) {
      dc.tracingChannel(name).subscribe({
        start(message) {
          // What a subscriber throws, Node rethrows as an uncaught exception: nothing here may throw.
          try {
            const handover = handovers[handovers.length - 1];
            if (handover === null) return;
            const ctx = handover?.ctx ?? requestOf();
            if (ctx === undefined) return;
            const m = message as Traced;
            const entry = queryStarted(ctx, 'mysql', String(m.query), name === 'mysql2:execute' ? m.values : undefined, handover?.caller);
            if (handover !== undefined) entry.wait = handover.wait;
            open.set(message as object, { ctx, entry });
          } catch {
            // The statement runs unrecorded.
          }
        },
        end(message) {
          // A statement that threw as it was called has no async part.
          if ((message as Traced).error !== undefined) ended(message as object);
        },
        asyncStart: (message) => ended(message as object),
        asyncEnd() {},
        error() {},
      });
    }
  },
};

interface Command {
  constructor: { name: string };
  sql?: string;
  query?: string;
  values?: unknown;
  onResult?: (err: unknown, rows?: unknown, ...rest: unknown[]) => unknown;
  emit(event: string, ...args: unknown[]): boolean;
}
interface Mysql2Module {
  Connection?: { prototype: object };
  Pool?: { prototype: object };
}

const commandsHooked = new WeakSet<object>();

/**
 * mysql2 before its tracing channels: every statement becomes a Query or Execute command that a
 * connection queues with addCommand(), on the caller's stack. The command ends in its callback
 * (what the promise API passes too), or in its 'end' event when it streams. A pool hands a
 * connection over in a callback that may run where another request released it: that callback
 * is bound to the asker's context, and what it runs is the asker's (see handovers).
 */
function hookCommands(loaded: Mysql2Module): boolean {
  const connection = ownerOf(loaded.Connection?.prototype, 'addCommand');
  if (connection === undefined || typeof connection.addCommand !== 'function') return false;
  if (!commandsHooked.has(connection)) {
    commandsHooked.add(connection);
    const addCommand = connection.addCommand as (this: unknown, cmd: Command) => unknown;
    connection.addCommand = function (this: unknown, cmd: Command) {
      try {
        if (cmd?.constructor?.name === 'Query' || cmd?.constructor?.name === 'Execute') follow(cmd);
      } catch {
        // The statement runs unrecorded.
      }
      return addCommand.call(this, cmd);
    };
  }
  const pool = ownerOf(loaded.Pool?.prototype, 'getConnection');
  if (pool !== undefined && typeof pool.getConnection === 'function' && !commandsHooked.has(pool)) {
    commandsHooked.add(pool);
    const getConnection = pool.getConnection as (this: unknown, cb: (...args: unknown[]) => unknown) => unknown;
    pool.getConnection = function (this: unknown, cb: (...args: unknown[]) => unknown) {
      const ctx = typeof cb === 'function' ? requestOf() : undefined;
      if (ctx === undefined) return getConnection.call(this, cb);
      const asked: Asked = { ctx, caller: appCaller(), from: performance.now() };
      const bound = AsyncResource.bind(function (this: unknown, ...args: unknown[]) {
        handovers.push({ ...asked, wait: performance.now() - asked.from });
        try {
          return cb.apply(this, args);
        } finally {
          handovers.pop();
        }
      });
      return getConnection.call(this, bound);
    };
  }
  return true;
}

/**
 * A statement's parameters are kept where the server binds them (execute()); query() formats its
 * values into the SQL before it is sent, so they are in the SQL (redacted there with it) and not
 * kept beside it: a copy beside it would keep what the SQL's redaction took out.
 */
function follow(cmd: Command): void {
  const handover = handovers[handovers.length - 1];
  if (handover === null) return;
  const ctx = handover?.ctx ?? requestOf();
  if (ctx === undefined) return;
  const entry = queryStarted(ctx, 'mysql', String(cmd.sql ?? cmd.query ?? ''), cmd.constructor.name === 'Execute' ? cmd.values : undefined, handover?.caller);
  if (handover !== undefined) entry.wait = handover.wait;
  const onResult = cmd.onResult;
  if (typeof onResult === 'function') {
    cmd.onResult = function (this: unknown, err: unknown, rows?: unknown, ...rest: unknown[]) {
      queryEnded(ctx, entry, err ? undefined : rowsOf(rows), err ?? undefined);
      return onResult.call(this, err, rows, ...rest);
    };
    return;
  }
  // Streamed (no callback): its rows come as 'result' events, and 'end' closes it, errors first.
  let rows = 0;
  let error: unknown;
  const emit = cmd.emit;
  cmd.emit = function (this: Command, event: string, ...args: unknown[]) {
    if (event === 'result') rows++;
    else if (event === 'error') error = args[0];
    else if (event === 'end') queryEnded(ctx, entry, error === undefined ? rows : undefined, error);
    return emit.call(this, event, ...args);
  };
}
