import { createRequire } from 'node:module';
import path from 'node:path';
import { callerFrame } from '../recording/caller.js';
import { awaitedFrom, requestOf, wantsCaller } from '../recording/inside.js';
import { ownerOf, type DriverAdapter } from './driver.js';
import { esmCopy } from './esm-copy.js';

type Then = (this: unknown, ...args: unknown[]) => unknown;
const hooked = new WeakSet<object>();

/**
 * Drizzle runs a query when the app awaits it (QueryPromise#then, called from a job of its own:
 * the app's line is no longer on the stack when the driver sends the statement). `await` reads
 * `then` first, on the app's line: a getter takes the line there, and the statements the call
 * sends (synchronously, as drizzle sends them) take it as theirs. Its queries themselves are the
 * driver's (pg, mysql2, better-sqlite3), recorded as any. Drizzle mixes QueryPromise's then into
 * its builders (select, insert, update, delete of each dialect): those prototypes are found among
 * the dialects' exports by that very function.
 */
export const drizzle: DriverAdapter = {
  name: 'drizzle-orm',
  panel: 'db',
  main: /[\\/]node_modules[\\/]drizzle-orm[\\/]query-promise\.cjs$/,
  matches: (loaded) => typeof (loaded as { QueryPromise?: { prototype?: { then?: unknown } } })?.QueryPromise?.prototype?.then === 'function',
  hook(loaded, file) {
    const load = (name: string) => (file === undefined ? undefined : createRequire(file)(path.join(path.dirname(file), name, 'index.cjs')));
    hookQueries(loaded, DIALECTS.map((d) => attempt(() => load(d))));
  },
};

const DIALECTS = ['sqlite-core', 'pg-core', 'mysql-core'];

const attempt = (fn: () => unknown): unknown => {
  try {
    return fn();
  } catch {
    return undefined;
  }
};

/** Whether the app's entry is an ES module (a CommonJS entry is require.main). */
const esmEntry = () => createRequire(__filename).main == null;

/** drizzle-orm is also an ES module: the copy an app that imports it runs. */
export async function hookEsmDrizzle(tell: (message: string) => void): Promise<void> {
  try {
    const esm = (cjs: string) => (/query-promise\.cjs$/.test(cjs) ? path.join(path.dirname(cjs), 'query-promise.js') : undefined);
    const copy = await esmCopy('drizzle-orm/query-promise', esm);
    if (copy === undefined) return;
    // Builders evaluated after this copy their `then` from the hooked QueryPromise (drizzle's
    // applyMixins copies the property's descriptor). The dialects are looked through only where an
    // app may have evaluated them before: an ES module entry imports them before its body runs. A
    // CommonJS entry runs the CommonJS copies, and loading the three would cost its start a second
    // and some 250 MB of heap (Node 24) for code it does not run.
    const dialects = esmEntry() ? await Promise.all(DIALECTS.map((d) => esmCopy(`drizzle-orm/${d}`, (cjs) => cjs.replace(/\.cjs$/, '.js')).catch(() => undefined))) : [];
    hookQueries(copy.module, dialects.map((d) => d?.module));
  } catch (err) {
    // A module system that loads no ES module (jest's) runs the CommonJS copy, hooked as any.
    if ((err as Error)?.name === 'SyntaxError') return;
    tell(`drizzle-orm (ES module): ${(err as Error)?.message ?? err}: its queries keep the line that answered the request`);
  }
}

function hookQueries(loaded: unknown, dialects: unknown[]): void {
  const proto = ownerOf((loaded as { QueryPromise?: { prototype?: object } })?.QueryPromise?.prototype, 'then');
  const then = proto && Object.getOwnPropertyDescriptor(proto, 'then')?.value;
  if (proto === undefined || typeof then !== 'function') return;
  hookThen(proto, then as Then);
  for (const dialect of dialects) {
    for (const value of Object.values((dialect ?? {}) as Record<string, unknown>)) {
      const own = typeof value === 'function' ? (value as { prototype?: object }).prototype : undefined;
      if (own !== undefined && Object.getOwnPropertyDescriptor(own, 'then')?.value === then) hookThen(own, then as Then);
    }
  }
}

function hookThen(proto: object, then: Then): void {
  if (hooked.has(proto)) return;
  hooked.add(proto);
  Object.defineProperty(proto, 'then', {
    configurable: true,
    get() {
      const ctx = requestOf();
      if (ctx === undefined || !wantsCaller(ctx)) return then;
      const caller = callerFrame();
      return function (this: unknown, ...args: unknown[]) {
        return awaitedFrom(caller, () => then.apply(this, args));
      };
    },
    // A subclass or an app that sets its own then keeps it.
    set(value: unknown) {
      Object.defineProperty(this, 'then', { value, writable: true, configurable: true, enumerable: false });
    },
  });
}
