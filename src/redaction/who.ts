import type { Captured } from '../recording/capture.js';
import type { Check } from '../recording/checks.js';
import type { CapturedSession, SessionEvent } from '../recording/session.js';
import { redactValue } from './redact.js';

/**
 * Who made a request, as stored: the fields that name them, how they were known and what said
 * so. Derived by the writer from what the request's thread read (recording/who.ts), the checks
 * the request met, the session and the headers' names. Never a token, a key or a password.
 */
export interface Who {
  id?: string | number;
  username?: string;
  email?: string;
  name?: string;
  roles?: string[];
  /** How they were known: session, bearer token, API key, basic, password (a sign-in), or what the app's identify() said. */
  via: string;
  /** What told it: passport's strategy, `req.auth` (express-jwt's), express-oauth2-jwt-bearer, express-session, cookie-session, identify(). */
  by?: string;
  /** The header an API key came in: its name, never its value. */
  key?: string;
  /** A verified token's claims: subject, issuer, audience, expiry, scopes. */
  claims?: Record<string, unknown>;
  /** Known how, not who: a session or a token that named no user. */
  anonymous?: true;
}

/** A request's session as stored: its attributes redacted as every stored value is, its cookie's settings apart. */
export interface StoredSession {
  library: CapturedSession['library'];
  store?: string;
  /** Absent: the request brought none. */
  found?: Record<string, unknown>;
  /** null: destroyed, or none left. */
  left: Record<string, unknown> | null;
  /** The session cookie's settings (expiry, path, flags) as it left, else as it came. */
  cookie?: Record<string, unknown>;
  events: SessionEvent[];
  fingerprint?: string;
  renewed?: string;
  cut?: true;
}

/** Headers an API key comes in, by the names apps give them. */
const KEY_HEADERS = new Set(['x-api-key', 'api-key', 'apikey', 'x-api-token']);
const KEY_LENGTHS = new Set([...KEY_HEADERS].map((name) => name.length));

/** A passport strategy's name, as how its user was known. */
function viaStrategy(strategy: string): string {
  if (strategy === 'session') return 'session';
  if (/^local/.test(strategy)) return 'password';
  if (/jwt|bearer|oauth2-jwt/i.test(strategy)) return 'bearer token';
  if (/api-?key/i.test(strategy)) return 'API key';
  if (/^(basic|digest)$/.test(strategy)) return strategy;
  return strategy;
}

/** The Authorization scheme (lower case) and an API key's header name, from a request's headers: names only, never a value. */
function credentialsOf(headers: Iterable<[string, unknown]>): { scheme?: string; key?: string; cookie?: true } {
  const found: { scheme?: string; key?: string; cookie?: true } = {};
  for (const [name, value] of headers) {
    if (name.length === 13 && name.toLowerCase() === 'authorization') found.scheme = /^([A-Za-z][\w-]{0,19})(?:\s|$)/.exec(String(value))?.[1]?.toLowerCase();
    else if (name.length === 6 && name.toLowerCase() === 'cookie') found.cookie = true;
    else if (found.key === undefined && KEY_LENGTHS.has(name.length) && KEY_HEADERS.has(name.toLowerCase())) found.key = name;
  }
  return found;
}

function* pairsOf(raw: string[]): Generator<[string, string]> {
  for (let i = 0; i + 1 < raw.length; i += 2) yield [raw[i], raw[i + 1]];
}

/** How a request that named no one came (an API key's header, a bearer token, basic): read from its stored headers, whose names and schemes stay. */
export function anonymousWho(headers: Record<string, unknown>): Who | undefined {
  const { scheme, key } = credentialsOf(Object.entries(headers));
  if (key !== undefined) return { via: 'API key', key, anonymous: true };
  return scheme === undefined ? undefined : { via: SCHEMES[scheme] ?? scheme, anonymous: true };
}

const SCHEMES: Record<string, string> = { bearer: 'bearer token', basic: 'basic', digest: 'digest', apikey: 'API key', token: 'bearer token' };

const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
const idOf = (v: unknown): string | number | undefined => (typeof v === 'number' || (typeof v === 'string' && v !== '') ? v : undefined);
const listOf = (v: unknown): string[] | undefined => {
  if (Array.isArray(v)) return v.filter((x) => typeof x === 'string');
  return typeof v === 'string' && v !== '' ? v.split(/[\s,]+/).filter(Boolean) : undefined;
};

/** The named fields of what named a user (a user object's, a token's claims, identify()'s), as a Who's. */
function named(from: Record<string, unknown>): Partial<Who> {
  const out: Partial<Who> = {};
  const id = idOf(from.id) ?? idOf(from._id) ?? idOf(from.uuid) ?? idOf(from.userId) ?? idOf(from.user_id) ?? idOf(from.sub);
  if (id !== undefined) out.id = id;
  const username = text(from.username) ?? text(from.login) ?? text(from.preferred_username);
  if (username !== undefined) out.username = username;
  const email = text(from.email);
  if (email !== undefined) out.email = email;
  const name = text(from.displayName) ?? text(from.name) ?? text(from.fullName);
  if (name !== undefined) out.name = name;
  const roles = listOf(from.roles) ?? listOf(from.role) ?? listOf(from.permissions) ?? listOf(from.groups) ?? listOf(from.scopes) ?? listOf(from.scope) ?? listOf(from.scp);
  if (roles !== undefined && roles.length > 0) out.roles = roles;
  return out;
}

/** The user a session's attributes name: passport's `passport.user`, or a `user`, `userId`, `user_id`, `uid` of the app's. */
function sessionUser(attrs: unknown): Partial<Who> | undefined {
  if (attrs === null || typeof attrs !== 'object') return undefined;
  const a = attrs as Record<string, unknown>;
  const passport = a.passport as { user?: unknown } | undefined;
  for (const user of [passport?.user, a.user, a.userId, a.user_id, a.uid]) {
    if (user === undefined || user === null) continue;
    if (typeof user === 'object') {
      const found = named(user as Record<string, unknown>);
      if (Object.keys(found).length > 0) return found;
    } else if (idOf(user) !== undefined) return { id: idOf(user) };
  }
  return undefined;
}

/**
 * Who made the request, from what the app knew of them: undefined when it knew nothing (no user,
 * no session it brought, no credential). Redacted as every stored value is.
 */
export function whoOf(c: Captured, keys: string[]): Who | undefined {
  const captured = c.who;
  const session = c.session;
  // A request that names no one and brought no session is told on read, from its headers (see anonymousWho).
  if (captured === undefined && session === undefined && !c.checks?.some((check) => check.library === 'passport')) return undefined;
  const { scheme, key, cookie } = credentialsOf(pairsOf(c.rawHeaders));
  const passport = lastPassport(c.checks);
  // How the request carried who it was, where nothing else says: a key, an Authorization scheme, a session it brought, a cookie.
  const carried = key !== undefined ? 'API key' : scheme !== undefined ? (SCHEMES[scheme] ?? scheme) : session?.found !== undefined ? 'session' : cookie ? 'cookie' : 'unknown';
  let who: Who | undefined;
  const identified = captured?.identified;
  if (identified !== undefined) {
    who = { ...named(identified), via: text(identified.via) ?? carried, by: 'identify()' };
    const given = text(identified.key) ?? (who.via === 'API key' ? key : undefined);
    if (given !== undefined) who.key = given;
  } else if (captured?.user !== undefined || passport !== undefined) {
    // req.user as the request ended, else the user passport let in (a sign-out clears req.user).
    const user = captured?.user ?? (passport!.fields!.user as Record<string, unknown>);
    const strategy = passport?.fields?.strategy;
    const via = typeof strategy === 'string' ? viaStrategy(strategy) : captured?.claims !== undefined ? 'bearer token' : carried;
    who = { ...named(typeof user === 'object' && user !== null ? user : { id: user }), via, by: typeof strategy === 'string' ? `passport ${strategy}` : undefined };
    if (via === 'API key' && key !== undefined) who.key = key;
  } else if (captured?.claims !== undefined) {
    who = { ...named(captured.claims), via: 'bearer token', by: captured.claimsBy };
  } else {
    const fromSession = sessionUser(session?.left) ?? sessionUser(session?.found);
    if (fromSession !== undefined) who = { ...fromSession, via: 'session', by: session!.library };
    else if (session?.found !== undefined) who = { via: 'session', by: session.library, anonymous: true };
    else return undefined;
  }
  if (captured?.claims !== undefined) who.claims = captured.claims;
  if (who.by === undefined) delete who.by;
  return redactValue(who, keys) as Who;
}

/** The passport strategy that let the request in last: its user is req.user. */
function lastPassport(checks: Check[] | undefined): Check | undefined {
  let last: Check | undefined;
  for (const check of checks ?? []) if (check.library === 'passport' && check.verdict === 'passed' && check.fields?.user !== undefined) last = check;
  return last;
}

/** What the list and search name a request's user by: a username, else an e-mail, a display name, an id. */
export function userLabel(who: Who | undefined): string | undefined {
  if (who === undefined || who.anonymous) return undefined;
  const label = who.username ?? who.email ?? who.name ?? (who.id === undefined ? undefined : String(who.id));
  return label === undefined ? undefined : label.slice(0, 200);
}

/** A session as stored: the cookie's settings apart (they name no one), every attribute redacted by its name. */
export function storedSession(s: CapturedSession, keys: string[]): StoredSession {
  const found = attributesOf(s.found, keys);
  const left = attributesOf(s.left, keys);
  const stored: StoredSession = { library: s.library, store: s.store, found: found?.attributes, left: left?.attributes ?? null, cookie: left?.cookie ?? found?.cookie, events: s.events, fingerprint: s.fingerprint, renewed: s.renewed };
  if (s.cut) stored.cut = true;
  return stored;
}

function attributesOf(given: unknown, keys: string[]): { attributes: Record<string, unknown>; cookie?: Record<string, unknown> } | undefined {
  if (given === null || given === undefined || typeof given !== 'object' || Array.isArray(given)) return undefined;
  const { cookie, ...attributes } = given as Record<string, unknown>;
  return { attributes: redactValue(attributes, sessionKeys(keys)) as Record<string, unknown>, cookie: cookieSettings(cookie) };
}

/**
 * What a session holds secrets under besides the secret names of any value: a user record kept
 * whole (passport-local-mongoose's `hash` and `salt`), an OAuth flow's `nonce` and code `verifier`.
 */
const SESSION_KEYS = ['hash', 'salt', 'nonce', 'verifier'];
const withSessionKeys = new WeakMap<string[], string[]>();

/** The key list with SESSION_KEYS, the same array for the same list (redaction remembers its answers by the list). */
function sessionKeys(keys: string[]): string[] {
  let extended = withSessionKeys.get(keys);
  if (extended === undefined) withSessionKeys.set(keys, (extended = [...keys, ...SESSION_KEYS]));
  return extended;
}

/** express-session's cookie as its Cookie holds it (`_expires`) or as a store gave it (`expires`): its settings, never a value. */
function cookieSettings(cookie: unknown): Record<string, unknown> | undefined {
  if (cookie === null || typeof cookie !== 'object') return undefined;
  const c = cookie as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  const expires = c._expires ?? c.expires;
  if (expires !== undefined && expires !== null) out.expires = expires instanceof Date ? expires.toISOString() : String(expires);
  for (const name of ['originalMaxAge', 'path', 'domain', 'httpOnly', 'secure', 'sameSite', 'partitioned', 'priority']) {
    const v = c[name];
    if (v !== undefined && v !== null && (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean')) out[name] = v;
  }
  return out;
}
