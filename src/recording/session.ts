import { createHash, createHmac } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { contextOf, type RequestContext } from './context.js';
import { dataOnly } from './plain.js';
import { ownValue } from './who.js';

/** What happened to a session during a request, in the order it happened. */
export type SessionEvent = 'created' | 'regenerated' | 'saved' | 'destroyed';

/** What express-session's hooks note of a request's session as it runs (see instruments/express-session.ts). */
export interface SessionState {
  /** Its attributes as the store gave them, copied then: the app changes the same objects later. */
  found?: unknown;
  /** The fingerprint of the session the store gave (see CapturedSession.fingerprint). */
  fingerprint?: string;
  cut?: boolean;
  events: SessionEvent[];
}

/** express-session's Session prototypes whose store loads are followed: a session of another copy was not seen arriving. */
export const followedSessions = new WeakSet<object>();

/**
 * A request's session as it crosses to the writer: its attributes as the request found them and
 * as it left them, copied as data (own data properties: no getter or Proxy trap of the app's
 * runs), and what happened to it. Its id is never kept.
 */
export interface CapturedSession {
  library: 'express-session' | 'cookie-session';
  /** The store's class (MemoryStore, RedisStore). */
  store?: string;
  /** Absent: the request brought no session. */
  found?: unknown;
  /** null: it was destroyed, or none was left. */
  left: unknown;
  events: SessionEvent[];
  /** The session it came with: the same for every request of one session, and no part of its id (a session's id is its key). */
  fingerprint?: string;
  /** The session it left with, where that is another (regenerated on sign-in or sign-out): its fingerprint. */
  renewed?: string;
  /** A copy was cut to fit its budget. */
  cut?: true;
}

/** The session state of the request `req` belongs to, for the hooks that see only the request. */
export function sessionNoted(req: unknown): SessionState | undefined {
  const ctx = contextOf(ownValue(req, 'res'));
  return ctx === undefined ? undefined : (ctx.session ??= { events: [] });
}

/** A fingerprint of express-session's id: see CapturedSession.fingerprint. */
export function sessionFingerprint(req: unknown): string | undefined {
  const id = ownValue(req, 'sessionID');
  return typeof id === 'string' ? createHash('sha256').update(id).digest('hex').slice(0, 8) : undefined;
}

/**
 * The request's session as it ends, for express-session (its hooks noted the rest) and
 * cookie-session. A request with neither costs one property lookup.
 */
export function captureSession(ctx: RequestContext, req: IncomingMessage, res: ServerResponse, budget: number): { session: CapturedSession; size: number } | undefined {
  const held = Object.getOwnPropertyDescriptor(req, 'session');
  const state = ctx.session;
  if (held === undefined && state === undefined) return undefined;
  let cut = false;
  let size = 512;
  const copy = (value: unknown) => {
    const made = dataOnly(value, budget);
    cut ||= made.cut;
    size += 2 * made.size;
    return made.value;
  };
  let session: CapturedSession;
  if (held?.get !== undefined) {
    // cookie-session's accessor (its options beside it mark it), read once its cookie has gone out: reading it then changes nothing the client gets.
    if (ownValue(req, 'sessionOptions') === undefined || !res.headersSent) return undefined;
    let sess: unknown;
    try {
      sess = held.get.call(req);
    } catch {
      return undefined;
    }
    // What the cookie held, as cookie-session decoded it (its context keeps the cookie's text); a session the app set to null or replaced has none left: its cookie as sent, where its signature holds.
    const encoded = ownValue(ownValue(sess, '_ctx'), '_val') ?? sentCookie(req);
    const found = typeof encoded === 'string' ? decoded(encoded) : undefined;
    const left = sess === null || sess === undefined ? null : copy(sess);
    const events: SessionEvent[] = [];
    if (found === undefined && left !== null && Object.keys(left as object).length > 0) events.push('created', 'saved');
    else if (found !== undefined && left === null) events.push('destroyed');
    else if (found !== undefined && JSON.stringify(found) !== JSON.stringify(left)) events.push('saved');
    session = { library: 'cookie-session', found, left, events };
  } else {
    const events = state?.events ?? [];
    cut ||= state?.cut === true;
    // A followed session the store did not give was made for this request (a new visitor; regenerate's new one says regenerated).
    const followed = held !== undefined && typeof held.value === 'object' && held.value !== null && followedSessions.has(Object.getPrototypeOf(held.value) as object);
    if (followed && state?.found === undefined && !events.includes('regenerated')) {
      // It is the visitor's once saved: unsaved (saveUninitialized: false, nothing set) it sent no cookie and is gone.
      if (!events.includes('saved')) return undefined;
      events.unshift('created');
    }
    const store = ownValue(req, 'sessionStore');
    const made = ownValue(store === undefined ? undefined : Object.getPrototypeOf(store), 'constructor');
    const name = typeof made === 'function' ? Object.getOwnPropertyDescriptor(made, 'name')?.value : undefined;
    const now = sessionFingerprint(req);
    const fingerprint = state?.fingerprint ?? now;
    session = {
      library: 'express-session',
      store: typeof name === 'string' ? name : undefined,
      found: state?.found,
      left: held === undefined ? null : copy(held.value),
      events,
      fingerprint,
      renewed: now !== fingerprint ? now : undefined,
    };
  }
  if (cut) session.cut = true;
  return { session, size };
}

/**
 * cookie-session's cookie as the client sent it, by the name its options give (the middleware's,
 * inherited: read as data), and only where its signature holds for one of the options' keys, as
 * cookie-session checks it (keygrip: HMAC-SHA1 of `name=value`, base64url): a forged cookie is
 * not shown as the session the request brought.
 */
function sentCookie(req: IncomingMessage): string | undefined {
  const options = ownValue(req, 'sessionOptions');
  const inherited = options === undefined ? undefined : Object.getPrototypeOf(options);
  const option = (key: string) => ownValue(options, key) ?? ownValue(inherited, key);
  const name = option('name') ?? 'session';
  const header = req.headers.cookie;
  if (typeof name !== 'string' || typeof header !== 'string') return undefined;
  const sent = (cookie: string) => {
    for (const pair of header.split(';')) {
      const at = pair.indexOf('=');
      if (at > 0 && pair.slice(0, at).trim() === cookie) return pair.slice(at + 1).trim();
    }
    return undefined;
  };
  const value = sent(name);
  if (value === undefined || option('signed') === false) return value;
  const signature = sent(`${name}.sig`);
  const secret = option('secret');
  const keys = option('keys') ?? (secret === undefined ? undefined : [secret]);
  if (signature === undefined || !Array.isArray(keys)) return undefined;
  const signs = (key: unknown) => typeof key === 'string' && createHmac('sha1', key).update(`${name}=${value}`).digest('base64url') === signature;
  return keys.some(signs) ? value : undefined;
}

function decoded(text: string): unknown {
  try {
    return JSON.parse(Buffer.from(text, 'base64').toString('utf8'));
  } catch {
    return undefined;
  }
}
