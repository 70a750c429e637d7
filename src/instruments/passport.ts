import { layerNamed, mountedLine, noteCheck } from '../recording/checks.js';
import type { WorkContext } from '../recording/context.js';
import { requestOf } from '../recording/inside.js';
import type { DriverAdapter } from './driver.js';
import { ownValue, userNamed } from '../recording/who.js';
import { sessionFingerprint } from '../recording/session.js';

type Strategy = { name?: unknown; authenticate: (this: Record<string, unknown>, req: unknown, options?: unknown) => unknown };

/**
 * passport: each strategy tried, in order, and its verdict as the strategy gave it. passport makes
 * the strategy of a request with Object.create() of the registered one and adds success, fail,
 * error, pass and redirect to it before calling authenticate(): the registered strategy is handed
 * out (by `_strategy`) behind an object of ours whose authenticate() records those calls on that
 * request's own object. Nothing the app holds changes.
 */
const fronts = new WeakMap<object, object>();

function frontOf(strategy: Strategy): object {
  let front = fronts.get(strategy);
  if (front !== undefined) return front;
  front = Object.create(strategy, {
    authenticate: {
      configurable: true,
      writable: true,
      value: function authenticate(this: Record<string, unknown>, req: unknown, options?: unknown) {
        const ctx = requestOf();
        if (ctx !== undefined) watch(this, ctx, String(strategy.name ?? 'strategy'), req);
        return strategy.authenticate.call(this, req, options);
      },
    },
  }) as object;
  fronts.set(strategy, front);
  return front;
}

/** The request's strategy object: its verdicts noted as passport is told them. */
function watch(self: Record<string, unknown>, ctx: WorkContext, strategy: string, req: unknown): void {
  const at = mountedLine(layerNamed(ctx));
  const note = (verdict: 'passed' | 'refused' | 'error', reason: string, fields: Record<string, unknown>) => noteCheck(ctx, { library: 'passport', verdict, reason, fields: { strategy, ...fields }, at });
  const around = (name: string, record: (...args: unknown[]) => void) => {
    const given = self[name];
    if (typeof given !== 'function') return;
    self[name] = function (this: unknown, ...args: unknown[]) {
      try {
        record(...args);
      } catch {
        // A verdict that cannot be read is not worth the app's sign-in.
      }
      return given.apply(this, args);
    };
  };
  around('success', (user, info) => note('passed', 'authenticated', { user: userNamed(user), ...infoOf(info) }));
  around('fail', (challenge, status) => {
    const message = typeof challenge === 'string' ? challenge : (challenge as { message?: unknown } | undefined)?.message;
    note('refused', typeof message === 'string' && message !== '' ? message : 'failed', { status: typeof challenge === 'number' ? challenge : status });
  });
  around('error', (err) => note('error', String((err as Error)?.message ?? err), {}));
  // The session strategy says pass() either way: whether it restored a user is on the request.
  around('pass', () => {
    const property = ownValue(req, '_userProperty');
    const user = ownValue(req, typeof property === 'string' ? property : 'user');
    note('passed', user === undefined ? 'passed on (no one signed in)' : 'user restored from the session', user === undefined ? {} : { user: userNamed(user), fingerprint: sessionFingerprint(req) });
  });
  around('redirect', (url, status) => note('passed', 'redirected', { url, status }));
}

const infoOf = (info: unknown): Record<string, unknown> => {
  const message = (info as { message?: unknown } | undefined)?.message;
  return typeof message === 'string' ? { message } : {};
};

export const passport: DriverAdapter = {
  name: 'passport',
  panel: 'security',
  main: /[\\/]node_modules[\\/]passport[\\/]lib[\\/]index\.js$/,
  matches: (loaded) => typeof (loaded as { Authenticator?: unknown } | null)?.Authenticator === 'function',
  hook(loaded) {
    const proto = (loaded as { Authenticator: { prototype: Record<string, unknown> } }).Authenticator.prototype;
    const lookup = proto._strategy;
    if (typeof lookup !== 'function') return;
    proto._strategy = function _strategy(this: unknown, name: unknown) {
      const strategy = lookup.call(this, name) as Strategy | undefined;
      return strategy !== null && typeof strategy === 'object' && typeof strategy.authenticate === 'function' ? frontOf(strategy) : strategy;
    };
  },
};
