import dc from 'node:diagnostics_channel';
import { performance } from 'node:perf_hooks';
import type { RequestContext } from '../recording/context.js';
import { callerFrame } from '../recording/caller.js';
import { queryEnded, queryStarted, requestOf, type QueryEntry } from '../recording/inside.js';
import type { DriverAdapter } from './driver.js';

/** What mysql2 publishes about a statement: the SQL as sent (values written in, for query()), and its values. */
interface Traced {
  query: string;
  values?: unknown;
  result?: unknown;
  error?: unknown;
}

const open = new WeakMap<object, { ctx: RequestContext; entry: QueryEntry }>();

/** A pool's getConnection, from the app's call to the connection handed over. */
interface Asked {
  ctx: RequestContext;
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

/**
 * mysql2 ≥ 3.20 publishes each query() and execute() on the tracing channels `mysql2:query` and
 * `mysql2:execute`: subscribed, nothing is wrapped. The start comes in the code that ran the
 * statement; the callback's (or the promise's) settling ends it. Older mysql2 publishes nothing
 * and is not recorded.
 */
export const mysql2: DriverAdapter = {
  name: 'mysql2',
  main: /[\\/]node_modules[\\/]mysql2[\\/]index\.js$/,
  matches: (loaded) => typeof (loaded as { createPool?: unknown })?.createPool === 'function' && typeof (loaded as { format?: unknown }).format === 'function',
  hook() {
    if (subscribed || typeof dc.tracingChannel !== 'function') return;
    subscribed = true;
    dc.tracingChannel('mysql2:pool:connect').subscribe({
      start(message) {
        try {
          const ctx = requestOf();
          if (ctx !== undefined) asking.set(message as object, { ctx, caller: callerFrame(), from: performance.now() });
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
            const entry = queryStarted(ctx, 'mysql', String(m.query), m.values, handover?.caller);
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
