import { callerFrame } from '../recording/caller.js';
import { noteCheck } from '../recording/checks.js';
import type { WorkContext } from '../recording/context.js';
import { requestOf } from '../recording/inside.js';
import type { DriverAdapter } from './driver.js';

type Verify = (token: unknown, key: unknown, options?: unknown, callback?: unknown) => unknown;

/** What a verified token's payload says of whom and for what: never its other claims, which may be anything. */
const CLAIMS = ['sub', 'iss', 'aud', 'exp', 'nbf', 'iat', 'scope'];

/**
 * jsonwebtoken's verify(), on the module the app requires (express-jwt calls it there too): each
 * verification, its verdict and why, as the library said it (`jwt expired` and when, `invalid
 * signature`, `jwt audience invalid. expected: …`), with the app's line that called it. The
 * token itself and the key are never kept.
 */
function verdict(ctx: WorkContext, err: unknown, payload: unknown, options: unknown, at: string | undefined): void {
  const wanted = wantedOf(options);
  if (err) {
    const e = err as { name?: unknown; message?: unknown; expiredAt?: unknown; date?: unknown; inner?: { message?: unknown } };
    noteCheck(ctx, {
      library: 'jsonwebtoken',
      verdict: 'refused',
      reason: String(e.message ?? err),
      fields: { error: e.name, ...(e.expiredAt instanceof Date ? { expiredAt: e.expiredAt.toISOString() } : {}), ...(e.date instanceof Date ? { notBefore: e.date.toISOString() } : {}), ...(e.inner?.message === undefined ? {} : { inner: String(e.inner.message) }), ...wanted },
      at,
    });
    return;
  }
  const claims: Record<string, unknown> = {};
  if (payload !== null && typeof payload === 'object') {
    const p = ((payload as { payload?: unknown }).payload ?? payload) as Record<string, unknown>;
    for (const key of CLAIMS) {
      const value = Object.getOwnPropertyDescriptor(p, key)?.value;
      if (value !== undefined) claims[key] = value;
    }
  }
  noteCheck(ctx, { library: 'jsonwebtoken', verdict: 'passed', reason: 'verified', fields: { ...claims, ...wanted }, at });
}

/** The audience, issuer and algorithms the app asked for: what a refusal was measured against. */
function wantedOf(options: unknown): Record<string, unknown> {
  if (options === null || typeof options !== 'object') return {};
  const o = options as Record<string, unknown>;
  const wanted: Record<string, unknown> = {};
  for (const key of ['audience', 'issuer', 'algorithms', 'subject', 'maxAge']) if (o[key] !== undefined) wanted[key] = o[key] instanceof RegExp ? String(o[key]) : o[key];
  return wanted;
}

export const jsonwebtoken: DriverAdapter = {
  name: 'jsonwebtoken',
  panel: 'security',
  main: /[\\/]node_modules[\\/]jsonwebtoken[\\/]index\.js$/,
  matches: (loaded) => typeof (loaded as { verify?: unknown } | null)?.verify === 'function' && typeof (loaded as { TokenExpiredError?: unknown }).TokenExpiredError === 'function',
  hook(loaded) {
    const module = loaded as { verify: Verify };
    const original = module.verify;
    module.verify = function verify(this: unknown, token: unknown, key: unknown, options?: unknown, callback?: unknown) {
      const ctx = requestOf();
      if (ctx === undefined) return original.call(this, token, key, options, callback);
      const at = callerFrame();
      const given = typeof options === 'function' ? options : callback;
      const opts = typeof options === 'function' ? undefined : options;
      if (typeof given === 'function') {
        return original.call(this, token, key, opts, function (this: unknown, err: unknown, payload: unknown) {
          verdict(ctx, err, payload, opts, at);
          return (given as (...a: unknown[]) => unknown).call(this, err, payload);
        });
      }
      let payload: unknown;
      try {
        payload = original.call(this, token, key, opts);
      } catch (err) {
        verdict(ctx, err, undefined, opts, at);
        throw err;
      }
      verdict(ctx, undefined, payload, opts, at);
      return payload;
    } as Verify;
  },
};
