import { dataOnly } from '../recording/plain.js';
import { followedSessions, sessionFingerprint, sessionNoted, type SessionEvent } from '../recording/session.js';
import type { DriverAdapter } from './driver.js';

type Method = (this: unknown, ...args: unknown[]) => unknown;

/** The most of a session's attributes kept as the request found them. */
const FOUND_BUDGET = 64 * 1024;

/** A method of `proto`, wrapped to note `event` on the session's request before it runs. */
function noting(proto: Record<string, unknown>, name: string, event: SessionEvent): void {
  const original = proto[name];
  if (typeof original !== 'function') return;
  proto[name] = function (this: unknown, ...args: unknown[]) {
    // The Session's request: express-session defines it on each session, as data.
    const req = Object.getOwnPropertyDescriptor(this as object, 'req')?.value;
    const events = sessionNoted(req)?.events;
    // Saved twice (by the app, then by express-session as the answer ends) is saved.
    if (events !== undefined && events[events.length - 1] !== event) events.push(event);
    return (original as Method).apply(this, args);
  };
}

/**
 * express-session: the attributes a request's session had when the store gave them (a copy made
 * then: the app changes the same objects later), and each save, regenerate and destroy. Its
 * attributes as the request left them are read as it ends (recording/session.ts).
 */
export const expressSession: DriverAdapter = {
  name: 'express-session',
  panel: 'security',
  main: /[\\/]node_modules[\\/]express-session[\\/]index\.js$/,
  matches: (loaded) => typeof loaded === 'function' && typeof (loaded as { Store?: unknown }).Store === 'function' && typeof (loaded as { Session?: unknown }).Session === 'function',
  hook(loaded) {
    const { Store, Session } = loaded as { Store: { prototype: Record<string, unknown> }; Session: { prototype: Record<string, unknown> } };
    const create = Store.prototype.createSession;
    if (typeof create !== 'function') return;
    Store.prototype.createSession = function createSession(this: unknown, req: unknown, sess: unknown) {
      const state = sessionNoted(req);
      // reload() gives the store's copy again: the request found the first.
      if (state !== undefined && state.found === undefined) {
        const found = dataOnly(sess, FOUND_BUDGET);
        state.found = found.value;
        state.fingerprint = sessionFingerprint(req);
        if (found.cut) state.cut = true;
      }
      return (create as Method).call(this, req, sess);
    };
    noting(Session.prototype, 'save', 'saved');
    noting(Session.prototype, 'regenerate', 'regenerated');
    noting(Session.prototype, 'destroy', 'destroyed');
    followedSessions.add(Session.prototype);
  },
};
