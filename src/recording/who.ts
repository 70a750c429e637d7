import type { Request } from 'express';
import { types } from 'node:util';
import type { Identified } from '../options.js';

/**
 * Who made a request, as the request's thread leaves it: copies of the few fields that name a
 * user, read once as the request ends from what the app's authentication left on `req`. Never
 * the app's object itself (a password hash, tokens), never a token.
 */
export interface CapturedWho {
  /** passport's `req.user` (a NestJS guard's too): the fields that name the user. */
  user?: Record<string, unknown>;
  /** A verified JWT's claims: express-jwt's `req.auth`, express-oauth2-jwt-bearer's `req.auth.payload`. */
  claims?: Record<string, unknown>;
  /** Where the claims were: express-jwt's (and any app's) `req.auth`, or express-oauth2-jwt-bearer's `{ header, payload, token }`. */
  claimsBy?: 'req.auth' | 'express-oauth2-jwt-bearer';
  /** What the app's identify(req) said. */
  identified?: Record<string, unknown>;
}

/** The fields that name a user, in the order they are shown; nothing else of a user object is read. */
const NAMING = ['id', '_id', 'uuid', 'userId', 'user_id', 'sub', 'username', 'login', 'email', 'name', 'displayName', 'fullName', 'role', 'roles', 'permissions', 'scope', 'scopes', 'groups'];
/** What a verified token's payload says of whom and for what: never its other claims, which may be anything. */
const CLAIMS = ['sub', 'iss', 'aud', 'exp', 'iat', 'nbf', 'azp', 'scope', 'scp', 'permissions', 'roles', 'role', 'email', 'name', 'preferred_username'];

/** A property the object holds itself, read without running a getter of the app's or a Proxy's trap. */
export function ownValue(holder: unknown, key: string): unknown {
  if (holder === null || typeof holder !== 'object' || isProxy(holder)) return undefined;
  return Object.getOwnPropertyDescriptor(holder, key)?.value;
}

const isProxy = (value: object): boolean => types.isProxy(value);

/** A value as a name shows it: a text, a number, a short list of them; an id object (a MongoDB ObjectId) as its text. */
function shown(value: unknown): unknown {
  if (value === null || value === undefined) return undefined;
  if (typeof value === 'string') return value.length > 200 ? `${value.slice(0, 200)}…` : value;
  if (typeof value === 'number' || typeof value === 'boolean') return value;
  if (typeof value === 'bigint') return String(value);
  if (typeof value !== 'object' || isProxy(value)) return undefined;
  if (Array.isArray(value)) {
    // Its first items, each read as data: no accessor element, no species or iterator of the app's.
    const items: unknown[] = [];
    for (let i = 0; i < 20; i++) {
      const item = shown(Object.getOwnPropertyDescriptor(value, i)?.value);
      if (item !== undefined && typeof item !== 'object') items.push(item);
    }
    return items;
  }
  // An ObjectId's hex text, by the method its class defines (bson's), never a getter.
  const text = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(value) ?? {}, 'toHexString')?.value;
  return typeof text === 'function' ? safe(() => String(text.call(value))) : undefined;
}

const safe = <T>(fn: () => T): T | undefined => {
  try {
    return fn();
  } catch {
    return undefined;
  }
};

/**
 * Who a user object is, without what else it carries (a password hash, tokens): the fields that
 * name one; an ORM's record by the fields it keeps as data (a Mongoose document's `_doc`, a
 * Sequelize instance's `dataValues`).
 */
export const namesOf = (user: unknown): Record<string, unknown> | undefined =>
  picked(user, NAMING) ?? picked(ownValue(user, '_doc'), NAMING) ?? picked(ownValue(user, 'dataValues'), NAMING);

/** A user as a check keeps it: an object by the fields that name it, an id as it is. */
export const userNamed = (user: unknown): unknown => (typeof user === 'object' && user !== null ? (namesOf(user) ?? {}) : user);

/** The named fields of an object, each read as its own data property. */
function picked(from: unknown, names: string[]): Record<string, unknown> | undefined {
  let out: Record<string, unknown> | undefined;
  for (const name of names) {
    const value = shown(ownValue(from, name));
    if (value !== undefined) (out ??= {})[name] = value;
  }
  return out;
}

/**
 * Who made the request, where the app knows: run once as it ends. A request with no user and no
 * token costs three property reads. How they were known (the Authorization scheme, an API key's
 * header) is read by the writer, from the headers it redacts anyway.
 */
export function whoOf(req: Request, identify: ((req: Request) => Identified | undefined) | undefined, tell: (message: string) => void): CapturedWho | undefined {
  let who: CapturedWho | undefined;
  const property = ownValue(req, '_userProperty');
  const user = ownValue(req, typeof property === 'string' ? property : 'user');
  if (user !== undefined && user !== null && user !== false) {
    const id = typeof user === 'object' ? undefined : shown(user);
    const named = typeof user === 'object' ? namesOf(user) : id === undefined ? undefined : { id };
    if (named !== undefined) who = { user: named };
  }
  const auth = ownValue(req, 'auth');
  if (auth !== undefined && auth !== null && typeof auth === 'object') {
    // express-oauth2-jwt-bearer: { header, payload, token }; express-jwt: the payload itself.
    const payload = ownValue(auth, 'payload');
    const bearer = payload !== undefined && ownValue(auth, 'header') !== undefined;
    const claims = picked(bearer ? payload : auth, CLAIMS);
    if (claims !== undefined) {
      who ??= {};
      who.claims = claims;
      who.claimsBy = bearer ? 'express-oauth2-jwt-bearer' : 'req.auth';
    }
  }
  if (identify !== undefined) {
    try {
      const said = identify(req);
      if (said !== undefined && said !== null && typeof (said as { then?: unknown }).then === 'function') tell('identify() returned a promise: it must return who made the request, not wait for it');
      else if (said !== undefined && said !== null) {
        const identified = picked(said, ['id', 'username', 'email', 'name', 'roles', 'via', 'key']);
        if (identified !== undefined) (who ??= {}).identified = identified;
      }
    } catch (err) {
      tell(`identify() threw: ${safe(() => String((err as Error)?.message ?? err)) ?? 'an error that cannot be read'}`);
    }
  }
  return who;
}
