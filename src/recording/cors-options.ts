import { Session } from 'node:inspector';
import type { Check } from './checks.js';
import { mountOf } from './mounts.js';

type Layer = { handle?: unknown };

/**
 * What a cors() middleware was made with, for a cross-origin request it saw: the allow-list a
 * refused Origin was checked against (an array, a RegExp, a string, or the app's function that
 * decides), the methods, headers and credentials it allows, and the app's line that mounted it.
 * cors keeps its options in the middleware's closure only, and wrapping its factory would miss
 * every middleware made before the profiler loaded: they are read from the closure (V8's
 * [[Scopes]], through an inspector session of this thread), once a middleware. Noted as a check
 * the security panel folds into the verdict it reads off the headers (collectors/security.ts).
 */
export function corsOptionsCheck(trail: unknown[]): Check | undefined {
  for (let i = 0; i < trail.length; i += 2) {
    const layer = trail[i] as Layer | null;
    const handle = layer?.handle;
    if (typeof handle !== 'function' || handle.name !== 'corsMiddleware') continue;
    const options = optionsOf(handle);
    if (options === null) return undefined;
    return { library: 'cors', verdict: 'passed', reason: CORS_OPTIONS, fields: options, at: mountOf(layer as object) };
  }
  return undefined;
}

/** The reason of the check that carries a cors() middleware's options, not a verdict. */
export const CORS_OPTIONS = 'cors() options';

const read = new WeakMap<object, Record<string, unknown> | null>();

function optionsOf(handle: object): Record<string, unknown> | null {
  let options = read.get(handle);
  if (options === undefined) {
    try {
      options = describe(closureValue(handle, 'o'));
    } catch {
      options = null;
    }
    read.set(handle, options);
  }
  return options;
}

/** cors's options as the panel shows them: its origin setting as text, and what else it allows. */
function describe(o: unknown): Record<string, unknown> | null {
  if (typeof o === 'function') return { allowed: `decided per request by the app's function ${o.name || '(anonymous)'}` };
  if (o === undefined || o === null) return { allowed: '* (any origin: the default)' };
  if (typeof o !== 'object') return null;
  const { origin, methods, allowedHeaders, credentials } = o as Record<string, unknown>;
  const out: Record<string, unknown> = { allowed: originText(origin) };
  if (methods !== undefined) out.methods = String(methods);
  if (allowedHeaders !== undefined) out.allowedHeaders = String(allowedHeaders);
  if (credentials !== undefined) out.credentials = Boolean(credentials);
  return out;
}

function originText(origin: unknown): unknown {
  if (origin === undefined || origin === '*') return '* (any origin)';
  if (origin === true) return 'the request\'s own origin (any origin reflected)';
  if (origin === false) return 'none (CORS off)';
  if (typeof origin === 'function') return `decided by the app's function ${origin.name || '(anonymous)'}`;
  // A RegExp as its literal: /\.example\.org$/.
  if (Array.isArray(origin)) return origin.map(String);
  return String(origin);
}

let session: Session | undefined;
const PROBE = Symbol.for('web-profiler.closure-probe');
const GROUP = 'web-profiler';

/** The value of variable `name` in the innermost closure scope of `fn` that has it. */
function closureValue(fn: object, name: string): unknown {
  if (session === undefined) {
    session = new Session();
    session.connect();
  }
  const s = session;
  // In this thread's own session the inspector answers before post() returns.
  const post = <T>(method: string, params: object): T => {
    let result: T | undefined;
    let error: Error | null = null;
    s.post(method, params, (err, r) => {
      error = err;
      result = r as T;
    });
    if (error !== null) throw error;
    return result as T;
  };
  const global = globalThis as Record<symbol, unknown>;
  global[PROBE] = fn;
  try {
    const { result } = post<{ result: { objectId?: string } }>('Runtime.evaluate', { expression: `globalThis[Symbol.for('web-profiler.closure-probe')]`, objectGroup: GROUP });
    const internal = post<{ internalProperties?: { name: string; value?: { objectId?: string } }[] }>('Runtime.getProperties', { objectId: result.objectId, ownProperties: false });
    const scopes = internal.internalProperties?.find((p) => p.name === '[[Scopes]]')?.value?.objectId;
    if (scopes === undefined) return undefined;
    const list = post<{ result: { value?: { objectId?: string; description?: string } }[] }>('Runtime.getProperties', { objectId: scopes, ownProperties: true });
    for (const scope of list.result) {
      if (!scope.value?.description?.startsWith('Closure') || scope.value.objectId === undefined) continue;
      const vars = post<{ result: { name: string; value?: { objectId?: string; value?: unknown; type?: string } }[] }>('Runtime.getProperties', { objectId: scope.value.objectId, ownProperties: true });
      const found = vars.result.find((v) => v.name === name);
      if (found === undefined) continue;
      if (found.value?.objectId === undefined) return found.value?.type === 'undefined' ? undefined : found.value?.value;
      post('Runtime.callFunctionOn', { objectId: found.value.objectId, functionDeclaration: `function () { globalThis[Symbol.for('web-profiler.closure-probe')] = this; }` });
      return global[PROBE];
    }
    return undefined;
  } finally {
    delete global[PROBE];
    post('Runtime.releaseObjectGroup', { objectGroup: GROUP });
  }
}
